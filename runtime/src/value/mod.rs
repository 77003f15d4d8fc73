//! Value: the boxed form of one argument or result, and the conversions between it
//! and the Rust types kernels take (the schema type mapping).
//!
//! | schema type | Rust parameter type | `Value` |
//! |---|---|---|
//! | `Tensor` | `&Tensor` | `Tensor` |
//! | `Tensor(a!)` (written) | `&mut Tensor` | `Tensor` |
//! | `Tensor?` | `Option<&Tensor>` | `Tensor` / `None` |
//! | `Tensor[]` | `&[Tensor]` | `TensorList` |
//! | `Tensor?[]` | `&[Option<Tensor>]` | `OptTensorList` |
//! | `int`, `SymInt`, `DeviceIndex` | `i64` | `Int` |
//! | `int[]`, `int[N]`, `SymInt[]` | `&[i64]` | `IntList` |
//! | `float` | `f64` | `Float` |
//! | `float[]` | `&[f64]` | `FloatList` |
//! | `bool` | `bool` | `Bool` |
//! | `bool[N]` | `&[bool]` | `BoolList` |
//! | `str` | `&str` | `Str` |
//! | `Scalar` | `Scalar` | `Bool` / `Int` / `Float` |
//! | `Scalar[]` | `&[Scalar]` | `ScalarList` |
//! | `ScalarType` | `DType` | `DType` |
//! | `Layout`, `Device`, `MemoryFormat` | `Layout`, `Device`, `MemoryFormat` | same |
//! | `Generator` | `&Generator` | `Generator` |
//! | `Storage` | `&Storage` | `Storage` |
//! | `Stream` | `Stream` | `Stream` |
//! | `SymBool` | `bool` | `Bool` |
//! | `T?` | `Option<T's type>` | `None` or `T`'s value |
//!
//! Returns: `Tensor` → `Tensor`, `Tensor[]` → `Vec<Tensor>`, `()` → `()`,
//! `int`/`SymInt` → `i64`, `float` → `f64`, `bool`/`SymBool` → `bool`,
//! `Scalar` → `Scalar`, `ScalarType` → `DType`, `QScheme` → `QScheme`, and
//! several returns → a tuple of those (`(Tensor, Tensor)`,
//! `(Tensor, Vec<Tensor>)`, `(f64, i64)`, …); kernels return them inside
//! [`crate::Result`]. [`typed`] has the traits the typed API is generic over.

mod object;
pub mod typed;

pub use object::{ObjectClass, ScriptObject};
pub use typed::{Arg, Args, CallWith, RetValue, Returns};

use crate::error::{Error, Result};
use crate::keys::KeySet;
use crate::tensor::{
    DType, Device, Generator, Layout, MemoryFormat, QScheme, Scalar, Storage, Stream, Tensor,
};
use opforge_schema::scalar_type::ScalarType;
use opforge_schema::tables::OpSchema;
use std::fmt;

/// One boxed value: an argument or result of a boxed call (PyTorch's
/// `IValue`). Typed values convert to and from it through the schema type
/// mapping of this module ([`ToValue`], [`FromValue`]).
///
/// ```
/// use opforge::value::{FromValue, ToValue};
/// use opforge::{Tensor, Value};
/// let t = Tensor::from_vec(vec![1.0f32], &[1])?;
/// let v = (&t).to_value();
/// assert_eq!(v.type_name(), "Tensor");
/// let back: &Tensor = FromValue::from_value(&v)?;
/// assert!(back.is_same(&t)); // the same tensor, not a copy
/// let list = Value::IntList(vec![0, 1]);
/// let dims: &[i64] = FromValue::from_value(&list)?;
/// assert_eq!(dims, &[0, 1]);
/// assert!(<i64 as FromValue>::from_value(&Value::Str("x".into())).is_err());
/// # Ok::<(), opforge::Error>(())
/// ```
///
/// The tag is a full word (`repr(u64)`) so that every payload sits at offset 8:
/// moving a `Value` is then four aligned word moves. With a byte tag the small
/// payloads (`bool`, `DType`, …) sit at offset 1 and moves become unaligned
/// 16-byte copies that stall the loads of the tensor pointer that follow.
#[derive(Clone, Debug)]
#[repr(u64)]
pub enum Value {
    /// `None`
    None,
    /// A bool.
    Bool(bool),
    /// An int.
    Int(i64),
    /// A float.
    Float(f64),
    /// A string.
    Str(String),
    /// A tensor.
    Tensor(Tensor),
    /// `int[]`
    IntList(Vec<i64>),
    /// `float[]`
    FloatList(Vec<f64>),
    /// `bool[N]`
    BoolList(Vec<bool>),
    /// `Scalar[]`
    ScalarList(Vec<Scalar>),
    /// `Tensor[]`
    TensorList(Vec<Tensor>),
    /// `Tensor?[]`
    OptTensorList(Vec<Option<Tensor>>),
    /// A heterogeneous list (as a caller passes it, before conversion to a schema
    /// type). Lists nest; a boxed call refuses values nested deeper than
    /// [`MAX_VALUE_DEPTH`], and cloning or dropping one never recurses
    /// ([`ValueList`]).
    List(ValueList),
    /// A dtype.
    DType(DType),
    /// A device.
    Device(Device),
    /// A layout.
    Layout(Layout),
    /// A memory format.
    MemoryFormat(MemoryFormat),
    /// A dtype this runtime has no [`DType`] for (`torch.int8`, `torch.float16`, …),
    /// by its PyTorch `ScalarType` code; it can be bound and normalized, not
    /// computed with. See [`scalar_type_name`].
    ScalarTypeCode(i64),
    /// A random-number generator.
    Generator(Generator),
    /// A storage.
    Storage(Storage),
    /// A stream.
    Stream(Stream),
    /// A quantization scheme.
    QScheme(QScheme),
    /// An instance of a custom class (`torch.ScriptObject`; see
    /// [`crate::classes`]).
    Object(ScriptObject),
    /// An operator overload (PyTorch's `OpOverload`), by its schema: what a
    /// higher-order operator takes as an argument (`with_effects`' `op`).
    /// It prints as PyTorch's graphs print one
    /// (`torch.ops.mylib.for_each_add.default`).
    Op(&'static OpSchema),
}

/// The Python name (without `torch.`) of a PyTorch `ScalarType` code
/// ([`ScalarType::name`]).
pub fn scalar_type_name(code: i64) -> Option<&'static str> {
    ScalarType::from_code(code).map(ScalarType::name)
}

/// The PyTorch `ScalarType` code of a dtype name (`int8` → 1, with or without
/// `torch.`); see [`scalar_type_name`].
pub fn scalar_type_code(name: &str) -> Option<i64> {
    ScalarType::from_name(name).map(ScalarType::code)
}

/// How deep [`Value::List`]s may nest in the arguments of a boxed call
/// ([`check_depth`]). The runtime's walks over arguments (key sets, binding,
/// the override protocols) recurse once per level, so the bound keeps them
/// well inside a 2 MiB worker thread's stack; PyTorch's schema types nest
/// lists at most two deep.
pub const MAX_VALUE_DEPTH: usize = 128;

/// The items of a [`Value::List`]: a `Vec<Value>` (it dereferences to one)
/// whose `clone` and `drop` are iterative, so a list nested however deep never
/// overflows the stack, whatever thread holds it.
///
/// ```
/// use opforge::value::ValueList;
/// use opforge::Value;
/// let l: ValueList = vec![Value::Int(1), Value::Int(2)].into();
/// assert_eq!(l.len(), 2);
/// // A million levels deep: cloned and dropped without recursion.
/// let mut deep = Value::List(ValueList::default());
/// for _ in 0..1_000_000 {
///     deep = Value::List(vec![deep].into());
/// }
/// assert_eq!(deep.clone().depth(), 1_000_001);
/// ```
#[derive(Default)]
pub struct ValueList(Vec<Value>);

impl ValueList {
    /// The items, taken out of the list.
    pub fn into_vec(mut self) -> Vec<Value> {
        std::mem::take(&mut self.0)
    }

    fn is_flat(&self) -> bool {
        !self
            .0
            .iter()
            .any(|v| matches!(v, Value::List(l) if !l.0.is_empty()))
    }
}

impl std::ops::Deref for ValueList {
    type Target = Vec<Value>;
    fn deref(&self) -> &Vec<Value> {
        &self.0
    }
}

impl std::ops::DerefMut for ValueList {
    fn deref_mut(&mut self) -> &mut Vec<Value> {
        &mut self.0
    }
}

impl From<Vec<Value>> for ValueList {
    fn from(v: Vec<Value>) -> ValueList {
        ValueList(v)
    }
}

impl FromIterator<Value> for ValueList {
    fn from_iter<I: IntoIterator<Item = Value>>(iter: I) -> ValueList {
        ValueList(iter.into_iter().collect())
    }
}

impl IntoIterator for ValueList {
    type Item = Value;
    type IntoIter = std::vec::IntoIter<Value>;
    fn into_iter(self) -> Self::IntoIter {
        self.into_vec().into_iter()
    }
}

impl<'a> IntoIterator for &'a ValueList {
    type Item = &'a Value;
    type IntoIter = std::slice::Iter<'a, Value>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

impl Drop for ValueList {
    fn drop(&mut self) {
        if self.is_flat() {
            return;
        }
        // Empty every nested list into one explicit stack before it is dropped,
        // so each drop below sees an empty (or flat) list and never recurses.
        let mut stack = std::mem::take(&mut self.0);
        while let Some(mut v) = stack.pop() {
            if let Value::List(inner) = &mut v {
                stack.append(&mut inner.0);
            }
        }
    }
}

impl Clone for ValueList {
    fn clone(&self) -> ValueList {
        if self.is_flat() {
            return ValueList(self.0.clone());
        }
        // A depth-first copy with an explicit stack of half-built lists.
        struct Frame<'a> {
            items: std::slice::Iter<'a, Value>,
            out: Vec<Value>,
        }
        fn open<'a>(l: &'a ValueList) -> Frame<'a> {
            Frame {
                items: l.0.iter(),
                out: Vec::with_capacity(l.0.len()),
            }
        }
        let mut stack = vec![open(self)];
        loop {
            let top = stack
                .last_mut()
                .expect("the stack holds the list being copied");
            match top.items.next() {
                Some(Value::List(inner)) => stack.push(open(inner)),
                Some(v) => top.out.push(v.clone()),
                None => {
                    let done = ValueList(stack.pop().map(|f| f.out).unwrap_or_default());
                    match stack.last_mut() {
                        Some(parent) => parent.out.push(Value::List(done)),
                        None => return done,
                    }
                }
            }
        }
    }
}

thread_local! {
    /// How deep `Debug` is inside nested lists on this thread.
    static DEBUG_DEPTH: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Prints as the `Vec` would, eliding lists nested deeper than
/// [`MAX_VALUE_DEPTH`] as `[...]` (printing recurses).
impl fmt::Debug for ValueList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let depth = DEBUG_DEPTH.with(|d| d.get());
        if depth >= MAX_VALUE_DEPTH {
            return f.write_str("[...]");
        }
        DEBUG_DEPTH.with(|d| d.set(depth + 1));
        let r = f.debug_list().entries(&self.0).finish();
        DEBUG_DEPTH.with(|d| d.set(depth));
        r
    }
}

/// Checks that no argument of a boxed call nests lists deeper than
/// [`MAX_VALUE_DEPTH`]: an error naming the limit, the argument and the
/// operator (`what`), before any recursive walk over the arguments.
///
/// ```
/// use opforge::value::check_depth;
/// use opforge::Value;
/// let mut v = Value::Int(0);
/// for _ in 0..200 {
///     v = Value::List(vec![v].into());
/// }
/// let e = check_depth("aten::add", &[], &[("alpha".into(), v)]).unwrap_err();
/// assert!(e.to_string().starts_with("aten::add: argument 'alpha' nests lists more than 128 levels deep"));
/// ```
pub fn check_depth(what: &str, args: &[Value], kwargs: &[(String, Value)]) -> Result<()> {
    let too_deep = |v: &Value| matches!(v, Value::List(_)) && v.depth() > MAX_VALUE_DEPTH;
    let culprit = match args.iter().position(too_deep) {
        Some(i) => i.to_string(),
        None => match kwargs.iter().find(|(_, v)| too_deep(v)) {
            Some((k, _)) => format!("'{k}'"),
            None => return Ok(()),
        },
    };
    Err(Error::Runtime(
        format!(
            "{what}: argument {culprit} nests lists more than {MAX_VALUE_DEPTH} levels deep (the limit of opforge::value::MAX_VALUE_DEPTH)"
        )
        .into(),
    ))
}

impl Value {
    /// The value with every tensor inside (lists' elements included, nested
    /// lists too) replaced by `f` of it; the first error stops.
    pub fn try_map_tensors<'a>(
        &'a self,
        f: &mut dyn FnMut(&'a Tensor) -> Result<Tensor>,
    ) -> Result<Value> {
        Ok(match self {
            Value::Tensor(t) => Value::Tensor(f(t)?),
            Value::TensorList(ts) => {
                Value::TensorList(ts.iter().map(&mut *f).collect::<Result<_>>()?)
            }
            Value::OptTensorList(ts) => Value::OptTensorList(
                ts.iter()
                    .map(|t| t.as_ref().map(&mut *f).transpose())
                    .collect::<Result<_>>()?,
            ),
            Value::List(vs) => Value::List(
                vs.iter()
                    .map(|v| v.try_map_tensors(f))
                    .collect::<Result<Vec<_>>>()?
                    .into(),
            ),
            other => other.clone(),
        })
    }

    /// How deep lists nest in the value: 0 for a non-list, 1 for a flat list
    /// (computed without recursion).
    pub fn depth(&self) -> usize {
        let Value::List(l) = self else { return 0 };
        let mut max = 1;
        let mut stack: Vec<(&ValueList, usize)> = vec![(l, 1)];
        while let Some((l, d)) = stack.pop() {
            max = max.max(d);
            for v in &l.0 {
                if let Value::List(inner) = v {
                    stack.push((inner, d + 1));
                }
            }
        }
        max
    }

    /// The Python type name of the value (`int`, `Tensor`, `NoneType`, …), as
    /// PyTorch's error messages print it.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::None => "NoneType",
            Value::Bool(_) => "bool",
            Value::Int(_) => "int",
            Value::Float(_) => "float",
            Value::Str(_) => "str",
            Value::Tensor(_) => "Tensor",
            Value::IntList(_)
            | Value::FloatList(_)
            | Value::BoolList(_)
            | Value::ScalarList(_)
            | Value::TensorList(_)
            | Value::OptTensorList(_)
            | Value::List(_) => "list",
            Value::DType(_) | Value::ScalarTypeCode(_) => "torch.dtype",
            Value::Device(_) => "torch.device",
            Value::Layout(_) => "torch.layout",
            Value::MemoryFormat(_) => "torch.memory_format",
            Value::Generator(_) => "torch.Generator",
            Value::Storage(_) => "torch.Storage",
            Value::Stream(_) => "torch.Stream",
            Value::QScheme(_) => "torch.qscheme",
            Value::Object(_) => "ScriptObject",
            Value::Op(_) => "OpOverload",
        }
    }

    /// Calls `f` on every tensor inside (also in lists), in order.
    pub fn for_each_tensor<'v>(&'v self, f: &mut dyn FnMut(&'v Tensor)) {
        match self {
            Value::Tensor(t) => f(t),
            Value::TensorList(ts) => ts.iter().for_each(f),
            Value::OptTensorList(ts) => ts.iter().flatten().for_each(f),
            Value::List(vs) => {
                // Depth-first with an explicit stack: lists may nest deep.
                let mut stack = vec![vs.iter()];
                while let Some(top) = stack.last_mut() {
                    match top.next() {
                        Some(Value::List(inner)) => stack.push(inner.iter()),
                        Some(v) => v.for_each_tensor(f),
                        None => {
                            stack.pop();
                        }
                    }
                }
            }
            _ => {}
        }
    }

    /// Does any tensor inside (also in lists) satisfy `pred`? Stops at the first.
    pub fn any_tensor<F: FnMut(&Tensor) -> bool>(&self, pred: &mut F) -> bool {
        match self {
            Value::Tensor(t) => pred(t),
            Value::TensorList(ts) => ts.iter().any(pred),
            Value::OptTensorList(ts) => ts.iter().flatten().any(pred),
            Value::List(vs) => {
                let mut stack = vec![vs.iter()];
                while let Some(top) = stack.last_mut() {
                    match top.next() {
                        Some(Value::List(inner)) => stack.push(inner.iter()),
                        Some(v) if v.any_tensor(pred) => return true,
                        Some(_) => {}
                        None => {
                            stack.pop();
                        }
                    }
                }
                false
            }
            _ => false,
        }
    }

    /// The tensor, if this is one.
    pub fn as_tensor(&self) -> Option<&Tensor> {
        match self {
            Value::Tensor(t) => Some(t),
            _ => None,
        }
    }
}

impl From<Tensor> for Value {
    fn from(t: Tensor) -> Value {
        Value::Tensor(t)
    }
}

impl From<Scalar> for Value {
    fn from(s: Scalar) -> Value {
        match s {
            Scalar::Bool(b) => Value::Bool(b),
            Scalar::Int(i) => Value::Int(i),
            Scalar::Float(x) => Value::Float(x),
        }
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::None => f.write_str("None"),
            Value::Bool(b) => f.write_str(if *b { "True" } else { "False" }),
            Value::Int(i) => write!(f, "{i}"),
            Value::Float(x) => write!(f, "{x:?}"),
            Value::Str(s) => write!(f, "{s:?}"),
            Value::Tensor(t) => write!(f, "{t}"),
            Value::DType(d) => write!(f, "{d}"),
            Value::Device(d) => write!(f, "device(type='{d}')"),
            Value::Layout(_) => f.write_str("torch.strided"),
            Value::MemoryFormat(m) => write!(f, "{m:?}"),
            Value::ScalarTypeCode(c) => match scalar_type_name(*c) {
                Some(n) => write!(f, "torch.{n}"),
                None => write!(f, "ScalarType({c})"),
            },
            Value::QScheme(q) => write!(f, "torch.{}", q.name()),
            Value::Object(o) => write!(f, "{o}"),
            Value::Op(s) => write!(f, "torch.ops.{}", op_overload_name(s)),
            other => write!(f, "{other:?}"),
        }
    }
}

/// Is it one of PyTorch's higher-order operators (namespace `higher_order`:
/// `call_torchbind`, `with_effects`)? One overload each, named without it,
/// and autograd leaves them alone.
pub fn is_higher_order(s: &OpSchema) -> bool {
    s.namespace == "higher_order"
}

/// An overload's name as PyTorch's `OpOverload` is named (`aten.add.Tensor`,
/// `mylib.for_each_add.default`); a higher-order operator has one overload
/// and is named without it (`higher_order.call_torchbind`).
pub fn op_overload_name(s: &OpSchema) -> String {
    if is_higher_order(s) {
        return format!("{}.{}", s.namespace, s.base);
    }
    let overload = if s.overload.is_empty() {
        "default"
    } else {
        s.overload
    };
    format!("{}.{}.{overload}", s.namespace, s.base)
}

pub(crate) fn mismatch(want: &str, v: &Value) -> Error {
    Error::Type(format!("expected {want}, got {}", v.type_name()).into())
}

/// Borrowing a kernel parameter of type `Self` out of a boxed [`Value`].
pub trait FromValue<'a>: Sized {
    /// Converts, or explains what was expected.
    fn from_value(v: &'a Value) -> Result<Self>;
}

/// Turning a kernel result into boxed values (one per schema return).
pub trait IntoValues {
    /// The boxed returns.
    fn into_values(self) -> Vec<Value>;
}

macro_rules! from_value_copy {
    ($t:ty, $want:literal, $($pat:pat => $e:expr),+) => {
        impl<'a> FromValue<'a> for $t {
            fn from_value(v: &'a Value) -> Result<Self> {
                match v {
                    $($pat => Ok($e),)+
                    other => Err(mismatch($want, other)),
                }
            }
        }
        impl<'a> FromValue<'a> for Option<$t> {
            fn from_value(v: &'a Value) -> Result<Self> {
                match v {
                    Value::None => Ok(None),
                    other => <$t as FromValue>::from_value(other).map(Some),
                }
            }
        }
    };
}

from_value_copy!(i64, "int", Value::Int(i) => *i, Value::Bool(b) => i64::from(*b));
from_value_copy!(f64, "float", Value::Float(x) => *x, Value::Int(i) => *i as f64);
from_value_copy!(bool, "bool", Value::Bool(b) => *b);
from_value_copy!(Scalar, "Number", Value::Bool(b) => Scalar::Bool(*b), Value::Int(i) => Scalar::Int(*i), Value::Float(x) => Scalar::Float(*x));
from_value_copy!(DType, "torch.dtype", Value::DType(d) => *d);
from_value_copy!(Device, "torch.device", Value::Device(d) => *d);
from_value_copy!(Layout, "torch.layout", Value::Layout(l) => *l);
from_value_copy!(MemoryFormat, "torch.memory_format", Value::MemoryFormat(m) => *m);
from_value_copy!(&'a Tensor, "Tensor", Value::Tensor(t) => t);
from_value_copy!(&'a str, "str", Value::Str(s) => s.as_str());
from_value_copy!(&'a [i64], "tuple of ints", Value::IntList(xs) => xs.as_slice());
from_value_copy!(&'a [f64], "tuple of floats", Value::FloatList(xs) => xs.as_slice());
from_value_copy!(&'a [bool], "tuple of bools", Value::BoolList(xs) => xs.as_slice());
from_value_copy!(&'a [Scalar], "tuple of Scalars", Value::ScalarList(xs) => xs.as_slice());
from_value_copy!(&'a [Tensor], "tuple of Tensors", Value::TensorList(xs) => xs.as_slice());
from_value_copy!(&'a [Option<Tensor>], "tuple of Tensors", Value::OptTensorList(xs) => xs.as_slice());
from_value_copy!(&'a Generator, "torch.Generator", Value::Generator(g) => g);
from_value_copy!(&'a Storage, "torch.Storage", Value::Storage(s) => s);
from_value_copy!(Stream, "torch.Stream", Value::Stream(s) => *s);
from_value_copy!(QScheme, "torch.qscheme", Value::QScheme(q) => *q);
from_value_copy!(&'a ScriptObject, "ScriptObject", Value::Object(o) => o);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversions() {
        let v = Value::IntList(vec![1, 2]);
        let xs: &[i64] = FromValue::from_value(&v).unwrap();
        assert_eq!(xs, &[1, 2]);
        let none: Option<i64> = FromValue::from_value(&Value::None).unwrap();
        assert_eq!(none, None);
        let s: Scalar = FromValue::from_value(&Value::Float(2.5)).unwrap();
        assert_eq!(s, Scalar::Float(2.5));
        let e = <&Tensor>::from_value(&Value::Int(1)).unwrap_err();
        assert_eq!(e.to_string(), "expected Tensor, got int");
    }
}

/// Boxing a typed argument (the reverse of [`FromValue`]), for calls that go
/// through a boxed kernel.
pub trait ToValue {
    /// The boxed value.
    fn to_value(&self) -> Value;
}

macro_rules! to_value {
    ($t:ty, $x:ident => $e:expr) => {
        impl ToValue for $t {
            fn to_value(&self) -> Value {
                let $x = self;
                $e
            }
        }
    };
}
to_value!(&Tensor, t => Value::Tensor((*t).clone()));
to_value!(&mut Tensor, t => Value::Tensor((**t).clone()));
to_value!(i64, x => Value::Int(*x));
to_value!(f64, x => Value::Float(*x));
to_value!(bool, x => Value::Bool(*x));
to_value!(&str, x => Value::Str(x.to_string()));
to_value!(Scalar, x => Value::from(*x));
to_value!(DType, x => Value::DType(*x));
to_value!(Device, x => Value::Device(*x));
to_value!(Layout, x => Value::Layout(*x));
to_value!(MemoryFormat, x => Value::MemoryFormat(*x));
to_value!(&[Tensor], x => Value::TensorList(x.to_vec()));
to_value!(&[Option<Tensor>], x => Value::OptTensorList(x.to_vec()));
to_value!(&[i64], x => Value::IntList(x.to_vec()));
to_value!(&[f64], x => Value::FloatList(x.to_vec()));
to_value!(&[bool], x => Value::BoolList(x.to_vec()));
to_value!(&[Scalar], x => Value::ScalarList(x.to_vec()));
to_value!(&Generator, x => Value::Generator((*x).clone()));
to_value!(&Storage, x => Value::Storage((*x).clone()));
to_value!(Stream, x => Value::Stream(*x));
to_value!(QScheme, x => Value::QScheme(*x));
to_value!(ScriptObject, x => Value::Object(x.clone()));
to_value!(&ScriptObject, x => Value::Object((*x).clone()));

impl<T: ToValue> ToValue for Option<T> {
    fn to_value(&self) -> Value {
        match self {
            Some(x) => x.to_value(),
            None => Value::None,
        }
    }
}

/// Unboxing the results of a boxed kernel into the typed return of an operator.
pub trait FromValues: Sized {
    /// Converts, or explains what was expected.
    fn from_values(vs: Vec<Value>) -> Result<Self>;
}

impl<T: Returns> IntoValues for T {
    #[inline]
    fn into_values(self) -> Vec<Value> {
        Returns::into_values(self)
    }
}

impl<T: Returns> FromValues for T {
    #[inline]
    fn from_values(vs: Vec<Value>) -> Result<Self> {
        Returns::from_values(vs)
    }
}

impl crate::keys::KeySet {
    /// The key set a boxed call dispatches on ([`KeySet::of_call`]): the union
    /// of the key sets of every tensor among `args` (also inside lists), with
    /// the backend of the first `Device` among them (else CPU) when none has a
    /// backend.
    pub fn of_values(args: &[Value]) -> KeySet {
        // Lists deeper than a boxed call accepts (`check_depth`) are not looked
        // into, so this never recurses far.
        fn collect(
            args: &[Value],
            ks: &mut KeySet,
            device: &mut Option<crate::dtype::Device>,
            depth: usize,
        ) {
            if depth > MAX_VALUE_DEPTH {
                return;
            }
            for v in args {
                match v {
                    Value::Tensor(t) => *ks = *ks | t.key_set(),
                    Value::TensorList(ts) => ts.iter().for_each(|t| *ks = *ks | t.key_set()),
                    Value::OptTensorList(ts) => {
                        ts.iter().flatten().for_each(|t| *ks = *ks | t.key_set())
                    }
                    Value::List(vs) => collect(vs, ks, device, depth + 1),
                    Value::Device(d) if device.is_none() => *device = Some(*d),
                    _ => {}
                }
            }
        }
        let mut ks = KeySet::EMPTY;
        let mut device = None;
        // The top level here (most calls have no nested lists): `collect`
        // is recursive, so it is never inlined.
        for v in args {
            match v {
                Value::Tensor(t) => ks = ks | t.key_set(),
                Value::TensorList(_) | Value::OptTensorList(_) | Value::List(_) => {
                    collect(std::slice::from_ref(v), &mut ks, &mut device, 0)
                }
                Value::Device(d) if device.is_none() => device = Some(*d),
                _ => {}
            }
        }
        KeySet::of_call(ks, || device)
    }
}
