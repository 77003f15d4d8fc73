//! The runtime's layers stay true: every module of `runtime/src` imports only
//! from the modules listed before it in ARCHITECTURE.md's "The runtime's layers"
//! (read from there, so the document and the code cannot drift). Reads the
//! `crate::…` (and crate-root `super::…`) paths of the sources, unit tests
//! included (a test that needs a module above belongs there, or in
//! `runtime/tests/`), and fails naming the file, line and upward import. The
//! order is total (one module after another), so no two modules can import each
//! other.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The ordered modules of ARCHITECTURE.md's layer list: the backquoted names of
/// its numbered items, in order.
fn layers() -> Vec<String> {
    let text = opforge_tests::read(&root().join("ARCHITECTURE.md"));
    let section = text
        .split("## The runtime's layers")
        .nth(1)
        .expect("ARCHITECTURE.md has a section \"## The runtime's layers\"");
    let section = section.split("\n## ").next().unwrap_or(section);
    let mut out = Vec::new();
    for line in section.lines() {
        let l = line.trim_start();
        let numbered = l
            .split_once(". ")
            .is_some_and(|(n, _)| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()));
        if !numbered {
            continue;
        }
        // The modules are the backquoted names before the dash.
        let head = l.split(" — ").next().unwrap_or(l);
        for part in head.split('`').skip(1).step_by(2) {
            out.push(part.trim_end_matches('/').to_string());
        }
    }
    assert!(!out.is_empty(), "no numbered layer list in ARCHITECTURE.md");
    out
}

/// The layer module a crate-root name belongs to.
fn module_of(first: &str, second: Option<&str>) -> Option<String> {
    let m = match first {
        "DType" | "Device" | "Layout" | "MemoryFormat" | "Scalar" | "Element" => "dtype",
        "Tensor" | "Storage" | "Generator" | "Stream" | "QScheme" | "with_dtype"
        | "with_buffer" => "tensor",
        "Error" | "Result" | "Message" | "bail" | "ensure" => "error",
        "float_dtype" => "kernels",
        "Value" => "value",
        "OpId" | "OPS" | "GROUPS" | "BINDINGS" | "OVERRIDABLE" | "OP_COUNT" => "tables",
        "at" | "sig" => "at",
        "ops" | "torch" => "api",
        "generated" => {
            return module_of(second.unwrap_or("ops"), None);
        }
        // The macros crate's attributes: below everything.
        "kernel" | "op" | "dispatcher" | "overridable" => return None,
        "__private" | "include_schema" => "lib",
        m => m,
    };
    Some(m.to_string())
}

/// The names a `crate::` path starts with: `crate::a::b` gives `(a, Some(b))`;
/// `crate::{a, b::c}` gives each.
fn heads(rest: &str) -> Vec<(String, Option<String>)> {
    let ident = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect()
    };
    if let Some(inner) = rest.strip_prefix('{') {
        let mut depth = 0;
        let mut parts = Vec::new();
        let mut cur = String::new();
        for c in inner.chars() {
            match c {
                '{' => depth += 1,
                '}' if depth == 0 => break,
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    parts.push(std::mem::take(&mut cur));
                    continue;
                }
                _ => {}
            }
            cur.push(c);
        }
        parts.push(cur);
        return parts
            .iter()
            .map(|p| p.trim())
            .filter(|p| !p.is_empty() && *p != "self")
            .flat_map(heads)
            .collect();
    }
    let first = ident(rest);
    let second = rest[first.len()..].strip_prefix("::").map(ident);
    vec![(first, second)]
}

/// `(line, first, second)` of every crate-level path in `src` (comments
/// removed); `depth` is how deep the file sits under `src/`.
fn imports(src: &str, depth: usize) -> Vec<(usize, String, Option<String>)> {
    let root_super = if depth <= 1 {
        "super::"
    } else {
        "super::super::"
    };
    let mut out = Vec::new();
    for (n, line) in src.lines().enumerate() {
        let line = line.split("//").next().unwrap_or("");
        for prefix in ["$crate::", "crate::", root_super] {
            let mut rest = line;
            while let Some(i) = rest.find(prefix) {
                let before = &rest[..i];
                let after = &rest[i + prefix.len()..];
                rest = after;
                // `opforge_crate::x`, `super::super::` seen from `super::`.
                if before.ends_with(|c: char| c.is_alphanumeric() || c == '_' || c == ':')
                    || (prefix == "super::" && after.starts_with("super::"))
                {
                    continue;
                }
                for (a, b) in heads(after) {
                    if !a.is_empty() {
                        out.push((n + 1, a, b));
                    }
                }
            }
        }
    }
    out
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn every_runtime_module_imports_only_from_the_layers_below_it() {
    let order = layers();
    let rank: HashMap<&str, usize> = order
        .iter()
        .enumerate()
        .map(|(i, m)| (m.as_str(), i))
        .collect();
    let src = root().join("runtime/src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    let mut problems = Vec::new();
    let mut unknown = Vec::new();
    for f in &files {
        let rel = f.strip_prefix(&src).unwrap();
        let comps: Vec<String> = rel
            .iter()
            .map(|c| c.to_string_lossy().into_owned())
            .collect();
        let module = comps[0].trim_end_matches(".rs").to_string();
        let Some(&me) = rank.get(module.as_str()) else {
            unknown.push(format!("{} (module `{module}`)", rel.display()));
            continue;
        };
        let depth = comps.len();
        for (line, first, second) in imports(&opforge_tests::read(f), depth) {
            let Some(target) = module_of(&first, second.as_deref()) else {
                continue;
            };
            if target == module {
                continue;
            }
            match rank.get(target.as_str()) {
                Some(&t) if t < me => {}
                Some(_) => problems.push(format!(
                    "runtime/src/{}:{line}: `{module}` imports `crate::{first}` (`{target}`), which is not below it",
                    rel.display()
                )),
                None => unknown.push(format!(
                    "runtime/src/{}:{line}: `crate::{first}` (no layer for `{target}`)",
                    rel.display()
                )),
            }
        }
    }
    assert!(
        unknown.is_empty(),
        "modules or paths ARCHITECTURE.md's layer list does not place:\n{}",
        unknown.join("\n")
    );
    assert!(
        problems.is_empty(),
        "imports against the layers (ARCHITECTURE.md, \"The runtime's layers\"):\n{}",
        problems.join("\n")
    );
}

#[test]
fn the_reader_sees_paths_and_groups() {
    let src = "use crate::{tensor::Tensor, value::{Value, ToValue}};\nlet x = crate::dispatch::dispatcher(); // crate::ignored\n#[cfg(test)]\n#[allow(dead_code)]\nmod tests { use crate::late; }";
    let got: Vec<(usize, String)> = imports(src, 1)
        .into_iter()
        .map(|(l, a, _)| (l, a))
        .collect();
    assert_eq!(
        got,
        [
            (1, "tensor".to_string()),
            (1, "value".into()),
            (2, "dispatch".into()),
            (5, "late".into())
        ]
    );
    assert_eq!(
        module_of("generated", Some("OpId")).as_deref(),
        Some("tables")
    );
    assert_eq!(module_of("Tensor", None).as_deref(), Some("tensor"));
}
