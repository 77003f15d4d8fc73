//! `#[overridable(dispatcher = path)]` and `#[dispatcher]`: a user's own function
//! joins the `__torch_function__` protocol, like PyTorch's
//! `wrap_torch_function(dispatcher)` (the 2019 wiki's
//! `torch_function_dispatch(dispatcher, verify=True)`).
//!
//! `#[dispatcher]` keeps the dispatcher function (elided lifetimes all become one,
//! `'t`, so `-> [&Tensor; 2]` compiles without annotations; unused parameters are
//! allowed) and adds a hidden sibling module `__opforge_dispatcher_<name>` with:
//!
//! - `__P<i><'t>`: each parameter type, every lifetime normalized to `'t`,
//!   resolved where the dispatcher is written (`use super::*`);
//! - `relevant(..)`: calls the dispatcher and turns its result into an iterator
//!   over `&Tensor` (through a trait whose `on_unimplemented` explains what a
//!   dispatcher returns);
//! - `check!`: a `macro_rules!` whose first rule matches exactly the dispatcher's
//!   parameter names (a leading `_` ignored) and expands to the expression it is
//!   given; any other list expands to the signature `compile_error!`, naming both
//!   signatures.
//!
//! `#[overridable]` replaces the function with a wrapper of the same name and
//! signature, moves the body into a hidden `__opforge_body_<name>`, and adds
//! `<name>_func() -> Func` (a static `ExternalFn` with a boxed adapter) plus a
//! hidden module `__opforge_overridable_<name>` of traits, each with an
//! `on_unimplemented` message naming the function: `Same<D>` (a parameter's type
//! equals the dispatcher's), `Arg` (a parameter can be boxed: `ToValue` +
//! `FromValue`), `Ret` (the result can: `IntoValues` + `FromValues`). Every use of
//! a user type goes through one of them, spanned at that type, so each mistake is
//! one error there; the dispatcher call is the `check!` expansion, so a name or
//! arity mismatch is the signature error and nothing else.

use proc_macro2::{Group, Ident, Punct, Spacing, Span, TokenStream, TokenTree};
use quote::{format_ident, quote, quote_spanned, ToTokens};
use syn::ext::IdentExt;
use syn::spanned::Spanned;

/// Collected errors, each on its tokens.
#[derive(Default)]
struct Errors(Vec<syn::Error>);

impl Errors {
    fn on(&mut self, tokens: impl ToTokens, msg: impl std::fmt::Display) {
        self.0.push(syn::Error::new_spanned(tokens, msg));
    }

    fn at(&mut self, span: Span, msg: impl std::fmt::Display) {
        self.0.push(syn::Error::new(span, msg));
    }

    fn tokens(&self) -> TokenStream {
        self.0.iter().map(syn::Error::to_compile_error).collect()
    }
}

/// A parameter: its name (without `mut`) and type.
struct Param<'a> {
    name: Ident,
    ty: &'a syn::Type,
}

impl Param<'_> {
    /// The name as the other side must spell it: unraw, one leading `_` ignored.
    fn key(&self) -> Ident {
        let s = self.name.unraw().to_string();
        let s = match s.strip_prefix('_') {
            Some(rest) if !rest.is_empty() => rest.to_string(),
            _ => s,
        };
        Ident::new(&s, self.name.span())
    }

    fn python(&self) -> String {
        let name = self.name.unraw().to_string();
        if is_option(self.ty) {
            format!("{name}=None")
        } else {
            name
        }
    }
}

fn is_option(ty: &syn::Type) -> bool {
    match ty {
        syn::Type::Path(p) => p.path.segments.last().is_some_and(|s| s.ident == "Option"),
        _ => false,
    }
}

/// Checks what both attributes require of a function; returns its parameters.
fn params<'a>(what: &str, func: &'a syn::ItemFn, errors: &mut Errors) -> Vec<Param<'a>> {
    let sig = &func.sig;
    if let Some(a) = &sig.asyncness {
        errors.on(a, format!("{what} cannot be `async`"));
    }
    if let Some(c) = &sig.constness {
        errors.on(c, format!("{what} cannot be `const`"));
    }
    if let Some(v) = &sig.variadic {
        errors.on(v, format!("{what} cannot be variadic"));
    }
    for g in &sig.generics.params {
        if !matches!(g, syn::GenericParam::Lifetime(_)) {
            errors.on(
                g,
                format!("{what} cannot be generic (only lifetime parameters are allowed): handlers receive its arguments boxed"),
            );
        }
    }
    if let Some(w) = &sig.generics.where_clause {
        errors.on(w, format!("{what} cannot have a `where` clause"));
    }
    let mut out = Vec::new();
    for input in &sig.inputs {
        match input {
            syn::FnArg::Receiver(r) => errors.on(
                r,
                format!("{what} must be a free function, not a method: take the tensor as an ordinary parameter"),
            ),
            syn::FnArg::Typed(pt) => {
                let name = match pt.pat.as_ref() {
                    syn::Pat::Ident(pi) if pi.by_ref.is_none() && pi.subpat.is_none() => {
                        pi.ident.clone()
                    }
                    other => {
                        errors.on(
                            other,
                            "parameters must be plain names (`x: &Tensor`): they are matched by name",
                        );
                        continue;
                    }
                };
                if let syn::Type::ImplTrait(_) = pt.ty.as_ref() {
                    errors.on(&pt.ty, format!("{what} cannot take `impl Trait`"));
                    continue;
                }
                out.push(Param { name, ty: &pt.ty });
            }
        }
    }
    out
}

/// Rewrites the lifetimes of a type: elided `&`, `'_` and named lifetimes
/// (except `'static`) become `'lt`; with `lt == "_"` named lifetimes are erased
/// to `'_` and elided ones left alone.
fn lifetimes(ts: TokenStream, lt: &str) -> TokenStream {
    rewrite_lifetimes(ts, lt, true)
}

/// [`lifetimes`], optionally rewriting `'static` too.
fn rewrite_lifetimes(ts: TokenStream, lt: &str, keep_static: bool) -> TokenStream {
    let erase = lt == "_";
    let tokens: Vec<TokenTree> = ts.into_iter().collect();
    let mut out = Vec::with_capacity(tokens.len());
    let mut i = 0;
    while i < tokens.len() {
        match &tokens[i] {
            TokenTree::Group(g) => {
                let mut ng = Group::new(
                    g.delimiter(),
                    rewrite_lifetimes(g.stream(), lt, keep_static),
                );
                ng.set_span(g.span());
                out.push(TokenTree::Group(ng));
            }
            TokenTree::Punct(p) if p.as_char() == '\'' => {
                out.push(tokens[i].clone());
                if let Some(TokenTree::Ident(id)) = tokens.get(i + 1) {
                    if id != "static" || !keep_static {
                        out.push(TokenTree::Ident(Ident::new(lt, id.span())));
                    } else {
                        out.push(tokens[i + 1].clone());
                    }
                    i += 1;
                }
            }
            TokenTree::Punct(p) if p.as_char() == '&' => {
                out.push(tokens[i].clone());
                let has_lifetime =
                    matches!(tokens.get(i + 1), Some(TokenTree::Punct(q)) if q.as_char() == '\'');
                if !erase && !has_lifetime {
                    let mut q = Punct::new('\'', Spacing::Joint);
                    q.set_span(p.span());
                    out.push(TokenTree::Punct(q));
                    out.push(TokenTree::Ident(Ident::new(lt, p.span())));
                }
            }
            other => out.push(other.clone()),
        }
        i += 1;
    }
    out.into_iter().collect()
}

use crate::kernel::show;

/// `fn name(x: &Tensor, k: i64)`, for messages.
fn signature(name: &Ident, params: &[Param]) -> String {
    let ps: Vec<String> = params
        .iter()
        .map(|p| format!("{}: {}", p.name, show(p.ty)))
        .collect();
    format!("fn {}({})", name, ps.join(", "))
}

/// Escapes text for an `on_unimplemented` format string.
fn literal(s: &str) -> String {
    s.replace('{', "{{").replace('}', "}}")
}

// ---------------------------------------------------------------------------
// #[dispatcher]

/// The expansion of `#[dispatcher] item`.
pub fn expand_dispatcher(attr: TokenStream, item: TokenStream) -> TokenStream {
    let func: syn::ItemFn = match syn::parse2(item.clone()) {
        Ok(f) => f,
        Err(_) => {
            let e = syn::Error::new(
                Span::call_site(),
                "#[dispatcher] goes on a free function returning the relevant tensor arguments, e.g. `fn my_fn_dispatcher(x: &Tensor, k: i64) -> [&Tensor; 1]`",
            )
            .to_compile_error();
            return quote!(#item #e);
        }
    };
    let mut errors = Errors::default();
    if !attr.is_empty() {
        errors.on(
            &attr,
            "#[dispatcher] takes no arguments; the function it marks is named in `#[overridable(dispatcher = ...)]`",
        );
    }
    let ps = params("a dispatcher", &func, &mut errors);
    if let syn::ReturnType::Default = func.sig.output {
        errors.at(
            func.sig.paren_token.span.close(),
            "a dispatcher returns the relevant tensor arguments, e.g. `-> [&Tensor; 2]` or `-> impl IntoIterator<Item = &Tensor>`",
        );
    }
    if !errors.0.is_empty() {
        let e = errors.tokens();
        return quote!(#func #e);
    }
    dispatcher_output(&func, &ps)
}

fn dispatcher_output(func: &syn::ItemFn, ps: &[Param]) -> TokenStream {
    let ident = &func.sig.ident;
    let vis = &func.vis;
    let module = format_ident!("__opforge_dispatcher_{}", ident.unraw());
    let check = format_ident!("__opforge_check_{}", ident.unraw());
    let sig_text = signature(ident, ps);

    // The user's function, with elided lifetimes filled in when it declares none.
    let mut user = func.clone();
    let fill = user.sig.generics.params.is_empty();
    if fill {
        user.sig.generics = syn::parse_quote!(<'t>);
        for input in user.sig.inputs.iter_mut() {
            if let syn::FnArg::Typed(pt) = input {
                let ty = lifetimes(pt.ty.to_token_stream(), "t");
                if let Ok(t) = syn::parse2(ty) {
                    *pt.ty = t;
                }
            }
        }
        if let syn::ReturnType::Type(_, ty) = &mut user.sig.output {
            if let Ok(t) = syn::parse2(lifetimes(ty.to_token_stream(), "t")) {
                **ty = t;
            }
        }
    }
    user.attrs.push(syn::parse_quote!(#[allow(
        unused_variables,
        clippy::needless_lifetimes,
        clippy::extra_unused_lifetimes
    )]));

    let aliases: Vec<Ident> = (0..ps.len()).map(|i| format_ident!("__P{}", i)).collect();
    let alias_tys = ps.iter().map(|p| lifetimes(p.ty.to_token_stream(), "t"));
    let names: Vec<&Ident> = ps.iter().map(|p| &p.name).collect();
    let keys: Vec<Ident> = ps.iter().map(Param::key).collect();
    let out_span = match &func.sig.output {
        syn::ReturnType::Type(_, t) => t.span(),
        syn::ReturnType::Default => ident.span(),
    };
    let message = literal(&format!(
        "the dispatcher `{ident}` must return the relevant tensor arguments: something iterable over `&Tensor`"
    ));
    // The return type itself when it can be named (so a wrong one is underlined).
    let out_ty = match &func.sig.output {
        syn::ReturnType::Type(_, t) if !matches!(t.as_ref(), syn::Type::ImplTrait(_)) => {
            // `'static` too: the result may be a subtype (`[&'static Tensor; 0]`).
            rewrite_lifetimes(t.to_token_stream(), "t", false)
        }
        _ => quote_spanned!(out_span=> _),
    };
    let into = quote_spanned! {out_span=>
        <#out_ty as Relevant<'t>>::__opforge_visit(super::#ident(#(#names),*), __opforge_f)
    };
    let fallback = format!("\n  dispatcher:     {sig_text}");
    // The signature error, at the dispatcher's name (rustc adds the invocation).
    let mismatch = quote_spanned! {ident.span()=>
        ::core::compile_error!(::core::concat!(
            "implementation and dispatcher for `", $f,
            "` have different function signatures\n  implementation: ", $sig,
            #fallback,
            "\n  (a dispatcher takes the same parameters: names, order and types)"
        ))
    };
    quote! {
        #user

        #[doc(hidden)]
        #vis mod #module {
            #![allow(unused_imports, non_camel_case_types, dead_code, clippy::all)]
            use super::*;

            #(pub type #aliases<'t> = #alias_tys;)*

            #[diagnostic::on_unimplemented(
                message = #message,
                label = "`{Self}` does not iterate over `&Tensor`",
                note = "e.g. `[x]`, `[x, y]`, `std::iter::once(x).chain(bias)` for `bias: Option<&Tensor>`, `xs` for `xs: &[Tensor]`"
            )]
            pub trait Relevant<'t> {
                fn __opforge_visit<F: ::core::ops::FnMut(&'t ::opforge::Tensor)>(self, f: F);
            }

            #[diagnostic::do_not_recommend]
            impl<'t, I: ::core::iter::IntoIterator<Item = &'t ::opforge::Tensor>> Relevant<'t> for I {
                #[inline(always)]
                fn __opforge_visit<F: ::core::ops::FnMut(&'t ::opforge::Tensor)>(self, f: F) {
                    ::core::iter::Iterator::for_each(::core::iter::IntoIterator::into_iter(self), f)
                }
            }

            /// Calls `__opforge_f` on each tensor the dispatcher returns.
            #[inline(always)]
            pub fn relevant<'t, __F: ::core::ops::FnMut(&'t ::opforge::Tensor)>(
                #(#names: #aliases<'t>,)*
                __opforge_f: __F,
            ) {
                #into
            }

            /// The signature check: the parameter names must be these.
            macro_rules! #check {
                ($f:literal, $sig:literal, (#(#keys),*), $call:expr) => { $call };
                ($f:literal, $sig:literal, ($($other:tt)*), $call:expr) => { #mismatch };
            }
            pub(crate) use #check as check;
        }
    }
}

// ---------------------------------------------------------------------------
// #[overridable]

/// The attribute's argument: `dispatcher = path`.
struct Attr {
    dispatcher: syn::Path,
}

const USAGE: &str = "expected `#[overridable(dispatcher = path)]`, naming a `#[dispatcher]` function with the same parameters that returns the relevant tensor arguments";

impl syn::parse::Parse for Attr {
    fn parse(input: syn::parse::ParseStream) -> syn::Result<Self> {
        if input.is_empty() {
            return Err(syn::Error::new(
                Span::call_site(),
                format!("missing dispatcher: {USAGE}"),
            ));
        }
        let key: Ident = input
            .call(Ident::parse_any)
            .map_err(|e| syn::Error::new(e.span(), USAGE))?;
        if key != "dispatcher" {
            return Err(syn::Error::new(
                key.span(),
                format!("unknown argument `{key}`: {USAGE}"),
            ));
        }
        input
            .parse::<syn::Token![=]>()
            .map_err(|e| syn::Error::new(e.span(), USAGE))?;
        let dispatcher: syn::Path = input
            .parse()
            .map_err(|e| syn::Error::new(e.span(), USAGE))?;
        let _ = input.parse::<Option<syn::Token![,]>>()?;
        if !input.is_empty() {
            return Err(input.error(USAGE));
        }
        Ok(Attr { dispatcher })
    }
}

/// The expansion of `#[overridable(attr)] item`.
pub fn expand(attr: TokenStream, item: TokenStream) -> TokenStream {
    let func: syn::ItemFn = match syn::parse2(item.clone()) {
        Ok(f) => f,
        Err(_) => {
            let e = syn::Error::new(
                Span::call_site(),
                "#[overridable] goes on a free function: `fn name(args) -> Result<T>`",
            )
            .to_compile_error();
            return quote!(#item #e);
        }
    };
    let attr: Attr = match syn::parse2::<Attr>(attr) {
        Ok(a) => a,
        Err(e) => {
            let span = if e.span().source_text().is_some() {
                e.span()
            } else {
                Span::call_site()
            };
            let e = syn::Error::new(span, e.to_string()).to_compile_error();
            return quote!(#func #e);
        }
    };
    let mut errors = Errors::default();
    let ps = params("an overridable function", &func, &mut errors);
    let ret = result_arg(&func.sig.output, &mut errors);
    let last = attr.dispatcher.segments.last();
    if attr
        .dispatcher
        .segments
        .iter()
        .any(|s| !s.arguments.is_none())
    {
        errors.on(
            &attr.dispatcher,
            "the dispatcher path cannot have generic arguments",
        );
    }
    match (errors.0.is_empty(), ret, last) {
        (true, Some(ret), Some(_)) => overridable_output(&attr.dispatcher, &func, &ps, ret),
        _ => {
            let e = errors.tokens();
            quote!(#func #e)
        }
    }
}

/// `T` of the return type `Result<T>` (any path ending in `Result`).
fn result_arg<'a>(output: &'a syn::ReturnType, errors: &mut Errors) -> Option<&'a syn::Type> {
    let msg = "an overridable function returns `Result<T>` (`opforge::Result`): handlers can fail";
    let ty = match output {
        syn::ReturnType::Default => {
            errors.on(output, msg);
            return None;
        }
        syn::ReturnType::Type(_, ty) => ty,
    };
    if let syn::Type::Path(p) = ty.as_ref() {
        if let Some(seg) = p.path.segments.last() {
            if seg.ident == "Result" {
                if let syn::PathArguments::AngleBracketed(a) = &seg.arguments {
                    if let Some(syn::GenericArgument::Type(t)) = a.args.first() {
                        return Some(t);
                    }
                }
            }
        }
    }
    errors.on(ty, msg);
    None
}

fn overridable_output(
    dispatcher: &syn::Path,
    func: &syn::ItemFn,
    ps: &[Param],
    ret: &syn::Type,
) -> TokenStream {
    let ident = &func.sig.ident;
    let name = ident.unraw().to_string();
    let vis = &func.vis;
    let generics = &func.sig.generics;
    let output = &func.sig.output;
    let body_ident = format_ident!("__opforge_body_{}", ident.unraw());
    let func_ident = format_ident!("{}_func", ident.unraw());
    let m = format_ident!("__opforge_overridable_{}", ident.unraw());
    let sig_text = signature(ident, ps);

    // The dispatcher's hidden module: the path with its last segment replaced.
    let mut dm = dispatcher.clone();
    let last = dm.segments.last_mut().expect("checked");
    let disp_name = last.ident.unraw();
    last.ident = Ident::new(
        &format!("__opforge_dispatcher_{disp_name}"),
        last.ident.span(),
    );
    let dm = quote_spanned!(dispatcher.span()=> #dm);

    let names: Vec<&Ident> = ps.iter().map(|p| &p.name).collect();
    let keys: Vec<Ident> = ps.iter().map(Param::key).collect();
    let casts = ps.iter().enumerate().map(|(i, p)| {
        let alias = format_ident!("__P{}", i);
        let ty = p.ty;
        let n = &p.name;
        quote_spanned! {ty.span()=>
            <#ty as #m::Same<#dm::#alias<'_>>>::__opforge_cast(#n)
        }
    });
    let boxes = ps.iter().map(|p| {
        let ty = p.ty;
        let n = &p.name;
        quote_spanned!(ty.span()=> <#ty as #m::Arg<'_>>::__opforge_box(&#n))
    });
    let unbox_ret = quote_spanned!(ret.span()=> <#ret as #m::Ret>::__opforge_from(__v));
    let check_call = quote_spanned! {dispatcher.span()=>
        #dm::check!(#name, #sig_text, (#(#keys),*), #dm::relevant(#(#casts,)* |__t| {
            if !::opforge::Tensor::is_plain(__t) {
                __opforge_relevant.push(__t)
            }
        }))
    };

    // The wrapper's parameters: the user's, without `mut`.
    let wrapper_params = ps.iter().map(|p| {
        let (n, t) = (&p.name, p.ty);
        quote!(#n: #t)
    });

    // The boxed adapter.
    let n = ps.len();
    let slots: Vec<Ident> = (0..n).map(|i| format_ident!("__a{}", i)).collect();
    let name_strs: Vec<String> = ps.iter().map(|p| p.name.unraw().to_string()).collect();
    let unboxes = ps.iter().zip(&slots).zip(&name_strs).map(|((p, s), ns)| {
        let ty = lifetimes(p.ty.to_token_stream(), "_");
        let n = &p.name;
        quote_spanned! {p.ty.span()=>
            let #n = <#ty as #m::Arg<'_>>::__opforge_unbox(#name, #ns, #s)?;
        }
    });
    let ret_erased = lifetimes(ret.to_token_stream(), "_");
    let into_ret = quote_spanned! {ret.span()=>
        <#ret_erased as #m::Ret>::__opforge_into(#body_ident(#(#names),*)?)
    };
    let python: Vec<String> = ps.iter().map(Param::python).collect();

    // The body, under a hidden name; the user's attributes minus docs.
    let mut body = func.clone();
    body.sig.ident = body_ident.clone();
    body.vis = syn::Visibility::Inherited;
    body.attrs.retain(|a| !a.path().is_ident("doc"));
    body.attrs.push(syn::parse_quote!(#[doc(hidden)]));
    let cfgs: Vec<&syn::Attribute> = func
        .attrs
        .iter()
        .filter(|a| a.path().is_ident("cfg"))
        .collect();
    let attrs = &func.attrs;

    let disp_text = show(dispatcher);
    let doc = format!(
        " Overridable (`#[overridable]`): when a tensor returned by the dispatcher `{disp_text}` is a tensor-like, or a function mode is active, the call is first offered to `__torch_function__` handlers as `{func_ident}()`."
    );
    let func_doc = format!(
        " The `Func` of [`{name}`]: what `__torch_function__` handlers and function modes see as `call.func()` (`resolve_name` gives `<module>.{name}`)."
    );
    let same_msg =
        format!("implementation and dispatcher for `{name}` have different function signatures");
    let same_label = format!("`{name}` takes `{{Self}}` here, its dispatcher `{{D}}`");
    let same_note =
        "a dispatcher takes the same parameters as its function: names, order and types";
    let arg_msg = format!(
        "`#[overridable]` cannot pass `{{Self}}` to handlers: unsupported parameter type of `{name}`"
    );
    let ret_msg = format!(
        "`#[overridable]` cannot return `{{Self}}` from handlers: unsupported result type of `{name}`"
    );
    let doc_sep = func
        .attrs
        .iter()
        .any(|a| a.path().is_ident("doc"))
        .then(|| quote!(#[doc = ""]));

    quote! {
        #(#attrs)*
        #doc_sep
        #[doc = #doc]
        #[allow(clippy::too_many_arguments)]
        #vis fn #ident #generics (#(#wrapper_params),*) #output {
            // The tensor-likes among the relevant arguments (no allocation when none).
            #[allow(unused_mut)]
            let mut __opforge_relevant: ::std::vec::Vec<&::opforge::Tensor> = ::std::vec::Vec::new();
            #check_call;
            if __opforge_relevant.is_empty() && !::opforge::overrides::function_modes_active() {
                return #body_ident(#(#names),*);
            }
            let __opforge_args: ::std::vec::Vec<::opforge::Value> = ::std::vec![#(#boxes),*];
            match ::opforge::overrides::handle_torch_function(
                #func_ident(),
                &__opforge_relevant,
                &__opforge_args,
                &[],
            )? {
                ::core::option::Option::Some(__v) => ::core::result::Result::Ok(#unbox_ret?),
                ::core::option::Option::None => #body_ident(#(#names),*),
            }
        }

        #body

        #(#cfgs)*
        #[doc = #func_doc]
        #vis fn #func_ident() -> ::opforge::overrides::Func {
            const __OPFORGE_MODULE: [u8; #m::dotted_len(::core::module_path!())] =
                #m::dotted(::core::module_path!());
            fn __opforge_imp(
                args: &[::opforge::Value],
                kwargs: &[(::std::string::String, ::opforge::Value)],
            ) -> ::opforge::Result<::opforge::Value> {
                let [#(#slots),*] = #m::bind::<#n>(#name, [#(#name_strs),*], args, kwargs)?;
                #(#unboxes)*
                ::core::result::Result::Ok(#into_ret)
            }
            static __OPFORGE_FN: ::opforge::overrides::ExternalFn = ::opforge::overrides::ExternalFn {
                module: #m::as_str(&__OPFORGE_MODULE),
                name: #name,
                params: &[#(#python),*],
                imp: __opforge_imp,
            };
            ::opforge::overrides::Func::External(&__OPFORGE_FN)
        }

        #(#cfgs)*
        #[doc(hidden)]
        #[allow(non_camel_case_types, non_snake_case, dead_code, clippy::all)]
        mod #m {
            use ::opforge::value::{FromValue, FromValues, IntoValues, ToValue};
            use ::opforge::{Error, Result, Value};

            #[diagnostic::on_unimplemented(message = #same_msg, label = #same_label, note = #same_note)]
            pub trait Same<D> {
                fn __opforge_cast(self) -> D;
            }

            #[diagnostic::do_not_recommend]
            impl<T> Same<T> for T {
                #[inline(always)]
                fn __opforge_cast(self) -> T {
                    self
                }
            }

            #[diagnostic::on_unimplemented(
                message = #arg_msg,
                label = "no boxed form (`ToValue` + `FromValue`)",
                note = "supported: `&Tensor`, `&[Tensor]`, `&[Option<Tensor>]`, `i64`, `f64`, `bool`, `Scalar`, `&[i64]`, `&[f64]`, `&[bool]`, `&[Scalar]`, `&str`, `DType`, `Device`, `Layout`, `MemoryFormat`, and `Option`s of them"
            )]
            pub trait Arg<'v>: Sized {
                fn __opforge_box(&self) -> Value;
                fn __opforge_unbox(f: &str, name: &str, v: Option<&'v Value>) -> Result<Self>;
            }

            #[diagnostic::do_not_recommend]
            impl<'v, T: ToValue + FromValue<'v>> Arg<'v> for T {
                #[inline]
                fn __opforge_box(&self) -> Value {
                    ToValue::to_value(self)
                }
                fn __opforge_unbox(f: &str, name: &str, v: Option<&'v Value>) -> Result<T> {
                    const NONE: &Value = &Value::None;
                    match v {
                        Some(v) => T::from_value(v)
                            .map_err(|e| Error::Type(format!("{f}(): argument '{name}': {e}").into())),
                        None => T::from_value(NONE).map_err(|_| {
                            Error::Type(format!("{f}() missing 1 required positional argument: '{name}'").into())
                        }),
                    }
                }
            }

            #[diagnostic::on_unimplemented(
                message = #ret_msg,
                label = "no boxed form (`IntoValues` + `FromValues`)",
                note = "supported: `Tensor`, `(Tensor, Tensor)`, `(Tensor, Tensor, Tensor)`, `Vec<Tensor>`, `Option<Tensor>`, `i64`, `f64`, `bool`, `Scalar`, `DType`, `Device`, `Layout`, `Vec<i64>`, `String`, `()`"
            )]
            pub trait Ret: Sized {
                fn __opforge_into(self) -> Value;
                fn __opforge_from(v: Value) -> Result<Self>;
            }

            #[diagnostic::do_not_recommend]
            impl<T: IntoValues + FromValues> Ret for T {
                fn __opforge_into(self) -> Value {
                    let mut vs = self.into_values();
                    if vs.len() == 1 {
                        vs.remove(0)
                    } else {
                        Value::List(vs.into())
                    }
                }
                fn __opforge_from(v: Value) -> Result<T> {
                    T::from_values(match v {
                        Value::List(vs) => vs.into_vec(),
                        other => ::std::vec![other],
                    })
                }
            }

            /// Binds boxed arguments to the parameters: positional, then by keyword.
            pub fn bind<'v, const N: usize>(
                f: &str,
                names: [&str; N],
                args: &'v [Value],
                kwargs: &'v [(String, Value)],
            ) -> Result<[Option<&'v Value>; N]> {
                let mut out: [Option<&'v Value>; N] = [None; N];
                if args.len() > N {
                    return Err(Error::Type(format!(
                        "{f}() takes {N} positional arguments but {} were given",
                        args.len()
                    ).into()));
                }
                for (slot, a) in out.iter_mut().zip(args) {
                    *slot = Some(a);
                }
                for (k, v) in kwargs {
                    match names.iter().position(|n| n == k) {
                        None => {
                            return Err(Error::Type(format!(
                                "{f}() got an unexpected keyword argument '{k}'"
                            ).into()))
                        }
                        Some(i) if out[i].is_some() => {
                            return Err(Error::Type(format!(
                                "{f}() got multiple values for argument '{k}'"
                            ).into()))
                        }
                        Some(i) => out[i] = Some(v),
                    }
                }
                Ok(out)
            }

            /// `a::b` → `a.b`: the length, then the bytes.
            pub const fn dotted_len(path: &str) -> usize {
                let b = path.as_bytes();
                let (mut i, mut n) = (0, 0);
                while i < b.len() {
                    if i + 1 < b.len() && b[i] == b':' && b[i + 1] == b':' {
                        i += 2;
                    } else {
                        i += 1;
                    }
                    n += 1;
                }
                n
            }

            pub const fn dotted<const N: usize>(path: &str) -> [u8; N] {
                let b = path.as_bytes();
                let mut out = [0u8; N];
                let (mut i, mut j) = (0, 0);
                while i < b.len() {
                    if i + 1 < b.len() && b[i] == b':' && b[i + 1] == b':' {
                        out[j] = b'.';
                        i += 2;
                    } else {
                        out[j] = b[i];
                        i += 1;
                    }
                    j += 1;
                }
                out
            }

            pub const fn as_str(bytes: &'static [u8]) -> &'static str {
                match ::core::str::from_utf8(bytes) {
                    Ok(s) => s,
                    Err(_) => panic!("module path is not UTF-8"),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn errors(out: TokenStream) -> Vec<String> {
        crate::compile_errors(&out)
    }

    #[test]
    fn lifetimes_are_filled_and_erased() {
        let ty: TokenStream = quote!(Option<&'a [&Tensor]>);
        let flat = |t: TokenStream| t.to_string().replace(' ', "");
        assert_eq!(flat(lifetimes(ty.clone(), "t")), "Option<&'t[&'tTensor]>");
        assert_eq!(flat(lifetimes(ty, "_")), "Option<&'_[&Tensor]>");
        assert_eq!(flat(lifetimes(quote!(&'static str), "t")), "&'staticstr");
    }

    #[test]
    fn a_dispatcher_gets_its_module() {
        let out = expand_dispatcher(
            quote!(),
            quote!(
                fn d(x: &Tensor, y: Option<&Tensor>, _k: i64) -> [Option<&Tensor>; 2] {
                    [Some(x), y]
                }
            ),
        );
        let flat: String = out.to_string().split_whitespace().collect();
        for part in [
            "fnd<'t>(x:&'tTensor,y:Option<&'tTensor>,_k:i64)->[Option<&'tTensor>;2]",
            "mod__opforge_dispatcher_d",
            "pubtype__P1<'t>=Option<&'tTensor>;",
            "($f:literal,$sig:literal,(x,y,k),$call:expr)=>{$call}",
            "fnd(x:&Tensor,y:Option<&Tensor>,_k:i64)",
        ] {
            assert!(flat.contains(part), "{part}\n{out}");
        }
    }

    #[test]
    fn overridable_checks_its_attribute_and_signature() {
        let item = quote!(
            fn f(x: &Tensor) -> Result<Tensor> {
                Ok(x.clone())
            }
        );
        let e = errors(expand(quote!(), item.clone()));
        assert!(e[0].contains("missing dispatcher"), "{e:?}");
        let e = errors(expand(quote!(dispacher = d), item.clone()));
        assert!(e[0].contains("unknown argument `dispacher`"), "{e:?}");
        let e = errors(expand(
            quote!(dispatcher = d),
            quote!(
                fn f<T>(x: &Tensor, (a, b): (i64, i64)) -> Tensor {}
            ),
        ));
        assert_eq!(e.len(), 3, "{e:?}");
        assert!(e[0].contains("cannot be generic"), "{e:?}");
        assert!(e[1].contains("plain names"), "{e:?}");
        assert!(e[2].contains("returns `Result<T>`"), "{e:?}");
        let out = expand(quote!(dispatcher = m::d), item).to_string();
        assert!(!out.contains("compile_error"), "{out}");
        let flat: String = out.split_whitespace().collect();
        for part in [
            "m::__opforge_dispatcher_d::check!(\"f\",\"fnf(x:&Tensor)\",(x),",
            "<&Tensoras__opforge_overridable_f::Same<m::__opforge_dispatcher_d::__P0<'_>>>",
            "fnf_func()->::opforge::overrides::Func",
            "fn__opforge_body_f(x:&Tensor)->Result<Tensor>{Ok(x.clone())}",
        ] {
            assert!(flat.contains(part), "{part}\n{out}");
        }
    }
}
