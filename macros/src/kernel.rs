//! `#[kernel(KEY, "name.overload")]`: checks a Rust function against its operator's
//! schema at compile time and registers it with the dispatcher.
//!
//! The function is always emitted unchanged. Then either every problem found (each
//! a `compile_error!` on the offending token, naming both sides and quoting the
//! schema), or the registration: a boxed adapter (values in, values out), the
//! unboxed function pointer typed by the schema's signature, and a link-time entry
//! in `opforge::dispatch::KERNELS`. Parameter types are checked by rustc, through a
//! trait per parameter whose `on_unimplemented` message names the schema.

use opforge_codegen::lower::arg_ident;
use opforge_codegen::model::{FunctionSchema, NativeFunction};
use opforge_codegen::rust_types::{fn_pointer_type, param_type, result_type, Spelling};
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use std::sync::OnceLock;
use syn::spanned::Spanned;

/// The project's schema file, embedded so that cargo rebuilds on change.
const SCHEMA_YAML: &str = include_str!("../../native_functions.yaml");

/// Keys a kernel may be registered under.
const KEYS: &[&str] = &[
    "CPU",
    "Meta",
    "BackendSelect",
    "Python",
    "ADInplaceOrView",
    "Autograd",
    "CompositeExplicitAutograd",
    "CompositeExplicitAutogradNonFunctional",
    "CompositeImplicitAutograd",
];

/// The operators of the schema file, parsed once per compiler process.
fn schema_file() -> Result<&'static [NativeFunction], String> {
    static FILE: OnceLock<Result<Vec<NativeFunction>, String>> = OnceLock::new();
    FILE.get_or_init(|| {
        opforge_codegen::load::load_str("native_functions.yaml", SCHEMA_YAML)
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

struct Errors(Vec<syn::Error>);

impl Errors {
    fn push(&mut self, span: Span, msg: impl std::fmt::Display) {
        self.0.push(syn::Error::new(span, msg));
    }

    fn tokens(&self) -> TokenStream {
        self.0.iter().map(syn::Error::to_compile_error).collect()
    }
}

/// The attribute's arguments: `KEY, "op"`.
struct Attr {
    key: syn::Ident,
    op: syn::LitStr,
}

impl syn::parse::Parse for Attr {
    fn parse(input: syn::parse::ParseStream) -> syn::Result<Self> {
        let key: syn::Ident = input.parse().map_err(|e| {
            syn::Error::new(
                e.span(),
                "expected `#[kernel(KEY, \"name.overload\")]`, e.g. `#[kernel(CPU, \"add.Tensor\")]`",
            )
        })?;
        input.parse::<syn::Token![,]>()?;
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
    let mut errors = Errors(Vec::new());
    let key = attr.key.to_string();
    if !KEYS.contains(&key.as_str()) {
        let near = opforge_codegen::validate::nearest(&key, KEYS.iter().copied())
            .map(|n| format!("; did you mean `{n}`?"))
            .unwrap_or_default();
        errors.push(
            attr.key.span(),
            format!(
                "unknown dispatch key `{key}`{near} (keys: {})",
                KEYS.join(", ")
            ),
        );
    }
    let ops = match schema_file() {
        Ok(ops) => ops,
        Err(e) => {
            errors.push(
                attr.op.span(),
                format!("cannot load native_functions.yaml:\n{e}"),
            );
            return Err(errors);
        }
    };
    let name = attr.op.value();
    let Some(nf) = find_op(ops, &name) else {
        let names: Vec<String> = ops.iter().map(NativeFunction::name).collect();
        let near = opforge_codegen::validate::nearest(&name, names.iter().map(String::as_str))
            .map(|n| format!("; did you mean `{n}`?"))
            .unwrap_or_default();
        errors.push(
            attr.op.span(),
            format!("no operator `{name}` in native_functions.yaml{near}"),
        );
        return Err(errors);
    };
    let schema = &nf.func;
    let sig = &func.sig;
    if !sig.generics.params.is_empty() {
        errors.push(
            sig.generics.span(),
            "a kernel cannot be generic: the dispatcher calls one concrete function",
        );
    }
    if let Some(a) = &sig.asyncness {
        errors.push(a.span(), "a kernel cannot be `async`");
    }
    if let Some(v) = &sig.variadic {
        errors.push(v.span(), "a kernel cannot be variadic");
    }
    let params = collect_params(sig, &mut errors);
    check_params(schema, sig, &params, &mut errors);
    if let syn::ReturnType::Type(_, ty) = &sig.output {
        if let syn::Type::ImplTrait(_) = ty.as_ref() {
            errors.push(ty.span(), "a kernel cannot return `impl Trait`");
        }
    }
    if !errors.0.is_empty() {
        return Err(errors);
    }
    Ok(registration(&key, &name, schema, func, &params))
}

/// A parameter: its name and type tokens.
struct Param<'a> {
    ident: &'a syn::Ident,
    ty: &'a syn::Type,
    span: Span,
}

fn collect_params<'a>(sig: &'a syn::Signature, errors: &mut Errors) -> Vec<Param<'a>> {
    let mut out = Vec::new();
    for input in &sig.inputs {
        match input {
            syn::FnArg::Receiver(r) => errors.push(
                r.span(),
                "a kernel is a free function; it cannot take `self`",
            ),
            syn::FnArg::Typed(pt) => {
                if let syn::Type::ImplTrait(_) = pt.ty.as_ref() {
                    errors.push(pt.ty.span(), "a kernel parameter cannot be `impl Trait`");
                }
                match pt.pat.as_ref() {
                    syn::Pat::Ident(pi) => out.push(Param {
                        ident: &pi.ident,
                        ty: &pt.ty,
                        span: pt.span(),
                    }),
                    other => errors.push(other.span(), "kernel parameters must be plain names"),
                }
            }
        }
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
    let args = &schema.arguments.all;
    let expected: Vec<String> = args.iter().map(|a| arg_ident(&a.name)).collect();
    let shown = |ps: &[String]| ps.join(", ");
    let found: Vec<String> = params.iter().map(|p| p.ident.to_string()).collect();
    // Same names in another order: one error saying so.
    let mut a = expected.clone();
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
        errors.push(
            sig.inputs.span(),
            format!(
                "parameters out of order: `{}` takes ({}), found ({})\n  schema: {schema}",
                schema.name,
                shown(&expected),
                shown(&found)
            ),
        );
        return;
    }
    for (i, (p, a)) in params.iter().zip(args).enumerate() {
        let want = &expected[i];
        if !names_match(&p.ident.to_string(), want) {
            errors.push(
                p.ident.span(),
                format!(
                    "parameter {}: `{}` expects `{want}`, found `{}`\n  schema: {schema}",
                    i + 1,
                    schema.name,
                    p.ident
                ),
            );
        }
        // Written tensors are taken as `&mut Tensor`, the others not.
        let is_mut_ref = matches!(p.ty, syn::Type::Reference(r) if r.mutability.is_some());
        let want_ty = param_type(a, Spelling::Short);
        if let Some(want_ty) = &want_ty {
            let wants_mut = want_ty.starts_with("&mut ");
            if wants_mut && !is_mut_ref {
                errors.push(
                    p.ty.span(),
                    format!(
                        "`{}` is written by `{}` (`{a}`): take it as `{want_ty}`\n  schema: {schema}",
                        a.name, schema.name
                    ),
                );
            } else if !wants_mut && is_mut_ref {
                errors.push(
                    p.ty.span(),
                    format!(
                        "`{}` is not written by `{}` (`{a}`): take it as `{want_ty}`\n  schema: {schema}",
                        a.name, schema.name
                    ),
                );
            }
        } else {
            errors.push(
                p.span,
                format!(
                    "`{a}` has no Rust type mapping yet, so `{}` cannot have a typed kernel",
                    schema.name
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
        errors.push(
            sig.paren_token.span.close(),
            format!(
                "missing parameter{} {} of `{}`\n  schema: {schema}",
                if missing.len() == 1 { "" } else { "s" },
                missing.join(", "),
                schema.name
            ),
        );
    }
    for p in params.iter().skip(args.len()) {
        errors.push(
            p.span,
            format!(
                "extra parameter `{}`: `{}` takes {} argument{} ({})\n  schema: {schema}",
                p.ident,
                schema.name,
                args.len(),
                if args.len() == 1 { "" } else { "s" },
                shown(&expected)
            ),
        );
    }
}

fn parse_type(s: &str) -> TokenStream {
    s.parse().unwrap_or_else(|_| quote!(()))
}

fn registration(
    key: &str,
    name: &str,
    schema: &FunctionSchema,
    func: &syn::ItemFn,
    params: &[Param],
) -> TokenStream {
    let fn_ident = &func.sig.ident;
    let upper = fn_ident.to_string().to_uppercase();
    let entry = format_ident!("__OPFORGE_KERNEL_{}_{}", upper, key.to_uppercase());
    let boxed = format_ident!("__opforge_boxed_{}_{}", fn_ident, key);
    let unboxed = format_ident!("__opforge_unboxed_{}_{}", fn_ident, key);
    let n = params.len();
    let schema_text = schema.to_string();
    let args = &schema.arguments.all;
    // Per parameter: a rustc-checked type assertion (spanned at the user's type) and
    // the conversion out of the boxed value.
    let mut checks = Vec::new();
    let mut bindings = Vec::new();
    let mut call_args = Vec::new();
    for (i, (p, a)) in params.iter().zip(args).enumerate() {
        let want = param_type(a, Spelling::Qualified).unwrap_or_default();
        let want_short = param_type(a, Spelling::Short).unwrap_or_default();
        let user_ty = p.ty;
        let trait_name = format_ident!("__OpforgeParam{}", i);
        let check_fn = format_ident!("__opforge_check{}", i);
        let message = format!(
            "parameter `{}` of `{}` must be `{want_short}` (schema type `{}`)",
            p.ident, schema.name, a.ty
        );
        let note = format!("schema: {schema_text}");
        let want_static = parse_type(&want.replace('&', "&'static "));
        checks.push(quote_spanned! {user_ty.span()=>
            #[diagnostic::on_unimplemented(message = #message, label = #want_short, note = #note)]
            trait #trait_name {}
            impl #trait_name for #want_static {}
            fn #check_fn<T: #trait_name>() {}
            #check_fn::<#user_ty>();
        });
        let v = format_ident!("__a{}", i);
        let idx = i;
        if want.starts_with("&mut ") {
            bindings.push(quote! {
                let mut #v: ::opforge::Tensor = <&::opforge::Tensor as ::opforge::__private::FromValue>::from_value(&args[#idx])?.clone();
            });
            call_args.push(quote!(&mut #v));
        } else {
            let ty = parse_type(&want);
            bindings.push(quote! {
                let #v = <#ty as ::opforge::__private::FromValue>::from_value(&args[#idx])?;
            });
            call_args.push(quote!(#v));
        }
    }
    let ret_want = result_type(&schema.returns, Spelling::Qualified).unwrap_or_default();
    let ret_short = result_type(&schema.returns, Spelling::Short).unwrap_or_default();
    let ret_check = match &func.sig.output {
        syn::ReturnType::Type(_, ty) => {
            let message = format!("a kernel for `{}` must return `{ret_short}`", schema.name);
            let note = format!("schema: {schema_text}");
            let want = parse_type(&ret_want);
            quote_spanned! {ty.span()=>
                #[diagnostic::on_unimplemented(message = #message, label = #ret_short, note = #note)]
                trait __OpforgeReturn {}
                impl __OpforgeReturn for #want {}
                fn __opforge_check_return<T: __OpforgeReturn>() {}
                __opforge_check_return::<#ty>();
            }
        }
        syn::ReturnType::Default => {
            let message = format!(
                "a kernel for `{}` must return `{ret_short}`, found `()`",
                schema.name
            );
            let note = format!("schema: {schema_text}");
            let want = parse_type(&ret_want);
            quote_spanned! {func.sig.ident.span()=>
                #[diagnostic::on_unimplemented(message = #message, label = #ret_short, note = #note)]
                trait __OpforgeReturn {}
                impl __OpforgeReturn for #want {}
                fn __opforge_check_return<T: __OpforgeReturn>() {}
                __opforge_check_return::<()>();
            }
        }
    };
    let fn_ty = parse_type(&fn_pointer_type(schema, Spelling::Qualified).unwrap_or_default());
    let arity_msg = format!("{name}: expected {n} arguments, got {{}}");
    quote! {
        #[doc(hidden)]
        #[allow(non_snake_case, non_camel_case_types, dead_code)]
        fn #boxed(
            _op: &::opforge::__private::Operator,
            _keys: ::opforge::__private::KeySet,
            args: &[::opforge::__private::Value],
        ) -> ::opforge::Result<::std::vec::Vec<::opforge::__private::Value>> {
            if args.len() != #n {
                return Err(::opforge::Error::Runtime(format!(#arity_msg, args.len())));
            }
            #(#bindings)*
            let result = #fn_ident(#(#call_args),*)?;
            Ok(::opforge::__private::IntoValues::into_values(result))
        }

        #[doc(hidden)]
        #[allow(non_snake_case, dead_code)]
        fn #unboxed() -> *const () {
            #(#checks)*
            #ret_check
            let f: #fn_ty = #fn_ident;
            f as *const ()
        }

        #[doc(hidden)]
        #[::opforge::__private::linkme::distributed_slice(::opforge::__private::KERNELS)]
        #[linkme(crate = ::opforge::__private::linkme)]
        #[allow(non_upper_case_globals)]
        static #entry: ::opforge::__private::KernelEntry = ::opforge::__private::KernelEntry {
            op: #name,
            key: #key,
            boxed: #boxed,
            unboxed: #unboxed,
            file: file!(),
            line: line!(),
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn errors(attr: TokenStream, item: TokenStream) -> Vec<String> {
        let out = expand(attr, item).to_string();
        out.split("compile_error ! {")
            .skip(1)
            .map(|s| s.split('}').next().unwrap_or("").trim().to_string())
            .collect()
    }

    #[test]
    fn a_matching_kernel_registers() {
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
        assert!(e[0].contains("`out` is written by `add.out`"), "{e:?}");
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
        let e = errors(
            quote!(CPUU, "neg"),
            quote!(
                fn f(self_: &Tensor) -> Result<Tensor> {}
            ),
        );
        assert!(e[0].contains("did you mean `CPU`?"), "{e:?}");
        let e = errors(
            quote!(CPU, "neg"),
            quote!(
                async fn f<T>(self_: &Tensor) -> Result<Tensor> {}
            ),
        );
        assert_eq!(e.len(), 2, "{e:?}");
    }
}
