//! opforge-codegen: the schema language, the `native_functions.yaml` loader, validation,
//! derivations and Rust emission. No I/O happens inside the library except in
//! [`load::load_file`]; everything else is a pure function of the model.

pub mod diag;
pub mod load;
pub mod model;
pub mod schema;
pub mod validate;
