//! The README and the manual's chapters (`docs/`) say what is true: their
//! snippets of files are those files, their compile-error output is what the
//! UI test prints, and the command line prints what they show for its example.
//! (Their standalone Rust snippets run as doctests of this crate:
//! `opforge_tests::readme` and `opforge_tests::docs`.)

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn readme() -> String {
    opforge_tests::read(&root().join("README.md"))
}

/// The README and every chapter of `docs/`: `(path, text)`.
fn pages() -> Vec<(PathBuf, String)> {
    let mut pages = vec![(root().join("README.md"), readme())];
    let mut chapters: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .expect("the docs/ directory")
        .map(|e| e.expect("a docs/ entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    chapters.sort();
    for p in chapters {
        let text = opforge_tests::read(&p);
        pages.push((p, text));
    }
    pages
}

/// The fenced blocks of every page, in order.
fn all_blocks() -> Vec<(String, String)> {
    pages().iter().flat_map(|(_, text)| blocks(text)).collect()
}

/// The fenced blocks of a page: `(info string, body)`, the body unindented
/// by the fence's own indentation.
fn blocks(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        let trimmed = line.trim_start();
        let Some(info) = trimmed.strip_prefix("```") else {
            continue;
        };
        let indent = line.len() - trimmed.len();
        let mut body = String::new();
        for l in lines.by_ref() {
            if l.trim_start().starts_with("```") {
                break;
            }
            body.push_str(l.get(indent..).unwrap_or(l.trim_start()));
            body.push('\n');
        }
        out.push((info.to_string(), body));
    }
    out
}

/// Every `rust,ignore` or `rust,no_run` snippet of the README and of the
/// chapters is a part of a file of `my_ops` (its first line, if a `// path`
/// comment, names the file), and the YAML entries and the derivatives entry
/// are `my_ops`'s. The recipe (its `Cargo.toml`, YAML, derivatives,
/// `build.rs`, `lib.rs` and kernel) is in the README.
#[test]
fn snippets_of_files_are_those_files() {
    let mut in_readme = 0;
    let mut total = 0;
    for (path, text) in pages() {
        let n = check_snippets_of_files(&text);
        if path.ends_with("README.md") {
            in_readme = n;
        }
        total += n;
    }
    assert!(
        in_readme >= 7,
        "only {in_readme} recipe snippets in the README"
    );
    assert!(total >= 9, "only {total} snippets checked");
}

/// Checks one page's snippets of `my_ops`'s files; returns how many.
fn check_snippets_of_files(text: &str) -> usize {
    let my_ops = root().join("my_ops");
    let mut checked = 0;
    for (info, body) in blocks(text) {
        match info.as_str() {
            "rust,ignore" | "rust,no_run" => {
                let (file, code) = match body.strip_prefix("// ") {
                    Some(rest) if rest.lines().next().is_some_and(|l| l.ends_with(".rs")) => {
                        let (first, code) = rest.split_once('\n').unwrap();
                        (my_ops.join(first), code.to_string())
                    }
                    _ => (my_ops.join("src/kernels/cpu.rs"), body.clone()),
                };
                let text = opforge_tests::read(&file);
                assert!(
                    text.contains(code.trim()),
                    "snippet is not in {}:\n{code}",
                    file.display()
                );
                checked += 1;
            }
            // The recipe's derivatives entry is my_ops's.
            "yaml" if body.starts_with("- name: mylib::") => {
                let text = opforge_tests::read(&my_ops.join("derivatives.yaml"));
                assert!(
                    text.contains(body.trim()),
                    "derivatives are not my_ops's:\n{body}"
                );
                checked += 1;
            }
            "yaml" if body.contains("mylib::scale") => {
                let text = opforge_tests::read(&my_ops.join("native_functions.yaml"));
                assert!(text.contains(body.trim()), "YAML is not my_ops's:\n{body}");
                checked += 1;
            }
            // The recipe's `Cargo.toml` (a profile block is a user's own choice:
            // a workspace member's profile would be ignored).
            "toml" if body.contains("[dependencies]") => {
                let text = opforge_tests::read(&my_ops.join("Cargo.toml"));
                let deps = body
                    .lines()
                    .filter(|l| l.contains('=') && !l.starts_with('#'));
                for line in deps {
                    let dep = line.split('=').next().unwrap().trim();
                    assert!(text.contains(dep), "my_ops/Cargo.toml lacks {dep}");
                }
                checked += 1;
            }
            _ => {}
        }
    }
    checked
}

/// Each compile error the manual shows is its UI test's, line for line (the
/// `-->` line names the test's file, relative to the tests crate); the kernel
/// type error of "Adding an operator" is among them.
#[test]
fn the_kernel_errors_shown_are_the_ui_tests() {
    let mut checked = Vec::new();
    for (info, body) in all_blocks() {
        if info != "text" || !body.starts_with("error[E") {
            continue;
        }
        let source = body
            .lines()
            .find_map(|l| l.trim_start().strip_prefix("--> "))
            .and_then(|l| l.split(':').next())
            .expect("a compile error shown names its file");
        let stderr = root().join("tests").join(source).with_extension("stderr");
        let text = opforge_tests::read(&stderr);
        for line in body.lines() {
            assert!(text.contains(line), "not in {}: {line}", stderr.display());
        }
        checked.push(source.to_string());
    }
    assert!(
        checked.iter().any(|s| s.ends_with("params/wrong-type.rs")),
        "the manual shows a kernel type error: {checked:?}"
    );
}

/// `opforge-codegen check` on the manual's example prints what the manual shows.
#[test]
fn the_check_example_prints_what_the_manual_shows() {
    let bs = blocks(&opforge_tests::read(&root().join("docs/testing.md")));
    let i = bs
        .iter()
        .position(|(info, body)| info == "yaml" && body.contains("flaot"))
        .expect("docs/testing.md's check example");
    let yaml = &bs[i].1;
    let shown = &bs[i + 1].1;
    let dir = std::env::temp_dir().join(format!("opforge-readme-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("native_functions.yaml");
    std::fs::write(&file, yaml).unwrap();
    let o = opforge_codegen::cli::run(&["check".to_string(), file.display().to_string()]);
    std::fs::remove_dir_all(&dir).ok();
    assert_eq!(o.code, 1);
    let got = o.stderr.replace(&format!("{}/", dir.display()), "");
    assert_eq!(got, *shown);
}
