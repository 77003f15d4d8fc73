//! Autograd's `Tensor` methods (PyTorch's `Tensor.backward`, `retain_grad`,
//! `register_hook`, `detach`), as an extension trait: `use
//! opforge::autograd::TensorAutograd`.

use super::engine::backward;
use crate::error::{Error, Result};
use crate::tensor::Tensor;
use std::sync::Arc;

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
    /// accumulation into `.grad`.
    fn register_hook(
        &self,
        hook: impl Fn(&Tensor) -> Result<Option<Tensor>> + Send + Sync + 'static,
    ) -> Result<()>;

    /// A tensor over the same data with no history that does not require grad
    /// (its storage, so its version counter, is shared).
    fn detach(&self) -> Result<Tensor>;
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
    ) -> Result<()> {
        if !self.requires_grad() {
            return Err(runtime(
                "cannot register a hook on a tensor that doesn't require gradient",
            ));
        }
        let hook: crate::tensor::GradHook = Arc::new(hook);
        match self.grad_fn() {
            None => {
                self.autograd_meta_or_default().add_hook(hook);
            }
            Some(g) => {
                g.node.add_pre_hook(g.output_nr, hook);
            }
        }
        Ok(())
    }

    fn detach(&self) -> Result<Tensor> {
        crate::at::detach(self)
    }
}
