//! Saved tensors (PyTorch's `SavedVariable`): what a node keeps of a tensor for
//! its backward, with the version of the tensor's storage it saw, so that an
//! in-place write in between is an error rather than a wrong gradient.
//!
//! A saved *input* is kept as it is (its history points away from the node
//! saving it). A saved *output* of the node itself is kept without its history
//! (the tensor holds the node; the node holding the tensor would be a cycle)
//! and with a weak reference to the node, through which [`SavedTensor::unpack`]
//! gives back a tensor with that history again, for double backward.

use crate::error::{Error, Result};
use crate::tensor::Tensor;
use crate::tensor::{GraphNode, History};
use std::sync::Weak;

/// PyTorch's message for a saved tensor used after its graph was freed,
/// with the Rust call that keeps the graph added (PyTorch's words first).
pub const BACKWARD_TWICE: &str = "Trying to backward through the graph a second time (or directly access saved tensors after they have already been freed). Saved intermediate values of the graph are freed when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the graph a second time or if you need to access saved tensors after calling backward. (In Rust: `t.backward_with(None, Some(true), false, None)`, or `retain_graph: Some(true)` in `autograd::grad`.)";

/// A tensor saved for backward (see the module docs).
pub struct SavedTensor {
    data: Option<Tensor>,
    version: u64,
    output: Option<SavedOutput>,
    released: bool,
}

struct SavedOutput {
    node: Weak<dyn GraphNode>,
    output_nr: u32,
    requires_grad: bool,
}

/// A view of `t` over the same storage and geometry, with no history.
pub(crate) fn shallow_detach(t: &Tensor) -> Result<Tensor> {
    t.strided_view(&t.shape(), &t.strides(), t.storage_offset())
}

impl SavedTensor {
    /// Saves an input of the operation (or any tensor that is not one of the
    /// node's own outputs).
    pub fn input(t: &Tensor) -> SavedTensor {
        SavedTensor {
            version: t.storage().version(),
            data: Some(t.clone()),
            output: None,
            released: false,
        }
    }

    /// Saves output `output_nr` of the node being made: kept without its
    /// history, given it back on unpack ([`super::Saver::output`] supplies
    /// the node).
    pub(crate) fn output(
        t: &Tensor,
        node: Weak<dyn GraphNode>,
        output_nr: u32,
    ) -> Result<SavedTensor> {
        Ok(SavedTensor {
            version: t.storage().version(),
            data: Some(shallow_detach(t)?),
            output: Some(SavedOutput {
                node,
                output_nr,
                requires_grad: t.dtype().is_floating_point(),
            }),
            released: false,
        })
    }

    /// The saved tensor, checked: an error if its graph was freed
    /// ([`BACKWARD_TWICE`]) or if it was written in place since it was saved
    /// (PyTorch's message, naming the tensor, its node and both versions).
    pub fn unpack(&self) -> Result<Tensor> {
        let Some(data) = &self.data else {
            return Err(Error::Runtime(BACKWARD_TWICE.into()));
        };
        let node_of_output = self.output.as_ref().and_then(|o| {
            o.node
                .upgrade()
                .filter(|_| o.requires_grad)
                .map(|n| (n, o.output_nr))
        });
        let current = data.storage().version();
        if current != self.version {
            let history = match &self.output {
                Some(o) => o
                    .node
                    .upgrade()
                    .map(|n| (n.name().to_string(), o.output_nr)),
                None => data
                    .grad_fn()
                    .map(|g| (g.node.name().to_string(), g.output_nr)),
            };
            return Err(Error::Runtime(
                modified_message(data, history, current, self.version).into(),
            ));
        }
        match node_of_output {
            Some((node, nr)) => {
                let t = shallow_detach(data)?;
                t.set_history(Some(History {
                    node,
                    output_nr: nr,
                }));
                Ok(t)
            }
            None => Ok(data.clone()),
        }
    }

    /// Frees the saved tensor; a later [`SavedTensor::unpack`] fails with
    /// [`BACKWARD_TWICE`].
    pub fn release(&mut self) {
        if let Some(t) = self.data.take() {
            // Perhaps the last handle to a graph: dropped by the loop of a
            // node's drop under way rather than recursively.
            super::node::drop_tensor_later(t);
        }
        self.released = true;
    }

    /// Was it released?
    pub fn is_released(&self) -> bool {
        self.released
    }
}

impl std::fmt::Debug for SavedTensor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SavedTensor")
            .field("version", &self.version)
            .field("released", &self.released)
            .finish_non_exhaustive()
    }
}

/// `torch.FloatTensor`, as PyTorch names a tensor's type in messages.
pub(crate) fn type_name(t: &Tensor) -> String {
    match t.device() {
        crate::dtype::Device::Cpu => format!("torch.{}Tensor", t.dtype().c10_name()),
        d => format!("torch.{}.{}Tensor", d.name(), t.dtype().c10_name()),
    }
}

fn modified_message(
    t: &Tensor,
    history: Option<(String, u32)>,
    current: u64,
    saved: u64,
) -> String {
    let sizes: Vec<String> = t.shape().iter().map(|s| s.to_string()).collect();
    let mut m = format!(
        "one of the variables needed for gradient computation has been modified by an inplace operation: [{} [{}]]",
        type_name(t),
        sizes.join(", ")
    );
    if let Some((name, nr)) = history {
        let name = super::node::short_name(&name);
        m.push_str(&format!(", which is output {nr} of {name},"));
    }
    m.push_str(&format!(
        " is at version {current}; expected version {saved} instead. Hint: enable anomaly detection to find the operation that failed to compute its gradient, with torch.autograd.set_detect_anomaly(True, check_nan=False)."
    ));
    m
}
