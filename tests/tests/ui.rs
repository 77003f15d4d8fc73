//! `#[kernel]` and `#[op]` compile-time diagnostics (trybuild). Each file under `ui/` is compiled
//! as a separate crate depending on `opforge`, so these are also the checks a
//! downstream crate gets. Re-bless with `TRYBUILD=overwrite cargo test -p
//! opforge-tests --test ui` and read the diff.
//!
//! A trybuild case has no build script, so a check the generator writes into a
//! crate's `OUT_DIR` is kept under `ui/generated/` beside the YAML it was
//! generated from; `generated_checks_are_current` regenerates it (and rewrites
//! it with `OPFORGE_BLESS=1`).

use std::path::Path;

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/fail/**/*.rs");
    t.pass("tests/ui/pass/*.rs");
}

/// Each `ui/generated/*/kernel_checks.rs` is the generator's output for the
/// `native_functions.yaml` beside it.
#[test]
fn generated_checks_are_current() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/ui/generated");
    let mut checked = 0;
    for entry in std::fs::read_dir(&root).unwrap() {
        let dir = entry.unwrap().path();
        let files = opforge_codegen::Build::new(dir.join("native_functions.yaml"))
            .generate()
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        let (_, text) = files
            .iter()
            .find(|(name, _)| name.as_str() == "kernel_checks.rs")
            .expect("the generator writes kernel_checks.rs");
        let kept = dir.join("kernel_checks.rs");
        if std::env::var_os("OPFORGE_BLESS").is_some() {
            std::fs::write(&kept, text).unwrap();
        }
        let old = std::fs::read_to_string(&kept).unwrap_or_default();
        assert!(
            old == *text,
            "{} is not what the generator writes now (OPFORGE_BLESS=1 rewrites it)",
            kept.display()
        );
        checked += 1;
    }
    assert!(checked >= 1);
}
