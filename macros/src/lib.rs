//! opforge's procedural macros. Thin entry points: the logic lives in plain
//! functions over `proc_macro2` token streams, so unit tests can call them.
//!
//! Use them through the `opforge` crate, which re-exports them.

mod kernel;
mod register;

use proc_macro::TokenStream;

/// Registers a kernel for an operator of `native_functions.yaml` under a dispatch
/// key, checking at compile time that the function's parameters (names, order,
/// types) and return type are those the schema maps to.
///
/// ```ignore
/// use opforge::{kernel, Result, Scalar, Tensor};
///
/// #[kernel(CPU, "add.Tensor")]
/// fn add_tensor(self_: &Tensor, other: &Tensor, alpha: Scalar) -> Result<Tensor> {
///     opforge::kernels::cpu::add_Tensor(self_, other, alpha)
/// }
/// ```
///
/// The type mapping is documented in `opforge::value`: `Tensor` → `&Tensor`,
/// `Tensor(a!)` → `&mut Tensor`, `Tensor?` → `Option<&Tensor>`, `int[]` → `&[i64]`,
/// `Scalar` → `Scalar`, `self` → `self_`, and so on. Keys: `CPU`, `Meta`,
/// `CompositeExplicitAutograd`, `CompositeImplicitAutograd`, `Autograd`, `Python`, …
#[proc_macro_attribute]
pub fn kernel(attr: TokenStream, item: TokenStream) -> TokenStream {
    kernel::expand(attr.into(), item.into()).into()
}

/// Registers existing functions as kernels, one row per `dispatch:` entry:
/// `register_kernels! { CPU, "add.Tensor", crate::kernels::cpu::add_Tensor; ... }`.
/// The runtime's build generates this from `native_functions.yaml`; each named
/// function must have the schema's signature.
#[proc_macro]
pub fn register_kernels(input: TokenStream) -> TokenStream {
    register::expand(input.into()).into()
}
