// `#[op]`: parameter names and arity are checked against the schema string, each
// problem on the offending tokens.
use opforge::{op, Result, Tensor};

// Wrong name.
#[op("uifail::scale(Tensor x, float k=1.0) -> Tensor")]
fn scale(x: &Tensor, factor: f64) -> Result<Tensor> {
    let _ = factor;
    Ok(x.clone())
}

// Missing parameter.
#[op("uifail::shift(Tensor x, float k, int n=0) -> Tensor")]
fn shift(x: &Tensor, k: f64) -> Result<Tensor> {
    let _ = k;
    Ok(x.clone())
}

// Extra parameter.
#[op("uifail::ident(Tensor x) -> Tensor")]
fn ident(x: &Tensor, extra: bool) -> Result<Tensor> {
    let _ = extra;
    Ok(x.clone())
}

fn main() {}
