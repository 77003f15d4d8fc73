//! `#[custom_class("ns::Name")]` on a type and `#[methods]` on its impl
//! block: a custom class (TorchBind) registered at link time.
//!
//! - `#[custom_class]` implements `opforge::classes::CustomClass` for the type
//!   (its name; objects of it convert to and from boxed values);
//! - `#[methods]` registers the class: `pub fn new(…) -> Self` is the
//!   constructor (`__init__`), every other `pub fn` taking `&self` a method,
//!   in order. The methods' Rust types give their schemas (through
//!   `opforge::classes::{ArgType, RetType}`: an unsupported type is a compile
//!   error on it). A `pub fn` taking `&mut self` or `self` is an error
//!   (objects are shared between threads: state that changes goes behind a
//!   lock), and so is any other `pub fn` (move it to another impl block);
//! - `pub fn __getstate__(&self) -> S` with `pub fn __setstate__(state: S) ->
//!   opforge::Result<Self>` (or `-> Self`) are the class's pickling
//!   (`Class::def_pickle`: save, load, deep copies; listed among the methods
//!   as PyTorch lists them); one without the other is an error.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;

const USAGE: &str = "expected `#[custom_class(\"ns::Name\")]`, e.g. `#[custom_class(\"MyCustomClass::TensorQueue\")]`";

/// The item unchanged, after the error (so that the error is the only one).
fn with_error(e: syn::Error, item: TokenStream) -> TokenStream {
    let e = e.to_compile_error();
    quote!(#e #item)
}

/// `#[custom_class("ns::Name")]`.
pub fn expand_class(attr: TokenStream, item: TokenStream) -> TokenStream {
    let name: syn::LitStr = match syn::parse2(attr) {
        Ok(n) => n,
        Err(e) => return with_error(syn::Error::new(e.span(), USAGE), item),
    };
    let valid = name.value().split_once("::").is_some_and(|(ns, n)| {
        let ident =
            |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        ident(ns) && ident(n)
    });
    if !valid {
        return with_error(syn::Error::new(name.span(), USAGE), item);
    }
    let ty: syn::DeriveInput = match syn::parse2(item.clone()) {
        Ok(t) => t,
        Err(e) => return with_error(e, item),
    };
    let ident = &ty.ident;
    let (imp, tys, wher) = ty.generics.split_for_impl();
    quote! {
        #item

        impl #imp ::opforge::classes::CustomClass for #ident #tys #wher {
            const NAME: &'static str = #name;
        }

        impl #imp ::opforge::classes::NamedClass<{ ::opforge::classes::class_key(#name) }>
            for #ident #tys #wher
        {
        }
    }
}

/// `#[methods]` on `impl T { … }`.
pub fn expand_methods(attr: TokenStream, item: TokenStream) -> TokenStream {
    if !attr.is_empty() {
        let e = syn::Error::new(attr.span(), "`#[methods]` takes no arguments");
        return with_error(e, item);
    }
    let block: syn::ItemImpl = match syn::parse2(item.clone()) {
        Ok(b) => b,
        Err(e) => return with_error(e, item),
    };
    if let Some((_, path, _)) = &block.trait_ {
        let e = syn::Error::new(
            path.span(),
            "`#[methods]` goes on the type's own impl block, not a trait impl",
        );
        return with_error(e, item);
    }
    let ty = &block.self_ty;
    let mut chain = Vec::new();
    let mut errors = Vec::new();
    // `__getstate__` / `__setstate__`: the class's pickling (`def_pickle`).
    let mut getstate: Option<&syn::Ident> = None;
    let mut setstate: Option<&syn::ImplItemFn> = None;
    for it in &block.items {
        let syn::ImplItem::Fn(f) = it else { continue };
        if !matches!(f.vis, syn::Visibility::Public(_)) {
            continue;
        }
        let name = &f.sig.ident;
        let text = name.to_string();
        match (text.as_str(), f.sig.inputs.first()) {
            ("__getstate__", Some(syn::FnArg::Receiver(r)))
                if r.reference.is_some() && r.mutability.is_none() =>
            {
                getstate = Some(name);
                continue;
            }
            ("__setstate__", first) if !matches!(first, Some(syn::FnArg::Receiver(_))) => {
                setstate = Some(f);
                continue;
            }
            ("__getstate__" | "__setstate__", _) => {
                errors.push(syn::Error::new(
                    f.sig.span(),
                    "pickling is `pub fn __getstate__(&self) -> S` and `pub fn __setstate__(state: S) -> opforge::Result<Self>` (or `-> Self`), `S` serde's `Serialize + DeserializeOwned`",
                ));
                continue;
            }
            _ => {}
        }
        match f.sig.inputs.first() {
            Some(syn::FnArg::Receiver(r)) if r.reference.is_some() && r.mutability.is_none() => {
                chain.push(quote_spanned!(name.span()=> .def(#text, <#ty>::#name)));
            }
            Some(syn::FnArg::Receiver(r)) => errors.push(syn::Error::new(
                r.span(),
                format!(
                    "method `{text}` of a custom class takes `&self`: objects are shared (between threads too), so state that changes goes behind a lock (a `Mutex`)"
                ),
            )),
            _ if text == "new" => {
                chain.push(quote_spanned!(name.span()=> .init(<#ty>::new)));
            }
            _ => errors.push(syn::Error::new(
                name.span(),
                format!(
                    "`pub fn {text}` has no `&self`: in a `#[methods]` block, `new` is the constructor and every other `pub fn` a method; move `{text}` to another impl block"
                ),
            )),
        }
    }
    match (getstate, setstate) {
        (Some(get), Some(set)) => {
            let set_name = &set.sig.ident;
            // `-> Result<Self>` is `def_pickle`'s own; `-> Self` never refuses.
            let fallible = matches!(&set.sig.output, syn::ReturnType::Type(_, t)
                if matches!(&**t, syn::Type::Path(p)
                    if p.path.segments.last().is_some_and(|s| s.ident == "Result")));
            let set_fn = if fallible {
                quote_spanned!(set_name.span()=> <#ty>::#set_name)
            } else {
                quote_spanned!(set_name.span()=> |state| ::core::result::Result::Ok(<#ty>::#set_name(state)))
            };
            chain.push(quote_spanned!(get.span()=> .def_pickle(<#ty>::#get, #set_fn)));
        }
        (Some(get), None) => errors.push(syn::Error::new(
            get.span(),
            "`__getstate__` needs `pub fn __setstate__(state: S) -> opforge::Result<Self>` beside it (a saved object is loaded by it)",
        )),
        (None, Some(set)) => errors.push(syn::Error::new(
            set.sig.ident.span(),
            "`__setstate__` needs `pub fn __getstate__(&self) -> S` beside it (an object is saved by it)",
        )),
        (None, None) => {}
    }
    if !errors.is_empty() {
        let errors = errors.iter().map(syn::Error::to_compile_error);
        return quote!(#(#errors)* #item);
    }
    quote! {
        #item

        const _: () = {
            #[::opforge::__private::linkme::distributed_slice(::opforge::__private::CLASS_DEFS)]
            #[linkme(crate = ::opforge::__private::linkme)]
            static __OPFORGE_CLASS: ::opforge::__private::ClassEntry = ::opforge::__private::ClassEntry {
                register: || {
                    ::opforge::classes::Class::<#ty>::of_type()
                        #(#chain)*
                        .register_linked()
                },
                file: file!(),
                line: line!(),
            };
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flat(t: TokenStream) -> String {
        t.to_string().replace(' ', "")
    }

    #[test]
    fn methods_register_the_constructor_and_each_shared_method() {
        let out = expand_methods(
            TokenStream::new(),
            quote! {
                impl Queue {
                    pub fn new(x: Tensor) -> Self { Queue(x) }
                    pub fn push(&self, x: Tensor) {}
                    fn helper(&self) {}
                    pub fn size(&self) -> i64 { 0 }
                }
            },
        );
        let s = flat(out);
        assert!(s.contains(".init(<Queue>::new).def(\"push\",<Queue>::push).def(\"size\",<Queue>::size).register_linked()"), "{s}");
        assert!(
            s.contains("distributed_slice(::opforge::__private::CLASS_DEFS)"),
            "{s}"
        );
    }

    #[test]
    fn getstate_and_setstate_are_the_pickling() {
        let out = expand_methods(
            TokenStream::new(),
            quote! {
                impl Queue {
                    pub fn __getstate__(&self) -> Vec<Tensor> { vec![] }
                    pub fn __setstate__(s: Vec<Tensor>) -> Self { Queue(s) }
                    pub fn size(&self) -> i64 { 0 }
                }
            },
        );
        let s = flat(out);
        assert!(
            s.contains(".def(\"size\",<Queue>::size).def_pickle(<Queue>::__getstate__,|state|::core::result::Result::Ok(<Queue>::__setstate__(state))).register_linked()"),
            "{s}"
        );
        // A fallible setter is passed as it is; one half alone is an error.
        let out = expand_methods(
            TokenStream::new(),
            quote! {
                impl Queue {
                    pub fn __getstate__(&self) -> i64 { 0 }
                    pub fn __setstate__(s: i64) -> opforge::Result<Self> { Ok(Queue(s)) }
                }
            },
        );
        assert!(flat(out).contains(".def_pickle(<Queue>::__getstate__,<Queue>::__setstate__)"),);
        let out = expand_methods(
            TokenStream::new(),
            quote! { impl Queue { pub fn __getstate__(&self) -> i64 { 0 } } },
        );
        assert!(
            flat(out).contains("`__getstate__`needs`pubfn__setstate__"),
            "errors name the missing half"
        );
    }

    #[test]
    fn mutable_receivers_and_free_functions_are_errors() {
        let out = expand_methods(
            TokenStream::new(),
            quote! {
                impl Queue {
                    pub fn push(&mut self, x: Tensor) {}
                    pub fn make() -> Self { Queue::default() }
                }
            },
        );
        let s = out.to_string();
        assert!(s.contains("takes `&self`"), "{s}");
        assert!(s.contains("move `make` to another impl block"), "{s}");
        let out = expand_class(
            quote!("nonamespace"),
            quote!(
                struct Q;
            ),
        );
        assert!(
            out.to_string().contains("expected `#[custom_class"),
            "{out}"
        );
    }
}
