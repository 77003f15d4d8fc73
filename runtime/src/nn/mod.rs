//! A minimal `torch.nn`: the [`Module`] trait and its registry, `Linear`
//! (through the seed's custom [`LinearFunction`]), `Sequential`, `ReLU`,
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
pub use module::{load_state_dict, module_repr, IncompatibleKeys, Module, ModuleCore, StateDict};

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
