//! Forward mode in an Autograd kernel ([`Forward`]).

use super::nodes::{field, InputKind};
use super::{idents_in, output_index};
use crate::derivatives::{CheckedSet, SavedKind};
use opforge_schema::derivatives::{Body, Direction};
use opforge_schema::model::FunctionSchema;
use opforge_schema::names::arg_ident;
use proc_macro2::TokenStream;
use quote::{format_ident, quote};

/// The forward-mode part of one Autograd kernel (issue 21 §3): before the
/// call, the inputs' tangents (`None` unless a forward level is in force and
/// an input carries one); after it, each output's tangent from its forward
/// formula, computed with forward mode suspended (the primals are the dual
/// inputs themselves). Formulas: an expression in `<arg>_t` / `<arg>_p` /
/// outputs; `auto_element_wise`, the single input's backward formula with
/// `grad` the input's tangent; `auto_linear`, the operator applied to the
/// tangents. An operator without a forward formula refuses a tangent with
/// PyTorch's message.
pub(super) struct Forward<'a> {
    pub(super) schema: &'a FunctionSchema,
    pub(super) op: &'a str,
    pub(super) set: &'a CheckedSet,
    pub(super) params: &'a [syn::Ident],
    /// The differentiable inputs as `&Tensor` expressions, in `set.differentiable` order.
    pub(super) inputs: &'a [TokenStream],
    /// The outputs as `&Tensor` expressions.
    pub(super) outs: &'a [TokenStream],
    /// The outputs as places (`out`, `out.0`).
    pub(super) places: &'a [TokenStream],
    /// The operator's own typed function (`::opforge::at::mul_Tensor`,
    /// `super::at::mylib_wsq`), for `auto_linear`.
    pub(super) op_fn: &'a TokenStream,
    pub(super) inplace: bool,
    /// How each differentiable argument became node inputs.
    pub(super) kinds: &'a [InputKind],
}

impl Forward<'_> {
    pub(super) fn code(&self) -> std::result::Result<(TokenStream, TokenStream), String> {
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
        let op_fn = self.op_fn;
        Ok(quote!(#op_fn(#(#args),*)))
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
