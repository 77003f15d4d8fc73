//! Memory formats and strides: what `is_contiguous(memory_format)`,
//! `is_non_overlapping_and_dense`, `suggest_memory_format` and `empty_like`
//! compute in PyTorch.

use crate::error::Result;
use crate::tensor::{contiguous_strides, is_dense_in_order, Dims, MemoryFormat, Tensor};

/// Strides of a new tensor of `shape` in `format` (`Preserve` is the caller's
/// business; here it means contiguous).
pub(crate) fn strides_for(shape: &[usize], format: MemoryFormat) -> Result<Vec<usize>> {
    // PyTorch's "Stride calculation overflowed", also for an empty shape.
    crate::tensor::check_sizes_product(shape)?;
    let order = match format {
        MemoryFormat::Contiguous | MemoryFormat::Preserve => return Ok(contiguous_strides(shape)),
        MemoryFormat::ChannelsLast => {
            crate::ensure!(
                shape.len() == 4,
                "required rank 4 tensor to use channels_last format"
            );
            CHANNELS_LAST
        }
        MemoryFormat::ChannelsLast3d => {
            crate::ensure!(
                shape.len() == 5,
                "required rank 5 tensor to use channels_last_3d format"
            );
            CHANNELS_LAST_3D
        }
    };
    Ok(dense_strides(shape, order).to_vec())
}

/// The dimension orders (fastest first) of channels-last layouts.
pub(crate) const CHANNELS_LAST: &[usize] = &[1, 3, 2, 0];
/// See [`CHANNELS_LAST`].
pub(crate) const CHANNELS_LAST_3D: &[usize] = &[1, 4, 3, 2, 0];

/// The channels-last order for a tensor of `ndim` dimensions, if it has one.
pub(crate) fn channels_last_order(ndim: usize) -> Option<&'static [usize]> {
    match ndim {
        4 => Some(CHANNELS_LAST),
        5 => Some(CHANNELS_LAST_3D),
        _ => None,
    }
}

/// Dense strides that step fastest through `order[0]`, then `order[1]`, ….
pub(crate) fn dense_strides(shape: &[usize], order: &[usize]) -> Dims {
    let mut strides: Dims = smallvec::smallvec![0; shape.len()];
    let mut acc = 1usize;
    for &d in order {
        strides[d] = acc;
        acc = acc.saturating_mul(shape[d].max(1));
    }
    strides
}

/// `is_contiguous(memory_format)`.
pub(crate) fn is_contiguous_as(t: &Tensor, format: MemoryFormat) -> bool {
    let (shape, strides) = (t.shape(), t.strides());
    let order = match format {
        MemoryFormat::Contiguous | MemoryFormat::Preserve => {
            // Empty tensors are contiguous whatever their strides.
            return t.numel() == 0 || t.is_contiguous();
        }
        MemoryFormat::ChannelsLast if shape.len() == 4 => CHANNELS_LAST,
        MemoryFormat::ChannelsLast3d if shape.len() == 5 => CHANNELS_LAST_3D,
        _ => return false,
    };
    is_dense_in_order(&shape, &strides, order.iter().copied())
}

/// `is_non_overlapping_and_dense`: some permutation of the dimensions is
/// contiguous.
pub(crate) fn is_non_overlapping_and_dense(shape: &[usize], strides: &[usize]) -> bool {
    match shape.len() {
        0 => return true,
        1 => return shape[0] < 2 || strides[0] == 1,
        _ => {}
    }
    let mut perm: Dims = (0..shape.len()).collect();
    // Sort by stride, size-0/1 dims last.
    perm.sort_by_key(|&d| (shape[d] < 2, strides[d]));
    let mut require = 1usize;
    for &d in &perm {
        if shape[d] < 2 {
            return true;
        }
        if strides[d] != require {
            return false;
        }
        // A tensor's sizes multiply within `int64` (`check_sizes_product`);
        // checked all the same, for sizes from elsewhere.
        let Some(next) = require.checked_mul(shape[d]) else {
            return false;
        };
        require = next;
    }
    true
}

fn is_channels_last_strides(shape: &[usize], strides: &[usize], order: &[usize]) -> bool {
    if strides[1] == 0 {
        return false;
    }
    let mut min = 0;
    for &d in order {
        if shape[d] == 0 || strides[d] < min {
            return false;
        }
        if d == 0 && min == strides[1] {
            return false;
        }
        min = strides[d];
        if shape[d] > 1 {
            min = min.saturating_mul(shape[d]);
        }
    }
    true
}

/// `suggest_memory_format()`: channels-last when the strides say so.
pub(crate) fn suggest_memory_format(t: &Tensor) -> MemoryFormat {
    let (shape, strides) = (t.shape(), t.strides());
    match shape.len() {
        4 if is_channels_last_strides(&shape, &strides, CHANNELS_LAST) => {
            MemoryFormat::ChannelsLast
        }
        5 if is_channels_last_strides(&shape, &strides, CHANNELS_LAST_3D) => {
            MemoryFormat::ChannelsLast3d
        }
        _ => MemoryFormat::Contiguous,
    }
}

/// `infer_dense_strides`: dense strides following the order of `strides`
/// (PyTorch's stable insertion sort; 0 strides keep their place).
pub(crate) fn infer_dense_strides(shape: &[usize], strides: &[usize]) -> Vec<usize> {
    dense_strides(shape, &iteration_order(shape, &[strides])).to_vec()
}

/// The order of the dimensions of `shape`, fastest first, that
/// `TensorIterator::reorder_dimensions` (and `infer_dense_strides`, for one
/// operand) chooses from the operands' strides (broadcast to `shape`): an
/// insertion sort from the row-major order in which the first operand with a
/// strict preference decides; a stride of 0 expresses none, and of two equal
/// strides the smaller dimension goes first.
pub(crate) fn iteration_order(shape: &[usize], operands: &[&[usize]]) -> Dims {
    let n = shape.len();
    let mut perm: Dims = (0..n).rev().collect();
    // > 0: swap (dim1 goes before dim0); < 0: keep; 0: no preference.
    let should_swap = |d0: usize, d1: usize| -> i32 {
        for s in operands {
            let (s0, s1) = (s[d0], s[d1]);
            if s0 == 0 || s1 == 0 {
                continue;
            }
            if s0 < s1 {
                return -1;
            }
            if s0 > s1 || shape[d0] > shape[d1] {
                return 1;
            }
        }
        0
    };
    for i in 1..n {
        let mut d1 = i;
        for d0 in (0..i).rev() {
            match should_swap(perm[d0], perm[d1]) {
                c if c > 0 => {
                    perm.swap(d0, d1);
                    d1 = d0;
                }
                c if c < 0 => break,
                _ => {}
            }
        }
    }
    perm
}

/// The sizes and strides `empty_like(t, memory_format)` gives a new tensor,
/// from one read of `t`'s geometry.
pub(crate) fn like_geometry(t: &Tensor, format: Option<MemoryFormat>) -> Result<(Dims, Dims)> {
    t.with_geometry(|g| {
        let strides = match format.unwrap_or(MemoryFormat::Preserve) {
            MemoryFormat::Preserve if is_non_overlapping_and_dense(&g.shape, &g.strides) => {
                g.strides.clone()
            }
            MemoryFormat::Preserve => infer_dense_strides(&g.shape, &g.strides).into(),
            f => strides_for(&g.shape, f)?.into(),
        };
        Ok((g.shape.clone(), strides))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn channels_last_strides() {
        assert_eq!(
            strides_for(&[2, 3, 1, 2], MemoryFormat::ChannelsLast).unwrap(),
            vec![6, 1, 6, 3]
        );
        assert_eq!(
            strides_for(&[1, 2, 2, 1, 2], MemoryFormat::ChannelsLast3d).unwrap(),
            vec![8, 1, 4, 4, 2]
        );
        assert!(strides_for(&[2, 3], MemoryFormat::ChannelsLast).is_err());
    }

    #[test]
    fn dense_layouts() {
        assert!(is_non_overlapping_and_dense(&[3, 2], &[1, 3]));
        assert!(!is_non_overlapping_and_dense(&[2, 3], &[0, 1]));
        assert!(!is_non_overlapping_and_dense(&[2, 2], &[3, 1]));
        assert_eq!(infer_dense_strides(&[3, 2], &[1, 6]), vec![1, 3]);
    }
}
