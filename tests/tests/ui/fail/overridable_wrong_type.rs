// `#[overridable]`: a parameter whose type differs from the dispatcher's is one
// error, at that parameter's type, naming both types.
use opforge::{dispatcher, overridable, Result, Tensor};

#[dispatcher]
fn scale_dispatcher(x: &Tensor, k: i64) -> [&Tensor; 1] {
    [x]
}

#[overridable(dispatcher = scale_dispatcher)]
fn scale(x: &Tensor, k: f64) -> Result<Tensor> {
    x * k
}

fn main() {}
