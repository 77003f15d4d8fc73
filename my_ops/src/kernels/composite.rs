//! `CompositeExplicitAutograd:` kernels, written with other operators.

use opforge::{kernel, Result, Scalar, Tensor};

/// `mylib::axpy`: `alpha * x + y`.
#[kernel(CompositeExplicitAutograd)]
pub fn axpy(x: &Tensor, y: &Tensor, alpha: Scalar) -> Result<Tensor> {
    opforge::at::add_Tensor(y, x, alpha)
}
