//! `#[kernel]` and `#[op]` compile-time diagnostics (trybuild). Each file under `ui/` is compiled
//! as a separate crate depending on `opforge`, so these are also the checks a
//! downstream crate gets. Re-bless with `TRYBUILD=overwrite cargo test -p
//! opforge-tests --test ui` and read the diff.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/fail/**/*.rs");
    t.pass("tests/ui/pass/*.rs");
}
