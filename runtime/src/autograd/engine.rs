//! The backward engine: [`backward`] and [`grad`], with PyTorch's rules.
//!
//! One pass finds the nodes reachable from the roots; when only some inputs'
//! gradients are wanted ([`grad`], `backward(inputs=…)`) it marks the nodes on
//! a path to them (the others never run). Dependencies are counted along the
//! edges of those nodes, and a node runs once every gradient it waits for has
//! arrived (gradients reaching the same input are summed with `at::add`),
//! the most recently created first among those ready. Before a node runs, the
//! hooks on its inputs run and retained gradients are stored. Accumulators
//! write leaves' `.grad`: the first gradient is stored (without its history,
//! unless `create_graph`), later ones added.
//!
//! Grad mode during the pass is `create_graph`: with it on, the backward
//! computations are recorded in turn, so the results can be differentiated.

use super::mode::set_grad_enabled;
use super::node::gradient_edge;
use super::node::{check_gradient, BackwardCtx, Edge, Grads, Node};
use crate::dtype::{MemoryFormat, Scalar};
use crate::error::{Error, Result};
use crate::tensor::torch_size;
use crate::tensor::Tensor;
use smallvec::SmallVec;
use std::collections::{BinaryHeap, HashMap};
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;

fn runtime(m: impl Into<String>) -> Error {
    Error::Runtime(m.into().into())
}

fn node_id(n: &Arc<Node>) -> usize {
    Arc::as_ptr(n) as *const () as usize
}

/// Hashes a node's address (already unique) with one multiplication, for the
/// engine's node index: SipHash's resistance to chosen keys buys nothing for
/// addresses, and a graph pass looks each node up several times.
#[derive(Default)]
struct AddressHasher(u64);

impl Hasher for AddressHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }

    fn write_usize(&mut self, n: usize) {
        // Fibonacci hashing; the high bits (the ones a table uses) depend on
        // every bit of the address.
        self.0 = (n as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

/// Where each reachable node is in the engine's table, by address: a linear
/// scan while the graph is small (no table to allocate; a typical step's graph
/// is a handful of nodes), a hash map once it is not.
#[derive(Default)]
struct NodeIndex {
    small: SmallVec<[usize; SMALL_GRAPH]>,
    large: HashMap<usize, usize, BuildHasherDefault<AddressHasher>>,
}

/// Up to this many nodes, [`NodeIndex`] scans.
const SMALL_GRAPH: usize = 16;

impl NodeIndex {
    fn get(&self, id: usize) -> Option<usize> {
        if self.large.is_empty() {
            self.small.iter().position(|&x| x == id)
        } else {
            self.large.get(&id).copied()
        }
    }

    /// Adds `id` as entry `at` (the table's next entry), unless present.
    fn insert(&mut self, id: usize, at: usize) -> bool {
        if self.get(id).is_some() {
            return false;
        }
        if self.large.is_empty() && self.small.len() < SMALL_GRAPH {
            self.small.push(id);
        } else {
            if self.large.is_empty() {
                self.large
                    .extend(self.small.iter().enumerate().map(|(i, &x)| (x, i)));
            }
            self.large.insert(id, at);
        }
        true
    }
}

/// The nodes ready to run, `(sequence number, index)`, the greatest first: a
/// short inline list scanned for its greatest (a step's graph rarely has
/// more than a few nodes ready at once, and then the pass allocates no heap),
/// a binary heap once it grows past [`READY_INLINE`].
#[derive(Default)]
struct Ready {
    few: SmallVec<[(u64, usize); READY_INLINE]>,
    /// In use while not empty; `few` is empty meanwhile.
    many: BinaryHeap<(u64, usize)>,
}

/// Ready nodes [`Ready`] keeps inline.
const READY_INLINE: usize = 8;

impl Ready {
    fn push(&mut self, item: (u64, usize)) {
        if self.many.is_empty() && self.few.len() < READY_INLINE {
            self.few.push(item);
            return;
        }
        self.many.extend(self.few.drain(..));
        self.many.push(item);
    }

    fn pop(&mut self) -> Option<(u64, usize)> {
        if let Some(top) = self.many.pop() {
            return Some(top);
        }
        let at = self.few.iter().enumerate().max_by_key(|(_, x)| **x)?.0;
        Some(self.few.swap_remove(at))
    }
}

/// `slot += g`: the first gradient is kept, later ones added.
fn add_into(slot: &mut Option<Tensor>, g: Tensor) -> Result<()> {
    *slot = Some(match slot.take() {
        None => g,
        Some(old) => crate::at::add_Tensor(&old, &g, Scalar::Int(1))?,
    });
    Ok(())
}

/// Runs the hooks a leaf registered on its gradient, in order (a leaf
/// without any, nearly every one, costs a load).
#[inline]
fn run_tensor_hooks(t: &Tensor, grad: Tensor) -> Result<Tensor> {
    match t.autograd_meta() {
        Some(meta) if meta.has_hooks() => run_hooks(meta, grad),
        _ => Ok(grad),
    }
}

fn run_hooks(meta: &super::node::AutogradMeta, mut grad: Tensor) -> Result<Tensor> {
    for hook in meta.hooks() {
        if let Some(g) = hook(&grad)? {
            grad = g;
        }
    }
    Ok(grad)
}

/// Adds `grad` into a leaf's `.grad` (PyTorch's `AccumulateGrad`): the first
/// gradient is stored without a copy when nothing else holds it (detached,
/// unless `create_graph`), else a copy; later ones are added in place (an
/// `add_`, so a `.grad` handed out earlier sees the sum, as in PyTorch), or
/// out of place under `create_graph` (the sum keeps its history).
pub(crate) fn accumulate_grad(t: &Tensor, grad: Tensor, create_graph: bool) -> Result<()> {
    let meta = t.autograd_meta_or_default();
    let _one_at_a_time = meta.accumulating();
    let new = match meta.grad() {
        None if create_graph => {
            if grad.is_sole_owner() {
                grad
            } else {
                crate::at::clone(&grad, None)?
            }
        }
        // Taken over without a copy, as PyTorch's `new_grad.detach()` (the
        // `aten.detach.default` a dispatch-level log shows last), when it is
        // laid out as the leaf is (PyTorch's layout contract: later
        // gradients are added to it in place).
        None if grad.is_sole_owner() && grad.strides() == t.strides() => crate::at::detach(&grad)?,
        // Grad mode is off (it is `create_graph`): the copy has no history.
        None => crate::at::clone(&grad, None)?,
        Some(mut old) if !create_graph => {
            crate::at::add__Tensor(&mut old, &grad, Scalar::Int(1))?;
            return Ok(());
        }
        Some(old) => crate::at::add_Tensor(&old, &grad, Scalar::Int(1))?,
    };
    meta.set_grad(Some(new));
    Ok(())
}

/// Keeps a gradient in a non-leaf's `.grad` (`retain_grad`, PyTorch's
/// retains-grad hook): a copy of the first, the sum out of place after.
fn retain_grad(t: &Tensor, grad: &Tensor) -> Result<()> {
    let meta = t.autograd_meta_or_default();
    let _one_at_a_time = meta.accumulating();
    let new = match meta.grad() {
        None => crate::at::clone(grad, None)?,
        Some(old) => crate::at::add_Tensor(&old, grad, Scalar::Int(1))?,
    };
    meta.set_grad(Some(new));
    Ok(())
}

/// A pass's roots: edges, and the gradient sent along each (kept apart, so
/// that the pass borrows the graph from the edges while it moves the
/// gradients).
struct Roots {
    edges: SmallVec<[Edge; 1]>,
    grads: SmallVec<[Tensor; 1]>,
}

struct Info<'a> {
    /// Borrowed from the roots' edges, which hold the graph for the pass.
    node: &'a Arc<Node>,
    /// Gradients still to arrive before the node can run.
    deps: usize,
    /// Runs (is on a path to a wanted gradient, or everything runs).
    needed: bool,
    /// A wanted gradient arrives here.
    target: bool,
    buffer: Grads,
    seeded: bool,
}

impl Info<'_> {
    fn active(&self) -> bool {
        self.needed || self.target
    }
}

/// Runs the graph from `roots` (each an edge and the gradient sent along it).
/// With `targets`, only the nodes leading to them run, and the gradients
/// arriving at them are returned, one per target; without, every node runs
/// (leaves accumulate).
fn run(
    roots: Roots,
    targets: Option<&[Edge]>,
    keep_graph: bool,
    create_graph: bool,
) -> Result<Vec<Option<Tensor>>> {
    let _mode = set_grad_enabled(create_graph);

    // The roots' edges hold the graph for the whole pass (a node's edges
    // never change while it lives), so the engine's table borrows every node
    // from them: no reference count is touched per node.
    let Roots {
        edges: root_edges,
        grads: root_grads,
    } = roots;
    // Built in place: the tables keep a few nodes inline, and moving them
    // out of a constructor would copy that storage.
    let mut found = Reached {
        infos: SmallVec::new(),
        index: NodeIndex::default(),
    };
    found.reach(&root_edges, targets.is_none());
    let mut next = NextNodes {
        starts: SmallVec::new(),
        all: SmallVec::new(),
    };
    next.fill(&found);
    // The tables are built: from here on they are read and written as
    // slices (each index into a `SmallVec` first tests whether it spilled,
    // and the pass indexes them a few hundred times).
    let mut pass = Pass {
        infos: &mut found.infos,
        next: next.as_slices(),
    };
    if let Some(targets) = targets {
        pass.mark_needed(&found.index, targets);
    }
    pass.count_dependencies();
    let mut ready = Ready::default();
    pass.seed(&found.index, &root_edges, root_grads, &mut ready)?;

    let mut captured: Vec<Option<Tensor>> = vec![None; targets.map_or(0, <[Edge]>::len)];
    while let Some((_, i)) = ready.pop() {
        let node = pass.infos[i].node;
        let mut grads = std::mem::take(&mut pass.infos[i].buffer);
        if node.has_extras() {
            before_node(node, &mut grads)?;
        }
        if let Some(targets) = targets {
            capture(targets, node, &grads, &mut captured);
        }
        if !pass.infos[i].needed {
            continue;
        }
        if let Some(leaf) = node.accumulates() {
            // A leaf no handle reaches any more has no `.grad` to read.
            if let (Some(g), Some(leaf)) = (grads.into_iter().next().flatten(), leaf.upgrade()) {
                let g = run_tensor_hooks(&leaf, g)?;
                accumulate_grad(&leaf, g, create_graph)?;
            }
            continue;
        }
        let outputs = pass.call_backward(i, grads, keep_graph)?;
        pass.send(i, outputs, &mut ready)?;
    }
    Ok(captured)
}

/// The nodes a pass reaches from its roots, in the order found, and where
/// each is in that table.
struct Reached<'a> {
    infos: SmallVec<[Info<'a>; 8]>,
    index: NodeIndex,
}

impl<'a> Reached<'a> {
    /// Step 1: the nodes reachable from `root_edges`, each `needed` (run)
    /// when `everything` runs; with targets, [`Pass::mark_needed`] decides.
    #[inline]
    fn reach(&mut self, root_edges: &'a [Edge], everything: bool) {
        let mut stack: SmallVec<[&Arc<Node>; 8]> = SmallVec::new();
        for e in root_edges {
            if self.visit(&e.node, everything) {
                stack.push(&e.node);
            }
        }
        while let Some(n) = stack.pop() {
            for e in n.next_edges().iter().flatten() {
                if self.visit(&e.node, everything) {
                    stack.push(&e.node);
                }
            }
        }
    }

    /// Adds `n` to the table unless it is there; `true` if it was not.
    fn visit(&mut self, n: &'a Arc<Node>, needed: bool) -> bool {
        let fresh = self.index.insert(node_id(n), self.infos.len());
        if fresh {
            self.infos.push(Info {
                node: n,
                deps: 0,
                needed,
                target: false,
                buffer: Grads::from_elem(None, n.num_inputs()),
                seeded: false,
            });
        }
        fresh
    }
}

/// Step 2: each reached node's next nodes, as indices into the table
/// (`None`: no edge): node `i`'s are `all[starts[i]..starts[i + 1]]`.
struct NextNodes {
    starts: SmallVec<[usize; 9]>,
    all: SmallVec<[Option<usize>; 16]>,
}

impl NextNodes {
    #[inline]
    fn fill(&mut self, found: &Reached<'_>) {
        self.starts.reserve(found.infos.len() + 1);
        // Pushed one by one: `extend`'s reserve and size hints cost more than
        // a node's one or two edges.
        for n in &found.infos {
            self.starts.push(self.all.len());
            for e in n.node.next_edges() {
                self.all
                    .push(e.as_ref().and_then(|e| found.index.get(node_id(&e.node))));
            }
        }
        self.starts.push(self.all.len());
    }

    fn as_slices(&self) -> NextSlices<'_> {
        NextSlices {
            starts: &self.starts,
            all: &self.all,
        }
    }
}

/// [`NextNodes`] read as slices.
#[derive(Clone, Copy)]
struct NextSlices<'t> {
    starts: &'t [usize],
    all: &'t [Option<usize>],
}

impl<'t> NextSlices<'t> {
    /// Node `i`'s next nodes.
    #[inline]
    fn of(self, i: usize) -> &'t [Option<usize>] {
        &self.all[self.starts[i]..self.starts[i + 1]]
    }
}

/// A pass over the reached nodes: what it keeps per node and the edges
/// between them.
struct Pass<'p, 'a> {
    infos: &'p mut [Info<'a>],
    next: NextSlices<'p>,
}

impl Pass<'_, '_> {
    /// Step 3 (with targets): the nodes that run are those on a path to a
    /// target, found in reverse topological order.
    fn mark_needed(&mut self, index: &NodeIndex, targets: &[Edge]) {
        let infos = &mut *self.infos;
        for t in targets {
            if let Some(i) = index.get(node_id(&t.node)) {
                infos[i].target = true;
            }
        }
        let mut indeg = vec![0usize; infos.len()];
        for j in self.next.all.iter().copied().flatten() {
            indeg[j] += 1;
        }
        let mut order = Vec::with_capacity(infos.len());
        let mut queue: Vec<usize> = (0..infos.len()).filter(|&i| indeg[i] == 0).collect();
        while let Some(i) = queue.pop() {
            order.push(i);
            for j in self.next.of(i).iter().copied().flatten() {
                indeg[j] -= 1;
                if indeg[j] == 0 {
                    queue.push(j);
                }
            }
        }
        for &i in order.iter().rev() {
            let needed = self
                .next
                .of(i)
                .iter()
                .copied()
                .flatten()
                .any(|j| infos[j].needed || infos[j].target);
            infos[i].needed = needed;
        }
    }

    /// Step 4: each node waits for one gradient along every edge from a
    /// node that runs.
    #[inline]
    fn count_dependencies(&mut self) {
        for i in 0..self.infos.len() {
            if !self.infos[i].needed {
                continue;
            }
            for j in self.next.of(i).iter().copied().flatten() {
                if self.infos[j].active() {
                    self.infos[j].deps += 1;
                }
            }
        }
    }

    /// Step 5: the roots' gradients into their nodes' buffers; the nodes
    /// ready to run into `ready`.
    #[inline]
    fn seed(
        &mut self,
        index: &NodeIndex,
        root_edges: &[Edge],
        root_grads: SmallVec<[Tensor; 1]>,
        ready: &mut Ready,
    ) -> Result<()> {
        for (e, g) in root_edges.iter().zip(root_grads) {
            let Some(i) = index.get(node_id(&e.node)) else {
                continue;
            };
            let info = &mut self.infos[i];
            if !info.active() {
                continue;
            }
            info.seeded = true;
            if let Some(slot) = info.buffer.get_mut(e.input_nr as usize) {
                add_into(slot, g)?;
            }
        }
        for (i, n) in self.infos.iter().enumerate() {
            if n.seeded && n.deps == 0 {
                ready.push((n.node.sequence_nr(), i));
            }
        }
        Ok(())
    }

    /// Step 6: node `i`'s backward on the gradients that arrived, told which
    /// of its outputs are wanted; one gradient per next edge.
    #[inline]
    fn call_backward(&self, i: usize, grads: Grads, keep_graph: bool) -> Result<Grads> {
        let node = self.infos[i].node;
        let edges = self.next.of(i);
        // Which gradients are wanted, on the stack for up to four edges.
        let wanted = |j: &Option<usize>| j.is_some_and(|j| self.infos[j].active());
        let mut few = [false; 4];
        let many: Vec<bool>;
        let needed: &[bool] = match edges.len() {
            n if n <= few.len() => {
                for (k, j) in edges.iter().enumerate() {
                    few[k] = wanted(j);
                }
                &few[..n]
            }
            _ => {
                many = edges.iter().map(wanted).collect();
                &many
            }
        };
        let ctx = BackwardCtx {
            needed,
            input_meta: node.input_metas(),
        };
        let outputs = node.run_backward(grads, &ctx, !keep_graph)?;
        if outputs.len() != edges.len() {
            return Err(runtime(format!(
                "function {} returned an incorrect number of gradients (expected {}, got {})",
                node.name(),
                edges.len(),
                outputs.len()
            )));
        }
        Ok(outputs)
    }

    /// Step 7: each gradient node `i` produced, checked against the input it
    /// reaches (PyTorch's `validate_outputs`) and summed into its buffer; a
    /// node whose last gradient arrived is ready.
    #[inline]
    fn send(&mut self, i: usize, outputs: Grads, ready: &mut Ready) -> Result<()> {
        let node = self.infos[i].node;
        for (index, ((j, e), g)) in self
            .next
            .of(i)
            .iter()
            .copied()
            .zip(node.next_edges())
            .zip(outputs)
            .enumerate()
        {
            let (Some(j), Some(e)) = (j, e) else { continue };
            let to = &mut self.infos[j];
            if !to.active() {
                continue;
            }
            if let Some(g) = g {
                let g = check_gradient(&e.node, e.input_nr, g, node.name(), index)?;
                if let Some(slot) = to.buffer.get_mut(e.input_nr as usize) {
                    add_into(slot, g)?;
                }
            }
            to.deps -= 1;
            if to.deps == 0 {
                ready.push((to.node.sequence_nr(), j));
            }
        }
        Ok(())
    }
}

/// Before a node runs: the hooks on the gradients arriving at its inputs,
/// then the gradients retained there (only nodes that have either).
fn before_node(node: &Node, grads: &mut Grads) -> Result<()> {
    for (input, hook) in node.pre_hooks() {
        if let Some(g) = grads.get_mut(input as usize) {
            if let Some(cur) = g.as_ref() {
                if let Some(new) = hook(cur)? {
                    *g = Some(new);
                }
            }
        }
    }
    for (input, t) in node.retained() {
        if let (Some(Some(g)), Some(t)) = (grads.get(input as usize), t.upgrade()) {
            retain_grad(&t, g)?;
        }
    }
    Ok(())
}

/// The gradients arriving at `node` that are targets of the pass.
fn capture(targets: &[Edge], node: &Arc<Node>, grads: &Grads, captured: &mut [Option<Tensor>]) {
    for (k, t) in targets.iter().enumerate() {
        if Arc::ptr_eq(&t.node, node) {
            captured[k] = grads.get(t.input_nr as usize).cloned().flatten();
        }
    }
}

/// The roots of a pass: each output's edge and its gradient (given, or ones
/// for a one-element output), with PyTorch's checks and messages.
fn make_roots(outputs: &[Tensor], grads: &[Option<Tensor>]) -> Result<Roots> {
    if !grads.is_empty() && grads.len() != outputs.len() {
        return Err(runtime(format!(
            "got {} tensors and {} gradients",
            outputs.len(),
            grads.len()
        )));
    }
    let mut made: SmallVec<[Option<Tensor>; 1]> = SmallVec::with_capacity(outputs.len());
    for (i, out) in outputs.iter().enumerate() {
        match grads.get(i).cloned().flatten() {
            Some(g) => {
                if g.shape() != out.shape() {
                    return Err(runtime(format!(
                        "Mismatch in shape: grad_output[{i}] has a shape of {} and output[{i}] has a shape of {}.",
                        torch_size(&g.shape()),
                        torch_size(&out.shape())
                    )));
                }
                // The engine's first `validate_outputs`: a gradient of
                // another dtype is cast to the output's before the pass (a
                // float32 gradient of a float64 output is summed in float64).
                let g = super::formulas::cast_to(g, out.dtype())?;
                made.push(Some(g));
            }
            None if out.requires_grad() => {
                if out.numel() != 1 {
                    return Err(runtime(
                        "grad can be implicitly created only for scalar outputs",
                    ));
                }
                // PyTorch's implicit gradient, through the dispatcher (a
                // dispatch-level log shows `aten.ones_like.default` with
                // `pin_memory=False, memory_format=torch.preserve_format`).
                made.push(Some(crate::at::ones_like(
                    out,
                    None,
                    None,
                    None,
                    Some(false),
                    Some(MemoryFormat::Preserve),
                )?));
            }
            None => made.push(None),
        }
    }
    let mut roots = Roots {
        edges: SmallVec::with_capacity(outputs.len()),
        grads: SmallVec::with_capacity(outputs.len()),
    };
    for (i, (out, g)) in outputs.iter().zip(made).enumerate() {
        let edge = gradient_edge(out).filter(|_| out.requires_grad());
        match (edge, g) {
            (Some(e), Some(g)) => {
                roots.edges.push(e);
                roots.grads.push(g);
            }
            _ => {
                return Err(runtime(format!(
                    "element {i} of tensors does not require grad and does not have a grad_fn"
                )))
            }
        }
    }
    Ok(roots)
}

/// The edges of the tensors whose gradients are wanted, each required to
/// require grad.
fn target_edges(inputs: &[Tensor]) -> Result<Vec<Edge>> {
    inputs
        .iter()
        .map(|t| {
            gradient_edge(t)
                .ok_or_else(|| runtime("One of the differentiated Tensors does not require grad"))
        })
        .collect()
}

/// `torch.autograd.backward`: computes the gradients of `tensors` (with
/// `grad_tensors`, one per tensor, `None` for ones on a one-element output; an
/// empty slice for all `None`) with respect to the leaves of their graph, and
/// adds them to the leaves' `.grad`. `retain_graph` defaults to
/// `create_graph`; without it, the graph's saved tensors are freed. With
/// `inputs`, only those tensors' gradients are computed and accumulated (into
/// their `.grad`, leaves or not).
///
/// ```
/// use opforge::autograd;
/// use opforge::Tensor;
/// let x = Tensor::from_vec(vec![1.0f32, 2.0], &[2])?;
/// // A tensor that does not require grad has nothing to differentiate.
/// let e = autograd::backward(&[x], &[], None, false, None).unwrap_err();
/// assert!(e.to_string().contains("element 0 of tensors does not require grad"));
/// # Ok::<(), opforge::Error>(())
/// ```
pub fn backward(
    tensors: &[Tensor],
    grad_tensors: &[Option<Tensor>],
    retain_graph: Option<bool>,
    create_graph: bool,
    inputs: Option<&[Tensor]>,
) -> Result<()> {
    if inputs.is_some_and(|i| i.is_empty()) {
        return Err(runtime("'inputs' argument to backward() cannot be empty."));
    }
    let roots = make_roots(tensors, grad_tensors)?;
    let keep_graph = retain_graph.unwrap_or(create_graph);
    match inputs {
        None => run(roots, None, keep_graph, create_graph).map(drop),
        Some(inputs) => {
            let targets = target_edges(inputs)?;
            let got = run(roots, Some(&targets), keep_graph, create_graph)?;
            let _mode = set_grad_enabled(create_graph);
            for (t, g) in inputs.iter().zip(got) {
                if let Some(g) = g {
                    let g = if t.is_leaf() {
                        run_tensor_hooks(t, g)?
                    } else {
                        g
                    };
                    accumulate_grad(t, g, create_graph)?;
                }
            }
            Ok(())
        }
    }
}

/// `torch.autograd.grad`: the gradients of `outputs` (with `grad_outputs`,
/// as `grad_tensors` of [`backward`]) with respect to `inputs`, returned
/// rather than accumulated. An input the outputs do not depend on is an error
/// unless `allow_unused` (then its gradient is `None`).
pub fn grad(
    outputs: &[Tensor],
    inputs: &[Tensor],
    grad_outputs: &[Option<Tensor>],
    retain_graph: Option<bool>,
    create_graph: bool,
    allow_unused: bool,
) -> Result<Vec<Option<Tensor>>> {
    if inputs.is_empty() {
        return Err(runtime("`inputs` argument to `grad()` cannot be empty."));
    }
    let roots = make_roots(outputs, grad_outputs)?;
    let targets = target_edges(inputs)?;
    let keep_graph = retain_graph.unwrap_or(create_graph);
    let got = run(roots, Some(&targets), keep_graph, create_graph)?;
    let _mode = set_grad_enabled(create_graph);
    let mut result = Vec::with_capacity(got.len());
    for (t, g) in inputs.iter().zip(got) {
        match g {
            Some(g) if t.is_leaf() => result.push(Some(run_tensor_hooks(t, g)?)),
            Some(g) => result.push(Some(g)),
            None if allow_unused => result.push(None),
            None => {
                return Err(runtime(
                    "One of the differentiated Tensors appears to not have been used in the graph. Set allow_unused=True if this is the desired behavior.",
                ))
            }
        }
    }
    Ok(result)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ready_nodes_come_out_greatest_first_as_from_a_heap() {
        // Pushes and pops interleaved, past the inline list and back.
        let mut ready = Ready::default();
        let mut heap = BinaryHeap::new();
        let mut x: u64 = 7;
        for step in 0..400 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let push = step % 7 < 4 || step > 300 && step % 3 == 0;
            if push {
                let item = (x >> 58, step);
                ready.push(item);
                heap.push(item);
            } else {
                assert_eq!(ready.pop(), heap.pop(), "step {step}");
            }
        }
        while let Some(top) = heap.pop() {
            assert_eq!(ready.pop(), Some(top));
        }
        assert_eq!(ready.pop(), None);
    }

    #[test]
    fn the_node_index_finds_every_node_past_the_small_table() {
        let mut index = NodeIndex::default();
        let ids: Vec<usize> = (0..3 * SMALL_GRAPH).map(|i| 0x1000 + 64 * i).collect();
        for (at, &id) in ids.iter().enumerate() {
            assert!(index.insert(id, at), "{id:#x} is new");
            assert!(!index.insert(id, at + 1), "{id:#x} is there already");
        }
        for (at, &id) in ids.iter().enumerate() {
            assert_eq!(index.get(id), Some(at));
        }
        assert_eq!(index.get(0x10), None);
        assert!(!index.large.is_empty(), "moved to the hash map");
    }
}
