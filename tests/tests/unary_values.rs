//! The unary pointwise operators of PyTorch's core set against what PyTorch
//! 2.15 computes (`tests/data/recorded/unary_values.jsonl`, recorded by
//! `tests/record/unary_values.py`): per operator and input dtype, the result's
//! dtype and values, or PyTorch's error word for word; and the same call on
//! a meta tensor gives the same dtype and shape.
//!
//! Values: the rounding operators, `sign`, `bitwise_not`, `logical_not`,
//! `isnan` and `isinf` exactly; the float math within [`MAX_ULPS`] of
//! PyTorch's (both are within an ulp of the exact value: musl's functions
//! here, Sleef's `_u10` ones there), NaN where PyTorch gives NaN, signed
//! zeros and infinities exactly. `reciprocal` and `rsqrt` are one division
//! (and one square root) here, correctly rounded; PyTorch's vectorized ones
//! are 1 ulp off on some inputs (measured: `1/89` in float64), so they are
//! compared as the float math is. [`DIFFERENCES`] lists where PyTorch's
//! result is not the function's value.

use opforge::{library, DType, Device, Tensor, Value};
use opforge_tests::values::{num, ulps, values};
use serde_json::Value as Json;

/// The distance allowed between a float math result and PyTorch's, in units
/// in the last place of the result's dtype.
const MAX_ULPS: u64 = 2;

/// The float math operators (the others are compared exactly).
const APPROXIMATE: &[&str] = &[
    "acos",
    "asin",
    "atan",
    "acosh",
    "asinh",
    "atanh",
    "cosh",
    "sinh",
    "tan",
    "erf",
    "expm1",
    "log10",
    "log1p",
    "log2",
    "reciprocal",
    "rsqrt",
];

/// `(operator, dtype, input, PyTorch's result, the value)` where PyTorch's
/// result is not the function's value and ours is: float64 `cosh` and `sinh`
/// overflow early in PyTorch (Sleef's `_u10` functions give inf above about
/// 709.78), though `cosh(710) = e^710 / 2 ≈ 1.117e308` is below `f64::MAX`.
const DIFFERENCES: &[(&str, &str, f64, f64, f64)] = &[
    (
        "cosh",
        "float64",
        710.0,
        f64::INFINITY,
        1.1169973830808555e308,
    ),
    (
        "sinh",
        "float64",
        710.0,
        f64::INFINITY,
        1.1169973830808555e308,
    ),
];

fn input(dtype: DType, data: &[Json]) -> Tensor {
    let n = [data.len()];
    match dtype {
        DType::Float64 => Tensor::from_vec(data.iter().map(num).collect::<Vec<f64>>(), &n),
        DType::Float32 => {
            Tensor::from_vec(data.iter().map(|j| num(j) as f32).collect::<Vec<_>>(), &n)
        }
        DType::Int64 => Tensor::from_vec(
            data.iter().map(|j| j.as_i64().unwrap()).collect::<Vec<_>>(),
            &n,
        ),
        DType::Int32 => Tensor::from_vec(
            data.iter()
                .map(|j| j.as_i64().unwrap() as i32)
                .collect::<Vec<_>>(),
            &n,
        ),
        DType::Bool => Tensor::from_vec(
            data.iter()
                .map(|j| j.as_bool().unwrap())
                .collect::<Vec<_>>(),
            &n,
        ),
    }
    .unwrap()
}

fn call(op: &str, x: &Tensor) -> opforge::Result<Tensor> {
    let out = library::call(&format!("aten::{op}"), &[Value::Tensor(x.clone())], &[])?;
    match out.into_iter().next() {
        Some(Value::Tensor(t)) => Ok(t),
        other => panic!("{op}: not a tensor: {other:?}"),
    }
}

#[test]
fn unary_operators_compute_what_pytorch_computes() {
    let text = opforge_tests::read(&opforge_tests::recorded("unary_values.jsonl"));
    let mut failures = Vec::new();
    let mut cases = 0;
    let mut worst = 0;
    for line in text.lines() {
        let j: Json = serde_json::from_str(line).unwrap();
        let op = j["op"].as_str().unwrap();
        let dtype = DType::from_name(j["dtype"].as_str().unwrap()).unwrap();
        let x = input(dtype, j["input"].as_array().unwrap());
        let id = format!("{op}({})", dtype.name());
        cases += 1;
        let got = call(op, &x);
        let expect = &j["expect"];
        if let Some(err) = expect.get("error") {
            match got {
                Err(e) if e.python_class() == err && e.to_string() == expect["message"] => {}
                Err(e) => failures.push(format!(
                    "{id}: {}: {e}, PyTorch: {err}: {}",
                    e.python_class(),
                    expect["message"]
                )),
                Ok(t) => failures.push(format!(
                    "{id}: {:?}, PyTorch raised {}",
                    values(&t),
                    expect["message"]
                )),
            }
            continue;
        }
        let got = match got {
            Ok(t) => t,
            Err(e) => {
                failures.push(format!("{id}: {e}"));
                continue;
            }
        };
        let want_dtype = DType::from_name(expect["dtype"].as_str().unwrap()).unwrap();
        if got.dtype() != want_dtype {
            failures.push(format!(
                "{id}: dtype {}, PyTorch {}",
                got.dtype().name(),
                want_dtype.name()
            ));
            continue;
        }
        let meta = call(op, &Tensor::zeros(&x.shape(), dtype, Device::Meta)).unwrap();
        if (meta.dtype(), meta.shape(), meta.device()) != (want_dtype, got.shape(), Device::Meta) {
            failures.push(format!(
                "{id}: meta gives {:?} {:?}",
                meta.dtype(),
                meta.shape()
            ));
        }
        let want: Vec<f64> = expect["data"].as_array().unwrap().iter().map(num).collect();
        let approximate = APPROXIMATE.contains(&op);
        for (i, (&g, &w)) in values(&got).iter().zip(&want).enumerate() {
            let same = (g.is_nan() && w.is_nan())
                || (g == w && g.is_sign_negative() == w.is_sign_negative());
            let close = approximate
                && g.is_finite()
                && w.is_finite()
                && (g == 0.0) == (w == 0.0)
                && g.signum() == w.signum()
                && {
                    let d = ulps(g, w, want_dtype);
                    worst = worst.max(d);
                    d <= MAX_ULPS
                };
            let listed = DIFFERENCES.iter().any(|&(o, d, x, p, v)| {
                (o, d) == (op, dtype.name()) && num(&j["input"][i]) == x && w == p && g == v
            });
            if !same && !close && !listed {
                failures.push(format!(
                    "{id}: element {i} (input {}): {g:e}, PyTorch {w:e}",
                    j["input"][i]
                ));
            }
        }
    }
    assert!(cases >= 125, "only {cases} cases");
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
    eprintln!("{cases} cases; the float math within {worst} ulp of PyTorch's");
}
