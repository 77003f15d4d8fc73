//! `torch.ScriptObject`: an instance of a custom class (TorchBind), as the
//! layers below the class registry see it — a shared handle to a Rust value
//! and its class. What a class is (its methods, constructor, pickling) is
//! `crate::classes`' business; here a class is only a name and a `dyn Any`
//! the registry recognises as its own.

use std::any::Any;
use std::fmt;
use std::sync::Arc;

/// The class of a [`ScriptObject`], seen from below the class registry.
pub trait ObjectClass: Send + Sync + 'static {
    /// `ns.Name` (`torch.classes.ns.Name` in Python).
    fn qualified_name(&self) -> &str;
    /// `__torch__.torch.classes.ns.Name`: the type's name in schemas.
    fn type_name(&self) -> &str;
    /// The class itself, for the registry to downcast.
    fn as_any(&self) -> &dyn Any;
}

/// An instance of a custom class: a reference-counted handle (clones share
/// the object, as Python references to one `torch.ScriptObject` do) to a
/// value of the class's Rust type, shareable between threads.
///
/// Objects are made by their class (`opforge::classes`), which gives each the
/// class it was registered as; the value is reached with
/// [`ScriptObject::downcast_ref`].
#[derive(Clone)]
pub struct ScriptObject(Arc<ObjectInner<dyn Any + Send + Sync>>);

/// The class and the value, in one allocation.
struct ObjectInner<T: ?Sized> {
    class: &'static dyn ObjectClass,
    value: T,
}

impl ScriptObject {
    /// An object of `class` holding `value`. The class registry calls this
    /// with the class `value`'s type is registered as.
    pub fn new<T: Any + Send + Sync>(class: &'static dyn ObjectClass, value: T) -> ScriptObject {
        ScriptObject(Arc::new(ObjectInner { class, value }))
    }

    /// The object's class.
    pub fn class(&self) -> &'static dyn ObjectClass {
        self.0.class
    }

    /// `ns.Name`.
    pub fn qualified_name(&self) -> &str {
        self.0.class.qualified_name()
    }

    /// `__torch__.torch.classes.ns.Name` (`obj._type().qualified_name()`).
    pub fn type_name(&self) -> &str {
        self.0.class.type_name()
    }

    /// The value, if it is a `T`.
    pub fn downcast_ref<T: Any>(&self) -> Option<&T> {
        self.0.value.downcast_ref::<T>()
    }

    /// Whether both handles are the same object (Python's `is`).
    pub fn is_same(&self, other: &ScriptObject) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }

    /// The object's address, as its `repr` prints it.
    pub fn address(&self) -> usize {
        Arc::as_ptr(&self.0) as *const () as usize
    }
}

impl fmt::Debug for ScriptObject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ScriptObject({})", self.type_name())
    }
}

/// Python's `repr`: `<torch.ScriptObject object at 0x…>`.
impl fmt::Display for ScriptObject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "<torch.ScriptObject object at {:#x}>", self.address())
    }
}

/// Two handles are equal when they are the same object.
impl PartialEq for ScriptObject {
    fn eq(&self, other: &ScriptObject) -> bool {
        self.is_same(other)
    }
}
