//! API-level boxed calls: PyTorch's `PythonArgParser` — the parser behind
//! `torch.add(...)`, `Tensor.add(...)`, `torch.nn.functional.gelu(...)` — and the
//! mapping of a parsed call onto its schema overload (PyTorch's
//! `torch/csrc/utils/python_arg_parser.cpp` and the generated bindings).
//!
//! 1. [`FunctionSignature::parse`] reads one signature string (§2);
//! 2. [`PythonArgParser::parse`] matches a call against a binding's signatures in
//!    parser order (deprecated last), with every error message of §7 worded as
//!    PyTorch words it;
//! 3. [`bind_parsed`] maps the parsed parameters onto the schema the signature
//!    dispatches to (`functional`, or `out` when `out=` was given; deprecated
//!    signatures through their `aten:` call), renames `input` → `self`, folds
//!    `out`, keeps TensorOptions the schema has and drops `requires_grad`, then
//!    coerces to the schema types with defaults ([`crate::bind::coerce`]). Python
//!    numbers given for `Tensor` parameters stay numbers (normalization.md §3).
//!
//! Values are Python-level [`Value`]s: `List` is a Python list or tuple.

mod fast;
mod invalid;
mod parse;
mod schema_bind;
mod signature;
mod table;
mod target;

pub use invalid::format_invalid_args;
pub use schema_bind::bind_parsed;
pub use signature::{FunctionParameter, FunctionSignature, ParamDefault, ParamKind};
use table::{shape_key, Shape};
pub use table::{ApiBinding, ApiTable, NameHasher, SigTarget};

use crate::error::Error;
use crate::tables::OpSchema;
use crate::value::Value;
use fast::{BindPlan, MAX_PARAMS};
use parse::{FastMatch, ABSENT};

/// The result of a successful parse: which signature matched and its values.
#[derive(Clone, Debug)]
pub struct ParsedArgs {
    /// Index of the matched signature in the binding's generated order.
    pub index: usize,
    /// Per parameter of that signature: the converted value, `None` when absent
    /// and without a non-`None` parser default.
    pub values: Vec<Value>,
    /// Per parameter: whether the call gave a (non-`None`-for-optional) value.
    pub given: Vec<bool>,
}

/// PyTorch's `PythonArgParser` over one binding's signature strings.
#[derive(Clone, Debug)]
pub struct PythonArgParser {
    /// The function name errors use (the first signature's name).
    pub name: String,
    /// Signatures in parser order (generated order, deprecated moved last).
    pub signatures: Vec<FunctionSignature>,
    /// For each entry of `signatures`, its index in the generated order.
    pub order: Vec<usize>,
}

impl PythonArgParser {
    /// Builds a parser from signature strings in generated order.
    ///
    /// ```
    /// use opforge::argparse::PythonArgParser;
    /// use opforge::{Tensor, Value};
    /// let p = PythonArgParser::new(&["add(Tensor input, Tensor other, *, Scalar alpha=1, Tensor out=None)"]).unwrap();
    /// let t = Value::Tensor(Tensor::from_vec(vec![1.0f32], &[1]).unwrap());
    /// let err = p.parse(&[t, Value::Str("a".into())], &[]).unwrap_err();
    /// assert_eq!(err.to_string(), "add(): argument 'other' (position 2) must be Tensor, not str");
    /// ```
    pub fn new<S: AsRef<str>>(texts: &[S]) -> Result<PythonArgParser, String> {
        let sigs = texts
            .iter()
            .map(|t| FunctionSignature::parse(t.as_ref()))
            .collect::<Result<Vec<_>, _>>()?;
        let name = sigs.first().map(|s| s.name.clone()).unwrap_or_default();
        let order: Vec<usize> = (0..sigs.len())
            .filter(|&i| !sigs[i].deprecated)
            .chain((0..sigs.len()).filter(|&i| sigs[i].deprecated))
            .collect();
        let mut slots: Vec<Option<FunctionSignature>> = sigs.into_iter().map(Some).collect();
        let signatures = order.iter().map(|&i| slots[i].take().unwrap()).collect();
        Ok(PythonArgParser {
            name,
            signatures,
            order,
        })
    }

    /// The signature at generated-order index `index`.
    pub fn signature(&self, index: usize) -> &FunctionSignature {
        let pos = self.order.iter().position(|&i| i == index).unwrap_or(0);
        &self.signatures[pos]
    }

    /// Matches a call (positionals without the receiver) per §3–§5; on failure the
    /// error of §7 PyTorch raises.
    pub fn parse(&self, args: &[Value], kwargs: &[(String, Value)]) -> Result<ParsedArgs, Error> {
        crate::value::check_depth(&self.name, args, kwargs)?;
        let (pos, slots) = self.match_slots(args, kwargs)?;
        self.finish(pos, slots)
    }

    /// The matched signature (position in match order) and its slots, before
    /// conversion.
    fn match_slots(
        &self,
        args: &[Value],
        kwargs: &[(String, Value)],
    ) -> Result<(usize, parse::Slots), Error> {
        if self.signatures.len() == 1 {
            let slots = parse::match_signature(&self.signatures[0], args, kwargs, true)?
                .ok_or_else(|| Error::Type("invalid arguments".into()))?;
            return Ok((0, slots));
        }
        for (pos, sig) in self.signatures.iter().enumerate() {
            if let Some(slots) = parse::match_signature(sig, args, kwargs, false)? {
                return Ok((pos, slots));
            }
        }
        Err(self.error(args, kwargs))
    }

    /// Converts matched slots (`parse::unpack`).
    fn finish(&self, pos: usize, slots: parse::Slots) -> Result<ParsedArgs, Error> {
        let sig = &self.signatures[pos];
        let given = slots.iter().map(Option::is_some).collect();
        let values = sig
            .params
            .iter()
            .zip(slots)
            .map(|(p, s)| parse::unpack(sig, p, s))
            .collect::<Result<_, _>>()?;
        Ok(ParsedArgs {
            index: self.order[pos],
            values,
            given,
        })
    }

    /// `parse`, also giving the tensor-likes whose classes' handlers the call
    /// goes to, in argument order, as PyTorch's parser collects them for the
    /// matched signature: tensor subclasses and duck tensor-likes in `Tensor`,
    /// `Tensor[]` and int-list positions; only duck tensor-likes elsewhere (a
    /// subclass there is converted like a tensor, e.g. `item()` for a Scalar).
    pub(crate) fn parse_overloaded(
        &self,
        receiver: Option<&Value>,
        args: &[Value],
        kwargs: &[(String, Value)],
    ) -> Result<(ParsedArgs, Vec<crate::tensor::Tensor>), Error> {
        let (pos, slots) = self.match_slots(args, kwargs)?;
        let mut classes = Vec::new();
        if crate::flags::subclass_handlers_enabled() {
            let mut add = |v: &Value, subclasses: bool| {
                v.for_each_tensor(&mut |t| {
                    if let Some(c) = t.tensor_class().filter(|c| c.has_torch_function()) {
                        if subclasses || !c.is_tensor_subclass() {
                            classes.push(t.clone());
                        }
                    }
                })
            };
            if let Some(r) = receiver {
                add(r, true);
            }
            for (p, v) in self.signatures[pos].params.iter().zip(&slots) {
                if let Some(v) = v {
                    add(v, p.kind.collects_subclasses());
                }
            }
        }
        Ok((self.finish(pos, slots)?, classes))
    }

    fn error(&self, args: &[Value], kwargs: &[(String, Value)]) -> Error {
        let n = args.len() + kwargs.len();
        let plausible: Vec<&FunctionSignature> = self
            .signatures
            .iter()
            .filter(|s| !s.hidden && s.min_args <= n && n <= s.max_args)
            .collect();
        if let [only] = plausible.as_slice() {
            if let Err(e) = parse::match_signature(only, args, kwargs, true) {
                return e;
            }
        }
        let options: Vec<String> = self
            .signatures
            .iter()
            .filter(|s| !s.hidden)
            .map(FunctionSignature::display)
            .collect();
        Error::Type(format_invalid_args(&self.name, args, kwargs, &options).into())
    }
}

/// The values of one call, bound to a schema: the overload name (`add.Tensor`),
/// and one value per schema argument.
#[derive(Clone, Debug)]
pub struct Bound<'s> {
    /// The overload (`name.overload`, or `name`).
    pub overload: String,
    /// Its id, for the runtime's own tables.
    pub id: Option<crate::OpId>,
    /// Its schema.
    pub schema: &'s OpSchema,
    /// One value per schema argument, coerced, defaults filled.
    pub values: Vec<Value>,
}

/// Parses an API call and binds it to its schema: `api` names the binding;
/// for methods `args[0]` is the receiver. `schema_of` looks an overload up by
/// `name.overload`.
pub fn parse_and_bind<'s>(
    table: &ApiTable,
    schema_of: &dyn Fn(&str) -> Option<&'s OpSchema>,
    api: &str,
    args: Vec<Value>,
    kwargs: Vec<(String, Value)>,
) -> Result<Bound<'s>, Error> {
    bind_call(table, schema_of, api, args, kwargs, true)
}

/// [`parse_and_bind`] on its slow path only (PyTorch's algorithm, step by step),
/// never the fast one: for tests and fuzzing, which check that both paths give
/// the same binding or the same error.
#[doc(hidden)]
pub fn parse_and_bind_slow<'s>(
    table: &ApiTable,
    schema_of: &dyn Fn(&str) -> Option<&'s OpSchema>,
    api: &str,
    args: Vec<Value>,
    kwargs: Vec<(String, Value)>,
) -> Result<Bound<'s>, Error> {
    bind_call(table, schema_of, api, args, kwargs, false)
}

/// [`parse_and_bind`], with the fast path or without it.
fn bind_call<'s>(
    table: &ApiTable,
    schema_of: &dyn Fn(&str) -> Option<&'s OpSchema>,
    api: &str,
    mut args: Vec<Value>,
    mut kwargs: Vec<(String, Value)>,
    fast: bool,
) -> Result<Bound<'s>, Error> {
    let binding = table
        .get(api)
        .ok_or_else(|| Error::UnknownOp(api.to_string().into()))?;
    pythonize_all(&mut args, &mut kwargs);
    if fast {
        if let Some(bound) = fast_bind(binding, schema_of, &mut args, &mut kwargs) {
            return Ok(bound);
        }
    }
    slow_parse_and_bind(binding, schema_of, api, args, kwargs)
}

/// [`call_dispatch_unchecked`] on its slow path only (no shape cache, no fast
/// binding): for tests and fuzzing, which compare the two.
#[doc(hidden)]
pub fn call_dispatch_slow(
    table: &ApiTable,
    api: &str,
    args: Vec<Value>,
    kwargs: Vec<(String, Value)>,
) -> Result<Vec<Value>, Error> {
    let schema_of = |n: &str| crate::OpId::from_name(n).map(|id| id.schema());
    let bound = parse_and_bind_slow(table, &schema_of, api, args, kwargs)?;
    dispatch_bound(&bound)
}

/// Calls the operator a call was bound to.
fn dispatch_bound(bound: &Bound<'_>) -> Result<Vec<Value>, Error> {
    let d = crate::dispatch::dispatcher();
    let op = match bound.id {
        Some(id) => d.op(id),
        None => d
            .find(bound.schema.name)
            .ok_or_else(|| Error::UnknownOp(bound.overload.clone().into()))?,
    };
    op.call_boxed(&bound.values)
}

/// [`pythonize`](parse::pythonize) in place (no allocation unless a typed list
/// is given).
fn pythonize_all<K>(args: &mut [Value], kwargs: &mut [(K, Value)]) {
    let typed = |v: &Value| {
        matches!(
            v,
            Value::IntList(_)
                | Value::FloatList(_)
                | Value::BoolList(_)
                | Value::ScalarList(_)
                | Value::TensorList(_)
                | Value::OptTensorList(_)
        )
    };
    for v in args.iter_mut().chain(kwargs.iter_mut().map(|(_, v)| v)) {
        if typed(v) {
            *v = parse::pythonize(std::mem::replace(v, Value::None));
        }
    }
}

/// The fast path's parse: the matched signature (parser order) and whether
/// `out=` was given; `None` leaves the call to the slow path (errors included).
/// `determined` is cleared when the outcome depended on more than the call's
/// shape ([`shape_key`] and keyword names).
fn fast_parse<K: AsRef<str>>(
    binding: &ApiBinding,
    args: &[Value],
    kwargs: &[(K, Value)],
    src: &mut [u16; MAX_PARAMS],
    determined: &mut bool,
) -> Option<(usize, bool)> {
    let rest = if binding.method { args.get(1..)? } else { args };
    let sigs = &binding.parser.signatures;
    if binding.method
        && sigs.len() == 1
        && sigs[0].params.is_empty()
        && !(kwargs.is_empty() && rest.is_empty())
    {
        return None;
    }
    let mut pos = 0;
    loop {
        let sig = sigs.get(pos)?;
        let f = &binding.fast[pos];
        match parse::fast_match(sig, &f.accepted, &f.rejected, rest, kwargs, src, determined) {
            FastMatch::Yes => break,
            FastMatch::No => pos += 1,
            FastMatch::Slow => return None,
        }
    }
    let has_out = binding.fast[pos].out_pos.is_some_and(|i| src[i] != ABSENT);
    Some((pos, has_out))
}

/// The receiver (for methods) and the other positionals.
fn split_receiver(method: bool, args: &mut [Value]) -> (Option<&mut Value>, &mut [Value]) {
    if !method || args.is_empty() {
        return (None, args);
    }
    let (r, rest) = args.split_at_mut(1);
    (Some(&mut r[0]), rest)
}

/// [`parse_and_bind`]'s fast path (module `fast`).
fn fast_bind<'s>(
    binding: &ApiBinding,
    schema_of: &dyn Fn(&str) -> Option<&'s OpSchema>,
    args: &mut [Value],
    kwargs: &mut [(String, Value)],
) -> Option<Bound<'s>> {
    let mut src = [ABSENT; MAX_PARAMS];
    let (pos, has_out) = fast_parse(binding, args, kwargs, &mut src, &mut true)?;
    let sig = &binding.parser.signatures[pos];
    let index = binding.parser.order[pos];
    let target = &binding.targets[index];
    let overload = if has_out {
        target.out.as_deref()
    } else {
        target.functional.as_deref()
    }?;
    let built;
    let (id, schema, plan): (Option<crate::OpId>, &'s OpSchema, &BindPlan) =
        match &binding.fast[pos].plans[usize::from(has_out)] {
            Some((id, plan)) => (Some(*id), id.schema(), plan),
            None => {
                let call = if has_out {
                    &target.deprecated_out_call
                } else {
                    &target.deprecated_call
                };
                if call.is_some() {
                    return None;
                }
                let id = if has_out { target.ids.1 } else { target.ids.0 };
                let schema = match id {
                    Some(id) => id.schema(),
                    None => schema_of(overload)?,
                };
                built = BindPlan::new(sig, schema, binding.method, has_out)?;
                (id, schema, &built)
            }
        };
    let mut values = vec![Value::None; schema.args.len()];
    let (receiver, rest) = split_receiver(binding.method, args);
    fast::fill(plan, sig, schema, &src, receiver, rest, kwargs, &mut values).then(|| Bound {
        overload: overload.to_string(),
        id,
        schema,
        values,
    })
}

fn slow_parse_and_bind<'s>(
    binding: &ApiBinding,
    schema_of: &dyn Fn(&str) -> Option<&'s OpSchema>,
    api: &str,
    args: Vec<Value>,
    kwargs: Vec<(String, Value)>,
) -> Result<Bound<'s>, Error> {
    let (receiver, args, kwargs) = receiver_and_rest(binding, api, args, kwargs)?;
    let parsed = binding.parser.parse(&args, &kwargs)?;
    bind_parsed(binding, &parsed, receiver, schema_of)
}

/// The call as the parser sees it (lists in Python form), with a method's
/// receiver taken off the positionals.
#[allow(clippy::type_complexity)]
pub(crate) fn receiver_and_rest(
    binding: &ApiBinding,
    api: &str,
    args: Vec<Value>,
    kwargs: Vec<(String, Value)>,
) -> Result<(Option<Value>, Vec<Value>, Vec<(String, Value)>), Error> {
    let mut args: Vec<Value> = args.into_iter().map(parse::pythonize).collect();
    let kwargs: Vec<(String, Value)> = kwargs
        .into_iter()
        .map(|(k, v)| (k, parse::pythonize(v)))
        .collect();
    let receiver = if binding.method {
        if args.is_empty() {
            return Err(Error::Type(
                format!(
                    "descriptor '{}' of 'torch._C.TensorBase' object needs an argument",
                    api.trim_start_matches("Tensor.")
                )
                .into(),
            ));
        }
        Some(args.remove(0))
    } else {
        None
    };
    if binding.method
        && binding.parser.signatures.len() == 1
        && binding.parser.signatures[0].params.is_empty()
    {
        if !kwargs.is_empty() {
            return Err(Error::Type(
                format!("{api}() takes no keyword arguments").into(),
            ));
        }
        if !args.is_empty() {
            return Err(Error::Type(
                format!("{api}() takes no arguments ({} given)", args.len()).into(),
            ));
        }
    }
    Ok((receiver, args, kwargs))
}

/// `overrides::call_dispatch` without the function-level override protocol. A
/// factory's `requires_grad=True` (a binding parameter with no schema
/// argument) marks the result afterwards, as PyTorch's bindings do.
pub fn call_dispatch_unchecked<K: AsRef<str> + Into<String>>(
    table: &ApiTable,
    api: &str,
    args: Vec<Value>,
    kwargs: Vec<(K, Value)>,
) -> Result<Vec<Value>, Error> {
    let requires_grad = kwargs
        .iter()
        .any(|(k, v)| k.as_ref() == "requires_grad" && matches!(v, Value::Bool(true)));
    let out = dispatch_unchecked(table, api, args, kwargs)?;
    if requires_grad {
        for v in &out {
            if let Value::Tensor(t) = v {
                t.set_requires_grad(true)?;
            }
        }
    }
    Ok(out)
}

fn dispatch_unchecked<K: AsRef<str> + Into<String>>(
    table: &ApiTable,
    api: &str,
    mut args: Vec<Value>,
    mut kwargs: Vec<(K, Value)>,
) -> Result<Vec<Value>, Error> {
    let binding = table
        .get(api)
        .ok_or_else(|| Error::UnknownOp(api.to_string().into()))?;
    // A shape seen before: no matching, no kind checks, values moved into place.
    let key = shape_key(&args, &kwargs);
    if let Some(shape) = key.and_then(|key| binding.shapes.find(key, &kwargs)) {
        let nargs = args.len();
        return fast::with_values(shape.n, |values| {
            for (v, &(to, ty)) in args.into_iter().zip(&shape.to[..nargs]) {
                if to != ABSENT {
                    fast::put(&mut values[usize::from(to)], fast::routed(v, ty));
                }
            }
            for ((_, v), &(to, ty)) in kwargs.into_iter().zip(&shape.to[nargs..]) {
                if to != ABSENT {
                    fast::put(&mut values[usize::from(to)], fast::routed(v, ty));
                }
            }
            for (to, v) in shape.sets.iter() {
                values[usize::from(*to)] = v.clone();
            }
            crate::dispatch::dispatcher()
                .op(shape.id)
                .call_boxed(values)
        });
    }
    pythonize_all(&mut args, &mut kwargs);
    let mut src = [ABSENT; MAX_PARAMS];
    let mut determined = true;
    if let Some((pos, has_out)) = fast_parse(binding, &args, &kwargs, &mut src, &mut determined) {
        if let Some((id, plan)) = &binding.fast[pos].plans[usize::from(has_out)] {
            let sig = &binding.parser.signatures[pos];
            let schema = id.schema();
            if let (Some(key), true, false) = (key, determined, has_out) {
                let (receiver, rest) = split_receiver(binding.method, &mut args);
                if fast::movable(plan, &src, receiver.as_deref(), rest, &kwargs) {
                    let src = &src[..sig.params.len()];
                    if let Some((to, sets)) = fast::route(plan, src, binding.method, &args, &kwargs)
                    {
                        binding.shapes.insert(Shape {
                            key,
                            kw: kwargs.iter().map(|(k, _)| k.as_ref().into()).collect(),
                            id: *id,
                            n: schema.args.len(),
                            to,
                            sets,
                        });
                    }
                }
            }
            let (receiver, rest) = split_receiver(binding.method, &mut args);
            let done = fast::with_values(schema.args.len(), |values| {
                fast::fill(plan, sig, schema, &src, receiver, rest, &mut kwargs, values)
                    .then(|| crate::dispatch::dispatcher().op(*id).call_boxed(values))
            });
            if let Some(result) = done {
                return result;
            }
        }
    }
    let kwargs = kwargs.into_iter().map(|(k, v)| (k.into(), v)).collect();
    let schema_of = |n: &str| crate::OpId::from_name(n).map(|id| id.schema());
    let bound = slow_parse_and_bind(binding, &schema_of, api, args, kwargs)?;
    dispatch_bound(&bound)
}

/// A boxed API-level call: looks up the binding `api` (`torch.add`, `Tensor.add`
/// with `args[0]` the receiver, `torch.nn.functional.gelu`, …), parses, maps onto
/// the schema overload, binds and normalizes. Returns the overload name as the
/// conformance corpus spells it (`add.Tensor`, `abs`) and the normalized
/// positional and keyword arguments.
#[allow(clippy::type_complexity)]
pub fn call(
    registry: &crate::registry::Registry,
    api: &str,
    args: Vec<Value>,
    kwargs: Vec<(String, Value)>,
) -> Result<(String, Vec<Value>, Vec<(&'static str, Value)>), crate::Error> {
    let table = registry.api_table()?;
    let schema_of = |name: &str| {
        registry
            .find(name)
            .or_else(|| crate::OpId::from_name(name).map(|id| id.schema()))
    };
    let bound = parse_and_bind(&table, &schema_of, api, args, kwargs)?;
    let (a, k) = crate::normalize::normalize(bound.schema, &bound.values);
    Ok((bound.overload, a, k))
}

#[cfg(test)]
mod tests;

impl crate::registry::Registry {
    /// The Python-API parsers for this registry's bindings (built once, on first
    /// use); the runtime's own ([`crate::argparse::ApiTable::builtin`]) for a
    /// registry without bindings.
    pub fn api_table(&self) -> Result<std::sync::Arc<ApiTable>, Error> {
        let mut failed = None;
        let table = self.derived(|| {
            let table = if self.bindings().is_empty() {
                ApiTable::builtin()
            } else {
                ApiTable::from_bindings(self.bindings()).unwrap_or_else(|e| {
                    failed = Some(e);
                    ApiTable::builtin()
                })
            };
            std::sync::Arc::new(table)
        });
        if let Some(e) = failed {
            return Err(Error::Runtime(e.into()));
        }
        table.ok_or_else(|| Error::Runtime("the registry's derived data is not an ApiTable".into()))
    }
}
