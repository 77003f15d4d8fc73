//! Pointwise operators: a small `TensorIterator` ([`Iter`]) that broadcasts the
//! inputs, applies the dtype rule of the operator (promotion, integer → float,
//! comparison, same-dtype), checks or resizes the output, and then the element
//! functions of each family, stamped per dtype. Results and intermediates are
//! allocated fallibly (`crate::tensor::alloc`), after the output's size was
//! checked; a written output is checked for memory overlap first.

// Element functions are stamped for `bool` too, where `<` is legitimate.
#![allow(clippy::bool_comparison)]

use super::num::{scalar_equals, Float, Num};
use super::promote::{
    broadcast_all, check_can_cast, check_output_shape, result_type, result_type_tensors, Operand,
};
use super::{
    dispatch_error, not_implemented, overlap, read_broadcastable, resize_output, scalar_to,
    typemeta_name,
};
use crate::error::{Error, Result};
use crate::tensor::{alloc as memory, numel, DType, Device, Element, IntoBuffer, Scalar, Tensor};
use crate::{float_dtype, with_dtype};
use ndarray::{ArrayD, ArrayViewD, IxDyn};

/// Where the result goes.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Dest<'a> {
    /// A new tensor.
    New,
    /// An `out=` tensor (resized if it has another shape, unless it is also an
    /// input).
    Out(&'a Tensor),
    /// The first input (in-place).
    Inplace,
}

/// How the output dtype follows from the inputs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Rule {
    /// Promote the inputs; the result must be castable to the output.
    Promote,
    /// Promote, then integral and bool → the default float dtype.
    PromoteFloat,
    /// Compute in the promoted dtype; the result is bool (or any `out=` dtype).
    Compare,
    /// Compute in this dtype; an output must have exactly this dtype.
    Exact(DType),
}

/// One pointwise computation: broadcast shape, dtypes and the output.
pub(crate) struct Iter<'a> {
    ops: Vec<Operand<'a>>,
    pub shape: Vec<usize>,
    pub compute: DType,
    pub result: DType,
    pub device: Device,
    out: Option<Tensor>,
}

impl<'a> Iter<'a> {
    /// Checks memory overlap, shapes and dtypes in `TensorIterator::build`'s
    /// order (overlap, shape, types) and resizes a write-only `out=` tensor.
    pub fn build(ops: Vec<Operand<'a>>, dest: Dest<'a>, rule: Rule) -> Result<Self> {
        match dest {
            Dest::New => {}
            Dest::Out(o) => overlap::check_writes(o, ops.iter().filter_map(Operand::tensor))?,
            Dest::Inplace => {
                if let Some(o) = ops[0].tensor() {
                    overlap::check_writes(o, ops.iter().filter_map(Operand::tensor))?;
                }
            }
        }
        let (out, read_write) = match dest {
            Dest::New => (None, false),
            Dest::Out(t) => (
                Some(t.clone()),
                ops.iter().any(|o| o.tensor().is_some_and(|x| x.is_same(t))),
            ),
            Dest::Inplace => (ops[0].tensor().cloned(), true),
        };
        let shapes: Vec<Vec<usize>> = ops.iter().map(|o| o.shape()).collect();
        let shape = broadcast_all(shapes.iter().map(|s| s.as_slice()))?;
        if let (Some(o), true) = (&out, read_write) {
            check_output_shape(&o.shape(), &shape)?;
        }
        let common = result_type(&ops);
        let out_dtype = out.as_ref().map(|o| o.dtype());
        let (compute, result) = match rule {
            Rule::Promote | Rule::PromoteFloat => {
                let c = if rule == Rule::PromoteFloat && !common.is_floating_point() {
                    DType::Float32
                } else {
                    common
                };
                if let Some(o) = out_dtype {
                    check_can_cast(c, o)?;
                }
                (c, out_dtype.unwrap_or(c))
            }
            Rule::Compare => (common, out_dtype.unwrap_or(DType::Bool)),
            Rule::Exact(d) => {
                if let Some(o) = out_dtype {
                    crate::ensure!(
                        o == d,
                        "Found dtype {} but expected {}",
                        o.c10_name(),
                        d.c10_name()
                    );
                }
                (d, d)
            }
        };
        let device = if ops.iter().any(|o| o.device() == Device::Meta)
            || out.as_ref().is_some_and(|o| o.device() == Device::Meta)
        {
            Device::Meta
        } else {
            Device::Cpu
        };
        match (&out, read_write) {
            (Some(o), false) => resize_output(o, &shape)?,
            (None, _) => super::check_alloc(&shape, result, device)?,
            _ => {}
        }
        Ok(Iter {
            ops,
            shape,
            compute,
            result,
            device,
            out,
        })
    }

    /// Nothing to compute (meta tensors)?
    pub fn is_meta(&self) -> bool {
        self.device == Device::Meta
    }

    /// The output without values (meta).
    pub fn finish_meta(self) -> Result<Tensor> {
        match self.out {
            Some(o) => Ok(o),
            None => Tensor::try_zeros(&self.shape, self.result, Device::Meta),
        }
    }

    /// Input `i` converted to `T` (numbers with C++ cast rules), as an array
    /// that broadcasts to the iteration shape (an expanded input is read once
    /// per distinct element, see `read_broadcastable`).
    pub fn input<T: IntoBuffer>(&self, i: usize) -> Result<ArrayD<T>> {
        match self.ops[i] {
            Operand::Tensor(t) => read_broadcastable::<T>(t),
            Operand::Scalar(s) => Ok(ArrayD::from_elem(IxDyn(&[]), T::from_scalar(s))),
        }
    }

    /// Writes the computed values (of the broadcast shape, or broadcasting to
    /// it) to the output.
    pub fn finish<R: IntoBuffer>(self, values: ArrayD<R>) -> Result<Tensor> {
        let values = if values.shape() == self.shape.as_slice() {
            values
        } else {
            map1(&values, &self.shape, |x| x)?
        };
        match self.out {
            Some(o) => {
                if o.numel() > 0 {
                    o.assign(values.view())?;
                }
                Ok(o)
            }
            None => {
                let t = Tensor::from_array(values);
                if t.dtype() == self.result {
                    Ok(t)
                } else {
                    t.to_dtype_copy(self.result)
                }
            }
        }
    }
}

fn bcast<'x, T>(a: &'x ArrayD<T>, shape: &[usize]) -> Result<ArrayViewD<'x, T>> {
    a.broadcast(IxDyn(shape)).ok_or_else(|| {
        Error::Runtime(format!("cannot broadcast {:?} to {shape:?}", a.shape()).into())
    })
}

/// An array of `shape` (standard layout) from its elements in logical order,
/// allocated fallibly.
pub(crate) fn collect_array<R>(
    shape: &[usize],
    items: impl Iterator<Item = R>,
) -> Result<ArrayD<R>> {
    let v = memory::try_collect(numel(shape), items)?;
    ArrayD::from_shape_vec(IxDyn(shape), v).map_err(|e| Error::Runtime(e.to_string().into()))
}

/// `f` over every element of `a`, into a new array (allocated fallibly).
pub(crate) fn map_array<A: Copy, R>(a: &ArrayD<A>, f: impl Fn(A) -> R) -> Result<ArrayD<R>> {
    collect_array(a.shape(), a.iter().map(|&x| f(x)))
}

/// `f` over two arrays broadcast to `shape`.
pub(crate) fn zip2<A: Copy, B: Copy, R>(
    a: &ArrayD<A>,
    b: &ArrayD<B>,
    shape: &[usize],
    f: impl Fn(A, B) -> R,
) -> Result<ArrayD<R>> {
    let (a, b) = (bcast(a, shape)?, bcast(b, shape)?);
    collect_array(shape, a.iter().zip(b.iter()).map(|(&x, &y)| f(x, y)))
}

/// `f` over three arrays broadcast to `shape`.
pub(crate) fn zip3<A: Copy, B: Copy, C: Copy, R>(
    a: &ArrayD<A>,
    b: &ArrayD<B>,
    c: &ArrayD<C>,
    shape: &[usize],
    f: impl Fn(A, B, C) -> R,
) -> Result<ArrayD<R>> {
    let (a, b, c) = (bcast(a, shape)?, bcast(b, shape)?, bcast(c, shape)?);
    let items = a.iter().zip(b.iter()).zip(c.iter());
    collect_array(shape, items.map(|((&x, &y), &z)| f(x, y, z)))
}

/// `f` over one array broadcast to `shape`.
fn map1<A: Copy, R>(a: &ArrayD<A>, shape: &[usize], f: impl Fn(A) -> R) -> Result<ArrayD<R>> {
    collect_array(shape, bcast(a, shape)?.iter().map(|&x| f(x)))
}

fn nan<T: Element>() -> T {
    T::from_f64(f64::NAN)
}

/// Binary arithmetic operators.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum BinOp {
    /// `self + alpha * other`
    Add,
    /// `self - alpha * other`
    Sub,
    /// `self * other`
    Mul,
    /// true division (integers promote to float)
    Div,
    /// `rounding_mode='trunc'`
    DivTrunc,
    /// `rounding_mode='floor'`
    DivFloor,
    /// `maximum`
    Maximum,
    /// `minimum`
    Minimum,
    /// `pow(Tensor, Tensor)`
    Pow,
}

fn sub_check(a: DType, b: DType) -> Result<()> {
    if a == DType::Bool && b == DType::Bool {
        return Err(not_implemented(
            "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or `logical_xor()` operator instead.",
        ));
    }
    if a == DType::Bool || b == DType::Bool {
        return Err(not_implemented(
            "Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.",
        ));
    }
    Ok(())
}

fn alpha_check(dtype: DType, alpha: Scalar) -> Result<()> {
    crate::ensure!(
        !matches!(alpha, Scalar::Bool(_)) || dtype == DType::Bool,
        "Boolean alpha only supported for Boolean results."
    );
    crate::ensure!(
        dtype.is_floating_point() || !matches!(alpha, Scalar::Float(_)),
        "For integral input tensors, argument alpha must not be a floating point number."
    );
    Ok(())
}

/// Parses `div`'s `rounding_mode`.
pub(crate) fn div_mode(rounding_mode: Option<&str>) -> Result<BinOp> {
    match rounding_mode {
        None => Ok(BinOp::Div),
        Some("trunc") => Ok(BinOp::DivTrunc),
        Some("floor") => Ok(BinOp::DivFloor),
        Some(m) => crate::bail!(
            "div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '{m}'"
        ),
    }
}

/// A binary arithmetic operator (`alpha` only matters for add/sub).
pub(crate) fn binary(
    op: BinOp,
    a: Operand<'_>,
    b: Operand<'_>,
    alpha: Scalar,
    dest: Dest<'_>,
) -> Result<Tensor> {
    if op == BinOp::Sub {
        sub_check(a.dtype(), b.dtype())?;
    }
    let rule = if op == BinOp::Div {
        Rule::PromoteFloat
    } else {
        Rule::Promote
    };
    let it = Iter::build(vec![a, b], dest, rule)?;
    if matches!(op, BinOp::Add | BinOp::Sub) {
        alpha_check(it.compute, alpha)?;
    }
    if it.is_meta() {
        return it.finish_meta();
    }
    if it.compute == DType::Bool {
        match op {
            BinOp::Pow => return Err(dispatch_error("pow", DType::Bool)),
            BinOp::DivTrunc => return Err(dispatch_error("div_trunc_cpu", DType::Bool)),
            BinOp::DivFloor => return Err(dispatch_error("div_floor_cpu", DType::Bool)),
            _ => {}
        }
    }
    let shape = it.shape.clone();
    if let Some(t) = binary_fast(op, &it, alpha)? {
        return Ok(t);
    }
    with_dtype!(it.compute, T => {
        let (x, y) = (it.input::<T>(0)?, it.input::<T>(1)?);
        if matches!(op, BinOp::DivTrunc | BinOp::DivFloor)
            && T::DTYPE.is_integral(false)
            && y.iter().any(|&v| v == T::zero())
        {
            crate::bail!("ZeroDivisionError");
        }
        let r: ArrayD<T> = match op {
            BinOp::Add => {
                let al: T = scalar_to(alpha)?;
                zip2(&x, &y, &shape, |p, q| p.add(al.mul(q)))?
            }
            BinOp::Sub => {
                let al: T = scalar_to(alpha)?;
                zip2(&x, &y, &shape, |p, q| p.sub(al.mul(q)))?
            }
            BinOp::Mul => zip2(&x, &y, &shape, T::mul)?,
            BinOp::Div => float_div(&x, &y, &shape)?,
            BinOp::DivTrunc => zip2(&x, &y, &shape, T::trunc_div)?,
            BinOp::DivFloor => zip2(&x, &y, &shape, T::floor_div)?,
            BinOp::Maximum => zip2(&x, &y, &shape, T::max_nan)?,
            BinOp::Minimum => zip2(&x, &y, &shape, T::min_nan)?,
            BinOp::Pow => zip2(&x, &y, &shape, T::power)?,
        };
        it.finish(r)
    })
}

/// The common case without ndarray: two contiguous tensors of the broadcast shape,
/// both already of the compute dtype, into a fresh output of that dtype. `None`
/// when the call is not of that shape (the general path handles it); the values
/// are those of the general path (same element functions).
fn binary_fast(op: BinOp, it: &Iter<'_>, alpha: Scalar) -> Result<Option<Tensor>> {
    let (Operand::Tensor(a), Operand::Tensor(b)) = (&it.ops[0], &it.ops[1]) else {
        return Ok(None);
    };
    let plain = |t: &Tensor| t.dtype() == it.compute && t.is_contiguous() && t.shape() == it.shape;
    if it.out.is_some() || it.result != it.compute || !plain(a) || !plain(b) {
        return Ok(None);
    }
    with_dtype!(it.compute, T => {
        let r: Option<Vec<T>> = match op {
            BinOp::Add => {
                let al: T = scalar_to(alpha)?;
                contiguous_zip(a, b, |p: T, q: T| p.add(al.mul(q)))?
            }
            BinOp::Sub => {
                let al: T = scalar_to(alpha)?;
                contiguous_zip(a, b, |p: T, q: T| p.sub(al.mul(q)))?
            }
            BinOp::Mul => contiguous_zip(a, b, T::mul)?,
            BinOp::Maximum => contiguous_zip(a, b, T::max_nan)?,
            BinOp::Minimum => contiguous_zip(a, b, T::min_nan)?,
            _ => None,
        };
        Ok(match r {
            Some(v) => Some(Tensor::from_vec(v, &it.shape)?),
            None => None,
        })
    })
}

/// `f` over the elements of two contiguous tensors of the same shape and element
/// type `T` (one read lock per storage; one when they share it).
fn contiguous_zip<T: IntoBuffer, R>(
    a: &Tensor,
    b: &Tensor,
    f: impl Fn(T, T) -> R,
) -> Result<Option<Vec<R>>> {
    let (ga, gb) = (a.geometry(), b.geometry());
    let n: usize = ga.shape.iter().product();
    let zip = |x: &[T], y: &[T]| memory::try_collect(n, x.iter().zip(y).map(|(&p, &q)| f(p, q)));
    let la = ga.storage.read();
    let Some(xa) = T::slice(&la).and_then(|d| d.get(ga.offset..ga.offset + n)) else {
        return Ok(None);
    };
    if ga.storage.ptr_eq(&gb.storage) {
        let Some(xb) = T::slice(&la).and_then(|d| d.get(gb.offset..gb.offset + n)) else {
            return Ok(None);
        };
        return zip(xa, xb).map(Some);
    }
    let lb = gb.storage.read();
    let Some(xb) = T::slice(&lb).and_then(|d| d.get(gb.offset..gb.offset + n)) else {
        return Ok(None);
    };
    zip(xa, xb).map(Some)
}

/// True division in a floating dtype (the only dtypes it is computed in).
fn float_div<T: Num>(x: &ArrayD<T>, y: &ArrayD<T>, shape: &[usize]) -> Result<ArrayD<T>> {
    float_dtype!(T::DTYPE, F => {
        let (x, y) = (map_array(x, crate::tensor::cast::<T, F>)?, map_array(y, crate::tensor::cast::<T, F>)?);
        map_array(&zip2(&x, &y, shape, F::div)?, crate::tensor::cast::<F, T>)
    }, _ => crate::bail!("true division computed in {}", T::DTYPE))
}

/// Comparison operators.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Cmp {
    /// `==`
    Eq,
    /// `!=`
    Ne,
    /// `>=`
    Ge,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `<`
    Lt,
}

/// A comparison: computed in the promoted dtype, bool result.
pub(crate) fn compare(op: Cmp, a: Operand<'_>, b: Operand<'_>, dest: Dest<'_>) -> Result<Tensor> {
    let it = Iter::build(vec![a, b], dest, Rule::Compare)?;
    if it.is_meta() {
        return it.finish_meta();
    }
    let shape = it.shape.clone();
    with_dtype!(it.compute, T => {
        let (x, y) = (it.input::<T>(0)?, it.input::<T>(1)?);
        let r = match op {
            Cmp::Eq => zip2(&x, &y, &shape, |p: T, q: T| p == q)?,
            Cmp::Ne => zip2(&x, &y, &shape, |p: T, q: T| p != q)?,
            Cmp::Ge => zip2(&x, &y, &shape, |p: T, q: T| p >= q)?,
            Cmp::Le => zip2(&x, &y, &shape, |p: T, q: T| p <= q)?,
            Cmp::Gt => zip2(&x, &y, &shape, |p: T, q: T| p > q)?,
            Cmp::Lt => zip2(&x, &y, &shape, |p: T, q: T| p < q)?,
        };
        it.finish(r)
    })
}

/// Unary operators.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Unary {
    /// `neg`
    Neg,
    /// `abs`
    Abs,
    /// `relu` (`clamp_min(self, 0)`)
    Relu,
    /// `sin`
    Sin,
    /// `cos`
    Cos,
    /// `tanh`
    Tanh,
    /// `exp`
    Exp,
    /// `log`
    Log,
    /// `sqrt`
    Sqrt,
    /// `sigmoid`
    Sigmoid,
}

/// A unary operator. Neg, abs and relu keep the dtype (`out=` must match it);
/// the others compute in float (integers → float32).
pub(crate) fn unary(op: Unary, self_: &Tensor, dest: Dest<'_>) -> Result<Tensor> {
    let dtype = self_.dtype();
    let rule = match op {
        Unary::Neg => {
            if dtype == DType::Bool {
                return Err(not_implemented("Negation, the `-` operator, on a bool tensor is not supported. If you are trying to invert a mask, use the `~` or `logical_not()` operator instead."));
            }
            Rule::Exact(dtype)
        }
        Unary::Relu => {
            if dtype == DType::Bool {
                return Err(not_implemented("Boolean inputs not supported for relu"));
            }
            Rule::Exact(dtype)
        }
        Unary::Abs => Rule::Exact(dtype),
        _ => Rule::PromoteFloat,
    };
    let it = Iter::build(vec![Operand::Tensor(self_)], dest, rule)?;
    if it.is_meta() {
        return it.finish_meta();
    }
    if op == Unary::Abs && dtype == DType::Bool {
        return Err(dispatch_error("abs_cpu", dtype));
    }
    let shape = it.shape.clone();
    match op {
        Unary::Neg | Unary::Abs | Unary::Relu => with_dtype!(it.compute, T => {
            let x = it.input::<T>(0)?;
            let r = match op {
                Unary::Neg => map1(&x, &shape, T::neg)?,
                Unary::Abs => map1(&x, &shape, T::absolute)?,
                _ => map1(&x, &shape, |a: T| if a < T::zero() { T::zero() } else { a })?,
            };
            it.finish(r)
        }),
        _ => float_dtype!(it.compute, T => {
            let x = it.input::<T>(0)?;
            let f: fn(T) -> T = match op {
                Unary::Sin => T::sin,
                Unary::Cos => T::cos,
                Unary::Tanh => T::tanh,
                Unary::Exp => T::exp,
                Unary::Log => T::ln,
                Unary::Sqrt => T::sqrt,
                _ => |a: T| T::one().div(T::one().add(a.neg().exp())),
            };
            it.finish(map1(&x, &shape, f)?)
        }, _ => crate::bail!("{op:?} computed in {}", it.compute)),
    }
}

/// `clamp(self, min, max)` with scalar bounds.
pub(crate) fn clamp(
    self_: &Tensor,
    min: Option<Scalar>,
    max: Option<Scalar>,
    dest: Dest<'_>,
) -> Result<Tensor> {
    crate::ensure!(
        min.is_some() || max.is_some(),
        "torch.clamp: At least one of 'min' or 'max' must not be None"
    );
    let mut rt = self_.dtype();
    if !rt.is_floating_point() {
        let mut ops = vec![Operand::Tensor(self_)];
        ops.extend(min.map(Operand::Scalar));
        ops.extend(max.map(Operand::Scalar));
        rt = result_type(&ops);
        let inplace = match dest {
            Dest::Inplace => true,
            Dest::Out(o) => o.is_same(self_),
            Dest::New => false,
        };
        crate::ensure!(
            rt == self_.dtype() || !inplace,
            "result type {} can't be cast to the desired output type {}",
            rt.c10_name(),
            typemeta_name(self_.dtype())
        );
    }
    let it = Iter::build(vec![Operand::Tensor(self_)], dest, Rule::Exact(rt))?;
    if it.is_meta() {
        return it.finish_meta();
    }
    if rt == DType::Bool {
        let name = match (min, max) {
            (Some(_), Some(_)) => "clamp_scalar_cpu",
            (Some(_), None) => "clamp_min_scalar_cpu",
            _ => "clamp_max_scalar_cpu",
        };
        return Err(dispatch_error(name, rt));
    }
    let is_nan = |s: Option<Scalar>| matches!(s, Some(Scalar::Float(x)) if x.is_nan());
    let nan_bound = is_nan(min) || is_nan(max);
    let shape = it.shape.clone();
    with_dtype!(rt, T => {
        let x = it.input::<T>(0)?;
        let r = if nan_bound {
            collect_array(&shape, std::iter::repeat_n(nan::<T>(), numel(&shape)))?
        } else {
            let lo: Option<T> = min.map(scalar_to).transpose()?;
            let hi: Option<T> = max.map(scalar_to).transpose()?;
            map1(&x, &shape, |a: T| {
                let a = match lo {
                    Some(l) if a < l => l,
                    _ => a,
                };
                match hi {
                    Some(h) if h < a => h,
                    _ => a,
                }
            })?
        };
        it.finish(r)
    })
}

/// `clamp(self, min, max)` with tensor bounds (promoted together).
pub(crate) fn clamp_tensor(
    self_: &Tensor,
    min: Option<&Tensor>,
    max: Option<&Tensor>,
    dest: Dest<'_>,
) -> Result<Tensor> {
    crate::ensure!(
        min.is_some() || max.is_some(),
        "torch.clamp: At least one of 'min' or 'max' must not be None"
    );
    let mut ops = vec![Operand::Tensor(self_)];
    ops.extend(min.map(Operand::Tensor));
    ops.extend(max.map(Operand::Tensor));
    let it = Iter::build(ops, dest, Rule::Promote)?;
    if it.is_meta() {
        return it.finish_meta();
    }
    if min.is_some() && max.is_some() && it.compute == DType::Bool {
        return Err(dispatch_error("clamp_cpu", DType::Bool));
    }
    let shape = it.shape.clone();
    with_dtype!(it.compute, T => {
        let x = it.input::<T>(0)?;
        let r = match (min, max) {
            (Some(_), Some(_)) => {
                let (lo, hi) = (it.input::<T>(1)?, it.input::<T>(2)?);
                zip3(&x, &lo, &hi, &shape, |a: T, l: T, h: T| {
                    if l.is_nan() || h.is_nan() {
                        nan::<T>()
                    } else {
                        let a = if a < l { l } else { a };
                        if h < a { h } else { a }
                    }
                })?
            }
            (Some(_), None) => zip2(&x, &it.input::<T>(1)?, &shape, T::max_nan)?,
            _ => zip2(&x, &it.input::<T>(1)?, &shape, T::min_nan)?,
        };
        it.finish(r)
    })
}

/// `pow(self, exponent)` with a scalar exponent.
pub(crate) fn pow_scalar(self_: &Tensor, exponent: Scalar, dest: Dest<'_>) -> Result<Tensor> {
    crate::ensure!(
        !(self_.dtype().is_integral(true) && matches!(exponent, Scalar::Int(e) if e < 0)),
        "Integers to negative integer powers are not allowed."
    );
    let rt = result_type(&[Operand::Tensor(self_), Operand::Scalar(exponent)]);
    let it = Iter::build(vec![Operand::Tensor(self_)], dest, Rule::Exact(rt))?;
    if it.is_meta() {
        return it.finish_meta();
    }
    let shape = it.shape.clone();
    let zero = scalar_equals(exponent, 0.0) || exponent == Scalar::Bool(false);
    let one = scalar_equals(exponent, 1.0) || exponent == Scalar::Bool(true);
    with_dtype!(rt, T => {
        let x = it.input::<T>(0)?;
        let r: ArrayD<T> = if zero {
            collect_array(&shape, std::iter::repeat_n(T::one(), numel(&shape)))?
        } else if one {
            x
        } else if rt == DType::Bool {
            return Err(dispatch_error("pow", rt));
        } else if rt.is_floating_point() {
            pow_float(&x, exponent.to_f64())?
        } else {
            let e: T = scalar_to(exponent)?;
            map_array(&x, |v| v.power(e))?
        };
        it.finish(r)
    })
}

fn pow_float<T: Num>(x: &ArrayD<T>, e: f64) -> Result<ArrayD<T>> {
    float_dtype!(T::DTYPE, F => {
        let x = map_array(x, crate::tensor::cast::<T, F>)?;
        let ef = F::of(e);
        let r = if e == 0.5 {
            map_array(&x, F::sqrt)?
        } else if e == -0.5 {
            map_array(&x, |v| F::one().div(v.sqrt()))?
        } else if e == -1.0 {
            map_array(&x, |v| F::one().div(v))?
        } else if e == 2.0 {
            map_array(&x, |v| v.mul(v))?
        } else if e == 3.0 {
            map_array(&x, |v| v.mul(v).mul(v))?
        } else if e == -2.0 {
            map_array(&x, |v| F::one().div(v.mul(v)))?
        } else {
            map_array(&x, |v| v.power(ef))?
        };
        map_array(&r, crate::tensor::cast::<F, T>)
    }, _ => crate::bail!("float pow computed in {}", T::DTYPE))
}

/// `where(condition, self, other)`.
pub(crate) fn where_self(condition: &Tensor, self_: &Tensor, other: &Tensor) -> Result<Tensor> {
    let rt = result_type_tensors([self_, other]);
    crate::ensure!(
        condition.dtype() == DType::Bool,
        "where expected condition to be a boolean tensor, but got a tensor with dtype {}",
        condition.dtype().c10_name()
    );
    let ops = vec![
        Operand::Tensor(condition),
        Operand::Tensor(self_),
        Operand::Tensor(other),
    ];
    let it = Iter::build(ops, Dest::New, Rule::Exact(rt))?;
    if it.is_meta() {
        return it.finish_meta();
    }
    let shape = it.shape.clone();
    with_dtype!(rt, T => {
        let c = it.input::<bool>(0)?;
        let (a, b) = (it.input::<T>(1)?, it.input::<T>(2)?);
        let r = zip3(&c, &a, &b, &shape, |c, a: T, b: T| if c { a } else { b })?;
        it.finish(r)
    })
}
