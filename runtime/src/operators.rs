//! `std::ops` for tensors: `&a + &b`, `&a * 2.0`, `-&a`, … Each is the `Tensor`
//! method PyTorch's Python operator calls (`a + b` → `Tensor.add`, `a + 2` →
//! `Tensor.add` with the number as a wrapped-number tensor, so `add.Tensor`
//! as in PyTorch, whose argument parser wraps a number given for a `Tensor`;
//! `-a` → `Tensor.neg`), so it goes through the
//! function-level override protocol as that method and dispatches like any other
//! call. Kernels can fail (shapes that do not broadcast), so the output is a
//! [`Result`]: `let c = (&a + &b)?;`.

use crate::error::Result;
use crate::tensor::{Scalar, Tensor};
use std::ops::{Add, Div, Mul, Neg, Sub};

/// `impl Trait for &Tensor` with `Tensor::<method>` (the `.Tensor` overload),
/// a number as a wrapped-number tensor ([`Tensor::wrapped_number`]): what
/// PyTorch records for `a * 2` is `aten.mul.Tensor(a, 2)`, and autograd
/// names its node `MulBackward0`.
///
/// ```
/// use opforge::autograd::TensorAutograd;
/// use opforge::Tensor;
/// let a = Tensor::from_vec(vec![1.0f32, 2.0], &[2])?;
/// a.set_requires_grad(true)?;
/// let b = (&a * 2)?;
/// assert_eq!(b.grad_fn().unwrap().node.name(), "MulBackward0");
/// # Ok::<(), opforge::Error>(())
/// ```
macro_rules! binary {
    ($Trait:ident, $method:ident) => {
        impl $Trait<&Tensor> for &Tensor {
            type Output = Result<Tensor>;
            fn $method(self, rhs: &Tensor) -> Result<Tensor> {
                Tensor::$method(self, rhs)
            }
        }

        impl<S: Into<Scalar>> $Trait<S> for &Tensor {
            type Output = Result<Tensor>;
            fn $method(self, rhs: S) -> Result<Tensor> {
                Tensor::$method(self, &Tensor::wrapped_number(rhs.into()))
            }
        }
    };
}

binary!(Add, add);
binary!(Sub, sub);
binary!(Mul, mul);
binary!(Div, div);

impl Neg for &Tensor {
    type Output = Result<Tensor>;
    fn neg(self) -> Result<Tensor> {
        Tensor::neg(self)
    }
}
