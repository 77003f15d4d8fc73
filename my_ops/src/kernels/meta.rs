//! `Meta:` kernels: shapes and dtypes only.

use opforge::{kernel, Result, Scalar, Tensor};

/// `mylib::scale` (Meta).
#[kernel(Meta)]
pub fn scale(self_: &Tensor, k: f64) -> Result<Tensor> {
    opforge::at::mul_Scalar(self_, Scalar::Float(k))
}
