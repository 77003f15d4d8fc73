//! The engine behind the generated typed API (`opforge::at`, `opforge::ops`):
//! compute the key set from the tensor arguments, pick the kernel, call its
//! unboxed pointer, or box the arguments when the kernel has only a boxed entry.
//! Generic over the arguments ([`Args`]) and the signature, so every operator of
//! one Rust signature shares one instance.

use super::{DispatchKey, KeySet, Operator, Unboxed};
use crate::error::Result;
use crate::value::{Args, CallWith, Returns, Value};

/// A typed call's arguments, for the paths that cannot call an unboxed kernel
/// directly: `args(None, out)` appends them, boxed, to `out` (one value per
/// schema argument) and returns `None`; `args(Some(entry), _)` calls a kernel's
/// unboxed entry with them (`None` if it is not of the call's signature) and
/// boxes the result.
pub type TypedArgs<'a> =
    dyn FnMut(Option<&'static Unboxed>, &mut Vec<Value>) -> Option<Result<Value>> + 'a;

/// One typed call, through the dispatcher: picks the kernel for the key set of
/// `args`, and calls its unboxed entry if it has one of exactly the type `S`
/// (the operator's signature, `opforge::sig::<op>`); otherwise boxes the
/// arguments for its boxed entry. Every generated `at::` function is one line
/// calling this:
///
/// ```
/// use opforge::dispatch::{dispatcher, typed};
/// use opforge::{sig, OpId, Scalar, Tensor};
/// let a = Tensor::from_vec(vec![1.0f32, 2.0], &[2])?;
/// let add = dispatcher().op(OpId::add_Tensor);
/// let r: Tensor = typed::call::<sig::add_Tensor, _, _>(add, (&a, &a, Scalar::Int(1)))?;
/// assert_eq!(r.to_vec::<f32>()?, vec![2.0, 4.0]);
/// # Ok::<(), opforge::Error>(())
/// ```
#[inline(always)]
pub fn call<S, A, R>(op: &'static Operator, args: A) -> Result<R>
where
    S: CallWith<A, R> + Copy + 'static,
    A: Args,
    R: Returns,
{
    let arg_keys = args.keys();
    match op.unboxed_kernel::<S>(arg_keys) {
        Some(f) => f.call_with(args),
        None => call_boxed::<S, A, R>(op, arg_keys, args),
    }
}

/// [`call`] when the kernel has no unboxed entry of the operator's signature
/// (or there is no kernel, or registration errors wait): boxes the arguments
/// and calls it. A dispatch mode's `Python` key is the exception: its handler
/// gets the call with the arguments unboxed, boxed only if it asks for them,
/// and calling the operator again from there reaches the unboxed kernel below.
#[cold]
#[inline(never)]
fn call_boxed<S, A, R>(op: &'static Operator, arg_keys: KeySet, args: A) -> Result<R>
where
    S: CallWith<A, R> + Copy + 'static,
    A: Args,
    R: Returns,
{
    let (kernel, key) = op.kernel(arg_keys)?;
    // Both are plain function pointers: the kernel need not stay alive for them.
    let (unboxed, fallback) = (kernel.unboxed::<S>(), kernel.typed_fallback());
    drop(kernel);
    if let Some(f) = unboxed {
        // Registered since the fast path looked.
        return f.call_with(args);
    }
    if let Some(fallback) =
        fallback.filter(|_| key == DispatchKey::Python && !arg_keys.has(DispatchKey::Python))
    {
        // The arguments stay typed: a kernel below is called with them (or a
        // copy of them), and they are boxed only if the handler asks. Arguments
        // that cannot be copied (`&mut Tensor`) are boxed before their one
        // typed use, for any later boxed one.
        let mut slot = Some(args);
        let mut stash: Option<Vec<Value>> = None;
        let mut typed =
            |k: Option<&'static Unboxed>, out: &mut Vec<Value>| -> Option<Result<Value>> {
                match k.and_then(|k| k.get::<S>()) {
                    Some(f) => {
                        let a = match slot.as_ref().and_then(Args::dup) {
                            Some(a) => a,
                            None => {
                                let a = slot.take()?;
                                let mut vs = Vec::with_capacity(A::LEN);
                                a.to_values(&mut vs);
                                stash = Some(vs);
                                a
                            }
                        };
                        Some(f.call_with(a).map(Returns::into_value))
                    }
                    None if k.is_some() => None,
                    None => {
                        match (&slot, &stash) {
                            (Some(a), _) => a.to_values(out),
                            (None, Some(vs)) => out.extend(vs.iter().cloned()),
                            (None, None) => {}
                        }
                        None
                    }
                }
            };
        return R::from_value(fallback(op, arg_keys, &mut typed)?);
    }
    let mut values = Vec::with_capacity(A::LEN);
    args.to_values(&mut values);
    R::from_values(op.call_with_keys(arg_keys, &values)?)
}
