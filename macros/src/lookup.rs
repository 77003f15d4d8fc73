//! How `#[kernel]` and `#[op]` find the schema of the crate being compiled,
//! without reading any file: every crate with a schema file generates a lookup
//! macro, `__opforge_schema!`, with one arm per operator (see
//! `opforge_codegen::emit_lookup::schema_macro`). The attribute expands to a call of
//! that macro with a *callback* (`kernel_impl!`, `op_impl!`) and its own tokens;
//! the arm for the operator calls the callback with the schema, its place in the
//! file and its `dispatch:` rows, and the callback does the checks and the
//! registration. A crate's lookup forwards names it does not have to the
//! runtime's, and the runtime's reports them unknown, with every name for
//! suggestions. Since the schema travels as tokens, a change to the YAML rebuilds
//! exactly what depends on it.
//!
//! Which lookup: the crate's own when it is being compiled itself (its build
//! script sets `OPFORGE_SCHEMA_CRATE` to its name, and the macro is in scope
//! because `include_schema!()` opens its `lib.rs`); that crate's, by path, from
//! its tests, examples, binaries and doctests; the runtime's everywhere else.

use proc_macro2::{Span, TokenStream, TokenTree};
use quote::{format_ident, quote};

/// The path of the lookup macro to call from the crate being compiled.
pub(crate) fn schema_macro() -> TokenStream {
    let var = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
    match var("OPFORGE_SCHEMA_CRATE") {
        Some(own)
            if var("CARGO_CRATE_NAME").as_deref() == Some(own.as_str())
                && var("CARGO_BIN_NAME").is_none()
                && var("UNSTABLE_RUSTDOC_TEST_PATH").is_none() =>
        {
            quote!(__opforge_schema)
        }
        Some(own) => {
            let c = format_ident!("{}", own);
            quote!(::#c::__opforge_schema)
        }
        None => quote!(::opforge::__opforge_schema),
    }
}

/// The `field = value` pairs of the attribute's payload, as the lookup passed
/// it back to the callback (a value is one token tree).
pub(crate) fn payload_fields(payload: TokenStream) -> Vec<(String, TokenTree)> {
    let mut out = Vec::new();
    let mut it = payload.into_iter();
    while let Some(tt) = it.next() {
        let TokenTree::Ident(field) = tt else {
            continue;
        };
        it.next(); // `=`
        if let Some(value) = it.next() {
            out.push((field.to_string(), value));
        }
    }
    out
}

/// `add.Tensor` → `aten::add.Tensor`: the key the lookup's arms use.
pub(crate) fn qualified(name: &str) -> String {
    if name.contains("::") {
        name.to_string()
    } else {
        format!("aten::{name}")
    }
}

/// What the lookup found.
pub(crate) enum Found {
    /// The operator, from a schema file.
    Op(Entry),
    /// No such operator; every name the lookup knows (for suggestions): the
    /// operators' for a name, the kernel functions under the key for a
    /// function-name (`@kernel`) lookup.
    Unknown(Vec<String>),
}

/// An operator as the lookup describes it.
pub(crate) struct Entry {
    /// `ns::name.overload`.
    pub op: String,
    /// The schema text.
    pub schema: String,
    /// The schema file's name and the entry's line.
    pub file: String,
    pub line: usize,
    /// The crate whose schema file it is.
    pub crate_name: String,
    /// Its `dispatch:` rows (key, kernel path) when they name Rust kernels.
    pub kernels: Vec<(String, String)>,
}

impl Entry {
    /// `native_functions.yaml:45`.
    pub fn place(&self) -> String {
        format!("{}:{}", self.file, self.line)
    }
}

/// Parses the callback's input: `found { … }` or `unknown { … }`, then the
/// attribute's payload (returned as is).
pub(crate) fn parse(input: TokenStream) -> syn::Result<(Found, TokenStream)> {
    let mut it = input.into_iter();
    let head = match it.next() {
        Some(TokenTree::Ident(i)) => i.to_string(),
        _ => {
            return Err(syn::Error::new(
                Span::call_site(),
                "expected `found` or `unknown`",
            ))
        }
    };
    let body = match it.next() {
        Some(TokenTree::Group(g)) => g.stream(),
        _ => return Err(syn::Error::new(Span::call_site(), "expected `{ … }`")),
    };
    let rest: TokenStream = it.collect();
    let fields = fields(body)?;
    let get = |k: &str| -> syn::Result<&TokenStream> {
        fields
            .iter()
            .find(|(n, _)| n == k)
            .map(|(_, v)| v)
            .ok_or_else(|| syn::Error::new(Span::call_site(), format!("missing `{k}`")))
    };
    let found = match head.as_str() {
        "found" => Found::Op(Entry {
            op: string(get("op")?)?,
            schema: string(get("schema")?)?,
            file: string(get("file")?)?,
            line: syn::parse2::<syn::LitInt>(get("line")?.clone())?.base10_parse()?,
            crate_name: string(get("crate")?)?,
            kernels: rows(get("kernels")?)?,
        }),
        "unknown" => Found::Unknown(strings(get("names")?)?),
        other => {
            return Err(syn::Error::new(
                Span::call_site(),
                format!("expected `found` or `unknown`, got `{other}`"),
            ))
        }
    };
    Ok((found, rest))
}

/// `name: value, name: value` (values up to the next top-level comma).
fn fields(body: TokenStream) -> syn::Result<Vec<(String, TokenStream)>> {
    let mut out = Vec::new();
    let mut it = body.into_iter().peekable();
    while let Some(tt) = it.next() {
        let TokenTree::Ident(name) = tt else {
            return Err(syn::Error::new(tt.span(), "expected a field name"));
        };
        match it.next() {
            Some(TokenTree::Punct(p)) if p.as_char() == ':' => {}
            _ => return Err(syn::Error::new(name.span(), "expected `:`")),
        }
        let mut value = TokenStream::new();
        while let Some(tt) = it.peek() {
            if matches!(tt, TokenTree::Punct(p) if p.as_char() == ',') {
                it.next();
                break;
            }
            value.extend(it.next());
        }
        out.push((name.to_string(), value));
    }
    Ok(out)
}

fn string(ts: &TokenStream) -> syn::Result<String> {
    Ok(syn::parse2::<syn::LitStr>(ts.clone())?.value())
}

/// `["a", "b"]`.
fn strings(ts: &TokenStream) -> syn::Result<Vec<String>> {
    let list: syn::ExprArray = syn::parse2(ts.clone())?;
    list.elems
        .iter()
        .map(|e| match e {
            syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(s),
                ..
            }) => Ok(s.value()),
            other => Err(syn::Error::new_spanned(other, "expected a string")),
        })
        .collect()
}

/// `[CPU = "cpu::add_Tensor", Meta = "meta::add_Tensor"]`.
fn rows(ts: &TokenStream) -> syn::Result<Vec<(String, String)>> {
    let list: syn::ExprArray = syn::parse2(ts.clone())?;
    list.elems
        .iter()
        .map(|e| match e {
            syn::Expr::Assign(a) => match (a.left.as_ref(), a.right.as_ref()) {
                (
                    syn::Expr::Path(p),
                    syn::Expr::Lit(syn::ExprLit {
                        lit: syn::Lit::Str(s),
                        ..
                    }),
                ) => Ok((quote!(#p).to_string(), s.value())),
                _ => Err(syn::Error::new_spanned(e, "expected `KEY = \"kernel\"`")),
            },
            other => Err(syn::Error::new_spanned(
                other,
                "expected `KEY = \"kernel\"`",
            )),
        })
        .collect()
}

/// The nearest of `names` to `name` (edit distance), if close enough.
pub(crate) fn nearest<'a>(name: &str, names: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    opforge_schema::diag::nearest(name, names)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_what_the_lookup_hands_over() {
        let (found, rest) = parse(quote! {
            found { op: "aten::add.Tensor", schema: "add.Tensor(Tensor self) -> Tensor", file: "native_functions.yaml", line: 45, crate: "opforge", kernels: [CPU = "cpu::add_Tensor", Meta = "meta::add_Tensor"] }
            key = CPU
        })
        .unwrap();
        let Found::Op(e) = found else { panic!() };
        assert_eq!(
            (e.op.as_str(), e.line, e.place().as_str()),
            ("aten::add.Tensor", 45, "native_functions.yaml:45")
        );
        assert_eq!(
            e.kernels[1],
            ("Meta".to_string(), "meta::add_Tensor".to_string())
        );
        assert_eq!(rest.to_string(), "key = CPU");
        let (found, _) = parse(quote!(unknown {
            names: ["aten::abs", "aten::neg"]
        }))
        .unwrap();
        assert!(matches!(found, Found::Unknown(n) if n.len() == 2));
    }

    #[test]
    fn names_are_qualified() {
        assert_eq!(qualified("add.Tensor"), "aten::add.Tensor");
        assert_eq!(qualified("mylib::f"), "mylib::f");
    }
}
