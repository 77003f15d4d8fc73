//! Replaying PyTorch's recorded training runs (`train_runs.jsonl`, with
//! `digits.csv.gz`; format in the corpus README): each run's model is built
//! with `opforge::nn`, loaded from the run's initial `state_dict`, and trained
//! with `opforge::optim` on the same batches; every step's loss, the final
//! state and both accuracies are compared with PyTorch's. Used by the
//! `training` binary and the `training` test.
//!
//! ```text
//! cargo run --release -p opforge-tests --bin training [-- --corpus FILE]
//! ```

use flate2::read::GzDecoder;
use opforge::nn::functional::{self as f, Reduction};
use opforge::nn::{self, Module, StateDict};
use opforge::optim::{Adam, AdamOptions, AdamW, Optimizer, SgdOptions, SGD};
use opforge::{at, DType, Device, Tensor};
use serde_json::Value as Json;
use std::io::Read;
use std::path::Path;

/// Training rows (the rest are the test rows), as the corpus fixes them.
pub const TRAIN_ROWS: usize = 1500;

/// One layer of a run's `nn.Sequential`.
#[derive(Clone, Debug, PartialEq)]
pub enum Layer {
    /// `["linear", in, out, bias]`.
    Linear(usize, usize, bool),
    /// `["relu"]`.
    Relu,
    /// `["tanh"]`.
    Tanh,
    /// `["sigmoid"]`.
    Sigmoid,
}

/// A run's loss.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Loss {
    /// `F.cross_entropy(out, y)`.
    CrossEntropy,
    /// `F.nll_loss(torch.log_softmax(out, 1), y)`.
    NllLogSoftmax,
    /// `F.mse_loss(out, F.one_hot(y, 10).to(dtype))`.
    MseOneHot,
}

/// One recorded run.
#[derive(Clone, Debug)]
pub struct Run {
    /// `train/...`.
    pub id: String,
    /// float32 or float64.
    pub dtype: DType,
    /// The model, layer by layer.
    pub model: Vec<Layer>,
    /// The loss.
    pub loss: Loss,
    /// `{"type": "SGD" | "Adam" | "AdamW", ...}` with PyTorch's keywords.
    pub optim: Json,
    /// Rows per batch.
    pub batch_size: usize,
    /// Optimizer steps.
    pub steps: usize,
    /// The initial state, under PyTorch's keys, as nested lists.
    pub init: Vec<(String, Json)>,
    /// Every step's loss, PyTorch's.
    pub losses: Vec<f64>,
    /// The final state, PyTorch's.
    pub state: Vec<(String, Json)>,
    /// PyTorch's final train accuracy.
    pub train_accuracy: f64,
    /// PyTorch's final test accuracy.
    pub test_accuracy: f64,
}

fn field<'a>(j: &'a Json, k: &str) -> Result<&'a Json, String> {
    j.get(k).ok_or_else(|| format!("missing `{k}`"))
}

fn usize_of(j: &Json) -> Result<usize, String> {
    j.as_u64()
        .map(|n| n as usize)
        .ok_or_else(|| format!("expected a count, got {j}"))
}

fn entries(j: &Json) -> Result<Vec<(String, Json)>, String> {
    j.as_object()
        .map(|m| m.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
        .ok_or_else(|| "expected a state dict".to_string())
}

fn layer(j: &Json) -> Result<Layer, String> {
    let a = j.as_array().ok_or("a layer is a list")?;
    match a.first().and_then(Json::as_str) {
        Some("linear") if a.len() == 4 => Ok(Layer::Linear(
            usize_of(&a[1])?,
            usize_of(&a[2])?,
            a[3].as_bool().ok_or("linear's bias flag")?,
        )),
        Some("relu") => Ok(Layer::Relu),
        Some("tanh") => Ok(Layer::Tanh),
        Some("sigmoid") => Ok(Layer::Sigmoid),
        _ => Err(format!("unknown layer {j}")),
    }
}

impl Run {
    fn parse(j: &Json) -> Result<Run, String> {
        let id = field(j, "id")?.as_str().ok_or("id")?.to_string();
        let dtype = match field(j, "dtype")?.as_str() {
            Some("float32") => DType::Float32,
            Some("float64") => DType::Float64,
            other => return Err(format!("unknown dtype {other:?}")),
        };
        let loss = match field(j, "loss")?.as_str() {
            Some("cross_entropy") => Loss::CrossEntropy,
            Some("nll_log_softmax") => Loss::NllLogSoftmax,
            Some("mse_onehot") => Loss::MseOneHot,
            other => return Err(format!("unknown loss {other:?}")),
        };
        let model = field(j, "model")?
            .as_array()
            .ok_or("model is a list")?
            .iter()
            .map(layer)
            .collect::<Result<_, _>>()?;
        let expect = field(j, "expect")?;
        let losses = field(expect, "losses")?
            .as_array()
            .ok_or("losses")?
            .iter()
            .map(|l| l.as_f64().ok_or("a loss"))
            .collect::<Result<_, _>>()?;
        Ok(Run {
            id,
            dtype,
            model,
            loss,
            optim: field(j, "optim")?.clone(),
            batch_size: usize_of(field(j, "batch_size")?)?,
            steps: usize_of(field(j, "steps")?)?,
            init: entries(field(j, "init")?)?,
            losses,
            state: entries(field(expect, "state")?)?,
            train_accuracy: field(expect, "train_accuracy")?
                .as_f64()
                .ok_or("accuracy")?,
            test_accuracy: field(expect, "test_accuracy")?.as_f64().ok_or("accuracy")?,
        })
    }
}

/// Reads a corpus of runs (one JSON object per line; gzipped when its name
/// ends in `.gz`).
pub fn load(path: &Path) -> Result<Vec<Run>, String> {
    let text = match path.extension().is_some_and(|e| e == "gz") {
        true => {
            let file = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
            let mut text = String::new();
            GzDecoder::new(file)
                .read_to_string(&mut text)
                .map_err(|e| format!("{}: {e}", path.display()))?;
            text
        }
        false => std::fs::read_to_string(path).map_err(|e| e.to_string())?,
    };
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .enumerate()
        .map(|(i, l)| {
            let j: Json = serde_json::from_str(l).map_err(|e| format!("line {}: {e}", i + 1))?;
            Run::parse(&j).map_err(|e| format!("line {}: {e}", i + 1))
        })
        .collect()
}

/// The digits data set: 1,797 rows of 64 pixel values (0..16) and a label.
#[derive(Clone, Debug)]
pub struct Digits {
    /// Row-major pixels, 64 per row.
    pub pixels: Vec<f64>,
    /// One label per row.
    pub labels: Vec<i64>,
}

impl Digits {
    /// Rows.
    pub fn len(&self) -> usize {
        self.labels.len()
    }

    /// No rows?
    pub fn is_empty(&self) -> bool {
        self.labels.is_empty()
    }

    /// Rows `rows` as features (`pixels / 16` in `dtype`, `[n, 64]`) and
    /// labels (`int64`, `[n]`).
    pub fn tensors(
        &self,
        rows: std::ops::Range<usize>,
        dtype: DType,
    ) -> opforge::Result<(Tensor, Tensor)> {
        self.rows(&rows.collect::<Vec<_>>(), dtype)
    }

    /// [`Digits::tensors`] of the rows `rows`, in that order.
    pub fn rows(&self, rows: &[usize], dtype: DType) -> opforge::Result<(Tensor, Tensor)> {
        let n = rows.len();
        let px = rows
            .iter()
            .flat_map(|&r| &self.pixels[r * 64..(r + 1) * 64]);
        let x = match dtype {
            DType::Float64 => {
                Tensor::from_vec(px.map(|p| p / 16.0).collect::<Vec<f64>>(), &[n, 64])?
            }
            _ => Tensor::from_vec(
                px.map(|p| (*p as f32) / 16.0).collect::<Vec<f32>>(),
                &[n, 64],
            )?,
        };
        let y = Tensor::from_vec(
            rows.iter().map(|&r| self.labels[r]).collect::<Vec<i64>>(),
            &[n],
        )?;
        Ok((x, y))
    }
}

/// Reads `digits.csv.gz` (gzip, 65 comma-separated integers per row).
pub fn digits(path: &Path) -> Result<Digits, String> {
    let file = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut text = String::new();
    GzDecoder::new(file)
        .read_to_string(&mut text)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    let mut d = Digits {
        pixels: Vec::new(),
        labels: Vec::new(),
    };
    for (i, line) in text.lines().enumerate() {
        let values: Vec<i64> = line
            .split(',')
            .map(|v| {
                v.trim()
                    .parse::<i64>()
                    .map_err(|e| format!("row {}: {e}", i + 1))
            })
            .collect::<Result<_, _>>()?;
        if values.len() != 65 {
            return Err(format!(
                "row {}: {} values, expected 65",
                i + 1,
                values.len()
            ));
        }
        d.pixels.extend(values[..64].iter().map(|&p| p as f64));
        d.labels.push(values[64]);
    }
    Ok(d)
}

/// The repository's copy of the data set.
pub fn digits_data() -> Result<Digits, String> {
    digits(&crate::corpus("digits.csv.gz"))
}

/// A nested list of numbers as a tensor of `dtype`.
pub fn tensor_of(j: &Json, dtype: DType) -> Result<Tensor, String> {
    fn walk(
        j: &Json,
        shape: &mut Vec<usize>,
        depth: usize,
        out: &mut Vec<f64>,
    ) -> Result<(), String> {
        match j {
            Json::Array(items) => {
                if shape.len() == depth {
                    shape.push(items.len());
                } else if shape[depth] != items.len() {
                    return Err("a ragged nested list".into());
                }
                items
                    .iter()
                    .try_for_each(|i| walk(i, shape, depth + 1, out))
            }
            Json::Number(n) => n.as_f64().map(|v| out.push(v)).ok_or("a number".into()),
            other => Err(format!("not a number: {other}")),
        }
    }
    let (mut shape, mut values) = (Vec::new(), Vec::new());
    walk(j, &mut shape, 0, &mut values)?;
    let t = match dtype {
        DType::Float64 => Tensor::from_vec(values, &shape),
        _ => Tensor::from_vec(
            values.iter().map(|&v| v as f32).collect::<Vec<f32>>(),
            &shape,
        ),
    };
    t.map_err(|e| e.to_string())
}

/// The run's model, with fresh parameters (replaced by the run's `init`).
pub fn model(run: &Run) -> opforge::Result<nn::Sequential> {
    let mut seq = nn::Sequential::new();
    for l in &run.model {
        seq.push(match *l {
            Layer::Linear(i, o, b) => {
                Box::new(nn::Linear::with_options(i, o, b, run.dtype, Device::Cpu)?)
            }
            Layer::Relu => Box::new(nn::ReLU::new()),
            Layer::Tanh => Box::new(nn::Tanh::new()),
            Layer::Sigmoid => Box::new(nn::Sigmoid::new()),
        });
    }
    Ok(seq)
}

fn f64_of(j: &Json, k: &str, default: f64) -> f64 {
    j.get(k).and_then(Json::as_f64).unwrap_or(default)
}

fn bool_of(j: &Json, k: &str, default: bool) -> bool {
    j.get(k).and_then(Json::as_bool).unwrap_or(default)
}

/// The run's optimizer over `params`, from its PyTorch keywords.
pub fn optimizer(spec: &Json, params: Vec<Tensor>) -> Result<Box<dyn Optimizer>, String> {
    let adam = |base: AdamOptions| {
        let betas = spec.get("betas").and_then(Json::as_array);
        let beta = |i: usize, d: f64| {
            betas
                .and_then(|b| b.get(i))
                .and_then(Json::as_f64)
                .unwrap_or(d)
        };
        AdamOptions {
            lr: f64_of(spec, "lr", base.lr),
            betas: (beta(0, base.betas.0), beta(1, base.betas.1)),
            eps: f64_of(spec, "eps", base.eps),
            weight_decay: f64_of(spec, "weight_decay", base.weight_decay),
            amsgrad: bool_of(spec, "amsgrad", base.amsgrad),
            maximize: bool_of(spec, "maximize", base.maximize),
        }
    };
    let made: opforge::Result<Box<dyn Optimizer>> = match spec.get("type").and_then(Json::as_str) {
        Some("SGD") => {
            let d = SgdOptions::default();
            SGD::new(
                params,
                SgdOptions {
                    lr: f64_of(spec, "lr", d.lr),
                    momentum: f64_of(spec, "momentum", d.momentum),
                    dampening: f64_of(spec, "dampening", d.dampening),
                    weight_decay: f64_of(spec, "weight_decay", d.weight_decay),
                    nesterov: bool_of(spec, "nesterov", d.nesterov),
                    maximize: bool_of(spec, "maximize", d.maximize),
                },
            )
            .map(|o| Box::new(o) as Box<dyn Optimizer>)
        }
        Some("Adam") => Adam::new(params, adam(AdamOptions::default())).map(|o| Box::new(o) as _),
        Some("AdamW") => AdamW::new(params, adam(AdamOptions::adamw())).map(|o| Box::new(o) as _),
        other => return Err(format!("unknown optimizer {other:?}")),
    };
    made.map_err(|e| e.to_string())
}

/// The run's loss of `out` against labels `y`.
pub fn loss(kind: Loss, out: &Tensor, y: &Tensor, dtype: DType) -> opforge::Result<Tensor> {
    match kind {
        Loss::CrossEntropy => f::cross_entropy(out, y, None, -100, Reduction::Mean, 0.0),
        Loss::NllLogSoftmax => f::nll_loss(
            &f::log_softmax(out, 1, None)?,
            y,
            None,
            -100,
            Reduction::Mean,
        ),
        Loss::MseOneHot => {
            let target = at::_to_copy(
                &f::one_hot(y, 10)?,
                Some(dtype),
                None,
                None,
                None,
                false,
                None,
            )?;
            f::mse_loss(out, &target, Reduction::Mean)
        }
    }
}

/// The fraction of rows whose highest output is their label.
pub fn accuracy(model: &dyn Module, x: &Tensor, y: &Tensor) -> opforge::Result<f64> {
    let _off = opforge::autograd::no_grad();
    let pred = opforge::at::argmax(&model.forward(x)?, Some(1), false)?;
    let hits = pred
        .to_vec::<i64>()?
        .iter()
        .zip(y.to_vec::<i64>()?)
        .filter(|(p, l)| **p == *l)
        .count();
    Ok(hits as f64 / y.shape()[0].max(1) as f64)
}

/// What a run produced.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// Every step's loss.
    pub losses: Vec<f64>,
    /// The final state.
    pub state: StateDict,
    /// Train accuracy after the last step.
    pub train_accuracy: f64,
    /// Test accuracy after the last step.
    pub test_accuracy: f64,
}

/// A run's model, optimizer and training rows, ready to take steps: what
/// [`train`] and the benchmarks (`overhead`, `probe`) share.
pub struct Trainer {
    /// The run's model, with its recorded initial weights.
    pub model: nn::Sequential,
    optimizer: Box<dyn Optimizer>,
    x: Tensor,
    y: Tensor,
    batch_size: usize,
    loss: Loss,
    dtype: DType,
}

impl Trainer {
    /// Builds the run's model, loads its initial `state_dict` and makes its
    /// optimizer, over the first [`TRAIN_ROWS`] rows of `data`.
    pub fn new(run: &Run, data: &Digits) -> Result<Trainer, String> {
        let e = |e: opforge::Error| e.to_string();
        let model = model(run).map_err(e)?;
        let init: StateDict = run
            .init
            .iter()
            .map(|(k, v)| Ok((k.clone(), tensor_of(v, run.dtype)?)))
            .collect::<Result<_, String>>()?;
        model.load_state_dict(&init, true).map_err(e)?;
        let optimizer = optimizer(&run.optim, model.parameters())?;
        let (x, y) = data.tensors(0..TRAIN_ROWS, run.dtype).map_err(e)?;
        Ok(Trainer {
            model,
            optimizer,
            x,
            y,
            batch_size: run.batch_size.max(1),
            loss: run.loss,
            dtype: run.dtype,
        })
    }

    /// The rows of step `step`: batches in order, cycling.
    pub fn batch(&self, step: usize) -> opforge::Result<(Tensor, Tensor)> {
        let b = step % TRAIN_ROWS.div_ceil(self.batch_size);
        let (start, end) = (
            (b * self.batch_size) as i64,
            ((b + 1) * self.batch_size).min(TRAIN_ROWS) as i64,
        );
        Ok((
            at::slice_Tensor(&self.x, 0, Some(start), Some(end), 1)?,
            at::slice_Tensor(&self.y, 0, Some(start), Some(end), 1)?,
        ))
    }

    /// One step as PyTorch takes it: `zero_grad`, forward, loss, `backward`,
    /// `step`. Returns the loss.
    pub fn step_on(&mut self, x: &Tensor, y: &Tensor) -> opforge::Result<Tensor> {
        self.optimizer.zero_grad()?;
        let out = self.model.forward(x)?;
        let l = loss(self.loss, &out, y, self.dtype)?;
        l.backward()?;
        self.optimizer.step()?;
        Ok(l)
    }

    /// Step `step` on its batch ([`Trainer::batch`], [`Trainer::step_on`]).
    pub fn step(&mut self, step: usize) -> opforge::Result<Tensor> {
        let (x, y) = self.batch(step)?;
        self.step_on(&x, &y)
    }
}

/// Trains the run's model as PyTorch did ([`Trainer::step`] per step).
pub fn train(run: &Run, data: &Digits) -> Result<Outcome, String> {
    let e = |e: opforge::Error| e.to_string();
    let mut trainer = Trainer::new(run, data)?;
    let mut losses = Vec::with_capacity(run.steps);
    for step in 0..run.steps {
        let l = trainer.step(step).map_err(e)?;
        losses.push(l.item().map_err(e)?.to_f64());
    }
    let (xt, yt) = data.tensors(TRAIN_ROWS..data.len(), run.dtype).map_err(e)?;
    let model = &trainer.model;
    Ok(Outcome {
        losses,
        state: model.state_dict(),
        train_accuracy: accuracy(model, &trainer.x, &trainer.y).map_err(e)?,
        test_accuracy: accuracy(model, &xt, &yt).map_err(e)?,
    })
}

/// Compares an outcome with the run's record (the README's tolerances);
/// one line per difference.
pub fn compare(run: &Run, got: &Outcome) -> Vec<String> {
    let (loss_rtol, state_atol) = match run.dtype {
        DType::Float64 => (1e-10, 1e-10),
        _ => (1e-5, 1e-5),
    };
    let mut out = Vec::new();
    if got.losses.len() != run.losses.len() {
        out.push(format!(
            "{} losses, expected {}",
            got.losses.len(),
            run.losses.len()
        ));
    }
    for (i, (a, b)) in got.losses.iter().zip(&run.losses).enumerate() {
        if (a - b).abs() > loss_rtol * b.abs() || !a.is_finite() {
            out.push(format!("step {i}: loss {a} vs PyTorch's {b}"));
            break;
        }
    }
    for (k, v) in &run.state {
        let Some(t) = got.state.get(k) else {
            out.push(format!("state: no `{k}`"));
            continue;
        };
        let want = match tensor_of(v, DType::Float64) {
            Ok(w) => w,
            Err(e) => {
                out.push(format!("state `{k}`: {e}"));
                continue;
            }
        };
        let have = at::_to_copy(t, Some(DType::Float64), None, None, None, false, None)
            .and_then(|h| h.to_vec::<f64>());
        match (have, want.to_vec::<f64>()) {
            (Ok(h), Ok(w)) if h.len() == w.len() => {
                let worst = h
                    .iter()
                    .zip(&w)
                    .map(|(a, b)| (a - b).abs())
                    .fold(0.0, f64::max);
                if worst > state_atol || h.iter().any(|v| !v.is_finite()) {
                    out.push(format!("state `{k}`: off by up to {worst:e}"));
                }
            }
            _ => out.push(format!("state `{k}`: shape differs")),
        }
    }
    for (what, a, b) in [
        ("train accuracy", got.train_accuracy, run.train_accuracy),
        ("test accuracy", got.test_accuracy, run.test_accuracy),
    ] {
        if (a - b).abs() > 1e-12 {
            out.push(format!("{what} {a} vs PyTorch's {b}"));
        }
    }
    out
}

/// The result of replaying a corpus.
#[derive(Debug, Default)]
pub struct Report {
    /// Runs that matched.
    pub passed: usize,
    /// Runs that did not.
    pub failed: usize,
    /// `run: problem` lines.
    pub failures: Vec<String>,
}

/// Trains and compares every run.
pub fn replay(runs: &[Run], data: &Digits) -> Report {
    let mut r = Report::default();
    for run in runs {
        let problems = match train(run, data) {
            Ok(got) => compare(run, &got),
            Err(e) => vec![format!("error: {e}")],
        };
        if problems.is_empty() {
            r.passed += 1;
        } else {
            r.failed += 1;
            r.failures
                .extend(problems.into_iter().map(|p| format!("{}: {p}", run.id)));
        }
    }
    r
}
