//! Parser signatures (`FunctionSignature`, `FunctionParameter`): the runtime form of
//! one signature string such as
//! `add(Tensor input, Tensor other, *, Scalar alpha=1, Tensor out=None)`
//! (`python_arg_parser.cpp`'s `FunctionSignature`).

use crate::tensor::{DType, Layout};
use opforge_schema::signature::{atol, parse_sig, SigParam};

/// The kind of a parser parameter (PyTorch's `ParameterType`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParamKind {
    /// `Tensor`
    Tensor,
    /// `Scalar`
    Scalar,
    /// `int64_t`, `DeviceIndex`
    Int,
    /// `SymInt`
    SymInt,
    /// `double`
    Double,
    /// `complex`
    Complex,
    /// `TensorList`, `c10::List<::std::optional<Tensor>>`
    TensorList,
    /// `IntArrayRef`
    IntList,
    /// `SymIntArrayRef`
    SymIntList,
    /// `ArrayRef<double>`
    FloatList,
    /// `ScalarList`
    ScalarList,
    /// `Generator`
    Generator,
    /// `bool`
    Bool,
    /// `Storage`
    Storage,
    /// `PyObject*`
    PyObject,
    /// `ScalarType`
    ScalarType,
    /// `Layout`
    Layout,
    /// `MemoryFormat`
    MemoryFormat,
    /// `QScheme`
    QScheme,
    /// `Device`
    Device,
    /// `Stream`
    Stream,
    /// `c10::string_view`, `std::string`, …
    String,
    /// `DispatchKeySet`
    DispatchKeySet,
    /// `Dimname`
    Dimname,
    /// `DimnameList`
    DimnameList,
}

impl ParamKind {
    /// Does PyTorch's parser collect tensor subclasses (not only duck
    /// tensor-likes) in a position of this kind for `__torch_function__`?
    pub(crate) fn collects_subclasses(self) -> bool {
        matches!(
            self,
            ParamKind::Tensor | ParamKind::TensorList | ParamKind::IntList | ParamKind::SymIntList
        )
    }
}

impl ParamKind {
    /// The kind for a signature type name (brackets and `?` already removed).
    pub fn from_type_str(t: &str) -> Option<ParamKind> {
        use ParamKind as K;
        Some(match t {
            "Tensor" => K::Tensor,
            "Scalar" => K::Scalar,
            "int64_t" | "DeviceIndex" => K::Int,
            "SymInt" => K::SymInt,
            "double" => K::Double,
            "complex" => K::Complex,
            "TensorList"
            | "c10::List<::std::optional<Tensor>>"
            | "c10::List<std::optional<Tensor>>"
            | "c10::List<c10::optional<Tensor>>" => K::TensorList,
            "IntArrayRef" => K::IntList,
            "SymIntArrayRef" => K::SymIntList,
            "ArrayRef<double>" => K::FloatList,
            "ScalarList" => K::ScalarList,
            "Generator" => K::Generator,
            "bool" => K::Bool,
            "Storage" => K::Storage,
            "PyObject*" => K::PyObject,
            "ScalarType" => K::ScalarType,
            "Layout" => K::Layout,
            "MemoryFormat" => K::MemoryFormat,
            "QScheme" => K::QScheme,
            "Device" => K::Device,
            "Stream" => K::Stream,
            "std::string" | "c10::string_view" | "::std::string_view" | "std::string_view" => {
                K::String
            }
            "DispatchKeySet" => K::DispatchKeySet,
            "Dimname" => K::Dimname,
            "DimnameList" => K::DimnameList,
            _ => return None,
        })
    }

    /// The name PyTorch's error messages use for the kind (`Number` for `Scalar`,
    /// `tuple of ints` for int lists, …). `None` for kinds without a printable name
    /// (`Stream`: PyTorch raises `unknown parameter type`).
    pub fn type_name(self) -> Option<&'static str> {
        use ParamKind as K;
        Some(match self {
            K::Tensor => "Tensor",
            K::Scalar => "Number",
            K::Int | K::SymInt => "int",
            K::Double => "float",
            K::Complex => "complex",
            K::TensorList => "tuple of Tensors",
            K::IntList | K::SymIntList => "tuple of ints",
            K::FloatList => "tuple of floats",
            K::ScalarList => "tuple of Scalars",
            K::Generator => "torch.Generator",
            K::Bool => "bool",
            K::Storage => "torch.Storage",
            K::PyObject => "object",
            K::ScalarType => "torch.dtype",
            K::Layout => "torch.layout",
            K::MemoryFormat => "torch.memory_format",
            K::QScheme => "torch.qscheme",
            K::Device => "torch.device",
            K::String => "str",
            K::Dimname => "name",
            K::DimnameList => "tuple of names",
            K::DispatchKeySet | K::Stream => return None,
        })
    }
}

/// A parameter's default, interpreted per kind (`FunctionParameter::set_default_str`).
#[derive(Clone, Debug, PartialEq)]
pub enum ParamDefault {
    /// No default (the parameter is required).
    Required,
    /// `None`, or a kind whose default the parser does not interpret.
    None,
    /// int / SymInt (`atol`).
    Int(i64),
    /// bool.
    Bool(bool),
    /// double / complex (`atof`).
    Float(f64),
    /// Scalar: an integer or a float.
    Scalar(crate::tensor::Scalar),
    /// Int lists.
    IntList(Vec<i64>),
    /// ScalarType.
    DType(DType),
    /// Layout.
    Layout(Layout),
    /// String.
    Str(String),
}

/// One parameter of a [`FunctionSignature`].
#[derive(Clone, Debug, PartialEq)]
pub struct FunctionParameter {
    /// The kind.
    pub kind: ParamKind,
    /// The name (`input`, `other`, `out`).
    pub name: String,
    /// `[N]` size (0 if none).
    pub size: usize,
    /// `None` is accepted (type has `?`, or the default is `None`).
    pub allow_none: bool,
    /// The parameter may be omitted (has a default).
    pub optional: bool,
    /// After the `*`.
    pub keyword_only: bool,
    /// The interpreted default.
    pub default: ParamDefault,
    /// The raw default text, as printed in errors.
    pub default_text: Option<String>,
    /// Python numbers are accepted for this `Tensor` parameter (allow-listed names).
    pub allow_numbers_as_tensors: bool,
    /// NumPy-compatible keyword aliases (`dim` → `axis`, …).
    pub numpy_aliases: &'static [&'static str],
}

/// Names whose `Tensor` params accept Python numbers (`should_allow_numbers_as_tensors`): the same list
/// as the schema-level one.
pub use crate::packet::NUMBERS_AS_TENSORS;

fn numpy_aliases(name: &str) -> &'static [&'static str] {
    match name {
        "dim" => &["axis"],
        "keepdim" => &["keepdims"],
        "input" => &["x", "a", "x1"],
        "other" => &["x2"],
        _ => &[],
    }
}

fn parse_as_integer(s: &str) -> Option<i64> {
    let (neg, body) = match s.strip_prefix('-') {
        Some(b) => (true, b),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    let v = if let Some(h) = body.strip_prefix("0x").or_else(|| body.strip_prefix("0X")) {
        i64::from_str_radix(h, 16).ok()?
    } else if body.len() > 1 && body.starts_with('0') {
        i64::from_str_radix(&body[1..], 8).ok()?
    } else if !body.is_empty() && body.bytes().all(|b| b.is_ascii_digit()) {
        body.parse().ok()?
    } else {
        return None;
    };
    Some(if neg { -v } else { v })
}

/// C's `atof`: the longest numeric prefix, 0.0 if none.
fn atof(s: &str) -> f64 {
    let s = s.trim_start();
    (1..=s.len())
        .rev()
        .filter(|&i| s.is_char_boundary(i))
        .find_map(|i| s[..i].parse::<f64>().ok())
        .unwrap_or(0.0)
}

fn parse_string_literal(s: &str) -> Result<String, String> {
    let b = s.as_bytes();
    if b.len() < 2 || b[0] != b[b.len() - 1] || !(b[0] == b'"' || b[0] == b'\'') {
        return Err(format!("Invalid quotes in string default: {s}"));
    }
    let mut out = String::new();
    let mut chars = s[1..s.len() - 1].chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        out.push(match chars.next() {
            Some(c @ ('\\' | '\'' | '"')) => c,
            Some('a') => '\x07',
            Some('b') => '\x08',
            Some('f') => '\x0c',
            Some('n') => '\n',
            Some('v') => '\x0b',
            Some('t') => '\t',
            other => {
                return Err(format!(
                    "Unsupported escape sequence in string default: \\{}",
                    other.map(String::from).unwrap_or_default()
                ))
            }
        });
    }
    Ok(out)
}

impl FunctionParameter {
    fn new(p: &SigParam) -> Result<FunctionParameter, String> {
        let (t, size, allow_none) = p.type_parts();
        let kind = ParamKind::from_type_str(t)
            .ok_or_else(|| format!("FunctionParameter(): invalid type string: {t}"))?;
        let max = opforge_schema::schema::MAX_LIST_SIZE as usize;
        if size > max {
            // A default expands to `size` copies: an absurd size is an error here,
            // not an allocation at the first call.
            return Err(format!(
                "FunctionParameter(): size {size} of {t}[{size}] {} exceeds the limit of {max} elements (opforge_schema::schema::MAX_LIST_SIZE)",
                p.name
            ));
        }
        let mut fp = FunctionParameter {
            kind,
            name: p.name.clone(),
            size,
            allow_none,
            optional: p.default.is_some(),
            keyword_only: p.kwarg_only,
            default: ParamDefault::Required,
            default_text: p.default.clone(),
            allow_numbers_as_tensors: false,
            numpy_aliases: numpy_aliases(&p.name),
        };
        if let Some(d) = &p.default {
            fp.default = fp.parse_default(d)?;
        }
        Ok(fp)
    }

    fn parse_default(&mut self, s: &str) -> Result<ParamDefault, String> {
        use ParamKind as K;
        if s == "None" {
            self.allow_none = true;
        }
        Ok(match self.kind {
            K::Tensor if s != "None" => {
                return Err(format!("default value for Tensor must be none, got: {s}"))
            }
            _ if s == "None" => ParamDefault::None,
            K::Int | K::SymInt => ParamDefault::Int(atol(s)),
            K::Bool => ParamDefault::Bool(s == "True" || s == "true"),
            K::Double | K::Complex => ParamDefault::Float(atof(s)),
            K::Scalar => ParamDefault::Scalar(match parse_as_integer(s) {
                Some(i) => crate::tensor::Scalar::Int(i),
                None => crate::tensor::Scalar::Float(atof(s)),
            }),
            K::IntList | K::SymIntList => {
                if let Some(inner) = s.strip_prefix('{') {
                    let inner = inner.strip_suffix('}').ok_or_else(|| {
                        format!(
                            "Default value of IntArrayRef is missing right brace '}}', found {}",
                            s.chars().last().unwrap_or(' ')
                        )
                    })?;
                    ParamDefault::IntList(
                        inner
                            .split(',')
                            .filter(|x| !x.trim().is_empty())
                            .map(|x| atol(x.trim()))
                            .collect(),
                    )
                } else if self.size == 0 {
                    return Err(format!("Incorrect size of IntArrayRef: {}", self.size));
                } else {
                    ParamDefault::IntList(vec![atol(s); self.size])
                }
            }
            K::FloatList => return Err("Defaults not supported for float[]".into()),
            // PyTorch's parser knows this one dtype default, by its exact text.
            K::ScalarType => match s {
                "torch.int64" => ParamDefault::DType(DType::Int64),
                _ => return Err(format!("invalid default value for ScalarType: {s}")),
            },
            K::Layout => match s {
                "torch.strided" | "torch.sparse_coo" => ParamDefault::Layout(Layout::Strided),
                _ => return Err(format!("invalid default value for layout: {s}")),
            },
            K::Device => return Err(format!("invalid device: {s}")),
            K::Stream => return Err(format!("invalid stream: {s}")),
            K::String => ParamDefault::Str(parse_string_literal(s)?),
            _ => ParamDefault::None,
        })
    }

    /// The name printed in errors (`Number`, `tuple of ints`, …); `Stream` and
    /// `DispatchKeySet` have none.
    pub fn type_name(&self) -> &'static str {
        self.kind.type_name().unwrap_or("unknown parameter type")
    }
}

/// One parsed signature string (PyTorch's `FunctionSignature`).
#[derive(Clone, Debug, PartialEq)]
pub struct FunctionSignature {
    /// The function name (`add`).
    pub name: String,
    /// Parameters in order (for methods, without `self`).
    pub params: Vec<FunctionParameter>,
    /// Parameters without default (required keyword-only ones included).
    pub min_args: usize,
    /// All parameters.
    pub max_args: usize,
    /// Parameters before the `*`.
    pub max_pos_args: usize,
    /// `|hidden` or `|deprecated`: tried, never listed in errors.
    pub hidden: bool,
    /// `|deprecated`: tried after all others.
    pub deprecated: bool,
    /// The original text.
    pub text: String,
}

impl FunctionSignature {
    /// Parses a signature string in `FunctionSignature`'s format.
    ///
    /// ```
    /// use opforge::argparse::FunctionSignature;
    /// let s = FunctionSignature::parse("sum(Tensor input, IntArrayRef[1]? dim, bool keepdim=False, *, ScalarType? dtype=None)").unwrap();
    /// assert_eq!((s.min_args, s.max_pos_args, s.max_args), (2, 3, 4));
    /// assert!(s.params[1].allow_none && s.params[1].size == 1);
    /// ```
    pub fn parse(text: &str) -> Result<FunctionSignature, String> {
        let raw = parse_sig(text).map_err(|e| {
            if e.starts_with("missing type") {
                format!("FunctionParameter(): {e}")
            } else {
                e
            }
        })?;
        let allow_numbers = NUMBERS_AS_TENSORS.contains(&raw.name.as_str());
        let mut params: Vec<FunctionParameter> = Vec::with_capacity(raw.params.len());
        for p in &raw.params {
            if params.iter().any(|q| q.name == p.name) {
                // Keyword matching assumes one parameter per name.
                return Err(format!(
                    "FunctionSignature(): duplicate parameter name '{}' in {}",
                    p.name, raw.name
                ));
            }
            let mut fp = FunctionParameter::new(p)?;
            fp.allow_numbers_as_tensors = allow_numbers;
            params.push(fp);
        }
        let min_args = params.iter().filter(|p| !p.optional).count();
        let max_pos_args = params.iter().filter(|p| !p.keyword_only).count();
        Ok(FunctionSignature {
            name: raw.name,
            max_args: params.len(),
            min_args,
            max_pos_args,
            params,
            hidden: raw.hidden,
            deprecated: raw.deprecated,
            text: text.to_string(),
        })
    }

    /// The signature as error messages print it:
    /// `(Tensor input, Tensor other, *, Number alpha = 1, Tensor out = None)`.
    pub fn display(&self) -> String {
        let mut s = String::from("(");
        let mut kw = false;
        for (i, p) in self.params.iter().enumerate() {
            if i != 0 {
                s.push_str(", ");
            }
            if p.keyword_only && !kw {
                s.push_str("*, ");
                kw = true;
            }
            s.push_str(p.type_name());
            s.push(' ');
            s.push_str(&p.name);
            if let Some(d) = &p.default_text {
                s.push_str(" = ");
                s.push_str(d);
            }
        }
        s.push(')');
        s
    }
}
