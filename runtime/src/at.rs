//! The `at` layer, generated from the runtime's `native_functions.yaml`:
//! every operator overload with every argument, dispatched without the
//! function-level override protocol (C++'s `at::`; what kernels call), the
//! kernel signature types ([`sig`]), and [`operator`] (an id's dispatcher
//! operator).

#![allow(non_snake_case, clippy::too_many_arguments)]

include!(concat!(env!("OUT_DIR"), "/opforge/at.rs"));
