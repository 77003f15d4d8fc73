//! Generates the runtime's operator tables, typed API, schema lookup and kernel
//! checks from its `native_functions.yaml` (with `tags.yaml` and
//! `deprecated.yaml` beside it) into `$OUT_DIR/opforge/`. A schema file with
//! problems fails the build with every diagnostic printed as
//! `file:line:col: entry: message`.

fn main() {
    opforge_codegen::Build::new("native_functions.yaml")
        .runtime()
        .run();
}
