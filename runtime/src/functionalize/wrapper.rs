//! Wrapper tensors: a tensor a dispatch layer made to stand for another
//! (functionalization's functional tensors, `tensor.rs`). It has the wrapped value's dtype, device and
//! geometry over a storage without data, carries the layer's dispatch key
//! beside its device's backend (so every call on it reaches the layer), and
//! keeps the layer's state behind it, recovered by type.
//!
//! Reading a wrapper's data fails as reading any meta buffer does: the layer
//! unwraps it before a kernel sees it.

use crate::keys::{DispatchKey, KeySet};
use crate::tensor::{Buffer, Geometry, LayerState, Storage, Tensor};

/// The key a functional tensor carries besides its device's backend.
pub const FUNCTIONALIZE_KEY: KeySet = KeySet::of(DispatchKey::Functionalize);

impl Tensor {
    /// A wrapper standing for `value`: its dtype, device and geometry (over
    /// a storage without data), the dispatch keys of its device plus `keys`,
    /// and `state`, the layer's data ([`Tensor::wrapper_state`]).
    pub(crate) fn layer_wrapper(value: &Tensor, keys: KeySet, state: LayerState) -> Tensor {
        Tensor::layer_wrapper_with(value, value.shadow_geometry(), keys, state)
    }

    /// A wrapper standing for `value` as [`Tensor::layer_wrapper`], with
    /// `geometry` (over a storage without data the caller chose: a view's
    /// wrapper shares its base's).
    pub(crate) fn layer_wrapper_with(
        value: &Tensor,
        geometry: Geometry,
        keys: KeySet,
        state: LayerState,
    ) -> Tensor {
        let device = value.device();
        value
            .alias_with_keys(device, KeySet::for_device(device) | keys, geometry)
            .with_layer_state(state)
    }

    /// Gives a wrapper the sizes, strides and offset of `like` (a meta
    /// tensor the layer ran a view on), over the wrapper's own storage when
    /// they fit in it (they do for a view of it), else over a new one.
    pub(crate) fn restride_wrapper(&self, like: &Tensor) {
        let (g, l) = (self.geometry(), like.geometry());
        if g.shape == l.shape && g.strides == l.strides && g.offset == l.offset {
            return;
        }
        let storage = if l.storage.len() <= g.storage.len() {
            g.storage
        } else {
            Storage::new(Buffer::Meta(l.storage.len()))
        };
        self.replace_geometry(Geometry { storage, ..l });
    }

    /// Gives a wrapper the geometry of the value it now stands for (after
    /// the layer replaced the value by one of another shape).
    pub(crate) fn mirror_geometry(&self, value: &Tensor) {
        let same = {
            let (g, v) = (self.geometry(), value.geometry());
            g.shape == v.shape
                && g.strides == v.strides
                && g.offset == v.offset
                && g.storage.len() >= v.storage.len()
        };
        if !same {
            self.replace_geometry(value.shadow_geometry());
        }
        debug_assert!(self.geometry_changes() < u32::MAX);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::Device;
    use std::sync::Arc;

    #[test]
    fn a_wrapper_mirrors_its_value_and_keeps_its_state() {
        let v = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]).unwrap();
        let w = Tensor::layer_wrapper(&v, FUNCTIONALIZE_KEY, Arc::new(7u8));
        assert_eq!((w.shape(), w.strides()), (vec![2, 3], vec![3, 1]));
        assert!(w.key_set().has(DispatchKey::Functionalize));
        assert_eq!(w.device(), Device::Cpu);
        assert_eq!(w.wrapper_state::<u8>(), Some(&7));
        assert_eq!(w.wrapper_state::<u16>(), None);
        assert_eq!(v.wrapper_state::<u8>(), None);
        // No data behind it.
        assert!(w.to_vec::<f32>().is_err());
        let t = v.strided_view(&[3, 2], &[1, 3], 0).unwrap();
        w.mirror_geometry(&t);
        assert_eq!((w.shape(), w.strides()), (vec![3, 2], vec![1, 3]));
    }
}
