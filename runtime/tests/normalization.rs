//! Schema-level resolution (`torch.ops.aten.<name>(...)` against a schema file
//! loaded at run time) followed by normalization, as a `__torch_dispatch__`
//! handler sees the call, on PyTorch's own schema file.

use opforge::normalize::normalize;
use opforge::packet::{py_float, py_repr};
use opforge::registry::Registry;
use opforge::{DType, Device, Tensor, Value};

/// Schema-level calls and what a `__torch_dispatch__` handler receives.
#[test]
fn normalization_examples() {
    let yaml = r#"
- func: add.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor
- func: sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor
- func: clamp(Tensor self, Scalar? min=None, Scalar? max=None) -> Tensor
- func: elu(Tensor self, Scalar alpha=1, Scalar scale=1, Scalar input_scale=1) -> Tensor
- func: hardtanh(Tensor self, Scalar min_val=-1, Scalar max_val=1) -> Tensor
- func: linalg_vector_norm(Tensor self, Scalar ord=2, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor
- func: max_pool2d_with_indices(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, int[2] dilation=1, bool ceil_mode=False) -> (Tensor, Tensor)
- func: topk(Tensor self, SymInt k, int dim=-1, bool largest=True, bool sorted=True) -> (Tensor values, Tensor indices)
- func: var.correction(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool keepdim=False) -> Tensor
- func: zeros(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor
  dispatch:
    CompositeExplicitAutograd: zeros
- func: arange.start_step(Scalar start, Scalar end, Scalar step=1, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor
  dispatch:
    CompositeExplicitAutograd: arange
- func: select.int(Tensor(a) self, int dim, SymInt index) -> Tensor(a)
- func: nan_to_num(Tensor self, float? nan=None, float? posinf=None, float? neginf=None) -> Tensor
"#;
    let r = Registry::from_yaml_str("t.yaml", yaml).unwrap();
    let x = Tensor::zeros(&[2, 3], DType::Float32, Device::Meta);
    let t = || Value::Tensor(x.clone());
    let l = |xs: &[i64]| Value::List(xs.iter().map(|&i| Value::Int(i)).collect());
    let norm = |op: &str, args: Vec<Value>, kwargs: Vec<(&str, Value)>| {
        let kwargs: Vec<(String, Value)> = kwargs
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
        let res = r.resolve(op, &args, &kwargs).unwrap();
        let (a, k) = normalize(res.overload.op.unwrap(), &res.bound);
        let show = |v: &Value| match v {
            Value::Tensor(_) => "T".to_string(),
            Value::Float(f) => py_float(*f),
            other => py_repr(other),
        };
        let a: Vec<String> = a.iter().map(show).collect();
        let k: Vec<String> = k.iter().map(|(n, v)| format!("{n}={}", show(v))).collect();
        format!("({}) {{{}}}", a.join(", "), k.join(", "))
    };
    use Value::{Bool as B, Float as F, Int as I};
    assert_eq!(
        norm("aten::add.Scalar", vec![t(), I(2), I(1)], vec![]),
        "(T, 2) {}"
    );
    assert_eq!(
        norm("aten::add.Scalar", vec![t(), I(2)], vec![("alpha", F(1.0))]),
        "(T, 2, 1.0) {}"
    );
    assert_eq!(
        norm(
            "aten::sum.dim_IntList",
            vec![t(), Value::None, B(true)],
            vec![]
        ),
        "(T, None, True) {}"
    );
    assert_eq!(
        norm("aten::sum.dim_IntList", vec![t(), l(&[1]), I(1)], vec![]),
        "(T, [1], True) {}"
    );
    assert_eq!(
        norm("aten::clamp.default", vec![t(), I(0), Value::None], vec![]),
        "(T, 0) {}"
    );
    assert_eq!(
        norm("aten::elu.default", vec![t(), I(1), I(1), I(1)], vec![]),
        "(T) {}"
    );
    assert_eq!(
        norm("aten::elu.default", vec![t(), F(1.0), I(1), F(1.0)], vec![]),
        "(T, 1.0, 1, 1.0) {}"
    );
    assert_eq!(
        norm("aten::hardtanh", vec![t(), I(-1), I(1)], vec![]),
        "(T) {}"
    );
    assert_eq!(
        norm("aten::hardtanh", vec![t(), F(-1.0), F(1.0)], vec![]),
        "(T, -1.0, 1.0) {}"
    );
    assert_eq!(
        norm("aten::linalg_vector_norm", vec![t(), I(2)], vec![]),
        "(T) {}"
    );
    assert_eq!(
        norm("aten::linalg_vector_norm", vec![t(), F(2.0)], vec![]),
        "(T, 2.0) {}"
    );
    assert_eq!(
        norm(
            "aten::max_pool2d_with_indices",
            vec![t(), l(&[2, 2]), l(&[]), I(0), l(&[1])],
            vec![]
        ),
        "(T, [2, 2], [], [0, 0], [1]) {}"
    );
    assert_eq!(
        norm(
            "aten::topk",
            vec![t(), I(2), I(-1), B(true), B(true)],
            vec![]
        ),
        "(T, 2) {}"
    );
    assert_eq!(
        norm("aten::topk", vec![t()], vec![("k", I(2)), ("dim", I(0))]),
        "(T, 2, 0) {}"
    );
    assert_eq!(
        norm(
            "aten::var.correction",
            vec![t(), l(&[0])],
            vec![("keepdim", B(true))]
        ),
        "(T, [0]) {keepdim=True}"
    );
    assert_eq!(
        norm(
            "aten::zeros",
            vec![l(&[2])],
            vec![("dtype", I(6)), ("device", Value::Str("meta".into()))]
        ),
        "([2]) {dtype=torch.float32, device=device(type='meta')}"
    );
    assert_eq!(
        norm("aten::arange.start_step", vec![I(0), I(5), F(1.0)], vec![]),
        "(0, 5, 1.0) {}"
    );
    assert_eq!(
        norm("aten::select.int", vec![t(), I(0), B(true)], vec![]),
        "(T, 0, 1) {}"
    );
    assert_eq!(
        norm("aten::nan_to_num", vec![t(), I(1)], vec![]),
        "(T, 1.0) {}"
    );
    // Errors keep PyTorch's wording.
    let e = r.resolve("aten::topk", &[t()], &[]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "aten::topk() is missing value for argument 'k'. Declaration: aten::topk(Tensor self, SymInt k, int dim=-1, bool largest=True, bool sorted=True) -> (Tensor values, Tensor indices)"
    );
    let e = r
        .resolve("aten::select.int", &[t(), F(0.5), I(1)], &[])
        .unwrap_err();
    assert!(e.to_string().contains("Expected a value of type 'int' for argument 'dim' but instead found type 'float'.\nPosition: 1\nValue: 0.5\n"));
}
