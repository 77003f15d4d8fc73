//! Replaying recorded gradients (`grad_calls.jsonl`, format in
//! `tests/data/conformance/README.md`): one call of one overload on leaves
//! that require grad, then reverse mode (`grads`), double backward
//! (`grad_grads`), forward mode (`jvp`) or the error PyTorch raised.
//!
//! Used by the `gradients` binary and the `autograd_generated` test.

use crate::numeric::{self, Inputs, Verdict};
use opforge::autograd::{self, forward_ad};
use opforge::{at, Error, Tensor, Value};
use serde_json::{Map, Value as Json};
use std::collections::BTreeMap;
use std::path::Path;

/// One recorded case.
#[derive(Clone, Debug)]
pub struct Case {
    /// The call, in `numeric_calls.jsonl`'s terms.
    pub call: numeric::Case,
    /// One upstream gradient per differentiable output.
    pub grad_outputs: Vec<Json>,
    /// Weights of the double-backward sum (`null` where no term), if recorded.
    pub grad_grad_weights: Option<Vec<Json>>,
    /// Input tangents for forward mode, if recorded.
    pub tangents: Option<Vec<Json>>,
}

/// Parses a JSONL corpus of `grad_calls.jsonl`'s format.
pub fn load(path: &Path) -> Result<Vec<Case>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    parse(&text).map_err(|e| format!("{}:{e}", path.display()))
}

/// Parses the lines of a corpus (`line: message` on a bad line).
pub fn parse(text: &str) -> Result<Vec<Case>, String> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            let j: Json = serde_json::from_str(l).map_err(|e| format!("{}: {e}", i + 1))?;
            let s = |k: &str| j[k].as_str().map(String::from);
            let list = |k: &str| j.get(k).and_then(Json::as_array).cloned();
            Ok(Case {
                call: numeric::Case {
                    id: s("id").ok_or_else(|| format!("{}: no id", i + 1))?,
                    overload: s("overload").ok_or_else(|| format!("{}: no overload", i + 1))?,
                    args: list("args").unwrap_or_default(),
                    kwargs: j["kwargs"].as_object().cloned().unwrap_or_default(),
                    expect: j["expect"].clone(),
                },
                grad_outputs: list("grad_outputs").unwrap_or_default(),
                grad_grad_weights: list("grad_grad_weights"),
                tangents: list("tangents"),
            })
        })
        .collect()
}

/// The outcome of a corpus.
#[derive(Debug, Default)]
pub struct Report {
    /// Cases that passed.
    pub passed: usize,
    /// Cases that failed.
    pub failed: usize,
    /// One line per failure (`id: what differs`).
    pub failures: Vec<String>,
    /// Overloads with failures: `name passed/total`.
    pub failing_overloads: Vec<String>,
}

/// Replays every case and judges it.
pub fn replay(cases: &[Case]) -> Report {
    let mut report = Report::default();
    let mut per_op: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    for case in cases {
        let counts = per_op.entry(case.call.overload.as_str()).or_default();
        counts.1 += 1;
        match run(case) {
            Ok(()) => {
                report.passed += 1;
                counts.0 += 1;
            }
            Err(e) => {
                report.failed += 1;
                report.failures.push(format!("{}: {e}", case.call.id));
            }
        }
    }
    report.failing_overloads = per_op
        .iter()
        .filter(|(_, (p, n))| p != n)
        .map(|(o, (p, n))| format!("{o} {p}/{n}"))
        .collect();
    report
}

/// A leaf of the case: its recorded id and the tensor that requires grad.
struct Leaf {
    id: String,
    tensor: Tensor,
}

/// Runs one case and compares it with PyTorch's record.
pub fn run(case: &Case) -> Result<(), String> {
    let call = &case.call;
    let op = opforge::dispatch::dispatcher()
        .find(&call.overload)
        .ok_or_else(|| format!("unknown operator {}", call.overload))?;
    let mut inputs = Inputs::default();
    let mut args = numeric::bind(call, op.schema, &mut inputs)?;
    let leaves = make_leaves(call, &inputs, &mut args)?;
    let expect = &call.expect;
    let seeds = tensors(&case.grad_outputs)?;
    let outcome = op.call_boxed(&args).and_then(|outs| {
        let outputs = differentiable_outputs(&outs);
        let ins: Vec<Tensor> = leaves.iter().map(|l| l.tensor.clone()).collect();
        let create_graph = case.grad_grad_weights.is_some();
        let grads = autograd::grad(&outputs, &ins, &seeds, None, create_graph, true)?;
        Ok((outputs, grads))
    });
    let (outputs, grads) = match (outcome, expect.get("error")) {
        (Err(e), Some(_)) => return judge_error(&e, expect),
        (Err(e), None) => return Err(e.to_string()),
        (Ok(_), Some(_)) => {
            return Err(format!("no error, PyTorch raised {}", expect["message"]));
        }
        (Ok(got), None) => got,
    };
    let mut verdict = Verdict::default();
    compare_per_leaf(
        "grad",
        &leaves,
        &grads,
        &expect["grads"],
        &inputs,
        &mut verdict,
    );
    if let Some(weights) = &case.grad_grad_weights {
        let grad_grads = double_backward(&leaves, &grads, weights).map_err(|e| e.to_string())?;
        compare_per_leaf(
            "grad_grad",
            &leaves,
            &grad_grads,
            &expect["grad_grads"],
            &inputs,
            &mut verdict,
        );
    }
    drop(outputs);
    if let Some(tangents) = &case.tangents {
        let got = jvp(case, &leaves, tangents).map_err(|e| format!("jvp: {e}"))?;
        let want = expect["jvp"].as_array().cloned().unwrap_or_default();
        if got.len() != want.len() {
            verdict.failures.push(format!(
                "jvp: {} output tangents, PyTorch {}",
                got.len(),
                want.len()
            ));
        }
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            compare(&format!("jvp {i}"), g.as_ref(), w, &inputs, &mut verdict);
        }
    }
    match verdict.passed() {
        true => Ok(()),
        false => Err(verdict.failures.join("; ")),
    }
}

/// Marks the recorded leaves (`"requires_grad": true`); a `clone_of_leaf`
/// argument is passed as `leaf.clone()`, so an in-place call writes a non-leaf.
fn make_leaves(
    call: &numeric::Case,
    inputs: &Inputs,
    args: &mut [Value],
) -> Result<Vec<Leaf>, String> {
    let mut leaves = Vec::new();
    let all = call.args.iter().chain(call.kwargs.values());
    for j in all.flat_map(recorded_tensors) {
        let flag = |k: &str| j.get(k).and_then(Json::as_bool) == Some(true);
        if !flag("requires_grad") {
            continue;
        }
        let id = j
            .get("id")
            .and_then(Json::as_str)
            .unwrap_or_default()
            .to_string();
        // One leaf per tensor: a tensor given twice (`mul(t0, t0)`) is one
        // leaf, with one gradient, tangent and weight.
        if leaves.iter().any(|l: &Leaf| l.id == id) {
            continue;
        }
        let t = inputs
            .get(&id)
            .ok_or_else(|| format!("no input {id}"))?
            .clone();
        t.set_requires_grad(true).map_err(|e| e.to_string())?;
        if flag("clone_of_leaf") {
            let c = at::clone(&t, None).map_err(|e| e.to_string())?;
            for v in args.iter_mut() {
                replace_tensor(v, &t, &c);
            }
        }
        leaves.push(Leaf { id, tensor: t });
    }
    Ok(leaves)
}

/// The recorded tensors of an argument: itself, or a list's elements.
fn recorded_tensors(j: &Json) -> Vec<&Map<String, Json>> {
    match j {
        Json::Object(o) => match (o.get("tensor"), o.get("list")) {
            (Some(Json::Object(t)), _) => vec![t],
            (_, Some(list)) => recorded_tensors(list),
            _ => Vec::new(),
        },
        Json::Array(xs) => xs.iter().flat_map(recorded_tensors).collect(),
        _ => Vec::new(),
    }
}

fn replace_tensor(v: &mut Value, old: &Tensor, new: &Tensor) {
    match v {
        Value::Tensor(x) if x.is_same(old) => *v = Value::Tensor(new.clone()),
        Value::TensorList(ts) => {
            let mut list: Vec<Tensor> = ts.to_vec();
            if list.iter().any(|x| x.is_same(old)) {
                for x in &mut list {
                    if x.is_same(old) {
                        *x = new.clone();
                    }
                }
                *v = Value::TensorList(list);
            }
        }
        _ => {}
    }
}

fn output_tensors(v: &Value) -> Vec<Tensor> {
    match v {
        Value::Tensor(t) => vec![t.clone()],
        Value::TensorList(ts) => ts.to_vec(),
        _ => vec![],
    }
}

/// The call's floating-point outputs that require grad. When there is none,
/// every tensor output: PyTorch's recorder differentiates those, and
/// `autograd.grad` refuses (`element 0 of tensors does not require grad`).
fn differentiable_outputs(outs: &[Value]) -> Vec<Tensor> {
    let all: Vec<Tensor> = outs.iter().flat_map(output_tensors).collect();
    let diff: Vec<Tensor> = all
        .iter()
        .filter(|t| t.dtype().is_floating_point() && t.requires_grad())
        .cloned()
        .collect();
    if diff.is_empty() {
        all
    } else {
        diff
    }
}

/// Builds the recorded tensors (`null` → `None`).
fn tensors(js: &[Json]) -> Result<Vec<Option<Tensor>>, String> {
    js.iter()
        .map(|j| match j.as_object() {
            Some(o) => numeric::build_tensor(o).map(Some),
            None => Ok(None),
        })
        .collect()
}

/// `expect.grad_grads`: `grad(sum_i (grads_i * w_i).sum(), leaves)` over the
/// first gradients that require grad and have a weight; all `None` when no
/// term is left.
fn double_backward(
    leaves: &[Leaf],
    grads: &[Option<Tensor>],
    weights: &[Json],
) -> opforge::Result<Vec<Option<Tensor>>> {
    let weights = tensors(weights).map_err(fail)?;
    let mut total: Option<Tensor> = None;
    for (g, w) in grads.iter().zip(&weights) {
        let (Some(g), Some(w)) = (g, w) else { continue };
        if !g.requires_grad() {
            continue;
        }
        let term = at::sum(&at::mul_Tensor(g, w)?, None)?;
        total = Some(match total {
            None => term,
            Some(t) => at::add_Tensor(&t, &term, opforge::Scalar::Int(1))?,
        });
    }
    let Some(total) = total else {
        return Ok(vec![None; leaves.len()]);
    };
    let ins: Vec<Tensor> = leaves.iter().map(|l| l.tensor.clone()).collect();
    autograd::grad(&[total], &ins, &[None], None, false, true)
}

/// `torch.func.jvp`: the call again, on dual tensors (leaf, tangent) at a new
/// forward level; one output tangent per floating-point output, zeros for an
/// output that carries none (`nll_loss_forward`'s `total_weight`), as
/// `torch.func.jvp` gives.
fn jvp(case: &Case, leaves: &[Leaf], tangents: &[Json]) -> opforge::Result<Vec<Option<Tensor>>> {
    let tangents = tensors(tangents).map_err(fail)?;
    let op = opforge::dispatch::dispatcher()
        .find(&case.call.overload)
        .ok_or_else(|| fail("unknown operator".into()))?;
    let mut inputs = Inputs::default();
    let mut args = numeric::bind(&case.call, op.schema, &mut inputs).map_err(fail)?;
    let _level = forward_ad::dual_level();
    for (leaf, tangent) in leaves.iter().zip(&tangents) {
        let Some(tangent) = tangent else { continue };
        let primal = inputs
            .get(&leaf.id)
            .ok_or_else(|| fail(format!("no input {}", leaf.id)))?
            .clone();
        let dual = forward_ad::make_dual(&primal, tangent)?;
        for v in args.iter_mut() {
            replace_tensor(v, &primal, &dual);
        }
    }
    let outs = op.call_boxed(&args)?;
    outs.iter()
        .flat_map(output_tensors)
        .filter(|t| t.dtype().is_floating_point())
        .map(|t| match forward_ad::unpack_dual(&t).tangent {
            Some(tangent) => Ok(Some(tangent)),
            None => opforge::at::zeros_like(&t, None, None, None, None, None).map(Some),
        })
        .collect()
}

fn fail(msg: String) -> Error {
    Error::Runtime(msg.into())
}

fn judge_error(e: &Error, expect: &Json) -> Result<(), String> {
    let want = expect["message"].as_str().unwrap_or_default();
    let got = e.to_string();
    if got.contains(want) {
        Ok(())
    } else {
        Err(format!("error {got:?}, PyTorch {want:?}"))
    }
}

/// Compares one gradient per leaf with the record's `{leaf id: tensor or null}`.
fn compare_per_leaf(
    what: &str,
    leaves: &[Leaf],
    got: &[Option<Tensor>],
    want: &Json,
    inputs: &Inputs,
    verdict: &mut Verdict,
) {
    for (leaf, g) in leaves.iter().zip(got) {
        let w = &want[leaf.id.as_str()];
        compare(
            &format!("{what} {}", leaf.id),
            g.as_ref(),
            w,
            inputs,
            verdict,
        );
    }
}

fn compare(what: &str, got: Option<&Tensor>, want: &Json, inputs: &Inputs, verdict: &mut Verdict) {
    match (got, want.is_null()) {
        (None, true) => {}
        (Some(g), false) => numeric::compare_tensor(
            what,
            g,
            &serde_json::json!({ "tensor": want }),
            inputs,
            verdict,
        ),
        (Some(_), true) => verdict
            .failures
            .push(format!("{what}: a tensor, PyTorch None")),
        (None, false) => verdict
            .failures
            .push(format!("{what}: None, PyTorch {want}")),
    }
}
