use super::*;
use crate::at;
use crate::tensor::DType;
use crate::Scalar;

fn real() -> Tensor {
    Tensor::from_vec(vec![1.0f32, 2.0], &[2]).unwrap()
}

#[test]
fn calls_on_fakes_give_fakes_and_refuse_real_tensors() {
    let mode = FakeTensorMode::new();
    let r = real();
    let f = mode.from_tensor(&r).unwrap();
    assert!(mode.from_tensor(&r).unwrap().is_same(&f));
    // Outside the mode too: a fake re-enters it.
    let s = at::add_Tensor(&f, &f, Scalar::Int(1)).unwrap();
    assert_eq!(s.to_string(), "FakeTensor(..., size=(2,))");
    let e = at::add_Tensor(&f, &r, Scalar::Int(1)).unwrap_err();
    assert_eq!(
        e.to_string(),
        "Please convert all Tensors to FakeTensors first or instantiate FakeTensorMode with \
         'allow_non_fake_inputs'. Found in aten.add.Tensor(FakeTensor(..., size=(2,)), \
         tensor([...], size=(2,)))"
    );
    assert_eq!(e.python_class(), "AssertionError");
    let _g = mode.enter();
    let e = at::add_Tensor(&r, &r, Scalar::Int(1)).unwrap_err();
    assert!(e
        .to_string()
        .ends_with("Found in aten.add.Tensor(tensor([...], size=(2,)), tensor([...], size=(2,)))"));
    let o = at::ones(&[2, 3], Some(DType::Int64), None, None, None).unwrap();
    assert_eq!(
        o.to_string(),
        "FakeTensor(..., size=(2, 3), dtype=torch.int64)"
    );
    let t = at::t(&o).unwrap();
    assert_eq!((t.shape(), t.strides()), (vec![3, 2], vec![1, 3]));
    assert!(t.shares_storage(&o));
}

#[test]
fn in_place_calls_give_the_input_back() {
    let mode = FakeTensorMode::new();
    let mut f = mode.from_tensor(&real()).unwrap();
    let g = f.clone();
    at::add__Scalar(&mut f, Scalar::Int(1), Scalar::Int(1)).unwrap();
    assert!(f.is_same(&g));
}

#[test]
fn a_mode_allowing_real_inputs_converts_them() {
    let mode = FakeTensorMode::allowing_non_fake_inputs();
    let r = real();
    let _g = mode.enter();
    let s = at::add_Tensor(&r, &r, Scalar::Int(1)).unwrap();
    assert!(s.is_fake());
    assert_eq!(s.device(), Device::Cpu);
    // Once: an in-place call on the real tensor gives back its fake, and the
    // real tensor is left as it was.
    let fake = mode.from_tensor(&r).unwrap();
    let mut w = r.clone();
    let out = at::add__Scalar(&mut w, Scalar::Int(1), Scalar::Int(1)).unwrap();
    assert!(out.is_same(&fake));
    drop(_g);
    assert_eq!(r.to_vec::<f32>().unwrap(), real().to_vec::<f32>().unwrap());
}

#[test]
fn one_element_prints_as_pytorchs_formatter() {
    let f = |v: f64| one_element(Scalar::Float(v));
    assert_eq!(f(2.0), "2.");
    assert_eq!(f(-2.5), "-2.5000");
    assert_eq!(f(1e-5), "1.0000e-05");
    assert_eq!(f(3e9), "3.0000e+09");
    assert_eq!(f(f64::INFINITY), "inf");
    assert_eq!(one_element(Scalar::Int(7)), "7");
    assert_eq!(one_element(Scalar::Bool(true)), "True");
}

#[test]
fn a_fakes_meta_twin_follows_its_geometry() {
    use crate::tensor::Geometry;
    let mode = FakeTensorMode::new();
    let f = mode
        .from_tensor(&Tensor::from_vec(vec![1.0f32; 6], &[2, 3]).unwrap())
        .unwrap();
    assert_eq!(at::neg(&f).unwrap().shape(), [2, 3]);
    let twin = f.meta_of_fake();
    assert!(twin.is_same(&f.meta_of_fake())); // kept
                                              // The fake's geometry changed directly: its calls see the new one.
    f.set_geometry(Geometry {
        storage: f.storage(),
        shape: [3, 2].as_slice().into(),
        strides: [2, 1].as_slice().into(),
        offset: 0,
    })
    .unwrap();
    assert_eq!(at::neg(&f).unwrap().shape(), [3, 2]);
    assert!(!twin.is_same(&f.meta_of_fake()));
}
