// A kernel for another crate's operator, for a key its YAML leaves free.
use opforge::{kernel, Result, Tensor};

#[kernel(Python, "mylib::scale", schema = my_ops)]
fn scale_python(self_: &Tensor, k: f64) -> Result<Tensor> {
    let _ = k;
    Ok(self_.clone())
}

fn main() {
    let _ = my_ops::torch::scale;
}
