//! Runs one call path of the `overhead` benchmark `N` times and nothing else,
//! for instruction counts that machine noise cannot move:
//!
//! ```text
//! valgrind --tool=callgrind target/release/probe typed 10000
//! valgrind --tool=callgrind target/release/probe typed 20000
//! # instructions per call = (I(20000) - I(10000)) / 10000
//! ```
//!
//! Paths: `direct`, `typed`, `boxed_op` (`boxed_op_call_ns`), `boxed_api`, `subclass_plain`, `subclass_logging`, `fake`,
//! `function_mode`, `dispatch_mode` (as in `overhead`), `autograd_record`
//! (the typed `add` on inputs that require grad: `autograd_record_ns`) and
//! `backward` (`add`, `sum`, `backward()`: `backward_ns`), `view` (a typed
//! `select` on a plain tensor: a view operator, whose kernel marks its result
//! a view of its base), `custom_function` (`apply` of a one-op custom
//! Function on an input that requires grad: `custom_function_ns`, over
//! `typed_mul`, the same `x * 2` typed on a plain input) and
//! `custom_function_backward` (`apply`, `sum`, `backward()`), `train_step`
//! and `train_step_fullbatch` (one step of the runs behind `train_step_us`
//! and `train_step_fullbatch_us`, one thread), `replay` and `replay_eager`
//! (the 30-call program of `replay_ns_per_node`, re-executed from its graph
//! or run eagerly: per node, divide by 30).

use opforge::overrides::{push_dispatch_mode, push_function_mode, Class};
use opforge::{Scalar, Tensor, Value};
use opforge_tests::bench::{PassDispatch, PassFunction};
use std::hint::black_box;
use std::sync::Arc;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(path), Some(n)) = (
        args.get(1),
        args.get(2).and_then(|n| n.parse::<usize>().ok()),
    ) else {
        eprintln!("usage: probe PATH N");
        std::process::exit(2);
    };
    let a = Tensor::from_vec(vec![1.5f32], &[1]).expect("tensor");
    let b = Tensor::from_vec(vec![2.25f32], &[1]).expect("tensor");
    let one = Scalar::Int(1);
    let add = |x: &Tensor, y: &Tensor| {
        black_box(opforge::ops::add_Tensor(black_box(x), black_box(y), one).expect("add"));
    };
    match path.as_str() {
        "direct" => (0..n).for_each(|_| {
            black_box(
                opforge::kernels::cpu::add_Tensor(black_box(&a), black_box(&b), one).expect("add"),
            );
        }),
        "typed" => (0..n).for_each(|_| add(&a, &b)),
        "boxed_op" => {
            let op = opforge::dispatch::dispatcher()
                .find("aten::add.Tensor")
                .expect("add.Tensor is an operator");
            let args = [
                Value::Tensor(a.clone()),
                Value::Tensor(b.clone()),
                Value::Int(1),
            ];
            (0..n).for_each(|_| {
                black_box(op.call_boxed(black_box(&args)).expect("add"));
            })
        }
        "typed_mul" => (0..n).for_each(|_| {
            // `x * 2` as `custom_function`'s Function computes it.
            let two = Tensor::wrapped_number(Scalar::Int(2));
            black_box(opforge::ops::mul_Tensor(black_box(&a), &two).expect("mul"));
        }),
        "boxed_api" => {
            let table = opforge::argparse::ApiTable::builtin();
            (0..n).for_each(|_| {
                black_box(
                    opforge::overrides::call_dispatch(
                        &table,
                        "torch.add",
                        vec![Value::Tensor(a.clone()), Value::Tensor(b.clone())],
                        vec![("alpha", Value::Int(2))],
                    )
                    .expect("add"),
                );
            })
        }
        "subclass_plain" => {
            let plain = Class::subclass("Plain").build();
            let (pa, pb) = (
                a.as_subclass(&plain).unwrap(),
                b.as_subclass(&plain).unwrap(),
            );
            (0..n).for_each(|_| add(&pa, &pb))
        }
        "subclass_logging" => {
            let logging = Class::subclass("Logging")
                .torch_function(|cls, call| call.default(cls))
                .build();
            let (la, lb) = (
                a.as_subclass(&logging).unwrap(),
                b.as_subclass(&logging).unwrap(),
            );
            (0..n).for_each(|_| add(&la, &lb))
        }
        "function_mode" => {
            let _mode = push_function_mode(Arc::new(PassFunction));
            (0..n).for_each(|_| add(&a, &b))
        }
        "dispatch_mode" => {
            let _mode = push_dispatch_mode(Arc::new(PassDispatch));
            (0..n).for_each(|_| add(&a, &b))
        }
        "fake" => {
            let mode = opforge::fake::FakeTensorMode::new();
            let (fa, fb) = (
                mode.from_tensor(&a).expect("fake"),
                mode.from_tensor(&b).expect("fake"),
            );
            let _in = mode.enter();
            (0..n).for_each(|_| add(&fa, &fb))
        }
        "autograd_record" => {
            let (ga, gb) = (a.detach().expect("detach"), b.detach().expect("detach"));
            ga.set_requires_grad(true).expect("float");
            gb.set_requires_grad(true).expect("float");
            (0..n).for_each(|_| add(&ga, &gb))
        }
        "backward" => {
            let (ga, gb) = (a.detach().expect("detach"), b.detach().expect("detach"));
            ga.set_requires_grad(true).expect("float");
            gb.set_requires_grad(true).expect("float");
            (0..n).for_each(|_| {
                let c = opforge::ops::add_Tensor(&ga, &gb, one).expect("add");
                opforge::ops::sum(&c, None)
                    .expect("sum")
                    .backward()
                    .expect("backward");
            })
        }
        "custom_function" => {
            use opforge::autograd::Function;
            let leaf = a.detach().expect("detach");
            leaf.set_requires_grad(true).expect("float");
            (0..n).for_each(|_| {
                black_box(opforge_tests::bench::Double::apply(leaf.clone()).expect("apply"));
            })
        }
        "custom_function_backward" => {
            use opforge::autograd::Function;
            let leaf = a.detach().expect("detach");
            leaf.set_requires_grad(true).expect("float");
            (0..n).for_each(|_| {
                let y = opforge_tests::bench::Double::apply(leaf.clone()).expect("apply");
                opforge::ops::sum(&y, None)
                    .expect("sum")
                    .backward()
                    .expect("backward");
            })
        }
        "train_step" | "train_step_fullbatch" => {
            use opforge_tests::training;
            let id = if path == "train_step" {
                "train/adam_tanh_minibatch"
            } else {
                "train/sgd_momentum_relu_fullbatch"
            };
            let runs = training::load(&opforge_tests::corpus("train_runs.jsonl")).expect("runs");
            let run = runs.iter().find(|r| r.id == id).expect("the run");
            let data = training::digits_data().expect("digits");
            let mut trainer = training::Trainer::new(run, &data).expect("trainer");
            opforge::set_num_threads(1).expect("one thread");
            (0..n).for_each(|step| {
                trainer.step(step).expect("step");
            })
        }
        "view" => {
            let m = Tensor::from_vec(vec![1.0f32; 6], &[2, 3]).expect("tensor");
            (0..n).for_each(|_| {
                black_box(opforge::ops::select_int(black_box(&m), 0, 1).expect("select"));
            })
        }
        "replay" | "replay_eager" => {
            // The `overhead` program of 30 calls (sin, add, mul in turn):
            // re-executed from its graph, or run eagerly; per call, divide
            // by 30.
            fn program(v: &[Value]) -> opforge::Result<Vec<Value>> {
                let x = v[0].as_tensor().expect("a tensor");
                let mut y = x.clone();
                for i in 0..30 {
                    y = match i % 3 {
                        0 => opforge::ops::sin(&y)?,
                        1 => opforge::ops::add_Tensor(&y, x, Scalar::Int(1))?,
                        _ => opforge::ops::mul_Tensor(&y, x)?,
                    };
                }
                Ok(vec![Value::Tensor(y)])
            }
            let inputs = [Value::Tensor(a.clone())];
            let graph = opforge::trace::trace(program, &inputs, opforge::trace::TracingMode::Real)
                .expect("trace");
            let replay = path == "replay";
            (0..n).for_each(|_| {
                black_box(match replay {
                    true => graph.run(black_box(&inputs)).expect("run"),
                    false => program(black_box(&inputs)).expect("eager"),
                });
            })
        }
        other => {
            eprintln!("unknown path {other}");
            std::process::exit(2);
        }
    }
}
