//! The engine behind the generated typed API (`opforge::ops`): compute the key
//! set from the tensor arguments, pick the kernel, call its unboxed pointer, or box
//! the arguments when the kernel has only a boxed entry.

use super::{Kernel, KeySet, Operator};
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

/// Calls a kernel that has no unboxed entry, boxing the arguments.
#[cold]
pub fn call_boxed<R: FromValues>(
    op: &Operator,
    keys: KeySet,
    kernel: &Kernel,
    args: Vec<Value>,
) -> Result<R> {
    let _ = kernel;
    R::from_values(op.call_with_keys(keys, &args)?)
}

/// One typed call: `typed_call!(OpId::add_Tensor, sig::add_Tensor, keys, (self_, other, alpha))`.
#[macro_export]
#[doc(hidden)]
macro_rules! typed_call {
    ($id:expr, $sig:ty, $keys:expr, ($($arg:expr),*)) => {{
        let keys = $crate::dispatch::typed::with_backend($keys);
        let op = $crate::dispatch::dispatcher().op($id);
        let (kernel, _) = op.kernel(keys)?;
        if !kernel.unboxed.is_null() {
            // SAFETY: `#[kernel]` stores as the unboxed pointer a wrapper whose
            // signature it derives from the schema with the same function
            // (`rust_types::fn_pointer_type`) that generated `$sig`, coerced to that
            // fn-pointer type; so the pointer has exactly type `$sig`.
            let f = unsafe { ::std::mem::transmute::<*const (), $sig>(kernel.unboxed) };
            f($($arg),*)
        } else {
            $crate::dispatch::typed::call_boxed(
                op,
                keys,
                kernel,
                vec![$($crate::value::ToValue::to_value(&$arg)),*],
            )
        }
    }};
}
