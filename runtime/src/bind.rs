//! Binding a boxed call to a schema: positional and keyword [`Value`]s become one
//! value per schema argument, converted to the schema's type (a list of ints
//! becomes an `int[]`, an int passed for a `float` becomes a float, a single int
//! for `int[2]` is repeated) with schema defaults filled in.

use crate::error::{Error, Result};
use crate::place::{place, Keywords, Limit, Misplaced, Param, Policy, Rules, Source, Taken};
use crate::tables::{ArgSchema, BaseType, DefaultVal, OpSchema, Ty};
use crate::tensor::{DType, Device, Layout, MemoryFormat, Scalar};
use crate::value::Value;
use opforge_schema::enums::{self, EnumKind};

/// Binds `args` and `kwargs` (in call order) to `schema`'s arguments.
///
/// The placement is [`crate::place::place`]'s, in the order of Python's own
/// call binding ([`crate::place::Keywords::First`]): too many positional
/// values, then each keyword in call order (unknown, or given twice), then the
/// arguments in order, each converted ([`coerce`]) or defaulted, or missing.
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
    mut args: Vec<Value>,
    kwargs: Vec<(String, Value)>,
) -> Result<Vec<Value>> {
    // `...`: positional values past the declared arguments go on as they
    // are, after them.
    let extra = match schema.varargs {
        true => {
            let declared = schema.args.iter().filter(|a| !a.kwarg_only).count();
            args.split_off(declared.min(args.len()))
        }
        false => Vec::new(),
    };
    let mut call = Boxed {
        schema,
        out: Vec::with_capacity(schema.args.len()),
        args,
        kwargs,
    };
    place(schema.args, &mut call)?;
    call.out.extend(extra);
    Ok(call.out)
}

impl Param for ArgSchema {
    fn name(&self) -> &str {
        self.name
    }
    fn keyword_only(&self) -> bool {
        self.kwarg_only
    }
    fn has_default(&self) -> bool {
        self.default.is_some()
    }
}

/// [`bind`]'s policy: the call's values, moved into place and converted.
struct Boxed<'s> {
    schema: &'s OpSchema,
    args: Vec<Value>,
    kwargs: Vec<(String, Value)>,
    /// One value per argument placed so far.
    out: Vec<Value>,
}

impl Boxed<'_> {
    fn type_error(&self, msg: std::fmt::Arguments<'_>) -> Error {
        Error::Type(format!("{}() {msg}", self.schema.name).into())
    }
}

impl Policy for Boxed<'_> {
    type Error = Error;

    fn rules(&self) -> Rules {
        let positional = self.schema.args.iter().filter(|a| !a.kwarg_only).count();
        Rules {
            limit: Limit::Positional(positional),
            keywords: Keywords::First,
        }
    }

    type Value = Value;
    type Name = String;

    fn call(&self) -> (&[Value], &[(String, Value)]) {
        (&self.args, &self.kwargs)
    }

    fn given(&mut self, slot: usize, from: Source) -> Result<Taken> {
        let v = match from {
            Source::Positional(i) => &mut self.args[i],
            Source::Keyword(j) => &mut self.kwargs[j].1,
        };
        let v = std::mem::replace(v, Value::None);
        let a = &self.schema.args[slot];
        self.out
            .push(coerce(&a.ty, v).map_err(|e| arg_error(self.schema, a, e))?);
        Ok(Taken::One)
    }

    fn default(&mut self, slot: usize) -> bool {
        match default_value(&self.schema.args[slot]) {
            Some(v) => {
                self.out.push(v);
                true
            }
            None => false,
        }
    }

    #[cold]
    fn misplaced(&mut self, m: Misplaced) -> Error {
        match m {
            // A positional value past the positional arguments is one too
            // many (the schema's keyword-only arguments come last).
            Misplaced::TooMany { .. }
            | Misplaced::KeywordOnly { .. }
            | Misplaced::LeftOver { .. } => {
                let limit = self.schema.args.iter().filter(|a| !a.kwarg_only).count();
                self.type_error(format_args!(
                    "expected at most {limit} positional argument(s) but received {}",
                    self.args.len()
                ))
            }
            Misplaced::Unknown { keyword } => self.type_error(format_args!(
                "got an unexpected keyword argument '{}'",
                self.kwargs[keyword].0
            )),
            Misplaced::Duplicate { keyword, .. } => self.type_error(format_args!(
                "got multiple values for argument '{}'",
                self.kwargs[keyword].0
            )),
            Misplaced::Missing { slot } => self.type_error(format_args!(
                "is missing value for argument '{}'. Declaration: {}",
                self.schema.args[slot].name, self.schema.schema
            )),
            // Not reached: every keyword was checked first.
            Misplaced::Unused => self.type_error(format_args!("got unused keyword arguments")),
        }
    }
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
        (B::Any, v) => v,
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
