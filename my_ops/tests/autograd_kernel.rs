//! A hand-written Autograd kernel (`#[kernel(Autograd, …)]` over a custom
//! Function) that forgets `below_autograd()` around its redispatch: the call
//! comes back to the same kernel, which fails with an error saying what to
//! call instead of recursing until the stack overflows. In its own test
//! binary, so that no other test sees this kernel of `mylib::axpy`.

use opforge::autograd::{below_autograd, Function, FunctionCtx};
use opforge::{kernel, Result, Scalar, Tensor};
use std::sync::atomic::{AtomicBool, Ordering};

/// Whether the Function's forward forgets `below_autograd()`.
static FORGET: AtomicBool = AtomicBool::new(false);

/// `mylib::axpy` with `alpha = 1`, as a custom Function.
struct Axpy;

impl Function for Axpy {
    type Args = (Tensor, Tensor);
    type Output = Tensor;
    type State = ();

    fn forward((x, y): &Self::Args) -> Result<Tensor> {
        let _below = (!FORGET.load(Ordering::SeqCst)).then(below_autograd);
        my_ops::at::mylib_axpy(x, y, Scalar::Int(1))
    }

    fn setup_context(_: &mut FunctionCtx<()>, _: &Self::Args, _: &Tensor) -> Result<()> {
        Ok(())
    }

    fn backward(_: &FunctionCtx<()>, grads: Vec<Option<Tensor>>) -> Result<Vec<Option<Tensor>>> {
        Ok(vec![grads[0].clone(), grads[0].clone()])
    }
}

#[kernel(Autograd, "mylib::axpy", schema = my_ops)]
fn axpy_autograd(x: &Tensor, y: &Tensor, alpha: Scalar) -> Result<Tensor> {
    assert_eq!(alpha.to_f64(), 1.0, "the test calls it with alpha = 1");
    Axpy::apply((x.clone(), y.clone()))
}

#[test]
fn an_autograd_kernel_run_again_inside_itself_is_an_error_naming_below_autograd() {
    let x = Tensor::from_vec(vec![1.0f64, 2.0], &[2]).unwrap();
    x.set_requires_grad(true).unwrap();
    let y = Tensor::from_vec(vec![10.0f64, 20.0], &[2]).unwrap();
    FORGET.store(true, Ordering::SeqCst);
    let e = my_ops::at::mylib_axpy(&x, &y, Scalar::Int(1)).unwrap_err();
    assert_eq!(
        e.to_string(),
        "mylib::axpy: its Autograd kernel was entered again on this thread while it runs: the \
         kernel calls `mylib::axpy` with the Autograd key still active, which would run the \
         kernel again without end. Make the call below autograd: `let _below = \
         opforge::autograd::below_autograd();` before it (a custom Function's forward runs with \
         grad mode off, but still dispatches to the Autograd key)"
    );
    // The mark went with the failed call: the kernel written right works on
    // the same thread.
    FORGET.store(false, Ordering::SeqCst);
    let out = my_ops::at::mylib_axpy(&x, &y, Scalar::Int(1)).unwrap();
    assert_eq!(out.to_vec::<f64>().unwrap(), [11.0, 22.0]);
    assert_eq!(out.grad_fn().unwrap().node.name(), "AxpyBackward");
    out.sum().unwrap().backward().unwrap();
    assert_eq!(x.grad().unwrap().to_vec::<f64>().unwrap(), [1.0, 1.0]);
}
