// `#[op]`: a parameter of the wrong type is one error, at the type, naming the
// schema type (the same check as `#[kernel]`).
use opforge::{op, Result, Tensor};

#[op("uifail::scale(Tensor x, float k=1.0) -> Tensor")]
fn scale(x: &Tensor, k: i64) -> Result<Tensor> {
    let _ = k;
    Ok(x.clone())
}

fn main() {}
