//! `#[kernel]` registration end to end: a kernel registered in this crate (a
//! downstream crate of `opforge`) is found by the dispatcher, boxed and unboxed.

use opforge::dispatch::{dispatcher, DispatchKey, KeySet};
use opforge::{kernel, DType, Device, OpId, Result, Scalar, Tensor, Value};

/// An Autograd-key kernel for `neg` that records it ran, then returns zeros.
#[kernel(Autograd, "neg")]
fn neg_autograd(self_: &Tensor) -> Result<Tensor> {
    Ok(Tensor::zeros(&self_.shape(), DType::Int64, self_.device()))
}

#[kernel(Python, "add.Tensor")]
fn add_python(self_: &Tensor, other: &Tensor, alpha: Scalar) -> Result<Tensor> {
    let _ = other;
    Ok(Tensor::full(
        &self_.shape(),
        alpha,
        DType::Float64,
        Device::Cpu,
    ))
}

#[test]
fn registered_kernels_are_dispatched_to() {
    assert!(
        dispatcher().registration_errors().is_empty(),
        "{:?}",
        dispatcher().registration_errors()
    );
    let op = dispatcher().op(OpId::neg);
    let t = Tensor::from_vec(vec![1.0f32, 2.0], &[2]).unwrap();
    let out = op.call_boxed(&[Value::Tensor(t.clone())]).unwrap();
    let Value::Tensor(r) = &out[0] else {
        panic!("{out:?}")
    };
    assert_eq!(r.dtype(), DType::Int64);
    // The unboxed pointer is there too, typed by the schema.
    let (k, key) = op.kernel(t.key_set()).unwrap();
    assert_eq!(key, DispatchKey::Autograd);
    assert!(!k.unboxed.is_null());
    assert!(
        k.source.ends_with(".rs:8") || k.source.contains("registration.rs"),
        "{}",
        k.source
    );
}

#[test]
fn python_key_kernels_run_only_when_included() {
    let op = dispatcher().op(OpId::add_Tensor);
    let a = Tensor::from_vec(vec![1.0f32], &[1]).unwrap();
    let args = [
        Value::Tensor(a.clone()),
        Value::Tensor(a.clone()),
        Value::Int(3),
    ];
    let _g = opforge::dispatch::LocalKeys::include(KeySet::of(DispatchKey::Python));
    let out = op.call_boxed(&args).unwrap();
    let Value::Tensor(r) = &out[0] else { panic!() };
    assert_eq!(r.to_vec::<f64>().unwrap(), vec![3.0]);
}

/// Every kernel the YAML names is registered (none lost at link time), and the
/// counts per key are snapshotted.
#[test]
fn every_yaml_kernel_is_registered() {
    use std::collections::BTreeMap;
    let builtin: Vec<_> = opforge::dispatch::KERNELS
        .iter()
        .filter(|e| e.file.ends_with("registrations.rs"))
        .collect();
    let mut missing = Vec::new();
    for op in opforge::OPS.iter() {
        for k in op.kernels {
            if !builtin.iter().any(|e| e.op == op.name && e.key == k.key) {
                missing.push(format!("{} {}", op.name, k.key));
            }
        }
    }
    assert!(missing.is_empty(), "not registered: {missing:?}");
    let mut per_key: BTreeMap<&str, usize> = BTreeMap::new();
    for e in &builtin {
        *per_key.entry(e.key).or_default() += 1;
    }
    assert_eq!(
        format!("{per_key:?}"),
        r#"{"CPU": 99, "CompositeExplicitAutograd": 26, "CompositeImplicitAutograd": 5, "Meta": 104}"#
    );
}
