//! `nn` and `optim`: modules' bookkeeping, printing and
//! state dicts, `Linear`'s initialisation, and the optimizers' updates, each
//! against PyTorch 2.15's numbers and messages (measured side by side; quoted
//! here).

use opforge::nn::{
    self, IncompatibleKeys, Member, MemberMut, Module, ModuleCore, ModuleMembers, StateDict,
};
use opforge::optim::{Adam, AdamOptions, AdamW, Optimizer, SgdOptions, SGD};
use opforge::{DType, Device, Result, Tensor};
use std::sync::Mutex;

/// Tests that draw from the default generator (every `Linear` does) run one
/// at a time, so that a seeded test sees only its own draws.
static SEEDED: Mutex<()> = Mutex::new(());

fn generator() -> std::sync::MutexGuard<'static, ()> {
    SEEDED.lock().unwrap_or_else(|e| e.into_inner())
}

fn close(a: &[f64], b: &[f64], tol: f64) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| (x - y).abs() <= tol)
}

fn f64s(t: &Tensor) -> Vec<f64> {
    opforge::at::_to_copy(t, Some(DType::Float64), None, None, None, false, None)
        .unwrap()
        .to_vec::<f64>()
        .unwrap()
}

fn model() -> nn::Sequential {
    nn::Sequential::new()
        .append(nn::Linear::new(4, 3, true).unwrap())
        .append(nn::ReLU::new())
        .append(nn::Linear::new(3, 2, false).unwrap())
        .append(nn::Tanh::new())
        .append(nn::Sigmoid::new())
}

#[test]
fn modules_print_and_name_their_state_as_pytorch_does() {
    let _g = generator();
    let m = model();
    assert_eq!(
        m.to_string(),
        "Sequential(\n  (0): Linear(in_features=4, out_features=3, bias=True)\n  (1): ReLU()\n  (2): Linear(in_features=3, out_features=2, bias=False)\n  (3): Tanh()\n  (4): Sigmoid()\n)"
    );
    let keys: Vec<String> = m.state_dict().keys().map(String::from).collect();
    assert_eq!(keys, ["0.weight", "0.bias", "2.weight"]);
    let names: Vec<String> = m.named_parameters().into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["0.weight", "0.bias", "2.weight"]);
    assert!(m
        .parameters()
        .iter()
        .all(|p| p.requires_grad() && p.is_leaf()));
}

/// The `Linear` of PyTorch's "Extending torch.nn" notes: its own parameters, a buffer, a child, `extra_repr`.
struct Custom {
    core: ModuleCore,
}

impl Custom {
    fn new() -> Result<Custom> {
        let mut core = ModuleCore::new();
        let w = Tensor::from_vec(vec![1.0f32, 1.0], &[2])?;
        w.set_requires_grad(true)?;
        core.register_parameter("weight", Some(w))?;
        core.register_parameter("bias", None)?;
        core.register_buffer(
            "running",
            Some(Tensor::zeros(&[2], DType::Float32, Device::Cpu)),
        )?;
        core.add_module("child", Box::new(nn::Linear::new(2, 2, true)?))?;
        Ok(Custom { core })
    }
}

impl ModuleMembers for Custom {
    fn members<'a>(&'a self, f: &mut dyn FnMut(Member<'a>)) {
        self.core.members(f)
    }
    fn members_mut(&mut self, f: &mut dyn FnMut(MemberMut<'_>)) {
        self.core.members_mut(f)
    }
}

impl Module for Custom {
    fn forward(&self, input: &Tensor) -> Result<Tensor> {
        Ok(input.clone())
    }
    fn name(&self) -> String {
        "L".into()
    }
    fn extra_repr(&self) -> String {
        "input_features=2, output_features=2, bias=False".into()
    }
}

#[test]
fn registration_parameters_buffers_and_children() {
    let _g = generator();
    let mut l = Custom::new().unwrap();
    assert_eq!(
        nn::module_repr(&l),
        "L(\n  input_features=2, output_features=2, bias=False\n  (child): Linear(in_features=2, out_features=2, bias=True)\n)"
    );
    let params: Vec<String> = l.named_parameters().into_iter().map(|(n, _)| n).collect();
    assert_eq!(params, ["weight", "child.weight", "child.bias"]);
    let state: Vec<String> = l.state_dict().keys().map(String::from).collect();
    assert_eq!(state, ["weight", "running", "child.weight", "child.bias"]);
    let err = |r: Result<()>| r.unwrap_err().to_string();
    assert_eq!(
        err(l.core.register_parameter("a.b", None)),
        "parameter name can't contain \".\""
    );
    assert_eq!(
        err(l.core.register_parameter("", None)),
        "parameter name can't be empty string \"\""
    );
    assert_eq!(
        err(l.core.register_parameter("running", None)),
        "attribute 'running' already exists"
    );
    // train / eval reach the children.
    assert!(l.is_training());
    l.eval();
    assert!(!l.is_training());
    assert!(l.core.children().all(|(_, c)| !c.is_training()));
}

#[test]
fn load_state_dict_reports_as_pytorch_does() {
    let _g = generator();
    let m = model();
    let good = m.state_dict();
    assert_eq!(
        m.load_state_dict(&good, true).unwrap().to_string(),
        "<All keys matched successfully>"
    );
    let mut bad: StateDict = good.clone();
    bad.remove("0.bias");
    bad.insert("foo", Tensor::zeros(&[1], DType::Float32, Device::Cpu));
    bad.insert(
        "2.weight",
        Tensor::zeros(&[5, 3], DType::Float32, Device::Cpu),
    );
    assert_eq!(
        m.load_state_dict(&bad, true).unwrap_err().to_string(),
        "Error(s) in loading state_dict for Sequential:\n\tMissing key(s) in state_dict: \"0.bias\". \n\tUnexpected key(s) in state_dict: \"foo\". \n\tsize mismatch for 2.weight: copying a param with shape torch.Size([5, 3]) from checkpoint, the shape in current model is torch.Size([2, 3])."
    );
    let mut partial = good.clone();
    partial.remove("0.bias");
    assert_eq!(
        m.load_state_dict(&partial, false).unwrap(),
        IncompatibleKeys {
            missing_keys: vec!["0.bias".into()],
            unexpected_keys: vec![],
        }
    );
    // Values are copied in place into the module's own tensors.
    let mut ones = good.clone();
    ones.insert(
        "2.weight",
        Tensor::from_vec(vec![1.0f32; 6], &[2, 3]).unwrap(),
    );
    let w = m.named_parameters()[2].1.clone();
    m.load_state_dict(&ones, true).unwrap();
    assert_eq!(w.to_vec::<f32>().unwrap(), vec![1.0; 6]);
}

#[test]
fn linear_is_initialised_as_pytorch_initialises_it() {
    let _g = generator();
    opforge::manual_seed(0);
    let l = nn::Linear::new(3, 2, true).unwrap();
    let w = [
        -0.004322517663240433,
        0.3097158372402191,
        -0.4751853346824646,
        -0.4248946011066437,
        -0.2223689705133438,
        0.15482072532176971,
    ];
    let b = [-0.011439144611358643, 0.45777493715286255];
    assert!(
        close(&f64s(&l.weight()), &w, 1e-7),
        "{:?}",
        f64s(&l.weight())
    );
    assert!(close(&f64s(&l.bias().unwrap()), &b, 1e-7));
    opforge::manual_seed(0);
    let l = nn::Linear::with_options(3, 2, true, DType::Float64, Device::Cpu).unwrap();
    let w = [
        0.5427704542528101,
        0.23996970930833816,
        -0.046900537438113156,
        0.48583757737745076,
        0.16745942958373372,
        0.3361886278485809,
    ];
    let b = [-0.3711136225274598, -0.17192610627289664];
    assert!(
        close(&f64s(&l.weight()), &w, 1e-15),
        "{:?}",
        f64s(&l.weight())
    );
    assert!(close(&f64s(&l.bias().unwrap()), &b, 1e-15));
}

/// Three steps on `sum(p² · [0.5, 1, 2]) + (k + 1) · sum(p)` from
/// `p = [1, -2, 3]` (float64), as the PyTorch script did.
fn run(make: impl Fn(Vec<Tensor>) -> Result<Box<dyn Optimizer>>) -> Vec<f64> {
    let p = Tensor::from_vec(vec![1.0f64, -2.0, 3.0], &[3]).unwrap();
    p.set_requires_grad(true).unwrap();
    let scale = Tensor::from_vec(vec![0.5f64, 1.0, 2.0], &[3]).unwrap();
    let mut opt = make(vec![p.clone()]).unwrap();
    for k in 0..3 {
        opt.zero_grad().unwrap();
        let quad = p.mul(&p).unwrap().mul(&scale).unwrap().sum().unwrap();
        let lin = p
            .sum()
            .unwrap()
            .mul_scalar(opforge::Scalar::Int(k + 1))
            .unwrap();
        quad.add(&lin).unwrap().backward().unwrap();
        opt.step().unwrap();
    }
    p.to_vec::<f64>().unwrap()
}

#[test]
fn optimizers_follow_pytorch_step_by_step() {
    let sgd = |o: SgdOptions| move |ps| SGD::new(ps, o).map(|o| Box::new(o) as Box<dyn Optimizer>);
    let adam =
        |o: AdamOptions| move |ps| Adam::new(ps, o).map(|o| Box::new(o) as Box<dyn Optimizer>);
    let d = SgdOptions::default();
    let cases: Vec<(&str, Vec<f64>, Vec<f64>)> = vec![
        (
            "sgd",
            run(sgd(SgdOptions { lr: 0.1, ..d })),
            vec![0.16800000000000004, -1.548, 0.19199999999999987],
        ),
        (
            "sgd momentum, dampening, weight decay",
            run(sgd(SgdOptions {
                lr: 0.1,
                momentum: 0.9,
                dampening: 0.1,
                weight_decay: 0.01,
                ..d
            })),
            vec![
                -0.32792659481000025,
                -0.9749655673800001,
                -2.2100055094300006,
            ],
        ),
        (
            "sgd nesterov, maximize",
            run(sgd(SgdOptions {
                lr: 0.1,
                momentum: 0.9,
                nesterov: true,
                maximize: true,
                ..d
            })),
            vec![3.5887780000000005, -4.608288, 22.917932],
        ),
        (
            "adam",
            run(adam(AdamOptions {
                lr: 0.1,
                ..AdamOptions::default()
            })),
            vec![0.7016782655514812, -1.7203776186339672, 2.699666575726503],
        ),
        (
            "adam weight decay, amsgrad",
            run(adam(AdamOptions {
                lr: 0.1,
                betas: (0.8, 0.99),
                weight_decay: 0.1,
                amsgrad: true,
                ..AdamOptions::default()
            })),
            vec![0.6984177140684498, -1.7230787060880066, 2.6992560953285674],
        ),
        (
            "adamw",
            run(|ps| {
                AdamW::new(
                    ps,
                    AdamOptions {
                        lr: 0.1,
                        ..AdamOptions::adamw()
                    },
                )
                .map(|o| Box::new(o) as Box<dyn Optimizer>)
            }),
            vec![0.6989755715125613, -1.714833226053568, 2.6909802120199298],
        ),
    ];
    for (name, got, want) in cases {
        assert!(
            close(&got, &want, 1e-13),
            "{name}: {got:?} vs PyTorch's {want:?}"
        );
    }
}

#[test]
fn optimizer_options_are_checked_with_pytorchs_messages() {
    let p = Tensor::from_vec(vec![1.0f64], &[1]).unwrap();
    p.set_requires_grad(true).unwrap();
    let d = SgdOptions::default();
    let sgd = |o: SgdOptions| SGD::new(vec![p.clone()], o).err().unwrap().to_string();
    assert_eq!(
        sgd(SgdOptions { lr: -1.0, ..d }),
        "Invalid learning rate: -1.0"
    );
    assert_eq!(
        sgd(SgdOptions {
            momentum: -0.5,
            ..d
        }),
        "Invalid momentum value: -0.5"
    );
    assert_eq!(
        sgd(SgdOptions {
            weight_decay: -1.0,
            ..d
        }),
        "Invalid weight_decay value: -1.0"
    );
    assert_eq!(
        sgd(SgdOptions {
            nesterov: true,
            ..d
        }),
        "Nesterov momentum requires a momentum and zero dampening"
    );
    let a = AdamOptions::default();
    let adam = |o: AdamOptions| Adam::new(vec![p.clone()], o).err().unwrap().to_string();
    assert_eq!(
        adam(AdamOptions { eps: -1.0, ..a }),
        "Invalid epsilon value: -1.0"
    );
    assert_eq!(
        adam(AdamOptions {
            betas: (1.0, 0.9),
            ..a
        }),
        "Invalid beta parameter at index 0: 1.0"
    );
    assert_eq!(
        adam(AdamOptions {
            betas: (0.9, -0.1),
            ..a
        }),
        "Invalid beta parameter at index 1: -0.1"
    );
    assert_eq!(
        SGD::new(vec![], d).err().unwrap().to_string(),
        "optimizer got an empty parameter list"
    );
    let nonleaf = p.mul_scalar(opforge::Scalar::Int(2)).unwrap();
    assert_eq!(
        SGD::new(vec![nonleaf], d).err().unwrap().to_string(),
        "can't optimize a non-leaf Tensor"
    );
}

#[test]
fn optimizer_state_dicts_round_trip() {
    let p = Tensor::from_vec(vec![1.0f64, -2.0, 3.0], &[3]).unwrap();
    p.set_requires_grad(true).unwrap();
    let mut opt = Adam::new(
        vec![p.clone()],
        AdamOptions {
            lr: 0.1,
            ..AdamOptions::default()
        },
    )
    .unwrap();
    p.set_grad(Some(Tensor::from_vec(vec![1.0f64; 3], &[3]).unwrap()))
        .unwrap();
    opt.step().unwrap();
    let sd = opt.state_dict();
    // PyTorch: {'state': {0: {'step': tensor(1.), 'exp_avg': [0.1]*3, 'exp_avg_sq': [0.001]*3}}, ...}
    let (id, entries) = &sd.state[0];
    assert_eq!(*id, 0);
    let names: Vec<&str> = entries.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["step", "exp_avg", "exp_avg_sq"]);
    assert_eq!(entries[0].1.to_vec::<f32>().unwrap(), vec![1.0]);
    assert!(close(
        &entries[1].1.to_vec::<f64>().unwrap(),
        &[0.1; 3],
        1e-15
    ));
    assert!(close(
        &entries[2].1.to_vec::<f64>().unwrap(),
        &[0.001; 3],
        1e-15
    ));
    assert_eq!(sd.param_groups[0]["lr"], 0.1);
    assert_eq!(sd.param_groups[0]["params"], serde_json::json!([0]));
    // Loaded into a fresh optimizer, the next step is the same.
    let q = Tensor::from_vec(p.to_vec::<f64>().unwrap(), &[3]).unwrap();
    q.set_requires_grad(true).unwrap();
    let mut fresh = Adam::new(vec![q.clone()], AdamOptions::default()).unwrap();
    fresh.load_state_dict(&sd).unwrap();
    for (t, o) in [(&p, &mut opt as &mut dyn Optimizer), (&q, &mut fresh)] {
        t.set_grad(Some(Tensor::from_vec(vec![0.5f64; 3], &[3]).unwrap()))
            .unwrap();
        o.step().unwrap();
    }
    assert_eq!(p.to_vec::<f64>().unwrap(), q.to_vec::<f64>().unwrap());
    // Zeroing gradients sets them to None by default.
    fresh.zero_grad().unwrap();
    assert!(q.grad().is_none());
}

/// `nn::Linear` (and `nn::functional::linear`) take any leading dimensions,
/// as PyTorch's: `[*, in]` → `[*, out]`, a 1-D input gives a 1-D output, a
/// 0-D one is PyTorch's error; forward mode runs through the Function's
/// `jvp`.
#[test]
fn linear_takes_any_leading_dimensions_and_forward_mode() {
    use opforge::autograd::forward_ad;
    let _g = generator();
    let m = nn::Linear::with_options(3, 2, true, DType::Float64, Device::Cpu).unwrap();
    let x = Tensor::from_vec((0..60).map(|i| i as f64 * 0.1).collect(), &[4, 5, 3]).unwrap();
    x.set_requires_grad(true).unwrap();
    let y = m.forward(&x).unwrap();
    assert_eq!(y.shape(), vec![4, 5, 2]);
    let flat = Tensor::from_vec(x.to_vec::<f64>().unwrap(), &[20, 3]).unwrap();
    flat.set_requires_grad(true).unwrap();
    let y2 = m.forward(&flat).unwrap();
    assert_eq!(y.to_vec::<f64>().unwrap(), y2.to_vec::<f64>().unwrap());
    y.sum().unwrap().backward().unwrap();
    let w_grad = m.weight().grad().unwrap().to_vec::<f64>().unwrap();
    m.zero_grad(true).unwrap();
    y2.sum().unwrap().backward().unwrap();
    assert_eq!(m.weight().grad().unwrap().to_vec::<f64>().unwrap(), w_grad);
    assert_eq!(
        x.grad().unwrap().to_vec::<f64>().unwrap(),
        flat.grad().unwrap().to_vec::<f64>().unwrap()
    );
    // 1-D in, 1-D out; 0-D refused.
    let v = Tensor::from_vec(vec![1.0f64, 2.0, 3.0], &[3]).unwrap();
    assert_eq!(m.forward(&v).unwrap().shape(), vec![2]);
    assert_eq!(
        m.forward(&Tensor::scalar(1.0f64)).unwrap_err().to_string(),
        "both arguments to linear need to be at least 1D, but they are 0D and 2D"
    );
    // Forward mode: the tangent of x @ W.T + b along t is t @ W.T.
    let _level = forward_ad::dual_level().unwrap();
    let t = Tensor::from_vec(vec![1.0f64, 0.0, -1.0, 0.5, 0.5, 0.5], &[2, 3]).unwrap();
    let primal = Tensor::from_vec(vec![0.1f64; 6], &[2, 3]).unwrap();
    let dual = forward_ad::make_dual(&primal, &t).unwrap();
    let got = forward_ad::unpack_dual(&m.forward(&dual).unwrap())
        .tangent
        .unwrap();
    let want = opforge::at::mm(&t, &opforge::at::t(&m.weight()).unwrap()).unwrap();
    assert_eq!(got.to_vec::<f64>().unwrap(), want.to_vec::<f64>().unwrap());
}

/// Parameter groups as PyTorch checks them (PyTorch 2.15, side by side): a
/// tensor in two groups is refused, a tensor twice in one group warned
/// about; Adam refuses NaN options (`not 0.0 <= x`), SGD's checks let NaN
/// through (`x < 0.0`).
#[test]
fn parameter_groups_and_nan_options_as_pytorch_checks_them() {
    use opforge::warnings::catch_warnings;
    let p = Tensor::from_vec(vec![1.0f32, 1.0], &[2]).unwrap();
    let q = Tensor::from_vec(vec![1.0f32, 1.0], &[2]).unwrap();
    p.set_requires_grad(true).unwrap();
    q.set_requires_grad(true).unwrap();
    let mut sgd = SGD::new(vec![p.clone()], SgdOptions::default()).unwrap();
    assert_eq!(
        sgd.add_param_group(vec![p.clone(), q.clone()], SgdOptions::default())
            .unwrap_err()
            .to_string(),
        "some parameters appear in more than one parameter group"
    );
    let (made, warnings) =
        catch_warnings(|| SGD::new(vec![p.clone(), p.clone()], SgdOptions::default()));
    assert!(made.is_ok());
    assert_eq!(
        warnings,
        ["optimizer contains a parameter group with duplicate parameters; in future, this will cause an error; see github.com/pytorch/pytorch/issues/40967 for more information"]
    );
    let a = AdamOptions::default();
    let adam = |o: AdamOptions| Adam::new(vec![p.clone()], o).err().map(|e| e.to_string());
    assert_eq!(
        adam(AdamOptions { eps: f64::NAN, ..a }).as_deref(),
        Some("Invalid epsilon value: nan")
    );
    assert_eq!(
        adam(AdamOptions { lr: f64::NAN, ..a }).as_deref(),
        Some("Invalid learning rate: nan")
    );
    assert_eq!(
        adam(AdamOptions {
            weight_decay: f64::NAN,
            ..a
        })
        .as_deref(),
        Some("Invalid weight_decay value: nan")
    );
    assert_eq!(
        adam(AdamOptions {
            betas: (f64::NAN, 0.9),
            ..a
        })
        .as_deref(),
        Some("Invalid beta parameter at index 0: nan")
    );
    let d = SgdOptions::default();
    for o in [
        SgdOptions { lr: f64::NAN, ..d },
        SgdOptions {
            momentum: f64::NAN,
            ..d
        },
    ] {
        assert!(SGD::new(vec![q.clone()], o).is_ok());
    }
}

/// `set_grad` is PyTorch's `t.grad = g`: a gradient of another dtype,
/// device or size is refused with PyTorch's message.
#[test]
fn assigned_gradients_are_checked_as_pytorch_checks_them() {
    let x = Tensor::from_vec(vec![1.0f32, 1.0], &[2]).unwrap();
    x.set_requires_grad(true).unwrap();
    let err = |g: Tensor| x.set_grad(Some(g)).unwrap_err().to_string();
    assert_eq!(
        err(Tensor::zeros(&[3], DType::Float32, Device::Cpu)),
        "attempting to assign a gradient of size '[3]' to a tensor of size '[2]'. Please ensure that the gradient and the tensor are the same size"
    );
    assert_eq!(
        err(Tensor::zeros(&[2], DType::Float64, Device::Cpu)),
        "attempting to assign a gradient with dtype 'double' to a tensor with grad_dtype 'Float'. The gradient must match the tensor's grad_dtype (defaults to the tensor's dtype). You can set the tensor's grad_dtype attribute with a specific dtype, or None to allow any dtype. Set grad_dtype with caution. Diverging the dtypes of a tensor and its gradient may break downstream systems that assume they match."
    );
    assert_eq!(
        err(Tensor::zeros(&[2], DType::Float32, Device::Meta)),
        "attempting to assign a gradient with device type 'meta' to a tensor with device type 'cpu'. Please ensure that the gradient and the tensor are on the same device"
    );
    assert_eq!(err(x.clone()), "can't assign Variable as its own grad");
    assert!(x.grad().is_none());
    x.set_grad(Some(Tensor::from_vec(vec![2.0f32, 3.0], &[2]).unwrap()))
        .unwrap();
    assert_eq!(x.grad().unwrap().to_vec::<f32>().unwrap(), vec![2.0, 3.0]);
    x.set_grad(None).unwrap();
    assert!(x.grad().is_none());
}

/// A loaded optimizer state takes its parameter's dtype (PyTorch's
/// `_process_value_according_to_param_policy`), `step` excepted: Adam's
/// state of a float32 parameter loaded for a float64 one (PyTorch 2.15:
/// `{'step': float32, 'exp_avg': float64, 'exp_avg_sq': float64}`).
#[test]
fn loaded_optimizer_state_takes_the_parameters_dtype() {
    let p32 = Tensor::from_vec(vec![1.0f32, 1.0], &[2]).unwrap();
    p32.set_requires_grad(true).unwrap();
    let mut o = Adam::new(vec![p32.clone()], AdamOptions::default()).unwrap();
    p32.set_grad(Some(Tensor::from_vec(vec![1.0f32, 1.0], &[2]).unwrap()))
        .unwrap();
    o.step().unwrap();
    let p64 = Tensor::from_vec(vec![1.0f64, 1.0], &[2]).unwrap();
    p64.set_requires_grad(true).unwrap();
    let mut o2 = Adam::new(vec![p64.clone()], AdamOptions::default()).unwrap();
    o2.load_state_dict(&o.state_dict()).unwrap();
    let dtypes: Vec<(String, DType)> = o2.state_dict().state[0]
        .1
        .iter()
        .map(|(n, t)| (n.clone(), t.dtype()))
        .collect();
    assert_eq!(
        dtypes,
        [
            ("step".to_string(), DType::Float32),
            ("exp_avg".to_string(), DType::Float64),
            ("exp_avg_sq".to_string(), DType::Float64)
        ]
    );
    p64.set_grad(Some(Tensor::from_vec(vec![1.0f64, 1.0], &[2]).unwrap()))
        .unwrap();
    o2.step().unwrap();
}

/// Copying out of a meta tensor is PyTorch's `NotImplementedError` (into
/// one, only the shapes are checked); `load_state_dict` from meta tensors
/// reports it per parameter, as PyTorch does, and copies what it can.
#[test]
fn copying_out_of_a_meta_tensor_is_refused() {
    let _g = generator();
    let x = Tensor::zeros(&[2], DType::Float32, Device::Cpu);
    let meta = Tensor::zeros(&[2], DType::Float32, Device::Meta);
    let e = opforge::at::copy_(&mut x.clone(), &meta, false).unwrap_err();
    assert!(matches!(e, opforge::Error::NotImplemented(_)));
    assert_eq!(e.to_string(), "Cannot copy out of meta tensor; no data!");
    opforge::at::copy_(&mut meta.clone(), &x, false).unwrap();
    let m = nn::Linear::new(2, 3, true).unwrap();
    let mut sd = StateDict::default();
    sd.insert(
        "weight",
        Tensor::zeros(&[3, 2], DType::Float32, Device::Meta),
    );
    sd.insert("bias", Tensor::from_vec(vec![7.0f32; 3], &[3]).unwrap());
    assert_eq!(
        m.load_state_dict(&sd, true).unwrap_err().to_string(),
        "Error(s) in loading state_dict for Linear:\n\tWhile copying the parameter named \"weight\", whose dimensions in the model are torch.Size([3, 2]) and whose dimensions in the checkpoint are torch.Size([3, 2]), an exception occurred : ('Cannot copy out of meta tensor; no data!',)."
    );
    // The entry that fit was copied.
    assert_eq!(m.bias().unwrap().to_vec::<f32>().unwrap(), vec![7.0; 3]);
}
