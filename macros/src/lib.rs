//! opforge's procedural macros. Thin entry points: the logic lives in plain
//! functions over `proc_macro2` token streams, so unit tests can call them.
//!
//! Use them through the `opforge` crate, which re-exports them.

mod class;
mod kernel;
mod lookup;
mod module;
mod op;
mod overridable;

/// The messages of the `compile_error!`s in a macro's output (for unit tests).
#[cfg(test)]
pub(crate) fn compile_errors(out: &proc_macro2::TokenStream) -> Vec<String> {
    out.to_string()
        .split("compile_error ! {")
        .skip(1)
        .map(|s| s.split('}').next().unwrap_or("").trim().to_string())
        .collect()
}

use proc_macro::TokenStream;

/// Registers a kernel for an operator under a dispatch key, checking at compile
/// time that the function's parameters (names, order, types) and return type are
/// those the schema maps to. The schema is the one of the crate being compiled:
/// its own `native_functions.yaml` (see `opforge_codegen::Build`), then the
/// runtime's.
///
/// ```ignore
/// use opforge::{kernel, Result, Scalar, Tensor};
///
/// #[kernel(Autograd, "add.Tensor")]
/// fn add_autograd(self_: &Tensor, other: &Tensor, alpha: Scalar) -> Result<Tensor> {
///     opforge::at::add_Tensor(self_, other, alpha)
/// }
///
/// // A kernel the crate's YAML names in `dispatch:` (`CPU: cpu::scale`), found
/// // by its key and name:
/// #[kernel(CPU)]
/// pub fn scale(self_: &Tensor, k: f64) -> Result<Tensor> { … }
/// ```
///
/// A kernel for a key the YAML already names a kernel for is a compile error
/// (a second kernel for one operator and key), and so is a kernel the YAML names
/// but nobody wrote (the generated check names the YAML line).
///
/// The type mapping is documented in `opforge::value`: `Tensor` → `&Tensor`,
/// `Tensor(a!)` → `&mut Tensor`, `Tensor?` → `Option<&Tensor>`, `int[]` → `&[i64]`,
/// `Scalar` → `Scalar`, `self` → `self_`, and so on. Keys: `CPU`, `Meta`,
/// `CompositeExplicitAutograd`, `CompositeImplicitAutograd`, `Autograd`, `Python`, …
#[proc_macro_attribute]
pub fn kernel(attr: TokenStream, item: TokenStream) -> TokenStream {
    kernel::expand(attr.into(), item.into()).into()
}

/// Defines a custom operator from a schema string and a Rust function, at compile
/// time: the compile-time counterpart of `opforge::library` (PyTorch's
/// `torch.library`).
///
/// ```ignore
/// use opforge::{op, Result, Tensor};
///
/// /// Multiplies by `k`.
/// #[op("mylib::scale(Tensor x, float k=1.0) -> Tensor")]
/// pub fn scale(x: &Tensor, k: f64) -> Result<Tensor> {
///     x * k
/// }
///
/// let y = scale(&x, 2.0)?;                                   // typed, through the dispatcher
/// let v = opforge::library::call("mylib::scale", &[x.into()], &[])?; // boxed, k = 1.0
/// ```
///
/// - The schema is parsed at compile time with the schema language of
///   `native_functions.yaml`; it must name its namespace (`mylib::`). A malformed
///   schema is an error on the string.
/// - The function is checked against it exactly as `#[kernel]` checks a kernel
///   (parameter names, order, arity, `(a!)` mutability, types through the same
///   mapping, return type), each problem reported on the offending tokens.
/// - Expansion: the function body becomes the operator's kernel, registered under
///   `key` (default `CompositeExplicitAutograd`: every backend; e.g. `key = CPU`
///   for CPU only), and the definition is collected at link time so that the
///   dispatcher defines the operator when it is built, from any crate. The
///   function's name is then an *entry point* with the schema's Rust signature that
///   calls through the dispatcher, so other kernels (`opforge::library`'s
///   `impl_`/`register_fake`), modes and the Python key apply. Inside the body, the
///   name refers to the kernel itself (a recursive call does not re-dispatch).
/// - A second overload is another `#[op]` on another function
///   (`#[op("mylib::scale.int(Tensor x, int k) -> Tensor")] fn scale_int(...)`);
///   calling `library::call("mylib::scale", ...)` picks among them like
///   `torch.ops.mylib.scale(...)`.
#[proc_macro_attribute]
pub fn op(attr: TokenStream, item: TokenStream) -> TokenStream {
    op::expand(attr.into(), item.into()).into()
}

/// The second half of `#[kernel]`: called back by the schema lookup of the crate
/// being compiled with the operator's schema. Not an API.
#[doc(hidden)]
#[proc_macro]
pub fn kernel_impl(input: TokenStream) -> TokenStream {
    kernel::expand_impl(input.into()).into()
}

/// The second half of `#[op]`: called back by the schema lookup of the crate
/// being compiled. Not an API.
#[doc(hidden)]
#[proc_macro]
pub fn op_impl(input: TokenStream) -> TokenStream {
    op::expand_impl(input.into()).into()
}

/// Makes a function of yours overridable by `__torch_function__` handlers and
/// function modes, like PyTorch's `torch.overrides.wrap_torch_function(dispatcher)`
/// (the 2019 design's `torch_function_dispatch(dispatcher, verify=True)`).
///
/// ```ignore
/// use opforge::{dispatcher, overridable, Result, Tensor};
///
/// /// The tensors a handler may be found on (`None` parameters are skipped).
/// #[dispatcher]
/// fn scaled_add_dispatcher(x: &Tensor, bias: Option<&Tensor>, k: f64) -> impl IntoIterator<Item = &Tensor> {
///     std::iter::once(x).chain(bias)
/// }
///
/// /// `x * k + bias`.
/// #[overridable(dispatcher = scaled_add_dispatcher)]
/// pub fn scaled_add(x: &Tensor, bias: Option<&Tensor>, k: f64) -> Result<Tensor> {
///     let y = (x * k)?;
///     match bias {
///         Some(b) => &y + b,
///         None => Ok(y),
///     }
/// }
///
/// let y = scaled_add(&x, None, 2.0)?; // plain tensors: the body runs, nothing is boxed
/// // A handler sees `call.func() == scaled_add_func()`,
/// // `resolve_name(scaled_add_func()) == "<module path, dotted>.scaled_add"`.
/// ```
///
/// - **The dispatcher** is a function marked [`macro@dispatcher`] with the same
///   parameters (names, order and types; a leading `_` on a dispatcher parameter
///   is ignored) that returns the relevant tensor arguments: anything iterable over
///   `&Tensor` (`[x]`, `[x, y]`, `std::iter::once(x).chain(bias)`, `xs` for
///   `xs: &[Tensor]`). Anything else is a compile error:
///   `implementation and dispatcher for `scaled_add` have different function
///   signatures`, showing both, or at the parameter whose type differs.
/// - **A call** computes the relevant tensors with the dispatcher. If none is a
///   tensor-like (subclass instance, wrapper or duck) and no function mode is
///   active, the body runs directly. Otherwise the arguments are boxed (all
///   positional) and offered to the modes and the tensor-likes' classes
///   (`opforge::overrides::handle_torch_function`); a handler's result is
///   converted back to the return type, and if nobody applies the body runs. When
///   every handler returns `NotImplemented`, the error is PyTorch's for Python
///   functions: `no implementation found for '<module>.<name>' on types that
///   implement __torch_function__: [...]`.
/// - **`<name>_func()`**, generated beside the function with its visibility,
///   returns its `opforge::overrides::Func`: compare
///   `call.func()` against it, or key tables by it. Its module is
///   `module_path!()` with `::` written `.`; calling it boxed (`func.call(args,
///   kwargs)`, `call.call_func()`, `call.default(cls)`) binds positional and
///   keyword arguments by name (a missing `Option` parameter is `None`) and runs
///   the body.
/// - **Types**: parameters need `ToValue` + `FromValue` (`&Tensor`,
///   `Option<&Tensor>`, `&[Tensor]`, `i64`, `f64`, `bool`, `Scalar`, `&[i64]`,
///   `&str`, `DType`, …, and `Option`s of them); the function returns
///   `Result<T>` with `T: IntoValues + FromValues` (`Tensor`, tuples of tensors,
///   `Vec<Tensor>`, scalars, `()`). Others are a compile error at the type.
/// - Free functions only (no methods, no type parameters); inside the body the
///   function's own name is the overridable wrapper, as in Python.
#[proc_macro_attribute]
pub fn overridable(attr: TokenStream, item: TokenStream) -> TokenStream {
    overridable::expand(attr.into(), item.into()).into()
}

/// Marks the dispatcher of an [`macro@overridable`] function: a function with the
/// same parameters returning the relevant tensor arguments (anything iterable over
/// `&Tensor`). Elided lifetimes in its signature all become one, so
/// `fn d(x: &Tensor, y: Option<&Tensor>) -> [Option<&Tensor>; 2]`-style
/// signatures need no annotations; unused parameters do not warn. It must be an
/// item of a module (not of a block), visible where the overridable function is.
///
/// ```ignore
/// #[dispatcher]
/// fn cat_dispatcher(tensors: &[Tensor], dim: i64) -> &[Tensor] {
///     tensors
/// }
/// ```
#[proc_macro_attribute]
pub fn dispatcher(attr: TokenStream, item: TokenStream) -> TokenStream {
    overridable::expand_dispatcher(attr.into(), item.into()).into()
}

/// Declares a Rust type a custom class (PyTorch's TorchBind `torch::class_`)
/// named `ns::Name`; `#[methods]` on its impl block registers it. See
/// `opforge::classes`.
///
/// ```ignore
/// use opforge::{custom_class, methods, Tensor};
/// use std::sync::Mutex;
///
/// #[custom_class("MyCustomClass::TensorQueue")]
/// pub struct TensorQueue {
///     queue: Mutex<Vec<Tensor>>,
/// }
///
/// #[methods]
/// impl TensorQueue {
///     pub fn new(init: Tensor) -> Self { … }        // __init__
///     pub fn push(&self, x: Tensor) { … }           // push(… _0, Tensor _1) -> NoneType _0
///     pub fn size(&self) -> i64 { … }
///     // Pickling (PyTorch's `def_pickle`): save, load and deep copies.
///     pub fn __getstate__(&self) -> Vec<Tensor> { … }
///     pub fn __setstate__(state: Vec<Tensor>) -> opforge::Result<Self> { … }
/// }
/// ```
#[proc_macro_attribute]
pub fn custom_class(attr: TokenStream, item: TokenStream) -> TokenStream {
    class::expand_class(attr.into(), item.into()).into()
}

/// Registers a custom class's constructor (`pub fn new`) and methods (every
/// other `pub fn` taking `&self`) at link time, and its pickling when it has
/// `pub fn __getstate__(&self) -> S` and `pub fn __setstate__(state: S) ->
/// opforge::Result<Self>` (or `-> Self`); see [`macro@custom_class`].
#[proc_macro_attribute]
pub fn methods(attr: TokenStream, item: TokenStream) -> TokenStream {
    class::expand_methods(attr.into(), item.into()).into()
}

/// `#[derive(Module)]`: a struct's fields as a module's members
/// (`opforge::nn::ModuleMembers`), under the fields' names. `Tensor` and
/// `Option<Tensor>` fields are parameters (`#[module(buffer)]`: buffers), a
/// `#[module(training)] bool` field is the module's training flag,
/// `#[module(skip)]` fields are not members, and every other field is a child
/// module (`Vec<M>` is PyTorch's `ModuleList`). The derive also writes
/// `Display` as PyTorch's `print(model)`. The struct then implements
/// `opforge::nn::Module` with its `forward`.
///
/// ```ignore
/// use opforge::nn::{self, Module};
/// use opforge::{Result, Tensor};
///
/// #[derive(Module)]
/// struct Mlp {
///     fc1: nn::Linear,
///     fc2: nn::Linear,
/// }
///
/// impl Module for Mlp {
///     fn forward(&self, x: &Tensor) -> Result<Tensor> {
///         self.fc2.forward(&self.fc1.forward(x)?.relu()?)
///     }
/// }
/// ```
#[proc_macro_derive(Module, attributes(module))]
pub fn derive_module(input: TokenStream) -> TokenStream {
    module::derive(input.into()).into()
}
