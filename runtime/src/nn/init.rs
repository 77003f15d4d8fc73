//! `nn.init`: the initialisations `nn::Linear` uses, with PyTorch's formulas
//! (gains, fans, bounds computed in `f64` as Python does) and its draws from
//! the default generator, without recording.

use crate::autograd::no_grad;
use crate::error::{Error, Result};
use crate::tensor::Tensor;

/// Which fan `kaiming_*` scales by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FanMode {
    /// Preserves the variance of the forward pass (PyTorch's default).
    FanIn,
    /// Preserves the variance of the backward pass.
    FanOut,
}

/// PyTorch's `_calculate_fan_in_and_fan_out`: `(size(1) · receptive field,
/// size(0) · receptive field)`.
pub fn calculate_fan_in_and_fan_out(tensor: &Tensor) -> Result<(usize, usize)> {
    let shape = tensor.shape();
    if shape.len() < 2 {
        return Err(Error::Value(
            "Fan in and fan out can not be computed for tensor with fewer than 2 dimensions".into(),
        ));
    }
    let receptive: usize = shape[2..].iter().product();
    Ok((shape[1] * receptive, shape[0] * receptive))
}

/// PyTorch's `calculate_gain(nonlinearity, param)`; `param` is
/// `leaky_relu`'s negative slope (PyTorch's default 0.01 when `None`).
pub fn calculate_gain(nonlinearity: &str, param: Option<f64>) -> Result<f64> {
    Ok(match nonlinearity {
        "linear" | "conv1d" | "conv2d" | "conv3d" | "conv_transpose1d" | "conv_transpose2d"
        | "conv_transpose3d" | "sigmoid" => 1.0,
        "tanh" => 5.0 / 3.0,
        "relu" => 2f64.sqrt(),
        "leaky_relu" => {
            let slope = param.unwrap_or(0.01);
            (2.0 / (1.0 + slope * slope)).sqrt()
        }
        "selu" => 3.0 / 4.0,
        other => {
            return Err(Error::Value(
                format!("Unsupported nonlinearity {other}").into(),
            ))
        }
    })
}

/// Fills `tensor` in place with draws uniform in `[a, b)` (no history).
pub fn uniform_(tensor: &Tensor, a: f64, b: f64) -> Result<()> {
    let _off = no_grad();
    crate::at::uniform_(&mut tensor.clone(), a, b, None)?;
    Ok(())
}

/// Fills `tensor` in place with normal draws of `mean` and `std`.
pub fn normal_(tensor: &Tensor, mean: f64, std: f64) -> Result<()> {
    let _off = no_grad();
    crate::at::normal_(&mut tensor.clone(), mean, std, None)?;
    Ok(())
}

/// Fills `tensor` with `value`.
pub fn constant_(tensor: &Tensor, value: f64) -> Result<()> {
    let _off = no_grad();
    crate::at::fill__Scalar(&mut tensor.clone(), crate::Scalar::Float(value))?;
    Ok(())
}

/// Fills `tensor` with zeros.
pub fn zeros_(tensor: &Tensor) -> Result<()> {
    constant_(tensor, 0.0)
}

/// Fills `tensor` with ones.
pub fn ones_(tensor: &Tensor) -> Result<()> {
    constant_(tensor, 1.0)
}

/// PyTorch's `kaiming_uniform_(tensor, a, mode, nonlinearity)`: uniform in
/// ±`gain · √(3 / fan)`.
pub fn kaiming_uniform_(tensor: &Tensor, a: f64, mode: FanMode, nonlinearity: &str) -> Result<()> {
    if tensor.shape().contains(&0) {
        crate::warnings::warn("Initializing zero-element tensors is a no-op");
        return Ok(());
    }
    let (fan_in, fan_out) = calculate_fan_in_and_fan_out(tensor)?;
    let fan = match mode {
        FanMode::FanIn => fan_in,
        FanMode::FanOut => fan_out,
    };
    let gain = calculate_gain(nonlinearity, Some(a))?;
    let std = gain / (fan as f64).sqrt();
    let bound = 3f64.sqrt() * std;
    uniform_(tensor, -bound, bound)
}
