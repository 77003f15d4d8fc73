//! Where each signature parameter's value goes in the schema
//! ([`ParamTarget`]): the one mapping rule of the slow binder
//! (`schema_bind`) and of the fast path's plans (`fast`).

use super::signature::{FunctionParameter, FunctionSignature};
use crate::tables::{BaseType, OpSchema, Ty};
use crate::value::Value;

/// Where a signature parameter's value goes in the schema: the one mapping
/// rule of [`bind_parsed`] and of the fast path's plan ([`fast::BindPlan`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ParamTarget {
    /// Nowhere (`requires_grad`, or a parameter the schema has no argument for).
    Skip,
    /// The schema's out arguments (`out=`, folded into them).
    Out,
    /// The schema argument at this index (same name, or `input` → `self`);
    /// with `factory_device`, an absent value is the global default device.
    Arg { index: usize, factory_device: bool },
}

impl ParamTarget {
    /// The target of parameter `p` of `sig` in `schema` (`method`: the binding
    /// is a `Tensor` method).
    pub(crate) fn of(
        sig: &FunctionSignature,
        p: &FunctionParameter,
        schema: &OpSchema,
        method: bool,
    ) -> ParamTarget {
        if p.name == "requires_grad" {
            return ParamTarget::Skip;
        }
        if p.name == "out" {
            return ParamTarget::Out;
        }
        let index_of = |name: &str| schema.args.iter().position(|a| a.name == name);
        let target =
            index_of(&p.name).or_else(|| (p.name == "input").then(|| index_of("self")).flatten());
        match target {
            None => ParamTarget::Skip,
            Some(index) => ParamTarget::Arg {
                index,
                // Factories take the global default device when none is given.
                factory_device: p.name == "device" && is_factory(sig) && !method,
            },
        }
    }
}

/// A factory signature: PyTorch appended the TensorOptions parameters (the
/// `requires_grad` one marks them) and it is not a `*_like` / `new_*` function.
pub(super) fn is_factory(sig: &FunctionSignature) -> bool {
    sig.params.iter().any(|p| p.name == "requires_grad")
        && !sig.name.ends_with("_like")
        && !sig.name.starts_with("new_")
}

/// A Python number given for a `Tensor` parameter (a wrapped number): it stays the
/// Python scalar (normalization.md §3).
pub(super) fn is_wrapped_number(ty: &Ty, v: &Value) -> bool {
    let base = match ty {
        Ty::Optional(t) => **t,
        t => *t,
    };
    base == Ty::Base(BaseType::Tensor)
        && matches!(v, Value::Int(_) | Value::Float(_) | Value::Bool(_))
}
