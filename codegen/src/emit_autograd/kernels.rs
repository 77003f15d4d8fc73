//! An operator's Autograd kernel: which outputs get the node, the checks of
//! arguments without formulas, and the kernel (record, redispatch below
//! autograd, finish; out=: `check_out`).

use super::forward::Forward;
use super::idents_in;
use super::nodes::{field, input_kinds, InputKind};
use crate::derivatives::CheckedSet;
use crate::rust_types::{param_type, result_type, show};
use opforge_schema::derivatives::Body;
use opforge_schema::model::{FunctionSchema, SchemaKind};
use opforge_schema::names::arg_ident;
use proc_macro2::TokenStream;
use quote::{format_ident, quote};

/// The outputs that get the node as their history, by position in the
/// returns (torchgen's `gen_differentiable_outputs`): those
/// `output_differentiability:` marks, else the tensor outputs, of which only
/// the first when the formulas read the single `grad` (the only form the
/// generator takes): `nll_loss_forward`'s `total_weight` has no history.
pub(super) fn differentiable_outputs(
    schema: &FunctionSchema,
    flags: Option<&[bool]>,
) -> Vec<usize> {
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
pub(super) fn no_requires_grad_checks(
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
pub(super) struct Outputs<'a> {
    /// Their positions in the returns ([`differentiable_outputs`]).
    pub(super) history: &'a [usize],
    /// Only those of a differentiable dtype (`output_differentiability:` is
    /// a condition); otherwise another dtype is PyTorch's error.
    pub(super) conditional: bool,
}

/// The Autograd kernel of one operator. `at` is the path of the typed API
/// the operator belongs to, from the generated module (the crate's own `at`:
/// [`crate::emit_api::Options::at_from_autograd`]); the kernel redispatches
/// through it, as torchgen's `VariableType` kernels redispatch through
/// `at::redispatch` (`tools/autograd/gen_variable_type.py`).
#[allow(clippy::too_many_arguments)]
pub(super) fn kernel(
    schema: &FunctionSchema,
    at: &syn::Path,
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
    let op_fn = quote!(#at::#at_fn);
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
                #op_fn(#(#call_args),*)
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
                op_fn: &op_fn,
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
                    #op_fn(#(#call_args),*)?
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
