//! Activation modules: `ReLU`, `Tanh`, `Sigmoid`.

use super::module::{Module, ModuleCore};
use crate::error::Result;
use crate::tensor::Tensor;

macro_rules! activation {
    ($(#[$doc:meta])* $name:ident, |$x:ident| $body:expr) => {
        $(#[$doc])*
        pub struct $name {
            core: ModuleCore,
        }

        impl $name {
            /// The module (it has no parameters).
            pub fn new() -> $name {
                $name { core: ModuleCore::new() }
            }
        }

        impl Default for $name {
            fn default() -> $name {
                $name::new()
            }
        }

        impl Module for $name {
            fn forward(&self, $x: &Tensor) -> Result<Tensor> {
                $body
            }

            fn core(&self) -> &ModuleCore {
                &self.core
            }

            fn core_mut(&mut self) -> &mut ModuleCore {
                &mut self.core
            }
        }
    };
}

activation!(
    /// `max(x, 0)`, element-wise (PyTorch's `nn.ReLU`).
    ReLU,
    |x| x.relu()
);
activation!(
    /// `tanh(x)`, element-wise (PyTorch's `nn.Tanh`).
    Tanh,
    |x| x.tanh()
);
activation!(
    /// `1 / (1 + exp(-x))`, element-wise (PyTorch's `nn.Sigmoid`).
    Sigmoid,
    |x| x.sigmoid()
);
