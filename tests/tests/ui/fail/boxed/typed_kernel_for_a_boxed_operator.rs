// An operator whose schema has `...` or `Any` (`higher_order::call_torchbind`)
// takes its values boxed: its kernel is `fn(values: &[Value]) -> Result<Vec<Value>>`.
use opforge::{kernel, Result, Tensor, Value};

// Typed parameters.
#[kernel(Python, "higher_order::call_torchbind")]
fn typed(obj: &Tensor, method: &str) -> Result<Tensor> {
    let _ = method;
    Ok(obj.clone())
}

// The values, but one result.
#[kernel(Python, "higher_order::call_torchbind")]
fn one_result(values: &[Value]) -> Result<Value> {
    Ok(values[0].clone())
}

// No parameter.
#[kernel(Python, "higher_order::with_effects")]
fn nothing() -> Result<Vec<Value>> {
    Ok(Vec::new())
}

fn main() {}
