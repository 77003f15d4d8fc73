//! The recorded kernel calls (`tests/data/conformance/numeric_calls.jsonl`) replayed
//! through the dispatcher's boxed path: 100% required, on CPU and on meta inputs.

use opforge_tests::numeric::{self, Backend};

fn check(backend: Backend) {
    let cases = numeric::load(&numeric::corpus_path()).expect("corpus");
    assert!(cases.len() > 1000, "corpus has {} cases", cases.len());
    let r = numeric::replay(&cases, backend);
    println!(
        "{backend:?}: {} passed, {} failed; messages matched {}/{}",
        r.passed, r.failed, r.messages_matched, r.error_cases
    );
    assert_eq!(
        r.failed,
        0,
        "{}",
        r.failures
            .iter()
            .take(20)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}

#[test]
fn numeric_corpus_through_the_dispatcher() {
    check(Backend::Cpu);
}

#[test]
fn numeric_corpus_on_meta_tensors() {
    check(Backend::Meta);
}
