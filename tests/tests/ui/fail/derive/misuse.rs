// A tuple struct, and an unknown `#[module(..)]` option.
use opforge::nn::Module;
use opforge::Tensor;

#[derive(Module)]
struct Pair(Tensor, Tensor);

#[derive(Module)]
struct Frozen {
    #[module(frozen)]
    w: Tensor,
}

fn main() {}
