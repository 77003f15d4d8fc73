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

    /// Adds `inc` to every tensor it holds, in place (the seed's
    /// `for_each_add_`).
    pub fn for_each_add_(&self, inc: Tensor) -> opforge::Result<()> {
        for x in self.lock().iter_mut() {
            opforge::at::add__Tensor(x, &inc, opforge::Scalar::Int(1))?;
        }
        Ok(())
    }

    /// A new queue with the same tensors.
    pub fn clone_queue(&self) -> Queue {
        Queue {
            items: Mutex::new(self.lock().clone()),
        }
    }
}

impl Queue {
    /// The tensor at the front, if any.
    pub fn first(&self) -> Option<Tensor> {
        self.lock().first().cloned()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Tensor>> {
        self.items.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Default for Queue {
    fn default() -> Self {
        Queue::new()
    }
}
