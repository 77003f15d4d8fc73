//! The Rust types a custom class's constructor and methods take and return,
//! with the schema type each stands for (`i64` → `int`, `Vec<Tensor>` →
//! `Tensor[]`, `()` → `NoneType`, a tuple → `(Tensor, Tensor?)`).

use crate::error::Result;
use crate::tensor::Tensor;
use crate::value::ScriptObject;
use crate::value::Value;

/// A type a method takes: its schema type, and the conversion from a boxed
/// value already of that type (`None` when it is not).
pub trait ArgType: Sized {
    /// The schema type (`Tensor`, `int`, `str`, …).
    fn schema_type() -> String;
    /// The value, if `v` is one.
    fn from_arg(v: &Value) -> Option<Self>;
}

/// A type a method returns: its schema type and its boxed value.
pub trait RetType {
    /// The schema type (`NoneType` for `()`).
    fn schema_type() -> String;
    /// The boxed value (a tuple is a list); a method's error passes through.
    fn into_ret(self) -> Result<Value>;
}

macro_rules! plain {
    ($t:ty, $name:literal, $from:pat => $x:expr, $v:ident => $to:expr) => {
        impl ArgType for $t {
            fn schema_type() -> String {
                $name.into()
            }
            fn from_arg(v: &Value) -> Option<Self> {
                match v {
                    $from => Some($x),
                    _ => None,
                }
            }
        }

        impl RetType for $t {
            fn schema_type() -> String {
                $name.into()
            }
            fn into_ret(self) -> Result<Value> {
                let $v = self;
                Ok($to)
            }
        }
    };
}

plain!(Tensor, "Tensor", Value::Tensor(t) => t.clone(), t => Value::Tensor(t));
plain!(i64, "int", Value::Int(i) => *i, i => Value::Int(i));
plain!(f64, "float", Value::Float(x) => *x, x => Value::Float(x));
plain!(bool, "bool", Value::Bool(b) => *b, b => Value::Bool(b));
plain!(String, "str", Value::Str(s) => s.clone(), s => Value::Str(s));
plain!(Vec<Tensor>, "Tensor[]", Value::TensorList(ts) => ts.clone(), ts => Value::TensorList(ts));
plain!(Vec<i64>, "int[]", Value::IntList(xs) => xs.clone(), xs => Value::IntList(xs));
plain!(Vec<f64>, "float[]", Value::FloatList(xs) => xs.clone(), xs => Value::FloatList(xs));
plain!(ScriptObject, "Any", Value::Object(o) => o.clone(), o => Value::Object(o));

impl ArgType for Option<Tensor> {
    fn schema_type() -> String {
        "Tensor?".into()
    }
    fn from_arg(v: &Value) -> Option<Self> {
        match v {
            Value::None => Some(None),
            Value::Tensor(t) => Some(Some(t.clone())),
            _ => None,
        }
    }
}

impl RetType for Option<Tensor> {
    fn schema_type() -> String {
        "Tensor?".into()
    }
    fn into_ret(self) -> Result<Value> {
        Ok(self.map_or(Value::None, Value::Tensor))
    }
}

/// Any value (`Any`): what `__obj_flatten__`'s pairs hold.
impl RetType for Value {
    fn schema_type() -> String {
        "Any".into()
    }
    fn into_ret(self) -> Result<Value> {
        Ok(self)
    }
}

/// A list of pairs (`__obj_flatten__`'s `(name, value)` pairs): a list of
/// two-element lists, as tuples are boxed.
impl<A: RetType, B: RetType> RetType for Vec<(A, B)> {
    fn schema_type() -> String {
        format!("({}, {})[]", A::schema_type(), B::schema_type())
    }
    fn into_ret(self) -> Result<Value> {
        let items: Result<Vec<Value>> = self.into_iter().map(|p| p.into_ret()).collect();
        Ok(Value::List(items?.into()))
    }
}

impl RetType for () {
    fn schema_type() -> String {
        "NoneType".into()
    }
    fn into_ret(self) -> Result<Value> {
        Ok(Value::None)
    }
}

impl<R: RetType> RetType for Result<R> {
    fn schema_type() -> String {
        R::schema_type()
    }
    fn into_ret(self) -> Result<Value> {
        self?.into_ret()
    }
}

macro_rules! tuples {
    ($(($($r:ident $v:ident),+)),* $(,)?) => {$(
        impl<$($r: RetType),+> RetType for ($($r,)+) {
            fn schema_type() -> String {
                let parts: Vec<String> = vec![$($r::schema_type()),+];
                format!("({})", parts.join(", "))
            }
            fn into_ret(self) -> Result<Value> {
                let ($($v,)+) = self;
                Ok(Value::List(vec![$($v.into_ret()?),+].into()))
            }
        }
    )*};
}

tuples!((A a, B b), (A a, B b, C c), (A a, B b, C c, D d));
