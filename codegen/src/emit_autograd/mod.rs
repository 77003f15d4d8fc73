//! Emit: the Autograd layer's generated file, `autograd.rs`, from a checked
//! derivatives file ([`crate::derivatives::check`]) and the [`Plan`].
//!
//! Per entry with a differentiable argument, a node type named as PyTorch
//! names it ([`node_names`]: `MulBackward0`) holding what the entry's
//! formulas need saved, and its `Backward` impl: each wanted input's gradient
//! from its formula (the engine checks each against the input's sizes and
//! dtype, as PyTorch's `validate_outputs`), and `release` of the saved
//! tensors.
//! Per operator that gets formulas (the entry's own and, by torchgen's rules,
//! its in-place and out= variants), an Autograd kernel registered through
//! [`crate::kernel::generated_registration`] (the registration without the
//! signature-checking traits, which cannot fire on generated signatures):
//!
//! - functional and in-place: `Recording::begin` (`begin_inplace`), what the
//!   node saves of the inputs taken before the call (an in-place call saves a
//!   clone of `self` if a formula reads it whole), the redispatch below
//!   autograd, then `Recording::finish` with the outputs it saves;
//! - out=: `check_out` (PyTorch's refusal when something requires grad), then
//!   the redispatch.
//!
//! Code size: only operators with formulas get a kernel (nothing is emitted
//! for the others, which fall through to their backend as before); the
//! record/redispatch/finish steps and the gradient reduction are shared runtime
//! functions, so a kernel is about ten lines and a node's `apply` one block per
//! input. The node types are `nodes`, the kernels `kernels`, their forward
//! mode `forward`.

use crate::derivatives::CheckedFile;
use crate::emit_api::Options;
use crate::lower::Plan;
use opforge_schema::derivatives::{DerivativesFile, Differentiability};
use opforge_schema::diag::{Diagnostic, Diagnostics};
use opforge_schema::model::FunctionSchema;
use proc_macro2::TokenStream;
use quote::quote;
use std::collections::BTreeMap;

mod forward;
mod kernels;
mod nodes;

use kernels::{differentiable_outputs, kernel, Outputs};
use nodes::node;

/// torchgen's node names (`load_derivatives.py`): per entry with at least one
/// differentiable argument, the base name (without overload) split at `_`,
/// each part title-cased (Python's `str.title`), joined, `Backward` appended
/// (`ForwardBackward` shortened to `Backward`), and a counter per such prefix
/// in file order: `sum` → `SumBackward0`, `sum.dim_IntList` → `SumBackward1`,
/// `_to_copy` → `ToCopyBackward0`. `None` for an entry without one.
pub fn node_names(d: &DerivativesFile, checked: &CheckedFile) -> Vec<Option<String>> {
    let mut counters: BTreeMap<String, usize> = BTreeMap::new();
    checked
        .entries
        .iter()
        .map(|e| {
            let set = e.sets.iter().find(|s| s.key == "Default")?;
            if set.differentiable.is_empty() {
                return None;
            }
            let base = d.entries[e.entry].schema.name.name.to_string();
            let prefix = op_prefix(&base);
            let n = counters.entry(prefix.clone()).or_insert(0);
            let name = format!("{prefix}{n}");
            *n += 1;
            Some(name)
        })
        .collect()
}

fn op_prefix(base: &str) -> String {
    let camel: String = base.split('_').map(title).collect();
    format!("{camel}Backward").replace("ForwardBackward", "Backward")
}

/// Python's `str.title`: a letter after a non-letter upper-cased, the others
/// lower-cased.
fn title(s: &str) -> String {
    let mut out = String::new();
    let mut prev_letter = false;
    for c in s.chars() {
        if c.is_alphabetic() {
            if prev_letter {
                out.extend(c.to_lowercase());
            } else {
                out.extend(c.to_uppercase());
            }
            prev_letter = true;
        } else {
            out.push(c);
            prev_letter = false;
        }
    }
    out
}

/// The `autograd.rs` file: node types and Autograd kernels, formatted. Every
/// construct the generator does not support yet is a diagnostic at its entry.
/// `opts` says whose operators they are: the kernels redispatch through that
/// crate's typed API ([`Options::at_from_autograd`]); what the formulas call
/// is resolved where the file is included (the runtime's `at` and helpers,
/// and the crate's own helpers).
pub fn autograd(
    plan: &Plan,
    opts: &Options,
    d: &DerivativesFile,
    checked: &CheckedFile,
) -> Result<String, Diagnostics> {
    autograd_tokens(plan, opts, d, checked).map(|t| crate::emit::format(plan, t))
}

/// The tokens of [`autograd`].
pub fn autograd_tokens(
    plan: &Plan,
    opts: &Options,
    d: &DerivativesFile,
    checked: &CheckedFile,
) -> Result<TokenStream, Diagnostics> {
    let at: syn::Path = syn::parse_str(opts.at_from_autograd()).map_err(|e| {
        Diagnostics(vec![Diagnostic::new(
            &d.file,
            0,
            format!("the typed API's path does not parse: {e}"),
        )])
    })?;
    let names = node_names(d, checked);
    let mut diags = Vec::new();
    let mut items = Vec::new();
    let diag = |line: usize, entry: &str, msg: String| {
        Diagnostic::new(&d.file, line, msg).entry(entry.to_string())
    };
    // Node types, one per entry.
    for (e, name) in checked.entries.iter().zip(&names) {
        let Some(name) = name else { continue };
        let Some(set) = e.sets.iter().find(|s| s.key == "Default") else {
            continue;
        };
        let schema = &d.entries[e.entry].schema;
        match node(name, schema, set) {
            Ok(t) => items.push(t),
            Err(m) => diags.push(diag(e.line, &e.operator, m)),
        }
    }
    // Kernels, one per operator that gets formulas.
    for (op, formulas) in &checked.resolution.operators {
        let entry = formulas.entry;
        let Some(e) = checked.entries.iter().find(|c| c.entry == entry) else {
            continue;
        };
        let Some(name) = &names[checked
            .entries
            .iter()
            .position(|c| c.entry == entry)
            .unwrap_or(0)]
        else {
            continue;
        };
        let Some(set) = e.sets.iter().find(|s| s.key == "Default") else {
            continue;
        };
        let Some(i) = plan.find(op) else { continue };
        let planned = &plan.ops[i];
        let written = d.entries[entry]
            .output_differentiability
            .as_ref()
            .map(|o| &o.value);
        let flags = match written {
            Some(Differentiability::Flags(v)) => Some(v.as_slice()),
            _ => None,
        };
        // With a condition (`_to_copy`'s `!dtype || isDifferentiableType(*dtype)`),
        // an output of another dtype simply gets no history.
        let conditional = matches!(written, Some(Differentiability::Condition(_)));
        let outputs = differentiable_outputs(planned.schema(), flags);
        let outputs = Outputs {
            history: &outputs,
            conditional,
        };
        match kernel(
            planned.schema(),
            &at,
            &planned.ident,
            op,
            name,
            set,
            outputs,
        ) {
            Ok(t) => items.push(t),
            Err(m) => diags.push(diag(e.line, op, m)),
        }
    }
    if !diags.is_empty() {
        diags.sort_by_key(|d| d.line);
        return Err(Diagnostics(diags));
    }
    Ok(quote!(#(#items)*))
}

/// Every identifier in `ts` (also inside groups).
fn idents_in(ts: &TokenStream, out: &mut std::collections::HashSet<String>) {
    for tt in ts.clone() {
        match tt {
            proc_macro2::TokenTree::Ident(i) => {
                out.insert(i.to_string());
            }
            proc_macro2::TokenTree::Group(g) => idents_in(&g.stream(), out),
            _ => {}
        }
    }
}

/// The index of the output a forward formula names (`result`, `resultN`, a
/// named return).
fn output_index(schema: &FunctionSchema, name: &str) -> Option<usize> {
    if name == "result" && schema.returns.len() == 1 {
        return Some(0);
    }
    if let Some(k) = name.strip_prefix("result").and_then(|k| k.parse().ok()) {
        return Some(k);
    }
    schema
        .returns
        .iter()
        .position(|r| r.name.as_deref() == Some(name))
}

#[cfg(test)]
mod tests {
    use super::{op_prefix, title};

    #[test]
    fn prefixes_follow_torchgen() {
        assert_eq!(op_prefix("mul"), "MulBackward");
        assert_eq!(op_prefix("_to_copy"), "ToCopyBackward");
        assert_eq!(op_prefix("mul_"), "MulBackward");
        assert_eq!(op_prefix("index_select"), "IndexSelectBackward");
        assert_eq!(op_prefix("_cudnn_rnn_forward"), "CudnnRnnBackward");
        assert_eq!(title("log10"), "Log10");
        assert_eq!(title("conv2d"), "Conv2D");
    }
}
