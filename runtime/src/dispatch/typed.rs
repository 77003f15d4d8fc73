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

/// One typed call (`opforge::__private::typed_call!`): `typed_call!(OpId::add_Tensor, sig::add_Tensor, keys, (self_, other, alpha))`,
/// or for an operator given by reference, `typed_call!(@op op, sig, keys, (args))`.
/// The kernel's unboxed entry is used only if it has exactly the type `$sig`
/// ([`crate::dispatch::Kernel::unboxed`]); otherwise the arguments are boxed.
#[macro_export]
#[doc(hidden)]
macro_rules! __typed_call {
    (@op $op:expr, $sig:ty, $keys:expr, ($($arg:expr),*)) => {{
        let arg_keys = $keys;
        let op: &'static $crate::__private::Operator = $op;
        let (kernel, key) = op.kernel($crate::__private::with_backend(arg_keys))?;
        match kernel.unboxed::<$sig>() {
            ::std::option::Option::Some(f) => f($($arg),*),
            ::std::option::Option::None => $crate::__private::call_boxed(
                op,
                arg_keys,
                kernel,
                key,
                &mut |k: ::std::option::Option<&'static $crate::__private::Kernel>,
                      out: &mut ::std::vec::Vec<$crate::__private::Value>| match k
                    .and_then(|k| k.unboxed::<$sig>())
                {
                    ::std::option::Option::Some(f) => ::std::option::Option::Some(
                        f($($arg),*).map($crate::__private::TypedRet::into_value),
                    ),
                    ::std::option::Option::None if k.is_some() => ::std::option::Option::None,
                    ::std::option::Option::None => {
                        out.extend([$($crate::__private::ToValue::to_value(&$arg)),*]);
                        ::std::option::Option::None
                    }
                },
            ),
        }
    }};
    ($id:expr, $sig:ty, $keys:expr, ($($arg:expr),*)) => {
        $crate::__typed_call!(@op $crate::__private::dispatcher().op($id), $sig, $keys, ($($arg),*))
    };
}
