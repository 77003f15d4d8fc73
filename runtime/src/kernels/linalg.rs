//! Matrix products: the `mm` kernel, and `matmul`, a CompositeImplicitAutograd
//! decomposition (dot / mv / mm / folded mm / batched mm, chosen as PyTorch's
//! `_matmul_impl` chooses) written only in terms of other operators via [`ops`].

use super::num::Num;
use super::promote::broadcast_shapes;
use super::{
    check_out_dtype, dispatch_error, ops, read_broadcastable, resize_output, typemeta_name,
};
use crate::error::Result;
use crate::tensor::{DType, Device, Tensor};
use crate::with_dtype;
use ndarray::{Array2, ArrayD, Ix2};

fn check_same_dtype(a: &Tensor, b: &Tensor) -> Result<()> {
    crate::ensure!(
        a.dtype() == b.dtype(),
        "expected m1 and m2 to have the same dtype, but got: {} != {}",
        typemeta_name(a.dtype()),
        typemeta_name(b.dtype())
    );
    Ok(())
}

/// `mm(self, mat2)`, into `out` if given. The product is computed from the
/// inputs before `out` is resized or written, so an `out` that is (or overlaps)
/// an input gets the product of the inputs as they were. (PyTorch checks no
/// overlap here and writes as it reads: `mm(a, a, out=a)` gives zeros for
/// float32; an error or garbage would be no better than the right answer.) An
/// expanded `out` is refused when written, as PyTorch's final `copy_` does.
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
    with_dtype!(dtype, T => {
        let x = to2(read_broadcastable::<T>(self_)?, &a)?;
        let y = to2(read_broadcastable::<T>(mat2)?, &b)?;
        let r = matmul2(&x, &y, a[1], &shape)?;
        match out {
            Some(o) => {
                resize_output(o, &shape)?;
                if o.numel() > 0 {
                    o.assign(r.view())?;
                }
                Ok(o.clone())
            }
            None => Ok(Tensor::from_array(r)),
        }
    })
}

/// A matrix read with `read_broadcastable`, as a 2-D array that broadcasts to
/// `shape` (an expanded matrix stays read once per distinct element).
fn to2<T>(a: ArrayD<T>, shape: &[usize]) -> Result<Array2<T>> {
    let a = a
        .into_dimensionality::<Ix2>()
        .map_err(|e| crate::Error::Runtime(format!("mm: {e}").into()))?;
    crate::ensure!(
        a.broadcast((shape[0], shape[1])).is_some(),
        "mm: cannot broadcast {:?} to {shape:?}",
        a.shape()
    );
    Ok(a)
}

/// The product of two matrices of logical shapes `[n, k]` and `[k, p]`, each
/// possibly read with size 1 where it is expanded (then broadcast here), as a
/// new array of `shape` = `[n, p]` (allocated fallibly).
fn matmul2<T: Num>(
    a: &Array2<T>,
    b: &Array2<T>,
    k: usize,
    shape: &[usize; 2],
) -> Result<ArrayD<T>> {
    let at = |i: usize, l: usize| a[(i.min(a.nrows() - 1), l.min(a.ncols() - 1))];
    let bt = |l: usize, j: usize| b[(l.min(b.nrows() - 1), j.min(b.ncols() - 1))];
    let items = (0..shape[0]).flat_map(|i| {
        (0..shape[1]).map(move |j| (0..k).fold(T::zero(), |acc, l| acc.add(at(i, l).mul(bt(l, j)))))
    });
    super::pointwise::collect_array(shape, items)
}

fn to_i64(s: &[usize]) -> Vec<i64> {
    s.iter().map(|&n| n as i64).collect()
}

/// `mT`: transpose of the last two dimensions.
fn mt(t: &Tensor) -> Result<Tensor> {
    ops::transpose_int(t, -2, -1)
}

/// `dot` for two vectors, as `mm([1, n], [n, 1])`.
fn dot(a: &Tensor, b: &Tensor) -> Result<Tensor> {
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
fn mv(mat: &Tensor, vec: &Tensor) -> Result<Tensor> {
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

/// Whether `_matmul_impl` folds the batch dimensions of the larger operand into
/// an `mm`/`mv` (no autograd here, so only the layout matters).
fn should_fold(t1: &Tensor, t2: &Tensor) -> Result<bool> {
    let larger = t1.dim() >= t2.dim();
    let (big, small_dim) = if larger {
        (t1.clone(), t2.dim())
    } else {
        (mt(t2)?, t1.dim())
    };
    if !(big.dim() >= 3 && small_dim <= 2) || t1.dim() == 2 {
        return Ok(false);
    }
    if big.numel() == 0 {
        return Ok(true);
    }
    let (shape, strides) = (big.shape(), big.strides());
    Ok((0..shape.len() - 2).all(|i| strides[i] == strides[i + 1] * shape[i + 1]))
}

/// `bmm` for `[B, n, m]` and `[B, m, p]`, as one `mm` per batch, stacked.
fn bmm(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let (sa, sb) = (a.shape(), b.shape());
    crate::ensure!(
        sb[0] == sa[0] && sb[1] == sa[2],
        "Expected size for first two dimensions of batch2 tensor to be: [{}, {}] but got: [{}, {}].",
        sa[0],
        sa[2],
        sb[0],
        sb[1]
    );
    check_same_dtype(a, b)?;
    if sa[0] == 0 {
        return ops::empty_memory_format(
            &to_i64(&[0, sa[1], sb[2]]),
            Some(a.dtype()),
            Some(a.device()),
            None,
        );
    }
    let mut parts = Vec::with_capacity(sa[0]);
    for i in 0..sa[0] as i64 {
        parts.push(ops::mm(
            &ops::select_int(a, 0, i)?,
            &ops::select_int(b, 0, i)?,
        )?);
    }
    ops::stack(&parts, 0)
}

/// `matmul(self, other)`, into `out` if given.
pub(crate) fn matmul(t1: &Tensor, t2: &Tensor, out: Option<&Tensor>) -> Result<Tensor> {
    let (d1, d2) = (t1.dim(), t2.dim());
    crate::ensure!(
        d1 != 0 && d2 != 0,
        "both arguments to matmul need to be at least 1D, but they are {d1}D and {d2}D"
    );
    let result = if d1 == 1 && d2 == 1 {
        dot(t1, t2)?
    } else if d1 == 2 && d2 == 1 {
        mv(t1, t2)?
    } else if d1 == 1 && d2 == 2 {
        ops::squeeze_dim(&ops::mm(&ops::unsqueeze(t1, 0)?, t2)?, 0)?
    } else if d1 == 2 && d2 == 2 {
        ops::mm(t1, t2)?
    } else if should_fold(t1, t2)? {
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
            let r = ops::view(&ops::mm(&a_folded, &b)?, &to_i64(&out_shape))?;
            if transpose {
                ops::contiguous(&mt(&r)?)?
            } else {
                r
            }
        } else {
            ops::view(&mv(&a_folded, &b)?, &to_i64(&out_shape))?
        }
    } else {
        let (s1, s2) = (t1.shape(), t2.shape());
        let n = if d1 > 1 { s1[d1 - 2] } else { 1 };
        let m1 = s1[d1 - 1];
        let m2 = if d2 > 1 { s2[d2 - 2] } else { s2[0] };
        let p = if d2 > 1 { s2[d2 - 1] } else { 1 };
        let batch = broadcast_shapes(&s1[..d1.saturating_sub(2)], &s2[..d2.saturating_sub(2)])?;
        let bp: usize = batch.iter().product();
        let e1: Vec<usize> = batch.iter().copied().chain([n, m1]).collect();
        let e2: Vec<usize> = batch.iter().copied().chain([m2, p]).collect();
        let a = ops::reshape(&ops::expand(t1, &to_i64(&e1))?, &to_i64(&[bp, n, m1]))?;
        let b = ops::reshape(&ops::expand(t2, &to_i64(&e2))?, &to_i64(&[bp, m2, p]))?;
        let mut out_shape = batch;
        if d1 > 1 {
            out_shape.push(n);
        }
        if d2 > 1 {
            out_shape.push(p);
        }
        ops::view(&bmm(&a, &b)?, &to_i64(&out_shape))?
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
