//! torchgen's rules that the generated Autograd kernels follow, beyond the
//! formulas themselves: which outputs get a history, which arguments must not
//! require grad, which dtypes can have one; and the version a fresh result
//! starts at. Each was found by recording more cases of `grad_calls.jsonl`'s
//! kind from PyTorch 2.15 (`tests/data/recorded/`).

use opforge::autograd;
use opforge::{at, DType, Scalar, Tensor};

fn leaf(v: Vec<f64>, shape: &[usize]) -> Tensor {
    let t = Tensor::from_vec(v, shape).unwrap();
    t.set_requires_grad(true).unwrap();
    t
}

/// `nll_loss_forward` returns `(output, total_weight)` and its formula reads
/// the single `grad`: only the first output is differentiable (torchgen's
/// `gen_differentiable_outputs`), so `total_weight` has no history and a
/// backward through `output` alone needs one gradient.
#[test]
fn only_the_first_output_is_differentiable_when_formulas_read_grad() {
    let x = leaf(vec![0.5, -1.0, 0.25, 1.5, -0.5, 0.75], &[2, 3]);
    let target = Tensor::from_vec(vec![2i64, 0], &[2]).unwrap();
    let (out, total) = at::nll_loss_forward(&x, &target, None, 1, -100).unwrap();
    assert!(out.grad_fn().is_some());
    assert!(total.grad_fn().is_none() && !total.requires_grad());
    let g = autograd::grad(&[out, total], &[x], &[], None, false, true);
    assert_eq!(
        g.unwrap_err().to_string(),
        "element 1 of tensors does not require grad and does not have a grad_fn"
    );
}

/// A tensor argument without a formula (and not marked
/// `non_differentiable`) may not require grad: PyTorch's
/// `check_no_requires_grad`, with its message; with grad mode off, it may.
#[test]
fn an_argument_without_a_formula_may_not_require_grad() {
    let x = leaf(vec![0.5, -1.0, 0.25, 1.5, -0.5, 0.75], &[2, 3]);
    let target = Tensor::from_vec(vec![2i64, 0], &[2]).unwrap();
    let weight = leaf(vec![1.0, 2.0, 0.5], &[3]);
    let err = at::nll_loss_forward(&x, &target, Some(&weight), 1, -100).unwrap_err();
    assert_eq!(
        err.to_string(),
        "The function 'nll_loss_forward' is not differentiable with respect to argument 'weight'. This input cannot have requires_grad True."
    );
    let _off = autograd::no_grad();
    assert!(at::nll_loss_forward(&x, &target, Some(&weight), 1, -100).is_ok());
}

/// An output autograd cannot differentiate (an integer `sum`) is PyTorch's
/// error from `set_history`, unless the entry's `output_differentiability:`
/// is a condition on the dtype, as `_to_copy`'s is: then the result just has
/// no history.
#[test]
fn an_integer_result_of_a_differentiable_call_is_refused_unless_conditional() {
    let x = leaf(vec![1.5, -2.0, 3.0], &[3]);
    let err = at::sum(&x, Some(DType::Int64)).unwrap_err();
    assert_eq!(err.to_string(), "Autograd not support dtype: Long");
    let i = at::_to_copy(&x, Some(DType::Int64), None, None, None, false, None).unwrap();
    assert!(i.grad_fn().is_none() && !i.requires_grad());
    assert_eq!(i.to_vec::<i64>().unwrap(), vec![1, -2, 3]);
}

/// A fresh result is at version 0 whatever filled it (`clone` copies into a
/// new tensor, `ones_like` fills one): only in-place writes count, so a
/// saved input modified once reads "version 1; expected version 0", as in
/// PyTorch.
#[test]
fn fresh_results_start_at_version_zero() {
    let x = leaf(vec![0.25, 1.5, -0.5], &[3]);
    for t in [
        at::clone(&x, None).unwrap(),
        at::ones_like(&x, None, None, None, None, None).unwrap(),
        at::_to_copy(&x, Some(DType::Float32), None, None, None, false, None).unwrap(),
    ] {
        assert_eq!(t.storage().version(), 0);
    }
    let mut c = at::clone(&x, None).unwrap();
    let same = c.clone();
    at::mul__Tensor(&mut c, &same).unwrap();
    assert_eq!(c.storage().version(), 1);
    let err = c.sum().unwrap().backward().unwrap_err().to_string();
    assert!(
        err.contains("which is output 0 of Mul, is at version 1; expected version 0 instead"),
        "{err}"
    );
}

/// `autograd::grad` with no inputs: the message of PyTorch's Python
/// `torch.autograd.grad`, the API it mirrors.
#[test]
fn grad_with_no_inputs_says_so() {
    let x = leaf(vec![1.0], &[1]);
    let y = at::mul_Scalar(&x, Scalar::Float(2.0)).unwrap();
    let err = autograd::grad(&[y], &[], &[], None, false, false).unwrap_err();
    assert_eq!(
        err.to_string(),
        "`inputs` argument to `grad()` cannot be empty."
    );
}
