//! Matching one call against one signature (`FunctionSignature::parse`)
//! and converting the matched Python values (`unpack`, with errors F–H).

use super::signature::{FunctionParameter, FunctionSignature, ParamDefault, ParamKind};
use crate::error::Error;
use crate::place::{place, Keywords, Limit, Misplaced, Param, Policy, Rules, Source, Taken};
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

/// Error E, for the keyword [`crate::place::place`]'s scan of PyTorch's
/// `extra_kwargs` found (`None`: none, a keyword given twice).
fn extra_kwargs(sig: &FunctionSignature, m: Misplaced, kwargs: &[(String, Value)]) -> Error {
    Error::Type(
        match m {
            Misplaced::Unknown { keyword } => format!(
                "{}() got an unexpected keyword argument '{}'",
                sig.name, kwargs[keyword].0
            ),
            Misplaced::Duplicate { keyword, .. } => format!(
                "{}() got multiple values for argument '{}'",
                sig.name, kwargs[keyword].0
            ),
            _ => "invalid keyword arguments".to_string(),
        }
        .into(),
    )
}

impl Param for FunctionParameter {
    fn name(&self) -> &str {
        &self.name
    }
    fn keyword_only(&self) -> bool {
        self.keyword_only
    }
    fn has_default(&self) -> bool {
        self.optional
    }
    fn aliases(&self) -> &[&'static str] {
        self.numpy_aliases
    }
}

/// PyTorch's `allow_varargs_intlist`: a lone int-list parameter takes every
/// positional value (`x.view(2, 3)`).
fn allow_varargs(sig: &FunctionSignature) -> bool {
    sig.max_pos_args == 1
        && matches!(
            sig.params[0].kind,
            ParamKind::IntList | ParamKind::SymIntList
        )
}

/// The parser's order of checks (module `place`): too many positionals first
/// unless varargs, keywords left over last, scanned in call order.
fn rules(sig: &FunctionSignature, allow_varargs: bool) -> Rules {
    Rules {
        limit: if allow_varargs {
            Limit::None
        } else {
            Limit::Positional(sig.max_pos_args)
        },
        keywords: Keywords::LastInCallOrder,
    }
}

/// One matched slot: the value given (absent/None-for-optional is `None`).
pub type Slots = Vec<Option<Value>>;

/// Matches `args`/`kwargs` against `sig`. With `raise`, failures are the specific
/// error (A–E); without, `Ok(None)`. Error F and `unknown parameter type` abort
/// regardless of `raise`. The placement is [`crate::place::place`]'s
/// (`FunctionSignature::parse`, `torch/csrc/utils/python_arg_parser.cpp`);
/// this module checks and words.
pub(crate) fn match_signature(
    sig: &FunctionSignature,
    args: &[Value],
    kwargs: &[(String, Value)],
    raise: bool,
) -> Result<Option<Slots>, Error> {
    let mut call = Matching {
        sig,
        args,
        kwargs,
        raise,
        allow_varargs: allow_varargs(sig),
        out: Vec::with_capacity(sig.params.len()),
    };
    match place(&sig.params, &mut call) {
        Ok(()) => Ok(Some(call.out)),
        Err(Fail::NoMatch) => Ok(None),
        Err(Fail::Raise(e)) => Err(e),
    }
}

/// Why [`Matching`] failed.
enum Fail {
    /// The signature does not match (without `raise`).
    NoMatch,
    /// The error to raise.
    Raise(Error),
}

/// [`match_signature`]'s policy: `FunctionParameter::check` per value.
struct Matching<'a> {
    sig: &'a FunctionSignature,
    args: &'a [Value],
    kwargs: &'a [(String, Value)],
    raise: bool,
    allow_varargs: bool,
    out: Slots,
}

impl Policy for Matching<'_> {
    type Error = Fail;

    fn rules(&self) -> Rules {
        rules(self.sig, self.allow_varargs)
    }

    fn quiet(&self) -> bool {
        !self.raise
    }

    type Value = Value;
    type Name = String;

    fn call(&self) -> (&[Value], &[(String, Value)]) {
        (self.args, self.kwargs)
    }

    #[inline(always)]
    fn given(&mut self, i: usize, from: Source) -> Result<Taken, Fail> {
        let (sig, args) = (self.sig, self.args);
        let nargs = args.len();
        let p = &sig.params[i];
        let (v, arg_pos, is_kwd) = match from {
            Source::Positional(k) => (&args[k], k, false),
            Source::Keyword(j) => (&self.kwargs[j].1, nargs, true),
        };
        if matches!(v, Value::None) && p.allow_none {
            self.out.push(None);
            return Ok(Taken::One);
        }
        let mut failed = None;
        if check(p, v, i, &mut failed).map_err(|a| Fail::Raise(a.0))? {
            self.out.push(Some(v.clone()));
            return Ok(Taken::One);
        }
        self.refused(i, v, arg_pos, is_kwd, failed)
    }

    fn default(&mut self, _: usize) -> bool {
        self.out.push(None);
        true
    }

    #[cold]
    fn misplaced(&mut self, m: Misplaced) -> Fail {
        if !self.raise {
            return Fail::NoMatch;
        }
        let (sig, nargs) = (self.sig, self.args.len());
        Fail::Raise(match m {
            Misplaced::TooMany { .. }
            | Misplaced::KeywordOnly { .. }
            | Misplaced::LeftOver { .. } => extra_args(sig, nargs),
            Misplaced::Missing { slot } => missing_args(sig, slot),
            Misplaced::Unknown { .. } | Misplaced::Duplicate { .. } | Misplaced::Unused => {
                extra_kwargs(sig, m, self.kwargs)
            }
        })
    }
}

impl Matching<'_> {
    /// Parameter `i`'s check refused `v`: PyTorch's varargs (the positionals
    /// as one int list), or the error (`failed`: the check's failing element).
    #[inline(never)]
    fn refused(
        &mut self,
        i: usize,
        v: &Value,
        arg_pos: usize,
        is_kwd: bool,
        failed: Option<usize>,
    ) -> Result<Taken, Fail> {
        let (sig, args) = (self.sig, self.args);
        let nargs = args.len();
        let p = &sig.params[i];
        let varargs_eligible = self.allow_varargs && arg_pos == 0 && !is_kwd;
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
            self.out.push(Some(Value::List(args.to_vec().into())));
            return Ok(Taken::Rest);
        }
        if !self.raise {
            return Err(Fail::NoMatch);
        }
        if varargs_eligible && nargs > sig.max_pos_args {
            return Err(Fail::Raise(extra_args(sig, nargs)));
        }
        if is_kwd {
            return Err(Fail::Raise(Error::Type(
                format!(
                    "{}(): argument '{}' must be {}, not {}",
                    sig.name,
                    p.name,
                    p.type_name(),
                    python_type(v)
                )
                .into(),
            )));
        }
        if let Some(idx) = failed.or(if varargs_eligible { vfailed } else { None }) {
            let items = match v {
                Value::List(items) => items.as_slice(),
                _ => args,
            };
            return Err(Fail::Raise(Error::Type(format!(
                "{}(): argument '{}' (position {}) must be {}, but found element of type {} at pos {idx}",
                sig.name,
                p.name,
                arg_pos + 1,
                p.type_name(),
                python_type(&items[idx])
            ).into())));
        }
        Err(Fail::Raise(Error::Type(
            format!(
                "{}(): argument '{}' (position {}) must be {}, not {}",
                sig.name,
                p.name,
                arg_pos + 1,
                p.type_name(),
                python_type(v)
            )
            .into(),
        )))
    }
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
/// for `kwargs[j]`, or [`ABSENT`]. The placement is [`crate::place::place`]'s,
/// as [`match_signature`]'s is, so it decides exactly as [`match_signature`]
/// does, or answers [`FastMatch::Slow`]; the routing the fast path caches per
/// call shape (`fast::route`) is these sources. `accepted[i]` / `rejected[i]`:
/// the values (by [`tag`]) parameter `i`'s check accepts / rejects whatever
/// their contents; `determined` is cleared when the outcome depended on more
/// than the kinds of the values (a contents check ran).
pub(crate) fn fast_match<K: AsRef<str>>(
    sig: &FunctionSignature,
    accepted: &[u32],
    rejected: &[u32],
    args: &[Value],
    kwargs: &[(K, Value)],
    src: &mut [u16],
    determined: &mut bool,
) -> FastMatch {
    if sig.params.len() > src.len()
        || accepted.len() != sig.params.len()
        || rejected.len() != sig.params.len()
        || args.len() >= KW as usize
        || kwargs.len() >= KW as usize
    {
        return FastMatch::Slow;
    }
    let mut call = Sources {
        sig,
        accepted,
        rejected,
        args,
        kwargs,
        src,
        determined,
        allow_varargs: allow_varargs(sig),
    };
    match place(&sig.params, &mut call) {
        Ok(()) => FastMatch::Yes,
        Err(m) => m,
    }
}

/// [`fast_match`]'s policy: kinds checked by tag, sources recorded; every
/// error is [`FastMatch::No`] (or [`FastMatch::Slow`]).
struct Sources<'a, 'd, K> {
    sig: &'a FunctionSignature,
    accepted: &'a [u32],
    rejected: &'a [u32],
    args: &'a [Value],
    kwargs: &'a [(K, Value)],
    src: &'d mut [u16],
    determined: &'d mut bool,
    allow_varargs: bool,
}

impl<K: AsRef<str>> Policy for Sources<'_, '_, K> {
    type Error = FastMatch;

    #[inline]
    fn rules(&self) -> Rules {
        rules(self.sig, self.allow_varargs)
    }

    #[inline]
    fn quiet(&self) -> bool {
        true
    }

    type Value = Value;
    type Name = K;

    #[inline(always)]
    fn call(&self) -> (&[Value], &[(K, Value)]) {
        (self.args, self.kwargs)
    }

    #[inline(always)]
    fn given(&mut self, i: usize, from: Source) -> Result<Taken, FastMatch> {
        let (s, v, varargs_eligible) = match from {
            Source::Positional(k) => (k as u16, &self.args[k], self.allow_varargs && k == 0),
            Source::Keyword(j) => (KW | j as u16, &self.kwargs[j].1, false),
        };
        let p = &self.sig.params[i];
        if matches!(v, Value::None) && p.allow_none {
            self.src[i] = ABSENT;
            return Ok(Taken::One);
        }
        // Accepted by the check whatever the value's contents.
        if self.accepted[i] & tag(v) != 0 {
            self.src[i] = s;
            return Ok(Taken::One);
        }
        let mut failed = None;
        let checked = if self.rejected[i] & tag(v) != 0 {
            // Rejected by the check whatever the value's contents.
            Ok(false)
        } else {
            *self.determined = false;
            check(p, v, i, &mut failed)
        };
        match checked {
            Ok(true) => {
                self.src[i] = s;
                Ok(Taken::One)
            }
            Ok(false) if varargs_eligible => Err(FastMatch::Slow),
            Ok(false) => Err(FastMatch::No),
            Err(_) => Err(FastMatch::Slow),
        }
    }

    #[inline]
    fn default(&mut self, i: usize) -> bool {
        self.src[i] = ABSENT;
        true
    }

    #[inline]
    fn misplaced(&mut self, _: Misplaced) -> FastMatch {
        FastMatch::No
    }
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
        Value::Op(_) => 23,
    }
}
