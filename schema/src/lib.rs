//! opforge-schema: the schema language of `native_functions.yaml` (PyTorch's
//! format) and everything derived from it, with no code generation: the model
//! ([`model`]), the schema-string parser ([`schema`]), the YAML loader
//! ([`load`]), validation with `file:line:col` diagnostics ([`validate`],
//! [`diag`]) and the derivations — variant groups ([`groups`]), the Python-API
//! bindings PyTorch generates ([`python`]), the overridable-function list and
//! testing stubs ([`overrides`]) — and the one reader of signature strings and
//! parameter lists ([`signature`]) and the one table of PyTorch's scalar types
//! ([`scalar_type`]). PyTorch's `derivatives.yaml` (the autograd formulas per
//! operator) is loaded and matched to an operator file by [`derivatives`].
//!
//! The runtime (`opforge`) uses it to load any schema file at run time; the
//! generator (`opforge-codegen`) and the macros build on the same model, so all
//! three agree by construction. No I/O happens inside the library except in
//! [`load::load_file`], [`derivatives::load_file`] and [`read_deprecated`].
//!
//! ```
//! let file = opforge_schema::check_str(
//!     "example.yaml",
//!     "- func: scale(Tensor self, float k=1.0) -> Tensor\n  variants: function, method\n",
//!     None,
//! ).unwrap();
//! assert_eq!(file.entries[0].func.to_string(), "scale(Tensor self, float k=1.0) -> Tensor");
//! ```

pub mod derivatives;
pub mod diag;
pub mod enums;
pub mod groups;
pub mod jit;
pub mod load;
pub mod model;
pub mod names;
pub mod overrides;
pub mod python;
pub mod scalar_type;
pub mod schema;
pub mod signature;
pub mod tables;
pub mod validate;
pub mod yaml;

use std::path::Path;

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
    let text = yaml::read(&path).map_err(|d| diag::Diagnostics(vec![d]))?;
    python::load_deprecated_str(&name, &text)
}

/// Loads and validates schema-file text, reporting what it finds in one run: each
/// entry's YAML problems together, and entries that load are validated even when
/// others do not. An entry whose schema is malformed (or that fails to load) is
/// not validated until it loads, and cross-entry checks wait for a clean load.
/// `tags` are the known tag names, if they are to be checked.
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
