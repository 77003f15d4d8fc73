//! `nn::Sequential`.

use super::module::{Module, ModuleCore};
use crate::error::Result;
use crate::tensor::Tensor;

/// Modules run one after the other (PyTorch's `nn.Sequential`); the children
/// are named `"0"`, `"1"`, … so their state is under `"0.weight"`.
pub struct Sequential {
    core: ModuleCore,
}

impl Sequential {
    /// An empty sequence (it passes its input through).
    pub fn new() -> Sequential {
        Sequential {
            core: ModuleCore::new(),
        }
    }

    /// Appends `module` and returns the sequence (PyTorch's `append`,
    /// builder style).
    pub fn append(mut self, module: impl Module + 'static) -> Sequential {
        self.push(Box::new(module));
        self
    }

    /// Appends `module`.
    pub fn push(&mut self, module: Box<dyn Module>) {
        let name = self.len().to_string();
        // A decimal index is never empty, dotted or taken.
        let _ = self.core.add_module(&name, module);
    }

    /// How many modules.
    pub fn len(&self) -> usize {
        self.core.children().count()
    }

    /// No modules?
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The module at `index`.
    pub fn get(&self, index: usize) -> Option<&dyn Module> {
        self.core.children().nth(index).map(|(_, m)| m)
    }
}

impl Default for Sequential {
    fn default() -> Sequential {
        Sequential::new()
    }
}

impl Module for Sequential {
    fn forward(&self, input: &Tensor) -> Result<Tensor> {
        let mut x = input.clone();
        for (_, m) in self.core.children() {
            x = m.forward(&x)?;
        }
        Ok(x)
    }

    fn core(&self) -> &ModuleCore {
        &self.core
    }

    fn core_mut(&mut self) -> &mut ModuleCore {
        &mut self.core
    }
}
