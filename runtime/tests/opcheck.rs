//! `opcheck` catches deliberately mis-annotated operators (a kernel that
//! writes an input not marked `(a!)`, an output that aliases an input
//! without `(a)`, a fake kernel whose shape disagrees, autograd done at a
//! backend key) in PyTorch's words, and passes well-annotated ones.

use opforge::dispatch::DispatchKey;
use opforge::library::{register_fake, Library, LibraryKind};
use opforge::opcheck::{opcheck, opcheck_results, TestUtil};
use opforge::{Device, Error, Scalar, Tensor, Value};
use std::sync::OnceLock;

fn x() -> Tensor {
    Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]).unwrap()
}

fn arg(v: &Value) -> Tensor {
    match v {
        Value::Tensor(t) => t.clone(),
        other => panic!("{other:?}"),
    }
}

fn meta_like(t: &Tensor, shape: &[usize]) -> Value {
    Value::Tensor(Tensor::zeros(shape, t.dtype(), Device::Meta))
}

fn ops() {
    static ONCE: OnceLock<()> = OnceLock::new();
    ONCE.get_or_init(|| {
        let lib = Library::new("oc", LibraryKind::Def).unwrap();
        // Writes x, without `(a!)`.
        lib.define("bump(Tensor x) -> Tensor").unwrap();
        lib.impl_("bump", DispatchKey::CPU, |a: &[Value]| {
            let mut x = arg(&a[0]);
            x.fill_scalar_(Scalar::Int(0))?;
            Ok(vec![Value::Tensor(x.deep_clone()?)])
        })
        .unwrap();
        // Returns a view of x, without `(a)`.
        lib.define("peek(Tensor x) -> Tensor").unwrap();
        lib.impl_("peek", DispatchKey::CPU, |a: &[Value]| {
            Ok(vec![Value::Tensor(arg(&a[0]).t()?)])
        })
        .unwrap();
        // Returns x itself, without `(a!)`.
        lib.define("same(Tensor(a) x) -> Tensor(a)").unwrap();
        lib.impl_("same", DispatchKey::CPU, |a: &[Value]| {
            Ok(vec![a[0].clone()])
        })
        .unwrap();
        // Its fake kernel's shape disagrees with its kernel's.
        lib.define("twice(Tensor x) -> Tensor").unwrap();
        lib.impl_("twice", DispatchKey::CPU, |a: &[Value]| {
            Ok(vec![Value::Tensor((&arg(&a[0]) * 2.0)?)])
        })
        .unwrap();
        register_fake("oc::twice", |a: &[Value]| {
            let x = arg(&a[0]);
            Ok(vec![meta_like(&x, &[x.shape()[1], x.shape()[0]])])
        })
        .unwrap();
        // Autograd at the backend key (its kernel calls differentiable
        // operators on inputs that require grad).
        lib.define("double(Tensor x) -> Tensor").unwrap();
        lib.impl_("double", DispatchKey::CPU, |a: &[Value]| {
            Ok(vec![Value::Tensor(opforge::torch::mul(
                &arg(&a[0]),
                &Tensor::scalar(2.0f32),
            )?)])
        })
        .unwrap();
        // Well annotated: a write with `(a!)` returning it, a view with `(a)`,
        // each with a fake kernel.
        lib.define("zero_(Tensor(a!) x) -> Tensor(a!)").unwrap();
        lib.impl_("zero_", DispatchKey::CPU, |a: &[Value]| {
            let mut x = arg(&a[0]);
            x.fill_scalar_(Scalar::Int(0))?;
            Ok(vec![Value::Tensor(x)])
        })
        .unwrap();
        register_fake("oc::zero_", |a: &[Value]| Ok(vec![a[0].clone()])).unwrap();
        lib.define("tview(Tensor(a) x) -> Tensor(a)").unwrap();
        lib.impl_("tview", DispatchKey::CPU, |a: &[Value]| {
            Ok(vec![Value::Tensor(arg(&a[0]).t()?)])
        })
        .unwrap();
        register_fake("oc::tview", |a: &[Value]| {
            Ok(vec![Value::Tensor(arg(&a[0]).t()?)])
        })
        .unwrap();
        std::mem::forget(lib);
    });
}

fn check(name: &str, utils: &[TestUtil]) -> Result<(), String> {
    ops();
    opcheck(name, &[Value::Tensor(x())], utils).map_err(|e| {
        assert!(matches!(e, Error::OpCheck(_)));
        assert_eq!(e.python_class(), "OpCheckError");
        e.to_string()
    })
}

#[test]
fn a_kernel_writing_an_input_not_marked_written_fails_test_schema() {
    assert_eq!(
        check("oc::bump", &[TestUtil::Schema]).unwrap_err(),
        "opcheck(op, ...): test_schema failed with Argument x is not defined as mutable but \
         was mutated (scroll up for stack trace)"
    );
}

#[test]
fn an_output_aliasing_an_input_without_an_alias_set_fails_test_schema() {
    assert_eq!(
        check("oc::peek", &[TestUtil::Schema]).unwrap_err(),
        "opcheck(op, ...): test_schema failed with Argument x is not defined to alias output \
         but was aliasing (scroll up for stack trace)"
    );
    assert_eq!(
        check("oc::same", &[TestUtil::Schema]).unwrap_err(),
        "opcheck(op, ...): test_schema failed with Dispatcher operators below autograd are not \
         allowed to directly return inputs.\nHowever, we found that `outputs[0] is x (scroll up \
         for stack trace)"
    );
}

#[test]
fn a_fake_kernel_whose_shape_disagrees_fails_test_faketensor() {
    assert_eq!(
        check("oc::twice", &[TestUtil::FakeTensor]).unwrap_err(),
        "opcheck(op, ...): test_faketensor failed with When comparing the output of \
         oc.twice.default on FakeTensor and concrete Tensors, found mismatched tensor metadata: \
         Shapes torch.Size([2, 3]) and torch.Size([3, 2]) are not equal! (scroll up for stack \
         trace)"
    );
}

#[test]
fn autograd_at_a_backend_key_fails_test_autograd_registration() {
    ops();
    let plain = opcheck(
        "oc::double",
        &[Value::Tensor(x())],
        &[TestUtil::AutogradRegistration],
    )
    .unwrap_err();
    assert!(plain.to_string().contains(
        "autograd_registration_check: no inputs have requires_grad=True so we are unable to \
         actually perform this test."
    ));
    let w = x();
    w.set_requires_grad(true).unwrap();
    let e = opcheck(
        "oc::double",
        &[Value::Tensor(w)],
        &[TestUtil::AutogradRegistration],
    )
    .unwrap_err();
    assert!(
        e.to_string().starts_with(
            "opcheck(op, ...): test_autograd_registration failed with oc::double: at least one \
             output of this operator has requires_grad=True but the operator does not have an \
             autograd kernel defined at an autograd key"
        ),
        "{e}"
    );
}

#[test]
fn well_annotated_operators_pass_every_family() {
    for name in ["oc::zero_", "oc::tview"] {
        check(name, &[TestUtil::Schema, TestUtil::FakeTensor]).unwrap();
    }
    // Operators of the YAML with derivatives: all three families.
    let w = x();
    w.set_requires_grad(true).unwrap();
    for (name, args) in [
        (
            "aten::mul.Tensor",
            vec![Value::Tensor(w.clone()), Value::Tensor(x())],
        ),
        ("aten::t", vec![Value::Tensor(w.clone())]),
        ("aten::sum", vec![Value::Tensor(w.clone()), Value::None]),
    ] {
        let results = opcheck_results(
            opforge::library::find(name).unwrap(),
            &args,
            &TestUtil::DEFAULT,
        );
        for (u, r) in results {
            assert!(r.is_ok(), "{name} {}: {:?}", u.name(), r);
        }
    }
}
