//! opforge: PyTorch's operator machinery, rebuilt in Rust.
//!
//! This crate is the runtime. Its operator tables are generated at build time from
//! the workspace's `native_functions.yaml` by `opforge-codegen` (see `build.rs`):
//! every operator overload has an [`OpId`] and an [`OpSchema`](schema::OpSchema).
//!
//! ```
//! use opforge::OpId;
//! let add = OpId::from_name("add.Tensor").unwrap();
//! assert_eq!(add.schema().schema, "add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor");
//! assert_eq!(add.schema().kernel("CPU"), Some("cpu::add_Tensor"));
//! ```

extern crate self as opforge;

pub mod schema;

/// The tables generated from `native_functions.yaml` (`OpId`, `OPS`, `GROUPS`).
pub mod generated {
    include!(concat!(env!("OUT_DIR"), "/ops.rs"));

    impl OpId {
        /// Looks an operator up by `name.overload` (or `name` for the default
        /// overload), optionally prefixed with its namespace (`aten::add.Tensor`).
        pub fn from_name(name: &str) -> Option<OpId> {
            let (ns, name) = name.split_once("::").unwrap_or(("aten", name));
            OPS.binary_search_by(|op| (op.namespace, op.name).cmp(&(ns, name)))
                .ok()
                .map(|i| OpId::ALL[i])
        }
    }
}

pub use generated::{OpId, GROUPS, OPS};
