//! Activation kernels over the pointwise engine: `gelu`, `leaky_relu` and
//! their backward operators (PyTorch's aten/src/ATen/native/Activation.cpp
//! for the checks and dtypes, aten/src/ATen/native/cpu/GeluKernel.cpp and
//! Activation.cpp in the same directory for the element formulas).
//!
//! Each formula is evaluated in the compute dtype in the order PyTorch's CPU
//! kernel evaluates it (`0.5 * x * (1 + erf(x / √2))` in `f32` for a float32
//! tensor), so the results carry PyTorch's rounding, including its
//! cancellation in `1 + erf(..)` far in the negative tail; `erf`, `tanh` and
//! `exp` are musl's (`libm`).

use super::iter::{map1, map2};
use super::pointwise::{Dest, Iter, Rule};
use super::promote::Operand;
use super::{dispatch_error, num::Float, scalar_to};
use crate::error::Result;
use crate::float_dtype;
use crate::tensor::{Scalar, Tensor};

/// `gelu`'s `approximate` argument (PyTorch's `GeluType`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Gelu {
    /// `x Φ(x)`, with the error function.
    None,
    /// `0.5 x (1 + tanh(√(2/π) (x + 0.044715 x³)))`.
    Tanh,
}

impl Gelu {
    /// `"none"` or `"tanh"`, else PyTorch's error (`get_gelutype_enum` in
    /// aten/src/ATen/native/Activation.h).
    pub(crate) fn parse(approximate: &str) -> Result<Gelu> {
        match approximate {
            "none" => Ok(Gelu::None),
            "tanh" => Ok(Gelu::Tanh),
            _ => crate::bail!("approximate argument must be either none or tanh."),
        }
    }
}

/// The scalar functions and constants the activations need, per float type.
trait ActMath: Float {
    fn erf(self) -> Self;
    fn tanh_(self) -> Self;
    fn exp_(self) -> Self;
}

impl ActMath for f32 {
    fn erf(self) -> f32 {
        libm::erff(self)
    }
    fn tanh_(self) -> f32 {
        libm::tanhf(self)
    }
    fn exp_(self) -> f32 {
        libm::expf(self)
    }
}

impl ActMath for f64 {
    fn erf(self) -> f64 {
        libm::erf(self)
    }
    fn tanh_(self) -> f64 {
        libm::tanh(self)
    }
    fn exp_(self) -> f64 {
        libm::exp(self)
    }
}

/// `1/√2`.
const SQRT1_2: f64 = std::f64::consts::FRAC_1_SQRT_2;
/// `√(2/π)`, the tanh form's scale.
const TANH_BETA: f64 = std::f64::consts::SQRT_2 * std::f64::consts::FRAC_2_SQRT_PI * 0.5;
/// `1/√(2π)`, the normal density's scale.
const PDF_BETA: f64 = std::f64::consts::FRAC_2_SQRT_PI * std::f64::consts::FRAC_1_SQRT_2 * 0.5;
/// The cubic coefficient of the tanh form.
const KAPPA: f64 = 0.044715;

/// `gelu(x)` evaluated in `T`.
fn gelu_value<T: ActMath>(kind: Gelu, x: T) -> T {
    let (half, one) = (T::of(0.5), T::one());
    match kind {
        Gelu::None => x.mul(half).mul(one.add(x.mul(T::of(SQRT1_2)).erf())),
        Gelu::Tanh => {
            let cube = x.mul(x).mul(x);
            let inner = T::of(TANH_BETA).mul(x.add(T::of(KAPPA).mul(cube)));
            half.mul(x).mul(one.add(inner.tanh_()))
        }
    }
}

/// `dy * gelu'(x)` evaluated in `T`.
fn gelu_grad_value<T: ActMath>(kind: Gelu, dy: T, x: T) -> T {
    let (half, one) = (T::of(0.5), T::one());
    match kind {
        Gelu::None => {
            let cdf = half.mul(one.add(x.mul(T::of(SQRT1_2)).erf()));
            let pdf = T::of(PDF_BETA).mul(x.mul(x).mul(T::of(-0.5)).exp_());
            dy.mul(cdf.add(x.mul(pdf)))
        }
        Gelu::Tanh => {
            let sq = x.mul(x);
            let inner = T::of(TANH_BETA).mul(x.add(T::of(KAPPA).mul(sq.mul(x))));
            let t = inner.tanh_();
            // d/dx [0.5 x (1 + t)] = 0.5 (1 + t) + 0.5 x (1 - t²) inner'.
            let left = half.mul(one.add(t));
            let dinner = T::of(TANH_BETA).mul(one.add(T::of(3.0 * KAPPA).mul(sq)));
            let right = half.mul(x).mul(one.sub(t.mul(t))).mul(dinner);
            dy.mul(left.add(right))
        }
    }
}

/// `gelu` / `gelu_` / `gelu.out`: the input's dtype (`build_unary_op`; an
/// `out=` of another dtype is an error), `approximate` checked after the
/// iterator is built (also for meta tensors), floating dtypes only on CPU.
pub(crate) fn gelu(self_: &Tensor, approximate: &str, dest: Dest<'_>) -> Result<Tensor> {
    let dtype = self_.dtype();
    let it = Iter::build(
        smallvec::smallvec![Operand::Tensor(self_)],
        dest,
        Rule::Exact(dtype),
    )?;
    let kind = Gelu::parse(approximate)?;
    if it.is_meta() {
        return it.finish_meta();
    }
    float_dtype!(dtype, T => {
        it.run(|[a], o| map1(a, o, |x: T| gelu_value(kind, x)))
    }, _ => Err(dispatch_error("GeluKernelImpl", dtype)))
}

/// `gelu_backward` / `gelu_backward.grad_input`: `grad_output` and `self`
/// promoted together (`build_borrowing_binary_op`; the result is cast to a
/// `grad_input` it can be cast to). PyTorch's meta function does not look
/// at `approximate`; its CPU kernel checks it before the dtype.
pub(crate) fn gelu_backward(
    grad_output: &Tensor,
    self_: &Tensor,
    approximate: &str,
    dest: Dest<'_>,
) -> Result<Tensor> {
    let ops = smallvec::smallvec![Operand::Tensor(grad_output), Operand::Tensor(self_)];
    let it = Iter::build(ops, dest, Rule::Promote)?;
    if it.is_meta() {
        return it.finish_meta();
    }
    let kind = Gelu::parse(approximate)?;
    let compute = it.compute;
    float_dtype!(compute, T => {
        it.run(|[g, x], o| map2(g, x, o, |g: T, x: T| gelu_grad_value(kind, g, x)))
    }, _ => Err(dispatch_error("GeluBackwardKernelImpl", compute)))
}

/// `leaky_relu` / `leaky_relu_` / `leaky_relu.out`: `x` where `x > 0`,
/// else `x * negative_slope` (NaN stays NaN), in the input's dtype
/// (`build_unary_op`), floating dtypes only on CPU.
pub(crate) fn leaky_relu(self_: &Tensor, negative_slope: Scalar, dest: Dest<'_>) -> Result<Tensor> {
    let dtype = self_.dtype();
    let it = Iter::build(
        smallvec::smallvec![Operand::Tensor(self_)],
        dest,
        Rule::Exact(dtype),
    )?;
    if it.is_meta() {
        return it.finish_meta();
    }
    float_dtype!(dtype, T => {
        let slope: T = scalar_to(negative_slope)?;
        it.run(|[a], o| map1(a, o, |x: T| if x > 0.0 { x } else { x * slope }))
    }, _ => Err(dispatch_error("leaky_relu_cpu", dtype)))
}

/// `leaky_relu_backward` / `.grad_input`: `grad_output` where `self > 0`,
/// else `grad_output * negative_slope`, the two promoted together
/// (`build_borrowing_binary_op`). With `self_is_result` (`self` is the
/// in-place forward's result) a negative slope is PyTorch's error: the sign
/// of the input cannot be told from the result then.
pub(crate) fn leaky_relu_backward(
    grad_output: &Tensor,
    self_: &Tensor,
    negative_slope: Scalar,
    self_is_result: bool,
    dest: Dest<'_>,
) -> Result<Tensor> {
    crate::ensure!(
        !self_is_result || negative_slope.to_f64() >= 0.0,
        "In-place leakyReLu backward calculation is triggered with a negative slope which is not supported. This is caused by calling in-place forward function with a negative slope, please call out-of-place version instead. File an issue at https://github.com/pytorch/pytorch if you do require supporting in-place leakRelu backward calculation with negative slope"
    );
    let ops = smallvec::smallvec![Operand::Tensor(self_), Operand::Tensor(grad_output)];
    let it = Iter::build(ops, dest, Rule::Promote)?;
    if it.is_meta() {
        return it.finish_meta();
    }
    let compute = it.compute;
    float_dtype!(compute, T => {
        let slope: T = scalar_to(negative_slope)?;
        it.run(|[x, g], o| map2(x, g, o, |x: T, g: T| if x > 0.0 { g } else { g * slope }))
    }, _ => Err(dispatch_error("leaky_relu_backward_cpu", compute)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unknown_approximation_is_pytorchs_error() {
        let e = Gelu::parse("exact").unwrap_err();
        assert_eq!(
            e.to_string(),
            "approximate argument must be either none or tanh."
        );
        assert_eq!(Gelu::parse("tanh").unwrap(), Gelu::Tanh);
    }

    #[test]
    fn leaky_relu_scales_the_non_positive_side() {
        let x = Tensor::from_vec(vec![-2.0f64, 0.0, 3.0, f64::NAN], &[4]).unwrap();
        let y = leaky_relu(&x, Scalar::Float(0.5), Dest::New)
            .unwrap()
            .to_vec::<f64>()
            .unwrap();
        assert_eq!(&y[..3], &[-1.0, 0.0, 3.0]);
        assert!(y[3].is_nan());
        let g = Tensor::from_vec(vec![4.0f64; 4], &[4]).unwrap();
        let dx = leaky_relu_backward(&g, &x, Scalar::Float(0.5), false, Dest::New).unwrap();
        assert_eq!(dx.to_vec::<f64>().unwrap(), vec![2.0, 2.0, 4.0, 2.0]);
    }

    #[test]
    fn the_gradient_is_the_derivative() {
        for kind in [Gelu::None, Gelu::Tanh] {
            for x in [-3.0f64, -0.7, 0.0, 0.4, 2.5] {
                let h = 1e-6;
                let numeric = (gelu_value(kind, x + h) - gelu_value(kind, x - h)) / (2.0 * h);
                let analytic = gelu_grad_value(kind, 1.0, x);
                assert!((numeric - analytic).abs() < 1e-8, "{kind:?} at {x}");
            }
        }
    }
}
