//! Replays a corpus of recorded training runs (the `train_runs.jsonl`
//! format) with `opforge::nn` and `opforge::optim`, and prints the failures
//! and, last, `N passed, M failed`.
//!
//! ```text
//! cargo run --release -p opforge-tests --bin training -- --corpus FILE
//! ```
//! Without `--corpus`, the repository's sample
//! (`tests/data/conformance/train_runs.jsonl`); the data set is always the
//! repository's `digits.csv.gz`.

use opforge_tests::training;
use std::process::ExitCode;

fn main() -> ExitCode {
    let path = match opforge_tests::corpus_arg("training", "train_runs.jsonl") {
        Ok(p) => p,
        Err(code) => return code,
    };
    let (runs, data) = match (training::load(&path), training::digits_data()) {
        (Ok(r), Ok(d)) => (r, d),
        (Err(e), _) | (_, Err(e)) => {
            eprintln!("cannot load {}: {e}", path.display());
            return ExitCode::from(2);
        }
    };
    let report = training::replay(&runs, &data);
    for f in &report.failures {
        println!("FAIL {f}");
    }
    println!("{} passed, {} failed", report.passed, report.failed);
    if report.failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
