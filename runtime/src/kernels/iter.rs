//! The iteration engine of pointwise kernels, after PyTorch's `TensorIterator`.
//!
//! [`Loop::new`] takes an output (operand 0) and inputs broadcast to one shape
//! and computes the iteration geometry once:
//!
//! 1. each input's strides in the broadcast shape (0 where it is broadcast);
//! 2. the order of dimensions, fastest first, by the operands' strides
//!    (`reorder_dimensions`: the first operand with a strict preference
//!    decides; broadcast dimensions express none), and from it the strides of a
//!    new output ([`output_strides`], which also applies `TensorIterator`'s fast
//!    setup: inputs that are all contiguous, all channels-last, or all dense with
//!    one set of strides give an output laid out the same way);
//! 3. dimensions merged where every operand steps through them as one
//!    (`coalesce_dimensions`).
//!
//! [`Loop::run`] then walks the elements row by row along the fastest
//! dimension, in blocks of [`BLOCK`] elements. Each input of a block is handed
//! to the kernel as a [`Src`]: the tensor's own memory when it is contiguous
//! along the row and already of the compute type, one value when the row
//! broadcasts it, or a block gathered (and cast) into a stack buffer otherwise.
//! The kernel writes the output block in place when the output is dense and of
//! the result type, else into a buffer that is cast and scattered. Casting
//! therefore happens per block, in loops the compiler vectorizes, and a kernel
//! is one closure from input blocks to an output block ([`Out`]), written
//! through [`map1`], [`map2`], [`map3`] or [`Out`]'s own writers, each of
//! which writes the whole block and returns the [`Written`] token the kernel
//! returns: so the same kernels write new results straight into fresh,
//! uninitialised capacity (`pointwise::new_from_blocks`).
//!
//! Above [`crate::parallel::GRAIN_SIZE`] elements the range is split across
//! threads ([`crate::parallel::parallel_for`]) when every thread provably
//! writes its own elements: a dense output, and inputs that share its storage
//! only as the output itself or outside its extent. Otherwise one thread runs.
//!
//! Memory: the storages are locked once for the whole loop, in address order
//! (so two loops never wait on each other), the output's for writing and each
//! other storage once for reading; an input in the output's storage is read
//! through the write lock.

use super::layout::{
    channels_last_order, dense_strides, is_non_overlapping_and_dense, iteration_order,
};
use super::vmath::best_level;
use crate::error::Result;
use crate::parallel::{parallel_for, GRAIN_SIZE};
use crate::tensor::{
    cast, is_contiguous_strides, is_dense_in_order, Buffer, DType, Element, Geometry, IntoBuffer,
    Scalar, Storage, StorageLocks,
};
use smallvec::SmallVec;
use std::mem::MaybeUninit;
use std::ops::Range;

/// Elements per block: the unit of gathering, casting and kernel calls.
pub(crate) const BLOCK: usize = 256;

/// A pointwise kernel as the engine holds it: `kernel(inputs, out)` over one
/// block. The engine's loops call it through a reference, so they are compiled
/// once per arity and element types, not once per kernel (one indirect call
/// per block of up to [`BLOCK`] elements).
pub(crate) type BlockFn<'k, const N: usize, T, R> =
    dyn Fn([Src<'_, T>; N], Out<'_, R>) -> Written + Sync + 'k;

/// Rows of a tile: an input read across rows (a transposed operand) is read
/// this many rows at a time, each of its cache lines once.
const TILE: usize = 8;

/// Rows shorter than this are not tiled: one pass over such a row touches
/// fewer cache lines of a transposed operand (one per element) than the L1
/// cache holds, so the next rows find them there anyway (a 32 x 32 add of a
/// transpose was 15% slower tiled; 1000 x 1000 was 40% faster).
const TILE_MIN_ROW: usize = 256;

pub(crate) use crate::tensor::Dims;

/// One input of a kernel block: a run of values, or one value for the whole
/// block (a broadcast operand).
#[derive(Clone, Copy, Debug)]
pub(crate) enum Src<'a, T> {
    /// One value per output element.
    Slice(&'a [T]),
    /// The same value for every output element.
    Scalar(T),
}

/// The output block of a kernel: every element is written exactly through
/// this type's writers ([`map1`], [`map2`], [`map3`], [`Out::fill`],
/// [`Out::with_slice`]), each of which writes the whole block (or panics) and
/// returns the [`Written`] token a kernel must return. So a new result can be
/// written straight into fresh, uninitialised capacity, without a first pass
/// of zeros ([`Out::fresh`]), and nothing can leave an element uninitialised
/// or de-initialise one of an existing tensor ([`Out::init`]).
pub(crate) struct Out<'a, R> {
    slots: &'a mut [MaybeUninit<R>],
    /// Every slot already holds a value (an existing tensor or buffer).
    initialised: bool,
}

/// Proof that a kernel wrote its whole output block: only [`Out`]'s writers
/// make one.
#[must_use]
pub(crate) struct Written(());

impl<'a, R: Copy> Out<'a, R> {
    /// The block of existing, initialised elements `s`.
    pub(crate) fn init(s: &'a mut [R]) -> Out<'a, R> {
        // SAFETY: `MaybeUninit<R>` has the layout of `R`, and the slots are
        // only ever written with values of `R` (this type's writers), so `s`
        // stays initialised.
        let slots = unsafe { &mut *(s as *mut [R] as *mut [MaybeUninit<R>]) };
        Out {
            slots,
            initialised: true,
        }
    }

    /// A block of fresh capacity, written once by the kernel.
    pub(crate) fn fresh(s: &'a mut [MaybeUninit<R>]) -> Out<'a, R> {
        Out {
            slots: s,
            initialised: false,
        }
    }

    /// The number of elements of the block.
    pub(crate) fn len(&self) -> usize {
        self.slots.len()
    }

    /// Every element `v`.
    pub(crate) fn fill(self, v: R) -> Written {
        for o in self.slots.iter_mut() {
            o.write(v);
        }
        Written(())
    }

    /// Runs `f` on the block as initialised elements (first set to `zero`
    /// when the block is fresh capacity), for functions over `&mut [R]` that
    /// write every element (`vmath`'s).
    pub(crate) fn with_slice(self, zero: R, f: impl FnOnce(&mut [R])) -> Written {
        if !self.initialised {
            for o in self.slots.iter_mut() {
                o.write(zero);
            }
        }
        // SAFETY: every slot is initialised (above, or `Out::init`'s), and
        // `MaybeUninit<R>` has the layout of `R`.
        f(unsafe { &mut *(self.slots as *mut [MaybeUninit<R>] as *mut [R]) });
        Written(())
    }
}

impl<T> Src<'_, T> {
    /// Panics unless the block has at least `n` values (so that a writer
    /// over `n` outputs writes them all).
    #[inline(always)]
    fn covers(&self, n: usize, what: &str) {
        if let Src::Slice(v) = self {
            assert!(
                v.len() >= n,
                "{what}: an input block of {} values for {n} outputs",
                v.len()
            );
        }
    }
}

best_level! {
    /// `f` over one input block.
    pub(crate) fn map1<T, R, F>(a: Src<'_, T>, out: Out<'_, R>, f: F) -> Written
    where { T: Copy, R: Copy, F: Fn(T) -> R }
    {
        a.covers(out.len(), "map1");
        match a {
            Src::Slice(a) => {
                for (o, &x) in out.slots.iter_mut().zip(a) {
                    o.write(f(x));
                }
                Written(())
            }
            Src::Scalar(x) => out.fill(f(x)),
        }
    }
}

best_level! {
    /// `f` over two input blocks, each a run or one value.
    pub(crate) fn map2<T, R, F>(a: Src<'_, T>, b: Src<'_, T>, out: Out<'_, R>, f: F) -> Written
    where { T: Copy, R: Copy, F: Fn(T, T) -> R }
    {
        a.covers(out.len(), "map2");
        b.covers(out.len(), "map2");
        match (a, b) {
            (Src::Slice(a), Src::Slice(b)) => {
                for ((o, &x), &y) in out.slots.iter_mut().zip(a).zip(b) {
                    o.write(f(x, y));
                }
            }
            (Src::Slice(a), Src::Scalar(y)) => {
                for (o, &x) in out.slots.iter_mut().zip(a) {
                    o.write(f(x, y));
                }
            }
            (Src::Scalar(x), Src::Slice(b)) => {
                for (o, &y) in out.slots.iter_mut().zip(b) {
                    o.write(f(x, y));
                }
            }
            (Src::Scalar(x), Src::Scalar(y)) => {
                for o in out.slots.iter_mut() {
                    o.write(f(x, y));
                }
            }
        }
        Written(())
    }
}

best_level! {
    /// `f` over three input blocks (runs are read element by element; a
    /// block of one value repeats it).
    pub(crate) fn map3<T, R, F>(
        a: Src<'_, T>,
        b: Src<'_, T>,
        c: Src<'_, T>,
        out: Out<'_, R>,
        f: F,
    ) -> Written
    where { T: Copy, R: Copy, F: Fn(T, T, T) -> R }
    {
        let at = |s: &Src<'_, T>, i: usize| match *s {
            Src::Slice(v) => v[i],
            Src::Scalar(x) => x,
        };
        for (i, o) in out.slots.iter_mut().enumerate() {
            o.write(f(at(&a, i), at(&b, i), at(&c, i)));
        }
        Written(())
    }
}

/// Where one operand's elements are, in the loop's dimension order.
#[derive(Clone, Debug)]
struct Place {
    /// The storage, or `None` for a number.
    storage: Option<Storage>,
    /// A number operand's value.
    number: Option<Scalar>,
    dtype: DType,
    offset: usize,
    /// Per loop dimension (fastest first), in elements.
    strides: Dims,
}

/// A pointwise loop over an output and its inputs: shapes broadcast, order and
/// merged dimensions computed once.
#[derive(Debug)]
pub(crate) struct Loop {
    /// Sizes per loop dimension, fastest first (at least one dimension).
    shape: Dims,
    /// Operand 0 is the output.
    places: SmallVec<[Place; 4]>,
    numel: usize,
}

/// One operand of a loop.
#[derive(Clone, Copy)]
pub(crate) enum View<'a> {
    /// A tensor's elements: its geometry and dtype.
    Tensor(&'a Geometry, DType),
    /// A number (the same value everywhere).
    Number(Scalar),
}

/// The output of a loop.
#[derive(Clone, Copy)]
enum Output<'a> {
    /// An existing tensor's elements ([`Loop::new`]).
    Tensor(&'a Geometry, DType),
    /// A new result laid out by these strides ([`Loop::fresh`]).
    Fresh(&'a [usize], DType),
}

impl View<'_> {
    fn shape(&self) -> &[usize] {
        match self {
            View::Tensor(g, _) => &g.shape,
            View::Number(_) => &[],
        }
    }

    fn strides(&self) -> &[usize] {
        match self {
            View::Tensor(g, _) => &g.strides,
            View::Number(_) => &[],
        }
    }
}

/// Strides of `g` broadcast to `shape` (right-aligned; 0 where `g` has size 1
/// or no dimension and `shape` has more).
pub(crate) fn broadcast_strides(g_shape: &[usize], g_strides: &[usize], shape: &[usize]) -> Dims {
    let lead = shape.len() - g_shape.len();
    (0..shape.len())
        .map(|d| {
            if d < lead {
                0
            } else {
                let (n, s) = (g_shape[d - lead], g_strides[d - lead]);
                if n == 1 && shape[d] != 1 {
                    0
                } else {
                    s
                }
            }
        })
        .collect()
}

/// The strides of a new output of `shape` for inputs with these geometries
/// (`(shape, strides)` each), as `TensorIterator` allocates it: the fast setup
/// when every input has `shape` and they are all contiguous, all
/// channels-last, or all dense with the same strides; otherwise dense in the
/// order [`iteration_order`] chooses from the broadcast strides.
pub(crate) fn output_strides(shape: &[usize], inputs: &[(&[usize], &[usize])]) -> Dims {
    let contiguous = || crate::tensor::contiguous_dims(shape);
    if inputs.is_empty() || crate::tensor::numel(shape) == 0 {
        return contiguous();
    }
    if inputs.iter().all(|(s, _)| *s == shape) {
        if inputs.iter().all(|(s, st)| is_contiguous_strides(s, st)) {
            return contiguous();
        }
        if let Some(order) = channels_last_order(shape.len()) {
            if inputs
                .iter()
                .all(|(s, st)| is_dense_in_order(s, st, order.iter().copied()))
            {
                return dense_strides(shape, order);
            }
        }
        let (_, last) = inputs[inputs.len() - 1];
        if inputs
            .iter()
            .all(|(s, st)| is_non_overlapping_and_dense(s, st))
            && inputs.iter().all(|(_, st)| *st == last)
        {
            return last.iter().copied().collect();
        }
    }
    let bs: SmallVec<[Dims; 4]> = inputs
        .iter()
        .map(|(s, st)| broadcast_strides(s, st, shape))
        .collect();
    let refs: SmallVec<[&[usize]; 4]> = bs.iter().map(|s| s.as_slice()).collect();
    let perm = iteration_order(shape, &refs);
    if perm
        .iter()
        .enumerate()
        .all(|(j, &d)| d == shape.len() - 1 - j)
    {
        return contiguous();
    }
    dense_strides(shape, &perm)
}

impl Loop {
    /// The loop writing `out` (of `shape`) from `inputs`, each broadcasting to
    /// `shape`. The output's own strides take part in the order when
    /// `out_has_layout` (an existing tensor, not one just allocated to follow
    /// the inputs).
    pub fn new(
        shape: &[usize],
        out: (&Geometry, DType),
        inputs: &[View<'_>],
        out_has_layout: bool,
    ) -> Loop {
        Loop::build(shape, Output::Tensor(out.0, out.1), inputs, out_has_layout)
    }

    /// The loop writing a new result of `shape` and `dtype`, laid out by
    /// `strides` (dense: [`output_strides`]'s), from `inputs`; run it with
    /// [`Loop::run_fresh`], which writes the result straight into fresh
    /// capacity. An error if `strides` are not dense for `shape`.
    pub fn fresh(
        shape: &[usize],
        strides: &[usize],
        dtype: DType,
        inputs: &[View<'_>],
    ) -> Result<Loop> {
        crate::ensure!(
            strides.len() == shape.len() && is_non_overlapping_and_dense(shape, strides),
            "internal error: a new result's strides {strides:?} are not dense for {shape:?}"
        );
        Ok(Loop::build(
            shape,
            Output::Fresh(strides, dtype),
            inputs,
            false,
        ))
    }

    /// [`Loop::new`] and [`Loop::fresh`].
    fn build(shape: &[usize], out: Output<'_>, inputs: &[View<'_>], out_has_layout: bool) -> Loop {
        let ndim = shape.len();
        let out_strides: Dims = match out {
            Output::Tensor(g, _) => broadcast_strides(&g.shape, &g.strides, shape),
            Output::Fresh(strides, _) => strides.iter().copied().collect(),
        };
        let bstrides: SmallVec<[Dims; 4]> = std::iter::once(out_strides)
            .chain(
                inputs
                    .iter()
                    .map(|v| broadcast_strides(v.shape(), v.strides(), shape)),
            )
            .collect();
        let skip = usize::from(!out_has_layout);
        let refs: SmallVec<[&[usize]; 4]> = bstrides[skip..].iter().map(|s| s.as_slice()).collect();
        let perm = iteration_order(shape, &refs);
        // Permuted (fastest first), then merged where every operand allows.
        let mut dims: Dims = perm.iter().map(|&d| shape[d]).collect();
        let mut strides: SmallVec<[Dims; 4]> = bstrides
            .iter()
            .map(|s| perm.iter().map(|&d| s[d]).collect())
            .collect();
        let mut d = 0;
        while d + 1 < dims.len() {
            let can_merge = dims[d] == 1
                || dims[d + 1] == 1
                || strides
                    .iter()
                    .all(|s| s[d].wrapping_mul(dims[d]) == s[d + 1]);
            if can_merge {
                for s in strides.iter_mut() {
                    if dims[d] == 1 {
                        s[d] = s[d + 1];
                    }
                    s.remove(d + 1);
                }
                dims[d] *= dims[d + 1];
                dims.remove(d + 1);
            } else {
                d += 1;
            }
        }
        if ndim == 0 || dims.is_empty() {
            dims = smallvec::smallvec![1];
            for s in strides.iter_mut() {
                *s = smallvec::smallvec![0];
            }
        }
        let numel = dims.iter().product();
        let mut strides = strides.into_iter();
        let out_place = |strides: Dims| match out {
            Output::Tensor(g, dtype) => Place {
                storage: Some(g.storage.clone()),
                number: None,
                dtype,
                offset: g.offset,
                strides,
            },
            // No storage yet: `run_fresh` supplies the memory.
            Output::Fresh(_, dtype) => Place {
                storage: None,
                number: None,
                dtype,
                offset: 0,
                strides,
            },
        };
        let places = std::iter::once(out_place(strides.next().expect("the output's strides")))
            .chain(inputs.iter().zip(strides).map(|(v, strides)| match v {
                View::Tensor(g, dtype) => Place {
                    storage: Some(g.storage.clone()),
                    number: None,
                    dtype: *dtype,
                    offset: g.offset,
                    strides,
                },
                View::Number(s) => Place {
                    storage: None,
                    number: Some(*s),
                    dtype: DType::Float64,
                    offset: 0,
                    strides,
                },
            }))
            .collect();
        Loop {
            shape: dims,
            places,
            numel,
        }
    }

    /// Runs `kernel` over every block: `kernel(inputs, out)` with one [`Src`]
    /// per input (converted to `T`) and the output block (of `R`, converted to
    /// the output's dtype afterwards). `N` is the number of inputs.
    pub fn run<const N: usize, T, R>(
        &self,
        kernel: impl Fn([Src<'_, T>; N], Out<'_, R>) -> Written + Sync,
    ) -> Result<()>
    where
        T: IntoBuffer,
        R: IntoBuffer,
    {
        self.run_block_fn(&kernel)
    }

    /// [`Loop::run`], compiled once per arity and element types.
    fn run_block_fn<const N: usize, T, R>(&self, kernel: &BlockFn<'_, N, T, R>) -> Result<()>
    where
        T: IntoBuffer,
        R: IntoBuffer,
    {
        assert!(
            self.places[0].storage.is_some(),
            "Loop::run: the loop writes a new result: use Loop::run_fresh"
        );
        if self.numel == 0 {
            return Ok(());
        }
        let locks = Locks::acquire(&self.shape, &self.places)?;
        self.drive::<N, T, R>(&locks.raw, false, kernel);
        Ok(())
    }

    /// Runs `kernel` as [`Loop::run`] does, writing the new result of a
    /// [`Loop::fresh`] loop into fresh capacity (no pass of zeros before it):
    /// its elements in memory order, ready for `Tensor::from_vec` and
    /// `as_strided` with the loop's strides.
    pub fn run_fresh<const N: usize, T, R>(
        &self,
        kernel: impl Fn([Src<'_, T>; N], Out<'_, R>) -> Written + Sync,
    ) -> Result<Vec<R>>
    where
        T: IntoBuffer,
        R: IntoBuffer,
    {
        self.run_fresh_block_fn(&kernel)
    }

    /// [`Loop::run_fresh`], compiled once per arity and element types.
    fn run_fresh_block_fn<const N: usize, T, R>(
        &self,
        kernel: &BlockFn<'_, N, T, R>,
    ) -> Result<Vec<R>>
    where
        T: IntoBuffer,
        R: IntoBuffer,
    {
        let out = &self.places[0];
        assert!(
            out.storage.is_none() && out.number.is_none(),
            "Loop::run_fresh: the loop writes an existing tensor: use Loop::run"
        );
        crate::ensure!(
            out.dtype == R::DTYPE,
            "internal error: a new {} result written as {}",
            out.dtype.c10_name(),
            R::DTYPE.c10_name()
        );
        let mut v: Vec<R> = crate::tensor::alloc::try_with_capacity(self.numel)?;
        if self.numel == 0 {
            return Ok(v);
        }
        // The output's positions are exactly 0..numel, each once: strides
        // without overlap and dense (checked here on the merged loop, so the
        // bound below is the only one needed), the last position numel - 1.
        let last = self
            .shape
            .iter()
            .zip(&out.strides)
            .try_fold(0usize, |acc, (&n, &s)| {
                (n - 1).checked_mul(s).and_then(|k| acc.checked_add(k))
            });
        crate::ensure!(
            out.offset == 0
                && is_non_overlapping_and_dense(&self.shape, &out.strides)
                && last == Some(self.numel - 1),
            "internal error: a new result's strides are not dense"
        );
        let locks = Locks::acquire(&self.shape, &self.places)?;
        let mut raw = locks.raw.clone();
        raw[0] = Raw {
            ptr: v.as_mut_ptr() as *mut u8,
            len: self.numel,
        };
        self.drive::<N, T, R>(&raw, true, kernel);
        // SAFETY: the capacity is at least `numel`; the loop visited every
        // position of the output once (`drive` covers `0..numel` of the loop,
        // which the dense, non-overlapping strides checked above map onto
        // `0..numel` one to one), and each block was written in full: the
        // kernel's `Written` token for a block written in place, `scatter` of
        // a buffer the kernel wrote otherwise.
        unsafe { v.set_len(self.numel) };
        Ok(v)
    }

    /// The loop over `raw` (operand 0's memory, then the inputs'), on several
    /// threads when each writes its own elements. `fresh`: operand 0 is
    /// uninitialised capacity.
    fn drive<const N: usize, T, R>(&self, raw: &[Raw], fresh: bool, kernel: &BlockFn<'_, N, T, R>)
    where
        T: IntoBuffer,
        R: IntoBuffer,
    {
        assert_eq!(self.places.len(), N + 1, "Loop: {N} inputs expected");
        // Dense output: rows of different outer indices never share elements.
        let dense = is_non_overlapping_and_dense(&self.shape, &self.places[0].strides);
        // Inputs in the output's storage: the output itself (same positions,
        // read before written by the same thread) or outside its extent.
        let out = &self.places[0];
        let disjoint = self.places[1..].iter().all(|p| {
            !same_storage(p, out)
                || (p.offset == out.offset && p.strides == out.strides)
                || extents_disjoint(&self.shape, p, out)
        });
        let ctx = Ctx {
            shape: &self.shape,
            places: &self.places,
            raw,
            out_dense: dense,
            out_fresh: fresh,
        };
        if dense && disjoint && self.numel > GRAIN_SIZE {
            parallel_for(0..self.numel, GRAIN_SIZE, |r| {
                ctx.serial::<N, T, R>(r, kernel)
            });
        } else {
            ctx.serial::<N, T, R>(0..self.numel, kernel);
        }
    }
}

/// Are two operands in one storage?
fn same_storage(a: &Place, b: &Place) -> bool {
    matches!((&a.storage, &b.storage), (Some(x), Some(y)) if x.ptr_eq(y))
}

/// Do the memory extents of two operands (over the loop shape) not intersect?
fn extents_disjoint(shape: &[usize], a: &Place, b: &Place) -> bool {
    let end = |p: &Place| {
        shape
            .iter()
            .zip(&p.strides)
            .fold(p.offset, |acc, (&n, &s)| acc + (n - 1) * s)
    };
    end(a) < b.offset || end(b) < a.offset
}

/// A base pointer and element count of one locked storage.
#[derive(Clone, Copy, Debug)]
struct Raw {
    ptr: *mut u8,
    len: usize,
}

impl Raw {
    /// Panics unless the `count` positions `at`, `at + stride`, ... lie
    /// inside the buffer. Every raw access of the loop checks its positions
    /// with this first (one comparison per block or row, not per element),
    /// so an error in the loop's bookkeeping is a panic, never an access
    /// outside the memory; `Locks::acquire` has already refused views past
    /// their storage with an error.
    #[inline(always)]
    fn check(&self, at: usize, count: usize, stride: usize) {
        let inside = count == 0
            || (count - 1)
                .checked_mul(stride)
                .and_then(|o| o.checked_add(at))
                .is_some_and(|last| last < self.len);
        assert!(
            inside,
            "internal error: {count} positions from {at} every {stride} outside a buffer of {}",
            self.len
        );
    }
}

// SAFETY: a `Raw` is only created by `Locks::acquire` while the storage's lock
// is held (write lock for the output's storage, read locks for the others),
// and only used while `Locks` lives. Threads then access disjoint output
// elements and only read inputs (see `Loop::run` for when it goes parallel),
// so sharing the pointers between the loop's threads races on nothing.
unsafe impl Send for Raw {}
// SAFETY: as for `Send`.
unsafe impl Sync for Raw {}

/// The storages' guards, held for the loop, and each operand's base pointer.
struct Locks<'a> {
    _guards: StorageLocks<'a>,
    raw: SmallVec<[Raw; 4]>,
}

impl<'a> Locks<'a> {
    /// Locks every distinct storage once, in address order (the output's for
    /// writing), and checks that each operand's storage holds its dtype and
    /// every element the operand reaches over `shape`.
    fn acquire(shape: &[usize], places: &'a [Place]) -> Result<Locks<'a>> {
        let inputs: SmallVec<[&'a Storage; 4]> = places[1..]
            .iter()
            .filter_map(|p| p.storage.as_ref())
            .collect();
        let mut guards = StorageLocks::new(&inputs, places[0].storage.as_ref());
        let written = guards.written();
        let (write, reads) = guards.parts();
        let written_raw = write.map(buffer_raw_mut);
        let mut raw = SmallVec::new();
        for p in places {
            let Some(storage) = &p.storage else {
                raw.push(Raw {
                    ptr: std::ptr::null_mut(),
                    len: 0,
                });
                continue;
            };
            let locked = if written.is_some_and(|w| w.ptr_eq(storage)) {
                written_raw
            } else {
                reads.get(storage).map(buffer_raw)
            };
            let Some((r, dtype)) = locked else {
                crate::bail!("internal error: an operand's storage was not locked");
            };
            crate::ensure!(
                dtype == Some(p.dtype),
                "expected a storage of dtype {}",
                p.dtype.c10_name()
            );
            let last = shape
                .iter()
                .zip(&p.strides)
                .try_fold(p.offset, |acc, (&n, &s)| {
                    n.checked_sub(1)
                        .and_then(|k| k.checked_mul(s))
                        .and_then(|k| acc.checked_add(k))
                });
            crate::ensure!(
                last.is_some_and(|l| l < r.len),
                "tensor view is out of bounds of its storage"
            );
            raw.push(r);
        }
        Ok(Locks {
            _guards: guards,
            raw,
        })
    }
}

fn buffer_raw(b: &Buffer) -> (Raw, Option<DType>) {
    crate::with_buffer!(b, v, T => (Raw { ptr: v.as_ptr() as *mut u8, len: v.len() }, Some(<T as Element>::DTYPE)),
        meta => (Raw { ptr: std::ptr::null_mut(), len: 0 }, None))
}

fn buffer_raw_mut(b: &mut Buffer) -> (Raw, Option<DType>) {
    crate::with_buffer!(b, v, T => (Raw { ptr: v.as_mut_ptr() as *mut u8, len: v.len() }, Some(<T as Element>::DTYPE)),
        meta => (Raw { ptr: std::ptr::null_mut(), len: 0 }, None))
}

/// A thread's block buffers: gathered (and cast) inputs, and the output block
/// that is cast and scattered.
struct Blocks<const N: usize, T, R> {
    inputs: [[T; BLOCK]; N],
    out: [R; BLOCK],
}

/// What the loop's threads share.
struct Ctx<'a> {
    shape: &'a [usize],
    places: &'a [Place],
    raw: &'a [Raw],
    out_dense: bool,
    /// The output is fresh capacity, written once (`Loop::run_fresh`).
    out_fresh: bool,
}

/// How every row reads one input, decided once per call.
#[derive(Clone, Copy)]
enum Read<T> {
    /// A run of the compute type, read in place.
    Direct,
    /// The same value everywhere (a number operand).
    Number(T),
    /// One element per row (stride 0 along it), read at the row's start.
    Repeat,
    /// Gathered (and cast) into a block buffer.
    Gather,
}

/// What a call's rows need to know of the operands, read once: the inputs'
/// [`Read`]s, and each operand's stride per loop dimension in one flat table
/// (`step[d * (N + 1) + k]`, operand 0 the output), so that the row loop
/// indexes plain slices.
struct Plan<const N: usize, T> {
    reads: [Read<T>; N],
    step: SmallVec<[usize; 32]>,
    /// The output's blocks are written in place (dense, a run of `R`).
    out_direct: bool,
    /// Rows (dimension 0) short enough that one block takes several of them
    /// (`BLOCK / rows` whole rows, stepping along dimension 1), with the
    /// reads of such blocks: a run stays a run only when the rows follow one
    /// another in memory, a per-row value a value only when it is the same
    /// for every row; the others are gathered row by row.
    rows: Option<([Read<T>; N], bool)>,
}

/// Rows at most this long are taken several to a block ([`Plan::rows`]).
const SHORT_ROW: usize = BLOCK / 2;

impl Ctx<'_> {
    /// The reads and strides of this loop's operands for compute type `T`
    /// and result type `R`.
    fn plan<const N: usize, T: IntoBuffer, R: IntoBuffer>(&self) -> Plan<N, T> {
        let out = &self.places[0];
        let reads = std::array::from_fn(|i| {
            let p = &self.places[i + 1];
            if let Some(x) = p.number {
                Read::Number(T::from_scalar(x))
            } else if p.strides[0] == 0 {
                Read::Repeat
            } else if p.dtype == T::DTYPE && p.strides[0] == 1 && !same_storage(p, out) {
                Read::Direct
            } else {
                Read::Gather
            }
        });
        let step = (0..self.shape.len())
            .flat_map(|d| self.places.iter().map(move |p| p.strides[d]))
            .collect();
        let out_direct = self.out_dense && out.strides[0] == 1 && out.dtype == R::DTYPE;
        let n = self.shape[0];
        let rows = (self.shape.len() >= 2 && n <= SHORT_ROW).then(|| {
            let across = |k: usize| self.places[k].strides[1];
            let reads = std::array::from_fn(|i| match reads[i] {
                Read::Direct if across(i + 1) != n => Read::Gather,
                Read::Repeat if across(i + 1) != 0 => Read::Gather,
                r => r,
            });
            (reads, out_direct && across(0) == n)
        });
        // A fresh output whose rows are runs is written in place: `scatter`
        // would write its runs through slices of uninitialised memory.
        let rows = rows.filter(|&(_, direct)| direct || !self.out_fresh || out.strides[0] != 1);
        Plan {
            reads,
            step,
            out_direct,
            rows,
        }
    }

    /// The elements `range` of the loop (in loop order), row piece by row piece.
    #[inline(always)]
    fn serial<const N: usize, T: IntoBuffer, R: IntoBuffer>(
        &self,
        range: Range<usize>,
        kernel: &BlockFn<'_, N, T, R>,
    ) {
        let ndim = self.shape.len();
        let plan = self.plan::<N, T, R>();
        let step = &plan.step[..];
        let mut idx: Dims = smallvec::smallvec![0; ndim];
        let mut rest = range.start;
        for d in 0..ndim {
            idx[d] = rest % self.shape[d];
            rest /= self.shape[d];
        }
        let mut pos: SmallVec<[usize; 4]> = self
            .places
            .iter()
            .map(|p| {
                p.offset
                    + idx
                        .iter()
                        .zip(&p.strides)
                        .map(|(&i, &s)| i * s)
                        .sum::<usize>()
            })
            .collect();
        let (idx, pos) = (&mut idx[..], &mut pos[..]);
        // The block buffers, zeroed once per call (not once per row: a short
        // row would pay a 3 KiB memset for a few elements).
        let mut blocks = Blocks {
            inputs: [[T::from_bool(false); BLOCK]; N],
            out: [R::from_bool(false); BLOCK],
        };
        let tiled = self.tiled_input::<N, T>();
        // The tile buffer (8 KiB of float32) only when a loop reads tiles: a
        // small call would spend a quarter of its instructions zeroing it.
        let mut tile = tiled.map(|_| [[T::from_bool(false); BLOCK]; TILE]);
        let mut left = range.len();
        while left > 0 {
            // TILE whole rows at once when an input is read across them.
            if let (Some(ti), Some(tile)) = (tiled, tile.as_mut()) {
                if idx[0] == 0 && idx[1] + TILE <= self.shape[1] && left >= TILE * self.shape[0] {
                    self.tile_rows::<N, T, R>(&plan, pos, ti, kernel, &mut blocks, tile);
                    left -= TILE * self.shape[0];
                    if left == 0 {
                        break;
                    }
                    self.advance(step, idx, pos, 1, TILE);
                    continue;
                }
            }
            // Several short rows to a block.
            if let Some((reads, out_direct)) = &plan.rows {
                let n = self.shape[0];
                let r = (BLOCK / n).min(self.shape[1] - idx[1]).min(left / n);
                if idx[0] == 0 && r >= 2 {
                    let how = (reads, *out_direct);
                    self.block::<N, T, R>(&plan, how, pos, 0, n, r, kernel, &mut blocks, None);
                    left -= r * n;
                    if left == 0 {
                        break;
                    }
                    self.advance(step, idx, pos, 1, r);
                    continue;
                }
            }
            let n = (self.shape[0] - idx[0]).min(left);
            self.row::<N, T, R>(&plan, pos, n, kernel, &mut blocks, None);
            left -= n;
            if left == 0 {
                break;
            }
            self.advance(step, idx, pos, 0, n);
        }
    }

    /// Moves `by` along dimension `d`, carrying a full dimension into the
    /// outer ones; `step` is [`Plan::step`].
    #[inline(always)]
    fn advance(
        &self,
        step: &[usize],
        idx: &mut [usize],
        pos: &mut [usize],
        mut d: usize,
        by: usize,
    ) {
        let ndim = self.shape.len();
        let m = pos.len();
        idx[d] += by;
        for (p, s) in pos.iter_mut().zip(&step[d * m..(d + 1) * m]) {
            *p += by * s;
        }
        while idx[d] == self.shape[d] && d + 1 < ndim {
            let (here, next) = (&step[d * m..(d + 1) * m], &step[(d + 1) * m..(d + 2) * m]);
            for ((p, s), t) in pos.iter_mut().zip(here).zip(next) {
                *p = *p - idx[d] * s + t;
            }
            idx[d] = 0;
            idx[d + 1] += 1;
            d += 1;
        }
    }

    /// The input (index among the inputs) read across rows: a tensor of the
    /// compute type, not in the output's storage, stepping far along the rows
    /// (dimension 0) and by one element across them (dimension 1): a
    /// transposed operand. Reading it TILE rows at a time reads each of its
    /// cache lines once instead of once per row.
    fn tiled_input<const N: usize, T: IntoBuffer>(&self) -> Option<usize> {
        if self.shape.len() < 2 || self.shape[0] < TILE_MIN_ROW || self.shape[1] < TILE {
            return None;
        }
        let out = &self.places[0];
        (0..N).find(|&i| {
            let p = &self.places[i + 1];
            p.number.is_none()
                && p.dtype == T::DTYPE
                && p.strides[0] >= TILE
                && p.strides[1] == 1
                && !same_storage(p, out)
        })
    }

    /// Rows `idx[1]..idx[1] + TILE` (whole, from their start `pos`), input
    /// `ti` read as tiles of TILE elements across the rows.
    #[inline(always)]
    fn tile_rows<const N: usize, T: IntoBuffer, R: IntoBuffer>(
        &self,
        plan: &Plan<N, T>,
        pos: &[usize],
        ti: usize,
        kernel: &BlockFn<'_, N, T, R>,
        blocks: &mut Blocks<N, T, R>,
        tile: &mut [[T; BLOCK]; TILE],
    ) {
        let m = N + 1;
        let (along, across) = (&plan.step[..m], &plan.step[m..2 * m]);
        let n = self.shape[0];
        let mut start = 0;
        while start < n {
            let len = BLOCK.min(n - start);
            let at = pos[ti + 1] + start * along[ti + 1];
            // The storage's elements from the tile's first to its last.
            let extent = (len - 1) * along[ti + 1] + TILE;
            self.raw[ti + 1].check(at, extent, 1);
            // SAFETY: the storage holds `T` (`tiled_input` checked the dtype,
            // `Locks::acquire` the storage's), and `at..at + extent` lies
            // inside it (checked just above; it is the position of row
            // `idx[1] + TILE - 1` at element `start + len - 1` of dimension
            // 0, at most the operand's last position). The storage is not
            // the output's (checked), so only read while the read lock is
            // held.
            let src = unsafe {
                std::slice::from_raw_parts((self.raw[ti + 1].ptr as *const T).add(at), extent)
            };
            transpose_tile(src, along[ti + 1], len, tile);
            // Each operand's position at `start` of row k, one row at a time.
            let mut at: SmallVec<[usize; 4]> =
                pos.iter().zip(along).map(|(&q, s)| q + start * s).collect();
            for t in tile.iter() {
                self.row::<N, T, R>(plan, &at, len, kernel, blocks, Some((ti, &t[..len])));
                for (a, s) in at.iter_mut().zip(across) {
                    *a += s;
                }
            }
            start += len;
        }
    }

    /// `n` elements along dimension 0 from storage positions `pos`, block
    /// by block; input `pre.0`, if any, already read as `pre.1` (a tile row).
    #[inline(always)]
    fn row<const N: usize, T: IntoBuffer, R: IntoBuffer>(
        &self,
        plan: &Plan<N, T>,
        pos: &[usize],
        n: usize,
        kernel: &BlockFn<'_, N, T, R>,
        blocks: &mut Blocks<N, T, R>,
        pre: Option<(usize, &[T])>,
    ) {
        let how = (&plan.reads, plan.out_direct);
        let mut start = 0;
        while start < n {
            let len = BLOCK.min(n - start);
            self.block::<N, T, R>(plan, how, pos, start, len, 1, kernel, blocks, pre);
            start += len;
        }
    }

    /// One kernel call: elements `start..start + len` of `r` rows (`r *
    /// len <= BLOCK`), the first at storage positions `pos`, the next ones a
    /// step along dimension 1 apart, inputs read and the output written as
    /// `how` says (the plan's reads and in-place output for one row, or
    /// [`Plan::rows`] for several) through the block buffers `blocks`; input
    /// `pre.0`, if any, already read as `pre.1` (one row: a tile row).
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    fn block<const N: usize, T: IntoBuffer, R: IntoBuffer>(
        &self,
        plan: &Plan<N, T>,
        how: (&[Read<T>; N], bool),
        pos: &[usize],
        start: usize,
        len: usize,
        r: usize,
        kernel: &BlockFn<'_, N, T, R>,
        blocks: &mut Blocks<N, T, R>,
        pre: Option<(usize, &[T])>,
    ) {
        let (reads, out_direct) = how;
        let m = N + 1;
        let along = &plan.step[..m];
        // Only one row needs no step across rows (a loop may have one
        // dimension).
        let across = if r > 1 { &plan.step[m..2 * m] } else { along };
        let total = r * len;
        debug_assert!(total <= BLOCK && (pre.is_none() || r == 1));
        // Inputs read through a buffer: gathered first, row by row.
        let mut scalars = [T::from_bool(false); N];
        for i in 0..N {
            if pre.is_some_and(|(j, _)| j == i) {
                continue;
            }
            let p = &self.places[i + 1];
            let at = pos[i + 1] + start * along[i + 1];
            match reads[i] {
                Read::Repeat => {
                    // SAFETY: a live buffer of `p.dtype` (`Locks::acquire`
                    // checked it and holds its lock); `load_one` checks the
                    // position.
                    scalars[i] = unsafe { load_one::<T>(self.raw[i + 1], p.dtype, at) };
                }
                Read::Gather => {
                    let buffer = &mut blocks.inputs[i][..total];
                    for (k, row) in buffer.chunks_exact_mut(len).enumerate() {
                        // SAFETY: as above; `gather` checks the `len`
                        // positions of row k.
                        unsafe {
                            gather::<T>(
                                self.raw[i + 1],
                                p.dtype,
                                at + k * across[i + 1],
                                along[i + 1],
                                row,
                            )
                        };
                    }
                }
                Read::Direct | Read::Number(_) => {}
            }
        }
        // (A loop over an array rather than `array::from_fn`, which was
        // not inlined: a call per input and block.)
        let mut srcs = [Src::Scalar(T::from_bool(false)); N];
        for (i, src) in srcs.iter_mut().enumerate() {
            *src = match (pre, reads[i]) {
                (Some((j, v)), _) if j == i => Src::Slice(&v[start..start + len]),
                (_, Read::Direct) => {
                    let at = pos[i + 1] + start;
                    self.raw[i + 1].check(at, total, 1);
                    // SAFETY: a read-only storage of element type `T` (checked by
                    // `plan`), positions `at..at + total` inside it (checked
                    // just above: the block's positions, a run along the row,
                    // and for several rows, rows that follow one another, as
                    // `Plan::rows` checked), not written by anyone while the
                    // read lock is held.
                    Src::Slice(unsafe {
                        std::slice::from_raw_parts((self.raw[i + 1].ptr as *const T).add(at), total)
                    })
                }
                (_, Read::Number(x)) => Src::Scalar(x),
                (_, Read::Repeat) => Src::Scalar(scalars[i]),
                (_, Read::Gather) => Src::Slice(&blocks.inputs[i][..total]),
            };
        }
        let out = &self.places[0];
        let out_raw = self.raw[0];
        let at = pos[0] + start * along[0];
        if out_direct {
            out_raw.check(at, total, 1);
            // SAFETY: the output's memory (a storage or the fresh capacity of
            // `run_fresh`) is of element type `R`, the positions
            // `at..at + total` are inside it (checked just above: a run, as
            // for the inputs) and belong to this thread's rows only (a dense output; see
            // `Loop::drive`), and no other reference to them exists: inputs
            // in this storage were gathered into buffers above. Fresh
            // capacity is viewed as `MaybeUninit<R>` (the layout of `R`),
            // never as `R`, until written.
            let o = unsafe {
                std::slice::from_raw_parts_mut((out_raw.ptr as *mut MaybeUninit<R>).add(at), total)
            };
            let o = if self.out_fresh {
                Out::fresh(o)
            } else {
                // SAFETY: an existing tensor's elements are initialised.
                Out::init(unsafe { &mut *(o as *mut [MaybeUninit<R>] as *mut [R]) })
            };
            let _: Written = kernel(srcs, o);
        } else {
            // A fresh output of the result type goes the direct way when its
            // rows are a run, so `scatter` here writes it element by element
            // (`write`), never through a slice.
            debug_assert!(!self.out_fresh || along[0] != 1);
            let _: Written = kernel(srcs, Out::init(&mut blocks.out[..total]));
            for (k, row) in blocks.out[..total].chunks_exact(len).enumerate() {
                // SAFETY: output positions of row k of this block (checked
                // by `scatter`), this thread's to write (see `Loop::drive`),
                // in the live buffer of `out.dtype` whose write lock is held.
                unsafe { scatter::<R>(out_raw, out.dtype, at + k * across[0], along[0], row) };
            }
        }
    }
}

/// `tile[k][q] = src[q * stride + k]` for `q < len`, `k < TILE`: TILE
/// consecutive elements of `len` rows `stride` apart, transposed. Float32
/// squares of 8 x 8 go through AVX shuffles where the CPU has them.
#[inline(always)]
fn transpose_tile<T: Element>(src: &[T], stride: usize, len: usize, tile: &mut [[T; BLOCK]; TILE]) {
    let row = |q: usize| -> &[T; TILE] {
        src[q * stride..q * stride + TILE]
            .try_into()
            .expect("a tile row")
    };
    // Squares done by the AVX path first, where it is compiled in.
    #[cfg_attr(any(not(target_arch = "x86_64"), miri), allow(unused_mut))]
    let mut q = 0;
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    if let (Some(src32), Some(tile32)) = (super::reduce::slice_as::<T, f32>(src), tile_as_f32(tile))
    {
        if super::vmath::detected_level() >= super::vmath::Level::Avx2 {
            // SAFETY: the CPU has AVX (detected: every level from AVX2 on).
            q = unsafe { squares8_avx(src32, stride, len, tile32) };
        }
    }
    for q in q..len {
        for (t, &x) in tile.iter_mut().zip(row(q)) {
            t[q] = x;
        }
    }
}

/// `tile` as float32 rows when `T` is `f32`.
#[cfg(all(target_arch = "x86_64", not(miri)))]
fn tile_as_f32<T: Element>(tile: &mut [[T; BLOCK]; TILE]) -> Option<&mut [[f32; BLOCK]; TILE]> {
    (std::any::TypeId::of::<T>() == std::any::TypeId::of::<f32>()).then(|| {
        // SAFETY: `T` is `f32` (equal `TypeId`s), so this reinterprets the
        // array as itself.
        unsafe { &mut *(tile as *mut [[T; BLOCK]; TILE] as *mut [[f32; BLOCK]; TILE]) }
    })
}

/// The whole 8 x 8 squares of the first `len` rows of [`transpose_tile`],
/// transposed in registers; returns the rows done (a multiple of 8).
#[cfg(all(target_arch = "x86_64", not(miri)))]
#[target_feature(enable = "avx")]
fn squares8_avx(src: &[f32], stride: usize, len: usize, tile: &mut [[f32; BLOCK]; TILE]) -> usize {
    let mut q = 0;
    while q + TILE <= len {
        square8_avx(src, stride, q, tile);
        q += TILE;
    }
    q
}

/// The 8 x 8 square of rows `q..q + 8` of [`transpose_tile`], transposed in
/// registers: eight loads, 24 shuffles, eight stores.
#[cfg(all(target_arch = "x86_64", not(miri)))]
#[target_feature(enable = "avx")]
#[inline]
fn square8_avx(src: &[f32], stride: usize, q: usize, tile: &mut [[f32; BLOCK]; TILE]) {
    use std::arch::x86_64::*;
    const _: () = assert!(TILE == 8);
    let load = |r: usize| {
        let row: &[f32; 8] = src[(q + r) * stride..(q + r) * stride + 8]
            .try_into()
            .expect("a tile row");
        // SAFETY: `row` is 8 readable floats (a checked slice); unaligned
        // loads are allowed.
        unsafe { _mm256_loadu_ps(row.as_ptr()) }
    };
    let (r0, r1, r2, r3) = (load(0), load(1), load(2), load(3));
    let (r4, r5, r6, r7) = (load(4), load(5), load(6), load(7));
    let (t0, t1) = (_mm256_unpacklo_ps(r0, r1), _mm256_unpackhi_ps(r0, r1));
    let (t2, t3) = (_mm256_unpacklo_ps(r2, r3), _mm256_unpackhi_ps(r2, r3));
    let (t4, t5) = (_mm256_unpacklo_ps(r4, r5), _mm256_unpackhi_ps(r4, r5));
    let (t6, t7) = (_mm256_unpacklo_ps(r6, r7), _mm256_unpackhi_ps(r6, r7));
    let u0 = _mm256_shuffle_ps::<0x44>(t0, t2);
    let u1 = _mm256_shuffle_ps::<0xEE>(t0, t2);
    let u2 = _mm256_shuffle_ps::<0x44>(t1, t3);
    let u3 = _mm256_shuffle_ps::<0xEE>(t1, t3);
    let u4 = _mm256_shuffle_ps::<0x44>(t4, t6);
    let u5 = _mm256_shuffle_ps::<0xEE>(t4, t6);
    let u6 = _mm256_shuffle_ps::<0x44>(t5, t7);
    let u7 = _mm256_shuffle_ps::<0xEE>(t5, t7);
    let cols = [
        _mm256_permute2f128_ps::<0x20>(u0, u4),
        _mm256_permute2f128_ps::<0x20>(u1, u5),
        _mm256_permute2f128_ps::<0x20>(u2, u6),
        _mm256_permute2f128_ps::<0x20>(u3, u7),
        _mm256_permute2f128_ps::<0x31>(u0, u4),
        _mm256_permute2f128_ps::<0x31>(u1, u5),
        _mm256_permute2f128_ps::<0x31>(u2, u6),
        _mm256_permute2f128_ps::<0x31>(u3, u7),
    ];
    for (t, c) in tile.iter_mut().zip(cols) {
        let dst: &mut [f32; 8] = (&mut t[q..q + 8]).try_into().expect("a tile column");
        // SAFETY: `dst` is 8 writable floats (a checked slice); unaligned
        // stores are allowed.
        unsafe { _mm256_storeu_ps(dst.as_mut_ptr(), c) };
    }
}

best_level! {
    /// `dst[i] = src[i]` converted with C++ cast rules.
    fn cast_slice<S, T>(src: &[S], dst: &mut [T]) -> ()
    where { S: Element, T: Element }
    {
        for (d, &x) in dst.iter_mut().zip(src) {
            *d = cast::<S, T>(x);
        }
    }
}

/// Reads the element at `at` of a storage of dtype `dtype`, as `T`; panics
/// if `at` is outside it ([`Raw::check`]).
///
/// # Safety
/// `raw` points at a live buffer of `raw.len` elements of `dtype`.
#[inline(always)]
unsafe fn load_one<T: Element>(raw: Raw, dtype: DType, at: usize) -> T {
    raw.check(at, 1, 1);
    // SAFETY: `at` is inside the buffer (checked), whose elements are of
    // `dtype` (the caller's contract; the `S` this arm is stamped for).
    crate::with_dtype!(dtype, S => cast::<S, T>(unsafe { (raw.ptr as *const S).add(at).read() }))
}

/// Reads `dst.len()` elements from `at` every `stride` as `T`; panics if
/// any is outside the buffer ([`Raw::check`]).
///
/// # Safety
/// `raw` points at a live buffer of `raw.len` elements of `dtype`.
#[inline(always)]
unsafe fn gather<T: Element>(raw: Raw, dtype: DType, at: usize, stride: usize, dst: &mut [T]) {
    raw.check(at, dst.len(), stride);
    crate::with_dtype!(dtype, S => {
        // SAFETY (every block below): each position `at + i * stride` is
        // inside the buffer (checked), of `dtype` elements (the caller's
        // contract); the
        // run read as a slice is not written while the slice lives (this
        // thread writes the output after the gather; inputs in the output's
        // storage are only read by the thread that writes those positions).
        let base = unsafe { (raw.ptr as *const S).add(at) };
        if stride == 1 {
            cast_slice(unsafe { std::slice::from_raw_parts(base, dst.len()) }, dst);
        } else {
            for (i, d) in dst.iter_mut().enumerate() {
                *d = cast::<S, T>(unsafe { base.add(i * stride).read() });
            }
        }
    })
}

/// Writes `src` to positions `at + i * stride`, cast to `dtype`; panics if
/// any is outside the buffer ([`Raw::check`]).
///
/// # Safety
/// As for [`gather`], and the positions are the caller's to write.
#[inline(always)]
unsafe fn scatter<R: Element>(raw: Raw, dtype: DType, at: usize, stride: usize, src: &[R]) {
    raw.check(at, src.len(), stride);
    crate::with_dtype!(dtype, S => {
        // SAFETY (both blocks): each position is inside the buffer (checked),
        // of `dtype` elements, and the caller's contract gives this call the
        // right to write them (the write lock is held; no reference to them
        // exists).
        let base = unsafe { (raw.ptr as *mut S).add(at) };
        if stride == 1 {
            cast_slice(src, unsafe { std::slice::from_raw_parts_mut(base, src.len()) });
        } else {
            for (i, &x) in src.iter().enumerate() {
                unsafe { base.add(i * stride).write(cast::<R, S>(x)) };
            }
        }
    })
}

#[cfg(test)]
mod tests {
    //! The loop's raw accesses rest on `Locks::acquire`'s checks and on
    //! `Loop::run`'s choice of when to split the work: these tests hand it
    //! geometries that would break either (run them under Miri too:
    //! `docs/testing.md`).
    use super::*;
    use crate::tensor::Buffer;

    fn geometry(storage: &Storage, shape: &[usize], strides: &[usize], offset: usize) -> Geometry {
        Geometry {
            storage: storage.clone(),
            shape: shape.into(),
            strides: strides.into(),
            offset,
        }
    }

    fn floats(v: Vec<f32>) -> Storage {
        Storage::new(Buffer::F32(v))
    }

    /// Copies `input` into `out` (both float32) through the loop.
    fn copy(out: &Geometry, input: &Geometry) -> Result<()> {
        let l = Loop::new(
            &out.shape,
            (out, DType::Float32),
            &[View::Tensor(input, DType::Float32)],
            true,
        );
        l.run::<1, f32, f32>(|[a], o| map1(a, o, |x| x))
    }

    fn values(s: &Storage) -> Vec<f32> {
        f32::slice(&s.read()).unwrap().to_vec()
    }

    /// A new result written into fresh capacity: every position once, in the
    /// layout of the strides given (here column-major, following a transposed
    /// input, with a casting input and a broadcast one), on one thread and on
    /// several (above the grain size).
    #[test]
    fn fresh_results_are_written_in_full_in_their_layout() {
        // Above the grain size (several threads) only natively: under Miri
        // 70,400 elements take longer than the rest of the module's tests.
        let sizes: &[(usize, usize)] = if cfg!(miri) {
            &[(3, 5), (1, 1), (0, 4), (9, 300)]
        } else {
            &[(3, 5), (1, 1), (0, 4), (9, 300), (64, 1100)]
        };
        for &(rows, cols) in sizes {
            let n = rows * cols;
            let a = floats((0..n).map(|i| i as f32).collect());
            // `a` read as its transpose: [cols, rows] with strides [1, cols].
            let at = geometry(&a, &[cols, rows], &[1, cols], 0);
            let ints = Storage::new(Buffer::I64((0..rows as i64).collect()));
            let row = geometry(&ints, &[rows], &[1], 0);
            let shape = [cols, rows];
            let strides = [1, cols]; // the transpose's own order
            let l = Loop::fresh(
                &shape,
                &strides,
                DType::Float32,
                &[
                    View::Tensor(&at, DType::Float32),
                    View::Tensor(&row, DType::Int64),
                    View::Number(Scalar::Float(0.5)),
                ],
            )
            .unwrap();
            let v = l
                .run_fresh::<3, f32, f32>(|[x, y, z], o| map3(x, y, z, o, |p, q, r| p + q * r))
                .unwrap();
            assert_eq!(v.len(), n);
            // Position i * rows... in memory: element [c, r] at c + r * cols.
            for r in 0..rows {
                for c in 0..cols {
                    let want = (r * cols + c) as f32 + r as f32 * 0.5;
                    assert_eq!(v[c + r * cols], want, "[{c}, {r}] of {rows}x{cols}");
                }
            }
        }
        // Strides that are not dense for the shape are refused up front.
        let x = floats(vec![0.0; 4]);
        let g = geometry(&x, &[2, 2], &[2, 1], 0);
        for bad in [[2usize, 2], [1, 1], [0, 1], [4, 1]] {
            let err = Loop::fresh(
                &[2, 2],
                &bad,
                DType::Float32,
                &[View::Tensor(&g, DType::Float32)],
            )
            .unwrap_err()
            .to_string();
            assert!(err.contains("not dense"), "{bad:?}: {err}");
        }
    }

    /// Short rows go several to a block: runs across rows (a contiguous
    /// input, a contiguous output), values the same in every row (a
    /// broadcast along the rows), and everything else gathered or scattered
    /// row by row (a transposed input, a value per row, a casting input, an
    /// output in another order), into existing outputs and fresh ones.
    #[test]
    fn short_rows_are_taken_several_to_a_block() {
        let shapes: &[[usize; 3]] = if cfg!(miri) {
            &[[2, 3, 5], [1, 7, 2]]
        } else {
            &[
                [2, 3, 5],
                [1, 7, 2],
                [3, 40, 32],
                [2, 9, 128],
                [2, 5, 129],
                [1, 300, 1],
            ]
        };
        for &[d0, d1, d2] in shapes {
            let n = d0 * d1 * d2;
            let x = floats((0..n).map(|i| i as f32).collect());
            let xg = geometry(&x, &[d0, d1, d2], &[d1 * d2, d2, 1], 0);
            // [d0, d2, d1] in memory, read as [d0, d1, d2].
            let y = floats((0..n).map(|i| (i % 7) as f32).collect());
            let yg = geometry(&y, &[d0, d1, d2], &[d1 * d2, 1, d1], 0);
            let ints = Storage::new(Buffer::I64((0..(d0 * d1) as i64).collect()));
            // One value per row ([d1] broadcast) or per outer index ([d0]).
            let per_row = geometry(&ints, &[d0, d1, d2], &[0, 1, 0], 0);
            let per_outer = geometry(&ints, &[d0, d1, d2], &[1, 0, 0], 0);
            let want = |i: usize, j: usize, k: usize, z: &[usize; 3]| {
                let y = ((i * d1 * d2 + k * d1 + j) % 7) as f32;
                (i * d1 * d2 + j * d2 + k) as f32 + y * (i * z[0] + j * z[1]) as f32
            };
            for (zg, zs) in [(&per_row, [0, 1, 0]), (&per_outer, [1, 0, 0])] {
                let inputs = [
                    View::Tensor(&xg, DType::Float32),
                    View::Tensor(&yg, DType::Float32),
                    View::Tensor(zg, DType::Int64),
                ];
                let f = |[p, q, r]: [Src<'_, f32>; 3], o: Out<'_, f32>| {
                    map3(p, q, r, o, |a, b, c| a + b * c)
                };
                // Existing outputs: row-major, and in the transposed order.
                for strides in [[d1 * d2, d2, 1], [d1 * d2, 1, d1]] {
                    let out = floats(vec![-1.0; n]);
                    let og = geometry(&out, &[d0, d1, d2], &strides, 0);
                    Loop::new(&[d0, d1, d2], (&og, DType::Float32), &inputs, true)
                        .run::<3, f32, f32>(f)
                        .unwrap();
                    let got = values(&out);
                    for i in 0..d0 {
                        for j in 0..d1 {
                            for k in 0..d2 {
                                let at = i * strides[0] + j * strides[1] + k * strides[2];
                                assert_eq!(got[at], want(i, j, k, &zs), "{d0}x{d1}x{d2} {zs:?}");
                            }
                        }
                    }
                }
                let strides = [d1 * d2, d2, 1];
                let v = Loop::fresh(&[d0, d1, d2], &strides, DType::Float32, &inputs)
                    .unwrap()
                    .run_fresh::<3, f32, f32>(f)
                    .unwrap();
                for i in 0..d0 {
                    for j in 0..d1 {
                        for k in 0..d2 {
                            let at = i * d1 * d2 + j * d2 + k;
                            assert_eq!(v[at], want(i, j, k, &zs), "fresh {d0}x{d1}x{d2} {zs:?}");
                        }
                    }
                }
            }
        }
    }

    /// Every raw access checks its positions against the buffer's length
    /// ([`Raw::check`]): given a loop whose bookkeeping claims more memory
    /// than an operand has (here a length cut short after `Locks::acquire`,
    /// which refuses such views itself), each path panics before reading or
    /// writing outside it: a run read in place, a gathered input, a value
    /// per row, several short rows at once, a tile, an output written in
    /// place and one scattered.
    #[test]
    fn raw_accesses_check_their_bounds() {
        let x = floats((0..4800).map(|i| i as f32).collect());
        /// Shape, input strides, output strides, the operand cut short.
        type Case<'a> = (&'a [usize], &'a [usize], &'a [usize], usize);
        let cases: &[Case<'_>] = &[
            (&[300], &[1], &[1], 1),              // a run read in place
            (&[150], &[2], &[1], 1),              // gathered
            (&[3, 100], &[1, 0], &[100, 1], 1),   // one value per row
            (&[20, 10], &[10, 1], &[10, 1], 1),   // short rows, several at once
            (&[16, 300], &[1, 16], &[300, 1], 1), // a tile of a transpose
            (&[300], &[1], &[1], 0),              // output in place
            (&[150], &[1], &[2], 0),              // output scattered
        ];
        for &(shape, in_strides, out_strides, cut) in cases {
            let out = floats(vec![0.0; 4800]);
            let og = geometry(&out, shape, out_strides, 0);
            let ig = geometry(&x, shape, in_strides, 0);
            let l = Loop::new(
                shape,
                (&og, DType::Float32),
                &[View::Tensor(&ig, DType::Float32)],
                true,
            );
            let locks = Locks::acquire(&l.shape, &l.places).unwrap();
            let mut raw = locks.raw.clone();
            raw[cut].len = 2;
            let ctx = Ctx {
                shape: &l.shape,
                places: &l.places,
                raw: &raw,
                out_dense: is_non_overlapping_and_dense(&l.shape, &l.places[0].strides),
                out_fresh: false,
            };
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                ctx.serial::<1, f32, f32>(0..l.numel, &|[a], o| map1(a, o, |v| v))
            }));
            let msg = r.expect_err("an access outside the buffer");
            let msg = msg.downcast_ref::<String>().expect("a formatted message");
            assert!(msg.contains("outside a buffer of 2"), "{shape:?}: {msg}");
        }
    }

    /// A transposed input read in tiles through the loop: the tile's slice of
    /// the storage ends exactly at the storage's end (Miri sees any read past
    /// it), with rows left over after the last whole tile.
    #[test]
    fn a_transposed_input_is_read_in_tiles_within_its_storage() {
        let (rows, cols) = (11usize, TILE_MIN_ROW + 3);
        let x = floats((0..rows * cols).map(|i| i as f32).collect());
        let out = floats(vec![0.0; rows * cols]);
        // x holds [cols, rows]; the input is its transpose, [rows, cols].
        let xt = geometry(&x, &[rows, cols], &[1, rows], 0);
        copy(&geometry(&out, &[rows, cols], &[cols, 1], 0), &xt).unwrap();
        let got = values(&out);
        for r in 0..rows {
            for c in 0..cols {
                assert_eq!(got[r * cols + c], (c * rows + r) as f32, "[{r}, {c}]");
            }
        }
    }

    /// Tiles read across rows are the transposes of their squares, for
    /// float32 (shuffled in registers where the CPU has AVX) and float64,
    /// whole squares and a remainder.
    #[test]
    fn tiles_are_transposed_exactly() {
        fn check<T: Element + std::fmt::Debug>(of: fn(usize) -> T) {
            for (len, stride) in [(1usize, 8usize), (7, 9), (8, 8), (19, 11), (BLOCK, 300)] {
                let src: Vec<T> = (0..(len - 1) * stride + TILE).map(of).collect();
                let mut tile = [[of(0); BLOCK]; TILE];
                transpose_tile(&src, stride, len, &mut tile);
                for q in 0..len {
                    for (k, t) in tile.iter().enumerate() {
                        assert_eq!(t[q], src[q * stride + k], "[{k}][{q}] of {len}, {stride}");
                    }
                }
            }
        }
        check::<f32>(|i| i as f32 * 0.5 - 3.0);
        check::<f64>(|i| i as f64 * 0.25 + 1.0);
        check::<i64>(|i| i as i64 - 7);
    }

    #[test]
    fn views_past_their_storage_are_errors() {
        let small = floats(vec![1.0; 4]);
        let big = floats(vec![0.0; 8]);
        let out = geometry(&big, &[8], &[1], 0);
        for bad in [
            geometry(&small, &[8], &[1], 0),          // more elements than stored
            geometry(&small, &[1], &[1], 4),          // offset at the end
            geometry(&small, &[2], &[usize::MAX], 0), // extent overflows usize
            geometry(&small, &[2, 4], &[0, 1], 1),    // last element one past
            geometry(&small, &[8], &[usize::MAX / 4], 0), // wraps when multiplied
        ] {
            let out = geometry(
                &big,
                &bad.shape,
                &dense_strides(&bad.shape, &[0, 1][..bad.shape.len()]),
                0,
            );
            let err = copy(&out, &bad).unwrap_err().to_string();
            assert!(err.contains("out of bounds"), "{err}");
        }
        // The output is checked the same way.
        let err = copy(&geometry(&small, &[8], &[1], 0), &out)
            .unwrap_err()
            .to_string();
        assert!(err.contains("out of bounds"), "{err}");
        assert_eq!(values(&big), vec![0.0; 8], "nothing written on error");
    }

    #[test]
    fn a_storage_of_another_dtype_is_an_error() {
        let ints = Storage::new(Buffer::I64(vec![1; 4]));
        let out = floats(vec![0.0; 4]);
        let err = copy(
            &geometry(&out, &[4], &[1], 0),
            &geometry(&ints, &[4], &[1], 0),
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("expected a storage of dtype Float"), "{err}");
        let err = copy(
            &geometry(&ints, &[4], &[1], 0),
            &geometry(&out, &[4], &[1], 0),
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("expected a storage of dtype Float"), "{err}");
    }

    /// Above the grain size, but every element of the output is one
    /// location: the loop must not split it between threads.
    #[test]
    fn an_output_that_overlaps_itself_is_written_by_one_thread() {
        let n = GRAIN_SIZE + 1;
        let input = floats((0..n).map(|i| i as f32).collect());
        let out = floats(vec![0.0]);
        copy(
            &geometry(&out, &[n], &[0], 0),
            &geometry(&input, &[n], &[1], 0),
        )
        .unwrap();
        assert_eq!(values(&out), vec![(n - 1) as f32], "the last write wins");
    }

    /// `x[1:] = x[:-1]` through the loop directly (the operators refuse it
    /// before this point): one thread, block after block, each block read
    /// in full before it is written.
    #[test]
    fn an_output_shifted_over_its_input_is_copied_block_by_block() {
        let n = GRAIN_SIZE + 7;
        let start: Vec<f32> = (0..=n).map(|i| i as f32).collect();
        let x = floats(start.clone());
        copy(&geometry(&x, &[n], &[1], 1), &geometry(&x, &[n], &[1], 0)).unwrap();
        let mut want = start;
        let mut at = 0;
        while at < n {
            let len = BLOCK.min(n - at);
            let block: Vec<f32> = want[at..at + len].to_vec();
            want[at + 1..at + 1 + len].copy_from_slice(&block);
            at += len;
        }
        assert_eq!(values(&x), want);
    }

    #[test]
    fn an_input_in_the_output_storage_is_never_read_as_a_slice_of_it() {
        // y = x + x written into x itself, in place: same positions.
        let n = GRAIN_SIZE + 300;
        let x = floats((0..n).map(|i| i as f32).collect());
        let g = geometry(&x, &[n], &[1], 0);
        let l = Loop::new(
            &[n],
            (&g, DType::Float32),
            &[
                View::Tensor(&g, DType::Float32),
                View::Tensor(&g, DType::Float32),
            ],
            true,
        );
        l.run::<2, f32, f32>(|[a, b], o| map2(a, b, o, |x, y| x + y))
            .unwrap();
        let want: Vec<f32> = (0..n).map(|i| 2.0 * i as f32).collect();
        assert_eq!(values(&x), want);
    }

    /// A writer handed a shorter input block than its output panics before
    /// writing (it would otherwise leave fresh slots uninitialised); a full
    /// block writes every slot.
    #[test]
    fn writers_refuse_short_input_blocks() {
        let mut slots = [MaybeUninit::<f32>::uninit(); 3];
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            map2(
                Src::Slice(&[1.0f32]),
                Src::Scalar(1.0),
                Out::fresh(&mut slots),
                |x, y| x + y,
            )
        }));
        assert!(r.is_err());
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            map1(Src::Slice(&[1.0f32, 2.0]), Out::fresh(&mut slots), |x| x)
        }));
        assert!(r.is_err());
        let _: Written = map2(
            Src::Slice(&[1.0f32, 2.0, 3.0]),
            Src::Scalar(0.5),
            Out::fresh(&mut slots),
            |x, y| x + y,
        );
        // SAFETY: the writer returned its token: every slot is written.
        let v: Vec<f32> = slots.iter().map(|s| unsafe { s.assume_init() }).collect();
        assert_eq!(v, vec![1.5, 2.5, 3.5]);
        let mut init = [7i64; 4];
        let _: Written = Out::init(&mut init).with_slice(0, |s| s[1] += 1);
        assert_eq!(
            init,
            [7, 8, 7, 7],
            "an initialised block is not zeroed first"
        );
        let mut slots = [MaybeUninit::<i64>::uninit(); 2];
        let _: Written = Out::fresh(&mut slots).with_slice(0, |s| s[0] += 5);
        // SAFETY: `with_slice` initialises fresh slots before `f` runs.
        let v: Vec<i64> = slots.iter().map(|s| unsafe { s.assume_init() }).collect();
        assert_eq!(v, vec![5, 0]);
    }
}
