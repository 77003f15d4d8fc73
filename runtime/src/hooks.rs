//! Per-thread hooks a layer above installs into a layer below: graph capture
//! stands between a program and its objects' methods
//! (`crate::classes::intercept_methods`) and its effectful calls
//! (`crate::functionalize::observe_effects`). One hook per slot and thread,
//! installed for a guard's lifetime (the previous one comes back when the
//! guard drops); while a hook runs it is out of its slot, so that what it
//! calls is not seen again.

use std::cell::RefCell;
use std::thread::LocalKey;

/// A thread's slot for one kind of hook.
pub type HookSlot<T> = LocalKey<RefCell<Option<T>>>;

/// Installs `hook` in `slot` until the guard is dropped.
pub fn install<T: 'static>(slot: &'static HookSlot<T>, hook: T) -> HookGuard<T> {
    put(slot, Some(hook))
}

/// Takes the slot's hook out until the guard is dropped: what a layer does
/// while an operator's kernel runs below it, so that what the kernel does
/// inside is not seen as the program's.
pub fn suspend<T: 'static>(slot: &'static HookSlot<T>) -> HookGuard<T> {
    put(slot, None)
}

/// Puts `hook` (or nothing) in `slot` until the guard is dropped.
fn put<T: 'static>(slot: &'static HookSlot<T>, hook: Option<T>) -> HookGuard<T> {
    let prev = slot.with(|s| std::mem::replace(&mut *s.borrow_mut(), hook));
    HookGuard {
        slot,
        prev: Some(prev),
        _not_send: std::marker::PhantomData,
    }
}

/// Restores the slot's previous hook when dropped ([`install`], [`suspend`]).
#[must_use = "the hook is removed when the guard is dropped"]
pub struct HookGuard<T: 'static> {
    slot: &'static HookSlot<T>,
    prev: Option<Option<T>>,
    _not_send: std::marker::PhantomData<*const ()>,
}

impl<T: 'static> Drop for HookGuard<T> {
    fn drop(&mut self) {
        if let Some(prev) = self.prev.take() {
            self.slot.with(|s| *s.borrow_mut() = prev);
        }
    }
}

/// `f` of the slot's hook, taken out of its slot while `f` runs (put back
/// after, unless a guard dropped inside installed another); `None` if the
/// slot is empty.
pub fn with_hook<T: 'static, R>(slot: &'static HookSlot<T>, f: impl FnOnce(&T) -> R) -> Option<R> {
    let hook = slot.with(|s| s.borrow_mut().take())?;
    struct Restore<T: 'static>(&'static HookSlot<T>, Option<T>);
    impl<T: 'static> Drop for Restore<T> {
        fn drop(&mut self) {
            let hook = self.1.take();
            self.0.with(|s| {
                let mut s = s.borrow_mut();
                // A guard dropped inside the call removed or replaced it.
                if s.is_none() {
                    *s = hook;
                }
            });
        }
    }
    let restore = Restore(slot, Some(hook));
    restore.1.as_ref().map(f)
}

#[cfg(test)]
mod tests {
    use super::*;

    thread_local! {
        static SLOT: RefCell<Option<u32>> = const { RefCell::new(None) };
    }

    #[test]
    fn a_hook_is_off_while_it_runs_and_guards_nest() {
        assert_eq!(with_hook(&SLOT, |h| *h), None);
        let outer = install(&SLOT, 1);
        {
            let _inner = install(&SLOT, 2);
            // While the hook runs, its slot is empty.
            assert_eq!(
                with_hook(&SLOT, |h| (*h, with_hook(&SLOT, |g| *g))),
                Some((2, None))
            );
            assert_eq!(with_hook(&SLOT, |h| *h), Some(2));
        }
        assert_eq!(with_hook(&SLOT, |h| *h), Some(1));
        {
            let _off = suspend(&SLOT);
            assert_eq!(with_hook(&SLOT, |h| *h), None);
            let _inner = install(&SLOT, 3);
            assert_eq!(with_hook(&SLOT, |h| *h), Some(3));
        }
        assert_eq!(with_hook(&SLOT, |h| *h), Some(1));
        drop(outer);
        assert_eq!(with_hook(&SLOT, |h| *h), None);
    }
}
