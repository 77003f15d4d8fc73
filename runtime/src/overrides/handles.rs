//! Operator handles in PyTorch's shape: `torch.ops` namespaces, overload packets
//! (`torch.ops.aten.add`) and overloads (`torch.ops.aten.add.Tensor`). Handles
//! are interned: the same name always gives the same `&'static` handle, so they
//! compare by identity and can key tables.

use super::one_value;
use crate::dispatch::{dispatcher, DispatchKey, KeySet, Operator};
use crate::error::{Error, Result};
use crate::packet::Overload;
use crate::tables::OpSchema;
use crate::value::Value;
use opforge_schema::signature::split_call;
use std::collections::HashMap;
use std::fmt;
use std::sync::Mutex;

/// `torch.ops.<ns>.<name>.<overload>`: one operator overload.
///
/// ```
/// use opforge::overrides::ops;
/// use opforge::{Tensor, Value};
/// let add = ops("aten").packet("add").unwrap().overload("Tensor").unwrap();
/// assert_eq!(add.to_string(), "aten.add.Tensor");
/// assert_eq!(add.qualified_name(), "aten::add.Tensor");
/// let a = Tensor::from_vec(vec![1.0f32], &[1]).unwrap();
/// let out = add.call(&[Value::Tensor(a.clone()), Value::Tensor(a)], &[("alpha".into(), Value::Int(3))]).unwrap();
/// assert_eq!(out.as_tensor().unwrap().to_vec::<f32>().unwrap(), vec![4.0]);
/// ```
pub struct OpOverload {
    op: &'static Operator,
    overload: Overload,
    packet_name: String,
}

/// `torch.ops.<ns>.<name>`: the overloads of one name, tried in order when called.
pub struct OpPacket {
    ns: String,
    name: String,
    overloads: Vec<&'static OpOverload>,
    entries: Vec<Overload>,
}

/// `torch.ops.<ns>`: an operator namespace.
#[derive(Clone, Debug)]
pub struct OpNamespace {
    ns: String,
}

/// `torch.ops.<ns>` (namespaces are created on demand, as in PyTorch).
pub fn ops(ns: &str) -> OpNamespace {
    OpNamespace { ns: ns.to_string() }
}

impl OpNamespace {
    /// The namespace name.
    pub fn name(&self) -> &str {
        &self.ns
    }

    /// `torch.ops.<ns>.<name>`; unknown names give PyTorch's `AttributeError` text.
    pub fn packet(&self, name: &str) -> Result<&'static OpPacket> {
        OpPacket::get(&self.ns, name)
    }
}

fn interned<T: 'static>(
    table: &'static Mutex<HashMap<String, &'static T>>,
    key: String,
    make: impl FnOnce() -> Result<T>,
) -> Result<&'static T> {
    let mut m = table.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(h) = m.get(&key) {
        return Ok(h);
    }
    let h: &'static T = Box::leak(Box::new(make()?));
    m.insert(key, h);
    Ok(h)
}

static PACKETS: std::sync::LazyLock<Mutex<HashMap<String, &'static OpPacket>>> =
    std::sync::LazyLock::new(Default::default);

impl OpOverload {
    /// The handle of a dispatcher operator (made once per operator).
    #[inline]
    pub fn of(op: &'static Operator) -> &'static OpOverload {
        // The protocols' layer slot (`Python`) holds handles only; another
        // type there cannot happen, and would only cost a second handle.
        op.layer_data_with(DispatchKey::Python, || Self::make(op))
            .unwrap_or_else(|| Self::make(op))
    }

    #[cold]
    fn make(op: &'static Operator) -> &'static OpOverload {
        let s = op.schema;
        let text: &'static str =
            Box::leak(format!("{}::{}", s.namespace, s.schema).into_boxed_str());
        Box::leak(Box::new(OpOverload {
            op,
            overload: Overload {
                name: s.name,
                schema_text: text,
                op: Some(s),
                dispatcher: true,
            },
            packet_name: format!("{}::{}", s.namespace, s.base),
        }))
    }

    /// The handle attached to `op`, if one was made.
    pub(crate) fn attached_to(op: &Operator) -> Option<&'static OpOverload> {
        op.layer_data::<OpOverload>(DispatchKey::Python)
    }

    /// `torch.ops.<ns>.<base>.<overload>` (`default` for the unnamed overload).
    pub fn get(ns: &str, base: &str, overload: &str) -> Result<&'static OpOverload> {
        OpPacket::get(ns, base)?.overload(overload)
    }

    /// The handle of a built-in operator.
    #[inline]
    pub fn builtin(id: crate::OpId) -> &'static OpOverload {
        OpOverload::of(dispatcher().op(id))
    }

    /// The dispatcher operator.
    pub fn operator(&self) -> &'static Operator {
        self.op
    }

    /// The schema.
    pub fn schema(&self) -> &'static OpSchema {
        self.op.schema
    }

    /// `name()`: `aten::add.Tensor`.
    pub fn qualified_name(&self) -> String {
        format!("{}::{}", self.op.schema.namespace, self.op.schema.name)
    }

    /// The overload name, `default` for the unnamed one.
    pub fn overload_name(&self) -> &str {
        match self.op.schema.overload {
            "" => "default",
            o => o,
        }
    }

    /// The packet this overload belongs to.
    pub fn overloadpacket(&self) -> &'static OpPacket {
        let s = self.op.schema;
        OpPacket::get(s.namespace, s.base)
            .unwrap_or_else(|_| unreachable!("an operator's own packet exists"))
    }

    /// The tags of its schema entry.
    pub fn tags(&self) -> &'static [&'static str] {
        self.op.schema.tags
    }

    /// `is_view`: some argument has a non-writing alias annotation.
    pub fn is_view(&self) -> bool {
        let text = self.op.schema.schema;
        let args = text.split(" -> ").next().unwrap_or(text);
        let args = args.split_once('(').map_or(args, |(_, rest)| rest);
        args.match_indices("Tensor(").any(|(i, _)| {
            let rest = &args[i + 7..];
            rest.find(')').is_some_and(|j| !rest[..j].contains('!'))
        })
    }

    /// Has a kernel (or fallback) for `key`?
    pub fn has_kernel_for_dispatch_key(&self, key: DispatchKey) -> bool {
        self.op.dispatch_key(KeySet::of(key)) == Some(key)
    }

    /// The parameter list of its schema, the signature of its testing stub
    /// (`(Tensor self, Tensor other, *, Scalar alpha=1)`).
    pub(crate) fn signature(&self) -> String {
        let list = split_call(self.op.schema.schema).map_or("", |(_, list, _)| list);
        format!("({list})")
    }

    /// Binds and dispatches, skipping the function-level protocol.
    pub fn call_unchecked(&self, args: &[Value], kwargs: &[(String, Value)]) -> Result<Value> {
        self.call_all(args, kwargs).map(one_value)
    }

    /// [`OpOverload::call_unchecked`] with every result as it came (what
    /// an operator whose returns end with `...` returns: a tuple of any
    /// length).
    pub fn call_all(&self, args: &[Value], kwargs: &[(String, Value)]) -> Result<Vec<Value>> {
        let r = crate::packet::resolve(
            &self.packet_name,
            std::slice::from_ref(&self.overload),
            args,
            kwargs,
        )?;
        self.op.call_boxed(&r.bound)
    }

    /// Calls with schema-ordered values (one per argument) directly.
    pub fn call_values(&self, values: &[Value]) -> Result<Vec<Value>> {
        self.op.call_boxed(values)
    }

    /// `OpOverload.redispatch(keyset, *args)`: continues dispatch at the highest
    /// key of `keys` with schema-ordered values.
    pub fn redispatch(&self, keys: KeySet, values: &[Value]) -> Result<Vec<Value>> {
        self.op.call_with_keys(keys, values)
    }
}

impl fmt::Display for OpOverload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&crate::value::op_overload_name(self.op.schema))
    }
}

impl fmt::Debug for OpOverload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.op.schema;
        write!(
            f,
            "<OpOverload(op='{}.{}', overload='{}')>",
            s.namespace,
            s.base,
            self.overload_name()
        )
    }
}

impl OpPacket {
    /// `torch.ops.<ns>.<name>`.
    pub fn get(ns: &str, name: &str) -> Result<&'static OpPacket> {
        let key = format!("{ns}::{name}");
        if let Some(p) = PACKETS.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
            // A packet made before more overloads were defined at run time is
            // rebuilt below if it went stale.
            if p.overloads.len() == dispatcher().overloads(ns, name).len() {
                return Ok(p);
            }
            PACKETS
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(&key);
        }
        interned(&PACKETS, key, || {
            let ops = dispatcher().overloads(ns, name);
            if ops.is_empty() {
                return Err(dispatcher().no_such_packet(ns, name));
            }
            let overloads: Vec<&'static OpOverload> =
                ops.iter().map(|op| OpOverload::of(op)).collect();
            let entries = overloads.iter().map(|o| o.overload).collect();
            Ok(OpPacket {
                ns: ns.to_string(),
                name: name.to_string(),
                overloads,
                entries,
            })
        })
    }

    /// The overload names (`default` for the unnamed one), in call order.
    pub fn overloads(&self) -> Vec<&str> {
        self.overloads.iter().map(|o| o.overload_name()).collect()
    }

    /// `packet.<overload>` (`default` maps to the unnamed overload).
    pub fn overload(&self, name: &str) -> Result<&'static OpOverload> {
        self.overloads
            .iter()
            .copied()
            .find(|o| o.overload_name() == name)
            .ok_or_else(|| {
                Error::Runtime(
                    format!(
                        "The underlying op of '{}.{}' has no overload name '{name}'",
                        self.ns, self.name
                    )
                    .into(),
                )
            })
    }

    /// Resolves and dispatches, skipping the function-level protocol.
    pub fn call_unchecked(&self, args: &[Value], kwargs: &[(String, Value)]) -> Result<Value> {
        let qualified = format!("{}::{}", self.ns, self.name);
        let r = crate::packet::resolve(&qualified, &self.entries, args, kwargs)?;
        let op = self.overloads[r.index].op;
        op.call_boxed(&r.bound).map(one_value)
    }
}

impl fmt::Display for OpPacket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.ns, self.name)
    }
}

impl fmt::Debug for OpPacket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "<OpOverloadPacket(op='{}.{}')>", self.ns, self.name)
    }
}
