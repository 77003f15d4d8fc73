//! API-level conformance: replays `shared/conformance/api_calls.jsonl` (calls of
//! `torch.*`, `torch.linalg|special|fft.*` and `Tensor.*` recorded from PyTorch
//! 2.15) through `opforge::argparse::call` against PyTorch's own schema file, and
//! checks the selected overload, the normalized arguments and the error messages.

use opforge::argparse::call;
use opforge::registry::Registry;
use opforge::{DType, Device, Tensor, Value};
use serde_json::{json, Value as J};
use std::collections::HashMap;
use std::path::Path;

const SHARED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared");

struct Ctx {
    tensors: HashMap<String, Tensor>,
}

impl Ctx {
    fn decode(&mut self, j: &J) -> Result<Value, String> {
        if j.is_null() {
            return Ok(Value::None);
        }
        let (k, v) = j
            .as_object()
            .and_then(|o| o.iter().next())
            .ok_or_else(|| format!("bad value {j}"))?;
        Ok(match k.as_str() {
            "int" => Value::Int(v.as_i64().ok_or("int")?),
            "float" => Value::Float(match v {
                J::String(s) => match s.as_str() {
                    "inf" => f64::INFINITY,
                    "-inf" => f64::NEG_INFINITY,
                    _ => f64::NAN,
                },
                v => v.as_f64().ok_or("float")?,
            }),
            "bool" => Value::Bool(v.as_bool().ok_or("bool")?),
            "str" => Value::Str(v.as_str().ok_or("str")?.to_string()),
            "list" => Value::List(
                v.as_array()
                    .ok_or("list")?
                    .iter()
                    .map(|x| self.decode(x))
                    .collect::<Result<_, _>>()?,
            ),
            "dtype" => Value::DType(DType::from_name(v.as_str().unwrap_or("")).ok_or("dtype")?),
            "device" => Value::Str(v.as_str().unwrap_or("").to_string()),
            "layout" => Value::Layout(opforge::Layout::Strided),
            "memory_format" => Value::MemoryFormat(
                opforge::MemoryFormat::from_name(v.as_str().unwrap_or(""))
                    .ok_or("memory_format")?,
            ),
            "tensor" => {
                let id = v["id"].as_str().unwrap_or("").to_string();
                let shape: Vec<usize> = v["shape"]
                    .as_array()
                    .ok_or("shape")?
                    .iter()
                    .map(|x| x.as_u64().unwrap_or(0) as usize)
                    .collect();
                let dtype = DType::from_name(v["dtype"].as_str().unwrap_or("")).ok_or("dtype")?;
                let t = self
                    .tensors
                    .entry(id)
                    .or_insert_with(|| Tensor::zeros(&shape, dtype, Device::Cpu))
                    .clone();
                Value::Tensor(t)
            }
            other => return Err(format!("cannot decode {other}")),
        })
    }

    fn encode(&self, v: &Value) -> J {
        let f = |x: f64| {
            if x.is_nan() {
                json!({"float": "nan"})
            } else if x.is_infinite() {
                json!({"float": if x > 0.0 { "inf" } else { "-inf" }})
            } else {
                json!({ "float": x })
            }
        };
        match v {
            Value::None => J::Null,
            Value::Bool(b) => json!({ "bool": b }),
            Value::Int(i) => json!({ "int": i }),
            Value::Float(x) => f(*x),
            Value::Str(s) => json!({ "str": s }),
            Value::Tensor(t) => {
                let id = self
                    .tensors
                    .iter()
                    .find(|(_, u)| u.is_same(t))
                    .map(|(k, _)| J::String(k.clone()))
                    .unwrap_or(J::Null);
                json!({"tensor": {"id": id, "dtype": t.dtype().name(), "shape": t.shape()}})
            }
            Value::IntList(xs) => {
                json!({"list": xs.iter().map(|i| json!({"int": i})).collect::<Vec<_>>()})
            }
            Value::FloatList(xs) => json!({"list": xs.iter().map(|x| f(*x)).collect::<Vec<_>>()}),
            Value::BoolList(xs) => {
                json!({"list": xs.iter().map(|b| json!({"bool": b})).collect::<Vec<_>>()})
            }
            Value::ScalarList(xs) => {
                json!({"list": xs.iter().map(|s| self.encode(&Value::from(*s))).collect::<Vec<_>>()})
            }
            Value::TensorList(xs) => {
                json!({"list": xs.iter().map(|t| self.encode(&Value::Tensor(t.clone()))).collect::<Vec<_>>()})
            }
            Value::OptTensorList(xs) => {
                json!({"list": xs.iter().map(|t| t.as_ref().map_or(J::Null, |t| self.encode(&Value::Tensor(t.clone())))).collect::<Vec<_>>()})
            }
            Value::List(xs) => {
                json!({"list": xs.iter().map(|x| self.encode(x)).collect::<Vec<_>>()})
            }
            Value::DType(d) => json!({ "dtype": d.name() }),
            Value::Device(d) => json!({ "device": d.name() }),
            Value::Layout(_) => json!({"layout": "strided"}),
            Value::MemoryFormat(m) => json!({ "memory_format": match m {
                opforge::MemoryFormat::Contiguous => "contiguous_format",
                opforge::MemoryFormat::Preserve => "preserve_format",
                opforge::MemoryFormat::ChannelsLast => "channels_last",
                _ => "channels_last_3d",
            } }),
            other => json!({ "repr": format!("{other:?}") }),
        }
    }
}

fn registry() -> &'static Registry {
    let yaml = Path::new(SHARED).join("pytorch/native_functions.yaml");
    let overloads =
        std::fs::read_to_string(Path::new(SHARED).join("conformance/aten_overloads.jsonl"))
            .expect("aten_overloads.jsonl");
    // `call` derives the parsers from the registry's own bindings.
    Box::leak(Box::new(
        Registry::from_path(&yaml)
            .expect("PyTorch's schema file loads")
            .with_overload_order(&overloads)
            .expect("overload order"),
    ))
}

#[test]
fn api_calls_match_pytorch() {
    let path = Path::new(SHARED).join("conformance/api_calls.jsonl");
    let text = std::fs::read_to_string(&path).expect("api_calls.jsonl");
    let reg = registry();
    let (mut ok_total, mut ok_match, mut err_total, mut err_rejected, mut err_exact) =
        (0, 0, 0, 0, 0);
    let mut failures = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let rec: J = serde_json::from_str(line).expect("json");
        let mut ctx = Ctx {
            tensors: HashMap::new(),
        };
        let args: Result<Vec<Value>, String> = rec["args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| ctx.decode(a))
            .collect();
        let kwargs: Result<Vec<(String, Value)>, String> = rec["kwargs"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| ctx.decode(v).map(|v| (k.clone(), v)))
            .collect();
        let expect = &rec["expect"];
        let id = rec["id"].as_str().unwrap_or("");
        let result = match (args, kwargs) {
            (Ok(a), Ok(k)) => call(reg, rec["api"].as_str().unwrap(), a, k),
            (Err(e), _) | (_, Err(e)) => Err(opforge::Error::Runtime(format!("decode: {e}"))),
        };
        if let Some(msg) = expect.get("message") {
            err_total += 1;
            match result {
                Err(e) => {
                    err_rejected += 1;
                    if e.to_string() == msg.as_str().unwrap_or("") {
                        err_exact += 1;
                    } else {
                        failures.push(format!(
                            "{id}: message\n  got:  {e}\n  want: {}",
                            msg.as_str().unwrap_or("")
                        ));
                    }
                }
                Ok((o, ..)) => failures.push(format!("{id}: accepted as {o}, want error {msg}")),
            }
        } else {
            ok_total += 1;
            match result {
                Ok((overload, a, k)) => {
                    let got_args = J::Array(a.iter().map(|v| ctx.encode(v)).collect());
                    let got_kwargs: serde_json::Map<String, J> = k
                        .iter()
                        .map(|(n, v)| (n.to_string(), ctx.encode(v)))
                        .collect();
                    let want_kwargs = expect["kwargs"].as_object().cloned().unwrap_or_default();
                    let same_kwargs = got_kwargs.len() == want_kwargs.len()
                        && want_kwargs
                            .iter()
                            .all(|(n, v)| got_kwargs.get(n) == Some(v));
                    if overload == expect["overload"].as_str().unwrap_or("")
                        && got_args == expect["args"]
                        && same_kwargs
                    {
                        ok_match += 1;
                    } else {
                        failures.push(format!(
                            "{id}: got {overload} {got_args} {}\n  want {} {} {}",
                            J::Object(got_kwargs),
                            expect["overload"],
                            expect["args"],
                            expect["kwargs"]
                        ));
                    }
                }
                Err(e) => failures.push(format!("{id}: error {e}")),
            }
        }
    }
    let total = ok_total + err_total;
    let matched = ok_match + err_rejected;
    let rate = matched as f64 / total as f64;
    let exact = err_exact as f64 / err_total as f64;
    eprintln!(
        "api_calls: {matched}/{total} matched ({:.2}%): {ok_match}/{ok_total} successes, {err_rejected}/{err_total} errors rejected; exact messages {err_exact}/{err_total} ({:.2}%)",
        rate * 100.0,
        exact * 100.0
    );
    if let Ok(out) = std::env::var("API_FAILURES") {
        std::fs::write(out, failures.join("\n")).ok();
    }
    for f in failures.iter().take(15) {
        eprintln!("{f}");
    }
    assert_eq!(matched, total, "matched rate {rate}");
    assert_eq!(err_exact, err_total, "exact message rate {exact}");
}
