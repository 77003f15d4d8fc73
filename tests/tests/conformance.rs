//! Calls recorded from PyTorch 2.15 replayed against PyTorch's own
//! `native_functions.yaml` (+ `deprecated.yaml`) with its registration order
//! (`aten_overloads.jsonl`): the chosen overload and the normalized args/kwargs,
//! or an error where PyTorch raised one.
//!
//! - `ops_calls.jsonl`: schema level, `torch.ops.aten.<name>(...)` on packets;
//! - `api_calls.jsonl`: API level, `torch.<fn>(...)`, `Tensor.<method>(...)`.
//!
//! 100% of both sample corpora match today, with 100% of error messages word for
//! word; the floor is 99% matched and 95% exact messages.

use opforge_tests::conformance::{pytorch_registry, Summary};
use opforge_tests::{pytorch, read};

fn replay(corpus: &str, min_cases: usize) {
    let registry = pytorch_registry(
        &pytorch("native_functions.yaml"),
        &opforge_tests::corpus("aten_overloads.jsonl"),
    )
    .expect("registry");
    let text = read(&opforge_tests::corpus(corpus));
    let s = Summary::run(&registry, &text).expect("corpus parses");
    let report = s.report(3);
    println!("{report}");
    let total = s.outcomes.len();
    assert!(total > min_cases, "{corpus} has {total} cases");
    assert_eq!(s.unhandled(), 0, "{report}");
    let rate = s.passed() as f64 / total as f64;
    let (m, e) = s.messages();
    let msg_rate = m as f64 / e.max(1) as f64;
    println!(
        "{corpus}: matched {:.2}% ({} / {total}); messages word for word {:.2}% ({m} / {e})",
        100.0 * rate,
        s.passed(),
        100.0 * msg_rate
    );
    assert!(rate >= 0.99, "only {:.2}% matched\n{report}", 100.0 * rate);
    assert!(
        msg_rate >= 0.95,
        "only {:.2}% of messages matched\n{report}",
        100.0 * msg_rate
    );
}

#[test]
fn schema_level_calls_match_pytorch() {
    replay("ops_calls.jsonl", 13_000);
}

#[test]
fn api_level_calls_match_pytorch() {
    replay("api_calls.jsonl", 11_000);
}
