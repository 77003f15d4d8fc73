// `#[overridable]`: parameter and result types need a boxed form (handlers get
// `Value`s); each unsupported type is one error at the type. A dispatcher must
// return something iterable over `&Tensor`.
use opforge::{dispatcher, overridable, Result, Tensor};

#[dispatcher]
fn names_dispatcher(x: &Tensor, names: Vec<String>) -> [&Tensor; 1] {
    [x]
}

#[overridable(dispatcher = names_dispatcher)]
fn names(x: &Tensor, names: Vec<String>) -> Result<Vec<String>> {
    let _ = x;
    Ok(names)
}

#[dispatcher]
fn wrong_dispatcher(x: &Tensor, k: i64) -> &Tensor {
    x
}

fn main() {}
