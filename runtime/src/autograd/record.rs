//! What an Autograd kernel calls: [`Recording::begin`] before it computes
//! (the edges from its inputs, or `None` when nothing is to be recorded),
//! [`below_autograd`] around its redispatch, [`Recording::finish`] after (the
//! node, saved values, each output's history).
//!
//! ```ignore
//! #[kernel(Autograd, "mul.Tensor")]
//! fn mul(self_: &Tensor, other: &Tensor) -> Result<Tensor> {
//!     let rec = Recording::begin(&[self_, other]);
//!     let out = {
//!         let _below = below_autograd();
//!         at::mul_Tensor(self_, other)?
//!     };
//!     if let Some(rec) = rec {
//!         let (a, b) = (rec.needs_input_grad(0), rec.needs_input_grad(1));
//!         rec.finish("MulBackward0", &[&out], |_| MulBackward0 {
//!             other: a.then(|| SavedTensor::input(other)),
//!             self_: b.then(|| SavedTensor::input(self_)),
//!         })?;
//!     }
//!     Ok(out)
//! }
//! ```

use super::mode::is_grad_enabled;
use super::node::{Backward, Edge, Kind, Node};
use super::saved::SavedTensor;
use crate::error::{Error, Result};
use crate::keys::{LocalKeys, LocalKeysGuard};
use crate::tensor::{GradNode, Tensor, AUTOGRAD_KEYS};
use std::borrow::Cow;
use std::sync::{Arc, Weak};

/// PyTorch's message for an in-place operation on a leaf that requires grad.
pub const LEAF_INPLACE: &str =
    "a leaf Variable that requires grad is being used in an in-place operation.";

/// Excludes the `Autograd` and `ADInplaceOrView` keys on this thread until the
/// guard is dropped (PyTorch's `AutoDispatchBelowADInplaceOrView`): an Autograd
/// kernel's redispatch, and everything that computation calls in turn, goes to
/// the keys below, whatever its tensors require. Uses the dispatcher's
/// thread-local exclude set ([`LocalKeys::exclude`]); nothing is added to calls
/// made outside the guard.
pub fn below_autograd() -> LocalKeysGuard {
    LocalKeys::exclude(AUTOGRAD_KEYS)
}

/// A leaf's accumulator node: the live one if the leaf has one, else a new
/// one the leaf remembers weakly.
pub fn accumulator(leaf: &Tensor) -> Arc<Node> {
    let meta = leaf.autograd_meta_or_default();
    let node =
        meta.accumulator_or(|| Arc::new(Node::accumulate(leaf.clone())) as Arc<dyn GradNode>);
    match node.into_any_arc().downcast::<Node>() {
        Ok(n) => n,
        // Only this layer makes accumulators.
        Err(_) => Arc::new(Node::accumulate(leaf.clone())),
    }
}

/// Where a gradient for `t` goes: its history, or its accumulator if it is a
/// leaf that requires grad; `None` if it does not require grad.
pub fn gradient_edge(t: &Tensor) -> Option<Edge> {
    if let Some(g) = t.grad_fn() {
        return Node::of(&g).map(|node| Edge {
            node,
            input_nr: g.output_nr,
        });
    }
    if t.requires_grad() {
        return Some(Edge {
            node: accumulator(t),
            input_nr: 0,
        });
    }
    None
}

/// A recording under way: the edges of a call's differentiable inputs.
#[derive(Debug)]
pub struct Recording {
    edges: Vec<Option<Edge>>,
}

/// Given to the function that makes a node's [`Backward`]: saves the node's
/// own outputs (an input is saved with [`SavedTensor::input`]).
pub struct Saver<'a> {
    node: &'a Weak<Node>,
}

impl Saver<'_> {
    /// Saves output `output_nr` of the node being made (kept without its
    /// history; see [`SavedTensor`]).
    pub fn output(&self, t: &Tensor, output_nr: u32) -> Result<SavedTensor> {
        SavedTensor::output(t, self.node.clone(), output_nr)
    }
}

impl Recording {
    /// Starts recording a call with these differentiable inputs, if grad
    /// mode is on and one of them requires grad; `None` otherwise (then the
    /// kernel only redispatches, and its results have no history).
    pub fn begin(inputs: &[&Tensor]) -> Option<Recording> {
        if !is_grad_enabled() || !inputs.iter().any(|t| t.requires_grad()) {
            return None;
        }
        Some(Recording {
            edges: inputs.iter().map(|t| gradient_edge(t)).collect(),
        })
    }

    /// [`Recording::begin`] for inputs that may be absent (a `Tensor?`
    /// argument given `None`: no edge) or come from a `Tensor[]` argument
    /// (one input per element).
    pub fn begin_optional(inputs: &[Option<&Tensor>]) -> Option<Recording> {
        if !is_grad_enabled() || !inputs.iter().flatten().any(|t| t.requires_grad()) {
            return None;
        }
        Some(Recording {
            edges: inputs.iter().map(|t| t.and_then(gradient_edge)).collect(),
        })
    }

    /// [`Recording::begin`] for an in-place call writing `self_`: refused on a
    /// leaf that requires grad ([`LEAF_INPLACE`], while grad mode is on); on a
    /// tensor with a history, that history becomes the new node's first edge,
    /// and [`Recording::finish`] with `self_` among the outputs rebases it.
    /// Call it before the write (and save what the backward needs of
    /// `self_`'s old value before it, too).
    pub fn begin_inplace(self_: &Tensor, others: &[&Tensor]) -> Result<Option<Recording>> {
        if is_grad_enabled() && self_.requires_grad() && self_.is_leaf() {
            return Err(Error::Runtime(LEAF_INPLACE.into()));
        }
        let mut inputs = Vec::with_capacity(others.len() + 1);
        inputs.push(self_);
        inputs.extend_from_slice(others);
        Ok(Recording::begin(&inputs))
    }

    /// Does input `i` require grad (is there an edge for it)?
    pub fn needs_input_grad(&self, i: usize) -> bool {
        self.edges.get(i).is_some_and(Option::is_some)
    }

    /// Makes the node `name` (PyTorch's name, `MulBackward0`) with the
    /// backward `make` returns, and gives each floating-point output the
    /// history (node, output number). Returns the node.
    pub fn finish<B: Backward>(
        self,
        name: impl Into<Cow<'static, str>>,
        outputs: &[&Tensor],
        make: impl FnOnce(&Saver) -> Result<B>,
    ) -> Result<Arc<Node>> {
        let name = name.into();
        let mut made: Result<()> = Ok(());
        let num_outputs = u32::try_from(outputs.len()).unwrap_or(u32::MAX);
        let node = Arc::new_cyclic(|weak| {
            let backward: Box<dyn Backward> = match make(&Saver { node: weak }) {
                Ok(b) => Box::new(b),
                Err(e) => {
                    made = Err(e);
                    Box::new(Failed)
                }
            };
            Node::new(
                name,
                num_outputs,
                self.edges,
                Kind::Function(std::sync::Mutex::new(backward)),
            )
        });
        made?;
        for (nr, out) in outputs.iter().enumerate() {
            if !out.dtype().is_floating_point() {
                continue;
            }
            // A rebased tensor that keeps its gradient keeps it from its new
            // history on (as PyTorch moves its retains_grad hook).
            let retained = out.autograd_meta().is_some_and(|m| m.retains_grad());
            if retained {
                if let Some(old) = out.grad_fn().as_ref().and_then(Node::of) {
                    old.remove_retained(out);
                }
                node.add_retained(nr as u32, out.downgrade());
            }
            out.set_grad_fn(Some(node.grad_fn(nr as u32)));
        }
        Ok(node)
    }
}

/// Refuses an `out=` call while grad mode is on and one of its tensors
/// (inputs or outputs) requires grad, with PyTorch's message (`name` is the
/// operator's base name, `mul`): what an Autograd kernel of an out= overload
/// calls first.
pub fn check_out(name: &str, tensors: &[&Tensor]) -> Result<()> {
    if is_grad_enabled() && tensors.iter().any(|t| t.requires_grad()) {
        return Err(Error::Runtime(
            format!("{name}(): functions with out=... arguments don't support automatic differentiation, but one of the arguments requires grad.").into(),
        ));
    }
    Ok(())
}

/// Records a functional call after the fact: [`Recording::begin`] on `inputs`
/// then [`Recording::finish`]. `None` when nothing was recorded.
pub fn record<B: Backward>(
    name: impl Into<Cow<'static, str>>,
    inputs: &[&Tensor],
    outputs: &[&Tensor],
    make: impl FnOnce(&Saver) -> Result<B>,
) -> Result<Option<Arc<Node>>> {
    match Recording::begin(inputs) {
        Some(rec) => rec.finish(name, outputs, make).map(Some),
        None => Ok(None),
    }
}

/// Stands in for a backward whose making failed (the node is dropped with
/// the error; this never runs).
struct Failed;

impl Backward for Failed {
    fn apply(
        &mut self,
        _: Vec<Option<Tensor>>,
        _: &super::node::BackwardCtx,
    ) -> Result<Vec<Option<Tensor>>> {
        Err(Error::Runtime(
            "this node's backward could not be made".into(),
        ))
    }

    fn release(&mut self) {}
}
