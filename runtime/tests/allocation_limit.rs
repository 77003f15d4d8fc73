//! The allocation limit and what kernels allocate, measured.
//!
//! The limit is process-wide, so this binary holds one test that changes it and
//! makes every limit-dependent check in turn (no other test can run beside it
//! and see a limit it did not expect). A counting global allocator measures the
//! peak memory of each operation: reductions and copies of an expanded view read
//! it in place, and filling a tensor needs no table of offsets.

use opforge::tensor::{allocation_limit, set_allocation_limit};
use opforge::{ops, DType, Device, Scalar, Tensor};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

/// The system allocator, counting the bytes in use and their peak.
struct Counting;

static CURRENT: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

fn grew(n: usize) {
    let now = CURRENT.fetch_add(n, Ordering::Relaxed) + n;
    PEAK.fetch_max(now, Ordering::Relaxed);
}

// SAFETY: `GlobalAlloc`'s contract is `System`'s: every method forwards its
// arguments to the same method of `System` unchanged and returns its result
// unchanged, so every pointer handed out comes from `System` with the layout the
// caller gave, and every pointer given back reaches `System` with that layout.
// The counters are statistics, read only by this test; they never decide what
// is allocated.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's `layout` (non-zero size, by `alloc`'s contract)
        // goes to `System` unchanged.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as for `alloc`.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        CURRENT.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: the caller gives back a pointer this allocator handed out with
        // `layout`, that is one `System` handed out with `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: `ptr` came from `System` with `layout` (as for `dealloc`);
        // `new_size` meets `realloc`'s contract by the caller's.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            CURRENT.fetch_sub(layout.size(), Ordering::Relaxed);
            grew(new_size);
        }
        p
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// `f`'s result and the most memory it had allocated at once beyond what was
/// in use before.
fn peak<R>(f: impl FnOnce() -> R) -> (R, usize) {
    let base = CURRENT.load(Ordering::Relaxed);
    PEAK.store(base, Ordering::Relaxed);
    let r = f();
    (r, PEAK.load(Ordering::Relaxed).saturating_sub(base))
}

fn oom(bytes: usize) -> String {
    format!("DefaultCPUAllocator: can't allocate memory: you tried to allocate {bytes} bytes. Error code 12 (Cannot allocate memory)")
}

/// A one-element `int64` tensor holding `v`, expanded to `shape`.
fn expanded(v: i64, shape: &[i64]) -> Tensor {
    Tensor::from_vec(vec![v], &[1])
        .unwrap()
        .expand(shape)
        .unwrap()
}

const KIB: usize = 1 << 10;
const MIB: usize = 1 << 20;

#[test]
fn the_allocation_limit() {
    // The counting allocator stays balanced: what is allocated, grown and
    // freed comes back to where it started, and the peak sees the growth.
    let (_, grown) = peak(|| {
        let mut v: Vec<u8> = Vec::with_capacity(1 << 20);
        v.reserve_exact(4 << 20);
        let z = vec![0u64; 1 << 16];
        drop((v, z));
    });
    assert!(grown >= (4 << 20) + (1 << 19), "{grown}"); // the grown Vec and `z`
    let before = CURRENT.load(Ordering::Relaxed);
    let big = std::hint::black_box(vec![1u8; 3 << 20]);
    let during = CURRENT.load(Ordering::Relaxed);
    drop(big);
    let after = CURRENT.load(Ordering::Relaxed);
    // (Other threads of the test harness may allocate a little meanwhile.)
    assert!(
        during.abs_diff(before + (3 << 20)) < 4096,
        "{before} {during}"
    );
    assert!(after.abs_diff(before) < 4096, "{before} {after}");
    // The default is the machine's memory.
    let machine = allocation_limit();
    assert!(machine >= 64 * MIB, "{machine}");

    // ---- A low limit: 1 MiB per allocation.
    set_allocation_limit(Some(MIB));
    assert_eq!(allocation_limit(), MIB);
    // Exactly the limit is allowed, one byte more is not.
    assert!(Tensor::try_zeros(&[MIB], DType::Bool, Device::Cpu).is_ok());
    assert_eq!(
        Tensor::try_zeros(&[MIB + 1], DType::Bool, Device::Cpu)
            .unwrap_err()
            .to_string(),
        oom(MIB + 1)
    );

    // Reductions of an expanded view of 8 MiB (2^20 int64 elements) read it in
    // place: right results, within the limit, and next to no memory.
    let x = expanded(3, &[1 << 20]);
    let (s, used) = peak(|| x.sum().unwrap());
    assert_eq!(s.to_vec::<i64>().unwrap(), vec![3 << 20]);
    assert!(
        used < 64 * KIB,
        "sum of an expanded view allocated {used} bytes"
    );
    let (p, used) = peak(|| ops::prod(&x, None).unwrap());
    assert_eq!(p.to_vec::<i64>().unwrap(), vec![3i64.wrapping_pow(1 << 20)]);
    assert!(used < 64 * KIB, "prod allocated {used} bytes");
    let grid = expanded(2, &[1 << 10, 1 << 10]);
    let (rows, used) = peak(|| ops::sum_dim_IntList(&grid, Some(&[1]), false, None).unwrap());
    assert_eq!(rows.to_vec::<i64>().unwrap(), vec![2 << 10; 1 << 10]);
    assert!(used < 64 * KIB, "sum over a dim allocated {used} bytes");
    let f = Tensor::from_vec(vec![0.5f64], &[1])
        .unwrap()
        .expand(&[1 << 18, 4])
        .unwrap();
    let (m, used) = peak(|| ops::mean_dim(&f, None, false, None).unwrap());
    assert_eq!(m.to_vec::<f64>().unwrap(), vec![0.5]);
    assert!(used < 64 * KIB, "mean allocated {used} bytes");
    let (mx, used) = peak(|| ops::max_dim(&f, 0, false).unwrap());
    assert_eq!(mx.0.to_vec::<f64>().unwrap(), vec![0.5; 4]);
    assert_eq!(mx.1.to_vec::<i64>().unwrap(), vec![0; 4]);
    assert!(used < 64 * KIB, "max.dim allocated {used} bytes");
    let (am, used) = peak(|| ops::argmax(&x, None, false).unwrap());
    assert_eq!(am.to_vec::<i64>().unwrap(), vec![0]);
    assert!(used < 64 * KIB, "argmax allocated {used} bytes");

    // A copy of it needs its 8 MiB: refused, with the full byte count.
    assert_eq!(x.clone_tensor().unwrap_err().to_string(), oom(8 * MIB));
    assert_eq!(x.contiguous().unwrap_err().to_string(), oom(8 * MIB));
    assert_eq!(x.add(&x).unwrap_err().to_string(), oom(8 * MIB));

    // Copying an expanded source into a destination that fits reads each
    // distinct source element once: no copy of the source's element count.
    let mut dst = Tensor::try_zeros(&[1 << 17], DType::Float32, Device::Cpu).unwrap();
    let src = Tensor::from_vec(vec![1.5f64], &[1])
        .unwrap()
        .expand(&[1 << 17])
        .unwrap();
    let (_, used) = peak(|| dst.copy_(&src).unwrap());
    assert_eq!(dst.to_vec::<f32>().unwrap(), vec![1.5; 1 << 17]);
    assert!(
        used < 64 * KIB,
        "copy_ of an expanded view allocated {used} bytes"
    );

    // A pointwise result of an expanded input takes the result's memory, not
    // one more copy per input.
    let big = Tensor::from_vec(vec![2.0f32], &[1])
        .unwrap()
        .expand(&[1 << 17])
        .unwrap();
    let one = Tensor::from_vec(vec![1.0f32], &[1]).unwrap();
    let (r, used) = peak(|| ops::mul_Tensor(&big, &one).unwrap());
    assert_eq!(r.to_vec::<f32>().unwrap(), vec![2.0; 1 << 17]);
    drop(r);
    assert!(used < 3 * (512 * KIB), "mul allocated {used} bytes");

    // ---- A larger limit: filling a tensor allocates the tensor alone (no
    // table of element offsets, which took 8 bytes an element).
    set_allocation_limit(Some(64 * MIB));
    let (t, used) = peak(|| ops::ones(&[1 << 20], Some(DType::Float32), None, None, None).unwrap());
    assert_eq!(t.numel(), 1 << 20);
    drop(t);
    assert!(
        used < 4 * MIB + 64 * KIB,
        "ones of 4 MiB allocated {used} bytes"
    );
    let e = Tensor::try_zeros(&[1], DType::Float32, Device::Cpu)
        .unwrap()
        .expand(&[1 << 20])
        .unwrap();
    let (_, used) = peak(|| ops::fill__Scalar(&mut e.clone(), Scalar::Int(1)).unwrap());
    assert!(
        used < 64 * KIB,
        "fill_ of an expanded view allocated {used} bytes"
    );

    // ---- Back to the default.
    set_allocation_limit(None);
    assert_eq!(allocation_limit(), machine);
    assert_eq!(
        Tensor::try_zeros(&[1 << 50], DType::Float32, Device::Cpu)
            .unwrap_err()
            .to_string(),
        oom(1 << 52)
    );
}
