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
//!   a `String` per call.

use opforge::dispatch::dispatcher;
use opforge::{Scalar, Tensor, Value};
use std::hint::black_box;
use std::time::Instant;

/// Calls per timed batch.
const PER_BATCH: usize = 20_000;
/// Timed batches per benchmark.
const ROUNDS: usize = 31;

/// Times several benchmarks *interleaved*: each round runs one batch of each, so
/// that the machine's slow and fast moments fall on all of them alike. Returns,
/// per benchmark, the median over rounds of the mean time per call in a batch.
fn interleaved(benches: &mut [(&str, &mut dyn FnMut())]) -> Vec<f64> {
    for (_, f) in benches.iter_mut() {
        for _ in 0..PER_BATCH {
            f();
        }
    }
    let mut samples = vec![Vec::with_capacity(ROUNDS); benches.len()];
    for _ in 0..ROUNDS {
        for (i, (_, f)) in benches.iter_mut().enumerate() {
            let t = Instant::now();
            for _ in 0..PER_BATCH {
                f();
            }
            samples[i].push(t.elapsed().as_nanos() as f64 / PER_BATCH as f64);
        }
    }
    samples
        .into_iter()
        .map(|mut s| {
            s.sort_by(f64::total_cmp);
            s[ROUNDS / 2]
        })
        .collect()
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
            opforge::argparse::call_dispatch(
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
            opforge::argparse::call_dispatch(
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
    resolve_only();
}

/// `resolve_only_ns`: overload resolution alone (match, bind, no dispatch) of
/// `torch.ops.aten.add(a, b, alpha=2)` among the 16 overloads of `aten::add` in
/// PyTorch's own schema file and registration order (read from `../shared`).
fn resolve_only() {
    let shared = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared");
    let registry =
        opforge::registry::Registry::from_path(shared.join("pytorch/native_functions.yaml"))
            .map_err(|e| e.to_string())
            .and_then(|r| {
                let order =
                    std::fs::read_to_string(shared.join("conformance/aten_overloads.jsonl"))
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
