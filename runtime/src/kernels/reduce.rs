//! Reductions: sum, mean, prod, argmax, max.dim / min.dim. Output dtypes follow
//! `get_dtype_from_self` (integral and bool inputs accumulate in int64 unless a
//! `dtype` is given), dims are wrapped and checked for repeats, and the input is
//! converted to the output dtype before reducing, as PyTorch does.

use super::num::{Float, Num};
use super::{check_out_dtype, index_error, not_implemented, resize_output, wrap_dim};
use crate::error::Result;
use crate::tensor::{DType, Device, Tensor};
use crate::{float_dtype, with_dtype};
use ndarray::{ArrayD, IxDyn};

/// `make_dim_mask`: `None` or `[]` reduces every dimension.
pub(crate) fn dim_mask(dims: Option<&[i64]>, ndim: usize) -> Result<Vec<bool>> {
    let dims = match dims {
        Some(d) if !d.is_empty() => d,
        _ => return Ok(vec![true; ndim]),
    };
    let mut mask = vec![false; ndim];
    for &d in dims {
        let w = wrap_dim(d, ndim)?;
        if ndim == 0 {
            continue;
        }
        crate::ensure!(
            !mask[w],
            "dim {w} appears multiple times in the list of dims"
        );
        mask[w] = true;
    }
    Ok(mask)
}

/// The shape of a reduction's output.
pub(crate) fn reduced_shape(shape: &[usize], mask: &[bool], keepdim: bool) -> Vec<usize> {
    shape
        .iter()
        .zip(mask)
        .filter_map(|(&n, &m)| match (m, keepdim) {
            (false, _) => Some(n),
            (true, true) => Some(1),
            (true, false) => None,
        })
        .collect()
}

/// Applies `f` to every lane of the reduced dimensions (in logical order).
pub(crate) fn reduce_lanes<T: Copy, R>(
    a: &ArrayD<T>,
    mask: &[bool],
    keepdim: bool,
    mut f: impl FnMut(&[T]) -> R,
) -> Result<ArrayD<R>> {
    let nd = a.ndim();
    let kept = (0..nd).filter(|&d| !mask[d]);
    let red = (0..nd).filter(|&d| mask[d]);
    let perm: Vec<usize> = kept.clone().chain(red.clone()).collect();
    let outer: usize = kept.map(|d| a.shape()[d]).product();
    let inner: usize = red.map(|d| a.shape()[d]).product();
    let data: Vec<T> = a
        .view()
        .permuted_axes(IxDyn(&perm))
        .iter()
        .copied()
        .collect();
    let vals: Vec<R> = (0..outer)
        .map(|o| f(&data[o * inner..(o + 1) * inner]))
        .collect();
    let shape = reduced_shape(a.shape(), mask, keepdim);
    ArrayD::from_shape_vec(IxDyn(&shape), vals)
        .map_err(|e| crate::Error::Runtime(format!("reduction: {e}").into()))
}

/// `get_dtype_from_self(self, dtype, promote_integers=true)`.
fn dtype_from_self(self_: &Tensor, dtype: Option<DType>) -> DType {
    dtype.unwrap_or(if self_.dtype().is_integral(true) {
        DType::Int64
    } else {
        self_.dtype()
    })
}

/// Writes a reduction result: into `out` (already checked and resized) or as a
/// new tensor.
fn emit<R: crate::tensor::IntoBuffer>(values: ArrayD<R>, out: Option<&Tensor>) -> Result<Tensor> {
    match out {
        Some(o) => {
            if o.numel() > 0 {
                o.assign(values.view())?;
            }
            Ok(o.clone())
        }
        None => Ok(Tensor::from_array(values)),
    }
}

/// Output of a reduction that computes nothing (meta), or `None` to go on.
fn prepare(
    self_: &Tensor,
    shape: &[usize],
    dtype: DType,
    out: Option<&Tensor>,
) -> Result<Option<Tensor>> {
    if let Some(o) = out {
        check_out_dtype(o, dtype)?;
        resize_output(o, shape)?;
    }
    let meta = self_.device() == Device::Meta || out.is_some_and(|o| o.device() == Device::Meta);
    Ok(meta.then(|| {
        out.cloned()
            .unwrap_or_else(|| Tensor::zeros(shape, dtype, Device::Meta))
    }))
}

/// Sum or product.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Accumulate {
    /// `sum`
    Sum,
    /// `prod`
    Prod,
}

/// `sum` / `prod` over `dims` (`None` or `[]`: all).
pub(crate) fn accumulate(
    op: Accumulate,
    self_: &Tensor,
    dims: Option<&[i64]>,
    keepdim: bool,
    dtype: Option<DType>,
    out: Option<&Tensor>,
) -> Result<Tensor> {
    let out_dtype = match (dtype, out) {
        (None, Some(o)) => o.dtype(),
        _ => dtype_from_self(self_, dtype),
    };
    let mask = dim_mask(dims, self_.dim())?;
    let shape = reduced_shape(&self_.shape(), &mask, keepdim);
    if let Some(m) = prepare(self_, &shape, out_dtype, out)? {
        return Ok(m);
    }
    with_dtype!(out_dtype, T => {
        let x = self_.to_array::<T>()?;
        let r = match op {
            Accumulate::Sum => reduce_lanes(&x, &mask, keepdim, |l| l.iter().fold(T::zero(), |a, &b| a.add(b)))?,
            Accumulate::Prod => reduce_lanes(&x, &mask, keepdim, |l| l.iter().fold(T::one(), |a, &b| a.mul(b)))?,
        };
        emit(r, out)
    })
}

/// `mean.dim` / `mean.out`: a floating dtype is required; sum, then divide.
pub(crate) fn mean(
    self_: &Tensor,
    dims: Option<&[i64]>,
    keepdim: bool,
    dtype: Option<DType>,
    out: Option<&Tensor>,
) -> Result<Tensor> {
    let in_dtype = dtype_from_self(self_, dtype);
    if !in_dtype.is_floating_point() {
        let (what, got) = match dtype {
            Some(d) => ("Optional", d),
            None => ("Input", self_.dtype()),
        };
        return Err(not_implemented(format!(
            "mean(): could not infer output dtype. {what} dtype must be either a floating point or complex dtype. Got: {}",
            got.c10_name()
        )));
    }
    let out_dtype = match (dtype, out) {
        (None, Some(o)) => o.dtype(),
        _ => in_dtype,
    };
    let mask = dim_mask(dims, self_.dim())?;
    let shape = reduced_shape(&self_.shape(), &mask, keepdim);
    if let Some(m) = prepare(self_, &shape, out_dtype, out)? {
        return Ok(m);
    }
    let count: usize = self_
        .shape()
        .iter()
        .zip(&mask)
        .filter(|(_, &m)| m)
        .map(|(&n, _)| n)
        .product();
    float_dtype!(out_dtype, T => {
        let x = self_.to_array::<T>()?;
        let n = T::of(count as f64);
        let r = reduce_lanes(&x, &mask, keepdim, |l| l.iter().fold(T::zero(), |a, &b| a.add(b)).div(n))?;
        emit(r, out)
    }, _ => crate::bail!(
        "result type Float can't be cast to the desired output type {}",
        out_dtype.c10_name()
    ))
}

/// `zero_numel_check_dims`.
fn check_nonempty_dim(self_: &Tensor, dim: usize, name: &str) -> Result<()> {
    if self_.dim() > 0 && self_.shape()[dim] == 0 {
        return Err(index_error(format!(
            "{name}: Expected reduction dim {dim} to have non-zero size."
        )));
    }
    Ok(())
}

/// Index of the maximum (`max = true`) or minimum of a lane: NaN wins, ties go
/// to the first occurrence.
fn arg_extreme<T: Num>(lane: &[T], max: bool) -> (T, i64) {
    let (mut best, mut idx) = (lane[0], 0usize);
    for (i, &v) in lane.iter().enumerate() {
        let keep = if max { v <= best } else { v >= best };
        if !keep {
            best = v;
            idx = i;
            if v.is_nan() {
                break;
            }
        }
    }
    (best, idx as i64)
}

/// `argmax(self, dim, keepdim)` (`out` for `argmax.out`).
pub(crate) fn argmax(
    self_: &Tensor,
    dim: Option<i64>,
    keepdim: bool,
    out: Option<&Tensor>,
) -> Result<Tensor> {
    let mask = match dim {
        Some(d) => {
            let w = wrap_dim(d, self_.dim())?;
            check_nonempty_dim(self_, w, "argmax()")?;
            let mut m = vec![false; self_.dim()];
            if let Some(x) = m.get_mut(w) {
                *x = true;
            }
            m
        }
        None => {
            if self_.numel() == 0 {
                return Err(index_error(
                    "argmax(): Expected reduction dim to be specified for input.numel() == 0.",
                ));
            }
            vec![true; self_.dim()]
        }
    };
    if self_.dtype() == DType::Bool {
        return Err(not_implemented("argmax(): does not support bool input"));
    }
    let shape = reduced_shape(&self_.shape(), &mask, keepdim);
    if let Some(m) = prepare(self_, &shape, DType::Int64, out)? {
        return Ok(m);
    }
    with_dtype!(self_.dtype(), T => {
        let x = self_.to_array::<T>()?;
        emit(reduce_lanes(&x, &mask, keepdim, |l| arg_extreme(l, true).1)?, out)
    })
}

/// `max.dim` / `min.dim`: values and int64 indices.
pub(crate) fn extreme_dim(
    self_: &Tensor,
    dim: i64,
    keepdim: bool,
    max: bool,
) -> Result<(Tensor, Tensor)> {
    let name = if max { "max()" } else { "min()" };
    let w = wrap_dim(dim, self_.dim())?;
    check_nonempty_dim(self_, w, name)?;
    let mut mask = vec![false; self_.dim()];
    if let Some(x) = mask.get_mut(w) {
        *x = true;
    }
    let shape = reduced_shape(&self_.shape(), &mask, keepdim);
    if self_.device() == Device::Meta {
        return Ok((
            Tensor::zeros(&shape, self_.dtype(), Device::Meta),
            Tensor::zeros(&shape, DType::Int64, Device::Meta),
        ));
    }
    with_dtype!(self_.dtype(), T => {
        let x = self_.to_array::<T>()?;
        let r = reduce_lanes(&x, &mask, keepdim, |l| arg_extreme(l, max))?;
        Ok((Tensor::from_array(r.mapv(|p| p.0)), Tensor::from_array(r.mapv(|p| p.1))))
    })
}
