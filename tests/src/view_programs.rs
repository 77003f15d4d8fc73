//! Random programs of views and in-place operators, to compare
//! functionalization ([`opforge::functionalize`]) with eager execution, and
//! with PyTorch, which runs the same programs from their JSON form (the
//! repository's `tests/record/functionalize_programs.py`).
//!
//! A [`Program`] takes float32 inputs (each a shape and the order of its
//! dimensions in memory: contiguous, or a permutation of a contiguous
//! tensor), runs [`Step`]s — views (`select`, `slice`, `t`, `transpose`,
//! `permute`, `view`, `reshape`, `squeeze`, `unsqueeze`, `expand`,
//! `diagonal`, `as_strided`, `unbind`, `contiguous`, `clone`) and in-place
//! operators (`add_`, `mul_`, `fill_`, `zero_`, `copy_`, and the in-place
//! views `t_`, `squeeze_`, `unsqueeze_`, `transpose_`) on its inputs and on
//! the tensors earlier steps made — and returns some of its tensors.
//!
//! - [`generate`] makes one from a source of choices ([`Choices`]: a seeded
//!   generator, [`Seeded`], or a fuzzer's bytes, [`Bytes`]), running it
//!   eagerly as it goes so that most steps are valid for the shapes they
//!   meet; some programs end in a step that fails.
//! - [`Program::to_json`] / [`Program::from_json`]: the form Python reads.
//! - [`run`]: the program eagerly or under `functionalize`, as an
//!   [`Outcome`]: each output's and each input's shape, strides and values
//!   afterwards, or the step that failed and its message.
//! - [`expected_functionalized`]: what functionalization gives for a program
//!   by PyTorch's rules, worked out from an eager run; [`differences`]
//!   between two outcomes.
//!
//! ```
//! use opforge_tests::view_programs::{differences, expected_functionalized, generate, run, Mode, Seeded};
//! let p = generate(&mut Seeded::new(7));
//! let func = run(&p, Mode::Functionalized)?;
//! if let Some(want) = expected_functionalized(&p)? {
//!     assert_eq!(differences(&want, &func), Vec::<String>::new(), "{}", p.describe());
//! }
//! # Ok::<(), opforge::Error>(())
//! ```

use opforge::error::{Error, Result};
use opforge::functionalize::functionalize;
use opforge::tensor::Tensor;
use opforge::value::Value;
use opforge::{ops, Scalar};
use serde_json::{json, Value as Json};
use std::cell::Cell;
use std::rc::Rc;

/// A program: inputs, steps, and the tensors it returns.
#[derive(Clone, Debug, PartialEq)]
pub struct Program {
    /// The inputs, tensors `0..inputs.len()`.
    pub inputs: Vec<Input>,
    /// The steps, in order; each view step adds its results to the tensors.
    pub steps: Vec<Step>,
    /// The tensors returned, by number.
    pub outputs: Vec<usize>,
}

/// An input: a float32 tensor of `shape` whose dimensions lie in memory in
/// the order `perm` (outermost first: `[0, 1, …]` is contiguous, `[1, 0]`
/// a transposed matrix). Its elements, in memory order, are `1, 2, 3, …`
/// plus 100 times the input's number.
#[derive(Clone, Debug, PartialEq)]
pub struct Input {
    /// Sizes.
    pub shape: Vec<usize>,
    /// The dimensions from the largest stride to the smallest.
    pub perm: Vec<usize>,
}

/// One step: a view of tensor `x` (its results are new tensors) or an
/// in-place operator on it.
#[derive(Clone, Debug, PartialEq)]
pub enum Step {
    /// `x.<view>(…)`.
    View {
        /// The viewed tensor.
        x: usize,
        /// The view.
        view: View,
    },
    /// `x.<op>_(…)`.
    InPlace {
        /// The written tensor.
        x: usize,
        /// The operator.
        op: InPlace,
    },
}

/// The views (and the copies `contiguous` and `clone`), with PyTorch's
/// arguments.
#[derive(Clone, Debug, PartialEq)]
pub enum View {
    /// `select(dim, index)`.
    Select(i64, i64),
    /// `slice(dim, start, end, step)`.
    Slice(i64, Option<i64>, Option<i64>, i64),
    /// `t()`.
    T,
    /// `transpose(dim0, dim1)`.
    Transpose(i64, i64),
    /// `permute(dims)`.
    Permute(Vec<i64>),
    /// `view(shape)`.
    View(Vec<i64>),
    /// `reshape(shape)`.
    Reshape(Vec<i64>),
    /// `squeeze()` / `squeeze(dim)`.
    Squeeze(Option<i64>),
    /// `unsqueeze(dim)`.
    Unsqueeze(i64),
    /// `expand(shape)`.
    Expand(Vec<i64>),
    /// `diagonal(offset, dim1, dim2)`.
    Diagonal(i64, i64, i64),
    /// `as_strided(size, stride, storage_offset)`.
    AsStrided(Vec<i64>, Vec<i64>, Option<i64>),
    /// `unbind(dim)`: one new tensor per index.
    Unbind(i64),
    /// `contiguous()`.
    Contiguous,
    /// `clone()`.
    Clone,
}

/// The other operand of `add_` / `mul_`.
#[derive(Clone, Debug, PartialEq)]
pub enum Operand {
    /// A Python number.
    Scalar(f64),
    /// A tensor of the program.
    Tensor(usize),
}

/// The in-place operators.
#[derive(Clone, Debug, PartialEq)]
pub enum InPlace {
    /// `add_(other)`.
    Add(Operand),
    /// `mul_(other)`.
    Mul(Operand),
    /// `fill_(value)`.
    Fill(f64),
    /// `zero_()`.
    Zero,
    /// `copy_(src)`.
    Copy(usize),
    /// `t_()`.
    T,
    /// `squeeze_()` / `squeeze_(dim)`.
    Squeeze(Option<i64>),
    /// `unsqueeze_(dim)`.
    Unsqueeze(i64),
    /// `transpose_(dim0, dim1)`.
    Transpose(i64, i64),
}

// ---- Running ---------------------------------------------------------------

/// How [`run`] runs a program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// As written.
    Eager,
    /// Under [`functionalize`].
    Functionalized,
}

/// A tensor after a run: sizes, strides, and elements in row-major order.
#[derive(Clone, Debug, PartialEq)]
pub struct Record {
    /// Sizes.
    pub shape: Vec<usize>,
    /// Strides, in elements.
    pub strides: Vec<usize>,
    /// The elements, row-major.
    pub values: Vec<f64>,
}

/// A step that failed, and its message.
#[derive(Clone, Debug, PartialEq)]
pub struct Failure {
    /// The step's number (the number of steps, for a failure after the last).
    pub step: usize,
    /// The error's message.
    pub message: String,
}

/// What a run gives.
#[derive(Clone, Debug, PartialEq)]
pub struct Outcome {
    /// The outputs (none when a step failed).
    pub outputs: Vec<Record>,
    /// The inputs afterwards.
    pub inputs: Vec<Record>,
    /// The failure, if a step failed.
    pub error: Option<Failure>,
}

/// Input `i`'s tensor, made anew: its elements in memory order are `1, 2,
/// …` plus `100 * i`, its dimensions in memory in the order `perm`.
pub fn make_input(i: usize, input: &Input) -> Result<Tensor> {
    let n = input.shape.len();
    let mut order = input.perm.clone();
    let mut seen = vec![false; n];
    let valid = order.len() == n
        && order
            .iter()
            .all(|&d| d < n && !std::mem::replace(&mut seen[d], true));
    if !valid {
        return Err(bad_program(format!(
            "input {i}: perm {:?} is not a permutation of the dimensions of {:?}",
            input.perm, input.shape
        )));
    }
    let stored: Vec<usize> = order.iter().map(|&d| input.shape[d]).collect();
    let numel = stored
        .iter()
        .try_fold(1usize, |a, &n| a.checked_mul(n))
        .filter(|&n| n <= MAX_INPUT)
        .ok_or_else(|| {
            bad_program(format!(
                "input {i}: shape {:?} has more than {MAX_INPUT} elements",
                input.shape
            ))
        })?;
    let data: Vec<f32> = (0..numel).map(|k| (k + 1 + 100 * i) as f32).collect();
    let base = Tensor::from_vec(data, &stored)?;
    // The permutation back from memory order to the input's dimensions.
    let mut back = vec![0i64; n];
    for (pos, d) in order.iter_mut().enumerate() {
        back[*d] = pos as i64;
    }
    ops::permute(&base, &back)
}

/// The most elements an input of a program read from JSON may have.
pub const MAX_INPUT: usize = 1 << 20;

fn bad_program(msg: String) -> Error {
    Error::Runtime(format!("view program: {msg}").into())
}

fn tensor_at(ts: &[Tensor], id: usize) -> Result<Tensor> {
    ts.get(id).cloned().ok_or_else(|| {
        bad_program(format!(
            "tensor {id} does not exist (there are {})",
            ts.len()
        ))
    })
}

/// Runs one step on the program's tensors (a view's results are pushed).
pub fn apply(step: &Step, ts: &mut Vec<Tensor>) -> Result<()> {
    match step {
        Step::View { x, view } => {
            let x = tensor_at(ts, *x)?;
            let one = |t: Result<Tensor>| t.map(|t| vec![t]);
            let made = match view {
                View::Select(d, i) => one(ops::select_int(&x, *d, *i)),
                View::Slice(d, s, e, k) => one(ops::slice_Tensor(&x, *d, *s, *e, *k)),
                View::T => one(ops::t(&x)),
                View::Transpose(a, b) => one(ops::transpose_int(&x, *a, *b)),
                View::Permute(dims) => one(ops::permute(&x, dims)),
                View::View(shape) => one(ops::view(&x, shape)),
                View::Reshape(shape) => one(ops::reshape(&x, shape)),
                View::Squeeze(None) => one(ops::squeeze(&x)),
                View::Squeeze(Some(d)) => one(ops::squeeze_dim(&x, *d)),
                View::Unsqueeze(d) => one(ops::unsqueeze(&x, *d)),
                View::Expand(shape) => one(ops::expand(&x, shape, false)),
                View::Diagonal(o, a, b) => one(ops::diagonal(&x, *o, *a, *b)),
                View::AsStrided(size, stride, off) => one(ops::as_strided(&x, size, stride, *off)),
                View::Unbind(d) => ops::unbind_int(&x, *d),
                View::Contiguous => one(ops::contiguous(&x, opforge::MemoryFormat::Contiguous)),
                View::Clone => one(ops::clone(&x, None)),
            }?;
            ts.extend(made);
        }
        Step::InPlace { x, op } => {
            let mut x = tensor_at(ts, *x)?;
            let number = |v: f64| Scalar::Float(v);
            match op {
                InPlace::Add(Operand::Scalar(v)) => {
                    ops::add__Scalar(&mut x, number(*v), Scalar::Int(1))?;
                }
                InPlace::Add(Operand::Tensor(o)) => {
                    ops::add__Tensor(&mut x, &tensor_at(ts, *o)?, Scalar::Int(1))?;
                }
                InPlace::Mul(Operand::Scalar(v)) => {
                    ops::mul__Scalar(&mut x, number(*v))?;
                }
                InPlace::Mul(Operand::Tensor(o)) => {
                    ops::mul__Tensor(&mut x, &tensor_at(ts, *o)?)?;
                }
                InPlace::Fill(v) => {
                    ops::fill__Scalar(&mut x, number(*v))?;
                }
                InPlace::Zero => {
                    ops::zero_(&mut x)?;
                }
                InPlace::Copy(src) => {
                    ops::copy_(&mut x, &tensor_at(ts, *src)?, false)?;
                }
                InPlace::T => {
                    ops::t_(&mut x)?;
                }
                InPlace::Squeeze(None) => {
                    ops::squeeze_(&mut x)?;
                }
                InPlace::Squeeze(Some(d)) => {
                    ops::squeeze__dim(&mut x, *d)?;
                }
                InPlace::Unsqueeze(d) => {
                    ops::unsqueeze_(&mut x, *d)?;
                }
                InPlace::Transpose(a, b) => {
                    ops::transpose_(&mut x, *a, *b)?;
                }
            }
        }
    }
    Ok(())
}

/// A tensor's record: sizes, strides, row-major elements.
pub fn record(t: &Tensor) -> Result<Record> {
    Ok(Record {
        shape: t.shape(),
        strides: t.strides(),
        values: t.to_vec::<f32>()?.into_iter().map(f64::from).collect(),
    })
}

/// Runs `p` eagerly or functionalized, on fresh inputs. A failing step is
/// part of the outcome; `Err` is a program that cannot run (a tensor number
/// that does not exist, an input that is not well formed).
pub fn run(p: &Program, mode: Mode) -> Result<Outcome> {
    let inputs = p
        .inputs
        .iter()
        .enumerate()
        .map(|(i, input)| make_input(i, input))
        .collect::<Result<Vec<_>>>()?;
    let failed_at = Rc::new(Cell::new(None::<usize>));
    let harness = Rc::new(Cell::new(false));
    let body = {
        let (failed_at, harness) = (failed_at.clone(), harness.clone());
        move |vs: &[Value]| -> Result<Vec<Value>> {
            let mut ts: Vec<Tensor> = vs.iter().filter_map(|v| v.as_tensor().cloned()).collect();
            for (k, step) in p.steps.iter().enumerate() {
                if let Err(e) = apply(step, &mut ts) {
                    failed_at.set(Some(k));
                    harness.set(e.to_string().starts_with("view program:"));
                    return Err(e);
                }
            }
            p.outputs
                .iter()
                .map(|&o| {
                    let t = tensor_at(&ts, o);
                    harness.set(t.is_err());
                    t.map(Value::Tensor)
                })
                .collect()
        }
    };
    let args: Vec<Value> = inputs.iter().cloned().map(Value::Tensor).collect();
    let result = match mode {
        Mode::Eager => body(&args),
        Mode::Functionalized => functionalize(body)(&args),
    };
    let (outputs, error) = match result {
        Ok(vs) => {
            let outs = vs
                .iter()
                .map(|v| match v {
                    Value::Tensor(t) => record(t),
                    other => Err(bad_program(format!("an output is a {}", other.type_name()))),
                })
                .collect::<Result<Vec<_>>>()?;
            (outs, None)
        }
        Err(e) if harness.get() => return Err(e),
        Err(e) => {
            let step = failed_at.get().unwrap_or(p.steps.len());
            (
                Vec::new(),
                Some(Failure {
                    step,
                    message: e.to_string(),
                }),
            )
        }
    };
    let inputs = inputs.iter().map(record).collect::<Result<Vec<_>>>()?;
    Ok(Outcome {
        outputs,
        inputs,
        error,
    })
}

/// What functionalizing `p` gives by PyTorch's rules (its `functionalize`,
/// views reapplied, which writes the inputs back once the program returns),
/// worked out from an eager run of it; `None` where those rules are not
/// eager's: a write into a tensor whose elements share memory (an
/// `expand`ed one), which eagerly writes each shared element once (or is
/// refused) and functionalized sums the writes back into the base
/// (`expand`'s inverse).
///
/// Otherwise the outcome is eager's, but:
/// - a write through a chain of views with `as_strided` after the first
///   fails with PyTorch's refusal (`FunctionalStorageImpl::add_update`);
/// - a failing in-place view fails with its view's message (`t_` as `t`:
///   functionalization replays the view), a failing in-place `add_`/`mul_`
///   of a tensor with the meta kernel's (`torch/_refs`, where eager's is
///   C++'s);
/// - after a failure the inputs are as they were (nothing is written back);
/// - an input only viewed in place (never written) whose new geometry
///   partly overlaps its old one fails to be copied back (PyTorch's value
///   for it is a view of it; `copy_` refuses partial overlap), the inputs
///   before it written back already;
/// - an input's strides are eager's only where its sizes changed:
///   PyTorch's `_propagate_functional_input_mutation` restrides an input
///   (`as_strided_`) only then, and copies the values in.
pub fn expected_functionalized(p: &Program) -> Result<Option<Outcome>> {
    let inputs = p
        .inputs
        .iter()
        .enumerate()
        .map(|(i, input)| make_input(i, input))
        .collect::<Result<Vec<_>>>()?;
    let originals = inputs.iter().map(record).collect::<Result<Vec<_>>>()?;
    let mut ts = inputs.clone();
    // The views functionalization records for each tensor (by identity):
    // its chain from its storage's base.
    let mut chains: Vec<(Tensor, Vec<&'static str>)> =
        inputs.iter().map(|t| (t.clone(), Vec::new())).collect();
    let chain_of = |chains: &[(Tensor, Vec<&'static str>)], t: &Tensor| {
        chains
            .iter()
            .rev()
            .find(|(c, _)| c.is_same(t))
            .map(|(_, ch)| ch.clone())
            .unwrap_or_default()
    };
    let mut written: Vec<Tensor> = Vec::new();
    let fail = |step: usize, message: String| {
        Ok(Some(Outcome {
            outputs: Vec::new(),
            inputs: originals.clone(),
            error: Some(Failure { step, message }),
        }))
    };
    for (k, step) in p.steps.iter().enumerate() {
        match step {
            Step::View { x, view } => {
                let base = tensor_at(&ts, *x)?;
                let before = ts.len();
                if let Err(e) = apply(step, &mut ts) {
                    return fail(k, e.to_string());
                }
                let chain = chain_of(&chains, &base);
                for t in ts[before..].iter().cloned() {
                    let made = match view {
                        View::Clone => Vec::new(),
                        View::Contiguous if t.is_same(&base) => chain.clone(),
                        View::Contiguous => Vec::new(),
                        View::Reshape(_) if !t.shares_storage(&base) => vec!["_unsafe_view"],
                        View::AsStrided(..) => [chain.clone(), vec!["as_strided"]].concat(),
                        _ => [chain.clone(), vec!["view"]].concat(),
                    };
                    chains.push((t, made));
                }
            }
            Step::InPlace { x, op } => {
                let t = tensor_at(&ts, *x)?;
                let chain = chain_of(&chains, &t);
                let writes = matches!(
                    op,
                    InPlace::Add(_)
                        | InPlace::Mul(_)
                        | InPlace::Fill(_)
                        | InPlace::Zero
                        | InPlace::Copy(_)
                );
                if writes && opforge::tensor::is_expanded(&t.shape(), &t.strides()) {
                    return Ok(None);
                }
                // The write is checked first (on meta tensors), then
                // recorded, where a chain through `as_strided` is refused.
                if let Err(e) = apply(step, &mut ts) {
                    let meta = match op {
                        InPlace::Add(Operand::Tensor(o)) | InPlace::Mul(Operand::Tensor(o)) => {
                            meta_inplace_broadcast(&t, &tensor_at(&ts, *o)?)
                        }
                        _ => None,
                    };
                    let message = match (op, meta) {
                        (_, Some(m)) => m.to_string(),
                        (InPlace::T, _) => e.to_string().replacen("t_()", "t()", 1),
                        _ => e.to_string(),
                    };
                    return fail(k, message);
                }
                if writes {
                    if let Some(i) = (1..chain.len()).find(|&i| chain[i] == "as_strided") {
                        return fail(k, format!(
                            "During torch.compile, encountered a mutation on a view chain of length {}, where view {i} was an as_strided() call. as_strided() is non-compositional, and therefore is not possible to functionalize properly today,so this behavior is banned in compile. As a workaround, you can either remove the mutation from the model code, or you can insert a graph break right before the mutation with torch._dynamo.graph_break(). If you would like this behavior to work properly, please comment on https://github.com/pytorch/pytorch/issues/104505.",
                            chain.len()
                        ));
                    }
                    written.push(t.clone());
                } else if let Some(entry) = chains.iter_mut().rev().find(|(c, _)| c.is_same(&t)) {
                    entry.1.push("view");
                } else {
                    chains.push((t.clone(), vec!["view"]));
                }
            }
        }
    }
    let outputs = p
        .outputs
        .iter()
        .map(|&o| tensor_at(&ts, o).and_then(|t| record(&t)))
        .collect::<Result<Vec<_>>>()?;
    let mut after = Vec::new();
    for (i, (input, original)) in inputs.iter().zip(&originals).enumerate() {
        let was_written = written.iter().any(|w| w.shares_storage(input));
        let viewed = !chain_of(&chains, input).is_empty();
        if viewed && !was_written && partly_overlaps(original, input) {
            // The inputs before this one are written back already.
            after.extend_from_slice(&originals[i..]);
            return Ok(Some(Outcome {
                outputs: Vec::new(),
                inputs: after,
                error: Some(Failure {
                    step: p.steps.len(),
                    message: "unsupported operation: some elements of the input tensor and the written-to tensor refer to a single memory location. Please clone() the tensor before performing the operation.".into(),
                }),
            }));
        }
        let now = record(input)?;
        after.push(match now.shape == original.shape {
            true => Record {
                strides: original.strides.clone(),
                ..now
            },
            false => now,
        });
    }
    Ok(Some(Outcome {
        outputs,
        inputs: after,
        error: None,
    }))
}

/// Does copying `now` (an input after in-place views) into the input as it
/// was (`original`, offset 0, given `now`'s sizes and strides first if its
/// sizes differ) meet PyTorch's partial overlap (`at::get_overlap_status`)?
fn partly_overlaps(original: &Record, now: &Tensor) -> bool {
    let (shape, strides) = (now.shape(), now.strides());
    let from = match original.shape == shape {
        true => original.strides.clone(),
        false => strides.clone(),
    };
    let numel = shape.iter().fold(1usize, |a, &n| a.saturating_mul(n));
    if numel == 0 || !dense(&shape, &from) || !dense(&shape, &strides) {
        return false;
    }
    let offset = now.storage_offset();
    match offset {
        0 => from != strides,
        b => b < numel,
    }
}

/// PyTorch's `is_non_overlapping_and_dense`.
fn dense(shape: &[usize], strides: &[usize]) -> bool {
    let mut dims: Vec<(usize, usize)> = shape
        .iter()
        .zip(strides)
        .filter(|(&n, _)| n != 1)
        .map(|(&n, &s)| (s, n))
        .collect();
    dims.sort_unstable();
    let mut expected = 1;
    for (s, n) in dims {
        if s != expected {
            return false;
        }
        expected = expected.saturating_mul(n);
    }
    true
}

/// How `got` differs from `want`: outputs' shapes and values, inputs'
/// shapes, strides (of dimensions of more than one element) and values, the
/// failure (step and message). Empty when they agree.
pub fn differences(want: &Outcome, got: &Outcome) -> Vec<String> {
    let mut out = Vec::new();
    if want.error != got.error {
        out.push(format!("error: want {:?}, got {:?}", want.error, got.error));
    }
    if want.outputs.len() != got.outputs.len() {
        out.push(format!(
            "{} outputs, want {}",
            got.outputs.len(),
            want.outputs.len()
        ));
    }
    for (i, (w, g)) in want.outputs.iter().zip(&got.outputs).enumerate() {
        if w.shape != g.shape || !same_values(&w.values, &g.values) {
            out.push(format!(
                "output {i}: want {:?} {:?}, got {:?} {:?}",
                w.shape, w.values, g.shape, g.values
            ));
        }
    }
    for (i, (w, g)) in want.inputs.iter().zip(&got.inputs).enumerate() {
        if w.shape != g.shape || !same_values(&w.values, &g.values) || !same_layout(w, g) {
            out.push(format!(
                "input {i} afterwards: want {:?} strides {:?} {:?}, got {:?} strides {:?} {:?}",
                w.shape, w.strides, w.values, g.shape, g.strides, g.values
            ));
        }
    }
    out
}

impl Record {
    /// `{"shape": [...], "strides": [...], "values": [...]}`.
    pub fn to_json(&self) -> Json {
        json!({"shape": self.shape, "strides": self.strides, "values": self.values})
    }

    /// A record from its JSON form.
    pub fn from_json(j: &Json) -> Result<Record> {
        let usizes = |k: &str| -> Option<Vec<usize>> {
            j.get(k)?
                .as_array()?
                .iter()
                .map(|x| x.as_u64().map(|x| x as usize))
                .collect()
        };
        let values = j
            .get("values")
            .and_then(Json::as_array)
            .and_then(|v| v.iter().map(Json::as_f64).collect::<Option<Vec<_>>>());
        match (usizes("shape"), usizes("strides"), values) {
            (Some(shape), Some(strides), Some(values)) => Ok(Record {
                shape,
                strides,
                values,
            }),
            _ => Err(bad_program(format!("not a tensor record: {j}"))),
        }
    }
}

impl Outcome {
    /// `{"outputs": [record...], "inputs": [record...], "error": null |
    /// {"step": k, "message": "..."}}` (the form the recorder writes).
    pub fn to_json(&self) -> Json {
        json!({
            "outputs": self.outputs.iter().map(Record::to_json).collect::<Vec<_>>(),
            "inputs": self.inputs.iter().map(Record::to_json).collect::<Vec<_>>(),
            "error": self.error.as_ref().map(|e| json!({"step": e.step, "message": e.message})),
        })
    }

    /// An outcome from its JSON form.
    pub fn from_json(j: &Json) -> Result<Outcome> {
        let records = |k: &str| -> Result<Vec<Record>> {
            j.get(k)
                .and_then(Json::as_array)
                .ok_or_else(|| bad_program(format!("an outcome without \"{k}\": {j}")))?
                .iter()
                .map(Record::from_json)
                .collect()
        };
        let error = match j.get("error") {
            None | Some(Json::Null) => None,
            Some(e) => Some(Failure {
                step: e.get("step").and_then(Json::as_u64).unwrap_or(0) as usize,
                message: e
                    .get("message")
                    .and_then(Json::as_str)
                    .unwrap_or_default()
                    .to_string(),
            }),
        };
        Ok(Outcome {
            outputs: records("outputs")?,
            inputs: records("inputs")?,
            error,
        })
    }
}

/// The same values, to float32's last bit (products of products grow past
/// the integers float32 holds exactly, and the last bit of a rounded
/// product may differ between two correct computations).
fn same_values(a: &[f64], b: &[f64]) -> bool {
    a.len() == b.len()
        && a.iter().zip(b).all(|(&x, &y)| {
            x == y || (x - y).abs() <= 2.0 * f64::from(f32::EPSILON) * x.abs().max(y.abs())
        })
}

/// The same strides where they matter: on dimensions of more than one
/// element (a dimension of size 1 may have any stride; PyTorch's own
/// results differ there by how they were computed).
fn same_layout(a: &Record, b: &Record) -> bool {
    a.strides.len() == b.strides.len()
        && a.shape
            .iter()
            .zip(a.strides.iter().zip(&b.strides))
            .all(|(&n, (x, y))| n <= 1 || x == y)
}

// ---- Generating ------------------------------------------------------------

/// A source of choices for [`generate`].
pub trait Choices {
    /// A number in `0..n` (`n > 0`).
    fn below(&mut self, n: usize) -> usize;

    /// Heads or tails.
    fn coin(&mut self) -> bool {
        self.below(2) == 1
    }

    /// A number in `lo..=hi`.
    fn range(&mut self, lo: i64, hi: i64) -> i64 {
        if hi <= lo {
            return lo;
        }
        lo + self.below((hi - lo + 1) as usize) as i64
    }
}

/// Choices from a seed (splitmix64): the same seed, the same programs.
#[derive(Clone, Debug)]
pub struct Seeded(u64);

impl Seeded {
    /// A generator started at `seed`.
    pub fn new(seed: u64) -> Seeded {
        Seeded(seed)
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

impl Choices for Seeded {
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// Choices read from bytes (a fuzzer's input), one byte each; zeros once
/// they run out, which ends the program soon.
#[derive(Clone, Debug)]
pub struct Bytes<'a>(&'a [u8]);

impl<'a> Bytes<'a> {
    /// Choices from `data`.
    pub fn new(data: &'a [u8]) -> Bytes<'a> {
        Bytes(data)
    }
}

impl Choices for Bytes<'_> {
    fn below(&mut self, n: usize) -> usize {
        let b = match self.0.split_first() {
            Some((&b, rest)) => {
                self.0 = rest;
                b
            }
            None => 0,
        };
        b as usize % n.max(1)
    }
}

/// The most steps a generated program has.
pub const MAX_STEPS: usize = 10;

/// A random program: one or two inputs of up to three dimensions (sizes 1 to
/// 4, contiguous or permuted in memory), up to [`MAX_STEPS`] steps on them
/// and on the tensors earlier steps made, and one to three outputs. Each
/// step is tried eagerly as it is chosen: a step that fails is kept (as
/// the program's last) one time in four, otherwise another is chosen.
/// Tensor operands of in-place operators never share memory with the
/// written tensor unless they are that tensor (PyTorch refuses partial
/// overlap eagerly, but functionalization, which copies, cannot see it),
/// and values stay exact in float32 (an `add_` or `mul_` that would take
/// them past [`EXACT_BITS`] is not chosen).
pub fn generate(c: &mut dyn Choices) -> Program {
    let n_inputs = 1 + c.below(2);
    let inputs: Vec<Input> = (0..n_inputs)
        .map(|_| {
            let ndim = if c.below(10) == 0 { 0 } else { 1 + c.below(3) };
            let shape: Vec<usize> = (0..ndim).map(|_| 1 + c.below(4)).collect();
            let mut perm: Vec<usize> = (0..ndim).collect();
            if c.coin() {
                shuffle(c, &mut perm);
            }
            Input { shape, perm }
        })
        .collect();
    let mut ts: Vec<Tensor> = inputs
        .iter()
        .enumerate()
        .filter_map(|(i, input)| make_input(i, input).ok())
        .collect();
    let mut steps = Vec::new();
    let n_steps = 1 + c.below(MAX_STEPS);
    'steps: while steps.len() < n_steps {
        for _ in 0..4 {
            let step = random_step(c, &ts);
            if !keeps_values_exact(&step, &ts) {
                continue;
            }
            match apply(&step, &mut ts) {
                Ok(()) => {
                    steps.push(step);
                    continue 'steps;
                }
                Err(_) if c.below(4) == 0 => {
                    steps.push(step);
                    break 'steps;
                }
                Err(_) => {}
            }
        }
        break;
    }
    let n = ts.len();
    let mut outputs = vec![n - 1];
    for _ in 0..c.below(3) {
        let o = c.below(n);
        if !outputs.contains(&o) {
            outputs.push(o);
        }
    }
    Program {
        inputs,
        steps,
        outputs,
    }
}

/// The bound of a generated program's values: each a multiple of
/// `2^-EXACT_BITS` below `2^EXACT_BITS` in magnitude, so float32 holds every
/// sum and difference of two of them exactly. Functionalization computes
/// some values another way than eager execution (`expand`'s inverse adds
/// the written view's difference to its base, PyTorch's
/// `base + sum_to(mutated - base)`), which gives eager's values exactly
/// only then.
pub const EXACT_BITS: i32 = 10;

/// Does an `add_` / `mul_` keep the written tensor's values within
/// [`EXACT_BITS`] (tried out of place)? Other steps do by construction.
fn keeps_values_exact(step: &Step, ts: &[Tensor]) -> bool {
    let Step::InPlace { x, op } = step else {
        return true;
    };
    let Some(t) = ts.get(*x) else {
        return true;
    };
    let result = match op {
        InPlace::Add(Operand::Scalar(v)) => ops::add_Scalar(t, Scalar::Float(*v), Scalar::Int(1)),
        InPlace::Mul(Operand::Scalar(v)) => ops::mul_Scalar(t, Scalar::Float(*v)),
        InPlace::Add(Operand::Tensor(o)) => match ts.get(*o) {
            Some(o) => ops::add_Tensor(t, o, Scalar::Int(1)),
            None => return true,
        },
        InPlace::Mul(Operand::Tensor(o)) => match ts.get(*o) {
            Some(o) => ops::mul_Tensor(t, o),
            None => return true,
        },
        _ => return true,
    };
    // A step that fails keeps nothing (it may end the program).
    let Ok(values) = result.and_then(|r| r.to_vec::<f32>()) else {
        return true;
    };
    let (bound, unit) = (2f32.powi(EXACT_BITS), 2f32.powi(EXACT_BITS));
    values
        .iter()
        .all(|&v| v.abs() < bound && (v * unit).fract() == 0.0)
}

fn shuffle(c: &mut dyn Choices, xs: &mut [usize]) {
    for i in (1..xs.len()).rev() {
        let j = c.below(i + 1);
        xs.swap(i, j);
    }
}

/// A dimension of a tensor of `n` dimensions, sometimes negative, rarely
/// out of range.
fn dim(c: &mut dyn Choices, n: usize) -> i64 {
    let n = n.max(1) as i64;
    if c.below(20) == 0 {
        return n;
    }
    let d = c.range(0, n - 1);
    if c.below(4) == 0 {
        d - n
    } else {
        d
    }
}

/// A shape of `numel` elements (factors of it), sometimes with a `-1`.
fn shape_of(c: &mut dyn Choices, numel: usize) -> Vec<i64> {
    let mut left = numel.max(1);
    let mut shape = Vec::new();
    let ndim = c.below(4);
    for _ in 0..ndim {
        let divisors: Vec<usize> = (1..=left).filter(|&d| left.is_multiple_of(d)).collect();
        let d = divisors[c.below(divisors.len())];
        shape.push(d as i64);
        left /= d;
    }
    if numel == 0 {
        shape.push(0);
    } else if left > 1 || shape.is_empty() && c.coin() {
        shape.push(left as i64);
    }
    if !shape.is_empty() && c.below(3) == 0 {
        let i = c.below(shape.len());
        shape[i] = -1;
    }
    if c.below(25) == 0 {
        shape.push(2);
    }
    shape
}

fn random_step(c: &mut dyn Choices, ts: &[Tensor]) -> Step {
    let x = if c.coin() {
        ts.len() - 1
    } else {
        c.below(ts.len())
    };
    let t = &ts[x];
    let (shape, n) = (t.shape(), t.dim());
    let size = |d: i64| -> i64 {
        let i = if d < 0 { d + n as i64 } else { d };
        shape.get(i as usize).map_or(1, |&s| s as i64)
    };
    if c.below(100) < 55 {
        let view = match c.below(15) {
            0 => {
                let d = dim(c, n);
                let s = size(d);
                let past = (c.below(10) == 0) as i64;
                View::Select(d, c.range(-s, s - 1 + past))
            }
            1 => {
                let d = dim(c, n);
                let s = size(d);
                let mut bound = || (c.below(4) != 0).then(|| c.range(-s - 1, s + 1));
                let (start, end) = (bound(), bound());
                View::Slice(d, start, end, 1 + c.below(3) as i64)
            }
            2 => View::T,
            3 => View::Transpose(dim(c, n), dim(c, n)),
            4 => {
                let mut dims: Vec<usize> = (0..n).collect();
                shuffle(c, &mut dims);
                View::Permute(
                    dims.iter()
                        .map(|&d| {
                            if c.below(4) == 0 {
                                d as i64 - n as i64
                            } else {
                                d as i64
                            }
                        })
                        .collect(),
                )
            }
            5 => View::View(shape_of(c, t.numel())),
            6 => View::Reshape(shape_of(c, t.numel())),
            7 => View::Squeeze(c.coin().then(|| dim(c, n))),
            8 => View::Unsqueeze(dim(c, n + 1)),
            9 => {
                let mut sizes: Vec<i64> = shape
                    .iter()
                    .map(|&s| match (s, c.below(3)) {
                        (1, 0) => 1 + c.below(3) as i64,
                        (_, 1) => -1,
                        _ => s as i64,
                    })
                    .collect();
                if c.below(3) == 0 {
                    sizes.insert(0, 1 + c.below(2) as i64);
                }
                View::Expand(sizes)
            }
            10 => View::Diagonal(c.range(-2, 2), dim(c, n), dim(c, n)),
            11 => as_strided(c, t),
            12 => View::Unbind(dim(c, n)),
            13 => View::Contiguous,
            _ => View::Clone,
        };
        return Step::View { x, view };
    }
    let op = match c.below(12) {
        0 | 1 => InPlace::Add(operand(c, ts, x, &[1.0, -2.0, 0.5])),
        2 | 3 => InPlace::Mul(operand(c, ts, x, &[2.0, -1.0, 0.5])),
        4 => InPlace::Fill([0.5, -3.0, 7.0][c.below(3)]),
        5 => InPlace::Zero,
        6 => match operand(c, ts, x, &[]) {
            Operand::Tensor(o) => InPlace::Copy(o),
            Operand::Scalar(_) => InPlace::Zero,
        },
        7 => InPlace::T,
        8 => InPlace::Squeeze(c.coin().then(|| dim(c, n))),
        9 => InPlace::Unsqueeze(dim(c, n + 1)),
        _ => InPlace::Transpose(dim(c, n), dim(c, n)),
    };
    Step::InPlace { x, op }
}

/// `add_`'s or `mul_`'s other operand: one of `numbers`, or a tensor that
/// broadcasts to tensor `x` and shares no memory with it (or `x` itself).
fn operand(c: &mut dyn Choices, ts: &[Tensor], x: usize, numbers: &[f64]) -> Operand {
    if !numbers.is_empty() && c.coin() {
        return Operand::Scalar(numbers[c.below(numbers.len())]);
    }
    let target = ts[x].shape();
    let fits = |o: &Tensor| {
        let s = o.shape();
        s.len() <= target.len()
            && s.iter()
                .rev()
                .zip(target.iter().rev())
                .all(|(&a, &b)| a == b || a == 1)
    };
    let candidates: Vec<usize> = (0..ts.len())
        .filter(|&o| o == x || !ts[o].shares_storage(&ts[x]))
        .filter(|&o| fits(&ts[o]) || c.below(8) == 0)
        .collect();
    match candidates.len() {
        0 => Operand::Scalar(numbers.first().copied().unwrap_or(1.0)),
        k => Operand::Tensor(candidates[c.below(k)]),
    }
}

/// `as_strided` arguments that stay inside `t`'s storage without elements
/// sharing memory (contiguous strides of random sizes, permuted, times a
/// step), sometimes with `t`'s own offset, rarely past the storage's end.
fn as_strided(c: &mut dyn Choices, t: &Tensor) -> View {
    let len = t.storage().len() as i64;
    let ndim = c.below(4);
    let mut sizes: Vec<i64> = (0..ndim).map(|_| 1 + c.below(3) as i64).collect();
    let step = 1 + c.below(2) as i64;
    let mut order: Vec<usize> = (0..ndim).collect();
    shuffle(c, &mut order);
    let strides = |sizes: &[i64]| -> Vec<i64> {
        let mut strides = vec![0i64; sizes.len()];
        let mut s = step;
        for &d in order.iter().rev() {
            strides[d] = s;
            s *= sizes[d];
        }
        strides
    };
    let extent = |sizes: &[i64], strides: &[i64]| -> i64 {
        1 + sizes
            .iter()
            .zip(strides)
            .map(|(&n, &s)| (n - 1) * s)
            .sum::<i64>()
    };
    while extent(&sizes, &strides(&sizes)) > len && sizes.iter().any(|&n| n > 1) {
        if let Some(n) = sizes.iter_mut().find(|n| **n > 1) {
            *n -= 1;
        }
    }
    let st = strides(&sizes);
    let room = (len - extent(&sizes, &st)).max(0);
    let offset = match c.below(8) {
        0 => None,
        1 => Some(room + 1),
        _ => Some(c.range(0, room)),
    };
    View::AsStrided(sizes, st, offset)
}

// ---- JSON ------------------------------------------------------------------

fn ints(v: &[i64]) -> Json {
    json!(v)
}

fn opt(v: &Option<i64>) -> Json {
    match v {
        Some(i) => json!(i),
        None => Json::Null,
    }
}

impl Step {
    /// The step as JSON: `{"op": "select", "x": 0, "args": [1, 0]}`; an
    /// operand tensor as `"tensor": 3` (`add_`, `mul_`, `copy_`).
    pub fn to_json(&self) -> Json {
        let (op, x, args, tensor): (&str, usize, Vec<Json>, Option<usize>) = match self {
            Step::View { x, view } => {
                let (op, args) = match view {
                    View::Select(d, i) => ("select", vec![json!(d), json!(i)]),
                    View::Slice(d, s, e, k) => ("slice", vec![json!(d), opt(s), opt(e), json!(k)]),
                    View::T => ("t", vec![]),
                    View::Transpose(a, b) => ("transpose", vec![json!(a), json!(b)]),
                    View::Permute(d) => ("permute", vec![ints(d)]),
                    View::View(s) => ("view", vec![ints(s)]),
                    View::Reshape(s) => ("reshape", vec![ints(s)]),
                    View::Squeeze(d) => ("squeeze", d.iter().map(|d| json!(d)).collect()),
                    View::Unsqueeze(d) => ("unsqueeze", vec![json!(d)]),
                    View::Expand(s) => ("expand", vec![ints(s)]),
                    View::Diagonal(o, a, b) => ("diagonal", vec![json!(o), json!(a), json!(b)]),
                    View::AsStrided(s, st, o) => ("as_strided", vec![ints(s), ints(st), opt(o)]),
                    View::Unbind(d) => ("unbind", vec![json!(d)]),
                    View::Contiguous => ("contiguous", vec![]),
                    View::Clone => ("clone", vec![]),
                };
                (op, *x, args, None)
            }
            Step::InPlace { x, op } => {
                let operand = |o: &Operand| match o {
                    Operand::Scalar(v) => (vec![json!(v)], None),
                    Operand::Tensor(t) => (vec![], Some(*t)),
                };
                let (name, (args, tensor)) = match op {
                    InPlace::Add(o) => ("add_", operand(o)),
                    InPlace::Mul(o) => ("mul_", operand(o)),
                    InPlace::Fill(v) => ("fill_", (vec![json!(v)], None)),
                    InPlace::Zero => ("zero_", (vec![], None)),
                    InPlace::Copy(s) => ("copy_", (vec![], Some(*s))),
                    InPlace::T => ("t_", (vec![], None)),
                    InPlace::Squeeze(d) => {
                        ("squeeze_", (d.iter().map(|d| json!(d)).collect(), None))
                    }
                    InPlace::Unsqueeze(d) => ("unsqueeze_", (vec![json!(d)], None)),
                    InPlace::Transpose(a, b) => ("transpose_", (vec![json!(a), json!(b)], None)),
                };
                (name, *x, args, tensor)
            }
        };
        let mut m = serde_json::Map::new();
        m.insert("op".into(), json!(op));
        m.insert("x".into(), json!(x));
        m.insert("args".into(), Json::Array(args));
        if let Some(t) = tensor {
            m.insert("tensor".into(), json!(t));
        }
        Json::Object(m)
    }

    /// A step from its JSON form.
    pub fn from_json(j: &Json) -> Result<Step> {
        let bad = |what: &str| bad_program(format!("step {j}: {what}"));
        let op = j
            .get("op")
            .and_then(Json::as_str)
            .ok_or_else(|| bad("no \"op\""))?;
        let x = j
            .get("x")
            .and_then(Json::as_u64)
            .ok_or_else(|| bad("no \"x\""))? as usize;
        let empty = Vec::new();
        let args = match j.get("args") {
            Some(Json::Array(a)) => a,
            None => &empty,
            Some(_) => return Err(bad("\"args\" is not a list")),
        };
        let tensor = j.get("tensor").and_then(Json::as_u64).map(|t| t as usize);
        let int = |i: usize| -> Result<i64> {
            args.get(i)
                .and_then(Json::as_i64)
                .ok_or_else(|| bad(&format!("argument {i} is not an int")))
        };
        let opt_int = |i: usize| -> Result<Option<i64>> {
            match args.get(i) {
                None | Some(Json::Null) => Ok(None),
                Some(v) => v
                    .as_i64()
                    .map(Some)
                    .ok_or_else(|| bad(&format!("argument {i} is not an int"))),
            }
        };
        let list = |i: usize| -> Result<Vec<i64>> {
            args.get(i)
                .and_then(Json::as_array)
                .and_then(|l| l.iter().map(Json::as_i64).collect::<Option<Vec<_>>>())
                .ok_or_else(|| bad(&format!("argument {i} is not a list of ints")))
        };
        let float = |i: usize| -> Result<f64> {
            args.get(i)
                .and_then(Json::as_f64)
                .ok_or_else(|| bad(&format!("argument {i} is not a number")))
        };
        let operand = || -> Result<Operand> {
            match tensor {
                Some(t) => Ok(Operand::Tensor(t)),
                None => float(0).map(Operand::Scalar),
            }
        };
        let view = |v: View| Ok(Step::View { x, view: v });
        let inplace = |op: InPlace| Ok(Step::InPlace { x, op });
        match op {
            "select" => view(View::Select(int(0)?, int(1)?)),
            "slice" => view(View::Slice(int(0)?, opt_int(1)?, opt_int(2)?, int(3)?)),
            "t" => view(View::T),
            "transpose" => view(View::Transpose(int(0)?, int(1)?)),
            "permute" => view(View::Permute(list(0)?)),
            "view" => view(View::View(list(0)?)),
            "reshape" => view(View::Reshape(list(0)?)),
            "squeeze" => view(View::Squeeze(opt_int(0)?)),
            "unsqueeze" => view(View::Unsqueeze(int(0)?)),
            "expand" => view(View::Expand(list(0)?)),
            "diagonal" => view(View::Diagonal(int(0)?, int(1)?, int(2)?)),
            "as_strided" => view(View::AsStrided(list(0)?, list(1)?, opt_int(2)?)),
            "unbind" => view(View::Unbind(int(0)?)),
            "contiguous" => view(View::Contiguous),
            "clone" => view(View::Clone),
            "add_" => inplace(InPlace::Add(operand()?)),
            "mul_" => inplace(InPlace::Mul(operand()?)),
            "fill_" => inplace(InPlace::Fill(float(0)?)),
            "zero_" => inplace(InPlace::Zero),
            "copy_" => inplace(InPlace::Copy(
                tensor.ok_or_else(|| bad("copy_ needs \"tensor\""))?,
            )),
            "t_" => inplace(InPlace::T),
            "squeeze_" => inplace(InPlace::Squeeze(opt_int(0)?)),
            "unsqueeze_" => inplace(InPlace::Unsqueeze(int(0)?)),
            "transpose_" => inplace(InPlace::Transpose(int(0)?, int(1)?)),
            other => Err(bad(&format!("unknown operator {other:?}"))),
        }
    }
}

impl Program {
    /// The program as JSON: `{"inputs": [{"shape": [2, 3], "perm": [1, 0]}],
    /// "steps": [...], "outputs": [2]}` (steps as [`Step::to_json`]).
    pub fn to_json(&self) -> Json {
        json!({
            "inputs": self.inputs.iter().map(|i| json!({"shape": i.shape, "perm": i.perm})).collect::<Vec<_>>(),
            "steps": self.steps.iter().map(Step::to_json).collect::<Vec<_>>(),
            "outputs": self.outputs,
        })
    }

    /// A program from its JSON form.
    pub fn from_json(j: &Json) -> Result<Program> {
        let bad = |what: &str| bad_program(what.to_string());
        let usizes = |v: &Json| -> Option<Vec<usize>> {
            v.as_array()?
                .iter()
                .map(|x| x.as_u64().map(|x| x as usize))
                .collect()
        };
        let inputs = j
            .get("inputs")
            .and_then(Json::as_array)
            .ok_or_else(|| bad("no \"inputs\" list"))?
            .iter()
            .map(|i| {
                Some(Input {
                    shape: usizes(i.get("shape")?)?,
                    perm: usizes(i.get("perm")?)?,
                })
            })
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| bad("an input without \"shape\" and \"perm\" lists"))?;
        let steps = j
            .get("steps")
            .and_then(Json::as_array)
            .ok_or_else(|| bad("no \"steps\" list"))?
            .iter()
            .map(Step::from_json)
            .collect::<Result<Vec<_>>>()?;
        let outputs = j
            .get("outputs")
            .and_then(usizes)
            .ok_or_else(|| bad("no \"outputs\" list"))?;
        Ok(Program {
            inputs,
            steps,
            outputs,
        })
    }

    /// The program as Python-like text, one line a step (the tensors
    /// numbered as it makes them: it runs eagerly to count `unbind`'s).
    pub fn describe(&self) -> String {
        let mut out = String::new();
        let mut ts: Vec<Tensor> = Vec::new();
        for (i, input) in self.inputs.iter().enumerate() {
            out += &format!(
                "t{i} = input(shape={:?}, perm={:?})\n",
                input.shape, input.perm
            );
            if let Ok(t) = make_input(i, input) {
                ts.push(t);
            }
        }
        for step in &self.steps {
            let j = step.to_json();
            let mut args = j["args"]
                .as_array()
                .map(|a| a.iter().map(Json::to_string).collect::<Vec<_>>())
                .unwrap_or_default()
                .join(", ");
            if let Some(t) = j.get("tensor") {
                args = format!("t{t}");
            }
            let call = format!("t{}.{}({args})", j["x"], j["op"].as_str().unwrap_or("?"));
            let before = ts.len();
            let ran = apply(step, &mut ts).is_ok();
            match step {
                Step::InPlace { .. } => out += &format!("{call}\n"),
                Step::View { .. } if ran => {
                    let made: Vec<String> = (before..ts.len()).map(|k| format!("t{k}")).collect();
                    let made = if made.is_empty() {
                        "_".into()
                    } else {
                        made.join(", ")
                    };
                    out += &format!("{made} = {call}\n");
                }
                Step::View { .. } => out += &format!("t{before} = {call}  # fails\n"),
            }
        }
        let outs: Vec<String> = self.outputs.iter().map(|o| format!("t{o}")).collect();
        out += &format!("return {}\n", outs.join(", "));
        out
    }
}

/// The error of writing `other` into `t` in place, as the meta kernel of
/// `add_` raises it (PyTorch's meta words for an operand that does not
/// broadcast to `self`), if any.
fn meta_inplace_broadcast(t: &Tensor, other: &Tensor) -> Option<Error> {
    let meta = |x: &Tensor| Tensor::zeros(&x.shape(), x.dtype(), opforge::Device::Meta);
    opforge::at::add__Tensor(&mut meta(t), &meta(other), Scalar::Int(1)).err()
}
