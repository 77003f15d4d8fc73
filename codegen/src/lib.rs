//! opforge-codegen: the schema language, the `native_functions.yaml` loader, validation,
//! derivations and Rust emission. No I/O happens inside the library except in
//! [`load::load_file`]; everything else is a pure function of the model.

pub mod diag;
pub mod emit;
pub mod emit_api;
pub mod groups;
pub mod load;
pub mod lower;
pub mod model;
pub mod overrides;
pub mod python;
pub mod rust_types;
pub mod schema;
pub mod validate;

use std::path::Path;

/// Loads, validates, lowers and emits a schema file: the whole pipeline that
/// `runtime/build.rs` runs. Returns `(file name, contents)` pairs to write.
/// `tags` is the `tags.yaml` to check tags against (none: tags are not checked); a
/// `deprecated.yaml` beside `yaml`, if present, adds PyTorch's deprecated signatures.
pub fn generate(
    yaml: &Path,
    tags: Option<&Path>,
) -> Result<Vec<(String, String)>, diag::Diagnostics> {
    let name = yaml.display().to_string();
    let src = std::fs::read_to_string(yaml).map_err(|e| {
        diag::Diagnostics(vec![diag::Diagnostic::new(
            &name,
            0,
            format!("cannot read: {e}"),
        )])
    })?;
    let tags = match tags {
        Some(t) => {
            let text = std::fs::read_to_string(t).map_err(|e| {
                diag::Diagnostics(vec![diag::Diagnostic::new(
                    &t.display().to_string(),
                    0,
                    format!("cannot read: {e}"),
                )])
            })?;
            Some(load::load_tags_str(&t.display().to_string(), &text)?)
        }
        None => None,
    };
    let file = check_str(&name, &src, tags.as_deref())?;
    let deprecated = read_deprecated(yaml)?;
    let plan = lower::lower(&file, &deprecated)
        .map_err(|e| diag::Diagnostics(vec![diag::Diagnostic::new(&file.file, 0, e)]))?;
    Ok(vec![
        ("ops.rs".to_string(), emit::tables(&plan)),
        ("api.rs".to_string(), emit_api::api(&plan)),
        (
            "registrations.rs".to_string(),
            emit_api::registrations(&plan).0,
        ),
    ])
}

/// The entries of the `deprecated.yaml` beside `yaml` (none if there is no such file).
pub fn read_deprecated(yaml: &Path) -> Result<Vec<python::DeprecatedEntry>, diag::Diagnostics> {
    let path = yaml
        .parent()
        .unwrap_or(Path::new("."))
        .join("deprecated.yaml");
    if !path.exists() {
        return Ok(Vec::new());
    }
    let name = path.display().to_string();
    let text = std::fs::read_to_string(&path).map_err(|e| {
        diag::Diagnostics(vec![diag::Diagnostic::new(
            &name,
            0,
            format!("cannot read: {e}"),
        )])
    })?;
    python::load_deprecated_str(&name, &text)
}

/// Loads and validates schema-file text, reporting every problem in one run: entries
/// that load are validated even when others do not (cross-entry checks then wait
/// for a clean load). `tags` are the known tag names, if they are to be checked.
pub fn check_str(
    file: &str,
    src: &str,
    tags: Option<&[String]>,
) -> Result<load::SchemaFile, diag::Diagnostics> {
    let (loaded, mut diags) = load::load_str_partial(file, src);
    let clean = diags.0.is_empty();
    if let Err(more) = validate::validate_with(&loaded, tags, clean) {
        diags.0.extend(more.0);
        diags.sort();
    }
    if diags.0.is_empty() {
        Ok(loaded)
    } else {
        Err(diags)
    }
}
