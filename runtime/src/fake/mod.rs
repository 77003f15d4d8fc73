//! Fake tensors (PyTorch's `FakeTensor` and `FakeTensorMode`): tensors with
//! the shapes, dtypes, strides and device they claim, and no data. Calls on
//! them run the operator's Meta kernel (or the fake kernel of a custom
//! operator, `library::register_fake`) and give fakes back; a program runs on
//! them to learn its shapes, as tracing does.
//!
//! The layer is a dispatch key, `Fake`, and its fallback ([`FAKE_KEY`]):
//!
//! - a fake tensor carries the key (beside its claimed device's backend), so
//!   any call on one comes here, under a mode or not, as PyTorch's fakes
//!   re-enter their mode;
//! - a [`FakeTensorMode`] that is entered includes the key for its thread, so
//!   that factories (`torch::ones`) make fakes, and real tensors are refused
//!   with PyTorch's message, or converted if the mode allows them
//!   ([`FakeTensorMode::allow_non_fake_inputs`]); [`FakeTensorMode::from_tensor`]
//!   converts one explicitly (the same fake for the same tensor);
//! - the fallback runs the operator below `Fake` on meta tensors over the
//!   fakes' storages and wraps the results as fakes on the inputs' device;
//!   a result that is an input (an in-place operator's) is that input.
//!
//! Operators tagged `dynamic_output_shape` (`nonzero`) or
//! `data_dependent_output` (`_local_scalar_dense`) and operators with neither
//! a Meta nor a fake kernel fail with PyTorch's exceptions
//! ([`crate::error::FakeException`]).
//!
//! ```
//! use opforge::fake::FakeTensorMode;
//! use opforge::{torch, Device, Tensor};
//! let mode = FakeTensorMode::new();
//! let real = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3])?;
//! let x = mode.from_tensor(&real)?;
//! let _in_mode = mode.enter();
//! let w = torch::ones(&[3, 4])?; // a factory: a fake
//! let y = torch::matmul(&x, &w)?;
//! assert!(y.is_fake());
//! assert_eq!((y.shape(), y.device()), (vec![2, 4], Device::Cpu));
//! assert_eq!(y.to_string(), "FakeTensor(..., size=(2, 4))");
//! assert!(y.to_vec::<f32>().is_err()); // no data
//! let e = torch::add(&x, &real).unwrap_err(); // a real tensor among fakes
//! assert!(e.to_string().starts_with("Please convert all Tensors to FakeTensors first"));
//! # Ok::<(), opforge::Error>(())
//! ```

use crate::dispatch::linked::{FallbackEntry, FALLBACKS};
use crate::dispatch::Operator;
use crate::error::{Error, FakeException, Result};
use crate::keys::{DispatchKey, KeySet, LocalKeys, LocalKeysGuard};
use crate::pyfmt::repr_tuple;
use crate::tables::{OpSchema, Ty};
use crate::tensor::{DType, Device, LayerState, Scalar, Tensor};
use crate::value::Value;
use crate::value::{op_overload_name, ScriptObject};
use smallvec::SmallVec;
use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock, Weak};

pub use tensor::FAKE_KEY;

mod tensor;
mod torchbind;

#[linkme::distributed_slice(FALLBACKS)]
static FAKE_FALLBACK: FallbackEntry = FallbackEntry {
    key: "Fake",
    boxed: fake_fallback,
    typed: None,
    leaves_alone: None,
    file: file!(),
    line: line!(),
};

/// A custom operator's fake kernel (`library::register_fake`): what a call
/// on fakes runs instead of the Meta kernel, on the fakes themselves (as
/// PyTorch runs a fake impl under its mode), so that it may call other
/// operators and the methods of fake objects.
pub type FakeKernel = Arc<dyn Fn(&[Value]) -> Result<Vec<Value>> + Send + Sync>;

/// The fake layer's data on an operator: its fake kernel, if any.
#[derive(Default)]
struct FakeImpl(RwLock<Option<FakeKernel>>);

/// Sets (or replaces) the fake kernel of `op` ([`FakeKernel`]); the library
/// calls it for `register_fake`.
pub fn set_fake_kernel(op: &Operator, kernel: FakeKernel) {
    let slot = op.layer_data_with(DispatchKey::Fake, || Box::leak(Box::default()));
    if let Some(FakeImpl(k)) = slot {
        *k.write().unwrap_or_else(|e| e.into_inner()) = Some(kernel);
    }
}

fn fake_kernel(op: &Operator) -> Option<FakeKernel> {
    let FakeImpl(k) = op.layer_data::<FakeImpl>(DispatchKey::Fake)?;
    k.read().unwrap_or_else(|e| e.into_inner()).clone()
}

/// A fake tensor mode (PyTorch's `FakeTensorMode`): converts real tensors to
/// fakes ([`FakeTensorMode::from_tensor`]) and, entered
/// ([`FakeTensorMode::enter`]), makes the thread's calls fake. Clones are the
/// same mode (they share its conversions). Every fake belongs to the mode
/// that made it: a call on fakes runs under the entered mode, or else under
/// the mode of its first fake, as PyTorch's `FakeTensor.__torch_dispatch__`
/// re-enters `fake_mode`; fakes of another mode in it are PyTorch's "Mixing
/// fake modes NYI" unless that mode allows non-fake inputs.
#[derive(Clone)]
pub struct FakeTensorMode(Arc<ModeState>);

impl Default for FakeTensorMode {
    fn default() -> FakeTensorMode {
        FakeTensorMode::with_allow(false)
    }
}

struct ModeState {
    allow_non_fake_inputs: bool,
    /// The fakes of the real tensors converted so far (PyTorch's memo), by
    /// the real tensor's identity; the real tensor is kept with its fake so
    /// that its address is not reused while the mode lives.
    memo: Mutex<HashMap<usize, (Tensor, Tensor)>>,
    /// What each fake of this mode carries ([`Tensor::layer_state`]): the
    /// mode, held weakly (the memo holds fakes, so a strong handle would be
    /// a cycle).
    stamp: LayerState,
}

/// A fake's layer state: the mode that made it.
struct FakeOf(Weak<ModeState>);

impl FakeOf {
    /// The mode's identity while anything holds it (PyTorch compares modes
    /// with `is`).
    fn addr(&self) -> usize {
        self.0.as_ptr() as *const () as usize
    }
}

impl std::fmt::Debug for FakeTensorMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FakeTensorMode")
            .field("allow_non_fake_inputs", &self.0.allow_non_fake_inputs)
            .finish_non_exhaustive()
    }
}

/// A mode as Python prints one (`<torch._subclasses.fake_tensor.FakeTensorMode
/// object at 0x7f…>`), by its identity.
fn mode_repr(addr: usize) -> String {
    format!("<torch._subclasses.fake_tensor.FakeTensorMode object at {addr:#x}>")
}

thread_local! {
    /// The modes entered on this thread, innermost last.
    static MODES: RefCell<Vec<FakeTensorMode>> = const { RefCell::new(Vec::new()) };
}

impl FakeTensorMode {
    /// A mode that refuses real tensors in calls (PyTorch's default).
    pub fn new() -> FakeTensorMode {
        FakeTensorMode::default()
    }

    /// A mode that converts real tensors it meets in calls to fakes (PyTorch's
    /// `FakeTensorMode(allow_non_fake_inputs=True)`), whether it is entered
    /// or its fakes bring it into a call.
    pub fn allowing_non_fake_inputs() -> FakeTensorMode {
        FakeTensorMode::with_allow(true)
    }

    fn with_allow(allow_non_fake_inputs: bool) -> FakeTensorMode {
        FakeTensorMode(Arc::new_cyclic(|me| ModeState {
            allow_non_fake_inputs,
            memo: Mutex::default(),
            stamp: Arc::new(FakeOf(me.clone())),
        }))
    }

    /// What this mode's fakes carry.
    fn stamp(&self) -> LayerState {
        self.0.stamp.clone()
    }

    /// Is `t` a fake of this mode (PyTorch's `is_our_fake`)?
    pub fn is_our_fake(&self, t: &Tensor) -> bool {
        mode_of(t).is_some_and(|m| m.addr() == Arc::as_ptr(&self.0) as *const () as usize)
    }

    /// The mode a fake belongs to, while it lives.
    pub fn of(t: &Tensor) -> Option<FakeTensorMode> {
        mode_of(t)?.0.upgrade().map(FakeTensorMode)
    }

    /// Does the mode convert real tensors it meets in calls?
    pub fn allow_non_fake_inputs(&self) -> bool {
        self.0.allow_non_fake_inputs
    }

    /// Enters the mode on this thread until the guard is dropped: factories
    /// make fakes, and every call with tensors is fake.
    pub fn enter(&self) -> FakeModeGuard {
        MODES.with(|m| m.borrow_mut().push(self.clone()));
        FakeModeGuard {
            _keys: LocalKeys::include(FAKE_KEY),
        }
    }

    /// The fake of a real tensor: its dtype, sizes, strides, offset, device
    /// and `requires_grad`, no data (PyTorch's `from_tensor`). The same
    /// tensor gives the same fake; a fake is returned as it is.
    pub fn from_tensor(&self, t: &Tensor) -> Result<Tensor> {
        if t.is_fake() {
            return Ok(t.clone());
        }
        let id = t.identity();
        let mut memo = self.0.memo.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, fake)) = memo.get(&id) {
            return Ok(fake.clone());
        }
        let fake = t.fake_like(self.stamp());
        if t.requires_grad() {
            fake.set_requires_grad(true)?;
        }
        memo.insert(id, (t.clone(), fake.clone()));
        Ok(fake)
    }

    /// The fake of a custom-class object (PyTorch's `maybe_to_fake_obj`,
    /// [`crate::classes::to_fake_obj`]), its tensors made fakes of
    /// the same sizes, strides, dtype, device and `requires_grad` (not
    /// through this mode's conversions: aliasing among them is not kept, as
    /// in PyTorch).
    pub fn fake_object(&self, obj: &ScriptObject) -> Result<ScriptObject> {
        crate::classes::to_fake_obj(obj, &mut |t: &Tensor| {
            if t.is_fake() {
                return Ok(t.clone());
            }
            let fake = t.fake_like(self.stamp());
            if t.requires_grad() {
                fake.set_requires_grad(true)?;
            }
            Ok(fake)
        })
    }

    /// The mode innermost on this thread, if any.
    pub fn current() -> Option<FakeTensorMode> {
        MODES.with(|m| m.borrow().last().cloned())
    }
}

/// Leaves the mode when dropped ([`FakeTensorMode::enter`]).
#[must_use = "the mode is left when the guard is dropped"]
pub struct FakeModeGuard {
    _keys: LocalKeysGuard,
}

impl Drop for FakeModeGuard {
    fn drop(&mut self) {
        MODES.with(|m| m.borrow_mut().pop());
    }
}

/// The mode a fake carries, if it is a fake.
fn mode_of(t: &Tensor) -> Option<&FakeOf> {
    t.wrapper_state::<FakeOf>()
}

fn fake_error(kind: FakeException, message: String) -> Error {
    Error::Fake(kind, message.into())
}

/// The mode a call runs under: the entered one, else the mode of its first
/// fake (PyTorch's `FakeTensor.__torch_dispatch__` re-entering
/// `fake_mode`).
struct Acting {
    /// What the call's results carry.
    stamp: LayerState,
    /// The mode's identity, to tell its own fakes.
    addr: usize,
    /// The mode, to convert real tensors (`None`: its fakes outlived it).
    mode: Option<FakeTensorMode>,
}

impl Acting {
    fn of_mode(mode: FakeTensorMode) -> Acting {
        Acting {
            stamp: mode.stamp(),
            addr: Arc::as_ptr(&mode.0) as *const () as usize,
            mode: Some(mode),
        }
    }

    /// The entered mode, else the first fake's among `args`, else (a fake
    /// kernel's factory call, say, with the mode gone) a mode of its own.
    fn find(args: &[Value]) -> Acting {
        if let Some(mode) = FakeTensorMode::current() {
            return Acting::of_mode(mode);
        }
        let mut found: Option<Acting> = None;
        for v in args {
            v.for_each_tensor(&mut |t| {
                if found.is_some() || !t.is_fake() {
                    return;
                }
                if let Some(stamp) = t.layer_state() {
                    if let Some(of) = stamp.downcast_ref::<FakeOf>() {
                        found = Some(Acting {
                            stamp: stamp.clone(),
                            addr: of.addr(),
                            mode: of.0.upgrade().map(FakeTensorMode),
                        });
                    }
                }
            });
            if found.is_some() {
                break;
            }
        }
        found.unwrap_or_else(|| Acting::of_mode(FakeTensorMode::new()))
    }

    fn allows_non_fake_inputs(&self) -> bool {
        self.mode
            .as_ref()
            .is_some_and(FakeTensorMode::allow_non_fake_inputs)
    }

    fn is_ours(&self, t: &Tensor) -> bool {
        mode_of(t).is_some_and(|m| m.addr() == self.addr)
    }
}

/// What the fallback does with an input tensor.
enum Input {
    /// One of the acting mode's fakes, a fake the mode takes as it is, or a
    /// Python number given for a tensor.
    AsIs,
    /// A real tensor, converted by a mode that allows them.
    Converted(Tensor),
    /// A real tensor, or a fake of another mode, that the mode refuses.
    Refused(FakeException, String),
}

/// What the fallback makes of the inputs: the meta values the kernel runs on
/// (one per argument, in order), each input tensor with the identity of its
/// meta tensor (to give back an input a kernel returns), the meta tensors'
/// keys, and the device the results claim.
struct Inputs<'a> {
    acting: Acting,
    meta: SmallVec<[Value; 4]>,
    tensors: SmallVec<[(&'a Tensor, usize); 4]>,
    keys: KeySet,
    device: Option<(Device, bool)>,
    /// Two devices met: an error once every input is known not to be a
    /// real tensor refused (PyTorch checks those first).
    mismatch: Option<Error>,
}

impl<'a> Inputs<'a> {
    /// The fake of an input: itself, or a real tensor's fake if the mode
    /// converts real tensors (`None` if it does not).
    fn fake(&mut self, t: &Tensor) -> Option<Result<Tensor>> {
        match self.classify(t) {
            Input::AsIs => Some(Ok(t.clone())),
            Input::Converted(f) => Some(Ok(f)),
            Input::Refused(..) => None,
        }
    }

    /// PyTorch's `validate_and_convert_non_fake_tensors` for one tensor.
    fn classify(&mut self, t: &Tensor) -> Input {
        if t.is_wrapped_number() || self.acting.is_ours(t) {
            return Input::AsIs;
        }
        if self.acting.allows_non_fake_inputs() {
            if t.is_fake() {
                return Input::AsIs;
            }
            return match self.acting.mode.as_ref().map(|m| m.from_tensor(t)) {
                Some(Ok(f)) => Input::Converted(f),
                Some(Err(e)) => Input::Refused(FakeException::NonFakeInput, e.to_string()),
                None => Input::AsIs,
            };
        }
        match mode_of(t) {
            Some(theirs) => Input::Refused(
                FakeException::MixedModes,
                format!(
                    "Mixing fake modes NYI x.fake_mode={} vs self={}",
                    mode_repr(theirs.addr()),
                    mode_repr(self.acting.addr)
                ),
            ),
            None if t.is_fake() => Input::AsIs,
            None => Input::Refused(FakeException::NonFakeInput, String::new()),
        }
    }

    /// The meta tensor of an input (a fake, or a real tensor the mode
    /// converts), noting its device (PyTorch's common-device rule: a 0-dim
    /// CPU tensor goes with any device; two other devices are an error). A
    /// Python number given for a tensor stays as it is.
    fn meta_of(&mut self, op: &OpSchema, args: &[Value], t: &'a Tensor) -> Result<Tensor> {
        if t.is_wrapped_number() {
            self.keys = self.keys | t.key_set();
            return Ok(t.clone());
        }
        let converted;
        let fake = match self.classify(t) {
            Input::AsIs => t,
            Input::Converted(f) => {
                converted = f;
                &converted
            }
            Input::Refused(FakeException::NonFakeInput, _) => {
                return Err(fake_error(
                    FakeException::NonFakeInput,
                    format!(
                        "Please convert all Tensors to FakeTensors first or instantiate FakeTensorMode with 'allow_non_fake_inputs'. Found in {}",
                        render_call(op, args)
                    ),
                ))
            }
            Input::Refused(kind, message) => return Err(fake_error(kind, message)),
        };
        let (d, scalar) = (fake.device(), fake.dim() == 0);
        match self.device {
            None => self.device = Some((d, scalar)),
            Some((c, _)) if c == d => {}
            Some((_, true)) if !scalar || d != Device::Cpu => self.device = Some((d, scalar)),
            Some(_) if scalar && d == Device::Cpu => {}
            Some((c, _)) => {
                self.mismatch.get_or_insert_with(|| fake_error(
                    FakeException::DeviceMismatch,
                    format!("Expected all tensors to be on the same device, but found at least two devices, {c} and {d}!"),
                ));
            }
        }
        let meta = fake.meta_of_fake();
        self.keys = self.keys | meta.key_set();
        self.tensors.push((t, meta.identity()));
        Ok(meta)
    }

    /// The input whose meta tensor a kernel returned, as a fake.
    fn input_of(&mut self, meta: &Tensor) -> Option<Tensor> {
        let id = meta.identity();
        let &(t, _) = self.tensors.iter().find(|(_, m)| *m == id)?;
        self.fake(t).and_then(Result::ok)
    }
}

/// PyTorch's `render_call`: the overload and the arguments a dispatch
/// handler sees, real tensors printed without their data.
fn render_call(op: &OpSchema, args: &[Value]) -> String {
    let (args, kwargs) = crate::normalize::normalize(op, args);
    let mut parts: Vec<String> = args.iter().map(render).collect();
    parts.extend(kwargs.iter().map(|(k, v)| format!("{k}={}", render(v))));
    format!("{}({})", op_overload_name(op), parts.join(", "))
}

fn render(v: &Value) -> String {
    /// PyTorch's `repr` under `printoptions(threshold=0, edgeitems=0)`: no
    /// elements but a 0-dim tensor's one, the size, the dtype unless it is
    /// one a literal gets (float32, int64, bool).
    fn tensor(t: &Tensor) -> String {
        if t.is_fake() {
            return t.to_string();
        }
        let shape = t.shape();
        let body = match t.item() {
            Ok(x) if shape.is_empty() => one_element(x),
            _ => "[...]".to_string(),
        };
        let mut s = format!("tensor({body}, size={}", repr_tuple(&shape));
        if !matches!(t.dtype(), DType::Float32 | DType::Int64 | DType::Bool) {
            s.push_str(&format!(", dtype={}", t.dtype()));
        }
        s.push(')');
        s
    }
    match v {
        Value::Tensor(t) => tensor(t),
        Value::TensorList(ts) => {
            format!("[{}]", ts.iter().map(tensor).collect::<Vec<_>>().join(", "))
        }
        other => other.to_string(),
    }
}

/// One element as PyTorch's tensor formatter prints it alone: `2.` for an
/// integral float, `2.5000` (four decimals), `1.0000e-05` / `1.0000e+09`
/// beyond 1e8 or below 1e-4, integers and booleans as they are.
fn one_element(x: Scalar) -> String {
    let v = match x {
        Scalar::Float(v) => v,
        other => return Value::from(other).to_string(),
    };
    if !v.is_finite() {
        return format!("{v}");
    }
    let a = v.abs();
    let sci = |v: f64| {
        let s = format!("{v:.4e}");
        // Rust writes `1.0000e-5`; Python `1.0000e-05`.
        match s.split_once('e') {
            Some((m, e)) => {
                let (sign, digits) = match e.strip_prefix('-') {
                    Some(d) => ('-', d),
                    None => ('+', e),
                };
                format!("{m}e{sign}{digits:0>2}")
            }
            None => s,
        }
    };
    if v.fract() == 0.0 {
        if a > 1e8 {
            sci(v)
        } else {
            format!("{v:.0}.")
        }
    } else if !(1e-4..=1e8).contains(&a) {
        sci(v)
    } else {
        format!("{v:.4}")
    }
}

/// The `Fake` key's fallback: every call on fake tensors, and every call
/// under an entered mode.
fn fake_fallback(op: &Operator, _keys: KeySet, args: &[Value]) -> Result<Vec<Value>> {
    let schema = op.schema;
    if schema.tags.contains(&"dynamic_output_shape") {
        return Err(fake_error(
            FakeException::DynamicOutputShape,
            op_overload_name(schema),
        ));
    }
    if schema.tags.contains(&"data_dependent_output") {
        return Err(fake_error(
            FakeException::DataDependentOutput,
            op_overload_name(schema),
        ));
    }
    let mut inputs = Inputs {
        acting: Acting::find(args),
        meta: SmallVec::with_capacity(args.len()),
        tensors: SmallVec::new(),
        keys: KeySet::EMPTY,
        device: None,
        mismatch: None,
    };
    for v in args {
        let m = v.try_map_tensors(&mut |t| inputs.meta_of(schema, args, t))?;
        inputs.meta.push(m);
    }
    if let Some(e) = inputs.mismatch.take() {
        return Err(e);
    }
    if let Some(kernel) = fake_kernel(op) {
        let fakes = args
            .iter()
            .map(|v| {
                v.try_map_tensors(&mut |t| match t.is_wrapped_number() {
                    true => Ok(t.clone()),
                    // Every real tensor was converted for its meta tensor.
                    false => inputs.fake(t).unwrap_or_else(|| Ok(t.clone())),
                })
            })
            .collect::<Result<Vec<_>>>()?;
        return run_fake_kernel(&kernel, &inputs, &fakes);
    }
    // A device asked for (a factory's, `_to_copy`'s) is the one the result
    // claims, else the inputs' (PyTorch's fake `to_copy` and factory
    // handlers); the kernel runs on the meta device either way.
    let mut requested = None;
    for (a, v) in schema.args.iter().zip(inputs.meta.iter_mut()) {
        if is_device(&a.ty) {
            if let Value::Device(d) = v {
                requested = Some(*d);
            }
            *v = Value::Device(Device::Meta);
        }
    }
    let device = requested
        .or(inputs.device.map(|(d, _)| d))
        .unwrap_or(Device::Cpu);
    let outs = {
        let _below = LocalKeys::exclude(FAKE_KEY);
        let keys = inputs.keys | KeySet::for_device(Device::Meta);
        op.call_with_keys(keys, &inputs.meta)
            .map_err(|e| unsupported(schema, e))?
    };
    // Inputs the kernel wrote may have a new geometry (`resize_`, `t_`).
    let meta = std::mem::take(&mut inputs.meta);
    for ((a, v), m) in schema.args.iter().zip(args).zip(&meta) {
        if let (true, Value::Tensor(t), Value::Tensor(m)) =
            (a.alias.is_some_and(|x| x.is_write), v, m)
        {
            if let Some(Ok(fake)) = inputs.fake(t) {
                fake.take_geometry_of(m);
            }
        }
    }
    let stamp = inputs.acting.stamp.clone();
    Ok(map_tensors(outs, |m| match inputs.input_of(&m) {
        Some(input) => input,
        None if m.device() == Device::Meta => m.into_fake(device, stamp.clone()),
        None => m,
    }))
}

/// Results with every tensor replaced by `f` of it.
fn map_tensors(outs: Vec<Value>, mut f: impl FnMut(Tensor) -> Tensor) -> Vec<Value> {
    outs.into_iter()
        .map(|v| match v {
            Value::Tensor(t) => Value::Tensor(f(t)),
            Value::TensorList(ts) => Value::TensorList(ts.into_iter().map(&mut f).collect()),
            Value::OptTensorList(ts) => {
                Value::OptTensorList(ts.into_iter().map(|t| t.map(&mut f)).collect())
            }
            other => other,
        })
        .collect()
}

/// A custom operator's fake kernel, on the fakes (real tensors already
/// converted if the mode allows them), with the fake key included so that
/// what it calls is fake too; meta tensors it returns become fakes on the
/// inputs' device.
fn run_fake_kernel(kernel: &FakeKernel, inputs: &Inputs, fakes: &[Value]) -> Result<Vec<Value>> {
    let device = inputs.device.map_or(Device::Cpu, |(d, _)| d);
    let outs = {
        // Under the acting mode, as PyTorch runs a fake impl.
        let _mode = inputs.acting.mode.as_ref().map(FakeTensorMode::enter);
        let _fake = LocalKeys::include(FAKE_KEY);
        kernel(fakes)?
    };
    let stamp = &inputs.acting.stamp;
    Ok(map_tensors(outs, |t| match t.device() {
        Device::Meta if !t.is_fake() => Tensor::fake_of_meta(&t, device, stamp.clone()),
        _ => t,
    }))
}

fn is_device(t: &Ty) -> bool {
    match t {
        Ty::Base(b) => *b == opforge_schema::model::BaseType::Device,
        Ty::Optional(inner) => is_device(inner),
        _ => false,
    }
}

/// A missing Meta kernel is PyTorch's `UnsupportedOperatorException`; other
/// errors are the kernel's own.
fn unsupported(schema: &OpSchema, e: Error) -> Error {
    let missing = match &e {
        Error::NoKernel(n) => n.key == DispatchKey::Meta,
        Error::NotImplemented(m) => m
            .as_str()
            .contains("attempted to run this operator with Meta tensors"),
        _ => false,
    };
    if missing {
        fake_error(FakeException::UnsupportedOperator, op_overload_name(schema))
    } else {
        e
    }
}

#[cfg(test)]
mod tests;
