//! Every operator of the YAML runs, boxed through the dispatcher, on CPU and on
//! meta tensors, and the meta result has the CPU result's shapes and dtypes.
//! Arguments are made from the schema: a value per type, a few per parameter
//! name where the operator needs a particular one (a permutation for `dims`, a
//! bool `condition`, an int64 `index`, batches of matrices for `bmm`, class
//! indices for the losses' `target` and `one_hot`), and for a `*_scatter`
//! operator's `src` the view it is written into (`select_scatter`'s is
//! `select.int` of its `self`, `dim` and `index`).

use opforge::dispatch::dispatcher;
use opforge::tables::{ArgSchema, BaseType, Ty};
use opforge::{DType, Device, Tensor, Value, OPS};

fn tensor(dtype: DType, device: Device) -> Tensor {
    let t = Tensor::from_vec(vec![1.0f64, 2.0, 3.0, 4.0], &[2, 2]).unwrap();
    let t = t.to_dtype_copy(dtype).unwrap();
    if device == Device::Meta {
        Tensor::zeros(&t.shape(), dtype, Device::Meta)
    } else {
        t
    }
}

/// An int64 tensor of class indices `[1, 0]`.
fn classes(device: Device) -> Value {
    Value::Tensor(match device {
        Device::Meta => Tensor::zeros(&[2], DType::Int64, Device::Meta),
        _ => Tensor::from_vec(vec![1i64, 0], &[2]).unwrap(),
    })
}

fn arg(op: &str, a: &ArgSchema, device: Device) -> Value {
    let t = |d| Value::Tensor(tensor(d, device));
    let loss = op.starts_with("nll_loss") || op.starts_with("cross_entropy");
    // Class-index targets, no class weights, a 0-dim total weight and
    // per-sample gradients (reduction 0) for the nll / cross-entropy losses;
    // an int64 input for one_hot.
    match (a.name, loss) {
        ("target", true) => return classes(device),
        ("weight", true) => return Value::None,
        ("total_weight", _) => return Value::Tensor(Tensor::zeros(&[], DType::Float32, device)),
        ("grad_output", true) => return Value::Tensor(Tensor::zeros(&[2], DType::Float32, device)),
        ("label_smoothing", _) => return Value::Float(0.0),
        ("self", _) if op == "one_hot" => return classes(device),
        ("num_classes", _) => return Value::Int(3),
        ("input_dtype", _) => return Value::DType(DType::Float32),
        ("end", _) if op.starts_with("lerp") => return t(DType::Float32),
        // `gelu`'s approximation is `'none'` or `'tanh'`.
        ("approximate", _) => return Value::Str("tanh".into()),
        // The bitwise operators take integers and bool only.
        ("self" | "other", _) if op.starts_with("bitwise_") => {
            return match a.ty {
                Ty::Base(BaseType::Scalar) => Value::Int(3),
                _ => t(DType::Int64),
            };
        }
        _ => {}
    }
    let base = match a.ty {
        Ty::Optional(inner) => match *inner {
            Ty::Base(
                BaseType::ScalarType
                | BaseType::Layout
                | BaseType::Device
                | BaseType::MemoryFormat
                | BaseType::Generator
                | BaseType::Bool,
            ) => return Value::None,
            other => other,
        },
        other => other,
    };
    match (a.name, base) {
        ("condition", _) => t(DType::Bool),
        ("index", Ty::Base(BaseType::Tensor)) => Value::Tensor(
            Tensor::from_vec(vec![1i64, 0], &[2])
                .unwrap()
                .to_dtype_copy(DType::Int64)
                .map(|x| {
                    if device == Device::Meta {
                        Tensor::zeros(&[2], DType::Int64, Device::Meta)
                    } else {
                        x
                    }
                })
                .unwrap(),
        ),
        // `fill`'s value: a 0-dim tensor.
        ("value", Ty::Base(BaseType::Tensor)) => {
            Value::Tensor(Tensor::zeros(&[], DType::Float32, device))
        }
        ("out", _) => Value::Tensor(Tensor::zeros(&[0], out_dtype(op), device)),
        ("dims", _) => Value::IntList(vec![1, 0]),
        ("size" | "shape", _) => Value::IntList(vec![2, 2]),
        ("stride", _) => Value::IntList(vec![2, 1]),
        ("dim2", _) => Value::Int(1),
        ("dim", Ty::List(..)) => Value::IntList(vec![0]),
        ("dtype", Ty::Base(BaseType::ScalarType)) => Value::DType(DType::Float64),
        ("end", _) => Value::Int(4),
        ("step", _) => Value::Int(1),
        ("start", _) => Value::Int(0),
        // Vectors.
        ("self" | "tensor", Ty::Base(BaseType::Tensor)) if op == "dot" => {
            Value::Tensor(Tensor::zeros(&[2], DType::Float32, device))
        }
        ("vec", Ty::Base(BaseType::Tensor)) => {
            Value::Tensor(Tensor::zeros(&[2], DType::Float32, device))
        }
        // Batches of matrices.
        ("self" | "mat2", Ty::Base(BaseType::Tensor)) if op.starts_with("bmm") => {
            let m = tensor(DType::Float32, device);
            Value::Tensor(
                opforge::ops::expand(&opforge::ops::unsqueeze(&m, 0).unwrap(), &[3, 2, 2], false)
                    .unwrap(),
            )
        }
        (_, Ty::Base(BaseType::Tensor)) => t(DType::Float32),
        (_, Ty::List(elem, _)) if matches!(*elem, Ty::Base(BaseType::Tensor)) => {
            Value::TensorList(vec![
                tensor(DType::Float32, device),
                tensor(DType::Float32, device),
            ])
        }
        (_, Ty::Base(BaseType::Int | BaseType::SymInt)) => Value::Int(0),
        (_, Ty::Base(BaseType::Float)) => Value::Float(1.0),
        (_, Ty::Base(BaseType::Bool)) => Value::Bool(false),
        (_, Ty::Base(BaseType::Scalar)) => Value::Float(2.0),
        (_, Ty::Base(BaseType::Str)) => Value::Str("trunc".into()),
        (_, Ty::Base(BaseType::MemoryFormat)) => {
            Value::MemoryFormat(opforge::MemoryFormat::Contiguous)
        }
        (n, t) => panic!("{op}: no test value for {n}: {t}"),
    }
}

/// The higher-order operators of custom classes (`call_torchbind`,
/// `with_effects`) take objects and operators, not values made from their
/// schemas: their tests are `runtime/tests/fake_classes.rs`,
/// `method_calls.rs` and `my_ops`'.
fn higher_order(s: &opforge::tables::OpSchema) -> bool {
    opforge::value::is_higher_order(s)
}

/// Comparisons, `any` and the tests (`isnan`) write bool; `argmax`,
/// `argmin` and the bitwise operators int64; everything else float32.
fn out_dtype(op: &str) -> DType {
    let base = op.split('.').next().unwrap_or(op);
    match base {
        "eq" | "ne" | "lt" | "le" | "gt" | "ge" | "any" | "isnan" | "isinf" => DType::Bool,
        "argmax" | "argmin" | "bitwise_not" | "bitwise_and" | "bitwise_or" | "bitwise_xor" => {
            DType::Int64
        }
        "arange" => DType::Int64,
        _ => DType::Float32,
    }
}

/// The arguments of operator `schema` on `device`, by [`arg`], a `*_scatter`
/// operator's `src` made by its view ([`scatter_src`]).
fn args(schema: &opforge::tables::OpSchema, device: Device) -> Vec<Value> {
    let mut args: Vec<Value> = schema
        .args
        .iter()
        .map(|a| arg(schema.name, a, device))
        .collect();
    // Factories take their device from the `device` argument.
    if let Some(i) = schema.args.iter().position(|a| a.name == "device") {
        args[i] = Value::Device(device);
    }
    if let Some(i) = schema.args.iter().position(|a| a.name == "src") {
        if let Some(src) = scatter_src(schema, &args) {
            args[i] = src;
        }
    }
    args
}

/// For `<view>_scatter` (and its out= variant): the view operator `<view>.*`
/// whose arguments are all arguments of the scatter, called on them: the
/// shape `src` must have.
fn scatter_src(schema: &opforge::tables::OpSchema, args: &[Value]) -> Option<Value> {
    let base = schema.name.split('.').next()?.strip_suffix("_scatter")?;
    let view = OPS.iter().find(|v| {
        v.name.split('.').next() == Some(base)
            && v.returns.iter().any(|r| r.alias.is_some())
            && v.args
                .iter()
                .all(|a| schema.args.iter().any(|s| s.name == a.name))
    })?;
    let values: Vec<Value> = view
        .args
        .iter()
        .map(|a| {
            let i = schema.args.iter().position(|s| s.name == a.name)?;
            Some(args[i].clone())
        })
        .collect::<Option<_>>()?;
    let op = dispatcher().find(view.name)?;
    op.call_boxed(&values).ok()?.into_iter().next()
}

fn shapes(vs: &[Value]) -> Vec<(Vec<usize>, DType)> {
    vs.iter()
        .flat_map(|v| match v {
            Value::Tensor(t) => vec![(t.shape(), t.dtype())],
            Value::TensorList(ts) => ts.iter().map(|t| (t.shape(), t.dtype())).collect(),
            _ => vec![],
        })
        .collect()
}

#[test]
fn every_operator_runs_on_cpu_and_meta() {
    let mut failures = Vec::new();
    for schema in OPS.iter().filter(|s| !higher_order(s)) {
        let op = dispatcher()
            .find(&format!("{}::{}", schema.namespace, schema.name))
            .expect("every schema is an operator");
        let mut results = Vec::new();
        for device in [Device::Cpu, Device::Meta] {
            let args = args(schema, device);
            match op.call_boxed(&args) {
                Ok(r) => results.push(shapes(&r)),
                Err(e) => failures.push(format!("{} on {device}: {e}", schema.name)),
            }
        }
        if let [cpu, meta] = results.as_slice() {
            if cpu != meta {
                failures.push(format!("{}: cpu {cpu:?} vs meta {meta:?}", schema.name));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// `opcheck`'s schema, fake tensor and typed-call families pass for every
/// operator of the YAML, on the same arguments: the alias annotations say
/// what the kernels do, the Meta kernels' strides, offsets and aliasing are
/// the CPU kernels' (an `out=` overload's `out` is made the right shape
/// first), and the typed API (which every operator has) computes what the
/// boxed call computes.
#[test]
fn opcheck_passes_for_every_operator() {
    use opforge::opcheck::{opcheck, TestUtil};
    let mut failures = Vec::new();
    for schema in OPS.iter().filter(|s| !higher_order(s)) {
        let args = args(schema, Device::Cpu);
        let name = format!("{}::{}", schema.namespace, schema.name);
        assert!(
            opforge::dispatch::typed_caller(schema).is_some(),
            "{name} has no typed caller"
        );
        let utils = [TestUtil::Schema, TestUtil::FakeTensor, TestUtil::TypedCall];
        if let Err(e) = opcheck(&name, &args, &utils) {
            failures.push(format!("{name}: {e}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
