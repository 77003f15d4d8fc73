// A kernel of an operator taking its values boxed (`...` or `Any` in its
// schema), registered from another crate at a key nobody else has.
use opforge::{kernel, Result, Value};

#[kernel(Python, "higher_order::call_torchbind")]
fn passes_through(values: &[Value]) -> Result<Vec<Value>> {
    Ok(values.to_vec())
}

fn main() {}
