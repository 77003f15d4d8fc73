//! The custom class the saved-graph seeds use as a constant (`fuzz::Stack`:
//! a stack of tensors, pickled as its tensors, `__setstate__` refusing more
//! than 16 of them), registered once.

use opforge::classes::Class;
use opforge::{Error, Tensor};
use std::sync::{Mutex, Once};

pub struct Stack(Mutex<Vec<Tensor>>);

impl Stack {
    fn items(&self) -> std::sync::MutexGuard<'_, Vec<Tensor>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

pub fn register() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        Class::<Stack>::new("fuzz", "Stack")
            .init(|| Stack(Mutex::new(Vec::new())))
            .def_pickle(
                |s: &Stack| s.items().clone(),
                |items: Vec<Tensor>| match items.len() {
                    0..=16 => Ok(Stack(Mutex::new(items))),
                    n => Err(Error::Value(format!("{n} tensors (at most 16)").into())),
                },
            )
            .def("push", |s: &Stack, t: Tensor| s.items().push(t))
            .def("pop", |s: &Stack| {
                s.items()
                    .pop()
                    .ok_or_else(|| Error::Index("pop from an empty stack".into()))
            })
            .def("size", |s: &Stack| s.items().len() as i64)
            .register()
            .expect("registered once");
    });
}
