// `#[op]`: a return type other than the schema's is one error, at the return type.
use opforge::{op, Result, Tensor};

#[op("uifail::pair(Tensor x) -> (Tensor, Tensor)")]
fn pair(x: &Tensor) -> Result<Tensor> {
    Ok(x.clone())
}

fn main() {}
