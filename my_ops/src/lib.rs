//! A crate with its own `native_functions.yaml`, built on opforge: what a user
//! who builds their own tensor library on opforge writes.
//!
//! - `build.rs`: `opforge_codegen::Build::new("native_functions.yaml")`,
//!   `.derivatives("derivatives.yaml")` (Autograd kernels for `mylib::scale`
//!   and `mylib::wsq` from formulas over opforge's operators), `.run()`;
//! - here: `opforge::include_schema!();`, then the kernels the YAML names, each
//!   with `#[kernel(KEY)]` (checked against this crate's schema at compile time).
//!
//! The generated module `generated` has this crate's `OpId`, `OPS`, `sig`, `at`,
//! `ops` and `torch` (and `autograd`, the node types and Autograd kernels); its operators are registered into opforge's dispatcher,
//! beside opforge's own.
//!
//! ```
//! use my_ops::torch;
//! let x = opforge::Tensor::from_vec(vec![1.0f32, -2.0], &[2])?;
//! assert_eq!(torch::scale(&x)?.to_vec::<f32>()?, vec![1.0, -2.0]); // k defaults to 1.0
//! assert_eq!(my_ops::ops::mylib_scale(&x, 3.0)?.to_vec::<f32>()?, vec![3.0, -6.0]);
//! # Ok::<(), opforge::Error>(())
//! ```

opforge::include_schema!();

pub mod kernels;

pub use generated::{at, ops, sig, torch, OpId, OPS};

pub mod queue;
