//! Validate: per-entry and cross-entry checks on a loaded [`SchemaFile`].
//!
//! Every problem is collected (not just the first) and reported as a
//! [`Diagnostic`] naming `file:line`, the entry, what is wrong and how to fix it.
//! The rules are torchgen's (`torchgen/model.py`, `gen.py`); where torchgen's wording is
//! known it is kept, so messages can be searched for in PyTorch's sources.

use crate::diag::{abbrev, nearest, Diagnostic, Diagnostics};
use crate::enums::{self, EnumKind};
use crate::load::{SchemaFile, SourceMap};
use crate::model::*;
use crate::names::{arg_ident, is_rust_keyword, op_ident, unusable};
use crate::scalar_type::ScalarType;
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

/// Validates every entry of `file`. `tags` are the known tag names (from `tags.yaml`);
/// when `None`, tags are not checked. Every problem is returned, ordered by position.
pub fn validate(file: &SchemaFile, tags: Option<&[String]>) -> Result<(), Diagnostics> {
    validate_with(file, tags, true)
}

/// [`validate`], with the cross-entry checks (structured delegates and the like)
/// optional: they are skipped when some entries failed to load, since a missing
/// entry would make them report problems that are not there.
pub fn validate_with(
    file: &SchemaFile,
    tags: Option<&[String]>,
    cross_entry: bool,
) -> Result<(), Diagnostics> {
    let mut v = Validator {
        file: &file.file,
        src: &file.source,
        diags: Vec::new(),
    };
    let mut seen: HashMap<String, usize> = HashMap::new();
    // Rust identifiers (`OpId` variants, `at::` functions), by their first entry.
    let mut idents: HashMap<String, &NativeFunction> = HashMap::new();
    for nf in &file.entries {
        let name = nf.name();
        if let Some(&prev) = seen.get(&name) {
            let at = v.at_func(nf);
            v.push(
                nf,
                at,
                format!("duplicate operator `{name}` (first defined at line {prev})"),
                "give one of them a different overload name: `name.overload(...)`",
            );
        } else {
            seen.insert(name, nf.line);
            let ident = op_ident(&nf.func.name);
            v.check_op_ident(nf, &ident);
            match idents.get(&ident) {
                Some(first) => {
                    let at = v.at_func(nf);
                    v.push(
                        nf,
                        at,
                        format!(
                            "`{}` and `{}` (line {}) have the same Rust identifier `{ident}`",
                            nf.func.name, first.func.name, first.line
                        ),
                        "rename one of the two overloads (the Rust identifier is the name with `.` as `_`, namespaces other than `aten` in front and a `_` after a Rust keyword)",
                    );
                }
                None => {
                    idents.insert(ident, nf);
                }
            }
        }
        v.entry(nf, tags);
    }
    if cross_entry {
        v.cross_entry(file);
    }
    if v.diags.is_empty() {
        Ok(())
    } else {
        let mut d = Diagnostics(v.diags);
        d.sort();
        Err(d)
    }
}

/// A place in the file: line and, when known for sure, column.
type Pos = (usize, Option<usize>);

/// A place inside a schema.
enum Place {
    /// The operator name (the start of the schema).
    Name,
    /// The argument with this index.
    Arg(usize),
    /// The returns.
    Returns,
}

struct Validator<'a> {
    file: &'a str,
    src: &'a SourceMap,
    diags: Vec<Diagnostic>,
}

/// Byte offsets (in the printed schema, which is the source text) where each
/// argument starts, following `Arguments`' `Display`.
fn arg_offsets(f: &FunctionSchema) -> Vec<usize> {
    let mut pos = f.name.to_string().len() + 1;
    let mut out = Vec::with_capacity(f.arguments.all.len());
    let mut first = true;
    for (i, a) in f.arguments.all.iter().enumerate() {
        if f.arguments.kwarg_only_start == Some(i) {
            pos += if first { 1 } else { 3 };
            first = false;
        }
        if !first {
            pos += 2;
        }
        out.push(pos);
        pos += a.to_string().len();
        first = false;
    }
    out
}

impl Validator<'_> {
    fn push(
        &mut self,
        nf: &NativeFunction,
        (line, col): Pos,
        msg: String,
        help: impl Into<String>,
    ) {
        let help: String = help.into();
        let mut d = Diagnostic::new(self.file, line, msg)
            .entry(nf.name())
            .maybe_column(col);
        d.help = (!help.is_empty()).then_some(help);
        self.diags.push(d);
    }

    /// Byte `at` of the schema text.
    fn at_schema(&self, nf: &NativeFunction, at: usize) -> Pos {
        let text = nf.func.to_string();
        let col = text.get(..at).map_or(1, |p| p.chars().count() + 1);
        self.src.schema_col(nf.line, &text, col)
    }

    /// The start of the schema (the operator name).
    fn at_func(&self, nf: &NativeFunction) -> Pos {
        self.at_schema(nf, 0)
    }

    /// The name of argument `i`.
    fn at_arg_name(&self, nf: &NativeFunction, i: usize) -> Pos {
        let a = &nf.func.arguments.all[i];
        let text = a.to_string();
        let decl = text.split('=').next().unwrap_or(&text);
        let name = decl.rfind(' ').map_or(0, |s| s + 1);
        self.at_schema(nf, arg_offsets(&nf.func)[i] + name)
    }

    /// The start of argument `i`.
    fn at_arg(&self, nf: &NativeFunction, i: usize) -> Pos {
        self.at_schema(nf, arg_offsets(&nf.func)[i])
    }

    /// The default value of argument `i`.
    fn at_default(&self, nf: &NativeFunction, i: usize) -> Pos {
        let text = nf.func.arguments.all[i].to_string();
        let eq = text.find('=').map_or(0, |e| e + 1);
        self.at_schema(nf, arg_offsets(&nf.func)[i] + eq)
    }

    /// The returns (after ` -> `).
    fn at_returns(&self, nf: &NativeFunction) -> Pos {
        let text = nf.func.to_string();
        self.at_schema(nf, text.rfind(") -> ").map_or(0, |a| a + 5))
    }

    /// The line of `key:` (no column: the whole key is at fault).
    fn at_key(&self, nf: &NativeFunction, key: &str) -> Pos {
        (self.src.key(nf.line, key), None)
    }

    fn at_value(&self, nf: &NativeFunction, key: &str) -> Pos {
        self.src.value(nf.line, key)
    }

    fn at_token(&self, nf: &NativeFunction, key: &str, token: &str) -> Pos {
        self.src.token(nf.line, key, token)
    }

    /// A key of a dispatch row.
    fn at_row_key(&self, row: &DispatchEntry, key: &str) -> Pos {
        (row.line, self.src.row_key_col(row.line, key))
    }

    /// The kernel of a dispatch row.
    fn at_row_kernel(&self, row: &DispatchEntry) -> Pos {
        (row.line, self.src.row_value_col(row.line))
    }

    fn entry(&mut self, nf: &NativeFunction, tags: Option<&[String]>) {
        let f = &nf.func;
        let kind = f.kind();
        if let Err(m) = check_invariants(f) {
            let (at, help) = self.invariant_place(nf, &m);
            self.push(nf, at, m, help);
        }
        self.check_arg_names(nf);
        for (i, a) in f.arguments.all.iter().enumerate() {
            self.check_default(nf, i, a);
            if PYTHON_KEYWORDS.contains(&a.name.as_str())
                && !KEYWORD_ARG_EXCEPTIONS.contains(&f.name.name.to_string().as_str())
            {
                let at = self.at_arg_name(nf, i);
                self.push(
                    nf,
                    at,
                    format!(
                        "Argument name '{}' in function '{}' is a reserved Python keyword.",
                        a.name, f.name
                    ),
                    format!("rename the argument (e.g. `{}_`)", a.name),
                );
            }
        }
        // Variants.
        if f.arguments.out_start().is_some() && nf.variants.method {
            let at = self.at_token(nf, "variants", "method");
            self.push(nf, at, "Native functions with out arguments MUST be declared with only function variant; e.g., variants: function; otherwise you will tickle a Python argument binding bug (which usually manifests itself as the result variable being undefined.)".into(), "write `variants: function` (or leave `variants:` out)");
        }
        if nf.python_module.is_some() && nf.variants.method {
            let at = self.at_token(nf, "variants", "method");
            self.push(
                nf,
                at,
                "functions in modules cannot be methods".into(),
                "drop `method` from `variants:`, or drop `python_module:`",
            );
        }
        self.check_dispatch(nf);
        // Structured and friends.
        if nf.structured && kind != SchemaKind::Out {
            let at = self.at_key(nf, "structured");
            let help = format!("`structured: True` goes on the out= overload (`{}.out`); other overloads point at it with `structured_delegate: {}.out`", f.name.name.base, f.name.name.base);
            self.push(nf, at, "Put structured field on the out= variant of a function; did you mean structured_delegate?".into(), help);
        }
        if nf.structured_delegate.is_some() && kind == SchemaKind::Out {
            let at = self.at_key(nf, "structured_delegate");
            self.push(
                nf,
                at,
                "structured_delegate field not allowed on out= functions; did you mean structured?"
                    .into(),
                "write `structured: True` on the out= overload instead",
            );
        }
        for key in ["structured_delegate", "structured_inherits"] {
            let value = if key == "structured_delegate" {
                &nf.structured_delegate
            } else {
                &nf.structured_inherits
            };
            if value.as_deref().is_some_and(|d| d.contains("::")) {
                let at = self.at_value(nf, key);
                let what = key.replace('_', " ");
                self.push(nf, at, format!("namespace is not supported in {what}, using the same namespace as the native function"), "drop the `ns::` prefix");
            }
        }
        if nf.structured_inherits.is_some() && !nf.structured {
            let at = self.at_key(nf, "structured_inherits");
            self.push(
                nf,
                at,
                "structured_inherits must also imply structured: True".into(),
                "add `structured: True`, or drop `structured_inherits:`",
            );
        }
        if !nf.precomputed.is_empty() && !nf.structured {
            let at = self.at_key(nf, "precomputed");
            self.push(
                nf,
                at,
                format!(
                    "precomputed requires structured=True, got structured={}",
                    py_bool(nf.structured)
                ),
                "add `structured: True` (precomputed values are computed by the structured meta function)",
            );
        }
        if !nf.ufunc_inner_loop.is_empty() {
            if !nf.structured {
                let at = self.at_key(nf, "ufunc_inner_loop");
                self.push(
                    nf,
                    at,
                    "ufunc must be structured".into(),
                    "add `structured: True`",
                );
            }
            for row in &nf.dispatch {
                for key in row
                    .keys
                    .iter()
                    .filter(|k| ["CPU", "CUDA"].contains(&k.as_str()))
                {
                    let at = self.at_row_key(row, key);
                    self.push(
                        nf,
                        at,
                        format!("ufunc should not have explicit dispatch entry for {key}"),
                        "the ufunc_inner_loop generates the CPU and CUDA kernels; drop this row",
                    );
                }
            }
        }
        if (nf.structured_delegate.is_some() || nf.structured) && !nf.device_guard {
            let at = self.at_key(nf, "device_guard");
            self.push(
                nf,
                at,
                "device_guard: False is not respected by structured kernels".into(),
                "drop `device_guard: False`",
            );
        }
        if let Some(dc) = &nf.device_check {
            if dc != "NoCheck" && dc != "ExactSame" {
                let at = self.at_value(nf, "device_check");
                let help = match nearest(dc, ["NoCheck", "ExactSame"].into_iter()) {
                    Some(n) => format!("did you mean `{n}`?"),
                    None => "use `NoCheck` or `ExactSame` (the default)".into(),
                };
                self.push(nf, at, format!("illegal device_check: {dc}"), help);
            }
        }
        if f.name.unqualified().starts_with("_foreach")
            && nf.device_check.as_deref() != Some("NoCheck")
        {
            let at = match nf.device_check {
                Some(_) => self.at_value(nf, "device_check"),
                None => self.at_func(nf),
            };
            self.push(nf, at, "foreach kernels fall back to slow path when tensor are on different devices, device_check not allowed to be enabled".into(), "add `device_check: NoCheck`");
        }
        if let Some(m) = &nf.python_module {
            const MODULES: [&str; 6] = ["nn", "special", "linalg", "fft", "sparse", "nested"];
            if !MODULES.contains(&m.as_str()) {
                let at = self.at_value(nf, "python_module");
                self.push(
                    nf,
                    at,
                    format!("unknown python_module {m}"),
                    format!("use one of {}", MODULES.join(", ")),
                );
            }
        }
        if let Some(c) = &nf.category_override {
            const CATEGORIES: [&str; 4] = ["factory", "dummy", "new", "like"];
            if !CATEGORIES.contains(&c.as_str()) {
                let at = self.at_value(nf, "category_override");
                self.push(
                    nf,
                    at,
                    format!("unknown category_override {c}"),
                    format!("use one of {}", CATEGORIES.join(", ")),
                );
            }
        }
        let bad_no_default: Vec<&str> = nf
            .cpp_no_default_args
            .iter()
            .filter(|n| f.arguments.get(n).is_none_or(|a| a.default.is_none()))
            .map(String::as_str)
            .collect();
        if let Some(first) = bad_no_default.first() {
            let at = self.at_token(nf, "cpp_no_default_args", first);
            let set: Vec<String> = bad_no_default.iter().map(|n| format!("'{n}'")).collect();
            let help = match f.arguments.get(first) {
                Some(a) => format!("`{}` has no default in the schema; list only arguments written `Type name=default`", a.name),
                None => {
                    let defaulted = f.arguments.all.iter().filter(|a| a.default.is_some()).map(|a| a.name.as_str());
                    match nearest(first, defaulted) {
                        Some(n) => format!("`{first}` is not an argument; did you mean `{n}`?"),
                        None => format!("`{first}` is not an argument; list only arguments that have a default"),
                    }
                }
            };
            self.push(
                nf,
                at,
                format!("Invalid cpp_no_default_args: {{{}}}", set.join(", ")),
                help,
            );
        }
        if nf.use_const_ref_for_mutable_tensors && f.arguments.out_start().is_some() {
            let at = self.at_key(nf, "use_const_ref_for_mutable_tensors");
            self.push(nf, at, "use_const_ref_for_mutable_tensors is not allowed on out= functions (see https://github.com/pytorch/pytorch/issues/145522)".into(), "drop `use_const_ref_for_mutable_tensors:`");
        }
        // Tags.
        if let Some(known) = tags {
            for t in &nf.tags {
                if !known.iter().any(|k| k == t) {
                    let at = self.at_token(nf, "tags", t);
                    let help = if t.contains(',') {
                        format!("a string is one tag; write several as a list: `tags: [{t}]`")
                    } else {
                        match nearest(t, known.iter().map(String::as_str)) {
                            Some(n) => {
                                format!("did you mean `{n}`? (tags are declared in tags.yaml)")
                            }
                            None => "tags are declared in tags.yaml beside the schema file".into(),
                        }
                    };
                    self.push(nf, at, format!("illegal tag {t}"), help);
                }
            }
        }
        if !nf.has_tag("nondeterministic_seeded") && f.name.namespace() == "aten" {
            // torchgen looks at `name.overload`, not just the base name.
            let name = f.name.unqualified();
            let dropout = (name.contains("dropout")
                || f.arguments.all.iter().any(|a| a.name.contains("dropout")))
                && !name.contains("backward")
                && f.name.name.to_string() != "_cudnn_init_dropout_state";
            let seeded = (name.contains("rand") && !name.contains("_philox_"))
                || dropout
                || f.arguments
                    .non_out()
                    .iter()
                    .any(|a| a.ty.strip_optional().is_base(BaseType::Generator));
            if seeded {
                let (at, help) = if nf.tags.is_empty() {
                    (self.at_func(nf), "add `tags: nondeterministic_seeded`")
                } else {
                    (
                        self.at_key(nf, "tags"),
                        "add `nondeterministic_seeded` to `tags:`",
                    )
                };
                self.push(
                    nf,
                    at,
                    format!(
                        "nondeterministic_seeded tag missing for {}",
                        f.name.unqualified()
                    ),
                    help,
                );
            }
        }
    }

    /// Where a violated schema invariant is, and how to fix it (keyed on the
    /// torchgen-worded message from `check_invariants`).
    fn invariant_place(&self, nf: &NativeFunction, m: &str) -> (Pos, &'static str) {
        let args = &nf.func.arguments;
        // The first argument matching `pred`, or the operator name.
        let arg = |pred: &dyn Fn(usize, &Argument) -> bool| {
            let i = args.all.iter().enumerate().position(|(i, a)| pred(i, a));
            i.map_or(Place::Name, Place::Arg)
        };
        let self_index = args.self_index();
        let post_self = self_index.map_or(0, |s| s + 1);
        let positional = args.kwarg_only_start.unwrap_or(args.all.len());
        let (place, help) = if let Some(rest) = m.strip_prefix("non-mutable argument '") {
            let name = rest.split('\'').next().unwrap_or("");
            (
                arg(&|_, a| a.name == name),
                "every keyword-only argument after the first out argument must be written (`Tensor(b!) name`); move the other keyword-only arguments before the out arguments",
            )
        } else if m.starts_with("mutable pre_self_positional") {
            (
                arg(&|i, a| Some(i) < self_index && a.is_write()),
                "put `self` first, or do not write arguments that come before it",
            )
        } else if m.starts_with("tensor options arguments can only appear once") {
            (
                Place::Name,
                "`dtype, layout, device, pin_memory` may appear only once",
            )
        } else if m.starts_with("A schema cannot be both out= and inplace") {
            (
                Place::Name,
                "an out= overload's name has no trailing `_`: `foo.out(...)`",
            )
        } else if m.contains("its overload contains the string 'functional'") {
            (Place::Name, "rename the overload: only functional operators may have `functional` in their overload name")
        } else if m.starts_with("If you have a schema with mutable positional args") {
            (
                arg(&|i, a| i >= post_self && i < positional && a.is_write()),
                "out arguments go after `*`, which makes them keyword-only: `foo.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)`",
            )
        } else if m.starts_with("Out arguments must have matching return") {
            (Place::Returns, "return the out arguments in order, each with its argument's annotation: `(..., *, Tensor(a!) out) -> Tensor(a!)`")
        } else if m.starts_with("NativeFunctions must have either only mutable returns") {
            (Place::Returns, "return either only written arguments (`Tensor(a!)`) or only new tensors (`Tensor`)")
        } else if m.starts_with("All mutable returns must be aliased") {
            (Place::Returns, "put `*` before the out arguments, and give each mutable return the annotation of the argument it returns")
        } else if m.starts_with("out= ops that accept tensor lists")
            || m.contains("with non-Tensor self must have no returns")
        {
            (Place::Returns, "write `-> ()`")
        } else if m.starts_with("Must return as many arguments") {
            (
                Place::Returns,
                "return every out argument, in order, or write `-> ()`",
            )
        } else if m.contains("must have a self argument with a mutable annotation") {
            (
                self_index.map_or(Place::Name, Place::Arg),
                "an inplace operator `foo_` takes `Tensor(a!) self` and returns `Tensor(a!)`; without the trailing `_` it is not inplace",
            )
        } else if m.contains("with Tensor self must return self") {
            (
                Place::Returns,
                "return `self` with its annotation: `-> Tensor(a!)`",
            )
        } else if m.contains("but has tensor options arguments") {
            (
                arg(&|_, a| a.name == "dtype"),
                "only functional and out= operators (factories) take `dtype, layout, device, pin_memory`",
            )
        } else {
            (Place::Name, "")
        };
        let at = match place {
            Place::Name => self.at_func(nf),
            Place::Arg(i) => self.at_arg(nf, i),
            Place::Returns => self.at_returns(nf),
        };
        (at, help)
    }

    /// The Rust names the generator derives from an operator, its identifier
    /// `ident` and the convenience name of its base, can be emitted: not `_`,
    /// not a name the generated code uses. Rust keywords are fine: they get a
    /// trailing `_` ([`crate::names`]).
    fn check_op_ident(&mut self, nf: &NativeFunction, ident: &str) {
        let name = &nf.func.name.name;
        // The convenience name of a functional (or out=, mutable) overload may be
        // its bare base name; an in-place one's always ends in `_`, a dunder's is
        // `__x__`, a `_functional` one's ends so.
        let bare = !name.inplace && !name.dunder && !name.functional_overload;
        let why = unusable(ident).or_else(|| bare.then(|| unusable(&name.base)).flatten());
        if let Some(why) = why {
            let at = self.at_func(nf);
            let shown = if ident == "_" { ident } else { &name.base };
            self.push(
                nf,
                at,
                format!("operator name `{shown}` {why}"),
                "rename the operator: its name becomes a Rust function, type alias and enum variant",
            );
        }
    }

    /// Every argument's Rust name can be emitted, and no two are the same.
    fn check_arg_names(&mut self, nf: &NativeFunction) {
        let f = &nf.func;
        let args = &f.arguments.all;
        for (i, a) in args.iter().enumerate() {
            // No name the generated code uses is a keyword: the argument's Rust
            // name is taken exactly when its name is.
            if let Some(why) = unusable(&a.name) {
                let at = self.at_arg_name(nf, i);
                self.push(
                    nf,
                    at,
                    format!("argument name `{}` {why}", a.name),
                    "rename the argument: its name becomes a Rust parameter",
                );
            } else if is_rust_keyword(&a.name) {
                // Names are unique, so only an escaped keyword can meet another
                // argument's name: `type` becomes `type_`.
                let ident = arg_ident(&a.name);
                if let Some(j) = args.iter().position(|b| b.name == ident) {
                    let (first, second) = (i.min(j), i.max(j));
                    let at = self.at_arg_name(nf, second);
                    self.push(
                        nf,
                        at,
                        format!(
                            "arguments `{}` and `{}` have the same Rust name `{ident}`",
                            args[first].name, args[second].name
                        ),
                        "rename one of them (a Rust keyword such as `self` or `type` gets a trailing `_`)",
                    );
                }
            }
        }
    }

    fn check_default(&mut self, nf: &NativeFunction, i: usize, a: &Argument) {
        let Some(d) = &a.default else { return };
        if default_fits(&a.ty, d.value.as_ref()) {
            return;
        }
        let at = self.at_default(nf, i);
        let msg = match d.value {
            Some(_) => format!(
                "default `{}` does not fit type `{}` of argument `{}`",
                abbrev(&d.text),
                a.ty,
                a.name
            ),
            None => format!(
                "default `{}` of argument `{}` is not a literal",
                abbrev(&d.text),
                a.name
            ),
        };
        self.push(nf, at, msg, default_help(&a.ty, d));
    }

    fn check_dispatch(&mut self, nf: &NativeFunction) {
        if nf.manual_kernel_registration && nf.has_dispatch {
            let at = self.at_key(nf, "manual_kernel_registration");
            self.push(nf, at, "cannot specify both manual_kernel_registration and dispatch; with manual registration, dispatch has no effect!".into(), "drop `dispatch:`, or drop `manual_kernel_registration: True`");
        }
        let mut seen: HashMap<&str, usize> = HashMap::new();
        let mut composites: Vec<&str> = Vec::new();
        let mut num_keys = 0;
        for row in &nf.dispatch {
            for key in &row.keys {
                num_keys += 1;
                if key.is_empty() {
                    self.push(
                        nf,
                        (row.line, None),
                        "empty dispatch key".into(),
                        "several keys share a kernel as `KEY, KEY: kernel`; remove the stray `,`",
                    );
                    continue;
                }
                if let Some(prev) = seen.insert(key, row.line) {
                    let at = self.at_row_key(row, key);
                    self.push(
                        nf,
                        at,
                        format!("dispatch key {key} appears twice (also at line {prev})"),
                        "give each dispatch key one kernel",
                    );
                }
                let is_composite = COMPOSITE_KEYS.contains(&key.as_str())
                    || key == "CompositeImplicitAutogradNestedTensor";
                if is_composite && !composites.contains(&key.as_str()) {
                    composites.push(key.as_str());
                    // torchgen allows a second composite key only when it is
                    // CompositeImplicitAutogradNestedTensor (and neither is
                    // CompositeExplicitAutogradNonFunctional).
                    let allowed = composites.len() == 1
                        || (composites.len() == 2
                            && composites.contains(&"CompositeImplicitAutogradNestedTensor")
                            && !composites.contains(&"CompositeExplicitAutogradNonFunctional"));
                    if !allowed {
                        let at = self.at_row_key(row, key);
                        self.push(nf, at, "cannot specify more than one of CompositeExplicitAutograd, CompositeExplicitAutogradNonFunctional, or CompositeImplicitAutograd on a single kernel; each strictly subsumes the other.  If you wanted to provide an explicit autograd implementation, specify CompositeExplicitAutograd; otherwise specify CompositeImplicitAutograd only".into(), format!("keep one composite key (this entry has {})", composites.join(", ")));
                    }
                }
                if !SUPPORTED_DISPATCH_KEYS.contains(&key.as_str()) {
                    let at = self.at_row_key(row, key);
                    let (msg, help) = if UNSUPPORTED_DISPATCH_KEYS.contains(&key.as_str()) {
                        let help = if key.starts_with("Autograd") {
                            "autograd kernels are not declared in `dispatch:`; use CompositeImplicitAutograd (autograd differentiates through the kernel) or CompositeExplicitAutograd with a derivative formula".to_string()
                        } else {
                            format!("kernels for {key} are registered by hand, not through `dispatch:`, which takes backend keys (CPU, CUDA, Meta, ...) and composite keys")
                        };
                        (
                            format!(
                                "Dispatch key {key} of kernel {} is not a supported dispatch key.",
                                row.kernel
                            ),
                            help,
                        )
                    } else {
                        let help = match nearest(key, SUPPORTED_DISPATCH_KEYS.iter().copied()) {
                            Some(n) => format!("did you mean `{n}`?"),
                            None => {
                                format!("supported keys: {}", SUPPORTED_DISPATCH_KEYS.join(", "))
                            }
                        };
                        (format!("unknown dispatch key {key}"), help)
                    };
                    self.push(nf, at, msg, help);
                }
                if nf.structured_delegate.is_some()
                    && ["CPU", "CUDA", "MPS", "XPU", "MTIA"].contains(&key.as_str())
                {
                    let at = self.at_row_key(row, key);
                    self.push(nf, at, format!("if structured_delegate, then must not have {key} in dispatch dictionary (it is delegated!)"), "drop this row: the delegate's kernel is used");
                }
            }
            if !is_rust_path(&row.kernel) {
                let at = self.at_row_kernel(row);
                let fixed = row
                    .kernel
                    .trim()
                    .split("::")
                    .map(|s| s.replace(':', "::"))
                    .collect::<Vec<_>>()
                    .join("::");
                let help = if fixed != row.kernel && is_rust_path(&fixed) {
                    format!("did you mean `{fixed}`?")
                } else {
                    "write identifiers separated by `::`, e.g. `cpu::add_Tensor`".into()
                };
                self.push(
                    nf,
                    at,
                    format!("kernel name `{}` is not a Rust path", row.kernel),
                    help,
                );
            }
        }
        let cpp_name = cpp_name(&nf.func);
        if let [row] = nf.dispatch.as_slice() {
            if num_keys == 1 && row.keys == ["CompositeImplicitAutograd"] {
                let at = self.at_row_kernel(row);
                if row.kernel == cpp_name {
                    self.push(nf, at, "unnecessary dispatch table for this function; just delete the dispatch key entirely".into(), format!("`CompositeImplicitAutograd: {cpp_name}` is what an entry without `dispatch:` gets"));
                } else if nf.structured_delegate.is_none() && !row.kernel.contains("_symint") {
                    self.push(nf, at, format!("unexpected name for singleton CompositeImplicitAutograd dispatch entry: expected {cpp_name} but got {}.  Rename your implementation to the expected name, then delete the dispatch table", row.kernel), format!("an entry without `dispatch:` is CompositeImplicitAutograd with kernel `{cpp_name}`"));
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
                let at = self.at_func(nf);
                self.push(nf, at, format!("expected {name} to have a CompositeExplicitAutograd dispatch entry, but there was no dispatch table.  Factory functions should not have implicit dispatch as they should not be decomposed for __torch_dispatch__"), "add `dispatch:` with a row `CompositeExplicitAutograd: <kernel>` (or backend rows such as `CPU: <kernel>`)");
            }
        }
    }

    fn cross_entry(&mut self, file: &SchemaFile) {
        let by_name: HashMap<String, &NativeFunction> =
            file.entries.iter().map(|e| (e.name(), e)).collect();
        for nf in &file.entries {
            // (An out= entry with a delegate is reported already.)
            let delegate = nf
                .structured_delegate
                .as_deref()
                .filter(|d| !d.contains("::") && nf.func.kind() != SchemaKind::Out);
            if let Some(d) = delegate {
                let at = self.at_value(nf, "structured_delegate");
                match by_name.get(d) {
                    None => {
                        let structured = file
                            .entries
                            .iter()
                            .filter(|e| e.structured)
                            .map(|e| e.name());
                        let structured: Vec<String> = structured.collect();
                        let help = match nearest(d, structured.iter().map(String::as_str))
                            .or_else(|| nearest(d, by_name.keys().map(String::as_str)))
                        {
                            Some(n) => format!("did you mean `{n}`?"),
                            None => "name an out= operator of this file that is marked `structured: True`".into(),
                        };
                        self.push(nf, at, format!("{} is marked as a structured_delegate pointing to {d}, but {d} is missing.", nf.func.name.unqualified()), help);
                    }
                    Some(t) if !t.structured => {
                        let help = format!("add `structured: True` to `{d}` (line {})", t.line);
                        self.push(nf, at, format!("{} is marked as a structured_delegate pointing to {d}, but {d} is not marked as structured. Consider adding 'structured=True' to the delegated operator", nf.func.name.unqualified()), help);
                    }
                    _ => {}
                }
            }
            // torchgen exempts resize_, resize_as_ and set_ (see its Note [resize_ in
            // Functionalization]).
            let name = nf.func.name.unqualified();
            let base = &nf.func.name.name;
            let exempt = name == "resize_" || name == "resize_as_" || base.to_string() == "set_";
            if nf.has_tag("inplace_view") && !exempt {
                let at = self.at_token(nf, "tags", "inplace_view");
                let out_of_place = BaseName {
                    base: base.base.clone(),
                    inplace: false,
                    dunder: base.dunder,
                    functional_overload: false,
                };
                if !base.inplace {
                    self.push(
                        nf,
                        at,
                        format!("{name} is marked with tag: inplace_view, but it doesn't follow the naming convention for inplace ops - the codegen expects the base name to have a trailing underscore."),
                        "inplace_view is for inplace operators (`foo_`) that change only their `self`'s metadata; rename the operator or drop the tag",
                    );
                } else if !file
                    .entries
                    .iter()
                    .any(|e| e.func.name.name == out_of_place)
                {
                    self.push(
                        nf,
                        at,
                        format!("{name} is marked with tag: inplace_view. The codegen expects there to be a corresponding out-of-place view op with the name '{base}' and matching schema, but it didn't find one."),
                        format!("add the out-of-place view operator `{out_of_place}`, or drop the tag"),
                    );
                }
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

/// True if `s` is `ident(::ident)*`. Rust keywords are allowed (they are written
/// as raw identifiers when emitted), except those that cannot be raw and would
/// be read as path keywords: `self`, `Self`, `super`, `crate` (and `_`).
pub fn is_rust_path(s: &str) -> bool {
    s.split("::").all(|seg| {
        crate::schema::is_ident(seg) && !matches!(seg, "_" | "self" | "Self" | "super" | "crate")
    })
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
        D::Enum(e) => enum_names(b).contains(&e.as_str()),
    }
}

fn default_help(ty: &Type, d: &Default) -> String {
    let nested = d.text.strip_prefix('[').is_some_and(|t| t.contains('['));
    if d.value.is_none() && nested {
        return "a list default holds numbers or bools, not lists: write a flat list such as `[0,1]`".into();
    }
    if matches!(d.value, Some(DefaultValue::None)) && !ty.is_nullable() {
        return format!("only optional types default to `None`: write `{ty}?`");
    }
    let t = ty.strip_optional();
    if let (Some(DefaultValue::Enum(e)), Type::Base(b)) = (&d.value, t) {
        if let Some(n) = nearest(e, enum_names(*b).into_iter()) {
            return format!("did you mean `{n}`?");
        }
    }
    let s = match t {
        Type::List { size: Some(_), .. } => {
            "a list literal without spaces (`[0,1]`) or one number for every element"
        }
        Type::List { .. } => {
            "a list literal without spaces, e.g. `[]` or `[0,1]` (one number fits only a sized list such as `int[2]`)"
        }
        Type::Base(BaseType::Bool) => "`True` or `False`",
        Type::Base(BaseType::Int) => "an integer (or `Mean`/`Sum` for a reduction)",
        Type::Base(BaseType::SymInt | BaseType::DeviceIndex) => "an integer",
        Type::Base(BaseType::Float) => "a number such as `1.0` or `1e-05`",
        Type::Base(BaseType::Scalar) => "a number",
        Type::Base(BaseType::Str) => "a quoted string, e.g. `'none'`",
        Type::Base(BaseType::ScalarType) => "a dtype name such as `long` or `float32`",
        Type::Base(BaseType::MemoryFormat) => "a memory format such as `contiguous_format`",
        Type::Base(BaseType::Layout) => "a layout such as `strided`",
        _ if ty.is_nullable() => return format!("`None` is the only default for `{ty}`"),
        _ => {
            return format!(
                "`{ty}` arguments cannot have a default; make the type `{ty}?` to default it to `None`"
            )
        }
    };
    let none = if ty.is_nullable() { ", or `None`" } else { "" };
    format!("a default for `{ty}` is {s}{none}")
}

/// The names an enum-like default may use for base type `b` (`ScalarType`s
/// from [`ScalarType::default_names`], the others from [`crate::enums`]).
fn enum_names(b: BaseType) -> Vec<&'static str> {
    let names = |kind| enums::of(kind).map(|v| v.name);
    match b {
        BaseType::ScalarType => ScalarType::default_names().collect(),
        BaseType::MemoryFormat => names(EnumKind::MemoryFormat).collect(),
        BaseType::Layout => names(EnumKind::Layout).collect(),
        // `int reduction=None` would be a null default: only the others.
        BaseType::Int => names(EnumKind::Reduction)
            .filter(|n| *n != "None")
            .collect(),
        _ => Vec::new(),
    }
}
