// `#[module(training)]` on a field that is not a `bool`.
use opforge::nn::Module;
use opforge::{Result, Tensor};

#[derive(Module)]
struct Net {
    w: Tensor,
    #[module(training)]
    mode: u8,
}

impl Module for Net {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        x.mul(&self.w)
    }
}

fn main() {}
