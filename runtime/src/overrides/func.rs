//! [`Func`]: which public callable a handler is asked to override (the `func`
//! argument of `__torch_function__`).

use super::handles::{OpOverload, OpPacket};
use super::members::{BoxedImpl, Member};
use super::{handle_boxed, Kwargs};
use crate::error::Result;
use crate::tables::ApiBinding;
use crate::value::Value;
use crate::OpId;
use opforge_schema::overrides::split_binding_name;
use std::fmt;
use std::hash::{Hash, Hasher};

/// A function made overridable with `#[overridable]` (PyTorch's
/// `wrap_torch_function`), identified by its module path and name.
pub struct ExternalFn {
    /// The module (`mylib.ops`), shown in names and messages.
    pub module: &'static str,
    /// The function name.
    pub name: &'static str,
    /// The Python-style parameters (`(x, y=None)`), for the testing stub.
    pub params: &'static [&'static str],
    /// The implementation on boxed arguments (what calling the function does).
    pub imp: BoxedImpl,
}

/// The callable a handler overrides. Compares by identity; [`resolve_name`]
/// gives its dotted name, [`Func::call`] calls it (through the protocol).
///
/// ```
/// use opforge::overrides::{resolve_name, Func};
/// let add = Func::named("torch.add").unwrap();
/// assert_eq!(resolve_name(add), "torch.add");
/// let method = Func::named("torch.Tensor.add").unwrap();
/// assert!(opforge::overrides::is_tensor_method_or_property(method));
/// assert_eq!(resolve_name(Func::named("torch.Tensor.shape.__get__").unwrap()), "torch.Tensor.shape.__get__");
/// ```
#[derive(Clone, Copy)]
pub enum Func {
    /// A generated Python-API function or `Tensor` method (`torch.add`, `Tensor.add`).
    Api(&'static ApiBinding<OpId>),
    /// A hand-written `Tensor` property or method.
    Member(&'static Member),
    /// An operator overload handle (`torch.ops.aten.add.Tensor`).
    Op(&'static super::OpOverload),
    /// An operator overload packet (`torch.ops.aten.add`).
    Packet(&'static super::OpPacket),
    /// A user function joined to the protocol with `#[overridable]`.
    External(&'static ExternalFn),
}

impl Func {
    fn addr(&self) -> (u8, usize) {
        match self {
            Func::Api(b) => (0, *b as *const _ as usize),
            Func::Member(m) => (1, *m as *const _ as usize),
            Func::Op(o) => (2, *o as *const _ as usize),
            Func::Packet(p) => (3, *p as *const _ as usize),
            Func::External(e) => (4, *e as *const _ as usize),
        }
    }

    /// The function with dotted name `name` (`torch.add`, `torch.Tensor.add`,
    /// `torch.Tensor.shape.__get__`, `torch.Tensor.__getitem__`, `aten.add.Tensor`,
    /// `aten.add`), if it exists.
    pub fn named(name: &str) -> Option<Func> {
        if let Some(rest) = name.strip_prefix("torch.Tensor.") {
            if let Some(prop) = rest.strip_suffix(".__get__") {
                return super::members::MEMBERS
                    .iter()
                    .find(|m| m.property && m.name == prop)
                    .map(Func::Member);
            }
            if let Some(m) = super::members::MEMBERS
                .iter()
                .find(|m| !m.property && m.name == rest)
            {
                return Some(Func::Member(m));
            }
            return binding(&format!("Tensor.{rest}")).map(Func::Api);
        }
        if name.starts_with("torch.") {
            return binding(name).map(Func::Api);
        }
        let (ns, rest) = name.split_once('.')?;
        match rest.split_once('.') {
            Some((base, overload)) => super::OpOverload::get(ns, base, overload)
                .ok()
                .map(Func::Op),
            None => super::OpPacket::get(ns, rest).ok().map(Func::Packet),
        }
    }

    /// The generated binding named `torch.add` / `Tensor.add`.
    pub(crate) fn api(name: &str) -> Option<Func> {
        binding(name).map(Func::Api)
    }

    /// The binding named `name`, or else the handle of operator `id` (generated
    /// functions use this to name themselves).
    #[doc(hidden)]
    pub fn api_or_op(name: &str, id: OpId) -> Func {
        Func::api(name).unwrap_or_else(|| Func::Op(super::OpOverload::builtin(id)))
    }

    /// `func(*args, **kwargs)`: calls the function through the protocol (modes
    /// and tensor-like arguments are consulted again; inside a mode's handler the
    /// mode itself is off). Multiple results come back as a [`Value::List`].
    pub fn call(self, args: &[Value], kwargs: &[(String, Value)]) -> Result<Value> {
        handle_boxed(self, args, kwargs)
    }

    /// Calls the function's implementation directly, skipping the protocol (what
    /// the callable does once no handler takes the call).
    pub fn call_unchecked(self, args: &[Value], kwargs: &[(String, Value)]) -> Result<Value> {
        match self {
            Func::Api(b) => {
                let kwargs: Kwargs = kwargs.to_vec();
                crate::argparse::call_dispatch_unchecked(
                    super::builtin_table(),
                    b.name,
                    args.to_vec(),
                    kwargs,
                )
                .map(super::one_value)
            }
            Func::Member(m) => (m.imp)(args, kwargs),
            Func::Op(o) => o.call_unchecked(args, kwargs),
            Func::Packet(p) => p.call_unchecked(args, kwargs),
            Func::External(e) => (e.imp)(args, kwargs),
        }
    }

    /// The name in `TypeError` messages: `torch.add`, `torch.Tensor.add`,
    /// `torch.nn.gelu` for `torch.nn.functional.gelu`, properties as
    /// `torch.Tensor.shape.__get__`.
    pub(crate) fn message_name(&self) -> String {
        match self {
            Func::Api(b) => match b.name.strip_prefix("torch.nn.functional.") {
                Some(rest) => format!("torch.nn.{rest}"),
                None => resolve_name(*self),
            },
            _ => resolve_name(*self),
        }
    }

    /// Is this a callable bound in C++ (its all-`NotImplemented` error is
    /// "Multiple dispatch failed …") rather than a Python-level one ("no
    /// implementation found …")?
    pub(crate) fn is_builtin(&self) -> bool {
        matches!(self, Func::Api(_) | Func::Member(_))
    }

    /// The Python parameter list of its testing stub (`(input, other, *, alpha=1, out=None)`).
    pub fn signature(&self) -> String {
        match self {
            Func::Api(b) => stub_signature(b.name),
            Func::Member(m) => format!("({})", m.params.join(", ")),
            Func::External(e) => format!("({})", e.params.join(", ")),
            Func::Op(o) => o.signature(),
            Func::Packet(_) => "(*args, **kwargs)".into(),
        }
    }
}

fn binding(name: &str) -> Option<&'static ApiBinding<OpId>> {
    crate::BINDINGS
        .binary_search_by(|b| b.name.cmp(name))
        .ok()
        .map(|i| &crate::BINDINGS[i])
}

impl PartialEq for Func {
    fn eq(&self, other: &Func) -> bool {
        self.addr() == other.addr()
    }
}

impl Eq for Func {}

impl Hash for Func {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.addr().hash(state);
    }
}

impl fmt::Debug for Func {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&resolve_name(*self))
    }
}

impl fmt::Display for Func {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&resolve_name(*self))
    }
}

/// `torch.overrides.resolve_name`: the dotted name of a function (`torch.add`,
/// `torch.Tensor.add`, `torch.Tensor.grad.__get__`, `torch.nn.functional.gelu`,
/// `aten.add.Tensor` for an overload handle, `aten.add` for a packet).
pub fn resolve_name(func: Func) -> String {
    match func {
        Func::Api(b) => match b.name.strip_prefix("Tensor.") {
            Some(rest) => format!("torch.Tensor.{rest}"),
            None => b.name.to_string(),
        },
        Func::Member(m) if m.property => format!("torch.Tensor.{}.__get__", m.name),
        Func::Member(m) => format!("torch.Tensor.{}", m.name),
        Func::Op(o) => o.to_string(),
        Func::Packet(p) => p.to_string(),
        Func::External(e) => format!("{}.{}", e.module, e.name),
    }
}

/// `torch.overrides.is_tensor_method_or_property`: a `Tensor` method or property
/// getter (`Tensor.add`, `Tensor.shape.__get__`), not a function (`torch.add`).
pub fn is_tensor_method_or_property(func: Func) -> bool {
    match func {
        Func::Api(b) => b.name.starts_with("Tensor."),
        Func::Member(_) => true,
        _ => false,
    }
}

/// The signature of a generated binding's testing stub (`(*args, **kwargs)` for
/// a binding that is not overridable, e.g. `torch.abs_`): the parameters of the
/// stub derived into [`crate::OVERRIDABLE`], which accepts every call the binding
/// accepts (the rule is [`opforge_schema::overrides::stub`]).
pub(crate) fn stub_signature(binding: &str) -> String {
    let (namespace, name) = split_binding_name(binding);
    match crate::OVERRIDABLE
        .iter()
        .find(|o| o.namespace == namespace && o.name == name)
    {
        Some(o) => opforge_schema::overrides::stub_signature(o.stub),
        None => "(*args, **kwargs)".into(),
    }
}

impl OpOverload {
    /// Calls the overload (`torch.ops.aten.add.Tensor(*args, **kwargs)`): the
    /// function-level protocol, then binding against its one schema and dispatch.
    pub fn call(&'static self, args: &[Value], kwargs: &[(String, Value)]) -> Result<Value> {
        Func::Op(self).call(args, kwargs)
    }
}

impl OpPacket {
    /// Calls the packet: the protocol, then the first overload whose schema
    /// accepts the call.
    pub fn call(&'static self, args: &[Value], kwargs: &[(String, Value)]) -> Result<Value> {
        Func::Packet(self).call(args, kwargs)
    }
}
