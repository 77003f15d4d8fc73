//! Bad input to the runtime's boxed entry points gets an error, never an abort:
//! deeply nested values, malformed signatures. Each case runs on a 2 MiB thread,
//! as users call from worker threads, in debug and release builds alike.

use opforge::argparse::PythonArgParser;
use opforge::dispatch::DispatchKey;
use opforge::library::{Library, LibraryKind};
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

/// A saved graph (`Graph::from_json`, or serde through any deserializer)
/// nested deeper than `MAX_VALUE_DEPTH` is refused before anything recurses
/// over it: 100,000 levels used to abort with a stack overflow. The JSON is
/// built and leaked on a large stack (serde_json's `Value` drops
/// recursively); everything else runs on 2 MiB.
#[test]
fn deeply_nested_saved_graphs_are_refused() {
    use opforge::trace::Graph;
    use serde::Deserialize;
    use serde_json::{json, Value as Json};
    /// `f`'s value, made on a large stack and never dropped.
    fn leaked(f: impl FnOnce() -> Json + Send + 'static) -> &'static Json {
        let build = move || &*Box::leak(Box::new(f()));
        let big = std::thread::Builder::new().stack_size(1 << 30);
        big.spawn(build).unwrap().join().unwrap()
    }
    /// `inner` wrapped in `n` levels of `wrap` (moved in: `json!` would
    /// copy what it interpolates, quadratic here).
    fn nest(n: usize, inner: Json, wrap: fn(Json) -> Json) -> Json {
        (0..n).fold(inner, |j, _| wrap(j))
    }
    /// `{key: [j]}`.
    fn tagged(key: &str, j: Json) -> Json {
        Json::Object(
            [(key.to_string(), Json::Array(vec![j]))]
                .into_iter()
                .collect(),
        )
    }
    /// A saved graph calling `add(x, arg)`, with `objects`.
    fn graph(arg: Json, objects: Json) -> Json {
        let mut g = json!({
            "format": "opforge.graph", "version": 1, "tokens": 0, "objects": null,
            "nodes": [
                {"name": "x", "op": "placeholder"},
                {"name": "add", "op": "call_function", "target": "aten::add.Tensor",
                 "args": [{"node": 0}, null], "kwargs": []},
                {"name": "output", "op": "output", "args": [{"node": 1}]},
            ],
        });
        g["objects"] = objects;
        g["nodes"][1]["args"][1] = arg;
        g
    }
    let lists = |n: usize| nest(n, json!({"ints": [1]}), |j| tagged("args", j));
    let too_deep = "not a saved graph: it nests more than 128 levels deep (the limit of opforge::value::MAX_VALUE_DEPTH)";
    let deep_arg = leaked(move || graph(lists(100_000), json!([])));
    let deep_state = leaked(|| {
        let state = nest(100_000, json!(1), |j| Json::Array(vec![j]));
        let mut objects = json!([{"class": "nowhere.Queue", "state": null}]);
        objects[0]["state"] = state;
        graph(json!(1), objects)
    });
    let deep_const = leaked(|| graph(nest(100_000, Json::Null, |j| tagged("list", j)), json!([])));
    for deep in [deep_arg, deep_state, deep_const] {
        let (a, b) = on_small_stack(move || {
            let a = Graph::from_json(deep).unwrap_err().to_string();
            let b = Graph::deserialize(deep).unwrap_err().to_string();
            (a, b)
        });
        assert_eq!(a, too_deep);
        assert_eq!(b, too_deep);
    }
    // At the limit (4 levels to an argument, 2 per list, 2 for `{"ints":
    // [1]}`), the graph loads, prints and runs into the call's own error.
    let at_limit = leaked(move || graph(lists(61), json!([])));
    let over = leaked(move || graph(lists(62), json!([])));
    let (printed, refused) = on_small_stack(move || {
        let g = Graph::from_json(at_limit).unwrap();
        let x = Value::Tensor(Tensor::from_vec(vec![1.0f32], &[1]).unwrap());
        assert!(g.run(&[x]).is_err());
        (
            g.to_string(),
            Graph::from_json(over).unwrap_err().to_string(),
        )
    });
    assert!(
        printed.contains(&format!("{}1{}", "[".repeat(62), "]".repeat(62))),
        "{printed}"
    );
    assert_eq!(refused, too_deep);
}

/// A saved graph is untrusted: its node names are made FX's
/// (`_Namespace.create_name`: other characters to `_`, a leading digit
/// prefixed, Python's names suffixed, uniqueness by counters) and its
/// strings printed as Python's `repr` prints them, so the printed code is
/// the graph's and nothing else (a crafted file printed arbitrary Python
/// into `def forward(...)`). Each expected name and `repr` is Python's
/// (PyTorch 2.15's FX on Python 3.11; `self` stays reserved here, as
/// `forward`'s first parameter).
#[test]
fn saved_graphs_print_fx_names_and_python_strings() {
    use opforge::trace::Graph;
    use serde_json::json;
    let pwned = "x'); import os; os.system('echo pwned')  #";
    let call = |name: &str, target: &str, args: serde_json::Value| json!({"name": name, "op": "call_function", "target": target, "args": args, "kwargs": []});
    let mut nodes = vec![
        json!({"name": "x); import os; os.system('echo pwned')  #", "op": "placeholder"}),
        json!({"name": "1abc", "op": "placeholder"}),
        call("def", "aten::add.Tensor", json!([{"node": 0}, {"node": 1}])),
        call(
            "sum",
            "aten::div.Tensor_mode",
            json!([{"node": 2}, {"node": 1}]),
        ),
        call("a b", "aten::mul.Tensor", json!([{"node": 3}, {"node": 0}])),
        call("", "aten::neg", json!([{"node": 4}])),
        call("\u{e9}", "aten::relu", json!([{"node": 5}])),
        call("a_b", "aten::sin", json!([{"node": 6}])),
        call("None", "aten::cos", json!([{"node": 7}])),
        call("self", "aten::exp", json!([{"node": 8}])),
        call("a  b", "aten::exp", json!([{"node": 9}])),
    ];
    nodes[3]["kwargs"] = json!([["rounding_mode", {"str": pwned}]]);
    let tricky = [
        ("it's", "\"it's\""),
        ("say \"hi\"", "'say \"hi\"'"),
        ("both ' and \"", "'both \\' and \"'"),
        ("back\\slash", "'back\\\\slash'"),
        ("tab\u{9}nl\u{a}cr\u{d}", "'tab\\tnl\\ncr\\r'"),
        ("nul\u{0} us\u{1f} del\u{7f}", "'nul\\x00 us\\x1f del\\x7f'"),
        ("\u{80} nbsp\u{a0} shy\u{ad}", "'\\x80 nbsp\\xa0 shy\\xad'"),
        (
            "\u{e9} \u{65e5}\u{672c} \u{301}",
            "'\u{e9} \u{65e5}\u{672c} \u{301}'",
        ),
        (
            "zw\u{200b} ls\u{2028} bom\u{feff}",
            "'zw\\u200b ls\\u2028 bom\\ufeff'",
        ),
        (
            "emoji \u{1f600} tag\u{e0001} max\u{10ffff}",
            "'emoji \u{1f600} tag\\U000e0001 max\\U0010ffff'",
        ),
        (
            "unassigned \u{378} ideo\u{3000}",
            "'unassigned \\u0378 ideo\\u3000'",
        ),
        ("", "''"),
        ("'", "\"'\""),
        ("\"", "'\"'"),
        ("\\'", "\"\\\\'\""),
        (pwned, "\"x'); import os; os.system('echo pwned')  #\""),
    ];
    let strs: Vec<_> = tricky.iter().map(|(s, _)| json!({"str": s})).collect();
    nodes.push(json!({"name": "output", "op": "output", "args": [{"node": 10}, {"list": strs}]}));
    let saved = json!({"format": "opforge.graph", "version": 1, "tokens": 0, "objects": [], "nodes": nodes});
    let g = Graph::from_json(&saved).unwrap();
    let names: Vec<&str> = g.nodes().iter().map(|n| n.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "x_import_os_os_system_echo_pwned_",
            "_1abc",
            "def_1",
            "sum_1",
            "a_b",
            "_unnamed",
            "_",
            "a_b_1",
            "None_1",
            "self_1",
            "a_b_2",
            "output"
        ]
    );
    let reprs: Vec<&str> = tricky.iter().map(|(_, r)| *r).collect();
    let want = format!(
        "def forward(self, x_import_os_os_system_echo_pwned_, _1abc):\n    \
         def_1 = torch.ops.aten.add.Tensor(x_import_os_os_system_echo_pwned_, _1abc)\n    \
         sum_1 = torch.ops.aten.div.Tensor_mode(def_1, _1abc, rounding_mode = {});  def_1 = _1abc = None\n    \
         a_b = torch.ops.aten.mul.Tensor(sum_1, x_import_os_os_system_echo_pwned_);  sum_1 = x_import_os_os_system_echo_pwned_ = None\n    \
         _unnamed = torch.ops.aten.neg.default(a_b);  a_b = None\n    \
         _ = torch.ops.aten.relu.default(_unnamed);  _unnamed = None\n    \
         a_b_1 = torch.ops.aten.sin.default(_);  _ = None\n    \
         None_1 = torch.ops.aten.cos.default(a_b_1);  a_b_1 = None\n    \
         self_1 = torch.ops.aten.exp.default(None_1);  None_1 = None\n    \
         a_b_2 = torch.ops.aten.exp.default(self_1);  self_1 = None\n    \
         return (a_b_2, [{}])\n",
        reprs[15],
        reprs.join(", ")
    );
    assert_eq!(g.to_string(), want);
    // Saved again and loaded, the names stay.
    let again = Graph::from_json(&g.to_json().unwrap()).unwrap();
    assert_eq!(again.to_string(), want);
    // A keyword argument's name prints as `name = value`: it must be an
    // identifier.
    let mut bad = saved.clone();
    bad["nodes"][2]["kwargs"] = json!([["alpha); os.system('x') #", {"int": 1}]]);
    assert_eq!(
        Graph::from_json(&bad).unwrap_err().to_string(),
        "not a saved graph: node 'def' has a keyword argument named \"alpha); os.system('x') #\", not an identifier"
    );
    // Two nodes of one name are refused, the name shown as Python's repr.
    let mut twice = saved;
    twice["nodes"][3]["name"] = json!("def");
    assert_eq!(
        Graph::from_json(&twice).unwrap_err().to_string(),
        "not a valid graph: two nodes are named 'def'"
    );
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

/// What a run-time kernel returns is checked against the schema's returns at
/// the boxed boundary (it used to be passed on as is: nothing for a `Tensor`,
/// three ints for a `Tensor(a)`, a string for a `Tensor?`), with PyTorch's
/// conversions and its words where it has them.
#[test]
fn run_time_kernel_results_are_checked_against_the_schema() {
    let lib = Library::new("returns", LibraryKind::Def).unwrap();
    let x = Tensor::from_vec(vec![1.0f32, 2.0], &[2]).unwrap();
    let call = |schema: &str, result: Vec<Value>| {
        let name = lib.define(schema).unwrap();
        let short = name.split("::").nth(1).unwrap().to_string();
        lib.impl_(&short, DispatchKey::CPU, move |_: &[Value]| {
            Ok(result.clone())
        })
        .unwrap();
        library::call(&name, &[Value::Tensor(x.clone())], &[])
    };
    let err = |r: opforge::Result<Vec<Value>>| r.unwrap_err().to_string();
    let t = || Value::Tensor(Tensor::from_vec(vec![3.0f32], &[1]).unwrap());

    let e = err(call("f1(Tensor(b) x) -> Tensor(b)", vec![]));
    assert!(
        e.starts_with("returns::f1: the kernel registered at ")
            && e.ends_with(" returned 0 values, but the schema has 1 return: returns::f1(Tensor(b) x) -> Tensor(b)"),
        "{e}"
    );
    let e = err(call(
        "f2(Tensor(a) x) -> Tensor(a)",
        vec![Value::Int(1), Value::Int(2), Value::Int(3)],
    ));
    assert!(
        e.contains(" returned 3 values, but the schema has 1 return: "),
        "{e}"
    );
    let e = err(call(
        "f3(Tensor x) -> Tensor?",
        vec![Value::Str("notatensor".into())],
    ));
    assert!(
        e.starts_with("Unable to cast notatensor to Tensor: return 0 of returns::f3 (the kernel registered at ")
            && e.ends_with(") is a str, and the schema returns `Tensor?` there: returns::f3(Tensor x) -> Tensor?"),
        "{e}"
    );
    let e = err(call("f4(Tensor x) -> ()", vec![t()]));
    assert!(
        e.starts_with("Expected the kernel for returns::f4 registered at ")
            && e.contains(" to return None but it returned something else instead (1 value; "),
        "{e}"
    );
    let e = err(call(
        "f5(Tensor x) -> (Tensor, int)",
        vec![t(), Value::Float(2.5)],
    ));
    assert!(
        e.starts_with("Unable to cast 2.5 to int: return 1 of returns::f5 "),
        "{e}"
    );
    let e = err(call(
        "f6(Tensor x) -> Tensor[]",
        vec![Value::List(vec![t(), Value::Int(1)].into())],
    ));
    assert!(
        e.starts_with("Unable to cast [") && e.contains(" to Tensor[]: return 0 of returns::f6"),
        "{e}"
    );

    // What fits goes through, converted as PyTorch converts.
    assert!(matches!(
        call("g1(Tensor x) -> Tensor?", vec![Value::None]).unwrap()[..],
        [Value::None]
    ));
    let r = call("g2(Tensor x) -> float", vec![Value::Int(2)]).unwrap();
    assert!(matches!(r[..], [Value::Float(f)] if f == 2.0), "{r:?}");
    let r = call(
        "g3(Tensor x) -> Tensor[]",
        vec![Value::List(vec![t(), t()].into())],
    )
    .unwrap();
    assert!(
        matches!(&r[..], [Value::TensorList(ts)] if ts.len() == 2),
        "{r:?}"
    );
    let r = call("g4(Tensor x) -> (Tensor, int)", vec![t(), Value::Int(7)]).unwrap();
    assert!(matches!(r[..], [Value::Tensor(_), Value::Int(7)]), "{r:?}");
    assert!(call("g5(Tensor x) -> ()", vec![]).unwrap().is_empty());

    // Fake kernels are checked the same way.
    let name = lib.define("h(Tensor x) -> Tensor").unwrap();
    library::register_fake(&name, |_: &[Value]| Ok(vec![Value::Bool(true)])).unwrap();
    let meta = Value::Tensor(Tensor::zeros(
        &[2],
        opforge::DType::Float32,
        opforge::Device::Meta,
    ));
    let e = err(library::call(&name, &[meta], &[]));
    assert!(
        e.starts_with("Unable to cast True to Tensor: return 0 of returns::h"),
        "{e}"
    );
}

/// `default` and `__name__` are not overload names (PyTorch refuses them at
/// definition: `f.default` names the default overload); before, `define`
/// took `f4.default(...)`, after which `impl_` found no operator and a call
/// found no overload `default`. And every name `define` accepts can be
/// implemented, found and called, by its own name, as a packet, and for the
/// default overload as `.default`.
#[test]
fn every_name_define_accepts_can_be_implemented_and_called() {
    let lib = Library::new("names", LibraryKind::Def).unwrap();
    for (schema, e) in [
        ("f4.default(Tensor x) -> Tensor", "default is not a legal overload name for aten operators"),
        ("f5.__name__(Tensor x) -> Tensor", "__name__ is not a legal overload name for aten operators"),
        ("f6.a.b(Tensor x) -> Tensor", "Invalid schema string `f6.a.b(Tensor x) -> Tensor`: column 5: expected eof but found '.' here: an overload name is one identifier"),
    ] {
        assert_eq!(lib.define(schema).unwrap_err().to_string(), e);
    }
    let x = Value::Tensor(Tensor::from_vec(vec![1.0f32], &[1]).unwrap());
    let bases = [
        "g",
        "g_",
        "_",
        "__and__",
        "__iand__",
        "default",
        "out",
        "Tensor",
        "g_functional",
        "__name__",
        "x1_y",
    ];
    let overloads = [
        "",
        "default",
        "Tensor",
        "out",
        "default_",
        "DEFAULT",
        "__name__",
        "a_b",
        "_",
        "x1",
        "functional",
        "name",
    ];
    let mut accepted = 0;
    for base in bases {
        for overload in overloads {
            let name = if overload.is_empty() {
                base.to_string()
            } else {
                format!("{base}.{overload}")
            };
            // In-place names write their first argument.
            let schema = if base.ends_with('_') && !base.ends_with("__") || base.starts_with("__i")
            {
                format!("{name}(Tensor(a!) x) -> Tensor(a!)")
            } else {
                format!("{name}(Tensor x) -> Tensor")
            };
            let qualified = match lib.define(&schema) {
                Ok(q) => q,
                Err(e) => {
                    let e = e.to_string();
                    assert!(
                        e.ends_with("is not a legal overload name for aten operators")
                            || e.contains("functional"),
                        "{schema}: {e}"
                    );
                    continue;
                }
            };
            accepted += 1;
            let short = qualified.strip_prefix("names::").unwrap();
            lib.impl_(short, DispatchKey::CPU, |args: &[Value]| {
                Ok(vec![args[0].clone()])
            })
            .unwrap_or_else(|e| panic!("{schema}: impl_({short}): {e}"));
            let op = library::find(&qualified).unwrap_or_else(|e| panic!("{schema}: find: {e}"));
            assert_eq!(op.qualified_name(), qualified, "{schema}");
            let r = library::call(&qualified, std::slice::from_ref(&x), &[]);
            assert!(
                matches!(r.as_deref(), Ok([Value::Tensor(_)])),
                "{schema}: call({qualified}): {r:?}"
            );
            let packet = qualified.split('.').next().unwrap();
            let r = library::call(packet, std::slice::from_ref(&x), &[]);
            assert!(r.is_ok(), "{schema}: call({packet}): {r:?}");
            if overload.is_empty() {
                let by_default = format!("{qualified}.default");
                let r = library::call(&by_default, std::slice::from_ref(&x), &[]);
                assert!(r.is_ok(), "{schema}: call({by_default}): {r:?}");
                assert!(
                    library::find(&by_default).is_ok(),
                    "{schema}: find({by_default})"
                );
            }
        }
    }
    assert!(accepted >= 80, "only {accepted} names were accepted");
}
