//! Writing into existing tensors: `copy_` (broadcasting, any dtype conversion)
//! and `fill_` (checked scalar conversion).

use super::iter::{map1, Loop, View};
use super::promote::{broadcast_shapes, check_output_shape};
use super::{fill_elements, overlap, scalar_to};
use crate::error::{Error, Result};
use crate::tensor::{Device, Scalar, Tensor};
use crate::with_dtype;

/// `self.copy_(src)`: `src` broadcasts to `self`'s shape and is converted to its
/// dtype with C++ cast rules. As `copy_impl`: nothing to do for the same tensor
/// or a view of the same elements; then `TensorIterator`'s overlap checks (no
/// expanded `self`, no partial overlap with `src`), then the shapes.
pub(crate) fn copy_(self_: &Tensor, src: &Tensor) -> Result<Tensor> {
    if self_.is_same(src) {
        return Ok(self_.clone());
    }
    // Into a meta tensor: the shapes are checked, nothing is written. Out of
    // one into a tensor with data: PyTorch's refusal.
    if self_.device() == Device::Meta {
        let shape = broadcast_shapes(&self_.shape(), &src.shape())?;
        check_output_shape(&self_.shape(), &shape)?;
        return Ok(self_.clone());
    }
    if src.device() == Device::Meta {
        return Err(Error::NotImplemented(
            "Cannot copy out of meta tensor; no data!".into(),
        ));
    }
    if same_data(self_, src) {
        return Ok(self_.clone());
    }
    overlap::check_writes(self_, [src])?;
    let shape = broadcast_shapes(&self_.shape(), &src.shape())?;
    check_output_shape(&self_.shape(), &shape)?;
    if self_.numel() == 0 {
        return Ok(self_.clone());
    }
    copy_values(self_, src)?;
    Ok(self_.clone())
}

/// Writes `src` (broadcasting to `dst`'s shape) into `dst`, converted to its
/// dtype: the iteration engine with the identity, `src` read as its own type
/// and cast per block. No checks: the caller has made them (shapes, overlap).
pub(crate) fn copy_values(dst: &Tensor, src: &Tensor) -> Result<()> {
    let (to, from) = (dst.geometry(), src.geometry());
    let lp = Loop::new(
        &to.shape,
        (&to, dst.dtype()),
        &[View::Tensor(&from, src.dtype())],
        true,
    );
    with_dtype!(src.dtype(), S => lp.run::<1, S, S>(|[a], o| map1(a, o, |x: S| x)))
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
