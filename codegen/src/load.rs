//! Load: `native_functions.yaml` text → typed [`NativeFunction`] entries.
//!
//! YAML itself is read by `serde_yaml` (so malformed YAML gets YAML's own line and
//! column). Every key PyTorch's file uses is typed here; an unknown key is an error.
//! serde_yaml's values carry no positions, so the line of each entry (and of the
//! keys inside it) is recovered from the source text: top-level entries of a block
//! sequence are the lines that start with `-` in column 1.

use crate::diag::{Diagnostic, Diagnostics};
use crate::model::*;
use crate::schema::parse_schema;
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

/// A loaded schema file.
#[derive(Clone, Debug, PartialEq)]
pub struct SchemaFile {
    /// The file name used in diagnostics.
    pub file: String,
    /// The entries in file order.
    pub entries: Vec<NativeFunction>,
}

/// Reads `path` and loads it. I/O errors become a diagnostic at line 0.
pub fn load_file(path: &std::path::Path) -> Result<SchemaFile, Diagnostics> {
    let file = path.display().to_string();
    let src = std::fs::read_to_string(path)
        .map_err(|e| Diagnostics(vec![Diagnostic::new(&file, 0, format!("cannot read: {e}"))]))?;
    load_str(&file, &src)
}

/// Loads schema-file text. `file` names it in diagnostics. All problems found in all
/// entries are returned together.
pub fn load_str(file: &str, src: &str) -> Result<SchemaFile, Diagnostics> {
    let root: Value =
        serde_yaml::from_str(src).map_err(|e| Diagnostics(vec![yaml_error(file, &e)]))?;
    let items = match root {
        Value::Sequence(items) => items,
        Value::Null => Vec::new(),
        _ => {
            return Err(Diagnostics(vec![Diagnostic::new(
                file,
                1,
                "expected a list of operator entries (`- func: ...`) at the top level",
            )]))
        }
    };
    let lines = Lines::new(src, items.len());
    let mut diags = Vec::new();
    let mut entries = Vec::with_capacity(items.len());
    for (i, item) in items.into_iter().enumerate() {
        let cx = EntryCx {
            file,
            src_lines: &lines,
            index: i,
            name: None,
        };
        match load_entry(cx, item) {
            Ok(nf) => entries.push(nf),
            Err(mut ds) => diags.append(&mut ds),
        }
    }
    if diags.is_empty() {
        Ok(SchemaFile {
            file: file.to_string(),
            entries,
        })
    } else {
        Err(Diagnostics(diags))
    }
}

/// Loads `tags.yaml` (a list of `{tag, desc}`), returning the tag names.
pub fn load_tags_str(file: &str, src: &str) -> Result<Vec<String>, Diagnostics> {
    let root: Value =
        serde_yaml::from_str(src).map_err(|e| Diagnostics(vec![yaml_error(file, &e)]))?;
    let bad = || {
        Diagnostics(vec![Diagnostic::new(
            file,
            1,
            "expected a list of `- tag: NAME` entries",
        )])
    };
    let Value::Sequence(items) = root else {
        return Err(bad());
    };
    items
        .iter()
        .map(|i| {
            i.get("tag")
                .and_then(Value::as_str)
                .map(str::to_string)
                .ok_or_else(bad)
        })
        .collect()
}

fn yaml_error(file: &str, e: &serde_yaml::Error) -> Diagnostic {
    let (line, col) = e
        .location()
        .map_or((0, None), |l| (l.line(), Some(l.column())));
    let mut d = Diagnostic::new(file, line, format!("malformed YAML: {e}"));
    d.column = col;
    d
}

/// Line numbers recovered from the source text.
struct Lines<'a> {
    lines: Vec<&'a str>,
    /// 1-based start line of each top-level entry, if the scan matched the parse.
    starts: Option<Vec<usize>>,
}

impl<'a> Lines<'a> {
    fn new(src: &'a str, n: usize) -> Lines<'a> {
        let lines: Vec<&str> = src.lines().collect();
        let starts: Vec<usize> = lines
            .iter()
            .enumerate()
            .filter(|(_, l)| l.starts_with("- ") || **l == "-")
            .map(|(i, _)| i + 1)
            .collect();
        Lines {
            starts: (starts.len() == n).then_some(starts),
            lines,
        }
    }

    /// The start line of entry `i` (1 if unknown).
    fn entry(&self, i: usize) -> usize {
        self.starts.as_ref().map_or(1, |s| s[i])
    }

    /// The first line of entry `i` on which `pred` holds (the entry line if none).
    fn find(&self, i: usize, pred: impl Fn(&str) -> bool) -> usize {
        let Some(starts) = &self.starts else { return 1 };
        let end = starts.get(i + 1).map_or(self.lines.len(), |e| e - 1);
        (starts[i]..=end)
            .find(|&l| pred(self.lines[l - 1]))
            .unwrap_or(starts[i])
    }

    /// The line of `key:` inside entry `i`.
    fn key(&self, i: usize, key: &str) -> usize {
        self.find(i, |l| {
            let t = l.trim_start_matches(['-', ' ']);
            t.strip_prefix(key)
                .is_some_and(|r| r.trim_start().starts_with(':'))
        })
    }

    /// 1-based column where the `func:` value starts on its line (to place schema errors).
    fn func_column(&self, i: usize) -> Option<(usize, usize)> {
        let line = self.key(i, "func");
        let text = self.lines.get(line.checked_sub(1)?)?;
        let at = text.find("func:")? + 5;
        let rest = &text[at..];
        let ws = rest.len() - rest.trim_start().len();
        let quote = usize::from(rest.trim_start().starts_with(['"', '\'']));
        Some((line, text[..at + ws + quote].chars().count() + 1))
    }
}

struct EntryCx<'a> {
    file: &'a str,
    src_lines: &'a Lines<'a>,
    index: usize,
    name: Option<String>,
}

impl EntryCx<'_> {
    fn at(&self, line: usize, msg: impl Into<String>) -> Diagnostic {
        let d = Diagnostic::new(self.file, line, msg);
        match &self.name {
            Some(n) => d.entry(n.clone()),
            None => d,
        }
    }

    fn at_key(&self, key: &str, msg: impl Into<String>) -> Diagnostic {
        self.at(self.src_lines.key(self.index, key), msg)
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a bool",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Sequence(_) => "a list",
        Value::Mapping(_) => "a mapping",
        Value::Tagged(_) => "a tagged value",
    }
}

fn load_entry(mut cx: EntryCx<'_>, item: Value) -> Result<NativeFunction, Vec<Diagnostic>> {
    let line = cx.src_lines.entry(cx.index);
    let Value::Mapping(map) = item else {
        return Err(vec![cx.at(
            line,
            format!(
                "expected an entry mapping (`- func: ...`), found {}",
                type_name(&item)
            ),
        )]);
    };
    let mut diags = Vec::new();
    // The schema first, so that every other diagnostic can name the entry.
    let func = match map.get("func") {
        None => {
            return Err(vec![cx.at(line, "missing `func:` key").help(
                "every entry needs a schema, e.g. `- func: neg(Tensor self) -> Tensor`",
            )])
        }
        Some(Value::String(s)) => {
            // Name the entry by its name even when the rest of the schema is malformed.
            let head = s.split('(').next().unwrap_or(s);
            cx.name = Some(head.rsplit("::").next().unwrap_or(head).to_string());
            match parse_schema(s) {
                Ok(f) => Some(f),
                Err(e) => {
                    let (l, c) = cx.src_lines.func_column(cx.index).unwrap_or((line, 1));
                    diags.push(
                        cx.at(l, format!("malformed schema: {}", e.message))
                            .column(c + e.column - 1)
                            .help("see the schema grammar: `name.overload(Type arg, ..., *, Type kwarg=default) -> Return`"),
                    );
                    None
                }
            }
        }
        Some(v) => {
            return Err(vec![cx.at_key(
                "func",
                format!("`func:` must be a schema string, found {}", type_name(v)),
            )])
        }
    };
    let mut nf = NativeFunction {
        func: func.clone().unwrap_or_else(|| FunctionSchema {
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
            diags.push(cx.at(
                line,
                format!("entry keys must be strings, found {}", type_name(k)),
            ));
            continue;
        };
        let r = load_key(&cx, &mut nf, key, v);
        if let Err(d) = r {
            diags.push(d);
        }
    }
    match (func, diags.is_empty()) {
        (Some(_), true) => Ok(nf),
        _ => Err(diags),
    }
}

fn load_key(
    cx: &EntryCx<'_>,
    nf: &mut NativeFunction,
    key: &str,
    v: &Value,
) -> Result<(), Diagnostic> {
    let expect = |what: &str| {
        cx.at_key(
            key,
            format!("`{key}:` must be {what}, found {}", type_name(v)),
        )
    };
    let string = || {
        v.as_str()
            .map(str::to_string)
            .ok_or_else(|| expect("a string"))
    };
    let boolean = || v.as_bool().ok_or_else(|| expect("True or False"));
    // A comma-separated string or a list of strings.
    let list = |sep: &str| -> Result<Vec<String>, Diagnostic> {
        match v {
            Value::String(s) => Ok(s
                .split(sep)
                .map(|x| x.trim().to_string())
                .filter(|x| !x.is_empty())
                .collect()),
            Value::Sequence(xs) => xs
                .iter()
                .map(|x| {
                    x.as_str()
                        .map(str::to_string)
                        .ok_or_else(|| expect("a list of strings"))
                })
                .collect(),
            _ => Err(expect("a string or a list of strings")),
        }
    };
    match key {
        "func" => {}
        "variants" => {
            let s = string()?;
            let mut vs = Variants {
                function: false,
                method: false,
            };
            for part in s.split(", ") {
                match part.trim() {
                    "function" => vs.function = true,
                    "method" => vs.method = true,
                    other => {
                        return Err(cx
                            .at_key(key, format!("illegal variant {other}"))
                            .help("variants are `function`, `method` or `function, method`"))
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
                let keys = k
                    .as_str()
                    .ok_or_else(|| expect("a mapping with string keys"))?;
                let kernel = kern.as_str().ok_or_else(|| {
                    cx.at_key(
                        keys,
                        format!(
                            "kernel for `{keys}` must be a name, found {}",
                            type_name(kern)
                        ),
                    )
                })?;
                nf.dispatch.push(DispatchEntry {
                    keys: keys.split(',').map(|x| x.trim().to_string()).collect(),
                    kernel: kernel.to_string(),
                    line: cx.src_lines.key(cx.index, keys),
                });
            }
        }
        "structured" => nf.structured = boolean()?,
        "structured_delegate" => nf.structured_delegate = Some(string()?),
        "structured_inherits" => nf.structured_inherits = Some(string()?),
        "precomputed" => nf.precomputed = list("\n")?,
        "device_check" => nf.device_check = Some(string()?),
        "device_guard" => nf.device_guard = boolean()?,
        "python_module" => nf.python_module = Some(string()?),
        "category_override" => nf.category_override = Some(string()?),
        "tags" => nf.tags = list(",")?,
        "autogen" => nf.autogen = list(",")?,
        "cpp_no_default_args" => nf.cpp_no_default_args = list(",")?,
        "manual_cpp_binding" => nf.manual_cpp_binding = boolean()?,
        "manual_kernel_registration" => nf.manual_kernel_registration = boolean()?,
        "use_const_ref_for_mutable_tensors" => nf.use_const_ref_for_mutable_tensors = boolean()?,
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
            let near = crate::validate::nearest(other, KNOWN_KEYS.iter().copied());
            let mut d = cx.at_key(other, format!("unknown key `{other}`"));
            d = match near {
                Some(n) => d.help(format!("did you mean `{n}`?")),
                None => d.help(format!("known keys: {}", KNOWN_KEYS.join(", "))),
            };
            return Err(d);
        }
    }
    Ok(())
}
