// A kernel is one concrete, safe, synchronous free function returning `Result<T>`.
use opforge::{kernel, Result, Tensor};

#[kernel(Python, "neg")]
fn generic<T>(self_: &Tensor) -> Result<Tensor> {
    Ok(self_.clone())
}

#[kernel(Python, "neg")]
async fn asynchronous(self_: &Tensor) -> Result<Tensor> {
    Ok(self_.clone())
}

#[kernel(Python, "neg")]
fn impl_trait_param(self_: impl AsRef<Tensor>) -> Result<Tensor> {
    Ok(self_.as_ref().clone())
}

#[kernel(Python, "neg")]
fn impl_trait_return(self_: &Tensor) -> impl Into<Result<Tensor>> {
    Ok(self_.clone())
}

#[kernel(Python, "neg")]
unsafe fn not_safe(self_: &Tensor) -> Result<Tensor> {
    Ok(self_.clone())
}

#[kernel(Python, "neg")]
fn static_borrow(self_: &'static Tensor) -> Result<Tensor> {
    Ok(self_.clone())
}

#[kernel(Python, "neg")]
fn no_return(self_: &Tensor) {
    let _ = self_;
}

struct Kernels;

impl Kernels {
    #[kernel(Python, "neg")]
    fn method(&self) -> Result<Tensor> {
        unimplemented!()
    }
}

// The schema's `self` argument is spelled `self_`; `self` is Rust's receiver (rustc
// rejects it in a free function too).
#[kernel(Python, "neg")]
fn self_param(self: &Tensor) -> Result<Tensor> {
    Ok(self.clone())
}

fn main() {}
