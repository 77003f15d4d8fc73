//! Boxed API-level calls through the function-level protocol:
//! [`call_dispatch`] (`torch.add(...)`, `Tensor.add(...)` with `Value`s).

use crate::argparse::{bind_parsed, call_dispatch_unchecked, receiver_and_rest, ApiTable};
use crate::error::Error;
use crate::tensor::Tensor;
use crate::value::Value;

/// A boxed API-level call on the runtime's own tables: parses `api` with `table`
/// (usually [`ApiTable::builtin`]), binds against the generated schemas and
/// dispatches through [`crate::dispatch::dispatcher`]. Normalization is not needed
/// for dispatch itself (handlers that see normalized arguments compute them).
/// Keyword names are `&str` or `String`.
///
/// ```
/// use opforge::argparse::ApiTable;
/// use opforge::overrides::call_dispatch;
/// use opforge::{Tensor, Value};
/// let table = ApiTable::builtin();
/// let a = Tensor::from_vec(vec![1.0f32], &[1]).unwrap();
/// let out = call_dispatch(&table, "torch.add", vec![Value::Tensor(a.clone()), Value::Tensor(a)], vec![("alpha", Value::Int(2))]).unwrap();
/// assert_eq!(out[0].as_tensor().unwrap().to_vec::<f32>().unwrap(), vec![3.0]);
/// ```
pub fn call_dispatch<K: AsRef<str> + Into<String>>(
    table: &ApiTable,
    api: &str,
    args: Vec<Value>,
    kwargs: Vec<(K, Value)>,
) -> Result<Vec<Value>, Error> {
    if super::function_modes_active()
        || super::values_overloaded(args.iter().chain(kwargs.iter().map(|(_, v)| v)))
    {
        return call_dispatch_protocol(table, api, args, kwargs);
    }
    call_dispatch_unchecked(table, api, args, kwargs)
}

/// [`call_dispatch`] with tensor-like arguments or an active function mode: the
/// call is parsed first (a call the parser rejects never reaches a handler, as in
/// PyTorch), then offered to the handlers as the binding's function
/// (`torch.add`, `Tensor.add`). Bindings the runtime's own table does not have
/// (other schema files) run without the protocol.
#[cold]
fn call_dispatch_protocol<K: AsRef<str> + Into<String>>(
    table: &ApiTable,
    api: &str,
    args: Vec<Value>,
    kwargs: Vec<(K, Value)>,
) -> Result<Vec<Value>, Error> {
    let kwargs: Vec<(String, Value)> = kwargs.into_iter().map(|(k, v)| (k.into(), v)).collect();
    let binding = table
        .get(api)
        .ok_or_else(|| Error::UnknownOp(api.to_string().into()))?;
    let schema_of = |n: &str| crate::OpId::from_name(n).map(|id| id.schema());
    let (receiver, rest, rest_kw) = receiver_and_rest(binding, api, args.clone(), kwargs.clone())?;
    let (parsed, tensor_likes) =
        binding
            .parser
            .parse_overloaded(receiver.as_ref(), &rest, &rest_kw)?;
    let mut classes = Vec::new();
    for c in tensor_likes.iter().filter_map(Tensor::class) {
        super::append_overloaded(&mut classes, c);
    }
    let none = bind_parsed(binding, &parsed, receiver, &schema_of)?
        .schema
        .returns
        .is_empty();
    match super::Func::named(&binding.name.replacen("Tensor.", "torch.Tensor.", 1)) {
        Some(func) => super::handle_boxed_with(func, classes, &args, &kwargs).map(|v| match v {
            // An operator without returns gives `None`.
            Value::None if none => Vec::new(),
            Value::List(vs) => vs.into_vec(),
            v => vec![v],
        }),
        None => call_dispatch_unchecked(table, api, args, kwargs),
    }
}
