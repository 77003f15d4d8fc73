//! Bad input to the runtime's boxed entry points gets an error, never an abort:
//! deeply nested values, malformed signatures. Each case runs on a 2 MiB thread,
//! as users call from worker threads, in debug and release builds alike.

use opforge::argparse::PythonArgParser;
use opforge::value::{ValueList, MAX_VALUE_DEPTH};
use opforge::{library, Tensor, Value};

/// Runs `f` on a thread with a 2 MiB stack.
fn on_small_stack<R: Send + 'static>(f: impl FnOnce() -> R + Send + 'static) -> R {
    std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(f)
        .unwrap()
        .join()
        .unwrap()
}

/// A list nested `depth` levels deep around one int.
fn nested(depth: usize) -> Value {
    let mut v = Value::Int(1);
    for _ in 0..depth {
        v = Value::List(vec![v].into());
    }
    v
}

#[test]
fn deeply_nested_values_are_refused_by_boxed_calls() {
    let msg = on_small_stack(|| {
        let t = Value::Tensor(Tensor::from_vec(vec![1.0f32], &[1]).unwrap());
        let deep = nested(24_000);
        let e = library::call("aten::add", &[t.clone(), deep.clone()], &[]).unwrap_err();
        let op = opforge::dispatch::dispatcher()
            .find("aten::add.Tensor")
            .unwrap();
        let e2 = op.call_boxed(&[t, deep]).unwrap_err();
        (e.to_string(), e2.to_string())
    });
    for m in [&msg.0, &msg.1] {
        assert!(
            m.contains("argument 1 nests lists more than 128 levels deep")
                && m.contains("MAX_VALUE_DEPTH"),
            "{m}"
        );
    }
    // At the limit, the call goes through to the parser's ordinary type error.
    let ok = on_small_stack(|| {
        let t = Value::Tensor(Tensor::from_vec(vec![1.0f32], &[1]).unwrap());
        library::call("aten::add", &[t, nested(MAX_VALUE_DEPTH)], &[])
            .unwrap_err()
            .to_string()
    });
    assert!(!ok.contains("MAX_VALUE_DEPTH"), "{ok}");
}

/// Packet resolution (`torch.ops.aten.add(...)` against a schema file loaded at
/// run time, or an operator handle) refuses lists nested deeper than the limit,
/// as the other boxed entry points do: it used to take time and memory
/// quadratic in the depth (29 s and 2.4 GB at 10,000 levels) and to abort on
/// an allocation failure at 100,000.
#[test]
fn packet_resolution_refuses_deep_lists_in_linear_time() {
    let registry = opforge::registry::Registry::from_yaml_str(
        "t.yaml",
        "- func: add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor\n",
    )
    .unwrap();
    let msgs = on_small_stack(move || {
        let t = Value::Tensor(Tensor::from_vec(vec![1.0f32], &[1]).unwrap());
        let mut msgs = Vec::new();
        for depth in [MAX_VALUE_DEPTH + 1, 10_000, 1_000_000] {
            let deep = nested(depth);
            let e = registry
                .resolve("aten::add", &[t.clone(), deep.clone()], &[])
                .unwrap_err();
            let kw = [("alpha".to_string(), deep)];
            let e2 = registry
                .resolve("aten::add.Tensor", &[t.clone(), t.clone()], &kw)
                .unwrap_err();
            msgs.push((depth, e.to_string(), e2.to_string()));
        }
        msgs
    });
    // A million levels: quadratic work could not finish (it aborted at 100,000).
    for (depth, e, e2) in msgs {
        assert!(
            e.starts_with("aten::add: argument 1 nests lists more than 128 levels deep"),
            "{depth}: {e}"
        );
        assert!(
            e2.contains("argument 'alpha' nests lists more than 128 levels deep"),
            "{e2}"
        );
    }
    // At the limit, resolution goes on to the schema's ordinary type error.
    let e = on_small_stack(|| {
        let registry = opforge::registry::Registry::from_yaml_str(
            "t.yaml",
            "- func: add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor\n",
        )
        .unwrap();
        let t = Value::Tensor(Tensor::from_vec(vec![1.0f32], &[1]).unwrap());
        registry
            .resolve("aten::add", &[t, nested(MAX_VALUE_DEPTH)], &[])
            .unwrap_err()
            .to_string()
    });
    assert!(!e.contains("MAX_VALUE_DEPTH"), "{e}");
}

#[test]
fn deep_values_clone_print_and_drop_on_a_small_stack() {
    let depth = on_small_stack(|| {
        let v = nested(1_000_000);
        let c = v.clone();
        let mut tensors = 0;
        c.for_each_tensor(&mut |_| tensors += 1);
        assert!(tensors == 0 && !c.any_tensor(&mut |_| true));
        let printed = format!("{c:?}");
        assert!(printed.contains("[...]") && printed.len() < 10_000);
        drop(v);
        c.depth()
    });
    assert_eq!(depth, 1_000_000);
    let flat: ValueList = vec![Value::Int(1), nested(2)].into();
    assert_eq!(format!("{flat:?}"), "[Int(1), List([List([Int(1)])])]");
}

#[test]
fn signatures_with_duplicate_names_are_refused() {
    let e = PythonArgParser::new(&["f(Tensor input, int64_t a, *, int64_t a=0)"]).unwrap_err();
    assert_eq!(e, "FunctionSignature(): duplicate parameter name 'a' in f");
}

#[test]
fn absurd_fixed_list_sizes_are_refused() {
    let e = PythonArgParser::new(&["f(IntArrayRef[4294967296] size=1)"]).unwrap_err();
    assert_eq!(
        e,
        "FunctionParameter(): size 4294967296 of IntArrayRef[4294967296] size exceeds the limit of 1024 elements (opforge_schema::schema::MAX_LIST_SIZE)"
    );
    assert!(PythonArgParser::new(&["f(IntArrayRef[6] size=1)"]).is_ok());
}

/// The schema text a user passes at run time (`Library::define`, a schema file
/// loaded into a `Registry`) is parsed within bounds on a 2 MiB thread: a
/// default nested 11,406 deep and `Tensor[]` repeated 32,851 times, which
/// aborted the process, are errors naming the limit.
#[test]
fn deep_schemas_at_run_time_are_errors() {
    let (define_default, define_type, registry) = on_small_stack(|| {
        let lib = opforge::library::Library::new("bad_input", opforge::library::LibraryKind::Def)
            .unwrap();
        let deep_default = format!(
            "f(Tensor self, int[] x={}1{}) -> Tensor",
            "[".repeat(11_406),
            "]".repeat(11_406)
        );
        let deep_type = format!("g(Tensor{} self) -> Tensor", "[]".repeat(32_851));
        let yaml = format!("- func: h(Tensor{} self) -> Tensor\n", "[]".repeat(32_851));
        (
            lib.define(&deep_default).unwrap_err().to_string(),
            lib.define(&deep_type).unwrap_err().to_string(),
            opforge::registry::Registry::from_yaml_str("deep.yaml", &yaml)
                .map(|_| ())
                .unwrap_err()
                .to_string(),
        )
    });
    assert!(
        define_default.starts_with("Invalid schema string `f(Tensor self, int[] x=[[[[")
            && define_default.contains("of argument `x` is not a literal of type `int[]`")
            && define_default.len() < 1_000,
        "{define_default}"
    );
    for e in [&define_type, &registry] {
        assert!(e.contains("16"), "{e}");
    }
}
