//! A kernel: its boxed entry, its unboxed (typed) entry, and the
//! reference a call holds while it runs one ([`KernelRef`]).

use super::{Boxed, Kernel, KernelRef, Operator, TypedFallback, Unboxed};

use super::linked::KernelEntry;
use super::{adapter, returns};
use crate::error::Result;
use crate::keys::KeySet;
use crate::tables::OpSchema;
use crate::value::Value;
use arc_swap::ArcSwapOption;
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

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
            boxed: Boxed::Entry(&e.entry),
            unboxed: interned_unboxed(e),
            schema: Some(e.schema),
            typed_fallback: None,
            leaves_alone: None,
            source: format!("{}:{}", e.file, e.line),
        }
    }

    /// The link-time registration's boxed entry, for a kernel made from one.
    #[inline]
    pub(super) fn linked_entry(&self) -> Option<&'static adapter::Entry> {
        match self.boxed {
            Boxed::Entry(e) => Some(e),
            _ => None,
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
