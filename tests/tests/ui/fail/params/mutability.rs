// A written tensor (`Tensor(a!)`) is taken as `&mut Tensor`, and only a written one.
use opforge::{kernel, Result, Scalar, Tensor};

#[kernel(Python, "add.out")]
fn out_by_value(self_: &Tensor, other: &Tensor, alpha: Scalar, out: Tensor) -> Result<Tensor> {
    let _ = (self_, other, alpha);
    Ok(out)
}

#[kernel(Python, "neg.out")]
fn out_by_shared_ref(self_: &Tensor, out: &Tensor) -> Result<Tensor> {
    let _ = self_;
    Ok(out.clone())
}

#[kernel(Python, "neg")]
fn input_by_mut_ref(self_: &mut Tensor) -> Result<Tensor> {
    Ok(self_.clone())
}

fn main() {}
