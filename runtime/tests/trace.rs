//! Graph capture (`opforge::trace`) through the public API: what is
//! recorded (decomposed composites, in-place calls taking over their
//! tensor's node, several results read through `getitem`, constants), FX's
//! names and code, re-execution, fake tracing and errors.

use opforge::trace::{trace, Arg, NodeKind, TracingMode};
use opforge::{torch, DType, Scalar, Tensor, Value};

fn t(v: &[f32], shape: &[usize]) -> Tensor {
    Tensor::from_vec(v.to_vec(), shape).unwrap()
}

fn tensor(v: &Value) -> &Tensor {
    v.as_tensor().expect("a tensor")
}

#[test]
fn composites_are_recorded_decomposed_and_results_re_execute() {
    let (a, b) = (
        t(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]),
        t(&[1.0, 0.0, 0.0, 1.0, 1.0, 1.0], &[3, 2]),
    );
    let f = |v: &[Value]| {
        let y = torch::matmul(tensor(&v[0]), tensor(&v[1]))?;
        Ok(vec![Value::Tensor(torch::relu(&y)?)])
    };
    let g = trace(
        f,
        &[Value::Tensor(a.clone()), Value::Tensor(b.clone())],
        TracingMode::Real,
    )
    .unwrap();
    assert_eq!(g.targets(), ["aten.mm.default", "aten.relu.default"]);
    let names: Vec<&str> = g.nodes().iter().map(|n| n.name.as_str()).collect();
    assert_eq!(names, ["arg0_1", "arg1_1", "mm", "relu", "output"]);
    let out = g
        .run(&[Value::Tensor(a.clone()), Value::Tensor(b.clone())])
        .unwrap();
    let want = f(&[Value::Tensor(a), Value::Tensor(b)]).unwrap();
    assert_eq!(
        tensor(&out[0]).to_vec::<f32>().unwrap(),
        tensor(&want[0]).to_vec::<f32>().unwrap()
    );
}

#[test]
fn an_in_place_call_is_its_tensors_node_from_then_on() {
    let x = t(&[0.5, -1.0, 2.0], &[3]);
    let g = trace(
        |v| {
            let mut a = torch::clone_tensor(tensor(&v[0]))?;
            a.add_scalar_(Scalar::Float(2.0))?;
            let s = a.sum()?;
            Ok(vec![Value::Tensor(a), Value::Tensor(s)])
        },
        &[Value::Tensor(x)],
        TracingMode::Real,
    )
    .unwrap();
    assert_eq!(
        g.targets(),
        ["aten.clone.default", "aten.add_.Scalar", "aten.sum.default"]
    );
    // `sum` reads the tensor `add_` wrote: the `add_` node (2), not `clone`.
    let NodeKind::CallFunction { args, .. } = &g.nodes()[3].kind else {
        panic!("not a call")
    };
    assert!(matches!(args[0], Arg::Node(2)));
    // `sum` is a Python builtin: FX names the node `sum_1`.
    assert_eq!(
        g.to_string(),
        "def forward(self, arg0_1):\n    \
         clone = torch.ops.aten.clone.default(arg0_1);  arg0_1 = None\n    \
         add_ = torch.ops.aten.add_.Scalar(clone, 2.0);  clone = None\n    \
         sum_1 = torch.ops.aten.sum.default(add_)\n    \
         return (add_, sum_1)\n"
    );
}

#[test]
fn several_results_are_read_through_getitem() {
    let x = t(&[3.0, 1.0, 2.0, 0.0, 5.0, 4.0], &[2, 3]);
    let g = trace(
        |v| {
            let (values, _indices) = torch::max(tensor(&v[0]), 1)?;
            Ok(vec![Value::Tensor(values)])
        },
        &[Value::Tensor(x.clone())],
        TracingMode::Real,
    )
    .unwrap();
    assert_eq!(
        g.targets(),
        [
            "aten.max.dim",
            "<built-in function getitem>",
            "<built-in function getitem>"
        ]
    );
    assert!(g.to_string().contains("getitem = max_1[0]"), "{g}");
    let out = g.run(&[Value::Tensor(x)]).unwrap();
    assert_eq!(tensor(&out[0]).to_vec::<f32>().unwrap(), [3.0, 5.0]);
}

#[test]
fn fake_tracing_computes_nothing_and_records_the_same_graph() {
    let x = t(&[1.0, 2.0], &[2]);
    let f = |v: &[Value]| {
        let y = torch::exp(tensor(&v[0]))?;
        assert!(y.is_fake());
        Ok(vec![Value::Tensor(y.to(DType::Float64)?)])
    };
    let g = trace(f, &[Value::Tensor(x.clone())], TracingMode::Fake).unwrap();
    assert_eq!(g.targets(), ["aten.exp.default", "aten._to_copy.default"]);
    let out = g.run(&[Value::Tensor(x)]).unwrap();
    assert_eq!(tensor(&out[0]).dtype(), DType::Float64);
    assert!(!tensor(&out[0]).is_fake());
}

#[test]
fn an_error_while_tracing_is_the_traces() {
    let (a, b) = (t(&[1.0, 2.0, 3.0], &[3]), t(&[1.0, 2.0], &[2]));
    let e = trace(
        |v| {
            Ok(vec![Value::Tensor(torch::add(
                tensor(&v[0]),
                tensor(&v[1]),
            )?)])
        },
        &[Value::Tensor(a), Value::Tensor(b)],
        TracingMode::Real,
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "The size of tensor a (3) must match the size of tensor b (2) at non-singleton dimension 0"
    );
}

#[test]
fn a_graph_refuses_the_wrong_number_of_inputs() {
    let g = trace(
        |v| Ok(vec![v[0].clone()]),
        &[Value::Tensor(t(&[1.0], &[1]))],
        TracingMode::Real,
    )
    .unwrap();
    assert!(g.targets().is_empty());
    assert_eq!(
        g.run(&[]).unwrap_err().to_string(),
        "the graph takes 1 inputs, 0 were given"
    );
}

#[test]
fn matmul_decomposes_as_pytorchs_and_an_in_place_view_works_on_fakes() {
    let (v, m) = (
        t(&[1.0, 2.0], &[2]),
        t(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]),
    );
    let f = |x: &[Value]| {
        Ok(vec![Value::Tensor(torch::matmul(
            tensor(&x[0]),
            tensor(&x[1]),
        )?)])
    };
    let inputs = [Value::Tensor(v.clone()), Value::Tensor(m.clone())];
    for mode in [TracingMode::Real, TracingMode::Fake] {
        let g = trace(f, &inputs, mode).unwrap();
        assert_eq!(
            g.targets(),
            [
                "aten.unsqueeze.default",
                "aten.mm.default",
                "aten.squeeze_.dim"
            ],
            "{}",
            mode.name()
        );
        let out = g.run(&inputs).unwrap();
        assert_eq!(tensor(&out[0]).to_vec::<f32>().unwrap(), [9.0, 12.0, 15.0]);
    }
    // On fakes, `squeeze_` changed the fake's geometry through its meta twin.
    let mode = opforge::fake::FakeTensorMode::new();
    let (fv, fm) = (mode.from_tensor(&v).unwrap(), mode.from_tensor(&m).unwrap());
    assert_eq!(torch::matmul(&fv, &fm).unwrap().shape(), [3]);
    // Two vectors: `dot`; a matrix and a vector: `mv`.
    let g = trace(
        |x| {
            let a = torch::matmul(tensor(&x[0]), tensor(&x[0]))?;
            let b = torch::matmul(tensor(&x[1]), &torch::ones(&[3])?)?;
            Ok(vec![Value::Tensor(a), Value::Tensor(b)])
        },
        &inputs,
        TracingMode::Real,
    )
    .unwrap();
    assert_eq!(
        g.targets(),
        ["aten.dot.default", "aten.ones.default", "aten.mv.default"]
    );
}

/// A graph saved as JSON and loaded back prints and re-executes as the
/// one it was saved from: constants of every kind (numbers, lists, dtypes,
/// a constant tensor, non-finite floats) come back.
#[test]
fn a_saved_graph_loads_back_and_re_executes() {
    use opforge::trace::Graph;
    let w = t(&[0.5, -1.0, 2.0], &[3]);
    let f = |v: &[Value]| {
        let x = tensor(&v[0]);
        let y = torch::add(&torch::mul(x, &w)?, x)?;
        let z = opforge::ops::clamp(
            &y,
            Some(Scalar::Float(f64::NEG_INFINITY)),
            Some(Scalar::Float(1.5)),
        )?;
        let s = opforge::ops::sum_dim_IntList(&z.to(DType::Float64)?, Some(&[0]), true, None)?;
        Ok(vec![Value::Tensor(z), Value::Tensor(s)])
    };
    let x = t(&[1.0, 2.0, 3.0], &[3]);
    let g = trace(f, &[Value::Tensor(x.clone())], TracingMode::Real).unwrap();
    let text = serde_json::to_string(&g).unwrap();
    let back: Graph = serde_json::from_str(&text).unwrap();
    assert_eq!(back.to_string(), g.to_string());
    let (a, b) = (
        g.run(&[Value::Tensor(x.clone())]).unwrap(),
        back.run(&[Value::Tensor(x.clone())]).unwrap(),
    );
    for (a, b) in a.iter().zip(&b) {
        assert_eq!(
            tensor(a).to_vec::<f64>().unwrap(),
            tensor(b).to_vec::<f64>().unwrap()
        );
    }
    // A saved graph naming an operator or a class the program lacks.
    let unknown = text.replacen("aten::mul.Tensor", "aten::no_such_op", 1);
    let e = serde_json::from_str::<Graph>(&unknown)
        .unwrap_err()
        .to_string();
    assert!(e.contains("aten::no_such_op"), "{e}");
    let mut j: serde_json::Value = serde_json::from_str(&text).unwrap();
    j["objects"] = serde_json::json!([{"class": "nowhere::Queue", "state": []}]);
    let e = Graph::from_json(&j).unwrap_err().to_string();
    assert!(e.contains("nowhere.Queue"), "{e}");
    // A reference to a later node is refused.
    j["objects"] = serde_json::json!([]);
    j["nodes"][1]["args"][1] = serde_json::json!({"node": 5});
    let e = Graph::from_json(&j).unwrap_err().to_string();
    assert!(e.contains("not before it"), "{e}");
}

/// Traces `f` on `x`, then runs the graph twice: each run gives what `f`
/// gives eagerly, and `x` is left as it was.
fn replays_as_eager(f: impl Fn(&[Value]) -> opforge::Result<Vec<Value>>, x: &Tensor) {
    let before = x.to_vec::<f32>().unwrap();
    let inputs = [Value::Tensor(x.clone())];
    let g = trace(&f, &inputs, TracingMode::Real).unwrap();
    let want = tensor(&f(&inputs).unwrap()[0]).to_vec::<f32>().unwrap();
    for _ in 0..2 {
        let out = g.run(&inputs).unwrap();
        assert_eq!(tensor(&out[0]).to_vec::<f32>().unwrap(), want);
    }
    assert_eq!(x.to_vec::<f32>().unwrap(), before);
}

/// A value is moved into the call that uses it last (the interpreter's
/// plan): a node read twice by that call, or inside a list, still reaches
/// every reader; inputs are the caller's and stay; a graph runs again.
#[test]
fn a_value_read_twice_by_its_last_call_reaches_both_and_graphs_rerun() {
    let f = |v: &[Value]| {
        let x = tensor(&v[0]);
        let y = torch::sin(x)?;
        let z = torch::add(&y, &y)?; // y's last use, twice
        let c = torch::cat(&[z.clone(), z.clone()])?; // z's, in a list
        let w = torch::mul(&c, &c)?;
        let xx = torch::cat(&[x.clone(), x.clone()])?;
        Ok(vec![Value::Tensor(torch::add(&w, &xx)?)])
    };
    replays_as_eager(f, &t(&[0.5, -1.0, 2.0], &[3]));
}

/// A value read twice by a call that is not its last (lent to the call and
/// put back, the first read a copy), then read again by later calls.
#[test]
fn a_value_read_twice_before_its_last_use_stays_for_later_calls() {
    let f = |v: &[Value]| {
        let x = tensor(&v[0]);
        let y = torch::sin(x)?;
        let z = torch::mul(&y, &y)?; // not y's last use
        let w = torch::add(&z, &y)?;
        Ok(vec![Value::Tensor(torch::mul(&w, x)?)])
    };
    replays_as_eager(f, &t(&[0.5, -1.0, 2.0], &[3]));
}

/// An operator returning nothing (`-> ()`) is traced in real and fake mode
/// and replayed: a handler sees its result as `None`, as Python's call of it
/// gives (it was an empty list, refused as "something else").
#[test]
fn an_operator_returning_nothing_is_traced_and_replayed() {
    use opforge::dispatch::DispatchKey;
    use opforge::library::{self, Library, LibraryKind};
    let lib = Library::new("trace_zero", LibraryKind::Def).unwrap();
    lib.define("add_to(Tensor(a!) x, Tensor y) -> ()").unwrap();
    lib.impl_("add_to", DispatchKey::CPU, |args: &[Value]| {
        let mut x = tensor(&args[0]).clone();
        opforge::at::add__Tensor(&mut x, tensor(&args[1]), Scalar::Int(1))?;
        Ok(vec![])
    })
    .unwrap();
    // A fake's data is never written: the meta kernel has nothing to do.
    lib.impl_("add_to", DispatchKey::Meta, |_: &[Value]| Ok(vec![]))
        .unwrap();
    let f = |v: &[Value]| {
        let out = library::call("trace_zero::add_to", &[v[0].clone(), v[1].clone()], &[])?;
        assert!(out.is_empty());
        Ok(vec![Value::Tensor(torch::mul(
            tensor(&v[0]),
            tensor(&v[1]),
        )?)])
    };
    for mode in [TracingMode::Real, TracingMode::Fake] {
        let (x, y) = (t(&[1.0, 2.0], &[2]), t(&[10.0, 20.0], &[2]));
        let g = trace(f, &[Value::Tensor(x), Value::Tensor(y)], mode)
            .unwrap_or_else(|e| panic!("{mode:?}: {e}"));
        assert_eq!(
            g.targets(),
            ["trace_zero.add_to.default", "aten.mul.Tensor"],
            "{mode:?}"
        );
        let (x, y) = (t(&[1.0, 2.0], &[2]), t(&[10.0, 20.0], &[2]));
        let out = g
            .run(&[Value::Tensor(x.clone()), Value::Tensor(y)])
            .unwrap();
        // The rerun applies the write once: x = [11, 22], x * y.
        assert_eq!(x.to_vec::<f32>().unwrap(), [11.0, 22.0], "{mode:?}");
        assert_eq!(tensor(&out[0]).to_vec::<f32>().unwrap(), [110.0, 440.0]);
    }
    // Through a function mode (the handle offered first), no results either.
    struct Pass;
    impl opforge::overrides::TorchFunctionMode for Pass {
        fn torch_function(
            &self,
            call: &opforge::overrides::FunctionCall<'_>,
        ) -> opforge::Result<opforge::overrides::Handled> {
            call.call_func().map(opforge::overrides::Handled::Value)
        }
    }
    let _mode = opforge::overrides::push_function_mode(std::sync::Arc::new(Pass));
    let (x, y) = (t(&[1.0], &[1]), t(&[2.0], &[1]));
    let out = library::call(
        "trace_zero::add_to",
        &[Value::Tensor(x.clone()), Value::Tensor(y)],
        &[],
    )
    .unwrap();
    assert!(out.is_empty(), "{out:?}");
    assert_eq!(x.to_vec::<f32>().unwrap(), [3.0]);
}

/// `.item()` in a fake trace is PyTorch's `DataDependentOutputException`
/// naming `aten._local_scalar_dense.default` (a fake has no data to read).
#[test]
fn item_in_a_fake_trace_is_a_data_dependent_output() {
    use opforge::error::FakeException;
    let f = |v: &[Value]| {
        let s = torch::sum(tensor(&v[0]))?.item()?;
        Ok(vec![Value::Tensor(torch::mul(
            tensor(&v[0]),
            &Tensor::from_scalar(s, DType::Float32, opforge::Device::Cpu),
        )?)])
    };
    let x = t(&[1.0, 2.0], &[2]);
    let e = trace(f, &[Value::Tensor(x.clone())], TracingMode::Fake).unwrap_err();
    assert!(
        matches!(
            e,
            opforge::Error::Fake(FakeException::DataDependentOutput, _)
        ),
        "{e}"
    );
    assert!(
        e.to_string().contains("aten._local_scalar_dense.default"),
        "{e}"
    );
    // A real trace reads the value: a constant in the graph.
    assert!(trace(f, &[Value::Tensor(x)], TracingMode::Real).is_ok());
}
