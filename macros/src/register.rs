//! `register_kernels! { KEY, "name.overload", path::to::kernel; ... }`: registers
//! existing functions as kernels, one row per `dispatch:` entry. The runtime's
//! build generates one invocation from `native_functions.yaml`, so every kernel the
//! YAML names must exist with the schema's signature, or the build fails.
//!
//! Each row becomes a wrapper function whose parameters are derived from the
//! schema, annotated with `#[kernel]` (so registration has one implementation) and
//! forwarding to the named function (so rustc checks its signature).

use opforge_codegen::lower::arg_ident;
use opforge_codegen::rust_types::{param_type, result_type, Spelling};
use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;

struct Row {
    key: syn::Ident,
    op: syn::LitStr,
    path: syn::Path,
}

impl Parse for Row {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let key = input.parse()?;
        input.parse::<syn::Token![,]>()?;
        let op = input.parse()?;
        input.parse::<syn::Token![,]>()?;
        let path = input.parse()?;
        Ok(Row { key, op, path })
    }
}

/// The expansion of `register_kernels! { rows }`.
pub fn expand(input: TokenStream) -> TokenStream {
    let rows = match syn::parse::Parser::parse2(
        Punctuated::<Row, syn::Token![;]>::parse_terminated,
        input,
    ) {
        Ok(rows) => rows,
        Err(e) => return e.to_compile_error(),
    };
    rows.iter().map(row).collect()
}

fn row(r: &Row) -> TokenStream {
    let name = r.op.value();
    let Some(nf) = crate::kernel::find(&name) else {
        // `#[kernel]` reports the unknown operator with a suggestion.
        let (key, op) = (&r.key, &r.op);
        return crate::kernel::expand(
            quote!(#key, #op),
            quote!(
                fn __opforge_unknown() {}
            ),
        );
    };
    let f = &nf.func;
    let mut params = Vec::new();
    let mut args = Vec::new();
    for a in &f.arguments.all {
        let n = format_ident!("{}", arg_ident(&a.name));
        let t: TokenStream = param_type(a, Spelling::Qualified)
            .unwrap_or_default()
            .parse()
            .unwrap_or_default();
        params.push(quote!(#n: #t));
        args.push(quote!(#n));
    }
    let ret: TokenStream = result_type(&f.returns, Spelling::Qualified)
        .unwrap_or_default()
        .parse()
        .unwrap_or_default();
    let last = r
        .path
        .segments
        .last()
        .map(|s| s.ident.to_string())
        .unwrap_or_default();
    let wrapper = format_ident!(
        "__opforge_builtin_{}_{}",
        r.key.to_string().to_lowercase(),
        last
    );
    let (key, op, path) = (&r.key, &r.op, &r.path);
    let item = quote! {
        #[allow(non_snake_case, clippy::too_many_arguments)]
        #[inline]
        fn #wrapper(#(#params),*) -> #ret {
            #path(#(#args),*)
        }
    };
    crate::kernel::expand(quote!(#key, #op), item)
}
