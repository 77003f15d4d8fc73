//! Check: the formulas of a derivatives file, written as Rust expressions,
//! parsed with syn and checked against their operators' schemas, and what each
//! autograd node must save (torchgen's `saved_variables`, in
//! `tools/autograd/load_derivatives.py`).
//!
//! The file is PyTorch's format ([`opforge_schema::derivatives`] loads and
//! resolves it); its formulas are Rust expressions over the typed API:
//! `mul_tensor_backward(grad, other, self.scalar_type())`, `grad * result`,
//! `other_t * self_p + self_t * other_p`. Every free name of a formula (a path
//! of one segment, a call's head) must be something the generated node has:
//!
//! - backward (keyed by arguments): an argument (`self` included; a
//!   TensorOptions group is `options`), `grad`, `grads` (`grads[i]`, `i` below
//!   the number of outputs), `grad_<output>` for a named, differentiable tensor
//!   output, `result` / `resultN` / a named return, torchgen's
//!   `grad_input_mask` and `retain_variables`, or a helper the caller lists;
//! - forward (keyed by outputs): `<arg>_p` and `<arg>_t` (primal and tangent)
//!   for each argument with a backward formula in the same set, the other
//!   arguments by name, `original_self_p` / `original_self_t` for an inplace
//!   operator, `result` / `resultN` / named returns, or a helper.
//!
//! Method calls (`x.sizes()`) and paths of several segments (`DType::Float64`)
//! are left to rustc, which checks them when the generated code compiles.
//! Closure parameters, `let` bindings, `match` arms, `if let` and `for`
//! patterns introduce local names, which shadow the rest.
//!
//! What a backward formula uses decides what its node saves, as torchgen
//! decides it: an argument used as a whole is saved (a tensor as a saved
//! tensor, anything else by value); an argument or output used only through a
//! method of [`PROPERTIES`] (`self.sizes()`, `other.scalar_type()`,
//! `self.size(-1)`) saves only that property, computed when the node is
//! recorded; an output used (`grad * result`) saves the output. Forward
//! formulas save nothing (they run while the operator runs); they record the
//! tangents and primals they need.
//!
//! Anything the checker cannot see through (a macro, an item inside a formula,
//! an expression form it does not know) is a diagnostic at the formula's line,
//! never skipped.

use opforge_schema::derivatives::{
    argument_names, output_names, resolve, Body, DerivativeEntry, DerivativesFile,
    Differentiability, Direction, DispatchFormulas, Formula, Resolution,
};
use opforge_schema::diag::{abbrev, nearest, Diagnostic, Diagnostics};
use opforge_schema::load::SchemaFile;
use opforge_schema::model::{BaseType, FunctionSchema, SchemaKind, Type};
use opforge_schema::names::arg_ident;
use std::collections::BTreeSet;
use syn::ext::IdentExt;
use syn::{Expr, Pat};

// ─── Model ──────────────────────────────────────────────────────────────────────────

/// A derivatives file whose formulas all check.
#[derive(Clone, Debug)]
pub struct CheckedFile {
    /// Entries matched to operators, and operators to the entries their formulas
    /// come from ([`resolve`]).
    pub resolution: Resolution,
    /// Per entry of the file (same order), its checked formulas.
    pub entries: Vec<CheckedEntry>,
}

/// One entry, checked.
#[derive(Clone, Debug)]
pub struct CheckedEntry {
    /// The index of the entry in [`DerivativesFile::entries`].
    pub entry: usize,
    /// The operator it names (`mul.Tensor`).
    pub operator: String,
    /// The line where the entry starts.
    pub line: usize,
    /// Per dispatch key (`Default`, …), in file order: torchgen's
    /// `DifferentiabilityInfo`, one node type each.
    pub sets: Vec<CheckedSet>,
}

/// The formulas of one dispatch key, checked, and what their node saves.
#[derive(Clone, Debug)]
pub struct CheckedSet {
    /// `Default` or an autograd key.
    pub key: String,
    /// The formulas, in file order (backward and forward).
    pub formulas: Vec<CheckedFormula>,
    /// The arguments with a backward formula (not `non_differentiable`), in
    /// schema order: the node's inputs.
    pub differentiable: Vec<String>,
    /// What the node saves: the union of the backward formulas' [`CheckedFormula::saved`],
    /// first use first, each name once (torchgen's `dedup_vars`).
    pub saved: Vec<Saved>,
}

/// One formula, checked.
#[derive(Clone)]
pub struct CheckedFormula {
    /// The arguments (backward) or outputs (forward) it covers.
    pub names: Vec<String>,
    /// Backward or forward.
    pub direction: Direction,
    /// What kind of value it is.
    pub body: Body,
    /// The line of its key.
    pub line: usize,
    /// The expression as written (for [`Body::Expr`] and [`Body::NotImplemented`]).
    pub expr: Option<Expr>,
    /// The expression as the generated code evaluates it: each argument and
    /// output named by its Rust identifier (`self` by `self_`) and, in a
    /// backward formula, each saved property replaced by its field
    /// (`self.sizes()` by `self_sizes`).
    pub node_expr: Option<Expr>,
    /// What a backward formula needs saved, in order of first use.
    pub saved: Vec<Saved>,
    /// The gradients it reads.
    pub gradients: Gradients,
    /// For a forward formula: the arguments whose tangents (`<arg>_t`) it reads.
    pub tangents: Vec<String>,
    /// For a forward formula: the arguments whose primals (`<arg>_p`) it reads.
    pub primals: Vec<String>,
}

/// The expressions printed as Rust source (syn's syntax trees have no `Debug`
/// here).
impl std::fmt::Debug for CheckedFormula {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let show = |e: &Option<Expr>| {
            e.as_ref()
                .map(|e| quote::ToTokens::to_token_stream(e).to_string())
        };
        f.debug_struct("CheckedFormula")
            .field("names", &self.names)
            .field("direction", &self.direction)
            .field("body", &self.body)
            .field("line", &self.line)
            .field("expr", &show(&self.expr))
            .field("node_expr", &show(&self.node_expr))
            .field("saved", &self.saved)
            .field("gradients", &self.gradients)
            .field("tangents", &self.tangents)
            .field("primals", &self.primals)
            .finish()
    }
}

/// The gradients a backward formula reads.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Gradients {
    /// `grad` (the first output's gradient).
    pub grad: bool,
    /// Every use of `grads`, indexed or not.
    pub grads_uses: usize,
    /// The literal indices of `grads[i]`.
    pub grads_indices: Vec<usize>,
    /// The `grad_<output>` names used.
    pub named: Vec<String>,
}

/// One value a node saves.
#[derive(Clone, Debug, PartialEq)]
pub struct Saved {
    /// Its name in the formula's terms: the argument or output itself (`self`,
    /// `result`), or a property (`self_sizes`, `other_scalar_type`,
    /// `self_sym_argsize_minus_1`). [`Saved::ident`] is its field.
    pub name: String,
    /// The argument or output it is taken from.
    pub of: String,
    /// What it holds.
    pub kind: SavedKind,
    /// For a property: how it is computed when the node is recorded, as Rust
    /// source over the arguments' and outputs' identifiers (`self_.sizes()`,
    /// `self_.size(-1)`).
    pub record: Option<String>,
}

impl Saved {
    /// The node's field (the name, a Rust keyword escaped: `self_`).
    pub fn ident(&self) -> String {
        arg_ident(&self.name)
    }
}

/// What a saved value holds.
#[derive(Clone, Debug, PartialEq)]
pub enum SavedKind {
    /// A `Tensor` argument, as a saved tensor (checked against its version).
    Tensor,
    /// A `Tensor?` argument.
    OptionalTensor,
    /// A `Tensor[]` or `Tensor?[]` argument.
    TensorList,
    /// The TensorOptions group (`dtype`, `layout`, `device`, `pin_memory`),
    /// which formulas name `options`.
    TensorOptions,
    /// A non-tensor argument, by value, of this schema type.
    Value(Type),
    /// Output `index` of the operator (for a tensor, saved without its
    /// `grad_fn`, as PyTorch's `SavedVariable` keeps an output), of this type.
    Output {
        /// Its position among the returns.
        index: usize,
        /// Its schema type.
        ty: Type,
    },
    /// A property of an argument or output, computed when the node is recorded.
    Property(Property),
}

/// A property a formula may use instead of a whole tensor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Property {
    /// `x.sizes()`.
    Sizes,
    /// `x.sym_sizes()`.
    SymSizes,
    /// `x.shape()`.
    Shape,
    /// `x.size(d)`: one size.
    Size,
    /// `x.sym_size(d)`.
    SymSize,
    /// `x.numel()`.
    Numel,
    /// `x.sym_numel()`.
    SymNumel,
    /// `x.dim()`.
    Dim,
    /// `x.scalar_type()`.
    ScalarType,
    /// `x.dtype()`.
    Dtype,
    /// `x.options()`.
    Options,
    /// `x.device()`.
    Device,
    /// `x.layout()`.
    Layout,
    /// `x.strides()` (only in a formula for `x` alone, as in torchgen).
    Strides,
    /// `x.sym_strides()` (likewise).
    SymStrides,
    /// `x.is_conj()`.
    IsConj,
}

/// Whether a property's method takes an argument.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PropertyArgs {
    /// `x.sizes()`.
    None,
    /// `x.size(d)`: one dimension, an integer literal (`-1`) or an argument's name.
    Dimension,
}

/// The methods whose value a node saves instead of the tensor they are called
/// on: `(method, field suffix, property, arguments)`. torchgen's
/// `REPLACEMENTS` (`sym_sizes`, `sym_size`, `numel`, `sym_numel`, `options`,
/// `scalar_type`, `dim`, `sym_strides`, `layout`, `is_conj`, and the older
/// `sizes`, `size`, `strides`) with the same suffixes, and the runtime's
/// own names for the same facts (`shape`, `dtype`, `device`).
pub const PROPERTIES: &[(&str, &str, Property, PropertyArgs)] = &[
    ("sizes", "_sizes", Property::Sizes, PropertyArgs::None),
    (
        "sym_sizes",
        "_sym_sizes",
        Property::SymSizes,
        PropertyArgs::None,
    ),
    ("shape", "_shape", Property::Shape, PropertyArgs::None),
    ("size", "_argsize_", Property::Size, PropertyArgs::Dimension),
    (
        "sym_size",
        "_sym_argsize_",
        Property::SymSize,
        PropertyArgs::Dimension,
    ),
    ("numel", "_numel", Property::Numel, PropertyArgs::None),
    (
        "sym_numel",
        "_sym_numel",
        Property::SymNumel,
        PropertyArgs::None,
    ),
    ("dim", "_dim", Property::Dim, PropertyArgs::None),
    (
        "scalar_type",
        "_scalar_type",
        Property::ScalarType,
        PropertyArgs::None,
    ),
    ("dtype", "_dtype", Property::Dtype, PropertyArgs::None),
    ("options", "_options", Property::Options, PropertyArgs::None),
    ("device", "_device", Property::Device, PropertyArgs::None),
    ("layout", "_layout", Property::Layout, PropertyArgs::None),
    ("strides", "_strides", Property::Strides, PropertyArgs::None),
    (
        "sym_strides",
        "_sym_strides",
        Property::SymStrides,
        PropertyArgs::None,
    ),
    (
        "is_conj",
        "_conjugate",
        Property::IsConj,
        PropertyArgs::None,
    ),
];

/// The prelude's names a formula may use without a helper: `Some(x)`, `None`,
/// `Ok`, `Err`.
pub const PRELUDE: &[&str] = &["Some", "None", "Ok", "Err"];

/// Names torchgen puts in scope of every backward formula besides the
/// arguments, gradients and results.
const BACKWARD_EXTRAS: &[&str] = &["grad_input_mask", "retain_variables"];

/// How formulas are written, for help lines.
const SYNTAX_HELP: &str = "a formula is one Rust expression over the typed API: `grad * other`, `sum_to(grad, self.sizes())`, `if c { a } else { b }`";

// ─── Check ──────────────────────────────────────────────────────────────────────────

/// Resolves the file against `ops` and checks every formula of every entry:
/// its syntax, its names (against the entry's operator and `helpers`, the
/// helper functions the runtime provides), and torchgen's rules on `grads`;
/// and works out what each node saves. All problems are returned together,
/// ordered by position.
pub fn check(
    d: &DerivativesFile,
    ops: &SchemaFile,
    helpers: &[&str],
) -> Result<CheckedFile, Diagnostics> {
    let mut diags = Vec::new();
    let resolution = match resolve(d, ops) {
        Ok(r) => Some(r),
        Err(ds) => {
            diags.extend(ds.0);
            None
        }
    };
    let helpers: BTreeSet<&str> = helpers.iter().copied().collect();
    let mut entries = Vec::with_capacity(d.entries.len());
    for (i, e) in d.entries.iter().enumerate() {
        let sets = e
            .dispatch
            .iter()
            .map(|set| check_set(&d.file, e, set, &helpers, &mut diags))
            .collect();
        entries.push(CheckedEntry {
            entry: i,
            operator: String::new(),
            line: e.line,
            sets,
        });
    }
    let Some(resolution) = resolution.filter(|_| diags.is_empty()) else {
        let mut ds = Diagnostics(diags);
        ds.sort();
        return Err(ds);
    };
    for (c, r) in entries.iter_mut().zip(&resolution.entries) {
        c.operator.clone_from(&r.operator);
    }
    Ok(CheckedFile {
        resolution,
        entries,
    })
}

/// The names in scope of one set of formulas, from the entry's schema (which
/// is its operator's, character for character, once resolved).
struct Scope<'a> {
    f: &'a FunctionSchema,
    /// Argument names formulas use (`options` for a TensorOptions group), with
    /// their types (`None` for `options`).
    arguments: Vec<(&'a str, Option<&'a Type>)>,
    /// `result`, `resultN` and named returns, with their return's index.
    outputs: Vec<(String, usize)>,
    /// `grad_<output>` for each named, differentiable tensor output.
    named_gradients: Vec<String>,
    /// Arguments with a backward formula in the set (tensors, for `_t`/`_p`).
    differentiable: Vec<&'a str>,
    helpers: &'a BTreeSet<&'a str>,
}

impl<'a> Scope<'a> {
    fn new(
        e: &'a DerivativeEntry,
        set: &'a DispatchFormulas,
        helpers: &'a BTreeSet<&'a str>,
    ) -> Scope<'a> {
        let f = &e.schema;
        let names = argument_names(f);
        let arguments = names
            .iter()
            .map(|&n| {
                (
                    n,
                    f.arguments.all.iter().find(|a| a.name == n).map(|a| &a.ty),
                )
            })
            .collect();
        let outputs = output_names(f)
            .into_iter()
            .map(|n| {
                let i = match n.strip_prefix("result").and_then(|k| k.parse().ok()) {
                    Some(k) => k,
                    None => f
                        .returns
                        .iter()
                        .position(|r| r.name.as_deref() == Some(n.as_str()))
                        .unwrap_or(0),
                };
                (n, i)
            })
            .collect();
        // torchgen: a named return is a named gradient unless marked not
        // differentiable (a list shorter than the returns marks the rest), and if
        // its type is tensor-like.
        let flags: Option<&[bool]> = match e.output_differentiability.as_ref().map(|o| &o.value) {
            Some(Differentiability::Flags(v)) => Some(v),
            _ => None,
        };
        let named_gradients = f
            .returns
            .iter()
            .enumerate()
            .filter(|(i, r)| {
                flags.is_none_or(|v| v.get(*i).copied().unwrap_or(false)) && r.ty.is_tensor_like()
            })
            .filter_map(|(_, r)| r.name.as_ref().map(|n| format!("grad_{n}")))
            .collect();
        let mut differentiable: Vec<&str> = set
            .formulas
            .iter()
            .filter(|x| x.direction == Direction::Backward && x.body != Body::NonDifferentiable)
            .flat_map(|x| x.names.iter().map(String::as_str))
            .collect();
        differentiable.retain(|n| names.contains(n));
        differentiable.sort_by_key(|n| names.iter().position(|m| m == n));
        differentiable.dedup();
        Scope {
            f,
            arguments,
            outputs,
            named_gradients,
            differentiable,
            helpers,
        }
    }

    fn argument(&self, n: &str) -> Option<Option<&'a Type>> {
        self.arguments.iter().find(|a| a.0 == n).map(|a| a.1)
    }

    fn output(&self, n: &str) -> Option<usize> {
        self.outputs.iter().find(|o| o.0 == n).map(|o| o.1)
    }

    /// The argument whose tangent (`_t`) or primal (`_p`) `n` is, if it is one
    /// a forward formula may read; `original_self_*` for an inplace operator.
    fn forward_input(&self, n: &str) -> Option<(&'a str, bool)> {
        let (base, tangent) = if let Some(b) = n.strip_suffix("_t") {
            (b, true)
        } else {
            (n.strip_suffix("_p")?, false)
        };
        let base = match base.strip_prefix("original_") {
            Some(b) if b == "self" && self.f.kind() == SchemaKind::Inplace => b,
            Some(_) => return None,
            None => base,
        };
        self.differentiable
            .iter()
            .copied()
            .find(|&d| d == base)
            .map(|d| (d, tangent))
    }

    /// Every name a formula in `direction` may use, for did-you-mean.
    fn candidates(&self, direction: Direction) -> Vec<String> {
        let mut c: Vec<String> = self.arguments.iter().map(|a| a.0.to_string()).collect();
        c.extend(self.outputs.iter().map(|o| o.0.clone()));
        match direction {
            Direction::Backward => {
                c.extend(["grad", "grads"].map(String::from));
                c.extend(self.named_gradients.iter().cloned());
                c.extend(BACKWARD_EXTRAS.iter().map(|s| s.to_string()));
            }
            Direction::Forward => {
                for d in &self.differentiable {
                    c.push(format!("{d}_t"));
                    c.push(format!("{d}_p"));
                }
                if self.f.kind() == SchemaKind::Inplace && self.differentiable.contains(&"self") {
                    c.extend(["original_self_t", "original_self_p"].map(String::from));
                }
            }
        }
        c.extend(self.helpers.iter().map(|h| h.to_string()));
        c
    }
}

/// Checks one set of formulas, adding its problems to `diags`.
fn check_set(
    file: &str,
    e: &DerivativeEntry,
    set: &DispatchFormulas,
    helpers: &BTreeSet<&str>,
    diags: &mut Vec<Diagnostic>,
) -> CheckedSet {
    let scope = Scope::new(e, set, helpers);
    let at = |line: usize, column: Option<usize>, msg: String| {
        Diagnostic::new(file, line, msg)
            .maybe_column(column)
            .entry(e.label())
    };
    let mut formulas = Vec::with_capacity(set.formulas.len());
    for fm in &set.formulas {
        let mut out = CheckedFormula {
            names: fm.names.clone(),
            direction: fm.direction,
            body: fm.body,
            line: fm.line,
            expr: None,
            node_expr: None,
            saved: Vec::new(),
            gradients: Gradients::default(),
            tangents: Vec::new(),
            primals: Vec::new(),
        };
        if matches!(fm.body, Body::Expr | Body::NotImplemented) {
            match syn::parse_str::<Expr>(&fm.text) {
                Err(err) => diags.push(
                    at(
                        fm.line,
                        fm.column,
                        format!(
                            "the formula for `{}` is not a Rust expression: {err}",
                            fm.names.join(", ")
                        ),
                    )
                    .help(syntax_help(&fm.text)),
                ),
                Ok(expr) => {
                    let mut node = expr.clone();
                    let mut walk = Walk::new(&scope, fm);
                    walk.expr(&mut node);
                    diags.extend(walk.problems.into_iter().map(|(msg, help)| {
                        let d = at(fm.line, fm.column, msg);
                        match help {
                            Some(h) => d.help(h),
                            None => d,
                        }
                    }));
                    out.saved = walk.saved;
                    out.gradients = walk.gradients;
                    out.tangents = walk.tangents;
                    out.primals = walk.primals;
                    out.node_expr = Some(node);
                    out.expr = Some(expr);
                }
            }
        }
        formulas.push(out);
    }
    check_grad_usage(&scope, &formulas, |m| {
        diags.push(at(set.line, None, m));
    });
    let mut saved: Vec<Saved> = Vec::new();
    for s in formulas.iter().flat_map(|f| &f.saved) {
        if !saved.iter().any(|x| x.name == s.name) {
            saved.push(s.clone());
        }
    }
    CheckedSet {
        key: set.key.clone(),
        differentiable: scope.differentiable.iter().map(|s| s.to_string()).collect(),
        formulas,
        saved,
    }
}

/// The help for a formula syn cannot parse: C++ habits named, else the rule.
fn syntax_help(text: &str) -> String {
    let hint = if text.contains("->") {
        "Rust calls methods with `.`, never `->`; "
    } else if text.contains(" ? ") || text.contains("?(") {
        "Rust has no `c ? a : b`: write `if c { a } else { b }`; "
    } else if text.contains("std::") || text.contains("c10::") {
        "formulas are Rust, not C++: call the runtime's helpers; "
    } else {
        ""
    };
    format!("{hint}{SYNTAX_HELP}; the formula: `{}`", abbrev(text))
}

/// torchgen's `check_grad_usage` over the backward formulas of one set:
/// `grad`, `grads` and `grad_<output>` are not mixed, and `grads[0]` alone is
/// `grad`. (Indices out of range are found per formula.)
fn check_grad_usage(
    scope: &Scope<'_>,
    formulas: &[CheckedFormula],
    mut report: impl FnMut(String),
) {
    let base = scope.f.name.name.to_string();
    let backward = || {
        formulas
            .iter()
            .filter(|f| f.direction == Direction::Backward)
    };
    let uses_grad = backward().any(|f| f.gradients.grad);
    let grads_uses: usize = backward().map(|f| f.gradients.grads_uses).sum();
    let indices: BTreeSet<usize> = backward()
        .flat_map(|f| f.gradients.grads_indices.iter().copied())
        .collect();
    let indexed: usize = backward().map(|f| f.gradients.grads_indices.len()).sum();
    let uses_named = backward().any(|f| !f.gradients.named.is_empty());
    if uses_grad && grads_uses > 0 {
        report(format!("Derivative definition of {base} in derivatives.yaml illegally mixes use of 'grad' and 'grads'. Consider replacing occurrences of 'grad' with 'grads[0]'"));
    }
    if !uses_grad
        && grads_uses > 0
        && grads_uses == indexed
        && indices.len() == 1
        && indices.contains(&0)
    {
        report(format!("Derivative definition of {base} in derivatives.yaml solely refers to 'grads[0]'.  If the first output is indeed the only differentiable output, replace 'grads[0]' with 'grad'; otherwise, there is a likely error in your derivatives declaration."));
    }
    if uses_named && (uses_grad || grads_uses > 0) {
        report(format!("Derivative definition of {base} in derivatives.yaml illegally mixes use of \"grad_RETURN_NAME\" and \"grad\" or \"grads[x]\". Use only one method for identifying gradients."));
    }
}

// ─── The walk over one formula ──────────────────────────────────────────────────────

/// What a one-segment name in a formula refers to.
enum Name<'a> {
    /// A name bound inside the formula.
    Local,
    /// An argument, of this type (`None`: the TensorOptions group).
    Argument(Option<&'a Type>),
    /// Output `i` (`result`, `resultN`, a named return).
    Output(usize),
    /// `grad`.
    Grad,
    /// `grads`.
    Grads,
    /// `grad_<output>`.
    NamedGrad,
    /// A tangent (`true`) or primal of an argument, in a forward formula.
    Forward(&'a str, bool),
    /// `grad_input_mask`, `retain_variables`, or a helper used as a value.
    Other,
    /// An argument with a backward formula, named bare in a forward formula.
    Ambiguous,
    /// Nothing in scope.
    Unknown,
}

/// One walk over a formula's expression: names checked, uses recorded,
/// properties replaced by their fields (in the node's copy).
struct Walk<'s, 'a> {
    scope: &'s Scope<'a>,
    formula: &'s Formula,
    /// Local names, innermost frame last.
    frames: Vec<Vec<String>>,
    /// `(message, help)`, each unknown name once.
    problems: Vec<(String, Option<String>)>,
    reported: BTreeSet<String>,
    saved: Vec<Saved>,
    gradients: Gradients,
    tangents: Vec<String>,
    primals: Vec<String>,
}

impl<'s, 'a> Walk<'s, 'a> {
    fn new(scope: &'s Scope<'a>, formula: &'s Formula) -> Walk<'s, 'a> {
        Walk {
            scope,
            formula,
            // The formula's own frame: a `let` outside any block binds here.
            frames: vec![Vec::new()],
            problems: Vec::new(),
            reported: BTreeSet::new(),
            saved: Vec::new(),
            gradients: Gradients::default(),
            tangents: Vec::new(),
            primals: Vec::new(),
        }
    }

    fn backward(&self) -> bool {
        self.formula.direction == Direction::Backward
    }

    /// `formula for `self`` / `forward formula for `result``, for messages.
    fn what(&self) -> String {
        let dir = if self.backward() { "" } else { "forward " };
        format!("{dir}formula for `{}`", self.formula.names.join(", "))
    }

    fn problem(&mut self, key: String, msg: String, help: Option<String>) {
        if self.reported.insert(key) {
            self.problems.push((msg, help));
        }
    }

    fn unsupported(&mut self, what: &str, help: &str) {
        let msg = format!(
            "the {} uses {what}, which the checker cannot see through",
            self.what()
        );
        self.problem(format!("unsupported {what}"), msg, Some(help.to_string()));
    }

    fn is_local(&self, n: &str) -> bool {
        self.frames.iter().rev().any(|f| f.iter().any(|x| x == n))
    }

    fn classify(&self, n: &str) -> Name<'a> {
        let s = self.scope;
        if self.is_local(n) {
            return Name::Local;
        }
        if let Some(ty) = s.argument(n) {
            if !self.backward()
                && s.differentiable.contains(&n)
                && !ty.is_some_and(Type::is_list_like)
            {
                return Name::Ambiguous;
            }
            return Name::Argument(ty);
        }
        if let Some(i) = s.output(n) {
            return Name::Output(i);
        }
        if self.backward() {
            if n == "grad" {
                return Name::Grad;
            }
            if n == "grads" {
                return Name::Grads;
            }
            if s.named_gradients.iter().any(|g| g == n) {
                return Name::NamedGrad;
            }
            if BACKWARD_EXTRAS.contains(&n) {
                return Name::Other;
            }
        } else if let Some((arg, tangent)) = s.forward_input(n) {
            return Name::Forward(arg, tangent);
        }
        if s.helpers.contains(n) || PRELUDE.contains(&n) {
            return Name::Other;
        }
        Name::Unknown
    }

    /// A name used as a value: checked, and its use recorded.
    fn name(&mut self, ident: &mut syn::Ident) {
        let n = ident.unraw().to_string();
        match self.classify(&n) {
            Name::Local | Name::Other => {}
            Name::Argument(ty) => {
                if self.backward() {
                    self.save_whole(&n, ty);
                }
                *ident = syn::Ident::new(&arg_ident(&n), ident.span());
            }
            Name::Output(i) => {
                if self.backward() {
                    self.save_output(&n, i);
                }
                *ident = syn::Ident::new(&arg_ident(&n), ident.span());
            }
            Name::Grad => self.gradients.grad = true,
            Name::Grads => self.gradients.grads_uses += 1,
            Name::NamedGrad => push_once(&mut self.gradients.named, &n),
            Name::Forward(arg, true) => push_once(&mut self.tangents, arg),
            Name::Forward(arg, false) => push_once(&mut self.primals, arg),
            Name::Ambiguous => {
                let msg = format!("The forward formula for {} is using the base name of the {n} argument which is ambiguous. You should use {n}_p to access the primal value and {n}_t to access the tangent.", self.scope.f.name.name);
                self.problem(n, msg, None);
            }
            Name::Unknown => self.unknown(&n),
        }
    }

    fn unknown(&mut self, n: &str) {
        let s = self.scope;
        let which = if self.backward() {
            "an argument, a gradient, a result or a helper"
        } else {
            "a tangent, a primal, an argument, a result or a helper"
        };
        let msg = format!("{} uses `{n}`, which is not {which}", self.what());
        let base = n.strip_suffix("_t").or_else(|| n.strip_suffix("_p"));
        let help = if let Some(b) = base.filter(|b| s.argument(b).is_some()) {
            if self.backward() {
                Some(format!("`{n}` belongs to forward formulas (keyed by outputs); a backward formula reads `{b}` and `grad`"))
            } else {
                Some(format!("`{b}` has no backward formula in this entry, so its node has no `{n}`: give `{b}` a formula, or leave `{n}` out"))
            }
        } else if let Some(r) = n.strip_prefix("grad_").filter(|r| {
            self.backward() && s.f.returns.iter().any(|x| x.name.as_deref() == Some(*r))
        }) {
            Some(format!("`{r}` is not a differentiable tensor output (see `output_differentiability:`), so it has no gradient"))
        } else if !self.backward() && n.starts_with("original_self_") {
            Some(format!("`{n}` is the value `self` had before an inplace operator wrote it: `{}` is not inplace", self.scope.f.name))
        } else if !self.backward() && (n == "grad" || n == "grads") {
            Some("a forward formula has no `grad`: it is a Jacobian-vector product in terms of `<arg>_t` (tangents) and `<arg>_p` (primals)".to_string())
        } else {
            let mut cands = s.candidates(self.formula.direction);
            cands.extend(self.frames.iter().flatten().cloned());
            nearest(n, cands.iter().map(String::as_str)).map(|m| format!("did you mean `{m}`?"))
        };
        self.problem(n.to_string(), msg, help);
    }

    /// A call's head of one segment: a local closure or a helper.
    fn callee(&mut self, n: &str) {
        if self.is_local(n) || self.scope.helpers.contains(n) || PRELUDE.contains(&n) {
            return;
        }
        let msg = format!(
            "{} calls `{n}`, which is not a helper function",
            self.what()
        );
        let help = match nearest(n, self.scope.helpers.iter().copied()) {
            Some(m) => format!("did you mean `{m}`?"),
            None if self.scope.helpers.is_empty() => format!(
                "no helper functions are given: call a method (`x.foo()`) or add `{n}` to the helpers"
            ),
            None => format!(
                "the helpers are {}; or call a method (`x.foo()`)",
                self.scope
                    .helpers
                    .iter()
                    .map(|h| format!("`{h}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        self.problem(format!("call {n}"), msg, Some(help));
    }

    fn save(&mut self, s: Saved) {
        if !self.saved.iter().any(|x| x.name == s.name) {
            self.saved.push(s);
        }
    }

    fn save_whole(&mut self, n: &str, ty: Option<&Type>) {
        let kind = match ty {
            None => SavedKind::TensorOptions,
            Some(t) if t.is_base(BaseType::Tensor) => SavedKind::Tensor,
            Some(t) if t.is_tensor_like_single() => SavedKind::OptionalTensor,
            Some(t) if t.is_tensor_like() && t.is_list_like() => SavedKind::TensorList,
            Some(t) => SavedKind::Value(t.clone()),
        };
        self.save(Saved {
            name: n.to_string(),
            of: n.to_string(),
            kind,
            record: None,
        });
    }

    fn save_output(&mut self, n: &str, index: usize) {
        let ty = self.scope.f.returns[index].ty.clone();
        self.save(Saved {
            name: n.to_string(),
            of: n.to_string(),
            kind: SavedKind::Output { index, ty },
            record: None,
        });
    }

    /// `x.method(args)` on an argument or output `x` of a backward formula,
    /// where the method is a property: saved, and the call replaced by its field.
    fn property(&mut self, e: &mut Expr) -> bool {
        let Expr::MethodCall(call) = e else {
            return false;
        };
        if !self.backward() || call.turbofish.is_some() {
            return false;
        }
        let Some(receiver) = single_ident(&call.receiver) else {
            return false;
        };
        let of = receiver.unraw().to_string();
        if !matches!(
            self.classify(&of),
            Name::Argument(Some(_)) | Name::Output(_)
        ) {
            return false;
        }
        let method = call.method.to_string();
        let Some(&(_, suffix, property, args)) = PROPERTIES.iter().find(|p| p.0 == method) else {
            return false;
        };
        let suffix = match (args, call.args.len()) {
            (PropertyArgs::None, 0) => suffix.to_string(),
            (PropertyArgs::Dimension, 1) => match dimension(&call.args[0]) {
                Some(d @ Dim::Literal(_)) => format!("{suffix}{d}"),
                // A dimension argument is read when the node is recorded.
                Some(Dim::Name(d)) if matches!(self.classify(&d), Name::Argument(Some(_))) => {
                    format!("{suffix}{d}")
                }
                _ => return false,
            },
            _ => return false,
        };
        if matches!(property, Property::Strides | Property::SymStrides)
            && self.formula.names != [of.as_str()]
        {
            let msg = format!("Replacement for \".{method}()\" is currently only supported for single derivatives of the same tensor that \".{method}()\" is being called on.");
            self.problem(format!("strides {of}"), msg, Some(format!("give `{of}` a formula of its own, or save the tensor: `{of}.clone().{method}()`")));
            return true;
        }
        let name = format!("{of}{suffix}");
        let arg = match call.args.first().and_then(dimension) {
            Some(Dim::Literal(d)) => d.to_string(),
            Some(Dim::Name(d)) => arg_ident(&d),
            None => String::new(),
        };
        let record = format!("{}.{method}({arg})", arg_ident(&of));
        self.save(Saved {
            name: name.clone(),
            of,
            kind: SavedKind::Property(property),
            record: Some(record),
        });
        *e = ident_expr(&name);
        true
    }

    fn block(&mut self, b: &mut syn::Block) {
        self.frames.push(Vec::new());
        for s in &mut b.stmts {
            match s {
                syn::Stmt::Local(l) => {
                    if let Some(init) = &mut l.init {
                        self.expr(&mut init.expr);
                        if let Some((_, diverge)) = &mut init.diverge {
                            self.expr(diverge);
                        }
                    }
                    self.bind(&l.pat);
                }
                syn::Stmt::Expr(e, _) => self.expr(e),
                syn::Stmt::Item(_) => self.unsupported(
                    "an item",
                    "define functions as helpers in the runtime, not inside a formula",
                ),
                syn::Stmt::Macro(m) => self.macro_use(&m.mac),
            }
        }
        self.frames.pop();
    }

    fn macro_use(&mut self, m: &syn::Macro) {
        let name = m
            .path
            .segments
            .last()
            .map_or(String::new(), |s| s.ident.to_string());
        self.unsupported(
            &format!("the macro `{name}!`"),
            "names inside a macro cannot be checked: write an array (`[a, b]`), a method call or a helper instead",
        );
    }

    /// Binds the names of pattern `p` in the innermost frame.
    fn bind(&mut self, p: &Pat) {
        match p {
            Pat::Ident(i) => {
                let n = i.ident.unraw().to_string();
                if let Some(f) = self.frames.last_mut() {
                    f.push(n);
                }
                if let Some((_, sub)) = &i.subpat {
                    self.bind(sub);
                }
            }
            Pat::Or(o) => o.cases.iter().for_each(|c| self.bind(c)),
            Pat::Paren(x) => self.bind(&x.pat),
            Pat::Reference(x) => self.bind(&x.pat),
            Pat::Type(x) => self.bind(&x.pat),
            Pat::Slice(x) => x.elems.iter().for_each(|c| self.bind(c)),
            Pat::Tuple(x) => x.elems.iter().for_each(|c| self.bind(c)),
            Pat::TupleStruct(x) => x.elems.iter().for_each(|c| self.bind(c)),
            Pat::Struct(x) => x.fields.iter().for_each(|f| self.bind(&f.pat)),
            Pat::Const(_)
            | Pat::Lit(_)
            | Pat::Path(_)
            | Pat::Range(_)
            | Pat::Rest(_)
            | Pat::Wild(_) => {}
            Pat::Macro(m) => self.macro_use(&m.mac),
            _ => self.unsupported(
                "a pattern of a kind the checker does not know",
                "write a plain pattern: a name, a tuple, `Some(x)`, `_`",
            ),
        }
    }

    /// Walks `e`: names checked and recorded, properties replaced.
    fn expr(&mut self, e: &mut Expr) {
        if self.property(e) {
            return;
        }
        match e {
            Expr::Path(p) => {
                if p.qself.is_none() && p.path.leading_colon.is_none() && p.path.segments.len() == 1
                {
                    self.name(&mut p.path.segments[0].ident);
                }
            }
            Expr::Call(c) => {
                match &mut *c.func {
                    Expr::Path(p)
                        if p.qself.is_none()
                            && p.path.leading_colon.is_none()
                            && p.path.segments.len() == 1 =>
                    {
                        let n = p.path.segments[0].ident.unraw().to_string();
                        self.callee(&n);
                    }
                    Expr::Path(_) => {}
                    f => self.expr(f),
                }
                c.args.iter_mut().for_each(|a| self.expr(a));
            }
            Expr::MethodCall(m) => {
                self.expr(&mut m.receiver);
                m.args.iter_mut().for_each(|a| self.expr(a));
            }
            Expr::Index(x) => {
                let grads = single_ident(&x.expr)
                    .is_some_and(|i| i == "grads" && matches!(self.classify("grads"), Name::Grads));
                if grads {
                    self.gradients.grads_uses += 1;
                    if let Some(Dim::Literal(i)) = dimension(&x.index) {
                        self.grads_index(i);
                    }
                } else {
                    self.expr(&mut x.expr);
                }
                self.expr(&mut x.index);
            }
            Expr::Field(x) => self.expr(&mut x.base),
            Expr::Binary(x) => {
                self.expr(&mut x.left);
                self.expr(&mut x.right);
            }
            Expr::Assign(x) => {
                self.expr(&mut x.left);
                self.expr(&mut x.right);
            }
            Expr::Unary(x) => self.expr(&mut x.expr),
            Expr::Paren(x) => self.expr(&mut x.expr),
            Expr::Group(x) => self.expr(&mut x.expr),
            Expr::Reference(x) => self.expr(&mut x.expr),
            Expr::Cast(x) => self.expr(&mut x.expr),
            Expr::Try(x) => self.expr(&mut x.expr),
            Expr::Array(x) => x.elems.iter_mut().for_each(|a| self.expr(a)),
            Expr::Tuple(x) => x.elems.iter_mut().for_each(|a| self.expr(a)),
            Expr::Repeat(x) => {
                self.expr(&mut x.expr);
                self.expr(&mut x.len);
            }
            Expr::Range(x) => {
                if let Some(s) = &mut x.start {
                    self.expr(s);
                }
                if let Some(s) = &mut x.end {
                    self.expr(s);
                }
            }
            Expr::Struct(x) => {
                for f in x.fields.iter_mut() {
                    self.expr(&mut f.expr);
                }
                if let Some(r) = &mut x.rest {
                    self.expr(r);
                }
            }
            Expr::Lit(_) | Expr::Infer(_) | Expr::Continue(_) => {}
            Expr::Return(x) => {
                if let Some(v) = &mut x.expr {
                    self.expr(v);
                }
            }
            Expr::Break(x) => {
                if let Some(v) = &mut x.expr {
                    self.expr(v);
                }
            }
            Expr::Block(x) => self.block(&mut x.block),
            Expr::Unsafe(x) => self.block(&mut x.block),
            Expr::Const(x) => self.block(&mut x.block),
            Expr::Loop(x) => self.block(&mut x.body),
            Expr::Closure(x) => {
                self.frames.push(Vec::new());
                for p in &x.inputs {
                    self.bind(p);
                }
                self.expr(&mut x.body);
                self.frames.pop();
            }
            Expr::Let(x) => {
                // Inside an `if`/`while` condition: binds for the branch (the
                // frame the condition's walk pushed).
                self.expr(&mut x.expr);
                self.bind(&x.pat);
            }
            Expr::If(x) => {
                self.frames.push(Vec::new());
                self.expr(&mut x.cond);
                self.block(&mut x.then_branch);
                self.frames.pop();
                if let Some((_, els)) = &mut x.else_branch {
                    self.expr(els);
                }
            }
            Expr::While(x) => {
                self.frames.push(Vec::new());
                self.expr(&mut x.cond);
                self.block(&mut x.body);
                self.frames.pop();
            }
            Expr::ForLoop(x) => {
                self.expr(&mut x.expr);
                self.frames.push(Vec::new());
                self.bind(&x.pat);
                self.block(&mut x.body);
                self.frames.pop();
            }
            Expr::Match(x) => {
                self.expr(&mut x.expr);
                for arm in &mut x.arms {
                    self.frames.push(Vec::new());
                    self.bind(&arm.pat);
                    if let Some((_, g)) = &mut arm.guard {
                        self.expr(g);
                    }
                    self.expr(&mut arm.body);
                    self.frames.pop();
                }
            }
            Expr::Macro(m) => self.macro_use(&m.mac),
            Expr::Async(_) => {
                self.unsupported("an async block", "a formula computes its value directly")
            }
            Expr::Await(_) => self.unsupported("`.await`", "a formula computes its value directly"),
            Expr::Yield(_) => self.unsupported("`yield`", "a formula computes its value directly"),
            Expr::TryBlock(_) => self.unsupported("a `try` block", "use `?` in a helper function"),
            _ => self.unsupported(
                "an expression of a kind the checker does not know",
                SYNTAX_HELP,
            ),
        }
    }

    fn grads_index(&mut self, i: i64) {
        let n = self.scope.f.returns.len();
        match usize::try_from(i) {
            Ok(i) if i < n => self.gradients.grads_indices.push(i),
            _ => {
                let msg = format!("Out of bounds grads access: derivative formula for {} used grads[{i}], but the forward only returns {n} outputs.", self.scope.f.name.name);
                let help = format!(
                    "`grads[i]` is the gradient of output i, for i from 0 to {}",
                    n.saturating_sub(1)
                );
                self.problem(format!("grads[{i}]"), msg, Some(help));
            }
        }
    }
}

/// A dimension argument: an integer literal (`2`, `-1`) or one name.
enum Dim {
    Literal(i64),
    Name(String),
}

/// `e` as a dimension, if it is one.
fn dimension(e: &Expr) -> Option<Dim> {
    match e {
        Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Int(i),
            ..
        }) => i.base10_parse().ok().map(Dim::Literal),
        Expr::Unary(syn::ExprUnary {
            op: syn::UnOp::Neg(_),
            expr,
            ..
        }) => match dimension(expr)? {
            Dim::Literal(d) => Some(Dim::Literal(-d)),
            Dim::Name(_) => None,
        },
        Expr::Paren(p) => dimension(&p.expr),
        _ => single_ident(e).map(|i| Dim::Name(i.unraw().to_string())),
    }
}

impl std::fmt::Display for Dim {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            // torchgen's field names: `self_sym_argsize_minus_1`.
            Dim::Literal(d) if *d < 0 => write!(f, "minus_{}", d.unsigned_abs()),
            Dim::Literal(d) => write!(f, "{d}"),
            Dim::Name(n) => f.write_str(n),
        }
    }
}

/// The identifier of a path expression of one plain segment.
fn single_ident(e: &Expr) -> Option<&syn::Ident> {
    match e {
        Expr::Path(p)
            if p.qself.is_none()
                && p.path.leading_colon.is_none()
                && p.path.segments.len() == 1
                && p.path.segments[0].arguments.is_none() =>
        {
            Some(&p.path.segments[0].ident)
        }
        _ => None,
    }
}

/// A path expression naming `n`.
fn ident_expr(n: &str) -> Expr {
    let ident = syn::Ident::new(n, proc_macro2::Span::call_site());
    syn::parse_quote!(#ident)
}

fn push_once(v: &mut Vec<String>, n: &str) {
    if !v.iter().any(|x| x == n) {
        v.push(n.to_string());
    }
}
