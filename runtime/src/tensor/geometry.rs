//! Where a tensor's elements are: [`Geometry`] (storage, sizes, strides,
//! offset), its int64 validation, contiguous strides and the positions of
//! a strided walk.

use super::Storage;
use crate::error::{Error, Result};

/// Sizes or strides: inline up to five dimensions, so the geometry of most
/// tensors allocates nothing.
pub type Dims = smallvec::SmallVec<[usize; DIMS_INLINE]>;

/// Dimensions [`Dims`] keeps inline.
pub(crate) const DIMS_INLINE: usize = 5;

/// Where a tensor's elements are in its storage.
#[derive(Debug)]
pub struct Geometry {
    /// The storage.
    pub storage: Storage,
    /// Sizes per dimension.
    pub shape: Dims,
    /// Strides per dimension, in elements.
    pub strides: Dims,
    /// Offset of element `[0, 0, …]`, in elements.
    pub offset: usize,
}

impl Clone for Geometry {
    /// Sizes and strides copied as slices ([`Dims::from_slice`]): `SmallVec`'s
    /// own `clone` collects them element by element, several times the cost.
    fn clone(&self) -> Geometry {
        Geometry {
            storage: self.storage.clone(),
            shape: Dims::from_slice(&self.shape),
            strides: Dims::from_slice(&self.strides),
            offset: self.offset,
        }
    }
}

impl Geometry {
    /// Checks that the geometry is well formed: as many strides as sizes, every
    /// size, stride and the offset an `int64` (PyTorch's geometry is `int64`:
    /// what it cannot express is refused, also on dimensions of size 1 and on
    /// empty tensors), an element count and extent that fit `int64`, every
    /// element inside the storage (`itemsize` is for the message), and sizes
    /// whose product with empty dimensions counted as 1 fits `int64` too
    /// ([`check_sizes_product`]).
    ///
    /// Every geometry a tensor holds passed this check, so the positions it
    /// reaches, its strides and its element count all fit `isize`.
    pub fn validate(&self, itemsize: usize) -> Result<()> {
        let (shape, strides, offset) = (&self.shape, &self.strides, self.offset);
        if shape.len() != strides.len() {
            return Err(Error::Runtime(
                format!(
                    "mismatch in length of strides and shape: {} vs {}",
                    strides.len(),
                    shape.len()
                )
                .into(),
            ));
        }
        check_int64_geometry(shape, strides, offset)?;
        let len = self.storage.len();
        if let Some(last) = last_offset(shape, strides, offset)? {
            if last
                .checked_add(1)
                .and_then(|n| n.checked_mul(itemsize))
                .is_none_or(|b| b > i64::MAX as usize)
            {
                return Err(extent_overflow(shape, strides));
            }
            if last >= len {
                let bytes = |n: usize| n.saturating_mul(itemsize);
                return Err(Error::Runtime(format!(
                    "setStorage: sizes {shape:?}, strides {strides:?}, storage offset {offset}, and itemsize {itemsize} requiring a storage size of {} are out of bounds for storage of size {}",
                    bytes(last.saturating_add(1)),
                    bytes(len)
                ).into()));
            }
        }
        // A tensor's element count is an `int64` in PyTorch (and ndarray views
        // need it to fit `isize`).
        if checked_numel(shape).is_none_or(|n| n > i64::MAX as usize) {
            return Err(Error::Runtime(
                "numel: integer multiplication overflow".into(),
            ));
        }
        check_sizes_product(shape)
    }
}

/// Refuses sizes whose product, empty dimensions counted as 1, is larger than
/// [`MAX_GEOMETRY`]: what PyTorch's contiguous strides of the sizes need
/// (`empty` refuses such sizes with "Stride calculation overflowed",
/// `c10/core/TensorImpl.cpp`), and what ndarray requires of a view's shape.
/// Every tensor's sizes pass it, so no product of some of its sizes
/// overflows, also on an empty tensor (`[0, 2^62, 2^62]` holds no element,
/// but its last two sizes multiply beyond `int64`).
pub fn check_sizes_product(shape: &[usize]) -> Result<()> {
    let product = shape
        .iter()
        .try_fold(1usize, |acc, &n| acc.checked_mul(n.max(1)));
    match product {
        Some(p) if p <= MAX_GEOMETRY => Ok(()),
        _ => Err(stride_overflow(shape)),
    }
}

/// PyTorch's error for sizes whose contiguous strides overflow `int64`,
/// naming the sizes and the limit.
#[cold]
fn stride_overflow(shape: &[usize]) -> Error {
    Error::Runtime(
        format!(
            "Stride calculation overflowed: the sizes {shape:?} multiply, empty dimensions counted as 1, beyond the largest int64 ({MAX_GEOMETRY}, opforge::tensor::MAX_GEOMETRY)"
        )
        .into(),
    )
}

/// The largest size, stride or offset a geometry may hold: PyTorch's are
/// `int64`.
pub const MAX_GEOMETRY: usize = i64::MAX as usize;

/// Refuses sizes, strides and an offset that PyTorch's `int64` geometry cannot
/// express (a stride above [`MAX_GEOMETRY`] would be negative there, and
/// ndarray and the kernels take strides as `isize`).
fn check_int64_geometry(shape: &[usize], strides: &[usize], offset: usize) -> Result<()> {
    let too_big = |what: &str, values: &[usize]| {
        let (d, &v) = values.iter().enumerate().find(|(_, &v)| v > MAX_GEOMETRY)?;
        Some(larger_than_int64(what, values, d, v))
    };
    if let Some(e) = too_big("sizes", shape).or_else(|| too_big("strides", strides)) {
        return Err(e);
    }
    if offset > MAX_GEOMETRY {
        return Err(Error::Runtime(
            format!(
                "storage offset {offset} is larger than the largest int64 ({MAX_GEOMETRY}); PyTorch's storage offsets are int64"
            )
            .into(),
        ));
    }
    Ok(())
}

/// The error for a size or stride (`what`) above [`MAX_GEOMETRY`]: `v`, at
/// dimension `d` of `values`.
#[cold]
fn larger_than_int64(what: &str, values: &[usize], d: usize, v: usize) -> Error {
    Error::Runtime(
        format!(
            "{what} {values:?}: {v} at dimension {d} is larger than the largest int64 ({MAX_GEOMETRY}); PyTorch's sizes and strides are int64"
        )
        .into(),
    )
}

/// Does a dimension of size > 1 have stride 0 (an expanded tensor, whose
/// elements share storage positions)? Never for an empty tensor: it has no
/// elements to share, and PyTorch's `has_internal_overlap`
/// (`aten/src/ATen/MemoryOverlap.cpp`) finds none, since a tensor of 0
/// elements is contiguous (`c10::TensorImpl::compute_contiguous`), hence
/// non-overlapping and dense.
pub fn is_expanded(shape: &[usize], strides: &[usize]) -> bool {
    shape.iter().zip(strides).any(|(&n, &s)| n > 1 && s == 0) && !shape.contains(&0)
}

/// PyTorch's error for a write into a tensor whose elements share memory.
#[cold]
pub fn internal_overlap_error() -> Error {
    Error::Runtime("unsupported operation: more than one element of the written-to tensor refers to a single memory location. Please clone() the tensor before performing the operation.".into())
}

/// Do the strides step through the dimensions densely in `order`, fastest
/// first (dimensions of size 1 may have any stride)? Row-major contiguity is
/// the order `ndim-1, …, 0`; channels-last is another order.
pub fn is_dense_in_order(
    shape: &[usize],
    strides: &[usize],
    order: impl IntoIterator<Item = usize>,
) -> bool {
    let mut expected = 1usize;
    for d in order {
        if shape[d] != 1 {
            if strides[d] != expected {
                return false;
            }
            expected = expected.saturating_mul(shape[d]);
        }
    }
    true
}

/// Row-major contiguous (dimensions of size 1 may have any stride)?
pub fn is_contiguous_strides(shape: &[usize], strides: &[usize]) -> bool {
    is_dense_in_order(shape, strides, (0..shape.len()).rev())
}

/// Contiguous (row-major) strides for `shape`, inline.
pub fn contiguous_dims(shape: &[usize]) -> Dims {
    let mut inline = [0usize; DIMS_INLINE];
    let mut strides = match inline.get_mut(..shape.len()) {
        // Filled on the stack and moved in (no element-by-element push).
        Some(s) => {
            fill_contiguous_strides(shape, s);
            return Dims::from_buf_and_len(inline, shape.len());
        }
        None => Dims::from_elem(0, shape.len()),
    };
    fill_contiguous_strides(shape, &mut strides);
    strides
}

/// Row-major strides of `shape` into `strides` (as long as `shape`).
fn fill_contiguous_strides(shape: &[usize], strides: &mut [usize]) {
    let mut acc = 1usize;
    for (s, &n) in strides.iter_mut().zip(shape).rev() {
        *s = acc;
        acc = acc.saturating_mul(n.max(1));
    }
}

/// Contiguous (row-major) strides for `shape`, inline, and its element
/// count, checked: every size at most [`MAX_GEOMETRY`], and their product
/// with empty dimensions counted as 1 too ([`check_sizes_product`]); in one
/// pass, as [`contiguous_dims`] makes them.
#[inline(always)]
pub fn checked_contiguous_dims(shape: &[usize]) -> Result<(Dims, usize)> {
    let mut inline = [0usize; DIMS_INLINE];
    if let Some(s) = inline.get_mut(..shape.len()) {
        // Filled on the stack and moved in (no element-by-element push).
        let numel = fill_checked_strides(shape, s)?;
        return Ok((Dims::from_buf_and_len(inline, shape.len()), numel));
    }
    let mut strides = Dims::from_elem(0, shape.len());
    let numel = fill_checked_strides(shape, &mut strides)?;
    Ok((strides, numel))
}

/// Row-major strides of `shape` into `strides` (as long as `shape`), and the
/// element count, each size and extent checked as
/// [`checked_contiguous_dims`] says.
#[inline(always)]
fn fill_checked_strides(shape: &[usize], strides: &mut [usize]) -> Result<usize> {
    let (mut acc, mut numel) = (1usize, 1usize);
    for (d, (s, &n)) in strides.iter_mut().zip(shape).enumerate().rev() {
        *s = acc;
        if n > MAX_GEOMETRY {
            return Err(larger_than_int64("sizes", shape, d, n));
        }
        acc = acc
            .checked_mul(n.max(1))
            .filter(|&a| a <= MAX_GEOMETRY)
            .ok_or_else(|| stride_overflow(shape))?;
        // `numel <= acc` before and after: no overflow.
        numel *= n;
    }
    Ok(numel)
}

/// Contiguous (row-major) strides for `shape`.
pub fn contiguous_strides(shape: &[usize]) -> Vec<usize> {
    let mut strides = vec![0; shape.len()];
    fill_contiguous_strides(shape, &mut strides);
    strides
}

/// Number of elements of `shape` (saturating at `usize::MAX`: a tensor's own
/// shape always has an exact count, see [`checked_numel`]).
pub fn numel(shape: &[usize]) -> usize {
    shape.iter().fold(1usize, |a, &d| a.saturating_mul(d))
}

/// Number of elements of `shape`, or `None` if it overflows `usize`.
pub fn checked_numel(shape: &[usize]) -> Option<usize> {
    shape.iter().try_fold(1usize, |a, &d| a.checked_mul(d))
}

/// PyTorch's error for a geometry whose extent overflows.
#[cold]
fn extent_overflow(shape: &[usize], strides: &[usize]) -> Error {
    Error::Runtime(
        format!("Storage size calculation overflowed with sizes={shape:?} and strides={strides:?}")
            .into(),
    )
}

/// The storage position of the last element a geometry reaches (`None` for an
/// empty shape), in checked arithmetic: PyTorch's error for a geometry whose
/// extent overflows. (The element count is checked by [`Geometry::validate`].)
pub fn last_offset(shape: &[usize], strides: &[usize], offset: usize) -> Result<Option<usize>> {
    if shape.contains(&0) {
        return Ok(None);
    }
    shape
        .iter()
        .zip(strides)
        .try_fold(offset, |acc, (&n, &s)| {
            (n - 1).checked_mul(s).and_then(|d| acc.checked_add(d))
        })
        .map(Some)
        .ok_or_else(|| extent_overflow(shape, strides))
}

/// The storage positions of a geometry's elements in logical (row-major) order,
/// computed one step at a time (no table of offsets). The geometry must be
/// valid ([`Geometry::validate`]): positions are not checked here.
#[derive(Clone, Debug)]
pub struct Positions<'a> {
    shape: &'a [usize],
    strides: &'a [usize],
    idx: Vec<usize>,
    pos: usize,
    left: usize,
}

impl<'a> Positions<'a> {
    /// The positions of `shape` / `strides` from `offset`.
    pub fn new(shape: &'a [usize], strides: &'a [usize], offset: usize) -> Positions<'a> {
        Positions {
            shape,
            strides,
            idx: vec![0; shape.len()],
            pos: offset,
            left: checked_numel(shape).unwrap_or(0),
        }
    }
}

impl Iterator for Positions<'_> {
    type Item = usize;

    #[inline]
    fn next(&mut self) -> Option<usize> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let here = self.pos;
        if self.left > 0 {
            for d in (0..self.idx.len()).rev() {
                if self.idx[d] + 1 < self.shape[d] {
                    self.idx[d] += 1;
                    self.pos = self.pos.wrapping_add(self.strides[d]);
                    break;
                }
                self.pos = self
                    .pos
                    .wrapping_sub(self.idx[d].wrapping_mul(self.strides[d]));
                self.idx[d] = 0;
            }
        }
        Some(here)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

impl ExactSizeIterator for Positions<'_> {}
