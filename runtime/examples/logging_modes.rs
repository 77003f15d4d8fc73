//! The notes' logging modes: `FunctionLog` (a `TorchFunctionMode`) sees the public
//! calls, `DispatchLog` (a `TorchDispatchMode`) the operators that reach the
//! dispatcher's `Python` key, with normalized arguments. Plus the dispatch-level
//! `LoggingTensor`: a wrapper subclass logging the operators run on it.
//!
//! Run: `cargo run -p opforge --example logging_modes`.

use opforge::overrides::{
    map_tensors, push_dispatch_mode, push_function_mode, resolve_name, Class, DispatchCall,
    FunctionCall, Handled, TorchDispatchMode, TorchFunctionMode,
};
use opforge::{torch, Result, Tensor};
use std::sync::{Arc, Mutex};

/// Logs every overridable call, then runs it.
#[derive(Default)]
struct FunctionLog(Mutex<Vec<String>>);

impl TorchFunctionMode for FunctionLog {
    fn torch_function(&self, call: &FunctionCall<'_>) -> Result<Handled> {
        self.0.lock().expect("log lock").push(format!(
            "Function Log: {}(*{:?}, **{:?})",
            resolve_name(call.func()),
            call.args(),
            call.kwargs()
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
            "Dispatch Log: {}(*{:?}, **{:?})",
            call.func(),
            call.args(),
            call.kwargs()
        ));
        call.call_func().map(Handled::Value)
    }
}

/// The notes' `f`, without autograd (this runtime has none yet).
fn f() -> Result<Tensor> {
    let a = torch::ones(&[10])?;
    let b = (&a * 2.0)?;
    b.sum()
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
                "Function Log: torch.ones",
                "Function Log: torch.Tensor.mul",
                "Function Log: torch.Tensor.sum"
            ]
        );
    }

    #[test]
    fn dispatch_mode_sees_operators() {
        let log = dispatch_log().unwrap();
        let names: Vec<&str> = log.iter().map(|l| l.split('(').next().unwrap()).collect();
        assert_eq!(
            names,
            [
                "Dispatch Log: aten.ones.default",
                "Dispatch Log: aten.mul.Scalar",
                "Dispatch Log: aten.sum.default"
            ]
        );
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
        assert!(log[0].starts_with("aten.mul.Scalar("), "{log:?}");
        assert!(log[1].starts_with("aten.sum.default("), "{log:?}");
    }
}
