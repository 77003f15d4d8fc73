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

/// What to draw, with the distribution's parameters (`uniform_(from, to)`,
/// `normal_(mean, std)`).
#[derive(Clone, Copy, PartialEq, Debug)]
pub(crate) enum Draw {
    /// Uniform in `[from, to)`: `fma(u, to - from, from)` in the dtype, `u`
    /// the `[0, 1)` draw (PyTorch's `uniform_real`, contracted as its AVX2
    /// build does).
    Uniform {
        /// Lower bound.
        from: f64,
        /// Upper bound (excluded).
        to: f64,
    },
    /// Normal: `fma(z, std, mean)`, `z` the standard draw.
    Normal {
        /// Mean.
        mean: f64,
        /// Standard deviation (at least 0).
        std: f64,
    },
}

impl From<Dist> for Draw {
    fn from(d: Dist) -> Draw {
        match d {
            Dist::Uniform => Draw::Uniform { from: 0.0, to: 1.0 },
            Dist::Normal => Draw::Normal {
                mean: 0.0,
                std: 1.0,
            },
        }
    }
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
    let dtype = dtype.unwrap_or(DType::Float32);
    // `empty`'s checks, in its order (the byte count, then the strides),
    // before the sampler's.
    memory::storage_nbytes(&shape, dtype.itemsize())?;
    let strides = super::layout::strides_for(&shape, crate::tensor::MemoryFormat::Contiguous)?;
    sample(dist, &shape, &strides, dtype, device, generator)
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
            DType::Float32 => Tensor::from_vec(draw_f32(dist.into(), g, n, contiguous)?, &[n])?,
            _ => Tensor::from_vec(draw_f64(dist.into(), g, n, contiguous)?, &[n])?,
        })
    })?;
    storage.strided_view(shape, strides, 0)
}

fn draw_f32(draw: Draw, g: &mut CpuGenerator, n: usize, contiguous: bool) -> Result<Vec<f32>> {
    match draw {
        Draw::Uniform { from, to } => {
            let (from, to) = (from as f32, to as f32);
            let d = to - from;
            memory::try_collect(
                n,
                std::iter::repeat_with(|| g.uniform_f32().mul_add(d, from)),
            )
        }
        Draw::Normal { mean, std } if n >= 16 && contiguous => {
            let mut v = memory::try_collect(n, std::iter::repeat(0.0f32))?;
            let (m, s) = (mean as f32, std as f32);
            random::normal_fill(
                &mut v,
                || g.uniform_f32(),
                |b| random::normal_fill_16_f32(b, m, s),
            );
            Ok(v)
        }
        Draw::Normal { mean, std } => {
            memory::try_collect(n, std::iter::repeat_with(|| g.normal_f64(mean, std) as f32))
        }
    }
}

fn draw_f64(draw: Draw, g: &mut CpuGenerator, n: usize, contiguous: bool) -> Result<Vec<f64>> {
    match draw {
        Draw::Uniform { from, to } => {
            let d = to - from;
            memory::try_collect(
                n,
                std::iter::repeat_with(|| g.uniform_f64().mul_add(d, from)),
            )
        }
        Draw::Normal { mean, std } if n >= 16 && contiguous => {
            let mut v = memory::try_collect(n, std::iter::repeat(0.0f64))?;
            random::normal_fill(
                &mut v,
                || g.uniform_f64(),
                |b| random::normal_fill_16_f64(b, mean, std),
            );
            Ok(v)
        }
        Draw::Normal { mean, std } => {
            memory::try_collect(n, std::iter::repeat_with(|| g.normal_f64(mean, std)))
        }
    }
}

/// `uniform_(self, from, to)` / `normal_(self, mean, std)`: `self`'s elements
/// drawn in place, with PyTorch's checks (`check_uniform_bounds`, `std >= 0`).
/// A contiguous `self` is drawn in order (a normal one of 16 or more elements
/// by `normal_fill`); any other in memory order (its dimensions by decreasing
/// stride), element by element, as `TensorIterator`'s serial loop visits it.
pub(crate) fn fill(self_: &Tensor, draw: Draw, generator: Option<&Generator>) -> Result<Tensor> {
    let dtype = self_.dtype();
    let kernel = match draw {
        Draw::Uniform { .. } => "check_uniform_bounds",
        Draw::Normal { .. } => "normal_kernel_cpu",
    };
    if !matches!(dtype, DType::Float32 | DType::Float64) {
        return Err(dispatch_error(kernel, dtype));
    }
    match draw {
        Draw::Uniform { from, to } => {
            let max = match dtype {
                DType::Float32 => f32::MAX as f64,
                _ => f64::MAX,
            };
            let name = dtype.typemeta_name();
            let bounds = -max..=max;
            crate::ensure!(bounds.contains(&from), "from is out of bounds for {name}");
            crate::ensure!(bounds.contains(&to), "to is out of bounds for {name}");
            crate::ensure!(
                from.partial_cmp(&to).is_some_and(|o| o.is_le()),
                "uniform_ expects to return a [from, to) range, but found from={from} > to={to}"
            );
            crate::ensure!(
                (to - from).partial_cmp(&max).is_some_and(|o| o.is_le()),
                "uniform_ expects to-from <= std::numeric_limits<{}>::max(), but found to={to} and from={from} which result in to-from to exceed the limit",
                dtype.c10_name()
            );
        }
        Draw::Normal { std, .. } => {
            crate::ensure!(
                std.partial_cmp(&0.0).is_some_and(|o| o.is_ge()),
                "normal expects std >= 0.0, but found std {std}"
            );
        }
    }
    if let Some(g) = generator {
        crate::ensure!(
            self_.device() == Device::Meta || g.device() == Device::Cpu,
            "Expected a 'cpu' device type for generator but found '{}'",
            g.device()
        );
    }
    let n = self_.numel();
    if self_.device() == Device::Meta || n == 0 {
        return Ok(self_.clone());
    }
    let contiguous = self_.is_contiguous();
    // The visiting order: dimensions by decreasing stride (stable).
    let (shape, strides) = (self_.shape(), self_.strides());
    let mut perm: Vec<usize> = (0..shape.len()).collect();
    if !contiguous {
        perm.sort_by(|&a, &b| strides[b].cmp(&strides[a]));
    }
    let permuted: Vec<usize> = perm.iter().map(|&d| shape[d]).collect();
    let g = generator.unwrap_or(Generator::default_cpu());
    let drawn = g.with_state(|g| -> Result<Tensor> {
        match dtype {
            DType::Float32 => Tensor::from_vec(draw_f32(draw, g, n, contiguous)?, &permuted),
            _ => Tensor::from_vec(draw_f64(draw, g, n, contiguous)?, &permuted),
        }
    })?;
    let dims: Vec<i64> = perm.iter().map(|&d| d as i64).collect();
    let mut view = crate::at::permute(self_, &dims)?;
    crate::at::copy_(&mut view, &drawn, false)?;
    Ok(self_.clone())
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
