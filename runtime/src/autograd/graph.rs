//! The autograd graph as data: [`Node`]s joined by [`Edge`]s, as PyTorch's
//! `Node` and `Edge`. A tensor holds its history through the tensor layer's
//! narrow view of a node ([`GraphNode`]: its name, and the way back to the
//! node as this module's type, [`node_of`]); here is everything else.
//!
//! A node receives one gradient per output of the operation that made it (its
//! *inputs* in backward) and sends one per differentiable input of that
//! operation along its `next_edges`. Its computation is a [`Backward`], owning
//! what it saved, kept in the node's own allocation: a node is a
//! `Node<AddBackward0>` when it is made and an `Arc<Node>` (a
//! `Node<dyn Backward>`) everywhere after, so recording a call allocates one
//! block for the node and its backward. A leaf that requires grad gets an
//! accumulator node ([`Node::is_accumulator`], PyTorch's `AccumulateGrad`),
//! which writes its `.grad`. The leaf holds its accumulator and the
//! accumulator holds the leaf weakly (PyTorch has it the other way round, and
//! so makes a new accumulator for each graph once the last one is gone; here a
//! leaf keeps one for its life, and recording a call on leaves allocates no
//! node for them).
//!
//! Ownership only runs from outputs to inputs: a tensor holds its node, a node
//! holds its next nodes and what it saved; nothing holds a tensor that holds
//! the node (a saved output is kept without its history, a retained gradient's
//! tensor weakly), so a graph is freed when its last output is dropped — by a
//! loop, not by recursion (`Drop for Node`, [`drop_tensor_later`]).

use crate::error::{Error, Result};
use crate::tensor::{DType, Device, Dims, GraphNode, History, Tensor, WeakTensor};
use once_cell::race::OnceBox;
use smallvec::SmallVec;
use std::any::Any;
use std::borrow::Cow;
use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

static LIVE: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// The next node's sequence number on this thread (PyTorch's
    /// `at::sequence_number` is per thread too): nodes made on one thread
    /// run latest-first; numbering needs no atomic read-modify-write.
    static SEQUENCE: Cell<u64> = const { Cell::new(0) };
}

/// How many graph nodes are alive in the process (a debugging and testing
/// figure: a loop that builds and drops graphs must keep it flat).
pub fn live_nodes() -> usize {
    LIVE.load(Ordering::Relaxed)
}

fn lock<T: ?Sized>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A tensor's history as autograd reads it ([`Tensor::grad_fn`]): the node
/// that computed it and which of that node's outputs it is (PyTorch's
/// `grad_fn` and `output_nr`).
#[derive(Clone)]
pub struct GradFn {
    /// The node.
    pub node: Arc<Node>,
    /// Which of the node's outputs the tensor is.
    pub output_nr: u32,
}

impl std::fmt::Debug for GradFn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "<{} output {}>", self.node.name(), self.output_nr)
    }
}

impl Tensor {
    /// The tensor's history (`grad_fn` and `output_nr`), if it has one, with
    /// the node as autograd's type. A view whose storage was written since
    /// its history was set gets a new one from its base's first
    /// (`Tensor::history`).
    #[inline(always)]
    pub fn grad_fn(&self) -> Option<GradFn> {
        self.history().map(|h| GradFn {
            node: into_node(h.node),
            output_nr: h.output_nr,
        })
    }
}

/// A new hook's id: what its handle removes it by (unique in the process).
pub(crate) fn next_hook_id() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// A hook on a tensor's gradient (`register_hook`): it sees the gradient and
/// may return a replacement.
pub type GradHook = Arc<dyn Fn(&Tensor) -> Result<Option<Tensor>> + Send + Sync>;

/// Where a gradient goes: the node that receives it and which of its inputs
/// (the forward output number) it arrives at.
#[derive(Clone)]
pub struct Edge {
    /// The receiving node.
    pub node: Arc<Node>,
    /// Which of its inputs.
    pub input_nr: u32,
}

impl std::fmt::Debug for Edge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "({}, {})", self.node.name(), self.input_nr)
    }
}

/// A node's edges, one per differentiable input of the forward call (`None`:
/// that input needs no gradient): inline up to two, so recording a unary or
/// binary call allocates no edge list.
pub type Edges = SmallVec<[Option<Edge>; 2]>;

/// Gradients in and out of a [`Backward`]: one per forward output in, one per
/// differentiable input out (`None`: no gradient). Inline up to two, so a
/// unary or binary node's backward allocates no list.
pub type Grads = SmallVec<[Option<Tensor>; 2]>;

/// What the engine checks a gradient arriving at a node's input against
/// (PyTorch's `InputMetadata`): the sizes, dtype and device of the forward
/// output the input stands for, taken when the node is recorded (the sizes
/// inline up to five dimensions, as a tensor keeps them). A leaf's
/// accumulator reads its leaf's instead. A custom Function's backward makes
/// the zeros of a missing gradient from it.
#[derive(Clone, Debug, PartialEq)]
pub struct InputMeta {
    /// The forward output's sizes.
    pub shape: Dims,
    /// The forward output's dtype.
    pub dtype: DType,
    /// The forward output's device.
    pub device: Device,
}

impl InputMeta {
    /// `t`'s sizes, dtype and device.
    pub fn of(t: &Tensor) -> InputMeta {
        InputMeta {
            shape: t.with_geometry(|g| Dims::from_slice(&g.shape)),
            dtype: t.dtype(),
            device: t.device(),
        }
    }

    /// [`InputMeta::of`] a tensor the caller holds mutably: a result only
    /// this handle reaches (a kernel's fresh output) is read without the
    /// geometry's lock.
    pub fn of_owned(t: &mut Tensor) -> InputMeta {
        InputMeta {
            shape: t.dims_of_owned(),
            dtype: t.dtype(),
            device: t.device(),
        }
    }
}

/// A node's [`InputMeta`]s, one per input (forward output; `None` for an
/// output that is not a tensor, which no gradient reaches): inline for one,
/// so a node of a single-output call keeps it without allocating.
pub type InputMetas = SmallVec<[Option<InputMeta>; 1]>;

/// What a backward computation learns about the call it serves.
#[derive(Debug)]
pub struct BackwardCtx<'a> {
    pub(crate) needed: &'a [bool],
    pub(crate) input_meta: &'a [Option<InputMeta>],
}

impl BackwardCtx<'_> {
    /// The sizes, dtype and device of the forward call's output `i` (the
    /// node's input `i`); `None` for an output that is not a tensor.
    pub fn input_meta(&self, i: usize) -> Option<&InputMeta> {
        self.input_meta.get(i).and_then(Option::as_ref)
    }

    /// Is a gradient wanted for the node's input `i` (the forward call's
    /// differentiable input `i`)? A gradient computed for an input that is not
    /// wanted is dropped; a kernel may skip computing it.
    pub fn needs_input_grad(&self, i: usize) -> bool {
        self.needed.get(i).copied().unwrap_or(false)
    }
}

/// A node's backward computation: gradients of the forward call's outputs in,
/// gradients of its differentiable inputs out. Owns what it saved
/// (`autograd::SavedTensor`).
pub trait Backward: Send + 'static {
    /// One gradient per forward output in (`None`: no gradient reached that
    /// output), one per differentiable input out (`None`: zero, or not
    /// wanted). Runs with grad mode on only when the graph of the backward
    /// pass is being recorded (`create_graph`).
    fn apply(&mut self, grads: Grads, ctx: &BackwardCtx) -> Result<Grads>;

    /// Frees what the node saved (after a backward without `retain_graph`);
    /// a later [`Backward::apply`] that needs it fails with PyTorch's
    /// "Trying to backward through the graph a second time" message
    /// (`autograd::SavedTensor::release` does that, handing the tensor to
    /// [`drop_tensor_later`]).
    fn release(&mut self);

    /// Called when the node is dropped, before its fields are: hands every
    /// tensor it owns (and any value that may own tensors) to
    /// [`drop_tensor_later`] or [`drop_boxed_later`], so that a saved
    /// tensor's history, perhaps a graph as long as the program, is dropped
    /// by the loop of the outermost node's drop rather than recursively. The
    /// default, [`Backward::release`], does that for a backward whose tensors
    /// are all saved tensors; one that owns others should hand them over too
    /// (a tensor dropped in place is still freed, one recursion deeper).
    fn before_drop(&mut self) {
        self.release();
    }

    /// Whether it may own tensors (saved values), and through their histories
    /// other graphs. A node whose backward owns none, and whose next nodes are
    /// all held elsewhere too, is dropped on the spot rather than through the
    /// deferred queue of `Drop for Node` (no recursion can follow). The
    /// default, `true`, is always safe; the generated nodes that save no
    /// tensor answer `false`.
    fn owns_tensors(&self) -> bool {
        true
    }

    /// A backward that runs code which may re-enter the engine on this very
    /// node returns the part to run here, and the engine runs it with the
    /// node's lock released (`Node::run_backward`). A custom Function's
    /// backward is such code: it may run backward through a graph that holds
    /// its own node, as PyTorch allows (its `PyNode` takes no lock). `None`,
    /// the default: [`Backward::apply`] runs under the lock, as PyTorch's
    /// generated nodes run under their mutex.
    fn reentrant(&self) -> Option<Arc<dyn ReentrantBackward>> {
        None
    }
}

/// The shared part of a [`Backward`] that may re-enter the engine (see
/// [`Backward::reentrant`]): it runs through a shared reference, possibly on
/// several threads and nested within itself, so whatever it mutates is
/// behind its own short-held locks.
pub trait ReentrantBackward: Send + Sync {
    /// As [`Backward::apply`].
    fn apply(&self, grads: Grads, ctx: &BackwardCtx) -> Result<Grads>;
}

/// The backward of a leaf's accumulator: the engine writes the leaf's
/// `.grad` itself ([`Node::accumulates`]), so this never runs.
struct Accumulates;

impl Backward for Accumulates {
    fn apply(&mut self, _: Grads, _: &BackwardCtx) -> Result<Grads> {
        Err(Error::Runtime(
            "an accumulator's gradient is written to its leaf by the engine".into(),
        ))
    }

    fn release(&mut self) {}

    fn owns_tensors(&self) -> bool {
        false
    }
}

/// A node of the autograd graph (see the module docs): its name, order,
/// inputs' metadata, edges and hooks, then its [`Backward`] `B`, in one
/// allocation. `Node` alone is `Node<dyn Backward>`, what tensors and edges
/// hold.
pub struct Node<B: ?Sized + Backward = dyn Backward> {
    name: Cow<'static, str>,
    sequence_nr: u64,
    /// One per input (forward output); empty for an accumulator.
    input_meta: InputMetas,
    next_edges: Edges,
    /// An accumulator's leaf, held weakly (the leaf holds its accumulator).
    leaf: Option<WeakTensor>,
    /// Hooks and retained gradients, made when the first is added (most
    /// nodes have none: one null word, and nothing to lock in backward).
    extras: OnceBox<Mutex<Extras>>,
    backward: Mutex<B>,
}

/// What a node keeps of the tensors it made, beyond their history.
#[derive(Default)]
struct Extras {
    /// Hooks on the gradient arriving at an input (a non-leaf tensor's
    /// `register_hook`): `(input, id, hook)` in registration order.
    pre_hooks: Vec<(u32, u64, GradHook)>,
    /// Non-leaf tensors that keep their gradient (`retain_grad`), weakly.
    retained: Vec<(u32, WeakTensor)>,
}

impl<B: Backward> Node<B> {
    /// An operation's node, named as PyTorch names it (`MulBackward0`):
    /// the [`InputMeta`] of each output, the edges of its differentiable
    /// inputs, and its backward. Numbered after the last node made on this
    /// thread.
    pub fn new(
        name: Cow<'static, str>,
        input_meta: InputMetas,
        next_edges: Edges,
        backward: B,
    ) -> Node<B> {
        let sequence_nr = SEQUENCE.with(|s| {
            let n = s.get();
            s.set(n + 1);
            n
        });
        Node::make(name, sequence_nr, input_meta, next_edges, None, backward)
    }

    fn make(
        name: Cow<'static, str>,
        sequence_nr: u64,
        input_meta: InputMetas,
        next_edges: Edges,
        leaf: Option<WeakTensor>,
        backward: B,
    ) -> Node<B> {
        LIVE.fetch_add(1, Ordering::Relaxed);
        Node {
            name,
            sequence_nr,
            input_meta,
            next_edges,
            leaf,
            extras: OnceBox::new(),
            backward: Mutex::new(backward),
        }
    }
}

impl<B: Backward> Node<B> {
    /// A tensor's history pointing at output `output_nr` of this node, as
    /// the tensor holds it (`Tensor::set_history`).
    pub fn history(self: &Arc<Self>, output_nr: u32) -> History {
        History {
            node: self.clone(),
            output_nr,
        }
    }
}

impl<B: Backward> crate::tensor::SealedGraphNode for Node<B> {}

impl<B: Backward> GraphNode for Node<B> {
    fn name(&self) -> &str {
        &self.name
    }

    fn hand_over(self: Arc<Self>, to: &mut dyn Any) {
        if let Some(slot) = to.downcast_mut::<Option<Arc<Node>>>() {
            *slot = Some(self);
        }
    }
}

/// The node a tensor's history points at, as this module's type.
#[inline]
pub fn node_of(history: &History) -> Arc<Node> {
    into_node(history.node.clone())
}

/// A node held as the tensor layer holds it, as this module's type.
#[inline]
pub(crate) fn as_node(node: &Arc<dyn GraphNode>) -> Arc<Node> {
    into_node(node.clone())
}

/// [`as_node`] of a handle given by value (no reference count changes).
#[inline]
fn into_node(node: Arc<dyn GraphNode>) -> Arc<Node> {
    let mut slot: Option<Arc<Node>> = None;
    node.hand_over(&mut slot);
    // Every `GraphNode` is a `Node<B>` (the trait is sealed; this module
    // has the one implementation), which fills a slot of this type.
    slot.expect("a graph node is autograd's Node")
}

impl Node {
    /// A new accumulator node for `leaf` (the leaf keeps the one it is
    /// given first: `autograd::accumulator`). Accumulators run as soon as
    /// they are ready (PyTorch gives them the highest sequence number).
    pub fn accumulator_of(leaf: &Tensor) -> Arc<Node> {
        Arc::new(Node::make(
            "AccumulateGrad".into(),
            u64::MAX,
            InputMetas::new(),
            Edges::new(),
            Some(leaf.downgrade()),
            Accumulates,
        ))
    }

    /// A tensor's history pointing at output `output_nr` of this node.
    pub fn grad_fn(self: &Arc<Self>, output_nr: u32) -> GradFn {
        GradFn {
            node: self.clone(),
            output_nr,
        }
    }
}

impl<B: ?Sized + Backward> Node<B> {
    /// PyTorch's name (`MulBackward0`, `AccumulateGrad`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Creation order on the thread that made the node: a later node runs
    /// before an earlier one when both are ready.
    pub fn sequence_nr(&self) -> u64 {
        self.sequence_nr
    }

    /// How many gradients the node receives (the forward call's outputs).
    pub fn num_inputs(&self) -> usize {
        match self.leaf {
            Some(_) => 1,
            None => self.input_meta.len(),
        }
    }

    /// The sizes and dtype of input `nr` (forward output `nr`); `None` for
    /// an accumulator (its leaf has them), an output that is not a tensor, or
    /// past the last input.
    pub fn input_meta(&self, nr: usize) -> Option<&InputMeta> {
        self.input_meta.get(nr).and_then(Option::as_ref)
    }

    /// Every input's [`InputMeta`] (what a [`BackwardCtx`] shows the node's
    /// backward).
    pub(crate) fn input_metas(&self) -> &[Option<InputMeta>] {
        &self.input_meta
    }

    /// Where the node's gradients go, one per differentiable input of the
    /// forward call (`None`: that input does not require grad).
    pub fn next_edges(&self) -> &[Option<Edge>] {
        &self.next_edges
    }

    /// A leaf's accumulator?
    pub fn is_accumulator(&self) -> bool {
        self.leaf.is_some()
    }

    /// The leaf an accumulator writes to, while it lives.
    pub fn leaf(&self) -> Option<Tensor> {
        self.leaf.as_ref().and_then(WeakTensor::upgrade)
    }

    /// An accumulator's leaf, held weakly; `None` for an operation's node.
    pub(crate) fn accumulates(&self) -> Option<&WeakTensor> {
        self.leaf.as_ref()
    }

    /// The node's backward, locked (the engine runs it; an accumulator's
    /// never runs).
    pub(crate) fn backward(&self) -> MutexGuard<'_, B> {
        lock(&self.backward)
    }

    /// Runs the node's backward on `grads`, then, with `release`, frees what
    /// it saved: under the node's lock, or, for a backward that may re-enter
    /// the engine ([`Backward::reentrant`]), with the lock released while it
    /// runs (a nested pass through the same node then runs it again rather
    /// than waiting forever for the lock its own thread holds).
    pub(crate) fn run_backward(
        &self,
        grads: Grads,
        ctx: &BackwardCtx,
        release: bool,
    ) -> Result<Grads> {
        let mut b = self.backward();
        let out = match b.reentrant() {
            None => b.apply(grads, ctx)?,
            Some(shared) => {
                drop(b);
                let out = shared.apply(grads, ctx)?;
                b = self.backward();
                out
            }
        };
        if release {
            b.release();
        }
        Ok(out)
    }

    /// Has a hook or a retained gradient ever been added here?
    #[inline]
    pub(crate) fn has_extras(&self) -> bool {
        self.extras.get().is_some()
    }

    fn extras(&self) -> MutexGuard<'_, Extras> {
        lock(self.extras.get_or_init(Box::default))
    }

    /// Adds a hook on the gradient arriving at input `input`; returns the id
    /// that removes it ([`Node::remove_pre_hook`]).
    pub(crate) fn add_pre_hook(&self, input: u32, hook: GradHook) -> u64 {
        let id = next_hook_id();
        self.extras().pre_hooks.push((input, id, hook));
        id
    }

    /// Removes the hook [`Node::add_pre_hook`] returned `id` for; `false` if
    /// it is not there (removed already).
    pub(crate) fn remove_pre_hook(&self, id: u64) -> bool {
        let Some(e) = self.extras.get() else {
            return false;
        };
        let hooks = &mut lock(e).pre_hooks;
        let before = hooks.len();
        hooks.retain(|(_, i, _)| *i != id);
        hooks.len() != before
    }

    /// The hooks on the node's inputs, in registration order.
    pub(crate) fn pre_hooks(&self) -> Vec<(u32, GradHook)> {
        match self.extras.get() {
            Some(e) => lock(e)
                .pre_hooks
                .iter()
                .map(|(input, _, h)| (*input, h.clone()))
                .collect(),
            None => Vec::new(),
        }
    }

    /// Keeps the gradient arriving at `input` in `tensor`'s `.grad`.
    pub(crate) fn add_retained(&self, input: u32, tensor: WeakTensor) {
        self.extras().retained.push((input, tensor));
    }

    /// Stops keeping `tensor`'s gradient here (its history moved on).
    pub(crate) fn remove_retained(&self, tensor: &Tensor) {
        if let Some(e) = self.extras.get() {
            lock(e)
                .retained
                .retain(|(_, t)| !t.upgrade().is_some_and(|t| t.is_same(tensor)));
        }
    }

    /// The tensors keeping the gradients arriving here, weakly.
    pub(crate) fn retained(&self) -> Vec<(u32, WeakTensor)> {
        match self.extras.get() {
            Some(e) => lock(e).retained.clone(),
            None => Vec::new(),
        }
    }
}

thread_local! {
    /// What dropped nodes leave to the outermost drop on this thread (see
    /// `Drop for Node`); kept, empty, between drops, so that dropping a node
    /// allocates nothing once the queue has grown.
    static DEFERRED: RefCell<Vec<Deferred>> = const { RefCell::new(Vec::new()) };
    /// Whether a drop on this thread is draining `DEFERRED`.
    static DRAINING: Cell<bool> = const { Cell::new(false) };
}

/// What a dropped node owned, to be dropped by the outermost drop (held only
/// to be dropped, never read).
#[allow(dead_code)]
enum Deferred {
    Edges(Edges),
    Tensor(Tensor),
    Boxed(Box<dyn Send>),
}

/// Queues `part` if a node's drop is taking a graph apart on this thread;
/// drops it now otherwise.
fn defer(part: Deferred) {
    if DRAINING.try_with(Cell::get) == Ok(true) {
        // Err (the thread is exiting, its queue gone): the part is dropped
        // with the closure.
        let _ = DEFERRED.try_with(move |d| d.borrow_mut().push(part));
    }
}

/// Drops `t` now, or, while a node's drop is taking a graph apart on this
/// thread, after that node (by the outermost drop's loop): what a
/// [`Backward`] does with the tensors it owns when it is released or dropped,
/// so that a chain of nodes holding each other through saved tensors is
/// freed without recursion.
pub fn drop_tensor_later(t: Tensor) {
    defer(Deferred::Tensor(t));
}

/// [`drop_tensor_later`] for any value that may own tensors (a custom
/// Function's state).
pub fn drop_boxed_later(value: Box<dyn Send>) {
    defer(Deferred::Boxed(value));
}

impl<B: ?Sized + Backward> Drop for Node<B> {
    /// A graph is a chain as long as the program that built it (a loop of
    /// 100,000 steps is one); dropping it node by node recursively, through
    /// edges and through saved tensors' histories, would overflow the stack.
    /// So the outermost drop on a thread takes what each node owns and drops
    /// it in a loop; a node dropped meanwhile hands its parts to that loop.
    fn drop(&mut self) {
        LIVE.fetch_sub(1, Ordering::Relaxed);
        let backward = self.backward.get_mut().unwrap_or_else(|e| e.into_inner());
        // The common case: nothing this node owns is dropped with it but its
        // backward's plain fields (the accumulators of leaves, say, are held
        // by their leaves). Another thread dropping one of those next nodes
        // at the same moment makes this drop one of them, which takes this
        // test again: no recursion deeper than the race itself.
        let shallow = !backward.owns_tensors()
            && self
                .next_edges
                .iter()
                .flatten()
                .all(|e| Arc::strong_count(&e.node) > 1);
        if shallow {
            return;
        }
        // Err: the thread is exiting and its queue is gone; the parts are
        // dropped in place, recursively.
        let Ok(outermost) = DRAINING.try_with(|f| !f.replace(true)) else {
            return;
        };
        let edges = std::mem::take(&mut self.next_edges);
        defer(Deferred::Edges(edges));
        backward.before_drop();
        if !outermost {
            return;
        }
        loop {
            let next = DEFERRED.try_with(|d| d.borrow_mut().pop()).ok().flatten();
            match next {
                // Dropped outside the borrow: it may defer more.
                Some(part) => drop(part),
                None => break,
            }
        }
        let _ = DRAINING.try_with(|f| f.set(false));
    }
}

impl<B: ?Sized + Backward> std::fmt::Debug for Node<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Node")
            .field("name", &self.name)
            .field("sequence_nr", &self.sequence_nr)
            .field("next_edges", &self.next_edges)
            .finish_non_exhaustive()
    }
}
