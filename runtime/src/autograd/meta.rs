//! Autograd's record of a tensor ([`AutogradMeta`], PyTorch's
//! `AutogradMeta`): made the first time autograd needs it, kept in the
//! tensor's slot for it (the tensor layer sees it as an `AutogradRecord`),
//! absent on every tensor autograd never touched.

use super::graph::{next_hook_id, GradHook, Node};
use crate::error::{Error, Result};
use crate::tensor::{AutogradRecord, Tensor};
use once_cell::race::OnceBox;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

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
        let id = next_hook_id();
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

impl AutogradRecord for AutogradMeta {
    fn requires_grad_flag(&self) -> bool {
        AutogradMeta::requires_grad_flag(self)
    }

    fn has_tangent(&self) -> bool {
        lock(&self.tangent).is_some()
    }
}

impl Tensor {
    /// Autograd's record of this tensor, if autograd made one.
    #[inline]
    pub fn autograd_meta(&self) -> Option<&AutogradMeta> {
        let record: &dyn std::any::Any = self.autograd_record()?;
        record.downcast_ref()
    }

    /// Autograd's record of this tensor, made empty if there is none yet
    /// (making it changes nothing about the tensor's calls).
    pub fn autograd_meta_or_default(&self) -> &AutogradMeta {
        let record: &dyn std::any::Any = self.autograd_record_or(|| Box::<AutogradMeta>::default());
        // Only this module makes a tensor's record, always an `AutogradMeta`.
        record
            .downcast_ref()
            .expect("a tensor's autograd record is an AutogradMeta")
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
        if !on && self.has_history() {
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

    /// Sets (or, with `None`, clears) the forward-mode tangent: what
    /// `autograd::forward_ad` does. A tensor with a tangent passes through
    /// Autograd kernels (its key set has [`crate::tensor::AUTOGRAD_KEYS`]), which propagate it.
    pub fn set_tangent(&self, tangent: Option<(u64, Tensor)>) {
        if tangent.is_some() || self.autograd_meta().is_some() {
            *lock(&self.autograd_meta_or_default().tangent) = tangent;
        }
        self.update_autograd_keys();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::autograd::graph::{Backward, BackwardCtx, Grads};
    use crate::dtype::{DType, Device};
    use crate::keys::{DispatchKey, KeySet};
    use crate::tensor::{History, AUTOGRAD_KEYS};

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
        r.set_history(Some(history("MulBackward0")));
        assert!(r.requires_grad() && !r.is_leaf());
        assert!(r.key_set().has(DispatchKey::Autograd));
        assert_eq!(
            r.grad_fn().map(|g| g.node.name().to_string()).as_deref(),
            Some("MulBackward0")
        );
        assert!(r.set_requires_grad(false).is_err());
        r.set_history(None);
        assert!(!r.requires_grad() && !r.key_set().has(DispatchKey::Autograd));

        // Setting `false` on a tensor autograd never saw makes no record.
        let u = Tensor::zeros(&[1], DType::Float32, Device::Cpu);
        u.set_requires_grad(false).unwrap();
        assert!(u.autograd_meta().is_none());
        let i = Tensor::zeros(&[1], DType::Int64, Device::Cpu);
        assert!(i.set_requires_grad(true).is_err() && !i.requires_grad());
    }

    fn history(name: &'static str) -> History {
        Arc::new(Node::new(
            name.into(),
            Default::default(),
            Default::default(),
            Mul,
        ))
        .history(0)
    }

    /// The unlocked write takes only a tensor no other handle reaches and
    /// that has no autograd record; any other is handed back untouched.
    #[test]
    fn only_a_fresh_tensor_takes_its_history_unlocked() {
        let mut fresh = Tensor::zeros(&[2], DType::Float32, Device::Cpu);
        assert!(fresh.set_fresh_history(history("FreshBackward")).is_ok());
        assert_eq!(fresh.grad_fn().unwrap().node.name(), "FreshBackward");
        assert!(fresh.requires_grad() && fresh.key_set().has(DispatchKey::Autograd));

        let untouched = |t: &Tensor| {
            assert!(t.grad_fn().is_none() && !t.key_set().has(DispatchKey::Autograd));
        };
        let mut cloned = Tensor::zeros(&[2], DType::Float32, Device::Cpu);
        let second = cloned.clone();
        let back = cloned.set_fresh_history(history("ClonedBackward"));
        assert_eq!(back.unwrap_err().node.name(), "ClonedBackward");
        untouched(&second);

        let mut weakly = Tensor::zeros(&[2], DType::Float32, Device::Cpu);
        let weak = weakly.downgrade();
        assert!(weakly.set_fresh_history(history("WeakBackward")).is_err());
        untouched(&weak.upgrade().unwrap());

        let mut recorded = Tensor::zeros(&[2], DType::Float32, Device::Cpu);
        recorded.autograd_meta_or_default();
        assert!(recorded.set_fresh_history(history("MetaBackward")).is_err());
        untouched(&recorded);
    }
}
