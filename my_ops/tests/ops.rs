//! A crate with its own schema file: its operators are in opforge's dispatcher
//! beside opforge's, with the kernels its YAML names (each checked by
//! `#[kernel]` against this crate's schema), reached typed and boxed.

use my_ops::kernels::cpu::ABS_CALLS;
use opforge::dispatch::{dispatcher, DispatchKey};
use opforge::{DType, Device, Scalar, ScriptObject, Tensor, Value};
use std::sync::atomic::Ordering;

fn t() -> Tensor {
    Tensor::from_vec(vec![1.0f32, -2.0, 3.0], &[3]).unwrap()
}

#[test]
fn the_crates_operators_are_registered_with_their_kernels() {
    assert!(
        dispatcher().registration_errors().is_empty(),
        "{:?}",
        dispatcher().registration_errors()
    );
    let scale = dispatcher().find("mylib::scale").unwrap();
    assert_eq!(
        scale.schema.schema,
        "mylib::scale(Tensor self, float k=1.0) -> Tensor"
    );
    assert_eq!(scale.origin(), Some("my_ops's native_functions.yaml:5"));
    let keys: Vec<DispatchKey> = scale.registrations().iter().map(|(k, _)| *k).collect();
    assert_eq!(
        keys,
        [DispatchKey::CPU, DispatchKey::Meta, DispatchKey::Autograd]
    );
    for (key, k) in scale.registrations() {
        // The Autograd kernel is generated from derivatives.yaml.
        let from = match key {
            DispatchKey::Autograd => "/opforge/autograd.rs",
            _ => "my_ops/src/kernels/",
        };
        assert!(k.source().contains(from), "{key:?}: {}", k.source());
    }
    // The generated table and the dispatcher agree, operator by operator.
    for (i, s) in my_ops::OPS.iter().enumerate() {
        let op = my_ops::generated::operator(my_ops::OpId::ALL[i]);
        assert_eq!(op.schema.name, s.name);
    }
}

#[test]
fn typed_boxed_and_meta_calls() {
    let x = t();
    assert_eq!(
        my_ops::torch::scale(&x).unwrap().to_vec::<f32>().unwrap(),
        [1.0, -2.0, 3.0]
    );
    assert_eq!(
        my_ops::ops::mylib_scale(&x, 2.0)
            .unwrap()
            .to_vec::<f32>()
            .unwrap(),
        [2.0, -4.0, 6.0]
    );
    assert_eq!(
        my_ops::at::mylib_axpy(&x, &x, Scalar::Int(2))
            .unwrap()
            .to_vec::<f32>()
            .unwrap(),
        [3.0, -6.0, 9.0]
    );
    let boxed = dispatcher()
        .find("mylib::scale")
        .unwrap()
        .call_boxed(&[Value::Tensor(x.clone()), Value::Float(0.5)])
        .unwrap();
    let [Value::Tensor(r)] = &boxed[..] else {
        panic!("{boxed:?}")
    };
    assert_eq!(r.to_vec::<f32>().unwrap(), [0.5, -1.0, 1.5]);
    // PyTorch-style boxed call by name, with the schema default.
    let out = opforge::library::call("mylib::scale", &[Value::Tensor(x.clone())], &[]).unwrap();
    assert!(matches!(&out[..], [Value::Tensor(_)]));
    let m = Tensor::zeros(&[4, 2], DType::Float32, Device::Meta);
    let r = my_ops::torch::scale(&m).unwrap();
    assert_eq!((r.shape(), r.device()), (vec![4, 2], Device::Meta));
}

#[test]
fn an_opforge_operator_gets_the_kernel_this_crate_adds() {
    let before = ABS_CALLS.load(Ordering::Relaxed);
    // opforge's own typed API, opforge's operator: this crate's CPU kernel runs.
    let r = opforge::torch::abs(&t()).unwrap();
    assert_eq!(r.to_vec::<f32>().unwrap(), [1.0, 2.0, 3.0]);
    assert!(ABS_CALLS.load(Ordering::Relaxed) > before);
    // The crate's own API names the same operator.
    let r = my_ops::torch::abs(&t()).unwrap();
    assert_eq!(r.to_vec::<f32>().unwrap(), [1.0, 2.0, 3.0]);
    assert!(std::ptr::eq(
        my_ops::generated::operator(my_ops::OpId::abs),
        dispatcher().op(opforge::OpId::abs)
    ));
    // Meta still runs opforge's CompositeExplicitAutograd kernel.
    let m = Tensor::zeros(&[2], DType::Float32, Device::Meta);
    assert_eq!(opforge::torch::abs(&m).unwrap().device(), Device::Meta);
}

// A boxed call whose argument does not convert names the operator, the
// argument (schema name, position counted from 0 as PyTorch does), what was
// expected and what was given.
#[test]
fn boxed_argument_errors_name_the_operator_and_the_argument() {
    let scale = dispatcher().find("mylib::scale").unwrap();
    let e = scale
        .call_boxed(&[Value::Tensor(t()), Value::Str("yes".into())])
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "mylib::scale: argument 'k' (position 1): expected float, got str: \"yes\""
    );
    let e = scale
        .call_boxed(&[Value::Str("x".into()), Value::Float(1.0)])
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "mylib::scale: argument 'self' (position 0): expected Tensor, got str: \"x\""
    );
    let axpy = dispatcher().find("mylib::axpy").unwrap();
    let e = axpy
        .call_boxed(&[Value::Tensor(t()), Value::Tensor(t()), Value::Tensor(t())])
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "mylib::axpy: argument 'alpha' (position 2): expected Number, got Tensor: \
         a torch.float32 tensor of shape [3]"
    );
}

// One rule for a number given for a `Tensor`, PyTorch's at each level:
// - boxed (`Operator::call_boxed`, C++'s `callBoxed`): a number in a `Tensor`
//   slot is the wrapped-number tensor PyTorch's Python layer makes of it (and
//   hands back to dispatch callbacks as a number), so every operator takes it;
// - by name (`library::call`, Python's `torch.ops`): only the operators PyTorch
//   allow-lists (`add`, `mul`, `div`, …, `aten::` only) take a number there.
#[test]
fn a_number_for_a_tensor_follows_pytorchs_rule_at_each_level() {
    use opforge::library::call;
    // Boxed: a wrapped number, for opforge's operators and this crate's. A
    // wrapped float is a double tensor (`torch.ops.aten._to_copy(1.5)` is
    // float64), which `abs` keeps: a unary operator does not promote.
    let abs = dispatcher().find("aten::abs").unwrap();
    let [Value::Tensor(r)] = &abs.call_boxed(&[Value::Float(-1.5)]).unwrap()[..] else {
        panic!()
    };
    assert_eq!(
        (r.dtype(), r.to_vec::<f64>().unwrap()),
        (DType::Float64, vec![1.5])
    );
    let scale = dispatcher().find("mylib::scale").unwrap();
    let out = scale
        .call_boxed(&[
            Value::Tensor(Tensor::wrapped_number(Scalar::Float(2.0))),
            Value::Float(0.5),
        ])
        .unwrap();
    let [Value::Tensor(r)] = &out[..] else {
        panic!()
    };
    assert_eq!(r.to_vec::<f32>().unwrap(), [1.0]);
    // By name: `torch.ops.aten.add.Tensor(1.0, 2.0)` is `tensor(3.)` …
    let out = call(
        "aten::add.Tensor",
        &[Value::Float(1.0), Value::Float(2.0)],
        &[],
    )
    .unwrap();
    let [Value::Tensor(r)] = &out[..] else {
        panic!()
    };
    assert_eq!(
        (r.dtype(), r.to_vec::<f32>().unwrap()),
        (DType::Float32, vec![3.0])
    );
    // … while `abs` and a library's operator refuse it, with PyTorch's words.
    let e = call("aten::abs.default", &[Value::Float(1.5)], &[]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "aten::abs() Expected a value of type 'Tensor' for argument 'self' but instead found \
         type 'float'.\nPosition: 0\nValue: 1.5\nDeclaration: aten::abs(Tensor self) -> Tensor\n\
         Cast error details: Unable to cast 1.5 to Tensor"
    );
    let e = call("mylib::scale", &[Value::Float(1.0)], &[]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "mylib::scale() Expected a value of type 'Tensor' for argument 'self' but instead found \
         type 'float'.\nPosition: 0\nValue: 1.0\nDeclaration: mylib::scale(Tensor self, float \
         k=1.) -> Tensor\nCast error details: Unable to cast 1.0 to Tensor"
    );
}

// A value that does not convert, by name: PyTorch's message (operator,
// argument, position, value, declaration). Its last line is pybind11's text
// for PyTorch's own operators (the corpora record it); a library's operator
// says what did not convert to what instead.
#[test]
fn by_name_conversion_errors_say_what_did_not_convert() {
    let x = Value::Tensor(t());
    let e = opforge::library::call(
        "mylib::scale",
        std::slice::from_ref(&x),
        &[("k".into(), Value::Str("yes".into()))],
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "mylib::scale() Expected a value of type 'float' for argument 'k' but instead found \
         type 'str'.\nPosition: 1\nValue: 'yes'\nDeclaration: mylib::scale(Tensor self, float \
         k=1.) -> Tensor\nCast error details: a str does not convert to float"
    );
    let e = opforge::library::call(
        "aten::div.Tensor_mode",
        &[x.clone(), x],
        &[("rounding_mode".into(), Value::Int(1))],
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "aten::div() Expected a value of type 'Optional[str]' for argument 'rounding_mode' but \
         instead found type 'int'.\nPosition: 2\nValue: 1\nDeclaration: aten::div.Tensor_mode(\
         Tensor self, Tensor other, *, str? rounding_mode) -> Tensor\nCast error details: Unable \
         to cast Python instance of type <class 'int'> to C++ type '?' (#define \
         PYBIND11_DETAILED_ERROR_MESSAGES or compile in debug mode for details)"
    );
    // The declaration is c10's printing of the schema: `int reduction=Mean`
    // in the YAML is `int reduction=1`, as PyTorch 2.15 prints it.
    let e = opforge::library::call(
        "aten::mse_loss.default",
        &[Value::Tensor(t()), Value::Tensor(t())],
        &[("reduction".into(), Value::Str("mean".into()))],
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "aten::mse_loss() Expected a value of type 'int' for argument 'reduction' but instead \
         found type 'str'.\nPosition: 2\nValue: 'mean'\nDeclaration: aten::mse_loss(Tensor \
         self, Tensor target, int reduction=1) -> Tensor\nCast error details: Unable to cast \
         Python instance of type <class 'str'> to C++ type '?' (#define \
         PYBIND11_DETAILED_ERROR_MESSAGES or compile in debug mode for details)"
    );
}

// This crate's custom class, declared with #[custom_class] / #[methods]: it
// is registered at link time, with the schemas PyTorch would generate.
#[test]
fn the_crates_custom_class_is_registered_with_its_methods() {
    use opforge::classes;
    assert!(classes::registration_errors().is_empty());
    let class = classes::find("mylib::Queue").unwrap();
    assert_eq!(
        class.method_names(),
        [
            "__init__",
            "__getstate__",
            "__setstate__",
            "push",
            "size",
            "for_each_add_",
            "__obj_flatten__",
            "clone_queue"
        ]
    );
    assert_eq!(
        class.method("clone_queue").unwrap().schema(),
        "clone_queue(__torch__.torch.classes.mylib.Queue _0) -> __torch__.torch.classes.mylib.Queue _0"
    );
    let q = classes::instantiate("mylib::Queue", &[]).unwrap();
    q.call_method("push", &[Value::Tensor(t())]).unwrap();
    let Value::Object(copy) = q.call_method("clone_queue", &[]).unwrap() else {
        panic!()
    };
    q.call_method("push", &[Value::Tensor(t())]).unwrap();
    assert!(matches!(q.call_method("size", &[]).unwrap(), Value::Int(2)));
    assert!(matches!(
        copy.call_method("size", &[]).unwrap(),
        Value::Int(1)
    ));
    assert!(copy.downcast_ref::<my_ops::queue::Queue>().is_some());
}

// An operator of this crate's YAML taking the class
// (`__torch__.torch.classes.mylib.Queue`): typed, through the API, by name and
// boxed; its kernel takes `&Queue`, the value inside the object.
#[test]
fn an_operator_of_the_yaml_takes_the_crates_custom_class() {
    use opforge::classes;
    let q = classes::instantiate("mylib::Queue", &[]).unwrap();
    q.call_method("push", &[Value::Tensor(t())]).unwrap();
    let inc = Tensor::from_vec(vec![1.0f32, 1.0, 1.0], &[3]).unwrap();
    my_ops::at::mylib_for_each_add(&q, &inc).unwrap();
    my_ops::torch::for_each_add(&q, &inc).unwrap();
    opforge::library::call(
        "mylib::for_each_add",
        &[Value::Object(q.clone()), Value::Tensor(inc.clone())],
        &[],
    )
    .unwrap();
    let first = q.downcast_ref::<my_ops::queue::Queue>().unwrap().first();
    assert_eq!(first.unwrap().to_vec::<f32>().unwrap(), [4.0, 1.0, 6.0]);
    // An object of another class: by name, PyTorch's message; typed, the
    // kernel's parameter conversion names both classes.
    classes::Class::<()>::new("mylib_test", "Other")
        .init(|| ())
        .register()
        .unwrap();
    let other = classes::instantiate("mylib_test::Other", &[]).unwrap();
    let e = opforge::library::call(
        "mylib::for_each_add",
        &[Value::Object(other.clone()), Value::Tensor(inc.clone())],
        &[],
    )
    .unwrap_err();
    assert!(
        e.to_string().starts_with(
            "mylib::for_each_add() Expected a value of type \
             '__torch__.torch.classes.mylib.Queue' for argument 'q' but instead found type \
             'ScriptObject'."
        ) && e.to_string().ends_with(
            "Cast error details: an object of __torch__.torch.classes.mylib_test.Other is not a \
             __torch__.torch.classes.mylib.Queue"
        ),
        "{e}"
    );
    let e = my_ops::at::mylib_for_each_add(&other, &inc).unwrap_err();
    assert_eq!(
        e.to_string(),
        "expected an object of __torch__.torch.classes.mylib.Queue, got an object of \
         __torch__.torch.classes.mylib_test.Other"
    );
}

// opcheck over this crate's operators, the one taking the class included
// (its fake class and fake kernel registered as PyTorch's TorchBind tutorial registers them).
#[test]
fn opcheck_passes_for_the_crates_operators() {
    use opforge::classes;
    use opforge::opcheck::{opcheck, TestUtil};
    my_ops::queue::register_fakes().unwrap();
    let q = classes::instantiate("mylib::Queue", &[]).unwrap();
    q.call_method("push", &[Value::Tensor(t())]).unwrap();
    let w = t();
    w.set_requires_grad(true).unwrap();
    let all = [TestUtil::Schema, TestUtil::FakeTensor, TestUtil::TypedCall];
    opcheck(
        "mylib::scale",
        &[Value::Tensor(t()), Value::Float(2.0)],
        &all,
    )
    .unwrap();
    opcheck(
        "mylib::axpy",
        &[Value::Tensor(t()), Value::Tensor(t()), Value::Int(2)],
        &all,
    )
    .unwrap();
    opcheck("aten::abs", &[Value::Tensor(w)], &TestUtil::DEFAULT).unwrap();
    opcheck(
        "mylib::for_each_add",
        &[Value::Object(q.clone()), Value::Tensor(t())],
        &all,
    )
    .unwrap();
    // The fake kernel ran on the fake queue; the real queue changed by the
    // four real calls (test_schema's, test_faketensor's and test_typed_call's
    // two, which copy the tensor arguments but pass the object as it is).
    let first = q
        .downcast_ref::<my_ops::queue::Queue>()
        .unwrap()
        .first()
        .unwrap();
    assert_eq!(first.to_vec::<f32>().unwrap(), [5.0, -10.0, 15.0]);
}

// A queue holding `t()`.
fn queue() -> ScriptObject {
    let q = opforge::classes::instantiate("mylib::Queue", &[]).unwrap();
    q.call_method("push", &[Value::Tensor(t())]).unwrap();
    q
}

/// The tensor at the front of queue `q`.
fn front(q: &ScriptObject) -> Tensor {
    q.downcast_ref::<my_ops::queue::Queue>()
        .unwrap()
        .first()
        .unwrap()
}

fn ones() -> Tensor {
    Tensor::from_vec(vec![1.0f32, 1.0, 1.0], &[3]).unwrap()
}

/// The README's program on a queue: `for_each_add(q, inc)`, then `inc * inc`.
fn add_then_square(v: &[Value]) -> opforge::Result<Vec<Value>> {
    let Value::Object(q) = &v[0] else {
        panic!("an object input")
    };
    let inc = v[1].as_tensor().unwrap();
    my_ops::torch::for_each_add(q, inc)?;
    Ok(vec![Value::Tensor(opforge::torch::mul(inc, inc)?)])
}

/// PyTorch 2.15's capture `mode` of the recorded programs
/// (`tests/record/queue_graphs/`): its targets and its code.
fn pytorch(mode: &str) -> (Vec<String>, String) {
    let r: serde_json::Value = include_str!("data/queue_graphs.jsonl")
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|r| r["mode"] == mode)
        .unwrap();
    let targets = r["targets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap().to_string())
        .collect();
    (targets, r["code"].as_str().unwrap().to_string())
}

// An operator without returns taking the class traces (it failed: a handler
// saw its no results as a list, not `None`), and the graph's rerun applies
// its effect once.
#[test]
fn the_queues_zero_return_operator_traces_and_replays() {
    use opforge::trace::{trace, TracingMode};
    let q = queue();
    let f = |v: &[Value]| {
        let inc = v[0].as_tensor().unwrap();
        my_ops::torch::for_each_add(&q, inc)?;
        Ok(vec![Value::Tensor(opforge::torch::neg(inc)?)])
    };
    let inc = ones();
    let g = trace(f, &[Value::Tensor(inc.clone())], TracingMode::Real).unwrap();
    assert_eq!(
        g.targets(),
        ["mylib.for_each_add.default", "aten.neg.default"],
        "{g}"
    );
    let first = || front(&q).to_vec::<f32>().unwrap();
    assert_eq!(first(), [2.0, -1.0, 4.0]);
    g.run(&[Value::Tensor(inc)]).unwrap();
    assert_eq!(first(), [3.0, 0.0, 5.0]);
}

// `#[methods]`' `__getstate__` / `__setstate__` are the class's pickling
// (PyTorch's `def_pickle`, which lists them among the methods, before the
// others): a queue saves, loads and deep-copies (its tensors copied).
#[test]
fn the_queue_pickles_through_its_methods_block() {
    use opforge::classes;
    let q = queue();
    let copy = q.deep_copy().unwrap();
    assert!(!front(&copy).is_same(&front(&q)));
    assert_eq!(front(&copy).to_vec::<f32>().unwrap(), [1.0, -2.0, 3.0]);
    let loaded = classes::load(&classes::save(&q).unwrap()).unwrap();
    assert_eq!(front(&loaded).to_vec::<f32>().unwrap(), [1.0, -2.0, 3.0]);
}

// What an operator's kernel does inside is not the program's: a fake trace
// runs `for_each_add`'s fake kernel, which calls the fake queue's method,
// and the graph shows only the program's calls (it showed the kernel's
// method call as a `call_torchbind` node, which a rerun applied again).
// Functionalized, the same holds, and the kernel's results stay fakes.
#[test]
fn a_kernels_own_method_calls_are_not_the_programs() {
    use opforge::functionalize::functionalize;
    use opforge::trace::{trace, TracingMode};
    my_ops::queue::register_fakes().unwrap();
    let inc = ones();
    let inputs = [Value::Object(queue()), Value::Tensor(inc.clone())];
    let first = |q: &ScriptObject| front(q).to_vec::<f32>().unwrap();
    for mode in [TracingMode::Real, TracingMode::Fake] {
        let g = trace(add_then_square, &inputs, mode).unwrap();
        assert_eq!(
            g.targets(),
            ["mylib.for_each_add.default", "aten.mul.Tensor"],
            "{mode:?}: {g}"
        );
        // Saved, loaded and rerun on a fresh queue: the effect applies once.
        let g = opforge::trace::Graph::from_json(&g.to_json().unwrap()).unwrap();
        let fresh = queue();
        let before = first(&fresh);
        g.run(&[Value::Object(fresh.clone()), Value::Tensor(inc.clone())])
            .unwrap();
        let after: Vec<f32> = before.iter().map(|x| x + 1.0).collect();
        assert_eq!(first(&fresh), after, "{mode:?}");
    }
    let g = trace(functionalize(add_then_square), &inputs, TracingMode::Fake).unwrap();
    // PyTorch's effect token: the operator through `with_effects`, its new
    // token the graph's first result; the kernel's method call nowhere.
    assert_eq!(
        g.targets(),
        [
            "with_effects",
            "<built-in function getitem>",
            "aten.mul.Tensor"
        ],
        "functionalized: {g}"
    );
}

/// `code` with the graph's inputs named by position (`p0`, `p1`, ...): a
/// program traced from Python names them after its parameters, one traced
/// from Rust `arg0_1`, ... as `make_fx` names a function's `*args`.
fn inputs_by_position(code: &str) -> String {
    let code = code.trim();
    let header = code.lines().next().unwrap_or("");
    let names: Vec<&str> = header
        .trim_start_matches("def forward(self, ")
        .trim_end_matches("):")
        .split(", ")
        .collect();
    let mut out = String::new();
    let mut word = String::new();
    let flush = |word: &mut String, out: &mut String| {
        match names.iter().position(|n| *n == word.as_str()) {
            Some(i) => out.push_str(&format!("p{i}")),
            None => out.push_str(word),
        }
        word.clear();
    };
    for c in code.chars() {
        if c.is_ascii_alphanumeric() || c == '_' {
            word.push(c);
        } else {
            flush(&mut word, &mut out);
            out.push(c);
        }
    }
    flush(&mut word, &mut out);
    out
}

// The README's pattern traced as PyTorch 2.15 traces it
// (`tests/record/queue_graphs/`, a TorchBind class declared as `Queue` is):
// `make_fx` real and fake record the operator and the multiplication (the
// fake kernel's method call is not the program's), and functionalized,
// the operator goes through `with_effects` with the effect token, the
// graph `torch.export(...).run_decompositions()` gives.
#[test]
fn the_queue_patterns_graphs_are_pytorchs() {
    use opforge::functionalize::functionalize;
    use opforge::trace::{trace, TracingMode};
    my_ops::queue::register_fakes().unwrap();
    let inputs = [Value::Object(queue()), Value::Tensor(ones())];
    for (mode, tracing) in [("real", TracingMode::Real), ("fake", TracingMode::Fake)] {
        let g = trace(add_then_square, &inputs, tracing).unwrap();
        assert_eq!(g.targets(), pytorch(mode).0, "{mode}: {g}");
    }
    let g = trace(functionalize(add_then_square), &inputs, TracingMode::Fake).unwrap();
    let (targets, code) = pytorch("export_decomposed");
    assert_eq!(g.targets(), targets, "{g}");
    assert_eq!(
        inputs_by_position(&g.to_string()),
        inputs_by_position(&code),
        "functionalized"
    );
}

// A program calling the queue's methods itself, traced fake: each call is
// a `call_torchbind` node, as in PyTorch 2.15's `make_fx` (the recorded
// `fake_methods` graph; its output is one tensor, ours a list of one, so
// the `return` lines are not compared).
#[test]
fn the_programs_method_calls_are_pytorchs_call_torchbind_nodes() {
    use opforge::trace::{trace, TracingMode};
    my_ops::queue::register_fakes().unwrap();
    let program = |v: &[Value]| {
        let Value::Object(q) = &v[0] else {
            panic!("an object input")
        };
        let inc = v[1].as_tensor().unwrap();
        let square = opforge::torch::mul(inc, inc)?;
        q.call_method("push", &[Value::Tensor(square)])?;
        q.call_method("for_each_add_", &[Value::Tensor(inc.clone())])?;
        Ok(vec![Value::Tensor(opforge::torch::neg(inc)?)])
    };
    let inputs = [Value::Object(queue()), Value::Tensor(ones())];
    let g = trace(program, &inputs, TracingMode::Fake).unwrap();
    let (targets, code) = pytorch("fake_methods");
    assert_eq!(g.targets(), targets, "{g}");
    let body = |code: &str| {
        inputs_by_position(code)
            .lines()
            .filter(|l| !l.trim_start().starts_with("return"))
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    assert_eq!(body(&g.to_string()), body(&code));
}
