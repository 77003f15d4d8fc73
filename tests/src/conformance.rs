//! Replaying the recorded argument-parsing corpora (`ops_calls.jsonl`: schema-level
//! `torch.ops.aten.<name>(...)` calls; `api_calls.jsonl`: `torch.<fn>(...)` /
//! `Tensor.<method>(...)`) and comparing the chosen overload and the normalized
//! `args` / `kwargs` (or the error) with what PyTorch recorded.
//!
//! Values are decoded from the corpus encoding (`tests/data/conformance/README.md`):
//! every tensor becomes a meta tensor of the recorded dtype and shape, and the same
//! id gives the same tensor object; results are encoded back the same way (a
//! tensor carries the id of the input it is, by identity) and compared as encoded
//! values.

use opforge::registry::Registry;
use opforge::value::{scalar_type_code, scalar_type_name};
use opforge::{DType, Device, Layout, MemoryFormat, Tensor, Value};
use serde_json::{json, Map, Value as Json};
use std::collections::BTreeMap;
use std::path::Path;

/// Loads PyTorch's schema file with the registration order of its overloads.
pub fn pytorch_registry(schema: &Path, overloads: &Path) -> Result<Registry, String> {
    let r = Registry::from_path(schema).map_err(|e| e.to_string())?;
    let text = std::fs::read_to_string(overloads)
        .map_err(|e| format!("cannot read {}: {e}", overloads.display()))?;
    r.with_overload_order(&text)
}

/// The input tensors of one call, by corpus id.
#[derive(Default)]
pub struct Tensors {
    by_id: Vec<(String, Tensor)>,
}

impl Tensors {
    fn get_or_make(&mut self, t: &Map<String, Json>) -> Result<Tensor, String> {
        let id = t.get("id").and_then(Json::as_str).unwrap_or("").to_string();
        if let Some((_, x)) = self.by_id.iter().find(|(i, _)| *i == id) {
            return Ok(x.clone());
        }
        let dtype = t
            .get("dtype")
            .and_then(Json::as_str)
            .and_then(DType::from_name)
            .ok_or_else(|| format!("unsupported tensor dtype in {t:?}"))?;
        let shape: Vec<usize> = t
            .get("shape")
            .and_then(Json::as_array)
            .ok_or("tensor without shape")?
            .iter()
            .map(|d| d.as_u64().map(|d| d as usize).ok_or("bad dim"))
            .collect::<Result<_, _>>()?;
        let x = Tensor::zeros(&shape, dtype, Device::Meta);
        self.by_id.push((id, x.clone()));
        Ok(x)
    }

    /// The corpus id of an input tensor (by identity).
    pub fn id_of(&self, t: &Tensor) -> Option<&str> {
        self.by_id
            .iter()
            .find(|(_, x)| x.is_same(t))
            .map(|(i, _)| i.as_str())
    }
}

fn float_of(v: &Json) -> Option<f64> {
    match v {
        Json::String(s) => match s.as_str() {
            "inf" => Some(f64::INFINITY),
            "-inf" => Some(f64::NEG_INFINITY),
            "nan" => Some(f64::NAN),
            _ => None,
        },
        other => other.as_f64(),
    }
}

/// Decodes one encoded value into a runtime [`Value`] (as a Python caller passes it).
pub fn decode(v: &Json, tensors: &mut Tensors) -> Result<Value, String> {
    let Json::Object(m) = v else {
        return match v {
            Json::Null => Ok(Value::None),
            other => Err(format!("unexpected value {other}")),
        };
    };
    let (k, x) = m.iter().next().ok_or("empty value object")?;
    Ok(match k.as_str() {
        "tensor" => Value::Tensor(tensors.get_or_make(x.as_object().ok_or("bad tensor")?)?),
        "int" => Value::Int(x.as_i64().ok_or("bad int")?),
        "float" => Value::Float(float_of(x).ok_or("bad float")?),
        "bool" => Value::Bool(x.as_bool().ok_or("bad bool")?),
        "str" => Value::Str(x.as_str().ok_or("bad str")?.to_string()),
        "list" => Value::List(
            x.as_array()
                .ok_or("bad list")?
                .iter()
                .map(|e| decode(e, tensors))
                .collect::<Result<_, _>>()?,
        ),
        "dtype" => {
            let name = x.as_str().ok_or("bad dtype")?;
            match DType::from_name(name) {
                Some(d) => Value::DType(d),
                None => Value::ScalarTypeCode(
                    scalar_type_code(name).ok_or_else(|| format!("unsupported dtype {x}"))?,
                ),
            }
        }
        "device" => Value::Device(
            x.as_str()
                .and_then(Device::from_name)
                .ok_or_else(|| format!("unsupported device {x}"))?,
        ),
        "layout" => match x.as_str() {
            Some("strided") => Value::Layout(Layout::Strided),
            _ => return Err(format!("unsupported layout {x}")),
        },
        "memory_format" => Value::MemoryFormat(
            x.as_str()
                .and_then(MemoryFormat::from_name)
                .ok_or_else(|| format!("unsupported memory format {x}"))?,
        ),
        other => return Err(format!("unsupported value kind `{other}`")),
    })
}

fn float_json(x: f64) -> Json {
    if x.is_nan() {
        json!("nan")
    } else if x.is_infinite() {
        json!(if x > 0.0 { "inf" } else { "-inf" })
    } else {
        json!(x)
    }
}

/// Encodes a normalized value the way the corpus records it.
pub fn encode(v: &Value, tensors: &Tensors) -> Json {
    let tensor = |t: &Tensor| {
        let shape: Vec<usize> = t.shape();
        json!({"tensor": {"id": tensors.id_of(t), "dtype": t.dtype().name(), "shape": shape}})
    };
    match v {
        Value::None => Json::Null,
        Value::Bool(b) => json!({ "bool": b }),
        Value::Int(i) => json!({ "int": i }),
        Value::Float(x) => json!({ "float": float_json(*x) }),
        Value::Str(s) => json!({ "str": s }),
        Value::Tensor(t) => tensor(t),
        Value::DType(d) => json!({"dtype": d.name()}),
        Value::ScalarTypeCode(c) => json!({"dtype": scalar_type_name(*c).unwrap_or("?")}),
        Value::Device(d) => json!({"device": d.name()}),
        Value::Layout(_) => json!({"layout": "strided"}),
        Value::MemoryFormat(m) => json!({"memory_format": m.name()}),
        other => match opforge::normalize::list_items(other) {
            Some(items) => {
                json!({"list": items.iter().map(|x| encode(x, tensors)).collect::<Vec<_>>()})
            }
            None => json!({"repr": other.to_string()}),
        },
    }
}

/// Equality of encoded values: numbers by value (the `int`/`float` tag keeps the
/// kinds apart), objects by key set, tensors by id, dtype and shape.
pub fn enc_eq(a: &Json, b: &Json) -> bool {
    match (a, b) {
        (Json::Number(x), Json::Number(y)) => match (x.as_i64(), y.as_i64()) {
            (Some(x), Some(y)) => x == y,
            _ => x.as_f64() == y.as_f64(),
        },
        (Json::Array(x), Json::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| enc_eq(x, y))
        }
        (Json::Object(x), Json::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| enc_eq(v, w)))
        }
        _ => a == b,
    }
}

/// What happened to one case.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// The case id.
    pub id: String,
    /// The kind of call the id names (`canonical`, `invalid:unknown_kw`, …).
    pub category: String,
    /// `op` or `api`.
    pub level: &'static str,
    /// Matched (overload and normalized arguments, or an error where PyTorch raised).
    pub passed: bool,
    /// For error cases: whether the message matched word for word (class too).
    pub message_matched: Option<bool>,
    /// Expected vs got, for failures (and for error cases with a different message).
    pub diff: String,
    /// Not handled (a level without an implementation, an undecodable value).
    pub unhandled: bool,
}

fn category(id: &str) -> String {
    let last = id.rsplit('/').next().unwrap_or(id);
    last.split('(').next().unwrap_or(last).to_string()
}

/// Decoded positional and keyword arguments.
type Call = (Vec<Value>, Vec<(String, Value)>);

type CallResult = Result<(String, Vec<Value>, Vec<(String, Value)>), opforge::Error>;

/// Replays one record against `registry`.
pub fn run_record(registry: &Registry, rec: &Json) -> Outcome {
    let id = rec["id"].as_str().unwrap_or("?").to_string();
    let mut out = Outcome {
        category: category(&id),
        id,
        level: if rec.get("op").is_some() { "op" } else { "api" },
        passed: false,
        message_matched: None,
        diff: String::new(),
        unhandled: false,
    };
    let mut tensors = Tensors::default();
    let decoded = (|| -> Result<Call, String> {
        let args = rec["args"]
            .as_array()
            .ok_or("no args")?
            .iter()
            .map(|v| decode(v, &mut tensors))
            .collect::<Result<Vec<_>, _>>()?;
        let kwargs = rec["kwargs"]
            .as_object()
            .ok_or("no kwargs")?
            .iter()
            .map(|(k, v)| Ok((k.clone(), decode(v, &mut tensors)?)))
            .collect::<Result<Vec<_>, String>>()?;
        Ok((args, kwargs))
    })();
    let (args, kwargs) = match decoded {
        Ok(x) => x,
        Err(e) => {
            out.unhandled = true;
            out.diff = format!("cannot decode: {e}");
            return out;
        }
    };
    let result: CallResult = if let Some(op) = rec["op"].as_str() {
        registry.resolve(op, &args, &kwargs).and_then(|r| {
            let Some(schema) = r.overload.op.filter(|_| r.overload.dispatcher) else {
                return Err(opforge::Error::Runtime(
                    format!(
                        "(opforge) matched the TorchScript-only overload {}",
                        r.overload.schema_text
                    )
                    .into(),
                ));
            };
            let (a, k) = opforge::normalize::normalize(schema, &r.bound);
            Ok((
                r.overload.name.to_string(),
                a,
                k.into_iter().map(|(n, v)| (n.to_string(), v)).collect(),
            ))
        })
    } else {
        let api = rec["api"].as_str().unwrap_or("");
        opforge::argparse::call(registry, api, args, kwargs).map(|(o, a, k)| {
            (
                o,
                a,
                k.into_iter().map(|(n, v)| (n.to_string(), v)).collect(),
            )
        })
    };
    judge(&mut out, &rec["expect"], result, &tensors);
    out
}

fn judge(out: &mut Outcome, expect: &Json, result: CallResult, tensors: &Tensors) {
    match (expect.get("error"), result) {
        (Some(class), Err(e)) => {
            out.passed = true;
            let want = expect["message"].as_str().unwrap_or("");
            let same = class.as_str() == Some(e.python_class()) && e.to_string() == want;
            out.message_matched = Some(same);
            if !same {
                out.diff = format!(
                    "message differs\n  expected {}: {want:?}\n  got      {}: {:?}",
                    class.as_str().unwrap_or("?"),
                    e.python_class(),
                    e.to_string()
                );
            }
        }
        (Some(_), Ok((o, a, k))) => {
            out.message_matched = Some(false);
            out.diff = format!(
                "expected error {:?}\n  got {o} {}",
                expect["message"].as_str().unwrap_or(""),
                show(&a, &k, tensors)
            );
        }
        (None, Err(e)) => {
            out.diff = format!(
                "expected {} {} {}\n  got {}: {}",
                expect["overload"].as_str().unwrap_or("?"),
                expect["args"],
                expect["kwargs"],
                e.python_class(),
                e
            );
        }
        (None, Ok((o, a, k))) => {
            let got_args: Vec<Json> = a.iter().map(|v| encode(v, tensors)).collect();
            let got_kwargs: BTreeMap<&str, Json> = k
                .iter()
                .map(|(n, v)| (n.as_str(), encode(v, tensors)))
                .collect();
            let want_args = expect["args"].as_array().cloned().unwrap_or_default();
            let want_kwargs = expect["kwargs"].as_object().cloned().unwrap_or_default();
            let args_ok = want_args.len() == got_args.len()
                && want_args.iter().zip(&got_args).all(|(x, y)| enc_eq(x, y));
            let kwargs_ok = want_kwargs.len() == got_kwargs.len()
                && want_kwargs
                    .iter()
                    .all(|(n, v)| got_kwargs.get(n.as_str()).is_some_and(|w| enc_eq(v, w)));
            out.passed = expect["overload"].as_str() == Some(o.as_str()) && args_ok && kwargs_ok;
            if !out.passed {
                out.diff = format!(
                    "expected {} {} {}\n  got      {o} {}",
                    expect["overload"].as_str().unwrap_or("?"),
                    Json::Array(want_args),
                    Json::Object(want_kwargs),
                    show(&a, &k, tensors)
                );
            }
        }
    }
}

fn show(a: &[Value], k: &[(String, Value)], tensors: &Tensors) -> String {
    let args: Vec<Json> = a.iter().map(|v| encode(v, tensors)).collect();
    let kwargs: Map<String, Json> = k
        .iter()
        .map(|(n, v)| (n.clone(), encode(v, tensors)))
        .collect();
    format!("{} {}", Json::Array(args), Json::Object(kwargs))
}

/// Totals over a corpus.
#[derive(Default, Debug)]
pub struct Summary {
    /// Every outcome, in corpus order.
    pub outcomes: Vec<Outcome>,
}

impl Summary {
    /// Replays every record of a JSONL corpus text.
    pub fn run(registry: &Registry, corpus: &str) -> Result<Summary, String> {
        let mut s = Summary::default();
        for (i, line) in corpus.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let rec: Json =
                serde_json::from_str(line).map_err(|e| format!("corpus line {}: {e}", i + 1))?;
            s.outcomes.push(run_record(registry, &rec));
        }
        Ok(s)
    }

    /// Handled cases that matched.
    pub fn passed(&self) -> usize {
        self.outcomes
            .iter()
            .filter(|o| !o.unhandled && o.passed)
            .count()
    }

    /// Handled cases that did not match.
    pub fn failed(&self) -> usize {
        self.outcomes
            .iter()
            .filter(|o| !o.unhandled && !o.passed)
            .count()
    }

    /// Cases not handled.
    pub fn unhandled(&self) -> usize {
        self.outcomes.iter().filter(|o| o.unhandled).count()
    }

    /// (matched word for word, error cases).
    pub fn messages(&self) -> (usize, usize) {
        let errs: Vec<bool> = self
            .outcomes
            .iter()
            .filter_map(|o| o.message_matched)
            .collect();
        (errs.iter().filter(|&&m| m).count(), errs.len())
    }

    /// The human-readable report: failures per category with the first few
    /// expected-vs-got diffs, the message rate, and last `N passed, M failed`.
    pub fn report(&self, examples: usize) -> String {
        let mut by_cat: BTreeMap<(&str, &str), Vec<&Outcome>> = BTreeMap::new();
        for o in self.outcomes.iter().filter(|o| !o.passed && !o.unhandled) {
            by_cat.entry((o.level, &o.category)).or_default().push(o);
        }
        let mut s = String::new();
        for ((level, cat), fails) in &by_cat {
            s.push_str(&format!("== {level} {cat}: {} failed\n", fails.len()));
            for f in fails.iter().take(examples) {
                s.push_str(&format!("FAIL {}\n  {}\n", f.id, f.diff));
            }
        }
        let mut msg_cat: BTreeMap<&str, Vec<&Outcome>> = BTreeMap::new();
        for o in self
            .outcomes
            .iter()
            .filter(|o| o.passed && o.message_matched == Some(false))
        {
            msg_cat.entry(&o.category).or_default().push(o);
        }
        for (cat, v) in &msg_cat {
            s.push_str(&format!("-- message differs, {cat}: {}\n", v.len()));
            for f in v.iter().take(examples.min(2)) {
                s.push_str(&format!("MSG {}\n  {}\n", f.id, f.diff));
            }
        }
        let unhandled = self.unhandled();
        if unhandled > 0 {
            s.push_str(&format!("{unhandled} not handled\n"));
            if let Some(o) = self.outcomes.iter().find(|o| o.unhandled) {
                s.push_str(&format!("  e.g. {}: {}\n", o.id, o.diff));
            }
        }
        let (m, e) = self.messages();
        s.push_str(&format!(
            "error messages matched word for word: {m}/{e} ({:.1}%)\n",
            100.0 * m as f64 / e.max(1) as f64
        ));
        s.push_str(&format!(
            "{} passed, {} failed\n",
            self.passed(),
            self.failed()
        ));
        s
    }
}
