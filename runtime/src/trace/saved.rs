//! Saving a captured graph: [`Graph`] through serde, in a JSON form that a
//! loaded graph re-executes from.
//!
//! ```text
//! {"format": "opforge.graph", "version": 1, "tokens": 0, "objects": [],
//!  "nodes": [
//!    {"name": "arg0_1", "op": "placeholder"},
//!    {"name": "add", "op": "call_function", "target": "aten::add.Tensor",
//!     "args": [{"node": 0}, {"int": 1}], "kwargs": [["alpha", {"float": 0.5}]]},
//!    {"name": "getitem", "op": "call_function", "target": "getitem", "args": [...]},
//!    {"name": "with_effects", "op": "call_function", "target": "higher_order::with_effects",
//!     "args": [{"node": 0}, {"op": "mylib::for_each_add"}, ...]},
//!    {"name": "output", "op": "output", "args": [{"node": 1}]}]}
//! ```
//!
//! - A target is an operator's qualified name (`ns::name.overload`, the
//!   default overload without one; a method call is the operator
//!   `higher_order::call_torchbind`, an effectful call
//!   `higher_order::with_effects`), or `getitem`. Graphs saved before these
//!   were operators name them `call_torchbind` and `{"with_effects": op}`
//!   (the operator not among the arguments); they load as the operators.
//! - An argument is `{"node": i}` (node `i`'s value), `{"args": [...]}` (a
//!   list of arguments), or a constant: `null`, `{"bool": b}`,
//!   `{"int": i}`, `{"float": x}` (`"inf"`, `"-inf"`, `"nan"` for the
//!   non-finite), `{"str": s}`, `{"ints": [...]}`, `{"floats": [...]}`,
//!   `{"bools": [...]}`, `{"list": [constants]}`, `{"dtype": "float32"}`,
//!   `{"device": "cpu"}`, `{"layout": "strided"}`,
//!   `{"memory_format": "contiguous_format"}`, `{"tensor": saved tensor}`
//!   (`crate::tensor`'s saved form: elements exactly), `{"object": i}`,
//!   the graph's `i`-th object, or `{"op": name}`, an operator overload by
//!   its qualified name (`with_effects`' operator).
//! - `objects` holds each custom-class object the graph uses as a constant
//!   once (so that two uses stay one object), saved through its class's
//!   pickling (`crate::classes::save`: its class and state).
//! - `tokens` is how many effect tokens lead the inputs and outputs.
//!
//! Loading resolves every operator and class: one the program does not
//! have is an error naming it. A saved graph nests arrays and objects at
//! most [`MAX_VALUE_DEPTH`] levels deep (the limit boxed calls put on lists,
//! and serde_json's reader on documents): loading and printing recurse once
//! per level, so a deeper one is refused before they start, however the
//! `Json` was made.

use super::graph::{is_identifier, Arg, Graph, Node, NodeKind, Target};
use crate::classes::torchbind::{call_torchbind_op, with_effects_op};
use crate::error::{Error, Result};
use crate::tensor::{DType, Device, Layout, MemoryFormat, Tensor};
use crate::value::ScriptObject;
use crate::value::{Value, MAX_VALUE_DEPTH};
use serde::de::{DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde::{de, ser, Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{json, Map, Value as Json};

const FORMAT: &str = "opforge.graph";
const VERSION: u64 = 1;

fn bad(what: impl Into<String>) -> Error {
    Error::Runtime(format!("not a saved graph: {}", what.into()).into())
}

impl Graph {
    /// The graph's saved form (see the module docs of `trace::saved`).
    pub fn to_json(&self) -> Result<Json> {
        let mut objects = Objects::default();
        let nodes = self
            .nodes()
            .iter()
            .map(|n| node_json(n, &mut objects))
            .collect::<Result<Vec<_>>>()?;
        let saved = objects
            .list
            .iter()
            .map(|o| {
                let bytes = crate::classes::save(o)?;
                serde_json::from_slice(&bytes).map_err(|e| Error::Runtime(e.to_string().into()))
            })
            .collect::<Result<Vec<Json>>>()?;
        Ok(json!({
            "format": FORMAT,
            "version": VERSION,
            "tokens": self.tokens(),
            "objects": saved,
            "nodes": nodes,
        }))
    }

    /// A graph from its saved form. An operator or a custom class the
    /// program does not have is an error naming it, and so is a form nested
    /// deeper than [`MAX_VALUE_DEPTH`] levels (checked first, without
    /// recursion).
    pub fn from_json(v: &Json) -> Result<Graph> {
        if nests_deeper_than(v, MAX_VALUE_DEPTH) {
            return Err(too_deep());
        }
        if v["format"].as_str() != Some(FORMAT) {
            return Err(bad(format!("`format` is not \"{FORMAT}\"")));
        }
        if v["version"].as_u64() != Some(VERSION) {
            return Err(bad(format!(
                "version {} (this program reads version {VERSION})",
                v["version"]
            )));
        }
        let tokens = v["tokens"].as_u64().ok_or_else(|| bad("no `tokens`"))? as usize;
        let objects = match &v["objects"] {
            Json::Null => Vec::new(),
            Json::Array(saved) => saved
                .iter()
                .map(|o| {
                    let bytes =
                        serde_json::to_vec(o).map_err(|e| Error::Runtime(e.to_string().into()))?;
                    crate::classes::load(&bytes)
                })
                .collect::<Result<Vec<_>>>()?,
            _ => return Err(bad("`objects` is not a list")),
        };
        let nodes = v["nodes"].as_array().ok_or_else(|| bad("no `nodes`"))?;
        let nodes = nodes
            .iter()
            .enumerate()
            .map(|(i, n)| node_from(n, i, &objects))
            .collect::<Result<Vec<_>>>()?;
        Graph::from_parts(nodes, tokens)
    }
}

/// The error for a saved graph nested deeper than [`MAX_VALUE_DEPTH`].
fn too_deep() -> Error {
    bad(format!(
        "it nests more than {MAX_VALUE_DEPTH} levels deep (the limit of opforge::value::MAX_VALUE_DEPTH)"
    ))
}

/// Do arrays and objects nest in `v` more than `limit` levels deep (a
/// scalar is at level 0, the items of a top-level array at level 1)?
/// Walked with an explicit stack: `v` may be as deep as memory allows.
fn nests_deeper_than(v: &Json, limit: usize) -> bool {
    let mut stack: Vec<(&Json, usize)> = vec![(v, 0)];
    while let Some((v, depth)) = stack.pop() {
        let items: Box<dyn Iterator<Item = &Json>> = match v {
            Json::Array(xs) => Box::new(xs.iter()),
            Json::Object(m) => Box::new(m.values()),
            _ => continue,
        };
        if depth == limit {
            return true;
        }
        stack.extend(items.map(|x| (x, depth + 1)));
    }
    false
}

/// A `Json` read from any deserializer, refusing to nest more than
/// `remaining` levels deep (serde_json's own `Value` recurses per level with
/// no limit of its own: a deserializer without one would overflow the stack
/// in it).
struct Bounded {
    remaining: usize,
}

impl<'de> DeserializeSeed<'de> for Bounded {
    type Value = Json;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> std::result::Result<Json, D::Error> {
        d.deserialize_any(self)
    }
}

impl Bounded {
    /// The seed for one level down, or the error if there is none left.
    fn inner<E: de::Error>(&self) -> std::result::Result<Bounded, E> {
        match self.remaining {
            0 => Err(E::custom(too_deep())),
            n => Ok(Bounded { remaining: n - 1 }),
        }
    }
}

impl<'de> Visitor<'de> for Bounded {
    type Value = Json;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, b: bool) -> std::result::Result<Json, E> {
        Ok(Json::Bool(b))
    }

    fn visit_i64<E>(self, i: i64) -> std::result::Result<Json, E> {
        Ok(Json::from(i))
    }

    fn visit_u64<E>(self, u: u64) -> std::result::Result<Json, E> {
        Ok(Json::from(u))
    }

    fn visit_f64<E>(self, x: f64) -> std::result::Result<Json, E> {
        Ok(Json::from(x))
    }

    fn visit_str<E>(self, s: &str) -> std::result::Result<Json, E> {
        Ok(Json::String(s.to_string()))
    }

    fn visit_string<E>(self, s: String) -> std::result::Result<Json, E> {
        Ok(Json::String(s))
    }

    fn visit_unit<E>(self) -> std::result::Result<Json, E> {
        Ok(Json::Null)
    }

    fn visit_none<E>(self) -> std::result::Result<Json, E> {
        Ok(Json::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> std::result::Result<Json, D::Error> {
        self.deserialize(d)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<Json, A::Error> {
        let mut items = Vec::new();
        while let Some(v) = seq.next_element_seed(self.inner()?)? {
            items.push(v);
        }
        Ok(Json::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<Json, A::Error> {
        let mut m = Map::new();
        while let Some(k) = map.next_key::<String>()? {
            let v = map.next_value_seed(self.inner()?)?;
            m.insert(k, v);
        }
        Ok(Json::Object(m))
    }
}

/// The objects a graph uses as constants, each once, by address.
#[derive(Default)]
struct Objects {
    list: Vec<ScriptObject>,
}

impl Objects {
    fn index(&mut self, o: &ScriptObject) -> usize {
        match self.list.iter().position(|x| x.is_same(o)) {
            Some(i) => i,
            None => {
                self.list.push(o.clone());
                self.list.len() - 1
            }
        }
    }
}

fn node_json(n: &Node, objects: &mut Objects) -> Result<Json> {
    Ok(match &n.kind {
        NodeKind::Placeholder => json!({"name": n.name, "op": "placeholder"}),
        NodeKind::CallFunction {
            target,
            args,
            kwargs,
        } => {
            let target = match target {
                Target::Op(op) => json!(qualified(op.schema)),
                Target::GetItem => json!("getitem"),
            };
            let kwargs = kwargs
                .iter()
                .map(|(k, a)| Ok(json!([k, arg_json(a, objects)?])))
                .collect::<Result<Vec<_>>>()?;
            json!({
                "name": n.name,
                "op": "call_function",
                "target": target,
                "args": args.iter().map(|a| arg_json(a, objects)).collect::<Result<Vec<_>>>()?,
                "kwargs": kwargs,
            })
        }
        NodeKind::Output(results) => json!({
            "name": n.name,
            "op": "output",
            "args": results.iter().map(|a| arg_json(a, objects)).collect::<Result<Vec<_>>>()?,
        }),
    })
}

fn qualified(s: &crate::tables::OpSchema) -> String {
    format!("{}::{}", s.namespace, s.name)
}

fn arg_json(a: &Arg, objects: &mut Objects) -> Result<Json> {
    Ok(match a {
        Arg::Node(n) => json!({ "node": n }),
        Arg::List(items) => {
            let items = items
                .iter()
                .map(|a| arg_json(a, objects))
                .collect::<Result<Vec<_>>>()?;
            json!({ "args": items })
        }
        Arg::Const(v) => value_json(v, objects)?,
    })
}

fn float_json(x: f64) -> Json {
    if x.is_finite() {
        json!(x)
    } else if x.is_nan() {
        json!("nan")
    } else if x > 0.0 {
        json!("inf")
    } else {
        json!("-inf")
    }
}

fn value_json(v: &Value, objects: &mut Objects) -> Result<Json> {
    let tagged = |k: &str, v: Json| {
        let mut m = Map::new();
        m.insert(k.to_string(), v);
        Json::Object(m)
    };
    Ok(match v {
        Value::None => Json::Null,
        Value::Bool(b) => tagged("bool", json!(b)),
        Value::Int(i) => tagged("int", json!(i)),
        Value::Float(x) => tagged("float", float_json(*x)),
        Value::Str(s) => tagged("str", json!(s)),
        Value::IntList(xs) => tagged("ints", json!(xs)),
        Value::FloatList(xs) => tagged(
            "floats",
            Json::Array(xs.iter().map(|&x| float_json(x)).collect()),
        ),
        Value::BoolList(xs) => tagged("bools", json!(xs)),
        Value::DType(d) => tagged("dtype", json!(d.name())),
        Value::Device(d) => tagged("device", json!(d.name())),
        Value::Layout(l) => tagged("layout", json!(l.name())),
        Value::MemoryFormat(m) => tagged("memory_format", json!(m.name())),
        Value::Tensor(t) => tagged(
            "tensor",
            serde_json::to_value(t)
                .map_err(|e| Error::Runtime(format!("saving a constant tensor: {e}").into()))?,
        ),
        Value::Object(o) => tagged("object", json!(objects.index(o))),
        Value::Op(s) => tagged("op", json!(qualified(s))),
        Value::ScalarList(_) | Value::TensorList(_) | Value::OptTensorList(_) | Value::List(_) => {
            let items = crate::normalize::list_items(v).unwrap_or_default();
            tagged(
                "list",
                Json::Array(
                    items
                        .iter()
                        .map(|v| value_json(v, objects))
                        .collect::<Result<_>>()?,
                ),
            )
        }
        other => {
            return Err(Error::Runtime(
                format!(
                    "a graph constant of type {} cannot be saved",
                    other.type_name()
                )
                .into(),
            ))
        }
    })
}

fn node_from(n: &Json, i: usize, objects: &[ScriptObject]) -> Result<Node> {
    let raw = n["name"]
        .as_str()
        .ok_or_else(|| bad(format!("node {i} has no `name`")))?;
    // Quoted as Python would (what a file names a node may hold anything).
    let name = crate::pyfmt::repr_str(raw);
    let args = || -> Result<Vec<Arg>> {
        n["args"]
            .as_array()
            .ok_or_else(|| bad(format!("node {name} has no `args`")))?
            .iter()
            .map(|a| arg_from(a, objects))
            .collect()
    };
    let kind = match n["op"].as_str() {
        Some("placeholder") => NodeKind::Placeholder,
        Some("output") => NodeKind::Output(args()?),
        Some("call_function") => {
            // The earlier forms of the higher-order operators' targets
            // (`"call_torchbind"`, `{"with_effects": op}` with the operator
            // not among the arguments) are read as the operators they are.
            let mut effect_op = None;
            let target = match &n["target"] {
                Json::String(s) if s == "getitem" => Target::GetItem,
                Json::String(s) if s == "call_torchbind" => Target::Op(call_torchbind_op()),
                Json::String(s) => Target::Op(operator(s)?),
                Json::Object(m) => match m.get("with_effects").and_then(Json::as_str) {
                    Some(s) => {
                        let op = match s {
                            "call_torchbind" => call_torchbind_op(),
                            s => operator(s)?,
                        };
                        effect_op = Some(Arg::Const(Value::Op(op.schema)));
                        Target::Op(with_effects_op())
                    }
                    None => return Err(bad(format!("node {name} has an unknown target"))),
                },
                _ => return Err(bad(format!("node {name} has no `target`"))),
            };
            let mut args = args()?;
            if let Some(op) = effect_op {
                args.insert(args.len().min(1), op);
            }
            let kwargs = match &n["kwargs"] {
                Json::Null => Vec::new(),
                Json::Array(pairs) => pairs
                    .iter()
                    .map(|p| match (p[0].as_str(), p.get(1)) {
                        // FX prints keywords as `name = value`: a name that
                        // is not an identifier would print other code.
                        (Some(k), Some(_)) if !is_identifier(k) => Err(bad(format!(
                            "node {name} has a keyword argument named {}, not an identifier",
                            crate::pyfmt::repr_str(k)
                        ))),
                        (Some(k), Some(a)) => Ok((k.to_string(), arg_from(a, objects)?)),
                        _ => Err(bad(format!("node {name} has a malformed keyword argument"))),
                    })
                    .collect::<Result<Vec<_>>>()?,
                _ => return Err(bad(format!("node {name}'s `kwargs` is not a list"))),
            };
            NodeKind::CallFunction {
                target,
                args,
                kwargs,
            }
        }
        other => return Err(bad(format!("node {name} has op {other:?}"))),
    };
    Ok(Node {
        name: raw.to_string(),
        kind,
    })
}

/// The operator a saved graph names: one the program does not have is an
/// error naming it.
fn operator(name: &str) -> Result<&'static crate::dispatch::Operator> {
    crate::dispatch::dispatcher().find(name).ok_or_else(|| {
        Error::UnknownOp(
            format!("{name} (named by a saved graph; is the crate that defines it linked?)").into(),
        )
    })
}

fn arg_from(j: &Json, objects: &[ScriptObject]) -> Result<Arg> {
    if let Json::Object(m) = j {
        if let Some(n) = m.get("node") {
            let n = n
                .as_u64()
                .ok_or_else(|| bad("a `node` that is not an index"))?;
            return Ok(Arg::Node(n as usize));
        }
        if let Some(Json::Array(items)) = m.get("args") {
            return Ok(Arg::List(
                items
                    .iter()
                    .map(|a| arg_from(a, objects))
                    .collect::<Result<_>>()?,
            ));
        }
    }
    Ok(Arg::Const(value_from(j, objects)?))
}

fn float_from(j: &Json) -> Result<f64> {
    match j {
        Json::String(s) if s == "nan" => Ok(f64::NAN),
        Json::String(s) if s == "inf" => Ok(f64::INFINITY),
        Json::String(s) if s == "-inf" => Ok(f64::NEG_INFINITY),
        other => other
            .as_f64()
            .ok_or_else(|| bad(format!("{other} is not a float"))),
    }
}

fn value_from(j: &Json, objects: &[ScriptObject]) -> Result<Value> {
    let Json::Object(m) = j else {
        return match j {
            Json::Null => Ok(Value::None),
            other => Err(bad(format!("{other} is not a saved value"))),
        };
    };
    let (Some((k, v)), 1) = (m.iter().next(), m.len()) else {
        return Err(bad(format!("{j} is not a saved value")));
    };
    let ints = |v: &Json| -> Result<Vec<i64>> {
        v.as_array()
            .and_then(|xs| xs.iter().map(Json::as_i64).collect())
            .ok_or_else(|| bad(format!("{v} is not a list of ints")))
    };
    Ok(match k.as_str() {
        "bool" => Value::Bool(v.as_bool().ok_or_else(|| bad("a bool that is not one"))?),
        "int" => Value::Int(v.as_i64().ok_or_else(|| bad("an int that is not one"))?),
        "op" => Value::Op(
            operator(
                v.as_str()
                    .ok_or_else(|| bad("an operator name that is not a string"))?,
            )?
            .schema,
        ),
        "float" => Value::Float(float_from(v)?),
        "str" => Value::Str(
            v.as_str()
                .ok_or_else(|| bad("a str that is not one"))?
                .to_string(),
        ),
        "ints" => Value::IntList(ints(v)?),
        "floats" => Value::FloatList(
            v.as_array()
                .ok_or_else(|| bad("floats that are not a list"))?
                .iter()
                .map(float_from)
                .collect::<Result<_>>()?,
        ),
        "bools" => Value::BoolList(
            v.as_array()
                .and_then(|xs| xs.iter().map(Json::as_bool).collect())
                .ok_or_else(|| bad("bools that are not a list of bools"))?,
        ),
        "dtype" => Value::DType(
            v.as_str()
                .and_then(DType::from_name)
                .ok_or_else(|| bad(format!("unknown dtype {v}")))?,
        ),
        "device" => Value::Device(
            v.as_str()
                .and_then(Device::from_name)
                .ok_or_else(|| bad(format!("unknown device {v}")))?,
        ),
        "layout" => Value::Layout(
            v.as_str()
                .and_then(Layout::from_name)
                .ok_or_else(|| bad(format!("unknown layout {v}")))?,
        ),
        "memory_format" => Value::MemoryFormat(
            v.as_str()
                .and_then(MemoryFormat::from_name)
                .ok_or_else(|| bad(format!("unknown memory format {v}")))?,
        ),
        "tensor" => Value::Tensor(
            serde_json::from_value::<Tensor>(v.clone())
                .map_err(|e| bad(format!("a constant tensor: {e}")))?,
        ),
        "object" => Value::Object(
            v.as_u64()
                .and_then(|i| objects.get(i as usize))
                .cloned()
                .ok_or_else(|| bad(format!("object {v} is not among the graph's objects")))?,
        ),
        "list" => {
            let items = v
                .as_array()
                .ok_or_else(|| bad("a list that is not one"))?
                .iter()
                .map(|v| value_from(v, objects))
                .collect::<Result<Vec<_>>>()?;
            Value::List(items.into())
        }
        other => return Err(bad(format!("unknown value kind `{other}`"))),
    })
}

impl Serialize for Graph {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        self.to_json()
            .map_err(|e| <S::Error as ser::Error>::custom(e.to_string()))?
            .serialize(s)
    }
}

impl<'de> Deserialize<'de> for Graph {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Graph, D::Error> {
        let v = Bounded {
            remaining: MAX_VALUE_DEPTH,
        }
        .deserialize(d)?;
        Graph::from_json(&v).map_err(|e| <D::Error as de::Error>::custom(e.to_string()))
    }
}
