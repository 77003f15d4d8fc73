//! Binding a boxed call to a schema: positional and keyword [`Value`]s become one
//! value per schema argument, converted to the schema's type (a list of ints
//! becomes an `int[]`, an int passed for a `float` becomes a float, a single int
//! for `int[2]` is repeated) with schema defaults filled in.

use crate::error::{Error, Result};
use crate::tables::{ArgSchema, BaseType, DefaultVal, OpSchema, Ty};
use crate::tensor::{DType, Device, Layout, MemoryFormat, Scalar};
use crate::value::Value;
use opforge_schema::enums::{self, EnumKind};

/// Binds `args` and `kwargs` (in call order) to `schema`'s arguments.
///
/// ```
/// use opforge::{bind::bind, OpId, Tensor, Value};
/// let t = Tensor::from_vec(vec![1.0f32], &[1]).unwrap();
/// let s = OpId::from_name("add.Tensor").unwrap().schema();
/// let bound = bind(s, vec![Value::Tensor(t.clone()), Value::Tensor(t)], vec![]).unwrap();
/// assert!(matches!(bound[2], Value::Int(1))); // alpha's default
/// ```
pub fn bind(
    schema: &OpSchema,
    args: Vec<Value>,
    kwargs: Vec<(String, Value)>,
) -> Result<Vec<Value>> {
    let positional = schema.args.iter().filter(|a| !a.kwarg_only).count();
    if args.len() > positional {
        return Err(Error::Type(
            format!(
                "{}() expected at most {positional} positional argument(s) but received {}",
                schema.name,
                args.len()
            )
            .into(),
        ));
    }
    let mut slots: Vec<Option<Value>> = vec![None; schema.args.len()];
    for (i, v) in args.into_iter().enumerate() {
        slots[i] = Some(v);
    }
    for (name, v) in kwargs {
        let Some(i) = schema.args.iter().position(|a| a.name == name) else {
            return Err(Error::Type(
                format!(
                    "{}() got an unexpected keyword argument '{name}'",
                    schema.name
                )
                .into(),
            ));
        };
        if slots[i].is_some() {
            return Err(Error::Type(
                format!(
                    "{}() got multiple values for argument '{name}'",
                    schema.name
                )
                .into(),
            ));
        }
        slots[i] = Some(v);
    }
    schema
        .args
        .iter()
        .zip(slots)
        .map(|(a, v)| match v {
            Some(v) => coerce(&a.ty, v).map_err(|e| arg_error(schema, a, e)),
            None => default_value(a).ok_or_else(|| {
                Error::Type(
                    format!(
                        "{}() is missing value for argument '{}'. Declaration: {}",
                        schema.name, a.name, schema.schema
                    )
                    .into(),
                )
            }),
        })
        .collect()
}

fn arg_error(schema: &OpSchema, a: &ArgSchema, e: Error) -> Error {
    Error::Type(
        format!(
            "{}() Expected a value of type '{}' for argument '{}' but {}.",
            schema.name, a.ty, a.name, e
        )
        .into(),
    )
}

/// The value of an argument's default, converted to its type.
pub fn default_value(a: &ArgSchema) -> Option<Value> {
    let d = a.default?;
    Some(match (a.ty, d.value) {
        (_, DefaultVal::None) => Value::None,
        (ty, v) => default_for(base_of(&ty), &ty, v)?,
    })
}

fn base_of(t: &Ty) -> Ty {
    match t {
        Ty::Optional(inner) => **inner,
        other => *other,
    }
}

fn default_for(t: Ty, full: &Ty, v: DefaultVal) -> Option<Value> {
    Some(match (t, v) {
        (Ty::Base(BaseType::Float), DefaultVal::Int(i)) => Value::Float(i as f64),
        (Ty::Base(BaseType::Float), DefaultVal::Float(x)) => Value::Float(x),
        (Ty::Base(BaseType::Int), DefaultVal::Enum(e)) => {
            Value::Int(enums::by_name(EnumKind::Reduction, e)?.code)
        }
        (Ty::Base(BaseType::ScalarType), DefaultVal::Int(c)) => {
            crate::tensor::DType::from_code(c).map_or(Value::ScalarTypeCode(c), Value::DType)
        }
        (Ty::Base(BaseType::MemoryFormat), DefaultVal::Int(c)) => {
            Value::MemoryFormat(MemoryFormat::from_code(c)?)
        }
        (Ty::Base(BaseType::Layout), DefaultVal::Int(c)) => Value::Layout(Layout::from_code(c)?),
        (_, DefaultVal::Int(i)) if matches!(t, Ty::List(..)) => match t {
            Ty::List(_, Some(n)) => Value::IntList(vec![i; n as usize]),
            _ => return None,
        },
        (_, DefaultVal::Int(i)) => Value::Int(i),
        (_, DefaultVal::Float(x)) => Value::Float(x),
        (_, DefaultVal::Bool(b)) => match t {
            Ty::List(_, Some(n)) => Value::BoolList(vec![b; n as usize]),
            _ => Value::Bool(b),
        },
        (_, DefaultVal::Str(s)) => Value::Str(s.to_string()),
        (Ty::List(elem, _), DefaultVal::List(xs)) => {
            let vals: Vec<Value> = xs
                .iter()
                .map(|x| default_for(*elem, elem, *x))
                .collect::<Option<_>>()?;
            coerce(&t, Value::List(vals.into())).ok()?
        }
        (Ty::Base(BaseType::ScalarType), DefaultVal::Enum(e)) => Value::DType(DType::from_name(e)?),
        (Ty::Base(BaseType::MemoryFormat), DefaultVal::Enum(e)) => {
            Value::MemoryFormat(MemoryFormat::from_name(e)?)
        }
        (Ty::Base(BaseType::Layout), DefaultVal::Enum(e)) => Value::Layout(Layout::from_name(e)?),
        _ => {
            let _ = full;
            return None;
        }
    })
}

fn expected(v: &Value) -> Error {
    Error::Type(format!("instead found type '{}'", v.type_name()).into())
}

/// Converts a value to schema type `t` (see the module docs), or explains why not.
pub fn coerce(t: &Ty, v: Value) -> Result<Value> {
    match (t, v) {
        (Ty::Optional(_), Value::None) => Ok(Value::None),
        (Ty::Optional(inner), v) => coerce(inner, v),
        (Ty::Base(b), v) => coerce_base(*b, v),
        (Ty::List(elem, size), v) => coerce_list(elem, *size, v),
        (Ty::CustomClass(c), Value::Object(o)) if o.qualified_name() == *c => Ok(Value::Object(o)),
        (Ty::CustomClass(c), v) => Err(Error::Type(
            format!(
                "expected an object of __torch__.torch.classes.{c}, got {}",
                v.type_name()
            )
            .into(),
        )),
    }
}

fn coerce_base(b: BaseType, v: Value) -> Result<Value> {
    use BaseType as B;
    Ok(match (b, v) {
        (B::Tensor, v @ Value::Tensor(_)) => v,
        (B::Int | B::SymInt | B::DeviceIndex, Value::Int(i)) => Value::Int(i),
        (B::Float, Value::Float(x)) => Value::Float(x),
        (B::Float, Value::Int(i)) => Value::Float(i as f64),
        (B::Bool, Value::Bool(x)) => Value::Bool(x),
        (B::Scalar, v @ (Value::Int(_) | Value::Float(_) | Value::Bool(_))) => v,
        (B::Scalar, Value::Tensor(t)) if t.dim() == 0 => Value::from(t.item()?),
        (B::Str, v @ Value::Str(_)) => v,
        (B::ScalarType, v @ Value::DType(_)) => v,
        (B::Layout, v @ Value::Layout(_)) => v,
        (B::MemoryFormat, v @ Value::MemoryFormat(_)) => v,
        (B::Generator, v @ Value::Generator(_)) => v,
        (B::Device, v @ Value::Device(_)) => v,
        (B::Device, Value::Str(s)) => Value::Device(Device::from_name(&s).ok_or_else(|| {
            Error::Runtime(
                format!("Expected one of cpu, meta device type at start of device string: {s}")
                    .into(),
            )
        })?),
        (_, v) => return Err(expected(&v)),
    })
}

fn coerce_list(elem: &Ty, size: Option<u32>, v: Value) -> Result<Value> {
    let items = match v {
        Value::List(items) => items.into_vec(),
        Value::Int(i)
            if size.is_some() && matches!(elem, Ty::Base(BaseType::Int | BaseType::SymInt)) =>
        {
            return Ok(Value::IntList(vec![i; size.unwrap_or(1) as usize]));
        }
        v @ (Value::IntList(_)
        | Value::FloatList(_)
        | Value::BoolList(_)
        | Value::ScalarList(_)
        | Value::TensorList(_)
        | Value::OptTensorList(_)) => return Ok(v),
        v => return Err(expected(&v)),
    };
    Ok(match elem {
        Ty::Base(BaseType::Int | BaseType::SymInt) => Value::IntList(each(items, |v| match v {
            Value::Int(i) => Some(i),
            _ => None,
        })?),
        Ty::Base(BaseType::Float) => Value::FloatList(each(items, |v| match v {
            Value::Float(x) => Some(x),
            Value::Int(i) => Some(i as f64),
            _ => None,
        })?),
        Ty::Base(BaseType::Bool) => Value::BoolList(each(items, |v| match v {
            Value::Bool(b) => Some(b),
            _ => None,
        })?),
        Ty::Base(BaseType::Scalar) => Value::ScalarList(each(items, |v| match v {
            Value::Int(i) => Some(Scalar::Int(i)),
            Value::Float(x) => Some(Scalar::Float(x)),
            Value::Bool(b) => Some(Scalar::Bool(b)),
            _ => None,
        })?),
        Ty::Base(BaseType::Tensor) => Value::TensorList(
            items
                .into_iter()
                .map(|v| match v {
                    Value::Tensor(t) => Ok(t),
                    other => Err(expected(&other)),
                })
                .collect::<Result<_>>()?,
        ),
        Ty::Optional(inner) if matches!(**inner, Ty::Base(BaseType::Tensor)) => {
            Value::OptTensorList(
                items
                    .into_iter()
                    .map(|v| match v {
                        Value::Tensor(t) => Ok(Some(t)),
                        Value::None => Ok(None),
                        other => Err(expected(&other)),
                    })
                    .collect::<Result<_>>()?,
            )
        }
        _ => Value::List(items.into()),
    })
}

/// Converts every item with `f`; the first item `f` refuses is the error.
fn each<T>(items: Vec<Value>, f: impl Fn(Value) -> Option<T>) -> Result<Vec<T>> {
    items
        .into_iter()
        .map(|v| {
            let err = expected(&v);
            f(v).ok_or(err)
        })
        .collect()
}
