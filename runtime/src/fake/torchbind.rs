//! The higher-order operators of custom classes at the `Fake` key (PyTorch's
//! `call_torchbind_fake`, `with_effects_fake`): they run as below the key,
//! on the values as they are. A fake object's method is its fake class's,
//! and what a method or `with_effects`' operator calls comes back to this
//! key as any call on fakes does. (The fallback would run them on meta
//! copies of the tensors instead, and hand a fake class's methods meta
//! tensors.)

use crate::classes::torchbind;
use crate::error::Result;
use crate::kernel;
use crate::value::Value;

/// `call_torchbind` on fakes: the method (a fake object's fake method).
#[kernel(Fake, "higher_order::call_torchbind")]
fn fake_call_torchbind(values: &[Value]) -> Result<Vec<Value>> {
    torchbind::call_torchbind(values)
}

/// `with_effects` on fakes: a new token, then the operator's results.
#[kernel(Fake, "higher_order::with_effects")]
fn fake_with_effects(values: &[Value]) -> Result<Vec<Value>> {
    torchbind::with_effects(values)
}
