//! Reductions: sum, mean, prod, argmax, max.dim / min.dim. Output dtypes follow
//! `get_dtype_from_self` (integral and bool inputs accumulate in int64 unless a
//! `dtype` is given), dims are wrapped and checked for repeats, and each input
//! element is converted to the output dtype before reducing, as PyTorch does.
//!
//! The input is read in place ([`fold_lanes`]): no copy of it is made, so an
//! expanded view reduces in the memory of its result alone.

use super::num::{Float, Num};
use super::{check_alloc, check_out_dtype, index_error, not_implemented, resize_output, wrap_dim};
use crate::error::Result;
use crate::tensor::{
    alloc as memory, cast, last_offset, numel, DType, Device, Element, Positions, Tensor,
};
use crate::{float_dtype, with_buffer, with_dtype};
use ndarray::{ArrayViewD, IxDyn};
use std::ops::ControlFlow;

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

/// Folds every lane of the reduced dimensions (`mask`) of `t`, reading its
/// storage in place: one value per kept position, in logical order, each lane's
/// elements in logical order, converted to `T` with C++ cast rules. `step` gets
/// the accumulator, the element's index in its lane and the element, and may
/// stop the lane early (`Break`). Only the result is allocated (fallibly).
pub(crate) fn fold_lanes<T: Element, A>(
    t: &Tensor,
    mask: &[bool],
    init: impl Fn() -> A,
    mut step: impl FnMut(A, usize, T) -> ControlFlow<A, A>,
) -> Result<Vec<A>> {
    let g = t.geometry();
    let split = |keep: bool| -> (Vec<usize>, Vec<usize>) {
        (0..g.shape.len())
            .filter(|&d| mask[d] != keep)
            .map(|d| (g.shape[d], g.strides[d]))
            .unzip()
    };
    let (outer_shape, outer_strides) = split(true);
    let (inner_shape, inner_strides) = split(false);
    let mut out = memory::try_with_capacity(numel(&outer_shape))?;
    let Some(end) = last_offset(&g.shape, &g.strides, g.offset)? else {
        // No element: every lane (if any) is empty.
        out.extend((0..numel(&outer_shape)).map(|_| init()));
        return Ok(out);
    };
    let buf = g.storage.read();
    with_buffer!(&*buf, data, S => {
        crate::ensure!(end < data.len(), "tensor view is out of bounds of its storage");
        for base in Positions::new(&outer_shape, &outer_strides, g.offset) {
            let mut acc = init();
            for (i, pos) in Positions::new(&inner_shape, &inner_strides, base).enumerate() {
                match step(acc, i, cast::<S, T>(data[pos])) {
                    ControlFlow::Continue(a) => acc = a,
                    ControlFlow::Break(a) => {
                        acc = a;
                        break;
                    }
                }
            }
            out.push(acc);
        }
    }, meta => crate::bail!("Cannot access data pointer of Tensor that doesn't have storage (a meta tensor)"));
    Ok(out)
}

/// `get_dtype_from_self(self, dtype, promote_integers=true)`.
fn dtype_from_self(self_: &Tensor, dtype: Option<DType>) -> DType {
    dtype.unwrap_or(if self_.dtype().is_integral(true) {
        DType::Int64
    } else {
        self_.dtype()
    })
}

/// Writes a reduction result (of `shape`, in logical order): into `out`
/// (already checked and resized) or as a new tensor.
fn emit<R: crate::tensor::IntoBuffer>(
    values: Vec<R>,
    shape: &[usize],
    out: Option<&Tensor>,
) -> Result<Tensor> {
    match out {
        Some(o) => {
            if o.numel() > 0 {
                let v = ArrayViewD::from_shape(IxDyn(shape), &values)
                    .map_err(|e| crate::Error::Runtime(format!("reduction: {e}").into()))?;
                o.assign(v)?;
            }
            Ok(o.clone())
        }
        None => Tensor::from_vec(values, shape),
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
    if !meta {
        if out.is_none() {
            check_alloc(shape, dtype, Device::Cpu)?;
        }
        return Ok(None);
    }
    match out {
        Some(o) => Ok(Some(o.clone())),
        None => Tensor::try_zeros(shape, dtype, Device::Meta).map(Some),
    }
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
        let r = match op {
            Accumulate::Sum => fold_lanes(self_, &mask, T::zero, |a, _, b: T| ControlFlow::Continue(a.add(b)))?,
            Accumulate::Prod => fold_lanes(self_, &mask, T::one, |a, _, b: T| ControlFlow::Continue(a.mul(b)))?,
        };
        emit(r, &shape, out)
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
        let n = T::of(count as f64);
        let sums = fold_lanes(self_, &mask, T::zero, |a, _, b: T| ControlFlow::Continue(a.add(b)))?;
        let r = memory::try_collect(sums.len(), sums.into_iter().map(|s| s.div(n)))?;
        emit(r, &shape, out)
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

/// The best value of a lane so far and its index (none before the first).
type Best<T> = Option<(T, i64)>;

/// One step of the index of the maximum (`max = true`) or minimum of a lane:
/// NaN wins (and ends the lane), ties go to the first occurrence.
fn arg_extreme<T: Num>(acc: Best<T>, i: usize, v: T, max: bool) -> ControlFlow<Best<T>, Best<T>> {
    let Some((best, idx)) = acc else {
        return if v.is_nan() {
            ControlFlow::Break(Some((v, 0)))
        } else {
            ControlFlow::Continue(Some((v, 0)))
        };
    };
    let keep = if max { v <= best } else { v >= best };
    if keep {
        return ControlFlow::Continue(Some((best, idx)));
    }
    let now = Some((v, i as i64));
    if v.is_nan() {
        ControlFlow::Break(now)
    } else {
        ControlFlow::Continue(now)
    }
}

/// The extreme of every lane (lanes are never empty here).
fn extremes<T: Num>(self_: &Tensor, mask: &[bool], max: bool) -> Result<Vec<(T, i64)>> {
    let r = fold_lanes(
        self_,
        mask,
        || None,
        |acc, i, v: T| arg_extreme(acc, i, v, max),
    )?;
    memory::try_collect(r.len(), r.into_iter().map(|p| p.unwrap_or((T::zero(), 0))))
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
        let r = extremes::<T>(self_, &mask, true)?;
        let idx = memory::try_collect(r.len(), r.into_iter().map(|p| p.1))?;
        emit(idx, &shape, out)
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
            Tensor::try_zeros(&shape, self_.dtype(), Device::Meta)?,
            Tensor::try_zeros(&shape, DType::Int64, Device::Meta)?,
        ));
    }
    check_alloc(&shape, self_.dtype(), Device::Cpu)?;
    check_alloc(&shape, DType::Int64, Device::Cpu)?;
    with_dtype!(self_.dtype(), T => {
        let r = extremes::<T>(self_, &mask, max)?;
        let values = memory::try_collect(r.len(), r.iter().map(|p| p.0))?;
        let indices = memory::try_collect(r.len(), r.iter().map(|p| p.1))?;
        Ok((Tensor::from_vec(values, &shape)?, Tensor::from_vec(indices, &shape)?))
    })
}
