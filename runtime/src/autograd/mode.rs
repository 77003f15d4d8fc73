//! Grad mode: whether operations on tensors that require grad are recorded,
//! per thread (PyTorch's `GradMode`, `torch.no_grad`, `torch.enable_grad`,
//! `torch.set_grad_enabled`, `torch.inference_mode`). Each setter returns a
//! guard that restores the previous mode when dropped, so modes nest.

use crate::error::{Error, Result};
use crate::keys::{LocalKeys, LocalKeysGuard};
use crate::tensor::AUTOGRAD_KEYS;
use std::cell::{Cell, RefCell};

thread_local! {
    static GRAD_ENABLED: Cell<bool> = const { Cell::new(true) };
    static INFERENCE: Cell<bool> = const { Cell::new(false) };
}

/// Is grad mode on for this thread (the default)?
///
/// ```
/// use opforge::autograd::{is_grad_enabled, no_grad};
/// assert!(is_grad_enabled());
/// {
///     let _g = no_grad();
///     assert!(!is_grad_enabled());
/// }
/// assert!(is_grad_enabled());
/// ```
#[inline]
pub fn is_grad_enabled() -> bool {
    GRAD_ENABLED.with(Cell::get)
}

/// Is this thread inside [`inference_mode`]?
pub fn is_inference_mode_enabled() -> bool {
    INFERENCE.with(Cell::get)
}

/// Restores the thread's previous grad mode (and inference mode) when dropped.
#[must_use = "the previous grad mode is restored when the guard is dropped"]
pub struct GradModeGuard {
    grad: bool,
    inference: bool,
    _keys: Option<LocalKeysGuard>,
    /// The mode is the thread's: the guard stays on it (not `Send`).
    _thread: std::marker::PhantomData<*const ()>,
}

impl Drop for GradModeGuard {
    fn drop(&mut self) {
        GRAD_ENABLED.with(|c| c.set(self.grad));
        INFERENCE.with(|c| c.set(self.inference));
    }
}

fn set(grad: bool, inference: bool, keys: Option<LocalKeysGuard>) -> GradModeGuard {
    let guard = GradModeGuard {
        grad: is_grad_enabled(),
        inference: is_inference_mode_enabled(),
        _keys: keys,
        _thread: std::marker::PhantomData,
    };
    GRAD_ENABLED.with(|c| c.set(grad));
    INFERENCE.with(|c| c.set(inference));
    guard
}

/// Grad mode on or off until the guard is dropped (`torch.set_grad_enabled`).
pub fn set_grad_enabled(on: bool) -> GradModeGuard {
    set(on, is_inference_mode_enabled(), None)
}

/// Grad mode off until the guard is dropped (`torch.no_grad`): nothing is
/// recorded, results do not require grad.
pub fn no_grad() -> GradModeGuard {
    set_grad_enabled(false)
}

/// Grad mode on until the guard is dropped (`torch.enable_grad`), also inside
/// [`no_grad`].
pub fn enable_grad() -> GradModeGuard {
    set_grad_enabled(true)
}

/// Inference mode until the guard is dropped (`torch.inference_mode`): grad
/// mode off, and the Autograd keys excluded on this thread, so not even the
/// Autograd kernels run (PyTorch also marks tensors made meanwhile as
/// inference tensors; this runtime does not yet).
pub fn inference_mode() -> GradModeGuard {
    let keys = LocalKeys::exclude(AUTOGRAD_KEYS);
    set(false, true, Some(keys))
}

/// Excludes the `Autograd` and `ADInplaceOrView` keys on this thread until the
/// guard is dropped (PyTorch's `AutoDispatchBelowADInplaceOrView`): an Autograd
/// kernel's redispatch, and everything that computation calls in turn, goes to
/// the keys below, whatever its tensors require. Uses the dispatcher's
/// thread-local exclude set ([`LocalKeys::exclude`]); nothing is added to calls
/// made outside the guard.
pub fn below_autograd() -> LocalKeysGuard {
    LocalKeys::exclude(AUTOGRAD_KEYS)
}

thread_local! {
    /// The operators whose Autograd kernel, written with `#[kernel(Autograd, …)]`,
    /// is running on this thread, innermost last.
    static AUTOGRAD_KERNELS: RefCell<Vec<&'static str>> = const { RefCell::new(Vec::new()) };
}

/// Marks an operator's `#[kernel(Autograd, …)]` kernel as running on this
/// thread until dropped ([`enter_autograd_kernel`]).
#[must_use = "the kernel is marked running until the guard is dropped"]
pub struct AutogradKernelGuard {
    /// The mark is the thread's: the guard stays on it (not `Send`).
    _thread: std::marker::PhantomData<*const ()>,
}

impl Drop for AutogradKernelGuard {
    fn drop(&mut self) {
        AUTOGRAD_KERNELS.with(|k| k.borrow_mut().pop());
    }
}

/// What the registration of a `#[kernel(Autograd, "op")]` kernel runs before
/// the kernel: marks it running on this thread, or, if it is running there
/// already, fails with an error saying what to call. An Autograd kernel that
/// redispatches to its own operator without [`below_autograd`] (a custom
/// Function's `forward` runs with grad mode off, but the `Autograd` key is
/// still dispatched to, as in PyTorch, where `VariableType` kernels redispatch
/// under `AutoDispatchBelowADInplaceOrView`: `tools/autograd/gen_variable_type.py`)
/// would run itself again without end and overflow the stack. Only the
/// kernels users write pay for this (one thread-local access); the generated
/// ones exclude the key themselves.
pub fn enter_autograd_kernel(op: &'static str) -> Result<AutogradKernelGuard> {
    AUTOGRAD_KERNELS.with(|k| {
        let mut k = k.borrow_mut();
        if k.contains(&op) {
            return Err(Error::Runtime(
                format!(
                    "{op}: its Autograd kernel was entered again on this thread while it runs: \
                     the kernel calls `{op}` with the Autograd key still active, which would \
                     run the kernel again without end. Make the call below autograd: \
                     `let _below = opforge::autograd::below_autograd();` before it (a custom \
                     Function's forward runs with grad mode off, but still dispatches to the \
                     Autograd key)"
                )
                .into(),
            ));
        }
        k.push(op);
        Ok(AutogradKernelGuard {
            _thread: std::marker::PhantomData,
        })
    })
}
