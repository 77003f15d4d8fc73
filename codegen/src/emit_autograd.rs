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
//! input. Forward mode: see [`Forward`].

use crate::derivatives::{CheckedFile, CheckedSet, Saved, SavedKind};
use crate::lower::Plan;
use crate::rust_types::{param_type, result_type, show};
use opforge_schema::derivatives::{Body, DerivativesFile, Differentiability, Direction};
use opforge_schema::diag::{Diagnostic, Diagnostics};
use opforge_schema::model::{FunctionSchema, SchemaKind};
use opforge_schema::names::arg_ident;
use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use std::collections::BTreeMap;

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

/// What a saved value is in the node: its field type and how the kernel
/// takes it from an argument before the call (`None`: an output, saved after).
struct Field {
    ident: syn::Ident,
    ty: TokenStream,
    take: Option<TokenStream>,
    output: Option<usize>,
    kind: FieldKind,
}

/// How a node keeps a saved value, which decides how `apply` unpacks it and
/// `release` frees it.
#[derive(Clone, Copy, PartialEq, Eq)]
enum FieldKind {
    /// A `SavedTensor`.
    Tensor,
    /// An `Option<SavedTensor>` (a `Tensor?` argument).
    OptionalTensor,
    /// A `Vec<SavedTensor>` (a `Tensor[]` argument).
    TensorList,
    /// A value, cloned out.
    Value,
    /// A `Copy` value, read out.
    Copy,
    /// Sizes (`x.sizes()`): kept inline (`formulas::Sizes`), read as a slice.
    Sizes,
}

impl FieldKind {
    /// `let x = …;` in a node's `apply`.
    fn unpack(self, i: &syn::Ident) -> TokenStream {
        match self {
            FieldKind::Tensor => quote!(let #i = self.#i.unpack()?;),
            FieldKind::OptionalTensor => quote! {
                let #i: ::core::option::Option<::opforge::Tensor> = match &self.#i {
                    ::core::option::Option::Some(s) => ::core::option::Option::Some(s.unpack()?),
                    ::core::option::Option::None => ::core::option::Option::None,
                };
            },
            FieldKind::TensorList => quote! {
                let #i: ::std::vec::Vec<::opforge::Tensor> = self.#i
                    .iter()
                    .map(::opforge::autograd::SavedTensor::unpack)
                    .collect::<::opforge::Result<_>>()?;
            },
            FieldKind::Value => quote!(let #i = self.#i.clone();),
            FieldKind::Copy => quote!(let #i = self.#i;),
            // A copy of the inline sizes: formulas borrow it (`&self.sizes()`).
            FieldKind::Sizes => quote!(let #i: Sizes = self.#i.clone();),
        }
    }

    /// Frees the saved tensors in `release`.
    fn release(self, i: &syn::Ident) -> TokenStream {
        match self {
            FieldKind::Tensor => quote!(self.#i.release();),
            FieldKind::OptionalTensor => quote! {
                if let ::core::option::Option::Some(s) = &mut self.#i { s.release(); }
            },
            FieldKind::TensorList => quote!(self.#i.iter_mut().for_each(|s| s.release());),
            FieldKind::Value | FieldKind::Copy | FieldKind::Sizes => TokenStream::new(),
        }
    }

    /// Whether it holds tensors (and through them, perhaps, other graphs).
    fn owns_tensors(self) -> bool {
        matches!(
            self,
            FieldKind::Tensor | FieldKind::OptionalTensor | FieldKind::TensorList
        )
    }
}

/// How a differentiable argument becomes node inputs.
#[derive(Clone, Copy, PartialEq, Eq)]
enum InputKind {
    /// `Tensor` (`&Tensor`, or `&mut Tensor` in place): one input.
    Single,
    /// `Tensor?`: one input, absent when `None`.
    Optional,
    /// `Tensor[]`: one input per element.
    List,
}

/// The kinds of a set's differentiable arguments, in order.
fn input_kinds(
    schema: &FunctionSchema,
    set: &CheckedSet,
) -> std::result::Result<Vec<InputKind>, String> {
    set.differentiable
        .iter()
        .map(|name| {
            let a = schema
                .arguments
                .all
                .iter()
                .find(|a| &a.name == name)
                .ok_or_else(|| format!("no argument `{name}`"))?;
            let t = param_type(a).map_err(|e| e.to_string())?;
            match show(&t).as_str() {
                "&Tensor" | "&mut Tensor" => Ok(InputKind::Single),
                "Option<&Tensor>" => Ok(InputKind::Optional),
                "&[Tensor]" => Ok(InputKind::List),
                other => Err(format!(
                    "the differentiable argument `{name}` is a `{other}`: the generator supports Tensor, Tensor? and Tensor[]"
                )),
            }
        })
        .collect()
}

fn field(s: &Saved, schema: &FunctionSchema, inplace: bool) -> std::result::Result<Field, String> {
    let ident = format_ident!("{}", s.ident());
    let of = format_ident!("{}", arg_ident(&s.of));
    let arg = schema.arguments.all.iter().find(|a| a.name == s.of);
    let saved_tensor = quote!(::opforge::autograd::SavedTensor);
    let is_list = arg.is_some_and(|a| param_type(a).is_ok_and(|t| show(&t) == "&[Tensor]"));
    let (ty, take, output, kind) = match &s.kind {
        SavedKind::Tensor => {
            let take = if inplace && s.of == "self" {
                // The value before the write (torchgen's `original_self`),
                // cloned with its history (`CloneBackward0`), so that a
                // double backward reaches `self`'s history through it.
                quote!(::opforge::autograd::SavedTensor::input(&::opforge::at::clone(#of, None)?))
            } else {
                quote!(::opforge::autograd::SavedTensor::input(#of))
            };
            (saved_tensor, Some(take), None, FieldKind::Tensor)
        }
        SavedKind::OptionalTensor => (
            quote!(::core::option::Option<#saved_tensor>),
            Some(quote!(#of.map(::opforge::autograd::SavedTensor::input))),
            None,
            FieldKind::OptionalTensor,
        ),
        SavedKind::TensorList => (
            quote!(::std::vec::Vec<#saved_tensor>),
            Some(quote!(#of.iter().map(::opforge::autograd::SavedTensor::input).collect())),
            None,
            FieldKind::TensorList,
        ),
        SavedKind::Output { index, ty } => {
            if ty.to_string() != "Tensor" {
                return Err(format!("saving the output `{}` of type `{ty}` is not supported by the generator yet (only Tensor outputs)", s.of));
            }
            (saved_tensor, None, Some(*index), FieldKind::Tensor)
        }
        SavedKind::Value(_) => {
            let a = arg.ok_or_else(|| format!("no argument `{}`", s.of))?;
            let t = param_type(a).map_err(|e| e.to_string())?;
            let shown = show(&t);
            let (ty, take) = match shown.as_str() {
                "&[i64]" => (quote!(::std::vec::Vec<i64>), quote!(#of.to_vec())),
                "Option<&[i64]>" => (
                    quote!(::core::option::Option<::std::vec::Vec<i64>>),
                    quote!(#of.map(<[i64]>::to_vec)),
                ),
                "&str" => (quote!(::std::string::String), quote!(#of.to_string())),
                "Option<&str>" => (
                    quote!(::core::option::Option<::std::string::String>),
                    quote!(#of.map(str::to_string)),
                ),
                s if s.contains('&') => {
                    return Err(format!(
                    "saving the argument `{}` of type `{s}` is not supported by the generator yet",
                    a.name
                ))
                }
                // The other values (numbers, `Scalar`, `DType`, their
                // optionals) are `Copy`.
                _ => {
                    return Ok(Field {
                        ident,
                        ty: quote!(#t),
                        take: Some(quote!(#of)),
                        output: None,
                        kind: FieldKind::Copy,
                    })
                }
            };
            (ty, Some(take), None, FieldKind::Value)
        }
        SavedKind::Property(_) => {
            let record = s.record.as_deref().unwrap_or_default();
            let method = record
                .split('.')
                .nth(1)
                .map(|m| m.trim_end_matches("()"))
                .unwrap_or_default();
            let (ty, call) = match method {
                "sizes" | "sym_sizes" => (quote!(::std::vec::Vec<i64>), quote!(sizes)),
                "shape" => (quote!(::std::vec::Vec<usize>), quote!(shape)),
                "numel" | "sym_numel" => (quote!(usize), quote!(numel)),
                "dim" => (quote!(usize), quote!(dim)),
                "dtype" | "scalar_type" => (quote!(::opforge::DType), quote!(dtype)),
                "device" => (quote!(::opforge::Device), quote!(device)),
                other => {
                    return Err(format!(
                        "saving `{record}` (`{other}`) is not supported by the generator yet (sizes, shape, numel, dim, dtype, device)"
                    ))
                }
            };
            if is_list {
                // Per element of a `Tensor[]` (`tensors.sizes()`: each one's sizes).
                (
                    quote!(::std::vec::Vec<#ty>),
                    Some(quote!(#of.iter().map(|t| t.#call()).collect::<::std::vec::Vec<_>>())),
                    None,
                    FieldKind::Value,
                )
            } else if matches!(method, "sizes" | "sym_sizes") {
                // Inline up to five dimensions: recording allocates nothing
                // for them, and `apply` reads them in place.
                (
                    quote!(Sizes),
                    Some(quote!(sizes_of(#of))),
                    None,
                    FieldKind::Sizes,
                )
            } else {
                // A number, a dtype or a device: `Copy`.
                (ty, Some(quote!(#of.#call())), None, FieldKind::Copy)
            }
        }
        other => {
            return Err(format!(
                "saving `{}` ({other:?}) is not supported by the generator yet",
                s.of
            ))
        }
    };
    Ok(Field {
        ident,
        ty,
        take,
        output,
        kind,
    })
}

/// The `autograd.rs` file: node types and Autograd kernels, formatted. Every
/// construct the generator does not support yet is a diagnostic at its entry.
pub fn autograd(
    plan: &Plan,
    d: &DerivativesFile,
    checked: &CheckedFile,
) -> Result<String, Diagnostics> {
    autograd_tokens(plan, d, checked).map(|t| crate::emit::format(plan, t))
}

/// The tokens of [`autograd`].
pub fn autograd_tokens(
    plan: &Plan,
    d: &DerivativesFile,
    checked: &CheckedFile,
) -> Result<TokenStream, Diagnostics> {
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
        match kernel(planned.schema(), &planned.ident, op, name, set, outputs) {
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

/// The node type of one entry and its `Backward` impl.
fn node(
    name: &str,
    schema: &FunctionSchema,
    set: &CheckedSet,
) -> std::result::Result<TokenStream, String> {
    let ty = format_ident!("{}", name);
    let fields = set
        .saved
        .iter()
        .map(|s| field(s, schema, false))
        .collect::<std::result::Result<Vec<_>, _>>()?;
    let decls = fields.iter().map(|f| {
        let (i, t) = (&f.ident, &f.ty);
        quote!(#i: #t,)
    });
    let releases = fields.iter().map(|f| f.kind.release(&f.ident));
    let owns_tensors = fields.iter().any(|f| f.kind.owns_tensors());
    let kinds = input_kinds(schema, set)?;
    // With a `Tensor?` or `Tensor[]` input, the node keeps how many inputs
    // each differentiable argument became (`__counts`).
    let general = kinds.iter().any(|k| *k != InputKind::Single);
    let mut blocks = Vec::new();
    for f in set
        .formulas
        .iter()
        .filter(|f| f.direction == Direction::Backward)
    {
        if f.body == Body::NonDifferentiable {
            continue;
        }
        let [arg] = f.names.as_slice() else {
            return Err(format!(
                "a formula for several arguments ({}) is not supported by the generator yet",
                f.names.join(", ")
            ));
        };
        let Some(pos) = set.differentiable.iter().position(|a| a == arg) else {
            continue;
        };
        if f.gradients.grads_uses > 0 || !f.gradients.named.is_empty() {
            return Err("formulas reading `grads` or `grad_<output>` are not supported by the generator yet".into());
        }
        let binds = f.saved.iter().map(|s| {
            let i = format_ident!("{}", s.ident());
            let kind = fields
                .iter()
                .find(|x| x.ident == i)
                .map_or(FieldKind::Value, |x| x.kind);
            kind.unpack(&i)
        });
        let value = match (&f.body, &f.node_expr) {
            (Body::Expr | Body::NotImplemented, Some(e)) => quote!(#e),
            _ => return Err(format!("the formula for `{arg}` has no expression")),
        };
        blocks.push(match (general, kinds[pos]) {
            (false, _) => quote! {
                if ctx.needs_input_grad(#pos) {
                    #(#binds)*
                    let g: ::opforge::Result<::opforge::Tensor> = { #value };
                    out[#pos] = ::core::option::Option::Some(g?);
                }
            },
            (true, InputKind::List) => quote! {
                {
                    let start: usize = self.__counts[..#pos].iter().sum();
                    let end = start + self.__counts[#pos];
                    if (start..end).any(|i| ctx.needs_input_grad(i)) {
                        #(#binds)*
                        let g: ::opforge::Result<::std::vec::Vec<::opforge::Tensor>> = { #value };
                        for (i, x) in g?.into_iter().enumerate().take(end - start) {
                            if ctx.needs_input_grad(start + i) {
                                out[start + i] = ::core::option::Option::Some(x);
                            }
                        }
                    }
                }
            },
            (true, _) => quote! {
                {
                    let start: usize = self.__counts[..#pos].iter().sum();
                    if ctx.needs_input_grad(start) {
                        #(#binds)*
                        let g: ::opforge::Result<::opforge::Tensor> = { #value };
                        out[start] = ::core::option::Option::Some(g?);
                    }
                }
            },
        });
    }
    let n = set.differentiable.len();
    let (counts_decl, len) = match general {
        true => (
            quote!(__counts: ::std::vec::Vec<usize>,),
            quote!(self.__counts.iter().sum::<usize>()),
        ),
        false => (TokenStream::new(), quote!(#n)),
    };
    Ok(quote! {
        /// Generated from `derivatives.yaml`.
        pub struct #ty {
            #counts_decl
            #(#decls)*
        }

        impl ::opforge::autograd::Backward for #ty {
            fn apply(
                &mut self,
                grads: ::opforge::autograd::Grads,
                ctx: &::opforge::autograd::BackwardCtx,
            ) -> ::opforge::Result<::opforge::autograd::Grads> {
                let mut out = ::opforge::autograd::Grads::from_elem(None, #len);
                let ::core::option::Option::Some(grad) = grads.into_iter().next().flatten() else {
                    return Ok(out);
                };
                #(#blocks)*
                Ok(out)
            }

            fn release(&mut self) {
                #(#releases)*
            }

            fn owns_tensors(&self) -> bool {
                #owns_tensors
            }
        }
    })
}

/// The outputs that get the node as their history, by position in the
/// returns (torchgen's `gen_differentiable_outputs`): those
/// `output_differentiability:` marks, else the tensor outputs, of which only
/// the first when the formulas read the single `grad` (the only form the
/// generator takes): `nll_loss_forward`'s `total_weight` has no history.
fn differentiable_outputs(schema: &FunctionSchema, flags: Option<&[bool]>) -> Vec<usize> {
    let tensors = schema
        .returns
        .iter()
        .enumerate()
        .filter(|(_, r)| r.ty.is_tensor_like())
        .map(|(i, _)| i);
    match flags {
        Some(v) => tensors
            .filter(|&i| v.get(i).copied().unwrap_or(false))
            .collect(),
        None => tensors.take(1).collect(),
    }
}

/// torchgen's `emit_check_no_requires_grad`: each tensor argument without a
/// formula (not marked `non_differentiable`, not named `output`) is refused
/// while it requires grad in grad mode, with PyTorch's message naming the
/// function (`name`, `name_` in place, `name_out` for out=).
fn no_requires_grad_checks(
    schema: &FunctionSchema,
    set: &CheckedSet,
    params: &[syn::Ident],
    types: &[syn::Type],
) -> TokenStream {
    let base = schema.name.name.to_string();
    let function = match schema.kind() {
        SchemaKind::Out => format!("{base}_out"),
        _ => base,
    };
    let non_differentiable = |n: &str| {
        set.formulas
            .iter()
            .any(|f| f.body == Body::NonDifferentiable && f.names.iter().any(|m| m == n))
    };
    let checks = schema
        .arguments
        .all
        .iter()
        .zip(params.iter().zip(types))
        .filter(|(a, _)| {
            a.ty.is_tensor_like()
                && a.name != "output"
                && !set.differentiable.contains(&a.name)
                && !non_differentiable(&a.name)
        })
        .filter_map(|(a, (p, t))| {
            let name = &a.name;
            let each = match show(t).as_str() {
                "&Tensor" => quote!(::core::iter::once(#p)),
                "&mut Tensor" => quote!(::core::iter::once(&*#p)),
                "Option<&Tensor>" => quote!(#p.into_iter()),
                "&[Tensor]" => quote!(#p.iter()),
                _ => return None,
            };
            Some(quote! {
                ::opforge::autograd::check_no_requires_grad(#each, #name, #function)?;
            })
        });
    quote!(#(#checks)*)
}

/// Which outputs of a kernel get its node as their history.
#[derive(Clone, Copy)]
struct Outputs<'a> {
    /// Their positions in the returns ([`differentiable_outputs`]).
    history: &'a [usize],
    /// Only those of a differentiable dtype (`output_differentiability:` is
    /// a condition); otherwise another dtype is PyTorch's error.
    conditional: bool,
}

/// The Autograd kernel of one operator.
fn kernel(
    schema: &FunctionSchema,
    ident: &str,
    op: &str,
    node_name: &str,
    set: &CheckedSet,
    outputs: Outputs<'_>,
) -> std::result::Result<TokenStream, String> {
    let kind = schema.kind();
    let args = &schema.arguments.all;
    let fn_ident = format_ident!("__opforge_autograd_{}", ident);
    let at_fn = format_ident!("{}", ident);
    let mut params = Vec::new();
    let mut types = Vec::new();
    for a in args {
        params.push(format_ident!("{}", arg_ident(&a.name)));
        types.push(param_type(a).map_err(|e| e.to_string())?);
    }
    let ret = result_type(&schema.returns).map_err(|e| e.to_string())?;
    let call_args = params.iter();
    let body = match kind {
        SchemaKind::Out => {
            // The single tensors in a list, then the optional ones and the
            // lists' elements added.
            let mut singles = Vec::new();
            let mut more = Vec::new();
            for (p, t) in params.iter().zip(&types) {
                match show(t).as_str() {
                    "&Tensor" => singles.push(quote!(#p)),
                    "&mut Tensor" => singles.push(quote!(&*#p)),
                    "Option<&Tensor>" => more.push(quote!(__all.extend(#p);)),
                    "&[Tensor]" => more.push(quote!(__all.extend(#p.iter());)),
                    _ => {}
                }
            }
            let all = match more.is_empty() {
                true => quote!(let __all: [&::opforge::Tensor; _] = [#(#singles),*];),
                false => quote! {
                    let mut __all: ::std::vec::Vec<&::opforge::Tensor> = ::std::vec![#(#singles),*];
                    #(#more)*
                },
            };
            let base = schema.name.name.to_string();
            quote! {
                #all
                ::opforge::autograd::check_out(#base, &__all)?;
                let _below = ::opforge::autograd::below_autograd();
                ::opforge::at::#at_fn(#(#call_args),*)
            }
        }
        SchemaKind::Functional | SchemaKind::Inplace => {
            let inplace = kind == SchemaKind::Inplace;
            let kinds = input_kinds(schema, set)?;
            let general = kinds.iter().any(|k| *k != InputKind::Single);
            if general && inplace {
                return Err(format!("in-place `{op}`: Tensor? and Tensor[] differentiable arguments of in-place operators are not supported by the generator yet"));
            }
            let mut inputs = Vec::new();
            for name in &set.differentiable {
                let Some(k) = args.iter().position(|a| &a.name == name) else {
                    return Err(format!("`{op}` has no argument `{name}`"));
                };
                let p = &params[k];
                inputs.push(match show(&types[k]).as_str() {
                    "&mut Tensor" => quote!(&*#p),
                    _ => quote!(#p),
                });
            }
            // With Tensor? / Tensor[] inputs: one `Option<&Tensor>` per node
            // input (`__ins`), and how many each argument became (`__counts`).
            // The leading single and optional inputs in a list, the rest
            // added in order.
            let lead = kinds.iter().take_while(|k| **k != InputKind::List).count();
            let first = kinds.iter().zip(&inputs).take(lead).map(|(k, p)| match k {
                InputKind::Optional => quote!(#p),
                _ => quote!(::core::option::Option::Some(#p)),
            });
            let rest = kinds.iter().zip(&inputs).skip(lead).map(|(k, p)| match k {
                InputKind::Single => quote!(__ins.push(::core::option::Option::Some(#p));),
                InputKind::Optional => quote!(__ins.push(#p);),
                InputKind::List => {
                    quote!(__ins.extend(#p.iter().map(::core::option::Option::Some));)
                }
            });
            let counts = kinds.iter().zip(&inputs).map(|(k, p)| match k {
                InputKind::List => quote!(#p.len()),
                _ => quote!(1usize),
            });
            let gather = match (general, lead == kinds.len()) {
                (true, true) => quote! {
                    let __ins: ::std::vec::Vec<::core::option::Option<&::opforge::Tensor>> = ::std::vec![#(#first),*];
                },
                (true, false) => quote! {
                    let mut __ins: ::std::vec::Vec<::core::option::Option<&::opforge::Tensor>> = ::std::vec![#(#first),*];
                    #(#rest)*
                },
                (false, _) => TokenStream::new(),
            };
            let begin = if inplace {
                if set.differentiable.first().map(String::as_str) != Some("self") {
                    return Err(format!("in-place `{op}`: `self` must be differentiable"));
                }
                let others = &inputs[1..];
                quote!(::opforge::autograd::Recording::begin_inplace(self_, &[#(#others),*])?)
            } else if general {
                quote!(::opforge::autograd::Recording::begin_optional(&__ins))
            } else {
                quote!(::opforge::autograd::Recording::begin(&[#(#inputs),*]))
            };
            let (counts_value, counts_field) = match general {
                true => (quote!(::std::vec![#(#counts),*],), quote!(__counts,)),
                false => (TokenStream::new(), TokenStream::new()),
            };
            let fields = set
                .saved
                .iter()
                .map(|s| field(s, schema, inplace))
                .collect::<std::result::Result<Vec<_>, _>>()?;
            let pre_idents: Vec<_> = fields
                .iter()
                .filter(|f| f.take.is_some())
                .map(|f| &f.ident)
                .collect();
            let pre_takes = fields.iter().filter_map(|f| f.take.as_ref());
            let nret = schema.returns.len();
            // Each output as an expression (`out`, or `out.0`, …), borrowed
            // shared (`outs`) and, for `finish`, mutably: a fresh result gets
            // its history without locking.
            let places: Vec<TokenStream> = match nret {
                1 => vec![quote!(out)],
                _ => (0..nret)
                    .map(|i| {
                        let i = syn::Index::from(i);
                        quote!(out.#i)
                    })
                    .collect(),
            };
            let outs: Vec<TokenStream> = places.iter().map(|p| quote!(&#p)).collect();
            // A saved output is saved as the node's own (by its number among
            // the differentiable outputs), or, without a history, as an input.
            let post: Vec<TokenStream> = fields
                .iter()
                .filter_map(|f| {
                    let i = &f.ident;
                    let o = &outs[f.output?];
                    Some(
                        match outputs.history.iter().position(|&k| Some(k) == f.output) {
                            Some(nr) => {
                                let nr = nr as u32;
                                quote!(#i: saver.output(#nr)?,)
                            }
                            None => quote!(#i: ::opforge::autograd::SavedTensor::input(#o),),
                        },
                    )
                })
                .collect();
            let mut read = std::collections::HashSet::new();
            for p in &post {
                idents_in(p, &mut read);
            }
            let saver = match read.contains("saver") {
                true => quote!(saver),
                false => quote!(_),
            };
            let history: Vec<&TokenStream> = outputs.history.iter().map(|&k| &outs[k]).collect();
            let history_mut: Vec<TokenStream> = outputs
                .history
                .iter()
                .map(|&k| {
                    let p = &places[k];
                    quote!(&mut #p)
                })
                .collect();
            let dtype_check = match outputs.conditional {
                true => TokenStream::new(),
                false => {
                    quote!(::opforge::autograd::check_differentiable_outputs(&[#(#history),*])?;)
                }
            };
            let checks = no_requires_grad_checks(schema, set, &params, &types);
            let node_ty = format_ident!("{}", node_name);
            let fw = Forward {
                schema,
                op,
                set,
                params: &params,
                inputs: &inputs,
                outs: &outs,
                places: &places,
                at_fn: &at_fn,
                inplace,
                kinds: &kinds,
            };
            let (fw_pre, fw_post) = fw.code()?;
            quote! {
                #checks
                #gather
                let rec = #begin;
                let pre = if rec.is_some() {
                    Some((#counts_value #(#pre_takes,)*))
                } else {
                    None
                };
                #fw_pre
                let mut out = {
                    let _below = ::opforge::autograd::below_autograd();
                    ::opforge::at::#at_fn(#(#call_args),*)?
                };
                // Nested, not a tuple of the two: no copy of the recording.
                if let Some(rec) = rec {
                    if let Some((#counts_field #(#pre_idents,)*)) = pre {
                        #dtype_check
                        rec.finish(#node_name, [#(#history_mut),*], |#saver| {
                            Ok(#node_ty { #counts_field #(#pre_idents,)* #(#post)* })
                        })?;
                    }
                }
                #fw_post
                Ok(out)
            }
        }
        SchemaKind::Mutable | SchemaKind::Scratch => return Ok(TokenStream::new()),
    };
    let func: syn::ItemFn = syn::parse2(quote! {
        #[allow(clippy::too_many_arguments)]
        fn #fn_ident(#(#params: #types),*) -> #ret {
            #body
        }
    })
    .map_err(|e| format!("generated kernel of `{op}` does not parse: {e}"))?;
    let pairs: Vec<(&syn::Ident, &syn::Type)> = params.iter().zip(&types).collect();
    let sig = (quote!(sig::#at_fn), quote!(sig::spec::#at_fn));
    let reg = crate::kernel::generated_registration(
        "Autograd",
        op,
        schema,
        &func,
        &pairs,
        ret,
        Some(sig),
    );
    Ok(quote!(#func #reg))
}

/// The forward-mode part of one Autograd kernel (issue 21 §3): before the
/// call, the inputs' tangents (`None` unless a forward level is in force and
/// an input carries one); after it, each output's tangent from its forward
/// formula, computed with forward mode suspended (the primals are the dual
/// inputs themselves). Formulas: an expression in `<arg>_t` / `<arg>_p` /
/// outputs; `auto_element_wise`, the single input's backward formula with
/// `grad` the input's tangent; `auto_linear`, the operator applied to the
/// tangents. An operator without a forward formula refuses a tangent with
/// PyTorch's message.
struct Forward<'a> {
    schema: &'a FunctionSchema,
    op: &'a str,
    set: &'a CheckedSet,
    params: &'a [syn::Ident],
    /// The differentiable inputs as `&Tensor` expressions, in `set.differentiable` order.
    inputs: &'a [TokenStream],
    /// The outputs as `&Tensor` expressions.
    outs: &'a [TokenStream],
    /// The outputs as places (`out`, `out.0`).
    places: &'a [TokenStream],
    at_fn: &'a syn::Ident,
    inplace: bool,
    /// How each differentiable argument became node inputs.
    kinds: &'a [InputKind],
}

impl Forward<'_> {
    fn code(&self) -> std::result::Result<(TokenStream, TokenStream), String> {
        let inputs = self.inputs;
        let fw_mod = quote!(::opforge::autograd::forward_ad);
        let forward: Vec<&crate::derivatives::CheckedFormula> = self
            .set
            .formulas
            .iter()
            .filter(|f| f.direction == Direction::Forward)
            .collect();
        let general = self.kinds.iter().any(|k| *k != InputKind::Single);
        let tangents = match general {
            true => quote!(#fw_mod::tangents_of_optional(&__ins)?),
            false => quote!(#fw_mod::tangents_of(&[#(#inputs),*])?),
        };
        if forward.is_empty() {
            let base = self.schema.name.name.to_string();
            let msg = format!("Trying to use forward AD with {base} that does not support it because it has not been implemented yet.\nPlease file an issue to PyTorch at https://github.com/pytorch/pytorch/issues/new?template=feature-request.yml so that we can prioritize its implementation or submit a PR adding the implementation to derivatives.yaml");
            let pre = quote!(let __fw = #tangents;);
            let post = quote! {
                if __fw.is_some() {
                    return Err(::opforge::Error::NotImplemented(#msg.into()));
                }
            };
            return Ok((pre, post));
        }
        // Each formula's tangent, set on its output.
        let mut sets = Vec::new();
        for f in &forward {
            let value = match f.body {
                Body::Expr | Body::NotImplemented => {
                    let e = f.node_expr.as_ref().ok_or_else(|| {
                        format!(
                            "the forward formula for `{}` has no expression",
                            f.names.join(", ")
                        )
                    })?;
                    quote!(#e)
                }
                Body::AutoLinear => self.auto_linear()?,
                Body::AutoElementWise => self.auto_element_wise()?,
                Body::NonDifferentiable => continue,
            };
            let [name] = f.names.as_slice() else {
                return Err(format!(
                    "a forward formula for several outputs ({}) is not supported by the generator yet",
                    f.names.join(", ")
                ));
            };
            let i = output_index(self.schema, name)
                .ok_or_else(|| format!("`{}` has no output `{name}`", self.op))?;
            let o = &self.outs[i];
            // A written tensor may be a view: its tangent goes into its base's.
            let set = match self.inplace {
                true => quote!(set_tangent_in_place),
                false => quote!(set_tangent),
            };
            sets.push(quote! {
                let t: ::opforge::Result<::opforge::Tensor> = { #value };
                #fw_mod::#set(#o, t?)?;
            });
        }
        // What the formulas read: only those are bound.
        let mut used = std::collections::HashSet::new();
        for t in &sets {
            idents_in(t, &mut used);
        }
        let reads = |name: &syn::Ident| used.contains(&name.to_string());
        // Per differentiable input: `<arg>_t` and `<arg>_p`, if read.
        let mut binds = Vec::new();
        let mut primal_self = false;
        for (k, name) in self.set.differentiable.iter().enumerate() {
            let t = format_ident!("{}_t", name);
            let p = format_ident!("{}_p", name);
            let input = &inputs[k];
            let (read_t, read_p) = (reads(&t), reads(&p));
            let primal = if self.inplace && name == "self" {
                primal_self |= read_p;
                quote!(__fw_self)
            } else {
                quote!((#input).clone())
            };
            let (tangent, primal) = match (general, self.kinds[k]) {
                (false, _) => (
                    quote!(let #t: ::opforge::Tensor = __fw[#k].clone();),
                    quote!(let #p: ::opforge::Tensor = #primal;),
                ),
                // `__fw` holds one tangent per node input, in order.
                (true, InputKind::Single) => (
                    quote!(let #t: ::opforge::Tensor = __fw[__at].clone().ok_or_else(|| ::opforge::Error::Runtime("a present input has no tangent".into()))?;),
                    quote!(let #p: ::opforge::Tensor = #primal;),
                ),
                (true, InputKind::Optional) => (
                    quote!(let #t: ::core::option::Option<::opforge::Tensor> = __fw[__at].clone();),
                    quote!(let #p: ::core::option::Option<::opforge::Tensor> = (#input).cloned();),
                ),
                (true, InputKind::List) => (
                    quote! {
                        let #t: ::std::vec::Vec<::opforge::Tensor> = __fw[__at..__at + (#input).len()]
                            .iter()
                            .cloned()
                            .collect::<::core::option::Option<_>>()
                            .ok_or_else(|| ::opforge::Error::Runtime("a list element has no tangent".into()))?;
                    },
                    quote!(let #p: ::std::vec::Vec<::opforge::Tensor> = (#input).to_vec();),
                ),
            };
            if read_t {
                binds.push(tangent);
            }
            if read_p {
                binds.push(primal);
            }
            if general {
                let step = match self.kinds[k] {
                    InputKind::List => quote!((#input).len()),
                    _ => quote!(1),
                };
                binds.push(quote!(__at += #step;));
            }
        }
        if general {
            binds.insert(0, quote!(let mut __at = 0usize;));
        }
        // Other tensor arguments a formula reads, as the backward formulas
        // read them: owned.
        for (a, p) in self.schema.arguments.all.iter().zip(self.params) {
            let plain = a.ty.is_base(opforge_schema::model::BaseType::Tensor) && !a.is_write();
            if plain && !self.set.differentiable.contains(&a.name) && reads(p) {
                binds.push(quote!(let #p: ::opforge::Tensor = #p.clone();));
            }
        }
        // Outputs by name (`result`, `resultN`, named returns), if read.
        for (i, r) in self.schema.returns.iter().enumerate() {
            let o = &self.places[i];
            let mut names = vec![if self.schema.returns.len() == 1 {
                "result".to_string()
            } else {
                format!("result{i}")
            }];
            if let Some(n) = &r.name {
                names.push(n.clone());
            }
            for n in names {
                let id = format_ident!("{}", arg_ident(&n));
                if reads(&id) {
                    binds.push(quote!(let #id: ::opforge::Tensor = #o.clone();));
                }
            }
        }
        // In place: the primal of `self` is its value before the write.
        let orig = if primal_self {
            quote! {
                let __fw_self = match &__fw {
                    Some(_) => Some({
                        let _below = ::opforge::autograd::below_autograd();
                        ::opforge::at::clone(self_, None)?
                    }),
                    None => None,
                };
            }
        } else {
            TokenStream::new()
        };
        let pre = quote! {
            let __fw = #tangents;
            #orig
        };
        let unwrap_self = match primal_self {
            true => quote!(let __fw_self = __fw_self.unwrap_or_else(|| self_.clone());),
            false => TokenStream::new(),
        };
        let post = quote! {
            if let Some(__fw) = __fw {
                let _off = #fw_mod::suspend();
                #unwrap_self
                #(#binds)*
                #(#sets)*
            }
        };
        Ok((pre, post))
    }

    /// `auto_linear`: the operator on the tangents (the other arguments as given).
    fn auto_linear(&self) -> std::result::Result<TokenStream, String> {
        if self.inplace {
            return Err(format!(
                "in-place `{}`: `auto_linear` forward formulas of in-place operators are not supported by the generator yet",
                self.op
            ));
        }
        let args = self
            .schema
            .arguments
            .all
            .iter()
            .zip(self.params)
            .map(|(a, p)| {
                if let Some(k) = self.set.differentiable.iter().position(|d| d == &a.name) {
                    let t = format_ident!("{}_t", a.name);
                    match self.kinds[k] {
                        InputKind::Optional => quote!(#t.as_ref()),
                        _ => quote!(&#t),
                    }
                } else if a.ty.is_base(opforge_schema::model::BaseType::Tensor) && !a.is_write() {
                    // Bound owned for the formulas (see `code`).
                    quote!(&#p)
                } else {
                    quote!(#p)
                }
            });
        let at_fn = self.at_fn;
        Ok(quote!(::opforge::at::#at_fn(#(#args),*)))
    }

    /// `auto_element_wise`: the single input's backward formula with `grad`
    /// its tangent, the values it reads taken from the call's arguments
    /// (`self` as its primal) and outputs.
    fn auto_element_wise(&self) -> std::result::Result<TokenStream, String> {
        let [input] = self.set.differentiable.as_slice() else {
            return Err("auto_element_wise needs exactly one differentiable input".into());
        };
        let Some(bw) = self
            .set
            .formulas
            .iter()
            .find(|f| f.direction == Direction::Backward && f.names.iter().any(|n| n == input))
        else {
            return Err(format!(
                "auto_element_wise: no backward formula for `{input}`"
            ));
        };
        let e = bw
            .node_expr
            .as_ref()
            .ok_or_else(|| format!("the formula for `{input}` has no expression"))?;
        let t = format_ident!("{}_t", input);
        let mut binds = vec![quote!(let grad: ::opforge::Tensor = #t.clone();)];
        for s in &bw.saved {
            let id = format_ident!("{}", s.ident());
            let bind = match &s.kind {
                SavedKind::Tensor => {
                    if self.set.differentiable.contains(&s.of) {
                        let p = format_ident!("{}_p", s.of);
                        quote!(let #id: ::opforge::Tensor = #p.clone();)
                    } else {
                        let of = format_ident!("{}", arg_ident(&s.of));
                        quote!(let #id: ::opforge::Tensor = (#of).clone();)
                    }
                }
                // Bound once for every formula, by its name.
                SavedKind::Output { .. } => continue,
                _ => {
                    let f = field(s, self.schema, false)?;
                    let take = f
                        .take
                        .ok_or_else(|| format!("`{}` cannot be taken", s.of))?;
                    // An argument of its own name is in scope already.
                    if id == take.to_string() {
                        continue;
                    }
                    quote!(let #id = #take;)
                }
            };
            binds.push(bind);
        }
        Ok(quote!({ #(#binds)* #e }))
    }
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
