// `#[op]`: problems with the attribute itself point at the schema string or the key.
use opforge::{op, Result, Tensor};

// Malformed schema (no return type).
#[op("uifail::scale(Tensor x, float k=1.0) ->")]
fn scale(x: &Tensor, k: f64) -> Result<Tensor> {
    let _ = k;
    Ok(x.clone())
}

// Unknown type.
#[op("uifail::shift(Tensr x) -> Tensor")]
fn shift(x: &Tensor) -> Result<Tensor> {
    Ok(x.clone())
}

// No namespace.
#[op("ident(Tensor x) -> Tensor")]
fn ident(x: &Tensor) -> Result<Tensor> {
    Ok(x.clone())
}

// Unknown key.
#[op("uifail::neg2(Tensor x) -> Tensor", key = CPUU)]
fn neg2(x: &Tensor) -> Result<Tensor> {
    Ok(x.clone())
}

fn main() {}
