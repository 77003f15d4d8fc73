//! Bad input to the kernels: sizes beyond memory, and `mm` into its own input. Each case asserts PyTorch's error word for word, or the
//! result PyTorch computes where it computes one (checked against PyTorch
//! 2.15). Nothing here allocates or walks gigabytes: huge requests are refused
//! by the allocation limit, which every test of this binary sets to the same
//! 16 GiB first (so the cases do not depend on the machine's memory, and tests
//! running in parallel never see another limit).

use opforge::tensor::set_allocation_limit;
use opforge::{ops, torch, DType, Device, Scalar, Tensor};
use std::sync::Once;

const OOM_64GIB: &str = "DefaultCPUAllocator: can't allocate memory: you tried to allocate 68719476736 bytes. Error code 12 (Cannot allocate memory)";
const OOM_128GIB: &str = "DefaultCPUAllocator: can't allocate memory: you tried to allocate 137438953472 bytes. Error code 12 (Cannot allocate memory)";

fn limit() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| set_allocation_limit(Some(16 << 30)));
}

fn err(r: opforge::Result<Tensor>) -> String {
    match r {
        Ok(t) => panic!("expected an error, got {t}"),
        Err(e) => e.to_string(),
    }
}

fn f32s(t: &Tensor) -> Vec<f32> {
    t.to_vec::<f32>().unwrap()
}

/// `arange(n)` as float32.
fn arange(n: i64) -> Tensor {
    ops::arange(Scalar::Int(n), Some(DType::Float32), None, None, None).unwrap()
}

// ---- Memory ---------------------------------------------------------------------

/// `torch.zeros(1 << 34)` and the other factories: PyTorch's allocator error,
/// not an aborted process.
#[test]
fn factories_beyond_memory_are_errors() {
    limit();
    let n = [1i64 << 34];
    assert_eq!(err(torch::zeros(&n)), OOM_64GIB);
    assert_eq!(err(torch::ones(&n)), OOM_64GIB);
    assert_eq!(err(torch::empty(&n)), OOM_64GIB);
    assert_eq!(err(torch::full(&n, Scalar::Float(2.0))), OOM_64GIB);
    // int64: 8 bytes an element.
    assert_eq!(err(torch::arange(Scalar::Int(1 << 34))), OOM_128GIB);
    let mut out = arange(2);
    assert_eq!(
        err(ops::arange_out(Scalar::Int(1 << 34), &mut out)),
        OOM_64GIB
    );
    assert_eq!(out.shape(), vec![2]);
    // A byte count beyond int64 is PyTorch's overflow error, on every device.
    let huge = [1i64 << 60];
    let f64s = Some(DType::Float64);
    assert_eq!(
        err(ops::zeros(&huge, f64s, None, None, None)),
        "Storage size calculation overflowed with sizes=[1152921504606846976]"
    );
    assert_eq!(
        err(ops::zeros(&huge, f64s, None, Some(Device::Meta), None)),
        "Storage size calculation overflowed with sizes=[1152921504606846976]"
    );
    // Meta tensors take no memory.
    let m = ops::zeros(&n, None, None, Some(Device::Meta), None).unwrap();
    assert_eq!(m.shape(), vec![1 << 34]);
}

/// The runtime's own constructors and in-place resizing.
#[test]
fn tensor_allocation_is_fallible() {
    limit();
    assert_eq!(
        err(Tensor::try_zeros(&[1 << 34], DType::Float32, Device::Cpu)),
        OOM_64GIB
    );
    assert_eq!(
        err(Tensor::try_full(
            &[1 << 34],
            Scalar::Int(1),
            DType::Float32,
            Device::Cpu
        )),
        OOM_64GIB
    );
    let t = arange(2);
    assert_eq!(t.resize_(&[1 << 34]).unwrap_err().to_string(), OOM_64GIB);
    assert_eq!(f32s(&t), vec![0.0, 1.0]);
    let mut out = arange(2);
    let x = arange(3);
    // `out=` resizing: the same error, and `out` as it was.
    let e = ops::add_out(
        &x,
        &x.expand(&[1 << 34, 3]).unwrap(),
        Scalar::Int(1),
        &mut out,
    );
    assert_eq!(
        err(e),
        "DefaultCPUAllocator: can't allocate memory: you tried to allocate 206158430208 bytes. Error code 12 (Cannot allocate memory)"
    );
    assert_eq!(out.shape(), vec![2]);
}

/// Copies and pointwise results of an expanded view need its full element
/// count: refused like PyTorch's, before anything is materialized.
#[test]
fn copies_of_huge_expanded_views_are_errors() {
    limit();
    let x = torch::arange(Scalar::Int(1))
        .unwrap()
        .expand(&[1 << 34])
        .unwrap();
    assert_eq!(err(x.clone_tensor()), OOM_128GIB);
    assert_eq!(err(x.contiguous()), OOM_128GIB);
    assert_eq!(err(x.add(&x)), OOM_128GIB);
    assert_eq!(err(x.to_dtype_copy(DType::Float64)), OOM_128GIB);
    assert_eq!(err(x.deep_clone()), OOM_128GIB);
    // Picking a few elements reads the view in place, as PyTorch does.
    let idx = torch::arange(Scalar::Int(2)).unwrap();
    let picked = ops::index_select(&x, 0, &idx).unwrap();
    assert_eq!(picked.to_vec::<i64>().unwrap(), vec![0, 0]);
}

/// An element count beyond int64 is refused where the view is made, as in
/// PyTorch (it used to reach `sum` and panic with "capacity overflow").
#[test]
fn views_with_more_elements_than_int64_are_errors() {
    limit();
    let x = torch::arange(Scalar::Int(1)).unwrap();
    assert_eq!(
        err(x.expand(&[1 << 62, 3])),
        "numel: integer multiplication overflow"
    );
    let y = torch::arange(Scalar::Int(3)).unwrap();
    assert_eq!(
        err(y.as_strided(&[1 << 62, 3], &[0, 1], 0)),
        "numel: integer multiplication overflow"
    );
    // 2^62 elements do fit.
    assert_eq!(x.expand(&[1 << 62, 1]).unwrap().numel(), 1 << 62);
}

// ---- Writing into an input -----------------------------------------------------

/// `mm(a, a, out=a)` used to panic (resizing `out` resized the input); the
/// product is now computed from the inputs before `out` is written.
#[test]
fn mm_into_its_own_input_gives_the_product() {
    limit();
    let a = arange(4).view(&[2, 2]).unwrap();
    let mut out = a.clone();
    ops::mm_out(&a, &a, &mut out).unwrap();
    assert_eq!(f32s(&a), vec![2.0, 3.0, 6.0, 11.0]);
    // `out` is the second operand.
    let (p, q) = (
        arange(4).view(&[2, 2]).unwrap(),
        torch::ones(&[2, 2]).unwrap(),
    );
    let mut out = q.clone();
    ops::mm_out(&p, &q, &mut out).unwrap();
    assert_eq!(f32s(&q), vec![1.0, 1.0, 5.0, 5.0]);
    // `out` must be resized: [2, 3] @ [3, 2] into the first operand.
    let r = arange(6).view(&[2, 3]).unwrap();
    let mut out = r.clone();
    ops::mm_out(&r, &torch::ones(&[3, 2]).unwrap(), &mut out).unwrap();
    assert_eq!(
        (r.shape(), f32s(&r)),
        (vec![2, 2], vec![3.0, 3.0, 12.0, 12.0])
    );
    // ... and into the second (this one panicked: "index (2, 0) out of bounds").
    let (r, ones) = (
        arange(6).view(&[2, 3]).unwrap(),
        torch::ones(&[3, 2]).unwrap(),
    );
    let mut out = ones.clone();
    ops::mm_out(&r, &ones, &mut out).unwrap();
    assert_eq!(
        (ones.shape(), f32s(&ones)),
        (vec![2, 2], vec![3.0, 3.0, 12.0, 12.0])
    );
    // `out` overlaps both operands in part.
    let w = arange(8).view(&[2, 4]).unwrap();
    let (l, rt) = (
        ops::slice_Tensor(&w, 1, Some(0), Some(2), 1).unwrap(),
        ops::slice_Tensor(&w, 1, Some(2), None, 1).unwrap(),
    );
    let mut out = l.clone();
    ops::mm_out(&l, &rt, &mut out).unwrap();
    assert_eq!(f32s(&w), vec![6.0, 7.0, 2.0, 3.0, 38.0, 47.0, 6.0, 7.0]);
    // matmul too (2-D and batched).
    let c = arange(4).view(&[2, 2]).unwrap();
    let mut out = c.clone();
    ops::matmul_out(&c, &c, &mut out).unwrap();
    assert_eq!(f32s(&c), vec![2.0, 3.0, 6.0, 11.0]);
    let d = arange(8).view(&[2, 2, 2]).unwrap();
    let mut out = d.clone();
    ops::matmul_out(&d, &d, &mut out).unwrap();
    assert_eq!(f32s(&d), vec![2.0, 3.0, 6.0, 11.0, 46.0, 55.0, 66.0, 79.0]);
}
