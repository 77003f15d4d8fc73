//! Replaying recorded traces (`trace_calls.jsonl`): each program's API-level
//! calls run, boxed, under `opforge::trace::trace`; the graph is compared
//! with PyTorch's `make_fx` graph node by node (kinds, targets, argument
//! structure, constants, and references by the position of the node referred
//! to, never by name), then re-executed and compared with the recorded
//! eager results. A program that raised while PyTorch traced it must raise
//! the same error here.

use crate::conformance::{decode, enc_eq, encode, Tensors};
use crate::numeric::build_tensor;
use opforge::argparse::ApiTable;
use opforge::functionalize::functionalize;
use opforge::overrides::call_dispatch;
use opforge::trace::{trace, Arg, Graph, NodeKind, TracingMode};
use opforge::{Tensor, Value};
use serde_json::{Map, Value as Json};
use std::collections::HashMap;
use std::path::Path;

/// One recorded program.
pub struct Case {
    /// Its corpus id (`trace/0018/inplace_on_view`).
    pub id: String,
    json: Json,
}

/// Reads a corpus file.
pub fn load(path: &Path) -> Result<Vec<Case>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let json: Json = serde_json::from_str(l).map_err(|e| e.to_string())?;
            let id = json["id"].as_str().unwrap_or("?").to_string();
            Ok(Case { id, json })
        })
        .collect()
}

/// What a replay found.
#[derive(Default)]
pub struct Report {
    /// Programs whose graph and results agree.
    pub passed: usize,
    /// Programs that do not.
    pub failed: usize,
    /// One line per failure: the id and why.
    pub failures: Vec<String>,
}

/// Replays every case.
pub fn replay(cases: &[Case]) -> Report {
    let mut r = Report::default();
    for c in cases {
        match run(c) {
            Ok(()) => r.passed += 1,
            Err(e) => {
                r.failed += 1;
                r.failures.push(format!("{}: {e}", c.id));
            }
        }
    }
    r
}

/// The case's inputs, made fresh (a program may write them).
fn inputs(case: &Case) -> Result<Vec<(String, Tensor)>, String> {
    case.json["inputs"]
        .as_array()
        .ok_or("no inputs")?
        .iter()
        .map(|i| {
            let m = i.as_object().ok_or("bad input")?;
            let id = m
                .get("id")
                .and_then(Json::as_str)
                .ok_or("input without id")?;
            Ok((id.to_string(), build_tensor(m)?))
        })
        .collect()
}

/// An argument of a program's call: `{"ref": NAME}` or an encoded value.
fn argument(v: &Json, env: &HashMap<String, Value>) -> Result<Value, String> {
    if let Some(name) = v.get("ref").and_then(Json::as_str) {
        return env
            .get(name)
            .cloned()
            .ok_or_else(|| format!("unknown ref {name}"));
    }
    if let Some(items) = v.get("list").and_then(Json::as_array) {
        if items.iter().any(|i| i.get("ref").is_some()) {
            let vs = items
                .iter()
                .map(|i| argument(i, env))
                .collect::<Result<Vec<_>, _>>()?;
            return Ok(Value::List(vs.into()));
        }
    }
    decode(v, &mut Tensors::default())
}

/// Runs the program on `inputs` (eagerly, or inside a trace).
fn program(case: &Case, inputs: &[Value]) -> opforge::Result<Vec<Value>> {
    let table = ApiTable::builtin();
    let names = case.json["inputs"].as_array().cloned().unwrap_or_default();
    let mut env: HashMap<String, Value> = names
        .iter()
        .zip(inputs)
        .map(|(n, v)| (n["id"].as_str().unwrap_or("?").to_string(), v.clone()))
        .collect();
    let bad = |e: String| opforge::Error::Runtime(e.into());
    for call in case.json["program"].as_array().into_iter().flatten() {
        let api = call["api"].as_str().unwrap_or("?");
        let args = call["args"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|a| argument(a, &env))
            .collect::<Result<Vec<_>, _>>()
            .map_err(bad)?;
        let kwargs = call["kwargs"]
            .as_object()
            .into_iter()
            .flatten()
            .map(|(k, a)| Ok((k.clone(), argument(a, &env)?)))
            .collect::<Result<Vec<_>, String>>()
            .map_err(bad)?;
        let out = call_dispatch(&table, api, args, kwargs)?;
        let out = match <[Value; 1]>::try_from(out) {
            Ok([one]) => one,
            Err(many) => Value::List(many.into()),
        };
        if let Some(name) = call["out"].as_str() {
            env.insert(name.to_string(), out);
        }
    }
    case.json["outputs"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|o| {
            let name = o.as_str().unwrap_or("?");
            env.get(name)
                .cloned()
                .ok_or_else(|| bad(format!("unknown output {name}")))
        })
        .collect()
}

/// Replays one case.
pub fn run(case: &Case) -> Result<(), String> {
    let expect = &case.json["expect"];
    let fresh = || -> Result<Vec<Value>, String> {
        Ok(inputs(case)?
            .into_iter()
            .map(|(_, t)| Value::Tensor(t))
            .collect())
    };
    let traced = trace(|v| program(case, v), &fresh()?, TracingMode::Real);
    if let Some(kind) = expect.get("error").and_then(Json::as_str) {
        let want = expect["message"].as_str().unwrap_or("");
        return match traced {
            Ok(_) => Err(format!("expected {kind}: {want}, traced without error")),
            Err(e) if e.python_class() == kind && e.to_string().contains(want) => Ok(()),
            Err(e) => Err(format!(
                "expected {kind}: {want}, got {}: {e}",
                e.python_class()
            )),
        };
    }
    let want = expect["results"].as_array().ok_or("no results")?;
    let graph = traced.map_err(|e| format!("tracing failed: {e}"))?;
    check(
        &graph,
        Some(expect["graph"].as_array().ok_or("no graph")?),
        &fresh()?,
        want,
    )
    .map_err(|e| format!("graph: {e}"))?;
    // The same program functionalized, as PyTorch's `make_fx(functionalize(f))`.
    if let Some(fg) = expect.get("functional_graph").and_then(Json::as_array) {
        let graph = trace(
            functionalize(|v: &[Value]| program(case, v)),
            &fresh()?,
            TracingMode::Real,
        )
        .map_err(|e| format!("tracing the functionalized program failed: {e}"))?;
        // PyTorch's `functionalize(f, remove="mutations_and_views")`, which
        // recorded `functional_graph`, gives a view's wrapper its `*_copy`
        // value's contiguous strides (it propagates eager strides only for
        // XLA and lazy tensors: `compute_reference_meta` in torchgen's
        // `gen_functionalization_type.py`), so `contiguous()` of a view
        // that is not contiguous eagerly records nothing there and aliases
        // the view. opforge's wrappers keep eager strides and record the
        // `clone` PyTorch's default `functionalize` records (with eager's
        // values): a graph that is PyTorch's but for such clones matches.
        if let Err(e) = compare_graph(graph.nodes(), fg) {
            if compare_graph(&without_clones_of_copies(graph.nodes()), fg).is_err() {
                return Err(format!("functional graph: {e}\n{graph}"));
            }
        }
        check(&graph, None, &fresh()?, want).map_err(|e| format!("functional graph: {e}"))?;
    }
    Ok(())
}

/// `nodes` without each `clone(x, memory_format=torch.contiguous_format)`
/// of a view's copy `x` (a `*_copy` operator's node), its uses referring to
/// `x` instead.
fn without_clones_of_copies(nodes: &[opforge::trace::Node]) -> Vec<opforge::trace::Node> {
    let is_copy_of_view = |i: usize| match &nodes[i].kind {
        NodeKind::CallFunction { target, .. } => target
            .name()
            .split('.')
            .nth(1)
            .is_some_and(|op| op.ends_with("_copy")),
        _ => false,
    };
    let clone_of = |n: &opforge::trace::Node| -> Option<usize> {
        let NodeKind::CallFunction {
            target,
            args,
            kwargs,
        } = &n.kind
        else {
            return None;
        };
        let contiguous = matches!(
            kwargs.as_slice(),
            [(k, Arg::Const(Value::MemoryFormat(opforge::MemoryFormat::Contiguous)))] if k == "memory_format"
        );
        match args.as_slice() {
            [Arg::Node(x)]
                if target.name() == "aten.clone.default" && contiguous && is_copy_of_view(*x) =>
            {
                Some(*x)
            }
            _ => None,
        }
    };
    // Old index → new index (a dropped clone → its input's).
    let mut map = Vec::with_capacity(nodes.len());
    let mut kept = Vec::new();
    for n in nodes {
        match clone_of(n) {
            Some(x) => map.push(map[x]),
            None => {
                map.push(kept.len());
                kept.push(n.clone());
            }
        }
    }
    fn remap(a: &mut Arg, map: &[usize]) {
        match a {
            Arg::Node(i) => *i = map[*i],
            Arg::List(items) => items.iter_mut().for_each(|a| remap(a, map)),
            Arg::Const(_) => {}
        }
    }
    for n in &mut kept {
        match &mut n.kind {
            NodeKind::CallFunction { args, kwargs, .. } => {
                args.iter_mut().for_each(|a| remap(a, &map));
                kwargs.iter_mut().for_each(|(_, a)| remap(a, &map));
            }
            NodeKind::Output(results) => results.iter_mut().for_each(|a| remap(a, &map)),
            NodeKind::Placeholder => {}
        }
    }
    kept
}

/// A graph against PyTorch's (unless already compared: `None`), then
/// re-executed on `inputs` against the recorded results.
fn check(
    graph: &Graph,
    nodes: Option<&[Json]>,
    inputs: &[Value],
    want: &[Json],
) -> Result<(), String> {
    if let Some(nodes) = nodes {
        compare_graph(graph.nodes(), nodes).map_err(|e| format!("{e}\n{graph}"))?;
    }
    let replayed = graph
        .run(inputs)
        .map_err(|e| format!("re-executing the graph failed: {e}\n{graph}"))?;
    compare_results(&replayed, want).map_err(|e| format!("{e}\n{graph}"))
}

/// PyTorch's nodes against ours, position by position.
fn compare_graph(nodes: &[opforge::trace::Node], want: &[Json]) -> Result<(), String> {
    if nodes.len() != want.len() {
        let ours: Vec<String> = nodes
            .iter()
            .filter_map(|n| match &n.kind {
                NodeKind::CallFunction { target, .. } => Some(target.name()),
                _ => None,
            })
            .collect();
        let theirs: Vec<&str> = want.iter().filter_map(|n| n["target"].as_str()).collect();
        return Err(format!(
            "{} nodes, PyTorch's graph has {}: targets {ours:?} vs {theirs:?}",
            nodes.len(),
            want.len()
        ));
    }
    let position: HashMap<&str, usize> = want
        .iter()
        .enumerate()
        .filter_map(|(i, n)| Some((n["name"].as_str()?, i)))
        .collect();
    for (i, (ours, theirs)) in nodes.iter().zip(want).enumerate() {
        let op = theirs["op"].as_str().unwrap_or("?");
        if ours.kind.op() != op {
            return Err(format!(
                "node {i}: {} where PyTorch has {op}",
                ours.kind.op()
            ));
        }
        match &ours.kind {
            NodeKind::Placeholder => {}
            NodeKind::CallFunction {
                target,
                args,
                kwargs,
            } => {
                let t = theirs["target"].as_str().unwrap_or("?");
                if target.name() != t {
                    return Err(format!(
                        "node {i}: target {} where PyTorch has {t}",
                        target.name()
                    ));
                }
                let their_args = theirs["args"].as_array().cloned().unwrap_or_default();
                compare_args(args, &their_args, &position)
                    .map_err(|e| format!("node {i} ({t}) args: {e}"))?;
                let their_kwargs = theirs["kwargs"].as_object().cloned().unwrap_or_default();
                compare_kwargs(kwargs, &their_kwargs, &position)
                    .map_err(|e| format!("node {i} ({t}) kwargs: {e}"))?;
            }
            NodeKind::Output(results) => {
                // PyTorch's output node has one argument: the tuple of results.
                let theirs = theirs["args"][0]["list"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default();
                compare_args(results, &theirs, &position).map_err(|e| format!("output: {e}"))?;
            }
        }
    }
    Ok(())
}

fn compare_args(
    ours: &[Arg],
    theirs: &[Json],
    position: &HashMap<&str, usize>,
) -> Result<(), String> {
    same_count("arguments", ours.len(), theirs.len())?;
    for (k, (a, j)) in ours.iter().zip(theirs).enumerate() {
        compare_arg(a, j, position).map_err(|e| format!("argument {k}: {e}"))?;
    }
    Ok(())
}

fn compare_kwargs(
    ours: &[(String, Arg)],
    theirs: &Map<String, Json>,
    position: &HashMap<&str, usize>,
) -> Result<(), String> {
    let names: Vec<&str> = ours.iter().map(|(k, _)| k.as_str()).collect();
    let mut their_names: Vec<&str> = theirs.keys().map(String::as_str).collect();
    let mut sorted = names.clone();
    sorted.sort_unstable();
    their_names.sort_unstable();
    if sorted != their_names {
        return Err(format!("{names:?}, PyTorch has {their_names:?}"));
    }
    for (k, a) in ours {
        compare_arg(a, &theirs[k], position).map_err(|e| format!("{k}: {e}"))?;
    }
    Ok(())
}

fn compare_arg(a: &Arg, j: &Json, position: &HashMap<&str, usize>) -> Result<(), String> {
    match (a, j.get("node").and_then(Json::as_str), j.get("list")) {
        (Arg::Node(n), Some(name), _) => match position.get(name) {
            Some(p) if p == n => Ok(()),
            _ => Err(format!("node {n} where PyTorch refers to {name}")),
        },
        (Arg::List(items), None, Some(list)) => {
            compare_args(items, list.as_array().map_or(&[], Vec::as_slice), position)
        }
        (Arg::Const(v), None, _) => {
            let ours = encode(v, &Tensors::default());
            if enc_eq(&ours, j) {
                Ok(())
            } else {
                Err(format!("{ours} where PyTorch has {j}"))
            }
        }
        (other, _, _) => Err(format!("{other:?} where PyTorch has {j}")),
    }
}

/// `what` counted alike here and in PyTorch's record.
fn same_count(what: &str, ours: usize, theirs: usize) -> Result<(), String> {
    if ours == theirs {
        Ok(())
    } else {
        Err(format!("{ours} {what}, PyTorch has {theirs}"))
    }
}

/// The re-executed graph's results against the recorded eager ones.
fn compare_results(ours: &[Value], want: &[Json]) -> Result<(), String> {
    same_count("results", ours.len(), want.len())?;
    for (i, (v, w)) in ours.iter().zip(want).enumerate() {
        let Some(t) = w.get("tensor").and_then(Json::as_object) else {
            continue;
        };
        let want = build_tensor(t)?;
        let Value::Tensor(got) = v else {
            return Err(format!(
                "result {i}: {} where PyTorch has a tensor",
                v.type_name()
            ));
        };
        if got.shape() != want.shape() || got.dtype() != want.dtype() {
            return Err(format!(
                "result {i}: {:?} {} where PyTorch has {:?} {}",
                got.shape(),
                got.dtype(),
                want.shape(),
                want.dtype()
            ));
        }
        let (a, b) = (
            got.to_dtype_copy(opforge::DType::Float64)
                .and_then(|t| t.to_vec::<f64>()),
            want.to_dtype_copy(opforge::DType::Float64)
                .and_then(|t| t.to_vec::<f64>()),
        );
        let (a, b) = (a.map_err(|e| e.to_string())?, b.map_err(|e| e.to_string())?);
        let close = a
            .iter()
            .zip(&b)
            .all(|(x, y)| (x - y).abs() <= 1e-5 + 1e-5 * y.abs() || (x.is_nan() && y.is_nan()));
        if !close {
            return Err(format!("result {i}: {a:?} where PyTorch has {b:?}"));
        }
    }
    Ok(())
}
