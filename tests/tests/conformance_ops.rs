//! Schema-level calls recorded from PyTorch (`shared/conformance/ops_calls.jsonl`,
//! `torch.ops.aten.<name>(...)` on overload packets) replayed against PyTorch's own
//! `native_functions.yaml` with its registration order (`aten_overloads.jsonl`):
//! the chosen overload and the normalized args/kwargs, or an error where PyTorch
//! raised one. 100% of the corpus matches today; at least 99% is required, and
//! the share of error messages matched word for word (100% today) at least 95%.

use opforge_tests::conformance::{pytorch_registry, shared_dir, Summary};

#[test]
fn ops_corpus_against_pytorch_schemas() {
    let shared = shared_dir();
    let registry = pytorch_registry(
        &shared.join("pytorch/native_functions.yaml"),
        &shared.join("conformance/aten_overloads.jsonl"),
    )
    .expect("registry");
    let corpus =
        std::fs::read_to_string(shared.join("conformance/ops_calls.jsonl")).expect("ops corpus");
    let s = Summary::run(&registry, &corpus).expect("corpus parses");
    let report = s.report(3);
    println!("{report}");
    let total = s.outcomes.len();
    assert!(total > 13_000, "corpus has {total} cases");
    assert_eq!(s.unhandled(), 0, "{report}");
    let rate = s.passed() as f64 / total as f64;
    let (m, e) = s.messages();
    let msg_rate = m as f64 / e.max(1) as f64;
    println!(
        "matched {:.2}% ({} / {total}); messages word for word {:.2}% ({m} / {e})",
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
