//! The binary pointwise operators of PyTorch's core set against what PyTorch
//! 2.15 computes (`tests/data/recorded/binary_values.jsonl`, recorded by
//! `tests/record/binary_values.py`): `bitwise_and` / `bitwise_or` /
//! `bitwise_xor`, `logical_and` / `logical_or` / `logical_xor`, `fmod`,
//! `remainder`, `atan2`, `pow.Scalar` and `div.Scalar_mode`, in their
//! functional, in-place and `out=` overloads, with tensor and number
//! operands: per call, the result's dtype, shape and values, or PyTorch's
//! error word for word; and the same call on meta tensors gives the same
//! dtype and shape.
//!
//! Values are compared exactly (NaN with NaN, zeros with their sign), but
//! for `atan2` and a float `pow.Scalar`, which are within [`MAX_ULPS`] of
//! PyTorch's (both within an ulp or two of the exact value: musl's `atan2`
//! and the vectorized `pow` here, Sleef's there).

use opforge::{library, DType, Device, Tensor, Value};
use opforge_tests::values::{num, ulps, values};
use serde_json::Value as Json;

/// The distance allowed between a float math result and PyTorch's, in units
/// in the last place of the result's dtype.
const MAX_ULPS: u64 = 2;

/// The overloads whose float results are compared within [`MAX_ULPS`].
const APPROXIMATE: &[&str] = &[
    "atan2",
    "atan2_",
    "atan2.out",
    "pow.Scalar",
    "pow.Scalar_out",
];

/// The flat values and the shape of a (nested) JSON array.
fn flatten(j: &Json, shape: &mut Vec<usize>, depth: usize, flat: &mut Vec<Json>) {
    match j {
        Json::Array(items) => {
            if shape.len() == depth {
                shape.push(items.len());
            }
            for item in items {
                flatten(item, shape, depth + 1, flat);
            }
        }
        v => flat.push(v.clone()),
    }
}

fn tensor(dtype: DType, data: &Json) -> Tensor {
    let (mut shape, mut flat) = (Vec::new(), Vec::new());
    flatten(data, &mut shape, 0, &mut flat);
    let t = match dtype {
        DType::Float64 => {
            Tensor::from_vec(flat.iter().map(num).collect::<Vec<f64>>(), &[flat.len()])
        }
        DType::Float32 => Tensor::from_vec(
            flat.iter().map(|j| num(j) as f32).collect::<Vec<_>>(),
            &[flat.len()],
        ),
        DType::Int64 => Tensor::from_vec(
            flat.iter().map(|j| j.as_i64().unwrap()).collect::<Vec<_>>(),
            &[flat.len()],
        ),
        DType::Int32 => Tensor::from_vec(
            flat.iter()
                .map(|j| j.as_i64().unwrap() as i32)
                .collect::<Vec<_>>(),
            &[flat.len()],
        ),
        DType::Bool => Tensor::from_vec(
            flat.iter()
                .map(|j| j.as_bool().unwrap())
                .collect::<Vec<_>>(),
            &[flat.len()],
        ),
    }
    .unwrap();
    let shape: Vec<i64> = shape.iter().map(|&s| s as i64).collect();
    opforge::torch::reshape(&t, &shape)
        .unwrap()
        .contiguous()
        .unwrap()
}

/// A recorded operand as a value: on `device` (a meta tensor has the shape
/// and dtype only).
fn value(j: &Json, device: Device) -> Value {
    let (kind, v) = j.as_object().unwrap().iter().next().unwrap();
    match kind.as_str() {
        "tensor" => {
            let dtype = DType::from_name(v.as_str().unwrap()).unwrap();
            let t = tensor(dtype, &j["data"]);
            Value::Tensor(match device {
                Device::Meta => Tensor::zeros(&t.shape(), dtype, Device::Meta),
                _ => t,
            })
        }
        "bool" => Value::Bool(v.as_bool().unwrap()),
        "int" => Value::Int(v.as_i64().unwrap()),
        "float" => Value::Float(num(v)),
        "str" => Value::Str(v.as_str().unwrap().to_string()),
        "none" => Value::None,
        k => panic!("unknown operand kind {k}"),
    }
}

fn call(j: &Json, device: Device) -> opforge::Result<Tensor> {
    let op = j["op"].as_str().unwrap();
    let args: Vec<Value> = j["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| value(a, device))
        .collect();
    let kwargs: Vec<(String, Value)> = j["kwargs"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.clone(), value(v, device)))
        .collect();
    let out = library::call(&format!("aten::{op}"), &args, &kwargs)?;
    match out.into_iter().next() {
        Some(Value::Tensor(t)) => Ok(t),
        other => panic!("{op}: not a tensor: {other:?}"),
    }
}

#[test]
fn binary_operators_compute_what_pytorch_computes() {
    let text = opforge_tests::read(&opforge_tests::recorded("binary_values.jsonl"));
    let mut failures = Vec::new();
    let (mut cases, mut errors, mut worst) = (0, 0, 0);
    for (line_no, line) in text.lines().enumerate() {
        let j: Json = serde_json::from_str(line).unwrap();
        let op = j["op"].as_str().unwrap();
        let id = format!("line {} {op}", line_no + 1);
        cases += 1;
        let got = call(&j, Device::Cpu);
        let expect = &j["expect"];
        if let Some(err) = expect.get("error") {
            errors += 1;
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
                failures.push(format!("{id}: {}: {e}", e.python_class()));
                continue;
            }
        };
        let want_dtype = DType::from_name(expect["dtype"].as_str().unwrap()).unwrap();
        let want_shape: Vec<usize> = expect["shape"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s.as_u64().unwrap() as usize)
            .collect();
        if got.dtype() != want_dtype || got.shape() != want_shape {
            failures.push(format!(
                "{id}: {} {:?}, PyTorch {} {want_shape:?}",
                got.dtype().name(),
                got.shape(),
                want_dtype.name()
            ));
            continue;
        }
        match call(&j, Device::Meta) {
            Ok(m)
                if (m.dtype(), m.shape(), m.device()) == (want_dtype, want_shape, Device::Meta) => {
            }
            Ok(m) => failures.push(format!("{id}: meta gives {:?} {:?}", m.dtype(), m.shape())),
            Err(e) => failures.push(format!("{id}: meta: {e}")),
        }
        let want: Vec<f64> = expect["data"].as_array().unwrap().iter().map(num).collect();
        let approximate = APPROXIMATE.contains(&op) && want_dtype.is_floating_point();
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
            if !same && !close {
                failures.push(format!("{id}: element {i}: {g:e}, PyTorch {w:e}"));
            }
        }
    }
    assert!(
        cases >= 900 && errors >= 300,
        "only {cases} cases, {errors} errors"
    );
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
    eprintln!("{cases} cases ({errors} errors); the float math within {worst} ulp of PyTorch's");
}
