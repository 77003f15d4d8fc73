//! Functionalization (PyTorch's `torch.func.functionalize(f,
//! remove="mutations_and_views")`): a program's in-place operators and
//! views become functional ones, so that what runs below the layer (and
//! what a graph captures) never writes a tensor or aliases one.
//!
//! The layer is a dispatch key, `Functionalize` (above `Python`, so that
//! dispatch modes and graph capture see the functional calls), and its
//! fallback. [`functionalize`] wraps the program's tensor inputs as
//! functional tensors (each stands for a plain value, see `tensor.rs`), and
//! every call on them comes here:
//!
//! - a view (`select`) runs as its `*_copy` operator (`select_copy`), and
//!   its result remembers the view step; its wrapper has the sizes, strides
//!   and offset the view has eagerly (the view run on a meta copy first,
//!   which also raises eager's errors), so composites that read them
//!   (`contiguous`, `reshape`) decide as eagerly;
//! - an in-place operator (`sin_`) or an `out=` one runs as its functional
//!   variant (`sin`); the result becomes the written tensor's value, and a
//!   write through a view is put back into the view's base by the view's
//!   inverse (`select_scatter`, `slice_scatter`, …) when the base, or
//!   another view of it, is next used;
//! - an in-place view (`t_`, `squeeze_`) adds a view step to its tensor;
//! - an operator taking a custom-class object, and a method call on an
//!   object (`call_torchbind`, whose kernel at this key is here), is made as
//!   `with_effects(token, op, …)` ([`effects`](self#effects)), the token
//!   threaded from call to call;
//! - anything else runs on the values, and its results are wrapped.
//!
//! When the program returns, its results are unwrapped, and an input that
//! was written gets its new value by one `copy_`, outside the layer, after
//! an `as_strided_` to its new sizes and strides if an in-place view changed
//! its sizes (PyTorch's `_propagate_functional_input_mutation`).
//!
//! PyTorch's caveat holds: a tensor handed to an object's method and then
//! written in place is not tracked (the object keeps the value it was given;
//! the program's tensor now stands for a new one).
//!
//! ```
//! use opforge::functionalize::functionalize;
//! use opforge::{Scalar, Tensor, Value};
//! let x = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[2, 2])?;
//! let f = functionalize(|v: &[Value]| {
//!     let x = v[0].as_tensor().expect("a tensor");
//!     let mut row = x.select(0, 1)?; // a view of the input
//!     row.mul_scalar_(Scalar::Float(10.0))?; // written through the view
//!     Ok(vec![Value::Tensor(x.sum()?)])
//! });
//! let out = f(&[Value::Tensor(x.clone())])?;
//! assert_eq!(out[0].as_tensor().unwrap().to_vec::<f32>()?, vec![73.0]);
//! // The input was written back.
//! assert_eq!(x.to_vec::<f32>()?, vec![1.0, 2.0, 30.0, 40.0]);
//! # Ok::<(), opforge::Error>(())
//! ```
//!
//! # Effects
//!
//! An effectful call ([`has_effects`]) is made below the layer as
//! `higher_order::with_effects(token, op, *args)`, with the session's token
//! ([`new_token`] for the first); its first result is the token the next
//! effectful call gets.

mod calls;
mod effects;
mod tensor;
mod views;
mod wrapper;

pub use effects::{has_effects, new_token};
pub use tensor::is_functional;

use crate::classes::torchbind::call_torchbind_op;
use crate::dispatch::linked::{FallbackEntry, FALLBACKS};
use crate::dispatch::Operator;
use crate::error::{Error, Result};
use crate::fake::FAKE_KEY;
use crate::keys::{KeySet, LocalKeys, LocalKeysGuard};
use crate::tables::SchemaKind;
use crate::tensor::Tensor;
use crate::value::Value;
use calls::{call_below, operator};
use smallvec::SmallVec;
use std::cell::RefCell;
use views::ViewMeta;
use wrapper::FUNCTIONALIZE_KEY;

#[linkme::distributed_slice(FALLBACKS)]
static FUNCTIONALIZE_FALLBACK: FallbackEntry = FallbackEntry {
    key: "Functionalize",
    boxed: fallback,
    typed: None,
    leaves_alone: None,
    file: file!(),
    line: line!(),
};

/// One functionalized program running on this thread: its effect token.
struct Session {
    token: Option<Tensor>,
}

thread_local! {
    static SESSIONS: RefCell<Vec<Session>> = const { RefCell::new(Vec::new()) };
}

/// `f` functionalized: called with inputs, it runs `f` on functional
/// tensors standing for them and returns `f`'s results as plain tensors; an
/// input `f` wrote is written once at the end, by `copy_`. Factories called
/// inside `f` make functional tensors too (the layer's key is on for the
/// thread while `f` runs).
pub fn functionalize<F>(f: F) -> impl FnOnce(&[Value]) -> Result<Vec<Value>>
where
    F: FnOnce(&[Value]) -> Result<Vec<Value>>,
{
    move |inputs| run(f, inputs)
}

fn run(f: impl FnOnce(&[Value]) -> Result<Vec<Value>>, inputs: &[Value]) -> Result<Vec<Value>> {
    let wrapped = inputs
        .iter()
        .map(|v| v.try_map_tensors(&mut |t| Ok(tensor::wrap(t.clone()))))
        .collect::<Result<Vec<_>>>()?;
    let outs = {
        let _session = SessionGuard::enter();
        let outs = f(&wrapped)?;
        let outs = outs
            .iter()
            .map(|v| v.try_map_tensors(&mut tensor::synced_value))
            .collect::<Result<Vec<_>>>()?;
        for w in &wrapped {
            w.try_map_tensors(&mut |t| {
                tensor::sync(t)?;
                Ok(t.clone())
            })?;
        }
        outs
    };
    // Inputs written inside: their new values, copied in outside the layer
    // (PyTorch's `_propagate_functional_input_mutation`): an input whose
    // sizes changed (an in-place view) is first given its new sizes and
    // strides by `as_strided_`.
    let copy = operator("aten::copy_")?;
    let restride = operator("aten::as_strided_")?;
    for (input, w) in inputs.iter().zip(&wrapped) {
        let (mut originals, mut news) = (Vec::new(), Vec::new());
        input.for_each_tensor(&mut |t| originals.push(t.clone()));
        w.for_each_tensor(&mut |t| {
            let unwritten = tensor::unwritten_view(t);
            news.push((tensor::value(t), t.geometry(), unwritten))
        });
        for (original, (new, eager, unwritten)) in originals.iter().zip(news) {
            if new.is_same(original) {
                continue;
            }
            let sizes: Vec<i64> = eager.shape.iter().map(|&n| n as i64).collect();
            let strides: Vec<i64> = eager.strides.iter().map(|&s| s as i64).collect();
            if unwritten && partial_overlap(original, &eager) {
                return Err(Error::Runtime(PARTIAL_OVERLAP.into()));
            }
            if original.sizes() != sizes {
                restride.call_boxed(&[
                    Value::Tensor(original.clone()),
                    Value::IntList(sizes),
                    Value::IntList(strides),
                    Value::None,
                ])?;
            }
            let args = [
                Value::Tensor(original.clone()),
                Value::Tensor(new),
                Value::Bool(false),
            ];
            copy.call_boxed(&args)?;
        }
    }
    Ok(outs)
}

/// PyTorch's refusal to copy between tensors that partly share memory.
const PARTIAL_OVERLAP: &str = "unsupported operation: some elements of the input tensor and the written-to tensor refer to a single memory location. Please clone() the tensor before performing the operation.";

/// Would PyTorch's `copy_(input, new)` refuse, `new` being the input seen
/// with `eager`'s sizes, strides and offset (its value when only in-place
/// views touched it: PyTorch's functionalization reapplies them as views of
/// the input), the input given those sizes and strides first if its own
/// differ? `at::get_overlap_status` is `Partial`: both dense without overlap,
/// over ranges that meet without being the same elements in the same order.
fn partial_overlap(input: &Tensor, eager: &crate::tensor::Geometry) -> bool {
    let g = input.geometry();
    let (shape, strides) = match g.shape == eager.shape {
        true => (g.shape.to_vec(), g.strides.to_vec()),
        false => (eager.shape.to_vec(), eager.strides.to_vec()),
    };
    let numel: usize = shape.iter().product();
    if numel == 0
        || !dense_without_overlap(&shape, &strides)
        || !dense_without_overlap(&eager.shape, &eager.strides)
    {
        return false;
    }
    let (a, b) = (g.offset, eager.offset);
    if a == b {
        return strides != eager.strides.as_slice();
    }
    a < b + numel && b < a + numel
}

/// PyTorch's `is_non_overlapping_and_dense`: some order of the dimensions
/// (size 1 ones aside) steps through the elements one by one.
fn dense_without_overlap(shape: &[usize], strides: &[usize]) -> bool {
    let mut dims: Vec<(usize, usize)> = shape
        .iter()
        .zip(strides)
        .filter(|(&n, _)| n != 1)
        .map(|(&n, &s)| (s, n))
        .collect();
    dims.sort_unstable();
    let mut expected = 1usize;
    for (s, n) in dims {
        if s != expected {
            return false;
        }
        expected = expected.saturating_mul(n);
    }
    true
}

/// A session on the thread: its key included.
struct SessionGuard {
    _keys: LocalKeysGuard,
}

impl SessionGuard {
    fn enter() -> SessionGuard {
        SESSIONS.with(|s| s.borrow_mut().push(Session { token: None }));
        SessionGuard {
            _keys: LocalKeys::include(FUNCTIONALIZE_KEY),
        }
    }
}

impl Drop for SessionGuard {
    fn drop(&mut self) {
        SESSIONS.with(|s| s.borrow_mut().pop());
    }
}

/// An effectful call below the layer, threading the session's token (a
/// call outside any session gets a token of its own): the operator's
/// results, wrapped.
fn effectful(op: &Operator, args: &[Value]) -> Result<Vec<Value>> {
    let plain = unwrap_all(args)?;
    let token = SESSIONS.with(|s| s.borrow().last().and_then(|s| s.token.clone()));
    let token = match token {
        Some(t) => t,
        None => new_token()?,
    };
    let (next, outs) = effects::run(token, op, &plain)?;
    SESSIONS.with(|s| {
        if let Some(top) = s.borrow_mut().last_mut() {
            top.token = Some(next);
        }
    });
    wrap_results(outs)
}

/// `call_torchbind`'s kernel at this key: a method call is effectful
/// (PyTorch's `with_effects(token, call_torchbind, obj, method, *args)`).
#[crate::kernel(Functionalize, "higher_order::call_torchbind")]
fn functionalize_call_torchbind(values: &[Value]) -> Result<Vec<Value>> {
    effectful(call_torchbind_op(), values)
}

/// A value with each functional tensor replaced by its up-to-date value.
fn unwrap(v: &Value) -> Result<Value> {
    v.try_map_tensors(&mut tensor::synced_value)
}

fn unwrap_all(args: &[Value]) -> Result<Vec<Value>> {
    args.iter().map(unwrap).collect()
}

/// Results with each tensor wrapped as a new functional tensor.
fn wrap_results(outs: Vec<Value>) -> Result<Vec<Value>> {
    outs.iter()
        .map(|v| v.try_map_tensors(&mut |t| Ok(tensor::wrap(t.clone()))))
        .collect()
}

/// The `Functionalize` key's fallback: every call on functional tensors,
/// and every call inside a session.
fn fallback(op: &Operator, _keys: KeySet, args: &[Value]) -> Result<Vec<Value>> {
    let s = op.schema;
    if has_effects(s) {
        return effectful(op, args);
    }
    let writes: SmallVec<[usize; 2]> = s
        .args
        .iter()
        .enumerate()
        .filter(|(_, a)| a.alias.is_some_and(|x| x.is_write))
        .map(|(i, _)| i)
        .collect();
    if writes.is_empty() {
        // `_unsafe_view` is a view for functionalization (PyTorch's
        // `_unsafe_view_functionalize`): its result aliases its input,
        // though its schema does not say so (for autograd's sake).
        let unsafe_view = s.namespace == "aten" && s.name == "_unsafe_view";
        if unsafe_view || s.returns.iter().any(|r| r.alias.is_some()) {
            return view(op, args);
        }
        return functional(op, args);
    }
    if s.tags.contains(&"inplace_view") {
        if let Some(v) = view_of_inplace_view(op) {
            return inplace_view(op, v, args);
        }
    }
    mutation(op, args, &writes)
}

/// A call that neither writes nor aliases: on the values, results wrapped
/// (unless tensors came in and none was functional: then it is not the
/// layer's, and its results stay plain; a factory's are wrapped).
fn functional(op: &Operator, args: &[Value]) -> Result<Vec<Value>> {
    let (mut any_tensor, mut any_functional) = (false, false);
    let plain = args
        .iter()
        .map(|v| {
            v.try_map_tensors(&mut |t| {
                any_tensor = true;
                any_functional |= is_functional(t);
                tensor::synced_value(t)
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let outs = call_below(op, &plain)?;
    if any_tensor && !any_functional {
        return Ok(outs);
    }
    // A value laid out otherwise than its tensor eagerly is (a view's
    // `*_copy`) gives results laid out otherwise too: their eager geometry
    // is the operator's on meta copies of the inputs' wrappers.
    let mut relaid = false;
    for v in args {
        v.for_each_tensor(&mut |t| {
            relaid |= is_functional(t) && {
                let value = tensor::value(t);
                value.strides() != t.strides() || value.shape() != t.shape()
            }
        });
    }
    let eager = match relaid {
        true => on_meta(op, args).ok(),
        false => None,
    };
    let Some(eager) = eager else {
        return wrap_results(outs);
    };
    outs.iter()
        .zip(&eager)
        .map(|(v, e)| match (v, e) {
            (Value::Tensor(t), Value::Tensor(m)) if t.shape() == m.shape() => {
                Ok(Value::Tensor(tensor::wrap_like(t.clone(), m)))
            }
            _ => v.try_map_tensors(&mut |t| Ok(tensor::wrap(t.clone()))),
        })
        .collect()
}

/// A meta tensor with `t`'s (eager) geometry: for a functional tensor, its
/// wrapper's (PyTorch's `to_meta`); a Python number given for a tensor
/// stays as it is.
fn to_meta(t: &Tensor) -> Tensor {
    if t.is_wrapped_number() {
        return t.clone();
    }
    t.meta_like()
}

/// `op` on meta copies of its arguments' tensors ([`to_meta`]): what it
/// gives eagerly, as geometry, and the errors it raises eagerly, with
/// dispatch modes off (a graph does not record it).
fn on_meta(op: &Operator, args: &[Value]) -> Result<Vec<Value>> {
    let metas = args
        .iter()
        .map(|v| v.try_map_tensors(&mut |t| Ok(to_meta(t))))
        .collect::<Result<Vec<_>>>()?;
    crate::overrides::with_dispatch_modes_off(|| {
        let _below = LocalKeys::exclude(FUNCTIONALIZE_KEY | FAKE_KEY);
        op.call_boxed(&metas)
    })
}

/// The view `op` of the wrapper `base` with the rest of `args` (plain
/// values) as a step: an `as_strided` without an offset gets `base`'s
/// eager one (its replay reads the storage, not `base`).
fn view_meta(op: &Operator, base: &Tensor, rest: &[Value], out_index: usize) -> ViewMeta {
    let mut rest = rest.to_vec();
    let meta = ViewMeta::new(op.schema, &rest, out_index);
    if meta.is_storage_relative() {
        if let Some(v @ Value::None) = rest.get_mut(2) {
            *v = Value::Int(base.storage_offset() as i64);
        }
        return ViewMeta::new(op.schema, &rest, out_index);
    }
    meta
}

/// A view: its `*_copy` operator on the (not brought up to date) value,
/// each result a functional view remembering the step.
fn view(op: &Operator, args: &[Value]) -> Result<Vec<Value>> {
    let Some(Value::Tensor(base)) = args.first() else {
        return functional(op, args);
    };
    if !is_functional(base) {
        return call_below(op, args);
    }
    // The view on meta copies first: its eager geometry, and eager's
    // errors (`view` of strides it cannot view), which the `*_copy`
    // operator on the value (contiguous) would not raise.
    let eager = on_meta(op, args)?;
    let mut eager_tensors = Vec::new();
    for v in &eager {
        v.for_each_tensor(&mut |t| eager_tensors.push(t.clone()));
    }
    let plain: Vec<Value> = args
        .iter()
        .map(|v| v.try_map_tensors(&mut |t| Ok(tensor::value(t))))
        .collect::<Result<_>>()?;
    let rest = &plain[1..];
    let first = view_meta(op, base, rest, 0);
    let outs = match first.is_storage_relative() {
        true => vec![Value::Tensor(tensor::storage_view_value(base, &first)?)],
        false => call_below(views::copy_variant(op.schema)?, &plain)?,
    };
    let mut i = 0;
    let wrapped = outs
        .iter()
        .map(|v| {
            v.try_map_tensors(&mut |t| {
                let meta = view_meta(op, base, rest, i);
                let eager = eager_tensors.get(i).ok_or_else(|| {
                    Error::Runtime(
                        format!(
                            "functionalization: {} gave more results than on meta tensors",
                            op.qualified_name()
                        )
                        .into(),
                    )
                })?;
                i += 1;
                Ok(tensor::wrap_view(t.clone(), base, meta, eager))
            })
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(wrapped)
}

/// The view operator an in-place view is (`squeeze_.dim` → `squeeze.dim`,
/// `transpose_` → `transpose.int`), if it has one: torchgen's pairing, the
/// view of the same name without the `_` whose arguments are the same.
fn view_of_inplace_view(op: &Operator) -> Option<&'static Operator> {
    let s = op.schema;
    let base = s.base.strip_suffix('_')?;
    let name = match s.overload {
        "" => format!("{}::{base}", s.namespace),
        o => format!("{}::{base}.{o}", s.namespace),
    };
    if let Ok(found) = operator(&name) {
        return Some(found);
    }
    let same_args = |v: &crate::tables::OpSchema| {
        v.args.len() == s.args.len()
            && v.args
                .iter()
                .zip(s.args)
                .all(|(a, b)| a.name == b.name && a.ty == b.ty)
    };
    crate::OPS
        .iter()
        .find(|v| {
            v.namespace == s.namespace
                && v.base == base
                && v.returns.iter().any(|r| r.alias.is_some())
                && same_args(v)
        })
        .and_then(|v| crate::dispatch::dispatcher().find(&format!("{}::{}", v.namespace, v.name)))
}

/// An in-place view (`t_`): the step added to the tensor's views.
fn inplace_view(op: &Operator, view_op: &'static Operator, args: &[Value]) -> Result<Vec<Value>> {
    let Some(Value::Tensor(t)) = args.first() else {
        return call_below(op, args);
    };
    if !is_functional(t) {
        return call_below(op, args);
    }
    // The view on a meta copy: its eager geometry, and the errors the view
    // raises (PyTorch's functionalization replays the view operator, so
    // `t_` of a 3-D tensor fails with `t`'s message).
    let eager = on_meta(view_op, args)?;
    let Some(Value::Tensor(eager)) = eager.first() else {
        return Err(Error::Runtime(
            format!(
                "functionalization: {} returned no tensor on meta tensors",
                op.qualified_name()
            )
            .into(),
        ));
    };
    let rest: Vec<Value> = args[1..].iter().map(unwrap).collect::<Result<_>>()?;
    tensor::mutate_view_meta(t, view_meta(view_op, t, &rest, 0), eager)?;
    Ok(vec![Value::Tensor(t.clone())])
}

/// PyTorch's refusal to write a plain tensor from functional ones.
const MIXED_WRITE: &str = "mutating a non-functional tensor with a functional tensor is not allowed. Please ensure that all of your inputs are wrapped inside of a functionalize() call.";

/// A call that writes some of its arguments: its functional variant on the
/// values, whose results become the written tensors' values.
fn mutation(op: &Operator, args: &[Value], writes: &[usize]) -> Result<Vec<Value>> {
    let s = op.schema;
    let mut any_functional = false;
    for v in args {
        v.for_each_tensor(&mut |t| any_functional |= is_functional(t));
    }
    let mut all_written_functional = true;
    for &i in writes {
        args[i].for_each_tensor(&mut |t| all_written_functional &= is_functional(t));
    }
    if !all_written_functional {
        if any_functional {
            return Err(Error::Runtime(MIXED_WRITE.into()));
        }
        return call_below(op, args);
    }
    check_on_meta(op, args)?;
    let plain = unwrap_all(args)?;
    let fop = functional_variant(op)?;
    let fargs: Vec<Value> = plain
        .iter()
        .zip(s.args)
        .filter(|(_, a)| !a.is_out)
        .map(|(v, _)| v.clone())
        .collect();
    let outs = call_below(fop, &fargs)?;
    // Which results are the written arguments' new values: an in-place or
    // out= variant's are all of them; a mutable one's functional variant
    // returns its own results, then the written arguments'.
    let (kept, news) = match s.kind {
        SchemaKind::Mutable => outs.split_at(outs.len().saturating_sub(writes.len())),
        _ => (&outs[..0], &outs[..]),
    };
    let mut written: Vec<&Tensor> = Vec::new();
    for &i in writes {
        args[i].for_each_tensor(&mut |t| written.push(t));
    }
    let mut new_values: Vec<Tensor> = Vec::new();
    for v in news {
        v.for_each_tensor(&mut |t| new_values.push(t.clone()));
    }
    if new_values.len() != written.len() {
        return Err(Error::Runtime(
            format!(
                "functionalization: {} wrote {} tensors but its functional variant {} gave {}",
                op.qualified_name(),
                written.len(),
                fop.qualified_name(),
                new_values.len()
            )
            .into(),
        ));
    }
    for (t, new) in written.iter().zip(new_values) {
        tensor::replace(t, new);
        tensor::commit_update(t)?;
        tensor::sync(t)?;
    }
    if s.kind == SchemaKind::Mutable {
        return wrap_results(kept.to_vec());
    }
    Ok(written
        .into_iter()
        .map(|t| Value::Tensor(t.clone()))
        .collect())
}

/// Runs the writing call on meta copies of the tensors' wrappers (their
/// eager geometry, [`to_meta`]), for its errors (a write that would
/// broadcast `self`, a dtype it cannot take, a write into elements that
/// share memory): the functional variant would not raise them (PyTorch does
/// the same).
fn check_on_meta(op: &Operator, args: &[Value]) -> Result<()> {
    let mut any = false;
    for v in args {
        v.for_each_tensor(&mut |t| any |= !t.is_wrapped_number());
    }
    if !any {
        return Ok(());
    }
    on_meta(op, args).map(drop)
}

/// The functional variant of a writing operator: `add_.Tensor` →
/// `add.Tensor`; an `out=` or mutable operator's from its group.
fn functional_variant(op: &Operator) -> Result<&'static Operator> {
    let s = op.schema;
    let found = match s.kind {
        SchemaKind::Inplace => {
            let base = s.base.strip_suffix('_').unwrap_or(s.base);
            let name = match s.overload {
                "" => format!("{}::{base}", s.namespace),
                o => format!("{}::{base}.{o}", s.namespace),
            };
            operator(&name).ok()
        }
        _ => crate::OpId::from_name(s.name)
            .filter(|_| s.namespace == "aten")
            .and_then(|id| {
                crate::GROUPS
                    .iter()
                    .find(|g| g.out == Some(id) || g.mutable == Some(id))
                    .and_then(|g| g.functional)
            })
            .map(|id| crate::dispatch::dispatcher().op(id)),
    };
    found.ok_or_else(|| {
        Error::Runtime(
            format!(
                "functionalization: {} writes its arguments and has no functional variant",
                op.qualified_name()
            )
            .into(),
        )
    })
}
