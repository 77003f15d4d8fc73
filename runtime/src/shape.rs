//! Shape arithmetic, each rule once: wrapping a dimension (ATen's
//! `maybe_wrap_dim`, with its `IndexError`), whether one shape expands to
//! another (`is_expandable_to`), the broadcast shape of two (`infer_size`),
//! and what `at::sum_to` reduces to take a gradient back to its input's shape.
//! Pure functions of sizes: the kernels, autograd's formulas and engine, and
//! functionalization's view inverses all call these.
//!
//! ```
//! use opforge::shape;
//! assert_eq!(shape::wrap_dim(-1, 3)?, 2);
//! assert!(shape::is_expandable_to(&[3, 1], &[2, 3, 4]));
//! assert_eq!(shape::broadcast_shapes(&[3, 1], &[2, 1, 4])?, vec![2, 3, 4]);
//! // [2, 3, 4] back to [3, 1]: sum dimension 0 (leading) and 2 (a 1 in the
//! // target), keeping them, then view as [3, 1].
//! let plan = shape::sum_to(&[2, 3, 4], &[3, 1]);
//! assert_eq!((plan.dims, plan.view), (vec![0, 2], true));
//! # Ok::<(), opforge::Error>(())
//! ```

use crate::error::{Error, Message, Result};

/// `dim` wrapped into `0..ndim` (ATen's `maybe_wrap_dim`; a 0-dimensional
/// tensor takes `-1` and `0`), or PyTorch's `IndexError`: `Dimension out of
/// range (expected to be in range of [-2, 1], but got 2)`.
pub fn wrap_dim(dim: i64, ndim: usize) -> Result<usize> {
    let n = ndim.max(1) as i64;
    if dim < -n || dim >= n {
        return Err(Error::Index(Message::from(format!(
            "Dimension out of range (expected to be in range of [{}, {}], but got {dim})",
            -n,
            n - 1
        ))));
    }
    Ok(if dim < 0 { dim + n } else { dim } as usize)
}

/// ATen's `dim_list_to_bitset`: which of `ndim` dimensions (one for a 0-dim
/// tensor) a list names, each wrapped as [`wrap_dim`] wraps it; a dimension
/// named twice is PyTorch's error.
pub fn dim_list_to_bitset(dims: &[i64], ndim: usize) -> Result<Vec<bool>> {
    let mut seen = vec![false; ndim.max(1)];
    for &d in dims {
        let w = wrap_dim(d, ndim)?;
        if seen[w] {
            return Err(Error::Runtime(Message::from(format!(
                "dim {w} appears multiple times in the list of dims"
            ))));
        }
        seen[w] = true;
    }
    Ok(seen)
}

/// ATen's `is_expandable_to(shape, desired)`: aligned at the right, each size
/// of `shape` equals the desired one or is 1, and `shape` has no more
/// dimensions.
pub fn is_expandable_to<T: Copy + PartialEq + From<u8>>(shape: &[T], desired: &[T]) -> bool {
    shape.len() <= desired.len()
        && shape
            .iter()
            .rev()
            .zip(desired.iter().rev())
            .all(|(&s, &d)| s == d || s == T::from(1))
}

/// ATen's `infer_size(a, b)`: the broadcast shape of two shapes, or PyTorch's
/// message naming the first dimension (from the right) where they differ.
pub fn broadcast_shapes(a: &[usize], b: &[usize]) -> Result<Vec<usize>> {
    let n = a.len().max(b.len());
    let mut out = vec![0; n];
    for i in (0..n).rev() {
        let off = n - 1 - i;
        let at = |s: &[usize]| {
            if off < s.len() {
                s[s.len() - 1 - off]
            } else {
                1
            }
        };
        let (sa, sb) = (at(a), at(b));
        crate::ensure!(
            sa == sb || sa == 1 || sb == 1,
            "The size of tensor a ({sa}) must match the size of tensor b ({sb}) at non-singleton dimension {i}"
        );
        out[i] = if sa == 1 { sb } else { sa };
    }
    Ok(out)
}

/// What ATen's `sum_to(tensor, shape)` does to take a tensor of sizes `have`
/// to `want` (`want` expandable to `have`): sum over [`dims`](Self::dims)
/// keeping them, then, if [`view`](Self::view), view the result as `want`
/// (the leading dimensions, now 1, dropped).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SumTo {
    /// The dimensions to sum: every leading one `want` lacks, and every one
    /// where `want` has 1 and `have` not.
    pub dims: Vec<i64>,
    /// Does the result need a view to `want` (were there leading
    /// dimensions)?
    pub view: bool,
}

/// The reduction taking sizes `have` to `want` (see [`SumTo`]); nothing to do
/// when `dims` is empty and `view` false.
pub fn sum_to<T: Copy + PartialEq + From<u8>>(have: &[T], want: &[T]) -> SumTo {
    let leading = have.len().saturating_sub(want.len());
    let one = T::from(1);
    let dims = (0..have.len())
        .filter(|&i| i < leading || (want[i - leading] == one && have[i] != one))
        .map(|i| i as i64)
        .collect();
    SumTo {
        dims,
        view: leading > 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dimensions_wrap_as_aten_wraps_them() {
        assert_eq!(wrap_dim(-1, 0).unwrap(), 0);
        assert_eq!(wrap_dim(0, 0).unwrap(), 0);
        assert_eq!(wrap_dim(-2, 2).unwrap(), 0);
        assert_eq!(
            wrap_dim(2, 2).unwrap_err().to_string(),
            "Dimension out of range (expected to be in range of [-2, 1], but got 2)"
        );
        assert!(matches!(wrap_dim(i64::MIN, 3), Err(Error::Index(_))));
    }

    #[test]
    fn broadcasting_names_the_first_mismatch_from_the_right() {
        assert_eq!(broadcast_shapes(&[], &[2, 3]).unwrap(), vec![2, 3]);
        assert_eq!(
            broadcast_shapes(&[3], &[4]).unwrap_err().to_string(),
            "The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 0"
        );
        assert_eq!(
            broadcast_shapes(&[2, 3], &[1, 4]).unwrap_err().to_string(),
            "The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 1"
        );
    }

    #[test]
    fn sum_to_reduces_leading_and_broadcast_dimensions() {
        assert!(is_expandable_to::<i64>(&[], &[2]));
        assert!(!is_expandable_to::<usize>(&[2, 3], &[3]));
        assert!(!is_expandable_to::<usize>(&[2], &[3]));
        let same = sum_to::<i64>(&[2, 3], &[2, 3]);
        assert_eq!((same.dims.len(), same.view), (0, false));
        let to_scalar = sum_to::<i64>(&[2, 3], &[]);
        assert_eq!((to_scalar.dims, to_scalar.view), (vec![0, 1], true));
        let keep = sum_to::<usize>(&[2, 1, 3], &[1, 1, 3]);
        assert_eq!((keep.dims, keep.view), (vec![0], false));
    }
}
