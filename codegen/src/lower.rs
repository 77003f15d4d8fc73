//! Lower: all naming and ordering policy between the model and emission.
//!
//! Operator ids are stable: entries sorted by qualified name (`aten::add.Tensor`),
//! so the id of an operator does not depend on where it sits in the YAML. Rust
//! names follow the rules of [`opforge_schema::names`] (exact forms, convenience
//! names from the schema), and each operator's runtime table entry is the one
//! conversion of [`opforge_schema::tables::op_schema`]. Nothing is dropped: a
//! binding of an operator the file does not have (PyTorch's `autogen`) is a
//! [`Skip`] with a reason.

use opforge_schema::diag::{Diagnostic, Diagnostics};
use opforge_schema::groups::{group, OperatorGroup};
use opforge_schema::load::SchemaFile;
use opforge_schema::model::{FunctionSchema, NativeFunction};
use opforge_schema::names::{api_names, op_ident};
use opforge_schema::overrides::{overridable, Overridable};
use opforge_schema::python::{derive_bindings, Binding, DeprecatedEntry};
use opforge_schema::tables::{op_schema, OpSchema};
use std::collections::HashMap;

pub use opforge_schema::names::{arg_ident, RUST_KEYWORDS};

/// The most operators one schema file may have: `OpId` is `#[repr(u16)]`.
pub const MAX_OPERATORS: usize = u16::MAX as usize + 1;

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
    /// The convenience name (`torch::<api_name>`, `Tensor::<api_name>`).
    pub api_name: String,
    /// Dispatch rows, one per key, with the implicit CompositeImplicitAutograd kernel
    /// made explicit.
    pub kernels: Vec<(String, String)>,
    /// The runtime's table entry (the one model → table conversion).
    pub table: &'static OpSchema,
}

impl PlannedOp<'_> {
    /// The schema.
    pub fn schema(&self) -> &FunctionSchema {
        &self.entry.func
    }

    /// `ns::name.overload` (`aten::add.Tensor`, `aten::neg`).
    pub fn qualified_name(&self) -> String {
        format!(
            "{}::{}",
            self.entry.func.name.namespace(),
            self.entry.name()
        )
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
        find_in(&self.ops, name)
    }

    /// A diagnostic at the entry of operator `i`.
    pub fn diagnostic(&self, i: usize, message: impl Into<String>) -> Diagnostic {
        let op = &self.ops[i];
        let mut d = Diagnostic::new(self.file, op.entry.line, message);
        d.entry = Some(op.entry.name());
        d
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

/// Builds the plan: sorts, names, converts, groups, derives the Python bindings
/// (with the `deprecated.yaml` entries given) and the overridable list. Fails with
/// `file:line` diagnostics if two operators get one Rust identifier, if grouping
/// fails (two variants of the same kind with one signature) or the bindings cannot
/// be derived (PyTorch's own generator errors).
pub fn lower<'a>(
    file: &'a SchemaFile,
    deprecated: &[DeprecatedEntry],
) -> Result<Plan<'a>, Diagnostics> {
    let whole = |e: String| Diagnostics(vec![Diagnostic::new(&file.file, 0, e)]);
    if file.entries.len() > MAX_OPERATORS {
        return Err(whole(format!(
            "{} operators: a schema file holds at most {MAX_OPERATORS} (`OpId` is a `u16`); split it into several crates",
            file.entries.len()
        )));
    }
    let names = api_names(&file.entries).map_err(whole)?;
    let mut order: Vec<(&NativeFunction, String)> = file.entries.iter().zip(names).collect();
    order.sort_by_cached_key(|(nf, _)| sort_key(nf));
    let ops: Vec<PlannedOp> = order
        .into_iter()
        .map(|(entry, api_name)| PlannedOp {
            entry,
            ident: op_ident(&entry.func.name),
            api_name,
            kernels: opforge_schema::tables::kernel_rows(entry),
            table: op_schema(&entry.func, Some(entry)),
        })
        .collect();
    // Two operators with one Rust identifier (`foo.bar` and `foo_bar`).
    let mut seen: HashMap<&str, usize> = HashMap::new();
    let mut diags = Vec::new();
    for (i, op) in ops.iter().enumerate() {
        if let Some(&j) = seen.get(op.ident.as_str()) {
            let mut d = Diagnostic::new(
                &file.file,
                op.entry.line,
                format!(
                    "`{}` and `{}` (line {}) have the same Rust identifier `{}`",
                    op.entry.name(),
                    ops[j].entry.name(),
                    ops[j].entry.line,
                    op.ident
                ),
            );
            d.entry = Some(op.entry.name());
            d.help = Some("rename one of the two overloads".into());
            diags.push(d);
        } else {
            seen.insert(&op.ident, i);
        }
    }
    if !diags.is_empty() {
        return Err(Diagnostics(diags));
    }
    // Group in id order so that group member indices are op indices.
    let groups = group(ops.iter().map(|o| o.entry)).map_err(whole)?;
    let bindings = derive_bindings(&file.entries, deprecated).map_err(whole)?;
    let overridable = overridable(&bindings).map_err(whole)?;
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
