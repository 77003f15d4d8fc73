//! Schema-level resolution: `torch.ops.aten.<name>(*args, **kwargs)` on an overload
//! packet, or on one overload handle (`torch.ops.aten.add.Tensor(...)`), exactly as
//! PyTorch does it (`torch/_ops.py`'s `OpOverloadPacket`, and
//! `createStackForSchema` in `torch/csrc/jit/python/pybind_utils.h`).
//!
//! Each overload is tried in packet order: the call's Python values are converted
//! to the schema's types with the rules of TorchScript's `toIValue` (an int for a
//! `float`, `True` for an `int`, a bare int for `int[2]`, a dtype code for a
//! `ScalarType`, `None` for an undefined `Tensor`, …), keywords and defaults fill
//! the rest; the first overload that accepts wins. When none does, the error lists
//! every candidate (TorchScript-only ones included) with PyTorch's wording:
//! `Overloaded torch operator invoked from Python failed to match any schema:` and
//! one paragraph per candidate. A single candidate raises its own message.
//!
//! Python numbers given for a `Tensor` are accepted only for the operators PyTorch
//! allow-lists (`add`, `mul`, `div`, …); they stay numbers in the bound values
//! (PyTorch's "wrapped numbers", which normalization turns back into numbers).

use crate::bind::default_value;
use crate::error::Error;
use crate::place::{place, Keywords, Limit, Misplaced, Policy, Rules, Source, Taken};

use crate::tables::{BaseType, OpSchema, Ty};
use crate::tensor::{DType, Device, Layout, MemoryFormat, Scalar};
use crate::value::Value;
use opforge_schema::signature::{parse_params, split_call};

/// A successful resolution: which overload, and its bound values (one per schema
/// argument, converted, defaults filled in).
#[derive(Clone, Debug)]
pub struct Resolved {
    /// Index of the chosen overload in the packet.
    pub index: usize,
    /// The chosen overload.
    pub overload: Overload,
    /// One value per schema argument (for an overload kept as text only, defaults
    /// are `None`: such an overload is never dispatched).
    pub bound: Vec<Value>,
}

/// Operators whose `Tensor` arguments accept Python numbers at the schema level
/// (PyTorch's `should_allow_numbers_as_tensors`).
pub const NUMBERS_AS_TENSORS: &[&str] = &[
    "add",
    "add_",
    "add_out",
    "div",
    "div_",
    "div_out",
    "divide",
    "divide_",
    "divide_out",
    "mul",
    "mul_",
    "mul_out",
    "multiply",
    "multiply_",
    "multiply_out",
    "sub",
    "sub_",
    "sub_out",
    "subtract",
    "subtract_",
    "subtract_out",
    "true_divide",
    "true_divide_",
    "true_divide_out",
    "to",
    "_to_copy",
    "copy_",
    "copy",
    "floor_divide",
    "floor_divide_",
    "floor_divide_out",
    "_conj",
];

/// A TorchScript type as `toIValue` sees it (the schema's real type).
#[derive(Clone, Debug, PartialEq)]
enum JitTy {
    Base(BaseType),
    Optional(Box<JitTy>),
    List(Box<JitTy>, Option<u32>),
    /// A type `toIValue` cannot convert to (`t`, `AnyEnumType`, `Generator`, …) or
    /// does not know here (`Dict(str, t)`); the name as PyTorch prints it.
    Other(String),
    /// `Any`: accepts everything.
    Any,
}

impl JitTy {
    fn from_ty(t: &Ty) -> JitTy {
        match t {
            Ty::Base(BaseType::Any) => JitTy::Any,
            Ty::Base(b) => JitTy::Base(*b),
            Ty::CustomClass(c) => JitTy::Other(format!("__torch__.torch.classes.{c}")),
            Ty::Optional(i) => JitTy::Optional(Box::new(JitTy::from_ty(i))),
            Ty::List(e, n) => JitTy::List(Box::new(JitTy::from_ty(e)), *n),
        }
    }

    /// Parses a TorchScript type written in a schema (`t[]`, `Tensor(a!)[]`,
    /// `AnyEnumType`, `Dict(str, t)`, `int[2]?`).
    fn parse(s: &str) -> JitTy {
        let s = s.trim();
        if s.contains('(') && !s.starts_with("Dict") && !s.starts_with("Tuple") {
            // Alias annotations: `Tensor(a!)`, `t[](a!)`.
            let mut plain = String::new();
            let mut depth = 0;
            for c in s.chars() {
                match c {
                    '(' => depth += 1,
                    ')' => depth -= 1,
                    c if depth == 0 => plain.push(c),
                    _ => {}
                }
            }
            return JitTy::parse(&plain);
        }
        if let Some(inner) = s.strip_suffix('?') {
            return JitTy::Optional(Box::new(JitTy::parse(inner)));
        }
        if let Some(open) = s.rfind('[') {
            if s.ends_with(']') && !s.starts_with("Dict") {
                let n = s[open + 1..s.len() - 1].parse().ok();
                return JitTy::List(Box::new(JitTy::parse(&s[..open])), n);
            }
        }
        match BaseType::from_name(s) {
            Some(BaseType::Any) => JitTy::Any,
            Some(b) => JitTy::Base(b),
            None => JitTy::Other(s.to_string()),
        }
    }

    /// PyTorch's `repr_str` of the argument's (fake) type, as error messages print it.
    fn repr(&self) -> String {
        match self {
            JitTy::Base(b) => match b {
                BaseType::Scalar => "number".into(),
                BaseType::SymInt
                | BaseType::ScalarType
                | BaseType::Layout
                | BaseType::MemoryFormat
                | BaseType::DeviceIndex => "int".into(),
                BaseType::SymBool => "bool".into(),
                BaseType::Dimname => "str".into(),
                other => other.name().to_string(),
            },
            JitTy::Optional(i) => format!("Optional[{}]", i.repr()),
            JitTy::List(e, _) => format!("List[{}]", e.repr()),
            JitTy::Other(s) => s.clone(),
            JitTy::Any => "Any".into(),
        }
    }
}

/// One argument of a candidate schema.
struct Param {
    name: String,
    ty: JitTy,
    kwarg_only: bool,
    /// The default, converted; `Some(None)`-like absence is `has_default` without a
    /// value (a TorchScript-only schema kept as text).
    default: Option<Value>,
    has_default: bool,
}

/// A candidate: the parsed schema when there is one, else the arguments read from
/// the schema text.
struct Candidate {
    params: Vec<Param>,
    /// `...` ends the arguments: positional values past them go on as they
    /// are (`createStackForSchema` with `is_vararg`).
    vararg: bool,
}

impl Candidate {
    fn of(o: &Overload) -> Candidate {
        match o.op {
            Some(s) => Candidate::from_schema(s),
            None => Candidate::from_text(o.schema_text),
        }
    }

    fn from_schema(s: &OpSchema) -> Candidate {
        Candidate {
            params: s
                .args
                .iter()
                .map(|a| Param {
                    name: a.name.to_string(),
                    ty: JitTy::from_ty(&a.ty),
                    kwarg_only: a.kwarg_only,
                    default: default_value(a),
                    has_default: a.default.is_some(),
                })
                .collect(),
            vararg: s.varargs,
        }
    }

    fn from_text(text: &str) -> Candidate {
        let list = split_call(text).map_or("", |(_, list, _)| list);
        let mut params = parse_params(list);
        let vararg = params
            .last()
            .is_some_and(|p| p.ty.is_empty() && p.name == "...");
        if vararg {
            params.pop();
        }
        let params = params
            .into_iter()
            .map(|p| {
                // A lone word is a type without a name.
                let (ty, name) = match p.ty.as_str() {
                    "" => (p.name.as_str(), ""),
                    ty => (ty, p.name.as_str()),
                };
                Param {
                    name: name.trim().to_string(),
                    ty: JitTy::parse(ty),
                    kwarg_only: p.kwarg_only,
                    default: None,
                    has_default: p.default.is_some(),
                }
            })
            .collect();
        Candidate { params, vararg }
    }
}

/// Why one value did not convert.
enum ConvError {
    /// A pybind cast error: the text after `Cast error details: `.
    Cast(String),
    /// pybind11's generic cast failure, for a value of this Python class: its
    /// text (`Unable to cast Python instance of type …`) is kept for PyTorch's
    /// own operators, whose messages the corpora record; a library's operator
    /// gets a detail a Rust user can act on instead.
    Pybind(&'static str),
    /// A Python exception: the text after ` Python error details: `.
    Python(String),
    /// An error that is not a schema mismatch: it ends the whole call.
    Hard(Error),
}

/// `py::repr` of a value.
pub fn py_repr(v: &Value) -> String {
    match v {
        Value::Str(s) => {
            let q = if s.contains('\'') && !s.contains('"') {
                '"'
            } else {
                '\''
            };
            let mut out = String::from(q);
            for c in s.chars() {
                match c {
                    '\\' => out.push_str("\\\\"),
                    '\n' => out.push_str("\\n"),
                    '\t' => out.push_str("\\t"),
                    c if c == q => {
                        out.push('\\');
                        out.push(c);
                    }
                    c => out.push(c),
                }
            }
            out.push(q);
            out
        }
        Value::Float(x) => py_float(*x),
        Value::Tensor(t) => {
            let shape: Vec<String> = t.shape().iter().map(|d| d.to_string()).collect();
            let size = match shape.len() {
                1 => format!("({},)", shape[0]),
                _ => format!("({})", shape.join(", ")),
            };
            let dtype = if t.dtype() == DType::Float32 {
                String::new()
            } else {
                format!(", dtype={}", t.dtype())
            };
            format!("tensor(..., device='{}', size={size}{dtype})", t.device())
        }
        Value::Device(d) => format!("device(type='{d}')"),
        Value::Layout(_) => "torch.strided".into(),
        Value::MemoryFormat(m) => format!("torch.{}", m.name()),
        other => match crate::normalize::list_items(other) {
            Some(items) => {
                let parts: Vec<String> = items.iter().map(py_repr).collect();
                format!("[{}]", parts.join(", "))
            }
            None => other.to_string(),
        },
    }
}

/// `py::str` of a value (`repr` except for strings).
pub fn py_str(v: &Value) -> String {
    match v {
        Value::Str(s) => s.clone(),
        other => py_repr(other),
    }
}

/// Python's `repr` of a float (`1.0`, `2.5`, `1e-05`, `inf`, `nan`): [`crate::pyfmt::repr_float`].
pub use crate::pyfmt::repr_float as py_float;

/// The Python class name (`type(v).__name__`), as "found type" prints it.
fn friendly_type(v: &Value) -> &'static str {
    match v {
        Value::DType(_) | Value::ScalarTypeCode(_) => "dtype",
        Value::Device(_) => "device",
        Value::Layout(_) => "layout",
        Value::MemoryFormat(_) => "memory_format",
        other => other.type_name(),
    }
}

/// The qualified class as pybind prints it (`<class 'torch.Tensor'>`).
fn py_class(v: &Value) -> &'static str {
    match v {
        Value::Tensor(_) => "torch.Tensor",
        Value::DType(_) | Value::ScalarTypeCode(_) => "torch.dtype",
        Value::Device(_) => "torch.device",
        Value::Layout(_) => "torch.layout",
        Value::MemoryFormat(_) => "torch.memory_format",
        other => other.type_name(),
    }
}

fn cast_fail(v: &Value) -> ConvError {
    ConvError::Pybind(py_class(v))
}

/// pybind11's text for a failed cast of a `class` instance (release build).
fn pybind_text(class: &str) -> String {
    format!(
        "Unable to cast Python instance of type <class '{class}'> to C++ type '?' (#define PYBIND11_DETAILED_ERROR_MESSAGES or compile in debug mode for details)"
    )
}

fn not_iterable(v: &Value) -> ConvError {
    ConvError::Python(format!(
        "TypeError: '{}' object is not iterable",
        friendly_type(v)
    ))
}

fn is_meta_tensor(v: &Value) -> bool {
    matches!(v, Value::Tensor(t) if t.device() == Device::Meta)
}

/// The PyTorch `ScalarType` code of a dtype ([`DType::code`]).
pub fn dtype_code(d: DType) -> i64 {
    d.code()
}

/// The dtype of a PyTorch `ScalarType` code, if this runtime has it
/// ([`DType::from_code`]).
pub fn dtype_of_code(c: i64) -> Option<DType> {
    DType::from_code(c)
}

/// `py::cast<int64_t>`: ints and bools.
fn cast_int(v: &Value) -> Option<i64> {
    match v {
        Value::Int(i) => Some(*i),
        Value::Bool(b) => Some(i64::from(*b)),
        Value::Tensor(t) if t.device() != Device::Meta && t.numel() == 1 => match t.item().ok()? {
            Scalar::Int(i) => Some(i),
            Scalar::Bool(b) => Some(i64::from(b)),
            Scalar::Float(_) => None,
        },
        _ => None,
    }
}

/// `py::cast<double>`: floats, ints, bools.
fn cast_float(v: &Value) -> Option<f64> {
    match v {
        Value::Float(x) => Some(*x),
        Value::Int(i) => Some(*i as f64),
        Value::Bool(b) => Some(f64::from(u8::from(*b))),
        Value::Tensor(t) if t.device() != Device::Meta && t.numel() == 1 => match t.item().ok()? {
            Scalar::Int(i) => Some(i as f64),
            Scalar::Bool(b) => Some(f64::from(u8::from(b))),
            Scalar::Float(x) => Some(x),
        },
        _ => None,
    }
}

/// `py::cast<bool>` (with conversion): bools, numbers by truth, `None` → false.
fn cast_bool(v: &Value) -> Option<bool> {
    match v {
        Value::Bool(b) => Some(*b),
        Value::Int(i) => Some(*i != 0),
        Value::Float(x) => Some(*x != 0.0),
        Value::None => Some(false),
        _ => None,
    }
}

/// The items of a Python sequence (`list`/`tuple`), `None` for anything else.
fn sequence(v: &Value) -> Option<Vec<Value>> {
    crate::normalize::list_items(v)
}

const DEVICE_TYPES: &str = "cpu, cuda, ipu, xpu, mkldnn, opengl, opencl, ideep, hip, ve, fpga, maia, xla, lazy, vulkan, mps, meta, hpu, mtia, privateuseone";

/// TorchScript's `toIValue`: converts one Python value to a schema type.
fn to_ivalue(v: &Value, t: &JitTy, n: Option<u32>, numbers: bool) -> Result<Value, ConvError> {
    use BaseType as B;
    let b = match t {
        JitTy::Any => return Ok(v.clone()),
        JitTy::Other(name) if name.starts_with("__torch__.torch.classes.") => {
            // A custom class: an object of that class.
            return match v {
                Value::Object(o) if o.type_name() == name => Ok(v.clone()),
                Value::Object(o) => Err(ConvError::Cast(format!(
                    "an object of {} is not a {name}",
                    o.type_name()
                ))),
                other => Err(ConvError::Cast(format!(
                    "Unable to cast {} to {name}",
                    py_str(other)
                ))),
            };
        }
        JitTy::Other(name) => {
            return Err(ConvError::Cast(format!(
                "toIValue() cannot handle converting to type: {name}"
            )))
        }
        JitTy::Optional(inner) => {
            return match v {
                Value::None => Ok(Value::None),
                v => to_ivalue(v, inner, n, numbers),
            }
        }
        JitTy::List(elem, size) => return to_list(v, elem, n.or(*size), numbers),
        JitTy::Base(b) => *b,
    };
    let meta = |what: &str| {
        ConvError::Cast(format!(
            "cannot extract {what} from tensor with meta storage"
        ))
    };
    Ok(match b {
        B::Tensor => match v {
            Value::None | Value::Tensor(_) => v.clone(),
            Value::Int(_) | Value::Float(_) | Value::Bool(_) if numbers => v.clone(),
            other => {
                return Err(ConvError::Cast(format!(
                    "Unable to cast {} to Tensor",
                    py_str(other)
                )))
            }
        },
        B::Float => {
            if is_meta_tensor(v) {
                return Err(meta("float"));
            }
            Value::Float(cast_float(v).ok_or_else(|| cast_fail(v))?)
        }
        B::Int | B::DeviceIndex => match v {
            Value::DType(d) => Value::Int(dtype_code(*d)),
            Value::ScalarTypeCode(c) => Value::Int(*c),
            Value::Layout(_) => Value::Int(0),
            Value::MemoryFormat(m) => Value::Int(m.code()),
            v if is_meta_tensor(v) => return Err(meta("int")),
            v => Value::Int(cast_int(v).ok_or_else(|| cast_fail(v))?),
        },
        B::SymInt => Value::Int(match v {
            Value::Int(i) => *i,
            Value::Bool(b) => i64::from(*b),
            _ => return Err(cast_fail(v)),
        }),
        B::ScalarType => match v {
            Value::DType(d) => Value::DType(*d),
            Value::ScalarTypeCode(c) => Value::ScalarTypeCode(*c),
            v => {
                let c = cast_int(v).ok_or_else(|| cast_fail(v))?;
                dtype_of_code(c).map_or(Value::ScalarTypeCode(c), Value::DType)
            }
        },
        B::Layout => match v {
            Value::Layout(l) => Value::Layout(*l),
            v => {
                let c = cast_int(v).ok_or_else(|| cast_fail(v))?;
                Layout::from_code(c).map_or(Value::Int(c), Value::Layout)
            }
        },
        B::MemoryFormat => match v {
            Value::MemoryFormat(m) => Value::MemoryFormat(*m),
            v => {
                let c = cast_int(v).ok_or_else(|| cast_fail(v))?;
                MemoryFormat::from_code(c).map_or(Value::Int(c), Value::MemoryFormat)
            }
        },
        B::Bool | B::SymBool => {
            if is_meta_tensor(v) {
                return Err(meta("bool"));
            }
            Value::Bool(cast_bool(v).ok_or_else(|| cast_fail(v))?)
        }
        B::Scalar => match v {
            Value::DType(d) => Value::Int(dtype_code(*d)),
            Value::ScalarTypeCode(c) => Value::Int(*c),
            Value::Layout(_) => Value::Int(0),
            Value::Int(_) | Value::Float(_) | Value::Bool(_) => v.clone(),
            other => {
                return Err(ConvError::Cast(format!(
                    "Cannot cast {} to number",
                    py_str(other)
                )))
            }
        },
        B::Complex => match v {
            Value::Int(_) | Value::Float(_) | Value::Bool(_) => {
                Value::Float(cast_float(v).unwrap_or(0.0))
            }
            _ => return Err(cast_fail(v)),
        },
        B::Str | B::Dimname => match v {
            Value::Str(_) => v.clone(),
            _ => return Err(cast_fail(v)),
        },
        B::Device => match v {
            Value::Device(_) => v.clone(),
            Value::Str(s) => match Device::from_name(s) {
                Some(d) => Value::Device(d),
                None => {
                    let ty = s.split(':').next().unwrap_or("");
                    let known = DEVICE_TYPES.split(", ").any(|k| k == ty);
                    return Err(ConvError::Hard(Error::Runtime(if known {
                        format!("opforge has no device '{s}' (only cpu and meta)")
                    } else {
                        format!(
                            "Expected one of {DEVICE_TYPES} device type at start of device string: {s}"
                        )
                    }.into())));
                }
            },
            _ => return Err(cast_fail(v)),
        },
        B::Storage => return Err(cast_fail(v)),
        other => {
            return Err(ConvError::Cast(format!(
                "toIValue() cannot handle converting to type: {}",
                other.name()
            )))
        }
    })
}

fn to_list(v: &Value, elem: &JitTy, n: Option<u32>, numbers: bool) -> Result<Value, ConvError> {
    use BaseType as B;
    match elem {
        JitTy::Base(B::Int) => {
            if let (Some(n), Value::Int(_) | Value::Bool(_)) = (n, v) {
                let x = cast_int(v).unwrap_or(0);
                return Ok(Value::IntList(vec![x; n as usize]));
            }
            let items = sequence(v).ok_or_else(|| cast_fail(v))?;
            let xs: Option<Vec<i64>> = items.iter().map(cast_int).collect();
            Ok(Value::IntList(xs.ok_or_else(|| cast_fail(v))?))
        }
        JitTy::Base(B::SymInt) => {
            let items = match v {
                Value::Str(s) => s.chars().map(|c| Value::Str(c.to_string())).collect(),
                Value::Tensor(_) => return Err(cast_fail(v)),
                v => sequence(v).ok_or_else(|| not_iterable(v))?,
            };
            let mut xs = Vec::with_capacity(items.len());
            for it in &items {
                xs.push(match it {
                    Value::Int(i) => *i,
                    Value::Bool(b) => i64::from(*b),
                    other => return Err(cast_fail(other)),
                });
            }
            Ok(Value::IntList(xs))
        }
        JitTy::Base(B::Float) => {
            if let (Some(n), Value::Float(x)) = (n, v) {
                return Ok(Value::FloatList(vec![*x; n as usize]));
            }
            let items = sequence(v).ok_or_else(|| cast_fail(v))?;
            let xs: Option<Vec<f64>> = items
                .iter()
                .map(|x| {
                    if is_meta_tensor(x) {
                        None
                    } else {
                        cast_float(x)
                    }
                })
                .collect();
            Ok(Value::FloatList(xs.ok_or_else(|| cast_fail(v))?))
        }
        JitTy::Base(B::Bool) => {
            let items = sequence(v).ok_or_else(|| cast_fail(v))?;
            let xs: Option<Vec<bool>> = items.iter().map(cast_bool).collect();
            Ok(Value::BoolList(xs.ok_or_else(|| cast_fail(v))?))
        }
        JitTy::Base(B::Tensor) => {
            let items = sequence(v).ok_or_else(|| cast_fail(v))?;
            let ts: Option<Vec<_>> = items
                .into_iter()
                .map(|x| match x {
                    Value::Tensor(t) => Some(t),
                    _ => None,
                })
                .collect();
            Ok(Value::TensorList(ts.ok_or_else(|| cast_fail(v))?))
        }
        elem => {
            // createGenericList: iterate, convert each element.
            let items = match v {
                Value::Str(s) => s.chars().map(|c| Value::Str(c.to_string())).collect(),
                Value::Tensor(t) if t.dim() == 0 => {
                    return Err(ConvError::Python(
                        "TypeError: iteration over a 0-d tensor".into(),
                    ))
                }
                Value::Tensor(_) => {
                    // Iterating gives tensors (the rows); converting one decides.
                    to_ivalue(v, elem, None, numbers)?;
                    return Err(cast_fail(v));
                }
                v => sequence(v).ok_or_else(|| not_iterable(v))?,
            };
            let mut out = Vec::with_capacity(items.len());
            for it in &items {
                out.push(to_ivalue(it, elem, None, numbers)?);
            }
            Ok(match elem {
                JitTy::Optional(i) if **i == JitTy::Base(B::Tensor) => Value::OptTensorList(
                    out.into_iter()
                        .map(|x| match x {
                            Value::Tensor(t) => Some(t),
                            _ => None,
                        })
                        .collect(),
                ),
                JitTy::Base(B::Scalar) => Value::ScalarList(
                    out.into_iter()
                        .map(|x| match x {
                            Value::Bool(b) => Scalar::Bool(b),
                            Value::Int(i) => Scalar::Int(i),
                            Value::Float(f) => Scalar::Float(f),
                            _ => Scalar::Int(0),
                        })
                        .collect(),
                ),
                _ => Value::List(out.into()),
            })
        }
    }
}

/// Why one candidate did not accept the call.
enum Mismatch {
    /// A schema-match error (the message of this candidate).
    Schema(String),
    /// An error that ends the call.
    Hard(Error),
}

impl crate::place::Param for Param {
    fn name(&self) -> &str {
        &self.name
    }
    fn keyword_only(&self) -> bool {
        self.kwarg_only
    }
    fn has_default(&self) -> bool {
        self.has_default
    }
}

/// PyTorch's `createStackForSchema` (`torch/csrc/jit/python/pybind_utils.h`)
/// for one candidate: the placement is [`crate::place::place`]'s, in
/// TorchScript's order (too many values in all; then per argument in order:
/// a positional value for a keyword-only argument, the conversion, the
/// keyword or default, a missing value; then
/// `FunctionSchema::findErrorInKwargs`, `aten/src/ATen/core/function_schema.cpp`).
fn create_stack(
    op: &str,
    text: &str,
    cand: &Candidate,
    args: &[Value],
    kwargs: &[(String, Value)],
    numbers: bool,
) -> Result<Vec<Value>, Mismatch> {
    // `...`: positional values past the declared arguments go on as they
    // are, after them.
    let (args, extra) = match cand.vararg {
        true => {
            let declared = cand.params.iter().filter(|p| !p.kwarg_only).count();
            args.split_at(declared.min(args.len()))
        }
        false => (args, &[][..]),
    };
    let mut call = Stack {
        op,
        text,
        params: &cand.params,
        args,
        kwargs,
        numbers,
        stack: Vec::with_capacity(cand.params.len() + extra.len()),
    };
    place(&cand.params, &mut call)?;
    call.stack.extend_from_slice(extra);
    Ok(call.stack)
}

/// [`create_stack`]'s policy: `toIValue` per value, TorchScript's messages.
struct Stack<'a> {
    op: &'a str,
    text: &'a str,
    params: &'a [Param],
    args: &'a [Value],
    kwargs: &'a [(String, Value)],
    numbers: bool,
    /// One value per argument placed so far.
    stack: Vec<Value>,
}

impl Stack<'_> {
    /// `toIValue` of `v` for argument `i`, or its schema-match message.
    fn convert(&self, i: usize, v: &Value) -> Result<Value, Mismatch> {
        let (op, text) = (self.op, self.text);
        let p = &self.params[i];
        let n = match &p.ty {
            JitTy::List(_, n) => *n,
            JitTy::Optional(inner) => match &**inner {
                JitTy::List(_, n) => *n,
                _ => None,
            },
            _ => None,
        };
        to_ivalue(v, &p.ty, n, self.numbers).map_err(|e| {
            let head = format!(
                "{op}() Expected a value of type '{}' for argument '{}' but instead found type '{}'.\nPosition: {i}\nValue: {}\nDeclaration: {text}",
                p.ty.repr(),
                p.name,
                friendly_type(v),
                py_repr(v)
            );
            match e {
                ConvError::Cast(d) => Mismatch::Schema(format!("{head}\nCast error details: {d}")),
                ConvError::Pybind(class) if op.starts_with("aten::") => Mismatch::Schema(format!(
                    "{head}\nCast error details: {}",
                    pybind_text(class)
                )),
                ConvError::Pybind(_) => Mismatch::Schema(format!(
                    "{head}\nCast error details: a {} does not convert to {}",
                    friendly_type(v),
                    p.ty.repr()
                )),
                ConvError::Python(d) => {
                    Mismatch::Schema(format!("{head}\n Python error details: {d}"))
                }
                ConvError::Hard(e) => Mismatch::Hard(e),
            }
        })
    }
}

impl Policy for Stack<'_> {
    type Error = Mismatch;

    fn rules(&self) -> Rules {
        Rules {
            limit: Limit::All,
            keywords: Keywords::LastUnknownThenParams,
        }
    }

    type Value = Value;
    type Name = String;

    fn call(&self) -> (&[Value], &[(String, Value)]) {
        (self.args, self.kwargs)
    }

    fn given(&mut self, slot: usize, from: Source) -> Result<Taken, Mismatch> {
        let v = match from {
            Source::Positional(i) => &self.args[i],
            Source::Keyword(j) => &self.kwargs[j].1,
        };
        let v = self.convert(slot, v)?;
        self.stack.push(v);
        Ok(Taken::One)
    }

    fn default(&mut self, slot: usize) -> bool {
        self.stack
            .push(self.params[slot].default.clone().unwrap_or(Value::None));
        true
    }

    #[cold]
    fn misplaced(&mut self, m: Misplaced) -> Mismatch {
        let (op, text) = (self.op, self.text);
        Mismatch::Schema(match m {
            // `LeftOver` is not reached: the count in all came first.
            Misplaced::TooMany { .. } | Misplaced::LeftOver { .. } => format!(
                "{op}() expected at most {} argument(s) but received {} argument(s). Declaration: {text}",
                self.params.len(),
                self.args.len() + self.kwargs.len()
            ),
            Misplaced::KeywordOnly { slot, given } => format!(
                "{op}() takes {slot} positional argument(s) but {given} was/were given.  Declaration: {text}"
            ),
            Misplaced::Missing { slot } => format!(
                "{op}() is missing value for argument '{}'. Declaration: {text}",
                self.params[slot].name
            ),
            Misplaced::Unknown { keyword } => format!(
                "Unknown keyword argument '{}' for operator '{op}'. Schema: {text}",
                self.kwargs[keyword].0
            ),
            Misplaced::Duplicate { slot, .. } => format!(
                "Argument '{}' specified both as positional and keyword argument. Schema: {text}",
                self.params[slot].name
            ),
            // Not reached: an unused keyword is unknown or names a parameter.
            Misplaced::Unused => format!(
                "Unused keyword arguments for operator '{op}'. Schema: {text}"
            ),
        })
    }
}

/// Resolves a call against `overloads` (a packet in order, or one overload handle):
/// the first overload whose schema accepts the call, with its bound values.
/// `op` is the qualified operator name (`aten::add`), used in messages and for the
/// numbers-as-tensors allow-list.
///
/// Lists nested deeper than [`crate::value::MAX_VALUE_DEPTH`] are refused first,
/// in time linear in their size, as every boxed entry point refuses them
/// (matching a schema type against a value, and the messages that print both,
/// recurse per level).
pub fn resolve(
    op: &str,
    overloads: &[Overload],
    args: &[Value],
    kwargs: &[(String, Value)],
) -> Result<Resolved, Error> {
    crate::value::check_depth(op, args, kwargs)?;
    let base = op.rsplit("::").next().unwrap_or(op);
    let numbers = op.starts_with("aten::") && NUMBERS_AS_TENSORS.contains(&base);
    let mut errors = Vec::new();
    for (index, o) in overloads.iter().enumerate() {
        let cand = Candidate::of(o);
        match create_stack(op, o.schema_text, &cand, args, kwargs, numbers) {
            Ok(bound) => {
                return Ok(Resolved {
                    index,
                    overload: *o,
                    bound,
                })
            }
            Err(Mismatch::Hard(e)) => return Err(e),
            Err(Mismatch::Schema(m)) => errors.push(m),
        }
    }
    if errors.len() == 1 {
        return Err(Error::Runtime(errors.pop().unwrap_or_default().into()));
    }
    let mut msg =
        String::from("Overloaded torch operator invoked from Python failed to match any schema:\n");
    for e in errors {
        msg.push_str(&e);
        msg.push_str("\n\n");
    }
    Err(Error::Runtime(msg.into()))
}

/// One overload of a packet, in the order `torch.ops.<ns>.<name>(...)` tries them.
#[derive(Clone, Copy, Debug)]
pub struct Overload {
    /// `name.overload`, or `name` for the default overload (`add.Tensor`, `add`).
    pub name: &'static str,
    /// The full, namespace-qualified schema text as registered
    /// (`aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor`).
    pub schema_text: &'static str,
    /// The parsed schema; `None` for a schema that uses types the schema language
    /// does not have (`t[]`, `AnyEnumType`, `Dict(Tensor, Tensor)`, …): kept as
    /// text for error messages; such an overload can match a call but never be
    /// dispatched here.
    pub op: Option<&'static OpSchema>,
    /// A dispatcher (c10) operator; `false` for TorchScript-only builtins, which are
    /// tried after all dispatcher overloads but never dispatched.
    pub dispatcher: bool,
}

/// Whether a schema's text starts with its namespace (`myns::foo(...)`).
pub(crate) fn is_qualified(s: &OpSchema) -> bool {
    s.schema.contains("::") && s.schema.find("::") < s.schema.find('(')
}

/// A schema's text with its namespace (`aten::add.Tensor(...)`).
pub(crate) fn qualified(s: &OpSchema) -> String {
    if is_qualified(s) {
        s.schema.to_string()
    } else {
        format!("{}::{}", s.namespace, s.schema)
    }
}

/// The schema's declaration as PyTorch's messages quote it: c10's printing,
/// with its namespace and the defaults as TorchScript parsed them (`k=1.`,
/// `reduction=1`; [`opforge_schema::jit`]). Made once per schema.
pub(crate) fn declaration(s: &'static OpSchema) -> &'static str {
    use std::collections::HashMap;
    use std::sync::{Mutex, OnceLock};
    static TEXTS: OnceLock<Mutex<HashMap<usize, &'static str>>> = OnceLock::new();
    let mut texts = TEXTS
        .get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    texts.entry(s as *const _ as usize).or_insert_with(|| {
        let text = qualified(s);
        // The text was parsed when the operator was defined; reading it again
        // cannot fail, and if it ever did the text as written is still right
        // but for the defaults' spelling.
        let jit = opforge_schema::schema::parse_schema(&text)
            .map_or(text, |f| opforge_schema::jit::jit_text(&f));
        Box::leak(jit.into_boxed_str())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_float_repr() {
        for (x, s) in [
            (1.0, "1.0"),
            (2.5, "2.5"),
            (1e-5, "1e-05"),
            (0.0001, "0.0001"),
            (1e16, "1e+16"),
            (123456.0, "123456.0"),
            (-0.5, "-0.5"),
            (0.1, "0.1"),
            (1.5e300, "1.5e+300"),
        ] {
            assert_eq!(py_float(x), s);
        }
    }

    #[test]
    fn splits_schema_text() {
        let c = Candidate::from_text(
            "aten::foo.x(Dict(str, t) self, Tensor(a!)[] b, *, int[2] c=[1, 1], str d=\",\") -> t",
        );
        let names: Vec<_> = c.params.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["self", "b", "c", "d"]);
        assert!(c.params[2].kwarg_only && c.params[3].has_default);
        assert_eq!(c.params[1].ty.repr(), "List[Tensor]");
        assert_eq!(JitTy::parse("t[]").repr(), "List[t]");
        assert_eq!(JitTy::parse("int[1]?").repr(), "Optional[List[int]]");
        assert_eq!(JitTy::parse("t[](a!)").repr(), "List[t]");
        assert_eq!(JitTy::parse("Tensor(a!)").repr(), "Tensor");
    }
}
