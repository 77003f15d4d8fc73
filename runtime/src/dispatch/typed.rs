//! The engine behind the generated typed API (`opforge::ops`): compute the key
//! set from the tensor arguments, pick the kernel, call its unboxed pointer, or box
//! the arguments when the kernel has only a boxed entry.

use super::{DispatchKey, Kernel, KeySet, Operator};
use crate::error::Result;
use crate::tensor::{Device, Tensor};
use crate::value::{FromValues, Value};

/// Arguments that contribute dispatch keys.
pub trait HasKeys {
    /// The union of the key sets of the tensors inside.
    fn keys(&self) -> KeySet;
}

impl HasKeys for &Tensor {
    #[inline]
    fn keys(&self) -> KeySet {
        self.key_set()
    }
}

impl HasKeys for &mut Tensor {
    #[inline]
    fn keys(&self) -> KeySet {
        self.key_set()
    }
}

impl HasKeys for Option<&Tensor> {
    #[inline]
    fn keys(&self) -> KeySet {
        self.map_or(KeySet::EMPTY, Tensor::key_set)
    }
}

impl HasKeys for &[Tensor] {
    fn keys(&self) -> KeySet {
        self.iter().fold(KeySet::EMPTY, |k, t| k | t.key_set())
    }
}

impl HasKeys for &[Option<Tensor>] {
    fn keys(&self) -> KeySet {
        self.iter()
            .flatten()
            .fold(KeySet::EMPTY, |k, t| k | t.key_set())
    }
}

/// The key set of a call without tensors: the backend of its `device` argument.
#[inline]
pub fn device_keys(device: Option<Device>) -> KeySet {
    KeySet::for_device(device.unwrap_or(Device::Cpu))
}

/// Completes a key set: a call whose tensors are all in empty lists still has a
/// backend (CPU).
#[inline]
pub fn with_backend(ks: KeySet) -> KeySet {
    if ks.highest_backend().is_some() {
        ks
    } else {
        ks | KeySet::for_device(Device::Cpu)
    }
}

/// A typed call's arguments, for the paths that cannot call an unboxed kernel
/// directly: `args(None, out)` appends them, boxed, to `out` (one value per
/// schema argument) and returns `None`; `args(Some(kernel), _)` calls `kernel`'s
/// unboxed entry with them (`None` if it has none) and boxes the result.
pub type TypedArgs<'a> =
    dyn FnMut(Option<&'static Kernel>, &mut Vec<Value>) -> Option<Result<Value>> + 'a;

/// Calls a kernel that has no unboxed entry (`kernel`, resolved at `key` from the
/// arguments' keys `arg_keys`): boxes the arguments and calls it. A dispatch
/// mode's `Python` key is the exception: its handler gets the call with the
/// arguments unboxed, boxed only if it asks for them, and calling the operator
/// again from there reaches the unboxed kernel below.
#[cold]
#[inline(never)]
pub fn call_boxed<R: FromValues + crate::overrides::TypedRet>(
    op: &'static Operator,
    arg_keys: KeySet,
    kernel: &'static Kernel,
    key: DispatchKey,
    args: &mut TypedArgs<'_>,
) -> Result<R> {
    if key == DispatchKey::Python
        && !arg_keys.has(DispatchKey::Python)
        && crate::overrides::is_python_fallback(kernel)
    {
        return crate::overrides::python_typed(op, arg_keys, args);
    }
    let mut values = Vec::new();
    args(None, &mut values);
    R::from_values(op.call_with_keys(with_backend(arg_keys), &values)?)
}

/// One typed call: `typed_call!(OpId::add_Tensor, sig::add_Tensor, keys, (self_, other, alpha))`,
/// or for an operator given by reference, `typed_call!(@op op, sig, keys, (args))`.
#[macro_export]
#[doc(hidden)]
macro_rules! typed_call {
    (@op $op:expr, $sig:ty, $keys:expr, ($($arg:expr),*)) => {{
        let arg_keys = $keys;
        let op: &'static $crate::dispatch::Operator = $op;
        let (kernel, key) = op.kernel($crate::dispatch::typed::with_backend(arg_keys))?;
        if !kernel.unboxed.is_null() {
            // SAFETY: an operator's kernels with an unboxed pointer are registered
            // by `#[kernel]` / `#[op]` for its schema, and that pointer is a wrapper
            // coerced to the fn-pointer type derived from the schema by the same
            // function (`rust_types::fn_pointer_type`) that wrote `$sig`; so it has
            // exactly type `$sig`. Closures registered at run time have none.
            let f = unsafe { ::std::mem::transmute::<*const (), $sig>(kernel.unboxed) };
            f($($arg),*)
        } else {
            $crate::dispatch::typed::call_boxed(
                op,
                arg_keys,
                kernel,
                key,
                &mut |k: ::std::option::Option<&'static $crate::dispatch::Kernel>,
                      out: &mut ::std::vec::Vec<$crate::value::Value>| match k {
                    ::std::option::Option::Some(k) if !k.unboxed.is_null() => {
                        // SAFETY: as above.
                        let f = unsafe { ::std::mem::transmute::<*const (), $sig>(k.unboxed) };
                        ::std::option::Option::Some(
                            f($($arg),*).map($crate::overrides::TypedRet::into_value),
                        )
                    }
                    ::std::option::Option::Some(_) => ::std::option::Option::None,
                    ::std::option::Option::None => {
                        out.extend([$($crate::value::ToValue::to_value(&$arg)),*]);
                        ::std::option::Option::None
                    }
                },
            )
        }
    }};
    ($id:expr, $sig:ty, $keys:expr, ($($arg:expr),*)) => {
        $crate::typed_call!(@op $crate::dispatch::dispatcher().op($id), $sig, $keys, ($($arg),*))
    };
}
