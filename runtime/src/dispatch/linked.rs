//! Registrations collected at link time from every crate of the program:
//! `#[kernel]` kernels and `#[op]` operator definitions. Written only by the
//! registration macros (through `opforge::__private`); the dispatcher reads
//! them once, when it is built.

use super::adapter::{Entry, TypedCaller};
use super::{BoxedFn, TypedFallback};

/// A kernel registration collected at link time (by `#[kernel]`, via linkme).
/// Made by the registration macros only (through `opforge::__private`).
pub struct KernelEntry {
    /// `ns::name.overload` or `name.overload` (namespace `aten`).
    pub op: &'static str,
    /// The key name (`CPU`, `Meta`, `CompositeImplicitAutograd`, …).
    pub key: &'static str,
    /// The schema the kernel was checked against at compile time.
    pub schema: &'static str,
    /// The function and its signature's adapter (boxed and unboxed entry
    /// points).
    pub entry: Entry,
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
/// `KERNELS` (which may name them), so an `#[op]` operator exists from the
/// first dispatcher use on.
#[linkme::distributed_slice]
pub static OPERATOR_DEFS: [OperatorDef];

/// The operators of a crate's own schema file, as its build generated them
/// (`opforge_codegen::Build`, `opforge::include_schema!`): the dispatcher
/// registers them when it is built, beside the runtime's, and the crate's typed
/// API reaches them through [`Library::op`].
///
/// An operator with the name of one that exists (the runtime's, or another
/// library's) is that operator if the schemas are the same, and a registration
/// error otherwise.
pub struct Library {
    name: &'static str,
    ops: &'static [crate::tables::OpSchema],
    operators: std::sync::OnceLock<Box<[&'static super::Operator]>>,
}

impl Library {
    /// A library of `ops` (the generated `OPS` table) from crate `name`.
    pub const fn new(name: &'static str, ops: &'static [crate::tables::OpSchema]) -> Library {
        Library {
            name,
            ops,
            operators: std::sync::OnceLock::new(),
        }
    }

    /// The crate it comes from.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// Its operator schemas, in `OpId` order.
    pub fn schemas(&self) -> &'static [crate::tables::OpSchema] {
        self.ops
    }

    /// The dispatcher's operator for entry `i` of the table.
    #[inline]
    pub fn op(&'static self, i: usize) -> &'static super::Operator {
        match self.operators.get() {
            Some(ops) => ops[i],
            None => self.op_slow(i),
        }
    }

    #[cold]
    fn op_slow(&'static self, i: usize) -> &'static super::Operator {
        let d = super::dispatcher();
        self.operators
            .get_or_init(|| d.define_library(self).into_boxed_slice())[i]
    }

    pub(crate) fn set(&self, ops: Vec<&'static super::Operator>) {
        let _ = self.operators.set(ops.into_boxed_slice());
    }

    pub(crate) fn is_set(&self) -> bool {
        self.operators.get().is_some()
    }
}

/// A key's fallback collected at link time: the kernel that every operator
/// without a kernel of its own at `key` runs there (PyTorch's backend
/// fallback; the autograd layer's at `Autograd`). Two for one key are a
/// registration error naming both.
pub struct FallbackEntry {
    /// The key name (`Autograd`).
    pub key: &'static str,
    /// Boxed entry point.
    pub boxed: BoxedFn,
    /// The entry for typed calls, if the fallback takes them unboxed.
    pub typed: Option<TypedFallback>,
    /// The operators the fallback leaves alone (the key is skipped for them).
    pub leaves_alone: Option<fn(&crate::tables::OpSchema) -> bool>,
    /// Source file.
    pub file: &'static str,
    /// Source line.
    pub line: u32,
}

/// Every key fallback linked into the program.
#[linkme::distributed_slice]
pub static FALLBACKS: [FallbackEntry];

/// Every crate's library of operators (one per `include_schema!`).
#[linkme::distributed_slice]
pub static LIBRARIES: [&'static Library];

/// A generated typed API's callers: one per operator of `ops` (a generated
/// `OPS` table), in its order.
pub struct TypedApi {
    /// The operators' schemas.
    pub ops: &'static [crate::tables::OpSchema],
    /// Their callers, in the same order.
    pub calls: &'static [TypedCaller],
}

/// Every generated typed API linked into the program (the runtime's and each
/// crate's with a schema file of its own).
#[linkme::distributed_slice]
pub static TYPED_APIS: [TypedApi];

/// The typed API's caller of the operator with this schema, if a generated
/// typed API has it (an operator defined at run time has none).
pub fn typed_caller(schema: &'static crate::tables::OpSchema) -> Option<TypedCaller> {
    typed_apis().iter().find_map(|api| {
        let i = api.ops.iter().position(|s| std::ptr::eq(s, schema))?;
        api.calls.get(i).copied()
    })
}

/// The link-time registrations the dispatcher reads when it is built: the
/// [`LIBRARIES`], [`OPERATOR_DEFS`], [`KERNELS`] and [`FALLBACKS`] of the
/// program.
///
/// Under Miri, which cannot read linkme's section-bound statics, the program
/// has none: the dispatcher starts empty, and Miri runs the tests that build
/// their own operators (the tensor, storage and dispatch tests;
/// `docs/testing.md`).
pub(crate) fn registrations() -> (
    &'static [&'static Library],
    &'static [OperatorDef],
    &'static [KernelEntry],
    &'static [FallbackEntry],
) {
    #[cfg(not(miri))]
    {
        (&LIBRARIES, &OPERATOR_DEFS, &KERNELS, &FALLBACKS)
    }
    #[cfg(miri)]
    {
        (&[], &[], &[], &[])
    }
}

/// The [`TYPED_APIS`] of the program (none under Miri, as for
/// [`registrations`]).
fn typed_apis() -> &'static [TypedApi] {
    #[cfg(not(miri))]
    {
        &TYPED_APIS
    }
    #[cfg(miri)]
    {
        &[]
    }
}
