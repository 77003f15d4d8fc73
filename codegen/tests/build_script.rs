//! What a downstream crate's build script does for its user: what it watches
//! (`Build::watched`: a missing `tags.yaml` or `deprecated.yaml` is never
//! watched, since Cargo would take it for a changed file and rerun the
//! generator on every build; a schema directory of its own is, so that one
//! appearing there is noticed), and the check of a kernel the YAML names.

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
