//! Custom autograd Functions: PyTorch's rules and messages
//! (`torch/autograd/function.py`), each checked against PyTorch 2.15 side by side.

use opforge::autograd::function::{
    DIRTY_LEAF, DIRTY_NOT_RETURNED, NO_BACKWARD, NO_FORWARD, NO_JVP, ONCE_DIFFERENTIABLE,
};
use opforge::autograd::{self, forward_ad, no_grad, Function, FunctionCtx, BACKWARD_TWICE};
use opforge::overrides::{push_dispatch_mode, DispatchCall, Handled, TorchDispatchMode};
use opforge::{at, DType, Result, Scalar, Tensor};
use std::sync::{Arc, Mutex};

type Grads = Vec<Option<Tensor>>;

fn leaf(values: &[f32]) -> Tensor {
    let t = Tensor::from_vec(values.to_vec(), &[values.len()]).unwrap();
    t.set_requires_grad(true).unwrap();
    t
}

fn ones(n: usize) -> Tensor {
    Tensor::from_vec(vec![1.0f32; n], &[n]).unwrap()
}

fn two() -> Tensor {
    Tensor::from_vec(vec![2.0f32], &[]).unwrap()
}

fn values(t: &Tensor) -> Vec<f32> {
    t.to_vec::<f32>().unwrap()
}

fn message(r: Result<impl std::fmt::Debug>) -> String {
    r.unwrap_err().to_string()
}

/// `x * k` with a configurable backward.
macro_rules! scaled {
    ($name:ident, |$g:ident| $back:expr) => {
        struct $name;
        impl Function for $name {
            type Args = (Tensor, f64);
            type Output = Tensor;
            type State = ();
            fn forward((x, k): &Self::Args) -> Result<Tensor> {
                x.mul_scalar(Scalar::Float(*k))
            }
            fn backward(_: &FunctionCtx<()>, grads: Grads) -> Result<Grads> {
                let $g = grads[0].clone().unwrap();
                Ok($back)
            }
        }
    };
}

scaled!(Count, |g| vec![Some(g)]);
scaled!(NonNone, |g| vec![Some(g.clone()), Some(g)]);
scaled!(ExtraNone, |g| vec![Some(g), None, None]);
scaled!(ExtraTensor, |g| vec![Some(g.clone()), None, Some(g)]);
scaled!(WrongShape, |_g| vec![Some(ones(3)), None]);
scaled!(Broadcast, |_g| vec![
    Some(Tensor::from_vec(vec![1.0f32; 8], &[4, 2]).unwrap()),
    None
]);
scaled!(TooSmall, |_g| vec![Some(ones(1)), None]);
scaled!(Double, |g| vec![
    Some(at::_to_copy(&g, Some(DType::Float64), None, None, None, false, None).unwrap()),
    None
]);

fn run<F: Function<Args = (Tensor, f64), Output = Tensor>>() -> Result<Tensor> {
    let x = leaf(&[1.0, 2.0]);
    F::apply((x.clone(), 2.0))?.sum()?.backward()?;
    Ok(x.grad().unwrap())
}

#[test]
fn backward_results_are_checked_as_pytorch_checks_them() {
    assert_eq!(
        message(run::<Count>()),
        "function CountBackward returned an incorrect number of gradients (expected 2, got 1)"
    );
    assert_eq!(
        message(run::<NonNone>()),
        "function NonNoneBackward returned a gradient different than None at position 2, but the corresponding forward input was not a Variable"
    );
    assert_eq!(values(&run::<ExtraNone>().unwrap()), vec![1.0, 1.0]);
    assert_eq!(
        message(run::<ExtraTensor>()),
        "function ExtraTensorBackward returned an incorrect number of gradients (expected 2, got 3)"
    );
    assert_eq!(
        message(run::<WrongShape>()),
        "Function WrongShapeBackward returned an invalid gradient at index 0 - got [3] but expected shape compatible with [2]"
    );
    // A gradient the input's shape broadcasts to is summed back to it.
    assert_eq!(values(&run::<Broadcast>().unwrap()), vec![4.0, 4.0]);
    assert_eq!(
        message(run::<TooSmall>()),
        "Function TooSmallBackward returned an invalid gradient at index 0 - got [1] but expected shape compatible with [2]"
    );
    // Cast to the input's dtype.
    assert_eq!(run::<Double>().unwrap().dtype(), DType::Float32);
}

struct OnlyForward;
impl Function for OnlyForward {
    type Args = Tensor;
    type Output = Tensor;
    type State = ();
    fn forward(x: &Tensor) -> Result<Tensor> {
        x.mul_scalar(Scalar::Int(2))
    }
}

struct OnlyBackward;
impl Function for OnlyBackward {
    type Args = Tensor;
    type Output = Tensor;
    type State = ();
    fn backward(_: &FunctionCtx<()>, grads: Grads) -> Result<Grads> {
        Ok(grads)
    }
}

#[test]
fn missing_methods_are_pytorchs_not_implemented_errors() {
    let x = leaf(&[1.0, 2.0]);
    let y = OnlyForward::apply(x.clone()).unwrap();
    assert_eq!(y.grad_fn().unwrap().node.name(), "OnlyForwardBackward");
    let e = y.sum().unwrap().backward().unwrap_err();
    assert!(matches!(e, opforge::Error::NotImplemented(_)));
    assert_eq!(e.to_string(), NO_BACKWARD);
    assert_eq!(message(OnlyBackward::apply(x.clone())), NO_FORWARD);
    let _level = forward_ad::dual_level().unwrap();
    let d = forward_ad::make_dual(&ones(2), &ones(2)).unwrap();
    assert_eq!(message(OnlyForward::apply(d)), NO_JVP);
}

/// The combined-style pattern of PyTorch's "Extending torch.autograd" notes with a flag: records what it saw.
struct Probe;
#[derive(Default)]
struct Seen {
    grad_mode: bool,
}
impl Function for Probe {
    type Args = (Tensor, f64, Tensor);
    type Output = Tensor;
    type State = Seen;
    fn forward_with_ctx(ctx: &mut FunctionCtx<Seen>, (x, k, _): &Self::Args) -> Result<Tensor> {
        ctx.state.grad_mode = autograd::is_grad_enabled();
        x.mul_scalar(Scalar::Float(*k))
    }
    fn backward(ctx: &FunctionCtx<Seen>, grads: Grads) -> Result<Grads> {
        assert!(!ctx.state.grad_mode, "forward ran with grad mode off");
        assert_eq!(ctx.needs_input_grad(), &[true, false, false]);
        Ok(vec![grads[0].clone(), None, None])
    }
}

#[test]
fn forward_runs_without_grad_and_needs_input_grad_has_one_flag_per_argument() {
    let x = leaf(&[1.0, 2.0]);
    let y = Probe::apply((x.clone(), 3.0, ones(2))).unwrap();
    // forward's own mul was not recorded: the output's history is the Function.
    assert_eq!(y.grad_fn().unwrap().node.name(), "ProbeBackward");
    y.sum().unwrap().backward().unwrap();
    assert_eq!(values(&x.grad().unwrap()), vec![1.0, 1.0]);
    // Nothing requires grad, or grad mode is off: no node.
    assert!(Probe::apply((ones(2), 3.0, ones(2)))
        .unwrap()
        .grad_fn()
        .is_none());
    let _off = no_grad();
    assert!(Probe::apply((x, 3.0, ones(2))).unwrap().grad_fn().is_none());
}

/// Modifies its input in place (marked dirty), and returns it or not.
struct Dirty<const RETURNED: bool>;
impl<const RETURNED: bool> Function for Dirty<RETURNED> {
    type Args = Tensor;
    type Output = Tensor;
    type State = ();
    fn forward_with_ctx(ctx: &mut FunctionCtx<()>, x: &Tensor) -> Result<Tensor> {
        let mut x = x.clone();
        x.mul_(&two())?;
        ctx.mark_dirty([&x]);
        match RETURNED {
            true => Ok(x),
            false => at::clone(&x, None),
        }
    }
    fn backward(_: &FunctionCtx<()>, grads: Grads) -> Result<Grads> {
        Ok(vec![Some(
            grads[0].clone().unwrap().mul_scalar(Scalar::Int(2))?,
        )])
    }
    fn name() -> std::borrow::Cow<'static, str> {
        "DirtyR".into()
    }
}

#[test]
fn dirty_inputs_must_be_returned_and_are_rebased_onto_the_function() {
    let y = leaf(&[1.0, 1.0]);
    let z = y.mul_scalar(Scalar::Int(1)).unwrap();
    assert_eq!(message(Dirty::<false>::apply(z)), DIRTY_NOT_RETURNED);
    assert_eq!(message(Dirty::<true>::apply(y.clone())), DIRTY_LEAF);
    // A non-leaf: the output is the input, and its history is the Function's.
    let z = y.mul_scalar(Scalar::Int(1)).unwrap();
    let o = Dirty::<true>::apply(z.clone()).unwrap();
    assert!(o.is_same(&z));
    assert_eq!(z.grad_fn().unwrap().node.name(), "DirtyRBackward");
    o.sum().unwrap().backward().unwrap();
    assert_eq!(values(&y.grad().unwrap()), vec![2.0, 2.0]);
}

#[test]
fn a_dirty_view_rebases_its_base_with_copy_slices() {
    let y = leaf(&[1.0; 4]);
    let b = y.mul_scalar(Scalar::Int(1)).unwrap();
    let v = at::slice_Tensor(&b, 0, Some(1), Some(3), 1).unwrap();
    let o = Dirty::<true>::apply(v.clone()).unwrap();
    assert!(o.is_same(&v));
    assert_eq!(b.grad_fn().unwrap().node.name(), "CopySlices");
    assert_eq!(values(&b), vec![1.0, 2.0, 2.0, 1.0]);
    b.sum().unwrap().backward().unwrap();
    assert_eq!(values(&y.grad().unwrap()), vec![1.0, 2.0, 2.0, 1.0]);
}

/// Returns a view of its input, or the input itself.
struct ViewOut<const ITSELF: bool>;
impl<const ITSELF: bool> Function for ViewOut<ITSELF> {
    type Args = Tensor;
    type Output = Tensor;
    type State = ();
    fn forward(x: &Tensor) -> Result<Tensor> {
        match ITSELF {
            true => Ok(x.clone()),
            false => at::slice_Tensor(x, 0, Some(0), Some(1), 1),
        }
    }
    fn backward(_: &FunctionCtx<()>, grads: Grads) -> Result<Grads> {
        Ok(grads)
    }
    fn name() -> std::borrow::Cow<'static, str> {
        match ITSELF {
            true => "Ident".into(),
            false => "ViewOut".into(),
        }
    }
}

#[test]
fn views_made_inside_a_function_cannot_be_modified_in_place() {
    let msg = |name: &str| {
        format!("Output 0 of {name} is a view and is being modified inplace. This view was created inside a custom Function (or because an input was returned as-is) and the autograd logic to handle view+inplace would override the custom backward associated with the custom Function, leading to incorrect gradients. This behavior is forbidden. You can fix this by cloning the output of the custom Function.")
    };
    let y = leaf(&[1.0, 1.0]);
    let mut o = ViewOut::<false>::apply(y.mul_scalar(Scalar::Int(1)).unwrap()).unwrap();
    assert_eq!(message(o.mul_(&two())), msg("ViewOut"));
    // An input returned as-is comes back as a view of it, not the input.
    let z = y.mul_scalar(Scalar::Int(1)).unwrap();
    let mut o = ViewOut::<true>::apply(z.clone()).unwrap();
    assert!(!o.is_same(&z));
    assert!(o.view_of().unwrap().base().is_same(&z));
    assert_eq!(z.grad_fn().unwrap().node.name(), "MulBackward1");
    assert_eq!(message(o.mul_(&two())), msg("Ident"));
    // Without grad, the alias is a plain view that does not require grad.
    let p = ones(2);
    let o = ViewOut::<true>::apply(p.clone()).unwrap();
    assert!(!o.is_same(&p) && !o.requires_grad());
}

/// `x ** 2`, saving `x`, with a `once_differentiable` backward.
struct Once;
impl Function for Once {
    type Args = Tensor;
    type Output = Tensor;
    type State = ();
    const ONCE_DIFFERENTIABLE: bool = true;
    fn forward_with_ctx(ctx: &mut FunctionCtx<()>, x: &Tensor) -> Result<Tensor> {
        ctx.save_for_backward([x]);
        x.mul(x)
    }
    fn backward(ctx: &FunctionCtx<()>, grads: Grads) -> Result<Grads> {
        assert!(!autograd::is_grad_enabled());
        let x = ctx.saved_tensors()?[0].clone().unwrap();
        Ok(vec![Some(
            x.mul_scalar(Scalar::Int(2))?
                .mul(grads[0].as_ref().unwrap())?,
        )])
    }
}

#[test]
fn once_differentiable_results_refuse_a_second_differentiation() {
    let z = leaf(&[1.0, 1.0]);
    let go = leaf(&[1.0, 1.0]);
    let y = Once::apply(z.clone()).unwrap();
    let gx = autograd::grad(
        &[y],
        std::slice::from_ref(&z),
        &[Some(go.clone())],
        None,
        true,
        false,
    )
    .unwrap();
    let gx = gx[0].clone().unwrap();
    assert_eq!(gx.grad_fn().unwrap().node.name(), "Error");
    assert!(gx.requires_grad());
    assert_eq!(message(gx.sum().unwrap().backward()), ONCE_DIFFERENTIABLE);
    // Without create_graph the results have no history.
    let y = Once::apply(z.clone()).unwrap();
    let gx = autograd::grad(&[y], &[z], &[Some(go)], None, false, false).unwrap();
    assert!(gx[0].as_ref().unwrap().grad_fn().is_none());
}

/// Saves its own output, or its input.
struct Saves<const OUTPUT: bool>;
impl<const OUTPUT: bool> Function for Saves<OUTPUT> {
    type Args = Tensor;
    type Output = Tensor;
    type State = ();
    fn forward_with_ctx(ctx: &mut FunctionCtx<()>, x: &Tensor) -> Result<Tensor> {
        let r = x.mul_scalar(Scalar::Int(2))?;
        match OUTPUT {
            true => ctx.save_for_backward([&r]),
            false => ctx.save_for_backward([x]),
        }
        Ok(r)
    }
    fn backward(ctx: &FunctionCtx<()>, grads: Grads) -> Result<Grads> {
        let r = ctx.saved_tensors()?[0].clone().unwrap();
        Ok(vec![Some(grads[0].as_ref().unwrap().mul(&r)?)])
    }
    fn name() -> std::borrow::Cow<'static, str> {
        "Saved".into()
    }
}

#[test]
fn saved_tensors_are_checked_against_in_place_writes_and_freed() {
    let hint = "Hint: enable anomaly detection to find the operation that failed to compute its gradient, with torch.autograd.set_detect_anomaly(True, check_nan=False).";
    let z = leaf(&[1.0, 1.0]);
    let mut o = Saves::<true>::apply(z.mul_scalar(Scalar::Int(1)).unwrap()).unwrap();
    {
        let _off = no_grad();
        o.mul_(&two()).unwrap();
    }
    assert_eq!(
        message(o.sum().unwrap().backward()),
        format!("one of the variables needed for gradient computation has been modified by an inplace operation: [torch.FloatTensor [2]], which is output 0 of Saved, is at version 1; expected version 0 instead. {hint}")
    );
    let mut w = z.mul_scalar(Scalar::Int(1)).unwrap();
    let o = Saves::<false>::apply(w.clone()).unwrap();
    w.mul_(&two()).unwrap();
    assert_eq!(
        message(o.sum().unwrap().backward()),
        format!("one of the variables needed for gradient computation has been modified by an inplace operation: [torch.FloatTensor [2]], which is output 0 of Mul, is at version 1; expected version 0 instead. {hint}")
    );
    let o = Saves::<false>::apply(z.clone()).unwrap().sum().unwrap();
    o.backward().unwrap();
    assert_eq!(message(o.backward()), BACKWARD_TWICE);
}

/// Two outputs, the second maybe marked non-differentiable, gradients
/// maybe not materialized; records what backward received.
struct Two<const NON_DIFF: bool, const MATERIALIZE: bool>;
static RECEIVED: Mutex<Vec<Option<Vec<f32>>>> = Mutex::new(Vec::new());
/// Held by the tests that run `Two` (its backward writes `RECEIVED`).
static SERIAL: Mutex<()> = Mutex::new(());
impl<const NON_DIFF: bool, const MATERIALIZE: bool> Function for Two<NON_DIFF, MATERIALIZE> {
    type Args = Tensor;
    type Output = (Tensor, Tensor);
    type State = ();
    fn forward_with_ctx(ctx: &mut FunctionCtx<()>, x: &Tensor) -> Result<(Tensor, Tensor)> {
        let (a, b) = (x.mul_scalar(Scalar::Int(2))?, x.mul_scalar(Scalar::Int(3))?);
        if NON_DIFF {
            ctx.mark_non_differentiable([&b]);
        }
        ctx.set_materialize_grads(MATERIALIZE);
        Ok((a, b))
    }
    fn backward(_: &FunctionCtx<()>, grads: Grads) -> Result<Grads> {
        *RECEIVED.lock().unwrap() = grads.iter().map(|g| g.as_ref().map(values)).collect();
        let mut total = grads[0].clone().unwrap().mul_scalar(Scalar::Int(2))?;
        if let Some(gb) = &grads[1] {
            total = total.add(&gb.mul_scalar(Scalar::Int(3))?)?;
        }
        Ok(vec![Some(total)])
    }
}

#[test]
fn outputs_share_one_node_and_undefined_gradients_are_materialized_or_not() {
    let _serial = SERIAL.lock().unwrap();
    let z = leaf(&[1.0, 1.0]);
    let (a, b) = Two::<false, true>::apply(z.clone()).unwrap();
    let (ga, gb) = (a.grad_fn().unwrap(), b.grad_fn().unwrap());
    assert!(Arc::ptr_eq(&ga.node, &gb.node));
    assert_eq!((ga.output_nr, gb.output_nr), (0, 1));
    b.sum().unwrap().backward().unwrap();
    assert_eq!(values(&z.grad().unwrap()), vec![3.0, 3.0]);
    assert_eq!(
        *RECEIVED.lock().unwrap(),
        vec![Some(vec![0.0, 0.0]), Some(vec![1.0, 1.0])]
    );

    let z = leaf(&[1.0, 1.0]);
    let (a, b) = Two::<true, true>::apply(z.clone()).unwrap();
    assert!(a.requires_grad() && !b.requires_grad() && b.grad_fn().is_none());
    a.sum().unwrap().backward().unwrap();
    assert_eq!(
        *RECEIVED.lock().unwrap(),
        vec![Some(vec![1.0, 1.0]), Some(vec![0.0, 0.0])]
    );

    let (a, _) = Two::<false, false>::apply(z.clone()).unwrap();
    a.sum().unwrap().backward().unwrap();
    assert_eq!(*RECEIVED.lock().unwrap(), vec![Some(vec![1.0, 1.0]), None]);
}

/// An integer tensor and a plain number among the outputs.
struct Mixed;
impl Function for Mixed {
    type Args = Tensor;
    type Output = (Tensor, Tensor, i64);
    type State = ();
    fn forward(x: &Tensor) -> Result<(Tensor, Tensor, i64)> {
        Ok((
            x.mul_scalar(Scalar::Int(2))?,
            Tensor::from_vec(vec![1i64, 2], &[2])?,
            7,
        ))
    }
    fn backward(_: &FunctionCtx<()>, grads: Grads) -> Result<Grads> {
        let ints = grads[1].as_ref().expect("an integer output's zeros");
        assert_eq!(
            (ints.dtype(), ints.to_vec::<i64>()?),
            (DType::Int64, vec![0, 0])
        );
        assert!(grads[2].is_none(), "a plain value's gradient is None");
        Ok(vec![grads[0].clone()])
    }
}

#[test]
fn integer_and_plain_outputs_never_require_grad() {
    let z = leaf(&[1.0, 1.0]);
    let (a, i, k) = Mixed::apply(z.clone()).unwrap();
    assert_eq!(a.grad_fn().unwrap().node.name(), "MixedBackward");
    assert!(!i.requires_grad());
    assert_eq!(k, 7);
    a.sum().unwrap().backward().unwrap();
    assert_eq!(values(&z.grad().unwrap()), vec![1.0, 1.0]);
}

/// `x * k` with a jvp.
struct Scale;
impl Function for Scale {
    type Args = (Tensor, f64);
    type Output = Tensor;
    type State = f64;
    fn forward((x, k): &Self::Args) -> Result<Tensor> {
        x.mul_scalar(Scalar::Float(*k))
    }
    fn setup_context(ctx: &mut FunctionCtx<f64>, (_, k): &Self::Args, _: &Tensor) -> Result<()> {
        ctx.state = *k;
        Ok(())
    }
    fn backward(ctx: &FunctionCtx<f64>, grads: Grads) -> Result<Grads> {
        Ok(vec![
            Some(
                grads[0]
                    .as_ref()
                    .unwrap()
                    .mul_scalar(Scalar::Float(ctx.state))?,
            ),
            None,
        ])
    }
    fn jvp(ctx: &mut FunctionCtx<f64>, tangents: Grads) -> Result<Grads> {
        assert!(tangents[1].is_none(), "a plain argument has no tangent");
        Ok(vec![Some(
            tangents[0]
                .as_ref()
                .unwrap()
                .mul_scalar(Scalar::Float(ctx.state))?,
        )])
    }
}

#[test]
fn forward_mode_runs_jvp() {
    let _level = forward_ad::dual_level().unwrap();
    let x = Tensor::from_vec(vec![1.0f64, 2.0], &[2]).unwrap();
    let v = Tensor::from_vec(vec![1.0f64, -1.0], &[2]).unwrap();
    let d = forward_ad::make_dual(&x, &v).unwrap();
    let y = Scale::apply((d, 3.0)).unwrap();
    let t = forward_ad::unpack_dual(&y).tangent.unwrap();
    assert_eq!(t.to_vec::<f64>().unwrap(), vec![3.0, -3.0]);
}

/// Logs every operator reaching the dispatcher's Python key.
#[derive(Default)]
struct Log(Mutex<Vec<String>>);
impl TorchDispatchMode for Log {
    fn torch_dispatch(&self, call: &DispatchCall<'_>) -> Result<Handled> {
        self.0.lock().unwrap().push(call.func().to_string());
        call.call_func().map(Handled::Value)
    }
}

#[test]
fn a_dispatch_mode_sees_forward_and_backward_operations() {
    let _serial = SERIAL.lock().unwrap();
    let log = Arc::new(Log::default());
    let z = leaf(&[1.0, 1.0]);
    {
        let _mode = push_dispatch_mode(log.clone());
        let (a, _) = Two::<false, true>::apply(z.clone()).unwrap();
        log.0.lock().unwrap().push("backward".into());
        a.sum().unwrap().backward().unwrap();
    }
    // PyTorch 2.15 logs the same (the second output's gradient materialized
    // by `aten.zeros.default`).
    assert_eq!(
        *log.0.lock().unwrap(),
        [
            "aten.mul.Scalar",
            "aten.mul.Scalar",
            "backward",
            "aten.sum.default",
            "aten.ones_like.default",
            "aten.expand.default",
            "aten.zeros.default",
            "aten.mul.Scalar",
            "aten.mul.Scalar",
            "aten.add.Tensor",
            "aten.detach.default",
        ]
    );
}

/// `x * 2`, backward `g * 2`: what a logging subclass sees.
struct Twice;
impl Function for Twice {
    type Args = Tensor;
    type Output = Tensor;
    type State = ();
    fn forward(x: &Tensor) -> Result<Tensor> {
        x.mul(&two())
    }
    fn backward(_: &FunctionCtx<()>, grads: Grads) -> Result<Grads> {
        Ok(vec![Some(grads[0].as_ref().unwrap().mul(&two())?)])
    }
}

#[test]
fn a_logging_subclass_sees_forward_and_backward_operations() {
    use opforge::overrides::{map_tensors, Class};
    let log = Arc::new(Mutex::new(Vec::<String>::new()));
    let seen = log.clone();
    let cls = Class::subclass("LoggingTensor")
        .disable_torch_function()
        .torch_dispatch(move |cls, call| {
            seen.lock().unwrap().push(call.func().to_string());
            let unwrapped = map_tensors(call.values(), &mut |t| {
                t.payload::<Tensor>().cloned().unwrap_or_else(|| t.clone())
            });
            let out = call.call_with(&unwrapped)?;
            let mut wrap = |r: &Tensor| Tensor::wrapper(cls, r, r.clone()).unwrap();
            Ok(Handled::Value(map_tensors(&[out], &mut wrap).remove(0)))
        })
        .build();
    let x = Tensor::from_vec(vec![1.0f32, 2.0], &[2]).unwrap();
    let w = Tensor::wrapper(&cls, &x, x.clone()).unwrap();
    w.set_requires_grad(true).unwrap();
    let y = Twice::apply(w.clone()).unwrap();
    assert_eq!(y.grad_fn().unwrap().node.name(), "TwiceBackward");
    assert!(y.is_instance(&cls));
    log.lock().unwrap().push("backward".into());
    y.sum().unwrap().backward().unwrap();
    let grad = w.grad().unwrap();
    assert!(grad.is_instance(&cls));
    assert_eq!(values(grad.payload::<Tensor>().unwrap()), vec![2.0, 2.0]);
    let log = log.lock().unwrap().clone();
    let names: Vec<&str> = log.iter().map(String::as_str).collect();
    assert_eq!(names[..2], ["aten.mul.Tensor", "backward"]);
    assert!(names.contains(&"aten.ones_like.default"), "{names:?}");
    assert_eq!(
        names.iter().filter(|n| **n == "aten.mul.Tensor").count(),
        2,
        "{names:?}"
    );
}

/// A Function whose backward runs backward through the graph that holds its
/// own node (PyTorch's `torch.autograd.backward(out)` on a saved output,
/// inside `backward`): the nested pass runs the node again instead of
/// waiting for the lock the outer pass holds. PyTorch 2.15 gives
/// `x.grad = [6.]` (3 from the nested pass, 3 from the outer).
#[test]
fn a_backward_may_run_backward_through_its_own_node() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    #[derive(Default)]
    struct Calls(AtomicUsize);
    struct Reenters;
    impl Function for Reenters {
        type Args = Tensor;
        type Output = Tensor;
        type State = Calls;
        fn forward(x: &Tensor) -> Result<Tensor> {
            x.mul_scalar(Scalar::Float(3.0))
        }
        fn setup_context(ctx: &mut FunctionCtx<Calls>, _: &Tensor, out: &Tensor) -> Result<()> {
            ctx.save_for_backward([out]);
            Ok(())
        }
        fn backward(ctx: &FunctionCtx<Calls>, grads: Grads) -> Result<Grads> {
            let out = ctx.saved_tensors()?.remove(0).expect("saved");
            if ctx.state.0.fetch_add(1, Ordering::SeqCst) == 0 {
                autograd::backward(
                    std::slice::from_ref(&out),
                    &[Some(at::ones_like(&out, None, None, None, None, None)?)],
                    None,
                    false,
                    None,
                )?;
            }
            let g = grads[0].as_ref().expect("a gradient");
            Ok(vec![Some(g.mul_scalar(Scalar::Float(3.0))?)])
        }
    }
    let x = leaf(&[1.0]);
    let y = Reenters::apply(x.clone()).unwrap();
    // On a thread, so that a deadlock fails the test instead of hanging it.
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(autograd::TensorAutograd::backward(&y).map_err(|e| e.to_string()));
    });
    let done = rx
        .recv_timeout(std::time::Duration::from_secs(60))
        .expect("backward returned (a nested pass through the node must not deadlock)");
    done.unwrap();
    assert_eq!(values(&x.grad().unwrap()), vec![6.0]);
}
