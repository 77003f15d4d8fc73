//! Fake tensors (`opforge::fake`) through the public API: operators of the
//! YAML, custom operators with and without fake kernels, autograd on fakes,
//! and PyTorch's exceptions (messages checked against PyTorch 2.15's
//! `FakeTensorMode`).

use opforge::dispatch::DispatchKey;
use opforge::error::FakeException;
use opforge::fake::FakeTensorMode;
use opforge::library::{self, register_fake, Library, LibraryKind};
use opforge::{torch, DType, Device, Error, Scalar, Tensor, Value};

fn real(shape: &[usize]) -> Tensor {
    let n = shape.iter().product();
    Tensor::from_vec((0..n).map(|i| i as f32).collect(), shape).unwrap()
}

fn kind(e: &Error) -> Option<FakeException> {
    match e {
        Error::Fake(k, _) => Some(*k),
        _ => None,
    }
}

#[test]
fn shapes_dtypes_and_strides_are_the_real_ones() {
    let mode = FakeTensorMode::new();
    let a = real(&[2, 3]);
    let b = real(&[3, 4]);
    let (fa, fb) = (mode.from_tensor(&a).unwrap(), mode.from_tensor(&b).unwrap());
    for (fake, want) in [
        (
            torch::matmul(&fa, &fb).unwrap(),
            torch::matmul(&a, &b).unwrap(),
        ),
        (torch::sum(&fa).unwrap(), torch::sum(&a).unwrap()),
        (fa.t().unwrap(), a.t().unwrap()),
        (
            torch::softmax(&fa, 1).unwrap(),
            torch::softmax(&a, 1).unwrap(),
        ),
    ] {
        assert!(fake.is_fake());
        assert_eq!(
            (fake.shape(), fake.strides(), fake.dtype(), fake.device()),
            (want.shape(), want.strides(), want.dtype(), want.device())
        );
    }
    // A real 0-dim tensor is a real tensor too (printed with its element).
    let e = torch::add(&fa, &Tensor::scalar(2.0f64)).unwrap_err();
    assert!(
        e.to_string().ends_with(
            "Found in aten.add.Tensor(FakeTensor(..., size=(2, 3)), tensor(2., size=(), \
             dtype=torch.float64))"
        ),
        "{e}"
    );
    let i = Tensor::from_vec(vec![1i64, 2, 3, 4, 5, 6], &[2, 3]).unwrap();
    let e = torch::cat(&[fa.clone(), i]).unwrap_err();
    assert!(
        e.to_string().ends_with(
            "Found in aten.cat.default([FakeTensor(..., size=(2, 3)), tensor([...], size=(2, 3))])"
        ),
        "{e}"
    );
    // A shape error is the kernel's own.
    let e = torch::matmul(&fb, &fb).unwrap_err();
    assert_eq!(e, torch::matmul(&b, &b).unwrap_err());
}

#[test]
fn fakes_claim_their_device_and_refuse_to_mix_two() {
    let mode = FakeTensorMode::new();
    let cpu = mode.from_tensor(&real(&[2])).unwrap();
    let meta = mode
        .from_tensor(&Tensor::zeros(&[2], DType::Float32, Device::Meta))
        .unwrap();
    assert_eq!(
        meta.to_string(),
        "FakeTensor(..., device='meta', size=(2,))"
    );
    assert_eq!(torch::neg(&meta).unwrap().device(), Device::Meta);
    let e = torch::add(&cpu, &meta).unwrap_err();
    assert_eq!(kind(&e), Some(FakeException::DeviceMismatch));
    assert_eq!(
        e.to_string(),
        "Expected all tensors to be on the same device, but found at least two devices, cpu and meta!"
    );
    assert_eq!(e.python_class(), "FakeTensorDeviceMismatchError");
    // A 0-dim CPU tensor goes with any device.
    let s = mode.from_tensor(&Tensor::scalar(1.0f32)).unwrap();
    assert_eq!(torch::mul(&meta, &s).unwrap().device(), Device::Meta);
}

#[test]
fn factories_under_the_mode_make_fakes_on_the_device_asked_for() {
    let mode = FakeTensorMode::new();
    let _in = mode.enter();
    let z = opforge::ops::zeros(&[2, 2], Some(DType::Int64), None, None, None).unwrap();
    assert_eq!(
        z.to_string(),
        "FakeTensor(..., size=(2, 2), dtype=torch.int64)"
    );
    let m = opforge::ops::ones(&[3], None, None, Some(Device::Meta), None).unwrap();
    assert_eq!(m.to_string(), "FakeTensor(..., device='meta', size=(3,))");
    drop(_in);
    // Left: factories are real again.
    assert!(!torch::ones(&[1]).unwrap().is_fake());
}

#[test]
fn an_operator_without_meta_or_fake_kernel_is_unsupported() {
    let lib = Library::new("fk", LibraryKind::Def).unwrap();
    lib.define("noimpl(Tensor x) -> Tensor").unwrap();
    lib.impl_("noimpl", DispatchKey::CPU, |args: &[Value]| {
        Ok(vec![args[0].clone()])
    })
    .unwrap();
    lib.define("withfake(Tensor x) -> Tensor").unwrap();
    lib.impl_("withfake", DispatchKey::CPU, |args: &[Value]| {
        Ok(vec![args[0].clone()])
    })
    .unwrap();
    register_fake("fk::withfake", |args: &[Value]| {
        let Value::Tensor(x) = &args[0] else {
            unreachable!()
        };
        Ok(vec![Value::Tensor(Tensor::zeros(
            &[x.numel(), 2],
            x.dtype(),
            Device::Meta,
        ))])
    })
    .unwrap();
    let mode = FakeTensorMode::new();
    let f = Value::Tensor(mode.from_tensor(&real(&[3])).unwrap());
    let e = library::call("fk::noimpl", std::slice::from_ref(&f), &[]).unwrap_err();
    assert_eq!(kind(&e), Some(FakeException::UnsupportedOperator));
    assert_eq!(
        format!("{}: {e}", e.python_class()),
        "UnsupportedOperatorException: fk.noimpl.default"
    );
    // The fake kernel runs, on meta tensors; its result becomes a fake.
    let out = library::call("fk::withfake", &[f], &[]).unwrap();
    let Value::Tensor(y) = &out[0] else { panic!() };
    assert_eq!(y.to_string(), "FakeTensor(..., size=(3, 2))");
}

#[test]
fn fakes_that_require_grad_record_and_differentiate() {
    let mode = FakeTensorMode::new();
    let w = real(&[3]);
    w.set_requires_grad(true).unwrap();
    let x = mode.from_tensor(&w).unwrap();
    assert_eq!(
        x.to_string(),
        "FakeTensor(..., size=(3,), requires_grad=True)"
    );
    let y = torch::mul(&x, &mode.from_tensor(&real(&[3])).unwrap()).unwrap();
    assert_eq!(
        y.to_string(),
        "FakeTensor(..., size=(3,), grad_fn=<MulBackward0>)"
    );
    let s = torch::sum(&y).unwrap();
    s.backward().unwrap();
    let g = x.grad().unwrap();
    assert!(g.is_fake());
    assert_eq!(g.to_string(), "FakeTensor(..., size=(3,))");
    assert!(w.grad().is_none());
}

#[test]
fn reading_a_fakes_data_fails() {
    let mode = FakeTensorMode::new();
    let f = mode.from_tensor(&real(&[2])).unwrap();
    // PyTorch 2.15: `DataDependentOutputException: aten._local_scalar_dense.default`
    // for `tolist()` and `item()` on a fake.
    let e = f.to_vec::<f32>().unwrap_err();
    assert_eq!(kind(&e), Some(FakeException::DataDependentOutput));
    assert_eq!(e.to_string(), "aten._local_scalar_dense.default");
    let one = mode.from_tensor(&Tensor::scalar(1.0f32)).unwrap();
    let e = one.item().unwrap_err();
    assert_eq!(kind(&e), Some(FakeException::DataDependentOutput));
    let mut w = f.clone();
    assert!(w.fill_scalar_(Scalar::Int(1)).is_ok());
    assert!(w.is_same(&f));
}

/// Every fake belongs to the mode that made it (PyTorch's `fake_mode`): a
/// call runs under the entered mode, else under its first fake's mode, so
/// fakes of two modes do not combine silently (PyTorch 2.15: `Mixing fake
/// modes NYI x.fake_mode=<…> vs self=<…>`, entered or not), and a mode that
/// allows non-fake inputs converts real tensors also when it is not entered.
#[test]
fn fakes_belong_to_their_mode() {
    let (m1, m2) = (FakeTensorMode::new(), FakeTensorMode::new());
    let a = m1.from_tensor(&real(&[2])).unwrap();
    let b = m2.from_tensor(&real(&[2])).unwrap();
    assert!(m1.is_our_fake(&a) && !m1.is_our_fake(&b) && !m1.is_our_fake(&real(&[2])));
    let mixed = |e: Error| {
        assert_eq!(kind(&e), Some(FakeException::MixedModes));
        assert_eq!(e.python_class(), "AssertionError");
        let text = e.to_string();
        assert!(
            text.starts_with("Mixing fake modes NYI x.fake_mode=<torch._subclasses.fake_tensor.FakeTensorMode object at 0x")
                && text.contains(" vs self=<torch._subclasses.fake_tensor.FakeTensorMode object at 0x"),
            "{text}"
        );
    };
    mixed(torch::add(&a, &b).unwrap_err());
    {
        let _in = m1.enter();
        mixed(torch::add(&a, &b).unwrap_err());
        // A factory under the entered mode makes one of its fakes.
        assert!(m1.is_our_fake(&torch::ones(&[2]).unwrap()));
    }
    // Results belong to the mode the call ran under.
    let c = torch::add(&a, &a).unwrap();
    assert!(m1.is_our_fake(&c));
    // Not entered: a mode allowing non-fake inputs still converts them; one
    // that does not refuses them.
    let allowing = FakeTensorMode::allowing_non_fake_inputs();
    let d = allowing.from_tensor(&real(&[2])).unwrap();
    let sum = torch::add(&d, &real(&[2])).unwrap();
    assert!(allowing.is_our_fake(&sum));
    let e = torch::add(&a, &real(&[2])).unwrap_err();
    assert_eq!(kind(&e), Some(FakeException::NonFakeInput));
    assert!(e
        .to_string()
        .starts_with("Please convert all Tensors to FakeTensors first"));
    // A fake outliving its mode still computes, with fakes of its kind.
    let orphan = {
        let m = FakeTensorMode::new();
        m.from_tensor(&real(&[3])).unwrap()
    };
    let r = torch::mul(&orphan, &orphan).unwrap();
    assert!(r.is_fake() && r.shape() == vec![3]);
}
