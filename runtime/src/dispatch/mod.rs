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

pub mod adapter;
pub(crate) mod linked;
mod returns;
pub mod typed;

pub use adapter::TypedCaller;
pub use linked::typed_caller;
use linked::{KernelEntry, Library};

pub use crate::keys::{DispatchKey, KeySet, LocalKeys, RUNTIME_KEYS};

use crate::error::{DuplicateKernel, Error, NoKernel, Result};
use crate::tables::OpSchema;
use crate::value::Value;
use arc_swap::ArcSwapOption;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, Ordering};
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
    ty: std::any::TypeId,
    /// The bytes of a value of type `ty` (a function pointer): written by
    /// [`Unboxed::new`], read back only by [`Unboxed::get`] with that type.
    bits: std::mem::MaybeUninit<*const ()>,
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
    fn from_entry(e: &'static KernelEntry) -> Kernel {
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
fn interned_unboxed(e: &'static KernelEntry) -> Option<&'static Unboxed> {
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
    fn load(slot: &ArcSwapOption<Kernel>) -> Option<KernelRef> {
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
    fast: [AtomicPtr<Unboxed>; RUNTIME_KEYS],
    /// Runtime keys whose resolved kernel is a real kernel (not fallthrough / none).
    active: AtomicU32,
    /// For an operator defined with [`Dispatcher::define`] (`torch.library` or
    /// `#[op]`): where it was defined. Such operators get PyTorch's custom-op
    /// message when a meta call finds no kernel.
    defined_at: Option<String>,
    /// For an operator a crate's own schema file declares: where.
    declared_at: Option<String>,
    /// Per-layer data, one slot per runtime key: each layer above the
    /// dispatcher (a module and a dispatch key: the override protocols at
    /// `Python`, autograd at `Autograd`, …) keeps what it needs per operator
    /// in the slot of its own key, made once, typed by what it holds.
    layers: [OnceLock<Attached>; RUNTIME_KEYS],
    /// A registration conflict involving this operator: every call returns it.
    poison: OnceLock<Error>,
}

/// A layer's data on an operator, with its type: asking for it as its own type
/// is one comparison (the protocols ask on every call a mode sees).
struct Attached {
    type_id: std::any::TypeId,
    data: &'static (dyn std::any::Any + Send + Sync),
}

impl Attached {
    fn new<T: std::any::Any + Send + Sync>(data: &'static T) -> Attached {
        Attached {
            type_id: std::any::TypeId::of::<T>(),
            data,
        }
    }

    #[inline]
    fn get<T: std::any::Any + Send + Sync>(&self) -> Option<&'static T> {
        if self.type_id != std::any::TypeId::of::<T>() {
            return None;
        }
        let p: *const (dyn std::any::Any + Send + Sync) = self.data;
        // SAFETY: `type_id` is the `TypeId` of the concrete type behind `data`:
        // `Attached::new` is the only constructor and sets both from one `&'static
        // T`, and the fields are private to this module and never written after.
        // Equal ids: `data` points at a live `T` (it is `'static`).
        Some(unsafe { &*p.cast::<T>() })
    }
}

impl std::fmt::Debug for Operator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}::{}", self.schema.namespace, self.schema.name)
    }
}

impl Operator {
    /// A new operator with no kernels.
    pub fn new(schema: &'static OpSchema) -> Operator {
        Operator {
            schema,
            registered: Mutex::new(Vec::new()),
            table: std::array::from_fn(|_| ArcSwapOption::empty()),
            fast: std::array::from_fn(|_| AtomicPtr::new(std::ptr::null_mut())),
            active: AtomicU32::new(0),
            defined_at: None,
            declared_at: None,
            layers: std::array::from_fn(|_| OnceLock::new()),
            poison: OnceLock::new(),
        }
    }

    /// The data of the layer at `key` for this operator, made by `init` on
    /// first use (the override protocols keep the operator's handle at
    /// `Python`). `None` if that layer's slot holds data of another type.
    ///
    /// ```
    /// use opforge::dispatch::{dispatcher, DispatchKey};
    /// static NOTE: &str = "autograd's";
    /// let neg = dispatcher().find("aten::neg").unwrap();
    /// let got = neg.layer_data_with(DispatchKey::Autograd, || &NOTE);
    /// assert_eq!(got, Some(&NOTE));
    /// assert_eq!(neg.layer_data::<&str>(DispatchKey::Autograd), Some(&NOTE));
    /// assert!(neg.layer_data::<u32>(DispatchKey::Autograd).is_none()); // another type
    /// assert!(neg.layer_data::<&str>(DispatchKey::ADInplaceOrView).is_none()); // another layer
    /// ```
    #[inline]
    pub fn layer_data_with<T: std::any::Any + Send + Sync>(
        &self,
        key: DispatchKey,
        init: impl FnOnce() -> &'static T,
    ) -> Option<&'static T> {
        self.layers[key.slot()]
            .get_or_init(|| Attached::new(init()))
            .get()
    }

    /// The data of the layer at `key` ([`Operator::layer_data_with`]), if it
    /// was made yet and is a `T`.
    #[inline]
    pub fn layer_data<T: std::any::Any + Send + Sync>(
        &self,
        key: DispatchKey,
    ) -> Option<&'static T> {
        self.layers[key.slot()].get()?.get()
    }

    /// The registration conflict that disabled this operator, if any.
    pub fn registration_error(&self) -> Option<&Error> {
        self.poison.get()
    }

    /// Disables the operator: every call returns `e` (a registration conflict
    /// is an error, never a silent winner).
    fn poison(&self, e: Error) {
        let _ = self.poison.set(e);
        for (slot, fast) in self.table.iter().zip(&self.fast) {
            fast.store(std::ptr::null_mut(), Ordering::Release);
            slot.store(None);
        }
        self.active.store(0, Ordering::Release);
    }

    /// Where the operator was defined, for one defined with [`Dispatcher::define`]
    /// (`None` for the built-in and schema-file operators).
    pub fn defined_at(&self) -> Option<&str> {
        self.defined_at.as_deref()
    }

    /// Where the operator's schema comes from: the place of its definition or
    /// declaration (`my_ops's native_functions.yaml:12`), `None` for the runtime's
    /// own operators.
    pub fn origin(&self) -> Option<&str> {
        self.defined_at.as_deref().or(self.declared_at.as_deref())
    }

    /// `ns::name.overload`.
    pub fn qualified_name(&self) -> String {
        format!("{}::{}", self.schema.namespace, self.schema.name)
    }

    /// Registers `kernel` for `key`. A second kernel for the same key is an error
    /// naming both registrations, and so is a typed kernel written for another
    /// schema.
    pub fn register(&self, key: DispatchKey, kernel: Kernel) -> Result<()> {
        self.check_schema(&kernel)?;
        let mut regs = self.registered.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, prev)) = regs.iter().find(|(k, _)| *k == key) {
            return Err(Error::DuplicateKernel(Box::new(DuplicateKernel {
                op: self.qualified_name(),
                key,
                first: prev.source.clone(),
                second: kernel.source,
            })));
        }
        regs.push((key, Arc::new(kernel)));
        self.resolve(&regs, &dispatcher().fallbacks());
        Ok(())
    }

    /// Replaces the kernel for `key`, or adds it if there is none: the explicit
    /// way to override a registration (PyTorch's `allow_override=True`). A typed
    /// kernel written for another schema is refused, as by [`Operator::register`].
    /// The replaced kernel is freed once no call is running it.
    pub fn override_kernel(&self, key: DispatchKey, kernel: Kernel) -> Result<()> {
        self.check_schema(&kernel)?;
        let mut regs = self.registered.lock().unwrap_or_else(|e| e.into_inner());
        regs.retain(|(k, _)| *k != key);
        regs.push((key, Arc::new(kernel)));
        self.resolve(&regs, &dispatcher().fallbacks());
        Ok(())
    }

    /// Removes the kernel registered directly for `key` (PyTorch drops a
    /// library's registrations this way when the library goes away) and returns
    /// whether there was one. Calls running meanwhile see either the old kernel
    /// or the new resolution, never a missing kernel; the removed kernel is
    /// freed once no call is running it.
    ///
    /// ```
    /// use opforge::dispatch::DispatchKey;
    /// use opforge::library::{self, Library, LibraryKind};
    /// use opforge::Value;
    /// let lib = Library::new("doc_remove", LibraryKind::Def)?;
    /// lib.define("answer(Tensor x) -> int")?;
    /// lib.impl_("answer", DispatchKey::CPU, |_: &[Value]| Ok(vec![Value::Int(42)]))?;
    /// let op = opforge::dispatch::dispatcher().find("doc_remove::answer").unwrap();
    /// let x = Value::Tensor(opforge::Tensor::from_vec(vec![1.0f32], &[1])?);
    /// assert!(library::call("doc_remove::answer", &[x.clone()], &[]).is_ok());
    /// assert!(op.remove_kernel(DispatchKey::CPU));
    /// assert!(!op.remove_kernel(DispatchKey::CPU));
    /// assert!(library::call("doc_remove::answer", &[x], &[]).is_err());
    /// # Ok::<(), opforge::Error>(())
    /// ```
    pub fn remove_kernel(&self, key: DispatchKey) -> bool {
        let mut regs = self.registered.lock().unwrap_or_else(|e| e.into_inner());
        let before = regs.len();
        regs.retain(|(k, _)| *k != key);
        let removed = regs.len() != before;
        if removed {
            self.resolve(&regs, &dispatcher().fallbacks());
        }
        removed
    }

    /// A typed kernel must have been written for this operator's schema.
    fn check_schema(&self, kernel: &Kernel) -> Result<()> {
        match kernel.schema {
            Some(s) if !same_schema(s, self.schema) => Err(Error::Runtime(
                format!(
                    "{}: cannot register the kernel from {} for `{}`: it was written for `{s}`",
                    self.qualified_name(),
                    kernel.source,
                    qualified_schema(self.schema)
                )
                .into(),
            )),
            _ => Ok(()),
        }
    }

    /// Every kernel registered directly for this operator: its key and the kernel
    /// (whose [`Kernel::source`] says where it came from), in key order.
    ///
    /// ```
    /// use opforge::dispatch::{dispatcher, DispatchKey};
    /// let neg = dispatcher().find("aten::neg").unwrap();
    /// let keys: Vec<DispatchKey> = neg.registrations().iter().map(|(k, _)| *k).collect();
    /// assert!(keys.contains(&DispatchKey::CPU) && keys.contains(&DispatchKey::Meta));
    /// ```
    pub fn registrations(&self) -> Vec<(DispatchKey, Arc<Kernel>)> {
        let regs = self.registered.lock().unwrap_or_else(|e| e.into_inner());
        let mut out: Vec<(DispatchKey, Arc<Kernel>)> = regs.clone();
        out.sort_by_key(|(k, _)| *k);
        out
    }

    /// The keys that have kernels registered directly (for error messages).
    pub fn registered_keys(&self) -> Vec<DispatchKey> {
        let regs = self.registered.lock().unwrap_or_else(|e| e.into_inner());
        let mut keys: Vec<DispatchKey> = regs
            .iter()
            .filter(|(_, k)| !k.is_fallthrough())
            .map(|(k, _)| *k)
            .collect();
        keys.sort();
        keys
    }

    /// Recomputes every runtime slot from the registrations and global fallbacks.
    ///
    /// A call reads the active-key mask, then the slot of the key it picked, so a
    /// call racing with this may pair the mask from before it with slots from
    /// after it. Two rules keep every such pair consistent: the slots a new mask
    /// names are stored before the mask is published (a call that sees the new
    /// mask sees them, by release/acquire), and a slot is never cleared, only
    /// overwritten with another kernel (a call that saw the old mask finds either
    /// the old kernel or its replacement, never nothing). A slot whose key the
    /// mask drops keeps its last kernel, which the mask hides; the slot holds a
    /// reference, so a stale slot still points at a live kernel (one per key at
    /// most: a kernel is freed when it is stored over and no call holds it).
    /// A typed call reads the `fast` slot, whose entries are never freed; null
    /// there sends it to the full slot. Only [`Operator::poison`] clears slots,
    /// and a call that then finds an empty slot reports the poison.
    fn resolve(&self, regs: &[(DispatchKey, Arc<Kernel>)], fallbacks: &Fallbacks) {
        if self.poison.get().is_some() {
            return;
        }
        let get = |k: DispatchKey| regs.iter().find(|(x, _)| *x == k).map(|(_, v)| v);
        let cia = get(DispatchKey::CompositeImplicitAutograd);
        let cea = get(DispatchKey::CompositeExplicitAutogradNonFunctional)
            .or_else(|| get(DispatchKey::CompositeExplicitAutograd));
        let has_backend = DispatchKey::BACKENDS.iter().any(|&b| get(b).is_some()) || cea.is_some();
        let mut active = 0u32;
        for key in DispatchKey::RUNTIME {
            let direct = get(key);
            let resolved = if key.is_backend() {
                direct.or(cea).or(cia)
            } else if key == DispatchKey::Autograd || key == DispatchKey::Python {
                // A decomposition runs above the `Python` key even for
                // tensors without the `Autograd` key (every PyTorch tensor has
                // it; here only those that require grad): handlers see the
                // operators it decomposes into, as in PyTorch.
                direct.or(if has_backend { None } else { cia })
            } else if key == DispatchKey::Functionalize {
                // Functionalization decomposes only the composites that view
                // or write (`reshape`, `to`): their aliasing is what it must
                // see. Others run below it on plain values, as PyTorch
                // registers only those decompositions at its key.
                let aliasing = self.schema.args.iter().any(|a| a.alias.is_some())
                    || self.schema.returns.iter().any(|r| r.alias.is_some());
                direct.or(if has_backend || !aliasing { None } else { cia })
            } else {
                direct
            };
            let fallback = fallbacks[key.slot()]
                .as_ref()
                .filter(|f| !f.leaves_alone.is_some_and(|skip| skip(self.schema)));
            let resolved = resolved.or(fallback);
            if let Some(k) = resolved.filter(|k| !k.is_fallthrough()) {
                let slot = key.slot();
                active |= 1 << slot;
                let same = matches!(&*self.table[slot].load(), Some(cur) if Arc::ptr_eq(cur, k));
                if !same {
                    self.table[slot].store(Some(k.clone()));
                }
                let fast = k
                    .unboxed
                    .map_or(std::ptr::null_mut(), |u| (u as *const Unboxed).cast_mut());
                self.fast[slot].store(fast, Ordering::Release);
            }
        }
        self.active.store(active, Ordering::Release);
    }

    /// The key a call with argument key set `keys` dispatches to, after the
    /// thread-local include/exclude sets and fallthroughs.
    #[inline]
    pub fn dispatch_key(&self, keys: KeySet) -> Option<DispatchKey> {
        let local = LocalKeys::get();
        let ks = (keys | local.included) - local.excluded;
        let active = KeySet::from_bits(self.active.load(Ordering::Acquire));
        (ks & active).highest()
    }

    /// The kernel for a call with argument key set `keys`, and the key it runs at.
    /// The first call after the dispatcher found registration errors returns them
    /// ([`Error::Registration`]). The kernel stays alive while the [`KernelRef`]
    /// does, even if it is replaced meanwhile.
    #[inline]
    pub fn kernel(&self, keys: KeySet) -> Result<(KernelRef, DispatchKey)> {
        if PENDING.load(Ordering::Relaxed) {
            if let Some(e) = take_pending() {
                return Err(e);
            }
        }
        match self.dispatch_key(keys) {
            Some(key) => match KernelRef::load(&self.table[key.slot()]) {
                Some(k) => Ok((k, key)),
                None => Err(self.no_kernel(keys)),
            },
            None => Err(self.no_kernel(keys)),
        }
    }

    /// A typed call's fast path: the unboxed entry of type `F` of the kernel a
    /// call with key set `keys` runs, with one atomic load of its slot and no
    /// reference held (the entry is never freed). `None` when that kernel has
    /// no entry of type `F`, when there is no kernel, or while registration
    /// errors wait to be reported: the caller then takes [`Operator::kernel`].
    #[inline(always)]
    pub fn unboxed_kernel<F: Copy + 'static>(&self, keys: KeySet) -> Option<F> {
        self.unboxed_entry(keys)?.get::<F>()
    }

    /// [`Operator::unboxed_kernel`] untyped: the unboxed entry of the kernel a
    /// call with key set `keys` runs, if it has one (and no registration
    /// error waits to be reported).
    #[inline(always)]
    pub fn unboxed_entry(&self, keys: KeySet) -> Option<&'static Unboxed> {
        if PENDING.load(Ordering::Relaxed) {
            return None;
        }
        let key = self.dispatch_key(keys)?;
        let p = self.fast[key.slot()].load(Ordering::Acquire);
        // SAFETY: `fast` slots hold null or a pointer made from an
        // `&'static Unboxed` (`resolve`, the only writer besides `poison`'s
        // nulls); interned entries are never freed, so the pointer is valid for
        // any lifetime, and `Unboxed` is only read through `&`.
        unsafe { p.as_ref() }
    }

    #[cold]
    fn no_kernel(&self, keys: KeySet) -> Error {
        if let Some(e) = self.poison.get() {
            return e.clone();
        }
        let local = LocalKeys::get();
        let ks = (keys | local.included) - local.excluded;
        let available: Vec<String> = self
            .registered_keys()
            .iter()
            .map(|k| k.to_string())
            .collect();
        let Some(key) = ks.highest_backend() else {
            // No backend key: no tensor argument brought one (PyTorch's
            // `Undefined` dispatch key, and its message for it).
            return Error::NotImplemented(format!(
                "There were no tensor arguments to this function (e.g., you passed an empty list of Tensors), but no fallback function is registered for schema {}.  This usually means that this function requires a non-empty list of Tensors, or that you (the operator writer) forgot to register a fallback function.  Available functions are [{}].",
                self.qualified_name(),
                available.join(", ")
            ).into());
        };
        if key == DispatchKey::Meta && self.defined_at.is_some() {
            return Error::NotImplemented(format!(
                "{}: attempted to run this operator with Meta tensors, but there was no fake impl or Meta kernel registered. You may have run into this message while using an operator with PT2 compilation APIs (torch.compile/torch.export); in order to use this operator with those APIs you'll need to add a fake impl. Please see the following for next steps:  https://pytorch.org/tutorials/advanced/custom_ops_landing_page.html",
                self.qualified_name()
            ).into());
        }
        Error::NoKernel(Box::new(NoKernel {
            op: self.qualified_name(),
            key,
            available: available.join(", "),
        }))
    }

    /// The error of a boxed kernel adapter whose argument `i` does not
    /// convert to its parameter's type: it names the operator, the argument
    /// (schema name and position, 0-based as PyTorch counts), what was
    /// expected (`e`) and what was given.
    pub fn argument_error(&self, i: usize, given: &Value, e: Error) -> Error {
        let name = self.schema.args.get(i).map_or("?", |a| a.name);
        let value = match given {
            Value::Tensor(t) => format!("a {} tensor of shape {:?}", t.dtype(), t.shape()),
            v => {
                let text = v.to_string();
                match text.char_indices().nth(60) {
                    Some((cut, _)) => format!("{}…", &text[..cut]),
                    None => text,
                }
            }
        };
        Error::Type(
            format!(
                "{}: argument '{name}' (position {i}): {e}: {value}",
                self.qualified_name()
            )
            .into(),
        )
    }

    /// Calls the operator boxed: dispatches on the key set of `args`.
    ///
    /// This is C++'s `callBoxed`: `args` are already the schema's values, one
    /// per argument, in order (no keywords, no defaults; see
    /// [`crate::library::call`] for the Python-level call by name). A number
    /// in a `Tensor` slot stands for PyTorch's wrapped-number tensor (what
    /// Python makes of `x + 2`, and hands back to dispatch callbacks as `2`), so
    /// every operator takes it; the allow-list of operators that accept a
    /// number for a tensor applies one level up, in `library::call`, as in
    /// PyTorch. A value that does not convert is an error naming the operator,
    /// the argument (name and position) and what was given.
    ///
    /// ```
    /// use opforge::{dispatch::dispatcher, Value};
    /// let abs = dispatcher().find("aten::abs").unwrap();
    /// let out = abs.call_boxed(&[Value::Float(-1.5)])?;
    /// assert!(matches!(&out[..], [Value::Tensor(t)] if t.to_vec::<f64>()? == [1.5]));
    /// let e = abs.call_boxed(&[Value::Str("x".into())]).unwrap_err();
    /// assert_eq!(
    ///     e.to_string(),
    ///     "aten::abs: argument 'self' (position 0): expected Tensor, got str: \"x\""
    /// );
    /// # Ok::<(), opforge::Error>(())
    /// ```
    pub fn call_boxed(&self, args: &[Value]) -> Result<Vec<Value>> {
        if args.iter().any(|v| matches!(v, Value::List(_))) {
            crate::value::check_depth(&self.qualified_name(), args, &[])?;
        }
        self.call_with_keys(KeySet::of_values(args), args)
    }

    /// Calls the operator boxed with an explicit key set (for redispatch, pass
    /// `keys.below(current)`).
    pub fn call_with_keys(&self, keys: KeySet, args: &[Value]) -> Result<Vec<Value>> {
        let (kernel, key) = self.kernel(keys)?;
        let keys = (keys | LocalKeys::get().included).below_or_at(key);
        kernel.call_boxed(self, keys, args)
    }

    /// Redispatches to the next key below `current`.
    pub fn redispatch(
        &self,
        keys: KeySet,
        current: DispatchKey,
        args: &[Value],
    ) -> Result<Vec<Value>> {
        self.call_with_keys(keys.below(current), args)
    }
}

/// `ns::name.overload(...) -> ...`: a schema with its namespace.
fn qualified_schema(s: &OpSchema) -> String {
    match s.schema.find("::") {
        Some(i) if s.schema.find('(').is_some_and(|p| i < p) => s.schema.to_string(),
        _ => format!("{}::{}", s.namespace, s.schema),
    }
}

/// Is `text` (a schema, with or without its namespace; `aten` when not written)
/// the schema of `op`?
fn same_schema(text: &str, op: &OpSchema) -> bool {
    let text = match text.find("::") {
        Some(i) if text.find('(').is_some_and(|p| i < p) => text.to_string(),
        _ => format!("aten::{text}"),
    };
    text == qualified_schema(op)
}

/// The operator `name` (`ns::name.overload`, `aten` when not written) among the
/// runtime's and `dynamic`.
fn lookup(
    builtin: &'static [Operator],
    dynamic: &[&'static Operator],
    name: &str,
) -> Option<&'static Operator> {
    match crate::OpId::from_name(name) {
        Some(id) => Some(&builtin[id as usize]),
        None => find_dynamic(dynamic, name),
    }
}

/// The operator of `schema`: the existing one of that name if its schema is the
/// same (one operator, declared twice), else a new one (defined at `at`). An
/// existing operator with another schema is an error; the caller gets a
/// separate operator for `schema` to disable with it. `custom`: defined by
/// `#[op]` (PyTorch's custom operators), not declared by a schema file.
fn define_or_reuse(
    builtin: &'static [Operator],
    dynamic: &mut Vec<&'static Operator>,
    schema: &'static OpSchema,
    at: String,
    custom: bool,
) -> std::result::Result<&'static Operator, (&'static Operator, Error)> {
    let name = format!("{}::{}", schema.namespace, schema.name);
    match lookup(builtin, dynamic, &name) {
        Some(op) if same_schema(&qualified_schema(schema), op.schema) => Ok(op),
        Some(op) => {
            let e = Error::Runtime(
                format!(
                    "{at}: `{}` redefines `{name}`, which is `{}` ({}): an operator has one schema",
                    qualified_schema(schema),
                    qualified_schema(op.schema),
                    op.origin().unwrap_or("the runtime's native_functions.yaml")
                )
                .into(),
            );
            let mut other = Operator::new(schema);
            other.declared_at = Some(at);
            Err((Box::leak(Box::new(other)), e))
        }
        None => {
            let mut op = Operator::new(schema);
            if custom {
                op.defined_at = Some(at);
            } else {
                op.declared_at = Some(at);
            }
            let op: &'static Operator = Box::leak(Box::new(op));
            dynamic.push(op);
            Ok(op)
        }
    }
}

/// The registration errors, once: the first call to ask gets them.
#[cold]
fn take_pending() -> Option<Error> {
    if !PENDING.swap(false, Ordering::AcqRel) {
        return None;
    }
    let errors = dispatcher().registration_errors();
    (!errors.is_empty()).then(|| Error::Registration(Box::new(errors.to_vec())))
}

/// The run-time defined operator `ns::name.overload` (namespace `aten` when not
/// written) among `dynamic`.
fn find_dynamic(dynamic: &[&'static Operator], name: &str) -> Option<&'static Operator> {
    let (ns, rest) = name.split_once("::").unwrap_or(("aten", name));
    dynamic
        .iter()
        .copied()
        .find(|op| op.schema.namespace == ns && op.schema.name == rest)
}

/// Global fallback kernels per runtime key.
type Fallbacks = [Option<Arc<Kernel>>; RUNTIME_KEYS];

/// The fallbacks linked into the program, by key; an unknown key or a second
/// fallback for a key is an error naming the registrations.
fn link_fallbacks(entries: &'static [linked::FallbackEntry], errors: &mut Vec<Error>) -> Fallbacks {
    let mut fallbacks: Fallbacks = std::array::from_fn(|_| None);
    for e in entries {
        let source = format!("{}:{}", e.file, e.line);
        let Some(key) = DispatchKey::from_name(e.key).filter(|k| !k.is_alias()) else {
            errors.push(Error::Runtime(
                format!(
                    "{source}: unknown runtime dispatch key {} for a fallback",
                    e.key
                )
                .into(),
            ));
            continue;
        };
        let slot = &mut fallbacks[key.slot()];
        if let Some(first) = slot {
            errors.push(Error::Runtime(
                format!(
                    "two fallbacks for dispatch key {key:?}: {} and {source}",
                    first.source
                )
                .into(),
            ));
            continue;
        }
        let mut kernel = Kernel {
            boxed: Boxed::Fn(e.boxed),
            unboxed: None,
            schema: None,
            typed_fallback: None,
            leaves_alone: None,
            source,
        };
        if let Some(t) = e.typed {
            kernel = kernel.with_typed_fallback(t);
        }
        if let Some(f) = e.leaves_alone {
            kernel = kernel.leaving_alone(f);
        }
        *slot = Some(Arc::new(kernel));
    }
    fallbacks
}

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

impl Dispatcher {
    fn build() -> Dispatcher {
        let builtin: &'static [Operator] = Box::leak(
            crate::OPS
                .iter()
                .map(Operator::new)
                .collect::<Box<[Operator]>>(),
        );
        let mut errors = Vec::new();
        let mut dynamic: Vec<&'static Operator> = Vec::new();
        let mut poisoned: Vec<(&'static Operator, Error)> = Vec::new();
        let (libraries, operator_defs, kernels, fallback_entries) = linked::registrations();
        // The operators of crates with schema files of their own. Each
        // library is given its operators only once they are resolved (below):
        // a library's `op` reads them without waiting for the dispatcher, so
        // another thread must not see them before their kernels are in.
        let mut library_ops = Vec::new();
        for lib in libraries {
            if lib.is_set() {
                continue;
            }
            let ops = lib
                .schemas()
                .iter()
                .map(|s| {
                    let at = format!("{}'s native_functions.yaml:{}", lib.name(), s.line);
                    match define_or_reuse(builtin, &mut dynamic, s, at, false) {
                        Ok(op) => op,
                        Err((op, e)) => {
                            errors.push(e.clone());
                            poisoned.push((op, e));
                            op
                        }
                    }
                })
                .collect();
            library_ops.push((lib, ops));
        }
        // The operators defined with `#[op]`.
        for def in operator_defs {
            let source = format!("{}:{}", def.file, def.line);
            // `#[op]` checked the schema at compile time; a failure here means the
            // schema language changed under a stale build.
            let schema = match opforge_schema::schema::parse_schema(def.schema) {
                Ok(f) => crate::tables::op_schema(&f, None),
                Err(e) => {
                    errors.push(Error::Runtime(
                        format!("{source}: malformed schema `{}`: {e}", def.schema).into(),
                    ));
                    continue;
                }
            };
            if let Err((_, e)) = define_or_reuse(builtin, &mut dynamic, schema, source, true) {
                errors.push(e);
            }
        }
        // The kernels of `#[kernel]` and `#[op]`, from every crate.
        for e in kernels {
            let Some(key) = DispatchKey::from_name(e.key) else {
                errors.push(Error::Runtime(
                    format!(
                        "{}:{}: unknown dispatch key {} for {}",
                        e.file, e.line, e.key, e.op
                    )
                    .into(),
                ));
                continue;
            };
            let Some(op) = lookup(builtin, &dynamic, e.op) else {
                errors.push(Error::UnknownOp(
                    format!("{} (registered at {}:{})", e.op, e.file, e.line).into(),
                ));
                continue;
            };
            let kernel = Kernel::from_entry(e);
            if let Err(err) = op.check_schema(&kernel) {
                errors.push(err);
                continue;
            }
            let mut regs = op.registered.lock().unwrap_or_else(|p| p.into_inner());
            if let Some((_, prev)) = regs.iter().find(|(k, _)| *k == key) {
                let err = Error::DuplicateKernel(Box::new(DuplicateKernel {
                    op: op.qualified_name(),
                    key,
                    first: prev.source.clone(),
                    second: kernel.source.clone(),
                }));
                errors.push(err.clone());
                poisoned.push((op, err));
                continue;
            }
            regs.push((key, Arc::new(kernel)));
        }
        let fallbacks = link_fallbacks(fallback_entries, &mut errors);
        for op in builtin.iter().chain(dynamic.iter().copied()) {
            let regs = op.registered.lock().unwrap_or_else(|e| e.into_inner());
            op.resolve(&regs, &fallbacks);
        }
        for (op, e) in poisoned {
            op.poison(e);
        }
        PENDING.store(!errors.is_empty(), Ordering::Release);
        for (lib, ops) in library_ops {
            lib.set(ops);
        }
        Dispatcher {
            builtin,
            dynamic: RwLock::new(dynamic),
            fallbacks: RwLock::new(fallbacks),
            errors,
        }
    }

    /// Registers a library that was not linked in (see [`Library::op`]): its
    /// operators, reusing those that exist with the same schema; a conflicting
    /// one is a disabled operator whose calls return the conflict.
    pub(crate) fn define_library(&self, lib: &Library) -> Vec<&'static Operator> {
        let mut dynamic = self.dynamic.write().unwrap_or_else(|e| e.into_inner());
        lib.schemas()
            .iter()
            .map(|s| {
                let at = format!("{}'s native_functions.yaml:{}", lib.name(), s.line);
                match define_or_reuse(self.builtin, &mut dynamic, s, at, false) {
                    Ok(op) => op,
                    Err((op, e)) => {
                        op.poison(e);
                        op
                    }
                }
            })
            .collect()
    }

    /// Adds `schema` to `dynamic` unless an operator of that name exists (built in
    /// or in `dynamic`); the caller holds the write lock (or owns `dynamic` while
    /// building), so the check and the insertion are one step.
    fn insert(
        dynamic: &mut Vec<&'static Operator>,
        schema: &'static OpSchema,
        defined_at: Option<String>,
    ) -> Result<&'static Operator> {
        let name = format!("{}::{}", schema.namespace, schema.name);
        if crate::OpId::from_name(&name).is_some() || find_dynamic(dynamic, &name).is_some() {
            let original = find_dynamic(dynamic, &name)
                .and_then(|op| op.defined_at.clone())
                .unwrap_or_else(|| "native_functions.yaml".into());
            let duplicate = defined_at.as_deref().unwrap_or("unknown");
            return Err(Error::Runtime(format!(
                "Tried to register an operator ({}) with the same name and overload name multiple times. Each overload's schema should only be registered with a single call to def(). Duplicate registration: {duplicate}. Original registration: {original}",
                schema.schema
            ).into()));
        }
        let mut op = Operator::new(schema);
        op.defined_at = defined_at;
        let op: &'static Operator = Box::leak(Box::new(op));
        dynamic.push(op);
        Ok(op)
    }

    fn fallbacks(&self) -> Fallbacks {
        self.fallbacks
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Problems found among the link-time registrations (empty when all is well).
    pub fn registration_errors(&self) -> &[Error] {
        &self.errors
    }

    /// The operator with id `id` of the generated tables.
    #[inline]
    pub fn op(&self, id: crate::OpId) -> &Operator {
        &self.builtin[id as usize]
    }

    /// Looks an operator up by name: `aten::add.Tensor`, `add.Tensor`, `add` (default
    /// overload), or a run-time defined `ns::name.overload`.
    pub fn find(&self, name: &str) -> Option<&Operator> {
        if let Some(id) = crate::OpId::from_name(name) {
            return Some(&self.builtin[id as usize]);
        }
        let dynamic = self.dynamic.read().unwrap_or_else(|e| e.into_inner());
        find_dynamic(&dynamic, name)
    }

    /// Adds an operator defined at run time. Fails if the name is taken.
    pub fn add_operator(&self, schema: &'static OpSchema) -> Result<&'static Operator> {
        self.define(schema, None)
    }

    /// Defines an operator at run time, recording where (`file:line`, shown when a
    /// second definition of the same name fails, as PyTorch's `def()` does). The
    /// check for an existing operator of that name and the insertion are one
    /// atomic step, so racing definitions of one name give exactly one operator.
    /// Operators defined this way get PyTorch's custom-operator message when a
    /// meta call finds no kernel (see [`crate::library`]).
    ///
    /// ```
    /// use opforge::dispatch::dispatcher;
    /// let f = opforge_schema::schema::parse_schema("doc_define::f(Tensor x) -> Tensor").unwrap();
    /// let schema = opforge::registry::op_schema(&f, None);
    /// let op = dispatcher().define(schema, Some("here".into())).unwrap();
    /// assert_eq!(op.defined_at(), Some("here"));
    /// assert!(dispatcher().define(schema, None).is_err());
    /// ```
    pub fn define(
        &self,
        schema: &'static OpSchema,
        defined_at: Option<String>,
    ) -> Result<&'static Operator> {
        let mut dynamic = self.dynamic.write().unwrap_or_else(|e| e.into_inner());
        Dispatcher::insert(&mut dynamic, schema, defined_at)
    }

    /// The overloads of the packet `ns::base` (`aten::add` → `add.Tensor`,
    /// `add.Scalar`, …): the built-in ones in YAML order, then those defined at run
    /// time in definition order (PyTorch's registration order).
    ///
    /// ```
    /// use opforge::dispatch::dispatcher;
    /// let add = dispatcher().overloads("aten", "add");
    /// assert!(add.iter().any(|op| op.schema.name == "add.Tensor"));
    /// ```
    pub fn overloads(&self, namespace: &str, base: &str) -> Vec<&Operator> {
        let mut builtin: Vec<&Operator> = self
            .builtin
            .iter()
            .filter(|op| op.schema.namespace == namespace && op.schema.base == base)
            .collect();
        builtin.sort_by_key(|op| op.schema.line);
        let dynamic = self.dynamic.read().unwrap_or_else(|e| e.into_inner());
        builtin.extend(
            dynamic
                .iter()
                .copied()
                .filter(|op| op.schema.namespace == namespace && op.schema.base == base),
        );
        builtin
    }

    /// The packet names (`add`, `clip_norm_`, …) of namespace `namespace`,
    /// built-in and defined at run time, each once.
    pub fn packet_names(&self, namespace: &str) -> Vec<&'static str> {
        let mut names: Vec<&'static str> = self
            .builtin
            .iter()
            .filter(|op| op.schema.namespace == namespace)
            .map(|op| op.schema.base)
            .collect();
        let dynamic = self.dynamic.read().unwrap_or_else(|e| e.into_inner());
        names.extend(
            dynamic
                .iter()
                .filter(|op| op.schema.namespace == namespace)
                .map(|op| op.schema.base),
        );
        names.sort_unstable();
        names.dedup();
        names
    }

    /// The error for a packet `ns::name` that does not exist: PyTorch's
    /// message, then what a Rust user can act on. A namespace no linked crate
    /// declares says how to link the crate (a crate that nothing in a binary
    /// names is dropped by the linker, its registrations with it); a known
    /// namespace gives the nearest name, if one is close.
    ///
    /// ```
    /// use opforge::dispatch::dispatcher;
    /// let e = dispatcher().no_such_packet("aten", "ad");
    /// assert!(e.to_string().ends_with("Did you mean 'add'?"));
    /// let e = dispatcher().no_such_packet("mylib", "clip_norm");
    /// assert!(e.to_string().contains("use mylib as _;"));
    /// ```
    pub fn no_such_packet(&self, ns: &str, name: &str) -> Error {
        let mut message = format!("'_OpNamespace' '{ns}' object has no attribute '{name}'");
        let names = self.packet_names(ns);
        if names.is_empty() {
            message.push_str(&format!(
                ". No operator of namespace '{ns}' is registered: if a crate defines them, \
                 name it in this binary (`use {ns} as _;` for a crate called {ns}): the \
                 linker drops a crate that nothing names, and its registrations with it"
            ));
        } else if let Some(n) = opforge_schema::diag::nearest(name, names.iter().copied()) {
            message.push_str(&format!(". Did you mean '{n}'?"));
        }
        Error::Runtime(message.into())
    }

    /// Registers a kernel used for `key` by every operator that has none of its own
    /// (PyTorch's backend fallback; e.g. the Python key's handler). Returns the
    /// registered kernel (its identity tells it apart from others at that key).
    pub fn register_fallback(&self, key: DispatchKey, kernel: Kernel) -> Arc<Kernel> {
        let k = Arc::new(kernel);
        self.fallbacks.write().unwrap_or_else(|e| e.into_inner())[key.slot()] = Some(k.clone());
        let fallbacks = self.fallbacks();
        let dynamic = self.dynamic.read().unwrap_or_else(|e| e.into_inner());
        for op in self.builtin.iter().chain(dynamic.iter().copied()) {
            let regs = op.registered.lock().unwrap_or_else(|e| e.into_inner());
            op.resolve(&regs, &fallbacks);
        }
        k
    }
}

#[cfg(test)]
mod tests;
