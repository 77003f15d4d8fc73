//! Method calls seen from a layer above: graph capture stands between a
//! program and its objects' methods (PyTorch records each call as
//! `call_torchbind`). One interceptor per thread, installed for a guard's
//! lifetime; it is off while it runs, so that what a method itself calls
//! is not seen again.

use crate::error::Result;
use crate::hooks;
use crate::value::ScriptObject;
use crate::value::Value;
use std::cell::RefCell;
use std::rc::Rc;

/// What stands between method calls and the methods: given the object, the
/// method's name, its positional and keyword arguments, and the call itself
/// (to make, or not), the method's result.
pub type MethodInterceptor = Rc<
    dyn Fn(
        &ScriptObject,
        &str,
        &[Value],
        &[(String, Value)],
        &dyn Fn() -> Result<Value>,
    ) -> Result<Value>,
>;

thread_local! {
    static INTERCEPTOR: RefCell<Option<MethodInterceptor>> = const { RefCell::new(None) };
}

/// Routes this thread's method calls on objects through `f` until the guard
/// is dropped (the previous interceptor, if any, comes back then).
pub fn intercept_methods(f: MethodInterceptor) -> InterceptGuard {
    hooks::install(&INTERCEPTOR, f)
}

/// Turns this thread's interception off until the guard is dropped: what a
/// layer that intercepts does around an operator's kernel, whose own
/// method calls (a fake kernel's on fake objects) are not the program's.
pub fn methods_unintercepted() -> InterceptGuard {
    hooks::suspend(&INTERCEPTOR)
}

/// Restores the previous interceptor when dropped ([`intercept_methods`]).
pub type InterceptGuard = hooks::HookGuard<MethodInterceptor>;

/// The call through the thread's interceptor, if one is installed (it is
/// off while it runs); `None` if there is none.
pub(crate) fn intercepted(
    obj: &ScriptObject,
    name: &str,
    args: &[Value],
    kwargs: &[(String, Value)],
    call: &dyn Fn() -> Result<Value>,
) -> Option<Result<Value>> {
    hooks::with_hook(&INTERCEPTOR, |f| f(obj, name, args, kwargs, call))
}
