//! The kernels `native_functions.yaml` names, by key.

pub mod composite;
pub mod cpu;
pub mod meta;
