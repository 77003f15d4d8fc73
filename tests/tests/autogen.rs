//! The operators the generator adds or writes kernels for: `*_copy` views
//! (their view's values in a fresh contiguous storage), the functional and
//! out= variants `autogen:` adds (`zero` leaves its input alone, `zero.out`
//! writes and resizes `out`), and the hand-written `select_scatter` /
//! `slice_scatter`, whose values and messages are PyTorch 2.15's (recorded
//! from `torch.select_scatter` / `torch.slice_scatter` on
//! `torch.arange(12.).reshape(3, 4)`).

use opforge::dispatch::dispatcher;
use opforge::tables::{BaseType, Ty};
use opforge::warnings::catch_warnings;
use opforge::{ops, DType, Device, Scalar, Tensor, Value, OPS};

/// `torch.arange(12.).reshape(3, 4)`.
fn a() -> Tensor {
    Tensor::from_vec((0..12).map(|i| i as f32).collect::<Vec<_>>(), &[3, 4]).unwrap()
}

fn values(t: &Tensor) -> Vec<f32> {
    t.to_vec::<f32>().unwrap()
}

/// An argument of a `*_copy` operator (and of its view), by name: `self` a
/// 3×4 tensor (1×4 for `expand`, so it has something to expand), a
/// permutation, the same shape, dimension 1, index / start 1, end 3.
fn view_arg(op: &str, name: &str, ty: &Ty) -> Value {
    match name {
        "self" if op.starts_with("expand") => {
            Value::Tensor(Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[1, 4]).unwrap())
        }
        "self" => Value::Tensor(a()),
        "size" | "shape" if op.starts_with("expand") => Value::IntList(vec![3, 4]),
        "size" | "shape" => Value::IntList(vec![4, 3]),
        "dims" => Value::IntList(vec![1, 0]),
        // `as_strided`: the transpose of `self`.
        "stride" => Value::IntList(vec![1, 4]),
        "storage_offset" => Value::Int(0),
        "dim" | "index" | "start" => Value::Int(1),
        "dim0" => Value::Int(0),
        "dim1" | "offset" => Value::Int(1),
        "dim2" => Value::Int(0),
        "end" => Value::Int(3),
        "step" => Value::Int(1),
        "implicit" => Value::Bool(false),
        _ => panic!("{op}: no test value for {name}: {ty}"),
    }
}

/// Every operator tagged `view_copy` named `<view>_copy` computes its view's
/// values into a new contiguous tensor over a storage of its own.
#[test]
fn view_copies_are_contiguous_copies_of_their_views() {
    let copies: Vec<_> = OPS
        .iter()
        .filter(|s| s.tags.contains(&"view_copy") && !s.tags.contains(&"generated"))
        .filter(|s| s.base.ends_with("_copy"))
        .collect();
    assert!(copies.len() >= 10, "{} view_copy operators", copies.len());
    for c in copies {
        let view_name = match c.overload {
            "" => c.base.trim_end_matches("_copy").to_string(),
            o => format!("{}.{o}", c.base.trim_end_matches("_copy")),
        };
        let view = dispatcher().find(&view_name).expect("the view exists");
        let args: Vec<Value> = c
            .args
            .iter()
            .map(|a| view_arg(c.name, a.name, &a.ty))
            .collect();
        let input = match &args[0] {
            Value::Tensor(t) => t.clone(),
            other => panic!("{}: self is {other:?}", c.name),
        };
        // Every result (`unbind` has several).
        let tensors = |vs: Vec<Value>| -> Vec<Tensor> {
            match vs.into_iter().next() {
                Some(Value::Tensor(t)) => vec![t],
                Some(Value::TensorList(ts)) => ts,
                other => panic!("{}: result {other:?}", c.name),
            }
        };
        let views = tensors(view.call_boxed(&args).unwrap());
        let copies = tensors(
            dispatcher()
                .find(c.name)
                .unwrap()
                .call_boxed(&args)
                .unwrap(),
        );
        assert_eq!(copies.len(), views.len(), "{}", c.name);
        assert!(!views.is_empty(), "{}", c.name);
        for (v, copy) in views.iter().zip(&copies) {
            assert!(
                v.storage().ptr_eq(&input.storage()),
                "{view_name} is a view"
            );
            assert_eq!(copy.shape(), v.shape(), "{}", c.name);
            assert_eq!(values(copy), values(v), "{}", c.name);
            assert!(
                copy.is_contiguous(),
                "{}: strides {:?}",
                c.name,
                copy.strides()
            );
            assert!(!copy.storage().ptr_eq(&input.storage()), "{}", c.name);
            assert_eq!(copy.storage_offset(), 0, "{}", c.name);
        }
    }
}

/// PyTorch: `torch.permute_copy(a, (1, 0))` and `torch.slice_copy(a, 1, 1, 3)`.
#[test]
fn view_copies_match_pytorch() {
    let p = ops::permute_copy(&a(), &[1, 0]).unwrap();
    assert_eq!(
        values(&p),
        [0., 4., 8., 1., 5., 9., 2., 6., 10., 3., 7., 11.]
    );
    assert_eq!(p.strides(), [3, 1]);
    let s = ops::slice_copy_Tensor(&a(), 1, Some(1), Some(3), 1).unwrap();
    assert_eq!(values(&s), [1., 2., 5., 6., 9., 10.]);
    assert_eq!(s.strides(), [2, 1]);
    let e = ops::expand_copy(
        &Tensor::from_vec(vec![1.0f32, 2.0], &[2]).unwrap(),
        &[3, 2],
        false,
    )
    .unwrap();
    assert_eq!(e.strides(), [2, 1]);
}

#[test]
fn select_scatter_matches_pytorch() {
    let src = Tensor::from_vec(vec![-1.0f32, -2.0, -3.0], &[3]).unwrap();
    let input = a();
    let r = ops::select_scatter(&input, &src, 1, -1).unwrap();
    assert_eq!(
        values(&r),
        [0., 1., 2., -1., 4., 5., 6., -2., 8., 9., 10., -3.]
    );
    assert_eq!(values(&input), values(&a()), "self is not written");
    let ones4 = Tensor::full(&[4], Scalar::Float(1.0), DType::Float32, Device::Cpu);
    let cases = [
        (
            1,
            0,
            "RuntimeError",
            "expected src to have a size equal to the slice of self. src size = [4], slice size = [3]",
        ),
        (
            0,
            3,
            "IndexError",
            "select(): index 3 out of range for tensor of size [3, 4] at dimension 0",
        ),
        (
            2,
            0,
            "IndexError",
            "Dimension out of range (expected to be in range of [-2, 1], but got 2)",
        ),
    ];
    for (dim, index, class, message) in cases {
        let e = ops::select_scatter(&a(), &ones4, dim, index).unwrap_err();
        assert_eq!((e.python_class(), e.to_string().as_str()), (class, message));
    }
}

#[test]
fn slice_scatter_matches_pytorch() {
    let nines = Tensor::full(&[3, 2], Scalar::Float(9.0), DType::Float32, Device::Cpu);
    let r = ops::slice_scatter(&a(), &nines, 1, Some(1), None, 2).unwrap();
    assert_eq!(
        values(&r),
        [0., 9., 2., 9., 4., 9., 6., 9., 8., 9., 10., 9.]
    );
    let zeros = Tensor::zeros(&[1, 4], DType::Float32, Device::Cpu);
    let r = ops::slice_scatter(&a(), &zeros, 0, Some(-1), None, 1).unwrap();
    assert_eq!(values(&r), [0., 1., 2., 3., 4., 5., 6., 7., 0., 0., 0., 0.]);
    let ones = Tensor::full(&[3, 4], Scalar::Float(1.0), DType::Float32, Device::Cpu);
    let e = ops::slice_scatter(&a(), &ones, 1, Some(0), Some(2), 1).unwrap_err();
    assert_eq!(
        (e.python_class(), e.to_string().as_str()),
        (
            "RuntimeError",
            "expected src to have a size equal to the slice of self. src size = [3, 4], slice size = [3, 2]"
        )
    );
    let e = ops::slice_scatter(&a(), &nines, 1, Some(0), Some(2), 0).unwrap_err();
    assert_eq!(e.to_string(), "slice step must be positive");
}

/// `zero` (generated from `zero_`): zeros in a new tensor, the input untouched.
#[test]
fn generated_functional_variant_leaves_its_input_alone() {
    let input = a();
    let version = input.storage().version();
    let z = ops::zero(&input).unwrap();
    assert_eq!(values(&z), [0.0; 12]);
    assert_eq!(z.shape(), [3, 4]);
    assert_eq!(values(&input), values(&a()));
    assert_eq!(input.storage().version(), version);
    assert!(!z.storage().ptr_eq(&input.storage()));
    // `uniform` (generated from `uniform_`) draws what `uniform_` draws on a
    // clone, from the same generator state.
    opforge::manual_seed(7);
    let u = ops::uniform(&input, 0.0, 1.0, None).unwrap();
    opforge::manual_seed(7);
    let mut c = input.deep_clone().unwrap();
    ops::uniform_(&mut c, 0.0, 1.0, None).unwrap();
    assert_eq!(values(&u), values(&c));
    assert_eq!(values(&input), values(&a()));
}

/// `zero.out` and `clone.out` (generated): `out` is resized to the result's
/// shape (with PyTorch's warning when it had elements) and written.
#[test]
fn generated_out_variant_writes_and_resizes_out() {
    let mut out = Tensor::zeros(&[0], DType::Float32, Device::Cpu);
    let (r, warnings) = catch_warnings(|| ops::clone_out(&a(), None, &mut out));
    let r = r.unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(out.shape(), [3, 4]);
    assert_eq!(values(&out), values(&a()));
    assert!(r.storage().ptr_eq(&out.storage()), "returns `out`");

    let mut out = Tensor::full(&[5], Scalar::Float(1.0), DType::Float32, Device::Cpu);
    let (r, warnings) = catch_warnings(|| ops::zero_out(&a(), &mut out));
    r.unwrap();
    assert_eq!(out.shape(), [3, 4]);
    assert_eq!(values(&out), [0.0; 12]);
    assert_eq!(
        warnings,
        ["An output with one or more elements was resized since it had shape [5], which does not match the required output shape [3, 4]. This behavior is deprecated, and in a future PyTorch release outputs will not be resized unless they have zero elements. You can explicitly reuse an out tensor t by resizing it, inplace, to zero elements with t.resize_(0)."]
    );

    // The dtype of `out` must be the result's (torchgen's `copy_arg`).
    let mut out = Tensor::zeros(&[0], DType::Int64, Device::Cpu);
    let e = ops::zero_out(&a(), &mut out).unwrap_err();
    assert_eq!(
        e.to_string(),
        "Expected out tensor to have dtype float, but got long int instead"
    );
    // ... unless the functional variant takes it from `out` (`zeros_like.out`).
    ops::zeros_like_out(&a(), None, &mut out).unwrap();
    assert_eq!((out.dtype(), out.shape()), (DType::Int64, vec![3, 4]));
}

/// Every operator `autogen:` names is an operator of the runtime.
#[test]
fn every_autogen_name_is_an_operator() {
    let yaml = include_str!("../../runtime/native_functions.yaml");
    let mut n = 0;
    for line in yaml.lines() {
        let Some(names) = line.strip_prefix("  autogen: ") else {
            continue;
        };
        for name in names.split(", ") {
            n += 1;
            let s = OPS
                .iter()
                .find(|s| s.name == name)
                .unwrap_or_else(|| panic!("`{name}` is named by `autogen:` but is no operator"));
            assert!(s.tags.contains(&"generated"), "{name}");
            // An out= variant ends with its `out` tensor (a factory's too:
            // `empty_strided.out`); a functional variant of an in-place
            // operator (`zero`) starts with the tensor it copies.
            let tensor = |i: usize| matches!(s.args[i].ty, Ty::Base(BaseType::Tensor));
            let last = s.args.len() - 1;
            assert!(
                (s.args[last].name == "out" && tensor(last)) || tensor(0),
                "{name}: neither an out= variant nor a functional one"
            );
        }
    }
    assert!(n >= 30, "{n} autogen names");
}
