//! The graph: [`Node`]s joined by [`Edge`]s, as PyTorch's `Node` and `Edge`.
//!
//! A node is what a tensor's `grad_fn` is: it receives one gradient per
//! output of the operation that made it (its *inputs* in backward) and sends
//! one per differentiable input of that operation along its `next_edges`. Its
//! computation is a [`Backward`] trait object, owning what it saved. A leaf
//! that requires grad gets an accumulator node ([`Node::is_accumulator`],
//! PyTorch's `AccumulateGrad`), which writes its `.grad`. The leaf holds its
//! accumulator and the accumulator holds the leaf weakly (PyTorch has it the
//! other way round, and so makes a new accumulator for each graph once the
//! last one is gone; here a leaf keeps one for its life, and recording a call
//! on leaves allocates no node for them).
//!
//! Ownership only runs from outputs to inputs: a tensor holds its node, a node
//! holds its next nodes and what it saved; nothing holds a tensor that holds the
//! node (a saved output is kept without its history, a retained gradient's
//! tensor weakly), so a graph is freed when its last output is dropped.

use crate::error::{Error, Result};
use crate::tensor::{DType, Dims, GradFn, GradHook, GradNode, Tensor, WeakTensor};
use once_cell::race::OnceBox;
use smallvec::SmallVec;
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

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A node's name as PyTorch's messages print it (its view and saved-tensor
/// messages): `SliceBackward0` is `Slice`, a custom Function's
/// `SavedBackward` is `Saved`.
pub(crate) fn short_name(name: &str) -> &str {
    let stem = name.trim_end_matches(|c: char| c.is_ascii_digit());
    stem.strip_suffix("Backward").unwrap_or(name)
}

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
/// (PyTorch's `InputMetadata`): the sizes and dtype of the forward output the
/// input stands for, taken when the node is recorded (the sizes inline up to
/// five dimensions, as a tensor keeps them). A leaf's accumulator reads its
/// leaf's instead.
#[derive(Clone, Debug, PartialEq)]
pub struct InputMeta {
    /// The forward output's sizes.
    pub shape: Dims,
    /// The forward output's dtype.
    pub dtype: DType,
}

impl InputMeta {
    /// `t`'s sizes and dtype.
    pub fn of(t: &Tensor) -> InputMeta {
        InputMeta {
            shape: t.with_geometry(|g| Dims::from_slice(&g.shape)),
            dtype: t.dtype(),
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
}

impl BackwardCtx<'_> {
    /// Is a gradient wanted for the node's input `i` (the forward call's
    /// differentiable input `i`)? A gradient computed for an input that is not
    /// wanted is dropped; a kernel may skip computing it.
    pub fn needs_input_grad(&self, i: usize) -> bool {
        self.needed.get(i).copied().unwrap_or(false)
    }
}

/// A node's backward computation: gradients of the forward call's outputs in,
/// gradients of its differentiable inputs out. Owns what it saved
/// ([`super::SavedTensor`]).
pub trait Backward: Send + 'static {
    /// One gradient per forward output in (`None`: no gradient reached that
    /// output), one per differentiable input out (`None`: zero, or not
    /// wanted). Runs with grad mode on only when the graph of the backward
    /// pass is being recorded (`create_graph`).
    fn apply(&mut self, grads: Grads, ctx: &BackwardCtx) -> Result<Grads>;

    /// Frees what the node saved (after a backward without `retain_graph`);
    /// a later [`Backward::apply`] that needs it fails with PyTorch's
    /// "Trying to backward through the graph a second time" message
    /// ([`super::SavedTensor::release`] does that).
    fn release(&mut self);

    /// Whether it may own tensors (saved values), and through their histories
    /// other graphs. A node whose backward owns none, and whose next nodes are
    /// all held elsewhere too, is dropped on the spot rather than through the
    /// deferred queue of `Drop for Node` (no recursion can follow). The
    /// default, `true`, is always safe; the generated nodes that save no
    /// tensor answer `false`.
    fn owns_tensors(&self) -> bool {
        true
    }
}

pub(crate) enum Kind {
    /// An operation's backward.
    Function(Mutex<Box<dyn Backward>>),
    /// A leaf's accumulator: the leaf it writes `.grad` of, held weakly (the
    /// leaf holds its accumulator).
    Accumulate(WeakTensor),
}

/// A node of the autograd graph (see the module docs).
pub struct Node {
    name: Cow<'static, str>,
    sequence_nr: u64,
    /// One per input (forward output); empty for an accumulator.
    input_meta: InputMetas,
    next_edges: Edges,
    pub(crate) kind: Kind,
    /// Hooks and retained gradients, made when the first is added (most
    /// nodes have none: one null word, and nothing to lock in backward).
    extras: OnceBox<Mutex<Extras>>,
}

/// What a node keeps of the tensors it made, beyond their history.
#[derive(Default)]
struct Extras {
    /// Hooks on the gradient arriving at an input (a non-leaf tensor's
    /// `register_hook`): `(input, hook)` in registration order.
    pre_hooks: Vec<(u32, GradHook)>,
    /// Non-leaf tensors that keep their gradient (`retain_grad`), weakly.
    retained: Vec<(u32, WeakTensor)>,
}

impl Node {
    pub(crate) fn new(
        name: Cow<'static, str>,
        input_meta: InputMetas,
        next_edges: Edges,
        kind: Kind,
    ) -> Node {
        LIVE.fetch_add(1, Ordering::Relaxed);
        let sequence_nr = match kind {
            // Accumulators run as soon as they are ready (PyTorch gives them
            // the highest sequence number).
            Kind::Accumulate(_) => u64::MAX,
            Kind::Function(_) => SEQUENCE.with(|s| {
                let n = s.get();
                s.set(n + 1);
                n
            }),
        };
        Node {
            name,
            sequence_nr,
            input_meta,
            next_edges,
            kind,
            extras: OnceBox::new(),
        }
    }

    /// The accumulator node of a leaf (not shared: see [`super::accumulator`]).
    pub(crate) fn accumulate(leaf: &Tensor) -> Node {
        Node::new(
            "AccumulateGrad".into(),
            InputMetas::new(),
            Edges::new(),
            Kind::Accumulate(leaf.downgrade()),
        )
    }

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
        match self.kind {
            Kind::Accumulate(_) => 1,
            Kind::Function(_) => self.input_meta.len(),
        }
    }

    /// The sizes and dtype of input `nr` (forward output `nr`); `None` for
    /// an accumulator (its leaf has them), an output that is not a tensor, or
    /// past the last input.
    pub fn input_meta(&self, nr: usize) -> Option<&InputMeta> {
        self.input_meta.get(nr).and_then(Option::as_ref)
    }

    /// PyTorch's `validate_outputs` for a gradient `grad` arriving at input
    /// `input_nr` (sent as output `index` of the node `from`): a gradient
    /// whose sizes expand to the input's is summed back to them (`sum_to`),
    /// one of another dtype cast to the input's; other sizes are an error
    /// with PyTorch's message. An accumulator checks against its leaf as it
    /// is now (a leaf no handle reaches any more takes nothing).
    pub(crate) fn check_gradient(
        &self,
        input_nr: u32,
        grad: Tensor,
        from: &str,
        index: usize,
    ) -> Result<Tensor> {
        let leaf;
        let (shape, dtype): (&[usize], DType) = match &self.kind {
            Kind::Function(_) => match self.input_meta(input_nr as usize) {
                Some(m) => (&m.shape, m.dtype),
                None => return Ok(grad),
            },
            Kind::Accumulate(t) => match t.upgrade() {
                Some(t) => {
                    leaf = t;
                    return leaf
                        .with_geometry(|g| conform(grad, &g.shape, leaf.dtype(), from, index));
                }
                None => return Ok(grad),
            },
        };
        conform(grad, shape, dtype, from, index)
    }
}

/// Sums `grad` back to `shape` and casts it to `dtype` (see
/// [`Node::check_gradient`]).
pub(crate) fn conform(
    grad: Tensor,
    shape: &[usize],
    dtype: DType,
    from: &str,
    index: usize,
) -> Result<Tensor> {
    let grad = match grad.with_geometry(|g| g.shape[..] == *shape) {
        true => grad,
        false => {
            let got = grad.shape();
            let expandable = shape.len() <= got.len()
                && shape
                    .iter()
                    .rev()
                    .zip(got.iter().rev())
                    .all(|(&s, &g)| s == g || s == 1);
            if !expandable {
                return Err(Error::Runtime(
                    format!(
                        "Function {from} returned an invalid gradient at index {index} - got {got:?} but expected shape compatible with {shape:?}"
                    )
                    .into(),
                ));
            }
            let sizes: Vec<i64> = shape.iter().map(|&d| d as i64).collect();
            super::formulas::sum_to(&grad, &sizes)?
        }
    };
    super::formulas::cast_to(grad, dtype)
}

impl Node {
    /// Where the node's gradients go, one per differentiable input of the
    /// forward call (`None`: that input does not require grad).
    pub fn next_edges(&self) -> &[Option<Edge>] {
        &self.next_edges
    }

    /// A leaf's accumulator?
    pub fn is_accumulator(&self) -> bool {
        matches!(self.kind, Kind::Accumulate(_))
    }

    /// The leaf an accumulator writes to, while it lives.
    pub fn leaf(&self) -> Option<Tensor> {
        match &self.kind {
            Kind::Accumulate(t) => t.upgrade(),
            Kind::Function(_) => None,
        }
    }

    fn extras(&self) -> MutexGuard<'_, Extras> {
        lock(self.extras.get_or_init(Box::default))
    }

    /// Adds a hook on the gradient arriving at input `input`.
    pub(crate) fn add_pre_hook(&self, input: u32, hook: GradHook) -> usize {
        let hooks = &mut self.extras().pre_hooks;
        hooks.push((input, hook));
        hooks.len() - 1
    }

    /// The hooks on the node's inputs, in registration order.
    pub(crate) fn pre_hooks(&self) -> Vec<(u32, GradHook)> {
        match self.extras.get() {
            Some(e) => lock(e).pre_hooks.clone(),
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

    /// A tensor's history pointing at output `output_nr` of this node.
    pub fn grad_fn(self: &Arc<Self>, output_nr: u32) -> GradFn {
        GradFn {
            node: self.clone(),
            output_nr,
        }
    }

    /// The node behind a tensor's history, if autograd made it.
    pub fn of(grad_fn: &GradFn) -> Option<Arc<Node>> {
        Node::from_grad_fn(grad_fn.clone())
    }

    /// [`Node::of`], taking the history (one reference count less to move).
    pub fn from_grad_fn(grad_fn: GradFn) -> Option<Arc<Node>> {
        grad_fn.node.into_any_arc().downcast::<Node>().ok()
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
    Backward(Box<dyn Backward>),
}

/// Stands in for a dropped node's backward.
struct Dropped;

impl Backward for Dropped {
    fn apply(&mut self, _: Grads, _: &BackwardCtx) -> Result<Grads> {
        Ok(Grads::new())
    }

    fn release(&mut self) {}

    fn owns_tensors(&self) -> bool {
        false
    }
}

impl Drop for Node {
    /// A graph is a chain as long as the program that built it (a loop of
    /// 100,000 steps is one); dropping it node by node recursively, through
    /// edges and through saved tensors' histories, would overflow the stack.
    /// So the outermost drop on a thread takes what each node owns and drops
    /// it in a loop; a node dropped meanwhile hands its parts to that loop.
    fn drop(&mut self) {
        LIVE.fetch_sub(1, Ordering::Relaxed);
        // The common case: nothing this node owns is dropped with it but its
        // backward's plain fields (the accumulators of leaves, say, are held
        // by their leaves). Another thread dropping one of those next nodes
        // at the same moment makes this drop one of them, which takes this
        // test again: no recursion deeper than the race itself.
        let shallow = self
            .next_edges
            .iter()
            .flatten()
            .all(|e| Arc::strong_count(&e.node) > 1)
            && match &mut self.kind {
                Kind::Function(m) => m.get_mut().is_ok_and(|b| !b.owns_tensors()),
                Kind::Accumulate(_) => true,
            };
        if shallow {
            return;
        }
        let edges = Deferred::Edges(std::mem::take(&mut self.next_edges));
        let backward = match &mut self.kind {
            Kind::Function(m) => {
                let b = m.get_mut().unwrap_or_else(|e| e.into_inner());
                Some(Deferred::Backward(std::mem::replace(b, Box::new(Dropped))))
            }
            _ => None,
        };
        // Err: the thread is exiting and its queue is gone; the parts are
        // dropped with the closure, recursively.
        let queued = DEFERRED.try_with(move |d| {
            let mut d = d.borrow_mut();
            d.push(edges);
            d.extend(backward);
        });
        if queued.is_err() || DRAINING.try_with(|f| f.replace(true)) != Ok(false) {
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

/// A leaf's accumulator node: the one the leaf holds, made on first use.
pub fn accumulator(leaf: &Tensor) -> Arc<Node> {
    let meta = leaf.autograd_meta_or_default();
    let node = meta.accumulator_or(|| Arc::new(Node::accumulate(leaf)) as Arc<dyn GradNode>);
    match node.into_any_arc().downcast::<Node>() {
        Ok(n) => n,
        // Only this layer makes accumulators.
        Err(_) => Arc::new(Node::accumulate(leaf)),
    }
}

/// Where a gradient for `t` goes: its history, or its accumulator if it is a
/// leaf that requires grad; `None` if it does not require grad.
pub fn gradient_edge(t: &Tensor) -> Option<Edge> {
    if let Some(g) = t.grad_fn() {
        let input_nr = g.output_nr;
        return Node::from_grad_fn(g).map(|node| Edge { node, input_nr });
    }
    // A leaf the user marked (a view that requires grad only through its
    // base, made in no-grad mode, has neither history nor accumulator).
    if t.autograd_meta().is_some_and(|m| m.requires_grad_flag()) {
        return Some(Edge {
            node: accumulator(t),
            input_nr: 0,
        });
    }
    None
}

impl GradNode for Node {
    fn name(&self) -> Cow<'_, str> {
        Cow::Borrowed(&self.name)
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }

    fn into_any_arc(self: Arc<Self>) -> Arc<dyn std::any::Any + Send + Sync> {
        self
    }
}

impl std::fmt::Debug for Node {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Node")
            .field("name", &self.name)
            .field("sequence_nr", &self.sequence_nr)
            .field("next_edges", &self.next_edges)
            .finish_non_exhaustive()
    }
}
