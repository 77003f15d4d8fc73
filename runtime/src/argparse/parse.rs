//! Matching one call against one signature (`FunctionSignature::parse`, spec §3–§4)
//! and converting the matched Python values (`unpack`, with errors F–H).

use super::signature::{FunctionParameter, FunctionSignature, ParamDefault, ParamKind};
use crate::error::Error;
use crate::tensor::{DType, Device, Scalar};
use crate::value::Value;

/// A Python-level value view: lists of any typed form become [`Value::List`].
pub(crate) fn pythonize(v: Value) -> Value {
    match v {
        Value::IntList(xs) => Value::List(xs.into_iter().map(Value::Int).collect()),
        Value::FloatList(xs) => Value::List(xs.into_iter().map(Value::Float).collect()),
        Value::BoolList(xs) => Value::List(xs.into_iter().map(Value::Bool).collect()),
        Value::ScalarList(xs) => Value::List(xs.into_iter().map(Value::from).collect()),
        Value::TensorList(xs) => Value::List(xs.into_iter().map(Value::Tensor).collect()),
        Value::OptTensorList(xs) => Value::List(
            xs.into_iter()
                .map(|t| t.map(Value::Tensor).unwrap_or(Value::None))
                .collect(),
        ),
        v => v,
    }
}

fn is_scalar(v: &Value) -> bool {
    matches!(v, Value::Int(_) | Value::Float(_) | Value::Bool(_))
}
fn is_double(v: &Value) -> bool {
    is_scalar(v)
}
fn is_long(v: &Value) -> bool {
    matches!(v, Value::Int(_))
}
fn is_index(v: &Value) -> bool {
    matches!(v, Value::Int(_) | Value::Bool(_))
}

/// `is_int_list` / `is_int_or_symint_list`: empty or first element int-like; a bare
/// int-like if sized. `failed` receives the index of a failing first element.
fn is_int_list(v: &Value, size: usize, symint: bool, failed: &mut Option<usize>) -> bool {
    match v {
        Value::List(items) => {
            if items.is_empty() {
                return true;
            }
            // Observed 2.15: a bool first element is rejected (`count_nonzero(True)`),
            // later bools convert to 0/1 (`view(6, True)`).
            if is_long(&items[0]) || (symint && is_symint_tensor(&items[0])) || is_duck(&items[0]) {
                return true;
            }
            *failed = Some(0);
            false
        }
        v => {
            size > 0
                && if symint {
                    is_index(v) || is_symint_tensor(v)
                } else {
                    is_long(v)
                }
        }
    }
}

/// A duck tensor-like (not a tensor) whose class has a `__torch_function__`, with
/// the protocol on: PyTorch's parser accepts one in any position, for its
/// handler to take the call.
pub(crate) fn is_duck(v: &Value) -> bool {
    matches!(v, Value::Tensor(t) if t.class().is_some_and(|c| !c.is_tensor_subclass() && c.has_torch_function()))
        && crate::flags::subclass_handlers_enabled()
}

/// The Python type name of `v` for messages: a tensor-like's class name.
fn python_type(v: &Value) -> std::borrow::Cow<'static, str> {
    match v {
        Value::Tensor(t) => match t.class() {
            Some(c) => c.name().to_string().into(),
            None => "Tensor".into(),
        },
        v => v.type_name().into(),
    }
}

fn is_symint_tensor(v: &Value) -> bool {
    matches!(v, Value::Tensor(t) if t.numel() == 1 && t.dtype().is_integral(true))
}

/// Why a check failed in a way that aborts the overload search (error F).
pub(crate) struct Abort(pub Error);

/// `FunctionParameter::check`.
fn check(
    p: &FunctionParameter,
    v: &Value,
    argnum: usize,
    failed: &mut Option<usize>,
) -> Result<bool, Abort> {
    use ParamKind as K;
    if is_duck(v) && !matches!(p.kind, K::TensorList) {
        return Ok(true);
    }
    Ok(match p.kind {
        K::Tensor => matches!(v, Value::Tensor(_)) || (p.allow_numbers_as_tensors && is_scalar(v)),
        K::Scalar | K::Complex | K::Double => {
            is_double(v) || matches!(v, Value::Tensor(t) if t.dim() == 0)
        }
        K::Int => {
            is_long(v)
                || matches!(v, Value::Tensor(t) if t.dim() == 0 && t.dtype().is_integral(false))
        }
        // Observed 2.15: a bool for a scalar SymInt is rejected (`must be int, not bool`).
        K::SymInt => is_long(v) || is_symint_tensor(v),
        K::TensorList => match v {
            Value::List(items) => {
                for (i, x) in items.iter().enumerate() {
                    if !matches!(x, Value::Tensor(_)) {
                        return Err(Abort(Error::Type(
                            format!(
                                "expected Tensor as element {i} in argument {argnum}, but got {}",
                                python_type(x)
                            )
                            .into(),
                        )));
                    }
                }
                true
            }
            _ => false,
        },
        K::IntList => is_int_list(v, p.size, false, failed),
        K::SymIntList => is_int_list(v, p.size, true, failed),
        K::FloatList => match v {
            Value::List(items) => items.first().is_none_or(is_double),
            _ => false,
        },
        K::ScalarList => match v {
            Value::List(items) => items.iter().all(is_scalar),
            _ => false,
        },
        K::Bool => matches!(v, Value::Bool(_)),
        K::PyObject => true,
        K::ScalarType => matches!(v, Value::DType(_)),
        K::Layout => matches!(v, Value::Layout(_)),
        K::MemoryFormat => matches!(v, Value::MemoryFormat(_)),
        K::Device => matches!(v, Value::Int(_) | Value::Str(_) | Value::Device(_)),
        K::String => matches!(v, Value::Str(_)),
        K::Generator => matches!(v, Value::Generator(_)),
        K::Storage => matches!(v, Value::Storage(_)),
        K::QScheme => matches!(v, Value::QScheme(_)),
        K::Dimname | K::DimnameList => false,
        K::Stream | K::DispatchKeySet => {
            return Err(Abort(Error::Runtime("unknown parameter type".into())))
        }
    })
}

/// Error A.
fn extra_args(sig: &FunctionSignature, n: usize) -> Error {
    Error::Type(
        if sig.min_args != sig.max_pos_args {
            format!(
                "{}() takes from {} to {} positional arguments but {n} were given",
                sig.name, sig.min_args, sig.max_pos_args
            )
        } else {
            format!(
                "{}() takes {} positional argument{} but {n} {} given",
                sig.name,
                sig.max_pos_args,
                if sig.max_pos_args == 1 { "" } else { "s" },
                if n == 1 { "was" } else { "were" }
            )
        }
        .into(),
    )
}

/// Error B.
fn missing_args(sig: &FunctionSignature, idx: usize) -> Error {
    let names: Vec<String> = sig.params[idx..]
        .iter()
        .filter(|p| !p.optional)
        .map(|p| format!("\"{}\"", p.name))
        .collect();
    Error::Type(
        format!(
            "{}() missing {} required positional argument{}: {}",
            sig.name,
            names.len(),
            if names.len() == 1 { "s" } else { "" },
            names.join(", ")
        )
        .into(),
    )
}

/// Error E.
fn extra_kwargs(sig: &FunctionSignature, kwargs: &[(String, Value)], nargs: usize) -> Error {
    for (k, _) in kwargs {
        match sig.params.iter().position(|p| &p.name == k) {
            None => {
                return Error::Type(
                    format!("{}() got an unexpected keyword argument '{k}'", sig.name).into(),
                )
            }
            Some(i) if i < nargs => {
                return Error::Type(
                    format!("{}() got multiple values for argument '{k}'", sig.name).into(),
                )
            }
            _ => {}
        }
    }
    Error::Type("invalid keyword arguments".into())
}

/// One matched slot: the value given (absent/None-for-optional is `None`).
pub type Slots = Vec<Option<Value>>;

/// Matches `args`/`kwargs` against `sig`. With `raise`, failures are the specific
/// error (A–E); without, `Ok(None)`. Error F and `unknown parameter type` abort
/// regardless of `raise`.
pub(crate) fn match_signature(
    sig: &FunctionSignature,
    args: &[Value],
    kwargs: &[(String, Value)],
    raise: bool,
) -> Result<Option<Slots>, Error> {
    let nargs = args.len();
    let mut remaining_kwargs = kwargs.len();
    let allow_varargs = sig.max_pos_args == 1
        && matches!(
            sig.params[0].kind,
            ParamKind::IntList | ParamKind::SymIntList
        );
    let fail = |e: Error| if raise { Err(e) } else { Ok(None) };
    if nargs > sig.max_pos_args && !allow_varargs {
        return fail(extra_args(sig, nargs));
    }
    let mut out: Slots = Vec::with_capacity(sig.params.len());
    let mut arg_pos = 0;
    for (i, p) in sig.params.iter().enumerate() {
        let mut is_kwd = false;
        let obj: Option<&Value> = if arg_pos < nargs {
            if p.keyword_only {
                return fail(extra_args(sig, nargs));
            }
            Some(&args[arg_pos])
        } else {
            is_kwd = true;
            let mut found = kwargs.iter().find(|(k, _)| *k == p.name).map(|(_, v)| v);
            for alias in p.numpy_aliases {
                if found.is_some() {
                    break;
                }
                found = kwargs.iter().find(|(k, _)| k == alias).map(|(_, v)| v);
            }
            found
        };
        let mut failed = None;
        let varargs_eligible = allow_varargs && arg_pos == 0 && !is_kwd;
        match obj {
            None if p.optional => out.push(None),
            Some(Value::None) if p.allow_none => out.push(None),
            None => return fail(missing_args(sig, i)),
            Some(v) => {
                if check(p, v, i, &mut failed).map_err(|a| a.0)? {
                    out.push(Some(v.clone()));
                } else {
                    let symint = p.kind == ParamKind::SymIntList;
                    let mut vfailed = None;
                    if varargs_eligible
                        && is_int_list(
                            &Value::List(args.to_vec().into()),
                            p.size,
                            symint,
                            &mut vfailed,
                        )
                    {
                        out.push(Some(Value::List(args.to_vec().into())));
                        arg_pos = nargs;
                        continue;
                    }
                    if !raise {
                        return Ok(None);
                    }
                    if varargs_eligible && nargs > sig.max_pos_args {
                        return Err(extra_args(sig, nargs));
                    }
                    if is_kwd {
                        return Err(Error::Type(
                            format!(
                                "{}(): argument '{}' must be {}, not {}",
                                sig.name,
                                p.name,
                                p.type_name(),
                                python_type(v)
                            )
                            .into(),
                        ));
                    }
                    if let Some(idx) = failed.or(if varargs_eligible { vfailed } else { None }) {
                        let items = match v {
                            Value::List(items) => items.as_slice(),
                            _ => args,
                        };
                        return Err(Error::Type(format!(
                            "{}(): argument '{}' (position {}) must be {}, but found element of type {} at pos {idx}",
                            sig.name,
                            p.name,
                            arg_pos + 1,
                            p.type_name(),
                            python_type(&items[idx])
                        ).into()));
                    }
                    return Err(Error::Type(
                        format!(
                            "{}(): argument '{}' (position {}) must be {}, not {}",
                            sig.name,
                            p.name,
                            arg_pos + 1,
                            p.type_name(),
                            python_type(v)
                        )
                        .into(),
                    ));
                }
            }
        }
        if !is_kwd {
            arg_pos += 1;
        } else if obj.is_some() {
            remaining_kwargs -= 1;
        }
    }
    if arg_pos < nargs {
        // Positionals left over after a (varargs-eligible) list parameter.
        return fail(extra_args(sig, nargs));
    }
    if remaining_kwargs > 0 {
        return fail(extra_kwargs(sig, kwargs, nargs));
    }
    Ok(Some(out))
}

/// Converts a matched slot to the value the binding passes on (PyTorch's
/// `PythonArgs` accessors): int lists expanded and checked (error G), float lists
/// (error H), 0-dim tensors for numbers taken with `.item()`, strings for devices
/// parsed. An absent slot becomes the parser default (`None` when the default is
/// `None` or the kind's default is not interpreted).
pub(crate) fn unpack(
    sig: &FunctionSignature,
    p: &FunctionParameter,
    slot: Option<Value>,
) -> Result<Value, Error> {
    use ParamKind as K;
    let Some(v) = slot else {
        return Ok(match &p.default {
            ParamDefault::Required | ParamDefault::None => Value::None,
            ParamDefault::Int(i) => Value::Int(*i),
            ParamDefault::Bool(b) => Value::Bool(*b),
            ParamDefault::Float(x) => Value::Float(*x),
            ParamDefault::Scalar(s) => Value::from(*s),
            ParamDefault::IntList(xs) => Value::IntList(xs.clone()),
            ParamDefault::DType(d) => Value::DType(*d),
            ParamDefault::Layout(l) => Value::Layout(*l),
            ParamDefault::Str(s) => Value::Str(s.clone()),
        });
    };
    let item = |t: &crate::Tensor| -> Result<Scalar, Error> { t.item() };
    // A duck tensor-like stays as it is, for its handler (also inside an int list).
    if is_duck(&v) || matches!(&v, Value::List(items) if items.iter().any(is_duck)) {
        return Ok(v);
    }
    Ok(match (p.kind, v) {
        (K::Scalar, Value::Tensor(t)) => Value::from(item(&t)?),
        (K::Double | K::Complex, Value::Tensor(t)) => Value::Float(item(&t)?.to_f64()),
        (K::Double | K::Complex, Value::Int(i)) => Value::Float(i as f64),
        (K::Double | K::Complex, Value::Bool(b)) => Value::Float(f64::from(u8::from(b))),
        (K::Int | K::SymInt, Value::Tensor(t)) => Value::Int(item(&t)?.to_i64()),
        (K::SymInt, Value::Bool(b)) => Value::Int(i64::from(b)),
        (K::IntList | K::SymIntList, Value::List(items)) => {
            let mut xs = Vec::with_capacity(items.len());
            for (i, x) in items.iter().enumerate() {
                xs.push(match x {
                    Value::Int(i) => *i,
                    Value::Bool(b) => i64::from(*b),
                    Value::Tensor(t) if t.numel() == 1 && t.dtype().is_integral(true) => {
                        item(t)?.to_i64()
                    }
                    other => {
                        return Err(Error::Type(format!(
                            "{}(): argument '{}' failed to unpack the object at pos {} with error \"type must be tuple of ints,but got {}\"",
                            sig.name,
                            p.name,
                            i + 1,
                            python_type(other)
                        ).into()))
                    }
                });
            }
            Value::IntList(xs)
        }
        (K::IntList | K::SymIntList, Value::Int(i)) => Value::IntList(vec![i; p.size.max(1)]),
        (K::IntList | K::SymIntList, Value::Bool(b)) => {
            Value::IntList(vec![i64::from(b); p.size.max(1)])
        }
        (K::FloatList, Value::List(items)) => {
            let mut xs = Vec::with_capacity(items.len());
            for (i, x) in items.iter().enumerate() {
                xs.push(match x {
                    Value::Float(f) => *f,
                    Value::Int(i) => *i as f64,
                    Value::Bool(b) => f64::from(u8::from(*b)),
                    other => {
                        return Err(Error::Type(format!(
                            "{}(): argument '{}' must be tuple of floats, but found element of type {} at pos {}",
                            sig.name,
                            p.name,
                            python_type(other),
                            i + 1
                        ).into()))
                    }
                });
            }
            Value::FloatList(xs)
        }
        (K::Device, Value::Str(s)) => Value::Device(Device::from_name(&s).ok_or_else(|| {
            Error::Runtime(format!(
                "Expected one of cpu, cuda, ipu, xpu, mkldnn, opengl, opencl, ideep, hip, ve, fpga, maia, xla, lazy, vulkan, mps, meta, hpu, mtia, privateuseone device type at start of device string: {s}"
            ).into())
        })?),
        (K::Device, Value::Int(_)) => Value::Device(Device::Cpu),
        (K::ScalarType, v @ Value::DType(_)) => v,
        (_, v) => v,
    })
}

/// The default dtype's name for error messages (`Float`).
pub(crate) fn c10_name(d: DType) -> &'static str {
    d.c10_name()
}

/// A [`fast_match`] source: no value (absent, or `None` for a `None`-accepting
/// parameter).
pub(crate) const ABSENT: u16 = u16::MAX;
/// A [`fast_match`] source flag: the low bits index the keyword arguments.
pub(crate) const KW: u16 = 0x8000;

/// The outcome of [`fast_match`].
pub(crate) enum FastMatch {
    /// The signature matches; the sources are filled.
    Yes,
    /// The signature does not match ([`match_signature`] gives `Ok(None)`, or an
    /// error with `raise`).
    No,
    /// Not decided here (varargs, aborting checks, too many parameters): use
    /// [`match_signature`].
    Slow,
}

/// [`match_signature`] without `raise`, recording where each parameter's value
/// comes from instead of cloning it: `src[i]` is a positional index, `KW | j`
/// for `kwargs[j]`, or [`ABSENT`]. Decides exactly as [`match_signature`] does,
/// or answers [`FastMatch::Slow`]. `accepted[i]` / `rejected[i]`: the values (by
/// [`tag`]) parameter `i`'s check accepts / rejects whatever their
/// contents; `determined` is cleared when the outcome depended on more than the
/// kinds of the values (a contents check ran).
pub(crate) fn fast_match<K: AsRef<str>>(
    sig: &FunctionSignature,
    accepted: &[u32],
    rejected: &[u32],
    args: &[Value],
    kwargs: &[(K, Value)],
    src: &mut [u16],
    determined: &mut bool,
) -> FastMatch {
    let nargs = args.len();
    if sig.params.len() > src.len()
        || accepted.len() != sig.params.len()
        || rejected.len() != sig.params.len()
        || nargs >= KW as usize
        || kwargs.len() >= KW as usize
    {
        return FastMatch::Slow;
    }
    let mut remaining_kwargs = kwargs.len();
    let allow_varargs = sig.max_pos_args == 1
        && matches!(
            sig.params[0].kind,
            ParamKind::IntList | ParamKind::SymIntList
        );
    if nargs > sig.max_pos_args && !allow_varargs {
        return FastMatch::No;
    }
    let mut arg_pos = 0;
    for (i, p) in sig.params.iter().enumerate() {
        let mut is_kwd = false;
        let obj: Option<(u16, &Value)> = if arg_pos < nargs {
            if p.keyword_only {
                return FastMatch::No;
            }
            Some((arg_pos as u16, &args[arg_pos]))
        } else {
            is_kwd = true;
            if kwargs.is_empty() {
                None
            } else {
                let find = |name: &str| {
                    kwargs
                        .iter()
                        .position(|(k, _)| k.as_ref() == name)
                        .map(|j| (KW | j as u16, &kwargs[j].1))
                };
                let mut found = find(&p.name);
                for alias in p.numpy_aliases {
                    if found.is_some() {
                        break;
                    }
                    found = find(alias);
                }
                found
            }
        };
        match obj {
            None if p.optional => src[i] = ABSENT,
            Some((_, Value::None)) if p.allow_none => src[i] = ABSENT,
            None => return FastMatch::No,
            // Accepted by the check whatever the value's contents.
            Some((s, v)) if accepted[i] & tag(v) != 0 => src[i] = s,
            Some((s, v)) => {
                let mut failed = None;
                let checked = if rejected[i] & tag(v) != 0 {
                    // Rejected by the check whatever the value's contents.
                    Ok(false)
                } else {
                    *determined = false;
                    check(p, v, i, &mut failed)
                };
                match checked {
                    Ok(true) => src[i] = s,
                    Ok(false) if allow_varargs && arg_pos == 0 && !is_kwd => {
                        return FastMatch::Slow
                    }
                    Ok(false) => return FastMatch::No,
                    Err(_) => return FastMatch::Slow,
                }
            }
        }
        if !is_kwd {
            arg_pos += 1;
        } else if obj.is_some() {
            remaining_kwargs -= 1;
        }
    }
    if arg_pos < nargs || remaining_kwargs > 0 {
        return FastMatch::No;
    }
    FastMatch::Yes
}

/// One bit per [`Value`] variant.
#[inline]
pub(crate) fn tag(v: &Value) -> u32 {
    1 << match v {
        Value::None => 0,
        Value::Bool(_) => 1,
        Value::Int(_) => 2,
        Value::Float(_) => 3,
        Value::Str(_) => 4,
        Value::Tensor(_) => 5,
        Value::IntList(_) => 6,
        Value::FloatList(_) => 7,
        Value::BoolList(_) => 8,
        Value::ScalarList(_) => 9,
        Value::TensorList(_) => 10,
        Value::OptTensorList(_) => 11,
        Value::List(_) => 12,
        Value::DType(_) => 13,
        Value::Device(_) => 14,
        Value::Layout(_) => 15,
        Value::MemoryFormat(_) => 16,
        Value::ScalarTypeCode(_) => 17,
        Value::Generator(_) => 18,
        Value::Storage(_) => 19,
        Value::Stream(_) => 20,
        Value::QScheme(_) => 21,
        Value::Object(_) => 22,
    }
}
