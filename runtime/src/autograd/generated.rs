//! The generated Autograd layer: per operator of `runtime/derivatives.yaml`
//! (and its in-place and out= variants) an Autograd kernel, and per entry its
//! node type (`MulBackward0`), emitted by `opforge_codegen::emit_autograd`
//! into `$OUT_DIR/opforge/autograd.rs`. Formulas call `at::` and the helpers
//! of [`super::formulas`].

#![allow(non_snake_case)]

use super::formulas::*;
use crate::at;
use crate::at::sig;
use crate::Scalar;

include!(concat!(env!("OUT_DIR"), "/opforge/autograd.rs"));
