//! Matrix products: the `mm` and `bmm` kernels (the engine is `gemm`), and
//! `matmul`, a CompositeImplicitAutograd decomposition (dot / mv / mm / folded
//! mm / batched mm, chosen as PyTorch's `_matmul_impl` chooses) written only in
//! terms of other operators via [`ops`].
//!
//! `mm` and `bmm` read their inputs in place (any strides, expanded ones too)
//! and write the product straight into the result's storage: a new contiguous
//! tensor, or `out` when it shares no storage with an input and its elements
//! are distinct. Otherwise (an `out` aliasing an input) the product goes into a
//! new buffer first, then into `out`. Locks: one read lock per distinct input
//! storage and the write lock of `out`'s ([`crate::tensor::StorageLocks`]).

use super::gemm::{self, Dims, Gemm, Layout};
use super::promote::broadcast_shapes;
use super::{check_out_dtype, dispatch_error, fill_elements, ops, resize_output};
use crate::error::{Error, Result};
use crate::tensor::{
    alloc as memory, internal_overlap_error, is_expanded, Buffer, DType, Device, Geometry,
    IntoBuffer, Storage, StorageLocks, Tensor,
};
use crate::with_dtype;
use ndarray::{ArrayViewD, IxDyn};

fn check_same_dtype(a: &Tensor, b: &Tensor) -> Result<()> {
    crate::ensure!(
        a.dtype() == b.dtype(),
        "expected m1 and m2 to have the same dtype, but got: {} != {}",
        a.dtype().typemeta_name(),
        b.dtype().typemeta_name()
    );
    Ok(())
}

/// `mm(self, mat2)`, into `out` if given. The product is computed from the
/// inputs as they were before `out` is resized or written, so an `out` that is
/// (or overlaps) an input gets the product of the inputs as they were.
/// (PyTorch checks no overlap here and writes as it reads: `mm(a, a, out=a)`
/// gives zeros for float32; an error or garbage would be no better than the
/// right answer.) An expanded `out` is refused when written, as PyTorch's final
/// `copy_` does.
pub(crate) fn mm(self_: &Tensor, mat2: &Tensor, out: Option<&Tensor>) -> Result<Tensor> {
    crate::ensure!(
        self_.dim() == 2,
        "mm: self must be a matrix, got {}-D tensor",
        self_.dim()
    );
    crate::ensure!(
        mat2.dim() == 2,
        "mm: mat2 must be a matrix, got {}-D tensor",
        mat2.dim()
    );
    let (a, b) = (self_.shape(), mat2.shape());
    crate::ensure!(
        a[1] == b[0],
        "mm: mat1 and mat2 shapes cannot be multiplied ({}x{} and {}x{})",
        a[0],
        a[1],
        b[0],
        b[1]
    );
    check_same_dtype(self_, mat2)?;
    let dtype = self_.dtype();
    let shape = [a[0], b[1]];
    let meta = [Some(self_), Some(mat2), out]
        .into_iter()
        .flatten()
        .any(|t| t.device() == Device::Meta);
    match out {
        Some(o) => {
            check_out_dtype(o, dtype)?;
            super::check_alloc(&shape, dtype, o.device())?;
        }
        None => super::check_alloc(&shape, dtype, self_.device())?,
    }
    if meta {
        return match out {
            Some(o) => {
                resize_output(o, &shape)?;
                Ok(o.clone())
            }
            None => Tensor::try_zeros(&shape, dtype, Device::Meta),
        };
    }
    if dtype == DType::Bool {
        if let Some(o) = out {
            resize_output(o, &shape)?;
        }
        return Err(dispatch_error("addmm_impl_cpu_", dtype));
    }
    let d = Dims {
        batch: 1,
        m: a[0],
        k: a[1],
        n: b[1],
    };
    let (ga, gb) = (self_.geometry(), mat2.geometry());
    let la = Layout::matrix(ga.offset, &ga.strides);
    let lb = Layout::matrix(gb.offset, &gb.strides);
    with_dtype!(dtype, T => product::<T>(d, (&ga, la), (&gb, lb), &shape, out))
}

/// `bmm(self, mat2)`, into `out` if given: PyTorch's structured kernel (the
/// result has `mat2`'s dtype; `out` is resized before the product, which is
/// computed from the inputs as they were, as for [`mm`]). Mixed dtypes and
/// bool fail with the message of the path PyTorch's CPU kernel takes for the
/// sizes (the small-matrix loop below 400 multiply-adds per matrix, MKL's
/// batched GEMM for floating results over row- or column-major matrices, else
/// one `addmm` per matrix); meta tensors get its meta function's checks.
pub(crate) fn bmm(self_: &Tensor, mat2: &Tensor, out: Option<&Tensor>) -> Result<Tensor> {
    crate::ensure!(self_.dim() == 3, "batch1 must be a 3D tensor");
    crate::ensure!(mat2.dim() == 3, "batch2 must be a 3D tensor");
    let meta = [Some(self_), Some(mat2), out]
        .into_iter()
        .flatten()
        .any(|t| t.device() == Device::Meta);
    if meta {
        crate::ensure!(
            self_.dtype() == mat2.dtype(),
            "expected scalar type {} but found {}",
            self_.dtype(),
            mat2.dtype()
        );
    }
    let (sa, sb) = (self_.shape(), mat2.shape());
    crate::ensure!(
        sb[0] == sa[0] && sb[1] == sa[2],
        "Expected size for first two dimensions of batch2 tensor to be: [{}, {}] but got: [{}, {}].",
        sa[0],
        sa[2],
        sb[0],
        sb[1]
    );
    let dtype = mat2.dtype();
    let shape = [sa[0], sa[1], sb[2]];
    // The inputs as they are before `out` (which may be one of them) is resized.
    let (ga, gb) = (self_.geometry(), mat2.geometry());
    match out {
        Some(o) => {
            check_out_dtype(o, dtype)?;
            resize_output(o, &shape)?;
        }
        None => super::check_alloc(&shape, dtype, self_.device())?,
    }
    if meta {
        return match out {
            Some(o) => Ok(o.clone()),
            None => Tensor::try_zeros(&shape, dtype, Device::Meta),
        };
    }
    let d = Dims {
        batch: sa[0],
        m: sa[1],
        k: sa[2],
        n: sb[2],
    };
    if d.batch * d.m * d.n == 0 {
        return match out {
            Some(o) => Ok(o.clone()),
            None => Tensor::try_zeros(&shape, dtype, Device::Cpu),
        };
    }
    if d.k == 0 {
        return match out {
            Some(o) => {
                fill_elements(o, 0i64)?;
                Ok(o.clone())
            }
            None => Tensor::try_zeros(&shape, dtype, Device::Cpu),
        };
    }
    let out_contiguous = out.is_none_or(|o| o.is_contiguous());
    if let Some(e) = bmm_dtype_error((&ga, self_.dtype()), (&gb, dtype), d, out_contiguous) {
        return Err(e);
    }
    let la = Layout::batch(ga.offset, &ga.strides);
    let lb = Layout::batch(gb.offset, &gb.strides);
    with_dtype!(dtype, T => product::<T>(d, (&ga, la), (&gb, lb), &shape, out))
}

/// The error PyTorch's CPU `bmm` gives for mixed dtypes or bool, by the path
/// its `bmm_out_or_baddbmm_` takes for these sizes and layouts.
fn bmm_dtype_error(
    (a, ta): (&Geometry, DType),
    (b, tb): (&Geometry, DType),
    d: Dims,
    out_contiguous: bool,
) -> Option<Error> {
    let msg = |s: String| Some(Error::Runtime(s.into()));
    // A matrix of the batch is row- or column-major (rows / columns may be
    // padded): what MKL's batched GEMM takes.
    let plain = |g: &Geometry| {
        let (n, s) = (&g.shape, &g.strides);
        (s[2] == 1 && s[1] >= n[2]) || (s[1] == 1 && s[2] >= n[1])
    };
    if d.m.saturating_mul(d.n).saturating_mul(d.k) < 400 {
        if ta == DType::Bool {
            return Some(dispatch_error("bmm", ta));
        }
        if ta != tb {
            return msg(format!(
                "expected scalar type {} but found {}",
                ta.c10_name(),
                tb.c10_name()
            ));
        }
    } else if tb.is_floating_point() && plain(a) && plain(b) && out_contiguous {
        if ta != tb {
            return msg(format!(
                "expected scalar type {} but found {}",
                tb.c10_name(),
                ta.c10_name()
            ));
        }
    } else {
        if ta != tb {
            return msg(format!(
                "expected m1 and m2 to have the same dtype, but got: {} != {}",
                ta.typemeta_name(),
                tb.typemeta_name()
            ));
        }
        if ta == DType::Bool {
            return Some(dispatch_error("addmm_impl_cpu_", ta));
        }
    }
    None
}

/// The elements of a buffer of `T` (the dtypes were checked: only a buffer
/// without data, a wrapper tensor's, has none).
fn data<T: IntoBuffer>(b: &Buffer) -> Result<&[T]> {
    T::slice(b).ok_or_else(no_data)
}

#[cold]
fn no_data() -> Error {
    Error::Runtime("Cannot access data pointer of Tensor that doesn't have storage".into())
}

/// The product of `a` and `b` (their geometry snapshots, taken before `out`
/// was touched, and layouts) of result `shape`: into a new contiguous tensor,
/// or into `out` (resized to `shape` here if it is not already).
fn product<T: Gemm>(
    d: Dims,
    a: (&Geometry, Layout),
    b: (&Geometry, Layout),
    shape: &[usize],
    out: Option<&Tensor>,
) -> Result<Tensor> {
    let Some(o) = out else {
        let c = product_new::<T>(d, a, b)?;
        return Tensor::from_buffer(T::into_buffer(c), shape, T::DTYPE, Device::Cpu);
    };
    let os = o.storage();
    if os.ptr_eq(&a.0.storage) || os.ptr_eq(&b.0.storage) {
        // `out` may overlap an input: compute first, then write.
        let c = product_new::<T>(d, a, b)?;
        return assign(o, shape, c);
    }
    resize_output(o, shape)?;
    let go = o.geometry();
    if o.numel() == 0 {
        return Ok(o.clone());
    }
    if is_expanded(&go.shape, &go.strides) {
        return Err(internal_overlap_error());
    }
    let lc = match *go.shape.as_slice() {
        [_, _] => Layout::matrix(go.offset, &go.strides),
        _ => Layout::batch(go.offset, &go.strides),
    };
    if !gemm::non_overlapping(&go.shape, &go.strides) {
        // Elements that share memory without a stride 0: written one after
        // the other in logical order, as `assign` does.
        let c = product_new::<T>(d, a, b)?;
        return assign(o, shape, c);
    }
    locked(a.0, b.0, &go.storage, |x, y, z| {
        gemm::product(
            d,
            (data::<T>(x)?, a.1),
            (data::<T>(y)?, b.1),
            (out_data::<T>(z)?, lc),
        )
    })?;
    Ok(o.clone())
}

/// The elements of a buffer of `T`, to write.
fn out_data<T: IntoBuffer>(b: &mut Buffer) -> Result<&mut [T]> {
    T::slice_mut(b)
        .map(|v| v.as_mut_slice())
        .ok_or_else(no_data)
}

/// The product into a new contiguous buffer (allocated fallibly).
fn product_new<T: Gemm>(d: Dims, a: (&Geometry, Layout), b: (&Geometry, Layout)) -> Result<Vec<T>> {
    let len = d.batch * d.m * d.n;
    let mut c = memory::try_filled(len, T::zero())?;
    let locks = StorageLocks::new(&[&a.0.storage, &b.0.storage], None);
    let (Some(ra), Some(rb)) = (locks.read(&a.0.storage), locks.read(&b.0.storage)) else {
        return Err(Error::Runtime("mm: storage locks not taken".into()));
    };
    let (x, y) = (data::<T>(ra)?, data::<T>(rb)?);
    gemm::product(
        d,
        (x, a.1),
        (y, b.1),
        (&mut c, Layout::contiguous(d.m, d.n)),
    )?;
    Ok(c)
}

/// Resizes `out` to `shape` and writes `c` (contiguous) into it.
fn assign<T: IntoBuffer>(o: &Tensor, shape: &[usize], c: Vec<T>) -> Result<Tensor> {
    resize_output(o, shape)?;
    if o.numel() > 0 {
        let v = ArrayViewD::from_shape(IxDyn(shape), &c[..])
            .map_err(|e| Error::Runtime(e.to_string().into()))?;
        o.assign(v)?;
    }
    Ok(o.clone())
}

/// Runs `f` on the buffers of `a` and `b` (read-locked; one lock if they are
/// one storage) and of `out` (write-locked; a storage neither input has),
/// taking the locks in [`Storage::lock_order`].
fn locked<R>(
    a: &Geometry,
    b: &Geometry,
    out: &Storage,
    f: impl FnOnce(&Buffer, &Buffer, &mut Buffer) -> Result<R>,
) -> Result<R> {
    let mut locks = StorageLocks::new(&[&a.storage, &b.storage], Some(out));
    let (wo, reads) = locks.parts();
    let (Some(ra), Some(rb), Some(wo)) = (reads.get(&a.storage), reads.get(&b.storage), wo) else {
        return Err(Error::Runtime("mm: storage locks not taken".into()));
    };
    f(ra, rb, wo)
}

fn to_i64(s: &[usize]) -> Vec<i64> {
    s.iter().map(|&n| n as i64).collect()
}

/// `mT`: transpose of the last two dimensions.
fn mt(t: &Tensor) -> Result<Tensor> {
    ops::transpose_int(t, -2, -1)
}

/// `dot` for two vectors, as `mm([1, n], [n, 1])`.
pub(crate) fn dot(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    crate::ensure!(
        a.dim() == 1 && b.dim() == 1,
        "1D tensors expected, but got {}D and {}D tensors",
        a.dim(),
        b.dim()
    );
    crate::ensure!(
        a.dtype() == b.dtype(),
        "dot : expected both vectors to have same dtype, but found {} and {}",
        a.dtype().c10_name(),
        b.dtype().c10_name()
    );
    let (n, m) = (a.numel(), b.numel());
    crate::ensure!(
        n == m,
        "inconsistent tensor size, expected tensor [{n}] and src [{m}] to have the same number of elements, but got {n} and {m} elements respectively"
    );
    if a.dtype() == DType::Bool && a.device() != Device::Meta {
        return Err(dispatch_error("dot", DType::Bool));
    }
    let r = ops::mm(&ops::unsqueeze(a, 0)?, &ops::unsqueeze(b, 1)?)?;
    ops::view(&r, &[])
}

/// `mv` for a matrix and a vector, as `mm([n, m], [m, 1])`.
pub(crate) fn mv(mat: &Tensor, vec: &Tensor) -> Result<Tensor> {
    crate::ensure!(
        mat.dim() == 2 && vec.dim() == 1,
        "vector + matrix @ vector expected, got 1, {}, {}",
        mat.dim(),
        vec.dim()
    );
    let (ms, vs) = (mat.shape(), vec.shape());
    crate::ensure!(
        ms[1] == vs[0],
        "size mismatch, got input ({}), mat ({}x{}), vec ({})",
        ms[0],
        ms[0],
        ms[1],
        vs[0]
    );
    let r = ops::mm(mat, &ops::unsqueeze(vec, 1)?)?;
    ops::squeeze_dim(&r, 1)
}

/// Whether `_matmul_impl` folds the batch dimensions of the larger operand
/// into an `mm`/`mv` (PyTorch's `should_fold`): when the smaller operand
/// requires grad (a `bmm` would make its gradient through a large
/// intermediate), or when the fold is a view.
fn should_fold(t1: &Tensor, t2: &Tensor, has_out: bool) -> Result<bool> {
    let larger = t1.dim() >= t2.dim();
    let (big, small) = if larger {
        (t1.clone(), t2)
    } else {
        (mt(t2)?, t1)
    };
    if !(big.dim() >= 3 && small.dim() <= 2) {
        return Ok(false);
    }
    if small.requires_grad() && !has_out {
        return Ok(true);
    }
    if t1.dim() == 2 {
        return Ok(false);
    }
    if big.numel() == 0 {
        return Ok(true);
    }
    let (shape, strides) = (big.shape(), big.strides());
    Ok((0..shape.len() - 2).all(|i| strides[i + 1].checked_mul(shape[i + 1]) == Some(strides[i])))
}

/// `matmul(self, other)`, into `out` if given: PyTorch's `_matmul_impl`,
/// call for call (so that a trace records the operators PyTorch's does:
/// `dot`, `mv`, `mm` and `squeeze_`, a folded `mm`/`mv` or a `bmm` read
/// through `_unsafe_view`). With `out`, the result is computed as without
/// it and copied.
pub(crate) fn matmul(t1: &Tensor, t2: &Tensor, out: Option<&Tensor>) -> Result<Tensor> {
    let (d1, d2) = (t1.dim(), t2.dim());
    crate::ensure!(
        d1 != 0 && d2 != 0,
        "both arguments to matmul need to be at least 1D, but they are {d1}D and {d2}D"
    );
    let has_out = out.is_some();
    let result = if d1 == 1 && d2 == 1 {
        ops::dot(t1, t2)?
    } else if d1 == 2 && d2 == 1 {
        ops::mv(t1, t2)?
    } else if d1 == 1 && d2 == 2 {
        let mut r = ops::mm(&ops::unsqueeze(t1, 0)?, t2)?;
        ops::squeeze__dim(&mut r, 0)?
    } else if d1 == 2 && d2 == 2 {
        ops::mm(t1, t2)?
    } else if should_fold(t1, t2, has_out)? {
        let transpose = d2 > d1;
        let a = if transpose { mt(t2)? } else { t1.clone() };
        let b = if !transpose {
            t2.clone()
        } else if d1 == 2 {
            ops::t(t1)?
        } else {
            t1.clone()
        };
        let sizes = a.shape();
        let mut out_shape = sizes[..sizes.len() - 1].to_vec();
        let folded: usize = out_shape.iter().product();
        let b_matrix = b.dim() == 2;
        if b_matrix {
            out_shape.push(b.shape()[1]);
        }
        let a_folded = ops::reshape(&a, &to_i64(&[folded, sizes[sizes.len() - 1]]))?;
        if b_matrix {
            let r = ops::_unsafe_view(&ops::mm(&a_folded, &b)?, &to_i64(&out_shape))?;
            if transpose {
                ops::contiguous(&mt(&r)?)?
            } else {
                r
            }
        } else {
            ops::_unsafe_view(&ops::mv(&a_folded, &b)?, &to_i64(&out_shape))?
        }
    } else {
        let (s1, s2) = (t1.shape(), t2.shape());
        // A batch of one on the side that requires grad is squeezed away
        // (PyTorch: the fold's gradient is cheaper than a broadcast bmm's).
        if d1 == 3 && d2 == 3 && s1[0] != s2[0] {
            if s1[0] == 1 && t1.requires_grad() {
                return matmul(&ops::squeeze_dim(t1, 0)?, t2, out);
            }
            if s2[0] == 1 && t2.requires_grad() {
                return matmul(t1, &ops::squeeze_dim(t2, 0)?, out);
            }
        }
        let n = if d1 > 1 { s1[d1 - 2] } else { 1 };
        let m1 = s1[d1 - 1];
        let m2 = if d2 > 1 { s2[d2 - 2] } else { s2[0] };
        let p = if d2 > 1 { s2[d2 - 1] } else { 1 };
        let batch = broadcast_shapes(&s1[..d1.saturating_sub(2)], &s2[..d2.saturating_sub(2)])?;
        let bp: usize = batch.iter().product();
        let e1: Vec<usize> = batch.iter().copied().chain([n, m1]).collect();
        let a = ops::reshape(&ops::expand(t1, &to_i64(&e1))?, &to_i64(&[bp, n, m1]))?;
        // A vector on the right broadcasts as a vector, then becomes a column.
        let vector_rhs = d2 == 1;
        let b = if vector_rhs {
            let e2: Vec<usize> = batch.iter().copied().chain([m2]).collect();
            let b = ops::reshape(&ops::expand(t2, &to_i64(&e2))?, &to_i64(&[bp, m2]))?;
            ops::unsqueeze(&b, 2)?
        } else {
            let e2: Vec<usize> = batch.iter().copied().chain([m2, p]).collect();
            ops::reshape(&ops::expand(t2, &to_i64(&e2))?, &to_i64(&[bp, m2, p]))?
        };
        let mut out_shape = batch;
        if d1 > 1 {
            out_shape.push(n);
        }
        if d2 > 1 {
            out_shape.push(p);
        }
        let r = ops::bmm(&a, &b)?;
        let r = if vector_rhs {
            ops::squeeze_dim(&r, -1)?
        } else {
            r
        };
        ops::_unsafe_view(&r, &to_i64(&out_shape))?
    };
    match out {
        None => Ok(result),
        Some(o) => {
            check_out_dtype(o, result.dtype())?;
            resize_output(o, &result.shape())?;
            ops::copy_(o, &result)
        }
    }
}
