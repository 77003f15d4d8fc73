//! Emit: the typed API over the generated tables (the files `at.rs` and
//! `api.rs`). What the registration macros read is [`crate::emit_lookup`]'s,
//! the tests' coverage table [`crate::emit_coverage`]'s.
//!
//! Per operator (see [`crate::rust_types`] for the types; a type without a Rust
//! mapping is an error naming the file and line):
//! - `sig::<ident>`: its kernel's function-pointer type;
//! - `at::<ident>(every argument)`: the exact overload, dispatched without the
//!   function-level override protocol (one line: the runtime's generic
//!   `call::<sig, _, _>`);
//! - `ops::<ident>(every argument)`: the same as the operator handle
//!   `torch.ops.<ns>.<name>.<overload>`, through the function-level protocol
//!   (the runtime's generic `protocol`, then `at::`);
//! - `torch::<name>(kept arguments)` for `function` variants and
//!   `Tensor::<name>(&self, kept arguments)` for `method` variants (the runtime
//!   only; a crate with its own schema gets no inherent methods), with trailing
//!   schema defaults filled in, named by [`opforge_schema::names::api_names`].
//!
//! Everything a wrapper does beyond naming its operator and arguments lives in
//! the runtime, once: a wrapper is a few lines. The two files are written as
//! text ([`crate::text`]), laid out as rustfmt would.

use crate::lower::{arg_ident, Plan, PlannedOp};
use crate::rust_types::{dtype_variant, is_mut_tensor, show, signature_types, Unmapped};
use crate::text::{Expr, Out};
use opforge_schema::diag::{Diagnostic, Diagnostics};
use opforge_schema::enums::{self, EnumKind};
use opforge_schema::model::{Argument, BaseType, DefaultValue, Type};
use opforge_schema::scalar_type::ScalarType;

/// What kind of crate the code is emitted for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Options {
    /// Emitting the runtime (`opforge`) itself: its operators are the
    /// dispatcher's built-in ones and its `Tensor` gets inherent methods.
    /// Otherwise the operators form a library registered at link time.
    pub runtime: bool,
    /// The crate's name as Rust writes it (`opforge`, `my_ops`).
    pub crate_name: String,
    /// Where the kernels the YAML's `dispatch:` names live (`crate::kernels`):
    /// each must exist there and carry `#[kernel]` for its operator and key.
    /// `None`: the YAML's kernel names are not Rust paths (PyTorch's own file),
    /// nothing is checked.
    pub kernels_module: Option<String>,
}

impl Options {
    /// The runtime's options.
    pub fn runtime() -> Options {
        Options {
            runtime: true,
            crate_name: "opforge".into(),
            kernels_module: Some("crate::kernels".into()),
        }
    }

    /// The path of the tables (`OpId`) from the `at` file's module: the
    /// runtime's layer `crate::tables`, or the crate's `generated` around it.
    fn tables_from_at(&self) -> &'static str {
        if self.runtime {
            "crate::tables::"
        } else {
            "super::"
        }
    }

    /// The path of the crate's own typed API (`at`) from the module that
    /// includes the generated `autograd.rs`, what its Autograd kernels
    /// redispatch through: the runtime's `at` layer (`::opforge::at`, the
    /// runtime being `extern crate self as opforge`), or, for a crate with
    /// its own schema, the `at` of the `generated` module around its
    /// `autograd` module (`schema.rs`). The runtime's operators a formula
    /// calls are the includer's `at::` either way.
    pub fn at_from_autograd(&self) -> &'static str {
        if self.runtime {
            "::opforge::at"
        } else {
            "super::at"
        }
    }

    /// The imports of a module the API file defines (`ops`, `torch`, the
    /// `Tensor` methods): the prelude, the protocol's entries, the `at` module,
    /// the signatures and the operators' ids, named shortly (`at::add_Tensor`,
    /// `sig::add_Tensor`, `OpId::add_Tensor`).
    fn api_imports(&self, out: &mut Out, indent: usize) {
        let (at, ids) = if self.runtime {
            ("crate::at", "crate::tables::OpId")
        } else {
            ("super::at", "super::OpId")
        };
        for import in [
            "::opforge::__private::prelude::*",
            "::opforge::__private::guarded",
            "::opforge::__private::protocol",
            "::opforge::__private::Site",
            &format!("{at}::{{self, operator, sig}}"),
            ids,
        ] {
            out.line(indent, "#[allow(unused_imports)]");
            out.linef(indent, format_args!("use {import};"));
        }
    }
}

/// The types of one operator's signature as written in the generated files
/// (`&Tensor`, `Option<&[i64]>`, `Result<(Tensor, Tensor)>`), or the
/// diagnostic saying why it has none.
pub(crate) struct Sig {
    params: Vec<String>,
    ret: String,
}

impl Sig {
    /// `sig::<ident>`'s alias: `pub type <ident> = fn(params) -> ret;`, with
    /// every reference `'static` for its spec (`opforge::dispatch::adapter`).
    fn alias(&self, id: &str, spec: bool) -> (Expr, String) {
        let params = self.params.iter().map(|p| {
            if spec {
                Expr::Atom(p.replace('&', "&'static "))
            } else {
                Expr::Atom(p.clone())
            }
        });
        (
            Expr::call(format!("pub type {id} = fn"), params),
            format!(" -> {};", self.ret),
        )
    }
}

pub(crate) fn signature(plan: &Plan, i: usize) -> Result<Sig, Diagnostic> {
    let f = plan.ops[i].schema();
    let err = |e: Unmapped| {
        let mut d = plan.diagnostic(i, format!("no Rust signature: {e}"));
        d.help = Some(
            "every operator of a schema file gets a typed API; use a mapped type, or load the file at run time (opforge::registry::Registry) where every type is accepted boxed".into(),
        );
        d
    };
    let (params, ret) = signature_types(f).map_err(err)?;
    let params = params.iter().map(show).collect();
    let ret = show(&ret);
    Ok(Sig { params, ret })
}

/// The typed API's two files: `at` (the module of the `at` layer:
/// `operator`, `sig` and one dispatched function per operator) and `api` (the
/// modules `ops` and `torch`, and for the runtime the `Tensor` methods). Every
/// operator without a Rust signature is an error (all of them, each with its
/// file and line).
pub fn api(plan: &Plan, opts: &Options) -> Result<ApiFiles, Diagnostics> {
    let mut diags = Vec::new();
    let mut sigs = Vec::with_capacity(plan.ops.len());
    for i in 0..plan.ops.len() {
        match signature(plan, i) {
            Ok(s) => sigs.push(s),
            Err(d) => diags.push(d),
        }
    }
    if !diags.is_empty() {
        return Err(Diagnostics(diags));
    }
    let header = crate::emit::header(plan);
    let mut at = Out::default();
    at.push_str(&header);
    at_file(&mut at, plan, &sigs, opts);
    let mut api = Out::default();
    api.push_str(&header);
    api_file(&mut api, plan, &sigs, opts);
    Ok(ApiFiles {
        at: at.into_string(),
        api: api.into_string(),
    })
}

/// The typed API's files ([`api`]).
#[derive(Clone, Debug)]
pub struct ApiFiles {
    /// The items of the `at` module.
    pub at: String,
    /// The modules `ops` and `torch` (and the runtime's `Tensor` methods).
    pub api: String,
}

/// The `at` file: the operator lookup, `sig` (and its specs), one `at::`
/// function per operator and the typed callers' table.
fn at_file(out: &mut Out, plan: &Plan, sigs: &[Sig], opts: &Options) {
    let tables = opts.tables_from_at();
    out.line(0, "#[allow(unused_imports)]");
    out.line(0, "use ::opforge::__private::prelude::*;");
    if opts.runtime {
        out.push_str(
            "\n/// The dispatcher's operator for `id`.\n#[inline(always)]\npub fn operator(id: crate::tables::OpId) -> &'static ::opforge::dispatch::Operator {\n    ::opforge::dispatch::dispatcher().op(id)\n}\n",
        );
    } else {
        out.push_str("\n/// The operators of this schema file, registered into opforge's\n/// dispatcher when it is built.\n#[doc(hidden)]\n");
        out.expr(
            0,
            &Expr::call(
                "pub static LIBRARY: ::opforge::__private::Library = ::opforge::__private::Library::new",
                [Expr::Atom(format!("{:?}", opts.crate_name)), Expr::from("&super::OPS")],
            ),
            ";",
        );
        out.push_str(
            "\n#[::opforge::__private::linkme::distributed_slice(::opforge::__private::LIBRARIES)]\n#[linkme(crate = ::opforge::__private::linkme)]\nstatic __OPFORGE_LIBRARY: &::opforge::__private::Library = &LIBRARY;\n\n/// The dispatcher's operator for `id`.\n#[inline(always)]\npub fn operator(id: super::OpId) -> &'static ::opforge::dispatch::Operator {\n    LIBRARY.op(id as usize)\n}\n",
        );
    }
    out.push_str("\n/// Kernel signature types, one per operator (what `#[kernel]` checks against).\n#[allow(non_camel_case_types)]\npub mod sig {\n    #[allow(unused_imports)]\n    use ::opforge::__private::prelude::*;\n\n");
    for (op, sig) in plan.ops.iter().zip(sigs) {
        out.doc(4, &format!("`{}`", op.schema()));
        let (e, tail) = sig.alias(&op.ident, false);
        out.expr(4, &e, &tail);
    }
    out.push_str("\n    /// Each signature's spec (`opforge::dispatch::adapter`): the same\n    /// types with `'static` references.\n    #[doc(hidden)]\n    #[allow(non_camel_case_types)]\n    pub mod spec {\n        #[allow(unused_imports)]\n        use ::opforge::__private::prelude::*;\n\n");
    for (op, sig) in plan.ops.iter().zip(sigs) {
        let (e, tail) = sig.alias(&op.ident, true);
        out.expr(8, &e, &tail);
    }
    out.push_str("    }\n}\n");
    // An operator taking its values boxed has no typed function: it is
    // called through `Operator::call_boxed` (`rust_types::is_boxed`).
    for (op, sig) in plan.ops.iter().zip(sigs).filter(|(o, _)| !o.is_boxed()) {
        let id = &op.ident;
        let args = op
            .schema()
            .arguments
            .all
            .iter()
            .map(|a| Expr::Atom(arg_ident(&a.name)));
        let body = Expr::call(
            format!("::opforge::__private::call::<sig::{id}, _, _>"),
            [
                Expr::Atom(format!("operator({tables}OpId::{id})")),
                Expr::tuple(args),
            ],
        );
        out.push_str("\n");
        exact_fn(out, 0, op, sig, |out, indent| out.expr(indent, &body, ""));
    }
    // From `typed_callers`, one module below the `at` file's.
    let (at, tables_up) = if opts.runtime {
        ("crate::at::", "crate::tables::")
    } else {
        ("super::", "super::super::")
    };
    out.push_str("\n/// Each operator's typed call (above) from boxed arguments, in `OpId`\n/// order: what `opcheck`'s typed-call family compares with the boxed\n/// call.\n#[doc(hidden)]\npub mod typed_callers {\n    #[allow(unused_imports)]\n    use ::opforge::__private::prelude::*;\n    use ::opforge::__private::TypedCaller;\n    use super::sig;\n\n    /// The callers, in `OpId` order.\n");
    out.linef(
        4,
        format_args!("pub static TABLE: [TypedCaller; {}] = [", plan.ops.len()),
    );
    for op in &plan.ops {
        // Each argument unboxed as a kernel's boxed entry unboxes it, the
        // results as one value (`opforge::dispatch::adapter`).
        let id = &op.ident;
        if op.is_boxed() {
            out.line(8, "TypedCaller::boxed(),");
            continue;
        }
        out.expr(
            8,
            &Expr::call(
                format!("TypedCaller::new::<sig::{id}, sig::spec::{id}>"),
                [Expr::Atom(format!("&({at}{id} as sig::{id})"))],
            ),
            ",",
        );
    }
    out.push_str("    ];\n\n    #[::opforge::__private::linkme::distributed_slice(::opforge::__private::TYPED_APIS)]\n    #[linkme(crate = ::opforge::__private::linkme)]\n    static __OPFORGE_TYPED_API: ::opforge::__private::TypedApi = ::opforge::__private::TypedApi {\n");
    out.linef(8, format_args!("ops: &{tables_up}OPS,"));
    out.push_str("        calls: &TABLE,\n    };\n}\n");
}

/// The `api` file: the modules `ops` and `torch`, and for the runtime the
/// `Tensor` methods.
fn api_file(out: &mut Out, plan: &Plan, sigs: &[Sig], opts: &Options) {
    out.push_str("/// Every operator overload, with every argument, dispatched; as the\n/// operator handle `torch.ops.<ns>.<name>.<overload>` it goes through the\n/// function-level override protocol first.\n#[allow(non_snake_case, clippy::too_many_arguments)]\npub mod ops {\n");
    opts.api_imports(out, 4);
    for (op, sig) in plan.ops.iter().zip(sigs).filter(|(o, _)| !o.is_boxed()) {
        out.push_str("\n");
        op_handle_fn(out, op, sig);
    }
    out.push_str("}\n\n/// Free functions with schema defaults applied (`torch.add(a, b)` style).\n#[allow(non_snake_case, clippy::too_many_arguments)]\npub mod torch {\n");
    opts.api_imports(out, 4);
    for (op, sig) in plan.ops.iter().zip(sigs) {
        if op.entry.variants.function && !op.is_boxed() {
            out.push_str("\n");
            convenience(out, 4, op, sig, false);
        }
    }
    out.push_str("}\n");
    if !opts.runtime {
        return;
    }
    out.push_str(
        "\n/// Tensor methods with schema defaults applied (`a.add(&b)`).\nmod tensor_methods {\n",
    );
    opts.api_imports(out, 4);
    out.push_str("\n    #[allow(clippy::too_many_arguments)]\n    impl ::opforge::Tensor {\n");
    let mut first = true;
    for (op, sig) in plan.ops.iter().zip(sigs) {
        if op.entry.variants.method && op.schema().arguments.self_arg().is_some() && !op.is_boxed()
        {
            if !first {
                out.push_str("\n");
            }
            first = false;
            convenience(out, 8, op, sig, true);
        }
    }
    out.push_str("    }\n}\n");
}

/// An exact form (`at::`, `ops::`): every argument, documented by its
/// schema; `body` writes the body at the indentation it is given.
fn exact_fn(
    out: &mut Out,
    indent: usize,
    op: &PlannedOp,
    sig: &Sig,
    body: impl FnOnce(&mut Out, usize),
) {
    let f = op.schema();
    out.doc(indent, &format!("`{f}`"));
    out.line(indent, "#[inline]");
    let params = f
        .arguments
        .all
        .iter()
        .zip(&sig.params)
        .map(|(a, t)| Expr::Atom(format!("{}: {t}", arg_ident(&a.name))));
    out.expr(
        indent,
        &Expr::call(format!("pub fn {}", op.ident), params),
        &format!(" -> {} {{", sig.ret),
    );
    body(out, indent + 4);
    out.line(indent, "}");
}

/// One argument of a protocol-guarded function: its name in the function, its
/// name in the closure, and its schema argument.
struct Guarded<'a> {
    /// How the body refers to it (`self` for a receiver).
    name: String,
    /// The closure's parameter name (`self_` for a receiver).
    param: String,
    arg: &'a Argument,
}

/// The site of a guarded function: `static SITE: Site = Site::new(api, ..);`
/// (`api` the Python-API name handlers see, empty for `ops::`).
fn site(out: &mut Out, indent: usize, api: &str, op: &PlannedOp) {
    out.expr(
        indent,
        &Expr::call(
            "static SITE: Site = Site::new",
            [
                Expr::Atom(format!("{api:?}")),
                Expr::Atom(format!("|| operator(OpId::{})", op.ident)),
            ],
        ),
        ";",
    );
}

/// The body of a guarded function whose arguments are all passed as they are
/// and none is written: the shared instance of the signature (`guarded`).
fn shared_body(out: &mut Out, indent: usize, api: &str, op: &PlannedOp, args: &[Guarded<'_>]) {
    site(out, indent, api, op);
    let id = &op.ident;
    out.expr(
        indent,
        &Expr::call(
            "guarded",
            [
                Expr::from("&SITE"),
                Expr::tuple(args.iter().map(|g| Expr::Atom(g.name.clone()))),
                Expr::Atom(format!("at::{id} as sig::{id}")),
            ],
        ),
        "",
    );
}

/// The body of a guarded function: the protocol (with the arguments as a
/// tuple in schema order, written tensors as shared references) or, for
/// plain arguments and no mode, the implementation directly. `value` gives
/// the implementation's argument for each schema argument, from a guarded
/// argument's text (or its default).
fn protocol_body(
    out: &mut Out,
    indent: usize,
    api: &str,
    op: &PlannedOp,
    args: &[Guarded<'_>],
    call: impl Fn(&dyn Fn(&Guarded<'_>) -> String) -> Expr,
) {
    site(out, indent, api, op);
    let tuple = Expr::tuple(args.iter().map(|g| {
        Expr::Atom(if is_mut_tensor(g.arg) {
            format!("&*{}", g.name)
        } else {
            g.name.clone()
        })
    }));
    let mut params = String::new();
    Expr::tuple(args.iter().map(|g| Expr::Atom(g.param.clone()))).flat(&mut params);
    let slow = call(&|g: &Guarded<'_>| {
        if is_mut_tensor(g.arg) {
            format!("&mut {}.clone()", g.param)
        } else {
            g.param.clone()
        }
    });
    let slow = match slow {
        Expr::Call(head, items) => Expr::Call(format!("|{params}| {head}"), items),
        Expr::Atom(a) => Expr::Atom(format!("|{params}| {a}")),
    };
    out.expr(
        indent,
        &Expr::call(
            "if let Some(r) = protocol",
            [Expr::from("&SITE"), tuple, slow],
        ),
        " {",
    );
    out.line(indent + 4, "return r;");
    out.line(indent, "}");
    out.expr(indent, &call(&|g: &Guarded<'_>| g.name.clone()), "");
}

/// `ops::<ident>`: the operator handle's call, through the function-level protocol.
fn op_handle_fn(out: &mut Out, op: &PlannedOp, sig: &Sig) {
    let args: Vec<Guarded> = op
        .schema()
        .arguments
        .all
        .iter()
        .map(|a| Guarded {
            name: arg_ident(&a.name),
            param: arg_ident(&a.name),
            arg: a,
        })
        .collect();
    exact_fn(out, 4, op, sig, |out, indent| {
        if !args.iter().any(|g| is_mut_tensor(g.arg)) {
            // Every argument as it is: the shared instance of the signature.
            return shared_body(out, indent, "", op, &args);
        }
        protocol_body(out, indent, "", op, &args, |each| {
            Expr::call(
                format!("at::{}", op.ident),
                args.iter().map(|g| Expr::Atom(each(g))),
            )
        })
    });
}

/// The Python-API callable a convenience form is (`torch.add`, `Tensor.add`,
/// `torch.nn.functional.gelu`); none (empty, as for `ops::`) for a function
/// `autogen:` adds, which PyTorch binds in C++ only (torchgen's
/// `should_generate_py_binding`: `generated` without `view_copy`).
pub(crate) fn api_name(op: &PlannedOp, method: bool) -> String {
    if op.entry.has_tag("generated") && !op.entry.has_tag("view_copy") {
        return String::new();
    }
    let base = op.schema().name.name.to_string();
    if method {
        return format!("Tensor.{base}");
    }
    match op.entry.python_module.as_deref() {
        Some("nn") => format!("torch.nn.functional.{base}"),
        Some(m) => format!("torch.{m}.{base}"),
        None => format!("torch.{base}"),
    }
}

/// How many leading arguments a convenience form keeps: trailing arguments whose
/// default can be written in Rust are filled in.
pub fn kept(f: &opforge_schema::model::FunctionSchema) -> usize {
    let all = &f.arguments.all;
    let mut keep = all.len();
    while keep > 0 && default_expr(&all[keep - 1]).is_some() {
        keep -= 1;
    }
    keep
}

/// The convenience form: trailing defaulted arguments dropped and filled in.
fn convenience(out: &mut Out, indent: usize, op: &PlannedOp, sig: &Sig, method: bool) {
    let f = op.schema();
    let all = &f.arguments.all;
    let keep = kept(f);
    let self_index = f.arguments.self_index();
    let is_receiver = |i: usize| method && Some(i) == self_index;
    let mut params = Vec::new();
    let mut guarded = Vec::new();
    if method {
        params.push(Expr::from(match self_index.map(|i| all[i].is_write()) {
            Some(true) => "&mut self",
            _ => "&self",
        }));
    }
    for (i, a) in all.iter().enumerate() {
        let n = arg_ident(&a.name);
        if is_receiver(i) {
            guarded.push(Guarded {
                name: "self".into(),
                param: n,
                arg: a,
            });
        } else if i < keep {
            params.push(Expr::Atom(format!("{n}: {}", sig.params[i])));
            guarded.push(Guarded {
                name: n.clone(),
                param: n,
                arg: a,
            });
        }
    }
    out.doc(
        indent,
        &format!(
            "`{}` with defaults for trailing arguments; see [`ops::{}`]({}ops::{}).",
            op.entry.name(),
            op.ident,
            if method { "crate::" } else { "super::" },
            op.ident
        ),
    );
    out.expr(
        indent,
        &Expr::call(format!("pub fn {}", op.api_name), params),
        &format!(" -> {} {{", sig.ret),
    );
    let api = api_name(op, method);
    let every = guarded.len() == all.len();
    if every && !guarded.iter().any(|g| is_mut_tensor(g.arg)) {
        // No default to fill in, no written tensor: the shared instance of
        // the signature.
        shared_body(out, indent + 4, &api, op, &guarded);
    } else {
        protocol_body(out, indent + 4, &api, op, &guarded, |each| {
            let mut g = guarded.iter();
            let vals = all.iter().enumerate().map(|(i, a)| {
                Expr::Atom(if i < keep || is_receiver(i) {
                    each(g.next().expect("one guarded argument per kept argument"))
                } else {
                    default_expr(a).expect("dropped arguments have a default")
                })
            });
            Expr::call(format!("at::{}", op.ident), vals)
        });
    }
    out.line(indent, "}");
}

/// A Rust expression for an argument's default, if it has one that can be
/// written (`1`, `Some(DType::Int64)`, `&[0, 0]`, `"none"`).
pub fn default_expr(a: &Argument) -> Option<String> {
    let d = a.default.as_ref()?;
    let v = d.value.as_ref()?;
    let opt = a.ty.is_nullable();
    let inner = a.ty.strip_optional();
    let wrap = |t: String| if opt { format!("Some({t})") } else { t };
    let float = |x: f64| x.is_finite().then(|| format!("{x:?}"));
    Some(match (inner, v) {
        (_, DefaultValue::None) if opt => "None".into(),
        (Type::Base(BaseType::Bool), DefaultValue::Bool(b)) => wrap(b.to_string()),
        (Type::Base(BaseType::Int | BaseType::SymInt), DefaultValue::Int(i)) => wrap(i.to_string()),
        (Type::Base(BaseType::Int), DefaultValue::Enum(e)) => {
            wrap(enums::by_name(EnumKind::Reduction, e)?.code.to_string())
        }
        (Type::Base(BaseType::Float), DefaultValue::Int(i)) => wrap(float(*i as f64)?),
        (Type::Base(BaseType::Float), DefaultValue::Float(x)) => wrap(float(*x)?),
        (Type::Base(BaseType::Scalar), DefaultValue::Int(i)) => wrap(format!("Scalar::Int({i})")),
        (Type::Base(BaseType::Scalar), DefaultValue::Float(x)) => {
            wrap(format!("Scalar::Float({})", float(*x)?))
        }
        (Type::Base(BaseType::Scalar), DefaultValue::Bool(b)) => wrap(format!("Scalar::Bool({b})")),
        (Type::Base(BaseType::Str), DefaultValue::Str(s)) => wrap(format!("{s:?}")),
        (Type::Base(BaseType::MemoryFormat), DefaultValue::Enum(e)) => {
            let v = enums::by_name(EnumKind::MemoryFormat, e)?.enumerator;
            wrap(format!("MemoryFormat::{v}"))
        }
        (Type::Base(BaseType::ScalarType), DefaultValue::Enum(e)) => {
            let v = dtype_variant(ScalarType::from_name_or_alias(e)?)?;
            wrap(format!("DType::{v}"))
        }
        (Type::List { elem, .. }, DefaultValue::List(xs)) => {
            let items: Option<Vec<String>> = xs
                .iter()
                .map(|x| match (elem.as_ref(), x) {
                    (Type::Base(BaseType::Int | BaseType::SymInt), DefaultValue::Int(i)) => {
                        Some(i.to_string())
                    }
                    (Type::Base(BaseType::Float), DefaultValue::Float(f)) => float(*f),
                    (Type::Base(BaseType::Bool), DefaultValue::Bool(b)) => Some(b.to_string()),
                    _ => None,
                })
                .collect();
            // `int[2] stride=[]` means "not given": keep the empty list.
            wrap(format!("&[{}]", items?.join(", ")))
        }
        (
            Type::List {
                elem,
                size: Some(n),
            },
            DefaultValue::Int(i),
        ) if matches!(elem.as_ref(), Type::Base(BaseType::Int | BaseType::SymInt)) => wrap(
            format!("&[{}]", vec![i.to_string(); *n as usize].join(", ")),
        ),
        _ => return None,
    })
}
