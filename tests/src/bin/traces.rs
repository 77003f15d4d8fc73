//! Replays a corpus of recorded traces (the `trace_calls.jsonl` format: small
//! programs of API calls and the graphs PyTorch's `make_fx` captured from
//! them) under `opforge::trace`, and prints the failures and, last,
//! `N passed, M failed`.
//!
//! ```text
//! cargo run --release -p opforge-tests --bin traces -- --corpus FILE
//! ```
//! Without `--corpus`, the repository's sample
//! (`tests/data/conformance/trace_calls.jsonl`).

use opforge_tests::traces;
use std::process::ExitCode;

fn main() -> ExitCode {
    let path = match opforge_tests::corpus_arg("traces", "trace_calls.jsonl") {
        Ok(p) => p,
        Err(code) => return code,
    };
    let cases = match traces::load(&path) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("cannot load {}: {e}", path.display());
            return ExitCode::from(2);
        }
    };
    let report = traces::replay(&cases);
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
