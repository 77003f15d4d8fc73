//! Normalization: the `(args, kwargs)` a dispatch-level handler receives, computed
//! from the values bound to one overload's schema (the arguments PyTorch's
//! `Python` key fallback hands `__torch_dispatch__`, `torch/csrc/utils/python_arg_parser.cpp`'s
//! `dispatch_on_subclass` / `torch::jit::createPyObjectForStack`).
//!
//! - positional part: the positional schema arguments up to the last one that is
//!   not equal to its schema default (a trailing run of defaulted positionals is
//!   dropped; an earlier defaulted one stays);
//! - keyword part: every keyword-only argument (out arguments included) that is not
//!   equal to its default, in schema order, under its schema name.
//!
//! Equality is type-tagged like PyTorch's `IValue` equality: `Int 1` ≠ `Float 1.0`
//! ≠ `Bool true`; lists compare element-wise whatever their representation
//! (`IntList` or a `List` of `Int`s); tensors by identity.

use crate::bind::default_value;
use crate::tables::OpSchema;
use crate::tensor::Scalar;
use crate::value::Value;

/// Splits bound values (one per schema argument, as [`crate::bind::bind`] or
/// [`crate::packet`] produce them) into the positional and keyword arguments a
/// `__torch_dispatch__` handler sees.
///
/// ```
/// use opforge::{normalize::normalize, OpId, Value};
/// let s = OpId::from_name("add.Scalar").unwrap().schema();
/// let t = opforge::Tensor::scalar(1.0f32);
/// let (args, kwargs) = normalize(s, &[Value::Tensor(t.clone()), Value::Int(2), Value::Int(1)]);
/// assert_eq!(args.len(), 2); // alpha=1 is the default: dropped
/// let (args, _) = normalize(s, &[Value::Tensor(t), Value::Int(2), Value::Float(1.0)]);
/// assert_eq!(args.len(), 3); // 1.0 is not Int 1
/// assert!(kwargs.is_empty());
/// ```
pub fn normalize(schema: &OpSchema, bound: &[Value]) -> (Vec<Value>, Vec<(&'static str, Value)>) {
    let n = schema.args.len().min(bound.len());
    let k = schema.args[..n]
        .iter()
        .position(|a| a.kwarg_only)
        .unwrap_or(n);
    let is_default =
        |i: usize| default_value(&schema.args[i]).is_some_and(|d| value_eq(&bound[i], &d));
    let mut p = k;
    while p > 0 && is_default(p - 1) {
        p -= 1;
    }
    let mut args = bound[..p].to_vec();
    if schema.varargs && bound.len() > n {
        // `...`: the values past the declared arguments, positional, after
        // every declared one (no keyword-only argument precedes them).
        args = bound[..k].to_vec();
        args.extend_from_slice(&bound[n..]);
    }
    let kwargs = (k..n)
        .filter(|&i| !is_default(i))
        .map(|i| (schema.args[i].name, bound[i].clone()))
        .collect();
    (args, kwargs)
}

/// The elements of a list value, whatever its representation; `None` if `v` is
/// not a list.
pub fn list_items(v: &Value) -> Option<Vec<Value>> {
    Some(match v {
        Value::IntList(xs) => xs.iter().map(|&x| Value::Int(x)).collect(),
        Value::FloatList(xs) => xs.iter().map(|&x| Value::Float(x)).collect(),
        Value::BoolList(xs) => xs.iter().map(|&x| Value::Bool(x)).collect(),
        Value::ScalarList(xs) => xs
            .iter()
            .map(|&x| match x {
                Scalar::Bool(b) => Value::Bool(b),
                Scalar::Int(i) => Value::Int(i),
                Scalar::Float(f) => Value::Float(f),
            })
            .collect(),
        Value::TensorList(xs) => xs.iter().cloned().map(Value::Tensor).collect(),
        Value::OptTensorList(xs) => xs
            .iter()
            .map(|t| t.clone().map_or(Value::None, Value::Tensor))
            .collect(),
        Value::List(xs) => xs.to_vec(),
        _ => return None,
    })
}

/// Type-tagged equality of two values (`IValue` equality): kinds must agree
/// (`Int 1` ≠ `Float 1.0` ≠ `Bool true`), lists element-wise, tensors by identity.
pub fn value_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::None, Value::None) => true,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::Int(x), Value::Int(y)) => x == y,
        (Value::Float(x), Value::Float(y)) => x == y,
        (Value::Str(x), Value::Str(y)) => x == y,
        (Value::Tensor(x), Value::Tensor(y)) => x.is_same(y),
        (Value::DType(x), Value::DType(y)) => x == y,
        (Value::ScalarTypeCode(x), Value::ScalarTypeCode(y)) => x == y,
        (Value::Device(x), Value::Device(y)) => x == y,
        (Value::Layout(x), Value::Layout(y)) => x == y,
        (Value::MemoryFormat(x), Value::MemoryFormat(y)) => x == y,
        _ => match (list_items(a), list_items(b)) {
            (Some(xs), Some(ys)) => {
                xs.len() == ys.len() && xs.iter().zip(&ys).all(|(x, y)| value_eq(x, y))
            }
            _ => false,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tensor::{DType, Device, Tensor};
    use crate::OpId;

    fn t() -> Tensor {
        Tensor::zeros(&[2, 3], DType::Float32, Device::Meta)
    }

    fn schema(name: &str) -> &'static OpSchema {
        OpId::from_name(name).expect(name).schema()
    }

    fn kinds(vs: &[Value]) -> Vec<String> {
        vs.iter()
            .map(|v| match v {
                Value::Tensor(_) => "T".to_string(),
                other => format!("{other:?}"),
            })
            .collect()
    }

    #[test]
    fn add_tensor_alpha() {
        let s = schema("add.Tensor");
        let (x, y) = (t(), t());
        let call = |alpha: Value| {
            normalize(
                s,
                &[Value::Tensor(x.clone()), Value::Tensor(y.clone()), alpha],
            )
        };
        let (a, k) = call(Value::Int(1));
        assert_eq!((a.len(), k.len()), (2, 0));
        let (_, k) = call(Value::Float(1.0));
        assert_eq!(k.len(), 1);
        assert_eq!(k[0].0, "alpha");
        assert!(matches!(k[0].1, Value::Float(x) if x == 1.0));
        let (_, k) = call(Value::Int(2));
        assert!(matches!(k[0].1, Value::Int(2)));
        let (_, k) = call(Value::Bool(true));
        assert!(matches!(k[0].1, Value::Bool(true)));
    }

    #[test]
    fn add_scalar_alpha_is_positional() {
        let s = schema("add.Scalar");
        let x = t();
        let (a, k) = normalize(s, &[Value::Tensor(x.clone()), Value::Int(2), Value::Int(1)]);
        assert_eq!(kinds(&a), ["T", "Int(2)"]);
        assert!(k.is_empty());
        let (a, _) = normalize(s, &[Value::Tensor(x), Value::Int(2), Value::Float(1.0)]);
        assert_eq!(kinds(&a), ["T", "Int(2)", "Float(1.0)"]);
    }

    #[test]
    fn sum_dim_intlist() {
        let s = schema("sum.dim_IntList");
        let x = t();
        let b = |keep: bool, dtype: Value| {
            normalize(
                s,
                &[
                    Value::Tensor(x.clone()),
                    Value::IntList(vec![1]),
                    Value::Bool(keep),
                    dtype,
                ],
            )
        };
        let (a, k) = b(false, Value::None);
        assert_eq!(kinds(&a), ["T", "IntList([1])"]);
        assert!(k.is_empty());
        let (a, _) = b(true, Value::None);
        assert_eq!(kinds(&a), ["T", "IntList([1])", "Bool(true)"]);
        let (a, k) = b(false, Value::DType(DType::Float32));
        assert_eq!(a.len(), 2);
        assert_eq!(k[0].0, "dtype");
        // `int[1]? dim` has no default: None is kept when not trailing.
        let (a, _) = normalize(
            s,
            &[
                Value::Tensor(x.clone()),
                Value::None,
                Value::Bool(true),
                Value::None,
            ],
        );
        assert_eq!(kinds(&a), ["T", "None", "Bool(true)"]);
    }

    #[test]
    fn out_args_are_keywords() {
        let s = schema("neg.out");
        let (x, y) = (t(), t());
        let (a, k) = normalize(s, &[Value::Tensor(x), Value::Tensor(y.clone())]);
        assert_eq!(a.len(), 1);
        assert_eq!(k.len(), 1);
        assert_eq!(k[0].0, "out");
        assert!(matches!(&k[0].1, Value::Tensor(t) if t.is_same(&y)));
    }

    #[test]
    fn lists_compare_elementwise_and_kinds_are_tagged() {
        assert!(value_eq(
            &Value::IntList(vec![1, 1]),
            &Value::List(vec![Value::Int(1), Value::Int(1)].into())
        ));
        assert!(!value_eq(
            &Value::IntList(vec![1]),
            &Value::IntList(vec![1, 1])
        ));
        assert!(!value_eq(&Value::Int(1), &Value::Float(1.0)));
        assert!(!value_eq(&Value::Int(1), &Value::Bool(true)));
        assert!(value_eq(&Value::None, &Value::None));
    }
}
