//! Custom autograd Functions: PyTorch's `torch.autograd.Function`, with its
//! rules (`torch/autograd/function.py`, `torch/csrc/autograd/python_function.cpp`)
//! and its messages.
//!
//! A [`Function`] is a type (usually a unit struct) with a `forward`, a
//! `backward` and optionally a `jvp`; [`Function::apply`] runs `forward` with
//! grad mode off and, when an input requires grad, records one node named
//! `<Name>Backward` whose backward is the Function's. Both of PyTorch's
//! styles are there:
//!
//! - *separate*: [`Function::forward`] computes, [`Function::setup_context`]
//!   then fills the context from the inputs and the output;
//! - *combined*: [`Function::forward_with_ctx`] does both (and can save
//!   intermediate values without returning them).
//!
//! The context ([`FunctionCtx`]) carries what PyTorch's `ctx` does:
//! `save_for_backward` / `saved_tensors` (checked against in-place writes,
//! freed after a backward without `retain_graph`), `needs_input_grad`,
//! `mark_dirty`, `mark_non_differentiable`, `set_materialize_grads`, and the
//! Function's own typed state in [`FunctionCtx::state`] (PyTorch's
//! `ctx.constant = constant`).
//!
//! ```
//! use opforge::autograd::{Function, FunctionCtx};
//! use opforge::{Result, Scalar, Tensor};
//!
//! /// `tensor * constant`, the `MulConstant` of PyTorch's "Extending
//! /// torch.autograd" notes.
//! struct MulConstant;
//!
//! impl Function for MulConstant {
//!     type Args = (Tensor, f64);
//!     type Output = Tensor;
//!     type State = f64;
//!
//!     fn forward((tensor, constant): &Self::Args) -> Result<Tensor> {
//!         tensor.mul_scalar(Scalar::Float(*constant))
//!     }
//!
//!     fn setup_context(ctx: &mut FunctionCtx<f64>, (_, constant): &Self::Args, _: &Tensor) -> Result<()> {
//!         ctx.state = *constant;
//!         Ok(())
//!     }
//!
//!     fn backward(ctx: &FunctionCtx<f64>, grads: Vec<Option<Tensor>>) -> Result<Vec<Option<Tensor>>> {
//!         let g = grads[0].as_ref().expect("materialized");
//!         Ok(vec![Some(g.mul_scalar(Scalar::Float(ctx.state))?), None])
//!     }
//! }
//!
//! let x = Tensor::from_vec(vec![1.0f32, 2.0], &[2])?;
//! x.set_requires_grad(true)?;
//! let y = MulConstant::apply((x.clone(), 3.0))?;
//! assert_eq!(y.grad_fn().unwrap().node.name(), "MulConstantBackward");
//! y.sum()?.backward()?;
//! assert_eq!(x.grad().unwrap().to_vec::<f32>()?, vec![3.0, 3.0]);
//! # Ok::<(), opforge::Error>(())
//! ```
//!
//! Where Rust's types rule out one of PyTorch's errors, there is no run-time
//! check for it: `save_for_backward` takes tensors only (PyTorch's
//! "save_for_backward can only save variables, but argument 1 is of type
//! int"), a Function cannot be instantiated or called as a legacy function,
//! and `apply`'s arguments are checked against `Args` when the program
//! compiles.

use super::forward_ad;
use super::mode::{is_grad_enabled, no_grad};
use super::node::{
    gradient_edge, Backward, BackwardCtx, Edges, Grads, InputMeta, InputMetas, Node,
    ReentrantBackward,
};
use super::record::{record, set_history_mut, Handles};
use super::saved::SavedTensor;
use crate::at;
use crate::dtype::{DType, Device};
use crate::error::{Error, Result};
use crate::tensor::{CreationMeta, GraphNode, Tensor};
use smallvec::{smallvec, SmallVec};
use std::any::TypeId;
use std::borrow::Cow;
use std::cell::Cell;
use std::marker::PhantomData;
use std::sync::{Arc, Mutex, MutexGuard, RwLock, Weak};

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// PyTorch's message for a Function without `backward`.
pub const NO_BACKWARD: &str = "You must implement either the backward or vjp method for your custom autograd.Function to use it with backward mode AD.";
/// PyTorch's message for a Function without `forward`.
pub const NO_FORWARD: &str =
    "You must implement the forward function for custom autograd.Function.";
/// PyTorch's message for a Function without `jvp` used in forward mode.
pub const NO_JVP: &str = "You must implement the jvp function for custom autograd.Function to use it with forward mode AD.";
/// PyTorch's message for an input marked dirty but not returned.
pub const DIRTY_NOT_RETURNED: &str = "Some elements marked as dirty during the forward method were not returned as output. The inputs that are modified inplace must all be outputs of the Function.";
/// PyTorch's message for a dirty leaf that requires grad.
pub const DIRTY_LEAF: &str =
    "a leaf Variable that requires grad has been used in an in-place operation.";
/// PyTorch's message for differentiating a `once_differentiable` backward.
pub const ONCE_DIFFERENTIABLE: &str =
    "trying to differentiate twice a function that was marked with @once_differentiable";

/// One argument of [`Function::apply`] or one value `forward` returns: a
/// tensor, an absent tensor (`Option<Tensor>`), or any other value. Only a
/// tensor given directly is an input of the graph (PyTorch: tensors inside
/// lists are not), so `Vec<Tensor>` counts as a plain value.
///
/// A type of your own passes as a plain value with an empty impl:
/// `impl FunctionValue for MyConfig {}`.
pub trait FunctionValue {
    /// The tensor, if this value is one.
    fn as_tensor(&self) -> Option<&Tensor> {
        None
    }

    /// The tensor, if this value is one, to replace (an input returned
    /// as-is becomes a view of it).
    fn as_tensor_mut(&mut self) -> Option<&mut Tensor> {
        None
    }
}

impl FunctionValue for Tensor {
    fn as_tensor(&self) -> Option<&Tensor> {
        Some(self)
    }

    fn as_tensor_mut(&mut self) -> Option<&mut Tensor> {
        Some(self)
    }
}

impl FunctionValue for Option<Tensor> {
    fn as_tensor(&self) -> Option<&Tensor> {
        self.as_ref()
    }

    fn as_tensor_mut(&mut self) -> Option<&mut Tensor> {
        self.as_mut()
    }
}

macro_rules! plain_values {
    ($($t:ty),* $(,)?) => {
        $(impl FunctionValue for $t {})*
    };
}

plain_values!(
    f64,
    f32,
    i64,
    i32,
    u32,
    u64,
    usize,
    bool,
    (),
    String,
    &'static str,
    crate::Scalar,
    DType,
    Device,
    Option<f64>,
    Option<i64>,
    Option<bool>,
    Option<crate::Scalar>,
    Vec<i64>,
    Vec<usize>,
    Vec<f64>,
    Vec<Tensor>,
);

/// A list of values' tensors (`None`: not a tensor), inline up to four.
pub type Slots<T> = SmallVec<[Option<T>; 4]>;

/// The arguments of [`Function::apply`], or what `forward` returns: a tensor,
/// a tuple of [`FunctionValue`]s (up to eight), or a `Vec<Tensor>` (each an
/// input, or an output).
pub trait FunctionValues {
    /// Each value's tensor, in order (`None`: not a tensor).
    fn tensors(&self) -> Slots<&Tensor>;

    /// [`FunctionValues::tensors`], to replace.
    fn tensors_mut(&mut self) -> Slots<&mut Tensor>;
}

impl FunctionValues for Tensor {
    fn tensors(&self) -> Slots<&Tensor> {
        smallvec![Some(self)]
    }

    fn tensors_mut(&mut self) -> Slots<&mut Tensor> {
        smallvec![Some(self)]
    }
}

impl FunctionValues for Vec<Tensor> {
    fn tensors(&self) -> Slots<&Tensor> {
        self.iter().map(Some).collect()
    }

    fn tensors_mut(&mut self) -> Slots<&mut Tensor> {
        self.iter_mut().map(Some).collect()
    }
}

macro_rules! tuple_values {
    ($(($($name:ident $idx:tt),+))*) => {
        $(
            impl<$($name: FunctionValue),+> FunctionValues for ($($name,)+) {
                fn tensors(&self) -> Slots<&Tensor> {
                    smallvec![$(self.$idx.as_tensor()),+]
                }

                fn tensors_mut(&mut self) -> Slots<&mut Tensor> {
                    smallvec![$(self.$idx.as_tensor_mut()),+]
                }
            }
        )*
    };
}

tuple_values! {
    (A 0)
    (A 0, B 1)
    (A 0, B 1, C 2)
    (A 0, B 1, C 2, D 3)
    (A 0, B 1, C 2, D 3, E 4)
    (A 0, B 1, C 2, D 3, E 4, F 5)
    (A 0, B 1, C 2, D 3, E 4, F 5, G 6)
    (A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7)
}

/// A custom Function's context (PyTorch's `ctx`): what `forward` (or
/// `setup_context`) leaves for `backward` and `jvp`. See the module docs.
pub struct FunctionCtx<S> {
    /// The Function's own state (PyTorch's `ctx.constant = constant`). Unlike
    /// tensors saved with [`FunctionCtx::save_for_backward`], tensors kept
    /// here carry no gradient in double backward.
    pub state: S,
    needs_input_grad: SmallVec<[bool; 4]>,
    materialize_grads: bool,
    /// Set by `save_for_backward` during forward; made into `saved` once the
    /// outputs are known (a saved output is kept without its history).
    to_save: Option<Vec<Option<Tensor>>>,
    /// Behind a lock: backward reads them through a shared context, and
    /// releasing them (after a backward without `retain_graph`) may happen
    /// while a nested backward of the same node reads them.
    saved: Mutex<Vec<Option<SavedTensor>>>,
    dirty: Vec<Tensor>,
    non_differentiable: Vec<Tensor>,
}

impl<S> FunctionCtx<S> {
    fn new(state: S, needs_input_grad: SmallVec<[bool; 4]>) -> FunctionCtx<S> {
        FunctionCtx {
            state,
            needs_input_grad,
            materialize_grads: true,
            to_save: None,
            saved: Mutex::new(Vec::new()),
            dirty: Vec::new(),
            non_differentiable: Vec::new(),
        }
    }

    /// Saves tensors (or `None`s, kept as `None`) for backward, replacing
    /// what was saved before. Call it from `forward_with_ctx` or
    /// `setup_context`. In backward, [`FunctionCtx::saved_tensors`] gives
    /// them back, checked against in-place writes made since; unlike
    /// [`FunctionCtx::state`], they carry gradients in double backward.
    ///
    /// ```
    /// # use opforge::autograd::FunctionCtx;
    /// # fn f(ctx: &mut FunctionCtx<()>, input: &opforge::Tensor, bias: Option<&opforge::Tensor>) {
    /// ctx.save_for_backward([Some(input), bias]);
    /// # }
    /// ```
    pub fn save_for_backward<'a, T: Into<Option<&'a Tensor>>>(
        &mut self,
        tensors: impl IntoIterator<Item = T>,
    ) {
        self.to_save = Some(tensors.into_iter().map(|t| t.into().cloned()).collect());
    }

    /// The saved tensors, in the order saved. An error if one was written in
    /// place since (PyTorch's "one of the variables needed for gradient
    /// computation has been modified by an inplace operation" message), or if
    /// the graph was freed by an earlier backward.
    pub fn saved_tensors(&self) -> Result<Vec<Option<Tensor>>> {
        if let Some(pending) = &self.to_save {
            return Ok(pending.clone());
        }
        lock(&self.saved)
            .iter()
            .map(|s| s.as_ref().map(SavedTensor::unpack).transpose())
            .collect()
    }

    /// One flag per argument of `apply`: is it a tensor that requires grad?
    /// (`false` for every other value.)
    pub fn needs_input_grad(&self) -> &[bool] {
        &self.needs_input_grad
    }

    /// Declares inputs `forward` modified in place. They must be returned
    /// among the outputs; each output that is one gets the Function as its
    /// history (a leaf that requires grad is PyTorch's error).
    pub fn mark_dirty<'a>(&mut self, tensors: impl IntoIterator<Item = &'a Tensor>) {
        self.dirty.extend(tensors.into_iter().cloned());
    }

    /// Declares outputs that are not differentiable: they do not require
    /// grad, and backward still receives a gradient for them (zeros, when
    /// gradients are materialized).
    pub fn mark_non_differentiable<'a>(&mut self, tensors: impl IntoIterator<Item = &'a Tensor>) {
        self.non_differentiable.extend(tensors.into_iter().cloned());
    }

    /// With `true` (the default), an output's gradient that backward would
    /// receive as undefined arrives as zeros of the output's shape, and
    /// likewise `jvp`'s tangents; with `false` it arrives as `None`.
    pub fn set_materialize_grads(&mut self, on: bool) {
        self.materialize_grads = on;
    }

    /// See [`FunctionCtx::set_materialize_grads`].
    pub fn materialize_grads(&self) -> bool {
        self.materialize_grads
    }
}

impl<S> std::fmt::Debug for FunctionCtx<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FunctionCtx")
            .field("needs_input_grad", &self.needs_input_grad)
            .field("materialize_grads", &self.materialize_grads)
            .field("saved", &lock(&self.saved).len())
            .finish_non_exhaustive()
    }
}

/// A custom autograd Function (PyTorch's `torch.autograd.Function`): see the
/// module docs. Implement `forward` and `setup_context` (the separate style)
/// or `forward_with_ctx` (the combined style), and `backward`; `jvp` for
/// forward mode.
pub trait Function: Sized + 'static {
    /// What [`Function::apply`] takes: a tensor, a tuple of tensors,
    /// `Option<Tensor>`s and other values, or a `Vec<Tensor>`.
    type Args: FunctionValues;
    /// What `forward` returns: a tensor, a tuple, or a `Vec<Tensor>`.
    type Output: FunctionValues;
    /// The Function's own state in the context ([`FunctionCtx::state`]);
    /// `()` for none. `Sync`, because backward reads it through a shared
    /// context (see [`Function::backward`]).
    type State: Default + Send + Sync + 'static;

    /// PyTorch's `@once_differentiable` on `backward`: it runs with grad mode
    /// off, and differentiating its results is an error
    /// ([`ONCE_DIFFERENTIABLE`]).
    const ONCE_DIFFERENTIABLE: bool = false;

    /// The class name; the node is `<name>Backward`. The default is the
    /// type's own name (`LinearFunction`).
    fn name() -> Cow<'static, str> {
        let full = std::any::type_name::<Self>();
        let path = full.split('<').next().unwrap_or(full);
        Cow::Borrowed(path.rsplit("::").next().unwrap_or(path))
    }

    /// The separate style's forward: computes the outputs from the
    /// arguments (with grad mode off).
    fn forward(args: &Self::Args) -> Result<Self::Output> {
        let _ = args;
        Err(Error::NotImplemented(NO_FORWARD.into()))
    }

    /// The separate style's second half: fills the context from the
    /// arguments and the output (with grad mode off).
    fn setup_context(
        ctx: &mut FunctionCtx<Self::State>,
        inputs: &Self::Args,
        output: &Self::Output,
    ) -> Result<()> {
        let _ = (ctx, inputs, output);
        Ok(())
    }

    /// The combined style: computes the outputs and fills the context at
    /// once. The default runs [`Function::forward`] then
    /// [`Function::setup_context`].
    fn forward_with_ctx(
        ctx: &mut FunctionCtx<Self::State>,
        args: &Self::Args,
    ) -> Result<Self::Output> {
        let output = Self::forward(args)?;
        Self::setup_context(ctx, args, &output)?;
        Ok(output)
    }

    /// One gradient per output in (`None` only where undefined and
    /// materialization is off, or for an output that is not a tensor); one
    /// per argument of `apply` out, `None` for arguments that are not tensors
    /// or need no gradient. Trailing `None`s beyond the arguments are
    /// allowed. A gradient of another shape is summed to the input's shape if
    /// it broadcasts to it, and an error otherwise.
    ///
    /// The context is shared, as PyTorch's `ctx` is: backward may run again
    /// while it runs (it may itself run backward through a graph that holds
    /// its node, or a retained graph may be run from several threads at
    /// once), so state it changes is behind a lock or an atomic of its own.
    fn backward(
        ctx: &FunctionCtx<Self::State>,
        grad_outputs: Vec<Option<Tensor>>,
    ) -> Result<Vec<Option<Tensor>>> {
        let _ = (ctx, grad_outputs);
        Err(Error::NotImplemented(NO_BACKWARD.into()))
    }

    /// Forward mode: one tangent per argument of `apply` in (`None` for
    /// values that are not tensors), one per output out. Called after
    /// `forward`, before `apply` returns, when an input has a tangent.
    fn jvp(
        ctx: &mut FunctionCtx<Self::State>,
        tangents: Vec<Option<Tensor>>,
    ) -> Result<Vec<Option<Tensor>>> {
        let _ = (ctx, tangents);
        Err(Error::NotImplemented(NO_JVP.into()))
    }

    /// Runs the Function (PyTorch's `Function.apply`): `forward` with grad
    /// mode off, then, if grad mode is on and an input requires grad, one
    /// `<Name>Backward` node for the outputs, and the outputs' tangents from
    /// `jvp` when an input has one.
    fn apply(args: Self::Args) -> Result<Self::Output> {
        apply::<Self>(args)
    }
}

/// Zeros of an output's sizes, dtype and device (a materialized gradient).
fn zeros(meta: &InputMeta) -> Result<Tensor> {
    let sizes: Vec<i64> = meta.shape.iter().map(|&d| d as i64).collect();
    at::zeros(&sizes, Some(meta.dtype), None, Some(meta.device), None)
}

/// The node's backward: the Function's, with PyTorch's checks around it.
/// What it runs is shared ([`Backward::reentrant`]): the engine runs the
/// user's backward without holding the node's lock, so that it may run
/// backward through a graph holding this very node, as in PyTorch.
struct FunctionBackward<F: Function>(Arc<FunctionNode<F>>);

/// A Function node's context and what its checks need.
struct FunctionNode<F: Function> {
    ctx: FunctionCtx<F::State>,
    name: &'static str,
    /// Per argument of `apply`: is it a tensor?
    inputs: SmallVec<[bool; 4]>,
    _f: PhantomData<fn() -> F>,
}

impl<F: Function> FunctionNode<F> {
    /// Checks the user's gradients (count, non-tensor positions) and keeps
    /// one per tensor input (the engine checks their sizes and dtypes against
    /// the inputs', as for every node).
    fn validate(&self, grads: Vec<Option<Tensor>>) -> Result<Grads> {
        let n = self.inputs.len();
        if grads.len() < n || grads[n..].iter().any(Option::is_some) {
            return Err(Error::Runtime(
                format!(
                    "function {} returned an incorrect number of gradients (expected {n}, got {})",
                    self.name,
                    grads.len()
                )
                .into(),
            ));
        }
        let mut out = Grads::new();
        for (i, (g, is_tensor)) in grads.into_iter().zip(&self.inputs).enumerate() {
            if !*is_tensor {
                if g.is_some() {
                    return Err(Error::Runtime(
                        format!(
                            "function {} returned a gradient different than None at position {}, but the corresponding forward input was not a Variable",
                            self.name,
                            i + 1
                        )
                        .into(),
                    ));
                }
                continue;
            };
            out.push(g);
        }
        Ok(out)
    }

    fn release(&self) {
        for s in lock(&self.ctx.saved).iter_mut().flatten() {
            s.release();
        }
    }
}

impl<F: Function> ReentrantBackward for FunctionNode<F> {
    fn apply(&self, grads: Grads, ctx: &BackwardCtx) -> Result<Grads> {
        let mut incoming: Vec<Option<Tensor>> = Vec::with_capacity(grads.len());
        for (i, g) in grads.into_iter().enumerate() {
            incoming.push(match (g, ctx.input_meta(i)) {
                (Some(g), _) => Some(g),
                (None, Some(meta)) if self.ctx.materialize_grads => Some(zeros(meta)?),
                (None, _) => None,
            });
        }
        if !F::ONCE_DIFFERENTIABLE {
            let grads = F::backward(&self.ctx, incoming)?;
            return self.validate(grads);
        }
        // `once_differentiable`: backward runs with grad mode off; if a
        // gradient coming in requires grad (double backward is being
        // recorded), each result gets an `Error` node over those gradients.
        let recorded: Vec<Tensor> = match is_grad_enabled() {
            true => incoming
                .iter()
                .flatten()
                .filter(|g| g.requires_grad())
                .cloned()
                .collect(),
            false => Vec::new(),
        };
        let grads = {
            let _off = no_grad();
            F::backward(&self.ctx, incoming)?
        };
        let grads = self.validate(grads)?;
        if !recorded.is_empty() {
            let inputs: Vec<&Tensor> = recorded.iter().collect();
            for g in grads.iter().flatten() {
                record("Error", &inputs, &[g], |_| Ok(OnceDifferentiableError))?;
            }
        }
        Ok(grads)
    }
}

impl<F: Function> Backward for FunctionBackward<F> {
    fn apply(&mut self, grads: Grads, ctx: &BackwardCtx) -> Result<Grads> {
        self.0.apply(grads, ctx)
    }

    fn reentrant(&self) -> Option<Arc<dyn ReentrantBackward>> {
        Some(self.0.clone())
    }

    fn release(&mut self) {
        self.0.release();
    }

    /// The saved tensors, and the Function's own state, which may hold
    /// tensors too (PyTorch's `ctx.x = x`). A state without drop glue owns
    /// none (a `Tensor` has a destructor). While a backward of the node still
    /// runs (it holds the shared part), the state goes with its last holder.
    fn before_drop(&mut self) {
        self.0.release();
        if std::mem::needs_drop::<F::State>() {
            if let Some(node) = Arc::get_mut(&mut self.0) {
                super::node::drop_boxed_later(Box::new(std::mem::take(&mut node.ctx.state)));
            }
        }
    }

    /// Tensors live only in what `save_for_backward` kept and, perhaps, in
    /// the Function's own state: the node of a Function that saved nothing
    /// and keeps a state without drop glue is dropped on the spot.
    fn owns_tensors(&self) -> bool {
        lock(&self.0.ctx.saved).iter().any(Option::is_some) || std::mem::needs_drop::<F::State>()
    }
}

/// The backward of a `once_differentiable` Function's results: fails.
struct OnceDifferentiableError;

impl Backward for OnceDifferentiableError {
    fn apply(&mut self, _: Grads, _: &BackwardCtx) -> Result<Grads> {
        Err(Error::Runtime(ONCE_DIFFERENTIABLE.into()))
    }

    fn release(&mut self) {}

    fn owns_tensors(&self) -> bool {
        false
    }
}

/// `<Name>Backward` for `F`, made once per Function type (a recorded call
/// then allocates no name), and remembered on each thread for the type it
/// was last asked for (a loop applying one Function locks nothing).
fn node_name<F: Function>() -> &'static str {
    thread_local! {
        static LAST: Cell<Option<(TypeId, &'static str)>> = const { Cell::new(None) };
    }
    static NAMES: RwLock<Vec<(TypeId, &'static str)>> = RwLock::new(Vec::new());
    let id = TypeId::of::<F>();
    if let Ok(Some((t, name))) = LAST.try_with(Cell::get) {
        if t == id {
            return name;
        }
    }
    let found = NAMES
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .find(|(t, _)| *t == id)
        .map(|(_, n)| *n);
    let name = match found {
        Some(name) => name,
        None => {
            let mut names = NAMES.write().unwrap_or_else(|e| e.into_inner());
            match names.iter().find(|(t, _)| *t == id) {
                Some((_, n)) => n,
                None => {
                    // One leaked string per Function type, for the life of
                    // the process.
                    let name: &'static str =
                        Box::leak(format!("{}Backward", F::name()).into_boxed_str());
                    names.push((id, name));
                    name
                }
            }
        }
    };
    let _ = LAST.try_with(|l| l.set(Some((id, name))));
    name
}

fn position(list: &[Tensor], t: &Tensor) -> bool {
    list.iter().any(|x| x.is_same(t))
}

/// [`Function::apply`]: see there.
pub fn apply<F: Function>(args: F::Args) -> Result<F::Output> {
    let inputs: Slots<&Tensor> = args.tensors();
    let mut needs: SmallVec<[bool; 4]> = SmallVec::with_capacity(inputs.len());
    for t in &inputs {
        needs.push(t.is_some_and(Tensor::requires_grad));
    }
    let executable = is_grad_enabled() && needs.iter().any(|&b| b);
    // The inputs' tangents, if forward mode is on and one has any.
    let tangents: Slots<Tensor> = match forward_ad::current_level() {
        Some(_) => inputs
            .iter()
            .map(|t| t.and_then(forward_ad::tangent))
            .collect(),
        None => Slots::new(),
    };
    let forward_mode = tangents.iter().any(Option::is_some);
    let mut ctx = FunctionCtx::new(F::State::default(), needs);

    let mut output = {
        let _off = no_grad();
        let _fw = forward_ad::suspend();
        F::forward_with_ctx(&mut ctx, &args)?
    };

    // Dirty inputs must be returned.
    if !ctx.dirty.is_empty() {
        let returned = output.tensors();
        for d in &ctx.dirty {
            if !returned.iter().flatten().any(|o| o.is_same(d)) {
                return Err(Error::Runtime(DIRTY_NOT_RETURNED.into()));
            }
        }
    }

    // An input returned as-is (and not modified) becomes a view of it, so
    // that the Function's history does not replace the input's; the tensor
    // forward returned is kept (`originals`, by output) for `attach`, which
    // recognizes a saved output by it.
    let mut originals: Slots<Tensor> = Slots::new();
    for (nr, slot) in output.tensors_mut().into_iter().enumerate() {
        let Some(t) = slot else { continue };
        let is_input = inputs.iter().flatten().any(|i| i.is_same(t));
        if is_input && !position(&ctx.dirty, t) {
            let mut alias = super::saved::shallow_detach(t)?;
            let creation = match executable {
                true => CreationMeta::InCustomFunction,
                false => CreationMeta::NoGradMode,
            };
            alias.mark_view(t, creation);
            if originals.len() <= nr {
                originals.resize(nr + 1, None);
            }
            originals[nr] = Some(std::mem::replace(t, alias));
        }
    }

    let mut finals: Slots<&mut Tensor> = output.tensors_mut();
    if forward_mode {
        let shared: Slots<&Tensor> = finals.iter().map(|t| t.as_deref()).collect();
        run_jvp::<F>(&mut ctx, &inputs, tangents, &shared)?;
    }
    if executable {
        attach::<F>(ctx, &inputs, &originals, &mut finals)?;
    }
    drop(finals);
    Ok(output)
}

/// Forward mode through the Function: its `jvp` given the inputs' tangents
/// (zeros for an input without one, unless materializing is off), each
/// differentiable output given the tangent `jvp` returns for it.
fn run_jvp<F: Function>(
    ctx: &mut FunctionCtx<F::State>,
    inputs: &[Option<&Tensor>],
    tangents: Slots<Tensor>,
    outputs: &[Option<&Tensor>],
) -> Result<()> {
    let _fw = forward_ad::suspend();
    let mut given = Vec::with_capacity(tangents.len());
    for (t, input) in tangents.into_iter().zip(inputs) {
        given.push(match (t, input) {
            (Some(t), _) => Some(t),
            (None, Some(input)) if ctx.materialize_grads => {
                Some(at::zeros_like(input, None, None, None, None, None)?)
            }
            (None, _) => None,
        });
    }
    let made = F::jvp(ctx, given)?;
    drop(_fw);
    if made.len() != outputs.len() {
        return Err(Error::Runtime(
            format!(
                "Function's jvp returned an invalid number of forward gradients (expected {} but got {})",
                outputs.len(),
                made.len()
            )
            .into(),
        ));
    }
    for (out, t) in outputs.iter().zip(made) {
        if let (Some(out), Some(t)) = (out, t) {
            if out.dtype().is_floating_point() && !position(&ctx.non_differentiable, out) {
                forward_ad::set_tangent(out, t)?;
            }
        }
    }
    Ok(())
}

/// Records the Function's node and gives the outputs their history (PyTorch's
/// `_wrap_outputs`): dirty inputs are rebased onto it, non-differentiable and
/// integer outputs get none, views made inside forward are marked so that an
/// in-place write to them is refused. Saved tensors that are outputs are kept
/// without their history (no cycle). `originals` holds, by output, the
/// tensor forward returned where `apply` replaced it with a view.
fn attach<F: Function>(
    mut ctx: FunctionCtx<F::State>,
    inputs: &[Option<&Tensor>],
    originals: &[Option<Tensor>],
    finals: &mut [Option<&mut Tensor>],
) -> Result<()> {
    let dirty = std::mem::take(&mut ctx.dirty);
    let non_differentiable = std::mem::take(&mut ctx.non_differentiable);
    if !dirty.is_empty() {
        let first_input = inputs.iter().flatten().next();
        for (nr, out) in finals.iter().enumerate() {
            let Some(out) = out.as_deref().filter(|o| position(&dirty, o)) else {
                continue;
            };
            if out.is_leaf() && out.requires_grad() {
                return Err(Error::Runtime(DIRTY_LEAF.into()));
            }
            let first = first_input.is_some_and(|f| f.is_same(out));
            if out.view_of().is_some() && (nr != 0 || finals.len() != 1 || !first) {
                return Err(Error::NotImplemented(
                    "a custom Function that modifies a view in place is supported when the view is its first tensor argument and its only output".into(),
                ));
            }
        }
    }

    let name = node_name::<F>();
    let mut edges = Edges::with_capacity(inputs.len());
    let mut is_tensor: SmallVec<[bool; 4]> = SmallVec::with_capacity(inputs.len());
    for t in inputs {
        is_tensor.push(t.is_some());
        if let Some(t) = t {
            edges.push(gradient_edge(t));
        }
    }
    let to_save = ctx.to_save.take().unwrap_or_default();
    // A fresh result (only `apply` holds it) is read without its lock.
    let node_meta = match finals {
        [one] => InputMetas::from_buf([one.as_deref_mut().map(InputMeta::of_owned)]),
        _ => finals
            .iter_mut()
            .map(|t| t.as_deref_mut().map(InputMeta::of_owned))
            .collect(),
    };
    // What forward returned as output `nr`.
    let returned = |nr: usize| match originals.get(nr) {
        Some(Some(t)) => Some(t),
        _ => finals[nr].as_deref(),
    };
    let mut made: Result<()> = Ok(());
    let node = Arc::new_cyclic(|weak: &Weak<Node<FunctionBackward<F>>>| {
        let weak = || -> Weak<dyn GraphNode> { weak.clone() as Weak<_> };
        let mut saved = Vec::with_capacity(to_save.len());
        for t in &to_save {
            let Some(t) = t else {
                saved.push(None);
                continue;
            };
            // An output is saved as one (without its history); anything
            // else as an input.
            let nr = (0..finals.len()).find(|&nr| returned(nr).is_some_and(|o| o.is_same(t)));
            match nr.and_then(|nr| finals[nr].as_deref().map(|f| (nr, f))) {
                Some((nr, f)) => match SavedTensor::output(f, weak(), nr as u32) {
                    Ok(s) => saved.push(Some(s)),
                    Err(e) => {
                        made = Err(e);
                        saved.push(None);
                    }
                },
                None => saved.push(Some(SavedTensor::input(t))),
            }
        }
        ctx.saved = Mutex::new(saved);
        let backward = FunctionBackward::<F>(Arc::new(FunctionNode {
            ctx,
            name,
            inputs: is_tensor,
            _f: PhantomData,
        }));
        Node::new(Cow::Borrowed(name), node_meta, edges, backward)
    });
    made?;
    // Which outputs get the history: dirty ones, and the other floating-point
    // ones not marked non-differentiable. The last takes this handle.
    let gets_history = |out: &Tensor| {
        position(&dirty, out)
            || (out.dtype().is_floating_point() && !position(&non_differentiable, out))
    };
    let last = finals
        .iter()
        .rposition(|t| t.as_deref().is_some_and(gets_history));
    let mut handles = Handles::new(node, last);
    for (nr, out) in finals.iter_mut().enumerate() {
        let Some(out) = out.as_deref_mut().filter(|o| gets_history(o)) else {
            continue;
        };
        let Some(handle) = handles.get(nr) else {
            continue;
        };
        let is_dirty = position(&dirty, out);
        if !is_dirty {
            if let Some(v) = out.view_of() {
                v.set_creation(CreationMeta::InCustomFunction);
            }
        }
        let written_view = is_dirty && out.view_of().is_some();
        set_history_mut(out, handle, nr as u32, written_view)?;
    }
    Ok(())
}
