//! PyTorch's whole schema compiled in: an operator without a kernel gives the
//! dispatcher's error; a `#[kernel]` for it (checked against PyTorch's schema)
//! makes the call work; operators opforge has are opforge's.

use opforge::dispatch::dispatcher;
use opforge::{kernel, Result, Tensor};

/// A CPU kernel for `aten::sinc` (`sin(πx) / (πx)`), an operator opforge's own
/// YAML does not have.
#[kernel(CPU, "sinc", schema = opforge_aten)]
fn sinc(self_: &Tensor) -> Result<Tensor> {
    let px = opforge::at::mul_Scalar(self_, opforge::Scalar::Float(std::f64::consts::PI))?;
    opforge::at::div_Tensor(&opforge::at::sin(&px)?, &px)
}

fn x() -> Tensor {
    Tensor::from_vec(vec![0.5f32, 1.5], &[2]).unwrap()
}

#[test]
fn every_entry_is_an_operator_with_a_typed_api() {
    assert!(
        dispatcher().registration_errors().is_empty(),
        "{:?}",
        dispatcher().registration_errors()
    );
    // PyTorch 2.15's 2,590 entries and the 520 functions their `autogen:`
    // lines add.
    assert_eq!(opforge_aten::OPS.len(), 2590 + 520);
    for id in opforge_aten::OpId::ALL {
        let op = opforge_aten::generated::operator(id);
        assert_eq!(op.schema.name, id.schema().name);
    }
}

#[test]
fn an_operator_without_a_kernel_cannot_run_until_one_is_registered() {
    let e = opforge_aten::torch::frac(&x()).unwrap_err();
    assert_eq!(
        e.to_string(),
        "Could not run 'aten::frac' with arguments from the 'CPU' backend. 'aten::frac' is only available for these backends: []."
    );
    let y = opforge_aten::torch::sinc(&x()).unwrap();
    let v = y.to_vec::<f32>().unwrap();
    assert!(
        (v[0] - std::f32::consts::FRAC_2_PI).abs() < 1e-5 && (v[1] + 0.212_206_6).abs() < 1e-5,
        "{v:?}"
    );
}

#[test]
fn operators_opforge_has_are_opforges() {
    assert!(std::ptr::eq(
        opforge_aten::generated::operator(opforge_aten::OpId::add_Tensor),
        dispatcher().op(opforge::OpId::add_Tensor)
    ));
    let r = opforge_aten::torch::add(&x(), &x()).unwrap();
    assert_eq!(r.to_vec::<f32>().unwrap(), [1.0, 3.0]);
}
