//! Fake tensors as the tensor layer sees them: a tensor with the `Fake`
//! dispatch key, a dtype, a geometry and the device it claims, over a storage
//! without data (a meta buffer). What calls on them do is the fake layer's
//! business (`crate::fake`); here are only the conversions it needs between
//! a fake and the meta tensor its kernels run on, and the fake's `repr`.
//!
//! Reading a fake's data fails as reading any meta buffer does: a fake never
//! reaches a kernel that reads data, and nothing here can make it.

use super::{Buffer, Geometry, LayerState, Storage, Tensor};
use crate::dtype::Device;
use crate::keys::{DispatchKey, KeySet};
use std::fmt;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// The key a fake tensor carries besides its claimed device's backend.
pub const FAKE_KEY: KeySet = KeySet::of(DispatchKey::Fake);

impl Tensor {
    /// A number identifying the tensor (not its storage) while it lives: its
    /// address. Clones of a handle have the same.
    #[inline]
    pub fn identity(&self) -> usize {
        Arc::as_ptr(&self.0) as usize
    }

    /// A fake tensor (made by a fake tensor mode: `opforge::fake`)?
    #[inline]
    pub fn is_fake(&self) -> bool {
        self.key_set().has(DispatchKey::Fake)
    }

    fn with_keys(&self, device: Device, keys: KeySet, geometry: Geometry) -> Tensor {
        Tensor::with_geometry_and_keys(self.0.dtype, device, keys, geometry)
    }

    /// A fake tensor with `meta`'s dtype and geometry, over `meta`'s storage
    /// (no data), claiming `device`, with the fake layer's `state` (its
    /// mode): what the fake layer makes of a result of a meta kernel. `meta`
    /// must be a meta tensor.
    pub(crate) fn fake_of_meta(meta: &Tensor, device: Device, state: LayerState) -> Tensor {
        debug_assert_eq!(meta.device(), Device::Meta);
        let keys = KeySet::for_device(device) | FAKE_KEY;
        meta.with_keys(device, keys, meta.geometry())
            .with_layer_state(state)
    }

    /// [`Tensor::fake_of_meta`] of a meta tensor given by value: in place
    /// when this is its only handle (a kernel's fresh result, the common
    /// case), without a new allocation.
    pub(crate) fn into_fake(mut self, device: Device, state: LayerState) -> Tensor {
        let keys = KeySet::for_device(device) | FAKE_KEY;
        if let Some(inner) = Arc::get_mut(&mut self.0) {
            if inner.ext.is_none()
                && inner.view.is_none()
                && inner.wrapped.is_none()
                && inner.autograd.get().is_none()
            {
                inner.device = device;
                *inner.keys.get_mut() = keys.bits();
                inner.wrapped = Some(state);
                return self;
            }
        }
        Tensor::fake_of_meta(&self, device, state)
    }

    /// A fake tensor shaped as `self` (dtype, sizes, strides, offset, claimed
    /// device), over a new storage of as many elements without data: a real
    /// tensor's fake. Tensors that share a storage get fakes that do not.
    pub(crate) fn fake_like(&self, state: LayerState) -> Tensor {
        let g = self.geometry();
        let storage = Storage::new(Buffer::Meta(g.storage.len()));
        let keys = KeySet::for_device(self.0.device) | FAKE_KEY;
        self.with_keys(self.0.device, keys, Geometry { storage, ..g })
            .with_layer_state(state)
    }

    /// A meta tensor shaped as `self` (dtype, sizes, strides, offset), over
    /// a new storage of as many elements without data: what a layer runs a
    /// Meta kernel on to learn a call's errors and shapes without computing.
    pub(crate) fn meta_like(&self) -> Tensor {
        let g = self.geometry();
        let storage = Storage::new(Buffer::Meta(g.storage.len()));
        let keys = KeySet::for_device(Device::Meta);
        self.with_keys(Device::Meta, keys, Geometry { storage, ..g })
    }

    /// The meta tensor a fake's kernels run on: the fake's dtype and
    /// geometry, over its storage, on the meta device. Made once and kept
    /// (the twin), so that a call on fakes allocates only its results. The
    /// twin stands for the fake while neither geometry was replaced since it
    /// was made (two counters read, no lock taken); otherwise the call gets
    /// a fresh one.
    pub(crate) fn meta_of_fake(&self) -> Tensor {
        debug_assert!(self.is_fake());
        let changes = |t: &Tensor| t.0.geometry_changes.load(Ordering::Acquire);
        let fresh = || {
            // Counted before the geometry is read: a change in between makes
            // the twin stale, never a stale twin current.
            let n = changes(self);
            let twin = self.with_keys(
                Device::Meta,
                KeySet::for_device(Device::Meta),
                self.geometry(),
            );
            (twin, n)
        };
        // Two threads asking at once may both make one; the first kept is
        // every caller's (either would do: both are the fake's geometry).
        let (twin, made_at) = self.0.fake_twin.get_or_init(|| Box::new(fresh()));
        if changes(self) == *made_at && changes(twin) == 0 {
            twin.clone()
        } else {
            fresh().0
        }
    }

    /// Gives a fake the geometry its meta tensor has after an in-place
    /// kernel changed it (`resize_`, `t_`, `as_strided_`).
    pub(crate) fn take_geometry_of(&self, meta: &Tensor) {
        self.replace_geometry(meta.geometry());
    }

    /// A fake's `repr`, as PyTorch prints a `FakeTensor`:
    /// `FakeTensor(..., size=(2,))`, with the device unless it is the CPU, the
    /// dtype unless it is the default, and autograd's suffix.
    pub(crate) fn fmt_fake(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("FakeTensor(...")?;
        if self.device() != Device::Cpu {
            write!(f, ", device='{}'", self.device())?;
        }
        write!(f, ", size={}", python_tuple(&self.shape()))?;
        if self.dtype() != crate::dtype::DType::Float32 {
            write!(f, ", dtype={}", self.dtype())?;
        }
        write!(f, "{})", self.autograd_suffix())
    }
}

/// `(2,)`, `(2, 3)`, `()`: a shape as Python prints a tuple
/// (`torch.Size`'s repr without the name).
pub fn python_tuple(shape: &[usize]) -> String {
    match shape {
        [one] => format!("({one},)"),
        dims => format!(
            "({})",
            dims.iter()
                .map(usize::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::DType;

    #[test]
    fn a_fake_claims_its_device_and_has_no_data() {
        let real = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[2, 2]).unwrap();
        let col = real.strided_view(&[2], &[2], 0).unwrap(); // column 0
        let state: LayerState = Arc::new(());
        let fake = col.fake_like(state.clone());
        assert!(fake.is_fake() && !real.is_fake());
        assert_eq!(fake.device(), Device::Cpu);
        assert_eq!((fake.shape(), fake.strides()), (vec![2], vec![2]));
        assert_eq!(fake.storage_offset(), 0);
        assert!(fake.to_vec::<f32>().is_err());
        assert_eq!(fake.to_string(), "FakeTensor(..., size=(2,))");
        let meta = fake.meta_of_fake();
        assert_eq!(meta.device(), Device::Meta);
        assert!(!meta.is_fake() && meta.shares_storage(&fake));
        let back = Tensor::fake_of_meta(&meta, Device::Cpu, state.clone());
        assert!(back.is_fake() && back.shares_storage(&fake));
        let i = Tensor::zeros(&[], DType::Int64, Device::Cpu).fake_like(state.clone());
        assert_eq!(i.to_string(), "FakeTensor(..., size=(), dtype=torch.int64)");
        let m = Tensor::zeros(&[1, 3], DType::Float32, Device::Meta).fake_like(state);
        assert_eq!(m.to_string(), "FakeTensor(..., device='meta', size=(1, 3))");
    }
}
