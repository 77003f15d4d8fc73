//! Writing into existing tensors: `copy_` (broadcasting, any dtype conversion)
//! and `fill_` (checked scalar conversion).

use super::promote::{broadcast_shapes, check_output_shape};
use super::{fill_elements, overlap, read_broadcastable, scalar_to};
use crate::error::{Error, Result};
use crate::tensor::{last_offset, Device, Geometry, IntoBuffer, Positions, Scalar, Tensor};
use crate::with_dtype;
use ndarray::{ArrayViewD, IxDyn};

/// `self.copy_(src)`: `src` broadcasts to `self`'s shape and is converted to its
/// dtype with C++ cast rules. As `copy_impl`: nothing to do for the same tensor
/// or a view of the same elements; then `TensorIterator`'s overlap checks (no
/// expanded `self`, no partial overlap with `src`), then the shapes.
pub(crate) fn copy_(self_: &Tensor, src: &Tensor) -> Result<Tensor> {
    if self_.is_same(src) || same_data(self_, src) {
        return Ok(self_.clone());
    }
    overlap::check_writes(self_, [src])?;
    let shape = broadcast_shapes(&self_.shape(), &src.shape())?;
    check_output_shape(&self_.shape(), &shape)?;
    if self_.device() == Device::Meta || src.device() == Device::Meta || self_.numel() == 0 {
        return Ok(self_.clone());
    }
    let (gd, gs) = (self_.geometry(), src.geometry());
    let same_dtype = self_.dtype() == src.dtype() && !gd.storage.ptr_eq(&gs.storage);
    if same_dtype && with_dtype!(src.dtype(), T => copy_same_dtype::<T>(&gd, &gs)?) {
        return Ok(self_.clone());
    }
    with_dtype!(src.dtype(), S => {
        let a = read_broadcastable::<S>(src)?;
        let b: ArrayViewD<S> = a
            .broadcast(IxDyn(&shape))
            .ok_or_else(|| Error::Runtime("copy_: cannot broadcast".into()))?;
        self_.assign(b)?;
    });
    Ok(self_.clone())
}

/// `copy_` between two storages of one dtype: element by element in logical
/// order (as `Tensor::assign` writes), `src` read in place through its strides
/// broadcast to `dst`'s shape (0 where it is expanded), a contiguous row at a
/// time where both rows are contiguous. Locks: `src`'s to read and `dst`'s to
/// write, taken in `Storage::lock_order`. `false`: not done (a storage without
/// data), for the general path to report.
fn copy_same_dtype<T: IntoBuffer>(dst: &Geometry, src: &Geometry) -> Result<bool> {
    let shape = &dst.shape;
    let nd = shape.len();
    let lead = nd - src.shape.len();
    let sstrides: Vec<usize> = (0..nd)
        .map(|i| match i.checked_sub(lead) {
            Some(j) if src.shape[j] != 1 => src.strides[j],
            _ => 0,
        })
        .collect();
    let (Some(dlast), Some(slast)) = (
        last_offset(shape, &dst.strides, dst.offset)?,
        last_offset(shape, &sstrides, src.offset)?,
    ) else {
        return Ok(true);
    };
    let (mut dbuf, sbuf) = if dst.storage.lock_order() < src.storage.lock_order() {
        let d = dst.storage.write();
        (d, src.storage.read())
    } else {
        let s = src.storage.read();
        (dst.storage.write(), s)
    };
    let (Some(d), Some(s)) = (T::slice_mut(&mut dbuf), T::slice(&sbuf)) else {
        return Ok(false); // a storage without data (a wrapper's): the general path
    };
    crate::ensure!(
        dlast < d.len() && slast < s.len(),
        "tensor view is out of bounds of its storage"
    );
    let Some((&inner, outer)) = shape.split_last() else {
        d[dst.offset] = s[src.offset];
        return Ok(true);
    };
    let (ds, ss) = (dst.strides[nd - 1], sstrides[nd - 1]);
    let rows = Positions::new(outer, &dst.strides[..nd - 1], dst.offset).zip(Positions::new(
        outer,
        &sstrides[..nd - 1],
        src.offset,
    ));
    for (pd, ps) in rows {
        if ds == 1 && ss == 1 {
            d[pd..pd + inner].copy_from_slice(&s[ps..ps + inner]);
        } else {
            for j in 0..inner {
                d[pd + j * ds] = s[ps + j * ss];
            }
        }
    }
    Ok(true)
}

/// `is_same_data` of `copy_impl`: views of one storage with the same offset,
/// sizes and strides (tensors sharing a storage share its dtype).
fn same_data(a: &Tensor, b: &Tensor) -> bool {
    let (ga, gb) = (a.geometry(), b.geometry());
    ga.storage.ptr_eq(&gb.storage)
        && ga.offset == gb.offset
        && ga.strides == gb.strides
        && ga.shape == gb.shape
}

/// `self.fill_(value)` (no overlap check: filling an expanded tensor is
/// well defined, as in PyTorch).
pub(crate) fn fill_(self_: &Tensor, value: Scalar) -> Result<Tensor> {
    with_dtype!(self_.dtype(), T => {
        let v: T = scalar_to(value)?;
        fill_elements(self_, v)?;
    });
    Ok(self_.clone())
}
