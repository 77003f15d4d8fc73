//! Lower: the Rust types kernels take and return, per schema type, as
//! [`syn::Type`]s.
//!
//! One mapping, used by the `#[kernel]` macro (to check a kernel's signature),
//! by emission (the typed API and the `sig::` aliases the dispatcher's unboxed
//! path is typed by), so the two always agree. The table is in the runtime's
//! `value` module docs. Types are written with `::opforge::` paths; [`show`]
//! prints them as a person writes them (`&Tensor`, `Option<&[i64]>`). A schema
//! type without a mapping is an error naming it, never a placeholder.

use opforge_schema::model::{Argument, BaseType, FunctionSchema, Return, Type};
use opforge_schema::scalar_type::ScalarType;
use quote::ToTokens;
use syn::parse_quote;

/// Why a schema type has no Rust type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unmapped(pub String);

impl std::fmt::Display for Unmapped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The runtime's `DType` variant for scalar type `t` (`Long` → `Int64`), or `None`
/// if the runtime has no such dtype. The runtime's own mapping is
/// `DType::scalar_type`; a test in `tests/` checks the two agree.
pub fn dtype_variant(t: ScalarType) -> Option<&'static str> {
    Some(match t {
        ScalarType::Bool => "Bool",
        ScalarType::Int => "Int32",
        ScalarType::Long => "Int64",
        ScalarType::Float => "Float32",
        ScalarType::Double => "Float64",
        _ => return None,
    })
}

fn unmapped(t: &Type) -> Unmapped {
    Unmapped(format!(
        "the schema type `{t}` has no Rust type (mapped: Tensor, int, SymInt, float, bool, SymBool, str, Scalar, ScalarType, Layout, Device, DeviceIndex, MemoryFormat, Generator, Storage, Stream, custom classes, their optionals and lists of tensors, ints, floats, bools and Scalars)"
    ))
}

/// The Rust type of a value of schema type `t` (not a written tensor).
pub fn value_type(t: &Type) -> Result<syn::Type, Unmapped> {
    Ok(match t {
        Type::Base(b) => base_type(*b).ok_or_else(|| unmapped(t))?,
        Type::Optional(inner) => match inner.as_ref() {
            Type::Optional(_) => return Err(unmapped(t)),
            other => {
                let v = value_type(other).map_err(|_| unmapped(t))?;
                parse_quote!(::core::option::Option<#v>)
            }
        },
        Type::List { elem, .. } => match elem.as_ref() {
            Type::Base(BaseType::Tensor) => parse_quote!(&[::opforge::Tensor]),
            Type::Optional(e) if e.is_base(BaseType::Tensor) => {
                parse_quote!(&[::core::option::Option<::opforge::Tensor>])
            }
            Type::Base(BaseType::Int | BaseType::SymInt) => parse_quote!(&[i64]),
            Type::Base(BaseType::Float) => parse_quote!(&[f64]),
            Type::Base(BaseType::Bool) => parse_quote!(&[bool]),
            Type::Base(BaseType::Scalar) => parse_quote!(&[::opforge::Scalar]),
            _ => return Err(unmapped(t)),
        },
        // The object; a kernel may take the value inside it instead (`&T` of
        // the class's Rust type, checked by the registration macros).
        Type::CustomClass(_) => parse_quote!(&::opforge::ScriptObject),
    })
}

fn base_type(b: BaseType) -> Option<syn::Type> {
    Some(match b {
        BaseType::Tensor => parse_quote!(&::opforge::Tensor),
        BaseType::Int | BaseType::SymInt | BaseType::DeviceIndex => parse_quote!(i64),
        BaseType::Float => parse_quote!(f64),
        BaseType::Bool | BaseType::SymBool => parse_quote!(bool),
        BaseType::Str => parse_quote!(&str),
        BaseType::Scalar => parse_quote!(::opforge::Scalar),
        BaseType::ScalarType => parse_quote!(::opforge::DType),
        BaseType::Layout => parse_quote!(::opforge::Layout),
        BaseType::Device => parse_quote!(::opforge::Device),
        BaseType::MemoryFormat => parse_quote!(::opforge::MemoryFormat),
        BaseType::Generator => parse_quote!(&::opforge::Generator),
        BaseType::Storage => parse_quote!(&::opforge::Storage),
        BaseType::Stream => parse_quote!(::opforge::Stream),
        BaseType::QScheme => parse_quote!(::opforge::QScheme),
        BaseType::DimVector
        | BaseType::GraphModule
        | BaseType::Dimname
        | BaseType::Complex
        | BaseType::Any => return None,
    })
}

/// The Rust parameter type of an argument: as [`value_type`], except that a
/// written single tensor (`Tensor(a!)`) is taken as `&mut Tensor` (a written
/// tensor list, `Tensor(a!)[]`, is `&[Tensor]`: its elements are handles,
/// written through).
///
/// ```
/// use opforge_codegen::rust_types::{param_type, show};
/// use opforge_schema::schema::parse_schema;
/// let s = parse_schema("add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)").unwrap();
/// let ts: Vec<String> = s.arguments.all.iter().map(|a| show(&param_type(a).unwrap())).collect();
/// assert_eq!(ts, ["&Tensor", "&Tensor", "Scalar", "&mut Tensor"]);
/// ```
pub fn param_type(a: &Argument) -> Result<syn::Type, Unmapped> {
    if a.is_write() {
        return match &a.ty {
            Type::Base(BaseType::Tensor) => Ok(parse_quote!(&mut ::opforge::Tensor)),
            Type::List { elem, .. } if elem.is_base(BaseType::Tensor) => {
                Ok(parse_quote!(&[::opforge::Tensor]))
            }
            t => Err(Unmapped(format!(
                "a written `{t}` has no Rust type (written arguments are `Tensor(a!)` and `Tensor(a!)[]`)"
            ))),
        };
    }
    value_type(&a.ty)
}

/// Is the argument taken as `&mut Tensor`?
pub fn is_mut_tensor(a: &Argument) -> bool {
    a.is_write() && a.ty.is_base(BaseType::Tensor)
}

fn one_return(r: &Return) -> Result<syn::Type, Unmapped> {
    Ok(match &r.ty {
        Type::Base(BaseType::Tensor) => parse_quote!(::opforge::Tensor),
        Type::Optional(t) if t.is_base(BaseType::Tensor) => {
            parse_quote!(::core::option::Option<::opforge::Tensor>)
        }
        Type::List { elem, .. } if elem.is_base(BaseType::Tensor) => {
            parse_quote!(::std::vec::Vec<::opforge::Tensor>)
        }
        Type::List { elem, .. } if elem.is_base(BaseType::Int) || elem.is_base(BaseType::SymInt) => {
            parse_quote!(::std::vec::Vec<i64>)
        }
        Type::Base(BaseType::Int | BaseType::SymInt) => parse_quote!(i64),
        Type::Base(BaseType::Float) => parse_quote!(f64),
        Type::Base(BaseType::Bool | BaseType::SymBool) => parse_quote!(bool),
        Type::Base(BaseType::Str) => parse_quote!(::std::string::String),
        Type::Base(BaseType::Scalar) => parse_quote!(::opforge::Scalar),
        Type::Base(BaseType::ScalarType) => parse_quote!(::opforge::DType),
        Type::Base(BaseType::QScheme) => parse_quote!(::opforge::QScheme),
        Type::Base(BaseType::Device) => parse_quote!(::opforge::Device),
        Type::Base(BaseType::Layout) => parse_quote!(::opforge::Layout),
        Type::CustomClass(_) => parse_quote!(::opforge::ScriptObject),
        t => {
            return Err(Unmapped(format!(
                "the return type `{t}` has no Rust type (mapped: Tensor, Tensor?, Tensor[], int, SymInt, int[], float, bool, SymBool, str, Scalar, ScalarType, QScheme, Device, Layout, custom classes)"
            )))
        }
    })
}

/// The most returns a Rust signature has (a tuple of up to ten).
pub const MAX_RETURNS: usize = 10;

/// The Rust type of the returned value (without the `Result`): `()`, one
/// type, or a tuple.
pub fn return_type(rets: &[Return]) -> Result<syn::Type, Unmapped> {
    match rets {
        [] => Ok(parse_quote!(())),
        [r] => one_return(r),
        rs if rs.len() <= MAX_RETURNS => {
            let parts = rs.iter().map(one_return).collect::<Result<Vec<_>, _>>()?;
            Ok(parse_quote!((#(#parts),*)))
        }
        rs => Err(Unmapped(format!(
            "{} returns: a Rust signature returns at most {MAX_RETURNS}",
            rs.len()
        ))),
    }
}

/// `::opforge::Result<T>` for the return type.
pub fn result_type(rets: &[Return]) -> Result<syn::Type, Unmapped> {
    let t = return_type(rets)?;
    Ok(parse_quote!(::opforge::Result<#t>))
}

/// The most arguments a Rust signature has (the typed API's tuples).
pub const MAX_ARGS: usize = 32;

/// The parameter types and the `Result<T>` of a kernel for `f`. Fails
/// naming the first argument or return without a mapping, or the argument
/// count past [`MAX_ARGS`].
pub fn signature_types(f: &FunctionSchema) -> Result<(Vec<syn::Type>, syn::Type), Unmapped> {
    if is_boxed(f) {
        return Ok((
            vec![parse_quote!(&[::opforge::Value])],
            parse_quote!(::opforge::Result<::std::vec::Vec<::opforge::Value>>),
        ));
    }
    if f.arguments.all.len() > MAX_ARGS {
        return Err(Unmapped(format!(
            "{} arguments: a Rust signature takes at most {MAX_ARGS}",
            f.arguments.all.len()
        )));
    }
    let params = f
        .arguments
        .all
        .iter()
        .map(|a| param_type(a).map_err(|e| Unmapped(format!("argument `{a}`: {e}"))))
        .collect::<Result<Vec<_>, _>>()?;
    Ok((params, result_type(&f.returns)?))
}

/// Does an operator of schema `f` take its values boxed? Its schema has `...`
/// (more arguments, or more returns, than it declares) or an `Any`: no Rust
/// signature can say that, so its kernels take the call's values as they
/// are and return its results as values, `fn(&[Value]) -> Result<Vec<Value>>`
/// (PyTorch's boxed kernels, `KernelFunction::makeFromBoxedFunction`; what
/// its higher-order operators, `call_torchbind` and `with_effects`, are).
/// Such an operator has no typed API; it is called through
/// `Operator::call_boxed`.
///
/// ```
/// use opforge_codegen::rust_types::{fn_pointer_type, is_boxed, show};
/// use opforge_schema::schema::parse_schema;
/// let s = parse_schema("higher_order::call_torchbind(Any self, str method, ...) -> Any").unwrap();
/// assert!(is_boxed(&s));
/// assert_eq!(show(&fn_pointer_type(&s).unwrap()), "fn(&[Value]) -> Result<Vec<Value>>");
/// ```
pub fn is_boxed(f: &FunctionSchema) -> bool {
    let any = |t: &Type| matches!(t.innermost(), Type::Base(BaseType::Any));
    f.arguments.vararg
        || f.varret
        || f.arguments.all.iter().any(|a| any(&a.ty))
        || f.returns.iter().any(|r| any(&r.ty))
}

/// The function-pointer type of a kernel for `f`:
/// `fn(&Tensor, &Tensor, Scalar) -> Result<Tensor>` ([`signature_types`]).
pub fn fn_pointer_type(f: &FunctionSchema) -> Result<syn::Type, Unmapped> {
    let (params, ret) = signature_types(f)?;
    Ok(parse_quote!(fn(#(#params),*) -> #ret))
}

/// A type as a person writes it: no `::opforge::`, `::core::option::`,
/// `::std::vec::` or `::std::string::` prefixes, spaces as rustfmt puts them
/// (`&mut Tensor`, `Option<&[i64]>`, `Result<(Tensor, Tensor)>`).
pub fn show(ty: &impl ToTokens) -> String {
    let s = ty.to_token_stream().to_string();
    let s = s
        .replace(":: opforge :: ", "")
        .replace(":: core :: option :: ", "")
        .replace(":: std :: vec :: ", "")
        .replace(":: std :: string :: ", "");
    tidy(&s)
}

/// Token text with rustfmt's spacing: no space after `&`, `<`, `[`, `(`, `::`,
/// `'`, none before `<`, `>`, `,`, `]`, `)`, `::`.
pub fn tidy(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c == ' ' {
            let prev = out.chars().last();
            let next = chars.peek().copied();
            let glue_prev = matches!(prev, Some('&' | '<' | '[' | '(' | ':' | '\''));
            let glue_next = matches!(next, Some('<' | '>' | ',' | ']' | ')' | ':'))
                || (next == Some('(') && out.ends_with("fn"));
            if glue_prev || glue_next {
                continue;
            }
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use opforge_schema::schema::parse_schema;

    fn sig(s: &str) -> Result<String, Unmapped> {
        fn_pointer_type(&parse_schema(s).unwrap()).map(|t| show(&t))
    }

    #[test]
    fn mapping() {
        assert_eq!(
            sig("max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)").unwrap(),
            "fn(&Tensor, i64, bool) -> Result<(Tensor, Tensor)>"
        );
        assert_eq!(
            sig("zeros(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor").unwrap(),
            "fn(&[i64], Option<DType>, Option<Layout>, Option<Device>, Option<bool>) -> Result<Tensor>"
        );
        assert_eq!(
            sig("index.Tensor(Tensor self, Tensor?[] indices) -> Tensor").unwrap(),
            "fn(&Tensor, &[Option<Tensor>]) -> Result<Tensor>"
        );
        assert_eq!(
            sig("f(Tensor self, Generator? g=None, int[1]? dim=None, str? s=None) -> (Tensor, Tensor[], float, int)").unwrap(),
            "fn(&Tensor, Option<&Generator>, Option<&[i64]>, Option<&str>) -> Result<(Tensor, Vec<Tensor>, f64, i64)>"
        );
        assert_eq!(
            sig("_foreach_add_.List(Tensor(a!)[] self, Tensor[] other, *, Scalar alpha=1) -> ()")
                .unwrap(),
            "fn(&[Tensor], &[Tensor], Scalar) -> Result<()>"
        );
    }

    #[test]
    fn unmapped_types_are_named() {
        let e = sig("f(Tensor self, complex c=0) -> Tensor").unwrap_err();
        assert!(
            e.0.starts_with("argument `complex c=0`: the schema type `complex` has no Rust type"),
            "{e}"
        );
        let e = sig("f(Tensor self, int?? x) -> Tensor").unwrap_err();
        assert!(e.0.contains("`int??`"), "{e}");
        let e = sig("f(Tensor self) -> Dimname").unwrap_err();
        assert!(
            e.0.starts_with("the return type `Dimname` has no Rust type"),
            "{e}"
        );
    }
}
