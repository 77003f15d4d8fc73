// `#[overridable]`: the attribute must name a dispatcher; the function's shape is
// checked (free function, plain parameter names, `Result<T>` return).
use opforge::{overridable, Result, Tensor};

#[overridable]
fn no_dispatcher(x: &Tensor) -> Result<Tensor> {
    Ok(x.clone())
}

#[overridable(dispatch = d)]
fn misspelled(x: &Tensor) -> Result<Tensor> {
    Ok(x.clone())
}

#[overridable(dispatcher = d)]
fn shapes<T>((a, _b): (&Tensor, &Tensor), _t: T) -> Tensor {
    a.clone()
}

fn main() {}
