//! Saved graphs from bytes: `serde_json`, then `Graph::from_json`. A graph
//! that loads prints (every node named by an identifier, as FX names
//! them), saves and loads again to the same saved form, and runs on small
//! inputs of several shapes and dtypes; nothing panics, aborts or hangs
//! (allocations are capped, so absurd sizes are errors).
#![no_main]

use libfuzzer_sys::fuzz_target;
use opforge::trace::{Graph, NodeKind};
use opforge::{Tensor, Value};

#[path = "../src/stack_class.rs"]
mod stack_class;

/// FX prints a node's name as a Python identifier of ASCII characters.
fn is_identifier(name: &str) -> bool {
    let mut bytes = name.bytes();
    bytes.next().is_some_and(|c| c.is_ascii_alphabetic() || c == b'_')
        && bytes.all(|c| c.is_ascii_alphanumeric() || c == b'_')
}

/// Fresh inputs for `n` placeholders: set `which` of float32 `[2, 3]`,
/// float32 `[3]`, int64 `[2]` or 0-dim float64 tensors.
fn inputs(which: usize, n: usize) -> Vec<Value> {
    (0..n)
        .map(|i| {
            let t = match which {
                0 => Tensor::from_vec(vec![0.5f32, -1.0, 2.0, 0.0, 3.5, -2.5], &[2, 3]),
                1 => Tensor::from_vec(vec![1.0f32 + i as f32, -0.25, 4.0], &[3]),
                2 => Tensor::from_vec(vec![1i64, 0], &[2]),
                _ => Tensor::from_vec(vec![0.75f64], &[]),
            };
            Value::Tensor(t.expect("a small tensor"))
        })
        .collect()
}

fuzz_target!(|data: &[u8]| {
    opforge::set_allocation_limit(Some(16 << 20));
    stack_class::register();
    let Ok(json) = serde_json::from_slice::<serde_json::Value>(data) else {
        return;
    };
    let Ok(g) = Graph::from_json(&json) else {
        return;
    };
    let code = g.to_string();
    for n in g.nodes() {
        assert!(is_identifier(&n.name), "{:?} in\n{code}", n.name);
    }
    // Saved and loaded again, the graph is the same (its objects are new
    // ones, printed at other addresses: the saved forms are compared).
    let saved = g.to_json().expect("a loaded graph saves");
    let again = Graph::from_json(&saved).expect("a saved graph loads");
    assert_eq!(again.to_json().expect("it saves again"), saved, "{code}");
    let placeholders = g
        .nodes()
        .iter()
        .filter(|n| matches!(n.kind, NodeKind::Placeholder))
        .count();
    let n = placeholders - g.tokens();
    for which in 0..4 {
        let _ = g.run(&inputs(which, n));
    }
});
