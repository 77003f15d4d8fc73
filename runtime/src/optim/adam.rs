//! `optim::Adam` and `optim::AdamW`, PyTorch's `_single_tensor_adam` (AdamW
//! is Adam with decoupled weight decay, as in PyTorch).

use super::{all_params, check_groups, check_new_group, check_not_empty, require_nonnegative};
use super::{for_each_grad, param_groups, state_tensor, wrapped};
use super::{Group, Optimizer, OptimizerState};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::tensor::Tensor;
use crate::Scalar;
use serde_json::{json, Map, Value as Json};

/// Adam's (and AdamW's) options. [`AdamOptions::default`] is Adam's
/// defaults; [`AdamOptions::adamw`] AdamW's (weight decay 1e-2).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AdamOptions {
    /// Learning rate (1e-3).
    pub lr: f64,
    /// Decay rates of the first and second moments ((0.9, 0.999)).
    pub betas: (f64, f64),
    /// Added to the denominator (1e-8).
    pub eps: f64,
    /// Weight decay (Adam: 0, added to the gradient; AdamW: 1e-2, applied
    /// to the parameter).
    pub weight_decay: f64,
    /// The AMSGrad variant (false).
    pub amsgrad: bool,
    /// Maximize instead of minimize (false).
    pub maximize: bool,
}

impl Default for AdamOptions {
    fn default() -> AdamOptions {
        AdamOptions {
            lr: 1e-3,
            betas: (0.9, 0.999),
            eps: 1e-8,
            weight_decay: 0.0,
            amsgrad: false,
            maximize: false,
        }
    }
}

impl AdamOptions {
    /// AdamW's defaults (weight decay 1e-2).
    pub fn adamw() -> AdamOptions {
        AdamOptions {
            weight_decay: 1e-2,
            ..AdamOptions::default()
        }
    }

    fn check(&self) -> Result<()> {
        // `optim.Adam`'s checks (`not 0.0 <= x`: NaN is refused).
        require_nonnegative("learning rate", self.lr)?;
        require_nonnegative("epsilon value", self.eps)?;
        for (i, b) in [self.betas.0, self.betas.1].into_iter().enumerate() {
            if !(0.0..1.0).contains(&b) {
                return Err(super::invalid(&format!("beta parameter at index {i}"), b));
            }
        }
        require_nonnegative("weight_decay value", self.weight_decay)
    }

    fn to_json(self, decoupled: bool) -> Map<String, Json> {
        let v = json!({
            "lr": self.lr,
            "betas": [self.betas.0, self.betas.1],
            "eps": self.eps,
            "weight_decay": self.weight_decay,
            "amsgrad": self.amsgrad,
            "maximize": self.maximize,
            "decoupled_weight_decay": decoupled,
        });
        v.as_object().cloned().unwrap_or_default()
    }

    fn from_json(m: &Map<String, Json>, base: AdamOptions) -> AdamOptions {
        let f = |k: &str, d: f64| m.get(k).and_then(Json::as_f64).unwrap_or(d);
        let b = |k: &str, d: bool| m.get(k).and_then(Json::as_bool).unwrap_or(d);
        let betas = m.get("betas").and_then(Json::as_array);
        let beta = |i: usize, d: f64| {
            betas
                .and_then(|v| v.get(i))
                .and_then(Json::as_f64)
                .unwrap_or(d)
        };
        AdamOptions {
            lr: f("lr", base.lr),
            betas: (beta(0, base.betas.0), beta(1, base.betas.1)),
            eps: f("eps", base.eps),
            weight_decay: f("weight_decay", base.weight_decay),
            amsgrad: b("amsgrad", base.amsgrad),
            maximize: b("maximize", base.maximize),
        }
    }
}

/// One parameter's state.
#[derive(Clone, Default)]
struct State {
    /// The step count, a float32 scalar tensor as PyTorch keeps it.
    step: Option<Tensor>,
    exp_avg: Option<Tensor>,
    exp_avg_sq: Option<Tensor>,
    max_exp_avg_sq: Option<Tensor>,
}

/// Adam (PyTorch's `optim.Adam`); with decoupled weight decay, AdamW.
pub struct Adam {
    groups: Vec<Group<AdamOptions>>,
    states: Vec<State>,
    decoupled_weight_decay: bool,
}

/// PyTorch's `optim.AdamW`: [`Adam`] with decoupled weight decay
/// (`param *= 1 - lr * weight_decay` before the update).
pub struct AdamW;

impl AdamW {
    /// One group of `params` with `options` (start from
    /// [`AdamOptions::adamw`] for PyTorch's defaults).
    #[allow(clippy::new_ret_no_self)]
    pub fn new(params: Vec<Tensor>, options: AdamOptions) -> Result<Adam> {
        Adam::with_decoupled_weight_decay(params, options, true)
    }
}

fn zeros_like(t: &Tensor) -> Result<Tensor> {
    crate::at::zeros_like(
        t,
        None,
        None,
        None,
        None,
        Some(crate::dtype::MemoryFormat::Preserve),
    )
}

impl Adam {
    /// One group of `params` with `options`; PyTorch's errors for invalid
    /// options.
    pub fn new(params: Vec<Tensor>, options: AdamOptions) -> Result<Adam> {
        Adam::with_decoupled_weight_decay(params, options, false)
    }

    fn with_decoupled_weight_decay(
        params: Vec<Tensor>,
        options: AdamOptions,
        decoupled: bool,
    ) -> Result<Adam> {
        options.check()?;
        check_not_empty(&params)?;
        let mut adam = Adam {
            groups: Vec::new(),
            states: Vec::new(),
            decoupled_weight_decay: decoupled,
        };
        adam.add_param_group(params, options)?;
        Ok(adam)
    }

    /// Adds a group with its own options. A parameter of another group is
    /// refused, one listed twice is warned about (and stepped twice), as in
    /// PyTorch.
    pub fn add_param_group(&mut self, params: Vec<Tensor>, options: AdamOptions) -> Result<()> {
        options.check()?;
        check_new_group(&self.groups, &params)?;
        self.states.extend(params.iter().map(|_| State::default()));
        self.groups.push(Group { params, options });
        Ok(())
    }

    /// The options of group `i`, to change.
    pub fn options_mut(&mut self, group: usize) -> Option<&mut AdamOptions> {
        self.groups.get_mut(group).map(|g| &mut g.options)
    }

    fn update(
        param: &Tensor,
        grad: Tensor,
        o: &AdamOptions,
        s: &mut State,
        decoupled: bool,
    ) -> Result<()> {
        use crate::at;
        // PyTorch's lazy state initialisation.
        if s.step.is_none() {
            s.step = Some(Tensor::try_zeros(&[], DType::Float32, param.device())?);
            s.exp_avg = Some(zeros_like(param)?);
            s.exp_avg_sq = Some(zeros_like(param)?);
            if o.amsgrad {
                s.max_exp_avg_sq = Some(zeros_like(param)?);
            }
        }
        let (Some(step_t), Some(exp_avg), Some(exp_avg_sq)) = (&s.step, &s.exp_avg, &s.exp_avg_sq)
        else {
            return Err(Error::Runtime(
                "Adam: state missing after initialisation".into(),
            ));
        };
        let mut grad = match o.maximize {
            true => at::neg(&grad)?,
            false => grad,
        };
        at::add__Tensor(&mut step_t.clone(), &wrapped(1.0), Scalar::Int(1))?;
        let mut param = param.clone();
        if o.weight_decay != 0.0 {
            if decoupled {
                at::mul__Tensor(&mut param, &wrapped(1.0 - o.lr * o.weight_decay))?;
            } else {
                grad = at::add_Tensor(&grad, &param, Scalar::Float(o.weight_decay))?;
            }
        }
        let (beta1, beta2) = o.betas;
        at::lerp__Scalar(&mut exp_avg.clone(), &grad, Scalar::Float(1.0 - beta1))?;
        let mut sq = exp_avg_sq.clone();
        at::mul__Tensor(&mut sq, &wrapped(beta2))?;
        at::addcmul_(&mut sq, &grad, &grad, Scalar::Float(1.0 - beta2))?;
        let step = step_t.item()?.to_f64();
        let bias_correction1 = 1.0 - beta1.powf(step);
        let bias_correction2 = 1.0 - beta2.powf(step);
        let step_size = o.lr / bias_correction1;
        let bias_correction2_sqrt = bias_correction2.powf(0.5);
        let second = match (&s.max_exp_avg_sq, o.amsgrad) {
            (Some(max), true) => {
                at::maximum_out(&max.clone(), exp_avg_sq, &mut max.clone())?;
                max.clone()
            }
            _ => exp_avg_sq.clone(),
        };
        let mut denom = at::div_Tensor(&at::sqrt(&second)?, &wrapped(bias_correction2_sqrt))?;
        at::add__Tensor(&mut denom, &wrapped(o.eps), Scalar::Int(1))?;
        at::addcdiv_(&mut param, exp_avg, &denom, Scalar::Float(-step_size))?;
        Ok(())
    }
}

impl Optimizer for Adam {
    fn step(&mut self) -> Result<()> {
        let (states, decoupled) = (&mut self.states, self.decoupled_weight_decay);
        for_each_grad(&self.groups, |this, param, grad, o| {
            Adam::update(param, grad, o, &mut states[this], decoupled)
        })
    }

    fn params(&self) -> Vec<Tensor> {
        all_params(&self.groups)
    }

    fn state_dict(&self) -> OptimizerState {
        let state = self
            .states
            .iter()
            .enumerate()
            .filter(|(_, s)| s.step.is_some())
            .map(|(i, s)| {
                let named = [
                    ("step", &s.step),
                    ("exp_avg", &s.exp_avg),
                    ("exp_avg_sq", &s.exp_avg_sq),
                    ("max_exp_avg_sq", &s.max_exp_avg_sq),
                ];
                let entries = named
                    .into_iter()
                    .filter_map(|(n, t)| t.as_ref().map(|t| (n.to_string(), t.clone())))
                    .collect();
                (i, entries)
            })
            .collect();
        let param_groups = param_groups(&self.groups, |o| o.to_json(self.decoupled_weight_decay));
        OptimizerState {
            state,
            param_groups,
        }
    }

    fn load_state_dict(&mut self, state: &OptimizerState) -> Result<()> {
        check_groups(&self.groups, state)?;
        for (g, s) in self.groups.iter_mut().zip(&state.param_groups) {
            g.options = AdamOptions::from_json(s, g.options);
        }
        let params = all_params(&self.groups);
        for (i, (s, p)) in self.states.iter_mut().zip(&params).enumerate() {
            *s = State {
                step: state_tensor(state, i, "step", p)?,
                exp_avg: state_tensor(state, i, "exp_avg", p)?,
                exp_avg_sq: state_tensor(state, i, "exp_avg_sq", p)?,
                max_exp_avg_sq: state_tensor(state, i, "max_exp_avg_sq", p)?,
            };
        }
        Ok(())
    }
}
