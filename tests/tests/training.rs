//! PyTorch's recorded training runs (`train_runs.jsonl`), replayed with
//! `opforge::nn` and `opforge::optim`: every step's loss, the final state and
//! both accuracies match. The same as
//! `cargo run --release -p opforge-tests --bin training`.

use opforge_tests::training;
use std::path::Path;

/// Replays every run of `corpus` (at least `at_least` of them): all pass.
fn reproduces(corpus: &Path, at_least: usize) {
    let runs = training::load(corpus).unwrap();
    let data = training::digits_data().unwrap();
    assert_eq!(data.len(), 1797);
    assert!(runs.len() >= at_least, "only {} runs", runs.len());
    let report = training::replay(&runs, &data);
    assert!(
        report.failures.is_empty(),
        "{} passed, {} failed:\n{}",
        report.passed,
        report.failed,
        report.failures.join("\n")
    );
}

#[test]
fn every_recorded_training_run_is_reproduced() {
    reproduces(&opforge_tests::corpus("train_runs.jsonl"), 5);
}

/// More runs of the README's kinds, recorded from PyTorch 2.15 by
/// `tests/record/train_runs.py`: the losses, optimizer options, dtypes and
/// batch sizes the sample does not have (`tests/data/recorded/README.md`).
#[test]
fn more_recorded_training_runs_are_reproduced() {
    reproduces(&opforge_tests::recorded("train_runs.jsonl"), 8);
}

/// Forty runs drawn at random from the README's lists (depth, widths,
/// activations, bias or not, loss, optimizer and its options, dtype, batch
/// size from 1 to 1,500), recorded by `tests/record/train_runs_random.py`.
#[test]
fn randomly_drawn_training_runs_are_reproduced() {
    reproduces(&opforge_tests::recorded("train_runs_random.jsonl.gz"), 40);
}
