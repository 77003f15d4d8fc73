//! Fake classes (PyTorch's `torch/_library/fake_class_registry.py`): the
//! `TensorQueue` of PyTorch's TorchBind tutorial ("Supporting Custom C++
//! Classes in torch.compile/torch.export") with a fake class,
//! made fake step by step as PyTorch's `maybe_to_fake_obj` does, and a custom
//! operator whose fake kernel calls the fake object's method (the tutorial's
//! `fake_for_each_add_`).

use opforge::classes::{self, Class, FakeClass, FakeMembers};
use opforge::dispatch::DispatchKey;
use opforge::fake::FakeTensorMode;
use opforge::library::{self, register_fake, Library, LibraryKind};
use opforge::warnings::catch_warnings;
use opforge::{Result, Scalar, ScriptObject, Tensor, Value};
use std::sync::{Mutex, OnceLock};

/// The tutorial's queue (real).
struct TensorQueue(Mutex<Vec<Tensor>>);

impl TensorQueue {
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Tensor>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The tutorial's `FakeTensorQueue`: a list of (fake) tensors.
struct FakeTensorQueue(Mutex<Vec<Tensor>>);

impl FakeTensorQueue {
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Tensor>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl FakeClass for FakeTensorQueue {
    fn unflatten(flat: Vec<(String, Value)>) -> Result<Self> {
        let mut queue = Vec::new();
        for (name, v) in flat {
            if let ("queue", Value::TensorList(ts)) = (name.as_str(), v) {
                queue = ts;
            }
        }
        Ok(FakeTensorQueue(Mutex::new(queue)))
    }

    fn members() -> FakeMembers<Self> {
        FakeMembers::new()
            .def("push", |q: &FakeTensorQueue, x: Tensor| q.lock().push(x))
            .def("pop", |q: &FakeTensorQueue| q.lock().remove(0))
            .def("size", |q: &FakeTensorQueue| q.lock().len() as i64)
            .def("for_each_add_", |q: &FakeTensorQueue, inc: Tensor| {
                for x in q.lock().iter_mut() {
                    opforge::at::add__Tensor(x, &inc, Scalar::Int(1))?;
                }
                Ok::<(), opforge::Error>(())
            })
    }
}

fn setup() {
    static ONCE: OnceLock<()> = OnceLock::new();
    ONCE.get_or_init(|| {
        Class::<TensorQueue>::new("fc_seed", "TensorQueue")
            .init(|| TensorQueue(Mutex::new(Vec::new())))
            .def_pickle(
                |q: &TensorQueue| q.lock().clone(),
                |items: Vec<Tensor>| Ok(TensorQueue(Mutex::new(items))),
            )
            .def("push", |q: &TensorQueue, x: Tensor| q.lock().push(x))
            .def("pop", |q: &TensorQueue| q.lock().remove(0))
            .def("size", |q: &TensorQueue| q.lock().len() as i64)
            .def("top", |q: &TensorQueue| q.lock()[0].clone())
            .def("for_each_add_", |q: &TensorQueue, inc: Tensor| {
                for x in q.lock().iter_mut() {
                    opforge::at::add__Tensor(x, &inc, Scalar::Int(1))?;
                }
                Ok::<(), opforge::Error>(())
            })
            .def("__obj_flatten__", |q: &TensorQueue| {
                vec![("queue".to_string(), Value::TensorList(q.lock().clone()))]
            })
            .register()
            .unwrap();
        classes::register_fake_class::<FakeTensorQueue>("fc_seed::TensorQueue").unwrap();
        let lib = Library::new("fc_seed", LibraryKind::Def).unwrap();
        lib.define(
            "for_each_add_(__torch__.torch.classes.fc_seed.TensorQueue tq, Tensor inc) -> ()",
        )
        .unwrap();
        lib.impl_("for_each_add_", DispatchKey::CPU, |args: &[Value]| {
            let [Value::Object(q), inc] = args else {
                unreachable!()
            };
            q.call_method("for_each_add_", std::slice::from_ref(inc))?;
            Ok(vec![])
        })
        .unwrap();
        // The tutorial's `fake_for_each_add_`: the fake object's method.
        register_fake("fc_seed::for_each_add_", |args: &[Value]| {
            let [Value::Object(q), inc] = args else {
                unreachable!()
            };
            q.call_method("for_each_add_", std::slice::from_ref(inc))?;
            Ok(vec![])
        })
        .unwrap();
        std::mem::forget(lib);
    });
}

fn queue_of(items: &[Tensor]) -> ScriptObject {
    setup();
    let q = classes::instantiate("fc_seed::TensorQueue", &[]).unwrap();
    for t in items {
        q.call_method("push", &[Value::Tensor(t.clone())]).unwrap();
    }
    q
}

fn t(v: f32, n: usize) -> Tensor {
    Tensor::from_vec(vec![v; n], &[n]).unwrap()
}

#[test]
fn a_queue_becomes_a_fake_with_fake_tensors_and_its_methods() {
    let a = Tensor::from_vec(vec![1.0f32; 6], &[2, 3]).unwrap();
    let col = a.t().unwrap();
    col.set_requires_grad(false).unwrap();
    let real = queue_of(&[col.clone(), t(2.0, 4)]);
    let mode = FakeTensorMode::new();
    let (fake, warnings) = catch_warnings(|| mode.fake_object(&real).unwrap());
    // `top` is not implemented by the fake: PyTorch's log line, as a warning.
    assert_eq!(
        warnings,
        [format!(
            "fake object of {real} doesn't implement method top."
        )]
    );
    assert!(fake.is_fake_object() && !real.is_fake_object());
    assert_eq!(
        fake.type_name(),
        "__torch__.torch.classes.fc_seed.TensorQueue"
    );
    assert_eq!(
        fake.method_names(),
        ["push", "pop", "size", "for_each_add_"]
    );
    let inner = fake.fake_ref::<FakeTensorQueue>().unwrap();
    let first = inner.lock()[0].clone();
    assert!(first.is_fake());
    assert_eq!(
        (first.shape(), first.strides()),
        (col.shape(), col.strides())
    );
    // The real object is a deep copy.
    let copy = fake.real_object().unwrap();
    assert!(!copy.is_same(&real));
    assert!(matches!(
        copy.call_method("size", &[]).unwrap(),
        Value::Int(2)
    ));
    // Methods run on the fake state, bound with the real schemas.
    fake.call_method(
        "push",
        &[Value::Tensor(mode.from_tensor(&t(0.0, 5)).unwrap())],
    )
    .unwrap();
    assert!(matches!(
        fake.call_method("size", &[]).unwrap(),
        Value::Int(3)
    ));
    assert!(matches!(
        real.call_method("size", &[]).unwrap(),
        Value::Int(2)
    ));
    let e = fake.call_method("push", &[Value::Int(1)]).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("push() Expected a value of type 'Tensor'"),
        "{e}"
    );
    let e = fake.call_method("top", &[]).unwrap_err();
    assert!(e
        .to_string()
        .starts_with("Tried to call __getattr__ with attr 'top' on a FakeScriptObject"));
}

#[test]
fn setting_an_attribute_of_a_fake_object_is_pytorchs_error() {
    let fake = FakeTensorMode::new().fake_object(&queue_of(&[])).unwrap();
    let e = fake.setattr("queue", Value::Int(1)).unwrap_err();
    assert_eq!(e.python_class(), "AttributeError");
    assert_eq!(
        e.to_string(),
        "Tried to call __setattr__ with attr 'queue' on a FakeScriptObject, implying that you \
         are calling this inside of a fake kernel. The fake kernel should not depend on the \
         contents of the OpaqueObject at all, so we're erroring out. If you need \
         thisfunctionality, consider creating a custom TorchBind Object instead(but note that \
         this is more difficult)."
    );
    let e = fake.getattr("queue").unwrap_err();
    assert!(e.to_string().starts_with(
        "Tried to call __getattr__ with attr 'queue' on a FakeScriptObject, implying that you are calling this inside of a fake kernel."
    ));
}

#[test]
fn the_custom_operators_fake_kernel_calls_the_fake_objects_method() {
    let real = queue_of(&[t(1.0, 2), t(2.0, 3)]);
    let mode = FakeTensorMode::new();
    let fake = mode.fake_object(&real).unwrap();
    let inc = mode.from_tensor(&t(10.0, 1)).unwrap();
    let out = library::call(
        "fc_seed::for_each_add_",
        &[Value::Object(fake.clone()), Value::Tensor(inc.clone())],
        &[],
    )
    .unwrap();
    assert!(out.is_empty());
    // The real queue is untouched; the eager call changes it.
    let Value::Tensor(top) = real.call_method("top", &[]).unwrap() else {
        panic!()
    };
    assert_eq!(top.to_vec::<f32>().unwrap(), [1.0, 1.0]);
    library::call(
        "fc_seed::for_each_add_",
        &[Value::Object(real.clone()), Value::Tensor(t(10.0, 1))],
        &[],
    )
    .unwrap();
    let Value::Tensor(top) = real.call_method("top", &[]).unwrap() else {
        panic!()
    };
    assert_eq!(top.to_vec::<f32>().unwrap(), [11.0, 11.0]);
}

/// A class without a fake class, with a `tracing_mode`, with a bad flatten.
#[test]
fn fakification_follows_the_spec_at_each_step() {
    setup();
    struct Plain;
    Class::<Plain>::new("fc_steps", "NoFake")
        .init(|| Plain)
        .def("__obj_flatten__", |_: &Plain| Vec::<(String, Value)>::new())
        .register()
        .unwrap();
    Class::<Plain>::new("fc_steps", "Real")
        .init(|| Plain)
        .def("tracing_mode", |_: &Plain| "real".to_string())
        .register()
        .unwrap();
    Class::<Plain>::new("fc_steps", "Odd")
        .init(|| Plain)
        .def("tracing_mode", |_: &Plain| "maybe".to_string())
        .register()
        .unwrap();
    Class::<Plain>::new("fc_steps", "BadFlat")
        .init(|| Plain)
        .def("__obj_flatten__", |_: &Plain| 3i64)
        .register()
        .unwrap();
    let mode = FakeTensorMode::new();
    let obj = |name: &str| classes::instantiate(&format!("fc_steps::{name}"), &[]).unwrap();
    // 1. tracing_mode() == "real": the real object.
    let real = obj("Real");
    assert!(mode.fake_object(&real).unwrap().is_same(&real));
    let e = mode.fake_object(&obj("Odd")).unwrap_err();
    assert_eq!(
        e.to_string(),
        "tracing_mode can be either real or fake but got \"maybe\""
    );
    // 2. the flattened state is checked.
    let e = mode.fake_object(&obj("BadFlat")).unwrap_err();
    assert_eq!(e.to_string(), "Expect flat x to be a tuple.");
    // 4. no fake class: PyTorch's message, with its leading space.
    let e = mode.fake_object(&obj("NoFake")).unwrap_err();
    assert!(e.to_string().starts_with(
        " ScriptObject's __torch__.torch.classes.fc_steps.NoFake haven't registered a fake class. \
         Please use register_fake_class(fc_steps::NoFake) to annotate a fake class for the script obj."
    ), "{e}");
    // Registration: the class must exist; again replaces, with a warning.
    let e = classes::register_fake_class::<FakeTensorQueue>("fc_steps::Nope").unwrap_err();
    assert_eq!(
        e.to_string(),
        "Tried to instantiate class 'fc_steps.Nope', but it does not exist! Ensure that it is \
         registered via torch::class_"
    );
    let ((), w) = catch_warnings(|| {
        classes::register_fake_class::<FakeTensorQueue>("fc_steps::NoFake").unwrap();
        classes::register_fake_class::<FakeTensorQueue>("fc_steps::NoFake").unwrap();
    });
    assert_eq!(w.len(), 1);
    assert!(w[0].starts_with(
        "__torch__.torch.classes.fc_steps.NoFake is already registered. Previous fake class is overridden with  "
    ));
    assert!(classes::has_fake_class(
        "__torch__.torch.classes.fc_steps.NoFake"
    ));
    assert!(classes::deregister_fake_class("fc_steps::NoFake"));
    let (gone, w) = catch_warnings(|| classes::deregister_fake_class("fc_steps::NoFake"));
    assert!(!gone);
    assert_eq!(
        w,
        ["Cannot deregister __torch__.torch.classes.fc_steps.NoFake. Please use register_fake_class to register it first. Or do you dereigster it twice?"]
    );
}

/// A fake class with a constant where the real class has a method.
#[test]
fn a_constant_named_as_a_method_is_an_error() {
    setup();
    struct Sized3;
    Class::<Sized3>::new("fc_const", "S")
        .init(|| Sized3)
        .def("size", |_: &Sized3| 3i64)
        .def("__obj_flatten__", |_: &Sized3| {
            Vec::<(String, Value)>::new()
        })
        .register()
        .unwrap();
    struct FakeS;
    impl FakeClass for FakeS {
        fn unflatten(_: Vec<(String, Value)>) -> Result<Self> {
            Ok(FakeS)
        }
        fn members() -> FakeMembers<Self> {
            FakeMembers::new().attr("size", Value::Int(3))
        }
    }
    classes::register_fake_class::<FakeS>("fc_const::S").unwrap();
    let s = classes::instantiate("fc_const::S", &[]).unwrap();
    let e = FakeTensorMode::new().fake_object(&s).unwrap_err();
    assert_eq!(e.to_string(), "Expect size to be a callable but got 3.");
}

/// opcheck over the tutorial's operator: its schema, and its fake kernel (on the
/// fake queue) against the real call.
#[test]
fn opcheck_passes_for_the_seeds_operator() {
    use opforge::opcheck::{opcheck, TestUtil};
    let q = queue_of(&[t(1.0, 2)]);
    opcheck(
        "fc_seed::for_each_add_",
        &[Value::Object(q), Value::Tensor(t(1.0, 1))],
        &[TestUtil::Schema, TestUtil::FakeTensor],
    )
    .unwrap();
}

/// The tutorial's `Mod` (push `cos`, push `sin`, pop minus size), traced: method
/// calls are `call_torchbind` nodes, the size is burned in as a constant,
/// and the graph re-executes on a fresh queue to the eager result; traced on
/// fakes, the queue is the fake object and nothing is computed.
#[test]
fn the_seeds_program_traces_with_call_torchbind() {
    use opforge::trace::{trace, TracingMode};
    setup();
    let program = |v: &[Value]| -> Result<Vec<Value>> {
        let (Value::Object(tq), Value::Tensor(x)) = (&v[0], &v[1]) else {
            unreachable!()
        };
        tq.call_method("push", &[Value::Tensor(opforge::torch::cos(x)?)])?;
        tq.call_method("push", &[Value::Tensor(opforge::torch::sin(x)?)])?;
        let Value::Tensor(popped) = tq.call_method("pop", &[])? else {
            unreachable!()
        };
        let Value::Int(size) = tq.call_method("size", &[])? else {
            unreachable!()
        };
        let n = Tensor::wrapped_number(Scalar::Int(size));
        let r = opforge::at::sub_Tensor(&popped, &n, Scalar::Int(1))?;
        Ok(vec![Value::Tensor(r), v[0].clone()])
    };
    let x = Tensor::from_vec(vec![0.5f32, 1.0], &[2]).unwrap();
    let queue = || classes::instantiate("fc_seed::TensorQueue", &[]).unwrap();
    for mode in [TracingMode::Real, TracingMode::Fake] {
        let inputs = [Value::Object(queue()), Value::Tensor(x.clone())];
        let g = trace(program, &inputs, mode).unwrap();
        assert_eq!(
            g.to_string(),
            "def forward(self, arg0_1, arg1_1):\n    \
             cos = torch.ops.aten.cos.default(arg1_1)\n    \
             call_torchbind = torch.ops.higher_order.call_torchbind(arg0_1, 'push', cos);  cos = call_torchbind = None\n    \
             sin = torch.ops.aten.sin.default(arg1_1);  arg1_1 = None\n    \
             call_torchbind_1 = torch.ops.higher_order.call_torchbind(arg0_1, 'push', sin);  sin = call_torchbind_1 = None\n    \
             call_torchbind_2 = torch.ops.higher_order.call_torchbind(arg0_1, 'pop')\n    \
             call_torchbind_3 = torch.ops.higher_order.call_torchbind(arg0_1, 'size');  call_torchbind_3 = None\n    \
             sub = torch.ops.aten.sub.Tensor(call_torchbind_2, 1);  call_torchbind_2 = None\n    \
             return (sub, arg0_1)\n",
            "{}",
            mode.name()
        );
        // Re-executed on a fresh queue: the eager result, and the queue
        // holds the `sin` left after the pop.
        let q = queue();
        let out = g
            .run(&[Value::Object(q.clone()), Value::Tensor(x.clone())])
            .unwrap();
        let eager = program(&[Value::Object(queue()), Value::Tensor(x.clone())]).unwrap();
        let (Value::Tensor(a), Value::Tensor(b)) = (&out[0], &eager[0]) else {
            unreachable!()
        };
        assert_eq!(a.to_vec::<f32>().unwrap(), b.to_vec::<f32>().unwrap());
        assert_eq!(q.call_method("size", &[]).unwrap().to_string(), "1");
    }
}

/// The tutorial's `ForEachAdd` functionalized (as `torch.export` does): the
/// operator taking the queue is made through `with_effects`, the token a
/// graph input and the new token a graph output; re-executed, the graph
/// adds to every element of a fresh 10-element queue.
#[test]
fn the_seeds_for_each_add_traces_with_effect_tokens() {
    use opforge::functionalize::functionalize;
    use opforge::trace::{trace, TracingMode};
    setup();
    let program = |v: &[Value]| -> Result<Vec<Value>> {
        library::call("fc_seed::for_each_add_", &[v[0].clone(), v[1].clone()], &[])?;
        Ok(vec![v[0].clone()])
    };
    // Ten tensors (not ten handles of one).
    let zeros = || (0..10).map(|_| t(0.0, 1)).collect::<Vec<_>>();
    for mode in [TracingMode::Real, TracingMode::Fake] {
        let inputs = [Value::Object(queue_of(&zeros())), Value::Tensor(t(1.0, 1))];
        let g = trace(functionalize(program), &inputs, mode).unwrap();
        assert_eq!(
            g.to_string(),
            "def forward(self, token, arg0_1, arg1_1):\n    \
             with_effects = torch.ops.higher_order.with_effects(token, torch.ops.fc_seed.for_each_add_.default, arg0_1, arg1_1);  token = arg1_1 = None\n    \
             getitem = with_effects[0];  with_effects = None\n    \
             return (getitem, arg0_1)\n",
            "{}",
            mode.name()
        );
        assert_eq!(g.tokens(), 1);
        // Saved and loaded, it is the same graph.
        let text = serde_json::to_string(&g).unwrap();
        let g: opforge::trace::Graph = serde_json::from_str(&text).unwrap();
        assert_eq!(g.tokens(), 1);
        let q = queue_of(&zeros());
        let out = g
            .run(&[Value::Object(q.clone()), Value::Tensor(t(1.0, 1))])
            .unwrap();
        assert!(matches!(&out[..], [Value::Object(o)] if o.address() == q.address()));
        assert_eq!(q.call_method("size", &[]).unwrap().to_string(), "10");
        let Value::Tensor(top) = q.call_method("top", &[]).unwrap() else {
            unreachable!()
        };
        assert_eq!(top.to_vec::<f32>().unwrap(), vec![1.0]);
    }
}

/// Method calls on the queue, functionalized: each is
/// `with_effects(token, call_torchbind, …)`, the token threaded through
/// them in program order.
#[test]
fn method_calls_thread_the_token_through_call_torchbind() {
    use opforge::functionalize::functionalize;
    use opforge::trace::{trace, TracingMode};
    setup();
    let program = |v: &[Value]| -> Result<Vec<Value>> {
        let (Value::Object(tq), Value::Tensor(x)) = (&v[0], &v[1]) else {
            unreachable!()
        };
        tq.call_method("push", &[Value::Tensor(opforge::torch::cos(x)?)])?;
        tq.call_method("push", &[Value::Tensor(opforge::torch::sin(x)?)])?;
        let popped = tq.call_method("pop", &[])?;
        Ok(vec![popped])
    };
    let x = Tensor::from_vec(vec![0.5f32, 1.0], &[2]).unwrap();
    let inputs = [Value::Object(queue_of(&[])), Value::Tensor(x.clone())];
    let g = trace(functionalize(program), &inputs, TracingMode::Fake).unwrap();
    assert_eq!(
        g.to_string(),
        "def forward(self, token, arg0_1, arg1_1):\n    \
         cos = torch.ops.aten.cos.default(arg1_1)\n    \
         with_effects = torch.ops.higher_order.with_effects(token, torch.ops.higher_order.call_torchbind, arg0_1, 'push', cos);  token = cos = None\n    \
         getitem = with_effects[0];  with_effects = None\n    \
         sin = torch.ops.aten.sin.default(arg1_1);  arg1_1 = None\n    \
         with_effects_1 = torch.ops.higher_order.with_effects(getitem, torch.ops.higher_order.call_torchbind, arg0_1, 'push', sin);  getitem = sin = None\n    \
         getitem_1 = with_effects_1[0];  with_effects_1 = None\n    \
         with_effects_2 = torch.ops.higher_order.with_effects(getitem_1, torch.ops.higher_order.call_torchbind, arg0_1, 'pop');  getitem_1 = arg0_1 = None\n    \
         getitem_2 = with_effects_2[0]\n    \
         getitem_3 = with_effects_2[1];  with_effects_2 = None\n    \
         return (getitem_2, getitem_3)\n"
    );
    let q = queue_of(&[]);
    let out = g
        .run(&[Value::Object(q.clone()), Value::Tensor(x.clone())])
        .unwrap();
    let want = opforge::torch::cos(&x).unwrap();
    assert_eq!(
        out[0].as_tensor().unwrap().to_vec::<f32>().unwrap(),
        want.to_vec::<f32>().unwrap()
    );
    assert_eq!(q.call_method("size", &[]).unwrap().to_string(), "1");
}

/// `with_effects` refuses an operator with alias annotations, and counts
/// the results it is given against the operator's schema (PyTorch's
/// assertions; an operator's own kernel is counted before, so a dispatch
/// mode answering for the `with_effects` call, which it sees as any call,
/// is what can get it wrong).
#[test]
fn with_effects_refuses_aliasing_and_checks_result_counts() {
    use opforge::functionalize::{functionalize, new_token};
    use opforge::overrides::{push_dispatch_mode, DispatchCall, Handled, TorchDispatchMode};
    /// Answers every `with_effects` call with a token and two ints.
    struct TwoResults;
    impl TorchDispatchMode for TwoResults {
        fn torch_dispatch(&self, call: &DispatchCall<'_>) -> opforge::Result<Handled> {
            if call.func().operator().qualified_name() != "higher_order::with_effects" {
                return call.call_func().map(Handled::Value);
            }
            Ok(Handled::Value(Value::List(
                vec![Value::Tensor(new_token()?), Value::Int(1), Value::Int(2)].into(),
            )))
        }
    }
    setup();
    let lib = Library::new("fc_eff", LibraryKind::Def).unwrap();
    lib.define(
        "alias_push(__torch__.torch.classes.fc_seed.TensorQueue tq, Tensor(a!) x) -> Tensor(a!)",
    )
    .unwrap();
    lib.impl_("alias_push", DispatchKey::CPU, |args: &[Value]| {
        Ok(vec![args[1].clone()])
    })
    .unwrap();
    let q = Value::Object(queue_of(&[]));
    let x = Value::Tensor(t(1.0, 2));
    let e = functionalize(|v: &[Value]| library::call("fc_eff::alias_push", v, &[]))(&[
        q.clone(),
        x.clone(),
    ])
    .unwrap_err();
    assert_eq!(
        (e.python_class(), e.to_string().as_str()),
        ("AssertionError", "Ops with aliasing is not supported")
    );
    let counts = [
        (0, "expected no outputs but got 2"),
        (1, "expected 1 output but got 2"),
        (3, "expected 3 outputs but got 2"),
    ];
    for (want, message) in counts {
        let _wrong = push_dispatch_mode(std::sync::Arc::new(TwoResults));
        let returns = match want {
            0 => "()".to_string(),
            1 => "Tensor".to_string(),
            n => format!("({})", vec!["Tensor"; n].join(", ")),
        };
        let name = format!("counted{want}");
        lib.define(&format!(
            "{name}(__torch__.torch.classes.fc_seed.TensorQueue tq) -> {returns}"
        ))
        .unwrap();
        lib.impl_(&name, DispatchKey::CPU, |_: &[Value]| Ok(vec![]))
            .unwrap();
        let e = functionalize(|v: &[Value]| library::call(&format!("fc_eff::{name}"), v, &[]))(
            std::slice::from_ref(&q),
        )
        .unwrap_err();
        assert_eq!(
            (e.python_class(), e.to_string()),
            ("AssertionError", message.to_string())
        );
    }
    std::mem::forget(lib);
}

/// The tutorial's caveat: a tensor pushed into an object, then written in
/// place, is not tracked. Functionalized, the object keeps the value it was
/// given (PyTorch's graph pops the unwritten tensor), where eagerly it pops
/// the written one.
#[test]
fn a_tensor_written_after_entering_an_object_is_not_tracked() {
    use opforge::functionalize::functionalize;
    setup();
    let program = |v: &[Value]| -> Result<Vec<Value>> {
        let (Value::Object(tq), Value::Tensor(a)) = (&v[0], &v[1]) else {
            unreachable!()
        };
        tq.call_method("push", &[Value::Tensor(a.clone())])?;
        let mut a = a.clone();
        a.sin_()?;
        let Value::Tensor(b) = tq.call_method("pop", &[])? else {
            unreachable!()
        };
        Ok(vec![Value::Tensor(opforge::torch::add(&a, &b)?)])
    };
    let x = || Tensor::from_vec(vec![0.5f32, 1.0], &[2]).unwrap();
    let eager = program(&[Value::Object(queue_of(&[])), Value::Tensor(x())]).unwrap();
    let func = functionalize(program)(&[Value::Object(queue_of(&[])), Value::Tensor(x())]).unwrap();
    let sin = opforge::torch::sin(&x()).unwrap();
    let twice = opforge::torch::add(&sin, &sin).unwrap();
    let once = opforge::torch::add(&sin, &x()).unwrap();
    let vals = |v: &Value| v.as_tensor().unwrap().to_vec::<f32>().unwrap();
    assert_eq!(vals(&eager[0]), twice.to_vec::<f32>().unwrap());
    assert_eq!(vals(&func[0]), once.to_vec::<f32>().unwrap());
}

/// An object the program uses without taking it as an input is a constant
/// of the graph; saved, it goes through its class's pickling, and the
/// loaded graph runs on the object made from that state.
#[test]
fn a_saved_graph_keeps_a_constant_object_through_its_pickling() {
    use opforge::trace::{trace, Graph, TracingMode};
    let q = queue_of(&[t(1.0, 2)]);
    let program = |v: &[Value]| -> Result<Vec<Value>> {
        q.call_method("push", &[v[0].clone()])?;
        Ok(vec![q.call_method("pop", &[])?])
    };
    let g = trace(program, &[Value::Tensor(t(5.0, 2))], TracingMode::Real).unwrap();
    let text = serde_json::to_string(&g).unwrap();
    assert!(text.contains("\"object\""), "{text}");
    let back: Graph = serde_json::from_str(&text).unwrap();
    assert_eq!(back.targets(), g.targets());
    // One object, used twice.
    let printed = back.to_string();
    let objects: Vec<&str> = printed.matches("object at 0x").collect();
    assert_eq!(objects.len(), 2);
    let at = |i: usize| {
        printed
            .match_indices("object at 0x")
            .nth(i)
            .map(|(p, _)| &printed[p..p + 26])
    };
    assert_eq!(at(0), at(1));
    // The saved queue held [1, 1] then [5, 5] (state when saved): the pop
    // gives the first.
    let out = back.run(&[Value::Tensor(t(7.0, 2))]).unwrap();
    assert_eq!(
        out[0].as_tensor().unwrap().to_vec::<f32>().unwrap(),
        vec![5.0, 5.0]
    );
    let bad = text.replace("fc_seed.TensorQueue", "fc_seed.NoSuchQueue");
    let e = serde_json::from_str::<Graph>(&bad).unwrap_err().to_string();
    assert!(e.contains("NoSuchQueue"), "{e}");
}

/// A method call is a call of the operator `higher_order::call_torchbind`:
/// a user's dispatch mode sees it as it sees any call (its arguments the
/// object, the method's name, then the method's), and what it answers is
/// the method's result.
#[test]
fn a_dispatch_mode_sees_method_calls_as_calls() {
    use opforge::overrides::{push_dispatch_mode, DispatchCall, Handled, TorchDispatchMode};
    use std::sync::Arc;
    setup();
    #[derive(Default)]
    struct Log(Mutex<Vec<String>>);
    impl TorchDispatchMode for Log {
        fn torch_dispatch(&self, call: &DispatchCall<'_>) -> Result<Handled> {
            let args: Vec<String> = call
                .args()
                .iter()
                .map(|v| match v {
                    Value::Object(_) => "obj".to_string(),
                    Value::Tensor(_) => "tensor".to_string(),
                    other => other.to_string(),
                })
                .collect();
            let line = format!("{}({})", call.func(), args.join(", "));
            self.0.lock().unwrap().push(line);
            let size = matches!(call.args().get(1), Some(Value::Str(m)) if m == "size");
            if call.func().to_string() == "higher_order.call_torchbind" && size {
                return Ok(Handled::Value(Value::Int(42)));
            }
            call.call_func().map(Handled::Value)
        }
    }
    let log = Arc::new(Log::default());
    let q = queue_of(&[t(1.0, 2)]);
    let size = {
        let _mode = push_dispatch_mode(log.clone());
        q.call_method("push", &[Value::Tensor(t(2.0, 2))]).unwrap();
        q.call_method("size", &[]).unwrap()
    };
    // The mode answered for `size`; `push` ran.
    assert_eq!(size.to_string(), "42");
    assert_eq!(q.call_method("size", &[]).unwrap().to_string(), "2");
    assert_eq!(
        *log.0.lock().unwrap(),
        [
            "higher_order.call_torchbind(obj, \"push\", tensor)",
            "higher_order.call_torchbind(obj, \"size\")"
        ]
    );
}
