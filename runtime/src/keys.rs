//! Dispatch keys, key sets and the thread-local include/exclude sets.

use crate::dtype::Device;
use opforge_schema::model::RUNTIME_DISPATCH_KEYS;
use std::cell::Cell;
use std::fmt;

/// Defines [`DispatchKey`] and its tables from the schema crate's table of keys
/// ([`opforge_schema::runtime_dispatch_keys!`], the one place a key is added).
macro_rules! define_dispatch_keys {
    (
        backend { $($(#[$bdoc:meta])* $backend:ident,)* }
        runtime { $($(#[$rdoc:meta])* $runtime:ident,)* }
        alias { $($(#[$adoc:meta])* $alias:ident,)* }
    ) => {
        /// A dispatch key. Runtime keys are ordered by priority (`CPU` lowest,
        /// `Autograd` highest); alias keys name groups of runtime keys and only
        /// appear in registrations. The keys and their order are
        /// [`opforge_schema::runtime_dispatch_keys!`]'s.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum DispatchKey {
            $($(#[$bdoc])* $backend,)*
            $($(#[$rdoc])* $runtime,)*
            $($(#[$adoc])* $alias,)*
        }

        /// Number of runtime (non-alias) keys.
        pub const RUNTIME_KEYS: usize = BACKEND_KEYS + [$(stringify!($runtime),)*].len();
        const BACKEND_KEYS: usize = [$(stringify!($backend),)*].len();
        const ALL_KEYS: usize = RUNTIME_KEYS + [$(stringify!($alias),)*].len();

        impl DispatchKey {
            /// The runtime keys, lowest priority first.
            pub const RUNTIME: [DispatchKey; RUNTIME_KEYS] =
                [$(DispatchKey::$backend,)* $(DispatchKey::$runtime,)*];

            /// The backend keys (the lowest runtime keys).
            pub const BACKENDS: [DispatchKey; BACKEND_KEYS] = [$(DispatchKey::$backend,)*];

            /// Every key, runtime then alias.
            pub const ALL: [DispatchKey; ALL_KEYS] =
                [$(DispatchKey::$backend,)* $(DispatchKey::$runtime,)* $(DispatchKey::$alias,)*];
        }
    };
}

opforge_schema::runtime_dispatch_keys!(define_dispatch_keys);

// A key set is a `u32` with a bit per runtime key; every key has its name.
const _: () = assert!(RUNTIME_KEYS <= 32 && ALL_KEYS == RUNTIME_DISPATCH_KEYS.len());

impl DispatchKey {
    /// The bit / table index of a runtime key (alias keys have none; they map to 0
    /// and are never looked up).
    #[inline]
    pub const fn slot(self) -> usize {
        let i = self as usize;
        if i < RUNTIME_KEYS {
            i
        } else {
            0
        }
    }

    /// An alias key?
    pub fn is_alias(self) -> bool {
        self as usize >= RUNTIME_KEYS
    }

    /// A backend key?
    pub fn is_backend(self) -> bool {
        (self as usize) < BACKEND_KEYS
    }

    /// The name as written in `dispatch:` tables and `#[kernel]`
    /// ([`opforge_schema::model::RUNTIME_DISPATCH_KEYS`]).
    pub fn name(self) -> &'static str {
        RUNTIME_DISPATCH_KEYS[self as usize]
    }

    /// Parses a key name.
    pub fn from_name(s: &str) -> Option<DispatchKey> {
        RUNTIME_DISPATCH_KEYS
            .iter()
            .position(|k| *k == s)
            .map(|i| Self::ALL[i])
    }

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

    /// The key set a plain tensor on `device` contributes: its backend only.
    /// (A tensor that requires grad adds `Autograd` and `ADInplaceOrView`, a
    /// tensor-like its class's keys: [`crate::Tensor::key_set`].)
    #[inline]
    pub const fn for_device(device: Device) -> KeySet {
        KeySet::of(match device {
            Device::Cpu => DispatchKey::CPU,
            Device::Meta => DispatchKey::Meta,
        })
    }

    /// The key set a call dispatches on, one rule for typed and boxed calls:
    /// `tensors` (the union of its tensors' key sets), with a backend added
    /// when none of them has one (no tensor argument, or only `None`s and
    /// empty lists): the backend of `device()` (the call's first `Device`
    /// argument given), else CPU, as BackendSelect picks it.
    #[inline(always)]
    pub fn of_call(tensors: KeySet, device: impl FnOnce() -> Option<Device>) -> KeySet {
        if tensors.highest_backend().is_some() {
            tensors
        } else {
            tensors | KeySet::for_device(device().unwrap_or(Device::Cpu))
        }
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
        const BACKENDS: u32 = (1 << BACKEND_KEYS) - 1;
        (self & KeySet(BACKENDS)).highest()
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
        LocalKeysGuard(prev, std::marker::PhantomData)
    }

    /// Excludes `keys` until the guard is dropped.
    pub fn exclude(keys: KeySet) -> LocalKeysGuard {
        let prev = LocalKeys::get();
        LocalKeys::set(LocalKeys {
            excluded: prev.excluded | keys,
            ..prev
        });
        LocalKeysGuard(prev, std::marker::PhantomData)
    }
}

/// Restores the previous thread-local sets when dropped. It belongs to the
/// thread that made it (not `Send`): dropped elsewhere, it would restore that
/// thread's sets and strand this one's.
#[must_use = "the keys are restored when the guard is dropped"]
pub struct LocalKeysGuard(LocalKeys, std::marker::PhantomData<*const ()>);

impl Drop for LocalKeysGuard {
    fn drop(&mut self) {
        LocalKeys::set(self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use opforge_schema::model::COMPOSITE_KEYS;

    /// The runtime's keys are the schema crate's list: the one `#[kernel]` and the
    /// generator check registrations against.
    #[test]
    fn keys_are_the_schema_crates() {
        let names: Vec<&str> = DispatchKey::ALL.iter().map(|k| k.name()).collect();
        assert_eq!(names, RUNTIME_DISPATCH_KEYS);
        for (i, k) in DispatchKey::ALL.into_iter().enumerate() {
            assert_eq!(format!("{k:?}"), RUNTIME_DISPATCH_KEYS[i]);
            assert_eq!(DispatchKey::from_name(k.name()), Some(k));
            assert_eq!(k.is_alias(), COMPOSITE_KEYS.contains(&k.name()), "{k}");
            assert_eq!(k.is_alias(), !DispatchKey::RUNTIME.contains(&k), "{k}");
        }
        assert_eq!(DispatchKey::from_name("CUDA"), None);
        for (i, k) in DispatchKey::RUNTIME.into_iter().enumerate() {
            assert_eq!(k.slot(), i);
            assert_eq!(k.is_backend(), DispatchKey::BACKENDS.contains(&k));
            assert_eq!(KeySet::of(k).highest(), Some(k));
        }
        assert_eq!(
            DispatchKey::BACKENDS,
            DispatchKey::RUNTIME[..DispatchKey::BACKENDS.len()]
        );
        assert_eq!(
            KeySet::for_device(Device::Meta).highest_backend(),
            Some(DispatchKey::Meta)
        );
    }
}
