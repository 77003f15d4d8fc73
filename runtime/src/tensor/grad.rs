//! Autograd's place on a tensor: narrow slots the autograd layer fills
//! (`crate::autograd`), as PyTorch's `TensorImpl` keeps an
//! `AutogradMetaInterface` that `torch/csrc/autograd` implements:
//!
//! - the tensor's history ([`History`]: the node that made it, seen here
//!   only as a [`GraphNode`], a name and the way back for autograd);
//! - autograd's record of it (an [`AutogradRecord`]: `requires_grad`, the
//!   gradient, hooks, the tangent), made the first time autograd needs it
//!   and absent on every tensor autograd never touched;
//! - for a view, its base ([`ViewOf`]).
//!
//! A tensor that does not require grad and has no history is plain: its key
//! set has no `Autograd` key, so its calls never pass through an Autograd
//! kernel.
//!
//! Memory: a tensor holds its history; a node holds what it saved. Nothing
//! here points back from a node to a tensor that holds it, so a graph is
//! freed when its last output is dropped.

use super::{Dims, Tensor};

use crate::keys::{DispatchKey, KeySet};
use std::any::Any;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

/// The keys a tensor has while it requires grad, and only then.
pub const AUTOGRAD_KEYS: KeySet =
    KeySet::of(DispatchKey::Autograd).with(DispatchKey::ADInplaceOrView);

/// How a view came to be, for PyTorch's checks of an in-place write through
/// it (its `CreationMeta`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CreationMeta {
    /// Made with grad mode on: an in-place write through it rebases its
    /// base's history.
    Default,
    /// Made with grad mode off (or from such a view): a write through it
    /// with grad mode on is refused.
    NoGradMode,
    /// Made in inference mode: likewise refused outside it.
    InferenceMode,
    /// Made inside a custom autograd Function (or an input it returned
    /// as-is): a write through it is refused, since its history is the
    /// Function's own backward.
    InCustomFunction,
}

impl CreationMeta {
    const ALL: [CreationMeta; 4] = [
        CreationMeta::Default,
        CreationMeta::NoGradMode,
        CreationMeta::InferenceMode,
        CreationMeta::InCustomFunction,
    ];

    fn code(self) -> u8 {
        self as u8
    }

    fn from_code(code: u8) -> CreationMeta {
        CreationMeta::ALL[usize::from(code) % CreationMeta::ALL.len()]
    }
}

/// What the result of a differentiable view operator keeps of the tensor it
/// views (PyTorch's `ViewInfo` of a `DifferentiableViewMeta`): its base (the
/// first tensor of the chain of views, never itself a view), how it was made,
/// and the storage version its history was last set at. A write to the
/// storage (through the base or any view of it) moves the version on, and the
/// view's history is made afresh from its base's the next time it is read
/// ([`Tensor::grad_fn`]), as PyTorch regenerates it.
///
/// The view holds its base; the base knows nothing of its views, so no cycle
/// forms.
pub struct ViewOf {
    base: Tensor,
    /// A [`CreationMeta`]'s code: set when the view is made, changed once
    /// more by a custom Function returning it ([`ViewOf::set_creation`]).
    creation: AtomicU8,
    attr_version: AtomicU64,
}

impl ViewOf {
    /// The base: the tensor whose storage this view's chain starts from.
    pub fn base(&self) -> &Tensor {
        &self.base
    }

    /// How the view was made.
    pub fn creation(&self) -> CreationMeta {
        CreationMeta::from_code(self.creation.load(Ordering::Relaxed))
    }

    /// Changes how the view counts as made: what a custom Function does to
    /// the views it returns ([`CreationMeta::InCustomFunction`]).
    pub fn set_creation(&self, creation: CreationMeta) {
        self.creation.store(creation.code(), Ordering::Relaxed);
    }
}

impl std::fmt::Debug for ViewOf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ViewOf")
            .field("creation", &self.creation())
            .field("attr_version", &self.attr_version.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

/// The node that made a tensor, as the tensor layer sees it: its name, and
/// the way back to the node as the autograd layer's type (`autograd::node_of`).
/// Only the autograd layer's nodes implement it (so that way back cannot
/// meet a node of another type):
///
/// ```compile_fail
/// use std::{any::Any, sync::Arc};
/// struct Mine;
/// impl opforge::tensor::GraphNode for Mine {
///     fn name(&self) -> &str { "MineBackward" }
///     fn hand_over(self: Arc<Self>, _to: &mut dyn Any) {}
/// }
/// ```
pub trait GraphNode: SealedGraphNode + Send + Sync + 'static {
    /// PyTorch's name (`MulBackward0`).
    fn name(&self) -> &str;
    /// Puts this handle into `to`, a slot of the autograd layer's handle
    /// type (which the node, knowing its own type, converts to): one virtual
    /// call, no allocation. A slot of another type is left as it is.
    #[doc(hidden)]
    fn hand_over(self: Arc<Self>, to: &mut dyn Any);
}

/// Seals [`GraphNode`]: the trait is public, this one only nameable in the
/// crate, so only the autograd layer's nodes implement it.
pub trait SealedGraphNode {}

/// A tensor's history as the tensor holds it: the node that computed it and
/// which of that node's outputs it is (PyTorch's `grad_fn` and `output_nr`;
/// `Tensor::grad_fn` gives it with the node as autograd's type).
#[derive(Clone)]
pub struct History {
    /// The node.
    pub node: Arc<dyn GraphNode>,
    /// Which of the node's outputs the tensor is.
    pub output_nr: u32,
}

impl std::fmt::Debug for History {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "<{} output {}>", self.node.name(), self.output_nr)
    }
}

/// Autograd's record of a tensor, as the tensor layer sees it (the autograd
/// layer's `AutogradMeta` implements it): what the tensor's keys and its
/// printed form depend on.
pub trait AutogradRecord: Any + Send + Sync {
    /// Set by the user on a leaf (`requires_grad_`), not implied by a history.
    fn requires_grad_flag(&self) -> bool;
    /// Has the tensor a forward-mode tangent (at any level)?
    fn has_tangent(&self) -> bool;
}

/// Makes a view's history afresh from its base's (`view`, `base`): the
/// autograd layer's `AsStridedBackward0` node over the base's gradient edge,
/// or `None` when the base has no gradient edge.
pub type ViewHistory = fn(&Tensor, &Tensor) -> Option<History>;

static VIEW_HISTORY: OnceLock<ViewHistory> = OnceLock::new();

/// Installs the function that remakes a stale view's history (the autograd
/// layer does, before it makes its first view; the first installation stays).
/// The tensor layer reads a view's history itself (its `requires_grad`, its
/// printed `grad_fn`), as PyTorch's `TensorBase::grad_fn` does through the
/// `VariableHooks` autograd installs.
pub fn set_view_history(f: ViewHistory) {
    let _ = VIEW_HISTORY.set(f);
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A tensor's history slot, kept in the tensor itself rather than in its
/// [`AutogradMeta`]: a result an Autograd kernel records gets its history
/// without a second allocation (PyTorch keeps `grad_fn` in its
/// `AutogradMeta`, allocated for every result that requires grad; one more
/// allocation per recorded call measured 6% more instructions per call).
///
/// Two fields of the tensor: the slot, and whether it holds a history (a
/// flag written under the slot's lock, kept beside the tensor's other small
/// fields, so that asking a tensor without one, every leaf, locks nothing).
pub(crate) struct HistoryCell<'a> {
    slot: &'a Mutex<Option<History>>,
    set: &'a AtomicBool,
}

impl HistoryCell<'_> {
    #[inline]
    fn get(&self) -> Option<History> {
        match self.is_set() {
            true => lock(self.slot).clone(),
            false => None,
        }
    }

    #[inline]
    fn is_set(&self) -> bool {
        self.set.load(Ordering::Acquire)
    }

    fn replace(&self, grad_fn: Option<History>) {
        let mut slot = lock(self.slot);
        self.set.store(grad_fn.is_some(), Ordering::Release);
        let old = std::mem::replace(&mut *slot, grad_fn);
        // The old history (perhaps the last handle to a graph) is dropped
        // after the lock is released.
        drop(slot);
        drop(old);
    }
}

impl Tensor {
    fn history_cell(&self) -> HistoryCell<'_> {
        HistoryCell {
            slot: &self.0.history,
            set: &self.0.has_history,
        }
    }

    /// Autograd's record of this tensor, if autograd made one.
    #[inline]
    pub(crate) fn autograd_record(&self) -> Option<&dyn AutogradRecord> {
        self.0.autograd.get().map(|r| &**r)
    }

    /// Autograd's record of this tensor, made by `make` if there is none
    /// yet (making it changes nothing about the tensor's calls).
    pub(crate) fn autograd_record_or(
        &self,
        make: impl FnOnce() -> Box<dyn AutogradRecord>,
    ) -> &dyn AutogradRecord {
        &**self.0.autograd.get_or_init(make)
    }

    /// Does the tensor require grad: a leaf marked so, a result with a
    /// history, or a view of a base that requires grad (as in PyTorch)?
    ///
    /// ```
    /// use opforge::Tensor;
    /// let t = Tensor::from_vec(vec![1.0f32], &[1])?;
    /// assert!(!t.requires_grad());
    /// t.set_requires_grad(true)?;
    /// assert!(t.requires_grad() && t.is_leaf());
    /// let i = Tensor::from_vec(vec![1i64], &[1])?;
    /// assert_eq!(
    ///     i.set_requires_grad(true).unwrap_err().to_string(),
    ///     "only Tensors of floating point dtype can require gradients"
    /// );
    /// # Ok::<(), opforge::Error>(())
    /// ```
    #[inline]
    pub fn requires_grad(&self) -> bool {
        self.refresh_if_view();
        self.autograd_record()
            .is_some_and(|r| r.requires_grad_flag())
            || self.history_cell().is_set()
            || self.0.view.as_ref().is_some_and(|v| v.base.requires_grad())
    }

    /// The tensor's history (its node, as a [`GraphNode`], and output
    /// number), if it has one. A view whose storage was written since its
    /// history was set gets a new one from its base's first ([`ViewOf`]).
    /// `Tensor::grad_fn` gives the node as autograd's type.
    #[inline]
    pub fn history(&self) -> Option<History> {
        self.refresh_if_view();
        self.history_cell().get()
    }

    /// Whether the tensor has a history (a stale view's made afresh first).
    #[inline]
    pub fn has_history(&self) -> bool {
        self.refresh_if_view();
        self.history_cell().is_set()
    }

    /// The history as it is stored, without making a stale view's afresh.
    pub(crate) fn stored_history(&self) -> Option<History> {
        self.history_cell().get()
    }

    /// Sets or clears the tensor's history: what an Autograd kernel does to the
    /// results it records, and what rebasing an in-place write does. A view's
    /// history is then current as of the storage's version.
    pub fn set_history(&self, history: Option<History>) {
        if let Some(v) = &self.0.view {
            v.attr_version
                .store(self.storage_version(), Ordering::Release);
        }
        let has_history = history.is_some();
        self.history_cell().replace(history);
        if has_history {
            // A history means it requires grad: nothing else to ask.
            let keys = self.key_set() | AUTOGRAD_KEYS;
            self.0.keys.store(keys.bits(), Ordering::Relaxed);
        } else {
            self.update_autograd_keys();
        }
    }

    /// [`Tensor::set_history`] for a result only this handle reaches (a
    /// kernel's fresh output, not a tensor that keeps its gradient): the
    /// history is written without the slot's lock, as `mark_view` writes a
    /// fresh result's view. Hands `history` back, changing nothing, for a
    /// tensor another handle reaches, strong or weak (a tensor that keeps its
    /// gradient is one: its node holds it weakly), or one with an
    /// [`AutogradRecord`]: the shared path ([`Tensor::set_history`] and what
    /// autograd does around it) handles those.
    pub(crate) fn set_fresh_history(
        &mut self,
        history: History,
    ) -> std::result::Result<(), History> {
        let Some(inner) = Arc::get_mut(&mut self.0) else {
            return Err(history);
        };
        if inner.autograd.get().is_some() {
            return Err(history);
        }
        if let Some(v) = &mut inner.view {
            let geometry = inner.geometry.get_mut().unwrap_or_else(|e| e.into_inner());
            *v.attr_version.get_mut() = geometry.storage.version();
        }
        let slot = inner.history.get_mut().unwrap_or_else(|e| e.into_inner());
        let old = slot.replace(history);
        *inner.has_history.get_mut() = true;
        // A view's own keys gain the autograd keys its base may lend it
        // (`key_set`): with them set, the two agree.
        *inner.keys.get_mut() |= AUTOGRAD_KEYS.bits();
        drop(old);
        Ok(())
    }

    /// The sizes of a tensor the caller holds mutably: read without the
    /// geometry's lock when this is the only handle (a kernel's fresh
    /// output).
    pub(crate) fn dims_of_owned(&mut self) -> Dims {
        match Arc::get_mut(&mut self.0) {
            Some(inner) => Dims::from_slice(
                &inner
                    .geometry
                    .get_mut()
                    .unwrap_or_else(|e| e.into_inner())
                    .shape,
            ),
            None => self.with_geometry(|g| Dims::from_slice(&g.shape)),
        }
    }

    /// The view's base and how it was made, if this tensor is the result of a
    /// differentiable view operator (PyTorch's `_base` and `is_view()`).
    ///
    /// ```
    /// use opforge::Tensor;
    /// let b = Tensor::from_vec(vec![1.0f32, 2.0, 3.0], &[3])?;
    /// let v = b.select(0, 1)?;
    /// assert!(v.view_of().unwrap().base().is_same(&b));
    /// // A view of a view has the first base.
    /// assert!(v.unsqueeze(0)?.view_of().unwrap().base().is_same(&b));
    /// assert!(b.view_of().is_none());
    /// # Ok::<(), opforge::Error>(())
    /// ```
    pub fn view_of(&self) -> Option<&ViewOf> {
        self.0.view.as_deref()
    }

    /// Marks this fresh result as a view of `base`'s storage (of `base`'s own
    /// base if `base` is a view): what the kernels of view operators do to
    /// their result. Returns `false`, changing nothing, if this handle is not
    /// the only one to the tensor (not a fresh result), if it does not share
    /// `base`'s storage, or if it is `base` itself.
    pub fn mark_view(&mut self, base: &Tensor, creation: CreationMeta) -> bool {
        if self.is_same(base) || !self.shares_storage(base) {
            return false;
        }
        let root = base.view_of().map_or(base, ViewOf::base).clone();
        let version = self.storage_version();
        match Arc::get_mut(&mut self.0) {
            Some(inner) => {
                inner.view = Some(Box::new(ViewOf {
                    base: root,
                    creation: AtomicU8::new(creation.code()),
                    attr_version: AtomicU64::new(version),
                }));
                true
            }
            None => false,
        }
    }

    fn storage_version(&self) -> u64 {
        self.with_geometry(|g| g.storage.version())
    }

    /// A view's history made current first (see below); nothing for a
    /// tensor that is not a view.
    #[inline(always)]
    fn refresh_if_view(&self) {
        if let Some(v) = &self.0.view {
            self.refresh_view_history(v);
        }
    }

    /// A view's history is stale when its storage was written since it was
    /// set: then it is made afresh from the base's (unless the view has none
    /// and its base does not require grad, as in PyTorch).
    fn refresh_view_history(&self, v: &ViewOf) {
        let current = self.storage_version();
        if v.attr_version.load(Ordering::Acquire) == current {
            return;
        }
        let has_history = self.history_cell().is_set();
        if !has_history && !v.base.requires_grad() {
            return;
        }
        v.attr_version.store(current, Ordering::Release);
        if let Some(make) = VIEW_HISTORY.get() {
            if let Some(g) = make(self, &v.base) {
                self.history_cell().replace(Some(g));
                self.update_autograd_keys();
            }
        }
    }

    /// A leaf: no history (every tensor that does not require grad is one).
    pub fn is_leaf(&self) -> bool {
        !self.has_history()
    }

    /// What PyTorch appends to a printed tensor for autograd:
    /// `, grad_fn=<MulBackward0>` for a result with a history,
    /// `, requires_grad=True` for a leaf that requires grad, else nothing.
    ///
    /// ```
    /// use opforge::Tensor;
    /// let t = Tensor::from_vec(vec![1.0f32, 2.0], &[2])?;
    /// t.set_requires_grad(true)?;
    /// assert_eq!(t.to_string(), "tensor([1.0, 2.0], dtype=torch.float32, requires_grad=True)");
    /// # Ok::<(), opforge::Error>(())
    /// ```
    pub fn autograd_suffix(&self) -> String {
        match self.history() {
            Some(g) => format!(", grad_fn=<{}>", g.node.name()),
            None if self.requires_grad() => ", requires_grad=True".to_string(),
            None => String::new(),
        }
    }

    /// Has the tensor a forward-mode tangent (at any level)?
    pub fn has_tangent(&self) -> bool {
        self.autograd_record().is_some_and(|r| r.has_tangent())
    }

    /// Is this handle the only one to the tensor, and the tensor the only one
    /// over its storage? Then its data can be taken over without a copy (what
    /// autograd's accumulation does with a fresh gradient).
    pub fn is_sole_owner(&self) -> bool {
        Arc::strong_count(&self.0) == 1
            && Arc::weak_count(&self.0) == 0
            && self.with_geometry(|g| g.storage.handle_count() == 1)
    }

    /// The [`AUTOGRAD_KEYS`] follow the tensor: present while it requires
    /// grad or has a tangent, absent otherwise.
    pub(crate) fn update_autograd_keys(&self) {
        let keys = self.key_set();
        let keys = if self.requires_grad() || self.has_tangent() {
            keys | AUTOGRAD_KEYS
        } else {
            keys - AUTOGRAD_KEYS
        };
        self.0.keys.store(keys.bits(), Ordering::Relaxed);
    }
}
