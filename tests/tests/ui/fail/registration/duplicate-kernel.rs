// Two kernels for one operator and key in one module: a compile error at both.
use opforge::{kernel, Result, Tensor};

#[kernel(Python, "neg")]
fn neg_first(self_: &Tensor) -> Result<Tensor> {
    Ok(self_.clone())
}

#[kernel(Python, "neg")]
fn neg_second(self_: &Tensor) -> Result<Tensor> {
    Ok(self_.clone())
}

// A second CPU kernel for an operator whose YAML names one: the YAML's is the
// kernel (replacing it is explicit, at run time).
#[kernel(CPU, "neg")]
fn my_neg(self_: &Tensor) -> Result<Tensor> {
    Ok(self_.clone())
}

fn main() {}
