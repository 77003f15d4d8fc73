//! `autograd::gradcheck` and `gradgradcheck` on small float64 inputs: passing
//! operators, a wrong gradient (PyTorch's message, or `Ok(false)`), a
//! backward that is not reentrant, and the options that are not supported.

use opforge::autograd::{
    gradcheck, gradgradcheck, GradcheckOptions, GradgradcheckOptions, TensorAutograd,
};
use opforge::{at, Error, Result, Tensor};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

fn leaf(v: &[f64], shape: &[usize]) -> Tensor {
    let t = Tensor::from_vec(v.to_vec(), shape).unwrap();
    t.set_requires_grad(true).unwrap();
    t
}

fn defaults() -> GradcheckOptions {
    GradcheckOptions::default()
}

/// `x * x.detach()`: analytical gradient x, numerical 2x.
fn wrong(xs: &[Tensor]) -> Result<Vec<Tensor>> {
    Ok(vec![at::mul_Tensor(&xs[0], &xs[0].detach()?)?])
}

fn cube(xs: &[Tensor]) -> Result<Vec<Tensor>> {
    let x2 = at::mul_Tensor(&xs[0], &xs[0])?;
    Ok(vec![at::mul_Tensor(&x2, &xs[0])?])
}

#[test]
fn defaults_are_pytorchs() {
    let o = defaults();
    assert_eq!(
        (o.eps, o.atol, o.rtol, o.nondet_tol),
        (1e-6, 1e-5, 1e-3, 0.0)
    );
    assert!(o.raise_exception && o.check_undefined_grad && o.check_backward_ad);
    assert!(!o.check_grad_dtypes && !o.check_batched_grad && !o.check_forward_ad && !o.fast_mode);
    let g = GradgradcheckOptions::default();
    assert!(g.grad_outputs.is_none() && g.check_rev_over_rev && !g.check_fwd_over_rev);
    assert!(!g.gen_non_contig_grad_outputs && g.raise_exception);
}

#[test]
fn operators_pass() {
    let a = leaf(&[0.5, -1.5, 2.0, 0.25, 1.0, -0.75], &[2, 3]);
    let b = leaf(&[1.0, 2.0, -0.5, 0.75, 1.25, -2.0], &[2, 3]);
    let m = leaf(&[0.1, 0.2, -0.3, 0.4, 0.5, -0.6], &[3, 2]);
    let o = defaults();
    let mul = |xs: &[Tensor]| Ok(vec![at::mul_Tensor(&xs[0], &xs[1])?]);
    assert!(gradcheck(mul, &[a.clone(), b.clone()], &o).unwrap());
    let sin = |xs: &[Tensor]| Ok(vec![at::sin(&xs[0])?]);
    assert!(gradcheck(sin, std::slice::from_ref(&a), &o).unwrap());
    let sum = |xs: &[Tensor]| Ok(vec![at::sum(&xs[0], None)?]);
    assert!(gradcheck(sum, std::slice::from_ref(&a), &o).unwrap());
    let mm = |xs: &[Tensor]| Ok(vec![at::mm(&xs[0], &xs[1])?]);
    assert!(gradcheck(mm, &[a.clone(), m.clone()], &o).unwrap());
    // An input that does not require grad is not differentiated.
    let plain = Tensor::from_vec(vec![1.0f64, 2.0, 3.0, 4.0, 5.0, 6.0], &[3, 2]).unwrap();
    assert!(gradcheck(mm, &[a.clone(), plain], &o).unwrap());
    // Fast mode.
    assert!(gradcheck(mm, &[a, m], &o.clone().fast_mode(true)).unwrap());
}

#[test]
fn a_wrong_gradient_fails_with_pytorchs_message() {
    let x = leaf(&[1.0, 2.0], &[2]);
    let e = gradcheck(wrong, std::slice::from_ref(&x), &defaults()).unwrap_err();
    assert!(matches!(e, Error::Gradcheck(_)), "{e:?}");
    assert_eq!(e.python_class(), "GradcheckError");
    let msg = e.to_string();
    assert!(
        msg.starts_with(
            "Jacobian mismatch for output 0 with respect to input 0,\nnumerical:tensor("
        ),
        "{msg}"
    );
    assert!(msg.contains("\nanalytical:tensor("), "{msg}");
    assert!(msg.ends_with('\n'), "{msg}");
    // Without raising: Ok(false).
    let quiet = defaults().raise_exception(false);
    assert!(!gradcheck(wrong, std::slice::from_ref(&x), &quiet).unwrap());
    assert!(!gradcheck(
        wrong,
        std::slice::from_ref(&x),
        &quiet.clone().fast_mode(true)
    )
    .unwrap());
    // Fast mode's message adds the slow-mode Jacobians.
    let e = gradcheck(wrong, &[x], &defaults().fast_mode(true)).unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.starts_with("Jacobian mismatch for output 0 with respect to input 0,\nnumerical:"),
        "{msg}"
    );
    assert!(
        msg.contains("Below, we recompute numerical and analytical jacobians in slow mode"),
        "{msg}"
    );
}

#[test]
fn gradgradcheck_of_a_cube() {
    let x = leaf(&[0.5, -1.25, 2.0], &[3]);
    assert!(gradgradcheck(
        cube,
        std::slice::from_ref(&x),
        &GradgradcheckOptions::default()
    )
    .unwrap());
    let o = GradgradcheckOptions::default().gen_non_contig_grad_outputs(true);
    assert!(gradgradcheck(cube, std::slice::from_ref(&x), &o).unwrap());
    let go = leaf(&[1.0, -0.5, 0.25], &[3]);
    let o = GradgradcheckOptions::default().grad_outputs(Some(vec![go]));
    assert!(gradgradcheck(cube, &[x], &o).unwrap());
}

#[test]
fn a_backward_that_is_not_reentrant_fails() {
    let x = leaf(&[1.0, 2.0], &[2]);
    let calls = Arc::new(AtomicUsize::new(0));
    let f = |xs: &[Tensor]| -> Result<Vec<Tensor>> {
        let y = at::mul_Scalar(&xs[0], opforge::Scalar::Float(2.0))?;
        let calls = calls.clone();
        y.register_hook(move |g| {
            let n = calls.fetch_add(1, Ordering::Relaxed);
            Ok(Some(at::mul_Scalar(
                g,
                opforge::Scalar::Float(1.0 + n as f64),
            )?))
        })?;
        Ok(vec![y])
    };
    let e = gradcheck(f, &[x], &defaults()).unwrap_err();
    assert!(
        e.to_string().starts_with("Backward is not reentrant, i.e., running backward with same input and grad_output multiple times gives different values, although analytical gradient matches numerical gradient.The tolerance for nondeterminism was 0.0."),
        "{e}"
    );
}

#[test]
fn outputs_that_do_not_require_grad() {
    let x = leaf(&[1.0, 2.0], &[2]);
    let detached = |xs: &[Tensor]| Ok(vec![at::mul_Tensor(&xs[0], &xs[0])?.detach()?]);
    let e = gradcheck(detached, std::slice::from_ref(&x), &defaults()).unwrap_err();
    assert_eq!(
        e.to_string(),
        "Numerical gradient for function expected to be zero"
    );
    // A constant output is fine.
    let constant = |_: &[Tensor]| Ok(vec![Tensor::from_vec(vec![1.0f64], &[1])?]);
    assert!(gradcheck(constant, &[x], &defaults()).unwrap());
}

/// `check_forward_ad`: the Jacobians by forward mode too, in slow and fast
/// mode; a wrong forward derivative fails with PyTorch's forward-mode message.
#[test]
fn forward_mode_jacobians_are_checked() {
    let a = leaf(&[0.5, -1.5, 2.0, 0.25, 1.0, -0.75], &[2, 3]);
    let m = leaf(&[0.1, 0.2, -0.3, 0.4, 0.5, -0.6], &[3, 2]);
    let mm_sin = |xs: &[Tensor]| Ok(vec![at::sin(&at::mm(&xs[0], &xs[1])?)?]);
    for fast in [false, true] {
        let o = defaults().check_forward_ad(true).fast_mode(fast);
        assert!(gradcheck(mm_sin, &[a.clone(), m.clone()], &o).unwrap());
        assert!(gradcheck(cube, std::slice::from_ref(&a), &o).unwrap());
        // Forward mode alone.
        let fw_only = o.clone().check_backward_ad(false);
        assert!(gradcheck(cube, std::slice::from_ref(&a), &fw_only).unwrap());
        let e = gradcheck(wrong, std::slice::from_ref(&a), &fw_only).unwrap_err();
        assert!(matches!(e, Error::Gradcheck(_)), "{e:?}");
        assert!(
            e.to_string().contains(
                "Jacobian computed with forward mode mismatch for output 0 with respect to input 0"
            ),
            "{e}"
        );
    }
}

#[test]
fn bad_inputs_and_unsupported_options() {
    let plain = Tensor::from_vec(vec![1.0f64], &[1]).unwrap();
    let e = gradcheck(cube, &[plain], &defaults()).unwrap_err();
    assert_eq!(e.python_class(), "ValueError");
    assert!(e
        .to_string()
        .starts_with("gradcheck expects at least one input tensor to require gradient"));

    let x = leaf(&[1.0], &[1]);
    for (opts, name) in [
        (defaults().check_batched_grad(true), "check_batched_grad"),
        (
            defaults()
                .check_forward_ad(true)
                .check_batched_forward_grad(true),
            "check_batched_forward_grad",
        ),
    ] {
        let e = gradcheck(cube, std::slice::from_ref(&x), &opts).unwrap_err();
        assert!(matches!(e, Error::NotImplemented(_)), "{e:?}");
        assert!(e.to_string().contains(name), "{e}");
        // Not a failed check: raise_exception(false) still returns the error.
        assert!(gradcheck(cube, std::slice::from_ref(&x), &opts.raise_exception(false)).is_err());
    }
    let e = gradcheck(
        cube,
        std::slice::from_ref(&x),
        &defaults().check_backward_ad(false),
    )
    .unwrap_err();
    assert!(
        e.to_string()
            .contains("check_forward_ad or check_backward_ad"),
        "{e}"
    );
    let o = GradgradcheckOptions::default().check_fwd_over_rev(true);
    let e = gradgradcheck(cube, std::slice::from_ref(&x), &o).unwrap_err();
    assert!(e.to_string().contains("check_fwd_over_rev"), "{e}");
    let o = GradgradcheckOptions::default().check_batched_grad(true);
    let e = gradgradcheck(cube, &[x], &o).unwrap_err();
    assert!(e.to_string().contains("check_batched_grad"), "{e}");
}
