//! `#[derive(Module)]`: a struct's fields as a module's members
//! (`opforge::nn::ModuleMembers`), named as PyTorch names the attributes an
//! `nn.Module`'s `__init__` assigns.
//!
//! A field is, by its type or its `#[module(..)]` attribute:
//! - `Tensor` / `Option<Tensor>`: a parameter (`None`: absent, as PyTorch's
//!   `register_parameter(name, None)`); with `#[module(buffer)]` a buffer;
//! - `#[module(training)] bool`: the module's own training flag;
//! - `#[module(skip)]`: not a member (a size, a configuration value);
//! - anything else: a child module (`Linear`, a derived struct, `Vec<M>` as
//!   `nn.ModuleList`, `Box<dyn Module>`), checked to implement `Module`.

use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Data, DeriveInput, Fields, GenericArgument, PathArguments, Type};

/// What one field is.
enum Kind {
    Parameter,
    Buffer,
    Training,
    Child,
    Skip,
}

/// The derive's output for `input`, or its errors as `compile_error!`s at
/// the offending tokens.
pub(crate) fn derive(input: TokenStream) -> TokenStream {
    let input = match syn::parse2::<DeriveInput>(input) {
        Ok(d) => d,
        Err(e) => return e.to_compile_error(),
    };
    match expand(&input) {
        Ok(out) => out,
        // The errors, and an impl with no members so that the struct's
        // `impl Module` does not add a second error (the build fails on the
        // first).
        Err(e) => {
            let error = e.to_compile_error();
            let members = members_impl(&input, &[], &[]);
            quote!(#error #members)
        }
    }
}

/// `ModuleMembers` for the struct, handing out `members` and `members_mut`.
fn members_impl(
    input: &DeriveInput,
    members: &[TokenStream],
    members_mut: &[TokenStream],
) -> TokenStream {
    let nn = quote!(::opforge::nn);
    let ident = &input.ident;
    let (impl_generics, ty_generics, where_clause) = input.generics.split_for_impl();
    quote! {
        impl #impl_generics #nn::ModuleMembers for #ident #ty_generics #where_clause {
            fn members<'a>(&'a self, f: &mut dyn FnMut(#nn::Member<'a>)) {
                #(#members)*
            }

            fn members_mut(&mut self, f: &mut dyn FnMut(#nn::MemberMut<'_>)) {
                #(#members_mut)*
            }
        }
    }
}

fn expand(input: &DeriveInput) -> syn::Result<TokenStream> {
    let fields = match &input.data {
        Data::Struct(s) => match &s.fields {
            Fields::Named(named) => &named.named,
            other => {
                return Err(syn::Error::new(
                    other.span(),
                    "#[derive(Module)] needs named fields: the field names are the members' names (`fc1.weight`)",
                ))
            }
        },
        _ => {
            return Err(syn::Error::new(
                input.ident.span(),
                "#[derive(Module)] applies to a struct: its fields are the module's parameters, buffers and children",
            ))
        }
    };
    let nn = quote!(::opforge::nn);
    let (mut members, mut members_mut) = (Vec::new(), Vec::new());
    let mut errors: Option<syn::Error> = None;
    let mut training: Option<Span> = None;
    for field in fields {
        let ident = field.ident.as_ref().expect("named fields have names");
        let name = ident.to_string();
        let name = name.strip_prefix("r#").unwrap_or(&name);
        let kind = match kind(field) {
            Ok(k) => k,
            Err(e) => {
                combine(&mut errors, e);
                continue;
            }
        };
        let ty = &field.ty;
        let span = ty.span();
        match kind {
            Kind::Skip => {}
            Kind::Parameter | Kind::Buffer => {
                let variant = match kind {
                    Kind::Parameter => quote!(Parameter),
                    _ => quote!(Buffer),
                };
                members.push(quote_spanned! {span=>
                    f(#nn::Member::#variant(
                        ::std::borrow::Cow::Borrowed(#name),
                        #nn::derive::TensorField::tensor(&self.#ident),
                    ));
                });
            }
            Kind::Training => {
                if let Some(first) = training {
                    let mut e = syn::Error::new(
                        ident.span(),
                        "a module has one training flag: a second `#[module(training)]` field",
                    );
                    e.combine(syn::Error::new(first, "the first one"));
                    combine(&mut errors, e);
                    continue;
                }
                if !matches!(ty, Type::Path(p) if p.path.is_ident("bool")) {
                    combine(
                        &mut errors,
                        syn::Error::new(
                            span,
                            "`#[module(training)]` marks the module's training flag: a `bool` field",
                        ),
                    );
                    continue;
                }
                training = Some(ident.span());
                members.insert(0, quote!(f(#nn::Member::Training(self.#ident));));
                members_mut.insert(0, quote!(f(#nn::MemberMut::Training(&mut self.#ident));));
            }
            Kind::Child => {
                members.push(quote_spanned! {span=>
                    f(#nn::Member::Child(
                        ::std::borrow::Cow::Borrowed(#name),
                        #nn::derive::ModuleField::as_module(&self.#ident),
                    ));
                });
                members_mut.push(quote_spanned! {span=>
                    f(#nn::MemberMut::Child(
                        #name,
                        #nn::derive::ModuleField::as_module_mut(&mut self.#ident),
                    ));
                });
            }
        }
    }
    if let Some(e) = errors {
        return Err(e);
    }
    let members = members_impl(input, &members, &members_mut);
    let ident = &input.ident;
    let (impl_generics, ty_generics, where_clause) = input.generics.split_for_impl();
    // `print(model)`: PyTorch's `__repr__`.
    Ok(quote! {
        #members

        impl #impl_generics ::std::fmt::Display for #ident #ty_generics #where_clause {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(&#nn::Module::repr(self))
            }
        }
    })
}

fn combine(errors: &mut Option<syn::Error>, e: syn::Error) {
    match errors {
        Some(all) => all.combine(e),
        None => *errors = Some(e),
    }
}

/// The field's kind: its `#[module(..)]` attribute, else its type.
fn kind(field: &syn::Field) -> syn::Result<Kind> {
    let mut chosen: Option<(Kind, Span)> = None;
    for attr in field.attrs.iter().filter(|a| a.path().is_ident("module")) {
        attr.parse_nested_meta(|meta| {
            let k = if meta.path.is_ident("skip") {
                Kind::Skip
            } else if meta.path.is_ident("buffer") {
                Kind::Buffer
            } else if meta.path.is_ident("parameter") {
                Kind::Parameter
            } else if meta.path.is_ident("training") {
                Kind::Training
            } else if meta.path.is_ident("child") {
                Kind::Child
            } else {
                return Err(meta.error(
                    "unknown #[module(..)] option: expected `skip`, `buffer`, `parameter`, `training` or `child`",
                ));
            };
            if chosen.is_some() {
                return Err(meta.error("a field has one #[module(..)] kind"));
            }
            chosen = Some((k, meta.path.span()));
            Ok(())
        })?;
    }
    Ok(match chosen {
        Some((k, _)) => k,
        None if is_tensor(&field.ty) => Kind::Parameter,
        None => Kind::Child,
    })
}

/// `Tensor` or `Option<Tensor>`, by the last segment of the path (however
/// the type is imported).
fn is_tensor(ty: &Type) -> bool {
    let Type::Path(p) = ty else {
        return false;
    };
    let Some(last) = p.path.segments.last() else {
        return false;
    };
    if last.ident == "Tensor" && last.arguments.is_empty() {
        return true;
    }
    if last.ident != "Option" {
        return false;
    }
    match &last.arguments {
        PathArguments::AngleBracketed(args) if args.args.len() == 1 => {
            matches!(&args.args[0], GenericArgument::Type(inner) if is_tensor_only(inner))
        }
        _ => false,
    }
}

fn is_tensor_only(ty: &Type) -> bool {
    matches!(ty, Type::Path(p) if p.path.segments.last().is_some_and(|s| s.ident == "Tensor" && s.arguments.is_empty()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn errors(src: &str) -> Vec<String> {
        crate::compile_errors(&derive(src.parse().unwrap()))
    }

    #[test]
    fn fields_become_members_by_type_and_attribute() {
        let out = derive(quote! {
            struct Net {
                fc1: Linear,
                scale: Tensor,
                bias: Option<opforge::Tensor>,
                #[module(buffer)]
                running: Tensor,
                #[module(skip)]
                width: usize,
                #[module(training)]
                training: bool,
            }
        })
        .to_string();
        for want in [
            "Member :: Child (:: std :: borrow :: Cow :: Borrowed (\"fc1\")",
            "Member :: Parameter (:: std :: borrow :: Cow :: Borrowed (\"scale\")",
            "Member :: Parameter (:: std :: borrow :: Cow :: Borrowed (\"bias\")",
            "Member :: Buffer (:: std :: borrow :: Cow :: Borrowed (\"running\")",
            "Member :: Training (self . training)",
        ] {
            assert!(out.contains(want), "{want} in {out}");
        }
        assert!(!out.contains("width"), "{out}");
    }

    #[test]
    fn misuses_are_errors_naming_the_rule() {
        assert_eq!(
            errors("struct T(Tensor);"),
            ["\"#[derive(Module)] needs named fields: the field names are the members' names (`fc1.weight`)\""]
        );
        assert_eq!(
            errors("enum E { A }"),
            ["\"#[derive(Module)] applies to a struct: its fields are the module's parameters, buffers and children\""]
        );
        assert_eq!(
            errors("struct S { #[module(frozen)] w: Tensor }"),
            ["\"unknown #[module(..)] option: expected `skip`, `buffer`, `parameter`, `training` or `child`\""]
        );
        assert_eq!(
            errors("struct S { #[module(training)] a: bool, #[module(training)] b: bool }").len(),
            2
        );
        assert_eq!(
            errors("struct S { #[module(training)] mode: u8 }"),
            ["\"`#[module(training)]` marks the module's training flag: a `bool` field\""]
        );
    }
}
