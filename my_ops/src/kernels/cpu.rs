//! `CPU:` kernels.

use opforge::{kernel, Result, Scalar, Tensor};

/// `mylib::scale` (CPU): `self * k`.
#[kernel(CPU)]
pub fn scale(self_: &Tensor, k: f64) -> Result<Tensor> {
    opforge::at::mul_Scalar(self_, Scalar::Float(k))
}

/// `mylib::wsq` (CPU): `weight * self * self`.
#[kernel(CPU)]
pub fn wsq(self_: &Tensor, weight: &Tensor) -> Result<Tensor> {
    opforge::at::mul_Tensor(weight, &opforge::at::mul_Tensor(self_, self_)?)
}

use std::sync::atomic::{AtomicUsize, Ordering};

/// How many times this crate's CPU `abs` kernel ran (tests read it).
pub static ABS_CALLS: AtomicUsize = AtomicUsize::new(0);

/// `abs` (CPU): opforge's operator, with a CPU kernel from this crate.
#[kernel(CPU)]
pub fn abs(self_: &Tensor) -> Result<Tensor> {
    ABS_CALLS.fetch_add(1, Ordering::Relaxed);
    let neg = opforge::at::neg(self_)?;
    opforge::at::maximum(self_, &neg)
}

/// `mylib::for_each_add` (CPU): the schema's `__torch__.torch.classes.mylib.Queue`
/// argument is taken as the `Queue` inside the object.
#[kernel(CPU)]
pub fn for_each_add(q: &crate::queue::Queue, inc: &Tensor) -> Result<()> {
    q.for_each_add_(inc.clone())
}
