//! Activation modules: `ReLU`, `Tanh`, `Sigmoid`.

use super::module::{Member, MemberMut, Module, ModuleCore, ModuleMembers};
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

        impl ModuleMembers for $name {
            fn members<'a>(&'a self, f: &mut dyn FnMut(Member<'a>)) {
                self.core.members(f)
            }

            fn members_mut(&mut self, f: &mut dyn FnMut(MemberMut<'_>)) {
                self.core.members_mut(f)
            }
        }

        impl Module for $name {
            fn forward(&self, $x: &Tensor) -> Result<Tensor> {
                $body
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
