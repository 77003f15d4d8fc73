//! Graph capture (PyTorch's `make_fx`): a program runs under a tracing
//! dispatch mode, and every operator call that reaches the mode becomes a
//! node of a [`Graph`].
//!
//! - The tracer is a dispatch mode ([`crate::overrides::TorchDispatchMode`]),
//!   so it sees what PyTorch's `ProxyTorchDispatchMode` sees: calls below
//!   autograd, with `CompositeImplicitAutograd` operators already decomposed
//!   (`torch.matmul` of two matrices is `aten.mm.default`), in-place and
//!   view overloads as they are, arguments normalized as a dispatch handler
//!   gets them.
//! - Each tensor the program computes is tracked by identity: an argument
//!   that is a tracked tensor refers to the node that made it; an in-place
//!   call's result (the tensor it wrote) is that call's node from then on,
//!   as in PyTorch's graphs. Other arguments are constants. A call with
//!   several results is read through `getitem` nodes, one per result.
//! - [`TracingMode::Fake`] runs the program on fakes of the inputs
//!   (`crate::fake`), so nothing is computed; [`TracingMode::Real`] on the
//!   inputs themselves.
//! - Method calls on custom-class objects are calls of the operator
//!   `higher_order::call_torchbind` (`crate::classes::torchbind`), so they
//!   are `call_torchbind` nodes as any call is a node; with a functionalized
//!   program (`trace(crate::functionalize::functionalize(f), …)`, PyTorch's
//!   `make_fx(functionalize(f))`), effectful calls are `with_effects` nodes
//!   threading the effect token, which becomes the graph's first input and
//!   first output ([`Graph::tokens`]).
//! - A graph saves to a documented JSON form and loads back (`saved.rs`,
//!   [`Graph::to_json`], serde).
//!
//! ```
//! use opforge::trace::{trace, TracingMode};
//! use opforge::{torch, Tensor, Value};
//! let x = Tensor::from_vec(vec![1.0f32, 2.0, 3.0], &[3])?;
//! let g = trace(
//!     |v| {
//!         let x = v[0].as_tensor().expect("one tensor");
//!         let y = torch::mul(&torch::sin(x)?, x)?;
//!         Ok(vec![Value::Tensor(y)])
//!     },
//!     &[Value::Tensor(x.clone())],
//!     TracingMode::Real,
//! )?;
//! assert_eq!(g.targets(), ["aten.sin.default", "aten.mul.Tensor"]);
//! assert_eq!(
//!     g.to_string(),
//!     "def forward(self, arg0_1):\n    \
//!      sin = torch.ops.aten.sin.default(arg0_1)\n    \
//!      mul = torch.ops.aten.mul.Tensor(sin, arg0_1);  sin = arg0_1 = None\n    \
//!      return (mul,)\n"
//! );
//! // Re-executed, the graph computes what the program computed.
//! let out = g.run(&[Value::Tensor(x.clone())])?;
//! let want = torch::mul(&torch::sin(&x)?, &x)?;
//! assert_eq!(out[0].as_tensor().unwrap().to_vec::<f32>()?, want.to_vec::<f32>()?);
//! # Ok::<(), opforge::Error>(())
//! ```

mod graph;
mod saved;

pub use graph::{Arg, Graph, Node, NodeId, NodeKind, Target};

use crate::classes::torchbind::with_effects_op;
use crate::error::Result;
use crate::fake::FakeTensorMode;
use crate::overrides::{push_dispatch_mode, DispatchCall, Handled, TorchDispatchMode};
use crate::tensor::Tensor;
use crate::value::ScriptObject;
use crate::value::Value;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// What a trace runs the program on (PyTorch's `make_fx(tracing_mode=…)`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum TracingMode {
    /// The inputs themselves: the program computes as it would eagerly.
    #[default]
    Real,
    /// Fakes of the inputs ([`FakeTensorMode`]): shapes, dtypes and strides
    /// only, no data computed.
    Fake,
}

impl TracingMode {
    /// PyTorch's name (`"real"`, `"fake"`).
    pub fn name(self) -> &'static str {
        match self {
            TracingMode::Real => "real",
            TracingMode::Fake => "fake",
        }
    }
}

/// Runs `f` on `inputs` under a tracer and returns the graph of what it
/// called: a placeholder per input (`arg0_1`, `arg1_1`, …), a node per
/// operator call that reached the tracer, and an output node with `f`'s
/// results (tensors as the nodes that made them, anything else as a
/// constant). An error of `f` is the trace's.
pub fn trace(
    f: impl FnOnce(&[Value]) -> Result<Vec<Value>>,
    inputs: &[Value],
    mode: TracingMode,
) -> Result<Graph> {
    let fake = match mode {
        TracingMode::Fake => Some(FakeTensorMode::new()),
        TracingMode::Real => None,
    };
    // Fake tracing: tensors become fakes, objects fake objects (PyTorch's
    // `maybe_to_fake_obj`: an object whose class has no fake class is an
    // error).
    let inputs = match &fake {
        Some(m) => inputs
            .iter()
            .map(|v| match v {
                Value::Object(o) => Ok(Value::Object(m.fake_object(o)?)),
                v => v.try_map_tensors(&mut |t| m.from_tensor(t)),
            })
            .collect::<Result<Vec<_>>>()?,
        None => inputs.to_vec(),
    };
    let tracer = Arc::new(Tracer::default());
    {
        let mut st = tracer.lock();
        for (i, v) in inputs.iter().enumerate() {
            let node = st.graph.placeholder(&format!("arg{i}_1"));
            match v {
                Value::Tensor(t) => st.track(t, node),
                Value::Object(o) => {
                    st.objects.insert(o.address(), (o.clone(), node));
                }
                _ => {}
            }
        }
    }
    let results = {
        let _fake = fake.as_ref().map(FakeTensorMode::enter);
        let _mode = push_dispatch_mode(tracer.clone());
        f(&inputs)?
    };
    let mut st = tracer.lock();
    // The last effect token is the graph's first result.
    let mut outs: Vec<Arg> = st.last_token.map(Arg::Node).into_iter().collect();
    outs.extend(results.iter().map(|v| st.arg(v)));
    st.graph.output(outs);
    Ok(std::mem::take(&mut st.graph))
}

/// The tracing dispatch mode.
#[derive(Default)]
struct Tracer(Mutex<State>);

impl Tracer {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[derive(Default)]
struct State {
    graph: Graph,
    /// The node each tracked tensor is, by identity; the tensor is kept so
    /// that its identity is not reused while the trace runs.
    tensors: HashMap<usize, (Tensor, NodeId)>,
    /// The placeholder each object input is, by address (kept alive too).
    objects: HashMap<usize, (ScriptObject, NodeId)>,
    /// The node of the latest effect token (a `with_effects` node's first
    /// result), if the program made effectful calls.
    last_token: Option<NodeId>,
}

impl State {
    fn track(&mut self, t: &Tensor, node: NodeId) {
        self.tensors.insert(t.identity(), (t.clone(), node));
    }

    /// A value as a node's argument: a tracked tensor is its node; lists
    /// are lists of arguments; anything else a constant.
    fn arg(&self, v: &Value) -> Arg {
        let tensor = |t: &Tensor| match self.tensors.get(&t.identity()) {
            Some((_, n)) => Arg::Node(*n),
            None => Arg::Const(Value::Tensor(t.clone())),
        };
        match v {
            Value::Tensor(t) if !t.is_wrapped_number() => tensor(t),
            Value::TensorList(ts) => Arg::List(ts.iter().map(tensor).collect()),
            Value::OptTensorList(ts) => Arg::List(
                ts.iter()
                    .map(|t| t.as_ref().map_or(Arg::Const(Value::None), tensor))
                    .collect(),
            ),
            Value::List(vs) if vs.iter().any(|v| matches!(v, Value::Tensor(_))) => {
                Arg::List(vs.iter().map(|v| self.arg(v)).collect())
            }
            Value::Object(o) => match self.objects.get(&o.address()) {
                Some((_, n)) => Arg::Node(*n),
                None => Arg::Const(v.clone()),
            },
            Value::Tensor(t) => Arg::Const(
                t.item()
                    .map(Value::from)
                    .unwrap_or_else(|_| Value::Tensor(t.clone())),
            ),
            other => Arg::Const(other.clone()),
        }
    }

    /// Records a call and what it returned. An operator with `...` ending
    /// its returns (`with_effects`) returns a tuple of any length: its
    /// tensors are read through `getitem` nodes (its other values, a method
    /// returning `None`, are not nodes).
    fn record(&mut self, call: &DispatchCall<'_>, out: &Value) {
        let op = call.func().operator();
        let effects = std::ptr::eq(op, with_effects_op());
        if effects {
            self.token_input(call.args().first());
        }
        let args = call.args().iter().map(|v| self.arg(v)).collect();
        let kwargs = call
            .kwargs()
            .iter()
            .map(|(k, v)| (k.clone(), self.arg(v)))
            .collect();
        let node = self.graph.call(Target::Op(op), args, kwargs);
        match (op.schema.returns.len(), op.schema.varret) {
            (_, true) => {
                let items = match out {
                    Value::List(items) => items.to_vec(),
                    one => vec![one.clone()],
                };
                for (i, item) in items.iter().enumerate() {
                    if !matches!(item, Value::Tensor(_) | Value::TensorList(_)) {
                        continue;
                    }
                    let g = self.graph.getitem(node, i);
                    self.track_result(item, g);
                    // A `with_effects` node's first result is the new token.
                    if i == 0 && effects {
                        self.last_token = Some(g);
                    }
                }
            }
            (0, false) => {}
            (1, false) => self.track_result(out, node),
            _ => {
                let items = crate::normalize::list_items(out).unwrap_or_default();
                for (i, item) in items.iter().enumerate() {
                    let g = self.graph.getitem(node, i);
                    self.track_result(item, g);
                }
            }
        }
    }

    /// An effect token the trace has not seen (the first `with_effects`
    /// call's) is a new input of the graph, placed first, as PyTorch's
    /// exported graphs take their tokens.
    fn token_input(&mut self, token: Option<&Value>) {
        let Some(Value::Tensor(token)) = token else {
            return;
        };
        if self.tensors.contains_key(&token.identity()) {
            return;
        }
        self.graph.prepend_token();
        for (_, n) in self.tensors.values_mut() {
            *n += 1;
        }
        for (_, n) in self.objects.values_mut() {
            *n += 1;
        }
        if let Some(n) = &mut self.last_token {
            *n += 1;
        }
        self.track(token, 0);
    }

    fn track_result(&mut self, v: &Value, node: NodeId) {
        match v {
            Value::Tensor(t) => self.track(t, node),
            Value::TensorList(ts) => {
                // A `Tensor[]` result is one node; its elements are read
                // through `getitem` nodes.
                for (i, t) in ts.iter().enumerate() {
                    let g = self.graph.getitem(node, i);
                    self.track(t, g);
                }
            }
            _ => {}
        }
    }
}

impl TorchDispatchMode for Tracer {
    fn torch_dispatch(&self, call: &DispatchCall<'_>) -> Result<Handled> {
        // The call is recorded as one node: what its kernel does inside (a
        // fake kernel's method calls on fake objects) runs while this mode
        // is off the stack, so it is not the program's.
        let out = call.call_func()?;
        self.lock().record(call, &out);
        Ok(Handled::Value(out))
    }

    fn repr(&self) -> String {
        "<ProxyTorchDispatchMode>".into()
    }
}
