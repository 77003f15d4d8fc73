//! Parse and resolve: PyTorch's `derivatives.yaml` → [`DerivativesFile`]
//! ([`load_str`]), and its entries matched to the operators of a schema file
//! ([`resolve`]) by torchgen's rules (`tools/autograd/load_derivatives.py`,
//! `gen_variable_type.py`'s `match_differentiability_info`).
//!
//! The file is a list of entries. Each names an operator by its schema, written
//! exactly as the operator file writes it (`name: abs(Tensor self) -> Tensor`),
//! and maps names to formulas: a key naming arguments (`self`, or several at once:
//! `self, other`) holds their backward formula, a key naming outputs (`result`,
//! `result0`, a named return such as `L`) their forward formula. Besides formulas
//! an entry may have `output_differentiability:` (one `True`/`False` per output)
//! and `dispatch:`, the formulas per autograd dispatch key (`Default`,
//! `AutogradNestedTensor`, …); an entry without `dispatch:` has one set of
//! formulas under `Default`, as torchgen reads it. The formulas stay text here
//! (another component parses them); only the values that are not expressions
//! (`non_differentiable`, `auto_element_wise`, `auto_linear`, a lone
//! `not_implemented(...)`) are told apart.
//!
//! Loading checks the file's shape (every problem, with `file:line:col`);
//! resolution checks what needs the operator: that the schema names one, that
//! every key names its arguments or outputs, once, that `output_differentiability`
//! has one flag per output, and torchgen's rules for `auto_element_wise` and
//! `auto_linear`. Positions are recovered with the loader's
//! [`SourceMap`](crate::load::SourceMap).

use crate::diag::{nearest, Diagnostic, Diagnostics};
use crate::load::{describe, schema_help, schema_label, top_level_list, EntryCx, SchemaFile};
use crate::model::{FunctionSchema, NativeFunction, SchemaKind};
use crate::schema::parse_schema;
use serde_yaml::Value;
use std::collections::{BTreeMap, HashMap};

/// The dispatch keys a `dispatch:` table of a derivatives entry may name:
/// `Default` (the `Autograd` alias) and torchgen's `AUTOGRAD_KEYS`
/// (`AutogradNestedTensor` and `Autograd` + each backend component).
pub const DISPATCH_KEYS: &[&str] = &[
    "Default",
    "AutogradNestedTensor",
    "AutogradCPU",
    "AutogradCUDA",
    "AutogradHIP",
    "AutogradXLA",
    "AutogradMTIA",
    "AutogradMPS",
    "AutogradIPU",
    "AutogradXPU",
    "AutogradHPU",
    "AutogradVE",
    "AutogradLazy",
    "AutogradMeta",
    "AutogradPrivateUse1",
    "AutogradPrivateUse2",
    "AutogradPrivateUse3",
];

/// The keys of an entry that are not formulas.
pub const ENTRY_KEYS: &[&str] = &["name", "dispatch", "output_differentiability"];

/// The arguments of a TensorOptions group, which torchgen's C++ signature (the
/// names formulas are keyed by) passes as one argument, `options`.
const TENSOR_OPTIONS: [&str; 4] = ["dtype", "layout", "device", "pin_memory"];

/// How an entry starts, for help lines.
const ENTRY_HELP: &str =
    "each entry is a mapping that starts with its operator's schema: `- name: neg(Tensor self) -> Tensor`";

/// What an entry holds, for help lines.
const KEYS_HELP: &str = "an entry has `name:`, `dispatch:`, `output_differentiability:` and formulas keyed by argument or output names";

/// How `dispatch:` is written, for help lines.
const DISPATCH_HELP: &str = "write `dispatch:` and under it `Default:` (and e.g. `AutogradNestedTensor:`), each with its formulas indented under it";

/// How `output_differentiability:` is written, for help lines.
const OUTPUTS_HELP: &str = "write one flag per output (`[True, False]`) or, for an operator with one output, one condition (`[\"!dtype || isDifferentiableType(*dtype)\"]`)";

/// What a formula's value is, for help lines.
const FORMULA_HELP: &str = "write a C++ expression (`grad * self.sgn()`) or `non_differentiable` for arguments, an expression, `auto_element_wise` or `auto_linear` for outputs";

// ─── Model ──────────────────────────────────────────────────────────────────────────

/// A loaded derivatives file.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DerivativesFile {
    /// The file name used in diagnostics.
    pub file: String,
    /// The entries in file order.
    pub entries: Vec<DerivativeEntry>,
}

/// One entry: the derivatives of one operator.
#[derive(Clone, Debug, PartialEq)]
pub struct DerivativeEntry {
    /// The line where the entry starts.
    pub line: usize,
    /// `name:` as written: the operator's schema, which resolution looks up
    /// character for character.
    pub name: String,
    /// `name:` parsed.
    pub schema: FunctionSchema,
    /// The formulas per dispatch key, in file order: those under `dispatch:`, or
    /// (without it) the entry's own under `Default`.
    pub dispatch: Vec<DispatchFormulas>,
    /// Whether `dispatch:` was written.
    pub has_dispatch: bool,
    /// `output_differentiability:`, if written.
    pub output_differentiability: Option<OutputDifferentiability>,
}

impl DerivativeEntry {
    /// `name.overload` (or `name`), the key the entry is known by in diagnostics.
    pub fn label(&self) -> String {
        self.schema.name.unqualified()
    }

    /// The formulas for dispatch key `key` (`Default`, `AutogradNestedTensor`, …).
    pub fn formulas(&self, key: &str) -> Option<&[Formula]> {
        self.dispatch
            .iter()
            .find(|d| d.key == key)
            .map(|d| d.formulas.as_slice())
    }
}

/// The formulas of one dispatch key.
#[derive(Clone, Debug, PartialEq)]
pub struct DispatchFormulas {
    /// `Default` or one of torchgen's autograd keys ([`DISPATCH_KEYS`]).
    pub key: String,
    /// The line of the key under `dispatch:` (the entry's line without `dispatch:`).
    pub line: usize,
    /// The formulas, in file order.
    pub formulas: Vec<Formula>,
}

/// One formula: a key and its value.
#[derive(Clone, Debug, PartialEq)]
pub struct Formula {
    /// The names of the key, split at `,` and trimmed (`self, other` gives two).
    pub names: Vec<String>,
    /// The value as written.
    pub text: String,
    /// What kind of value it is.
    pub body: Body,
    /// Backward (keyed by arguments) or forward (keyed by outputs).
    pub direction: Direction,
    /// The line of the key.
    pub line: usize,
    /// The column of the key, when known.
    pub column: Option<usize>,
}

/// Which way a formula goes. torchgen decides by the key's first name: a formula
/// is forward when that name is not an argument of the operator's C++ signature
/// (where a TensorOptions group is one argument, `options`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Direction {
    /// A vector-Jacobian product for the named arguments, in terms of `grad`
    /// (`grads[i]`, `grad_<output>`), the arguments and `result`.
    Backward,
    /// A Jacobian-vector product for the named outputs, in terms of `<arg>_p`
    /// (primal), `<arg>_t` (tangent) and `result`.
    Forward,
}

/// What a formula's value is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Body {
    /// An expression.
    Expr,
    /// `non_differentiable` (any case, as torchgen compares it): the arguments get
    /// no gradient, and are trusted never to require one.
    NonDifferentiable,
    /// The value is one call of `not_implemented(...)` or
    /// `not_implemented_list(...)`: the gradient raises when asked for. (torchgen
    /// treats it as any expression.)
    NotImplemented,
    /// `auto_element_wise` (forward only): derived from the backward formula of the
    /// single differentiable argument.
    AutoElementWise,
    /// `auto_linear` (forward only): the operator applied to the tangents.
    AutoLinear,
}

impl Body {
    /// Classifies a formula's text.
    pub fn of(text: &str) -> Body {
        let t = text.trim();
        if t.eq_ignore_ascii_case("non_differentiable") {
            Body::NonDifferentiable
        } else if text == "auto_element_wise" {
            Body::AutoElementWise
        } else if text == "auto_linear" {
            Body::AutoLinear
        } else if ["not_implemented(", "not_implemented_list("]
            .iter()
            .any(|p| t.starts_with(p) && closes_at_end(t))
        {
            Body::NotImplemented
        } else {
            Body::Expr
        }
    }
}

/// True if the first `(` of `t` is closed by its last character (parentheses
/// inside string literals not counted).
fn closes_at_end(t: &str) -> bool {
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for (i, c) in t.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' if in_string => escaped = true,
            '"' => in_string = !in_string,
            '(' if !in_string => depth += 1,
            ')' if !in_string => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return i + 1 == t.len();
                }
            }
            _ => {}
        }
    }
    false
}

/// `output_differentiability:`.
#[derive(Clone, Debug, PartialEq)]
pub struct OutputDifferentiability {
    /// What was written.
    pub value: Differentiability,
    /// The line of the key.
    pub line: usize,
    /// The column of the key, when known.
    pub column: Option<usize>,
}

/// The value of `output_differentiability:`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Differentiability {
    /// One flag per output.
    Flags(Vec<bool>),
    /// A C++ condition under which the single output is differentiable
    /// (`["!dtype || isDifferentiableType(*dtype)"]`).
    Condition(String),
}

/// The names formulas may be keyed by for arguments: the schema's arguments, with
/// a TensorOptions group as one argument `options` (torchgen's C++ signature).
pub fn argument_names(f: &FunctionSchema) -> Vec<&str> {
    let group = f.arguments.tensor_options_start();
    let mut names = Vec::with_capacity(f.arguments.all.len());
    for (i, a) in f.arguments.all.iter().enumerate() {
        match group {
            Some(g) if i == g => names.push("options"),
            Some(g) if i > g && i < g + TENSOR_OPTIONS.len() => {}
            _ => names.push(a.name.as_str()),
        }
    }
    names
}

/// The names formulas may be keyed by for outputs: the named returns, `result`
/// for a single return, and `result0`, `result1`, … by position.
pub fn output_names(f: &FunctionSchema) -> Vec<String> {
    let mut names: Vec<String> = f.returns.iter().filter_map(|r| r.name.clone()).collect();
    if f.returns.len() == 1 {
        names.push("result".into());
    }
    names.extend((0..f.returns.len()).map(|i| format!("result{i}")));
    names
}

// ─── Load ───────────────────────────────────────────────────────────────────────────

/// Reads `path` (at most [`crate::yaml::MAX_FILE_BYTES`]) and loads it. I/O
/// errors become a diagnostic at line 0.
pub fn load_file(path: &std::path::Path) -> Result<DerivativesFile, Diagnostics> {
    let file = path.display().to_string();
    let src = crate::yaml::read(path).map_err(|d| Diagnostics(vec![d]))?;
    load_str(&file, &src)
}

/// Loads derivatives-file text. `file` names it in diagnostics. All problems found
/// in all entries are returned together, ordered by position.
pub fn load_str(file: &str, src: &str) -> Result<DerivativesFile, Diagnostics> {
    let (items, source) = top_level_list(
        file,
        src,
        "derivative entries",
        "the file is a list: start every entry with `- `, e.g. `- name: neg(Tensor self) -> Tensor`",
    )?;
    let mut entries = Vec::with_capacity(items.len());
    let mut diags = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let cx = EntryCx {
            file,
            src: &source,
            line: source.entry_line(i).unwrap_or(1),
            name: None,
        };
        match load_entry(cx, item) {
            Ok(e) => entries.push(e),
            Err(mut ds) => diags.append(&mut ds),
        }
    }
    collected(&mut diags)?;
    Ok(DerivativesFile {
        file: file.to_string(),
        entries,
    })
}

/// The position of the top-level `key:` of the entry.
fn key_pos(cx: &EntryCx<'_>, key: &str) -> (usize, Option<usize>) {
    cx.src.key_pos(cx.line, key)
}

/// The position of `key:` nested under the key at `parent` (the parent's
/// position when it cannot be found).
fn child_pos(
    cx: &EntryCx<'_>,
    parent: (usize, Option<usize>),
    key: &str,
) -> (usize, Option<usize>) {
    match cx.src.child_key(parent.0, key) {
        Some((l, c)) => (l, Some(c)),
        None => parent,
    }
}

fn load_entry(mut cx: EntryCx<'_>, item: &Value) -> Result<DerivativeEntry, Vec<Diagnostic>> {
    let line = cx.line;
    let Value::Mapping(map) = item else {
        return Err(vec![cx
            .at(
                (line, None),
                format!(
                    "expected an entry mapping (`- name: ...`), found {}",
                    describe(item)
                ),
            )
            .help(ENTRY_HELP)]);
    };
    // The schema first, so that every other diagnostic can name the entry.
    let name = match map.get("name") {
        None => {
            let keys: Vec<&str> = map.keys().filter_map(Value::as_str).collect();
            let found = if keys.is_empty() {
                String::new()
            } else {
                format!(" (found {})", keys.join(", "))
            };
            return Err(vec![cx
                .at((line, None), format!("missing `name:` key{found}"))
                .help(ENTRY_HELP)]);
        }
        Some(Value::String(s)) if !s.trim().is_empty() => s,
        Some(v) => {
            let found = match v {
                Value::String(_) => "`name:` is empty".to_string(),
                _ => format!("`name:` must be a schema string, found {}", describe(v)),
            };
            return Err(vec![cx
                .at(cx.src.value(line, "name"), found)
                .help(ENTRY_HELP)]);
        }
    };
    cx.name = schema_label(name);
    let mut diags = Vec::new();
    let schema = match parse_schema(name) {
        Ok(f) => Some(f),
        Err(e) => {
            let pos = cx.src.value_col(line, "name", name, e.column);
            diags.push(
                cx.at(pos, format!("malformed schema: {}", e.message))
                    .help(schema_help(&e.message)),
            );
            None
        }
    };
    let arguments = schema.as_ref().map(argument_names).unwrap_or_default();
    let has_dispatch = map.contains_key("dispatch");
    let mut own = Vec::new();
    let mut dispatch = Vec::new();
    let mut output_differentiability = None;
    for (k, v) in map {
        let Some(key) = k.as_str() else {
            diags.push(
                cx.at(
                    (line, None),
                    format!("entry keys must be strings, found {}", describe(k)),
                )
                .help(KEYS_HELP),
            );
            continue;
        };
        match key {
            "name" => {}
            "dispatch" => dispatch = load_dispatch(&cx, v, &arguments, &mut diags),
            "output_differentiability" => {
                output_differentiability = load_output_differentiability(&cx, v, &mut diags)
            }
            _ if has_dispatch => {
                let msg = format!("formula `{key}:` beside `dispatch:` is ignored");
                let help = "with `dispatch:`, every formula goes under a dispatch key: move it under `Default:`";
                diags.push(cx.at(key_pos(&cx, key), msg).help(help));
            }
            _ => {
                let at = key_pos(&cx, key);
                own.extend(load_formula(&cx, at, key, v, &arguments, &mut diags));
            }
        }
    }
    if !has_dispatch {
        dispatch.push(DispatchFormulas {
            key: "Default".into(),
            line,
            formulas: own,
        });
    }
    match schema {
        Some(schema) if diags.is_empty() => Ok(DerivativeEntry {
            line,
            name: name.clone(),
            schema,
            dispatch,
            has_dispatch,
            output_differentiability,
        }),
        _ => Err(diags),
    }
}

fn load_dispatch(
    cx: &EntryCx<'_>,
    v: &Value,
    arguments: &[&str],
    diags: &mut Vec<Diagnostic>,
) -> Vec<DispatchFormulas> {
    let at = key_pos(cx, "dispatch");
    let Value::Mapping(m) = v else {
        diags.push(
            cx.at(
                cx.src.value(cx.line, "dispatch"),
                format!(
                    "`dispatch:` must be a mapping of dispatch keys to formulas, found {}",
                    describe(v)
                ),
            )
            .help(DISPATCH_HELP),
        );
        return Vec::new();
    };
    let mut out = Vec::new();
    for (k, formulas) in m {
        let Some(key) = k.as_str() else {
            diags.push(cx.at(
                at,
                format!("dispatch keys must be names, found {}", describe(k)),
            ));
            continue;
        };
        let row = child_pos(cx, at, key);
        if !DISPATCH_KEYS.contains(&key) {
            let help = match nearest(key, DISPATCH_KEYS.iter().copied()) {
                Some(n) => format!("did you mean `{n}`?"),
                None => format!("the keys are {}", DISPATCH_KEYS.join(", ")),
            };
            diags.push(
                cx.at(row, format!("invalid dispatch key `{key}`"))
                    .help(help),
            );
            continue;
        }
        let Value::Mapping(fm) = formulas else {
            diags.push(
                cx.at(
                    row,
                    format!(
                        "the formulas for `{key}` must be a mapping of names to formulas, found {}",
                        describe(formulas)
                    ),
                )
                .help(format!("indent `NAME: formula` lines under `{key}:`")),
            );
            continue;
        };
        let mut list = Vec::new();
        for (fk, fv) in fm {
            let Some(name) = fk.as_str() else {
                diags.push(cx.at(
                    row,
                    format!("formula keys must be names, found {}", describe(fk)),
                ));
                continue;
            };
            let at = child_pos(cx, row, name);
            list.extend(load_formula(cx, at, name, fv, arguments, diags));
        }
        out.push(DispatchFormulas {
            key: key.to_string(),
            line: row.0,
            formulas: list,
        });
    }
    out
}

fn load_formula(
    cx: &EntryCx<'_>,
    at: (usize, Option<usize>),
    key: &str,
    v: &Value,
    arguments: &[&str],
    diags: &mut Vec<Diagnostic>,
) -> Option<Formula> {
    // torchgen's `split_names`: split at `,`, each name trimmed.
    let names: Vec<String> = key.split(',').map(|n| n.trim().to_string()).collect();
    if names.iter().any(String::is_empty) {
        diags.push(
            cx.at(at, format!("the key `{key}` has an empty name"))
                .help("separate names with `, `, e.g. `self, other: ...`"),
        );
        return None;
    }
    let Some(text) = v.as_str() else {
        // Perhaps not a formula at all: a misspelt `output_differentiability:`.
        let help = match nearest(key, ENTRY_KEYS.iter().copied()) {
            Some(n) => format!("did you mean `{n}`?"),
            None => FORMULA_HELP.to_string(),
        };
        diags.push(
            cx.at(
                at,
                format!(
                    "the formula for `{key}` must be a string, found {}",
                    describe(v)
                ),
            )
            .help(help),
        );
        return None;
    };
    let direction = if arguments.contains(&names[0].as_str()) {
        Direction::Backward
    } else {
        Direction::Forward
    };
    Some(Formula {
        names,
        text: text.to_string(),
        body: Body::of(text),
        direction,
        line: at.0,
        column: at.1,
    })
}

fn load_output_differentiability(
    cx: &EntryCx<'_>,
    v: &Value,
    diags: &mut Vec<Diagnostic>,
) -> Option<OutputDifferentiability> {
    let (line, column) = key_pos(cx, "output_differentiability");
    let help = OUTPUTS_HELP;
    let bad = |found: String| {
        cx.at(
            (line, column),
            format!("`output_differentiability:` must be a list of True/False, {found}"),
        )
        .help(help)
    };
    let Value::Sequence(xs) = v else {
        diags.push(bad(format!("found {}", describe(v))));
        return None;
    };
    let value = match xs.as_slice() {
        [Value::String(c)] => Differentiability::Condition(c.clone()),
        _ if xs.iter().any(Value::is_string) => {
            diags.push(
                cx.at(
                    (line, column),
                    "output_differentiability must either be List[bool] or a List[str] where each str is a condition. In the case where it is a condition, we only support single-output functions.",
                )
                .help(help),
            );
            return None;
        }
        _ => {
            let mut flags = Vec::with_capacity(xs.len());
            for x in xs {
                match x.as_bool() {
                    Some(b) => flags.push(b),
                    None => {
                        diags.push(bad(format!("found {} in the list", describe(x))));
                        return None;
                    }
                }
            }
            Differentiability::Flags(flags)
        }
    };
    Some(OutputDifferentiability {
        value,
        line,
        column,
    })
}

// ─── Resolve ────────────────────────────────────────────────────────────────────────

/// The derivatives file matched to an operator file.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Resolution {
    /// Per entry of the derivatives file (same order): the operator it names.
    pub entries: Vec<ResolvedEntry>,
    /// Every operator of the operator file (written or generated by `autogen:`)
    /// that gets formulas, by name (`add.Tensor`), with the entry they come from.
    pub operators: BTreeMap<String, OperatorFormulas>,
}

/// The operator an entry names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResolvedEntry {
    /// Its name (`add.Tensor`): torchgen's canonical function of the schema
    /// `name:` gives, which is that schema's operator except where another
    /// operator with the same signature owns the name.
    pub operator: String,
    /// Its line in the operator file (for a generated operator, that of the entry
    /// it is generated from).
    pub line: usize,
    /// True if the operator is generated by `autogen:`.
    pub generated: bool,
}

/// Where an operator's formulas come from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OperatorFormulas {
    /// The index of the entry in [`DerivativesFile::entries`].
    pub entry: usize,
    /// How the operator was matched to it.
    pub source: FormulaSource,
}

/// How an operator gets the formulas of an entry (torchgen's `find_info`, in
/// this order of preference).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FormulaSource {
    /// The entry names the operator.
    Exact,
    /// A `view_copy` operator (`transpose_copy.int`) gets the formulas of its view
    /// (`transpose.int`) unless it has its own.
    ViewCopy,
    /// The operator (an inplace, out= or mutable variant) has the signature, defaults
    /// aside, of a functional operator with an entry, whose formulas it gets
    /// (`_foreach_` operators excepted).
    Functional,
    /// A generated functional variant gets the formulas of the mutable or inplace
    /// variant with its signature.
    NonFunctional,
}

/// One operator of the operator file, for resolution.
struct Op<'a> {
    f: &'a NativeFunction,
    generated: bool,
}

/// Matches every entry to the operator it names, and every operator to the
/// entry its formulas come from, checking each entry against its operator. All
/// problems are returned together, ordered by position in the derivatives file.
pub fn resolve(d: &DerivativesFile, operators: &SchemaFile) -> Result<Resolution, Diagnostics> {
    let generated = crate::python::generated_functions(&operators.entries)
        .map_err(|e| Diagnostics(vec![Diagnostic::new(&operators.file, 0, e)]))?;
    let ops: Vec<Op<'_>> = operators
        .entries
        .iter()
        .map(|f| Op {
            f,
            generated: false,
        })
        .chain(generated.iter().map(|f| Op { f, generated: true }))
        .collect();
    let mut by_schema: HashMap<String, usize> = HashMap::new();
    let mut by_signature: HashMap<String, Vec<usize>> = HashMap::new();
    for (i, op) in ops.iter().enumerate() {
        by_schema.insert(op.f.func.to_string(), i);
        by_signature
            .entry(op.f.func.signature().to_string())
            .or_default()
            .push(i);
    }

    let mut diags = Vec::new();
    let mut entries = Vec::with_capacity(d.entries.len());
    // Operator → the entry that names it (the last, as in torchgen's dict).
    let mut named_by: HashMap<usize, usize> = HashMap::new();
    for (ei, e) in d.entries.iter().enumerate() {
        let mut out = Report {
            file: &d.file,
            entry: e,
            diags: &mut diags,
        };
        let Some(&named) = by_schema.get(&e.name) else {
            out.push(
                e.line,
                None,
                format!("could not find ATen function for schema: {}", e.name),
                Some(unknown_operator_help(&ops, e)),
            );
            continue;
        };
        let canonical = canonical(&ops, &by_signature, named, &e.name);
        let op = &ops[canonical];
        if let Some(first) = named_by.insert(canonical, ei) {
            out.push(
                e.line,
                None,
                format!(
                    "a second entry for `{}` (first at line {})",
                    op.f.func.name, d.entries[first].line
                ),
                Some("torchgen keeps only the last entry for an operator: merge the two".into()),
            );
        }
        check_entry(e, &op.f.func, &mut out);
        entries.push(ResolvedEntry {
            operator: op.f.func.name.to_string(),
            line: op.f.line,
            generated: op.generated,
        });
    }
    collected(&mut diags)?;
    let operators = match_operators(d, &ops, &named_by, &mut diags);
    collected(&mut diags)?;
    Ok(Resolution { entries, operators })
}

/// `Err` with the diagnostics, in order, if there are any.
fn collected(diags: &mut Vec<Diagnostic>) -> Result<(), Diagnostics> {
    if diags.is_empty() {
        return Ok(());
    }
    let mut ds = Diagnostics(std::mem::take(diags));
    ds.sort();
    Err(ds)
}

/// Every operator that gets formulas, and from which entry (`named_by`: the
/// operators the entries name), by torchgen's `find_info`; an operator that
/// gets an entry it is not named by must fit its `output_differentiability:` too.
fn match_operators(
    d: &DerivativesFile,
    ops: &[Op<'_>],
    named_by: &HashMap<usize, usize>,
    diags: &mut Vec<Diagnostic>,
) -> BTreeMap<String, OperatorFormulas> {
    // A view_copy operator without an entry of its own gets its view's.
    let by_name: HashMap<String, usize> = ops
        .iter()
        .enumerate()
        .map(|(i, op)| (op.f.func.name.to_string(), i))
        .collect();
    let mut view_copies: Vec<(usize, usize)> = Vec::new();
    for (i, op) in ops.iter().enumerate() {
        if !op.f.has_tag("view_copy") || named_by.contains_key(&i) {
            continue;
        }
        let name = &op.f.func.name;
        let Some(base) = name.name.base.strip_suffix("_copy") else {
            continue;
        };
        let mut view = name.clone();
        view.name.base = base.to_string();
        if let Some(&e) = by_name.get(&view.to_string()).and_then(|v| named_by.get(v)) {
            view_copies.push((i, e));
        }
    }
    // Signatures (defaults stripped) of the operators with formulas, functional or
    // not; for equal signatures the later entry wins, as in torchgen's dict.
    let mut functional: HashMap<String, usize> = HashMap::new();
    let mut non_functional: HashMap<String, usize> = HashMap::new();
    let mut with_info: Vec<(usize, usize)> = named_by.iter().map(|(&o, &e)| (o, e)).collect();
    with_info.sort_by_key(|&(_, e)| e);
    for &(o, e) in with_info.iter().chain(&view_copies) {
        let f = &ops[o].f.func;
        let table = if f.kind() == SchemaKind::Functional {
            &mut functional
        } else {
            &mut non_functional
        };
        table.insert(signature_without_defaults(f), e);
    }
    let view_copies: HashMap<usize, usize> = view_copies.into_iter().collect();
    let mut resolved = BTreeMap::new();
    for (i, op) in ops.iter().enumerate() {
        let f = &op.f.func;
        // Generated out= variants are never matched.
        if op.generated && f.kind() == SchemaKind::Out {
            continue;
        }
        let found = if let Some(&e) = named_by.get(&i) {
            Some((e, FormulaSource::Exact))
        } else if let Some(&e) = view_copies.get(&i) {
            Some((e, FormulaSource::ViewCopy))
        } else {
            let sig = signature_without_defaults(f);
            let foreach = f.name.name.base.starts_with("_foreach_");
            match (functional.get(&sig), non_functional.get(&sig)) {
                (Some(&e), _) if !foreach => Some((e, FormulaSource::Functional)),
                (_, Some(&e)) if op.generated => Some((e, FormulaSource::NonFunctional)),
                _ => None,
            }
        };
        let Some((entry, source)) = found else {
            continue;
        };
        if source != FormulaSource::Exact {
            let mut out = Report {
                file: &d.file,
                entry: &d.entries[entry],
                diags,
            };
            check_output_differentiability(out.entry, f, Some(source), &mut out);
        }
        resolved.insert(f.name.to_string(), OperatorFormulas { entry, source });
    }
    resolved
}

/// Where the checks of one entry put their diagnostics.
struct Report<'a> {
    file: &'a str,
    entry: &'a DerivativeEntry,
    diags: &'a mut Vec<Diagnostic>,
}

impl Report<'_> {
    fn push(&mut self, line: usize, col: Option<usize>, msg: String, help: Option<String>) {
        let d = Diagnostic::new(self.file, line, msg)
            .maybe_column(col)
            .entry(self.entry.label());
        self.diags.push(match help {
            Some(h) => d.help(h),
            None => d,
        });
    }
}

/// torchgen's canonical function of an entry: among the operators with the
/// signature of the one `name:` names, the one (neither out= nor a `functional`
/// overload) whose name, overload aside, is the entry's; else the named one.
fn canonical(
    ops: &[Op<'_>],
    by_signature: &HashMap<String, Vec<usize>>,
    named: usize,
    name: &str,
) -> usize {
    let Ok((base, _)) = crate::python::split_name_params(name) else {
        return named;
    };
    by_signature[&ops[named].f.func.signature().to_string()]
        .iter()
        .copied()
        .find(|&i| {
            let f = &ops[i].f.func;
            !f.name.overload.contains("functional")
                && f.arguments.out().is_empty()
                && f.name.name.to_string() == base
        })
        .unwrap_or(named)
}

/// torchgen's `signature(strip_default=True)`, the key inplace and out= variants
/// find their functional operator's formulas by.
fn signature_without_defaults(f: &FunctionSchema) -> String {
    let mut s = f.signature();
    for a in &mut s.arguments.all {
        a.default = None;
    }
    s.to_string()
}

/// The help for a `name:` that is no operator's schema: the closest signature
/// and those of that name (torchgen's "Available signatures"), or of the closest
/// name.
fn unknown_operator_help(ops: &[Op<'_>], e: &DerivativeEntry) -> String {
    let base = e.schema.name.name.to_string();
    let mut same: Vec<String> = ops
        .iter()
        .filter(|o| o.f.func.name.name.to_string() == base && o.f.func.arguments.out().is_empty())
        .map(|o| o.f.func.to_string())
        .collect();
    let mut help = String::new();
    if same.is_empty() {
        // Another name: the closest operator name, and its signatures.
        let label = e.label();
        let names: Vec<String> = ops.iter().map(|o| o.f.func.name.unqualified()).collect();
        if let Some(n) = nearest(&label, names.iter().map(String::as_str)) {
            let n = n.to_string();
            same = ops
                .iter()
                .filter(|o| o.f.func.name.unqualified() == n)
                .map(|o| o.f.func.to_string())
                .collect();
        }
    }
    if let Some(n) = nearest(&e.name, same.iter().map(String::as_str)) {
        help = format!("did you mean `{n}`?\n  ");
    }
    if same.is_empty() {
        help.push_str(&format!("no operator is named `{base}`; "));
        help.push_str(
            "`name:` repeats an operator's schema exactly as the operator file writes it",
        );
    } else {
        help.push_str("available signatures:");
        for s in &same {
            help.push_str("\n    ");
            help.push_str(s);
        }
    }
    help
}

/// The checks of one entry against its operator `f`.
fn check_entry(e: &DerivativeEntry, f: &FunctionSchema, out: &mut Report<'_>) {
    let base = f.name.name.to_string();
    let arguments = argument_names(f);
    let outputs = output_names(f);
    let named_returns: Vec<&str> = f.returns.iter().filter_map(|r| r.name.as_deref()).collect();
    if arguments.contains(&"grad_input_mask") {
        let msg = format!("Schema for {base} has an argument named grad_input_mask, but this name would be shadowed by our codegen. Please use a different name in native_functions.yaml.");
        out.push(e.line, None, msg, None);
    }
    if arguments.contains(&"result") {
        let msg = format!("Schema for {base} has an argument named result, but this is only allowed for outputs. Please use a different name in native_functions.yaml.");
        out.push(e.line, None, msg, None);
    }
    check_output_differentiability(e, f, None, out);
    for set in &e.dispatch {
        let mut seen: HashMap<&str, usize> = HashMap::new();
        for fm in &set.formulas {
            check_formula(
                fm,
                f,
                (&arguments, &outputs, &named_returns),
                &mut seen,
                out,
            );
        }
        check_auto(set, f, &base, out);
    }
}

/// torchgen's checks of `output_differentiability:` for an operator `f` that gets
/// the entry's formulas (`via`: how, when it is not the operator the entry names).
fn check_output_differentiability(
    e: &DerivativeEntry,
    f: &FunctionSchema,
    via: Option<FormulaSource>,
    out: &mut Report<'_>,
) {
    let Some(od) = &e.output_differentiability else {
        return;
    };
    let inherited = via.map(|v| {
        format!(
            "`{}` gets this entry's formulas ({}), so its outputs must fit too",
            f.name,
            match v {
                FormulaSource::Exact => "it is named",
                FormulaSource::ViewCopy => "its view's",
                FormulaSource::Functional => "its functional variant's",
                FormulaSource::NonFunctional => "its mutable variant's",
            }
        )
    });
    let n = match &od.value {
        Differentiability::Flags(v) => v.len(),
        // torchgen reads a condition as `[True]`.
        Differentiability::Condition(_) => 1,
    };
    if n != f.returns.len() {
        out.push(
            od.line,
            od.column,
            format!(
                "The length of output_differentiability ({n}), does not match the number of outputs ({}).",
                f.returns.len()
            ),
            Some(
                inherited
                    .clone()
                    .unwrap_or_else(|| format!("write one True/False per output of `{}`", f.name)),
            ),
        );
    }
    let any_false = matches!(&od.value, Differentiability::Flags(v) if v.contains(&false));
    if any_false && f.kind() == SchemaKind::Inplace {
        out.push(
            od.line,
            od.column,
            "output_differentiability=False for inplace operation (version_counter won't get updated)".into(),
            inherited,
        );
    }
}

/// Help lines of [`check_formula`].
const OPTIONS_HELP: &str =
    "torchgen passes `dtype`, `layout`, `device` and `pin_memory` as one argument, `options`";
const TWICE_HELP: &str =
    "give each argument or output one formula; one key may name several: `self, other: ...`";
const MIXED_HELP: &str = "a key names arguments (a backward formula, in terms of `grad`) or outputs (a forward formula, in terms of `self_p` and `self_t`): write two keys";

/// The checks of one formula: its names, its value's direction, and that no
/// name has a formula already (`seen`: name → the line of its formula).
fn check_formula<'a>(
    fm: &'a Formula,
    f: &FunctionSchema,
    (arguments, outputs, named_returns): (&[&str], &[String], &[&str]),
    seen: &mut HashMap<&'a str, usize>,
    out: &mut Report<'_>,
) {
    let (line, col) = (fm.line, fm.column);
    let is_output = |n: &str| outputs.iter().any(|o| o == n);
    let mut mixed = false;
    for n in &fm.names {
        let n = n.as_str();
        let (is_arg, is_out) = (arguments.contains(&n), is_output(n));
        if is_arg && named_returns.contains(&n) {
            let msg = format!("While processing the derivative formula for '{}' wrt '{n}', expected '{n}' to not be both an input arg and named return.", f.name);
            out.push(line, col, msg, None);
        }
        let fits = match fm.direction {
            Direction::Backward => is_arg,
            Direction::Forward => is_out,
        };
        if !fits && (is_arg || is_out) {
            mixed = true;
        } else if !fits {
            let candidates = arguments
                .iter()
                .copied()
                .chain(outputs.iter().map(String::as_str))
                .chain(ENTRY_KEYS.iter().copied());
            let help = if let Some(m) = nearest(n, candidates) {
                format!("did you mean `{m}`?")
            } else if TENSOR_OPTIONS.contains(&n) && arguments.contains(&"options") {
                OPTIONS_HELP.into()
            } else {
                format!(
                    "arguments: {}; outputs: {}",
                    arguments.join(", "),
                    outputs.join(", ")
                )
            };
            out.push(
                line,
                col,
                format!("`{n}` is neither an argument nor an output of `{}`", f.name),
                Some(help),
            );
        }
        if let Some(first) = seen.insert(n, line) {
            out.push(
                line,
                col,
                format!("`{n}` is given a formula twice (first at line {first})"),
                Some(TWICE_HELP.into()),
            );
        }
    }
    if mixed {
        out.push(
            line,
            col,
            format!(
                "the key `{}` names both arguments and outputs",
                fm.names.join(", ")
            ),
            Some(MIXED_HELP.into()),
        );
    }
    match (fm.direction, fm.body) {
        (Direction::Backward, Body::AutoElementWise | Body::AutoLinear) => out.push(
            line,
            col,
            format!(
                "`{}` is a forward formula, but `{}` names arguments",
                fm.text,
                fm.names.join(", ")
            ),
            Some(format!("write it for the output: `result: {}`", fm.text)),
        ),
        (Direction::Forward, Body::NonDifferentiable) => out.push(
            line,
            col,
            format!(
                "`non_differentiable` is for arguments, but `{}` names outputs",
                fm.names.join(", ")
            ),
            Some(
                "leave the output's formula out, or mark it in `output_differentiability:`".into(),
            ),
        ),
        _ => {}
    }
}

/// torchgen's conditions for `auto_element_wise` and `auto_linear` in one set of
/// formulas.
fn check_auto(set: &DispatchFormulas, f: &FunctionSchema, base: &str, out: &mut Report<'_>) {
    let forward: Vec<&Formula> = set
        .formulas
        .iter()
        .filter(|x| x.direction == Direction::Forward)
        .collect();
    let backward: Vec<&Formula> = set
        .formulas
        .iter()
        .filter(|x| x.direction == Direction::Backward && x.body != Body::NonDifferentiable)
        .collect();
    let mut differentiable: Vec<&str> = backward
        .iter()
        .flat_map(|x| x.names.iter().map(String::as_str))
        .collect();
    differentiable.sort_unstable();
    differentiable.dedup();
    for fw in &forward {
        let single_output = forward.len() == 1 && fw.names.len() == 1;
        let msg = match fw.body {
            Body::AutoElementWise if f.kind() == SchemaKind::Inplace => format!(
                "Cannot use auto_element_wise with {} because it is an in-place variant",
                f.name
            ),
            Body::AutoElementWise if differentiable.len() != 1 || !single_output => format!(
                "Derivative definition of {base} in derivatives.yaml defines the forward definition of gradient as element_wise but this only works for functions with a single differentiable input and a single differentiable output."
            ),
            Body::AutoElementWise if backward.len() != 1 => format!(
                "Derivative definition of {base} in derivatives.yaml defines the forward definition of gradient as element_wise but it does not defines the gradient formula for its argument which is required."
            ),
            Body::AutoLinear if !single_output => format!(
                "Derivative definition of {base} in derivatives.yaml defines the forward definition of gradient as linear but this only works for functions with a single differentiable output."
            ),
            _ => continue,
        };
        out.push(fw.line, fw.column, msg, None);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies() {
        assert_eq!(Body::of("grad * self.sgn()"), Body::Expr);
        assert_eq!(Body::of("non_differentiable"), Body::NonDifferentiable);
        assert_eq!(Body::of(" Non_Differentiable "), Body::NonDifferentiable);
        assert_eq!(Body::of("auto_linear"), Body::AutoLinear);
        assert_eq!(Body::of("auto_element_wise"), Body::AutoElementWise);
        assert_eq!(Body::of("not_implemented(\"zeta\")"), Body::NotImplemented);
        assert_eq!(
            Body::of("not_implemented_list(\"_cudnn_rnn_backward\", kCudnnDoubleBackwardMsg)"),
            Body::NotImplemented
        );
        assert_eq!(Body::of("not_implemented(\"a)\")"), Body::NotImplemented);
        assert_eq!(
            Body::of("not_implemented(\"a\") + not_implemented(\"b\")"),
            Body::Expr
        );
        assert_eq!(Body::of("not_implemented_like(grad)"), Body::Expr);
    }

    #[test]
    fn names_of_arguments_and_outputs() {
        let f = parse_schema(
            "empty_like(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor",
        )
        .unwrap();
        assert_eq!(argument_names(&f), ["self", "options", "memory_format"]);
        assert_eq!(output_names(&f), ["result", "result0"]);
        let f = parse_schema("linalg_cholesky_ex(Tensor self, *, bool upper=False, bool check_errors=False) -> (Tensor L, Tensor info)").unwrap();
        assert_eq!(output_names(&f), ["L", "info", "result0", "result1"]);
    }
}
