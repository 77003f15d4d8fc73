//! The emitted tables for a small fixture are snapshotted: a change in the generated
//! code shows up as a diff here. Re-bless with `OPFORGE_BLESS=1 cargo test -p opforge-codegen --test emit_snapshot`
//! and read the diff.

use opforge_codegen::{emit, lower};
use opforge_schema::{load, validate};
use std::path::PathBuf;

#[test]
fn mini_tables_snapshot() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests");
    let src = std::fs::read_to_string(dir.join("fixtures/mini.yaml")).unwrap();
    let file = load::load_str("mini.yaml", &src).unwrap_or_else(|d| panic!("{d}"));
    validate::validate(&file, None).unwrap_or_else(|d| panic!("{d}"));
    let plan = lower::lower(&file, &[]).unwrap();
    let got = emit::tables(&plan);
    // The output parses as Rust.
    syn::parse_file(got.split_once("\n\n").unwrap().1).expect("emitted code parses");
    let snap = dir.join("snapshots/mini_ops.rs");
    if std::env::var_os("OPFORGE_BLESS").is_some() {
        std::fs::write(&snap, &got).unwrap();
    }
    let want = std::fs::read_to_string(&snap).unwrap_or_default();
    if got != want {
        let first = got
            .lines()
            .zip(want.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(got.lines().count().min(want.lines().count()));
        panic!(
            "emitted tables differ from {} at line {}:\n  got:  {}\n  want: {}\n(re-bless with OPFORGE_BLESS=1 if intended)",
            snap.display(),
            first + 1,
            got.lines().nth(first).unwrap_or("<eof>"),
            want.lines().nth(first).unwrap_or("<eof>")
        );
    }
}
