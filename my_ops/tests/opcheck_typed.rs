//! `opcheck`'s typed-call family catches a kernel whose boxed entry and typed
//! entry disagree. The registration here is written by hand (an entry made
//! from one function cannot disagree; `Entry::with_boxed` exists for this
//! test): a CPU kernel for `mylib::axpy` whose typed entry computes
//! `x + alpha * y` and whose boxed entry computes `2 * x`. In its own test
//! binary, so that no other test sees it.

use my_ops::generated::sig::mylib_axpy;
use opforge::__private::{linkme, Entry, KernelEntry, KeySet, Operator, Value, KERNELS};
use opforge::opcheck::{opcheck, TestUtil};
use opforge::{Scalar, Tensor};

fn axpy_typed(x: &Tensor, y: &Tensor, alpha: Scalar) -> opforge::Result<Tensor> {
    let ay = opforge::torch::mul(y, &Tensor::scalar(alpha.to_f64() as f32))?;
    opforge::torch::add(x, &ay)
}

fn axpy_boxed(
    _f: &'static (dyn std::any::Any + Send + Sync),
    _op: &Operator,
    _keys: KeySet,
    args: &[Value],
) -> opforge::Result<Vec<Value>> {
    let Value::Tensor(x) = &args[0] else {
        unreachable!("the dispatcher checked the arguments")
    };
    Ok(vec![Value::Tensor(opforge::torch::add(x, x)?)])
}

type Spec = fn(&'static Tensor, &'static Tensor, Scalar) -> opforge::Result<Tensor>;

#[linkme::distributed_slice(KERNELS)]
#[linkme(crate = opforge::__private::linkme)]
static DISAGREEING: KernelEntry = KernelEntry {
    op: "mylib::axpy",
    key: "CPU",
    schema: "mylib::axpy(Tensor x, Tensor y, *, Scalar alpha=1) -> Tensor",
    entry: Entry::new::<mylib_axpy, Spec>(&(axpy_typed as mylib_axpy)).with_boxed(axpy_boxed),
    file: file!(),
    line: line!(),
};

#[test]
fn a_boxed_entry_that_disagrees_with_the_typed_one_fails_test_typed_call() {
    let t = |v: [f32; 2]| Value::Tensor(Tensor::from_vec(v.to_vec(), &[2]).unwrap());
    let args = [t([1.0, 2.0]), t([10.0, 20.0]), Value::Int(1)];
    // The other families see nothing wrong.
    opcheck(
        "mylib::axpy",
        &args,
        &[TestUtil::Schema, TestUtil::FakeTensor],
    )
    .unwrap();
    let e = opcheck("mylib::axpy", &args, &[TestUtil::TypedCall]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "opcheck(op, ...): test_typed_call failed with output[0] differs: different \
         elements (scroll up for stack trace)"
    );
}
