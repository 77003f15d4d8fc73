//! An [`Operator`]: its schema, one kernel slot per dispatch key, how a
//! registration fills the slots and how a call picks one.

use super::linked::KernelEntry;
use super::StaticSlot;
use super::{dispatcher, Fallbacks, Kernel, KernelRef, Operator, Unboxed, PENDING};

use super::registry::{qualified_schema, same_schema, take_pending};
use crate::error::{DuplicateKernel, Error, NoKernel, Result};
use crate::keys::LocalKeys;
use crate::keys::{DispatchKey, KeySet};
use crate::tables::OpSchema;
use crate::value::Value;
use arc_swap::ArcSwapOption;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// A layer's data on an operator, with its type: asking for it as its own type
/// is one comparison (the protocols ask on every call a mode sees). Defined
/// here, beside its only constructor and reader: its fields are private to
/// this file, which `get`'s `unsafe` relies on.
pub(super) struct Attached {
    type_id: std::any::TypeId,
    data: &'static (dyn std::any::Any + Send + Sync),
}

impl Attached {
    pub(super) fn new<T: std::any::Any + Send + Sync>(data: &'static T) -> Attached {
        Attached {
            type_id: std::any::TypeId::of::<T>(),
            data,
        }
    }

    #[inline]
    pub(super) fn get<T: std::any::Any + Send + Sync>(&self) -> Option<&'static T> {
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
            fast: std::array::from_fn(|_| StaticSlot::empty()),
            fast_boxed: std::array::from_fn(|_| StaticSlot::empty()),
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
    pub(super) fn poison(&self, e: Error) {
        let _ = self.poison.set(e);
        for ((slot, fast), boxed) in self.table.iter().zip(&self.fast).zip(&self.fast_boxed) {
            fast.set(None);
            boxed.set(None);
            slot.store(None);
        }
        self.active.store(0, Ordering::Release);
    }

    /// Where the operator was defined, for one defined with [`Dispatcher::define`](super::Dispatcher::define)
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
    pub(super) fn check_schema(&self, kernel: &Kernel) -> Result<()> {
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
    pub(super) fn resolve(&self, regs: &[(DispatchKey, Arc<Kernel>)], fallbacks: &Fallbacks) {
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
                self.fast[slot].set(k.unboxed);
                self.fast_boxed[slot].set(k.linked_entry());
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
        self.fast[key.slot()].get()
    }

    /// Does a call with argument key set `keys` run the link-time kernel
    /// `entry` (by identity: its registration, not another kernel for the
    /// same key)? What a caller that would box its values only to reach
    /// that kernel asks first, to run it unboxed instead (a method call,
    /// `ScriptObject::call_method`).
    #[inline]
    pub fn runs_entry(&self, keys: KeySet, entry: &'static KernelEntry) -> bool {
        if PENDING.load(Ordering::Relaxed) {
            return false;
        }
        self.dispatch_key(keys)
            .and_then(|key| self.fast_boxed[key.slot()].get())
            .is_some_and(|e| std::ptr::eq(e, &entry.entry))
    }

    #[cold]
    pub(super) fn no_kernel(&self, keys: KeySet) -> Error {
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
        // A link-time kernel: its static entry, with one atomic load and no
        // reference held (what `kernel` takes through `arc-swap`).
        if !PENDING.load(Ordering::Relaxed) {
            if let Some(key) = self.dispatch_key(keys) {
                if let Some(e) = self.fast_boxed[key.slot()].get() {
                    let keys = (keys | LocalKeys::get().included).below_or_at(key);
                    return (e.boxed)(e.func, self, keys, args);
                }
            }
        }
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
