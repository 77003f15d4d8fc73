//! Emit: a kernel's registration with the dispatcher ([`registration`]), the
//! one emitter of link-time kernel entries. `#[kernel]` and `#[op]` (in
//! `opforge-macros`) call it for a user's function after checking it against
//! its schema; the generator calls it for the kernels it writes (the Autograd
//! kernels of `derivatives.yaml`), so every kernel, written or generated, is an
//! ordinary entry of `opforge::__private::KERNELS`.

use crate::rust_types::{fn_pointer_type, is_boxed, param_type, show};
use opforge_schema::model::{BaseType, FunctionSchema, Type};
use opforge_schema::names::arg_ident;
use proc_macro2::{TokenStream, TokenTree};
use quote::{format_ident, quote, quote_spanned, ToTokens};
use syn::spanned::Spanned;

/// `ty` with every elided reference lifetime written `'a`.
fn with_lifetime_a(ty: &syn::Type) -> TokenStream {
    with_lifetime(ty, quote!('a))
}

/// `ty` with every elided reference lifetime written `lifetime`.
fn with_lifetime(ty: &impl ToTokens, lifetime: TokenStream) -> TokenStream {
    fn walk(ts: TokenStream, lifetime: &TokenStream) -> TokenStream {
        let mut out = TokenStream::new();
        for tt in ts {
            match tt {
                TokenTree::Punct(p) if p.as_char() == '&' => {
                    out.extend([TokenTree::Punct(p)]);
                    out.extend(lifetime.clone());
                }
                TokenTree::Group(g) => {
                    let mut ng = proc_macro2::Group::new(g.delimiter(), walk(g.stream(), lifetime));
                    ng.set_span(g.span());
                    out.extend([TokenTree::Group(ng)]);
                }
                other => out.extend([other]),
            }
        }
        out
    }
    walk(ty.to_token_stream(), &lifetime)
}

/// The spec of a kernel's function pointer type (`opforge::dispatch::adapter`):
/// the type with every reference `'static`.
pub fn spec_type(fn_ty: &impl ToTokens) -> TokenStream {
    with_lifetime(fn_ty, quote!('static))
}

/// The link-time entry registering `func` (an expression of the function
/// pointer type `fn_ty`) as the `key` kernel of `name`, in a static named
/// `ident`.
fn entry_static(
    ident: &syn::Ident,
    key: &str,
    name: &str,
    schema: &FunctionSchema,
    (fn_ty, spec): (&TokenStream, &TokenStream),
    func: TokenStream,
    (file, line): (TokenStream, TokenStream),
) -> TokenStream {
    let schema_text = schema.to_string();
    quote! {
        ::opforge::__private::kernel_entry!(
            #ident, #name, #key, #schema_text, #fn_ty, #spec, #func, #file, #line
        );
    }
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
    registration_with(key, name, schema, func, params, ret, true, None)
}

/// [`registration`] for a kernel the generator wrote with the schema's own
/// parameter and return types ([`param_type`], [`crate::rust_types::result_type`]):
/// the same entry without the signature-checking traits, which could never
/// fire there. `sig` names the signature's `sig::` alias and its spec
/// (`sig::spec::`), if the generated file has them in scope; otherwise the
/// types are written out.
#[allow(clippy::too_many_arguments)]
pub fn generated_registration(
    key: &str,
    name: &str,
    schema: &FunctionSchema,
    func: &syn::ItemFn,
    params: &[(&syn::Ident, &syn::Type)],
    ret: syn::Type,
    sig: Option<(TokenStream, TokenStream)>,
) -> TokenStream {
    registration_with(key, name, schema, func, params, ret, false, sig)
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

#[allow(clippy::too_many_arguments)]
fn registration_with(
    key: &str,
    name: &str,
    schema: &FunctionSchema,
    func: &syn::ItemFn,
    params: &[(&syn::Ident, &syn::Type)],
    ret: syn::Type,
    check: bool,
    sig: Option<(TokenStream, TokenStream)>,
) -> TokenStream {
    let fn_ident = &func.sig.ident;
    let op = &schema.name;
    let (fn_ty, spec) = match (sig, fn_pointer_type(schema)) {
        (Some(sig), _) => sig,
        (None, Ok(t)) => (t.to_token_stream(), spec_type(&t)),
        (None, Err(e)) => {
            let e = e.to_string();
            return quote!(compile_error!(#e););
        }
    };
    let loc = (
        quote_spanned!(fn_ident.span()=> ::core::file!()),
        quote_spanned!(fn_ident.span()=> ::core::line!()),
    );
    let user_ret = match &func.sig.output {
        syn::ReturnType::Type(_, t) => show(t),
        syn::ReturnType::Default => "()".into(),
    };
    // A boxed kernel (`fn(&[Value]) -> Result<Vec<Value>>`, which the
    // caller checked) is its own entry: there is nothing to unbox.
    let boxed = is_boxed(schema);
    // The function already has the schema's types, written as the schema's
    // mapping writes them: registered as it is, rustc's cast checks it.
    // Otherwise (another spelling, a wrong type, a custom class's `&T`) a shim
    // calls it through traits whose errors name the parameter and the schema.
    let written_as_schema = params
        .iter()
        .zip(&schema.arguments.all)
        .all(|(&(_, user_ty), a)| param_type(a).is_ok_and(|t| show(&t) == show(user_ty)))
        && show(&ret) == user_ret;
    let checked = check && !boxed && !written_as_schema;
    let view = view_input(key, schema).filter(|_| !boxed);
    // A user's Autograd kernel runs marked on its thread: run again inside
    // itself (a redispatch without `below_autograd()`), it fails with an
    // error saying so instead of recursing until the stack overflows. The
    // generated kernels exclude the key themselves and are not marked.
    let reentry = check && !boxed && key == "Autograd";
    if !checked && view.is_none() && !reentry {
        let ident = format_ident!(
            "__OPFORGE_{}_KERNEL_{}",
            key.to_uppercase(),
            syn::ext::IdentExt::unraw(fn_ident)
        );
        return entry_static(
            &ident,
            key,
            name,
            schema,
            (&fn_ty, &spec),
            quote!(#fn_ident),
            loc,
        );
    }
    let note = literal(&format!("schema: {schema}"));
    // Shared by the per-parameter and return traits: `T: __OpforgeSame<U>` holds
    // only for `T = U`. Their impls are blanket impls over it, marked
    // `do_not_recommend`, so that rustc reports the unmet trait itself (with our
    // message) and lists no candidate impls.
    let mut items = Vec::new();
    if checked {
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
    for (i, (&(_, user_ty), a)) in params.iter().zip(&schema.arguments.all).enumerate() {
        // The caller's checks reported every argument without a mapping.
        let Ok(schema_ty) = param_type(a) else {
            continue;
        };
        let want_short = show(&schema_ty);
        let has_ref = want_short.contains('&');
        let v = format_ident!("__a{}", i);
        shim_params.push(quote!(#v: #schema_ty));
        if !checked {
            shim_args.push(quote!(#v));
            continue;
        }
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
        if let Type::CustomClass(class) = &a.ty {
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
        } else {
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
    }
    let ret_short = show(&ret);
    let ret_ty = ret;
    let call = quote!(#fn_ident(#(#shim_args),*));
    let ret_call = match (&func.sig.output, checked) {
        (syn::ReturnType::Type(_, user_ret), true) => {
            let message = literal(&format!(
                "a kernel for `{op}` must return `{ret_short}`, found `{user_ret}`",
                user_ret = show(user_ret)
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
            quote_spanned! {user_ret.span()=>
                <#user_ret as #ret_tr>::__opforge_return(#call)
            }
        }
        _ => call,
    };
    // A view operator's kernel marks its result as a view of the argument it
    // aliases (PyTorch's ADInplaceOrView kernels do it above the backend; here
    // the backend kernel's registration does it, so that plain tensors, which
    // never pass through an autograd key, are views too).
    let ret_call = match view {
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
    let ret_call = match reentry {
        true => quote! {
            let _reentry = ::opforge::__private::enter_autograd_kernel(#name)?;
            #ret_call
        },
        false => ret_call,
    };
    let entry = entry_static(
        &format_ident!("__OPFORGE_KERNEL"),
        key,
        name,
        schema,
        (&fn_ty, &spec),
        quote!(__opforge_unboxed),
        loc,
    );
    quote! {
        #[doc(hidden)]
        #[allow(non_camel_case_types, non_snake_case, clippy::all)]
        const _: () = {
            #(#items)*

            /// The kernel with the schema's signature.
            #[inline]
            fn __opforge_unboxed(#(#shim_params),*) -> #ret_ty {
                #ret_call
            }

            #entry
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

    fn register(key: &str, schema: &str, func: syn::ItemFn) -> String {
        let schema = opforge_schema::schema::parse_schema(schema).unwrap();
        let params: Vec<(&syn::Ident, &syn::Type)> = func
            .sig
            .inputs
            .iter()
            .map(|a| match a {
                syn::FnArg::Typed(p) => match &*p.pat {
                    syn::Pat::Ident(name) => (&name.ident, &*p.ty),
                    _ => panic!("a named parameter"),
                },
                _ => panic!("a typed parameter"),
            })
            .collect();
        let ret = crate::rust_types::result_type(&schema.returns).unwrap();
        let out = registration(key, "neg", &schema, &func, &params, ret);
        out.to_string().split_whitespace().collect()
    }

    /// A function written with the schema's types is registered as it is:
    /// one entry (`kernel_entry!`) naming it, its signature and the signature's spec.
    #[test]
    fn a_function_of_the_schemas_types_is_one_link_time_entry() {
        let flat = register(
            "CPU",
            "neg(Tensor self) -> Tensor",
            syn::parse_quote! {
                fn neg_cpu(self_: &::opforge::Tensor) -> ::opforge::Result<::opforge::Tensor> {
                    neg(self_)
                }
            },
        );
        for part in [
            "::opforge::__private::kernel_entry!(__OPFORGE_CPU_KERNEL_neg_cpu,",
            "\"neg\",\"CPU\",\"neg(Tensorself)->Tensor\",",
            "fn(&::opforge::Tensor)->::opforge::Result<::opforge::Tensor>,fn(&'static::opforge::Tensor)->::opforge::Result<::opforge::Tensor>,neg_cpu,",
        ] {
            assert!(flat.contains(part), "{part} not in {flat}");
        }
        assert!(!flat.contains("__opforge_unboxed"), "{flat}");
        assert!(!flat.contains("enter_autograd_kernel"), "{flat}");
    }

    /// A user's Autograd kernel, even of the schema's types, goes through a
    /// shim that marks it running on its thread: run again inside itself, it
    /// is an error naming `below_autograd()`, not a stack overflow.
    #[test]
    fn an_autograd_kernel_is_marked_running() {
        let flat = register(
            "Autograd",
            "neg(Tensor self) -> Tensor",
            syn::parse_quote! {
                fn neg_autograd(self_: &::opforge::Tensor) -> ::opforge::Result<::opforge::Tensor> {
                    neg(self_)
                }
            },
        );
        for part in [
            "fn__opforge_unboxed(__a0:&::opforge::Tensor)->::opforge::Result<::opforge::Tensor>{let_reentry=::opforge::__private::enter_autograd_kernel(\"neg\")?;neg_autograd(__a0)}",
            "\"neg\",\"Autograd\",\"neg(Tensorself)->Tensor\",",
            ",__opforge_unboxed,",
        ] {
            assert!(flat.contains(part), "{part} not in {flat}");
        }
    }

    /// What `#[kernel]` adds beside a function written with the schema's
    /// types, formatted: a few lines (the registration; the function itself is
    /// the user's).
    #[test]
    fn a_kernels_registration_is_a_few_lines() {
        let schema = opforge_schema::schema::parse_schema("neg(Tensor self) -> Tensor").unwrap();
        let func: syn::ItemFn = syn::parse_quote! {
            fn neg_cpu(self_: &::opforge::Tensor) -> ::opforge::Result<::opforge::Tensor> {
                neg(self_)
            }
        };
        let self_ = syn::Ident::new("self_", proc_macro2::Span::call_site());
        let ty: syn::Type = syn::parse_quote!(&::opforge::Tensor);
        let ret = crate::rust_types::result_type(&schema.returns).unwrap();
        let out = registration("CPU", "neg", &schema, &func, &[(&self_, &ty)], ret);
        let file: syn::File = syn::parse2(out).expect("a registration is items");
        let text = prettyplease::unparse(&file);
        let lines = text.lines().count();
        assert!(lines <= 10, "{lines} lines:\n{text}");
    }

    /// Another spelling of the types goes through a shim whose traits check
    /// each parameter with the schema's words.
    #[test]
    fn another_spelling_is_checked_through_a_shim() {
        let flat = register(
            "Autograd",
            "neg(Tensor self) -> Tensor",
            syn::parse_quote! {
                fn neg_autograd(self_: &opforge::Tensor) -> opforge::Result<opforge::Tensor> {
                    neg(self_)
                }
            },
        );
        for part in [
            "fn__opforge_unboxed(__a0:&::opforge::Tensor)->::opforge::Result<::opforge::Tensor>",
            "neg_autograd(<&opforge::Tensoras__opforge_neg_autograd_param_self_<'_>>::__opforge_param(__a0))",
            "fn(&::opforge::Tensor)->::opforge::Result<::opforge::Tensor>,fn(&'static::opforge::Tensor)->::opforge::Result<::opforge::Tensor>,__opforge_unboxed,",
        ] {
            assert!(flat.contains(part), "{part} not in {flat}");
        }
    }
}
