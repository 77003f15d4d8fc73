//! `#[kernel(KEY, "name.overload")]` / `#[kernel(KEY)]`: checks a Rust function
//! against its operator's schema at compile time and registers it with the
//! dispatcher.
//!
//! The attribute emits the function unchanged, then a call of the schema lookup
//! of the crate being compiled ([`crate::lookup`]) with `kernel_impl!` as the
//! callback. `#[kernel(KEY, "op")]` looks the operator up by name;
//! `#[kernel(KEY)]` by the key and the function's name, among the kernels the
//! crate's YAML names in `dispatch:`. `kernel_impl!` receives the schema and
//! emits either every problem it can see (each a `compile_error!` on the
//! offending tokens, naming both sides and quoting the schema), or:
//!
//! - the *unboxed* kernel: a shim whose signature is the schema's (the type the
//!   dispatcher's typed path asks for, `opforge::sig::<op>`) and which calls the
//!   user's function;
//! - the *boxed* adapter (values in, values out), which calls the shim;
//! - the link-time entry in `opforge::__private::KERNELS`;
//! - a marker beside the function, `__opforge_<KEY>_kernel_of_<op>`, which the
//!   generated check of each `dispatch:` row refers to (so a kernel the YAML
//!   names but nobody wrote is a compile error naming the YAML line), and which
//!   makes a second kernel for the same operator and key in one module a
//!   compile error.
//!
//! A kernel for a key the YAML already names a kernel for is an error: in the
//! crate that owns the YAML, unless it is that kernel (same function name); in
//! any other crate, always (a second kernel for one key; replacing one is
//! explicit, at run time, with `Operator::override_kernel`).
//!
//! Types are rustc's job. The shim converts each argument to the user's parameter
//! type through a trait implemented only for the schema's type and spanned at the
//! user's type, so a wrong type is one error there, worded by
//! `#[diagnostic::on_unimplemented]` (the schema type, the type found and the
//! schema). The return goes through such a trait too.

use crate::lookup::{self, Entry, Found};
use opforge_codegen::emit_lookup::kernel_marker;
use opforge_codegen::rust_types::{is_boxed, param_type, result_type};
use opforge_schema::model::FunctionSchema;
use opforge_schema::names::{arg_ident, op_ident};
use proc_macro2::{Span, TokenStream, TokenTree};
use quote::{format_ident, quote, ToTokens};
use std::fmt::Display;
use syn::spanned::Spanned;

pub(crate) use opforge_codegen::rust_types::show;

/// Keys a kernel may be registered under.
const KEYS: &[&str] = opforge_schema::model::RUNTIME_DISPATCH_KEYS;

/// Every problem found, each on its own tokens. Once the operator is known, every
/// message ends with its schema.
#[derive(Default)]
pub(crate) struct Errors {
    list: Vec<syn::Error>,
    schema: Option<String>,
    /// Where the function's parameter list closes (tokens that went through the
    /// lookup macro lose that span, so the attribute sends it along).
    close: Option<Span>,
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

/// The attribute's arguments: `KEY, "op"` or `KEY`, and optionally
/// `schema = crate_path` (whose schema file declares the operator).
struct Attr {
    key: syn::Ident,
    op: Option<syn::LitStr>,
    schema: Option<syn::Path>,
}

const USAGE: &str = "expected `#[kernel(KEY, \"name.overload\")]` or `#[kernel(KEY)]`, e.g. `#[kernel(CPU, \"add.Tensor\")]` (and `schema = my_crate` for an operator another crate's schema file declares)";

impl syn::parse::Parse for Attr {
    fn parse(input: syn::parse::ParseStream) -> syn::Result<Self> {
        let key: syn::Ident = input
            .parse()
            .map_err(|e| syn::Error::new(e.span(), USAGE))?;
        let mut op = None;
        let mut schema = None;
        while input.parse::<Option<syn::Token![,]>>()?.is_some() && !input.is_empty() {
            if input.peek(syn::LitStr) && op.is_none() && schema.is_none() {
                op = Some(input.parse()?);
            } else if input.peek(syn::Ident) && input.peek2(syn::Token![=]) {
                let name: syn::Ident = input.parse()?;
                if name != "schema" || schema.is_some() {
                    return Err(syn::Error::new(
                        name.span(),
                        format!("unknown argument `{name}`: {USAGE}"),
                    ));
                }
                input.parse::<syn::Token![=]>()?;
                schema = Some(input.parse()?);
            } else {
                return Err(syn::Error::new(
                    input.span(),
                    "expected the operator as a string, e.g. \"add.Tensor\"",
                ));
            }
        }
        if !input.is_empty() {
            return Err(input.error(USAGE));
        }
        Ok(Attr { key, op, schema })
    }
}

/// The expansion of `#[kernel(attr)] item`; the macro entry point calls this.
/// The function, then the schema lookup with `kernel_impl!` as its callback.
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
    let mut errors = Errors::default();
    check_key(&attr.key, &mut errors);
    if !errors.list.is_empty() {
        let e = errors.tokens();
        return quote!(#func #e);
    }
    let lookup = match &attr.schema {
        Some(c) => quote!(#c::__opforge_schema),
        None => lookup::schema_macro(),
    };
    let key = &attr.key;
    let fn_name = &func.sig.ident;
    let (query, name) = match &attr.op {
        Some(op) => {
            let q = lookup::qualified(&op.value());
            (quote!(#q), quote!(#op))
        }
        None => (quote!(@kernel #key #fn_name), quote!(_)),
    };
    let close = close_marker(&func.sig);
    let via = match &attr.schema {
        Some(c) => quote!(via = { #c },),
        None => quote!(),
    };
    quote! {
        #func
        #lookup! { #query => [::opforge::__private::kernel_impl] key = #key, name = #name, close = #close, #via item = { #func } }
    }
}

/// An identifier spanned at the closing parenthesis of the parameter list.
pub(crate) fn close_marker(sig: &syn::Signature) -> syn::Ident {
    syn::Ident::new("close", sig.paren_token.span.close())
}

/// The expansion of `kernel_impl! { found/unknown { … } key = K, name = "op"|_, item = { fn } }`.
pub fn expand_impl(input: TokenStream) -> TokenStream {
    let (found, rest) = match lookup::parse(input) {
        Ok(x) => x,
        Err(e) => return e.to_compile_error(),
    };
    let payload = match Payload::parse(rest) {
        Ok(p) => p,
        Err(e) => return e.to_compile_error(),
    };
    let mut errors = Errors {
        close: payload.close,
        ..Errors::default()
    };
    let entry = match found {
        Found::Op(e) if payload.suggested => {
            // The lookup of the name suggested for a misspelt one: the error,
            // with the suggestion's schema.
            let Some(op) = &payload.name else {
                return quote!();
            };
            let short = e.op.strip_prefix("aten::").unwrap_or(&e.op);
            errors.schema = Some(e.schema.clone());
            errors.on(
                op,
                format!(
                    "no operator `{}` in the schema; did you mean `{short}`?",
                    op.value()
                ),
            );
            return errors.tokens();
        }
        Found::Op(e) => e,
        Found::Unknown(names) => {
            match &payload.name {
                Some(op) if !payload.suggested => {
                    let name = op.value();
                    let q = lookup::qualified(&name);
                    let all = names.iter().chain(&payload.also).map(String::as_str);
                    if let Some(near) = lookup::nearest(&q, all) {
                        // Look the suggestion up, to show its schema.
                        let lookup = match &payload.via {
                            Some(c) => quote!(#c::__opforge_schema),
                            None => lookup::schema_macro(),
                        };
                        let (key, func) = (&payload.key, &payload.func);
                        return quote! {
                            #lookup! { #near => [::opforge::__private::kernel_impl] key = #key, name = #op, suggested = yes, item = { #func } }
                        };
                    }
                    errors.on(op, format!("no operator `{name}` in the schema"));
                }
                Some(op) => errors.on(op, format!("no operator `{}` in the schema", op.value())),
                // The function-name form: `names` are the kernel functions
                // the YAML names under this key.
                None => {
                    let func = payload.func.sig.ident.to_string();
                    let hint = match lookup::nearest(&func, names.iter().map(String::as_str)) {
                        Some(near) => format!("; did you mean `{near}`?"),
                        None => format!(
                            ": name its operator, `#[kernel({}, \"name.overload\")]`",
                            payload.key
                        ),
                    };
                    errors.at(
                        payload.func.sig.ident.span(),
                        format!(
                            "no {} kernel named `{func}` in the crate's native_functions.yaml{hint}",
                            payload.key
                        ),
                    )
                }
            }
            return errors.tokens();
        }
    };
    match check(&payload, &entry, errors) {
        Ok(tokens) => tokens,
        Err(errors) => errors.tokens(),
    }
}

/// The attribute's tokens, as the lookup hands them back.
struct Payload {
    key: syn::Ident,
    name: Option<syn::LitStr>,
    close: Option<Span>,
    /// A second lookup, of the name suggested for `name`: show its schema.
    suggested: bool,
    /// The crate whose lookup was asked (`schema = …`), if not the default.
    via: Option<TokenStream>,
    /// Names a crate's lookup added before forwarding (for suggestions).
    also: Vec<String>,
    func: syn::ItemFn,
}

impl Payload {
    fn parse(ts: TokenStream) -> syn::Result<Payload> {
        let mut key = None;
        let mut name = None;
        let mut close = None;
        let mut suggested = false;
        let mut via = None;
        let mut also = Vec::new();
        let mut item = None;
        for (field, value) in lookup::payload_fields(ts) {
            match (field.as_str(), value) {
                ("key", TokenTree::Ident(k)) => key = Some(k),
                ("name", TokenTree::Literal(l)) => {
                    name = Some(syn::parse2::<syn::LitStr>(TokenTree::Literal(l).into())?)
                }
                ("close", TokenTree::Ident(c)) => close = Some(c.span()),
                ("suggested", TokenTree::Ident(_)) => suggested = true,
                ("via", TokenTree::Group(g)) => via = Some(g.stream()),
                ("also", TokenTree::Group(g)) => {
                    let list: syn::ExprArray = syn::parse2(TokenTree::Group(g).into())?;
                    for e in list.elems {
                        if let syn::Expr::Lit(syn::ExprLit {
                            lit: syn::Lit::Str(s),
                            ..
                        }) = e
                        {
                            also.push(s.value());
                        }
                    }
                }
                ("item", TokenTree::Group(g)) => item = Some(syn::parse2(g.stream())?),
                _ => {}
            }
        }
        match (key, item) {
            (Some(key), Some(func)) => Ok(Payload {
                key,
                name,
                close,
                suggested,
                via,
                also,
                func,
            }),
            _ => Err(syn::Error::new(
                Span::call_site(),
                "kernel_impl!: malformed input",
            )),
        }
    }
}

/// Is the operator from the schema file of the crate being compiled?
pub(crate) fn is_own(entry: &Entry) -> bool {
    let var = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
    var("CARGO_CRATE_NAME").as_deref() == Some(entry.crate_name.as_str())
        && var("CARGO_BIN_NAME").is_none()
        && var("UNSTABLE_RUSTDOC_TEST_PATH").is_none()
}

/// Checks the function against the schema and the YAML's `dispatch:` rows;
/// returns the registration tokens or every problem found.
fn check(p: &Payload, entry: &Entry, mut errors: Errors) -> Result<TokenStream, Errors> {
    let key = p.key.to_string();
    let schema = match opforge_schema::schema::parse_schema(&entry.schema) {
        Ok(s) => s,
        Err(e) => {
            errors.at(
                p.key.span(),
                format!("the schema of `{}` does not parse: {e}", entry.op),
            );
            return Err(errors);
        }
    };
    let short = entry.op.strip_prefix("aten::").unwrap_or(&entry.op);
    let named = entry.kernels.iter().find(|(k, _)| *k == key);
    let fn_name = p.func.sig.ident.to_string();
    match named {
        Some((_, path)) if is_own(entry) => {
            let yaml_fn = path.rsplit("::").next().unwrap_or(path);
            if yaml_fn != fn_name {
                errors.at(
                    p.func.sig.ident.span(),
                    format!(
                        "{} names `{path}` as the {key} kernel of `{short}`: `{fn_name}` would be a second one (the kernel the YAML names has the name it gives)",
                        entry.place()
                    ),
                );
            }
        }
        Some((_, path)) => errors.at(
            p.key.span(),
            format!(
                "`{short}` already has a {key} kernel: {}'s {} names `{path}`; a second kernel for one operator and key is an error (replace it at run time with `Operator::override_kernel`, which says so)",
                entry.crate_name,
                entry.place()
            ),
        ),
        None => {}
    }
    let name = p
        .name
        .as_ref()
        .map_or(short.to_string(), syn::LitStr::value);
    let registration = check_kernel(errors, &key, &name, &schema, &p.func)?;
    let marker = format_ident!("{}", kernel_marker(&key, &op_ident(&schema.name)));
    let vis = &p.func.vis;
    let doc = format!(" `{}` is the {key} kernel of `{short}`.", p.func.sig.ident);
    Ok(quote! {
        #[doc = #doc]
        #[doc(hidden)]
        #[allow(non_upper_case_globals, dead_code)]
        #vis const #marker: () = ();
        #registration
    })
}

/// Reports an unknown dispatch key (with the nearest known one).
pub(crate) fn check_key(key: &syn::Ident, errors: &mut Errors) {
    let name = key.to_string();
    if !KEYS.contains(&name.as_str()) {
        let near = opforge_schema::diag::nearest(&name, KEYS.iter().copied())
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
    let ret = if is_boxed(schema) {
        check_boxed(schema, sig, &params, &mut errors)
    } else {
        check_params(schema, sig, &params, &mut errors);
        check_return(schema, sig, &mut errors)
    };
    match ret {
        Some(ret) if errors.list.is_empty() => {
            let params: Vec<(&syn::Ident, &syn::Type)> =
                params.iter().map(|p| (p.ident, p.ty)).collect();
            Ok(opforge_codegen::kernel::registration(
                key, name, schema, func, &params, ret,
            ))
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
        let want_ty = match param_type(a) {
            Ok(t) => show(&t),
            Err(e) => {
                errors.on(
                    p.arg,
                    format!("`{op}` cannot have a typed kernel: `{a}`: {e}"),
                );
                continue;
            }
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
                    param_type(a).map_or_else(|_| "?".into(), |t| show(&t))
                )
            })
            .collect();
        errors.at(
            errors.close.unwrap_or_else(|| sig.paren_token.span.close()),
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

/// Checks a boxed kernel (an operator whose schema has `...` or `Any`,
/// `opforge_codegen::rust_types::is_boxed`): one parameter, `&[Value]`, and
/// `Result<Vec<Value>>`; returns that `Result<Vec<Value>>`.
fn check_boxed(
    schema: &FunctionSchema,
    sig: &syn::Signature,
    params: &[Param],
    errors: &mut Errors,
) -> Option<syn::Type> {
    let op = &schema.name;
    let want = "fn(values: &[Value]) -> Result<Vec<Value>>";
    let why = format!(
        "`{op}` takes its values boxed (its schema has `...` or `Any`): its kernel is `{want}`"
    );
    match params.first() {
        Some(p) if show(p.ty) == "&[Value]" => {}
        Some(p) => errors.on(p.ty, format!("{why}, found `{}`", show(p.ty))),
        None => errors.at(
            errors.close.unwrap_or_else(|| sig.paren_token.span.close()),
            format!("missing parameter `values: &[Value]`: {why}"),
        ),
    }
    for p in params.iter().skip(1) {
        errors.on(p.arg, format!("extra parameter `{}`: {why}", p.ident));
    }
    let ret: syn::Type = syn::parse_quote!(::opforge::Result<::std::vec::Vec<::opforge::Value>>);
    match &sig.output {
        syn::ReturnType::Type(_, ty) if show(ty) == show(&ret) => {}
        syn::ReturnType::Type(_, ty) => errors.on(ty, format!("{why}, found `-> {}`", show(ty))),
        syn::ReturnType::Default => errors.at(
            errors.close.unwrap_or_else(|| sig.paren_token.span.close()),
            format!("missing return type: {why}"),
        ),
    }
    Some(ret)
}

/// Checks the return type's form; returns the schema's `Result<T>` if the
/// operator's returns have a Rust mapping.
fn check_return(
    schema: &FunctionSchema,
    sig: &syn::Signature,
    errors: &mut Errors,
) -> Option<syn::Type> {
    let op = &schema.name;
    let ret = match result_type(&schema.returns) {
        Ok(t) => t,
        Err(e) => {
            errors.on(
                &sig.output,
                format!("`{op}` cannot have a typed kernel: {e}"),
            );
            return None;
        }
    };
    let want = show(&ret);
    match &sig.output {
        syn::ReturnType::Default => errors.at(
            errors.close.unwrap_or_else(|| sig.paren_token.span.close()),
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
    Some(ret)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `kernel_impl!` receives from the lookup for a schema.
    fn found(schema: &str, kernels: TokenStream) -> TokenStream {
        let f = opforge_schema::schema::parse_schema(schema).unwrap();
        let op = format!("{}::{}", f.name.namespace(), f.name.unqualified());
        quote!(found { op: #op, schema: #schema, file: "native_functions.yaml", line: 7, crate: "opforge", kernels: [#kernels] })
    }

    fn expand_with(schema: &str, key: TokenStream, item: TokenStream) -> TokenStream {
        let found = found(schema, quote!());
        expand_impl(quote!(#found key = #key, name = _, item = { #item }))
    }

    fn errors(schema: &str, key: TokenStream, item: TokenStream) -> Vec<String> {
        crate::compile_errors(&expand_with(schema, key, item))
    }

    const ADD: &str = "add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor";

    #[test]
    fn the_attribute_calls_the_lookup() {
        let out = expand(
            quote!(CPU, "add.Tensor"),
            quote!(
                fn add(self_: &Tensor, other: &Tensor, alpha: Scalar) -> Result<Tensor> {
                    todo()
                }
            ),
        )
        .to_string();
        let flat: String = out.split_whitespace().collect();
        assert!(flat.starts_with("fnadd("), "{out}");
        assert!(
            flat.contains("__opforge_schema!{\"aten::add.Tensor\"=>[::opforge::__private::kernel_impl]key=CPU,name=\"add.Tensor\",close=close,item={fnadd("),
            "{out}"
        );
        let out = expand(
            quote!(Meta),
            quote!(
                fn add_out() {}
            ),
        )
        .to_string();
        assert!(out.contains("{ @ kernel Meta add_out =>"), "{out}");
        let e = crate::compile_errors(&expand(
            quote!(CPUU, "neg"),
            quote!(
                fn f() {}
            ),
        ));
        assert!(e[0].contains("did you mean `CPU`?"), "{e:?}");
    }

    #[test]
    fn a_matching_kernel_is_registered_as_it_is() {
        let out = expand_with(
            ADD,
            quote!(CPU),
            quote!(
                pub fn add(self_: &Tensor, other: &Tensor, alpha: Scalar) -> Result<Tensor> {
                    todo()
                }
            ),
        )
        .to_string();
        assert!(!out.contains("compile_error"), "{out}");
        let flat: String = out.split_whitespace().collect();
        for part in [
            "pubconst__opforge_CPU_kernel_of_add_Tensor:()=();",
            "::opforge::__private::kernel_entry!(__OPFORGE_CPU_KERNEL_add,\"add.Tensor\",\"CPU\",",
            "\"add.Tensor(Tensorself,Tensorother,*,Scalaralpha=1)->Tensor\",",
            "fn(&::opforge::Tensor,&::opforge::Tensor,::opforge::Scalar)->::opforge::Result<::opforge::Tensor>,fn(&'static::opforge::Tensor,&'static::opforge::Tensor,::opforge::Scalar)->::opforge::Result<::opforge::Tensor>,add,",
        ] {
            assert!(flat.contains(part), "{part}\n{out}");
        }
        assert!(!flat.contains("__opforge_unboxed"), "no shim: {out}");
    }

    #[test]
    fn another_spelling_registers_a_shim_typed_by_the_schema() {
        let out = expand_with(
            ADD,
            quote!(CPU),
            quote!(
                pub fn add(
                    self_: &opforge::Tensor,
                    other: &Tensor,
                    alpha: Scalar,
                ) -> Result<Tensor> {
                    todo()
                }
            ),
        )
        .to_string();
        assert!(!out.contains("compile_error"), "{out}");
        let flat: String = out.split_whitespace().collect();
        for part in [
            "fn__opforge_unboxed(__a0:&::opforge::Tensor,__a1:&::opforge::Tensor,__a2:::opforge::Scalar)->::opforge::Result<::opforge::Tensor>",
            "<&Tensoras__opforge_add_param_other<'_>>::__opforge_param(__a1)",
            "<Result<Tensor>as__opforge_add_return>::__opforge_return(add(",
            "parameter2`other`of`add.Tensor`mustbe`&Tensor`,found`&Tensor`",
            "->::opforge::Result<::opforge::Tensor>,__opforge_unboxed,::core::file!(),",
        ] {
            assert!(flat.contains(part), "{part}\n{out}");
        }
    }

    #[test]
    fn names_order_arity_and_mutability_are_checked() {
        let e = errors(
            ADD,
            quote!(CPU),
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
            ADD,
            quote!(CPU),
            quote!(
                fn add(other: &Tensor, self_: &Tensor, alpha: Scalar) -> Result<Tensor> {}
            ),
        );
        assert!(e[0].contains("parameters out of order"), "{e:?}");
        let e = errors(
            ADD,
            quote!(CPU),
            quote!(
                fn add(self_: &Tensor) -> Result<Tensor> {}
            ),
        );
        assert!(
            e[0].contains("missing parameters `other: &Tensor`, `alpha: Scalar`"),
            "{e:?}"
        );
        let e = errors(
            "neg(Tensor self) -> Tensor",
            quote!(CPU),
            quote!(
                fn neg(self_: &Tensor, extra: i64) -> Result<Tensor> {}
            ),
        );
        assert!(e[0].contains("extra parameter `extra`"), "{e:?}");
        let e = errors(
            "add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)",
            quote!(CPU),
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
    fn unknown_operators_suggest() {
        // An unknown name: a second lookup, of the nearest name.
        let out = expand_impl(quote!(
            unknown { names: ["aten::add.Tensor", "aten::neg"] }
            key = CPU, name = "add.Tensr", item = { fn f() {} }
        ))
        .to_string();
        assert!(
            out.contains("__opforge_schema ! { \"aten::add.Tensor\" => [:: opforge :: __private :: kernel_impl] key = CPU , name = \"add.Tensr\" , suggested = yes"),
            "{out}"
        );
        // Which shows the suggestion's schema.
        let found = found(ADD, quote!());
        let e = crate::compile_errors(&expand_impl(quote!(
            #found key = CPU, name = "add.Tensr", suggested = yes, item = { fn f() {} }
        )));
        assert_eq!(e.len(), 1, "{e:?}");
        assert!(
            e[0].contains("no operator `add.Tensr` in the schema; did you mean `add.Tensor`?"),
            "{e:?}"
        );
        assert!(
            e[0].contains(
                "schema: add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor"
            ),
            "{e:?}"
        );
        // Nothing near: no suggestion.
        let e = crate::compile_errors(&expand_impl(quote!(
            unknown { names: ["aten::neg"] }
            key = CPU, name = "frobnicate", item = { fn f() {} }
        )));
        assert!(
            e[0].contains("no operator `frobnicate` in the schema"),
            "{e:?}"
        );
        let e = crate::compile_errors(&expand_impl(quote!(
            unknown { names: [] }
            key = CPU, name = _, item = { fn my_neg() {} }
        )));
        assert!(e[0].contains("no CPU kernel named `my_neg` in the crate's native_functions.yaml: name its operator"), "{e:?}");
        // A function name one edit from a kernel the YAML names there.
        let e = crate::compile_errors(&expand_impl(quote!(
            unknown { names: ["soft_step", "scale"] }
            key = CPU, name = _, item = { fn soft_stpe() {} }
        )));
        assert!(
            e[0].contains("no CPU kernel named `soft_stpe` in the crate's native_functions.yaml; did you mean `soft_step`?"),
            "{e:?}"
        );
    }

    #[test]
    fn the_yaml_names_the_kernel_for_its_key() {
        // Another crate's kernel for a key the YAML names: a second kernel.
        let found = found("neg(Tensor self) -> Tensor", quote!(CPU = "cpu::neg"));
        let e = crate::compile_errors(&expand_impl(quote!(
            #found key = CPU, name = "neg", item = { fn my_neg(self_: &Tensor) -> Result<Tensor> { todo() } }
        )));
        assert_eq!(e.len(), 1, "{e:?}");
        assert!(e[0].contains("`neg` already has a CPU kernel: opforge's native_functions.yaml:7 names `cpu::neg`"), "{e:?}");
        // Other keys are free.
        let out = expand_impl(quote!(
            #found key = Autograd, name = "neg", item = { fn my_neg(self_: &Tensor) -> Result<Tensor> { todo() } }
        ));
        assert!(crate::compile_errors(&out).is_empty(), "{out}");
    }

    #[test]
    fn only_plain_safe_concrete_free_functions() {
        let neg = "neg(Tensor self) -> Tensor";
        let e = errors(
            neg,
            quote!(CPU),
            quote!(
                async fn f<T>(self_: &Tensor) -> Result<Tensor> {}
            ),
        );
        assert_eq!(e.len(), 2, "{e:?}");
        let e = errors(
            neg,
            quote!(CPU),
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
            neg,
            quote!(CPU),
            quote!(
                fn f(self: &Tensor) -> Result<Tensor> {}
            ),
        );
        assert_eq!(e.len(), 1, "{e:?}");
        assert!(e[0].contains("write `self_: &Tensor`"), "{e:?}");
        let e = errors(
            ADD,
            quote!(CPU),
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
        assert_eq!(show(&ty), "Option<&'a [Tensor]>");
        let ty: syn::Type = syn::parse_quote!(&mut Tensor);
        assert_eq!(show(&ty), "&mut Tensor");
        let ty: syn::Type = syn::parse_quote!(std::result::Result<(Tensor, Tensor), E>);
        assert_eq!(show(&ty), "std::result::Result<(Tensor, Tensor), E>");
    }
}
