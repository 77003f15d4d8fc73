//! Derive: the runtime's schema tables — the types of the static tables a build
//! generates from a `native_functions.yaml` (an [`OpSchema`] per operator
//! overload, groups, Python-level bindings, overridable functions), and the one
//! conversion from the model into them ([`op_schema`]), shared by the generator
//! (which prints converted tables as Rust statics) and the runtime (which
//! converts the schema files it loads at run time).
//!
//! Everything here is `'static` data; converted schemas are leaked (operators
//! live for the whole program, as in PyTorch). The generated code is
//! table-driven: a 2,500-entry schema file becomes a few static arrays.

use std::fmt;

use crate::model::{Annotation, DefaultValue, FunctionSchema, NativeFunction, Type};
pub use crate::model::{BaseType, SchemaKind};

/// A schema type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Ty {
    /// A base type.
    Base(BaseType),
    /// A custom class, `ns.Class`.
    CustomClass(&'static str),
    /// `T?`
    Optional(&'static Ty),
    /// `T[]` or `T[N]`.
    List(&'static Ty, Option<u32>),
}

/// Prints the type as written (`int[2]?`), iteratively, with the model's
/// printer.
impl fmt::Display for Ty {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use crate::model::Layer;
        let layer = |t: &Ty| match *t {
            Ty::Base(b) => Layer::Base(b),
            Ty::CustomClass(c) => Layer::CustomClass(c),
            Ty::Optional(inner) => Layer::Optional(inner),
            Ty::List(elem, size) => Layer::List(elem, size),
        };
        crate::model::fmt_type(self, layer, f)
    }
}

/// An interpreted default value.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum DefaultVal {
    /// `None`
    None,
    /// `True` / `False`
    Bool(bool),
    /// An integer literal.
    Int(i64),
    /// A floating-point literal.
    Float(f64),
    /// A string literal (unescaped).
    Str(&'static str),
    /// A list literal.
    List(&'static [DefaultVal]),
    /// An enum-like name (`Mean`, `long`, `contiguous_format`, …).
    Enum(&'static str),
}

/// A default: source text and value.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Default {
    /// Exactly as written in the schema.
    pub text: &'static str,
    /// Interpreted.
    pub value: DefaultVal,
}

/// An alias annotation (`a`, `a!`, `a -> *`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Alias {
    /// Alias set before the call.
    pub set: &'static str,
    /// Written by the operator.
    pub is_write: bool,
    /// Alias set after the call (`*` for the wildcard), empty if not given.
    pub after: &'static str,
}

/// One argument of an operator.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ArgSchema {
    /// Schema name (`self`, `other`, `out`).
    pub name: &'static str,
    /// Type.
    pub ty: Ty,
    /// Default, if any.
    pub default: Option<Default>,
    /// Keyword-only (after `*`).
    pub kwarg_only: bool,
    /// An out argument (written, keyword-only).
    pub is_out: bool,
    /// Alias annotation, if any.
    pub alias: Option<Alias>,
}

impl ArgSchema {
    /// A positional argument without default or annotation; the generated tables
    /// add the rest with the builder methods below.
    pub const fn new(name: &'static str, ty: Ty) -> ArgSchema {
        ArgSchema {
            name,
            ty,
            default: None,
            kwarg_only: false,
            is_out: false,
            alias: None,
        }
    }

    /// With a default (`text` as written in the schema).
    pub const fn default(mut self, text: &'static str, value: DefaultVal) -> ArgSchema {
        self.default = Some(Default { text, value });
        self
    }

    /// Keyword-only.
    pub const fn kwarg_only(mut self) -> ArgSchema {
        self.kwarg_only = true;
        self
    }

    /// An out argument (keyword-only and written).
    pub const fn out(mut self) -> ArgSchema {
        self.kwarg_only = true;
        self.is_out = true;
        self
    }

    /// With an alias annotation.
    pub const fn alias(
        mut self,
        set: &'static str,
        is_write: bool,
        after: &'static str,
    ) -> ArgSchema {
        self.alias = Some(Alias {
            set,
            is_write,
            after,
        });
        self
    }
}

/// One return of an operator.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RetSchema {
    /// Name of a named return.
    pub name: Option<&'static str>,
    /// Type.
    pub ty: Ty,
    /// Alias annotation, if any.
    pub alias: Option<Alias>,
}

impl RetSchema {
    /// An unnamed return without an alias annotation; the generated tables
    /// add the rest with the builder methods below.
    pub const fn new(ty: Ty) -> RetSchema {
        RetSchema {
            name: None,
            ty,
            alias: None,
        }
    }

    /// A named return.
    pub const fn named(mut self, name: &'static str) -> RetSchema {
        self.name = Some(name);
        self
    }

    /// With an alias annotation.
    pub const fn alias(
        mut self,
        set: &'static str,
        is_write: bool,
        after: &'static str,
    ) -> RetSchema {
        self.alias = Some(Alias {
            set,
            is_write,
            after,
        });
        self
    }
}

/// One row of an operator's `dispatch:` table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KernelName {
    /// The dispatch key (`CPU`, `Meta`, `CompositeExplicitAutograd`, …).
    pub key: &'static str,
    /// The kernel path as written in the YAML.
    pub kernel: &'static str,
}

/// Everything the runtime knows about one operator overload.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OpSchema {
    /// Namespace (`aten`).
    pub namespace: &'static str,
    /// `name.overload`, or `name` for the default overload.
    pub name: &'static str,
    /// The base name as written (`add_`, `__iand__`).
    pub base: &'static str,
    /// Overload name (empty for the default overload).
    pub overload: &'static str,
    /// The full schema text.
    pub schema: &'static str,
    /// Kind.
    pub kind: SchemaKind,
    /// Arguments in order.
    pub args: &'static [ArgSchema],
    /// Returns in order.
    pub returns: &'static [RetSchema],
    /// Exposed as a free function.
    pub function: bool,
    /// Exposed as a Tensor method.
    pub method: bool,
    /// `python_module:` (`nn`, `linalg`, …), if any.
    pub python_module: Option<&'static str>,
    /// `dispatch:` rows (one per key; an implicit CompositeImplicitAutograd entry
    /// appears as such).
    pub kernels: &'static [KernelName],
    /// Tags.
    pub tags: &'static [&'static str],
    /// The YAML line of the entry.
    pub line: u32,
    /// `...` ends the arguments: any number of further positional values,
    /// each passed as it is (a higher-order operator's, `call_torchbind`'s
    /// method arguments).
    pub varargs: bool,
    /// `...` ends the returns: any number of further results.
    pub varret: bool,
}

impl OpSchema {
    /// An operator without arguments, returns, variants, kernels or tags;
    /// the generated tables add them with the builder methods below. `name`
    /// is `base.overload` (or `base`), split here.
    pub const fn new(
        namespace: &'static str,
        name: &'static str,
        kind: SchemaKind,
        line: u32,
        schema: &'static str,
    ) -> OpSchema {
        let (base, overload) = split_name(name);
        OpSchema {
            namespace,
            name,
            base,
            overload,
            schema,
            kind,
            args: &[],
            returns: &[],
            function: false,
            method: false,
            python_module: None,
            kernels: &[],
            tags: &[],
            line,
            varargs: false,
            varret: false,
        }
    }

    /// With `...` ending its arguments.
    pub const fn varargs(mut self) -> OpSchema {
        self.varargs = true;
        self
    }

    /// With `...` ending its returns.
    pub const fn varret(mut self) -> OpSchema {
        self.varret = true;
        self
    }

    /// With its arguments.
    pub const fn args(mut self, args: &'static [ArgSchema]) -> OpSchema {
        self.args = args;
        self
    }

    /// With its returns.
    pub const fn returns(mut self, returns: &'static [RetSchema]) -> OpSchema {
        self.returns = returns;
        self
    }

    /// Exposed as a free function.
    pub const fn function(mut self) -> OpSchema {
        self.function = true;
        self
    }

    /// Exposed as a Tensor method.
    pub const fn method(mut self) -> OpSchema {
        self.method = true;
        self
    }

    /// With `python_module:`.
    pub const fn python_module(mut self, module: &'static str) -> OpSchema {
        self.python_module = Some(module);
        self
    }

    /// With its `dispatch:` rows.
    pub const fn kernels(mut self, kernels: &'static [KernelName]) -> OpSchema {
        self.kernels = kernels;
        self
    }

    /// With its tags.
    pub const fn tags(mut self, tags: &'static [&'static str]) -> OpSchema {
        self.tags = tags;
        self
    }

    /// The argument named `name`.
    pub fn arg(&self, name: &str) -> Option<&'static ArgSchema> {
        self.args.iter().find(|a| a.name == name)
    }

    /// The kernel named for `key`.
    pub fn kernel(&self, key: &str) -> Option<&'static str> {
        self.kernels.iter().find(|k| k.key == key).map(|k| k.kernel)
    }
}

/// `base.overload` → (`base`, `overload`); `base` → (`base`, ``).
const fn split_name(name: &'static str) -> (&'static str, &'static str) {
    let bytes = name.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'.' {
            let (base, rest) = name.split_at(i);
            let (_, overload) = rest.split_at(1);
            return (base, overload);
        }
        i += 1;
    }
    (name, "")
}

/// Short names the generated tables are written with (`arg("self",
/// TENSOR)`): one constant per base type, and constructors.
pub mod short {
    use super::{ArgSchema, BaseType, KernelName, RetSchema, Ty};

    macro_rules! base_types {
        ($($c:ident = $b:ident),* $(,)?) => {$(
            #[doc = concat!("`", stringify!($b), "`")]
            pub const $c: Ty = Ty::Base(BaseType::$b);
        )*};
    }

    base_types!(
        TENSOR = Tensor,
        INT = Int,
        SYM_INT = SymInt,
        FLOAT = Float,
        BOOL = Bool,
        STR = Str,
        SCALAR = Scalar,
        SCALAR_TYPE = ScalarType,
        LAYOUT = Layout,
        DEVICE = Device,
        DEVICE_INDEX = DeviceIndex,
        MEMORY_FORMAT = MemoryFormat,
        QSCHEME = QScheme,
        GENERATOR = Generator,
        STORAGE = Storage,
        STREAM = Stream,
        SYM_BOOL = SymBool,
        DIM_VECTOR = DimVector,
        GRAPH_MODULE = GraphModule,
        DIMNAME = Dimname,
        COMPLEX = Complex,
        ANY = Any,
    );

    /// [`ArgSchema::new`].
    pub const fn arg(name: &'static str, ty: Ty) -> ArgSchema {
        ArgSchema::new(name, ty)
    }

    /// [`RetSchema::new`].
    pub const fn ret(ty: Ty) -> RetSchema {
        RetSchema::new(ty)
    }

    /// A `dispatch:` row.
    pub const fn kernel(key: &'static str, kernel: &'static str) -> KernelName {
        KernelName { key, kernel }
    }
}

impl fmt::Display for OpSchema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.schema)
    }
}

/// Variants of one operation that share a signature.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpGroupSchema<Id: 'static> {
    /// Functional variant.
    pub functional: Option<Id>,
    /// Inplace variant.
    pub inplace: Option<Id>,
    /// Mutable variant.
    pub mutable: Option<Id>,
    /// Out variant.
    pub out: Option<Id>,
}

/// One parser signature of a Python-API binding (`torch.add`, `Tensor.add`), as
/// PyTorch's binding generator derives it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ApiSignature<Id: 'static> {
    /// The signature string, e.g. `add(Tensor input, Tensor other, *, Scalar alpha=1, Tensor out=None)`.
    pub text: &'static str,
    /// The operator called without `out=` (`None` if it is not in this table, e.g.
    /// a function PyTorch generates by `autogen`).
    pub functional: Option<Id>,
    /// The operator called with `out=`, if any.
    pub out: Option<Id>,
    /// For a deprecated signature, the `aten:` call expression it maps onto.
    pub deprecated_call: Option<&'static str>,
    /// `|deprecated`: tried last, never listed in errors.
    pub deprecated: bool,
    /// `|hidden`: tried, never listed in errors.
    pub hidden: bool,
}

/// A Python-API binding and its signatures in generated order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ApiBinding<Id: 'static> {
    /// `torch.add`, `Tensor.add`, `torch.nn.functional.gelu`, `torch.linalg.linalg_det`, …
    pub name: &'static str,
    /// Signatures in PyTorch's generated (sorted) order.
    pub signatures: &'static [ApiSignature<Id>],
}

/// An overridable function (`torch.overrides.get_overridable_functions`) with the
/// signature of its testing stub (`get_testing_overrides`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OverridableFn {
    /// `torch`, `Tensor`, `torch.nn.functional`, `torch.linalg`, `torch.fft`, `torch.special`.
    pub namespace: &'static str,
    /// The name inside the namespace.
    pub name: &'static str,
    /// A Python lambda with the same parameters returning `-1`.
    pub stub: &'static str,
}

fn leak<T>(x: T) -> &'static T {
    Box::leak(Box::new(x))
}

/// A string that lives for the rest of the program (converted tables are leaked).
pub fn leak_str(s: &str) -> &'static str {
    Box::leak(s.to_string().into_boxed_str())
}

fn leak_slice<T>(v: Vec<T>) -> &'static [T] {
    Box::leak(v.into_boxed_slice())
}

/// The run-time [`Ty`] of a model [`Type`].
pub fn ty(t: &Type) -> Ty {
    match t {
        Type::Base(b) => Ty::Base(*b),
        Type::CustomClass(c) => Ty::CustomClass(leak_str(c)),
        Type::Optional(inner) => Ty::Optional(leak(ty(inner))),
        Type::List { elem, size } => Ty::List(leak(ty(elem)), *size),
    }
}

fn default_val(v: &DefaultValue) -> DefaultVal {
    match v {
        DefaultValue::None => DefaultVal::None,
        DefaultValue::Bool(b) => DefaultVal::Bool(*b),
        DefaultValue::Int(i) => DefaultVal::Int(*i),
        DefaultValue::Float(x) => DefaultVal::Float(*x),
        DefaultValue::Str(s) => DefaultVal::Str(leak_str(s)),
        DefaultValue::List(xs) => {
            DefaultVal::List(leak_slice(xs.iter().map(default_val).collect()))
        }
        DefaultValue::Enum(e) => DefaultVal::Enum(leak_str(e)),
    }
}

fn alias(a: Option<&Annotation>) -> Option<Alias> {
    a.map(|a| Alias {
        set: leak_str(&a.alias_set.iter().collect::<String>()),
        is_write: a.is_write,
        after: leak_str(&a.alias_set_after.iter().collect::<String>()),
    })
}

/// The dispatch rows of an entry, one per key, with an implicit
/// CompositeImplicitAutograd kernel made explicit (as the generated tables have
/// it): `(key, kernel)`.
pub fn kernel_rows(nf: &NativeFunction) -> Vec<(String, String)> {
    let mut ks: Vec<(String, String)> = nf
        .dispatch
        .iter()
        .flat_map(|row| row.keys.iter().map(|k| (k.clone(), row.kernel.clone())))
        .collect();
    if ks.is_empty() && nf.is_composite_implicit() {
        ks.push((
            "CompositeImplicitAutograd".into(),
            crate::names::implicit_kernel(&nf.func),
        ));
    }
    ks
}

/// The functions `autogen:` adds to `entries`
/// ([`crate::python::generated_functions`]), each with its one kernel
/// (CompositeExplicitAutograd) named by the runtime's path convention,
/// `composite::<ident>` (`composite::zero`, `composite::clone_out`): what the
/// generator makes operators of, and a run-time registry too, so that the two
/// agree.
pub fn generated_entries(entries: &[NativeFunction]) -> Result<Vec<NativeFunction>, String> {
    let mut generated = crate::python::generated_functions(entries)?;
    for nf in &mut generated {
        let ident = crate::names::op_ident(&nf.func.name);
        for row in &mut nf.dispatch {
            row.kernel = format!("composite::{ident}");
        }
    }
    Ok(generated)
}

/// Converts a schema (and, if there is one, the YAML entry it came from: variants,
/// dispatch table, tags, line) into a leaked [`OpSchema`]. This is the one place the
/// model becomes the runtime's tables; the generated `OPS` agree with it (tested).
pub fn op_schema(func: &FunctionSchema, entry: Option<&NativeFunction>) -> &'static OpSchema {
    let out_start = func.arguments.out_start().unwrap_or(usize::MAX);
    let kw_start = func.arguments.kwarg_only_start.unwrap_or(usize::MAX);
    let args: Vec<ArgSchema> = func
        .arguments
        .all
        .iter()
        .enumerate()
        .map(|(i, a)| ArgSchema {
            name: leak_str(&a.name),
            ty: ty(&a.ty),
            default: a.default.as_ref().map(|d| {
                let text = leak_str(&d.text);
                Default {
                    text,
                    value: d.value.as_ref().map_or(DefaultVal::Enum(text), default_val),
                }
            }),
            kwarg_only: i >= kw_start,
            is_out: i >= out_start,
            alias: alias(a.annotation.as_ref()),
        })
        .collect();
    let returns: Vec<RetSchema> = func
        .returns
        .iter()
        .map(|r| RetSchema {
            name: r.name.as_deref().map(leak_str),
            ty: ty(&r.ty),
            alias: alias(r.annotation.as_ref()),
        })
        .collect();
    let (function, method, python_module, kernel_rows, tags, line) = match entry {
        Some(nf) => (
            nf.variants.function,
            nf.variants.method,
            nf.python_module.as_deref().map(leak_str),
            kernel_rows(nf),
            nf.tags.iter().map(|t| leak_str(t)).collect(),
            u32::try_from(nf.line).unwrap_or(u32::MAX),
        ),
        None => (true, false, None, Vec::new(), Vec::new(), 0),
    };
    leak(OpSchema {
        namespace: leak_str(func.name.namespace()),
        name: leak_str(&func.name.unqualified()),
        base: leak_str(&func.name.name.to_string()),
        overload: leak_str(&func.name.overload),
        schema: leak_str(&func.to_string()),
        kind: func.kind(),
        args: leak_slice(args),
        returns: leak_slice(returns),
        function,
        method,
        python_module,
        kernels: leak_slice(
            kernel_rows
                .iter()
                .map(|(k, v)| KernelName {
                    key: leak_str(k),
                    kernel: leak_str(v),
                })
                .collect(),
        ),
        tags: leak_slice(tags),
        line,
        varargs: func.arguments.vararg,
        varret: func.varret,
    })
}
