//! What a fake tensor is: a tensor with the `Fake` dispatch key, a dtype, a
//! geometry and the device it claims, over a storage without data (a meta
//! buffer), with its mode as its layer state. Here are the conversions the
//! layer needs between a fake and the meta tensor its kernels run on, built
//! on the tensor layer's primitives (`tensor/slots.rs`).
//!
//! Reading a fake's data fails as reading any meta buffer does: a fake never
//! reaches a kernel that reads data, and nothing here can make it.

use crate::dtype::Device;
use crate::keys::{DispatchKey, KeySet};
use crate::tensor::{LayerState, Tensor};

/// The key a fake tensor carries besides its claimed device's backend.
pub const FAKE_KEY: KeySet = KeySet::of(DispatchKey::Fake);

impl Tensor {
    /// A fake tensor with `meta`'s dtype and geometry, over `meta`'s storage
    /// (no data), claiming `device`, with the fake layer's `state` (its
    /// mode): what the fake layer makes of a result of a meta kernel. `meta`
    /// must be a meta tensor.
    pub(crate) fn fake_of_meta(meta: &Tensor, device: Device, state: LayerState) -> Tensor {
        debug_assert_eq!(meta.device(), Device::Meta);
        let keys = KeySet::for_device(device) | FAKE_KEY;
        meta.alias_with_keys(device, keys, meta.geometry())
            .with_layer_state(state)
    }

    /// [`Tensor::fake_of_meta`] of a meta tensor given by value: in place
    /// when this is its only handle (a kernel's fresh result, the common
    /// case), without a new allocation.
    pub(crate) fn into_fake(self, device: Device, state: LayerState) -> Tensor {
        let keys = KeySet::for_device(device) | FAKE_KEY;
        match self.retag_fresh(device, keys, state) {
            Ok(fake) => fake,
            Err((meta, state)) => Tensor::fake_of_meta(&meta, device, state),
        }
    }

    /// A fake tensor shaped as `self` (dtype, sizes, strides, offset, claimed
    /// device), over a new storage of as many elements without data: a real
    /// tensor's fake. Tensors that share a storage get fakes that do not.
    pub(crate) fn fake_like(&self, state: LayerState) -> Tensor {
        let keys = KeySet::for_device(self.device()) | FAKE_KEY;
        self.alias_with_keys(self.device(), keys, self.shadow_geometry())
            .with_layer_state(state)
    }

    /// The meta tensor a fake's kernels run on: the fake's dtype and
    /// geometry, over its storage, on the meta device. Made once and kept
    /// (the twin), so that a call on fakes allocates only its results. The
    /// twin stands for the fake while neither geometry was replaced since it
    /// was made (two counters read, no lock taken); otherwise the call gets
    /// a fresh one.
    pub(crate) fn meta_of_fake(&self) -> Tensor {
        debug_assert!(self.is_fake());
        let fresh = || {
            // Counted before the geometry is read: a change in between makes
            // the twin stale, never a stale twin current.
            let n = self.geometry_changes();
            let twin = self.alias_with_keys(
                Device::Meta,
                KeySet::for_device(Device::Meta),
                self.geometry(),
            );
            (twin, n)
        };
        // Two threads asking at once may both make one; the first kept is
        // every caller's (either would do: both are the fake's geometry).
        let (twin, made_at) = self.twin(fresh);
        if self.geometry_changes() == *made_at && twin.geometry_changes() == 0 {
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::DType;
    use std::sync::Arc;

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
