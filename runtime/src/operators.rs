//! `std::ops` for tensors: `&a + &b`, `&a * 2.0`, `-&a`, … Each is the `Tensor`
//! method PyTorch's Python operator calls (`a + b` → `Tensor.add`, `a + 2` →
//! `Tensor.add` with `add.Scalar`, `-a` → `Tensor.neg`), so it goes through the
//! function-level override protocol as that method and dispatches like any other
//! call. Kernels can fail (shapes that do not broadcast), so the output is a
//! [`Result`]: `let c = (&a + &b)?;`.

use crate::error::Result;
use crate::tensor::{Scalar, Tensor};
use std::ops::{Add, Div, Mul, Neg, Sub};

/// `impl Trait for &Tensor` with `Tensor::<method>` (the `.Tensor` overload) and
/// `Tensor::<method>_scalar` (the `.Scalar` overload).
macro_rules! binary {
    ($Trait:ident, $method:ident, $scalar_fn:ident) => {
        impl $Trait<&Tensor> for &Tensor {
            type Output = Result<Tensor>;
            fn $method(self, rhs: &Tensor) -> Result<Tensor> {
                Tensor::$method(self, rhs)
            }
        }

        impl<S: Into<Scalar>> $Trait<S> for &Tensor {
            type Output = Result<Tensor>;
            fn $method(self, rhs: S) -> Result<Tensor> {
                Tensor::$scalar_fn(self, rhs.into())
            }
        }
    };
}

binary!(Add, add, add_scalar);
binary!(Sub, sub, sub_scalar);
binary!(Mul, mul, mul_scalar);
binary!(Div, div, div_scalar);

impl Neg for &Tensor {
    type Output = Result<Tensor>;
    fn neg(self) -> Result<Tensor> {
        Tensor::neg(self)
    }
}
