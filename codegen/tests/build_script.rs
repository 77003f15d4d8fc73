//! What a downstream crate's build script does for its user: what it watches
//! (`Build::watched`: a missing `tags.yaml` or `deprecated.yaml` is never
//! watched, since Cargo would take it for a changed file and rerun the
//! generator on every build; a schema directory of its own is, so that one
//! appearing there is noticed), the check of a kernel the YAML names, and a
//! crate's own derivatives file (its kernels against the crate's typed API,
//! its diagnostics at their file and line, its helpers' module).

use opforge_codegen::Build;
use std::path::{Path, PathBuf};

/// A fresh directory under the system's temporary directory.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("opforge-watched-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn touch(p: &Path) {
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, "").unwrap();
}

#[test]
fn beside_the_manifest_only_existing_files_are_watched() {
    let dir = scratch("root");
    touch(&dir.join("native_functions.yaml"));
    let build = Build::new("native_functions.yaml");
    assert_eq!(build.watched(&dir), [dir.join("native_functions.yaml")]);
    touch(&dir.join("tags.yaml"));
    assert_eq!(
        build.watched(&dir),
        [dir.join("native_functions.yaml"), dir.join("tags.yaml")]
    );
    touch(&dir.join("deprecated.yaml"));
    assert_eq!(build.watched(&dir).len(), 3);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_schema_directory_of_its_own_is_watched_until_both_files_exist() {
    let dir = scratch("own");
    let yaml = dir.join("schema").join("native_functions.yaml");
    touch(&yaml);
    let build = Build::new("schema/native_functions.yaml");
    assert_eq!(build.watched(&dir), [yaml.clone(), dir.join("schema")]);
    touch(&dir.join("schema").join("tags.yaml"));
    touch(&dir.join("schema").join("deprecated.yaml"));
    assert_eq!(
        build.watched(&dir),
        [
            yaml,
            dir.join("schema").join("tags.yaml"),
            dir.join("schema").join("deprecated.yaml")
        ]
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

// A kernel the YAML names but nobody wrote: the generated check's message
// names the YAML file and line, the operator, the key and the function
// expected (the marker is looked up through a glob import, with a fallback
// that fails a bound carrying that message; my_ops compiles the passing
// case).
#[test]
fn a_missing_kernel_is_named_with_its_yaml_line() {
    let dir = scratch("missing");
    let yaml = dir.join("native_functions.yaml");
    std::fs::write(
        &yaml,
        "- func: mylib::soft_step(Tensor self) -> Tensor\n  variants: function\n  dispatch:\n    CPU: cpu::soft_step\n",
    )
    .unwrap();
    let files = Build::new(&yaml).generate().unwrap();
    let checks = files
        .iter()
        .find(|(name, _)| name.as_str() == "kernel_checks.rs")
        .map(|(_, text)| text.as_str())
        .unwrap();
    // One row: the marker, the module it is looked up in, the message.
    assert!(checks.contains(
        "row!(__Row0, __opforge_CPU_kernel_of_mylib_soft_step, crate::kernels::cpu, \
         \"no CPU kernel for `mylib::soft_step`: native_functions.yaml:1 names \
         `crate::kernels::cpu::soft_step`, which does not exist or does not carry \
         `#[kernel(CPU)]`\""
    ));
    assert!(checks.contains("use $($module)::+::*;"));
    assert!(checks.contains("const $marker: NoKernel = NoKernel;"));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A crate's schema file (`mylib::wsq`) and derivatives file `derivs` in a
/// scratch directory, and what `Build` makes of them: the files, or the
/// diagnostics as printed, paths relative to the directory.
fn with_derivatives(name: &str, derivs: &str) -> Result<opforge_codegen::Files, String> {
    let dir = scratch(name);
    std::fs::write(
        dir.join("native_functions.yaml"),
        "- func: mylib::wsq(Tensor self, Tensor weight) -> Tensor\n  variants: function\n",
    )
    .unwrap();
    std::fs::write(dir.join("derivatives.yaml"), derivs).unwrap();
    let got = Build::new(dir.join("native_functions.yaml"))
        .no_kernels()
        .derivatives(dir.join("derivatives.yaml"))
        .generate()
        .map_err(|d| d.to_string().replace(&format!("{}/", dir.display()), ""));
    std::fs::remove_dir_all(&dir).unwrap();
    got
}

// A crate's derivatives: the kernels go into `generated::autograd`, where
// they reach the crate's own operator through `super::at` and the formulas
// opforge's through `at::`.
#[test]
fn a_crates_derivatives_are_generated_against_its_own_typed_api() {
    let files = with_derivatives(
        "good",
        "- name: mylib::wsq(Tensor self, Tensor weight) -> Tensor\n  self: at::mul_Tensor(&grad, &weight)\n  result: auto_linear\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let file = |n: &str| {
        files
            .iter()
            .find(|(f, _)| f == n)
            .unwrap()
            .1
            .replace(char::is_whitespace, "")
    };
    let autograd = file("autograd.rs");
    assert!(
        autograd.contains("super::at::mylib_wsq(self_,weight)?"),
        "{autograd}"
    );
    // auto_linear: the crate's operator on the tangents.
    assert!(
        autograd.contains("super::at::mylib_wsq(&self_t,&weight)"),
        "{autograd}"
    );
    assert!(!autograd.contains("::opforge::at::mylib_wsq"));
    assert!(autograd.contains("sig::mylib_wsq,sig::spec::mylib_wsq"));
    let schema = file("schema.rs");
    assert!(
        schema.contains("pubmodautograd{")
            && schema
                .contains("use::opforge::{at,Scalar};usesuper::sig;include!(\"autograd.rs\");"),
        "{schema}"
    );
}

// A bad entry fails the build with its file and line: a formula naming an
// argument the operator does not have, an entry for an operator the crate's
// schema file does not declare.
#[test]
fn a_bad_derivatives_entry_is_an_error_at_its_file_and_line() {
    let e = with_derivatives(
        "unknown-arg",
        "- name: mylib::wsq(Tensor self, Tensor weight) -> Tensor\n  self: at::mul_Tensor(&grad, &wieght)\n  weight: at::mul_Tensor(&grad, &self)\n",
    )
    .unwrap_err();
    assert_eq!(
        e.trim_end(),
        "derivatives.yaml:2:3: wsq: formula for `self` uses `wieght`, which is not an argument, a gradient, a result or a helper\n  help: did you mean `weight`?"
    );
    let e = with_derivatives(
        "unknown-op",
        "- name: mylib::wsq(Tensor self, Tensor weight) -> Tensor\n  self: at::mul_Tensor(&grad, &weight)\n\n- name: mylib::cube(Tensor self) -> Tensor\n  self: at::mul_Tensor(&grad, &self)\n",
    )
    .unwrap_err();
    assert_eq!(
        e.trim_end(),
        "derivatives.yaml:4: cube: could not find ATen function for schema: mylib::cube(Tensor self) -> Tensor\n  \
         help: no operator is named `cube`; `name:` repeats an operator's schema exactly as the operator file writes it"
    );
}

// Helpers: the module a crate's generated code imports them from is the
// file's place under `src/`; what has no module path is an error naming the
// file.
#[test]
fn the_helpers_module_is_the_files_place_under_src() {
    use opforge_codegen::module_path;
    let ok = |p: &str| module_path(Path::new(p)).unwrap_or_else(|d| panic!("{d}"));
    assert_eq!(ok("src/formulas.rs"), "crate::formulas");
    assert_eq!(
        ok("./src/autograd/formulas.rs"),
        "crate::autograd::formulas"
    );
    assert_eq!(
        ok("src/autograd/formulas/mod.rs"),
        "crate::autograd::formulas"
    );
    let err = |p: &str| module_path(Path::new(p)).unwrap_err().to_string();
    assert!(err("formulas.rs").contains("must be under `src/`"));
    assert!(err("src/lib.rs").contains("cannot be the helpers' module"));
    assert!(err("src/my-helpers.rs").contains("`my-helpers` is not a module name"));
    assert!(err("/abs/src/formulas.rs").contains("relative to the package directory"));
    assert!(err("src/formulas.txt").starts_with("src/formulas.txt"));
    let e = Build::new("native_functions.yaml")
        .derivative_helpers("src/formulas.rs")
        .generate()
        .unwrap_err()
        .to_string();
    assert!(e.contains("without a derivatives file"), "{e}");
}

// The generated module imports the helpers by their module path.
#[test]
fn the_generated_module_imports_the_helpers() {
    let dir = scratch("helpers");
    let yaml = dir.join("native_functions.yaml");
    std::fs::write(
        &yaml,
        "- func: mylib::wsq(Tensor self, Tensor weight) -> Tensor\n",
    )
    .unwrap();
    let derivs = dir.join("derivatives.yaml");
    std::fs::write(
        &derivs,
        "- name: mylib::wsq(Tensor self, Tensor weight) -> Tensor\n  self: wsq_backward(&grad, &weight)\n",
    )
    .unwrap();
    let file = dir.join("src/formulas.rs");
    touch(&file);
    std::fs::write(&file, "pub fn wsq_backward() {}\nfn private() {}\n").unwrap();
    let d = opforge_codegen::Derivatives {
        yaml: derivs,
        helpers: Some(opforge_codegen::Helpers {
            file,
            module: "crate::formulas".into(),
        }),
    };
    let opts = opforge_codegen::emit_api::Options {
        runtime: false,
        crate_name: "mylib".into(),
        kernels_module: None,
    };
    let files = opforge_codegen::generate_all(&yaml, None, &opts, Some(&d))
        .unwrap_or_else(|d| panic!("{d}"));
    let schema = &files.iter().find(|(f, _)| f == "schema.rs").unwrap().1;
    assert!(schema.contains("use crate::formulas::*;"), "{schema}");
    std::fs::remove_dir_all(&dir).unwrap();
}
