use super::*;
use crate::schema::{OpSchema, SchemaKind};
use crate::tensor::{DType, Device, Tensor};

fn schema(name: &'static str) -> &'static OpSchema {
    Box::leak(Box::new(OpSchema {
        namespace: "test",
        name,
        base: name,
        overload: "",
        schema: "test::f(Tensor self) -> Tensor",
        kind: SchemaKind::Functional,
        args: &[],
        returns: &[],
        function: true,
        method: false,
        python_module: None,
        kernels: &[],
        tags: &[],
        line: 0,
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
    // CompositeImplicitAutograd alone: runs at Autograd, for every backend.
    let cia = Operator::new(schema("cia"));
    cia.register(DispatchKey::CompositeImplicitAutograd, tag("cia"))
        .unwrap();
    assert_eq!(
        cia.dispatch_key(KeySet::for_device(Device::Cpu)),
        Some(DispatchKey::Autograd)
    );
    assert_eq!(run(&cia, &[meta()]), "cia");
    // With a backend kernel, the decomposition is not used for that key and not at
    // Autograd.
    let both = Operator::new(schema("both"));
    both.register(DispatchKey::CompositeImplicitAutograd, tag("cia"))
        .unwrap();
    both.register(DispatchKey::CPU, tag("cpu")).unwrap();
    assert_eq!(run(&both, &[cpu()]), "cpu");
    assert_eq!(run(&both, &[meta()]), "cia");
    // CompositeExplicitAutograd fills backends, not Autograd; a direct kernel wins.
    let cea = Operator::new(schema("cea"));
    cea.register(DispatchKey::CompositeExplicitAutograd, tag("cea"))
        .unwrap();
    cea.register(DispatchKey::Meta, tag("meta")).unwrap();
    assert_eq!(
        cea.dispatch_key(KeySet::for_device(Device::Cpu)),
        Some(DispatchKey::CPU)
    );
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
    assert_eq!(run(&op, &[cpu()]), "autograd>cpu");
    {
        let _g = LocalKeys::exclude(KeySet::of(DispatchKey::Autograd));
        assert_eq!(run(&op, &[cpu()]), "cpu");
    }
    assert_eq!(run(&op, &[cpu()]), "autograd>cpu");
    op.register(DispatchKey::Python, tag("python")).unwrap();
    // Python is not in a plain tensor's key set; including it reaches it below Autograd.
    let _g = LocalKeys::include(KeySet::of(DispatchKey::Python));
    assert_eq!(run(&op, &[cpu()]), "autograd>python");
}

#[test]
fn errors_name_the_operator_the_key_and_the_registered_keys() {
    let op = Operator::new(schema("cpu_only"));
    op.register(DispatchKey::CPU, tag("cpu")).unwrap();
    assert_eq!(
        run(&op, &[meta()]),
        "error: Could not run 'test::cpu_only' with arguments from the 'Meta' backend. 'test::cpu_only' is only available for these backends: [CPU]."
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
            op.register_override(DispatchKey::CPU, tag("second"));
            op.register_override(DispatchKey::CPU, tag("first"));
        }
        caller.join().unwrap();
    });
}

#[test]
fn key_sets() {
    let ks = KeySet::for_device(Device::Cpu);
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
