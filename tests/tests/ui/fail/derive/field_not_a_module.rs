// A field that is neither a tensor nor a module, and not skipped.
use opforge::nn::{self, Module};
use opforge::{Result, Tensor};

#[derive(Module)]
struct Net {
    fc: nn::Linear,
    width: usize,
}

impl Module for Net {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        self.fc.forward(x)
    }
}

fn main() {}
