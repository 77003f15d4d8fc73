//! Generates the runtime's operator tables, typed API, schema lookup and kernel
//! checks from its `native_functions.yaml` (with `tags.yaml` and
//! `deprecated.yaml` beside it), and its Autograd kernels and node types from
//! `derivatives.yaml` (formulas calling the helpers of
//! `src/autograd/formulas.rs`), into `$OUT_DIR/opforge/`. A schema or
//! derivatives file with problems fails the build with every diagnostic
//! printed as `file:line:col: entry: message`.

fn main() {
    opforge_codegen::Build::new("native_functions.yaml")
        .runtime()
        .derivatives("derivatives.yaml")
        .derivative_helpers("src/autograd/formulas.rs")
        .run();
}
