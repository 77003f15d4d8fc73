//! Run-time custom operators, like PyTorch's `torch.library`
//! (`torch/library.py`): define operators from schema strings, register
//! kernels for them under any dispatch key, a fake (shape-only) kernel for meta
//! tensors, and call them boxed with the schema-level rules of
//! `torch.ops.<ns>.<name>(...)` (overload resolution, keywords, defaults).
//!
//! - [`Library`]: a `TORCH_LIBRARY` (`Def`), `TORCH_LIBRARY_FRAGMENT` (`Fragment`)
//!   or `TORCH_LIBRARY_IMPL` (`Impl`) block for one namespace;
//!   [`Library::define`] and [`Library::impl_`] are PyTorch's `def` and `impl`.
//! - [`register_fake`]: the kernel meta tensors run.
//! - [`call`] / [`resolve`]: schema-level calls by name; `Operator::call_boxed`
//!   (on [`find`]'s handle) calls one overload with every argument given.
//!
//! Definitions and kernels are permanent: operators live for the whole program,
//! as with C++ `TORCH_LIBRARY` blocks (a [`Library`] value can be dropped; what
//! it registered stays). The compile-time counterpart is `#[op]`
//! ([`crate::op`]), which defines through the same dispatcher.
//!
//! ```
//! use opforge::dispatch::DispatchKey;
//! use opforge::library::{self, Library, LibraryKind};
//! use opforge::{Tensor, Value};
//!
//! let lib = Library::new("doc_lib", LibraryKind::Def)?;
//! assert_eq!(lib.define("twice(Tensor x, float k=2.0) -> Tensor")?, "doc_lib::twice");
//! lib.impl_("twice", DispatchKey::CPU, |args: &[Value]| {
//!     let (Value::Tensor(x), Value::Float(k)) = (&args[0], &args[1]) else { unreachable!() };
//!     let out: Vec<f32> = x.to_vec::<f32>()?.iter().map(|v| v * *k as f32).collect();
//!     Ok(vec![Value::Tensor(Tensor::from_vec(out, &x.shape())?)])
//! })?;
//! let x = Value::Tensor(Tensor::from_vec(vec![1.0f32, 2.0], &[2])?);
//! let out = library::call("doc_lib::twice", &[x], &[])?; // k = 2.0 by default
//! let Value::Tensor(y) = &out[0] else { unreachable!() };
//! assert_eq!(y.to_vec::<f32>()?, vec![2.0, 4.0]);
//! # Ok::<(), opforge::Error>(())
//! ```

use crate::dispatch::{dispatcher, DispatchKey, Kernel, Operator};
use crate::error::{Error, Result};
use crate::packet::Overload;
use crate::packet::Resolved;
use crate::value::Value;
use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::{Arc, Mutex, OnceLock};

/// The kind of a [`Library`] block, PyTorch's `Library(ns, kind)`.
///
/// ```
/// use opforge::library::LibraryKind;
/// assert_eq!("FRAGMENT".parse::<LibraryKind>()?, LibraryKind::Fragment);
/// let e = "BOGUS".parse::<LibraryKind>().unwrap_err();
/// assert_eq!(e.to_string(), "Unsupported kind: BOGUS");
/// assert_eq!(e.python_class(), "ValueError");
/// # Ok::<(), opforge::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LibraryKind {
    /// `DEF` (`TORCH_LIBRARY`): owns its namespace; one per namespace.
    Def,
    /// `FRAGMENT` (`TORCH_LIBRARY_FRAGMENT`): adds definitions to a namespace.
    Fragment,
    /// `IMPL` (`TORCH_LIBRARY_IMPL`): kernels only, no definitions.
    Impl,
}

impl LibraryKind {
    /// The C++ block name PyTorch's messages use (`TORCH_LIBRARY_IMPL`).
    ///
    /// ```
    /// use opforge::library::LibraryKind;
    /// assert_eq!(LibraryKind::Def.block(), "TORCH_LIBRARY");
    /// ```
    pub fn block(self) -> &'static str {
        match self {
            LibraryKind::Def => "TORCH_LIBRARY",
            LibraryKind::Fragment => "TORCH_LIBRARY_FRAGMENT",
            LibraryKind::Impl => "TORCH_LIBRARY_IMPL",
        }
    }
}

impl std::str::FromStr for LibraryKind {
    type Err = Error;

    /// `DEF`, `FRAGMENT` or `IMPL`; anything else is PyTorch's
    /// `ValueError: Unsupported kind: ...`.
    fn from_str(s: &str) -> Result<LibraryKind> {
        match s {
            "DEF" => Ok(LibraryKind::Def),
            "FRAGMENT" => Ok(LibraryKind::Fragment),
            "IMPL" => Ok(LibraryKind::Impl),
            _ => Err(Error::Value(format!("Unsupported kind: {s}").into())),
        }
    }
}

impl fmt::Display for LibraryKind {
    /// `DEF`, `FRAGMENT` or `IMPL`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            LibraryKind::Def => "DEF",
            LibraryKind::Fragment => "FRAGMENT",
            LibraryKind::Impl => "IMPL",
        })
    }
}

/// Namespaces owned by a `Def` library, with where it was created. `aten` belongs
/// to the built-in tables.
fn owners() -> &'static Mutex<HashMap<String, String>> {
    static OWNERS: OnceLock<Mutex<HashMap<String, String>>> = OnceLock::new();
    OWNERS.get_or_init(|| {
        Mutex::new(HashMap::from([(
            "aten".to_string(),
            "native_functions.yaml".to_string(),
        )]))
    })
}

/// Operators whose Meta kernel was registered by [`register_fake`].
fn fakes() -> &'static Mutex<HashSet<String>> {
    static FAKES: OnceLock<Mutex<HashSet<String>>> = OnceLock::new();
    FAKES.get_or_init(Mutex::default)
}

#[track_caller]
fn caller() -> String {
    let l = std::panic::Location::caller();
    format!("{}:{}", l.file(), l.line())
}

/// A block of registrations for one namespace: PyTorch's
/// `torch.library.Library(ns, kind)`.
///
/// ```
/// use opforge::library::{Library, LibraryKind};
/// let _def = Library::new("doc_owner", LibraryKind::Def)?;
/// let _more = Library::new("doc_owner", LibraryKind::Fragment)?; // fine
/// let e = Library::new("doc_owner", LibraryKind::Def).unwrap_err();
/// assert!(e.to_string().starts_with(
///     "Only a single TORCH_LIBRARY can be used to register the namespace doc_owner; "
/// ));
/// # Ok::<(), opforge::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct Library {
    namespace: String,
    kind: LibraryKind,
    source: String,
}

impl Library {
    /// Opens a block for `namespace`. A second `Def` for a namespace is an error
    /// naming both places (PyTorch's text); `Fragment` and `Impl` blocks may be
    /// opened any number of times. The namespace must be an identifier.
    ///
    /// ```
    /// use opforge::library::{Library, LibraryKind};
    /// let lib = Library::new("doc_new", LibraryKind::Impl)?;
    /// assert_eq!((lib.namespace(), lib.kind()), ("doc_new", LibraryKind::Impl));
    /// assert!(Library::new("not a namespace", LibraryKind::Fragment).is_err());
    /// # Ok::<(), opforge::Error>(())
    /// ```
    #[track_caller]
    pub fn new(namespace: &str, kind: LibraryKind) -> Result<Library> {
        let source = caller();
        if !opforge_schema::schema::is_ident(namespace) {
            return Err(Error::Value(
                format!("invalid namespace `{namespace}`: expected an identifier").into(),
            ));
        }
        if kind == LibraryKind::Def {
            let mut owners = owners().lock().unwrap_or_else(|e| e.into_inner());
            if let Some(previous) = owners.get(namespace) {
                return Err(Error::Runtime(format!(
                    "Only a single TORCH_LIBRARY can be used to register the namespace {namespace}; please put all of your definitions in a single TORCH_LIBRARY block.  If you were trying to specify implementations, consider using TORCH_LIBRARY_IMPL (which can be duplicated).  If you really intended to define operators for a single namespace in a distinct location, rename your namespace.  If you need to register ops in multiple places with the same namespace, use TORCH_LIBRARY_FRAGMENT instead.  Previous registration of TORCH_LIBRARY was registered at {previous}; latest registration was registered at {source}"
                ).into()));
            }
            owners.insert(namespace.to_string(), source.clone());
        }
        Ok(Library {
            namespace: namespace.to_string(),
            kind,
            source,
        })
    }

    /// The namespace.
    ///
    /// ```
    /// # use opforge::library::{Library, LibraryKind};
    /// assert_eq!(Library::new("doc_ns", LibraryKind::Fragment)?.namespace(), "doc_ns");
    /// # Ok::<(), opforge::Error>(())
    /// ```
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// The kind.
    ///
    /// ```
    /// # use opforge::library::{Library, LibraryKind};
    /// assert_eq!(Library::new("doc_kind", LibraryKind::Impl)?.kind(), LibraryKind::Impl);
    /// # Ok::<(), opforge::Error>(())
    /// ```
    pub fn kind(&self) -> LibraryKind {
        self.kind
    }

    /// Defines an operator from a schema in runtime syntax, namespace optional
    /// (`foo(Tensor x, float a=1.) -> Tensor`, `myns::foo.out(...)`): PyTorch's
    /// `lib.define(schema)`. Returns the qualified name (`myns::foo`).
    ///
    /// Errors (PyTorch's texts): a malformed schema (with the parser's column and
    /// message), a definition in an `Impl` block, an explicit namespace other than
    /// the library's, and a second definition of the same name and overload.
    ///
    /// ```
    /// use opforge::library::{Library, LibraryKind};
    /// let lib = Library::new("doc_define", LibraryKind::Def)?;
    /// assert_eq!(lib.define("foo(Tensor x, float a=1.) -> Tensor")?, "doc_define::foo");
    /// assert_eq!(lib.define("doc_define::foo.int(Tensor x, int a) -> Tensor")?, "doc_define::foo.int");
    /// let e = lib.define("foo(Tensor x, float a=1.) -> Tensor").unwrap_err();
    /// assert!(e.to_string().starts_with("Tried to register an operator (doc_define::foo(Tensor x, float a=1.) -> Tensor) with the same name and overload name multiple times."));
    /// let e = lib.define("other::bar(Tensor x) -> Tensor").unwrap_err();
    /// assert!(e.to_string().starts_with("Explicitly provided namespace (other) in schema string does not match namespace of enclosing TORCH_LIBRARY block (doc_define)."));
    /// assert!(lib.define("bar(Tensor x) ->").unwrap_err().to_string().contains("column"));
    /// # Ok::<(), opforge::Error>(())
    /// ```
    #[track_caller]
    pub fn define(&self, schema: &str) -> Result<String> {
        let source = caller();
        let mut func = opforge_schema::schema::parse_schema(schema).map_err(|e| {
            let schema = opforge_schema::diag::abbrev(schema);
            Error::Runtime(format!("Invalid schema string `{schema}`: {e}").into())
        })?;
        // PyTorch's run-time parser takes one identifier as the overload name
        // and refuses the two that would shadow a Python attribute of the
        // packet (`torch.ops.ns.f.default` is the default overload).
        let overload = func.name.overload.as_str();
        if let Some(dot) = overload.find('.') {
            // 1-based, as the parser's columns (names are ASCII).
            let column = schema.find('.').map_or(0, |i| i + 1 + dot) + 1;
            return Err(Error::Runtime(
                format!(
                    "Invalid schema string `{}`: column {column}: expected eof but found '.' here: an overload name is one identifier",
                    opforge_schema::diag::abbrev(schema)
                )
                .into(),
            ));
        }
        if overload == "default" || overload == "__name__" {
            return Err(Error::Runtime(
                format!("{overload} is not a legal overload name for aten operators").into(),
            ));
        }
        // The parser takes any default text; a call would find no value in it.
        let bad_default = func.arguments.all.iter().find_map(|a| {
            let d = a.default.as_ref()?;
            (!opforge_schema::validate::default_fits(&a.ty, d.value.as_ref())).then_some((a, d))
        });
        if let Some((a, d)) = bad_default {
            return Err(Error::Runtime(
                format!(
                    "Invalid schema string `{}`: default `{}` of argument `{}` is not a literal of type `{}`",
                    opforge_schema::diag::abbrev(schema),
                    opforge_schema::diag::abbrev(&d.text),
                    a.name,
                    a.ty
                )
                .into(),
            ));
        }
        if self.kind == LibraryKind::Impl {
            return Err(Error::Runtime(format!(
                "def(\"{}\"): Cannot define an operator inside of a {} block.  All def()s should be placed in the (unique) TORCH_LIBRARY block for their namespace.  (Error occurred while processing {} block at {}.)",
                func.name,
                self.kind.block(),
                self.kind.block(),
                self.source
            ).into()));
        }
        match &func.name.namespace {
            Some(ns) if *ns != self.namespace => {
                return Err(Error::Runtime(format!(
                    "Explicitly provided namespace ({ns}) in schema string does not match namespace of enclosing {} block ({}).  Move this definition to the (unique) TORCH_LIBRARY block corresponding to this namespace (and consider deleting the namespace from your schema string.)  (Error occurred while processing {} block at {}.)",
                    self.kind.block(),
                    self.namespace,
                    self.kind.block(),
                    self.source
                ).into()))
            }
            _ => func.name.namespace = Some(self.namespace.clone()),
        }
        // As PyTorch's run-time parser, a custom class must be registered.
        let types = func.arguments.all.iter().map(|a| &a.ty);
        for t in types.chain(func.returns.iter().map(|r| &r.ty)) {
            if let opforge_schema::model::Type::CustomClass(c) = t.innermost() {
                if !crate::classes::is_registered(c) {
                    return Err(Error::Runtime(
                        format!("Unknown custom class type {c}. Please ensure it is registered.")
                            .into(),
                    ));
                }
            }
        }
        let op = dispatcher().define(crate::tables::op_schema(&func, None), Some(source))?;
        Ok(op.qualified_name())
    }

    /// Registers `kernel` for the operator `op_name` (relative to the library's
    /// namespace, or qualified with it; `.default` names the default overload)
    /// under `key`: PyTorch's `lib.impl(op_name, fn, dispatch_key)`. The kernel
    /// receives one value per schema argument (bound, defaults filled in) and
    /// returns one value per schema return. A second kernel for the same key is
    /// PyTorch's error ("This is not allowed since there's already a kernel
    /// registered ..."); [`Library::impl_override`] replaces one on purpose.
    ///
    /// Keys: backends (`CPU`, `Meta`), `Autograd`, `Python`, `ADInplaceOrView`,
    /// `BackendSelect`, and the alias keys `CompositeExplicitAutograd` (every
    /// backend) and `CompositeImplicitAutograd` (every backend and autograd).
    ///
    /// ```
    /// use opforge::dispatch::DispatchKey;
    /// use opforge::library::{self, Library, LibraryKind};
    /// use opforge::Value;
    /// let lib = Library::new("doc_impl", LibraryKind::Def)?;
    /// lib.define("answer(Tensor x) -> int")?;
    /// lib.impl_("answer", DispatchKey::CompositeExplicitAutograd, |_: &[Value]| Ok(vec![Value::Int(42)]))?;
    /// let x = Value::Tensor(opforge::Tensor::from_vec(vec![1.0f32], &[1])?);
    /// assert!(matches!(library::call("doc_impl::answer", &[x], &[])?[..], [Value::Int(42)]));
    /// assert!(lib.impl_("missing", DispatchKey::CPU, |_: &[Value]| Ok(vec![])).is_err());
    /// # Ok::<(), opforge::Error>(())
    /// ```
    #[track_caller]
    pub fn impl_(
        &self,
        op_name: &str,
        key: DispatchKey,
        kernel: impl Fn(&[Value]) -> Result<Vec<Value>> + Send + Sync + 'static,
    ) -> Result<()> {
        let kernel = Kernel::from_closure(caller(), move |_, _, args| kernel(args));
        self.impl_kernel(op_name, key, kernel)
    }

    /// Like [`Library::impl_`], with a full [`Kernel`]: a closure that also receives
    /// the operator and the key set below its key (PyTorch's `with_keyset=True`,
    /// for redispatch), or [`Kernel::fallthrough`].
    ///
    /// ```
    /// use opforge::dispatch::{DispatchKey, Kernel, KeySet, LocalKeys};
    /// use opforge::library::{self, Library, LibraryKind};
    /// use opforge::Value;
    /// let lib = Library::new("doc_impl_kernel", LibraryKind::Def)?;
    /// lib.define("id(Tensor x) -> Tensor")?;
    /// lib.impl_("id", DispatchKey::CPU, |args: &[Value]| Ok(vec![args[0].clone()]))?;
    /// // A Python-key kernel that redispatches below itself (excluding its key
    /// // meanwhile, as a mode handler runs with its mode popped).
    /// lib.impl_kernel("id", DispatchKey::Python, Kernel::from_closure("doc", |op, keys, args| {
    ///     let _g = LocalKeys::exclude(KeySet::of(DispatchKey::Python));
    ///     op.call_with_keys(keys.below(DispatchKey::Python), args)
    /// }))?;
    /// let _python = LocalKeys::include(KeySet::of(DispatchKey::Python));
    /// let x = Value::Tensor(opforge::Tensor::from_vec(vec![1.0f32], &[1])?);
    /// assert_eq!(library::call("doc_impl_kernel::id", &[x.clone()], &[])?.len(), 1);
    /// # Ok::<(), opforge::Error>(())
    /// ```
    pub fn impl_kernel(&self, op_name: &str, key: DispatchKey, kernel: Kernel) -> Result<()> {
        let (name, op) = self.target(op_name, key)?;
        op.register(key, kernel).map_err(|e| match e {
            Error::DuplicateKernel(d) => Error::Runtime(format!(
                "This is not allowed since there's already a kernel registered from python overriding {}'s behavior for {key} dispatch key and {} namespace. (first registration: {})",
                name.rsplit("::").next().unwrap_or(&name),
                self.namespace,
                d.first
            ).into()),
            other => other,
        })
    }

    /// Like [`Library::impl_`], replacing the kernel already registered for
    /// `key`, if any: PyTorch's `lib.impl(..., allow_override=True)`.
    ///
    /// ```
    /// use opforge::dispatch::DispatchKey;
    /// use opforge::library::{self, Library, LibraryKind};
    /// use opforge::Value;
    /// let lib = Library::new("doc_override", LibraryKind::Def)?;
    /// lib.define("answer(Tensor x) -> int")?;
    /// lib.impl_("answer", DispatchKey::CPU, |_: &[Value]| Ok(vec![Value::Int(1)]))?;
    /// assert!(lib.impl_("answer", DispatchKey::CPU, |_: &[Value]| Ok(vec![Value::Int(2)])).is_err());
    /// lib.impl_override("answer", DispatchKey::CPU, |_: &[Value]| Ok(vec![Value::Int(42)]))?;
    /// let x = Value::Tensor(opforge::Tensor::from_vec(vec![1.0f32], &[1])?);
    /// assert!(matches!(library::call("doc_override::answer", &[x], &[])?[..], [Value::Int(42)]));
    /// # Ok::<(), opforge::Error>(())
    /// ```
    #[track_caller]
    pub fn impl_override(
        &self,
        op_name: &str,
        key: DispatchKey,
        kernel: impl Fn(&[Value]) -> Result<Vec<Value>> + Send + Sync + 'static,
    ) -> Result<()> {
        let kernel = Kernel::from_closure(caller(), move |_, _, args| kernel(args));
        self.target(op_name, key)?.1.override_kernel(key, kernel)
    }

    /// The operator a kernel for `op_name` and `key` goes to, with its qualified
    /// name; a Meta kernel replaces the operator's fake kernel.
    fn target(&self, op_name: &str, key: DispatchKey) -> Result<(String, &'static Operator)> {
        let name = self.qualify(op_name)?;
        let op = find(&name)?;
        if key == DispatchKey::Meta {
            fakes()
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(&op.qualified_name());
        }
        Ok((name, op))
    }

    /// `op_name` qualified with the library's namespace (an explicit other
    /// namespace is PyTorch's `impl()` error).
    fn qualify(&self, op_name: &str) -> Result<String> {
        match op_name.split_once("::") {
            Some((ns, _)) if ns != self.namespace => Err(Error::Runtime(format!(
                "impl(\"{op_name}\", ...): Explicitly provided namespace ({ns}) in operator name does not match namespace of enclosing {} block ({}).  Move this definition to the {} block corresponding to this namespace (and consider deleting the namespace from your schema string.)  (Error occurred while processing {} block at {}.)",
                self.kind.block(),
                self.namespace,
                self.kind.block(),
                self.kind.block(),
                self.source
            ).into())),
            Some(_) => Ok(op_name.to_string()),
            None => Ok(format!("{}::{op_name}", self.namespace)),
        }
    }
}

/// The operator `ns::name.overload` (`ns::name` or `ns::name.default` for the
/// default overload; namespace `aten` when not written), built in or defined at
/// run time. Its `call_boxed` takes one value per schema argument.
///
/// ```
/// use opforge::library::{find, Library, LibraryKind};
/// let lib = Library::new("doc_find", LibraryKind::Def)?;
/// lib.define("f(Tensor x) -> Tensor")?;
/// assert_eq!(find("doc_find::f.default")?.qualified_name(), "doc_find::f");
/// assert_eq!(find("add.Tensor")?.qualified_name(), "aten::add.Tensor");
/// assert_eq!(find("doc_find::g").unwrap_err().to_string(), "unknown operator doc_find::g");
/// # Ok::<(), opforge::Error>(())
/// ```
pub fn find(name: &str) -> Result<&'static Operator> {
    let name = name.strip_suffix(".default").unwrap_or(name);
    dispatcher()
        .find(name)
        .ok_or_else(|| Error::UnknownOp(name.to_string().into()))
}

/// Registers a fake (shape-only) kernel for `op_name` (qualified): the kernel
/// meta tensors run, PyTorch's `torch.library.register_fake`. It receives the
/// bound values (meta tensors) and returns meta tensors of the right shapes and
/// dtypes. Registering again replaces the fake; an operator that already has a
/// Meta kernel from [`Library::impl_`] refuses one. Without either, a call with
/// meta tensors fails with PyTorch's `NotImplementedError` (`myns::foo:
/// attempted to run this operator with Meta tensors, but there was no fake impl
/// or Meta kernel registered. ...`).
///
/// ```
/// use opforge::library::{self, register_fake, Library, LibraryKind};
/// use opforge::{DType, Device, Tensor, Value};
/// let lib = Library::new("doc_fake", LibraryKind::Def)?;
/// lib.define("dup(Tensor x) -> Tensor")?;
/// let meta = Value::Tensor(Tensor::zeros(&[3], DType::Float32, Device::Meta));
/// let e = library::call("doc_fake::dup", &[meta.clone()], &[]).unwrap_err();
/// assert_eq!(e.python_class(), "NotImplementedError");
/// assert!(e.to_string().starts_with("doc_fake::dup: attempted to run this operator with Meta tensors"));
/// register_fake("doc_fake::dup", |args: &[Value]| {
///     let Value::Tensor(x) = &args[0] else { unreachable!() };
///     Ok(vec![Value::Tensor(Tensor::zeros(&x.shape(), x.dtype(), Device::Meta))])
/// })?;
/// let out = library::call("doc_fake::dup", &[meta], &[])?;
/// let Value::Tensor(y) = &out[0] else { unreachable!() };
/// assert_eq!((y.shape(), y.device()), (vec![3], Device::Meta));
/// # Ok::<(), opforge::Error>(())
/// ```
#[track_caller]
pub fn register_fake(
    op_name: &str,
    fake: impl Fn(&[Value]) -> Result<Vec<Value>> + Send + Sync + 'static,
) -> Result<()> {
    let source = caller();
    let op = find(op_name)?;
    let name = op.qualified_name();
    let mut fakes = fakes().lock().unwrap_or_else(|e| e.into_inner());
    if !fakes.contains(&name) && op.registered_keys().contains(&DispatchKey::Meta) {
        return Err(Error::Runtime(format!(
            "register_fake(\"{name}\"): the operator {name} already has an DispatchKey::Meta implementation via a pre-existing torch.library or TORCH_LIBRARY registration. Please either remove that registration or don't call register_fake."
        ).into()));
    }
    let fake: crate::fake::FakeKernel = Arc::new(fake);
    let meta = fake.clone();
    op.override_kernel(
        DispatchKey::Meta,
        Kernel::from_closure(source, move |_, _, args| meta(args)),
    )?;
    // Calls on fake tensors run it on the fakes themselves.
    crate::fake::set_fake_kernel(op, fake);
    fakes.insert(name);
    Ok(())
}

/// Resolves a schema-level call like `torch.ops.<ns>.<name>(*args, **kwargs)`
/// against the dispatcher's operators, built in or defined at run time: `name` is
/// a packet (`myns::foo`: every overload is tried, in definition order) or one
/// overload (`myns::foo.int`, `myns::foo.default`). Conversions, keywords,
/// defaults and error messages are those of [`crate::packet`]. Returns the chosen
/// operator and its bound values.
///
/// ```
/// use opforge::library::{self, Library, LibraryKind};
/// use opforge::Value;
/// let lib = Library::new("doc_resolve", LibraryKind::Def)?;
/// lib.define("f(Tensor x, float a=1.) -> Tensor")?;
/// lib.define("f.int(Tensor x, int n) -> Tensor")?;
/// let x = Value::Tensor(opforge::Tensor::from_vec(vec![1.0f32], &[1])?);
/// let (op, r) = library::resolve("doc_resolve::f", &[x.clone(), Value::Int(3)], &[])?;
/// // An int converts to `float`, so the first overload takes it, as in PyTorch.
/// assert_eq!(op.schema.name, "f");
/// assert!(matches!(r.bound[1], Value::Float(a) if a == 3.0));
/// let (op, _) = library::resolve("doc_resolve::f.int", &[x], &[("n".into(), Value::Int(3))])?;
/// assert_eq!(op.schema.name, "f.int");
/// # Ok::<(), opforge::Error>(())
/// ```
pub fn resolve(
    name: &str,
    args: &[Value],
    kwargs: &[(String, Value)],
) -> Result<(&'static Operator, Resolved)> {
    resolve_among(name, args, kwargs, false)
}

/// [`resolve`] among the operators defined at run time only (what a
/// [`crate::registry::Registry`] adds to its own schema file's).
pub(crate) fn resolve_defined(
    name: &str,
    args: &[Value],
    kwargs: &[(String, Value)],
) -> Result<Resolved> {
    resolve_among(name, args, kwargs, true).map(|(_, r)| r)
}

fn resolve_among(
    name: &str,
    args: &[Value],
    kwargs: &[(String, Value)],
    defined_only: bool,
) -> Result<(&'static Operator, Resolved)> {
    crate::value::check_depth(name, args, kwargs)?;
    let (ns, rest) = name.split_once("::").unwrap_or(("aten", name));
    let d = dispatcher();
    let overloads = |base: &str| -> Vec<&'static Operator> {
        let mut ops = d.overloads(ns, base);
        if defined_only {
            ops.retain(|op| op.defined_at().is_some());
        }
        ops
    };
    let overload = |op: &'static Operator| Overload {
        name: op.schema.name,
        schema_text: crate::packet::declaration(op.schema),
        op: Some(op.schema),
        dispatcher: true,
    };
    let packet_name = |base: &str| format!("{ns}::{base}");
    match rest.split_once('.') {
        None => {
            let ops = overloads(rest);
            if ops.is_empty() {
                return Err(d.no_such_packet(ns, rest));
            }
            let packet: Vec<Overload> = ops.iter().copied().map(overload).collect();
            let r = crate::packet::resolve(&packet_name(rest), &packet, args, kwargs)?;
            Ok((ops[r.index], r))
        }
        Some((base, name)) => {
            let ops = overloads(base);
            if ops.is_empty() {
                return Err(d.no_such_packet(ns, base));
            }
            let wanted = if name == "default" { "" } else { name };
            let Some(i) = ops.iter().position(|op| op.schema.overload == wanted) else {
                return Err(Error::Runtime(
                    format!("The underlying op of '{ns}.{base}' has no overload name '{name}'")
                        .into(),
                ));
            };
            let one = [overload(ops[i])];
            let mut r = crate::packet::resolve(&packet_name(base), &one, args, kwargs)?;
            r.index = i;
            Ok((ops[i], r))
        }
    }
}

/// Calls an operator by name with positional and keyword values, like
/// `torch.ops.<ns>.<name>(*args, **kwargs)`: [`resolve`], then a boxed call
/// through the dispatcher (so modes, the Python key and every kernel apply).
/// Returns one value per schema return.
///
/// Operators of a crate with its own schema are there only if the binary
/// links that crate: name it once (`use my_ops as _;`) when nothing else
/// does. An unknown name fails with PyTorch's message, followed by that
/// advice when no operator of the namespace is registered, or the nearest
/// name when one is close.
///
/// Values convert as `torch.ops` converts Python values, with PyTorch's
/// messages (operator, argument, position, value, declaration as c10 prints
/// it). A number for a `Tensor` is accepted only by the operators PyTorch
/// allow-lists (`aten::add`, `mul`, `div`, `sub`, …): `aten::add.Tensor(1.0,
/// 2.0)` is `tensor(3.)`, `aten::abs(1.5)` is an error (one level down,
/// [`Operator::call_boxed`](crate::dispatch::Operator::call_boxed) takes it as
/// a wrapped number). Where PyTorch's last line is pybind11's text, which
/// means something only in Python, an operator outside `aten` says what did
/// not convert to what instead (`Cast error details: a str does not convert
/// to float`).
///
/// ```
/// use opforge::dispatch::DispatchKey;
/// use opforge::library::{self, Library, LibraryKind};
/// use opforge::Value;
/// let lib = Library::new("doc_call", LibraryKind::Def)?;
/// lib.define("scaled(Tensor x, *, float k=1.) -> float")?;
/// lib.impl_("scaled", DispatchKey::CPU, |args: &[Value]| Ok(vec![args[1].clone()]))?;
/// let x = Value::Tensor(opforge::Tensor::from_vec(vec![1.0f32], &[1])?);
/// let k = ("k".to_string(), Value::Int(2));
/// let out = library::call("doc_call::scaled", &[x.clone()], &[k])?;
/// assert!(matches!(out[..], [Value::Float(k)] if k == 2.0));
/// let e = library::call("doc_call::scaled", &[], &[]).unwrap_err();
/// assert!(e.to_string().contains("missing value for argument 'x'"), "{e}");
/// // Built-in operators work too.
/// assert_eq!(library::call("aten::neg", &[x], &[])?.len(), 1);
/// # Ok::<(), opforge::Error>(())
/// ```
pub fn call(name: &str, args: &[Value], kwargs: &[(String, Value)]) -> Result<Vec<Value>> {
    let values = args.iter().chain(kwargs.iter().map(|(_, v)| v));
    if crate::flags::function_modes_active() || crate::overrides::values_overloaded(values) {
        return call_offered(name, args, kwargs);
    }
    let (op, resolved) = resolve(name, args, kwargs)?;
    op.call_boxed(&resolved.bound)
}

/// [`call`] with a function mode active or a tensor-like argument: as
/// `torch.ops.<ns>.<name>(…)` does, the handle (the packet, or the overload
/// when the name has one) is offered to them (`__torch_function__`) before
/// it resolves and dispatches. A handler's value is returned as the
/// handle's results: `None` is no results when every overload the name
/// covers has none, a list is taken apart unless every one has one return.
fn call_offered(name: &str, args: &[Value], kwargs: &[(String, Value)]) -> Result<Vec<Value>> {
    let (ns, rest) = name.split_once("::").unwrap_or(("aten", name));
    let space = crate::overrides::ops(ns);
    // The return counts of the overloads the name covers.
    let (value, counts) = match rest.split_once('.') {
        None => {
            let packet = space.packet(rest)?;
            let counts: Vec<usize> = packet
                .overloads()
                .iter()
                .filter_map(|o| packet.overload(o).ok())
                .map(|o| o.schema().returns.len())
                .collect();
            (packet.call(args, kwargs)?, counts)
        }
        Some((base, overload)) => {
            let o = space.packet(base)?.overload(overload)?;
            (o.call(args, kwargs)?, vec![o.schema().returns.len()])
        }
    };
    let every = |n: usize| counts.iter().all(|&c| c == n);
    Ok(match value {
        // An operator without returns gives `None`.
        Value::None if every(0) => Vec::new(),
        Value::List(items) if !every(1) => items.to_vec(),
        v => vec![v],
    })
}

/// Items `#[op]` expansions use. Not a public API.
#[doc(hidden)]
pub mod __op {
    use super::*;

    /// The operator `name`, looked up once per call site.
    pub fn handle(
        cell: &'static OnceLock<&'static Operator>,
        name: &str,
    ) -> Result<&'static Operator> {
        if let Some(op) = cell.get() {
            return Ok(op);
        }
        let op = find(name).map_err(|_| {
            let problems: Vec<String> = dispatcher()
                .registration_errors()
                .iter()
                .map(ToString::to_string)
                .collect();
            Error::UnknownOp(
                format!(
                    "{name} (its #[op] definition failed: {})",
                    problems.join("; ")
                )
                .into(),
            )
        })?;
        Ok(cell.get_or_init(|| op))
    }
}

impl crate::registry::Registry {
    /// Resolves a schema-level call like `torch.ops.aten.<name>(*args, **kwargs)`:
    /// `name` is a packet (`aten::add`: every overload is tried in order) or an
    /// overload handle (`aten::add.Tensor`, `aten::abs.default`: that schema only).
    /// A name the file does not have is looked up among the operators defined at
    /// run time ([`crate::library`]). See [`crate::packet`].
    pub fn resolve(
        &self,
        name: &str,
        args: &[crate::Value],
        kwargs: &[(String, crate::Value)],
    ) -> crate::Result<crate::packet::Resolved> {
        let qualified = if name.contains("::") {
            name.to_string()
        } else {
            format!("aten::{name}")
        };
        let packet = self.packet(&qualified);
        if !packet.is_empty() {
            return crate::packet::resolve(&qualified, packet, args, kwargs);
        }
        let (ns, rest) = qualified.split_once("::").unwrap_or(("aten", &qualified));
        let Some((base, overload)) = rest.split_once('.') else {
            return resolve_defined(&qualified, args, kwargs);
        };
        let packet_name = format!("{ns}::{base}");
        let wanted = if overload == "default" {
            base.to_string()
        } else {
            rest.to_string()
        };
        let overloads = self.packet(&packet_name);
        if overloads.is_empty() {
            return resolve_defined(&qualified, args, kwargs);
        }
        match overloads.iter().position(|o| o.name == wanted) {
            Some(i) => crate::packet::resolve(&packet_name, &overloads[i..=i], args, kwargs).map(
                |mut r| {
                    r.index = i;
                    r
                },
            ),
            None => Err(crate::Error::Runtime(
                format!("The underlying op of '{ns}.{base}' has no overload name '{overload}'")
                    .into(),
            )),
        }
    }
}
