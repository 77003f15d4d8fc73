//! The function-level protocol (`__torch_function__`): candidates, ordering,
//! NotImplemented, the default handler, subclass propagation, modes, disabling,
//! messages — PyTorch's rules (`torch/overrides.py`).

use opforge::overrides::{
    self, disable_torch_function, disable_torch_function_subclass, enable_current_mode,
    function_mode_stack, push_function_mode, resolve_name, Class, Func, FunctionCall, Handled,
    TensorIndex, TorchFunctionMode,
};
use opforge::{ops, torch, Error, Scalar, Tensor, Value};
use std::sync::{Arc, Mutex};

fn t(v: &[f32]) -> Tensor {
    Tensor::from_vec(v.to_vec(), &[v.len()]).unwrap()
}

type Log = Arc<Mutex<Vec<String>>>;

/// A subclass whose handler logs `(class, func, types)` and calls the default.
fn logging_subclass(name: &str, base: Option<&Class>, log: &Log) -> Class {
    let log = log.clone();
    let label = name.to_string();
    let mut b = Class::subclass(name).torch_function(move |cls, call| {
        let types: Vec<&str> = call.types().iter().map(Class::name).collect();
        log.lock()
            .unwrap()
            .push(format!("{label} {} {types:?}", call.func()));
        call.default(cls)
    });
    if let Some(base) = base {
        b = b.extends(base);
    }
    b.build()
}

#[test]
fn rfc_subtensor_results_keep_the_subclass_and_its_attribute() {
    let sub = Class::subclass("SubTensor")
        .attr("a", Value::Int(1))
        .build();
    let t = t(&[1.0]).as_subclass(&sub).unwrap();
    let plain = Tensor::from_vec(vec![1.0f32], &[1]).unwrap();
    let check = |x: Tensor| {
        assert!(x.is_instance(&sub), "{x:?} is not a SubTensor");
        assert!(matches!(x.class_attr("a"), Some(Value::Int(1))));
    };
    check(t.sum().unwrap()); // method
    check(t.getitem(&[TensorIndex::Int(0)]).unwrap()); // indexing
    check((&t + &plain).unwrap()); // operator, subclass on the left
    check((&plain + &t).unwrap()); // and on the right
    check(torch::add(&plain, &t).unwrap()); // function
    check(t.view(&[1, 1]).unwrap()); // view
    check(ops::mul_Tensor(&t, &plain).unwrap()); // operator handle
    let (values, indices) = t.max(0).unwrap(); // tuple results
    check(values);
    check(indices);
    // `grad` is returned as is (get_default_nowrap_functions).
    assert!(t.get_grad().unwrap().is_none());
    // Non-tensor results are unchanged.
    assert_eq!(t.get_shape().unwrap(), vec![1]);
}

#[test]
fn subclass_before_superclass_else_left_to_right() {
    let log: Log = Default::default();
    let a = logging_subclass("A", None, &log);
    let b = logging_subclass("B", Some(&a), &log);
    let x = t(&[1.0]).as_subclass(&a).unwrap();
    let y = t(&[2.0]).as_subclass(&b).unwrap();
    for (l, r) in [(&x, &y), (&y, &x)] {
        log.lock().unwrap().clear();
        let out = torch::add(l, r).unwrap();
        assert!(out.is_instance(&b));
        // B goes first and accepts (it is a subclass of every type).
        assert_eq!(
            *log.lock().unwrap(),
            [r#"B torch.add ["B", "A"]"#.to_string()]
        );
    }
    // Unrelated classes: left to right; lists are scanned too.
    let c = logging_subclass("C", None, &log);
    let d = logging_subclass("D", None, &log);
    let p = t(&[1.0]).as_subclass(&c).unwrap();
    let q = t(&[1.0]).as_subclass(&d).unwrap();
    log.lock().unwrap().clear();
    let err = torch::cat(&[t(&[0.0]), q.clone(), p.clone()]).unwrap_err();
    assert_eq!(
        *log.lock().unwrap(),
        [
            r#"D torch.cat ["D", "C"]"#.to_string(),
            r#"C torch.cat ["D", "C"]"#.to_string()
        ]
    );
    assert_eq!(
        err.to_string(),
        "Multiple dispatch failed for 'torch.cat'; all __torch_function__ handlers returned NotImplemented:\n\n  - tensor subclass <class '__main__.D'>\n  - tensor subclass <class '__main__.C'>\n\nFor more information, try re-running with TORCH_LOGS=not_implemented"
    );
    assert_eq!(err.python_class(), "TypeError");
}

#[test]
fn two_unrelated_default_subclasses_are_a_type_error() {
    let s = Class::subclass("SubTensor").build();
    let o = Class::subclass("OtherSubTensor").build();
    let a = t(&[0.0]).as_subclass(&s).unwrap();
    let b = t(&[1.0]).as_subclass(&o).unwrap();
    let err = torch::add(&a, &b).unwrap_err();
    assert!(err.to_string().starts_with(
        "Multiple dispatch failed for 'torch.add'; all __torch_function__ handlers returned NotImplemented:\n\n  - tensor subclass <class '__main__.SubTensor'>\n  - tensor subclass <class '__main__.OtherSubTensor'>"
    ));
    // Methods report the method.
    let err = a.add(&b).unwrap_err();
    assert!(err
        .to_string()
        .starts_with("Multiple dispatch failed for 'torch.Tensor.add'"));
    // The most derived class wins when one is a subclass of the other.
    let s2 = Class::subclass("SubTensor2").extends(&s).build();
    let c = t(&[2.0]).as_subclass(&s2).unwrap();
    assert!(torch::add(&c, &a).unwrap().is_instance(&s2));
    assert!(torch::add(&a, &t(&[1.0])).unwrap().is_instance(&s));
}

#[test]
fn disabled_torch_function_behaves_like_a_plain_tensor() {
    let n = Class::subclass("N").disable_torch_function().build();
    let x = t(&[1.0]).as_subclass(&n).unwrap();
    let out = torch::add(&x, &x).unwrap();
    assert!(out.class().is_none());
}

#[test]
fn not_implemented_moves_on_and_handlers_see_args_and_kwargs() {
    let seen: Log = Default::default();
    let s2 = seen.clone();
    let decline = Class::subclass("Declines")
        .torch_function(|_, _| Ok(Handled::NotImplemented))
        .build();
    let accept = Class::subclass("Accepts")
        .torch_function(move |_, call| {
            let args: Vec<String> = call.args().iter().map(|v| v.type_name().into()).collect();
            let kwargs: Vec<&str> = call.kwargs().iter().map(|(k, _)| k.as_str()).collect();
            s2.lock()
                .unwrap()
                .push(format!("{} {args:?} {kwargs:?}", call.func()));
            Ok(Handled::Value(Value::Int(7)))
        })
        .build();
    let x = t(&[1.0]).as_subclass(&decline).unwrap();
    let y = t(&[1.0]).as_subclass(&accept).unwrap();
    // The handler's value comes back through the boxed API unchanged.
    let v = overrides::call(
        "torch.add",
        &[Value::Tensor(x.clone()), Value::Tensor(y.clone())],
        &[("alpha".into(), Value::Int(2))],
    )
    .unwrap();
    assert!(matches!(v, Value::Int(7)));
    // Typed calls pass keyword-only arguments as kwargs, `self` first for methods.
    let _ = ops::add_Tensor(&x, &y, Scalar::Int(2));
    let _ = y.add(&x);
    assert_eq!(
        *seen.lock().unwrap(),
        [
            r#"torch.add ["Tensor", "Tensor"] ["alpha"]"#,
            r#"aten.add.Tensor ["Tensor", "Tensor"] ["alpha"]"#,
            r#"torch.Tensor.add ["Tensor", "Tensor"] []"#,
        ]
    );
}

#[test]
fn as_subclass_shares_data_and_rejects_non_tensor_classes() {
    let sub = Class::subclass("S").build();
    let base = t(&[1.0, 2.0]);
    let s = base.as_subclass(&sub).unwrap();
    assert!(s.shares_storage(&base) && !s.is_same(&base));
    s.setitem(&[TensorIndex::Int(0)], &t(&[5.0]).view(&[]).unwrap())
        .unwrap();
    assert_eq!(base.to_vec::<f32>().unwrap(), vec![5.0, 2.0]);
    let duck = Class::duck("D").build();
    let err = base.as_subclass(&duck).unwrap_err();
    assert_eq!(err.to_string(), "Creating a Tensor subclass from a class that does not inherit from Tensor is not possible. Make sure your class inherits from Tensor.");
}

#[derive(Default)]
struct Recorder {
    label: &'static str,
    log: Log,
    decline: bool,
}

impl TorchFunctionMode for Recorder {
    fn torch_function(&self, call: &FunctionCall<'_>) -> opforge::Result<Handled> {
        let types: Vec<&str> = call.types().iter().map(Class::name).collect();
        self.log.lock().unwrap().push(format!(
            "{} {} {types:?} depth={}",
            self.label,
            call.func(),
            function_mode_stack().len()
        ));
        if self.decline {
            return Ok(Handled::NotImplemented);
        }
        call.call_func().map(Handled::Value)
    }

    fn repr(&self) -> String {
        format!("{}-mode", self.label)
    }
}

#[test]
fn modes_run_innermost_first_and_before_subclasses() {
    let log: Log = Default::default();
    let sub = logging_subclass("Sub", None, &log);
    let x = t(&[1.0]).as_subclass(&sub).unwrap();
    {
        let _outer = push_function_mode(Arc::new(Recorder {
            label: "outer",
            log: log.clone(),
            ..Default::default()
        }));
        let _inner = push_function_mode(Arc::new(Recorder {
            label: "inner",
            log: log.clone(),
            ..Default::default()
        }));
        let out = x.neg().unwrap();
        assert!(out.is_instance(&sub));
        // Factories reach modes only.
        torch::zeros(&[2]).unwrap();
    }
    assert!(function_mode_stack().is_empty());
    assert_eq!(
        *log.lock().unwrap(),
        [
            r#"inner torch.Tensor.neg ["Sub"] depth=1"#,
            r#"outer torch.Tensor.neg ["Sub"] depth=0"#,
            r#"Sub torch.Tensor.neg ["Sub"]"#,
            "inner torch.zeros [] depth=1",
            "outer torch.zeros [] depth=0",
        ]
    );
}

#[test]
fn a_declining_mode_hands_over_and_all_declining_is_a_type_error() {
    let log: Log = Default::default();
    let mode = Arc::new(Recorder {
        label: "declining",
        log: log.clone(),
        decline: true,
    });
    let _g = push_function_mode(mode);
    let err = t(&[1.0]).exp().unwrap_err();
    assert_eq!(
        err.to_string(),
        "Multiple dispatch failed for 'torch.Tensor.exp'; all __torch_function__ handlers returned NotImplemented:\n\n  - mode object declining-mode\n\nFor more information, try re-running with TORCH_LOGS=not_implemented"
    );
    // With a subclass, the mode declines (once: it is not retried) and the
    // subclass takes the call.
    let sub = Class::subclass("S")
        .torch_function(|_, _| Ok(Handled::Value(Value::Int(3))))
        .build();
    let x = t(&[1.0]).as_subclass(&sub).unwrap();
    let v = overrides::call("torch.Tensor.exp", &[Value::Tensor(x)], &[]).unwrap();
    assert!(matches!(v, Value::Int(3)));
    assert_eq!(log.lock().unwrap().len(), 2, "{:?}", log.lock().unwrap());
}

struct Reentrant(Log);

impl TorchFunctionMode for Reentrant {
    fn torch_function(&self, call: &FunctionCall<'_>) -> opforge::Result<Handled> {
        self.0.lock().unwrap().push(call.func().to_string());
        if call.func() == Func::named("torch.Tensor.neg").unwrap() {
            // `with self:` — calls made here are seen again.
            let _again = enable_current_mode();
            let a = call.args()[0].as_tensor().unwrap().clone();
            return Ok(Handled::Value(Value::Tensor(
                opforge::at::mul_Scalar(&a, Scalar::Int(-1)).and_then(|m| m.abs())?,
            )));
        }
        call.call_func().map(Handled::Value)
    }
}

#[test]
fn a_mode_is_off_in_its_handler_unless_reentered() {
    let log: Log = Default::default();
    {
        let _g = push_function_mode(Arc::new(Reentrant(log.clone())));
        t(&[1.0]).neg().unwrap();
    }
    // `at::` is not overridable; the `abs` method called inside is seen again.
    assert_eq!(
        *log.lock().unwrap(),
        ["torch.Tensor.neg", "torch.Tensor.abs"]
    );
}

#[test]
fn disabling_guards() {
    let log: Log = Default::default();
    let sub = logging_subclass("Sub", None, &log);
    let x = t(&[1.0]).as_subclass(&sub).unwrap();
    let _m = push_function_mode(Arc::new(Recorder {
        label: "m",
        log: log.clone(),
        ..Default::default()
    }));
    {
        let _off = disable_torch_function_subclass();
        assert!(x.neg().unwrap().class().is_none());
        assert!(overrides::has_torch_function([&x])); // modes still count
    }
    {
        let _off = disable_torch_function();
        assert!(x.neg().unwrap().class().is_none());
        assert!(!overrides::has_torch_function([&x]));
    }
    // Subclasses are not candidates while disabled: the mode sees no types.
    assert_eq!(*log.lock().unwrap(), ["m torch.Tensor.neg [] depth=0"]);
}

#[test]
fn properties_and_indexing_go_through_the_protocol() {
    let shape_of = Class::subclass("Shapeless")
        .torch_function(|cls, call| {
            if resolve_name(call.func()) == "torch.Tensor.shape.__get__" {
                return Ok(Handled::Value(Value::IntList(vec![42])));
            }
            call.default(cls)
        })
        .build();
    let x = Tensor::from_vec((0..6i64).collect(), &[2, 3])
        .unwrap()
        .as_subclass(&shape_of)
        .unwrap();
    assert_eq!(x.get_shape().unwrap(), vec![42]);
    assert_eq!(x.shape(), vec![2, 3]); // the tensor's own metadata does not dispatch
    let row = x.getitem(&[1.into()]).unwrap();
    assert!(row.is_instance(&shape_of));
    assert_eq!(row.to_vec::<i64>().unwrap(), vec![3, 4, 5]);
    assert_eq!(x.len_().unwrap(), 2);
    assert_eq!(x.get_dtype().unwrap(), opforge::DType::Int64);
}

#[test]
fn a_duck_without_a_handler_for_a_function_is_a_type_error_and_plain_calls_reject_it() {
    let duck = Class::duck("Quack")
        .torch_function(|_, _| Ok(Handled::NotImplemented))
        .build();
    let d = Tensor::duck(&duck, ()).unwrap();
    let err = torch::mul(&d, &t(&[1.0])).unwrap_err();
    assert!(matches!(err, Error::Type(_)));
    assert!(err
        .to_string()
        .contains("  - tensor subclass <class '__main__.Quack'>"));
    // With the protocol off the duck is just not a tensor.
    let _off = disable_torch_function();
    let err = torch::neg(&d).unwrap_err();
    assert_eq!(err.to_string(), "neg(): argument must be Tensor, not Quack");
}

#[test]
fn boxed_calls_collect_ducks_in_any_position_and_convert_subclasses_outside_tensor_ones() {
    let seen: Log = Default::default();
    let log = seen.clone();
    let tl = Class::duck("TL")
        .torch_function(move |cls, call| {
            let types: Vec<&str> = call.types().iter().map(Class::name).collect();
            log.lock()
                .unwrap()
                .push(format!("{} {types:?} {}", call.func(), cls.name()));
            Ok(Handled::Value(Value::Int(7)))
        })
        .build();
    let duck = || Value::Tensor(Tensor::duck(&tl, ()).unwrap());
    let table = opforge::argparse::ApiTable::builtin();
    let a = || Value::Tensor(t(&[1.0, 2.0]));
    let call = |api: &str, args: Vec<Value>, kwargs: Vec<(&str, Value)>| {
        opforge::overrides::call_dispatch(&table, api, args, kwargs)
    };
    // A duck in a Scalar, a bool and a Device position reaches its handler.
    let out = call("torch.add", vec![a(), a()], vec![("alpha", duck())]).unwrap();
    assert!(matches!(out[..], [Value::Int(7)]));
    call("torch.sum", vec![a(), Value::Int(0), duck()], vec![]).unwrap();
    call("torch.zeros", vec![Value::Int(2)], vec![("device", duck())]).unwrap();
    assert_eq!(
        *seen.lock().unwrap(),
        [
            r#"torch.add ["TL"] TL"#,
            r#"torch.sum ["TL"] TL"#,
            r#"torch.zeros ["TL"] TL"#
        ]
    );
    // With the protocol off it is a plain type error, naming the duck's class.
    {
        let _off = disable_torch_function();
        let err = call("torch.add", vec![a(), a()], vec![("alpha", duck())]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "add(): argument 'alpha' must be Number, not TL"
        );
    }
    // A tensor subclass in a Scalar position is converted (`item()`), not
    // collected: its handler is not asked and the result is a plain tensor.
    let asked: Log = Default::default();
    let log = asked.clone();
    let sub = Class::subclass("A")
        .torch_function(move |cls, call| {
            log.lock().unwrap().push(call.func().to_string());
            call.default(cls)
        })
        .build();
    let two = Tensor::scalar(2.0f32).as_subclass(&sub).unwrap();
    let out = call(
        "torch.add",
        vec![a(), a()],
        vec![("alpha", Value::Tensor(two))],
    )
    .unwrap();
    let out = out[0].as_tensor().unwrap();
    assert!(out.is_plain());
    assert_eq!(out.to_vec::<f32>().unwrap(), [3.0, 6.0]);
    assert!(asked.lock().unwrap().is_empty());
    // Not 0-dim: a type error naming the subclass.
    let v = t(&[2.0, 3.0]).as_subclass(&sub).unwrap();
    let err = call(
        "torch.add",
        vec![a(), a()],
        vec![("alpha", Value::Tensor(v))],
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "add(): argument 'alpha' must be Number, not A"
    );
}

#[test]
fn boxed_api_calls_check_arguments_before_handlers() {
    let log: Log = Default::default();
    let _m = push_function_mode(Arc::new(Recorder {
        label: "m",
        log: log.clone(),
        ..Default::default()
    }));
    let table = opforge::argparse::ApiTable::builtin();
    let a = t(&[1.0]);
    let err = opforge::overrides::call_dispatch(
        &table,
        "torch.add",
        vec![Value::Tensor(a.clone())],
        Vec::<(String, Value)>::new(),
    )
    .unwrap_err();
    assert!(err.to_string().contains("add()"), "{err}");
    assert!(log.lock().unwrap().is_empty());
    let out = opforge::overrides::call_dispatch(
        &table,
        "torch.add",
        vec![Value::Tensor(a.clone()), Value::Tensor(a)],
        vec![("alpha", Value::Int(2))],
    )
    .unwrap();
    assert_eq!(
        out[0].as_tensor().unwrap().to_vec::<f32>().unwrap(),
        vec![3.0]
    );
    assert_eq!(*log.lock().unwrap(), ["m torch.add [] depth=0"]);
}

#[test]
fn helpers() {
    let add = Func::named("torch.add").unwrap();
    assert_eq!(resolve_name(add), "torch.add");
    assert!(!overrides::is_tensor_method_or_property(add));
    assert!(overrides::is_tensor_method_or_property(
        Func::named("torch.Tensor.add").unwrap()
    ));
    let grad = Func::named("torch.Tensor.grad.__get__").unwrap();
    assert!(overrides::is_tensor_method_or_property(grad));
    assert_eq!(resolve_name(grad), "torch.Tensor.grad.__get__");
    let op = Func::named("aten.add.Tensor").unwrap();
    assert_eq!(resolve_name(op), "aten.add.Tensor");
    assert_eq!(resolve_name(Func::named("aten.add").unwrap()), "aten.add");
    assert_eq!(
        resolve_name(Func::named("aten.abs.default").unwrap()),
        "aten.abs.default"
    );
    assert!(Func::named("torch.no_such_thing").is_none());
    let plain = t(&[1.0]);
    assert!(overrides::is_tensor_like(&plain));
    assert!(!overrides::has_torch_function([&plain]));
}
