//! Views under functionalization (PyTorch's `ViewMeta` and
//! `FunctionalInverses`): a functional tensor that is a view remembers each
//! view operator between it and its storage's base, with the operator's
//! other arguments. Replayed forward, a view is its `*_copy` operator (a
//! new tensor, never an alias: `select` → `select_copy`); replayed in
//! reverse, a written view is put back into its base by the view's inverse
//! (`select` → `select_scatter`, `t` → `t_copy`, `view` → `view_copy` to the
//! base's sizes, …), as PyTorch's functionalization does with views removed.
//! `as_strided` is the exception: it reads its base's storage, so it is
//! replayed from, and written back into, the storage's base as laid out in
//! memory (`forward_from_storage`, `reverse_into_storage`).

use super::calls::{call_below, operator, tensor_below};
use crate::dispatch::Operator;
use crate::error::{Error, Result};
use crate::shape;
use crate::tables::OpSchema;
use crate::tensor::Tensor;
use crate::value::Value;

/// One view step: the view operator, its arguments after `self`, and which
/// of its results this is (for views with several, `unbind`).
#[derive(Clone, Debug)]
pub(super) struct ViewMeta {
    view: &'static OpSchema,
    args: Vec<Value>,
    out_index: usize,
}

/// The `*_copy` operator of a view operator (`select.int` →
/// `select_copy.int`): what PyTorch generates for every view.
pub(super) fn copy_variant(view: &OpSchema) -> Result<&'static Operator> {
    let s = view;
    if s.namespace == "aten" && s.name == "_unsafe_view" {
        // Replayed as itself (PyTorch's `_unsafe_view_functionalize`).
        return operator("aten::_unsafe_view");
    }
    let name = match s.overload {
        "" => format!("{}::{}_copy", s.namespace, s.base),
        o => format!("{}::{}_copy.{o}", s.namespace, s.base),
    };
    operator(&name)
}

impl ViewMeta {
    /// The step `view(self, *args)`, result `out_index`.
    pub(super) fn new(view: &'static OpSchema, args: &[Value], out_index: usize) -> ViewMeta {
        ViewMeta {
            view,
            args: args.to_vec(),
            out_index,
        }
    }

    /// The view of `base` as a new tensor: `<view>_copy(base, *args)`.
    pub(super) fn forward(&self, base: &Tensor) -> Result<Tensor> {
        let op = copy_variant(self.view)?;
        let mut all = Vec::with_capacity(self.args.len() + 1);
        all.push(Value::Tensor(base.clone()));
        all.extend_from_slice(&self.args);
        let outs = call_below(op, &all)?;
        let one = match outs.as_slice() {
            [Value::TensorList(ts)] => ts.get(self.out_index).cloned(),
            [Value::Tensor(t)] if self.out_index == 0 => Some(t.clone()),
            many => many
                .get(self.out_index)
                .and_then(|v| v.as_tensor().cloned()),
        };
        one.ok_or_else(|| {
            Error::Runtime(
                format!(
                    "functionalization: {} gave no tensor result {}",
                    op.qualified_name(),
                    self.out_index
                )
                .into(),
            )
        })
    }

    /// Does the view read its base's storage rather than its base
    /// (`as_strided`: its size, stride and offset are positions in memory)?
    pub(super) fn is_storage_relative(&self) -> bool {
        self.view.namespace == "aten" && self.view.name == "as_strided"
    }

    /// `as_strided(size, stride, offset)` of the storage whose base is
    /// `base` laid out as `base_meta` (its eager geometry): `as_strided_copy`
    /// of `base` itself when it is laid out so, else of the storage made
    /// again from it ([`storage_of`]).
    pub(super) fn forward_from_storage(&self, base: &Tensor, base_meta: &Tensor) -> Result<Tensor> {
        let memory = match laid_out_as(base, base_meta) {
            true => base.clone(),
            false => storage_of(base, base_meta)?,
        };
        let mut all = vec![Value::Tensor(memory)];
        all.extend_from_slice(&self.args);
        tensor_below("aten::as_strided_copy", &all)
    }

    /// The storage's base with this `as_strided` view of it replaced by
    /// `mutated`: `as_strided_scatter` into the base when it is laid out as
    /// eagerly, else into the storage made again from it, read back with the
    /// base's eager geometry.
    pub(super) fn reverse_into_storage(
        &self,
        base: &Tensor,
        base_meta: &Tensor,
        mutated: &Tensor,
    ) -> Result<Tensor> {
        let scatter = |memory: Tensor| {
            let mut all = vec![Value::Tensor(memory), Value::Tensor(mutated.clone())];
            all.extend_from_slice(&self.args);
            tensor_below("aten::as_strided_scatter", &all)
        };
        if laid_out_as(base, base_meta) {
            return scatter(base.clone());
        }
        let memory = scatter(storage_of(base, base_meta)?)?;
        tensor_below(
            "aten::as_strided_copy",
            &[
                Value::Tensor(memory),
                Value::IntList(base_meta.sizes()),
                ints(&base_meta.strides()),
                Value::Int(base_meta.storage_offset() as i64),
            ],
        )
    }

    /// `base` with this view of it replaced by `mutated` (the view's
    /// inverse, never a view: PyTorch's `InverseReturnMode::NeverView`).
    pub(super) fn reverse(&self, base: &Tensor, mutated: &Tensor) -> Result<Tensor> {
        let s = self.view;
        let m = || Value::Tensor(mutated.clone());
        let b = || Value::Tensor(base.clone());
        let arg = |i: usize| self.args.get(i).cloned().unwrap_or(Value::None);
        let sizes = || Value::IntList(base.shape().iter().map(|&n| n as i64).collect());
        if s.namespace != "aten" {
            return Err(no_inverse(self.view));
        }
        match s.name {
            "select.int" => tensor_below("aten::select_scatter", &[b(), m(), arg(0), arg(1)]),
            "slice.Tensor" => tensor_below(
                "aten::slice_scatter",
                &[b(), m(), arg(0), arg(1), arg(2), arg(3)],
            ),
            "diagonal" => tensor_below(
                "aten::diagonal_scatter",
                &[b(), m(), arg(0), arg(1), arg(2)],
            ),
            "unbind.int" => tensor_below(
                "aten::select_scatter",
                &[b(), m(), arg(0), Value::Int(self.out_index as i64)],
            ),
            "transpose.int" => tensor_below("aten::transpose_copy.int", &[m(), arg(0), arg(1)]),
            "t" => tensor_below("aten::t_copy", &[m()]),
            "permute" => {
                let dims = int_list(&arg(0));
                let mut inverse = vec![0i64; dims.len()];
                for (i, &d) in dims.iter().enumerate() {
                    inverse[shape::wrap_dim(d, dims.len())?] = i as i64;
                }
                tensor_below("aten::permute_copy", &[m(), Value::IntList(inverse)])
            }
            "view" => tensor_below("aten::view_copy", &[m(), sizes()]),
            "_unsafe_view" => tensor_below("aten::_unsafe_view", &[m(), sizes()]),
            "unsqueeze" => tensor_below("aten::squeeze_copy.dim", &[m(), arg(0)]),
            "squeeze.dim" => unsqueeze_to(mutated, &[int(&arg(0))], &base.shape()),
            "squeeze" => {
                let all: Vec<i64> = (0..base.dim() as i64).collect();
                unsqueeze_to(mutated, &all, &base.shape())
            }
            "expand" => {
                // base + sum_to(mutated - base, base's sizes), never a view.
                let diff = tensor_below("aten::sub.Tensor", &[m(), b(), Value::Int(1)])?;
                let summed = sum_to(&diff, &base.shape())?;
                tensor_below(
                    "aten::add.Tensor",
                    &[b(), Value::Tensor(summed), Value::Int(1)],
                )
            }
            "detach" | "alias" => Ok(mutated.clone()),
            _ => Err(no_inverse(self.view)),
        }
    }
}

/// Is `base` (a value) laid out in memory as `base_meta` (its eager
/// geometry), over a storage as large: then its storage's positions are
/// eager's.
fn laid_out_as(base: &Tensor, base_meta: &Tensor) -> bool {
    base.strides() == base_meta.strides()
        && base.storage_offset() == base_meta.storage_offset()
        && base.storage().len() >= base_meta.storage().len()
}

/// The storage eager execution would have under `base` (laid out as
/// `base_meta`), as a 1-dimensional tensor: zeros with `base` scattered
/// into its positions (`as_strided_scatter`). Positions outside `base` are
/// not tracked (PyTorch's `functionalize` documents the same limit of
/// `as_strided`): they read as zeros.
fn storage_of(base: &Tensor, base_meta: &Tensor) -> Result<Tensor> {
    let len = base_meta.storage().len() as i64;
    let zeros = tensor_below(
        "aten::zeros",
        &[
            Value::IntList(vec![len]),
            Value::DType(base.dtype()),
            Value::None,
            Value::Device(base.device()),
            Value::None,
        ],
    )?;
    tensor_below(
        "aten::as_strided_scatter",
        &[
            Value::Tensor(zeros),
            Value::Tensor(base.clone()),
            Value::IntList(base_meta.sizes()),
            ints(&base_meta.strides()),
            Value::Int(base_meta.storage_offset() as i64),
        ],
    )
}

fn ints(v: &[usize]) -> Value {
    Value::IntList(v.iter().map(|&n| n as i64).collect())
}

fn no_inverse(view: &OpSchema) -> Error {
    Error::Runtime(
        format!(
            "functionalization: the view operator {}::{} has no inverse, so a write through its result cannot be put back into its base",
            view.namespace, view.name
        )
        .into(),
    )
}

fn int(v: &Value) -> i64 {
    match v {
        Value::Int(i) => *i,
        _ => 0,
    }
}

fn int_list(v: &Value) -> Vec<i64> {
    match v {
        Value::IntList(l) => l.to_vec(),
        Value::List(items) => items.iter().map(int).collect(),
        _ => Vec::new(),
    }
}

/// PyTorch's `unsqueeze_copy_to`: `t` with a dimension put back at each of
/// `dims` (wrapped against `sizes`) where `sizes` has a 1.
fn unsqueeze_to(t: &Tensor, dims: &[i64], sizes: &[usize]) -> Result<Tensor> {
    if sizes.is_empty() {
        return Ok(t.clone());
    }
    let mut wanted = dims
        .iter()
        .map(|&d| shape::wrap_dim(d, sizes.len()))
        .collect::<Result<Vec<usize>>>()?;
    wanted.sort_unstable();
    wanted.dedup();
    let mut result = t.clone();
    for d in wanted {
        if sizes.get(d) == Some(&1) {
            result = tensor_below(
                "aten::unsqueeze_copy",
                &[Value::Tensor(result), Value::Int(d as i64)],
            )?;
        }
    }
    Ok(result)
}

/// PyTorch's `sum_to(t, want, always_return_non_view=true)`: `t` summed
/// as [`shape::sum_to`] plans it, as a new tensor.
fn sum_to(t: &Tensor, want: &[usize]) -> Result<Tensor> {
    if want.is_empty() {
        return tensor_below("aten::sum", &[Value::Tensor(t.clone()), Value::None]);
    }
    let plan = shape::sum_to(&t.shape(), want);
    let mut t = t.clone();
    if !plan.dims.is_empty() {
        t = tensor_below(
            "aten::sum.dim_IntList",
            &[
                Value::Tensor(t),
                Value::IntList(plan.dims),
                Value::Bool(true),
                Value::None,
            ],
        )?;
    }
    if plan.view {
        let want: Vec<i64> = want.iter().map(|&n| n as i64).collect();
        tensor_below("aten::view_copy", &[Value::Tensor(t), Value::IntList(want)])
    } else {
        tensor_below("aten::clone", &[Value::Tensor(t), Value::None])
    }
}
