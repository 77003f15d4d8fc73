//! What an Autograd kernel calls: [`Recording::begin`] before it computes
//! (the edges from its inputs, or `None` when nothing is to be recorded),
//! [`below_autograd`](super::mode::below_autograd) around its redispatch, [`Recording::finish`] after (the
//! node, saved values, each output's history).
//!
//! ```ignore
//! #[kernel(Autograd, "mul.Tensor")]
//! fn mul(self_: &Tensor, other: &Tensor) -> Result<Tensor> {
//!     let rec = Recording::begin(&[self_, other]);
//!     let mut out = {
//!         let _below = below_autograd();
//!         at::mul_Tensor(self_, other)?
//!     };
//!     if let Some(rec) = rec {
//!         let (a, b) = (rec.needs_input_grad(0), rec.needs_input_grad(1));
//!         // Lent mutably, the fresh result gets its history without locks
//!         // (`&[&out]` works too).
//!         rec.finish("MulBackward0", [&mut out], |_| MulBackward0 {
//!             other: a.then(|| SavedTensor::input(other)),
//!             self_: b.then(|| SavedTensor::input(self_)),
//!         })?;
//!     }
//!     Ok(out)
//! }
//! ```

use super::mode::is_grad_enabled;
use super::node::{as_node, gradient_edge};
use super::node::{Backward, BackwardCtx, Edges, Grads, InputMeta, InputMetas, Node};
use super::saved::SavedTensor;
use crate::error::{Error, Result};
use crate::tensor::{GraphNode, History, Tensor};
use std::borrow::Cow;
use std::sync::{Arc, Weak};

/// PyTorch's message for an in-place operation on a leaf that requires grad.
pub const LEAF_INPLACE: &str =
    "a leaf Variable that requires grad is being used in an in-place operation.";

/// A recording under way: the edges of a call's differentiable inputs.
#[derive(Debug)]
pub struct Recording {
    edges: Edges,
    /// The view an in-place call writes through: its base's history is
    /// rebased when the call's node is made ([`super::views`]).
    view_target: Option<Tensor>,
}

/// The outputs [`Recording::finish`] gives a history: shared handles
/// (`&[&out]`), or the kernel's own (`[&mut out]`, what the generated
/// kernels pass), whose fresh results (no other handle reaches them) are
/// read and written without their locks.
pub trait Outputs {
    /// How many.
    fn count(&self) -> usize;
    /// Output `i` (`i < count()`).
    fn output(&self, i: usize) -> &Tensor;
    /// Output `i` for writing, if the caller lent it so.
    fn output_mut(&mut self, i: usize) -> Option<&mut Tensor>;
}

impl Outputs for &[&Tensor] {
    fn count(&self) -> usize {
        self.len()
    }
    fn output(&self, i: usize) -> &Tensor {
        self[i]
    }
    fn output_mut(&mut self, _: usize) -> Option<&mut Tensor> {
        None
    }
}

impl<const N: usize> Outputs for &[&Tensor; N] {
    fn count(&self) -> usize {
        N
    }
    fn output(&self, i: usize) -> &Tensor {
        self[i]
    }
    fn output_mut(&mut self, _: usize) -> Option<&mut Tensor> {
        None
    }
}

impl<const N: usize> Outputs for [&mut Tensor; N] {
    fn count(&self) -> usize {
        N
    }
    fn output(&self, i: usize) -> &Tensor {
        self[i]
    }
    fn output_mut(&mut self, i: usize) -> Option<&mut Tensor> {
        Some(&mut *self[i])
    }
}

/// Given to the function that makes a node's [`Backward`]: saves the node's
/// own outputs (an input is saved with [`SavedTensor::input`]).
pub struct Saver<'a> {
    /// A weak handle to the node being made (from `Arc::new_cyclic`'s, asked
    /// for only by a backward that saves an output).
    node: &'a dyn Fn() -> Weak<dyn GraphNode>,
    outputs: &'a dyn Outputs,
}

impl Saver<'_> {
    /// Saves output `output_nr` of the node being made (of the outputs
    /// given to [`Recording::finish`]; kept without its history, see
    /// [`SavedTensor`]).
    pub fn output(&self, output_nr: u32) -> Result<SavedTensor> {
        let nr = output_nr as usize;
        if nr >= self.outputs.count() {
            return Err(Error::Runtime(
                format!(
                    "a node saves its output {nr}, but it has {}",
                    self.outputs.count()
                )
                .into(),
            ));
        }
        SavedTensor::output(self.outputs.output(nr), (self.node)(), output_nr)
    }
}

impl Recording {
    /// Starts recording a call with these differentiable inputs, if grad
    /// mode is on and one of them requires grad; `None` otherwise (then the
    /// kernel only redispatches, and its results have no history).
    pub fn begin(inputs: &[&Tensor]) -> Option<Recording> {
        if !is_grad_enabled() {
            return None;
        }
        // One pass: an input with an edge requires grad. Only when none has
        // one is `requires_grad` asked (a view made in no-grad mode of a base
        // that requires grad has no edge but requires grad).
        // A unary or binary call's edges are made in place (pushing them
        // one by one writes and rereads the inline buffer piecewise).
        let edges = match inputs {
            [a] => Edges::from_buf_and_len([gradient_edge(a), None], 1),
            [a, b] => Edges::from_buf([gradient_edge(a), gradient_edge(b)]),
            _ => inputs.iter().map(|t| gradient_edge(t)).collect(),
        };
        let any = edges.iter().any(Option::is_some);
        if !any && !inputs.iter().any(|t| t.requires_grad()) {
            return None;
        }
        Some(Recording {
            edges,
            view_target: None,
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
            view_target: None,
        })
    }

    /// [`Recording::begin`] for an in-place call writing `self_`: refused on a
    /// leaf that requires grad ([`LEAF_INPLACE`], while grad mode is on), and
    /// through a view as PyTorch refuses it ([`super::views::check_inplace_view`]);
    /// on a tensor with a history, that history becomes the new node's first
    /// edge, and [`Recording::finish`] with `self_` among the outputs rebases
    /// it (through a view: its base's, with `CopySlices`). Call it before the
    /// write (and save what the backward needs of `self_`'s old value before
    /// it, too).
    pub fn begin_inplace(self_: &Tensor, others: &[&Tensor]) -> Result<Option<Recording>> {
        let view = self_.view_of();
        if is_grad_enabled() {
            let self_requires = self_.requires_grad();
            if self_requires || others.iter().any(|t| t.requires_grad()) {
                if let Some(v) = view {
                    super::views::check_inplace_view(self_, v)?;
                }
            }
            if self_requires && self_.is_leaf() {
                return Err(Error::Runtime(LEAF_INPLACE.into()));
            }
        }
        let mut inputs = Vec::with_capacity(others.len() + 1);
        inputs.push(self_);
        inputs.extend_from_slice(others);
        Ok(Recording::begin(&inputs).map(|mut rec| {
            rec.view_target = view.map(|_| self_.clone());
            rec
        }))
    }

    /// Does input `i` require grad (is there an edge for it)?
    pub fn needs_input_grad(&self, i: usize) -> bool {
        self.edges.get(i).is_some_and(Option::is_some)
    }

    /// Makes the node `name` (PyTorch's name, `MulBackward0`) with the
    /// backward `make` returns, and gives each floating-point output the
    /// history (node, output number): the outputs hold the node.
    pub fn finish<B: Backward>(
        self,
        name: impl Into<Cow<'static, str>>,
        mut outputs: impl Outputs,
        make: impl FnOnce(&Saver) -> Result<B>,
    ) -> Result<()> {
        let name = name.into();
        let view_target = self.view_target;
        let mut made: Result<()> = Ok(());
        let count = outputs.count();
        let mut meta = |i: usize| match outputs.output_mut(i) {
            Some(t) => Some(InputMeta::of_owned(t)),
            None => Some(InputMeta::of(outputs.output(i))),
        };
        let input_meta = match count {
            1 => InputMetas::from_buf([meta(0)]),
            _ => (0..count).map(meta).collect(),
        };
        // The node and its backward in one allocation.
        let node = Arc::new_cyclic(|weak: &Weak<Node<Made<B>>>| {
            let weak = || -> Weak<dyn GraphNode> { weak.clone() as Weak<_> };
            let backward = match make(&Saver {
                node: &weak,
                outputs: &outputs,
            }) {
                Ok(b) => Some(b),
                Err(e) => {
                    made = Err(e);
                    None
                }
            };
            Node::new(name, input_meta, self.edges, Made(backward))
        });
        made?;
        let floating = |o: &dyn Outputs, i: usize| o.output(i).dtype().is_floating_point();
        let mut handles = Handles::new(node, (0..count).rev().find(|&i| floating(&outputs, i)));
        for nr in 0..count {
            if !floating(&outputs, nr) {
                continue;
            }
            let Some(handle) = handles.get(nr) else {
                continue;
            };
            let written_view = view_target
                .as_ref()
                .is_some_and(|t| outputs.output(nr).is_same(t));
            match outputs.output_mut(nr) {
                Some(t) => set_history_mut(t, handle, nr as u32, written_view)?,
                None => set_history(outputs.output(nr), handle, nr as u32, written_view)?,
            }
        }
        Ok(())
    }
}

/// A node's handle for each output that gets its history, in turn: a clone
/// for each but the last, which takes the handle itself (a one-output node
/// changes no reference count).
pub(crate) struct Handles {
    node: Option<Arc<dyn GraphNode>>,
    last: Option<usize>,
}

impl Handles {
    /// Handles of `node` for outputs up to `last`, the last to get one.
    pub(crate) fn new(node: Arc<dyn GraphNode>, last: Option<usize>) -> Handles {
        Handles {
            node: Some(node),
            last,
        }
    }

    /// The handle for output `nr` (`None` past `last`).
    pub(crate) fn get(&mut self, nr: usize) -> Option<Arc<dyn GraphNode>> {
        match Some(nr) == self.last {
            true => self.node.take(),
            false => self.node.clone(),
        }
    }
}

/// [`set_history`] for an output the caller holds mutably: a fresh result (no
/// other handle reaches it) takes the history without locking
/// ([`Tensor::set_fresh_history`]); any other, and a written view, the
/// shared way.
pub(crate) fn set_history_mut(
    out: &mut Tensor,
    node: Arc<dyn GraphNode>,
    nr: u32,
    written_view: bool,
) -> Result<()> {
    let node = match written_view {
        true => node,
        false => match out.set_fresh_history(History {
            node,
            output_nr: nr,
        }) {
            Ok(()) => return Ok(()),
            Err(g) => g.node,
        },
    };
    set_history(out, node, nr, written_view)
}

/// Gives `out` the history (`node`, output `nr`). With `written_view`, `out`
/// is a view an in-place operation wrote: its base's history is rebased
/// instead, with `CopySlices` (PyTorch's `rebase_history`). A tensor that
/// keeps its gradient (`retain_grad`) keeps it from its new history on (as
/// PyTorch moves its retains-grad hook).
pub(crate) fn set_history(
    out: &Tensor,
    node: Arc<dyn GraphNode>,
    nr: u32,
    written_view: bool,
) -> Result<()> {
    if written_view {
        if let Some(v) = out.view_of() {
            return super::views::rebase(out, v, &as_node(&node));
        }
    }
    let retained = out.autograd_meta().is_some_and(|m| m.retains_grad());
    if retained {
        if let Some(old) = out.grad_fn() {
            old.node.remove_retained(out);
        }
        as_node(&node).add_retained(nr, out.downgrade());
    }
    out.set_history(Some(History {
        node,
        output_nr: nr,
    }));
    Ok(())
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

/// Refuses to give a history to an output whose dtype autograd does not
/// differentiate (an integer `sum(dtype=int64)` of a tensor that requires
/// grad), with PyTorch's message from its `set_history`: what a generated
/// Autograd kernel checks before it records, for an operator whose outputs
/// are differentiable whatever their dtype (not `_to_copy`, whose
/// `output_differentiability:` is a condition on it).
#[inline]
pub fn check_differentiable_outputs(outputs: &[&Tensor]) -> Result<()> {
    match outputs.iter().find(|t| !t.dtype().is_floating_point()) {
        Some(t) => Err(not_differentiable(t)),
        None => Ok(()),
    }
}

#[cold]
fn not_differentiable(t: &Tensor) -> Error {
    Error::Runtime(format!("Autograd not support dtype: {}", t.dtype().c10_name()).into())
}

/// Refuses, while grad mode is on, a tensor that requires grad given for an
/// argument `function` has no formula for (PyTorch's `check_no_requires_grad`,
/// which the generated Autograd kernels call first): `tensors` are the
/// argument's (one, none for an absent `Tensor?`, each of a `Tensor[]`).
pub fn check_no_requires_grad<'a>(
    mut tensors: impl Iterator<Item = &'a Tensor>,
    name: &str,
    function: &str,
) -> Result<()> {
    if is_grad_enabled() && tensors.any(Tensor::requires_grad) {
        return Err(Error::Runtime(
            format!("The function '{function}' is not differentiable with respect to argument '{name}'. This input cannot have requires_grad True.").into(),
        ));
    }
    Ok(())
}

/// Records a functional call after the fact: [`Recording::begin`] on `inputs`
/// then [`Recording::finish`]. `false` when nothing was recorded.
pub fn record<B: Backward>(
    name: impl Into<Cow<'static, str>>,
    inputs: &[&Tensor],
    outputs: impl Outputs,
    make: impl FnOnce(&Saver) -> Result<B>,
) -> Result<bool> {
    match Recording::begin(inputs) {
        Some(rec) => rec.finish(name, outputs, make).map(|()| true),
        None => Ok(false),
    }
}

/// A node's backward as [`Recording::finish`] makes it: `None` if making it
/// failed (the node is then dropped with the error, and never runs).
pub(crate) struct Made<B>(pub(crate) Option<B>);

impl<B: Backward> Backward for Made<B> {
    fn apply(&mut self, grads: Grads, ctx: &BackwardCtx) -> Result<Grads> {
        match &mut self.0 {
            Some(b) => b.apply(grads, ctx),
            None => Err(Error::Runtime(
                "this node's backward could not be made".into(),
            )),
        }
    }

    fn release(&mut self) {
        if let Some(b) = &mut self.0 {
            b.release();
        }
    }

    fn before_drop(&mut self) {
        if let Some(b) = &mut self.0 {
            b.before_drop();
        }
    }

    fn owns_tensors(&self) -> bool {
        self.0.as_ref().is_some_and(B::owns_tensors)
    }
}
