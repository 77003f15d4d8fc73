//! Classes of tensor-likes: tensor subclasses and duck types.
//!
//! Python gives every object a type; the override protocols look handlers up on
//! it. Here a [`Class`] is that type: a name, an optional base class, class
//! attributes, and the two handlers (`__torch_function__`, `__torch_dispatch__`).
//! A *tensor subclass* class describes tensors (`Tensor::as_subclass`,
//! `Tensor::wrapper`); a *duck* class describes tensor-likes that are not tensors
//! (`Tensor::duck`), like the `ScalarTensor` of
//! PyTorch's "Extending PyTorch" notes.

use super::{FunctionCall, Handled, OpOverload};
use crate::dispatch::typed::TypedArgs;
use crate::dispatch::{DispatchKey, KeySet};
use crate::error::{Error, Result};
use crate::value::Value;
use std::cell::{OnceCell, RefCell};
use std::fmt;
use std::sync::Arc;

/// A class's `__torch_function__`: receives the class it was looked up on (`cls`)
/// and the call.
pub type TorchFunctionFn = dyn Fn(&Class, &FunctionCall<'_>) -> Result<Handled> + Send + Sync;

/// A class's `__torch_dispatch__`: receives the class and the operator call at the
/// Python key.
pub type TorchDispatchFn = dyn Fn(&Class, &DispatchCall<'_>) -> Result<Handled> + Send + Sync;

/// How a class handles `__torch_function__`.
#[derive(Clone)]
pub(crate) enum FunctionSlot {
    /// `Tensor.__torch_function__`, inherited: run the function, convert the result
    /// to the class.
    Default,
    /// `torch._C._disabled_torch_function_impl`: instances behave like plain tensors.
    Disabled,
    /// The class's own handler.
    Custom(Arc<TorchFunctionFn>),
}

pub(crate) struct ClassInner {
    name: String,
    module: String,
    base: Option<Class>,
    tensor: bool,
    pub(crate) function: FunctionSlot,
    pub(crate) dispatch: Option<Arc<TorchDispatchFn>>,
    attrs: Vec<(String, Value)>,
    repr: Option<Arc<ReprFn>>,
}

type ReprFn = dyn Fn(&crate::Tensor) -> String + Send + Sync;

/// A class of tensor-likes. Cloning shares; equality is identity (two classes with
/// the same name are different classes, as in Python).
///
/// ```
/// use opforge::overrides::Class;
/// use opforge::{Tensor, Value};
/// let sub = Class::subclass("SubTensor").attr("a", Value::Int(1)).build();
/// let t = Tensor::from_vec(vec![1.0f32], &[1]).unwrap().as_subclass(&sub).unwrap();
/// let s = t.sum().unwrap();
/// assert!(s.is_instance(&sub));
/// assert!(matches!(s.class_attr("a"), Some(Value::Int(1))));
/// ```
#[derive(Clone)]
pub struct Class(pub(crate) Arc<ClassInner>);

impl PartialEq for Class {
    fn eq(&self, other: &Class) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for Class {}

impl std::hash::Hash for Class {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        (Arc::as_ptr(&self.0) as *const u8 as usize).hash(state);
    }
}

impl fmt::Debug for Class {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "<class '{}.{}'>", self.0.module, self.0.name)
    }
}

impl fmt::Display for Class {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

impl crate::tensor::TensorClass for Class {
    fn name(&self) -> &str {
        Class::name(self)
    }
    fn qualname(&self) -> String {
        Class::qualname(self)
    }
    fn is_tensor_subclass(&self) -> bool {
        Class::is_tensor_subclass(self)
    }
    fn has_torch_function(&self) -> bool {
        Class::has_torch_function(self)
    }
    fn repr_of(&self, t: &crate::Tensor) -> Option<String> {
        Class::repr_of(self, t)
    }
    fn clone_class(&self) -> Box<dyn crate::tensor::TensorClass> {
        Box::new(self.clone())
    }
}

/// The class of an instance's extension data (every `Ext` is made here, with a
/// [`Class`]; anything else is no class of the protocol's).
#[inline]
pub(crate) fn class_of(ext: &crate::tensor::Ext) -> Option<&Class> {
    ext.class_as::<Class>()
}

impl Class {
    /// Starts a subclass of `Tensor` (`class Name(torch.Tensor)`). It inherits
    /// `Tensor.__torch_function__` unless given its own.
    pub fn subclass(name: impl Into<String>) -> ClassBuilder {
        ClassBuilder::new(name.into(), true)
    }

    /// Starts a duck tensor-like type: not a tensor, accepted wherever a tensor is
    /// because it has a `__torch_function__` (give it one with
    /// [`ClassBuilder::torch_function`]).
    pub fn duck(name: impl Into<String>) -> ClassBuilder {
        ClassBuilder::new(name.into(), false)
    }

    /// The class name (`SubTensor`).
    pub fn name(&self) -> &str {
        &self.0.name
    }

    /// The qualified name (`__main__.SubTensor`).
    pub fn qualname(&self) -> String {
        format!("{}.{}", self.0.module, self.0.name)
    }

    /// The base class, if it extends another class (rather than `Tensor` or nothing).
    pub fn base(&self) -> Option<&Class> {
        self.0.base.as_ref()
    }

    /// A subclass of `Tensor` (rather than a duck type)?
    pub fn is_tensor_subclass(&self) -> bool {
        self.0.tensor
    }

    /// `issubclass(self, other)`: the same class or derived from it.
    pub fn is_subclass_of(&self, other: &Class) -> bool {
        let mut c = Some(self);
        while let Some(k) = c {
            if k == other {
                return true;
            }
            c = k.base();
        }
        false
    }

    /// A class attribute, looked up along the base classes.
    pub fn attr(&self, name: &str) -> Option<Value> {
        let mut c = Some(self);
        while let Some(k) = c {
            if let Some((_, v)) = k.0.attrs.iter().find(|(n, _)| n == name) {
                return Some(v.clone());
            }
            c = k.base();
        }
        None
    }

    /// Does the protocol consult this class (`__torch_function__` not disabled)?
    pub fn has_torch_function(&self) -> bool {
        !matches!(self.0.function, FunctionSlot::Disabled)
    }

    /// Has a `__torch_dispatch__` (its tensors carry the `Python` dispatch key)?
    pub fn has_torch_dispatch(&self) -> bool {
        self.0.dispatch.is_some()
    }

    /// The keys instances add to a call.
    pub(crate) fn keys(&self) -> KeySet {
        if self.has_torch_dispatch() {
            KeySet::of(DispatchKey::Python)
        } else {
            KeySet::EMPTY
        }
    }

    pub(crate) fn repr_of(&self, t: &crate::Tensor) -> Option<String> {
        self.0.repr.as_ref().map(|f| f(t))
    }

    /// Calls this class's `__torch_function__` on `call` (what Python does with
    /// `type(arg).__torch_function__(func, types, args, kwargs)`).
    pub fn torch_function(&self, call: &FunctionCall<'_>) -> Result<Handled> {
        match &self.0.function {
            FunctionSlot::Default => call.default(self),
            FunctionSlot::Disabled => Ok(Handled::NotImplemented),
            FunctionSlot::Custom(f) => f(self, call),
        }
    }

    /// Calls this class's `__torch_dispatch__` (`NotImplemented` if it has none).
    pub fn torch_dispatch(&self, call: &DispatchCall<'_>) -> Result<Handled> {
        match &self.0.dispatch {
            Some(f) => f(self, call),
            None => Ok(Handled::NotImplemented),
        }
    }
}

/// Builds a [`Class`].
///
/// ```
/// use opforge::overrides::{Class, Handled};
/// let base = Class::subclass("A").build();
/// let derived = Class::subclass("B")
///     .extends(&base)
///     .torch_function(|cls, call| {
///         // Log, then do what Tensor.__torch_function__ does.
///         println!("{}", call.func());
///         call.default(cls)
///     })
///     .build();
/// assert!(derived.is_subclass_of(&base));
/// ```
pub struct ClassBuilder {
    name: String,
    module: String,
    base: Option<Class>,
    tensor: bool,
    function: Option<FunctionSlot>,
    dispatch: Option<Arc<TorchDispatchFn>>,
    attrs: Vec<(String, Value)>,
    repr: Option<Arc<ReprFn>>,
}

impl ClassBuilder {
    fn new(name: String, tensor: bool) -> ClassBuilder {
        ClassBuilder {
            name,
            module: "__main__".into(),
            base: None,
            tensor,
            function: None,
            dispatch: None,
            attrs: Vec::new(),
            repr: None,
        }
    }

    /// The module shown in the class's repr (`__main__` by default).
    pub fn module(mut self, module: impl Into<String>) -> ClassBuilder {
        self.module = module.into();
        self
    }

    /// Derives from `base` (which must be of the same kind: tensor subclass or
    /// duck); handlers not given here are inherited from it.
    pub fn extends(mut self, base: &Class) -> ClassBuilder {
        self.base = Some(base.clone());
        self.tensor = base.is_tensor_subclass();
        self
    }

    /// A class attribute (`class SubTensor(Tensor): a = 1`).
    pub fn attr(mut self, name: impl Into<String>, value: Value) -> ClassBuilder {
        self.attrs.push((name.into(), value));
        self
    }

    /// The class's `__torch_function__`. Return [`Handled::NotImplemented`] to let
    /// the next handler try; call [`FunctionCall::default`] for
    /// `super().__torch_function__(...)`.
    pub fn torch_function(
        mut self,
        f: impl Fn(&Class, &FunctionCall<'_>) -> Result<Handled> + Send + Sync + 'static,
    ) -> ClassBuilder {
        self.function = Some(FunctionSlot::Custom(Arc::new(f)));
        self
    }

    /// `__torch_function__ = torch._C._disabled_torch_function_impl`: instances are
    /// treated as plain tensors by the function-level protocol.
    pub fn disable_torch_function(mut self) -> ClassBuilder {
        self.function = Some(FunctionSlot::Disabled);
        self
    }

    /// The class's `__torch_dispatch__`; instances then carry the `Python` dispatch
    /// key, so every operator reaching the dispatcher with one calls `f` there.
    pub fn torch_dispatch(
        mut self,
        f: impl Fn(&Class, &DispatchCall<'_>) -> Result<Handled> + Send + Sync + 'static,
    ) -> ClassBuilder {
        self.dispatch = Some(Arc::new(f));
        self
    }

    /// How instances print (`__repr__`).
    pub fn repr(
        mut self,
        f: impl Fn(&crate::Tensor) -> String + Send + Sync + 'static,
    ) -> ClassBuilder {
        self.repr = Some(Arc::new(f));
        self
    }

    /// The class.
    pub fn build(self) -> Class {
        let inherited = self.base.as_ref();
        let function = self
            .function
            .or_else(|| inherited.map(|b| b.0.function.clone()))
            .unwrap_or(if self.tensor {
                FunctionSlot::Default
            } else {
                FunctionSlot::Disabled
            });
        let dispatch = self
            .dispatch
            .or_else(|| inherited.and_then(|b| b.0.dispatch.clone()));
        let repr = self
            .repr
            .or_else(|| inherited.and_then(|b| b.0.repr.clone()));
        Class(Arc::new(ClassInner {
            name: self.name,
            module: self.module,
            base: self.base,
            tensor: self.tensor,
            function,
            dispatch,
            attrs: self.attrs,
            repr,
        }))
    }
}

/// The error `as_subclass` gives for a class that does not derive from `Tensor`.
pub(crate) fn not_a_tensor_class() -> Error {
    Error::Type("Creating a Tensor subclass from a class that does not inherit from Tensor is not possible. Make sure your class inherits from Tensor.".into())
}

/// Normalized positional and keyword arguments.
pub(super) type Normalized = (Vec<Value>, Vec<(String, Value)>);

/// One operator call offered to `__torch_dispatch__` handlers.
pub struct DispatchCall<'a> {
    pub(super) func: &'static OpOverload,
    pub(super) types: &'a [Class],
    pub(super) values: Values<'a>,
    /// The keys below the `Python` key (for [`DispatchCall::redispatch`]); for a
    /// typed call worked out when asked, from its arguments' keys.
    pub(super) keys: KeySet,
    pub(super) normalized: OnceCell<Normalized>,
}

/// A call's arguments: boxed by the caller, or a typed call's, boxed on demand.
pub(super) enum Values<'a> {
    Boxed(&'a [Value]),
    Typed {
        args: RefCell<&'a mut TypedArgs<'a>>,
        /// The arguments' own keys (before the thread's).
        arg_keys: KeySet,
        boxed: OnceCell<Vec<Value>>,
    },
}
