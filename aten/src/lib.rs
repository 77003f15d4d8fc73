//! PyTorch 2.15's `native_functions.yaml`, all 2,590 entries, compiled onto
//! opforge: the operator tables (`OpId`, `OPS`, groups, Python bindings) and
//! the typed API — `sig` (every kernel signature), `at` (every overload,
//! dispatched), `ops` (the same through the function-level override protocol)
//! and `torch` (with trailing defaults) — with no kernels. Operators opforge
//! defines too (same schema) are the same operators, with opforge's kernels;
//! calling any other gives the dispatcher's "Could not run …" error until a
//! kernel is registered for it with `#[kernel]`.
//!
//! ```
//! use opforge::Tensor;
//! let x = Tensor::from_vec(vec![1.0f32, 2.0], &[2])?;
//! // An operator opforge has: its kernels run.
//! assert_eq!(opforge_aten::torch::neg(&x)?.to_vec::<f32>()?, vec![-1.0, -2.0]);
//! // One it has not: no kernel yet.
//! let e = opforge_aten::torch::frac(&x).unwrap_err();
//! assert!(e.to_string().starts_with("Could not run 'aten::frac' with arguments from the 'CPU' backend."));
//! # Ok::<(), opforge::Error>(())
//! ```

opforge::include_schema!();

pub use generated::{at, ops, sig, torch, OpId, OPS};
