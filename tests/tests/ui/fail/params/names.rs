// Parameter names are the schema's (`self` is spelled `self_`), in the schema's order.
use opforge::{kernel, Result, Scalar, Tensor};

#[kernel(Python, "add.Tensor")]
fn wrong_name(self_: &Tensor, rhs: &Tensor, alpha: Scalar) -> Result<Tensor> {
    let _ = (rhs, alpha);
    Ok(self_.clone())
}

#[kernel(Python, "add.Tensor")]
fn out_of_order(other: &Tensor, self_: &Tensor, alpha: Scalar) -> Result<Tensor> {
    let _ = (other, alpha);
    Ok(self_.clone())
}

fn main() {}
