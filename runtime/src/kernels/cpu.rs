//! `CPU:` kernels: one function per `cpu::<ident>` named in
//! `native_functions.yaml`, stamped by
//! `backend_kernels!` (in `kernels/backend.rs`) together with their meta twins.

#![allow(non_snake_case)]

super::backend::backend_kernels!(CPU);

use crate::kernels::sampling::{self, Dist};
use crate::Generator;

/// `rand` (CPU): uniform in `[0, 1)` from the default generator.
#[kernel(CPU)]
pub fn rand(
    size: &[i64],
    dtype: Option<DType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
) -> Result<Tensor> {
    let _ = (layout, device, pin_memory);
    sampling::random_factory(Dist::Uniform, size, None, dtype, Device::Cpu)
}

/// `rand.generator` (CPU).
#[kernel(CPU)]
pub fn rand_generator(
    size: &[i64],
    generator: Option<&Generator>,
    dtype: Option<DType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
) -> Result<Tensor> {
    let _ = (layout, device, pin_memory);
    sampling::random_factory(Dist::Uniform, size, generator, dtype, Device::Cpu)
}

/// `randn` (CPU): standard normal from the default generator.
#[kernel(CPU)]
pub fn randn(
    size: &[i64],
    dtype: Option<DType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
) -> Result<Tensor> {
    let _ = (layout, device, pin_memory);
    sampling::random_factory(Dist::Normal, size, None, dtype, Device::Cpu)
}

/// `randn.generator` (CPU).
#[kernel(CPU)]
pub fn randn_generator(
    size: &[i64],
    generator: Option<&Generator>,
    dtype: Option<DType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
) -> Result<Tensor> {
    let _ = (layout, device, pin_memory);
    sampling::random_factory(Dist::Normal, size, generator, dtype, Device::Cpu)
}
