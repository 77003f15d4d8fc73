//! Autograd's `Tensor` methods (PyTorch's `Tensor.backward`, `retain_grad`,
//! `register_hook`, `detach`), as an extension trait: `use
//! opforge::autograd::TensorAutograd`.

use super::engine::backward;
use super::node::{GradHook, Node};
use crate::error::{Error, Result};
use crate::tensor::{Tensor, WeakTensor};
use std::sync::{Arc, Weak};

/// Autograd's methods on [`Tensor`] (see the module docs).
pub trait TensorAutograd {
    /// `t.backward()`: the gradient of a one-element tensor with respect to
    /// the leaves of its graph, added to their `.grad`; the graph is freed.
    fn backward(&self) -> Result<()>;

    /// `t.backward(gradient, retain_graph, create_graph, inputs)`
    /// ([`super::backward`]).
    fn backward_with(
        &self,
        gradient: Option<&Tensor>,
        retain_graph: Option<bool>,
        create_graph: bool,
        inputs: Option<&[Tensor]>,
    ) -> Result<()>;

    /// Keeps this non-leaf's gradient in its `.grad` during backward (a
    /// leaf's is kept anyway).
    fn retain_grad(&self) -> Result<()>;

    /// Runs `hook` on this tensor's gradient whenever it is computed; a
    /// `Some` it returns replaces the gradient. A leaf's hooks run before
    /// accumulation into `.grad`. The handle removes the hook
    /// ([`RemovableHandle::remove`]); dropping it keeps the hook, as in
    /// PyTorch.
    ///
    /// A hook that captures its own tensor (or a tensor whose graph holds
    /// this one) makes a reference cycle, as in PyTorch: that graph is not
    /// freed until the hook is removed.
    fn register_hook(
        &self,
        hook: impl Fn(&Tensor) -> Result<Option<Tensor>> + Send + Sync + 'static,
    ) -> Result<RemovableHandle>;

    /// A tensor over the same data with no history that does not require grad
    /// (its storage, so its version counter, is shared).
    fn detach(&self) -> Result<Tensor>;
}

/// What [`TensorAutograd::register_hook`] returns (PyTorch's
/// `RemovableHandle`): [`RemovableHandle::remove`] takes the hook off.
/// It holds the tensor (or its node) weakly.
///
/// ```
/// use opforge::autograd::TensorAutograd;
/// use opforge::Tensor;
/// let x = Tensor::from_vec(vec![1.0f32, 2.0], &[2])?;
/// x.set_requires_grad(true)?;
/// let handle = x.register_hook(|g| Ok(Some(g.mul_scalar(opforge::Scalar::Int(10))?)))?;
/// x.sum()?.backward()?;
/// assert_eq!(x.grad().unwrap().to_vec::<f32>()?, vec![10.0, 10.0]);
/// handle.remove();
/// x.sum()?.backward()?;
/// assert_eq!(x.grad().unwrap().to_vec::<f32>()?, vec![11.0, 11.0]);
/// # Ok::<(), opforge::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct RemovableHandle {
    place: HookPlace,
    id: u64,
}

#[derive(Clone)]
enum HookPlace {
    /// A leaf's hooks, in its autograd record.
    Leaf(WeakTensor),
    /// A non-leaf's, on the node that made it.
    Node(Weak<Node>),
}

impl std::fmt::Debug for HookPlace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            HookPlace::Leaf(_) => "Leaf",
            HookPlace::Node(_) => "Node",
        })
    }
}

impl RemovableHandle {
    /// Removes the hook: later backward passes do not run it. Removing it
    /// again, or after its tensor is gone, does nothing.
    pub fn remove(&self) {
        match &self.place {
            HookPlace::Leaf(t) => {
                if let Some(meta) = t.upgrade().as_ref().and_then(Tensor::autograd_meta) {
                    meta.remove_hook(self.id);
                }
            }
            HookPlace::Node(n) => {
                if let Some(n) = n.upgrade() {
                    n.remove_pre_hook(self.id);
                }
            }
        }
    }
}

fn runtime(m: &str) -> Error {
    Error::Runtime(m.into())
}

impl TensorAutograd for Tensor {
    fn backward(&self) -> Result<()> {
        backward(std::slice::from_ref(self), &[], None, false, None)
    }

    fn backward_with(
        &self,
        gradient: Option<&Tensor>,
        retain_graph: Option<bool>,
        create_graph: bool,
        inputs: Option<&[Tensor]>,
    ) -> Result<()> {
        backward(
            std::slice::from_ref(self),
            &[gradient.cloned()],
            retain_graph,
            create_graph,
            inputs,
        )
    }

    fn retain_grad(&self) -> Result<()> {
        if !self.requires_grad() {
            return Err(runtime(
                "can't retain_grad on Tensor that has requires_grad=False",
            ));
        }
        let Some(g) = self.grad_fn() else {
            return Ok(());
        };
        let meta = self.autograd_meta_or_default();
        if meta.retains_grad() {
            return Ok(());
        }
        meta.set_retains_grad(true);
        g.node.add_retained(g.output_nr, self.downgrade());
        Ok(())
    }

    fn register_hook(
        &self,
        hook: impl Fn(&Tensor) -> Result<Option<Tensor>> + Send + Sync + 'static,
    ) -> Result<RemovableHandle> {
        if !self.requires_grad() {
            return Err(runtime(
                "cannot register a hook on a tensor that doesn't require gradient",
            ));
        }
        let hook: GradHook = Arc::new(hook);
        Ok(match self.grad_fn() {
            None => RemovableHandle {
                id: self.autograd_meta_or_default().add_hook(hook),
                place: HookPlace::Leaf(self.downgrade()),
            },
            Some(g) => RemovableHandle {
                id: g.node.add_pre_hook(g.output_nr, hook),
                place: HookPlace::Node(Arc::downgrade(&g.node)),
            },
        })
    }

    fn detach(&self) -> Result<Tensor> {
        crate::at::detach(self)
    }
}
