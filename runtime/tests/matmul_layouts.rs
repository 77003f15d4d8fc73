//! `mm`, `bmm` and `matmul` against a naive triple loop in f64 (i64 for
//! integers) over random shapes (sizes 0 and 1 included), layouts (transposed,
//! sliced with a step and an offset, expanded with stride 0), batch broadcasting
//! and `out=` tensors of several layouts; and `bmm`'s checks and messages
//! against PyTorch 2.15's. The shapes and values come from a fixed-seed
//! xorshift generator, so every run checks the same cases.

use opforge::{ops, torch, DType, Device, Scalar, Tensor};

mod common;
use common::Rng;

/// A size for one dimension: mostly small, with 0 and 1 often.
fn size(rng: &mut Rng) -> usize {
    rng.pick(&[0, 1, 1, 2, 3, 4, 5, 7, 8, 16, 17, 31, 33])
}

/// A contiguous tensor of `shape` with random values: floats in [-1, 1),
/// integers in -9..=9.
fn random(rng: &mut Rng, shape: &[usize], dtype: DType) -> Tensor {
    let n: usize = shape.iter().product();
    match dtype {
        DType::Float32 => {
            let v = (0..n)
                .map(|_| (rng.next() >> 40) as f32 / (1u64 << 23) as f32 - 1.0)
                .collect();
            Tensor::from_vec::<f32>(v, shape).unwrap()
        }
        DType::Float64 => {
            let v = (0..n)
                .map(|_| (rng.next() >> 11) as f64 / (1u64 << 52) as f64 - 1.0)
                .collect();
            Tensor::from_vec::<f64>(v, shape).unwrap()
        }
        DType::Int64 => {
            let v = (0..n).map(|_| rng.below(19) as i64 - 9).collect();
            Tensor::from_vec::<i64>(v, shape).unwrap()
        }
        DType::Int32 => {
            let v = (0..n).map(|_| rng.below(19) as i32 - 9).collect();
            Tensor::from_vec::<i32>(v, shape).unwrap()
        }
        DType::Bool => unreachable!(),
    }
}

/// How an operand is laid out in memory.
#[derive(Clone, Copy, Debug)]
enum Kind {
    /// Row-major.
    Contiguous,
    /// The last two dimensions column-major (`x.mT().contiguous().mT()`).
    Transposed,
    /// Every other element of a wider tensor, from offset 1 (`x[..., 1::2]`).
    Stepped,
    /// One dimension of size > 1 expanded from size 1 (stride 0), if any.
    Expanded,
}

const KINDS: [Kind; 4] = [
    Kind::Contiguous,
    Kind::Transposed,
    Kind::Stepped,
    Kind::Expanded,
];

/// A tensor of `shape` with random values, laid out as `kind` says.
fn operand(rng: &mut Rng, shape: &[usize], dtype: DType, kind: Kind) -> Tensor {
    let d = shape.len();
    match kind {
        Kind::Contiguous => random(rng, shape, dtype),
        Kind::Transposed if d >= 2 => {
            let mut s = shape.to_vec();
            s.swap(d - 2, d - 1);
            ops::transpose_int(&random(rng, &s, dtype), -2, -1).unwrap()
        }
        Kind::Stepped if d >= 1 => {
            let mut s = shape.to_vec();
            s[d - 1] = 2 * s[d - 1] + 1;
            let wide = random(rng, &s, dtype);
            ops::slice_Tensor(&wide, -1, Some(1), None, 2).unwrap()
        }
        Kind::Expanded => {
            let dims: Vec<usize> = (0..d).filter(|&i| shape[i] > 1).collect();
            if dims.is_empty() {
                return random(rng, shape, dtype);
            }
            let mut s = shape.to_vec();
            s[rng.pick(&dims)] = 1;
            let sizes: Vec<i64> = shape.iter().map(|&n| n as i64).collect();
            ops::expand(&random(rng, &s, dtype), &sizes, false).unwrap()
        }
        _ => random(rng, shape, dtype),
    }
}

/// PyTorch's `matmul` on logical values, in f64: the result's shape, values,
/// and for each value the sum of the magnitudes of its terms (the scale of its
/// rounding error).
fn reference(a: &Tensor, b: &Tensor) -> (Vec<usize>, Vec<f64>, Vec<f64>) {
    let (sa, sb) = (a.shape(), b.shape());
    let (va, vb) = (a.to_vec::<f64>().unwrap(), b.to_vec::<f64>().unwrap());
    // As batches of matrices: a vector on the left is a row, on the right a column.
    let (ma, ka) = match sa.len() {
        1 => (1, sa[0]),
        d => (sa[d - 2], sa[d - 1]),
    };
    let (kb, nb) = match sb.len() {
        1 => (sb[0], 1),
        d => (sb[d - 2], sb[d - 1]),
    };
    assert_eq!(ka, kb);
    let ba = &sa[..sa.len().saturating_sub(2)];
    let bb = &sb[..sb.len().saturating_sub(2)];
    let nd = ba.len().max(bb.len());
    let pad = |b: &[usize]| -> Vec<usize> {
        let mut v = vec![1; nd - b.len()];
        v.extend_from_slice(b);
        v
    };
    let (pa, pb) = (pad(ba), pad(bb));
    let batch: Vec<usize> = pa.iter().zip(&pb).map(|(&x, &y)| x.max(y)).collect();
    let count: usize = batch.iter().product();
    let (mut vals, mut scale) = (Vec::new(), Vec::new());
    for flat in 0..count {
        // The batch index, then each operand's (broadcast) matrix number.
        let mut rem = flat;
        let (mut ia, mut ib) = (0, 0);
        let (mut stride_a, mut stride_b) = (1, 1);
        for d in (0..nd).rev() {
            let i = rem % batch[d];
            rem /= batch[d];
            ia += if pa[d] == 1 { 0 } else { i * stride_a };
            ib += if pb[d] == 1 { 0 } else { i * stride_b };
            stride_a *= pa[d];
            stride_b *= pb[d];
        }
        for i in 0..ma {
            for j in 0..nb {
                let (mut s, mut m) = (0.0, 0.0);
                for l in 0..ka {
                    let p = va[ia * ma * ka + i * ka + l] * vb[ib * kb * nb + l * nb + j];
                    s += p;
                    m += p.abs();
                }
                vals.push(s);
                scale.push(m);
            }
        }
    }
    let mut shape = batch;
    if sa.len() > 1 {
        shape.push(ma);
    }
    if sb.len() > 1 {
        shape.push(nb);
    }
    (shape, vals, scale)
}

/// Checks `got` against the reference: exact for integers, within a relative
/// error of the dtype's epsilon times a small factor for floats.
fn check(what: &str, got: &Tensor, want: &(Vec<usize>, Vec<f64>, Vec<f64>)) {
    assert_eq!(got.shape(), want.0, "{what}: shape");
    let tol = match got.dtype() {
        DType::Float32 => 1e-5,
        DType::Float64 => 1e-13,
        _ => 0.0,
    };
    let g = got.to_vec::<f64>().unwrap();
    for (i, ((&x, &y), &m)) in g.iter().zip(&want.1).zip(&want.2).enumerate() {
        assert!(
            (x - y).abs() <= tol * (m + 1e-30),
            "{what}: element {i}: got {x}, want {y} (scale {m})"
        );
    }
}

/// `mm` (and `matmul` of two matrices) over every pair of layouts, with and
/// without `out=` (new, transposed and stepped `out`s).
#[test]
fn mm_matches_the_reference_on_every_layout() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for dtype in [DType::Float32, DType::Float64, DType::Int64, DType::Int32] {
        for case in 0..60 {
            let (m, k, n) = (size(&mut rng), size(&mut rng), size(&mut rng));
            let (ka, kb) = (rng.pick(&KINDS), rng.pick(&KINDS));
            let a = operand(&mut rng, &[m, k], dtype, ka);
            let b = operand(&mut rng, &[k, n], dtype, kb);
            let what = format!("{dtype} mm {m}x{k} ({ka:?}) @ {k}x{n} ({kb:?}), case {case}");
            let want = reference(&a, &b);
            check(&what, &torch::mm(&a, &b).unwrap(), &want);
            check(&what, &torch::matmul(&a, &b).unwrap(), &want);
            // Into an `out` of the right shape in another layout (kept), or a
            // wrong-shaped one (resized); stale values are overwritten.
            let mut out = match case % 3 {
                0 => ops::transpose_int(&random(&mut rng, &[n, m], dtype), 0, 1).unwrap(),
                1 => operand(&mut rng, &[m, n], dtype, Kind::Stepped),
                _ => random(&mut rng, &[3], dtype),
            };
            let strides = out.strides();
            ops::mm_out(&a, &b, &mut out).unwrap();
            check(&format!("{what}, out="), &out, &want);
            if case % 3 != 2 {
                assert_eq!(out.strides(), strides, "{what}: out keeps its layout");
            }
        }
    }
}

/// `bmm` over random batches and layouts (the batch dimension expanded too).
#[test]
fn bmm_matches_the_reference_on_every_layout() {
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    for dtype in [DType::Float32, DType::Float64, DType::Int64] {
        for case in 0..40 {
            let (bs, m, k, n) = (
                rng.pick(&[0, 1, 2, 3, 5]),
                size(&mut rng),
                size(&mut rng),
                size(&mut rng),
            );
            let (ka, kb) = (rng.pick(&KINDS), rng.pick(&KINDS));
            let a = operand(&mut rng, &[bs, m, k], dtype, ka);
            let b = operand(&mut rng, &[bs, k, n], dtype, kb);
            let what =
                format!("{dtype} bmm {bs}x{m}x{k} ({ka:?}) @ {bs}x{k}x{n} ({kb:?}), case {case}");
            let want = reference(&a, &b);
            check(&what, &torch::bmm(&a, &b).unwrap(), &want);
            check(&what, &torch::matmul(&a, &b).unwrap(), &want);
            let mut out = if case % 2 == 0 {
                random(&mut rng, &[1], dtype)
            } else {
                ops::transpose_int(&random(&mut rng, &[bs, n, m], dtype), 1, 2).unwrap()
            };
            ops::bmm_out(&a, &b, &mut out).unwrap();
            check(&format!("{what}, out="), &out, &want);
        }
    }
}

/// `matmul` of every rank pair up to 4-D, with broadcast batch dimensions
/// (sizes 1 against n, missing dimensions) and every layout.
#[test]
fn matmul_broadcasts_like_the_reference() {
    let mut rng = Rng(0x1234_5678_9abc_def1);
    for dtype in [DType::Float32, DType::Float64, DType::Int64] {
        for case in 0..150 {
            let (d1, d2) = (1 + rng.below(4), 1 + rng.below(4));
            let (m, k, n) = (size(&mut rng), size(&mut rng), size(&mut rng));
            let nb = d1.max(d2).saturating_sub(2);
            let batch: Vec<usize> = (0..nb).map(|_| rng.pick(&[1, 2, 3])).collect();
            // Each operand takes the trailing batch dimensions it has room for,
            // each one either the full size or 1.
            let take = |d: usize, tail: [usize; 2], rng: &mut Rng| -> Vec<usize> {
                let own = d.saturating_sub(2);
                let mut s: Vec<usize> = batch[nb - own..]
                    .iter()
                    .map(|&x| if rng.below(3) == 0 { 1 } else { x })
                    .collect();
                if d == 1 {
                    s.push(tail[0]);
                } else {
                    s.extend(tail);
                }
                s
            };
            let sa = take(d1, [m, k], &mut rng);
            let sa = if d1 == 1 { vec![k] } else { sa };
            let sb = take(d2, [k, n], &mut rng);
            let (ka, kb) = (rng.pick(&KINDS), rng.pick(&KINDS));
            let a = operand(&mut rng, &sa, dtype, ka);
            let b = operand(&mut rng, &sb, dtype, kb);
            let what = format!("{dtype} matmul {sa:?} ({ka:?}) @ {sb:?} ({kb:?}), case {case}");
            let want = reference(&a, &b);
            check(&what, &torch::matmul(&a, &b).unwrap(), &want);
            let mut out = random(&mut rng, &[2], dtype);
            ops::matmul_out(&a, &b, &mut out).unwrap();
            check(&format!("{what}, out="), &out, &want);
        }
    }
}

/// Products big enough to run on several threads (cut by rows, by columns,
/// and over the batch) give the same bits as on one thread.
#[test]
fn threads_do_not_change_results() {
    let mut rng = Rng(42);
    let shapes: [(&[usize], &[usize]); 5] = [
        (&[300, 70], &[70, 90]),
        (&[40, 70], &[70, 400]),
        (&[7, 60, 50], &[7, 50, 70]),
        (&[2, 150, 80], &[2, 80, 130]),
        (&[3, 1, 200, 64], &[64, 100]),
    ];
    for dtype in [DType::Float32, DType::Float64, DType::Int64] {
        for (sa, sb) in shapes {
            let a = operand(&mut rng, sa, dtype, Kind::Contiguous);
            let b = operand(&mut rng, sb, dtype, Kind::Transposed);
            let what = format!("{dtype} {sa:?} @ {sb:?}");
            opforge::set_num_threads(1).unwrap();
            let one = torch::matmul(&a, &b).unwrap();
            opforge::set_num_threads(4).unwrap();
            let four = torch::matmul(&a, &b).unwrap();
            check(&what, &four, &reference(&a, &b));
            assert_eq!(
                one.to_vec::<f64>().unwrap(),
                four.to_vec::<f64>().unwrap(),
                "{what}"
            );
        }
    }
}

/// `k == 0`: zeros, also over stale values of `out`; size-0 results.
#[test]
fn empty_products() {
    for dtype in [DType::Float32, DType::Int64] {
        let a = Tensor::zeros(&[3, 0], dtype, Device::Cpu);
        let b = Tensor::zeros(&[0, 4], dtype, Device::Cpu);
        let r = torch::mm(&a, &b).unwrap();
        assert_eq!(
            (r.shape(), r.to_vec::<f64>().unwrap()),
            (vec![3, 4], vec![0.0; 12])
        );
        let mut out = Tensor::full(&[3, 4], Scalar::Int(7), dtype, Device::Cpu);
        ops::mm_out(&a, &b, &mut out).unwrap();
        assert_eq!(out.to_vec::<f64>().unwrap(), vec![0.0; 12]);
        let (a3, b3) = (
            Tensor::zeros(&[2, 3, 0], dtype, Device::Cpu),
            Tensor::zeros(&[2, 0, 4], dtype, Device::Cpu),
        );
        let mut out = Tensor::full(&[2, 3, 4], Scalar::Int(7), dtype, Device::Cpu);
        ops::bmm_out(&a3, &b3, &mut out).unwrap();
        assert_eq!(out.to_vec::<f64>().unwrap(), vec![0.0; 24]);
        assert_eq!(
            torch::bmm(&a3, &b3).unwrap().to_vec::<f64>().unwrap(),
            vec![0.0; 24]
        );
        let e = torch::bmm(
            &Tensor::zeros(&[0, 3, 2], dtype, Device::Cpu),
            &Tensor::zeros(&[0, 2, 4], dtype, Device::Cpu),
        )
        .unwrap();
        assert_eq!(e.shape(), vec![0, 3, 4]);
    }
}

fn err(r: opforge::Result<Tensor>) -> String {
    match r {
        Ok(t) => panic!("expected an error, got {t}"),
        Err(e) => e.to_string(),
    }
}

fn ones(shape: &[usize], dtype: DType) -> Tensor {
    Tensor::full(shape, Scalar::Int(1), dtype, Device::Cpu)
}

/// `bmm`'s messages, as PyTorch 2.15 words them on the CPU (they depend on the
/// path its kernel takes: fewer than 400 multiply-adds per matrix, a floating
/// result, or neither) and on meta tensors.
#[test]
fn bmm_checks_like_pytorch() {
    let (f, d, i, b) = (DType::Float32, DType::Float64, DType::Int64, DType::Bool);
    let bmm = |x: &[usize], dx, y: &[usize], dy| err(torch::bmm(&ones(x, dx), &ones(y, dy)));
    assert_eq!(bmm(&[3, 4], f, &[2, 4, 5], f), "batch1 must be a 3D tensor");
    assert_eq!(bmm(&[2, 3, 4], f, &[4, 5], f), "batch2 must be a 3D tensor");
    assert_eq!(
        bmm(&[2, 3, 4], f, &[3, 4, 5], f),
        "Expected size for first two dimensions of batch2 tensor to be: [2, 4] but got: [3, 4]."
    );
    assert_eq!(
        bmm(&[2, 3, 4], f, &[2, 5, 5], f),
        "Expected size for first two dimensions of batch2 tensor to be: [2, 4] but got: [2, 5]."
    );
    // Small matrices (s), and 8 x 8 x 8 = 512 multiply-adds (l): floating
    // results, else one addmm per matrix.
    let (s, l) = ([2, 3, 3], [2, 8, 8]);
    let cases: [(&[usize], DType, DType, &str); 12] = [
        (&s, f, d, "expected scalar type Float but found Double"),
        (&s, i, f, "expected scalar type Long but found Float"),
        (&s, b, b, "\"bmm\" not implemented for 'Bool'"),
        (&s, b, f, "\"bmm\" not implemented for 'Bool'"),
        (&s, f, b, "expected scalar type Float but found Bool"),
        (&l, f, d, "expected scalar type Double but found Float"),
        (&l, d, f, "expected scalar type Float but found Double"),
        (&l, i, f, "expected scalar type Float but found Long"),
        (&l, b, f, "expected scalar type Float but found Bool"),
        (
            &l,
            f,
            i,
            "expected m1 and m2 to have the same dtype, but got: float != long int",
        ),
        (
            &l,
            f,
            b,
            "expected m1 and m2 to have the same dtype, but got: float != bool",
        ),
        (&l, b, b, "\"addmm_impl_cpu_\" not implemented for 'Bool'"),
    ];
    for (shape, x, y, message) in cases {
        assert_eq!(bmm(shape, x, shape, y), message, "{x} @ {y} of {shape:?}");
    }
    // Nothing to compute: no dtype check; the result has mat2's dtype.
    let r = torch::bmm(&ones(&[0, 3, 4], f), &ones(&[0, 4, 5], d)).unwrap();
    assert_eq!((r.shape(), r.dtype()), (vec![0, 3, 5], d));
    let r = torch::bmm(&ones(&[2, 3, 0], b), &ones(&[2, 0, 5], b)).unwrap();
    assert_eq!(
        (r.dtype(), r.to_vec::<bool>().unwrap()),
        (b, vec![false; 30])
    );
    // `out=`: mat2's dtype; resized before the product's errors.
    let mut out = ones(&[1], f);
    assert_eq!(
        err(ops::bmm_out(&ones(&s, f), &ones(&s, d), &mut out)),
        "Expected out tensor to have dtype double, but got float instead"
    );
    let mut out = ones(&[7], b);
    assert_eq!(
        err(ops::bmm_out(&ones(&s, b), &ones(&s, b), &mut out)),
        "\"bmm\" not implemented for 'Bool'"
    );
    assert_eq!(out.shape(), vec![2, 3, 3]);
    let mut out = ops::expand(&ones(&[1, 3, 3], f), &[2, 3, 3], false).unwrap();
    assert_eq!(
        err(ops::bmm_out(&ones(&s, f), &ones(&s, f), &mut out)),
        "unsupported operation: more than one element of the written-to tensor refers to a single memory location. Please clone() the tensor before performing the operation."
    );
    // Meta: the meta function's checks (dtypes first, printed as torch.*).
    let meta = |x: &[usize], dx, y: &[usize], dy| {
        torch::bmm(
            &Tensor::zeros(x, dx, Device::Meta),
            &Tensor::zeros(y, dy, Device::Meta),
        )
    };
    assert_eq!(
        err(meta(&[0, 3, 4], f, &[0, 4, 5], d)),
        "expected scalar type torch.float32 but found torch.float64"
    );
    let r = meta(&[2, 3, 4], b, &[2, 4, 5], b).unwrap();
    assert_eq!(
        (r.shape(), r.device(), r.dtype()),
        (vec![2, 3, 5], Device::Meta, b)
    );
}

/// `bmm` into its own input gets the product of the inputs as they were.
#[test]
fn bmm_into_its_input() {
    let a = Tensor::from_vec((0..8).map(|x| x as f32).collect(), &[2, 2, 2]).unwrap();
    let mut out = a.clone();
    ops::bmm_out(&a, &a, &mut out).unwrap();
    assert_eq!(
        a.to_vec::<f32>().unwrap(),
        vec![2.0, 3.0, 6.0, 11.0, 46.0, 55.0, 66.0, 79.0]
    );
    // Resized: [2, 2, 3] @ [2, 3, 2] into the first operand.
    let x = Tensor::from_vec((0..12).map(|x| x as f32).collect(), &[2, 2, 3]).unwrap();
    let y = ones(&[2, 3, 2], DType::Float32);
    let mut out = x.clone();
    ops::bmm_out(&x, &y, &mut out).unwrap();
    assert_eq!(
        (x.shape(), x.to_vec::<f32>().unwrap()),
        (
            vec![2, 2, 2],
            vec![3.0, 3.0, 12.0, 12.0, 21.0, 21.0, 30.0, 30.0]
        )
    );
}
