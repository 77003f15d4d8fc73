//! Parse: signature strings and parameter lists, text → parts.
//!
//! One reader for every `name(params)` text the project handles: PyTorch's
//! Python-parser signature strings
//! (`add(Tensor input, Tensor other, *, Scalar alpha=1, Tensor out=None)|hidden`,
//! `python_arg_parser.cpp`'s format), the parameter lists of testing stubs
//! (`(input, other, *, alpha=1)`) and the argument lists of schema texts
//! (`aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor`,
//! also TorchScript-only ones such as `Dict(str, t) self`).
//!
//! The rules, shared by all of them:
//! - the parameter list is what lies between the first `(` and the `)` that
//!   closes it ([`split_call`]);
//! - parameters are separated by `", "` (the separator PyTorch's
//!   `FunctionSignature` splits on, torchgen prints and Python's `repr` uses),
//!   except inside brackets (`()`, `[]`, `{}`) and quoted strings, so tuple
//!   defaults (`dims=(0, 1)`), list defaults (`int[2] c=[1, 1]`) and
//!   TorchScript types (`Dict(str, t)`) stay whole ([`split_params`]);
//! - a lone `*` makes every later parameter keyword-only;
//! - a parameter is `decl` or `decl=default` (the first `=` outside brackets
//!   and quotes), and the declaration's last word is the name, anything before
//!   it the type ([`parse_param`]).
//!
//! Callers keep their own richer readings of the parts: the runtime's argument
//! parser interprets types and defaults per kind (`argparse::FunctionSignature`),
//! schema-level resolution reads TorchScript types (`packet`).

/// One parameter of a signature string or parameter list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SigParam {
    /// Type text (`Tensor`, `int64_t?`, `IntArrayRef[2]`); empty in a list
    /// without types (`input, other=None`).
    pub ty: String,
    /// Name.
    pub name: String,
    /// Default text, if any (`None`, `1`, `at::Reduction::Mean`).
    pub default: Option<String>,
    /// After the `*`.
    pub kwarg_only: bool,
}

impl SigParam {
    /// The parts of its type text, as PyTorch's `FunctionParameter` reads them:
    /// the base type, the `[N]` size (0 if none) and whether a `?` allows
    /// `None`.
    ///
    /// ```
    /// use opforge_schema::signature::parse_param;
    /// let p = parse_param("IntArrayRef[1]? dim", false);
    /// assert_eq!(p.type_parts(), ("IntArrayRef", 1, true));
    /// assert_eq!(parse_param("Tensor self", false).type_parts(), ("Tensor", 0, false));
    /// ```
    pub fn type_parts(&self) -> (&str, usize, bool) {
        let mut t = self.ty.as_str();
        let mut nullable = false;
        if let Some(q) = t.find('?') {
            nullable = true;
            t = &t[..q];
        }
        let mut size = 0;
        if let Some(b) = t.find('[') {
            size = atol(t[b + 1..].trim_end_matches(']')).max(0) as usize;
            t = &t[..b];
        }
        (t, size, nullable)
    }
}

/// C's `atol`, as PyTorch's `FunctionParameter` reads sizes and integer
/// defaults: the leading (signed) integer after any whitespace, 0 if none.
///
/// ```
/// use opforge_schema::signature::atol;
/// assert_eq!((atol(" -100"), atol("2]"), atol("x")), (-100, 2, 0));
/// ```
pub fn atol(s: &str) -> i64 {
    let s = s.trim_start();
    let end = s
        .char_indices()
        .take_while(|&(i, c)| c.is_ascii_digit() || (i == 0 && (c == '-' || c == '+')))
        .map(|(i, c)| i + c.len_utf8())
        .last()
        .unwrap_or(0);
    s[..end].parse().unwrap_or(0)
}

/// A parsed Python parser signature string: `name(Type a, *, Type b=default)|deprecated`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SigString {
    /// The function name.
    pub name: String,
    /// Parameters in order.
    pub params: Vec<SigParam>,
    /// `|deprecated`
    pub deprecated: bool,
    /// `|hidden` (or deprecated, which implies hidden)
    pub hidden: bool,
}

/// Splits `name(params)rest` into its name, its parameter list (between the
/// first `(` and the `)` that closes it, brackets and quoted strings inside
/// skipped) and what follows (` -> Tensor`, `|hidden`, or nothing). `None` if
/// there is no `(` or it is never closed.
///
/// ```
/// use opforge_schema::signature::split_call;
/// assert_eq!(
///     split_call("aten::foo(Dict(str, t) x, str s=\")\") -> t"),
///     Some(("aten::foo", "Dict(str, t) x, str s=\")\"", " -> t"))
/// );
/// assert_eq!(split_call("(input, *, out=None)"), Some(("", "input, *, out=None", "")));
/// assert_eq!(split_call("view(SymIntArrayRef size"), None);
/// ```
pub fn split_call(text: &str) -> Option<(&str, &str, &str)> {
    let open = text.find('(')?;
    let close = open
        + 1
        + top_level(&text[open + 1..])
            .find(|&(_, c, depth)| c == ')' && depth == -1)?
            .0;
    Some((&text[..open], &text[open + 1..close], &text[close + 1..]))
}

/// The characters of `s` with their byte offset and bracket depth, skipping
/// quoted strings (`"…"`, `'…'`, with backslash escapes). An opening bracket
/// is reported at the depth outside it, a closing one at the depth after it.
fn top_level(s: &str) -> impl Iterator<Item = (usize, char, i32)> + '_ {
    let mut depth = 0i32;
    let mut quote: Option<char> = None;
    let mut escaped = false;
    s.char_indices().filter_map(move |(i, c)| {
        if let Some(q) = quote {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == q {
                quote = None;
            }
            return None;
        }
        match c {
            '"' | '\'' => {
                quote = Some(c);
                None
            }
            '(' | '[' | '{' => {
                depth += 1;
                Some((i, c, depth - 1))
            }
            ')' | ']' | '}' => {
                depth -= 1;
                Some((i, c, depth))
            }
            _ => Some((i, c, depth)),
        }
    })
}

/// Splits a parameter list at its top-level `", "` separators (see the module
/// rules); pieces are not trimmed, empty ones are dropped.
///
/// ```
/// use opforge_schema::signature::split_params;
/// assert_eq!(
///     split_params("input, dims=(0, 1), *, int[2] c=[1, 1], str d=\", \""),
///     ["input", "dims=(0, 1)", "*", "int[2] c=[1, 1]", "str d=\", \""]
/// );
/// assert!(split_params("").is_empty());
/// ```
pub fn split_params(list: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let bytes = list.as_bytes();
    for (i, c, depth) in top_level(list) {
        if c == ',' && depth == 0 && bytes.get(i + 1) == Some(&b' ') {
            out.push(&list[start..i]);
            start = i + 2;
        }
    }
    out.push(&list[start..]);
    out.retain(|p| !p.is_empty());
    out
}

/// Parses one parameter (`Type name=default`, `name=default`, `name`) of a
/// list; `kwarg_only` says whether a `*` came before it.
///
/// ```
/// use opforge_schema::signature::parse_param;
/// let p = parse_param("Scalar alpha=1", true);
/// assert_eq!((p.ty.as_str(), p.name.as_str(), p.default.as_deref()), ("Scalar", "alpha", Some("1")));
/// let p = parse_param("dims=(0, 1)", false);
/// assert_eq!((p.ty.as_str(), p.name.as_str(), p.default.as_deref()), ("", "dims", Some("(0, 1)")));
/// ```
pub fn parse_param(item: &str, kwarg_only: bool) -> SigParam {
    let (decl, default) = match top_level(item).find(|&(_, c, depth)| c == '=' && depth == 0) {
        Some((i, _, _)) => (&item[..i], Some(item[i + 1..].to_string())),
        None => (item, None),
    };
    let (ty, name) = decl.rsplit_once(' ').unwrap_or(("", decl));
    SigParam {
        ty: ty.to_string(),
        name: name.to_string(),
        default,
        kwarg_only,
    }
}

/// Parses a parameter list (the text inside the parentheses): every parameter,
/// those after a lone `*` keyword-only.
///
/// ```
/// use opforge_schema::signature::parse_params;
/// let ps = parse_params("input, other, *, alpha=1, out=None");
/// let names: Vec<_> = ps.iter().map(|p| (p.name.as_str(), p.kwarg_only)).collect();
/// assert_eq!(names, [("input", false), ("other", false), ("alpha", true), ("out", true)]);
/// ```
pub fn parse_params(list: &str) -> Vec<SigParam> {
    let mut kwarg_only = false;
    let mut out = Vec::new();
    for item in split_params(list) {
        if item == "*" {
            kwarg_only = true;
        } else {
            out.push(parse_param(item, kwarg_only));
        }
    }
    out
}

/// Parses a signature string in the format PyTorch's `FunctionSignature` reads
/// (`torch/csrc/utils/python_arg_parser.cpp`): every parameter must have a type.
///
/// ```
/// use opforge_schema::signature::parse_sig;
/// let s = parse_sig("add(Tensor input, Tensor other, *, Scalar alpha=1, Tensor out=None)").unwrap();
/// assert_eq!(s.params.len(), 4);
/// assert!(s.params[2].kwarg_only);
/// assert_eq!(s.params[3].default.as_deref(), Some("None"));
/// ```
pub fn parse_sig(text: &str) -> Result<SigString, String> {
    if !text.contains('(') {
        return Err(format!("missing opening parenthesis: {text}"));
    }
    let missing_close = || format!("missing closing parenthesis: {text}");
    let (name, list, rest) = split_call(text).ok_or_else(missing_close)?;
    let (deprecated, hidden) = match rest {
        "" => (false, false),
        "|deprecated" => (true, true),
        "|hidden" => (false, true),
        _ => match rest.strip_prefix('|') {
            Some(other) => return Err(format!("unknown signature suffix |{other} in {text}")),
            None => return Err(missing_close()),
        },
    };
    let mut params = Vec::new();
    let mut kwarg_only = false;
    for item in split_params(list) {
        if item == "*" {
            kwarg_only = true;
            continue;
        }
        let p = parse_param(item, kwarg_only);
        if p.ty.is_empty() {
            return Err(format!("missing type: {item}"));
        }
        params.push(p);
    }
    Ok(SigString {
        name: name.to_string(),
        params,
        deprecated,
        hidden,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signature_strings() {
        let s = parse_sig("view(SymIntArrayRef size)|hidden").unwrap();
        assert!(s.hidden && !s.deprecated);
        let s = parse_sig("add(Tensor input, Scalar alpha, Tensor other)|deprecated").unwrap();
        assert!(s.hidden && s.deprecated);
        assert_eq!(
            parse_sig("view(SymIntArrayRef size").unwrap_err(),
            "missing closing parenthesis: view(SymIntArrayRef size"
        );
        assert_eq!(parse_sig("view(size)").unwrap_err(), "missing type: size");
        assert_eq!(
            parse_sig("f()|weird").unwrap_err(),
            "unknown signature suffix |weird in f()|weird"
        );
        assert_eq!(
            parse_sig("f").unwrap_err(),
            "missing opening parenthesis: f"
        );
        assert!(parse_sig("f()").unwrap().params.is_empty());
        // PyTorch splits on ", " only: a missing space keeps one parameter.
        let s = parse_sig("f(int a,int b)").unwrap();
        assert_eq!(
            (s.params[0].ty.as_str(), s.params[0].name.as_str()),
            ("int a,int", "b")
        );
    }

    #[test]
    fn schema_texts_and_stubs() {
        let (_, list, rest) = split_call(
            "aten::foo.x(Dict(str, t) self, Tensor(a!)[] b, *, int[2] c=[1, 1], str d=\",\") -> t",
        )
        .unwrap();
        assert_eq!(rest, " -> t");
        let ps = parse_params(list);
        let parts: Vec<_> = ps
            .iter()
            .map(|p| {
                (
                    p.ty.as_str(),
                    p.name.as_str(),
                    p.default.as_deref(),
                    p.kwarg_only,
                )
            })
            .collect();
        assert_eq!(
            parts,
            [
                ("Dict(str, t)", "self", None, false),
                ("Tensor(a!)[]", "b", None, false),
                ("int[2]", "c", Some("[1, 1]"), true),
                ("str", "d", Some("\",\""), true),
            ]
        );
        let escaped = parse_params("str a=\"\\\"\", str b='\\'), '");
        assert_eq!(escaped.len(), 2);
        assert_eq!(escaped[1].default.as_deref(), Some("'\\'), '"));
    }
}
