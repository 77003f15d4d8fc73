//! The `TensorQueue` of PyTorch's TorchBind tutorial ("Supporting Custom
//! C++ Classes in torch.compile/torch.export"), registered
//! as a custom class, shared between threads, and taken by a custom operator
//! (`for_each_add_`), as the tutorial's C++ does.

use opforge::classes::{self, Class, ClassDef};
use opforge::dispatch::DispatchKey;
use opforge::library::{self, Library, LibraryKind};
use opforge::{Result, ScriptObject, Tensor, Value};
use std::collections::VecDeque;
use std::sync::{Mutex, OnceLock};

/// The tutorial's queue: a deque of tensors behind a lock, and an init tensor.
struct TensorQueue {
    init: Tensor,
    queue: Mutex<VecDeque<Tensor>>,
}

impl TensorQueue {
    fn new(init: Tensor) -> TensorQueue {
        TensorQueue {
            init,
            queue: Mutex::new(VecDeque::new()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, VecDeque<Tensor>> {
        self.queue.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn push(&self, x: Tensor) {
        self.lock().push_back(x);
    }

    /// Pops the front, or returns the init tensor when empty (the tutorial's).
    fn pop(&self) -> Tensor {
        self.lock().pop_front().unwrap_or_else(|| self.init.clone())
    }

    fn top(&self) -> Tensor {
        self.lock()
            .front()
            .cloned()
            .unwrap_or_else(|| self.init.clone())
    }

    fn size(&self) -> i64 {
        self.lock().len() as i64
    }

    fn get_raw_queue(&self) -> Vec<Tensor> {
        self.lock().iter().cloned().collect()
    }

    fn clone_queue(&self) -> TensorQueue {
        TensorQueue {
            init: self.init.clone(),
            queue: Mutex::new(self.lock().clone()),
        }
    }
}

fn queue_class() -> &'static ClassDef {
    static CLASS: OnceLock<&'static ClassDef> = OnceLock::new();
    CLASS.get_or_init(|| {
        Class::<TensorQueue>::new("MyCustomClass", "TensorQueue")
            .init(TensorQueue::new)
            .def_pickle(
                |q: &TensorQueue| (q.init.clone(), q.get_raw_queue()),
                |(init, items): (Tensor, Vec<Tensor>)| {
                    Ok(TensorQueue {
                        init,
                        queue: Mutex::new(items.into()),
                    })
                },
            )
            .def("push", TensorQueue::push)
            .def("pop", TensorQueue::pop)
            .def("top", TensorQueue::top)
            .def("size", TensorQueue::size)
            .def("get_raw_queue", TensorQueue::get_raw_queue)
            // The tutorial's `__obj_flatten__`: the state as (name, value) pairs.
            .def("__obj_flatten__", |q: &TensorQueue| {
                vec![
                    ("init_tensor_".to_string(), Value::Tensor(q.init.clone())),
                    ("queue_".to_string(), Value::TensorList(q.get_raw_queue())),
                ]
            })
            .def("clone_queue", |q: &TensorQueue| -> Result<ScriptObject> {
                queue_class().wrap(q.clone_queue())
            })
            .register()
            .expect("registered once")
    })
}

fn t(x: f32) -> Tensor {
    Tensor::from_vec(vec![x, x], &[2]).unwrap()
}

fn new_queue() -> ScriptObject {
    queue_class();
    classes::instantiate("MyCustomClass::TensorQueue", &[Value::Tensor(t(0.0))]).unwrap()
}

fn size(q: &ScriptObject) -> i64 {
    match q.call_method("size", &[]).unwrap() {
        Value::Int(n) => n,
        v => panic!("{v:?}"),
    }
}

#[test]
fn the_seeds_queue_methods_work_boxed() {
    let q = new_queue();
    for i in 0..3 {
        q.call_method("push", &[Value::Tensor(t(i as f32))])
            .unwrap();
    }
    assert_eq!(size(&q), 3);
    let Value::Tensor(top) = q.call_method("top", &[]).unwrap() else {
        panic!()
    };
    assert_eq!(top.to_vec::<f32>().unwrap(), [0.0, 0.0]);
    let copy = match q.call_method("clone_queue", &[]).unwrap() {
        Value::Object(o) => o,
        v => panic!("{v:?}"),
    };
    assert!(!copy.is_same(&q));
    q.call_method("pop", &[]).unwrap();
    assert_eq!((size(&q), size(&copy)), (2, 3));
    let Value::TensorList(raw) = copy.call_method("get_raw_queue", &[]).unwrap() else {
        panic!()
    };
    assert_eq!(raw.len(), 3);
    assert_eq!(
        queue_class().method("get_raw_queue").unwrap().schema(),
        "get_raw_queue(__torch__.torch.classes.MyCustomClass.TensorQueue _0) -> Tensor[] _0"
    );
}

#[test]
fn threads_share_one_queue() {
    let q = new_queue();
    std::thread::scope(|s| {
        for _ in 0..4 {
            let q = q.clone();
            s.spawn(move || {
                for i in 0..100 {
                    q.call_method("push", &[Value::Tensor(t(i as f32))])
                        .unwrap();
                    if i % 2 == 0 {
                        q.call_method("pop", &[]).unwrap();
                    }
                }
            });
        }
    });
    assert_eq!(size(&q), 4 * 50);
}

/// The tutorial's `for_each_add_`: adds `inc` to every tensor of the queue.
fn for_each_add(args: &[Value]) -> Result<Vec<Value>> {
    let [Value::Object(q), Value::Tensor(inc)] = args else {
        return Err(opforge::Error::Type(format!("{args:?}").into()));
    };
    let q = q.downcast_ref::<TensorQueue>().expect("a TensorQueue");
    for x in q.lock().iter_mut() {
        opforge::at::add__Tensor(x, inc, opforge::Scalar::Int(1))?;
    }
    Ok(vec![])
}

#[test]
fn a_custom_operator_takes_the_queue() {
    queue_class();
    let lib = Library::new("cc_seed", LibraryKind::Def).unwrap();
    let e = lib
        .define("bad(__torch__.torch.classes.cc_seed.Nope q) -> ()")
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "Unknown custom class type cc_seed.Nope. Please ensure it is registered."
    );
    lib.define(
        "for_each_add_(__torch__.torch.classes.MyCustomClass.TensorQueue tq, Tensor inc) -> ()",
    )
    .unwrap();
    lib.impl_("for_each_add_", DispatchKey::CPU, for_each_add)
        .unwrap();
    let q = new_queue();
    q.call_method("push", &[Value::Tensor(t(1.0))]).unwrap();
    let out = library::call(
        "cc_seed::for_each_add_",
        &[Value::Object(q.clone()), Value::Tensor(t(10.0))],
        &[],
    )
    .unwrap();
    assert!(out.is_empty());
    let Value::Tensor(top) = q.call_method("top", &[]).unwrap() else {
        panic!()
    };
    assert_eq!(top.to_vec::<f32>().unwrap(), [11.0, 11.0]);
    // Not a queue: PyTorch's message shape, naming the class.
    let e = library::call(
        "cc_seed::for_each_add_",
        &[Value::Tensor(t(1.0)), Value::Tensor(t(1.0))],
        &[],
    )
    .unwrap_err();
    assert!(
        e.to_string().starts_with(
            "cc_seed::for_each_add_() Expected a value of type \
             '__torch__.torch.classes.MyCustomClass.TensorQueue' for argument 'tq' but instead \
             found type 'Tensor'."
        ),
        "{e}"
    );
}

#[test]
fn queues_save_load_and_deep_copy_through_their_pickler() {
    let q = new_queue();
    q.call_method("push", &[Value::Tensor(t(1.5))]).unwrap();
    q.call_method("push", &[Value::Tensor(t(-0.0))]).unwrap();
    let names = q.method_names();
    assert_eq!(&names[..3], ["__init__", "__getstate__", "__setstate__"]);
    let bytes = classes::save(&q).unwrap();
    let back = classes::load(&bytes).unwrap();
    assert!(!back.is_same(&q));
    assert_eq!(size(&back), 2);
    let Value::Tensor(top) = back.call_method("top", &[]).unwrap() else {
        panic!()
    };
    assert_eq!(top.to_vec::<f32>().unwrap(), [1.5, 1.5]);
    // A deep copy holds copies of the tensors: writing to them leaves the
    // original's alone.
    let copy = q.deep_copy().unwrap();
    let Value::Tensor(mut first) = copy.call_method("top", &[]).unwrap() else {
        panic!()
    };
    first.fill_scalar_(opforge::Scalar::Float(9.0)).unwrap();
    let Value::Tensor(orig) = q.call_method("top", &[]).unwrap() else {
        panic!()
    };
    assert_eq!(orig.to_vec::<f32>().unwrap(), [1.5, 1.5]);
    assert!(classes::load(b"{}").is_err());
}

/// A class whose `__setstate__` refuses a state that breaks its invariant:
/// loading it, deep-copying an object holding it and loading a graph that
/// holds one are errors naming the class (`set` used to be infallible, so a
/// class could only panic).
#[test]
fn a_refused_state_is_an_error_naming_the_class() {
    struct Even(i64);
    Class::<Even>::new("cc_seed", "Even")
        .init(Even)
        .def_pickle(
            |e: &Even| e.0,
            |n: i64| match n % 2 {
                0 => Ok(Even(n)),
                _ => Err(opforge::Error::Value(format!("{n} is odd").into())),
            },
        )
        .register()
        .unwrap();
    let refused = "__torch__.torch.classes.cc_seed.Even.__setstate__ refused the state: 3 is odd";
    let even = classes::instantiate("cc_seed::Even", &[Value::Int(4)]).unwrap();
    assert!(even.deep_copy().is_ok());
    let bytes = classes::save(&even).unwrap();
    assert!(classes::load(&bytes).is_ok());
    // `__init__` does not check: the state it made is refused on the way back.
    let odd = classes::instantiate("cc_seed::Even", &[Value::Int(3)]).unwrap();
    assert_eq!(odd.deep_copy().unwrap_err().to_string(), refused);
    let bytes = classes::save(&odd).unwrap();
    assert_eq!(classes::load(&bytes).unwrap_err().to_string(), refused);
    let graph = serde_json::json!({
        "format": "opforge.graph", "version": 1, "tokens": 0,
        "objects": [{"class": "cc_seed.Even", "state": 3}],
        "nodes": [
            {"name": "x", "op": "placeholder"},
            {"name": "output", "op": "output", "args": [{"node": 0}, {"object": 0}]},
        ],
    });
    let e = opforge::trace::Graph::from_json(&graph).unwrap_err();
    assert_eq!(e.to_string(), refused);
}

#[test]
fn a_class_without_a_pickler_says_so() {
    struct Plain;
    Class::<Plain>::new("cc_seed", "Plain")
        .init(|| Plain)
        .register()
        .unwrap();
    let p = classes::instantiate("cc_seed::Plain", &[]).unwrap();
    assert_eq!(
        classes::save(&p).unwrap_err().to_string(),
        "Tried to serialize object __torch__.torch.classes.cc_seed.Plain which does not have a __getstate__ method defined!"
    );
    assert_eq!(
        p.deep_copy().unwrap_err().to_string(),
        "Tried to deepcopy object __torch__.torch.classes.cc_seed.Plain which does not have a __getstate__ method defined!"
    );
}

#[test]
fn a_queue_flattens_to_its_state_and_bad_flattenings_are_refused() {
    let q = new_queue();
    q.call_method("push", &[Value::Tensor(t(2.0))]).unwrap();
    let flat = q.flatten().unwrap();
    let names: Vec<&str> = flat.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["init_tensor_", "queue_"]);
    assert!(matches!(&flat[1].1, Value::TensorList(ts) if ts.len() == 1));
    assert_eq!(
        queue_class().method("__obj_flatten__").unwrap().schema(),
        "__obj_flatten__(__torch__.torch.classes.MyCustomClass.TensorQueue _0) -> ((str, Any)[] _0)"
    );
    // PyTorch's checks of a flattened object (`_check_valid_flat_script_obj`),
    // each on a class whose flattening is wrong.
    struct Bad(u8);
    Class::<Bad>::new("cc_flat", "Bad")
        .init(|k: i64| Bad(k as u8))
        .def("__obj_flatten__", |b: &Bad| -> Value {
            match b.0 {
                0 => Value::Int(1),
                1 => Value::List(vec![Value::Int(1)].into()),
                _ => {
                    Value::List(vec![Value::List(vec![Value::Int(1), Value::Int(2)].into())].into())
                }
            }
        })
        .register()
        .unwrap();
    let messages: Vec<String> = (0..3)
        .map(|k| {
            let b = classes::instantiate("cc_flat::Bad", &[Value::Int(k)]).unwrap();
            b.flatten().unwrap_err().to_string()
        })
        .collect();
    assert_eq!(
        messages,
        [
            "Expect flat x to be a tuple.",
            "Expect flat x to be a tuple of tuples.",
            "Expect element of flat x to be a tuple of two elements with first element being a string",
        ]
    );
    // Without the method: the missing attribute, as PyTorch's.
    struct NoFlat;
    Class::<NoFlat>::new("cc_flat", "NoFlat")
        .init(|| NoFlat)
        .register()
        .unwrap();
    let e = classes::instantiate("cc_flat::NoFlat", &[])
        .unwrap()
        .flatten()
        .unwrap_err();
    assert_eq!(e.python_class(), "AttributeError");
}
