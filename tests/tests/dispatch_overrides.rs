//! The dispatch-level protocol (`__torch_dispatch__`): dispatch modes, subclass
//! handlers at the `Python` key, wrapper subclasses, operator handles
//! (PyTorch's `torch/utils/_python_dispatch.py`).

use opforge::dispatch::DispatchKey;
use opforge::overrides::{
    self, map_tensors, ops as op_ns, push_dispatch_mode, Class, DispatchCall, Handled,
    TorchDispatchMode,
};
use opforge::{ops, torch, Scalar, Tensor, Value};
use std::sync::{Arc, Mutex};

type Log = Arc<Mutex<Vec<String>>>;

fn t(v: &[f32]) -> Tensor {
    Tensor::from_vec(v.to_vec(), &[v.len()]).unwrap()
}

struct Recorder {
    label: &'static str,
    log: Log,
    decline: bool,
}

fn show(call: &DispatchCall<'_>) -> String {
    let args: Vec<&str> = call.args().iter().map(Value::type_name).collect();
    let kwargs: Vec<&str> = call.kwargs().iter().map(|(k, _)| k.as_str()).collect();
    format!("{} {args:?} {kwargs:?}", call.func())
}

impl TorchDispatchMode for Recorder {
    fn torch_dispatch(&self, call: &DispatchCall<'_>) -> opforge::Result<Handled> {
        self.log
            .lock()
            .unwrap()
            .push(format!("{} {}", self.label, show(call)));
        // A declining recorder declines calls that involve subclasses only.
        if self.decline && !call.types().is_empty() {
            return Ok(Handled::NotImplemented);
        }
        call.call_func().map(Handled::Value)
    }

    fn repr(&self) -> String {
        format!("{}-mode", self.label)
    }
}

fn recorder(label: &'static str, log: &Log) -> Arc<Recorder> {
    Arc::new(Recorder {
        label,
        log: log.clone(),
        decline: false,
    })
}

#[test]
fn modes_see_normalized_calls_after_decomposition_innermost_first() {
    let log: Log = Default::default();
    let a = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[2, 2]).unwrap();
    {
        let _outer = push_dispatch_mode(recorder("outer", &log));
        let _inner = push_dispatch_mode(recorder("inner", &log));
        // Default alpha is dropped; a non-default one is a kwarg.
        ops::add_Tensor(&a, &a, Scalar::Int(1)).unwrap();
        ops::add_Tensor(&a, &a, Scalar::Int(2)).unwrap();
        // matmul is CompositeImplicitAutograd: only its constituent reaches Python.
        a.matmul(&a).unwrap();
        // A factory arrives intact.
        torch::zeros(&[2]).unwrap();
    }
    let log = log.lock().unwrap();
    assert_eq!(
        log[..4],
        [
            r#"inner aten.add.Tensor ["Tensor", "Tensor"] []"#,
            r#"outer aten.add.Tensor ["Tensor", "Tensor"] []"#,
            r#"inner aten.add.Tensor ["Tensor", "Tensor"] ["alpha"]"#,
            r#"outer aten.add.Tensor ["Tensor", "Tensor"] ["alpha"]"#,
        ]
    );
    assert!(
        log.iter().any(|l| l.starts_with("inner aten.mm.default")),
        "{log:?}"
    );
    assert!(!log.iter().any(|l| l.contains("matmul")), "{log:?}");
    assert!(
        log.iter()
            .any(|l| l.starts_with("inner aten.zeros.default")),
        "{log:?}"
    );
    assert!(overrides::dispatch_mode_stack().is_empty());
}

/// The logging wrapper subclass of PyTorch's subclass examples: holds the real tensor, logs every aten call,
/// unwraps, computes and wraps the results.
fn logging_wrapper(log: &Log) -> Class {
    let log = log.clone();
    Class::subclass("LoggingTensor")
        .disable_torch_function()
        .torch_dispatch(move |cls, call| {
            log.lock().unwrap().push(show(call));
            let unwrapped = map_tensors(call.values(), &mut |t| {
                t.payload::<Tensor>().cloned().unwrap_or_else(|| t.clone())
            });
            let out = call.call_with(&unwrapped)?;
            let mut wrap = |r: &Tensor| Tensor::wrapper(cls, r, r.clone()).unwrap();
            Ok(Handled::Value(map_tensors(&[out], &mut wrap).remove(0)))
        })
        .build()
}

fn unwrap(t: &Tensor) -> Tensor {
    t.payload::<Tensor>().cloned().expect("a LoggingTensor")
}

#[test]
fn wrapper_subclasses_work_end_to_end() {
    let log: Log = Default::default();
    let cls = logging_wrapper(&log);
    let inner = Tensor::from_vec(vec![1.0f32, 2.0, 3.0], &[3]).unwrap();
    let w = Tensor::wrapper(&cls, &inner, inner.clone()).unwrap();
    assert!(w.key_set().has(DispatchKey::Python));
    assert_eq!(w.shape(), vec![3]);
    let sum = (&w + &w).unwrap().sum().unwrap();
    assert!(sum.is_instance(&cls));
    assert_eq!(unwrap(&sum).to_vec::<f32>().unwrap(), vec![12.0]);
    let (values, indices) = w.max(0).unwrap();
    assert_eq!(unwrap(&values).to_vec::<f32>().unwrap(), vec![3.0]);
    assert_eq!(unwrap(&indices).to_vec::<i64>().unwrap(), vec![2]);
    // A wrapper mixed with a plain tensor.
    let mixed = torch::mul(&w, &inner).unwrap();
    assert_eq!(unwrap(&mixed).to_vec::<f32>().unwrap(), vec![1.0, 4.0, 9.0]);
    let log = log.lock().unwrap();
    assert_eq!(
        log[..2],
        [
            r#"aten.add.Tensor ["Tensor", "Tensor"] []"#,
            r#"aten.sum.default ["Tensor"] []"#
        ]
    );
    assert!(log.iter().any(|l| l.starts_with("aten.max.dim")), "{log:?}");
    assert!(
        log.iter().any(|l| l.starts_with("aten.mul.Tensor")),
        "{log:?}"
    );
}

#[test]
fn modes_before_subclasses_and_all_declining_is_a_type_error() {
    let log: Log = Default::default();
    let cls = logging_wrapper(&log);
    let inner = t(&[1.0]);
    let w = Tensor::wrapper(&cls, &inner, inner.clone()).unwrap();
    {
        let _m = push_dispatch_mode(Arc::new(Recorder {
            label: "declining",
            log: log.clone(),
            decline: true,
        }));
        // The mode declines; the subclass handles the call, and its inner call on
        // unwrapped tensors reaches the mode again.
        let out = w.neg().unwrap();
        assert_eq!(unwrap(&out).to_vec::<f32>().unwrap(), vec![-1.0]);
    }
    assert_eq!(
        *log.lock().unwrap(),
        [
            r#"declining aten.neg.default ["Tensor"] []"#,
            r#"aten.neg.default ["Tensor"] []"#,
            r#"declining aten.neg.default ["Tensor"] []"#,
        ]
    );
    struct Declines;
    impl TorchDispatchMode for Declines {
        fn torch_dispatch(&self, _: &DispatchCall<'_>) -> opforge::Result<Handled> {
            Ok(Handled::NotImplemented)
        }
        fn repr(&self) -> String {
            "declining-mode".into()
        }
    }
    let _m = push_dispatch_mode(Arc::new(Declines));
    let err = inner.neg().unwrap_err();
    assert_eq!(
        err.to_string(),
        "Multiple dispatch failed for 'torch._ops.aten.neg.default'; all __torch_dispatch__ handlers returned NotImplemented:\n\n  - mode object declining-mode\n\nFor more information, try re-running with TORCH_LOGS=not_implemented"
    );
    assert_eq!(err.python_class(), "TypeError");
}

/// How [`Continue`] goes on from its handler.
#[derive(Clone, Copy)]
enum Next {
    CallFunc,
    Redispatch,
    CallWith,
}

/// A mode that records each call's schema-ordered values and goes on as told.
struct Continue(Next, Log);

impl TorchDispatchMode for Continue {
    fn torch_dispatch(&self, call: &DispatchCall<'_>) -> opforge::Result<Handled> {
        let out = match self.0 {
            Next::CallFunc => call.call_func()?,
            Next::Redispatch => call.redispatch()?,
            Next::CallWith => call.call_with(call.values())?,
        };
        // Asked for after the call: the typed arguments are still there.
        let values: Vec<String> = call.values().iter().map(|v| format!("{v:?}")).collect();
        self.1
            .lock()
            .unwrap()
            .push(format!("{} {}", call.func(), values.join(" ")));
        Ok(Handled::Value(out))
    }
}

#[test]
fn typed_calls_at_the_python_key_keep_their_arguments_results_and_aliasing() {
    for next in [Next::CallFunc, Next::Redispatch, Next::CallWith] {
        let log: Log = Default::default();
        let _m = push_dispatch_mode(Arc::new(Continue(next, log.clone())));
        let a = t(&[1.0, 5.0, 3.0]);
        // A plain result, with a non-default scalar.
        let s = ops::add_Tensor(&a, &a, Scalar::Int(2)).unwrap();
        assert_eq!(s.to_vec::<f32>().unwrap(), [3.0, 15.0, 9.0]);
        // Two results.
        let (v, i) = ops::max_dim(&a, 0, false).unwrap();
        assert_eq!(v.to_vec::<f32>().unwrap(), [5.0]);
        assert_eq!(i.to_vec::<i64>().unwrap(), [1]);
        // In place: the result is the same tensor, and it changed.
        let mut x = t(&[1.0, 2.0, 3.0]);
        let r = ops::add__Tensor(&mut x, &a, Scalar::Int(1)).unwrap();
        assert!(r.is_same(&x));
        assert_eq!(x.to_vec::<f32>().unwrap(), [2.0, 7.0, 6.0]);
        // out=: written into, and returned.
        let mut out = t(&[0.0, 0.0, 0.0]);
        let r = ops::add_out(&a, &a, Scalar::Int(1), &mut out).unwrap();
        assert!(r.is_same(&out));
        assert_eq!(out.to_vec::<f32>().unwrap(), [2.0, 10.0, 6.0]);
        let log = log.lock().unwrap();
        let names: Vec<&str> = log.iter().map(|l| l.split(' ').next().unwrap()).collect();
        assert_eq!(
            names,
            [
                "aten.add.Tensor",
                "aten.max.dim",
                "aten.add_.Tensor",
                "aten.add.out"
            ]
        );
        assert!(log[0].ends_with("Int(2)"), "{}", log[0]);
        // add.out's four values: self, other, alpha, out.
        assert_eq!(log[3].matches("Tensor(").count(), 3, "{}", log[3]);
        assert!(log[3].contains(" Int(1) "), "{}", log[3]);
    }
}

#[test]
fn handlers_returning_for_no_result_ops_must_return_none() {
    struct Bad;
    impl TorchDispatchMode for Bad {
        fn torch_dispatch(&self, _call: &DispatchCall<'_>) -> opforge::Result<Handled> {
            Ok(Handled::Value(Value::Int(1)))
        }
    }
    let _m = push_dispatch_mode(Arc::new(Bad));
    // Any call gets 1 back; for a tensor result that is a conversion error, not a panic.
    assert!(t(&[1.0]).neg().is_err());
}

#[test]
fn op_handles_have_pytorchs_shape() {
    let aten = op_ns("aten");
    let add = aten.packet("add").unwrap();
    assert_eq!(add.to_string(), "aten.add");
    assert_eq!(format!("{add:?}"), "<OpOverloadPacket(op='aten.add')>");
    assert!(add.overloads().contains(&"Tensor"));
    let tensor = add.overload("Tensor").unwrap();
    assert_eq!(tensor.to_string(), "aten.add.Tensor");
    assert_eq!(
        format!("{tensor:?}"),
        "<OpOverload(op='aten.add', overload='Tensor')>"
    );
    assert_eq!(tensor.qualified_name(), "aten::add.Tensor");
    assert!(std::ptr::eq(tensor.overloadpacket(), add));
    assert!(std::ptr::eq(tensor, add.overload("Tensor").unwrap()));
    assert!(!tensor.is_view());
    assert!(aten
        .packet("view")
        .unwrap()
        .overload("default")
        .unwrap()
        .is_view());
    assert!(tensor.has_kernel_for_dispatch_key(DispatchKey::CPU));
    assert_eq!(
        aten.packet("foo").unwrap_err().to_string(),
        "'_OpNamespace' 'aten' object has no attribute 'foo'"
    );
    assert_eq!(
        add.overload("foo").unwrap_err().to_string(),
        "The underlying op of 'aten.add' has no overload name 'foo'"
    );
    // Calling a packet resolves among its overloads; a handle binds its own schema.
    let a = t(&[1.0, 2.0]);
    let out = add
        .call(&[Value::Tensor(a.clone()), Value::Int(3)], &[])
        .unwrap();
    assert_eq!(
        out.as_tensor().unwrap().to_vec::<f32>().unwrap(),
        vec![4.0, 5.0]
    );
    let abs = aten.packet("abs").unwrap().overload("default").unwrap();
    assert_eq!(abs.to_string(), "aten.abs.default");
    let out = abs
        .call(&[], &[("self".into(), Value::Tensor(t(&[-1.0])))])
        .unwrap();
    assert_eq!(out.as_tensor().unwrap().to_vec::<f32>().unwrap(), vec![1.0]);
}

#[opforge::op("ovtest::scale(Tensor x, float k=1.0) -> Tensor")]
fn scale(x: &Tensor, k: f64) -> opforge::Result<Tensor> {
    x * k
}

struct FunctionRecorder(Log);

impl overrides::TorchFunctionMode for FunctionRecorder {
    fn torch_function(&self, call: &overrides::FunctionCall<'_>) -> opforge::Result<Handled> {
        self.0.lock().unwrap().push(call.func().to_string());
        call.call_func().map(Handled::Value)
    }
}

#[test]
fn custom_operators_get_modes_subclasses_and_handles_like_built_ins() {
    let log: Log = Default::default();
    let x = t(&[1.0, 2.0]);
    {
        let _f = overrides::push_function_mode(Arc::new(FunctionRecorder(log.clone())));
        let _d = push_dispatch_mode(recorder("d", &log));
        let y = scale(&x, 3.0).unwrap();
        assert_eq!(y.to_vec::<f32>().unwrap(), vec![3.0, 6.0]);
        let packet = op_ns("ovtest").packet("scale").unwrap();
        let z = packet.call(&[Value::Tensor(x.clone())], &[]).unwrap();
        assert_eq!(
            z.as_tensor().unwrap().to_vec::<f32>().unwrap(),
            vec![1.0, 2.0]
        );
    }
    assert_eq!(
        *log.lock().unwrap(),
        [
            "ovtest.scale.default",
            r#"d ovtest.scale.default ["Tensor", "float"] []"#,
            "ovtest.scale",
            r#"d ovtest.scale.default ["Tensor"] []"#,
        ]
    );
    // A wrapper subclass handles a custom operator at the Python key.
    log.lock().unwrap().clear();
    let cls = logging_wrapper(&log);
    let w = Tensor::wrapper(&cls, &x, x.clone()).unwrap();
    let out = scale(&w, 2.0).unwrap();
    assert_eq!(unwrap(&out).to_vec::<f32>().unwrap(), vec![2.0, 4.0]);
    assert_eq!(
        *log.lock().unwrap(),
        [r#"ovtest.scale.default ["Tensor", "float"] []"#]
    );
}

// `library::call` is `torch.ops.<ns>.<name>(…)`: a function mode sees the
// packet (`aten.abs`) or, with an overload name, the overload
// (`aten.abs.default`), for a custom operator and a built-in one alike, as
// PyTorch 2.15's modes do; what the mode returns is the call's result.
#[test]
fn library_calls_reach_function_modes() {
    let log: Log = Default::default();
    let x = Value::Tensor(t(&[-1.0, 2.0]));
    {
        let _f = overrides::push_function_mode(Arc::new(FunctionRecorder(log.clone())));
        let out = opforge::library::call("ovtest::scale", std::slice::from_ref(&x), &[]).unwrap();
        assert_eq!(out.len(), 1);
        let out = opforge::library::call("aten::abs", std::slice::from_ref(&x), &[]).unwrap();
        let [Value::Tensor(a)] = &out[..] else {
            panic!("{out:?}")
        };
        assert_eq!(a.to_vec::<f32>().unwrap(), [1.0, 2.0]);
        opforge::library::call("aten::abs.default", std::slice::from_ref(&x), &[]).unwrap();
        let k = ("k".to_string(), Value::Float(2.0));
        opforge::library::call("ovtest::scale.default", std::slice::from_ref(&x), &[k]).unwrap();
        // Two returns come back as two values.
        let out =
            opforge::library::call("aten::max.dim", &[x.clone(), Value::Int(0)], &[]).unwrap();
        assert_eq!(out.len(), 2);
    }
    assert_eq!(
        *log.lock().unwrap(),
        [
            "ovtest.scale",
            "aten.abs",
            "aten.abs.default",
            "ovtest.scale.default",
            "aten.max.dim"
        ]
    );
    // A mode that answers for the operator replaces its result.
    struct Answer;
    impl overrides::TorchFunctionMode for Answer {
        fn torch_function(&self, _: &overrides::FunctionCall<'_>) -> opforge::Result<Handled> {
            Ok(Handled::Value(Value::Int(7)))
        }
    }
    let _a = overrides::push_function_mode(Arc::new(Answer));
    let out = opforge::library::call("aten::abs", &[x], &[]).unwrap();
    assert!(matches!(out[..], [Value::Int(7)]), "{out:?}");
}

#[test]
fn numbers_for_tensors_reach_kernels_as_wrapped_numbers_and_handlers_as_numbers() {
    let i = Tensor::from_vec(vec![1i32, 2], &[2]).unwrap();
    let table = opforge::argparse::ApiTable::builtin();
    let api = |args: Vec<Value>| {
        opforge::overrides::call_dispatch(&table, "torch.add", args, Vec::<(String, Value)>::new())
            .unwrap()
            .remove(0)
    };
    // A wrapped float joins an int tensor as the default float dtype (not float64).
    let r = api(vec![Value::Tensor(i.clone()), Value::Float(2.5)]);
    let r = r.as_tensor().unwrap();
    assert_eq!(r.dtype(), opforge::DType::Float32);
    assert_eq!(r.to_vec::<f32>().unwrap(), [3.5, 4.5]);
    // A wrapped int does not widen int32.
    let r = api(vec![Value::Tensor(i.clone()), Value::Int(3)]);
    assert_eq!(r.as_tensor().unwrap().dtype(), opforge::DType::Int32);
    // The same through operator handles.
    let add = op_ns("aten").packet("add").unwrap();
    let r = add
        .overload("Tensor")
        .unwrap()
        .call(&[Value::Tensor(i.clone()), Value::Float(2.5)], &[])
        .unwrap();
    assert_eq!(r.as_tensor().unwrap().dtype(), opforge::DType::Float32);
    // A 0-dim float64 tensor is not a number: it promotes as a tensor.
    let r = api(vec![
        Value::Tensor(i.clone()),
        Value::Tensor(Tensor::scalar(2.5f64)),
    ]);
    assert_eq!(r.as_tensor().unwrap().dtype(), opforge::DType::Float64);
    // A dispatch mode sees the number itself (normalization's view).
    let log: Log = Default::default();
    let _m = push_dispatch_mode(recorder("m", &log));
    api(vec![Value::Tensor(i), Value::Float(2.5)]);
    assert_eq!(
        *log.lock().unwrap(),
        [r#"m aten.add.Tensor ["Tensor", "float"] []"#]
    );
}
