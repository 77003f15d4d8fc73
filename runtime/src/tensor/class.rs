//! The class of a tensor-like (a tensor subclass, a wrapper subclass or a duck
//! tensor-like type), as the tensor layer and the argument parser see it: a
//! trait object, so that the classes themselves, with their
//! `__torch_function__` / `__torch_dispatch__` handlers, live in the layer
//! above (`crate::overrides::Class`).

use super::Tensor;
use std::any::Any;

/// What the layers below the override protocols know of a tensor's class.
pub trait TensorClass: Any + Send + Sync {
    /// The class name (`LoggingTensor`).
    fn name(&self) -> &str;
    /// `module.Name`, as Python prints the class.
    fn qualname(&self) -> String;
    /// A subclass of `torch.Tensor` (else a duck tensor-like type)?
    fn is_tensor_subclass(&self) -> bool;
    /// Does the class have a `__torch_function__` (its own or inherited)?
    fn has_torch_function(&self) -> bool;
    /// The class's own printing of an instance, if it has one.
    fn repr_of(&self, t: &Tensor) -> Option<String>;
    /// The same class (classes are handles: compare equal), of the same
    /// concrete type.
    fn clone_class(&self) -> Box<dyn TensorClass>;
}
