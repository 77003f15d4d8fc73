//! Two `#[kernel]`s for the same operator and key in one program: a run-time
//! registration error naming both places. Its own test binary, so that the
//! duplicate does not affect other tests.

use opforge::dispatch::dispatcher;
use opforge::{kernel, Result, Tensor};

const FIRST: u32 = line!() + 2;
#[kernel(Python, "neg")]
fn neg_first(self_: &Tensor) -> Result<Tensor> {
    Ok(self_.clone())
}

const SECOND: u32 = line!() + 2;
#[kernel(Python, "neg")]
fn neg_second(self_: &Tensor) -> Result<Tensor> {
    Ok(self_.clone())
}

#[test]
fn a_duplicate_registration_is_reported_with_both_places() {
    let errors = dispatcher().registration_errors();
    assert_eq!(errors.len(), 1, "{errors:?}");
    let msg = errors[0].to_string();
    assert!(msg.contains("aten::neg on Python"), "{msg}");
    for line in [FIRST, SECOND] {
        assert!(msg.contains(&format!("duplicate.rs:{line}")), "{msg}");
    }
}
