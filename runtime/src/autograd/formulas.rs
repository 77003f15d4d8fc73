//! The helpers `runtime/derivatives.yaml`'s formulas call (PyTorch's
//! `torch/csrc/autograd/FunctionsManual.cpp`, the part our operators need),
//! and what generated nodes share ([`Sizes`], [`sizes_of`]).
//!
//! Every `pub fn` here is a name a formula may use: the build reads this
//! file's `pub fn` names and gives them to the formula checker as its helpers.
//! Each takes references and returns `Result<Tensor>`, and computes with
//! `at::` only (the operators below autograd's layer), so a backward recorded
//! under `create_graph` goes through the Autograd kernels again.

use crate::at;
use crate::error::{Error, Result};
use crate::shape;
use crate::tensor::{DType, Scalar, Tensor};
use smallvec::SmallVec;

/// `t` in `dtype`: itself when it is already, else a copy (`_to_copy`), the
/// one cast of a gradient or tangent to the dtype it must have.
pub(crate) fn cast_to(t: Tensor, dtype: DType) -> Result<Tensor> {
    match t.dtype() == dtype {
        true => Ok(t),
        false => at::_to_copy(&t, Some(dtype), None, None, None, false, None),
    }
}

/// A tensor's sizes as a node keeps them (`self.sizes()` in a formula):
/// inline up to five dimensions.
pub type Sizes = SmallVec<[i64; 5]>;

/// `t.sizes()` as a [`Sizes`] (no allocation for five dimensions or fewer).
pub fn sizes_of(t: &Tensor) -> Sizes {
    t.with_geometry(|g| g.shape.iter().map(|&d| d as i64).collect())
}

/// The error of a formula written `not_implemented("name")`, in PyTorch's
/// words.
pub fn not_implemented(name: &str) -> Error {
    Error::Runtime(format!("the derivative for '{name}' is not implemented.").into())
}

/// `grad` summed over the dimensions it was broadcast along to get from
/// `sizes` (PyTorch's `at::sum_to`): leading dimensions dropped, dimensions of
/// size 1 kept.
pub fn sum_to(grad: &Tensor, sizes: &[i64]) -> Result<Tensor> {
    let have = grad.sizes();
    if sizes.is_empty() {
        return at::sum(grad, None);
    }
    let plan = shape::sum_to(&have, sizes);
    let mut g = grad.clone();
    if !plan.dims.is_empty() {
        g = at::sum_dim_IntList(&g, Some(&plan.dims), true, None)?;
    }
    if plan.view {
        g = at::view(&g, sizes)?;
    }
    Ok(g)
}

/// `grad * alpha`, or `grad` itself when `alpha` is 1 (PyTorch's
/// `maybe_multiply`).
pub fn maybe_multiply(grad: &Tensor, alpha: Scalar) -> Result<Tensor> {
    if alpha.to_f64() == 1.0 {
        Ok(grad.clone())
    } else {
        at::mul_Scalar(grad, alpha)
    }
}

/// A 0-dimensional zero of `like`'s dtype.
fn zero(like: &Tensor) -> Result<Tensor> {
    at::zeros(&[], Some(like.dtype()), None, None, None)
}

/// A boolean mask as `like`'s dtype (1 and 0).
fn as_dtype(mask: &Tensor, like: &Tensor) -> Result<Tensor> {
    at::_to_copy(mask, Some(like.dtype()), None, None, None, false, None)
}

/// `self.sgn()` (the `sgn` operator: differentiable, with a zero gradient,
/// as PyTorch's is).
pub fn sgn(self_: &Tensor) -> Result<Tensor> {
    at::sgn(self_)
}

/// `grad * other` (PyTorch's `mul_tensor_backward` for real dtypes).
pub fn mul_tensor_backward(grad: &Tensor, other: &Tensor) -> Result<Tensor> {
    at::mul_Tensor(grad, other)
}

/// `-grad * ((self / other) / other)` (PyTorch's `div_tensor_other_backward`).
pub fn div_tensor_other_backward(grad: &Tensor, self_: &Tensor, other: &Tensor) -> Result<Tensor> {
    let q = at::div_Tensor(&at::div_Tensor(self_, other)?, other)?;
    at::mul_Tensor(&at::neg(grad)?, &q)
}

/// `grad` with the reduced dimensions put back and expanded to `sizes`
/// (PyTorch's `sum_backward`). `dim` `None` or empty: every dimension.
pub fn sum_backward(
    grad: &Tensor,
    sizes: &[i64],
    dim: Option<&[i64]>,
    keepdim: bool,
) -> Result<Tensor> {
    let n = sizes.len() as i64;
    let mut g = grad.clone();
    if !keepdim && n > 0 {
        let mut dims: Vec<i64> = match dim {
            Some(d) if !d.is_empty() => d.iter().map(|&d| if d < 0 { d + n } else { d }).collect(),
            _ => (0..n).collect(),
        };
        dims.sort_unstable();
        dims.dedup();
        for d in dims {
            g = at::unsqueeze(&g, d)?;
        }
    }
    at::expand(&g, sizes, false)
}

/// [`sum_backward`] divided by the number of elements each output averaged
/// (PyTorch's `mean_backward`).
pub fn mean_backward(
    grad: &Tensor,
    sizes: &[i64],
    dim: Option<&[i64]>,
    numel: usize,
    keepdim: bool,
) -> Result<Tensor> {
    let n = sizes.len() as i64;
    let count = match dim {
        Some(d) if !d.is_empty() => d
            .iter()
            .map(|&d| sizes[(if d < 0 { d + n } else { d }) as usize])
            .product::<i64>(),
        _ => numel as i64,
    };
    at::div_Scalar(
        &sum_backward(grad, sizes, dim, keepdim)?,
        Scalar::Int(count),
    )
}

/// `grad @ mat2ᵀ` (PyTorch's `mm_mat1_backward`).
pub fn mm_mat1_backward(grad: &Tensor, mat2: &Tensor) -> Result<Tensor> {
    at::mm(grad, &at::t(mat2)?)
}

/// `selfᵀ @ grad` (PyTorch's `mm_mat2_backward`).
pub fn mm_mat2_backward(grad: &Tensor, self_: &Tensor) -> Result<Tensor> {
    at::mm(&at::t(self_)?, grad)
}

/// `grad` permuted back by the inverse of `dims` (PyTorch's
/// `permute_backwards`).
pub fn permute_backwards(grad: &Tensor, dims: &[i64]) -> Result<Tensor> {
    let n = dims.len() as i64;
    let mut inverse = vec![0i64; dims.len()];
    for (i, &d) in dims.iter().enumerate() {
        let d = if d < 0 { d + n } else { d };
        inverse[d as usize] = i as i64;
    }
    at::permute(grad, &inverse)
}

/// `grad.unsqueeze(dim)` if the input had size 1 there (PyTorch's
/// `unsqueeze_to`).
pub fn unsqueeze_to(grad: &Tensor, dim: i64, sizes: &[i64]) -> Result<Tensor> {
    let n = sizes.len() as i64;
    let d = if dim < 0 { dim + n } else { dim };
    if n == 0 || sizes.get(d as usize) == Some(&1) {
        at::unsqueeze(grad, d.max(0))
    } else {
        Ok(grad.clone())
    }
}

/// `unsqueeze_to(grad, dims, sizes)` for a list of dimensions (PyTorch's
/// `unsqueeze_to` over an `IntArrayRef`): each listed dimension of size 1 in
/// `sizes`, which `squeeze.dims` removed, put back, in increasing order.
pub fn unsqueeze_to_dims(grad: &Tensor, dims: &[i64], sizes: &[i64]) -> Result<Tensor> {
    let mask = crate::shape::dim_list_to_bitset(dims, sizes.len())?;
    let mut out = grad.clone();
    for (d, &size) in sizes.iter().enumerate() {
        if mask[d] && size == 1 {
            out = at::unsqueeze(&out, d as i64)?;
        }
    }
    Ok(out)
}

/// `grad` placed along `dim` of a tensor of `sizes` at `len` positions from
/// `start` with stride `step`, zeros elsewhere: zeros and `grad` concatenated
/// for a step of 1, otherwise the one-hot product of
/// [`index_select_backward`]. Built from differentiable operators (`cat`,
/// `mm`), so the gradient keeps its history under `create_graph` (PyTorch
/// writes into zeros and rebases with `CopySlices`).
fn place_along(
    grad: &Tensor,
    sizes: &[i64],
    dim: i64,
    start: i64,
    len: i64,
    step: i64,
) -> Result<Tensor> {
    let d = shape::wrap_dim(dim, sizes.len())?;
    let m = sizes[d];
    if step == 1 {
        let zeros = |n: i64| {
            let mut shape = sizes.to_vec();
            shape[d] = n;
            at::zeros(&shape, Some(grad.dtype()), None, None, None)
        };
        let before = zeros(start)?;
        let after = zeros(m - start - len)?;
        return at::cat(&[before, grad.clone(), after], d as i64);
    }
    let index = at::arange_start_step(
        Scalar::Int(start),
        Scalar::Int(start + len * step),
        Scalar::Int(step),
        Some(DType::Int64),
        None,
        None,
        None,
    )?;
    index_select_backward(grad, sizes, d as i64, &index)
}

/// PyTorch's `select_backward`: `grad` at `index` along `dim`, zeros
/// elsewhere.
pub fn select_backward(grad: &Tensor, sizes: &[i64], dim: i64, index: i64) -> Result<Tensor> {
    let d = shape::wrap_dim(dim, sizes.len())? as i64;
    let m = sizes[d as usize];
    let i = if index < 0 { index + m } else { index };
    place_along(&at::unsqueeze(grad, d)?, sizes, d, i, 1, 1)
}

/// PyTorch's `slice_backward_wrapper`: `grad` at the sliced positions,
/// zeros elsewhere (`start` / `end` clamped as slicing clamps them).
pub fn slice_backward(
    grad: &Tensor,
    sizes: &[i64],
    dim: i64,
    start: Option<i64>,
    _end: Option<i64>,
    step: i64,
) -> Result<Tensor> {
    let d = shape::wrap_dim(dim, sizes.len())? as i64;
    let m = sizes[d as usize];
    let clamp = |x: i64| {
        let x = if x < 0 { x + m } else { x };
        x.clamp(0, m)
    };
    let start = clamp(start.unwrap_or(0));
    let len = grad.shape().get(d as usize).map_or(0, |&l| l as i64);
    place_along(grad, sizes, d, start, len, step.max(1))
}

/// `grad` where `self` is strictly inside `(min, max)`, 0 elsewhere (PyTorch
/// 2.15's `clamp_backward`: at a bound itself the gradient is 0, for one bound
/// or two, as recorded in grad_calls.jsonl's `at_bounds` case).
pub fn clamp_backward(
    grad: &Tensor,
    self_: &Tensor,
    min: Option<Scalar>,
    max: Option<Scalar>,
) -> Result<Tensor> {
    let z = zero(grad)?;
    let mut g = grad.clone();
    if let Some(lo) = min {
        g = at::where_self(&at::gt_Scalar(self_, lo)?, &g, &z)?;
    }
    if let Some(hi) = max {
        g = at::where_self(&at::lt_Scalar(self_, hi)?, &g, &z)?;
    }
    Ok(g)
}

/// `where(condition, grad, 0)` (`true_branch`) or `where(condition, 0, grad)`.
pub fn where_backward(condition: &Tensor, grad: &Tensor, true_branch: bool) -> Result<Tensor> {
    let z = zero(grad)?;
    match true_branch {
        true => at::where_self(condition, grad, &z),
        false => at::where_self(condition, &z, grad),
    }
}

/// `grad * (1 - y) * y` (PyTorch's `sigmoid_backward`).
pub fn sigmoid_backward(grad: &Tensor, result: &Tensor) -> Result<Tensor> {
    let one_minus = at::add_Scalar(&at::neg(result)?, Scalar::Int(1), Scalar::Int(1))?;
    at::mul_Tensor(&at::mul_Tensor(grad, &one_minus)?, result)
}

/// `grad * (1 - y * y)` (PyTorch's `tanh_backward`).
pub fn tanh_backward(grad: &Tensor, result: &Tensor) -> Result<Tensor> {
    let sq = at::mul_Tensor(result, result)?;
    let one_minus = at::add_Scalar(&at::neg(&sq)?, Scalar::Int(1), Scalar::Int(1))?;
    at::mul_Tensor(grad, &one_minus)
}

/// `grad` where `result > threshold`, 0 elsewhere: the `threshold_backward`
/// operator (relu's gradient at 0 is 0), differentiable as PyTorch's is.
pub fn threshold_backward(grad: &Tensor, result: &Tensor, threshold: f64) -> Result<Tensor> {
    at::threshold_backward(grad, result, Scalar::Float(threshold))
}

/// `1 - t` with `t` a tensor (`t` negated, plus one).
fn one_minus(t: &Tensor) -> Result<Tensor> {
    at::add_Scalar(&at::neg(t)?, Scalar::Int(1), Scalar::Int(1))
}

/// `ggI * gO * gelu''(self)`: the derivative of `gelu_backward` with respect
/// to `self` (PyTorch's `gelu_double_backward` in
/// torch/csrc/autograd/FunctionsManual.cpp). With `φ` the normal density,
/// `gelu'' = φ(x) (2 - x²)`; for the tanh form, with `t = tanh(u)`,
/// `u = √(2/π) (x + κx³)`, `gelu'' = (1 - t²) (u' + x/2 (u'' - 2t u'²))`.
pub fn gelu_double_backward(
    ggi: &Tensor,
    go: &Tensor,
    self_: &Tensor,
    approximate: &str,
) -> Result<Tensor> {
    use std::f64::consts::{FRAC_1_SQRT_2, FRAC_2_SQRT_PI, SQRT_2};
    let sq = at::mul_Tensor(self_, self_)?;
    let second = match approximate {
        "tanh" => {
            let (beta, kappa) = (SQRT_2 * FRAC_2_SQRT_PI * 0.5, 0.044715);
            let cube = at::mul_Tensor(&sq, self_)?;
            let u = at::mul_Scalar(
                &at::add_Tensor(self_, &cube, Scalar::Float(kappa))?,
                Scalar::Float(beta),
            )?;
            let t = at::tanh(&u)?;
            let du = at::add_Scalar(
                &at::mul_Scalar(&sq, Scalar::Float(3.0 * beta * kappa))?,
                Scalar::Float(beta),
                Scalar::Int(1),
            )?;
            let ddu = at::mul_Scalar(self_, Scalar::Float(6.0 * beta * kappa))?;
            let t_du2 = at::mul_Tensor(&at::mul_Tensor(&t, &du)?, &du)?;
            let bracket = at::add_Tensor(&ddu, &t_du2, Scalar::Int(-2))?;
            let half_x = at::mul_Scalar(self_, Scalar::Float(0.5))?;
            let inner = at::add_Tensor(&du, &at::mul_Tensor(&half_x, &bracket)?, Scalar::Int(1))?;
            at::mul_Tensor(&one_minus(&at::mul_Tensor(&t, &t)?)?, &inner)?
        }
        _ => {
            let pdf = at::mul_Scalar(
                &at::exp(&at::mul_Scalar(&sq, Scalar::Float(-0.5))?)?,
                Scalar::Float(FRAC_2_SQRT_PI * FRAC_1_SQRT_2 * 0.5),
            )?;
            let two_minus = at::add_Scalar(&at::neg(&sq)?, Scalar::Int(2), Scalar::Int(1))?;
            at::mul_Tensor(&pdf, &two_minus)?
        }
    };
    at::mul_Tensor(&at::mul_Tensor(ggi, go)?, &second)
}

/// The forward-mode derivative of `gelu_backward`: its derivative along
/// `grad_output_t` plus its derivative along `self_t` (PyTorch's formula in
/// tools/autograd/derivatives.yaml).
pub fn gelu_backward_jvp(
    grad_output_t: &Tensor,
    self_t: &Tensor,
    grad_output_p: &Tensor,
    self_p: &Tensor,
    approximate: &str,
) -> Result<Tensor> {
    let along_grad = at::gelu_backward(grad_output_t, self_p, approximate)?;
    let along_self = gelu_double_backward(self_t, grad_output_p, self_p, approximate)?;
    at::add_Tensor(&along_grad, &along_self, Scalar::Int(1))
}

/// `grad / (2 * result)` (sqrt's formula).
pub fn sqrt_backward(grad: &Tensor, result: &Tensor) -> Result<Tensor> {
    at::div_Tensor(grad, &at::mul_Scalar(result, Scalar::Int(2))?)
}

/// `grad / (self + 1)` (PyTorch's `log1p_backward` in
/// torch/csrc/autograd/FunctionsManual.cpp, for a strided `self`).
pub fn log1p_backward(grad: &Tensor, self_: &Tensor) -> Result<Tensor> {
    at::div_Tensor(
        grad,
        &at::add_Scalar(self_, Scalar::Int(1), Scalar::Int(1))?,
    )
}

/// `grad` cast back to the input's dtype (PyTorch's `_to_copy_backward`).
pub fn to_copy_backward(grad: &Tensor, dtype: DType) -> Result<Tensor> {
    at::_to_copy(grad, Some(dtype), None, None, None, false, None)
}

/// Zeros of `sizes` in `grad`'s dtype (`zeros_like(grad)` for `copy_`'s
/// destination).
pub fn zeros_of(grad: &Tensor, sizes: &[i64]) -> Result<Tensor> {
    at::zeros(sizes, Some(grad.dtype()), None, None, None)
}

/// `0, 1, …, len - 1` (int64) shaped to lie along dimension `d` of `n`
/// dimensions.
fn arange_along(len: i64, d: i64, n: usize) -> Result<Tensor> {
    let r = at::arange(Scalar::Int(len), Some(DType::Int64), None, None, None)?;
    let mut shape = vec![1i64; n];
    shape[d as usize] = len;
    at::reshape(&r, &shape)
}

/// `grad` put back at the positions `indices` selected along `dim`, zeros
/// elsewhere (PyTorch's `value_selecting_reduction_backward`, `max.dim` /
/// `min.dim`: only the index the forward returned gets the gradient, also
/// among ties).
pub fn value_selecting_reduction_backward(
    grad: &Tensor,
    dim: i64,
    indices: &Tensor,
    sizes: &[i64],
    keepdim: bool,
) -> Result<Tensor> {
    let n = sizes.len();
    if n == 0 {
        return Ok(grad.clone());
    }
    let d = shape::wrap_dim(dim, n)? as i64;
    let (g, idx) = match keepdim {
        true => (grad.clone(), indices.clone()),
        false => (at::unsqueeze(grad, d)?, at::unsqueeze(indices, d)?),
    };
    let mask = at::eq_Tensor(&idx, &arange_along(sizes[d as usize], d, n)?)?;
    let z = zero(grad)?;
    at::expand(&at::where_self(&mask, &g, &z)?, sizes, false)
}

/// The gradient of `index_select`: each selected slice's gradient added back
/// at its index along `dim` (PyTorch's `index_select_backward`, repeated
/// indices summed), as a product with the one-hot matrix of the indices.
pub fn index_select_backward(
    grad: &Tensor,
    sizes: &[i64],
    dim: i64,
    index: &Tensor,
) -> Result<Tensor> {
    let n = sizes.len();
    if n == 0 {
        return Ok(grad.clone());
    }
    let d = shape::wrap_dim(dim, n)? as i64;
    let m = sizes[d as usize];
    let index = at::reshape(index, &[-1])?;
    let k = index.numel() as i64;
    // onehot[j, i] = (index[j] == i)
    let onehot = at::eq_Tensor(&at::unsqueeze(&index, 1)?, &arange_along(m, 1, 2)?)?;
    let onehot = as_dtype(&onehot, grad)?;
    let last = n as i64 - 1;
    let gt = at::contiguous(
        &at::transpose_int(grad, d, last)?,
        crate::tensor::MemoryFormat::Contiguous,
    )?;
    let mut shape = gt.sizes();
    // Rows counted, not inferred: an empty index leaves nothing to infer from.
    let rows: i64 = shape[..n - 1].iter().product();
    let flat = at::reshape(&gt, &[rows, k])?;
    let r = match all_finite(&flat)? {
        true => at::mm(&flat, &onehot)?,
        // An infinite or NaN gradient reaches only its own index, as
        // PyTorch's `index_add` puts it (the product with the one-hot
        // matrix would make `inf * 0` a NaN everywhere else).
        false => {
            let mask = at::ne_Scalar(&onehot, Scalar::Int(0))?;
            let spread = at::where_self(&mask, &at::unsqueeze(&flat, 2)?, &zero(&flat)?)?;
            at::sum_dim_IntList(&spread, Some(&[1]), false, None)?
        }
    };
    shape[n - 1] = m;
    at::transpose_int(&at::reshape(&r, &shape)?, d, last)
}

/// Whether every element of `t` is finite (`t * 0` sums to 0, not NaN).
fn all_finite(t: &Tensor) -> Result<bool> {
    let _off = super::mode::no_grad();
    let z = at::sum(&at::mul_Scalar(t, Scalar::Int(0))?, Some(DType::Float64))?;
    Ok(z.to_vec::<f64>()?.first().is_none_or(|v| v.is_finite()))
}

/// `maximum` / `minimum` (`max`: which) for one input (`for_self`): the
/// gradient split in half at ties, 0 where this input loses (PyTorch's
/// `masked_fill(where(self == other, grad / 2, grad), self < other, 0)` and
/// its three mirror images).
pub fn max_min_backward(
    grad: &Tensor,
    self_: &Tensor,
    other: &Tensor,
    max: bool,
    for_self: bool,
) -> Result<Tensor> {
    let tie = at::eq_Tensor(self_, other)?;
    let shared = at::where_self(&tie, &at::div_Scalar(grad, Scalar::Int(2))?, grad)?;
    let loses = match max == for_self {
        true => at::lt_Tensor(self_, other)?,
        false => at::gt_Tensor(self_, other)?,
    };
    at::where_self(&loses, &zero(grad)?, &shared)
}

/// The forward formula of `maximum` / `minimum`: the mean of the tangents at
/// ties, else the winner's tangent.
pub fn max_min_jvp(
    self_p: &Tensor,
    self_t: &Tensor,
    other_p: &Tensor,
    other_t: &Tensor,
    max: bool,
) -> Result<Tensor> {
    let mean = at::div_Scalar(
        &at::add_Tensor(self_t, other_t, Scalar::Int(1))?,
        Scalar::Int(2),
    )?;
    let self_wins = match max {
        true => at::gt_Tensor(self_p, other_p)?,
        false => at::lt_Tensor(self_p, other_p)?,
    };
    let winner = at::where_self(&self_wins, self_t, other_t)?;
    at::where_self(&at::eq_Tensor(self_p, other_p)?, &mean, &winner)
}

/// `exponent - 1` as a scalar of the same kind.
fn minus_one(s: Scalar) -> Scalar {
    match s {
        Scalar::Int(i) => Scalar::Int(i - 1),
        Scalar::Bool(b) => Scalar::Int(i64::from(b) - 1),
        Scalar::Float(x) => Scalar::Float(x - 1.0),
    }
}

/// `pow.Tensor_Scalar`'s gradient: zeros for a zero exponent, else
/// `grad * (exponent * self.pow(exponent - 1))` (PyTorch's `pow_backward`;
/// at a zero base with an exponent below 1 that is PyTorch's inf or nan).
pub fn pow_backward(grad: &Tensor, self_: &Tensor, exponent: Scalar) -> Result<Tensor> {
    if exponent.to_f64() == 0.0 {
        return at::zeros_like(self_, None, None, None, None, None);
    }
    let d = at::mul_Scalar(
        &at::pow_Tensor_Scalar(self_, minus_one(exponent))?,
        exponent,
    )?;
    at::mul_Tensor(grad, &d)
}

/// `pow.Tensor_Tensor`'s gradient for `self`: `where(exponent == 0, 0,
/// grad * (exponent * self.pow(exponent - 1)))` (PyTorch's `pow_backward_self`).
pub fn pow_backward_self(grad: &Tensor, self_: &Tensor, exponent: &Tensor) -> Result<Tensor> {
    let em1 = at::sub_Scalar(exponent, Scalar::Int(1), Scalar::Int(1))?;
    let d = at::mul_Tensor(exponent, &at::pow_Tensor_Tensor(self_, &em1)?)?;
    let g = at::mul_Tensor(grad, &d)?;
    at::where_self(&at::eq_Scalar(exponent, Scalar::Int(0))?, &zero(&g)?, &g)
}

/// `pow.Tensor_Tensor`'s gradient for `exponent`: `grad * where(self == 0 &&
/// exponent >= 0, 0, result * log(self))` (PyTorch's `pow_backward_exponent`).
pub fn pow_backward_exponent(
    grad: &Tensor,
    self_: &Tensor,
    exponent: &Tensor,
    result: &Tensor,
) -> Result<Tensor> {
    let x = at::mul_Tensor(result, &at::log(self_)?)?;
    let z = zero(&x)?;
    // `self == 0 && exponent >= 0`, as two selections.
    let at_zero = at::where_self(&at::lt_Scalar(exponent, Scalar::Int(0))?, &x, &z)?;
    let picked = at::where_self(&at::eq_Scalar(self_, Scalar::Int(0))?, &at_zero, &x)?;
    at::mul_Tensor(grad, &picked)
}

/// `pow.Scalar`'s gradient for the exponent (PyTorch's
/// `pow_backward_exponent` for a Scalar base in
/// torch/csrc/autograd/FunctionsManual.cpp): `grad * result * ln(base)`, and
/// for a base 0, 0 where `exponent >= 0`.
pub fn pow_backward_exponent_scalar(
    grad: &Tensor,
    base: Scalar,
    exponent: &Tensor,
    result: &Tensor,
) -> Result<Tensor> {
    let x = at::mul_Scalar(result, Scalar::Float(base.to_f64().ln()))?;
    let x = if base.to_f64() == 0.0 {
        at::where_self(&at::ge_Scalar(exponent, Scalar::Int(0))?, &zero(&x)?, &x)?
    } else {
        x
    };
    at::mul_Tensor(grad, &x)
}

/// `atan2`'s gradient (PyTorch's `atan2_backward` in
/// torch/csrc/autograd/FunctionsManual.cpp): `grad * other * r` for `self`,
/// `grad * -self * r` for `other`, where `r = 1 / (self² + other²)`, and 0 at
/// the origin (PyTorch 2.15's gradient there is a zero of the product's
/// sign, not NaN: recorded in tests/data/recorded/grad_calls_binary.jsonl).
pub fn atan2_backward(
    grad: &Tensor,
    self_: &Tensor,
    other: &Tensor,
    for_self: bool,
) -> Result<Tensor> {
    let squares = at::add_Tensor(
        &at::mul_Tensor(self_, self_)?,
        &at::mul_Tensor(other, other)?,
        Scalar::Int(1),
    )?;
    let recip = at::reciprocal(&squares)?;
    let at_origin = at::eq_Scalar(&squares, Scalar::Int(0))?;
    let recip = at::where_self(&at_origin, &zero(&recip)?, &recip)?;
    let factor = match for_self {
        true => other.clone(),
        false => at::neg(self_)?,
    };
    at::mul_Tensor(&at::mul_Tensor(grad, &factor)?, &recip)
}

/// The number of zeros of `t`.
fn count_zeros(t: &Tensor) -> Result<i64> {
    let _off = super::mode::no_grad();
    Ok(at::sum(&at::eq_Scalar(t, Scalar::Int(0))?, None)?
        .item()?
        .to_i64())
}

/// `prod`'s gradient (PyTorch's `prod_backward`): `grad * (result / input)`
/// without zeros; with one zero, the product of the others at that place and
/// 0 elsewhere; with two or more, zeros.
pub fn prod_backward(grad: &Tensor, input: &Tensor, result: &Tensor) -> Result<Tensor> {
    if input.dim() == 0 {
        return Ok(grad.clone());
    }
    match count_zeros(input)? {
        0 => at::mul_Tensor(grad, &at::div_Tensor(result, input)?),
        // Two zeros or more: the gradient is zero, but its own gradient
        // (recorded when grad mode is on, `create_graph`) is not.
        n if n > 1 && !super::mode::is_grad_enabled() => {
            at::zeros_like(input, None, None, None, None, None)
        }
        _ => {
            let flat = at::reshape(input, &[-1])?;
            let g = prod_safe_zeros_backward(grad, &flat, 0)?;
            at::reshape(&g, &input.sizes())
        }
    }
}

/// `prod.dim_int`'s gradient (PyTorch's `prod_backward` with a dimension).
pub fn prod_dim_backward(
    grad: &Tensor,
    input: &Tensor,
    result: &Tensor,
    dim: i64,
    keepdim: bool,
) -> Result<Tensor> {
    if input.dim() == 0 {
        return Ok(grad.clone());
    }
    let d = shape::wrap_dim(dim, input.dim())? as i64;
    let (grad, result) = match keepdim {
        true => (grad.clone(), result.clone()),
        false => (at::unsqueeze(grad, d)?, at::unsqueeze(result, d)?),
    };
    match count_zeros(input)? {
        0 => at::mul_Tensor(&grad, &at::div_Tensor(&result, input)?),
        _ => prod_safe_zeros_backward(&grad, input, d),
    }
}

/// `grad` times the product of the other elements along `dim`, for each
/// element, without dividing (PyTorch's `prod_safe_zeros_backward`, which
/// takes exclusive cumulative products): the product of the slices before
/// and after each position, placed side by side with `cat` (not spread with
/// a 0/1 mask, whose `inf * 0` would make NaNs of the other positions), so
/// it stays differentiable.
fn prod_safe_zeros_backward(grad: &Tensor, input: &Tensor, dim: i64) -> Result<Tensor> {
    let n = input.shape()[dim as usize] as i64;
    if n == 0 {
        return at::zeros_like(input, None, None, None, None, None);
    }
    let part = |start: i64, end: i64| -> Result<Option<Tensor>> {
        if start >= end {
            return Ok(None);
        }
        let s = at::slice_Tensor(input, dim, Some(start), Some(end), 1)?;
        at::prod_dim_int(&s, dim, true, None).map(Some)
    };
    let mut pieces = Vec::with_capacity(n as usize);
    for i in 0..n {
        pieces.push(match (part(0, i)?, part(i + 1, n)?) {
            (Some(a), Some(b)) => at::mul_Tensor(&a, &b)?,
            (Some(a), None) | (None, Some(a)) => a,
            (None, None) => {
                let s = at::slice_Tensor(input, dim, Some(0), Some(1), 1)?;
                at::ones_like(&s, None, None, None, None, None)?
            }
        });
    }
    at::mul_Tensor(grad, &at::cat(&pieces, dim)?)
}

/// `div.Tensor_mode`'s gradient for `self`: zeros with a rounding mode (the
/// result is piecewise constant), else `grad / other`.
pub fn div_mode_self_backward(
    grad: &Tensor,
    other: &Tensor,
    rounding_mode: Option<&str>,
) -> Result<Tensor> {
    match rounding_mode {
        Some(_) => at::zeros_like(grad, None, None, None, None, None),
        None => at::div_Tensor(grad, other),
    }
}

/// `div.Tensor_mode`'s gradient for `other`: zeros with a rounding mode, else
/// `div.Tensor`'s.
pub fn div_mode_other_backward(
    grad: &Tensor,
    self_: &Tensor,
    other: &Tensor,
    rounding_mode: Option<&str>,
) -> Result<Tensor> {
    match rounding_mode {
        Some(_) => at::zeros_like(grad, None, None, None, None, None),
        None => div_tensor_other_backward(grad, self_, other),
    }
}

/// `clamp.Tensor`'s gradient for input `which` (0: `self`, 1: `min`, 2:
/// `max`): PyTorch 2.15 differentiates it as `minimum(maximum(self, min),
/// max)`, so a tie with a bound splits the gradient in half, and where
/// `min > max` the result (and the gradient) is `max`'s.
pub fn clamp_tensor_backward(
    grad: &Tensor,
    self_: &Tensor,
    min: Option<&Tensor>,
    max: Option<&Tensor>,
    which: usize,
) -> Result<Tensor> {
    let lower = match min {
        Some(lo) => at::maximum(self_, lo)?,
        None => self_.clone(),
    };
    // The gradient reaching `maximum(self, min)`, or `max`'s share.
    let through = match max {
        Some(hi) => max_min_backward(grad, &lower, hi, false, which != 2)?,
        None => grad.clone(),
    };
    match (which, min) {
        (2, _) => Ok(through),
        (w, Some(lo)) => max_min_backward(&through, self_, lo, true, w == 0),
        (_, None) => Ok(through),
    }
}

/// `clamp.Tensor`'s forward formula (see [`clamp_tensor_backward`]).
pub fn clamp_tensor_jvp(
    self_p: &Tensor,
    self_t: &Tensor,
    min_p: Option<&Tensor>,
    min_t: Option<&Tensor>,
    max_p: Option<&Tensor>,
    max_t: Option<&Tensor>,
) -> Result<Tensor> {
    let (lower, lower_t) = match (min_p, min_t) {
        (Some(lo), Some(lo_t)) => (
            at::maximum(self_p, lo)?,
            max_min_jvp(self_p, self_t, lo, lo_t, true)?,
        ),
        _ => (self_p.clone(), self_t.clone()),
    };
    match (max_p, max_t) {
        (Some(hi), Some(hi_t)) => max_min_jvp(&lower, &lower_t, hi, hi_t, false),
        _ => Ok(lower_t),
    }
}

/// `cat`'s gradient: `grad` cut along `dim` into the inputs' sizes (PyTorch's
/// `cat_tensors_backward`; a legacy empty 1-d input gets an empty gradient).
pub fn cat_tensors_backward(grad: &Tensor, sizes: &[Vec<i64>], dim: i64) -> Result<Vec<Tensor>> {
    let d = shape::wrap_dim(dim, grad.dim())? as i64;
    let mut offset = 0;
    let mut out = Vec::with_capacity(sizes.len());
    for s in sizes {
        if s.as_slice() == [0] && grad.dim() != 1 {
            out.push(at::zeros(&[0], Some(grad.dtype()), None, None, None)?);
            continue;
        }
        let len = s.get(d as usize).copied().unwrap_or(0);
        out.push(at::slice_Tensor(
            grad,
            d,
            Some(offset),
            Some(offset + len),
            1,
        )?);
        offset += len;
    }
    Ok(out)
}

/// `stack`'s gradient: `grad` unbound along `dim`, one slice per input
/// (PyTorch's `stack_tensors_backward`).
pub fn stack_tensors_backward(grad: &Tensor, dim: i64, sizes: &[Vec<i64>]) -> Result<Vec<Tensor>> {
    let d = shape::wrap_dim(dim, grad.dim())? as i64;
    (0..sizes.len() as i64)
        .map(|i| at::select_int(grad, d, i))
        .collect()
}

/// `self_t` at the positions `indices` selected along `dim` (PyTorch's
/// `gather_with_keepdimed_indices`: the forward formula of `max.dim` /
/// `min.dim`), as the sum along `dim` of `self_t` masked to the selected
/// position.
pub fn gather_with_keepdimed_indices(
    self_t: &Tensor,
    dim: i64,
    indices: &Tensor,
    keepdim: bool,
) -> Result<Tensor> {
    let n = self_t.dim();
    if n == 0 {
        return Ok(self_t.clone());
    }
    let d = shape::wrap_dim(dim, n)? as i64;
    let idx = match keepdim {
        true => indices.clone(),
        false => at::unsqueeze(indices, d)?,
    };
    let len = self_t.shape()[d as usize] as i64;
    let mask = at::eq_Tensor(&idx, &arange_along(len, d, n)?)?;
    let picked = at::where_self(&mask, self_t, &zero(self_t)?)?;
    at::sum_dim_IntList(&picked, Some(&[d]), keepdim, None)
}

/// `sum(t, dim, keepdim=true)`.
fn sum_keep(t: &Tensor, dim: i64) -> Result<Tensor> {
    at::sum_dim_IntList(t, Some(&[dim]), true, None)
}

/// `grad * (value / tensor2)` (addcdiv's `tensor1` gradient).
pub fn addcdiv_tensor1_backward(grad: &Tensor, tensor2: &Tensor, value: Scalar) -> Result<Tensor> {
    at::div_Tensor(&at::mul_Scalar(grad, value)?, tensor2)
}

/// `-grad * (value * tensor1 / (tensor2 * tensor2))` (addcdiv's `tensor2`
/// gradient).
pub fn addcdiv_tensor2_backward(
    grad: &Tensor,
    tensor1: &Tensor,
    tensor2: &Tensor,
    value: Scalar,
) -> Result<Tensor> {
    let sq = at::mul_Tensor(tensor2, tensor2)?;
    let q = at::div_Tensor(&at::mul_Scalar(tensor1, value)?, &sq)?;
    at::mul_Tensor(&at::neg(grad)?, &q)
}

/// addcdiv's tangent: `self_t + value * t1_t / t2_p - value * t2_t * (t1_p /
/// t2_p) / t2_p`.
pub fn addcdiv_jvp(
    self_t: &Tensor,
    tensor1_t: &Tensor,
    tensor2_t: &Tensor,
    tensor1_p: &Tensor,
    tensor2_p: &Tensor,
    value: Scalar,
) -> Result<Tensor> {
    let a = maybe_multiply(&at::div_Tensor(tensor1_t, tensor2_p)?, value)?;
    let q = at::div_Tensor(tensor1_p, tensor2_p)?;
    let b = maybe_multiply(
        &at::div_Tensor(&at::mul_Tensor(tensor2_t, &q)?, tensor2_p)?,
        value,
    )?;
    at::sub_Tensor(
        &at::add_Tensor(self_t, &a, Scalar::Int(1))?,
        &b,
        Scalar::Int(1),
    )
}

/// addcmul's tangent: `self_t + value * t1_t * t2_p + value * t2_t * t1_p`.
pub fn addcmul_jvp(
    self_t: &Tensor,
    tensor1_t: &Tensor,
    tensor2_t: &Tensor,
    tensor1_p: &Tensor,
    tensor2_p: &Tensor,
    value: Scalar,
) -> Result<Tensor> {
    let a = maybe_multiply(&at::mul_Tensor(tensor1_t, tensor2_p)?, value)?;
    let b = maybe_multiply(&at::mul_Tensor(tensor2_t, tensor1_p)?, value)?;
    at::add_Tensor(
        &at::add_Tensor(self_t, &a, Scalar::Int(1))?,
        &b,
        Scalar::Int(1),
    )
}

/// addmm's tangent: `beta * self_t + alpha * (mat1_t @ mat2_p) + alpha *
/// (mat1_p @ mat2_t)`.
pub fn addmm_jvp(
    self_t: &Tensor,
    mat1_t: &Tensor,
    mat2_t: &Tensor,
    mat1_p: &Tensor,
    mat2_p: &Tensor,
    beta: Scalar,
    alpha: Scalar,
) -> Result<Tensor> {
    let a = maybe_multiply(self_t, beta)?;
    let b = maybe_multiply(&at::mm(mat1_t, mat2_p)?, alpha)?;
    let c = maybe_multiply(&at::mm(mat1_p, mat2_t)?, alpha)?;
    at::add_Tensor(&at::add_Tensor(&a, &b, Scalar::Int(1))?, &c, Scalar::Int(1))
}

/// log_softmax's tangent: `self_t - sum(self_t * exp(result), dim)` (PyTorch's
/// `self_t - logsumexp_jvp(self_p, self_t, {dim}, true)`, with `exp(result)`
/// the softmax).
pub fn log_softmax_jvp(self_t: &Tensor, result: &Tensor, dim: i64) -> Result<Tensor> {
    let s = sum_keep(&at::mul_Tensor(self_t, &at::exp(result)?)?, dim)?;
    at::sub_Tensor(self_t, &s, Scalar::Int(1))
}

/// softmax's tangent: `result * (self_t - sum(self_t * result, dim))`.
pub fn softmax_jvp(self_t: &Tensor, result: &Tensor, dim: i64) -> Result<Tensor> {
    let s = sum_keep(&at::mul_Tensor(self_t, result)?, dim)?;
    at::mul_Tensor(result, &at::sub_Tensor(self_t, &s, Scalar::Int(1))?)
}

/// `_log_softmax_backward_data`'s `grad_output` gradient (the adjoint of
/// `g - exp(output) * sum(g)`): `grad - sum(grad * exp(output), dim)`.
pub fn log_softmax_backward_grad_output(
    grad: &Tensor,
    output: &Tensor,
    dim: i64,
) -> Result<Tensor> {
    let s = sum_keep(&at::mul_Tensor(grad, &at::exp(output)?)?, dim)?;
    at::sub_Tensor(grad, &s, Scalar::Int(1))
}

/// `_log_softmax_backward_data`'s `output` gradient:
/// `-sum(grad_output, dim) * exp(output) * grad`.
pub fn log_softmax_double_backward(
    grad: &Tensor,
    grad_output: &Tensor,
    dim: i64,
    output: &Tensor,
) -> Result<Tensor> {
    let s = at::neg(&sum_keep(grad_output, dim)?)?;
    at::mul_Tensor(&at::mul_Tensor(&s, &at::exp(output)?)?, grad)
}

/// `_log_softmax_backward_data`'s tangent (of `g - exp(o) * sum(g)`):
/// `g_t - exp(o) * (o_t * sum(g) + sum(g_t))`.
pub fn log_softmax_backward_jvp(
    grad_output_t: &Tensor,
    output_t: &Tensor,
    grad_output_p: &Tensor,
    output_p: &Tensor,
    dim: i64,
) -> Result<Tensor> {
    let e = at::exp(output_p)?;
    let inner = at::add_Tensor(
        &at::mul_Tensor(output_t, &sum_keep(grad_output_p, dim)?)?,
        &sum_keep(grad_output_t, dim)?,
        Scalar::Int(1),
    )?;
    at::sub_Tensor(grad_output_t, &at::mul_Tensor(&e, &inner)?, Scalar::Int(1))
}

/// `_softmax_backward_data`'s `output` gradient (PyTorch's
/// `softmax_double_backward`): `grad * (grad_output - sum(grad_output *
/// output)) - grad_output * sum(grad * output)`.
pub fn softmax_double_backward(
    grad: &Tensor,
    grad_output: &Tensor,
    dim: i64,
    output: &Tensor,
) -> Result<Tensor> {
    let s = sum_keep(&at::mul_Tensor(grad_output, output)?, dim)?;
    let a = at::mul_Tensor(grad, &at::sub_Tensor(grad_output, &s, Scalar::Int(1))?)?;
    let b = at::mul_Tensor(grad_output, &sum_keep(&at::mul_Tensor(grad, output)?, dim)?)?;
    at::sub_Tensor(&a, &b, Scalar::Int(1))
}

/// `_softmax_backward_data`'s tangent (of `o * (g - sum(g * o))`):
/// `o_t * (g - sum(g * o)) + o * (g_t - sum(g_t * o) - sum(g * o_t))`.
pub fn softmax_backward_jvp(
    grad_output_t: &Tensor,
    output_t: &Tensor,
    grad_output_p: &Tensor,
    output_p: &Tensor,
    dim: i64,
) -> Result<Tensor> {
    let one = Scalar::Int(1);
    let s = sum_keep(&at::mul_Tensor(grad_output_p, output_p)?, dim)?;
    let a = at::mul_Tensor(output_t, &at::sub_Tensor(grad_output_p, &s, one)?)?;
    let st = sum_keep(&at::mul_Tensor(grad_output_t, output_p)?, dim)?;
    let so = sum_keep(&at::mul_Tensor(grad_output_p, output_t)?, dim)?;
    let inner = at::sub_Tensor(&at::sub_Tensor(grad_output_t, &st, one)?, &so, one)?;
    at::add_Tensor(&a, &at::mul_Tensor(output_p, &inner)?, one)
}

/// A loss reduced as `reduction` says (0 none, 1 mean, 2 sum; PyTorch's
/// `apply_loss_reduction`).
pub fn apply_loss_reduction(unreduced: &Tensor, reduction: i64) -> Result<Tensor> {
    match reduction {
        1 => at::mean_dim(unreduced, None, false, None),
        2 => at::sum(unreduced, None),
        _ => Ok(unreduced.clone()),
    }
}

/// `2 * grad`, divided by `input`'s element count for the mean (PyTorch's
/// `mse_loss_double_backward`).
pub fn mse_loss_double_backward(grad: &Tensor, input: &Tensor, reduction: i64) -> Result<Tensor> {
    let g = at::mul_Scalar(grad, Scalar::Int(2))?;
    match reduction {
        1 => at::div_Scalar(&g, Scalar::Int(input.numel() as i64)),
        _ => Ok(g),
    }
}

/// `mse_loss_backward`'s tangent: `mse_loss_double_backward(self_t *
/// grad_output_p) - mse_loss_double_backward(target_t * grad_output_p) +
/// mse_loss_backward(grad_output_t, self_p, target_p)`.
#[allow(clippy::too_many_arguments)]
pub fn mse_loss_backward_jvp(
    grad_output_t: &Tensor,
    self_t: &Tensor,
    target_t: &Tensor,
    grad_output_p: &Tensor,
    self_p: &Tensor,
    target_p: &Tensor,
    reduction: i64,
) -> Result<Tensor> {
    let one = Scalar::Int(1);
    let a = mse_loss_double_backward(&at::mul_Tensor(self_t, grad_output_p)?, self_p, reduction)?;
    let b = mse_loss_double_backward(
        &at::mul_Tensor(target_t, grad_output_p)?,
        target_p,
        reduction,
    )?;
    let c = at::mse_loss_backward(grad_output_t, self_p, target_p, reduction)?;
    at::add_Tensor(&at::sub_Tensor(&a, &b, one)?, &c, one)
}

/// `t.to(dtype)`: `t` itself when it has the dtype, else a converted copy.
pub fn to_dtype(t: &Tensor, dtype: DType) -> Result<Tensor> {
    cast_to(t.clone(), dtype)
}

/// `w` reversed along `dim` (PyTorch's `flip`, as an `index_select` of the
/// indices `n - 1, ..., 0`).
fn flip_dim(w: &Tensor, dim: i64) -> Result<Tensor> {
    let d = shape::wrap_dim(dim, w.dim())?;
    let n = w.sizes().get(d).copied().unwrap_or(1);
    let index = at::arange_start_step(
        Scalar::Int(n - 1),
        Scalar::Int(-1),
        Scalar::Int(-1),
        Some(DType::Int64),
        None,
        None,
        None,
    )?;
    at::index_select(w, d as i64, &index)
}

/// The gradient of `cumsum` along `dim`: the reversed cumulative sum of
/// `grad` (PyTorch's `cumsum_backward` and `reversed_cumsum`:
/// `grad.flip(dim).cumsum(dim).flip(dim)`), `grad` itself when there is
/// nothing to sum.
pub fn cumsum_backward(grad: &Tensor, dim: i64) -> Result<Tensor> {
    if grad.numel() <= 1 {
        return Ok(grad.clone());
    }
    let d = shape::wrap_dim(dim, grad.dim())?;
    if grad.sizes()[d] == 1 {
        return Ok(grad.clone());
    }
    flip_dim(&at::cumsum(&flip_dim(grad, dim)?, dim, None)?, dim)
}

/// `output` with the dimensions `dims` a reduction removed put back as
/// size 1 (nothing when `keepdim`): PyTorch's `restore_reduced_dims`.
pub fn restore_reduced_dims(output: &Tensor, dims: &[i64], keepdim: bool) -> Result<Tensor> {
    if keepdim {
        return Ok(output.clone());
    }
    let total = output.dim() + dims.len();
    let mut target = vec![0i64; total];
    for &d in dims {
        let i = shape::wrap_dim(d, total)?;
        target[i] = 1;
    }
    let mut j = 0;
    for s in output.sizes() {
        while target.get(j).is_some_and(|&t| t > 0) {
            j += 1;
        }
        let Some(t) = target.get_mut(j) else {
            return Err(Error::Runtime(
                "restore_reduced_dims: more output dimensions than places".into(),
            ));
        };
        *t = s;
        j += 1;
    }
    at::reshape(output, &target)
}

/// `(grad / mask.sum(dims, true)) * mask`: the gradient shared evenly among
/// the positions `mask` marks in each reduced lane (PyTorch's
/// `scale_grad_by_count`, for `amax` / `amin` ties).
pub fn scale_grad_by_count(grad: &Tensor, mask: &Tensor, dims: &[i64]) -> Result<Tensor> {
    let count = at::sum_dim_IntList(mask, Some(dims), true, None)?;
    at::mul_Tensor(&at::div_Tensor(grad, &count)?, mask)
}

/// The forward formula of `amax` / `amin`: the mean of the tangents at the
/// positions holding the extreme (PyTorch's `amaxamin_jvp`).
pub fn amaxamin_jvp(
    x: &Tensor,
    dx: &Tensor,
    result: &Tensor,
    dim: &[i64],
    keepdim: bool,
) -> Result<Tensor> {
    let mask = at::eq_Tensor(x, &restore_reduced_dims(result, dim, keepdim)?)?;
    let picked = at::where_self(&mask, dx, &zero(dx)?)?;
    at::div_Tensor(
        &at::sum_dim_IntList(&picked, Some(dim), keepdim, None)?,
        &at::sum_dim_IntList(&mask, Some(dim), keepdim, None)?,
    )
}

/// The gradient of `var.correction` (PyTorch's `var_backward`):
/// `2 / (n - correction) * grad * (self - mean)`, `n` the number of elements
/// each output reduced. Without `dim` (or for a 0-dim `self`), `n` is
/// `self.numel()`, and a non-positive `n - correction` gives NaN where `self`
/// equals its mean and infinity elsewhere; with `dim`, `n` is the product of
/// those dimensions' sizes (1 for an empty list, as PyTorch's `_safe_size`).
pub fn var_backward(
    grad: &Tensor,
    self_: &Tensor,
    dim: Option<&[i64]>,
    correction: Option<Scalar>,
    keepdim: bool,
) -> Result<Tensor> {
    let correction = correction.map_or(1.0, |c| c.to_f64());
    let ndim = self_.dim();
    let dim = match dim {
        Some(d) if ndim > 0 => d,
        _ => {
            let dof = self_.numel() as f64 - correction;
            let mean = at::mean(self_, None)?;
            if dof <= 0.0 {
                let full =
                    |v: f64| at::full(&[], Scalar::Float(v), Some(self_.dtype()), None, None, None);
                let at_mean = at::eq_Tensor(self_, &mean)?;
                let factor = at::where_self(&at_mean, &full(f64::NAN)?, &full(f64::INFINITY)?)?;
                return at::mul_Tensor(grad, &factor);
            }
            let centered = at::sub_Tensor(self_, &mean, Scalar::Int(1))?;
            return at::mul_Tensor(&at::mul_Scalar(grad, Scalar::Float(2.0 / dof))?, &centered);
        }
    };
    let sizes = self_.sizes();
    let mut g = grad.clone();
    if !keepdim && ndim > 1 {
        // PyTorch's `unsqueeze_multiple`: the reduced dimensions, in order.
        let mut wrapped = dim
            .iter()
            .map(|&d| shape::wrap_dim(d, ndim).map(|w| w as i64))
            .collect::<Result<Vec<_>>>()?;
        wrapped.sort_unstable();
        for d in wrapped {
            g = at::unsqueeze(&g, d)?;
        }
    }
    let mut rnumel = 1i64;
    for &d in dim {
        rnumel *= sizes[shape::wrap_dim(d, ndim)?];
    }
    let mean = at::mean_dim(self_, Some(dim), true, None)?;
    let centered = at::sub_Tensor(self_, &mean, Scalar::Int(1))?;
    let scale = 2.0 / (rnumel as f64 - correction);
    at::mul_Tensor(&at::mul_Scalar(&g, Scalar::Float(scale))?, &centered)
}
