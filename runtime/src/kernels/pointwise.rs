//! Pointwise operators: [`Iter`] broadcasts the inputs, applies the dtype rule
//! of the operator (promotion, integer → float, comparison, same-dtype), checks
//! or resizes the output, and runs the element functions of each family,
//! stamped per dtype, through the iteration engine (`super::iter`: dimension
//! order, output strides, per-block casting, threads). Results are allocated
//! fallibly (`crate::tensor::alloc`), after the output's size was checked; a
//! written output is checked for memory overlap first.

// Element functions are stamped for `bool` too, where `<` is legitimate.
#![allow(clippy::bool_comparison)]

use super::iter::{map1, map2, map3, output_strides, BlockFn, Loop, Out, Src, View, Written};
use super::num::{scalar_equals, Float, Num};
use super::promote::{
    broadcast_shapes, check_can_cast, check_output_shape, result_type, result_type_tensors, Operand,
};
use super::vmath::VecMath;
use super::{dispatch_error, not_implemented, overlap, resize_output, scalar_to};
use crate::error::Result;
use crate::tensor::{
    alloc as memory, numel, DType, Device, Element, Geometry, IntoBuffer, Scalar, Tensor,
};
use crate::{float_dtype, with_dtype};
use std::sync::atomic::{AtomicBool, Ordering};

/// The inputs of a pointwise operation (at most three, inline).
pub(crate) type Ops<'a> = smallvec::SmallVec<[Operand<'a>; 3]>;

/// The broadcast shape of the operands (numbers are 0-dim), reading each
/// tensor's shape in place.
fn broadcast_operands(ops: &[Operand<'_>]) -> Result<crate::tensor::Dims> {
    let mut acc: Option<crate::tensor::Dims> = None;
    for op in ops {
        let Operand::Tensor(t) = op else {
            acc.get_or_insert_with(Default::default);
            continue;
        };
        acc = Some(t.with_geometry(|g| -> Result<crate::tensor::Dims> {
            Ok(match acc.take() {
                None => crate::tensor::Dims::from_slice(&g.shape),
                Some(a) if a == g.shape => a,
                Some(a) => broadcast_shapes(&a, &g.shape)?.into_iter().collect(),
            })
        })?);
    }
    Ok(acc.unwrap_or_default())
}

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
    ops: Ops<'a>,
    pub shape: crate::tensor::Dims,
    pub compute: DType,
    pub result: DType,
    pub device: Device,
    out: Option<Tensor>,
}

impl<'a> Iter<'a> {
    /// Checks memory overlap, shapes and dtypes in `TensorIterator::build`'s
    /// order (overlap, shape, types) and resizes a write-only `out=` tensor.
    pub fn build(ops: Ops<'a>, dest: Dest<'a>, rule: Rule) -> Result<Self> {
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
        let shape = broadcast_operands(&ops)?;
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
            (Some(o), false) if o.shape().as_slice() != shape.as_slice() => {
                resize_output(o, &shape)?;
                restride_like_inputs(o, &ops, &shape)?;
            }
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

    /// Runs `kernel` over the elements (`N` inputs read as `T`, results of
    /// `R` converted to the output's dtype) into the output: the `out=` or
    /// in-place tensor, or a new one laid out as `TensorIterator` lays it out
    /// (following the inputs' memory order).
    pub fn run<const N: usize, T: IntoBuffer, R: IntoBuffer>(
        self,
        kernel: impl Fn([Src<'_, T>; N], Out<'_, R>) -> Written + Sync,
    ) -> Result<Tensor> {
        self.run_block_fn(&kernel)
    }

    /// [`Iter::run`], compiled once per arity and element types.
    fn run_block_fn<const N: usize, T: IntoBuffer, R: IntoBuffer>(
        self,
        kernel: &BlockFn<'_, N, T, R>,
    ) -> Result<Tensor> {
        debug_assert_eq!(self.ops.len(), N);
        if let Some(t) = self.run_contiguous::<N, T, R>(kernel)? {
            return Ok(t);
        }
        let inputs = Inputs::of(&self.ops);
        let views: smallvec::SmallVec<[View<'_>; 3]> = inputs.0.iter().map(Input::view).collect();
        if let Some(out) = self.out {
            let og = out.geometry();
            Loop::new(&self.shape, (&og, out.dtype()), &views, true).run::<N, T, R>(kernel)?;
            return Ok(out);
        }
        // A new result, laid out as TensorIterator lays it out.
        let strides = output_strides(&self.shape, &inputs.layouts());
        if self.device == Device::Cpu && R::DTYPE == self.result {
            // Of the kernel's type: written straight into fresh capacity.
            let data = Loop::fresh(&self.shape, &strides, self.result, &views)?
                .run_fresh::<N, T, R>(kernel)?;
            let len = data.len();
            return Tensor::from_vec(data, &[len])?.strided_view(&self.shape, &strides, 0);
        }
        let t = super::empty_strided(&self.shape, &strides, self.result, self.device)?;
        let og = t.geometry();
        Loop::new(&self.shape, (&og, t.dtype()), &views, false).run::<N, T, R>(kernel)?;
        Ok(t)
    }
}

impl Iter<'_> {
    /// The common case without the general loop: a new output, every tensor
    /// input contiguous with the output's shape and of the compute type (and
    /// the result of the output's dtype), so the kernel runs on the storages'
    /// slices directly. `None` when the call is not of that form.
    fn run_contiguous<const N: usize, T: IntoBuffer, R: IntoBuffer>(
        &self,
        kernel: &BlockFn<'_, N, T, R>,
    ) -> Result<Option<Tensor>> {
        if self.out.is_some() || R::DTYPE != self.result {
            return Ok(None);
        }
        let n = numel(&self.shape);
        // (storage, offset) per tensor operand.
        let mut parts: smallvec::SmallVec<[Option<(crate::tensor::Storage, usize)>; 3]> =
            smallvec::SmallVec::new();
        for op in &self.ops {
            match op {
                Operand::Scalar(_) => parts.push(None),
                Operand::Tensor(t) => {
                    if t.dtype() != T::DTYPE {
                        return Ok(None);
                    }
                    let part = t.with_geometry(|g| {
                        (g.shape.as_slice() == self.shape.as_slice()
                            && crate::tensor::is_contiguous_strides(&g.shape, &g.strides))
                        .then(|| (g.storage.clone(), g.offset))
                    });
                    match part {
                        Some(p) => parts.push(Some(p)),
                        None => return Ok(None),
                    }
                }
            }
        }
        let storages: smallvec::SmallVec<[&crate::tensor::Storage; 3]> =
            parts.iter().flatten().map(|(s, _)| s).collect();
        let guards = crate::tensor::StorageLocks::new(&storages, None);
        let mut srcs: smallvec::SmallVec<[Src<'_, T>; 3]> = smallvec::SmallVec::new();
        for (op, part) in self.ops.iter().zip(&parts) {
            match (op, part) {
                (Operand::Scalar(s), _) => srcs.push(Src::Scalar(T::from_scalar(*s))),
                (_, Some((storage, offset))) => {
                    let data = guards
                        .read(storage)
                        .and_then(T::slice)
                        .and_then(|d| d.get(*offset..offset + n));
                    match data {
                        Some(d) => srcs.push(Src::Slice(d)),
                        None => return Ok(None),
                    }
                }
                _ => return Ok(None),
            }
        }
        let srcs: [Src<'_, T>; N] = std::array::from_fn(|i| srcs[i]);
        new_from_blocks(srcs, &self.shape, kernel).map(Some)
    }
}

/// Bytes of a new result initialised and written at a time: half of L1, so a
/// block stays in cache between the two passes, and few enough kernel calls
/// that their cost does not show (the general loop's blocks are smaller:
/// they are gathered into stack buffers).
const NEW_BLOCK_BYTES: usize = 16 * 1024;

/// A new contiguous tensor of `shape` from `kernel` over contiguous sources
/// (each a run of the result's length, or one value), block by block, on
/// several threads above the grain size.
fn new_from_blocks<const N: usize, T: Copy + Sync, R: IntoBuffer>(
    srcs: [Src<'_, T>; N],
    shape: &[usize],
    kernel: &BlockFn<'_, N, T, R>,
) -> Result<Tensor> {
    // The result is written once, block by block, by the thread that owns the
    // block, straight into fresh capacity (no pass of zeros over memory the
    // kernel overwrites), while the block is in that thread's cache.
    let n = numel(shape);
    let mut out: Vec<R> = memory::try_with_capacity(n)?;
    let spare = &mut out.spare_capacity_mut()[..n];
    let block = (NEW_BLOCK_BYTES / std::mem::size_of::<R>().max(1)).max(1);
    crate::parallel::for_each_part_mut(spare, crate::parallel::GRAIN_SIZE, |start, part| {
        let mut at = 0;
        while at < part.len() {
            let len = block.min(part.len() - at);
            let lo = start + at;
            let block: [Src<'_, T>; N] = std::array::from_fn(|i| match srcs[i] {
                Src::Slice(d) => Src::Slice(&d[lo..lo + len]),
                s => s,
            });
            // The token proves the kernel wrote all `len` slots (`Out`'s
            // writers write the whole block or panic).
            let _: Written = kernel(block, Out::fresh(&mut part[at..at + len]));
            at += len;
        }
    });
    // SAFETY: `for_each_part_mut` hands out parts covering `0..n` exactly once
    // (tested in `parallel`), the blocks of each part cover it, and the kernel
    // wrote each block in full (its `Written` token); the capacity is at
    // least `n`.
    unsafe { out.set_len(n) };
    // `n` elements for `shape`; the sizes are checked there (a broadcast of
    // valid shapes may multiply beyond `int64` when it is empty).
    Tensor::from_buffer(
        R::into_buffer(out),
        shape,
        R::DTYPE,
        crate::tensor::Device::Cpu,
    )
}

/// `self_` converted to `dtype` as a new contiguous tensor, element by element
/// with C++ cast rules, when `self_` is a contiguous CPU tensor (else `None`):
/// written once into fresh capacity (`_to_copy`'s fast path).
pub(crate) fn convert_contiguous(self_: &Tensor, dtype: DType) -> Result<Option<Tensor>> {
    let Some((storage, offset, shape)) = self_.with_geometry(|g| {
        crate::tensor::is_contiguous_strides(&g.shape, &g.strides).then(|| {
            (
                g.storage.clone(),
                g.offset,
                crate::tensor::Dims::from_slice(&g.shape),
            )
        })
    }) else {
        return Ok(None);
    };
    if self_.device() != Device::Cpu {
        return Ok(None);
    }
    let n = numel(&shape);
    let guard = storage.read();
    with_dtype!(self_.dtype(), S => {
        let Some(x) = S::slice(&guard).and_then(|d| d.get(offset..offset + n)) else {
            return Ok(None);
        };
        with_dtype!(dtype, D => {
            new_from_blocks([Src::Slice(x)], &shape, &|[a], o| {
                map1(a, o, crate::tensor::cast::<S, D>)
            })
            .map(Some)
        })
    })
}

/// The operands' geometries, read once.
enum Input {
    Tensor(Geometry, DType),
    Number(Scalar),
}

impl Input {
    fn view(&self) -> View<'_> {
        match self {
            Input::Tensor(g, d) => View::Tensor(g, *d),
            Input::Number(s) => View::Number(*s),
        }
    }
}

struct Inputs(smallvec::SmallVec<[Input; 3]>);

impl Inputs {
    fn of(ops: &[Operand<'_>]) -> Inputs {
        Inputs(
            ops.iter()
                .map(|o| match o {
                    Operand::Tensor(t) => Input::Tensor(t.geometry(), t.dtype()),
                    Operand::Scalar(s) => Input::Number(*s),
                })
                .collect(),
        )
    }

    /// `(shape, strides)` per operand (`([], [])` for a number).
    fn layouts(&self) -> smallvec::SmallVec<[(&[usize], &[usize]); 3]> {
        self.0
            .iter()
            .map(|i| match i {
                Input::Tensor(g, _) => (g.shape.as_slice(), g.strides.as_slice()),
                Input::Number(_) => (&[][..], &[][..]),
            })
            .collect()
    }
}

/// Gives a just-resized `out=` tensor the strides `TensorIterator` would give
/// a new output (`resize_out` restrides only what it resized).
fn restride_like_inputs(out: &Tensor, ops: &[Operand<'_>], shape: &[usize]) -> Result<()> {
    let inputs = Inputs::of(ops);
    let strides = output_strides(shape, &inputs.layouts());
    let g = out.geometry();
    if g.strides.as_slice() != strides.as_slice() {
        out.set_geometry(Geometry {
            strides: crate::tensor::Dims::from_slice(&strides),
            ..g
        })?;
    }
    Ok(())
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
    /// `bitwise_and` (integers and bool)
    BitAnd,
    /// `bitwise_or` (integers and bool)
    BitOr,
    /// `bitwise_xor` (integers and bool)
    BitXor,
    /// `fmod`: C's remainder, with the sign of `self`
    Fmod,
    /// `remainder`: Python's modulo, with the sign of `other`
    Remainder,
    /// `atan2(self, other)` (integers and bool promote to float)
    Atan2,
}

impl BinOp {
    /// The name `AT_DISPATCH_*` reports for a dtype the operator's CPU kernel
    /// has no version of (aten/src/ATen/native/cpu/BinaryOpsKernel.cpp).
    fn kernel_name(self) -> &'static str {
        match self {
            BinOp::BitAnd => "bitwise_and_cpu",
            BinOp::BitOr => "bitwise_or_cpu",
            BinOp::BitXor => "bitwise_xor_cpu",
            BinOp::Fmod => "fmod_cpu",
            BinOp::Remainder => "remainder_cpu",
            BinOp::DivTrunc => "div_trunc_cpu",
            BinOp::DivFloor => "div_floor_cpu",
            _ => "pow",
        }
    }
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
    if let (Dest::Inplace, Operand::Tensor(s), Operand::Tensor(o)) = (&dest, a, b) {
        if s.device() == crate::tensor::Device::Meta {
            meta_inplace_broadcast(&s.shape(), &o.shape())?;
        }
    }
    if let Some(r) = binary_plain(op, a, b, alpha, dest) {
        return r;
    }
    if op == BinOp::Sub {
        sub_check(a.dtype(), b.dtype())?;
    }
    let rule = if matches!(op, BinOp::Div | BinOp::Atan2) {
        Rule::PromoteFloat
    } else {
        Rule::Promote
    };
    let it = Iter::build(smallvec::smallvec![a, b], dest, rule)?;
    if matches!(op, BinOp::Add | BinOp::Sub) {
        alpha_check(it.compute, alpha)?;
    }
    if it.is_meta() {
        return it.finish_meta();
    }
    if it.compute == DType::Bool
        && matches!(
            op,
            BinOp::Pow | BinOp::DivTrunc | BinOp::DivFloor | BinOp::Fmod | BinOp::Remainder
        )
    {
        return Err(dispatch_error(op.kernel_name(), DType::Bool));
    }
    match op {
        BinOp::BitAnd | BinOp::BitOr | BinOp::BitXor => return bitwise(op, it),
        BinOp::Fmod | BinOp::Remainder => return modulo(op, it),
        // atan2 of the values as f64 (musl's, within 1 ulp), rounded once.
        BinOp::Atan2 => {
            return float_dtype!(it.compute, F => it.run(|[a, b], o| map2(a, b, o, |y: F, x: F| {
                F::of(libm::atan2(Element::to_f64(y), Element::to_f64(x)))
            })), _ => crate::bail!("atan2 computed in {}", it.compute))
        }
        _ => {}
    }
    let zero_division = AtomicBool::new(false);
    let r = with_dtype!(it.compute, T => {
        let al: T = if matches!(op, BinOp::Add | BinOp::Sub) { scalar_to(alpha)? } else { T::one() };
        let unit = al == T::one();
        let int_div = T::DTYPE.is_integral(false);
        // Integer division by zero: PyTorch raises from inside its loop.
        let divide = |p: T, q: T, f: fn(T, T) -> T| {
            if int_div && q == T::zero() {
                zero_division.store(true, Ordering::Relaxed);
            }
            f(p, q)
        };
        match op {
            BinOp::Add if unit => it.run(|[a, b], o| map2(a, b, o, |p: T, q: T| p.add(q))),
            BinOp::Add => it.run(|[a, b], o| map2(a, b, o, |p: T, q: T| p.add(al.mul(q)))),
            BinOp::Sub if unit => it.run(|[a, b], o| map2(a, b, o, |p: T, q: T| p.sub(q))),
            BinOp::Sub => it.run(|[a, b], o| map2(a, b, o, |p: T, q: T| p.sub(al.mul(q)))),
            BinOp::Mul => it.run(|[a, b], o| map2(a, b, o, T::mul)),
            BinOp::Div => float_dtype!(T::DTYPE, F => {
                it.run(|[a, b], o| map2(a, b, o, F::div))
            }, _ => crate::bail!("true division computed in {}", T::DTYPE)),
            BinOp::DivTrunc => it.run(|[a, b], o| map2(a, b, o, |p: T, q: T| divide(p, q, T::trunc_div))),
            BinOp::DivFloor => it.run(|[a, b], o| map2(a, b, o, |p: T, q: T| divide(p, q, T::floor_div))),
            BinOp::Maximum => it.run(|[a, b], o| map2(a, b, o, T::max_nan)),
            BinOp::Minimum => it.run(|[a, b], o| map2(a, b, o, T::min_nan)),
            BinOp::Pow => float_dtype!(T::DTYPE, F => it.run(|[a, b], o| match (a, b) {
                (Src::Slice(x), Src::Slice(y)) => o.with_slice(F::zero(), |o| <F as VecMath>::pow(x, y, o)),
                (Src::Slice(x), Src::Scalar(y)) => o.with_slice(F::zero(), |o| <F as VecMath>::pow_scalar(x, y, o)),
                (a, b) => map2(a, b, o, F::power),
            }), _ => it.run(|[a, b], o| map2(a, b, o, T::power))),
            BinOp::BitAnd | BinOp::BitOr | BinOp::BitXor | BinOp::Fmod | BinOp::Remainder | BinOp::Atan2 => {
                crate::bail!("{op:?} runs its own loop")
            }
        }
    })?;
    if zero_division.load(Ordering::Relaxed) {
        crate::bail!("ZeroDivisionError");
    }
    Ok(r)
}

/// `bitwise_and` / `bitwise_or` / `bitwise_xor` in the promoted dtype: bool
/// and the integers (the dispatch of `bitwise_and_kernel` and the like in
/// aten/src/ATen/native/cpu/BinaryOpsKernel.cpp); a float is PyTorch's
/// dispatch error.
fn bitwise(op: BinOp, it: Iter<'_>) -> Result<Tensor> {
    macro_rules! run {
        ($t:ty) => {
            match op {
                BinOp::BitAnd => it.run(|[a, b], o| map2(a, b, o, |p: $t, q: $t| p & q)),
                BinOp::BitOr => it.run(|[a, b], o| map2(a, b, o, |p: $t, q: $t| p | q)),
                _ => it.run(|[a, b], o| map2(a, b, o, |p: $t, q: $t| p ^ q)),
            }
        };
    }
    match it.compute {
        DType::Bool => run!(bool),
        DType::Int32 => run!(i32),
        DType::Int64 => run!(i64),
        d => Err(dispatch_error(op.kernel_name(), d)),
    }
}

/// `fmod` (the remainder of truncated division, the sign of `self`) and
/// `remainder` (of floored division, the sign of `other`), as
/// `fmod_kernel` / `remainder_kernel` in
/// aten/src/ATen/native/cpu/BinaryOpsKernel.cpp compute them: an integer
/// divisor 0 is PyTorch's `ZeroDivisionError`; a float one gives NaN.
fn modulo(op: BinOp, it: Iter<'_>) -> Result<Tensor> {
    let zero_division = AtomicBool::new(false);
    let floored = op == BinOp::Remainder;
    macro_rules! int {
        ($t:ty) => {
            it.run(|[a, b], o| {
                map2(a, b, o, |p: $t, q: $t| {
                    if q == 0 {
                        zero_division.store(true, Ordering::Relaxed);
                        return 0;
                    }
                    // `wrapping_rem`: MIN % -1 is 0 (C++'s `%` has no value there).
                    let r = p.wrapping_rem(q);
                    if floored && r != 0 && ((r < 0) != (q < 0)) {
                        r + q
                    } else {
                        r
                    }
                })
            })
        };
    }
    macro_rules! float {
        ($t:ty) => {
            it.run(|[a, b], o| {
                map2(a, b, o, |p: $t, q: $t| {
                    // Rust's `%` on floats is C's `fmod`.
                    let r = p % q;
                    if floored && r != 0.0 && ((q < 0.0) != (r < 0.0)) {
                        r + q
                    } else {
                        r
                    }
                })
            })
        };
    }
    let r = match it.compute {
        DType::Int32 => int!(i32),
        DType::Int64 => int!(i64),
        DType::Float32 => float!(f32),
        DType::Float64 => float!(f64),
        d => return Err(dispatch_error(op.kernel_name(), d)),
    }?;
    if zero_division.load(Ordering::Relaxed) {
        crate::bail!("ZeroDivisionError");
    }
    Ok(r)
}

/// `pow(self, exponent)` with a number `self` (`pow.Scalar`, PyTorch's
/// `TORCH_IMPL_FUNC(pow_Scalar_out)` in aten/src/ATen/native/Pow.cpp): the
/// dtype of `result_type(self, exponent)`; ones when `self` is 1, else
/// `pow.Tensor_Tensor` of the number and the tensor.
pub(crate) fn pow_scalar_base(self_: Scalar, exponent: &Tensor, dest: Dest<'_>) -> Result<Tensor> {
    if !scalar_equals(self_, 1.0) {
        return binary(
            BinOp::Pow,
            Operand::Scalar(self_),
            Operand::Tensor(exponent),
            Scalar::Int(1),
            dest,
        );
    }
    let ops = smallvec::smallvec![Operand::Scalar(self_), Operand::Tensor(exponent)];
    let it = Iter::build(ops, dest, Rule::Promote)?;
    if it.is_meta() {
        return it.finish_meta();
    }
    with_dtype!(it.compute, T => {
        it.run(|[_a, _b]: [Src<'_, T>; 2], o: Out<'_, T>| o.fill(T::one()))
    })
}

/// PyTorch's check of an in-place binary operator on meta tensors (its
/// Python meta kernel, `torch/_refs`'s `_make_inplace` over
/// `_broadcast_shapes`, which fake tensors and functionalization run): the
/// operand broadcasts to `self`'s shape, in that code's words.
pub(crate) fn meta_inplace_broadcast(self_: &[usize], other: &[usize]) -> Result<()> {
    use crate::pyfmt::repr_tuple as python_tuple;
    use crate::tensor::torch_size;
    let n = self_.len().max(other.len());
    let mut common = vec![1usize; n];
    for (arg, shape) in [self_, other].into_iter().enumerate() {
        for k in 1..=shape.len() {
            let (s, c) = (shape[shape.len() - k], &mut common[n - k]);
            if s == *c {
                continue;
            }
            if *c == 1 {
                *c = s;
            }
            if s != 1 && *c != s {
                crate::bail!(
                    "Attempting to broadcast a dimension of length {s} at -{k}! Mismatching argument at index {arg} had {}; but expected shape should be broadcastable to {common:?}",
                    torch_size(shape)
                );
            }
        }
    }
    crate::ensure!(
        common == self_,
        "output with shape {} doesn't match the broadcast shape {}",
        torch_size(self_),
        python_tuple(&common)
    );
    Ok(())
}

/// The commonest calls on the shortest path: `add`, `sub`, `mul` or (in a
/// floating dtype) `div` of a plain contiguous CPU tensor and either a tensor
/// of its shape and dtype or a Python number that does not promote it (a float
/// with a floating tensor, an int with any), into a new tensor or in place,
/// with an `alpha` the dtype accepts. The element functions are the general
/// path's, so are the values; `None` for any other call (including every call
/// that is an error), which takes the general path.
fn binary_plain(
    op: BinOp,
    a: Operand<'_>,
    b: Operand<'_>,
    alpha: Scalar,
    dest: Dest<'_>,
) -> Option<Result<Tensor>> {
    let (Operand::Tensor(a), Operand::Tensor(b)) = (a, b) else {
        return None;
    };
    let in_place = match dest {
        Dest::New => false,
        Dest::Inplace => true,
        Dest::Out(_) => return None,
    };
    let dtype = a.dtype();
    let alpha_ok = match alpha {
        Scalar::Bool(_) => false,
        Scalar::Float(_) => dtype.is_floating_point(),
        Scalar::Int(_) => true,
    };
    let op_ok = match op {
        BinOp::Add | BinOp::Sub | BinOp::Mul => true,
        BinOp::Div => dtype.is_floating_point(),
        _ => false,
    };
    if !op_ok
        || !alpha_ok
        || dtype == DType::Bool
        || a.is_wrapped_number()
        || a.device() != Device::Cpu
        || b.device() != Device::Cpu
    {
        return None;
    }
    let contiguous = |g: &Geometry| crate::tensor::is_contiguous_strides(&g.shape, &g.strides);
    let (sa, oa, shape) = a.with_geometry(|g| {
        contiguous(g).then(|| {
            (
                g.storage.clone(),
                g.offset,
                crate::tensor::Dims::from_slice(&g.shape),
            )
        })
    })?;
    let rhs = if b.is_wrapped_number() {
        let number = b.with_geometry(|g| match &*g.storage.read() {
            crate::tensor::Buffer::F64(v) if dtype.is_floating_point() => {
                v.get(g.offset).map(|&x| Scalar::Float(x))
            }
            crate::tensor::Buffer::I64(v) => v.get(g.offset).map(|&x| Scalar::Int(x)),
            _ => None,
        })?;
        Rhs::Number(number)
    } else if b.dtype() == dtype {
        b.with_geometry(|g| {
            (contiguous(g) && same_dims(&g.shape, &shape))
                .then(|| Rhs::Elements(g.storage.clone(), g.offset))
        })?
    } else {
        return None;
    };
    let plain = Plain {
        a: (&sa, oa),
        b: &rhs,
        shape: &shape,
    };
    let r = if op == BinOp::Div {
        float_dtype!(dtype, F => plain.run(in_place, |[a, b], o| map2(a, b, o, F::div)), _ => None)
    } else {
        with_dtype!(dtype, T => {
            let al: T = match scalar_to(alpha) {
                Ok(v) => v,
                Err(e) => return Some(Err(e)),
            };
            plain.run(in_place, |[a, b], o| plain_arith(op, al, a, b, o))
        })
    };
    r.map(|r| r.map(|t| t.unwrap_or_else(|| a.clone())))
}

/// The right operand of a [`binary_plain`] call.
enum Rhs {
    /// A tensor's elements: its storage and offset (the left operand's shape,
    /// contiguous).
    Elements(crate::tensor::Storage, usize),
    /// A Python number.
    Number(Scalar),
}

impl Rhs {
    /// The storage it reads, if it is a tensor's.
    fn storage(&self) -> Option<&crate::tensor::Storage> {
        match self {
            Rhs::Elements(s, _) => Some(s),
            Rhs::Number(_) => None,
        }
    }

    /// Its `n` values in compute type `T`; a tensor's are read from the
    /// locked buffer `buffer` gives for its storage.
    fn src<'b, T: Num>(
        &self,
        buffer: impl FnOnce(&crate::tensor::Storage) -> Option<&'b crate::tensor::Buffer>,
        n: usize,
    ) -> Option<Src<'b, T>> {
        Some(match self {
            Rhs::Elements(s, offset) => Src::Slice(T::slice(buffer(s)?)?.get(*offset..offset + n)?),
            Rhs::Number(x) => Src::Scalar(T::from_scalar(*x)),
        })
    }
}

/// Equal sizes, compared element by element (a one- or two-dimensional
/// shape is compared in a few instructions, not through a `memcmp` call).
fn same_dims(a: &[usize], b: &[usize]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x == y)
}

/// The operands of a [`binary_plain`] call: the left one's storage and
/// offset, the right one, the shape.
struct Plain<'a> {
    a: (&'a crate::tensor::Storage, usize),
    b: &'a Rhs,
    shape: &'a [usize],
}

/// Elements up to which [`binary_plain`] takes an in-place call (beyond, the
/// general loop's fixed cost is small beside the work).
const SMALL_IN_PLACE: usize = 4096;

/// Elements of the left operand an in-place [`binary_plain`] call copies at a
/// time (on the stack), so that nothing is read and written through two
/// references at once.
const IN_PLACE_CHUNK: usize = 64;

impl Plain<'_> {
    /// Runs `kernel` over the elements: into a new tensor (`Some`), or in
    /// place into the left operand (`None`). `None` (outer) when the call is
    /// not of this kind after all.
    fn run<T: Num + Sync>(
        &self,
        in_place: bool,
        kernel: impl Fn([Src<'_, T>; 2], Out<'_, T>) -> Written + Sync,
    ) -> Option<Result<Option<Tensor>>> {
        let n = numel(self.shape);
        let (sa, oa) = self.a;
        let sb = self.b.storage();
        if in_place {
            if n > SMALL_IN_PLACE || sb.is_some_and(|sb| sb.ptr_eq(sa)) {
                return None;
            }
            let reads: smallvec::SmallVec<[&crate::tensor::Storage; 1]> = sb.into_iter().collect();
            let mut guards = crate::tensor::StorageLocks::new(&reads, Some(sa));
            let (written, reads) = guards.parts();
            let o = T::slice_mut(written?)?.get_mut(oa..oa + n)?;
            let y = self.b.src(|s| reads.get(s), n)?;
            let mut old = [T::zero(); IN_PLACE_CHUNK];
            for (k, o) in o.chunks_mut(IN_PLACE_CHUNK).enumerate() {
                let x = &mut old[..o.len()];
                x.copy_from_slice(o);
                let y = match y {
                    Src::Slice(y) => Src::Slice(&y[k * IN_PLACE_CHUNK..][..o.len()]),
                    number => number,
                };
                let _: Written = kernel([Src::Slice(x), y], Out::init(o));
            }
            return Some(Ok(None));
        }
        let both;
        let reads: &[&crate::tensor::Storage] = match sb {
            Some(sb) => {
                both = [sa, sb];
                &both
            }
            None => std::slice::from_ref(&sa),
        };
        let guards = crate::tensor::StorageLocks::new(reads, None);
        let x = T::slice(guards.read(sa)?)?.get(oa..oa + n)?;
        let y = self.b.src(|s| guards.read(s), n)?;
        Some(new_from_blocks([Src::Slice(x), y], self.shape, &kernel).map(Some))
    }
}

/// The element loop of [`binary_plain`] but division: `a + alpha·b`,
/// `a − alpha·b` or `a · b` over one block (the operator is matched once per
/// block, each arm its own monomorphic loop).
fn plain_arith<T: Num>(op: BinOp, al: T, a: Src<'_, T>, b: Src<'_, T>, o: Out<'_, T>) -> Written {
    match op {
        BinOp::Add if al == T::one() => map2(a, b, o, |p: T, q: T| p.add(q)),
        BinOp::Add => map2(a, b, o, |p: T, q: T| p.add(al.mul(q))),
        BinOp::Sub if al == T::one() => map2(a, b, o, |p: T, q: T| p.sub(q)),
        BinOp::Sub => map2(a, b, o, |p: T, q: T| p.sub(al.mul(q))),
        _ => map2(a, b, o, T::mul),
    }
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
    /// `logical_and`: both nonzero
    And,
    /// `logical_or`: either nonzero
    Or,
    /// `logical_xor`: exactly one nonzero
    Xor,
}

/// A comparison or a logical operator (`logical_and` and the like, built as
/// comparisons in aten/src/ATen/native/BinaryOps.cpp): computed in the
/// promoted dtype, bool result (or the `out=` dtype).
pub(crate) fn compare(op: Cmp, a: Operand<'_>, b: Operand<'_>, dest: Dest<'_>) -> Result<Tensor> {
    let it = Iter::build(smallvec::smallvec![a, b], dest, Rule::Compare)?;
    if it.is_meta() {
        return it.finish_meta();
    }
    with_dtype!(it.compute, T => match op {
        Cmp::Eq => it.run(|[a, b], o| map2(a, b, o, |p: T, q: T| p == q)),
        Cmp::Ne => it.run(|[a, b], o| map2(a, b, o, |p: T, q: T| p != q)),
        Cmp::Ge => it.run(|[a, b], o| map2(a, b, o, |p: T, q: T| p >= q)),
        Cmp::Le => it.run(|[a, b], o| map2(a, b, o, |p: T, q: T| p <= q)),
        Cmp::Gt => it.run(|[a, b], o| map2(a, b, o, |p: T, q: T| p > q)),
        Cmp::Lt => it.run(|[a, b], o| map2(a, b, o, |p: T, q: T| p < q)),
        // NaN is nonzero, true as in C++.
        Cmp::And => it.run(|[a, b], o| map2(a, b, o, |p: T, q: T| p != T::zero() && q != T::zero())),
        Cmp::Or => it.run(|[a, b], o| map2(a, b, o, |p: T, q: T| p != T::zero() || q != T::zero())),
        Cmp::Xor => it.run(|[a, b], o| map2(a, b, o, |p: T, q: T| (p != T::zero()) != (q != T::zero()))),
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
    /// `acos`
    Acos,
    /// `asin`
    Asin,
    /// `atan`
    Atan,
    /// `acosh`
    Acosh,
    /// `asinh`
    Asinh,
    /// `atanh`
    Atanh,
    /// `cosh`
    Cosh,
    /// `sinh`
    Sinh,
    /// `tan`
    Tan,
    /// `erf`
    Erf,
    /// `expm1` (`e^x - 1`)
    Expm1,
    /// `log10`
    Log10,
    /// `log1p` (`ln(1 + x)`)
    Log1p,
    /// `log2`
    Log2,
    /// `reciprocal` (`1 / x`)
    Reciprocal,
    /// `rsqrt` (`1 / sqrt(x)`)
    Rsqrt,
    /// `ceil`
    Ceil,
    /// `floor`
    Floor,
    /// `round` (half to even)
    Round,
    /// `trunc`
    Trunc,
    /// `sign` (1, 0 or -1; 0 at NaN)
    Sign,
    /// `bitwise_not` (integers and bool)
    BitwiseNot,
    /// `logical_not` (bool result, or the `out=` dtype)
    LogicalNot,
    /// `isnan` (bool result)
    IsNan,
}

impl Unary {
    /// The `f64` function of a float operator without a [`VecMath`]
    /// version: musl's (`libm`), within 1 ulp. `f32` inputs are computed
    /// in `f64` and rounded once (PyTorch's Sleef `_u10` functions are
    /// within 1 ulp too).
    fn scalar_f64(self) -> Option<fn(f64) -> f64> {
        Some(match self {
            Unary::Acos => libm::acos,
            Unary::Asin => libm::asin,
            Unary::Atan => libm::atan,
            Unary::Acosh => libm::acosh,
            Unary::Asinh => libm::asinh,
            Unary::Atanh => libm::atanh,
            Unary::Cosh => libm::cosh,
            Unary::Sinh => libm::sinh,
            Unary::Tan => libm::tan,
            Unary::Erf => libm::erf,
            Unary::Expm1 => libm::expm1,
            Unary::Log10 => libm::log10,
            Unary::Log1p => libm::log1p,
            Unary::Log2 => libm::log2,
            _ => return None,
        })
    }

    /// The name `AT_DISPATCH_*` reports for a bool input to a rounding
    /// operator (its `*_vml_cpu` kernel in
    /// aten/src/ATen/native/cpu/UnaryOpsKernel.cpp has no bool version).
    fn rounding_kernel_name(self) -> &'static str {
        match self {
            Unary::Ceil => "ceil_vml_cpu",
            Unary::Floor => "floor_vml_cpu",
            Unary::Round => "round_vml_cpu",
            _ => "trunc_vml_cpu",
        }
    }
}

/// A unary operator, with the dtype rule of its `TORCH_META_FUNC`
/// (aten/src/ATen/native/UnaryOps.cpp): neg, abs, relu, the rounding
/// operators, `sign` and `bitwise_not` keep the dtype (`out=` must match it,
/// `build_borrowing_unary_op`); `logical_not` and `isnan` give bool (or the
/// `out=` dtype); the others compute in float (integers → float32,
/// `build_borrowing_unary_float_op`).
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
        Unary::Abs
        | Unary::Ceil
        | Unary::Floor
        | Unary::Round
        | Unary::Trunc
        | Unary::Sign
        | Unary::BitwiseNot => Rule::Exact(dtype),
        Unary::LogicalNot | Unary::IsNan => Rule::Compare,
        _ => Rule::PromoteFloat,
    };
    let it = Iter::build(smallvec::smallvec![Operand::Tensor(self_)], dest, rule)?;
    if it.is_meta() {
        return it.finish_meta();
    }
    if op == Unary::Abs && dtype == DType::Bool {
        return Err(dispatch_error("abs_cpu", dtype));
    }
    if let Some(f) = op.scalar_f64() {
        return float_dtype!(it.compute, T => {
            it.run(|[a], o| map1(a, o, |x: T| T::of(f(Element::to_f64(x)))))
        }, _ => crate::bail!("{op:?} computed in {}", it.compute));
    }
    match op {
        // PyTorch's ceil/floor/round/trunc return a copy of an integer input
        // (`TORCH_IMPL_FUNC(ceil_out)` and the like) and have no bool kernel.
        Unary::Ceil | Unary::Floor | Unary::Round | Unary::Trunc => match dtype {
            DType::Bool => Err(dispatch_error(op.rounding_kernel_name(), dtype)),
            DType::Float32 | DType::Float64 => float_dtype!(dtype, T => {
                let f: fn(T) -> T = match op {
                    Unary::Ceil => T::ceil,
                    Unary::Floor => T::floor,
                    Unary::Round => T::round_ties_even,
                    _ => T::trunc,
                };
                it.run(|[a], o| map1(a, o, f))
            }, _ => unreachable!("a float dtype")),
            _ => with_dtype!(dtype, T => it.run(|[a], o| map1(a, o, |x: T| x))),
        },
        // `(0 < x) - (x < 0)` (sign_kernel): 0 at ±0 and NaN, bool unchanged.
        Unary::Sign => with_dtype!(dtype, T => it.run(|[a], o| map1(a, o, |x: T| {
            if T::zero() < x {
                T::one()
            } else if x < T::zero() {
                T::one().neg()
            } else {
                T::zero()
            }
        }))),
        Unary::BitwiseNot => match dtype {
            DType::Bool => it.run(|[a], o| map1(a, o, |x: bool| !x)),
            DType::Int32 => it.run(|[a], o| map1(a, o, |x: i32| !x)),
            DType::Int64 => it.run(|[a], o| map1(a, o, |x: i64| !x)),
            _ => Err(dispatch_error("bitwise_not_cpu", dtype)),
        },
        // Computed in the input's dtype, written as bool (or cast to `out`).
        Unary::LogicalNot => with_dtype!(it.compute, T => {
            it.run(|[a], o| map1(a, o, |x: T| x == T::zero()))
        }),
        Unary::IsNan => with_dtype!(it.compute, T => it.run(|[a], o| map1(a, o, T::is_nan))),
        Unary::Reciprocal | Unary::Rsqrt => float_dtype!(it.compute, T => {
            if op == Unary::Reciprocal {
                it.run(|[a], o| map1(a, o, |x: T| 1.0 / x))
            } else {
                it.run(|[a], o| map1(a, o, |x: T| 1.0 / x.sqrt()))
            }
        }, _ => crate::bail!("{op:?} computed in {}", it.compute)),
        Unary::Neg => with_dtype!(it.compute, T => it.run(|[a], o| map1(a, o, T::neg))),
        Unary::Abs => with_dtype!(it.compute, T => it.run(|[a], o| map1(a, o, T::absolute))),
        Unary::Relu => with_dtype!(it.compute, T => {
            it.run(|[a], o| map1(a, o, |x: T| if x < T::zero() { T::zero() } else { x }))
        }),
        _ => float_dtype!(it.compute, T => {
            let f: fn(&[T], &mut [T]) = match op {
                Unary::Sin => <T as VecMath>::sin,
                Unary::Cos => <T as VecMath>::cos,
                Unary::Tanh => <T as VecMath>::tanh,
                Unary::Exp => <T as VecMath>::exp,
                Unary::Log => <T as VecMath>::ln,
                Unary::Sqrt => <T as VecMath>::sqrt,
                Unary::Sigmoid => <T as VecMath>::sigmoid,
                other => crate::bail!("{other:?} has no vector function"),
            };
            it.run(|[a], o| vector_map(a, o, f))
        }, _ => crate::bail!("{op:?} computed in {}", it.compute)),
    }
}

/// A vectorized slice function over one input block (a broadcast value is
/// computed once).
fn vector_map<T: Float>(a: Src<'_, T>, out: Out<'_, T>, f: fn(&[T], &mut [T])) -> Written {
    match a {
        Src::Slice(x) => out.with_slice(T::zero(), |o| f(x, o)),
        Src::Scalar(x) => {
            let mut v = [x];
            f(&[x], &mut v);
            out.fill(v[0])
        }
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
        let mut ops: Ops<'_> = smallvec::smallvec![Operand::Tensor(self_)];
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
            self_.dtype().typemeta_name()
        );
    }
    let it = Iter::build(
        smallvec::smallvec![Operand::Tensor(self_)],
        dest,
        Rule::Exact(rt),
    )?;
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
    with_dtype!(rt, T => {
        if nan_bound {
            return it.run(|[_a]: [Src<'_, T>; 1], o: Out<'_, T>| o.fill(nan::<T>()));
        }
        let lo: Option<T> = min.map(scalar_to).transpose()?;
        let hi: Option<T> = max.map(scalar_to).transpose()?;
        it.run(|[a], o| map1(a, o, |x: T| {
            let x = match lo {
                Some(l) if x < l => l,
                _ => x,
            };
            match hi {
                Some(h) if h < x => h,
                _ => x,
            }
        }))
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
    let mut ops: Ops<'_> = smallvec::smallvec![Operand::Tensor(self_)];
    ops.extend(min.map(Operand::Tensor));
    ops.extend(max.map(Operand::Tensor));
    let it = Iter::build(ops, dest, Rule::Promote)?;
    if it.is_meta() {
        return it.finish_meta();
    }
    if min.is_some() && max.is_some() && it.compute == DType::Bool {
        return Err(dispatch_error("clamp_cpu", DType::Bool));
    }
    with_dtype!(it.compute, T => match (min, max) {
        (Some(_), Some(_)) => it.run(|[a, l, h], o| map3(a, l, h, o, |x: T, l: T, h: T| {
            if l.is_nan() || h.is_nan() {
                nan::<T>()
            } else {
                let x = if x < l { l } else { x };
                if h < x { h } else { x }
            }
        })),
        (Some(_), None) => it.run(|[a, l], o| map2(a, l, o, T::max_nan)),
        _ => it.run(|[a, h], o| map2(a, h, o, T::min_nan)),
    })
}

/// `pow(self, exponent)` with a scalar exponent.
pub(crate) fn pow_scalar(self_: &Tensor, exponent: Scalar, dest: Dest<'_>) -> Result<Tensor> {
    crate::ensure!(
        !(self_.dtype().is_integral(true) && matches!(exponent, Scalar::Int(e) if e < 0)),
        "Integers to negative integer powers are not allowed."
    );
    let rt = result_type(&[Operand::Tensor(self_), Operand::Scalar(exponent)]);
    let it = Iter::build(
        smallvec::smallvec![Operand::Tensor(self_)],
        dest,
        Rule::Exact(rt),
    )?;
    if it.is_meta() {
        return it.finish_meta();
    }
    let zero = scalar_equals(exponent, 0.0) || exponent == Scalar::Bool(false);
    let one = scalar_equals(exponent, 1.0) || exponent == Scalar::Bool(true);
    if zero {
        return with_dtype!(rt, T => it.run(|[_a]: [Src<'_, T>; 1], o: Out<'_, T>| o.fill(T::one())));
    }
    if one {
        return with_dtype!(rt, T => it.run(|[a], o| map1(a, o, |x: T| x)));
    }
    if rt == DType::Bool {
        return Err(dispatch_error("pow", rt));
    }
    float_dtype!(rt, F => {
        let e = exponent.to_f64();
        let ef = F::of(e);
        if e == 0.5 {
            it.run(|[a], o| map1(a, o, F::sqrt))
        } else if e == -0.5 {
            it.run(|[a], o| map1(a, o, |v: F| F::one().div(v.sqrt())))
        } else if e == -1.0 {
            it.run(|[a], o| map1(a, o, |v: F| F::one().div(v)))
        } else if e == 2.0 {
            it.run(|[a], o| map1(a, o, |v: F| v.mul(v)))
        } else if e == 3.0 {
            it.run(|[a], o| map1(a, o, |v: F| v.mul(v).mul(v)))
        } else if e == -2.0 {
            it.run(|[a], o| map1(a, o, |v: F| F::one().div(v.mul(v))))
        } else {
            it.run(|[a], o| match a {
                Src::Slice(x) => o.with_slice(F::zero(), |o| <F as VecMath>::pow_scalar(x, ef, o)),
                Src::Scalar(x) => o.fill(x.power(ef)),
            })
        }
    }, _ => with_dtype!(rt, T => {
        let e: T = scalar_to(exponent)?;
        it.run(|[a], o| map1(a, o, |v: T| v.power(e)))
    }))
}

/// `where(condition, self, other)`.
pub(crate) fn where_self(condition: &Tensor, self_: &Tensor, other: &Tensor) -> Result<Tensor> {
    let rt = result_type_tensors([self_, other]);
    crate::ensure!(
        condition.dtype() == DType::Bool,
        "where expected condition to be a boolean tensor, but got a tensor with dtype {}",
        condition.dtype().c10_name()
    );
    let ops = smallvec::smallvec![
        Operand::Tensor(condition),
        Operand::Tensor(self_),
        Operand::Tensor(other),
    ];
    let it = Iter::build(ops, Dest::New, Rule::Exact(rt))?;
    if it.is_meta() {
        return it.finish_meta();
    }
    with_dtype!(rt, T => {
        it.run(|[c, a, b], o| map3(c, a, b, o, |c: T, a: T, b: T| if c != T::zero() { a } else { b }))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_f32(t: &Tensor) -> Vec<f32> {
        t.with_geometry(|g| f32::slice(&g.storage.read()).unwrap().to_vec())
    }

    #[test]
    fn new_results_are_written_in_full() {
        // Across blocks, parts and threads: every element comes from the kernel.
        let n = crate::parallel::GRAIN_SIZE + NEW_BLOCK_BYTES / 4 + 3;
        let x: Vec<f32> = (0..n).map(|i| i as f32).collect();
        let t = new_from_blocks([Src::Slice(&x), Src::Scalar(1.0f32)], &[n], &|[a, b], o| {
            map2(a, b, o, |x, y| x + y)
        })
        .unwrap();
        assert_eq!(
            read_f32(&t),
            (0..n).map(|i| i as f32 + 1.0).collect::<Vec<_>>()
        );
        let empty =
            new_from_blocks([Src::Slice(&x[..0])], &[0, 3], &|[a], o| map1(a, o, |v| v)).unwrap();
        assert_eq!(empty.shape(), vec![0, 3]);
    }

    /// A kernel that panics part way, and a source shorter than the result:
    /// the panic reaches the caller and the half-written buffer is dropped
    /// as empty (its length is set only after every block is written).
    #[test]
    fn a_panic_part_way_leaves_no_uninitialised_result() {
        let n = crate::parallel::GRAIN_SIZE + 1;
        let x = vec![1.0f32; n];
        let kernel = |[a]: [Src<'_, f32>; 1], o: Out<'_, f32>| {
            if let Src::Slice(s) = a {
                assert!(s.iter().all(|&v| v >= 0.0), "negative input");
            }
            map1(a, o, |v| v)
        };
        let mut bad = x.clone();
        bad[n - 1] = -1.0;
        let r = std::panic::catch_unwind(|| new_from_blocks([Src::Slice(&bad)], &[n], &kernel));
        assert!(r.is_err());
        let r =
            std::panic::catch_unwind(|| new_from_blocks([Src::Slice(&x[..n / 2])], &[n], &kernel));
        assert!(r.is_err(), "a short source is a bounds-checked panic");
        // Nothing is left in a broken state.
        let t = new_from_blocks([Src::Slice(&x)], &[n], &kernel).unwrap();
        assert_eq!(read_f32(&t), x);
    }
}
