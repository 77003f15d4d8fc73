//! `#[derive(Module)]`: a struct's fields as PyTorch's `nn.Module`
//! attributes. The expected names, orders and printed forms are what PyTorch
//! 2.15 gives for the same module written in Python (`named_parameters`,
//! `state_dict().keys()`, `repr`).

use opforge::nn::{self, Module};
use opforge::optim::{Adam, AdamOptions, Optimizer};
use opforge::{DType, Device, Reduction, Result, Tensor};
use std::sync::Mutex;

/// The default generator is process-wide: tests that draw from it run one at
/// a time.
static GENERATOR: Mutex<()> = Mutex::new(());

fn generator() -> std::sync::MutexGuard<'static, ()> {
    GENERATOR.lock().unwrap_or_else(|e| e.into_inner())
}

fn parameter(values: Vec<f32>) -> Tensor {
    let n = values.len();
    let t = Tensor::from_vec(values, &[n]).unwrap();
    t.set_requires_grad(true).unwrap();
    t
}

/// PyTorch's side of [`Net`]:
///
/// ```python
/// class Net(nn.Module):
///     def __init__(self):
///         super().__init__()
///         self.fc1 = nn.Linear(4, 3)
///         self.scale = nn.Parameter(torch.ones(3))
///         self.register_buffer('running', torch.zeros(3))
///         self.blocks = nn.ModuleList([nn.Linear(3, 3), nn.Linear(3, 3),
///                                      nn.Linear(3, 2, bias=False), nn.ReLU()])
///         self.fc2 = nn.Linear(2, 1)
///         self.register_parameter('shift', None)
/// ```
#[derive(Module)]
struct Net {
    fc1: nn::Linear,
    scale: Tensor,
    #[module(buffer)]
    running: Tensor,
    blocks: Vec<Box<dyn Module>>,
    fc2: nn::Linear,
    shift: Option<Tensor>,
    #[module(skip)]
    width: usize,
}

impl Net {
    fn new() -> Result<Net> {
        Ok(Net {
            fc1: nn::Linear::new(4, 3, true)?,
            scale: parameter(vec![1.0; 3]),
            running: Tensor::zeros(&[3], DType::Float32, Device::Cpu),
            blocks: vec![
                Box::new(nn::Linear::new(3, 3, true)?),
                Box::new(nn::Linear::new(3, 3, true)?),
                Box::new(nn::Linear::new(3, 2, false)?),
                Box::new(nn::ReLU::new()),
            ],
            fc2: nn::Linear::new(2, 1, true)?,
            shift: None,
            width: 3,
        })
    }
}

impl Module for Net {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let mut h = self.fc1.forward(x)?.mul(&self.scale)?;
        for b in &self.blocks {
            h = b.forward(&h)?;
        }
        self.fc2.forward(&h)
    }
}

#[test]
fn fields_are_named_and_ordered_as_pytorch_names_attributes() {
    let _g = generator();
    let net = Net::new().unwrap();
    assert_eq!(net.width, 3);
    let names: Vec<String> = net.named_parameters().into_iter().map(|(n, _)| n).collect();
    assert_eq!(
        names,
        [
            "scale",
            "fc1.weight",
            "fc1.bias",
            "blocks.0.weight",
            "blocks.0.bias",
            "blocks.1.weight",
            "blocks.1.bias",
            "blocks.2.weight",
            "fc2.weight",
            "fc2.bias"
        ]
    );
    let keys: Vec<String> = net.state_dict().keys().map(String::from).collect();
    assert_eq!(keys[..2], ["scale", "running"]);
    assert_eq!(keys.len(), 11);
    let buffers: Vec<String> = net.named_buffers().into_iter().map(|(n, _)| n).collect();
    assert_eq!(buffers, ["running"]);
    // The parameters are the fields themselves, not copies.
    assert!(net.parameters()[1].is_same(&net.fc1.weight()));
    assert_eq!(
        net.to_string(),
        "Net(
  (fc1): Linear(in_features=4, out_features=3, bias=True)
  (blocks): ModuleList(
    (0-1): 2 x Linear(in_features=3, out_features=3, bias=True)
    (2): Linear(in_features=3, out_features=2, bias=False)
    (3): ReLU()
  )
  (fc2): Linear(in_features=2, out_features=1, bias=True)
)"
    );
    let children: Vec<String> = net
        .named_children()
        .into_iter()
        .map(|(n, _)| n.into_owned())
        .collect();
    assert_eq!(children, ["fc1", "blocks", "fc2"]);
}

#[test]
fn a_module_list_has_no_forward_and_prints_empty_as_pytorch() {
    let empty: Vec<nn::Linear> = Vec::new();
    assert_eq!(empty.repr(), "ModuleList()");
    let x = Tensor::from_vec(vec![1.0f32], &[1]).unwrap();
    assert_eq!(
        vec![nn::ReLU::new()].forward(&x).unwrap_err().to_string(),
        "Module [ModuleList] is missing the required \"forward\" function"
    );
}

/// A module with its own training flag, and one without (it follows its
/// children).
#[derive(Module)]
struct WithFlag {
    inner: Vec<nn::ReLU>,
    #[module(training)]
    training: bool,
}

impl Module for WithFlag {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        match self.is_training() {
            true => x.mul_scalar(opforge::Scalar::Float(2.0)),
            false => Ok(x.clone()),
        }
    }
}

#[derive(Module)]
struct Outer {
    a: WithFlag,
    b: nn::Tanh,
}

impl Module for Outer {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        self.b.forward(&self.a.forward(x)?)
    }
}

#[test]
fn train_and_eval_reach_every_field() {
    let mut m = Outer {
        a: WithFlag {
            inner: vec![nn::ReLU::new(), nn::ReLU::new()],
            training: true,
        },
        b: nn::Tanh::new(),
    };
    assert!(m.is_training());
    m.eval();
    assert!(!m.is_training());
    assert!(!m.a.training);
    assert!(!m.b.is_training());
    assert!(m.a.inner.iter().all(|r| !r.is_training()));
    let x = Tensor::from_vec(vec![0.5f32], &[1]).unwrap();
    assert_eq!(m.a.forward(&x).unwrap().to_vec::<f32>().unwrap(), [0.5]);
    m.train(true);
    assert!(m.a.training && m.b.is_training());
    assert_eq!(m.a.forward(&x).unwrap().to_vec::<f32>().unwrap(), [1.0]);
    // With no flag of its own and no children, a module is in training mode.
    #[derive(Module)]
    struct Leaf {
        w: Tensor,
    }
    impl Module for Leaf {
        fn forward(&self, x: &Tensor) -> Result<Tensor> {
            x.mul(&self.w)
        }
    }
    let mut leaf = Leaf {
        w: parameter(vec![1.0]),
    };
    leaf.eval();
    assert!(leaf.is_training());
    assert_eq!(leaf.forward(&x).unwrap().to_vec::<f32>().unwrap(), [0.5]);
}

/// The recipe a user follows: an MLP as a struct, trained with Adam, saved as
/// safetensors and loaded into a fresh instance.
#[derive(Module)]
struct Mlp {
    fc1: nn::Linear,
    fc2: nn::Linear,
}

impl Mlp {
    fn new() -> Result<Mlp> {
        Ok(Mlp {
            fc1: nn::Linear::new(2, 16, true)?,
            fc2: nn::Linear::new(16, 1, true)?,
        })
    }
}

impl Module for Mlp {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        self.fc2.forward(&self.fc1.forward(x)?.tanh()?)
    }
}

#[test]
fn a_derived_mlp_trains_saves_and_loads() {
    let _g = generator();
    opforge::manual_seed(0);
    let model = Mlp::new().unwrap();
    // y = x0 * x1 on a grid of 25 points.
    let (mut xs, mut ys) = (Vec::new(), Vec::new());
    for i in 0..5 {
        for j in 0..5 {
            let (a, b) = (i as f32 / 2.0 - 1.0, j as f32 / 2.0 - 1.0);
            xs.extend([a, b]);
            ys.push(a * b);
        }
    }
    let x = Tensor::from_vec(xs, &[25, 2]).unwrap();
    let y = Tensor::from_vec(ys, &[25, 1]).unwrap();
    let mut opt = Adam::new(
        model.parameters(),
        AdamOptions {
            lr: 0.05,
            ..AdamOptions::default()
        },
    )
    .unwrap();
    let loss_of = |m: &Mlp| -> f32 {
        nn::functional::mse_loss(&m.forward(&x).unwrap(), &y, Reduction::Mean)
            .unwrap()
            .to_vec::<f32>()
            .unwrap()[0]
    };
    let first = loss_of(&model);
    for _ in 0..200 {
        opt.zero_grad().unwrap();
        let loss =
            nn::functional::mse_loss(&model.forward(&x).unwrap(), &y, Reduction::Mean).unwrap();
        loss.backward().unwrap();
        opt.step().unwrap();
    }
    let last = loss_of(&model);
    assert!(last < first / 10.0, "loss {first} -> {last}");

    let path =
        std::env::temp_dir().join(format!("opforge-derive-{}.safetensors", std::process::id()));
    model.save_safetensors(&path).unwrap();
    opforge::manual_seed(1);
    let fresh = Mlp::new().unwrap();
    assert_ne!(loss_of(&fresh), last);
    let report = fresh.load_safetensors(&path, true).unwrap();
    std::fs::remove_file(&path).unwrap();
    assert_eq!(report.to_string(), "<All keys matched successfully>");
    assert_eq!(
        fresh.forward(&x).unwrap().to_vec::<f32>().unwrap(),
        model.forward(&x).unwrap().to_vec::<f32>().unwrap()
    );
}
