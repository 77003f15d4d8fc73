//! Factories: `empty`, `zeros`, `ones`, `full` and `arange`, with PyTorch's dtype
//! inference (default float32, `full` from its fill value, `arange` int64 when
//! every bound is integral) and size checks.

use super::layout::strides_for;
use super::{
    alloc, check_sizes, dispatch_error, empty_strided, fill_elements, resize_output, scalar_to,
};
use crate::error::Result;
use crate::tensor::{alloc as memory, DType, Device, Element, MemoryFormat, Scalar, Tensor};
use crate::with_dtype;
use ndarray::{ArrayD, IxDyn};

/// `empty(size, dtype, device, memory_format)` (zero-filled here).
pub(crate) fn empty(
    size: &[i64],
    dtype: Option<DType>,
    device: Option<Device>,
    memory_format: Option<MemoryFormat>,
) -> Result<Tensor> {
    let shape = check_sizes(size)?;
    let format = memory_format.unwrap_or(MemoryFormat::Contiguous);
    crate::ensure!(
        format != MemoryFormat::Preserve,
        "unsupported memory format Preserve"
    );
    let dtype = dtype.unwrap_or(DType::Float32);
    // `empty_generic`'s order: the byte count, then the strides.
    memory::storage_nbytes(&shape, dtype.itemsize())?;
    let strides = strides_for(&shape, format)?;
    empty_strided(&shape, &strides, dtype, device.unwrap_or(Device::Cpu))
}

/// `empty_strided(size, stride, dtype)` on `device` (zero-filled here), with
/// PyTorch's checks in its order: negative sizes, the strides' count, then
/// the storage's extent (a negative stride included, as PyTorch's
/// `computeStorageNbytes` words it).
pub(crate) fn empty_strided_checked(
    size: &[i64],
    stride: &[i64],
    dtype: Option<DType>,
    device: Device,
) -> Result<Tensor> {
    let shape = check_sizes(size)?;
    crate::ensure!(
        size.len() == stride.len(),
        "dimensionality of sizes ({}) must match dimensionality of strides ({})",
        size.len(),
        stride.len()
    );
    if stride.iter().any(|&s| s < 0) {
        crate::bail!(
            "Storage size calculation overflowed with sizes={size:?} and strides={stride:?}"
        );
    }
    let strides: Vec<usize> = stride.iter().map(|&s| s as usize).collect();
    empty_strided(&shape, &strides, dtype.unwrap_or(DType::Float32), device)
}

/// `full(size, fill_value)`: the dtype defaults to bool / int64 / float32 after
/// the fill value; the value is converted with overflow checks.
pub(crate) fn full(
    size: &[i64],
    fill_value: Scalar,
    dtype: Option<DType>,
    device: Option<Device>,
) -> Result<Tensor> {
    let dtype = dtype.unwrap_or(fill_value.default_dtype());
    let t = empty(size, Some(dtype), device, None)?;
    with_dtype!(dtype, T => {
        let v: T = scalar_to(fill_value)?;
        fill_elements(&t, v)?;
    });
    Ok(t)
}

/// `zeros(size)`.
pub(crate) fn zeros(size: &[i64], dtype: Option<DType>, device: Option<Device>) -> Result<Tensor> {
    crate::ensure!(
        size.iter().all(|&d| d >= 0),
        "zeros: Dimension size must be non-negative."
    );
    empty(size, dtype, device, None)
}

/// `ones(size)`: float32 unless a dtype is given.
pub(crate) fn ones(size: &[i64], dtype: Option<DType>, device: Option<Device>) -> Result<Tensor> {
    full(
        size,
        Scalar::Int(1),
        Some(dtype.unwrap_or(DType::Float32)),
        device,
    )
}

/// Formats a double as C++ streams do by default (`%g`, 6 significant digits).
pub(crate) fn fmt_g(x: f64) -> String {
    if x.is_nan() {
        return "nan".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf" } else { "-inf" }.into();
    }
    if x == 0.0 {
        return if x.is_sign_negative() { "-0" } else { "0" }.into();
    }
    let exp = x.abs().log10().floor() as i32;
    let trim = |s: String| -> String {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s
        }
    };
    if !(-5..6).contains(&exp) {
        let s = format!("{:.5e}", x);
        let (mant, e) = s.split_once('e').unwrap_or((&s, "0"));
        let e: i32 = e.parse().unwrap_or(0);
        format!(
            "{}e{}{:02}",
            trim(mant.to_string()),
            if e < 0 { '-' } else { '+' },
            e.abs()
        )
    } else {
        trim(format!("{:.*}", (5 - exp).max(0) as usize, x))
    }
}

/// The bounds of an `arange`, converted to its accumulation type.
enum Acc {
    Int(i64, i64, i64),
    Float(f64, f64, f64),
}

/// `arange(start, end, step)`: checks, length and values; into `out` (resized
/// when its element count differs) or a new tensor.
pub(crate) fn arange(
    start: Scalar,
    end: Scalar,
    step: Scalar,
    dtype: Option<DType>,
    device: Option<Device>,
    out: Option<&Tensor>,
) -> Result<Tensor> {
    let dtype = match out {
        Some(o) => o.dtype(),
        None => dtype.unwrap_or(
            if [start, end, step].iter().all(|s| !s.is_floating_point()) {
                DType::Int64
            } else {
                DType::Float32
            },
        ),
    };
    let acc = match dtype {
        DType::Bool => return Err(dispatch_error("arange_cpu", dtype)),
        DType::Int32 | DType::Int64 => {
            Acc::Int(scalar_to(start)?, scalar_to(end)?, scalar_to(step)?)
        }
        DType::Float32 | DType::Float64 => Acc::Float(start.to_f64(), end.to_f64(), step.to_f64()),
    };
    let size_d = match acc {
        Acc::Int(s, e, st) => {
            crate::ensure!(st != 0, "step must be nonzero");
            crate::ensure!(
                st > 0 && e >= s || st < 0 && e <= s,
                "upper bound and lower bound inconsistent with step sign"
            );
            let integral = [start, end, step].iter().all(|s| !s.is_floating_point());
            if dtype == DType::Int64 && integral {
                // Exact for int64 bounds beyond double precision.
                let sgn = st.signum();
                e.wrapping_sub(s)
                    .wrapping_add(st)
                    .wrapping_sub(sgn)
                    .wrapping_div(st) as f64
            } else {
                ((end.to_f64() - start.to_f64()) / step.to_f64()).ceil()
            }
        }
        Acc::Float(s, e, st) => {
            crate::ensure!(st != 0.0 && !st.is_nan(), "step must be nonzero");
            crate::ensure!(
                s.is_finite() && e.is_finite(),
                "unsupported range: {} -> {}",
                fmt_g(s),
                fmt_g(e)
            );
            crate::ensure!(
                st > 0.0 && e >= s || st < 0.0 && e <= s,
                "upper bound and lower bound inconsistent with step sign"
            );
            ((e - s) / st).ceil()
        }
    };
    crate::ensure!(
        size_d >= 0.0 && size_d <= i64::MAX as f64,
        "invalid size, possible overflow?"
    );
    let size = size_d as usize;
    let result = match out {
        Some(o) => {
            if o.numel() != size {
                resize_output(o, &[size])?;
            }
            o.clone()
        }
        None => alloc(&[size], dtype, device.unwrap_or(Device::Cpu))?,
    };
    if result.device() == Device::Meta || size == 0 {
        return Ok(result);
    }
    let shape = result.shape();
    with_dtype!(dtype, T => {
        let vals: Vec<T> = match acc {
            Acc::Int(s, _, st) => memory::try_collect(
                size,
                (0..size as i64).map(|i| T::from_i64(s.wrapping_add(st.wrapping_mul(i)))),
            )?,
            Acc::Float(s, _, st) => {
                memory::try_collect(size, (0..size).map(|i| T::from_f64(s + st * i as f64)))?
            }
        };
        let a = ArrayD::from_shape_vec(IxDyn(&shape), vals)
            .map_err(|e| crate::Error::Runtime(format!("arange: {e}").into()))?;
        result.assign(a.view())?;
    });
    Ok(result)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpp_double_formatting() {
        assert_eq!(fmt_g(0.0), "0");
        assert_eq!(fmt_g(2.5), "2.5");
        assert_eq!(fmt_g(f64::INFINITY), "inf");
        assert_eq!(fmt_g(1e20), "1e+20");
        assert_eq!(fmt_g(0.1), "0.1");
        assert_eq!(fmt_g(123456.0), "123456");
        assert_eq!(fmt_g(1234567.0), "1.23457e+06");
    }
}
