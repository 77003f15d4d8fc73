//! Reading and judging `numeric_calls.jsonl` (kernel results recorded from
//! PyTorch 2.15), independent of how a kernel is called.
//!
//! - [`load`] parses the corpus into [`Case`]s.
//! - [`bind`] turns a case's JSON `args`/`kwargs` into one [`Value`] per schema
//!   argument (schema order, defaults filled in from `opforge::OPS`), building
//!   fresh contiguous input tensors and remembering them by id in [`Inputs`].
//! - [`judge`] compares what a call returned (or its error) with the record, per
//!   the corpus README: dtype and shape exact, values within tolerance, strides
//!   of size > 1 dims and the storage offset of non-empty view outputs,
//!   identity (`id`), written inputs (`mutated`, every other input unchanged)
//!   and storage sharing (`aliases`). Softer differences (error class and
//!   message, strides of size 0/1 dims) are reported as notes, not failures.
//!
//! - [`replay`] runs every case through the dispatcher's boxed path (an overload
//!   handle, `dispatcher().find(..).call_boxed(..)`), on CPU or on meta copies of
//!   the inputs, and [`Report`] summarises it.

use opforge::tables::{ArgSchema, BaseType, OpSchema, Ty};
use opforge::{DType, Device, Layout, MemoryFormat, Tensor, Value};
use serde_json::{Map, Value as Json};
use std::path::{Path, PathBuf};

/// One recorded call.
#[derive(Clone, Debug)]
pub struct Case {
    /// Unique id (`num/add.Tensor/0016/promote_f32_tensor_f64_0dim`).
    pub id: String,
    /// `name.overload` (or `name`).
    pub overload: String,
    /// Positional arguments as recorded.
    pub args: Vec<Json>,
    /// Keyword arguments as recorded.
    pub kwargs: Map<String, Json>,
    /// The recorded outcome.
    pub expect: Json,
}

impl Case {
    /// Does the record expect an error?
    pub fn expects_error(&self) -> bool {
        self.expect.get("error").is_some()
    }
}

/// `tests/data/conformance/numeric_calls.jsonl`.
pub fn corpus_path() -> PathBuf {
    crate::corpus("numeric_calls.jsonl")
}

/// Parses a JSONL corpus.
pub fn load(path: &Path) -> Result<Vec<Case>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            let j: Json = serde_json::from_str(l)
                .map_err(|e| format!("{}:{}: {e}", path.display(), i + 1))?;
            let s = |k: &str| {
                j.get(k)
                    .and_then(Json::as_str)
                    .unwrap_or_default()
                    .to_string()
            };
            Ok(Case {
                id: s("id"),
                overload: s("overload"),
                args: j
                    .get("args")
                    .and_then(Json::as_array)
                    .cloned()
                    .unwrap_or_default(),
                kwargs: j
                    .get("kwargs")
                    .and_then(Json::as_object)
                    .cloned()
                    .unwrap_or_default(),
                expect: j.get("expect").cloned().unwrap_or(Json::Null),
            })
        })
        .collect()
}

/// The input tensors of one call, by recorded id, with their recorded values.
#[derive(Default)]
pub struct Inputs {
    tensors: Vec<(String, Tensor, Json)>,
}

impl Inputs {
    /// The input with this id.
    pub fn get(&self, id: &str) -> Option<&Tensor> {
        self.tensors
            .iter()
            .find(|(i, _, _)| i == id)
            .map(|(_, t, _)| t)
    }

    /// Every input: id, tensor, recorded value.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Tensor, &Json)> {
        self.tensors.iter().map(|(i, t, j)| (i.as_str(), t, j))
    }

    /// The id of the input that *is* `t`.
    pub fn id_of(&self, t: &Tensor) -> Option<&str> {
        self.iter()
            .find(|(_, x, _)| x.is_same(t))
            .map(|(i, _, _)| i)
    }

    /// Inputs sharing storage with `t`.
    pub fn sharing(&self, t: &Tensor) -> Vec<&str> {
        self.iter()
            .filter(|(_, x, _)| x.shares_storage(t))
            .map(|(i, _, _)| i)
            .collect()
    }

    /// Copies every input to the meta device (same ids, shapes, dtypes).
    pub fn to_meta(&self) -> Inputs {
        Inputs {
            tensors: self
                .tensors
                .iter()
                .map(|(i, t, j)| {
                    (
                        i.clone(),
                        Tensor::zeros(&t.shape(), t.dtype(), Device::Meta),
                        j.clone(),
                    )
                })
                .collect(),
        }
    }
}

fn parse_f64(v: &Json) -> Option<f64> {
    match v {
        Json::Number(n) => n.as_f64(),
        Json::String(s) => match s.as_str() {
            "nan" => Some(f64::NAN),
            "inf" => Some(f64::INFINITY),
            "-inf" => Some(f64::NEG_INFINITY),
            _ => None,
        },
        _ => None,
    }
}

/// The fields of a `{"tensor": {...}}` encoding.
fn tensor_fields(v: &Json) -> Option<&Map<String, Json>> {
    v.get("tensor")?.as_object()
}

fn shape_of(t: &Map<String, Json>) -> Result<Vec<usize>, String> {
    t.get("shape")
        .and_then(Json::as_array)
        .ok_or("tensor without shape")?
        .iter()
        .map(|d| {
            d.as_u64()
                .map(|d| d as usize)
                .ok_or_else(|| format!("bad dim {d}"))
        })
        .collect()
}

fn dtype_of(t: &Map<String, Json>) -> Result<DType, String> {
    let name = t
        .get("dtype")
        .and_then(Json::as_str)
        .ok_or("tensor without dtype")?;
    DType::from_name(name).ok_or_else(|| format!("unknown dtype {name}"))
}

/// Builds a fresh contiguous CPU tensor from a recorded tensor value.
pub fn build_tensor(t: &Map<String, Json>) -> Result<Tensor, String> {
    let (dtype, shape) = (dtype_of(t)?, shape_of(t)?);
    let data = t
        .get("data")
        .and_then(Json::as_array)
        .ok_or("tensor without data")?;
    let bad = |x: &Json| format!("bad {dtype} element {x}");
    let r = match dtype {
        DType::Bool => Tensor::from_vec(
            data.iter()
                .map(|x| x.as_bool().ok_or_else(|| bad(x)))
                .collect::<Result<Vec<_>, _>>()?,
            &shape,
        ),
        DType::Int32 => Tensor::from_vec(
            data.iter()
                .map(|x| x.as_i64().map(|i| i as i32).ok_or_else(|| bad(x)))
                .collect::<Result<Vec<_>, _>>()?,
            &shape,
        ),
        DType::Int64 => Tensor::from_vec(
            data.iter()
                .map(|x| x.as_i64().ok_or_else(|| bad(x)))
                .collect::<Result<Vec<_>, _>>()?,
            &shape,
        ),
        DType::Float32 => Tensor::from_vec(
            data.iter()
                .map(|x| parse_f64(x).map(|f| f as f32).ok_or_else(|| bad(x)))
                .collect::<Result<Vec<_>, _>>()?,
            &shape,
        ),
        DType::Float64 => Tensor::from_vec(
            data.iter()
                .map(|x| parse_f64(x).ok_or_else(|| bad(x)))
                .collect::<Result<Vec<_>, _>>()?,
            &shape,
        ),
    };
    r.map_err(|e| e.to_string())
}

fn decode_tensor(v: &Json, inputs: &mut Inputs) -> Result<Tensor, String> {
    let t = tensor_fields(v).ok_or_else(|| format!("expected a tensor, got {v}"))?;
    let id = t
        .get("id")
        .and_then(Json::as_str)
        .unwrap_or_default()
        .to_string();
    if let Some(existing) = inputs.get(&id) {
        return Ok(existing.clone());
    }
    let tensor = build_tensor(t)?;
    inputs.tensors.push((id, tensor.clone(), v.clone()));
    Ok(tensor)
}

fn scalar_value(v: &Json) -> Result<Value, String> {
    let obj = v
        .as_object()
        .ok_or_else(|| format!("expected a number, got {v}"))?;
    if let Some(b) = obj.get("bool").and_then(Json::as_bool) {
        Ok(Value::Bool(b))
    } else if let Some(i) = obj.get("int").and_then(Json::as_i64) {
        Ok(Value::Int(i))
    } else if let Some(f) = obj.get("float").and_then(parse_f64) {
        Ok(Value::Float(f))
    } else {
        Err(format!("expected a number, got {v}"))
    }
}

fn list_items(v: &Json) -> Result<&Vec<Json>, String> {
    v.get("list")
        .and_then(Json::as_array)
        .ok_or_else(|| format!("expected a list, got {v}"))
}

/// Decodes one recorded value as the schema type `ty`.
pub fn decode(v: &Json, ty: &Ty, inputs: &mut Inputs) -> Result<Value, String> {
    if v.is_null() {
        return Ok(Value::None);
    }
    let field = |k: &str| {
        v.get(k)
            .and_then(Json::as_str)
            .ok_or_else(|| format!("expected {k}, got {v}"))
    };
    match ty {
        Ty::Optional(inner) => decode(v, inner, inputs),
        Ty::List(elem, _) => match elem {
            Ty::Base(BaseType::Tensor) => Ok(Value::TensorList(
                list_items(v)?
                    .iter()
                    .map(|x| decode_tensor(x, inputs))
                    .collect::<Result<_, _>>()?,
            )),
            Ty::Optional(_) => Ok(Value::OptTensorList(
                list_items(v)?
                    .iter()
                    .map(|x| {
                        if x.is_null() {
                            Ok(None)
                        } else {
                            decode_tensor(x, inputs).map(Some)
                        }
                    })
                    .collect::<Result<_, _>>()?,
            )),
            _ => {
                // An int list (a lone int is accepted for `int[1]`).
                let items = match v.get("list") {
                    Some(_) => list_items(v)?.clone(),
                    None => vec![v.clone()],
                };
                let ints = items
                    .iter()
                    .map(|x| {
                        x.get("int")
                            .and_then(Json::as_i64)
                            .ok_or_else(|| format!("expected int, got {x}"))
                    })
                    .collect::<Result<_, _>>()?;
                Ok(Value::IntList(ints))
            }
        },
        Ty::Base(b) => match b {
            BaseType::Tensor => decode_tensor(v, inputs).map(Value::Tensor),
            BaseType::Str => Ok(Value::Str(field("str")?.to_string())),
            BaseType::ScalarType => {
                let n = field("dtype")?;
                DType::from_name(n)
                    .map(Value::DType)
                    .ok_or_else(|| format!("unknown dtype {n}"))
            }
            BaseType::Device => {
                let n = field("device")?;
                Device::from_name(n)
                    .map(Value::Device)
                    .ok_or_else(|| format!("unknown device {n}"))
            }
            BaseType::Layout => {
                field("layout")?;
                Ok(Value::Layout(Layout::Strided))
            }
            BaseType::MemoryFormat => {
                let n = field("memory_format")?;
                MemoryFormat::from_name(n)
                    .map(Value::MemoryFormat)
                    .ok_or_else(|| format!("unknown memory format {n}"))
            }
            _ => scalar_value(v),
        },
        Ty::CustomClass(c) => Err(format!("custom class {c} is not supported")),
    }
}

/// Binds a case to its schema: one value per schema argument, in order.
pub fn bind(case: &Case, schema: &OpSchema, inputs: &mut Inputs) -> Result<Vec<Value>, String> {
    if case.args.len() > schema.args.len() {
        return Err(format!(
            "{} positional arguments for {}",
            case.args.len(),
            schema.schema
        ));
    }
    if let Some(k) = case.kwargs.keys().find(|k| schema.arg(k).is_none()) {
        return Err(format!("unknown keyword {k} for {}", schema.schema));
    }
    schema
        .args
        .iter()
        .enumerate()
        .map(|(i, a): (usize, &ArgSchema)| {
            if let Some(v) = case.args.get(i) {
                decode(v, &a.ty, inputs)
            } else if let Some(v) = case.kwargs.get(a.name) {
                decode(v, &a.ty, inputs)
            } else if let Some(v) = opforge::bind::default_value(a) {
                Ok(v)
            } else if matches!(a.ty, Ty::Optional(_)) {
                Ok(Value::None)
            } else {
                Err(format!("missing argument {} of {}", a.name, schema.schema))
            }
        })
        .collect()
}

/// What a call did.
pub type Outcome = opforge::Result<Vec<Value>>;

/// The judgement on one case.
#[derive(Debug, Default)]
pub struct Verdict {
    /// Hard mismatches (the case fails).
    pub failures: Vec<String>,
    /// Soft mismatches (error class/message, strides of size 0/1 dims, offsets
    /// of empty outputs).
    pub notes: Vec<String>,
}

impl Verdict {
    /// No hard mismatch.
    pub fn passed(&self) -> bool {
        self.failures.is_empty()
    }
}

/// Tolerance per the README, by expected dtype.
fn close(actual: f64, expected: f64, dtype: DType) -> bool {
    if expected.is_nan() {
        return actual.is_nan();
    }
    if expected.is_infinite() {
        return actual == expected;
    }
    let (rtol, atol) = if dtype == DType::Float32 {
        (1.3e-6, 1e-5)
    } else {
        (1e-7, 1e-7)
    };
    (actual - expected).abs() <= atol + rtol * expected.abs()
}

fn fmt_list<T: std::fmt::Debug>(xs: &[T]) -> String {
    if xs.len() <= 12 {
        format!("{xs:?}")
    } else {
        format!("{:?}… ({} elements)", &xs[..12], xs.len())
    }
}

/// Compares a tensor with its recorded encoding (`what` names it in messages).
/// `check_layout`: compare `strides`/`storage_offset` if recorded.
pub fn compare_tensor(
    what: &str,
    actual: &Tensor,
    expected: &Json,
    inputs: &Inputs,
    verdict: &mut Verdict,
) {
    let Some(e) = tensor_fields(expected) else {
        verdict
            .failures
            .push(format!("{what}: expected {expected}, got a tensor"));
        return;
    };
    // Identity.
    let actual_id = inputs.id_of(actual);
    match e.get("id").and_then(Json::as_str) {
        Some(id) if actual_id != Some(id) => verdict.failures.push(format!(
            "{what}: expected input {id} itself, got {}",
            actual_id.unwrap_or("a new tensor")
        )),
        None if actual_id.is_some() => verdict.failures.push(format!(
            "{what}: expected a new tensor, got input {}",
            actual_id.unwrap_or_default()
        )),
        _ => {}
    }
    let (Ok(dtype), Ok(shape)) = (dtype_of(e), shape_of(e)) else {
        verdict
            .failures
            .push(format!("{what}: malformed expectation {expected}"));
        return;
    };
    if actual.dtype() != dtype {
        verdict.failures.push(format!(
            "{what}: dtype {} != expected {dtype}",
            actual.dtype()
        ));
        return;
    }
    if actual.shape() != shape {
        verdict.failures.push(format!(
            "{what}: shape {:?} != expected {shape:?}",
            actual.shape()
        ));
        return;
    }
    if let Some(strides) = e.get("strides").and_then(Json::as_array) {
        let want: Vec<usize> = strides
            .iter()
            .filter_map(|s| s.as_u64().map(|s| s as usize))
            .collect();
        let got = actual.strides();
        let hard = shape
            .iter()
            .zip(want.iter().zip(&got))
            .any(|(&n, (w, g))| n > 1 && w != g);
        if hard {
            verdict
                .failures
                .push(format!("{what}: strides {got:?} != expected {want:?}"));
        } else if got != want {
            verdict.notes.push(format!(
                "{what}: strides {got:?} vs {want:?} (size 0/1 dims)"
            ));
        }
    }
    if let Some(off) = e.get("storage_offset").and_then(Json::as_u64) {
        let got = actual.storage_offset();
        if got != off as usize {
            if actual.numel() > 0 {
                verdict
                    .failures
                    .push(format!("{what}: storage_offset {got} != expected {off}"));
            } else {
                verdict
                    .notes
                    .push(format!("{what}: storage_offset {got} vs {off} (empty)"));
            }
        }
    }
    let Some(data) = e.get("data").and_then(Json::as_array) else {
        return;
    };
    if actual.device() == Device::Meta {
        return;
    }
    let mismatch =
        |i: usize, a: String, x: &Json| format!("{what}: element {i}: {a} != expected {x}");
    match dtype {
        DType::Bool => match actual.to_vec::<bool>() {
            Ok(got) => {
                if let Some((i, (a, x))) = got
                    .iter()
                    .zip(data)
                    .enumerate()
                    .find(|(_, (a, x))| x.as_bool() != Some(**a))
                {
                    verdict.failures.push(mismatch(i, a.to_string(), x));
                }
            }
            Err(err) => verdict.failures.push(format!("{what}: {err}")),
        },
        DType::Int32 | DType::Int64 => match actual.to_vec::<i64>() {
            Ok(got) => {
                if let Some((i, (a, x))) = got
                    .iter()
                    .zip(data)
                    .enumerate()
                    .find(|(_, (a, x))| x.as_i64() != Some(**a))
                {
                    verdict.failures.push(mismatch(i, a.to_string(), x));
                }
            }
            Err(err) => verdict.failures.push(format!("{what}: {err}")),
        },
        DType::Float32 | DType::Float64 => match actual.to_vec::<f64>() {
            Ok(got) => {
                let bad = got
                    .iter()
                    .zip(data)
                    .enumerate()
                    .find(|(_, (a, x))| !parse_f64(x).is_some_and(|x| close(**a, x, dtype)));
                if let Some((i, (a, x))) = bad {
                    verdict.failures.push(format!(
                        "{} (got {}, expected {})",
                        mismatch(i, format!("{a:?}"), x),
                        fmt_list(&got),
                        fmt_list(data)
                    ));
                }
            }
            Err(err) => verdict.failures.push(format!("{what}: {err}")),
        },
    }
}

/// Judges an outcome against a case (inputs as bound for that call).
pub fn judge(case: &Case, inputs: &Inputs, outcome: &Outcome) -> Verdict {
    let mut v = Verdict::default();
    let e = &case.expect;
    if let Some(class) = e.get("error").and_then(Json::as_str) {
        let message = e.get("message").and_then(Json::as_str).unwrap_or_default();
        match outcome {
            Ok(vals) => v.failures.push(format!(
                "expected {class}: {message}; got a result: {}",
                vals.iter()
                    .map(|x| x.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
            Err(err) => {
                if err.python_class() != class {
                    v.notes
                        .push(format!("class {} vs {class}", err.python_class()));
                }
                if err.to_string() != message {
                    v.notes
                        .push(format!("message {:?} vs {message:?}", err.to_string()));
                }
            }
        }
        return v;
    }
    let vals = match outcome {
        Ok(vals) => vals,
        Err(err) => {
            v.failures
                .push(format!("unexpected {}: {err}", err.python_class()));
            return v;
        }
    };
    // Results.
    let result = &e["result"];
    let expected: Vec<(String, &Json)> = match result.get("list").and_then(Json::as_array) {
        Some(items) => items
            .iter()
            .enumerate()
            .map(|(i, x)| (format!("result.{i}"), x))
            .collect(),
        None => vec![("result".to_string(), result)],
    };
    if expected.len() != vals.len() {
        v.failures.push(format!(
            "{} results, expected {}",
            vals.len(),
            expected.len()
        ));
        return v;
    }
    let aliases = e.get("aliases").and_then(Json::as_object);
    for ((name, want), got) in expected.iter().zip(vals) {
        let Value::Tensor(t) = got else {
            v.failures
                .push(format!("{name}: expected a tensor, got {got}"));
            continue;
        };
        compare_tensor(name, t, want, inputs, &mut v);
        let want_alias: Vec<&str> = aliases
            .and_then(|a| a.get(name.as_str()))
            .and_then(Json::as_str)
            .into_iter()
            .collect();
        let got_alias = inputs.sharing(t);
        if got_alias != want_alias {
            v.failures.push(format!(
                "{name}: shares storage with {got_alias:?}, expected {want_alias:?}"
            ));
        }
    }
    // Written and unwritten inputs.
    let mutated = e.get("mutated").and_then(Json::as_object);
    for (id, t, original) in inputs.iter() {
        match mutated.and_then(|m| m.get(id)) {
            Some(after) => compare_tensor(
                &format!("input {id} after the call"),
                t,
                after,
                inputs,
                &mut v,
            ),
            None => {
                let mut unchanged = Verdict::default();
                compare_tensor(&format!("input {id}"), t, original, inputs, &mut unchanged);
                if !unchanged.passed() {
                    v.failures.push(format!(
                        "input {id} was modified: {}",
                        unchanged.failures.join("; ")
                    ));
                }
            }
        }
    }
    v
}

/// Renders a case's call for failure messages.
pub fn describe(case: &Case) -> String {
    fn short(v: &Json) -> String {
        if let Some(t) = tensor_fields(v) {
            let data = t
                .get("data")
                .and_then(Json::as_array)
                .map(|d| fmt_list(d))
                .unwrap_or_default();
            return format!(
                "{}:{}{} {data}",
                t.get("id").and_then(Json::as_str).unwrap_or("?"),
                t.get("dtype").and_then(Json::as_str).unwrap_or("?"),
                t.get("shape").map(|s| s.to_string()).unwrap_or_default()
            );
        }
        if let Some(items) = v.get("list").and_then(Json::as_array) {
            return format!(
                "[{}]",
                items.iter().map(short).collect::<Vec<_>>().join(", ")
            );
        }
        match v.as_object().and_then(|o| o.iter().next()) {
            Some((_, x)) => x.to_string(),
            None => v.to_string(),
        }
    }
    let mut parts: Vec<String> = case.args.iter().map(short).collect();
    parts.extend(case.kwargs.iter().map(|(k, v)| format!("{k}={}", short(v))));
    format!("{}({})", case.overload, parts.join(", "))
}

/// Where the inputs live for a replay.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// Real data: every recorded value is compared.
    Cpu,
    /// Meta copies of the inputs: dtypes, shapes, strides, identities, aliasing;
    /// errors PyTorch raised because of the *data* are not expected.
    Meta,
}

/// Error messages that depend on values, which a meta kernel cannot see.
const DATA_DEPENDENT: [&str; 7] = [
    "index out of range",
    "ZeroDivisionError",
    "not implemented for",
    "not supported",
    "does not support",
    "without overflow",
    "Boolean inputs",
];

/// Replaces CPU input tensors by their meta copies (same identities).
fn to_meta(v: &mut Value, cpu: &Inputs, meta: &Inputs) {
    let swap = |t: &mut Tensor| {
        if let Some(m) = cpu.id_of(t).and_then(|id| meta.get(id)) {
            *t = m.clone();
        }
    };
    match v {
        Value::Tensor(t) => swap(t),
        Value::TensorList(ts) => ts.iter_mut().for_each(swap),
        Value::OptTensorList(ts) => ts.iter_mut().flatten().for_each(swap),
        _ => {}
    }
}

/// Runs one case through the boxed path with an overload handle.
pub fn run(case: &Case, device: Backend) -> Result<(Inputs, Outcome), String> {
    let op = opforge::dispatch::dispatcher()
        .find(&case.overload)
        .ok_or_else(|| format!("unknown operator {}", case.overload))?;
    let mut inputs = Inputs::default();
    let mut args = bind(case, op.schema, &mut inputs)?;
    if device == Backend::Meta {
        let meta_inputs = inputs.to_meta();
        for v in &mut args {
            to_meta(v, &inputs, &meta_inputs);
        }
        inputs = meta_inputs;
    }
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| op.call_boxed(&args)))
        .map_err(|p| {
        let msg = p
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default();
        format!("PANIC: {msg}")
    })?;
    Ok((inputs, outcome))
}

/// The result of replaying a corpus.
#[derive(Debug, Default)]
pub struct Report {
    /// Cases that passed.
    pub passed: usize,
    /// Cases that failed.
    pub failed: usize,
    /// Error cases whose message matched PyTorch's word for word.
    pub messages_matched: usize,
    /// Error cases whose exception class matched PyTorch's.
    pub classes_matched: usize,
    /// Error cases (expected and raised).
    pub error_cases: usize,
    /// One paragraph per failure.
    pub failures: Vec<String>,
    /// Overloads with failures: `name passed/total`.
    pub failing_overloads: Vec<String>,
}

/// Replays `cases` on `device` and judges each.
pub fn replay(cases: &[Case], device: Backend) -> Report {
    let mut report = Report::default();
    let mut per_op: std::collections::BTreeMap<&str, (usize, usize)> = Default::default();
    for case in cases {
        let counts = per_op.entry(case.overload.as_str()).or_default();
        counts.1 += 1;
        let verdict = run(case, device).map(|(inputs, outcome)| {
            let mut v = judge(case, &inputs, &outcome);
            let msg = case
                .expect
                .get("message")
                .and_then(Json::as_str)
                .unwrap_or_default();
            if device == Backend::Meta
                && case.expects_error()
                && outcome.is_ok()
                && DATA_DEPENDENT.iter().any(|d| msg.contains(d))
            {
                v.failures.clear();
                v.notes
                    .push("meta accepts a call rejected for its data".into());
            }
            if let (true, Err(e)) = (case.expects_error(), &outcome) {
                report.error_cases += 1;
                if e.to_string() == msg {
                    report.messages_matched += 1;
                }
                if Some(e.python_class()) == case.expect.get("error").and_then(Json::as_str) {
                    report.classes_matched += 1;
                }
            }
            v
        });
        match verdict {
            Ok(v) if v.passed() => {
                report.passed += 1;
                counts.0 += 1;
            }
            Ok(v) => {
                report.failed += 1;
                report.failures.push(format!(
                    "{}
    {}
    {}",
                    case.id,
                    describe(case),
                    v.failures.join("\n    ")
                ));
            }
            Err(e) => {
                report.failed += 1;
                report.failures.push(format!(
                    "{}
    {}
    {e}",
                    case.id,
                    describe(case)
                ));
            }
        }
    }
    report.failing_overloads = per_op
        .iter()
        .filter(|(_, (p, n))| p != n)
        .map(|(op, (p, n))| format!("{op} {p}/{n}"))
        .collect();
    report
}
