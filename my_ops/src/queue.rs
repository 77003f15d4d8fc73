//! A custom class of this crate (`mylib::Queue`), declared with
//! `#[custom_class]` and registered with `#[methods]`: the `TensorQueue` of
//! PyTorch's TorchBind tutorial ("Supporting Custom C++ Classes in
//! torch.compile/torch.export"), reduced to what the tests use, made
//! traceable as the tutorial makes it: `__obj_flatten__`, a fake class
//! ([`FakeQueue`]) and a fake kernel for the operator taking it
//! (`mylib::for_each_add`), registered by [`register_fakes`].

use opforge::classes::{self, FakeClass, FakeMembers};
use opforge::{custom_class, methods, Tensor, Value};
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

    /// Adds `inc` to every tensor it holds, in place (the tutorial's
    /// `for_each_add_`).
    pub fn for_each_add_(&self, inc: Tensor) -> opforge::Result<()> {
        for x in self.lock().iter_mut() {
            opforge::at::add__Tensor(x, &inc, opforge::Scalar::Int(1))?;
        }
        Ok(())
    }

    /// The state as `(name, value)` pairs (the tutorial's `__obj_flatten__`).
    pub fn __obj_flatten__(&self) -> Vec<(String, Value)> {
        vec![("queue".to_string(), Value::TensorList(self.lock().clone()))]
    }

    /// A new queue with the same tensors.
    pub fn clone_queue(&self) -> Queue {
        Queue {
            items: Mutex::new(self.lock().clone()),
        }
    }

    /// Its state when saved or deep-copied (PyTorch's `def_pickle` getter):
    /// the tensors it holds (saved by value, so a loaded or deep-copied
    /// queue holds copies).
    pub fn __getstate__(&self) -> Vec<Tensor> {
        self.lock().clone()
    }

    /// A queue from a saved state (PyTorch's `def_pickle` setter).
    pub fn __setstate__(items: Vec<Tensor>) -> Self {
        Queue {
            items: Mutex::new(items),
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

/// The fake of a [`Queue`] (the tutorial's `FakeTensorQueue`): its tensors, fakes.
pub struct FakeQueue(Mutex<Vec<Tensor>>);

impl FakeQueue {
    /// The fake tensors it holds.
    pub fn items(&self) -> Vec<Tensor> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

impl FakeClass for FakeQueue {
    fn unflatten(flat: Vec<(String, Value)>) -> opforge::Result<Self> {
        let items = flat
            .into_iter()
            .find_map(|(k, v)| match (k.as_str(), v) {
                ("queue", Value::TensorList(ts)) => Some(ts),
                _ => None,
            })
            .unwrap_or_default();
        Ok(FakeQueue(Mutex::new(items)))
    }

    fn members() -> FakeMembers<Self> {
        FakeMembers::new()
            .def("push", |q: &FakeQueue, x: Tensor| {
                q.0.lock().unwrap_or_else(|e| e.into_inner()).push(x)
            })
            .def("size", |q: &FakeQueue| q.items().len() as i64)
            .def("for_each_add_", |q: &FakeQueue, inc: Tensor| {
                for x in q.0.lock().unwrap_or_else(|e| e.into_inner()).iter_mut() {
                    opforge::at::add__Tensor(x, &inc, opforge::Scalar::Int(1))?;
                }
                Ok::<(), opforge::Error>(())
            })
    }
}

/// Registers [`FakeQueue`] as `mylib::Queue`'s fake class and the fake
/// kernel of `mylib::for_each_add` (the tutorial's `fake_for_each_add_`: the
/// fake object's method), as the tutorial's Python does after loading the
/// library. Registering again replaces both.
pub fn register_fakes() -> opforge::Result<()> {
    classes::register_fake_class::<FakeQueue>("mylib::Queue")?;
    opforge::library::register_fake("mylib::for_each_add", |args: &[Value]| {
        if let [Value::Object(q), inc] = args {
            q.call_method("for_each_add_", std::slice::from_ref(inc))?;
        }
        Ok(vec![])
    })
}
