//! The override protocols: `__torch_function__` (function level) and
//! `__torch_dispatch__` (dispatch level), tensor subclasses, duck tensor-likes and
//! modes. Behaviour follows PyTorch 2.15 (`torch/overrides.py`,
//! `torch/utils/_python_dispatch.py`).
//!
//! # Function level
//! Every generated function (`torch::add`), `Tensor` method (`t.add(&u)`),
//! operator (`&a + &b` is `Tensor.add`), operator handle (`ops::add_Tensor` is
//! `aten.add.Tensor`), property getter (`t.get_shape()`), indexing
//! (`t.getitem(..)`) and boxed API call ([`call_dispatch`]) first
//! looks at its tensor arguments. A plain tensor costs one pointer test. If an
//! argument is a subclass instance or a duck tensor-like ([`Class`]), or a function
//! mode is active ([`push_function_mode`]), the call is offered to handlers:
//!
//! 1. the innermost mode, popped while its handler runs;
//! 2. each tensor-like argument's class, subclasses before their bases, else left
//!    to right, one per class ([`collect`]);
//! 3. if all answer [`Handled::NotImplemented`], PyTorch's `TypeError`.
//!
//! A handler sees a [`FunctionCall`]: `func`, `types`, `args`, `kwargs`. The
//! default handler of tensor subclasses ([`FunctionCall::default`], what
//! `super().__torch_function__` does) runs the function with subclass handlers
//! disabled and returns tensors as the subclass.
//!
//! ```
//! use opforge::overrides::{Class, Handled};
//! use opforge::{torch, Tensor};
//! use std::sync::{Arc, Mutex};
//! let log = Arc::new(Mutex::new(Vec::new()));
//! let seen = log.clone();
//! let logging = Class::subclass("LoggingTensor")
//!     .torch_function(move |cls, call| {
//!         seen.lock().unwrap().push(call.func().to_string());
//!         call.default(cls)
//!     })
//!     .build();
//! let t = Tensor::from_vec(vec![1.0f32, 2.0], &[2]).unwrap().as_subclass(&logging).unwrap();
//! let u = (&t + 1.0).unwrap();
//! let s = torch::sum(&u).unwrap();
//! assert!(s.is_instance(&logging));
//! assert_eq!(*log.lock().unwrap(), ["torch.Tensor.add", "torch.sum"]);
//! ```
//!
//! # Dispatch level
//! Classes with a `__torch_dispatch__` ([`ClassBuilder::torch_dispatch`]) give
//! their tensors the `Python` dispatch key; dispatch modes
//! ([`push_dispatch_mode`]) add it to every call on the thread. The handler runs
//! below autograd and after composite-implicit decomposition, and receives the
//! operator handle and normalized arguments ([`DispatchCall`]).

mod api_call;
mod class;
mod dispatch;
mod func;
mod handles;
mod implements;
mod index;
pub mod lists;
mod members;
mod state;
mod tensor;

pub use crate::flags::function_modes_active;
pub use api_call::call_dispatch;
pub use class::{Class, ClassBuilder, DispatchCall, TorchDispatchFn, TorchFunctionFn};
pub use dispatch::{
    dispatch_mode_stack, push_dispatch_mode, with_dispatch_modes_off, DispatchModeGuard,
    TorchDispatchMode,
};
pub use func::{is_tensor_method_or_property, resolve_name, ExternalFn, Func};
pub use handles::{ops, OpNamespace, OpOverload, OpPacket};
pub use implements::HandledFunctions;
pub use index::TensorIndex;
pub use members::{BoxedImpl, Member};
pub use state::{function_mode_stack, DisableGuard, FunctionModeGuard};

use crate::argparse::ApiTable;
use crate::error::{Error, Result};
use crate::tensor::Tensor;
use crate::value::{Args as ArgTuple, Returns, Value};
use state::Enabled;
use std::cell::OnceCell;
use std::sync::{Arc, OnceLock};

/// Keyword arguments, in the order they were passed.
pub type Kwargs = Vec<(String, Value)>;

/// What a handler returns: a result, or `NotImplemented` (let the next handler try).
#[derive(Clone, Debug)]
pub enum Handled {
    /// The call's result.
    Value(Value),
    /// Python's `NotImplemented`.
    NotImplemented,
}

impl From<Value> for Handled {
    fn from(v: Value) -> Handled {
        Handled::Value(v)
    }
}

impl From<Tensor> for Handled {
    fn from(t: Tensor) -> Handled {
        Handled::Value(Value::Tensor(t))
    }
}

/// A function mode (`torch.overrides.TorchFunctionMode`): sees every overridable
/// call on the thread while pushed, before any tensor-like's handler.
///
/// ```
/// use opforge::overrides::{push_function_mode, FunctionCall, Handled, TorchFunctionMode};
/// use opforge::{torch, Tensor};
/// use std::sync::{Arc, Mutex};
/// #[derive(Default)]
/// struct FunctionLog(Mutex<Vec<String>>);
/// impl TorchFunctionMode for FunctionLog {
///     fn torch_function(&self, call: &FunctionCall<'_>) -> opforge::Result<Handled> {
///         self.0.lock().unwrap().push(call.func().to_string());
///         call.call_func().map(Handled::Value)
///     }
/// }
/// let mode = Arc::new(FunctionLog::default());
/// {
///     let _guard = push_function_mode(mode.clone());
///     let a = Tensor::from_vec(vec![1.0f32], &[1]).unwrap();
///     let _ = (&a * 2.0).unwrap().sum().unwrap();
/// }
/// assert_eq!(*mode.0.lock().unwrap(), ["torch.Tensor.mul", "torch.Tensor.sum"]);
/// ```
pub trait TorchFunctionMode: Send + Sync + 'static {
    /// The handler. Inside it this mode is off (calls go to the next mode, then
    /// tensor-likes, then the implementation) unless re-entered with
    /// [`enable_current_mode`].
    fn torch_function(&self, call: &FunctionCall<'_>) -> Result<Handled>;

    /// How the mode appears in error messages (`mode object <repr>`).
    fn repr(&self) -> String {
        format!("<{} object>", std::any::type_name::<Self>())
    }
}

/// Pushes a function mode for the guard's lifetime (`with mode:`). The same mode
/// may be pushed more than once.
pub fn push_function_mode(mode: Arc<dyn TorchFunctionMode>) -> FunctionModeGuard {
    FunctionModeGuard::push(mode)
}

/// Inside a mode's handler, pushes that mode again (`with self:`), so calls made
/// by the handler are seen by it too. `None` outside a handler.
pub fn enable_current_mode() -> Option<FunctionModeGuard> {
    state::current().map(FunctionModeGuard::push)
}

/// `torch._C.DisableTorchFunctionSubclass()`: tensor-likes' handlers are skipped
/// (tensors behave as plain ones); modes still run.
pub fn disable_torch_function_subclass() -> DisableGuard {
    DisableGuard::new(Enabled::ModesOnly)
}

/// `torch._C.DisableTorchFunction()`: no handler runs, modes included.
pub fn disable_torch_function() -> DisableGuard {
    DisableGuard::new(Enabled::Nothing)
}

/// One call offered to `__torch_function__` handlers.
pub struct FunctionCall<'a> {
    func: FuncOf<'a>,
    types: &'a [Class],
    args: Args<'a>,
    /// The typed call again, through the protocol (`func(*args, **kwargs)`).
    typed: Option<&'a dyn Fn() -> Result<Value>>,
    /// The typed call's implementation (what `func` does once no handler applies).
    run: Option<&'a dyn Fn() -> Result<Value>>,
    /// The typed call's tensor arguments (instances whose class data results can share).
    relevant: &'a [&'a dyn Relevant],
    /// An argument that is a plain instance of the only class in `types` (found
    /// while collecting, so the default handler need not look again).
    like: Option<&'a Arc<crate::tensor::Ext>>,
    /// `func`'s results are not converted to the subclass (`grad`, `_base`).
    nowrap: bool,
}

/// The called function, or how to name it (typed calls name it only when asked).
enum FuncOf<'a> {
    Known(Func),
    Lazy(&'a dyn Fn() -> Func, std::cell::Cell<Option<Func>>),
}

enum Args<'a> {
    Boxed(&'a [Value], &'a [(String, Value)]),
    Lazy(
        &'a dyn Fn() -> (Vec<Value>, Kwargs),
        OnceCell<(Vec<Value>, Kwargs)>,
    ),
}

impl<'a> FunctionCall<'a> {
    /// A call of `func` with boxed arguments, offered to classes `types`.
    pub fn new(
        func: Func,
        types: &'a [Class],
        args: &'a [Value],
        kwargs: &'a [(String, Value)],
    ) -> FunctionCall<'a> {
        FunctionCall {
            func: FuncOf::Known(func),
            types,
            args: Args::Boxed(args, kwargs),
            typed: None,
            run: None,
            relevant: &[],
            like: None,
            nowrap: matches!(func, Func::Member(m) if m.nowrap),
        }
    }

    /// The function being called.
    pub fn func(&self) -> Func {
        match &self.func {
            FuncOf::Known(f) => *f,
            FuncOf::Lazy(make, cell) => cell.get().unwrap_or_else(|| {
                let f = make();
                cell.set(Some(f));
                f
            }),
        }
    }

    /// The tensor-like classes among the arguments, in handler order.
    pub fn types(&self) -> &[Class] {
        self.types
    }

    fn parts(&self) -> (&[Value], &[(String, Value)]) {
        match &self.args {
            Args::Boxed(a, k) => (a, k),
            Args::Lazy(make, cell) => {
                let (a, k) = cell.get_or_init(make);
                (a, k)
            }
        }
    }

    /// The positional arguments, as the caller passed them (`self` first for methods).
    pub fn args(&self) -> &[Value] {
        self.parts().0
    }

    /// The keyword arguments, as the caller passed them.
    pub fn kwargs(&self) -> &[(String, Value)] {
        self.parts().1
    }

    /// `func(*args, **kwargs)` with the call's own arguments, through the protocol
    /// (what a mode that passes calls through does).
    #[inline]
    pub fn call_func(&self) -> Result<Value> {
        match self.typed {
            Some(run) => run(),
            None => {
                let (a, k) = self.parts();
                self.func().call(a, k)
            }
        }
    }

    /// `Tensor.__torch_function__` for class `cls` (`super().__torch_function__`):
    /// `NotImplemented` unless `cls` is a subclass of every type; else the function
    /// runs with subclass handlers disabled and tensors in the result come back as
    /// `cls` (except for `grad` / `_base`).
    pub fn default(&self, cls: &Class) -> Result<Handled> {
        // The common case (one class, `cls` itself) without walking bases.
        let only_cls = matches!(self.types, [t] if t == cls);
        if !only_cls && !self.types.iter().all(|t| cls.is_subclass_of(t)) {
            return Ok(Handled::NotImplemented);
        }
        let out = match self.run {
            // With subclass handlers off and no mode, calling `func` again would
            // only reach its implementation: run that directly.
            Some(run) if !function_modes_active() => run()?,
            _ => {
                let _off = disable_torch_function_subclass();
                self.call_func()?
            }
        };
        if self.nowrap {
            return Ok(Handled::Value(out));
        }
        if let (Value::Tensor(_), Some(ext)) = (&out, self.instance_of(cls)) {
            let Value::Tensor(t) = out else {
                unreachable!("matched above")
            };
            return Ok(Handled::Value(Value::Tensor(t.into_subclass_like(ext)?)));
        }
        Ok(Handled::Value(convert(out, cls)?))
    }

    /// The class data of an argument that is a plain instance of `cls` (results
    /// converted to `cls` share it instead of allocating their own).
    fn instance_of(&self, cls: &Class) -> Option<&'a Arc<crate::tensor::Ext>> {
        if let Some(e) = self.like.filter(|e| class::class_of(e) == Some(cls)) {
            return Some(e);
        }
        let mut found = None;
        for r in self.relevant {
            r.each(&mut |t| {
                if found.is_none() {
                    found = t
                        .ext_arc()
                        .filter(|e| class::class_of(e) == Some(cls) && e.payload.is_none());
                }
            });
        }
        found
    }
}

/// `_convert(ret, cls)`: tensors become instances of `cls` (a view of the same
/// data, `as_subclass`), recursively inside lists; other values are unchanged.
pub fn convert(v: Value, cls: &Class) -> Result<Value> {
    if !cls.is_tensor_subclass() {
        return Ok(v);
    }
    Ok(match v {
        Value::Tensor(t) => Value::Tensor(to_class(t, cls)?),
        Value::TensorList(ts) => Value::TensorList(
            ts.into_iter()
                .map(|t| to_class(t, cls))
                .collect::<Result<_>>()?,
        ),
        Value::OptTensorList(ts) => Value::OptTensorList(
            ts.into_iter()
                .map(|t| t.map(|t| to_class(t, cls)).transpose())
                .collect::<Result<_>>()?,
        ),
        Value::List(vs) => Value::List(
            vs.into_iter()
                .map(|v| convert(v, cls))
                .collect::<Result<_>>()?,
        ),
        other => other,
    })
}

fn to_class(t: Tensor, cls: &Class) -> Result<Tensor> {
    if t.is_instance(cls) {
        Ok(t)
    } else if cls.is_tensor_subclass() {
        Ok(t.with_class_of(&Arc::new(crate::tensor::Ext::new(
            cls.clone(),
            cls.keys(),
            None,
        ))))
    } else {
        t.as_subclass(cls)
    }
}

/// Converting a typed result to a subclass (the typed twin of [`convert`]).
pub trait IntoSubclass: Sized {
    /// Tensors inside become instances of `cls`.
    fn into_subclass(self, cls: &Class) -> Result<Self>;

    /// The same, given an instance's class data to share (no allocation for a
    /// fresh result tensor).
    #[doc(hidden)]
    fn into_subclass_like(self, ext: &Arc<crate::tensor::Ext>) -> Result<Self> {
        match class::class_of(ext) {
            Some(c) => self.into_subclass(c),
            None => Ok(self),
        }
    }
}

impl IntoSubclass for Tensor {
    fn into_subclass(self, cls: &Class) -> Result<Self> {
        to_class(self, cls)
    }

    #[inline]
    fn into_subclass_like(self, ext: &Arc<crate::tensor::Ext>) -> Result<Self> {
        if class::class_of(ext).is_none_or(|c| self.is_instance(c)) {
            Ok(self)
        } else {
            Ok(self.with_class_of(ext))
        }
    }
}

impl IntoSubclass for Vec<Tensor> {
    fn into_subclass(self, cls: &Class) -> Result<Self> {
        self.into_iter().map(|t| to_class(t, cls)).collect()
    }
}

macro_rules! unchanged {
    ($($t:ty),*) => {$(
        impl IntoSubclass for $t {
            fn into_subclass(self, _: &Class) -> Result<Self> {
                Ok(self)
            }
        }
    )*};
}
unchanged!(
    (),
    i64,
    f64,
    bool,
    String,
    crate::Scalar,
    crate::DType,
    crate::QScheme,
    Vec<i64>,
    crate::Device,
    crate::Layout
);

macro_rules! tuple_into_subclass {
    ($(($($r:ident),*))*) => {$(
        impl<$($r: IntoSubclass),*> IntoSubclass for ($($r,)*) {
            #[allow(non_snake_case)]
            fn into_subclass(self, cls: &Class) -> Result<Self> {
                let ($($r,)*) = self;
                Ok(($($r.into_subclass(cls)?,)*))
            }
        }
    )*};
}
tuple_into_subclass! {
    (R0, R1)
    (R0, R1, R2)
    (R0, R1, R2, R3)
    (R0, R1, R2, R3, R4)
    (R0, R1, R2, R3, R4, R5)
    (R0, R1, R2, R3, R4, R5, R6)
    (R0, R1, R2, R3, R4, R5, R6, R7)
    (R0, R1, R2, R3, R4, R5, R6, R7, R8)
    (R0, R1, R2, R3, R4, R5, R6, R7, R8, R9)
}

impl IntoSubclass for Option<Tensor> {
    fn into_subclass(self, cls: &Class) -> Result<Self> {
        self.map(|t| to_class(t, cls)).transpose()
    }
}

/// Arguments of typed calls that can carry tensor-likes.
pub trait Relevant {
    /// Is any tensor inside a subclass instance, wrapper or duck?
    fn overloaded(&self) -> bool;
    /// Calls `f` on every tensor inside, in order.
    fn each<'t>(&'t self, f: &mut dyn FnMut(&'t Tensor));
}

impl<A: ArgTuple> Relevant for A {
    #[inline(always)]
    fn overloaded(&self) -> bool {
        ArgTuple::overloaded(self)
    }
    fn each<'t>(&'t self, f: &mut dyn FnMut(&'t Tensor)) {
        self.each_tensor(f)
    }
}

/// `append_overloaded_arg` over `tensors`: one entry per class, a subclass
/// inserted before the first of its bases already recorded, else appended.
/// Classes whose `__torch_function__` is disabled are skipped.
pub fn collect<'t>(tensors: impl IntoIterator<Item = &'t Tensor>) -> Vec<Class> {
    let mut out = Vec::new();
    for t in tensors {
        append_if_overloaded(&mut out, t);
    }
    out
}

/// Records `t`'s class if it has a `__torch_function__` ([`append_overloaded`]).
#[inline]
fn append_if_overloaded(out: &mut Vec<Class>, t: &Tensor) {
    if let Some(c) = t.class().filter(|c| c.has_torch_function()) {
        append_overloaded(out, c);
    }
}

/// Does any value (also inside lists) hold a subclass instance, wrapper or duck?
pub(crate) fn values_overloaded<'v>(values: impl IntoIterator<Item = &'v Value>) -> bool {
    values
        .into_iter()
        .any(|v| v.any_tensor(&mut |t: &Tensor| !t.is_plain()))
}

/// The classes of the tensor-likes among boxed arguments (positional, then keyword).
pub fn collect_values(args: &[Value], kwargs: &[(String, Value)]) -> Vec<Class> {
    let mut out = Vec::new();
    for v in args.iter().chain(kwargs.iter().map(|(_, v)| v)) {
        v.for_each_tensor(&mut |t| append_if_overloaded(&mut out, t));
    }
    out
}

/// `torch.overrides.is_tensor_like`: a plain tensor or anything whose class has a
/// `__torch_function__`.
pub fn is_tensor_like(t: &Tensor) -> bool {
    t.ext().is_none_or(|e| e.class().has_torch_function())
}

/// `torch.overrides.has_torch_function`: would a call with these tensors consult
/// a handler (a mode is active, or one is a tensor-like with a handler)?
pub fn has_torch_function<'t>(tensors: impl IntoIterator<Item = &'t Tensor>) -> bool {
    match state::enabled() {
        Enabled::Nothing => false,
        Enabled::ModesOnly => function_modes_active(),
        Enabled::All => {
            function_modes_active()
                || tensors
                    .into_iter()
                    .any(|t| t.ext().is_some_and(|e| e.class().has_torch_function()))
        }
    }
}

/// The full protocol over a call: modes, then classes; `Ok(None)` if nobody was
/// asked (nothing to do: the caller runs the implementation).
#[inline(always)]
fn run_protocol(call: &FunctionCall<'_>, candidates: &[Class]) -> Result<Option<Value>> {
    let mut declined = Vec::new();
    if function_modes_active() {
        let asked = state::with_top_mode(|m| {
            let h = m.torch_function(call);
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
    }
    if declined.is_empty() && candidates.is_empty() {
        return Ok(None);
    }
    for c in candidates {
        match c.torch_function(call)? {
            Handled::Value(v) => return Ok(Some(v)),
            Handled::NotImplemented => declined.push(format!("tensor subclass {c:?}")),
        }
    }
    Err(all_declined(call.func(), candidates, declined))
}

#[cold]
fn all_declined(func: Func, candidates: &[Class], declined: Vec<String>) -> Error {
    if func.is_builtin() {
        let mut msg = format!(
            "Multiple dispatch failed for '{}'; all __torch_function__ handlers returned NotImplemented:\n\n",
            func.message_name()
        );
        for d in declined {
            msg.push_str(&format!("  - {d}\n"));
        }
        msg.push_str("\nFor more information, try re-running with TORCH_LOGS=not_implemented");
        Error::Type(msg.into())
    } else {
        let types: Vec<String> = candidates.iter().map(|c| format!("{c:?}")).collect();
        let mut msg = format!(
            "no implementation found for '{}' on types that implement __torch_function__: [{}]",
            external_name(func),
            types.join(", ")
        );
        if let Some(m) = declined.iter().find_map(|d| d.strip_prefix("mode object ")) {
            msg.push_str(&format!(" nor in mode {m}"));
        }
        Error::Type(msg.into())
    }
}

fn external_name(func: Func) -> String {
    match func {
        Func::Op(o) => format!("torch._ops.{}", o),
        Func::Packet(p) => format!("torch._ops.{}", p),
        other => resolve_name(other),
    }
}

/// The classes that get a say, given the thread's state.
fn active_candidates(cands: Vec<Class>) -> Vec<Class> {
    match state::enabled() {
        Enabled::All => cands,
        _ => Vec::new(),
    }
}

/// The class of `t` if it is a duck tensor-like (not a tensor).
fn duck_class(t: &Tensor) -> Option<&Class> {
    t.ext()
        .and_then(class::class_of)
        .filter(|c| !c.is_tensor_subclass())
}

/// A duck tensor-like reaching an implementation: what the parser says of a
/// non-tensor (`add(): argument 'other' must be Tensor, not ScalarTensor`).
fn duck_error(func: Func, duck: &Class) -> Error {
    let name = resolve_name(func);
    let short = name.rsplit('.').next().unwrap_or(&name).to_string();
    Error::Type(format!("{short}(): argument must be Tensor, not {}", duck.name()).into())
}

/// The protocol for a boxed call of `func` (what [`Func::call`] does): handlers if
/// any apply, else the implementation.
pub fn handle_boxed(func: Func, args: &[Value], kwargs: &[(String, Value)]) -> Result<Value> {
    let overloaded = values_overloaded(args.iter().chain(kwargs.iter().map(|(_, v)| v)));
    if !overloaded && !function_modes_active() {
        return func.call_unchecked(args, kwargs);
    }
    let cands = active_candidates(collect_values(args, kwargs));
    handle_boxed_with(func, cands, args, kwargs)
}

/// [`handle_boxed`] with the classes to ask already collected (by the parser, for
/// the signature the call matched).
pub(crate) fn handle_boxed_with(
    func: Func,
    cands: Vec<Class>,
    args: &[Value],
    kwargs: &[(String, Value)],
) -> Result<Value> {
    let call = FunctionCall::new(func, &cands, args, kwargs);
    match run_protocol(&call, &cands)? {
        Some(v) => Ok(v),
        None => {
            let mut duck = None;
            for v in args {
                v.for_each_tensor(&mut |t| {
                    if duck.is_none() {
                        duck = duck_class(t);
                    }
                });
            }
            if let Some(duck) = duck {
                return Err(duck_error(func, duck));
            }
            func.call_unchecked(args, kwargs)
        }
    }
}

/// `torch.overrides.handle_torch_function(public_api, relevant_args, *args, **kwargs)`:
/// offers a call of `func` to the modes and to the classes of the tensor-likes in
/// `relevant`; `Ok(None)` when none applies (run the function's own body).
pub fn handle_torch_function(
    func: Func,
    relevant: &[&Tensor],
    args: &[Value],
    kwargs: &[(String, Value)],
) -> Result<Option<Value>> {
    let cands = active_candidates(collect(relevant.iter().copied()));
    let call = FunctionCall::new(func, &cands, args, kwargs);
    run_protocol(&call, &cands)
}

/// What the tensor-likes among a call's arguments ask for.
enum Candidates<'t> {
    /// None has a handler.
    Nobody,
    /// One class has a handler; `ext` is an instance of it (a plain one, with no
    /// payload, if any argument is).
    One(&'t Arc<crate::tensor::Ext>, &'t Class),
    /// Several classes have handlers.
    Many,
}

fn scan<'t>(relevant: &[&'t dyn Relevant]) -> Candidates<'t> {
    let mut one: Option<(&'t Arc<crate::tensor::Ext>, &'t Class)> = None;
    let mut many = false;
    for r in relevant {
        r.each(&mut |t| {
            let Some(ext) = t.ext_arc() else { return };
            let Some(class) = class::class_of(ext) else {
                return;
            };
            if !class.has_torch_function() {
                return;
            }
            match one {
                None => one = Some((ext, class)),
                Some((o, oc)) if oc == class => {
                    if o.payload.is_some() && ext.payload.is_none() {
                        one = Some((ext, class));
                    }
                }
                Some(_) => many = true,
            }
        });
    }
    match (many, one) {
        (true, _) => Candidates::Many,
        (false, Some((ext, class))) => Candidates::One(ext, class),
        (false, None) => Candidates::Nobody,
    }
}

/// Typed results as one boxed value and back (what handlers return), and
/// convertible to a subclass: every operator return type.
pub trait TypedRet: Returns + IntoSubclass {}

impl<T: Returns + IntoSubclass> TypedRet for T {}

/// Where a generated typed function is: the Python-API callable it is
/// (`torch.add`, `Tensor.add`; empty for an operator handle, `ops::<op>`) and
/// its operator. A handler sees the binding if the runtime has one by that name,
/// else the operator's handle.
pub struct Site {
    /// `torch.add`, `Tensor.add`, `torch.nn.functional.gelu`, or `""`.
    pub api: &'static str,
    /// The operator the function calls.
    pub op: fn() -> &'static crate::dispatch::Operator,
}

impl Site {
    /// The site of the Python-API callable `api` (`""` for an operator
    /// handle) calling `op`'s operator.
    pub const fn new(api: &'static str, op: fn() -> &'static crate::dispatch::Operator) -> Site {
        Site { api, op }
    }

    /// The function handlers are asked to override.
    pub fn func(&self) -> Func {
        let op = (self.op)();
        if !self.api.is_empty() {
            if let Some(f) = Func::api(self.api) {
                return f;
            }
        }
        Func::Op(OpOverload::of(op))
    }

    /// The call as Python sees it.
    fn boxed(&self, args: &impl ArgTuple) -> (Vec<Value>, Kwargs) {
        as_python_call((self.op)().schema, args)
    }
}

/// A typed call as Python makes it: positional arguments, and keyword-only ones
/// by name (`args` are a prefix of the schema's arguments, in its order).
fn as_python_call(schema: &crate::tables::OpSchema, args: &impl ArgTuple) -> (Vec<Value>, Kwargs) {
    let mut values = Vec::new();
    args.to_values(&mut values);
    let mut positional = Vec::with_capacity(values.len());
    let mut keywords = Vec::new();
    for (v, a) in values.into_iter().zip(schema.args) {
        if a.kwarg_only {
            keywords.push((a.name.to_string(), v));
        } else {
            positional.push(v);
        }
    }
    (positional, keywords)
}

/// The entry point of an operator defined with `#[op]`, as
/// `torch.ops.<ns>.<op>(...)`: tensor-like arguments or a function mode send the
/// call through the operator handle's protocol; otherwise it is dispatched typed
/// ([`crate::dispatch::typed::call`]).
#[inline]
pub fn call_op<S, A, R>(op: &'static crate::dispatch::Operator, args: A) -> Result<R>
where
    S: crate::value::CallWith<A, R> + Copy + 'static,
    A: ArgTuple,
    R: TypedRet,
{
    if ArgTuple::overloaded(&args) | function_modes_active() {
        return call_op_handle(op, &args);
    }
    crate::dispatch::typed::call::<S, A, R>(op, args)
}

#[cold]
#[inline(never)]
fn call_op_handle<A: ArgTuple, R: TypedRet>(
    op: &'static crate::dispatch::Operator,
    args: &A,
) -> Result<R> {
    let (positional, keywords) = as_python_call(op.schema, args);
    R::from_value(OpOverload::of(op).call(&positional, &keywords)?)
}

/// The function-level protocol of a generated typed function (`torch::add`,
/// `Tensor::add`, `ops::add_Tensor`): `None` when no argument is a tensor-like
/// and no function mode is active — the caller then runs its implementation
/// directly, having paid one test per tensor argument and one thread-local
/// read; otherwise the protocol's result (`run` is the implementation; `args`
/// are the function's arguments in schema order, written tensors as shared
/// references).
///
/// ```
/// use opforge::overrides::{protocol, Site};
/// use opforge::{OpId, Scalar, Tensor};
/// static SITE: Site = Site { api: "torch.add", op: || opforge::dispatch::dispatcher().op(OpId::add_Tensor) };
/// fn my_add(a: &Tensor, b: &Tensor) -> opforge::Result<Tensor> {
///     if let Some(r) = protocol(&SITE, (a, b), |(a, b)| opforge::at::add_Tensor(a, b, Scalar::Int(1))) {
///         return r;
///     }
///     opforge::at::add_Tensor(a, b, Scalar::Int(1))
/// }
/// let t = Tensor::from_vec(vec![1.0f32], &[1])?;
/// assert_eq!(my_add(&t, &t)?.to_vec::<f32>()?, vec![2.0]);
/// # Ok::<(), opforge::Error>(())
/// ```
#[inline(always)]
pub fn protocol<A, R, F>(site: &'static Site, args: A, run: F) -> Option<Result<R>>
where
    A: ArgTuple + Copy,
    R: TypedRet,
    F: Fn(A) -> Result<R> + Copy,
{
    if !(ArgTuple::overloaded(&args) | function_modes_active()) {
        return None;
    }
    Some(protocol_slow(site, args, run))
}

/// An operator handle's call (`ops::<op>`: every argument of the schema,
/// none a written tensor): the function-level protocol ([`protocol`]), else
/// `f` (the operator's `at::` function, as its signature's function pointer,
/// so that every operator of one signature shares the instance).
///
/// ```
/// use opforge::overrides::{guarded, Site};
/// use opforge::{sig, OpId, Scalar, Tensor};
/// static SITE: Site = Site { api: "", op: || opforge::dispatch::dispatcher().op(OpId::add_Tensor) };
/// let t = Tensor::from_vec(vec![1.0f32], &[1])?;
/// let r = guarded(&SITE, (&t, &t, Scalar::Int(1)), opforge::at::add_Tensor as sig::add_Tensor)?;
/// assert_eq!(r.to_vec::<f32>()?, vec![2.0]);
/// # Ok::<(), opforge::Error>(())
/// ```
#[inline(always)]
pub fn guarded<A, R, F>(site: &'static Site, args: A, f: F) -> Result<R>
where
    A: ArgTuple + Copy,
    R: TypedRet,
    F: crate::value::CallWith<A, R> + Copy,
{
    match protocol(site, args, move |a| f.call_with(a)) {
        Some(r) => r,
        None => f.call_with(args),
    }
}

#[cold]
#[inline(never)]
fn protocol_slow<A, R, F>(site: &'static Site, args: A, run: F) -> Result<R>
where
    A: ArgTuple + Copy,
    R: TypedRet,
    F: Fn(A) -> Result<R> + Copy,
{
    typed(
        &|| site.func(),
        &[&args],
        &|| site.boxed(&args),
        &|| run(args),
        &|| match protocol(site, args, run) {
            Some(r) => r,
            None => run(args),
        },
    )
}

/// A typed call's slow path (generated code calls it when an argument is a
/// tensor-like or a mode is active). `run` calls the implementation, `redo` the
/// function again through the protocol, `boxed` builds the Python view of the call.
#[cold]
#[inline(never)]
pub fn typed<R: TypedRet>(
    func: &dyn Fn() -> Func,
    relevant: &[&dyn Relevant],
    boxed: &dyn Fn() -> (Vec<Value>, Kwargs),
    run: &dyn Fn() -> Result<R>,
    redo: &dyn Fn() -> Result<R>,
) -> Result<R> {
    typed_with(func, false, relevant, boxed, run, redo)
}

/// [`typed`] for a `Tensor` member (property, indexing).
#[cold]
#[inline(never)]
pub(crate) fn typed_member<R: TypedRet>(
    member: &'static Member,
    relevant: &[&dyn Relevant],
    boxed: &dyn Fn() -> (Vec<Value>, Kwargs),
    run: &dyn Fn() -> Result<R>,
    redo: &dyn Fn() -> Result<R>,
) -> Result<R> {
    let func = || Func::Member(member);
    typed_with(&func, member.nowrap, relevant, boxed, run, redo)
}

#[inline(always)]
fn typed_with<R: TypedRet>(
    func: &dyn Fn() -> Func,
    nowrap: bool,
    relevant: &[&dyn Relevant],
    boxed: &dyn Fn() -> (Vec<Value>, Kwargs),
    run: &dyn Fn() -> Result<R>,
    redo: &dyn Fn() -> Result<R>,
) -> Result<R> {
    let flags = state::flags();
    let found = if flags.subclasses() {
        scan(relevant)
    } else {
        Candidates::Nobody
    };
    let modes = flags.modes();
    let owned: Vec<Class>;
    let (types, like): (&[Class], _) = match found {
        Candidates::Nobody if !modes => {
            return match duck_error_in(func, relevant) {
                Some(e) => Err(e),
                None => run(),
            }
        }
        Candidates::Nobody => (&[], None),
        // One class with `Tensor.__torch_function__` and no mode: what that
        // handler does, without boxing or allocating.
        Candidates::One(ext, class)
            if !modes && matches!(class.0.function, class::FunctionSlot::Default) =>
        {
            let out = run()?;
            return if nowrap {
                Ok(out)
            } else {
                out.into_subclass_like(ext)
            };
        }
        // The one class is borrowed from its instance: no list to build.
        Candidates::One(ext, class) => (
            std::slice::from_ref(class),
            Some(ext).filter(|e| e.payload.is_none()),
        ),
        Candidates::Many => {
            owned = collect_relevant(relevant);
            (&owned, None)
        }
    };
    let again = || redo().map(R::into_value);
    let direct = || run().map(R::into_value);
    let call = FunctionCall {
        func: FuncOf::Lazy(func, std::cell::Cell::new(None)),
        types,
        args: Args::Lazy(boxed, OnceCell::new()),
        typed: Some(&again),
        run: Some(&direct),
        relevant,
        like,
        nowrap,
    };
    match run_protocol(&call, types)? {
        Some(v) => R::from_value(v),
        None => match duck_error_in(func, relevant) {
            Some(e) => Err(e),
            None => run(),
        },
    }
}

/// [`collect`] over typed arguments.
fn collect_relevant(relevant: &[&dyn Relevant]) -> Vec<Class> {
    let mut out: Vec<Class> = Vec::new();
    for r in relevant {
        r.each(&mut |t| append_if_overloaded(&mut out, t));
    }
    out
}

/// `append_overloaded_arg`: records `c` once, before the first recorded class it
/// derives from, else last.
pub(crate) fn append_overloaded(out: &mut Vec<Class>, c: &Class) {
    if out.contains(c) {
        return;
    }
    match out.iter().position(|r| c.is_subclass_of(r)) {
        Some(i) => out.insert(i, c.clone()),
        None => out.push(c.clone()),
    }
}

fn duck_error_in(func: &dyn Fn() -> Func, relevant: &[&dyn Relevant]) -> Option<Error> {
    let mut duck = None;
    for r in relevant {
        r.each(&mut |t| {
            if duck.is_none() {
                duck = duck_class(t);
            }
        });
    }
    duck.map(|c| duck_error(func(), c))
}

pub(crate) use crate::value::typed::one_value;

/// The runtime's own API bindings, built once.
pub(crate) fn builtin_table() -> &'static ApiTable {
    static TABLE: OnceLock<ApiTable> = OnceLock::new();
    TABLE.get_or_init(ApiTable::builtin)
}

/// Calls the function named `name` (`torch.add`, `torch.Tensor.add`,
/// `torch.Tensor.shape.__get__`, `aten.add.Tensor`, `aten.add`) with boxed
/// arguments, through the protocol: the boxed twin of the typed API, returning
/// whatever a handler returns (e.g. a float from a duck's `torch.mean`).
pub fn call(name: &str, args: &[Value], kwargs: &[(String, Value)]) -> Result<Value> {
    match Func::named(name) {
        Some(f) => f.call(args, kwargs),
        None => Err(Error::UnknownOp(name.to_string().into())),
    }
}

/// Rebuilds values with every tensor (also inside lists) replaced by `f(tensor)`;
/// what wrapper subclasses use to unwrap arguments and wrap results.
pub fn map_tensors(values: &[Value], f: &mut dyn FnMut(&Tensor) -> Tensor) -> Vec<Value> {
    values
        .iter()
        .map(|v| match v {
            Value::Tensor(t) => Value::Tensor(f(t)),
            Value::TensorList(ts) => Value::TensorList(ts.iter().map(&mut *f).collect()),
            Value::OptTensorList(ts) => {
                Value::OptTensorList(ts.iter().map(|t| t.as_ref().map(&mut *f)).collect())
            }
            Value::List(vs) => Value::List(map_tensors(vs, f).into()),
            other => other.clone(),
        })
        .collect()
}
