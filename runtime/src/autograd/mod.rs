//! Autograd: grad mode, the graph, saved tensors, the backward engine, and
//! what an Autograd kernel calls to record.
//!
//! The layer sits above `at` and below everything that parses or overrides.
//! A tensor keeps autograd's record of it ([`AutogradMeta`], `meta.rs`) and
//! its history (a [`Node`], `graph.rs`) in narrow slots of the tensor layer
//! (`crate::tensor::AutogradRecord`, `crate::tensor::GraphNode`), which sees
//! a node only as its name; [`node_of`] gives a history's node back as this
//! layer's type. The `Autograd` key is in a tensor's key set only while it
//! requires grad, so calls on other tensors never reach an Autograd kernel.
//!
//! - [`mode`]: thread-local grad mode and its guards ([`no_grad`],
//!   [`enable_grad`], [`set_grad_enabled`], [`inference_mode`]).
//! - [`node`]: [`Node`], [`Edge`] and the [`Backward`] trait a node's
//!   computation implements (from `graph.rs`), accumulators for leaves,
//!   [`live_nodes`].
//! - [`saved`]: [`SavedTensor`], checked against the storage's version on
//!   unpack, released after a backward without `retain_graph`.
//! - [`record`](mod@record): [`Recording`] (begin / finish around an Autograd kernel's
//!   redispatch), [`record()`]; [`below_autograd`] (the exclude guard) is in
//!   [`mode`], [`gradient_edge`] and [`accumulator`] in [`node`].
//! - [`engine`]: [`backward()`] and [`grad`].
//! - [`formulas`]: the helpers `derivatives.yaml`'s formulas call; the
//!   generated node types and Autograd kernels (`generated`, from
//!   `$OUT_DIR/opforge/autograd.rs`) are registered at link time.
//! - [`forward_ad`]: forward mode (dual tensors: [`forward_ad::dual_level`],
//!   [`forward_ad::make_dual`], [`forward_ad::unpack_dual`]); the generated
//!   kernels propagate tangents through the forward formulas.
//! - [`functional`]: [`functional::jvp`] on top of forward mode.
//! - [`gradcheck`](mod@gradcheck): [`gradcheck()`] and [`gradgradcheck`]
//!   (PyTorch's `torch.autograd.gradcheck`), finite differences against the
//!   engine's gradients.
//! - [`views`]: differentiable views (marked by view operators' kernels) and
//!   in-place writes through them (`CopySlices`, PyTorch's checks).
//! - [`fallback`]: what an operator without an Autograd kernel records
//!   (PyTorch's `NotImplemented` node for `aten` operators, its "warn"
//!   fallback for other namespaces), the `Autograd` key's link-time fallback.
//! - [`function`](mod@function): custom Functions ([`Function`], PyTorch's
//!   `torch.autograd.Function`) and their context ([`FunctionCtx`]).
//! - [`methods`]: [`TensorAutograd`] (`t.backward()`, `retain_grad`,
//!   `register_hook`, `detach`).

pub mod engine;
pub mod fallback;
pub mod formulas;
pub mod forward_ad;
pub mod function;
pub mod functional;
mod generated;
pub mod gradcheck;
mod graph;
mod meta;
pub mod methods;
pub mod mode;
pub mod node;
pub mod record;
pub mod saved;
pub mod views;

pub use engine::{backward, grad};
pub use function::{Function, FunctionCtx, FunctionValue, FunctionValues};
pub use gradcheck::{gradcheck, gradgradcheck, GradcheckOptions, GradgradcheckOptions};
pub use methods::{RemovableHandle, TensorAutograd};
pub use mode::below_autograd;
pub use mode::{
    enable_grad, inference_mode, is_grad_enabled, is_inference_mode_enabled, no_grad,
    set_grad_enabled, GradModeGuard,
};
pub use node::{
    accumulator, gradient_edge, live_nodes, node_of, AutogradMeta, Backward, BackwardCtx, Edge,
    Edges, GradFn, GradHook, Grads, InputMeta, InputMetas, Node, ReentrantBackward,
};
pub use record::{
    check_differentiable_outputs, check_no_requires_grad, check_out, record, Outputs, Recording,
    Saver, LEAF_INPLACE,
};
pub use saved::{SavedTensor, BACKWARD_TWICE};
