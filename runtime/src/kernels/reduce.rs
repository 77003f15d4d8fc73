//! Reductions: sum, mean, prod, argmax / argmin, max.dim / min.dim, amax /
//! amin, any, var; and the scan cumsum. Output dtypes follow
//! `get_dtype_from_self` (integral and bool inputs accumulate in int64 unless a
//! `dtype` is given), dims are wrapped and checked for repeats, and each input
//! element is converted to the output dtype before reducing, as PyTorch does.
//!
//! The input is read in place ([`fold_lanes`]): no copy of it is made, so an
//! expanded view reduces in the memory of its result alone.

use super::num::{Float, Num};
use super::promote::check_can_cast;
use super::vmath::best_level;
use super::{check_alloc, check_out_dtype, index_error, not_implemented, resize_output, wrap_dim};
use crate::error::Result;
use crate::tensor::{
    alloc as memory, cast, last_offset, numel, DType, Device, Element, IntoBuffer, Positions,
    Scalar, Tensor,
};
use crate::{float_dtype, with_buffer, with_dtype};
use ndarray::{ArrayViewD, IxDyn};

/// `make_dim_mask`: `None` or `[]` reduces every dimension.
pub(crate) fn dim_mask(dims: Option<&[i64]>, ndim: usize) -> Result<Vec<bool>> {
    let dims = match dims {
        Some(d) if !d.is_empty() => d,
        _ => return Ok(vec![true; ndim]),
    };
    let mut mask = vec![false; ndim];
    for &d in dims {
        let w = wrap_dim(d, ndim)?;
        if ndim == 0 {
            continue;
        }
        crate::ensure!(
            !mask[w],
            "dim {w} appears multiple times in the list of dims"
        );
        mask[w] = true;
    }
    Ok(mask)
}

/// The shape of a reduction's output.
pub(crate) fn reduced_shape(shape: &[usize], mask: &[bool], keepdim: bool) -> Vec<usize> {
    shape
        .iter()
        .zip(mask)
        .filter_map(|(&n, &m)| match (m, keepdim) {
            (false, _) => Some(n),
            (true, true) => Some(1),
            (true, false) => None,
        })
        .collect()
}

/// How a reduction folds a lane (the elements of the reduced dimensions that
/// give one output value), in pieces the engine ([`reduce_lanes`]) hands it.
pub(crate) trait Reducer<T>: Sync {
    /// The running value of a lane.
    type Acc: Copy + Send + Sync;
    /// Must the lane be visited in logical order (an index is part of the
    /// result), or may the engine visit it in memory order?
    const ORDERED: bool;
    /// The value of an empty lane.
    fn init(&self) -> Self::Acc;
    /// Folds a run of consecutive lane elements, `x[0]` being element `first`
    /// of the lane.
    fn run(&self, acc: Self::Acc, x: &[T], first: usize) -> Self::Acc;
    /// Combines the values of two consecutive pieces of a lane (`a` first).
    fn combine(&self, a: Self::Acc, b: Self::Acc) -> Self::Acc;
    /// Folds element `i` of many lanes at once: `x[j]` into `acc[j]`.
    fn columns(&self, acc: &mut [Self::Acc], x: &[T], i: usize) {
        for (a, v) in acc.iter_mut().zip(x) {
            *a = self.run(*a, std::slice::from_ref(v), i);
        }
    }
}

/// Lanes of a full reduction over one contiguous run are cut into chunks of
/// this many elements, folded in parallel and combined in order: the cut
/// never depends on the thread count, so neither does the result.
const CHUNK: usize = 16_384;

/// One dimension: size and stride.
type Dim = (usize, usize);

/// Dimensions of a reduction's plan, inline up to five (as a tensor keeps
/// its sizes): planning a small reduction allocates nothing.
type PlanDims = smallvec::SmallVec<[Dim; 5]>;

/// Coalesces adjacent dimensions (outer first) that step through memory as one.
fn merge(dims: &mut PlanDims) {
    dims.retain(|&mut (n, _)| n != 1);
    let mut i = 0;
    while i + 1 < dims.len() {
        let ((n0, s0), (n1, s1)) = (dims[i], dims[i + 1]);
        if s0 == s1 * n1 {
            dims[i] = (n0 * n1, s1);
            dims.remove(i + 1);
        } else {
            i += 1;
        }
    }
}

/// Reduces every lane of the dimensions of `t` that `mask` selects with
/// `reducer`, reading the storage in place: one value per kept position, in
/// logical order, each element converted to `T` with C++ cast rules first.
/// Lanes that are contiguous runs are folded on the storage's slice directly;
/// others row by row through a buffer. A reduction of inner dimensions
/// (the lane is where memory is densest) folds lane by lane; a reduction of
/// outer dimensions, with the kept last dimension contiguous, folds whole rows
/// of lanes at once ([`Reducer::columns`]). Work above the grain size runs on
/// several threads, each output value computed by one thread, and a full
/// reduction in fixed chunks: the result is the same on any thread count.
pub(crate) fn reduce_lanes<T: IntoBuffer, R: Reducer<T>>(
    t: &Tensor,
    mask: &[bool],
    reducer: &R,
) -> Result<Vec<R::Acc>> {
    let g = t.geometry();
    let dims = |keep: bool| -> PlanDims {
        (0..g.shape.len())
            .filter(|&d| mask[d] != keep)
            .map(|d| (g.shape[d], g.strides[d]))
            .collect()
    };
    let kept = dims(true);
    let mut lane = dims(false);
    let out_n = numel(&kept.iter().map(|d| d.0).collect::<crate::tensor::Dims>());
    let lane_n: usize = lane.iter().map(|d| d.0).product();
    let init = reducer.init();
    let mut out = memory::try_filled(out_n, init)?;
    let Some(end) = last_offset(&g.shape, &g.strides, g.offset)? else {
        return Ok(out);
    };
    if !R::ORDERED {
        // Any order: the fastest dimension last.
        lane.sort_by_key(|d| std::cmp::Reverse(d.1));
    }
    merge(&mut lane);
    let buf = g.storage.read();
    with_buffer!(&*buf, data, S => {
        crate::ensure!(end < data.len(), "tensor view is out of bounds of its storage");
        let plan = Plan { kept: &kept, lane: &lane, lane_n, offset: g.offset };
        plan.fold::<S, T, R>(data, reducer, &mut out);
    }, meta => crate::bail!("Cannot access data pointer of Tensor that doesn't have storage (a meta tensor)"));
    Ok(out)
}

/// The geometry of a reduction: kept dimensions (logical order) and the
/// lane's (merged; outer first).
struct Plan<'a> {
    kept: &'a [Dim],
    lane: &'a [Dim],
    lane_n: usize,
    offset: usize,
}

impl Plan<'_> {
    fn fold<S: Element, T: IntoBuffer, R: Reducer<T>>(
        &self,
        data: &[S],
        r: &R,
        out: &mut [R::Acc],
    ) {
        if self.lane_n == 0 || out.is_empty() {
            return;
        }
        let (kshape, kstrides): (Vec<usize>, Vec<usize>) = self.kept.iter().copied().unzip();
        // Outer reduction: the last kept dimension is contiguous and denser
        // than every reduced one; fold rows of lanes side by side.
        if let Some(&(cols, 1)) = self.kept.last() {
            if cols > 1 && self.lane.iter().all(|&(_, s)| s > 1) {
                let grain = (crate::parallel::GRAIN_SIZE / self.lane_n.max(1)).max(1);
                let (lshape, lstrides): (Vec<usize>, Vec<usize>) =
                    self.lane.iter().copied().unzip();
                let (rshape, rstrides) =
                    (&kshape[..kshape.len() - 1], &kstrides[..kstrides.len() - 1]);
                crate::parallel::for_each_part_mut(out, grain, |start, part| {
                    {
                        let mut buf: Vec<T> = Vec::new();
                        let mut at = 0;
                        while at < part.len() {
                            // A tile of at most RUN columns: its values stay in
                            // cache while every lane element is folded in.
                            let (row, col) = ((start + at) / cols, (start + at) % cols);
                            let len = (cols - col).min(part.len() - at).min(RUN);
                            let base = position_of(row, rshape, rstrides, self.offset) + col;
                            for (i, p) in Positions::new(&lshape, &lstrides, base).enumerate() {
                                let x = read_run::<S, T>(data, p, 1, len, &mut buf);
                                r.columns(&mut part[at..at + len], x, i);
                            }
                            at += len;
                        }
                    }
                });
                return;
            }
        }
        // Inner reduction: lane by lane.
        let one_run = match self.lane {
            [] => Some(1),
            [(n, 1)] => Some(*n),
            _ => None,
        };
        if out.len() == 1 && one_run.is_some() && self.lane_n > CHUNK {
            // A full reduction of one run: fixed chunks, combined in order.
            let base = Positions::new(&kshape, &kstrides, self.offset)
                .next()
                .unwrap_or(self.offset);
            let parts = crate::parallel::map_chunks(self.lane_n, CHUNK, |range| {
                let mut buf = Vec::new();
                fold_run::<S, T, R>(
                    data,
                    r,
                    (base + range.start, 1, range.len()),
                    range.start,
                    &mut buf,
                )
            });
            out[0] = parts.into_iter().fold(r.init(), |a, b| r.combine(a, b));
            return;
        }
        let grain = (crate::parallel::GRAIN_SIZE / self.lane_n.max(1)).max(1);
        crate::parallel::for_each_part_mut(out, grain, |start, part| {
            {
                let mut buf: Vec<T> = Vec::new();
                // One skip per part (at most one part per thread).
                let bases = Positions::new(&kshape, &kstrides, self.offset).skip(start);
                for (o, base) in part.iter_mut().zip(bases) {
                    *o = match one_run {
                        // A lane that is one run: folded as a run (the
                        // storage's slice when of the compute type), without
                        // `lane_value`'s walk over positions (a mean over
                        // rows of 1,000: 15% of its time).
                        Some(n) => fold_run::<S, T, R>(data, r, (base, 1, n), 0, &mut buf),
                        None => self.lane_value::<S, T, R>(data, r, base, &mut buf),
                    };
                }
            }
        });
    }

    /// The folded value of the lane starting at storage position `base`.
    #[inline(always)]
    fn lane_value<S: Element, T: IntoBuffer, R: Reducer<T>>(
        &self,
        data: &[S],
        r: &R,
        base: usize,
        buf: &mut Vec<T>,
    ) -> R::Acc {
        let Some(&(n, stride)) = self.lane.last() else {
            // No reduced dimension of size > 1: the lane is one element.
            return fold_run::<S, T, R>(data, r, (base, 1, 1), 0, buf);
        };
        let outer = &self.lane[..self.lane.len() - 1];
        let (oshape, ostrides): (Vec<usize>, Vec<usize>) = outer.iter().copied().unzip();
        let mut acc = r.init();
        for (k, p) in Positions::new(&oshape, &ostrides, base).enumerate() {
            let piece = fold_run::<S, T, R>(data, r, (p, stride, n), k * n, buf);
            acc = if k == 0 { piece } else { r.combine(acc, piece) };
        }
        acc
    }
}

/// The storage position of the element with row-major index `index` in
/// `shape` / `strides` from `offset`.
fn position_of(mut index: usize, shape: &[usize], strides: &[usize], offset: usize) -> usize {
    let mut pos = offset;
    for (&n, &s) in shape.iter().zip(strides).rev() {
        pos += (index % n) * s;
        index /= n;
    }
    pos
}

/// Elements converted through a buffer are read this many at a time.
const RUN: usize = 2048;

/// The folded value of a run of `len` lane elements from `at` every `stride`
/// (`first`: the lane index of the first): on the storage's slice when it is
/// one already, else through `buf`, [`RUN`] elements at a time (so a buffer
/// never grows with the input).
#[inline(always)]
fn fold_run<S: Element, T: IntoBuffer, R: Reducer<T>>(
    data: &[S],
    r: &R,
    (at, stride, len): (usize, usize, usize),
    first: usize,
    buf: &mut Vec<T>,
) -> R::Acc {
    if stride == 1 && S::DTYPE == T::DTYPE {
        if let Some(x) = slice_as::<S, T>(&data[at..at + len]) {
            return r.run(r.init(), x, first);
        }
    }
    let mut acc = r.init();
    let mut k = 0;
    while k < len {
        let m = RUN.min(len - k);
        let x = read_run::<S, T>(data, at + k * stride, stride, m, buf);
        let piece = r.run(r.init(), x, first + k);
        acc = if k == 0 { piece } else { r.combine(acc, piece) };
        k += m;
    }
    acc
}

/// `len` elements from `at` every `stride`, as `T`: the storage's own slice
/// when it already is one, else copied (and cast) into `buf`.
fn read_run<'a, S: Element, T: IntoBuffer>(
    data: &'a [S],
    at: usize,
    stride: usize,
    len: usize,
    buf: &'a mut Vec<T>,
) -> &'a [T] {
    if stride == 1 && S::DTYPE == T::DTYPE {
        if let Some(x) = slice_as::<S, T>(&data[at..at + len]) {
            return x;
        }
    }
    buf.clear();
    buf.extend((0..len).map(|i| cast::<S, T>(data[at + i * stride])));
    buf
}

/// `x` as a slice of `T` when `S` and `T` are one type.
pub(crate) fn slice_as<S: Element, T: Element>(x: &[S]) -> Option<&[T]> {
    (std::any::TypeId::of::<S>() == std::any::TypeId::of::<T>()).then(|| {
        // SAFETY: `S` and `T` are the same type (equal `TypeId`s), so the
        // slice is reinterpreted as itself: same layout, same lifetime.
        unsafe { std::slice::from_raw_parts(x.as_ptr().cast::<T>(), x.len()) }
    })
}

/// The sum of a run: 64 running sums side by side (the compiler vectorizes
/// them), added pairwise, over blocks of 4096 elements whose sums are added
/// pairwise too (a binary counter of partial sums, no recursion): the cascade
/// summation PyTorch's `sum` uses, with the same error growth (logarithmic in
/// the length). Each block is summed at the CPU's best vector width.
///
/// A run shorter than one of PyTorch's AVX2 vectors (32 bytes: 7 float32 or
/// 3 float64 elements at most) is summed as PyTorch's scalar `row_sum` sums
/// it ([`short_sum`]): the order shows when float32 values cancel.
#[inline(always)]
pub(crate) fn cascade_sum<T: Num>(x: &[T]) -> T {
    const BLOCK: usize = 4096;
    if x.len() < 32 / std::mem::size_of::<T>().max(1) {
        return short_sum(x);
    }
    if x.len() <= BLOCK {
        return block_sum(x);
    }
    // sums[i] holds the sum of 2^levels[i] blocks; equal neighbours merge.
    let mut sums = [T::zero(); 64];
    let mut levels = [0u32; 64];
    let mut depth = 0;
    for b in x.chunks(BLOCK) {
        let (mut s, mut level) = (block_sum(b), 0);
        while depth > 0 && levels[depth - 1] == level {
            depth -= 1;
            s = sums[depth].add(s);
            level += 1;
        }
        sums[depth] = s;
        levels[depth] = level;
        depth += 1;
    }
    let mut acc = sums[depth - 1];
    for i in (0..depth - 1).rev() {
        acc = sums[i].add(acc);
    }
    acc
}

/// PyTorch's scalar `row_sum`: four running sums over the groups of four
/// elements (`s[k]` takes the elements at `k` modulo 4), the elements past
/// the last whole group added to `s[0]`, then `((s[0] + s[1]) + s[2]) +
/// s[3]`; three elements are `(x0 + x1) + x2`.
fn short_sum<T: Num>(x: &[T]) -> T {
    let mut s = [T::zero(); 4];
    let mut groups = x.chunks_exact(4);
    for g in &mut groups {
        for k in 0..4 {
            s[k] = s[k].add(g[k]);
        }
    }
    for &v in groups.remainder() {
        s[0] = s[0].add(v);
    }
    s[0].add(s[1]).add(s[2]).add(s[3])
}

/// The number of running sums of [`block_sum`].
const LANES: usize = 64;

/// The sum of a block: [`LANES`] running sums (sum `j` takes the elements at
/// `j` modulo 64), then added pairwise (`s[j] += s[j + w]` for `w` = 32, 16,
/// ..., 1). 64 (four AVX-512 or eight AVX2 registers of float32) hides the
/// latency of the vector add: with one register of sums the loop waits on
/// each add. Every version gives these exact sums in this exact order, so
/// the result is the same bits on any CPU.
#[inline(always)]
fn block_sum<T: Num>(x: &[T]) -> T {
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    if super::vmath::detected_level() == super::vmath::Level::Avx512 {
        // Written out with AVX-512 for float32 and float64: LLVM's
        // vectorization of the generic version spills the sums to the stack
        // around its tail and pairwise fold (a third of the time of a row
        // of 1,000).
        if let Some(x) = slice_as::<T, f32>(x) {
            // SAFETY: AVX-512 F was detected (level `Avx512`).
            let s = unsafe { avx512::block_sum_f32(x) };
            return slice_as::<f32, T>(&[s]).expect("T is f32")[0];
        }
        if let Some(x) = slice_as::<T, f64>(x) {
            // SAFETY: as above.
            let s = unsafe { avx512::block_sum_f64(x) };
            return slice_as::<f64, T>(&[s]).expect("T is f64")[0];
        }
    }
    block_sum_auto(x)
}

best_level! {
    /// [`block_sum`] in plain Rust, auto-vectorized for each CPU level.
    fn block_sum_auto<T>(x: &[T]) -> T
    where { T: Num }
    {
        block_sum_lanes(x)
    }
}

/// [`block_sum`]'s definition: the running sums in an array.
#[inline(always)]
fn block_sum_lanes<T: Num>(x: &[T]) -> T {
    let mut acc = [T::zero(); LANES];
    let mut chunks = x.chunks_exact(LANES);
    for c in &mut chunks {
        for j in 0..LANES {
            acc[j] = acc[j].add(c[j]);
        }
    }
    for (a, &v) in acc.iter_mut().zip(chunks.remainder()) {
        *a = a.add(v);
    }
    let mut width = LANES;
    while width > 1 {
        width /= 2;
        for j in 0..width {
            acc[j] = acc[j].add(acc[j + width]);
        }
    }
    acc[0]
}

/// [`block_sum`] for float32 and float64 with AVX-512 registers: the 64
/// running sums are 4 (float32) or 8 (float64) registers, the tail is read
/// with masked loads, and the pairwise fold adds registers, then halves.
#[cfg(all(target_arch = "x86_64", not(miri)))]
mod avx512 {
    use super::LANES;
    use std::arch::x86_64::*;

    /// Stamps one type's version: `$per` lanes a register.
    macro_rules! block_sum_avx512 {
        ($name:ident, $t:ty, $v:ty, $per:expr, $zero:ident, $loadu:ident, $maskz_loadu:ident,
         $mask_add:ident, $add:ident, $halve:ident) => {
            /// The sum of `x`, exactly as `block_sum_lanes` computes it.
            ///
            /// # Safety
            /// The CPU must have AVX-512 F.
            #[target_feature(enable = "avx512f")]
            pub(super) unsafe fn $name(x: &[$t]) -> $t {
                const REGS: usize = LANES / $per;
                let mut acc: [$v; REGS] = [$zero(); REGS];
                let mut chunks = x.chunks_exact(LANES);
                for c in &mut chunks {
                    for (k, a) in acc.iter_mut().enumerate() {
                        let lanes = &c[k * $per..(k + 1) * $per];
                        // SAFETY: `lanes` is `$per` readable elements (a
                        // checked slice); unaligned loads are allowed.
                        *a = $add(*a, unsafe { $loadu(lanes.as_ptr()) });
                    }
                }
                // The tail (under 64): element `t` into sum `t`.
                let rest = chunks.remainder();
                for (k, a) in acc.iter_mut().enumerate() {
                    let from = k * $per;
                    if from >= rest.len() {
                        break;
                    }
                    let lanes = &rest[from..rest.len().min(from + $per)];
                    let mask = (1u32 << lanes.len()).wrapping_sub(1);
                    // SAFETY: the mask selects the first `lanes.len()`
                    // elements, all inside `lanes` (a checked slice); the
                    // others are not read (masked loads do not touch, and
                    // cannot fault on, unselected elements).
                    let v = unsafe { $maskz_loadu(mask as _, lanes.as_ptr()) };
                    *a = $mask_add(*a, mask as _, *a, v);
                }
                // Pairwise: registers (w = 32, 16, ... down to one register),
                // then halves of the register.
                let mut regs = REGS;
                while regs > 1 {
                    regs /= 2;
                    for k in 0..regs {
                        acc[k] = $add(acc[k], acc[k + regs]);
                    }
                }
                $halve(acc[0])
            }
        };
    }

    block_sum_avx512!(
        block_sum_f32,
        f32,
        __m512,
        16,
        _mm512_setzero_ps,
        _mm512_loadu_ps,
        _mm512_maskz_loadu_ps,
        _mm512_mask_add_ps,
        _mm512_add_ps,
        halve_f32
    );
    block_sum_avx512!(
        block_sum_f64,
        f64,
        __m512d,
        8,
        _mm512_setzero_pd,
        _mm512_loadu_pd,
        _mm512_maskz_loadu_pd,
        _mm512_mask_add_pd,
        _mm512_add_pd,
        halve_f64
    );

    /// The pairwise fold of one register of 16 float32 sums: `s[j] += s[j +
    /// w]` for `w` = 8, 4, 2, 1; returns `s[0]`.
    #[target_feature(enable = "avx512f")]
    fn halve_f32(s: __m512) -> f32 {
        let lo = _mm512_castps512_ps256(s);
        let hi = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(s), 1));
        let s8 = _mm256_add_ps(lo, hi);
        let s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
        let s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
        _mm_cvtss_f32(_mm_add_ss(s2, _mm_shuffle_ps(s2, s2, 1)))
    }

    /// The pairwise fold of one register of 8 float64 sums: `s[j] += s[j +
    /// w]` for `w` = 4, 2, 1; returns `s[0]`.
    #[target_feature(enable = "avx512f")]
    fn halve_f64(s: __m512d) -> f64 {
        let s4 = _mm256_add_pd(_mm512_castpd512_pd256(s), _mm512_extractf64x4_pd(s, 1));
        let s2 = _mm_add_pd(_mm256_castpd256_pd128(s4), _mm256_extractf128_pd(s4, 1));
        _mm_cvtsd_f64(_mm_add_sd(s2, _mm_unpackhi_pd(s2, s2)))
    }
}

best_level! {
    /// `acc[j] += x[j]` (the columns of an outer sum).
    fn add_columns<T>(acc: &mut [T], x: &[T]) -> ()
    where { T: Num }
    {
        for (a, &v) in acc.iter_mut().zip(x) {
            *a = a.add(v);
        }
    }
}

best_level! {
    /// `acc[j] *= x[j]` (the columns of an outer product).
    fn mul_columns<T>(acc: &mut [T], x: &[T]) -> ()
    where { T: Num }
    {
        for (a, &v) in acc.iter_mut().zip(x) {
            *a = a.mul(v);
        }
    }
}

/// `sum`: cascade sums of runs, added.
struct SumOf;

impl<T: Num> Reducer<T> for SumOf {
    type Acc = T;
    const ORDERED: bool = false;
    fn init(&self) -> T {
        T::zero()
    }
    #[inline(always)]
    fn run(&self, acc: T, x: &[T], _: usize) -> T {
        acc.add(cascade_sum(x))
    }
    fn combine(&self, a: T, b: T) -> T {
        a.add(b)
    }
    fn columns(&self, acc: &mut [T], x: &[T], _: usize) {
        add_columns(acc, x)
    }
}

/// `prod`: products in order.
struct ProdOf;

impl<T: Num> Reducer<T> for ProdOf {
    type Acc = T;
    const ORDERED: bool = false;
    fn init(&self) -> T {
        T::one()
    }
    fn run(&self, acc: T, x: &[T], _: usize) -> T {
        x.iter().fold(acc, |a, &v| a.mul(v))
    }
    fn combine(&self, a: T, b: T) -> T {
        a.mul(b)
    }
    fn columns(&self, acc: &mut [T], x: &[T], _: usize) {
        mul_columns(acc, x)
    }
}

/// `get_dtype_from_self(self, dtype, promote_integers=true)`.
fn dtype_from_self(self_: &Tensor, dtype: Option<DType>) -> DType {
    dtype.unwrap_or(if self_.dtype().is_integral(true) {
        DType::Int64
    } else {
        self_.dtype()
    })
}

/// Writes a reduction result (of `shape`, in logical order): into `out`
/// (already checked and resized) or as a new tensor.
fn emit<R: crate::tensor::IntoBuffer>(
    values: Vec<R>,
    shape: &[usize],
    out: Option<&Tensor>,
) -> Result<Tensor> {
    match out {
        Some(o) => {
            if o.numel() > 0 {
                let v = ArrayViewD::from_shape(IxDyn(shape), &values)
                    .map_err(|e| crate::Error::Runtime(format!("reduction: {e}").into()))?;
                o.assign(v)?;
            }
            Ok(o.clone())
        }
        None => Tensor::from_vec(values, shape),
    }
}

/// Output of a reduction that computes nothing (meta), or `None` to go on.
fn prepare(
    self_: &Tensor,
    shape: &[usize],
    dtype: DType,
    out: Option<&Tensor>,
) -> Result<Option<Tensor>> {
    if let Some(o) = out {
        check_out_dtype(o, dtype)?;
        resize_output(o, shape)?;
    }
    let meta = self_.device() == Device::Meta || out.is_some_and(|o| o.device() == Device::Meta);
    if !meta {
        if out.is_none() {
            check_alloc(shape, dtype, Device::Cpu)?;
        }
        return Ok(None);
    }
    match out {
        Some(o) => Ok(Some(o.clone())),
        None => Tensor::try_zeros(shape, dtype, Device::Meta).map(Some),
    }
}

/// Sum or product.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Accumulate {
    /// `sum`
    Sum,
    /// `prod`
    Prod,
}

/// `sum` / `prod` over `dims` (`None` or `[]`: all).
pub(crate) fn accumulate(
    op: Accumulate,
    self_: &Tensor,
    dims: Option<&[i64]>,
    keepdim: bool,
    dtype: Option<DType>,
    out: Option<&Tensor>,
) -> Result<Tensor> {
    let out_dtype = match (dtype, out) {
        (None, Some(o)) => o.dtype(),
        _ => dtype_from_self(self_, dtype),
    };
    let mask = dim_mask(dims, self_.dim())?;
    let shape = reduced_shape(&self_.shape(), &mask, keepdim);
    if let Some(m) = prepare(self_, &shape, out_dtype, out)? {
        return Ok(m);
    }
    with_dtype!(out_dtype, T => {
        let r = match op {
            Accumulate::Sum => reduce_lanes::<T, _>(self_, &mask, &SumOf)?,
            Accumulate::Prod => reduce_lanes::<T, _>(self_, &mask, &ProdOf)?,
        };
        emit(r, &shape, out)
    })
}

/// `mean.dim` / `mean.out`: a floating dtype is required; sum, then divide.
pub(crate) fn mean(
    self_: &Tensor,
    dims: Option<&[i64]>,
    keepdim: bool,
    dtype: Option<DType>,
    out: Option<&Tensor>,
) -> Result<Tensor> {
    let in_dtype = dtype_from_self(self_, dtype);
    if !in_dtype.is_floating_point() {
        let (what, got) = match dtype {
            Some(d) => ("Optional", d),
            None => ("Input", self_.dtype()),
        };
        return Err(not_implemented(format!(
            "mean(): could not infer output dtype. {what} dtype must be either a floating point or complex dtype. Got: {}",
            got.c10_name()
        )));
    }
    let out_dtype = match (dtype, out) {
        (None, Some(o)) => o.dtype(),
        _ => in_dtype,
    };
    let mask = dim_mask(dims, self_.dim())?;
    let shape = reduced_shape(&self_.shape(), &mask, keepdim);
    if let Some(m) = prepare(self_, &shape, out_dtype, out)? {
        return Ok(m);
    }
    let count: usize = self_
        .shape()
        .iter()
        .zip(&mask)
        .filter(|(_, &m)| m)
        .map(|(&n, _)| n)
        .product();
    float_dtype!(out_dtype, T => {
        let n = T::of(count as f64);
        let sums = reduce_lanes::<T, _>(self_, &mask, &SumOf)?;
        let r = memory::try_collect(sums.len(), sums.into_iter().map(|s| s.div(n)))?;
        emit(r, &shape, out)
    }, _ => crate::bail!(
        "result type Float can't be cast to the desired output type {}",
        out_dtype.c10_name()
    ))
}

/// `zero_numel_check_dims`.
fn check_nonempty_dim(self_: &Tensor, dim: usize, name: &str) -> Result<()> {
    if self_.dim() > 0 && self_.shape()[dim] == 0 {
        return Err(index_error(format!(
            "{name}: Expected reduction dim {dim} to have non-zero size."
        )));
    }
    Ok(())
}

/// The best value of a lane so far and its index (none before the first).
type Best<T> = Option<(T, i64)>;

/// The maximum (`max = true`) or minimum of a lane and its index: NaN wins
/// (the first NaN), ties go to the first occurrence.
struct Extreme {
    max: bool,
}

impl Extreme {
    /// Does `v` replace `best`?
    #[inline(always)]
    fn better<T: Num>(&self, v: T, best: T) -> bool {
        if self.max {
            v > best || v.is_nan()
        } else {
            v < best || v.is_nan()
        }
    }
}

impl<T: Num> Reducer<T> for Extreme {
    type Acc = Best<T>;
    const ORDERED: bool = true;
    fn init(&self) -> Best<T> {
        None
    }
    fn run(&self, acc: Best<T>, x: &[T], first: usize) -> Best<T> {
        if x.is_empty() || acc.is_some_and(|(b, _)| b.is_nan()) {
            return acc;
        }
        let k = if self.max {
            index_of_max(x)
        } else {
            index_of_min(x)
        };
        // Ties go to what came before (`combine` keeps `acc` unless the run's
        // extreme is strictly better).
        self.combine(acc, Some((x[k], (first + k) as i64)))
    }
    fn combine(&self, a: Best<T>, b: Best<T>) -> Best<T> {
        match (a, b) {
            (Some((x, _)), _) if x.is_nan() => a,
            (Some((x, _)), Some((y, _))) if self.better(y, x) => b,
            (None, _) => b,
            _ => a,
        }
    }
}

/// Running extremes kept side by side by [`index_of_extreme`].
const EXTREME_LANES: usize = 16;

/// The index of the first NaN of a non-empty `x`, or else of the first
/// occurrence of its maximum (`MAX`) or minimum: [`Extreme`]'s rule, in two
/// passes the compiler vectorizes (the extreme ignoring NaN and whether a NaN
/// is there, in `EXTREME_LANES` running values; then the first index equal to
/// it), instead of one branch per element.
#[inline(always)]
fn index_of_extreme<T: Num, const MAX: bool>(x: &[T]) -> usize {
    let better = |v: T, b: T| if MAX { v > b } else { v < b };
    let mut best = [x[0]; EXTREME_LANES];
    let mut nan = [false; EXTREME_LANES];
    let chunks = x.chunks_exact(EXTREME_LANES);
    let tail = chunks.remainder();
    for c in chunks {
        for ((b, n), &v) in best.iter_mut().zip(&mut nan).zip(c) {
            *n |= v.is_nan();
            // A comparison with NaN is false: NaN never enters (a lane that
            // starts at a NaN `x[0]` is caught by the flags).
            *b = if better(v, *b) { v } else { *b };
        }
    }
    for (&v, (b, n)) in tail.iter().zip(best.iter_mut().zip(&mut nan)) {
        *n |= v.is_nan();
        *b = if better(v, *b) { v } else { *b };
    }
    if nan.iter().any(|&n| n) {
        return x.iter().position(|v| v.is_nan()).unwrap_or(0);
    }
    let m = best
        .iter()
        .fold(best[0], |m, &b| if better(b, m) { b } else { m });
    // The first run of lanes holding `m`, then its first element equal to it.
    let mut at = 0;
    for c in x.chunks(EXTREME_LANES) {
        if c.iter().fold(false, |f, &v| f | (v == m)) {
            return at + c.iter().position(|&v| v == m).unwrap_or(0);
        }
        at += c.len();
    }
    0
}

best_level! {
    /// [`index_of_extreme`] for the maximum.
    fn index_of_max<T>(x: &[T]) -> usize
    where { T: Num }
    {
        index_of_extreme::<T, true>(x)
    }
}

best_level! {
    /// [`index_of_extreme`] for the minimum.
    fn index_of_min<T>(x: &[T]) -> usize
    where { T: Num }
    {
        index_of_extreme::<T, false>(x)
    }
}

/// The extreme of every lane (lanes are never empty here).
fn extremes<T: Num>(self_: &Tensor, mask: &[bool], max: bool) -> Result<Vec<(T, i64)>> {
    let r = reduce_lanes::<T, _>(self_, mask, &Extreme { max })?;
    memory::try_collect(r.len(), r.into_iter().map(|p| p.unwrap_or((T::zero(), 0))))
}

/// `argmax` / `argmin(self, dim, keepdim)` (`max`: which; `out` for
/// `argmax.out` / `argmin.out`): PyTorch's `argmax_argmin_impl` checks, then
/// the index of the first extreme (the first NaN) of each lane.
pub(crate) fn arg_extreme(
    self_: &Tensor,
    dim: Option<i64>,
    keepdim: bool,
    out: Option<&Tensor>,
    max: bool,
) -> Result<Tensor> {
    let name = if max { "argmax()" } else { "argmin()" };
    let mask = match dim {
        Some(d) => {
            let w = wrap_dim(d, self_.dim())?;
            check_nonempty_dim(self_, w, name)?;
            let mut m = vec![false; self_.dim()];
            if let Some(x) = m.get_mut(w) {
                *x = true;
            }
            m
        }
        None => {
            if self_.numel() == 0 {
                return Err(index_error(format!(
                    "{name}: Expected reduction dim to be specified for input.numel() == 0."
                )));
            }
            vec![true; self_.dim()]
        }
    };
    if self_.dtype() == DType::Bool {
        return Err(not_implemented(format!(
            "{name}: does not support bool input"
        )));
    }
    let shape = reduced_shape(&self_.shape(), &mask, keepdim);
    if let Some(m) = prepare(self_, &shape, DType::Int64, out)? {
        return Ok(m);
    }
    with_dtype!(self_.dtype(), T => {
        let r = extremes::<T>(self_, &mask, max)?;
        let idx = memory::try_collect(r.len(), r.into_iter().map(|p| p.1))?;
        emit(idx, &shape, out)
    })
}

/// `amax` / `amin(self, dim, keepdim)` (`max`: which; `out` for `.out`):
/// PyTorch's `TORCH_META_FUNC(amax)` checks (the out dtype must be the
/// input's; an empty input needs non-empty reduced dims), then the extreme of
/// each lane, NaN propagating.
pub(crate) fn amax_amin(
    self_: &Tensor,
    dim: &[i64],
    keepdim: bool,
    out: Option<&Tensor>,
    max: bool,
) -> Result<Tensor> {
    let name = if max { "amax()" } else { "amin()" };
    if let Some(o) = out {
        crate::ensure!(
            o.dtype() == self_.dtype(),
            "Expected the dtype for input and out to match, but got {} for input's dtype and {} for out's dtype.",
            self_.dtype().c10_name(),
            o.dtype().c10_name()
        );
    }
    if self_.numel() == 0 {
        zero_numel_check_dims(self_, dim, name)?;
    }
    let mask = dim_mask(Some(dim), self_.dim())?;
    let shape = reduced_shape(&self_.shape(), &mask, keepdim);
    if let Some(m) = prepare(self_, &shape, self_.dtype(), out)? {
        return Ok(m);
    }
    with_dtype!(self_.dtype(), T => {
        let r = extremes::<T>(self_, &mask, max)?;
        let values = memory::try_collect(r.len(), r.into_iter().map(|p| p.0))?;
        emit(values, &shape, out)
    })
}

/// `zero_numel_check_dims(self, dims, fn_name)` (aten/src/ATen/native/ReduceOpsUtils.h)
/// for an empty `self`: the dims must be given, and none of them empty (the
/// dim is printed as given).
fn zero_numel_check_dims(self_: &Tensor, dims: &[i64], name: &str) -> Result<()> {
    crate::ensure!(
        !dims.is_empty(),
        "{name}: Expected reduction dim to be specified for input.numel() == 0. Specify the reduction dim with the 'dim' argument."
    );
    for &d in dims {
        let w = wrap_dim(d, self_.dim())?;
        if self_.dim() > 0 && self_.shape()[w] == 0 {
            return Err(index_error(format!(
                "{name}: Expected reduction dim {d} to have non-zero size."
            )));
        }
    }
    Ok(())
}

/// `any`: is some element of the lane nonzero (NaN included)?
struct AnyOf;

impl<T: Element> Reducer<T> for AnyOf {
    type Acc = bool;
    const ORDERED: bool = false;
    fn init(&self) -> bool {
        false
    }
    fn run(&self, acc: bool, x: &[T], _: usize) -> bool {
        acc || x.iter().any(|v| v.to_bool())
    }
    fn combine(&self, a: bool, b: bool) -> bool {
        a || b
    }
}

/// `any`, `any.dim`, `any.dims` and their out= forms (PyTorch's
/// `allany_meta` with `allow_empty_dims`: `None` reduces every dimension, an
/// empty list none); the result is bool.
pub(crate) fn any(
    self_: &Tensor,
    dims: Option<&[i64]>,
    keepdim: bool,
    out: Option<&Tensor>,
) -> Result<Tensor> {
    if let Some(o) = out {
        crate::ensure!(
            o.dtype() == DType::Bool,
            "any only supports bool tensor for result, got: {}",
            o.dtype().c10_name()
        );
    }
    let mask = match dims {
        Some([]) => vec![false; self_.dim()],
        _ => dim_mask(dims, self_.dim())?,
    };
    let shape = reduced_shape(&self_.shape(), &mask, keepdim);
    if let Some(m) = prepare(self_, &shape, DType::Bool, out)? {
        return Ok(m);
    }
    with_dtype!(self_.dtype(), T => {
        let r = reduce_lanes::<T, _>(self_, &mask, &AnyOf)?;
        emit(r, &shape, out)
    })
}

/// Welford's running mean and sum of squared deviations, in float64
/// (PyTorch's `WelfordOps<scalar_t, double, int64_t, ...>`, which `var`'s
/// CPU kernel `std_var_kernel_impl` reduces each lane with).
#[derive(Clone, Copy, Default)]
struct Welford {
    mean: f64,
    m2: f64,
    n: f64,
}

/// `var`'s lanes: [`Welford`] in logical order, pieces combined as
/// `WelfordOps::combine` does.
struct WelfordOf;

impl<T: Element> Reducer<T> for WelfordOf {
    type Acc = Welford;
    const ORDERED: bool = true;
    fn init(&self) -> Welford {
        Welford::default()
    }
    fn run(&self, mut acc: Welford, x: &[T], _: usize) -> Welford {
        for &v in x {
            let v = v.to_f64();
            acc.n += 1.0;
            let delta = v - acc.mean;
            acc.mean += delta / acc.n;
            acc.m2 += delta * (v - acc.mean);
        }
        acc
    }
    fn combine(&self, a: Welford, b: Welford) -> Welford {
        if a.n == 0.0 {
            return b;
        }
        if b.n == 0.0 {
            return a;
        }
        let delta = b.mean - a.mean;
        let n = a.n + b.n;
        let nb_over_n = b.n / n;
        Welford {
            mean: a.mean + delta * nb_over_n,
            m2: a.m2 + b.m2 + delta * delta * a.n * nb_over_n,
            n,
        }
    }
}

/// The sum of squared deviations from a fixed mean, in float64, in order
/// (the second pass of PyTorch's `std_var_all_cpu`).
struct SquaredDeviations(f64);

impl<T: Element> Reducer<T> for SquaredDeviations {
    type Acc = f64;
    const ORDERED: bool = true;
    fn init(&self) -> f64 {
        0.0
    }
    fn run(&self, acc: f64, x: &[T], _: usize) -> f64 {
        x.iter().fold(acc, |s, &v| {
            let dx = v.to_f64() - self.0;
            s + dx * dx
        })
    }
    fn combine(&self, a: f64, b: f64) -> f64 {
        a + b
    }
}

/// `var.correction` / `var.correction_out` (PyTorch's `std_var_out` in
/// aten/src/ATen/native/ReduceOps.cpp, `take_sqrt` false): a floating input;
/// the divisor is the lane's size minus `correction` (default 1), at least 0.
/// An empty input gives NaN; a single output value takes the two-pass
/// `std_var_all_cpu` (the mean in the input's dtype, then the squared
/// deviations summed in float64, the result rounded to the input's dtype);
/// more values take Welford's algorithm per lane in float64.
pub(crate) fn var(
    self_: &Tensor,
    dims: Option<&[i64]>,
    correction: Option<Scalar>,
    keepdim: bool,
    out: Option<&Tensor>,
) -> Result<Tensor> {
    if !self_.dtype().is_floating_point() {
        return Err(not_implemented(
            "std and var only support floating point and complex dtypes",
        ));
    }
    let correction = correction.map_or(1.0, |c| c.to_f64());
    let out_dtype = out.map_or(self_.dtype(), |o| o.dtype());
    let mask = dim_mask(dims, self_.dim())?;
    let shape = reduced_shape(&self_.shape(), &mask, keepdim);
    check_can_cast(self_.dtype(), out_dtype)?;
    let (n_in, n_out) = (self_.numel(), numel(&shape));
    if (n_in / n_out.max(1)) as f64 - correction <= 0.0 {
        crate::warnings::warn("var(): degrees of freedom is <= 0. Correction should be strictly less than the reduction factor (input numel divided by output numel).");
    }
    if let Some(m) = prepare(self_, &shape, out_dtype, out)? {
        return Ok(m);
    }
    let values: Vec<f64> = if n_in == 0 {
        memory::try_filled(n_out, f64::NAN)?
    } else if n_out == 1 {
        let mean = mean(self_, None, false, None, None)?.to_vec::<f64>()?[0];
        let s =
            reduce_lanes::<f64, _>(self_, &vec![true; self_.dim()], &SquaredDeviations(mean))?[0];
        let v = s / (n_in as f64 - correction).max(0.0);
        let v = if self_.dtype() == DType::Float32 {
            v as f32 as f64
        } else {
            v
        };
        vec![v]
    } else {
        let r = reduce_lanes::<f64, _>(self_, &mask, &WelfordOf)?;
        memory::try_collect(
            r.len(),
            r.into_iter().map(|w| {
                let divisor = (w.n - correction).max(0.0);
                w.m2 / divisor
            }),
        )?
    };
    float_dtype!(out_dtype, T => {
        let v = memory::try_collect(values.len(), values.into_iter().map(T::of))?;
        emit(v, &shape, out)
    }, _ => Err(check_can_cast(DType::Float64, out_dtype).unwrap_err()))
}

/// Where a cumulative sum writes.
pub(crate) enum ScanDest<'a> {
    /// A new tensor.
    New,
    /// `self`, in place (`cumsum_`).
    Inplace,
    /// `out` (`cumsum.out`).
    Out(&'a Tensor),
}

/// `cumsum`, `cumsum_` and `cumsum.out` (PyTorch's `meta_func_cum_ops` and
/// `impl_func_cum_ops` in aten/src/ATen/native/ReduceOps.cpp, and
/// `cumsum_cpu_kernel`): the result dtype is `dtype`, else the out tensor's
/// (in place: `self`'s), else `self`'s with integral and bool promoted to
/// int64; `self` is converted to it, then summed along `dim` in its
/// accumulation type (float64 for floating types, int64 for integral ones),
/// each running value rounded to the result dtype.
pub(crate) fn cumsum(
    self_: &Tensor,
    dim: i64,
    dtype: Option<DType>,
    dest: ScanDest<'_>,
) -> Result<Tensor> {
    let d = wrap_dim(dim, self_.dim())?;
    let out_dtype = match (&dest, dtype) {
        (_, Some(t)) => t,
        (ScanDest::Out(o), None) => o.dtype(),
        (ScanDest::Inplace, None) => self_.dtype(),
        (ScanDest::New, None) => dtype_from_self(self_, None),
    };
    let shape = self_.shape();
    let out = match dest {
        // `prepare` checks its dtype and resizes it.
        ScanDest::Out(o) => Some(o),
        ScanDest::Inplace => {
            crate::ensure!(
                out_dtype == self_.dtype(),
                "Bad in-place call: input tensor dtype {} and output tensor dtype {} should match",
                self_.dtype().typemeta_name(),
                out_dtype.typemeta_name()
            );
            Some(self_)
        }
        ScanDest::New => None,
    };
    if let Some(m) = prepare(self_, &shape, out_dtype, out)? {
        return Ok(m);
    }
    let inner: usize = shape.get(d + 1..).map_or(1, |s| s.iter().product());
    let len = shape.get(d).copied().unwrap_or(1);
    match out_dtype {
        DType::Float32 => scan::<f32, f64>(self_, len, inner, &shape, out),
        DType::Float64 => scan::<f64, f64>(self_, len, inner, &shape, out),
        DType::Int32 => scan::<i32, i64>(self_, len, inner, &shape, out),
        DType::Int64 => scan::<i64, i64>(self_, len, inner, &shape, out),
        DType::Bool => Err(super::dispatch_error("cumsum_out_cpu", DType::Bool)),
    }
}

/// The running sums of `self_` (as `T`, accumulated as `A`) along a
/// dimension of `len` elements `inner` apart in the contiguous result.
fn scan<T: Num, A: Num>(
    self_: &Tensor,
    len: usize,
    inner: usize,
    shape: &[usize],
    out: Option<&Tensor>,
) -> Result<Tensor> {
    let mut data = self_.to_vec::<T>()?;
    let block = len * inner;
    if block > 0 {
        for chunk in data.chunks_mut(block) {
            for i in 0..inner {
                let mut acc = A::zero();
                for k in 0..len {
                    let x = &mut chunk[k * inner + i];
                    acc = acc.add(cast::<T, A>(*x));
                    *x = cast::<A, T>(acc);
                }
            }
        }
    }
    emit(data, shape, out)
}

/// `max.dim` / `min.dim`: values and int64 indices.
pub(crate) fn extreme_dim(
    self_: &Tensor,
    dim: i64,
    keepdim: bool,
    max: bool,
) -> Result<(Tensor, Tensor)> {
    let name = if max { "max()" } else { "min()" };
    let w = wrap_dim(dim, self_.dim())?;
    check_nonempty_dim(self_, w, name)?;
    let mut mask = vec![false; self_.dim()];
    if let Some(x) = mask.get_mut(w) {
        *x = true;
    }
    let shape = reduced_shape(&self_.shape(), &mask, keepdim);
    if self_.device() == Device::Meta {
        return Ok((
            Tensor::try_zeros(&shape, self_.dtype(), Device::Meta)?,
            Tensor::try_zeros(&shape, DType::Int64, Device::Meta)?,
        ));
    }
    check_alloc(&shape, self_.dtype(), Device::Cpu)?;
    check_alloc(&shape, DType::Int64, Device::Cpu)?;
    with_dtype!(self_.dtype(), T => {
        let r = extremes::<T>(self_, &mask, max)?;
        let values = memory::try_collect(r.len(), r.iter().map(|p| p.0))?;
        let indices = memory::try_collect(r.len(), r.iter().map(|p| p.1))?;
        Ok((Tensor::from_vec(values, &shape)?, Tensor::from_vec(indices, &shape)?))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slices_are_reinterpreted_only_as_their_own_type() {
        let x = [1.0f32, 2.0, 3.0];
        let same = slice_as::<f32, f32>(&x).unwrap();
        assert_eq!(same.as_ptr(), x.as_ptr());
        assert_eq!(same, &x[..]);
        // Same size, other type: never reinterpreted.
        assert!(slice_as::<f32, i32>(&x).is_none());
        assert!(slice_as::<i64, f64>(&[1i64, 2]).is_none());
        assert!(slice_as::<f64, i64>(&[]).is_none());
    }

    /// The vectorized extremes pick what the one-branch-per-element rule
    /// picks (first NaN, else the first of tied extremes, -0.0 and 0.0 tied),
    /// at every length around the lanes, for floats, integers and bools.
    #[test]
    fn extremes_are_the_first_best_element() {
        fn reference<T: Num>(x: &[T], max: bool) -> usize {
            let e = Extreme { max };
            let mut k = 0;
            for (i, &v) in x.iter().enumerate().skip(1) {
                if x[k].is_nan() {
                    break;
                }
                if e.better(v, x[k]) {
                    k = i;
                }
            }
            k
        }
        fn check<T: Num + std::fmt::Debug>(x: &[T]) {
            for n in 1..=x.len() {
                let x = &x[..n];
                assert_eq!(index_of_max(x), reference(x, true), "max of {x:?}");
                assert_eq!(index_of_min(x), reference(x, false), "min of {x:?}");
            }
        }
        let mut state = 7u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        // (Under Miri, a few rounds: each is thousands of runs.)
        for round in 0..if cfg!(miri) { 4 } else { 40 } {
            // Few distinct values: many ties.
            let f: Vec<f32> = (0..70)
                .map(|_| match next() % 9 {
                    0 => -0.0,
                    1 => 0.0,
                    2 if round % 4 == 0 => f32::NAN,
                    3 => f32::INFINITY,
                    4 => f32::NEG_INFINITY,
                    k => k as f32 - 6.0,
                })
                .collect();
            check(&f);
            let d: Vec<f64> = f.iter().map(|&v| v as f64).collect();
            check(&d);
            let i: Vec<i64> = (0..70).map(|_| (next() % 5) as i64 - 2).collect();
            check(&i);
            let b: Vec<bool> = (0..40).map(|_| next() % 3 == 0).collect();
            check(&b);
        }
        // The sign of a tied zero is the first one's.
        let z = [0.0f32, -0.0, 0.0, -0.0];
        assert_eq!(index_of_max(&z[1..]), 0);
        assert_eq!(index_of_min(&z), 0);
    }

    /// Values that make the order of additions visible in the bits: wide
    /// magnitudes and signs, and now and then an infinity or a NaN.
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    fn awkward(n: usize, seed: u64) -> Vec<f64> {
        let mut state = seed;
        (0..n)
            .map(|i| {
                state = state
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let u = (state >> 11) as f64 / (1u64 << 53) as f64;
                match (state >> 3) % 97 {
                    0 if i % 5 == 0 => f64::INFINITY,
                    1 if i % 7 == 0 => f64::NAN,
                    _ => (u - 0.5) * 10f64.powi((state % 13) as i32 - 6),
                }
            })
            .collect()
    }

    /// The written-out AVX-512 sums are `block_sum_lanes`'s, bit for bit, at
    /// every length around the register and tail boundaries, each slice
    /// ending where its allocation ends (a masked load reading past the
    /// tail would read outside it).
    #[test]
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    fn block_sums_are_the_same_bits_on_every_level() {
        if crate::kernels::vmath::detected_level() != crate::kernels::vmath::Level::Avx512 {
            eprintln!("no AVX-512 here: only the portable sums run");
            return;
        }
        let finite = |n, seed| -> Vec<f64> {
            awkward(n, seed)
                .into_iter()
                .map(|v| if v.is_finite() { v } else { 1.5 })
                .collect()
        };
        for n in (0..=300).chain([1000, 4095, 4096]) {
            for (seed, values) in [(1, finite(n, 1)), (2, awkward(n, 2))] {
                let x64: Vec<f64> = values.clone();
                let x32: Vec<f32> = values.iter().map(|&v| v as f32).collect();
                // SAFETY: AVX-512 F was detected above.
                let (s64, s32) =
                    unsafe { (avx512::block_sum_f64(&x64), avx512::block_sum_f32(&x32)) };
                let (r64, r32) = (block_sum_lanes(&x64), block_sum_lanes(&x32));
                assert!(
                    s64.to_bits() == r64.to_bits() || (s64.is_nan() && r64.is_nan()),
                    "float64, length {n}, seed {seed}: {s64} vs {r64}"
                );
                assert!(
                    s32.to_bits() == r32.to_bits() || (s32.is_nan() && r32.is_nan()),
                    "float32, length {n}, seed {seed}: {s32} vs {r32}"
                );
                // The dispatching entry takes the written-out path here.
                assert_eq!(block_sum(&x32).to_bits(), s32.to_bits());
            }
        }
    }
}
