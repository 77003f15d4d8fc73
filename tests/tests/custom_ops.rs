//! Custom operators (PyTorch's `torch/library.py`): defined at run time with
//! `opforge::library` (PyTorch's `torch.library`) and at compile time with `#[op]`,
//! called boxed by name (schema-level rules) and typed, with PyTorch's messages.
//!
//! Every test uses its own namespace: definitions are permanent and tests share
//! one process.

use opforge::dispatch::{dispatcher, DispatchKey, KeySet, LocalKeys};
use opforge::library::{self, register_fake, Library, LibraryKind};
use opforge::registry::Registry;
use opforge::{op, DType, Device, Error, Result, Scalar, Tensor, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

fn t(v: &[f32]) -> Tensor {
    Tensor::from_vec(v.to_vec(), &[v.len()]).unwrap()
}

fn meta(n: usize) -> Value {
    Value::Tensor(Tensor::zeros(&[n], DType::Float32, Device::Meta))
}

fn tensor_of(v: &[Value]) -> Tensor {
    match v {
        [Value::Tensor(t)] => t.clone(),
        other => panic!("expected one tensor, got {other:?}"),
    }
}

/// The string results of a call.
fn strs(v: Vec<Value>) -> Vec<String> {
    v.into_iter()
        .map(|v| match v {
            Value::Str(s) => s,
            other => format!("{other:?}"),
        })
        .collect()
}

fn kw(name: &str, v: Value) -> (String, Value) {
    (name.to_string(), v)
}

/// A CPU kernel for `foo(Tensor x, float a=1.) -> Tensor`: x * a.
fn scale_kernel(args: &[Value]) -> Result<Vec<Value>> {
    let (Value::Tensor(x), Value::Float(a)) = (&args[0], &args[1]) else {
        return Err(Error::Type(format!("unexpected arguments {args:?}").into()));
    };
    Ok(vec![Value::Tensor((x * *a)?)])
}

/// A fake kernel: a meta tensor of the input's shape.
fn like_fake(args: &[Value]) -> Result<Vec<Value>> {
    let Value::Tensor(x) = &args[0] else {
        return Err(Error::Type("expected a tensor".into()));
    };
    Ok(vec![Value::Tensor(Tensor::zeros(
        &x.shape(),
        x.dtype(),
        Device::Meta,
    ))])
}

#[test]
fn define_impl_and_call_with_positional_keyword_and_default_args() -> Result<()> {
    let lib = Library::new("co_call", LibraryKind::Def)?;
    assert_eq!(
        lib.define("foo(Tensor x, float a=1.) -> Tensor")?,
        "co_call::foo"
    );
    lib.impl_("foo", DispatchKey::CPU, scale_kernel)?;
    let x = Value::Tensor(t(&[1.0, 2.0]));
    // Default.
    let out = library::call("co_call::foo", std::slice::from_ref(&x), &[])?;
    assert_eq!(tensor_of(&out).to_vec::<f32>()?, vec![1.0, 2.0]);
    // Positional (an int converts to float, as TorchScript does).
    let out = library::call("co_call::foo", &[x.clone(), Value::Int(3)], &[])?;
    assert_eq!(tensor_of(&out).to_vec::<f32>()?, vec![3.0, 6.0]);
    // Keyword, including the first argument; overload handle `.default`.
    let out = library::call(
        "co_call::foo.default",
        &[],
        &[kw("x", x.clone()), kw("a", Value::Float(0.5))],
    )?;
    assert_eq!(tensor_of(&out).to_vec::<f32>()?, vec![0.5, 1.0]);
    // The boxed call on the operator handle takes every argument.
    let op = library::find("co_call::foo")?;
    let out = op.call_boxed(&[x.clone(), Value::Float(2.0)])?;
    assert_eq!(tensor_of(&out).to_vec::<f32>()?, vec![2.0, 4.0]);
    assert_eq!(
        op.schema.schema,
        "co_call::foo(Tensor x, float a=1.) -> Tensor"
    );
    assert_eq!(op.schema.args[1].name, "a");
    // A binding error is the schema-level one.
    let e = library::call(
        "co_call::foo",
        std::slice::from_ref(&x),
        &[kw("b", Value::Int(1))],
    )
    .unwrap_err();
    assert!(
        e.to_string()
            == "Unknown keyword argument 'b' for operator 'co_call::foo'. Schema: co_call::foo(Tensor x, float a=1.) -> Tensor",
        "{e}"
    );
    // A schema-file registry falls back to operators defined at run time.
    let reg = Registry::from_yaml_str("t.yaml", "- func: neg(Tensor self) -> Tensor\n")
        .map_err(|d| Error::Runtime(d.to_string().into()))?;
    let r = reg.resolve("co_call::foo", &[x], &[])?;
    assert_eq!(r.overload.name, "foo");
    assert!(matches!(r.bound[1], Value::Float(a) if a == 1.0));
    Ok(())
}

#[test]
fn overloads_resolve_in_definition_order() -> Result<()> {
    let lib = Library::new("co_over", LibraryKind::Def)?;
    lib.define("f.Tensor(Tensor x, Tensor y) -> Tensor")?;
    lib.define("f.str(Tensor x, str mode) -> str")?;
    lib.impl_(
        "f.Tensor",
        DispatchKey::CompositeExplicitAutograd,
        |a: &[Value]| Ok(vec![a[1].clone()]),
    )?;
    lib.impl_(
        "co_over::f.str",
        DispatchKey::CompositeExplicitAutograd,
        |a: &[Value]| Ok(vec![a[1].clone()]),
    )?;
    let x = Value::Tensor(t(&[1.0]));
    let out = library::call("co_over::f", &[x.clone(), Value::Str("hi".into())], &[])?;
    assert_eq!(strs(out), ["hi"]);
    let out = library::call("co_over::f", &[x.clone(), x.clone()], &[])?;
    assert!(matches!(&out[..], [Value::Tensor(_)]));
    let e = library::call("co_over::f", &[x.clone(), Value::Int(1)], &[]).unwrap_err();
    assert!(
        e.to_string().starts_with(
            "Overloaded torch operator invoked from Python failed to match any schema:\nco_over::f() Expected a value of type 'Tensor' for argument 'y' but instead found type 'int'."
        ),
        "{e}"
    );
    let e = library::call("co_over::f.nope", std::slice::from_ref(&x), &[]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "The underlying op of 'co_over.f' has no overload name 'nope'"
    );
    let e = library::call("co_over::g", &[x], &[]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "'_OpNamespace' 'co_over' object has no attribute 'g'. Did you mean 'f'?"
    );
    Ok(())
}

// A name in a namespace nobody registered says how to link the crate that
// defines it; a near name in a known one is suggested (PyTorch's message
// first, unchanged).
#[test]
fn unknown_names_say_what_to_do() {
    let x = Value::Tensor(Tensor::from_vec(vec![1.0f32], &[1]).unwrap());
    let e = library::call("co_unlinked::clip_norm", std::slice::from_ref(&x), &[]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "'_OpNamespace' 'co_unlinked' object has no attribute 'clip_norm'. No operator of \
         namespace 'co_unlinked' is registered: if a crate defines them, name it in this \
         binary (`use co_unlinked as _;` for a crate called co_unlinked): the linker drops \
         a crate that nothing names, and its registrations with it"
    );
    let e = library::call("aten::sofmax", std::slice::from_ref(&x), &[]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "'_OpNamespace' 'aten' object has no attribute 'sofmax'. Did you mean 'softmax'?"
    );
    let e = library::call("aten::sofmax.int", &[x], &[]).unwrap_err();
    assert!(e.to_string().ends_with("Did you mean 'softmax'?"), "{e}");
    let e = opforge::overrides::ops("aten")
        .packet("sofmax")
        .unwrap_err();
    assert!(e.to_string().ends_with("Did you mean 'softmax'?"), "{e}");
}

#[test]
fn fake_kernels_serve_meta_tensors() -> Result<()> {
    let lib = Library::new("co_fake", LibraryKind::Def)?;
    lib.define("foo(Tensor x, float a=1.) -> Tensor")?;
    lib.impl_("foo", DispatchKey::CPU, scale_kernel)?;
    let e = library::call("co_fake::foo", &[meta(4)], &[]).unwrap_err();
    assert_eq!(e.python_class(), "NotImplementedError");
    assert!(
        e.to_string().starts_with(
            "co_fake::foo: attempted to run this operator with Meta tensors, but there was no fake impl or Meta kernel registered. "
        ),
        "{e}"
    );
    register_fake("co_fake::foo", like_fake)?;
    let out = library::call("co_fake::foo", &[meta(4)], &[kw("a", Value::Float(2.0))])?;
    let y = tensor_of(&out);
    assert_eq!((y.shape(), y.device()), (vec![4], Device::Meta));
    // CPU still runs the CPU kernel.
    let out = library::call("co_fake::foo", &[Value::Tensor(t(&[1.0]))], &[])?;
    assert_eq!(tensor_of(&out).device(), Device::Cpu);
    // Registering the fake again replaces it.
    register_fake("co_fake::foo", |_: &[Value]| Ok(vec![meta(1)]))?;
    let out = library::call("co_fake::foo", &[meta(4)], &[])?;
    assert_eq!(tensor_of(&out).shape(), vec![1]);

    // A Meta kernel from `impl_` refuses a fake; a CompositeExplicitAutograd
    // kernel serves meta tensors too.
    lib.define("bar(Tensor x) -> Tensor")?;
    lib.impl_("bar", DispatchKey::Meta, like_fake)?;
    let e = register_fake("co_fake::bar", like_fake).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("register_fake(\"co_fake::bar\"): the operator co_fake::bar already has"),
        "{e}"
    );
    lib.define("baz(Tensor x) -> Tensor")?;
    lib.impl_("baz", DispatchKey::CompositeExplicitAutograd, like_fake)?;
    assert!(library::call("co_fake::baz", &[meta(2)], &[]).is_ok());
    Ok(())
}

#[test]
fn library_errors_are_pytorchs() -> Result<()> {
    // Kinds.
    let e = "BOGUS".parse::<LibraryKind>().unwrap_err();
    assert_eq!(
        (e.python_class(), e.to_string()),
        ("ValueError", "Unsupported kind: BOGUS".into())
    );
    assert_eq!("IMPL".parse::<LibraryKind>()?, LibraryKind::Impl);
    // One DEF per namespace; fragments and impls are fine.
    let lib = Library::new("co_err", LibraryKind::Def)?;
    let e = Library::new("co_err", LibraryKind::Def).unwrap_err();
    assert_eq!(e.python_class(), "RuntimeError");
    assert!(
        e.to_string().starts_with(
            "Only a single TORCH_LIBRARY can be used to register the namespace co_err; please put all of your definitions in a single TORCH_LIBRARY block."
        ),
        "{e}"
    );
    assert!(e.to_string().contains("custom_ops.rs"), "{e}");
    let frag = Library::new("co_err", LibraryKind::Fragment)?;
    let imp = Library::new("co_err", LibraryKind::Impl)?;
    let e = Library::new("aten", LibraryKind::Def).unwrap_err();
    assert!(e.to_string().contains("namespace aten;"), "{e}");

    // Malformed schema: the parser's message with its column.
    let e = lib.define("foo(Tensor x, float a=1.) ->").unwrap_err();
    assert!(
        e.to_string()
            .starts_with("Invalid schema string `foo(Tensor x, float a=1.) ->`: column "),
        "{e}"
    );
    let e = lib.define("foo(Tensr x) -> Tensor").unwrap_err();
    assert!(e.to_string().contains("Tensr"), "{e}");

    // Namespace mismatch.
    let e = lib.define("other::foo(Tensor x) -> Tensor").unwrap_err();
    assert!(
        e.to_string().starts_with(
            "Explicitly provided namespace (other) in schema string does not match namespace of enclosing TORCH_LIBRARY block (co_err). "
        ),
        "{e}"
    );
    let e = frag.define("other::foo(Tensor x) -> Tensor").unwrap_err();
    assert!(
        e.to_string()
            .contains("enclosing TORCH_LIBRARY_FRAGMENT block (co_err)"),
        "{e}"
    );

    // Redefinition, from the same or another block.
    lib.define("foo(Tensor x, float a=1.) -> Tensor")?;
    for l in [&lib, &frag] {
        let e = l
            .define("co_err::foo(Tensor x, float a=1.) -> Tensor")
            .unwrap_err();
        assert!(
            e.to_string().starts_with(
                "Tried to register an operator (co_err::foo(Tensor x, float a=1.) -> Tensor) with the same name and overload name multiple times. Each overload's schema should only be registered with a single call to def()."
            ),
            "{e}"
        );
    }
    // A new overload is not a redefinition; a built-in name is.
    assert_eq!(
        frag.define("foo.int(Tensor x, int a) -> Tensor")?,
        "co_err::foo.int"
    );
    let aten = Library::new("aten", LibraryKind::Fragment)?;
    assert!(aten
        .define("add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor")
        .unwrap_err()
        .to_string()
        .starts_with("Tried to register an operator (aten::add.Tensor("));

    // No definitions in an IMPL block; impl() namespaces must match.
    let e = imp.define("bar(Tensor x) -> Tensor").unwrap_err();
    assert!(
        e.to_string().starts_with(
            "def(\"bar\"): Cannot define an operator inside of a TORCH_LIBRARY_IMPL block."
        ),
        "{e}"
    );
    let e = imp
        .impl_("other::foo", DispatchKey::CPU, scale_kernel)
        .unwrap_err();
    assert!(
        e.to_string().contains(
            "Explicitly provided namespace (other) in operator name does not match namespace of enclosing TORCH_LIBRARY_IMPL block (co_err)"
        ),
        "{e}"
    );
    let e = imp
        .impl_("nope", DispatchKey::CPU, scale_kernel)
        .unwrap_err();
    assert_eq!(e.to_string(), "unknown operator co_err::nope");

    // Calling without a kernel.
    let x = Value::Tensor(t(&[1.0]));
    let e = library::call("co_err::foo", std::slice::from_ref(&x), &[]).unwrap_err();
    assert_eq!(e.python_class(), "NotImplementedError");
    assert!(
        e.to_string()
            .starts_with("Could not run 'co_err::foo' with arguments from the 'CPU' backend. "),
        "{e}"
    );
    // A second kernel for the same key is an error; replacing one is explicit.
    imp.impl_("foo", DispatchKey::CPU, |_: &[Value]| {
        Err(Error::Runtime("first".into()))
    })?;
    let e = imp
        .impl_("foo", DispatchKey::CPU, scale_kernel)
        .unwrap_err();
    assert!(
        e.to_string().starts_with("This is not allowed since there's already a kernel registered from python overriding foo's behavior for CPU dispatch key and co_err namespace."),
        "{e}"
    );
    assert!(library::call("co_err::foo", std::slice::from_ref(&x), &[]).is_err());
    imp.impl_override("foo", DispatchKey::CPU, scale_kernel)?;
    assert!(library::call("co_err::foo", std::slice::from_ref(&x), &[]).is_ok());
    // Errors from a kernel come back unchanged.
    imp.impl_("foo.int", DispatchKey::CPU, |_: &[Value]| {
        Err(Error::Index("oops".into()))
    })?;
    let e = library::call("co_err::foo.int", &[x, Value::Int(1)], &[]).unwrap_err();
    assert_eq!(
        (e.python_class(), e.to_string()),
        ("IndexError", "oops".into())
    );
    Ok(())
}

#[test]
fn kernels_per_key_and_redispatch() -> Result<()> {
    let lib = Library::new("co_keys", LibraryKind::Def)?;
    lib.define("f(Tensor x) -> str")?;
    lib.impl_(
        "f",
        DispatchKey::CompositeImplicitAutograd,
        |_: &[Value]| Ok(vec![Value::Str("composite".into())]),
    )?;
    let x = Value::Tensor(t(&[1.0]));
    assert_eq!(
        strs(library::call("co_keys::f", std::slice::from_ref(&x), &[])?),
        ["composite"]
    );
    lib.impl_("f", DispatchKey::CPU, |_: &[Value]| {
        Ok(vec![Value::Str("cpu".into())])
    })?;
    assert_eq!(
        strs(library::call("co_keys::f", std::slice::from_ref(&x), &[])?),
        ["cpu"]
    );
    // A Python-key kernel that redispatches below itself.
    let seen = Arc::new(AtomicUsize::new(0));
    let s = seen.clone();
    lib.impl_kernel(
        "f",
        DispatchKey::Python,
        opforge::dispatch::Kernel::from_closure("test", move |op, keys, args| {
            s.fetch_add(1, Ordering::SeqCst);
            // As a mode handler runs with its mode popped.
            let _g = LocalKeys::exclude(KeySet::of(DispatchKey::Python));
            op.call_with_keys(keys.below(DispatchKey::Python), args)
        }),
    )?;
    assert_eq!(
        strs(library::call("co_keys::f", std::slice::from_ref(&x), &[])?),
        ["cpu"]
    );
    assert_eq!(seen.load(Ordering::SeqCst), 0);
    {
        let _g = LocalKeys::include(KeySet::of(DispatchKey::Python));
        assert_eq!(strs(library::call("co_keys::f", &[x], &[])?), ["cpu"]);
    }
    assert_eq!(seen.load(Ordering::SeqCst), 1);
    Ok(())
}

// ---- `#[op]`: compile-time definitions ------------------------------------------

static SCALE_CALLS: AtomicUsize = AtomicUsize::new(0);

/// `x * k`, defined at compile time.
#[op("co_macro::scale(Tensor x, float k=1.0) -> Tensor")]
pub fn scale(x: &Tensor, k: f64) -> Result<Tensor> {
    SCALE_CALLS.fetch_add(1, Ordering::SeqCst);
    x * k
}

/// A second overload, CPU only.
#[op("co_macro::scale.int(Tensor x, int k) -> Tensor", key = CPU)]
fn scale_int(x: &Tensor, k: i64) -> Result<Tensor> {
    x * (k as f64)
}

/// A mutating operator.
#[op("co_macro::fill_(Tensor(a!) self, Scalar value) -> Tensor(a!)")]
fn fill_(self_: &mut Tensor, value: Scalar) -> Result<Tensor> {
    self_.fill_scalar(value);
    Ok(self_.clone())
}

/// No tensor arguments: dispatched on the device.
#[op("co_macro::ones(int[] size, *, Device? device=None) -> Tensor")]
fn ones(size: &[i64], device: Option<Device>) -> Result<Tensor> {
    let shape: Vec<usize> = size.iter().map(|&s| s as usize).collect();
    Ok(Tensor::full(
        &shape,
        Scalar::Int(1),
        DType::Float32,
        device.unwrap_or(Device::Cpu),
    ))
}

#[test]
fn op_macro_defines_and_dispatches() -> Result<()> {
    assert!(
        dispatcher().registration_errors().is_empty(),
        "{:?}",
        dispatcher().registration_errors()
    );
    let x = t(&[1.0, 2.0]);
    // Typed, through the dispatcher.
    assert_eq!(scale(&x, 2.0)?.to_vec::<f32>()?, vec![2.0, 4.0]);
    assert_eq!(scale_int(&x, 3)?.to_vec::<f32>()?, vec![3.0, 6.0]);
    let mut y = x.deep_clone()?;
    let z = fill_(&mut y, Scalar::Int(5))?;
    assert!(z.is_same(&y));
    assert_eq!(y.to_vec::<f32>()?, vec![5.0, 5.0]);
    assert_eq!(ones(&[3], None)?.shape(), vec![3]);
    assert_eq!(ones(&[3], Some(Device::Meta))?.device(), Device::Meta);

    // Boxed by name, with defaults; overloads resolve among both definitions.
    let xv = Value::Tensor(x.clone());
    let out = library::call("co_macro::scale", std::slice::from_ref(&xv), &[])?;
    assert_eq!(tensor_of(&out).to_vec::<f32>()?, vec![1.0, 2.0]);
    let out = library::call("co_macro::scale.int", &[xv.clone(), Value::Int(4)], &[])?;
    assert_eq!(tensor_of(&out).to_vec::<f32>()?, vec![4.0, 8.0]);
    let op = library::find("co_macro::scale")?;
    assert!(op.defined_at().is_some_and(|s| s.contains("custom_ops.rs")));
    assert_eq!(
        op.registered_keys(),
        vec![DispatchKey::CompositeExplicitAutograd]
    );
    assert_eq!(
        library::find("co_macro::scale.int")?.registered_keys(),
        vec![DispatchKey::CPU]
    );
    assert_eq!(
        dispatcher()
            .overloads("co_macro", "scale")
            .iter()
            .map(|o| o.schema.name)
            .collect::<Vec<_>>()
            .len(),
        2
    );

    // CompositeExplicitAutograd covers meta; the CPU-only overload does not.
    let out = library::call("co_macro::scale", &[meta(2)], &[])?;
    assert_eq!(tensor_of(&out).device(), Device::Meta);
    let e = library::call("co_macro::scale.int", &[meta(2), Value::Int(1)], &[]).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("co_macro::scale.int: attempted to run this operator with Meta tensors"),
        "{e}"
    );

    // The namespace is defined: a second DEF-less definition is a redefinition.
    let frag = Library::new("co_macro", LibraryKind::Fragment)?;
    assert!(frag
        .define("scale(Tensor x, float k=1.0) -> Tensor")
        .unwrap_err()
        .to_string()
        .starts_with(
            "Tried to register an operator (co_macro::scale(Tensor x, float k=1.0) -> Tensor)"
        ));

    // A run-time kernel for an `#[op]` operator applies to the typed entry point:
    // a Python-key kernel (only while Python is included) that returns its input.
    frag.impl_("scale", DispatchKey::Python, |a: &[Value]| {
        Ok(vec![a[0].clone()])
    })?;
    let before = SCALE_CALLS.load(Ordering::SeqCst);
    {
        let _g = LocalKeys::include(KeySet::of(DispatchKey::Python));
        assert!(scale(&x, 10.0)?.is_same(&x));
    }
    assert_eq!(SCALE_CALLS.load(Ordering::SeqCst), before);
    assert_eq!(scale(&x, 10.0)?.to_vec::<f32>()?, vec![10.0, 20.0]);
    Ok(())
}

#[test]
fn defining_races_calling() -> Result<()> {
    let lib = Arc::new(Library::new("co_race", LibraryKind::Def)?);
    lib.define("base(Tensor x) -> Tensor")?;
    lib.impl_("base", DispatchKey::CPU, |a: &[Value]| {
        Ok(vec![a[0].clone()])
    })?;
    let x = Value::Tensor(t(&[1.0]));
    let wins = Arc::new(AtomicUsize::new(0));
    std::thread::scope(|s| {
        // Definers: each name defined by several threads at once; exactly one wins.
        for _ in 0..4 {
            let (lib, wins) = (lib.clone(), wins.clone());
            s.spawn(move || {
                for i in 0..25 {
                    if lib.define(&format!("op{i}(Tensor x) -> Tensor")).is_ok() {
                        wins.fetch_add(1, Ordering::SeqCst);
                        let _ = lib.impl_(&format!("op{i}"), DispatchKey::CPU, |a: &[Value]| {
                            Ok(vec![a[0].clone()])
                        });
                    }
                }
            });
        }
        // Callers meanwhile.
        for _ in 0..2 {
            let x = x.clone();
            s.spawn(move || {
                for _ in 0..200 {
                    let out =
                        library::call("co_race::base", std::slice::from_ref(&x), &[]).unwrap();
                    assert_eq!(out.len(), 1);
                }
            });
        }
    });
    assert_eq!(wins.load(Ordering::SeqCst), 25);
    for i in 0..25 {
        assert_eq!(
            dispatcher().overloads("co_race", &format!("op{i}")).len(),
            1
        );
        assert!(library::find(&format!("co_race::op{i}"))?
            .defined_at()
            .is_some());
    }
    Ok(())
}
