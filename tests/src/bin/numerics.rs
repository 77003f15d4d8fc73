//! Replays a corpus of recorded kernel calls (the `numeric_calls.jsonl` format)
//! through the dispatcher's boxed path with overload handles, and prints the
//! failures (expected vs got) and, last, `N passed, M failed`.
//!
//! ```text
//! cargo run --release -p opforge-tests --bin numerics -- --corpus FILE [--meta]
//! ```
//! `--meta` replays on meta copies of the inputs (shapes, dtypes, strides only).

use opforge_tests::numeric::{self, Backend};
use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let mut corpus = None;
    let mut backend = Backend::Cpu;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--corpus" => corpus = args.next().map(PathBuf::from),
            "--meta" => backend = Backend::Meta,
            other => {
                eprintln!("unknown argument `{other}`\nusage: numerics --corpus FILE [--meta]");
                return ExitCode::from(2);
            }
        }
    }
    let path = corpus.unwrap_or_else(numeric::corpus_path);
    let cases = match numeric::load(&path) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("cannot load {}: {e}", path.display());
            return ExitCode::from(2);
        }
    };
    let report = numeric::replay(&cases, backend);
    for f in report.failures.iter().take(50) {
        println!("FAIL {f}");
    }
    if report.failures.len() > 50 {
        println!("... and {} more failures", report.failures.len() - 50);
    }
    if !report.failing_overloads.is_empty() {
        println!(
            "overloads with failures: {}",
            report.failing_overloads.join(", ")
        );
    }
    println!(
        "error messages matched word for word: {}/{}; exception classes matched: {}/{}",
        report.messages_matched, report.error_cases, report.classes_matched, report.error_cases
    );
    println!("{} passed, {} failed", report.passed, report.failed);
    if report.failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
