//! The graph as autograd uses it. Its types ([`Node`], [`Edge`], the
//! [`Backward`] trait a node's computation implements) are in `graph.rs`,
//! autograd's record of a tensor in `meta.rs`; this module adds what needs
//! the layers above the tensor: a leaf's
//! [`accumulator`], a tensor's [`gradient_edge`], and the engine's check of a
//! gradient against the input it reaches (`check_gradient`, which sums and
//! casts with `at`).

pub(crate) use super::graph::as_node;
pub use super::graph::{
    drop_boxed_later, drop_tensor_later, live_nodes, node_of, Backward, BackwardCtx, Edge, Edges,
    GradFn, GradHook, Grads, InputMeta, InputMetas, Node, ReentrantBackward,
};
pub use super::meta::AutogradMeta;
use crate::error::{Error, Result};
use crate::tensor::DType;
use crate::tensor::Tensor;
use std::sync::Arc;

/// A node's name as PyTorch's messages print it (its view and saved-tensor
/// messages): `SliceBackward0` is `Slice`, a custom Function's
/// `SavedBackward` is `Saved`.
pub(crate) fn short_name(name: &str) -> &str {
    let stem = name.trim_end_matches(|c: char| c.is_ascii_digit());
    stem.strip_suffix("Backward").unwrap_or(name)
}

/// PyTorch's `validate_outputs` for a gradient `grad` arriving at input
/// `input_nr` of `node` (sent as output `index` of the node `from`): a
/// gradient whose sizes expand to the input's is summed back to them
/// (`sum_to`), one of another dtype cast to the input's; other sizes are an
/// error with PyTorch's message. An accumulator checks against its leaf as it
/// is now (a leaf no handle reaches any more takes nothing).
pub(crate) fn check_gradient(
    node: &Node,
    input_nr: u32,
    grad: Tensor,
    from: &str,
    index: usize,
) -> Result<Tensor> {
    if let Some(leaf) = node.accumulates() {
        return match leaf.upgrade() {
            Some(leaf) => {
                leaf.with_geometry(|g| conform(grad, &g.shape, leaf.dtype(), from, index))
            }
            None => Ok(grad),
        };
    }
    match node.input_meta(input_nr as usize) {
        Some(m) => conform(grad, &m.shape, m.dtype, from, index),
        None => Ok(grad),
    }
}

/// Sums `grad` back to `shape` and casts it to `dtype` (see
/// [`check_gradient`]).
pub(crate) fn conform(
    grad: Tensor,
    shape: &[usize],
    dtype: DType,
    from: &str,
    index: usize,
) -> Result<Tensor> {
    let grad = match grad.with_geometry(|g| g.shape[..] == *shape) {
        true => grad,
        false => {
            let got = grad.shape();
            if !crate::shape::is_expandable_to(shape, &got) {
                return Err(Error::Runtime(
                    format!(
                        "Function {from} returned an invalid gradient at index {index} - got {got:?} but expected shape compatible with {shape:?}"
                    )
                    .into(),
                ));
            }
            let sizes: Vec<i64> = shape.iter().map(|&d| d as i64).collect();
            super::formulas::sum_to(&grad, &sizes)?
        }
    };
    super::formulas::cast_to(grad, dtype)
}

/// A leaf's accumulator node: the one the leaf holds, made on first use.
pub fn accumulator(leaf: &Tensor) -> Arc<Node> {
    leaf.autograd_meta_or_default()
        .accumulator_or(|| Node::accumulator_of(leaf))
        .clone()
}

/// Where a gradient for `t` goes: its history, or its accumulator if it is a
/// leaf that requires grad; `None` if it does not require grad.
#[inline(always)]
pub fn gradient_edge(t: &Tensor) -> Option<Edge> {
    if let Some(g) = t.grad_fn() {
        return Some(Edge {
            node: g.node,
            input_nr: g.output_nr,
        });
    }
    // A leaf the user marked (a view that requires grad only through its
    // base, made in no-grad mode, has neither history nor accumulator).
    let meta = t.autograd_meta().filter(|m| m.requires_grad_flag())?;
    Some(Edge {
        node: meta.accumulator_or(|| Node::accumulator_of(t)).clone(),
        input_nr: 0,
    })
}
