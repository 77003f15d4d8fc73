//! Lower: all naming and ordering policy between the model and emission.
//!
//! Operator ids are stable: entries sorted by qualified name (`aten::add.Tensor`),
//! so the id of an operator does not depend on where it sits in the YAML. Rust
//! names follow the rules of [`opforge_schema::names`] (exact forms, convenience
//! names from the schema), and each operator's runtime table entry is the one
//! conversion of [`opforge_schema::tables::op_schema`]. Nothing is dropped: a
//! binding of an operator the plan does not have is a [`Skip`] with a reason.
//!
//! The functions `autogen:` adds ([`generated_entries`], torchgen's
//! `add_generated_native_functions`) are operators like the file's entries,
//! each with a CompositeExplicitAutograd kernel `composite::<ident>` the
//! generator writes ([`Generated`]); so is the kernel of a `*_copy` entry
//! tagged `view_copy` (torchgen's `gen_composite_view_copy_kernel`).

use opforge_schema::diag::{Diagnostic, Diagnostics};
use opforge_schema::groups::{group, OperatorGroup};
use opforge_schema::load::SchemaFile;
use opforge_schema::model::{FunctionSchema, NativeFunction, SchemaKind};
use opforge_schema::names::{api_names_of, op_ident};
use opforge_schema::overrides::{overridable, Overridable};
use opforge_schema::python::{derive_bindings, Binding, DeprecatedEntry};
use opforge_schema::tables::{generated_entries, op_schema, OpSchema};
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
    /// The kernel the generator writes for it, if it writes one.
    pub generated: Option<Generated>,
}

/// A kernel the generator writes (torchgen's `gen_composite_functional_kernel`,
/// `gen_composite_out_kernel`, `gen_composite_view_copy_kernel`); indices are
/// into [`Plan::ops`]. Registered at the first `dispatch:` row of the operator
/// (`CompositeExplicitAutograd: composite::zero` for a function `autogen:`
/// adds, the entry's own row for a `view_copy` one).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Generated {
    /// A functional variant `autogen:` adds (`zero`): clones the arguments
    /// `target` (the in-place or mutable variant, `zero_`) writes, calls it on
    /// the clones, and returns its results that alias no argument, then the
    /// clones.
    Functional {
        /// The operator it calls.
        target: usize,
    },
    /// An out= variant `autogen:` adds (`clone.out`): calls the functional
    /// variant, resizes each `out` to its result (`resize_out_helper`), copies
    /// the result in (`copy_arg`: dtype and device must agree) and returns
    /// the `out`s.
    Out {
        /// The functional operator it calls.
        functional: usize,
    },
    /// A `view_copy` operator (`transpose_copy.int`): calls its view
    /// (`transpose.int`), then returns a contiguous clone of the result (of
    /// each element for `Tensor[]`).
    ViewCopy {
        /// The view operator it calls.
        view: usize,
    },
    /// The generator should write the kernel but cannot; why. Emitting
    /// kernels reports it at the operator's line.
    Unsupported(String),
}

impl PlannedOp<'_> {
    /// The schema.
    pub fn schema(&self) -> &FunctionSchema {
        &self.entry.func
    }

    /// Does it take its values boxed (`...` or `Any` in its schema:
    /// [`crate::rust_types::is_boxed`])? Then it has no typed API.
    pub fn is_boxed(&self) -> bool {
        crate::rust_types::is_boxed(&self.entry.func)
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
    // The functions `autogen:` adds, kernels named by the file's convention
    // (`composite::<ident>`). Leaked like the table entries: a plan lives as
    // long as the build that makes it.
    let generated: &'static [NativeFunction] = Box::leak(
        generated_entries(&file.entries)
            .map_err(whole)?
            .into_boxed_slice(),
    );
    let all: Vec<&NativeFunction> = file.entries.iter().chain(generated).collect();
    if all.len() > MAX_OPERATORS {
        return Err(whole(format!(
            "{} operators with the {} `autogen:` adds: a schema file holds at most {MAX_OPERATORS} (`OpId` is a `u16`); split it into several crates",
            all.len(),
            generated.len()
        )));
    }
    let names = api_names_of(&all).map_err(whole)?;
    let mut order: Vec<(&NativeFunction, String)> = all.into_iter().zip(names).collect();
    order.sort_by_cached_key(|(nf, _)| sort_key(nf));
    let mut ops: Vec<PlannedOp> = order
        .into_iter()
        .map(|(entry, api_name)| PlannedOp {
            entry,
            ident: op_ident(&entry.func.name),
            api_name,
            kernels: opforge_schema::tables::kernel_rows(entry),
            table: op_schema(&entry.func, Some(entry)),
            generated: None,
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
    let plans: Vec<Option<Generated>> = (0..ops.len())
        .map(|i| generated_kernel(&ops, &groups, i))
        .collect();
    for (op, g) in ops.iter_mut().zip(plans) {
        op.generated = g;
    }
    let bindings = derive_bindings(&file.entries, deprecated).map_err(whole)?;
    let overridable = overridable(&bindings).map_err(whole)?;
    // Signatures whose operators the plan does not have get no `OpId`; that is
    // recorded, not hidden.
    let mut skips = Vec::new();
    for b in &bindings {
        for src in &b.sources {
            let names = std::iter::once(&src.functional).chain(src.out.as_ref());
            for n in names {
                if find_in(&ops, n).is_none() {
                    skips.push(Skip {
                        op: n.clone(),
                        reason: format!("`{}` binds it, but it is neither an entry of the file nor added by `autogen:`: no OpId", b.name),
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

/// The kernel the generator writes for operator `i`, if any: a function
/// `autogen:` added (tagged `generated`) and a `*_copy` entry tagged
/// `view_copy` whose view (the name without `_copy`, same overload) the plan
/// has. Entries tagged `view_copy` under another name (`slice_scatter`) have
/// kernels of their own.
fn generated_kernel(ops: &[PlannedOp], groups: &[OperatorGroup], i: usize) -> Option<Generated> {
    let f = ops[i].entry;
    let name = &f.func.name;
    if f.has_tag("generated") {
        let g = groups.iter().find(|g| g.members().any(|m| m == i))?;
        let written = |m: Option<usize>| m.filter(|&m| !ops[m].entry.has_tag("generated"));
        return Some(match f.func.kind() {
            SchemaKind::Functional => match written(g.inplace).or(written(g.mutable)) {
                Some(target) => Generated::Functional { target },
                None => Generated::Unsupported(format!(
                    "`{}` is a functional variant `autogen:` adds, but its group has no written in-place or mutable variant to call",
                    f.name()
                )),
            },
            SchemaKind::Out => match g.functional {
                Some(functional) => Generated::Out { functional },
                None => Generated::Unsupported(format!(
                    "`{}` is an out= variant `autogen:` adds, but its group has no functional variant to call",
                    f.name()
                )),
            },
            k => Generated::Unsupported(format!(
                "`{}` is a {k} variant `autogen:` adds: the generator writes kernels for functional and out= variants only",
                f.name()
            )),
        });
    }
    if !f.has_tag("view_copy") {
        return None;
    }
    let base = name.name.base.strip_suffix("_copy")?;
    if name.name.inplace || f.func.kind() != SchemaKind::Functional {
        return Some(Generated::Unsupported(format!(
            "`{}` is tagged `view_copy`, but only a functional `*_copy` operator gets a generated kernel",
            f.name()
        )));
    }
    let view = if name.overload.is_empty() {
        base.to_string()
    } else {
        format!("{base}.{}", name.overload)
    };
    let view = format!("{}::{view}", name.namespace());
    Some(match find_in(ops, &view) {
        Some(view) => Generated::ViewCopy { view },
        None => Generated::Unsupported(format!(
            "`{}` is tagged `view_copy`, but there is no view operator `{view}` to call",
            f.name()
        )),
    })
}
