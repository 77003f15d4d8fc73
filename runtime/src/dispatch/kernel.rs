//! A kernel: its boxed entry, its unboxed (typed) entry, and the
//! reference a call holds while it runs one ([`KernelRef`]).

use super::linked::KernelEntry;
use super::Operator;
use super::{adapter, returns, typed};
use crate::error::Result;
use crate::keys::KeySet;
use crate::tables::OpSchema;
use crate::value::Value;
use arc_swap::ArcSwapOption;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

/// A boxed kernel: arguments in, results out. `op` and `keys` allow redispatch
/// (`op.redispatch(keys.below(key), args)`).
pub type BoxedFn = fn(op: &Operator, keys: KeySet, args: &[Value]) -> Result<Vec<Value>>;

/// A kernel for a run-time defined operator (a closure).
pub type DynBoxedFn =
    std::sync::Arc<dyn Fn(&Operator, KeySet, &[Value]) -> Result<Vec<Value>> + Send + Sync>;

/// The boxed entry point of a kernel.
#[derive(Clone)]
pub(super) enum Boxed {
    /// A link-time registration (`#[kernel]`, the generated kernels): its
    /// function behind its signature's adapter.
    Entry(adapter::Entry),
    /// A plain function.
    Fn(BoxedFn),
    /// A closure (kernels defined at run time).
    Dyn(DynBoxedFn),
    /// Skip this key: continue with the next lower key.
    Fallthrough,
}

/// A kernel's unboxed entry point: a function pointer together with the
/// identity of its type. A typed call gets the pointer back only as the exact
/// type it was made from ([`Unboxed::get`]), so a kernel registered for one
/// schema can never be called through another schema's signature.
///
/// ```
/// use opforge::dispatch::Unboxed;
/// fn double(x: i64) -> i64 { 2 * x }
/// let u = Unboxed::new(double as fn(i64) -> i64);
/// assert_eq!(u.get::<fn(i64) -> i64>().map(|f| f(21)), Some(42));
/// assert!(u.get::<fn(f64) -> f64>().is_none()); // another type: refused
/// ```
///
/// Only pointer-sized values fit:
///
/// ```compile_fail
/// opforge::dispatch::Unboxed::new([0u64; 2]);
/// ```
///
/// and only values that may cross threads (the dispatcher is shared):
///
/// ```compile_fail
/// opforge::dispatch::Unboxed::new(std::ptr::null::<u8>());
/// ```
#[derive(Clone, Copy)]
pub struct Unboxed {
    pub(super) ty: std::any::TypeId,
    /// The bytes of a value of type `ty` (a function pointer): written by
    /// [`Unboxed::new`], read back only by [`Unboxed::get`] with that type.
    pub(super) bits: std::mem::MaybeUninit<*const ()>,
}

// SAFETY: `bits` holds a value of a type that is `Send` (a bound of
// `Unboxed::new`, the only constructor; the fields are private) and is only ever
// copied out as that type, so moving the bytes to another thread moves an `F`.
unsafe impl Send for Unboxed {}
// SAFETY: `bits` holds a value of a type that is `Sync` (a bound of
// `Unboxed::new`); `&Unboxed` only copies it out (`get`), never writes it, so
// sharing the bytes between threads shares an `F`.
unsafe impl Sync for Unboxed {}

impl Unboxed {
    /// Erases `f` (a function pointer, or any `Copy` value of a pointer's size
    /// and alignment; anything else does not compile).
    pub fn new<F: Copy + Send + Sync + 'static>(f: F) -> Unboxed {
        const {
            assert!(
                std::mem::size_of::<F>() == std::mem::size_of::<*const ()>()
                    && std::mem::align_of::<F>() == std::mem::align_of::<*const ()>(),
                "Unboxed holds function pointers: a value of a pointer's size and alignment"
            )
        };
        let mut bits = std::mem::MaybeUninit::<*const ()>::uninit();
        // SAFETY: `bits` has the size and alignment of `F` (checked at compile
        // time above), so it is valid for one write of an `F`; `MaybeUninit`
        // may hold any bytes, padding included.
        unsafe { bits.as_mut_ptr().cast::<F>().write(f) };
        Unboxed {
            ty: std::any::TypeId::of::<F>(),
            bits,
        }
    }

    /// The function pointer, if it was made from an `F` (else `None`).
    #[inline(always)]
    pub fn get<F: Copy + 'static>(&self) -> Option<F> {
        if self.ty == std::any::TypeId::of::<F>() {
            // SAFETY: equal type ids: `new::<F>` wrote an `F` into `bits`, and
            // nothing writes them afterwards (the field is private, the value
            // `Copy`); reading it back as `F` reads a valid `F`.
            Some(unsafe { self.bits.as_ptr().cast::<F>().read() })
        } else {
            None
        }
    }
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
    pub(super) boxed: Boxed,
    /// Interned per link-time entry ([`interned_unboxed`]): never freed, so the
    /// typed fast path can hold it without keeping the kernel alive.
    pub(super) unboxed: Option<&'static Unboxed>,
    /// The schema the kernel was written for (typed kernels): registration
    /// refuses it for an operator with another schema.
    pub(super) schema: Option<&'static str>,
    /// For a fallback that can take a typed call with its arguments unboxed.
    pub(super) typed_fallback: Option<TypedFallback>,
    /// For a fallback: the operators it leaves alone (for them the key is
    /// skipped, as if each had a fallthrough kernel there).
    pub(super) leaves_alone: Option<fn(&OpSchema) -> bool>,
    pub(super) source: String,
}

/// A fallback kernel's entry for typed calls: the operator, the arguments' keys,
/// and the arguments (boxed only on request, see [`typed::TypedArgs`]); the
/// result as one value.
pub type TypedFallback =
    fn(op: &'static Operator, arg_keys: KeySet, args: &mut typed::TypedArgs<'_>) -> Result<Value>;

impl Kernel {
    /// A fallthrough kernel.
    pub fn fallthrough(source: impl Into<String>) -> Kernel {
        Kernel {
            boxed: Boxed::Fallthrough,
            unboxed: None,
            schema: None,
            typed_fallback: None,
            leaves_alone: None,
            source: source.into(),
        }
    }

    /// A boxed-only kernel from a closure.
    pub fn from_closure(
        source: impl Into<String>,
        f: impl Fn(&Operator, KeySet, &[Value]) -> Result<Vec<Value>> + Send + Sync + 'static,
    ) -> Kernel {
        Kernel {
            boxed: Boxed::Dyn(std::sync::Arc::new(f)),
            unboxed: None,
            schema: None,
            typed_fallback: None,
            leaves_alone: None,
            source: source.into(),
        }
    }

    /// The same kernel, also taking typed calls with their arguments unboxed
    /// (for a key's fallback, such as the override protocols' `Python` key).
    pub fn with_typed_fallback(mut self, f: TypedFallback) -> Kernel {
        self.typed_fallback = Some(f);
        self
    }

    /// The same fallback, skipped for the operators `f` picks (their key
    /// resolves as if they had a fallthrough kernel there).
    pub fn leaving_alone(mut self, f: fn(&OpSchema) -> bool) -> Kernel {
        self.leaves_alone = Some(f);
        self
    }

    /// The entry for typed calls of a fallback, if it has one.
    #[inline]
    pub fn typed_fallback(&self) -> Option<TypedFallback> {
        self.typed_fallback
    }

    /// A kernel collected at link time (`#[kernel]`, `#[op]`).
    pub(super) fn from_entry(e: &'static KernelEntry) -> Kernel {
        Kernel {
            boxed: Boxed::Entry(e.entry),
            unboxed: interned_unboxed(e),
            schema: Some(e.schema),
            typed_fallback: None,
            leaves_alone: None,
            source: format!("{}:{}", e.file, e.line),
        }
    }

    /// A fallthrough (skip this key)?
    pub fn is_fallthrough(&self) -> bool {
        matches!(self.boxed, Boxed::Fallthrough)
    }

    /// Has an unboxed entry point?
    #[inline]
    pub fn has_unboxed(&self) -> bool {
        self.unboxed.is_some()
    }

    /// The unboxed entry point as the function-pointer type `F`, if the kernel has
    /// one of exactly that type (`opforge::sig::<op>` for an operator's kernels).
    #[inline(always)]
    pub fn unboxed<F: Copy + 'static>(&self) -> Option<F> {
        match self.unboxed {
            Some(u) => u.get::<F>(),
            None => None,
        }
    }

    /// The unboxed entry point, untyped (it outlives the kernel: entries are
    /// made once per link-time registration and never freed).
    #[inline]
    pub fn unboxed_entry(&self) -> Option<&'static Unboxed> {
        self.unboxed
    }

    /// Where it was registered (`file:line`, or what the registering code said).
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The schema a typed kernel was written for (`None` for closures).
    pub fn schema(&self) -> Option<&'static str> {
        self.schema
    }

    /// Calls the boxed entry point. A closure's results are checked against the
    /// operator's schema (count, then each return's type, with PyTorch's
    /// conversions: an int for a `float`, a list of tensors for a `Tensor[]`):
    /// a mismatch is an error naming the operator, the kernel and the return
    /// position. A kernel of `#[kernel]` was checked at compile time.
    #[inline]
    pub fn call_boxed(&self, op: &Operator, keys: KeySet, args: &[Value]) -> Result<Vec<Value>> {
        match &self.boxed {
            Boxed::Entry(e) => (e.boxed)(e.func, op, keys, args),
            Boxed::Fn(f) => f(op, keys, args),
            Boxed::Dyn(f) => returns::check(op, &self.source, f(op, keys, args)?),
            Boxed::Fallthrough => Err(op.no_kernel(keys)),
        }
    }
}

/// The unboxed entry point of the link-time registration `e`, made once per
/// entry and never freed (there are as many as the program has `#[kernel]`s),
/// so that re-registering a link-time kernel allocates nothing new and the
/// typed fast path reads a pointer that stays valid.
pub(super) fn interned_unboxed(e: &'static KernelEntry) -> Option<&'static Unboxed> {
    static ENTRIES: OnceLock<Mutex<HashMap<usize, Option<&'static Unboxed>>>> = OnceLock::new();
    let mut entries = ENTRIES
        .get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    *entries
        .entry(e as *const KernelEntry as usize)
        .or_insert_with(|| (e.entry.unboxed)(e.entry.func).map(|u| &*Box::leak(Box::new(u))))
}

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

impl KernelRef {
    /// The kernel in `slot`, if it has one.
    #[inline]
    pub(super) fn load(slot: &ArcSwapOption<Kernel>) -> Option<KernelRef> {
        let guard = slot.load();
        guard.is_some().then_some(KernelRef(guard))
    }
}

impl std::ops::Deref for KernelRef {
    type Target = Kernel;

    #[inline]
    fn deref(&self) -> &Kernel {
        match &*self.0 {
            Some(k) => k,
            // `KernelRef::load`, the only constructor, keeps full slots only,
            // and a guard's value never changes.
            None => unreachable!("a KernelRef holds a kernel"),
        }
    }
}
