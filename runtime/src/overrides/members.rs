//! The hand-written `Tensor` members that go through the protocol: property
//! getters and Python-level methods (PyTorch defines these in `torch/_tensor.py`
//! or as C++ getters; the generated methods come from the schema).

use super::index::{apply_index, index_list, TensorIndex};
use crate::error::{Error, Result};
use crate::tensor::{Device, Layout, Scalar, Tensor};
use crate::value::Value;

/// A boxed implementation: positional and keyword arguments to a result.
pub type BoxedImpl = fn(&[Value], &[(String, Value)]) -> Result<Value>;

/// A hand-written `Tensor` member that goes through the protocol: a property
/// getter (`Tensor.shape.__get__`) or a Python-level method/dunder
/// (`Tensor.__getitem__`).
pub struct Member {
    /// The member name (`shape`, `__getitem__`).
    pub name: &'static str,
    /// A property getter (`Tensor.<name>.__get__`) rather than a method.
    pub property: bool,
    /// Whether results of the default handler are returned as they are, not
    /// converted to the subclass (`get_default_nowrap_functions`).
    pub nowrap: bool,
    /// The Python parameters, for the testing stub (`(self)`, `(self, index)`).
    pub params: &'static [&'static str],
    /// The implementation, on boxed arguments (`args[0]` is the tensor).
    pub imp: BoxedImpl,
}

fn this(args: &[Value]) -> Result<&Tensor> {
    match args.first() {
        Some(Value::Tensor(t)) => Ok(t),
        Some(other) => Err(Error::Type(
            format!(
                "descriptor requires a 'torch._C.TensorBase' object but received a '{}'",
                other.type_name()
            )
            .into(),
        )),
        None => Err(Error::Type("descriptor needs an argument".into())),
    }
}

fn arg<'a>(
    args: &'a [Value],
    kwargs: &'a [(String, Value)],
    i: usize,
    name: &str,
) -> Result<&'a Value> {
    args.get(i)
        .or_else(|| kwargs.iter().find(|(k, _)| k == name).map(|(_, v)| v))
        .ok_or_else(|| Error::Type(format!("missing required argument '{name}'").into()))
}

pub(crate) fn reversed(t: &Tensor) -> Result<Tensor> {
    let dims: Vec<i64> = (0..t.dim() as i64).rev().collect();
    crate::at::permute(t, &dims)
}

pub(crate) fn len(t: &Tensor) -> Result<i64> {
    match t.shape().first() {
        Some(&n) => Ok(n as i64),
        None => Err(Error::Type("len() of a 0-d tensor".into())),
    }
}

pub(crate) fn item(t: &Tensor) -> Result<Scalar> {
    if t.numel() != 1 {
        return Err(Error::Runtime(
            format!(
                "a Tensor with {} elements cannot be converted to Scalar",
                t.numel()
            )
            .into(),
        ));
    }
    t.item()
}

pub(crate) fn setitem(t: &Tensor, index: &[TensorIndex], value: &Tensor) -> Result<()> {
    let mut view = apply_index(t, index)?;
    crate::at::copy_(&mut view, value, false).map(|_| ())
}

macro_rules! members {
    ($($idx:ident = $name:literal, $property:literal, $nowrap:literal, [$($p:literal),*], $imp:expr;)*) => {
        members!(@consts 0usize, $($idx)*);
        /// Every hand-written member, in this order (indexes are the constants above).
        pub static MEMBERS: &[Member] = &[$(Member {
            name: $name,
            property: $property,
            nowrap: $nowrap,
            params: &[$($p),*],
            imp: $imp,
        }),*];
    };
    (@consts $n:expr, $first:ident $($rest:ident)*) => {
        pub(crate) const $first: usize = $n;
        members!(@consts $n + 1usize, $($rest)*);
    };
    (@consts $n:expr,) => {};
}

members! {
    SHAPE = "shape", true, false, ["self"], |a, _| Ok(Value::IntList(this(a)?.sizes()));
    DTYPE = "dtype", true, false, ["self"], |a, _| Ok(Value::DType(this(a)?.dtype()));
    DEVICE = "device", true, false, ["self"], |a, _| Ok(Value::Device(this(a)?.device()));
    NDIM = "ndim", true, false, ["self"], |a, _| Ok(Value::Int(this(a)?.dim() as i64));
    LAYOUT = "layout", true, false, ["self"], |a, _| { this(a)?; Ok(Value::Layout(Layout::Strided)) };
    IS_META = "is_meta", true, false, ["self"], |a, _| Ok(Value::Bool(this(a)?.device() == Device::Meta));
    T = "T", true, false, ["self"], |a, _| reversed(this(a)?).map(Value::Tensor);
    GRAD = "grad", true, true, ["self"], |a, _| Ok(this(a)?.grad().map_or(Value::None, Value::Tensor));
    LEN = "__len__", false, false, ["self"], |a, _| len(this(a)?).map(Value::Int);
    REPR = "__repr__", false, false, ["self", "*", "tensor_contents=None"], |a, _| Ok(Value::Str(this(a)?.to_string()));
    BOOL = "__bool__", false, false, ["self"], |a, _| item(this(a)?).map(|s| Value::Bool(s.to_bool()));
    FLOAT = "__float__", false, false, ["self"], |a, _| item(this(a)?).map(|s| Value::Float(s.to_f64()));
    GETITEM = "__getitem__", false, false, ["self", "indices"], |a, k| {
        let t = this(a)?;
        let index = index_list(arg(a, k, 1, "indices")?)?;
        apply_index(t, &index).map(Value::Tensor)
    };
    BACKWARD = "backward", false, true, ["self", "gradient=None", "retain_graph=None", "create_graph=False", "inputs=None"], |a, k| {
        let t = this(a)?;
        let opt = |i: usize, name: &str| a.get(i).or_else(|| k.iter().find(|(n, _)| n == name).map(|(_, v)| v));
        let gradient = match opt(1, "gradient") {
            Some(Value::Tensor(g)) => Some(g.clone()),
            _ => None,
        };
        let retain_graph = match opt(2, "retain_graph") {
            Some(Value::Bool(b)) => Some(*b),
            _ => None,
        };
        let create_graph = matches!(opt(3, "create_graph"), Some(Value::Bool(true)));
        let inputs: Option<Vec<Tensor>> = match opt(4, "inputs") {
            Some(Value::Tensor(x)) => Some(vec![x.clone()]),
            Some(Value::TensorList(xs)) => Some(xs.to_vec()),
            _ => None,
        };
        crate::autograd::backward(std::slice::from_ref(t), &[gradient], retain_graph, create_graph, inputs.as_deref())
            .map(|()| Value::None)
    };
    SETITEM = "__setitem__", false, false, ["self", "indices", "val"], |a, k| {
        let t = this(a)?;
        let index = index_list(arg(a, k, 1, "indices")?)?;
        let value = match arg(a, k, 2, "val")? {
            Value::Tensor(v) => v.clone(),
            Value::Int(i) => Tensor::from_scalar(Scalar::Int(*i), t.dtype(), Device::Cpu),
            Value::Float(x) => Tensor::from_scalar(Scalar::Float(*x), t.dtype(), Device::Cpu),
            Value::Bool(b) => Tensor::from_scalar(Scalar::Bool(*b), t.dtype(), Device::Cpu),
            other => return Err(Error::Type(format!("can't assign a {} to a Tensor", other.type_name()).into())),
        };
        setitem(t, &index, &value).map(|_| Value::None)
    };
}
