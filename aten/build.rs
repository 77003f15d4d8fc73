//! PyTorch's own schema file (`native_functions.yaml`, with `tags.yaml` and
//! `deprecated.yaml` beside it; BSD licence in `LICENSE`), generated as a crate
//! of its own. Its `dispatch:` tables name PyTorch's C++ kernels, not Rust
//! paths: nothing is checked against them (`no_kernels`).

fn main() {
    opforge_codegen::Build::new("native_functions.yaml")
        .no_kernels()
        .run();
}
