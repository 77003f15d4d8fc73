//! `#[kernel(KEY, "name.overload")]`: checks a Rust function against its operator's
//! schema at compile time and registers it with the dispatcher.
//!
//! The function is always emitted unchanged. Then either every problem the macro can
//! see (each a `compile_error!` on the offending tokens, naming both sides and
//! quoting the schema), or the registration, inside one `const _: () = { … };`:
//!
//! - the *unboxed* kernel: a shim whose signature is the schema's
//!   ([`fn_pointer_type`], the type the dispatcher's typed path transmutes the
//!   pointer back to) and which calls the user's function;
//! - the *boxed* adapter (values in, values out), which calls the shim;
//! - the link-time entry in `opforge::dispatch::KERNELS`.
//!
//! Types are rustc's job. The shim converts each argument to the user's parameter
//! type through a trait implemented only for the schema's type and spanned at the
//! user's type, so a wrong type is one error there, worded by
//! `#[diagnostic::on_unimplemented]` (the schema type, the type found and the
//! schema). The return goes through such a trait too. The shim is the only place
//! these traits are used, and nothing else depends on the user's types, so rustc
//! reports each mismatch exactly once.

use opforge_codegen::lower::arg_ident;
use opforge_codegen::rust_types::{fn_pointer_type, param_type, result_type, Spelling};
use opforge_schema::model::{FunctionSchema, NativeFunction};
use proc_macro2::{Span, TokenStream, TokenTree};
use quote::{format_ident, quote, quote_spanned, ToTokens};
use std::fmt::Display;
use std::sync::OnceLock;
use syn::spanned::Spanned;

/// The project's schema file, embedded so that cargo rebuilds on change.
const SCHEMA_YAML: &str = include_str!("../../runtime/native_functions.yaml");

/// Keys a kernel may be registered under.
const KEYS: &[&str] = opforge_schema::model::RUNTIME_DISPATCH_KEYS;

/// The operators of the schema file, parsed once per compiler process.
fn schema_file() -> Result<&'static [NativeFunction], String> {
    static FILE: OnceLock<Result<Vec<NativeFunction>, String>> = OnceLock::new();
    FILE.get_or_init(|| {
        opforge_schema::load::load_str("native_functions.yaml", SCHEMA_YAML)
            .map(|f| f.entries)
            .map_err(|d| d.to_string())
    })
    .as_ref()
    .map(Vec::as_slice)
    .map_err(Clone::clone)
}

/// The operator named `name` in the project's schema file.
pub(crate) fn find(name: &str) -> Option<&'static NativeFunction> {
    find_op(schema_file().ok()?, name)
}

/// Finds `ns::name.overload` (namespace `aten` when not written).
fn find_op<'a>(ops: &'a [NativeFunction], name: &str) -> Option<&'a NativeFunction> {
    let (ns, rest) = name.split_once("::").unwrap_or(("aten", name));
    ops.iter()
        .find(|o| o.func.name.namespace() == ns && o.name() == rest)
}

/// Every problem found, each on its own tokens. Once the operator is known, every
/// message ends with its schema.
#[derive(Default)]
pub(crate) struct Errors {
    list: Vec<syn::Error>,
    schema: Option<String>,
}

impl Errors {
    fn message(&self, msg: impl Display) -> String {
        match &self.schema {
            Some(s) => format!("{msg}\n  schema: {s}"),
            None => msg.to_string(),
        }
    }

    /// An error at one token.
    fn at(&mut self, span: Span, msg: impl Display) {
        let e = syn::Error::new(span, self.message(msg));
        self.list.push(e);
    }

    /// An error underlining all of `tokens`.
    pub(crate) fn on(&mut self, tokens: impl ToTokens, msg: impl Display) {
        let e = syn::Error::new_spanned(tokens, self.message(msg));
        self.list.push(e);
    }

    pub(crate) fn tokens(&self) -> TokenStream {
        self.list.iter().map(syn::Error::to_compile_error).collect()
    }
}

/// The attribute's arguments: `KEY, "op"`.
struct Attr {
    key: syn::Ident,
    op: syn::LitStr,
}

impl syn::parse::Parse for Attr {
    fn parse(input: syn::parse::ParseStream) -> syn::Result<Self> {
        let usage =
            "expected `#[kernel(KEY, \"name.overload\")]`, e.g. `#[kernel(CPU, \"add.Tensor\")]`";
        let key: syn::Ident = input
            .parse()
            .map_err(|e| syn::Error::new(e.span(), usage))?;
        input
            .parse::<syn::Token![,]>()
            .map_err(|e| syn::Error::new(e.span(), usage))?;
        let op: syn::LitStr = input.parse().map_err(|e| {
            syn::Error::new(
                e.span(),
                "expected the operator as a string, e.g. \"add.Tensor\"",
            )
        })?;
        let _ = input.parse::<Option<syn::Token![,]>>()?;
        Ok(Attr { key, op })
    }
}

/// The expansion of `#[kernel(attr)] item`; the macro entry point calls this.
pub fn expand(attr: TokenStream, item: TokenStream) -> TokenStream {
    let func: syn::ItemFn = match syn::parse2(item.clone()) {
        Ok(f) => f,
        Err(_) => {
            let e = syn::Error::new(
                item.span(),
                "#[kernel] goes on a free function: `fn name(args) -> Result<T>`",
            );
            let e = e.to_compile_error();
            return quote!(#item #e);
        }
    };
    let attr: Attr = match syn::parse2(attr) {
        Ok(a) => a,
        Err(e) => {
            let e = e.to_compile_error();
            return quote!(#func #e);
        }
    };
    match check(&attr, &func) {
        Ok(registration) => quote!(#func #registration),
        Err(errors) => {
            let e = errors.tokens();
            quote!(#func #e)
        }
    }
}

/// Checks the function against the schema; returns the registration tokens or every
/// problem found.
fn check(attr: &Attr, func: &syn::ItemFn) -> Result<TokenStream, Errors> {
    let mut errors = Errors::default();
    check_key(&attr.key, &mut errors);
    let ops = match schema_file() {
        Ok(ops) => ops,
        Err(e) => {
            errors.on(&attr.op, format!("cannot load native_functions.yaml:\n{e}"));
            return Err(errors);
        }
    };
    let name = attr.op.value();
    let Some(nf) = find_op(ops, &name) else {
        let names: Vec<String> = ops.iter().map(NativeFunction::name).collect();
        let near = opforge_schema::validate::nearest(&name, names.iter().map(String::as_str))
            .and_then(|n| find_op(ops, n));
        let msg = match near {
            Some(n) => format!(
                "no operator `{name}` in native_functions.yaml; did you mean `{}`?\n  schema: {}",
                n.name(),
                n.func
            ),
            None => format!("no operator `{name}` in native_functions.yaml"),
        };
        errors.on(&attr.op, msg);
        return Err(errors);
    };
    check_kernel(errors, &attr.key.to_string(), &name, &nf.func, func)
}

/// Reports an unknown dispatch key (with the nearest known one).
pub(crate) fn check_key(key: &syn::Ident, errors: &mut Errors) {
    let name = key.to_string();
    if !KEYS.contains(&name.as_str()) {
        let near = opforge_schema::validate::nearest(&name, KEYS.iter().copied())
            .map(|n| format!("; did you mean `{n}`?"))
            .unwrap_or_default();
        errors.at(
            key.span(),
            format!(
                "unknown dispatch key `{name}`{near} (keys: {})",
                KEYS.join(", ")
            ),
        );
    }
}

/// Checks `func` against `schema` (the one implementation of the per-parameter and
/// return checks, shared by `#[kernel]` and `#[op]`); returns the registration of
/// `func` as the kernel of the operator `name` under `key`, or every problem found
/// (`errors` may already hold some).
pub(crate) fn check_kernel(
    mut errors: Errors,
    key: &str,
    name: &str,
    schema: &FunctionSchema,
    func: &syn::ItemFn,
) -> Result<TokenStream, Errors> {
    errors.schema = Some(schema.to_string());
    let sig = &func.sig;
    check_signature(sig, &mut errors);
    let params = collect_params(sig, &mut errors);
    check_params(schema, sig, &params, &mut errors);
    let ret = check_return(schema, sig, &mut errors);
    match ret {
        Some(ret) if errors.list.is_empty() => {
            Ok(registration(key, name, schema, func, &params, ret))
        }
        _ => Err(errors),
    }
}

/// What makes a function something other than one plain, safe, concrete `fn`.
fn check_signature(sig: &syn::Signature, errors: &mut Errors) {
    if !sig.generics.params.is_empty() {
        errors.on(
            &sig.generics,
            "a kernel cannot be generic: the dispatcher calls one concrete function",
        );
    } else if let Some(w) = &sig.generics.where_clause {
        errors.on(w, "a kernel cannot have a `where` clause");
    }
    if let Some(a) = &sig.asyncness {
        errors.at(
            a.span(),
            "a kernel cannot be `async`: the dispatcher calls it and uses its result",
        );
    }
    if let Some(u) = &sig.unsafety {
        errors.at(
            u.span(),
            "a kernel cannot be `unsafe`: the dispatcher calls it as a safe `fn`",
        );
    }
    if let Some(abi) = &sig.abi {
        errors.on(
            abi,
            "a kernel cannot have an ABI: it is called as a Rust `fn`",
        );
    }
    if let Some(v) = &sig.variadic {
        errors.on(v, "a kernel cannot be variadic");
    }
}

/// A parameter: its name and type tokens.
struct Param<'a> {
    ident: &'a syn::Ident,
    ty: &'a syn::Type,
    arg: &'a syn::PatType,
}

fn collect_params<'a>(sig: &'a syn::Signature, errors: &mut Errors) -> Vec<Param<'a>> {
    let mut out = Vec::new();
    for input in &sig.inputs {
        match input {
            syn::FnArg::Receiver(r) if r.colon_token.is_some() => errors.on(
                r,
                format!(
                    "`self` is Rust's method receiver; the schema's `self` argument is spelled `self_`: write `self_: {}`",
                    show(&r.ty)
                ),
            ),
            syn::FnArg::Receiver(r) => errors.on(
                r,
                "a kernel is a free function, not a method: it cannot take `self` (the schema's `self` argument is spelled `self_`)",
            ),
            syn::FnArg::Typed(pt) => {
                if let syn::Type::ImplTrait(_) = pt.ty.as_ref() {
                    errors.on(&pt.ty, "a kernel parameter cannot be `impl Trait`");
                } else if sig.generics.params.is_empty() {
                    if let Some(lt) = named_lifetime(pt.ty.to_token_stream()) {
                        errors.on(
                            &lt,
                            format!(
                                "a kernel's references borrow for the call only: write the type without `{}`",
                                lt.to_string().replace(' ', "")
                            ),
                        );
                    }
                }
                match pt.pat.as_ref() {
                    syn::Pat::Ident(pi) if pi.subpat.is_none() => out.push(Param {
                        ident: &pi.ident,
                        ty: &pt.ty,
                        arg: pt,
                    }),
                    other => errors.on(
                        other,
                        "kernel parameters must be plain names (the schema's argument names)",
                    ),
                }
            }
        }
    }
    out
}

/// The first lifetime other than `'_` in `tokens` (as its two tokens).
fn named_lifetime(tokens: TokenStream) -> Option<TokenStream> {
    let mut it = tokens.into_iter().peekable();
    while let Some(tt) = it.next() {
        match &tt {
            TokenTree::Punct(p) if p.as_char() == '\'' => {
                if let Some(TokenTree::Ident(id)) = it.peek() {
                    if id != "_" {
                        let id = id.clone();
                        return Some(quote!(#tt #id));
                    }
                }
            }
            TokenTree::Group(g) => {
                if let Some(lt) = named_lifetime(g.stream()) {
                    return Some(lt);
                }
            }
            _ => {}
        }
    }
    None
}

/// A type as a person writes it: `&mut Tensor`, `Option<&[i64]>`.
pub(crate) fn show(ty: &impl ToTokens) -> String {
    let s = ty.to_token_stream().to_string();
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c == ' ' {
            let prev = out.chars().last();
            let next = chars.peek().copied();
            let glue_prev = matches!(prev, Some('&' | '<' | '[' | '(' | ':' | '\''));
            let glue_next = matches!(next, Some('<' | '>' | ',' | ']' | ')' | ':'));
            if glue_prev || glue_next {
                continue;
            }
        }
        out.push(c);
    }
    out
}

/// `self_` for `self`, and a leading `_` is allowed for unused parameters.
fn names_match(found: &str, expected: &str) -> bool {
    found == expected || found.strip_prefix('_') == Some(expected)
}

fn check_params(
    schema: &FunctionSchema,
    sig: &syn::Signature,
    params: &[Param],
    errors: &mut Errors,
) {
    let op = &schema.name;
    let all: Vec<String> = schema
        .arguments
        .all
        .iter()
        .map(|a| arg_ident(&a.name))
        .collect();
    // A receiver (already reported) stands in for the first argument.
    let skip = usize::from(matches!(sig.inputs.first(), Some(syn::FnArg::Receiver(_))));
    let args = &schema.arguments.all[skip.min(all.len())..];
    let expected = &all[skip.min(all.len())..];
    let found: Vec<String> = params.iter().map(|p| p.ident.to_string()).collect();
    let takes = format!(
        "`{op}` takes {} parameter{} ({})",
        all.len(),
        if all.len() == 1 { "" } else { "s" },
        all.join(", ")
    );
    // Same names in another order: one error saying so.
    let mut a = expected.to_vec();
    let mut b: Vec<String> = found
        .iter()
        .map(|f| {
            f.strip_prefix('_')
                .filter(|r| expected.iter().any(|e| e == r))
                .unwrap_or(f)
                .to_string()
        })
        .collect();
    a.sort();
    b.sort();
    if a == b && expected.iter().zip(&found).any(|(e, f)| !names_match(f, e)) {
        errors.on(
            &sig.inputs,
            format!(
                "parameters out of order: `{op}` takes ({}), found ({})",
                expected.join(", "),
                found.join(", ")
            ),
        );
        return;
    }
    for (i, (p, a)) in params.iter().zip(args).enumerate() {
        let want = &expected[i];
        if !names_match(&p.ident.to_string(), want) {
            errors.at(
                p.ident.span(),
                format!(
                    "parameter {}: `{op}` expects `{want}`, found `{}`",
                    i + 1 + skip,
                    p.ident
                ),
            );
        }
        // Written tensors are taken as `&mut Tensor`, the others not.
        let is_mut_ref = matches!(p.ty, syn::Type::Reference(r) if r.mutability.is_some());
        let Some(want_ty) = param_type(a, Spelling::Short) else {
            errors.on(
                p.arg,
                format!("`{a}` has no Rust type mapping yet, so `{op}` cannot have a typed kernel"),
            );
            continue;
        };
        let wants_mut = want_ty.starts_with("&mut ");
        if wants_mut != is_mut_ref {
            errors.on(
                p.ty,
                format!(
                    "parameter {} `{want}` is {}written by `{op}` (`{a}`): take it as `{want_ty}`, not `{}`",
                    i + 1 + skip,
                    if wants_mut { "" } else { "not " },
                    show(p.ty)
                ),
            );
        }
    }
    if params.len() < args.len() {
        let missing: Vec<String> = args[params.len()..]
            .iter()
            .map(|a| {
                format!(
                    "`{}: {}`",
                    arg_ident(&a.name),
                    param_type(a, Spelling::Short).unwrap_or_else(|| "?".into())
                )
            })
            .collect();
        errors.at(
            sig.paren_token.span.close(),
            format!(
                "missing parameter{} {}: {takes}",
                if missing.len() == 1 { "" } else { "s" },
                missing.join(", "),
            ),
        );
    }
    for p in params.iter().skip(args.len()) {
        errors.on(p.arg, format!("extra parameter `{}`: {takes}", p.ident));
    }
}

/// Checks the return type's form; returns the schema's `Result<T>` (qualified) if
/// the operator's returns have a Rust mapping.
fn check_return(
    schema: &FunctionSchema,
    sig: &syn::Signature,
    errors: &mut Errors,
) -> Option<String> {
    let op = &schema.name;
    let Some(want) = result_type(&schema.returns, Spelling::Short) else {
        errors.on(
            &sig.output,
            format!("the returns of `{op}` have no Rust type mapping yet, so it cannot have a typed kernel"),
        );
        return None;
    };
    match &sig.output {
        syn::ReturnType::Default => errors.at(
            sig.paren_token.span.close(),
            format!("missing return type: a kernel for `{op}` returns `{want}`"),
        ),
        syn::ReturnType::Type(_, ty) => {
            if let syn::Type::ImplTrait(_) = ty.as_ref() {
                errors.on(
                    ty,
                    format!("a kernel cannot return `impl Trait`: `{op}` returns `{want}`"),
                );
            }
        }
    }
    result_type(&schema.returns, Spelling::Qualified)
}

fn parse_type(s: &str) -> TokenStream {
    s.parse().unwrap_or_else(|_| quote!(()))
}

/// Escapes text for an `on_unimplemented` format string.
fn literal(s: &str) -> String {
    s.replace('{', "{{").replace('}', "}}")
}

fn registration(
    key: &str,
    name: &str,
    schema: &FunctionSchema,
    func: &syn::ItemFn,
    params: &[Param],
    ret: String,
) -> TokenStream {
    let fn_ident = &func.sig.ident;
    let n = params.len();
    let op = &schema.name;
    let note = literal(&format!("schema: {schema}"));
    // Shared by the per-parameter and return traits: `T: __OpforgeSame<U>` holds
    // only for `T = U`. Their impls are blanket impls over it, marked
    // `do_not_recommend`, so that rustc reports the unmet trait itself (with our
    // message) and lists no candidate impls.
    let mut items = vec![quote! {
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
    }];
    let mut shim_params = Vec::new();
    let mut shim_args = Vec::new();
    let mut bindings = Vec::new();
    let mut boxed_args = Vec::new();
    for (i, (p, a)) in params.iter().zip(&schema.arguments.all).enumerate() {
        let want = param_type(a, Spelling::Qualified).unwrap_or_default();
        let want_short = param_type(a, Spelling::Short).unwrap_or_default();
        let user_ty = p.ty;
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
        let schema_ty = parse_type(&want);
        shim_params.push(quote!(#v: #schema_ty));
        let (generics, use_generics, want_a) = if want.contains('&') {
            (
                quote!(<'a>),
                quote!(<'_>),
                parse_type(&want.replace('&', "&'a ")),
            )
        } else {
            (quote!(), quote!(), schema_ty.clone())
        };
        let impl_generics = if want.contains('&') {
            quote!(<'a, T: __OpforgeSame<#want_a>>)
        } else {
            quote!(<T: __OpforgeSame<#want_a>>)
        };
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
        if want.starts_with("&mut ") {
            bindings.push(quote! {
                let mut #v: ::opforge::Tensor = <&::opforge::Tensor as ::opforge::__private::FromValue>::from_value(&args[#i])?.clone();
            });
            boxed_args.push(quote!(&mut #v));
        } else if want_short == "&Tensor" {
            // A number given for a tensor (allow-listed operators) reaches the
            // kernel as a wrapped-number tensor.
            let w = format_ident!("__opforge_wrapped_{}", i);
            bindings.push(quote! {
                let #w = ::opforge::__private::wrap_number(&args[#i]);
                let #v: &::opforge::Tensor = match &#w {
                    ::std::option::Option::Some(t) => t,
                    ::std::option::Option::None => <&::opforge::Tensor as ::opforge::__private::FromValue>::from_value(&args[#i])?,
                };
            });
            boxed_args.push(quote!(#v));
        } else {
            bindings.push(quote! {
                let #v = <#schema_ty as ::opforge::__private::FromValue>::from_value(&args[#i])?;
            });
            boxed_args.push(quote!(#v));
        }
    }
    let ret_short = result_type(&schema.returns, Spelling::Short).unwrap_or_default();
    let ret_ty = parse_type(&ret);
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
    let call = quote!(#fn_ident(#(#shim_args),*));
    let ret_call = match &func.sig.output {
        syn::ReturnType::Type(_, user_ret) => quote_spanned! {user_ret.span()=>
            <#user_ret as #ret_tr>::__opforge_return(#call)
        },
        syn::ReturnType::Default => quote!(#call),
    };
    let fn_ty = parse_type(&fn_pointer_type(schema, Spelling::Qualified).unwrap_or_default());
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

    fn errors(attr: TokenStream, item: TokenStream) -> Vec<String> {
        crate::compile_errors(&expand(attr, item))
    }

    #[test]
    fn a_matching_kernel_registers_a_shim_typed_by_the_schema() {
        let out = expand(
            quote!(CPU, "add.Tensor"),
            quote!(
                fn add(self_: &Tensor, other: &Tensor, alpha: Scalar) -> Result<Tensor> {
                    todo()
                }
            ),
        )
        .to_string();
        assert!(!out.contains("compile_error"), "{out}");
        assert!(out.contains("distributed_slice"));
        // The unboxed entry is a function with the schema's own signature, and the
        // user's types only meet the schema's through the per-parameter traits.
        let flat: String = out.split_whitespace().collect();
        for part in [
            "fn__opforge_unboxed(__a0:&::opforge::Tensor,__a1:&::opforge::Tensor,__a2:::opforge::Scalar)->::opforge::Result<::opforge::Tensor>",
            "letf:fn(&::opforge::Tensor,&::opforge::Tensor,::opforge::Scalar)->::opforge::Result<::opforge::Tensor>=__opforge_unboxed;::opforge::__private::Unboxed::new(f)",
            "<&Tensoras__opforge_add_param_other<'_>>::__opforge_param(__a1)",
            "<Result<Tensor>as__opforge_add_return>::__opforge_return(add(",
            "parameter2`other`of`add.Tensor`mustbe`&Tensor`,found`&Tensor`",
        ] {
            assert!(flat.contains(part), "{part}\n{out}");
        }
    }

    #[test]
    fn names_order_arity_and_mutability_are_checked() {
        let e = errors(
            quote!(CPU, "add.Tensor"),
            quote!(
                fn add(self_: &Tensor, rhs: &Tensor, alpha: Scalar) -> Result<Tensor> {}
            ),
        );
        assert_eq!(e.len(), 1);
        assert!(
            e[0].contains("parameter 2: `add.Tensor` expects `other`, found `rhs`"),
            "{e:?}"
        );
        assert!(
            e[0].contains(
                "schema: add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor"
            ),
            "{e:?}"
        );
        let e = errors(
            quote!(CPU, "add.Tensor"),
            quote!(
                fn add(other: &Tensor, self_: &Tensor, alpha: Scalar) -> Result<Tensor> {}
            ),
        );
        assert!(e[0].contains("parameters out of order"), "{e:?}");
        let e = errors(
            quote!(CPU, "add.Tensor"),
            quote!(
                fn add(self_: &Tensor) -> Result<Tensor> {}
            ),
        );
        assert!(
            e[0].contains("missing parameters `other: &Tensor`, `alpha: Scalar`"),
            "{e:?}"
        );
        let e = errors(
            quote!(CPU, "neg"),
            quote!(
                fn neg(self_: &Tensor, extra: i64) -> Result<Tensor> {}
            ),
        );
        assert!(e[0].contains("extra parameter `extra`"), "{e:?}");
        let e = errors(
            quote!(CPU, "add.out"),
            quote!(
                fn f(
                    self_: &Tensor,
                    other: &Tensor,
                    alpha: Scalar,
                    out: &Tensor,
                ) -> Result<Tensor> {
                }
            ),
        );
        assert!(
            e[0].contains("parameter 4 `out` is written by `add.out`"),
            "{e:?}"
        );
        assert!(
            e[0].contains("take it as `&mut Tensor`, not `&Tensor`"),
            "{e:?}"
        );
    }

    #[test]
    fn unknown_operator_and_key_suggest() {
        let e = errors(
            quote!(CPU, "add.Tensr"),
            quote!(
                fn f() {}
            ),
        );
        assert!(e[0].contains("did you mean `add.Tensor`?"), "{e:?}");
        assert!(e[0].contains("schema: add.Tensor("), "{e:?}");
        let e = errors(
            quote!(CPUU, "neg"),
            quote!(
                fn f(self_: &Tensor) -> Result<Tensor> {}
            ),
        );
        assert!(e[0].contains("did you mean `CPU`?"), "{e:?}");
    }

    #[test]
    fn only_plain_safe_concrete_free_functions() {
        let e = errors(
            quote!(CPU, "neg"),
            quote!(
                async fn f<T>(self_: &Tensor) -> Result<Tensor> {}
            ),
        );
        assert_eq!(e.len(), 2, "{e:?}");
        let e = errors(
            quote!(CPU, "neg"),
            quote!(
                unsafe fn f(self_: &'static Tensor) {}
            ),
        );
        assert_eq!(e.len(), 3, "{e:?}");
        assert!(e[0].contains("cannot be `unsafe`"), "{e:?}");
        assert!(e[1].contains("without `'static`"), "{e:?}");
        assert!(
            e[2].contains("missing return type: a kernel for `neg` returns `Result<Tensor>`"),
            "{e:?}"
        );
        // A receiver stands for the first argument: one error, not also "missing".
        let e = errors(
            quote!(CPU, "neg"),
            quote!(
                fn f(self: &Tensor) -> Result<Tensor> {}
            ),
        );
        assert_eq!(e.len(), 1, "{e:?}");
        assert!(e[0].contains("write `self_: &Tensor`"), "{e:?}");
        let e = errors(
            quote!(CPU, "add.Tensor"),
            quote!(
                fn f(&self, rhs: &Tensor, alpha: Scalar) -> Result<Tensor> {}
            ),
        );
        assert_eq!(e.len(), 2, "{e:?}");
        assert!(
            e[1].contains("parameter 2: `add.Tensor` expects `other`, found `rhs`"),
            "{e:?}"
        );
    }

    #[test]
    fn types_are_shown_as_written() {
        let ty: syn::Type = syn::parse_quote!(Option<&'a [::opforge::Tensor]>);
        assert_eq!(show(&ty), "Option<&'a [::opforge::Tensor]>");
        let ty: syn::Type = syn::parse_quote!(&mut Tensor);
        assert_eq!(show(&ty), "&mut Tensor");
        let ty: syn::Type = syn::parse_quote!(std::result::Result<(Tensor, Tensor), E>);
        assert_eq!(show(&ty), "std::result::Result<(Tensor, Tensor), E>");
    }
}
