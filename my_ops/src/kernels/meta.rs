//! `Meta:` kernels: shapes and dtypes only.

use opforge::{kernel, Result, Scalar, Tensor};

/// `mylib::scale` (Meta).
#[kernel(Meta)]
pub fn scale(self_: &Tensor, k: f64) -> Result<Tensor> {
    opforge::at::mul_Scalar(self_, Scalar::Float(k))
}

/// `mylib::wsq` (Meta): the broadcast shape and promoted dtype of its CPU
/// kernel's products.
#[kernel(Meta)]
pub fn wsq(self_: &Tensor, weight: &Tensor) -> Result<Tensor> {
    opforge::at::mul_Tensor(weight, &opforge::at::mul_Tensor(self_, self_)?)
}
