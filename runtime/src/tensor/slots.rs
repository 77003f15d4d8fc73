//! What the tensor layer keeps for the dispatch layers above it, and the
//! few primitives they build their tensors with. A layer that makes tensors
//! of its own (fake tensors, `crate::fake`; functional wrappers,
//! `crate::functionalize`) keeps its data behind them here, in a
//! [`LayerState`] set once at construction and recovered by type, and makes
//! them with `Tensor::alias_with_keys`: what such a tensor *is* is
//! that layer's business, written there.
//!
//! Besides the state: a tensor's *twin*, a tensor a layer derived from it
//! and keeps with it (a fake's meta tensor), and the count of in-place
//! geometry changes the layer checks a twin against.

use super::{Buffer, Geometry, Storage, Tensor};
use crate::dtype::Device;
use crate::keys::{DispatchKey, KeySet};
use std::any::Any;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// The data a dispatch layer keeps behind a tensor it made (a functional
/// tensor's value and views, a fake's mode), recovered by type
/// (`Tensor::wrapper_state`).
pub type LayerState = Arc<dyn Any + Send + Sync>;

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

    /// A fresh tensor of `self`'s dtype with these dispatch keys, claiming
    /// `device`, over `geometry` (whose storage the caller chose).
    pub(crate) fn alias_with_keys(
        &self,
        device: Device,
        keys: KeySet,
        geometry: Geometry,
    ) -> Tensor {
        Tensor::with_geometry_and_keys(self.0.dtype, device, keys, geometry)
    }

    /// A meta tensor shaped as `self` (dtype, sizes, strides, offset), over
    /// a new storage of as many elements without data: what a layer runs a
    /// Meta kernel on to learn a call's errors and shapes without computing.
    pub(crate) fn meta_like(&self) -> Tensor {
        let keys = KeySet::for_device(Device::Meta);
        self.alias_with_keys(Device::Meta, keys, self.shadow_geometry())
    }

    /// This tensor's sizes, strides and offset over a new storage of as
    /// many elements without data: what a meta tensor, a fake or a wrapper
    /// standing for it is laid out over.
    pub(crate) fn shadow_geometry(&self) -> Geometry {
        let g = self.geometry();
        let storage = Storage::new(Buffer::Meta(g.storage.len()));
        Geometry { storage, ..g }
    }

    /// A fresh tensor (this its only handle) given a layer's state.
    pub(crate) fn with_layer_state(mut self, state: LayerState) -> Tensor {
        match Arc::get_mut(&mut self.0) {
            Some(inner) => inner.wrapped = Some(state),
            None => debug_assert!(false, "with_layer_state: not a fresh tensor"),
        }
        self
    }

    /// This tensor, claiming `device`, with `keys` and a layer's `state`,
    /// changed in place if it is a fresh plain tensor (this its only handle;
    /// no class, view, layer state or autograd record); otherwise both
    /// back, unchanged.
    pub(crate) fn retag_fresh(
        mut self,
        device: Device,
        keys: KeySet,
        state: LayerState,
    ) -> std::result::Result<Tensor, (Tensor, LayerState)> {
        if let Some(inner) = Arc::get_mut(&mut self.0) {
            if inner.ext.is_none()
                && inner.view.is_none()
                && inner.wrapped.is_none()
                && inner.autograd.get().is_none()
            {
                inner.device = device;
                *inner.keys.get_mut() = keys.bits();
                inner.wrapped = Some(state);
                return Ok(self);
            }
        }
        Err((self, state))
    }

    /// The layer state of a wrapper, if this is one and its state is a `T`.
    #[inline]
    pub(crate) fn wrapper_state<T: Any>(&self) -> Option<&T> {
        self.0.wrapped.as_deref()?.downcast_ref()
    }

    /// The layer state itself (a handle to it), if the tensor has one.
    pub(crate) fn layer_state(&self) -> Option<&LayerState> {
        self.0.wrapped.as_ref()
    }

    /// How many times the geometry was replaced in place.
    #[inline]
    pub(crate) fn geometry_changes(&self) -> u32 {
        self.0.geometry_changes.load(Ordering::Acquire)
    }

    /// The tensor's twin, made by `make` on first use and kept (two threads
    /// asking at once may both make one; the first kept is every caller's),
    /// with the number `make` gave beside it.
    pub(crate) fn twin(&self, make: impl FnOnce() -> (Tensor, u32)) -> &(Tensor, u32) {
        self.0.twin.get_or_init(|| Box::new(make()))
    }
}
