//! Two `#[kernel]`s for the same operator and key in one program, in two
//! modules (in one module they do not compile: `ui/fail/duplicate`): a
//! registration error naming both places, returned by the first call into the
//! dispatcher without anyone asking, and the operator stays disabled (a
//! conflict is never a silent winner). Its own test binary, so that the
//! duplicate does not affect other tests.

use opforge::dispatch::dispatcher;
use opforge::{Error, Tensor};

const FIRST: u32 = line!() + 5;
mod first {
    use opforge::{kernel, Result, Tensor};

    #[kernel(Python, "neg")]
    fn neg_first(self_: &Tensor) -> Result<Tensor> {
        Ok(self_.clone())
    }
}

const SECOND: u32 = line!() + 5;
mod second {
    use opforge::{kernel, Result, Tensor};

    #[kernel(Python, "neg")]
    fn neg_second(self_: &Tensor) -> Result<Tensor> {
        Ok(self_.clone())
    }
}

#[test]
fn a_duplicate_registration_is_returned_by_the_first_call_and_disables_the_operator() {
    let t = Tensor::from_vec(vec![1.0f32, 2.0], &[2]).unwrap();
    // The first call, to any operator, returns every registration error.
    let e = opforge::torch::abs(&t).unwrap_err();
    let Error::Registration(errors) = &e else {
        panic!("{e}")
    };
    assert_eq!(errors.len(), 1, "{e}");
    let msg = e.to_string();
    assert!(
        msg.starts_with("1 registration error (operators and kernels linked into this program):"),
        "{msg}"
    );
    assert!(msg.contains("aten::neg on Python"), "{msg}");
    for line in [FIRST, SECOND] {
        assert!(msg.contains(&format!("duplicate.rs:{line}")), "{msg}");
    }
    assert_eq!(dispatcher().registration_errors().len(), 1);
    // Then other operators work, and the conflicted one keeps failing.
    assert_eq!(
        opforge::torch::abs(&t).unwrap().to_vec::<f32>().unwrap(),
        [1.0, 2.0]
    );
    let e = opforge::torch::neg(&t).unwrap_err();
    assert!(matches!(e, Error::DuplicateKernel(_)), "{e}");
    assert!(e.to_string().contains("aten::neg on Python"), "{e}");
    let op = dispatcher().find("aten::neg").unwrap();
    assert!(op.registration_error().is_some());
}
