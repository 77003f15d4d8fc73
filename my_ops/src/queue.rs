//! A custom class of this crate (`mylib::Queue`), declared with
//! `#[custom_class]` and registered with `#[methods]`: the seed's
//! `TensorQueue`, reduced to what the tests use.

use opforge::{custom_class, methods, Tensor};
use std::sync::Mutex;

/// A queue of tensors, shared between threads (its state is behind a lock).
#[custom_class("mylib::Queue")]
pub struct Queue {
    items: Mutex<Vec<Tensor>>,
}

#[methods]
impl Queue {
    /// An empty queue (`torch.classes.mylib.Queue()`).
    pub fn new() -> Self {
        Queue {
            items: Mutex::new(Vec::new()),
        }
    }

    /// Appends `x`.
    pub fn push(&self, x: Tensor) {
        self.lock().push(x);
    }

    /// How many tensors it holds.
    pub fn size(&self) -> i64 {
        self.lock().len() as i64
    }

    /// A new queue with the same tensors.
    pub fn clone_queue(&self) -> Queue {
        Queue {
            items: Mutex::new(self.lock().clone()),
        }
    }
}

impl Queue {
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Tensor>> {
        self.items.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Default for Queue {
    fn default() -> Self {
        Queue::new()
    }
}
