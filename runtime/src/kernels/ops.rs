//! The operator calls composite kernels make, in one place.
//!
//! CompositeImplicitAutograd kernels (`matmul`, `reshape`, `contiguous`,
//! `to.dtype`) and the CompositeExplicitAutograd kernels that decompose (`abs`,
//! `clone`, `stack`, `sum`, …) call other operators only through these functions,
//! and these go through the dispatcher (`crate::at`: dispatched, without the
//! function-level protocol, as C++'s `at::`), so the decomposition runs on any
//! backend and is seen by every dispatch layer.

#![allow(non_snake_case)]

use crate::at as op;
use crate::error::Result;
use crate::tensor::{DType, Device, Layout, MemoryFormat, Tensor};

/// `aten::view`
pub(crate) fn view(self_: &Tensor, size: &[i64]) -> Result<Tensor> {
    op::view(self_, size)
}

/// `aten::reshape`
pub(crate) fn reshape(self_: &Tensor, shape: &[i64]) -> Result<Tensor> {
    op::reshape(self_, shape)
}

/// `aten::mm`
pub(crate) fn mm(self_: &Tensor, mat2: &Tensor) -> Result<Tensor> {
    op::mm(self_, mat2)
}

/// `aten::dot`
pub(crate) fn dot(self_: &Tensor, tensor: &Tensor) -> Result<Tensor> {
    op::dot(self_, tensor)
}

/// `aten::mv`
pub(crate) fn mv(self_: &Tensor, vec: &Tensor) -> Result<Tensor> {
    op::mv(self_, vec)
}

/// `aten::_unsafe_view`
pub(crate) fn _unsafe_view(self_: &Tensor, size: &[i64]) -> Result<Tensor> {
    op::_unsafe_view(self_, size)
}

/// `aten::squeeze_.dim`
pub(crate) fn squeeze__dim(self_: &mut Tensor, dim: i64) -> Result<Tensor> {
    op::squeeze__dim(self_, dim)
}

/// `aten::bmm`
pub(crate) fn bmm(self_: &Tensor, mat2: &Tensor) -> Result<Tensor> {
    op::bmm(self_, mat2)
}

/// `aten::unsqueeze`
pub(crate) fn unsqueeze(self_: &Tensor, dim: i64) -> Result<Tensor> {
    op::unsqueeze(self_, dim)
}

/// `aten::squeeze.dim`
pub(crate) fn squeeze_dim(self_: &Tensor, dim: i64) -> Result<Tensor> {
    op::squeeze_dim(self_, dim)
}

/// `aten::transpose.int`
pub(crate) fn transpose_int(self_: &Tensor, dim0: i64, dim1: i64) -> Result<Tensor> {
    op::transpose_int(self_, dim0, dim1)
}

/// `aten::t`
pub(crate) fn t(self_: &Tensor) -> Result<Tensor> {
    op::t(self_)
}

/// `aten::expand`
pub(crate) fn expand(self_: &Tensor, size: &[i64]) -> Result<Tensor> {
    op::expand(self_, size, false)
}

/// `aten::cat`
pub(crate) fn cat(tensors: &[Tensor], dim: i64) -> Result<Tensor> {
    op::cat(tensors, dim)
}

/// `aten::cat.out`
pub(crate) fn cat_out(tensors: &[Tensor], dim: i64, out: &mut Tensor) -> Result<Tensor> {
    op::cat_out(tensors, dim, out)
}

/// `aten::copy_`
pub(crate) fn copy_(self_: &Tensor, src: &Tensor) -> Result<Tensor> {
    op::copy_(&mut self_.clone(), src, false)
}

/// `aten::clone`
pub(crate) fn clone(self_: &Tensor, memory_format: Option<MemoryFormat>) -> Result<Tensor> {
    op::clone(self_, memory_format)
}

/// `aten::contiguous`
pub(crate) fn contiguous(self_: &Tensor) -> Result<Tensor> {
    op::contiguous(self_, MemoryFormat::Contiguous)
}

/// `aten::empty.memory_format`
pub(crate) fn empty_memory_format(
    size: &[i64],
    dtype: Option<DType>,
    device: Option<Device>,
    memory_format: Option<MemoryFormat>,
) -> Result<Tensor> {
    op::empty_memory_format(size, dtype, None, device, None, memory_format)
}

/// `aten::_to_copy`
pub(crate) fn _to_copy(
    self_: &Tensor,
    dtype: Option<DType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
    non_blocking: bool,
    memory_format: Option<MemoryFormat>,
) -> Result<Tensor> {
    op::_to_copy(
        self_,
        dtype,
        layout,
        device,
        pin_memory,
        non_blocking,
        memory_format,
    )
}

/// `aten::empty_strided` (not in this project's YAML: a runtime primitive).
pub(crate) fn empty_strided(
    size: &[usize],
    stride: &[usize],
    dtype: DType,
    device: Device,
) -> Result<Tensor> {
    super::empty_strided(size, stride, dtype, device)
}

/// `aten::abs.out`
pub(crate) fn abs_out(self_: &Tensor, out: &mut Tensor) -> Result<Tensor> {
    op::abs_out(self_, out)
}

/// `aten::sum.dim_IntList`
pub(crate) fn sum_dim_IntList(
    self_: &Tensor,
    dim: Option<&[i64]>,
    keepdim: bool,
    dtype: Option<DType>,
) -> Result<Tensor> {
    op::sum_dim_IntList(self_, dim, keepdim, dtype)
}

/// `aten::mean.dim`
pub(crate) fn mean_dim(
    self_: &Tensor,
    dim: Option<&[i64]>,
    keepdim: bool,
    dtype: Option<DType>,
) -> Result<Tensor> {
    op::mean_dim(self_, dim, keepdim, dtype)
}

/// `aten::mean.out`
pub(crate) fn mean_out(
    self_: &Tensor,
    dim: Option<&[i64]>,
    keepdim: bool,
    dtype: Option<DType>,
    out: &mut Tensor,
) -> Result<Tensor> {
    op::mean_out(self_, dim, keepdim, dtype, out)
}

/// `aten::var.correction`
pub(crate) fn var_correction(
    self_: &Tensor,
    dim: Option<&[i64]>,
    correction: Option<crate::tensor::Scalar>,
    keepdim: bool,
) -> Result<Tensor> {
    op::var_correction(self_, dim, correction, keepdim)
}

/// `aten::var.correction_out`
pub(crate) fn var_correction_out(
    self_: &Tensor,
    dim: Option<&[i64]>,
    correction: Option<crate::tensor::Scalar>,
    keepdim: bool,
    out: &mut Tensor,
) -> Result<Tensor> {
    op::var_correction_out(self_, dim, correction, keepdim, out)
}

/// `aten::fill_.Scalar`
pub(crate) fn fill__Scalar(self_: &mut Tensor, value: crate::tensor::Scalar) -> Result<Tensor> {
    op::fill__Scalar(self_, value)
}

/// `aten::abs`
pub(crate) fn abs(self_: &Tensor) -> Result<Tensor> {
    op::abs(self_)
}

/// `aten::eq.Scalar`
pub(crate) fn eq_Scalar(self_: &Tensor, other: crate::tensor::Scalar) -> Result<Tensor> {
    op::eq_Scalar(self_, other)
}

/// `aten::logical_not.out`
pub(crate) fn logical_not_out(self_: &Tensor, out: &mut Tensor) -> Result<Tensor> {
    op::logical_not_out(self_, out)
}

/// `aten::gt.Scalar`
pub(crate) fn gt_Scalar(self_: &Tensor, other: crate::tensor::Scalar) -> Result<Tensor> {
    op::gt_Scalar(self_, other)
}

/// `aten::le.Scalar`
pub(crate) fn le_Scalar(self_: &Tensor, other: crate::tensor::Scalar) -> Result<Tensor> {
    op::le_Scalar(self_, other)
}

/// `aten::lt.Scalar`
pub(crate) fn lt_Scalar(self_: &Tensor, other: crate::tensor::Scalar) -> Result<Tensor> {
    op::lt_Scalar(self_, other)
}

/// `aten::sub.Tensor`
pub(crate) fn sub_Tensor(
    self_: &Tensor,
    other: &Tensor,
    alpha: crate::tensor::Scalar,
) -> Result<Tensor> {
    op::sub_Tensor(self_, other, alpha)
}

/// `aten::where.self`
pub(crate) fn where_self(condition: &Tensor, self_: &Tensor, other: &Tensor) -> Result<Tensor> {
    op::where_self(condition, self_, other)
}

/// `aten::zeros_like`
pub(crate) fn zeros_like(
    self_: &Tensor,
    dtype: Option<DType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
    memory_format: Option<MemoryFormat>,
) -> Result<Tensor> {
    op::zeros_like(self_, dtype, layout, device, pin_memory, memory_format)
}

/// `aten::select.int`
pub(crate) fn select_int(self_: &Tensor, dim: i64, index: i64) -> Result<Tensor> {
    op::select_int(self_, dim, index)
}

/// `aten::slice.Tensor`
pub(crate) fn slice_Tensor(
    self_: &Tensor,
    dim: i64,
    start: Option<i64>,
    end: Option<i64>,
    step: i64,
) -> Result<Tensor> {
    op::slice_Tensor(self_, dim, start, end, step)
}

/// `aten::normal_`
pub(crate) fn normal_(
    self_: &Tensor,
    mean: f64,
    std: f64,
    generator: Option<&crate::tensor::Generator>,
) -> Result<Tensor> {
    op::normal_(&mut self_.clone(), mean, std, generator)
}

/// `aten::as_strided`
pub(crate) fn as_strided(
    self_: &Tensor,
    size: &[i64],
    stride: &[i64],
    storage_offset: Option<i64>,
) -> Result<Tensor> {
    op::as_strided(self_, size, stride, storage_offset)
}

/// `aten::diagonal`
pub(crate) fn diagonal(self_: &Tensor, offset: i64, dim1: i64, dim2: i64) -> Result<Tensor> {
    op::diagonal(self_, offset, dim1, dim2)
}

/// `aten::logical_and.out`
pub(crate) fn logical_and_out(self_: &Tensor, other: &Tensor, out: &mut Tensor) -> Result<Tensor> {
    op::logical_and_out(self_, other, out)
}

/// `aten::logical_or.out`
pub(crate) fn logical_or_out(self_: &Tensor, other: &Tensor, out: &mut Tensor) -> Result<Tensor> {
    op::logical_or_out(self_, other, out)
}

/// `aten::logical_xor.out`
pub(crate) fn logical_xor_out(self_: &Tensor, other: &Tensor, out: &mut Tensor) -> Result<Tensor> {
    op::logical_xor_out(self_, other, out)
}

/// `aten::bitwise_and.Tensor`
pub(crate) fn bitwise_and_Tensor(self_: &Tensor, other: &Tensor) -> Result<Tensor> {
    op::bitwise_and_Tensor(self_, other)
}

/// `aten::bitwise_and_.Tensor`
pub(crate) fn bitwise_and__Tensor(self_: &mut Tensor, other: &Tensor) -> Result<Tensor> {
    op::bitwise_and__Tensor(self_, other)
}

/// `aten::bitwise_and.Tensor_out`
pub(crate) fn bitwise_and_Tensor_out(
    self_: &Tensor,
    other: &Tensor,
    out: &mut Tensor,
) -> Result<Tensor> {
    op::bitwise_and_Tensor_out(self_, other, out)
}

/// `aten::bitwise_or.Tensor`
pub(crate) fn bitwise_or_Tensor(self_: &Tensor, other: &Tensor) -> Result<Tensor> {
    op::bitwise_or_Tensor(self_, other)
}

/// `aten::bitwise_or_.Tensor`
pub(crate) fn bitwise_or__Tensor(self_: &mut Tensor, other: &Tensor) -> Result<Tensor> {
    op::bitwise_or__Tensor(self_, other)
}

/// `aten::bitwise_or.Tensor_out`
pub(crate) fn bitwise_or_Tensor_out(
    self_: &Tensor,
    other: &Tensor,
    out: &mut Tensor,
) -> Result<Tensor> {
    op::bitwise_or_Tensor_out(self_, other, out)
}

/// `aten::bitwise_xor.Tensor`
pub(crate) fn bitwise_xor_Tensor(self_: &Tensor, other: &Tensor) -> Result<Tensor> {
    op::bitwise_xor_Tensor(self_, other)
}

/// `aten::bitwise_xor_.Tensor`
pub(crate) fn bitwise_xor__Tensor(self_: &mut Tensor, other: &Tensor) -> Result<Tensor> {
    op::bitwise_xor__Tensor(self_, other)
}

/// `aten::bitwise_xor.Tensor_out`
pub(crate) fn bitwise_xor_Tensor_out(
    self_: &Tensor,
    other: &Tensor,
    out: &mut Tensor,
) -> Result<Tensor> {
    op::bitwise_xor_Tensor_out(self_, other, out)
}

/// `aten::fmod.Tensor`
pub(crate) fn fmod_Tensor(self_: &Tensor, other: &Tensor) -> Result<Tensor> {
    op::fmod_Tensor(self_, other)
}

/// `aten::fmod_.Tensor`
pub(crate) fn fmod__Tensor(self_: &mut Tensor, other: &Tensor) -> Result<Tensor> {
    op::fmod__Tensor(self_, other)
}

/// `aten::fmod.Tensor_out`
pub(crate) fn fmod_Tensor_out(self_: &Tensor, other: &Tensor, out: &mut Tensor) -> Result<Tensor> {
    op::fmod_Tensor_out(self_, other, out)
}

/// `aten::remainder.Tensor`
pub(crate) fn remainder_Tensor(self_: &Tensor, other: &Tensor) -> Result<Tensor> {
    op::remainder_Tensor(self_, other)
}

/// `aten::remainder_.Tensor`
pub(crate) fn remainder__Tensor(self_: &mut Tensor, other: &Tensor) -> Result<Tensor> {
    op::remainder__Tensor(self_, other)
}

/// `aten::remainder.Tensor_out`
pub(crate) fn remainder_Tensor_out(
    self_: &Tensor,
    other: &Tensor,
    out: &mut Tensor,
) -> Result<Tensor> {
    op::remainder_Tensor_out(self_, other, out)
}

/// `aten::div.Tensor_mode`
pub(crate) fn div_Tensor_mode(
    self_: &Tensor,
    other: &Tensor,
    rounding_mode: Option<&str>,
) -> Result<Tensor> {
    op::div_Tensor_mode(self_, other, rounding_mode)
}
