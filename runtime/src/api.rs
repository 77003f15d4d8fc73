//! The typed API, generated from the runtime's `native_functions.yaml`:
//! [`ops`] (every overload with every argument, through the function-level
//! override protocol: the operator handles), [`torch`] (free functions with
//! trailing defaults applied, named from the schema) and the `Tensor` methods.

include!(concat!(env!("OUT_DIR"), "/opforge/api.rs"));
