//! The emitted tables and typed API for a small fixture are snapshotted: a change
//! in the generated code shows up as a diff here. Re-bless with
//! `OPFORGE_BLESS=1 cargo test -p opforge-codegen --test emit_snapshot` and read
//! the diff.

use opforge_codegen::emit_api::{self, Options};
use opforge_codegen::{emit, lower};
use opforge_schema::{load, validate};
use std::path::{Path, PathBuf};

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests")
}

fn mini_options() -> Options {
    Options {
        runtime: false,
        crate_name: "mini".into(),
        kernels_module: Some("crate::kernels".into()),
    }
}

#[test]
fn mini_tables_snapshot() {
    let src = std::fs::read_to_string(dir().join("fixtures/mini.yaml")).unwrap();
    let file = load::load_str("mini.yaml", &src).unwrap_or_else(|d| panic!("{d}"));
    validate::validate(&file, None).unwrap_or_else(|d| panic!("{d}"));
    let plan = lower::lower(&file, &[]).unwrap();
    compare(&emit::tables(&plan), &dir().join("snapshots/mini_ops.rs"));
    let api = emit_api::api(&plan, &mini_options()).unwrap_or_else(|d| panic!("{d}"));
    compare(&api.at, &dir().join("snapshots/mini_at.rs"));
    compare(&api.api, &dir().join("snapshots/mini_api.rs"));
}

/// An operator whose signature has no Rust mapping is an error naming the file
/// and line, never a skipped entry or a `()` placeholder.
#[test]
fn unmapped_types_are_errors_with_file_and_line() {
    let src = "- func: good(Tensor self) -> Tensor\n\n- func: mylib::scale(Tensor x, complex c=0) -> Tensor\n\n- func: mylib::named(Tensor x, Dimname d) -> Tensor\n\n- func: mylib::cfg(Tensor x, __torch__.torch.classes.mylib.Cfg cfg) -> Tensor\n";
    let file = load::load_str("bad.yaml", src).unwrap();
    let plan = lower::lower(&file, &[]).unwrap();
    let e = emit_api::api(&plan, &mini_options())
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("bad.yaml:5: named: no Rust signature: argument `Dimname d`: the schema type `Dimname` has no Rust type"),
        "{e}"
    );
    // A custom class has one (`&ScriptObject`; kernels take `&T`).
    assert!(!e.contains("cfg"), "{e}");
    assert!(
        e.contains("bad.yaml:3: scale: no Rust signature: argument `complex c=0`"),
        "{e}"
    );
}

fn compare(got: &str, snap: &Path) {
    // The output parses as Rust.
    syn::parse_file(got.split_once("\n\n").unwrap().1).expect("emitted code parses");
    if std::env::var_os("OPFORGE_BLESS").is_some() {
        std::fs::write(snap, got).unwrap();
    }
    let want = std::fs::read_to_string(snap).unwrap_or_default();
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
