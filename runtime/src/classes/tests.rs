use super::*;
use crate::tensor::Tensor;
use std::sync::Mutex;

struct Acc(Mutex<Vec<Tensor>>);

fn acc_class() -> &'static ClassDef {
    static DEF: OnceLock<&'static ClassDef> = OnceLock::new();
    DEF.get_or_init(|| {
        Class::<Acc>::new("classes_test", "Acc")
            .init(|| Acc(Mutex::new(Vec::new())))
            .def("push", |a: &Acc, t: Tensor| a.0.lock().unwrap().push(t))
            .def("size", |a: &Acc| a.0.lock().unwrap().len() as i64)
            .def("scale", |_: &Acc, k: f64, n: i64| k * n as f64)
            .def("pair", |a: &Acc| {
                let v = a.0.lock().unwrap();
                (v.len() as i64, v.first().cloned())
            })
            .register()
            .unwrap()
    })
}

fn t() -> Tensor {
    Tensor::from_vec(vec![1.0f32, 2.0], &[2]).unwrap()
}

#[test]
fn method_schemas_are_generated_as_pytorch_generates_them() {
    let c = acc_class();
    assert_eq!(
        c.init_schema(),
        Some("__init__(__torch__.torch.classes.classes_test.Acc _0) -> NoneType _0")
    );
    let schema = |m: &str| c.method(m).unwrap().schema().to_string();
    assert_eq!(
        schema("push"),
        "push(__torch__.torch.classes.classes_test.Acc _0, Tensor _1) -> NoneType _0"
    );
    assert_eq!(
        schema("scale"),
        "scale(__torch__.torch.classes.classes_test.Acc _0, float _1, int _2) -> float _0"
    );
    // A tuple return is parenthesized, as c10 prints it.
    assert_eq!(
        schema("pair"),
        "pair(__torch__.torch.classes.classes_test.Acc _0) -> ((int, Tensor?) _0)"
    );
    assert_eq!(
        c.method_names(),
        ["__init__", "push", "size", "scale", "pair"]
    );
}

#[test]
fn objects_are_shared_handles_and_methods_run_on_them() {
    acc_class();
    let a = instantiate("classes_test::Acc", &[]).unwrap();
    let b = a.clone();
    a.call_method("push", &[Value::Tensor(t())]).unwrap();
    assert!(matches!(b.call_method("size", &[]).unwrap(), Value::Int(1)));
    assert!(a.is_same(&b) && a == b);
    assert_eq!(a.type_name(), "__torch__.torch.classes.classes_test.Acc");
    assert!(a.downcast_ref::<Acc>().is_some() && a.downcast_ref::<i64>().is_none());
    // Python's conversions on the slow path: an int for a float.
    let v = a
        .call_method("scale", &[Value::Int(2), Value::Int(3)])
        .unwrap();
    assert!(matches!(v, Value::Float(x) if x == 6.0));
    let kw = [("_2".to_string(), Value::Int(4))];
    let v = a
        .call_method_with("scale", &[Value::Float(0.5)], &kw)
        .unwrap();
    assert!(matches!(v, Value::Float(x) if x == 2.0));
}

#[test]
fn errors_are_pytorchs() {
    acc_class();
    let a = instantiate("classes_test::Acc", &[]).unwrap();
    let e = a.call_method("nope", &[]).unwrap_err();
    assert_eq!(e.python_class(), "AttributeError");
    assert_eq!(
        e.to_string(),
        "__torch__.torch.classes.classes_test.Acc (of Python compilation unit at: 0) does not have a field with name 'nope'"
    );
    let e = a.call_method("size", &[Value::Int(1)]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "size() expected at most 1 argument(s) but received 2 argument(s). Declaration: size(__torch__.torch.classes.classes_test.Acc _0) -> int _0"
    );
    let e = a.call_method("push", &[Value::Int(1)]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "push() Expected a value of type 'Tensor' for argument '_1' but instead found type 'int'.\nPosition: 1\nValue: 1\nDeclaration: push(__torch__.torch.classes.classes_test.Acc _0, Tensor _1) -> NoneType _0\nCast error details: Unable to cast 1 to Tensor"
    );
    let e = instantiate("classes_test::Nope", &[]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "Tried to instantiate class 'classes_test.Nope', but it does not exist! Ensure that it is registered via torch::class_"
    );
    // A second registration under one name is an error, never a silent winner.
    let e = Class::<Acc>::new("classes_test", "Acc")
        .register()
        .unwrap_err();
    assert!(e.to_string().contains("is already registered"), "{e}");
    let e = Class::<Acc>::new("classes_test", "Twice")
        .def("f", |_: &Acc| ())
        .def("f", |_: &Acc| 1i64)
        .register()
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "method 'f' of class 'classes_test.Twice' is defined twice"
    );
    // An object is made only for its class's Rust type.
    assert!(acc_class().wrap(5i64).is_err());
}
