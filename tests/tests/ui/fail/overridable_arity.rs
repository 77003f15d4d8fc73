// `#[overridable]`: a dispatcher with fewer parameters is the same signature
// error (not an arity error at the call the wrapper makes).
use opforge::{dispatcher, overridable, Result, Tensor};

#[dispatcher]
fn add_dispatcher(x: &Tensor, y: &Tensor) -> [&Tensor; 2] {
    [x, y]
}

#[overridable(dispatcher = add_dispatcher)]
fn add(x: &Tensor, y: &Tensor, alpha: f64) -> Result<Tensor> {
    x + &(y * alpha)?
}

fn main() {}
