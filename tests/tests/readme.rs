//! The README says what is true: its snippets of files are those files, its
//! compile-error output is what the UI test prints, and the command line prints
//! what it shows for its example. (Its standalone Rust snippets run as doctests
//! of this crate: `opforge_tests::readme`.)

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn readme() -> String {
    opforge_tests::read(&root().join("README.md"))
}

/// The fenced blocks of the README: `(info string, body)`, the body unindented
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

/// Every `rust,ignore` or `rust,no_run` snippet is a part of a file of `my_ops` (its first line,
/// if a `// path` comment, names the file), and the YAML entry and the
/// derivatives entry of the recipe are `my_ops`'s.
#[test]
fn snippets_of_files_are_those_files() {
    let my_ops = root().join("my_ops");
    let mut checked = 0;
    for (info, body) in blocks(&readme()) {
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
                    "README snippet is not in {}:\n{code}",
                    file.display()
                );
                checked += 1;
            }
            // The recipe's derivatives entry is my_ops's.
            "yaml" if body.starts_with("- name: mylib::") => {
                let text = opforge_tests::read(&my_ops.join("derivatives.yaml"));
                assert!(
                    text.contains(body.trim()),
                    "README derivatives are not my_ops's:\n{body}"
                );
                checked += 1;
            }
            "yaml" if body.contains("mylib::scale") => {
                let text = opforge_tests::read(&my_ops.join("native_functions.yaml"));
                assert!(
                    text.contains(body.trim()),
                    "README YAML is not my_ops's:\n{body}"
                );
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
    assert!(checked >= 6, "only {checked} snippets checked");
}

/// The compile error the README shows is the UI test's, line for line.
#[test]
fn the_kernel_error_shown_is_the_ui_tests() {
    let stderr = opforge_tests::read(&root().join("tests/tests/ui/fail/params/wrong-type.stderr"));
    let shown = blocks(&readme())
        .into_iter()
        .find(|(info, body)| info == "text" && body.starts_with("error[E0277]"))
        .expect("the README shows a kernel type error")
        .1;
    for line in shown.lines() {
        assert!(stderr.contains(line), "not in wrong-type.stderr: {line}");
    }
}

/// `opforge-codegen check` on the README's example prints what the README shows.
#[test]
fn the_check_example_prints_what_the_readme_shows() {
    let bs = blocks(&readme());
    let i = bs
        .iter()
        .position(|(info, body)| info == "yaml" && body.contains("flaot"))
        .expect("the README's check example");
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
