//! `#[overridable]`: user functions joining the `__torch_function__` protocol
//! (PyTorch's `wrap_torch_function`, `torch/overrides.py`): duck and subclass
//! handlers, modes, the fast path, names and the all-`NotImplemented` error.

use opforge::overrides::{
    push_function_mode, resolve_name, Class, Func, FunctionCall, Handled, TorchFunctionMode,
};
use opforge::value::{FromValue, ToValue};
use opforge::{dispatcher, overridable, Error, Result, Tensor, Value};
use std::cell::Cell;
use std::sync::{Arc, Mutex};

fn t(v: &[f32]) -> Tensor {
    Tensor::from_vec(v.to_vec(), &[v.len()]).unwrap()
}

fn values(x: &Tensor) -> Vec<f32> {
    x.to_vec::<f32>().unwrap()
}

thread_local! {
    /// How often a `Factor` was boxed, and how often a body ran, on this thread.
    static BOXED: Cell<usize> = const { Cell::new(0) };
    static BODY: Cell<usize> = const { Cell::new(0) };
}

/// A user type with a boxed form that counts its boxings: proof that plain calls
/// do not box.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Factor(f64);

impl ToValue for Factor {
    fn to_value(&self) -> Value {
        BOXED.with(|c| c.set(c.get() + 1));
        Value::Float(self.0)
    }
}

impl FromValue<'_> for Factor {
    fn from_value(v: &Value) -> Result<Self> {
        f64::from_value(v).map(Factor)
    }
}

#[dispatcher]
fn scaled_add_dispatcher(
    x: &Tensor,
    bias: Option<&Tensor>,
    k: Factor,
) -> impl IntoIterator<Item = &Tensor> {
    std::iter::once(x).chain(bias)
}

/// `x * k + bias`.
#[overridable(dispatcher = scaled_add_dispatcher)]
pub fn scaled_add(x: &Tensor, bias: Option<&Tensor>, k: Factor) -> Result<Tensor> {
    BODY.with(|c| c.set(c.get() + 1));
    let y = (x * k.0)?;
    match bias {
        Some(b) => &y + b,
        None => Ok(y),
    }
}

mod nested {
    use opforge::{dispatcher, Result, Tensor};

    #[dispatcher]
    pub(crate) fn halves_dispatcher(xs: &[Tensor], _dim: i64) -> &[Tensor] {
        xs
    }

    /// Two results, from a list parameter; the dispatcher lives in another module.
    #[opforge::overridable(dispatcher = crate::nested::halves_dispatcher)]
    pub fn halves(xs: &[Tensor], dim: i64) -> Result<(Tensor, Tensor)> {
        let half = 0.5 + dim as f64;
        Ok(((&xs[0] * half)?.sum()?, (&xs[1] * half)?))
    }
}

/// A duck tensor-like whose handler answers `scaled_add` (and logs what it saw).
fn answering_duck(log: &Arc<Mutex<Vec<String>>>) -> Class {
    let log = log.clone();
    Class::duck("Duck")
        .torch_function(move |_cls, call| {
            let types: Vec<&str> = call.types().iter().map(Class::name).collect();
            let args: Vec<String> = call
                .args()
                .iter()
                .map(|v| v.type_name().to_string())
                .collect();
            log.lock().unwrap().push(format!(
                "{} {types:?} {args:?} {}",
                call.func(),
                call.kwargs().len()
            ));
            if call.func() == scaled_add_func() {
                Ok(Handled::Value(Value::Tensor(t(&[42.0]))))
            } else {
                Ok(Handled::NotImplemented)
            }
        })
        .build()
}

#[test]
fn a_plain_call_runs_the_body_without_boxing() {
    let (boxed, body) = (BOXED.with(Cell::get), BODY.with(Cell::get));
    let y = scaled_add(&t(&[1.0, 2.0]), Some(&t(&[10.0, 20.0])), Factor(3.0)).unwrap();
    assert_eq!(values(&y), [13.0, 26.0]);
    assert_eq!(BOXED.with(Cell::get), boxed);
    assert_eq!(BODY.with(Cell::get), body + 1);
    // A tensor-like the dispatcher does not return is not looked at.
    let (a, b) = nested::halves(&[t(&[2.0, 4.0]), t(&[6.0])], 0).unwrap();
    assert_eq!((values(&a), values(&b)), (vec![3.0], vec![3.0]));
}

#[test]
fn a_duck_handler_intercepts_the_call() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let duck = Tensor::duck(&answering_duck(&log), ()).unwrap();
    let boxed = BOXED.with(Cell::get);
    let body = BODY.with(Cell::get);
    // As `bias` (an optional parameter the dispatcher returns).
    let y = scaled_add(&t(&[1.0]), Some(&duck), Factor(2.0)).unwrap();
    assert_eq!(values(&y), [42.0]);
    assert_eq!(BOXED.with(Cell::get), boxed + 1);
    assert_eq!(BODY.with(Cell::get), body);
    assert_eq!(
        *log.lock().unwrap(),
        [r#"overridable.scaled_add ["Duck"] ["Tensor", "Tensor", "float"] 0"#]
    );
    // The handler saw the arguments as passed, positionally.
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = seen.clone();
    let cls = Class::duck("Recorder")
        .torch_function(move |_, call| {
            assert_eq!(call.func(), scaled_add_func());
            assert!(
                matches!(call.args(), [Value::Tensor(_), Value::None, Value::Float(k)] if *k == 0.5)
            );
            record
                .lock()
                .unwrap()
                .push(call.types()[0].name().to_string());
            Ok(Handled::Value(Value::Tensor(t(&[0.0]))))
        })
        .build();
    let d = Tensor::duck(&cls, ()).unwrap();
    scaled_add(&d, None, Factor(0.5)).unwrap();
    assert_eq!(*seen.lock().unwrap(), ["Recorder"]);
}

#[test]
fn the_default_handler_returns_the_subclass() {
    let sub = Class::subclass("Sub").build();
    let x = t(&[1.0, 2.0]).as_subclass(&sub).unwrap();
    let body = BODY.with(Cell::get);
    let y = scaled_add(&x, None, Factor(2.0)).unwrap();
    assert!(y.is_instance(&sub));
    assert_eq!(values(&y), [2.0, 4.0]);
    assert_eq!(BODY.with(Cell::get), body + 1);
    // Several results: each converted.
    let (a, b) = nested::halves(&[t(&[2.0, 4.0]), x], 0).unwrap();
    assert!(a.is_instance(&sub) && b.is_instance(&sub));
    assert_eq!((values(&a), values(&b)), (vec![3.0], vec![0.5, 1.0]));
    // A handler that logs, then defers to the default.
    let log = Arc::new(Mutex::new(Vec::new()));
    let seen = log.clone();
    let logging = Class::subclass("Logging")
        .torch_function(move |cls, call| {
            seen.lock().unwrap().push(call.func().to_string());
            call.default(cls)
        })
        .build();
    let z = t(&[1.0]).as_subclass(&logging).unwrap();
    let out = scaled_add(&t(&[1.0]), Some(&z), Factor(1.0)).unwrap();
    assert!(out.is_instance(&logging));
    assert_eq!(values(&out), [2.0]);
    // The body's own calls (`x * k`, `y + b`) run with subclass handlers
    // disabled (the default handler's `DisableTorchFunctionSubclass`).
    assert_eq!(*log.lock().unwrap(), ["overridable.scaled_add"]);
}

struct Recorder {
    log: Mutex<Vec<String>>,
    decline: bool,
}

impl TorchFunctionMode for Recorder {
    fn torch_function(&self, call: &FunctionCall<'_>) -> Result<Handled> {
        self.log.lock().unwrap().push(call.func().to_string());
        if self.decline {
            return Ok(Handled::NotImplemented);
        }
        call.call_func().map(Handled::Value)
    }

    fn repr(&self) -> String {
        "<Recorder>".into()
    }
}

#[test]
fn a_function_mode_sees_the_call() {
    let mode = Arc::new(Recorder {
        log: Mutex::new(Vec::new()),
        decline: false,
    });
    let y = {
        let _guard = push_function_mode(mode.clone());
        scaled_add(&t(&[1.0]), Some(&t(&[1.0])), Factor(2.0)).unwrap()
    };
    assert_eq!(values(&y), [3.0]);
    // The body ran inside the handler, with the mode popped: its own calls
    // (`x * k`, `y + b`) went past it.
    assert_eq!(*mode.log.lock().unwrap(), ["overridable.scaled_add"]);
}

#[test]
fn names_signature_and_identity() {
    assert_eq!(resolve_name(scaled_add_func()), "overridable.scaled_add");
    assert_eq!(
        resolve_name(nested::halves_func()),
        "overridable.nested.halves"
    );
    assert_eq!(scaled_add_func(), scaled_add_func());
    assert_ne!(scaled_add_func(), nested::halves_func());
    assert_ne!(scaled_add_func(), Func::named("torch.add").unwrap());
    assert_eq!(scaled_add_func().signature(), "(x, bias=None, k)");
    assert!(!opforge::overrides::is_tensor_method_or_property(
        scaled_add_func()
    ));
}

#[test]
fn boxed_calls_bind_by_name() {
    let f = scaled_add_func();
    let x = Value::Tensor(t(&[1.0]));
    let kw = |n: &str, v: Value| (n.to_string(), v);
    let just_x = [x.clone()];
    let y = f.call(&just_x, &[kw("k", Value::Float(4.0))]).unwrap();
    assert!(matches!(y, Value::Tensor(ref y) if values(y) == [4.0]));
    let err =
        |args: &[Value], kwargs: &[(String, Value)]| f.call(args, kwargs).unwrap_err().to_string();
    assert_eq!(
        err(&just_x, &[]),
        "scaled_add() missing 1 required positional argument: 'k'"
    );
    assert_eq!(
        err(&just_x, &[kw("scale", Value::Float(1.0))]),
        "scaled_add() got an unexpected keyword argument 'scale'"
    );
    assert_eq!(
        err(&just_x, &[kw("x", x.clone())]),
        "scaled_add() got multiple values for argument 'x'"
    );
    assert_eq!(
        err(
            &[x.clone(), Value::None, Value::Float(1.0), Value::None],
            &[]
        ),
        "scaled_add() takes 3 positional arguments but 4 were given"
    );
    assert_eq!(
        err(&[x, Value::None, Value::Str("two".into())], &[]),
        "scaled_add(): argument 'k': expected float, got str"
    );
    // Two results come back as a list.
    let ys = nested::halves_func()
        .call(
            &[Value::TensorList(vec![t(&[2.0]), t(&[4.0])]), Value::Int(0)],
            &[],
        )
        .unwrap();
    assert!(matches!(ys, Value::List(ref v) if v.len() == 2));
}

#[test]
fn all_not_implemented_is_a_type_error() {
    let declining = Class::duck("Declining")
        .torch_function(|_, _| Ok(Handled::NotImplemented))
        .build();
    let d = Tensor::duck(&declining, ()).unwrap();
    let e = scaled_add(&d, None, Factor(1.0)).unwrap_err();
    assert!(matches!(e, Error::Type(_)));
    assert_eq!(
        e.to_string(),
        "no implementation found for 'overridable.scaled_add' on types that implement __torch_function__: [<class '__main__.Declining'>]"
    );
    let mode = Arc::new(Recorder {
        log: Mutex::new(Vec::new()),
        decline: true,
    });
    let _guard = push_function_mode(mode.clone());
    let e = scaled_add(&d, None, Factor(1.0)).unwrap_err();
    assert_eq!(
        e.to_string(),
        "no implementation found for 'overridable.scaled_add' on types that implement __torch_function__: [<class '__main__.Declining'>] nor in mode <Recorder>"
    );
    // A mode alone that declines: no types.
    let e = scaled_add(&t(&[1.0]), None, Factor(1.0)).unwrap_err();
    assert_eq!(
        e.to_string(),
        "no implementation found for 'overridable.scaled_add' on types that implement __torch_function__: [] nor in mode <Recorder>"
    );
}
