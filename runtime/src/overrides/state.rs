//! Thread-local state of the function-level protocol: the mode stack and the
//! disabling guards (PyTorch's `TorchFunctionMode` stack and `torch._C.DisableTorchFunction*`).

use super::TorchFunctionMode;
use std::cell::{Cell, RefCell};
use std::sync::Arc;

/// Whether handlers run (`torch._C._TorchFunctionState`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Enabled {
    /// Modes and subclass handlers run.
    All,
    /// Subclass handlers are skipped; modes run (`DisableTorchFunctionSubclass`).
    ModesOnly,
    /// Nothing runs (`DisableTorchFunction`), also modes entered inside.
    Nothing,
}

thread_local! {
    /// Number of modes on the stack (read on every call: kept apart from the stack).
    static MODE_COUNT: Cell<u32> = const { Cell::new(0) };
    static ENABLED: Cell<Enabled> = const { Cell::new(Enabled::All) };
    static MODES: RefCell<Vec<Arc<dyn TorchFunctionMode>>> = const { RefCell::new(Vec::new()) };
    /// The mode whose handler is running, for [`enable_current_mode`](super::enable_current_mode).
    static CURRENT: RefCell<Vec<Arc<dyn TorchFunctionMode>>> = const { RefCell::new(Vec::new()) };
}

/// Is a function mode on this thread's stack (and not disabled)? The one check a
/// plain call pays besides looking at its tensors.
#[inline]
pub fn function_modes_active() -> bool {
    MODE_COUNT.with(Cell::get) != 0
}

pub(crate) fn enabled() -> Enabled {
    ENABLED.with(Cell::get)
}

fn sync_count() {
    let n = if enabled() == Enabled::Nothing {
        0
    } else {
        MODES.with(|m| m.borrow().len() as u32)
    };
    MODE_COUNT.with(|c| c.set(n));
}

pub(crate) fn push_mode(mode: Arc<dyn TorchFunctionMode>) {
    MODES.with(|m| m.borrow_mut().push(mode));
    sync_count();
}

pub(crate) fn pop_mode() -> Option<Arc<dyn TorchFunctionMode>> {
    let m = MODES.with(|m| m.borrow_mut().pop());
    sync_count();
    m
}

/// The modes on this thread's stack, bottom first
/// (`torch.overrides._get_current_function_mode_stack()`).
pub fn function_mode_stack() -> Vec<Arc<dyn TorchFunctionMode>> {
    MODES.with(|m| m.borrow().clone())
}

pub(crate) fn set_enabled(e: Enabled) -> Enabled {
    let prev = ENABLED.with(|c| c.replace(e));
    sync_count();
    prev
}

pub(crate) fn push_current(mode: Arc<dyn TorchFunctionMode>) {
    CURRENT.with(|c| c.borrow_mut().push(mode));
}

pub(crate) fn pop_current() {
    CURRENT.with(|c| c.borrow_mut().pop());
}

pub(crate) fn current() -> Option<Arc<dyn TorchFunctionMode>> {
    CURRENT.with(|c| c.borrow().last().cloned())
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

/// Takes the top mode off the stack while its handler runs, and puts it back.
pub(crate) struct Popped(pub(crate) Arc<dyn TorchFunctionMode>);

impl Popped {
    pub(crate) fn top() -> Option<Popped> {
        let m = pop_mode()?;
        push_current(m.clone());
        Some(Popped(m))
    }
}

impl Drop for Popped {
    fn drop(&mut self) {
        pop_current();
        push_mode(self.0.clone());
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
