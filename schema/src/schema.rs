//! Parse: the schema language, from text to [`FunctionSchema`].
//!
//! A small hand-written parser that follows torchgen's splitting rules exactly (so it
//! accepts and rejects the same strings) and records where each piece came from, so
//! errors carry a column. After parsing, every piece is printed back and compared
//! with its source: a schema that does not print back identically is rejected, as
//! torchgen does. The structural invariants of §4.3 of the spec (out conventions,
//! inplace returns, …) are checked by [`check_invariants`], which validation calls.

use crate::diag::abbrev;
use crate::model::*;
use std::fmt;

/// The most `?`, `[]` and `[N]` wrappers a type may have around its base type
/// (`Tensor?[]` has two). PyTorch's own file never uses more than two; sixteen
/// leaves room for any real schema while every walk over a type (printing,
/// validation, the generator's type mapping, the runtime's table conversion)
/// stays a few frames deep, on a 2 MiB thread and in a debug build too. The
/// parser itself is iterative: it counts the wrappers before it builds anything.
pub const MAX_TYPE_DEPTH: usize = 16;

/// The largest `N` of a fixed-size list type `T[N]`. The largest in PyTorch's own
/// file is 6 (`int[6] pad`, three spatial dimensions); a scalar default of such a
/// list (`int[2] stride=1`) is expanded to `N` elements on every call, so `N` is
/// bounded: 1024 is far above any real use and keeps that expansion at 8 KiB.
pub const MAX_LIST_SIZE: u32 = 1024;

/// A schema that could not be parsed: what is wrong and where (1-based column in
/// the schema string).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SchemaError {
    /// 1-based character column in the schema text.
    pub column: usize,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for SchemaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "column {}: {}", self.column, self.message)
    }
}

impl std::error::Error for SchemaError {}

type Result<T> = std::result::Result<T, SchemaError>;

/// Builds an error at byte offset `at` of `src`.
fn err(src: &str, at: usize, message: impl Into<String>) -> SchemaError {
    let at = at.min(src.len());
    SchemaError {
        column: src[..at].chars().count() + 1,
        message: message.into(),
    }
}

impl std::str::FromStr for FunctionSchema {
    type Err = SchemaError;
    fn from_str(s: &str) -> Result<FunctionSchema> {
        parse_schema(s)
    }
}

/// Parses a full schema such as `add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor`.
///
/// ```
/// use opforge_schema::schema::parse_schema;
/// let s = parse_schema("add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor").unwrap();
/// assert_eq!(s.name.overload, "Tensor");
/// assert_eq!(s.arguments.kwarg_only()[0].name, "alpha");
/// assert_eq!(s.to_string(), "add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor");
/// ```
pub fn parse_schema(src: &str) -> Result<FunctionSchema> {
    let open = src
        .find('(')
        .ok_or_else(|| err(src, 0, format!("Invalid function schema: {}", abbrev(src))))?;
    let arrow = src.rfind(") -> ").filter(|&a| a >= open).ok_or_else(|| {
        err(
            src,
            src.len(),
            format!("Invalid function schema: {}", abbrev(src)),
        )
    })?;
    let name = parse_operator_name(src, 0, &src[..open])?;
    let arguments = parse_arguments(src, open + 1, &src[open + 1..arrow])?;
    let (returns, varret) = parse_returns(src, arrow + 5, &src[arrow + 5..])?;
    let schema = FunctionSchema {
        name,
        arguments,
        returns,
        varret,
    };
    let printed = schema.to_string();
    if printed != src {
        let at = printed
            .bytes()
            .zip(src.bytes())
            .position(|(a, b)| a != b)
            .unwrap_or(printed.len().min(src.len()));
        return Err(err(
            src,
            at,
            format!(
                "schema is not in canonical form: it prints back as `{}`",
                abbrev(&printed)
            ),
        ));
    }
    Ok(schema)
}

/// Parses `[ns::]name[.overload]` (`off` is the byte offset of `s` in `src`).
pub fn parse_operator_name_str(s: &str) -> Result<OperatorName> {
    parse_operator_name(s, 0, s)
}

fn parse_operator_name(src: &str, off: usize, s: &str) -> Result<OperatorName> {
    let (namespace, rest, rest_off) = match s.find("::") {
        Some(i) => {
            let ns = &s[..i];
            if !is_ident(ns) {
                return Err(err(
                    src,
                    off,
                    format!("invalid namespace `{ns}`: expected an identifier"),
                ));
            }
            (Some(ns.to_string()), &s[i + 2..], off + i + 2)
        }
        None => (None, s, off),
    };
    let (base, overload) = match rest.find('.') {
        Some(i) => (&rest[..i], rest[i + 1..].to_string()),
        None => (rest, String::new()),
    };
    if base.is_empty() {
        return Err(err(src, rest_off, "operator name cannot be empty"));
    }
    if base.starts_with(|c: char| c.is_ascii_digit()) {
        return Err(err(
            src,
            rest_off,
            format!("invalid operator name `{base}`: must start with a letter or `_`"),
        ));
    }
    if !base.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Err(err(
            src,
            rest_off,
            format!("invalid operator name `{base}`: expected letters, digits and `_`"),
        ));
    }
    if let Some(bad) = overload
        .char_indices()
        .find(|(_, c)| !(c.is_ascii_alphanumeric() || *c == '_' || *c == '.'))
    {
        return Err(err(
            src,
            rest_off + base.len() + 1 + bad.0,
            format!(
                "invalid character `{}` in overload name `{overload}`",
                bad.1
            ),
        ));
    }
    let name = parse_base_name(src, rest_off, base)?;
    Ok(OperatorName {
        namespace,
        name,
        overload,
    })
}

fn parse_base_name(src: &str, off: usize, s: &str) -> Result<BaseName> {
    if s.len() > 4 && s.starts_with("__") && s.ends_with("__") {
        let inner = &s[2..s.len() - 2];
        if let Some(rest) = inner.strip_prefix('i') {
            if AUGMENTED_ASSIGNMENT_NAMES.contains(&rest) {
                return Ok(BaseName {
                    base: rest.to_string(),
                    inplace: true,
                    dunder: true,
                    functional_overload: false,
                });
            }
            return Err(err(
                src,
                off,
                format!("unexpected dunder method starting with 'i': {s}"),
            ));
        }
        return Ok(BaseName {
            base: inner.to_string(),
            inplace: false,
            dunder: true,
            functional_overload: false,
        });
    }
    let (base, inplace) = match s.strip_suffix('_') {
        Some(b) if !b.is_empty() => (b, true),
        _ => (s, false),
    };
    let (base, functional_overload) = match base.strip_suffix("_functional") {
        Some(b) if !b.is_empty() => {
            if inplace {
                return Err(err(
                    src,
                    off,
                    format!("a `_functional` operator cannot be inplace: {s}"),
                ));
            }
            (b, true)
        }
        _ => (base, false),
    };
    if base.ends_with("_out") {
        return Err(err(
            src,
            off,
            "_out suffix is reserved and not permitted for operator names; did you mean to specify an out overload name instead?",
        ));
    }
    Ok(BaseName {
        base: base.to_string(),
        inplace,
        dunder: false,
        functional_overload,
    })
}

/// Splits `s` (at byte offset `off` of the schema) on the exact separator `", "`,
/// yielding each piece with its offset.
fn split_items(s: &str, off: usize) -> impl Iterator<Item = (usize, &str)> {
    let mut pos = 0;
    s.split(", ").map(move |item| {
        let at = off + pos;
        pos += item.len() + 2;
        (at, item)
    })
}

fn parse_arguments(src: &str, off: usize, s: &str) -> Result<Arguments> {
    let mut args = Arguments::default();
    for (at, item) in split_items(s, off) {
        if item.is_empty() {
            continue;
        }
        if args.vararg {
            return Err(err(
                src,
                at,
                "`...` must be the last element of the argument list",
            ));
        }
        if item == "..." {
            args.vararg = true;
            continue;
        }
        if item == "*" {
            if args.kwarg_only_start.is_some() {
                return Err(err(
                    src,
                    at,
                    "invalid syntax: kwarg-only specifier * can only occur once",
                ));
            }
            args.kwarg_only_start = Some(args.all.len());
            continue;
        }
        args.all.push(parse_argument(src, at, item)?);
    }
    if let Some((first, second)) = duplicate_name(&args.all) {
        // Where argument `second`'s name is: its item, found again.
        let (at, item) = split_items(s, off)
            .filter(|(_, item)| !item.is_empty() && *item != "*")
            .nth(second)
            .unwrap_or((off, s));
        let decl = item.split('=').next().unwrap_or(item);
        let name = &args.all[second].name;
        return Err(err(
            src,
            at + decl.rfind(' ').map_or(0, |sp| sp + 1),
            format!(
                "duplicate argument name `{name}` (argument {} is named `{name}` too)",
                first + 1
            ),
        ));
    }
    if args.kwarg_only_start == Some(args.all.len()) {
        return Err(err(
            src,
            off + s.len(),
            "kwarg-only specifier * must be followed by at least one argument",
        ));
    }
    Ok(args)
}

/// The first argument whose name an earlier one has, and that earlier one
/// (indices). Quadratic for the short lists schemas have, sorting for long ones.
fn duplicate_name(args: &[Argument]) -> Option<(usize, usize)> {
    if args.len() <= 32 {
        return (1..args.len()).find_map(|j| {
            (0..j)
                .find(|&i| args[i].name == args[j].name)
                .map(|i| (i, j))
        });
    }
    let mut order: Vec<usize> = (0..args.len()).collect();
    order.sort_by(|&i, &j| (&args[i].name, i).cmp(&(&args[j].name, j)));
    order
        .windows(2)
        .filter(|w| args[w[0]].name == args[w[1]].name)
        .min_by_key(|w| w[1])
        .map(|w| {
            // The earliest argument of that name.
            let first = order
                .iter()
                .copied()
                .find(|&i| args[i].name == args[w[1]].name);
            (first.unwrap_or(w[0]), w[1])
        })
}

/// Splits `Tensor(a!)[]`-style text into the plain type text and the annotation.
fn split_annotation<'a>(
    src: &str,
    off: usize,
    s: &'a str,
) -> Result<(std::borrow::Cow<'a, str>, Option<Annotation>)> {
    if let Some(inner) = s.strip_prefix("Tensor(") {
        let close = inner
            .rfind(')')
            .ok_or_else(|| err(src, off + 6, format!("unclosed alias annotation in `{s}`")))?;
        let suffix = &inner[close + 1..];
        if !matches!(suffix, "" | "?" | "[]") {
            return Err(err(
                src,
                off + 7 + close + 1,
                format!("unrecognized alias analysis form with Tensor: `{s}` (the annotation goes inside `Tensor(...)`, before `?` or `[]`)"),
            ));
        }
        let ann = parse_annotation(src, off + 7, &inner[..close])?;
        return Ok((format!("Tensor{suffix}").into(), Some(ann)));
    }
    Ok((s.into(), None))
}

/// Parses an alias annotation body: `a`, `a!`, `a|b`, `a -> *`, `a! -> *`.
pub fn parse_annotation(src: &str, off: usize, s: &str) -> Result<Annotation> {
    let bad = || err(src, off, format!("unrecognized alias annotation {s}"));
    let (before, after) = match s.split_once(" -> ") {
        Some((b, a)) => (b, Some(a)),
        None => (s, None),
    };
    let (before, is_write) = match before.strip_suffix('!') {
        Some(b) => (b, true),
        None => (before, false),
    };
    let set = |t: &str| -> Option<Vec<char>> {
        t.split('|')
            .map(|x| {
                let mut cs = x.chars();
                match (cs.next(), cs.next()) {
                    (Some(c), None) if c.is_ascii_lowercase() => Some(c),
                    _ => None,
                }
            })
            .collect()
    };
    let alias_set = set(before).ok_or_else(bad)?;
    let alias_set_after = match after {
        None => Vec::new(),
        Some("*") => vec!['*'],
        Some(a) => set(a).ok_or_else(bad)?,
    };
    if is_write && alias_set.len() > 1 {
        return Err(err(
            src,
            off,
            format!("alias set larger than 1 is not mutable, got {s} instead."),
        ));
    }
    if alias_set.len() > 1 && alias_set_after.len() > 1 {
        return Err(err(
            src,
            off,
            format!("before alias set and after alias set cannot be larger than 1 at the same time, got {s} instead."),
        ));
    }
    Ok(Annotation {
        alias_set,
        is_write,
        alias_set_after,
    })
}

/// Parses a type such as `int[2]?`, `Tensor?[]` or `__torch__.torch.classes.ns.C`.
///
/// Iterative: the `?`, `[]` and `[N]` wrappers are peeled off the end and
/// counted first (at most [`MAX_TYPE_DEPTH`]), then the type is built inside out.
pub fn parse_type(src: &str, off: usize, s: &str) -> Result<Type> {
    enum Wrapper {
        Optional,
        List(Option<u32>),
    }
    let mut wrappers = Vec::new();
    let mut rest = s;
    loop {
        let peeled = if let Some(inner) = rest.strip_suffix('?').filter(|i| !i.is_empty()) {
            Some((inner, Wrapper::Optional))
        } else {
            match rest
                .strip_suffix(']')
                .and_then(|b| Some((b, b.rfind('[')?)))
            {
                Some((body, open))
                    if open > 0 && body[open + 1..].bytes().all(|b| b.is_ascii_digit()) =>
                {
                    let digits = &body[open + 1..];
                    let size = if digits.is_empty() {
                        None
                    } else {
                        match digits.parse::<u64>() {
                            Ok(n) if n <= u64::from(MAX_LIST_SIZE) => Some(n as u32),
                            _ => {
                                return Err(err(
                                    src,
                                    off + open + 1,
                                    format!(
                                        "list size {} is larger than the limit of {MAX_LIST_SIZE}",
                                        abbrev(digits)
                                    ),
                                ))
                            }
                        }
                    };
                    Some((&body[..open], Wrapper::List(size)))
                }
                _ => None,
            }
        };
        let Some((inner, wrapper)) = peeled else {
            break;
        };
        if wrappers.len() == MAX_TYPE_DEPTH {
            return Err(err(
                src,
                off,
                format!(
                    "type `{}` is nested deeper than {MAX_TYPE_DEPTH} levels (`?`, `[]` and `[N]` wrappers)",
                    abbrev(s)
                ),
            ));
        }
        wrappers.push(wrapper);
        rest = inner;
    }
    let base = match rest.strip_prefix(CUSTOM_CLASS_PREFIX) {
        Some(class)
            if !class.is_empty()
                && class
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.') =>
        {
            Type::CustomClass(class.to_string())
        }
        _ => BaseType::from_name(rest)
            .map(Type::Base)
            .ok_or_else(|| err(src, off, format!("unrecognized type {}", abbrev(rest))))?,
    };
    Ok(wrappers.into_iter().rev().fold(base, |elem, w| match w {
        Wrapper::Optional => Type::Optional(Box::new(elem)),
        Wrapper::List(size) => Type::List {
            elem: Box::new(elem),
            size,
        },
    }))
}

fn parse_argument(src: &str, off: usize, item: &str) -> Result<Argument> {
    let (decl, default) = match item.find('=') {
        Some(eq) => {
            if item[eq + 1..].contains('=') {
                return Err(err(
                    src,
                    off,
                    format!("illegal argument with default value: '{}'", abbrev(item)),
                ));
            }
            (&item[..eq], Some(&item[eq + 1..]))
        }
        None => (item, None),
    };
    let sp = decl
        .rfind(' ')
        .ok_or_else(|| err(src, off, format!("illegal argument '{}'", abbrev(item))))?;
    let (ty_text, name) = (&decl[..sp], &decl[sp + 1..]);
    if name.is_empty() || !is_ident(name) {
        return Err(err(
            src,
            off + sp + 1,
            format!(
                "illegal argument name '{}' in '{}'",
                abbrev(name),
                abbrev(item)
            ),
        ));
    }
    let (ty_plain, annotation) = split_annotation(src, off, ty_text)?;
    let ty = parse_type(src, off, &ty_plain)?;
    if annotation.is_some() && !matches!(ty_plain.as_ref(), "Tensor" | "Tensor?" | "Tensor[]") {
        return Err(err(
            src,
            off,
            format!("annotation on non-Tensor type: {ty}"),
        ));
    }
    let default = default.map(|text| {
        if text.is_empty() {
            return Err(err(
                src,
                off + decl.len() + 1,
                format!("empty default value in '{}'", abbrev(item)),
            ));
        }
        Ok(Default {
            text: text.to_string(),
            value: DefaultValue::parse(text),
        })
    });
    Ok(Argument {
        name: name.to_string(),
        ty,
        default: default.transpose()?,
        annotation,
    })
}

/// The returns, and whether `...` ends them.
fn parse_returns(src: &str, off: usize, s: &str) -> Result<(Vec<Return>, bool)> {
    match s {
        "()" => return Ok((Vec::new(), false)),
        "..." => return Ok((Vec::new(), true)),
        _ => {}
    }
    let (body, body_off) = match s.strip_prefix('(').and_then(|b| b.strip_suffix(')')) {
        Some(b) => (b, off + 1),
        None => (s, off),
    };
    let (body, varret) = match body.strip_suffix(", ...") {
        Some(b) if body_off != off => (b, true),
        _ => (body, false),
    };
    let returns = split_items(body, body_off)
        .map(|(at, item)| {
            if item == "..." {
                return Err(err(src, at, "`...` must be the last return"));
            }
            if item.is_empty() {
                return Err(err(src, at, "empty return type"));
            }
            let (ty_text, name) = match item.rfind(' ') {
                // A space inside an annotation (`Tensor(a -> *)`) is not a name separator.
                Some(sp) if !item[sp..].contains(')') => (&item[..sp], Some(&item[sp + 1..])),
                _ => (item, None),
            };
            let (ty_plain, annotation) = split_annotation(src, at, ty_text)?;
            let ty = parse_type(src, at, &ty_plain)?;
            if let Some(n) = name {
                if !is_ident(n) {
                    return Err(err(
                        src,
                        at + ty_text.len() + 1,
                        format!("illegal return name '{n}'"),
                    ));
                }
            }
            Ok(Return {
                name: name.map(str::to_string),
                ty,
                annotation,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    Ok((returns, varret))
}

/// True for a Python/C-style identifier.
pub fn is_ident(s: &str) -> bool {
    let mut cs = s.chars();
    cs.next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && cs.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Checks the structural invariants torchgen enforces when it builds a schema
/// (`torchgen/model.py`, `FunctionSchema.__post_init__`): out arguments after `*` are all written, match the returns,
/// inplace operators have a written `self` and return it, and so on. Returns the
/// first violation, worded as torchgen words it.
pub fn check_invariants(s: &FunctionSchema) -> std::result::Result<(), String> {
    let args = &s.arguments;
    // Out group: every argument after the first written keyword-only one is written.
    if let Some(start) = args.out_start() {
        if let Some(a) = args.all[start..].iter().find(|a| !a.is_write()) {
            return Err(format!(
                "non-mutable argument '{}' cannot follow mutable out arguments",
                a.name
            ));
        }
    }
    let pre_self_written: Vec<&str> = args
        .pre_self_positional()
        .iter()
        .filter(|a| a.is_write())
        .map(|a| a.name.as_str())
        .collect();
    if !pre_self_written.is_empty() {
        return Err(format!(
            "mutable pre_self_positional arguments are not currently supported in the schema: {pre_self_written:?}"
        ));
    }
    let to_count = (0..args.all.len().saturating_sub(3))
        .filter(|&i| {
            i >= args.kwarg_only_start.unwrap_or(usize::MAX)
                && is_tensor_options_at(&args.all[i..i + 4])
        })
        .count();
    if to_count > 1 {
        return Err("tensor options arguments can only appear once".into());
    }
    let out = args.out();
    if !out.is_empty() && s.name.name.inplace {
        return Err("A schema cannot be both out= and inplace".into());
    }
    let kind = s.kind();
    if s.name.overload.contains("functional") && kind != SchemaKind::Functional {
        return Err(format!("Found an operator that is not functional, but its overload contains the string 'functional'.This is a special keyword in the codegen, please use a different overload name.schema: {s}"));
    }
    // Out arguments correspond to returns, in order.
    for (a, r) in out.iter().zip(&s.returns) {
        if a.annotation != r.annotation {
            return Err(format!(
                "Out arguments must have matching return Tensor; furthermore, the ith-argument needs to correspond to the ith return. arg.annotation={}, ret.annotation={}",
                fmt_ann(&a.annotation),
                fmt_ann(&r.annotation)
            ));
        }
    }
    if args.post_self_positional().iter().any(Argument::is_write) {
        let returned = args.post_self_positional().iter().any(|a| {
            a.is_write()
                && s.returns
                    .iter()
                    .any(|r| r.annotation.is_some() && r.annotation == a.annotation)
        });
        if returned {
            return Err(format!("If you have a schema with mutable positional args, we expect them to not be returned. schema: {s}"));
        }
    }
    let mutable_returns = s.returns.iter().filter(|r| r.is_write()).count();
    if mutable_returns != 0 && mutable_returns != s.returns.len() {
        return Err(format!("NativeFunctions must have either only mutable returns, or only immutable returns. Found: {s}"));
    }
    for r in s.returns.iter().filter(|r| r.is_write()) {
        let aliased = out
            .iter()
            .chain(args.self_arg())
            .any(|a| a.annotation == r.annotation);
        if !aliased {
            return Err("All mutable returns must be aliased either to a keyword argument, or to \"self\". Did you forget to mark an out argument as keyword-only?".into());
        }
    }
    if !out.is_empty() {
        if out.iter().any(|a| a.ty != Type::Base(BaseType::Tensor)) {
            if !s.returns.is_empty() {
                return Err("out= ops that accept tensor lists as out arguments are expected to have no return type (since you can't do method chaining on them)".into());
            }
        } else {
            let non_scratch = out
                .iter()
                .filter(|a| !a.name.starts_with("_scratch_"))
                .count();
            if !s.returns.is_empty() && s.returns.len() != non_scratch {
                return Err(format!("Must return as many arguments as there are out arguments, or no return at all. Got {non_scratch} non-scratch out args and {} returns", s.returns.len()));
            }
        }
    }
    if kind == SchemaKind::Inplace {
        let name = &s.name.name;
        let self_arg = args.self_arg().filter(|a| a.is_write());
        match self_arg {
            None => {
                return Err(format!(
                    "Inplace op {name} must have a self argument with a mutable annotation"
                ))
            }
            Some(a) if a.ty == Type::Base(BaseType::Tensor) => {
                let ok = s.returns.len() == 1 && s.returns[0].annotation == a.annotation;
                if !ok {
                    return Err(format!(
                        "Inplace op {name} with Tensor self must return self"
                    ));
                }
            }
            Some(_) => {
                if !s.returns.is_empty() {
                    return Err(format!(
                        "Inplace op {name} with non-Tensor self must have no returns"
                    ));
                }
            }
        }
    }
    if s.has_tensor_options() && !matches!(kind, SchemaKind::Functional | SchemaKind::Out) {
        return Err(format!("Found an operator that is not functional or out variant, but has tensor options arguments.This is not allowed- tensor options arguments are only allowed for factory functions.schema: {s}"));
    }
    Ok(())
}

fn fmt_ann(a: &Option<Annotation>) -> String {
    a.as_ref().map_or("None".into(), |a| a.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rt(s: &str) {
        let p = parse_schema(s).unwrap_or_else(|e| panic!("{s}: {e}"));
        assert_eq!(p.to_string(), s);
    }

    #[test]
    fn round_trips_forms() {
        rt("add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor");
        rt("add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)");
        rt("max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)");
        rt("chunk(Tensor(a -> *) self, int chunks, int dim=0) -> Tensor(a)[]");
        rt("_foreach_add_.List(Tensor(a!)[] self, Tensor[] other, *, Scalar alpha=1) -> ()");
        rt("foo(*, Tensor self) -> Tensor");
        rt("__iand__.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)");
        rt("mylib::f(__torch__.torch.classes.my.Cls c, int[2]? x=None, Tensor?[] i) -> Tensor");
        rt("_test_string_default(Tensor dummy, str a=\"\\\"'\\\\\", str b='\"\\'\\\\') -> Tensor");
        rt("g(Tensor(a|b) self) -> Tensor(a|b)");
        rt("h(Dimname[] names, complex c, Dimname? d=None) -> ()");
        // The JIT schema's `Any` and `...` (varargs, varret).
        rt("higher_order::call_torchbind(Any self, str method, ...) -> Any");
        rt("higher_order::with_effects(Tensor token, Any op, ...) -> ...");
        rt("format(str self, ...) -> str");
        rt("f(...) -> (Tensor, ...)");
    }

    #[test]
    fn varargs_end_the_list() {
        let s = parse_schema("call_torchbind(Any self, str method, ...) -> Any").unwrap();
        assert!(s.arguments.vararg && !s.varret);
        assert_eq!(s.arguments.all.len(), 2);
        assert!(s.arguments.all[0].ty.is_base(BaseType::Any));
        let s = parse_schema("with_effects(Tensor token, Any op, ...) -> ...").unwrap();
        assert!(s.arguments.vararg && s.varret && s.returns.is_empty());
        let s = parse_schema("f(...) -> (Tensor, ...)").unwrap();
        assert!(s.varret && s.returns.len() == 1 && s.arguments.all.is_empty());
        let e = parse_schema("f(..., Tensor x) -> Tensor").unwrap_err();
        assert!(
            e.to_string()
                .contains("`...` must be the last element of the argument list"),
            "{e}"
        );
        let e = parse_schema("f(Tensor x) -> (..., Tensor)").unwrap_err();
        assert!(
            e.to_string().contains("`...` must be the last return"),
            "{e}"
        );
    }

    #[test]
    fn name_forms() {
        let s =
            parse_schema("__iand__.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)").unwrap();
        assert!(s.name.name.inplace && s.name.name.dunder);
        assert_eq!(s.name.name.base, "and");
        let s = parse_schema("foo_functional(Tensor self) -> Tensor").unwrap();
        assert!(s.name.name.functional_overload);
        assert_eq!(s.name.name.base, "foo");
    }

    #[test]
    fn errors_have_columns() {
        let e = parse_schema("add(Tensor self, Tensr other) -> Tensor").unwrap_err();
        assert_eq!(e.column, 18);
        assert_eq!(e.message, "unrecognized type Tensr");
        let e = parse_schema("add(Tensor self)").unwrap_err();
        assert!(e.message.starts_with("Invalid function schema"));
        let e = parse_schema("add(Tensor) -> Tensor").unwrap_err();
        assert_eq!(e.message, "illegal argument 'Tensor'");
        let e = parse_schema("add(Tensor self) -> (Tensor)").unwrap_err();
        assert!(e.message.contains("canonical"), "{e}");
        let e = parse_schema("add(Tensor self, *) -> Tensor").unwrap_err();
        assert!(e.message.contains("kwarg-only"), "{e}");
        let e = parse_schema("add(Tensor(ab!) self) -> Tensor").unwrap_err();
        assert_eq!(e.message, "unrecognized alias annotation ab!");
        let e = parse_schema("add(Tensor(a|b!) self) -> Tensor").unwrap_err();
        assert!(e.message.starts_with("alias set larger than 1"));
        let e = parse_schema("add(int(a) self) -> Tensor").unwrap_err();
        assert_eq!(e.message, "unrecognized type int(a)");
        let e = parse_schema("foo_out(Tensor self) -> Tensor").unwrap_err();
        assert!(e.message.starts_with("_out suffix is reserved"));
        let e = parse_schema("__ifoo__(Tensor self) -> Tensor").unwrap_err();
        assert!(e.message.starts_with("unexpected dunder"));
    }

    #[test]
    fn invariants() {
        let inv = |s: &str| check_invariants(&parse_schema(s).unwrap());
        assert!(inv(
            "add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)"
        )
        .is_ok());
        assert!(inv("abs_(Tensor self) -> Tensor")
            .unwrap_err()
            .contains("must have a self argument with a mutable annotation"));
        assert!(inv("add.out(Tensor self, Tensor(a!) out) -> Tensor(a!)")
            .unwrap_err()
            .contains("to not be returned"),);
        assert!(
            inv("f.out(Tensor self, *, Tensor(a!) out, int x) -> Tensor(a!)")
                .unwrap_err()
                .contains("cannot follow mutable out arguments")
        );
    }

    #[test]
    fn kinds_and_signature() {
        let p = |s: &str| parse_schema(s).unwrap();
        assert_eq!(
            p("abs(Tensor self) -> Tensor").kind(),
            SchemaKind::Functional
        );
        assert_eq!(
            p("abs_(Tensor(a!) self) -> Tensor(a!)").kind(),
            SchemaKind::Inplace
        );
        let out = p("abs.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)");
        assert_eq!(out.kind(), SchemaKind::Out);
        assert_eq!(out.signature(), p("abs(Tensor self) -> Tensor").signature());
        assert_eq!(
            p("_foo(Tensor(a!) x, Tensor y) -> ()").kind(),
            SchemaKind::Mutable
        );
    }
}
