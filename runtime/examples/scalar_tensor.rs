//! The "Extending PyTorch" notes' `ScalarTensor`: a duck tensor-like (not a
//! tensor) standing for `value * eye(N)`, with an `implements` table of the
//! functions it overrides.
//!
//! Run: `cargo run -p opforge --example scalar_tensor`.

use opforge::overrides::{self, Class, Func, FunctionCall, HandledFunctions};
use opforge::{torch, Result, Scalar, Tensor, Value};
use std::sync::{Arc, OnceLock};

/// The instance data: order `n` and diagonal `value`.
struct ScalarTensor {
    n: usize,
    value: f64,
}

impl ScalarTensor {
    /// `value * torch.eye(N)` as a real tensor.
    fn tensor(&self) -> Tensor {
        let mut v = vec![0.0f32; self.n * self.n];
        for i in 0..self.n {
            v[i * self.n + i] = self.value as f32;
        }
        Tensor::from_vec(v, &[self.n, self.n]).expect("n*n elements")
    }
}

/// The class, built once with its `HANDLED_FUNCTIONS` table.
fn class() -> &'static Class {
    static CLASS: OnceLock<Class> = OnceLock::new();
    CLASS.get_or_init(|| {
        let mut handled = HandledFunctions::new();
        // @implements(torch.mean)
        handled.implements(func("torch.mean"), |call| {
            let s = scalar(&call.args()[0]).expect("types were checked");
            Ok(Value::Float(s.value / s.n as f64))
        });
        // @implements(torch.add): a fast path for two ScalarTensors, else real tensors.
        handled.implements(func("torch.add"), add);
        let handled = Arc::new(handled);
        Class::duck("ScalarTensor")
            .torch_function(move |cls, call| handled.handle(cls, &[], call))
            .repr(|t| {
                let s = t.payload::<ScalarTensor>().expect("a ScalarTensor");
                format!("ScalarTensor(N={}, value={})", s.n, s.value)
            })
            .build()
    })
}

fn func(name: &str) -> Func {
    Func::named(name).expect("a known function")
}

fn scalar(v: &Value) -> Option<&ScalarTensor> {
    v.as_tensor()?.payload::<ScalarTensor>()
}

fn new(n: usize, value: f64) -> Tensor {
    Tensor::duck(class(), ScalarTensor { n, value }).expect("a duck class")
}

fn ensure_tensor(v: &Value) -> Result<Tensor> {
    match (scalar(v), v) {
        (Some(s), _) => Ok(s.tensor()),
        (None, Value::Tensor(t)) => Ok(t.clone()),
        (None, other) => Err(opforge::Error::Type(
            format!("expected a tensor, got {}", other.type_name()).into(),
        )),
    }
}

fn add(call: &FunctionCall<'_>) -> Result<Value> {
    let [input, other] = call.args() else {
        return Err(opforge::Error::Type(
            "add() takes 2 positional arguments".into(),
        ));
    };
    if !call.kwargs().is_empty() {
        return Err(opforge::Error::Type(
            format!(
                "add() got an unexpected keyword argument '{}'",
                call.kwargs()[0].0
            )
            .into(),
        ));
    }
    match (scalar(input), scalar(other)) {
        (Some(a), Some(b)) if a.n == b.n => Ok(Value::Tensor(new(a.n, a.value + b.value))),
        (Some(_), Some(_)) => Err(opforge::Error::Value("Shape mismatch!".into())),
        _ => Ok(Value::Tensor(torch::add(
            &ensure_tensor(input)?,
            &ensure_tensor(other)?,
        )?)),
    }
}

fn main() -> Result<()> {
    let d = new(5, 2.0);
    println!("{d}");
    println!("{}", scalar(&Value::Tensor(d.clone())).unwrap().tensor());
    let mean = overrides::call("torch.mean", &[Value::Tensor(d)], &[])?;
    println!("torch.mean(d) = {mean:?}");
    let s = new(2, 2.0);
    println!("torch.add(s, s) = {}", torch::add(&s, &s)?);
    let t = Tensor::from_vec(vec![1.0f32, 1.0, 1.0, 1.0], &[2, 2])?;
    println!("torch.add(s, t) = {}", torch::add(&s, &t)?);
    let err = overrides::call(
        "torch.add",
        &[Value::Tensor(s.clone()), Value::Tensor(s.clone())],
        &[("alpha".into(), Value::Int(2))],
    )
    .unwrap_err();
    println!("torch.add(s, s, alpha=2): TypeError: {err}");
    let err = torch::mul_scalar(&s, Scalar::Int(3)).unwrap_err();
    println!("torch.mul(s, 3): TypeError: {err}");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_notes_examples() {
        let d = new(5, 2.0);
        assert_eq!(d.to_string(), "ScalarTensor(N=5, value=2)");
        let mean = overrides::call("torch.mean", &[Value::Tensor(d)], &[]).unwrap();
        assert!(matches!(mean, Value::Float(x) if (x - 0.4).abs() < 1e-12));

        let s = new(2, 2.0);
        let ss = torch::add(&s, &s).unwrap();
        assert_eq!(ss.to_string(), "ScalarTensor(N=2, value=4)");

        let t = Tensor::from_vec(vec![1.0f32, 1.0, 1.0, 1.0], &[2, 2]).unwrap();
        let st = torch::add(&s, &t).unwrap();
        assert!(st.is_plain());
        assert_eq!(st.to_vec::<f32>().unwrap(), vec![3.0, 1.0, 1.0, 3.0]);

        // The override does not take alpha.
        let err = overrides::call(
            "torch.add",
            &[Value::Tensor(s.clone()), Value::Tensor(s.clone())],
            &[("alpha".into(), Value::Int(2))],
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "add() got an unexpected keyword argument 'alpha'"
        );

        // Functions not in the table: every handler returned NotImplemented.
        let err = torch::mul_scalar(&s, Scalar::Int(3)).unwrap_err();
        assert_eq!(err.python_class(), "TypeError");
        assert!(err.to_string().starts_with(
            "Multiple dispatch failed for 'torch.mul'; all __torch_function__ handlers returned NotImplemented:\n\n  - tensor subclass <class '__main__.ScalarTensor'>"
        ));
    }
}
