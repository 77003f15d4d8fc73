//! opforge: PyTorch's operator machinery, rebuilt in Rust.
//!
//! This crate is the runtime. Its operator tables, typed API and kernel
//! registrations are generated at build time from the workspace's
//! `native_functions.yaml` by `opforge-codegen` (see `build.rs`).
//!
//! - [`Tensor`]: a handle to shared storage; views alias their base.
//! - [`ops`]: every operator overload with every argument, dispatched
//!   (`add.Tensor` → [`ops::add_Tensor`], `add_.Tensor` → `ops::add__Tensor`).
//! - [`torch`] and `Tensor` methods: the same with trailing schema defaults
//!   applied. The first overload of a name in the YAML takes the plain name
//!   (`torch::add`, `t.add(&u)`), later ones append their overload in snake case
//!   (`add_scalar`, `add_out`); inplace methods take `&mut self`; Rust keywords
//!   get a trailing `_` (`where_`); `clone` is `clone_tensor`.
//! - `&a + &b`, `&a * 2.0`, `-&a`: [`operators`], returning [`Result`].
//! - [`dispatch`]: the dispatcher, keys, boxed calls through operator handles.
//! - [`kernel`]: the attribute that registers a kernel, checked against its
//!   schema at compile time; [`value`] has the schema → Rust type mapping.
//!
//! ```
//! use opforge::{ops, OpId, Scalar, Tensor};
//! let add = OpId::from_name("add.Tensor").unwrap();
//! assert_eq!(add.schema().schema, "add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor");
//! let a = Tensor::from_vec(vec![1.0f32, 2.0], &[2]).unwrap();
//! let b = ops::add_Tensor(&a, &a, Scalar::Int(2)).unwrap();
//! assert_eq!(b.to_vec::<f32>().unwrap(), vec![3.0, 6.0]);
//! assert_eq!((&a + 1.0).unwrap().to_vec::<f32>().unwrap(), vec![2.0, 3.0]);
//! ```

extern crate self as opforge;

pub mod argparse;
pub mod bind;
pub mod dispatch;
pub mod error;
pub mod kernels;
pub mod library;
pub mod normalize;
pub mod operators;
pub mod overrides;
pub mod packet;
pub mod registry;
pub mod schema;
pub mod tensor;
pub mod value;

pub use error::{Error, Message, Result};
pub use opforge_macros::kernel;
pub use opforge_macros::op;
pub use opforge_macros::{dispatcher, overridable};
pub use tensor::{DType, Device, Layout, MemoryFormat, Scalar, Tensor};
pub use value::Value;

/// The tables generated from `native_functions.yaml` (`OpId`, `OPS`, `GROUPS`).
pub mod generated {
    include!(concat!(env!("OUT_DIR"), "/ops.rs"));
    include!(concat!(env!("OUT_DIR"), "/api.rs"));

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

// Every kernel named by the YAML's `dispatch:` tables, registered (generated rows of
// `register_kernels!`; the build fails if one is missing or mistyped).
include!(concat!(env!("OUT_DIR"), "/registrations.rs"));

pub use generated::{at, ops, sig, torch, OpId, BINDINGS, GROUPS, OPS, OVERRIDABLE};

/// Items the macros' expansions refer to. Not a public API.
#[doc(hidden)]
pub mod __private {
    pub use crate::__typed_call as typed_call;
    pub use crate::dispatch::linked::{KernelEntry, OperatorDef, KERNELS, OPERATOR_DEFS};
    pub use crate::dispatch::typed::{call_boxed, with_backend};
    pub use crate::dispatch::{dispatcher, Kernel, KeySet, Operator, Unboxed};
    pub use crate::overrides::TypedRet;
    pub use crate::value::{FromValue, IntoValues, ToValue, Value};
    pub use linkme;

    /// A Python number given for a `Tensor` parameter, as the kernel's wrapped
    /// number (boxed kernel adapters call this for their `Tensor` arguments).
    pub fn wrap_number(v: &Value) -> Option<crate::Tensor> {
        let s = match v {
            Value::Bool(b) => crate::Scalar::Bool(*b),
            Value::Int(i) => crate::Scalar::Int(*i),
            Value::Float(x) => crate::Scalar::Float(*x),
            _ => return None,
        };
        Some(crate::Tensor::wrapped_number(s))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_op_is_found_by_name() {
        for (i, op) in OPS.iter().enumerate() {
            assert_eq!(OpId::from_name(op.name), Some(OpId::ALL[i]), "{}", op.name);
            let qualified = format!("{}::{}", op.namespace, op.name);
            assert_eq!(OpId::from_name(&qualified), Some(OpId::ALL[i]));
            assert_eq!(OpId::ALL[i].schema().name, op.name);
        }
        assert_eq!(OpId::from_name("no_such_op"), None);
        assert_eq!(OpId::from_name("add.NoSuchOverload"), None);
    }

    #[test]
    fn groups_and_bindings_point_at_matching_ops() {
        use schema::SchemaKind;
        for g in GROUPS.iter() {
            assert!(g
                .functional
                .is_none_or(|id| id.schema().kind == SchemaKind::Functional));
            assert!(g
                .inplace
                .is_none_or(|id| id.schema().kind == SchemaKind::Inplace));
            assert!(g.out.is_none_or(|id| id.schema().kind == SchemaKind::Out));
        }
        assert!(BINDINGS.windows(2).all(|w| w[0].name < w[1].name));
        let add = BINDINGS.iter().find(|b| b.name == "torch.add").unwrap();
        let current = add.signatures.iter().find(|s| !s.deprecated).unwrap();
        assert_eq!(current.functional, OpId::from_name("add.Tensor"));
        assert_eq!(current.out, OpId::from_name("add.out"));
        assert!(OVERRIDABLE
            .iter()
            .any(|f| f.namespace == "torch" && f.name == "add"));
    }
}
