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
//!   applied, named from the schema (never from the YAML's line order): a
//!   name's main functional overload (its default, else `Tensor`, else the one
//!   whose out= variant is `out`, else the only one) takes the plain name
//!   (`torch::add`, `t.add(&u)`), its in-place and out= variants end in `_` and
//!   `_out`, other overloads append their overload in snake case
//!   (`add_scalar`); inplace methods take `&mut self`; Rust keywords get a
//!   trailing `_` (`where_`); `clone` is `clone_tensor`.
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

// The schema lookup of `#[kernel]` and `#[op]` (first, so that it is in scope in
// every module below). The generated tables and typed API are included in the
// modules of their layers (`tables`, `at`, `api`).
include!(concat!(env!("OUT_DIR"), "/opforge/schema_macro.rs"));

mod api;
pub mod argparse;
pub mod at;
pub mod autograd;
pub mod bind;
pub mod classes;
pub mod dispatch;
pub mod dtype;
pub mod error;
pub mod fake;
pub mod flags;
pub mod functionalize;
pub mod kernels;
pub mod keys;
pub mod library;
pub mod nn;
pub mod normalize;
pub mod opcheck;
pub mod operators;
pub mod optim;
pub mod overrides;
pub mod packet;
pub mod parallel;
pub mod place;
pub mod pyfmt;
pub mod random;
pub mod registry;
pub mod shape;
pub mod tables;
pub mod tensor;
pub mod trace;
pub mod value;

pub mod warnings;

// The checks that every kernel the YAML names exists.
include!(concat!(env!("OUT_DIR"), "/opforge/kernel_checks.rs"));

pub use dtype::Reduction;
pub use error::{Error, Message, Result};
/// A kernel registered from any crate, here for `mul.Tensor` at the `Python`
/// key (reached when the key is in the call's key set), checked against the
/// operator's schema at compile time:
///
/// ```
/// use opforge::dispatch::{DispatchKey, KeySet, LocalKeys};
/// use opforge::{kernel, Result, Tensor};
/// use std::sync::atomic::{AtomicUsize, Ordering};
///
/// static CALLS: AtomicUsize = AtomicUsize::new(0);
///
/// /// `mul.Tensor` at the Python key: counts, then runs the CPU kernel.
/// #[kernel(Python, "mul.Tensor")]
/// fn mul_counted(self_: &Tensor, other: &Tensor) -> Result<Tensor> {
///     CALLS.fetch_add(1, Ordering::Relaxed);
///     opforge::kernels::cpu::mul_Tensor(self_, other)
/// }
///
/// fn main() -> Result<()> {
///     let x = Tensor::from_vec(vec![1.0f32, 2.0], &[2])?;
///     let _python = LocalKeys::include(KeySet::of(DispatchKey::Python));
///     assert_eq!((&x * &x)?.to_vec::<f32>()?, [1.0, 4.0]);
///     assert_eq!(CALLS.load(Ordering::Relaxed), 1);
///     Ok(())
/// }
/// ```
///
/// A crate with its own schema writes the kernels its YAML names with the
/// key only: `#[kernel(CPU)] pub fn scale(self_: &Tensor, k: f64) ->
/// Result<Tensor>` in `kernels/cpu.rs` for `CPU: cpu::scale`
/// (`opforge-codegen show FILE NAME` prints the signature to write).
pub use opforge_macros::kernel;
pub use opforge_macros::op;
pub use opforge_macros::{custom_class, methods};
pub use opforge_macros::{dispatcher, overridable};
pub use parallel::{get_num_threads, set_num_threads};
pub use tensor::{
    allocation_limit, huge_pages, set_allocation_limit, set_huge_pages, DType, Device, Generator,
    Layout, MemoryFormat, QScheme, Scalar, Storage, Stream, Tensor,
};
pub use value::{ScriptObject, Value};

/// `torch.manual_seed(seed)`: reseeds the default CPU generator
/// ([`Generator::default_cpu`]) and returns it.
pub fn manual_seed(seed: u64) -> &'static Generator {
    let g = Generator::default_cpu();
    g.manual_seed(seed);
    g
}

pub use api::{ops, torch};
pub use at::sig;
pub use tables::{OpId, BINDINGS, GROUPS, OPS, OVERRIDABLE};

/// Generates the tables, typed API and `#[kernel]` checks of a crate's own
/// schema file: put `opforge::include_schema!();` first in the `lib.rs` of a
/// crate whose build script runs `opforge_codegen::Build` (the README's
/// recipe, "Your own operators, in a crate of your own", and
/// `docs/your-own-crate.md`). It defines a module `generated` with
/// `OpId`, `OPS`, `sig`, `at`, `ops` and `torch`, and with a derivatives file
/// (`Build::derivatives`) `autograd`, its node types and Autograd kernels.
///
/// The crate's operators and kernels are registered at link time: a binary
/// that reaches them only by name ([`library::call`](crate::library::call),
/// [`dispatcher().find`](crate::dispatch::Dispatcher::find)) must name the
/// crate once (`use my_ops as _;`), or the linker drops it, registrations
/// and all (the lookup error then says so).
///
/// ```ignore
/// // build.rs
/// fn main() {
///     opforge_codegen::Build::new("native_functions.yaml").run();
/// }
///
/// // src/lib.rs
/// opforge::include_schema!();
/// pub mod kernels; // the functions `dispatch:` names, each with #[kernel(KEY)]
/// pub use generated::{at, ops, sig, torch, OpId, OPS};
///
/// // src/kernels/cpu.rs, for `dispatch: CPU: cpu::scale` of
/// // `mylib::scale(Tensor self, float k=1.0) -> Tensor`
/// use opforge::{kernel, Result, Tensor};
/// #[kernel(CPU)]
/// pub fn scale(self_: &Tensor, k: f64) -> Result<Tensor> {
///     opforge::ops::mul_Scalar(self_, opforge::Scalar::Float(k))
/// }
/// ```
///
/// (`my_ops/` in the repository is this, tested.)
#[macro_export]
macro_rules! include_schema {
    () => {
        include!(concat!(env!("OUT_DIR"), "/opforge/schema.rs"));
    };
}

/// One link-time kernel entry: `kernel_entry!(STATIC, "op.overload", "Key",
/// "schema", FnType, SpecType, function, file, line)` registers `function`
/// (of the function pointer type `FnType`, its adapter described by
/// `SpecType`) as the operator's kernel at `Key`. What the generator,
/// `#[kernel]` and `#[op]` emit for a registration. Not a public API.
#[doc(hidden)]
#[macro_export]
macro_rules! __opforge_kernel_entry {
    ($static:ident, $op:literal, $key:literal, $schema:literal, $fn_ty:ty, $spec:ty, $func:expr, $file:expr, $line:expr) => {
        #[doc(hidden)]
        #[allow(non_upper_case_globals)]
        #[$crate::__private::linkme::distributed_slice($crate::__private::KERNELS)]
        #[linkme(crate = $crate::__private::linkme)]
        static $static: $crate::__private::KernelEntry = $crate::__private::KernelEntry {
            op: $op,
            key: $key,
            schema: $schema,
            entry: $crate::__private::Entry::new::<$fn_ty, $spec>(&($func as $fn_ty)),
            file: $file,
            line: $line,
        };
    };
}

/// Items the macros' expansions refer to. Not a public API.
#[doc(hidden)]
pub mod __private {
    pub use crate::__opforge_kernel_entry as kernel_entry;
    pub use crate::classes::{ClassEntry, CLASS_DEFS};
    pub use crate::dispatch::adapter::{Entry, TypedCaller};
    pub use crate::dispatch::linked::{
        KernelEntry, Library, OperatorDef, TypedApi, KERNELS, LIBRARIES, OPERATOR_DEFS, TYPED_APIS,
    };
    pub use crate::dispatch::typed::call;
    pub use crate::dispatch::{dispatcher, Kernel, KeySet, Operator, Unboxed};
    pub use crate::overrides::{call_op, guarded, protocol, Site, TypedRet};
    pub use crate::value::{Args, FromValue, IntoValues, Returns, ToValue, Value};
    pub use linkme;
    pub use opforge_macros::{kernel_impl, op_impl};

    /// The types the generated typed API names.
    pub mod prelude {
        pub use crate::error::Result;
        pub use crate::tensor::{
            DType, Device, Generator, Layout, MemoryFormat, QScheme, Scalar, Storage, Stream,
            Tensor,
        };
        pub use crate::value::{ScriptObject, Value};
    }

    /// What a `#[kernel(Autograd, …)]` registration runs around the kernel:
    /// a re-entry of the same kernel on the thread is an error naming
    /// `below_autograd()`, not a stack overflow.
    pub use crate::autograd::mode::enter_autograd_kernel;

    /// Marks a view operator's fresh result as a view of the argument it
    /// aliases (what a view operator's kernel registration calls).
    pub use crate::autograd::views::mark_view;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_op_is_found_by_name() {
        for (i, op) in OPS.iter().enumerate() {
            // A name without a namespace is `aten`'s.
            if op.namespace == "aten" {
                assert_eq!(OpId::from_name(op.name), Some(OpId::ALL[i]), "{}", op.name);
            }
            let qualified = format!("{}::{}", op.namespace, op.name);
            assert_eq!(OpId::from_name(&qualified), Some(OpId::ALL[i]));
            assert_eq!(OpId::ALL[i].schema().name, op.name);
        }
        assert_eq!(OpId::from_name("no_such_op"), None);
        assert_eq!(OpId::from_name("add.NoSuchOverload"), None);
    }

    #[test]
    fn groups_and_bindings_point_at_matching_ops() {
        use crate::tables::SchemaKind;
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
