//! Emit: a kernel's registration with the dispatcher ([`registration`]), the
//! one emitter of link-time kernel entries. `#[kernel]` and `#[op]` (in
//! `opforge-macros`) call it for a user's function after checking it against
//! its schema; the generator calls it for the kernels it writes (the Autograd
//! kernels of `derivatives.yaml`), so every kernel, written or generated, is an
//! ordinary entry of `opforge::__private::KERNELS`.

use crate::rust_types::{fn_pointer_type, param_type, show};
use opforge_schema::model::{BaseType, FunctionSchema, Type};
use opforge_schema::names::arg_ident;
use proc_macro2::{TokenStream, TokenTree};
use quote::{format_ident, quote, quote_spanned, ToTokens};
use syn::spanned::Spanned;

/// `ty` with every elided reference lifetime written `'a`.
fn with_lifetime_a(ty: &syn::Type) -> TokenStream {
    fn walk(ts: TokenStream) -> TokenStream {
        let mut out = TokenStream::new();
        for tt in ts {
            match tt {
                TokenTree::Punct(p) if p.as_char() == '&' => {
                    out.extend([TokenTree::Punct(p)]);
                    out.extend(quote!('a));
                }
                TokenTree::Group(g) => {
                    let mut ng = proc_macro2::Group::new(g.delimiter(), walk(g.stream()));
                    ng.set_span(g.span());
                    out.extend([TokenTree::Group(ng)]);
                }
                other => out.extend([other]),
            }
        }
        out
    }
    walk(ty.to_token_stream())
}

/// Escapes text for an `on_unimplemented` format string.
fn literal(s: &str) -> String {
    s.replace('{', "{{").replace('}', "}}")
}

/// The registration of `func` as the `key` kernel of the operator `name` of
/// `schema`: a shim with the schema's signature (the unboxed entry, calling
/// `func` through traits that make a mismatched parameter or return type one
/// error at the user's type, worded with the schema), the boxed adapter, and
/// the link-time entry in `opforge::__private::KERNELS`. `params` are `func`'s
/// parameters (name and type, one per schema argument, as `#[kernel]` checked
/// them) and `ret` the schema's `Result<T>`.
///
/// `#[kernel]` and `#[op]` emit this for a user's function; the generator
/// emits [`generated_registration`] for the kernels it writes itself, so that
/// both are ordinary link-time registrations.
pub fn registration(
    key: &str,
    name: &str,
    schema: &FunctionSchema,
    func: &syn::ItemFn,
    params: &[(&syn::Ident, &syn::Type)],
    ret: syn::Type,
) -> TokenStream {
    registration_with(key, name, schema, func, params, ret, true)
}

/// [`registration`] for a kernel the generator wrote with the schema's own
/// parameter and return types ([`param_type`], [`crate::rust_types::result_type`]):
/// the same entry without the signature-checking traits, which could never
/// fire there (about a hundred lines less per kernel in the generated file).
pub fn generated_registration(
    key: &str,
    name: &str,
    schema: &FunctionSchema,
    func: &syn::ItemFn,
    params: &[(&syn::Ident, &syn::Type)],
    ret: syn::Type,
) -> TokenStream {
    registration_with(key, name, schema, func, params, ret, false)
}

/// The argument a view operator's result aliases, for a kernel at `key`:
/// one `Tensor` return with a read-only alias annotation (`-> Tensor(a)`)
/// shared with a `Tensor` argument (`Tensor(a) self`). Kernels at `Autograd`
/// and `CompositeImplicitAutograd` are not marked: the former redispatches to
/// a marking kernel, the latter returns what the operators it calls made
/// (`contiguous` returns `self` itself when it can).
pub fn view_input(key: &str, schema: &FunctionSchema) -> Option<usize> {
    if matches!(key, "Autograd" | "CompositeImplicitAutograd") {
        return None;
    }
    let [ret] = schema.returns.as_slice() else {
        return None;
    };
    let set = match &ret.annotation {
        Some(a) if !a.is_write && ret.ty.is_base(BaseType::Tensor) => &a.alias_set,
        _ => return None,
    };
    schema.arguments.all.iter().position(|a| {
        a.ty.is_base(BaseType::Tensor)
            && a.annotation
                .as_ref()
                .is_some_and(|x| !x.is_write && &x.alias_set == set)
    })
}

/// How a boxed adapter gets argument `i` of Rust type `schema_ty` (the
/// schema's, [`param_type`]) from `args: &[Value]`: a statement binding it,
/// and the expression passing it on. A `&mut Tensor` is a new handle on the
/// value's tensor; a number given for a `&Tensor` (allow-listed operators)
/// becomes a wrapped-number tensor; a value of the wrong type is the
/// operator's (`_op`'s) argument error.
pub fn unbox_arg(i: usize, schema_ty: &syn::Type) -> (TokenStream, TokenStream) {
    let want_short = show(schema_ty);
    let v = format_ident!("__a{}", i);
    if want_short.starts_with("&mut ") {
        let binding = quote! {
            let mut #v: ::opforge::Tensor = <&::opforge::Tensor as ::opforge::__private::FromValue>::from_value(&args[#i])
                .map_err(|e| _op.argument_error(#i, &args[#i], e))?
                .clone();
        };
        (binding, quote!(&mut #v))
    } else if want_short == "&Tensor" {
        let w = format_ident!("__opforge_wrapped_{}", i);
        let binding = quote! {
            let #w = ::opforge::__private::wrap_number(&args[#i]);
            let #v: &::opforge::Tensor = match &#w {
                ::std::option::Option::Some(t) => t,
                ::std::option::Option::None => <&::opforge::Tensor as ::opforge::__private::FromValue>::from_value(&args[#i])
                    .map_err(|e| _op.argument_error(#i, &args[#i], e))?,
            };
        };
        (binding, quote!(#v))
    } else {
        let binding = quote! {
            let #v = <#schema_ty as ::opforge::__private::FromValue>::from_value(&args[#i])
                .map_err(|e| _op.argument_error(#i, &args[#i], e))?;
        };
        (binding, quote!(#v))
    }
}

fn registration_with(
    key: &str,
    name: &str,
    schema: &FunctionSchema,
    func: &syn::ItemFn,
    params: &[(&syn::Ident, &syn::Type)],
    ret: syn::Type,
    check: bool,
) -> TokenStream {
    let fn_ident = &func.sig.ident;
    let n = params.len();
    let op = &schema.name;
    let note = literal(&format!("schema: {schema}"));
    // Shared by the per-parameter and return traits: `T: __OpforgeSame<U>` holds
    // only for `T = U`. Their impls are blanket impls over it, marked
    // `do_not_recommend`, so that rustc reports the unmet trait itself (with our
    // message) and lists no candidate impls.
    let mut items = Vec::new();
    if check {
        items.push(quote! {
        trait __OpforgeSame<U> {
            fn __opforge_from_same(u: U) -> Self;
            fn __opforge_into_same(self) -> U;
        }
        impl<U> __OpforgeSame<U> for U {
            #[inline(always)]
            fn __opforge_from_same(u: U) -> U {
                u
            }
            #[inline(always)]
            fn __opforge_into_same(self) -> U {
                self
            }
        }
        });
    }
    let mut shim_params = Vec::new();
    let mut shim_args = Vec::new();
    let mut bindings = Vec::new();
    let mut boxed_args = Vec::new();
    for (i, (&(_, user_ty), a)) in params.iter().zip(&schema.arguments.all).enumerate() {
        // The caller's checks reported every argument without a mapping.
        let Ok(schema_ty) = param_type(a) else {
            continue;
        };
        let want_short = show(&schema_ty);
        let has_ref = want_short.contains('&');
        let v = format_ident!("__a{}", i);
        // Named after the kernel too, so that rustc never points at a same-named
        // trait of another kernel ("similarly named trait") in its help.
        let tr = format_ident!("__opforge_{}_param_{}", fn_ident, arg_ident(&a.name));
        let message = literal(&format!(
            "parameter {} `{}` of `{op}` must be `{want_short}`, found `{}`",
            i + 1,
            arg_ident(&a.name),
            show(user_ty)
        ));
        let label = literal(&format!("expected `{want_short}` (schema: `{a}`)"));
        shim_params.push(quote!(#v: #schema_ty));
        if !check {
            shim_args.push(quote!(#v));
        }
        let (generics, use_generics, want_a) = if has_ref {
            (quote!(<'a>), quote!(<'_>), with_lifetime_a(&schema_ty))
        } else {
            (quote!(), quote!(), schema_ty.to_token_stream())
        };
        let impl_generics = if has_ref {
            quote!(<'a, T: __OpforgeSame<#want_a>>)
        } else {
            quote!(<T: __OpforgeSame<#want_a>>)
        };
        if let (true, Type::CustomClass(class)) = (check, &a.ty) {
            // A custom-class argument: the kernel takes `&T` of the class's
            // Rust type (the value inside the object) or the `&ScriptObject`;
            // `&T` of another class has no `ClassParam` impl for this key.
            let qualified = class.replacen('.', "::", 1);
            let message = literal(&format!(
                "parameter {} `{}` of `{op}` must be `&T` for the type `#[custom_class(\"{qualified}\")]` is on, or `&ScriptObject`; found `{}`",
                i + 1,
                arg_ident(&a.name),
                show(user_ty)
            ));
            let label = literal(&format!("expected a `{qualified}` (schema: `{a}`)"));
            items.push(quote! {
            #[diagnostic::on_unimplemented(message = #message, label = #label, note = #note)]
            trait #tr<'a>: Sized {
                fn __opforge_param(v: &'a ::opforge::ScriptObject) -> ::opforge::Result<Self>;
            }
            #[diagnostic::do_not_recommend]
            impl<'a, T: ::opforge::classes::ClassParam<'a, { ::opforge::classes::class_key(#qualified) }>> #tr<'a> for T {
                #[inline(always)]
                fn __opforge_param(v: &'a ::opforge::ScriptObject) -> ::opforge::Result<T> {
                    <T as ::opforge::classes::ClassParam<'a, { ::opforge::classes::class_key(#qualified) }>>::from_object(v)
                }
            }
            });
            shim_args.push(quote_spanned! {user_ty.span()=>
                <#user_ty as #tr<'_>>::__opforge_param(#v)?
            });
        } else if check {
            items.push(quote! {
            #[diagnostic::on_unimplemented(message = #message, label = #label, note = #note)]
            trait #tr #generics: Sized {
                fn __opforge_param(v: #want_a) -> Self;
            }
            #[diagnostic::do_not_recommend]
            impl #impl_generics #tr #generics for T {
                #[inline(always)]
                fn __opforge_param(v: #want_a) -> T {
                    <T as __OpforgeSame<#want_a>>::__opforge_from_same(v)
                }
            }
            });
            shim_args.push(quote_spanned! {user_ty.span()=>
                <#user_ty as #tr #use_generics>::__opforge_param(#v)
            });
        }
        let (binding, arg) = unbox_arg(i, &schema_ty);
        bindings.push(binding);
        boxed_args.push(arg);
    }
    let ret_short = show(&ret);
    let ret_ty = ret;
    let found = match &func.sig.output {
        syn::ReturnType::Type(_, t) => show(t),
        syn::ReturnType::Default => "()".into(),
    };
    let message = literal(&format!(
        "a kernel for `{op}` must return `{ret_short}`, found `{found}`"
    ));
    let returns = match schema.returns.as_slice() {
        [one] => one.to_string(),
        rs => format!(
            "({})",
            rs.iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    let label = literal(&format!(
        "expected `{ret_short}` (schema returns `{returns}`)"
    ));
    let ret_tr = format_ident!("__opforge_{}_return", fn_ident);
    if check {
        items.push(quote! {
            #[diagnostic::on_unimplemented(message = #message, label = #label, note = #note)]
            trait #ret_tr: Sized {
                fn __opforge_return(self) -> #ret_ty;
            }
            #[diagnostic::do_not_recommend]
            impl<T: __OpforgeSame<#ret_ty>> #ret_tr for T {
                #[inline(always)]
                fn __opforge_return(self) -> #ret_ty {
                    <T as __OpforgeSame<#ret_ty>>::__opforge_into_same(self)
                }
            }
        });
    }
    let call = quote!(#fn_ident(#(#shim_args),*));
    let ret_call = match (&func.sig.output, check) {
        (syn::ReturnType::Type(_, user_ret), true) => quote_spanned! {user_ret.span()=>
            <#user_ret as #ret_tr>::__opforge_return(#call)
        },
        _ => quote!(#call),
    };
    // A view operator's kernel marks its result as a view of the argument it
    // aliases (PyTorch's ADInplaceOrView kernels do it above the backend; here
    // the backend kernel's registration does it, so that plain tensors, which
    // never pass through an autograd key, are views too).
    let ret_call = match view_input(key, schema) {
        Some(i) => {
            let v = format_ident!("__a{}", i);
            quote! {{
                let mut __opforge_out = #ret_call?;
                ::opforge::__private::mark_view(#name, #v, &mut __opforge_out);
                Ok(__opforge_out)
            }}
        }
        None => ret_call,
    };
    let fn_ty = match fn_pointer_type(schema) {
        Ok(t) => t.to_token_stream(),
        Err(e) => {
            let e = e.to_string();
            return quote!(compile_error!(#e););
        }
    };
    let arity_msg = format!("{name}: expected {n} arguments, got {{}}");
    let schema_text = schema.to_string();
    let (file, line) = (
        quote_spanned!(fn_ident.span()=> ::core::file!()),
        quote_spanned!(fn_ident.span()=> ::core::line!()),
    );
    quote! {
        #[doc(hidden)]
        #[allow(non_camel_case_types, non_snake_case, clippy::all)]
        const _: () = {
            #(#items)*

            /// The kernel with the schema's signature: what the unboxed pointer
            /// points at.
            #[inline]
            fn __opforge_unboxed(#(#shim_params),*) -> #ret_ty {
                #ret_call
            }

            fn __opforge_unboxed_ptr() -> ::opforge::__private::Unboxed {
                let f: #fn_ty = __opforge_unboxed;
                ::opforge::__private::Unboxed::new(f)
            }

            fn __opforge_boxed(
                _op: &::opforge::__private::Operator,
                _keys: ::opforge::__private::KeySet,
                args: &[::opforge::__private::Value],
            ) -> ::opforge::Result<::std::vec::Vec<::opforge::__private::Value>> {
                if args.len() != #n {
                    return Err(::opforge::Error::Runtime(format!(#arity_msg, args.len()).into()));
                }
                #(#bindings)*
                let result = __opforge_unboxed(#(#boxed_args),*)?;
                Ok(::opforge::__private::IntoValues::into_values(result))
            }

            #[::opforge::__private::linkme::distributed_slice(::opforge::__private::KERNELS)]
            #[linkme(crate = ::opforge::__private::linkme)]
            static __OPFORGE_KERNEL: ::opforge::__private::KernelEntry = ::opforge::__private::KernelEntry {
                op: #name,
                key: #key,
                schema: #schema_text,
                boxed: __opforge_boxed,
                unboxed: __opforge_unboxed_ptr,
                file: #file,
                line: #line,
            };
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The generator's use: a function it wrote, registered for a key with no
    /// macro in between.
    #[test]
    fn lifetimes_are_written_into_references() {
        let ty: syn::Type = syn::parse_quote!(::core::option::Option<&[::opforge::Tensor]>);
        assert_eq!(
            with_lifetime_a(&ty).to_string(),
            ":: core :: option :: Option < & 'a [:: opforge :: Tensor] >"
        );
    }

    #[test]
    fn a_generated_function_becomes_a_link_time_entry() {
        let schema = opforge_schema::schema::parse_schema("neg(Tensor self) -> Tensor").unwrap();
        let func: syn::ItemFn = syn::parse_quote! {
            fn neg_autograd(self_: &::opforge::Tensor) -> ::opforge::Result<::opforge::Tensor> {
                neg(self_)
            }
        };
        let syn::FnArg::Typed(p) = &func.sig.inputs[0] else {
            panic!("a typed parameter")
        };
        let syn::Pat::Ident(name) = &*p.pat else {
            panic!("a named parameter")
        };
        let ret = crate::rust_types::result_type(&schema.returns).unwrap();
        let out = registration(
            "Autograd",
            "neg",
            &schema,
            &func,
            &[(&name.ident, &p.ty)],
            ret,
        );
        let flat: String = out.to_string().split_whitespace().collect();
        for part in [
            "distributed_slice(::opforge::__private::KERNELS)",
            "op:\"neg\",key:\"Autograd\",schema:\"neg(Tensorself)->Tensor\"",
            "fn__opforge_unboxed(__a0:&::opforge::Tensor)->::opforge::Result<::opforge::Tensor>",
            "neg_autograd(<&::opforge::Tensoras__opforge_neg_autograd_param_self_<'_>>::__opforge_param(__a0))",
        ] {
            assert!(flat.contains(part), "{part} not in {out}");
        }
    }
}
