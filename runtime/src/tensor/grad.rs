//! Autograd's place on a tensor. The engine lives in a layer above the
//! dispatcher; a tensor only keeps what that layer records about it, in
//! [`AutogradMeta`], made the first time autograd needs it and absent on every
//! tensor autograd never touched (as PyTorch's `AutogradMeta` hangs off a
//! `TensorImpl`). A tensor that does not require grad and has no history is
//! plain: its key set has no `Autograd` key, so its calls never pass through an
//! Autograd kernel.
//!
//! Memory: a tensor holds its history ([`GradFn`], the node that made it); a
//! node holds what it saved. Nothing here points back from a node to a tensor
//! that holds it, so a graph is freed when its last output is dropped.

use super::graph::{GradFn, GradHook, Node};
use super::Tensor;
use crate::error::{Error, Result};
use crate::keys::{DispatchKey, KeySet};
use once_cell::race::OnceBox;
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

/// Makes a view's history afresh from its base's (`view`, `base`): the
/// autograd layer's `AsStridedBackward0` node over the base's gradient edge,
/// or `None` when the base has no gradient edge.
pub type ViewHistory = fn(&Tensor, &Tensor) -> Option<GradFn>;

static VIEW_HISTORY: OnceLock<ViewHistory> = OnceLock::new();

/// Installs the function that remakes a stale view's history (the autograd
/// layer does, before it makes its first view; the first installation stays).
pub fn set_view_history(f: ViewHistory) {
    let _ = VIEW_HISTORY.set(f);
}

/// A tensor's history slot, kept in the tensor itself rather than in its
/// [`AutogradMeta`]: a result an Autograd kernel records gets its history
/// without a second allocation (PyTorch keeps `grad_fn` in its
/// `AutogradMeta`, allocated for every result that requires grad).
///
/// Two fields of the tensor: the slot, and whether it holds a history (a
/// flag written under the slot's lock, kept beside the tensor's other small
/// fields, so that asking a tensor without one, every leaf, locks nothing).
pub(crate) struct History<'a> {
    slot: &'a Mutex<Option<GradFn>>,
    set: &'a AtomicBool,
}

impl History<'_> {
    #[inline]
    fn get(&self) -> Option<GradFn> {
        match self.is_set() {
            true => lock(self.slot).clone(),
            false => None,
        }
    }

    #[inline]
    fn is_set(&self) -> bool {
        self.set.load(Ordering::Acquire)
    }

    fn replace(&self, grad_fn: Option<GradFn>) {
        let mut slot = lock(self.slot);
        self.set.store(grad_fn.is_some(), Ordering::Release);
        let old = std::mem::replace(&mut *slot, grad_fn);
        // The old history (perhaps the last handle to a graph) is dropped
        // after the lock is released.
        drop(slot);
        drop(old);
    }
}

/// What autograd records about one tensor (see the module docs).
#[derive(Default)]
pub struct AutogradMeta {
    requires_grad: AtomicBool,
    retains_grad: AtomicBool,
    grad: Mutex<Option<Tensor>>,
    /// `(id, hook)` in registration order (the id is what removes it).
    hooks: Mutex<Vec<(u64, GradHook)>>,
    /// Whether `hooks` ever held one (set under its lock), so that a leaf
    /// without hooks, nearly every one, locks nothing in backward.
    has_hooks: AtomicBool,
    /// A leaf's gradient accumulator (PyTorch's `AccumulateGrad`), made on
    /// first use and kept for the leaf's life (also while it stops requiring
    /// grad: PyTorch too hands out the one that lives); the accumulator holds
    /// the leaf only weakly, so no cycle forms. Read without a lock.
    accumulator: OnceBox<Arc<Node>>,
    /// Forward mode's tangent and the level it belongs to (PyTorch's
    /// `fw_grad`; one level at a time, see `autograd::forward_ad`).
    tangent: Mutex<Option<(u64, Tensor)>>,
    /// Held by the engine from its read of `.grad` to the write that
    /// follows ([`AutogradMeta::accumulating`]).
    accumulating: Mutex<()>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl AutogradMeta {
    /// Set by the user on a leaf (`requires_grad_`), not implied by a history.
    pub fn requires_grad_flag(&self) -> bool {
        self.requires_grad.load(Ordering::Relaxed)
    }

    /// Whether `.grad` is kept for this non-leaf (`retain_grad`).
    pub fn retains_grad(&self) -> bool {
        self.retains_grad.load(Ordering::Relaxed)
    }

    /// Keep (or not) `.grad` for this non-leaf.
    pub fn set_retains_grad(&self, on: bool) {
        self.retains_grad.store(on, Ordering::Relaxed);
    }

    /// The accumulated gradient.
    pub fn grad(&self) -> Option<Tensor> {
        lock(&self.grad).clone()
    }

    /// Replaces the accumulated gradient, unchecked (the engine's write;
    /// [`Tensor::set_grad`] is PyTorch's checked `t.grad = g`).
    pub(crate) fn set_grad(&self, grad: Option<Tensor>) {
        *lock(&self.grad) = grad;
    }

    /// Held across a read of `.grad` and the write computed from it (the
    /// engine's accumulation, PyTorch's `AccumulateGrad` mutex), so that
    /// backward passes accumulating into one tensor at once, from several
    /// threads, lose no gradient. `.grad` itself stays readable meanwhile.
    pub fn accumulating(&self) -> MutexGuard<'_, ()> {
        lock(&self.accumulating)
    }

    /// Has a gradient hook ever been added (then [`AutogradMeta::hooks`]
    /// locks to read them)?
    #[inline]
    pub fn has_hooks(&self) -> bool {
        self.has_hooks.load(Ordering::Acquire)
    }

    /// The gradient hooks, in registration order.
    pub fn hooks(&self) -> Vec<GradHook> {
        if !self.has_hooks.load(Ordering::Acquire) {
            return Vec::new();
        }
        lock(&self.hooks).iter().map(|(_, h)| h.clone()).collect()
    }

    /// Adds a gradient hook; returns the id that removes it
    /// ([`AutogradMeta::remove_hook`]).
    pub fn add_hook(&self, hook: GradHook) -> u64 {
        let id = super::graph::next_hook_id();
        lock(&self.hooks).push((id, hook));
        self.has_hooks.store(true, Ordering::Release);
        id
    }

    /// Removes the hook [`AutogradMeta::add_hook`] returned `id` for;
    /// `false` if it is not there (removed already).
    pub fn remove_hook(&self, id: u64) -> bool {
        let mut hooks = lock(&self.hooks);
        let before = hooks.len();
        hooks.retain(|(i, _)| *i != id);
        hooks.len() != before
    }

    /// The forward-mode tangent at `level`, if the tensor has one there.
    pub fn tangent(&self, level: u64) -> Option<Tensor> {
        match &*lock(&self.tangent) {
            Some((l, t)) if *l == level => Some(t.clone()),
            _ => None,
        }
    }

    /// A leaf's gradient accumulator, the one `make` returns the first time
    /// (see the field). Atomic: two threads asking at once get the same node
    /// (the one whose node is installed first; the other's is dropped).
    pub fn accumulator_or(&self, make: impl FnOnce() -> Arc<Node>) -> &Arc<Node> {
        self.accumulator.get_or_init(|| Box::new(make()))
    }
}

impl std::fmt::Debug for AutogradMeta {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AutogradMeta")
            .field("requires_grad", &self.requires_grad_flag())
            .finish_non_exhaustive()
    }
}

impl Tensor {
    fn history(&self) -> History<'_> {
        History {
            slot: &self.0.history,
            set: &self.0.has_history,
        }
    }

    /// Autograd's record of this tensor, if autograd made one.
    #[inline]
    pub fn autograd_meta(&self) -> Option<&AutogradMeta> {
        self.0.autograd.get()
    }

    /// Autograd's record of this tensor, made empty if there is none yet
    /// (making it changes nothing about the tensor's calls).
    pub fn autograd_meta_or_default(&self) -> &AutogradMeta {
        self.0.autograd.get_or_init(Box::default)
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
        if let Some(v) = &self.0.view {
            self.refresh_view_history(v);
        }
        self.autograd_meta()
            .is_some_and(AutogradMeta::requires_grad_flag)
            || self.history().is_set()
            || self.0.view.as_ref().is_some_and(|v| v.base.requires_grad())
    }

    /// Marks a leaf as requiring grad, or not (PyTorch's `requires_grad_`).
    /// Only floating-point tensors can require grad; a tensor with a history
    /// cannot stop requiring it.
    pub fn set_requires_grad(&self, on: bool) -> Result<()> {
        if on && !self.dtype().is_floating_point() {
            return Err(crate::error::Error::Runtime(
                "only Tensors of floating point dtype can require gradients".into(),
            ));
        }
        if !on && self.grad_fn().is_some() {
            return Err(crate::error::Error::Runtime(
                "you can only change requires_grad flags of leaf variables. If you want to use a computed variable in a subgraph that doesn't require differentiation use var_no_grad = var.detach().".into(),
            ));
        }
        if on || self.autograd_meta().is_some() {
            let meta = self.autograd_meta_or_default();
            meta.requires_grad.store(on, Ordering::Relaxed);
        }
        self.update_autograd_keys();
        Ok(())
    }

    /// The tensor's history (`grad_fn` and `output_nr`), if it has one. A
    /// view whose storage was written since its history was set gets a new
    /// one from its base's first ([`ViewOf`]).
    #[inline]
    pub fn grad_fn(&self) -> Option<GradFn> {
        if let Some(v) = &self.0.view {
            self.refresh_view_history(v);
        }
        self.history().get()
    }

    /// The history as it is stored, without making a stale view's afresh.
    pub(crate) fn stored_grad_fn(&self) -> Option<GradFn> {
        self.history().get()
    }

    /// Sets or clears the tensor's history: what an Autograd kernel does to the
    /// results it records, and what rebasing an in-place write does. A view's
    /// history is then current as of the storage's version.
    pub fn set_grad_fn(&self, grad_fn: Option<GradFn>) {
        if let Some(v) = &self.0.view {
            v.attr_version
                .store(self.storage_version(), Ordering::Release);
        }
        let has_history = grad_fn.is_some();
        self.history().replace(grad_fn);
        match has_history {
            // A history means it requires grad: nothing else to ask.
            true => {
                let keys = self.key_set() | AUTOGRAD_KEYS;
                self.0.keys.store(keys.bits(), Ordering::Relaxed);
            }
            false => self.update_autograd_keys(),
        }
    }

    /// [`Tensor::set_grad_fn`] for a result only this handle reaches (a
    /// kernel's fresh output, not a tensor that keeps its gradient): the
    /// history is written without the slot's lock, as `mark_view` writes a
    /// fresh result's view. Hands `grad_fn` back, changing nothing, for a
    /// tensor another handle reaches, strong or weak (a tensor that keeps its
    /// gradient is one: its node holds it weakly), or one with an
    /// [`AutogradMeta`]: the shared path ([`Tensor::set_grad_fn`] and what
    /// autograd does around it) handles those.
    pub(crate) fn set_fresh_grad_fn(&mut self, grad_fn: GradFn) -> std::result::Result<(), GradFn> {
        let Some(inner) = Arc::get_mut(&mut self.0) else {
            return Err(grad_fn);
        };
        if inner.autograd.get().is_some() {
            return Err(grad_fn);
        }
        if let Some(v) = &mut inner.view {
            let geometry = inner.geometry.get_mut().unwrap_or_else(|e| e.into_inner());
            *v.attr_version.get_mut() = geometry.storage.version();
        }
        let slot = inner.history.get_mut().unwrap_or_else(|e| e.into_inner());
        let old = slot.replace(grad_fn);
        *inner.has_history.get_mut() = true;
        // A view's own keys gain the autograd keys its base may lend it
        // (`key_set`): with them set, the two agree.
        *inner.keys.get_mut() |= AUTOGRAD_KEYS.bits();
        drop(old);
        Ok(())
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

    /// A view's history is stale when its storage was written since it was
    /// set: then it is made afresh from the base's (unless the view has none
    /// and its base does not require grad, as in PyTorch).
    fn refresh_view_history(&self, v: &ViewOf) {
        let current = self.storage_version();
        if v.attr_version.load(Ordering::Acquire) == current {
            return;
        }
        let has_history = self.history().is_set();
        if !has_history && !v.base.requires_grad() {
            return;
        }
        v.attr_version.store(current, Ordering::Release);
        if let Some(make) = VIEW_HISTORY.get() {
            if let Some(g) = make(self, &v.base) {
                self.history().replace(Some(g));
                self.update_autograd_keys();
            }
        }
    }

    /// A leaf: no history (every tensor that does not require grad is one).
    pub fn is_leaf(&self) -> bool {
        self.grad_fn().is_none()
    }

    /// The accumulated gradient (`.grad`).
    pub fn grad(&self) -> Option<Tensor> {
        self.autograd_meta().and_then(AutogradMeta::grad)
    }

    /// Assigns `.grad` (PyTorch's `t.grad = g`), with PyTorch's checks: the
    /// gradient has the tensor's dtype, device and sizes, and is not the
    /// tensor itself; `None` clears it.
    ///
    /// ```
    /// use opforge::{DType, Device, Tensor};
    /// let x = Tensor::zeros(&[2], DType::Float32, Device::Cpu);
    /// x.set_grad(Some(Tensor::from_vec(vec![1.0f32, 2.0], &[2])?))?;
    /// assert_eq!(x.grad().unwrap().to_vec::<f32>()?, vec![1.0, 2.0]);
    /// let wrong = Tensor::zeros(&[3], DType::Float32, Device::Cpu);
    /// assert!(x.set_grad(Some(wrong)).is_err());
    /// # Ok::<(), opforge::Error>(())
    /// ```
    pub fn set_grad(&self, grad: Option<Tensor>) -> Result<()> {
        if let Some(g) = &grad {
            let fail = |m: String| Err(Error::Runtime(m.into()));
            if g.is_same(self) {
                return fail("can't assign Variable as its own grad".into());
            }
            if g.dtype() != self.dtype() {
                return fail(format!(
                    "attempting to assign a gradient with dtype '{}' to a tensor with grad_dtype '{}'. The gradient must match the tensor's grad_dtype (defaults to the tensor's dtype). You can set the tensor's grad_dtype attribute with a specific dtype, or None to allow any dtype. Set grad_dtype with caution. Diverging the dtypes of a tensor and its gradient may break downstream systems that assume they match.",
                    g.dtype().typemeta_name(),
                    self.dtype().c10_name()
                ));
            }
            if g.device() != self.device() {
                return fail(format!(
                    "attempting to assign a gradient with device type '{}' to a tensor with device type '{}'. Please ensure that the gradient and the tensor are on the same device",
                    g.device(),
                    self.device()
                ));
            }
            if g.shape() != self.shape() {
                return fail(format!(
                    "attempting to assign a gradient of size '{:?}' to a tensor of size '{:?}'. Please ensure that the gradient and the tensor are the same size",
                    g.sizes(),
                    self.sizes()
                ));
            }
        }
        match (&grad, self.autograd_meta()) {
            (None, None) => {}
            (None, Some(meta)) => meta.set_grad(None),
            (Some(_), _) => self.autograd_meta_or_default().set_grad(grad),
        }
        Ok(())
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
        match self.grad_fn() {
            Some(g) => format!(", grad_fn=<{}>", g.node.name()),
            None if self.requires_grad() => ", requires_grad=True".to_string(),
            None => String::new(),
        }
    }

    /// Sets (or, with `None`, clears) the forward-mode tangent: what
    /// `autograd::forward_ad` does. A tensor with a tangent passes through
    /// Autograd kernels (its key set has [`AUTOGRAD_KEYS`]), which propagate it.
    pub fn set_tangent(&self, tangent: Option<(u64, Tensor)>) {
        if tangent.is_some() || self.autograd_meta().is_some() {
            *lock(&self.autograd_meta_or_default().tangent) = tangent;
        }
        self.update_autograd_keys();
    }

    /// Has the tensor a forward-mode tangent (at any level)?
    pub fn has_tangent(&self) -> bool {
        self.autograd_meta()
            .is_some_and(|m| lock(&m.tangent).is_some())
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
    fn update_autograd_keys(&self) {
        let keys = self.key_set();
        let keys = if self.requires_grad() || self.has_tangent() {
            keys | AUTOGRAD_KEYS
        } else {
            keys - AUTOGRAD_KEYS
        };
        self.0.keys.store(keys.bits(), Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::{DType, Device};

    use crate::tensor::{Backward, BackwardCtx, Grads};

    struct Mul;
    impl Backward for Mul {
        fn apply(&mut self, grads: Grads, _: &BackwardCtx) -> Result<Grads> {
            Ok(grads)
        }
        fn release(&mut self) {}
    }

    #[test]
    fn the_autograd_keys_follow_requires_grad_and_history() {
        let t = Tensor::zeros(&[2], DType::Float32, Device::Cpu);
        let plain = t.key_set();
        assert_eq!(plain, KeySet::for_device(Device::Cpu));
        assert!(t.autograd_meta().is_none() && t.is_plain());
        t.set_requires_grad(true).unwrap();
        assert_eq!(t.key_set(), plain | AUTOGRAD_KEYS);
        assert!(
            t.is_plain(),
            "autograd's record does not make a tensor non-plain"
        );
        t.set_requires_grad(false).unwrap();
        assert_eq!(t.key_set(), plain);

        // A result with a history requires grad, and cannot be told otherwise.
        let r = Tensor::zeros(&[2], DType::Float64, Device::Meta);
        r.set_grad_fn(Some(GradFn {
            node: Arc::new(Node::new(
                "MulBackward0".into(),
                Default::default(),
                Default::default(),
                Mul,
            )),
            output_nr: 0,
        }));
        assert!(r.requires_grad() && !r.is_leaf());
        assert!(r.key_set().has(DispatchKey::Autograd));
        assert_eq!(
            r.grad_fn().map(|g| g.node.name().to_string()).as_deref(),
            Some("MulBackward0")
        );
        assert!(r.set_requires_grad(false).is_err());
        r.set_grad_fn(None);
        assert!(!r.requires_grad() && !r.key_set().has(DispatchKey::Autograd));

        // Setting `false` on a tensor autograd never saw makes no record.
        let u = Tensor::zeros(&[1], DType::Float32, Device::Cpu);
        u.set_requires_grad(false).unwrap();
        assert!(u.autograd_meta().is_none());
        let i = Tensor::zeros(&[1], DType::Int64, Device::Cpu);
        assert!(i.set_requires_grad(true).is_err() && !i.requires_grad());
    }

    fn history(name: &'static str) -> GradFn {
        GradFn {
            node: Arc::new(Node::new(
                name.into(),
                Default::default(),
                Default::default(),
                Mul,
            )),
            output_nr: 0,
        }
    }

    /// The unlocked write takes only a tensor no other handle reaches and
    /// that has no autograd record; any other is handed back untouched.
    #[test]
    fn only_a_fresh_tensor_takes_its_history_unlocked() {
        let mut fresh = Tensor::zeros(&[2], DType::Float32, Device::Cpu);
        assert!(fresh.set_fresh_grad_fn(history("FreshBackward")).is_ok());
        assert_eq!(fresh.grad_fn().unwrap().node.name(), "FreshBackward");
        assert!(fresh.requires_grad() && fresh.key_set().has(DispatchKey::Autograd));

        let untouched = |t: &Tensor| {
            assert!(t.grad_fn().is_none() && !t.key_set().has(DispatchKey::Autograd));
        };
        let mut cloned = Tensor::zeros(&[2], DType::Float32, Device::Cpu);
        let second = cloned.clone();
        let back = cloned.set_fresh_grad_fn(history("ClonedBackward"));
        assert_eq!(back.unwrap_err().node.name(), "ClonedBackward");
        untouched(&second);

        let mut weakly = Tensor::zeros(&[2], DType::Float32, Device::Cpu);
        let weak = weakly.downgrade();
        assert!(weakly.set_fresh_grad_fn(history("WeakBackward")).is_err());
        untouched(&weak.upgrade().unwrap());

        let mut recorded = Tensor::zeros(&[2], DType::Float32, Device::Cpu);
        recorded.autograd_meta_or_default();
        assert!(recorded.set_fresh_grad_fn(history("MetaBackward")).is_err());
        untouched(&recorded);
    }
}
