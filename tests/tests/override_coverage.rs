//! Override coverage: every public callable that should go through
//! `__torch_function__` does, and every one listed as ignored does not (spec
//! `overrides.md` A1, A2, A7; PyTorch's `test_overrides.py`).
//!
//! A duck tensor-like records the `func` its handler is asked about and answers
//! `-1` (so typed results fail to convert: only the record matters). Walked:
//! (a) every generated guarded function (`opforge::generated::__coverage`), with
//!     the duck in every tensor slot, and with a plain tensor under a function mode;
//! (b) every overridable function called boxed with the duck for the positional
//!     parameters of its testing stub;
//! (c) the hand-written members and the `std::ops` operators;
//! (d) the boxed API (`call_dispatch`) for every built-in binding;
//! (e) every ignored function, which must never reach a handler and behave as
//!     its [`Ignored`] kind says.
//!
//! Each walk lists every function that skipped the protocol before failing.

// `Func` keys hash and compare by identity; the interior mutability clippy sees
// behind them (operator slots) cannot change a key.
#![allow(clippy::mutable_key_type)]

use opforge::argparse::{call_dispatch, ApiTable};
use opforge::generated::__coverage::ENTRIES;
use opforge::overrides::lists::{
    get_ignored_functions, get_overridable_functions, get_testing_overrides, Ignored, TestingStub,
};
use opforge::overrides::{
    push_function_mode, resolve_name, Class, Func, FunctionCall, Handled, TensorIndex,
    TorchFunctionMode,
};
use opforge::tensor::Buffer;
use opforge::{DType, Device, Result, Scalar, Tensor, Value};
use opforge_schema::signature::parse_sig;
use std::collections::{BTreeMap, HashMap};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Mutex};

/// One handler call: the func, and whether its arguments bind to the func's
/// testing stub (`None` if it has no stub).
type Record = (Func, Option<std::result::Result<(), String>>);

fn stub_check(
    stubs: &HashMap<Func, TestingStub>,
    call: &FunctionCall<'_>,
) -> Option<std::result::Result<(), String>> {
    stubs.get(&call.func()).map(|s| {
        s.call(call.args(), call.kwargs())
            .map(|_| ())
            .map_err(|e| e.to_string())
    })
}

/// A duck tensor-like class whose handler records every call and returns `-1`.
struct Duck {
    class: Class,
    log: Arc<Mutex<Vec<Record>>>,
}

impl Duck {
    fn new() -> Duck {
        let log = Arc::new(Mutex::new(Vec::new()));
        let seen = log.clone();
        let stubs = get_testing_overrides();
        let class = Class::duck("RecordingDuck")
            .torch_function(move |_cls, call| {
                seen.lock()
                    .unwrap()
                    .push((call.func(), stub_check(&stubs, call)));
                Ok(Handled::Value(Value::Int(-1)))
            })
            .build();
        Duck { class, log }
    }

    fn instance(&self) -> Tensor {
        Tensor::duck(&self.class, ()).unwrap()
    }

    /// The calls the handler saw while `f` ran (a panic is reported as a record-less run).
    fn seen(&self, f: impl FnOnce()) -> std::result::Result<Vec<Record>, String> {
        self.log.lock().unwrap().clear();
        catch_unwind(AssertUnwindSafe(f)).map_err(panic_text)?;
        Ok(std::mem::take(&mut *self.log.lock().unwrap()))
    }
}

/// A function mode that records every call and returns `-1`.
struct RecordingMode {
    log: Mutex<Vec<Record>>,
    stubs: HashMap<Func, TestingStub>,
}

impl TorchFunctionMode for RecordingMode {
    fn torch_function(&self, call: &FunctionCall<'_>) -> Result<Handled> {
        let check = stub_check(&self.stubs, call);
        self.log.lock().unwrap().push((call.func(), check));
        Ok(Handled::Value(Value::Int(-1)))
    }
}

/// The calls a recording mode saw while `f` ran with the mode pushed.
fn seen_by_mode(f: impl FnOnce()) -> std::result::Result<Vec<Record>, String> {
    let mode = Arc::new(RecordingMode {
        log: Mutex::new(Vec::new()),
        stubs: get_testing_overrides(),
    });
    {
        let _guard = push_function_mode(mode.clone());
        catch_unwind(AssertUnwindSafe(f)).map_err(panic_text)?;
    }
    let log = std::mem::take(&mut *mode.log.lock().unwrap());
    Ok(log)
}

fn panic_text(p: Box<dyn std::any::Any + Send>) -> String {
    let msg = p
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default();
    format!("panicked: {msg}")
}

fn plain() -> Tensor {
    Tensor::from_vec(vec![1.0f32], &[1]).unwrap()
}

/// Coverage bookkeeping: every check is one function; a function is covered if
/// its handler saw exactly the expected func.
#[derive(Default)]
struct Coverage {
    total: usize,
    failures: Vec<String>,
    /// Handler arguments that do not bind to the func's testing stub.
    stub_mismatches: Vec<String>,
}

impl Coverage {
    fn check(
        &mut self,
        what: &str,
        expected: &str,
        seen: std::result::Result<Vec<Record>, String>,
    ) {
        self.total += 1;
        match seen {
            Err(p) => self.failures.push(format!("{what}: {p}")),
            Ok(records) => {
                let names: Vec<String> = records.iter().map(|(f, _)| resolve_name(*f)).collect();
                if names != [expected] {
                    self.failures.push(format!(
                        "{what}: expected the handler to see [{expected}], it saw {names:?}"
                    ));
                }
                for (f, check) in records {
                    if let Some(Err(e)) = check {
                        self.stub_mismatches.push(format!("{what} ({f}): {e}"));
                    }
                }
            }
        }
    }

    fn finish(self, label: &str) {
        let covered = self.total - self.failures.len();
        println!("override coverage ({label}): {covered}/{}", self.total);
        let mut msg = String::new();
        if !self.failures.is_empty() {
            msg += &format!(
                "{label}: {} of {} functions skipped the protocol:\n  {}\n",
                self.failures.len(),
                self.total,
                self.failures.join("\n  ")
            );
        }
        if !self.stub_mismatches.is_empty() {
            msg += &format!(
                "{label}: {} handler calls whose arguments do not fit the testing stub:\n  {}\n",
                self.stub_mismatches.len(),
                self.stub_mismatches.join("\n  ")
            );
        }
        assert!(msg.is_empty(), "{msg}");
        assert!(self.total > 0);
    }
}

#[test]
fn typed_api_goes_through_the_protocol() {
    let duck = Duck::new();
    let d = duck.instance();
    let p = plain();
    // Control: the unguarded layer is not seen, so a missing guard would show.
    let control = duck.seen(|| drop(opforge::at::neg(&d)));
    assert!(matches!(control.as_deref(), Ok([])), "{control:?}");
    let mut cov = Coverage::default();
    let mut with_duck = 0;
    for e in ENTRIES.iter() {
        if e.tensor_slots > 0 {
            with_duck += 1;
            let seen = duck.seen(|| drop((e.call)(&d)));
            cov.check(&format!("{} (tensor-like)", e.path), e.func, seen);
        }
        // With a plain tensor, only a mode can take the call.
        let seen = seen_by_mode(|| drop((e.call)(&p)));
        cov.check(&format!("{} (mode)", e.path), e.func, seen);
    }
    println!(
        "typed API: {} guarded functions ({with_duck} with tensor slots)",
        ENTRIES.len()
    );
    // Each generated module is in the table.
    for prefix in ["ops::", "torch::", "Tensor::"] {
        assert!(
            ENTRIES.iter().any(|e| e.path.starts_with(prefix)),
            "{prefix}"
        );
    }
    cov.finish("typed API");
}

#[test]
fn overridable_functions_go_through_the_protocol_boxed() {
    let duck = Duck::new();
    let d = duck.instance();
    let stubs = get_testing_overrides();
    let mut cov = Coverage::default();
    for (ns, funcs) in get_overridable_functions() {
        for f in funcs {
            let what = format!("{ns}: {f} (boxed)");
            let Some(stub) = stubs.get(&f) else {
                cov.total += 1;
                cov.failures.push(format!("{what}: no testing stub"));
                continue;
            };
            let n = stub.params.iter().filter(|p| !p.kwarg_only).count();
            let args = vec![Value::Tensor(d.clone()); n];
            let seen = if n > 0 {
                duck.seen(|| drop(f.call(&args, &[])))
            } else {
                seen_by_mode(|| drop(f.call(&[], &[])))
            };
            cov.check(&what, &resolve_name(f), seen);
        }
    }
    cov.finish("overridable, boxed");
}

type MemberCall = fn(&Tensor, &Tensor) -> Result<()>;

/// The hand-written members and operators: (what, expected func, call with
/// (tensor-like, plain tensor)).
#[allow(clippy::eq_op)] // `d - d`: the same tensor-like on both sides
fn member_calls() -> Vec<(&'static str, &'static str, MemberCall)> {
    fn ok<T>(r: Result<T>) -> Result<()> {
        r.map(|_| ())
    }
    vec![
        ("get_shape", "torch.Tensor.shape.__get__", |d, _| {
            ok(d.get_shape())
        }),
        ("get_dtype", "torch.Tensor.dtype.__get__", |d, _| {
            ok(d.get_dtype())
        }),
        ("get_device", "torch.Tensor.device.__get__", |d, _| {
            ok(d.get_device())
        }),
        ("get_ndim", "torch.Tensor.ndim.__get__", |d, _| {
            ok(d.get_ndim())
        }),
        ("get_layout", "torch.Tensor.layout.__get__", |d, _| {
            ok(d.get_layout())
        }),
        ("get_is_meta", "torch.Tensor.is_meta.__get__", |d, _| {
            ok(d.get_is_meta())
        }),
        ("get_t", "torch.Tensor.T.__get__", |d, _| ok(d.get_t())),
        ("get_grad", "torch.Tensor.grad.__get__", |d, _| {
            ok(d.get_grad())
        }),
        ("len_", "torch.Tensor.__len__", |d, _| ok(d.len_())),
        ("repr", "torch.Tensor.__repr__", |d, _| ok(d.repr())),
        ("to_bool", "torch.Tensor.__bool__", |d, _| ok(d.to_bool())),
        ("to_f64", "torch.Tensor.__float__", |d, _| ok(d.to_f64())),
        ("getitem", "torch.Tensor.__getitem__", |d, _| {
            ok(d.getitem(&[TensorIndex::Int(0)]))
        }),
        ("getitem (slice)", "torch.Tensor.__getitem__", |d, _| {
            ok(d.getitem(&[(..).into(), (0..1).into()]))
        }),
        ("setitem (self)", "torch.Tensor.__setitem__", |d, p| {
            d.setitem(&[TensorIndex::Int(0)], p)
        }),
        ("setitem (value)", "torch.Tensor.__setitem__", |d, p| {
            p.setitem(&[TensorIndex::Int(0)], d)
        }),
        ("setitem_scalar", "torch.Tensor.__setitem__", |d, _| {
            d.setitem_scalar(&[TensorIndex::Int(0)], 1.0)
        }),
        ("&d + &d", "torch.Tensor.add", |d, _| ok(d + d)),
        ("&p + &d", "torch.Tensor.add", |d, p| ok(p + d)),
        ("&d + 1.0", "torch.Tensor.add", |d, _| ok(d + 1.0)),
        ("&d - &d", "torch.Tensor.sub", |d, _| ok(d - d)),
        ("&p - &d", "torch.Tensor.sub", |d, p| ok(p - d)),
        ("&d - 1.0", "torch.Tensor.sub", |d, _| ok(d - 1.0)),
        ("&d * &d", "torch.Tensor.mul", |d, _| ok(d * d)),
        ("&p * &d", "torch.Tensor.mul", |d, p| ok(p * d)),
        ("&d * 2", "torch.Tensor.mul", |d, _| ok(d * 2i64)),
        ("&d / &d", "torch.Tensor.div", |d, _| ok(d / d)),
        ("&p / &d", "torch.Tensor.div", |d, p| ok(p / d)),
        ("&d / 2.0", "torch.Tensor.div", |d, _| ok(d / 2.0)),
        ("-&d", "torch.Tensor.neg", |d, _| ok(-d)),
    ]
}

#[test]
fn members_and_operators_go_through_the_protocol() {
    let duck = Duck::new();
    let d = duck.instance();
    let p = plain();
    let mut cov = Coverage::default();
    let calls = member_calls();
    for (what, expected, call) in &calls {
        let seen = duck.seen(|| drop(call(&d, &p)));
        cov.check(&format!("{what} (tensor-like)"), expected, seen);
        let q = plain();
        let seen = seen_by_mode(|| drop(call(&q, &p)));
        cov.check(&format!("{what} (mode)"), expected, seen);
    }
    // Every hand-written member has a typed entry point exercised above.
    for f in &get_overridable_functions()["Tensor"] {
        if let Func::Member(_) = f {
            let name = resolve_name(*f);
            cov.total += 1;
            if !calls.iter().any(|(_, e, _)| *e == name) {
                cov.failures
                    .push(format!("{name}: no typed entry point exercised"));
            }
        }
    }
    cov.finish("members and operators");
}

/// A value the Python parser accepts for a required parameter of type `ty`.
fn api_value(ty: &str, duck: &Tensor) -> Option<Value> {
    Some(match ty.trim_end_matches('?') {
        "Tensor" => Value::Tensor(duck.clone()),
        "TensorList" => Value::TensorList(vec![duck.clone()]),
        "Scalar" => Value::Int(1),
        "int64_t" | "SymInt" => Value::Int(0),
        "double" => Value::Float(1.0),
        "bool" => Value::Bool(false),
        "c10::string_view" => Value::Str("mean".into()),
        "ScalarType" => Value::DType(DType::Float32),
        t if t.starts_with("IntArrayRef") || t.starts_with("SymIntArrayRef") => {
            Value::IntList(vec![1])
        }
        _ => return None,
    })
}

#[test]
fn boxed_api_goes_through_the_protocol() {
    let duck = Duck::new();
    let d = duck.instance();
    let table = ApiTable::builtin();
    let mut cov = Coverage::default();
    for b in opforge::BINDINGS.iter() {
        let what = format!("call_dispatch({})", b.name);
        let expected = b.name.replacen("Tensor.", "torch.Tensor.", 1);
        let method = b.name.starts_with("Tensor.");
        let sigs: Vec<_> = b
            .signatures
            .iter()
            .filter(|s| !s.hidden)
            .filter_map(|s| parse_sig(s.text).ok())
            .collect();
        // A signature with a tensor slot if there is one (methods have `self`).
        let has_tensor = |s: &&opforge_schema::signature::SigString| {
            method
                || s.params
                    .iter()
                    .any(|p| p.default.is_none() && p.ty.starts_with("Tensor"))
        };
        let Some(sig) = sigs.iter().find(has_tensor).or(sigs.first()) else {
            cov.total += 1;
            cov.failures.push(format!("{what}: no usable signature"));
            continue;
        };
        let mut args = Vec::new();
        let mut kwargs = Vec::new();
        if method {
            args.push(Value::Tensor(d.clone()));
        }
        let mut usable = true;
        for p in sig.params.iter().filter(|p| p.default.is_none()) {
            match api_value(&p.ty, &d) {
                Some(v) if p.kwarg_only => kwargs.push((p.name.clone(), v)),
                Some(v) => args.push(v),
                None => usable = false,
            }
        }
        if !usable {
            cov.total += 1;
            cov.failures.push(format!(
                "{what}: no test value for a parameter of {}",
                sig.name
            ));
            continue;
        }
        let seen = if has_tensor(&sig) {
            duck.seen(|| drop(call_dispatch(&table, b.name, args, kwargs)))
        } else {
            // A factory: the duck has no slot; only a mode sees the call.
            let args: Vec<Value> = args;
            seen_by_mode(|| drop(call_dispatch(&table, b.name, args, kwargs)))
        };
        cov.check(&what, &expected, seen);
    }
    cov.finish("boxed API");
}

type IgnoredCall = fn(&Tensor, &Class) -> Result<()>;

/// A call per ignored function, with the duck `d` of class `cls`.
fn ignored_calls() -> BTreeMap<&'static str, IgnoredCall> {
    fn unit<T>(_: T) -> Result<()> {
        Ok(())
    }
    let mut m: BTreeMap<&'static str, IgnoredCall> = BTreeMap::new();
    m.insert("Tensor::from_vec", |_, _| {
        Tensor::from_vec(vec![1.0f32], &[1]).map(drop)
    });
    m.insert("Tensor::scalar", |_, _| unit(Tensor::scalar(1.0f32)));
    m.insert("Tensor::from_scalar", |_, _| {
        unit(Tensor::from_scalar(
            Scalar::Int(1),
            DType::Int64,
            Device::Cpu,
        ))
    });
    m.insert("Tensor::from_buffer", |_, _| {
        unit(Tensor::from_buffer(
            Buffer::zeros(DType::Float32, Device::Cpu, 1),
            &[1],
            DType::Float32,
            Device::Cpu,
        ))
    });
    m.insert("Tensor::from_array", |_, _| {
        unit(Tensor::from_array(plain().to_array::<f32>()?))
    });
    m.insert("Tensor::zeros", |_, _| {
        unit(Tensor::zeros(&[1], DType::Float32, Device::Cpu))
    });
    m.insert("Tensor::full", |_, _| {
        unit(Tensor::full(
            &[1],
            Scalar::Int(1),
            DType::Int64,
            Device::Cpu,
        ))
    });
    m.insert("Tensor::duck", |_, c| Tensor::duck(c, ()).map(drop));
    m.insert("Tensor::shape", |d, _| unit(d.shape()));
    m.insert("Tensor::sizes", |d, _| unit(d.sizes()));
    m.insert("Tensor::strides", |d, _| unit(d.strides()));
    m.insert("Tensor::storage_offset", |d, _| unit(d.storage_offset()));
    m.insert("Tensor::storage", |d, _| unit(d.storage()));
    m.insert("Tensor::geometry", |d, _| unit(d.geometry()));
    m.insert("Tensor::dtype", |d, _| unit(d.dtype()));
    m.insert("Tensor::device", |d, _| unit(d.device()));
    m.insert("Tensor::dim", |d, _| unit(d.dim()));
    m.insert("Tensor::numel", |d, _| unit(d.numel()));
    m.insert("Tensor::is_contiguous", |d, _| unit(d.is_contiguous()));
    m.insert("Tensor::key_set", |d, _| unit(d.key_set()));
    m.insert("Tensor::is_same", |d, _| unit(d.is_same(d)));
    m.insert("Tensor::shares_storage", |d, _| {
        unit(d.shares_storage(&plain()))
    });
    m.insert("Tensor::is_plain", |d, _| unit(d.is_plain()));
    m.insert("Tensor::class", |d, _| unit(d.class()));
    m.insert("Tensor::is_instance", |d, c| unit(d.is_instance(c)));
    m.insert("Tensor::class_attr", |d, _| unit(d.class_attr("a")));
    m.insert("Tensor::payload", |d, _| unit(d.payload::<()>()));
    m.insert("<Tensor as Clone>::clone", |d, _| unit(d.clone()));
    m.insert("<Tensor as Display>::fmt", |d, _| unit(d.to_string()));
    m.insert("Tensor::as_strided", |d, _| {
        d.as_strided(&[0], &[1], 0).map(drop)
    });
    m.insert("Tensor::set_geometry", |d, _| d.set_geometry(d.geometry()));
    m.insert("Tensor::resize_", |d, _| d.resize_(&[2]));
    m.insert("Tensor::fill_scalar", |d, _| {
        d.fill_scalar(Scalar::Int(1));
        Ok(())
    });
    m.insert("Tensor::assign", |d, _| {
        let src = Tensor::zeros(&d.shape(), DType::Float32, Device::Cpu).to_array::<f32>()?;
        d.assign(src.view())
    });
    m.insert("Tensor::deep_clone", |d, _| d.deep_clone().map(drop));
    m.insert("Tensor::to_dtype_copy", |d, _| {
        d.to_dtype_copy(DType::Int64).map(drop)
    });
    m.insert("Tensor::as_subclass", |d, _| {
        d.as_subclass(&Class::subclass("PlainSub").build())
            .map(drop)
    });
    m.insert("Tensor::wrapper", |d, _| {
        Tensor::wrapper(&Class::subclass("Wrapper").build(), d, ()).map(drop)
    });
    m.insert("Tensor::with_view", |d, _| {
        d.with_view::<f32, _>(|v| v.len()).map(drop)
    });
    m.insert("Tensor::to_array", |d, _| d.to_array::<f32>().map(drop));
    m.insert("Tensor::to_vec", |d, _| d.to_vec::<f32>().map(drop));
    m.insert("Tensor::item", |d, _| d.item().map(drop));
    m.insert("overrides::is_tensor_like", |d, _| {
        unit(opforge::overrides::is_tensor_like(d))
    });
    m.insert("overrides::has_torch_function", |d, _| {
        unit(opforge::overrides::has_torch_function([d]))
    });
    m.insert("overrides::collect", |d, _| {
        unit(opforge::overrides::collect([d]))
    });
    m
}

#[test]
fn ignored_functions_never_reach_a_handler() {
    let duck = Duck::new();
    let calls = ignored_calls();
    let mut failures = Vec::new();
    for f in get_ignored_functions() {
        let Some(call) = calls.get(f.name) else {
            failures.push(format!(
                "{}: listed as ignored but not exercised here",
                f.name
            ));
            continue;
        };
        let d = duck.instance();
        let mut out = None;
        match duck.seen(|| out = Some(call(&d, &duck.class))) {
            Err(p) => failures.push(format!("{}: {p}", f.name)),
            Ok(seen) if !seen.is_empty() => {
                let names: Vec<String> = seen.iter().map(|(f, _)| resolve_name(*f)).collect();
                failures.push(format!(
                    "{}: ignored, but the handler saw {names:?}",
                    f.name
                ));
            }
            Ok(_) => {}
        }
        match (f.behaviour, out) {
            (Ignored::NoTensor | Ignored::OwnMetadata, Some(Err(e))) => failures.push(format!(
                "{} ({:?}): failed on a duck: {e}",
                f.name, f.behaviour
            )),
            (Ignored::RejectsDuck, Some(Ok(()))) => {
                failures.push(format!("{} (RejectsDuck): accepted a duck", f.name))
            }
            _ => {}
        }
    }
    for name in calls.keys() {
        if !get_ignored_functions().iter().any(|f| f.name == *name) {
            failures.push(format!("{name}: exercised here but not listed as ignored"));
        }
    }
    println!(
        "ignored functions: {}/{} behave as listed",
        get_ignored_functions().len() - failures.len().min(get_ignored_functions().len()),
        get_ignored_functions().len()
    );
    assert!(
        failures.is_empty(),
        "ignored functions:\n  {}",
        failures.join("\n  ")
    );
}

#[test]
fn every_overridable_function_has_a_binding_stub() {
    let stubs = get_testing_overrides();
    let mut failures = Vec::new();
    let mut n = 0;
    for f in get_overridable_functions().into_values().flatten() {
        n += 1;
        let Some(stub) = stubs.get(&f) else {
            failures.push(format!("{f}: no testing stub"));
            continue;
        };
        if stub.signature == "(*args, **kwargs)" {
            failures.push(format!("{f}: the stub has no real signature"));
        }
        let positional: Vec<Value> = stub
            .params
            .iter()
            .filter(|p| !p.kwarg_only)
            .map(|_| Value::Int(0))
            .collect();
        let required_kw: Vec<(String, Value)> = stub
            .params
            .iter()
            .filter(|p| p.kwarg_only && !p.optional)
            .map(|p| (p.name.clone(), Value::Int(0)))
            .collect();
        match stub.call(&positional, &required_kw) {
            Ok(Value::Int(-1)) => {}
            other => failures.push(format!(
                "{f}{}: own parameters gave {other:?}",
                stub.signature
            )),
        }
        let mut bad = required_kw.clone();
        bad.push(("__not_a_parameter".into(), Value::Int(0)));
        match stub.call(&positional, &bad) {
            Err(e)
                if e.to_string()
                    .contains("unexpected keyword argument '__not_a_parameter'") => {}
            other => failures.push(format!("{f}: unexpected keyword gave {other:?}")),
        }
    }
    assert_eq!(stubs.len(), n, "a stub for something not overridable");
    println!("testing stubs: {}/{n}", n - failures.len());
    assert!(
        failures.is_empty(),
        "testing stubs:\n  {}",
        failures.join("\n  ")
    );
}
