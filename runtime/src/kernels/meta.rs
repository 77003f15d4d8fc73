//! `Meta:` kernels: shapes, dtypes, strides and the same shape/dtype errors as
//! the CPU kernels, on meta tensors, computing nothing. The kernels shared with
//! CPU are stamped by `backend_kernels!` (in `kernels/backend.rs`); the rest are the
//! meta twins of composite factories and `stack`.

#![allow(non_snake_case)]

super::backend::backend_kernels!(Meta);

/// `arange` (Meta): the composite kernel on the meta device.
#[kernel(Meta)]
pub fn arange(
    end: Scalar,
    dtype: Option<DType>,
    layout: Option<Layout>,
    _device: Option<Device>,
    pin_memory: Option<bool>,
) -> Result<Tensor> {
    super::composite::arange(end, dtype, layout, Some(Device::Meta), pin_memory)
}

/// `arange.start` (Meta): the composite kernel on the meta device.
#[kernel(Meta)]
pub fn arange_start(
    start: Scalar,
    end: Scalar,
    dtype: Option<DType>,
    layout: Option<Layout>,
    _device: Option<Device>,
    pin_memory: Option<bool>,
) -> Result<Tensor> {
    super::composite::arange_start(start, end, dtype, layout, Some(Device::Meta), pin_memory)
}

/// `arange.start_step` (Meta): the composite kernel on the meta device.
#[kernel(Meta)]
pub fn arange_start_step(
    start: Scalar,
    end: Scalar,
    step: Scalar,
    dtype: Option<DType>,
    layout: Option<Layout>,
    _device: Option<Device>,
    pin_memory: Option<bool>,
) -> Result<Tensor> {
    super::composite::arange_start_step(
        start,
        end,
        step,
        dtype,
        layout,
        Some(Device::Meta),
        pin_memory,
    )
}

/// `ones` (Meta).
#[kernel(Meta)]
pub fn ones(
    size: &[i64],
    dtype: Option<DType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
) -> Result<Tensor> {
    let _ = (layout, device, pin_memory);
    factory::ones(size, dtype, Some(Device::Meta))
}

/// `stack` (Meta): the composite decomposition, on meta tensors.
#[kernel(Meta)]
pub fn stack(tensors: &[Tensor], dim: i64) -> Result<Tensor> {
    super::composite::stack(tensors, dim)
}

super::sampling::random_factories!(Meta, Meta);

/// `copy(self, src, non_blocking)` (PyTorch's `copy_meta`): the composite
/// kernel, on meta tensors.
#[kernel(Meta)]
pub fn copy(self_: &Tensor, src: &Tensor, non_blocking: bool) -> Result<Tensor> {
    super::composite::copy(self_, src, non_blocking)
}
