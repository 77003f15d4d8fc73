//! Replays an argument-parsing corpus (`ops_calls.jsonl` / `api_calls.jsonl`
//! format) against a schema file with PyTorch's overload order, and prints the
//! failures per category (expected vs got), the share of error messages matched
//! word for word, and last `N passed, M failed`.
//!
//! ```text
//! cargo run --release -p opforge-tests --bin conformance -- \
//!     --schema FILE --overloads FILE --corpus FILE.jsonl [--examples N]
//! ```

use opforge_tests::conformance::{pytorch_registry, Summary};
use opforge_tests::{corpus, pytorch};
use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let mut schema = pytorch("native_functions.yaml");
    let mut overloads = corpus("aten_overloads.jsonl");
    let mut corpus = corpus("ops_calls.jsonl");
    let mut examples = 3usize;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut path = || args.next().map(PathBuf::from);
        match a.as_str() {
            "--schema" => schema = path().unwrap_or(schema),
            "--overloads" => overloads = path().unwrap_or(overloads),
            "--corpus" => corpus = path().unwrap_or(corpus),
            "--examples" => {
                examples = path()
                    .and_then(|p| p.to_str().and_then(|s| s.parse().ok()))
                    .unwrap_or(examples)
            }
            other => {
                eprintln!(
                    "unknown argument `{other}`\nusage: conformance --schema FILE --overloads FILE --corpus FILE.jsonl [--examples N]"
                );
                return ExitCode::from(2);
            }
        }
    }
    let registry = match pytorch_registry(&schema, &overloads) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("cannot load the registry: {e}");
            return ExitCode::from(2);
        }
    };
    if let Err(e) = registry.api_table() {
        eprintln!("cannot derive the Python-API bindings: {e}");
        return ExitCode::from(2);
    }
    let text = match std::fs::read_to_string(&corpus) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("cannot read {}: {e}", corpus.display());
            return ExitCode::from(2);
        }
    };
    let summary = match Summary::run(&registry, &text) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    print!("{}", summary.report(examples));
    if summary.failed() == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
