//! `optim::SGD`, PyTorch's `_single_tensor_sgd`.

use super::{all_params, check_groups, check_new_group, check_not_empty, refuse_negative};
use super::{for_each_grad, param_groups, state_tensor, wrapped};
use super::{Group, Optimizer, OptimizerState};
use crate::error::{Error, Result};
use crate::tensor::Tensor;
use crate::Scalar;
use serde_json::{json, Map, Value as Json};

/// SGD's options, with PyTorch's defaults.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SgdOptions {
    /// Learning rate (1e-3).
    pub lr: f64,
    /// Momentum factor (0).
    pub momentum: f64,
    /// Dampening of the momentum (0).
    pub dampening: f64,
    /// L2 penalty added to the gradient (0).
    pub weight_decay: f64,
    /// Nesterov momentum (false; needs momentum and no dampening).
    pub nesterov: bool,
    /// Maximize instead of minimize (false).
    pub maximize: bool,
}

impl Default for SgdOptions {
    fn default() -> SgdOptions {
        SgdOptions {
            lr: 1e-3,
            momentum: 0.0,
            dampening: 0.0,
            weight_decay: 0.0,
            nesterov: false,
            maximize: false,
        }
    }
}

impl SgdOptions {
    fn check(&self) -> Result<()> {
        // `optim.SGD`'s checks (`x < 0.0`: NaN passes, as in PyTorch).
        refuse_negative("learning rate", self.lr)?;
        refuse_negative("momentum value", self.momentum)?;
        refuse_negative("weight_decay value", self.weight_decay)?;
        if self.nesterov && (self.momentum <= 0.0 || self.dampening != 0.0) {
            return Err(Error::Value(
                "Nesterov momentum requires a momentum and zero dampening".into(),
            ));
        }
        Ok(())
    }

    fn to_json(self) -> Map<String, Json> {
        let v = json!({
            "lr": self.lr,
            "momentum": self.momentum,
            "dampening": self.dampening,
            "weight_decay": self.weight_decay,
            "nesterov": self.nesterov,
            "maximize": self.maximize,
        });
        v.as_object().cloned().unwrap_or_default()
    }

    fn from_json(m: &Map<String, Json>, base: SgdOptions) -> SgdOptions {
        let f = |k: &str, d: f64| m.get(k).and_then(Json::as_f64).unwrap_or(d);
        let b = |k: &str, d: bool| m.get(k).and_then(Json::as_bool).unwrap_or(d);
        SgdOptions {
            lr: f("lr", base.lr),
            momentum: f("momentum", base.momentum),
            dampening: f("dampening", base.dampening),
            weight_decay: f("weight_decay", base.weight_decay),
            nesterov: b("nesterov", base.nesterov),
            maximize: b("maximize", base.maximize),
        }
    }
}

/// Stochastic gradient descent with momentum (PyTorch's `optim.SGD`).
pub struct SGD {
    groups: Vec<Group<SgdOptions>>,
    /// Per parameter (numbered across groups): its momentum buffer.
    momentum_buffers: Vec<Option<Tensor>>,
}

impl SGD {
    /// One group of `params` with `options`; PyTorch's errors for invalid
    /// options.
    pub fn new(params: Vec<Tensor>, options: SgdOptions) -> Result<SGD> {
        options.check()?;
        check_not_empty(&params)?;
        let mut sgd = SGD {
            groups: Vec::new(),
            momentum_buffers: Vec::new(),
        };
        sgd.add_param_group(params, options)?;
        Ok(sgd)
    }

    /// Adds a group with its own options. A parameter of another group is
    /// refused, one listed twice is warned about (and stepped twice), as in
    /// PyTorch.
    pub fn add_param_group(&mut self, params: Vec<Tensor>, options: SgdOptions) -> Result<()> {
        options.check()?;
        check_new_group(&self.groups, &params)?;
        self.momentum_buffers.extend(params.iter().map(|_| None));
        self.groups.push(Group { params, options });
        Ok(())
    }

    /// The options of group `i`, to change (a learning-rate schedule).
    pub fn options_mut(&mut self, group: usize) -> Option<&mut SgdOptions> {
        self.groups.get_mut(group).map(|g| &mut g.options)
    }
}

impl Optimizer for SGD {
    fn step(&mut self) -> Result<()> {
        let buffers = &mut self.momentum_buffers;
        for_each_grad(&self.groups, |this, param, grad, o| {
            let mut grad = match o.maximize {
                true => crate::at::neg(&grad)?,
                false => grad,
            };
            if o.weight_decay != 0.0 {
                grad = crate::at::add_Tensor(&grad, param, Scalar::Float(o.weight_decay))?;
            }
            if o.momentum != 0.0 {
                let buf = match buffers[this].take() {
                    None => crate::at::clone(&crate::at::detach(&grad)?, None)?,
                    Some(mut buf) => {
                        crate::at::mul__Tensor(&mut buf, &wrapped(o.momentum))?;
                        crate::at::add__Tensor(&mut buf, &grad, Scalar::Float(1.0 - o.dampening))?;
                        buf
                    }
                };
                grad = match o.nesterov {
                    true => crate::at::add_Tensor(&grad, &buf, Scalar::Float(o.momentum))?,
                    false => buf.clone(),
                };
                buffers[this] = Some(buf);
            }
            crate::at::add__Tensor(&mut param.clone(), &grad, Scalar::Float(-o.lr))?;
            Ok(())
        })
    }

    fn params(&self) -> Vec<Tensor> {
        all_params(&self.groups)
    }

    fn state_dict(&self) -> OptimizerState {
        let state = self
            .momentum_buffers
            .iter()
            .enumerate()
            .filter_map(|(i, b)| {
                b.as_ref()
                    .map(|b| (i, vec![("momentum_buffer".to_string(), b.clone())]))
            })
            .collect();
        let param_groups = param_groups(&self.groups, |o| o.to_json());
        OptimizerState {
            state,
            param_groups,
        }
    }

    fn load_state_dict(&mut self, state: &OptimizerState) -> Result<()> {
        check_groups(&self.groups, state)?;
        for (g, s) in self.groups.iter_mut().zip(&state.param_groups) {
            g.options = SgdOptions::from_json(s, g.options);
        }
        let params = all_params(&self.groups);
        for (i, (slot, p)) in self.momentum_buffers.iter_mut().zip(&params).enumerate() {
            *slot = state_tensor(state, i, "momentum_buffer", p)?;
        }
        Ok(())
    }
}
