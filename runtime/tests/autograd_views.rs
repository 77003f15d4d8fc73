//! In-place writes through views (PyTorch's `CopySlices`): the base's history
//! is rebased, the view's is made afresh over it, other views follow, and
//! PyTorch's refusals. Expected values and names are PyTorch 2.15's (run
//! side by side); every view operator of the YAML is checked with gradcheck and
//! gradgradcheck, which compare the engine with finite differences.

use opforge::autograd::{
    gradcheck, gradgradcheck, inference_mode, no_grad, GradcheckOptions, GradgradcheckOptions,
    LEAF_INPLACE,
};
use opforge::{at, DType, Device, Result, Scalar, Tensor};

fn values(n: usize, dtype: DType) -> Tensor {
    let v: Vec<f64> = (0..n).map(|i| ((i as f64) * 0.37 + 0.2).sin()).collect();
    let t = Tensor::from_vec(v, &[n]).unwrap();
    at::_to_copy(&t, Some(dtype), None, None, None, false, None).unwrap()
}

fn leaf(shape: &[i64], dtype: DType) -> Tensor {
    let n = shape.iter().product::<i64>() as usize;
    let t = at::view(&values(n, dtype), shape).unwrap();
    let t = at::clone(&t, None).unwrap();
    t.set_requires_grad(true).unwrap();
    t
}

fn name(t: &Tensor) -> String {
    t.grad_fn()
        .map(|g| g.node.name().to_string())
        .unwrap_or_default()
}

fn to_f64(t: &Tensor) -> Vec<f64> {
    at::_to_copy(t, Some(DType::Float64), None, None, None, false, None)
        .unwrap()
        .to_vec::<f64>()
        .unwrap()
}

fn sum(t: &Tensor) -> Tensor {
    at::sum(t, None).unwrap()
}

#[test]
fn a_write_through_a_view_rebases_the_base() {
    let a = leaf(&[3, 4], DType::Float32);
    let b = at::clone(&a, None).unwrap();
    let mut v = at::select_int(&b, 0, 0).unwrap();
    assert!(v.view_of().unwrap().base().is_same(&b));
    assert_eq!(name(&v), "SelectBackward0");
    at::mul__Tensor(&mut v, &Tensor::scalar(2.0f32)).unwrap();
    assert_eq!(name(&b), "CopySlices");
    assert_eq!(name(&v), "AsStridedBackward0");
    sum(&b).backward().unwrap();
    let mut want = vec![1.0; 12];
    want[..4].fill(2.0);
    assert_eq!(to_f64(&a.grad().unwrap()), want);
}

#[test]
fn a_plain_buffer_filled_through_views_gets_a_history() {
    // z = zeros(3, 4); z[0:2].copy_(x): z requires grad from then on.
    let x = leaf(&[2, 4], DType::Float32);
    let z = Tensor::zeros(&[3, 4], DType::Float32, Device::Cpu);
    let mut s = at::slice_Tensor(&z, 0, Some(0), Some(2), 1).unwrap();
    assert!(!s.requires_grad());
    at::copy_(&mut s, &x, false).unwrap();
    assert!(z.requires_grad());
    assert_eq!(name(&z), "CopySlices");
    assert_eq!(name(&s), "AsStridedBackward0");
    let copy = z.grad_fn().unwrap().node;
    let next: Vec<String> = copy
        .next_edges()
        .iter()
        .map(|e| {
            e.as_ref()
                .map_or("None".into(), |e| e.node.name().to_string())
        })
        .collect();
    assert_eq!(next, ["None", "AccumulateGrad"]);
    let w = at::view(
        &at::arange(Scalar::Int(12), Some(DType::Float32), None, None, None).unwrap(),
        &[3, 4],
    )
    .unwrap();
    sum(&at::mul_Tensor(&z, &w).unwrap()).backward().unwrap();
    assert_eq!(
        to_f64(&x.grad().unwrap()),
        (0..8).map(f64::from).collect::<Vec<_>>()
    );
}

#[test]
fn a_view_of_a_view_writes_into_the_first_base() {
    let a = leaf(&[3, 3], DType::Float64);
    let b = at::clone(&a, None).unwrap();
    let v = at::slice_Tensor(&at::t(&b).unwrap(), 0, Some(1), Some(3), 1).unwrap();
    let mut w = at::select_int(&v, 1, 0).unwrap();
    assert!(w.view_of().unwrap().base().is_same(&b));
    at::add__Tensor(&mut w, &Tensor::scalar(1.0f64), Scalar::Int(1)).unwrap();
    assert_eq!(
        (name(&b).as_str(), name(&w).as_str(), name(&v).as_str()),
        ("CopySlices", "AsStridedBackward0", "AsStridedBackward0")
    );
    sum(&at::mul_Tensor(&b, &b).unwrap()).backward().unwrap();
    // d/da sum(b²) = 2b, where b is a with b[0, 1] and b[0, 2] one more.
    let mut want: Vec<f64> = to_f64(&a).iter().map(|x| 2.0 * x).collect();
    want[1] += 2.0;
    want[2] += 2.0;
    let got = to_f64(&a.grad().unwrap());
    assert!(
        got.iter().zip(&want).all(|(g, w)| (g - w).abs() < 1e-12),
        "{got:?}"
    );
}

#[test]
fn views_made_before_a_write_to_their_base_follow_it() {
    let a = leaf(&[3, 4], DType::Float32);
    let mut b = at::clone(&a, None).unwrap();
    let v = at::select_int(&b, 0, 0).unwrap();
    assert_eq!(name(&v), "SelectBackward0");
    at::mul__Tensor(&mut b, &Tensor::scalar(3.0f32)).unwrap();
    assert_eq!(name(&b), "MulBackward0");
    assert_eq!(name(&v), "AsStridedBackward0");
    sum(&v).backward().unwrap();
    let mut want = vec![0.0; 12];
    want[..4].fill(3.0);
    assert_eq!(to_f64(&a.grad().unwrap()), want);
    // A write under no_grad also makes the view's history afresh.
    let b = at::clone(&a, None).unwrap();
    let mut v = at::slice_Tensor(&b, 0, Some(0), Some(2), 1).unwrap();
    {
        let _g = no_grad();
        at::mul__Tensor(&mut v, &Tensor::scalar(2.0f32)).unwrap();
    }
    assert_eq!(name(&v), "AsStridedBackward0");
    assert_eq!(name(&b), "CloneBackward0");
}

#[test]
fn pytorchs_refusals() {
    let x = leaf(&[3, 3], DType::Float32);
    let two = Tensor::scalar(2.0f32);
    // A view of a leaf that requires grad.
    let mut v = at::select_int(&x, 0, 0).unwrap();
    let e = at::mul__Tensor(&mut v, &two).unwrap_err();
    assert_eq!(
        e.to_string(),
        "a view of a leaf Variable that requires grad is being used in an in-place operation."
    );
    // The leaf itself.
    let mut x2 = x.clone();
    assert_eq!(
        at::mul__Tensor(&mut x2, &two).unwrap_err().to_string(),
        LEAF_INPLACE
    );
    // A view made in no_grad mode.
    let b = at::clone(&x, None).unwrap();
    let mut v = {
        let _g = no_grad();
        at::slice_Tensor(&b, 0, Some(0), Some(2), 1).unwrap()
    };
    let msg = at::mul__Tensor(&mut v, &two).unwrap_err().to_string();
    assert_eq!(msg, "A view was created in no_grad mode and is being modified inplace with grad mode enabled. Given that this use case is ambiguous and error-prone, it is forbidden. You can clarify your code by moving both the view and the inplace either both inside the no_grad block (if you don't want the inplace to be tracked) or both outside (if you want the inplace to be tracked).");
    // ... and a view of it, made with grad mode on.
    let mut w = at::t(&v).unwrap();
    assert_eq!(name(&w), "TBackward0");
    let msg = at::mul__Tensor(&mut w, &two).unwrap_err().to_string();
    assert!(
        msg.starts_with("Output 0 of T is a view of a view which was created in no_grad mode and is being modified inplace with grad mode enabled. Given"),
        "{msg}"
    );
    // Under no_grad, the write is allowed and not recorded.
    {
        let _g = no_grad();
        at::mul__Tensor(&mut v, &two).unwrap();
    }
    assert_eq!(name(&b), "CloneBackward0");
    // A view made in inference mode.
    let z = Tensor::zeros(&[3], DType::Float32, Device::Cpu);
    let mut s = {
        let _g = inference_mode();
        at::slice_Tensor(&z, 0, Some(0), Some(2), 1).unwrap()
    };
    let y = leaf(&[2], DType::Float32);
    let msg = at::mul__Tensor(&mut s, &y).unwrap_err().to_string();
    assert!(
        msg.starts_with("A view was created in inference mode and is being modified inplace in normal mode. Given that this use case is ambiguous and error-prone, it is forbidden. You can clarify your code by moving both the view and the inplace either both inside the inference_mode block"),
        "{msg}"
    );
    // A plain view written by plain tensors: nothing to check or record.
    let mut s = at::slice_Tensor(&z, 0, Some(0), Some(2), 1).unwrap();
    at::mul__Tensor(&mut s, &two).unwrap();
    assert!(!z.requires_grad());
}

#[test]
fn detach_is_not_a_differentiable_view() {
    let a = leaf(&[3], DType::Float32);
    let b = at::clone(&a, None).unwrap();
    let mut d = at::detach(&b).unwrap();
    assert!(d.view_of().is_none() && d.shares_storage(&b));
    at::mul__Tensor(&mut d, &Tensor::scalar(2.0f32)).unwrap();
    assert_eq!(name(&b), "CloneBackward0");
    // A view of the detached tensor is a view of it, not of `b`.
    let s = at::select_int(&d, 0, 0).unwrap();
    assert!(s.view_of().unwrap().base().is_same(&d));
}

/// `f(a, w)`: a clone of `a`, `view` of it multiplied in place by `w`, then
/// the clone times itself (so the gradient depends on the written values).
fn write_through(
    view: &dyn Fn(&Tensor) -> Result<Tensor>,
) -> impl Fn(&[Tensor]) -> Result<Vec<Tensor>> + '_ {
    move |xs: &[Tensor]| {
        let b = at::clone(&xs[0], None)?;
        let mut v = view(&b)?;
        at::mul__Tensor(&mut v, &xs[1])?;
        Ok(vec![at::mul_Tensor(&b, &b)?])
    }
}

#[test]
fn every_view_operator_passes_gradcheck_and_gradgradcheck_through_a_write() {
    type View = Box<dyn Fn(&Tensor) -> Result<Tensor>>;
    // (name, view of a 3×4 base, shape of `w`, broadcast into the view)
    let cases: Vec<(&str, View, Vec<i64>)> = vec![
        ("select.int", Box::new(|b| at::select_int(b, 1, 2)), vec![3]),
        (
            "slice.Tensor",
            Box::new(|b| at::slice_Tensor(b, 1, Some(1), Some(4), 2)),
            vec![3, 2],
        ),
        ("view", Box::new(|b| at::view(b, &[2, 6])), vec![6]),
        (
            "transpose.int",
            Box::new(|b| at::transpose_int(b, 0, 1)),
            vec![4, 3],
        ),
        ("t", Box::new(at::t), vec![3]),
        ("permute", Box::new(|b| at::permute(b, &[1, 0])), vec![4, 1]),
        (
            "unsqueeze",
            Box::new(|b| at::unsqueeze(b, 1)),
            vec![3, 1, 4],
        ),
        (
            "squeeze.dim",
            Box::new(|b| at::squeeze_dim(&at::slice_Tensor(b, 0, Some(1), Some(2), 1)?, 0)),
            vec![4],
        ),
        (
            "expand",
            Box::new(|b| at::expand(&at::select_int(b, 0, 1)?, &[1, 4], false)),
            vec![1, 4],
        ),
        (
            "chain",
            Box::new(|b| at::select_int(&at::t(&at::view(b, &[4, 3])?)?, 0, 1)),
            vec![4],
        ),
    ];
    for (op, view, w_shape) in &cases {
        let a = leaf(&[3, 4], DType::Float64);
        let w = leaf(w_shape, DType::Float64);
        let f = write_through(view.as_ref());
        let inputs = [a, w];
        assert!(
            gradcheck(&f, &inputs, &GradcheckOptions::default()).unwrap(),
            "{op}: gradcheck"
        );
        assert!(
            gradgradcheck(&f, &inputs, &GradgradcheckOptions::default()).unwrap(),
            "{op}: gradgradcheck"
        );
        // The history is PyTorch's.
        let b = at::clone(&inputs[0], None).unwrap();
        let mut v = view(&b).unwrap();
        at::mul__Tensor(&mut v, &inputs[1]).unwrap();
        assert_eq!(
            (name(&b).as_str(), name(&v).as_str()),
            ("CopySlices", "AsStridedBackward0"),
            "{op}"
        );
    }
}

#[test]
fn a_write_through_an_expanded_view_is_refused() {
    let a = leaf(&[1, 3], DType::Float32);
    let b = at::clone(&a, None).unwrap();
    let mut e = at::expand(&b, &[2, 3], false).unwrap();
    let msg = at::mul__Tensor(&mut e, &Tensor::scalar(2.0f32))
        .unwrap_err()
        .to_string();
    assert!(msg.starts_with("unsupported operation: more than one element of the written-to tensor refers to a single memory location."), "{msg}");
}

#[test]
fn fill_zero_and_detach_in_place() {
    let a = leaf(&[3], DType::Float32);
    let mut b = at::clone(&a, None).unwrap();
    at::zero_(&mut b).unwrap();
    assert_eq!(name(&b), "ZeroBackward0");
    // PyTorch's node numbers follow its file: fill.Scalar, fill.Tensor,
    // fill_.Scalar, fill_.Tensor.
    let mut c = at::clone(&a, None).unwrap();
    at::fill__Scalar(&mut c, Scalar::Float(2.0)).unwrap();
    assert_eq!(name(&c), "FillBackward2");
    assert_eq!(
        name(&at::fill_Scalar(&a, Scalar::Float(2.0)).unwrap()),
        "FillBackward0"
    );
    let v = leaf(&[], DType::Float32);
    assert_eq!(name(&at::fill_Tensor(&a, &v).unwrap()), "FillBackward1");
    let mut d = at::clone(&a, None).unwrap();
    at::fill__Tensor(&mut d, &v).unwrap();
    assert_eq!(name(&d), "FillBackward3");
    assert_eq!(to_f64(&d), vec![to_f64(&v)[0]; 3]);
    sum(&d).backward().unwrap();
    assert_eq!(to_f64(&v.grad().unwrap()), vec![3.0]);
    assert_eq!(to_f64(&a.grad().unwrap()), vec![0.0; 3]);
    let e = at::fill__Tensor(&mut d, &a).unwrap_err().to_string();
    assert_eq!(
        e,
        "fill_ only supports 0-dimension value tensor but got tensor with 1 dimensions."
    );

    // Zeroing a row through a view stops its gradient.
    let m = leaf(&[2, 3], DType::Float32);
    let b = at::clone(&m, None).unwrap();
    let mut row = at::select_int(&b, 0, 1).unwrap();
    at::zero_(&mut row).unwrap();
    assert_eq!(name(&b), "CopySlices");
    sum(&b).backward().unwrap();
    assert_eq!(to_f64(&m.grad().unwrap()), [1.0, 1.0, 1.0, 0.0, 0.0, 0.0]);

    // detach_ drops the history; a view cannot be detached in place.
    let mut b = at::clone(&a, None).unwrap();
    at::detach_(&mut b).unwrap();
    assert!(!b.requires_grad() && b.is_leaf());
    let mut s = at::select_int(&b, 0, 0).unwrap();
    let msg = at::detach_(&mut s).unwrap_err().to_string();
    assert!(
        msg.starts_with("Can't detach views in-place. Use detach() instead."),
        "{msg}"
    );
}

#[test]
fn a_view_made_before_its_base_required_grad_follows_it() {
    // b views z while z is plain; a write through another view makes z
    // require grad, and b's calls are recorded from then on.
    let x = leaf(&[2], DType::Float32);
    let z = Tensor::zeros(&[3], DType::Float32, Device::Cpu);
    let mut a = at::slice_Tensor(&z, 0, Some(0), Some(2), 1).unwrap();
    let b = at::slice_Tensor(&z, 0, Some(1), Some(3), 1).unwrap();
    assert!(!b.requires_grad());
    at::copy_(&mut a, &x, false).unwrap();
    assert!(b.requires_grad());
    let s = sum(&at::mul_Tensor(&b, &Tensor::scalar(3.0f32)).unwrap());
    assert_eq!(name(&s), "SumBackward0");
    s.backward().unwrap();
    assert_eq!(to_f64(&x.grad().unwrap()), [0.0, 3.0]);
}

#[test]
fn a_base_that_retains_its_gradient_keeps_it_after_a_write_through_a_view() {
    let a = leaf(&[2, 2], DType::Float32);
    let b = at::clone(&a, None).unwrap();
    opforge::autograd::TensorAutograd::retain_grad(&b).unwrap();
    let mut row = at::select_int(&b, 0, 0).unwrap();
    at::mul__Tensor(&mut row, &Tensor::scalar(5.0f32)).unwrap();
    sum(&at::mul_Tensor(&b, &Tensor::scalar(2.0f32)).unwrap())
        .backward()
        .unwrap();
    assert_eq!(to_f64(&b.grad().unwrap()), [2.0; 4]);
    assert_eq!(to_f64(&a.grad().unwrap()), [10.0, 10.0, 2.0, 2.0]);
}

#[test]
fn hooks_registered_before_an_in_place_write_see_the_old_values_gradient() {
    use opforge::autograd::TensorAutograd;
    use std::sync::{Arc, Mutex};
    // PyTorch 2.15 (autograd mechanics, "Behavior of Tensor hooks when Tensor
    // is modified in-place"): a hook stays with the history it was registered
    // on. `b = x * 1; hook; b.mul_(3); hook; (b * 5).sum().backward()` runs
    // the later hook with 5s, the earlier one with 15s; through a view,
    // `base[0:1].mul_(3)` gives the base's earlier hook [15, 5].
    type Seen = Vec<(&'static str, Vec<f32>)>;
    let seen: Arc<Mutex<Seen>> = Arc::default();
    let hook = |tag: &'static str| {
        let seen = seen.clone();
        move |g: &Tensor| -> Result<Option<Tensor>> {
            seen.lock().unwrap().push((tag, g.to_vec::<f32>()?));
            Ok(None)
        }
    };
    let x = leaf(&[2], DType::Float32);
    let mut b = at::mul_Scalar(&x, Scalar::Int(1)).unwrap();
    b.register_hook(hook("before")).unwrap();
    at::mul__Tensor(&mut b, &Tensor::scalar(3.0f32)).unwrap();
    b.register_hook(hook("after")).unwrap();
    sum(&at::mul_Scalar(&b, Scalar::Int(5)).unwrap())
        .backward()
        .unwrap();
    assert_eq!(
        *seen.lock().unwrap(),
        [("after", vec![5.0, 5.0]), ("before", vec![15.0, 15.0])]
    );
    seen.lock().unwrap().clear();
    let base = at::mul_Scalar(&x, Scalar::Int(1)).unwrap();
    base.register_hook(hook("base")).unwrap();
    let mut head = at::slice_Tensor(&base, 0, Some(0), Some(1), 1).unwrap();
    at::mul__Tensor(&mut head, &Tensor::scalar(3.0f32)).unwrap();
    sum(&at::mul_Scalar(&base, Scalar::Int(5)).unwrap())
        .backward()
        .unwrap();
    assert_eq!(*seen.lock().unwrap(), [("base", vec![15.0, 5.0])]);
}

#[test]
fn forward_mode_writes_through_a_view_reach_the_bases_tangent() {
    use opforge::autograd::forward_ad::{dual_level, make_dual, unpack_dual};
    let tangent = |t: &Tensor| unpack_dual(t).tangent.map(|t| to_f64(&t));
    // PyTorch 2.15, side by side.
    let _level = dual_level().unwrap();
    let p = Tensor::from_vec(vec![1.0f64, 2.0], &[2]).unwrap();
    let x = make_dual(&p, &Tensor::from_vec(vec![10.0f64, 20.0], &[2]).unwrap()).unwrap();
    // z = zeros(3); z[0:2].copy_(x): z's tangent is made, zero, and written.
    let z = Tensor::zeros(&[3], DType::Float64, Device::Cpu);
    let mut head = at::slice_Tensor(&z, 0, Some(0), Some(2), 1).unwrap();
    at::copy_(&mut head, &x, false).unwrap();
    assert_eq!(tangent(&z), Some(vec![10.0, 20.0, 0.0]));
    assert_eq!(tangent(&head), Some(vec![10.0, 20.0]));
    // v = z[1:3]; v.mul_(2): both tangents see it.
    let mut v = at::slice_Tensor(&z, 0, Some(1), Some(3), 1).unwrap();
    at::mul__Tensor(&mut v, &Tensor::scalar(2.0f64)).unwrap();
    assert_eq!(tangent(&z), Some(vec![10.0, 40.0, 0.0]));
    assert_eq!(tangent(&v), Some(vec![40.0, 0.0]));
    // b = ones(2, 2); b.t()[0].copy_(x): a column of b's tangent.
    let b = Tensor::from_vec(vec![1.0f64; 4], &[2, 2]).unwrap();
    let mut col = at::select_int(&at::t(&b).unwrap(), 0, 0).unwrap();
    at::copy_(&mut col, &x, false).unwrap();
    assert_eq!(tangent(&b), Some(vec![10.0, 0.0, 20.0, 0.0]));
}

/// A tangent laid out unlike its primal is stored in the primal's layout
/// (PyTorch's `set_fw_grad`: `_new_zeros_with_same_feature_meta`, then a
/// copy), so whatever a view does to the primal it can do to the tangent:
/// the jvp of `log_softmax(x.t().clone(), 1).reshape(-1)` and of a view of
/// a dual whose tangent was given transposed.
#[test]
fn a_tangent_takes_its_primals_layout() {
    use opforge::autograd::forward_ad::{dual_level, make_dual, unpack_dual};
    let _level = dual_level().unwrap();
    let x = Tensor::from_vec((0..6).map(f64::from).collect(), &[2, 3]).unwrap();
    let v = Tensor::from_vec(vec![0.5f64; 6], &[2, 3]).unwrap();
    let d = make_dual(&x, &v).unwrap();
    let y = at::_log_softmax(&at::clone(&at::t(&d).unwrap(), None).unwrap(), 1, false).unwrap();
    let z = at::reshape(&y, &[-1]).unwrap();
    // Each row of log_softmax moves by the same amount in every entry: the
    // tangent is zero.
    let t = unpack_dual(&z).tangent.expect("a tangent");
    assert!(
        to_f64(&t).iter().all(|x| x.abs() < 1e-12),
        "{:?}",
        to_f64(&t)
    );
    // Given transposed, the tangent is stored as the primal is laid out.
    let w = Tensor::zeros(&[3, 2], DType::Float64, Device::Cpu);
    let tt = at::t(&Tensor::from_vec((0..6).map(f64::from).collect(), &[2, 3]).unwrap()).unwrap();
    let dw = make_dual(&w, &tt).unwrap();
    let got = unpack_dual(&dw).tangent.unwrap();
    assert_eq!((got.shape(), got.strides()), (vec![3, 2], vec![2, 1]));
    assert_eq!(to_f64(&got), vec![0.0, 3.0, 1.0, 4.0, 2.0, 5.0]);
    let flat = at::view(&dw, &[-1]).unwrap();
    assert_eq!(
        to_f64(&unpack_dual(&flat).tangent.unwrap()),
        vec![0.0, 3.0, 1.0, 4.0, 2.0, 5.0]
    );
}
