//! `CPU:` kernels: one function per `cpu::<ident>` named in
//! `native_functions.yaml`, stamped by
//! `backend_kernels!` (in `kernels/backend.rs`) together with their meta twins.

#![allow(non_snake_case)]

super::backend::backend_kernels!(CPU);

super::sampling::random_factories!(CPU, Cpu);
