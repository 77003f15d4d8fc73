//! `#[kernel]` registration end to end: a kernel registered in this crate (a
//! downstream crate of `opforge`) is found by the dispatcher, boxed and unboxed.

use opforge::dispatch::{dispatcher, DispatchKey, KeySet};
use opforge::{kernel, DType, Device, OpId, Result, Scalar, Tensor, Value};

/// An Autograd-key kernel for `argmax` that shows it ran by its result's dtype
/// (float zeros, where the CPU kernel gives int64 indices). `argmax` is not
/// differentiable, so the generator gives it no Autograd kernel (one for an
/// operator with a formula in derivatives.yaml would be a duplicate: an error).
#[kernel(Autograd, "argmax")]
fn argmax_autograd(self_: &Tensor, dim: Option<i64>, keepdim: bool) -> Result<Tensor> {
    let _ = (dim, keepdim);
    Ok(Tensor::zeros(&[], DType::Float64, self_.device()))
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
    let op = dispatcher().op(OpId::argmax);
    let t = Tensor::from_vec(vec![1.0f32, 2.0], &[2]).unwrap();
    let args = [Value::Tensor(t.clone()), Value::None, Value::Bool(false)];
    // A tensor that does not require grad goes straight to the CPU kernel …
    let out = op.call_boxed(&args).unwrap();
    let Value::Tensor(r) = &out[0] else {
        panic!("{out:?}")
    };
    assert_eq!(r.to_vec::<i64>().unwrap(), vec![1]);
    // … one that does reaches this crate's Autograd kernel.
    t.set_requires_grad(true).unwrap();
    let out = op.call_boxed(&args).unwrap();
    let Value::Tensor(r) = &out[0] else {
        panic!("{out:?}")
    };
    assert_eq!(r.dtype(), DType::Float64);
    // The unboxed pointer is there too, typed by the schema.
    let (k, key) = op.kernel(t.key_set()).unwrap();
    assert_eq!(key, DispatchKey::Autograd);
    assert!(k.unboxed::<opforge::sig::argmax>().is_some());
    assert!(k.source().contains("registration.rs"), "{}", k.source());
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

/// Every kernel the YAML names is registered (none lost at link time): the
/// expected registrations are derived from the YAML's `dispatch:` tables.
#[test]
fn every_yaml_kernel_is_registered() {
    let mut missing = Vec::new();
    let mut expected = 0;
    for op in opforge::OPS.iter() {
        let qualified = format!("{}::{}", op.namespace, op.name);
        let registered = dispatcher().find(&qualified).unwrap().registrations();
        for k in op.kernels {
            expected += 1;
            let key = DispatchKey::from_name(k.key).unwrap();
            if !registered.iter().any(|(rk, _)| *rk == key) {
                missing.push(format!("{} {}", op.name, k.key));
            }
        }
    }
    assert!(missing.is_empty(), "not registered: {missing:?}");
    assert!(expected > 0);
}

/// Another operator's kernel cannot be registered for `add.Tensor`, not even
/// through the explicit override: a typed call never reaches a kernel written
/// for another schema.
#[test]
fn another_operators_kernel_is_refused() {
    let neg = dispatcher().op(OpId::neg);
    let t = Tensor::from_vec(vec![1.0f32, 2.0], &[2]).unwrap();
    let cpu = KeySet::for_device(Device::Cpu);
    let (neg_cpu, _) = neg.kernel(cpu.below(DispatchKey::ADInplaceOrView)).unwrap();
    let add = dispatcher().op(OpId::add_Tensor);
    let e = add
        .override_kernel(DispatchKey::CPU, neg_cpu.clone())
        .unwrap_err();
    assert!(
        e.to_string()
            .starts_with("aten::add.Tensor: cannot register the kernel from "),
        "{e}"
    );
    assert!(
        e.to_string()
            .ends_with("it was written for `neg(Tensor self) -> Tensor`"),
        "{e}"
    );
    assert!(add.register(DispatchKey::Python, neg_cpu.clone()).is_err());
    // add still runs its own kernel.
    let r = opforge::ops::add_Tensor(&t, &t, Scalar::Int(1)).unwrap();
    assert_eq!(r.to_vec::<f32>().unwrap(), vec![2.0, 4.0]);
}
