//! Load: `native_functions.yaml` text → typed [`NativeFunction`] entries.
//!
//! YAML itself is read by `serde_yaml`, within the size and nesting bounds of
//! [`crate::yaml`] (so malformed YAML gets YAML's own line and column, and no
//! input makes it slow). Every key PyTorch's file uses is typed here; an unknown
//! key is an error.
//! serde_yaml's values carry no positions, so positions are recovered from the
//! source text by a [`SourceMap`]: top-level entries of the block sequence are the
//! lines that start with `-` at the sequence's indentation, and keys, dispatch rows
//! and the words inside values are found within their entry. A position that cannot
//! be recovered for sure falls back to the entry's line (and no column) rather than
//! being guessed.

use crate::diag::nearest;
use crate::diag::{Diagnostic, Diagnostics};
use crate::model::*;
use crate::schema::parse_schema;
use crate::yaml::{char_col, first_content_line, parse_key, KeyLine};
use serde_yaml::Value;

/// Every entry key this loader understands.
pub const KNOWN_KEYS: &[&str] = &[
    "func",
    "variants",
    "dispatch",
    "structured",
    "structured_delegate",
    "structured_inherits",
    "precomputed",
    "device_check",
    "device_guard",
    "python_module",
    "category_override",
    "tags",
    "autogen",
    "cpp_no_default_args",
    "manual_cpp_binding",
    "manual_kernel_registration",
    "use_const_ref_for_mutable_tensors",
    "ufunc_inner_loop",
];

/// How an entry starts, for help lines.
const ENTRY_HELP: &str =
    "each entry is a mapping that starts with its schema: `- func: neg(Tensor self) -> Tensor`";

/// A loaded schema file.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SchemaFile {
    /// The file name used in diagnostics.
    pub file: String,
    /// The entries in file order.
    pub entries: Vec<NativeFunction>,
    /// Where keys and values are in the source text, so that validation can point
    /// at them. An empty map (`SourceMap::default()`) makes every diagnostic fall
    /// back to its entry's line.
    pub source: SourceMap,
}

/// Reads `path` (at most [`crate::yaml::MAX_FILE_BYTES`]) and loads it. I/O
/// errors become a diagnostic at line 0.
pub fn load_file(path: &std::path::Path) -> Result<SchemaFile, Diagnostics> {
    let file = path.display().to_string();
    let src = crate::yaml::read(path).map_err(|d| Diagnostics(vec![d]))?;
    load_str(&file, &src)
}

/// Loads schema-file text. `file` names it in diagnostics. All problems found in all
/// entries are returned together, ordered by position.
pub fn load_str(file: &str, src: &str) -> Result<SchemaFile, Diagnostics> {
    let (loaded, diags) = load_str_partial(file, src);
    if diags.0.is_empty() {
        Ok(loaded)
    } else {
        Err(diags)
    }
}

/// Like [`load_str`], but also returns the entries that did load when others did
/// not, so that they can be validated too (in the same run).
pub fn load_str_partial(file: &str, src: &str) -> (SchemaFile, Diagnostics) {
    match load_all(file, src) {
        Ok(x) => x,
        Err(d) => (
            SchemaFile {
                file: file.to_string(),
                ..SchemaFile::default()
            },
            d,
        ),
    }
}

fn load_all(file: &str, src: &str) -> Result<(SchemaFile, Diagnostics), Diagnostics> {
    let (items, source) = top_level_list(
        file,
        src,
        "operator entries",
        "the file is a list: start every entry with `- `, e.g. `- func: neg(Tensor self) -> Tensor`",
    )?;
    let mut diags = Vec::new();
    let mut entries = Vec::with_capacity(items.len());
    for (i, item) in items.into_iter().enumerate() {
        let cx = EntryCx {
            file,
            src: &source,
            line: source.entry_line(i).unwrap_or(1),
            name: None,
        };
        match load_entry(cx, item) {
            Ok(nf) => entries.push(nf),
            Err(mut ds) => diags.append(&mut ds),
        }
    }
    let mut ds = Diagnostics(diags);
    ds.sort();
    Ok((
        SchemaFile {
            file: file.to_string(),
            entries,
            source,
        },
        ds,
    ))
}

/// Loads `tags.yaml` (a list of `{tag, desc}`), returning the tag names.
pub fn load_tags_str(file: &str, src: &str) -> Result<Vec<String>, Diagnostics> {
    let help = "tags.yaml is a list of `- tag: NAME` entries (each with a `desc:`)";
    let (items, source) = top_level_list(file, src, "tags", help)?;
    let mut tags = Vec::new();
    let mut diags = Vec::new();
    for (i, item) in items.iter().enumerate() {
        match item.get("tag") {
            Some(Value::String(t)) => tags.push(t.clone()),
            other => {
                let found = match other {
                    Some(v) => format!("`tag:` is {}", describe(v)),
                    None => format!("found {}", describe(item)),
                };
                diags.push(
                    Diagnostic::new(
                        file,
                        source.entry_line(i).unwrap_or(1),
                        format!("expected `- tag: NAME`, {found}"),
                    )
                    .help(help),
                );
            }
        }
    }
    if diags.is_empty() {
        Ok(tags)
    } else {
        Err(Diagnostics(diags))
    }
}

/// Parses a YAML file that is a list at the top level (a leading byte-order mark
/// removed): its items and the [`SourceMap`] of the text. Anything else at the
/// top level is one diagnostic, `expected a list of {what} at the top level`, with
/// `help`; an empty file is an empty list.
pub(crate) fn top_level_list(
    file: &str,
    src: &str,
    what: &str,
    help: &str,
) -> Result<(Vec<Value>, SourceMap), Diagnostics> {
    let src = src.strip_prefix('\u{feff}').unwrap_or(src);
    let root = crate::yaml::parse(file, src).map_err(|d| Diagnostics(vec![d]))?;
    let items = match root {
        Value::Sequence(items) => items,
        Value::Null => Vec::new(),
        other => {
            let found = describe(&other);
            return Err(Diagnostics(vec![Diagnostic::new(
                file,
                first_content_line(src),
                format!("expected a list of {what} at the top level, found {found}"),
            )
            .help(help)]));
        }
    };
    let source = SourceMap::new(src, items.len());
    Ok((items, source))
}

/// How a YAML value is described in a diagnostic: scalars are shown, collections
/// are named.
pub(crate) fn describe(v: &Value) -> String {
    match v {
        Value::Null => "nothing (an empty value)".into(),
        Value::Bool(b) => format!("the bool `{b}`"),
        Value::Number(n) => format!("the number `{n}`"),
        Value::String(s) if s.chars().count() > 40 => "a string".into(),
        Value::String(s) => format!("the string `{s}`"),
        Value::Sequence(_) => "a list".into(),
        Value::Mapping(_) => "a mapping".into(),
        Value::Tagged(_) => "a tagged value".into(),
    }
}

/// Positions in the source text. serde_yaml's values carry none, so they are
/// recovered by scanning the text: the entries of the top-level block sequence are
/// the lines starting with `- ` at the sequence's indentation (used only when there
/// is exactly one such line per parsed entry); keys are found by name at the
/// indentation of their entry's mapping; words inside a value are found within the
/// lines of that value. Lookups return `None` when unsure.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SourceMap {
    text: String,
    /// Byte offset where each line starts.
    line_starts: Vec<usize>,
    /// The 1-based first line of each top-level entry.
    entries: Vec<usize>,
}

fn is_word(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Byte offset of `token` in `s` at or after `from`, not inside a longer word.
fn find_token(s: &str, from: usize, token: &str) -> Option<usize> {
    if token.is_empty() || from > s.len() || !s.is_char_boundary(from) {
        return None;
    }
    let mut start = from;
    while let Some(i) = s[start..].find(token) {
        let at = start + i;
        let before = s[..at].chars().next_back();
        let after = s[at + token.len()..].chars().next();
        let word_start = token.starts_with(is_word) && before.is_some_and(is_word);
        let word_end = token.ends_with(is_word) && after.is_some_and(is_word);
        if !word_start && !word_end {
            return Some(at);
        }
        start = at + token.len().max(1);
    }
    None
}

impl SourceMap {
    /// Scans `src`, which parsed as a sequence of `n` items.
    pub fn new(src: &str, n: usize) -> SourceMap {
        let mut line_starts = vec![0];
        line_starts.extend(src.match_indices('\n').map(|(i, _)| i + 1));
        if src.ends_with('\n') {
            line_starts.pop();
        }
        let mut map = SourceMap {
            text: src.to_string(),
            line_starts,
            entries: Vec::new(),
        };
        // The indentation of the top-level sequence: that of its first `-`.
        let first = (1..=map.lines()).map(|l| map.line(l)).find(|l| {
            let t = l.trim();
            !t.is_empty() && !t.starts_with('#') && !t.starts_with("---") && !t.starts_with('%')
        });
        let Some(indent) = first.and_then(|l| {
            let t = l.trim_start_matches(' ');
            (t == "-" || t.starts_with("- ")).then_some(l.len() - t.len())
        }) else {
            return map;
        };
        let starts: Vec<usize> = (1..=map.lines())
            .filter(|&l| {
                let text = map.line(l);
                text.len() > indent
                    && text.as_bytes()[..indent].iter().all(|&c| c == b' ')
                    && (text[indent..] == *"-" || text[indent..].starts_with("- "))
            })
            .collect();
        if starts.len() == n {
            map.entries = starts;
        }
        map
    }

    fn lines(&self) -> usize {
        self.line_starts.len()
    }

    /// Line `l` (1-based), without its line break; empty when out of range.
    fn line(&self, l: usize) -> &str {
        let Some(&start) = l.checked_sub(1).and_then(|i| self.line_starts.get(i)) else {
            return "";
        };
        let end = self.line_starts.get(l).map_or(self.text.len(), |&e| e);
        self.text[start..end].trim_end_matches(['\n', '\r'])
    }

    /// The first line of entry `i`, if the scan found it.
    pub(crate) fn entry_line(&self, i: usize) -> Option<usize> {
        self.entries.get(i).copied()
    }

    /// The lines of the entry starting at `entry_line`.
    fn entry_range(&self, entry_line: usize) -> Option<std::ops::RangeInclusive<usize>> {
        let i = self.entries.binary_search(&entry_line).ok()?;
        let end = self.entries.get(i + 1).map_or(self.lines(), |&e| e - 1);
        Some(entry_line..=end)
    }

    /// The line of the top-level `key:` of an entry, and its parsed form.
    fn key_line(&self, entry_line: usize, key: &str) -> Option<(usize, KeyLine<'_>)> {
        let mut indent = None;
        for l in self.entry_range(entry_line)? {
            let Some(k) = parse_key(self.line(l)) else {
                continue;
            };
            let ind = *indent.get_or_insert(k.at);
            if k.at == ind && k.key == key {
                return Some((l, k));
            }
        }
        None
    }

    /// The line of `key:` in an entry (the entry's line if the key is not found).
    pub(crate) fn key(&self, entry_line: usize, key: &str) -> usize {
        self.key_line(entry_line, key)
            .map_or(entry_line, |(l, _)| l)
    }

    /// The line and column of the key `key:` itself.
    pub(crate) fn key_pos(&self, entry_line: usize, key: &str) -> (usize, Option<usize>) {
        match self.key_line(entry_line, key) {
            Some((l, k)) => (l, Some(char_col(self.line(l), k.at))),
            None => (entry_line, None),
        }
    }

    /// Where the value of `key:` starts when it is written on the key's line
    /// (inside the quotes of a quoted value).
    pub(crate) fn value(&self, entry_line: usize, key: &str) -> (usize, Option<usize>) {
        match self.key_line(entry_line, key) {
            Some((l, k)) => (l, value_start(self.line(l), k.value_at).map(|(c, _)| c)),
            None => (entry_line, None),
        }
    }

    /// The lines of the value of `key:`: the key's line and the lines indented
    /// under it (a block list may sit at the key's own indentation).
    fn block(&self, entry_line: usize, key: &str) -> Option<(usize, usize, usize)> {
        let (kl, k) = self.key_line(entry_line, key)?;
        let value_at = k.value_at;
        let key_indent = k.at;
        let mut last = kl;
        for l in kl + 1..=*self.entry_range(entry_line)?.end() {
            let text = self.line(l);
            let t = text.trim_start_matches(' ');
            if t.is_empty() || t.starts_with('#') {
                continue;
            }
            let indent = text.len() - t.len();
            if indent > key_indent || (indent == key_indent && (t == "-" || t.starts_with("- "))) {
                last = l;
            } else {
                break;
            }
        }
        Some((kl, value_at, last))
    }

    /// Line and column of the word `token` inside the value of `key:`; the value's
    /// position when the word cannot be found.
    pub(crate) fn token(
        &self,
        entry_line: usize,
        key: &str,
        token: &str,
    ) -> (usize, Option<usize>) {
        let Some((kl, value_at, last)) = self.block(entry_line, key) else {
            return (entry_line, None);
        };
        for l in kl..=last {
            let text = self.line(l);
            let from = if l == kl { value_at } else { 0 };
            if let Some(at) = find_token(text, from, token) {
                return (l, Some(char_col(text, at)));
            }
        }
        self.value(entry_line, key)
    }

    /// The line of the `dispatch:` row whose key is `keys` (as written).
    pub(crate) fn dispatch_row(&self, entry_line: usize, keys: &str) -> Option<usize> {
        let (kl, _, last) = self.block(entry_line, "dispatch")?;
        (kl + 1..=last).find(|&l| parse_key(self.line(l)).is_some_and(|k| k.key == keys))
    }

    /// Line and column of `key:` in the mapping nested under the key on line
    /// `parent` (the first key indented under it sets the mapping's indentation).
    pub(crate) fn child_key(&self, parent: usize, key: &str) -> Option<(usize, usize)> {
        let parent_at = parse_key(self.line(parent))?.at;
        let mut indent = None;
        for l in parent + 1..=self.lines() {
            let text = self.line(l);
            let t = text.trim_start_matches(' ');
            if t.is_empty() || t.starts_with('#') {
                continue;
            }
            if text.len() - t.len() <= parent_at {
                break;
            }
            let Some(k) = parse_key(text) else {
                continue;
            };
            if k.at == *indent.get_or_insert(k.at) && k.key == key {
                return Some((l, char_col(text, k.at)));
            }
        }
        None
    }

    /// Column of the word `token` in the key part of a dispatch row.
    pub(crate) fn row_key_col(&self, row_line: usize, token: &str) -> Option<usize> {
        let text = self.line(row_line);
        let k = parse_key(text)?;
        let at = find_token(&text[..k.value_at], k.at, token)?;
        Some(char_col(text, at))
    }

    /// Column where the value (the kernel) of a dispatch row starts.
    pub(crate) fn row_value_col(&self, row_line: usize) -> Option<usize> {
        let text = self.line(row_line);
        value_start(text, parse_key(text)?.value_at).map(|(c, _)| c)
    }

    /// Line and column of 1-based character `col` of the schema `schema`, which is
    /// the value of the entry's `func:`. The column is only given when the schema is
    /// written on that line verbatim (a plain or quoted scalar without escapes).
    pub(crate) fn schema_col(
        &self,
        entry_line: usize,
        schema: &str,
        col: usize,
    ) -> (usize, Option<usize>) {
        self.value_col(entry_line, "func", schema, col)
    }

    /// Line and column of 1-based character `col` of `text`, the value of the
    /// entry's `key:`, under the same conditions as [`SourceMap::schema_col`].
    pub(crate) fn value_col(
        &self,
        entry_line: usize,
        key: &str,
        text: &str,
        col: usize,
    ) -> (usize, Option<usize>) {
        let Some((l, k)) = self.key_line(entry_line, key) else {
            return (entry_line, None);
        };
        let line = self.line(l);
        let col = value_start(line, k.value_at)
            .filter(|&(_, at)| line[at..].starts_with(text))
            .map(|(c, _)| c + col - 1);
        (l, col)
    }
}

/// The 1-based column and byte offset where a value written after `key:` starts
/// (inside its quotes); `None` for an empty value, a comment or a block scalar.
fn value_start(line: &str, value_at: usize) -> Option<(usize, usize)> {
    let rest = line.get(value_at..)?;
    let t = rest.trim_start_matches(' ');
    let mut at = value_at + rest.len() - t.len();
    match t.chars().next()? {
        '#' | '|' | '>' => return None,
        '"' | '\'' => at += 1,
        _ => {}
    }
    Some((char_col(line, at), at))
}

/// Where an entry is, for its diagnostics.
pub(crate) struct EntryCx<'a> {
    pub(crate) file: &'a str,
    pub(crate) src: &'a SourceMap,
    /// The entry's first line.
    pub(crate) line: usize,
    /// `name.overload`, once known.
    pub(crate) name: Option<String>,
}

impl EntryCx<'_> {
    /// A diagnostic at `(line, column)`, naming the entry when its name is known.
    pub(crate) fn at(
        &self,
        (line, col): (usize, Option<usize>),
        msg: impl Into<String>,
    ) -> Diagnostic {
        let d = Diagnostic::new(self.file, line, msg).maybe_column(col);
        match &self.name {
            Some(n) => d.entry(n.clone()),
            None => d,
        }
    }

    /// At the value of `key:`.
    fn at_value(&self, key: &str, msg: impl Into<String>) -> Diagnostic {
        self.at(self.src.value(self.line, key), msg)
    }
}

/// What a value of `key:` looks like, for help lines.
fn key_example(key: &str) -> Option<&'static str> {
    Some(match key {
        "func" => "write the schema after `func:`, e.g. `- func: neg(Tensor self) -> Tensor`",
        "variants" => "write `variants: function`, `variants: method` or `variants: function, method`",
        "dispatch" => "write `dispatch:` and under it one indented `KEY: kernel` row per dispatch key, e.g. `    CPU: cpu::add_Tensor`",
        "tags" => "write one tag (`tags: core`) or a list (`tags: [core, pointwise]`)",
        "autogen" => "write the operator names in one string: `autogen: foo.out, foo_functional`",
        "cpp_no_default_args" => "write a list of argument names: `cpp_no_default_args: ['dim']`",
        "precomputed" => "write a list of `- param -> Type name, Type name` lines",
        "ufunc_inner_loop" => "write a loop name (`ufunc_inner_loop: add (AllAndComplex, BFloat16, Half, ComplexHalf)`) or a mapping of ufunc keys to them",
        "structured_delegate" => "name the structured out= operator, e.g. `structured_delegate: add.out`",
        _ => return None,
    })
}

fn load_entry(mut cx: EntryCx<'_>, item: Value) -> Result<NativeFunction, Vec<Diagnostic>> {
    let line = cx.line;
    let Value::Mapping(map) = item else {
        return Err(vec![cx
            .at(
                (line, None),
                format!(
                    "expected an entry mapping (`- func: ...`), found {}",
                    describe(&item)
                ),
            )
            .help(ENTRY_HELP)]);
    };
    let mut diags = Vec::new();
    // The schema first, so that every other diagnostic can name the entry.
    let func = match map.get("func") {
        None => {
            let keys: Vec<&str> = map.keys().filter_map(Value::as_str).collect();
            let found = if keys.is_empty() {
                String::new()
            } else {
                format!(" (found {})", keys.join(", "))
            };
            return Err(vec![cx
                .at((line, None), format!("missing `func:` key{found}"))
                .help(
                    "every entry needs a schema, e.g. `- func: neg(Tensor self) -> Tensor`",
                )]);
        }
        Some(Value::String(s)) if s.trim().is_empty() => {
            let mut d = cx.at_value("func", "`func:` is empty");
            d.help = key_example("func").map(str::to_string);
            return Err(vec![d]);
        }
        Some(Value::String(s)) => {
            cx.name = schema_label(s);
            match parse_schema(s) {
                Ok(f) => Some(f),
                Err(e) => {
                    let pos = cx.src.schema_col(line, s, e.column);
                    let mut d = cx.at(pos, format!("malformed schema: {}", e.message));
                    d.help = Some(schema_help(&e.message));
                    diags.push(d);
                    None
                }
            }
        }
        Some(v) => {
            let mut d = cx.at_value(
                "func",
                format!("`func:` must be a schema string, found {}", describe(v)),
            );
            d.help = key_example("func").map(str::to_string);
            return Err(vec![d]);
        }
    };
    let parsed = func.is_some();
    let mut nf = NativeFunction {
        // A placeholder when the schema is malformed: the entry is not returned then.
        func: func.unwrap_or_else(|| FunctionSchema {
            name: OperatorName {
                namespace: None,
                name: BaseName {
                    base: String::new(),
                    inplace: false,
                    dunder: false,
                    functional_overload: false,
                },
                overload: String::new(),
            },
            arguments: Arguments::default(),
            returns: Vec::new(),
            varret: false,
        }),
        line,
        variants: Variants::default(),
        dispatch: Vec::new(),
        has_dispatch: false,
        structured: false,
        structured_delegate: None,
        structured_inherits: None,
        precomputed: Vec::new(),
        device_check: None,
        device_guard: true,
        python_module: None,
        category_override: None,
        tags: Vec::new(),
        autogen: Vec::new(),
        cpp_no_default_args: Vec::new(),
        manual_cpp_binding: false,
        manual_kernel_registration: false,
        use_const_ref_for_mutable_tensors: false,
        ufunc_inner_loop: Vec::new(),
    };
    for (k, v) in &map {
        let Some(key) = k.as_str() else {
            diags.push(
                cx.at(
                    (line, None),
                    format!("entry keys must be strings, found {}", describe(k)),
                )
                .help(format!("known keys: {}", KNOWN_KEYS.join(", "))),
            );
            continue;
        };
        load_key(&cx, &mut nf, key, v, &mut diags);
    }
    if parsed && diags.is_empty() {
        Ok(nf)
    } else {
        Err(diags)
    }
}

/// The name an entry is known by in diagnostics (`name.overload`, without the
/// namespace), taken from its schema text even when the rest of the schema is
/// malformed; `None` when not even the name is well formed.
pub(crate) fn schema_label(schema: &str) -> Option<String> {
    let head = schema.split('(').next().unwrap_or(schema);
    let head = head.rsplit("::").next().unwrap_or(head);
    (!head.is_empty() && head.chars().all(|c| is_word(c) || c == '.')).then(|| head.to_string())
}

/// A hint for a schema the parser rejected, keyed on its (torchgen-worded) message.
pub(crate) fn schema_help(msg: &str) -> String {
    if let Some(ty) = msg.strip_prefix("unrecognized type ") {
        if ty.contains(' ') || ty.contains(',') {
            return "arguments are separated by exactly `, ` (a comma and one space), and each is `Type name` with one space".into();
        }
        if ty.contains('(') {
            return "alias annotations are written only on tensors: `Tensor(a!)`, `Tensor(a)?`, `Tensor(a!)[]`".into();
        }
        let base = ty
            .trim_end_matches(['?', '[', ']'])
            .trim_end_matches(|c: char| c.is_ascii_digit() || c == '[');
        return match nearest(base, BaseType::ALL.iter().map(|b| b.name())) {
            Some(n) => format!("did you mean `{n}`?"),
            None => format!(
                "known types: {} (composed with `?` and `[]`/`[N]`)",
                BaseType::ALL.map(|b| b.name()).join(", ")
            ),
        };
    }
    if msg.starts_with("Invalid function schema") {
        return "a schema is `name.overload(Type arg, ...) -> Return`, with exactly one space on each side of `->`".into();
    }
    if msg.starts_with("illegal argument") {
        return "each argument is `Type name` or `Type name=default`, separated by `, `".into();
    }
    if msg.contains("not in canonical form") {
        return "write the schema exactly as it prints back: torchgen compares the two character for character".into();
    }
    "see the schema grammar: `name.overload(Type arg, ..., *, Type kwarg=default) -> Return`".into()
}

fn load_key(
    cx: &EntryCx<'_>,
    nf: &mut NativeFunction,
    key: &str,
    v: &Value,
    diags: &mut Vec<Diagnostic>,
) {
    let expect = |what: &str| {
        let d = cx.at_value(
            key,
            format!("`{key}:` must be {what}, found {}", describe(v)),
        );
        match key_example(key) {
            Some(h) => d.help(h),
            None if what == "True or False" => {
                d.help(format!("write `{key}: True` or `{key}: False`"))
            }
            None => d,
        }
    };
    let string = || {
        v.as_str()
            .map(str::to_string)
            .ok_or_else(|| expect("a string"))
    };
    let boolean = || v.as_bool().ok_or_else(|| expect("True or False"));
    let strings = |what: &str| -> Result<Vec<String>, Diagnostic> {
        match v {
            Value::Sequence(xs) => xs
                .iter()
                .map(|x| {
                    x.as_str().map(str::to_string).ok_or_else(|| {
                        let d = cx.at_value(
                            key,
                            format!("`{key}:` must be {what}, found {} in the list", describe(x)),
                        );
                        match key_example(key) {
                            Some(h) => d.help(h),
                            None => d,
                        }
                    })
                })
                .collect(),
            _ => Err(expect(what)),
        }
    };
    let r: Result<(), Diagnostic> = (|| {
        match key {
            "func" => {}
            "variants" => {
                let s = string()?;
                let mut vs = Variants {
                    function: false,
                    method: false,
                };
                // torchgen splits on exactly ", " and compares exactly.
                for part in s.split(", ") {
                    match part {
                        "function" => vs.function = true,
                        "method" => vs.method = true,
                        other => {
                            let pos = cx.src.token(cx.line, key, other);
                            let help = if other.contains(',') {
                                "separate variants with `, ` (a comma and one space)".to_string()
                            } else if let Some(n) =
                                nearest(other, ["function", "method"].into_iter())
                            {
                                format!("did you mean `{n}`?")
                            } else {
                                "variants are `function`, `method` or `function, method`".into()
                            };
                            diags.push(cx.at(pos, format!("illegal variant {other}")).help(help));
                        }
                    }
                }
                nf.variants = vs;
            }
            "dispatch" => {
                nf.has_dispatch = true;
                let Value::Mapping(m) = v else {
                    return Err(expect("a mapping of dispatch keys to kernel names"));
                };
                for (k, kern) in m {
                    let Some(keys) = k.as_str() else {
                        diags.push(
                            cx.at(
                                (cx.src.key(cx.line, key), None),
                                format!("dispatch keys must be names, found {}", describe(k)),
                            )
                            .help(key_example(key).unwrap_or_default()),
                        );
                        continue;
                    };
                    let row = cx.src.dispatch_row(cx.line, keys);
                    let Some(kernel) = kern.as_str() else {
                        let pos = match row {
                            Some(l) => (l, cx.src.row_value_col(l)),
                            None => (cx.src.key(cx.line, key), None),
                        };
                        diags.push(
                            cx.at(
                                pos,
                                format!(
                                    "kernel for `{keys}` must be a name, found {}",
                                    describe(kern)
                                ),
                            )
                            .help(format!(
                                "write `{keys}: <kernel path>`, e.g. `{keys}: cpu::add_Tensor`"
                            )),
                        );
                        continue;
                    };
                    nf.dispatch.push(DispatchEntry {
                        keys: keys.split(',').map(|x| x.trim().to_string()).collect(),
                        kernel: kernel.to_string(),
                        line: row.unwrap_or_else(|| cx.src.key(cx.line, key)),
                    });
                }
            }
            "structured" => nf.structured = boolean()?,
            "structured_delegate" => nf.structured_delegate = Some(string()?),
            "structured_inherits" => nf.structured_inherits = Some(string()?),
            "precomputed" => nf.precomputed = strings("a list of strings")?,
            "device_check" => nf.device_check = Some(string()?),
            "device_guard" => nf.device_guard = boolean()?,
            "python_module" => nf.python_module = Some(string()?),
            "category_override" => nf.category_override = Some(string()?),
            // torchgen: a string is one tag (it is not split on commas).
            "tags" => {
                nf.tags = match v {
                    Value::String(s) => vec![s.clone()],
                    _ => strings("a tag or a list of tags")?,
                }
            }
            "autogen" => {
                nf.autogen = string()?
                    .split(", ")
                    .filter(|x| !x.is_empty())
                    .map(str::to_string)
                    .collect()
            }
            "cpp_no_default_args" => nf.cpp_no_default_args = strings("a list of argument names")?,
            "manual_cpp_binding" => nf.manual_cpp_binding = boolean()?,
            "manual_kernel_registration" => nf.manual_kernel_registration = boolean()?,
            "use_const_ref_for_mutable_tensors" => {
                nf.use_const_ref_for_mutable_tensors = boolean()?
            }
            "ufunc_inner_loop" => {
                nf.ufunc_inner_loop = match v {
                    Value::String(s) => vec![("Generic".into(), s.clone())],
                    Value::Mapping(m) => m
                        .iter()
                        .map(|(k, x)| match (k.as_str(), x.as_str()) {
                            (Some(k), Some(x)) => Ok((k.to_string(), x.to_string())),
                            _ => Err(expect("a string or a mapping of strings")),
                        })
                        .collect::<Result<_, _>>()?,
                    _ => return Err(expect("a string or a mapping of strings")),
                }
            }
            other => {
                let d = cx.at(
                    cx.src.key_pos(cx.line, other),
                    format!("unknown key `{other}`"),
                );
                return Err(match nearest(other, KNOWN_KEYS.iter().copied()) {
                    Some(n) => d.help(format!("did you mean `{n}`?")),
                    None => d.help(format!("known keys: {}", KNOWN_KEYS.join(", "))),
                });
            }
        }
        Ok(())
    })();
    if let Err(d) = r {
        diags.push(d);
    }
}
