// `#[overridable]`: the named dispatcher must be marked `#[dispatcher]`.
use opforge::{overridable, Result, Tensor};

fn scale_dispatcher(x: &Tensor, k: f64) -> [&Tensor; 1] {
    let _ = k;
    [x]
}

#[overridable(dispatcher = scale_dispatcher)]
fn scale(x: &Tensor, k: f64) -> Result<Tensor> {
    x * k
}

fn main() {}
