//! `__torch_dispatch__`: the `Python` dispatch key's fallback, dispatch modes and
//! subclass handlers (PyTorch's `torch/utils/_python_dispatch.py` and the
//! `Python` key's fallback in `torch/csrc/autograd/python_variable.cpp`).

use super::class::{DispatchCall, Normalized, Values};
use super::{Class, Handled, OpOverload};
use crate::dispatch::linked::{FallbackEntry, FALLBACKS};
use crate::dispatch::typed::TypedArgs;
use crate::dispatch::{dispatcher, DispatchKey, KeySet, LocalKeys, Operator};
use crate::error::{Error, Result};
use crate::normalize::normalize;
use crate::value::Value;
use std::cell::{OnceCell, RefCell};
use std::sync::Arc;

/// A dispatch mode (`torch.utils._python_dispatch.TorchDispatchMode`): while
/// pushed, every operator call on the thread reaches it at the `Python` key, below
/// autograd, with normalized arguments.
///
/// ```
/// use opforge::overrides::{push_dispatch_mode, DispatchCall, Handled, TorchDispatchMode};
/// use opforge::Tensor;
/// use std::sync::{Arc, Mutex};
/// #[derive(Default)]
/// struct DispatchLog(Mutex<Vec<String>>);
/// impl TorchDispatchMode for DispatchLog {
///     fn torch_dispatch(&self, call: &DispatchCall<'_>) -> opforge::Result<Handled> {
///         self.0.lock().unwrap().push(call.func().to_string());
///         call.call_func().map(Handled::Value)
///     }
/// }
/// let log = Arc::new(DispatchLog::default());
/// {
///     let _guard = push_dispatch_mode(log.clone());
///     let a = Tensor::from_vec(vec![1.0f32, 2.0], &[2]).unwrap();
///     let _ = (&a * 2.0).unwrap().sum().unwrap();
/// }
/// assert_eq!(*log.0.lock().unwrap(), ["aten.mul.Tensor", "aten.sum.default"]);
/// ```
pub trait TorchDispatchMode: Send + Sync + 'static {
    /// The handler; inside it this mode is off.
    fn torch_dispatch(&self, call: &DispatchCall<'_>) -> Result<Handled>;

    /// How the mode appears in error messages.
    fn repr(&self) -> String {
        format!("<{} object>", std::any::type_name::<Self>())
    }
}

type Mode = Arc<dyn TorchDispatchMode>;

thread_local! {
    static MODES: RefCell<Vec<Mode>> = const { RefCell::new(Vec::new()) };
}

/// Includes the `Python` key on this thread iff a dispatch mode is on the stack.
fn set_python_key(on: bool) {
    let local = LocalKeys::get();
    let python = KeySet::of(DispatchKey::Python);
    let included = if on {
        local.included | python
    } else {
        local.included - python
    };
    LocalKeys::set(LocalKeys { included, ..local });
}

fn push(mode: Mode) {
    let first = MODES.with(|m| {
        let mut m = m.borrow_mut();
        m.push(mode);
        m.len() == 1
    });
    if first {
        set_python_key(true);
    }
}

fn pop() -> Option<Mode> {
    let (mode, empty) = MODES.with(|m| {
        let mut m = m.borrow_mut();
        let mode = m.pop();
        (mode, m.is_empty())
    });
    if empty {
        set_python_key(false);
    }
    mode
}

/// Runs `f` on the top mode with that mode off the stack (a mode is off inside
/// its handler), then puts it back; `None` if the stack is empty.
#[inline]
fn with_top_mode<T>(f: impl FnOnce(&dyn TorchDispatchMode) -> T) -> Option<T> {
    struct Restore(Option<Mode>);
    impl Drop for Restore {
        fn drop(&mut self) {
            if let Some(m) = self.0.take() {
                push(m);
            }
        }
    }
    let restore = Restore(Some(pop()?));
    let mode = restore.0.as_deref()?;
    Some(f(mode))
}

/// Runs `f` with this thread's dispatch modes off (PyTorch's
/// `_disable_current_modes`), then puts them back.
pub fn with_dispatch_modes_off<T>(f: impl FnOnce() -> T) -> T {
    struct Restore(Vec<Mode>);
    impl Drop for Restore {
        fn drop(&mut self) {
            for m in self.0.drain(..) {
                push(m);
            }
        }
    }
    let mut off = Vec::new();
    while let Some(m) = pop() {
        off.push(m);
    }
    off.reverse();
    let _restore = Restore(off);
    f()
}

/// The dispatch modes on this thread's stack, bottom first.
pub fn dispatch_mode_stack() -> Vec<Arc<dyn TorchDispatchMode>> {
    MODES.with(|m| m.borrow().clone())
}

/// Keeps a dispatch mode on this thread's stack until dropped (`with mode:`).
#[must_use = "the mode is popped when the guard is dropped"]
pub struct DispatchModeGuard {
    _not_send: std::marker::PhantomData<*const ()>,
}

impl Drop for DispatchModeGuard {
    fn drop(&mut self) {
        pop();
    }
}

/// Pushes a dispatch mode for the guard's lifetime.
pub fn push_dispatch_mode(mode: Arc<dyn TorchDispatchMode>) -> DispatchModeGuard {
    push(mode);
    DispatchModeGuard {
        _not_send: std::marker::PhantomData,
    }
}

/// The `Python` key's fallback, linked in: it runs only for calls whose key
/// set has the key (a tensor of a class with a `__torch_dispatch__`, or a
/// dispatch mode pushed on the thread).
#[linkme::distributed_slice(FALLBACKS)]
static PYTHON_FALLBACK: FallbackEntry = FallbackEntry {
    key: "Python",
    boxed: python_key,
    typed: Some(python_typed),
    leaves_alone: None,
    file: file!(),
    line: line!(),
};

impl<'a> DispatchCall<'a> {
    /// The operator overload (`aten.add.Tensor`).
    pub fn func(&self) -> &'static OpOverload {
        self.func
    }

    /// The classes with a `__torch_dispatch__` among the tensor arguments.
    pub fn types(&self) -> &[Class] {
        self.types
    }

    /// One value per schema argument, defaults filled in.
    pub fn values(&self) -> &[Value] {
        match &self.values {
            Values::Boxed(v) => v,
            Values::Typed { args, boxed, .. } => boxed.get_or_init(|| {
                let mut out = Vec::new();
                // Not borrowed elsewhere: `call_func` holds the borrow only while
                // the kernel runs, and the kernel cannot reach this call.
                (args.borrow_mut())(None, &mut out);
                out
            }),
        }
    }

    fn normalized(&self) -> &Normalized {
        self.normalized.get_or_init(|| {
            let (a, k) = normalize(self.func.schema(), self.values());
            (a, k.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
        })
    }

    /// The normalized positional arguments (as PyTorch's handlers receive them).
    pub fn args(&self) -> &[Value] {
        &self.normalized().0
    }

    /// The normalized keyword arguments.
    pub fn kwargs(&self) -> &[(String, Value)] {
        &self.normalized().1
    }

    /// `func(*args, **kwargs)`: calls the operator again from the top of the
    /// dispatcher (this mode is off inside its handler; lower modes and subclass
    /// handlers still apply). Multiple results come back as a list.
    #[inline]
    pub fn call_func(&self) -> Result<Value> {
        if let Values::Typed { args, arg_keys, .. } = &self.values {
            // A typed call reaching an unboxed kernel stays unboxed.
            let op = self.func.operator();
            if let Some(entry) = op.unboxed_entry(*arg_keys) {
                if let Some(r) = (args.borrow_mut())(Some(entry), &mut Vec::new()) {
                    return r;
                }
            }
        }
        self.call_func_boxed()
    }

    #[cold]
    fn call_func_boxed(&self) -> Result<Value> {
        self.func
            .operator()
            .call_boxed(self.values())
            .map(super::one_value)
    }

    /// Calls the operator with other schema-ordered values (e.g. unwrapped tensors).
    pub fn call_with(&self, values: &[Value]) -> Result<Value> {
        self.func
            .operator()
            .call_boxed(values)
            .map(super::one_value)
    }

    /// Continues below the `Python` key with the same values (the backend kernel).
    pub fn redispatch(&self) -> Result<Value> {
        self.func
            .operator()
            .call_with_keys(self.keys_below(), self.values())
            .map(super::one_value)
    }

    fn keys_below(&self) -> KeySet {
        match &self.values {
            Values::Boxed(_) => self.keys,
            Values::Typed { arg_keys, .. } => {
                (*arg_keys | LocalKeys::get().included).below(DispatchKey::Python)
            }
        }
    }

    /// Offers the call to the top mode (taken off the stack meanwhile), then to
    /// `types`; `Ok(None)` if nobody was there to ask.
    #[inline]
    fn offer(&self) -> Result<Option<Value>> {
        let mut declined = Vec::new();
        let asked = with_top_mode(|m| {
            let h = m.torch_dispatch(self);
            if let Ok(Handled::NotImplemented) = h {
                declined.push(format!("mode object {}", m.repr()));
            }
            h
        });
        if let Some(h) = asked {
            if let Handled::Value(v) = h? {
                return Ok(Some(v));
            }
        }
        for c in self.types {
            match c.torch_dispatch(self)? {
                Handled::Value(v) => return Ok(Some(v)),
                Handled::NotImplemented => declined.push(format!("tensor subclass {c:?}")),
            }
        }
        if declined.is_empty() {
            return Ok(None);
        }
        Err(all_declined(self.func, declined))
    }
}

#[cold]
fn all_declined(func: &OpOverload, declined: Vec<String>) -> Error {
    let mut msg = format!(
        "Multiple dispatch failed for 'torch._ops.{func}'; all __torch_dispatch__ handlers returned NotImplemented:\n\n"
    );
    for d in declined {
        msg.push_str(&format!("  - {d}\n"));
    }
    msg.push_str("\nFor more information, try re-running with TORCH_LOGS=not_implemented");
    Error::Type(msg.into())
}

/// The `Python` key's fallback for a typed call that a dispatch mode brought
/// there (no argument has a dispatch class): the mode's handler gets the call
/// with its arguments unboxed.
fn python_typed(
    op: &'static Operator,
    arg_keys: KeySet,
    args: &mut TypedArgs<'_>,
) -> Result<Value> {
    let handle = OpOverload::of(op);
    let call = DispatchCall {
        func: handle,
        types: &[],
        values: Values::Typed {
            args: RefCell::new(args),
            arg_keys,
            boxed: OnceCell::new(),
        },
        keys: KeySet::EMPTY,
        normalized: OnceCell::new(),
    };
    let v = match call.offer()? {
        Some(v) if handle.schema().returns.len() == 1 && !handle.schema().varret => v,
        Some(v) => returns(handle, v).map(super::one_value)?,
        None => call.redispatch()?,
    };
    Ok(v)
}

/// The classes with a dispatch handler among the tensors, in handler order (the
/// function level's ordering rule; a disabled `__torch_function__` does not
/// matter here).
fn dispatch_classes(values: &[Value]) -> Vec<Class> {
    let mut out: Vec<Class> = Vec::new();
    for v in values {
        v.for_each_tensor(&mut |t| {
            if let Some(c) = t.class().filter(|c| c.has_torch_dispatch()) {
                super::append_overloaded(&mut out, c);
            }
        });
    }
    out
}

/// The `Python` key's kernel: modes (top first), then subclasses.
fn python_key(op: &Operator, keys: KeySet, values: &[Value]) -> Result<Vec<Value>> {
    let handle = overload_of(op);
    let types = dispatch_classes(values);
    let call = DispatchCall {
        func: handle,
        types: &types,
        values: Values::Boxed(values),
        keys: keys.below(DispatchKey::Python),
        normalized: OnceCell::new(),
    };
    match call.offer()? {
        Some(v) => returns(handle, v),
        // Nothing here wants the call (the key was set without a handler).
        None => op.call_with_keys(keys.below(DispatchKey::Python), values),
    }
}

/// The handle of a dispatched operator (kernels receive a plain reference).
fn overload_of(op: &Operator) -> &'static OpOverload {
    if let Some(h) = OpOverload::attached_to(op) {
        return h;
    }
    let s = op.schema;
    let stat = dispatcher()
        .find(&format!("{}::{}", s.namespace, s.name))
        .unwrap_or_else(|| unreachable!("a dispatched operator is in the dispatcher"));
    OpOverload::of(stat)
}

/// A handler's value as the schema's returns.
fn returns(handle: &OpOverload, v: Value) -> Result<Vec<Value>> {
    let n = handle.schema().returns.len();
    if handle.schema().varret {
        // A tuple of any length (`with_effects`); one value alone is a
        // tuple of one.
        return Ok(match v {
            Value::List(vs) => vs.into_vec(),
            Value::TensorList(ts) => ts.into_iter().map(Value::Tensor).collect(),
            one => vec![one],
        });
    }
    match (n, v) {
        (0, Value::None) => Ok(Vec::new()),
        (0, _) => Err(Error::Runtime(format!(
            "Expected __torch_dispatch__ for {} to return None but it returned something else instead.",
            handle.qualified_name()
        ).into())),
        (1, v) => Ok(vec![v]),
        (_, Value::List(vs)) => Ok(vs.into_vec()),
        (_, Value::TensorList(ts)) => Ok(ts.into_iter().map(Value::Tensor).collect()),
        (n, other) => Err(Error::Runtime(format!(
            "{}: __torch_dispatch__ returned {} for {n} results",
            handle.qualified_name(),
            other.type_name()
        ).into())),
    }
}
