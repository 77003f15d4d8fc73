//! Dispatch: one [`Operator`] per operator overload, a kernel slot per dispatch key,
//! and the rules that pick the slot for a call.
//!
//! Keys follow PyTorch's priority order (highest first): `Autograd` →
//! `ADInplaceOrView` → `Python` → `BackendSelect` → backends (`Meta`, `CPU`). A call
//! computes the key set of its arguments (each tensor contributes its backend, its
//! class's keys, and `ADInplaceOrView` and `Autograd` while it requires grad:
//! [`crate::Tensor::key_set`]), adds the thread-local *include* set, removes
//! the *exclude* set and keys whose kernel is a fallthrough, and runs the kernel of
//! the highest remaining key. Kernels registered under the alias keys
//! `CompositeImplicitAutograd` / `CompositeExplicitAutograd(NonFunctional)` fill
//! concrete slots as PyTorch resolves them: an explicit kernel for a key wins, then
//! CompositeExplicitAutogradNonFunctional, CompositeExplicitAutograd, and
//! CompositeImplicitAutograd for backends; CompositeImplicitAutograd also fills
//! `Autograd` and `Python` when no backend kernel exists, so such an operator
//! decomposes above the Python key (whether or not its tensors require grad),
//! and `Functionalize` for an operator with alias annotations (a composite
//! view or in-place operator: functionalization must see what it does).
//!
//! Kernel slots are atomics: registration (at any time, from any thread) rebuilds
//! an operator's slots and publishes them; a typed call reads one slot with one
//! atomic load. Operators live for the whole program, as in PyTorch; a kernel
//! that is replaced or removed is freed once no call can still be running it
//! ([`KernelRef`]).
//!
//! The types (kernels, operators, the dispatcher) are defined here, since
//! each refers to the others; their behaviour is in one file per job:
//! `kernel.rs` (a kernel's entries and how a call runs one), `operator.rs`
//! (an operator's slots, registration and picking a kernel), `registry.rs`
//! (the dispatcher: the table, link-time registrations, fallbacks, lookup).

pub mod adapter;
mod kernel;
pub(crate) mod linked;
mod operator;
mod registry;
mod returns;
mod slot;
pub mod typed;
mod unboxed;

pub use adapter::TypedCaller;
pub use linked::typed_caller;
pub use slot::StaticSlot;
pub use unboxed::Unboxed;

pub use crate::keys::{DispatchKey, KeySet, LocalKeys, RUNTIME_KEYS};

use crate::error::{Error, Result};
use crate::tables::OpSchema;
use crate::value::Value;
use arc_swap::ArcSwapOption;
use std::sync::atomic::{AtomicBool, AtomicU32};
use std::sync::{Arc, Mutex, OnceLock, RwLock};

/// Set while registration errors wait to be returned by the first call.
static PENDING: AtomicBool = AtomicBool::new(false);

/// A boxed kernel: arguments in, results out. `op` and `keys` allow redispatch
/// (`op.redispatch(keys.below(key), args)`).
pub type BoxedFn = fn(op: &Operator, keys: KeySet, args: &[Value]) -> Result<Vec<Value>>;

/// A kernel for a run-time defined operator (a closure).
pub type DynBoxedFn =
    std::sync::Arc<dyn Fn(&Operator, KeySet, &[Value]) -> Result<Vec<Value>> + Send + Sync>;

/// The boxed entry point of a kernel.
#[derive(Clone)]
enum Boxed {
    /// A link-time registration (`#[kernel]`, the generated kernels): its
    /// function behind its signature's adapter, in the registration's static
    /// (never freed: a boxed call's fast slot holds it, see `Operator`).
    Entry(&'static adapter::Entry),
    /// A plain function.
    Fn(BoxedFn),
    /// A closure (kernels defined at run time).
    Dyn(DynBoxedFn),
    /// Skip this key: continue with the next lower key.
    Fallthrough,
}

/// One registered kernel: a boxed entry point (values in, values out), and for
/// kernels registered with `#[kernel]` / `#[op]` an unboxed one typed by the
/// operator's schema. Made by [`Kernel::from_closure`] and
/// [`Kernel::fallthrough`] (or by the registration macros).
///
/// ```
/// use opforge::dispatch::Kernel;
/// use opforge::Value;
/// let k = Kernel::from_closure("here", |_op, _keys, args: &[Value]| Ok(args.to_vec()));
/// assert_eq!(k.source(), "here");
/// assert!(!k.is_fallthrough() && !k.has_unboxed());
/// ```
#[derive(Clone)]
pub struct Kernel {
    boxed: Boxed,
    /// Interned per link-time entry ([`interned_unboxed`]): never freed, so the
    /// typed fast path can hold it without keeping the kernel alive.
    unboxed: Option<&'static Unboxed>,
    /// The schema the kernel was written for (typed kernels): registration
    /// refuses it for an operator with another schema.
    schema: Option<&'static str>,
    /// For a fallback that can take a typed call with its arguments unboxed.
    typed_fallback: Option<TypedFallback>,
    /// For a fallback: the operators it leaves alone (for them the key is
    /// skipped, as if each had a fallthrough kernel there).
    leaves_alone: Option<fn(&OpSchema) -> bool>,
    source: String,
}

/// A fallback kernel's entry for typed calls: the operator, the arguments' keys,
/// and the arguments (boxed only on request, see [`typed::TypedArgs`]); the
/// result as one value.
pub type TypedFallback =
    fn(op: &'static Operator, arg_keys: KeySet, args: &mut typed::TypedArgs<'_>) -> Result<Value>;

/// A kernel picked for a call ([`Operator::kernel`]), kept alive while this
/// lives: a kernel replaced or removed meanwhile (by [`Operator::override_kernel`]
/// or [`Operator::remove_kernel`]) is freed when the last `KernelRef` to it is
/// dropped. Cheap to take (no reference-count traffic between threads, up to a
/// few held at once per thread); hold it for a call, not for longer.
///
/// ```
/// use opforge::dispatch::{dispatcher, DispatchKey};
/// use opforge::Tensor;
/// let neg = dispatcher().find("aten::neg").unwrap();
/// let t = Tensor::from_vec(vec![1.0f32], &[1])?;
/// let (k, key) = neg.kernel(t.key_set())?;
/// assert_eq!(key, DispatchKey::CPU);
/// assert!(k.has_unboxed() && k.source().contains(".rs:"));
/// # Ok::<(), opforge::Error>(())
/// ```
pub struct KernelRef(arc_swap::Guard<Option<Arc<Kernel>>>);

/// One operator overload in the dispatcher: its schema and a kernel slot per
/// dispatch key. A call picks the highest key of its arguments' key set that
/// has a kernel.
///
/// ```
/// use opforge::dispatch::{dispatcher, DispatchKey, Kernel};
/// use opforge::{Tensor, Value};
/// let op = dispatcher().find("aten::neg").unwrap();
/// assert_eq!(op.schema.schema, "neg(Tensor self) -> Tensor");
/// let t = Tensor::from_vec(vec![-1.0f32], &[1])?;
/// let (_, key) = op.kernel(t.key_set())?; // where a call with `t` goes
/// assert_eq!(key, DispatchKey::CPU);
/// let out = op.call_boxed(&[Value::Tensor(t)])?;
/// assert_eq!(out[0].as_tensor().unwrap().to_vec::<f32>()?, vec![1.0]);
/// // A second kernel for a key is an error; replacing one is explicit.
/// let k = || Kernel::from_closure("doc", |_, _, args: &[Value]| Ok(args.to_vec()));
/// assert!(op.register(DispatchKey::CPU, k()).is_err());
/// # Ok::<(), opforge::Error>(())
/// ```
pub struct Operator {
    /// Its schema.
    pub schema: &'static OpSchema,
    /// Registrations per key (runtime and alias keys).
    registered: Mutex<Vec<(DispatchKey, Arc<Kernel>)>>,
    /// Resolved kernel per runtime key (index = `DispatchKey::slot`): empty if
    /// the key never had one; meaningful only where `active` has the key (see
    /// [`Operator::resolve`]). A call holds what it loads from here while it
    /// runs ([`KernelRef`]); a kernel stored over is freed after the last call
    /// that loaded it.
    table: [ArcSwapOption<Kernel>; RUNTIME_KEYS],
    /// The unboxed entry of the kernel in `table` at the same index, or null
    /// if it has none: what a typed call reads (one atomic load, no reference
    /// held). Entries are interned and never freed ([`interned_unboxed`]).
    fast: [StaticSlot<Unboxed>; RUNTIME_KEYS],
    /// The link-time boxed entry of the kernel in `table` at the same index,
    /// or null if it is not a link-time registration: what a boxed call reads
    /// (one atomic load, no reference held). Entries are statics.
    fast_boxed: [StaticSlot<adapter::Entry>; RUNTIME_KEYS],
    /// Runtime keys whose resolved kernel is a real kernel (not fallthrough / none).
    active: AtomicU32,
    /// For an operator defined with [`Dispatcher::define`](super::Dispatcher::define) (`torch.library` or
    /// `#[op]`): where it was defined. Such operators get PyTorch's custom-op
    /// message when a meta call finds no kernel.
    defined_at: Option<String>,
    /// For an operator a crate's own schema file declares: where.
    declared_at: Option<String>,
    /// Per-layer data, one slot per runtime key: each layer above the
    /// dispatcher (a module and a dispatch key: the override protocols at
    /// `Python`, autograd at `Autograd`, …) keeps what it needs per operator
    /// in the slot of its own key, made once, typed by what it holds.
    layers: [OnceLock<operator::Attached>; RUNTIME_KEYS],
    /// A registration conflict involving this operator: every call returns it.
    poison: OnceLock<Error>,
}

/// Global fallback kernels per runtime key.
type Fallbacks = [Option<Arc<Kernel>>; RUNTIME_KEYS];

/// The process-wide dispatcher: the operators of the generated tables (indexed by
/// `OpId`), those of crates with schema files of their own, and those defined
/// at run time; built on first use, with every kernel linked into the program.
///
/// ```
/// use opforge::dispatch::{dispatcher, DispatchKey};
/// use opforge::OpId;
/// let d = dispatcher();
/// assert!(d.registration_errors().is_empty());
/// let neg = d.op(OpId::neg); // by id (what the typed API uses)
/// assert!(std::ptr::eq(neg, d.find("aten::neg").unwrap())); // or by name
/// assert!(d.overloads("aten", "add").iter().any(|op| op.schema.name == "add.Scalar"));
/// assert!(neg.registered_keys().contains(&DispatchKey::CPU));
/// ```
pub struct Dispatcher {
    builtin: &'static [Operator],
    dynamic: RwLock<Vec<&'static Operator>>,
    fallbacks: RwLock<Fallbacks>,
    /// Problems found while collecting link-time registrations (duplicates,
    /// unknown operators or keys); reported by [`Dispatcher::registration_errors`].
    errors: Vec<Error>,
}

static DISPATCHER: OnceLock<Dispatcher> = OnceLock::new();

/// The dispatcher, built on first use from the generated tables and every
/// `#[kernel]` registration linked into the program.
///
/// ```
/// use opforge::dispatch::dispatcher;
/// use opforge::{Tensor, Value};
/// // Look an operator up by name and call it boxed: one value per argument,
/// // in schema order; one value per return.
/// let neg = dispatcher().find("aten::neg").expect("a built-in operator");
/// let x = Tensor::from_vec(vec![1.0f32, -2.0], &[2])?;
/// let out = neg.call_boxed(&[Value::Tensor(x)])?;
/// let [Value::Tensor(y)] = &out[..] else { unreachable!() };
/// assert_eq!(y.to_vec::<f32>()?, [-1.0, 2.0]);
/// // A name nobody registered is not found (`library::call` says why).
/// assert!(dispatcher().find("mylib::clip_norm").is_none());
/// # Ok::<(), opforge::Error>(())
/// ```
pub fn dispatcher() -> &'static Dispatcher {
    DISPATCHER.get_or_init(Dispatcher::build)
}

#[cfg(test)]
mod tests;
