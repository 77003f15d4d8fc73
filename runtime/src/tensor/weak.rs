//! A weak tensor handle: what a graph node may hold of a tensor that holds
//! the node (a leaf for its accumulator, a retained gradient's tensor).

use super::{Tensor, TensorInner};
use std::sync::{Arc, Weak};

/// A tensor handle that does not keep the tensor alive (`Tensor::downgrade`):
/// what a graph node may hold of a tensor that holds the node.
#[derive(Clone)]
pub struct WeakTensor(Weak<TensorInner>);

impl WeakTensor {
    /// The tensor, if a handle to it still lives.
    pub fn upgrade(&self) -> Option<Tensor> {
        self.0.upgrade().map(Tensor)
    }

    /// Has every handle to the tensor been dropped?
    pub fn is_dropped(&self) -> bool {
        self.0.strong_count() == 0
    }

    /// The tensor's address, its identity while a handle to it (strong or
    /// weak) lives.
    pub fn addr(&self) -> usize {
        self.0.as_ptr() as *const () as usize
    }
}

impl std::fmt::Debug for WeakTensor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("(WeakTensor)")
    }
}

impl Tensor {
    /// A handle that does not keep this tensor alive.
    pub fn downgrade(&self) -> WeakTensor {
        WeakTensor(Arc::downgrade(&self.0))
    }
}
