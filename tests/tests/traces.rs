//! The recorded traces (`trace_calls.jsonl`), replayed under
//! `opforge::trace` as the `traces` binary replays them: PyTorch's `make_fx`
//! graphs node by node (targets, argument structure, constants, references
//! by position), and the re-executed graphs' results against PyTorch's.

use opforge_tests::traces;

#[test]
fn recorded_traces_match_pytorchs_graphs() {
    let cases = traces::load(&opforge_tests::corpus("trace_calls.jsonl")).unwrap();
    assert!(cases.len() >= 27, "{} cases", cases.len());
    let report = traces::replay(&cases);
    assert!(
        report.failures.is_empty(),
        "{} of {} programs fail:\n{}",
        report.failed,
        cases.len(),
        report.failures.join("\n")
    );
}
