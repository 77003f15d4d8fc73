//! Operators that assemble or pick whole slices: `cat` and `index_select`.
//! Each slice is copied straight into its place in the result (no joined
//! intermediate); an `out=` tensor is checked for overlap with the inputs as
//! PyTorch checks it (`cat` after resizing it, `index_select` before).

use super::copy::copy_values;
use super::layout::{strides_for, suggest_memory_format};
use super::promote::{can_cast, result_type_tensors};
use super::{
    alloc, check_alloc, common_device, empty_strided, index_error, overlap, resize_output, wrap_dim,
};
use crate::error::{Error, Result};
use crate::tensor::{Device, IntoBuffer, MemoryFormat, StorageLocks, Tensor};
use crate::with_dtype;

/// The view of `t` with dimension `d` restricted to `start .. start + len`.
fn narrow(t: &Tensor, d: usize, start: usize, len: usize) -> Result<Tensor> {
    let (mut shape, strides) = (t.shape(), t.strides());
    let offset = start
        .checked_mul(strides[d])
        .and_then(|o| o.checked_add(t.storage_offset()))
        .ok_or_else(|| Error::Runtime("narrow: the view's storage offset overflows".into()))?;
    shape[d] = len;
    t.strided_view(&shape, &strides, offset)
}

/// Legacy rule: 1-D empty tensors are skipped by `cat`.
fn skipped(t: &Tensor) -> bool {
    t.dim() == 1 && t.numel() == 0
}

/// A new contiguous CPU tensor of `shape` whose elements are runs of the
/// contiguous `sources` (all of dtype `T`, CPU), taken in the order `runs`
/// gives as (source, start, length) in elements of its storage: copied straight
/// into fresh capacity, with no zero-filling pass before (a new `cat` or
/// `index_select` result is written exactly once, as PyTorch's `empty` +
/// `memcpy` does). `None` when a source is not of that form.
fn from_runs<T: IntoBuffer>(
    shape: &[usize],
    sources: &[&Tensor],
    runs: impl Iterator<Item = (usize, usize, usize)>,
) -> Result<Option<Tensor>> {
    let plain =
        |t: &&Tensor| t.dtype() == T::DTYPE && t.device() == Device::Cpu && t.is_contiguous();
    if !sources.iter().all(plain) {
        return Ok(None);
    }
    let geoms: Vec<_> = sources.iter().map(|t| t.geometry()).collect();
    let storages: Vec<_> = geoms.iter().map(|g| &g.storage).collect();
    let guards = StorageLocks::new(&storages, None);
    let data: Option<Vec<&[T]>> = geoms
        .iter()
        .map(|g| T::slice(guards.read(&g.storage)?))
        .collect();
    let Some(data) = data else {
        return Ok(None);
    };
    let n: usize = shape.iter().product();
    if n == 0 {
        // No run to copy: an empty result may still have up to 2^63 (empty)
        // runs, which are not walked.
        return Tensor::from_vec(Vec::<T>::new(), shape).map(Some);
    }
    let mut v: Vec<T> = crate::tensor::alloc::try_with_capacity(n)?;
    for (src, start, len) in runs {
        let Some(run) = data[src].get(start..start + len) else {
            crate::bail!("tensor view is out of bounds of its storage");
        };
        crate::ensure!(
            v.len() + len <= n,
            "internal error: runs longer than the result"
        );
        v.extend_from_slice(run);
    }
    crate::ensure!(v.len() == n, "internal error: runs shorter than the result");
    drop(guards);
    Tensor::from_vec(v, shape).map(Some)
}

/// `cat(tensors, dim)`, into `out` if given.
pub(crate) fn cat(tensors: &[Tensor], dim: i64, out: Option<&Tensor>) -> Result<Tensor> {
    for (i, t) in tensors.iter().enumerate() {
        crate::ensure!(
            t.dim() > 0,
            "zero-dimensional tensor (at position {i}) cannot be concatenated"
        );
    }
    let wrapped = match tensors.iter().find(|t| !skipped(t)) {
        Some(t) => Some(wrap_dim(dim, t.dim())?),
        None => None,
    };
    if tensors.is_empty() {
        return Err(Error::Value(
            "torch.cat(): expected a non-empty list of Tensors".into(),
        ));
    }
    let mut dtype = result_type_tensors(tensors);
    if let Some(o) = out {
        crate::ensure!(
            can_cast(dtype, o.dtype()),
            "torch.cat(): input types can't be cast to the desired output type {}",
            o.dtype().c10_name()
        );
        dtype = o.dtype();
    }
    let format = {
        let mut f: Option<MemoryFormat> = None;
        let mut res = MemoryFormat::Contiguous;
        for t in tensors {
            let g = suggest_memory_format(t);
            if g == MemoryFormat::Contiguous || f.is_some_and(|x| x != g) {
                res = MemoryFormat::Contiguous;
                break;
            }
            f = Some(g);
            res = g;
        }
        res
    };
    let valid = tensors.iter().position(|t| !skipped(t));
    let sizes = match (valid, wrapped) {
        (Some(v), Some(d)) => {
            let first = &tensors[v];
            let mut at_dim = 0;
            for (i, t) in tensors.iter().enumerate() {
                if skipped(t) {
                    continue;
                }
                crate::ensure!(
                    first.dim() == t.dim(),
                    "Tensors must have same number of dimensions: got {} and {}",
                    first.dim(),
                    t.dim()
                );
                let (a, b) = (first.shape(), t.shape());
                for k in 0..a.len() {
                    crate::ensure!(
                        k == d || a[k] == b[k],
                        "Sizes of tensors must match except in dimension {d}. Expected size {} but got size {} for tensor number {i} in the list.",
                        a[k],
                        b[k]
                    );
                }
                // Saturating: a sum beyond int64 is refused with the sizes.
                at_dim = b[d].saturating_add(at_dim);
            }
            let mut s = first.shape();
            s[d] = at_dim;
            s
        }
        _ => vec![0],
    };
    let device = common_device(tensors.iter().chain(out));
    // The result's contiguous strides must fit int64 (PyTorch's "Stride
    // calculation overflowed"), also when it is empty.
    crate::tensor::check_sizes_product(&sizes)?;
    if let (None, Device::Cpu, Some(d)) = (out, device, wrapped) {
        let contiguous = strides_for(&sizes, format)
            .is_ok_and(|s| s == crate::tensor::contiguous_strides(&sizes));
        let parts: Vec<&Tensor> = tensors.iter().filter(|t| !skipped(t)).collect();
        if contiguous && !parts.is_empty() {
            // Per position before `d`, each part's block of dimensions `d..`.
            let outer: usize = sizes[..d].iter().product();
            let blocks: Vec<(usize, usize)> = parts
                .iter()
                .map(|t| (t.storage_offset(), t.shape()[d..].iter().product()))
                .collect();
            let runs = (0..outer).flat_map(|o| {
                blocks
                    .iter()
                    .enumerate()
                    .map(move |(k, &(off, len))| (k, off + o * len, len))
            });
            let made = with_dtype!(dtype, T => from_runs::<T>(&sizes, &parts, runs)?);
            if let Some(t) = made {
                return Ok(t);
            }
        }
    }
    let result = match out {
        Some(o) => {
            resize_output(o, &sizes)?;
            // The meta function's checks, on the resized output.
            if valid.is_some() {
                overlap::assert_no_internal_overlap(o)?;
                for t in tensors {
                    overlap::assert_no_overlap(o, t)?;
                }
            }
            o.clone()
        }
        None => {
            let strides = strides_for(&sizes, format)
                .unwrap_or_else(|_| crate::tensor::contiguous_strides(&sizes));
            empty_strided(&sizes, &strides, dtype, device)?
        }
    };
    if device == Device::Meta || result.numel() == 0 {
        return Ok(result);
    }
    let d = wrapped.unwrap_or(0);
    let mut at = 0;
    for t in tensors.iter().filter(|t| !skipped(t)) {
        let n = t.shape()[d];
        let dst = narrow(&result, d, at, n)?;
        if dst.numel() > 0 {
            copy_values(&dst, t)?;
        }
        at += n;
    }
    Ok(result)
}

/// `index_select(self, dim, index)`, into `out` if given.
pub(crate) fn index_select(
    self_: &Tensor,
    dim: i64,
    index: &Tensor,
    out: Option<&Tensor>,
) -> Result<Tensor> {
    let d = wrap_dim(dim, self_.dim())?;
    let numel = index.numel();
    if index.dim() > 1 {
        return Err(index_error(
            "index_select(): Index is supposed to be a vector",
        ));
    }
    crate::ensure!(
        !(self_.dim() == 0 && numel != 1),
        "index_select(): Index to scalar can have only 1 value, got {numel} value(s)"
    );
    crate::ensure!(
        index.dtype().is_integral(false),
        "index_select(): Expected dtype int32 or int64 for index"
    );
    if let Some(o) = out {
        crate::ensure!(
            o.dtype() == self_.dtype(),
            "index_select(): self and result must have the same scalar type"
        );
        overlap::assert_no_internal_overlap(o)?;
        overlap::assert_no_overlap(o, self_)?;
        overlap::assert_no_overlap(o, index)?;
    }
    let mut shape = self_.shape();
    if self_.dim() > 0 {
        shape[d] = numel;
    }
    let device = common_device([self_, index].into_iter().chain(out));
    // A new result from a contiguous `self` is built from its rows directly
    // (after the same checks, below); anything else is allocated here.
    let fresh = out.is_none() && device == Device::Cpu && self_.dim() > 0 && self_.is_contiguous();
    let result = match out {
        Some(o) => {
            resize_output(o, &shape)?;
            Some(o.clone())
        }
        None if fresh => {
            check_alloc(&shape, self_.dtype(), device)?;
            None
        }
        None => Some(alloc(&shape, self_.dtype(), device)?),
    };
    let new_result = || match &result {
        Some(r) => Ok(r.clone()),
        None => alloc(&shape, self_.dtype(), device),
    };
    if device == Device::Meta {
        return new_result();
    }
    let idx = index.to_vec::<i64>()?;
    let bound = if self_.dim() == 0 {
        1
    } else {
        self_.shape()[d]
    };
    if self_.dim() > 1 && numel == 0 {
        return new_result();
    }
    if self_.dim() > 1 && self_.numel() == 0 && bound == 0 {
        return Err(index_error(
            "index_select(): self indexing axis dim should be positive",
        ));
    }
    if idx.iter().any(|&i| i < 0 || i as usize >= bound) {
        return Err(index_error("index out of range in self"));
    }
    let Some(result) = result else {
        let (outer, n_src): (usize, usize) =
            (self_.shape()[..d].iter().product(), self_.shape()[d]);
        let row: usize = self_.shape()[d + 1..].iter().product();
        let base = self_.storage_offset();
        let runs = (0..outer).flat_map(|o| {
            idx.iter()
                .map(move |&i| (0, base + (o * n_src + i as usize) * row, row))
        });
        let made = with_dtype!(self_.dtype(), T => from_runs::<T>(&shape, &[self_], runs)?);
        return match made {
            Some(t) => Ok(t),
            None => crate::bail!("internal error: index_select of a contiguous tensor"),
        };
    };
    if result.numel() == 0 {
        return Ok(result);
    }
    if self_.dim() == 0 {
        copy_values(&result, self_)?;
    } else if !select_rows(self_, d, &idx, &result)? {
        for (k, &i) in idx.iter().enumerate() {
            copy_values(
                &narrow(&result, d, k, 1)?,
                &narrow(self_, d, i as usize, 1)?,
            )?;
        }
    }
    Ok(result)
}

/// `index_select` of contiguous tensors in different storages: for each
/// position of the dimensions before `d`, one copy of a run per index (the
/// elements after `d` are contiguous). `false` when the tensors are not of
/// that form (the caller copies view by view). Indices are checked.
fn select_rows(self_: &Tensor, d: usize, idx: &[i64], result: &Tensor) -> Result<bool> {
    let (src, dst) = (self_.geometry(), result.geometry());
    let contiguous =
        |g: &crate::tensor::Geometry| crate::tensor::is_contiguous_strides(&g.shape, &g.strides);
    if !contiguous(&src) || !contiguous(&dst) || src.storage.ptr_eq(&dst.storage) {
        return Ok(false);
    }
    let row: usize = src.shape[d + 1..].iter().product();
    let outer: usize = src.shape[..d].iter().product();
    let (n_src, n_dst) = (src.shape[d], idx.len());
    let mut locks = StorageLocks::new(&[&src.storage], Some(&dst.storage));
    let (to, reads) = locks.parts();
    let (Some(from), Some(to)) = (reads.get(&src.storage), to) else {
        return Ok(false);
    };
    with_dtype!(self_.dtype(), T => {
        let (Some(a), Some(b)) = (T::slice(from), T::slice_mut(to)) else {
            return Ok(false);
        };
        let a = &a[src.offset..src.offset + outer * n_src * row];
        let b = &mut b[dst.offset..dst.offset + outer * n_dst * row];
        for o in 0..outer {
            for (k, &i) in idx.iter().enumerate() {
                let at = (o * n_src + i as usize) * row;
                let to_at = (o * n_dst + k) * row;
                b[to_at..to_at + row].copy_from_slice(&a[at..at + row]);
            }
        }
    });
    Ok(true)
}

/// `flip(self, dims)`: a contiguous copy of `self` with the listed dimensions
/// reversed (PyTorch's `flip`, one pass over the elements); a dimension
/// named twice or out of range is PyTorch's error.
pub(crate) fn flip(self_: &Tensor, dims: &[i64]) -> Result<Tensor> {
    let n = self_.dim();
    let mask = crate::shape::dim_list_to_bitset(dims, n)?;
    let src = self_.geometry();
    let shape = src.shape.to_vec();
    let strides = crate::tensor::contiguous_strides(&shape);
    let result = empty_strided(&shape, &strides, self_.dtype(), self_.device())?;
    let count: usize = shape.iter().product();
    if self_.device() == crate::tensor::Device::Meta || count == 0 {
        return Ok(result);
    }
    // Where the first element comes from, and the step along each dimension
    // (negative along a flipped one).
    let mut first = src.offset;
    let step: Vec<isize> = (0..n)
        .map(|d| {
            let s = src.strides[d] as isize;
            if mask[d] {
                first += (shape[d] - 1) * src.strides[d];
                -s
            } else {
                s
            }
        })
        .collect();
    let dst = result.geometry();
    let mut locks = StorageLocks::new(&[&src.storage], Some(&dst.storage));
    let (to, reads) = locks.parts();
    let (Some(from), Some(to)) = (reads.get(&src.storage), to) else {
        crate::bail!("flip: the result's storage could not be written");
    };
    with_dtype!(self_.dtype(), T => {
        let (Some(a), Some(b)) = (T::slice(from), T::slice_mut(to)) else {
            crate::bail!("flip: a storage holds another dtype");
        };
        let mut index = vec![0usize; n];
        let mut at = first as isize;
        for slot in b[..count].iter_mut() {
            // In bounds: the geometry of `self` was validated, and `at` walks
            // its elements.
            *slot = a[at as usize];
            for d in (0..n).rev() {
                index[d] += 1;
                at += step[d];
                if index[d] < shape[d] {
                    break;
                }
                at -= step[d] * shape[d] as isize;
                index[d] = 0;
            }
        }
    });
    Ok(result)
}
