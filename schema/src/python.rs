//! Derive: the Python API bindings — which callables PyTorch's Python binding generates
//! (`torch.*` functions, `Tensor` methods, `torch.nn.functional`, `torch.linalg`, …) and
//! the ordered list of parser signature strings each one owns.
//!
//! This follows `torchgen/api/python.py` and `gen_python_functions.py` of PyTorch 2.15:
//!
//! 1. the functions `autogen:` generates are added ([`generated_functions`], schema.md
//!    §4.4); generated functions get bindings only if they are `view_copy` ops;
//! 2. functions on the skip lists ([`SKIP_PYTHON_BINDINGS`],
//!    [`SKIP_PYTHON_BINDINGS_SIGNATURES`]) are dropped;
//! 3. every remaining schema gets a Python signature (type spelling, defaults translated
//!    schema → C++ → Python text, `self` → `input`, out folding, TensorOptions);
//! 4. deprecated signatures from `deprecated.yaml` are matched to the schemas they call;
//! 5. per callable, a functional and an out= schema with equal signatures share one
//!    entry, and the entries are put in PyTorch's overload order (`sort_overloads`).
//!
//! Everything here is a pure function of the model.

use crate::diag::{Diagnostic, Diagnostics};
use crate::model::*;
use crate::schema::parse_schema;
use crate::validate::cpp_name;
use std::collections::{BTreeMap, BTreeSet, HashMap};

// ─── Public data ────────────────────────────────────────────────────────────────────

/// One entry of PyTorch's `deprecated.yaml`: an old Python signature and the call it
/// forwards to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeprecatedEntry {
    /// The schema-like signature, e.g. `add(Tensor self, Scalar alpha, Tensor other) -> Tensor`.
    pub name: String,
    /// The call expression onto a real schema, e.g. `add(self, other, alpha)`; names not
    /// among the parameters are constants (`1`).
    pub aten: String,
    /// The 1-based line of the entry (0 if unknown).
    pub line: usize,
}

/// One Python-visible callable and its parser signatures.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Binding {
    /// The callable as the Python API spells it: `torch.add`, `Tensor.add`,
    /// `torch.nn.functional.gelu`, `torch.linalg.linalg_det`, `torch.special.special_erf`,
    /// `torch.fft.fft_fft2`, `torch.sparse._spdiags`, `torch.nested.nested_to_padded_tensor`.
    pub name: String,
    /// The parser signature strings in the order PyTorch generates them (sorted by
    /// `sort_overloads`; deprecated ones keep their sorted place and carry the
    /// `|deprecated` suffix). See [`Binding::parser_order`] for the order in which the
    /// parser tries them.
    pub signatures: Vec<String>,
    /// Per signature (same index), the schemas it dispatches to.
    pub sources: Vec<SignatureSource>,
}

impl Binding {
    /// The indices of [`Binding::signatures`] in the order the runtime parser tries them:
    /// PyTorch moves deprecated signatures behind all others when it builds the parser
    /// (a stable partition of the generated order).
    pub fn parser_order(&self) -> Vec<usize> {
        let dep = |i: &usize| self.signatures[*i].ends_with("|deprecated");
        let all = 0..self.signatures.len();
        all.clone()
            .filter(|i| !dep(i))
            .chain(all.filter(|i| dep(i)))
            .collect()
    }
}

/// The schemas behind one parser signature.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SignatureSource {
    /// The schema called when no `out=` is given (`name.overload`, e.g. `add.Tensor`).
    pub functional: String,
    /// The out= schema called when `out=` is given, if the entry has one (`add.out`).
    pub out: Option<String>,
    /// For a deprecated signature: the `aten:` call expression used without `out=`.
    pub deprecated_call: Option<String>,
    /// For a deprecated signature with `out=`: the `aten:` call expression used with it.
    pub deprecated_out_call: Option<String>,
}

// ─── Rule tables (PyTorch's own) ────────────────────────────────────────────────────

/// C++ names (`cpp::name`: base name, `_out` for out= overloads) that get no Python
/// binding: PyTorch's `_SKIP_PYTHON_BINDINGS`, full-match regular expressions.
pub const SKIP_PYTHON_BINDINGS: &[&str] = &[
    "alias",
    "contiguous",
    "dim",
    "get_device",
    "is_contiguous",
    "is_cuda",
    "is_sparse",
    "is_sparse_csr",
    "numel",
    "size",
    "storage_offset",
    "stride",
    "sym_is_contiguous",
    "sym_size",
    "sym_stride",
    "sym_storage_offset",
    "sym_numel",
    ".*_backward",
    ".*_backward_(out|input|weight|bias)",
    ".*_forward",
    ".*_forward_out",
    ".*_jvp",
    "_unsafe_view",
    "tensor",
    "_?sparse_(coo|compressed|csr|csc|bsr|bsc)_tensor.*",
    "_range.*",
    "_sparse_add_out",
    "_sparse_div.*",
    "_sparse_mul.*",
    "_sparse_sub.*",
    "_sparse_dense_add_out",
    "index",
    "index_out",
    "unique_dim_consecutive",
    "_cumsum.*",
    "_cumprod.*",
    "_sum.*",
    "_prod.*",
    "_th_.*",
    "_thnn_.*",
    "range.*",
    "_solve.*",
    "_inverse.*",
    "_cholesky.*",
    "_triangular_solve.*",
    "_qr.*",
    "_svd.*",
    "slice",
    "item",
    "_local_scalar_dense",
    "to",
    "_to_copy",
    "_to_copy_out",
    "_reshape_copy",
    "_reshape_copy_out",
    "copy_sparse_to_sparse_",
    "copy_",
    "_foreach_copy",
    "numpy_T",
    "matrix_H",
    "mT",
    "mH",
    "nonzero(_(out|numpy))?",
    "set_data",
    ".*_overrideable",
    "data",
    "is_leaf",
    "output_nr",
    "_version",
    "requires_grad_",
    "retains_grad",
    "set_",
    "_fw_primal",
    "fake_quantize_per_tensor_affine_cachemask",
    "fake_quantize_per_channel_affine_cachemask",
    "_new_zeros_with_same_feature_meta",
    "_has_same_storage_numel",
    "_reshape_alias",
    "replace_",
    "copy",
    "fill.Tensor",
    "fill.Scalar",
    "lift.*",
    "normal_functional",
    "nbytes",
    "itemsize",
    "_batch_norm_with_update",
    "_batch_norm_with_update_out",
    "_batch_norm_no_update",
];

/// Whole schemas (without namespace) that get no Python binding, so that e.g.
/// `torch.add(t, 2)` binds `add.Tensor` (PyTorch's `SKIP_PYTHON_BINDINGS_SIGNATURES`).
pub const SKIP_PYTHON_BINDINGS_SIGNATURES: &[&str] = &[
    "add.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor",
    "add_.Scalar(Tensor(a!) self, Scalar other, Scalar alpha=1) -> Tensor(a!)",
    "sub.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor",
    "sub_.Scalar(Tensor(a!) self, Scalar other, Scalar alpha=1) -> Tensor(a!)",
    "mul.Scalar(Tensor self, Scalar other) -> Tensor",
    "mul_.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)",
    "div.Scalar(Tensor self, Scalar other) -> Tensor",
    "div_.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)",
];

/// Schema defaults with a fixed C++ spelling (torchgen's `JIT_TO_CPP_DEFAULT`).
const JIT_TO_CPP_DEFAULT: &[(&str, &str)] = &[
    ("False", "false"),
    ("True", "true"),
    ("None", "::std::nullopt"),
    ("Mean", "at::Reduction::Mean"),
    ("[]", "{}"),
    ("contiguous_format", "c10::MemoryFormat::Contiguous"),
    ("long", "at::kLong"),
];

/// C++ default expressions the Python signature prints as `None`.
const CPP_DEFAULTS_SHOWN_AS_NONE: &[&str] = &[
    "nullptr",
    "c10::nullopt",
    "::std::nullopt",
    "std::nullopt",
    "{}",
];

/// `python_module:` values and the Python namespace their functions live in.
const PYTHON_MODULES: &[(&str, &str)] = &[
    ("nn", "torch.nn.functional"),
    ("fft", "torch.fft"),
    ("linalg", "torch.linalg"),
    ("nested", "torch.nested"),
    ("sparse", "torch.sparse"),
    ("special", "torch.special"),
];

/// Inplace operators whose schema keeps autogen from grouping them.
const INPLACE_OPS_THAT_DONT_GET_GROUPED_PROPERLY: &[&str] = &["polygamma_"];

/// Tags a generated function inherits from the function it is generated from.
const INHERITED_TAGS: &[&str] = &["nondeterministic_seeded", "view_copy"];

// ─── deprecated.yaml ────────────────────────────────────────────────────────────────

/// Loads PyTorch's `deprecated.yaml`: a list of `{name: <schema>, aten: <call>}`
/// mappings. `file` names the file in diagnostics. Every problem is reported.
pub fn load_deprecated_str(file: &str, src: &str) -> Result<Vec<DeprecatedEntry>, Diagnostics> {
    let src = src.strip_prefix('\u{feff}').unwrap_or(src);
    let root = crate::yaml::parse(file, src).map_err(|d| Diagnostics(vec![d]))?;
    let items = match root {
        serde_yaml::Value::Sequence(items) => items,
        serde_yaml::Value::Null => Vec::new(),
        _ => {
            return Err(Diagnostics(vec![Diagnostic::new(
                file,
                1,
                "expected a list of `- name: ... aten: ...` entries at the top level",
            )]))
        }
    };
    // Top-level block-sequence items start with `-` in column 1.
    let starts: Vec<usize> = src
        .lines()
        .enumerate()
        .filter(|(_, l)| l.starts_with('-'))
        .map(|(i, _)| i + 1)
        .collect();
    let line_of = |i: usize| {
        if starts.len() == items.len() {
            starts[i]
        } else {
            0
        }
    };
    let mut diags = Vec::new();
    let mut out = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let line = line_of(i);
        let Some(map) = item.as_mapping() else {
            diags.push(Diagnostic::new(
                file,
                line,
                "expected a mapping with `name:` and `aten:`",
            ));
            continue;
        };
        let mut name = None;
        let mut aten = None;
        for (k, v) in map {
            match (k.as_str(), v.as_str()) {
                (Some("name"), Some(s)) => name = Some(s.to_string()),
                (Some("aten"), Some(s)) => aten = Some(s.to_string()),
                (Some(key @ ("name" | "aten")), None) => diags.push(Diagnostic::new(
                    file,
                    line,
                    format!("`{key}:` must be a string"),
                )),
                (key, _) => diags.push(
                    Diagnostic::new(
                        file,
                        line,
                        format!("unknown key {}", key.unwrap_or("(not a string)")),
                    )
                    .help("a deprecated entry has exactly `name:` and `aten:`"),
                ),
            }
        }
        match (name, aten) {
            (Some(name), Some(aten)) => out.push(DeprecatedEntry { name, aten, line }),
            (None, _) => diags.push(Diagnostic::new(file, line, "missing `name:`")),
            (_, None) => diags.push(Diagnostic::new(file, line, "missing `aten:`")),
        }
    }
    if diags.is_empty() {
        Ok(out)
    } else {
        Err(Diagnostics(diags))
    }
}

// ─── Type spelling and defaults ─────────────────────────────────────────────────────

/// The parser's spelling of a schema type (torchgen's `argument_type_str` with SymInt
/// kept, `const ` and ` &` removed): `int`→`int64_t`, `float`→`double`,
/// `str`→`c10::string_view`, `int[2]`→`IntArrayRef[2]`, `SymInt[]`→`SymIntArrayRef`,
/// `Tensor[]`→`TensorList`, `Tensor?[]`→`c10::List<::std::optional<Tensor>>`,
/// `Scalar[]`→`ScalarList`, `bool[3]`→`::std::array<bool,3>`, other lists
/// `ArrayRef<T>`, `T?`→`T?`. Types the parser cannot take are an error.
pub fn python_type_str(t: &Type) -> Result<String, String> {
    Ok(match t {
        Type::Base(b) => match b {
            BaseType::Tensor => "Tensor".into(),
            BaseType::Int => "int64_t".into(),
            BaseType::Float => "double".into(),
            BaseType::Str => "c10::string_view".into(),
            BaseType::Bool
            | BaseType::QScheme
            | BaseType::Scalar
            | BaseType::ScalarType
            | BaseType::Generator
            | BaseType::Storage
            | BaseType::Layout
            | BaseType::Device
            | BaseType::DeviceIndex
            | BaseType::MemoryFormat
            | BaseType::Dimname
            | BaseType::Stream
            | BaseType::SymInt => b.name().into(),
            _ => return Err(format!("unrecognized type {t}")),
        },
        Type::CustomClass(_) => return Err(format!("unrecognized type {t}")),
        Type::Optional(elem) => format!("{}?", python_type_str(elem)?),
        Type::List { elem, size } => {
            let sized = |base: &str| match size {
                Some(n) => format!("{base}[{n}]"),
                None => base.to_string(),
            };
            match elem.as_ref() {
                Type::Base(BaseType::Bool) => match size {
                    Some(n) => format!("::std::array<bool,{n}>"),
                    None => return Err(format!("unsized bool list {t} is not supported")),
                },
                Type::Base(BaseType::Int) => sized("IntArrayRef"),
                Type::Base(BaseType::SymInt) => sized("SymIntArrayRef"),
                Type::Base(BaseType::Tensor) => sized("TensorList"),
                Type::Base(BaseType::Scalar) => sized("ScalarList"),
                Type::Base(BaseType::Dimname) => sized("DimnameList"),
                Type::Optional(e) if e.is_base(BaseType::Tensor) => {
                    "c10::List<::std::optional<Tensor>>".into()
                }
                e => format!("ArrayRef<{}>", python_type_str(e)?),
            }
        }
    })
}

/// The C++ default expression torchgen writes for schema default `d` of type `t`
/// (`cpp::default_expr` without SymInt wrapping): `True`→`true`, `None`→`::std::nullopt`
/// (`{}` for `Tensor?`), `[a,b]`→`{a,b}`, `Mean`→`at::Reduction::Mean`,
/// `long`→`at::kLong`, `contiguous_format`→`c10::MemoryFormat::Contiguous`, a
/// single-quoted string → the double-quoted C++ literal; anything else unchanged.
pub fn cpp_default_expr(d: &str, t: &Type) -> Result<String, String> {
    if d == "None" && t.to_string() == "Tensor?" {
        return Ok("{}".into());
    }
    if t.is_base(BaseType::Str) && d.len() >= 2 && d.starts_with('\'') && d.ends_with('\'') {
        return Ok(requote_single_quoted(d));
    }
    match t {
        Type::Optional(elem) => {
            if d == "None" {
                return Ok("::std::nullopt".into());
            }
            return cpp_default_expr(d, elem);
        }
        Type::List { size, .. } => {
            if let Some(inner) = d.strip_prefix('[').and_then(|s| s.strip_suffix(']')) {
                return Ok(format!("{{{inner}}}"));
            }
            if size.is_none() {
                return Err(format!("Expected a list default '[...]' but found: '{d}'"));
            }
        }
        _ => {}
    }
    Ok(JIT_TO_CPP_DEFAULT
        .iter()
        .find(|(k, _)| *k == d)
        .map_or(d, |(_, v)| v)
        .to_string())
}

/// `'…'` → `"…"`: `"` gets escaped, `\'` becomes `'`, other escapes stay.
fn requote_single_quoted(d: &str) -> String {
    let chars: Vec<char> = d.chars().collect();
    let mut s = String::new();
    let mut i = 1;
    while i + 1 < chars.len() {
        if chars[i] != '\\' {
            if chars[i] == '"' {
                s.push_str("\\\"");
            } else {
                s.push(chars[i]);
            }
            i += 1;
        } else {
            if chars[i + 1] == '\'' {
                s.push('\'');
            } else {
                s.push(chars[i]);
                s.push(chars[i + 1]);
            }
            i += 2;
        }
    }
    format!("\"{s}\"")
}

/// The default text a parser signature shows for schema default `d` of type `t`:
/// the C++ expression with `true`/`false` → `True`/`False` and empty/null
/// expressions → `None` (so `int[2] stride=[]` shows `stride=None` and
/// `int reduction=Mean` shows `reduction=at::Reduction::Mean`).
pub fn python_default(d: &str, t: &Type) -> Result<String, String> {
    let cpp = cpp_default_expr(d, t)?;
    let py = match cpp.as_str() {
        "true" => "True".to_string(),
        "false" => "False".to_string(),
        _ => cpp,
    };
    Ok(if CPP_DEFAULTS_SHOWN_AS_NONE.contains(&py.as_str()) {
        "None".into()
    } else {
        py
    })
}

// ─── Python signatures ──────────────────────────────────────────────────────────────

/// One parameter of a Python signature (torchgen's `PythonArgument`).
#[derive(Clone, Debug, PartialEq)]
struct PyArg {
    name: String,
    ty: Type,
    /// Python default text, already translated from the schema.
    default: Option<String>,
}

impl PyArg {
    fn from_schema(a: &Argument) -> Result<PyArg, String> {
        let default = match &a.default {
            Some(d) => Some(
                python_default(&d.text, &a.ty)
                    .map_err(|e| format!("argument `{}`: {e}", a.name))?,
            ),
            None => None,
        };
        Ok(PyArg {
            name: a.name.clone(),
            ty: a.ty.clone(),
            default,
        })
    }

    fn kw(name: &str, ty: BaseType, default: &str) -> PyArg {
        PyArg {
            name: name.into(),
            ty: Type::Optional(Box::new(Type::Base(ty))),
            default: Some(default.into()),
        }
    }

    /// `Type name[=default]`, with `self` renamed `input` outside methods.
    fn formal(&self, method: bool) -> Result<String, String> {
        let ty = python_type_str(&self.ty)?
            .replace("const ", "")
            .replace(" &", "");
        let name = if self.name == "self" && (ty == "Tensor" || ty == "Number") && !method {
            "input"
        } else {
            &self.name
        };
        Ok(match &self.default {
            Some(d) => format!("{ty} {name}={d}"),
            None => format!("{ty} {name}"),
        })
    }
}

/// A Python signature (torchgen's `PythonSignature` / `PythonSignatureDeprecated`).
#[derive(Clone, Debug, PartialEq)]
struct PySig {
    /// The base operator name (`add`, `add_`, `__and__`).
    name: String,
    /// Positional parameters.
    input_args: Vec<PyArg>,
    /// Keyword-only parameters other than out and TensorOptions.
    input_kwargs: Vec<PyArg>,
    /// The folded out parameter.
    output: Option<PyArg>,
    /// `dtype, layout, device, pin_memory, requires_grad` for factory/new/like functions.
    tensor_options: Vec<PyArg>,
    /// A Tensor method (no `self` parameter).
    method: bool,
    /// From `deprecated.yaml`.
    deprecated: bool,
}

impl PySig {
    fn arguments(&self, skip_outputs: bool) -> Vec<&PyArg> {
        let mut v: Vec<&PyArg> = self.input_args.iter().chain(&self.input_kwargs).collect();
        if !skip_outputs {
            v.extend(&self.output);
        }
        v.extend(&self.tensor_options);
        v
    }

    /// The parser signature string (`skip_outputs` gives the grouping key).
    fn signature_str(&self, skip_outputs: bool) -> Result<String, String> {
        let mut formals = self
            .arguments(skip_outputs)
            .iter()
            .map(|a| a.formal(self.method))
            .collect::<Result<Vec<_>, _>>()?;
        if formals.len() > self.input_args.len() {
            formals.insert(self.input_args.len(), "*".into());
        }
        let suffix = if self.deprecated { "|deprecated" } else { "" };
        Ok(format!("{}({}){suffix}", self.name, formals.join(", ")))
    }
}

/// The Python signature of one schema (torchgen's `signature_from_schema`).
fn signature_from_schema(
    func: &FunctionSchema,
    category_override: Option<&str>,
    method: bool,
    deprecated: bool,
) -> Result<PySig, String> {
    let args = &func.arguments;
    if args.all.iter().any(|a| a.name == "requires_grad") {
        return Err(
            "argument named requires_grad is reserved, should not explicitly add it in the schema"
                .into(),
        );
    }
    let mut positional: Vec<&Argument> = args.pre_self_positional().iter().collect();
    if !method {
        positional.extend(args.self_arg());
    }
    positional.extend(args.post_self_positional());
    let k = args.kwarg_only_start.unwrap_or(args.all.len());
    let to = args.tensor_options_start();
    let kwargs = args
        .non_out_kwarg_only()
        .iter()
        .enumerate()
        .filter(|(i, _)| to.is_none_or(|t| k + i < t || k + i >= t + 4))
        .map(|(_, a)| a);

    let input_args = positional
        .into_iter()
        .map(PyArg::from_schema)
        .collect::<Result<Vec<_>, _>>()?;
    let input_kwargs = kwargs
        .map(PyArg::from_schema)
        .collect::<Result<Vec<_>, _>>()?;
    let outs = args.out();
    let output = match outs {
        [] => None,
        [one] => Some(PyArg {
            name: one.name.clone(),
            ty: one.ty.clone(),
            default: Some("None".into()),
        }),
        many => {
            if let Some(bad) = many.iter().find(|a| !a.ty.is_tensor_like()) {
                return Err(format!("Unsupported output type: {} {}", bad.ty, bad.name));
            }
            Some(PyArg {
                name: "out".into(),
                ty: Type::List {
                    elem: Box::new(Type::Base(BaseType::Tensor)),
                    size: Some(many.len() as u32),
                },
                default: Some("None".into()),
            })
        }
    };

    let has_tensor_input = args.non_out().iter().any(|a| a.ty.is_tensor_like());
    let has_tensor_return = func.returns.iter().any(|r| r.ty.is_tensor_like());
    let name = cpp_name(func);
    let is_factory =
        category_override == Some("factory") || (has_tensor_return && !has_tensor_input);
    let is_like_or_new = matches!(category_override, Some("new" | "like"))
        || name.starts_with("new_")
        || name.ends_with("_like");
    let is_dummy = category_override == Some("dummy");
    let tensor_options = if (is_factory || is_like_or_new) && !is_dummy {
        vec![
            PyArg::kw("dtype", BaseType::ScalarType, "None"),
            PyArg::kw("layout", BaseType::Layout, "None"),
            PyArg::kw("device", BaseType::Device, "None"),
            PyArg::kw("pin_memory", BaseType::Bool, "False"),
            PyArg::kw("requires_grad", BaseType::Bool, "False"),
        ]
    } else {
        Vec::new()
    };

    Ok(PySig {
        name: func.name.name.to_string(),
        input_args,
        input_kwargs,
        output,
        tensor_options,
        method,
        deprecated,
    })
}

// ─── Which functions get bindings ───────────────────────────────────────────────────

/// `fn` needs a Python binding at all (`should_generate_py_binding`).
fn should_generate_py_binding(f: &NativeFunction, skips: &regex_lite::Regex) -> bool {
    if f.has_tag("generated") && !f.has_tag("view_copy") {
        return false;
    }
    let name = cpp_name(&f.func);
    if skips.is_match(&name) {
        return false;
    }
    let schema = unqualified_schema(&f.func);
    !SKIP_PYTHON_BINDINGS_SIGNATURES.contains(&schema.as_str())
}

/// The schema text without a namespace prefix (as torchgen prints it).
fn unqualified_schema(f: &FunctionSchema) -> String {
    let s = f.to_string();
    match &f.name.namespace {
        Some(ns) => s
            .strip_prefix(&format!("{ns}::"))
            .map_or(s.clone(), str::to_string),
        None => s,
    }
}

/// The Python namespace a function's binding lives in, or `None` if this pass
/// (methods or functions) gives it none.
fn binding_namespace(f: &NativeFunction, method: bool) -> Result<Option<&'static str>, String> {
    match (&f.python_module, method) {
        (None, true) => Ok(f.variants.method.then_some("Tensor")),
        (None, false) => Ok(f.variants.function.then_some("torch")),
        (Some(_), true) => Ok(None),
        (Some(m), false) => PYTHON_MODULES
            .iter()
            .find(|(k, _)| k == m)
            .map(|(_, ns)| Some(*ns))
            .ok_or_else(|| format!("{}: unknown python_module {m}", f.name())),
    }
}

// ─── Signatures per function, deprecated signatures ─────────────────────────────────

/// A Python signature and the function it calls.
#[derive(Clone, Debug)]
struct Pair<'a> {
    sig: PySig,
    func: &'a NativeFunction,
    /// The `aten:` call expression, for deprecated signatures.
    deprecated_call: Option<&'a str>,
}

fn load_signatures<'a>(
    fns: &[&'a NativeFunction],
    deprecated: &'a [DeprecatedEntry],
    method: bool,
) -> Result<Vec<Pair<'a>>, String> {
    let mut pairs = fns
        .iter()
        .map(|f| {
            let sig = signature_from_schema(&f.func, f.category_override.as_deref(), method, false)
                .map_err(|e| format!("{}: {e}", f.func))?;
            Ok(Pair {
                sig,
                func: f,
                deprecated_call: None,
            })
        })
        .collect::<Result<Vec<_>, String>>()?;
    let dep = load_deprecated_signatures(&pairs, deprecated, method)?;
    pairs.extend(dep);
    Ok(pairs)
}

/// A `deprecated.yaml` call (`aten: addmm(self, mat1, mat2, beta, 1)`) →
/// (`addmm`, its arguments), by torchgen's `split_name_params`: the arguments are
/// split on `", "`.
///
/// ```
/// use opforge_schema::python::split_name_params;
/// assert_eq!(split_name_params("add_out(out, self, other, 1)").unwrap(), ("add_out", vec!["out", "self", "other", "1"]));
/// assert!(split_name_params("(x)").is_err());
/// ```
pub fn split_name_params(s: &str) -> Result<(&str, Vec<&str>), String> {
    let bad = || format!("Unsupported function schema: {s}");
    let is_word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let name_end = s.find(|c: char| !is_word(c)).unwrap_or(s.len());
    if name_end == 0 {
        return Err(bad());
    }
    let mut rest = &s[name_end..];
    if let Some(r) = rest.strip_prefix('.') {
        let e = r.find(|c: char| !is_word(c)).unwrap_or(r.len());
        if e == 0 {
            return Err(bad());
        }
        rest = &r[e..];
    }
    let inner = rest
        .strip_prefix('(')
        .and_then(|r| r.rfind(')').map(|i| &r[..i]))
        .ok_or_else(bad)?;
    Ok((&s[..name_end], inner.split(", ").collect()))
}

fn load_deprecated_signatures<'a>(
    pairs: &[Pair<'a>],
    deprecated: &'a [DeprecatedEntry],
    method: bool,
) -> Result<Vec<Pair<'a>>, String> {
    let mut by_name: HashMap<&str, Vec<&Pair<'a>>> = HashMap::new();
    for p in pairs {
        by_name.entry(p.sig.name.as_str()).or_default().push(p);
    }
    let scalar = Type::Base(BaseType::Scalar);
    let mut results = Vec::new();
    for d in deprecated {
        let at = |e: String| format!("deprecated.yaml:{}: {e}", d.line);
        let schema = parse_schema(&d.name).map_err(|e| at(format!("{}: {e}", d.name)))?;
        let (aten_name, call_args) = split_name_params(&d.aten).map_err(at)?;
        let is_out = aten_name.ends_with("_out");
        let aten_name = if is_out {
            aten_name.replace("_out", "")
        } else {
            aten_name.to_string()
        };
        // Parameter name → (type, annotation); later duplicates win, as in a dict.
        let by_param: HashMap<&str, &Argument> = schema
            .arguments
            .all
            .iter()
            .map(|a| (a.name.as_str(), a))
            .collect();
        let mut call_types = Vec::new();
        for name in &call_args {
            match (by_param.get(name), *name) {
                (Some(a), _) => call_types.push((&a.ty, a.annotation.as_ref())),
                (None, "1") => call_types.push((&scalar, None)),
                (None, _) => {
                    return Err(at(format!(
                        "deprecation definition: Unrecognized value {name}"
                    )))
                }
            }
        }
        let compatible = |aten: &FunctionSchema| {
            let a = &aten.arguments;
            let order: Vec<&Argument> = if is_out {
                a.out().iter().chain(a.non_out()).collect()
            } else {
                a.all.iter().collect()
            };
            let args_ok = order
                .iter()
                .enumerate()
                .all(|(i, arg)| match call_types.get(i) {
                    Some((ty, ann)) => **ty == arg.ty && *ann == arg.annotation.as_ref(),
                    None => arg.default.is_some(),
                });
            args_ok && schema.returns == aten.returns
        };
        let mut found = false;
        for p in by_name.get(aten_name.as_str()).into_iter().flatten() {
            if !compatible(&p.func.func) {
                continue;
            }
            found = true;
            let sig =
                signature_from_schema(&schema, p.func.category_override.as_deref(), method, true)
                    .map_err(|e| at(format!("{}: {e}", d.name)))?;
            results.push(Pair {
                sig,
                func: p.func,
                deprecated_call: Some(d.aten.as_str()),
            });
        }
        if !found {
            return Err(at(format!(
                "No native function with name {aten_name} matched signature:\n  {schema}"
            )));
        }
    }
    Ok(results)
}

// ─── Grouping and sorting ───────────────────────────────────────────────────────────

/// One parser entry: a signature, the functional pair it came from and, if merged, the
/// out= pair.
#[derive(Clone, Debug)]
struct Group<'p, 'a> {
    sig: PySig,
    functional: &'p Pair<'a>,
    out: Option<&'p Pair<'a>>,
}

/// Merges functional and out= signatures with equal keys (`group_overloads`) and sorts.
fn group_overloads<'p, 'a>(overloads: &[&'p Pair<'a>]) -> Result<Vec<Group<'p, 'a>>, String> {
    let mut bases: Vec<(String, &'p Pair<'a>)> = Vec::new();
    let mut base_index: HashMap<String, usize> = HashMap::new();
    let mut outs: Vec<(String, &'p Pair<'a>)> = Vec::new();
    let mut out_index: HashMap<String, usize> = HashMap::new();
    for &p in overloads {
        let key = p.sig.signature_str(true)?;
        let (list, index) = if p.func.func.kind() == SchemaKind::Out {
            (&mut outs, &mut out_index)
        } else {
            (&mut bases, &mut base_index)
        };
        if let Some(&i) = index.get(&key) {
            return Err(format!(
                "Found duplicated function definition:\n- {}.\nExisting definition:\n- {}.",
                unqualified_schema(&p.func.func),
                unqualified_schema(&list[i].1.func.func)
            ));
        }
        index.insert(key.clone(), list.len());
        list.push((key, p));
    }
    for (key, out) in &outs {
        if base_index.contains_key(key) {
            continue;
        }
        let candidates = overloads
            .iter()
            .filter(|o| {
                o.func.func.name.name == out.func.func.name.name
                    && o.func.func.kind() != SchemaKind::Out
                    && !o.sig.deprecated
            })
            .map(|o| o.sig.signature_str(true).map(|s| format!("- {s}")))
            .collect::<Result<Vec<_>, _>>()?;
        return Err(format!(
            "While identifying overloads, we found an out schema {} without a corresponding \
             non-out variant. We expected the non-out variant to have schema: \n- {key}\nPlease \
             check that you spelled the schema correctly in native_functions.yaml. We discovered \
             the following candidate(s): \n{}",
            out.sig.signature_str(false)?,
            candidates.join("\n")
        ));
    }
    let groups = bases
        .into_iter()
        .map(|(key, base)| {
            let out = out_index.get(&key).map(|&i| outs[i].1);
            let sig = match out {
                // The out= signature is a superset (its `out` defaults to None); out
                // overloads have no TensorOptions, so those come from the functional one.
                Some(o) => PySig {
                    tensor_options: base.sig.tensor_options.clone(),
                    ..o.sig.clone()
                },
                None => base.sig.clone(),
            };
            Group {
                sig,
                functional: base,
                out,
            }
        })
        .collect();
    sort_overloads(groups)
}

/// `t1 < t2` for one parameter: the overload with `t1` is tried after the one with `t2`.
fn is_arg_smaller(t1: &Type, t2: &Type) -> bool {
    let (s1, s2) = (t1.to_string(), t2.to_string());
    (s1 == "Scalar" && s2 == "Tensor")
        || (s1 == "Scalar?" && s2 == "Tensor?")
        || (s1.contains("Dimname") && !s2.contains("Dimname"))
        || (s1 == "int[]" && (s2 == "int" || s2 == "int?"))
        || (s1 == "Tensor[]" && s2.contains("[]"))
        || (s1 == "SymInt[]" && s2 == "int[]")
        || ((s1 == "SymInt" || s1 == "int") && s2 == "Tensor")
}

/// `s1 < s2` in the partial order (`s1` is tried later): same parameter count (outputs
/// ignored), not identical, and every parameter type equal or smaller.
fn is_smaller(s1: &PySig, s2: &PySig) -> bool {
    let (a1, a2) = (s1.arguments(true), s2.arguments(true));
    if a1.len() != a2.len() {
        return false;
    }
    let equal = a1.iter().zip(&a2).all(|(x, y)| x.ty == y.ty);
    let smaller_or_equal = a1
        .iter()
        .zip(&a2)
        .all(|(x, y)| x.ty.to_string() == y.ty.to_string() || is_arg_smaller(&x.ty, &y.ty));
    smaller_or_equal && !equal
}

/// PyTorch's `sort_overloads`: sort by signature string, then a stable topological
/// order of the partial order [`is_smaller`].
fn sort_overloads<'p, 'a>(groups: Vec<Group<'p, 'a>>) -> Result<Vec<Group<'p, 'a>>, String> {
    let mut keyed = groups
        .into_iter()
        .map(|g| Ok((g.sig.signature_str(false)?, g)))
        .collect::<Result<Vec<_>, String>>()?;
    keyed.sort_by(|a, b| a.0.cmp(&b.0));
    let groups: Vec<Group> = keyed.into_iter().map(|(_, g)| g).collect();
    let n = groups.len();
    let mut larger_than: BTreeMap<usize, BTreeSet<usize>> = BTreeMap::new();
    for (i1, g1) in groups.iter().enumerate() {
        for (i2, g2) in groups.iter().enumerate() {
            if is_smaller(&g1.sig, &g2.sig) {
                larger_than.entry(i1).or_default().insert(i2);
            }
        }
    }
    if larger_than.is_empty() {
        return Ok(groups);
    }
    let mut sorted_ids: Vec<usize> = (0..n).filter(|i| !larger_than.contains_key(i)).collect();
    for idx in 0..n {
        let Some(&i) = sorted_ids.get(idx) else {
            return Err(format!(
                "cannot order the overloads of {}: the partial order has a cycle",
                groups[0].sig.name
            ));
        };
        let keys: Vec<usize> = larger_than.keys().copied().collect();
        for j in keys {
            if let Some(larger) = larger_than.get_mut(&j) {
                larger.remove(&i);
                if larger.is_empty() {
                    larger_than.remove(&j);
                    sorted_ids.push(j);
                }
            }
        }
    }
    let mut slots: Vec<Option<Group>> = groups.into_iter().map(Some).collect();
    Ok(sorted_ids
        .into_iter()
        .filter_map(|i| slots.get_mut(i).and_then(Option::take))
        .collect())
}

// ─── Entry point ────────────────────────────────────────────────────────────────────

/// Every binding PyTorch's Python codegen generates for `entries` (the entries of a
/// `native_functions.yaml`, without generated functions: they are derived here) and
/// `deprecated` (the entries of `deprecated.yaml`), sorted by name.
///
/// Errors are the errors PyTorch's codegen raises (duplicated signatures, an out=
/// schema without a functional partner, an unmatched deprecated signature, a type the
/// parser cannot take, …).
pub fn derive_bindings(
    entries: &[NativeFunction],
    deprecated: &[DeprecatedEntry],
) -> Result<Vec<Binding>, String> {
    let generated = generated_functions(entries)?;
    let skips = skip_regex(SKIP_PYTHON_BINDINGS)?;
    let fns: Vec<&NativeFunction> = entries
        .iter()
        .chain(&generated)
        // Only `aten` operators get `torch.*` / `Tensor.*` bindings; operators of other
        // namespaces are reached through `torch.ops.<ns>` only.
        .filter(|f| f.func.name.namespace() == "aten" && should_generate_py_binding(f, &skips))
        .collect();

    let mut bindings = Vec::new();
    for method in [true, false] {
        let pairs = load_signatures(&fns, deprecated, method)?;
        // Callable name → its pairs, in first-seen order.
        let mut order: Vec<String> = Vec::new();
        let mut by_callable: HashMap<String, Vec<&Pair>> = HashMap::new();
        for p in &pairs {
            let Some(ns) = binding_namespace(p.func, method)? else {
                continue;
            };
            let name = format!("{ns}.{}", p.func.func.name.name);
            by_callable
                .entry(name.clone())
                .or_insert_with(|| {
                    order.push(name);
                    Vec::new()
                })
                .push(p);
        }
        for name in order {
            let overloads = &by_callable[&name];
            let groups = group_overloads(overloads).map_err(|e| format!("{name}: {e}"))?;
            let mut signatures = Vec::with_capacity(groups.len());
            let mut sources = Vec::with_capacity(groups.len());
            for g in &groups {
                signatures.push(g.sig.signature_str(false)?);
                sources.push(SignatureSource {
                    functional: g.functional.func.name(),
                    out: g.out.map(|o| o.func.name()),
                    deprecated_call: g.functional.deprecated_call.map(str::to_string),
                    deprecated_out_call: g.out.and_then(|o| o.deprecated_call).map(str::to_string),
                });
            }
            bindings.push(Binding {
                name,
                signatures,
                sources,
            });
        }
    }
    bindings.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(bindings)
}

// ─── autogen ────────────────────────────────────────────────────────────────────────

/// torchgen's `NativeFunction.is_view_op`: returns a non-written alias, is an
/// `inplace_view` (except `resize_`, `resize_as_`), or has a wildcard alias.
fn is_view_op(f: &NativeFunction) -> bool {
    let non_mutating_view = f
        .func
        .returns
        .iter()
        .any(|r| r.annotation.as_ref().is_some_and(|a| !a.is_write));
    let name = f.name();
    let inplace_view = f.has_tag("inplace_view") && name != "resize_" && name != "resize_as_";
    let wildcard = f.func.arguments.all.iter().any(|a| {
        a.annotation
            .as_ref()
            .is_some_and(|an| an.alias_set_after.contains(&'*'))
    });
    non_mutating_view || inplace_view || wildcard
}

/// The functions `autogen` adds to a schema file (torchgen's
/// `add_generated_native_functions`, schema.md §4.4), in generation order.
///
/// Entries are grouped by [`FunctionSchema::signature`]. A group that is entirely
/// manual, contains a view (`set_` excepted), or is entirely CompositeImplicitAutograd
/// without a `core` tag gets nothing. Otherwise, taking the mutable, else inplace, else
/// out=, else functional member as the base: an out= variant is generated when the
/// group has none, the base can have one (inplace, or tensor-like returns) and the
/// base's `autogen:` names one; a functional variant is generated when the group has
/// none but has (or just got) an out= variant. Generated functions are function-only,
/// tagged `generated` (plus `nondeterministic_seeded` / `view_copy` if the base has
/// them) and get a CompositeExplicitAutograd kernel. On PyTorch 2.15's file this gives
/// 520 functions, each named on an `autogen:` line.
pub fn generated_functions(entries: &[NativeFunction]) -> Result<Vec<NativeFunction>, String> {
    let mut order: Vec<String> = Vec::new();
    let mut groups: HashMap<String, Vec<&NativeFunction>> = HashMap::new();
    for f in entries {
        let key = f.func.signature().to_string();
        let g = groups.entry(key.clone()).or_insert_with(|| {
            order.push(key);
            Vec::new()
        });
        let kind = f.func.kind();
        if let Some(other) = g.iter().find(|o| o.func.kind() == kind) {
            return Err(format!(
                "Duplicate schema kind {kind} for {} (and {})",
                f.func, other.func
            ));
        }
        g.push(f);
    }
    let mut generated = Vec::new();
    for key in &order {
        let d = &groups[key];
        let get = |k: SchemaKind| d.iter().copied().find(|f| f.func.kind() == k);
        let (functional, inplace, mutable, out) = (
            get(SchemaKind::Functional),
            get(SchemaKind::Inplace),
            get(SchemaKind::Mutable),
            get(SchemaKind::Out),
        );
        if functional.is_none() && inplace.is_none() && mutable.is_none() && out.is_none() {
            continue;
        }
        let is_core = d.iter().any(|f| f.has_tag("core"));
        let are_manual = d.iter().all(|f| f.manual_cpp_binding);
        // `set_` is an inplace_view but is treated as a plain inplace op here.
        let has_view_ops = d
            .iter()
            .any(|f| is_view_op(f) && f.func.name.name.to_string() != "set_");
        let are_composite_implicit = d.iter().all(|f| f.is_composite_implicit());
        if are_manual || has_view_ops || (are_composite_implicit && !is_core) {
            continue;
        }
        // An out= operator without other variants gets nothing generated (torchgen
        // rejects it unless allow-listed; that is a validation concern, not ours).
        if out.is_some() && d.len() == 1 {
            continue;
        }
        if inplace.is_some_and(|f| {
            INPLACE_OPS_THAT_DONT_GET_GROUPED_PROPERLY.contains(&f.name().as_str())
        }) {
            continue;
        }
        let Some(base) = mutable.or(inplace).or(out).or(functional) else {
            continue;
        };
        // Only an inplace base or one with tensor-like returns can get an out= variant
        // (torchgen asserts the others are on its allow-lists).
        let base_valid = base.func.kind() == SchemaKind::Inplace
            || base.func.returns.iter().any(|r| r.ty.is_tensor_like());
        let needs_out = base.autogen.iter().any(|n| n.contains("out"));
        let gets_out = out.is_none() && base_valid && needs_out;
        if gets_out {
            generated.push(generate_function(base, SchemaKind::Out)?);
        }
        if functional.is_none() && (out.is_some() || gets_out) {
            generated.push(generate_function(base, SchemaKind::Functional)?);
        }
    }
    Ok(generated)
}

/// Appends `outs` as keyword-only out arguments.
fn with_out_args(mut args: Arguments, outs: Vec<Argument>) -> Arguments {
    if !outs.is_empty() && args.kwarg_only_start.is_none() {
        args.kwarg_only_start = Some(args.all.len());
    }
    args.all.extend(outs);
    args
}

/// Out arguments for the tensor-like returns, and the returns of the out= schema
/// (torchgen's `generate_out_args_from_schema`).
fn out_args_from_returns(func: &FunctionSchema) -> (Vec<Return>, Vec<Argument>) {
    let used: BTreeSet<char> = func
        .arguments
        .all
        .iter()
        .filter_map(|a| a.annotation.as_ref())
        .flat_map(|a| a.alias_set.iter().copied())
        .collect();
    let valid: Vec<char> = ('a'..='z').filter(|c| !used.contains(c)).collect();
    let all_plain_tensors = func
        .returns
        .iter()
        .all(|r| r.ty == Type::Base(BaseType::Tensor));
    let mut returns = Vec::new();
    let mut outs = Vec::new();
    for (i, r) in func.returns.iter().enumerate() {
        if r.ty.is_tensor_like() {
            let annotation = Annotation {
                alias_set: vec![valid.get(i).copied().unwrap_or('z')],
                is_write: true,
                alias_set_after: Vec::new(),
            };
            let name = if func.returns.len() == 1 {
                "out".to_string()
            } else {
                format!("out{i}")
            };
            if all_plain_tensors {
                returns.push(Return {
                    name: None,
                    ty: r.ty.clone(),
                    annotation: Some(annotation.clone()),
                });
            }
            outs.push(Argument {
                name,
                ty: r.ty.clone(),
                default: None,
                annotation: Some(annotation),
            });
        } else {
            returns.push(r.clone());
        }
    }
    (returns, outs)
}

/// The overload name of a generated out= variant.
fn out_overload_name(overload: &str) -> String {
    if overload.is_empty() {
        "out".into()
    } else {
        format!("{overload}_out")
    }
}

/// A functional or out= variant of `base` (torchgen's `generate_function`).
fn generate_function(base: &NativeFunction, kind: SchemaKind) -> Result<NativeFunction, String> {
    let f = &base.func;
    let plain_name = BaseName {
        base: f.name.name.base.clone(),
        inplace: false,
        dunder: f.name.name.dunder,
        functional_overload: false,
    };
    let out_name = OperatorName {
        namespace: f.name.namespace.clone(),
        name: plain_name.clone(),
        overload: out_overload_name(&f.name.overload),
    };
    let func = match (kind, f.kind()) {
        (SchemaKind::Functional, k) if k != SchemaKind::Functional => {
            let mut s = f.signature();
            // Keep return names; returns made from written inputs are named `<arg>_out`.
            let args = &f.arguments;
            let extra_names: Vec<&str> = args
                .self_arg()
                .into_iter()
                .chain(args.out())
                .chain(args.post_self_positional())
                .filter(|a| {
                    a.annotation.as_ref().is_some_and(|an| {
                        an.is_write && !f.returns.iter().any(|r| r.annotation.as_ref() == Some(an))
                    })
                })
                .map(|a| a.name.as_str())
                .collect();
            let names = f
                .returns
                .iter()
                .map(|r| r.name.clone())
                .chain(extra_names.iter().map(|n| Some(format!("{n}_out"))));
            for (r, n) in s.returns.iter_mut().zip(names) {
                r.name = n;
            }
            s.name = OperatorName {
                namespace: f.name.namespace.clone(),
                name: BaseName {
                    functional_overload: k == SchemaKind::Mutable,
                    ..plain_name
                },
                overload: f.name.overload.clone(),
            };
            s
        }
        (SchemaKind::Out, SchemaKind::Inplace) => {
            let self_arg = f
                .arguments
                .self_arg()
                .ok_or_else(|| format!("inplace operator without self: {f}"))?;
            let mut args = f.arguments.clone();
            if let Some(i) = args.self_index() {
                args.all[i].annotation = None;
            }
            let out = Argument {
                name: "out".into(),
                ty: self_arg.ty.clone(),
                default: None,
                annotation: self_arg.annotation.clone(),
            };
            FunctionSchema {
                name: out_name,
                arguments: with_out_args(args, vec![out]),
                returns: f.returns.clone(),
                varret: f.varret,
            }
        }
        (SchemaKind::Out, SchemaKind::Mutable) => {
            let (returns, outs) = out_args_from_returns(f);
            FunctionSchema {
                name: out_name,
                arguments: with_out_args(f.arguments.clone(), outs),
                returns,
                varret: f.varret,
            }
        }
        (SchemaKind::Out, SchemaKind::Functional) => {
            let (returns, outs) = out_args_from_returns(f);
            FunctionSchema {
                name: OperatorName {
                    name: f.name.name.clone(),
                    ..out_name
                },
                arguments: with_out_args(f.arguments.signature(), outs),
                returns,
                varret: f.varret,
            }
        }
        (k, from) => {
            return Err(format!(
                "cannot generate a {k} variant from the {from} operator {f}"
            ))
        }
    };
    let mut kernel = if func.kind() == SchemaKind::Out {
        let n = func.name.name.to_string();
        if func.name.overload.is_empty() {
            n
        } else {
            format!("{n}_{}", func.name.overload)
        }
    } else {
        cpp_name(&func)
    };
    if f.arguments
        .all
        .iter()
        .any(|a| a.ty.contains(BaseType::SymInt))
    {
        kernel.push_str("_symint");
    }
    let mut tags = vec!["generated".to_string()];
    for t in &base.tags {
        if INHERITED_TAGS.contains(&t.as_str()) && !tags.contains(t) {
            tags.push(t.clone());
        }
    }
    Ok(NativeFunction {
        func,
        line: base.line,
        variants: Variants {
            function: true,
            method: false,
        },
        dispatch: vec![DispatchEntry {
            keys: vec!["CompositeExplicitAutograd".into()],
            kernel,
            line: base.line,
        }],
        has_dispatch: true,
        structured: false,
        structured_delegate: None,
        structured_inherits: None,
        precomputed: Vec::new(),
        device_check: Some("NoCheck".into()),
        device_guard: false,
        python_module: None,
        category_override: None,
        tags,
        autogen: Vec::new(),
        cpp_no_default_args: Vec::new(),
        manual_cpp_binding: false,
        manual_kernel_registration: false,
        use_const_ref_for_mutable_tensors: base.use_const_ref_for_mutable_tensors,
        ufunc_inner_loop: Vec::new(),
    })
}

// ─── The skip list as one regular expression ────────────────────────────────────────

/// PyTorch's skip patterns, each matched against the whole name, as one anchored
/// alternation.
fn skip_regex(patterns: &[&str]) -> Result<regex_lite::Regex, String> {
    let alternation: Vec<String> = patterns.iter().map(|p| format!("(?:{p})")).collect();
    regex_lite::Regex::new(&format!("^(?:{})$", alternation.join("|")))
        .map_err(|e| format!("bad skip pattern: {e}"))
}

// ─── Tests ──────────────────────────────────────────────────────────────────────────

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::parse_type;

    fn ty(s: &str) -> Type {
        parse_type(s, 0, s).unwrap()
    }

    #[test]
    fn type_spelling() {
        let cases = [
            ("Tensor", "Tensor"),
            ("int", "int64_t"),
            ("float", "double"),
            ("str?", "c10::string_view?"),
            ("SymInt", "SymInt"),
            ("int[2]", "IntArrayRef[2]"),
            ("int[1]?", "IntArrayRef[1]?"),
            ("SymInt[]", "SymIntArrayRef"),
            ("Tensor[]", "TensorList"),
            ("Tensor?[]", "c10::List<::std::optional<Tensor>>"),
            ("Scalar[]", "ScalarList"),
            ("float[]?", "ArrayRef<double>?"),
            ("bool[3]", "::std::array<bool,3>"),
            ("Tensor?", "Tensor?"),
            ("ScalarType?", "ScalarType?"),
        ];
        for (schema, py) in cases {
            assert_eq!(python_type_str(&ty(schema)).unwrap(), py, "{schema}");
        }
        assert!(python_type_str(&ty("SymBool")).is_err());
        assert!(python_type_str(&ty("bool[]")).is_err());
    }

    #[test]
    fn default_translation() {
        let cases = [
            ("True", "bool", "True"),
            ("False", "bool?", "False"),
            ("None", "Tensor?", "None"),
            ("None", "int?", "None"),
            ("[]", "int[2]", "None"),
            ("[-2,-1]", "int[1]", "{-2,-1}"),
            ("0", "SymInt[2]", "0"),
            ("Mean", "int", "at::Reduction::Mean"),
            ("long", "ScalarType?", "at::kLong"),
            (
                "contiguous_format",
                "MemoryFormat",
                "c10::MemoryFormat::Contiguous",
            ),
            ("'none'", "str", "\"none\""),
            ("\"L\"", "str", "\"L\""),
            ("'\"\\'\\\\'", "str", "\"\\\"'\\\\\""),
            ("1e-05", "float", "1e-05"),
            ("1", "Scalar", "1"),
        ];
        for (d, t, py) in cases {
            assert_eq!(python_default(d, &ty(t)).unwrap(), py, "{d} : {t}");
        }
        assert!(python_default("0", &ty("int[]")).is_err());
    }

    #[test]
    fn skip_patterns() {
        let r = skip_regex(SKIP_PYTHON_BINDINGS).unwrap();
        for skipped in [
            "conv_backward",
            "x_backward_input",
            "nonzero",
            "nonzero_numpy",
            "sparse_coo_tensor",
            "size",
        ] {
            assert!(r.is_match(skipped), "{skipped}");
        }
        for kept in [
            "conv_forward_output",
            "nonzero_static",
            "to_dense",
            "add",
            "sizes",
        ] {
            assert!(!r.is_match(kept), "{kept}");
        }
        assert!(skip_regex(&["a(b"]).is_err());
    }

    fn bindings(yaml: &str, deprecated: &str) -> Vec<Binding> {
        let file = crate::load::load_str("t.yaml", yaml).unwrap();
        let dep = load_deprecated_str("d.yaml", deprecated).unwrap();
        derive_bindings(&file.entries, &dep).unwrap()
    }

    fn get<'b>(bs: &'b [Binding], name: &str) -> &'b [String] {
        &bs.iter().find(|b| b.name == name).unwrap().signatures
    }

    #[test]
    fn sort_order_puts_tensor_before_scalar() {
        let yaml = "\
- func: where.self(Tensor condition, Tensor self, Tensor other) -> Tensor
  variants: function, method
- func: where.self_out(Tensor condition, Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)
- func: where.ScalarSelf(Tensor condition, Scalar self, Tensor other) -> Tensor
- func: where.ScalarOther(Tensor condition, Tensor self, Scalar other) -> Tensor
  variants: function, method
- func: where.Scalar(Tensor condition, Scalar self, Scalar other) -> Tensor
- func: where(Tensor condition) -> Tensor[]
";
        let bs = bindings(yaml, "");
        assert_eq!(
            get(&bs, "torch.where"),
            [
                "where(Tensor condition)",
                "where(Tensor condition, Tensor input, Tensor other, *, Tensor out=None)",
                "where(Tensor condition, Scalar self, Tensor other)",
                "where(Tensor condition, Tensor input, Scalar other)",
                "where(Tensor condition, Scalar self, Scalar other)",
            ]
        );
        assert_eq!(
            get(&bs, "Tensor.where"),
            [
                "where(Tensor condition, Tensor other)",
                "where(Tensor condition, Scalar other)"
            ]
        );
    }

    #[test]
    fn factory_out_folding_and_deprecated() {
        let yaml = "\
- func: zeros(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor
  dispatch:
    CompositeExplicitAutograd: zeros
- func: zeros.out(SymInt[] size, *, Tensor(a!) out) -> Tensor(a!)
- func: max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)
- func: max.dim_max(Tensor self, int dim, bool keepdim=False, *, Tensor(a!) max, Tensor(b!) max_values) -> (Tensor(a!) values, Tensor(b!) indices)
- func: add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
  variants: function, method
- func: add.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor
  variants: function, method
";
        let dep = "\
- name: add(Tensor self, Scalar alpha, Tensor other) -> Tensor
  aten: add(self, other, alpha)
";
        let bs = bindings(yaml, dep);
        assert_eq!(
            get(&bs, "torch.zeros"),
            [
                "zeros(SymIntArrayRef size, *, Tensor out=None, ScalarType? dtype=None, \
              Layout? layout=None, Device? device=None, bool? pin_memory=False, \
              bool? requires_grad=False)"
            ]
        );
        assert_eq!(
            get(&bs, "torch.max"),
            ["max(Tensor input, int64_t dim, bool keepdim=False, *, TensorList[2] out=None)"]
        );
        let add = bs.iter().find(|b| b.name == "Tensor.add").unwrap();
        assert_eq!(
            add.signatures,
            [
                "add(Scalar alpha, Tensor other)|deprecated",
                "add(Tensor other, *, Scalar alpha=1)"
            ]
        );
        assert_eq!(add.parser_order(), [1, 0]);
        assert_eq!(add.sources[1].functional, "add.Tensor");
        assert_eq!(
            add.sources[0].deprecated_call.as_deref(),
            Some("add(self, other, alpha)")
        );
    }

    #[test]
    fn deprecated_yaml_errors_name_the_line() {
        let src = "- name: a(Tensor self) -> Tensor\n  aten: a(self)\n\n- aten: b()\n";
        let err = load_deprecated_str("d.yaml", src).unwrap_err();
        assert_eq!(err.0.len(), 1);
        assert_eq!(err.0[0].line, 4);
        assert!(err.0[0].message.contains("missing `name:`"));
    }
}
