//! Dispatch: one [`Operator`] per operator overload, a kernel slot per dispatch key,
//! and the rules that pick the slot for a call.
//!
//! Keys follow PyTorch's priority order (highest first): `Autograd` →
//! `ADInplaceOrView` → `Python` → `BackendSelect` → backends (`Meta`, `CPU`). A call
//! computes the key set of its arguments (each tensor contributes its backend, its
//! class's keys, and `ADInplaceOrView` and `Autograd` while it requires grad:
//! [`crate::Tensor::key_set`]), adds the thread-local *include* set, removes
//! the *exclude* set and keys whose kernel is a fallthrough, and runs the kernel of
//! the highest remaining key. Kernels registered under the alias keys
//! `CompositeImplicitAutograd` / `CompositeExplicitAutograd(NonFunctional)` fill
//! concrete slots as PyTorch resolves them: an explicit kernel for a key wins, then
//! CompositeExplicitAutogradNonFunctional, CompositeExplicitAutograd, and
//! CompositeImplicitAutograd for backends; CompositeImplicitAutograd also fills
//! `Autograd` and `Python` when no backend kernel exists, so such an operator
//! decomposes above the Python key (whether or not its tensors require grad),
//! and `Functionalize` for an operator with alias annotations (a composite
//! view or in-place operator: functionalization must see what it does).
//!
//! Kernel slots are atomics: registration (at any time, from any thread) rebuilds
//! an operator's slots and publishes them; a typed call reads one slot with one
//! atomic load. Operators live for the whole program, as in PyTorch; a kernel
//! that is replaced or removed is freed once no call can still be running it
//! ([`KernelRef`]).

pub mod adapter;
mod kernel;
pub(crate) mod linked;
mod operator;
mod registry;
mod returns;
pub mod typed;

pub use kernel::{BoxedFn, DynBoxedFn, Kernel, KernelRef, TypedFallback, Unboxed};
pub use operator::Operator;
pub use registry::{dispatcher, Dispatcher};

pub use adapter::TypedCaller;
pub use linked::typed_caller;

pub use crate::keys::{DispatchKey, KeySet, LocalKeys, RUNTIME_KEYS};

use std::sync::atomic::AtomicBool;

/// Set while registration errors wait to be returned by the first call.
static PENDING: AtomicBool = AtomicBool::new(false);

#[cfg(test)]
mod tests;
