use super::table::SHAPES;
use super::*;
use crate::Tensor;

fn t() -> Value {
    Value::Tensor(Tensor::zeros(
        &[2, 3],
        crate::DType::Float32,
        crate::Device::Cpu,
    ))
}

fn err(sigs: &[&str], args: &[Value], kwargs: &[(&str, Value)]) -> String {
    let p = PythonArgParser::new(sigs).unwrap();
    let kw: Vec<(String, Value)> = kwargs
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect();
    p.parse(args, &kw).unwrap_err().to_string()
}

const ADD: &str = "add(Tensor input, Tensor other, *, Scalar alpha=1, Tensor out=None)";

#[test]
fn parses_signatures() {
    let s = FunctionSignature::parse(
        "max(Tensor input, int64_t dim, bool keepdim=False, *, TensorList[2] out=None)",
    )
    .unwrap();
    assert_eq!((s.min_args, s.max_pos_args, s.max_args), (2, 3, 4));
    assert_eq!(s.params[3].size, 2);
    assert!(s.params[3].keyword_only && s.params[3].allow_none);
    let s = FunctionSignature::parse("f(Scalar a=0x10, Scalar b=1.5, int64_t reduction=at::Reduction::Mean, IntArrayRef[2] k=1, c10::string_view s=\"a\\tb\")|hidden").unwrap();
    assert_eq!(
        s.params[0].default,
        ParamDefault::Scalar(crate::Scalar::Int(16))
    );
    assert_eq!(
        s.params[1].default,
        ParamDefault::Scalar(crate::Scalar::Float(1.5))
    );
    assert_eq!(s.params[2].default, ParamDefault::Int(0));
    assert_eq!(s.params[3].default, ParamDefault::IntList(vec![1, 1]));
    assert_eq!(s.params[4].default, ParamDefault::Str("a\tb".into()));
    assert!(s.hidden && !s.deprecated);
    assert_eq!(
        FunctionSignature::parse("f(Foo x)").unwrap_err(),
        "FunctionParameter(): invalid type string: Foo"
    );
    assert_eq!(
        FunctionSignature::parse("f(Tensor x=1)").unwrap_err(),
        "default value for Tensor must be none, got: 1"
    );
    assert_eq!(
        FunctionSignature::parse("f(IntArrayRef x=1)").unwrap_err(),
        "Incorrect size of IntArrayRef: 0"
    );
    assert_eq!(
        FunctionSignature::parse(ADD).unwrap().display(),
        "(Tensor input, Tensor other, *, Number alpha = 1, Tensor out = None)"
    );
}

#[test]
fn error_messages() {
    // A
    assert_eq!(
        err(
            &["abs(Tensor input, *, Tensor out=None)"],
            &[t(), Value::Int(1)],
            &[]
        ),
        "abs() takes 1 positional argument but 2 were given"
    );
    assert_eq!(
        err(&["f(Tensor input, int64_t d=0)"], &[t(), t(), t()], &[]),
        "f() takes from 1 to 2 positional arguments but 3 were given"
    );
    // B (inverted plural)
    assert_eq!(
        err(&["neg(Tensor input, *, Tensor out=None)"], &[], &[]),
        "neg() missing 1 required positional arguments: \"input\""
    );
    // C, D
    assert_eq!(
        err(
            &["mm(Tensor input, Tensor mat2, *, Tensor out=None)"],
            &[t(), Value::Int(2)],
            &[]
        ),
        "mm(): argument 'mat2' (position 2) must be Tensor, not int"
    );
    assert_eq!(
        err(
            &["sum(Tensor input, IntArrayRef[1]? dim, bool keepdim=False)"],
            &[t(), Value::Int(1)],
            &[("keepdim", Value::None)]
        ),
        "sum(): argument 'keepdim' must be bool, not NoneType"
    );
    // C'
    assert_eq!(err(&["amax(Tensor input, IntArrayRef[1] dim={}, bool keepdim=False)"], &[t(), Value::List(vec![Value::Float(1.0)].into())], &[]), "amax(): argument 'dim' (position 2) must be tuple of ints, but found element of type float at pos 0");
    // E
    assert_eq!(
        err(&[ADD], &[t(), t()], &[("bogus", Value::Int(1))]),
        "add() got an unexpected keyword argument 'bogus'"
    );
    assert_eq!(
        err(&[ADD], &[t(), t()], &[("input", t())]),
        "add() got multiple values for argument 'input'"
    );
    // F
    assert_eq!(
        err(
            &["cat(TensorList tensors, int64_t dim=0)"],
            &[Value::List(vec![t(), Value::Int(1)].into())],
            &[]
        ),
        "expected Tensor as element 1 in argument 0, but got int"
    );
    // G
    let zeros = "zeros(SymIntArrayRef size, *, Tensor out=None, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=False, bool? requires_grad=False)";
    assert_eq!(err(&[zeros], &[Value::Int(2), Value::Str("a".into())], &[]), "zeros(): argument 'size' failed to unpack the object at pos 2 with error \"type must be tuple of ints,but got str\"");
    assert_eq!(
        err(&[zeros], &[Value::Str("a".into()), Value::Int(2)], &[]),
        "zeros() takes 1 positional argument but 2 were given"
    );
    // I, single signature, both forms
    let tadd = "add(Tensor other, *, Scalar alpha=1)";
    assert_eq!(err(&[tadd, "add(Scalar alpha, Tensor other)|deprecated"], &[t(), t(), t()], &[]), "add() received an invalid combination of arguments - got (Tensor, !Tensor!, !Tensor!), but expected (Tensor other, *, Number alpha = 1)");
    assert_eq!(err(&[tadd, "add(Scalar alpha, Tensor other)|deprecated"], &[t(), t(), t()], &[("alpha", Value::Int(2))]), "add() received an invalid combination of arguments - got unrecognized keyword arguments: alpha");
    // I, several signatures, with detail lines
    let max = [
        "max(Tensor input, *, Tensor out=None)",
        "max(Tensor input, Tensor other, *, Tensor out=None)",
        "max(Tensor input, int64_t dim, bool keepdim=False, *, TensorList[2] out=None)",
    ];
    let m = err(&max, &[t(), Value::Int(1), Value::Str("a".into())], &[]);
    assert!(m.starts_with("max() received an invalid combination of arguments - got (Tensor, int, str), but expected one of:\n * (Tensor input, *, Tensor out = None)\n      didn't match because some of the arguments have invalid types: (Tensor, !int!, !str!)\n"), "{m}");
    assert!(m.ends_with('\n'));
}

#[test]
fn varargs_aliases_and_numbers() {
    let p = PythonArgParser::new(&["permute(IntArrayRef dims)"]).unwrap();
    let r = p.parse(&[Value::Int(1), Value::Int(0)], &[]).unwrap();
    assert!(matches!(&r.values[0], Value::IntList(v) if v == &[1, 0]));
    let r = PythonArgParser::new(&["view(IntArrayRef size)"])
        .unwrap()
        .parse(&[Value::Int(6), Value::Bool(true)], &[])
        .unwrap();
    assert!(matches!(&r.values[0], Value::IntList(v) if v == &[6, 1]));
    let p = PythonArgParser::new(&["sum(Tensor input, IntArrayRef[1]? dim, bool keepdim=False)"])
        .unwrap();
    let kw = vec![
        ("a".to_string(), t()),
        ("axis".to_string(), Value::Int(1)),
        ("keepdims".to_string(), Value::Bool(true)),
    ];
    let r = p.parse(&[], &kw).unwrap();
    assert!(matches!(&r.values[1], Value::IntList(v) if v == &[1]));
    assert!(matches!(r.values[2], Value::Bool(true)));
    // numbers as tensors only for allow-listed names
    assert!(PythonArgParser::new(&[ADD])
        .unwrap()
        .parse(&[t(), Value::Int(2)], &[])
        .is_ok());
}

#[test]
fn builtin_add_binds_and_normalizes() {
    let table = ApiTable::builtin();
    let schema_of = |n: &str| crate::OpId::from_name(n).map(|id| id.schema());
    let b = parse_and_bind(
        &table,
        &schema_of,
        "torch.add",
        vec![t(), Value::Int(2)],
        vec![("alpha".into(), Value::Int(2))],
    )
    .unwrap();
    assert_eq!(b.overload, "add.Tensor");
    assert!(matches!(b.values[1], Value::Int(2))); // a wrapped number stays a number
    let b = parse_and_bind(&table, &schema_of, "Tensor.add", vec![t(), t()], vec![]).unwrap();
    assert!(matches!(b.values[2], Value::Int(1)));
}

#[test]
fn fast_path_binds_as_the_slow_path() {
    let table = ApiTable::builtin();
    let schema_of = |n: &str| crate::OpId::from_name(n).map(|id| id.schema());
    let a = t();
    let kw = |k: &str, v: Value| (k.to_string(), v);
    type Call<'a> = (&'a str, Vec<Value>, Vec<(String, Value)>);
    let calls: Vec<Call> = vec![
        (
            "torch.add",
            vec![a.clone(), a.clone()],
            vec![kw("alpha", Value::Int(2))],
        ),
        ("torch.add", vec![a.clone(), Value::Int(2)], vec![]),
        (
            "torch.add",
            vec![a.clone(), a.clone()],
            vec![kw("out", a.clone())],
        ),
        (
            "torch.add",
            vec![a.clone()],
            vec![kw("other", a.clone()), kw("alpha", Value::Float(0.5))],
        ),
        ("Tensor.add", vec![a.clone(), a.clone()], vec![]),
        (
            "Tensor.add",
            vec![a.clone(), Value::Float(1.5)],
            vec![kw("alpha", Value::Bool(true))],
        ),
        ("torch.mul", vec![a.clone(), a.clone()], vec![]),
        (
            "Tensor.add",
            vec![a.clone(), Value::Str("x".into())],
            vec![],
        ),
        (
            "torch.add",
            vec![a.clone(), a.clone()],
            vec![kw("beta", Value::Int(1))],
        ),
    ];
    for (api, args, kwargs) in calls {
        let binding = table.get(api).unwrap();
        let fast = parse_and_bind(&table, &schema_of, api, args.clone(), kwargs.clone());
        let slow = slow_parse_and_bind(binding, &schema_of, api, args, kwargs);
        let show = |r: Result<Bound<'_>, Error>| match r {
            Ok(b) => format!("{} {:?}", b.overload, b.values),
            Err(e) => e.to_string(),
        };
        assert_eq!(show(fast), show(slow), "{api}");
    }
}

/// A call's outcome, comparable: result tensors' dtype, shape and values, or
/// the error message.
fn outcome(r: &Result<Vec<Value>, Error>) -> String {
    match r {
        Ok(values) => values
            .iter()
            .map(|v| match v {
                Value::Tensor(t) => format!(
                    "{:?} {:?} {:?}",
                    t.dtype(),
                    t.shape(),
                    t.to_vec::<f32>().map_err(|e| e.to_string())
                ),
                v => format!("{v:?}"),
            })
            .collect::<Vec<_>>()
            .join("; "),
        Err(e) => format!("error: {e}"),
    }
}

#[test]
fn shape_cache_gives_the_uncached_results() {
    let a = Value::Tensor(Tensor::from_vec(vec![1.5f32, -2.0], &[2]).unwrap());
    let b = Value::Tensor(Tensor::from_vec(vec![2.25f32, 4.0], &[2]).unwrap());
    let zero_dim = Value::Tensor(Tensor::scalar(3.0f32));
    let out = || {
        Value::Tensor(Tensor::zeros(
            &[2],
            crate::DType::Float32,
            crate::Device::Cpu,
        ))
    };
    type Call = (&'static str, Vec<Value>, Vec<(&'static str, Value)>, bool);
    let calls: Vec<Call> = vec![
        // (api, positionals, keywords, whether the shape is cached)
        (
            "torch.add",
            vec![a.clone(), b.clone()],
            vec![("alpha", Value::Int(2))],
            true,
        ),
        ("torch.add", vec![a.clone(), b.clone()], vec![], true),
        (
            "torch.add",
            vec![a.clone(), b.clone()],
            vec![("alpha", Value::Float(0.5))],
            true,
        ),
        (
            "Tensor.add",
            vec![a.clone(), b.clone()],
            vec![("alpha", Value::Int(3))],
            true,
        ),
        ("torch.mul", vec![a.clone(), b.clone()], vec![], true),
        // A 0-dim tensor for a number: accepted by its contents, not its kind.
        (
            "torch.add",
            vec![a.clone(), b.clone()],
            vec![("alpha", zero_dim)],
            false,
        ),
        // out=: value-dependent checks.
        (
            "torch.add",
            vec![a.clone(), b.clone()],
            vec![("out", out())],
            false,
        ),
        // Errors take the slow path every time.
        (
            "torch.add",
            vec![a.clone(), b.clone()],
            vec![("alpha", Value::Str("x".into()))],
            false,
        ),
        ("torch.add", vec![a.clone()], vec![], false),
        // Lists are never cached.
        (
            "torch.sum",
            vec![a.clone(), Value::IntList(vec![0])],
            vec![],
            false,
        ),
    ];
    for (api, args, kwargs, cached) in calls {
        let what = format!("{api}({args:?}, {kwargs:?})");
        // The uncached reference: a fresh table, first call.
        let fresh = ApiTable::builtin();
        let reference = outcome(&call_dispatch_unchecked(
            &fresh,
            api,
            args.clone(),
            kwargs.clone(),
        ));
        let table = ApiTable::builtin();
        let shapes = || table.get(api).unwrap().shapes.len();
        for round in 0..3 {
            let got = outcome(&call_dispatch_unchecked(
                &table,
                api,
                args.clone(),
                kwargs.clone(),
            ));
            assert_eq!(got, reference, "{what}, call {round}");
            assert_eq!(shapes(), usize::from(cached), "{what}, call {round}");
        }
        // Keyword names given as `String` find the same shape.
        let kw: Vec<(String, Value)> = kwargs
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect();
        let got = outcome(&call_dispatch_unchecked(&table, api, args.clone(), kw));
        assert_eq!(got, reference, "{what}, String keywords");
        assert_eq!(shapes(), usize::from(cached), "{what}");
    }
}

#[test]
fn shape_cache_tells_shapes_apart() {
    let a = Value::Tensor(Tensor::from_vec(vec![1.5f32, -2.0], &[2]).unwrap());
    let b = Value::Tensor(Tensor::from_vec(vec![2.25f32, 4.0], &[2]).unwrap());
    let table = ApiTable::builtin();
    let fresh = ApiTable::builtin();
    // Same kinds and counts, different keyword names / kinds / counts, interleaved.
    type Call = (Vec<Value>, Vec<(&'static str, Value)>);
    let calls: Vec<Call> = vec![
        (vec![a.clone(), b.clone()], vec![("alpha", Value::Int(2))]),
        (
            vec![a.clone(), b.clone()],
            vec![("alpha", Value::Float(2.5))],
        ),
        (vec![a.clone(), b.clone()], vec![("alphb", Value::Int(2))]),
        (
            vec![a.clone()],
            vec![("other", b.clone()), ("alpha", Value::Int(2))],
        ),
        (
            vec![a.clone()],
            vec![("alpha", Value::Int(2)), ("other", b.clone())],
        ),
        (vec![a.clone(), Value::Int(4)], vec![]),
        (
            vec![a.clone(), b.clone()],
            vec![("alpha", Value::Bool(true))],
        ),
    ];
    for round in 0..2 {
        for (args, kwargs) in &calls {
            let r = outcome(&call_dispatch_unchecked(
                &fresh.clone(),
                "torch.add",
                args.clone(),
                kwargs.clone(),
            ));
            let got = outcome(&call_dispatch_unchecked(
                &table,
                "torch.add",
                args.clone(),
                kwargs.clone(),
            ));
            assert_eq!(got, r, "{args:?} {kwargs:?}, round {round}");
        }
    }
    assert!(table.get("torch.add").unwrap().shapes.len() <= SHAPES);
}
