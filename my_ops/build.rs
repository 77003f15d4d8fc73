fn main() {
    opforge_codegen::Build::new("native_functions.yaml")
        .derivatives("derivatives.yaml")
        .run();
}
