// `#[module(buffer)]` on a field that is not a tensor.
use opforge::nn::{self, Module};
use opforge::{Result, Tensor};

#[derive(Module)]
struct Net {
    fc: nn::Linear,
    #[module(buffer)]
    steps: Vec<f32>,
}

impl Module for Net {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        self.fc.forward(x)
    }
}

fn main() {}
