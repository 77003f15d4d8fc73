//! `std::ops` for tensors: `&a + &b`, `&a * 2.0`, `-&a`, … Each is the operator
//! PyTorch's Python operator calls (`a + b` → `add.Tensor`, `a + 2` →
//! `add.Scalar`, with `alpha = 1`), dispatched like any other call. Kernels can
//! fail (shapes that do not broadcast), so the output is a [`Result`]:
//! `let c = (&a + &b)?;`.

use crate::error::Result;
use crate::ops;
use crate::tensor::{Scalar, Tensor};
use std::ops::{Add, Div, Mul, Neg, Sub};

const ONE: Scalar = Scalar::Int(1);

macro_rules! binary {
    ($Trait:ident, $method:ident, $tensor_op:ident, $scalar_op:ident, $($extra:expr),*) => {
        impl $Trait<&Tensor> for &Tensor {
            type Output = Result<Tensor>;
            fn $method(self, rhs: &Tensor) -> Result<Tensor> {
                ops::$tensor_op(self, rhs $(, $extra)*)
            }
        }

        impl<S: Into<Scalar>> $Trait<S> for &Tensor {
            type Output = Result<Tensor>;
            fn $method(self, rhs: S) -> Result<Tensor> {
                ops::$scalar_op(self, rhs.into() $(, $extra)*)
            }
        }
    };
}

binary!(Add, add, add_Tensor, add_Scalar, ONE);
binary!(Sub, sub, sub_Tensor, sub_Scalar, ONE);
binary!(Mul, mul, mul_Tensor, mul_Scalar,);
binary!(Div, div, div_Tensor, div_Scalar,);

impl Neg for &Tensor {
    type Output = Result<Tensor>;
    fn neg(self) -> Result<Tensor> {
        ops::neg(self)
    }
}
