// The attribute names an operator or a key that does not exist, or is malformed.
use opforge::{kernel, Result, Scalar, Tensor};

#[kernel(CPU, "add.Tensr")]
fn unknown_operator(self_: &Tensor, other: &Tensor, alpha: Scalar) -> Result<Tensor> {
    let _ = (other, alpha);
    Ok(self_.clone())
}

#[kernel(Autograde, "neg")]
fn unknown_key(self_: &Tensor) -> Result<Tensor> {
    Ok(self_.clone())
}

#[kernel("neg")]
fn no_key(self_: &Tensor) -> Result<Tensor> {
    Ok(self_.clone())
}

fn main() {}
