//! Python's printing of values, as PyTorch's messages and FX's code show
//! them: `repr` of a string ([`repr_str`]) and of a float ([`repr_float`]).
//! One copy, below every layer that prints Python (the argument parser's
//! messages, gradcheck's, printed graphs, modules' load errors).

mod printable;

use printable::NOT_PRINTABLE;

/// Python's `repr` of a string (CPython's `unicode_repr`): in single quotes,
/// or double quotes if it holds a single quote and no double quote; the
/// backslash and the quote escaped, `\t`, `\n`, `\r`, other control
/// characters and DEL as `\xhh`, and characters beyond ASCII that Python does
/// not print (`str.isprintable()`, `NOT_PRINTABLE`) as `\xhh`, `\uhhhh` or
/// `\Uhhhhhhhh`.
pub fn repr_str(s: &str) -> String {
    use std::fmt::Write;
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::with_capacity(s.len() + 2);
    out.push(quote);
    for c in s.chars() {
        let code = u32::from(c);
        // Writing to a `String` does not fail.
        let _ = match c {
            '\\' => out.write_str("\\\\"),
            c if c == quote => write!(out, "\\{c}"),
            '\t' => out.write_str("\\t"),
            '\n' => out.write_str("\\n"),
            '\r' => out.write_str("\\r"),
            _ if code < 0x20 || code == 0x7f => write!(out, "\\x{code:02x}"),
            c if code < 0x7f || is_printable(code) => write!(out, "{c}"),
            _ if code <= 0xff => write!(out, "\\x{code:02x}"),
            _ if code <= 0xffff => write!(out, "\\u{code:04x}"),
            _ => write!(out, "\\U{code:08x}"),
        };
    }
    out.push(quote);
    out
}

/// Does Python print this character beyond ASCII as it is?
fn is_printable(code: u32) -> bool {
    let i = NOT_PRINTABLE.partition_point(|&(_, last)| last < code);
    NOT_PRINTABLE.get(i).is_none_or(|&(first, _)| code < first)
}

/// Python's `repr` of a float (`1.0`, `2.5`, `1e-05`, `inf`, `nan`).
pub fn repr_float(x: f64) -> String {
    if x.is_nan() {
        return "nan".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf".into() } else { "-inf".into() };
    }
    if x == 0.0 {
        return if x.is_sign_negative() { "-0.0" } else { "0.0" }.into();
    }
    // Shortest round-trip digits and exponent, then Python's layout rules.
    let sci = format!("{x:e}");
    let (mant, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let neg = mant.starts_with('-');
    let digits: String = mant.chars().filter(|c| c.is_ascii_digit()).collect();
    let sign = if neg { "-" } else { "" };
    if (-4..16).contains(&exp) {
        let n = digits.len() as i32;
        let body = if exp >= n - 1 {
            format!("{digits}{}.0", "0".repeat((exp - n + 1) as usize))
        } else if exp >= 0 {
            let (a, b) = digits.split_at(exp as usize + 1);
            format!("{a}.{b}")
        } else {
            format!("0.{}{digits}", "0".repeat((-exp - 1) as usize))
        };
        format!("{sign}{body}")
    } else {
        let m = if digits.len() > 1 {
            format!("{}.{}", &digits[..1], &digits[1..])
        } else {
            digits.clone()
        };
        let es = if exp < 0 { "-" } else { "+" };
        format!("{sign}{m}e{es}{:02}", exp.abs())
    }
}

/// `(2,)`, `(2, 3)`, `()`: a shape as Python prints a tuple
/// (`torch.Size`'s repr without the name).
pub fn repr_tuple(shape: &[usize]) -> String {
    match shape {
        [one] => format!("({one},)"),
        dims => format!(
            "({})",
            dims.iter()
                .map(usize::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Against Python 3.11: `repr(s)` and `repr(x)`.
    #[test]
    fn reprs_as_python_prints_them() {
        assert_eq!(repr_str("it's"), "\"it's\"");
        assert_eq!(repr_str("say \"hi\""), "'say \"hi\"'");
        assert_eq!(repr_str("both ' and \""), "'both \\' and \"'");
        assert_eq!(
            repr_str("a\tb\nc\\d\x7f\u{1}"),
            "'a\\tb\\nc\\\\d\\x7f\\x01'"
        );
        assert_eq!(repr_str("é\u{a0}\u{2028}"), "'é\\xa0\\u2028'");
        for (x, want) in [
            (1.0, "1.0"),
            (0.5, "0.5"),
            (1e-5, "1e-05"),
            (1e16, "1e+16"),
            (123456789.0, "123456789.0"),
            (-0.0, "-0.0"),
            (f64::NAN, "nan"),
            (f64::NEG_INFINITY, "-inf"),
        ] {
            assert_eq!(repr_float(x), want, "{x}");
        }
    }
}
