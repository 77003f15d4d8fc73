// A kernel the YAML names but nobody wrote: `CPU: cpu::soft_step`, and
// `kernels::cpu` has no `soft_step`. The included file is what the generator
// writes into `OUT_DIR/opforge/kernel_checks.rs` for that YAML
// (`ui/generated/missing_kernel/`), so this is the error a crate with its own
// schema gets: the YAML's file and line, the operator, the key, the function
// expected, and no suggestion of another operator's marker.
mod kernels {
    pub mod cpu {}
}

include!("../../generated/missing_kernel/kernel_checks.rs");

fn main() {}
