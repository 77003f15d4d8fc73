//! A derivatives entry's node type: its saved fields (how each is taken
//! before or after the call, kept, unpacked in `apply` and released) and its
//! `Backward` impl.

use crate::derivatives::{CheckedSet, Saved, SavedKind};
use crate::rust_types::{param_type, show};
use opforge_schema::derivatives::{Body, Direction};
use opforge_schema::model::FunctionSchema;
use opforge_schema::names::arg_ident;
use proc_macro2::TokenStream;
use quote::{format_ident, quote};

/// What a saved value is in the node: its field type and how the kernel
/// takes it from an argument before the call (`None`: an output, saved after).
pub(super) struct Field {
    pub(super) ident: syn::Ident,
    pub(super) ty: TokenStream,
    pub(super) take: Option<TokenStream>,
    pub(super) output: Option<usize>,
    pub(super) kind: FieldKind,
}

/// How a node keeps a saved value, which decides how `apply` unpacks it and
/// `release` frees it.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum FieldKind {
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
pub(super) enum InputKind {
    /// `Tensor` (`&Tensor`, or `&mut Tensor` in place): one input.
    Single,
    /// `Tensor?`: one input, absent when `None`.
    Optional,
    /// `Tensor[]`: one input per element.
    List,
}

/// The kinds of a set's differentiable arguments, in order.
pub(super) fn input_kinds(
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

pub(super) fn field(
    s: &Saved,
    schema: &FunctionSchema,
    inplace: bool,
) -> std::result::Result<Field, String> {
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

/// The node type of one entry and its `Backward` impl.
pub(super) fn node(
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
    // A set whose formulas never read `grad` (`not_implemented(..)` alone)
    // still takes it, unnamed.
    let grad = match set
        .formulas
        .iter()
        .any(|f| f.direction == Direction::Backward && f.gradients.grad)
    {
        true => format_ident!("grad"),
        false => format_ident!("_grad"),
    };
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
                let ::core::option::Option::Some(#grad) = grads.into_iter().next().flatten() else {
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
