//! The traits the typed API is generic over, so that one small engine serves
//! every operator instead of code generated per operator:
//!
//! - [`Arg`]: one argument of a typed call (the Rust type a schema argument
//!   maps to, see the table in [`crate::value`]): its dispatch keys, whether it
//!   carries a tensor-like, its boxed value;
//! - [`Args`]: a call's arguments as a tuple, in schema order;
//! - [`CallWith`]: calling a kernel's function pointer with such a tuple;
//! - [`RetValue`] / [`Returns`]: one return / all returns of an operator, and
//!   their boxed values.
//!
//! Instances are shared by every operator with the same Rust signature, so a
//! schema of 2,500 operators compiles a few hundred of them.
//!
//! ```
//! use opforge::value::{Args, CallWith};
//! use opforge::{Scalar, Tensor};
//! let a = Tensor::from_vec(vec![1.0f32, 2.0], &[2])?;
//! let args = (&a, &a, Scalar::Int(2));
//! assert!(!args.overloaded());
//! let mut boxed = Vec::new();
//! args.to_values(&mut boxed);
//! assert_eq!(boxed.len(), 3);
//! let kernel: opforge::sig::add_Tensor = opforge::at::add_Tensor;
//! assert_eq!(kernel.call_with(args)?.to_vec::<f32>()?, vec![3.0, 6.0]);
//! # Ok::<(), opforge::Error>(())
//! ```

use super::{mismatch, ScriptObject, ToValue, Value};
use crate::error::{Error, Result};
use crate::keys::KeySet;
use crate::tensor::{
    DType, Device, Generator, Layout, MemoryFormat, QScheme, Scalar, Storage, Stream, Tensor,
};

/// One argument of a typed call.
pub trait Arg: ToValue {
    /// Can the argument hold tensors (`Tensor`, `Tensor?`, `Tensor[]`, …)?
    const TENSOR_LIKE: bool = false;

    /// The dispatch keys of the tensors inside.
    #[inline(always)]
    fn keys(&self) -> KeySet {
        KeySet::EMPTY
    }

    /// For a `Device` argument: the device it names (`None` for a `Device?`
    /// given as `None`); `None` for every other argument.
    #[inline(always)]
    fn device(&self) -> Option<Option<Device>> {
        None
    }

    /// Is a tensor inside an instance of a tensor subclass, a wrapper or a duck
    /// tensor-like (something the function-level protocol must ask)?
    #[inline(always)]
    fn overloaded(&self) -> bool {
        false
    }

    /// Calls `f` on every tensor inside, in order.
    #[inline(always)]
    fn each_tensor<'t>(&'t self, _f: &mut dyn FnMut(&'t Tensor)) {}

    /// A copy, unless the argument is a unique borrow (`&mut Tensor`).
    fn dup(&self) -> Option<Self>
    where
        Self: Sized;
}

macro_rules! plain_arg {
    ($($t:ty),*) => {$(
        impl Arg for $t {
            #[inline(always)]
            fn dup(&self) -> Option<Self> {
                Some(*self)
            }
        }
        impl Arg for Option<$t> {
            #[inline(always)]
            fn dup(&self) -> Option<Self> {
                Some(*self)
            }
        }
    )*};
}
plain_arg!(
    i64,
    f64,
    bool,
    Scalar,
    DType,
    Layout,
    MemoryFormat,
    Stream,
    QScheme,
    &str,
    &[i64],
    &[f64],
    &[bool],
    &[Scalar],
    &Generator,
    &Storage,
    &ScriptObject
);

impl Arg for Device {
    #[inline(always)]
    fn device(&self) -> Option<Option<Device>> {
        Some(Some(*self))
    }
    #[inline(always)]
    fn dup(&self) -> Option<Self> {
        Some(*self)
    }
}

impl Arg for Option<Device> {
    #[inline(always)]
    fn device(&self) -> Option<Option<Device>> {
        Some(*self)
    }
    #[inline(always)]
    fn dup(&self) -> Option<Self> {
        Some(*self)
    }
}

/// `&Tensor` (copyable) and `&mut Tensor` (a unique borrow: no copy).
macro_rules! tensor_arg {
    ($($t:ty => |$s:ident| $dup:expr),*) => {$(
        impl Arg for $t {
            const TENSOR_LIKE: bool = true;
            #[inline(always)]
            fn keys(&self) -> KeySet {
                self.key_set()
            }
            #[inline(always)]
            fn overloaded(&self) -> bool {
                !self.is_plain()
            }
            #[inline(always)]
            fn each_tensor<'t>(&'t self, f: &mut dyn FnMut(&'t Tensor)) {
                f(self)
            }
            #[inline(always)]
            fn dup(&self) -> Option<Self> {
                let $s = self;
                $dup
            }
        }
    )*};
}
tensor_arg!(&Tensor => |t| Some(*t), &mut Tensor => |_t| None);

impl Arg for Option<&Tensor> {
    const TENSOR_LIKE: bool = true;
    #[inline(always)]
    fn keys(&self) -> KeySet {
        self.map_or(KeySet::EMPTY, Tensor::key_set)
    }
    #[inline(always)]
    fn overloaded(&self) -> bool {
        self.is_some_and(|t| !t.is_plain())
    }
    #[inline(always)]
    fn each_tensor<'t>(&'t self, f: &mut dyn FnMut(&'t Tensor)) {
        if let Some(t) = self {
            f(t)
        }
    }
    #[inline(always)]
    fn dup(&self) -> Option<Self> {
        Some(*self)
    }
}

impl Arg for &[Tensor] {
    const TENSOR_LIKE: bool = true;
    fn keys(&self) -> KeySet {
        self.iter().fold(KeySet::EMPTY, |k, t| k | t.key_set())
    }
    #[inline]
    fn overloaded(&self) -> bool {
        self.iter().any(|t| !t.is_plain())
    }
    fn each_tensor<'t>(&'t self, f: &mut dyn FnMut(&'t Tensor)) {
        self.iter().for_each(f)
    }
    #[inline(always)]
    fn dup(&self) -> Option<Self> {
        Some(*self)
    }
}

impl Arg for &[Option<Tensor>] {
    const TENSOR_LIKE: bool = true;
    fn keys(&self) -> KeySet {
        self.iter()
            .flatten()
            .fold(KeySet::EMPTY, |k, t| k | t.key_set())
    }
    #[inline]
    fn overloaded(&self) -> bool {
        self.iter().flatten().any(|t| !t.is_plain())
    }
    fn each_tensor<'t>(&'t self, f: &mut dyn FnMut(&'t Tensor)) {
        self.iter().flatten().for_each(f)
    }
    #[inline(always)]
    fn dup(&self) -> Option<Self> {
        Some(*self)
    }
}

/// A typed call's arguments: a tuple of [`Arg`]s in schema order.
pub trait Args: Sized {
    /// Does the schema have a tensor-like argument?
    const TENSOR_LIKE: bool;

    /// How many arguments (boxed, as many values).
    const LEN: usize;

    /// The dispatch keys of the call ([`KeySet::of_call`]): those of its
    /// tensors, with the backend of its first `Device` argument given (else
    /// CPU) when none of them has a backend.
    fn keys(&self) -> KeySet;

    /// Is an argument a tensor-like (see [`Arg::overloaded`])?
    fn overloaded(&self) -> bool;

    /// Appends the boxed arguments to `out`, one per schema argument.
    fn to_values(&self, out: &mut Vec<Value>);

    /// Calls `f` on every tensor inside, in order.
    fn each_tensor<'t>(&'t self, f: &mut dyn FnMut(&'t Tensor));

    /// A copy, unless an argument is a unique borrow.
    fn dup(&self) -> Option<Self>;
}

/// Calling a function with a tuple of arguments: `f.call_with((a, b))` is
/// `f(a, b)`. Implemented for every function (pointer) returning
/// [`Result`], up to 32 arguments (PyTorch's longest schema, the generated
/// `mkldnn_rnn_layer_backward.out`, has 30).
pub trait CallWith<A, R> {
    /// Calls.
    fn call_with(self, args: A) -> Result<R>;
}

macro_rules! tuple_args {
    ($(($($a:ident $i:tt),*))*) => {$(
        impl<$($a: Arg),*> Args for ($($a,)*) {
            const TENSOR_LIKE: bool = false $(|| $a::TENSOR_LIKE)*;
            const LEN: usize = <[&str]>::len(&[$(stringify!($a)),*]);

            #[inline(always)]
            #[allow(unused_mut, unused_variables)]
            fn keys(&self) -> KeySet {
                let mut k = KeySet::EMPTY;
                $(if $a::TENSOR_LIKE { k = k | self.$i.keys(); })*
                KeySet::of_call(k, || {
                    let mut device: Option<Device> = None;
                    $(if device.is_none() { device = self.$i.device().flatten(); })*
                    device
                })
            }

            #[inline(always)]
            fn overloaded(&self) -> bool {
                false $(|| ($a::TENSOR_LIKE && self.$i.overloaded()))*
            }

            #[allow(unused_variables)]
            fn to_values(&self, out: &mut Vec<Value>) {
                $(out.push(self.$i.to_value());)*
            }

            #[allow(unused_variables)]
            fn each_tensor<'t>(&'t self, f: &mut dyn FnMut(&'t Tensor)) {
                $(if $a::TENSOR_LIKE { self.$i.each_tensor(f); })*
            }

            #[inline(always)]
            fn dup(&self) -> Option<Self> {
                Some(($(self.$i.dup()?,)*))
            }
        }

        impl<Func, Ret, $($a),*> CallWith<($($a,)*), Ret> for Func
        where
            Func: FnOnce($($a),*) -> Result<Ret>,
        {
            #[inline(always)]
            #[allow(non_snake_case)]
            fn call_with(self, args: ($($a,)*)) -> Result<Ret> {
                let ($($a,)*) = args;
                self($($a),*)
            }
        }
    )*};
}

tuple_args! {
    ()
    (A0 0)
    (A0 0, A1 1)
    (A0 0, A1 1, A2 2)
    (A0 0, A1 1, A2 2, A3 3)
    (A0 0, A1 1, A2 2, A3 3, A4 4)
    (A0 0, A1 1, A2 2, A3 3, A4 4, A5 5)
    (A0 0, A1 1, A2 2, A3 3, A4 4, A5 5, A6 6)
    (A0 0, A1 1, A2 2, A3 3, A4 4, A5 5, A6 6, A7 7)
    (A0 0, A1 1, A2 2, A3 3, A4 4, A5 5, A6 6, A7 7, A8 8)
    (A0 0, A1 1, A2 2, A3 3, A4 4, A5 5, A6 6, A7 7, A8 8, A9 9)
    (A0 0, A1 1, A2 2, A3 3, A4 4, A5 5, A6 6, A7 7, A8 8, A9 9, A10 10)
    (A0 0, A1 1, A2 2, A3 3, A4 4, A5 5, A6 6, A7 7, A8 8, A9 9, A10 10, A11 11)
    (A0 0, A1 1, A2 2, A3 3, A4 4, A5 5, A6 6, A7 7, A8 8, A9 9, A10 10, A11 11, A12 12)
    (A0 0, A1 1, A2 2, A3 3, A4 4, A5 5, A6 6, A7 7, A8 8, A9 9, A10 10, A11 11, A12 12, A13 13)
    (A0 0, A1 1, A2 2, A3 3, A4 4, A5 5, A6 6, A7 7, A8 8, A9 9, A10 10, A11 11, A12 12, A13 13, A14 14)
    (A0 0, A1 1, A2 2, A3 3, A4 4, A5 5, A6 6, A7 7, A8 8, A9 9, A10 10, A11 11, A12 12, A13 13, A14 14, A15 15)
    (A0 0, A1 1, A2 2, A3 3, A4 4, A5 5, A6 6, A7 7, A8 8, A9 9, A10 10, A11 11, A12 12, A13 13, A14 14, A15 15, A16 16)
    (A0 0, A1 1, A2 2, A3 3, A4 4, A5 5, A6 6, A7 7, A8 8, A9 9, A10 10, A11 11, A12 12, A13 13, A14 14, A15 15, A16 16, A17 17)
    (A0 0, A1 1, A2 2, A3 3, A4 4, A5 5, A6 6, A7 7, A8 8, A9 9, A10 10, A11 11, A12 12, A13 13, A14 14, A15 15, A16 16, A17 17, A18 18)
    (A0 0, A1 1, A2 2, A3 3, A4 4, A5 5, A6 6, A7 7, A8 8, A9 9, A10 10, A11 11, A12 12, A13 13, A14 14, A15 15, A16 16, A17 17, A18 18, A19 19)
    (A0 0, A1 1, A2 2, A3 3, A4 4, A5 5, A6 6, A7 7, A8 8, A9 9, A10 10, A11 11, A12 12, A13 13, A14 14, A15 15, A16 16, A17 17, A18 18, A19 19, A20 20)
    (A0 0, A1 1, A2 2, A3 3, A4 4, A5 5, A6 6, A7 7, A8 8, A9 9, A10 10, A11 11, A12 12, A13 13, A14 14, A15 15, A16 16, A17 17, A18 18, A19 19, A20 20, A21 21)
    (A0 0, A1 1, A2 2, A3 3, A4 4, A5 5, A6 6, A7 7, A8 8, A9 9, A10 10, A11 11, A12 12, A13 13, A14 14, A15 15, A16 16, A17 17, A18 18, A19 19, A20 20, A21 21, A22 22)
    (A0 0, A1 1, A2 2, A3 3, A4 4, A5 5, A6 6, A7 7, A8 8, A9 9, A10 10, A11 11, A12 12, A13 13, A14 14, A15 15, A16 16, A17 17, A18 18, A19 19, A20 20, A21 21, A22 22, A23 23)
    (A0 0, A1 1, A2 2, A3 3, A4 4, A5 5, A6 6, A7 7, A8 8, A9 9, A10 10, A11 11, A12 12, A13 13, A14 14, A15 15, A16 16, A17 17, A18 18, A19 19, A20 20, A21 21, A22 22, A23 23, A24 24)
    (A0 0, A1 1, A2 2, A3 3, A4 4, A5 5, A6 6, A7 7, A8 8, A9 9, A10 10, A11 11, A12 12, A13 13, A14 14, A15 15, A16 16, A17 17, A18 18, A19 19, A20 20, A21 21, A22 22, A23 23, A24 24, A25 25)
    (A0 0, A1 1, A2 2, A3 3, A4 4, A5 5, A6 6, A7 7, A8 8, A9 9, A10 10, A11 11, A12 12, A13 13, A14 14, A15 15, A16 16, A17 17, A18 18, A19 19, A20 20, A21 21, A22 22, A23 23, A24 24, A25 25, A26 26)
    (A0 0, A1 1, A2 2, A3 3, A4 4, A5 5, A6 6, A7 7, A8 8, A9 9, A10 10, A11 11, A12 12, A13 13, A14 14, A15 15, A16 16, A17 17, A18 18, A19 19, A20 20, A21 21, A22 22, A23 23, A24 24, A25 25, A26 26, A27 27)
    (A0 0, A1 1, A2 2, A3 3, A4 4, A5 5, A6 6, A7 7, A8 8, A9 9, A10 10, A11 11, A12 12, A13 13, A14 14, A15 15, A16 16, A17 17, A18 18, A19 19, A20 20, A21 21, A22 22, A23 23, A24 24, A25 25, A26 26, A27 27, A28 28)
    (A0 0, A1 1, A2 2, A3 3, A4 4, A5 5, A6 6, A7 7, A8 8, A9 9, A10 10, A11 11, A12 12, A13 13, A14 14, A15 15, A16 16, A17 17, A18 18, A19 19, A20 20, A21 21, A22 22, A23 23, A24 24, A25 25, A26 26, A27 27, A28 28, A29 29)
    (A0 0, A1 1, A2 2, A3 3, A4 4, A5 5, A6 6, A7 7, A8 8, A9 9, A10 10, A11 11, A12 12, A13 13, A14 14, A15 15, A16 16, A17 17, A18 18, A19 19, A20 20, A21 21, A22 22, A23 23, A24 24, A25 25, A26 26, A27 27, A28 28, A29 29, A30 30)
    (A0 0, A1 1, A2 2, A3 3, A4 4, A5 5, A6 6, A7 7, A8 8, A9 9, A10 10, A11 11, A12 12, A13 13, A14 14, A15 15, A16 16, A17 17, A18 18, A19 19, A20 20, A21 21, A22 22, A23 23, A24 24, A25 25, A26 26, A27 27, A28 28, A29 29, A30 30, A31 31)
}

/// One return of an operator (`Tensor`, `Tensor[]`, `int`, …) and its boxed value.
pub trait RetValue: Sized {
    /// The boxed value.
    fn into_value(self) -> Value;
    /// From a boxed value, or what was expected.
    fn from_value(v: Value) -> Result<Self>;
}

macro_rules! ret_value {
    ($t:ty, $want:literal, $x:ident => $into:expr, $($pat:pat => $e:expr),+) => {
        impl RetValue for $t {
            #[inline]
            fn into_value(self) -> Value {
                let $x = self;
                $into
            }
            fn from_value(v: Value) -> Result<Self> {
                match v {
                    $($pat => Ok($e),)+
                    other => Err(mismatch($want, &other)),
                }
            }
        }
    };
}
ret_value!(Tensor, "Tensor", t => Value::Tensor(t), Value::Tensor(t) => t);
ret_value!(Vec<Tensor>, "tuple of Tensors", ts => Value::TensorList(ts), Value::TensorList(ts) => ts);
ret_value!(i64, "int", i => Value::Int(i), Value::Int(i) => i);
ret_value!(f64, "float", x => Value::Float(x), Value::Float(x) => x, Value::Int(i) => i as f64);
ret_value!(bool, "bool", b => Value::Bool(b), Value::Bool(b) => b);
ret_value!(Scalar, "Number", s => Value::from(s), Value::Bool(b) => Scalar::Bool(b), Value::Int(i) => Scalar::Int(i), Value::Float(x) => Scalar::Float(x));
ret_value!(DType, "torch.dtype", d => Value::DType(d), Value::DType(d) => d);
ret_value!(QScheme, "torch.qscheme", q => Value::QScheme(q), Value::QScheme(q) => q);
ret_value!(Vec<i64>, "tuple of ints", v => Value::IntList(v), Value::IntList(v) => v);
ret_value!(Device, "torch.device", d => Value::Device(d), Value::Device(d) => d);
ret_value!(Layout, "torch.layout", l => Value::Layout(l), Value::Layout(l) => l);
ret_value!(String, "str", s => Value::Str(s), Value::Str(s) => s);
ret_value!(ScriptObject, "ScriptObject", o => Value::Object(o), Value::Object(o) => o);
ret_value!(Option<Tensor>, "Tensor or None", t => t.map_or(Value::None, Value::Tensor), Value::Tensor(t) => Some(t), Value::None => None);

/// All returns of an operator: `()`, one [`RetValue`], or a tuple of them.
pub trait Returns: Sized {
    /// One boxed value per schema return.
    fn into_values(self) -> Vec<Value>;
    /// From one boxed value per schema return.
    fn from_values(vs: Vec<Value>) -> Result<Self>;
    /// The returns as one value: the value itself for one return, a list
    /// otherwise (what a `__torch_function__` handler sees).
    fn into_value(self) -> Value {
        one_value(self.into_values())
    }
    /// The reverse of [`Returns::into_value`].
    fn from_value(v: Value) -> Result<Self> {
        Self::from_values(match v {
            Value::List(vs) => vs.into_vec(),
            other => vec![other],
        })
    }
}

/// One boxed result: `None` for none (what Python's call of an operator
/// without returns gives), the value itself for one, a list for several (how
/// a `__torch_function__` or `__torch_dispatch__` handler sees an operator's
/// returns).
pub fn one_value(mut vs: Vec<Value>) -> Value {
    match vs.len() {
        0 => Value::None,
        1 => vs.remove(0),
        _ => Value::List(vs.into()),
    }
}

fn count(want: usize, got: usize) -> Error {
    Error::Runtime(format!("expected {want} results, got {got}").into())
}

impl<T: RetValue> Returns for T {
    #[inline]
    fn into_values(self) -> Vec<Value> {
        vec![RetValue::into_value(self)]
    }
    fn from_values(mut vs: Vec<Value>) -> Result<Self> {
        match vs.len() {
            1 => T::from_value(vs.remove(0)),
            n => Err(Error::Runtime(format!("expected 1 result, got {n}").into())),
        }
    }
    #[inline]
    fn into_value(self) -> Value {
        RetValue::into_value(self)
    }
    #[inline]
    fn from_value(v: Value) -> Result<Self> {
        RetValue::from_value(v)
    }
}

macro_rules! tuple_returns {
    ($(($n:literal; $($r:ident),*))*) => {$(
        impl<$($r: RetValue),*> Returns for ($($r,)*) {
            #[allow(non_snake_case)]
            fn into_values(self) -> Vec<Value> {
                let ($($r,)*) = self;
                vec![$($r.into_value()),*]
            }
            #[allow(non_snake_case)]
            fn from_values(vs: Vec<Value>) -> Result<Self> {
                let got = vs.len();
                let mut it = vs.into_iter();
                $(let $r = $r::from_value(it.next().ok_or_else(|| count($n, got))?)?;)*
                if it.next().is_some() {
                    return Err(count($n, got));
                }
                Ok(($($r,)*))
            }
        }
    )*};
}
tuple_returns! {
    (2; R0, R1)
    (3; R0, R1, R2)
    (4; R0, R1, R2, R3)
    (5; R0, R1, R2, R3, R4)
    (6; R0, R1, R2, R3, R4, R5)
    (7; R0, R1, R2, R3, R4, R5, R6)
    (8; R0, R1, R2, R3, R4, R5, R6, R7)
    (9; R0, R1, R2, R3, R4, R5, R6, R7, R8)
    (10; R0, R1, R2, R3, R4, R5, R6, R7, R8, R9)
}

/// A boxed kernel's results (`dispatch::adapter::BoxedKernel`): the values
/// themselves, as many as the kernel returns.
impl Returns for Vec<Value> {
    #[inline]
    fn into_values(self) -> Vec<Value> {
        self
    }
    #[inline]
    fn from_values(vs: Vec<Value>) -> Result<Self> {
        Ok(vs)
    }
}

impl Returns for () {
    #[inline]
    fn into_values(self) -> Vec<Value> {
        Vec::new()
    }
    fn from_values(_: Vec<Value>) -> Result<Self> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_come_from_tensors_else_from_the_device() {
        let cpu = Tensor::zeros(&[1], DType::Float32, Device::Cpu);
        let meta = Tensor::zeros(&[1], DType::Float32, Device::Meta);
        assert_eq!((&cpu, &meta).keys(), cpu.key_set() | meta.key_set());
        // Tensor-like arguments present, all empty: the device's backend, as
        // for a boxed call.
        let none: Option<&Tensor> = None;
        assert_eq!(
            (none, Some(Device::Meta)).keys(),
            KeySet::of_values(&[Value::None, Value::Device(Device::Meta)])
        );
        assert_eq!(
            (none, Some(Device::Meta)).keys(),
            KeySet::for_device(Device::Meta)
        );
        let empty: &[Tensor] = &[];
        assert_eq!(empty.keys(), KeySet::EMPTY);
        assert_eq!((empty,).keys(), KeySet::for_device(Device::Cpu));
        // No tensor argument: the device's backend, or the CPU's.
        assert_eq!(
            (1i64, Some(Device::Meta)).keys(),
            KeySet::for_device(Device::Meta)
        );
        assert_eq!(
            (1i64, None::<Device>).keys(),
            KeySet::for_device(Device::Cpu)
        );
        assert_eq!(().keys(), KeySet::for_device(Device::Cpu));
    }

    #[test]
    fn unique_borrows_are_not_duplicated() {
        let mut t = Tensor::zeros(&[1], DType::Float32, Device::Cpu);
        let u = t.clone();
        assert!((&u, 1i64).dup().is_some());
        assert!((&u, &mut t).dup().is_none());
    }

    #[test]
    fn tuples_of_returns_box_and_unbox() {
        let t = Tensor::zeros(&[1], DType::Float32, Device::Cpu);
        let v = (t.clone(), vec![t.clone()], 2.5f64, 3i64).into_value();
        assert!(matches!(&v, Value::List(vs) if vs.len() == 4));
        let (a, b, c, d) = <(Tensor, Vec<Tensor>, f64, i64)>::from_value(v).unwrap();
        assert!(a.is_same(&t) && b.len() == 1 && c == 2.5 && d == 3);
        let e = <(Tensor, Tensor)>::from_values(vec![Value::Tensor(t)]).unwrap_err();
        assert_eq!(e.to_string(), "expected 2 results, got 1");
        // No returns: `None`, as Python's call of such an operator gives.
        assert!(matches!(().into_value(), Value::None));
        <()>::from_value(Value::None).unwrap();
    }
}
