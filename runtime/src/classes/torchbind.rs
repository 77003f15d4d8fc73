//! PyTorch's higher-order operators for custom classes
//! (`torch/_higher_order_ops/torchbind.py` and `effects.py`), as operators
//! of the runtime's `native_functions.yaml`:
//!
//! - `higher_order::call_torchbind(Any obj, str method, ...) -> Any`: a
//!   method call on an object. [`ScriptObject::call_method`] is a call of
//!   it, so a method call travels the road every call travels: dispatch
//!   modes and graph capture see it at the `Python` key, fake tensors run
//!   it at `Fake`, functionalization makes it an effectful call at
//!   `Functionalize`, and the backend kernel (here) runs the method.
//! - `higher_order::with_effects(Tensor token, Any op, ...) -> (Tensor, ...)`:
//!   an effectful call (an operator taking an object, or `call_torchbind`)
//!   made with an effect token, which it returns renewed before the call's
//!   results. Functionalization threads the token from call to call, so a
//!   captured graph keeps the calls in order.
//!
//! Their schemas have `Any` and `...`, so their kernels take the call's
//! values boxed (`dispatch::adapter::BoxedKernel`).

use super::{class_of, finish, CallError};
use crate::dispatch::{dispatcher, Operator};
use crate::error::{Error, Result};
use crate::kernel;
use crate::keys::KeySet;
use crate::tables::{OpId, OpSchema, Ty};
use crate::tensor::Tensor;
use crate::value::typed::one_value;
use crate::value::{is_higher_order, ScriptObject, Value};

/// The operator `higher_order::call_torchbind`.
pub fn call_torchbind_op() -> &'static Operator {
    crate::at::operator(OpId::higher_order_call_torchbind)
}

/// The operator `higher_order::with_effects`.
pub fn with_effects_op() -> &'static Operator {
    crate::at::operator(OpId::higher_order_with_effects)
}

/// Custom classes whose objects are parameters, not state: operators taking
/// them have no effect (PyTorch's skip list in `_get_effect`).
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
/// `_get_effect`)? `call_torchbind` has (a method may change its object),
/// and so has an operator with an argument of a custom class that is not on
/// the skip list.
pub fn has_effects(schema: &OpSchema) -> bool {
    (is_higher_order(schema) && schema.name == "call_torchbind")
        || schema.args.iter().any(|a| match a.ty {
            Ty::CustomClass(c) => !PURE_CLASSES.contains(&c),
            _ => false,
        })
}

/// A new effect token: an empty float tensor (`torch.tensor([])`).
pub fn new_token() -> Result<Tensor> {
    Tensor::from_vec(Vec::<f32>::new(), &[0])
}

/// `obj.name(*args)` as a call of `call_torchbind(obj, name, *args)`
/// through the dispatcher: one value, the method's.
pub(super) fn call_method(obj: &ScriptObject, name: &str, args: &[Value]) -> Result<Value> {
    let op = call_torchbind_op();
    let keys = KeySet::of_values(args);
    // The call would reach this file's kernel: it runs here, without its
    // values boxed first (the dispatcher's answer, not a guess: the kernel
    // the call's keys select is this one, by identity). The static is the
    // link-time entry `#[kernel]` emits beside `call_torchbind` below
    // (`__OPFORGE_<KEY>_KERNEL_<function>`); a dispatch mode, fake tensors,
    // functionalization or a replaced backend kernel select another.
    if op.runs_entry(
        keys,
        &__OPFORGE_COMPOSITEEXPLICITAUTOGRAD_KERNEL_call_torchbind,
    ) {
        return obj.run_method(name, args);
    }
    let mut values = Vec::with_capacity(args.len() + 2);
    values.push(Value::Object(obj.clone()));
    values.push(Value::Str(name.to_string()));
    values.extend_from_slice(args);
    op.call_boxed(&values).map(one_value)
}

/// `call_torchbind`'s arguments: the object, the method's name, the
/// method's arguments.
fn torchbind_args(values: &[Value]) -> Result<(&ScriptObject, &str, &[Value])> {
    match values {
        [Value::Object(obj), Value::Str(method), args @ ..] => Ok((obj, method, args)),
        _ => Err(Error::Runtime(
            "call_torchbind takes an object, a method name and the method's arguments".into(),
        )),
    }
}

/// `call_torchbind`'s backend kernel: the method runs (a fake object's,
/// the fake class's).
#[kernel(CompositeExplicitAutograd)]
pub(crate) fn call_torchbind(values: &[Value]) -> Result<Vec<Value>> {
    let (obj, method, args) = torchbind_args(values)?;
    Ok(vec![obj.run_method(method, args)?])
}

/// `with_effects(token, op, *args)` run: the operator runs on `args`, and
/// the results are a new token, then the operator's (PyTorch's
/// `with_effects_dense`). Refused as PyTorch refuses them: an operator with
/// alias annotations, an operator without the effect.
#[kernel(CompositeExplicitAutograd)]
pub(crate) fn with_effects(values: &[Value]) -> Result<Vec<Value>> {
    let [Value::Tensor(_token), Value::Op(schema), args @ ..] = values else {
        return Err(Error::Runtime(
            "with_effects takes a token, an operator and the operator's arguments".into(),
        ));
    };
    let op = operator_of(schema)?;
    check_effectful(op)?;
    let out = op.call_boxed(args)?;
    let mut results = Vec::with_capacity(out.len() + 1);
    results.push(Value::Tensor(new_token()?));
    results.extend(out);
    Ok(results)
}

/// The dispatcher's operator of an overload's schema.
pub fn operator_of(schema: &OpSchema) -> Result<&'static Operator> {
    let name = format!("{}::{}", schema.namespace, schema.name);
    dispatcher()
        .find(&name)
        .ok_or_else(|| Error::Runtime(format!("no operator {name}").into()))
}

/// PyTorch's checks on `with_effects`' operator.
pub fn check_effectful(op: &Operator) -> Result<()> {
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

impl ScriptObject {
    /// Runs the method `name` here, on positional arguments after the
    /// receiver: a fake object's is the fake class's method; a call whose
    /// count or values do not fit the method's schema is bound with
    /// Python's conversions and PyTorch's messages. What `call_torchbind`'s
    /// kernels run.
    pub(crate) fn run_method(&self, name: &str, args: &[Value]) -> Result<Value> {
        if let Some(r) = self.call_fake_method(name, args, &[]) {
            return r;
        }
        let class = class_of(self)?;
        let m = class.method(name).ok_or_else(|| class.no_attribute(name))?;
        if args.len() == m.arity {
            match (m.call)(self, args) {
                Ok(v) => return Ok(v),
                Err(CallError::Failed(e)) => return Err(e),
                Err(CallError::Arg) => {}
            }
        }
        // A wrong count or a value that does not convert: PyTorch's message,
        // from the Python-level binding.
        let bound = self.bind_method(name, args, &[])?;
        finish((m.call)(self, &bound))
    }
}
