//! Registration without a window: re-registering and removing a kernel while
//! other threads call the operator never makes a call see a missing kernel.
//!
//! One thread toggles the operator's Autograd kernel between a real kernel, a
//! fallthrough and no registration at all, while caller threads call it (with
//! a tensor that requires grad, so that calls reach the Autograd key); every
//! call must succeed with the result of either the Autograd kernel or the CPU
//! kernel below it. Bounded by a fixed number of toggles, not by time. Also run
//! under ThreadSanitizer (`docs/testing.md`).

use opforge::dispatch::{dispatcher, DispatchKey, Kernel};
use opforge::library::{Library, LibraryKind};
use opforge::{Tensor, Value};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicIsize, AtomicUsize, Ordering};
use std::sync::Arc;

/// The system allocator, counting the bytes live in the whole process.
struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);

// SAFETY: every call is forwarded to `System` with the caller's arguments
// unchanged; the counter is a side effect only.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: forwarded as is (the caller upholds `alloc`'s contract).
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: forwarded as is (the caller upholds `dealloc`'s contract).
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: forwarded as is.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_add(
            new_size as isize - layout.size() as isize,
            Ordering::Relaxed,
        );
        // SAFETY: forwarded as is (the caller upholds `realloc`'s contract).
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// Fewer under Miri, which also checks the accesses for data races.
const TOGGLES: usize = if cfg!(miri) { 400 } else { 60_000 };
const CALLERS: usize = 1;

#[test]
fn toggling_a_kernel_under_concurrent_calls_never_loses_it() {
    let lib = Library::new("race", LibraryKind::Def).unwrap();
    lib.define("f(Tensor x) -> int").unwrap();
    lib.impl_("f", DispatchKey::CPU, |_: &[Value]| Ok(vec![Value::Int(1)]))
        .unwrap();
    let op = dispatcher().find("race::f").unwrap();
    // A tensor that requires grad: its calls go through the Autograd key.
    let x = Tensor::from_vec(vec![1.0f32], &[1]).unwrap();
    x.set_requires_grad(true).unwrap();
    x.set_requires_grad(true).unwrap();
    let x = Value::Tensor(x);

    let done = Arc::new(AtomicBool::new(false));
    let calls = Arc::new(AtomicUsize::new(0));
    let callers: Vec<_> = (0..CALLERS)
        .map(|_| {
            let (done, calls, x) = (done.clone(), calls.clone(), x.clone());
            std::thread::spawn(move || {
                let mut failures = Vec::new();
                while !done.load(Ordering::Relaxed) {
                    match op.call_boxed(std::slice::from_ref(&x)) {
                        Ok(v) if matches!(v[..], [Value::Int(1 | 2)]) => {}
                        other => failures.push(format!("{other:?}")),
                    }
                    calls.fetch_add(1, Ordering::Relaxed);
                }
                failures
            })
        })
        .collect();

    let autograd = || {
        Kernel::from_closure("race autograd", |op, keys, args| {
            // Runs the CPU kernel below, then answers 2: either answer is a
            // consistent view of the registrations.
            op.call_with_keys(keys.below(DispatchKey::Autograd), args)?;
            Ok(vec![Value::Int(2)])
        })
    };
    for i in 0..TOGGLES {
        match i % 4 {
            0 => op
                .override_kernel(DispatchKey::Autograd, autograd())
                .unwrap(),
            1 => op
                .override_kernel(DispatchKey::Autograd, Kernel::fallthrough("race"))
                .unwrap(),
            2 => op
                .override_kernel(DispatchKey::Autograd, autograd())
                .unwrap(),
            _ => assert!(op.remove_kernel(DispatchKey::Autograd)),
        }
        if i % 64 == 0 {
            std::thread::yield_now();
        }
    }
    done.store(true, Ordering::Relaxed);
    let failures: Vec<String> = callers
        .into_iter()
        .flat_map(|h| h.join().unwrap())
        .collect();
    let calls = calls.load(Ordering::Relaxed);
    assert!(calls > 0);
    assert!(
        failures.is_empty(),
        "{} of {calls} calls failed, first: {}",
        failures.len(),
        failures[0]
    );
}

/// Re-registrations under concurrent calls free what they replace: each one
/// used to leak the replaced kernel (about 120 bytes; 25 million reached 3 GB).
/// Two million here (fewer in debug builds and under Miri; CI runs the release
/// build too), with callers on other threads calling the operator boxed and
/// typed throughout: the bytes live in the process after the last
/// re-registration are those live after the first tenth, give or take what the
/// callers hold in flight.
#[test]
fn re_registration_under_concurrent_calls_keeps_memory_flat() {
    const TOTAL: usize = if cfg!(miri) {
        2_000
    } else if cfg!(debug_assertions) {
        400_000
    } else {
        2_000_000
    };
    let lib = Library::new("churn", LibraryKind::Def).unwrap();
    lib.define("f(Tensor x) -> int").unwrap();
    lib.impl_("f", DispatchKey::CPU, |_: &[Value]| Ok(vec![Value::Int(1)]))
        .unwrap();
    lib.define("g(Tensor x) -> int").unwrap();
    lib.impl_("g", DispatchKey::CPU, |_: &[Value]| Ok(vec![Value::Int(3)]))
        .unwrap();
    let op = dispatcher().find("churn::f").unwrap();
    let g = dispatcher().find("churn::g").unwrap();
    // Typed calls of a built-in operator while its registrations change
    // (Miri runs without the built-in kernels).
    let neg = dispatcher().find("aten::neg").filter(|_| !cfg!(miri));
    let x = Tensor::from_vec(vec![1.0f32], &[1]).unwrap();
    x.set_requires_grad(true).unwrap();

    let done = Arc::new(AtomicBool::new(false));
    let callers: Vec<_> = (0..2)
        .map(|i| {
            let (done, x) = (done.clone(), x.clone());
            std::thread::spawn(move || {
                let mut calls = 0usize;
                let arg = [Value::Tensor(x.clone())];
                while !done.load(Ordering::Relaxed) {
                    if i == 0 {
                        let r = op.call_boxed(&arg).unwrap();
                        assert!(matches!(r[..], [Value::Int(1 | 2)]), "{r:?}");
                    } else {
                        // Boxed calls of an operator whose Autograd kernel is
                        // replaced meanwhile, and typed ones.
                        let r = g.call_boxed(&arg).unwrap();
                        assert!(matches!(r[..], [Value::Int(3)]), "{r:?}");
                        if let Some(neg) = neg {
                            assert_eq!(x.neg().unwrap().to_vec::<f32>().unwrap(), vec![-1.0]);
                            neg.call_boxed(&arg).unwrap();
                        }
                    }
                    calls += 1;
                }
                calls
            })
        })
        .collect();

    let kernel = |answer: i64| {
        Kernel::from_closure(format!("churn {answer}"), move |_, _, _| {
            Ok(vec![Value::Int(answer)])
        })
    };
    let mut baseline = 0;
    for i in 0..TOTAL {
        op.override_kernel(DispatchKey::CPU, kernel(1 + (i % 2) as i64))
            .unwrap();
        // An Autograd kernel that calls the CPU kernel below.
        g.override_kernel(
            DispatchKey::Autograd,
            Kernel::from_closure(format!("churn {i}"), |op, keys, args| {
                op.call_with_keys(keys.below(DispatchKey::Autograd), args)
            }),
        )
        .unwrap();
        if let Some(neg) = neg {
            neg.override_kernel(
                DispatchKey::Autograd,
                Kernel::fallthrough(format!("churn {i}")),
            )
            .unwrap();
        }
        if i == TOTAL / 10 {
            baseline = LIVE.load(Ordering::Relaxed);
        }
    }
    let end = LIVE.load(Ordering::Relaxed);
    done.store(true, Ordering::Relaxed);
    for h in callers {
        assert!(h.join().unwrap() > 0);
    }
    if let Some(neg) = neg {
        assert!(neg.remove_kernel(DispatchKey::Autograd));
    }
    let growth = end - baseline;
    assert!(
        growth < 256 << 10,
        "{growth} bytes more live after {} more re-registrations ({} per re-registration)",
        TOTAL - TOTAL / 10,
        growth as f64 / (TOTAL - TOTAL / 10) as f64
    );
}
