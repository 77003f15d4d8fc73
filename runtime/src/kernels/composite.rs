//! Composite kernels, which run on every backend.
//!
//! - CompositeExplicitAutograd (`composite::<ident>` in `dispatch:`): views,
//!   factories, `copy_`, `clone`, the `.Scalar` overloads and a few
//!   decompositions (`abs`, `stack`, `sum`); CompositeExplicitAutogradNonFunctional:
//!   `copy`, `select_scatter`, `slice_scatter`.
//! - Generated (included at the end from the generator's `kernels.rs`): the
//!   functional and out= variants `autogen:` adds (`zero`, `clone_out`) and
//!   the `view_copy` operators (`transpose_copy_int`).
//! - CompositeImplicitAutograd (entries without `dispatch:`): `matmul`,
//!   `matmul.out`, `reshape`, `contiguous`, `to.dtype`, written only in terms of
//!   other operators called through `kernels::ops`.

#![allow(non_snake_case)]

use super::layout::{
    infer_dense_strides, is_contiguous_as, is_non_overlapping_and_dense, like_geometry,
    strides_for, suggest_memory_format,
};
use super::pointwise::{self, BinOp, Dest};
use super::promote::Operand;
use super::sampling::{self, Dist};
use super::{copy, factory, linalg, ops, views, wrap_dim};
use crate::error::Result;
use crate::kernel;
use crate::shape;
use crate::tensor::{DType, Device, Dims, Generator, Layout, MemoryFormat, Scalar, Tensor};

// ---- CompositeExplicitAutograd -------------------------------------------------

/// `abs`: `abs.out` into a new tensor of the same dtype.
#[kernel(CompositeExplicitAutograd)]
pub fn abs(self_: &Tensor) -> Result<Tensor> {
    let mut out = ops::empty_memory_format(&[0], Some(self_.dtype()), Some(self_.device()), None)?;
    ops::abs_out(self_, &mut out)
}

/// `sgn` of a real tensor: `(self > 0) - (self < 0)` in `self`'s dtype (1, 0
/// or -1; 0 at 0). Bool stays bool (PyTorch's `sgn` is the identity there).
#[kernel(CompositeExplicitAutograd)]
pub fn sgn(self_: &Tensor) -> Result<Tensor> {
    if self_.dtype() == DType::Bool {
        return ops::clone(self_, None);
    }
    let as_self = |m: Tensor| ops::_to_copy(&m, Some(self_.dtype()), None, None, None, false, None);
    let pos = as_self(ops::gt_Scalar(self_, Scalar::Int(0))?)?;
    let neg = as_self(ops::lt_Scalar(self_, Scalar::Int(0))?)?;
    ops::sub_Tensor(&pos, &neg, Scalar::Int(1))
}

/// `threshold_backward`: 0 where `self <= threshold`, `grad_output`
/// elsewhere (relu's gradient, 0 at the threshold itself).
#[kernel(CompositeExplicitAutograd)]
pub fn threshold_backward(
    grad_output: &Tensor,
    self_: &Tensor,
    threshold: Scalar,
) -> Result<Tensor> {
    // Zero where `self <= threshold`, as PyTorch writes it: a NaN input
    // passes its gradient on.
    let zero = ops::zeros_like(grad_output, None, None, None, None, None)?;
    ops::where_self(&ops::le_Scalar(self_, threshold)?, &zero, grad_output)
}

/// `abs_`: `abs.out(self, out=self)`.
#[kernel(CompositeExplicitAutograd)]
pub fn abs_(self_: &mut Tensor) -> Result<Tensor> {
    let mut out = self_.clone();
    ops::abs_out(self_, &mut out)
}

/// `logical_not`: `logical_not.out` into a new bool tensor (PyTorch's
/// `logical_not` in aten/src/ATen/native/UnaryOps.cpp).
#[kernel(CompositeExplicitAutograd)]
pub fn logical_not(self_: &Tensor) -> Result<Tensor> {
    let mut out = ops::empty_memory_format(&[0], Some(DType::Bool), Some(self_.device()), None)?;
    ops::logical_not_out(self_, &mut out)
}

/// `logical_not_`: `logical_not.out(self, out=self)` (the result is 0 or 1
/// in `self`'s dtype).
#[kernel(CompositeExplicitAutograd)]
pub fn logical_not_(self_: &mut Tensor) -> Result<Tensor> {
    let mut out = self_.clone();
    ops::logical_not_out(self_, &mut out)
}

/// `isinf` (PyTorch's `isinf` in aten/src/ATen/native/TensorCompare.cpp):
/// all false for an integral or bool tensor (a zero-filled bool tensor laid
/// out like `self`), else `abs(self) == inf`.
#[kernel(CompositeExplicitAutograd)]
pub fn isinf(self_: &Tensor) -> Result<Tensor> {
    if !self_.dtype().is_floating_point() {
        let preserve = Some(MemoryFormat::Preserve);
        return ops::zeros_like(self_, Some(DType::Bool), None, None, None, preserve);
    }
    ops::eq_Scalar(&ops::abs(self_)?, Scalar::Float(f64::INFINITY))
}

/// `add.Scalar`: `self + alpha * other` with `other` a wrapped number.
#[kernel(CompositeExplicitAutograd)]
pub fn add_Scalar(self_: &Tensor, other: Scalar, alpha: Scalar) -> Result<Tensor> {
    let (a, b) = (Operand::Tensor(self_), Operand::Scalar(other));
    pointwise::binary(BinOp::Add, a, b, alpha, Dest::New)
}

/// `sub.Scalar`: `self - alpha * other` with `other` a wrapped number.
#[kernel(CompositeExplicitAutograd)]
pub fn sub_Scalar(self_: &Tensor, other: Scalar, alpha: Scalar) -> Result<Tensor> {
    let (a, b) = (Operand::Tensor(self_), Operand::Scalar(other));
    pointwise::binary(BinOp::Sub, a, b, alpha, Dest::New)
}

/// `mul.Scalar`.
#[kernel(CompositeExplicitAutograd)]
pub fn mul_Scalar(self_: &Tensor, other: Scalar) -> Result<Tensor> {
    let (a, b) = (Operand::Tensor(self_), Operand::Scalar(other));
    pointwise::binary(BinOp::Mul, a, b, Scalar::Int(1), Dest::New)
}

/// `div.Scalar` (true division).
#[kernel(CompositeExplicitAutograd)]
pub fn div_Scalar(self_: &Tensor, other: Scalar) -> Result<Tensor> {
    let (a, b) = (Operand::Tensor(self_), Operand::Scalar(other));
    pointwise::binary(BinOp::Div, a, b, Scalar::Int(1), Dest::New)
}

/// `arange(end)`.
#[kernel(CompositeExplicitAutograd)]
pub fn arange(
    end: Scalar,
    dtype: Option<DType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
) -> Result<Tensor> {
    arange_start_step(
        Scalar::Int(0),
        end,
        Scalar::Int(1),
        dtype,
        layout,
        device,
        pin_memory,
    )
}

/// `arange.start(start, end)`.
#[kernel(CompositeExplicitAutograd)]
pub fn arange_start(
    start: Scalar,
    end: Scalar,
    dtype: Option<DType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
) -> Result<Tensor> {
    arange_start_step(
        start,
        end,
        Scalar::Int(1),
        dtype,
        layout,
        device,
        pin_memory,
    )
}

/// `arange.start_step(start, end, step)`: int64 when every bound is integral,
/// else float32, unless a dtype is given.
#[kernel(CompositeExplicitAutograd)]
pub fn arange_start_step(
    start: Scalar,
    end: Scalar,
    step: Scalar,
    dtype: Option<DType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
) -> Result<Tensor> {
    let _ = (layout, pin_memory);
    factory::arange(start, end, step, dtype, device, None)
}

/// `arange.out(end, out)`.
#[kernel(CompositeExplicitAutograd)]
pub fn arange_out(end: Scalar, out: &mut Tensor) -> Result<Tensor> {
    factory::arange(Scalar::Int(0), end, Scalar::Int(1), None, None, Some(out))
}

/// Fills `r`, a result this kernel just made, with in-place operators, and
/// returns what `fill` returns: those writes leave `r` at the version it was
/// made with ([`crate::tensor::Storage::restore_version`]), as PyTorch's
/// fresh results are at version 0 whatever filled them.
fn fresh(r: Tensor, fill: impl FnOnce(&Tensor) -> Result<Tensor>) -> Result<Tensor> {
    let storage = r.storage();
    let version = storage.version();
    let out = fill(&r)?;
    storage.restore_version(version);
    Ok(out)
}

/// `copy_(self, src)`: broadcasts `src` into `self`, converting the dtype.
#[kernel(CompositeExplicitAutograd)]
pub fn copy_(self_: &mut Tensor, src: &Tensor, non_blocking: bool) -> Result<Tensor> {
    let _ = non_blocking;
    copy::copy_(self_, src)
}

/// `copy(self, src, non_blocking)`: a clone of `self` (its strides kept where
/// it is dense, `clone_preserve_strides` in PyTorch) with `src` copied in.
#[kernel(CompositeExplicitAutogradNonFunctional)]
pub fn copy(self_: &Tensor, src: &Tensor, non_blocking: bool) -> Result<Tensor> {
    let _ = non_blocking;
    fresh(ops::clone(self_, None)?, |r| ops::copy_(r, src))
}

/// `expand(self, size)`.
#[kernel(CompositeExplicitAutograd)]
pub fn expand(self_: &Tensor, size: &[i64], implicit: bool) -> Result<Tensor> {
    let _ = implicit;
    views::expand(self_, size)
}

/// `full(size, fill_value)`.
#[kernel(CompositeExplicitAutograd)]
pub fn full(
    size: &[i64],
    fill_value: Scalar,
    dtype: Option<DType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
) -> Result<Tensor> {
    let _ = (layout, pin_memory);
    factory::full(size, fill_value, dtype, device)
}

/// `ones(size)`.
#[kernel(CompositeExplicitAutograd)]
pub fn ones(
    size: &[i64],
    dtype: Option<DType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
) -> Result<Tensor> {
    let _ = (layout, pin_memory);
    factory::ones(size, dtype, device)
}

/// `zeros(size)`.
#[kernel(CompositeExplicitAutograd)]
pub fn zeros(
    size: &[i64],
    dtype: Option<DType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
) -> Result<Tensor> {
    let _ = (layout, pin_memory);
    factory::zeros(size, dtype, device)
}

/// `permute(self, dims)`.
#[kernel(CompositeExplicitAutograd)]
pub fn permute(self_: &Tensor, dims: &[i64]) -> Result<Tensor> {
    views::permute(self_, dims)
}

/// `select.int(self, dim, index)`.
#[kernel(CompositeExplicitAutograd)]
pub fn select_int(self_: &Tensor, dim: i64, index: i64) -> Result<Tensor> {
    views::select(self_, dim, index)
}

/// `slice.Tensor(self, dim, start, end, step)`.
#[kernel(CompositeExplicitAutograd)]
pub fn slice_Tensor(
    self_: &Tensor,
    dim: i64,
    start: Option<i64>,
    end: Option<i64>,
    step: i64,
) -> Result<Tensor> {
    views::slice(self_, dim, start, end, step)
}

/// PyTorch's check of a `*_scatter` operator's `src` against the view of
/// `self` it is written into.
fn check_scatter_src(view: &Tensor, src: &Tensor) -> Result<()> {
    crate::ensure!(
        view.shape() == src.shape(),
        "expected src to have a size equal to the slice of self. src size = {}, slice size = {}",
        super::fmt_shape(&src.shape()),
        super::fmt_shape(&view.shape())
    );
    Ok(())
}

/// PyTorch's `clone_preserve_strides`, what every `*_scatter` operator
/// writes into: `self`'s whole storage copied, seen with `self`'s geometry
/// (a plain `clone` when `self`'s elements overlap, where a write would be
/// refused, and when `self` covers its storage densely from its start, where
/// the two are the same).
fn clone_preserve_strides(self_: &Tensor) -> Result<Tensor> {
    let g = self_.geometry();
    let covers = g.offset == 0
        && g.storage.len() == crate::tensor::numel(&g.shape)
        && super::layout::is_non_overlapping_and_dense(&g.shape, &g.strides);
    if covers || crate::tensor::is_expanded(&g.shape, &g.strides) {
        return ops::clone(self_, None);
    }
    let full = ops::as_strided(self_, &[g.storage.len() as i64], &[1], Some(0))?;
    let copy = ops::clone(&full, None)?;
    let strides: Vec<i64> = g.strides.iter().map(|&s| s as i64).collect();
    ops::as_strided(&copy, &self_.sizes(), &strides, Some(g.offset as i64))
}

/// `diagonal_scatter(self, src, offset, dim1, dim2)`: a copy of `self`
/// whose `diagonal(offset, dim1, dim2)` is `src`.
#[kernel(CompositeExplicitAutogradNonFunctional)]
pub fn diagonal_scatter(
    self_: &Tensor,
    src: &Tensor,
    offset: i64,
    dim1: i64,
    dim2: i64,
) -> Result<Tensor> {
    fresh(clone_preserve_strides(self_)?, |output| {
        let view = ops::diagonal(output, offset, dim1, dim2)?;
        check_scatter_src(&view, src)?;
        ops::copy_(&view, src)?;
        Ok(output.clone())
    })
}

/// `as_strided_scatter(self, src, size, stride, storage_offset)`: a copy of
/// `self` (its whole storage) whose `as_strided(size, stride,
/// storage_offset)` is `src`.
#[kernel(CompositeExplicitAutogradNonFunctional)]
pub fn as_strided_scatter(
    self_: &Tensor,
    src: &Tensor,
    size: &[i64],
    stride: &[i64],
    storage_offset: Option<i64>,
) -> Result<Tensor> {
    fresh(clone_preserve_strides(self_)?, |output| {
        let view = ops::as_strided(output, size, stride, storage_offset)?;
        check_scatter_src(&view, src)?;
        ops::copy_(&view, src)?;
        Ok(output.clone())
    })
}

/// `select_scatter(self, src, dim, index)`: a copy of `self` whose
/// `select(dim, index)` is `src` (PyTorch's `select_scatter_symint`).
#[kernel(CompositeExplicitAutogradNonFunctional)]
pub fn select_scatter(self_: &Tensor, src: &Tensor, dim: i64, index: i64) -> Result<Tensor> {
    fresh(clone_preserve_strides(self_)?, |output| {
        let view = ops::select_int(output, dim, index)?;
        check_scatter_src(&view, src)?;
        ops::copy_(&view, src)?;
        Ok(output.clone())
    })
}

/// `slice_scatter(self, src, dim, start, end, step)`: a copy of `self`
/// whose `slice(dim, start, end, step)` is `src`.
#[kernel(CompositeExplicitAutogradNonFunctional)]
pub fn slice_scatter(
    self_: &Tensor,
    src: &Tensor,
    dim: i64,
    start: Option<i64>,
    end: Option<i64>,
    step: i64,
) -> Result<Tensor> {
    fresh(clone_preserve_strides(self_)?, |output| {
        let view = ops::slice_Tensor(output, dim, start, end, step)?;
        check_scatter_src(&view, src)?;
        ops::copy_(&view, src)?;
        Ok(output.clone())
    })
}

/// `normal_functional(self, mean, std, generator)`: `self.clone().normal_(...)`
/// (PyTorch's hand-written functional variant of `normal_`, which it cannot
/// name `normal`).
#[kernel(CompositeExplicitAutograd)]
pub fn normal_functional(
    self_: &Tensor,
    mean: f64,
    std: f64,
    generator: Option<&Generator>,
) -> Result<Tensor> {
    let r = ops::clone(self_, None)?;
    ops::normal_(&r, mean, std, generator)
}

/// `squeeze.dim(self, dim)`.
#[kernel(CompositeExplicitAutograd)]
pub fn squeeze_dim(self_: &Tensor, dim: i64) -> Result<Tensor> {
    views::squeeze_dim(self_, dim)
}

/// `squeeze_.dim(self, dim)`: `self` itself, its dimension `dim` removed if
/// it has size 1 (its geometry changed in place).
#[kernel(CompositeExplicitAutograd)]
pub fn squeeze__dim(self_: &mut Tensor, dim: i64) -> Result<Tensor> {
    let squeezed = views::squeeze_dim(self_, dim)?;
    self_.set_geometry(squeezed.geometry())?;
    Ok(self_.clone())
}

/// `squeeze.dims(self, dim)`: the listed dimensions of size 1 removed.
#[kernel(CompositeExplicitAutograd)]
pub fn squeeze_dims(self_: &Tensor, dim: &[i64]) -> Result<Tensor> {
    views::squeeze_dims(self_, dim)
}

/// `squeeze_.dims(self, dim)`: `self` itself, the listed dimensions of size 1
/// removed (its geometry changed in place).
#[kernel(CompositeExplicitAutograd)]
pub fn squeeze__dims(self_: &mut Tensor, dim: &[i64]) -> Result<Tensor> {
    let view = views::squeeze_dims(self_, dim)?;
    restride(self_, view)
}

/// `alias(self)`: a view of all of `self` (PyTorch's `alias`, which
/// `torch.export` graphs use where a program returns an input as it is).
#[kernel(CompositeExplicitAutograd)]
pub fn alias(self_: &Tensor) -> Result<Tensor> {
    views::alias(self_)
}

/// `squeeze(self)`: every dimension of size 1 removed.
#[kernel(CompositeExplicitAutograd)]
pub fn squeeze(self_: &Tensor) -> Result<Tensor> {
    views::squeeze(self_)
}

/// The in-place form of a view (`t_`, `squeeze_`): `self` itself, given the
/// view's geometry (over its own storage).
fn restride(self_: &mut Tensor, view: Tensor) -> Result<Tensor> {
    self_.set_geometry(view.geometry())?;
    Ok(self_.clone())
}

/// `squeeze_(self)`: `self` itself, every dimension of size 1 removed.
#[kernel(CompositeExplicitAutograd)]
pub fn squeeze_(self_: &mut Tensor) -> Result<Tensor> {
    let view = views::squeeze(self_)?;
    restride(self_, view)
}

/// `t_(self)`: `self` itself, transposed.
#[kernel(CompositeExplicitAutograd)]
pub fn t_(self_: &mut Tensor) -> Result<Tensor> {
    let view = views::t_named(self_, "t_")?;
    restride(self_, view)
}

/// `transpose_(self, dim0, dim1)`: `self` itself, transposed.
#[kernel(CompositeExplicitAutograd)]
pub fn transpose_(self_: &mut Tensor, dim0: i64, dim1: i64) -> Result<Tensor> {
    let view = views::transpose(self_, dim0, dim1)?;
    restride(self_, view)
}

/// `unsqueeze_(self, dim)`: `self` itself, with a dimension of size 1 at
/// `dim`.
#[kernel(CompositeExplicitAutograd)]
pub fn unsqueeze_(self_: &mut Tensor, dim: i64) -> Result<Tensor> {
    let view = views::unsqueeze(self_, dim)?;
    restride(self_, view)
}

/// `as_strided_(self, size, stride, storage_offset)`: `self` itself, given
/// that geometry over its storage (PyTorch's `as_strided__symint`).
#[kernel(CompositeExplicitAutogradNonFunctional)]
pub fn as_strided_(
    self_: &mut Tensor,
    size: &[i64],
    stride: &[i64],
    storage_offset: Option<i64>,
) -> Result<Tensor> {
    let view = views::as_strided(self_, size, stride, storage_offset)?;
    restride(self_, view)
}

/// `diagonal(self, offset, dim1, dim2)`.
#[kernel(CompositeExplicitAutograd)]
pub fn diagonal(self_: &Tensor, offset: i64, dim1: i64, dim2: i64) -> Result<Tensor> {
    views::diagonal(self_, offset, dim1, dim2)
}

/// `unbind.int(self, dim)`: the views `select(dim, i)`.
#[kernel(CompositeExplicitAutograd)]
pub fn unbind_int(self_: &Tensor, dim: i64) -> Result<Vec<Tensor>> {
    views::unbind(self_, dim)
}

/// `_unsafe_view(self, size)`: `view`'s result, not recorded as a view of
/// `self` (what a composite returns when the tensor it viewed was its own
/// intermediate).
#[kernel(CompositeExplicitAutograd)]
pub fn _unsafe_view(self_: &Tensor, size: &[i64]) -> Result<Tensor> {
    views::view(self_, size)
}

/// `mv(self, vec)`.
#[kernel(CompositeExplicitAutograd)]
pub fn mv(self_: &Tensor, vec: &Tensor) -> Result<Tensor> {
    linalg::mv(self_, vec)
}

/// `t(self)`.
#[kernel(CompositeExplicitAutograd)]
pub fn t(self_: &Tensor) -> Result<Tensor> {
    views::t(self_)
}

/// `transpose.int(self, dim0, dim1)`.
#[kernel(CompositeExplicitAutograd)]
pub fn transpose_int(self_: &Tensor, dim0: i64, dim1: i64) -> Result<Tensor> {
    views::transpose(self_, dim0, dim1)
}

/// `unsqueeze(self, dim)`.
#[kernel(CompositeExplicitAutograd)]
pub fn unsqueeze(self_: &Tensor, dim: i64) -> Result<Tensor> {
    views::unsqueeze(self_, dim)
}

fn check_stack_inputs(tensors: &[Tensor]) -> Result<()> {
    let first = tensors[0].shape();
    for (i, t) in tensors.iter().enumerate().skip(1) {
        crate::ensure!(
            t.shape() == first,
            "stack expects each tensor to be equal size, but got {:?} at entry 0 and {:?} at entry {i}",
            first,
            t.shape()
        );
    }
    Ok(())
}

fn stack_inputs(tensors: &[Tensor], dim: usize) -> Result<Vec<Tensor>> {
    check_stack_inputs(tensors)?;
    tensors
        .iter()
        .map(|t| ops::unsqueeze(t, dim as i64))
        .collect()
}

/// `stack(tensors, dim)`: `cat` along `dim`, viewed with the new dimension.
#[kernel(CompositeExplicitAutograd)]
pub fn stack(tensors: &[Tensor], dim: i64) -> Result<Tensor> {
    crate::ensure!(!tensors.is_empty(), "stack expects a non-empty TensorList");
    let nd = tensors[0].dim();
    let wd = wrap_dim(dim, nd + 1)?;
    if wd < nd {
        check_stack_inputs(tensors)?;
        let mut sizes = tensors[0].sizes();
        sizes.insert(wd, tensors.len() as i64);
        ops::view(&ops::cat(tensors, wd as i64)?, &sizes)
    } else {
        ops::cat(&stack_inputs(tensors, wd)?, dim)
    }
}

/// `stack.out(tensors, dim, out)`.
#[kernel(CompositeExplicitAutograd)]
pub fn stack_out(tensors: &[Tensor], dim: i64, out: &mut Tensor) -> Result<Tensor> {
    crate::ensure!(!tensors.is_empty(), "stack expects a non-empty TensorList");
    let wd = wrap_dim(dim, tensors[0].dim() + 1)?;
    ops::cat_out(&stack_inputs(tensors, wd)?, dim, out)
}

/// `sum(self, dtype)`: `sum.dim_IntList` over every dimension.
#[kernel(CompositeExplicitAutograd)]
pub fn sum(self_: &Tensor, dtype: Option<DType>) -> Result<Tensor> {
    ops::sum_dim_IntList(self_, Some(&[]), false, dtype)
}

/// `mean(self, dtype)`: `mean.dim` over every dimension (PyTorch's `mean`
/// in aten/src/ATen/native/ReduceOps.cpp).
#[kernel(CompositeExplicitAutograd)]
pub fn mean(self_: &Tensor, dtype: Option<DType>) -> Result<Tensor> {
    ops::mean_dim(self_, Some(&[]), false, dtype)
}

/// `mean.dtype_out(self, dtype, out)`: `self`'s dtype must cast to `out`'s,
/// then `mean.out` over every dimension (PyTorch's `mean_dtype_out`).
#[kernel(CompositeExplicitAutograd)]
pub fn mean_dtype_out(self_: &Tensor, dtype: Option<DType>, out: &mut Tensor) -> Result<Tensor> {
    crate::ensure!(
        super::promote::can_cast(self_.dtype(), out.dtype()),
        "mean.dtype_out(): input types can't be cast to the desired output type {}",
        out.dtype().c10_name()
    );
    ops::mean_out(self_, Some(&[]), false, dtype, out)
}

/// `var.dim(self, dim, unbiased, keepdim)`: `var.correction` with a
/// correction of 1 (`unbiased`) or 0 (PyTorch's `var` in ReduceOps.cpp).
#[kernel(CompositeImplicitAutograd)]
pub fn var_dim(
    self_: &Tensor,
    dim: Option<&[i64]>,
    unbiased: bool,
    keepdim: bool,
) -> Result<Tensor> {
    ops::var_correction(self_, dim, Some(Scalar::Int(i64::from(unbiased))), keepdim)
}

/// `var.out(self, dim, unbiased, keepdim, out)`: `var.correction_out` with a
/// correction of 1 (`unbiased`) or 0 (PyTorch's `var_out`).
#[kernel(CompositeImplicitAutograd)]
pub fn var_out(
    self_: &Tensor,
    dim: Option<&[i64]>,
    unbiased: bool,
    keepdim: bool,
    out: &mut Tensor,
) -> Result<Tensor> {
    ops::var_correction_out(
        self_,
        dim,
        Some(Scalar::Int(i64::from(unbiased))),
        keepdim,
        out,
    )
}

/// `clone(self, memory_format)`: `empty_like` (strides preserved when dense)
/// then `copy_`.
#[kernel(CompositeExplicitAutograd)]
pub fn clone(self_: &Tensor, memory_format: Option<MemoryFormat>) -> Result<Tensor> {
    let (shape, strides) = like_geometry(self_, memory_format)?;
    let r = ops::empty_strided(&shape, &strides, self_.dtype(), self_.device())?;
    fresh(r, |r| ops::copy_(r, self_))
}

/// The geometry, dtype and device `empty_like(self, dtype, layout, device,
/// pin_memory, memory_format)` gives (`Preserve` by default: the strides of a
/// dense `self`, else dense strides in its order).
fn like(
    self_: &Tensor,
    dtype: Option<DType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
    memory_format: Option<MemoryFormat>,
) -> Result<(Dims, Dims, DType, Device)> {
    crate::ensure!(
        layout.is_none_or(|l| l == Layout::Strided),
        "only the strided layout is supported"
    );
    crate::ensure!(
        !pin_memory.unwrap_or(false),
        "Only dense CPU tensors can be pinned"
    );
    let (shape, strides) = like_geometry(self_, memory_format)?;
    Ok((
        shape,
        strides,
        dtype.unwrap_or(self_.dtype()),
        device.unwrap_or(self_.device()),
    ))
}

/// `ones_like(self, ...)`: `empty_like(...).fill_(1)`.
#[kernel(CompositeExplicitAutograd)]
pub fn ones_like(
    self_: &Tensor,
    dtype: Option<DType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
    memory_format: Option<MemoryFormat>,
) -> Result<Tensor> {
    let (shape, strides, dtype, device) =
        like(self_, dtype, layout, device, pin_memory, memory_format)?;
    let r = ops::empty_strided(&shape, &strides, dtype, device)?;
    fresh(r, |r| ops::fill__Scalar(&mut r.clone(), Scalar::Int(1)))
}

/// `full_like(self, fill_value, ...)`: `empty_like(...).fill_(fill_value)`;
/// the value converted to the result's dtype with overflow checks.
#[kernel(CompositeExplicitAutograd)]
#[allow(clippy::too_many_arguments)]
pub fn full_like(
    self_: &Tensor,
    fill_value: Scalar,
    dtype: Option<DType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
    memory_format: Option<MemoryFormat>,
) -> Result<Tensor> {
    let (shape, strides, dtype, device) =
        like(self_, dtype, layout, device, pin_memory, memory_format)?;
    let r = ops::empty_strided(&shape, &strides, dtype, device)?;
    fresh(r, |r| ops::fill__Scalar(&mut r.clone(), fill_value))
}

/// `scalar_tensor(s, ...)`: a 0-dim tensor holding `s`, in the default float
/// dtype unless `dtype` says otherwise (a bool or an integer included, as
/// PyTorch's `scalar_tensor` does).
#[kernel(CompositeExplicitAutograd)]
pub fn scalar_tensor(
    s: Scalar,
    dtype: Option<DType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
) -> Result<Tensor> {
    crate::ensure!(
        layout.is_none_or(|l| l == Layout::Strided),
        "only the strided layout is supported"
    );
    crate::ensure!(
        !pin_memory.unwrap_or(false),
        "Only dense CPU tensors can be pinned"
    );
    let r = ops::empty_strided(
        &[],
        &[],
        dtype.unwrap_or(DType::Float32),
        device.unwrap_or(Device::Cpu),
    )?;
    fresh(r, |r| ops::fill__Scalar(&mut r.clone(), s))
}

/// `zeros_like(self, ...)`: `empty_like(...)` (zero-filled here).
#[kernel(CompositeExplicitAutograd)]
pub fn zeros_like(
    self_: &Tensor,
    dtype: Option<DType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
    memory_format: Option<MemoryFormat>,
) -> Result<Tensor> {
    let (shape, strides, dtype, device) =
        like(self_, dtype, layout, device, pin_memory, memory_format)?;
    ops::empty_strided(&shape, &strides, dtype, device)
}

/// `rand_like(self, ...)`: `empty_like(...).uniform_(0, 1)` from the default
/// generator.
#[kernel(CompositeExplicitAutograd)]
pub fn rand_like(
    self_: &Tensor,
    dtype: Option<DType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
    memory_format: Option<MemoryFormat>,
) -> Result<Tensor> {
    rand_like_generator(
        self_,
        None,
        dtype,
        layout,
        device,
        pin_memory,
        memory_format,
    )
}

/// `rand_like.generator(self, generator, ...)`.
#[kernel(CompositeExplicitAutograd)]
pub fn rand_like_generator(
    self_: &Tensor,
    generator: Option<&Generator>,
    dtype: Option<DType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
    memory_format: Option<MemoryFormat>,
) -> Result<Tensor> {
    let (shape, strides, dtype, device) =
        like(self_, dtype, layout, device, pin_memory, memory_format)?;
    sampling::sample(Dist::Uniform, &shape, &strides, dtype, device, generator)
}

/// `randn_like(self, ...)`: `empty_like(...).normal_(0, 1)` from the default
/// generator.
#[kernel(CompositeExplicitAutograd)]
pub fn randn_like(
    self_: &Tensor,
    dtype: Option<DType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
    memory_format: Option<MemoryFormat>,
) -> Result<Tensor> {
    randn_like_generator(
        self_,
        None,
        dtype,
        layout,
        device,
        pin_memory,
        memory_format,
    )
}

/// `randn_like.generator(self, generator, ...)`.
#[kernel(CompositeExplicitAutograd)]
pub fn randn_like_generator(
    self_: &Tensor,
    generator: Option<&Generator>,
    dtype: Option<DType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
    memory_format: Option<MemoryFormat>,
) -> Result<Tensor> {
    let (shape, strides, dtype, device) =
        like(self_, dtype, layout, device, pin_memory, memory_format)?;
    sampling::sample(Dist::Normal, &shape, &strides, dtype, device, generator)
}

/// `fill.Scalar(self, value)`: a new tensor like `self`, every element
/// `value`.
#[kernel(CompositeExplicitAutograd)]
pub fn fill_Scalar(self_: &Tensor, value: Scalar) -> Result<Tensor> {
    let out = Tensor::try_zeros(&self_.shape(), self_.dtype(), self_.device())?;
    fresh(out, |out| crate::at::fill__Scalar(&mut out.clone(), value))
}

/// `fill.Tensor(self, value)`: likewise with a 0-dim tensor's value.
#[kernel(CompositeExplicitAutograd)]
pub fn fill_Tensor(self_: &Tensor, value: &Tensor) -> Result<Tensor> {
    let out = Tensor::try_zeros(&self_.shape(), self_.dtype(), self_.device())?;
    fresh(out, |out| crate::at::fill__Tensor(&mut out.clone(), value))
}

/// `detach(self)`: a new view of `self`'s storage with the same geometry and
/// no autograd history.
#[kernel(CompositeExplicitAutograd)]
pub fn detach(self_: &Tensor) -> Result<Tensor> {
    views::alias(self_)
}

/// `detach_(self)`: drops `self`'s history, its requires-grad flag and its
/// tangent (PyTorch's hand-written `detach_`), for every tensor: no Autograd
/// kernel is registered for it, so tensors that require grad come here too.
/// A view cannot be detached in place (PyTorch's message).
#[kernel(CompositeExplicitAutograd)]
pub fn detach_(self_: &mut Tensor) -> Result<Tensor> {
    crate::ensure!(
        self_.view_of().is_none(),
        "Can't detach views in-place. Use detach() instead. If you are using DistributedDataParallel (DDP) for training, and gradient_as_bucket_view is set as True, gradients are views of DDP buckets, and hence detach_() cannot be called on these gradients. To fix this error, please refer to the Optimizer.zero_grad() function in torch/optim/optimizer.py as the solution."
    );
    self_.set_history(None);
    if self_.autograd_meta().is_some() {
        self_.set_requires_grad(false)?;
        self_.set_tangent(None);
    }
    Ok(self_.clone())
}

// ---- CompositeImplicitAutograd -------------------------------------------------

/// `contiguous(self, memory_format)`: `self` when already contiguous in that
/// format, else a `clone`.
#[kernel(CompositeImplicitAutograd)]
pub fn contiguous(self_: &Tensor, memory_format: MemoryFormat) -> Result<Tensor> {
    if is_contiguous_as(self_, memory_format) {
        return Ok(self_.clone());
    }
    crate::ensure!(
        memory_format != MemoryFormat::Preserve,
        "preserve memory format is unsupported by the contiguous operator"
    );
    ops::clone(self_, Some(memory_format))
}

/// `reshape(self, shape)`: a view when the strides allow one, else
/// PyTorch's `_unsafe_view(self.clone(contiguous_format), shape)` (a copy,
/// not recorded as a view of it).
#[kernel(CompositeImplicitAutograd)]
pub fn reshape(self_: &Tensor, shape: &[i64]) -> Result<Tensor> {
    let inferred = views::infer_size(shape, self_.numel())?;
    if views::compute_stride("reshape", &self_.shape(), &self_.strides(), &inferred)?.is_some() {
        return ops::view(self_, shape);
    }
    let c = ops::clone(self_, Some(MemoryFormat::Contiguous))?;
    let sizes: Vec<i64> = inferred.iter().map(|&n| n as i64).collect();
    ops::_unsafe_view(&c, &sizes)
}

/// `to.dtype(self, dtype, non_blocking, copy, memory_format)`: `self` when
/// nothing changes and `copy` is false, else `_to_copy`.
#[kernel(CompositeImplicitAutograd)]
pub fn to_dtype(
    self_: &Tensor,
    dtype: DType,
    non_blocking: bool,
    copy: bool,
    memory_format: Option<MemoryFormat>,
) -> Result<Tensor> {
    let format = memory_format.unwrap_or(MemoryFormat::Preserve);
    if self_.dtype() == dtype
        && !copy
        && (format == MemoryFormat::Preserve || suggest_memory_format(self_) == format)
    {
        return Ok(self_.clone());
    }
    ops::_to_copy(
        self_,
        Some(dtype),
        None,
        None,
        None,
        non_blocking,
        memory_format,
    )
}

/// `_to_copy(self, *, dtype, layout, device, pin_memory, non_blocking,
/// memory_format)`: a new tensor with the preserved (dense) or requested
/// layout, then `copy_`. A contiguous CPU `self` going to a contiguous result
/// is converted straight into fresh capacity instead (one pass, no zero-filled
/// result first); the values are the same.
#[kernel(CompositeExplicitAutograd)]
pub fn _to_copy(
    self_: &Tensor,
    dtype: Option<DType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
    non_blocking: bool,
    memory_format: Option<MemoryFormat>,
) -> Result<Tensor> {
    let _ = non_blocking;
    crate::ensure!(
        layout.is_none_or(|l| l == Layout::Strided),
        "_to_copy: only the strided layout is supported"
    );
    crate::ensure!(
        !pin_memory.unwrap_or(false),
        "_to_copy: pinned memory is not supported"
    );
    let dtype = dtype.unwrap_or(self_.dtype());
    let device = device.unwrap_or(self_.device());
    let format = memory_format.unwrap_or(MemoryFormat::Preserve);
    let (shape, strides) = (self_.shape(), self_.strides());
    let new_strides = match format {
        MemoryFormat::Preserve if is_non_overlapping_and_dense(&shape, &strides) => strides,
        MemoryFormat::Preserve => infer_dense_strides(&shape, &strides),
        f => strides_for(&shape, f)?,
    };
    if device == Device::Cpu
        && self_.device() == Device::Cpu
        && new_strides == crate::tensor::contiguous_strides(&shape)
    {
        if let Some(r) = pointwise::convert_contiguous(self_, dtype)? {
            return Ok(r);
        }
    }
    let r = ops::empty_strided(&shape, &new_strides, dtype, device)?;
    fresh(r, |r| ops::copy_(r, self_))
}

/// `matmul(self, other)`.
#[kernel(CompositeImplicitAutograd)]
pub fn matmul(self_: &Tensor, other: &Tensor) -> Result<Tensor> {
    linalg::matmul(self_, other, None)
}

/// `matmul.out(self, other, out)`.
#[kernel(CompositeImplicitAutograd)]
pub fn matmul_out(self_: &Tensor, other: &Tensor, out: &mut Tensor) -> Result<Tensor> {
    // PyTorch's refusal comes from the out= kernels its decomposition calls,
    // in `matmul`'s name; this one computes without them.
    crate::autograd::check_out("matmul", &[self_, other, out])?;
    linalg::matmul(self_, other, Some(out))
}

/// `sum_to_size(self, size)`: `self` summed to `size` (ATen's `sum_to`, see
/// [`shape::sum_to`]); `size` must be expandable to `self`'s sizes.
#[kernel(CompositeImplicitAutograd)]
pub fn sum_to_size(self_: &Tensor, size: &[i64]) -> Result<Tensor> {
    let sizes = self_.sizes();
    crate::ensure!(
        shape::is_expandable_to(size, &sizes),
        "size {{{}}} is not expandable to size {{{}}}.",
        super::fmt_ints(size),
        super::fmt_ints(&sizes)
    );
    if size.is_empty() {
        return ops::sum_dim_IntList(self_, None, false, None);
    }
    let plan = shape::sum_to(&sizes, size);
    let r = if plan.dims.is_empty() {
        self_.clone()
    } else {
        ops::sum_dim_IntList(self_, Some(&plan.dims), true, None)?
    };
    if plan.view {
        ops::view(&r, size)
    } else {
        Ok(r)
    }
}

// ---- nn, losses and optimizers ----------------------------------------------------

/// `add_.Scalar(self, other, alpha)`: `add_.Tensor` with `other` a wrapped
/// number (PyTorch's CompositeExplicitAutograd `add_`).
#[kernel(CompositeExplicitAutograd)]
pub fn add__Scalar(self_: &mut Tensor, other: Scalar, alpha: Scalar) -> Result<Tensor> {
    crate::at::add__Tensor(self_, &Tensor::wrapped_number(other), alpha)
}

/// `mul_.Scalar(self, other)`: `mul_.Tensor` with a wrapped number.
#[kernel(CompositeExplicitAutograd)]
pub fn mul__Scalar(self_: &mut Tensor, other: Scalar) -> Result<Tensor> {
    crate::at::mul__Tensor(self_, &Tensor::wrapped_number(other))
}

/// `div_.Scalar(self, other)`: `div_.Tensor` with a wrapped number.
#[kernel(CompositeExplicitAutograd)]
pub fn div__Scalar(self_: &mut Tensor, other: Scalar) -> Result<Tensor> {
    crate::at::div__Tensor(self_, &Tensor::wrapped_number(other))
}

/// `log_softmax.int(self, dim, dtype)`: `_log_softmax` of `self`, cast to
/// `dtype` first if given.
#[kernel(CompositeImplicitAutograd)]
pub fn log_softmax_int(self_: &Tensor, dim: i64, dtype: Option<DType>) -> Result<Tensor> {
    crate::at::_log_softmax(&cast_to(self_, dtype)?, dim, false)
}

/// `self_` cast to `dtype` first if given (what `softmax.int` and
/// `log_softmax.int` do before their kernel).
fn cast_to(self_: &Tensor, dtype: Option<DType>) -> Result<Tensor> {
    match dtype {
        Some(d) => crate::at::to_dtype(self_, d, false, false, None),
        None => Ok(self_.clone()),
    }
}

/// `softmax.int(self, dim, dtype)`: `_softmax` of `self`, cast to `dtype`
/// first if given.
#[kernel(CompositeImplicitAutograd)]
pub fn softmax_int(self_: &Tensor, dim: i64, dtype: Option<DType>) -> Result<Tensor> {
    crate::at::_softmax(&cast_to(self_, dtype)?, dim, false)
}

/// `nll_loss(self, target, weight, reduction, ignore_index)`: the first result
/// of `nll_loss_forward`.
#[kernel(CompositeImplicitAutograd)]
pub fn nll_loss(
    self_: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    reduction: i64,
    ignore_index: i64,
) -> Result<Tensor> {
    Ok(crate::at::nll_loss_forward(self_, target, weight, reduction, ignore_index)?.0)
}

/// `nll_loss_nd(self, target, weight, reduction, ignore_index)`: `nll_loss`
/// for 1-D and 2-D inputs; for `(N, C, d1, ...)` inputs (PyTorch's
/// `nll_loss2d` path), `nll_loss2d`'s checks and messages
/// (`nll_loss2d_checks`), then the classes moved last and the rest
/// flattened, which gives `nll_loss2d`'s values (the same sums over the same
/// picked elements), the per-element losses reshaped back to `(N, d1, ...)`
/// for `reduction=0`. The checks are `nll_loss_nd_symint`'s
/// (`aten/src/ATen/native/LossNLL.cpp`): a 0-dim target's batch size reads
/// as 0.
#[kernel(CompositeImplicitAutograd)]
pub fn nll_loss_nd(
    self_: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    reduction: i64,
    ignore_index: i64,
) -> Result<Tensor> {
    let value_error = |m: String| crate::Error::Value(m.into());
    if self_.dim() < 1 {
        return Err(value_error(format!(
            "Expected 1 or more dimensions (got {})",
            self_.dim()
        )));
    }
    let (s, t) = (self_.sizes(), target.sizes());
    let target_batch = t.first().copied().unwrap_or(0);
    if self_.dim() != 1 && s[0] != target_batch {
        return Err(value_error(format!(
            "Expected input batch_size ({}) to match target batch_size ({target_batch}).",
            s[0]
        )));
    }
    if self_.dim() <= 2 {
        return crate::at::nll_loss(self_, target, weight, reduction, ignore_index);
    }
    if self_.dim() == 4 {
        nll_loss2d_checks(&s, target, weight)?;
    } else {
        // `target.sym_sizes().slice(1)`: ATen's message for a 0-dim target.
        crate::ensure!(!t.is_empty(), "ArrayRef: invalid slice, N = 1; size = 0");
        let mut want = vec![s[0]];
        want.extend(&s[2..]);
        crate::ensure!(
            t[1..] == s[2..],
            "Expected target size {}, got {}",
            super::fmt_ints(&want),
            super::fmt_ints(&t)
        );
        // `nll_loss2d` of the input viewed as `(N, C, 1, -1)` and the
        // target as `(N, 1, -1)`; empty ones as `(N, C, 0, 0)` and
        // `(N, 0, 0)` (ATen's `nll_loss_nd_symint`: "support empty batches").
        let rest: i64 = s[2..].iter().product();
        let (input_4d, target_3d) = match (self_.numel() > 0, target.numel() > 0) {
            (true, true) => ([s[0], s[1], 1, rest], ops::view(target, &[t[0], 1, -1])?),
            (true, false) => ([s[0], s[1], 1, rest], ops::view(target, &[t[0], 0, 0])?),
            (false, true) => ([s[0], s[1], 0, 0], ops::view(target, &[t[0], 1, -1])?),
            (false, false) => ([s[0], s[1], 0, 0], ops::view(target, &[t[0], 0, 0])?),
        };
        nll_loss2d_checks(&input_4d, &target_3d, weight)?;
    }
    if !self_.dtype().is_floating_point() {
        return Err(super::dispatch_error(
            "nll_loss2d_forward_out_frame",
            self_.dtype(),
        ));
    }
    let mut dims: Vec<i64> = vec![0];
    dims.extend(2..s.len() as i64);
    dims.push(1);
    let flat = ops::reshape(&crate::at::permute(self_, &dims)?, &[-1, s[1]])?;
    let flat_target = ops::reshape(target, &[-1])?;
    // `nll_loss2d` takes any weight of `C` elements.
    let flat_weight = weight.map(|w| ops::reshape(w, &[-1])).transpose()?;
    let r = crate::at::nll_loss(
        &flat,
        &flat_target,
        flat_weight.as_ref(),
        reduction,
        ignore_index,
    )?;
    match reduction {
        0 => ops::reshape(&r, &t),
        _ => Ok(r),
    }
}

/// `check_inputs_nll_loss2d` and the target's dtype (`nll_loss2d`'s checks,
/// `aten/src/ATen/native/LossNLL2d.cpp`, in PyTorch 2.15's order) for an
/// input of sizes `s` (4-D): its message for a size mismatch has no closing
/// parenthesis.
fn nll_loss2d_checks(s: &[i64], target: &Tensor, weight: Option<&Tensor>) -> Result<()> {
    crate::ensure!(
        target.dim() == 3,
        "only batches of spatial targets supported (3D tensors) but got targets of dimension: {}",
        target.dim()
    );
    crate::ensure!(
        target.dtype() == DType::Int64,
        "expected target dtype to be Long or Byte, but got {}",
        target.dtype().c10_name()
    );
    if let Some(w) = weight {
        crate::ensure!(
            w.numel() as i64 == s[1],
            "weight tensor should be defined either for all or no classes"
        );
    }
    let t = target.sizes();
    crate::ensure!(
        s[0] == t[0] && s[2] == t[1] && s[3] == t[2],
        "size mismatch (got input: {} , target: {}",
        super::fmt_ints(s),
        super::fmt_ints(&t)
    );
    Ok(())
}

/// `cross_entropy_loss(self, target, weight, reduction, ignore_index,
/// label_smoothing)`: `nll_loss_nd(log_softmax(self, class_dim), ...)` for
/// class-index targets; for class-probability targets (`target` shaped like
/// `self`), `-(log_softmax(self) * target [* weight])` summed over the class
/// dimension, then reduced (the mean divides by the number of samples), the
/// targets smoothed first when `label_smoothing` is given; label smoothing
/// with class indices as PyTorch's `cross_entropy_loss_label_smoothing`.
#[kernel(CompositeImplicitAutograd)]
pub fn cross_entropy_loss(
    self_: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    reduction: i64,
    ignore_index: i64,
    label_smoothing: f64,
) -> Result<Tensor> {
    let class_dim = if self_.dim() == 1 { 0 } else { 1 };
    // Taken after each branch's checks, as PyTorch orders them (a 0-dim
    // input with a 0-dim integer target is refused for its target first).
    let log_probs = || crate::at::log_softmax_int(self_, class_dim, Some(self_.dtype()));
    if self_.sizes() == target.sizes() {
        crate::ensure!(
            target.dtype().is_floating_point(),
            "Expected floating point type for target with class probabilities, got {}",
            target.dtype().c10_name()
        );
        crate::ensure!(
            ignore_index < 0,
            "ignore_index is not supported for floating point target"
        );
        // `cross_entropy_loss_prob_target`: `self.size(class_dim)`, the
        // weight, `log_softmax`, then the label smoothing (only a value
        // above 1 is refused).
        let n_classes = *self_.sizes().get(class_dim as usize).ok_or_else(|| {
            super::index_error(format!(
                "Dimension specified as {class_dim} but tensor has no dimensions"
            ))
        })?;
        if let Some(w) = weight {
            crate::ensure!(
                w.dim() == 1 && w.numel() as i64 == n_classes,
                "cross_entropy: weight tensor should be defined either for all {n_classes} classes or no classes but got weight tensor of shape: {}",
                super::fmt_ints(&w.sizes())
            );
        }
        let input = log_probs()?;
        let target = if label_smoothing > 0.0 {
            // Above 0 (not NaN): `<= 1.0` fails only above 1.
            if label_smoothing > 1.0 {
                crate::bail!("label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}");
            }
            let kept = crate::at::mul_Scalar(target, Scalar::Float(1.0 - label_smoothing))?;
            crate::at::add_Scalar(
                &kept,
                Scalar::Float(label_smoothing / n_classes as f64),
                Scalar::Int(1),
            )?
        } else {
            target.clone()
        };
        let mut picked = crate::at::mul_Tensor(&input, &target)?;
        if let Some(w) = weight {
            let mut shape = vec![1i64; self_.dim()];
            shape[class_dim as usize] = n_classes;
            picked = crate::at::mul_Tensor(&picked, &ops::view(w, &shape)?)?;
        }
        let per_sample = crate::at::neg(&crate::at::sum_dim_IntList(
            &picked,
            Some(&[class_dim]),
            false,
            None,
        )?)?;
        return match reduction {
            0 => Ok(per_sample),
            1 => {
                let samples = (self_.numel() as i64 / n_classes.max(1)).max(0);
                let total = crate::at::sum(&per_sample, None)?;
                match self_.numel() {
                    0 => crate::at::div_Scalar(&total, Scalar::Float(f64::NAN)),
                    _ => crate::at::div_Scalar(&total, Scalar::Int(samples)),
                }
            }
            2 => crate::at::sum(&per_sample, None),
            r => crate::bail!("Invalid reduction type encountered in cross_entropy: {r}"),
        };
    }
    if label_smoothing > 0.0 {
        if label_smoothing > 1.0 {
            crate::bail!("label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}");
        }
        let smoothing = LabelSmoothing {
            class_dim,
            ignore_index,
            label_smoothing,
        };
        return smoothing.loss(&log_probs()?, target, weight, reduction);
    }
    crate::at::nll_loss_nd(&log_probs()?, target, weight, reduction, ignore_index)
}

/// PyTorch's `cross_entropy_loss_label_smoothing` for class-index targets:
/// `(1 - ls) * nll_loss_nd(input) + smooth * (ls / n_classes)`, `smooth` the
/// negated (weighted) sum of the log-probabilities over the classes, 0 at
/// ignored targets, reduced as the loss is (the mean divides by the number
/// of targets kept, or by the sum of their class weights).
struct LabelSmoothing {
    class_dim: i64,
    ignore_index: i64,
    label_smoothing: f64,
}

impl LabelSmoothing {
    fn loss(
        &self,
        input: &Tensor,
        target: &Tensor,
        weight: Option<&Tensor>,
        reduction: i64,
    ) -> Result<Tensor> {
        use crate::at;
        let one = Scalar::Int(1);
        let nll = at::nll_loss_nd(input, target, weight, reduction, self.ignore_index)?;
        let n_classes = input.sizes()[self.class_dim as usize];
        let ignored = at::eq_Scalar(target, Scalar::Int(self.ignore_index))?;
        let scalar = |v: f64| {
            at::full(
                &[],
                Scalar::Float(v),
                Some(input.dtype()),
                None,
                Some(input.device()),
                None,
            )
        };
        let (zero, unit) = (scalar(0.0)?, scalar(1.0)?);
        let weighted = match weight {
            Some(w) => {
                let mut shape = vec![1i64; input.dim()];
                shape[self.class_dim as usize] = w.sizes()[0];
                at::mul_Tensor(input, &ops::view(w, &shape)?)?
            }
            None => input.clone(),
        };
        let summed = at::sum_dim_IntList(&weighted, Some(&[self.class_dim]), false, None)?;
        // PyTorch's `smooth_loss.masked_fill_(ignore_mask, 0.0)` writes in
        // place: a mask that broadcasts beyond the loss (a 1-D input's 1-D
        // target of one class) is refused.
        let (loss_shape, mask_shape) = (summed.shape(), ignored.shape());
        let bcast = super::promote::broadcast_shapes(&loss_shape, &mask_shape)?;
        super::promote::check_output_shape(&loss_shape, &bcast)?;
        let smooth = at::where_self(&ignored, &zero, &at::neg(&summed)?)?;
        let ret = match reduction {
            1 => {
                let denominator = match weight {
                    Some(w) => {
                        let kept = at::where_self(
                            &ignored,
                            &at::zeros_like(target, None, None, None, None, None)?,
                            target,
                        )?;
                        let picked = at::index_select(w, 0, &ops::reshape(&kept, &[-1])?)?;
                        let flat_ignored = ops::reshape(&ignored, &[-1])?;
                        at::sum(&at::where_self(&flat_ignored, &zero, &picked)?, None)?
                    }
                    None => at::sum(&at::where_self(&ignored, &zero, &unit)?, None)?,
                };
                at::div_Tensor(&at::sum(&smooth, None)?, &denominator)?
            }
            2 => at::sum(&smooth, None)?,
            0 => smooth,
            r => crate::bail!("Invalid reduction type encountered in cross_entropy: {r}"),
        };
        let ls = self.label_smoothing;
        at::add_Tensor(
            &at::mul_Scalar(&nll, Scalar::Float(1.0 - ls))?,
            &at::mul_Scalar(&ret, Scalar::Float(ls / n_classes as f64))?,
            one,
        )
    }
}

/// `linear(input, weight, bias)`: `addmm(bias, input, weight.t())` for a 2-D
/// input with a bias (and for a contiguous input of more dimensions with a
/// 1-D bias, flattened to 2-D and viewed back, as PyTorch's
/// `_flatten_nd_linear`); otherwise `matmul(input, weight.t())` (+ `bias`).
#[kernel(CompositeImplicitAutograd)]
pub fn linear(input: &Tensor, weight: &Tensor, bias: Option<&Tensor>) -> Result<Tensor> {
    let wt = ops::t(weight)?;
    let one = Scalar::Int(1);
    if let Some(b) = bias {
        if input.dim() == 2 {
            return crate::at::addmm(b, input, &wt, one, one);
        }
        if input.dim() >= 3 && input.is_contiguous() && (input.dim() == 3 || b.dim() == 1) {
            let s = input.sizes();
            let (lead, last) = s.split_at(s.len() - 1);
            let rows: i64 = lead.iter().product();
            let flat = ops::reshape(input, &[rows, last[0]])?;
            let r = crate::at::addmm(b, &flat, &wt, one, one)?;
            let mut shape = lead.to_vec();
            shape.push(r.sizes()[1]);
            return ops::view(&r, &shape);
        }
    }
    let output = crate::at::matmul(input, &wt)?;
    match bias {
        Some(b) => crate::at::add_Tensor(&output, b, one),
        None => Ok(output),
    }
}

/// `one_hot(self, num_classes)`: an int64 tensor of `self`'s shape plus one
/// dimension of `num_classes` (`max + 1` when -1), 1 at each value's class.
#[kernel(CompositeImplicitAutograd)]
pub fn one_hot(self_: &Tensor, num_classes: i64) -> Result<Tensor> {
    crate::ensure!(
        self_.dtype() == DType::Int64,
        "one_hot is only applicable to index tensor of type LongTensor."
    );
    if self_.numel() == 0 {
        let mut shape = self_.sizes();
        crate::ensure!(
            num_classes > 0,
            "Can not infer total number of classes from empty tensor."
        );
        shape.push(num_classes);
        return crate::at::zeros(&shape, Some(DType::Int64), None, Some(self_.device()), None);
    }
    if self_.device() == Device::Meta {
        crate::ensure!(
            num_classes >= 0,
            "Can not infer total number of classes from meta tensor: its values are unknown; pass num_classes"
        );
        let mut shape = self_.sizes();
        shape.push(num_classes);
        return crate::at::zeros(&shape, Some(DType::Int64), None, Some(Device::Meta), None);
    }
    let values = self_.to_vec::<i64>()?;
    let (min, max) = values
        .iter()
        .fold((i64::MAX, i64::MIN), |(lo, hi), &v| (lo.min(v), hi.max(v)));
    crate::ensure!(min >= 0, "Class values must be non-negative.");
    let num_classes = match num_classes {
        -1 => max + 1,
        n => {
            crate::ensure!(n > max, "Class values must be smaller than num_classes.");
            n
        }
    };
    let classes = crate::at::arange(
        Scalar::Int(num_classes),
        Some(DType::Int64),
        None,
        None,
        None,
    )?;
    let hits = crate::at::eq_Tensor(&ops::unsqueeze(self_, -1)?, &classes)?;
    crate::at::_to_copy(&hits, Some(DType::Int64), None, None, None, false, None)
}

// ---- Generated -----------------------------------------------------------------

// The kernels the generator writes (`autogen:` functional and out= variants,
// `view_copy` operators): `opforge_codegen::emit_kernels`.
include!(concat!(env!("OUT_DIR"), "/opforge/kernels.rs"));

/// `logical_and`: `logical_and.out` into a new bool tensor (both nonzero; PyTorch's
/// `logical_and` in aten/src/ATen/native/BinaryOps.cpp).
#[kernel(CompositeExplicitAutograd)]
pub fn logical_and(self_: &Tensor, other: &Tensor) -> Result<Tensor> {
    let mut out = ops::empty_memory_format(&[0], Some(DType::Bool), Some(self_.device()), None)?;
    ops::logical_and_out(self_, other, &mut out)
}

/// `logical_and_`: `logical_and.out(self, other, out=self)` (0 or 1 in `self`'s
/// dtype).
#[kernel(CompositeExplicitAutograd)]
pub fn logical_and_(self_: &mut Tensor, other: &Tensor) -> Result<Tensor> {
    let mut out = self_.clone();
    ops::logical_and_out(self_, other, &mut out)
}

/// `logical_or`: `logical_or.out` into a new bool tensor (either nonzero; PyTorch's
/// `logical_or` in aten/src/ATen/native/BinaryOps.cpp).
#[kernel(CompositeExplicitAutograd)]
pub fn logical_or(self_: &Tensor, other: &Tensor) -> Result<Tensor> {
    let mut out = ops::empty_memory_format(&[0], Some(DType::Bool), Some(self_.device()), None)?;
    ops::logical_or_out(self_, other, &mut out)
}

/// `logical_or_`: `logical_or.out(self, other, out=self)` (0 or 1 in `self`'s
/// dtype).
#[kernel(CompositeExplicitAutograd)]
pub fn logical_or_(self_: &mut Tensor, other: &Tensor) -> Result<Tensor> {
    let mut out = self_.clone();
    ops::logical_or_out(self_, other, &mut out)
}

/// `logical_xor`: `logical_xor.out` into a new bool tensor (exactly one nonzero; PyTorch's
/// `logical_xor` in aten/src/ATen/native/BinaryOps.cpp).
#[kernel(CompositeExplicitAutograd)]
pub fn logical_xor(self_: &Tensor, other: &Tensor) -> Result<Tensor> {
    let mut out = ops::empty_memory_format(&[0], Some(DType::Bool), Some(self_.device()), None)?;
    ops::logical_xor_out(self_, other, &mut out)
}

/// `logical_xor_`: `logical_xor.out(self, other, out=self)` (0 or 1 in `self`'s
/// dtype).
#[kernel(CompositeExplicitAutograd)]
pub fn logical_xor_(self_: &mut Tensor, other: &Tensor) -> Result<Tensor> {
    let mut out = self_.clone();
    ops::logical_xor_out(self_, other, &mut out)
}

/// `op.Scalar`, `op_.Scalar` and `op.Scalar_out`: the `.Tensor` forms with
/// `other` a wrapped number (PyTorch's `wrapped_scalar_tensor`, as
/// aten/src/ATen/native/BitwiseOps.cpp and BinaryOps.cpp call them).
macro_rules! scalar_forms {
    ($($op:literal: $s:ident, $s_:ident, $s_out:ident => $t:ident, $t_:ident, $t_out:ident;)*) => {$(
        #[doc = concat!("`", $op, ".Scalar`: `", $op, ".Tensor` with `other` a wrapped number.")]
        #[kernel(CompositeExplicitAutograd)]
        pub fn $s(self_: &Tensor, other: Scalar) -> Result<Tensor> {
            ops::$t(self_, &Tensor::wrapped_number(other))
        }

        #[doc = concat!("`", $op, "_.Scalar`: `", $op, "_.Tensor` with `other` a wrapped number.")]
        #[kernel(CompositeExplicitAutograd)]
        pub fn $s_(self_: &mut Tensor, other: Scalar) -> Result<Tensor> {
            ops::$t_(self_, &Tensor::wrapped_number(other))
        }

        #[doc = concat!("`", $op, ".Scalar_out`: `", $op, ".Tensor_out` with `other` a wrapped number.")]
        #[kernel(CompositeExplicitAutograd)]
        pub fn $s_out(self_: &Tensor, other: Scalar, out: &mut Tensor) -> Result<Tensor> {
            ops::$t_out(self_, &Tensor::wrapped_number(other), out)
        }
    )*};
}

scalar_forms! {
    "bitwise_and": bitwise_and_Scalar, bitwise_and__Scalar, bitwise_and_Scalar_out
        => bitwise_and_Tensor, bitwise_and__Tensor, bitwise_and_Tensor_out;
    "bitwise_or": bitwise_or_Scalar, bitwise_or__Scalar, bitwise_or_Scalar_out
        => bitwise_or_Tensor, bitwise_or__Tensor, bitwise_or_Tensor_out;
    "bitwise_xor": bitwise_xor_Scalar, bitwise_xor__Scalar, bitwise_xor_Scalar_out
        => bitwise_xor_Tensor, bitwise_xor__Tensor, bitwise_xor_Tensor_out;
    "fmod": fmod_Scalar, fmod__Scalar, fmod_Scalar_out
        => fmod_Tensor, fmod__Tensor, fmod_Tensor_out;
    "remainder": remainder_Scalar, remainder__Scalar, remainder_Scalar_out
        => remainder_Tensor, remainder__Tensor, remainder_Tensor_out;
}

/// `div.Scalar_mode`: `div.Tensor_mode` with `other` a wrapped number
/// (PyTorch's `div(self, Scalar, rounding_mode)` in
/// aten/src/ATen/native/BinaryOps.cpp).
#[kernel(CompositeExplicitAutograd)]
pub fn div_Scalar_mode(
    self_: &Tensor,
    other: Scalar,
    rounding_mode: Option<&str>,
) -> Result<Tensor> {
    ops::div_Tensor_mode(self_, &Tensor::wrapped_number(other), rounding_mode)
}

/// `div_.Scalar_mode`: `self` divided in place by a number with the rounding
/// mode (PyTorch's goes through `div_.Tensor_mode`, which is not declared
/// here; this is the same computation, on the shared binary engine).
#[kernel(CompositeExplicitAutograd)]
pub fn div__Scalar_mode(
    self_: &mut Tensor,
    other: Scalar,
    rounding_mode: Option<&str>,
) -> Result<Tensor> {
    let op = pointwise::div_mode(rounding_mode)?;
    let (a, b) = (Operand::Tensor(self_), Operand::Scalar(other));
    pointwise::binary(op, a, b, Scalar::Int(1), Dest::Inplace)
}
