//! The boxed side of a typed kernel, written once per Rust signature: what a
//! kernel's boxed entry, and a typed API's boxed caller, do with `&[Value]`
//! (unbox each argument, call the function, box its results) is generic code
//! here, instantiated once for each Rust signature and shared by every
//! operator and kernel of that signature — as PyTorch boxes a kernel with one
//! template per signature (`make_boxed_from_unboxed_functor`) and PyO3's
//! macros call shared helpers (`extract_argument`). A registration names
//! *what* (the operator, the key, the function); this module does *how*.
//!
//! A signature is described twice:
//!
//! - by the function pointer type the kernel is called through (`S`, an
//!   `opforge::sig::<op>` alias such as `fn(&Tensor, &Tensor, Scalar) ->
//!   Result<Tensor>`: every reference with a lifetime of its own);
//! - by its *spec*: the same function pointer type with every reference
//!   `'static` (`fn(&'static Tensor, &'static Tensor, Scalar) ->
//!   Result<Tensor>`), which names each parameter's [`Param`] without a
//!   lifetime. The spec is never called; [`Adapter`] is implemented for
//!   specs and takes the callable `S`.
//!
//! ```
//! use opforge::dispatch::adapter::{KernelFn, TypedCaller};
//! use opforge::dispatch::dispatcher;
//! use opforge::{sig, Result, Scalar, Tensor, Value};
//! type Spec = fn(&'static Tensor, &'static Tensor, Scalar) -> Result<Tensor>;
//! static ADD: TypedCaller = TypedCaller::new::<sig::add_Tensor, Spec>(&(opforge::at::add_Tensor as sig::add_Tensor));
//! let add = dispatcher().find("aten::add.Tensor").unwrap();
//! let t = Value::Tensor(Tensor::from_vec(vec![1.0f32, 2.0], &[2])?);
//! // A Python number given for a tensor is a wrapped number.
//! let out = ADD.call(add, &[t, Value::Int(3), Value::Int(1)])?;
//! assert_eq!(out.as_tensor().unwrap().to_vec::<f32>()?, vec![4.0, 5.0]);
//! # Ok::<(), opforge::Error>(())
//! ```

use super::{KeySet, Operator, Unboxed};
use crate::error::{Error, Result};
use crate::tensor::{
    DType, Device, Generator, Layout, MemoryFormat, QScheme, Scalar, Storage, Stream, Tensor,
};
use crate::value::{FromValue, Returns, ScriptObject, Value};
use std::any::Any;

/// A kernel function behind its signature's adapter: the function pointer,
/// type-erased (recovered as its exact type only).
pub type KernelFn = &'static (dyn Any + Send + Sync);

/// A link-time kernel's boxed entry point: its function (see [`KernelFn`])
/// behind its signature's adapter, the operator, the keys, the arguments.
pub type EntryBoxedFn = fn(KernelFn, &Operator, KeySet, &[Value]) -> Result<Vec<Value>>;

/// One parameter of a spec (see the module docs): the `'static` form of a
/// kernel parameter's Rust type, and how it is taken out of a boxed value.
pub trait Param: 'static {
    /// Where a parameter that does not borrow from the value lives while the
    /// call runs: a wrapped number made for a `&Tensor`, the handle a
    /// `&mut Tensor` lends (as PyO3's argument holders).
    type Holder: Default;
    /// The parameter as the kernel takes it, borrowing for `'a`.
    type Out<'a>;
    /// Takes the parameter out of `v`, or explains what was expected.
    fn extract<'a>(v: &'a Value, holder: &'a mut Self::Holder) -> Result<Self::Out<'a>>;
}

/// `&Tensor`: a tensor, or a Python number given for one (a wrapped number,
/// as PyTorch's boxed calls make of a number for a `Tensor` argument).
impl Param for &'static Tensor {
    type Holder = Option<Tensor>;
    type Out<'a> = &'a Tensor;
    #[inline]
    fn extract<'a>(v: &'a Value, holder: &'a mut Option<Tensor>) -> Result<&'a Tensor> {
        let s = match v {
            Value::Tensor(t) => return Ok(t),
            Value::Bool(b) => Scalar::Bool(*b),
            Value::Int(i) => Scalar::Int(*i),
            Value::Float(x) => Scalar::Float(*x),
            other => return <&Tensor as FromValue>::from_value(other),
        };
        Ok(holder.insert(Tensor::wrapped_number(s)))
    }
}

/// `&mut Tensor` (a written `Tensor(a!)`): a new handle on the value's
/// tensor, lent for the call (writes reach the tensor through it).
impl Param for &'static mut Tensor {
    type Holder = Option<Tensor>;
    type Out<'a> = &'a mut Tensor;
    #[inline]
    fn extract<'a>(v: &'a Value, holder: &'a mut Option<Tensor>) -> Result<&'a mut Tensor> {
        let t = <&Tensor as FromValue>::from_value(v)?;
        Ok(holder.insert(t.clone()))
    }
}

/// Parameters read straight from the value: plain values, and references
/// into it.
macro_rules! by_value {
    ($($t:ty => $out:ty),* $(,)?) => {$(
        impl Param for $t {
            type Holder = ();
            type Out<'a> = $out;
            #[inline]
            fn extract<'a>(v: &'a Value, _: &'a mut ()) -> Result<$out> {
                <$out as FromValue<'a>>::from_value(v)
            }
        }
    )*};
}

by_value!(
    i64 => i64,
    f64 => f64,
    bool => bool,
    Scalar => Scalar,
    DType => DType,
    Device => Device,
    Layout => Layout,
    MemoryFormat => MemoryFormat,
    Stream => Stream,
    QScheme => QScheme,
    Option<i64> => Option<i64>,
    Option<f64> => Option<f64>,
    Option<bool> => Option<bool>,
    Option<Scalar> => Option<Scalar>,
    Option<DType> => Option<DType>,
    Option<Device> => Option<Device>,
    Option<Layout> => Option<Layout>,
    Option<MemoryFormat> => Option<MemoryFormat>,
    Option<Stream> => Option<Stream>,
    Option<QScheme> => Option<QScheme>,
    Option<&'static Tensor> => Option<&'a Tensor>,
    &'static str => &'a str,
    Option<&'static str> => Option<&'a str>,
    &'static [i64] => &'a [i64],
    Option<&'static [i64]> => Option<&'a [i64]>,
    &'static [f64] => &'a [f64],
    Option<&'static [f64]> => Option<&'a [f64]>,
    &'static [bool] => &'a [bool],
    &'static [Scalar] => &'a [Scalar],
    &'static [Tensor] => &'a [Tensor],
    &'static [Option<Tensor>] => &'a [Option<Tensor>],
    &'static Generator => &'a Generator,
    Option<&'static Generator> => Option<&'a Generator>,
    &'static Storage => &'a Storage,
    &'static ScriptObject => &'a ScriptObject,
    Option<&'static ScriptObject> => Option<&'a ScriptObject>,
);

/// A spec's adapter to a callable of its signature `S` (see the module
/// docs): implemented for every spec `fn(P0, …, Pn) -> Result<R>` whose
/// parameters are [`Param`]s, up to 32 of them (PyTorch's longest schema,
/// the generated `mkldnn_rnn_layer_backward.out`, has 30).
pub trait Adapter<S>: 'static {
    /// What the function returns (inside `Result`).
    type Ret: Returns;
    /// How many arguments it takes.
    const ARITY: usize;
    /// Takes any number of arguments (a boxed kernel: [`BoxedKernel`]).
    const VARIADIC: bool = false;
    /// Unboxes `args` (exactly [`Adapter::ARITY`] of them), calls `f`.
    /// A value of the wrong type is `op`'s argument error.
    fn call(f: &S, op: &Operator, args: &[Value]) -> Result<Self::Ret>;
}

macro_rules! adapters {
    ($(($($p:ident $h:ident $i:tt),*))*) => {$(
        impl<S, R, $($p),*> Adapter<S> for fn($($p),*) -> Result<R>
        where
            R: Returns + 'static,
            $($p: Param,)*
            S: for<'a> Fn($($p::Out<'a>),*) -> Result<R>,
        {
            type Ret = R;
            const ARITY: usize = <[&str]>::len(&[$(stringify!($p)),*]);

            #[inline]
            #[allow(unused_variables, non_snake_case)]
            fn call(f: &S, op: &Operator, args: &[Value]) -> Result<R> {
                $(let mut $h = <$p::Holder as Default>::default();)*
                let out = f($($p::extract(&args[$i], &mut $h).map_err(|e| op.argument_error($i, &args[$i], e))?),*);
                out
            }
        }
    )*};
}

adapters! {
    ()
    (P0 h0 0)
    (P0 h0 0, P1 h1 1)
    (P0 h0 0, P1 h1 1, P2 h2 2)
    (P0 h0 0, P1 h1 1, P2 h2 2, P3 h3 3)
    (P0 h0 0, P1 h1 1, P2 h2 2, P3 h3 3, P4 h4 4)
    (P0 h0 0, P1 h1 1, P2 h2 2, P3 h3 3, P4 h4 4, P5 h5 5)
    (P0 h0 0, P1 h1 1, P2 h2 2, P3 h3 3, P4 h4 4, P5 h5 5, P6 h6 6)
    (P0 h0 0, P1 h1 1, P2 h2 2, P3 h3 3, P4 h4 4, P5 h5 5, P6 h6 6, P7 h7 7)
    (P0 h0 0, P1 h1 1, P2 h2 2, P3 h3 3, P4 h4 4, P5 h5 5, P6 h6 6, P7 h7 7, P8 h8 8)
    (P0 h0 0, P1 h1 1, P2 h2 2, P3 h3 3, P4 h4 4, P5 h5 5, P6 h6 6, P7 h7 7, P8 h8 8, P9 h9 9)
    (P0 h0 0, P1 h1 1, P2 h2 2, P3 h3 3, P4 h4 4, P5 h5 5, P6 h6 6, P7 h7 7, P8 h8 8, P9 h9 9, P10 h10 10)
    (P0 h0 0, P1 h1 1, P2 h2 2, P3 h3 3, P4 h4 4, P5 h5 5, P6 h6 6, P7 h7 7, P8 h8 8, P9 h9 9, P10 h10 10, P11 h11 11)
    (P0 h0 0, P1 h1 1, P2 h2 2, P3 h3 3, P4 h4 4, P5 h5 5, P6 h6 6, P7 h7 7, P8 h8 8, P9 h9 9, P10 h10 10, P11 h11 11, P12 h12 12)
    (P0 h0 0, P1 h1 1, P2 h2 2, P3 h3 3, P4 h4 4, P5 h5 5, P6 h6 6, P7 h7 7, P8 h8 8, P9 h9 9, P10 h10 10, P11 h11 11, P12 h12 12, P13 h13 13)
    (P0 h0 0, P1 h1 1, P2 h2 2, P3 h3 3, P4 h4 4, P5 h5 5, P6 h6 6, P7 h7 7, P8 h8 8, P9 h9 9, P10 h10 10, P11 h11 11, P12 h12 12, P13 h13 13, P14 h14 14)
    (P0 h0 0, P1 h1 1, P2 h2 2, P3 h3 3, P4 h4 4, P5 h5 5, P6 h6 6, P7 h7 7, P8 h8 8, P9 h9 9, P10 h10 10, P11 h11 11, P12 h12 12, P13 h13 13, P14 h14 14, P15 h15 15)
    (P0 h0 0, P1 h1 1, P2 h2 2, P3 h3 3, P4 h4 4, P5 h5 5, P6 h6 6, P7 h7 7, P8 h8 8, P9 h9 9, P10 h10 10, P11 h11 11, P12 h12 12, P13 h13 13, P14 h14 14, P15 h15 15, P16 h16 16)
    (P0 h0 0, P1 h1 1, P2 h2 2, P3 h3 3, P4 h4 4, P5 h5 5, P6 h6 6, P7 h7 7, P8 h8 8, P9 h9 9, P10 h10 10, P11 h11 11, P12 h12 12, P13 h13 13, P14 h14 14, P15 h15 15, P16 h16 16, P17 h17 17)
    (P0 h0 0, P1 h1 1, P2 h2 2, P3 h3 3, P4 h4 4, P5 h5 5, P6 h6 6, P7 h7 7, P8 h8 8, P9 h9 9, P10 h10 10, P11 h11 11, P12 h12 12, P13 h13 13, P14 h14 14, P15 h15 15, P16 h16 16, P17 h17 17, P18 h18 18)
    (P0 h0 0, P1 h1 1, P2 h2 2, P3 h3 3, P4 h4 4, P5 h5 5, P6 h6 6, P7 h7 7, P8 h8 8, P9 h9 9, P10 h10 10, P11 h11 11, P12 h12 12, P13 h13 13, P14 h14 14, P15 h15 15, P16 h16 16, P17 h17 17, P18 h18 18, P19 h19 19)
    (P0 h0 0, P1 h1 1, P2 h2 2, P3 h3 3, P4 h4 4, P5 h5 5, P6 h6 6, P7 h7 7, P8 h8 8, P9 h9 9, P10 h10 10, P11 h11 11, P12 h12 12, P13 h13 13, P14 h14 14, P15 h15 15, P16 h16 16, P17 h17 17, P18 h18 18, P19 h19 19, P20 h20 20)
    (P0 h0 0, P1 h1 1, P2 h2 2, P3 h3 3, P4 h4 4, P5 h5 5, P6 h6 6, P7 h7 7, P8 h8 8, P9 h9 9, P10 h10 10, P11 h11 11, P12 h12 12, P13 h13 13, P14 h14 14, P15 h15 15, P16 h16 16, P17 h17 17, P18 h18 18, P19 h19 19, P20 h20 20, P21 h21 21)
    (P0 h0 0, P1 h1 1, P2 h2 2, P3 h3 3, P4 h4 4, P5 h5 5, P6 h6 6, P7 h7 7, P8 h8 8, P9 h9 9, P10 h10 10, P11 h11 11, P12 h12 12, P13 h13 13, P14 h14 14, P15 h15 15, P16 h16 16, P17 h17 17, P18 h18 18, P19 h19 19, P20 h20 20, P21 h21 21, P22 h22 22)
    (P0 h0 0, P1 h1 1, P2 h2 2, P3 h3 3, P4 h4 4, P5 h5 5, P6 h6 6, P7 h7 7, P8 h8 8, P9 h9 9, P10 h10 10, P11 h11 11, P12 h12 12, P13 h13 13, P14 h14 14, P15 h15 15, P16 h16 16, P17 h17 17, P18 h18 18, P19 h19 19, P20 h20 20, P21 h21 21, P22 h22 22, P23 h23 23)
    (P0 h0 0, P1 h1 1, P2 h2 2, P3 h3 3, P4 h4 4, P5 h5 5, P6 h6 6, P7 h7 7, P8 h8 8, P9 h9 9, P10 h10 10, P11 h11 11, P12 h12 12, P13 h13 13, P14 h14 14, P15 h15 15, P16 h16 16, P17 h17 17, P18 h18 18, P19 h19 19, P20 h20 20, P21 h21 21, P22 h22 22, P23 h23 23, P24 h24 24)
    (P0 h0 0, P1 h1 1, P2 h2 2, P3 h3 3, P4 h4 4, P5 h5 5, P6 h6 6, P7 h7 7, P8 h8 8, P9 h9 9, P10 h10 10, P11 h11 11, P12 h12 12, P13 h13 13, P14 h14 14, P15 h15 15, P16 h16 16, P17 h17 17, P18 h18 18, P19 h19 19, P20 h20 20, P21 h21 21, P22 h22 22, P23 h23 23, P24 h24 24, P25 h25 25)
    (P0 h0 0, P1 h1 1, P2 h2 2, P3 h3 3, P4 h4 4, P5 h5 5, P6 h6 6, P7 h7 7, P8 h8 8, P9 h9 9, P10 h10 10, P11 h11 11, P12 h12 12, P13 h13 13, P14 h14 14, P15 h15 15, P16 h16 16, P17 h17 17, P18 h18 18, P19 h19 19, P20 h20 20, P21 h21 21, P22 h22 22, P23 h23 23, P24 h24 24, P25 h25 25, P26 h26 26)
    (P0 h0 0, P1 h1 1, P2 h2 2, P3 h3 3, P4 h4 4, P5 h5 5, P6 h6 6, P7 h7 7, P8 h8 8, P9 h9 9, P10 h10 10, P11 h11 11, P12 h12 12, P13 h13 13, P14 h14 14, P15 h15 15, P16 h16 16, P17 h17 17, P18 h18 18, P19 h19 19, P20 h20 20, P21 h21 21, P22 h22 22, P23 h23 23, P24 h24 24, P25 h25 25, P26 h26 26, P27 h27 27)
    (P0 h0 0, P1 h1 1, P2 h2 2, P3 h3 3, P4 h4 4, P5 h5 5, P6 h6 6, P7 h7 7, P8 h8 8, P9 h9 9, P10 h10 10, P11 h11 11, P12 h12 12, P13 h13 13, P14 h14 14, P15 h15 15, P16 h16 16, P17 h17 17, P18 h18 18, P19 h19 19, P20 h20 20, P21 h21 21, P22 h22 22, P23 h23 23, P24 h24 24, P25 h25 25, P26 h26 26, P27 h27 27, P28 h28 28)
    (P0 h0 0, P1 h1 1, P2 h2 2, P3 h3 3, P4 h4 4, P5 h5 5, P6 h6 6, P7 h7 7, P8 h8 8, P9 h9 9, P10 h10 10, P11 h11 11, P12 h12 12, P13 h13 13, P14 h14 14, P15 h15 15, P16 h16 16, P17 h17 17, P18 h18 18, P19 h19 19, P20 h20 20, P21 h21 21, P22 h22 22, P23 h23 23, P24 h24 24, P25 h25 25, P26 h26 26, P27 h27 27, P28 h28 28, P29 h29 29)
    (P0 h0 0, P1 h1 1, P2 h2 2, P3 h3 3, P4 h4 4, P5 h5 5, P6 h6 6, P7 h7 7, P8 h8 8, P9 h9 9, P10 h10 10, P11 h11 11, P12 h12 12, P13 h13 13, P14 h14 14, P15 h15 15, P16 h16 16, P17 h17 17, P18 h18 18, P19 h19 19, P20 h20 20, P21 h21 21, P22 h22 22, P23 h23 23, P24 h24 24, P25 h25 25, P26 h26 26, P27 h27 27, P28 h28 28, P29 h29 29, P30 h30 30)
    (P0 h0 0, P1 h1 1, P2 h2 2, P3 h3 3, P4 h4 4, P5 h5 5, P6 h6 6, P7 h7 7, P8 h8 8, P9 h9 9, P10 h10 10, P11 h11 11, P12 h12 12, P13 h13 13, P14 h14 14, P15 h15 15, P16 h16 16, P17 h17 17, P18 h18 18, P19 h19 19, P20 h20 20, P21 h21 21, P22 h22 22, P23 h23 23, P24 h24 24, P25 h25 25, P26 h26 26, P27 h27 27, P28 h28 28, P29 h29 29, P30 h30 30, P31 h31 31)
}

/// A boxed kernel: the kernel of an operator whose schema has `...` or
/// `Any` (a higher-order operator's), which no Rust signature can type. It
/// takes the call's values as they are and returns its results as values
/// (PyTorch's `KernelFunction::makeFromBoxedFunction`); `#[kernel]` checks
/// that an operator's kernel has this signature exactly when its schema
/// says so.
pub type BoxedKernel = fn(&[Value]) -> Result<Vec<Value>>;

/// The boxed signature's spec: the values go through as they are.
impl Adapter<BoxedKernel> for fn(&'static [Value]) -> Result<Vec<Value>> {
    type Ret = Vec<Value>;
    const ARITY: usize = 0;
    const VARIADIC: bool = true;

    #[inline]
    fn call(f: &BoxedKernel, _: &Operator, args: &[Value]) -> Result<Vec<Value>> {
        f(args)
    }
}

/// Checks the argument count, then [`Adapter::call`].
#[inline]
fn adapt<S: 'static, Spec: Adapter<S>>(
    f: KernelFn,
    op: &Operator,
    args: &[Value],
) -> Result<Spec::Ret> {
    if !Spec::VARIADIC && args.len() != Spec::ARITY {
        return Err(Error::Runtime(
            format!(
                "{}: expected {} arguments, got {}",
                op.schema.name,
                Spec::ARITY,
                args.len()
            )
            .into(),
        ));
    }
    let f = (f as &dyn Any).downcast_ref::<S>().ok_or_else(|| {
        Error::Runtime(
            format!(
                "{}: a kernel registered with another signature than its adapter's",
                op.schema.name
            )
            .into(),
        )
    })?;
    Spec::call(f, op, args)
}

/// A kernel's boxed entry: [`Adapter::call`], the results boxed one value per
/// return.
fn boxed<S: 'static, Spec: Adapter<S>>(
    f: KernelFn,
    op: &Operator,
    _keys: KeySet,
    args: &[Value],
) -> Result<Vec<Value>> {
    adapt::<S, Spec>(f, op, args).map(Returns::into_values)
}

/// A kernel's unboxed entry: the function pointer, typed.
fn unboxed<S: Copy + Send + Sync + 'static>(f: KernelFn) -> Option<Unboxed> {
    (f as &dyn Any)
        .downcast_ref::<S>()
        .copied()
        .map(Unboxed::new)
}

/// How a link-time kernel entry is called (its adapter's instances, made by
/// [`Entry::new`]).
#[derive(Clone, Copy)]
pub struct Entry {
    /// The function, as its signature's function pointer.
    pub(crate) func: KernelFn,
    /// Boxed calls: values in, values out.
    pub(crate) boxed: EntryBoxedFn,
    /// The typed pointer (`None` only if `func` is not of the type `boxed`
    /// was made for, which [`Entry::new`]'s types rule out).
    pub(crate) unboxed: fn(KernelFn) -> Option<Unboxed>,
}

impl Entry {
    /// The entry of `f`, of signature `S` described by `Spec`.
    pub const fn new<S, Spec>(f: &'static S) -> Entry
    where
        S: Copy + Send + Sync + 'static,
        Spec: Adapter<S>,
    {
        Entry {
            func: f,
            boxed: boxed::<S, Spec>,
            unboxed: unboxed::<S>,
        }
    }

    /// The same entry with another boxed entry point: made from one
    /// function, an entry's boxed and typed calls cannot disagree; this
    /// makes them, for testing what notices (`opcheck`'s typed-call family).
    #[doc(hidden)]
    pub const fn with_boxed(self, boxed: EntryBoxedFn) -> Entry {
        Entry { boxed, ..self }
    }
}

/// A call of a typed API function (`at::<op>`) with boxed arguments, each
/// unboxed to the type the function takes, the results boxed again as one
/// value (a single result's value, a list for several:
/// [`Returns::into_value`]). What `opcheck`'s typed-call family compares with
/// the boxed call, and what a captured graph's interpreter calls.
#[derive(Clone, Copy)]
pub struct TypedCaller {
    func: KernelFn,
    call: fn(KernelFn, &Operator, &[Value]) -> Result<Value>,
}

impl std::fmt::Debug for TypedCaller {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TypedCaller")
    }
}

fn typed<S: 'static, Spec: Adapter<S>>(
    f: KernelFn,
    op: &Operator,
    args: &[Value],
) -> Result<Value> {
    adapt::<S, Spec>(f, op, args).map(Returns::into_value)
}

impl TypedCaller {
    /// The caller of `f`, of signature `S` described by `Spec`.
    pub const fn new<S, Spec>(f: &'static S) -> TypedCaller
    where
        S: Send + Sync + 'static,
        Spec: Adapter<S>,
    {
        TypedCaller {
            func: f,
            call: typed::<S, Spec>,
        }
    }

    /// The caller of an operator that has no typed API (a boxed kernel's,
    /// [`BoxedKernel`]): the boxed call itself.
    pub const fn boxed() -> TypedCaller {
        fn call(_: KernelFn, op: &Operator, args: &[Value]) -> Result<Value> {
            op.call_boxed(args).map(crate::value::typed::one_value)
        }
        TypedCaller { func: &(), call }
    }

    /// Calls the function with `args`, boxed (one per schema argument of
    /// `op`).
    #[inline]
    pub fn call(&self, op: &Operator, args: &[Value]) -> Result<Value> {
        (self.call)(self.func, op, args)
    }
}
