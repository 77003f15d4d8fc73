//! Validate: per-entry and cross-entry checks on a loaded [`SchemaFile`].
//!
//! Every problem is collected (not just the first) and reported as a
//! [`Diagnostic`] naming `file:line`, the entry, what is wrong and how to fix it.
//! The rules are torchgen's (spec `schema.md` §4–§7); where torchgen's wording is
//! known it is kept, so messages can be searched for in PyTorch's sources.

use crate::diag::{Diagnostic, Diagnostics};
use crate::load::SchemaFile;
use crate::model::*;
use crate::schema::check_invariants;
use std::collections::HashMap;

/// Python keywords, which may not be argument names (PyTorch binds them as keywords).
const PYTHON_KEYWORDS: &[&str] = &[
    "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue",
    "def", "del", "elif", "else", "except", "finally", "for", "from", "global", "if", "import",
    "in", "is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return", "try", "while",
    "with", "yield",
];

/// Operators allowed to use a Python keyword (`from`) as an argument name.
const KEYWORD_ARG_EXCEPTIONS: &[&str] =
    &["_has_compatible_shallow_copy_type", "random_", "uniform_"];

/// Enum-like default names per type.
const SCALAR_TYPE_NAMES: &[&str] = &[
    "uint8",
    "int8",
    "int16",
    "int32",
    "int64",
    "float16",
    "float32",
    "float64",
    "complex32",
    "complex64",
    "complex128",
    "bool",
    "bfloat16",
    "byte",
    "char",
    "short",
    "int",
    "long",
    "half",
    "float",
    "double",
    "cfloat",
    "cdouble",
];
const MEMORY_FORMAT_NAMES: &[&str] = &[
    "contiguous_format",
    "preserve_format",
    "channels_last",
    "channels_last_3d",
];
const LAYOUT_NAMES: &[&str] = &[
    "strided",
    "sparse_coo",
    "sparse_csr",
    "sparse_csc",
    "sparse_bsr",
    "sparse_bsc",
    "mkldnn",
    "jagged",
];
const REDUCTION_NAMES: &[&str] = &["Mean", "Sum"];

/// Validates every entry of `file`. `tags` are the known tag names (from `tags.yaml`);
/// when `None`, tags are not checked.
pub fn validate(file: &SchemaFile, tags: Option<&[String]>) -> Result<(), Diagnostics> {
    let mut v = Validator {
        file: &file.file,
        diags: Vec::new(),
    };
    let mut seen: HashMap<String, usize> = HashMap::new();
    for nf in &file.entries {
        let name = nf.name();
        if let Some(prev) = seen.insert(name.clone(), nf.line) {
            v.push(
                nf,
                nf.line,
                format!("duplicate operator `{name}` (first defined at line {prev})"),
                Some("give one of them a different overload name: `name.overload(...)`".into()),
            );
        }
        v.entry(nf, tags);
    }
    v.cross_entry(file, &seen);
    if v.diags.is_empty() {
        Ok(())
    } else {
        Err(Diagnostics(v.diags))
    }
}

struct Validator<'a> {
    file: &'a str,
    diags: Vec<Diagnostic>,
}

impl Validator<'_> {
    fn push(&mut self, nf: &NativeFunction, line: usize, msg: String, help: Option<String>) {
        let mut d = Diagnostic::new(self.file, line, msg).entry(nf.name());
        d.help = help;
        self.diags.push(d);
    }

    fn err(&mut self, nf: &NativeFunction, msg: impl Into<String>, help: impl Into<String>) {
        let help: String = help.into();
        self.push(nf, nf.line, msg.into(), (!help.is_empty()).then_some(help));
    }

    fn entry(&mut self, nf: &NativeFunction, tags: Option<&[String]>) {
        let f = &nf.func;
        let kind = f.kind();
        if let Err(m) = check_invariants(f) {
            let help = if m.contains("Inplace op") {
                "an inplace operator `foo_` takes `Tensor(a!) self` and returns `Tensor(a!)`"
            } else if m.contains("out") || m.contains("mutable") {
                "out overloads take their outputs after `*` as `Tensor(a!) out` and return them: `foo.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)`"
            } else {
                ""
            };
            self.err(nf, m, help);
        }
        for a in &f.arguments.all {
            self.check_default(nf, a);
            if PYTHON_KEYWORDS.contains(&a.name.as_str())
                && !KEYWORD_ARG_EXCEPTIONS.contains(&f.name.name.to_string().as_str())
            {
                self.err(
                    nf,
                    format!(
                        "Argument name '{}' in function '{}' is a reserved Python keyword.",
                        a.name, f.name
                    ),
                    "rename the argument",
                );
            }
        }
        // Variants.
        if matches!(kind, SchemaKind::Out | SchemaKind::Scratch) && nf.variants.method {
            self.err(nf, "Native functions with out arguments MUST be declared with only function variant; e.g., variants: function; otherwise you will tickle a Python argument binding bug (which usually manifests itself as the result variable being undefined.)", "write `variants: function` (or leave `variants:` out)");
        }
        if nf.python_module.is_some() && nf.variants.method {
            self.err(
                nf,
                "functions in modules cannot be methods",
                "drop `method` from `variants:` or drop `python_module:`",
            );
        }
        self.check_dispatch(nf);
        // Structured and friends.
        if nf.structured && kind != SchemaKind::Out {
            self.err(nf, "Put structured field on the out= variant of a function; did you mean structured_delegate?", "");
        }
        if nf.structured_delegate.is_some() && kind == SchemaKind::Out {
            self.err(
                nf,
                "structured_delegate field not allowed on out= functions; did you mean structured?",
                "",
            );
        }
        if nf.structured_inherits.is_some() && !nf.structured {
            self.err(
                nf,
                "structured_inherits must also imply structured: True",
                "",
            );
        }
        if !nf.precomputed.is_empty() && !nf.structured {
            self.err(
                nf,
                format!(
                    "precomputed requires structured=True, got structured={}",
                    py_bool(nf.structured)
                ),
                "",
            );
        }
        if !nf.ufunc_inner_loop.is_empty() && !nf.structured {
            self.err(nf, "ufunc must be structured", "");
        }
        if nf.structured_delegate.is_some() || nf.structured {
            if !nf.device_guard {
                self.err(
                    nf,
                    "device_guard: False is not allowed on structured operators",
                    "",
                );
            }
        }
        if let Some(dc) = &nf.device_check {
            if dc != "NoCheck" && dc != "ExactSame" {
                self.err(
                    nf,
                    format!("illegal device_check: {dc}"),
                    "use `NoCheck` or `ExactSame`",
                );
            }
        }
        if let Some(m) = &nf.python_module {
            if !["nn", "special", "linalg", "fft", "sparse", "nested"].contains(&m.as_str()) {
                self.err(
                    nf,
                    format!("unknown python_module {m}"),
                    "use one of nn, special, linalg, fft, sparse, nested",
                );
            }
        }
        if let Some(c) = &nf.category_override {
            if !["factory", "dummy", "new", "like"].contains(&c.as_str()) {
                self.err(
                    nf,
                    format!("unknown category_override {c}"),
                    "use one of factory, dummy, new, like",
                );
            }
        }
        let bad_no_default: Vec<&str> = nf
            .cpp_no_default_args
            .iter()
            .filter(|n| f.arguments.get(n).is_none_or(|a| a.default.is_none()))
            .map(String::as_str)
            .collect();
        if !bad_no_default.is_empty() {
            self.err(
                nf,
                format!("Invalid cpp_no_default_args: {bad_no_default:?}"),
                "each name must be an argument that has a default",
            );
        }
        if nf.use_const_ref_for_mutable_tensors && kind == SchemaKind::Out {
            self.err(nf, "use_const_ref_for_mutable_tensors is not allowed on out= functions (see https://github.com/pytorch/pytorch/issues/145522)", "");
        }
        // Tags.
        if let Some(known) = tags {
            for t in &nf.tags {
                if !known.iter().any(|k| k == t) {
                    let line = nf.line;
                    let help = match nearest(t, known.iter().map(String::as_str)) {
                        Some(n) => format!("did you mean `{n}`? (tags are declared in tags.yaml)"),
                        None => "tags are declared in tags.yaml beside the schema file".into(),
                    };
                    self.push(nf, line, format!("illegal tag {t}"), Some(help));
                }
            }
        }
        if !nf.has_tag("nondeterministic_seeded") && f.name.namespace() == "aten" {
            let base = &f.name.name.base;
            let dropout = (base.contains("dropout")
                || f.arguments.all.iter().any(|a| a.name.contains("dropout")))
                && !base.contains("backward")
                && base != "_cudnn_init_dropout_state";
            let seeded = (base.contains("rand") && !base.contains("_philox_"))
                || dropout
                || f.arguments
                    .all
                    .iter()
                    .any(|a| a.ty.contains(BaseType::Generator));
            if seeded {
                self.err(
                    nf,
                    format!("nondeterministic_seeded tag missing for {}", f.name),
                    "add `tags: nondeterministic_seeded`",
                );
            }
        }
    }

    fn check_default(&mut self, nf: &NativeFunction, a: &Argument) {
        let Some(d) = &a.default else { return };
        if !default_fits(&a.ty, d.value.as_ref()) {
            self.err(
                nf,
                format!(
                    "default `{}` does not fit type `{}` of argument `{}`",
                    d.text, a.ty, a.name
                ),
                default_help(&a.ty),
            );
        }
    }

    fn check_dispatch(&mut self, nf: &NativeFunction) {
        if nf.manual_kernel_registration && nf.has_dispatch {
            self.err(nf, "cannot specify both manual_kernel_registration and dispatch; with manual registration, dispatch has no effect!", "");
        }
        let mut seen: HashMap<&str, usize> = HashMap::new();
        let mut composites = Vec::new();
        for row in &nf.dispatch {
            for key in &row.keys {
                if let Some(prev) = seen.insert(key, row.line) {
                    self.push(
                        nf,
                        row.line,
                        format!("dispatch key {key} appears twice (also at line {prev})"),
                        None,
                    );
                }
                if COMPOSITE_KEYS.contains(&key.as_str()) && !composites.contains(&key.as_str()) {
                    composites.push(key.as_str());
                }
                if !SUPPORTED_DISPATCH_KEYS.contains(&key.as_str()) {
                    let msg = if UNSUPPORTED_DISPATCH_KEYS.contains(&key.as_str()) {
                        format!(
                            "Dispatch key {key} of kernel {} is not a supported dispatch key.",
                            row.kernel
                        )
                    } else {
                        format!("unknown dispatch key {key}")
                    };
                    let help = match nearest(key, SUPPORTED_DISPATCH_KEYS.iter().copied()) {
                        Some(n) => format!("did you mean `{n}`?"),
                        None => format!("supported keys: {}", SUPPORTED_DISPATCH_KEYS.join(", ")),
                    };
                    self.push(nf, row.line, msg, Some(help));
                }
                if nf.structured_delegate.is_some()
                    && ["CPU", "CUDA", "MPS", "XPU", "MTIA"].contains(&key.as_str())
                {
                    self.push(nf, row.line, format!("if structured_delegate, then must not have {key} in dispatch dictionary (it is delegated!)"), None);
                }
            }
            if !is_rust_path(&row.kernel) {
                self.push(
                    nf,
                    row.line,
                    format!("kernel name `{}` is not a Rust path", row.kernel),
                    Some("write identifiers separated by `::`, e.g. `cpu::add_Tensor`".into()),
                );
            }
        }
        if composites.len() > 1 {
            self.err(nf, "cannot specify more than one of CompositeExplicitAutograd, CompositeExplicitAutogradNonFunctional, or CompositeImplicitAutograd on a single kernel; each strictly subsumes the other.  If you wanted to provide an explicit autograd implementation, specify CompositeExplicitAutograd; otherwise specify CompositeImplicitAutograd only", "");
        }
        let cpp_name = cpp_name(&nf.func);
        if let [row] = nf.dispatch.as_slice() {
            if row.keys == ["CompositeImplicitAutograd"] {
                if row.kernel == cpp_name {
                    self.push(nf, row.line, format!("unnecessary dispatch table for this function; just delete the dispatch key entirely (CompositeImplicitAutograd: {} is the default)", row.kernel), None);
                } else if !row.kernel.contains("_symint") {
                    self.push(nf, row.line, format!("unexpected name for singleton CompositeImplicitAutograd dispatch entry: expected {cpp_name} but got {}.  Rename your implementation to the expected name, then delete the dispatch table", row.kernel), None);
                }
            }
        }
        if !nf.has_dispatch && !nf.structured && nf.structured_delegate.is_none() {
            let name = nf.func.name.name.to_string();
            let has_tensor_arg = nf
                .func
                .arguments
                .non_out()
                .iter()
                .any(|a| a.ty.is_tensor_like());
            if name.starts_with("new_")
                || name.ends_with("_like")
                || (nf.func.has_tensor_options() && !has_tensor_arg)
            {
                self.err(nf, format!("expected {name} to have a CompositeExplicitAutograd dispatch entry, but there was no dispatch table.  Factory functions should not have implicit dispatch as they should not be decomposed for __torch_dispatch__"), "add `dispatch: CompositeExplicitAutograd: <kernel>`");
            }
        }
    }

    fn cross_entry(&mut self, file: &SchemaFile, names: &HashMap<String, usize>) {
        let by_name: HashMap<String, &NativeFunction> =
            file.entries.iter().map(|e| (e.name(), e)).collect();
        for nf in &file.entries {
            if let Some(d) = &nf.structured_delegate {
                match by_name.get(d) {
                    None => {
                        let help = match nearest(d, names.keys().map(String::as_str)) {
                            Some(n) => format!("did you mean `{n}`?"),
                            None => "name an out= operator of this file marked `structured: True`".into(),
                        };
                        self.push(nf, nf.line, format!("{} is marked as a structured_delegate pointing to {d}, but {d} is missing.", nf.func.name), Some(help));
                    }
                    Some(t) if !t.structured => self.push(nf, nf.line, format!("{} is marked as a structured_delegate pointing to {d}, but {d} is not marked as structured. Consider adding 'structured=True' to the delegated operator", nf.func.name), None),
                    _ => {}
                }
            }
            if nf.has_tag("inplace_view") && !nf.func.name.name.inplace {
                self.err(
                    nf,
                    "the inplace_view tag is only for inplace operators (`foo_`), which change their `self`'s metadata",
                    "rename the operator with a trailing `_` or drop the tag",
                );
            }
        }
    }
}

fn py_bool(b: bool) -> &'static str {
    if b {
        "True"
    } else {
        "False"
    }
}

/// The C++ name torchgen gives an operator: its base name, plus `_out` for out= overloads.
pub fn cpp_name(f: &FunctionSchema) -> String {
    let mut s = f.name.name.to_string();
    if f.kind() == SchemaKind::Out {
        s.push_str("_out");
    }
    s
}

/// True if `s` is `ident(::ident)*` (Rust keywords allowed: they are written as raw
/// identifiers when emitted).
pub fn is_rust_path(s: &str) -> bool {
    s.split("::")
        .all(|seg| crate::schema::is_ident(seg) && seg != "_")
}

/// Does a default (already interpreted) fit the argument type?
pub fn default_fits(ty: &Type, v: Option<&DefaultValue>) -> bool {
    let Some(v) = v else { return false };
    match (ty, v) {
        (Type::Optional(_), DefaultValue::None) => true,
        (Type::Optional(t), v) => default_fits(t, Some(v)),
        (Type::List { elem, .. }, DefaultValue::List(xs)) => {
            xs.iter().all(|x| default_fits(elem, Some(x)))
        }
        (
            Type::List {
                elem,
                size: Some(_),
            },
            v @ (DefaultValue::Int(_) | DefaultValue::Bool(_)),
        ) => default_fits(elem, Some(v)),
        (Type::Base(b), v) => base_default_fits(*b, v),
        _ => false,
    }
}

fn base_default_fits(b: BaseType, v: &DefaultValue) -> bool {
    use BaseType as B;
    use DefaultValue as D;
    match v {
        D::None | D::List(_) => false,
        D::Bool(_) => matches!(b, B::Bool | B::SymBool),
        D::Int(_) => matches!(
            b,
            B::Int | B::SymInt | B::Float | B::Scalar | B::DeviceIndex | B::Complex
        ),
        D::Float(_) => matches!(b, B::Float | B::Scalar | B::Complex),
        D::Str(_) => b == B::Str,
        D::Enum(e) => {
            let names: &[&str] = match b {
                B::ScalarType => SCALAR_TYPE_NAMES,
                B::MemoryFormat => MEMORY_FORMAT_NAMES,
                B::Layout => LAYOUT_NAMES,
                B::Int => REDUCTION_NAMES,
                _ => &[],
            };
            names.contains(&e.as_str())
        }
    }
}

fn default_help(ty: &Type) -> String {
    let t = ty.strip_optional();
    let mut s = match t {
        Type::List { size: Some(_), .. } => {
            "a list literal without spaces (`[0,1]`) or one number repeated for every element"
                .to_string()
        }
        Type::List { .. } => "a list literal without spaces, e.g. `[]` or `[0,1]`".into(),
        Type::Base(BaseType::Bool) => "`True` or `False`".into(),
        Type::Base(BaseType::Int | BaseType::SymInt) => {
            "an integer (or `Mean`/`Sum` for reductions)".into()
        }
        Type::Base(BaseType::Float) => "a number such as `1.0` or `1e-05`".into(),
        Type::Base(BaseType::Scalar) => "a number".into(),
        Type::Base(BaseType::Str) => "a quoted string, e.g. `'none'`".into(),
        Type::Base(BaseType::ScalarType) => "a dtype name such as `long`".into(),
        Type::Base(BaseType::MemoryFormat) => "a memory format such as `contiguous_format`".into(),
        Type::Base(BaseType::Layout) => "a layout such as `strided`".into(),
        _ => "only `None`, for an optional type".into(),
    };
    s.insert_str(0, "a default for this type is ");
    if ty.is_nullable() {
        s.push_str(", or `None`");
    }
    s
}

/// The candidate closest to `s` by edit distance, if it is close enough to be a typo.
pub fn nearest<'a>(s: &str, candidates: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    let limit = (s.chars().count() / 3).max(2);
    candidates
        .map(|c| (edit_distance(s, c), c))
        .filter(|(d, _)| *d <= limit)
        .min()
        .map(|(_, c)| c)
}

/// Levenshtein distance over characters.
pub fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            cur[j + 1] = (prev[j] + usize::from(ca != *cb))
                .min(prev[j + 1] + 1)
                .min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}
