//! Type promotion and broadcasting, as PyTorch's `at::native::result_type` and
//! `infer_size` define them.
//!
//! Promotion looks at operands in three priority classes: tensors with at least
//! one dimension, 0-dim tensors, and wrapped numbers (Python scalars). A lower
//! class only matters when it is of a higher *category* (bool < integral <
//! floating) than everything above it; then its dtype joins the promotion (a
//! wrapped float number joins as the default dtype, float32).

use super::fmt_shape;
use crate::error::Result;
use crate::tensor::{DType, Device, Scalar, Tensor};

/// One input of a pointwise operation: a tensor or a wrapped number.
#[derive(Clone, Copy, Debug)]
pub enum Operand<'a> {
    /// A tensor.
    Tensor(&'a Tensor),
    /// A Python number (what PyTorch calls a wrapped-number tensor).
    Scalar(Scalar),
}

impl Operand<'_> {
    /// The dtype this operand contributes to promotion before category rules: a
    /// wrapped number is `bool`, `int64` or the default float dtype `float32`.
    pub fn dtype(&self) -> DType {
        match self {
            Operand::Tensor(t) if t.is_wrapped_number() => match t.dtype() {
                DType::Bool => DType::Bool,
                d if d.is_floating_point() => DType::Float32,
                _ => DType::Int64,
            },
            Operand::Tensor(t) => t.dtype(),
            Operand::Scalar(Scalar::Bool(_)) => DType::Bool,
            Operand::Scalar(Scalar::Int(_)) => DType::Int64,
            Operand::Scalar(Scalar::Float(_)) => DType::Float32,
        }
    }

    /// The shape (`[]` for numbers).
    pub fn shape(&self) -> Vec<usize> {
        match self {
            Operand::Tensor(t) => t.shape(),
            Operand::Scalar(_) => Vec::new(),
        }
    }

    /// The device (numbers live on the CPU).
    pub fn device(&self) -> Device {
        match self {
            Operand::Tensor(t) => t.device(),
            Operand::Scalar(_) => Device::Cpu,
        }
    }

    /// The tensor, if this is one.
    pub fn tensor(&self) -> Option<&Tensor> {
        match self {
            Operand::Tensor(t) => Some(t),
            Operand::Scalar(_) => None,
        }
    }
}

/// PyTorch's `ResultTypeState`: the running promotion of each priority class.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ResultTypeState {
    /// Tensors with `dim() > 0`.
    pub dim_result: Option<DType>,
    /// 0-dim tensors.
    pub zero_result: Option<DType>,
    /// Wrapped numbers.
    pub wrapped_result: Option<DType>,
}

fn promote_opt(a: Option<DType>, b: DType) -> Option<DType> {
    Some(match a {
        None => b,
        Some(a) => DType::promote(a, b),
    })
}

impl ResultTypeState {
    /// Adds one operand.
    pub fn update(mut self, op: &Operand<'_>) -> Self {
        let d = op.dtype();
        match op {
            Operand::Scalar(_) => self.wrapped_result = promote_opt(self.wrapped_result, d),
            Operand::Tensor(t) if t.is_wrapped_number() => {
                self.wrapped_result = promote_opt(self.wrapped_result, d)
            }
            Operand::Tensor(t) if t.dim() > 0 => self.dim_result = promote_opt(self.dim_result, d),
            Operand::Tensor(_) => self.zero_result = promote_opt(self.zero_result, d),
        }
        self
    }

    /// The promoted dtype (`float32` if nothing was added, as PyTorch's
    /// undefined result never reaches a kernel).
    pub fn result(&self) -> DType {
        combine(
            self.dim_result,
            combine(self.zero_result, self.wrapped_result),
        )
        .unwrap_or(DType::Float32)
    }
}

/// `combine_categories(higher, lower)`: the lower class only participates when it
/// is floating while the higher is not, or when the higher is bool.
fn combine(higher: Option<DType>, lower: Option<DType>) -> Option<DType> {
    match (higher, lower) {
        (None, l) => l,
        (Some(h), None) => Some(h),
        (Some(h), Some(l)) => {
            if h.is_floating_point() {
                Some(h)
            } else if h == DType::Bool || l.is_floating_point() {
                Some(DType::promote(h, l))
            } else {
                Some(h)
            }
        }
    }
}

/// `torch.result_type` over operands.
pub fn result_type(ops: &[Operand<'_>]) -> DType {
    ops.iter()
        .fold(ResultTypeState::default(), |s, o| s.update(o))
        .result()
}

/// `torch.result_type` over tensors.
pub fn result_type_tensors<'a>(ts: impl IntoIterator<Item = &'a Tensor>) -> DType {
    ts.into_iter()
        .fold(ResultTypeState::default(), |s, t| {
            s.update(&Operand::Tensor(t))
        })
        .result()
}

/// `canCast(from, to)`: no float → integral, no non-bool → bool.
pub fn can_cast(from: DType, to: DType) -> bool {
    !(from.is_floating_point() && to.is_integral(false) || from != DType::Bool && to == DType::Bool)
}

/// The error PyTorch raises when a result cannot be written into an output.
pub fn check_can_cast(from: DType, to: DType) -> Result<()> {
    crate::ensure!(
        can_cast(from, to),
        "result type {} can't be cast to the desired output type {}",
        from.c10_name(),
        to.c10_name()
    );
    Ok(())
}

pub use crate::shape::broadcast_shapes;

/// The broadcast shape of several shapes, folded left to right as
/// `TensorIterator` does.
pub fn broadcast_all<'a>(shapes: impl IntoIterator<Item = &'a [usize]>) -> Result<Vec<usize>> {
    let mut acc: Option<Vec<usize>> = None;
    for s in shapes {
        acc = Some(match acc {
            None => s.to_vec(),
            Some(a) if a.as_slice() == s => a,
            Some(a) => broadcast_shapes(&a, s)?,
        });
    }
    Ok(acc.unwrap_or_default())
}

/// The message for an in-place / read-write output that broadcasting would
/// resize.
pub fn check_output_shape(out: &[usize], shape: &[usize]) -> Result<()> {
    crate::ensure!(
        out == shape,
        "output with shape {} doesn't match the broadcast shape {}",
        fmt_shape(out),
        fmt_shape(shape)
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use DType::*;

    fn t(dtype: DType, shape: &[usize]) -> Tensor {
        Tensor::zeros(shape, dtype, Device::Cpu)
    }

    #[test]
    fn dimensioned_tensors_promote_by_lattice() {
        let (a, b) = (t(Int32, &[2]), t(Int64, &[2]));
        assert_eq!(result_type_tensors([&a, &b]), Int64);
        let (a, b) = (t(Bool, &[2]), t(Float32, &[2]));
        assert_eq!(result_type_tensors([&a, &b]), Float32);
        let (a, b) = (t(Float32, &[2]), t(Float64, &[3]));
        assert_eq!(result_type_tensors([&a, &b]), Float64);
    }

    #[test]
    fn zero_dim_tensors_only_matter_across_categories() {
        // Same category: the dimensioned tensor wins.
        let (a, b) = (t(Float32, &[2, 3]), t(Float64, &[]));
        assert_eq!(result_type_tensors([&a, &b]), Float32);
        let (a, b) = (t(Int32, &[4]), t(Int64, &[]));
        assert_eq!(result_type_tensors([&b, &a]), Int32);
        // Higher category: its dtype joins.
        let (a, b) = (t(Int32, &[2]), t(Float64, &[]));
        assert_eq!(result_type_tensors([&a, &b]), Float64);
        let (a, b) = (t(Bool, &[2]), t(Int32, &[]));
        assert_eq!(result_type_tensors([&a, &b]), Int32);
        // Only 0-dim tensors: ordinary promotion.
        let (a, b) = (t(Float64, &[]), t(Float32, &[]));
        assert_eq!(result_type_tensors([&a, &b]), Float64);
    }

    #[test]
    fn wrapped_numbers_use_default_dtypes() {
        let i32t = t(Int32, &[4]);
        let f = |s: Scalar| result_type(&[Operand::Tensor(&i32t), Operand::Scalar(s)]);
        assert_eq!(f(Scalar::Int(2)), Int32);
        assert_eq!(f(Scalar::Float(1.5)), Float32);
        assert_eq!(f(Scalar::Bool(true)), Int32);
        let b = t(Bool, &[3]);
        let g = |s: Scalar| result_type(&[Operand::Tensor(&b), Operand::Scalar(s)]);
        assert_eq!(g(Scalar::Int(2)), Int64);
        assert_eq!(g(Scalar::Float(0.5)), Float32);
        assert_eq!(g(Scalar::Bool(true)), Bool);
        let f64t = t(Float64, &[]);
        let h = result_type(&[Operand::Tensor(&f64t), Operand::Scalar(Scalar::Float(1.0))]);
        assert_eq!(h, Float64);
        let i64z = t(Int64, &[]);
        let k = result_type(&[Operand::Tensor(&i64z), Operand::Scalar(Scalar::Float(1.0))]);
        assert_eq!(k, Float32);
    }

    #[test]
    fn casting_rules() {
        assert!(can_cast(Int64, Float32));
        assert!(can_cast(Float64, Float32));
        assert!(!can_cast(Float32, Int64));
        assert!(!can_cast(Int64, Bool));
        assert!(can_cast(Bool, Bool));
        assert!(!can_cast(Float32, Bool));
        assert_eq!(
            check_can_cast(Float32, Int64).unwrap_err().to_string(),
            "result type Float can't be cast to the desired output type Long"
        );
    }

    #[test]
    fn broadcasting() {
        assert_eq!(broadcast_shapes(&[2, 1], &[1, 3]).unwrap(), vec![2, 3]);
        assert_eq!(broadcast_shapes(&[], &[2, 3]).unwrap(), vec![2, 3]);
        assert_eq!(broadcast_shapes(&[0, 3], &[3]).unwrap(), vec![0, 3]);
        assert_eq!(
            broadcast_shapes(&[2, 1, 3], &[4, 1]).unwrap(),
            vec![2, 4, 3]
        );
        assert_eq!(
            broadcast_shapes(&[3], &[4]).unwrap_err().to_string(),
            "The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 0"
        );
        assert_eq!(
            broadcast_shapes(&[2, 3], &[2, 4]).unwrap_err().to_string(),
            "The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 1"
        );
        let shapes: [&[usize]; 3] = [&[2, 1, 3], &[4, 1], &[3]];
        assert_eq!(broadcast_all(shapes).unwrap(), vec![2, 4, 3]);
        assert_eq!(
            check_output_shape(&[3], &[2, 3]).unwrap_err().to_string(),
            "output with shape [3] doesn't match the broadcast shape [2, 3]"
        );
    }
}
