//! Kernels registered with `#[kernel]` from a downstream crate (this one depends on
//! `opforge` like any user crate) for existing operators: the dispatcher collects
//! them at link time and runs them, boxed and unboxed.

use opforge::dispatch::{dispatcher, DispatchKey, KeySet, LocalKeys};
use opforge::{kernel, DType, Device, OpId, Result, Scalar, Tensor, Value};
use std::sync::atomic::{AtomicUsize, Ordering};

static ARGMAX_CALLS: AtomicUsize = AtomicUsize::new(0);
static SUB_CALLS: AtomicUsize = AtomicUsize::new(0);

/// An Autograd kernel for `argmax`: counts its calls and returns sevens, so a
/// test can tell it ran. (`argmax` is not differentiable: the runtime has no
/// Autograd kernel of its own for it, which would make this one a duplicate.)
#[kernel(Autograd, "argmax")]
fn argmax_autograd(self_: &Tensor, _dim: Option<i64>, _keepdim: bool) -> Result<Tensor> {
    ARGMAX_CALLS.fetch_add(1, Ordering::SeqCst);
    Ok(Tensor::full(
        &self_.shape(),
        Scalar::Int(7),
        DType::Int64,
        Device::Cpu,
    ))
}

/// A Python-key kernel for `sub.Tensor`: runs only while `Python` is included.
#[kernel(Python, "sub.Tensor")]
fn sub_python(self_: &Tensor, _other: &Tensor, alpha: Scalar) -> Result<Tensor> {
    SUB_CALLS.fetch_add(1, Ordering::SeqCst);
    Ok(Tensor::full(
        &self_.shape(),
        alpha,
        DType::Float64,
        Device::Cpu,
    ))
}

fn tensor() -> Tensor {
    Tensor::from_vec(vec![1.0f32, 2.0], &[2]).unwrap()
}

/// A tensor that requires grad: its calls reach the Autograd key.
fn grad_tensor() -> Tensor {
    let t = tensor();
    t.set_requires_grad(true).unwrap();
    t
}

fn ints(values: &[Value]) -> Vec<i64> {
    match values {
        [Value::Tensor(t)] => t.to_vec::<i64>().unwrap(),
        other => panic!("expected one tensor, got {other:?}"),
    }
}

#[test]
fn registrations_are_collected_without_errors() {
    let errors = dispatcher().registration_errors();
    assert!(errors.is_empty(), "{errors:?}");
    let mut ours: Vec<(String, DispatchKey)> = Vec::new();
    for op in opforge::OPS.iter() {
        let op = dispatcher()
            .find(&format!("{}::{}", op.namespace, op.name))
            .unwrap();
        for (key, k) in op.registrations() {
            if k.source().contains("downstream.rs") {
                ours.push((op.qualified_name(), key));
            }
        }
    }
    ours.sort();
    assert_eq!(
        ours,
        [
            ("aten::argmax".to_string(), DispatchKey::Autograd),
            ("aten::sub.Tensor".to_string(), DispatchKey::Python)
        ]
    );
}

#[test]
fn the_dispatcher_runs_a_downstream_kernel_boxed() {
    let t = grad_tensor();
    let op = dispatcher().op(OpId::argmax);
    let before = ARGMAX_CALLS.load(Ordering::SeqCst);
    let out = op
        .call_boxed(&[Value::Tensor(t.clone()), Value::None, Value::Bool(false)])
        .unwrap();
    assert_eq!(ints(&out), [7, 7]);
    assert!(ARGMAX_CALLS.load(Ordering::SeqCst) > before);
    let (k, key) = op.kernel(t.key_set()).unwrap();
    assert_eq!(key, DispatchKey::Autograd);
    assert!(k.source().contains("downstream.rs:"), "{}", k.source());
    // A tensor that does not require grad never reaches it.
    let plain = tensor();
    let out = op
        .call_boxed(&[Value::Tensor(plain), Value::None, Value::Bool(false)])
        .unwrap();
    assert_eq!(ints(&out), [1]);
}

#[test]
fn the_dispatcher_runs_a_downstream_kernel_unboxed() {
    let t = grad_tensor();
    let (k, _) = dispatcher().op(OpId::argmax).kernel(t.key_set()).unwrap();
    // The unboxed entry comes back typed by the operator's signature, and only so.
    let f = k.unboxed::<opforge::sig::argmax>().unwrap();
    assert!(k.unboxed::<opforge::sig::neg>().is_none());
    assert_eq!(f(&t, None, false).unwrap().to_vec::<i64>().unwrap(), [7, 7]);
    // The typed API takes the same path.
    let r = opforge::ops::argmax(&t, None, false).unwrap();
    assert_eq!(r.to_vec::<i64>().unwrap(), [7, 7]);
}

#[test]
fn a_python_key_kernel_runs_only_while_python_is_included() {
    let t = tensor();
    let op = dispatcher().op(OpId::sub_Tensor);
    let args = [Value::Tensor(t.clone()), Value::Tensor(t), Value::Int(3)];
    let before = SUB_CALLS.load(Ordering::SeqCst);
    // Without the key: the backend's kernel (or none yet), never ours.
    let _ = op.call_boxed(&args);
    assert_eq!(SUB_CALLS.load(Ordering::SeqCst), before);
    let _g = LocalKeys::include(KeySet::of(DispatchKey::Python));
    let out = op.call_boxed(&args).unwrap();
    let [Value::Tensor(r)] = out.as_slice() else {
        panic!("{out:?}")
    };
    assert_eq!(r.to_vec::<f64>().unwrap(), [3.0, 3.0]);
    assert_eq!(SUB_CALLS.load(Ordering::SeqCst), before + 1);
}
