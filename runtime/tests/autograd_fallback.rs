//! Operators without an Autograd kernel (PyTorch's autograd fallbacks): an
//! `aten` operator without a derivative records a `NotImplemented` node whose
//! backward fails; another namespace's operator records a
//! `WarnNotImplemented` node that warns and sends no gradient on (PyTorch's
//! default fallback mode, "warn"), and its in-place writes keep the tensor's
//! history with a warning hook. Names, messages and gradients are PyTorch
//! 2.15's, run side by side.

use opforge::autograd::fallback::{
    missing_autograd_warning, NOT_IMPLEMENTED, WARN_NOT_IMPLEMENTED,
};
use opforge::autograd::{no_grad, LEAF_INPLACE};
use opforge::dispatch::{DispatchKey, Kernel};
use opforge::library::{self, Library, LibraryKind};
use opforge::warnings::catch_warnings;
use opforge::{at, Result, Scalar, Tensor, Value};
use std::sync::OnceLock;

fn leaf(v: &[f32]) -> Tensor {
    let t = Tensor::from_vec(v.to_vec(), &[v.len()]).unwrap();
    t.set_requires_grad(true).unwrap();
    t
}

fn name(t: &Tensor) -> String {
    t.grad_fn()
        .map(|g| g.node.name().to_string())
        .unwrap_or_default()
}

fn next_names(t: &Tensor) -> Vec<String> {
    let node = t.grad_fn().unwrap().node;
    node.next_edges()
        .iter()
        .map(|e| {
            e.as_ref()
                .map_or("None".into(), |e| e.node.name().to_string())
        })
        .collect()
}

fn sum(t: &Tensor) -> Tensor {
    at::sum(t, None).unwrap()
}

fn tensor(v: &Value) -> Tensor {
    v.as_tensor().expect("a tensor").clone()
}

fn call(name: &str, args: &[&Tensor]) -> Result<Tensor> {
    let args: Vec<Value> = args.iter().map(|t| Value::Tensor((*t).clone())).collect();
    library::call(name, &args, &[]).map(|out| tensor(&out[0]))
}

/// `fb_warn::twice` (out of place), `fb_warn::twice_` (in place), `fb_warn::quiet`
/// (a fallthrough at Autograd): another namespace's operators, CPU kernels only.
fn custom_ops() {
    static DONE: OnceLock<()> = OnceLock::new();
    DONE.get_or_init(|| {
        let lib = Library::new("fb_warn", LibraryKind::Def).unwrap();
        lib.define("twice(Tensor x) -> Tensor").unwrap();
        lib.define("twice_(Tensor(a!) x) -> Tensor(a!)").unwrap();
        lib.define("quiet(Tensor x) -> Tensor").unwrap();
        // Kernels compute without recording, as a kernel of another library
        // (or one below autograd) would.
        let double = |args: &[Value]| -> Result<Vec<Value>> {
            let _g = no_grad();
            Ok(vec![Value::Tensor(at::mul_Scalar(
                &tensor(&args[0]),
                Scalar::Float(2.0),
            )?)])
        };
        lib.impl_("twice", DispatchKey::CPU, double).unwrap();
        lib.impl_("quiet", DispatchKey::CPU, double).unwrap();
        lib.impl_("twice_", DispatchKey::CPU, |args: &[Value]| {
            let _g = no_grad();
            let mut x = tensor(&args[0]);
            at::mul__Tensor(&mut x, &Tensor::scalar(2.0f32))?;
            Ok(vec![Value::Tensor(x)])
        })
        .unwrap();
        lib.impl_kernel(
            "quiet",
            DispatchKey::Autograd,
            Kernel::fallthrough("no autograd"),
        )
        .unwrap();
    });
}

/// `aten::_fb_no_formula` (+ its in-place and out= forms): `aten` operators
/// without a derivative, as PyTorch's `_add_relu` is.
fn aten_ops() {
    static DONE: OnceLock<()> = OnceLock::new();
    DONE.get_or_init(|| {
        let lib = Library::new("aten", LibraryKind::Fragment).unwrap();
        lib.define("_fb_no_formula(Tensor self, Tensor other) -> Tensor")
            .unwrap();
        lib.define("_fb_no_formula_(Tensor(a!) self, Tensor other) -> Tensor(a!)")
            .unwrap();
        lib.define(
            "_fb_no_formula.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)",
        )
        .unwrap();
        lib.impl_("_fb_no_formula", DispatchKey::CPU, |args: &[Value]| {
            let (a, b) = (tensor(&args[0]), tensor(&args[1]));
            Ok(vec![Value::Tensor(at::add_Tensor(&a, &b, Scalar::Int(1))?)])
        })
        .unwrap();
        lib.impl_("_fb_no_formula_", DispatchKey::CPU, |args: &[Value]| {
            let (mut a, b) = (tensor(&args[0]), tensor(&args[1]));
            at::add__Tensor(&mut a, &b, Scalar::Int(1))?;
            Ok(vec![Value::Tensor(a)])
        })
        .unwrap();
        lib.impl_(
            "_fb_no_formula.out",
            DispatchKey::CPU,
            |args: &[Value]| Ok(vec![args[2].clone()]),
        )
        .unwrap();
    });
}

#[test]
fn another_namespace_warns_and_sends_no_gradient() {
    custom_ops();
    let x = leaf(&[1.0, 2.0]);
    let y = call("fb_warn::twice", &[&x]).unwrap();
    assert_eq!(y.to_vec::<f32>().unwrap(), vec![2.0, 4.0]);
    assert!(y.requires_grad() && !y.is_leaf());
    assert_eq!(name(&y), WARN_NOT_IMPLEMENTED);
    assert_eq!(next_names(&y), ["AccumulateGrad"]);
    let (done, warnings) = catch_warnings(|| sum(&y).backward());
    done.unwrap();
    assert_eq!(warnings, [missing_autograd_warning("fb_warn::twice")]);
    assert!(warnings[0].starts_with(
        "fb_warn::twice: an autograd kernel was not registered to the Autograd key(s) but we are trying to backprop through it."
    ));
    assert!(x.grad().is_none(), "no gradient flows through it");
    // Nothing is recorded without grad mode, or for inputs that do not
    // require grad.
    {
        let _g = no_grad();
        assert!(call("fb_warn::twice", &[&x]).unwrap().grad_fn().is_none());
    }
    let plain = Tensor::from_vec(vec![1.0f32], &[1]).unwrap();
    assert!(!call("fb_warn::twice", &[&plain]).unwrap().requires_grad());
}

#[test]
fn another_namespace_in_place_keeps_the_history_and_warns() {
    custom_ops();
    let x = leaf(&[1.0, 2.0]);
    let m = at::mul_Scalar(&x, Scalar::Int(1)).unwrap();
    let version = m.storage().version();
    let r = call("fb_warn::twice_", &[&m]).unwrap();
    assert!(r.is_same(&m));
    assert_eq!(m.to_vec::<f32>().unwrap(), vec![2.0, 4.0]);
    assert_eq!(m.storage().version(), version + 1);
    assert_eq!(name(&m), "MulBackward1");
    let (done, warnings) = catch_warnings(|| sum(&m).backward());
    done.unwrap();
    assert_eq!(warnings, [missing_autograd_warning("fb_warn::twice_")]);
    // The gradient passes as if the write had not happened (PyTorch: ones).
    assert_eq!(x.grad().unwrap().to_vec::<f32>().unwrap(), vec![1.0, 1.0]);
    // On a leaf that requires grad, PyTorch's fallback does not refuse.
    let w = leaf(&[1.0]);
    call("fb_warn::twice_", &[&w]).unwrap();
    assert_eq!(w.to_vec::<f32>().unwrap(), vec![2.0]);
}

#[test]
fn a_fallthrough_at_autograd_records_nothing() {
    custom_ops();
    let x = leaf(&[1.0, 2.0]);
    let y = call("fb_warn::quiet", &[&x]).unwrap();
    assert!(!y.requires_grad() && y.grad_fn().is_none());
}

#[test]
fn an_aten_operator_without_a_derivative_fails_in_backward() {
    aten_ops();
    let a = leaf(&[1.0, 2.0]);
    let b = Tensor::from_vec(vec![0.5f32, 0.5], &[2]).unwrap();
    let y = call("aten::_fb_no_formula", &[&a, &b]).unwrap();
    assert_eq!(y.to_vec::<f32>().unwrap(), vec![1.5, 2.5]);
    assert_eq!(name(&y), NOT_IMPLEMENTED);
    assert_eq!(next_names(&y), ["AccumulateGrad", "None"]);
    let e = sum(&y).backward().unwrap_err();
    assert_eq!(
        e.to_string(),
        "derivative for aten::_fb_no_formula is not implemented"
    );
    // In place: refused on a leaf, rebased on a non-leaf.
    let e = call("aten::_fb_no_formula_", &[&a, &b]).unwrap_err();
    assert_eq!(e.to_string(), LEAF_INPLACE);
    let m = at::mul_Scalar(&a, Scalar::Int(1)).unwrap();
    call("aten::_fb_no_formula_", &[&m, &b]).unwrap();
    assert_eq!(name(&m), NOT_IMPLEMENTED);
    assert_eq!(next_names(&m), ["MulBackward1", "None"]);
    assert!(sum(&m).backward().is_err());
    // Through a view: the base's history is rebased (CopySlices).
    let base = at::mul_Scalar(&a, Scalar::Int(1)).unwrap();
    let v = at::select_int(&base, 0, 0).unwrap();
    call("aten::_fb_no_formula_", &[&v, &b.select(0, 0).unwrap()]).unwrap();
    assert_eq!(name(&base), "CopySlices");
    // out=: refused with PyTorch's message while an argument requires grad.
    let out = Tensor::from_vec(vec![0.0f32, 0.0], &[2]).unwrap();
    let args = [a.clone(), b.clone()].map(Value::Tensor);
    let e = library::call(
        "aten::_fb_no_formula.out",
        &args,
        &[("out".into(), Value::Tensor(out))],
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "_fb_no_formula(): functions with out=... arguments don't support automatic differentiation, but one of the arguments requires grad."
    );
}

#[test]
fn aten_operators_that_never_need_a_derivative_record_nothing() {
    let a = leaf(&[1.0, 2.0]);
    for t in [
        at::ones_like(&a, None, None, None, None, None).unwrap(),
        at::zeros_like(&a, None, None, None, None, None).unwrap(),
        at::detach(&a).unwrap(),
    ] {
        assert!(!t.requires_grad(), "{t:?}");
    }
    // They skip the Autograd key (no boxing through the fallback), while an
    // operator the fallback serves stops there.
    let d = opforge::dispatch::dispatcher();
    let keys = a.key_set();
    assert!(keys.has(DispatchKey::Autograd));
    let ones_like = d.find("aten::ones_like").unwrap();
    assert_ne!(ones_like.dispatch_key(keys), Some(DispatchKey::Autograd));
    aten_ops();
    let served = d.find("aten::_fb_no_formula").unwrap();
    assert_eq!(served.dispatch_key(keys), Some(DispatchKey::Autograd));
    let i = at::argmax(&a, None, false).unwrap();
    assert!(i.grad_fn().is_none());
    // Comparisons return bools: no history either.
    let c = at::gt_Scalar(&a, Scalar::Float(1.5)).unwrap();
    assert!(c.grad_fn().is_none());
}
