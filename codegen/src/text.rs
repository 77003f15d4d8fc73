//! Rust source written as text, laid out as rustfmt lays out calls: a call,
//! tuple or parameter list stays on one line when it fits in 100 columns,
//! and otherwise puts one item per line, indented, with a trailing comma.
//!
//! The typed API is emitted this way (no token streams, no formatter pass):
//! it is most of the code generated from PyTorch's 2,590 entries, and
//! building, re-parsing and printing token trees for it cost seconds.
//!
//! ```
//! use opforge_codegen::text::{Expr, Out};
//! let call = Expr::call("at::add_Tensor", ["self_", "other", "alpha"].map(Expr::from));
//! let mut out = Out::default();
//! out.expr(4, &call, ";");
//! assert_eq!(out.into_string(), "    at::add_Tensor(self_, other, alpha);\n");
//! ```

use std::fmt::Write as _;

/// The widest line the layout writes where it can break (rustfmt's
/// `max_width`).
pub const WIDTH: usize = 100;

/// An expression (or signature) to lay out: text that never breaks, or a
/// parenthesized list after a head that breaks one item per line when the
/// whole does not fit.
#[derive(Clone, Debug)]
pub enum Expr {
    /// Text kept on one line.
    Atom(String),
    /// `head(item, item, ...)`; a tuple when `head` is empty (one item is
    /// written `(x,)`).
    Call(String, Vec<Expr>),
}

impl From<&str> for Expr {
    fn from(s: &str) -> Expr {
        Expr::Atom(s.to_string())
    }
}

impl From<String> for Expr {
    fn from(s: String) -> Expr {
        Expr::Atom(s)
    }
}

impl Expr {
    /// `head(items)`.
    pub fn call(head: impl Into<String>, items: impl IntoIterator<Item = Expr>) -> Expr {
        Expr::Call(head.into(), items.into_iter().collect())
    }

    /// `(items)`, a tuple.
    pub fn tuple(items: impl IntoIterator<Item = Expr>) -> Expr {
        Expr::Call(String::new(), items.into_iter().collect())
    }

    /// The expression on one line.
    pub fn flat(&self, out: &mut String) {
        match self {
            Expr::Atom(s) => out.push_str(s),
            Expr::Call(head, items) => {
                out.push_str(head);
                out.push('(');
                for (k, item) in items.iter().enumerate() {
                    if k > 0 {
                        out.push_str(", ");
                    }
                    item.flat(out);
                }
                if head.is_empty() && items.len() == 1 {
                    out.push(',');
                }
                out.push(')');
            }
        }
    }

    /// How long [`Expr::flat`] is, in bytes, stopping once past `limit`.
    fn width(&self, limit: usize) -> usize {
        match self {
            Expr::Atom(s) => s.len(),
            Expr::Call(head, items) => {
                let mut w = head.len() + 2 + usize::from(head.is_empty() && items.len() == 1);
                for (k, item) in items.iter().enumerate() {
                    if w > limit {
                        break;
                    }
                    w += item.width(limit) + if k > 0 { 2 } else { 0 };
                }
                w
            }
        }
    }
}

/// Lines of source being written.
#[derive(Default, Debug)]
pub struct Out(String);

impl Out {
    /// One line at `indent` spaces.
    pub fn line(&mut self, indent: usize, text: &str) {
        self.pad(indent);
        self.0.push_str(text);
        self.0.push('\n');
    }

    /// One formatted line at `indent` spaces.
    pub fn linef(&mut self, indent: usize, args: std::fmt::Arguments<'_>) {
        self.pad(indent);
        let _ = self.0.write_fmt(args);
        self.0.push('\n');
    }

    /// `///` lines for `doc` (each of its lines one comment line).
    pub fn doc(&mut self, indent: usize, doc: &str) {
        for l in doc.lines() {
            self.pad(indent);
            if l.is_empty() {
                self.0.push_str("///\n");
            } else {
                self.0.push_str("/// ");
                self.0.push_str(l);
                self.0.push('\n');
            }
        }
    }

    /// `e` at `indent`, followed by `tail` (`;`, `,`, ` {`): on one line if
    /// it fits in [`WIDTH`] columns, else broken at its outermost list, one
    /// item per line (and so on inward).
    pub fn expr(&mut self, indent: usize, e: &Expr, tail: &str) {
        self.pad(indent);
        self.rest(indent, e, tail);
        self.0.push('\n');
    }

    fn rest(&mut self, indent: usize, e: &Expr, tail: &str) {
        let room = WIDTH.saturating_sub(indent + tail.len());
        match e {
            Expr::Call(head, items) if e.width(room) > room && !items.is_empty() => {
                self.0.push_str(head);
                self.0.push_str("(\n");
                for item in items {
                    self.pad(indent + 4);
                    self.rest(indent + 4, item, ",");
                    self.0.push('\n');
                }
                self.pad(indent);
                self.0.push(')');
                self.0.push_str(tail);
            }
            _ => {
                e.flat(&mut self.0);
                self.0.push_str(tail);
            }
        }
    }

    fn pad(&mut self, indent: usize) {
        self.0.extend(std::iter::repeat_n(' ', indent));
    }

    /// The text written.
    pub fn into_string(self) -> String {
        self.0
    }

    /// Appends text as it is.
    pub fn push_str(&mut self, s: &str) {
        self.0.push_str(s);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn atoms(xs: &[&str]) -> Vec<Expr> {
        xs.iter().map(|x| Expr::from(*x)).collect()
    }

    #[test]
    fn calls_break_outermost_first_with_trailing_commas() {
        let inner = Expr::call("at::f", atoms(&["a_long_argument_name"; 4]));
        let e = Expr::call(
            "protocol",
            [
                Expr::from("&SITE"),
                Expr::tuple(atoms(&["x"])),
                Expr::call("|(x,)| g", [inner]),
            ],
        );
        let mut out = Out::default();
        out.expr(8, &e, " {");
        assert_eq!(
            out.into_string(),
            "        protocol(\n            &SITE,\n            (x,),\n            |(x,)| g(\n                at::f(\n                    a_long_argument_name,\n                    a_long_argument_name,\n                    a_long_argument_name,\n                    a_long_argument_name,\n                ),\n            ),\n        ) {\n"
        );
    }

    #[test]
    fn a_fitting_line_is_kept_and_an_empty_list_never_breaks() {
        let mut out = Out::default();
        out.expr(0, &Expr::call("f", []), ";");
        out.expr(0, &Expr::tuple(atoms(&["a", "b"])), "");
        assert_eq!(out.into_string(), "f();\n(a, b)\n");
        let long = "x".repeat(120);
        let mut out = Out::default();
        out.expr(0, &Expr::call("f", atoms(&[&long])), ";");
        assert_eq!(out.into_string(), format!("f(\n    {long},\n);\n"));
    }
}
