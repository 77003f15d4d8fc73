//! `opcheck` (PyTorch's `torch.library.opcheck`): runs one call of an
//! operator under each of PyTorch's test families and reports the first that
//! fails, in PyTorch's words.
//!
//! - `test_schema` (PyTorch's `SchemaCheckMode`): the schema's mutation and
//!   alias annotations against what the kernel did: an input written
//!   without `(a!)`, an output sharing an input's storage without the
//!   input's alias set, an input returned as it is by an operator that does
//!   not write it, two outputs sharing storage;
//! - `test_autograd_registration`: an operator without an Autograd (or
//!   CompositeImplicitAutograd) kernel whose outputs require grad, which
//!   means autograd was done at a backend key;
//! - `test_faketensor` (PyTorch's `CrossRefFakeMode`): the call on fakes
//!   against the real call: number of returns, then per tensor output
//!   `requires_grad`, storage offset, shape, dtype, device and strides, and
//!   whether outputs alias inputs (or are inputs, or alias each other) alike.
//!
//! - `test_typed_call` (ours: PyTorch's C++ has no second calling
//!   convention to test): the call through the operator's generated typed
//!   API (`at::<op>`, its arguments unboxed as a kernel's boxed adapter
//!   unboxes them) against the boxed call, each on its own copy of the
//!   inputs: the same error, or the same returns (tensors' sizes, strides,
//!   dtype, device, `requires_grad` and elements; other values equal), the
//!   same aliasing, and the inputs written alike. Elements are not compared
//!   for operators tagged `nondeterministic_seeded`. An operator defined at
//!   run time (`Library::define`) has no typed API: there is nothing to
//!   compare, and the family passes.
//!
//! PyTorch's fourth default family (`test_aot_dispatch_dynamic`) needs graph
//! capture, which comes with tracing.
//!
//! ```
//! use opforge::dispatch::DispatchKey;
//! use opforge::library::{Library, LibraryKind};
//! use opforge::opcheck::{opcheck, TestUtil};
//! use opforge::{Scalar, Tensor, Value};
//! let lib = Library::new("doc_opcheck", LibraryKind::Def)?;
//! lib.define("bump(Tensor x) -> Tensor")?; // no `(a!)`, but the kernel writes x
//! lib.impl_("bump", DispatchKey::CPU, |args: &[Value]| {
//!     let Value::Tensor(x) = &args[0] else { unreachable!() };
//!     let mut x = x.clone();
//!     x.fill_scalar_(Scalar::Int(0))?;
//!     Ok(vec![Value::Tensor(x.deep_clone()?)])
//! })?;
//! let x = Value::Tensor(Tensor::from_vec(vec![1.0f32, 2.0], &[2])?);
//! let e = opcheck("doc_opcheck::bump", &[x], &[TestUtil::Schema]).unwrap_err();
//! assert_eq!(
//!     e.to_string(),
//!     "opcheck(op, ...): test_schema failed with Argument x is not defined as mutable \
//!      but was mutated (scroll up for stack trace)"
//! );
//! # Ok::<(), opforge::Error>(())
//! ```

use crate::dispatch::{dispatcher, Operator};
use crate::error::{Error, FakeException, Result};
use crate::fake::FakeTensorMode;
use crate::keys::{DispatchKey, KeySet};
use crate::tensor::{torch_size, Tensor};
use crate::value::op_overload_name;
use crate::value::Value;

/// One of PyTorch's opcheck test families.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TestUtil {
    /// `test_schema`.
    Schema,
    /// `test_autograd_registration`.
    AutogradRegistration,
    /// `test_faketensor`.
    FakeTensor,
    /// `test_typed_call`: the typed API against the boxed call.
    TypedCall,
}

impl TestUtil {
    /// The families `opcheck` runs by default: PyTorch's (but for the
    /// tracing one), then the typed-call one.
    pub const DEFAULT: [TestUtil; 4] = [
        TestUtil::Schema,
        TestUtil::AutogradRegistration,
        TestUtil::FakeTensor,
        TestUtil::TypedCall,
    ];

    /// PyTorch's name (`test_schema`).
    pub fn name(self) -> &'static str {
        match self {
            TestUtil::Schema => "test_schema",
            TestUtil::AutogradRegistration => "test_autograd_registration",
            TestUtil::FakeTensor => "test_faketensor",
            TestUtil::TypedCall => "test_typed_call",
        }
    }
}

/// Runs `utils` on one call of the operator `name` (`ns::name.overload`)
/// with `args` (one value per schema argument); the first failure is an
/// [`Error::OpCheck`] naming the family and why, as PyTorch's
/// `OpCheckError` does.
pub fn opcheck(name: &str, args: &[Value], utils: &[TestUtil]) -> Result<()> {
    let op = find(name)?;
    for (util, r) in opcheck_results(op, args, utils) {
        if let Err(e) = r {
            return Err(Error::OpCheck(
                format!(
                    "opcheck(op, ...): {} failed with {e} (scroll up for stack trace)",
                    util.name()
                )
                .into(),
            ));
        }
    }
    Ok(())
}

fn find(name: &str) -> Result<&'static Operator> {
    let name = name.strip_suffix(".default").unwrap_or(name);
    dispatcher()
        .find(name)
        .ok_or_else(|| Error::UnknownOp(name.to_string().into()))
}

/// Every family's result, failures included (PyTorch's
/// `raise_exception=False`).
pub fn opcheck_results(
    op: &'static Operator,
    args: &[Value],
    utils: &[TestUtil],
) -> Vec<(TestUtil, Result<()>)> {
    utils
        .iter()
        .map(|&u| {
            let r = match u {
                TestUtil::Schema => schema_check(op, args),
                TestUtil::AutogradRegistration => autograd_registration_check(op, args),
                TestUtil::FakeTensor => fake_check(op, args),
                TestUtil::TypedCall => typed_check(op, args),
            };
            (u, r)
        })
        .collect()
}

/// The tensors of a value, in order.
fn tensors(v: &Value) -> Vec<&Tensor> {
    match v {
        Value::Tensor(t) => vec![t],
        Value::TensorList(ts) => ts.iter().collect(),
        Value::OptTensorList(ts) => ts.iter().flatten().collect(),
        Value::List(vs) => vs.iter().flat_map(tensors).collect(),
        _ => Vec::new(),
    }
}

/// A tensor as it was before the call: a copy of its data (the tensor
/// itself for fakes and meta tensors), its sizes, strides and offset.
type Before = (Tensor, Vec<usize>, Vec<usize>, usize);

/// A copy of a value's tensors (data and metadata), to compare after.
fn snapshot(v: &Value) -> Result<Vec<Before>> {
    tensors(v)
        .into_iter()
        .map(|t| {
            let copy = if t.is_fake() || t.device() == crate::tensor::Device::Meta {
                t.clone()
            } else {
                t.deep_clone()?
            };
            Ok((copy, t.shape(), t.strides(), t.storage_offset()))
        })
        .collect()
}

/// Did the tensor change: its metadata or (for real tensors) any element
/// (NaN equal to NaN)?
fn mutated(t: &Tensor, before: &Before) -> bool {
    let (copy, shape, strides, offset) = before;
    if t.shape() != *shape || t.strides() != *strides || t.storage_offset() != *offset {
        return true;
    }
    if copy.is_same(t) {
        return false;
    }
    !same_elements(t, copy)
}

/// Do two tensors of one shape and dtype hold the same elements (NaN equal
/// to NaN)? Tensors without data (fakes, meta tensors) do.
fn same_elements(a: &Tensor, b: &Tensor) -> bool {
    crate::with_dtype!(a.dtype(), S => match (a.to_vec::<S>(), b.to_vec::<S>()) {
        #[allow(clippy::eq_op)]
        (Ok(a), Ok(b)) => a.iter().zip(&b).all(|(x, y)| x == y || (x != x && y != y)),
        _ => true,
    })
}

fn aliased(a: &Value, b: &Value) -> bool {
    let (xs, ys) = (tensors(a), tensors(b));
    xs.iter().any(|x| ys.iter().any(|y| x.shares_storage(y)))
}

/// Is the operator's kernel a decomposition for every key
/// (`CompositeImplicitAutograd`, the default of a YAML entry without
/// `dispatch:`)?
fn is_composite_implicit(op: &Operator) -> bool {
    op.registered_keys()
        .contains(&DispatchKey::CompositeImplicitAutograd)
        || op.schema.kernel("CompositeImplicitAutograd").is_some()
}

/// PyTorch's `SchemaCheckMode` for one call. A `CompositeImplicitAutograd`
/// operator decomposes above the dispatch modes, so PyTorch's mode never
/// sees it, only the operators it calls (each checked on its own): its own
/// annotations are not checked here either.
fn schema_check(op: &'static Operator, args: &[Value]) -> Result<()> {
    let s = op.schema;
    if is_composite_implicit(op) {
        op.call_boxed(args)?;
        return Ok(());
    }
    let before = args.iter().map(snapshot).collect::<Result<Vec<_>>>()?;
    let outs = op.call_boxed(args)?;
    for (i, (a, v)) in s.args.iter().zip(args).enumerate() {
        let writes = a.alias.is_some_and(|x| x.is_write);
        for (j, out) in outs.iter().enumerate() {
            if aliased(out, v) {
                let may_alias = match (s.returns.get(j).and_then(|r| r.alias), a.alias) {
                    (Some(r), Some(x)) => r.set == x.set || r.set == "*" || x.set == "*",
                    _ => false,
                };
                if !may_alias && !matches!(s.name, "_unsafe_view" | "unsafe_split") {
                    return Err(Error::Runtime(
                        format!(
                            "Argument {} is not defined to alias output but was aliasing",
                            a.name
                        )
                        .into(),
                    ));
                }
            }
            if let (Value::Tensor(o), Value::Tensor(t)) = (out, v) {
                if o.is_same(t) && !writes {
                    return Err(Error::Runtime(
                        format!(
                            "Dispatcher operators below autograd are not allowed to directly return inputs.\nHowever, we found that `outputs[{j}] is {}",
                            a.name
                        )
                        .into(),
                    ));
                }
            }
        }
        let changed = tensors(v)
            .into_iter()
            .zip(&before[i])
            .any(|(t, b)| mutated(t, b));
        if changed && !writes {
            return Err(Error::Runtime(
                format!(
                    "Argument {} is not defined as mutable but was mutated",
                    a.name
                )
                .into(),
            ));
        }
    }
    for i in 0..outs.len() {
        for j in i + 1..outs.len() {
            if aliased(&outs[i], &outs[j]) {
                let may_alias = match (
                    s.returns.get(i).and_then(|r| r.alias),
                    s.returns.get(j).and_then(|r| r.alias),
                ) {
                    (Some(x), Some(y)) => x.set == y.set || x.set == "*" || y.set == "*",
                    _ => false,
                };
                if !may_alias {
                    return Err(Error::Runtime(
                        format!("Outputs {i} and {j} alias unexpectedly").into(),
                    ));
                }
            }
        }
    }
    Ok(())
}

/// PyTorch's `autograd_registration_check`.
fn autograd_registration_check(op: &'static Operator, args: &[Value]) -> Result<()> {
    let all: Vec<&Tensor> = args.iter().flat_map(tensors).collect();
    if !all.iter().any(|t| t.requires_grad()) {
        return Err(Error::Runtime(
            "autograd_registration_check: no inputs have requires_grad=True so we are unable to actually perform this test. Please pass inputs that do require grad.".into(),
        ));
    }
    if op.registered_keys().contains(&DispatchKey::Autograd)
        || op.schema.kernel("Autograd").is_some()
        || is_composite_implicit(op)
    {
        return Ok(());
    }
    // The backend kernel, without the autograd fallback (PyTorch's fallback
    // mode "nothing"): what it returns requires grad only if it recorded
    // autograd itself.
    let below = KeySet::of_values(args).below(DispatchKey::ADInplaceOrView);
    let outs = op.call_with_keys(below, args)?;
    let is_input = |t: &Tensor| all.iter().any(|a| a.is_same(t));
    if outs
        .iter()
        .flat_map(tensors)
        .any(|t| t.requires_grad() && !is_input(t))
    {
        return Err(Error::Runtime(format!(
            "{}: at least one output of this operator has requires_grad=True but the operator does not have an autograd kernel defined at an autograd key (e.g. DispatchKey::Autograd). This could mean that you have incorrectly registered an autograd kernel to a non-Autograd DispatchKey, which may lead to silently incorrect results. If your operator consists of regular PyTorch operations, consider not using an operator at all or registering your operator as CompositeImplicitAutograd. If you have an autograd.Function registered to a backend (CPU/CUDA/XPU) key, the correct location for it is the Autograd key.",
            op.qualified_name()
        ).into()));
    }
    Ok(())
}

/// A fake of every tensor and object among `args` (objects of classes
/// without a fake class stay real).
fn fakes_of(mode: &FakeTensorMode, args: &[Value]) -> Result<Vec<Value>> {
    args.iter()
        .map(|v| match v {
            Value::Object(o) if crate::classes::has_fake_class(o.type_name()) => {
                Ok(Value::Object(mode.fake_object(o)?))
            }
            v => v.try_map_tensors(&mut |t| {
                if t.is_wrapped_number() {
                    Ok(t.clone())
                } else {
                    mode.from_tensor(t)
                }
            }),
        })
        .collect()
}

/// Real copies of the tensors among `args` (the real call must not see
/// what the others did to them), each with its sizes, strides and offset
/// over a copy of its whole storage (Python's `copy.deepcopy` of a tensor,
/// which PyTorch's opcheck makes of its arguments).
fn copies_of(args: &[Value]) -> Result<Vec<Value>> {
    args.iter()
        .map(|v| {
            v.try_map_tensors(&mut |t| {
                if t.is_wrapped_number() {
                    return Ok(t.clone());
                }
                let g = t.geometry();
                let storage = t.strided_view(&[g.storage.len()], &[1], 0)?.deep_clone()?;
                let c = storage.strided_view(&g.shape, &g.strides, g.offset)?;
                if t.requires_grad() {
                    c.set_requires_grad(true)?;
                }
                Ok(c)
            })
        })
        .collect()
}

fn mismatch(msg: String) -> Error {
    Error::Runtime(msg.into())
}

/// PyTorch's `compare_tensor_meta` (and `_check_fake_real_tensors`) of a
/// real output and its fake.
fn compare_meta(real: &Tensor, fake: &Tensor, context: &str) -> Result<()> {
    if real.requires_grad() != fake.requires_grad() {
        return Err(mismatch(format!(
            "{context} mismatched requires_grad-ness of outputs. This usually means that you have added autograd support for your operator at a dispatch key other than Autograd, which will lead to problems"
        )));
    }
    if real.storage_offset() != fake.storage_offset() {
        return Err(mismatch(format!("{context} mismatched storage offset")));
    }
    if real.shape() != fake.shape() {
        return Err(mismatch(format!(
            "Shapes {} and {} are not equal!",
            torch_size(&real.shape()),
            torch_size(&fake.shape())
        )));
    }
    if real.dtype() != fake.dtype() {
        return Err(mismatch(format!(
            "Dtypes {} and {} are not equal!",
            real.dtype(),
            fake.dtype()
        )));
    }
    if real.device() != fake.device() {
        return Err(mismatch(format!(
            "Devices {} and {} are not equal!",
            real.device(),
            fake.device()
        )));
    }
    // Strides of dimensions of size 1 (or of empty tensors) do not matter.
    if real.numel() > 0 {
        let shape = real.shape();
        for (idx, ((a, b), n)) in real
            .strides()
            .iter()
            .zip(fake.strides())
            .zip(&shape)
            .enumerate()
        {
            if *n > 1 && *a != b {
                let tuple = |s: Vec<usize>| crate::pyfmt::repr_tuple(&s);
                return Err(mismatch(format!(
                    "Stride mismatch! Strides are {} and {} (mismatched at {idx})!",
                    tuple(real.strides()),
                    tuple(fake.strides())
                )));
            }
        }
    }
    Ok(())
}

/// PyTorch's aliasing facts of one call: do outputs alias inputs, are
/// outputs inputs, do outputs alias each other?
fn alias_info(outs: &[Value], args: &[Value]) -> (bool, bool, bool) {
    let outs: Vec<&Tensor> = outs.iter().flat_map(tensors).collect();
    let ins: Vec<&Tensor> = args.iter().flat_map(tensors).collect();
    let alias = outs.iter().any(|o| ins.iter().any(|i| o.shares_storage(i)));
    let same = outs.iter().any(|o| ins.iter().any(|i| o.is_same(i)));
    let each = outs
        .iter()
        .enumerate()
        .any(|(k, o)| outs[k + 1..].iter().any(|p| o.shares_storage(p)));
    (alias, same, each)
}

/// PyTorch's `CrossRefFakeMode` for one call.
fn fake_check(op: &'static Operator, args: &[Value]) -> Result<()> {
    let mode = FakeTensorMode::new();
    let fake_args = fakes_of(&mode, args)?;
    let fake_r = match op.call_boxed(&fake_args) {
        Ok(r) => r,
        // Shapes that depend on the data have nothing to compare.
        Err(Error::Fake(
            FakeException::DynamicOutputShape | FakeException::DataDependentOutput,
            _,
        )) => return Ok(()),
        Err(e) => return Err(e),
    };
    let real_args = copies_of(args)?;
    let r = op.call_boxed(&real_args)?;
    let context = format!(
        "When comparing the output of {} on FakeTensor and concrete Tensors, found",
        op_overload_name(op.schema)
    );
    let (rf, ff): (Vec<&Tensor>, Vec<&Tensor>) = (
        r.iter().flat_map(tensors).collect(),
        fake_r.iter().flat_map(tensors).collect(),
    );
    if r.len() != fake_r.len() {
        return Err(mismatch(format!(
            "{context} mismatch in number of returns {} != {}",
            fake_r.len(),
            r.len()
        )));
    }
    let (ra, rs, re) = alias_info(&r, &real_args);
    let (fa, fs, fe) = alias_info(&fake_r, &fake_args);
    for (what, f, r) in [
        ("outputs_alias_inputs", fa, ra),
        ("outputs_are_inputs", fs, rs),
        ("outputs_alias_each_other", fe, re),
    ] {
        if f != r {
            let f = if f { "True" } else { "False" };
            let r = if r { "True" } else { "False" };
            return Err(mismatch(format!(
                "{context} mismatch in {what} check {f} != {r}"
            )));
        }
    }
    if rf.len() != ff.len() {
        return Err(mismatch(format!(
            "{context} mismatched number of tensor outputs"
        )));
    }
    for (idx, (real, fake)) in rf.iter().zip(&ff).enumerate() {
        if let Err(e) = compare_meta(real, fake, &context) {
            return Err(mismatch(if rf.len() == 1 {
                format!("{context} mismatched tensor metadata: {e}")
            } else {
                format!("{context} mismatched tensor metadata for output[{idx}]: {e}")
            }));
        }
    }
    Ok(())
}

/// The typed API against the boxed call (see the module's documentation).
fn typed_check(op: &'static Operator, args: &[Value]) -> Result<()> {
    let Some(typed) = crate::dispatch::typed_caller(op.schema) else {
        return Ok(());
    };
    let (boxed_args, typed_args) = (copies_of(args)?, copies_of(args)?);
    // The typed call's results as one value: one per schema return again.
    let typed = typed
        .call(op, &typed_args)
        .map(|v| match (op.schema.returns.len(), v) {
            (0, Value::None) => Vec::new(),
            (1, v) => vec![v],
            (_, Value::List(vs)) => vs.into_vec(),
            (_, v) => vec![v],
        });
    let (boxed, typed) = (op.call_boxed(&boxed_args), typed);
    let (boxed, typed) = match (boxed, typed) {
        (Ok(b), Ok(t)) => (b, t),
        (Err(b), Err(t)) if b.to_string() == t.to_string() => return Ok(()),
        (b, t) => {
            let show = |r: &Result<Vec<Value>>| match r {
                Ok(_) => "returned".to_string(),
                Err(e) => format!("failed with {e}"),
            };
            return Err(mismatch(format!(
                "the boxed call {} but the typed call {}",
                show(&b),
                show(&t)
            )));
        }
    };
    let data = !op.schema.tags.contains(&"nondeterministic_seeded");
    if boxed.len() != typed.len() {
        return Err(mismatch(format!(
            "mismatch in number of returns {} (boxed) != {} (typed)",
            boxed.len(),
            typed.len()
        )));
    }
    for (i, (b, t)) in boxed.iter().zip(&typed).enumerate() {
        if let Some(why) = value_difference(b, t, data) {
            return Err(mismatch(format!("output[{i}] differs: {why}")));
        }
    }
    if alias_info(&boxed, &boxed_args) != alias_info(&typed, &typed_args) {
        return Err(mismatch(
            "the outputs alias the inputs (or each other) differently".into(),
        ));
    }
    for ((a, b), t) in op.schema.args.iter().zip(&boxed_args).zip(&typed_args) {
        if let Some(why) = value_difference(b, t, data) {
            return Err(mismatch(format!(
                "argument {} differs after the calls: {why}",
                a.name
            )));
        }
    }
    Ok(())
}

/// How the boxed call's value `b` differs from the typed call's `t`, if it
/// does.
fn value_difference(b: &Value, t: &Value, data: bool) -> Option<String> {
    if std::mem::discriminant(b) != std::mem::discriminant(t) {
        return Some(format!(
            "{} (boxed) and {} (typed)",
            b.type_name(),
            t.type_name()
        ));
    }
    let (bs, ts) = (tensors(b), tensors(t));
    if bs.is_empty() && ts.is_empty() {
        let (b, t) = (b.to_string(), t.to_string());
        return (b != t).then(|| format!("{b} (boxed) != {t} (typed)"));
    }
    if bs.len() != ts.len() {
        return Some(format!(
            "{} tensors (boxed) != {} (typed)",
            bs.len(),
            ts.len()
        ));
    }
    bs.iter().zip(&ts).find_map(|(b, t)| {
        let meta = |x: &Tensor| {
            (
                x.shape(),
                x.strides(),
                x.storage_offset(),
                x.dtype(),
                x.device(),
                x.requires_grad(),
            )
        };
        if meta(b) != meta(t) {
            return Some(format!("{:?} (boxed) != {:?} (typed)", meta(b), meta(t)));
        }
        (data && !same_elements(b, t)).then(|| "different elements".to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_print_as_torch_size() {
        let t = Tensor::zeros(
            &[2, 3],
            crate::tensor::DType::Float32,
            crate::tensor::Device::Cpu,
        );
        assert_eq!(torch_size(&t.shape()), "torch.Size([2, 3])");
    }
}
