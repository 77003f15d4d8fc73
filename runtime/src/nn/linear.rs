//! `nn::Linear`, through the custom `LinearFunction` of PyTorch's "Extending torch.autograd" notes.

use super::init;
use super::module::{Member, MemberMut, Module, ModuleCore, ModuleMembers};
use crate::autograd::{Function, FunctionCtx};
use crate::dtype::{DType, Device};
use crate::error::{Error, Result};
use crate::tensor::Tensor;

/// PyTorch's `LinearFunction` (its "Extending torch.autograd" notes): `input @ weight.T (+ bias)`, a custom
/// [`Function`] in the separate style, whose backward computes only the
/// gradients `needs_input_grad` asks for.
pub struct LinearFunction;

impl Function for LinearFunction {
    type Args = (Tensor, Tensor, Option<Tensor>);
    type Output = Tensor;
    type State = ();

    fn forward((input, weight, bias): &Self::Args) -> Result<Tensor> {
        let mut output = input.mm(&weight.t()?)?;
        if let Some(bias) = bias {
            let sizes = output.sizes();
            output.add_(&bias.unsqueeze(0)?.expand(&sizes)?)?;
        }
        Ok(output)
    }

    fn setup_context(
        ctx: &mut FunctionCtx<()>,
        (input, weight, bias): &Self::Args,
        _: &Tensor,
    ) -> Result<()> {
        ctx.save_for_backward([Some(input), Some(weight), bias.as_ref()]);
        Ok(())
    }

    fn backward(
        ctx: &FunctionCtx<()>,
        grad_outputs: Vec<Option<Tensor>>,
    ) -> Result<Vec<Option<Tensor>>> {
        let saved = ctx.saved_tensors()?;
        let [input, weight, bias] = [&saved[0], &saved[1], &saved[2]];
        let Some(grad_output) = &grad_outputs[0] else {
            return Ok(vec![None, None, None]);
        };
        let needs = ctx.needs_input_grad();
        let saved_tensor = |t: &Option<Tensor>| {
            t.clone()
                .ok_or_else(|| Error::Runtime("LinearFunction: a saved tensor is missing".into()))
        };
        let mut grads = vec![None, None, None];
        if needs[0] {
            grads[0] = Some(grad_output.mm(&saved_tensor(weight)?)?);
        }
        if needs[1] {
            grads[1] = Some(grad_output.t()?.mm(&saved_tensor(input)?)?);
        }
        if bias.is_some() && needs[2] {
            grads[2] = Some(grad_output.sum_dim_int_list(Some(&[0]))?);
        }
        Ok(grads)
    }

    /// Forward mode: `t_input @ weight.T + input @ t_weight.T (+ t_bias)`,
    /// each term only for an argument with a tangent.
    fn jvp(
        ctx: &mut FunctionCtx<()>,
        tangents: Vec<Option<Tensor>>,
    ) -> Result<Vec<Option<Tensor>>> {
        let saved = ctx.saved_tensors()?;
        let (Some(input), Some(weight)) = (&saved[0], &saved[1]) else {
            return Err(Error::Runtime(
                "LinearFunction: a saved tensor is missing".into(),
            ));
        };
        let mut out: Option<Tensor> = None;
        let mut add = |term: Tensor| -> Result<()> {
            out = Some(match out.take() {
                None => term,
                Some(sum) => sum.add(&term)?,
            });
            Ok(())
        };
        if let Some(t) = &tangents[0] {
            add(t.mm(&weight.t()?)?)?;
        }
        if let Some(t) = &tangents[1] {
            add(input.mm(&t.t()?)?)?;
        }
        if let Some(t) = tangents.get(2).and_then(Option::as_ref) {
            let sizes = [input.sizes()[0], weight.sizes()[0]];
            add(t.unsqueeze(0)?.expand(&sizes)?)?;
        }
        Ok(vec![out])
    }
}

/// The functional wrapper of PyTorch's "Extending torch.autograd" notes: `linear(input, weight, bias=None)`.
/// As PyTorch's `F.linear`, the input may have any leading dimensions
/// (`[*, in_features]` → `[*, out_features]`; a 1-D input gives a 1-D
/// output): they are flattened into one for [`LinearFunction`] and restored
/// after.
pub fn linear(input: &Tensor, weight: &Tensor, bias: Option<&Tensor>) -> Result<Tensor> {
    let sizes = input.sizes();
    let Some((&last, leading)) = sizes.split_last() else {
        return Err(Error::Runtime(
            format!(
                "both arguments to linear need to be at least 1D, but they are 0D and {}D",
                weight.dim()
            )
            .into(),
        ));
    };
    if sizes.len() == 2 {
        return LinearFunction::apply((input.clone(), weight.clone(), bias.cloned()));
    }
    let flat = input.reshape(&[-1, last])?;
    let out = LinearFunction::apply((flat, weight.clone(), bias.cloned()))?;
    let mut shape = leading.to_vec();
    shape.extend(out.sizes().last());
    out.reshape(&shape)
}

/// PyTorch's `nn.Linear` (`y = x Wᵀ + b`) computed by [`LinearFunction`],
/// with PyTorch's initialisation: `kaiming_uniform_(weight, a=√5)` and the
/// bias uniform in ±1/√fan_in, drawn from the default generator in that
/// order (so `manual_seed` gives PyTorch's weights).
pub struct Linear {
    core: ModuleCore,
    in_features: usize,
    out_features: usize,
}

impl Linear {
    /// A float32 layer on the CPU.
    pub fn new(in_features: usize, out_features: usize, bias: bool) -> Result<Linear> {
        Linear::with_options(in_features, out_features, bias, DType::Float32, Device::Cpu)
    }

    /// A layer of `dtype` on `device`.
    pub fn with_options(
        in_features: usize,
        out_features: usize,
        bias: bool,
        dtype: DType,
        device: Device,
    ) -> Result<Linear> {
        let parameter = |shape: &[usize]| -> Result<Tensor> {
            let t = Tensor::try_zeros(shape, dtype, device)?;
            t.set_requires_grad(true)?;
            Ok(t)
        };
        let mut core = ModuleCore::new();
        core.register_parameter("weight", Some(parameter(&[out_features, in_features])?))?;
        core.register_parameter(
            "bias",
            match bias {
                true => Some(parameter(&[out_features])?),
                false => None,
            },
        )?;
        let layer = Linear {
            core,
            in_features,
            out_features,
        };
        layer.reset_parameters()?;
        Ok(layer)
    }

    /// PyTorch's `reset_parameters`: see [`Linear`].
    pub fn reset_parameters(&self) -> Result<()> {
        let weight = self.weight();
        init::kaiming_uniform_(&weight, 5f64.sqrt(), init::FanMode::FanIn, "leaky_relu")?;
        if let Some(bias) = self.bias() {
            let (fan_in, _) = init::calculate_fan_in_and_fan_out(&weight)?;
            let bound = if fan_in > 0 {
                1.0 / (fan_in as f64).sqrt()
            } else {
                0.0
            };
            init::uniform_(&bias, -bound, bound)?;
        }
        Ok(())
    }

    /// The weight, `[out_features, in_features]`.
    pub fn weight(&self) -> Tensor {
        self.core
            .parameter("weight")
            .cloned()
            .expect("Linear registers its weight")
    }

    /// The bias, `[out_features]`, if the layer has one.
    pub fn bias(&self) -> Option<Tensor> {
        self.core.parameter("bias").cloned()
    }

    /// Input size.
    pub fn in_features(&self) -> usize {
        self.in_features
    }

    /// Output size.
    pub fn out_features(&self) -> usize {
        self.out_features
    }
}

impl ModuleMembers for Linear {
    fn members<'a>(&'a self, f: &mut dyn FnMut(Member<'a>)) {
        self.core.members(f)
    }

    fn members_mut(&mut self, f: &mut dyn FnMut(MemberMut<'_>)) {
        self.core.members_mut(f)
    }
}

impl Module for Linear {
    /// `[*, in_features]` → `[*, out_features]` ([`linear`]).
    fn forward(&self, input: &Tensor) -> Result<Tensor> {
        linear(input, &self.weight(), self.bias().as_ref())
    }

    fn extra_repr(&self) -> String {
        format!(
            "in_features={}, out_features={}, bias={}",
            self.in_features,
            self.out_features,
            if self.bias().is_some() {
                "True"
            } else {
                "False"
            }
        )
    }
}
