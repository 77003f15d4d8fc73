//! Thread-local state of the function-level protocol: the mode stack and the
//! disabling guards (PyTorch's `TorchFunctionMode` stack and `torch._C.DisableTorchFunction*`).
//!
//! Every overridable call reads the flags of [`crate::flags`] (one `Cell`, no
//! destructor) to learn whether a mode is active; the stack itself is only
//! touched when one is.

use super::TorchFunctionMode;
use std::cell::{Cell, RefCell};
use std::sync::Arc;

pub(crate) use crate::flags::{flags, Enabled};
use crate::flags::{set_depth, set_enabled};

type Mode = Arc<dyn TorchFunctionMode>;

thread_local! {
    static MODES: RefCell<Vec<Mode>> = const { RefCell::new(Vec::new()) };
    /// The mode whose handler is running (owned by that handler's
    /// [`with_top_mode`] frame), for [`enable_current_mode`](super::enable_current_mode).
    static CURRENT: Cell<*const Mode> = const { Cell::new(std::ptr::null()) };
}

pub(crate) fn enabled() -> Enabled {
    flags().enabled
}

#[inline]
fn push_mode(mode: Mode) {
    let depth = MODES.with(|m| {
        let mut m = m.borrow_mut();
        m.push(mode);
        m.len() as u32
    });
    set_depth(depth);
}

#[inline]
fn pop_mode() -> Option<Mode> {
    let (mode, depth) = MODES.with(|m| {
        let mut m = m.borrow_mut();
        let mode = m.pop();
        (mode, m.len() as u32)
    });
    set_depth(depth);
    mode
}

/// The modes on this thread's stack, bottom first
/// (`torch.overrides._get_current_function_mode_stack()`).
pub fn function_mode_stack() -> Vec<Arc<dyn TorchFunctionMode>> {
    MODES.with(|m| m.borrow().clone())
}

/// The mode whose handler is running, if any.
pub(crate) fn current() -> Option<Mode> {
    let p = CURRENT.with(Cell::get);
    // SAFETY: `CURRENT` is non-null only while a `with_top_mode` frame of this
    // thread runs its closure; it then points at the `Mode` that frame owns and
    // neither moves nor drops until the frame resets `CURRENT` (in `Restore::drop`,
    // before the mode goes back on the stack). Frames nest, so the pointer always
    // names the innermost live one.
    unsafe { p.as_ref() }.cloned()
}

/// Runs `f` on the top mode with that mode taken off the stack (a mode is off
/// inside its own handler), then puts it back; `None` if the stack is empty.
/// No reference count changes: the mode moves out and back.
#[inline]
pub(crate) fn with_top_mode<T>(f: impl FnOnce(&dyn TorchFunctionMode) -> T) -> Option<T> {
    struct Restore {
        mode: Option<Mode>,
        prev: *const Mode,
    }
    impl Drop for Restore {
        fn drop(&mut self) {
            CURRENT.with(|c| c.set(self.prev));
            if let Some(m) = self.mode.take() {
                push_mode(m);
            }
        }
    }
    let restore = Restore {
        mode: Some(pop_mode()?),
        prev: CURRENT.with(Cell::get),
    };
    let mode = restore.mode.as_ref()?;
    CURRENT.with(|c| c.set(mode as *const Mode));
    Some(f(&**mode))
}

/// Keeps a function mode on this thread's stack until dropped (`with Mode():`).
/// Guards must be dropped in reverse order of creation, as `with` blocks nest.
#[must_use = "the mode is popped when the guard is dropped"]
pub struct FunctionModeGuard {
    _not_send: std::marker::PhantomData<*const ()>,
}

impl FunctionModeGuard {
    pub(crate) fn push(mode: Arc<dyn TorchFunctionMode>) -> FunctionModeGuard {
        push_mode(mode);
        FunctionModeGuard {
            _not_send: std::marker::PhantomData,
        }
    }
}

impl Drop for FunctionModeGuard {
    fn drop(&mut self) {
        pop_mode();
    }
}

/// Restores the previous enabled state when dropped.
#[must_use = "the protocol is re-enabled when the guard is dropped"]
pub struct DisableGuard {
    prev: Enabled,
    _not_send: std::marker::PhantomData<*const ()>,
}

impl DisableGuard {
    pub(crate) fn new(e: Enabled) -> DisableGuard {
        // Disabling never re-enables: inside DisableTorchFunction, a nested
        // DisableTorchFunctionSubclass keeps everything off.
        let prev = enabled();
        let next = match (prev, e) {
            (Enabled::Nothing, _) | (_, Enabled::Nothing) => Enabled::Nothing,
            (Enabled::ModesOnly, _) | (_, Enabled::ModesOnly) => Enabled::ModesOnly,
            _ => Enabled::All,
        };
        set_enabled(next);
        DisableGuard {
            prev,
            _not_send: std::marker::PhantomData,
        }
    }
}

impl Drop for DisableGuard {
    fn drop(&mut self) {
        set_enabled(self.prev);
    }
}
