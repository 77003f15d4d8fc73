//! The logging modes of PyTorch's "Extending PyTorch" notes, on their program with autograd:
//! `a = torch.rand(10, requires_grad=True); b = a * 2; b.sum().backward()`.
//! `FunctionLog` (a `TorchFunctionMode`) sees the public calls (`torch.rand`,
//! `Tensor.mul`, `Tensor.sum`, `Tensor.backward` with its keyword arguments);
//! `DispatchLog` (a `TorchDispatchMode`) the operators that reach the
//! dispatcher's `Python` key, with normalized arguments — the forward ones and
//! then what the backward pass runs (`ones_like` for the implicit gradient,
//! `expand` for `sum`'s, `mul` for `mul`'s, `detach` for the leaf's `.grad`).
//! Plus the dispatch-level `LoggingTensor`: a wrapper subclass logging the
//! operators run on it.
//!
//! Run: `cargo run -p opforge --example logging_modes`.

use opforge::argparse::ApiTable;
use opforge::overrides::{
    call_dispatch, map_tensors, push_dispatch_mode, push_function_mode, resolve_name, Class,
    DispatchCall, FunctionCall, Handled, TorchDispatchMode, TorchFunctionMode,
};
use opforge::{Result, Tensor, Value};
use std::sync::{Arc, Mutex};

/// A value as Python prints it in these logs: a wrapped number (the `2` of
/// `a * 2`) as the number, lists in brackets, the rest by `Value`'s `Display`.
fn py(v: &Value) -> String {
    let list = |items: Vec<String>| format!("[{}]", items.join(", "));
    match v {
        Value::Tensor(t) if t.is_wrapped_number() => match t.item() {
            Ok(s) => Value::from(s).to_string(),
            Err(_) => t.to_string(),
        },
        Value::IntList(xs) => list(xs.iter().map(i64::to_string).collect()),
        Value::TensorList(ts) => list(ts.iter().map(|t| py(&Value::Tensor(t.clone()))).collect()),
        Value::List(vs) => list(vs.iter().map(py).collect()),
        Value::MemoryFormat(m) => format!("torch.{}", format!("{m:?}").to_lowercase() + "_format"),
        other => other.to_string(),
    }
}

/// `(a, b)` / `(a,)`: positional arguments as the Python tuple.
fn py_args(args: &[Value]) -> String {
    match args {
        [one] => format!("({},)", py(one)),
        _ => format!("({})", args.iter().map(py).collect::<Vec<_>>().join(", ")),
    }
}

/// `{'k': v}`: keyword arguments as the Python dict (`None` for none at all
/// where Python passes `kwargs=None`).
fn py_kwargs(kwargs: &[(String, Value)], none_if_empty: bool) -> String {
    if kwargs.is_empty() && none_if_empty {
        return "None".into();
    }
    let items: Vec<String> = kwargs
        .iter()
        .map(|(k, v)| format!("'{k}': {}", py(v)))
        .collect();
    format!("{{{}}}", items.join(", "))
}

/// Logs every overridable call, then runs it.
#[derive(Default)]
struct FunctionLog(Mutex<Vec<String>>);

impl TorchFunctionMode for FunctionLog {
    fn torch_function(&self, call: &FunctionCall<'_>) -> Result<Handled> {
        self.0.lock().expect("log lock").push(format!(
            "Function Log: {}(*{}, **{})",
            resolve_name(call.func()),
            py_args(call.args()),
            py_kwargs(call.kwargs(), true)
        ));
        call.call_func().map(Handled::Value)
    }
}

/// Logs every operator at the dispatch level, then runs it.
#[derive(Default)]
struct DispatchLog(Mutex<Vec<String>>);

impl TorchDispatchMode for DispatchLog {
    fn torch_dispatch(&self, call: &DispatchCall<'_>) -> Result<Handled> {
        self.0.lock().expect("log lock").push(format!(
            "Dispatch Log: {}(*{}, **{})",
            call.func(),
            py_args(call.args()),
            py_kwargs(call.kwargs(), false)
        ));
        call.call_func().map(Handled::Value)
    }
}

/// The notes' `f`: `a = torch.rand(10, requires_grad=True); b = a * 2;
/// b.sum().backward()`. `torch.rand` is called as Python calls it (a boxed
/// API call, so `requires_grad=True` is one of its keyword arguments).
fn f() -> Result<Tensor> {
    let rand = call_dispatch(
        &ApiTable::builtin(),
        "torch.rand",
        vec![Value::Int(10)],
        vec![("requires_grad", Value::Bool(true))],
    )?;
    let a = match rand.first() {
        Some(Value::Tensor(t)) => t.clone(),
        other => {
            return Err(opforge::Error::Runtime(
                format!("torch.rand gave {other:?}").into(),
            ))
        }
    };
    let b = (&a * 2)?;
    b.sum()?.backward()?;
    Ok(a)
}

/// A wrapper subclass that logs the operators run on it.
fn logging_tensor(log: Arc<Mutex<Vec<String>>>) -> Class {
    Class::subclass("LoggingTensor")
        .disable_torch_function()
        .torch_dispatch(move |cls, call| {
            log.lock().expect("log lock").push(format!(
                "{}(*{:?}, **{:?})",
                call.func(),
                call.args(),
                call.kwargs()
            ));
            let unwrapped = map_tensors(call.values(), &mut |t| {
                t.payload::<Tensor>().cloned().unwrap_or_else(|| t.clone())
            });
            let out = call.call_with(&unwrapped)?;
            let mut wrap = |r: &Tensor| Tensor::wrapper(cls, r, r.clone()).expect("a subclass");
            Ok(Handled::Value(map_tensors(&[out], &mut wrap).remove(0)))
        })
        .build()
}

fn function_log() -> Result<Vec<String>> {
    let mode = Arc::new(FunctionLog::default());
    {
        let _guard = push_function_mode(mode.clone());
        f()?;
    }
    let log = mode.0.lock().expect("log lock").clone();
    Ok(log)
}

fn dispatch_log() -> Result<Vec<String>> {
    let mode = Arc::new(DispatchLog::default());
    {
        let _guard = push_dispatch_mode(mode.clone());
        f()?;
    }
    let log = mode.0.lock().expect("log lock").clone();
    Ok(log)
}

fn main() -> Result<()> {
    println!("TorchFunctionMode logging:");
    for line in function_log()? {
        println!("{line}");
    }
    println!("TorchDispatchMode logging:");
    for line in dispatch_log()? {
        println!("{line}");
    }
    println!("LoggingTensor (dispatch level):");
    let log = Arc::new(Mutex::new(Vec::new()));
    let cls = logging_tensor(log.clone());
    let x = Tensor::from_vec(vec![1.0f32, 2.0], &[2])?;
    let w = Tensor::wrapper(&cls, &x, x.clone())?;
    let y = (&w * 2.0)?.sum()?;
    for line in log.lock().expect("log lock").iter() {
        println!("{line}");
    }
    if let Some(inner) = y.payload::<Tensor>() {
        println!("result: LoggingTensor wrapping {inner}");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn function_mode_sees_public_calls() {
        let log = function_log().unwrap();
        let names: Vec<&str> = log.iter().map(|l| l.split('(').next().unwrap()).collect();
        assert_eq!(
            names,
            [
                "Function Log: torch.rand",
                "Function Log: torch.Tensor.mul",
                "Function Log: torch.Tensor.sum",
                "Function Log: torch.Tensor.backward"
            ]
        );
        assert!(log[0].contains("requires_grad"), "{}", log[0]);
        assert!(log[1].contains("requires_grad=True"), "{}", log[1]);
        assert!(log[2].contains("grad_fn=<MulBackward0>"), "{}", log[2]);
        for kw in ["gradient", "retain_graph", "create_graph", "inputs"] {
            assert!(log[3].contains(kw), "{kw} not in {}", log[3]);
        }
        assert!(log[3].contains("grad_fn=<SumBackward0>"), "{}", log[3]);
    }

    #[test]
    fn dispatch_mode_sees_operators_and_the_backward_pass() {
        let log = dispatch_log().unwrap();
        let names: Vec<&str> = log.iter().map(|l| l.split('(').next().unwrap()).collect();
        assert_eq!(
            names,
            [
                "Dispatch Log: aten.rand.default",
                "Dispatch Log: aten.mul.Tensor",
                "Dispatch Log: aten.sum.default",
                "Dispatch Log: aten.ones_like.default",
                "Dispatch Log: aten.expand.default",
                "Dispatch Log: aten.mul.Tensor",
                "Dispatch Log: aten.detach.default",
            ]
        );
        assert!(log[1].contains("requires_grad=True"), "{}", log[1]);
        assert!(log[2].contains("grad_fn=<MulBackward0>"), "{}", log[2]);
        assert!(log[3].contains("grad_fn=<SumBackward0>"), "{}", log[3]);
    }

    #[test]
    fn the_gradient_of_a_times_two_is_two() {
        let a = f().unwrap();
        assert_eq!(a.grad().unwrap().to_vec::<f32>().unwrap(), vec![2.0; 10]);
    }

    #[test]
    fn logging_wrapper_subclass() {
        let log = Arc::new(Mutex::new(Vec::new()));
        let cls = logging_tensor(log.clone());
        let x = Tensor::from_vec(vec![1.0f32, 2.0], &[2]).unwrap();
        let w = Tensor::wrapper(&cls, &x, x.clone()).unwrap();
        let y = (&w * 2.0).unwrap().sum().unwrap();
        assert!(y.is_instance(&cls));
        assert_eq!(
            y.payload::<Tensor>().unwrap().to_vec::<f32>().unwrap(),
            vec![6.0]
        );
        let log = log.lock().unwrap();
        assert!(log[0].starts_with("aten.mul.Tensor("), "{log:?}");
        assert!(log[1].starts_with("aten.sum.default("), "{log:?}");
    }
}
