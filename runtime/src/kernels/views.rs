//! View operators: new geometry over the same storage, with the strides and
//! storage offsets PyTorch computes (`computeStride`, `inferExpandGeometry`, …).
//! They only touch metadata, so they work on every device.

use super::{fmt_ints, fmt_shape, index_error, wrap_dim};
use crate::error::{Error, Result};
use crate::tensor::{DType, Dims, Tensor, DIMS_INLINE, MAX_GEOMETRY};
use smallvec::SmallVec;

/// `a * b` for a view's geometry: an error naming the operator when the
/// product leaves PyTorch's `int64` geometry (which would wrap there).
fn mul(op: &str, a: usize, b: usize) -> Result<usize> {
    a.checked_mul(b)
        .filter(|&v| v <= MAX_GEOMETRY)
        .ok_or_else(|| overflow(op, format!("{a} * {b}")))
}

/// `a + b` for a view's geometry, as [`mul`].
fn add(op: &str, a: usize, b: usize) -> Result<usize> {
    a.checked_add(b)
        .filter(|&v| v <= MAX_GEOMETRY)
        .ok_or_else(|| overflow(op, format!("{a} + {b}")))
}

#[cold]
fn overflow(op: &str, what: String) -> Error {
    Error::Runtime(
        format!(
            "{op}: the view's geometry overflows: {what} is larger than the largest int64 ({MAX_GEOMETRY})"
        )
        .into(),
    )
}

/// `infer_size`: resolves one `-1` and checks the element count.
pub(crate) fn infer_size(shape: &[i64], numel: usize) -> Result<Vec<usize>> {
    let mut newsize: usize = 1;
    let mut infer: Option<usize> = None;
    for (i, &d) in shape.iter().enumerate() {
        if d == -1 {
            crate::ensure!(infer.is_none(), "only one dimension can be inferred");
            infer = Some(i);
        } else if d >= 0 {
            newsize = newsize.saturating_mul(d as usize);
        } else {
            crate::bail!(
                "invalid shape dimension {d} at index {i} of shape {}",
                fmt_ints(shape)
            );
        }
    }
    let mut out: Vec<usize> = shape.iter().map(|&d| d.max(0) as usize).collect();
    if numel == newsize || infer.is_some() && numel.checked_rem(newsize) == Some(0) {
        if let Some(i) = infer {
            crate::ensure!(
                newsize != 0,
                "cannot reshape tensor of {numel} elements into shape {} because the unspecified dimension size -1 can be any value and is ambiguous",
                fmt_ints(shape)
            );
            out[i] = numel / newsize;
        }
        return Ok(out);
    }
    crate::bail!(
        "shape '{}' is invalid for input of size {numel}",
        fmt_ints(shape)
    )
}

/// `computeStride`: strides that view `oldshape`/`oldstride` as `newshape`
/// (`Ok(None)` if that needs a copy). A stride that would leave `int64` is an
/// error naming `op`, where PyTorch's arithmetic would wrap.
pub(crate) fn compute_stride(
    op: &str,
    oldshape: &[usize],
    oldstride: &[usize],
    newshape: &[usize],
) -> Result<Option<Vec<usize>>> {
    if oldshape.is_empty() {
        return Ok(Some(vec![1; newshape.len()]));
    }
    let numel = oldshape.iter().try_fold(1usize, |a, &n| a.checked_mul(n));
    if numel == Some(0) && oldshape == newshape {
        return Ok(Some(oldstride.to_vec()));
    }
    let mut newstride = vec![0usize; newshape.len()];
    if numel == Some(0) {
        for d in (0..newshape.len()).rev() {
            newstride[d] = if d == newshape.len() - 1 {
                1
            } else {
                mul(op, newshape[d + 1].max(1), newstride[d + 1])?
            };
        }
        return Ok(Some(newstride));
    }
    let mut view_d = newshape.len() as isize - 1;
    let Some(&last) = oldstride.last() else {
        return Ok(None);
    };
    let mut chunk_base_stride = last;
    let (mut tensor_numel, mut view_numel) = (1usize, 1usize);
    for tensor_d in (0..oldshape.len()).rev() {
        tensor_numel = mul(op, tensor_numel, oldshape[tensor_d])?;
        // Computed only where PyTorch compares it (a dimension of size 1 may
        // have any stride, and the product need not fit then).
        if tensor_d == 0
            || (oldshape[tensor_d - 1] != 1
                && tensor_numel
                    .checked_mul(chunk_base_stride)
                    .is_none_or(|s| oldstride[tensor_d - 1] != s))
        {
            while view_d >= 0 && (view_numel < tensor_numel || newshape[view_d as usize] == 1) {
                newstride[view_d as usize] = mul(op, view_numel, chunk_base_stride)?;
                view_numel = view_numel.saturating_mul(newshape[view_d as usize]);
                view_d -= 1;
            }
            if view_numel != tensor_numel {
                return Ok(None);
            }
            if tensor_d > 0 {
                chunk_base_stride = oldstride[tensor_d - 1];
                tensor_numel = 1;
                view_numel = 1;
            }
        }
    }
    Ok((view_d == -1).then_some(newstride))
}

/// `view(self, size)`.
pub(crate) fn view(self_: &Tensor, size: &[i64]) -> Result<Tensor> {
    let shape = infer_size(size, self_.numel())?;
    match compute_stride("view", &self_.shape(), &self_.strides(), &shape)? {
        Some(strides) => self_.strided_view(&shape, &strides, self_.storage_offset()),
        None => crate::bail!(
            "view size is not compatible with input tensor's size and stride (at least one dimension spans across two contiguous subspaces). Use .reshape(...) instead."
        ),
    }
}

/// `alias()`: a new view with the same geometry.
pub(crate) fn alias(self_: &Tensor) -> Result<Tensor> {
    self_.strided_view(&self_.shape(), &self_.strides(), self_.storage_offset())
}

/// `permute(self, dims)`.
pub(crate) fn permute(self_: &Tensor, dims: &[i64]) -> Result<Tensor> {
    let n = self_.dim();
    crate::ensure!(
        dims.len() == n,
        "permute(sparse_coo): number of dimensions in the tensor input does not match the length of the desired ordering of dimensions i.e. input.dim() = {n} is not equal to len(dims) = {}",
        dims.len()
    );
    let (shape, strides) = (self_.shape(), self_.strides());
    let mut seen = vec![false; n];
    let (mut ns, mut nst) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for &d in dims {
        let w = wrap_dim(d, n)?;
        crate::ensure!(!seen[w], "permute(): duplicate dims are not allowed.");
        seen[w] = true;
        ns.push(shape[w]);
        nst.push(strides[w]);
    }
    self_.strided_view(&ns, &nst, self_.storage_offset())
}

/// `transpose(self, dim0, dim1)`.
pub(crate) fn transpose(self_: &Tensor, dim0: i64, dim1: i64) -> Result<Tensor> {
    let n = self_.dim();
    let (a, b) = (wrap_dim(dim0, n)?, wrap_dim(dim1, n)?);
    if a == b {
        return alias(self_);
    }
    let (mut shape, mut strides) = (self_.shape(), self_.strides());
    shape.swap(a, b);
    strides.swap(a, b);
    self_.strided_view(&shape, &strides, self_.storage_offset())
}

/// `t(self)`.
pub(crate) fn t(self_: &Tensor) -> Result<Tensor> {
    t_named(self_, "t")
}

/// `t(self)` for the operator `name` (`t`, `t_`), whose name PyTorch's
/// message prints.
pub(crate) fn t_named(self_: &Tensor, name: &str) -> Result<Tensor> {
    let n = self_.dim();
    crate::ensure!(
        n <= 2,
        "{name}() expects a tensor with <= 2 dimensions, but self is {n}D"
    );
    transpose(self_, 0, if n < 2 { 0 } else { 1 })
}

/// The legacy type name PyTorch prints in some messages (`torch.FloatTensor`).
fn legacy_type_name(d: DType) -> &'static str {
    match d {
        DType::Bool => "torch.BoolTensor",
        DType::Int32 => "torch.IntTensor",
        DType::Int64 => "torch.LongTensor",
        DType::Float32 => "torch.FloatTensor",
        DType::Float64 => "torch.DoubleTensor",
    }
}

/// `expand(self, size)`: size-1 dimensions (and new leading ones) get stride 0.
pub(crate) fn expand(self_: &Tensor, size: &[i64]) -> Result<Tensor> {
    // Sizes and strides inline up to five dimensions: an expand (what the
    // backward of every reduction and broadcast calls) allocates only its
    // result.
    let (shape, strides, offset) =
        self_.with_geometry(|g| (g.shape.clone(), g.strides.clone(), g.offset));
    let (ndim, tdim) = (size.len(), shape.len());
    crate::ensure!(
        ndim >= tdim,
        "expand({}{{{}}}, size={}): the number of sizes provided ({ndim}) must be greater or equal to the number of dimensions in the tensor ({tdim})",
        legacy_type_name(self_.dtype()),
        fmt_shape(&shape),
        fmt_ints(size)
    );
    let mut es: SmallVec<[i64; DIMS_INLINE]> = SmallVec::from_elem(0, ndim);
    let mut est: SmallVec<[i64; DIMS_INLINE]> = SmallVec::from_elem(0, ndim);
    if tdim == 0 {
        es.copy_from_slice(size);
    } else {
        for i in (0..ndim).rev() {
            let off = ndim - 1 - i;
            let d = tdim as isize - 1 - off as isize;
            let mut sz = if d >= 0 { shape[d as usize] as i64 } else { 1 };
            let mut st = if d >= 0 {
                strides[d as usize] as i64
            } else {
                // The stride a new leading dimension of size 1 gets; a larger
                // size sets it to 0 below, and PyTorch's product may wrap then.
                es[i + 1].checked_mul(est[i + 1]).unwrap_or(0)
            };
            let mut target = size[i];
            if target == -1 {
                crate::ensure!(
                    d >= 0,
                    "The expanded size of the tensor ({target}) isn't allowed in a leading, non-existing dimension {i}"
                );
                target = sz;
            }
            if sz != target {
                crate::ensure!(
                    sz == 1,
                    "The expanded size of the tensor ({target}) must match the existing size ({sz}) at non-singleton dimension {i}.  Target sizes: {}.  Tensor sizes: {}",
                    fmt_ints(size),
                    fmt_shape(&shape)
                );
                sz = target;
                st = 0;
            }
            es[i] = sz;
            est[i] = st;
        }
    }
    let new_shape = super::check_sizes(&es)?;
    let new_strides: Dims = est.iter().map(|&s| s.max(0) as usize).collect();
    self_.strided_view(&new_shape, &new_strides, offset)
}

/// `select(self, dim, index)`.
pub(crate) fn select(self_: &Tensor, dim: i64, index: i64) -> Result<Tensor> {
    let n = self_.dim();
    if n == 0 {
        return Err(index_error("select() cannot be applied to a 0-dim tensor."));
    }
    let d = wrap_dim(dim, n)?;
    let (mut shape, mut strides) = (self_.shape(), self_.strides());
    let size = shape[d] as i64;
    if index < -size || index >= size {
        return Err(index_error(format!(
            "select(): index {index} out of range for tensor of size {} at dimension {d}",
            fmt_shape(&shape)
        )));
    }
    let index = if index < 0 { index + size } else { index } as usize;
    let offset = add(
        "select",
        self_.storage_offset(),
        mul("select", index, strides[d])?,
    )?;
    shape.remove(d);
    strides.remove(d);
    self_.strided_view(&shape, &strides, offset)
}

/// `slice(self, dim, start, end, step)`: bounds are clamped, `step` must be
/// positive.
pub(crate) fn slice(
    self_: &Tensor,
    dim: i64,
    start: Option<i64>,
    end: Option<i64>,
    step: i64,
) -> Result<Tensor> {
    let n = self_.dim();
    if n == 0 {
        return Err(index_error("slice() cannot be applied to a 0-dim tensor."));
    }
    let d = wrap_dim(dim, n)?;
    crate::ensure!(step > 0, "slice step must be positive");
    let (mut shape, mut strides) = (self_.shape(), self_.strides());
    let size = shape[d] as i64;
    let mut s = start.unwrap_or(0);
    let mut e = end.unwrap_or(i64::MAX);
    if s == i64::MAX {
        s = 0;
    }
    if s < 0 {
        s += size;
    }
    if e < 0 {
        e += size;
    }
    s = s.clamp(0, size);
    e = if e < s { s } else { e.min(size) };
    let offset = add(
        "slice",
        self_.storage_offset(),
        mul("slice", s as usize, strides[d])?,
    )?;
    let len = e - s;
    shape[d] = if len == 0 {
        0
    } else {
        ((len - 1) / step + 1) as usize
    };
    strides[d] = mul("slice", strides[d], step as usize)?;
    self_.strided_view(&shape, &strides, offset)
}

/// `squeeze(self, dim)`: removes `dim` if its size is 1.
pub(crate) fn squeeze_dim(self_: &Tensor, dim: i64) -> Result<Tensor> {
    let n = self_.dim();
    let d = wrap_dim(dim, n)?;
    let (mut shape, mut strides) = (self_.shape(), self_.strides());
    if n == 0 || shape[d] != 1 {
        return alias(self_);
    }
    shape.remove(d);
    strides.remove(d);
    self_.strided_view(&shape, &strides, self_.storage_offset())
}

/// `squeeze.dims(self, dim)`: the listed dimensions of size 1 removed, the
/// others kept (PyTorch's `inferSqueezeGeometry` with a dimension mask).
pub(crate) fn squeeze_dims(self_: &Tensor, dims: &[i64]) -> Result<Tensor> {
    let n = self_.dim();
    let mask = crate::shape::dim_list_to_bitset(dims, n)?;
    if n == 0 {
        return alias(self_);
    }
    let (shape, strides) = (self_.shape(), self_.strides());
    let (ns, nst): (Vec<usize>, Vec<usize>) = shape
        .iter()
        .zip(&strides)
        .zip(&mask)
        .filter(|((&size, _), &named)| !(named && size == 1))
        .map(|((&size, &stride), _)| (size, stride))
        .unzip();
    self_.strided_view(&ns, &nst, self_.storage_offset())
}

/// `squeeze(self)`: every dimension of size 1 removed (PyTorch's
/// `inferSqueezeGeometry`).
pub(crate) fn squeeze(self_: &Tensor) -> Result<Tensor> {
    let (shape, strides) = (self_.shape(), self_.strides());
    let (ns, nst): (Vec<usize>, Vec<usize>) = shape
        .iter()
        .zip(&strides)
        .filter(|(&n, _)| n != 1)
        .map(|(&n, &s)| (n, s))
        .unzip();
    self_.strided_view(&ns, &nst, self_.storage_offset())
}

/// `as_strided(self, size, stride, storage_offset)`: `size` and `stride`
/// over `self`'s storage from `storage_offset` (`self`'s own when `None`),
/// with PyTorch's checks (`setStrided`, `checkInBoundsForStorage`).
pub(crate) fn as_strided(
    self_: &Tensor,
    size: &[i64],
    stride: &[i64],
    storage_offset: Option<i64>,
) -> Result<Tensor> {
    let (shape, strides, offset) = as_strided_geometry(self_, size, stride, storage_offset)?;
    self_.strided_view(&shape, &strides, offset)
}

/// The geometry `as_strided` gives, checked as PyTorch's `setStrided`
/// checks it (the bounds are checked by the caller's `as_strided`).
pub(crate) fn as_strided_geometry(
    self_: &Tensor,
    size: &[i64],
    stride: &[i64],
    storage_offset: Option<i64>,
) -> Result<(Vec<usize>, Vec<usize>, usize)> {
    crate::ensure!(
        size.len() == stride.len(),
        "mismatch in length of strides and shape"
    );
    crate::ensure!(
        stride.iter().all(|&s| s >= 0),
        "as_strided: Negative strides are not supported at the moment, got strides: {}",
        fmt_ints(stride)
    );
    crate::ensure!(
        size.iter().all(|&n| n >= 0),
        "Storage size calculation overflowed with sizes={} and strides={}",
        fmt_ints(size),
        fmt_ints(stride)
    );
    let offset = storage_offset.unwrap_or(self_.storage_offset() as i64);
    crate::ensure!(offset >= 0, "Tensor: invalid storage offset {offset}");
    Ok((
        size.iter().map(|&n| n as usize).collect(),
        stride.iter().map(|&s| s as usize).collect(),
        offset as usize,
    ))
}

/// `diagonal(self, offset, dim1, dim2)`: the diagonal as a last dimension
/// (PyTorch's `diagonal`: an offset past the end gives an empty one).
pub(crate) fn diagonal(self_: &Tensor, offset: i64, dim1: i64, dim2: i64) -> Result<Tensor> {
    let n = self_.dim();
    let (d1, d2) = (wrap_dim(dim1, n)?, wrap_dim(dim2, n)?);
    crate::ensure!(
        d1 != d2,
        "diagonal dimensions cannot be identical {dim1}, {dim2}"
    );
    let (mut shape, mut strides) = (self_.shape(), self_.strides());
    let (n1, n2) = (shape[d1] as i64, shape[d2] as i64);
    let size = if offset >= 0 {
        n1.min(n2.saturating_sub(offset))
    } else {
        n1.saturating_add(offset).min(n2)
    }
    .max(0) as usize;
    let mut storage_offset = self_.storage_offset();
    if size > 0 {
        let step = if offset >= 0 {
            mul("diagonal", offset as usize, strides[d2])?
        } else {
            mul("diagonal", offset.unsigned_abs() as usize, strides[d1])?
        };
        storage_offset = add("diagonal", storage_offset, step)?;
    }
    let stride = add("diagonal", strides[d1], strides[d2])?;
    for d in [d1.max(d2), d1.min(d2)] {
        shape.remove(d);
        strides.remove(d);
    }
    shape.push(size);
    strides.push(stride);
    self_.strided_view(&shape, &strides, storage_offset)
}

/// `unbind(self, dim)`: `select(dim, i)` for every `i` (`dim` wrapped
/// first, as for a 1-dimensional tensor when `self` has none).
pub(crate) fn unbind(self_: &Tensor, dim: i64) -> Result<Vec<Tensor>> {
    let d = wrap_dim(dim, self_.dim())?;
    if self_.dim() == 0 {
        return Err(index_error(format!(
            "Dimension specified as {d} but tensor has no dimensions"
        )));
    }
    (0..self_.shape()[d] as i64)
        .map(|i| select(self_, d as i64, i))
        .collect()
}

/// `unsqueeze(self, dim)`.
pub(crate) fn unsqueeze(self_: &Tensor, dim: i64) -> Result<Tensor> {
    let n = self_.dim();
    let d = wrap_dim(dim, n + 1)?;
    let (mut shape, mut strides) = (self_.shape(), self_.strides());
    let st = if d >= n {
        1
    } else {
        mul("unsqueeze", shape[d], strides[d])?
    };
    shape.insert(d, 1);
    strides.insert(d, st);
    self_.strided_view(&shape, &strides, self_.storage_offset())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn view_strides() {
        let cs = |a: &[usize], b: &[usize], c: &[usize]| compute_stride("view", a, b, c).unwrap();
        assert_eq!(cs(&[2, 3], &[3, 1], &[3, 2]), Some(vec![2, 1]));
        assert_eq!(cs(&[3, 2], &[1, 3], &[6]), None);
        assert_eq!(cs(&[0, 3], &[3, 1], &[3, 0]), Some(vec![1, 1]));
        assert_eq!(cs(&[], &[], &[1, 1]), Some(vec![1, 1]));
        assert_eq!(cs(&[1], &[1], &[]), Some(vec![]));
        assert_eq!(infer_size(&[3, -1], 6).unwrap(), vec![3, 2]);
        assert!(infer_size(&[-1, 0], 0).is_err());
        assert!(infer_size(&[4], 6).is_err());
    }

    /// Geometries and messages as PyTorch 2.15 gives them.
    #[test]
    fn diagonal_as_strided_squeeze_unbind() {
        let x = Tensor::from_vec((0..6).map(|i| i as f32).collect(), &[2, 3]).unwrap();
        let geo = |t: Tensor| (t.shape(), t.strides(), t.storage_offset());
        assert_eq!(geo(diagonal(&x, 0, 0, 1).unwrap()), (vec![2], vec![4], 0));
        assert_eq!(geo(diagonal(&x, 5, 0, 1).unwrap()), (vec![0], vec![4], 0));
        assert_eq!(geo(diagonal(&x, -5, 0, 1).unwrap()), (vec![0], vec![4], 0));
        assert_eq!(geo(diagonal(&x, 1, -1, 0).unwrap()), (vec![1], vec![4], 3));
        assert_eq!(
            diagonal(&x, 0, 0, 0).unwrap_err().to_string(),
            "diagonal dimensions cannot be identical 0, 0"
        );
        let a = |size: &[i64], stride: &[i64], off: Option<i64>| {
            as_strided(&x, size, stride, off).map_err(|e| e.to_string())
        };
        assert_eq!(
            a(&[-1], &[1], None).unwrap_err(),
            "Storage size calculation overflowed with sizes=[-1] and strides=[1]"
        );
        assert_eq!(
            a(&[2], &[-1], None).unwrap_err(),
            "as_strided: Negative strides are not supported at the moment, got strides: [-1]"
        );
        assert_eq!(
            a(&[2], &[1, 1], None).unwrap_err(),
            "mismatch in length of strides and shape"
        );
        assert_eq!(
            a(&[2], &[1], Some(-1)).unwrap_err(),
            "Tensor: invalid storage offset -1"
        );
        assert_eq!(
            a(&[7], &[1], None).unwrap_err(),
            "setStorage: sizes [7], strides [1], storage offset 0, and itemsize 4 requiring a storage size of 28 are out of bounds for storage of size 24"
        );
        assert!(a(&[0], &[1], Some(100)).is_ok());
        let y = Tensor::zeros(&[2, 1, 4], DType::Float32, crate::tensor::Device::Cpu);
        assert_eq!(geo(squeeze(&y).unwrap()), (vec![2, 4], vec![4, 1], 0));
        let parts = unbind(&y, 1).unwrap();
        assert_eq!(parts.len(), 1);
        assert_eq!(geo(parts[0].clone()), (vec![2, 4], vec![4, 1], 0));
        let scalar = Tensor::zeros(&[], DType::Float32, crate::tensor::Device::Cpu);
        assert_eq!(
            unbind(&scalar, -1).unwrap_err().to_string(),
            "Dimension specified as 0 but tensor has no dimensions"
        );
        assert_eq!(
            unbind(&scalar, 1).unwrap_err().to_string(),
            "Dimension out of range (expected to be in range of [-1, 0], but got 1)"
        );
    }
}
