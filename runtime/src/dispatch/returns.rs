//! The check a boxed kernel's results get at the boxed boundary: one value per
//! schema return, each of its return's type, converted where PyTorch converts
//! (an int for a `float`, a list of tensors for a `Tensor[]`), as PyTorch's
//! `toIValue` checks what a Python kernel returns. Typed kernels need no check:
//! `#[kernel]` proves their Rust signature against the schema at compile time;
//! closures (`Kernel::from_closure`: `torch.library` kernels, fake kernels,
//! fallbacks) are checked here.

use super::Operator;
use crate::error::{Error, Result};
use crate::tables::{BaseType, Ty};
use crate::value::Value;

/// `values` as the results of `op`, returned by the kernel registered at
/// `source`: an error naming the operator, the kernel and the return position
/// when their count or a type does not fit the schema.
pub(super) fn check(op: &Operator, source: &str, values: Vec<Value>) -> Result<Vec<Value>> {
    let returns = op.schema.returns;
    // With `...` ending the returns, the values past the declared ones are
    // the kernel's to choose.
    let counted = match op.schema.varret {
        true => values.len() >= returns.len(),
        false => values.len() == returns.len(),
    };
    if !counted {
        return Err(count_error(op, source, values.len()));
    }
    if values.iter().zip(returns).all(|(v, r)| exact(&r.ty, v)) {
        return Ok(values);
    }
    values
        .into_iter()
        .zip(returns)
        .enumerate()
        .map(|(i, (v, r))| {
            if !fits(&r.ty, &v) {
                return Err(type_error(op, source, i, &r.ty, &v));
            }
            convert(&r.ty, v).ok_or_else(|| {
                Error::Runtime(
                    format!(
                        "{}: return {i} of the kernel registered at {source} could not be converted to `{}`",
                        op.qualified_name(),
                        r.ty
                    )
                    .into(),
                )
            })
        })
        .collect()
}

/// Already of type `ty`, as a kernel of `#[kernel]` would return it (the
/// common case: nothing to convert).
fn exact(ty: &Ty, v: &Value) -> bool {
    match (ty, v) {
        (Ty::Base(BaseType::Float), Value::Int(_)) => false,
        (Ty::List(..), Value::List(_)) => false,
        (Ty::Optional(_), Value::None) => true,
        (Ty::Optional(inner), v) => exact(inner, v),
        _ => fits(ty, v),
    }
}

/// Can `v` be a value of schema type `ty` (after [`convert`])?
fn fits(ty: &Ty, v: &Value) -> bool {
    use BaseType as B;
    match (ty, v) {
        (Ty::Optional(_), Value::None) => true,
        (Ty::Optional(inner), v) => fits(inner, v),
        (Ty::Base(b), v) => matches!(
            (b, v),
            (B::Any, _)
                | (B::Tensor, Value::Tensor(_))
                | (B::Int | B::SymInt | B::DeviceIndex, Value::Int(_))
                | (B::Float, Value::Float(_) | Value::Int(_))
                | (B::Bool | B::SymBool, Value::Bool(_))
                | (B::Scalar, Value::Int(_) | Value::Float(_) | Value::Bool(_))
                | (B::Str, Value::Str(_))
                | (B::ScalarType, Value::DType(_) | Value::ScalarTypeCode(_))
                | (B::Layout, Value::Layout(_))
                | (B::MemoryFormat, Value::MemoryFormat(_))
                | (B::Device, Value::Device(_))
                | (B::Generator, Value::Generator(_))
                | (B::Storage, Value::Storage(_))
                | (B::Stream, Value::Stream(_))
                | (B::QScheme, Value::QScheme(_))
        ),
        (Ty::List(elem, _), v) => match (elem, v) {
            (Ty::Base(B::Tensor), Value::TensorList(_))
            | (Ty::Base(B::Int | B::SymInt), Value::IntList(_))
            | (Ty::Base(B::Float), Value::FloatList(_))
            | (Ty::Base(B::Bool), Value::BoolList(_))
            | (Ty::Base(B::Scalar), Value::ScalarList(_)) => true,
            (Ty::Optional(inner), Value::OptTensorList(_)) => {
                matches!(**inner, Ty::Base(B::Tensor))
            }
            (elem, Value::List(items)) => items.iter().all(|x| fits(elem, x)),
            _ => false,
        },
        (Ty::CustomClass(c), Value::Object(o)) => o.qualified_name() == *c,
        (Ty::CustomClass(_), _) => false,
    }
}

/// `v` as a value of type `ty`; `None` only where [`fits`] said no.
fn convert(ty: &Ty, v: Value) -> Option<Value> {
    use BaseType as B;
    Some(match (ty, v) {
        (Ty::Optional(_), Value::None) => Value::None,
        (Ty::Optional(inner), v) => convert(inner, v)?,
        (Ty::Base(B::Float), Value::Int(i)) => Value::Float(i as f64),
        (Ty::List(elem, _), Value::List(items)) => {
            let items = items.into_vec().into_iter();
            match **elem {
                Ty::Base(B::Tensor) => Value::TensorList(
                    items
                        .map(|x| match x {
                            Value::Tensor(t) => Some(t),
                            _ => None,
                        })
                        .collect::<Option<_>>()?,
                ),
                Ty::Optional(Ty::Base(B::Tensor)) => Value::OptTensorList(
                    items
                        .map(|x| match x {
                            Value::Tensor(t) => Some(Some(t)),
                            Value::None => Some(None),
                            _ => None,
                        })
                        .collect::<Option<_>>()?,
                ),
                Ty::Base(B::Int | B::SymInt) => Value::IntList(
                    items
                        .map(|x| match x {
                            Value::Int(i) => Some(i),
                            _ => None,
                        })
                        .collect::<Option<_>>()?,
                ),
                Ty::Base(B::Float) => Value::FloatList(
                    items
                        .map(|x| match x {
                            Value::Float(f) => Some(f),
                            Value::Int(i) => Some(i as f64),
                            _ => None,
                        })
                        .collect::<Option<_>>()?,
                ),
                Ty::Base(B::Bool) => Value::BoolList(
                    items
                        .map(|x| match x {
                            Value::Bool(b) => Some(b),
                            _ => None,
                        })
                        .collect::<Option<_>>()?,
                ),
                ref elem => Value::List(
                    items
                        .map(|x| convert(elem, x))
                        .collect::<Option<Vec<_>>>()?
                        .into(),
                ),
            }
        }
        (ty, v) => {
            if !fits(ty, &v) {
                return None;
            }
            v
        }
    })
}

#[cold]
fn count_error(op: &Operator, source: &str, n: usize) -> Error {
    let name = op.qualified_name();
    let schema = super::registry::qualified_schema(op.schema);
    let m = op.schema.returns.len();
    let values = if n == 1 { "value" } else { "values" };
    if op.schema.varret {
        return Error::Runtime(
            format!(
                "{name}: the kernel registered at {source} returned {n} {values}, but the schema has {m} and more: {schema}"
            )
            .into(),
        );
    }
    if m == 0 {
        return Error::Runtime(format!(
            "Expected the kernel for {name} registered at {source} to return None but it returned something else instead ({n} {values}; the schema returns nothing: {schema})"
        ).into());
    }
    Error::Runtime(
        format!(
            "{name}: the kernel registered at {source} returned {n} {values}, but the schema has {m} {}: {schema}",
            if m == 1 { "return" } else { "returns" }
        )
        .into(),
    )
}

#[cold]
fn type_error(op: &Operator, source: &str, i: usize, ty: &Ty, v: &Value) -> Error {
    // PyTorch's words name the innermost type (`Unable to cast x to Tensor` for
    // a `Tensor?`) and print the value as Python's `str` does.
    let mut base = ty;
    while let Ty::Optional(inner) = base {
        base = inner;
    }
    let mut shown = String::new();
    py_str(v, 0, &mut shown);
    Error::Runtime(
        format!(
            "Unable to cast {shown} to {base}: return {i} of {} (the kernel registered at {source}) is a {}, and the schema returns `{ty}` there: {}",
            op.qualified_name(),
            v.type_name(),
            super::registry::qualified_schema(op.schema)
        )
        .into(),
    )
}

/// `v` as Python's `str` prints it (a string without quotes, a list in
/// brackets), for messages: lists nested deeper than a few levels, or longer
/// than a few items, are elided (a kernel's result may nest without bound).
fn py_str(v: &Value, depth: usize, out: &mut String) {
    const DEPTH: usize = 4;
    const ITEMS: usize = 8;
    let list = |items: &mut dyn Iterator<Item = String>, n: usize, out: &mut String| {
        out.push('[');
        for (i, item) in items.take(ITEMS).enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            out.push_str(&item);
        }
        if n > ITEMS {
            out.push_str(", ...");
        }
        out.push(']');
    };
    match v {
        Value::Str(s) => out.push_str(s),
        Value::List(items) if depth >= DEPTH => {
            out.push_str(if items.is_empty() { "[]" } else { "[...]" })
        }
        Value::List(items) => {
            let mut shown = items.iter().map(|x| {
                let mut s = String::new();
                py_str(x, depth + 1, &mut s);
                s
            });
            list(&mut shown, items.len(), out)
        }
        Value::IntList(xs) => list(&mut xs.iter().map(|x| x.to_string()), xs.len(), out),
        Value::FloatList(xs) => list(&mut xs.iter().map(|x| format!("{x:?}")), xs.len(), out),
        Value::BoolList(xs) => list(
            &mut xs
                .iter()
                .map(|&b| (if b { "True" } else { "False" }).to_string()),
            xs.len(),
            out,
        ),
        Value::TensorList(ts) => list(&mut ts.iter().map(|t| t.to_string()), ts.len(), out),
        other => out.push_str(&other.to_string()),
    }
}
