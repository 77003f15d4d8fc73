//! `nn.functional`: activations and losses over the operators of the YAML
//! (each call goes through the override protocols, as `torch.nn.functional`
//! does through `torch._C._nn`).

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::ops;
use crate::tensor::{torch_size, Tensor};

pub use crate::dtype::Reduction;

impl std::str::FromStr for Reduction {
    type Err = Error;

    /// `"none"`, `"mean"` or `"sum"`; anything else is PyTorch's error.
    fn from_str(s: &str) -> Result<Reduction> {
        Reduction::ALL
            .iter()
            .copied()
            .find(|r| r.name() == s)
            .ok_or_else(|| Error::Value(format!("{s} is not a valid value for reduction").into()))
    }
}

/// `max(x, 0)`.
pub fn relu(input: &Tensor) -> Result<Tensor> {
    ops::relu(input)
}

/// `x Φ(x)`, with `Φ` the standard normal distribution function
/// (`approximate = "none"`), or its tanh approximation
/// `0.5 x (1 + tanh(√(2/π) (x + 0.044715 x³)))` (`"tanh"`), PyTorch's
/// `F.gelu`; another `approximate` is PyTorch's error.
pub fn gelu(input: &Tensor, approximate: &str) -> Result<Tensor> {
    ops::gelu(input, approximate)
}

/// `x` where `x > 0`, else `negative_slope * x`, PyTorch's `F.leaky_relu`
/// (its default slope is 0.01).
pub fn leaky_relu(input: &Tensor, negative_slope: f64) -> Result<Tensor> {
    ops::leaky_relu(input, crate::tensor::Scalar::Float(negative_slope))
}

/// `softmax` along `dim` (computed in `dtype` if given).
pub fn softmax(input: &Tensor, dim: i64, dtype: Option<DType>) -> Result<Tensor> {
    ops::softmax_int(input, dim, dtype)
}

/// `log(softmax(x))` along `dim`, computed stably.
pub fn log_softmax(input: &Tensor, dim: i64, dtype: Option<DType>) -> Result<Tensor> {
    ops::log_softmax_int(input, dim, dtype)
}

/// The negative log-likelihood of `target` classes under log-probabilities
/// `input` (`[N, C]`), PyTorch's `F.nll_loss` (`ignore_index` -100 by
/// default).
pub fn nll_loss(
    input: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    ignore_index: i64,
    reduction: Reduction,
) -> Result<Tensor> {
    ops::nll_loss(input, target, weight, reduction.code(), ignore_index)
}

/// `nll_loss(log_softmax(input, 1), target)`, PyTorch's `F.cross_entropy`
/// with class-index targets.
pub fn cross_entropy(
    input: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    ignore_index: i64,
    reduction: Reduction,
    label_smoothing: f64,
) -> Result<Tensor> {
    ops::cross_entropy_loss(
        input,
        target,
        weight,
        reduction.code(),
        ignore_index,
        label_smoothing,
    )
}

/// The mean (or sum) squared error, PyTorch's `F.mse_loss`; a target of
/// another shape broadcasts, with PyTorch's warning. As in PyTorch, input
/// and target are broadcast (`torch.broadcast_tensors`: each tensor whose
/// sizes differ from the common ones is expanded) before `mse_loss`, whose
/// derivative holds for equal shapes only.
pub fn mse_loss(input: &Tensor, target: &Tensor, reduction: Reduction) -> Result<Tensor> {
    let (input_shape, target_shape) = (input.shape(), target.shape());
    if input_shape == target_shape {
        return ops::mse_loss(input, target, reduction.code());
    }
    crate::warnings::warn(&format!(
        "Using a target size ({}) that is different to the input size ({}). This will likely lead to incorrect results due to broadcasting. Please ensure they have the same size.",
        torch_size(&target_shape),
        torch_size(&input_shape)
    ));
    let sizes = crate::shape::broadcast_shapes(&input_shape, &target_shape)?;
    let expand = |t: &Tensor, shape: &[usize]| -> Result<Tensor> {
        match shape == sizes.as_slice() {
            true => Ok(t.clone()),
            false => {
                let sizes: Vec<i64> = sizes.iter().map(|&n| n as i64).collect();
                t.expand(&sizes)
            }
        }
    };
    ops::mse_loss(
        &expand(input, &input_shape)?,
        &expand(target, &target_shape)?,
        reduction.code(),
    )
}

/// Class indices to one-hot rows (`int64`); `num_classes` -1 infers it.
pub fn one_hot(tensor: &Tensor, num_classes: i64) -> Result<Tensor> {
    ops::one_hot(tensor, num_classes)
}
