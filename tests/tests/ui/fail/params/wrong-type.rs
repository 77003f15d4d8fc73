// A parameter of the wrong type: one error, at the type, naming the schema type.
use opforge::{kernel, Result, Scalar, Tensor};

#[kernel(Python, "add.Tensor")]
fn add(self_: &Tensor, other: i64, alpha: Scalar) -> Result<Tensor> {
    let _ = (other, alpha);
    Ok(self_.clone())
}

fn main() {}
