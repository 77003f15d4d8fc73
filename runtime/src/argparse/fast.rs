//! The fast path of an API-level call: one binding plan per (signature, schema)
//! pair, computed once (at [`super::ApiTable`] construction for the runtime's own
//! tables), and one pass that maps a matched call's values onto the schema
//! arguments through it.
//!
//! The plan is [`super::bind_parsed`]'s non-deprecated mapping with every by-name
//! lookup and every default resolved in advance. [`fill`] gives exactly the values
//! [`super::bind_parsed`] gives, or declines (`false`) whenever the slow path
//! would raise or would do something the plan does not cover; callers then take
//! the slow path, which produces PyTorch's error word for word.

use super::parse::{self, tag, ABSENT, KW};
use super::signature::{FunctionSignature, ParamDefault, ParamKind};
use super::target::{is_factory, is_wrapped_number, ParamTarget};
use crate::bind::{coerce, default_value};
use crate::tables::{OpSchema, Ty};
use crate::value::Value;

/// At most this many parameters per signature take the fast path.
pub(crate) const MAX_PARAMS: usize = 32;
/// At most this many schema arguments take the fast path (a bit mask).
const MAX_ARGS: usize = 64;

/// What an absent parameter puts in its schema slot.
#[derive(Clone, Debug)]
enum Absent {
    /// Nothing: the schema default (or an earlier value) stays.
    Keep,
    /// This value, coerced to the schema type like a given one; with the
    /// coerced value when the coercion succeeds.
    Set(Value, Option<Value>),
}

/// Where one signature parameter goes.
#[derive(Clone, Debug)]
enum ParamPlan {
    /// Nowhere (`requires_grad`, names the schema lacks); given values are still
    /// unpacked (their errors come first).
    Skip,
    /// `out`: folded into the schema's out arguments when given.
    Out,
    /// Schema argument `slot`.
    Slot { slot: u16, absent: Absent },
}

/// Per signature parameter, by the [`tag`] of a given value: which values move
/// into the schema slot unchanged (`same`) or bind for sure after conversion
/// (`ok`, a superset). For `Skip` parameters `ok` holds the values `unpack`
/// leaves alone; for `out`, nothing.
#[derive(Clone, Copy, Debug, Default)]
struct Moves {
    ok: u32,
    same: u32,
}

/// The binding plan of one signature onto one schema (with or without `out=`).
#[derive(Clone, Debug)]
pub(crate) struct BindPlan {
    /// The schema slot of the receiver (`self`).
    receiver: Option<u16>,
    /// How a receiver binds.
    receiver_moves: Moves,
    /// Per signature parameter.
    params: Vec<ParamPlan>,
    /// Per signature parameter: how given values bind.
    moves: Vec<Moves>,
    /// Per schema argument, its value when nothing fills it (`None`: missing, an
    /// error).
    fill: Vec<Option<Value>>,
    /// Bit i: schema argument i has no such value.
    required: u64,
    /// The schema argument types.
    types: Vec<Ty>,
    /// The schema's out arguments.
    outs: Vec<u16>,
    /// The first out argument is not a list.
    first_out_not_list: bool,
    /// `out=` checks: the out parameter's tuple size (0: none).
    out_size: usize,
    /// `out=` checks: the `dtype` parameter of a factory signature.
    factory_dtype: Option<usize>,
}

impl BindPlan {
    /// The plan of `sig` onto `schema`; `None` when too large for the fast path.
    pub(crate) fn new(
        sig: &FunctionSignature,
        schema: &OpSchema,
        method: bool,
        has_out: bool,
    ) -> Option<BindPlan> {
        if sig.params.len() > MAX_PARAMS || schema.args.len() > MAX_ARGS {
            return None;
        }
        let index_of = |name: &str| schema.args.iter().position(|a| a.name == name);
        let params = sig
            .params
            .iter()
            .map(|p| {
                let (t, factory_device) = match ParamTarget::of(sig, p, schema, method) {
                    ParamTarget::Skip => return ParamPlan::Skip,
                    ParamTarget::Out => return ParamPlan::Out,
                    ParamTarget::Arg {
                        index,
                        factory_device,
                    } => (index, factory_device),
                };
                let value = if factory_device {
                    Some(Value::Device(crate::Device::Cpu))
                } else {
                    match p.default {
                        ParamDefault::Required | ParamDefault::None => None,
                        // `unpack` of an absent value cannot raise.
                        _ => parse::unpack(sig, p, None).ok(),
                    }
                };
                let absent = match value {
                    Some(v) => {
                        let ty = &schema.args[t].ty;
                        let done = if is_wrapped_number(ty, &v) {
                            Some(v.clone())
                        } else {
                            coerce(ty, v.clone()).ok()
                        };
                        Absent::Set(v, done)
                    }
                    None => Absent::Keep,
                };
                ParamPlan::Slot {
                    slot: t as u16,
                    absent,
                }
            })
            .collect::<Vec<_>>();
        let moves = sig
            .params
            .iter()
            .zip(&params)
            .map(|(p, pp)| match pp {
                ParamPlan::Skip => Moves {
                    ok: unpack_same(p.kind),
                    same: 0,
                },
                ParamPlan::Out => Moves::default(),
                ParamPlan::Slot { slot, .. } => {
                    let (ok, same) = coerce_tags(&schema.args[*slot as usize].ty);
                    Moves {
                        ok: unpack_same(p.kind) & ok,
                        same: unpack_same(p.kind) & same,
                    }
                }
            })
            .collect();
        let receiver = index_of("self");
        let receiver_moves = receiver.map_or(Moves::default(), |r| {
            let (ok, same) = coerce_tags(&schema.args[r].ty);
            Moves { ok, same }
        });
        let fill: Vec<Option<Value>> = schema
            .args
            .iter()
            .map(|a| {
                default_value(a).or_else(|| matches!(a.ty, Ty::Optional(_)).then_some(Value::None))
            })
            .collect();
        let required = (0..fill.len())
            .filter(|&j| fill[j].is_none())
            .fold(0u64, |m, j| m | 1 << j);
        let outs: Vec<u16> = (0..schema.args.len())
            .filter(|&i| schema.args[i].is_out)
            .map(|i| i as u16)
            .collect();
        let first_out_not_list = !matches!(
            schema
                .args
                .get(outs.first().copied().unwrap_or(0) as usize)
                .map(|a| a.ty),
            Some(Ty::List(..))
        );
        let out_param = sig.params.iter().position(|p| p.name == "out");
        let out_size = out_param
            .map(|i| &sig.params[i])
            .filter(|p| p.kind == ParamKind::TensorList)
            .map_or(0, |p| p.size);
        let factory_dtype = if has_out && is_factory(sig) {
            sig.params.iter().position(|p| p.name == "dtype")
        } else {
            None
        };
        Some(BindPlan {
            receiver: receiver.map(|i| i as u16),
            receiver_moves,
            params,
            moves,
            fill,
            required,
            types: schema.args.iter().map(|a| a.ty).collect(),
            outs,
            first_out_not_list,
            out_size,
            factory_dtype,
        })
    }
}

/// Binds a call matched by [`parse::fast_match`] (sources `src`) to `schema`
/// through `plan`, writing one value per schema argument into `buf` (of the
/// schema's length). `false`: the slow path must decide (it raises); the call's
/// values are then untouched. When every value binds for sure (the common case:
/// tensors for tensors, numbers for numbers), values are moved out of `args` and
/// `kwargs` instead of cloned.
#[allow(clippy::too_many_arguments)]
pub(crate) fn fill<K>(
    plan: &BindPlan,
    sig: &FunctionSignature,
    schema: &OpSchema,
    src: &[u16],
    receiver: Option<&mut Value>,
    args: &mut [Value],
    kwargs: &mut [(K, Value)],
    buf: &mut [Value],
) -> bool {
    if movable(plan, src, receiver.as_deref(), args, kwargs) {
        fill_moving(plan, src, receiver, args, kwargs, buf);
        true
    } else {
        fill_cloning(
            plan,
            sig,
            schema,
            src,
            receiver.as_deref(),
            args,
            kwargs,
            buf,
        )
    }
}

/// Whether [`fill_moving`] applies: every given value binds for sure (its
/// [`Moves::ok`]), no `out=`, no keyword argument used twice, and every schema
/// argument left unfilled has a default.
#[inline]
pub(crate) fn movable<K>(
    plan: &BindPlan,
    src: &[u16],
    receiver: Option<&Value>,
    args: &[Value],
    kwargs: &[(K, Value)],
) -> bool {
    let mut filled: u64 = 0;
    // Bit j: kwargs[j] is used.
    let mut used: u64 = 0;
    if let (Some(r), Some(s)) = (receiver, plan.receiver) {
        if plan.receiver_moves.ok & tag(r) == 0 {
            return false;
        }
        filled |= 1 << s;
    }
    for ((pp, m), &s) in plan.params.iter().zip(&plan.moves).zip(src) {
        if s != ABSENT {
            let v = if s & KW != 0 {
                let j = u32::from(s & !KW);
                if j >= 64 || used & (1 << j) != 0 {
                    return false;
                }
                used |= 1 << j;
                &kwargs[j as usize].1
            } else {
                &args[s as usize]
            };
            if m.ok & tag(v) == 0 {
                return false;
            }
            if let ParamPlan::Slot { slot, .. } = pp {
                filled |= 1 << slot;
            }
        } else if let ParamPlan::Slot { slot, absent } = pp {
            match absent {
                Absent::Keep => {}
                Absent::Set(_, None) => return false,
                Absent::Set(_, Some(_)) => filled |= 1 << slot,
            }
        }
    }
    !filled & plan.required == 0
}

/// [`fill`] when [`movable`]: moves the given values into place.
#[inline]
pub(crate) fn fill_moving<K>(
    plan: &BindPlan,
    src: &[u16],
    receiver: Option<&mut Value>,
    args: &mut [Value],
    kwargs: &mut [(K, Value)],
    buf: &mut [Value],
) {
    let mut filled: u64 = 0;
    if let (Some(r), Some(s)) = (receiver, plan.receiver) {
        put(
            &mut buf[s as usize],
            moved(r, plan.receiver_moves, &plan.types[s as usize]),
        );
        filled |= 1 << s;
    }
    for ((pp, m), &s) in plan.params.iter().zip(&plan.moves).zip(src) {
        let ParamPlan::Slot { slot, absent } = pp else {
            continue;
        };
        let slot = *slot as usize;
        if s != ABSENT {
            let v = if s & KW != 0 {
                &mut kwargs[(s & !KW) as usize].1
            } else {
                &mut args[s as usize]
            };
            put(&mut buf[slot], moved(v, *m, &plan.types[slot]));
            filled |= 1 << slot;
        } else if let Absent::Set(_, Some(v)) = absent {
            buf[slot] = v.clone();
            filled |= 1 << slot;
        }
    }
    let all = match plan.fill.len() {
        64 => u64::MAX,
        n => (1u64 << n) - 1,
    };
    let mut rest = !filled & all;
    while rest != 0 {
        let j = rest.trailing_zeros() as usize;
        rest &= rest - 1;
        if let Some(v) = &plan.fill[j] {
            buf[j] = v.clone();
        }
    }
}

/// Where each value of a call goes, for a call shape [`fill_moving`] applies to
/// (module docs of `super`, `Shape`): per positional (receiver included) then per
/// keyword argument, its schema slot ([`ABSENT`]: dropped) and the type to
/// coerce it to when it does not bind unchanged; then the slots filled with
/// constants. `None` when some slot would be written twice (order would matter).
///
/// The routing is computed, never written by hand: `src` is the placement of
/// [`crate::place::place`] (through [`parse::fast_match`]), the one rule every
/// binder follows, composed with the plan's parameter → schema argument map. A
/// call of a cached shape replays it without placing anything again.
#[allow(clippy::type_complexity)]
pub(crate) fn route<K>(
    plan: &BindPlan,
    src: &[u16],
    method: bool,
    args: &[Value],
    kwargs: &[(K, Value)],
) -> Option<(Box<[(u16, Option<Ty>)]>, Box<[(u16, Value)]>)> {
    let mut to = vec![(ABSENT, None); args.len() + kwargs.len()];
    let mut sets = Vec::new();
    let mut filled: u64 = 0;
    let mut write = |slot: u16| {
        let bit = 1u64 << slot;
        let fresh = filled & bit == 0;
        filled |= bit;
        fresh
    };
    let offset = usize::from(method);
    let conv =
        |m: Moves, v: &Value, slot: u16| (m.same & tag(v) == 0).then(|| plan.types[slot as usize]);
    if let (true, Some(r), Some(s)) = (method, args.first(), plan.receiver) {
        if !write(s) {
            return None;
        }
        to[0] = (s, conv(plan.receiver_moves, r, s));
    }
    for ((pp, m), &s) in plan.params.iter().zip(&plan.moves).zip(src) {
        let ParamPlan::Slot { slot, absent } = pp else {
            continue;
        };
        if s != ABSENT {
            let (i, v) = if s & KW != 0 {
                let j = usize::from(s & !KW);
                (args.len() + j, &kwargs[j].1)
            } else {
                (offset + usize::from(s), &args[offset + usize::from(s)])
            };
            if !write(*slot) || to[i].0 != ABSENT {
                return None;
            }
            to[i] = (*slot, conv(*m, v, *slot));
        } else if let Absent::Set(_, Some(v)) = absent {
            if !write(*slot) {
                return None;
            }
            sets.push((*slot, v.clone()));
        }
    }
    for (j, v) in plan.fill.iter().enumerate() {
        if filled & (1 << j) == 0 {
            if let Some(v) = v {
                sets.push((j as u16, v.clone()));
            }
        }
    }
    Some((to.into(), sets.into()))
}

/// A value moved out of a call, bound through its [`route`] (`coerce`: the type
/// when it does not bind unchanged; it binds for sure).
#[inline]
pub(crate) fn routed(v: Value, coerce_to: Option<Ty>) -> Value {
    match coerce_to {
        None => v,
        Some(ty) => {
            let r = coerce(&ty, v);
            debug_assert!(r.is_ok(), "a movable value failed to bind");
            r.unwrap_or(Value::None)
        }
    }
}

/// Stores `v` in `dst` (usually a `None` placeholder, dropped without a call).
#[inline]
pub(crate) fn put(dst: &mut Value, v: Value) {
    let old = std::mem::replace(dst, v);
    if matches!(old, Value::None) {
        std::mem::forget(old);
    } else {
        drop(old);
    }
}

/// A given value moved out of the call, bound to `ty`.
#[inline]
fn moved(v: &mut Value, m: Moves, ty: &Ty) -> Value {
    let v = std::mem::replace(v, Value::None);
    if m.same & tag(&v) != 0 {
        v
    } else {
        // Binds for sure (`Moves::ok`), and `unpack` leaves it alone.
        let r = coerce(ty, v);
        debug_assert!(r.is_ok(), "a movable value failed to bind");
        r.unwrap_or(Value::None)
    }
}

/// The value a [`parse::fast_match`] source names.
#[inline]
fn source<'a, K>(s: u16, args: &'a [Value], kwargs: &'a [(K, Value)]) -> &'a Value {
    if s & KW != 0 {
        &kwargs[(s & !KW) as usize].1
    } else {
        &args[s as usize]
    }
}

/// [`fill`] when not [`movable`]: clones the given values, binding them as
/// [`super::bind_parsed`] does; `false` where it would raise.
#[allow(clippy::too_many_arguments)]
fn fill_cloning<K>(
    plan: &BindPlan,
    sig: &FunctionSignature,
    schema: &OpSchema,
    src: &[u16],
    receiver: Option<&Value>,
    args: &[Value],
    kwargs: &[(K, Value)],
    buf: &mut [Value],
) -> bool {
    // Bit i: schema argument i holds a value still to be coerced.
    let mut filled: u64 = 0;
    if let (Some(r), Some(s)) = (receiver, plan.receiver) {
        buf[s as usize] = r.clone();
        filled |= 1 << s;
    }
    for (i, pp) in plan.params.iter().enumerate() {
        let s = src[i];
        match pp {
            ParamPlan::Slot { slot, absent } => {
                let slot = *slot as usize;
                if s != ABSENT {
                    let v = source(s, args, kwargs).clone();
                    buf[slot] = match unpack_given(sig, i, v) {
                        Some(v) => v,
                        None => return false,
                    };
                    filled |= 1 << slot;
                } else if let Absent::Set(v, _) = absent {
                    buf[slot] = v.clone();
                    filled |= 1 << slot;
                }
            }
            ParamPlan::Skip => {
                if s != ABSENT && unpack_given(sig, i, source(s, args, kwargs).clone()).is_none() {
                    return false;
                }
            }
            ParamPlan::Out => {
                if s == ABSENT {
                    continue;
                }
                let Some(v) = unpack_given(sig, i, source(s, args, kwargs).clone()) else {
                    return false;
                };
                // The out= checks of `bind_parsed`: when they would raise, decline.
                if plan.out_size > 0 {
                    if let Value::List(items) = &v {
                        if items.len() != plan.out_size {
                            return false;
                        }
                    }
                }
                if let (Some(d), Value::Tensor(out)) = (plan.factory_dtype, &v) {
                    if src[d] != ABSENT {
                        if let Value::DType(dt) = source(src[d], args, kwargs) {
                            if *dt != out.dtype() {
                                return false;
                            }
                        }
                    }
                }
                // fold_out
                match v {
                    Value::List(items)
                        if plan.outs.len() > 1
                            || plan.first_out_not_list && plan.outs.len() == items.len() =>
                    {
                        for (&o, item) in plan.outs.iter().zip(items) {
                            buf[o as usize] = item;
                            filled |= 1 << o;
                        }
                    }
                    v => {
                        if let Some(&o) = plan.outs.first() {
                            buf[o as usize] = v;
                            filled |= 1 << o;
                        }
                    }
                }
            }
        }
    }
    for (j, a) in schema.args.iter().enumerate() {
        if filled & (1 << j) != 0 {
            let v = std::mem::replace(&mut buf[j], Value::None);
            buf[j] = if is_wrapped_number(&a.ty, &v) {
                v
            } else {
                match coerce(&a.ty, v) {
                    Ok(v) => v,
                    Err(_) => return false,
                }
            };
        } else {
            match &plan.fill[j] {
                Some(v) => buf[j] = v.clone(),
                None => return false,
            }
        }
    }
    true
}

const T_NONE: u32 = 1 << 0;
const T_BOOL: u32 = 1 << 1;
const T_INT: u32 = 1 << 2;
const T_FLOAT: u32 = 1 << 3;
const T_STR: u32 = 1 << 4;
const T_TENSOR: u32 = 1 << 5;
const T_DTYPE: u32 = 1 << 13;
const T_DEVICE: u32 = 1 << 14;
const T_LAYOUT: u32 = 1 << 15;
const T_MEMORY_FORMAT: u32 = 1 << 16;
const T_GENERATOR: u32 = 1 << 18;
const T_STORAGE: u32 = 1 << 19;
const T_QSCHEME: u32 = 1 << 21;
const T_NUMBER: u32 = T_BOOL | T_INT | T_FLOAT;

/// The values (by [`tag`]) the parser's type check accepts for `p` whatever
/// their contents (lists, 0-dim tensors for numbers, … are left to the check).
pub(crate) fn accepted(p: &super::FunctionParameter) -> u32 {
    use ParamKind as K;
    match p.kind {
        K::Tensor if p.allow_numbers_as_tensors => T_TENSOR | T_NUMBER,
        K::Tensor => T_TENSOR,
        K::Scalar | K::Complex | K::Double => T_NUMBER,
        K::Int | K::SymInt => T_INT,
        K::Bool => T_BOOL,
        K::PyObject => u32::MAX,
        K::ScalarType => T_DTYPE,
        K::Layout => T_LAYOUT,
        K::MemoryFormat => T_MEMORY_FORMAT,
        K::Device => T_INT | T_STR | T_DEVICE,
        K::String => T_STR,
        K::Generator => T_GENERATOR,
        K::Storage => T_STORAGE,
        K::QScheme => T_QSCHEME,
        _ => 0,
    }
}

/// Every [`tag`] bit.
pub(crate) const T_ALL: u32 = (1 << 22) - 1;
const T_LIST: u32 = 1 << 12;

/// The values (by [`tag`]) the parser's type check rejects for `p` whatever their
/// contents (`Ok(false)`, never an abort); the rest of those not [`accepted`]
/// need the check itself.
pub(crate) fn rejected(p: &super::FunctionParameter) -> u32 {
    use ParamKind as K;
    let maybe = match p.kind {
        // 0-dim tensors for numbers.
        K::Scalar | K::Complex | K::Double => T_NUMBER | T_TENSOR,
        K::Int | K::SymInt => T_INT | T_TENSOR,
        K::TensorList | K::FloatList | K::ScalarList => T_LIST,
        K::IntList | K::SymIntList => T_LIST | T_NUMBER | T_TENSOR,
        K::Dimname | K::DimnameList => 0,
        // The check aborts.
        K::Stream | K::DispatchKeySet => T_ALL,
        _ => accepted(p),
    };
    T_ALL & !maybe
}

/// The values (by [`tag`]) `unpack` leaves unchanged for a kind (it cannot
/// raise for them).
fn unpack_same(kind: ParamKind) -> u32 {
    use ParamKind as K;
    match kind {
        K::Tensor => T_TENSOR,
        K::Scalar => T_NUMBER,
        K::Int | K::SymInt => T_INT,
        K::Bool => T_BOOL,
        K::Double | K::Complex => T_FLOAT,
        K::ScalarType => T_DTYPE,
        K::Layout => T_LAYOUT,
        K::MemoryFormat => T_MEMORY_FORMAT,
        K::Device => T_DEVICE,
        K::String => T_STR,
        K::Generator => T_GENERATOR,
        K::Storage => T_STORAGE,
        K::QScheme => T_QSCHEME,
        _ => 0,
    }
}

/// The values (by [`tag`]) that bind to `ty` for sure (wrapped numbers, or
/// [`coerce`] cannot fail), and those among them that bind unchanged.
fn coerce_tags(ty: &Ty) -> (u32, u32) {
    use crate::tables::BaseType as B;
    let (base, none) = match ty {
        Ty::Optional(inner) => (**inner, T_NONE),
        t => (*t, 0),
    };
    let Ty::Base(b) = base else {
        return (none, none);
    };
    let (ok, same) = match b {
        // Numbers given for tensors stay numbers (`is_wrapped_number`).
        B::Tensor => (T_TENSOR | T_NUMBER, T_TENSOR | T_NUMBER),
        B::Int | B::SymInt | B::DeviceIndex => (T_INT, T_INT),
        B::Float => (T_FLOAT | T_INT, T_FLOAT),
        B::Bool => (T_BOOL, T_BOOL),
        B::Scalar => (T_NUMBER, T_NUMBER),
        B::Str => (T_STR, T_STR),
        B::ScalarType => (T_DTYPE, T_DTYPE),
        B::Layout => (T_LAYOUT, T_LAYOUT),
        B::MemoryFormat => (T_MEMORY_FORMAT, T_MEMORY_FORMAT),
        B::Device => (T_DEVICE, T_DEVICE),
        _ => (0, 0),
    };
    (ok | none, same | none)
}

/// `unpack` of a given value (`None` when it raises).
#[inline]
fn unpack_given(sig: &FunctionSignature, i: usize, v: Value) -> Option<Value> {
    let p = &sig.params[i];
    if unpack_same(p.kind) & tag(&v) != 0 {
        Some(v)
    } else {
        parse::unpack(sig, p, Some(v)).ok()
    }
}

/// Runs `f` on `n` values (all `None`), on the stack when `n` is small.
#[inline]
pub(crate) fn with_values<R>(n: usize, f: impl FnOnce(&mut [Value]) -> R) -> R {
    #[inline]
    fn inline<const N: usize, R>(f: impl FnOnce(&mut [Value]) -> R) -> R {
        let mut values: [Value; N] = std::array::from_fn(|_| Value::None);
        f(&mut values)
    }
    match n {
        0 => inline::<0, R>(f),
        1 => inline::<1, R>(f),
        2 => inline::<2, R>(f),
        3 => inline::<3, R>(f),
        4 => inline::<4, R>(f),
        5 => inline::<5, R>(f),
        6 => inline::<6, R>(f),
        7 => inline::<7, R>(f),
        8 => inline::<8, R>(f),
        _ => f(&mut vec![Value::None; n]),
    }
}
