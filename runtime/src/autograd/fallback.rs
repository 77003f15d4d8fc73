//! The `Autograd` key's fallback: what a call on tensors that require grad
//! runs when its operator has no Autograd kernel of its own (no entry in
//! `derivatives.yaml`, or an operator of another crate), as PyTorch's
//! autograd fallbacks do. It runs the operator below autograd, then:
//!
//! - an `aten` operator (PyTorch's `autogradNotImplementedFallback`): its
//!   floating-point outputs, and the tensors it writes, get a
//!   `torch::autograd::NotImplemented` node whose backward fails with
//!   "derivative for aten::NAME is not implemented"; an in-place write is
//!   checked and rebased as a generated kernel's is. The operators torchgen
//!   lists as never requiring a derivative (`ones_like`, `argmax`, …) and
//!   those autograd handles by hand (`detach`, `detach_`) record nothing.
//! - an operator of another namespace (PyTorch's default autograd fallback
//!   mode, "warn"): its outputs get a `torch::autograd::WarnNotImplemented`
//!   node whose backward warns ([`crate::warnings`]) and sends no gradient
//!   on; a tensor it writes keeps its history and gets a hook that warns when
//!   a gradient reaches it.
//!
//! An out= overload that has no Autograd kernel refuses tensors that require
//! grad, as the generated out= kernels do ([`super::check_out`]). An operator
//! that does not want any of this registers a fallthrough kernel at
//! `Autograd` (then the call goes straight to the backend, recording nothing).

use super::methods::TensorAutograd;
use super::mode::{below_autograd, is_grad_enabled};
use super::node::{Backward, BackwardCtx, Grads};
use super::record::{check_out, Recording, LEAF_INPLACE};
use crate::dispatch::linked::{FallbackEntry, FALLBACKS};
use crate::dispatch::Operator;
use crate::error::{Error, Result};
use crate::keys::{DispatchKey, KeySet};
use crate::tables::{OpSchema, SchemaKind};
use crate::tensor::Tensor;
use crate::value::Value;

#[linkme::distributed_slice(FALLBACKS)]
static AUTOGRAD_FALLBACK: FallbackEntry = FallbackEntry {
    key: "Autograd",
    boxed: autograd_fallback,
    typed: None,
    leaves_alone: Some(records_nothing),
    file: file!(),
    line: line!(),
};

/// `aten` operators whose results never require grad (torchgen's
/// `DONT_REQUIRE_DERIVATIVE`, by base name), and those PyTorch's autograd
/// handles by hand without a node (`detach`, `detach_`).
const RECORDS_NOTHING: &[&str] = &[
    "empty_like",
    "ones_like",
    "full_like",
    "zeros_like",
    "rand_like",
    "randn_like",
    "new_empty",
    "new_empty_strided",
    "new_full",
    "new_zeros",
    "new_ones",
    "__and__",
    "__iand__",
    "__ilshift__",
    "__ior__",
    "__irshift__",
    "__ixor__",
    "__lshift__",
    "__or__",
    "__rshift__",
    "__xor__",
    "_sobol_engine_draw",
    "_sobol_engine_ff",
    "_sobol_engine_scramble_",
    "_sobol_engine_initialize_state_",
    "_coalesced_",
    "quantize_per_tensor",
    "quantize_per_channel",
    "argmax",
    "argmin",
    "argsort",
    "searchsorted",
    "bucketize",
    "isnan",
    "isposinf",
    "isneginf",
    "isinf",
    "signbit",
    "isin",
    "allclose",
    "record_stream",
    "logical_and",
    "logical_xor",
    "logical_not",
    "logical_or",
    "detach",
    "detach_",
];

/// The node name of an `aten` operator's missing derivative.
pub const NOT_IMPLEMENTED: &str = "torch::autograd::NotImplemented";
/// The node name of another namespace's missing Autograd kernel.
pub const WARN_NOT_IMPLEMENTED: &str = "torch::autograd::WarnNotImplemented";

/// The warning of a gradient reaching an operator of another namespace that
/// has no Autograd kernel (PyTorch's words, then the Rust calls its advice
/// means; `name` is `ns::name`).
pub fn missing_autograd_warning(name: &str) -> String {
    format!(
        "{name}: an autograd kernel was not registered to the Autograd key(s) but we are trying to backprop through it. This may lead to silently incorrect behavior. This behavior is deprecated and will be removed in a future version of PyTorch. If your operator is differentiable, please ensure you have registered an autograd kernel to the correct Autograd key (e.g. DispatchKey::Autograd, DispatchKey::CompositeImplicitAutograd). If your operator is not differentiable, or to squash this warning and use the previous behavior, please register torch::CppFunction::makeFallthrough() to DispatchKey::Autograd. (In Rust: an Autograd kernel is `#[kernel(Autograd, \"{name}\")]`; the fallthrough is `op.register(DispatchKey::Autograd, Kernel::fallthrough(..))`.)"
    )
}

/// The tensors among boxed values (lists' elements included), in order.
fn tensors_of(values: &[Value]) -> Vec<&Tensor> {
    let mut out = Vec::new();
    for v in values {
        match v {
            Value::Tensor(t) => out.push(t),
            Value::TensorList(ts) => out.extend(ts),
            Value::OptTensorList(ts) => out.extend(ts.iter().flatten()),
            _ => {}
        }
    }
    out
}

/// The operators the fallback leaves alone: their calls skip the `Autograd`
/// key altogether (as PyTorch's kernels for them only redispatch), so they
/// cost no boxing. So do the higher-order operators of custom classes
/// (`call_torchbind`, `with_effects`: a method call, an effectful call):
/// what runs inside them records as it would without them.
fn records_nothing(s: &OpSchema) -> bool {
    // torchgen matches both the name as written (`__iand__`, `_coalesced_`)
    // and the base name without an in-place `_` (`logical_and_` is
    // `logical_and`'s): gen_variable_type.py's `base_name`.
    let inplace_base = match s.kind {
        SchemaKind::Inplace if !s.base.starts_with("__") => s.base.strip_suffix('_'),
        _ => None,
    };
    (s.namespace == "aten"
        && (RECORDS_NOTHING.contains(&s.base)
            || inplace_base.is_some_and(|b| RECORDS_NOTHING.contains(&b))))
        || crate::value::is_higher_order(s)
}

fn autograd_fallback(op: &Operator, keys: KeySet, args: &[Value]) -> Result<Vec<Value>> {
    let s = op.schema;
    let below = |args: &[Value]| {
        let _below = below_autograd();
        op.call_with_keys(keys.below(DispatchKey::Autograd), args)
    };
    let inputs = tensors_of(args);
    let aten = s.namespace == "aten";
    if !is_grad_enabled() || !inputs.iter().any(|t| t.requires_grad()) || records_nothing(s) {
        return below(args);
    }
    if matches!(s.kind, SchemaKind::Out | SchemaKind::Scratch) {
        check_out(s.base, &inputs)?;
        return below(args);
    }
    // The tensors the operator writes (`Tensor(a!)` arguments).
    let written: Vec<&Tensor> = s
        .args
        .iter()
        .zip(args)
        .filter(|(a, _)| a.alias.is_some_and(|al| al.is_write))
        .flat_map(|(_, v)| tensors_of(std::slice::from_ref(v)))
        .collect();
    let name = format!("{}::{}", s.namespace, s.base);
    if aten {
        not_implemented(name, &inputs, &written, || below(args))
    } else {
        warn_not_implemented(name, &inputs, &written, || below(args))
    }
}

/// The outputs a node gets: the returned tensors, then the written ones not
/// returned (an operator writing its argument may return nothing).
fn node_outputs<'a>(returned: &'a [Value], written: &[&'a Tensor]) -> Vec<&'a Tensor> {
    let mut outs = tensors_of(returned);
    for w in written {
        if !outs.iter().any(|o| o.is_same(w)) {
            outs.push(w);
        }
    }
    outs
}

fn not_implemented(
    name: String,
    inputs: &[&Tensor],
    written: &[&Tensor],
    run: impl FnOnce() -> Result<Vec<Value>>,
) -> Result<Vec<Value>> {
    let rec = match written {
        [] => Recording::begin(inputs),
        [w] => {
            let others: Vec<&Tensor> = inputs.iter().copied().filter(|t| !t.is_same(w)).collect();
            Recording::begin_inplace(w, &others)?
        }
        several => {
            for w in several {
                if w.requires_grad() && w.is_leaf() {
                    return Err(Error::Runtime(LEAF_INPLACE.into()));
                }
                if w.view_of().is_some() {
                    return Err(Error::Runtime(
                        format!("{name}: autograd cannot record an operator without a derivative that writes several tensors when one of them is a view").into(),
                    ));
                }
            }
            Recording::begin(inputs)
        }
    };
    let out = run()?;
    if let Some(rec) = rec {
        let outs = node_outputs(&out, written);
        rec.finish(NOT_IMPLEMENTED, outs.as_slice(), |_| {
            Ok(NotImplemented {
                message: format!("derivative for {name} is not implemented"),
            })
        })?;
    }
    Ok(out)
}

fn warn_not_implemented(
    name: String,
    inputs: &[&Tensor],
    written: &[&Tensor],
    run: impl FnOnce() -> Result<Vec<Value>>,
) -> Result<Vec<Value>> {
    let rec = Recording::begin(inputs);
    let edges = inputs.len();
    let out = run()?;
    let Some(rec) = rec else { return Ok(out) };
    let fresh: Vec<&Tensor> = tensors_of(&out)
        .into_iter()
        .filter(|t| !written.iter().any(|w| w.is_same(t)))
        .collect();
    if !fresh.is_empty() {
        let warning = missing_autograd_warning(&name);
        rec.finish(WARN_NOT_IMPLEMENTED, fresh.as_slice(), |_| {
            Ok(WarnNotImplemented { warning, edges })
        })?;
    }
    for w in written.iter().filter(|w| w.requires_grad()) {
        let warning = missing_autograd_warning(&name);
        // Kept for the tensor's life, as PyTorch's `_autograd_not_implemented` hook is.
        let _kept = w.register_hook(move |_| {
            crate::warnings::warn(&warning);
            Ok(None)
        })?;
    }
    Ok(out)
}

/// The backward of an `aten` operator without a derivative: fails.
struct NotImplemented {
    message: String,
}

impl Backward for NotImplemented {
    fn apply(&mut self, _: Grads, _: &BackwardCtx) -> Result<Grads> {
        Err(Error::Runtime(self.message.clone().into()))
    }

    fn release(&mut self) {}

    fn owns_tensors(&self) -> bool {
        false
    }
}

/// The backward of another namespace's operator without an Autograd kernel:
/// warns, and sends no gradient on.
struct WarnNotImplemented {
    warning: String,
    edges: usize,
}

impl Backward for WarnNotImplemented {
    fn apply(&mut self, _: Grads, _: &BackwardCtx) -> Result<Grads> {
        crate::warnings::warn(&self.warning);
        Ok(smallvec::smallvec![None; self.edges])
    }

    fn release(&mut self) {}

    fn owns_tensors(&self) -> bool {
        false
    }
}
