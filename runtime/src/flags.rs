//! The thread-local flags of the function-level override protocol, read by
//! every overridable call: how many function modes are on the thread's stack,
//! and what the disabling guards (`torch._C.DisableTorchFunction*`) turned off.
//! One `Cell`, no destructor. The protocol itself (`crate::overrides`) keeps
//! the stack and sets these; lower layers (the argument parser) only read them.

use std::cell::Cell;

/// Whether handlers run (`torch._C._TorchFunctionState`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Enabled {
    /// Modes and subclass handlers run.
    All,
    /// Subclass handlers are skipped; modes run (`DisableTorchFunctionSubclass`).
    ModesOnly,
    /// Nothing runs (`DisableTorchFunction`), also modes entered inside.
    Nothing,
}

/// What a call needs to know about the thread's state, read at once.
#[derive(Clone, Copy, Debug)]
pub struct Flags {
    /// Modes on the stack.
    depth: u32,
    /// The disabling guards' effect.
    pub enabled: Enabled,
}

impl Flags {
    /// Is a mode to be asked?
    #[inline]
    pub fn modes(self) -> bool {
        self.depth != 0 && self.enabled != Enabled::Nothing
    }

    /// Are tensor-likes' handlers to be asked?
    #[inline]
    pub fn subclasses(self) -> bool {
        self.enabled == Enabled::All
    }
}

thread_local! {
    static FLAGS: Cell<Flags> = const { Cell::new(Flags { depth: 0, enabled: Enabled::All }) };
}

/// The thread's flags.
#[inline]
pub fn flags() -> Flags {
    FLAGS.with(Cell::get)
}

/// Is a function mode on this thread's stack (and not disabled)? The one check a
/// plain call pays besides looking at its tensors.
#[inline]
pub fn function_modes_active() -> bool {
    flags().modes()
}

/// Do tensor-likes' handlers run on this thread now (no disabling guard)?
#[inline]
pub fn subclass_handlers_enabled() -> bool {
    flags().subclasses()
}

/// Records the depth of the mode stack.
pub(crate) fn set_depth(depth: u32) {
    FLAGS.with(|f| f.set(Flags { depth, ..f.get() }));
}

/// Sets what runs; returns what did before.
pub(crate) fn set_enabled(enabled: Enabled) -> Enabled {
    FLAGS.with(|f| {
        let prev = f.get();
        f.set(Flags { enabled, ..prev });
        prev.enabled
    })
}
