// `#[overridable]`: the dispatcher's parameter names must be the function's
// (the wiki's `verify_matching_signatures`); one error, showing both signatures.
use opforge::{dispatcher, overridable, Result, Tensor};

#[dispatcher]
fn scale_dispatcher(x: &Tensor, factor: f64) -> [&Tensor; 1] {
    [x]
}

#[overridable(dispatcher = scale_dispatcher)]
fn scale(x: &Tensor, k: f64) -> Result<Tensor> {
    x * k
}

fn main() {}
