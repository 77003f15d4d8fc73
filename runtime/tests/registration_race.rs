//! Registration without a window: re-registering and removing a kernel while
//! other threads call the operator never makes a call see a missing kernel.
//!
//! One thread toggles the operator's Autograd kernel between a real kernel, a
//! fallthrough and no registration at all, while caller threads call it; every
//! call must succeed with the result of either the Autograd kernel or the CPU
//! kernel below it. Bounded by a fixed number of toggles, not by time. Also run
//! under ThreadSanitizer (README, "Testing").

use opforge::dispatch::{dispatcher, DispatchKey, Kernel};
use opforge::library::{Library, LibraryKind};
use opforge::{Tensor, Value};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

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
    let x = Value::Tensor(Tensor::from_vec(vec![1.0f32], &[1]).unwrap());

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
