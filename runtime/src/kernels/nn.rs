//! The nn family: `_softmax` / `_log_softmax` and their backward, the
//! `nll_loss` and `mse_loss` kernels and `addmm`, each with PyTorch's CPU
//! element formulas and messages (the optimizers' pointwise arithmetic is in
//! `optim.rs`). Device-agnostic: a meta input gets the same
//! checks and a meta result, computing nothing.
//!
//! Facts, from PyTorch's CPU kernels (and checked against PyTorch 2.15 in
//! `runtime/tests/nn_ops.rs`):
//!
//! - softmax and log_softmax subtract the maximum along `dim` before `exp`
//!   (a NaN maximum propagates); softmax multiplies by the reciprocal of the
//!   sum, log_softmax is `(x - max) - log(sum)`;
//! - `nll_loss` sums the picked (weighted) log-probabilities over the batch in
//!   the cascade of `nll_loss_out_frame` (8 levels of partial sums, each level
//!   `2^max(4, ceil(log2(N)) / 8)` wide), the total weight likewise (the
//!   count of non-ignored targets without `weight`); `mean` divides the two.

use super::promote::check_can_cast;
use super::{
    check_alloc, check_out_dtype, common_device, dispatch_error, fmt_shape, index_error,
    resize_output, wrap_dim,
};
use crate::at;
use crate::dtype::Reduction;
use crate::error::{Error, Result};
use crate::tensor::{alloc as memory, DType, Device, IntoBuffer, Scalar, Tensor};
use std::ops::{Add, Div, Mul, Neg, Sub};

/// The floating element types these kernels compute in (float32, float64).
pub(crate) trait Real:
    IntoBuffer
    + Copy
    + PartialOrd
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Div<Output = Self>
    + Neg<Output = Self>
{
    /// 0.
    const ZERO: Self;
    /// 1.
    const ONE: Self;
    /// `static_cast<T>(x)`.
    fn of(x: f64) -> Self;
    /// `exp`.
    fn exp_(self) -> Self;
    /// `log`.
    fn ln_(self) -> Self;
    /// `fma(self, a, b)`: `self * a + b` rounded once.
    fn fma(self, a: Self, b: Self) -> Self;
    /// `|self|`.
    fn abs_(self) -> Self;
    /// NaN test.
    fn nan(self) -> bool;
}

macro_rules! real {
    ($($t:ty),*) => {$(
        impl Real for $t {
            const ZERO: Self = 0.0;
            const ONE: Self = 1.0;
            fn of(x: f64) -> Self {
                x as $t
            }
            fn exp_(self) -> Self {
                self.exp()
            }
            fn ln_(self) -> Self {
                self.ln()
            }
            fn fma(self, a: Self, b: Self) -> Self {
                self.mul_add(a, b)
            }
            fn abs_(self) -> Self {
                self.abs()
            }
            fn nan(self) -> bool {
                self.is_nan()
            }
        }
    )*};
}
real!(f32, f64);

/// Runs `$body` with `$T` the element type of a floating `$dtype`, else fails
/// with PyTorch's dispatch message naming `$name`.
macro_rules! with_float {
    ($dtype:expr, $name:expr, $T:ident => $body:expr) => {
        match $dtype {
            DType::Float32 => {
                type $T = f32;
                $body
            }
            DType::Float64 => {
                type $T = f64;
                $body
            }
            d => Err(dispatch_error($name, d)),
        }
    };
}

/// True if any tensor is a meta tensor (the result is one, nothing is computed).
fn is_meta<'a>(ts: impl IntoIterator<Item = &'a Tensor>) -> bool {
    common_device(ts) == Device::Meta
}

/// A zero-filled vector of `n` elements, allocated fallibly.
fn zeros<T: Real>(n: usize) -> Result<Vec<T>> {
    memory::try_collect(n, std::iter::repeat(T::ZERO))
}

/// `r` itself, or `r` written into `out` (whose dtype must be `r`'s; resized
/// to `r`'s shape): the last step of a structured kernel's out= form.
fn deliver(r: Tensor, out: Option<&Tensor>) -> Result<Tensor> {
    let Some(o) = out else { return Ok(r) };
    check_out_dtype(o, r.dtype())?;
    resize_output(o, &r.shape())?;
    at::copy_(&mut o.clone(), &r, false)?;
    Ok(o.clone())
}

/// Like [`deliver`] for a TensorIterator kernel: `out` may have another dtype
/// the result can be cast to.
pub(crate) fn deliver_cast(r: Tensor, out: Option<&Tensor>) -> Result<Tensor> {
    let Some(o) = out else { return Ok(r) };
    check_can_cast(r.dtype(), o.dtype())?;
    resize_output(o, &r.shape())?;
    at::copy_(&mut o.clone(), &r, false)?;
    Ok(o.clone())
}

/// A new tensor from a computed vector (CPU) or a meta tensor of `shape`.
fn make<T: Real>(data: Option<Vec<T>>, shape: &[usize], dtype: DType) -> Result<Tensor> {
    match data {
        Some(v) => Tensor::from_vec(v, shape),
        None => Tensor::try_zeros(shape, dtype, Device::Meta),
    }
}

/// `shape` around `dim`: (elements before, size of `dim`, elements after).
fn split(shape: &[usize], dim: usize) -> (usize, usize, usize) {
    if shape.is_empty() {
        return (1, 1, 1);
    }
    let outer = shape[..dim].iter().product();
    let inner = shape[dim + 1..].iter().product();
    (outer, shape[dim], inner)
}

// ---- softmax / log_softmax ---------------------------------------------------

/// `_softmax` (`log` false) / `_log_softmax` (`log` true) along `dim`, into
/// `out` if given.
pub(crate) fn softmax(
    self_: &Tensor,
    dim: i64,
    half_to_float: bool,
    log: bool,
    out: Option<&Tensor>,
) -> Result<Tensor> {
    let d = wrap_dim(dim, self_.dim())?;
    crate::ensure!(
        !half_to_float,
        "softmax with half to float conversion is not supported on CPU"
    );
    let shape = self_.shape();
    let dtype = self_.dtype();
    let last = self_.dim() <= 1 || d + 1 == self_.dim();
    let name = match (log, last) {
        (false, true) => "softmax_lastdim_kernel_impl",
        (false, false) => "softmax_kernel_impl",
        (true, true) => "log_softmax_lastdim_kernel_impl",
        (true, false) => "log_softmax_kernel_impl",
    };
    let meta = is_meta([Some(self_), out].into_iter().flatten());
    check_alloc(&shape, dtype, self_.device())?;
    let r = with_float!(dtype, name, T => {
        let data = match meta {
            true => None,
            false => Some(softmax_lines::<T>(&self_.to_vec::<T>()?, split(&shape, d), log)?),
        };
        make(data, &shape, dtype)
    })?;
    deliver(r, out)
}

fn softmax_lines<T: Real>(
    x: &[T],
    (outer, n, inner): (usize, usize, usize),
    log: bool,
) -> Result<Vec<T>> {
    let mut y = zeros::<T>(x.len())?;
    if x.is_empty() {
        // Nothing to compute: the loops below would still count `outer *
        // inner` lines, up to 2^63 of them for `[0, 2^31, 2^31]` along 0.
        return Ok(y);
    }
    for o in 0..outer {
        for i in 0..inner {
            let at = |k: usize| (o * n + k) * inner + i;
            let mut max = x[at(0)];
            for k in 1..n {
                let v = x[at(k)];
                if v.nan() || v > max {
                    max = v;
                }
            }
            let mut sum = T::ZERO;
            for k in 0..n {
                let e = (x[at(k)] - max).exp_();
                if !log {
                    y[at(k)] = e;
                }
                sum = sum + e;
            }
            if log {
                let log_sum = sum.ln_();
                for k in 0..n {
                    y[at(k)] = (x[at(k)] - max) - log_sum;
                }
            } else {
                let inv = T::ONE / sum;
                for k in 0..n {
                    y[at(k)] = y[at(k)] * inv;
                }
            }
        }
    }
    Ok(y)
}

/// `_softmax_backward_data` (`log` false: `output * (grad - sum(grad *
/// output))`) / `_log_softmax_backward_data` (`log` true: `grad -
/// exp(output) * sum(grad)`), sums along `dim`, into `out` if given.
pub(crate) fn softmax_backward(
    grad_output: &Tensor,
    output: &Tensor,
    dim: i64,
    input_dtype: DType,
    log: bool,
    out: Option<&Tensor>,
) -> Result<Tensor> {
    let d = wrap_dim(dim, output.dim())?;
    // On the CPU, PyTorch reads `input_dtype` only to give a float gradient
    // of a half input a half result (no half dtype here): the result is in
    // the gradient's dtype, whatever `input_dtype` says.
    let _ = input_dtype;
    crate::ensure!(
        grad_output.shape() == output.shape(),
        "grad_output and output must have the same shape, but got {} and {}",
        fmt_shape(&grad_output.shape()),
        fmt_shape(&output.shape())
    );
    crate::ensure!(
        grad_output.dtype() == output.dtype(),
        "expected scalar type {} but found {}",
        grad_output.dtype().c10_name(),
        output.dtype().c10_name()
    );
    let shape = output.shape();
    let dtype = output.dtype();
    let name = match log {
        false => "softmax_backward_lastdim_kernel_impl",
        true => "log_softmax_backward_lastdim_kernel_impl",
    };
    let meta = is_meta([Some(grad_output), Some(output), out].into_iter().flatten());
    let r = with_float!(dtype, name, T => {
        let data = match meta {
            true => None,
            false => {
                let (g, y) = (grad_output.to_vec::<T>()?, output.to_vec::<T>()?);
                Some(softmax_backward_lines::<T>(&g, &y, split(&shape, d), log)?)
            }
        };
        make(data, &shape, dtype)
    })?;
    deliver(r, out)
}

fn softmax_backward_lines<T: Real>(
    g: &[T],
    y: &[T],
    (outer, n, inner): (usize, usize, usize),
    log: bool,
) -> Result<Vec<T>> {
    let mut r = zeros::<T>(g.len())?;
    if g.is_empty() {
        // As in `softmax_lines`: no line to count through.
        return Ok(r);
    }
    for o in 0..outer {
        for i in 0..inner {
            let at = |k: usize| (o * n + k) * inner + i;
            let mut sum = T::ZERO;
            for k in 0..n {
                sum = match log {
                    true => sum + g[at(k)],
                    false => sum + g[at(k)] * y[at(k)],
                };
            }
            for k in 0..n {
                let j = at(k);
                r[j] = match log {
                    true => g[j] - y[j].exp_() * sum,
                    false => y[j] * (g[j] - sum),
                };
            }
        }
    }
    Ok(r)
}

// ---- nll_loss -------------------------------------------------------------------

/// The schema's `int reduction` as a [`Reduction`], or PyTorch's error.
fn reduction_of(r: i64) -> Result<Reduction> {
    Reduction::from_code(r).ok_or_else(|| {
        Error::Runtime(
            format!("{r} is not a valid value for reduction (0: none, 1: mean, 2: sum)").into(),
        )
    })
}

/// As `nll_loss`'s kernels read `int reduction`: only `Reduction::None` and
/// `Reduction::Mean` are told apart, any other value sums
/// (`nll_loss_out_frame` in `aten/src/ATen/native/LossNLL.cpp`).
fn nll_reduction_of(r: i64) -> Reduction {
    match Reduction::from_code(r) {
        Some(Reduction::None) => Reduction::None,
        Some(Reduction::Mean) => Reduction::Mean,
        _ => Reduction::Sum,
    }
}

/// `t.size(0)`, or ATen's `IndexError` for a 0-dim tensor (what `size(0)`
/// raises through `maybe_wrap_dim`).
fn size0(t: &[usize]) -> Result<usize> {
    t.first()
        .copied()
        .ok_or_else(|| index_error("Dimension specified as 0 but tensor has no dimensions"))
}

/// `TORCH_META_FUNC(nll_loss_forward)` (`aten/src/ATen/native/LossNLL.cpp`,
/// PyTorch 2.15), in its order: the input's and the target's dimensions,
/// the target's dtype, a 1-D target of a 1-D input holding one class (a
/// `ValueError`), the batch sizes (a 0-dim target of a 2-D input is
/// `size(0)`'s `IndexError`), the weight's shape. Returns the class count.
fn nll_forward_checks(self_: &Tensor, target: &Tensor, weight: Option<&Tensor>) -> Result<usize> {
    crate::ensure!(
        self_.dim() > 0 && self_.dim() <= 2,
        "input tensor should be 1D or 2D"
    );
    crate::ensure!(
        target.dim() <= 1,
        "0D or 1D target tensor expected, multi-target not supported"
    );
    crate::ensure!(
        target.dtype() == DType::Int64,
        "expected target dtype to be Long or Byte, but got {}",
        target.dtype().c10_name()
    );
    let (s, t) = (self_.shape(), target.shape());
    if let ([_], [n]) = (s.as_slice(), t.as_slice()) {
        if *n != 1 {
            return Err(crate::Error::Value(
                format!("For 1D input, 1D target must have size 1, but got target size: {n}")
                    .into(),
            ));
        }
    }
    // A 1-D input is one sample, of a 0-dim target or a 1-D one of size 1.
    if s.len() == 2 {
        crate::ensure!(
            s[0] == size0(&t)?,
            "size mismatch (got input: {}, target: {})",
            fmt_shape(&s),
            fmt_shape(&t)
        );
    }
    let n_classes = s[s.len() - 1];
    if let Some(w) = weight {
        crate::ensure!(
            w.dim() == 1 && w.numel() == n_classes,
            "weight tensor should be defined either for all {n_classes} classes or no classes but got weight tensor of shape: {}",
            fmt_shape(&w.shape())
        );
    }
    Ok(n_classes)
}

/// `TORCH_META_FUNC(nll_loss_backward)` (PyTorch 2.15), in its order: the
/// dimensions, the batch sizes (only a 0-dim target makes a 1-D input one
/// sample here), `total_weight`'s element count, the weight's element count,
/// then `grad_output`'s shape (`check_dim_size` for the per-sample form).
/// Returns the class count.
fn nll_backward_checks(
    grad_output: &Tensor,
    self_: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    reduction: Reduction,
    total_weight: &Tensor,
) -> Result<usize> {
    crate::ensure!(
        self_.dim() > 0 && self_.dim() <= 2,
        "input tensor should be 1D or 2D"
    );
    crate::ensure!(
        target.dim() <= 1,
        "0D or 1D target tensor expected, multi-target not supported"
    );
    let (s, t) = (self_.shape(), target.shape());
    let no_batch_dim = s.len() == 1 && t.is_empty();
    crate::ensure!(
        no_batch_dim || s[0] == size0(&t)?,
        "size mismatch (got input: {}, target: {})",
        fmt_shape(&s),
        fmt_shape(&t)
    );
    // Two spaces in "a  single", as PyTorch's message has them.
    crate::ensure!(
        total_weight.numel() == 1,
        "expected total_weight to be a  single element tensor, got: {} ({} elements)",
        fmt_shape(&total_weight.shape()),
        total_weight.numel()
    );
    let n_classes = s[s.len() - 1];
    if let Some(w) = weight {
        crate::ensure!(
            w.numel() == n_classes,
            "weight tensor should be defined either for all or no classes"
        );
    }
    let g = grad_output.shape();
    if reduction == Reduction::None && s.len() == 2 {
        // `check_dim_size(grad_output, 1, 0, batch_size)`: its message reads
        // `size(0)`, an `IndexError` for a 0-dim `grad_output`.
        if g.len() != 1 || g[0] != s[0] {
            let got = size0(&g)?;
            crate::bail!(
                "Expected a tensor of dimension 1 and tensor.size[0] == {} but got: dimension {} and tensor.size[0] = {got}",
                s[0],
                g.len()
            );
        }
    } else {
        crate::ensure!(
            g.len() <= 1 && grad_output.numel() == 1,
            "Expected a single element grad_output tensor, but got: {}",
            fmt_shape(&g)
        );
    }
    Ok(n_classes)
}

/// `tensor.data_ptr<T>()`'s check, which the CPU kernels make on each
/// operand they read: "expected scalar type Float but found Double".
fn expect_dtype(t: &Tensor, want: DType) -> Result<()> {
    crate::ensure!(
        t.dtype() == want,
        "expected scalar type {} but found {}",
        want.c10_name(),
        t.dtype().c10_name()
    );
    Ok(())
}

/// A target class checked against the class count (PyTorch's IndexError).
fn class_of(t: i64, n_classes: usize) -> Result<usize> {
    if t < 0 || t >= n_classes as i64 {
        return Err(index_error(format!("Target {t} is out of bounds.")));
    }
    Ok(t as usize)
}

/// `nll_loss_forward(self, target, weight, reduction, ignore_index)`:
/// `(output, total_weight)`, into `out` if given.
pub(crate) fn nll_loss_forward(
    self_: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    reduction: i64,
    ignore_index: i64,
    out: Option<(&Tensor, &Tensor)>,
) -> Result<(Tensor, Tensor)> {
    let n_classes = nll_forward_checks(self_, target, weight)?;
    let reduction = nll_reduction_of(reduction);
    let dtype = self_.dtype();
    // The kernel's: its dtype dispatch, then the weight's elements.
    if !dtype.is_floating_point() {
        return Err(dispatch_error("nll_loss_out_frame", dtype));
    }
    if let Some(w) = weight {
        expect_dtype(w, dtype)?;
    }
    let per_sample = reduction == Reduction::None && self_.dim() == 2;
    let shape: Vec<usize> = match per_sample {
        true => vec![self_.shape()[0]],
        false => vec![],
    };
    let outs = out.into_iter().flat_map(|(a, b)| [a, b]);
    let meta = is_meta([self_, target].into_iter().chain(weight).chain(outs));
    let (output, total) = with_float!(dtype, "nll_loss_out_frame", T => {
        if meta {
            Ok((make::<T>(None, &shape, dtype)?, make::<T>(None, &[], dtype)?))
        } else {
            let x = self_.to_vec::<T>()?;
            let t = target.to_vec::<i64>()?;
            let w = weight.map(|w| w.to_vec::<T>()).transpose()?;
            let (o, tw) = nll_frame::<T>(&x, &t, w.as_deref(), n_classes, reduction, ignore_index, per_sample)?;
            Ok((Tensor::from_vec(o, &shape)?, Tensor::from_vec(vec![tw], &[])?))
        }
    })?;
    match out {
        None => Ok((output, total)),
        Some((o, tw)) => Ok((deliver(output, Some(o))?, deliver(total, Some(tw))?)),
    }
}

/// The arithmetic of `nll_loss_out_frame`.
fn nll_frame<T: Real>(
    x: &[T],
    t: &[i64],
    w: Option<&[T]>,
    n_classes: usize,
    reduction: Reduction,
    ignore_index: i64,
    per_sample: bool,
) -> Result<(Vec<T>, T)> {
    let weight_of = |c: usize| w.map_or(T::ONE, |w| w[c]);
    if per_sample {
        let mut out = zeros::<T>(t.len())?;
        for (i, &ti) in t.iter().enumerate() {
            if ti == ignore_index {
                continue;
            }
            let c = class_of(ti, n_classes)?;
            out[i] = -x[i * n_classes + c] * weight_of(c);
        }
        return Ok((out, T::ZERO));
    }
    const LEVELS: usize = 8;
    let batch = t.len().max(1);
    let ceil_log2 = if batch <= 1 {
        0
    } else {
        (usize::BITS - (batch - 1).leading_zeros()) as usize
    };
    let level_power = 4.max(ceil_log2 / LEVELS);
    let level_mask = (1usize << level_power) - 1;
    let mut num_ignored = 0usize;
    let mut weight_sums = [T::ZERO; LEVELS];
    let mut loss_sums = [T::ZERO; LEVELS];
    for (b, &tb) in t.iter().enumerate() {
        if tb == ignore_index {
            num_ignored += 1;
            continue;
        }
        let c = class_of(tb, n_classes)?;
        let v = x[b * n_classes + c];
        match w {
            Some(w) => {
                loss_sums[0] = loss_sums[0] - v * w[c];
                weight_sums[0] = weight_sums[0] + w[c];
            }
            None => loss_sums[0] = loss_sums[0] - v,
        }
        for j in 0..LEVELS - 1 {
            let mask = level_mask << (j * level_power);
            if b & mask != 0 {
                break;
            }
            weight_sums[j + 1] = weight_sums[j + 1] + weight_sums[j];
            loss_sums[j + 1] = loss_sums[j + 1] + loss_sums[j];
            weight_sums[j] = T::ZERO;
            loss_sums[j] = T::ZERO;
        }
    }
    let total = match w {
        None => T::of((t.len() - num_ignored) as f64),
        Some(_) => weight_sums.iter().fold(T::ZERO, |a, &b| a + b),
    };
    let mut loss = loss_sums.iter().fold(T::ZERO, |a, &b| a + b);
    if reduction == Reduction::Mean {
        loss = loss / total;
    }
    Ok((vec![loss], total))
}

/// `nll_loss_backward(grad_output, self, target, weight, reduction,
/// ignore_index, total_weight)`, into `out` (`grad_input`) if given.
#[allow(clippy::too_many_arguments)]
pub(crate) fn nll_loss_backward(
    grad_output: &Tensor,
    self_: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    reduction: i64,
    ignore_index: i64,
    total_weight: &Tensor,
    out: Option<&Tensor>,
) -> Result<Tensor> {
    let reduction = nll_reduction_of(reduction);
    let n_classes =
        nll_backward_checks(grad_output, self_, target, weight, reduction, total_weight)?;
    let per_sample = reduction == Reduction::None && self_.dim() == 2;
    // The kernel's, in the order it reads its operands: its dtype dispatch,
    // the target, the weight, then `grad_output` (per sample) or
    // `total_weight` and `grad_output`.
    let dtype = self_.dtype();
    if !dtype.is_floating_point() {
        return Err(dispatch_error("nll_loss_backward_out_frame", dtype));
    }
    expect_dtype(target, DType::Int64)?;
    if let Some(w) = weight {
        expect_dtype(w, dtype)?;
    }
    if !per_sample {
        expect_dtype(total_weight, dtype)?;
    }
    expect_dtype(grad_output, dtype)?;
    let shape = self_.shape();
    let ins = [grad_output, self_, target, total_weight];
    let meta = is_meta(ins.into_iter().chain(weight).chain(out));
    let r = with_float!(dtype, "nll_loss_backward_out_frame", T => {
        let data = match meta {
            true => None,
            false => {
                let g = grad_output.to_vec::<T>()?;
                let t = target.to_vec::<i64>()?;
                let w = weight.map(|w| w.to_vec::<T>()).transpose()?;
                let tw = total_weight.to_vec::<T>()?[0];
                let mut gi = zeros::<T>(self_.numel())?;
                let weight_of = |c: usize| w.as_ref().map_or(T::ONE, |w| w[c]);
                // The reduced forms scale every picked element by one value.
                let scale = match reduction {
                    Reduction::Mean => -(g[0] / tw),
                    _ => -g[0],
                };
                // A 1-D input is one sample: the kernel reads the first
                // target only (a 1-D target may hold more).
                let samples = match self_.dim() {
                    1 => t.get(..1).unwrap_or_default(),
                    _ => &t[..],
                };
                for (i, &ti) in samples.iter().enumerate() {
                    if ti == ignore_index {
                        continue;
                    }
                    let c = class_of(ti, n_classes)?;
                    gi[i * n_classes + c] = match per_sample {
                        true => -weight_of(c) * g[i],
                        false => weight_of(c) * scale,
                    };
                }
                Some(gi)
            }
        };
        make(data, &shape, dtype)
    })?;
    deliver(r, out)
}

// ---- mse_loss -------------------------------------------------------------------

/// `mse_loss(self, target, reduction)`: `(self - target)²` elementwise
/// (broadcast), then its mean or sum; into `out` if given.
pub(crate) fn mse_loss(
    self_: &Tensor,
    target: &Tensor,
    reduction: i64,
    out: Option<&Tensor>,
) -> Result<Tensor> {
    let reduction = reduction_of(reduction)?;
    let diff = at::sub_Tensor(self_, target, Scalar::Int(1))?;
    let sq = at::mul_Tensor(&diff, &diff)?;
    let r = match reduction {
        Reduction::None => sq,
        Reduction::Mean => at::mean_dim(&sq, None, false, None)?,
        Reduction::Sum => at::sum_dim_IntList(&sq, None, false, None)?,
    };
    deliver_cast(r, out)
}

/// `mse_loss_backward(grad_output, self, target, reduction)`: `norm * (self -
/// target) * grad_output` with `norm` 2 (or `2 / numel` for the mean) in the
/// dtype, evaluated left to right as PyTorch's kernel; shaped like the
/// broadcast of its arguments (like `self` unless `target` or `grad_output`
/// is larger).
pub(crate) fn mse_loss_backward(
    grad_output: &Tensor,
    self_: &Tensor,
    target: &Tensor,
    reduction: i64,
    out: Option<&Tensor>,
) -> Result<Tensor> {
    let reduction = reduction_of(reduction)?;
    let norm = match reduction {
        Reduction::Mean => 2.0 / self_.numel() as f64,
        _ => 2.0,
    };
    let diff = at::sub_Tensor(self_, target, Scalar::Int(1))?;
    // Shaped like the broadcast of the three (PyTorch resizes its
    // `zeros_like(self)` result to it; autograd then sums it down to `self`).
    let r = at::mul_Tensor(&at::mul_Scalar(&diff, Scalar::Float(norm))?, grad_output)?;
    deliver_cast(r, out)
}

// ---- addmm ----------------------------------------------------------------------

/// Where `addmm` puts its result.
pub(crate) enum Place<'a> {
    /// A new tensor.
    New,
    /// `self`, in place.
    Inplace(&'a Tensor),
    /// `out=`.
    Out(&'a Tensor),
}

/// `addmm(self, mat1, mat2, beta, alpha)`: `beta * self + alpha * (mat1 @
/// mat2)` through `mm`'s GEMM engine; with `beta` 0, `self` is not read (its
/// NaNs do not propagate), as PyTorch's BLAS call.
pub(crate) fn addmm(
    self_: &Tensor,
    mat1: &Tensor,
    mat2: &Tensor,
    beta: Scalar,
    alpha: Scalar,
    into: Place<'_>,
) -> Result<Tensor> {
    crate::ensure!(
        mat1.dim() == 2,
        "mat1 must be a matrix, got {}-D tensor",
        mat1.dim()
    );
    crate::ensure!(
        mat2.dim() == 2,
        "mat2 must be a matrix, got {}-D tensor",
        mat2.dim()
    );
    let (a, b) = (mat1.shape(), mat2.shape());
    crate::ensure!(
        a[1] == b[0],
        "addmm: mat1 and mat2 shapes cannot be multiplied ({}x{} and {}x{})",
        a[0],
        a[1],
        b[0],
        b[1]
    );
    crate::ensure!(
        mat1.dtype() == mat2.dtype(),
        "mat1 and mat2 must have the same dtype, but got {} and {}",
        mat1.dtype().c10_name(),
        mat2.dtype().c10_name()
    );
    crate::ensure!(
        self_.dtype() == mat2.dtype(),
        "self and mat2 must have the same dtype, but got {} and {}",
        self_.dtype().c10_name(),
        mat2.dtype().c10_name()
    );
    let shape = [a[0] as i64, b[1] as i64];
    if let Place::Inplace(_) = into {
        // A structured kernel's in-place check (PyTorch's `check_inplace`).
        crate::ensure!(
            self_.shape() == [a[0], b[1]],
            "Bad in-place call: input tensor size {} and output tensor size {} should match",
            fmt_shape(&self_.shape()),
            fmt_shape(&[a[0], b[1]])
        );
    }
    let expanded = at::expand(self_, &shape, false)?;
    let mut product = at::mm(mat1, mat2)?;
    if alpha.to_f64() != 1.0 {
        product = at::mul_Scalar(&product, alpha)?;
    }
    let r = match beta.to_f64() {
        0.0 => product,
        1.0 => at::add_Tensor(&expanded, &product, Scalar::Int(1))?,
        _ => at::add_Tensor(&at::mul_Scalar(&expanded, beta)?, &product, Scalar::Int(1))?,
    };
    match into {
        Place::New => Ok(r),
        Place::Inplace(s) => {
            at::copy_(&mut s.clone(), &r, false)?;
            Ok(s.clone())
        }
        Place::Out(o) => deliver(r, Some(o)),
    }
}

// ---- the kernels -----------------------------------------------------------------

/// The nn family's backend kernels, stamped into `cpu` and `meta` by
/// `backend_kernels!`.
macro_rules! nn_kernels {
    ($key:ident) => {
        use $crate::kernels::nn::{self as nn_impl, Place};

        #[doc = concat!("`_softmax` (", stringify!($key), ").")]
        #[$crate::kernel($key)]
        pub fn _softmax(self_: &Tensor, dim: i64, half_to_float: bool) -> Result<Tensor> {
            nn_impl::softmax(self_, dim, half_to_float, false, None)
        }

        #[doc = concat!("`_softmax.out` (", stringify!($key), ").")]
        #[$crate::kernel($key)]
        pub fn _softmax_out(
            self_: &Tensor,
            dim: i64,
            half_to_float: bool,
            out: &mut Tensor,
        ) -> Result<Tensor> {
            nn_impl::softmax(self_, dim, half_to_float, false, Some(out))
        }

        #[doc = concat!("`_log_softmax` (", stringify!($key), ").")]
        #[$crate::kernel($key)]
        pub fn _log_softmax(self_: &Tensor, dim: i64, half_to_float: bool) -> Result<Tensor> {
            nn_impl::softmax(self_, dim, half_to_float, true, None)
        }

        #[doc = concat!("`_log_softmax.out` (", stringify!($key), ").")]
        #[$crate::kernel($key)]
        pub fn _log_softmax_out(
            self_: &Tensor,
            dim: i64,
            half_to_float: bool,
            out: &mut Tensor,
        ) -> Result<Tensor> {
            nn_impl::softmax(self_, dim, half_to_float, true, Some(out))
        }

        #[doc = concat!("`_softmax_backward_data` (", stringify!($key), ").")]
        #[$crate::kernel($key)]
        pub fn _softmax_backward_data(
            grad_output: &Tensor,
            output: &Tensor,
            dim: i64,
            input_dtype: DType,
        ) -> Result<Tensor> {
            nn_impl::softmax_backward(grad_output, output, dim, input_dtype, false, None)
        }

        #[doc = concat!("`_softmax_backward_data.out` (", stringify!($key), ").")]
        #[$crate::kernel($key)]
        pub fn _softmax_backward_data_out(
            grad_output: &Tensor,
            output: &Tensor,
            dim: i64,
            input_dtype: DType,
            grad_input: &mut Tensor,
        ) -> Result<Tensor> {
            nn_impl::softmax_backward(
                grad_output,
                output,
                dim,
                input_dtype,
                false,
                Some(grad_input),
            )
        }

        #[doc = concat!("`_log_softmax_backward_data` (", stringify!($key), ").")]
        #[$crate::kernel($key)]
        pub fn _log_softmax_backward_data(
            grad_output: &Tensor,
            output: &Tensor,
            dim: i64,
            input_dtype: DType,
        ) -> Result<Tensor> {
            nn_impl::softmax_backward(grad_output, output, dim, input_dtype, true, None)
        }

        #[doc = concat!("`_log_softmax_backward_data.out` (", stringify!($key), ").")]
        #[$crate::kernel($key)]
        pub fn _log_softmax_backward_data_out(
            grad_output: &Tensor,
            output: &Tensor,
            dim: i64,
            input_dtype: DType,
            out: &mut Tensor,
        ) -> Result<Tensor> {
            nn_impl::softmax_backward(grad_output, output, dim, input_dtype, true, Some(out))
        }

        #[doc = concat!("`nll_loss_forward` (", stringify!($key), ").")]
        #[$crate::kernel($key)]
        pub fn nll_loss_forward(
            self_: &Tensor,
            target: &Tensor,
            weight: Option<&Tensor>,
            reduction: i64,
            ignore_index: i64,
        ) -> Result<(Tensor, Tensor)> {
            nn_impl::nll_loss_forward(self_, target, weight, reduction, ignore_index, None)
        }

        #[doc = concat!("`nll_loss_forward.output` (", stringify!($key), ").")]
        #[$crate::kernel($key)]
        pub fn nll_loss_forward_output(
            self_: &Tensor,
            target: &Tensor,
            weight: Option<&Tensor>,
            reduction: i64,
            ignore_index: i64,
            output: &mut Tensor,
            total_weight: &mut Tensor,
        ) -> Result<(Tensor, Tensor)> {
            let outs = Some((&*output, &*total_weight));
            nn_impl::nll_loss_forward(self_, target, weight, reduction, ignore_index, outs)
        }

        #[doc = concat!("`nll_loss_backward` (", stringify!($key), ").")]
        #[$crate::kernel($key)]
        pub fn nll_loss_backward(
            grad_output: &Tensor,
            self_: &Tensor,
            target: &Tensor,
            weight: Option<&Tensor>,
            reduction: i64,
            ignore_index: i64,
            total_weight: &Tensor,
        ) -> Result<Tensor> {
            nn_impl::nll_loss_backward(
                grad_output,
                self_,
                target,
                weight,
                reduction,
                ignore_index,
                total_weight,
                None,
            )
        }

        #[doc = concat!("`nll_loss_backward.grad_input` (", stringify!($key), ").")]
        #[$crate::kernel($key)]
        #[allow(clippy::too_many_arguments)]
        pub fn nll_loss_backward_grad_input(
            grad_output: &Tensor,
            self_: &Tensor,
            target: &Tensor,
            weight: Option<&Tensor>,
            reduction: i64,
            ignore_index: i64,
            total_weight: &Tensor,
            grad_input: &mut Tensor,
        ) -> Result<Tensor> {
            nn_impl::nll_loss_backward(
                grad_output,
                self_,
                target,
                weight,
                reduction,
                ignore_index,
                total_weight,
                Some(grad_input),
            )
        }

        #[doc = concat!("`mse_loss` (", stringify!($key), ").")]
        #[$crate::kernel($key)]
        pub fn mse_loss(self_: &Tensor, target: &Tensor, reduction: i64) -> Result<Tensor> {
            nn_impl::mse_loss(self_, target, reduction, None)
        }

        #[doc = concat!("`mse_loss.out` (", stringify!($key), ").")]
        #[$crate::kernel($key)]
        pub fn mse_loss_out(
            self_: &Tensor,
            target: &Tensor,
            reduction: i64,
            out: &mut Tensor,
        ) -> Result<Tensor> {
            nn_impl::mse_loss(self_, target, reduction, Some(out))
        }

        #[doc = concat!("`mse_loss_backward` (", stringify!($key), ").")]
        #[$crate::kernel($key)]
        pub fn mse_loss_backward(
            grad_output: &Tensor,
            self_: &Tensor,
            target: &Tensor,
            reduction: i64,
        ) -> Result<Tensor> {
            nn_impl::mse_loss_backward(grad_output, self_, target, reduction, None)
        }

        #[doc = concat!("`mse_loss_backward.grad_input` (", stringify!($key), ").")]
        #[$crate::kernel($key)]
        pub fn mse_loss_backward_grad_input(
            grad_output: &Tensor,
            self_: &Tensor,
            target: &Tensor,
            reduction: i64,
            grad_input: &mut Tensor,
        ) -> Result<Tensor> {
            nn_impl::mse_loss_backward(grad_output, self_, target, reduction, Some(grad_input))
        }

        #[doc = concat!("`addmm` (", stringify!($key), ").")]
        #[$crate::kernel($key)]
        pub fn addmm(
            self_: &Tensor,
            mat1: &Tensor,
            mat2: &Tensor,
            beta: Scalar,
            alpha: Scalar,
        ) -> Result<Tensor> {
            nn_impl::addmm(self_, mat1, mat2, beta, alpha, Place::New)
        }

        #[doc = concat!("`addmm_` (", stringify!($key), ").")]
        #[$crate::kernel($key)]
        pub fn addmm_(
            self_: &mut Tensor,
            mat1: &Tensor,
            mat2: &Tensor,
            beta: Scalar,
            alpha: Scalar,
        ) -> Result<Tensor> {
            let s = self_.clone();
            nn_impl::addmm(&s, mat1, mat2, beta, alpha, Place::Inplace(&s))
        }

        #[doc = concat!("`addmm.out` (", stringify!($key), ").")]
        #[$crate::kernel($key)]
        pub fn addmm_out(
            self_: &Tensor,
            mat1: &Tensor,
            mat2: &Tensor,
            beta: Scalar,
            alpha: Scalar,
            out: &mut Tensor,
        ) -> Result<Tensor> {
            nn_impl::addmm(self_, mat1, mat2, beta, alpha, Place::Out(out))
        }

        #[doc = concat!("`uniform_` (", stringify!($key), ").")]
        #[$crate::kernel($key)]
        pub fn uniform_(
            self_: &mut Tensor,
            from: f64,
            to: f64,
            generator: Option<&$crate::Generator>,
        ) -> Result<Tensor> {
            $crate::kernels::sampling::fill(
                self_,
                $crate::kernels::sampling::Draw::Uniform { from, to },
                generator,
            )
        }

        #[doc = concat!("`normal_` (", stringify!($key), ").")]
        #[$crate::kernel($key)]
        pub fn normal_(
            self_: &mut Tensor,
            mean: f64,
            std: f64,
            generator: Option<&$crate::Generator>,
        ) -> Result<Tensor> {
            $crate::kernels::sampling::fill(
                self_,
                $crate::kernels::sampling::Draw::Normal { mean, std },
                generator,
            )
        }
    };
}

pub(crate) use {nn_kernels, with_float};
