//! PyTorch's TorchBind tutorial ("Supporting Custom C++ Classes in
//! torch.compile/torch.export"), end to end: a `TensorQueue`
//! custom class with its fake class, a custom operator taking the queue,
//! the tutorial's `Mod` run eagerly, both programs captured as graphs (method
//! calls as `call_torchbind`; functionalized, the operator on the queue as
//! `with_effects` threading an effect token), and the graphs re-executed
//! to what the programs compute eagerly.
//!
//! `cargo run --example tensor_queue`

use opforge::classes::{self, Class, FakeClass, FakeMembers};
use opforge::dispatch::DispatchKey;
use opforge::functionalize::functionalize;
use opforge::library::{self, register_fake, Library, LibraryKind};
use opforge::trace::{trace, TracingMode};
use opforge::{torch, Result, Scalar, ScriptObject, Tensor, Value};
use std::collections::VecDeque;
use std::sync::{Mutex, MutexGuard};

/// The tutorial's thread-safe queue: tensors, and the tensor `pop` gives when
/// it is empty.
struct TensorQueue {
    queue: Mutex<VecDeque<Tensor>>,
    init_tensor: Tensor,
}

impl TensorQueue {
    fn queue(&self) -> MutexGuard<'_, VecDeque<Tensor>> {
        self.queue.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The tutorial's `FakeTensorQueue`: what tracing with fake tensors runs the
/// methods on (made from the real queue's `__obj_flatten__`).
struct FakeTensorQueue {
    queue: Mutex<Vec<Tensor>>,
    init_tensor: Tensor,
}

impl FakeTensorQueue {
    fn queue(&self) -> MutexGuard<'_, Vec<Tensor>> {
        self.queue.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl FakeClass for FakeTensorQueue {
    /// `__obj_unflatten__`: the fake from the flattened state.
    fn unflatten(flat: Vec<(String, Value)>) -> Result<Self> {
        let (mut queue, mut init_tensor) = (Vec::new(), None);
        for (name, v) in flat {
            match (name.as_str(), v) {
                ("queue", Value::TensorList(ts)) => queue = ts,
                ("init_tensor_", Value::Tensor(t)) => init_tensor = Some(t),
                _ => {}
            }
        }
        let init_tensor = init_tensor.ok_or_else(|| {
            opforge::Error::Runtime("the flattened queue has no init_tensor_".into())
        })?;
        Ok(FakeTensorQueue {
            queue: Mutex::new(queue),
            init_tensor,
        })
    }

    fn members() -> FakeMembers<Self> {
        FakeMembers::new()
            .def("push", |q: &FakeTensorQueue, t: Tensor| q.queue().push(t))
            .def("pop", |q: &FakeTensorQueue| {
                let mut queue = q.queue();
                match queue.is_empty() {
                    true => q.init_tensor.clone(),
                    false => queue.remove(0),
                }
            })
            .def("size", |q: &FakeTensorQueue| q.queue().len() as i64)
            .def("for_each_add_", |q: &FakeTensorQueue, inc: Tensor| {
                for t in q.queue().iter_mut() {
                    t.add_(&inc)?;
                }
                Ok::<(), opforge::Error>(())
            })
    }
}

/// Registers the class, its fake class and `MyCustomClass::for_each_add_`
/// (with its CPU kernel and its fake kernel, the tutorial's `fake_for_each_add_`).
fn register() -> Result<()> {
    Class::<TensorQueue>::new("MyCustomClass", "TensorQueue")
        .init(|init_tensor: Tensor| TensorQueue {
            queue: Mutex::new(VecDeque::new()),
            init_tensor,
        })
        .def("push", |q: &TensorQueue, t: Tensor| q.queue().push_back(t))
        .def("pop", |q: &TensorQueue| {
            q.queue()
                .pop_front()
                .unwrap_or_else(|| q.init_tensor.clone())
        })
        .def("top", |q: &TensorQueue| {
            q.queue()
                .front()
                .cloned()
                .unwrap_or_else(|| q.init_tensor.clone())
        })
        .def("size", |q: &TensorQueue| q.queue().len() as i64)
        .def("for_each_add_", |q: &TensorQueue, inc: Tensor| {
            for t in q.queue().iter_mut() {
                t.add_(&inc)?;
            }
            Ok::<(), opforge::Error>(())
        })
        .def("__obj_flatten__", |q: &TensorQueue| {
            let queue: Vec<Tensor> = q.queue().iter().cloned().collect();
            Ok::<_, opforge::Error>(vec![
                ("queue".to_string(), Value::TensorList(queue)),
                (
                    "init_tensor_".to_string(),
                    Value::Tensor(q.init_tensor.deep_clone()?),
                ),
            ])
        })
        .def_pickle(
            |q: &TensorQueue| {
                (
                    q.queue().iter().cloned().collect::<Vec<_>>(),
                    q.init_tensor.clone(),
                )
            },
            |(items, init_tensor): (Vec<Tensor>, Tensor)| {
                Ok(TensorQueue {
                    queue: Mutex::new(items.into()),
                    init_tensor,
                })
            },
        )
        .register()?;
    classes::register_fake_class::<FakeTensorQueue>("MyCustomClass::TensorQueue")?;
    let lib = Library::new("MyCustomClass", LibraryKind::Fragment)?;
    lib.define(
        "for_each_add_(__torch__.torch.classes.MyCustomClass.TensorQueue foo, Tensor inc) -> ()",
    )?;
    let each = |args: &[Value]| -> Result<Vec<Value>> {
        if let [Value::Object(tq), inc] = args {
            tq.call_method("for_each_add_", std::slice::from_ref(inc))?;
        }
        Ok(vec![])
    };
    lib.impl_("for_each_add_", DispatchKey::CPU, each)?;
    register_fake("MyCustomClass::for_each_add_", each)?;
    // The definitions stay for the program's life.
    std::mem::forget(lib);
    Ok(())
}

/// An empty queue whose `pop` gives `-1` when empty (the tutorial's
/// `torch.empty(0).fill_(-1)`).
fn empty_tensor_queue() -> Result<ScriptObject> {
    let init = torch::full(&[0], Scalar::Float(-1.0))?;
    classes::instantiate("MyCustomClass::TensorQueue", &[Value::Tensor(init)])
}

fn object(v: &Value) -> Result<&ScriptObject> {
    match v {
        Value::Object(o) => Ok(o),
        other => Err(opforge::Error::Type(
            format!("expected a TensorQueue, got {}", other.type_name()).into(),
        )),
    }
}

fn tensor(v: &Value) -> Result<&Tensor> {
    v.as_tensor().ok_or_else(|| {
        opforge::Error::Type(format!("expected a Tensor, got {}", v.type_name()).into())
    })
}

/// The tutorial's `Mod.forward(tq, x)`: push `x.sin()`, push `x.cos()`, pop.
fn mod_forward(v: &[Value]) -> Result<Vec<Value>> {
    let (tq, x) = (object(&v[0])?, tensor(&v[1])?);
    tq.call_method("push", &[Value::Tensor(x.sin()?)])?;
    tq.call_method("push", &[Value::Tensor(x.cos()?)])?;
    let popped = tq.call_method("pop", &[])?;
    Ok(vec![v[0].clone(), popped])
}

/// The tutorial's `ForEachAdd.forward(tq, a)`.
fn for_each_add(v: &[Value]) -> Result<Vec<Value>> {
    library::call(
        "MyCustomClass::for_each_add_",
        &[v[0].clone(), v[1].clone()],
        &[],
    )?;
    Ok(vec![v[0].clone()])
}

fn size(tq: &ScriptObject) -> Result<i64> {
    match tq.call_method("size", &[])? {
        Value::Int(n) => Ok(n),
        other => Err(opforge::Error::Type(
            format!("size() gave {}", other.type_name()).into(),
        )),
    }
}

/// The same shape and elements.
fn same(a: &Tensor, b: &Tensor) -> Result<bool> {
    Ok(a.shape() == b.shape() && a.to_vec::<f32>()? == b.to_vec::<f32>()?)
}

fn check(ok: bool, what: &str) -> Result<()> {
    match ok {
        true => Ok(()),
        false => Err(opforge::Error::Runtime(
            format!("check failed: {what}").into(),
        )),
    }
}

fn main() -> Result<()> {
    register()?;
    let x = Tensor::from_vec(vec![0.25f32, -1.5, 0.5, 2.0, -0.75, 1.0], &[2, 3])?;

    println!("1. The tutorial's Mod, eagerly: push sin, push cos, pop");
    let tq = empty_tensor_queue()?;
    let eager = mod_forward(&[Value::Object(tq.clone()), Value::Tensor(x.clone())])?;
    let popped = tensor(&eager[1])?;
    check(same(popped, &x.sin()?)?, "pop() gives x.sin()")?;
    check(size(&tq)? == 1, "one tensor left")?;
    println!("    popped = {popped}\n    tq.size() = {}", size(&tq)?);

    println!("\n2. Mod traced with fake tensors and a fake queue: methods as call_torchbind");
    let inputs = [
        Value::Object(empty_tensor_queue()?),
        Value::Tensor(x.clone()),
    ];
    let graph = trace(mod_forward, &inputs, TracingMode::Fake)?;
    print!("{graph}");

    println!("\n3. ForEachAdd on a 10-element queue, functionalized: with_effects and the token");
    let qlen = 10;
    let queue_of_zeros = || -> Result<ScriptObject> {
        let tq = empty_tensor_queue()?;
        for _ in 0..qlen {
            tq.call_method("push", &[Value::Tensor(torch::zeros(&[1])?)])?;
        }
        Ok(tq)
    };
    let inputs = [
        Value::Object(queue_of_zeros()?),
        Value::Tensor(torch::ones(&[1])?),
    ];
    let effects = trace(functionalize(for_each_add), &inputs, TracingMode::Fake)?;
    print!("{effects}");

    println!("\n4. Both graphs re-executed, against the programs run eagerly");
    let tq = empty_tensor_queue()?;
    let replayed = graph.run(&[Value::Object(tq.clone()), Value::Tensor(x.clone())])?;
    check(
        same(tensor(&replayed[1])?, popped)?,
        "Mod's graph pops what Mod popped",
    )?;
    check(size(&tq)? == 1, "Mod's graph leaves one tensor")?;
    println!(
        "    Mod: popped the same tensor, tq.size() = {}",
        size(&tq)?
    );
    let (eager_q, graph_q) = (queue_of_zeros()?, queue_of_zeros()?);
    for_each_add(&[
        Value::Object(eager_q.clone()),
        Value::Tensor(torch::ones(&[1])?),
    ])?;
    let out = effects.run(&[
        Value::Object(graph_q.clone()),
        Value::Tensor(torch::ones(&[1])?),
    ])?;
    check(
        object(&out[0])?.is_same(&graph_q),
        "ForEachAdd's graph returns the queue",
    )?;
    for q in [&eager_q, &graph_q] {
        check(size(q)? == qlen, "size() == qlen")?;
        let top = tensor(&q.call_method("top", &[])?)?.clone();
        check(same(&top, &torch::ones(&[1])?)?, "top() == ones(1)")?;
    }
    println!("    ForEachAdd: size() = {qlen} and top() = ones(1), eagerly and re-executed");
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_seeds_example_runs() {
        super::main().expect("the tutorial's example runs end to end");
    }
}
