//! This crate's operators are differentiable through its own
//! `derivatives.yaml` (`Build::derivatives` in `build.rs`): the generated
//! Autograd kernels redispatch to this crate's operators and record nodes
//! whose formulas call opforge's. Checked as PyTorch checks a formula: the
//! recorded node, `gradcheck` (with forward mode), `gradgradcheck` and
//! `opcheck`, on float64 inputs.

use my_ops::ops;
use opforge::autograd::{gradcheck, gradgradcheck, GradcheckOptions, GradgradcheckOptions};
use opforge::opcheck::{opcheck, TestUtil};
use opforge::{Result, Tensor, Value};

fn leaf(v: &[f64], shape: &[usize]) -> Tensor {
    let t = Tensor::from_vec(v.to_vec(), shape).unwrap();
    t.set_requires_grad(true).unwrap();
    t
}

fn wsq(xs: &[Tensor]) -> Result<Vec<Tensor>> {
    Ok(vec![ops::mylib_wsq(&xs[0], &xs[1])?])
}

fn scale(xs: &[Tensor]) -> Result<Vec<Tensor>> {
    Ok(vec![ops::mylib_scale(&xs[0], -2.5)?])
}

#[test]
fn the_generated_kernels_record_the_crates_nodes() {
    let x = leaf(&[1.0, -2.0, 3.0], &[3]);
    let w = leaf(&[0.5, 2.0, -1.0], &[3]);
    let y = ops::mylib_wsq(&x, &w).unwrap();
    assert_eq!(y.grad_fn().unwrap().node.name(), "WsqBackward0");
    assert_eq!(y.to_vec::<f64>().unwrap(), [0.5, 8.0, -9.0]);
    y.sum().unwrap().backward().unwrap();
    // d/dx = 2 w x, d/dw = x^2.
    assert_eq!(
        x.grad().unwrap().to_vec::<f64>().unwrap(),
        [1.0, -8.0, -6.0]
    );
    assert_eq!(w.grad().unwrap().to_vec::<f64>().unwrap(), [1.0, 4.0, 9.0]);
    let s = ops::mylib_scale(&x, 3.0).unwrap();
    assert_eq!(s.grad_fn().unwrap().node.name(), "ScaleBackward0");
}

#[test]
fn gradcheck_and_gradgradcheck_pass() {
    let x = leaf(&[0.5, -1.25, 2.0, 0.75, -0.3, 1.1], &[2, 3]);
    let w = leaf(&[1.5, -0.5, 0.25, 2.0, -1.0, 0.6], &[2, 3]);
    // A weight broadcast over the rows: its gradient is summed back.
    let row = leaf(&[0.7, -1.3, 0.9], &[3]);
    let fw = GradcheckOptions::default().check_forward_ad(true);
    for inputs in [vec![x.clone(), w.clone()], vec![x.clone(), row]] {
        assert!(gradcheck(wsq, &inputs, &fw).unwrap());
        assert!(gradcheck(wsq, &inputs, &GradcheckOptions::default().fast_mode(true)).unwrap());
        assert!(gradgradcheck(wsq, &inputs, &GradgradcheckOptions::default()).unwrap());
    }
    let one = std::slice::from_ref(&x);
    assert!(gradcheck(scale, one, &fw).unwrap());
    assert!(gradgradcheck(scale, one, &GradgradcheckOptions::default()).unwrap());
}

#[test]
fn opcheck_passes_every_family() {
    let x = leaf(&[0.5, -1.25, 2.0], &[3]);
    let w = Tensor::from_vec(vec![1.5f64, -0.5, 0.25], &[3]).unwrap();
    opcheck(
        "mylib::wsq",
        &[Value::Tensor(x.clone()), Value::Tensor(w)],
        &TestUtil::DEFAULT,
    )
    .unwrap();
    opcheck(
        "mylib::scale",
        &[Value::Tensor(x), Value::Float(2.0)],
        &TestUtil::DEFAULT,
    )
    .unwrap();
}
