//! What the value recordings (`unary_values.jsonl`, `binary_values.jsonl`,
//! `activation_values.jsonl`) are compared with: a recorded number, a
//! tensor's elements as `f64`, and the distance between two floats in units
//! in the last place of a dtype.

use opforge::{DType, Tensor};
use serde_json::Value as Json;

/// A recorded number: a JSON number, a bool (0 or 1), or a string Python's
/// `repr` wrote (`"nan"`, `"-inf"`, or a float kept exact).
pub fn num(j: &Json) -> f64 {
    match j {
        Json::String(s) => s
            .parse()
            .unwrap_or_else(|_| panic!("a recorded number: {s}")),
        Json::Bool(b) => f64::from(u8::from(*b)),
        j => j
            .as_f64()
            .unwrap_or_else(|| panic!("a recorded number: {j}")),
    }
}

/// A tensor's elements in logical order, as `f64` (exact for every dtype
/// here but int64 beyond 2^53, which the recordings avoid).
pub fn values(t: &Tensor) -> Vec<f64> {
    let t = t.contiguous().expect("a contiguous copy");
    fn all<T: opforge::tensor::IntoBuffer>(t: &Tensor, f: impl Fn(T) -> f64) -> Vec<f64> {
        t.to_vec::<T>()
            .expect("the tensor's dtype")
            .into_iter()
            .map(f)
            .collect()
    }
    match t.dtype() {
        DType::Float64 => all(&t, |x: f64| x),
        DType::Float32 => all(&t, |x: f32| f64::from(x)),
        DType::Int64 => all(&t, |x: i64| x as f64),
        DType::Int32 => all(&t, |x: i32| f64::from(x)),
        DType::Bool => all(&t, |b: bool| f64::from(u8::from(b))),
    }
}

/// Units in the last place of `dtype` between `a` and `b` (finite, of the
/// same sign).
pub fn ulps(a: f64, b: f64, dtype: DType) -> u64 {
    if dtype == DType::Float32 {
        let (x, y) = ((a as f32).to_bits() as i64, (b as f32).to_bits() as i64);
        x.abs_diff(y)
    } else {
        (a.to_bits() as i64).abs_diff(b.to_bits() as i64)
    }
}
