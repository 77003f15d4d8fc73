//! Effect tokens (PyTorch's `torch._higher_order_ops.effects`): calls whose
//! order matters though no tensor says so — operators taking a custom-class
//! object, and method calls on objects (`call_torchbind`) — are made as
//! `with_effects(token, op, *args)`, which returns a new token before the
//! call's results. Threading the token from call to call keeps them in
//! order (and alive) in a captured graph.
//!
//! A layer above (graph capture) watches these calls through
//! [`observe_effects`], as it watches method calls through
//! `crate::classes::intercept_methods`.

use crate::dispatch::Operator;
use crate::error::{Error, Result};
use crate::hooks;
use crate::tables::{OpSchema, Ty};
use crate::tensor::Tensor;
use crate::value::ScriptObject;
use crate::value::Value;
use std::cell::RefCell;
use std::rc::Rc;

/// Custom classes whose objects are parameters, not state: operators taking
/// them have no effect (PyTorch's skip list).
const PURE_CLASSES: &[&str] = &[
    "quantized.Conv2dPackedParamsBase",
    "quantized.Conv3dPackedParamsBase",
    "quantized.EmbeddingPackedParamsBase",
    "quantized.LinearPackedParamsBase",
    "xnnpack.Conv2dOpContext",
    "xnnpack.LinearOpContext",
    "xnnpack.TransposeConv2dOpContext",
];

/// Does a call of this operator have the ordered effect (PyTorch's
/// `_get_effect`: an argument of a custom class that is not on the skip
/// list)?
pub fn has_effects(schema: &OpSchema) -> bool {
    schema.args.iter().any(|a| match a.ty {
        Ty::CustomClass(c) => !PURE_CLASSES.contains(&c),
        _ => false,
    })
}

/// What an effectful call runs.
#[derive(Clone, Copy, Debug)]
pub enum EffectTarget<'a> {
    /// An operator overload.
    Op(&'a Operator),
    /// A method of an object (`call_torchbind(obj, method, …)`).
    Method {
        /// The object.
        obj: &'a ScriptObject,
        /// The method's name.
        name: &'a str,
    },
}

/// One `with_effects(token, target, *args, **kwargs)` call, as an observer
/// sees it.
#[derive(Clone, Copy, Debug)]
pub struct EffectCall<'a> {
    /// The token going in.
    pub token: &'a Tensor,
    /// What runs.
    pub target: EffectTarget<'a>,
    /// Positional arguments (plain values: functional tensors unwrapped).
    pub args: &'a [Value],
    /// Keyword arguments.
    pub kwargs: &'a [(String, Value)],
}

/// Watches effectful calls: given the call and the call itself (to make, or
/// not), its results — the new token first.
pub type EffectObserver =
    Rc<dyn Fn(&EffectCall<'_>, &dyn Fn() -> Result<Vec<Value>>) -> Result<Vec<Value>>>;

thread_local! {
    static OBSERVER: RefCell<Option<EffectObserver>> = const { RefCell::new(None) };
}

/// Routes this thread's effectful calls through `f` until the guard is
/// dropped (the previous observer comes back then; `crate::hooks`).
pub fn observe_effects(f: EffectObserver) -> ObserveGuard {
    hooks::install(&OBSERVER, f)
}

/// Restores the previous observer when dropped ([`observe_effects`]).
pub type ObserveGuard = hooks::HookGuard<EffectObserver>;

/// A new token: an empty float tensor (`torch.tensor([])`).
pub fn new_token() -> Result<Tensor> {
    Tensor::from_vec(Vec::<f32>::new(), &[0])
}

/// `with_effects(token, target, *args, **kwargs)` run eagerly: the target
/// runs, and the results are a new token, then the target's: an operator's
/// results in order, a method's one value.
///
/// Refused as PyTorch refuses them: an operator with alias annotations
/// (`Ops with aliasing is not supported`), an operator without the effect.
pub fn with_effects(
    token: &Tensor,
    target: EffectTarget<'_>,
    args: &[Value],
    kwargs: &[(String, Value)],
) -> Result<Vec<Value>> {
    let _ = token;
    let out = match target {
        EffectTarget::Op(op) => {
            check_effectful(op)?;
            let bound = if kwargs.is_empty() {
                args.to_vec()
            } else {
                crate::bind::bind(op.schema, args.to_vec(), kwargs.to_vec())?
            };
            op.call_boxed(&bound)?
        }
        EffectTarget::Method { obj, name } => vec![obj.call_method_direct(name, args, kwargs)?],
    };
    let mut results = Vec::with_capacity(out.len() + 1);
    results.push(Value::Tensor(new_token()?));
    results.extend(out);
    Ok(results)
}

/// PyTorch's checks on `with_effects`' operator.
pub(super) fn check_effectful(op: &Operator) -> Result<()> {
    let s = op.schema;
    let aliasing =
        s.args.iter().any(|a| a.alias.is_some()) || s.returns.iter().any(|r| r.alias.is_some());
    if aliasing {
        return Err(Error::Assertion(
            "Ops with aliasing is not supported".into(),
        ));
    }
    if !has_effects(s) {
        return Err(Error::Assertion(
            format!(
                "{} has no effect: with_effects takes operators with custom-class arguments",
                op.qualified_name()
            )
            .into(),
        ));
    }
    Ok(())
}

/// Runs an effectful call through the thread's observer, if any: the new
/// token and the call's results, their count checked against what the
/// target returns (PyTorch's `handle_effects` messages).
pub(super) fn run(
    token: &Tensor,
    target: EffectTarget<'_>,
    args: &[Value],
    kwargs: &[(String, Value)],
) -> Result<(Tensor, Vec<Value>)> {
    if let EffectTarget::Op(op) = target {
        check_effectful(op)?;
    }
    let call = EffectCall {
        token,
        target,
        args,
        kwargs,
    };
    let make = || with_effects(token, target, args, kwargs);
    let results = match hooks::with_hook(&OBSERVER, |f| f(&call, &make)) {
        Some(r) => r?,
        None => make()?,
    };
    let mut results = results.into_iter();
    let new_token = match results.next() {
        Some(Value::Tensor(t)) => t,
        _ => {
            return Err(Error::Assertion(
                "with_effects must return a new token first".into(),
            ))
        }
    };
    let outs: Vec<Value> = results.collect();
    let want = match target {
        EffectTarget::Op(op) => op.schema.returns.len(),
        EffectTarget::Method { .. } => 1,
    };
    if outs.len() != want {
        return Err(Error::Assertion(
            match want {
                0 => format!("expected no outputs but got {}", outs.len()),
                1 => format!("expected 1 output but got {}", outs.len()),
                n => format!("expected {n} outputs but got {}", outs.len()),
            }
            .into(),
        ));
    }
    Ok((new_token, outs))
}
