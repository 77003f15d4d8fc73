//! A minimal `torch.nn`: the [`Module`] trait and its registry, `Linear`
//! (through the custom [`LinearFunction`] of PyTorch's "Extending torch.autograd" notes), `Sequential`, `ReLU`,
//! `Tanh`, `Sigmoid`, [`init`] and [`functional`].
//!
//! ```
//! use opforge::nn::{self, Module};
//! use opforge::Tensor;
//! opforge::manual_seed(0);
//! let model = nn::Sequential::new()
//!     .append(nn::Linear::new(4, 8, true)?)
//!     .append(nn::Tanh::new())
//!     .append(nn::Linear::new(8, 3, true)?);
//! let x = Tensor::from_vec(vec![0.5f32; 8], &[2, 4])?;
//! let y = model.forward(&x)?;
//! assert_eq!(y.shape(), vec![2, 3]);
//! assert_eq!(model.parameters().len(), 4);
//! # Ok::<(), opforge::Error>(())
//! ```

mod activation;
mod container;
pub mod functional;
pub mod init;
mod linear;
mod module;
mod weights;

pub use activation::{ReLU, Sigmoid, Tanh};
pub use container::Sequential;
pub use linear::{linear, Linear, LinearFunction};
pub(crate) use module::zero_grads;
pub use module::{
    load_state_dict, module_repr, IncompatibleKeys, Member, MemberMut, Module, ModuleCore,
    ModuleMembers, StateDict,
};
pub use opforge_macros::Module;

/// What `#[derive(Module)]`'s output calls: a field as a tensor member or as
/// a child module, with the derive's message for a field that is neither.
#[doc(hidden)]
pub mod derive {
    use super::Module;
    use crate::tensor::Tensor;

    /// A parameter or buffer field: `Tensor`, or `Option<Tensor>` when it
    /// may be absent.
    #[diagnostic::on_unimplemented(
        message = "`{Self}` is not a tensor: a `#[derive(Module)]` parameter or buffer is a `Tensor` or an `Option<Tensor>`",
        label = "not `Tensor` or `Option<Tensor>`"
    )]
    pub trait TensorField {
        /// The tensor, if present.
        fn tensor(&self) -> Option<&Tensor>;
    }

    impl TensorField for Tensor {
        fn tensor(&self) -> Option<&Tensor> {
            Some(self)
        }
    }

    impl TensorField for Option<Tensor> {
        fn tensor(&self) -> Option<&Tensor> {
            self.as_ref()
        }
    }

    /// A child module field.
    #[diagnostic::on_unimplemented(
        message = "`{Self}` is neither a tensor nor a module: a `#[derive(Module)]` field is a `Tensor` or `Option<Tensor>` (a parameter, or with `#[module(buffer)]` a buffer), a type implementing `Module` (a child), or marked `#[module(skip)]`",
        label = "not a tensor or a module"
    )]
    pub trait ModuleField {
        /// The field as a module.
        fn as_module(&self) -> &dyn Module;
        /// The field as a module, to change.
        fn as_module_mut(&mut self) -> &mut dyn Module;
    }

    impl<M: Module> ModuleField for M {
        fn as_module(&self) -> &dyn Module {
            self
        }
        fn as_module_mut(&mut self) -> &mut dyn Module {
            self
        }
    }
}

macro_rules! display_as_module {
    ($($t:ty),*) => {
        $(
            impl std::fmt::Display for $t {
                fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                    f.write_str(&module_repr(self))
                }
            }

            impl std::fmt::Debug for $t {
                fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                    f.write_str(&module_repr(self))
                }
            }
        )*
    };
}

display_as_module!(Linear, Sequential, ReLU, Tanh, Sigmoid);
