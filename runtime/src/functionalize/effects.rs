//! Effect tokens (PyTorch's `torch._higher_order_ops.effects`): calls whose
//! order matters though no tensor says so — operators taking a custom-class
//! object, and method calls on objects (`call_torchbind`) — are made as
//! `with_effects(token, op, *args)` (the operator
//! `higher_order::with_effects`, `crate::classes::torchbind`), which returns
//! a new token before the call's results. Threading the token from call to
//! call keeps them in order (and alive) in a captured graph.

use super::calls::call_below;
use crate::classes::torchbind::{check_effectful, with_effects_op};
use crate::dispatch::Operator;
use crate::error::{Error, Result};
use crate::tensor::Tensor;
use crate::value::Value;

pub use crate::classes::torchbind::{has_effects, new_token};

/// `with_effects(token, op, *args)` below the layer: the new token and the
/// operator's results, their count checked against its schema (PyTorch's
/// `handle_effects` messages: a layer below, a dispatch mode, may answer
/// for the call).
pub(super) fn run(token: Tensor, op: &Operator, args: &[Value]) -> Result<(Tensor, Vec<Value>)> {
    check_effectful(op)?;
    let mut values = Vec::with_capacity(args.len() + 2);
    values.push(Value::Tensor(token));
    values.push(Value::Op(op.schema));
    values.extend_from_slice(args);
    let mut results = call_below(with_effects_op(), &values)?.into_iter();
    let new_token = match results.next() {
        Some(Value::Tensor(t)) => t,
        _ => {
            return Err(Error::Assertion(
                "with_effects must return a new token first".into(),
            ))
        }
    };
    let outs: Vec<Value> = results.collect();
    let want = op.schema.returns.len();
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
