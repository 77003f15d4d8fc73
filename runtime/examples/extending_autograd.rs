//! The examples of PyTorch's "Extending torch.autograd" notes, as they are
//! written there:
//! `LinearFunction` in both styles (separate `setup_context`, and combined
//! `forward(ctx, …)`) with the `needs_input_grad` checks, the `linear`
//! wrapper with its default `bias=None`, `MulConstant` with and without
//! `set_materialize_grads(false)`, `MyCube` returning `dx` so that double
//! backward works, `gradcheck` on `linear`, and a forward-mode `jvp`.
//!
//! Run: `cargo run -p opforge --example extending_autograd`.

use opforge::autograd::{
    forward_ad, gradcheck, gradgradcheck, Function, FunctionCtx, GradcheckOptions,
    GradgradcheckOptions,
};
use opforge::{DType, Device, Result, Scalar, Tensor};

type Grads = Vec<Option<Tensor>>;

/// The notes' `LinearFunction`, separate style (`forward` computes,
/// `setup_context` saves the inputs, `backward` computes only what
/// `needs_input_grad` asks for): it is `nn::Linear`'s own, written out as the
/// notes write it, in `runtime/src/nn/linear.rs`.
pub use opforge::nn::LinearFunction;

/// The notes' `linear` wrapper: `bias` defaults to `None`.
pub fn linear(input: &Tensor, weight: &Tensor, bias: Option<&Tensor>) -> Result<Tensor> {
    LinearFunction::apply((input.clone(), weight.clone(), bias.cloned()))
}

/// The same Function in the combined style: `forward` gets the context and
/// saves the inputs itself; the computation and the backward are the
/// separate style's.
pub struct LinearCombined;

impl Function for LinearCombined {
    type Args = (Tensor, Tensor, Option<Tensor>);
    type Output = Tensor;
    type State = ();

    fn forward_with_ctx(ctx: &mut FunctionCtx<()>, args: &Self::Args) -> Result<Tensor> {
        let (input, weight, bias) = args;
        ctx.save_for_backward([Some(input), Some(weight), bias.as_ref()]);
        LinearFunction::forward(args)
    }

    fn backward(ctx: &FunctionCtx<()>, grad_outputs: Grads) -> Result<Grads> {
        LinearFunction::backward(ctx, grad_outputs)
    }
}

/// The notes' `MulConstant`: a Function of a non-tensor argument, kept in
/// the context's state (`ctx.constant = constant`).
pub struct MulConstant;

impl Function for MulConstant {
    type Args = (Tensor, f64);
    type Output = Tensor;
    type State = f64;

    fn forward((tensor, constant): &Self::Args) -> Result<Tensor> {
        tensor.mul_scalar(Scalar::Float(*constant))
    }

    fn setup_context(
        ctx: &mut FunctionCtx<f64>,
        (_, constant): &Self::Args,
        _: &Tensor,
    ) -> Result<()> {
        ctx.state = *constant;
        Ok(())
    }

    fn backward(ctx: &FunctionCtx<f64>, grad_outputs: Grads) -> Result<Grads> {
        // As many gradients as arguments; the constant's must be None.
        let g = grad_outputs[0].as_ref().expect("materialized");
        Ok(vec![Some(g.mul_scalar(Scalar::Float(ctx.state))?), None])
    }
}

/// `MulConstant` with `set_materialize_grads(false)`: an undefined gradient
/// arrives as `None`, and backward skips the work.
pub struct MulConstantLazy;

impl Function for MulConstantLazy {
    type Args = (Tensor, f64);
    type Output = Tensor;
    type State = f64;

    fn forward(args: &Self::Args) -> Result<Tensor> {
        MulConstant::forward(args)
    }

    fn setup_context(
        ctx: &mut FunctionCtx<f64>,
        (_, constant): &Self::Args,
        _: &Tensor,
    ) -> Result<()> {
        ctx.set_materialize_grads(false);
        ctx.state = *constant;
        Ok(())
    }

    fn backward(ctx: &FunctionCtx<f64>, grad_outputs: Grads) -> Result<Grads> {
        let Some(g) = &grad_outputs[0] else {
            return Ok(vec![None, None]);
        };
        Ok(vec![Some(g.mul_scalar(Scalar::Float(ctx.state))?), None])
    }

    // Forward mode: the tangent scales as the value does.
    fn jvp(ctx: &mut FunctionCtx<f64>, tangents: Grads) -> Result<Grads> {
        let Some(t) = &tangents[0] else {
            return Ok(vec![None]);
        };
        Ok(vec![Some(t.mul_scalar(Scalar::Float(ctx.state))?)])
    }
}

/// The notes' `MyCube`: returns `dx` as a second output, so that it can be
/// saved and carry gradients in double backward.
pub struct MyCube;

impl Function for MyCube {
    type Args = Tensor;
    type Output = (Tensor, Tensor);
    type State = ();

    fn forward(x: &Tensor) -> Result<(Tensor, Tensor)> {
        // dx = 3 * x ** 2, result = x ** 3
        let dx = x
            .pow_tensor_scalar(Scalar::Int(2))?
            .mul_scalar(Scalar::Int(3))?;
        let result = x.pow_tensor_scalar(Scalar::Int(3))?;
        Ok((result, dx))
    }

    fn setup_context(
        ctx: &mut FunctionCtx<()>,
        x: &Tensor,
        (_, dx): &(Tensor, Tensor),
    ) -> Result<()> {
        ctx.save_for_backward([x, dx]);
        Ok(())
    }

    fn backward(ctx: &FunctionCtx<()>, grad_outputs: Grads) -> Result<Grads> {
        let saved = ctx.saved_tensors()?;
        let (x, dx) = (
            saved[0].as_ref().expect("saved"),
            saved[1].as_ref().expect("saved"),
        );
        let (grad_output, grad_dx) = (
            grad_outputs[0].as_ref().expect("materialized"),
            grad_outputs[1].as_ref().expect("materialized"),
        );
        // For higher-order gradients, add dx's contribution: grad_dx * 6 * x.
        let result = grad_output
            .mul(dx)?
            .add(&grad_dx.mul_scalar(Scalar::Int(6))?.mul(x)?)?;
        Ok(vec![Some(result)])
    }
}

/// The notes' `my_cube` wrapper: the result only.
pub fn my_cube(x: &Tensor) -> Result<Tensor> {
    MyCube::apply(x.clone()).map(|(result, _)| result)
}

fn randn(shape: &[i64]) -> Result<Tensor> {
    let t = opforge::ops::randn(shape, Some(DType::Float64), None, Some(Device::Cpu), None)?;
    t.set_requires_grad(true)?;
    Ok(t)
}

/// The notes' check: `gradcheck(linear, (randn(20, 20), randn(30, 20)),
/// eps=1e-6, atol=1e-4)`, in float64.
pub fn check_linear() -> Result<bool> {
    opforge::manual_seed(0);
    let inputs = [randn(&[20, 20])?, randn(&[30, 20])?];
    let opts = GradcheckOptions {
        eps: 1e-6,
        atol: 1e-4,
        ..GradcheckOptions::default()
    };
    gradcheck(|xs| Ok(vec![linear(&xs[0], &xs[1], None)?]), &inputs, &opts)
}

/// `gradgradcheck` on `my_cube`: its double backward is right.
pub fn check_cube_twice() -> Result<bool> {
    opforge::manual_seed(0);
    let inputs = [randn(&[5])?];
    gradgradcheck(
        |xs| Ok(vec![my_cube(&xs[0])?]),
        &inputs,
        &GradgradcheckOptions::default(),
    )
}

fn main() -> Result<()> {
    println!(
        "gradcheck(linear, (20x20, 30x20 float64), eps=1e-6, atol=1e-4): {}",
        check_linear()?
    );
    println!("gradgradcheck(my_cube): {}", check_cube_twice()?);

    let x = Tensor::from_vec(vec![1.0f32, 2.0, 3.0], &[3])?;
    x.set_requires_grad(true)?;
    let y = MulConstant::apply((x.clone(), 2.5))?;
    println!("MulConstant: {y}");
    y.sum()?.backward()?;
    println!("x.grad = {}", x.grad().expect("a gradient"));

    let _level = forward_ad::dual_level()?;
    let dual = forward_ad::make_dual(&x.detach()?, &Tensor::from_vec(vec![1.0f32; 3], &[3])?)?;
    let out = MulConstantLazy::apply((dual, 2.5))?;
    println!(
        "jvp of MulConstant: {}",
        forward_ad::unpack_dual(&out).tangent.expect("a tangent")
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leaf(values: Vec<f64>, shape: &[usize]) -> Tensor {
        let t = Tensor::from_vec(values, shape).unwrap();
        t.set_requires_grad(true).unwrap();
        t
    }

    #[test]
    fn gradcheck_passes_on_linear_as_in_the_seed() {
        assert!(check_linear().unwrap());
    }

    #[test]
    fn both_styles_give_the_same_gradients_and_respect_needs_input_grad() {
        let input = Tensor::from_vec(vec![1.0f64, 2.0, 3.0, 4.0], &[2, 2]).unwrap();
        let weight = leaf(vec![0.5, -1.0, 2.0, 1.0, 0.0, 3.0], &[3, 2]);
        let bias = leaf(vec![0.1, 0.2, 0.3], &[3]);
        let sep =
            LinearFunction::apply((input.clone(), weight.clone(), Some(bias.clone()))).unwrap();
        assert_eq!(sep.grad_fn().unwrap().node.name(), "LinearFunctionBackward");
        sep.sum().unwrap().backward().unwrap();
        let (gw, gb) = (weight.grad().unwrap(), bias.grad().unwrap());
        assert_eq!(
            gw.to_vec::<f64>().unwrap(),
            vec![4.0, 6.0, 4.0, 6.0, 4.0, 6.0]
        );
        assert_eq!(gb.to_vec::<f64>().unwrap(), vec![2.0; 3]);
        let (w2, b2) = (weight.detach().unwrap(), bias.detach().unwrap());
        w2.set_requires_grad(true).unwrap();
        b2.set_requires_grad(true).unwrap();
        let comb = LinearCombined::apply((input.clone(), w2.clone(), Some(b2.clone()))).unwrap();
        assert_eq!(comb.to_vec::<f64>().unwrap(), sep.to_vec::<f64>().unwrap());
        comb.sum().unwrap().backward().unwrap();
        assert_eq!(
            w2.grad().unwrap().to_vec::<f64>().unwrap(),
            gw.to_vec::<f64>().unwrap()
        );
        // input does not require grad: it gets nothing (and nothing is computed).
        assert!(input.grad().is_none());
        // The wrapper's default: no bias.
        let nb = linear(&input, &weight, None).unwrap();
        assert_eq!(nb.shape(), vec![2, 3]);
    }

    #[test]
    fn mul_constant_with_and_without_materialized_gradients() {
        let x = leaf(vec![1.0, 2.0], &[2]);
        MulConstant::apply((x.clone(), 3.0))
            .unwrap()
            .sum()
            .unwrap()
            .backward()
            .unwrap();
        assert_eq!(x.grad().unwrap().to_vec::<f64>().unwrap(), vec![3.0, 3.0]);
        let x = leaf(vec![1.0, 2.0], &[2]);
        MulConstantLazy::apply((x.clone(), 3.0))
            .unwrap()
            .sum()
            .unwrap()
            .backward()
            .unwrap();
        assert_eq!(x.grad().unwrap().to_vec::<f64>().unwrap(), vec![3.0, 3.0]);
    }

    #[test]
    fn my_cube_differentiates_twice() {
        assert!(check_cube_twice().unwrap());
        let x = leaf(vec![2.0], &[1]);
        let y = my_cube(&x).unwrap();
        let g = opforge::autograd::grad(
            &[y.sum().unwrap()],
            std::slice::from_ref(&x),
            &[],
            None,
            true,
            false,
        )
        .unwrap();
        let g = g[0].clone().unwrap();
        assert_eq!(g.to_vec::<f64>().unwrap(), vec![12.0]); // 3x²
        let gg =
            opforge::autograd::grad(&[g.sum().unwrap()], &[x], &[], None, false, false).unwrap();
        assert_eq!(gg[0].as_ref().unwrap().to_vec::<f64>().unwrap(), vec![12.0]);
        // 6x
    }

    #[test]
    fn jvp_gives_the_tangent() {
        let _level = forward_ad::dual_level().unwrap();
        let x = Tensor::from_vec(vec![1.0f64, 2.0], &[2]).unwrap();
        let v = Tensor::from_vec(vec![1.0f64, 0.5], &[2]).unwrap();
        let out = MulConstantLazy::apply((forward_ad::make_dual(&x, &v).unwrap(), 4.0)).unwrap();
        let t = forward_ad::unpack_dual(&out).tangent.unwrap();
        assert_eq!(t.to_vec::<f64>().unwrap(), vec![4.0, 2.0]);
    }
}
