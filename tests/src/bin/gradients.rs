//! Replays a corpus of recorded gradients (the `grad_calls.jsonl` format:
//! reverse mode, double backward, forward mode, errors) and prints the
//! failures and, last, `N passed, M failed`.
//!
//! ```text
//! cargo run --release -p opforge-tests --bin gradients -- --corpus FILE
//! ```
//! Without `--corpus`, the repository's sample
//! (`tests/data/conformance/grad_calls.jsonl`).

use opforge_tests::gradients;
use std::process::ExitCode;

fn main() -> ExitCode {
    let path = match opforge_tests::corpus_arg("gradients", "grad_calls.jsonl") {
        Ok(p) => p,
        Err(code) => return code,
    };
    let cases = match gradients::load(&path) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("cannot load {}: {e}", path.display());
            return ExitCode::from(2);
        }
    };
    let report = gradients::replay(&cases);
    for f in &report.failures {
        println!("FAIL {f}");
    }
    if !report.failing_overloads.is_empty() {
        println!(
            "overloads with failures: {}",
            report.failing_overloads.join(", ")
        );
    }
    println!("{} passed, {} failed", report.passed, report.failed);
    if report.failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
