// A return of the wrong type: one error, at the return type, naming the schema's.
use opforge::{kernel, Result, Tensor};

#[kernel(Python, "max.dim")]
fn max_dim(self_: &Tensor, dim: i64, keepdim: bool) -> Result<Tensor> {
    let _ = (dim, keepdim);
    Ok(self_.clone())
}

fn main() {}
