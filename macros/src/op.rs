//! `#[op("ns::name.overload(args) -> returns", key = KEY)]`: defines a custom
//! operator from a Rust function, at compile time. The schema string is parsed
//! here (a malformed one is an error on the string); the function is checked
//! against it by `#[kernel]`'s checks ([`crate::kernel::check_kernel`]: the same
//! type mapping and per-parameter messages), then:
//!
//! - the user's function becomes the operator's kernel: it is emitted unchanged
//!   inside a `const _: () = { … };` block (so the name is free for the entry
//!   point) with `#[kernel]`'s registration (the schema-typed shim, the boxed
//!   adapter and the link-time `KERNELS` entry) under `key`
//!   (`CompositeExplicitAutograd` when not given);
//! - the definition goes into the link-time `OPERATOR_DEFS` slice, which the
//!   dispatcher reads when it is built, before the kernels, so the operator exists
//!   from the first dispatcher use on, whichever crate defines it;
//! - in the function's place, an entry point with the same name, visibility and
//!   attributes, typed by the schema, which calls *through the dispatcher* (key
//!   set of the tensor arguments, the kernel's unboxed pointer, or boxing when the
//!   kernel is a closure), so modes, the Python key and other kernels registered
//!   for the operator (e.g. with `opforge::library`) apply.
//!
//! On any problem the function is emitted unchanged with the errors, as
//! `#[kernel]` does.

use crate::lookup::{self, Found};
use opforge_codegen::rust_types::{fn_pointer_type, param_type, result_type};
use opforge_schema::model::FunctionSchema;
use opforge_schema::names::arg_ident;
use proc_macro2::{TokenStream, TokenTree};
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;

use crate::kernel::{check_kernel, check_key, Errors};

/// The attribute's arguments: `"schema"` and an optional `key = KEY`.
struct Attr {
    schema: syn::LitStr,
    key: Option<syn::Ident>,
}

const USAGE: &str = "expected `#[op(\"ns::name(args) -> returns\")]` or `#[op(\"...\", key = KEY)]`, e.g. `#[op(\"mylib::scale(Tensor x, float k=1.0) -> Tensor\")]`";

impl syn::parse::Parse for Attr {
    fn parse(input: syn::parse::ParseStream) -> syn::Result<Self> {
        let schema: syn::LitStr = input
            .parse()
            .map_err(|e| syn::Error::new(e.span(), USAGE))?;
        let mut key = None;
        if input.parse::<Option<syn::Token![,]>>()?.is_some() && !input.is_empty() {
            let name: syn::Ident = input
                .parse()
                .map_err(|e| syn::Error::new(e.span(), USAGE))?;
            if name != "key" {
                return Err(syn::Error::new(
                    name.span(),
                    format!("unknown argument `{name}`: {USAGE}"),
                ));
            }
            input
                .parse::<syn::Token![=]>()
                .map_err(|e| syn::Error::new(e.span(), USAGE))?;
            key = Some(
                input
                    .parse()
                    .map_err(|e| syn::Error::new(e.span(), USAGE))?,
            );
            let _ = input.parse::<Option<syn::Token![,]>>()?;
        }
        if !input.is_empty() {
            return Err(input.error(USAGE));
        }
        Ok(Attr { schema, key })
    }
}

/// The expansion of `#[op(attr)] item`; the macro entry point calls this. The
/// schema is parsed and the function checked here; the output goes through the
/// schema lookup of the crate being compiled (`op_impl!` as its callback), which
/// refuses an operator that exists with another schema.
pub fn expand(attr: TokenStream, item: TokenStream) -> TokenStream {
    let func: syn::ItemFn = match syn::parse2(item.clone()) {
        Ok(f) => f,
        Err(_) => {
            let e = syn::Error::new(
                item.span(),
                "#[op] goes on a free function: `fn name(args) -> Result<T>`",
            )
            .to_compile_error();
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
        Ok((schema, tokens)) => {
            let lookup = lookup::schema_macro();
            let q = lookup::qualified(&schema.name.to_string());
            let text = schema.to_string();
            let lit = &attr.schema;
            quote! {
                #lookup! { #q => [::opforge::__private::op_impl] schema = #text, at = #lit, item = { #tokens } }
            }
        }
        Err(errors) => {
            let e = errors.tokens();
            quote!(#func #e)
        }
    }
}

/// The expansion of `op_impl! { found/unknown { … } schema = "…", at = "…", item = { … } }`:
/// the generated items, unless the operator exists with another schema.
pub fn expand_impl(input: TokenStream) -> TokenStream {
    let (found, rest) = match lookup::parse(input) {
        Ok(x) => x,
        Err(e) => return e.to_compile_error(),
    };
    let mut schema = None;
    let mut at = None;
    let mut items = TokenStream::new();
    for (field, value) in lookup::payload_fields(rest) {
        match (field.as_str(), value) {
            ("schema", TokenTree::Literal(l)) => {
                schema = syn::parse2::<syn::LitStr>(TokenTree::Literal(l).into()).ok()
            }
            ("at", TokenTree::Literal(l)) => {
                at = syn::parse2::<syn::LitStr>(TokenTree::Literal(l).into()).ok()
            }
            ("item", TokenTree::Group(g)) => items = g.stream(),
            _ => {}
        }
    }
    let (Some(schema), Some(at)) = (schema, at) else {
        return quote!(compile_error!("op_impl!: malformed input"););
    };
    if let Found::Op(entry) = found {
        let same = |a: &str, b: &str| {
            let strip = |s: &str| {
                let s = s.to_string();
                match s.find("::") {
                    Some(i) if s.find('(').is_some_and(|p| i < p) => s,
                    _ => format!("aten::{s}"),
                }
            };
            strip(a) == strip(b)
        };
        if !same(&entry.schema, &schema.value()) {
            let msg = format!(
                "`{}` is already defined, with another schema: {}'s {} has `{}`; an operator has one schema (name this one differently, e.g. another overload `{}.<name>`)",
                entry.op,
                entry.crate_name,
                entry.place(),
                entry.schema,
                entry.op
            );
            let e = syn::Error::new(at.span(), msg).to_compile_error();
            // The function stays (as an entry point) so that uses of it do not
            // add errors of their own.
            return quote!(#items #e);
        }
    }
    items
}

fn check(attr: &Attr, func: &syn::ItemFn) -> Result<(FunctionSchema, TokenStream), Errors> {
    let mut errors = Errors::default();
    let key = match &attr.key {
        Some(k) => {
            check_key(k, &mut errors);
            k.to_string()
        }
        None => "CompositeExplicitAutograd".to_string(),
    };
    let text = attr.schema.value();
    let schema = match opforge_schema::schema::parse_schema(&text) {
        Ok(s) => s,
        Err(e) => {
            errors.on(
                &attr.schema,
                format!(
                    "malformed operator schema, {e}\n  schema: {text}\n  help: write it as PyTorch prints it, e.g. `mylib::scale(Tensor x, float k=1.0) -> Tensor`"
                ),
            );
            return Err(errors);
        }
    };
    if schema.name.namespace.is_none() {
        errors.on(
            &attr.schema,
            format!(
                "the schema needs a namespace: write `mylib::{text}` (with your library's namespace)"
            ),
        );
        return Err(errors);
    }
    let name = schema.name.to_string();
    let registration = check_kernel(errors, &key, &name, &schema, func)?;
    let out = output(&schema, &name, func, registration);
    Ok((schema, out))
}

/// The entry point, the kernel and its registration, and the definition.
fn output(
    schema: &FunctionSchema,
    name: &str,
    func: &syn::ItemFn,
    registration: TokenStream,
) -> TokenStream {
    let args = &schema.arguments.all;
    let idents: Vec<syn::Ident> = args
        .iter()
        .map(|a| format_ident!("{}", arg_ident(&a.name)))
        .collect();
    // `check_kernel` succeeded: every type has a mapping.
    let params = args.iter().zip(&idents).map(|(a, n)| {
        let t = param_type(a).map_or_else(|_| quote!(()), |t| quote!(#t));
        quote!(#n: #t)
    });
    let tuple = args.iter().zip(&idents).map(|(a, n)| {
        if opforge_codegen::rust_types::is_mut_tensor(a) {
            quote!(&mut *#n)
        } else {
            quote!(#n)
        }
    });
    let ret = result_type(&schema.returns).map_or_else(|_| quote!(()), |t| quote!(#t));
    let fn_ty = fn_pointer_type(schema).map_or_else(|_| quote!(()), |t| quote!(#t));
    let attrs = &func.attrs;
    let vis = &func.vis;
    let ident = &func.sig.ident;
    let doc = format!(" Dispatches `{schema}` (defined by `#[op]`).");
    let mut kernel = func.clone();
    kernel.vis = syn::Visibility::Inherited;
    let schema_text = schema.to_string();
    let (file, line) = (
        quote_spanned!(ident.span()=> ::core::file!()),
        quote_spanned!(ident.span()=> ::core::line!()),
    );
    let def = format_ident!(
        "__opforge_op_{}_defined",
        opforge_schema::names::op_ident(&schema.name)
    );
    quote! {
        #(#attrs)*
        #[doc = ""]
        #[doc = #doc]
        #[allow(clippy::too_many_arguments)]
        #vis fn #ident(#(#params),*) -> #ret {
            static __OPFORGE_OP: ::std::sync::OnceLock<&'static ::opforge::dispatch::Operator> =
                ::std::sync::OnceLock::new();
            let __op = ::opforge::library::__op::handle(&__OPFORGE_OP, #name)?;
            // As `torch.ops.<ns>.<op>(...)`: tensor-like arguments or a function
            // mode send the call through the operator handle.
            ::opforge::__private::call_op::<#fn_ty, _, _>(__op, (#(#tuple,)*))
        }

        /// Two `#[op]`s defining one operator in one module do not compile.
        #[doc(hidden)]
        #[allow(non_upper_case_globals, dead_code)]
        const #def: () = ();

        #[doc(hidden)]
        const _: () = {
            // The user's function, the operator's kernel (shadows the entry point
            // inside this block only).
            #kernel

            #registration

            #[::opforge::__private::linkme::distributed_slice(::opforge::__private::OPERATOR_DEFS)]
            #[linkme(crate = ::opforge::__private::linkme)]
            static __OPFORGE_DEF: ::opforge::__private::OperatorDef = ::opforge::__private::OperatorDef {
                schema: #schema_text,
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
    fn a_matching_function_becomes_entry_point_kernel_and_definition() {
        let out = expand(
            quote!("mylib::scale(Tensor x, float k=1.0) -> Tensor"),
            quote!(
                pub fn scale(x: &Tensor, k: f64) -> Result<Tensor> {
                    todo()
                }
            ),
        )
        .to_string();
        assert!(!out.contains("compile_error"), "{out}");
        let flat: String = out.split_whitespace().collect();
        for part in [
            "pubfnscale(x:&::opforge::Tensor,k:f64)->::opforge::Result<::opforge::Tensor>",
            "::opforge::library::__op::handle(&__OPFORGE_OP,\"mylib::scale\")",
            "::opforge::__private::call_op::<fn(&::opforge::Tensor,f64)->::opforge::Result<::opforge::Tensor>,_,_>(__op,(x,k,))",
            "__opforge_schema!{\"mylib::scale\"=>[::opforge::__private::op_impl]schema=\"mylib::scale(Tensorx,floatk=1.0)->Tensor\"",
            "const__opforge_op_mylib_scale_defined:()=();",
            "fnscale(x:&Tensor,k:f64)->Result<Tensor>{todo()}",
            "kernel_entry!(__OPFORGE_COMPOSITEEXPLICITAUTOGRAD_KERNEL_scale,\"mylib::scale\",\"CompositeExplicitAutograd\",\"mylib::scale(Tensorx,floatk=1.0)->Tensor\",",
            "distributed_slice(::opforge::__private::OPERATOR_DEFS)",
        ] {
            assert!(flat.contains(part), "{part}\n{out}");
        }
    }

    #[test]
    fn key_argument() {
        let out = expand(
            quote!("mylib::neg2(Tensor x) -> Tensor", key = CPU),
            quote!(
                fn neg2(x: &Tensor) -> Result<Tensor> {}
            ),
        )
        .to_string();
        assert!(out.contains("\"mylib::neg2\" , \"CPU\""), "{out}");
        let e = errors(
            quote!("mylib::neg2(Tensor x) -> Tensor", key = CPUU),
            quote!(
                fn neg2(x: &Tensor) -> Result<Tensor> {}
            ),
        );
        assert!(e[0].contains("did you mean `CPU`?"), "{e:?}");
        let e = errors(
            quote!("mylib::neg2(Tensor x) -> Tensor", kee = CPU),
            quote!(
                fn neg2(x: &Tensor) -> Result<Tensor> {}
            ),
        );
        assert!(e[0].contains("unknown argument `kee`"), "{e:?}");
    }

    #[test]
    fn schema_problems_point_at_the_string() {
        let e = errors(
            quote!("mylib::scale(Tensor x, float k=1.0) ->"),
            quote!(
                fn scale(x: &Tensor, k: f64) -> Result<Tensor> {}
            ),
        );
        assert_eq!(e.len(), 1, "{e:?}");
        assert!(e[0].contains("malformed operator schema, column"), "{e:?}");
        let e = errors(
            quote!("scale(Tensor x) -> Tensor"),
            quote!(
                fn scale(x: &Tensor) -> Result<Tensor> {}
            ),
        );
        assert!(e[0].contains("the schema needs a namespace"), "{e:?}");
    }

    #[test]
    fn parameters_are_checked_like_kernels() {
        let e = errors(
            quote!("mylib::scale(Tensor x, float k=1.0) -> Tensor"),
            quote!(
                fn scale(x: &Tensor, factor: f64) -> Result<Tensor> {}
            ),
        );
        assert_eq!(e.len(), 1, "{e:?}");
        assert!(
            e[0].contains("parameter 2: `mylib::scale` expects `k`, found `factor`"),
            "{e:?}"
        );
        assert!(
            e[0].contains("schema: mylib::scale(Tensor x, float k=1.0) -> Tensor"),
            "{e:?}"
        );
        let e = errors(
            quote!("mylib::scale(Tensor x, float k=1.0) -> Tensor"),
            quote!(
                fn scale(x: &Tensor) -> Result<Tensor> {}
            ),
        );
        assert!(e[0].contains("missing parameter `k: f64`"), "{e:?}");
    }

    #[test]
    fn an_existing_operator_with_another_schema_is_refused() {
        let item = quote!(
            fn neg(self_: &Tensor, k: i64) -> Result<Tensor> {}
        );
        let e = crate::compile_errors(&expand_impl(quote!(
            found { op: "aten::neg", schema: "neg(Tensor self) -> Tensor", file: "native_functions.yaml", line: 12, crate: "opforge", kernels: [] }
            schema = "aten::neg(Tensor self, int k) -> Tensor", at = "aten::neg(Tensor self, int k) -> Tensor", item = { #item }
        )));
        assert_eq!(e.len(), 1, "{e:?}");
        assert!(e[0].contains("`aten::neg` is already defined, with another schema: opforge's native_functions.yaml:12 has `neg(Tensor self) -> Tensor`"), "{e:?}");
        // The same schema is the same operator; an unknown name is a new one.
        let out = expand_impl(quote!(
            found { op: "aten::neg", schema: "neg(Tensor self) -> Tensor", file: "native_functions.yaml", line: 12, crate: "opforge", kernels: [] }
            schema = "aten::neg(Tensor self) -> Tensor", at = "aten::neg(Tensor self) -> Tensor", item = { #item }
        ));
        assert!(crate::compile_errors(&out).is_empty());
        let out = expand_impl(quote!(
            unknown { names: [] }
            schema = "mylib::f(Tensor x) -> Tensor", at = "mylib::f(Tensor x) -> Tensor", item = { #item }
        ));
        assert!(crate::compile_errors(&out).is_empty());
    }
}
