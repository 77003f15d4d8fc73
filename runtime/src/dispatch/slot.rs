//! [`StaticSlot`]: an atomic slot holding a `&'static T` or nothing, read
//! with one atomic load and no reference count: how an operator keeps, per
//! dispatch key, the entries of its kernels that live for the whole program
//! (a link-time registration's boxed entry, an interned unboxed entry), so
//! that a call reaches them without `arc-swap`'s guard.

use std::sync::atomic::{AtomicPtr, Ordering};

/// A slot for a `&'static T`, or nothing. It can only be given `'static`
/// references ([`StaticSlot::set`]), so what it hands back is valid for the
/// whole program:
///
/// ```
/// use opforge::dispatch::StaticSlot;
/// static ANSWER: i64 = 42;
/// let slot = StaticSlot::<i64>::empty();
/// assert_eq!(slot.get(), None);
/// slot.set(Some(&ANSWER));
/// assert_eq!(slot.get(), Some(&42));
/// slot.set(None);
/// assert_eq!(slot.get(), None);
/// ```
///
/// A reference that does not live for the whole program is refused:
///
/// ```compile_fail
/// let slot = opforge::dispatch::StaticSlot::<i64>::empty();
/// let local = 7i64;
/// slot.set(Some(&local));
/// ```
pub struct StaticSlot<T: Sync + 'static> {
    /// Null, or a pointer made from a `&'static T` by `set`, the only
    /// writer (private: nothing else in the crate can store into it).
    ptr: AtomicPtr<T>,
}

impl<T: Sync + 'static> StaticSlot<T> {
    /// An empty slot.
    pub const fn empty() -> StaticSlot<T> {
        StaticSlot {
            ptr: AtomicPtr::new(std::ptr::null_mut()),
        }
    }

    /// Stores `value` (or empties the slot), published to later `get`s
    /// (release).
    #[inline]
    pub fn set(&self, value: Option<&'static T>) {
        let p = value.map_or(std::ptr::null_mut(), |v| (v as *const T).cast_mut());
        self.ptr.store(p, Ordering::Release);
    }

    /// What the slot holds (acquire: a value `set` by another thread is
    /// seen whole).
    #[inline(always)]
    pub fn get(&self) -> Option<&'static T> {
        // Invariant: `ptr` is null or was made by `set` from a `&'static T`
        // (the field is private and `set` its only writer), and nothing
        // writes through it (it came from a shared reference; the cast to
        // `*mut` is only `AtomicPtr`'s type).
        let p = self.ptr.load(Ordering::Acquire);
        // SAFETY: by the invariant, a non-null `p` points at a `T` alive for
        // the whole program and never written; `T: Sync`, so any thread may
        // hold the reference.
        unsafe { p.as_ref() }
    }
}

impl<T: Sync + 'static> Default for StaticSlot<T> {
    fn default() -> StaticSlot<T> {
        StaticSlot::empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;

    /// Threads reading while others store and empty the slot only ever see
    /// nothing or one of the statics stored, whole.
    #[test]
    fn readers_see_nothing_or_a_whole_static() {
        static VALUES: [[u64; 4]; 2] = [[1; 4], [2; 4]];
        let slot = StaticSlot::<[u64; 4]>::empty();
        let stop = AtomicBool::new(false);
        std::thread::scope(|s| {
            for _ in 0..2 {
                s.spawn(|| {
                    while !stop.load(Ordering::Relaxed) {
                        if let Some(v) = slot.get() {
                            assert!(*v == VALUES[0] || *v == VALUES[1], "{v:?}");
                        }
                    }
                });
            }
            for i in 0..20_000 {
                slot.set(match i % 3 {
                    0 => None,
                    k => Some(&VALUES[k - 1]),
                });
            }
            stop.store(true, Ordering::Relaxed);
        });
    }
}
