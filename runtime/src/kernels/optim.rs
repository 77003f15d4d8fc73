//! The pointwise arithmetic of optimizers: `lerp.Scalar`, `addcmul`,
//! `addcdiv` (and their in-place and `out=` forms), with PyTorch's CPU element
//! formulas and messages. Device-agnostic, as the nn family: a meta input gets
//! the same checks and a meta result.
//!
//! Facts, from PyTorch's CPU kernels (checked against PyTorch 2.15 in
//! `runtime/tests/nn_ops.rs`):
//!
//! - `lerp` is `fma(w, end - self, self)` when `|w| < 0.5`, else
//!   `fma(w - 1, end - self, end)`, and `addcmul` is
//!   `fma(value * tensor1, tensor2, self)`: PyTorch's AVX2 build fuses both
//!   (the vector path calls `fmadd`; GCC contracts the scalar one); `addcdiv`
//!   is `self + value * tensor1 / tensor2`, unfused.

use super::dispatch_error;
use super::nn::{deliver_cast, with_float, Place, Real};
use super::promote::check_can_cast;
use super::promote::result_type_tensors;
use crate::at;
use crate::error::Result;
use crate::tensor::{DType, Scalar, Tensor};

/// The pointwise formulas of optimizers, with their scalar argument `v`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Formula {
    /// `addcmul(self, t1, t2, value)`: `fma(value * t1, t2, self)`.
    Addcmul,
    /// `addcdiv(self, t1, t2, value)`: `self + value * t1 / t2`.
    Addcdiv,
    /// `lerp(self, end, weight)`: `fma(w, end - self, self)` when `|w| < 0.5`,
    /// else `fma(w - 1, end - self, end)`.
    Lerp,
}

impl Formula {
    /// The name PyTorch's dtype dispatch reports.
    fn kernel_name(self) -> &'static str {
        match self {
            Formula::Addcmul => "addcmul_cpu_out",
            Formula::Addcdiv => "addcdiv_cpu_out",
            Formula::Lerp => "lerp_kernel_scalar",
        }
    }

    /// `addcmul`'s element: `fma(v * t1, t2, self)`.
    #[inline(always)]
    fn addcmul<T: Real>(s: T, t1: T, t2: T, v: T) -> T {
        (v * t1).fma(t2, s)
    }

    /// `addcdiv`'s element: `self + v * t1 / t2`.
    #[inline(always)]
    fn addcdiv<T: Real>(s: T, t1: T, t2: T, v: T) -> T {
        s + v * t1 / t2
    }

    /// `lerp`'s element (weight `w`).
    #[inline(always)]
    fn lerp<T: Real>(s: T, e: T, w: T) -> T {
        let d = e - s;
        if w.abs_() < T::of(0.5) {
            w.fma(d, s)
        } else {
            (w - T::ONE).fma(d, e)
        }
    }
}

/// `addcmul` / `addcdiv` (`self`, `tensor1`, `tensor2` broadcast and
/// promoted), into `into`.
pub(crate) fn addc(
    op: Formula,
    self_: &Tensor,
    tensor1: &Tensor,
    tensor2: &Tensor,
    value: Scalar,
    into: Place<'_>,
) -> Result<Tensor> {
    let ins = [self_, tensor1, tensor2];
    let dtype = result_type_tensors(ins);
    // PyTorch asks this of the two divided tensors alone (a float `self`
    // does not make integer division of its arguments acceptable).
    if op == Formula::Addcdiv
        && tensor1.dtype().is_integral(true)
        && tensor2.dtype().is_integral(true)
    {
        crate::bail!("Integer division with addcdiv is no longer supported, and in a future  release addcdiv will perform a true division of tensor1 and tensor2. The historic addcdiv behavior can be implemented as (input + value * torch.trunc(tensor1 / tensor2)).to(input.dtype) for integer inputs and as (input + value * tensor1 / tensor2) for float inputs. The future addcdiv behavior is just the latter implementation: (input + value * tensor1 / tensor2), for all dtypes.");
    }
    if op == Formula::Addcmul && dtype.is_integral(false) {
        // Integers: `self + value * t1 * t2` in the integer type (nothing to
        // fuse), the value converted to it as `Scalar::to<int64_t>` does.
        let v = Scalar::Int(value.to_i64());
        let product = at::mul_Tensor(&at::mul_Scalar(tensor1, v)?, tensor2)?;
        let r = at::add_Tensor(self_, &product, Scalar::Int(1))?;
        return finish(r, into);
    }
    pointwise(op, &ins, value, into)
}

/// `lerp.Scalar(self, end, weight)` into `into`: PyTorch's fused formula.
pub(crate) fn lerp_scalar(
    self_: &Tensor,
    end: &Tensor,
    weight: Scalar,
    into: Place<'_>,
) -> Result<Tensor> {
    crate::ensure!(
        self_.dtype() == end.dtype(),
        "expected dtype {} for `end` but got dtype {}",
        self_.dtype().typemeta_name(),
        end.dtype().typemeta_name()
    );
    pointwise(Formula::Lerp, &[self_, end], weight, into)
}

/// `op` over `ins` broadcast, computed in their promoted dtype by the
/// pointwise loop (`TensorIterator`'s checks and `out=` rules): a new tensor
/// (meta without computing), or written into `self` (in place) or `out`.
fn pointwise(op: Formula, ins: &[&Tensor], scalar: Scalar, into: Place<'_>) -> Result<Tensor> {
    use super::iter::{map2, map3};
    use super::pointwise::{Dest, Iter, Rule};
    use super::promote::Operand;
    let dest = match into {
        Place::New => Dest::New,
        Place::Inplace(s) => {
            debug_assert!(s.is_same(ins[0]), "in place into the first input");
            Dest::Inplace
        }
        Place::Out(o) => Dest::Out(o),
    };
    let it = Iter::build(
        ins.iter().map(|t| Operand::Tensor(t)).collect(),
        dest,
        Rule::Promote,
    )?;
    if it.is_meta() {
        return it.finish_meta();
    }
    with_float!(it.compute, op.kernel_name(), T => {
        let v = T::of(scalar.to_f64());
        // One monomorphic loop per formula (nothing matched per element).
        match op {
            Formula::Addcmul => it.run(|[s, a, b], o| map3(s, a, b, o, |x, y, z| Formula::addcmul::<T>(x, y, z, v))),
            Formula::Addcdiv => it.run(|[s, a, b], o| map3(s, a, b, o, |x, y, z| Formula::addcdiv::<T>(x, y, z, v))),
            Formula::Lerp => it.run(|[s, e], o| map2(s, e, o, |x, y| Formula::lerp::<T>(x, y, v))),
        }
    })
}

/// A pointwise kernel's last step: the new result, or it written into `self`
/// (in place) or `out`.
fn finish(r: Tensor, into: Place<'_>) -> Result<Tensor> {
    match into {
        Place::New => Ok(r),
        Place::Inplace(s) => {
            check_can_cast(r.dtype(), s.dtype())?;
            at::copy_(&mut s.clone(), &r, false)?;
            Ok(s.clone())
        }
        Place::Out(o) => deliver_cast(r, Some(o)),
    }
}

/// The optimizers' kernels, stamped into `cpu` and `meta` by
/// `backend_kernels!`.
macro_rules! optim_kernels {
    ($key:ident) => {
        use $crate::kernels::optim::{self as optim_impl, Formula};

        #[doc = concat!("`lerp.Scalar` (", stringify!($key), ").")]
        #[$crate::kernel($key)]
        pub fn lerp_Scalar(self_: &Tensor, end: &Tensor, weight: Scalar) -> Result<Tensor> {
            optim_impl::lerp_scalar(self_, end, weight, Place::New)
        }

        #[doc = concat!("`lerp_.Scalar` (", stringify!($key), ").")]
        #[$crate::kernel($key)]
        pub fn lerp__Scalar(self_: &mut Tensor, end: &Tensor, weight: Scalar) -> Result<Tensor> {
            let s = self_.clone();
            optim_impl::lerp_scalar(&s, end, weight, Place::Inplace(&s))
        }

        #[doc = concat!("`lerp.Scalar_out` (", stringify!($key), ").")]
        #[$crate::kernel($key)]
        pub fn lerp_Scalar_out(
            self_: &Tensor,
            end: &Tensor,
            weight: Scalar,
            out: &mut Tensor,
        ) -> Result<Tensor> {
            optim_impl::lerp_scalar(self_, end, weight, Place::Out(out))
        }

        $crate::kernels::optim::addc_kernels!($key;
            "addcmul": addcmul, addcmul_, addcmul_out => Addcmul;
            "addcdiv": addcdiv, addcdiv_, addcdiv_out => Addcdiv;
        );
    };
}

/// `addcmul` / `addcmul_` / `addcmul.out` and `addcdiv`'s three.
macro_rules! addc_kernels {
    ($key:ident; $($op:literal: $f:ident, $f_:ident, $f_out:ident => $kind:ident;)*) => {$(
        #[doc = concat!("`", $op, "` (", stringify!($key), ").")]
        #[$crate::kernel($key)]
        pub fn $f(self_: &Tensor, tensor1: &Tensor, tensor2: &Tensor, value: Scalar) -> Result<Tensor> {
            optim_impl::addc(Formula::$kind, self_, tensor1, tensor2, value, Place::New)
        }
        #[doc = concat!("`", $op, "_` (", stringify!($key), ").")]
        #[$crate::kernel($key)]
        pub fn $f_(self_: &mut Tensor, tensor1: &Tensor, tensor2: &Tensor, value: Scalar) -> Result<Tensor> {
            let s = self_.clone();
            optim_impl::addc(Formula::$kind, &s, tensor1, tensor2, value, Place::Inplace(&s))
        }
        #[doc = concat!("`", $op, ".out` (", stringify!($key), ").")]
        #[$crate::kernel($key)]
        pub fn $f_out(self_: &Tensor, tensor1: &Tensor, tensor2: &Tensor, value: Scalar, out: &mut Tensor) -> Result<Tensor> {
            optim_impl::addc(Formula::$kind, self_, tensor1, tensor2, value, Place::Out(out))
        }
    )*};
}

pub(crate) use {addc_kernels, optim_kernels};
