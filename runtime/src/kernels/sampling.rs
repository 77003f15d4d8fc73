//! Random factories: `rand`, `randn` and their `_like` forms, drawn from a
//! [`Generator`] (the default CPU generator unless one is given) as PyTorch's
//! CPU kernels draw them (the arithmetic is in [`crate::random`]):
//!
//! - uniform (`rand`): one draw per element in memory order (a serial
//!   `TensorIterator` loop), float32 from one 32-bit draw, float64 from a
//!   64-bit draw;
//! - normal (`randn`, `normal_kernel`): a contiguous tensor of at least 16
//!   elements is filled by `normal_fill` (all uniforms first, Box–Muller over
//!   blocks of 16, the last 16 drawn again when the length is not a multiple of
//!   16); any other tensor element by element from `normal_distribution<double>`
//!   (the generator's cached second sample included), rounded to the dtype.

use super::{check_sizes, dispatch_error, empty_strided};
use crate::error::Result;
use crate::random::{self, CpuGenerator};
use crate::tensor::{alloc as memory, is_contiguous_strides, DType, Device, Generator, Tensor};

/// What to draw.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Dist {
    /// `uniform_(0, 1)`.
    Uniform,
    /// `normal_(0, 1)`.
    Normal,
}

impl Dist {
    /// The kernel name PyTorch's dtype check reports.
    fn kernel_name(self) -> &'static str {
        match self {
            Dist::Uniform => "check_uniform_bounds",
            Dist::Normal => "normal_kernel_cpu",
        }
    }
}

/// `rand(size)` / `randn(size)`: a new contiguous tensor (float32 unless a
/// dtype is given) filled from `generator` or the default generator.
pub(crate) fn random_factory(
    dist: Dist,
    size: &[i64],
    generator: Option<&Generator>,
    dtype: Option<DType>,
    device: Device,
) -> Result<Tensor> {
    let shape = check_sizes(size)?;
    let strides = crate::tensor::contiguous_strides(&shape);
    sample(
        dist,
        &shape,
        &strides,
        dtype.unwrap_or(DType::Float32),
        device,
        generator,
    )
}

/// A new tensor of `shape` and (dense) `strides` filled with `dist`.
pub(crate) fn sample(
    dist: Dist,
    shape: &[usize],
    strides: &[usize],
    dtype: DType,
    device: Device,
    generator: Option<&Generator>,
) -> Result<Tensor> {
    if !matches!(dtype, DType::Float32 | DType::Float64) {
        return Err(dispatch_error(dist.kernel_name(), dtype));
    }
    if let Some(g) = generator {
        crate::ensure!(
            device == Device::Meta || g.device() == Device::Cpu,
            "Expected a 'cpu' device type for generator but found '{}'",
            g.device()
        );
    }
    let t = empty_strided(shape, strides, dtype, device)?;
    if device == Device::Meta || t.numel() == 0 {
        return Ok(t);
    }
    let n = t.numel();
    let contiguous = is_contiguous_strides(shape, strides);
    let g = generator.unwrap_or(Generator::default_cpu());
    // A dense tensor's storage holds its elements once each, in memory order:
    // the order of PyTorch's serial loop.
    let storage = g.with_state(|g| -> Result<Tensor> {
        Ok(match dtype {
            DType::Float32 => Tensor::from_vec(draw_f32(dist, g, n, contiguous)?, &[n])?,
            _ => Tensor::from_vec(draw_f64(dist, g, n, contiguous)?, &[n])?,
        })
    })?;
    storage.as_strided(shape, strides, 0)
}

fn draw_f32(dist: Dist, g: &mut CpuGenerator, n: usize, contiguous: bool) -> Result<Vec<f32>> {
    match dist {
        Dist::Uniform => memory::try_collect(n, std::iter::repeat_with(|| g.uniform_f32())),
        Dist::Normal if n >= 16 && contiguous => {
            let mut v = memory::try_collect(n, std::iter::repeat(0.0f32))?;
            random::normal_fill(
                &mut v,
                || g.uniform_f32(),
                |b| random::normal_fill_16_f32(b, 0.0, 1.0),
            );
            Ok(v)
        }
        Dist::Normal => {
            memory::try_collect(n, std::iter::repeat_with(|| g.normal_f64(0.0, 1.0) as f32))
        }
    }
}

fn draw_f64(dist: Dist, g: &mut CpuGenerator, n: usize, contiguous: bool) -> Result<Vec<f64>> {
    match dist {
        Dist::Uniform => memory::try_collect(n, std::iter::repeat_with(|| g.uniform_f64())),
        Dist::Normal if n >= 16 && contiguous => {
            let mut v = memory::try_collect(n, std::iter::repeat(0.0f64))?;
            random::normal_fill(
                &mut v,
                || g.uniform_f64(),
                |b| random::normal_fill_16_f64(b, 0.0, 1.0),
            );
            Ok(v)
        }
        Dist::Normal => memory::try_collect(n, std::iter::repeat_with(|| g.normal_f64(0.0, 1.0))),
    }
}

/// The `rand` / `randn` factory kernels (plain and `.generator` overloads) of
/// one backend: `random_factories!(CPU, Cpu)` in `cpu.rs`, `(Meta, Meta)` in
/// `meta.rs` (which draws nothing). Layout and pin_memory are accepted and
/// ignored, as the other factories do.
macro_rules! random_factories {
    ($key:ident, $device:ident) => {
        /// `rand`: uniform in `[0, 1)` from the default generator.
        #[kernel($key)]
        pub fn rand(
            size: &[i64],
            dtype: Option<DType>,
            layout: Option<Layout>,
            device: Option<Device>,
            pin_memory: Option<bool>,
        ) -> Result<Tensor> {
            rand_generator(size, None, dtype, layout, device, pin_memory)
        }

        /// `rand.generator`.
        #[kernel($key)]
        pub fn rand_generator(
            size: &[i64],
            generator: Option<&crate::Generator>,
            dtype: Option<DType>,
            layout: Option<Layout>,
            device: Option<Device>,
            pin_memory: Option<bool>,
        ) -> Result<Tensor> {
            let _ = (layout, device, pin_memory);
            $crate::kernels::sampling::random_factory(
                $crate::kernels::sampling::Dist::Uniform,
                size,
                generator,
                dtype,
                Device::$device,
            )
        }

        /// `randn`: standard normal from the default generator.
        #[kernel($key)]
        pub fn randn(
            size: &[i64],
            dtype: Option<DType>,
            layout: Option<Layout>,
            device: Option<Device>,
            pin_memory: Option<bool>,
        ) -> Result<Tensor> {
            randn_generator(size, None, dtype, layout, device, pin_memory)
        }

        /// `randn.generator`.
        #[kernel($key)]
        pub fn randn_generator(
            size: &[i64],
            generator: Option<&crate::Generator>,
            dtype: Option<DType>,
            layout: Option<Layout>,
            device: Option<Device>,
            pin_memory: Option<bool>,
        ) -> Result<Tensor> {
            let _ = (layout, device, pin_memory);
            $crate::kernels::sampling::random_factory(
                $crate::kernels::sampling::Dist::Normal,
                size,
                generator,
                dtype,
                Device::$device,
            )
        }
    };
}
pub(crate) use random_factories;
