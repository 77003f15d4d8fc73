//! Arbitrary text → the YAML loader → the validator → if the file is valid,
//! lowering and every generated file. Nothing may panic, and every generated
//! file is Rust: emission parses its tokens as a `syn::File` before printing
//! them and writes a `compile_error!` when that fails. (The printed text is
//! not parsed again here: that would test prettyplease, at a third of the
//! time of an execution.)
//!
//! Lowering leaks each operator's table entry (operators live for the whole
//! program): run with `-detect_leaks=0`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use opforge_codegen::emit_api::Options;

fuzz_target!(|data: &[u8]| {
    let Ok(src) = std::str::from_utf8(data) else {
        return;
    };
    if src.len() > 4096 {
        return;
    }
    let Ok(file) = opforge_schema::check_str("fuzz.yaml", src, None) else {
        return;
    };
    let Ok(plan) = opforge_codegen::lower::lower(&file, &[]) else {
        return;
    };
    let opts = Options {
        runtime: false,
        crate_name: "fuzz".into(),
        kernels_module: Some("crate::kernels".into()),
    };
    let Ok(files) = opforge_codegen::emit_all(&plan, &opts) else {
        return;
    };
    for (name, text) in &files {
        assert!(
            !text.starts_with("compile_error!"),
            "{name} is not Rust:\n{text}"
        );
    }
});
