//! `autograd::gradcheck` on every operator of `runtime/derivatives.yaml`,
//! and `gradgradcheck` too, through the dispatcher's boxed path, on small
//! float64 inputs: [`run`], used by the `gradchecks` binary (one line per
//! operator and check, then `N passed, M failed`) and the
//! `autograd_generated` test.
//!
//! ```text
//! cargo run --release -p opforge-tests --bin gradchecks [-- --filter SUBSTR]
//! ```
//!
//! The operators come from the file the runtime's build generated its Autograd
//! kernels from (embedded here; each entry is also checked to have an
//! Autograd kernel in the dispatcher). Inputs are built from the schema: a
//! tensor argument with a formula is a random float64 leaf of shape `[2, 3]`
//! that requires grad, with values in `±[0.2, 1.0)` (away from the kinks of
//! `abs` and `relu` at 0, and from 0 for `div`); other arguments take their
//! schema default. [`OVERRIDES`] holds what an operator needs beyond that
//! (shapes, dims, index tensors, positive inputs for `log` / `sqrt`, clamp
//! bounds with inputs away from them). An operator without a differentiable
//! argument (`isnan`) is only checked to give outputs that do not require
//! grad; one whose formula is PyTorch's `not_implemented` ([`NOT_IMPLEMENTED`])
//! must fail gradcheck with PyTorch's error. An argument written in place (`copy_`'s
//! `self`) is cloned inside the checked function, so the leaf is not written.
//!
//! Each operator gets `gradcheck` in slow mode and in fast mode (both with
//! `check_forward_ad`: its forward formula checked too), and
//! `gradgradcheck` (slow mode). `gradgradcheck` runs on every operator except those listed in
//! [`NOT_TWICE`] with the reason; an operator whose backward is not itself
//! differentiable here shows as a gradgradcheck failure.

use opforge::autograd::{gradcheck, gradgradcheck, GradcheckOptions, GradgradcheckOptions};
use opforge::dispatch::dispatcher;
use opforge::tables::{BaseType, Ty};
use opforge::{at, DType, Result, Tensor, Value};
use opforge_schema::derivatives::{self, Body, Direction};

/// The derivatives file the runtime's Autograd kernels are generated from.
const DERIVATIVES: &str = include_str!("../../runtime/derivatives.yaml");

/// What an argument is, beyond the schema default.
#[derive(Clone, Copy)]
enum Arg {
    /// A random float64 tensor of this shape (a leaf that requires grad when
    /// the argument has a formula).
    Shape(&'static [usize]),
    /// A random float64 tensor of this shape with values in `[0.2, 1.2)`.
    Positive(&'static [usize]),
    /// A float64 tensor with these values and shape.
    Values(&'static [f64], &'static [usize]),
    /// An int64 tensor (indices).
    Index(&'static [i64]),
    /// A bool tensor of shape `[2, 3]`.
    Mask(&'static [bool]),
    /// An `int` / `SymInt`.
    Int(i64),
    /// An `int[]` / `SymInt[]`.
    Ints(&'static [i64]),
    /// A `Scalar` (or `Scalar?`).
    Float(f64),
    /// A `bool`.
    Bool(bool),
    /// A `Tensor[]` of random float64 tensors of these shapes (each a leaf
    /// that requires grad when the argument has a formula).
    Shapes(&'static [&'static [usize]]),
    /// `None` (an optional argument without a default).
    None,
    /// A `ScalarType`.
    Dtype(DType),
}

/// Where a differentiated tensor is among the arguments: the value's
/// position, and its element for a `Tensor[]`.
type Slot = (usize, Option<usize>);

/// Per-operator arguments: `(operator, [(argument, value)])`.
const OVERRIDES: &[(&str, &[(&str, Arg)])] = &[
    ("add.Scalar", &[("other", Arg::Float(0.75))]),
    (
        "leaky_relu_backward",
        &[
            ("negative_slope", Arg::Float(0.2)),
            ("self_is_result", Arg::Bool(false)),
        ],
    ),
    ("fill.Scalar", &[("value", Arg::Float(0.5))]),
    ("fill_.Scalar", &[("value", Arg::Float(0.5))]),
    ("fill.Tensor", &[("value", Arg::Shape(&[]))]),
    ("fill_.Tensor", &[("value", Arg::Shape(&[]))]),
    ("sub.Scalar", &[("other", Arg::Float(0.75))]),
    ("mul.Scalar", &[("other", Arg::Float(1.5))]),
    ("div.Scalar", &[("other", Arg::Float(-2.5))]),
    (
        "add.Tensor",
        &[("alpha", Arg::Float(2.0)), ("other", Arg::Shape(&[3]))],
    ),
    ("sub.Tensor", &[("alpha", Arg::Float(-0.5))]),
    ("mul.Tensor", &[("other", Arg::Shape(&[1, 3]))]),
    ("div.Tensor", &[("other", Arg::Shape(&[2, 1]))]),
    (
        "bmm",
        &[
            ("self", Arg::Shape(&[2, 2, 3])),
            ("mat2", Arg::Shape(&[2, 3, 2])),
        ],
    ),
    (
        "mm",
        &[("self", Arg::Shape(&[2, 3])), ("mat2", Arg::Shape(&[3, 2]))],
    ),
    (
        "dot",
        &[("self", Arg::Shape(&[3])), ("tensor", Arg::Shape(&[3]))],
    ),
    (
        "mv",
        &[("self", Arg::Shape(&[2, 3])), ("vec", Arg::Shape(&[3]))],
    ),
    (
        "_unsafe_view",
        &[("self", Arg::Shape(&[2, 3])), ("size", Arg::Ints(&[3, 2]))],
    ),
    (
        "squeeze_.dim",
        &[("self", Arg::Shape(&[2, 1, 3])), ("dim", Arg::Int(1))],
    ),
    (
        "clamp",
        &[
            (
                "self",
                Arg::Values(&[-0.9, -0.3, 0.2, 0.45, 0.8, -0.75], &[2, 3]),
            ),
            ("min", Arg::Float(-0.5)),
            ("max", Arg::Float(0.5)),
        ],
    ),
    (
        "expand",
        &[
            ("self", Arg::Shape(&[2, 1])),
            ("size", Arg::Ints(&[3, 2, 4])),
        ],
    ),
    (
        "slice_scatter",
        &[
            ("self", Arg::Shape(&[4, 3])),
            ("src", Arg::Shape(&[2, 3])),
            ("dim", Arg::Int(0)),
            ("start", Arg::Int(1)),
            ("end", Arg::Int(3)),
        ],
    ),
    (
        "select_scatter",
        &[
            ("self", Arg::Shape(&[2, 3])),
            ("src", Arg::Shape(&[3])),
            ("dim", Arg::Int(0)),
            ("index", Arg::Int(1)),
        ],
    ),
    (
        "index_select",
        &[
            ("self", Arg::Shape(&[3, 4])),
            ("dim", Arg::Int(0)),
            ("index", Arg::Index(&[2, 0, 2])),
        ],
    ),
    ("log", &[("self", Arg::Positive(&[2, 3]))]),
    ("log10", &[("self", Arg::Positive(&[2, 3]))]),
    ("log2", &[("self", Arg::Positive(&[2, 3]))]),
    ("rsqrt", &[("self", Arg::Positive(&[2, 3]))]),
    (
        "acosh",
        &[(
            "self",
            Arg::Values(&[1.25, 1.5, 2.0, 3.5, 1.75, 2.25], &[2, 3]),
        )],
    ),
    // Away from the kinks of the step functions (integers, half-integers
    // for round): their zero gradient is the numerical one there too.
    (
        "round",
        &[(
            "self",
            Arg::Values(&[0.3, -0.2, 1.2, -1.8, 2.7, 0.1], &[2, 3]),
        )],
    ),
    ("sqrt", &[("self", Arg::Positive(&[2, 3]))]),
    ("max.dim", &[("dim", Arg::Int(1))]),
    (
        "min.dim",
        &[("dim", Arg::Int(0)), ("keepdim", Arg::Bool(true))],
    ),
    ("mean.dim", &[("dim", Arg::Ints(&[1]))]),
    ("amax", &[("dim", Arg::Ints(&[1]))]),
    (
        "amin",
        &[("dim", Arg::Ints(&[0, -1])), ("keepdim", Arg::Bool(true))],
    ),
    ("cumsum", &[("dim", Arg::Int(1))]),
    (
        "var.correction",
        &[("dim", Arg::Ints(&[1])), ("correction", Arg::Float(0.5))],
    ),
    (
        "sum.dim_IntList",
        &[("dim", Arg::Ints(&[0])), ("keepdim", Arg::Bool(true))],
    ),
    (
        "permute",
        &[
            ("self", Arg::Shape(&[2, 3, 4])),
            ("dims", Arg::Ints(&[2, 0, 1])),
        ],
    ),
    (
        "select.int",
        &[("dim", Arg::Int(1)), ("index", Arg::Int(-1))],
    ),
    (
        "slice.Tensor",
        &[
            ("self", Arg::Shape(&[2, 5])),
            ("dim", Arg::Int(1)),
            ("start", Arg::Int(1)),
            ("end", Arg::Int(5)),
            ("step", Arg::Int(2)),
        ],
    ),
    (
        "squeeze.dim",
        &[("self", Arg::Shape(&[2, 1, 3])), ("dim", Arg::Int(1))],
    ),
    (
        "squeeze.dims",
        &[
            ("self", Arg::Shape(&[2, 1, 3, 1])),
            ("dim", Arg::Ints(&[1, 3, 0])),
        ],
    ),
    (
        "squeeze_.dims",
        &[("self", Arg::Shape(&[2, 1, 3])), ("dim", Arg::Ints(&[-2]))],
    ),
    (
        "flip",
        &[
            ("self", Arg::Shape(&[2, 3, 2])),
            ("dims", Arg::Ints(&[0, -1])),
        ],
    ),
    (
        "transpose.int",
        &[("dim0", Arg::Int(0)), ("dim1", Arg::Int(1))],
    ),
    ("unsqueeze", &[("dim", Arg::Int(1))]),
    ("unsqueeze_", &[("dim", Arg::Int(1))]),
    (
        "transpose_",
        &[("dim0", Arg::Int(0)), ("dim1", Arg::Int(1))],
    ),
    ("view", &[("size", Arg::Ints(&[3, 2]))]),
    (
        "where.self",
        &[(
            "condition",
            Arg::Mask(&[true, false, true, false, false, true]),
        )],
    ),
    ("copy_", &[("src", Arg::Shape(&[3]))]),
    (
        "cat",
        &[
            ("tensors", Arg::Shapes(&[&[2, 3], &[1, 3]])),
            ("dim", Arg::Int(0)),
        ],
    ),
    (
        "stack",
        &[
            ("tensors", Arg::Shapes(&[&[2, 3], &[2, 3]])),
            ("dim", Arg::Int(1)),
        ],
    ),
    (
        "clamp.Tensor",
        &[
            (
                "min",
                Arg::Values(&[-0.5, -0.1, -0.5, -0.1, -0.5, -0.1], &[2, 3]),
            ),
            ("max", Arg::Values(&[0.5, 0.1, 0.5], &[3])),
        ],
    ),
    ("div.Tensor_mode", &[("rounding_mode", Arg::None)]),
    (
        "div.Scalar_mode",
        &[("other", Arg::Float(2.5)), ("rounding_mode", Arg::None)],
    ),
    // Inputs in [0.2, 1.2) and a divisor 1.5: away from the jumps of fmod
    // and remainder (multiples of the divisor), where the gradient is 1.
    (
        "fmod.Scalar",
        &[("self", Arg::Positive(&[2, 3])), ("other", Arg::Float(1.5))],
    ),
    (
        "remainder.Scalar",
        &[("self", Arg::Positive(&[2, 3])), ("other", Arg::Float(1.5))],
    ),
    ("pow.Scalar", &[("self", Arg::Float(2.5))]),
    ("pow.Tensor_Scalar", &[("exponent", Arg::Float(3.0))]),
    ("pow.Tensor_Tensor", &[("self", Arg::Positive(&[2, 3]))]),
    ("prod.dim_int", &[("dim", Arg::Int(1))]),
    ("threshold_backward", &[("threshold", Arg::Float(0.0))]),
    (
        "addcdiv",
        &[
            ("tensor2", Arg::Positive(&[2, 3])),
            ("value", Arg::Float(0.7)),
        ],
    ),
    (
        "addcmul",
        &[("tensor1", Arg::Shape(&[3])), ("value", Arg::Float(-1.5))],
    ),
    (
        "addmm",
        &[
            ("self", Arg::Shape(&[2])),
            ("mat1", Arg::Shape(&[2, 3])),
            ("mat2", Arg::Shape(&[3, 2])),
            ("beta", Arg::Float(0.5)),
            ("alpha", Arg::Float(1.5)),
        ],
    ),
    ("lerp.Scalar", &[("weight", Arg::Float(0.7))]),
    // A zero-width draw is a constant: the only way a random fill has a
    // numerical Jacobian.
    (
        "normal_",
        &[("mean", Arg::Float(0.5)), ("std", Arg::Float(0.0))],
    ),
    (
        "uniform_",
        &[("from", Arg::Float(0.25)), ("to", Arg::Float(0.25))],
    ),
    (
        "nll_loss_forward",
        &[
            ("self", Arg::Shape(&[3, 4])),
            ("target", Arg::Index(&[2, 0, 3])),
            ("weight", Arg::Values(&[0.5, 1.0, 2.0, 1.5], &[4])),
            ("reduction", Arg::Int(1)),
            ("ignore_index", Arg::Int(0)),
        ],
    ),
    (
        "nll_loss_backward",
        &[
            ("grad_output", Arg::Shape(&[])),
            ("self", Arg::Shape(&[3, 4])),
            ("target", Arg::Index(&[2, 0, 3])),
            ("weight", Arg::Values(&[0.5, 1.0, 2.0, 1.5], &[4])),
            ("reduction", Arg::Int(1)),
            ("ignore_index", Arg::Int(0)),
            ("total_weight", Arg::Values(&[3.5], &[])),
        ],
    ),
    ("mse_loss", &[("reduction", Arg::Int(2))]),
    (
        "mse_loss_backward",
        &[("grad_output", Arg::Shape(&[])), ("reduction", Arg::Int(1))],
    ),
    (
        "_log_softmax",
        &[("dim", Arg::Int(1)), ("half_to_float", Arg::Bool(false))],
    ),
    (
        "_softmax",
        &[("dim", Arg::Int(0)), ("half_to_float", Arg::Bool(false))],
    ),
    (
        "_log_softmax_backward_data",
        &[
            ("dim", Arg::Int(1)),
            ("input_dtype", Arg::Dtype(DType::Float64)),
        ],
    ),
    (
        "_softmax_backward_data",
        &[
            ("dim", Arg::Int(-1)),
            ("input_dtype", Arg::Dtype(DType::Float64)),
        ],
    ),
];

/// Operators whose gradgradcheck is not run, with the reason.
const NOT_TWICE: &[(&str, &str)] = &[];

/// Operators whose formula is PyTorch's `not_implemented(...)`: gradcheck
/// must fail with this error (PyTorch's words), and nothing else is run.
const NOT_IMPLEMENTED: &[(&str, &str)] = &[
    (
        "acosh_",
        "RuntimeError: the derivative for 'inplace version of acosh' is not implemented.",
    ),
    (
        "asinh_",
        "RuntimeError: the derivative for 'inplace version of asinh' is not implemented.",
    ),
    (
        "atanh_",
        "RuntimeError: the derivative for 'inplace version of atanh' is not implemented.",
    ),
];

struct Op {
    name: String,
    /// Argument names with a backward formula (not `non_differentiable`).
    differentiable: Vec<String>,
}

fn ops() -> Vec<Op> {
    let file = derivatives::load_str("derivatives.yaml", DERIVATIVES)
        .unwrap_or_else(|d| panic!("runtime/derivatives.yaml: {d}"));
    file.entries
        .iter()
        .map(|e| {
            let name = e
                .name
                .split('(')
                .next()
                .unwrap_or_default()
                .trim()
                .to_string();
            let differentiable = e
                .dispatch
                .iter()
                .flat_map(|d| &d.formulas)
                .filter(|f| f.direction == Direction::Backward && f.body != Body::NonDifferentiable)
                .flat_map(|f| f.names.iter().cloned())
                .collect();
            Op {
                name,
                differentiable,
            }
        })
        .collect()
}

/// Uniform values in `[0, 1)` from the default generator (seeded in `main`).
fn uniform(n: usize) -> Result<Vec<f64>> {
    at::rand(&[n as i64], Some(DType::Float64), None, None, None)?.to_vec::<f64>()
}

fn tensor(v: Vec<f64>, shape: &[usize]) -> Result<Tensor> {
    Tensor::from_vec(v, shape)
}

/// Builds the arguments of `op`: values, and which of them are the tensors
/// gradcheck differentiates (by position in the returned values).
fn build(
    op: &Op,
    schema: &opforge::tables::OpSchema,
) -> std::result::Result<(Vec<Value>, Vec<Slot>), String> {
    let overrides: &[(&str, Arg)] = OVERRIDES
        .iter()
        .find(|(n, _)| *n == op.name)
        .map_or(&[], |(_, a)| a);
    let mut values = Vec::new();
    let mut diff = Vec::new();
    for a in schema.args {
        if a.is_out {
            return Err(format!("{}: out= argument {}", op.name, a.name));
        }
        let given = overrides
            .iter()
            .find(|(n, _)| *n == a.name)
            .map(|(_, v)| *v);
        let wants_grad = op.differentiable.iter().any(|n| n == a.name);
        let is_tensor = matches!(a.ty, Ty::Base(BaseType::Tensor));
        let err = |e: opforge::Error| format!("{}: argument {}: {e}", op.name, a.name);
        // Values in ±[0.2, 1.0).
        let random = |s: &[usize]| -> std::result::Result<Tensor, String> {
            let n = s.iter().product();
            let (u, sign) = (uniform(n).map_err(err)?, uniform(n).map_err(err)?);
            let v = u
                .iter()
                .zip(&sign)
                .map(|(u, s)| {
                    if *s < 0.5 {
                        -(0.2 + 0.8 * u)
                    } else {
                        0.2 + 0.8 * u
                    }
                })
                .collect();
            tensor(v, s).map_err(err)
        };
        let v = match (given, is_tensor) {
            (Some(Arg::Shape(_)), _) | (None, true) => {
                let s = match given {
                    Some(Arg::Shape(s)) => s,
                    _ => &[2, 3],
                };
                Value::Tensor(random(s)?)
            }
            (Some(Arg::Shapes(shapes)), _) => {
                let list = shapes
                    .iter()
                    .map(|s| random(s))
                    .collect::<std::result::Result<Vec<_>, _>>()?;
                if wants_grad {
                    for (k, t) in list.iter().enumerate() {
                        t.set_requires_grad(true).map_err(err)?;
                        diff.push((values.len(), Some(k)));
                    }
                }
                Value::TensorList(list)
            }
            (Some(Arg::None), _) => Value::None,
            (Some(Arg::Positive(s)), _) => {
                let n = s.iter().product();
                let v = uniform(n).map_err(err)?.iter().map(|u| 0.2 + u).collect();
                Value::Tensor(tensor(v, s).map_err(err)?)
            }
            (Some(Arg::Values(v, s)), _) => Value::Tensor(tensor(v.to_vec(), s).map_err(err)?),
            (Some(Arg::Index(i)), _) => {
                Value::Tensor(Tensor::from_vec(i.to_vec(), &[i.len()]).map_err(err)?)
            }
            (Some(Arg::Mask(m)), _) => {
                Value::Tensor(Tensor::from_vec(m.to_vec(), &[2, 3]).map_err(err)?)
            }
            (Some(Arg::Int(i)), _) => Value::Int(i),
            (Some(Arg::Ints(i)), _) => Value::IntList(i.to_vec()),
            (Some(Arg::Float(x)), _) => Value::Float(x),
            (Some(Arg::Bool(b)), _) => Value::Bool(b),
            (Some(Arg::Dtype(d)), _) => Value::DType(d),
            (None, false) => opforge::bind::default_value(a).ok_or_else(|| {
                format!(
                    "{}: no value for argument `{} {}` (add one to OVERRIDES)",
                    op.name, a.ty, a.name
                )
            })?,
        };
        if let Value::Tensor(t) = &v {
            if wants_grad {
                t.set_requires_grad(true).map_err(err)?;
                diff.push((values.len(), None));
            }
        }
        values.push(v);
    }
    Ok((values, diff))
}

/// The function gradcheck sees: the tensors that require grad in, the
/// operator's tensor results out (a written argument is cloned first).
fn checked_fn<'a>(
    op: &'a opforge::dispatch::Operator,
    values: &'a [Value],
    diff: &'a [Slot],
) -> impl Fn(&[Tensor]) -> Result<Vec<Tensor>> + 'a {
    move |xs: &[Tensor]| {
        let mut args = values.to_vec();
        for (&(i, k), x) in diff.iter().zip(xs) {
            match (&mut args[i], k) {
                (Value::TensorList(list), Some(k)) => list[k] = x.clone(),
                (v, _) => *v = Value::Tensor(x.clone()),
            }
        }
        for (v, a) in args.iter_mut().zip(op.schema.args) {
            if a.alias.is_some_and(|al| al.is_write) {
                if let Value::Tensor(t) = v {
                    *v = Value::Tensor(at::clone(t, None)?);
                }
            }
        }
        let out = op.call_boxed(&args)?;
        Ok(out
            .into_iter()
            .filter_map(|v| match v {
                Value::Tensor(t) => Some(t),
                _ => None,
            })
            .collect())
    }
}

/// One check of one operator and its outcome.
#[derive(Debug)]
pub struct Check {
    /// `mul.Tensor gradcheck fast_mode`.
    pub label: String,
    /// `Err` with the failure (PyTorch's message).
    pub outcome: std::result::Result<(), String>,
}

/// Runs the checks of every operator whose name contains one of `filters`
/// (all if empty).
pub fn run(filters: &[String]) -> Vec<Check> {
    let mut checks = Vec::new();
    let mut report = |label: String, outcome: std::result::Result<(), String>| {
        checks.push(Check { label, outcome });
    };
    for op in ops() {
        if !filters.is_empty() && !filters.iter().any(|f| op.name.contains(f.as_str())) {
            continue;
        }
        opforge::manual_seed(0);
        let Some(handle) = dispatcher().find(&op.name) else {
            report(
                format!("{} gradcheck", op.name),
                Err("not in the dispatcher".into()),
            );
            continue;
        };
        if op.differentiable.is_empty() {
            // Every argument `non_differentiable` (`isnan`): no formula, so no
            // Autograd kernel (the call falls through to the backend); with
            // inputs that require grad, the outputs must not.
            let outcome = build(&op, handle.schema).and_then(|(values, diff)| {
                for v in &values {
                    if let Value::Tensor(t) = v {
                        t.set_requires_grad(true).map_err(|e| e.to_string())?;
                    }
                }
                match checked_fn(handle, &values, &diff)(&[]) {
                    Ok(outs) if outs.iter().all(|t| !t.requires_grad()) => Ok(()),
                    Ok(_) => Err("an output requires grad".into()),
                    Err(e) => Err(format!("{}: {e}", e.python_class())),
                }
            });
            report(format!("{} non_differentiable", op.name), outcome);
            continue;
        }
        if !handle
            .registered_keys()
            .iter()
            .any(|k| k.name().starts_with("Autograd"))
        {
            report(
                format!("{} gradcheck", op.name),
                Err("no Autograd kernel registered".into()),
            );
            continue;
        }
        let (values, diff) = match build(&op, handle.schema) {
            Ok(b) => b,
            Err(e) => {
                report(format!("{} gradcheck", op.name), Err(e));
                continue;
            }
        };
        let inputs: Vec<Tensor> = diff
            .iter()
            .filter_map(|&(i, k)| match (&values[i], k) {
                (Value::Tensor(t), None) => Some(t.clone()),
                (Value::TensorList(list), Some(k)) => list.get(k).cloned(),
                _ => None,
            })
            .collect();
        let f = checked_fn(handle, &values, &diff);
        let once = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            gradcheck(
                &f,
                &inputs,
                &GradcheckOptions::default().check_forward_ad(true),
            )
        }));
        if let Some((_, want)) = NOT_IMPLEMENTED.iter().find(|(n, _)| *n == op.name) {
            let outcome = match outcome(once) {
                Err(e) if e == *want => Ok(()),
                Err(e) => Err(format!("expected `{want}`, got `{e}`")),
                Ok(()) => Err(format!("expected `{want}`, but gradcheck passed")),
            };
            report(format!("{} gradcheck not_implemented", op.name), outcome);
            continue;
        }
        report(format!("{} gradcheck", op.name), outcome(once));
        let fast = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let o = GradcheckOptions::default()
                .fast_mode(true)
                .check_forward_ad(true);
            gradcheck(&f, &inputs, &o)
        }));
        report(format!("{} gradcheck fast_mode", op.name), outcome(fast));
        if let Some((_, why)) = NOT_TWICE.iter().find(|(n, _)| *n == op.name) {
            report(format!("{} gradgradcheck skipped: {why}", op.name), Ok(()));
            continue;
        }
        let twice = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            gradgradcheck(&f, &inputs, &GradgradcheckOptions::default())
        }));
        report(format!("{} gradgradcheck", op.name), outcome(twice));
    }
    checks
}

fn outcome(r: std::thread::Result<Result<bool>>) -> std::result::Result<(), String> {
    match r {
        Ok(Ok(true)) => Ok(()),
        Ok(Ok(false)) => Err("returned false".into()),
        Ok(Err(e)) => Err(format!("{}: {e}", e.python_class())),
        Err(p) => Err(format!(
            "PANIC: {}",
            p.downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default()
        )),
    }
}
