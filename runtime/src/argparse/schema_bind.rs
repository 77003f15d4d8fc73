//! A parsed call mapped onto its schema overload ([`bind_parsed`]): which
//! schema argument each parameter fills ([`ParamTarget`]), `input` → `self`,
//! `out=` folded, TensorOptions kept or dropped, values coerced.

use super::parse;
use super::signature::{FunctionSignature, ParamDefault, ParamKind};
use super::target::{is_factory, is_wrapped_number, ParamTarget};
use super::{ApiBinding, Bound, ParsedArgs};
use crate::bind::{coerce, default_value};
use crate::error::Error;
use crate::tables::{OpSchema, Ty};
use crate::value::Value;
use opforge_schema::python::split_name_params;

/// Maps a parsed call onto its schema (module docs, step 3).
pub fn bind_parsed<'s>(
    binding: &ApiBinding,
    parsed: &ParsedArgs,
    receiver: Option<Value>,
    schema_of: &dyn Fn(&str) -> Option<&'s OpSchema>,
) -> Result<Bound<'s>, Error> {
    let sig = binding.parser.signature(parsed.index);
    let target = &binding.targets[parsed.index];
    let out_pos = sig.params.iter().position(|p| p.name == "out");
    let has_out = out_pos.is_some_and(|i| parsed.given[i]);
    let overload = if has_out {
        target.out.as_deref()
    } else {
        target.functional.as_deref()
    }
    .ok_or_else(|| {
        Error::UnknownOp(format!("{} (no schema for this signature)", sig.name).into())
    })?;
    let id = if has_out { target.ids.1 } else { target.ids.0 };
    let schema = match id {
        Some(id) => id.schema(),
        None => schema_of(overload).ok_or_else(|| Error::UnknownOp(overload.to_string().into()))?,
    };

    // out= checks of the binding.
    if let Some(i) = out_pos.filter(|_| has_out) {
        let p = &sig.params[i];
        if p.kind == ParamKind::TensorList && p.size > 0 {
            if let Value::List(items) = &parsed.values[i] {
                if items.len() != p.size {
                    return Err(Error::Type(
                        format!(
                            "expected tuple of {} elements but got {}",
                            p.size,
                            items.len()
                        )
                        .into(),
                    ));
                }
            }
        }
        if let (true, Some(d), Value::Tensor(out)) = (
            is_factory(sig),
            sig.params.iter().position(|p| p.name == "dtype"),
            &parsed.values[i],
        ) {
            if let Value::DType(dt) = parsed.values[d] {
                if parsed.given[d] && dt != out.dtype() {
                    return Err(Error::Runtime(
                        format!(
                            "dtype {} does not match dtype of out parameter ({})",
                            parse::c10_name(dt),
                            parse::c10_name(out.dtype())
                        )
                        .into(),
                    ));
                }
            }
        }
    }

    let mut slots: Vec<Option<Value>> = vec![None; schema.args.len()];
    let index_of = |name: &str| schema.args.iter().position(|a| a.name == name);
    if let Some(r) = receiver {
        if let Some(i) = index_of("self") {
            slots[i] = Some(r);
        }
    }
    let call = if has_out {
        target.deprecated_out_call.as_deref()
    } else {
        target.deprecated_call.as_deref()
    };
    if let Some(call) = call {
        // C++ argument order of the target: out arguments first for out= schemas.
        let order: Vec<usize> = (0..schema.args.len())
            .filter(|&i| schema.args[i].is_out)
            .chain((0..schema.args.len()).filter(|&i| !schema.args[i].is_out))
            .collect();
        // The call was checked when the binding was derived.
        let args = split_name_params(call).map_or_else(|_| Vec::new(), |(_, args)| args);
        let tokens = args.into_iter().map(str::trim).filter(|t| !t.is_empty());
        for (&slot, tok) in order.iter().zip(tokens) {
            let value = if let Ok(i) = tok.parse::<i64>() {
                Some(Value::Int(i))
            } else if let Ok(x) = tok.parse::<f64>() {
                Some(Value::Float(x))
            } else {
                let pname = if tok == "self" && !sig.params.iter().any(|p| p.name == "self") {
                    "input"
                } else {
                    tok
                };
                sig.params
                    .iter()
                    .position(|p| p.name == pname)
                    .and_then(|i| param_value(sig, parsed, i, &schema.args[slot].ty))
            };
            if let Some(v) = value {
                if schema.args[slot].is_out {
                    fold_out(schema, &mut slots, v);
                } else {
                    slots[slot] = Some(v);
                }
            }
        }
    } else {
        for (i, p) in sig.params.iter().enumerate() {
            match ParamTarget::of(sig, p, schema, binding.method) {
                ParamTarget::Skip => {}
                ParamTarget::Out => {
                    if has_out {
                        fold_out(schema, &mut slots, parsed.values[i].clone());
                    }
                }
                ParamTarget::Arg {
                    index,
                    factory_device: true,
                } if !parsed.given[i] => {
                    slots[index] = Some(Value::Device(crate::Device::Cpu));
                }
                ParamTarget::Arg { index, .. } => {
                    if let Some(v) = param_value(sig, parsed, i, &schema.args[index].ty) {
                        slots[index] = Some(v);
                    }
                }
            }
        }
    }

    let values = schema
        .args
        .iter()
        .zip(slots)
        .map(|(a, v)| match v {
            Some(v) if is_wrapped_number(&a.ty, &v) => Ok(v),
            // A duck tensor-like is left for its handler.
            Some(v) if parse::is_duck(&v) => Ok(v),
            Some(v) => coerce(&a.ty, v).map_err(|e| {
                Error::Type(
                    format!(
                        "{}(): argument '{}' must be {}: {e}",
                        sig.name, a.name, a.ty
                    )
                    .into(),
                )
            }),
            None => default_value(a)
                .or_else(|| matches!(a.ty, Ty::Optional(_)).then_some(Value::None))
                .ok_or_else(|| {
                    Error::Type(
                        format!("{}() is missing value for argument '{}'", sig.name, a.name).into(),
                    )
                }),
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Bound {
        overload: overload.to_string(),
        id,
        schema,
        values,
    })
}

/// A parameter's value for the schema: given values, and parser defaults that are
/// not `None`; an absent parameter whose parser default is `None` leaves the
/// schema default in place.
pub(super) fn param_value(
    sig: &FunctionSignature,
    parsed: &ParsedArgs,
    i: usize,
    _ty: &Ty,
) -> Option<Value> {
    if parsed.given[i] {
        return Some(parsed.values[i].clone());
    }
    match sig.params[i].default {
        ParamDefault::Required | ParamDefault::None => None,
        _ => Some(parsed.values[i].clone()),
    }
}

/// Puts an `out=` value into the schema's out arguments (one tensor, or a list
/// spread over several).
pub(super) fn fold_out(schema: &OpSchema, slots: &mut [Option<Value>], v: Value) {
    let outs: Vec<usize> = (0..schema.args.len())
        .filter(|&i| schema.args[i].is_out)
        .collect();
    match v {
        Value::List(items)
            if outs.len() > 1
                || !matches!(
                    schema
                        .args
                        .get(outs.first().copied().unwrap_or(0))
                        .map(|a| a.ty),
                    Some(Ty::List(..))
                ) && outs.len() == items.len() =>
        {
            for (&i, item) in outs.iter().zip(items) {
                slots[i] = Some(item);
            }
        }
        v => {
            if let Some(&i) = outs.first() {
                slots[i] = Some(v);
            }
        }
    }
}
