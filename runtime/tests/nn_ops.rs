//! The nn, loss and optimizer operators (`_softmax`, `_log_softmax`,
//! `nll_loss*`, `cross_entropy_loss`, `mse_loss*`, `addmm`, `linear`,
//! `one_hot`, `lerp`, `addcmul`, `addcdiv`, the in-place scalar arithmetic,
//! `uniform_`, `normal_`) against numbers measured with PyTorch 2.15 (CPU, the
//! AVX2 build). Every constant below is PyTorch 2.15's output, printed by
//! `t.tolist()` for the call named in its doc line; the inputs are written out
//! next to each test. Softmax and loss values compare within 1e-12 (float64)
//! or 1e-6 (float32) relative; the optimizer arithmetic and the random fills
//! compare exactly.

// The float32 constants are PyTorch's values as `tolist()` prints them (the
// shortest double of each float32), more digits than a float32 literal needs.
#![allow(clippy::excessive_precision)]

use opforge::autograd::engine::grad;
use opforge::{ops, DType, Scalar, Tensor};
use std::sync::{Mutex, MutexGuard};

/// The tests that draw from the process-wide default generator run one at a
/// time.
fn default_generator() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

fn vals(t: &Tensor) -> Vec<f64> {
    t.to_vec::<f64>().unwrap()
}

#[track_caller]
fn close<W: Copy + Into<f64>>(got: &Tensor, want: &[W], rel: f64) {
    let g = vals(got);
    assert_eq!(g.len(), want.len(), "length: got {g:?}");
    for (i, (a, b)) in g.iter().zip(want.iter().map(|&w| w.into())).enumerate() {
        let ok = (a.is_nan() && b.is_nan()) || (a - b).abs() <= rel * b.abs().max(1e-6);
        assert!(ok, "element {i}: got {a}, want {b} (all: {g:?})");
    }
}

#[track_caller]
fn exact_f32(got: &Tensor, want: &[f32]) {
    assert_eq!(got.dtype(), DType::Float32);
    let g = got.to_vec::<f32>().unwrap();
    assert_eq!(g.len(), want.len());
    for (i, (a, b)) in g.iter().zip(want).enumerate() {
        assert_eq!(a.to_bits(), b.to_bits(), "element {i}: got {a}, want {b}");
    }
}

#[track_caller]
fn exact_f64(got: &Tensor, want: &[f64]) {
    assert_eq!(got.dtype(), DType::Float64);
    let g = got.to_vec::<f64>().unwrap();
    assert_eq!(g.len(), want.len());
    for (i, (a, b)) in g.iter().zip(want).enumerate() {
        assert_eq!(a.to_bits(), b.to_bits(), "element {i}: got {a}, want {b}");
    }
}

fn t64(v: &[f64], shape: &[usize]) -> Tensor {
    Tensor::from_vec(v.to_vec(), shape).unwrap()
}

fn t32(v: &[f32], shape: &[usize]) -> Tensor {
    Tensor::from_vec(v.to_vec(), shape).unwrap()
}

fn leaf(v: &[f64], shape: &[usize]) -> Tensor {
    let t = t64(v, shape);
    t.set_requires_grad(true).unwrap();
    t
}

fn grad_of(out: &Tensor, input: &Tensor, g: Option<Tensor>) -> Tensor {
    let (out, input) = (std::slice::from_ref(out), std::slice::from_ref(input));
    grad(out, input, &[g], None, false, false).unwrap()[0]
        .clone()
        .unwrap()
}

fn longs(v: &[i64]) -> Tensor {
    Tensor::from_vec(v.to_vec(), &[v.len()]).unwrap()
}

// x = [[1.0, 2.0, 3.0], [-1.0, 0.5, 4.0]] (float64, requires grad)
const X: &[f64] = &[1.0, 2.0, 3.0, -1.0, 0.5, 4.0];
// g = [[0.1, -0.2, 0.3], [0.4, 0.5, -0.6]]
const G: &[f64] = &[0.1, -0.2, 0.3, 0.4, 0.5, -0.6];

#[test]
fn log_softmax_and_softmax_values_and_gradients() {
    let cases: [(i64, bool, &[f64], &[f64]); 4] = [
        (1, true, LOG_SOFTMAX_D1, LOG_SOFTMAX_GRAD_D1),
        (0, true, LOG_SOFTMAX_D0, LOG_SOFTMAX_GRAD_D0),
        (1, false, SOFTMAX_D1, SOFTMAX_GRAD_D1),
        (0, false, SOFTMAX_D0, SOFTMAX_GRAD_D0),
    ];
    for (dim, log, want, want_grad) in cases {
        let x = leaf(X, &[2, 3]);
        let y = match log {
            true => ops::_log_softmax(&x, dim, false).unwrap(),
            false => ops::_softmax(&x, dim, false).unwrap(),
        };
        close(&y, want, 1e-12);
        close(&grad_of(&y, &x, Some(t64(G, &[2, 3]))), want_grad, 1e-12);
        // The CompositeImplicitAutograd forms decompose to the same.
        let z = match log {
            true => ops::log_softmax_int(&x, dim - 2, None).unwrap(),
            false => ops::softmax_int(&x, dim - 2, None).unwrap(),
        };
        close(&z, want, 1e-12);
    }
}

#[test]
fn softmax_is_stable_and_takes_any_strides() {
    let big = t32(&[1000.0, 1001.0, 1002.0], &[3]);
    close(
        &ops::_log_softmax(&big, 0, false).unwrap(),
        LOG_SOFTMAX_BIG_F32,
        1e-6,
    );
    close(
        &ops::_softmax(&big, 0, false).unwrap(),
        SOFTMAX_BIG_F32,
        1e-6,
    );
    // torch.arange(6.).reshape(2, 3).t(), log_softmax over dim 1
    let xt = ops::t(&t32(&[0.0, 1.0, 2.0, 3.0, 4.0, 5.0], &[2, 3])).unwrap();
    close(
        &ops::_log_softmax(&xt, 1, false).unwrap(),
        LOG_SOFTMAX_NONCONTIG,
        1e-6,
    );
    // dtype= casts first
    let r = ops::log_softmax_int(&xt, 1, Some(DType::Float64)).unwrap();
    assert_eq!(r.dtype(), DType::Float64);
    close(&r, LOG_SOFTMAX_NONCONTIG, 1e-6);
    let e = ops::_softmax(&t32(&[1.0], &[1]), 0, true).unwrap_err();
    assert_eq!(
        e.to_string(),
        "softmax with half to float conversion is not supported on CPU"
    );
    let e = ops::_log_softmax(&longs(&[1, 2]), 0, false).unwrap_err();
    assert_eq!(
        e.to_string(),
        "\"log_softmax_lastdim_kernel_impl\" not implemented for 'Long'"
    );
}

// lp = log_softmax([[0.2, -1.0, 0.5, 1.5], [1.0, 0.0, -0.5, 0.3],
//                   [-0.2, 0.4, 0.9, -1.1]], 1) (float64), target = [2, 0, 3],
// weight = [0.5, 1.0, 2.0, 1.5]; F.nll_loss(lp, target, weight, reduction,
// ignore_index), and the gradient of its sum.
#[test]
fn nll_loss_weight_ignore_index_and_each_reduction() {
    let w = t64(&[0.5, 1.0, 2.0, 1.5], &[4]);
    let target = longs(&[2, 0, 3]);
    type Case = (i64, bool, i64, &'static [f64], &'static [f64]);
    let cases: [Case; 12] = [
        (
            0,
            false,
            -100,
            NLL_NONE_W_FALSE_II_100,
            NLL_GRAD_NONE_W_FALSE_II_100,
        ),
        (
            0,
            false,
            0,
            NLL_NONE_W_FALSE_II_0,
            NLL_GRAD_NONE_W_FALSE_II_0,
        ),
        (
            0,
            true,
            -100,
            NLL_NONE_W_TRUE_II_100,
            NLL_GRAD_NONE_W_TRUE_II_100,
        ),
        (0, true, 0, NLL_NONE_W_TRUE_II_0, NLL_GRAD_NONE_W_TRUE_II_0),
        (
            1,
            false,
            -100,
            NLL_MEAN_W_FALSE_II_100,
            NLL_GRAD_MEAN_W_FALSE_II_100,
        ),
        (
            1,
            false,
            0,
            NLL_MEAN_W_FALSE_II_0,
            NLL_GRAD_MEAN_W_FALSE_II_0,
        ),
        (
            1,
            true,
            -100,
            NLL_MEAN_W_TRUE_II_100,
            NLL_GRAD_MEAN_W_TRUE_II_100,
        ),
        (1, true, 0, NLL_MEAN_W_TRUE_II_0, NLL_GRAD_MEAN_W_TRUE_II_0),
        (
            2,
            false,
            -100,
            NLL_SUM_W_FALSE_II_100,
            NLL_GRAD_SUM_W_FALSE_II_100,
        ),
        (2, false, 0, NLL_SUM_W_FALSE_II_0, NLL_GRAD_SUM_W_FALSE_II_0),
        (
            2,
            true,
            -100,
            NLL_SUM_W_TRUE_II_100,
            NLL_GRAD_SUM_W_TRUE_II_100,
        ),
        (2, true, 0, NLL_SUM_W_TRUE_II_0, NLL_GRAD_SUM_W_TRUE_II_0),
    ];
    for (reduction, weighted, ignore, want, want_grad) in cases {
        let lp = leaf(LP, &[3, 4]);
        let weight = weighted.then_some(&w);
        let l = ops::nll_loss(&lp, &target, weight, reduction, ignore).unwrap();
        close(&l, want, 1e-12);
        let s = ops::sum(&l, None).unwrap();
        close(&grad_of(&s, &lp, None), want_grad, 1e-12);
        // nll_loss_nd takes the same path for 2-D inputs.
        let nd = ops::nll_loss_nd(&lp, &target, weight, reduction, ignore).unwrap();
        close(&nd, want, 1e-12);
    }
    let lp = t64(LP, &[3, 4]);
    let (_, tw) = ops::nll_loss_forward(&lp, &target, None, 0, -100).unwrap();
    close(&tw, NLL_NONE_TOTAL_WEIGHT, 0.0);
    let (_, tw) = ops::nll_loss_forward(&lp, &target, Some(&w), 1, 0).unwrap();
    close(&tw, NLL_MEAN_W_TW, 0.0);
    // F.nll_loss(lp[0], torch.tensor(1))
    let row = ops::select_int(&lp, 0, 0).unwrap();
    let l = ops::nll_loss(&row, &Tensor::scalar(1i64), None, 1, -100).unwrap();
    close(&l, NLL_1D, 1e-12);
}

#[test]
fn nll_loss_errors_are_pytorchs() {
    let lp = t64(LP, &[3, 4]);
    let e = ops::nll_loss(&lp, &longs(&[2, 12, 0]), None, 1, -100).unwrap_err();
    assert_eq!(e.to_string(), "Target 12 is out of bounds.");
    assert_eq!(e.python_class(), "IndexError");
    let e = ops::nll_loss(&lp, &longs(&[2, -1, 0]), None, 1, -100).unwrap_err();
    assert_eq!(e.to_string(), "Target -1 is out of bounds.");
    let int_target = Tensor::from_vec(vec![2i32, 1, 0], &[3]).unwrap();
    let e = ops::nll_loss(&lp, &int_target, None, 1, -100).unwrap_err();
    assert_eq!(
        e.to_string(),
        "expected target dtype to be Long or Byte, but got Int"
    );
    let e = ops::nll_loss_forward(&lp, &longs(&[1, 2]), None, 1, -100).unwrap_err();
    assert_eq!(
        e.to_string(),
        "size mismatch (got input: [3, 4], target: [2])"
    );
}

// A batch of 1000 (float32): x[i][j] = sin(10 i + j), target[i] = 7 i % 10 with
// every 13th ignored (-100), weight[c] = 0.5 + 0.1 c;
// torch.ops.aten.nll_loss_forward(x, target, weight?, reduction, -100), the
// float32 bits of (output, total_weight): the cascade of partial sums makes
// them PyTorch's exactly.
#[test]
fn nll_loss_sums_a_batch_as_pytorch_does() {
    let (n, c) = (1000usize, 10usize);
    let x: Vec<f32> = (0..n * c).map(|k| (k as f64).sin() as f32).collect();
    let x = t32(&x, &[n, c]);
    let t: Vec<i64> = (0..n)
        .map(|i| {
            if i % 13 == 0 {
                -100
            } else {
                (i as i64 * 7) % 10
            }
        })
        .collect();
    let t = longs(&t);
    let w: Vec<f32> = (0..c).map(|k| (0.5 + 0.1 * k as f64) as f32).collect();
    let w = t32(&w, &[c]);
    let cases = [
        (1, false, 0x3c7c38e2u32, 0x4466c000u32),
        (1, true, 0x3c18b77d, 0x445b7999),
        (2, false, 0x41635846, 0x4466c000),
        (2, true, 0x4102ed82, 0x445b7999),
    ];
    for (reduction, weighted, out, total) in cases {
        let weight = weighted.then_some(&w);
        let (o, tw) = ops::nll_loss_forward(&x, &t, weight, reduction, -100).unwrap();
        let bits = |t: &Tensor| t.to_vec::<f32>().unwrap()[0].to_bits();
        assert_eq!(
            (bits(&o), bits(&tw)),
            (out, total),
            "reduction {reduction}, weighted {weighted}"
        );
    }
}

// In-place forms record their functional's node: d/dp of
// sum(lerp_(p * 1, e, 0.3)) is 0.7, of sum(addcmul_(p * 1, t1, t2, 2)) is 1
// (and 2 * t2 for t1).
#[test]
fn in_place_forms_are_differentiable() {
    let p = leaf(&[1.0, 2.0, 3.0], &[3]);
    let e = t64(&[0.5, 0.5, 0.5], &[3]);
    let mut q = ops::mul_Scalar(&p, Scalar::Int(1)).unwrap();
    ops::lerp__Scalar(&mut q, &e, Scalar::Float(0.3)).unwrap();
    let s = ops::sum(&q, None).unwrap();
    close(&grad_of(&s, &p, None), &[0.7, 0.7, 0.7], 1e-12);
    let t1 = leaf(&[1.0, -1.0, 2.0], &[3]);
    let t2 = t64(&[0.5, 4.0, -1.0], &[3]);
    let mut q = ops::mul_Scalar(&p, Scalar::Int(1)).unwrap();
    ops::addcmul_(&mut q, &t1, &t2, Scalar::Float(2.0)).unwrap();
    let s = ops::sum(&q, None).unwrap();
    close(&grad_of(&s, &t1, None), &[1.0, 8.0, -2.0], 1e-12);
    // ((p * 3 + 1) / 2): 1.5 each.
    let mut q = ops::mul_Scalar(&p, Scalar::Int(1)).unwrap();
    ops::mul__Scalar(&mut q, Scalar::Float(3.0)).unwrap();
    ops::add__Scalar(&mut q, Scalar::Float(1.0), Scalar::Int(1)).unwrap();
    ops::div__Scalar(&mut q, Scalar::Float(2.0)).unwrap();
    let s = ops::sum(&q, None).unwrap();
    close(&grad_of(&s, &p, None), &[1.5, 1.5, 1.5], 1e-12);
}

// torch.lerp(torch.zeros(2), torch.zeros(2, dtype=torch.float64), 0.5);
// F.cross_entropy(torch.zeros(2, 3), torch.zeros(2, 3, dtype=torch.long))
#[test]
fn dtype_errors_are_pytorchs() {
    let e = ops::lerp_Scalar(
        &t32(&[0.0; 2], &[2]),
        &t64(&[0.0; 2], &[2]),
        Scalar::Float(0.5),
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "expected dtype float for `end` but got dtype double"
    );
    let target = Tensor::from_vec(vec![0i64; 6], &[2, 3]).unwrap();
    let e =
        ops::cross_entropy_loss(&t32(&[0.0; 6], &[2, 3]), &target, None, 1, -100, 0.0).unwrap_err();
    assert_eq!(
        e.to_string(),
        "Expected floating point type for target with class probabilities, got Long"
    );
}

// logits: the rows of LP's input as float32; target = [2, 0, 3].
const LOGITS: &[f32] = &[
    0.2, -1.0, 0.5, 1.5, 1.0, 0.0, -0.5, 0.3, -0.2, 0.4, 0.9, -1.1,
];

#[test]
fn cross_entropy_class_indices_probabilities_and_spatial() {
    let target = longs(&[2, 0, 3]);
    let x = t32(LOGITS, &[3, 4]);
    x.set_requires_grad(true).unwrap();
    let ce = ops::cross_entropy_loss(&x, &target, None, 1, -100, 0.0).unwrap();
    close(&ce, CE, 1e-6);
    close(&grad_of(&ce, &x, None), CE_GRAD, 1e-5);
    let w = t32(&[0.5, 1.0, 2.0, 1.5], &[4]);
    let ce = ops::cross_entropy_loss(&x, &target, Some(&w), 2, 0, 0.0).unwrap();
    close(&ce, CE_W_SUM_II0, 1e-6);
    // Class probabilities, with and without label smoothing 0.1.
    let probs = t32(
        &[
            0.1, 0.2, 0.3, 0.4, 1.0, 0.0, 0.0, 0.0, 0.25, 0.25, 0.25, 0.25,
        ],
        &[3, 4],
    );
    close(
        &ops::cross_entropy_loss(&x, &probs, None, 1, -100, 0.0).unwrap(),
        CE_PROBS,
        1e-6,
    );
    close(
        &ops::cross_entropy_loss(&x, &probs, None, 1, -100, 0.1).unwrap(),
        CE_PROBS_LS,
        1e-6,
    );
    // (N, C, d) input: torch.arange(24.).reshape(2, 3, 4).sin() (float64)
    let l3: Vec<f64> = (0..24).map(|i| (i as f64).sin()).collect();
    let l3 = t64(&l3, &[2, 3, 4]);
    let t3 = Tensor::from_vec(vec![0i64, 1, 2, 1, 2, 2, 0, 1], &[2, 4]).unwrap();
    let none = ops::cross_entropy_loss(&l3, &t3, None, 0, -100, 0.0).unwrap();
    assert_eq!(none.shape(), vec![2, 4]);
    close(&none, CE_3D_NONE, 1e-12);
    close(
        &ops::cross_entropy_loss(&l3, &t3, None, 1, -100, 0.0).unwrap(),
        CE_3D_MEAN,
        1e-12,
    );
    // Label smoothing 0.1 with class indices.
    close(
        &ops::cross_entropy_loss(&x, &target, None, 1, -100, 0.1).unwrap(),
        CE_LS_IDX,
        1e-6,
    );
    for (weighted, reduction, ignore, want) in CE_LS_MORE {
        let weight = weighted.then_some(&w);
        let got = ops::cross_entropy_loss(&x, &target, weight, *reduction, *ignore, 0.2).unwrap();
        close(&got, want, 1e-6);
    }
}

// a = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.5]] (float32, requires grad),
// b = [[1.5, 1.0, 3.0], [0.0, 5.5, 6.0]]
#[test]
fn mse_loss_each_reduction_and_gradient() {
    let b = t32(&[1.5, 1.0, 3.0, 0.0, 5.5, 6.0], &[2, 3]);
    let cases: [(i64, &[f32], &[f32]); 3] = [
        (0, MSE_NONE, MSE_GRAD_NONE),
        (1, MSE_MEAN, MSE_GRAD_MEAN),
        (2, MSE_SUM, MSE_GRAD_SUM),
    ];
    for (reduction, want, want_grad) in cases {
        let a = t32(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.5], &[2, 3]);
        a.set_requires_grad(true).unwrap();
        let l = ops::mse_loss(&a, &b, reduction).unwrap();
        close(&l, want, 1e-6);
        let s = ops::sum(&l, None).unwrap();
        close(&grad_of(&s, &a, None), want_grad, 1e-6);
    }
}

/// `F.mse_loss` with a target that broadcasts: input and target are
/// broadcast first (the operator's derivative holds for equal shapes only),
/// so the target's gradient sums over the rows (PyTorch 2.15, side by side).
#[test]
fn functional_mse_loss_broadcasts_before_the_operator() {
    use opforge::nn::functional::{mse_loss, Reduction};
    type Case<'a> = (Reduction, &'a [f32], &'a [f32], &'a [f32]);
    let cases: [Case; 3] = [
        (
            Reduction::Mean,
            &[5.958333492279053],
            &[
                -0.16666667,
                0.33333334,
                0.0,
                0.8333334,
                1.3333334,
                1.1666667,
            ],
            &[-0.6666667, -1.6666667, -1.1666667],
        ),
        (
            Reduction::Sum,
            &[35.75],
            &[-1.0, 2.0, 0.0, 5.0, 8.0, 7.0],
            &[-4.0, -10.0, -7.0],
        ),
        (
            Reduction::None,
            &[0.25, 1.0, 0.0, 6.25, 16.0, 12.25],
            &[-1.0, 2.0, 0.0, 5.0, 8.0, 7.0],
            &[-4.0, -10.0, -7.0],
        ),
    ];
    for (reduction, want, want_input, want_target) in cases {
        let x = t32(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.5], &[2, 3]);
        let t = t32(&[1.5, 1.0, 3.0], &[3]);
        x.set_requires_grad(true).unwrap();
        t.set_requires_grad(true).unwrap();
        let (l, warnings) = opforge::warnings::catch_warnings(|| mse_loss(&x, &t, reduction));
        let l = l.unwrap();
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        close(&l, want, 1e-6);
        let s = ops::sum(&l, None).unwrap();
        let got = grad(&[s], &[x.clone(), t.clone()], &[], None, false, false).unwrap();
        close(got[0].as_ref().unwrap(), want_input, 1e-6);
        close(got[1].as_ref().unwrap(), want_target, 1e-6);
    }
}

// s = [1.0, -2.0], m1 = [[1, 2, 3], [4, 5, 6]], m2 = [[0.5, -1], [2, 0.25],
// [-1.5, 1]] (float32)
#[test]
fn addmm_with_beta_and_alpha() {
    let s = t32(&[1.0, -2.0], &[2]);
    let m1 = t32(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]);
    let m2 = t32(&[0.5, -1.0, 2.0, 0.25, -1.5, 1.0], &[3, 2]);
    let one = Scalar::Int(1);
    close(&ops::addmm(&s, &m1, &m2, one, one).unwrap(), ADDMM, 1e-6);
    let r = ops::addmm(&s, &m1, &m2, Scalar::Float(0.5), Scalar::Float(2.0)).unwrap();
    close(&r, ADDMM_B0_5_A2, 1e-6);
    // beta = 0 ignores self, NaNs included.
    let nan = t32(&[f32::NAN, 1.0], &[2]);
    close(
        &ops::addmm(&nan, &m1, &m2, Scalar::Float(0.0), one).unwrap(),
        ADDMM_B0_NAN,
        1e-6,
    );
    // addmm_ and addmm.out
    let mut acc = ops::expand(&s, &[2, 2], false).unwrap();
    acc = ops::clone(&acc, None).unwrap();
    ops::addmm_(&mut acc, &m1, &m2, one, one).unwrap();
    close(&acc, ADDMM, 1e-6);
    let mut out = t32(&[], &[0]);
    ops::addmm_out(
        &s,
        &m1,
        &m2,
        Scalar::Float(0.5),
        Scalar::Float(2.0),
        &mut out,
    )
    .unwrap();
    close(&out, ADDMM_B0_5_A2, 1e-6);
    let e = ops::addmm(&s, &m1, &m1, one, one).unwrap_err();
    assert_eq!(
        e.to_string(),
        "addmm: mat1 and mat2 shapes cannot be multiplied (2x3 and 2x3)"
    );
    // linear(input, weight, bias) = addmm(bias, input, weight.t()).
    let wt = ops::t(&m2).unwrap();
    close(&ops::linear(&m1, &wt, Some(&s)).unwrap(), ADDMM, 1e-6);
    let m1_3d = ops::view(&m1, &[1, 2, 3]).unwrap();
    let r = ops::linear(&m1_3d, &wt, Some(&s)).unwrap();
    assert_eq!(r.shape(), vec![1, 2, 2]);
    close(&r, ADDMM, 1e-6);
    let no_bias = ops::linear(&m1, &wt, None).unwrap();
    let want: Vec<f32> = ADDMM
        .iter()
        .zip([1.0, -2.0, 1.0, -2.0])
        .map(|(a, b)| a - b)
        .collect();
    close(&no_bias, &want, 1e-6);
}

#[test]
fn one_hot_values_and_errors() {
    let r = ops::one_hot(&longs(&[0, 2, 1, 2]), -1).unwrap();
    assert_eq!((r.dtype(), r.shape()), (DType::Int64, vec![4, 3]));
    assert_eq!(r.to_vec::<i64>().unwrap(), ONE_HOT);
    let x = Tensor::from_vec(vec![0i64, 3, 1, 4], &[2, 2]).unwrap();
    let r = ops::one_hot(&x, 5).unwrap();
    assert_eq!(r.shape(), vec![2, 2, 5]);
    assert_eq!(r.to_vec::<i64>().unwrap(), ONE_HOT_5);
    let empty = longs(&[]);
    let r = ops::one_hot(&empty, 3).unwrap();
    assert_eq!(r.shape(), vec![0, 3]);
    assert!(ONE_HOT_EMPTY.is_empty());
    let msg = |x: &Tensor, n: i64| ops::one_hot(x, n).unwrap_err().to_string();
    assert_eq!(
        msg(&longs(&[0, -1]), -1),
        "Class values must be non-negative."
    );
    assert_eq!(
        msg(&longs(&[0, 3]), 3),
        "Class values must be smaller than num_classes."
    );
    assert_eq!(
        msg(&t32(&[0.0], &[1]), -1),
        "one_hot is only applicable to index tensor of type LongTensor."
    );
    assert_eq!(
        msg(&empty, -1),
        "Can not infer total number of classes from empty tensor."
    );
}

// torch.manual_seed(3); p, e, t1 = torch.randn(20) x3; t2 = torch.rand(20) + 0.5
#[test]
fn optimizer_arithmetic_is_pytorchs_bit_for_bit() {
    let (p, e) = (t32(P, &[20]), t32(E, &[20]));
    let (t1, t2) = (t32(T1, &[20]), t32(T2, &[20]));
    exact_f32(
        &ops::lerp_Scalar(&p, &e, Scalar::Float(0.1)).unwrap(),
        LERP_0_1,
    );
    exact_f32(
        &ops::lerp_Scalar(&p, &e, Scalar::Float(0.9)).unwrap(),
        LERP_0_9,
    );
    let mut q = ops::clone(&p, None).unwrap();
    ops::lerp__Scalar(&mut q, &e, Scalar::Float(0.3)).unwrap();
    exact_f32(&q, LERP_0_3);
    let mut q = ops::clone(&p, None).unwrap();
    ops::addcmul_(&mut q, &t1, &t2, Scalar::Float(-0.37)).unwrap();
    exact_f32(&q, ADDCMUL);
    let mut q = ops::clone(&p, None).unwrap();
    ops::addcdiv_(&mut q, &t1, &t2, Scalar::Float(0.013)).unwrap();
    exact_f32(&q, ADDCDIV);
    let f64_of =
        |t: &Tensor| ops::_to_copy(t, Some(DType::Float64), None, None, None, false, None).unwrap();
    let mut q = f64_of(&p);
    ops::addcmul_(&mut q, &f64_of(&t1), &f64_of(&t2), Scalar::Float(0.9)).unwrap();
    exact_f64(&q, ADDCMUL_F64);
    let mut q = ops::clone(&p, None).unwrap();
    ops::mul__Scalar(&mut q, Scalar::Float(0.9)).unwrap();
    exact_f32(&q, MUL);
    ops::div__Scalar(&mut q, Scalar::Float(3.0)).unwrap();
    exact_f32(&q, DIV);
    ops::add__Scalar(&mut q, Scalar::Float(0.5), Scalar::Int(2)).unwrap();
    exact_f32(&q, ADD);
    // out= forms give the same numbers.
    let mut out = t32(&[], &[0]);
    ops::lerp_Scalar_out(&p, &e, Scalar::Float(0.1), &mut out).unwrap();
    exact_f32(&out, LERP_0_1);
    ops::addcmul_out(&p, &t1, &t2, Scalar::Float(-0.37), &mut out).unwrap();
    exact_f32(&out, ADDCMUL);
    ops::addcdiv_out(&p, &t1, &t2, Scalar::Float(0.013), &mut out).unwrap();
    exact_f32(&out, ADDCDIV);
    // Integers: torch.addcmul(tensor([1, 2]), tensor([3, 4]), tensor([5, -6]), value=2)
    let r = ops::addcmul(
        &longs(&[1, 2]),
        &longs(&[3, 4]),
        &longs(&[5, -6]),
        Scalar::Int(2),
    )
    .unwrap();
    assert_eq!(r.to_vec::<i64>().unwrap(), vec![31, -46]);
}

// torch.manual_seed(0); torch.empty(n, dtype=dt).uniform_(-1, 1) / .normal_(0.5, 2.0)
#[test]
fn uniform_and_normal_follow_pytorchs_generator() {
    let _g = default_generator();
    let f32s: [(usize, &[f32], &[f32]); 4] = [
        (5, UNIFORM_TORCH_FLOAT32_5, NORMAL_TORCH_FLOAT32_5),
        (16, UNIFORM_TORCH_FLOAT32_16, NORMAL_TORCH_FLOAT32_16),
        (21, UNIFORM_TORCH_FLOAT32_21, NORMAL_TORCH_FLOAT32_21),
        (40, UNIFORM_TORCH_FLOAT32_40, NORMAL_TORCH_FLOAT32_40),
    ];
    for (n, uniform, normal) in f32s {
        opforge::manual_seed(0);
        let mut t = t32(&vec![0.0; n], &[n]);
        ops::uniform_(&mut t, -1.0, 1.0, None).unwrap();
        exact_f32(&t, uniform);
        opforge::manual_seed(0);
        ops::normal_(&mut t, 0.5, 2.0, None).unwrap();
        exact_f32(&t, normal);
    }
    let f64s: [(usize, &[f64], &[f64]); 4] = [
        (5, UNIFORM_TORCH_FLOAT64_5, NORMAL_TORCH_FLOAT64_5),
        (16, UNIFORM_TORCH_FLOAT64_16, NORMAL_TORCH_FLOAT64_16),
        (21, UNIFORM_TORCH_FLOAT64_21, NORMAL_TORCH_FLOAT64_21),
        (40, UNIFORM_TORCH_FLOAT64_40, NORMAL_TORCH_FLOAT64_40),
    ];
    for (n, uniform, normal) in f64s {
        opforge::manual_seed(0);
        let mut t = t64(&vec![0.0; n], &[n]);
        ops::uniform_(&mut t, -1.0, 1.0, None).unwrap();
        exact_f64(&t, uniform);
        opforge::manual_seed(0);
        ops::normal_(&mut t, 0.5, 2.0, None).unwrap();
        exact_f64(&t, normal);
    }
    // Non-contiguous: drawn in memory order (torch.empty(3, 4).t().uniform_(),
    // torch.empty(4, 5).t().normal_()).
    opforge::manual_seed(0);
    let mut z = ops::t(&t32(&[0.0; 12], &[3, 4])).unwrap();
    ops::uniform_(&mut z, 0.0, 1.0, None).unwrap();
    exact_f32(&z, UNIFORM_NONCONTIG);
    opforge::manual_seed(0);
    let mut z = ops::t(&t32(&[0.0; 20], &[4, 5])).unwrap();
    ops::normal_(&mut z, 0.0, 1.0, None).unwrap();
    exact_f32(&z, NORMAL_NONCONTIG_20);
    let mut t = t32(&[0.0; 3], &[3]);
    let e = ops::uniform_(&mut t, 1.0, 0.0, None).unwrap_err();
    assert_eq!(
        e.to_string(),
        "uniform_ expects to return a [from, to) range, but found from=1 > to=0"
    );
    let e = ops::normal_(&mut t, 0.0, -1.0, None).unwrap_err();
    assert_eq!(e.to_string(), "normal expects std >= 0.0, but found std -1");
    let mut l = longs(&[0, 0]);
    let e = ops::uniform_(&mut l, 0.0, 1.0, None).unwrap_err();
    assert_eq!(
        e.to_string(),
        "\"check_uniform_bounds\" not implemented for 'Long'"
    );
}

// ---- PyTorch 2.15's numbers ----------------------------------------------------------

/// `log_softmax d1`: [2, 3].
const LOG_SOFTMAX_D1: &[f64] = &[
    -2.4076059644443806,
    -1.4076059644443804,
    -0.4076059644443804,
    -5.036269565124779,
    -3.5362695651247793,
    -0.03626956512477912,
];
/// `log_softmax grad d1`: [2, 3].
const LOG_SOFTMAX_GRAD_D1: &[f64] = &[
    0.08199388536592392,
    -0.24894569421095952,
    0.16695180884503563,
    0.3980506170053014,
    0.4912634715387565,
    -0.8893140885440579,
];
/// `softmax d1`: [2, 3].
const SOFTMAX_D1: &[f64] = &[
    0.09003057317038045,
    0.2447284710547976,
    0.6652409557748218,
    0.00649794331566194,
    0.0291217615374784,
    0.9643802951468596,
];
/// `softmax grad d1`: [2, 3].
const SOFTMAX_GRAD_D1: &[f64] = &[
    -0.005368491552911496,
    -0.08801161435095449,
    0.09338010590386599,
    0.00624756533703335,
    0.03091182144095315,
    -0.03715938677798652,
];
/// `log_softmax d0`: [2, 3].
const LOG_SOFTMAX_D0: &[f64] = &[
    -0.1269280110429726,
    -0.20141327798275246,
    -1.3132616875182228,
    -2.1269280110429727,
    -1.7014132779827524,
    -0.31326168751822286,
];
/// `log_softmax grad d0`: [2, 3].
const LOG_SOFTMAX_GRAD_D0: &[f64] = &[
    -0.3403985389889411,
    -0.4452723428580931,
    0.38068242641099853,
    0.34039853898894123,
    0.4452723428580931,
    -0.38068242641099853,
];
/// `softmax d0`: [2, 3].
const SOFTMAX_D0: &[f64] = &[
    0.8807970779778823,
    0.8175744761936437,
    0.2689414213699951,
    0.11920292202211755,
    0.18242552380635632,
    0.7310585786300049,
];
/// `softmax grad d0`: [2, 3].
const SOFTMAX_GRAD_D0: &[f64] = &[
    -0.031498075621051926,
    -0.104402516449233,
    0.17695073991733365,
    0.03149807562105195,
    0.10440251644923298,
    -0.17695073991733365,
];
/// `log_softmax big f32`: [3].
const LOG_SOFTMAX_BIG_F32: &[f32] = &[
    -2.4076058864593506,
    -1.4076058864593506,
    -0.40760594606399536,
];
/// `softmax big f32`: [3].
const SOFTMAX_BIG_F32: &[f32] = &[0.09003057330846786, 0.2447284758090973, 0.6652409434318542];
/// `log_softmax noncontig`: [3, 2].
const LOG_SOFTMAX_NONCONTIG: &[f32] = &[
    -3.0485873222351074,
    -0.04858732968568802,
    -3.0485873222351074,
    -0.04858732968568802,
    -3.0485873222351074,
    -0.04858732968568802,
];
/// `lp`: [3, 4].
const LP: &[f64] = &[
    -1.8437745368666252,
    -3.0437745368666254,
    -1.5437745368666254,
    -0.5437745368666252,
    -0.7360126402358012,
    -1.7360126402358012,
    -2.236012640235801,
    -1.436012640235801,
    -1.829834411505344,
    -1.229834411505344,
    -0.729834411505344,
    -2.729834411505344,
];
/// `nll none w=False ii=-100`: [3].
const NLL_NONE_W_FALSE_II_100: &[f64] =
    &[1.5437745368666254, 0.7360126402358012, 2.729834411505344];
/// `nll grad none w=False ii=-100`: [3, 4].
const NLL_GRAD_NONE_W_FALSE_II_100: &[f64] = &[
    0.0, 0.0, -1.0, 0.0, -1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, -1.0,
];
/// `nll none w=False ii=0`: [3].
const NLL_NONE_W_FALSE_II_0: &[f64] = &[1.5437745368666254, 0.0, 2.729834411505344];
/// `nll grad none w=False ii=0`: [3, 4].
const NLL_GRAD_NONE_W_FALSE_II_0: &[f64] =
    &[0.0, 0.0, -1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, -1.0];
/// `nll none w=True ii=-100`: [3].
const NLL_NONE_W_TRUE_II_100: &[f64] = &[3.0875490737332507, 0.3680063201179006, 4.094751617258016];
/// `nll grad none w=True ii=-100`: [3, 4].
const NLL_GRAD_NONE_W_TRUE_II_100: &[f64] = &[
    0.0, 0.0, -2.0, 0.0, -0.5, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, -1.5,
];
/// `nll none w=True ii=0`: [3].
const NLL_NONE_W_TRUE_II_0: &[f64] = &[3.0875490737332507, 0.0, 4.094751617258016];
/// `nll grad none w=True ii=0`: [3, 4].
const NLL_GRAD_NONE_W_TRUE_II_0: &[f64] =
    &[0.0, 0.0, -2.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, -1.5];
/// `nll mean w=False ii=-100`: [].
const NLL_MEAN_W_FALSE_II_100: &[f64] = &[1.6698738628692567];
/// `nll grad mean w=False ii=-100`: [3, 4].
const NLL_GRAD_MEAN_W_FALSE_II_100: &[f64] = &[
    0.0,
    0.0,
    -0.3333333333333333,
    0.0,
    -0.3333333333333333,
    0.0,
    0.0,
    0.0,
    0.0,
    0.0,
    0.0,
    -0.3333333333333333,
];
/// `nll mean w=False ii=0`: [].
const NLL_MEAN_W_FALSE_II_0: &[f64] = &[2.1368044741859844];
/// `nll grad mean w=False ii=0`: [3, 4].
const NLL_GRAD_MEAN_W_FALSE_II_0: &[f64] =
    &[0.0, 0.0, -0.5, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, -0.5];
/// `nll mean w=True ii=-100`: [].
const NLL_MEAN_W_TRUE_II_100: &[f64] = &[1.8875767527772918];
/// `nll grad mean w=True ii=-100`: [3, 4].
const NLL_GRAD_MEAN_W_TRUE_II_100: &[f64] = &[
    0.0, 0.0, -0.5, 0.0, -0.125, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, -0.375,
];
/// `nll mean w=True ii=0`: [].
const NLL_MEAN_W_TRUE_II_0: &[f64] = &[2.0520859117117904];
/// `nll grad mean w=True ii=0`: [3, 4].
const NLL_GRAD_MEAN_W_TRUE_II_0: &[f64] = &[
    0.0,
    0.0,
    -0.5714285714285714,
    0.0,
    0.0,
    0.0,
    0.0,
    0.0,
    0.0,
    0.0,
    0.0,
    -0.42857142857142855,
];
/// `nll sum w=False ii=-100`: [].
const NLL_SUM_W_FALSE_II_100: &[f64] = &[5.00962158860777];
/// `nll grad sum w=False ii=-100`: [3, 4].
const NLL_GRAD_SUM_W_FALSE_II_100: &[f64] = &[
    0.0, 0.0, -1.0, 0.0, -1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, -1.0,
];
/// `nll sum w=False ii=0`: [].
const NLL_SUM_W_FALSE_II_0: &[f64] = &[4.273608948371969];
/// `nll grad sum w=False ii=0`: [3, 4].
const NLL_GRAD_SUM_W_FALSE_II_0: &[f64] =
    &[0.0, 0.0, -1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, -1.0];
/// `nll sum w=True ii=-100`: [].
const NLL_SUM_W_TRUE_II_100: &[f64] = &[7.550307011109167];
/// `nll grad sum w=True ii=-100`: [3, 4].
const NLL_GRAD_SUM_W_TRUE_II_100: &[f64] = &[
    0.0, 0.0, -2.0, 0.0, -0.5, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, -1.5,
];
/// `nll sum w=True ii=0`: [].
const NLL_SUM_W_TRUE_II_0: &[f64] = &[7.182300690991267];
/// `nll grad sum w=True ii=0`: [3, 4].
const NLL_GRAD_SUM_W_TRUE_II_0: &[f64] =
    &[0.0, 0.0, -2.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, -1.5];
/// `nll none total_weight`: [].
const NLL_NONE_TOTAL_WEIGHT: &[f64] = &[0.0];
/// `nll mean w tw`: [].
const NLL_MEAN_W_TW: &[f64] = &[3.5];
/// `nll 1d`: [].
const NLL_1D: &[f64] = &[3.0437745368666254];
/// `ce`: [].
const CE: &[f32] = &[1.669873833656311];
/// `ce grad`: [3, 4].
const CE_GRAD: &[f32] = &[
    0.0527397021651268,
    0.015884891152381897,
    -0.26214221119880676,
    0.19351761043071747,
    -0.17365996539592743,
    0.05874055251479149,
    0.03562794625759125,
    0.0792914479970932,
    0.05348004028201103,
    0.0974469929933548,
    0.1606629341840744,
    -0.3115899860858917,
];
/// `ce w sum ii0`: [].
const CE_W_SUM_II0: &[f32] = &[7.182301044464111];
/// `ce probs`: [].
const CE_PROBS: &[f32] = &[1.2798739671707153];
/// `ce probs ls`: [].
const CE_PROBS_LS: &[f32] = &[1.3155406713485718];
/// `ce 3d none`: [2, 4].
const CE_3D_NONE: &[f64] = &[
    1.4251958174228057,
    2.3971218446144213,
    1.8840654959498295,
    0.5809285950766677,
    0.4289355597652648,
    0.6015685049828331,
    0.43393553802443496,
    1.1048316676922423,
];
/// `ce 3d mean`: [].
const CE_3D_MEAN: &[f64] = &[1.1070728779410623];
/// `ce ls idx`: [].
const CE_LS_IDX: &[f32] = &[1.666540503501892];
/// `mse none`: [2, 3].
const MSE_NONE: &[f32] = &[0.25, 1.0, 0.0, 16.0, 0.25, 0.25];
/// `mse grad none`: [2, 3].
const MSE_GRAD_NONE: &[f32] = &[-1.0, 2.0, 0.0, 8.0, -1.0, 1.0];
/// `mse mean`: [].
const MSE_MEAN: &[f32] = &[2.9583332538604736];
/// `mse grad mean`: [2, 3].
const MSE_GRAD_MEAN: &[f32] = &[
    -0.1666666716337204,
    0.3333333432674408,
    0.0,
    1.3333333730697632,
    -0.1666666716337204,
    0.1666666716337204,
];
/// `mse sum`: [].
const MSE_SUM: &[f32] = &[17.75];
/// `mse grad sum`: [2, 3].
const MSE_GRAD_SUM: &[f32] = &[-1.0, 2.0, 0.0, 8.0, -1.0, 1.0];
/// `addmm`: [2, 2].
const ADDMM: &[f32] = &[1.0, 0.5, 4.0, 1.25];
/// `addmm b0.5 a2`: [2, 2].
const ADDMM_B0_5_A2: &[f32] = &[0.5, 4.0, 6.5, 5.5];
/// `addmm b0 nan`: [2, 2].
const ADDMM_B0_NAN: &[f32] = &[0.0, 2.5, 3.0, 3.25];
/// `one_hot`: [4, 3].
const ONE_HOT: &[i64] = &[1, 0, 0, 0, 0, 1, 0, 1, 0, 0, 0, 1];
/// `one_hot 5`: [2, 2, 5].
const ONE_HOT_5: &[i64] = &[1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1];
/// `one_hot empty`: [0, 3].
const ONE_HOT_EMPTY: &[i64] = &[];
/// `p`: [20].
const P: &[f32] = &[
    -0.07664429396390915,
    0.35988152027130127,
    -0.7820168137550354,
    0.07152773439884186,
    1.0460227727890015,
    0.5221869945526123,
    -0.16680915653705597,
    0.05303340032696724,
    0.4046071469783783,
    0.6112996339797974,
    0.7603904008865356,
    -0.03364326059818268,
    0.997922420501709,
    0.45918044447898865,
    2.436397075653076,
    -0.1468081772327423,
    0.4851140081882477,
    0.2052343785762787,
    0.33842819929122925,
    1.35275399684906,
];
/// `e`: [20].
const E: &[f32] = &[
    0.037066876888275146,
    -0.06768558919429779,
    0.4290330410003662,
    -0.8681192398071289,
    0.6197021007537842,
    1.9096978902816772,
    -1.578063726425171,
    0.5071300864219666,
    0.20301233232021332,
    -0.20442277193069458,
    -0.412137895822525,
    0.6873754262924194,
    0.6238451600074768,
    1.1436113119125366,
    -0.1214367225766182,
    0.6263991594314575,
    -1.9540929794311523,
    -1.221632480621338,
    -0.33041828870773315,
    -0.4243015944957733,
];
/// `t1`: [20].
const T1: &[f32] = &[
    0.7247462868690491,
    1.0795444250106812,
    1.7302472591400146,
    -1.4712682962417603,
    -0.3531348705291748,
    -0.838797926902771,
    -1.2328641414642334,
    -0.6805960536003113,
    -0.4963502287864685,
    -0.6015765070915222,
    -0.47752076387405396,
    -0.29876479506492615,
    -0.20898444950580597,
    -3.1116747856140137,
    -0.42600950598716736,
    1.3343091011047363,
    -0.32816049456596375,
    1.621635913848877,
    0.859399139881134,
    0.6995598673820496,
];
/// `t2`: [20].
const T2: &[f32] = &[
    1.2978965044021606,
    0.6505128145217896,
    1.217111349105835,
    1.259157419204712,
    0.6677757501602173,
    0.6202225685119629,
    0.6670329570770264,
    0.5770368576049805,
    1.419788122177124,
    1.4407316446304321,
    0.9301866292953491,
    1.4688405990600586,
    1.1416304111480713,
    0.5094963908195496,
    0.5425100922584534,
    0.7585614323616028,
    0.5012579560279846,
    0.7706179618835449,
    1.1352295875549316,
    0.9887871146202087,
];
/// `lerp 0.1`: [20].
const LERP_0_1: &[f32] = &[
    -0.06527317315340042,
    0.3171248137950897,
    -0.6609118580818176,
    -0.02243696339428425,
    1.0033906698226929,
    0.6609380841255188,
    -0.30793461203575134,
    0.09844306856393814,
    0.3844476640224457,
    0.5297273993492126,
    0.6431375741958618,
    0.03845860809087753,
    0.9605146646499634,
    0.5276235342025757,
    2.1806137561798096,
    -0.06948744505643845,
    0.24119329452514648,
    0.06254769116640091,
    0.27154356241226196,
    1.1750484704971313,
];
/// `lerp 0.9`: [20].
const LERP_0_9: &[f32] = &[
    0.025695757940411568,
    -0.0249288659542799,
    0.30792802572250366,
    -0.774154543876648,
    0.6623342037200928,
    1.770946741104126,
    -1.4369382858276367,
    0.46172040700912476,
    0.22317181527614594,
    -0.12285051494836807,
    -0.2948850393295288,
    0.6152735352516174,
    0.6612529158592224,
    1.075168251991272,
    0.13434672355651855,
    0.5490784049034119,
    -1.710172176361084,
    -1.0789457559585571,
    -0.2635336220264435,
    -0.24659599363803864,
];
/// `lerp_ 0.3`: [20].
const LERP_0_3: &[f32] = &[
    -0.04253094270825386,
    0.23161137104034424,
    -0.4187018573284149,
    -0.2103663682937622,
    0.9181265830993652,
    0.9384402632713318,
    -0.5901855230331421,
    0.18926240503787994,
    0.34412869811058044,
    0.3665829002857208,
    0.40863192081451416,
    0.18266235291957855,
    0.8856992125511169,
    0.6645097136497498,
    1.6690468788146973,
    0.08515402674674988,
    -0.2466481477022171,
    -0.22282570600509644,
    0.1377742439508438,
    0.8196372985839844,
];
/// `addcmul_`: [20].
const ADDCMUL: &[f32] = &[
    -0.42468321323394775,
    0.10004625469446182,
    -1.5612010955810547,
    0.7569743394851685,
    1.1332743167877197,
    0.7146763205528259,
    0.13746441900730133,
    0.19834312796592712,
    0.6653506755828857,
    0.9319824576377869,
    0.9247382879257202,
    0.1287267506122589,
    1.086198091506958,
    1.0457737445831299,
    2.521909475326538,
    -0.5213056802749634,
    0.545976459980011,
    -0.25714045763015747,
    -0.02254948951303959,
    1.0968191623687744,
];
/// `addcdiv_`: [20].
const ADDCDIV: &[f32] = &[
    -0.06938508152961731,
    0.3814553916454315,
    -0.7635359764099121,
    0.05633782595396042,
    1.0391480922698975,
    0.5046055912971497,
    -0.1908368021249771,
    0.03770032525062561,
    0.4000624120235443,
    0.6058714985847473,
    0.7537167072296143,
    -0.03628748282790184,
    0.9955426454544067,
    0.37978485226631165,
    2.4261887073516846,
    -0.12394118309020996,
    0.476603239774704,
    0.2325906902551651,
    0.3482695519924164,
    1.3619513511657715,
];
/// `addcmul_ f64`: [20].
const ADDCMUL_F64: &[f64] = &[
    0.7699368111112967,
    0.9919132543548059,
    1.1132964045176834,
    -1.5957748173692978,
    0.8337893600211856,
    0.05396973033508062,
    -0.9069340690966612,
    -0.3004227069341198,
    -0.2296337963654551,
    -0.16873964540990227,
    0.3606253140966437,
    -0.4285973351032823,
    0.783197717790129,
    -0.9676679209280934,
    2.2283940648966074,
    0.7641317034196761,
    0.3370702553085069,
    1.329929965138922,
    1.2164819972923198,
    1.9752982013445735,
];
/// `mul_`: [20].
const MUL: &[f32] = &[
    -0.06897985935211182,
    0.32389336824417114,
    -0.7038151025772095,
    0.06437496095895767,
    0.9414204955101013,
    0.4699682891368866,
    -0.15012823045253754,
    0.047730058431625366,
    0.3641464114189148,
    0.5501696467399597,
    0.6843513250350952,
    -0.03027893416583538,
    0.8981301784515381,
    0.41326239705085754,
    2.1927573680877686,
    -0.13212735950946808,
    0.4366025924682617,
    0.18471093475818634,
    0.30458536744117737,
    1.2174785137176514,
];
/// `div_`: [20].
const DIV: &[f32] = &[
    -0.022993287071585655,
    0.10796445608139038,
    -0.23460502922534943,
    0.021458320319652557,
    0.31380683183670044,
    0.15665610134601593,
    -0.05004274472594261,
    0.015910020098090172,
    0.12138213962316513,
    0.18338988721370697,
    0.22811710834503174,
    -0.010092978365719318,
    0.2993767261505127,
    0.13775412738323212,
    0.7309191226959229,
    -0.04404245316982269,
    0.1455342024564743,
    0.061570312827825546,
    0.10152845829725266,
    0.4058261811733246,
];
/// `add_`: [20].
const ADD: &[f32] = &[
    0.977006733417511,
    1.1079645156860352,
    0.7653949856758118,
    1.0214582681655884,
    1.3138067722320557,
    1.1566561460494995,
    0.9499572515487671,
    1.015910029411316,
    1.1213821172714233,
    1.1833899021148682,
    1.2281171083450317,
    0.9899070262908936,
    1.2993767261505127,
    1.1377540826797485,
    1.7309191226959229,
    0.9559575319290161,
    1.1455341577529907,
    1.0615702867507935,
    1.1015284061431885,
    1.405826210975647,
];
/// `uniform torch.float32 5`: [5].
const UNIFORM_TORCH_FLOAT32_5: &[f32] = &[
    -0.007486820220947266,
    0.5364435911178589,
    -0.8230451345443726,
    -0.7359390258789062,
    -0.3851543664932251,
];
/// `normal torch.float32 5`: [5].
const NORMAL_TORCH_FLOAT32_5: &[f32] = &[
    3.5819921493530273,
    -0.08685781061649323,
    -3.857578754425049,
    1.6368625164031982,
    -1.6690447330474854,
];
/// `uniform torch.float32 16`: [16].
const UNIFORM_TORCH_FLOAT32_16: &[f32] = &[
    -0.007486820220947266,
    0.5364435911178589,
    -0.8230451345443726,
    -0.7359390258789062,
    -0.3851543664932251,
    0.26815736293792725,
    -0.019813179969787598,
    0.7928894758224487,
    -0.08874404430389404,
    0.2646125555038452,
    -0.30221307277679443,
    -0.1965653896331787,
    -0.9553484916687012,
    -0.6622821092605591,
    -0.41222310066223145,
    0.03704357147216797,
];
/// `normal torch.float32 16`: [16].
const NORMAL_TORCH_FLOAT32_16: &[f32] = &[
    -1.7516796588897705,
    -1.804720401763916,
    -0.0011571645736694336,
    -0.3677576184272766,
    2.197420597076416,
    1.8840183019638062,
    -0.13202553987503052,
    -3.730438709259033,
    1.14454984664917,
    -2.026669502258301,
    1.1999664306640625,
    1.1162679195404053,
    0.7396830320358276,
    2.975315809249878,
    2.7335543632507324,
    0.005443692207336426,
];
/// `uniform torch.float32 21`: [21].
const UNIFORM_TORCH_FLOAT32_21: &[f32] = &[
    -0.007486820220947266,
    0.5364435911178589,
    -0.8230451345443726,
    -0.7359390258789062,
    -0.3851543664932251,
    0.26815736293792725,
    -0.019813179969787598,
    0.7928894758224487,
    -0.08874404430389404,
    0.2646125555038452,
    -0.30221307277679443,
    -0.1965653896331787,
    -0.9553484916687012,
    -0.6622821092605591,
    -0.41222310066223145,
    0.03704357147216797,
    0.39533519744873047,
    0.6000227928161621,
    -0.677941083908081,
    -0.4354628324508667,
    0.3632171154022217,
];
/// `normal torch.float32 21`: [21].
const NORMAL_TORCH_FLOAT32_21: &[f32] = &[
    -1.7516796588897705,
    -1.804720401763916,
    -0.0011571645736694336,
    -0.3677576184272766,
    2.197420597076416,
    -2.6101901531219482,
    -0.18272078037261963,
    4.20601224899292,
    1.4361927509307861,
    0.18457511067390442,
    3.3873202800750732,
    1.0320987701416016,
    0.8329106569290161,
    3.67266845703125,
    2.39259672164917,
    -1.187353491783142,
    2.3636531829833984,
    3.0180184841156006,
    4.509961128234863,
    0.6074737906455994,
    1.7361133098602295,
];
/// `uniform torch.float32 40`: [40].
const UNIFORM_TORCH_FLOAT32_40: &[f32] = &[
    -0.007486820220947266,
    0.5364435911178589,
    -0.8230451345443726,
    -0.7359390258789062,
    -0.3851543664932251,
    0.26815736293792725,
    -0.019813179969787598,
    0.7928894758224487,
    -0.08874404430389404,
    0.2646125555038452,
    -0.30221307277679443,
    -0.1965653896331787,
    -0.9553484916687012,
    -0.6622821092605591,
    -0.41222310066223145,
    0.03704357147216797,
    0.39533519744873047,
    0.6000227928161621,
    -0.677941083908081,
    -0.4354628324508667,
    0.3632171154022217,
    0.8303879499435425,
    -0.20580017566680908,
    0.7483117580413818,
    -0.16118335723876953,
    0.10581409931182861,
    0.9054762125015259,
    -0.9276703596115112,
    -0.6295379400253296,
    -0.25316524505615234,
    -0.38979995250701904,
    0.8640007972717285,
    -0.6481796503067017,
    -0.46033287048339844,
    -0.6986404657363892,
    -0.9365609884262085,
    -0.5837404727935791,
    0.8595980405807495,
    0.4462183713912964,
    0.48467254638671875,
];
/// `normal torch.float32 40`: [40].
const NORMAL_TORCH_FLOAT32_40: &[f32] = &[
    -1.7516796588897705,
    -1.804720401763916,
    -0.0011571645736694336,
    -0.3677576184272766,
    2.197420597076416,
    1.8840183019638062,
    -0.13202553987503052,
    -3.730438709259033,
    1.14454984664917,
    -2.026669502258301,
    1.1999664306640625,
    1.1162679195404053,
    0.7396830320358276,
    2.975315809249878,
    2.7335543632507324,
    0.005443692207336426,
    -2.2053074836730957,
    -2.891862392425537,
    1.6333012580871582,
    2.0870165824890137,
    1.6976789236068726,
    -2.6101901531219482,
    -0.18272078037261963,
    4.20601224899292,
    0.06827348470687866,
    -0.9850963354110718,
    1.6254427433013916,
    1.0192548036575317,
    0.15207800269126892,
    -0.8574924468994141,
    2.376521587371826,
    1.4777395725250244,
    2.906447410583496,
    0.6690694093704224,
    -1.9002788066864014,
    0.49042853713035583,
    -0.5361496210098267,
    -0.11340838670730591,
    -2.661987781524658,
    3.9132866859436035,
];
/// `uniform torch.float64 5`: [5].
const UNIFORM_TORCH_FLOAT64_5: &[f64] = &[
    0.9401060036131061,
    0.4156397287995759,
    -0.08123411374509826,
    0.8414953682439206,
    0.29004824024552955,
];
/// `normal torch.float64 5`: [5].
const NORMAL_TORCH_FLOAT64_5: &[f64] = &[
    3.5819922164880866,
    -0.08685781152189276,
    -3.857578764149115,
    1.6368625545613356,
    -1.6690446848480418,
];
/// `uniform torch.float64 16`: [16].
const UNIFORM_TORCH_FLOAT64_16: &[f64] = &[
    0.9401060036131061,
    0.4156397287995759,
    -0.08123411374509826,
    0.8414953682439206,
    0.29004824024552955,
    0.5822957843606074,
    -0.6427876495984981,
    -0.2977847512121432,
    0.16268183961514904,
    -0.4235282157276996,
    -0.09426230223777154,
    -0.6464009475925718,
    -0.28946648332138714,
    0.24381049735905536,
    -0.03630319843658292,
    -0.11839900191128105,
];
/// `normal torch.float64 16`: [16].
const NORMAL_TORCH_FLOAT64_16: &[f64] = &[
    -4.120823600468352,
    -0.2465017225155286,
    -1.6216333570925725,
    2.4990187095623524,
    -1.2680500091665305,
    -2.0510938604296105,
    -0.7464491597321581,
    -1.2328832038251545,
    -2.0912542806555714,
    3.5472632462127,
    1.1473211329967477,
    4.535452062972217,
    2.7714846800427013,
    -1.9537626780021662,
    0.6427769424102339,
    1.1760348061014756,
];
/// `uniform torch.float64 21`: [21].
const UNIFORM_TORCH_FLOAT64_21: &[f64] = &[
    0.9401060036131061,
    0.4156397287995759,
    -0.08123411374509826,
    0.8414953682439206,
    0.29004824024552955,
    0.5822957843606074,
    -0.6427876495984981,
    -0.2977847512121432,
    0.16268183961514904,
    -0.4235282157276996,
    -0.09426230223777154,
    -0.6464009475925718,
    -0.28946648332138714,
    0.24381049735905536,
    -0.03630319843658292,
    -0.11839900191128105,
    -0.18543685127111686,
    -0.5891228130768258,
    0.3300763515002989,
    0.5697478009102355,
    -0.5792670501632309,
];
/// `normal torch.float64 21`: [21].
const NORMAL_TORCH_FLOAT64_21: &[f64] = &[
    -4.120823600468352,
    -0.2465017225155286,
    -1.6216333570925725,
    2.4990187095623524,
    -1.2680500091665305,
    0.9205997802033894,
    0.8543787027873317,
    -1.161020102016898,
    0.9774361163363412,
    1.9670567370545682,
    -2.1437636582842754,
    3.1296227303942468,
    -2.4749912713014677,
    3.476148631621345,
    -0.3968316094229022,
    -1.282006070341475,
    1.8497150871880077,
    2.593730753962931,
    0.808590357293179,
    -0.9997830456783883,
    -0.9467794009955763,
];
/// `uniform torch.float64 40`: [40].
const UNIFORM_TORCH_FLOAT64_40: &[f64] = &[
    0.9401060036131061,
    0.4156397287995759,
    -0.08123411374509826,
    0.8414953682439206,
    0.29004824024552955,
    0.5822957843606074,
    -0.6427876495984981,
    -0.2977847512121432,
    0.16268183961514904,
    -0.4235282157276996,
    -0.09426230223777154,
    -0.6464009475925718,
    -0.28946648332138714,
    0.24381049735905536,
    -0.03630319843658292,
    -0.11839900191128105,
    -0.18543685127111686,
    -0.5891228130768258,
    0.3300763515002989,
    0.5697478009102355,
    -0.5792670501632309,
    0.35347824183535814,
    -0.7805294795251079,
    0.047504118804486906,
    -0.5479595941232189,
    0.11648615076045155,
    0.17505792367289374,
    0.3638913713604168,
    0.49075232115517275,
    -0.5446887268062375,
    0.6197845328639455,
    0.26118062679117005,
    -0.6082237085815843,
    -0.6945475242441432,
    -0.036986995562549474,
    0.8350116249798429,
    0.1440794203962188,
    -0.03834115363218493,
    0.5921172166809763,
    -0.26405959134102863,
];
/// `normal torch.float64 40`: [40].
const NORMAL_TORCH_FLOAT64_40: &[f64] = &[
    -4.120823600468352,
    -0.2465017225155286,
    -1.6216333570925725,
    2.4990187095623524,
    -1.2680500091665305,
    -2.0510938604296105,
    -0.7464491597321581,
    -1.2328832038251545,
    -2.0912542806555714,
    3.5472632462127,
    1.1473211329967477,
    4.535452062972217,
    2.7714846800427013,
    -1.9537626780021662,
    0.6427769424102339,
    1.1760348061014756,
    0.8070376706308807,
    -0.7665492177350193,
    -2.021849311438877,
    -0.9539021241308221,
    0.4600704981844747,
    0.9205997802033894,
    0.8543787027873317,
    -1.161020102016898,
    2.094020033850059,
    0.9233283629060065,
    0.7711422852113483,
    0.4322141626892529,
    1.4209379959383328,
    2.734886153133722,
    1.238089473607904,
    0.12559561340482261,
    0.4725585970871334,
    0.10078354473437995,
    -2.8128493889080666,
    2.3277965025484573,
    2.809392455164932,
    0.3278497266252426,
    -3.42248336828666,
    0.9418487435446435,
];
/// `uniform noncontig`: [4, 3].
const UNIFORM_NONCONTIG: &[f32] = &[
    0.49625658988952637,
    0.30742281675338745,
    0.455627977848053,
    0.7682217955589294,
    0.6340786814689636,
    0.6323062777519226,
    0.08847743272781372,
    0.4900934100151062,
    0.3488934636116028,
    0.13203048706054688,
    0.8964447379112244,
    0.40171730518341064,
];
/// `normal noncontig 20`: [5, 4].
const NORMAL_NONCONTIG_20: &[f32] = &[
    1.5409960746765137,
    -1.3985954523086548,
    -0.5966353416442871,
    0.1227012425661087,
    -0.293428897857666,
    0.40334683656692505,
    0.18203648924827576,
    -0.5663174986839294,
    -2.1787893772125244,
    0.8380263447761536,
    -0.8566746115684509,
    0.3731146454811096,
    0.5684312582015991,
    -0.7192575931549072,
    1.1006041765213013,
    -0.8919953107833862,
    -1.0845223665237427,
    -0.40334352850914,
    -1.0711873769760132,
    -1.5091077089309692,
];
/// `F.cross_entropy(logits, target, weight?, reduction, ignore_index, label_smoothing=0.2)`:
/// (weighted, reduction, ignore_index, values).
const CE_LS_MORE: &[(bool, i64, i64, &[f32])] = &[
    (
        false,
        0,
        -100,
        &[1.5837745666503906, 0.8960126638412476, 2.5098345279693604],
    ),
    (false, 0, 0, &[1.5837745666503906, 0.0, 2.5098345279693604]),
    (false, 1, -100, &[1.6632072925567627]),
    (false, 1, 0, &[2.046804666519165]),
    (false, 2, -100, &[4.989622116088867]),
    (false, 2, 0, &[4.09360933303833]),
    (
        true,
        0,
        -100,
        &[2.86348295211792, 0.7309082746505737, 3.660759925842285],
    ),
    (true, 0, 0, &[2.86348295211792, 0.0, 3.660759925842285]),
    (true, 1, -100, &[1.813787817955017]),
    (true, 1, 0, &[1.8640695810317993]),
    (true, 2, -100, &[7.255151271820068]),
    (true, 2, 0, &[6.524243354797363]),
];

// The optimizer formulas run in the pointwise loop, with TensorIterator's
// checks (PyTorch 2.15's messages):
// torch.zeros(3).addcmul_(torch.zeros(2, 3), torch.zeros(3));
// torch.zeros(3, dtype=torch.int64).addcdiv_(torch.zeros(3), torch.zeros(3));
// torch.addcmul(torch.zeros(3), torch.zeros(3), torch.zeros(3),
//               out=torch.zeros(3, dtype=torch.int64));
// torch.zeros(3).lerp_(torch.zeros(2, 3), 0.5);
// and mixed float dtypes in place are accepted:
// torch.zeros(3, dtype=torch.float64).addcmul_(torch.ones(3), torch.ones(3),
//                                              value=0.1) is [0.1] * 3.
#[test]
fn formula_output_checks_are_pytorchs() {
    let z32 = |shape: &[usize]| Tensor::zeros(shape, DType::Float32, opforge::Device::Cpu);
    let broadcast = "output with shape [3] doesn't match the broadcast shape [2, 3]";
    let mut x = z32(&[3]);
    let e = ops::addcmul_(&mut x, &z32(&[2, 3]), &z32(&[3]), Scalar::Int(1)).unwrap_err();
    assert_eq!(e.to_string(), broadcast);
    let e = ops::lerp__Scalar(&mut x, &z32(&[2, 3]), Scalar::Float(0.5)).unwrap_err();
    assert_eq!(e.to_string(), broadcast);
    let cast = "result type Float can't be cast to the desired output type Long";
    let mut i = Tensor::zeros(&[3], DType::Int64, opforge::Device::Cpu);
    let e = ops::addcdiv_(&mut i, &z32(&[3]), &z32(&[3]), Scalar::Int(1)).unwrap_err();
    assert_eq!(e.to_string(), cast);
    let e =
        ops::addcmul_out(&z32(&[3]), &z32(&[3]), &z32(&[3]), Scalar::Int(1), &mut i).unwrap_err();
    assert_eq!(e.to_string(), cast);
    let mut d = Tensor::zeros(&[3], DType::Float64, opforge::Device::Cpu);
    let one = t32(&[1.0; 3], &[3]);
    ops::addcmul_(&mut d, &one, &one, Scalar::Float(0.1)).unwrap();
    assert_eq!(d.dtype(), DType::Float64);
    close(&d, &[0.1; 3], 1e-15);
    let mut f = z32(&[3]);
    ops::addcmul_(&mut f, &t64(&[1.0; 3], &[3]), &one, Scalar::Int(1)).unwrap();
    close(&f, &[1.0; 3], 0.0);
}
