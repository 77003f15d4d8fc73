//! The runtime's layers stay true: every module of `runtime/src` imports only
//! from the modules listed before it in ARCHITECTURE.md's "The runtime's layers"
//! (read from there, so the document and the code cannot drift). Reads the
//! `crate::…` (and crate-root `super::…`) paths of the sources, unit tests
//! included (a test that needs a module above belongs there, or in
//! `runtime/tests/`), and fails naming the file, line and upward import. The
//! generated files are read too, each as part of the module that includes it
//! (`tables`, `at`, `api`). The order is total (one module after another), so
//! no two modules can import each other.

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
        "DType" | "Device" | "Layout" | "MemoryFormat" | "Reduction" | "Scalar" | "Element" => {
            "dtype"
        }
        "Tensor" | "Storage" | "Generator" | "Stream" | "QScheme" | "with_dtype"
        | "with_buffer" => "tensor",
        "Error" | "Result" | "Message" | "bail" | "ensure" => "error",
        "float_dtype" => "kernels",
        "Value" => "value",
        "OpId" | "OPS" | "GROUPS" | "BINDINGS" | "OVERRIDABLE" | "OP_COUNT" => "tables",
        "at" | "sig" => "at",
        "ops" | "torch" => "api",
        // Re-exports for the macros' and the generator's output: the layer of
        // what each re-exports.
        "__private" => match second? {
            "prelude" => "tensor",
            "call" | "dispatcher" | "Kernel" | "KeySet" | "Operator" | "Unboxed" | "Entry"
            | "KernelEntry" | "Library" | "OperatorDef" | "KERNELS" | "LIBRARIES"
            | "OPERATOR_DEFS" | "TypedApi" | "TypedCaller" | "TYPED_APIS"
            // A macro over the link-time table: what it names is dispatch's.
            | "kernel_entry" => "dispatch",
            "protocol" | "guarded" | "Site" | "TypedRet" | "call_op" => "overrides",
            "Args" | "FromValue" | "IntoValues" | "Returns" | "ToValue" | "Value" => "value",
            "linkme" | "kernel_impl" | "op_impl" => return None,
            _ => "lib",
        },
        // The macros crate's attributes: below everything.
        "kernel" | "op" | "dispatcher" | "overridable" => return None,
        "include_schema" | "__opforge_kernel_entry" => "lib",
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
        for prefix in ["$crate::", "crate::", "::opforge::", root_super] {
            let mut rest = line;
            while let Some(i) = rest.find(prefix) {
                let before = &rest[..i];
                let after = &rest[i + prefix.len()..];
                rest = after;
                // `opforge_crate::x`, `super::super::` seen from `super::`.
                if (prefix != "::opforge::"
                    && before.ends_with(|c: char| c.is_alphanumeric() || c == '_' || c == ':'))
                    || (prefix == "::opforge::"
                        && before.ends_with(|c: char| c.is_alphanumeric() || c == '_'))
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

/// The files the runtime's build generates, generated again here from its
/// schema file (the same generator, the same options).
fn generated_files() -> Vec<(String, String)> {
    let yaml = root().join("runtime/native_functions.yaml");
    let tags = yaml.with_file_name("tags.yaml");
    opforge_codegen::generate(&yaml, tags.exists().then_some(tags.as_path()))
        .unwrap_or_else(|d| panic!("{d}"))
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
    // (shown path, module, depth, text): the hand-written sources, and the
    // generated files in the modules that include them.
    let mut sources: Vec<(String, String, usize, String)> = Vec::new();
    for f in &files {
        let rel = f.strip_prefix(&src).unwrap();
        let comps: Vec<String> = rel
            .iter()
            .map(|c| c.to_string_lossy().into_owned())
            .collect();
        let module = comps[0].trim_end_matches(".rs").to_string();
        let shown = format!("runtime/src/{}", rel.display());
        sources.push((shown, module, comps.len(), opforge_tests::read(f)));
    }
    for (name, text) in generated_files() {
        let module = match name.as_str() {
            "tables.rs" => "tables",
            "at.rs" => "at",
            "api.rs" => "api",
            // Node types and Autograd kernels (runtime/derivatives.yaml).
            "autograd.rs" => "autograd",
            // The kernels the generator writes, included in `kernels::composite`.
            "kernels.rs" => "kernels",
            // The schema lookup and the kernel checks: the crate root's.
            "schema_macro.rs" | "kernel_checks.rs" => "lib",
            // What a crate with its own schema includes; not the runtime.
            "schema.rs" => continue,
            other => panic!("a generated file no module is known to include: {other}"),
        };
        sources.push((
            format!("OUT_DIR/opforge/{name}"),
            module.to_string(),
            1,
            text,
        ));
    }
    let mut problems = Vec::new();
    let mut unknown = Vec::new();
    for (shown, module, depth, text) in &sources {
        let Some(&me) = rank.get(module.as_str()) else {
            unknown.push(format!("{shown} (module `{module}`)"));
            continue;
        };
        let (module, depth) = (module.clone(), *depth);
        for (line, first, second) in imports(text, depth) {
            let Some(target) = module_of(&first, second.as_deref()) else {
                continue;
            };
            if target == module {
                continue;
            }
            match rank.get(target.as_str()) {
                Some(&t) if t < me => {}
                Some(_) => problems.push(format!(
                    "{shown}:{line}: `{module}` imports `crate::{first}` (`{target}`), which is not below it"
                )),
                None => unknown.push(format!(
                    "{shown}:{line}: `crate::{first}` (no layer for `{target}`)"
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

/// The sibling files a file of a module refers to: `super::b::…` (and groups
/// of them) and `crate::<module>::b::…`, where `b` is another file of the same
/// directory, or a name the module's root re-exports from one (`reexports`:
/// name → file, from [`reexports`]); `module` is `None` at a crate root
/// (where `crate::b` is a sibling).
fn sibling_refs(
    src: &str,
    module: Option<&str>,
    siblings: &[String],
    reexports: &HashMap<String, String>,
) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (n, line) in src.lines().enumerate() {
        let line = line.split("//").next().unwrap_or("");
        for prefix in ["super::", "crate::"] {
            let mut rest = line;
            while let Some(i) = rest.find(prefix) {
                let before = &rest[..i];
                let after = &rest[i + prefix.len()..];
                rest = after;
                if before.ends_with(|c: char| c.is_alphanumeric() || c == '_' || c == ':')
                    || after.starts_with("super::")
                {
                    continue;
                }
                for (a, b) in heads(after) {
                    let name = match (prefix, module) {
                        ("super::", Some(_)) => Some(a),
                        ("crate::", Some(m)) if a == m => b,
                        ("crate::", None) => Some(a),
                        _ => None,
                    };
                    let file = name.and_then(|n| match siblings.contains(&n) {
                        true => Some(n),
                        false => reexports.get(&n).cloned(),
                    });
                    if let Some(file) = file {
                        out.push((n + 1, file));
                    }
                }
            }
        }
    }
    out
}

/// The first cycle in `edges` (file → files it refers to), as a path.
fn cycle(edges: &HashMap<String, Vec<String>>) -> Option<Vec<String>> {
    fn visit(
        f: &str,
        edges: &HashMap<String, Vec<String>>,
        state: &mut HashMap<String, u8>,
        path: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        match state.get(f) {
            Some(2) => return None,
            Some(1) => {
                let at = path.iter().position(|p| p == f).unwrap_or(0);
                let mut c = path[at..].to_vec();
                c.push(f.to_string());
                return Some(c);
            }
            _ => {}
        }
        state.insert(f.to_string(), 1);
        path.push(f.to_string());
        for g in edges.get(f).into_iter().flatten() {
            if let Some(c) = visit(g, edges, state, path) {
                return Some(c);
            }
        }
        path.pop();
        state.insert(f.to_string(), 2);
        None
    }
    let mut state = HashMap::new();
    let mut names: Vec<&String> = edges.keys().collect();
    names.sort();
    for f in names {
        if let Some(c) = visit(f, edges, &mut state, &mut Vec::new()) {
            return Some(c);
        }
    }
    None
}

/// The names a module's root (`mod.rs`, `lib.rs`) brings in from its files
/// with `use` (public or not: a file sees its parent's private imports as
/// `super::Name`), each with the file it comes from: `pub use b::{X, c::Y as
/// Z};` gives `X → b` and `Z → b`. `module` is the module's name (`crate::m::b`
/// is the file `b` too).
fn reexports(root_src: &str, module: Option<&str>, siblings: &[String]) -> HashMap<String, String> {
    // Whole `use` statements, comments removed.
    let code: String = root_src
        .lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join(" ");
    let mut out = HashMap::new();
    for stmt in code.split(';') {
        let stmt = stmt.trim();
        let Some(path) = stmt
            .split_once("use ")
            .filter(|(before, _)| {
                // `use` starts the item: nothing before it in the statement
                // but its visibility, attributes, or the end of an item.
                before.split_whitespace().last().is_none_or(|w| {
                    matches!(w, "pub" | "pub(crate)" | "pub(super)")
                        || w.ends_with('}')
                        || w.ends_with(']')
                })
            })
            .map(|(_, p)| p.trim())
        else {
            continue;
        };
        let mut path = path.strip_prefix("self::").unwrap_or(path);
        if let Some(m) = module {
            if let Some(rest) = path.strip_prefix(&format!("crate::{m}::")) {
                path = rest;
            }
        }
        let first: String = path
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        if !siblings.contains(&first) {
            continue;
        }
        for name in use_leaves(&path[first.len()..]) {
            out.insert(name, first.clone());
        }
    }
    out
}

/// The names a `use` tree's tail brings in: `::X` gives `X`, `::{a::X, Y as
/// Z}` gives `X` and `Z` (`self` in a group: nothing new; a glob: nothing
/// named).
fn use_leaves(tail: &str) -> Vec<String> {
    let tail = tail.trim().trim_start_matches("::").trim();
    if let Some(group) = tail.strip_prefix('{').and_then(|g| g.strip_suffix('}')) {
        let (mut parts, mut cur, mut depth) = (Vec::new(), String::new(), 0);
        for c in group.chars() {
            match c {
                '{' => depth += 1,
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
            .flat_map(|p| use_leaves(&format!("::{}", p.trim())))
            .collect();
    }
    match tail.split_once("::") {
        // The first segment is a plain name (a group starts with `{`).
        Some((_, rest)) => use_leaves(rest),
        None => match tail.split_once(" as ") {
            Some((_, alias)) => vec![alias.trim().to_string()],
            None if tail.is_empty() || tail == "*" || tail == "self" => Vec::new(),
            None => vec![tail.to_string()],
        },
    }
}

/// The first circle among the files of the module in `dir` (named `module`,
/// `None` at a crate root), through paths and through names its root
/// re-exports; `mod.rs` / `lib.rs` / `main.rs` declare the files and are left
/// out.
fn circle_in(dir: &Path, module: Option<&str>) -> Option<Vec<String>> {
    let all: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "rs"))
        .collect();
    let is_root =
        |p: &PathBuf| p.ends_with("mod.rs") || p.ends_with("lib.rs") || p.ends_with("main.rs");
    let files: Vec<&PathBuf> = all.iter().filter(|p| !is_root(p)).collect();
    let names: Vec<String> = files
        .iter()
        .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
        .collect();
    let mut exported = HashMap::new();
    for r in all.iter().filter(|p| is_root(p)) {
        exported.extend(reexports(&opforge_tests::read(r), module, &names));
    }
    let mut edges: HashMap<String, Vec<String>> = HashMap::new();
    for (f, name) in files.iter().zip(&names) {
        let refs = sibling_refs(&opforge_tests::read(f), module, &names, &exported);
        let e = edges.entry(name.clone()).or_default();
        e.extend(refs.into_iter().map(|(_, n)| n).filter(|n| n != name));
    }
    cycle(&edges)
}

/// Within a module (a directory of the runtime, or the schema crate's root),
/// the files never refer to each other in a circle: each helper lives in the
/// file below the ones that use it. (`mod.rs` / `lib.rs` declare the files and
/// are left out.)
#[test]
fn no_module_has_files_that_refer_to_each_other_in_a_circle() {
    let mut dirs: Vec<(PathBuf, Option<String>)> = vec![(root().join("schema/src"), None)];
    for e in std::fs::read_dir(root().join("runtime/src")).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            dirs.push((p, Some(name)));
        }
    }
    let mut problems = Vec::new();
    for (dir, module) in dirs {
        if let Some(c) = circle_in(&dir, module.as_deref()) {
            problems.push(format!(
                "{}: {}",
                dir.strip_prefix(root()).unwrap_or(&dir).display(),
                c.join(" → ")
            ));
        }
    }
    assert!(
        problems.is_empty(),
        "files of one module that refer to each other in a circle (move the shared helper below them):\n{}",
        problems.join("\n")
    );
}

#[test]
fn the_reader_sees_siblings_and_circles() {
    let siblings = ["a".to_string(), "b".to_string()];
    let src = "use super::{a::X, c::Y};\nlet z = crate::m::b::f(); // super::b\nuse crate::b;";
    let none = HashMap::new();
    assert_eq!(
        sibling_refs(src, Some("m"), &siblings, &none),
        [(1, "a".to_string()), (2, "b".to_string())]
    );
    assert_eq!(
        sibling_refs(src, None, &siblings, &none),
        [(3, "b".to_string())]
    );
    // `Y` re-exported by the module's root from `b`.
    let root_src = "mod a;\nmod b;\npub use b::{c::Y, Z as W};\npub(crate) use self::a::{self, V};\nuse std::x::Y2;";
    let exported = reexports(root_src, Some("m"), &siblings);
    let mut got: Vec<(&str, &str)> = exported
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    got.sort();
    assert_eq!(got, [("V", "a"), ("W", "b"), ("Y", "b")]);
    assert_eq!(
        sibling_refs("use super::{Y, V};", Some("m"), &siblings, &exported),
        [(1, "b".to_string()), (1, "a".to_string())]
    );
    let mut edges = HashMap::new();
    edges.insert("a".to_string(), vec!["b".to_string()]);
    edges.insert("b".to_string(), vec!["c".to_string()]);
    assert_eq!(cycle(&edges), None);
    edges.insert("c".to_string(), vec!["a".to_string()]);
    assert_eq!(cycle(&edges).map(|c| c.len()), Some(4));
}

/// A circle closed only through a name the module's root re-exports is
/// found: `a` calls `super::b::g`, `b` uses `super::F`, which `mod.rs`
/// re-exports from `a`.
#[test]
fn a_planted_circle_through_a_reexport_is_found() {
    let dir = std::env::temp_dir().join(format!("opforge-layers-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let write = |f: &str, text: &str| std::fs::write(dir.join(f), text).unwrap();
    write("mod.rs", "mod a;\nmod b;\npub use a::F;\n");
    write("a.rs", "pub struct F;\npub fn f() { super::b::g() }\n");
    write("b.rs", "use super::F;\npub fn g() {}\n");
    let found = circle_in(&dir, Some("m"));
    // Without the re-export, no circle.
    write("b.rs", "pub fn g() {}\n");
    let without = circle_in(&dir, Some("m"));
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(found.map(|c| c.len()), Some(3), "a → b → a");
    assert_eq!(without, None);
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
        module_of("__private", Some("call")).as_deref(),
        Some("dispatch")
    );
    assert_eq!(module_of("OpId", None).as_deref(), Some("tables"));
    assert_eq!(module_of("Tensor", None).as_deref(), Some("tensor"));
}
