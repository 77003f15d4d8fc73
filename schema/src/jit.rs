//! Model: a schema as c10 prints it (`operator<<` of `c10::FunctionSchema`):
//! the text PyTorch's messages quote after `Declaration:` and what `op._schema`
//! shows. It is the YAML's text with the defaults as TorchScript parsed them:
//!
//! - a `float` (or a `Scalar` written with a point) prints as C++ prints a
//!   double: `1.` for a whole number, else 17 significant digits
//!   (`1e-05` → `1.0000000000000001e-05`);
//! - enum-like names print as their codes (`Mean` → `1`, `long` → `4`,
//!   `contiguous_format` → `0`, `strided` → `0`);
//! - strings are double-quoted; `int[N]` lists print one number when their
//!   elements are all equal and there are several (`int[2] padding=0`), other
//!   lists in brackets (`int[1] padding=[0]`, `SymInt[2] x=[0, 0]`).
//!
//! ```
//! use opforge_schema::{jit::jit_text, schema::parse_schema};
//! let s = parse_schema("allclose(Tensor self, float rtol=1e-05, int reduction=Mean, str m='x') -> bool")?;
//! assert_eq!(
//!     jit_text(&s),
//!     "allclose(Tensor self, float rtol=1.0000000000000001e-05, int reduction=1, str m=\"x\") -> bool"
//! );
//! # Ok::<(), opforge_schema::schema::SchemaError>(())
//! ```

use crate::enums::{self, EnumKind};
use crate::model::{BaseType, Default, DefaultValue, FunctionSchema, Type};
use crate::scalar_type::ScalarType;

/// The schema as c10 prints it (see the module docs).
pub fn jit_text(schema: &FunctionSchema) -> String {
    let mut s = schema.clone();
    for a in &mut s.arguments.all {
        if let Some(d) = &mut a.default {
            if let Some(text) = jit_default(&a.ty, d) {
                d.text = text;
            }
        }
    }
    s.to_string()
}

/// A default of type `ty` as c10 prints it; `None` keeps the text as written
/// (a default TorchScript would not parse either).
fn jit_default(ty: &Type, d: &Default) -> Option<String> {
    let v = d.value.as_ref()?;
    if *v == DefaultValue::None {
        return Some("None".into());
    }
    if let Type::List { elem, size } = ty {
        // c10 prints an `int` list whose several elements are all equal as
        // one number (what native_functions.yaml writes); not under `?`.
        let items = list_items(v, *size)?;
        if elem.is_base(BaseType::Int) && items.len() > 1 && items.iter().all(|x| *x == items[0]) {
            return scalar(elem, &items[0]);
        }
        let texts: Option<Vec<String>> = items.iter().map(|x| scalar(elem, x)).collect();
        return Some(format!("[{}]", texts?.join(", ")));
    }
    match ty.strip_optional() {
        Type::List { elem, size } => {
            let texts: Option<Vec<String>> = list_items(v, *size)?
                .iter()
                .map(|x| scalar(elem, x))
                .collect();
            Some(format!("[{}]", texts?.join(", ")))
        }
        t => scalar(t, v),
    }
}

/// The elements of a list default: a literal list, or one number or bool
/// repeated to the list's fixed size.
fn list_items(v: &DefaultValue, size: Option<u32>) -> Option<Vec<DefaultValue>> {
    match v {
        DefaultValue::List(xs) => Some(xs.clone()),
        DefaultValue::Int(_) | DefaultValue::Bool(_) | DefaultValue::Float(_) => {
            Some(vec![v.clone(); size? as usize])
        }
        _ => None,
    }
}

/// One non-list default of type `ty`.
fn scalar(ty: &Type, v: &DefaultValue) -> Option<String> {
    let Type::Base(b) = ty.strip_optional() else {
        return None;
    };
    Some(match (b, v) {
        (_, DefaultValue::None) => "None".into(),
        (_, DefaultValue::Bool(x)) => if *x { "True" } else { "False" }.into(),
        (BaseType::Float, DefaultValue::Int(i)) => double(*i as f64),
        (_, DefaultValue::Int(i)) => i.to_string(),
        (_, DefaultValue::Float(x)) => double(*x),
        (_, DefaultValue::Str(s)) => quoted(s),
        (BaseType::Int, DefaultValue::Enum(e)) => code(EnumKind::Reduction, e)?,
        (BaseType::ScalarType, DefaultValue::Enum(e)) => {
            ScalarType::from_name_or_alias(e)?.code().to_string()
        }
        (BaseType::MemoryFormat, DefaultValue::Enum(e)) => code(EnumKind::MemoryFormat, e)?,
        (BaseType::Layout, DefaultValue::Enum(e)) => code(EnumKind::Layout, e)?,
        _ => return None,
    })
}

/// The code of an enum value's name, as TorchScript prints it.
fn code(kind: EnumKind, name: &str) -> Option<String> {
    enums::by_name(kind, name).map(|v| v.code.to_string())
}

/// A double as c10 prints an `IValue` holding one: a whole number below 1e10
/// as `1.` (`-0.` for negative zero), anything else as `%.17g`.
pub fn double(x: f64) -> String {
    if (x.is_normal() || x == 0.0) && x.abs() < 1e10 && x.trunc() == x {
        let sign = if x == 0.0 && x.is_sign_negative() {
            "-"
        } else {
            ""
        };
        return format!("{sign}{}.", x as i64);
    }
    g17(x)
}

/// C's `%.17g`.
fn g17(x: f64) -> String {
    if x.is_nan() {
        return "nan".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf" } else { "-inf" }.into();
    }
    let sci = format!("{x:.16e}");
    let (mant, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let trim = |s: &str| -> String {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s.to_string()
        }
    };
    if (-4..17).contains(&exp) {
        trim(&format!("{x:.*}", (16 - exp) as usize))
    } else {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{}e{sign}{:02}", trim(mant), exp.abs())
    }
}

/// A string as c10's `printQuotedString` writes it.
fn quoted(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\{:03o}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::parse_schema;

    fn jit(s: &str) -> String {
        jit_text(&parse_schema(s).unwrap())
    }

    // Each expectation is what PyTorch 2.15 printed for the operator's `_schema`.
    #[test]
    fn defaults_print_as_c10_prints_them() {
        assert_eq!(
            jit("aten::contiguous(Tensor(a) self, *, MemoryFormat memory_format=contiguous_format) -> Tensor(a)"),
            "aten::contiguous(Tensor(a) self, *, MemoryFormat memory_format=0) -> Tensor(a)"
        );
        assert_eq!(
            jit("avg_pool2d(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, bool ceil_mode=False, int? divisor_override=None) -> Tensor"),
            "avg_pool2d(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, bool ceil_mode=False, int? divisor_override=None) -> Tensor"
        );
        assert_eq!(
            jit("avg_pool1d(Tensor self, int[1] padding=0, int[] dims=[0,1]) -> Tensor"),
            "avg_pool1d(Tensor self, int[1] padding=[0], int[] dims=[0, 1]) -> Tensor"
        );
        assert_eq!(
            jit("rrelu(Tensor self, Scalar lower=0.125, Scalar upper=0.3333333333333333, Scalar alpha=1.0, Scalar beta=1) -> Tensor"),
            "rrelu(Tensor self, Scalar lower=0.125, Scalar upper=0.33333333333333331, Scalar alpha=1., Scalar beta=1) -> Tensor"
        );
        assert_eq!(
            jit("gelu(Tensor self, *, str approximate='none', ScalarType dtype=long, Layout l=strided, float e=1e-08, float k=2) -> Tensor"),
            "gelu(Tensor self, *, str approximate=\"none\", ScalarType dtype=4, Layout l=0, float e=1e-08, float k=2.) -> Tensor"
        );
        assert_eq!(
            jit("f(SymInt[2] x=0, float[] y=[1.0,0.5], bool[2] m=True) -> (Tensor values, Tensor indices)"),
            "f(SymInt[2] x=[0, 0], float[] y=[1., 0.5], bool[2] m=[True, True]) -> (Tensor values, Tensor indices)"
        );
    }

    #[test]
    fn doubles_print_as_cpp_prints_them() {
        for (x, s) in [
            (1.0, "1."),
            (-0.0, "-0."),
            (0.0, "0."),
            (0.01, "0.01"),
            (1e-5, "1.0000000000000001e-05"),
            (1e10, "10000000000"),
            (1e20, "1e+20"),
            (-2.5e-7, "-2.4999999999999999e-07"),
            (f64::INFINITY, "inf"),
        ] {
            assert_eq!(double(x), s, "{x}");
        }
    }
}
