//! Generates the override-coverage table of the runtime's typed API
//! (`$OUT_DIR/coverage.rs`, see `opforge_codegen::emit_coverage::coverage`): a test
//! table, so it is built here, for the tests, not into the runtime.

use std::path::PathBuf;

fn main() {
    let dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let yaml = dir.join("../runtime/native_functions.yaml");
    println!("cargo:rerun-if-changed={}", yaml.display());
    let fail = |e: String| -> ! {
        eprintln!("{e}");
        std::process::exit(1)
    };
    let src =
        std::fs::read_to_string(&yaml).unwrap_or_else(|e| fail(format!("{}: {e}", yaml.display())));
    let file = opforge_schema::check_str("native_functions.yaml", &src, None)
        .unwrap_or_else(|d| fail(d.to_string()));
    let deprecated = opforge_schema::read_deprecated(&yaml).unwrap_or_else(|d| fail(d.to_string()));
    let plan =
        opforge_codegen::lower::lower(&file, &deprecated).unwrap_or_else(|d| fail(d.to_string()));
    let table =
        opforge_codegen::emit_coverage::coverage(&plan).unwrap_or_else(|d| fail(d.to_string()));
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("set by cargo")).join("coverage.rs");
    std::fs::write(&out, table).unwrap_or_else(|e| fail(format!("{}: {e}", out.display())));
}
