//! Views and in-place writes through them (PyTorch's differentiable views and
//! `CopySlices`).
//!
//! The kernel of every view operator marks its result as a view of its input
//! ([`mark_view`], called by the kernel's registration; see
//! [`crate::tensor::ViewOf`]), plain tensors included. When an in-place
//! operation writes through a view and something involved requires grad:
//!
//! - [`check_inplace_view`] refuses what PyTorch refuses (a view made in
//!   no-grad or inference mode, a view of a leaf that requires grad);
//! - the operation's node is recorded as usual, then `rebase` gives the
//!   view's *base* a `CopySlices` node wrapping it: the base's gradient
//!   passes unchanged outside the written region, and through the operation's
//!   backward inside it;
//! - the view's own history becomes an `AsStridedBackward0` node over the
//!   base's new history. Other views of the base get theirs the next time they
//!   are read, because the storage's version moved on
//!   ([`crate::Tensor::grad_fn`]).
//!
//! The gradient routines of a view are [`gather`] (the view's elements of a
//! tensor laid out as the base) and [`scatter`] (the reverse, summing where
//! the view repeats an element), each differentiable through the other, so
//! double backward through a write to a view works.

use super::mode::{below_autograd, is_grad_enabled, is_inference_mode_enabled};
use super::node::{
    conform, gradient_edge, short_name, Backward, BackwardCtx, Edge, Edges, Grads, InputMeta, Node,
};
use crate::at;
use crate::error::{Error, Result};
use crate::tensor::{last_offset, set_view_history, CreationMeta, History, Tensor, ViewOf};
use crate::Scalar;
use std::sync::Arc;

/// The view operators whose result is not a differentiable view: `detach`
/// (PyTorch writes its ADInplaceOrView kernel by hand, with
/// `is_bw_differentiable = false`). Its result shares the storage and the
/// version counter, but a write through it changes no history.
pub const NON_DIFFERENTIABLE_VIEWS: &[&str] = &["detach"];

/// PyTorch's message for an in-place write through a view of a leaf that
/// requires grad.
pub const VIEW_OF_LEAF_INPLACE: &str =
    "a view of a leaf Variable that requires grad is being used in an in-place operation.";

/// Marks `out`, the fresh result of the view operator `op` (`select.int`), as
/// a view of `input`, with how it was made (grad mode, inference mode, and
/// what `input` was made under, as PyTorch propagates it). What a view
/// operator's kernel registration calls; a result that is not fresh, or not
/// a view of `input`'s storage, is left alone.
pub fn mark_view(op: &str, input: &Tensor, out: &mut Tensor) {
    if NON_DIFFERENTIABLE_VIEWS.contains(&op) {
        return;
    }
    set_view_history(view_history);
    let made = if is_inference_mode_enabled() {
        CreationMeta::InferenceMode
    } else if !is_grad_enabled() {
        CreationMeta::NoGradMode
    } else {
        CreationMeta::Default
    };
    let creation = match input.view_of().map(ViewOf::creation) {
        Some(prev) if made == CreationMeta::Default || prev == CreationMeta::InferenceMode => prev,
        _ => made,
    };
    out.mark_view(input, creation);
}

/// PyTorch's checks before an in-place write through the view `view` while
/// grad mode is on and something involved requires grad
/// (`handle_view_on_rebase`): a view made in no-grad or inference mode is
/// refused, and so is a view of a leaf that requires grad.
pub fn check_inplace_view(view: &Tensor, v: &ViewOf) -> Result<()> {
    let creation = v.creation();
    if creation == CreationMeta::InCustomFunction {
        let prefix = match view.stored_history() {
            Some(g) => format!("Output {} of {}", g.output_nr, short_name(g.node.name())),
            None => "A view".to_string(),
        };
        return Err(Error::Runtime(
            format!("{prefix} is a view and is being modified inplace. This view was created inside a custom Function (or because an input was returned as-is) and the autograd logic to handle view+inplace would override the custom backward associated with the custom Function, leading to incorrect gradients. This behavior is forbidden. You can fix this by cloning the output of the custom Function.").into(),
        ));
    }
    if creation != CreationMeta::Default {
        // The history the view has now, not one made afresh.
        let grad_fn = view.stored_history();
        let prefix = match &grad_fn {
            Some(g) => format!(
                "Output {} of {} is a view of a view which was created in",
                g.output_nr,
                short_name(g.node.name())
            ),
            None => "A view was created in".to_string(),
        };
        let (msg, block) = match creation {
            CreationMeta::InferenceMode => (
                format!("{prefix} inference mode and is being modified inplace in normal mode."),
                "inference_mode",
            ),
            _ => (
                format!(
                    "{prefix} no_grad mode and is being modified inplace with grad mode enabled."
                ),
                "no_grad",
            ),
        };
        return Err(Error::Runtime(
            format!(
                "{msg} Given that this use case is ambiguous and error-prone, it is forbidden. You can clarify your code by moving both the view and the inplace either both inside the {block} block (if you don't want the inplace to be tracked) or both outside (if you want the inplace to be tracked)."
            )
            .into(),
        ));
    }
    if view.requires_grad() && v.base().is_leaf() && v.base().requires_grad() {
        return Err(Error::Runtime(VIEW_OF_LEAF_INPLACE.into()));
    }
    Ok(())
}

/// Gives the base of `view` the history of an in-place write through `view`
/// recorded as `node` (whose first input is the view): a [`CopySlices`] node
/// over the base's old history and `node`'s other inputs. The view's history
/// becomes an `AsStridedBackward0` node over the base's new one.
pub(crate) fn rebase(view: &Tensor, v: &ViewOf, node: &Arc<Node>) -> Result<()> {
    let base = v.base();
    let mut edges = Edges::with_capacity(node.next_edges().len().max(1));
    edges.push(gradient_edge(base));
    edges.extend(node.next_edges().iter().skip(1).cloned());
    let copy = one_output_node(
        "CopySlices",
        InputMeta::of(base),
        edges,
        CopySlices {
            base: Geom::of(base),
            view: Geom::of(view),
            inner: node.clone(),
        },
    );
    // A base that keeps its gradient keeps it from its new history on.
    if base.autograd_meta().is_some_and(|m| m.retains_grad()) {
        if let Some(old) = base.grad_fn() {
            old.node.remove_retained(base);
        }
        copy.add_retained(0, base.downgrade());
    }
    base.set_history(Some(copy.history(0)));
    view.set_history(view_history(view, base));
    Ok(())
}

/// A view's history made from its base's: an `AsStridedBackward0` node over
/// the base's gradient edge (`None` if the base has none). Installed in the
/// tensor layer for stale views ([`crate::tensor::set_view_history`]).
fn view_history(view: &Tensor, base: &Tensor) -> Option<History> {
    let edge = gradient_edge(base)?;
    let meta = InputMeta::of(view);
    let node = view_grad_node(
        Route::Gather,
        meta,
        Some(edge),
        Geom::of(base),
        Geom::of(view),
    );
    Some(node.history(0))
}

/// A node for one forward output (`meta` its sizes and dtype), sending
/// gradients along `edges`.
fn one_output_node<B: Backward>(
    name: &'static str,
    meta: InputMeta,
    edges: Edges,
    backward: B,
) -> Arc<Node<B>> {
    Arc::new(Node::new(
        name.into(),
        smallvec::smallvec![Some(meta)],
        edges,
        backward,
    ))
}

/// A tensor's place in its storage: sizes, strides and offset (a
/// [`crate::tensor::Geometry`] without the storage handle, so that a node
/// keeping it does not keep the storage alive, as PyTorch's `TensorGeometry`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Geom {
    /// Sizes.
    pub shape: Vec<usize>,
    /// Strides, in elements.
    pub strides: Vec<usize>,
    /// Offset of the first element, in elements.
    pub offset: usize,
}

impl Geom {
    /// `t`'s geometry.
    pub fn of(t: &Tensor) -> Geom {
        Geom {
            shape: t.shape(),
            strides: t.strides(),
            offset: t.storage_offset(),
        }
    }

    /// The number of storage elements from the first to the last one reached
    /// (0 when empty).
    fn extent(&self) -> Result<usize> {
        Ok(last_offset(&self.shape, &self.strides, 0)?.map_or(0, |last| last + 1))
    }

    /// Does no element of storage appear twice in the geometry?
    fn non_overlapping(&self) -> bool {
        let mut dims: Vec<(usize, usize)> = self
            .strides
            .iter()
            .zip(&self.shape)
            .filter(|&(_, &n)| n > 1)
            .map(|(&s, &n)| (s, n))
            .collect();
        dims.sort_unstable();
        let mut reach = 0;
        for (s, n) in dims {
            if s <= reach {
                return false;
            }
            reach += (n - 1) * s;
        }
        true
    }
}

/// A zero tensor of `like`'s dtype and device laid out as `base` (its sizes
/// and strides, at offset 0 of a storage of its extent).
fn zeros_laid_out(base: &Geom, like: &Tensor) -> Result<Tensor> {
    Tensor::try_zeros(&[base.extent()?], like.dtype(), like.device())?.strided_view(
        &base.shape,
        &base.strides,
        0,
    )
}

/// Where `view` starts in a tensor laid out as `base` at offset 0.
fn relative_offset(base: &Geom, view: &Geom) -> Result<usize> {
    view.offset
        .checked_sub(base.offset)
        .ok_or_else(|| Error::Runtime("a view starts before its base in their storage".into()))
}

/// The elements of `view` taken from `g`, a tensor of the base's shape (as
/// `g` laid out as the base, viewed as `view`): the backward of a write
/// through a view, and of [`scatter`]. Recorded as `AsStridedBackward0` when
/// `g` requires grad and grad mode is on.
pub fn gather(g: &Tensor, base: &Geom, view: &Geom) -> Result<Tensor> {
    let out = {
        let _below = below_autograd();
        let mut laid = zeros_laid_out(base, g)?;
        at::copy_(&mut laid, g, false)?;
        laid.strided_view(&view.shape, &view.strides, relative_offset(base, view)?)?
    };
    record_route(Route::Gather, g, &out, base, view);
    Ok(out)
}

/// A tensor of the base's shape with `g` (of the view's shape) summed into
/// the view's elements and zero elsewhere: the backward of a view ([`gather`]'s
/// adjoint). Recorded as `AsStridedScatterBackward0` when `g` requires grad
/// and grad mode is on.
pub fn scatter(g: &Tensor, base: &Geom, view: &Geom) -> Result<Tensor> {
    let out = {
        let _below = below_autograd();
        // Dimensions that repeat one element (an `expand`): their gradients
        // sum into it.
        let repeated: Vec<i64> = (0..view.shape.len())
            .filter(|&d| view.strides[d] == 0 && view.shape[d] > 1)
            .map(|d| d as i64)
            .collect();
        let mut once = view.clone();
        let g = if repeated.is_empty() {
            g.clone()
        } else {
            for &d in &repeated {
                once.shape[d as usize] = 1;
            }
            at::sum_dim_IntList(g, Some(&repeated), true, None)?
        };
        if !once.non_overlapping() {
            return Err(Error::Runtime(
                format!(
                    "the gradient of a view whose elements overlap in memory (sizes {:?}, strides {:?}) is not supported",
                    view.shape, view.strides
                )
                .into(),
            ));
        }
        let laid = zeros_laid_out(base, &g)?;
        let mut region =
            laid.strided_view(&once.shape, &once.strides, relative_offset(base, view)?)?;
        at::copy_(&mut region, &g, false)?;
        laid
    };
    record_route(Route::Scatter, g, &out, base, view);
    Ok(out)
}

/// The two gradient routines of a view, each the other's backward.
#[derive(Clone, Copy, Debug)]
enum Route {
    /// [`gather`]: the view's elements of a tensor laid out as the base.
    Gather,
    /// [`scatter`]: the reverse, zero outside the view.
    Scatter,
}

impl Route {
    fn run(self, g: &Tensor, base: &Geom, view: &Geom) -> Result<Tensor> {
        match self {
            Route::Gather => gather(g, base, view),
            Route::Scatter => scatter(g, base, view),
        }
    }
}

/// The node of a result `made_by` one routine: its backward runs the other.
/// A gather is PyTorch's `AsStridedBackward0` (a view taken as its geometry
/// in its base, as a regenerated view's history is), a scatter
/// `AsStridedScatterBackward0`.
fn view_grad_node(
    made_by: Route,
    meta: InputMeta,
    edge: Option<Edge>,
    base: Geom,
    view: Geom,
) -> Arc<Node<ViewGrad>> {
    let (name, backward) = match made_by {
        Route::Gather => ("AsStridedBackward0", Route::Scatter),
        Route::Scatter => ("AsStridedScatterBackward0", Route::Gather),
    };
    one_output_node(
        name,
        meta,
        smallvec::smallvec![edge],
        ViewGrad {
            route: backward,
            base,
            view,
        },
    )
}

/// Gives `out`, made from `g` by `made_by`, its history when `g` requires
/// grad and grad mode is on (the routines compute below autograd).
fn record_route(made_by: Route, g: &Tensor, out: &Tensor, base: &Geom, view: &Geom) {
    if is_grad_enabled() && g.requires_grad() {
        let meta = InputMeta::of(out);
        let node = view_grad_node(made_by, meta, gradient_edge(g), base.clone(), view.clone());
        out.set_history(Some(node.history(0)));
    }
}

/// A backward that runs one of a view's gradient routines.
struct ViewGrad {
    route: Route,
    base: Geom,
    view: Geom,
}

impl Backward for ViewGrad {
    fn apply(&mut self, grads: Grads, _: &BackwardCtx) -> Result<Grads> {
        let g = grads.into_iter().next().flatten();
        Ok(smallvec::smallvec![g
            .map(|g| self.route.run(&g, &self.base, &self.view))
            .transpose()?])
    }

    fn release(&mut self) {}

    fn owns_tensors(&self) -> bool {
        false
    }
}

/// PyTorch's `CopySlices`: the history a base gets when an operation writes
/// through one of its views. Its first input is the base's old history, the
/// others are the operation's other inputs. The gradient of the base is the
/// incoming one outside the view, and inside it what the operation's backward
/// (`inner`, given the view's part of the incoming gradient) sends to the
/// view's old value.
struct CopySlices {
    base: Geom,
    view: Geom,
    inner: Arc<Node>,
}

impl Backward for CopySlices {
    fn apply(&mut self, grads: Grads, ctx: &BackwardCtx) -> Result<Grads> {
        let n = self.inner.next_edges().len().max(1);
        let Some(g) = grads.into_iter().next().flatten() else {
            return Ok(smallvec::smallvec![None; n]);
        };
        if self.inner.is_accumulator() {
            return Err(Error::Runtime(
                "CopySlices wraps an operation's node, not an accumulator".into(),
            ));
        }
        let slice = gather(&g, &self.base, &self.view)?;
        // The operation's gradient for the view is always needed: it is the
        // base's, inside the view.
        let mut needed: Vec<bool> = (0..n).map(|i| ctx.needs_input_grad(i)).collect();
        needed[0] = true;
        let res = self.inner.run_backward(
            smallvec::smallvec![Some(slice.clone())],
            &BackwardCtx {
                needed: &needed,
                input_meta: self.inner.input_metas(),
            },
            false,
        )?;
        let mut res = res.into_iter();
        let one = Scalar::Int(1);
        // The operation's gradient for the view's old value, as the engine
        // would check it (the view's sizes, the written dtype).
        let r = match (res.next().flatten(), self.inner.input_meta(0)) {
            (Some(r), Some(m)) => {
                Some(conform(r, &self.view.shape, m.dtype, self.inner.name(), 0)?)
            }
            (r, _) => r,
        };
        // g + scatter(r - g|view): g outside the view, r inside it.
        let base_grad = match r {
            Some(r) => at::add_Tensor(
                &g,
                &scatter(&at::sub_Tensor(&r, &slice, one)?, &self.base, &self.view)?,
                one,
            )?,
            None => at::sub_Tensor(&g, &scatter(&slice, &self.base, &self.view)?, one)?,
        };
        let mut out = Grads::with_capacity(n);
        out.push(Some(base_grad));
        out.extend(res);
        out.resize(n, None);
        Ok(out)
    }

    fn release(&mut self) {
        self.inner.backward().release();
    }

    /// Nothing to hand over: the wrapped node, if this was its last holder,
    /// hands over its own tensors when it is dropped (one level deeper).
    fn before_drop(&mut self) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlap_and_extent() {
        let g = |shape: &[usize], strides: &[usize]| Geom {
            shape: shape.to_vec(),
            strides: strides.to_vec(),
            offset: 0,
        };
        assert!(g(&[2, 3], &[3, 1]).non_overlapping());
        assert!(g(&[3, 2], &[1, 3]).non_overlapping());
        assert!(!g(&[2, 3], &[0, 1]).non_overlapping());
        assert!(g(&[1, 3], &[0, 1]).non_overlapping());
        assert!(!g(&[2, 2], &[1, 1]).non_overlapping());
        assert_eq!(g(&[2, 3], &[3, 1]).extent().unwrap(), 6);
        assert_eq!(g(&[2, 0], &[3, 1]).extent().unwrap(), 0);
        assert_eq!(short_name("SliceBackward0"), "Slice");
        assert_eq!(short_name("TBackward0"), "T");
        assert_eq!(short_name("CopySlices"), "CopySlices");
    }
}
