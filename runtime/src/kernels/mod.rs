//! Kernels: the plain Rust functions behind every operator in
//! `native_functions.yaml`, named exactly as its `dispatch:` entries name them.
//!
//! - [`cpu`]: `CPU:` kernels (`cpu::add_Tensor`, …).
//! - [`meta`]: `Meta:` kernels: the same checks, output shapes, dtypes and
//!   strides, on meta tensors, without computing anything.
//! - [`composite`]: `CompositeExplicitAutograd:` kernels (run on every backend)
//!   and the CompositeImplicitAutograd kernels of entries without `dispatch:`
//!   (`matmul`, `reshape`, `contiguous`, `to.dtype`), which are written only in
//!   terms of other operators, called through `kernels::ops` (crate-internal).
//!
//! Signatures follow the schema → Rust mapping of [`crate::value`]: parameters
//! in schema order, named as in the schema (`self` → `self_`), `Tensor(a!)` as
//! `&mut Tensor`; in-place kernels return a clone of the `self_` handle and
//! `out=` kernels the `out` handle. Every kernel returns [`crate::Result`]; bad
//! input is an error worded like PyTorch's, never a panic.
//!
//! The operator families live in their own modules, each device-agnostic (a
//! meta input yields a meta output and skips the arithmetic): [`promote`] (type
//! promotion and broadcasting), `pointwise`, `reduce`, `views`, `shape` (cat,
//! index_select), `linalg` (mm, bmm and matmul over the
//! `gemm` engine), `factory`, `sampling` (`rand`/`randn` and their `_like`
//! forms, `uniform_`/`normal_`, drawn as PyTorch's CPU kernels draw them),
//! `nn` (softmax / log_softmax and their backward, the nll and mse losses,
//! `addmm`, and the optimizers' `lerp` / `addcmul` / `addcdiv` with PyTorch's
//! element formulas), `copy` and `layout`
//! (strides of memory formats). Per-dtype code is stamped with `with_dtype!` over the generic
//! arithmetic of `num`. `backend` stamps the kernels shared by `cpu` and
//! `meta` from one list (`backend_kernels!(CPU)` / `backend_kernels!(Meta)`),
//! each function carrying its operator name, so registration can be added in
//! that one place.
//!
//! Allocation goes through `crate::tensor::alloc` (`check_alloc`, `alloc`,
//! `empty_strided`, the tensor constructors' `try_` forms): a size beyond the
//! allocation limit is an error with PyTorch's allocator message, not an aborted
//! process, and inputs are read in place (reductions, fills) rather than copied
//! where a copy could be larger than the result. Writes check memory overlap
//! first ([`overlap`]), as `TensorIterator`, `copy_`, `cat` and `index_select`
//! do.

pub mod composite;
pub mod cpu;
pub mod meta;
pub(crate) mod ops;
pub mod promote;
/// The higher-order operators of custom classes (`call_torchbind`,
/// `with_effects`): their kernels are `crate::classes::torchbind`'s, the
/// layer that runs a method; the YAML names them here.
pub(crate) mod torchbind {
    pub(crate) use crate::classes::torchbind::*;
}

mod activation;
mod backend;
mod copy;
mod factory;
mod gemm;
pub(crate) mod iter;
mod layout;
mod linalg;
mod nn;
mod num;
mod optim;
pub mod overlap;
mod pointwise;
mod reduce;
mod sampling;
mod shape;
mod views;
pub(crate) mod vmath;

use crate::error::{Error, Result};
use crate::tensor::{alloc as memory, DType, Device, Element, Scalar, Tensor};

/// Formats a shape as PyTorch prints `IntArrayRef`s: `[2, 3]`.
pub(crate) fn fmt_shape(s: &[usize]) -> String {
    format!("{s:?}")
}

/// Formats a list of ints: `[2, -1]`.
pub(crate) fn fmt_ints(s: &[i64]) -> String {
    format!("{s:?}")
}

/// An error PyTorch raises as `NotImplementedError` (unsupported dtype):
/// [`Error::NotImplemented`] with PyTorch's message.
pub(crate) fn not_implemented(msg: impl Into<String>) -> Error {
    Error::NotImplemented(crate::Message::from(msg.into()))
}

/// `"name" not implemented for 'Dtype'`, as `AT_DISPATCH_*` reports it.
pub(crate) fn dispatch_error(name: &str, dtype: DType) -> Error {
    not_implemented(format!(
        "\"{name}\" not implemented for '{}'",
        dtype.c10_name()
    ))
}

/// An `IndexError`.
pub(crate) fn index_error(msg: impl Into<String>) -> Error {
    Error::Index(crate::Message::from(msg.into()))
}

pub(crate) use crate::shape::wrap_dim;

/// Checks factory sizes: `Trying to create tensor with negative dimension -1: [2, -1]`.
pub(crate) fn check_sizes(size: &[i64]) -> Result<crate::tensor::Dims> {
    if let Some(&d) = size.iter().find(|&&d| d < 0) {
        crate::bail!(
            "Trying to create tensor with negative dimension {d}: {}",
            fmt_ints(size)
        );
    }
    Ok(size.iter().map(|&d| d as usize).collect())
}

/// The C++ type name `Scalar::to<T>()` reports in overflow errors.
fn cpp_type_name(d: DType) -> &'static str {
    match d {
        DType::Bool => "bool",
        DType::Int32 => "int",
        DType::Int64 => "int64_t",
        DType::Float32 => "float",
        DType::Float64 => "double",
    }
}

/// `Scalar::to<T>()`: a checked conversion ("value cannot be converted to type
/// int without overflow"); conversions to bool never fail.
pub(crate) fn scalar_to<T: Element>(s: Scalar) -> Result<T> {
    let ok = match (T::DTYPE, s) {
        (DType::Bool, _) | (_, Scalar::Bool(_)) => true,
        (DType::Int32, Scalar::Int(i)) => i32::try_from(i).is_ok(),
        (DType::Int32, Scalar::Float(x)) => x >= i32::MIN as f64 && x <= i32::MAX as f64,
        (DType::Int64, Scalar::Float(x)) => x >= i64::MIN as f64 && x <= i64::MAX as f64,
        (DType::Float32, Scalar::Float(x)) => !x.is_finite() || x.abs() <= f32::MAX as f64,
        _ => true,
    };
    crate::ensure!(
        ok,
        "value cannot be converted to type {} without overflow",
        cpp_type_name(T::DTYPE)
    );
    Ok(T::from_scalar(s))
}

/// Meta if any of the tensors is on the meta device.
pub(crate) fn common_device<'a>(ts: impl IntoIterator<Item = &'a Tensor>) -> Device {
    if ts.into_iter().any(|t| t.device() == Device::Meta) {
        Device::Meta
    } else {
        Device::Cpu
    }
}

/// Checks that a tensor of `shape` can be allocated before computing it: its
/// byte count fits `int64` (every device), its contiguous strides too
/// (`crate::tensor::check_sizes_product`: an empty broadcast of valid shapes
/// may multiply beyond it) and, on the CPU, the allocation limit
/// (`crate::tensor::alloc`).
pub(crate) fn check_alloc(shape: &[usize], dtype: DType, device: Device) -> Result<()> {
    let bytes = memory::storage_nbytes(shape, dtype.itemsize())?;
    crate::tensor::check_sizes_product(shape)?;
    if device == Device::Cpu {
        memory::check_bytes(bytes)?;
    }
    Ok(())
}

/// A new zero-filled contiguous tensor, allocated fallibly.
pub(crate) fn alloc(shape: &[usize], dtype: DType, device: Device) -> Result<Tensor> {
    Tensor::try_zeros(shape, dtype, device)
}

/// `at::native::resize_output`: resizes `out` (to contiguous strides) unless it
/// already has the shape.
pub(crate) fn resize_output(out: &Tensor, shape: &[usize]) -> Result<()> {
    if out.shape() != shape {
        check_alloc(shape, out.dtype(), out.device())?;
        out.resize_(shape)?;
    }
    Ok(())
}

/// torchgen's `resize_out_helper` (what a generated out= kernel calls before
/// copying its result into `out`): `at::native::resize_output` to the
/// result's shape, with PyTorch's warning when an `out` with elements is
/// resized.
pub(crate) fn resize_out_helper(out: &Tensor, result: &Tensor) -> Result<()> {
    let shape = result.shape();
    if out.shape() != shape && out.numel() != 0 {
        crate::warnings::warn(&format!(
            "An output with one or more elements was resized since it had shape {}, which does not match the required output shape {}. This behavior is deprecated, and in a future PyTorch release outputs will not be resized unless they have zero elements. You can explicitly reuse an out tensor t by resizing it, inplace, to zero elements with t.resize_(0).",
            fmt_shape(&out.shape()),
            fmt_shape(&shape)
        ));
    }
    resize_output(out, &shape)
}

/// torchgen's `copy_arg` (a generated out= kernel's copy of its result into
/// `out`): dtype and device must be the result's, then `out.copy_(result)`.
pub(crate) fn copy_arg(out: &Tensor, result: &Tensor) -> Result<()> {
    crate::ensure!(
        out.dtype() == result.dtype(),
        "Expected out tensor to have dtype {}, but got {} instead",
        result.dtype().typemeta_name(),
        out.dtype().typemeta_name()
    );
    crate::ensure!(
        out.device() == result.device(),
        "Expected out tensor to have device {}, but got {} instead",
        result.device(),
        out.device()
    );
    ops::copy_(out, result)?;
    Ok(())
}

/// For structured `out=` kernels whose output dtype is fixed:
/// `Expected out tensor to have dtype float, but got long int instead`.
pub(crate) fn check_out_dtype(out: &Tensor, want: DType) -> Result<()> {
    crate::ensure!(
        out.dtype() == want,
        "Expected out tensor to have dtype {}, but got {} instead",
        want.typemeta_name(),
        out.dtype().typemeta_name()
    );
    Ok(())
}

/// A new tensor with the given shape and strides over a fresh zeroed storage
/// (PyTorch's `empty_strided`; the memory is zeroed here, not uninitialised).
pub(crate) fn empty_strided(
    shape: &[usize],
    strides: &[usize],
    dtype: DType,
    device: Device,
) -> Result<Tensor> {
    Tensor::try_empty_strided(shape, strides, dtype, device)
}

/// Writes one value into every element of `t` (overlapping elements of an
/// expanded tensor included: filling is idempotent), converted to `t`'s dtype
/// with C++ cast rules ([`Tensor::try_fill`]).
pub(crate) fn fill_elements<T: Element>(t: &Tensor, value: T) -> Result<()> {
    let s = match T::DTYPE {
        DType::Bool => Scalar::Bool(value.to_bool()),
        DType::Int32 | DType::Int64 => Scalar::Int(value.to_i64()),
        DType::Float32 | DType::Float64 => Scalar::Float(value.to_f64()),
    };
    t.try_fill(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checked_scalar_conversions() {
        assert_eq!(scalar_to::<i64>(Scalar::Float(2.7)).unwrap(), 2);
        assert!(scalar_to::<bool>(Scalar::Int(5)).unwrap());
        assert_eq!(
            scalar_to::<i32>(Scalar::Int(1 << 40))
                .unwrap_err()
                .to_string(),
            "value cannot be converted to type int without overflow"
        );
        assert!(scalar_to::<i64>(Scalar::Float(f64::NAN)).is_err());
        assert!(scalar_to::<f32>(Scalar::Float(f64::INFINITY)).is_ok());
        assert!(scalar_to::<f32>(Scalar::Float(1e300)).is_err());
    }
}
