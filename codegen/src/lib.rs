//! opforge-codegen: lowering and Rust emission for a schema file loaded by
//! `opforge-schema`, and the `opforge-codegen` command line. Build scripts use
//! it; nothing at run time depends on it.

pub mod cli;
pub mod emit;
pub mod emit_api;
pub mod lower;
pub mod rust_types;

use opforge_schema::{diag, load};

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
    let file = opforge_schema::check_str(&name, &src, tags.as_deref())?;
    let deprecated = opforge_schema::read_deprecated(yaml)?;
    let plan = lower::lower(&file, &deprecated)
        .map_err(|e| diag::Diagnostics(vec![diag::Diagnostic::new(&file.file, 0, e)]))?;
    emit_all(&plan)
}

/// Every generated file for a plan, as `(file name, contents)`: the tables
/// (`ops.rs`), the typed API (`api.rs`) and the kernel registrations
/// (`registrations.rs`). What the build script writes and `emit --out` writes.
pub fn emit_all(plan: &lower::Plan) -> Result<Vec<(String, String)>, diag::Diagnostics> {
    Ok(vec![
        ("ops.rs".to_string(), emit::tables(plan)),
        ("api.rs".to_string(), emit_api::api(plan)),
        (
            "registrations.rs".to_string(),
            emit_api::registrations(plan).0,
        ),
    ])
}
