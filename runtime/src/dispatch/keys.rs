//! Dispatch keys, key sets and the thread-local include/exclude sets.

use crate::tensor::{Device, Tensor};
use crate::value::Value;
use std::cell::Cell;
use std::fmt;

/// Number of runtime (non-alias) keys.
pub const RUNTIME_KEYS: usize = 6;

/// A dispatch key. Runtime keys are ordered by priority (`CPU` lowest, `Autograd`
/// highest); alias keys name groups of runtime keys and only appear in
/// registrations.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DispatchKey {
    /// The CPU backend.
    CPU,
    /// The meta backend (shapes and dtypes only).
    Meta,
    /// Picks a backend for calls without tensor arguments (factories).
    BackendSelect,
    /// Dispatch-level hooks (`__torch_dispatch__` subclasses and modes).
    Python,
    /// Bookkeeping for inplace and view operators.
    ADInplaceOrView,
    /// Autograd.
    Autograd,
    /// Alias: one kernel for every backend, not for autograd.
    CompositeExplicitAutograd,
    /// Alias: like CompositeExplicitAutograd, for kernels that mutate/alias internally.
    CompositeExplicitAutogradNonFunctional,
    /// Alias: a decomposition into other operators, for every backend and autograd.
    CompositeImplicitAutograd,
}

impl DispatchKey {
    /// The runtime keys, lowest priority first.
    pub const RUNTIME: [DispatchKey; RUNTIME_KEYS] = [
        DispatchKey::CPU,
        DispatchKey::Meta,
        DispatchKey::BackendSelect,
        DispatchKey::Python,
        DispatchKey::ADInplaceOrView,
        DispatchKey::Autograd,
    ];

    /// The backend keys.
    pub const BACKENDS: [DispatchKey; 2] = [DispatchKey::CPU, DispatchKey::Meta];

    /// The bit / table index of a runtime key (alias keys have none; they map to 0
    /// and are never looked up).
    #[inline]
    pub const fn slot(self) -> usize {
        match self {
            DispatchKey::CPU => 0,
            DispatchKey::Meta => 1,
            DispatchKey::BackendSelect => 2,
            DispatchKey::Python => 3,
            DispatchKey::ADInplaceOrView => 4,
            DispatchKey::Autograd => 5,
            _ => 0,
        }
    }

    /// An alias key?
    pub fn is_alias(self) -> bool {
        matches!(
            self,
            DispatchKey::CompositeExplicitAutograd
                | DispatchKey::CompositeExplicitAutogradNonFunctional
                | DispatchKey::CompositeImplicitAutograd
        )
    }

    /// A backend key?
    pub fn is_backend(self) -> bool {
        matches!(self, DispatchKey::CPU | DispatchKey::Meta)
    }

    /// The name as written in `dispatch:` tables and `#[kernel]`.
    pub fn name(self) -> &'static str {
        match self {
            DispatchKey::CPU => "CPU",
            DispatchKey::Meta => "Meta",
            DispatchKey::BackendSelect => "BackendSelect",
            DispatchKey::Python => "Python",
            DispatchKey::ADInplaceOrView => "ADInplaceOrView",
            DispatchKey::Autograd => "Autograd",
            DispatchKey::CompositeExplicitAutograd => "CompositeExplicitAutograd",
            DispatchKey::CompositeExplicitAutogradNonFunctional => {
                "CompositeExplicitAutogradNonFunctional"
            }
            DispatchKey::CompositeImplicitAutograd => "CompositeImplicitAutograd",
        }
    }

    /// Parses a key name.
    pub fn from_name(s: &str) -> Option<DispatchKey> {
        Self::ALL.iter().copied().find(|k| k.name() == s)
    }

    /// Every key, runtime then alias.
    pub const ALL: [DispatchKey; 9] = [
        DispatchKey::CPU,
        DispatchKey::Meta,
        DispatchKey::BackendSelect,
        DispatchKey::Python,
        DispatchKey::ADInplaceOrView,
        DispatchKey::Autograd,
        DispatchKey::CompositeExplicitAutograd,
        DispatchKey::CompositeExplicitAutogradNonFunctional,
        DispatchKey::CompositeImplicitAutograd,
    ];

    /// The backend key of a device.
    pub fn of_device(d: Device) -> DispatchKey {
        match d {
            Device::Cpu => DispatchKey::CPU,
            Device::Meta => DispatchKey::Meta,
        }
    }
}

impl fmt::Display for DispatchKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A set of runtime keys (a bit per key).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct KeySet(u32);

impl KeySet {
    /// The empty set.
    pub const EMPTY: KeySet = KeySet(0);

    /// From raw bits.
    #[inline]
    pub const fn from_bits(bits: u32) -> KeySet {
        KeySet(bits)
    }

    /// The raw bits.
    pub const fn bits(self) -> u32 {
        self.0
    }

    /// `{key}`.
    #[inline]
    pub const fn of(key: DispatchKey) -> KeySet {
        KeySet(1 << key.slot())
    }

    /// With `key` added.
    #[inline]
    pub const fn with(self, key: DispatchKey) -> KeySet {
        KeySet(self.0 | 1 << key.slot())
    }

    /// Contains `key`?
    pub fn has(self, key: DispatchKey) -> bool {
        self.0 & (1 << key.slot()) != 0
    }

    /// The key set a plain tensor on `device` contributes.
    #[inline]
    pub const fn for_device(device: Device) -> KeySet {
        let backend = match device {
            Device::Cpu => DispatchKey::CPU,
            Device::Meta => DispatchKey::Meta,
        };
        KeySet::of(backend)
            .with(DispatchKey::ADInplaceOrView)
            .with(DispatchKey::Autograd)
    }

    /// The key set of a tensor.
    #[inline]
    pub fn of_tensor(t: &Tensor) -> KeySet {
        t.key_set()
    }

    /// The union of the key sets of every tensor among `args` (also inside lists);
    /// for a call without tensors, the backend of a `Device` argument (CPU if none),
    /// as BackendSelect would pick it.
    pub fn of_values(args: &[Value]) -> KeySet {
        fn collect(args: &[Value], ks: &mut KeySet, device: &mut Option<Device>) {
            for v in args {
                match v {
                    Value::Tensor(t) => *ks = *ks | t.key_set(),
                    Value::TensorList(ts) => ts.iter().for_each(|t| *ks = *ks | t.key_set()),
                    Value::OptTensorList(ts) => {
                        ts.iter().flatten().for_each(|t| *ks = *ks | t.key_set())
                    }
                    Value::List(vs) => collect(vs, ks, device),
                    Value::Device(d) => *device = Some(*d),
                    _ => {}
                }
            }
        }
        let mut ks = KeySet::EMPTY;
        let mut device = None;
        collect(args, &mut ks, &mut device);
        if ks.highest_backend().is_none() {
            ks = ks | KeySet::for_device(device.unwrap_or(Device::Cpu));
        }
        ks
    }

    /// The highest-priority key.
    #[inline]
    pub fn highest(self) -> Option<DispatchKey> {
        if self.0 == 0 {
            None
        } else {
            Some(DispatchKey::RUNTIME[31 - self.0.leading_zeros() as usize])
        }
    }

    /// The highest backend key.
    pub fn highest_backend(self) -> Option<DispatchKey> {
        (self & KeySet(0b11)).highest()
    }

    /// The keys strictly below `key`.
    #[inline]
    pub fn below(self, key: DispatchKey) -> KeySet {
        KeySet(self.0 & ((1u32 << key.slot()) - 1))
    }

    /// The keys at or below `key`.
    #[inline]
    pub fn below_or_at(self, key: DispatchKey) -> KeySet {
        KeySet(self.0 & ((1u32 << (key.slot() + 1)) - 1))
    }

    /// The keys, lowest first.
    pub fn iter(self) -> impl Iterator<Item = DispatchKey> {
        DispatchKey::RUNTIME
            .into_iter()
            .filter(move |k| self.has(*k))
    }
}

impl std::ops::BitOr for KeySet {
    type Output = KeySet;
    #[inline]
    fn bitor(self, o: KeySet) -> KeySet {
        KeySet(self.0 | o.0)
    }
}

impl std::ops::BitAnd for KeySet {
    type Output = KeySet;
    #[inline]
    fn bitand(self, o: KeySet) -> KeySet {
        KeySet(self.0 & o.0)
    }
}

impl std::ops::Sub for KeySet {
    type Output = KeySet;
    #[inline]
    fn sub(self, o: KeySet) -> KeySet {
        KeySet(self.0 & !o.0)
    }
}

impl fmt::Display for KeySet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.iter().map(DispatchKey::name).collect();
        write!(f, "DispatchKeySet({})", names.join(", "))
    }
}

thread_local! {
    static LOCAL: Cell<LocalKeys> = const { Cell::new(LocalKeys { included: KeySet::EMPTY, excluded: KeySet::EMPTY }) };
}

/// The thread-local include and exclude sets (PyTorch's `LocalDispatchKeySet`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LocalKeys {
    /// Keys added to every call's key set on this thread.
    pub included: KeySet,
    /// Keys removed from every call's key set on this thread.
    pub excluded: KeySet,
}

impl LocalKeys {
    /// The current thread's sets.
    #[inline]
    pub fn get() -> LocalKeys {
        LOCAL.with(Cell::get)
    }

    /// Replaces the current thread's sets (prefer the guards).
    pub(crate) fn set(v: LocalKeys) {
        LOCAL.with(|c| c.set(v));
    }

    /// Includes `keys` until the guard is dropped.
    pub fn include(keys: KeySet) -> LocalKeysGuard {
        let prev = LocalKeys::get();
        LocalKeys::set(LocalKeys {
            included: prev.included | keys,
            ..prev
        });
        LocalKeysGuard(prev)
    }

    /// Excludes `keys` until the guard is dropped.
    pub fn exclude(keys: KeySet) -> LocalKeysGuard {
        let prev = LocalKeys::get();
        LocalKeys::set(LocalKeys {
            excluded: prev.excluded | keys,
            ..prev
        });
        LocalKeysGuard(prev)
    }
}

/// Restores the previous thread-local sets when dropped.
#[must_use = "the keys are restored when the guard is dropped"]
pub struct LocalKeysGuard(LocalKeys);

impl Drop for LocalKeysGuard {
    fn drop(&mut self) {
        LocalKeys::set(self.0);
    }
}
