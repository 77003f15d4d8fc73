//! Runs opforge-codegen on the crate's `native_functions.yaml` (with `tags.yaml`
//! and `deprecated.yaml` beside it) and writes the
//! generated schema tables to `$OUT_DIR/ops.rs`. A schema file with problems fails
//! the build with every diagnostic printed as `file:line: entry: message`.

use std::path::PathBuf;

fn main() {
    let root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let yaml = root.join("native_functions.yaml");
    let tags = root.join("tags.yaml");
    println!("cargo:rerun-if-changed={}", yaml.display());
    println!("cargo:rerun-if-changed={}", tags.display());
    println!(
        "cargo:rerun-if-changed={}",
        root.join("deprecated.yaml").display()
    );
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("set by cargo"));
    match opforge_codegen::generate(&yaml, Some(&tags)) {
        Ok(files) => {
            for (name, text) in files {
                std::fs::write(out.join(&name), text)
                    .unwrap_or_else(|e| panic!("cannot write {name} to OUT_DIR: {e}"));
            }
        }
        Err(diags) => {
            for line in diags.to_string().lines() {
                println!("cargo:warning={line}");
            }
            eprintln!("{diags}");
            std::process::exit(1);
        }
    }
}
