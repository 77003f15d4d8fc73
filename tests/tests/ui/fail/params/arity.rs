// A kernel takes every argument of the schema, and nothing else.
use opforge::{kernel, Result, Tensor};

#[kernel(Python, "add.Tensor")]
fn missing(self_: &Tensor) -> Result<Tensor> {
    Ok(self_.clone())
}

#[kernel(Python, "neg")]
fn extra(self_: &Tensor, scale: f64) -> Result<Tensor> {
    let _ = scale;
    Ok(self_.clone())
}

fn main() {}
