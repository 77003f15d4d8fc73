//! The [`Dispatcher`]: every operator (the built-in table and those defined
//! at run time), the link-time registrations collected into it, the
//! fallbacks, and lookup by name.

use super::{dispatcher, Boxed, Dispatcher, Fallbacks, Kernel, Operator, PENDING};

use super::linked::{self, Library};
use crate::error::{DuplicateKernel, Error, Result};
use crate::keys::DispatchKey;
use crate::tables::OpSchema;
use std::sync::atomic::Ordering;
use std::sync::{Arc, RwLock};

/// `ns::name.overload(...) -> ...`: a schema with its namespace.
pub(super) fn qualified_schema(s: &OpSchema) -> String {
    match s.schema.find("::") {
        Some(i) if s.schema.find('(').is_some_and(|p| i < p) => s.schema.to_string(),
        _ => format!("{}::{}", s.namespace, s.schema),
    }
}

/// Is `text` (a schema, with or without its namespace; `aten` when not written)
/// the schema of `op`?
pub(super) fn same_schema(text: &str, op: &OpSchema) -> bool {
    let text = match text.find("::") {
        Some(i) if text.find('(').is_some_and(|p| i < p) => text.to_string(),
        _ => format!("aten::{text}"),
    };
    text == qualified_schema(op)
}

/// The operator `name` (`ns::name.overload`, `aten` when not written) among the
/// runtime's and `dynamic`.
pub(super) fn lookup(
    builtin: &'static [Operator],
    dynamic: &[&'static Operator],
    name: &str,
) -> Option<&'static Operator> {
    match crate::OpId::from_name(name) {
        Some(id) => Some(&builtin[id as usize]),
        None => find_dynamic(dynamic, name),
    }
}

/// The operator of `schema`: the existing one of that name if its schema is the
/// same (one operator, declared twice), else a new one (defined at `at`). An
/// existing operator with another schema is an error; the caller gets a
/// separate operator for `schema` to disable with it. `custom`: defined by
/// `#[op]` (PyTorch's custom operators), not declared by a schema file.
pub(super) fn define_or_reuse(
    builtin: &'static [Operator],
    dynamic: &mut Vec<&'static Operator>,
    schema: &'static OpSchema,
    at: String,
    custom: bool,
) -> std::result::Result<&'static Operator, (&'static Operator, Error)> {
    let name = format!("{}::{}", schema.namespace, schema.name);
    match lookup(builtin, dynamic, &name) {
        Some(op) if same_schema(&qualified_schema(schema), op.schema) => Ok(op),
        Some(op) => {
            let e = Error::Runtime(
                format!(
                    "{at}: `{}` redefines `{name}`, which is `{}` ({}): an operator has one schema",
                    qualified_schema(schema),
                    qualified_schema(op.schema),
                    op.origin().unwrap_or("the runtime's native_functions.yaml")
                )
                .into(),
            );
            let mut other = Operator::new(schema);
            other.declared_at = Some(at);
            Err((Box::leak(Box::new(other)), e))
        }
        None => {
            let mut op = Operator::new(schema);
            if custom {
                op.defined_at = Some(at);
            } else {
                op.declared_at = Some(at);
            }
            let op: &'static Operator = Box::leak(Box::new(op));
            dynamic.push(op);
            Ok(op)
        }
    }
}

/// The registration errors, once: the first call to ask gets them.
#[cold]
pub(super) fn take_pending() -> Option<Error> {
    if !PENDING.swap(false, Ordering::AcqRel) {
        return None;
    }
    let errors = dispatcher().registration_errors();
    (!errors.is_empty()).then(|| Error::Registration(Box::new(errors.to_vec())))
}

/// The run-time defined operator `ns::name.overload` (namespace `aten` when not
/// written) among `dynamic`.
pub(super) fn find_dynamic(dynamic: &[&'static Operator], name: &str) -> Option<&'static Operator> {
    let (ns, rest) = name.split_once("::").unwrap_or(("aten", name));
    dynamic
        .iter()
        .copied()
        .find(|op| op.schema.namespace == ns && op.schema.name == rest)
}

/// The fallbacks linked into the program, by key; an unknown key or a second
/// fallback for a key is an error naming the registrations.
pub(super) fn link_fallbacks(
    entries: &'static [linked::FallbackEntry],
    errors: &mut Vec<Error>,
) -> Fallbacks {
    let mut fallbacks: Fallbacks = std::array::from_fn(|_| None);
    for e in entries {
        let source = format!("{}:{}", e.file, e.line);
        let Some(key) = DispatchKey::from_name(e.key).filter(|k| !k.is_alias()) else {
            errors.push(Error::Runtime(
                format!(
                    "{source}: unknown runtime dispatch key {} for a fallback",
                    e.key
                )
                .into(),
            ));
            continue;
        };
        let slot = &mut fallbacks[key.slot()];
        if let Some(first) = slot {
            errors.push(Error::Runtime(
                format!(
                    "two fallbacks for dispatch key {key:?}: {} and {source}",
                    first.source
                )
                .into(),
            ));
            continue;
        }
        let mut kernel = Kernel {
            boxed: Boxed::Fn(e.boxed),
            unboxed: None,
            schema: None,
            typed_fallback: None,
            leaves_alone: None,
            source,
        };
        if let Some(t) = e.typed {
            kernel = kernel.with_typed_fallback(t);
        }
        if let Some(f) = e.leaves_alone {
            kernel = kernel.leaving_alone(f);
        }
        *slot = Some(Arc::new(kernel));
    }
    fallbacks
}

impl Dispatcher {
    pub(super) fn build() -> Dispatcher {
        let builtin: &'static [Operator] = Box::leak(
            crate::OPS
                .iter()
                .map(Operator::new)
                .collect::<Box<[Operator]>>(),
        );
        let mut errors = Vec::new();
        let mut dynamic: Vec<&'static Operator> = Vec::new();
        let mut poisoned: Vec<(&'static Operator, Error)> = Vec::new();
        let (libraries, operator_defs, kernels, fallback_entries) = linked::registrations();
        // The operators of crates with schema files of their own. Each
        // library is given its operators only once they are resolved (below):
        // a library's `op` reads them without waiting for the dispatcher, so
        // another thread must not see them before their kernels are in.
        let mut library_ops = Vec::new();
        for lib in libraries {
            if lib.is_set() {
                continue;
            }
            let ops = lib
                .schemas()
                .iter()
                .map(|s| {
                    let at = format!("{}'s native_functions.yaml:{}", lib.name(), s.line);
                    match define_or_reuse(builtin, &mut dynamic, s, at, false) {
                        Ok(op) => op,
                        Err((op, e)) => {
                            errors.push(e.clone());
                            poisoned.push((op, e));
                            op
                        }
                    }
                })
                .collect();
            library_ops.push((lib, ops));
        }
        // The operators defined with `#[op]`.
        for def in operator_defs {
            let source = format!("{}:{}", def.file, def.line);
            // `#[op]` checked the schema at compile time; a failure here means the
            // schema language changed under a stale build.
            let schema = match opforge_schema::schema::parse_schema(def.schema) {
                Ok(f) => crate::tables::op_schema(&f, None),
                Err(e) => {
                    errors.push(Error::Runtime(
                        format!("{source}: malformed schema `{}`: {e}", def.schema).into(),
                    ));
                    continue;
                }
            };
            if let Err((_, e)) = define_or_reuse(builtin, &mut dynamic, schema, source, true) {
                errors.push(e);
            }
        }
        // The kernels of `#[kernel]` and `#[op]`, from every crate.
        for e in kernels {
            let Some(key) = DispatchKey::from_name(e.key) else {
                errors.push(Error::Runtime(
                    format!(
                        "{}:{}: unknown dispatch key {} for {}",
                        e.file, e.line, e.key, e.op
                    )
                    .into(),
                ));
                continue;
            };
            let Some(op) = lookup(builtin, &dynamic, e.op) else {
                errors.push(Error::UnknownOp(
                    format!("{} (registered at {}:{})", e.op, e.file, e.line).into(),
                ));
                continue;
            };
            let kernel = Kernel::from_entry(e);
            if let Err(err) = op.check_schema(&kernel) {
                errors.push(err);
                continue;
            }
            let mut regs = op.registered.lock().unwrap_or_else(|p| p.into_inner());
            if let Some((_, prev)) = regs.iter().find(|(k, _)| *k == key) {
                let err = Error::DuplicateKernel(Box::new(DuplicateKernel {
                    op: op.qualified_name(),
                    key,
                    first: prev.source.clone(),
                    second: kernel.source.clone(),
                }));
                errors.push(err.clone());
                poisoned.push((op, err));
                continue;
            }
            regs.push((key, Arc::new(kernel)));
        }
        let fallbacks = link_fallbacks(fallback_entries, &mut errors);
        for op in builtin.iter().chain(dynamic.iter().copied()) {
            let regs = op.registered.lock().unwrap_or_else(|e| e.into_inner());
            op.resolve(&regs, &fallbacks);
        }
        for (op, e) in poisoned {
            op.poison(e);
        }
        PENDING.store(!errors.is_empty(), Ordering::Release);
        for (lib, ops) in library_ops {
            lib.set(ops);
        }
        Dispatcher {
            builtin,
            dynamic: RwLock::new(dynamic),
            fallbacks: RwLock::new(fallbacks),
            errors,
        }
    }

    /// Registers a library that was not linked in (see [`Library::op`]): its
    /// operators, reusing those that exist with the same schema; a conflicting
    /// one is a disabled operator whose calls return the conflict.
    pub(crate) fn define_library(&self, lib: &Library) -> Vec<&'static Operator> {
        let mut dynamic = self.dynamic.write().unwrap_or_else(|e| e.into_inner());
        lib.schemas()
            .iter()
            .map(|s| {
                let at = format!("{}'s native_functions.yaml:{}", lib.name(), s.line);
                match define_or_reuse(self.builtin, &mut dynamic, s, at, false) {
                    Ok(op) => op,
                    Err((op, e)) => {
                        op.poison(e);
                        op
                    }
                }
            })
            .collect()
    }

    /// Adds `schema` to `dynamic` unless an operator of that name exists (built in
    /// or in `dynamic`); the caller holds the write lock (or owns `dynamic` while
    /// building), so the check and the insertion are one step.
    pub(super) fn insert(
        dynamic: &mut Vec<&'static Operator>,
        schema: &'static OpSchema,
        defined_at: Option<String>,
    ) -> Result<&'static Operator> {
        let name = format!("{}::{}", schema.namespace, schema.name);
        if crate::OpId::from_name(&name).is_some() || find_dynamic(dynamic, &name).is_some() {
            let original = find_dynamic(dynamic, &name)
                .and_then(|op| op.defined_at.clone())
                .unwrap_or_else(|| "native_functions.yaml".into());
            let duplicate = defined_at.as_deref().unwrap_or("unknown");
            return Err(Error::Runtime(format!(
                "Tried to register an operator ({}) with the same name and overload name multiple times. Each overload's schema should only be registered with a single call to def(). Duplicate registration: {duplicate}. Original registration: {original}",
                schema.schema
            ).into()));
        }
        let mut op = Operator::new(schema);
        op.defined_at = defined_at;
        let op: &'static Operator = Box::leak(Box::new(op));
        dynamic.push(op);
        Ok(op)
    }

    pub(super) fn fallbacks(&self) -> Fallbacks {
        self.fallbacks
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Problems found among the link-time registrations (empty when all is well).
    pub fn registration_errors(&self) -> &[Error] {
        &self.errors
    }

    /// The operator with id `id` of the generated tables.
    #[inline]
    pub fn op(&self, id: crate::OpId) -> &Operator {
        &self.builtin[id as usize]
    }

    /// Looks an operator up by name: `aten::add.Tensor`, `add.Tensor`, `add` (default
    /// overload), or a run-time defined `ns::name.overload`.
    pub fn find(&self, name: &str) -> Option<&Operator> {
        if let Some(id) = crate::OpId::from_name(name) {
            return Some(&self.builtin[id as usize]);
        }
        let dynamic = self.dynamic.read().unwrap_or_else(|e| e.into_inner());
        find_dynamic(&dynamic, name)
    }

    /// Adds an operator defined at run time. Fails if the name is taken.
    pub fn add_operator(&self, schema: &'static OpSchema) -> Result<&'static Operator> {
        self.define(schema, None)
    }

    /// Defines an operator at run time, recording where (`file:line`, shown when a
    /// second definition of the same name fails, as PyTorch's `def()` does). The
    /// check for an existing operator of that name and the insertion are one
    /// atomic step, so racing definitions of one name give exactly one operator.
    /// Operators defined this way get PyTorch's custom-operator message when a
    /// meta call finds no kernel (see [`crate::library`]).
    ///
    /// ```
    /// use opforge::dispatch::dispatcher;
    /// let f = opforge_schema::schema::parse_schema("doc_define::f(Tensor x) -> Tensor").unwrap();
    /// let schema = opforge::registry::op_schema(&f, None);
    /// let op = dispatcher().define(schema, Some("here".into())).unwrap();
    /// assert_eq!(op.defined_at(), Some("here"));
    /// assert!(dispatcher().define(schema, None).is_err());
    /// ```
    pub fn define(
        &self,
        schema: &'static OpSchema,
        defined_at: Option<String>,
    ) -> Result<&'static Operator> {
        let mut dynamic = self.dynamic.write().unwrap_or_else(|e| e.into_inner());
        Dispatcher::insert(&mut dynamic, schema, defined_at)
    }

    /// The overloads of the packet `ns::base` (`aten::add` → `add.Tensor`,
    /// `add.Scalar`, …): the built-in ones in YAML order, then those defined at run
    /// time in definition order (PyTorch's registration order).
    ///
    /// ```
    /// use opforge::dispatch::dispatcher;
    /// let add = dispatcher().overloads("aten", "add");
    /// assert!(add.iter().any(|op| op.schema.name == "add.Tensor"));
    /// ```
    pub fn overloads(&self, namespace: &str, base: &str) -> Vec<&Operator> {
        let mut builtin: Vec<&Operator> = self
            .builtin
            .iter()
            .filter(|op| op.schema.namespace == namespace && op.schema.base == base)
            .collect();
        builtin.sort_by_key(|op| op.schema.line);
        let dynamic = self.dynamic.read().unwrap_or_else(|e| e.into_inner());
        builtin.extend(
            dynamic
                .iter()
                .copied()
                .filter(|op| op.schema.namespace == namespace && op.schema.base == base),
        );
        builtin
    }

    /// The packet names (`add`, `clip_norm_`, …) of namespace `namespace`,
    /// built-in and defined at run time, each once.
    pub fn packet_names(&self, namespace: &str) -> Vec<&'static str> {
        let mut names: Vec<&'static str> = self
            .builtin
            .iter()
            .filter(|op| op.schema.namespace == namespace)
            .map(|op| op.schema.base)
            .collect();
        let dynamic = self.dynamic.read().unwrap_or_else(|e| e.into_inner());
        names.extend(
            dynamic
                .iter()
                .filter(|op| op.schema.namespace == namespace)
                .map(|op| op.schema.base),
        );
        names.sort_unstable();
        names.dedup();
        names
    }

    /// The error for a packet `ns::name` that does not exist: PyTorch's
    /// message, then what a Rust user can act on. A namespace no linked crate
    /// declares says how to link the crate (a crate that nothing in a binary
    /// names is dropped by the linker, its registrations with it); a known
    /// namespace gives the nearest name, if one is close.
    ///
    /// ```
    /// use opforge::dispatch::dispatcher;
    /// let e = dispatcher().no_such_packet("aten", "ad");
    /// assert!(e.to_string().ends_with("Did you mean 'add'?"));
    /// let e = dispatcher().no_such_packet("mylib", "clip_norm");
    /// assert!(e.to_string().contains("use mylib as _;"));
    /// ```
    pub fn no_such_packet(&self, ns: &str, name: &str) -> Error {
        let mut message = format!("'_OpNamespace' '{ns}' object has no attribute '{name}'");
        let names = self.packet_names(ns);
        if names.is_empty() {
            message.push_str(&format!(
                ". No operator of namespace '{ns}' is registered: if a crate defines them, \
                 name it in this binary (`use {ns} as _;` for a crate called {ns}): the \
                 linker drops a crate that nothing names, and its registrations with it"
            ));
        } else if let Some(n) = opforge_schema::diag::nearest(name, names.iter().copied()) {
            message.push_str(&format!(". Did you mean '{n}'?"));
        }
        Error::Runtime(message.into())
    }

    /// Registers a kernel used for `key` by every operator that has none of its own
    /// (PyTorch's backend fallback; e.g. the Python key's handler). Returns the
    /// registered kernel (its identity tells it apart from others at that key).
    pub fn register_fallback(&self, key: DispatchKey, kernel: Kernel) -> Arc<Kernel> {
        let k = Arc::new(kernel);
        self.fallbacks.write().unwrap_or_else(|e| e.into_inner())[key.slot()] = Some(k.clone());
        let fallbacks = self.fallbacks();
        let dynamic = self.dynamic.read().unwrap_or_else(|e| e.into_inner());
        for op in self.builtin.iter().chain(dynamic.iter().copied()) {
            let regs = op.registered.lock().unwrap_or_else(|e| e.into_inner());
            op.resolve(&regs, &fallbacks);
        }
        k
    }
}
