use super::registry::link_fallbacks;
use super::*;
use crate::error::{Error, Result};
use crate::tables::{BaseType, OpSchema, RetSchema, SchemaKind, Ty};
use crate::tensor::{DType, Device, Tensor};
use crate::value::Value;
use std::sync::atomic::Ordering;

/// An operator whose kernels answer with their name ([`tag`]).
fn schema(name: &'static str) -> &'static OpSchema {
    Box::leak(Box::new(OpSchema {
        namespace: "test",
        name,
        base: name,
        overload: "",
        schema: "test::f(Tensor self) -> str",
        kind: SchemaKind::Functional,
        args: &[],
        returns: &[RetSchema {
            name: None,
            ty: Ty::Base(BaseType::Str),
            alias: None,
        }],
        function: true,
        method: false,
        python_module: None,
        kernels: &[],
        tags: &[],
        line: 0,
        varargs: false,
        varret: false,
    }))
}

fn tag(label: &'static str) -> Kernel {
    Kernel::from_closure(label, move |_, _, _| Ok(vec![Value::Str(label.into())]))
}

fn run(op: &Operator, args: &[Value]) -> String {
    match op.call_boxed(args) {
        Ok(v) => match &v[0] {
            Value::Str(s) => s.clone(),
            other => format!("{other}"),
        },
        Err(e) => format!("error: {e}"),
    }
}

fn cpu() -> Value {
    Value::Tensor(Tensor::zeros(&[1], DType::Float32, Device::Cpu))
}

fn meta() -> Value {
    Value::Tensor(Tensor::zeros(&[1], DType::Float32, Device::Meta))
}

/// A CPU tensor that requires grad (its key set has `Autograd`).
fn cpu_grad() -> Value {
    let t = Tensor::zeros(&[1], DType::Float32, Device::Cpu);
    t.set_requires_grad(true).unwrap();
    Value::Tensor(t)
}

/// The keys of a CPU tensor that requires grad.
fn grad_keys() -> KeySet {
    KeySet::for_device(Device::Cpu)
        .with(DispatchKey::ADInplaceOrView)
        .with(DispatchKey::Autograd)
}

#[test]
fn backend_kernels_are_picked_by_device() {
    let op = Operator::new(schema("backends"));
    op.register(DispatchKey::CPU, tag("cpu")).unwrap();
    op.register(DispatchKey::Meta, tag("meta")).unwrap();
    assert_eq!(run(&op, &[cpu()]), "cpu");
    assert_eq!(run(&op, &[meta()]), "meta");
    // Meta is the higher backend: a mixed call goes there.
    assert_eq!(run(&op, &[cpu(), meta()]), "meta");
}

#[test]
fn alias_keys_resolve_like_pytorch() {
    // CompositeImplicitAutograd alone: runs at Autograd for a tensor that
    // requires grad, above Python for one under a handler, and on every
    // backend.
    let cia = Operator::new(schema("cia"));
    cia.register(DispatchKey::CompositeImplicitAutograd, tag("cia"))
        .unwrap();
    assert_eq!(cia.dispatch_key(grad_keys()), Some(DispatchKey::Autograd));
    let python = KeySet::for_device(Device::Cpu).with(DispatchKey::Python);
    assert_eq!(cia.dispatch_key(python), Some(DispatchKey::Python));
    assert!(
        cia.kernel(python).unwrap().0.source() == "cia",
        "the decomposition, not a Python handler"
    );
    assert_eq!(
        cia.dispatch_key(KeySet::for_device(Device::Cpu)),
        Some(DispatchKey::CPU)
    );
    assert_eq!(run(&cia, &[meta()]), "cia");
    assert_eq!(run(&cia, &[cpu_grad()]), "cia");
    // With a backend kernel, the decomposition is not used for that key and not at
    // Autograd or Python.
    let both = Operator::new(schema("both"));
    both.register(DispatchKey::CompositeImplicitAutograd, tag("cia"))
        .unwrap();
    both.register(DispatchKey::CPU, tag("cpu")).unwrap();
    assert_eq!(run(&both, &[cpu()]), "cpu");
    assert_eq!(run(&both, &[cpu_grad()]), "cpu");
    // At `Python`, the key's linked fallback (the `__torch_dispatch__` layer's,
    // as PyTorch's Python key always has one), not the decomposition.
    assert_eq!(both.dispatch_key(python), Some(DispatchKey::Python));
    assert!(both.kernel(python).unwrap().0.source() != "cia");
    assert_eq!(run(&both, &[meta()]), "cia");
    // CompositeExplicitAutograd fills backends, not Autograd (there the
    // autograd layer's fallback runs); a direct kernel wins.
    let cea = Operator::new(schema("cea"));
    cea.register(DispatchKey::CompositeExplicitAutograd, tag("cea"))
        .unwrap();
    cea.register(DispatchKey::Meta, tag("meta")).unwrap();
    assert_eq!(cea.dispatch_key(grad_keys()), Some(DispatchKey::Autograd));
    let (fallback, _) = cea.kernel(grad_keys()).unwrap();
    assert!(
        fallback.source().contains("fallback.rs"),
        "{}",
        fallback.source()
    );
    assert_eq!(run(&cea, &[cpu_grad()]), "cea");
    assert_eq!(run(&cea, &[cpu()]), "cea");
    assert_eq!(run(&cea, &[meta()]), "meta");
}

#[test]
fn fallthrough_exclude_include_and_redispatch() {
    let op = Operator::new(schema("layers"));
    op.register(DispatchKey::CPU, tag("cpu")).unwrap();
    op.register(
        DispatchKey::Autograd,
        Kernel::from_closure("autograd", |op, keys, args| {
            let below = op.redispatch(keys, DispatchKey::Autograd, args)?;
            let Value::Str(s) = &below[0] else {
                unreachable!()
            };
            Ok(vec![Value::Str(format!("autograd>{s}"))])
        }),
    )
    .unwrap();
    op.register(DispatchKey::ADInplaceOrView, Kernel::fallthrough("here"))
        .unwrap();
    // A tensor that does not require grad never reaches the Autograd kernel.
    assert_eq!(run(&op, &[cpu()]), "cpu");
    assert_eq!(run(&op, &[cpu_grad()]), "autograd>cpu");
    assert_eq!(run(&op, &[cpu(), cpu_grad()]), "autograd>cpu");
    {
        let _g = LocalKeys::exclude(KeySet::of(DispatchKey::Autograd));
        assert_eq!(run(&op, &[cpu_grad()]), "cpu");
    }
    assert_eq!(run(&op, &[cpu_grad()]), "autograd>cpu");
    op.register(DispatchKey::Python, tag("python")).unwrap();
    // Python is not in a plain tensor's key set; including it reaches it below Autograd.
    let _g = LocalKeys::include(KeySet::of(DispatchKey::Python));
    assert_eq!(run(&op, &[cpu_grad()]), "autograd>python");
    assert_eq!(run(&op, &[cpu()]), "python");
}

#[test]
fn errors_name_the_operator_the_key_and_the_registered_keys() {
    let op = Operator::new(schema("cpu_only"));
    op.register(DispatchKey::CPU, tag("cpu")).unwrap();
    assert_eq!(
        run(&op, &[meta()]),
        "error: Could not run 'test::cpu_only' with arguments from the 'Meta' backend. 'test::cpu_only' is only available for these backends: [CPU]."
    );
    // No backend key at all (a boxed call without tensors picks one from its
    // device arguments, CPU by default, as PyTorch's BackendSelect does):
    // PyTorch's message for its `Undefined` key.
    assert_eq!(
        format!("error: {}", op.kernel(KeySet::EMPTY).err().unwrap()),
        "error: There were no tensor arguments to this function (e.g., you passed an empty list of Tensors), but no fallback function is registered for schema test::cpu_only.  This usually means that this function requires a non-empty list of Tensors, or that you (the operator writer) forgot to register a fallback function.  Available functions are [CPU]."
    );
    let e = op.register(DispatchKey::CPU, tag("again")).unwrap_err();
    assert_eq!(
        e.to_string(),
        "duplicate kernel for test::cpu_only on CPU: registered at cpu and at again"
    );
}

#[test]
fn registration_may_race_with_calls() {
    let op: &'static Operator = Box::leak(Box::new(Operator::new(schema("racy"))));
    op.register(DispatchKey::CPU, tag("first")).unwrap();
    std::thread::scope(|s| {
        let caller = s.spawn(|| {
            for _ in 0..2000 {
                let got = run(op, &[cpu()]);
                assert!(got == "first" || got == "second", "{got}");
            }
        });
        for _ in 0..200 {
            op.override_kernel(DispatchKey::CPU, tag("second")).unwrap();
            op.override_kernel(DispatchKey::CPU, tag("first")).unwrap();
        }
        caller.join().unwrap();
    });
}

#[test]
fn key_sets() {
    assert_eq!(
        KeySet::for_device(Device::Cpu),
        KeySet::of(DispatchKey::CPU)
    );
    let ks = grad_keys();
    assert_eq!(KeySet::of_values(&[cpu_grad()]), ks);
    assert_eq!(ks.highest(), Some(DispatchKey::Autograd));
    assert_eq!(
        ks.below(DispatchKey::Autograd).highest(),
        Some(DispatchKey::ADInplaceOrView)
    );
    assert_eq!(ks.highest_backend(), Some(DispatchKey::CPU));
    assert_eq!(
        KeySet::of_values(&[Value::Device(Device::Meta)]).highest_backend(),
        Some(DispatchKey::Meta)
    );
    assert_eq!(
        format!("{}", KeySet::of(DispatchKey::CPU).with(DispatchKey::Python)),
        "DispatchKeySet(CPU, Python)"
    );
}

#[test]
fn a_second_kernel_for_a_key_is_an_error_unless_it_overrides() {
    let op = Operator::new(schema("twice"));
    op.register(DispatchKey::CPU, tag("first")).unwrap();
    let e = op.register(DispatchKey::CPU, tag("second")).unwrap_err();
    assert!(matches!(e, Error::DuplicateKernel(_)), "{e}");
    assert_eq!(run(&op, &[cpu()]), "first");
    op.override_kernel(DispatchKey::CPU, tag("second")).unwrap();
    assert_eq!(run(&op, &[cpu()]), "second");
}

fn neg_like(_: &Tensor) -> Result<Tensor> {
    Err(Error::Runtime("neg_like ran".into()))
}

/// A typed kernel made for `test::neg_like(Tensor self) -> Tensor`.
static NEG_LIKE: linked::KernelEntry = linked::KernelEntry {
    op: "test::neg_like",
    key: "CPU",
    schema: "test::neg_like(Tensor self) -> Tensor",
    entry: adapter::Entry::new::<
        fn(&Tensor) -> Result<Tensor>,
        fn(&'static Tensor) -> Result<Tensor>,
    >(&(neg_like as fn(&Tensor) -> Result<Tensor>)),
    file: "tests.rs",
    line: 1,
};

#[test]
fn a_typed_kernel_written_for_another_schema_is_refused() {
    let mut s = *schema("other");
    s.schema = "test::other(Tensor self, int k) -> Tensor";
    let op = Operator::new(Box::leak(Box::new(s)));
    let e = op
        .register(DispatchKey::CPU, Kernel::from_entry(&NEG_LIKE))
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "test::other: cannot register the kernel from tests.rs:1 for `test::other(Tensor self, int k) -> Tensor`: it was written for `test::neg_like(Tensor self) -> Tensor`"
    );
    assert!(op
        .override_kernel(DispatchKey::CPU, Kernel::from_entry(&NEG_LIKE))
        .is_err());
    // The same schema text (namespaced or not) is accepted.
    let mut s = *schema("neg_like");
    s.schema = "neg_like(Tensor self) -> Tensor";
    s.namespace = "test";
    let op = Operator::new(Box::leak(Box::new(s)));
    op.register(DispatchKey::CPU, Kernel::from_entry(&NEG_LIKE))
        .unwrap();
}

#[test]
fn the_unboxed_entry_comes_back_only_as_its_own_type() {
    let k = Kernel::from_entry(&NEG_LIKE);
    assert!(k.has_unboxed());
    type Right = fn(&Tensor) -> Result<Tensor>;
    type Wrong = fn(&Tensor, i64) -> Result<Tensor>;
    let t = Tensor::zeros(&[1], DType::Float32, Device::Cpu);
    let f = k.unboxed::<Right>().unwrap();
    assert_eq!(f(&t).unwrap_err().to_string(), "neg_like ran");
    assert!(k.unboxed::<Wrong>().is_none());
    assert!(k.unboxed::<fn(&Tensor) -> Result<Vec<Tensor>>>().is_none());
    assert!(tag("closure").unboxed::<Right>().is_none());
}

#[test]
fn layer_data_comes_back_only_as_its_own_type_and_layer() {
    let op = Operator::new(schema("attached"));
    let key = DispatchKey::Autograd;
    assert!(op.layer_data::<u32>(key).is_none());
    static DATA: u32 = 7;
    let got = op.layer_data_with(key, || &DATA).expect("first attachment");
    assert!(std::ptr::eq(got, &DATA));
    // Asked for as another type (same size, or not): nothing, never a cast.
    assert!(op.layer_data::<i32>(key).is_none());
    assert!(op.layer_data::<String>(key).is_none());
    static OTHER: i32 = 8;
    assert!(
        op.layer_data_with(key, || &OTHER).is_none(),
        "another type cannot replace it"
    );
    assert_eq!(op.layer_data::<u32>(key), Some(&7));
    // Each layer has its own slot.
    assert!(op.layer_data::<u32>(DispatchKey::Python).is_none());
    assert_eq!(op.layer_data_with(DispatchKey::Python, || &OTHER), Some(&8));
    assert_eq!(op.layer_data::<u32>(key), Some(&7));
}

/// The interleaving that lost calls, replayed deterministically: a call reads
/// the active-key mask, a re-registration then drops that key (Autograd becomes
/// a fallthrough, then is removed), and only then does the call read the
/// slot. It must still find a kernel (the one it saw), never an empty slot.
#[test]
fn a_call_that_read_the_old_mask_still_finds_a_kernel() {
    let op = Operator::new(schema("window"));
    op.register(DispatchKey::CPU, tag("cpu")).unwrap();
    op.register(DispatchKey::Autograd, tag("autograd")).unwrap();
    for change in [
        |op: &Operator| {
            op.override_kernel(DispatchKey::Autograd, Kernel::fallthrough("t"))
                .unwrap()
        },
        |op: &Operator| assert!(op.remove_kernel(DispatchKey::Autograd)),
    ] {
        op.override_kernel(DispatchKey::Autograd, tag("autograd"))
            .unwrap();
        let keys = KeySet::of_values(&[cpu_grad()]);
        let picked = op.dispatch_key(keys).unwrap(); // the call reads the mask …
        assert_eq!(picked, DispatchKey::Autograd);
        change(&op); // … a re-registration drops the key …
        let slot = op.table[picked.slot()].load(); // … the call reads the slot.
        assert!(slot.is_some(), "the slot of a key the call saw was cleared");
        assert_eq!(run(&op, &[cpu_grad()]), "cpu");
    }
}

/// A replaced kernel stays alive while a call holds it, and is freed once the
/// last holder lets go (re-registration used to leak every replaced kernel).
/// A boxed call reads a link-time kernel's static entry from the operator's
/// `fast_boxed` slot (no `arc-swap` load); a kernel made at run time is
/// reached through its slot in `table`, and replacing either switches both.
#[test]
fn boxed_calls_take_a_link_time_kernels_entry_directly() {
    let mut s = *schema("neg_like");
    s.schema = "neg_like(Tensor self) -> Tensor";
    s.namespace = "test";
    let op = Operator::new(Box::leak(Box::new(s)));
    let slot = DispatchKey::CPU.slot();
    let fast = |op: &Operator| op.fast_boxed[slot].get().is_some();
    op.register(DispatchKey::CPU, Kernel::from_entry(&NEG_LIKE))
        .unwrap();
    assert!(fast(&op));
    let e = op.call_boxed(&[cpu()]).unwrap_err();
    assert_eq!(e.to_string(), "neg_like ran");
    op.override_kernel(DispatchKey::CPU, tag("closure"))
        .unwrap();
    assert!(!fast(&op));
    assert_eq!(run(&op, &[cpu()]), "closure");
    op.override_kernel(DispatchKey::CPU, Kernel::from_entry(&NEG_LIKE))
        .unwrap();
    assert!(fast(&op));
    // Poisoned, the fast slot is empty and the call reports the poison.
    op.poison(Error::Runtime("poisoned".into()));
    assert!(!fast(&op));
    assert_eq!(op.call_boxed(&[cpu()]).unwrap_err().to_string(), "poisoned");
}

#[test]
fn a_replaced_kernel_lives_while_held_and_is_freed_after() {
    use std::sync::atomic::AtomicUsize;
    use std::sync::Arc;
    /// Counts its drops: captured by a kernel, dropped with it.
    struct Witness(Arc<AtomicUsize>);
    impl Drop for Witness {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
    let dropped = Arc::new(AtomicUsize::new(0));
    let witnessed = |name: &'static str| {
        let w = Witness(dropped.clone());
        Kernel::from_closure(name, move |_, _, _| {
            let _ = &w;
            Ok(vec![Value::Str(name.into())])
        })
    };
    let op = Operator::new(schema("reclaimed"));
    op.register(DispatchKey::CPU, witnessed("first")).unwrap();
    let keys = KeySet::of_values(&[cpu()]);
    let (held, _) = op.kernel(keys).unwrap();
    op.override_kernel(DispatchKey::CPU, witnessed("second"))
        .unwrap();
    // Still registered nowhere, still callable by the call that holds it.
    assert_eq!(dropped.load(Ordering::SeqCst), 0);
    let out = held.call_boxed(&op, keys, &[cpu()]).unwrap();
    assert!(matches!(&out[..], [Value::Str(s)] if s == "first"));
    assert_eq!(run(&op, &[cpu()]), "second");
    drop(held);
    assert_eq!(
        dropped.load(Ordering::SeqCst),
        1,
        "the first kernel was not freed"
    );
    assert!(op.remove_kernel(DispatchKey::CPU));
    // The slot keeps the last kernel until something is stored over it (a
    // call that read the old mask may still reach it); poisoning clears it.
    op.poison(Error::Runtime("gone".into()));
    assert_eq!(
        dropped.load(Ordering::SeqCst),
        2,
        "the second kernel was not freed"
    );
}

#[test]
fn link_time_fallbacks_conflicting_or_for_unknown_keys_are_errors() {
    fn answer(_: &Operator, _: KeySet, _: &[Value]) -> Result<Vec<Value>> {
        Ok(vec![Value::Int(1)])
    }
    let entry = |key, line| linked::FallbackEntry {
        key,
        boxed: answer,
        typed: None,
        leaves_alone: None,
        file: "f.rs",
        line,
    };
    let entries: &'static [linked::FallbackEntry] = Box::leak(Box::new([
        entry("Autograd", 1),
        entry("Autograd", 2),
        entry("NoSuchKey", 3),
        entry("CompositeImplicitAutograd", 4),
    ]));
    let mut errors = Vec::new();
    let fallbacks = link_fallbacks(entries, &mut errors);
    // The first stays; the second is reported with both places.
    let kept = fallbacks[DispatchKey::Autograd.slot()].as_ref().unwrap();
    assert_eq!(kept.source(), "f.rs:1");
    let messages: Vec<String> = errors.iter().map(|e| e.to_string()).collect();
    assert_eq!(messages.len(), 3, "{messages:?}");
    assert!(messages[0].contains("two fallbacks for dispatch key Autograd: f.rs:1 and f.rs:2"));
    assert!(messages[1].contains("f.rs:3: unknown runtime dispatch key NoSuchKey"));
    assert!(messages[2].contains("f.rs:4: unknown runtime dispatch key CompositeImplicitAutograd"));
    assert_eq!(fallbacks.iter().flatten().count(), 1);
}
