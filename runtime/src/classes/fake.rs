//! Fake classes (PyTorch's `torch._library.register_fake_class`, in
//! `torch/_library/fake_class_registry.py`): a Rust type that stands for a custom class while a program runs
//! on fake tensors. It is made from the real object's flattened state
//! (`__obj_flatten__`) with every tensor replaced by a fake
//! ([`FakeClass::unflatten`], PyTorch's `__obj_unflatten__`), and implements
//! the methods the program calls on the object, on that fake state.
//!
//! [`to_fake_obj`] is PyTorch's `maybe_to_fake_obj`, step by step; the fake
//! tensor layer calls it with its tensor conversion
//! (`opforge::fake::FakeTensorMode::fake_object`). A fake object is a
//! [`ScriptObject`] of the real class's name (so schemas, binding and packet
//! resolution take it where they take the real one) whose methods are the
//! fake class's, each bound with the real method's schema.
//!
//! ```
//! use opforge::classes::{self, Class, FakeClass, FakeMembers};
//! use opforge::{Result, Tensor, Value};
//! use std::sync::Mutex;
//!
//! struct Bag(Mutex<Vec<Tensor>>);
//! Class::<Bag>::new("doc_fake_cls", "Bag")
//!     .init(|| Bag(Mutex::new(Vec::new())))
//!     .def("push", |b: &Bag, t: Tensor| b.0.lock().unwrap().push(t))
//!     .def("size", |b: &Bag| b.0.lock().unwrap().len() as i64)
//!     .def("__obj_flatten__", |b: &Bag| {
//!         vec![("items".to_string(), Value::TensorList(b.0.lock().unwrap().clone()))]
//!     })
//!     .register()?;
//!
//! struct FakeBag(Mutex<Vec<Tensor>>);
//! impl FakeClass for FakeBag {
//!     fn unflatten(flat: Vec<(String, Value)>) -> Result<Self> {
//!         let items = match flat.into_iter().next() {
//!             Some((_, Value::TensorList(ts))) => ts,
//!             _ => Vec::new(),
//!         };
//!         Ok(FakeBag(Mutex::new(items)))
//!     }
//!     fn members() -> FakeMembers<Self> {
//!         FakeMembers::new()
//!             .def("push", |b: &FakeBag, t: Tensor| b.0.lock().unwrap().push(t))
//!             .def("size", |b: &FakeBag| b.0.lock().unwrap().len() as i64)
//!     }
//! }
//! classes::register_fake_class::<FakeBag>("doc_fake_cls::Bag")?;
//! assert!(classes::has_fake_class("__torch__.torch.classes.doc_fake_cls.Bag"));
//!
//! let real = classes::instantiate("doc_fake_cls::Bag", &[])?;
//! real.call_method("push", &[Value::Tensor(Tensor::scalar(1.0f32))])?;
//! // Each tensor of the state "made fake" (here: a copy, for the example).
//! let fake = classes::to_fake_obj(&real, &mut |t: &Tensor| t.deep_clone())?;
//! assert!(fake.is_fake_object());
//! fake.call_method("push", &[Value::Tensor(Tensor::scalar(2.0f32))])?;
//! assert!(matches!(fake.call_method("size", &[])?, Value::Int(2)));
//! assert!(matches!(real.call_method("size", &[])?, Value::Int(1))); // untouched
//! # Ok::<(), opforge::Error>(())
//! ```

use super::{find, finish, normalize, BoxedMethodFn, CallResult, MethodFn, TYPE_PREFIX};
use crate::error::{Error, Result};
use crate::keys::{DispatchKey, KeySet, LocalKeys};
use crate::tensor::Tensor;
use crate::value::Value;
use crate::value::{ObjectClass, ScriptObject};
use std::any::Any;
use std::collections::HashMap;
use std::sync::{OnceLock, RwLock};

/// A fake class for a custom class: its fake state from the real object's
/// flattened one, and the methods it implements.
///
/// PyTorch checks at registration that the class defines
/// `__obj_unflatten__` as a classmethod; here the trait requires
/// [`FakeClass::unflatten`], so a type without one does not compile.
pub trait FakeClass: Any + Send + Sync + Sized {
    /// `__obj_unflatten__`: the fake object from the real object's
    /// `(name, value)` pairs, every tensor in them a fake.
    fn unflatten(flat: Vec<(String, Value)>) -> Result<Self>;

    /// The methods (and constant attributes) the fake implements.
    fn members() -> FakeMembers<Self>;
}

/// What a fake class implements: methods, with the same Rust forms as
/// [`super::Class::def`]'s, and constant attributes.
pub struct FakeMembers<T> {
    methods: Vec<(String, BoxedMethodFn<T>)>,
    attrs: Vec<(String, Value)>,
}

impl<T: Send + Sync + 'static> FakeMembers<T> {
    /// No members.
    pub fn new() -> FakeMembers<T> {
        FakeMembers {
            methods: Vec::new(),
            attrs: Vec::new(),
        }
    }

    /// A method: a function of the fake (`&T`) and the arguments.
    pub fn def<A, F: MethodFn<T, A>>(mut self, name: &str, f: F) -> FakeMembers<T> {
        self.methods.push((name.to_string(), f.boxed()));
        self
    }

    /// A constant attribute. One named as a method of the real class is an
    /// error when an object is made fake (`Expect size to be a callable but
    /// got 3.`).
    pub fn attr(mut self, name: &str, value: Value) -> FakeMembers<T> {
        self.attrs.push((name.to_string(), value));
        self
    }
}

impl<T: Send + Sync + 'static> Default for FakeMembers<T> {
    fn default() -> Self {
        FakeMembers::new()
    }
}

type Unflatten =
    Box<dyn Fn(Vec<(String, Value)>) -> Result<Box<dyn Any + Send + Sync>> + Send + Sync>;
type ErasedMethod =
    Box<dyn Fn(&(dyn Any + Send + Sync), &[Value]) -> CallResult<Value> + Send + Sync>;

/// A registered fake class, type-erased: also the class of its fake
/// objects, under the real class's names.
pub(super) struct FakeClassDef {
    qualified: String,
    type_name: String,
    rust_name: &'static str,
    unflatten: Unflatten,
    methods: Vec<(String, ErasedMethod)>,
    attrs: Vec<(String, Value)>,
}

impl ObjectClass for FakeClassDef {
    fn qualified_name(&self) -> &str {
        &self.qualified
    }

    fn type_name(&self) -> &str {
        &self.type_name
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// What a fake object holds (PyTorch's `FakeScriptObject`): the fake value,
/// the real object (a deep copy when the class can make one), and the
/// methods attached (those of the real class the fake implements, with the
/// real schemas).
pub(super) struct FakeState {
    wrapped: Box<dyn Any + Send + Sync>,
    real: ScriptObject,
    methods: Vec<(&'static str, &'static str, usize)>,
}

fn registry() -> &'static RwLock<HashMap<String, &'static FakeClassDef>> {
    static FAKES: OnceLock<RwLock<HashMap<String, &'static FakeClassDef>>> = OnceLock::new();
    FAKES.get_or_init(Default::default)
}

/// Registers `F` as the fake class of the custom class `qualname`
/// (`ns::Name`): PyTorch's `register_fake_class`. The class must exist
/// (PyTorch's message otherwise). Registering again replaces the previous
/// fake class, with PyTorch's warning.
pub fn register_fake_class<F: FakeClass>(qualname: &str) -> Result<()> {
    let class = find(qualname)?;
    let members = F::members();
    let def: &'static FakeClassDef = Box::leak(Box::new(FakeClassDef {
        qualified: class.qualified_name().to_string(),
        type_name: class.type_name().to_string(),
        rust_name: std::any::type_name::<F>(),
        unflatten: Box::new(|flat| Ok(Box::new(F::unflatten(flat)?))),
        methods: members
            .methods
            .into_iter()
            .map(|(name, call)| {
                let erased: ErasedMethod = Box::new(move |this, args| {
                    // The fake objects of this class hold an `F`.
                    let this = this.downcast_ref::<F>().ok_or(super::CallError::Arg)?;
                    call(this, args)
                });
                (name, erased)
            })
            .collect(),
        attrs: members.attrs,
    }));
    let mut fakes = registry().write().unwrap_or_else(|e| e.into_inner());
    if fakes.contains_key(&def.type_name) {
        crate::warnings::warn(&format!(
            "{} is already registered. Previous fake class is overridden with  {}.",
            def.type_name, def.rust_name
        ));
    }
    fakes.insert(def.type_name.clone(), def);
    Ok(())
}

/// Removes the fake class of `qualname` (`ns::Name`); `false`, with
/// PyTorch's warning, if it had none.
pub fn deregister_fake_class(qualname: &str) -> bool {
    let full = format!("{TYPE_PREFIX}{}", normalize(qualname));
    let mut fakes = registry().write().unwrap_or_else(|e| e.into_inner());
    if fakes.remove(&full).is_some() {
        return true;
    }
    crate::warnings::warn(&format!(
        "Cannot deregister {full}. Please use register_fake_class to register it first. Or do you dereigster it twice?"
    ));
    false
}

/// Does the class of full name `full_qualname`
/// (`__torch__.torch.classes.ns.Name`) have a fake class?
pub fn has_fake_class(full_qualname: &str) -> bool {
    registry()
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .contains_key(full_qualname)
}

/// The Rust type name of the fake class of `full_qualname`, if it has one
/// (PyTorch's `find_fake_class`).
pub fn find_fake_class(full_qualname: &str) -> Option<&'static str> {
    registry()
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .get(full_qualname)
        .map(|d| d.rust_name)
}

fn fake_class_of(obj: &ScriptObject) -> Result<&'static FakeClassDef> {
    let full = obj.type_name();
    let (ns, name) = obj.qualified_name().split_once('.').unwrap_or(("", ""));
    registry()
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .get(full)
        .copied()
        .ok_or_else(|| {
            Error::Runtime(format!(
                " ScriptObject's {full} haven't registered a fake class. Please use register_fake_class({ns}::{name}) to annotate a fake class for the script obj. Specifically, create a python class that implements a fake version for all the methods that're used in the program and put annotated class in the program e.g. after loading the library. The fake methods can be written in the same way as a meta kernel for an operator but need to additionally simulate the object's states. Be sure to add a __obj_unflatten__ classmethod to enable creating a fake obj from a real one."
            ).into())
        })
}

/// The real object's method `name`, if it has one, as a string value.
fn tracing_mode(obj: &ScriptObject) -> Result<Option<String>> {
    if !obj.method_names().contains(&"tracing_mode") {
        return Ok(None);
    }
    match obj.call_method("tracing_mode", &[])? {
        Value::Str(s) if s == "real" || s == "fake" => Ok(Some(s)),
        other => Err(Error::Runtime(
            format!("tracing_mode can be either real or fake but got {other}").into(),
        )),
    }
}

/// PyTorch's `maybe_to_fake_obj`, step by step (`torch/_library/fake_class_registry.py`):
///
/// 1. an object whose `tracing_mode()` is `"real"` is kept (any value but
///    `"real"`/`"fake"` is an error);
/// 2. its `__obj_flatten__()` is called with the dispatch modes and fake
///    tensors off, and checked ([`ScriptObject::flatten`]);
/// 3. every tensor of the flattened state becomes `fakify(tensor)`;
/// 4. the fake class is found (PyTorch's message if there is none) and makes
///    the fake from the state;
/// 5. the fake object wraps it with a deep copy of the real object (or the
///    real object, with PyTorch's warning, if it cannot be copied);
/// 6. each method of the real object that the fake implements is attached
///    with the real method's schema (a constant attribute of that name is
///    PyTorch's error); one it lacks is warned about, except
///    `__obj_flatten__`, `__getstate__`, `__setstate__` and `__init__`.
pub fn to_fake_obj(
    obj: &ScriptObject,
    fakify: &mut dyn FnMut(&Tensor) -> Result<Tensor>,
) -> Result<ScriptObject> {
    if obj.is_fake_object() {
        return Ok(obj.clone());
    }
    if tracing_mode(obj)?.as_deref() == Some("real") {
        return Ok(obj.clone());
    }
    let flat = {
        let _modes_off =
            LocalKeys::exclude(KeySet::of(DispatchKey::Fake) | KeySet::of(DispatchKey::Python));
        obj.flatten()?
    };
    let fake_flat = flat
        .into_iter()
        .map(|(k, v)| Ok((k, v.try_map_tensors(fakify)?)))
        .collect::<Result<Vec<_>>>()?;
    let def = fake_class_of(obj)?;
    let wrapped = (def.unflatten)(fake_flat)?;
    let real = {
        let _modes_off =
            LocalKeys::exclude(KeySet::of(DispatchKey::Fake) | KeySet::of(DispatchKey::Python));
        match obj.deep_copy() {
            Ok(copy) => copy,
            Err(e) => {
                crate::warnings::warn(&format!(
                    "Unable to deepcopy the custom object {} due to {e}. Defaulting to the user given object. This might be dangerous as side effects may be directly applied to the object.",
                    def.type_name
                ));
                obj.clone()
            }
        }
    };
    let mut methods = Vec::new();
    let class = super::class_of(obj)?;
    for name in class.method_names() {
        if let Some((_, v)) = def.attrs.iter().find(|(n, _)| n == name) {
            return Err(Error::Runtime(
                format!("Expect {name} to be a callable but got {v}.").into(),
            ));
        }
        match def.methods.iter().position(|(n, _)| n == name) {
            Some(i) => {
                let schema = class.method(name).map_or("", |m| m.schema());
                methods.push((name, schema, i));
            }
            // Not warned about: the pickling pair and `__obj_flatten__`
            // (PyTorch's skip list), and `__init__`, which every Python fake
            // class has (so PyTorch never warns about it).
            None if matches!(
                name,
                "__obj_flatten__" | "__getstate__" | "__setstate__" | "__init__"
            ) => {}
            None => crate::warnings::warn(&format!(
                "fake object of {obj} doesn't implement method {name}."
            )),
        }
    }
    Ok(ScriptObject::new(
        def,
        FakeState {
            wrapped,
            real,
            methods,
        },
    ))
}

fn state(obj: &ScriptObject) -> Option<(&'static FakeClassDef, &FakeState)> {
    let def = obj.class().as_any().downcast_ref::<FakeClassDef>()?;
    // The objects of a fake class are made by `to_fake_obj` only, each
    // holding a `FakeState`.
    Some((def, obj.downcast_ref::<FakeState>()?))
}

/// PyTorch's message for setting or reading a missing attribute of a fake
/// object.
/// A fake object's method `name` among its attached ones: the real
/// method's schema and the fake class's method index, or PyTorch's
/// attribute error.
fn fake_method(
    methods: &[(&'static str, &'static str, usize)],
    name: &str,
) -> Result<(&'static str, usize)> {
    methods
        .iter()
        .find(|(n, _, _)| *n == name)
        .map(|&(_, schema, i)| (schema, i))
        .ok_or_else(|| fake_attribute_error("__getattr__", name))
}

fn fake_attribute_error(op: &str, name: &str) -> Error {
    let tail = if op == "__setattr__" {
        "The fake kernel should not depend on the contents of the OpaqueObject at all, so we're erroring out. If you need thisfunctionality, consider creating a custom TorchBind Object instead(but note that this is more difficult)."
    } else {
        "The fake kernel should not depend on the contents of the OpaqueObject at all, so we're erroring out. If this attr is a method or constant attribute, you can allow this member access by registering it via `register_custom_class(members=...)`."
    };
    Error::Attribute(
        format!(
            "Tried to call {op} with attr '{name}' on a FakeScriptObject, implying that you are calling this inside of a fake kernel. {tail}"
        )
        .into(),
    )
}

impl ScriptObject {
    /// A fake object ([`to_fake_obj`], PyTorch's `FakeScriptObject`)?
    pub fn is_fake_object(&self) -> bool {
        state(self).is_some()
    }

    /// A fake object's fake value, if it is an `F`.
    pub fn fake_ref<F: FakeClass>(&self) -> Option<&F> {
        state(self)?.1.wrapped.downcast_ref::<F>()
    }

    /// A fake object's real object (a deep copy of the one it was made
    /// from, or that one if it could not be copied).
    pub fn real_object(&self) -> Option<&ScriptObject> {
        state(self).map(|(_, s)| &s.real)
    }

    /// Sets an attribute: objects have none to set (a fake object: PyTorch's
    /// `FakeScriptObject` error; a real one: the class's error for a field it
    /// does not have).
    pub fn setattr(&self, name: &str, value: Value) -> Result<()> {
        let _ = value;
        if self.is_fake_object() {
            return Err(fake_attribute_error("__setattr__", name));
        }
        Err(super::class_of(self)?.no_attribute(name))
    }

    /// Reads an attribute: a fake object's constant attribute, or PyTorch's
    /// error for one it does not have.
    pub fn getattr(&self, name: &str) -> Result<Value> {
        match state(self) {
            Some((def, _)) => def
                .attrs
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.clone())
                .ok_or_else(|| fake_attribute_error("__getattr__", name)),
            None => Err(super::class_of(self)?.no_attribute(name)),
        }
    }

    /// A fake object's method call: the fake class's method, bound with the
    /// real method's schema. `None` if the object is not fake.
    pub(super) fn call_fake_method(
        &self,
        name: &str,
        args: &[Value],
        kwargs: &[(String, Value)],
    ) -> Option<Result<Value>> {
        let (def, st) = state(self)?;
        let (schema, i) = match fake_method(&st.methods, name) {
            Ok(m) => m,
            Err(e) => return Some(Err(e)),
        };
        let mut all = Vec::with_capacity(args.len() + 1);
        all.push(Value::Object(self.clone()));
        all.extend_from_slice(args);
        Some(
            super::bind(name, schema, &all, kwargs)
                .and_then(|bound| finish((def.methods[i].1)(&*st.wrapped, &bound[1..]))),
        )
    }

    /// A fake object's method's schema (the real method's): `None` if the
    /// object is not fake, an error if it has no such method.
    pub(super) fn fake_method_schema(&self, name: &str) -> Option<Result<&'static str>> {
        let (_, st) = state(self)?;
        Some(fake_method(&st.methods, name).map(|(schema, _)| schema))
    }

    /// A fake object's attached methods, in the real class's order.
    pub(super) fn fake_method_names(&self) -> Option<Vec<&'static str>> {
        state(self).map(|(_, s)| s.methods.iter().map(|(n, _, _)| *n).collect())
    }
}
