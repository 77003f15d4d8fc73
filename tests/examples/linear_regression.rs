//! Fits `y = 3x + 2` with `nn::Linear` (the `Linear` of PyTorch's "Extending torch.nn"
//! notes, computed by its
//! custom `LinearFunction`) and SGD, printing the loss each epoch and the
//! learned weight and bias at the end.
//!
//! Run: `cargo run --release --example linear_regression`.

use opforge::nn::functional::{mse_loss, Reduction};
use opforge::nn::{Linear, Module};
use opforge::optim::{Optimizer, SgdOptions, SGD};
use opforge::{Result, Tensor};

/// 100 points `x` in [-1, 1) from the seeded generator, `y = 3x + 2`.
fn data() -> Result<(Tensor, Tensor)> {
    opforge::manual_seed(0);
    let x = opforge::ops::rand(&[100, 1], None, None, None, None)?;
    let xs: Vec<f32> = x.to_vec::<f32>()?.iter().map(|v| 2.0 * v - 1.0).collect();
    let ys: Vec<f32> = xs.iter().map(|v| 3.0 * v + 2.0).collect();
    Ok((
        Tensor::from_vec(xs, &[100, 1])?,
        Tensor::from_vec(ys, &[100, 1])?,
    ))
}

/// Trains for `epochs` full-batch steps; returns (weight, bias, last loss).
pub fn fit(epochs: usize, verbose: bool) -> Result<(f32, f32, f32)> {
    let (x, y) = data()?;
    let model = Linear::new(1, 1, true)?;
    let mut opt = SGD::new(
        model.parameters(),
        SgdOptions {
            lr: 0.1,
            momentum: 0.9,
            ..SgdOptions::default()
        },
    )?;
    let mut last = f32::NAN;
    for epoch in 1..=epochs {
        opt.zero_grad()?;
        let loss = mse_loss(&model.forward(&x)?, &y, Reduction::Mean)?;
        last = loss.item()?.to_f64() as f32;
        loss.backward()?;
        opt.step()?;
        if verbose {
            println!("epoch {epoch:3}  loss {last:.6}");
        }
    }
    let w = model.weight().to_vec::<f32>()?[0];
    let b = model.bias().expect("a bias").to_vec::<f32>()?[0];
    Ok((w, b, last))
}

fn main() -> Result<()> {
    let (w, b, _) = fit(100, true)?;
    println!("learned: y = {w:.4} x + {b:.4}   (true: y = 3x + 2)");
    Ok(())
}

#[test]
fn it_learns_the_line() {
    let (w, b, loss) = fit(100, false).unwrap();
    assert!(
        (w - 3.0).abs() < 1e-2 && (b - 2.0).abs() < 1e-2,
        "w={w} b={b}"
    );
    assert!(loss < 1e-4, "loss {loss}");
}
