//! Custom classes (PyTorch's TorchBind, `torch::class_`): Rust types
//! registered under `ns::Name`, whose instances are [`ScriptObject`]s —
//! reference-counted handles that schemas name as
//! `__torch__.torch.classes.ns.Name` and boxed calls carry as
//! [`Value::Object`].
//!
//! A class has an optional constructor (`__init__`) and methods, each with a
//! schema generated as PyTorch generates it: the receiver first, the
//! arguments named `_0, _1, …`, the return named `_0`, no alias annotations
//! (`push(__torch__.torch.classes.ns.Queue _0, Tensor _1) -> NoneType _0`).
//! Methods take the value by `&T`: a class whose methods change its state
//! holds it behind a lock (objects are shared between threads, as PyTorch's
//! are).
//!
//! ```
//! use opforge::classes::{self, Class};
//! use opforge::{Tensor, Value};
//! use std::sync::Mutex;
//!
//! struct Counter(Mutex<i64>);
//!
//! Class::<Counter>::new("doc_classes", "Counter")
//!     .init(|start: i64| Counter(Mutex::new(start)))
//!     .def("add", |c: &Counter, k: i64| {
//!         let mut n = c.0.lock().unwrap();
//!         *n += k;
//!         *n
//!     })
//!     .register()?;
//! let c = classes::instantiate("doc_classes::Counter", &[Value::Int(1)])?;
//! assert!(matches!(c.call_method("add", &[Value::Int(2)])?, Value::Int(3)));
//! assert_eq!(
//!     classes::find("doc_classes::Counter")?.method("add").unwrap().schema(),
//!     "add(__torch__.torch.classes.doc_classes.Counter _0, int _1) -> int _0"
//! );
//! let e = classes::instantiate("doc_classes::Nope", &[]).unwrap_err();
//! assert_eq!(
//!     e.to_string(),
//!     "Tried to instantiate class 'doc_classes.Nope', but it does not exist! \
//!      Ensure that it is registered via torch::class_"
//! );
//! # Ok::<(), opforge::Error>(())
//! ```

mod fake;
mod saved_form;
pub mod torchbind;
mod types;

pub use fake::{
    deregister_fake_class, find_fake_class, has_fake_class, register_fake_class, to_fake_obj,
    FakeClass, FakeMembers,
};
pub use types::{ArgType, RetType};

use crate::error::{Error, Result};
use crate::packet::{self, Overload};
use crate::value::Value;
use crate::value::{ObjectClass, ScriptObject};
use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::marker::PhantomData;
use std::sync::{OnceLock, RwLock};

/// The prefix of a custom class's type name in schemas.
pub const TYPE_PREFIX: &str = "__torch__.torch.classes.";

/// Why a boxed method call did not return: an argument of the wrong type
/// (the caller then binds the call as Python does, for PyTorch's message or
/// its conversions), or the method's own error.
pub enum CallError {
    /// Argument `i` is not of its type.
    Arg,
    /// The method failed.
    Failed(Error),
}

impl From<Error> for CallError {
    fn from(e: Error) -> CallError {
        CallError::Failed(e)
    }
}

type CallResult<T> = std::result::Result<T, CallError>;
type SaveFn = Box<dyn Fn(&ScriptObject) -> Result<serde_json::Value> + Send + Sync>;
type LoadFn =
    Box<dyn Fn(&'static ClassDef, serde_json::Value) -> Result<ScriptObject> + Send + Sync>;
/// A constructor over boxed arguments (one per schema argument).
pub type BoxedArgsFn<T> = Box<dyn Fn(&[Value]) -> CallResult<T> + Send + Sync>;
/// A method over its receiver and boxed arguments (after the receiver).
pub type BoxedMethodFn<T> = Box<dyn Fn(&T, &[Value]) -> CallResult<Value> + Send + Sync>;
type BoxedMethod = Box<dyn Fn(&ScriptObject, &[Value]) -> CallResult<Value> + Send + Sync>;
type BoxedInit = Box<dyn Fn(&'static ClassDef, &[Value]) -> CallResult<ScriptObject> + Send + Sync>;

/// One method of a class: its name, its generated schema, and the function.
pub struct Method {
    name: String,
    schema: &'static str,
    /// Arguments after the receiver.
    arity: usize,
    call: BoxedMethod,
}

impl Method {
    /// The method's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The schema, as PyTorch generates it for a method.
    pub fn schema(&self) -> &'static str {
        self.schema
    }
}

/// A registered class.
pub struct ClassDef {
    qualified: String,
    type_name: String,
    rust_type: TypeId,
    rust_name: &'static str,
    init: Option<(&'static str, BoxedInit)>,
    methods: Vec<Method>,
    pickle: Option<(SaveFn, LoadFn)>,
}

impl std::fmt::Debug for ClassDef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ClassDef({} for {})", self.qualified, self.rust_name)
    }
}

impl std::fmt::Debug for Method {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Method({})", self.schema)
    }
}

impl ObjectClass for ClassDef {
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

impl ClassDef {
    /// `ns.Name`.
    pub fn qualified_name(&self) -> &str {
        &self.qualified
    }

    /// `__torch__.torch.classes.ns.Name`.
    pub fn type_name(&self) -> &str {
        &self.type_name
    }

    /// The method called `name`, if the class has one.
    pub fn method(&self, name: &str) -> Option<&Method> {
        self.methods.iter().find(|m| m.name == name)
    }

    /// The methods' names, in registration order (`__init__` first if the
    /// class has a constructor), as `obj._method_names()` lists them.
    pub fn method_names(&self) -> Vec<&str> {
        let init = self.init.as_ref().map(|_| "__init__");
        let pickle = match self.pickle {
            Some(_) => &["__getstate__", "__setstate__"][..],
            None => &[],
        };
        init.into_iter()
            .chain(pickle.iter().copied())
            .chain(self.methods.iter().map(|m| m.name.as_str()))
            .collect()
    }

    /// The constructor's schema (`__init__(… _0, int _1) -> NoneType _0`).
    pub fn init_schema(&self) -> Option<&'static str> {
        self.init.as_ref().map(|(s, _)| *s)
    }

    /// An object of this class holding `value`: fails unless `T` is the Rust
    /// type the class was registered with.
    pub fn wrap<T: Any + Send + Sync>(&'static self, value: T) -> Result<ScriptObject> {
        if TypeId::of::<T>() != self.rust_type {
            return Err(Error::Type(
                format!(
                    "class '{}' holds a {}, not a {}",
                    self.qualified,
                    self.rust_name,
                    std::any::type_name::<T>()
                )
                .into(),
            ));
        }
        Ok(ScriptObject::new(self, value))
    }

    /// The error for an attribute the class does not have.
    fn no_attribute(&self, name: &str) -> Error {
        Error::Attribute(
            format!(
                "{} (of Python compilation unit at: 0) does not have a field with name '{name}'",
                self.type_name
            )
            .into(),
        )
    }
}

/// A Rust type registered as a custom class by `#[custom_class("ns::Name")]`
/// (with `#[methods]` on its impl block): its name.
pub trait CustomClass: Any + Send + Sync {
    /// `ns::Name`.
    const NAME: &'static str;
}

/// A 128-bit key of a class name (`ns::Name` and `ns.Name` give the same),
/// computed at compile time: the const parameter of [`NamedClass`], by which a
/// kernel parameter's Rust type is checked against the class its schema names
/// (const generics take integers, not strings). FNV-1a.
///
/// ```
/// use opforge::classes::class_key;
/// assert_eq!(class_key("mylib::Queue"), class_key("mylib.Queue"));
/// assert_ne!(class_key("mylib::Queue"), class_key("mylib::Queues"));
/// ```
pub const fn class_key(name: &str) -> u128 {
    const PRIME: u128 = 0x0000000001000000000000000000013B;
    let b = name.as_bytes();
    let mut h: u128 = 0x6c62272e07bb014262b821756295c58d;
    let mut i = 0;
    while i < b.len() {
        let c = if b[i] == b':' && i + 1 < b.len() && b[i + 1] == b':' {
            i += 1;
            b'.'
        } else {
            b[i]
        };
        h ^= c as u128;
        h = h.wrapping_mul(PRIME);
        i += 1;
    }
    h
}

/// A custom class type whose name has key `K` ([`class_key`]):
/// `#[custom_class("ns::Name")]` implements it with
/// `K = class_key("ns::Name")`. A kernel parameter for a schema argument of
/// type `__torch__.torch.classes.ns.Name` is `&T` for such a `T` (or a
/// `&ScriptObject` of any class): a `&T` of another class does not compile.
pub trait NamedClass<const K: u128>: CustomClass {}

/// A kernel parameter for a custom-class argument whose class has key `K`:
/// `&T` with `T:` [`NamedClass<K>`] (the value inside the object), or
/// `&ScriptObject` (the object itself). The registration macros convert the
/// object the dispatcher passes with [`ClassParam::from_object`].
pub trait ClassParam<'a, const K: u128>: Sized {
    /// The parameter, from the argument's object.
    fn from_object(obj: &'a ScriptObject) -> Result<Self>;
}

impl<'a, const K: u128, T: NamedClass<K>> ClassParam<'a, K> for &'a T {
    #[inline]
    fn from_object(obj: &'a ScriptObject) -> Result<&'a T> {
        obj.downcast_ref::<T>().ok_or_else(|| {
            Error::Type(
                format!(
                    "expected an object of {TYPE_PREFIX}{}, got an object of {}",
                    normalize(T::NAME),
                    obj.type_name()
                )
                .into(),
            )
        })
    }
}

impl<'a, const K: u128> ClassParam<'a, K> for &'a ScriptObject {
    #[inline]
    fn from_object(obj: &'a ScriptObject) -> Result<&'a ScriptObject> {
        Ok(obj)
    }
}

/// An object of `T`'s class holding `value`: what a method returning `Self`
/// (`clone_queue` of PyTorch's TorchBind tutorial) returns.
pub fn object<T: CustomClass>(value: T) -> Result<ScriptObject> {
    find(T::NAME)?.wrap(value)
}

impl<T: CustomClass> RetType for T {
    fn schema_type() -> String {
        format!("{TYPE_PREFIX}{}", normalize(T::NAME))
    }
    fn into_ret(self) -> Result<Value> {
        object(self).map(Value::Object)
    }
}

/// A class `#[methods]` registers at link time.
#[doc(hidden)]
pub struct ClassEntry {
    /// Registers the class.
    pub register: fn() -> Result<&'static ClassDef>,
    /// Where the `#[methods]` block is.
    pub file: &'static str,
    /// Its line.
    pub line: u32,
}

/// The classes `#[methods]` blocks register, from every linked crate.
#[doc(hidden)]
#[linkme::distributed_slice]
pub static CLASS_DEFS: [ClassEntry];

/// Registers the link-time classes, once; their errors (a class name
/// registered twice) are kept and returned by [`registration_errors`].
fn ensure_linked() -> &'static [Error] {
    static LINKED: OnceLock<Vec<Error>> = OnceLock::new();
    LINKED.get_or_init(|| {
        CLASS_DEFS
            .iter()
            .filter_map(|e| {
                (e.register)().err().map(|err| {
                    Error::Runtime(format!("{err} (#[methods] at {}:{})", e.file, e.line).into())
                })
            })
            .collect()
    })
}

/// Problems registering the classes of `#[methods]` blocks (one class name
/// registered twice): none in a well-formed program.
pub fn registration_errors() -> &'static [Error] {
    ensure_linked()
}

/// Registers a class: `Class::<T>::new("ns", "Name")`, then its constructor
/// and methods, then [`Class::register`] (PyTorch's `torch::class_<T>`).
pub struct Class<T> {
    def: ClassDef,
    duplicate: Option<String>,
    _t: PhantomData<fn() -> T>,
}

impl<T: CustomClass> Class<T> {
    /// The class `T` is declared as (`#[custom_class("ns::Name")]`).
    pub fn of_type() -> Class<T> {
        let (ns, name) = T::NAME.split_once("::").unwrap_or(("", T::NAME));
        Class::new(ns, name)
    }
}

impl<T: Any + Send + Sync> Class<T> {
    /// A class `ns::name` for the Rust type `T`.
    pub fn new(ns: &str, name: &str) -> Class<T> {
        let qualified = format!("{ns}.{name}");
        Class {
            def: ClassDef {
                type_name: format!("{TYPE_PREFIX}{qualified}"),
                qualified,
                rust_type: TypeId::of::<T>(),
                rust_name: std::any::type_name::<T>(),
                init: None,
                methods: Vec::new(),
                pickle: None,
            },
            duplicate: None,
            _t: PhantomData,
        }
    }

    /// The constructor (`torch::init<Args…>`): a function of the arguments
    /// that makes the value.
    pub fn init<A, F: Init<T, A>>(mut self, f: F) -> Class<T> {
        if self.def.init.is_some() {
            self.duplicate.get_or_insert_with(|| "__init__".into());
        }
        let schema = method_schema(&self.def.type_name, "__init__", &F::arg_types(), "NoneType");
        let init = f.boxed();
        self.def.init = Some((
            schema,
            Box::new(move |class, args| {
                let value = init(args)?;
                Ok(ScriptObject::new(class, value))
            }),
        ));
        self
    }

    /// A method: a function of the receiver (`&T`) and the arguments.
    pub fn def<A, F: MethodFn<T, A>>(mut self, name: &str, f: F) -> Class<T> {
        if self.def.method(name).is_some() || name == "__init__" {
            self.duplicate.get_or_insert_with(|| name.to_string());
        }
        let args = F::arg_types();
        let schema = method_schema(&self.def.type_name, name, &args, &F::ret_type());
        let call = f.boxed();
        self.def.methods.push(Method {
            name: name.to_string(),
            schema,
            arity: args.len(),
            call: Box::new(move |obj, args| {
                let this = obj.downcast_ref::<T>().ok_or_else(|| {
                    Error::Type(format!("a method of another class was called on {obj:?}").into())
                })?;
                call(this, args)
            }),
        });
        self
    }

    /// Pickling (`def_pickle`): `get` maps an object's value to a state
    /// serde can write, `set` makes a value from it again, or refuses a
    /// state that breaks the class's invariants (an `Err`: [`load`],
    /// [`ScriptObject::deep_copy`] and a loaded graph then fail with an
    /// error naming the class and carrying `set`'s message). Objects then
    /// save and load ([`save`], [`load`]) and deep-copy
    /// ([`ScriptObject::deep_copy`]). A tensor in the state is saved with its
    /// data ([`Tensor`](crate::Tensor) implements serde's traits).
    ///
    /// ```
    /// use opforge::classes::{self, Class};
    /// use opforge::{Error, Value};
    /// struct Positive(i64);
    /// Class::<Positive>::new("doc_pickle", "Positive")
    ///     .init(|n: i64| Positive(n))
    ///     .def_pickle(
    ///         |p: &Positive| p.0,
    ///         |n: i64| match n > 0 {
    ///             true => Ok(Positive(n)),
    ///             false => Err(Error::Value(format!("{n} is not positive").into())),
    ///         },
    ///     )
    ///     .register()?;
    /// let p = classes::instantiate("doc_pickle::Positive", &[Value::Int(3)])?;
    /// assert!(classes::load(&classes::save(&p)?).is_ok());
    /// let e = classes::load(br#"{"class": "doc_pickle.Positive", "state": -1}"#).unwrap_err();
    /// assert_eq!(
    ///     e.to_string(),
    ///     "__torch__.torch.classes.doc_pickle.Positive.__setstate__ refused the state: -1 is not positive"
    /// );
    /// # Ok::<(), opforge::Error>(())
    /// ```
    pub fn def_pickle<S, G, L>(mut self, get: G, set: L) -> Class<T>
    where
        S: serde::Serialize + serde::de::DeserializeOwned + 'static,
        G: Fn(&T) -> S + Send + Sync + 'static,
        L: Fn(S) -> Result<T> + Send + Sync + 'static,
    {
        if self.def.pickle.is_some() {
            self.duplicate.get_or_insert_with(|| "__getstate__".into());
        }
        let save: SaveFn = Box::new(move |obj| {
            let value = obj.downcast_ref::<T>().ok_or_else(|| {
                Error::Type(format!("the pickler of another class was called on {obj:?}").into())
            })?;
            serde_json::to_value(get(value))
                .map_err(|e| Error::Runtime(format!("__getstate__: {e}").into()))
        });
        let load: LoadFn = Box::new(move |class, state| {
            let state: S = serde_json::from_value(state)
                .map_err(|e| Error::Runtime(format!("__setstate__: {e}").into()))?;
            let value = set(state).map_err(|e| {
                Error::Runtime(
                    format!("{}.__setstate__ refused the state: {e}", class.type_name).into(),
                )
            })?;
            Ok(ScriptObject::new(class, value))
        });
        self.def.pickle = Some((save, load));
        self
    }

    /// Registers the class. A class registered twice under one name (also
    /// by a `#[methods]` block), or a method defined twice, is an error.
    pub fn register(self) -> Result<&'static ClassDef> {
        ensure_linked();
        self.register_linked()
    }

    /// [`Class::register`] for a `#[methods]` block (the link-time classes
    /// are being registered).
    #[doc(hidden)]
    pub fn register_linked(self) -> Result<&'static ClassDef> {
        if let Some(name) = self.duplicate {
            return Err(Error::Runtime(
                format!(
                    "method '{name}' of class '{}' is defined twice",
                    self.def.qualified
                )
                .into(),
            ));
        }
        let mut classes = registry().write().unwrap_or_else(|e| e.into_inner());
        if let Some(old) = classes.get(&self.def.qualified) {
            return Err(Error::Runtime(
                format!(
                    "class '{}' is already registered (for {}); a class is registered once",
                    self.def.qualified, old.rust_name
                )
                .into(),
            ));
        }
        // Classes live as long as the program, as their objects may.
        let def: &'static ClassDef = Box::leak(Box::new(self.def));
        classes.insert(def.qualified.clone(), def);
        Ok(def)
    }
}

fn registry() -> &'static RwLock<HashMap<String, &'static ClassDef>> {
    static CLASSES: OnceLock<RwLock<HashMap<String, &'static ClassDef>>> = OnceLock::new();
    CLASSES.get_or_init(RwLock::default)
}

/// `ns::Name`, `ns.Name` or `__torch__.torch.classes.ns.Name` → `ns.Name`.
fn normalize(name: &str) -> String {
    name.strip_prefix(TYPE_PREFIX)
        .unwrap_or(name)
        .replacen("::", ".", 1)
}

/// The class registered as `name` (`ns::Name`, `ns.Name` or its type name),
/// or PyTorch's error for a class that does not exist.
pub fn find(name: &str) -> Result<&'static ClassDef> {
    ensure_linked();
    let key = normalize(name);
    let classes = registry().read().unwrap_or_else(|e| e.into_inner());
    classes.get(&key).copied().ok_or_else(|| {
        Error::Runtime(
            format!(
                "Tried to instantiate class '{key}', but it does not exist! Ensure that it is registered via torch::class_"
            )
            .into(),
        )
    })
}

/// Whether a class is registered as `name`.
pub fn is_registered(name: &str) -> bool {
    find(name).is_ok()
}

/// Makes an object of the class `name` with its constructor
/// (`torch.classes.ns.Name(*args)`).
pub fn instantiate(name: &str, args: &[Value]) -> Result<ScriptObject> {
    instantiate_with(name, args, &[])
}

/// [`instantiate`] with keyword arguments (`_1=…`), converted and checked as
/// Python's call is, with PyTorch's messages.
pub fn instantiate_with(
    name: &str,
    args: &[Value],
    kwargs: &[(String, Value)],
) -> Result<ScriptObject> {
    let class = find(name)?;
    let Some((schema, init)) = &class.init else {
        return Err(class.no_attribute("__init__"));
    };
    // The receiver is the object being made; PyTorch binds a placeholder.
    let placeholder = ScriptObject::new(class, ());
    let mut all = Vec::with_capacity(args.len() + 1);
    all.push(Value::Object(placeholder));
    all.extend_from_slice(args);
    let bound = bind("__init__", schema, &all, kwargs)?;
    finish(init(class, &bound[1..]))
}

/// The result of a call whose arguments were bound to its schema.
fn finish<T>(r: CallResult<T>) -> Result<T> {
    r.map_err(|e| match e {
        CallError::Failed(e) => e,
        CallError::Arg => Error::Type("an argument bound to its schema did not convert".into()),
    })
}

/// The object as bytes: its class and its pickled state (JSON), for
/// [`load`] (PyTorch's `torch.save` of a script object, through
/// `__getstate__`).
pub fn save(obj: &ScriptObject) -> Result<Vec<u8>> {
    let class = class_of(obj)?;
    let state = class.getstate(obj)?;
    let saved = serde_json::json!({ "class": class.qualified, "state": state });
    serde_json::to_vec(&saved).map_err(|e| Error::Runtime(e.to_string().into()))
}

/// An object from [`save`]'s bytes: its class (which must be registered)
/// makes it from the state (`__setstate__`).
pub fn load(bytes: &[u8]) -> Result<ScriptObject> {
    let saved: serde_json::Value = serde_json::from_slice(bytes)
        .map_err(|e| Error::Runtime(format!("not a saved object: {e}").into()))?;
    let Some(name) = saved["class"].as_str() else {
        return Err(Error::Runtime("not a saved object: no class".into()));
    };
    let class = find(name)?;
    class.setstate(saved["state"].clone())
}

impl ClassDef {
    fn no_getstate(&self, what: &str) -> Error {
        Error::Runtime(
            format!(
                "Tried to {what} object {} which does not have a __getstate__ method defined!",
                self.type_name
            )
            .into(),
        )
    }

    fn getstate(&self, obj: &ScriptObject) -> Result<serde_json::Value> {
        match &self.pickle {
            Some((save, _)) => save(obj),
            None => Err(self.no_getstate("serialize")),
        }
    }

    fn setstate(&'static self, state: serde_json::Value) -> Result<ScriptObject> {
        match &self.pickle {
            Some((_, load)) => load(self, state),
            None => Err(Error::Runtime(
                format!(
                    "Tried to deserialize object {} which does not have a __setstate__ method defined!",
                    self.type_name
                )
                .into(),
            )),
        }
    }
}

/// The class of an object, as registered.
fn class_of(obj: &ScriptObject) -> Result<&'static ClassDef> {
    obj.class()
        .as_any()
        .downcast_ref::<ClassDef>()
        .ok_or_else(|| Error::Type(format!("{obj:?} is not of a registered class").into()))
}

/// Binds `args` (the receiver first) to a method's schema with
/// `torch.ops`' conversions and messages.
fn bind(
    method: &str,
    schema: &'static str,
    args: &[Value],
    kwargs: &[(String, Value)],
) -> Result<Vec<Value>> {
    let one = [Overload {
        name: "",
        schema_text: schema,
        op: None,
        dispatcher: false,
    }];
    Ok(packet::resolve(method, &one, args, kwargs)?.bound)
}

impl ScriptObject {
    /// Calls the method `name` with positional arguments (after the
    /// receiver), as `obj.name(*args)` does: a call of the operator
    /// `higher_order::call_torchbind(obj, name, *args)` through the
    /// dispatcher (PyTorch's `call_torchbind`), so that dispatch modes,
    /// graph capture, fake tensors and functionalization see it as they see
    /// any call.
    pub fn call_method(&self, name: &str, args: &[Value]) -> Result<Value> {
        torchbind::call_method(self, name, args)
    }

    /// Calls the method `name` with positional and keyword arguments
    /// (`_1=…`), converted as Python's call converts them, with PyTorch's
    /// messages (`push() expected at most 2 argument(s) but received 3
    /// argument(s). Declaration: …`). The keywords are bound to the method's
    /// schema first; the call is then [`ScriptObject::call_method`]'s.
    pub fn call_method_with(
        &self,
        name: &str,
        args: &[Value],
        kwargs: &[(String, Value)],
    ) -> Result<Value> {
        if kwargs.is_empty() {
            return self.call_method(name, args);
        }
        let bound = self.bind_method(name, args, kwargs)?;
        self.call_method(name, &bound)
    }

    /// `args` and `kwargs` bound to the method's schema (the fake class's
    /// for a fake object): the values after the receiver, one per argument.
    fn bind_method(
        &self,
        name: &str,
        args: &[Value],
        kwargs: &[(String, Value)],
    ) -> Result<Vec<Value>> {
        let schema = match self.fake_method_schema(name) {
            Some(s) => s?,
            None => {
                let class = class_of(self)?;
                class
                    .method(name)
                    .ok_or_else(|| class.no_attribute(name))?
                    .schema
            }
        };
        let mut all = Vec::with_capacity(args.len() + 1);
        all.push(Value::Object(self.clone()));
        all.extend_from_slice(args);
        let mut bound = bind(name, schema, &all, kwargs)?;
        bound.remove(0);
        Ok(bound)
    }

    /// A new object with a copy of this one's state (`copy.deepcopy(obj)`),
    /// through the class's pickling: tensors in the state are copied.
    pub fn deep_copy(&self) -> Result<ScriptObject> {
        let class = class_of(self)?;
        let state = match &class.pickle {
            Some((save, _)) => save(self)?,
            None => return Err(class.no_getstate("deepcopy")),
        };
        class.setstate(state)
    }

    /// The object's state as `(name, value)` pairs, from its
    /// `__obj_flatten__` method (the first step of making a traceable
    /// class's fake, PyTorch's `_check_valid_flat_script_obj`), checked as PyTorch checks it: a tuple of
    /// `(str, value)` tuples.
    pub fn flatten(&self) -> Result<Vec<(String, Value)>> {
        let flat = self.call_method("__obj_flatten__", &[])?;
        let Value::List(items) = flat else {
            return Err(Error::Runtime("Expect flat x to be a tuple.".into()));
        };
        let mut pairs = Vec::with_capacity(items.len());
        for item in items.iter() {
            let Value::List(pair) = item else {
                return Err(Error::Runtime(
                    "Expect flat x to be a tuple of tuples.".into(),
                ));
            };
            match &pair[..] {
                [Value::Str(name), value] => pairs.push((name.clone(), value.clone())),
                _ => {
                    return Err(Error::Runtime(
                        "Expect element of flat x to be a tuple of two elements with first element being a string".into(),
                    ))
                }
            }
        }
        Ok(pairs)
    }

    /// The names of the object's methods (`obj._method_names()`).
    pub fn method_names(&self) -> Vec<&'static str> {
        if let Some(names) = self.fake_method_names() {
            return names;
        }
        class_of(self)
            .map(ClassDef::method_names)
            .unwrap_or_default()
    }
}

/// A method's schema, as PyTorch generates it. Made once per method and
/// kept for the program's life, as its class is.
fn method_schema(type_name: &str, name: &str, args: &[String], ret: &str) -> &'static str {
    let mut params = vec![format!("{type_name} _0")];
    params.extend(
        args.iter()
            .enumerate()
            .map(|(i, t)| format!("{t} _{}", i + 1)),
    );
    // A tuple return is parenthesized once more, as c10 prints it.
    let ret = match ret.starts_with('(') {
        true => format!("({ret} _0)"),
        false => format!("{ret} _0"),
    };
    let text = format!("{name}({}) -> {ret}", params.join(", "));
    Box::leak(text.into_boxed_str())
}

/// A constructor: a function of arguments that makes the class's value.
pub trait Init<T, A>: Send + Sync + 'static {
    /// The arguments' schema types.
    fn arg_types() -> Vec<String>;
    /// The function over boxed arguments (already bound: one per argument).
    fn boxed(self) -> BoxedArgsFn<T>;
}

/// A method: a function of the receiver and arguments.
pub trait MethodFn<T, A>: Send + Sync + 'static {
    /// The arguments' schema types (after the receiver).
    fn arg_types() -> Vec<String>;
    /// The return's schema type.
    fn ret_type() -> String;
    /// The function over boxed arguments (one per argument after the receiver).
    fn boxed(self) -> BoxedMethodFn<T>;
}

macro_rules! arities {
    ($(($($a:ident $i:tt),*)),* $(,)?) => {$(
        impl<T, F, $($a: ArgType,)*> Init<T, ($($a,)*)> for F
        where
            F: Fn($($a),*) -> T + Send + Sync + 'static,
        {
            fn arg_types() -> Vec<String> {
                vec![$($a::schema_type()),*]
            }

            #[allow(unused_variables)]
            fn boxed(self) -> BoxedArgsFn<T> {
                Box::new(move |args: &[Value]| {
                    Ok(self($($a::from_arg(&args[$i]).ok_or(CallError::Arg)?),*))
                })
            }
        }

        impl<T, F, R: RetType, $($a: ArgType,)*> MethodFn<T, ($($a,)*)> for F
        where
            F: Fn(&T, $($a),*) -> R + Send + Sync + 'static,
        {
            fn arg_types() -> Vec<String> {
                vec![$($a::schema_type()),*]
            }

            fn ret_type() -> String {
                R::schema_type()
            }

            #[allow(unused_variables)]
            fn boxed(self) -> BoxedMethodFn<T> {
                Box::new(move |this: &T, args: &[Value]| {
                    Ok(self(this, $($a::from_arg(&args[$i]).ok_or(CallError::Arg)?),*).into_ret()?)
                })
            }
        }
    )*};
}

arities!(
    (),
    (A0 0),
    (A0 0, A1 1),
    (A0 0, A1 1, A2 2),
    (A0 0, A1 1, A2 2, A3 3),
    (A0 0, A1 1, A2 2, A3 3, A4 4),
    (A0 0, A1 1, A2 2, A3 3, A4 4, A5 5),
);

#[cfg(test)]
mod tests;
