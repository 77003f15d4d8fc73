//! Lower: all naming and ordering policy between the model and emission.
//!
//! Rust identifiers follow one tested rule ([`op_ident`], [`arg_ident`]); operator ids
//! are stable: entries sorted by qualified name (`aten::add.Tensor`), so the id of an
//! operator does not depend on where it sits in the YAML. Nothing is dropped
//! silently: anything not emitted is a [`Skip`] with a reason.

use opforge_schema::groups::{group, OperatorGroup};
use opforge_schema::load::SchemaFile;
use opforge_schema::model::{FunctionSchema, NativeFunction};
use opforge_schema::overrides::{overridable, Overridable};
use opforge_schema::python::{derive_bindings, Binding, DeprecatedEntry};
use opforge_schema::validate::cpp_name;

/// Rust keywords (strict and reserved), which get a trailing `_` as identifiers.
pub const RUST_KEYWORDS: &[&str] = &[
    "as", "async", "await", "break", "const", "continue", "crate", "dyn", "else", "enum", "extern",
    "false", "fn", "for", "gen", "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut",
    "pub", "ref", "return", "self", "Self", "static", "struct", "super", "trait", "true", "try",
    "type", "unsafe", "use", "where", "while", "abstract", "become", "box", "do", "final", "macro",
    "override", "priv", "typeof", "unsized", "virtual", "yield",
];

/// The Rust identifier of an operator: `.` becomes `_`; a name that is a Rust keyword
/// gets a trailing `_`; other namespaces than `aten` are prefixed (`mylib_scale`).
///
/// ```
/// use opforge_codegen::lower::op_ident;
/// use opforge_schema::schema::parse_operator_name_str as n;
/// assert_eq!(op_ident(&n("add.Tensor").unwrap()), "add_Tensor");
/// assert_eq!(op_ident(&n("add_.Tensor").unwrap()), "add__Tensor");
/// assert_eq!(op_ident(&n("neg").unwrap()), "neg");
/// assert_eq!(op_ident(&n("mylib::scale").unwrap()), "mylib_scale");
/// ```
pub fn op_ident(name: &opforge_schema::model::OperatorName) -> String {
    let mut s = name.unqualified().replace('.', "_");
    if let Some(ns) = name.namespace.as_deref().filter(|ns| *ns != "aten") {
        s = format!("{ns}_{s}");
    }
    keyword_escape(s)
}

/// The Rust identifier of an argument: `self` → `self_`, keywords get a trailing `_`.
///
/// ```
/// use opforge_codegen::lower::arg_ident;
/// assert_eq!(arg_ident("self"), "self_");
/// assert_eq!(arg_ident("type"), "type_");
/// assert_eq!(arg_ident("other"), "other");
/// ```
pub fn arg_ident(name: &str) -> String {
    keyword_escape(name.to_string())
}

fn keyword_escape(mut s: String) -> String {
    if RUST_KEYWORDS.contains(&s.as_str()) {
        s.push('_');
    }
    s
}

/// Something the generator did not emit, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Skip {
    /// The operator (`name.overload`).
    pub op: String,
    /// Why it was skipped.
    pub reason: String,
}

/// One operator as it will be emitted.
#[derive(Clone, Debug)]
pub struct PlannedOp<'a> {
    /// The entry.
    pub entry: &'a NativeFunction,
    /// Rust identifier (`add_Tensor`), also the `OpId` variant.
    pub ident: String,
    /// Dispatch rows, one per key, with the implicit CompositeImplicitAutograd kernel
    /// made explicit.
    pub kernels: Vec<(String, String)>,
}

impl PlannedOp<'_> {
    /// The schema.
    pub fn schema(&self) -> &FunctionSchema {
        &self.entry.func
    }
}

/// What emission works from.
#[derive(Clone, Debug)]
pub struct Plan<'a> {
    /// The file name the plan was made from.
    pub file: &'a str,
    /// Operators sorted by qualified name; the index is the `OpId`.
    pub ops: Vec<PlannedOp<'a>>,
    /// Variant groups, as indices into `ops`.
    pub groups: Vec<OperatorGroup>,
    /// What was not emitted.
    pub skips: Vec<Skip>,
    /// The Python-API bindings PyTorch would generate, sorted by name.
    pub bindings: Vec<Binding>,
    /// The overridable functions and their testing stubs.
    pub overridable: Vec<Overridable>,
}

impl Plan<'_> {
    /// The index of the operator named `name.overload` (in the `aten` namespace or the
    /// one given as `ns::name.overload`).
    pub fn find(&self, name: &str) -> Option<usize> {
        let (ns, name) = name.split_once("::").unwrap_or(("aten", name));
        self.ops
            .binary_search_by(|o| {
                (o.entry.func.name.namespace(), o.entry.name().as_str()).cmp(&(ns, name))
            })
            .ok()
    }
}

fn find_in(ops: &[PlannedOp], name: &str) -> Option<usize> {
    let (ns, name) = name.split_once("::").unwrap_or(("aten", name));
    ops.binary_search_by(|o| {
        (o.entry.func.name.namespace(), o.entry.name().as_str()).cmp(&(ns, name))
    })
    .ok()
}

/// The sort key of an operator: (namespace, `name.overload`).
fn sort_key(nf: &NativeFunction) -> (String, String) {
    (nf.func.name.namespace().to_string(), nf.name())
}

/// Builds the plan: sorts, names, groups, derives the Python bindings (with the
/// `deprecated.yaml` entries given) and the overridable list. Fails if grouping does
/// (two variants of the same kind with one signature) or the bindings cannot be
/// derived (PyTorch's own generator errors).
pub fn lower<'a>(file: &'a SchemaFile, deprecated: &[DeprecatedEntry]) -> Result<Plan<'a>, String> {
    let mut order: Vec<&NativeFunction> = file.entries.iter().collect();
    order.sort_by_cached_key(|nf| sort_key(nf));
    let ops: Vec<PlannedOp> = order
        .into_iter()
        .map(|entry| {
            let mut kernels: Vec<(String, String)> = entry
                .dispatch
                .iter()
                .flat_map(|row| row.keys.iter().map(|k| (k.clone(), row.kernel.clone())))
                .collect();
            if kernels.is_empty() && entry.is_composite_implicit() {
                kernels.push(("CompositeImplicitAutograd".into(), cpp_name(&entry.func)));
            }
            PlannedOp {
                entry,
                ident: op_ident(&entry.func.name),
                kernels,
            }
        })
        .collect();
    // Group in id order so that group member indices are op indices.
    let groups = group(ops.iter().map(|o| o.entry))?;
    let bindings = derive_bindings(&file.entries, deprecated)?;
    let overridable = overridable(&bindings)?;
    // Signatures whose operators are generated by autogen (not in this file) have no
    // `OpId`; that is recorded, not hidden.
    let mut skips = Vec::new();
    for b in &bindings {
        for src in &b.sources {
            let names = std::iter::once(&src.functional).chain(src.out.as_ref());
            for n in names {
                if find_in(&ops, n).is_none() {
                    skips.push(Skip {
                        op: n.clone(),
                        reason: format!("`{}` binds it, but it is generated by autogen, not an entry of the file: no OpId", b.name),
                    });
                }
            }
        }
    }
    skips.sort_by(|a, b| a.op.cmp(&b.op));
    skips.dedup_by(|a, b| a.op == b.op);
    Ok(Plan {
        file: &file.file,
        ops,
        groups,
        skips,
        bindings,
        overridable,
    })
}
