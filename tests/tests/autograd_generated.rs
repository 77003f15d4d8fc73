//! The generated Autograd kernels (runtime/derivatives.yaml → `autograd.rs`)
//! end to end: recording, node names, and gradients against PyTorch —
//! `tests/data/conformance/grad_calls.jsonl` for the overloads it has, and
//! values recorded with PyTorch 2.15 (`/work/venv-torch/bin/python`) for the
//! others (each test says which).

use opforge::autograd;
use opforge::{at, DType, Scalar, Tensor};
use opforge_tests::gradients;
use serde_json::Value as Json;

fn t64(v: &[f64], shape: &[usize]) -> Tensor {
    Tensor::from_vec(v.to_vec(), shape).unwrap()
}

fn leaf64(v: &[f64], shape: &[usize]) -> Tensor {
    let t = t64(v, shape);
    t.set_requires_grad(true).unwrap();
    t
}

fn values(t: &Tensor) -> Vec<f64> {
    at::_to_copy(t, Some(DType::Float64), None, None, None, false, None)
        .unwrap()
        .contiguous()
        .unwrap()
        .to_vec::<f64>()
        .unwrap()
}

fn name(t: &Tensor) -> String {
    t.grad_fn()
        .map(|g| g.node.name().to_string())
        .unwrap_or_default()
}

fn grads(outputs: &[Tensor], inputs: &[Tensor], seeds: &[Tensor]) -> Vec<Vec<f64>> {
    let seeds: Vec<Option<Tensor>> = seeds.iter().cloned().map(Some).collect();
    autograd::grad(outputs, inputs, &seeds, None, false, true)
        .unwrap()
        .iter()
        .map(|g| g.as_ref().map(values).unwrap_or_default())
        .collect()
}

#[test]
fn times_two_then_sum_gives_twos() {
    let x = Tensor::from_vec(vec![1.0f32, -2.0, 3.5], &[3]).unwrap();
    x.set_requires_grad(true).unwrap();
    let y = (&x * 2.0).unwrap();
    let s = at::sum(&y, None).unwrap();
    s.backward().unwrap();
    assert_eq!(x.grad().unwrap().to_vec::<f32>().unwrap(), vec![2.0; 3]);
}

#[test]
fn nodes_are_named_as_pytorch_names_them() {
    let a = leaf64(&[1.0, 2.0], &[2]);
    let b = leaf64(&[3.0, 4.0], &[2]);
    let m = at::mul_Tensor(&a, &b).unwrap();
    assert_eq!(name(&m), "MulBackward0");
    assert_eq!(
        name(&at::add_Tensor(&a, &b, Scalar::Int(1)).unwrap()),
        "AddBackward0"
    );
    assert_eq!(name(&at::sum(&m, None).unwrap()), "SumBackward0");
    // Recorded with PyTorch 2.15: the second entry of a base name counts 1.
    assert_eq!(
        name(&at::sum_dim_IntList(&a, Some(&[0]), false, None).unwrap()),
        "SumBackward1"
    );
    assert_eq!(
        name(&at::mul_Scalar(&a, Scalar::Float(2.0)).unwrap()),
        "MulBackward1"
    );
    assert_eq!(
        name(&at::sub_Scalar(&a, Scalar::Float(2.0), Scalar::Int(1)).unwrap()),
        "SubBackward1"
    );
    assert_eq!(
        name(&at::div_Scalar(&a, Scalar::Float(2.0)).unwrap()),
        "DivBackward1"
    );
    let to = at::_to_copy(&a, Some(DType::Float32), None, None, None, false, None).unwrap();
    assert_eq!(name(&to), "ToCopyBackward0");
    assert_eq!(name(&at::t(&a).unwrap()), "TBackward0");
    assert_eq!(name(&at::relu(&a).unwrap()), "ReluBackward0");
    assert_eq!(name(&at::unsqueeze(&a, 0).unwrap()), "UnsqueezeBackward0");
    // Recorded with PyTorch 2.15 (`clamp.Tensor` precedes `clamp` in its file).
    let bound = t64(&[1.5], &[1]);
    let two = Scalar::Float(2.0);
    for (t, want) in [
        (at::clamp(&a, Some(two), None), "ClampBackward1"),
        (at::clamp_Tensor(&a, Some(&bound), None), "ClampBackward0"),
        (at::cat(&[a.clone(), b.clone()], 0), "CatBackward0"),
        (at::stack(&[a.clone(), b.clone()], 0), "StackBackward0"),
        (at::pow_Tensor_Scalar(&a, two), "PowBackward0"),
        (at::pow_Tensor_Tensor(&a, &b), "PowBackward1"),
        (at::prod(&a, None), "ProdBackward0"),
        (at::prod_dim_int(&a, 0, false, None), "ProdBackward1"),
        (at::maximum(&a, &b), "MaximumBackward0"),
        (at::div_Tensor_mode(&a, &b, Some("floor")), "DivBackward2"),
        (at::sgn(&a), "SgnBackward0"),
        (
            at::threshold_backward(&a, &b, two),
            "ThresholdBackwardBackward0",
        ),
    ] {
        assert_eq!(name(&t.unwrap()), want);
    }
    // Nothing requires grad: no history, and a plain result.
    let p = t64(&[1.0], &[1]);
    assert!(at::mul_Tensor(&p, &p).unwrap().grad_fn().is_none());
    // An in-place call on a non-leaf records the functional's node.
    let mut c = at::clone(&a, None).unwrap();
    assert_eq!(name(&c), "CloneBackward0");
    at::cos_(&mut c).unwrap();
    assert_eq!(name(&c), "CosBackward0");
}

/// Values recorded with PyTorch 2.15 (`torch.bmm`, `x.to(torch.float64)`,
/// an in-place `cos_` on a clone, `sum(dim=1, keepdim=True)`, a stepped
/// `slice`, `unsqueeze` + `expand`).
#[test]
fn gradients_recorded_from_pytorch() {
    let a = leaf64(&[1., 2., 3., 4.], &[1, 2, 2]);
    let b = leaf64(&[0.5, -1., 2., 0.25], &[1, 2, 2]);
    let y = at::bmm(&a, &b).unwrap();
    assert_eq!(name(&y), "BmmBackward0");
    let g = grads(&[y], &[a, b], &[t64(&[1., 2., 3., 4.], &[1, 2, 2])]);
    assert_eq!(
        g,
        vec![vec![-1.5, 2.5, -2.5, 7.0], vec![10.0, 14.0, 14.0, 20.0]]
    );

    let x = Tensor::from_vec(vec![1.5f32, -2.25, 3.], &[3]).unwrap();
    x.set_requires_grad(true).unwrap();
    let y = at::_to_copy(&x, Some(DType::Float64), None, None, None, false, None).unwrap();
    let s = at::sum(&at::mul_Tensor(&y, &y).unwrap(), None).unwrap();
    s.backward().unwrap();
    let gx = x.grad().unwrap();
    assert_eq!(gx.dtype(), DType::Float32);
    assert_eq!(values(&gx), vec![3.0, -4.5, 6.0]);

    let x = leaf64(&[1.5, -2.25, 3.], &[3]);
    let mut c = at::clone(&x, None).unwrap();
    at::cos_(&mut c).unwrap();
    let g = grads(&[c], &[x], &[t64(&[1., 2., 3.], &[3])]);
    let want = [-0.9974949866040544, 1.5561463937758424, -0.4233600241796016];
    for (got, want) in g[0].iter().zip(want) {
        assert!((got - want).abs() < 1e-12, "{got} vs {want}");
    }

    let m = leaf64(&[1., 2., 3., 4., 5., 6.], &[2, 3]);
    let y = at::sum_dim_IntList(&m, Some(&[1]), true, None).unwrap();
    let g = grads(&[y], std::slice::from_ref(&m), &[t64(&[1., 2.], &[2, 1])]);
    assert_eq!(g[0], vec![1., 1., 1., 2., 2., 2.]);
    let y = at::slice_Tensor(&m, 1, Some(0), Some(3), 2).unwrap();
    let g = grads(
        &[y],
        std::slice::from_ref(&m),
        &[t64(&[3., 3., 3., 3.], &[2, 2])],
    );
    assert_eq!(g[0], vec![3., 0., 3., 3., 0., 3.]);
    let y = at::expand(&at::unsqueeze(&m, 0).unwrap(), &[2, 2, 3], false).unwrap();
    let g = grads(&[y], &[m], &[t64(&[1.; 12], &[2, 2, 3])]);
    assert_eq!(g[0], vec![2.; 6]);
}

#[test]
fn out_and_in_place_follow_pytorch_rules() {
    let a = leaf64(&[1., 2.], &[2]);
    let mut out = t64(&[0., 0.], &[2]);
    let e = at::mul_out(&a, &a, &mut out).unwrap_err().to_string();
    assert!(e.contains("mul(): functions with out=... arguments don't support automatic differentiation, but one of the arguments requires grad."), "{e}");
    // Nothing requires grad: the out= call computes.
    let p = t64(&[1., 2.], &[2]);
    at::mul_out(&p, &p, &mut out).unwrap();
    assert_eq!(values(&out), vec![1., 4.]);
    let mut leaf = a.clone();
    let e = at::exp_(&mut leaf).unwrap_err().to_string();
    assert!(e.contains(autograd::LEAF_INPLACE), "{e}");
}

/// Operators PyTorch does not differentiate (factories like `ones_like`,
/// comparisons, `argmax`) have no derivatives entry and no Autograd kernel:
/// their results have no history, as PyTorch's (checked with PyTorch 2.15:
/// `torch.ones_like(x).requires_grad` is False for `x` that requires grad).
#[test]
fn operators_pytorch_does_not_differentiate_record_nothing() {
    let a = leaf64(&[1., 2.], &[2]);
    let o = at::ones_like(&a, None, None, None, None, None).unwrap();
    assert_eq!(values(&o), vec![1.0, 1.0]);
    assert!(o.grad_fn().is_none() && !o.requires_grad());
    let e = at::eq_Tensor(&a, &a).unwrap();
    assert!(e.grad_fn().is_none());
}

// ---- grad_calls.jsonl ----------------------------------------------------------

/// The whole sample, every kind of case (grads, grad_grads, jvp, errors),
/// through the runner the `gradients` binary uses: 100%.
#[test]
fn gradients_match_pytorchs_corpus() {
    let path = opforge_tests::corpus("grad_calls.jsonl");
    let cases = gradients::load(&path).unwrap();
    assert!(cases.len() >= 180, "only {} cases", cases.len());
    let kinds = |f: fn(&gradients::Case) -> bool| cases.iter().filter(|c| f(c)).count();
    assert!(kinds(|c| c.grad_grad_weights.is_some()) >= 30);
    assert!(kinds(|c| c.tangents.is_some()) >= 50);
    all_pass(&cases);
}

/// Replays `cases`: every one passes.
fn all_pass(cases: &[gradients::Case]) {
    let report = gradients::replay(cases);
    assert!(
        report.failed == 0,
        "{} of {} cases fail:\n{}",
        report.failed,
        cases.len(),
        report.failures.join("\n")
    );
}

/// More cases of the sample's kind, recorded from PyTorch 2.15 by
/// `tests/record/grad_calls.py` in three batches (`tests/data/recorded/README.md`):
/// the sample's overloads at other shapes and options, every other overload
/// `runtime/derivatives.yaml` covers, composites, in-place and out= forms,
/// non-finite values: 100% too.
#[test]
fn gradients_match_our_own_recordings() {
    let mut cases = gradients::load(&opforge_tests::recorded("grad_calls.jsonl")).unwrap();
    cases.extend(gradients::load(&opforge_tests::recorded("grad_calls_2.jsonl")).unwrap());
    cases.extend(gradients::load(&opforge_tests::recorded("grad_calls_3.jsonl")).unwrap());
    assert!(cases.len() >= 1140, "only {} cases", cases.len());
    let overloads: std::collections::BTreeSet<&str> =
        cases.iter().map(|c| c.call.overload.as_str()).collect();
    assert!(overloads.len() >= 210, "only {} overloads", overloads.len());
    all_pass(&cases);
}

/// The Core ATen reductions (`amax`, `amin`, `argmin`, `any`, `mean`, `var`,
/// `cumsum`), recorded from PyTorch 2.15 by `tests/record/grad_calls.py` with
/// `grad_cases_reduce.py`: ties, NaN, empty and 0-dim inputs, dtypes,
/// corrections, in-place forms and errors: 100%.
#[test]
fn reductions_match_our_own_recordings() {
    let cases = gradients::load(&opforge_tests::recorded("grad_calls_reduce.jsonl")).unwrap();
    assert!(cases.len() >= 75, "only {} cases", cases.len());
    all_pass(&cases);
}

/// The Core ATen binary pointwise operators (`atan2`, `fmod`, `remainder`,
/// `pow.Scalar`, `div.Scalar_mode`, and the non-differentiable bitwise and
/// logical ones), recorded from PyTorch 2.15 by `tests/record/grad_calls.py`
/// with `grad_cases_binary.py`: broadcasting, float32, 0-dim and empty
/// inputs, exact multiples and zero divisors, in-place and out= forms, and
/// their errors: 100%.
#[test]
fn binary_pointwise_operators_match_our_own_recordings() {
    let cases = gradients::load(&opforge_tests::recorded("grad_calls_binary.jsonl")).unwrap();
    assert!(cases.len() >= 85, "only {} cases", cases.len());
    all_pass(&cases);
}

/// The Core ATen activations (`gelu` with both approximations, `gelu_`,
/// `gelu_backward`, `leaky_relu`, `leaky_relu_`, `leaky_relu_backward`),
/// recorded from PyTorch 2.15 by
/// `tests/record/grad_calls.py` with `grad_cases_act.py`: gradients,
/// gradients of gradients, forward mode, broadcasting, in-place forms and
/// errors: 100%.
#[test]
fn activations_match_our_own_recordings() {
    let cases = gradients::load(&opforge_tests::recorded("grad_calls_act.jsonl")).unwrap();
    assert!(cases.len() >= 43, "only {} cases", cases.len());
    all_pass(&cases);
}

/// A case whose recorded gradient is wrong fails (the runner can fail).
#[test]
fn the_runner_reports_a_wrong_gradient() {
    let text = opforge_tests::read(&opforge_tests::corpus("grad_calls.jsonl"));
    let line = text
        .lines()
        .find(|l| l.contains("\"grad/mul.Tensor/"))
        .unwrap();
    let mut j: Json = serde_json::from_str(line).unwrap();
    let grads = j["expect"]["grads"].as_object_mut().unwrap();
    let first = grads.values_mut().find(|v| !v.is_null()).unwrap();
    let data = first["data"].as_array_mut().unwrap();
    data[0] = serde_json::json!(data[0].as_f64().unwrap() + 1.0);
    let cases = gradients::parse(&j.to_string()).unwrap();
    let report = gradients::replay(&cases);
    assert_eq!(
        (report.passed, report.failed),
        (0, 1),
        "{:?}",
        report.failures
    );
}

/// `create_graph` records the backward pass through the generated kernels
/// themselves, so a second derivative comes out (d²(x³)/dx² = 6x; PyTorch
/// gives the same: the formulas are its formulas).
#[test]
fn double_backward_goes_through_the_generated_kernels() {
    let x = leaf64(&[1.0, -2.0, 0.5], &[3]);
    let y = at::mul_Tensor(&at::mul_Tensor(&x, &x).unwrap(), &x).unwrap();
    let s = at::sum(&y, None).unwrap();
    let g = autograd::grad(&[s], std::slice::from_ref(&x), &[None], None, true, false).unwrap();
    let g = g[0].clone().unwrap();
    assert_eq!(values(&g), vec![3.0, 12.0, 0.75]);
    assert!(g.grad_fn().is_some());
    let gs = at::sum(&g, None).unwrap();
    let gg = autograd::grad(&[gs], &[x], &[None], None, false, false).unwrap();
    assert_eq!(values(gg[0].as_ref().unwrap()), vec![6.0, -12.0, 3.0]);
}

/// gradcheck (slow and fast mode, with forward AD) and gradgradcheck on every
/// operator of runtime/derivatives.yaml, float64 (about a second in debug;
/// `cargo run --release -p opforge-tests --bin gradchecks` prints each).
#[test]
fn every_formula_passes_gradcheck_and_gradgradcheck() {
    let checks = opforge_tests::gradchecks::run(&[]);
    assert!(checks.len() >= 150, "only {} checks", checks.len());
    let failures: Vec<String> = checks
        .iter()
        .filter_map(|c| {
            c.outcome
                .as_ref()
                .err()
                .map(|e| format!("{}: {e}", c.label))
        })
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
