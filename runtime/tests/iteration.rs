//! The iteration engines against themselves: every pointwise and reduction
//! kernel on random strided views (permuted, stepped, expanded, offset, mixed
//! dtypes, broadcast) must give what it gives on contiguous copies of the same
//! values — the contiguous case takes the direct path, the others the general
//! loop with its gathering, casting, merged dimensions and blocks — and the
//! same bits on one thread as on several. Output layouts follow
//! `TensorIterator`'s rules.

use opforge::{ops, DType, Device, Scalar, Tensor};
use std::sync::Mutex;

mod common;
use common::Rng;

/// Tests here change the global thread count: one at a time.
static THREADS: Mutex<()> = Mutex::new(());

const DTYPES: [DType; 5] = [
    DType::Bool,
    DType::Int32,
    DType::Int64,
    DType::Float32,
    DType::Float64,
];

/// A tensor of `len` random values of `dtype` (small integers, some negative;
/// floats with fractions).
fn random_base(rng: &mut Rng, len: usize, dtype: DType) -> Tensor {
    let v: Vec<f64> = (0..len)
        .map(|_| (rng.below(41) as f64 - 20.0) / if rng.coin() { 4.0 } else { 1.0 })
        .collect();
    let t = Tensor::from_vec(v, &[len]).unwrap();
    t.to_dtype_copy(dtype).unwrap()
}

/// A random view of `shape`: dimensions in a random memory order, some
/// stepped, some expanded (stride 0), at a random offset.
fn random_view(rng: &mut Rng, shape: &[usize], dtype: DType, allow_expand: bool) -> Tensor {
    let mut order: Vec<usize> = (0..shape.len()).collect();
    for i in (1..order.len()).rev() {
        order.swap(i, rng.below(i + 1));
    }
    let mut strides = vec![0; shape.len()];
    let mut acc = 1;
    for &d in &order {
        if allow_expand && rng.below(5) == 0 {
            strides[d] = 0;
            continue;
        }
        let step = 1 + rng.below(2);
        strides[d] = acc * step;
        acc *= step * shape[d].max(1);
    }
    let offset = rng.below(3);
    let base = random_base(rng, acc + offset + 1, dtype);
    base.strided_view(shape, &strides, offset).unwrap()
}

fn random_shape(rng: &mut Rng) -> Vec<usize> {
    if rng.below(12) == 0 {
        // Large enough for several threads and blocks.
        return vec![3 + rng.below(3), 7_001 + rng.below(5000)];
    }
    if rng.below(12) == 0 {
        // Two dimensions of 16 and more: a transposed operand's rows span
        // many blocks and cache lines.
        let mut s = vec![16 + rng.below(40), 16 + rng.below(300)];
        if rng.coin() {
            s.insert(0, 1 + rng.below(3));
        }
        return s;
    }
    (0..rng.below(5)).map(|_| rng.below(6)).collect()
}

/// `shape` with some dimensions made 1 and some leading ones dropped.
fn broadcastable(rng: &mut Rng, shape: &[usize]) -> Vec<usize> {
    let drop = rng.below(shape.len() + 1);
    shape[drop..]
        .iter()
        .map(|&n| if rng.below(3) == 0 { 1 } else { n })
        .collect()
}

fn contiguous(t: &Tensor) -> Tensor {
    t.deep_clone().unwrap()
}

/// Values as bits of f64 (NaN compared as NaN), dtype and shape.
fn same(a: &Tensor, b: &Tensor, what: &str) {
    assert_eq!(a.dtype(), b.dtype(), "{what}: dtype");
    assert_eq!(a.shape(), b.shape(), "{what}: shape");
    let (x, y) = (a.to_vec::<f64>().unwrap(), b.to_vec::<f64>().unwrap());
    for (i, (p, q)) in x.iter().zip(&y).enumerate() {
        assert!(
            p.to_bits() == q.to_bits() || (p.is_nan() && q.is_nan()),
            "{what}: element {i}: {p} vs {q}"
        );
    }
}

/// Results of `f` on the views and on contiguous copies must agree exactly,
/// and errors must be the same error.
fn check(what: &str, f: &dyn Fn(&[Tensor]) -> opforge::Result<Tensor>, inputs: &[Tensor]) {
    let copies: Vec<Tensor> = inputs.iter().map(contiguous).collect();
    match (f(inputs), f(&copies)) {
        (Ok(a), Ok(b)) => same(&a, &b, what),
        (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string(), "{what}"),
        (a, b) => panic!("{what}: {a:?} vs {b:?}"),
    }
}

type Binary = (
    &'static str,
    fn(&Tensor, &Tensor) -> opforge::Result<Tensor>,
);

const BINARY: [Binary; 9] = [
    ("add", |a, b| ops::add_Tensor(a, b, Scalar::Int(1))),
    ("add alpha", |a, b| ops::add_Tensor(a, b, Scalar::Int(3))),
    ("sub", |a, b| ops::sub_Tensor(a, b, Scalar::Int(1))),
    ("mul", |a, b| ops::mul_Tensor(a, b)),
    ("div", |a, b| ops::div_Tensor(a, b)),
    ("maximum", |a, b| ops::maximum(a, b)),
    ("eq", |a, b| ops::eq_Tensor(a, b)),
    ("lt", |a, b| ops::lt_Tensor(a, b)),
    ("floor_divide", |a, b| {
        ops::div_Tensor_mode(a, b, Some("floor"))
    }),
];

#[test]
fn pointwise_kernels_agree_on_views_and_contiguous_copies() {
    let _g = THREADS.lock().unwrap_or_else(|e| e.into_inner());
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for case in 0..400 {
        let shape = random_shape(&mut rng);
        let (da, db) = (DTYPES[rng.below(5)], DTYPES[rng.below(5)]);
        let a = random_view(&mut rng, &shape, da, true);
        let bshape = if rng.coin() {
            broadcastable(&mut rng, &shape)
        } else {
            shape.clone()
        };
        let b = random_view(&mut rng, &bshape, db, true);
        let (name, f) = BINARY[case % BINARY.len()];
        let what = format!("case {case}: {name} {da}{shape:?} {db}{bshape:?}");
        check(&what, &|t| f(&t[0], &t[1]), &[a.clone(), b.clone()]);
        // Unary, clamp, where and pow on the first.
        check(&what, &|t| ops::neg(&t[0]), std::slice::from_ref(&a));
        check(&what, &|t| ops::exp(&t[0]), std::slice::from_ref(&a));
        check(
            &what,
            &|t| ops::clamp(&t[0], Some(Scalar::Int(-3)), Some(Scalar::Float(2.5))),
            std::slice::from_ref(&a),
        );
        check(
            &what,
            &|t| ops::pow_Tensor_Scalar(&t[0], Scalar::Int(2)),
            std::slice::from_ref(&a),
        );
        let cond = random_view(&mut rng, &bshape, DType::Bool, true);
        check(
            &what,
            &|t| ops::where_self(&t[0], &t[1], &t[2]),
            &[cond, a.clone(), b.clone()],
        );
        // A number operand.
        check(
            &what,
            &|t| ops::add_Scalar(&t[0], Scalar::Float(0.5), Scalar::Int(1)),
            std::slice::from_ref(&a),
        );
    }
}

#[test]
fn out_and_inplace_writes_agree_with_new_results() {
    let _g = THREADS.lock().unwrap_or_else(|e| e.into_inner());
    let mut rng = Rng(0xdead_beef_cafe_f00d);
    for case in 0..200 {
        let shape = random_shape(&mut rng);
        let dtype = [DType::Int64, DType::Float32, DType::Float64][rng.below(3)];
        let a = random_view(&mut rng, &shape, dtype, true);
        let bshape = broadcastable(&mut rng, &shape);
        let b = random_view(&mut rng, &bshape, dtype, true);
        let want = ops::mul_Tensor(&a, &b).unwrap();
        // out=: a dense, permuted tensor of the right shape (not resized).
        let mut out = random_view(&mut rng, &shape, dtype, false);
        let r = ops::mul_out(&a, &b, &mut out).unwrap();
        assert!(r.is_same(&out));
        same(&out, &want, &format!("case {case}: out="));
        // In place, into a dense view.
        let mut x = random_view(&mut rng, &shape, dtype, false);
        let before = contiguous(&x);
        ops::mul__Tensor(&mut x, &b).unwrap();
        same(
            &x,
            &ops::mul_Tensor(&before, &b).unwrap(),
            &format!("case {case}: mul_"),
        );
        // In place with itself as the other operand.
        let mut y = random_view(&mut rng, &shape, dtype, false);
        let before = contiguous(&y);
        let alias = y.clone();
        ops::add__Tensor(&mut y, &alias, Scalar::Int(1)).unwrap();
        same(
            &y,
            &ops::add_Tensor(&before, &before, Scalar::Int(1)).unwrap(),
            &format!("case {case}: add_(x, x)"),
        );
    }
}

#[test]
fn results_do_not_depend_on_the_thread_count() {
    let _g = THREADS.lock().unwrap_or_else(|e| e.into_inner());
    let mut rng = Rng(42);
    let n = 1_000_003;
    let x = random_base(&mut rng, n, DType::Float32);
    let y = random_base(&mut rng, n, DType::Float32);
    let m = x.strided_view(&[1000, 1000], &[1, 1000], 0).unwrap();
    let run = || {
        vec![
            ops::sum(&x, None).unwrap(),
            ops::sum_dim_IntList(&m, Some(&[0][..]), false, None).unwrap(),
            ops::sum_dim_IntList(&m, Some(&[1][..]), false, None).unwrap(),
            ops::mean_dim(&m, Some(&[1][..]), false, None).unwrap(),
            ops::add_Tensor(&x, &y, Scalar::Int(1)).unwrap(),
            ops::exp(&m).unwrap(),
            ops::argmax(&x, None, false).unwrap(),
        ]
    };
    opforge::set_num_threads(1).unwrap();
    let one = run();
    opforge::set_num_threads(3).unwrap();
    let three = run();
    opforge::set_num_threads(std::thread::available_parallelism().map_or(1, |n| n.get())).unwrap();
    for (i, (a, b)) in one.iter().zip(&three).enumerate() {
        same(a, b, &format!("result {i}"));
    }
}

#[test]
fn reductions_agree_on_views_and_contiguous_copies() {
    let _g = THREADS.lock().unwrap_or_else(|e| e.into_inner());
    let mut rng = Rng(7);
    for case in 0..300 {
        let shape = random_shape(&mut rng);
        if shape.is_empty() {
            continue;
        }
        let dtype = [DType::Int32, DType::Int64, DType::Float64][rng.below(3)];
        let t = random_view(&mut rng, &shape, dtype, true);
        let dim = rng.below(shape.len()) as i64;
        let what = format!("case {case}: {dtype}{shape:?} dim {dim}");
        // Exact for integers and for extremes; float64 sums of these
        // quarter-integers are exact too (small magnitudes).
        check(&what, &|t| ops::sum(&t[0], None), std::slice::from_ref(&t));
        check(
            &what,
            &|t| ops::sum_dim_IntList(&t[0], Some(&[dim][..]), rng_keep(case), None),
            std::slice::from_ref(&t),
        );
        check(
            &what,
            &|t| ops::prod_dim_int(&t[0], dim, false, None),
            std::slice::from_ref(&t),
        );
        if shape[dim as usize] > 0 {
            check(
                &what,
                &|t| ops::max_dim(&t[0], dim, false).map(|r| r.0),
                std::slice::from_ref(&t),
            );
            check(
                &what,
                &|t| ops::max_dim(&t[0], dim, false).map(|r| r.1),
                std::slice::from_ref(&t),
            );
            check(
                &what,
                &|t| ops::argmax(&t[0], Some(dim), false),
                std::slice::from_ref(&t),
            );
        }
        if t.numel() > 0 {
            check(
                &what,
                &|t| ops::argmax(&t[0], None, false),
                std::slice::from_ref(&t),
            );
        }
    }
}

fn rng_keep(case: usize) -> bool {
    case.is_multiple_of(3)
}

#[test]
fn new_outputs_follow_the_inputs_memory_order() {
    let m = Tensor::from_vec((0..12).map(|i| i as f32).collect(), &[3, 4]).unwrap();
    let mt = m.t().unwrap(); // [4, 3], strides [1, 4]
                             // Both inputs transposed alike: the output is laid out as they are.
    assert_eq!(
        ops::add_Tensor(&mt, &mt, Scalar::Int(1)).unwrap().strides(),
        vec![1, 4]
    );
    assert_eq!(ops::exp(&mt).unwrap().strides(), vec![1, 4]);
    // The first input decides between two orders.
    let c = contiguous(&mt);
    assert_eq!(
        ops::add_Tensor(&c, &mt, Scalar::Int(1)).unwrap().strides(),
        vec![3, 1]
    );
    assert_eq!(
        ops::add_Tensor(&mt, &c, Scalar::Int(1)).unwrap().strides(),
        vec![1, 4]
    );
    // A broadcast operand expresses no order.
    let row = Tensor::from_vec(vec![1.0f32, 2.0, 3.0], &[3]).unwrap();
    assert_eq!(ops::mul_Tensor(&row, &mt).unwrap().strides(), vec![1, 4]);
    // A resized out= tensor takes the same layout.
    let mut out = Tensor::zeros(&[0], DType::Float32, Device::Cpu);
    ops::add_out(&mt, &mt, Scalar::Int(1), &mut out).unwrap();
    assert_eq!(out.strides(), vec![1, 4]);
    // Channels-last inputs give a channels-last output.
    let x = Tensor::zeros(&[2 * 3 * 4 * 5], DType::Float32, Device::Cpu)
        .strided_view(&[2, 3, 4, 5], &[60, 1, 15, 3], 0)
        .unwrap();
    assert_eq!(ops::neg(&x).unwrap().strides(), vec![60, 1, 15, 3]);
}

/// `cat` and `index_select` build a new result from contiguous inputs by
/// copying runs into fresh capacity; from views they copy view by view.
/// Both must give the same tensor (and the same errors).
#[test]
fn cat_and_index_select_agree_on_views_and_contiguous_copies() {
    let mut rng = Rng(0x0005_eed0_fca7);
    for case in 0..300 {
        let mut shape = random_shape(&mut rng);
        if shape.is_empty() {
            shape.push(1 + rng.below(4));
        }
        let d = rng.below(shape.len());
        let dtype = DTYPES[rng.below(5)];
        let parts: Vec<Tensor> = (0..1 + rng.below(3))
            .map(|_| {
                let mut s = shape.clone();
                s[d] = rng.below(4);
                // Now and then another dtype: the result promotes.
                let dt = if rng.below(6) == 0 {
                    DType::Float64
                } else {
                    dtype
                };
                random_view(&mut rng, &s, dt, false)
            })
            .collect();
        let what = format!(
            "case {case}: cat dim {d} of {:?}",
            parts.iter().map(|p| p.shape()).collect::<Vec<_>>()
        );
        check(&what, &|t| ops::cat(t, d as i64), &parts);

        let x = random_view(&mut rng, &shape, dtype, false);
        let bound = shape[d];
        let mut picks: Vec<i64> = Vec::new();
        for _ in 0..rng.below(6) {
            // Mostly in range; sometimes one past the end (an error).
            let limit = bound + usize::from(rng.below(8) == 0);
            if limit > 0 {
                picks.push(rng.below(limit) as i64);
            }
        }
        let idx = Tensor::from_vec(picks.clone(), &[picks.len()]).unwrap();
        let what = format!("case {case}: index_select dim {d} of {shape:?} at {picks:?}");
        check(&what, &|t| ops::index_select(&t[0], d as i64, &idx), &[x]);
    }
}

/// `to(dtype)` (through `_to_copy`) converts a contiguous CPU tensor straight
/// into fresh capacity and anything else through `empty_strided` + `copy_`:
/// the same values, dtype and shape either way, and a contiguous result from a
/// contiguous source.
#[test]
fn to_dtype_agrees_on_views_and_contiguous_copies() {
    let mut rng = Rng(0x7070_c0b1);
    for case in 0..300 {
        let shape = random_shape(&mut rng);
        let (from, to) = (DTYPES[rng.below(5)], DTYPES[rng.below(5)]);
        let expand = rng.below(4) == 0;
        let x = random_view(&mut rng, &shape, from, expand);
        let what = format!("case {case}: {from}{shape:?} to {to}");
        // `copy=true` on every other case, so an unchanged dtype still copies.
        let copy = case % 2 == 0;
        check(
            &what,
            &|t| ops::to_dtype(&t[0], to, false, copy, None),
            std::slice::from_ref(&x),
        );
        let c = ops::to_dtype(&contiguous(&x), to, false, true, None).unwrap();
        assert!(
            c.is_contiguous(),
            "{what}: result strides {:?}",
            c.strides()
        );
    }
}

/// `m + m.t()` (and a 3-D batch of transposes) against the sums computed
/// element by element: the transposed operand is gathered across rows, with
/// partial blocks and row counts that are not multiples of a block or a cache
/// line, on one thread and on several.
#[test]
fn transposed_operands_give_exact_sums() {
    let _g = THREADS.lock().unwrap_or_else(|e| e.into_inner());
    let before = opforge::get_num_threads();
    for threads in [1, 2] {
        opforge::set_num_threads(threads).unwrap();
        for &(rows, cols) in &[
            (16, 16),
            (17, 300),
            (300, 17),
            (40, 513),
            (181, 181),
            (33, 1000),
            (12, 2000),
            (9, 256),
        ] {
            let v: Vec<f32> = (0..rows * cols).map(|i| (i % 977) as f32 * 0.25).collect();
            let m = Tensor::from_vec(v.clone(), &[rows, cols]).unwrap();
            let t = Tensor::from_vec(v.clone(), &[cols, rows]).unwrap();
            let tt = t.strided_view(&[rows, cols], &[1, rows], 0).unwrap();
            let got = ops::add_Tensor(&m, &tt, Scalar::Int(1))
                .unwrap()
                .to_vec::<f32>()
                .unwrap();
            for i in 0..rows {
                for j in 0..cols {
                    let want = v[i * cols + j] + v[j * rows + i];
                    assert_eq!(
                        got[i * cols + j],
                        want,
                        "{rows}x{cols} at ({i}, {j}), {threads} threads"
                    );
                }
            }
        }
        // A batch: [b, r, c] + the batch of transposes of a [b, c, r].
        let (b, r, c) = (3, 20, 300);
        let v: Vec<i64> = (0..(b * r * c) as i64).collect();
        let x = Tensor::from_vec(v.clone(), &[b, r, c]).unwrap();
        let y = Tensor::from_vec(v.clone(), &[b, c, r]).unwrap();
        let yt = y.strided_view(&[b, r, c], &[r * c, 1, r], 0).unwrap();
        let got = ops::mul_Tensor(&x, &yt).unwrap().to_vec::<i64>().unwrap();
        for k in 0..b {
            for i in 0..r {
                for j in 0..c {
                    let want = v[(k * r + i) * c + j] * v[(k * c + j) * r + i];
                    assert_eq!(got[(k * r + i) * c + j], want, "batch at ({k}, {i}, {j})");
                }
            }
        }
    }
    opforge::set_num_threads(before).unwrap();
}

/// `a op b`, `a op= b` and `op(a, b, out=)` of one operator.
type Forms = (
    &'static str,
    fn(&Tensor, &Tensor) -> opforge::Result<Tensor>,
    fn(&mut Tensor, &Tensor) -> opforge::Result<Tensor>,
    fn(&Tensor, &Tensor, &mut Tensor) -> opforge::Result<Tensor>,
);

const PLAIN: [Forms; 6] = [
    (
        "add",
        |a, b| ops::add_Tensor(a, b, Scalar::Int(1)),
        |a, b| ops::add__Tensor(a, b, Scalar::Int(1)),
        |a, b, o| ops::add_out(a, b, Scalar::Int(1), o),
    ),
    (
        "add alpha 3",
        |a, b| ops::add_Tensor(a, b, Scalar::Int(3)),
        |a, b| ops::add__Tensor(a, b, Scalar::Int(3)),
        |a, b, o| ops::add_out(a, b, Scalar::Int(3), o),
    ),
    (
        "sub",
        |a, b| ops::sub_Tensor(a, b, Scalar::Int(1)),
        |a, b| ops::sub__Tensor(a, b, Scalar::Int(1)),
        |a, b, o| ops::sub_out(a, b, Scalar::Int(1), o),
    ),
    (
        "sub alpha -2",
        |a, b| ops::sub_Tensor(a, b, Scalar::Int(-2)),
        |a, b| ops::sub__Tensor(a, b, Scalar::Int(-2)),
        |a, b, o| ops::sub_out(a, b, Scalar::Int(-2), o),
    ),
    ("mul", ops::mul_Tensor, ops::mul__Tensor, ops::mul_out),
    ("div", ops::div_Tensor, ops::div__Tensor, ops::div_out),
];

#[test]
fn plain_calls_agree_with_the_general_loop() {
    // The short path for `a op b` and `a op= b`
    // (kernels::pointwise::binary_plain): a contiguous tensor and either a
    // tensor of its shape and dtype or a Python number, against the general
    // loop (`out=` never takes the short path), at sizes around its in-place
    // chunk (64) and in-place limit (4096).
    let _g = THREADS.lock().unwrap_or_else(|e| e.into_inner());
    let mut rng = Rng(0x5eed_1234_abcd_0001);
    for (case, n) in [1usize, 3, 63, 64, 65, 1000, 4096, 4097]
        .into_iter()
        .enumerate()
    {
        for dtype in [DType::Int32, DType::Int64, DType::Float32, DType::Float64] {
            let a = contiguous(&random_view(&mut rng, &[n], dtype, true));
            let b = contiguous(&random_view(&mut rng, &[n], dtype, true));
            let others = [
                ("tensor", b),
                ("0.3", Tensor::wrapped_number(Scalar::Float(0.3))),
                ("-3", Tensor::wrapped_number(Scalar::Int(-3))),
                ("0", Tensor::wrapped_number(Scalar::Int(0))),
            ];
            for (other, b) in &others {
                for (name, new, in_place, out) in PLAIN {
                    let what = format!("case {case} (n {n}, {dtype:?}): {name} {other}");
                    let float = b.dtype().is_floating_point() || name == "div";
                    let dtype_of = if float && !dtype.is_floating_point() {
                        DType::Float32
                    } else {
                        dtype
                    };
                    let mut o = Tensor::zeros(&[0], dtype_of, opforge::Device::Cpu);
                    let want = out(&a, b, &mut o);
                    let got = new(&a, b);
                    match (&got, &want) {
                        (Ok(g), Ok(w)) => {
                            assert_eq!(g.dtype(), dtype_of, "{what}");
                            same(g, w, &what);
                        }
                        // Integer division by zero, on both paths.
                        (Err(g), Err(w)) => assert_eq!(g.to_string(), w.to_string(), "{what}"),
                        _ => panic!("{what}: {got:?} vs {want:?}"),
                    }
                    if dtype_of != dtype {
                        continue;
                    }
                    let mut x = contiguous(&a);
                    let version = x.storage().version();
                    let r = in_place(&mut x, b).unwrap();
                    assert!(r.is_same(&x), "{what}");
                    assert_eq!(x.storage().version(), version + 1, "{what}: a write");
                    same(&x, want.as_ref().unwrap(), &format!("{what} in place"));
                }
            }
            // A float alpha on integers is still refused.
            if dtype == DType::Int64 {
                let mut x = contiguous(&a);
                assert!(ops::add__Tensor(&mut x, &others[0].1, Scalar::Float(0.5)).is_err());
            }
        }
    }
}
