//! The matrix-product engine behind `mm` and `bmm` (and so `matmul`): a batch
//! of products `C[b] = A[b]·B[b]` over storage slices, each operand read in
//! place through its own offset and strides.
//!
//! - float32 / float64 go to `matrixmultiply` (bluss): packed panels and SIMD
//!   microkernels chosen at run time (AVX-512F, AVX2 + FMA, SSE2; NEON on
//!   aarch64). It takes any row and column strides for `A` and `B`: a
//!   transposed, sliced or expanded (stride 0) operand is read without a copy.
//! - int32 / int64 (and bool, which the callers refuse before computing) use an
//!   i-k-j loop with the wrapping arithmetic of [`Num`]: exact, so the order of
//!   the sums does not matter.
//!
//! Threads: the batch and, for a batch smaller than the thread count, the
//! longer side of each product (rows of `C`, or columns) are cut into items run
//! by [`parallel_for`]; a product of fewer than about [`TASK_WORK`]
//! multiply-adds, or one thread ([`crate::parallel::get_num_threads`]), runs
//! inline. Each element of `C` is computed by one call on one item, with the
//! same arithmetic whatever the cut, so results do not depend on the thread
//! count.
//!
//! Every position the sizes and strides reach is checked to lie inside its
//! slice ([`last_offset`]) and `C`'s positions to be distinct
//! ([`non_overlapping`]) before a raw pointer is made.

use super::num::Num;
use crate::error::Result;
use crate::parallel::parallel_for;
use crate::tensor::{internal_overlap_error, last_offset, Positions};

/// A product of fewer multiply-adds than this runs on one thread; a task gets
/// at least this much work (about 5 µs of float32 on one core, a few times
/// the cost of waking a pool thread).
pub(crate) const TASK_WORK: usize = 1 << 18;

/// The sizes of a batch of products: `[batch, m, k]·[batch, k, n]` →
/// `[batch, m, n]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Dims {
    pub batch: usize,
    pub m: usize,
    pub k: usize,
    pub n: usize,
}

/// Where a batch of matrices lies in a slice: element `[b, i, j]` is at
/// `offset + b * strides[0] + i * strides[1] + j * strides[2]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Layout {
    pub offset: usize,
    pub strides: [usize; 3],
}

impl Layout {
    /// A 2-D geometry as a batch of one.
    pub(crate) fn matrix(offset: usize, strides: &[usize]) -> Layout {
        Layout {
            offset,
            strides: [0, strides[0], strides[1]],
        }
    }

    /// A 3-D geometry.
    pub(crate) fn batch(offset: usize, strides: &[usize]) -> Layout {
        Layout {
            offset,
            strides: [strides[0], strides[1], strides[2]],
        }
    }

    /// Row-major `[batch, rows, cols]` from offset 0.
    pub(crate) fn contiguous(rows: usize, cols: usize) -> Layout {
        Layout {
            offset: 0,
            strides: [rows * cols, cols, 1],
        }
    }
}

/// One matrix for a microkernel call: its first element and its strides (in
/// elements; 0 for a dimension of size 1 and for an expanded one).
#[derive(Clone, Copy, Debug)]
pub(crate) struct RawMat<P> {
    ptr: P,
    rs: isize,
    cs: isize,
}

/// Element types the engine multiplies.
pub(crate) trait Gemm: Num + Send + Sync {
    /// `c[i, j] = Σ_l a[i, l] · b[l, j]` for `i < m`, `j < n`, `l < k`, all three
    /// positive; `c`'s old values are not read.
    ///
    /// # Safety
    ///
    /// Every element the sizes and strides reach from `a`, `b` and `c` lies in
    /// a live, initialised allocation; `c`'s elements are distinct and not in
    /// `a`'s or `b`'s allocation; during the call no one else reads or writes
    /// `c`'s elements or writes `a`'s and `b`'s.
    unsafe fn gemm(
        m: usize,
        k: usize,
        n: usize,
        a: RawMat<*const Self>,
        b: RawMat<*const Self>,
        c: RawMat<*mut Self>,
    );
}

macro_rules! gemm_by_crate {
    ($($t:ty => $f:ident),*) => {$(
        impl Gemm for $t {
            unsafe fn gemm(
                m: usize,
                k: usize,
                n: usize,
                a: RawMat<*const $t>,
                b: RawMat<*const $t>,
                c: RawMat<*mut $t>,
            ) {
                // SAFETY: the caller's contract is `matrixmultiply`'s: every
                // element in bounds, `c`'s distinct (no aliasing strides) and
                // apart from `a` and `b`; beta = 0, so `c` is only written.
                unsafe {
                    matrixmultiply::$f(
                        m, k, n, 1.0, a.ptr, a.rs, a.cs, b.ptr, b.rs, b.cs, 0.0, c.ptr, c.rs, c.cs,
                    )
                }
            }
        }
    )*};
}
gemm_by_crate!(f32 => sgemm, f64 => dgemm);

macro_rules! gemm_by_loop {
    ($($t:ty),*) => {$(
        impl Gemm for $t {
            unsafe fn gemm(
                m: usize,
                k: usize,
                n: usize,
                a: RawMat<*const $t>,
                b: RawMat<*const $t>,
                c: RawMat<*mut $t>,
            ) {
                // SAFETY: the same contract.
                unsafe { ikj(m, k, n, a, b, c) }
            }
        }
    )*};
}
gemm_by_loop!(i32, i64, bool);

/// The i-k-j loop: row `i` of `c` accumulates `a[i, l] · b[l, :]` for each `l`,
/// walking `b` and `c` along rows (contiguous rows go through slices, which the
/// compiler vectorises).
///
/// # Safety
///
/// [`Gemm::gemm`]'s contract.
unsafe fn ikj<T: Num>(
    m: usize,
    k: usize,
    n: usize,
    a: RawMat<*const T>,
    b: RawMat<*const T>,
    c: RawMat<*mut T>,
) {
    // SAFETY (every block below): the offsets are `i * rs + j * cs` with `i`,
    // `j` inside the sizes, so each pointer stays on an element the caller
    // vouches for (and the products fit `isize`, as those positions do); a
    // row of `c` is borrowed mutably only while no other reference to it
    // lives, and never overlaps `a` or `b`.
    for i in 0..m as isize {
        let crow = unsafe { c.ptr.offset(i * c.rs) };
        for l in 0..k as isize {
            let x = unsafe { *a.ptr.offset(i * a.rs + l * a.cs) };
            let brow = unsafe { b.ptr.offset(l * b.rs) };
            if c.cs == 1 && b.cs == 1 {
                let dst = unsafe { std::slice::from_raw_parts_mut(crow, n) };
                let src = unsafe { std::slice::from_raw_parts(brow, n) };
                if l == 0 {
                    for (d, &y) in dst.iter_mut().zip(src) {
                        *d = x.mul(y);
                    }
                } else {
                    for (d, &y) in dst.iter_mut().zip(src) {
                        *d = d.add(x.mul(y));
                    }
                }
            } else {
                for j in 0..n as isize {
                    let y = unsafe { *brow.offset(j * b.cs) };
                    let d = unsafe { &mut *crow.offset(j * c.cs) };
                    *d = if l == 0 { x.mul(y) } else { d.add(x.mul(y)) };
                }
            }
        }
    }
}

/// Are the positions `shape` / `strides` reach pairwise distinct? Checked as
/// a sufficient condition: ordered by stride, each dimension of size > 1
/// steps past the whole extent of the smaller ones.
pub(crate) fn non_overlapping(shape: &[usize], strides: &[usize]) -> bool {
    if shape.contains(&0) {
        return true;
    }
    let mut dims: Vec<(usize, usize)> = shape
        .iter()
        .zip(strides)
        .filter(|(&n, _)| n > 1)
        .map(|(&n, &s)| (s, n))
        .collect();
    dims.sort_unstable();
    let mut extent = 0usize; // the largest position offset the smaller dims reach
    for (s, n) in dims {
        if s <= extent {
            return false;
        }
        match s.checked_mul(n - 1).and_then(|d| d.checked_add(extent)) {
            Some(e) => extent = e,
            None => return false,
        }
    }
    true
}

/// Checks that every position of `shape` laid out as `l` is inside a slice of
/// `len` elements.
fn check_bounds(shape: [usize; 3], l: &Layout, len: usize) -> Result<()> {
    if let Some(last) = last_offset(&shape, &l.strides, l.offset)? {
        crate::ensure!(last < len, "tensor view is out of bounds of its storage");
    }
    Ok(())
}

/// A stride as the microkernels take it: 0 for a dimension of size 1 (any
/// stride is valid there, even one beyond `isize`). Otherwise the stride fits
/// `isize`: the positions it reaches are inside a slice.
fn stride(size: usize, s: usize) -> isize {
    if size <= 1 {
        0
    } else {
        s as isize
    }
}

/// `c`'s base pointer, shared by the tasks of one product, each writing its own
/// elements.
struct SharedOut<T>(*mut T);

// SAFETY: the tasks write disjoint sets of `c`'s elements (see `product`), and
// `T: Send` values may be written from any thread.
unsafe impl<T: Send> Sync for SharedOut<T> {}

impl<T> SharedOut<T> {
    fn get(&self) -> *mut T {
        self.0
    }
}

/// `c[b] = a[b] · b[b]` for every `b` of the batch. `a`, `b` and `c` are whole
/// storage slices, each with its layout; `c` is a slice of its own (the
/// borrow checker keeps it apart from `a` and `b`). `c`'s positions must be
/// distinct; with `k == 0` they are set to zero.
pub(crate) fn product<T: Gemm>(
    d: Dims,
    (a, la): (&[T], Layout),
    (b, lb): (&[T], Layout),
    (c, lc): (&mut [T], Layout),
) -> Result<()> {
    let Dims { batch, m, k, n } = d;
    if batch == 0 || m == 0 || n == 0 {
        return Ok(());
    }
    check_bounds([batch, m, n], &lc, c.len())?;
    if !non_overlapping(&[batch, m, n], &lc.strides) {
        return Err(internal_overlap_error());
    }
    if k == 0 {
        for pos in Positions::new(&[batch, m, n], &lc.strides, lc.offset) {
            c[pos] = T::zero();
        }
        return Ok(());
    }
    check_bounds([batch, m, k], &la, a.len())?;
    check_bounds([batch, k, n], &lb, b.len())?;
    let sa = [
        stride(batch, la.strides[0]),
        stride(m, la.strides[1]),
        stride(k, la.strides[2]),
    ];
    let sb = [
        stride(batch, lb.strides[0]),
        stride(k, lb.strides[1]),
        stride(n, lb.strides[2]),
    ];
    let sc = [
        stride(batch, lc.strides[0]),
        stride(m, lc.strides[1]),
        stride(n, lc.strides[2]),
    ];

    // Cut the longer side of each product when the batch alone cannot keep the
    // threads busy; pieces of at least 16 rows or columns (a microkernel's).
    let threads = crate::parallel::get_num_threads();
    let by_rows = m >= n;
    let side = if by_rows { m } else { n };
    let pieces = if threads <= 1 || batch >= 4 * threads {
        1
    } else {
        threads.min(side.div_ceil(16))
    };
    let step = side.div_ceil(pieces).next_multiple_of(16).min(side);
    let pieces = side.div_ceil(step);
    let item_work = m.saturating_mul(n).saturating_mul(k) / pieces;
    let grain = TASK_WORK.div_ceil(item_work.max(1));

    let out = SharedOut(c.as_mut_ptr());
    parallel_for(0..batch * pieces, grain, |items| {
        for item in items {
            let (bi, piece) = ((item / pieces) as isize, item % pieces);
            let lo = piece * step;
            let len = step.min(side - lo);
            let lo = lo as isize;
            let (rows, cols) = if by_rows { (len, n) } else { (m, len) };
            let (a_at, b_at, c_at) = if by_rows {
                (lo * sa[1], 0, lo * sc[1])
            } else {
                (0, lo * sb[2], lo * sc[2])
            };
            // SAFETY: every position below is one the checks above found inside
            // its slice: batch `bi < batch`, rows / columns `lo..lo + len` inside
            // the sizes, strides from the checked layouts (0 only where the size
            // is 1 or the layout's stride is 0). `c`'s positions are distinct
            // (checked), and the items cut `c` into disjoint blocks (distinct
            // batch or distinct rows / columns), so no two tasks touch an
            // element; `c` is borrowed mutably by this function for the whole
            // `parallel_for` (no one else reads it) and `a`, `b` are borrowed
            // shared (no one writes them).
            unsafe {
                let am = RawMat {
                    ptr: a.as_ptr().add(la.offset).offset(bi * sa[0] + a_at),
                    rs: sa[1],
                    cs: sa[2],
                };
                let bm = RawMat {
                    ptr: b.as_ptr().add(lb.offset).offset(bi * sb[0] + b_at),
                    rs: sb[1],
                    cs: sb[2],
                };
                let cm = RawMat {
                    ptr: out.get().add(lc.offset).offset(bi * sc[0] + c_at),
                    rs: sc[1],
                    cs: sc[2],
                };
                T::gemm(rows, k, cols, am, bm, cm);
            }
        }
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlap_is_detected() {
        assert!(non_overlapping(&[2, 3], &[3, 1]));
        assert!(non_overlapping(&[2, 3], &[1, 2]));
        assert!(non_overlapping(&[1, 3], &[0, 1]));
        assert!(non_overlapping(&[4, 0], &[0, 0]));
        assert!(!non_overlapping(&[2, 3], &[0, 1]));
        assert!(!non_overlapping(&[2, 3], &[1, 1]));
        assert!(!non_overlapping(&[2, 2, 2], &[4, 1, 1]));
        assert!(!non_overlapping(&[2, 2], &[usize::MAX, 1]));
    }

    fn naive(d: Dims, a: &[i64], la: Layout, b: &[i64], lb: Layout) -> Vec<i64> {
        let at = |l: &Layout, x: usize, y: usize, z: usize| {
            l.offset + x * l.strides[0] + y * l.strides[1] + z * l.strides[2]
        };
        let mut c = Vec::new();
        for x in 0..d.batch {
            for i in 0..d.m {
                for j in 0..d.n {
                    c.push(
                        (0..d.k)
                            .map(|l| a[at(&la, x, i, l)] * b[at(&lb, x, l, j)])
                            .sum(),
                    );
                }
            }
        }
        c
    }

    #[test]
    fn integer_products_match_the_definition() {
        let d = Dims {
            batch: 2,
            m: 3,
            k: 4,
            n: 5,
        };
        let a: Vec<i64> = (0..40).map(|x| x % 7 - 3).collect();
        let b: Vec<i64> = (0..60).map(|x| x % 5 - 2).collect();
        // a: batch stride 0 (expanded), transposed; b: contiguous from offset 3.
        let la = Layout {
            offset: 1,
            strides: [0, 1, 3],
        };
        let lb = Layout {
            offset: 3,
            strides: [20, 5, 1],
        };
        let mut c = vec![99; 30];
        product(d, (&a, la), (&b, lb), (&mut c, Layout::contiguous(3, 5))).unwrap();
        assert_eq!(c, naive(d, &a, la, &b, lb));
        // A strided `c` (column-major), and `k == 0` zeroes.
        let mut c2 = vec![99; 30];
        let lc = Layout {
            offset: 0,
            strides: [15, 1, 3],
        };
        product(d, (&a, la), (&b, lb), (&mut c2, lc)).unwrap();
        let want = naive(d, &a, la, &b, lb);
        for x in 0..2 {
            for i in 0..3 {
                for j in 0..5 {
                    assert_eq!(c2[x * 15 + i + j * 3], want[x * 15 + i * 5 + j]);
                }
            }
        }
        let mut c3 = vec![99; 30];
        product(
            Dims { k: 0, ..d },
            (&a, la),
            (&b, lb),
            (&mut c3, Layout::contiguous(3, 5)),
        )
        .unwrap();
        assert_eq!(c3, vec![0; 30]);
    }

    #[test]
    fn out_of_bounds_and_overlap_are_errors() {
        let d = Dims {
            batch: 1,
            m: 2,
            k: 2,
            n: 2,
        };
        let a = vec![1.0f32; 4];
        let mut c = vec![0.0f32; 4];
        let l = Layout::contiguous(2, 2);
        let far = Layout { offset: 1, ..l };
        assert!(product(d, (&a, far), (&a, l), (&mut c, l)).is_err());
        let overlapping = Layout {
            offset: 0,
            strides: [0, 1, 1],
        };
        assert!(product(d, (&a, l), (&a, l), (&mut c, overlapping)).is_err());
        product(d, (&a, l), (&a, l), (&mut c, l)).unwrap();
        assert_eq!(c, vec![2.0; 4]);
    }
}
