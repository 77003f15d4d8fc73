//! Memory overlap between the tensors of one operation, as ATen's
//! `MemoryOverlap` classifies it, and the checks kernels make with it before
//! writing (PyTorch's messages).
//!
//! - [`has_internal_overlap`]: can two elements of one tensor share a storage
//!   position? `No` for a non-overlapping, dense tensor; `Yes` when a dimension
//!   of size > 1 has stride 0 (an expanded tensor); `TooHard` otherwise.
//! - [`overlap_status`]: how two tensors' elements relate. `Full` for the same
//!   tensor, or the same elements with the same strides; `Partial` when some but
//!   not all elements are shared (or the same range with other strides); `No`
//!   when either is empty or their ranges are disjoint; `TooHard` when either is
//!   not dense (then the tensors are not compared).
//! - The checks: [`assert_no_internal_overlap`] for every written tensor,
//!   [`assert_no_partial_overlap`] between an output and each input of a
//!   pointwise operation (`TensorIterator`; an input that is the output itself
//!   is skipped, so in-place and `out=self` work), [`assert_no_overlap`] where
//!   even full overlap is refused (`cat`, `index_select`). [`check_writes`] is
//!   `TensorIterator`'s pair of checks in one call.
//!
//! Meta tensors have no memory: PyTorch checks nothing for them, and neither do
//! these (a meta output never overlaps).

use super::layout::is_non_overlapping_and_dense;
use crate::error::{Error, Result};
use crate::tensor::{Device, Tensor};

/// `at::MemOverlap`: whether a tensor's own elements may share memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemOverlap {
    /// No two elements share a position (non-overlapping and dense).
    No,
    /// Some elements share a position (a stride-0 dimension of size > 1).
    Yes,
    /// Not known without looking at every element.
    TooHard,
}

/// `at::MemOverlapStatus`: how the elements of two tensors relate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemOverlapStatus {
    /// The same elements in the same order (the same tensor, or the same view).
    Full,
    /// Some shared elements, or the same ones in another order.
    Partial,
    /// No shared element.
    No,
    /// Not known without looking at every element (either is not dense).
    TooHard,
}

/// `at::has_internal_overlap`. A tensor of 0 elements has none, whatever
/// its strides: ATen asks `is_non_overlapping_and_dense()` first, which is
/// true of every contiguous tensor, and `compute_contiguous` holds every
/// empty tensor contiguous (`c10/core/TensorImpl.cpp`).
pub fn has_internal_overlap(t: &Tensor) -> MemOverlap {
    let g = t.geometry();
    if g.shape.contains(&0) || is_non_overlapping_and_dense(&g.shape, &g.strides) {
        return MemOverlap::No;
    }
    if crate::tensor::is_expanded(&g.shape, &g.strides) {
        return MemOverlap::Yes;
    }
    MemOverlap::TooHard
}

/// `at::get_overlap_status(a, b)`. Tensors sharing a storage share its dtype,
/// so ranges are compared in elements.
pub fn overlap_status(a: &Tensor, b: &Tensor) -> MemOverlapStatus {
    if a.is_same(b) {
        return MemOverlapStatus::Full;
    }
    let (ga, gb) = (a.geometry(), b.geometry());
    let (na, nb) = (checked_numel(&ga.shape), checked_numel(&gb.shape));
    if na == 0 || nb == 0 {
        return MemOverlapStatus::No;
    }
    if !is_non_overlapping_and_dense(&ga.shape, &ga.strides)
        || !is_non_overlapping_and_dense(&gb.shape, &gb.strides)
    {
        return MemOverlapStatus::TooHard;
    }
    if !ga.storage.ptr_eq(&gb.storage) {
        return MemOverlapStatus::No;
    }
    // Dense tensors occupy exactly `offset .. offset + numel`.
    let (a_begin, b_begin) = (ga.offset, gb.offset);
    let (a_end, b_end) = (a_begin.saturating_add(na), b_begin.saturating_add(nb));
    if a_begin == b_begin && a_end == b_end {
        return if ga.strides == gb.strides {
            MemOverlapStatus::Full
        } else {
            MemOverlapStatus::Partial
        };
    }
    if a_begin < b_end && b_begin < a_end {
        return MemOverlapStatus::Partial;
    }
    MemOverlapStatus::No
}

fn checked_numel(shape: &[usize]) -> usize {
    crate::tensor::checked_numel(shape).unwrap_or(usize::MAX)
}

/// PyTorch's message for a written tensor with shared elements.
pub use crate::tensor::internal_overlap_error;

/// PyTorch's message for an input sharing memory with the written tensor.
#[cold]
pub fn overlap_error() -> Error {
    Error::Runtime("unsupported operation: some elements of the input tensor and the written-to tensor refer to a single memory location. Please clone() the tensor before performing the operation.".into())
}

/// `at::assert_no_internal_overlap`: refuses writing into `out` when its
/// elements share memory (an expanded tensor). Nothing for a meta tensor.
pub fn assert_no_internal_overlap(out: &Tensor) -> Result<()> {
    if out.device() != Device::Meta && has_internal_overlap(out) == MemOverlap::Yes {
        return Err(internal_overlap_error());
    }
    Ok(())
}

/// `at::assert_no_partial_overlap`: refuses reading `input` while writing `out`
/// when they share some but not all elements. Nothing for a meta tensor.
pub fn assert_no_partial_overlap(out: &Tensor, input: &Tensor) -> Result<()> {
    if !out.shares_storage(input) {
        // `No` or `TooHard`: allowed either way, and cheap to tell.
        return Ok(());
    }
    if out.device() != Device::Meta && overlap_status(out, input) == MemOverlapStatus::Partial {
        return Err(overlap_error());
    }
    Ok(())
}

/// `at::assert_no_overlap`: refuses any shared element (full overlap too).
/// Nothing for a meta tensor.
pub fn assert_no_overlap(out: &Tensor, input: &Tensor) -> Result<()> {
    if out.device() != Device::Meta
        && (out.is_same(input) || out.shares_storage(input))
        && matches!(
            overlap_status(out, input),
            MemOverlapStatus::Partial | MemOverlapStatus::Full
        )
    {
        return Err(overlap_error());
    }
    Ok(())
}

/// `TensorIterator::compute_mem_overlaps` for one output: no internal overlap
/// in `out`, and no partial overlap with any input other than `out` itself.
pub fn check_writes<'a>(out: &Tensor, inputs: impl IntoIterator<Item = &'a Tensor>) -> Result<()> {
    if out.device() == Device::Meta {
        return Ok(());
    }
    assert_no_internal_overlap(out)?;
    for input in inputs {
        if !input.is_same(out) {
            assert_no_partial_overlap(out, input)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tensor::DType;
    use MemOverlapStatus::{Full, Partial, TooHard};

    fn base() -> Tensor {
        Tensor::from_vec((0..12i64).collect(), &[12]).unwrap()
    }

    fn view(t: &Tensor, shape: &[usize], strides: &[usize], offset: usize) -> Tensor {
        t.strided_view(shape, strides, offset).unwrap()
    }

    #[test]
    fn internal_overlap_of_views() {
        let t = base();
        assert_eq!(has_internal_overlap(&t), MemOverlap::No);
        // A transpose and a permutation are dense.
        assert_eq!(
            has_internal_overlap(&view(&t, &[3, 4], &[1, 3], 0)),
            MemOverlap::No
        );
        // Expanded: a stride-0 dimension of size > 1.
        assert_eq!(
            has_internal_overlap(&view(&t, &[3, 4], &[0, 1], 0)),
            MemOverlap::Yes
        );
        // An empty expanded tensor is contiguous for PyTorch: nothing to share.
        assert_eq!(
            has_internal_overlap(&view(&t, &[0, 3, 2], &[0, 1, 0], 0)),
            MemOverlap::No
        );
        // Size 1 with stride 0 is harmless.
        assert_eq!(
            has_internal_overlap(&view(&t, &[1, 4], &[0, 1], 0)),
            MemOverlap::No
        );
        // A strided slice is not dense, and not provably overlapping.
        assert_eq!(
            has_internal_overlap(&view(&t, &[6], &[2], 0)),
            MemOverlap::TooHard
        );
        // Overlapping windows without a zero stride: too hard, as in ATen.
        assert_eq!(
            has_internal_overlap(&view(&t, &[3, 3], &[1, 1], 0)),
            MemOverlap::TooHard
        );
        // Empty tensors have no overlap whatever their strides, also where
        // a size > 1 has stride 0 (ATen's `is_contiguous` holds for them).
        assert_eq!(
            has_internal_overlap(&view(&t, &[0, 3], &[0, 1], 0)),
            MemOverlap::No
        );
        assert_eq!(
            has_internal_overlap(&view(&t, &[3, 0], &[0, 1], 0)),
            MemOverlap::No
        );
        assert_eq!(
            has_internal_overlap(&view(&t, &[2, 0, 3], &[0, 0, 0], 0)),
            MemOverlap::No
        );
        assert!(assert_no_internal_overlap(&view(&t, &[2, 6], &[6, 1], 0)).is_ok());
        assert_eq!(
            assert_no_internal_overlap(&view(&t, &[2, 6], &[0, 1], 0))
                .unwrap_err()
                .to_string(),
            internal_overlap_error().to_string()
        );
    }

    #[test]
    fn overlap_between_views() {
        let t = base();
        let other = base();
        // The same tensor, and another view with the same geometry.
        assert_eq!(overlap_status(&t, &t), Full);
        assert_eq!(overlap_status(&t, &view(&t, &[12], &[1], 0)), Full);
        // Disjoint halves of one storage; tensors of different storages.
        let (lo, hi) = (view(&t, &[6], &[1], 0), view(&t, &[6], &[1], 6));
        assert_eq!(overlap_status(&lo, &hi), MemOverlapStatus::No);
        assert_eq!(overlap_status(&t, &other), MemOverlapStatus::No);
        // Shifted slices (x[1:] and x[:-1]).
        let (a, b) = (view(&t, &[11], &[1], 1), view(&t, &[11], &[1], 0));
        assert_eq!(overlap_status(&a, &b), Partial);
        // The same range in another order: a transpose, or another shape.
        let m = view(&t, &[3, 4], &[4, 1], 0);
        let mt = view(&t, &[3, 4], &[1, 3], 0);
        assert_eq!(overlap_status(&m, &mt), Partial);
        assert_eq!(overlap_status(&t, &m), Partial);
        // A sub-block inside the other.
        assert_eq!(overlap_status(&t, &view(&t, &[4], &[1], 4)), Partial);
        // Not dense: an expanded or strided view is too hard to compare.
        assert_eq!(overlap_status(&t, &view(&t, &[2, 6], &[0, 1], 0)), TooHard);
        assert_eq!(
            overlap_status(&view(&t, &[6], &[2], 0), &view(&t, &[6], &[2], 1)),
            TooHard
        );
        // Empty tensors overlap nothing.
        assert_eq!(
            overlap_status(&view(&t, &[0], &[1], 3), &t),
            MemOverlapStatus::No
        );
        assert_eq!(
            overlap_status(&t, &view(&t, &[3, 0], &[0, 1], 0)),
            MemOverlapStatus::No
        );
    }

    #[test]
    fn the_checks_and_their_messages() {
        let t = base();
        let (a, b) = (view(&t, &[11], &[1], 1), view(&t, &[11], &[1], 0));
        let msg = overlap_error().to_string();
        assert_eq!(
            assert_no_partial_overlap(&a, &b).unwrap_err().to_string(),
            msg
        );
        assert!(assert_no_partial_overlap(&t, &t).is_ok());
        assert_eq!(assert_no_overlap(&t, &t).unwrap_err().to_string(), msg);
        let (lo, hi) = (view(&t, &[6], &[1], 0), view(&t, &[6], &[1], 6));
        assert!(assert_no_overlap(&lo, &hi).is_ok());
        // TensorIterator's pair: the output itself among the inputs is fine.
        assert!(check_writes(&t, [&t, &base()]).is_ok());
        assert_eq!(check_writes(&a, [&b]).unwrap_err().to_string(), msg);
        assert!(check_writes(&view(&t, &[2, 6], &[0, 1], 0), []).is_err());
        // Meta tensors are never checked.
        let m = Tensor::zeros(&[4], DType::Float32, Device::Meta);
        let me = m.strided_view(&[2, 4], &[0, 1], 0).unwrap();
        assert!(check_writes(&me, [&m]).is_ok());
        assert!(assert_no_overlap(&m, &m).is_ok());
        assert_eq!(overlap_status(&m, &m), Full);
    }
}
