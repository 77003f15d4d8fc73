//! `opforge-codegen`: the command line (see [`opforge_codegen::cli`]).

fn main() -> std::process::ExitCode {
    opforge_codegen::cli::main()
}
