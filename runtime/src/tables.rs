//! The schema tables: their types (`OpSchema`, `ArgSchema`, …, from
//! `opforge_schema::tables`) and the tables generated from the runtime's
//! `native_functions.yaml` (`OpId`, `OPS`, `GROUPS`, `BINDINGS`,
//! `OVERRIDABLE`): data only, the layer every dispatching layer builds on.

pub use opforge_schema::tables::*;

/// The generated tables (included here, re-exported above them).
mod generated {
    include!(concat!(env!("OUT_DIR"), "/opforge/tables.rs"));
}

pub use generated::*;
