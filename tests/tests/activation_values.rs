//! The activation operators of PyTorch's core set against what PyTorch 2.15
//! computes (`tests/data/recorded/activation_values.jsonl`, recorded by
//! `tests/record/activation_values.py`): `gelu` and `gelu_backward` with the
//! default, `'none'` and `'tanh'` approximations and an unknown one,
//! `leaky_relu` and `leaky_relu_backward` with slopes of both signs, per
//! input dtype: the result's dtype and values, or PyTorch's error word for
//! word; and the same call on meta tensors gives the same dtype and shape
//! (or, as PyTorch's meta functions, the same error where they raise one).
//!
//! Values: within [`MAX_ULPS`] of PyTorch's, NaN where PyTorch gives NaN,
//! signed zeros and infinities exactly. Both evaluate the formula in the
//! input's dtype in the same order, so a float32 result carries float32's
//! rounding; where a term near 1 cancels (`1 + erf(x/√2)` and `1 + tanh(..)`
//! in the negative tail, `1 - tanh²` in the tanh form's gradient for large
//! `|x|`), one ulp of difference between two `erf`s or `tanh`s (musl's here,
//! Sleef's or oneDNN's there) is a large relative difference of the result,
//! so the bound is also met by [`CANCEL_ULPS_OF_ONE`] ulps of 1 times
//! `max(|x|, 1)` times `|grad_output|` (the rounding of that term, scaled by
//! the factors it is multiplied by). [`VALUE_DIFFERENCES`] lists where
//! PyTorch's result is not the function's value and ours is.

use opforge::{library, DType, Device, Tensor, Value};
use opforge_tests::values::{num, ulps, values};
use serde_json::Value as Json;

/// The distance allowed between a result and PyTorch's, in units in the last
/// place of the result's dtype.
const MAX_ULPS: u64 = 2;

/// Where a term near 1 cancels: the distance allowed, in ulps of 1.0 in the
/// result's dtype, times `max(|x|, 1)` (and `|grad_output|`).
const CANCEL_ULPS_OF_ONE: f64 = 2.0;

/// `(operator, dtype, approximate, x, PyTorch's result, ours)` where
/// PyTorch's value is not the function's: PyTorch's float32 `gelu` of a
/// contiguous tensor (its oneDNN path) gives NaN at `+inf` (and at values
/// that round to it), where the function, PyTorch's float64 and its strided
/// float32 kernel give `inf`.
const VALUE_DIFFERENCES: &[(&str, &str, &str, f64, f64, f64)] = &[(
    "gelu",
    "float32",
    "none",
    f64::INFINITY,
    f64::NAN,
    f64::INFINITY,
)];

/// `(operator, input dtypes, PyTorch's error)` where PyTorch raises and we
/// compute: PyTorch's CPU `gelu_backward` takes its oneDNN path for a
/// contiguous float32 `self` (the erf form only) and rejects a float64
/// `grad_output` there; the
/// operator's dtype rule (`build_borrowing_binary_op`) promotes them, which
/// is what is done here (a float64 result).
const DIFFERENCES: &[(&str, &[&str], &str)] = &[(
    "gelu_backward",
    &["float64", "float32"],
    "itensor_view_from_dense expects float/bfloat16/half/int8/fp8 tensor inputDouble",
)];

fn input(j: &Json) -> Tensor {
    let dtype = DType::from_name(j["dtype"].as_str().unwrap()).unwrap();
    let data = j["data"].as_array().unwrap();
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

fn call(op: &str, inputs: &[Tensor], kwargs: &[(String, Value)]) -> opforge::Result<Tensor> {
    let args: Vec<Value> = inputs.iter().cloned().map(Value::Tensor).collect();
    let out = library::call(&format!("aten::{op}"), &args, kwargs)?;
    match out.into_iter().next() {
        Some(Value::Tensor(t)) => Ok(t),
        other => panic!("{op}: not a tensor: {other:?}"),
    }
}

#[test]
fn activations_compute_what_pytorch_computes() {
    let text = opforge_tests::read(&opforge_tests::recorded("activation_values.jsonl"));
    let (mut failures, mut cases, mut worst, mut differences) = (Vec::new(), 0, 0, 0);
    for line in text.lines() {
        let j: Json = serde_json::from_str(line).unwrap();
        let op = j["op"].as_str().unwrap();
        let kwargs: Vec<(String, Value)> = j["kwargs"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| {
                let v = match v {
                    Json::String(s) => Value::Str(s.clone()),
                    Json::Bool(b) => Value::Bool(*b),
                    v => Value::Float(v.as_f64().unwrap()),
                };
                (k.clone(), v)
            })
            .collect();
        let inputs: Vec<Tensor> = j["inputs"].as_array().unwrap().iter().map(input).collect();
        let dtypes: Vec<&str> = inputs.iter().map(|t| t.dtype().name()).collect();
        let id = format!("{op}({}, {:?})", dtypes.join(", "), j["kwargs"]);
        cases += 1;
        let got = call(op, &inputs, &kwargs);
        let metas: Vec<Tensor> = inputs
            .iter()
            .map(|t| Tensor::zeros(&t.shape(), t.dtype(), Device::Meta))
            .collect();
        let meta = call(op, &metas, &kwargs);
        let expect = &j["expect"];
        if let Some(err) = expect.get("error") {
            let listed = DIFFERENCES
                .iter()
                .any(|&(o, d, m)| o == op && d == dtypes.as_slice() && m == expect["message"]);
            if listed {
                differences += 1;
                match &got {
                    Ok(t) if t.dtype() == DType::Float64 => {}
                    other => failures.push(format!("{id}: listed difference, got {other:?}")),
                }
                continue;
            }
            match got {
                Err(e) if e.python_class() == err && e.to_string() == expect["message"] => {}
                Err(e) => failures.push(format!(
                    "{id}: {}: {e}, PyTorch: {err}: {}",
                    e.python_class(),
                    expect["message"]
                )),
                Ok(t) => {
                    failures.push(format!("{id}: {t:?}, PyTorch raised {}", expect["message"]))
                }
            }
            // PyTorch's meta functions check the dtype rule only (and, for
            // `gelu`, the approximation; for `leaky_relu_backward`, the slope).
            let message = expect["message"].as_str().unwrap();
            let in_meta = (message.starts_with("approximate") && op == "gelu")
                || message.starts_with("In-place leakyReLu");
            match (meta, in_meta) {
                (Err(e), true) if e.to_string() == expect["message"] => {}
                (Ok(m), false) if m.device() == Device::Meta => {}
                (m, _) => failures.push(format!("{id}: meta gives {m:?}")),
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
        match meta {
            Ok(m)
                if (m.dtype(), m.shape(), m.device())
                    == (want_dtype, got.shape(), Device::Meta) => {}
            m => failures.push(format!("{id}: meta gives {m:?}")),
        }
        let approximate = j["kwargs"]["approximate"].as_str().unwrap_or("none");
        let want: Vec<f64> = expect["data"].as_array().unwrap().iter().map(num).collect();
        let x = values(
            &inputs[inputs.len() - 1]
                .to_dtype_copy(DType::Float64)
                .unwrap(),
        );
        let scale = match op {
            "gelu" => vec![1.0; x.len()],
            _ => values(&inputs[0].to_dtype_copy(DType::Float64).unwrap()),
        };
        let one_ulp = match want_dtype {
            DType::Float32 => f64::from(f32::EPSILON),
            _ => f64::EPSILON,
        };
        for (i, (&g, &w)) in values(&got).iter().zip(&want).enumerate() {
            let same = (g.is_nan() && w.is_nan())
                || (g == w && g.is_sign_negative() == w.is_sign_negative());
            let close = g.is_finite() && w.is_finite() && {
                let d = ulps(g, w, want_dtype);
                let cancel = (g - w).abs()
                    <= CANCEL_ULPS_OF_ONE * one_ulp * x[i].abs().max(1.0) * scale[i].abs();
                if d <= MAX_ULPS {
                    worst = worst.max(d);
                }
                d <= MAX_ULPS || cancel
            };
            let listed = VALUE_DIFFERENCES.iter().any(|&(o, d, a, xv, p, v)| {
                (o, d, a) == (op, want_dtype.name(), approximate)
                    && x[i] == xv
                    && (w == p || (w.is_nan() && p.is_nan()))
                    && g == v
            });
            if !same && !close && !listed {
                failures.push(format!(
                    "{id}: element {i} (x = {}): {g:e}, PyTorch {w:e}",
                    x[i]
                ));
            }
        }
    }
    assert!(cases >= 66, "only {cases} cases");
    // The default and `'none'` approximations (oneDNN's path is the erf form).
    assert_eq!(differences, 2, "the listed differences");
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
    eprintln!("{cases} cases; {worst} ulp at most where within {MAX_ULPS} ulp of PyTorch's");
}
