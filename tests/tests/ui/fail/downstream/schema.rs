// Kernels for the operators of another crate's schema file (my_ops's
// native_functions.yaml), checked against that schema: `schema = my_ops`.
use opforge::{kernel, Result, Scalar, Tensor};

// `mylib::scale(Tensor self, float k=1.0)`: `k` is a float.
#[kernel(Python, "mylib::scale", schema = my_ops)]
fn scale_python(self_: &Tensor, k: i64) -> Result<Tensor> {
    let _ = k;
    Ok(self_.clone())
}

// A misspelt operator: the nearest in that schema, with its schema.
#[kernel(Python, "mylib::scal", schema = my_ops)]
fn misspelt(self_: &Tensor, k: f64) -> Result<Tensor> {
    let _ = k;
    Ok(self_.clone())
}

// my_ops's YAML names the CPU kernel of `mylib::scale`: a second one is an error.
#[kernel(CPU, "mylib::scale", schema = my_ops)]
fn scale_cpu(self_: &Tensor, k: f64) -> Result<Tensor> {
    let _ = k;
    Ok(self_.clone())
}

// Names and order are checked as for the runtime's operators.
#[kernel(Python, "mylib::axpy", schema = my_ops)]
fn axpy_python(y: &Tensor, x: &Tensor, alpha: Scalar) -> Result<Tensor> {
    let _ = (x, alpha);
    Ok(y.clone())
}

// The function-name form, misspelt: the nearest kernel function my_ops's
// YAML names under that key.
#[kernel(CPU, schema = my_ops)]
fn scal(self_: &Tensor, k: f64) -> Result<Tensor> {
    let _ = k;
    Ok(self_.clone())
}

fn main() {}
