//! Calls the layer makes below itself: an operator by name, run with the
//! `Functionalize` key excluded (PyTorch's `AutoDispatchSkipFunctionalize`),
//! so that its tensors are plain values and its results are not wrapped.

use super::wrapper::FUNCTIONALIZE_KEY;
use crate::dispatch::{dispatcher, Operator};
use crate::error::{Error, Result};
use crate::keys::LocalKeys;
use crate::tensor::Tensor;
use crate::value::typed::one_value;
use crate::value::Value;

/// The operator `name` (`aten::select_scatter`, `select_copy.int`), or an
/// error saying that functionalization needs it.
pub(super) fn operator(name: &str) -> Result<&'static Operator> {
    dispatcher().find(name).ok_or_else(|| {
        Error::Runtime(
            format!("functionalization needs the operator {name}, which is not defined").into(),
        )
    })
}

/// `op(args)` below the layer: every result.
pub(super) fn call_below(op: &Operator, args: &[Value]) -> Result<Vec<Value>> {
    // What the kernel does inside (a fake kernel's method calls on fake
    // objects, `call_torchbind` calls) runs below the layer too: it is not
    // the program's, and not functionalized again.
    let _below = LocalKeys::exclude(FUNCTIONALIZE_KEY);
    op.call_boxed(args)
}

/// `name(args)` below the layer, for an operator with one tensor result.
pub(super) fn tensor_below(name: &str, args: &[Value]) -> Result<Tensor> {
    let op = operator(name)?;
    match one_value(call_below(op, args)?) {
        Value::Tensor(t) => Ok(t),
        other => Err(Error::Runtime(
            format!(
                "functionalization: {name} returned {} instead of a tensor",
                other.type_name()
            )
            .into(),
        )),
    }
}
