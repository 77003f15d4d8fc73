//! Lower: the Rust types kernels take and return, per schema type.
//!
//! One mapping, used by the `#[kernel]` macro (to check a kernel's signature) and by
//! emission (the typed API and the signature aliases the dispatcher's unboxed path
//! calls through), so the two always agree. The table is in the runtime's `value`
//! module docs. Types are rendered with a path prefix (`::opforge::Tensor` in
//! generated code, none in messages).

use opforge_schema::model::{Argument, BaseType, FunctionSchema, Return, Type};
use opforge_schema::scalar_type::ScalarType;

/// How to spell runtime types.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Spelling {
    /// With the `::opforge::` prefix (generated code).
    Qualified,
    /// Bare names (messages, docs).
    Short,
}

fn p(s: Spelling, name: &str) -> String {
    match s {
        Spelling::Qualified => format!("::opforge::{name}"),
        Spelling::Short => name.to_string(),
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

/// The Rust type of a value of schema type `t` (not a written tensor), or `None`
/// if the type has no Rust mapping yet.
pub fn value_type(t: &Type, s: Spelling) -> Option<String> {
    Some(match t {
        Type::Base(b) => base_type(*b, s)?,
        Type::Optional(inner) => match inner.as_ref() {
            Type::Optional(_) => return None,
            other => format!("Option<{}>", value_type(other, s)?),
        },
        Type::List { elem, .. } => match elem.as_ref() {
            Type::Base(BaseType::Tensor) => format!("&[{}]", p(s, "Tensor")),
            Type::Optional(t) if t.is_base(BaseType::Tensor) => {
                format!("&[Option<{}>]", p(s, "Tensor"))
            }
            Type::Base(BaseType::Int | BaseType::SymInt) => "&[i64]".into(),
            Type::Base(BaseType::Float) => "&[f64]".into(),
            Type::Base(BaseType::Bool) => "&[bool]".into(),
            Type::Base(BaseType::Scalar) => format!("&[{}]", p(s, "Scalar")),
            _ => return None,
        },
        Type::CustomClass(_) => return None,
    })
}

fn base_type(b: BaseType, s: Spelling) -> Option<String> {
    Some(match b {
        BaseType::Tensor => format!("&{}", p(s, "Tensor")),
        BaseType::Int | BaseType::SymInt | BaseType::DeviceIndex => "i64".into(),
        BaseType::Float => "f64".into(),
        BaseType::Bool => "bool".into(),
        BaseType::Str => "&str".into(),
        BaseType::Scalar => p(s, "Scalar"),
        BaseType::ScalarType => p(s, "DType"),
        BaseType::Layout => p(s, "Layout"),
        BaseType::Device => p(s, "Device"),
        BaseType::MemoryFormat => p(s, "MemoryFormat"),
        _ => return None,
    })
}

/// The Rust parameter type of an argument: as [`value_type`], except that a written
/// single tensor (`Tensor(a!)`) is taken as `&mut Tensor`.
///
/// ```
/// use opforge_codegen::rust_types::{param_type, Spelling};
/// use opforge_schema::schema::parse_schema;
/// let s = parse_schema("add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)").unwrap();
/// let ts: Vec<String> = s.arguments.all.iter().map(|a| param_type(a, Spelling::Short).unwrap()).collect();
/// assert_eq!(ts, ["&Tensor", "&Tensor", "Scalar", "&mut Tensor"]);
/// ```
pub fn param_type(a: &Argument, s: Spelling) -> Option<String> {
    if a.is_write() {
        return match &a.ty {
            Type::Base(BaseType::Tensor) => Some(format!("&mut {}", p(s, "Tensor"))),
            // A written tensor list: the elements are handles, written through.
            Type::List { elem, .. } if elem.is_base(BaseType::Tensor) => {
                Some(format!("&[{}]", p(s, "Tensor")))
            }
            _ => None,
        };
    }
    value_type(&a.ty, s)
}

/// The Rust type of the returned value (without the `Result`).
pub fn return_type(rets: &[Return], s: Spelling) -> Option<String> {
    let one = |r: &Return| -> Option<String> {
        Some(match &r.ty {
            Type::Base(BaseType::Tensor) => p(s, "Tensor"),
            Type::List { elem, .. } if elem.is_base(BaseType::Tensor) => {
                format!("Vec<{}>", p(s, "Tensor"))
            }
            Type::Base(BaseType::Int | BaseType::SymInt) => "i64".into(),
            Type::Base(BaseType::Float) => "f64".into(),
            Type::Base(BaseType::Bool) => "bool".into(),
            Type::Base(BaseType::Scalar) => p(s, "Scalar"),
            Type::Base(BaseType::ScalarType) => p(s, "DType"),
            _ => return None,
        })
    };
    match rets {
        [] => Some("()".into()),
        [r] => one(r),
        rs if rs.len() <= 3 && rs.iter().all(|r| r.ty.is_base(BaseType::Tensor)) => {
            let parts: Option<Vec<String>> = rs.iter().map(one).collect();
            Some(format!("({})", parts?.join(", ")))
        }
        _ => None,
    }
}

/// `Result<T>` for the return type.
pub fn result_type(rets: &[Return], s: Spelling) -> Option<String> {
    Some(format!("{}<{}>", p(s, "Result"), return_type(rets, s)?))
}

/// The function-pointer type of a kernel for `f`:
/// `fn(&Tensor, &Tensor, Scalar) -> Result<Tensor>`.
pub fn fn_pointer_type(f: &FunctionSchema, s: Spelling) -> Option<String> {
    let params: Option<Vec<String>> = f.arguments.all.iter().map(|a| param_type(a, s)).collect();
    Some(format!(
        "fn({}) -> {}",
        params?.join(", "),
        result_type(&f.returns, s)?
    ))
}

/// Why `f` has no Rust signature (the first argument or return without a mapping).
pub fn unsupported(f: &FunctionSchema) -> Option<String> {
    if let Some(a) = f
        .arguments
        .all
        .iter()
        .find(|a| param_type(a, Spelling::Short).is_none())
    {
        return Some(format!("argument `{a}` has no Rust type mapping"));
    }
    return_type(&f.returns, Spelling::Short)
        .is_none()
        .then(|| "its returns have no Rust type mapping".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use opforge_schema::schema::parse_schema;

    #[test]
    fn mapping() {
        let f = parse_schema(
            "max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)",
        )
        .unwrap();
        assert_eq!(
            fn_pointer_type(&f, Spelling::Short).unwrap(),
            "fn(&Tensor, i64, bool) -> Result<(Tensor, Tensor)>"
        );
        let f = parse_schema("zeros(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor").unwrap();
        assert_eq!(
            fn_pointer_type(&f, Spelling::Qualified).unwrap(),
            "fn(&[i64], Option<::opforge::DType>, Option<::opforge::Layout>, Option<::opforge::Device>, Option<bool>) -> ::opforge::Result<::opforge::Tensor>"
        );
        let f = parse_schema("index.Tensor(Tensor self, Tensor?[] indices) -> Tensor").unwrap();
        assert_eq!(
            fn_pointer_type(&f, Spelling::Short).unwrap(),
            "fn(&Tensor, &[Option<Tensor>]) -> Result<Tensor>"
        );
        let f = parse_schema("f(Tensor self, Generator? g=None) -> Tensor").unwrap();
        assert!(fn_pointer_type(&f, Spelling::Short).is_none());
        assert!(unsupported(&f).unwrap().contains("Generator? g=None"));
    }
}
