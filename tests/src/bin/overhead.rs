//! Call-overhead benchmark: median nanoseconds per call of a 1-element f32 `add`,
//! printed one figure per line as `name: value`.
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
//!   bindings (`opforge::BINDINGS`), binding to the schema, boxed dispatch.

use opforge::dispatch::dispatcher;
use opforge::{Scalar, Tensor, Value};
use std::hint::black_box;
use std::time::Instant;

/// Median over `batches` of the mean time per call in a batch of `per_batch` calls.
fn median_ns(mut f: impl FnMut()) -> f64 {
    let (batches, per_batch) = (31, 20_000);
    for _ in 0..per_batch {
        f();
    }
    let mut samples: Vec<f64> = (0..batches)
        .map(|_| {
            let t = Instant::now();
            for _ in 0..per_batch {
                f();
            }
            t.elapsed().as_nanos() as f64 / per_batch as f64
        })
        .collect();
    samples.sort_by(f64::total_cmp);
    samples[batches / 2]
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
    let direct = median_ns(|| {
        black_box(
            opforge::kernels::cpu::add_Tensor(black_box(&a), black_box(&b), one).expect("add"),
        );
    });
    let typed = median_ns(|| {
        black_box(opforge::ops::add_Tensor(black_box(&a), black_box(&b), one).expect("add"));
    });
    let op = dispatcher()
        .find("aten::add.Tensor")
        .expect("add.Tensor is an operator");
    let args = [
        Value::Tensor(a.clone()),
        Value::Tensor(b.clone()),
        Value::Int(1),
    ];
    let boxed = median_ns(|| {
        black_box(op.call_boxed(black_box(&args)).expect("add"));
    });
    let table = opforge::argparse::ApiTable::builtin();
    let api = median_ns(|| {
        black_box(
            opforge::argparse::call_dispatch(
                &table,
                "torch.add",
                vec![Value::Tensor(a.clone()), Value::Tensor(b.clone())],
                vec![("alpha".to_string(), Value::Int(2))],
            )
            .expect("add"),
        );
    });
    println!("direct_kernel_ns: {direct:.1}");
    println!("typed_call_ns: {typed:.1}");
    println!("boxed_op_call_ns: {boxed:.1}");
    println!("boxed_api_call_ns: {api:.1}");
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
    let resolve = median_ns(|| {
        black_box(
            registry
                .resolve("aten::add", black_box(&args), black_box(&kwargs))
                .expect("resolves"),
        );
    });
    println!("resolve_only_ns: {resolve:.1}");
}
