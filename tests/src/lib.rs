//! opforge's integration tests, UI tests, conformance runners and test data.
//!
//! - [`numeric`]: replaying recorded kernel calls (`numeric_calls.jsonl`) through
//!   the dispatcher and judging the results (used by the `numerics` binary and
//!   the `numerics` test).
//! - [`gradients`]: replaying recorded gradients (`grad_calls.jsonl`: reverse
//!   mode, double backward, forward mode, errors; used by the `gradients`
//!   binary and the `autograd_generated` test).
//! - [`gradchecks`]: `gradcheck` / `gradgradcheck` on every operator of
//!   `runtime/derivatives.yaml` (the `gradchecks` binary and a test).
//! - [`training`]: replaying PyTorch's recorded training runs
//!   (`train_runs.jsonl` with `digits.csv.gz`) with `opforge::nn` and
//!   `opforge::optim` (the `training` binary and test).
//! - [`traces`]: replaying recorded traces (`trace_calls.jsonl`: programs
//!   of API calls and PyTorch's `make_fx` graphs) under `opforge::trace`
//!   (the `traces` binary and test).
//! - [`conformance`]: replaying the recorded argument-parsing corpora
//!   (`ops_calls.jsonl`, `api_calls.jsonl`) and comparing normalized arguments.

pub mod conformance;
pub mod gradchecks;
pub mod gradients;
pub mod numeric;
pub mod traces;
pub mod training;
pub mod values;
pub mod view_programs;

use std::path::{Path, PathBuf};

/// The repository's test data (`tests/data/`): PyTorch 2.15's schema files with
/// their licence (`pytorch/`) and the corpora recorded from PyTorch
/// (`conformance/`, formats in its README). Tests read nothing else outside
/// the repository.
pub fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("data")
}

/// A file of PyTorch's (`native_functions.yaml`, `tags.yaml`, `deprecated.yaml`).
pub fn pytorch(file: &str) -> PathBuf {
    data_dir().join("pytorch").join(file)
}

/// A recorded corpus (`ops_calls.jsonl`, `api_signatures.json`, …).
pub fn corpus(file: &str) -> PathBuf {
    data_dir().join("conformance").join(file)
}

/// A corpus of our own recording, of a shared corpus's format
/// (`tests/data/recorded/README.md`: `grad_calls.jsonl`, `train_runs.jsonl`).
pub fn recorded(file: &str) -> PathBuf {
    data_dir().join("recorded").join(file)
}

/// A replay binary's one argument, `--corpus FILE` (else the repository's
/// sample `default`, a file of [`corpus`]); anything else prints the usage
/// and gives the exit code to return.
pub fn corpus_arg(bin: &str, default: &str) -> Result<PathBuf, std::process::ExitCode> {
    let mut corpus = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--corpus" => corpus = args.next().map(PathBuf::from),
            other => {
                eprintln!("unknown argument `{other}`\nusage: {bin} [--corpus FILE]");
                return Err(std::process::ExitCode::from(2));
            }
        }
    }
    Ok(corpus.unwrap_or_else(|| self::corpus(default)))
}

/// Reads a file of the test data (panics with its path if it cannot).
pub fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The workspace README's Rust snippets, compiled and run as this crate's
/// doctests (`cargo test --workspace` runs them). Snippets of `my_ops`'s files
/// are checked line for line against those files by `tests/readme.rs` (and
/// compiled there, as that crate): its `build.rs` also compiles here
/// (`rust,no_run`: run, it would generate into a build's `OUT_DIR`); its
/// `lib.rs` (`mod kernels;` is a file) and its kernel (a second kernel for a
/// key the YAML names, from another crate, is refused) cannot (`rust,ignore`).
#[doc = include_str!("../../README.md")]
// The `build.rs` snippet is a whole file, its `fn main` included.
#[allow(clippy::needless_doctest_main)]
pub mod readme {}

/// The manual's chapters (`docs/`), whose Rust snippets run as doctests too,
/// one module per chapter.
#[doc(hidden)]
pub mod docs {
    #[doc = include_str!("../../docs/calling-operators.md")]
    pub mod calling_operators {}
    #[doc = include_str!("../../docs/your-own-crate.md")]
    pub mod your_own_crate {}
    #[doc = include_str!("../../docs/extending.md")]
    pub mod extending {}
    #[doc = include_str!("../../docs/autograd.md")]
    pub mod autograd {}
    #[doc = include_str!("../../docs/nn-and-optim.md")]
    pub mod nn_and_optim {}
    #[doc = include_str!("../../docs/custom-classes.md")]
    pub mod custom_classes {}
    #[doc = include_str!("../../docs/fake-tensors.md")]
    pub mod fake_tensors {}
    #[doc = include_str!("../../docs/tracing.md")]
    pub mod tracing {}
    #[doc = include_str!("../../docs/saved-graphs.md")]
    pub mod saved_graphs {}
    #[doc = include_str!("../../docs/opcheck.md")]
    pub mod opcheck {}
    #[doc = include_str!("../../docs/testing.md")]
    pub mod testing {}
}

/// What the benchmarks (`overhead`, `probe`) share.
pub mod bench {
    use opforge::overrides::{
        DispatchCall, FunctionCall, Handled, TorchDispatchMode, TorchFunctionMode,
    };

    /// A function mode that runs every function unchanged: what the protocol
    /// alone costs.
    pub struct PassFunction;

    impl TorchFunctionMode for PassFunction {
        fn torch_function(&self, call: &FunctionCall<'_>) -> opforge::Result<Handled> {
            call.call_func().map(Handled::Value)
        }
    }

    /// A dispatch mode that runs every operator unchanged.
    pub struct PassDispatch;

    /// A one-op custom Function (`x * 2`, backward `g * 2`): what `apply`
    /// costs over the operator it runs.
    pub struct Double;

    impl opforge::autograd::Function for Double {
        type Args = opforge::Tensor;
        type Output = opforge::Tensor;
        type State = ();

        fn forward(x: &opforge::Tensor) -> opforge::Result<opforge::Tensor> {
            opforge::ops::mul_Tensor(x, &two())
        }

        fn backward(
            _: &opforge::autograd::FunctionCtx<()>,
            grads: Vec<Option<opforge::Tensor>>,
        ) -> opforge::Result<Vec<Option<opforge::Tensor>>> {
            match &grads[0] {
                Some(g) => Ok(vec![Some(opforge::ops::mul_Tensor(g, &two())?)]),
                None => Ok(vec![None]),
            }
        }
    }

    /// The Python number `2` as an operand.
    fn two() -> opforge::Tensor {
        opforge::Tensor::wrapped_number(opforge::Scalar::Int(2))
    }

    impl TorchDispatchMode for PassDispatch {
        fn torch_dispatch(&self, call: &DispatchCall<'_>) -> opforge::Result<Handled> {
            call.call_func().map(Handled::Value)
        }
    }
}
