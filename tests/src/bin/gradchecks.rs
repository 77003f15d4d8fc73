//! Runs `gradcheck` (slow and fast mode, with forward AD) and
//! `gradgradcheck` on every operator of `runtime/derivatives.yaml`
//! ([`opforge_tests::gradchecks`]) and prints one line per operator and
//! check, then `N passed, M failed` (exit status 1 on a failure).
//!
//! ```text
//! cargo run --release -p opforge-tests --bin gradchecks [-- --filter SUBSTR]
//! ```

use std::process::ExitCode;

fn main() -> ExitCode {
    let mut filters = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--filter" => filters.extend(args.next()),
            other => {
                eprintln!("unknown argument `{other}`\nusage: gradchecks [--filter SUBSTR]");
                return ExitCode::from(2);
            }
        }
    }
    let (mut passed, mut failed) = (0usize, 0usize);
    for c in opforge_tests::gradchecks::run(&filters) {
        match c.outcome {
            Ok(()) => {
                passed += 1;
                println!("ok   {}", c.label);
            }
            Err(e) => {
                failed += 1;
                println!("FAIL {}: {}", c.label, e.replace('\n', "\n     "));
            }
        }
    }
    println!("{passed} passed, {failed} failed");
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
