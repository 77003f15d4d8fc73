//! Call-overhead benchmark: median nanoseconds per call of a 1-element f32 `add`,
//! printed one figure per line as `name: value`. The call paths are timed
//! interleaved (a batch of each per round), so machine noise hits them alike.
//!
//! ```text
//! cargo run --release -p opforge-tests --bin overhead
//! ```
//! - `direct_kernel_ns`: the CPU kernel called as a plain Rust function;
//! - `typed_call_ns`: `opforge::ops::add_Tensor` (dispatch, unboxed kernel pointer);
//! - `boxed_op_call_ns`: the dispatcher's boxed path through an overload handle;
//! - `resolve_only_ns`: schema-level overload resolution alone, for `aten::add`
//!   (16 overloads) in PyTorch's own schema file;
//! - `boxed_api_call_ns`: an API-level boxed call `torch.add(a, b, alpha=2)`:
//!   Python-style argument parsing and overload selection over the runtime's own
//!   bindings (`opforge::BINDINGS`), binding to the schema, boxed dispatch
//!   (keyword names as `&str`);
//! - `boxed_api_call_string_kw_ns`: the same with the keyword name allocated as
//!   a `String` per call;
//! - the override protocols, each the typed call `ops::add_Tensor` again with:
//!   `subclass_plain_ns` both tensors instances of a subclass without a handler
//!   (the default `Tensor.__torch_function__`: result returned as the subclass);
//!   `subclass_logging_ns` a subclass whose handler counts the call (a
//!   thread-local counter) and calls the default (`super().__torch_function__`);
//!   `function_mode_ns` a pass-through function mode (`return func(*args,
//!   **kwargs)`); `dispatch_mode_ns` a pass-through dispatch mode (the call
//!   reaches the `Python` key, the mode calls the operator again);
//!   `fake_call_ns` the call on fakes of both tensors under an entered
//!   `FakeTensorMode` (the Meta kernel on meta tensors, the
//!   result wrapped as a fake). Each line
//!   gives the median time per call and, as `+N`, what the protocol adds: the
//!   median over rounds of the difference to the plain call's batch of the same
//!   round.
//! - autograd: `autograd_record_ns`, the typed `add` on inputs
//!   that require grad minus the same call on inputs that do not (paired per
//!   round, as the protocol figures); `backward_ns`, `add`, `sum`, then
//!   `backward()` end to end on 1-element leaves. The same two figures of
//!   PyTorch on this machine (one thread) are measured in the same run when a
//!   Python with torch is found (`OPFORGE_TORCH_PYTHON`, else
//!   `/work/venv-torch/bin/python`, else `python3`): `pytorch_*` lines.
//! - custom Functions and training: `custom_function_ns`,
//!   `apply` of a one-op Function (`x * 2`, backward `g * 2`) on an input that
//!   requires grad, minus the typed `x * 2` on a plain input (paired per
//!   round; both make the number `2` a wrapped-number tensor per call, as
//!   PyTorch's `a * 2` and the Function's `x * 2` do);
//!   `custom_function_backward_ns`, `apply`, `sum`, `backward()` end to end;
//!   `train_step_us` and `train_step_fullbatch_us`, one training step
//!   (`zero_grad`, forward, loss, `backward`, `step`) of the recorded runs
//!   `train/adam_tanh_minibatch` (batch 100) and
//!   `train/sgd_momentum_relu_fullbatch` (batch 1,500), median over steps;
//!   PyTorch's four figures measured the same way in the same run (both on one
//!   thread).
//! - custom classes: `custom_class_method_ns`, a boxed method
//!   call (`obj.call_method("add", &[Int])`) on an object whose method locks a
//!   counter and returns it (`custom_class_method0_ns`: a method without
//!   arguments, `size`).
//! - graph capture: a program of 30 typed calls (`sin`, `add`,
//!   `mul` in turn on a 1-element tensor) run eagerly, traced, and its graph
//!   re-executed, interleaved: `trace_ns_per_node`, a whole `trace` (the
//!   calls included) per recorded node, and what it adds over the eager
//!   program per node; `replay_ns_per_node`, `Graph::run` over the eager
//!   program, per node.

use opforge::dispatch::dispatcher;
use opforge::{Scalar, Tensor, Value};
use std::hint::black_box;
use std::time::Instant;

/// A named benchmark that runs a batch of `n` calls.
type Batch<'a> = (&'a str, Box<dyn FnMut(usize) + 'a>);

/// Calls per timed batch.
const PER_BATCH: usize = 20_000;
/// Timed batches per benchmark.
const ROUNDS: usize = 31;

/// Times several benchmarks *interleaved*: each round runs one batch of each, so
/// that the machine's slow and fast moments fall on all of them alike. Returns,
/// per benchmark, the median over rounds of the mean time per call in a batch.
fn interleaved(benches: &mut [(&str, &mut dyn FnMut())]) -> Vec<f64> {
    let mut batches: Vec<Batch<'_>> = benches
        .iter_mut()
        .map(|(name, f)| {
            let batch: Box<dyn FnMut(usize)> = Box::new(move |n| {
                for _ in 0..n {
                    f();
                }
            });
            (*name, batch)
        })
        .collect();
    interleaved_batches(&mut batches)
}

/// [`interleaved`] over closures that run a whole batch of `n` calls (so a
/// benchmark can set a mode up around its batch).
fn interleaved_batches(benches: &mut [Batch<'_>]) -> Vec<f64> {
    interleaved_samples(benches, ROUNDS)
        .into_iter()
        .map(median)
        .collect()
}

/// Per benchmark, the mean time per call of each of `rounds` interleaved batches.
fn interleaved_samples(benches: &mut [Batch<'_>], rounds: usize) -> Vec<Vec<f64>> {
    for (_, f) in benches.iter_mut() {
        f(PER_BATCH);
    }
    let mut samples = vec![Vec::with_capacity(rounds); benches.len()];
    for _ in 0..rounds {
        for (i, (_, f)) in benches.iter_mut().enumerate() {
            let t = Instant::now();
            f(PER_BATCH);
            samples[i].push(t.elapsed().as_nanos() as f64 / PER_BATCH as f64);
        }
    }
    samples
}

/// The median over rounds of `with - without` (paired per round, so a slow
/// moment of the machine falls on both sides).
fn paired_difference(with: &[f64], without: &[f64]) -> f64 {
    median(with.iter().zip(without).map(|(x, b)| x - b).collect())
}

fn median(mut s: Vec<f64>) -> f64 {
    s.sort_by(f64::total_cmp);
    s[s.len() / 2]
}

fn main() {
    let a = Tensor::from_vec(vec![1.5f32], &[1]).expect("tensor");
    let b = Tensor::from_vec(vec![2.25f32], &[1]).expect("tensor");
    let one = Scalar::Int(1);
    assert!(
        dispatcher().registration_errors().is_empty(),
        "{:?}",
        dispatcher().registration_errors()
    );
    let op = dispatcher()
        .find("aten::add.Tensor")
        .expect("add.Tensor is an operator");
    let args = [
        Value::Tensor(a.clone()),
        Value::Tensor(b.clone()),
        Value::Int(1),
    ];
    let table = opforge::argparse::ApiTable::builtin();
    let mut direct = || {
        black_box(
            opforge::kernels::cpu::add_Tensor(black_box(&a), black_box(&b), one).expect("add"),
        );
    };
    let mut typed = || {
        black_box(opforge::ops::add_Tensor(black_box(&a), black_box(&b), one).expect("add"));
    };
    let mut boxed = || {
        black_box(op.call_boxed(black_box(&args)).expect("add"));
    };
    let mut api = || {
        black_box(
            opforge::overrides::call_dispatch(
                &table,
                "torch.add",
                vec![Value::Tensor(a.clone()), Value::Tensor(b.clone())],
                vec![("alpha", Value::Int(2))],
            )
            .expect("add"),
        );
    };
    let mut api_string_kw = || {
        black_box(
            opforge::overrides::call_dispatch(
                &table,
                "torch.add",
                vec![Value::Tensor(a.clone()), Value::Tensor(b.clone())],
                vec![("alpha".to_string(), Value::Int(2))],
            )
            .expect("add"),
        );
    };
    let mut benches: [(&str, &mut dyn FnMut()); 5] = [
        ("direct_kernel_ns", &mut direct),
        ("typed_call_ns", &mut typed),
        ("boxed_op_call_ns", &mut boxed),
        ("boxed_api_call_ns", &mut api),
        ("boxed_api_call_string_kw_ns", &mut api_string_kw),
    ];
    let figures = interleaved(&mut benches);
    for ((name, _), ns) in benches.iter().zip(figures) {
        println!("{name}: {ns:.1}");
    }
    overrides(&a, &b);
    autograd(&a, &b);
    custom_function(&a);
    custom_class_method();
    tracing(&a);
    training_steps();
    resolve_only();
}

/// `custom_function_ns` and `custom_function_backward_ns` (module docs).
fn custom_function(a: &Tensor) {
    use opforge::autograd::Function;
    use opforge_tests::bench::Double;
    let leaf = a.detach().expect("detach");
    leaf.set_requires_grad(true).expect("float");
    let mut benches: Vec<Batch<'_>> = vec![
        (
            "typed_mul_ns",
            Box::new(|n| {
                (0..n).for_each(|_| {
                    // `x * 2`, as `Double::forward` computes it.
                    let two = Tensor::wrapped_number(Scalar::Int(2));
                    black_box(opforge::ops::mul_Tensor(black_box(a), &two).expect("mul"));
                })
            }),
        ),
        (
            "custom_function_ns",
            Box::new(|n| {
                (0..n).for_each(|_| {
                    black_box(Double::apply(black_box(leaf.clone())).expect("apply"));
                })
            }),
        ),
    ];
    let samples = interleaved_samples(&mut benches, ROUNDS);
    let added = paired_difference(&samples[1], &samples[0]);
    println!(
        "custom_function_ns: +{added:.1} (apply {:.1}, typed mul {:.1})",
        median(samples[1].clone()),
        median(samples[0].clone())
    );
    let mut backward = || {
        let y = Double::apply(leaf.clone()).expect("apply");
        opforge::ops::sum(&y, None)
            .expect("sum")
            .backward()
            .expect("backward");
    };
    let mut benches: [(&str, &mut dyn FnMut()); 1] =
        [("custom_function_backward_ns", &mut backward)];
    let figures = interleaved(&mut benches);
    println!("custom_function_backward_ns: {:.1}", figures[0]);
}

/// `custom_class_method_ns` (module docs).
fn custom_class_method() {
    use opforge::classes::{self, Class};
    use std::sync::Mutex;
    struct Counter(Mutex<i64>);
    Class::<Counter>::new("bench", "Counter")
        .init(|| Counter(Mutex::new(0)))
        .def("add", |c: &Counter, k: i64| {
            let mut n = c.0.lock().unwrap_or_else(|e| e.into_inner());
            *n += k;
            *n
        })
        .def("size", |c: &Counter| {
            *c.0.lock().unwrap_or_else(|e| e.into_inner())
        })
        .register()
        .expect("registered once");
    let obj = classes::instantiate("bench::Counter", &[]).expect("instantiate");
    let one = [Value::Int(1)];
    let mut add = || {
        black_box(
            obj.call_method(black_box("add"), black_box(&one))
                .expect("add"),
        );
    };
    let mut size = || {
        black_box(obj.call_method(black_box("size"), &[]).expect("size"));
    };
    let mut benches: [(&str, &mut dyn FnMut()); 2] = [
        ("custom_class_method_ns", &mut add),
        ("custom_class_method0_ns", &mut size),
    ];
    let figures = interleaved(&mut benches);
    for ((name, _), ns) in benches.iter().zip(figures) {
        println!("{name}: {ns:.1}");
    }
}

/// `trace_ns_per_node` and `replay_ns_per_node` (module docs).
fn tracing(a: &Tensor) {
    use opforge::trace::{trace, TracingMode};
    const CALLS: usize = 30;
    fn program(v: &[Value]) -> opforge::Result<Vec<Value>> {
        let x = v[0].as_tensor().expect("a tensor");
        let mut y = x.clone();
        for i in 0..CALLS {
            y = match i % 3 {
                0 => opforge::ops::sin(&y)?,
                1 => opforge::ops::add_Tensor(&y, x, Scalar::Int(1))?,
                _ => opforge::ops::mul_Tensor(&y, x)?,
            };
        }
        Ok(vec![Value::Tensor(y)])
    }
    // A batch runs one program per `SCALE` calls of the others' batches.
    const SCALE: usize = 100;
    let inputs = [Value::Tensor(a.clone())];
    let graph = trace(program, &inputs, TracingMode::Real).expect("trace");
    assert_eq!(graph.targets().len(), CALLS);
    let mut benches: Vec<Batch<'_>> = vec![
        (
            "eager",
            Box::new(|n| {
                (0..n / SCALE).for_each(|_| {
                    black_box(program(black_box(&inputs)).expect("eager"));
                })
            }),
        ),
        (
            "trace",
            Box::new(|n| {
                (0..n / SCALE).for_each(|_| {
                    black_box(
                        trace(program, black_box(&inputs), TracingMode::Real).expect("trace"),
                    );
                })
            }),
        ),
        (
            "replay",
            Box::new(|n| {
                (0..n / SCALE).for_each(|_| {
                    black_box(graph.run(black_box(&inputs)).expect("run"));
                })
            }),
        ),
    ];
    let samples = interleaved_samples(&mut benches, ROUNDS);
    let per_node = |x: f64| x * SCALE as f64 / CALLS as f64;
    println!(
        "trace_ns_per_node: {:.1} (+{:.1} over the eager program's {:.1} per call)",
        per_node(median(samples[1].clone())),
        per_node(paired_difference(&samples[1], &samples[0])),
        per_node(median(samples[0].clone()))
    );
    println!(
        "replay_ns_per_node: +{:.1} (graph run {:.1} per node)",
        per_node(paired_difference(&samples[2], &samples[0])),
        per_node(median(samples[2].clone()))
    );
}

/// Median microseconds per training step of a recorded run (module docs).
fn train_step_us(
    run: &opforge_tests::training::Run,
    data: &opforge_tests::training::Digits,
) -> f64 {
    let mut trainer = opforge_tests::training::Trainer::new(run, data).expect("trainer");
    let batches = opforge_tests::training::TRAIN_ROWS.div_ceil(run.batch_size);
    let mut times = Vec::new();
    for step in 0..(10 + 4 * batches).max(60) {
        let (x, y) = trainer.batch(step).expect("batch");
        let t = Instant::now();
        trainer.step_on(&x, &y).expect("step");
        if step >= 10 {
            times.push(t.elapsed().as_nanos() as f64 / 1e3);
        }
    }
    median(times)
}

/// `train_step_us`, `train_step_fullbatch_us`, then PyTorch's figures.
fn training_steps() {
    use opforge_tests::training;
    let runs = training::load(&opforge_tests::corpus("train_runs.jsonl")).expect("runs");
    let data = training::digits_data().expect("digits");
    // One thread, as PyTorch is measured.
    let threads = opforge::get_num_threads();
    opforge::set_num_threads(1).expect("one thread");
    for (id, line) in [
        ("train/adam_tanh_minibatch", "train_step_us"),
        (
            "train/sgd_momentum_relu_fullbatch",
            "train_step_fullbatch_us",
        ),
    ] {
        match runs.iter().find(|r| r.id == id) {
            Some(run) => println!("{line}: {:.1}", train_step_us(run, &data)),
            None => println!("{line}: n/a (no run {id})"),
        }
    }
    opforge::set_num_threads(threads).expect("threads restored");
    pytorch_function_and_training();
}

/// PyTorch's issue-22 figures, measured now the same way.
fn pytorch_function_and_training() {
    let script = format!(
        r#"
import time, gzip, torch
import torch.nn as nn, torch.nn.functional as F
torch.set_num_threads(1)
class Double(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x): return x * 2
    @staticmethod
    def backward(ctx, g): return g * 2
a = torch.tensor([1.5]); leaf = a.clone().requires_grad_()
def plain(n):
    for _ in range(n): a * 2
def apply(n):
    for _ in range(n): Double.apply(leaf)
def backward(n):
    for _ in range(n): Double.apply(leaf).sum().backward()
def batch(f, n):
    t = time.perf_counter_ns(); f(n); return (time.perf_counter_ns() - t) / n
n = 2000
for f in (plain, apply, backward): f(n)
diffs, backs = [], []
for _ in range(31):
    p = batch(plain, n); r = batch(apply, n); diffs.append(r - p); backs.append(batch(backward, n))
med = lambda xs: sorted(xs)[len(xs) // 2]
print(f"pytorch_custom_function_ns: +{{med(diffs):.1f}}")
print(f"pytorch_custom_function_backward_ns: {{med(backs):.1f}}")
rows = [list(map(int, l.split(","))) for l in gzip.open("{data}", "rt").read().split()]
X = torch.tensor([r[:64] for r in rows[:1500]], dtype=torch.float32) / 16
Y = torch.tensor([r[64] for r in rows[:1500]])
def step_us(model, opt, bs):
    nb = -(-1500 // bs); times = []
    for k in range(max(10 + 4 * nb, 60)):
        b = k % nb; xb = X[b*bs:(b+1)*bs]; yb = Y[b*bs:(b+1)*bs]
        t = time.perf_counter_ns()
        opt.zero_grad(); loss = F.cross_entropy(model(xb), yb); loss.backward(); opt.step()
        if k >= 10: times.append((time.perf_counter_ns() - t) / 1e3)
    return med(times)
m = nn.Sequential(nn.Linear(64, 32), nn.Tanh(), nn.Linear(32, 10))
print(f"pytorch_train_step_us: {{step_us(m, torch.optim.Adam(m.parameters(), lr=0.01), 100):.1f}}")
m = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10))
print(f"pytorch_train_step_fullbatch_us: {{step_us(m, torch.optim.SGD(m.parameters(), lr=0.5, momentum=0.9), 1500):.1f}}")
"#,
        data = opforge_tests::corpus("digits.csv.gz").display()
    );
    run_pytorch(
        &script,
        &[
            "pytorch_custom_function_ns",
            "pytorch_custom_function_backward_ns",
            "pytorch_train_step_us",
            "pytorch_train_step_fullbatch_us",
        ],
    );
}

/// The autograd figures (see the module docs), then PyTorch's.
fn autograd(a: &Tensor, b: &Tensor) {
    let one = Scalar::Int(1);
    let (ga, gb) = (a.detach().expect("detach"), b.detach().expect("detach"));
    ga.set_requires_grad(true).expect("float");
    gb.set_requires_grad(true).expect("float");
    let add = |x: &Tensor, y: &Tensor| {
        black_box(opforge::ops::add_Tensor(black_box(x), black_box(y), one).expect("add"));
    };
    let mut benches: Vec<Batch<'_>> = vec![
        (
            "typed_call_ns",
            Box::new(|n| (0..n).for_each(|_| add(a, b))),
        ),
        (
            "autograd_record_ns",
            Box::new(|n| (0..n).for_each(|_| add(&ga, &gb))),
        ),
    ];
    let samples = interleaved_samples(&mut benches, 3 * ROUNDS);
    let added = paired_difference(&samples[1], &samples[0]);
    println!(
        "autograd_record_ns: +{added:.1} (add on inputs that require grad {:.1}, typed_call_ns {:.1})",
        median(samples[1].clone()),
        median(samples[0].clone())
    );
    let mut backward = || {
        let c = opforge::ops::add_Tensor(&ga, &gb, one).expect("add");
        let s = opforge::ops::sum(&c, None).expect("sum");
        s.backward().expect("backward");
    };
    let mut benches: [(&str, &mut dyn FnMut()); 1] = [("backward_ns", &mut backward)];
    let figures = interleaved(&mut benches);
    println!("backward_ns: {:.1}", figures[0]);
    pytorch_autograd();
}

/// PyTorch's `autograd_record_ns` and `backward_ns`, measured now the same
/// way (interleaved batches, medians), by the Python that has torch.
fn pytorch_autograd() {
    const SCRIPT: &str = r#"
import time, torch
torch.set_num_threads(1)
a = torch.tensor([1.5]); b = torch.tensor([2.25])
ga = a.clone().requires_grad_(); gb = b.clone().requires_grad_()
def plain(n):
    for _ in range(n): torch.add(a, b)
def record(n):
    for _ in range(n): torch.add(ga, gb)
def backward(n):
    for _ in range(n): torch.add(ga, gb).sum().backward()
def batch(f, n):
    t = time.perf_counter_ns(); f(n); return (time.perf_counter_ns() - t) / n
n = 2000
for f in (plain, record, backward): f(n)
diffs, backs = [], []
for _ in range(31):
    p = batch(plain, n); r = batch(record, n); diffs.append(r - p); backs.append(batch(backward, n))
med = lambda xs: sorted(xs)[len(xs) // 2]
print(f"pytorch_autograd_record_ns: +{med(diffs):.1f}")
print(f"pytorch_backward_ns: {med(backs):.1f}")
"#;
    run_pytorch(
        SCRIPT,
        &["pytorch_autograd_record_ns", "pytorch_backward_ns"],
    );
}

/// Runs `script` with the first Python that has torch
/// (`OPFORGE_TORCH_PYTHON`, else `/work/venv-torch/bin/python`, else
/// `python3`) and prints what it prints; without one, each of `lines` as
/// `n/a`.
fn run_pytorch(script: &str, lines: &[&str]) {
    let candidates = [
        std::env::var("OPFORGE_TORCH_PYTHON").ok(),
        Some("/work/venv-torch/bin/python".to_string()),
        Some("python3".to_string()),
    ];
    for python in candidates.into_iter().flatten() {
        let Ok(out) = std::process::Command::new(&python)
            .args(["-W", "ignore", "-c", script])
            .output()
        else {
            continue;
        };
        if out.status.success() {
            print!("{}", String::from_utf8_lossy(&out.stdout));
            return;
        }
    }
    for line in lines {
        println!("{line}: n/a (no Python with torch)");
    }
}

/// The override-protocol figures, timed interleaved with `typed_call_ns` again.
fn overrides(a: &Tensor, b: &Tensor) {
    use opforge::overrides::{push_dispatch_mode, push_function_mode, Class};
    use opforge::overrides::{TorchDispatchMode, TorchFunctionMode};
    use opforge_tests::bench::{PassDispatch, PassFunction};
    use std::cell::Cell;
    use std::sync::Arc;

    // The handler's own work is kept to a thread-local count (no atomic), so the
    // figure is what the protocol adds.
    thread_local! {
        static CALLS: Cell<usize> = const { Cell::new(0) };
    }
    let one = Scalar::Int(1);
    let plain = Class::subclass("Plain").build();
    let logging = Class::subclass("Logging")
        .torch_function(|cls, call| {
            CALLS.with(|c| c.set(c.get() + 1));
            call.default(cls)
        })
        .build();
    let (pa, pb) = (
        a.as_subclass(&plain).expect("subclass"),
        b.as_subclass(&plain).expect("subclass"),
    );
    let (la, lb) = (
        a.as_subclass(&logging).expect("subclass"),
        b.as_subclass(&logging).expect("subclass"),
    );
    let add = |x: &Tensor, y: &Tensor| {
        black_box(opforge::ops::add_Tensor(black_box(x), black_box(y), one).expect("add"));
    };
    let fake_mode = opforge::fake::FakeTensorMode::new();
    let (fa, fb) = (
        fake_mode.from_tensor(a).expect("fake"),
        fake_mode.from_tensor(b).expect("fake"),
    );
    let function_mode: Arc<dyn TorchFunctionMode> = Arc::new(PassFunction);
    let dispatch_mode: Arc<dyn TorchDispatchMode> = Arc::new(PassDispatch);
    let mut benches: Vec<Batch<'_>> = vec![
        (
            "typed_call_ns",
            Box::new(|n| (0..n).for_each(|_| add(a, b))),
        ),
        (
            "subclass_plain_ns",
            Box::new(|n| (0..n).for_each(|_| add(&pa, &pb))),
        ),
        (
            "subclass_logging_ns",
            Box::new(|n| (0..n).for_each(|_| add(&la, &lb))),
        ),
        (
            "function_mode_ns",
            Box::new(|n| {
                let _mode = push_function_mode(function_mode.clone());
                (0..n).for_each(|_| add(a, b))
            }),
        ),
        (
            "dispatch_mode_ns",
            Box::new(|n| {
                let _mode = push_dispatch_mode(dispatch_mode.clone());
                (0..n).for_each(|_| add(a, b))
            }),
        ),
        (
            "fake_call_ns",
            Box::new(|n| {
                let _mode = fake_mode.enter();
                (0..n).for_each(|_| add(&fa, &fb))
            }),
        ),
    ];
    // What a protocol adds is the median over rounds of the difference to the
    // plain call's batch of the same round: paired, so a slow moment of the
    // machine that hits a round hits both sides of its difference.
    let samples = interleaved_samples(&mut benches, 3 * ROUNDS);
    let base = &samples[0];
    for ((name, _), s) in benches.iter().zip(&samples).skip(1) {
        let added = paired_difference(s, base);
        println!(
            "{name}: {:.1} (+{added:.1} over typed_call_ns {:.1})",
            median(s.clone()),
            median(base.clone())
        );
    }
    assert!(CALLS.with(Cell::get) > 0, "the logging handler ran");
}

/// `resolve_only_ns`: overload resolution alone (match, bind, no dispatch) of
/// `torch.ops.aten.add(a, b, alpha=2)` among the 16 overloads of `aten::add` in
/// PyTorch's own schema file and registration order (from `tests/data/`).
fn resolve_only() {
    let registry =
        opforge::registry::Registry::from_path(opforge_tests::pytorch("native_functions.yaml"))
            .map_err(|e| e.to_string())
            .and_then(|r| {
                let order = std::fs::read_to_string(opforge_tests::corpus("aten_overloads.jsonl"))
                    .map_err(|e| e.to_string())?;
                r.with_overload_order(&order)
            });
    let registry = match registry {
        Ok(r) => r,
        Err(e) => {
            println!("resolve_only_ns: n/a ({e})");
            return;
        }
    };
    let n = registry.packet("aten::add").len();
    assert!(n >= 10, "aten::add has {n} overloads");
    let a = Tensor::from_vec(vec![1.5f32], &[1]).expect("tensor");
    let args = [Value::Tensor(a.clone()), Value::Tensor(a)];
    let kwargs = [("alpha".to_string(), Value::Int(2))];
    let mut resolve = || {
        black_box(
            registry
                .resolve("aten::add", black_box(&args), black_box(&kwargs))
                .expect("resolves"),
        );
    };
    let figures = interleaved(&mut [("resolve_only_ns", &mut resolve)]);
    println!("resolve_only_ns: {:.1}", figures[0]);
}
