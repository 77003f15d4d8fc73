//! A minimal `torch.optim`: [`SGD`], [`Adam`] and [`AdamW`], with PyTorch's
//! defaults, its checks and messages, and its single-tensor update rules
//! (the CPU path), operation for operation, so that a training run follows
//! PyTorch's step by step. Steps run without recording, as PyTorch's
//! `@torch.no_grad()` steps do; parameters are updated in place, so the
//! modules holding them see the new values.
//!
//! ```
//! use opforge::nn::{self, Module};
//! use opforge::optim::{Optimizer, SGD, SgdOptions};
//! use opforge::Tensor;
//! let model = nn::Linear::new(2, 1, true)?;
//! let mut opt = SGD::new(model.parameters(), SgdOptions { lr: 0.1, ..SgdOptions::default() })?;
//! let x = Tensor::from_vec(vec![1.0f32, 2.0], &[1, 2])?;
//! let before = model.weight().to_vec::<f32>()?;
//! opt.zero_grad()?;
//! model.forward(&x)?.sum()?.backward()?;
//! opt.step()?;
//! let after = model.weight().to_vec::<f32>()?;
//! assert!((before[1] - 0.2 - after[1]).abs() < 1e-6); // w -= lr * x
//! # Ok::<(), opforge::Error>(())
//! ```

mod adam;
mod sgd;

pub use adam::{Adam, AdamOptions, AdamW};
pub use sgd::{SgdOptions, SGD};

use crate::error::{Error, Result};
use crate::tensor::Tensor;
use serde_json::{Map, Value as Json};
use std::collections::HashSet;

/// An optimizer's state (PyTorch's `optimizer.state_dict()`): per parameter
/// (numbered across groups, in order) its named state tensors, and per
/// group its hyperparameters and the numbers of its parameters.
#[derive(Clone, Debug, Default)]
pub struct OptimizerState {
    /// `(parameter number, [(name, tensor)])`, for parameters that have
    /// state (`momentum_buffer`; `step`, `exp_avg`, `exp_avg_sq`, …).
    pub state: Vec<(usize, Vec<(String, Tensor)>)>,
    /// Each group's hyperparameters under PyTorch's names, with `"params"`
    /// listing its parameter numbers.
    pub param_groups: Vec<Map<String, Json>>,
}

/// What every optimizer does.
pub trait Optimizer {
    /// One update of every parameter that has a gradient.
    fn step(&mut self) -> Result<()>;

    /// Every parameter, group by group.
    fn params(&self) -> Vec<Tensor>;

    /// Clears every parameter's gradient (`set_to_none`, PyTorch's default).
    fn zero_grad(&self) -> Result<()> {
        self.zero_grad_with(true)
    }

    /// Clears (`set_to_none`) or zeroes every parameter's gradient.
    fn zero_grad_with(&self, set_to_none: bool) -> Result<()> {
        crate::nn::zero_grads(&self.params(), set_to_none)
    }

    /// The optimizer's state (see [`OptimizerState`]).
    fn state_dict(&self) -> OptimizerState;

    /// Restores a state from [`Optimizer::state_dict`]: the groups must match
    /// in number and sizes (PyTorch's messages); hyperparameters and state
    /// tensors (copied) are taken from it.
    fn load_state_dict(&mut self, state: &OptimizerState) -> Result<()>;
}

/// One group: its parameters and options (PyTorch's `param_groups[i]`).
#[derive(Clone, Debug)]
pub(crate) struct Group<O> {
    pub(crate) params: Vec<Tensor>,
    pub(crate) options: O,
}

/// PyTorch's checks of a group list loaded into an optimizer.
pub(crate) fn check_groups<O>(groups: &[Group<O>], state: &OptimizerState) -> Result<()> {
    if groups.len() != state.param_groups.len() {
        return Err(Error::Value(
            "loaded state dict has a different number of parameter groups".into(),
        ));
    }
    for (g, s) in groups.iter().zip(&state.param_groups) {
        let n = s.get("params").and_then(Json::as_array).map_or(0, Vec::len);
        if n != g.params.len() {
            return Err(Error::Value(
                "loaded state dict contains a parameter group that doesn't match the size of optimizer's group".into(),
            ));
        }
    }
    Ok(())
}

/// A Python number as PyTorch's Python-level updates pass one (`p.mul_(0.9)`
/// is `aten.mul_.Tensor` with a wrapped number).
pub(crate) fn wrapped(x: f64) -> Tensor {
    Tensor::wrapped_number(crate::Scalar::Float(x))
}

/// Calls `update(number, param, grad, options)` for every parameter that has
/// a gradient, its number counted across groups (the index of its state),
/// without recording: the loop of every optimizer's `step`.
pub(crate) fn for_each_grad<O>(
    groups: &[Group<O>],
    mut update: impl FnMut(usize, &Tensor, Tensor, &O) -> Result<()>,
) -> Result<()> {
    let _off = crate::autograd::no_grad();
    let mut id = 0;
    for group in groups {
        for param in &group.params {
            let this = id;
            id += 1;
            if let Some(grad) = param.grad() {
                update(this, param, grad, &group.options)?;
            }
        }
    }
    Ok(())
}

/// Every group's parameters, in order.
pub(crate) fn all_params<O>(groups: &[Group<O>]) -> Vec<Tensor> {
    groups
        .iter()
        .flat_map(|g| g.params.iter().cloned())
        .collect()
}

/// The groups as a state dict lists them: each group's options (`json`)
/// and its parameters' numbers, counted across groups.
pub(crate) fn param_groups<O>(
    groups: &[Group<O>],
    json: impl Fn(&O) -> Map<String, Json>,
) -> Vec<Map<String, Json>> {
    let mut next = 0;
    groups
        .iter()
        .map(|g| {
            let ids: Vec<usize> = (next..next + g.params.len()).collect();
            next += g.params.len();
            let mut m = json(&g.options);
            m.insert("params".into(), Json::from(ids));
            m
        })
        .collect()
}

/// A state tensor of `state` for parameter `id` (the parameter `param`),
/// copied, so the optimizer does not share it with the dict it was loaded
/// from. As PyTorch's `_process_value_according_to_param_policy`: a state
/// other than `step` of a floating-point parameter takes the parameter's
/// dtype and device; `step` is kept as it is.
pub(crate) fn state_tensor(
    state: &OptimizerState,
    id: usize,
    name: &str,
    param: &Tensor,
) -> Result<Option<Tensor>> {
    let Some((_, entries)) = state.state.iter().find(|(i, _)| *i == id) else {
        return Ok(None);
    };
    let Some((_, t)) = entries.iter().find(|(n, _)| n == name) else {
        return Ok(None);
    };
    let (dtype, device) = match name != "step" && param.dtype().is_floating_point() {
        true => (Some(param.dtype()), Some(param.device())),
        false => (None, None),
    };
    let copied = crate::at::_to_copy(t, dtype, None, device, None, false, None)?;
    Ok(Some(copied))
}

/// PyTorch's `Invalid <what>: <value>` (the value as Python prints it).
pub(crate) fn invalid(what: &str, value: f64) -> Error {
    Error::Value(format!("Invalid {what}: {}", crate::packet::py_float(value)).into())
}

/// `lr < 0` refused, as `optim.SGD` checks it (NaN passes).
pub(crate) fn refuse_negative(what: &str, x: f64) -> Result<()> {
    match x < 0.0 {
        true => Err(invalid(what, x)),
        false => Ok(()),
    }
}

/// `not 0.0 <= x` refused, as `optim.Adam` checks it (NaN is refused).
pub(crate) fn require_nonnegative(what: &str, x: f64) -> Result<()> {
    match 0.0 <= x {
        true => Ok(()),
        false => Err(invalid(what, x)),
    }
}

/// PyTorch's `Optimizer.__init__`: a parameter list that is not empty.
pub(crate) fn check_not_empty(params: &[Tensor]) -> Result<()> {
    match params.is_empty() {
        true => Err(Error::Value("optimizer got an empty parameter list".into())),
        false => Ok(()),
    }
}

/// PyTorch's `add_param_group` checks of a new group: each parameter a
/// leaf (or a non-leaf that retains its gradient), a parameter listed twice
/// warned about (it is stepped twice), and none already in another group.
pub(crate) fn check_new_group<O>(groups: &[Group<O>], params: &[Tensor]) -> Result<()> {
    for p in params {
        let retains = p.autograd_meta().is_some_and(|m| m.retains_grad());
        if !p.is_leaf() && !retains {
            return Err(Error::Value("can't optimize a non-leaf Tensor".into()));
        }
    }
    let ids: HashSet<usize> = params.iter().map(Tensor::identity).collect();
    if ids.len() != params.len() {
        crate::warnings::warn(
            "optimizer contains a parameter group with duplicate parameters; in future, this will cause an error; see github.com/pytorch/pytorch/issues/40967 for more information",
        );
    }
    let taken = groups
        .iter()
        .flat_map(|g| &g.params)
        .any(|p| ids.contains(&p.identity()));
    if taken {
        return Err(Error::Value(
            "some parameters appear in more than one parameter group".into(),
        ));
    }
    Ok(())
}
