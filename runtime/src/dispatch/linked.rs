//! Registrations collected at link time from every crate of the program:
//! `#[kernel]` kernels and `#[op]` operator definitions. Written only by the
//! registration macros (through `opforge::__private`); the dispatcher reads
//! them once, when it is built.

use super::{BoxedFn, Unboxed};

/// A kernel registration collected at link time (by `#[kernel]`, via linkme).
/// Made by the registration macros only (through `opforge::__private`).
pub struct KernelEntry {
    /// `ns::name.overload` or `name.overload` (namespace `aten`).
    pub op: &'static str,
    /// The key name (`CPU`, `Meta`, `CompositeImplicitAutograd`, …).
    pub key: &'static str,
    /// The schema the kernel was checked against at compile time.
    pub schema: &'static str,
    /// Boxed entry point.
    pub boxed: BoxedFn,
    /// Unboxed entry point, typed.
    pub unboxed: fn() -> Unboxed,
    /// Source file.
    pub file: &'static str,
    /// Source line.
    pub line: u32,
}

/// Every kernel registered with `#[kernel]`, in any crate of the program.
///
/// Why linkme: registration must work from any crate (downstream crates add
/// kernels for existing operators) without a central list to edit, and cost
/// nothing until the dispatcher is first used; a distributed slice gathers the
/// entries at link time, and the dispatcher reads it once. Swapping to
/// `inventory` or a generated table would touch this item and `Dispatcher::build`
/// only.
#[linkme::distributed_slice]
pub static KERNELS: [KernelEntry];

/// An operator definition collected at link time (by `#[op]`, via linkme).
pub struct OperatorDef {
    /// The namespace-qualified schema (`mylib::scale(Tensor x, float k=1.0) -> Tensor`).
    pub schema: &'static str,
    /// Source file.
    pub file: &'static str,
    /// Source line.
    pub line: u32,
}

/// Every operator defined with `#[op]`, in any crate of the program. The
/// dispatcher defines them when it is built, before it registers the
/// [`KERNELS`] (which may name them), so an `#[op]` operator exists from the
/// first dispatcher use on.
#[linkme::distributed_slice]
pub static OPERATOR_DEFS: [OperatorDef];
