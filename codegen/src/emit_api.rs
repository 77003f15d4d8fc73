//! Emit: the typed API over the generated tables, the schema lookup macro the
//! registration macros read, and the checks that the kernels the YAML names
//! exist.
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
//! the runtime, once: a wrapper is a few lines.

use crate::lower::{arg_ident, Plan, PlannedOp};
use crate::rust_types::{dtype_variant, fn_pointer_type, is_mut_tensor, param_type, result_type};
use opforge_schema::diag::{Diagnostic, Diagnostics};
use opforge_schema::enums::{self, EnumKind};
use opforge_schema::model::{Argument, BaseType, DefaultValue, Type};
use opforge_schema::scalar_type::ScalarType;
use proc_macro2::{Ident, TokenStream};
use quote::{format_ident, quote};

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

    /// The path, from a module the API file defines (`ops`, `torch`), of the
    /// module of the `at` file (`at` functions, `sig`, `operator`): the
    /// runtime's layer `crate::at`, or `at` beside it in a crate's `generated`.
    fn at_from_api(&self) -> TokenStream {
        quote!(at::)
    }

    /// What a module the API file defines imports to name the `at` module,
    /// the signatures, the operators' ids and the protocol's entries shortly
    /// (`at::add_Tensor`, `sig::add_Tensor`, `OpId::add_Tensor`).
    fn api_imports(&self) -> TokenStream {
        let (at, ids) = if self.runtime {
            (quote!(crate::at), quote!(crate::tables::OpId))
        } else {
            (quote!(super::at), quote!(super::OpId))
        };
        quote! {
            #[allow(unused_imports)]
            use ::opforge::__private::guarded;
            #[allow(unused_imports)]
            use ::opforge::__private::protocol;
            #[allow(unused_imports)]
            use ::opforge::__private::Site;
            #[allow(unused_imports)]
            use #at::{self, operator, sig};
            #[allow(unused_imports)]
            use #ids;
        }
    }

    /// The path of the tables (`OpId`) from a module one below the file
    /// including them: the runtime's layer `crate::tables`, or a crate's
    /// `generated`.
    fn tables_from_below(&self) -> TokenStream {
        quote!()
    }
}

/// A Rust identifier for generated code (`r#` for the few keywords that
/// `keyword_escape` leaves, never for names that cannot be raw).
fn ident(s: &str) -> Ident {
    format_ident!("{}", s)
}

/// The types of one operator's signature, or the diagnostic saying why it has none.
struct Sig {
    params: Vec<syn::Type>,
    ret: syn::Type,
    fn_ty: syn::Type,
}

fn signature(plan: &Plan, i: usize) -> Result<Sig, Diagnostic> {
    let f = plan.ops[i].schema();
    let err = |e: crate::rust_types::Unmapped| {
        let mut d = plan.diagnostic(i, format!("no Rust signature: {e}"));
        d.help = Some(
            "every operator of a schema file gets a typed API; use a mapped type, or load the file at run time (opforge::registry::Registry) where every type is accepted boxed".into(),
        );
        d
    };
    let fn_ty = fn_pointer_type(f).map_err(err)?;
    let params = f
        .arguments
        .all
        .iter()
        .map(param_type)
        .collect::<Result<Vec<_>, _>>()
        .map_err(err)?;
    let ret = result_type(&f.returns).map_err(err)?;
    Ok(Sig { params, ret, fn_ty })
}

/// The typed API's two files, formatted: `at` (the module of the `at` layer:
/// `operator`, `sig` and one dispatched function per operator) and `api` (the
/// modules `ops` and `torch`, and for the runtime the `Tensor` methods). Every
/// operator without a Rust signature is an error (all of them, each with its
/// file and line).
pub fn api(plan: &Plan, opts: &Options) -> Result<ApiFiles, Diagnostics> {
    let (at, api) = api_tokens(plan, opts)?;
    Ok(ApiFiles {
        at: crate::emit::format(plan, short_paths(at)),
        api: crate::emit::format(plan, short_paths(api)),
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

/// The runtime types the typed API names, imported into each of its modules.
const PRELUDE: &[&str] = &[
    "Tensor",
    "ScriptObject",
    "Scalar",
    "DType",
    "Layout",
    "Device",
    "MemoryFormat",
    "Generator",
    "Storage",
    "Stream",
    "QScheme",
    "Result",
];

/// Writes `::opforge::Tensor` as `Tensor` (and the other prelude types),
/// `::core::option::Option` as `Option`, `::std::vec::Vec` as `Vec`,
/// `::std::string::String` as `String`: the generated modules import them.
fn short_paths(ts: TokenStream) -> TokenStream {
    use proc_macro2::TokenTree as T;
    let toks: Vec<T> = ts.into_iter().collect();
    let mut out: Vec<T> = Vec::with_capacity(toks.len());
    let is_sep = |i: usize| {
        matches!((toks.get(i), toks.get(i + 1)),
            (Some(T::Punct(a)), Some(T::Punct(b))) if a.as_char() == ':' && b.as_char() == ':')
    };
    let ident_at = |i: usize| match toks.get(i) {
        Some(T::Ident(x)) => Some(x.to_string()),
        _ => None,
    };
    let mut i = 0;
    while i < toks.len() {
        // `:: a :: b` / `:: a :: b :: c`, not preceded by a path segment.
        let leading =
            is_sep(i) && !matches!(out.last(), Some(T::Ident(x)) if x != "mut" && x != "dyn");
        if leading {
            let path2 = (ident_at(i + 2), is_sep(i + 3), ident_at(i + 5));
            let path3 = (is_sep(i + 6), ident_at(i + 8));
            match (&path2, &path3) {
                ((Some(a), true, Some(b)), _)
                    if a == "opforge" && PRELUDE.contains(&b.as_str()) =>
                {
                    out.push(toks[i + 5].clone());
                    i += 6;
                    continue;
                }
                ((Some(a), true, Some(b)), (true, Some(c)))
                    if matches!(
                        (a.as_str(), b.as_str(), c.as_str()),
                        ("core", "option", "Option")
                            | ("std", "vec", "Vec")
                            | ("std", "string", "String")
                    ) =>
                {
                    out.push(toks[i + 8].clone());
                    i += 9;
                    continue;
                }
                _ => {}
            }
        }
        match &toks[i] {
            T::Group(g) => {
                let mut ng = proc_macro2::Group::new(g.delimiter(), short_paths(g.stream()));
                ng.set_span(g.span());
                out.push(T::Group(ng));
            }
            t => out.push(t.clone()),
        }
        i += 1;
    }
    out.into_iter().collect()
}

/// The typed-API tokens.
pub fn api_tokens(plan: &Plan, opts: &Options) -> Result<(TokenStream, TokenStream), Diagnostics> {
    let mut diags = Vec::new();
    let mut sigs = Vec::new();
    let mut specs = Vec::new();
    let mut ats = Vec::new();
    let mut callers = Vec::new();
    let mut ops = Vec::new();
    let mut funcs = Vec::new();
    let mut methods = Vec::new();
    for (i, op) in plan.ops.iter().enumerate() {
        let sig = match signature(plan, i) {
            Ok(s) => s,
            Err(d) => {
                diags.push(d);
                continue;
            }
        };
        let id = ident(&op.ident);
        let f = op.schema();
        let fn_ty = &sig.fn_ty;
        let doc = format!(" `{f}`");
        sigs.push(quote!(#[doc = #doc] pub type #id = #fn_ty;));
        let spec = crate::kernel::spec_type(fn_ty);
        specs.push(quote!(pub type #id = #spec;));
        ats.push(at_fn(op, &sig, opts));
        callers.push(typed_caller(op, opts));
        ops.push(op_handle_fn(op, &sig, opts));
        if op.entry.variants.function {
            funcs.push(convenience(op, &sig, false, opts));
        }
        if opts.runtime && op.entry.variants.method && f.arguments.self_arg().is_some() {
            methods.push(convenience(op, &sig, true, opts));
        }
    }
    if !diags.is_empty() {
        return Err(Diagnostics(diags));
    }
    // The `at` file is included in its own module (the runtime's `at`
    // layer, or `generated::at`): the tables are beside it or in their layer.
    let tables = if opts.runtime {
        quote!(crate::tables::)
    } else {
        quote!(super::)
    };
    let operator = if opts.runtime {
        quote! {
            /// The dispatcher's operator for `id`.
            #[inline(always)]
            pub fn operator(id: #tables OpId) -> &'static ::opforge::dispatch::Operator {
                ::opforge::dispatch::dispatcher().op(id)
            }
        }
    } else {
        let name = &opts.crate_name;
        quote! {
            /// The operators of this schema file, registered into opforge's
            /// dispatcher when it is built.
            #[doc(hidden)]
            pub static LIBRARY: ::opforge::__private::Library =
                ::opforge::__private::Library::new(#name, &#tables OPS);

            #[::opforge::__private::linkme::distributed_slice(::opforge::__private::LIBRARIES)]
            #[linkme(crate = ::opforge::__private::linkme)]
            static __OPFORGE_LIBRARY: &::opforge::__private::Library = &LIBRARY;

            /// The dispatcher's operator for `id`.
            #[inline(always)]
            pub fn operator(id: #tables OpId) -> &'static ::opforge::dispatch::Operator {
                LIBRARY.op(id as usize)
            }
        }
    };
    let imports = opts.api_imports();
    let methods = if opts.runtime {
        quote! {
            /// Tensor methods with schema defaults applied (`a.add(&b)`).
            mod tensor_methods {
                #[allow(unused_imports)]
                use ::opforge::__private::prelude::*;
                #imports

                #[allow(clippy::too_many_arguments)]
                impl ::opforge::Tensor {
                    #(#methods)*
                }
            }
        }
    } else {
        quote!()
    };
    let n_callers = callers.len();
    // From `typed_callers`, one module below the `at` file's.
    let tables_up = if opts.runtime {
        quote!(crate::tables::)
    } else {
        quote!(super::super::)
    };
    let at = quote! {
        #[allow(unused_imports)]
        use ::opforge::__private::prelude::*;

        #operator

        /// Kernel signature types, one per operator (what `#[kernel]` checks against).
        #[allow(non_camel_case_types)]
        pub mod sig {
            #[allow(unused_imports)]
            use ::opforge::__private::prelude::*;
            #(#sigs)*

            /// Each signature's spec (`opforge::dispatch::adapter`): the same
            /// types with `'static` references.
            #[doc(hidden)]
            #[allow(non_camel_case_types)]
            pub mod spec {
                #[allow(unused_imports)]
                use ::opforge::__private::prelude::*;
                #(#specs)*
            }
        }

        #(#ats)*

        /// Each operator's typed call (above) from boxed arguments, in `OpId`
        /// order: what `opcheck`'s typed-call family compares with the boxed
        /// call.
        #[doc(hidden)]
        pub mod typed_callers {
            #[allow(unused_imports)]
            use ::opforge::__private::prelude::*;
            use ::opforge::__private::TypedCaller;
            use super::sig;

            /// The callers, in `OpId` order.
            pub static TABLE: [TypedCaller; #n_callers] = [#(#callers),*];

            #[::opforge::__private::linkme::distributed_slice(::opforge::__private::TYPED_APIS)]
            #[linkme(crate = ::opforge::__private::linkme)]
            static __OPFORGE_TYPED_API: ::opforge::__private::TypedApi = ::opforge::__private::TypedApi {
                ops: &#tables_up OPS,
                calls: &TABLE,
            };
        }
    };
    let api = quote! {
        /// Every operator overload, with every argument, dispatched; as the
        /// operator handle `torch.ops.<ns>.<name>.<overload>` it goes through the
        /// function-level override protocol first.
        #[allow(non_snake_case, clippy::too_many_arguments)]
        pub mod ops {
            #[allow(unused_imports)]
            use ::opforge::__private::prelude::*;
            #imports
            #(#ops)*
        }

        /// Free functions with schema defaults applied (`torch.add(a, b)` style).
        #[allow(non_snake_case, clippy::too_many_arguments)]
        pub mod torch {
            #[allow(unused_imports)]
            use ::opforge::__private::prelude::*;
            #imports
            #(#funcs)*
        }

        #methods
    };
    Ok((at, api))
}

/// `name: Type` for every argument.
fn all_params(f: &opforge_schema::model::FunctionSchema, sig: &Sig) -> Vec<TokenStream> {
    f.arguments
        .all
        .iter()
        .zip(&sig.params)
        .map(|(a, t)| {
            let n = ident(&arg_ident(&a.name));
            quote!(#n: #t)
        })
        .collect()
}

/// `at::<ident>`: one call of the runtime's typed engine.
fn at_fn(op: &PlannedOp, sig: &Sig, opts: &Options) -> TokenStream {
    let id = ident(&op.ident);
    let args = op
        .schema()
        .arguments
        .all
        .iter()
        .map(|a| ident(&arg_ident(&a.name)));
    exact_fn(op, sig, {
        let tables = if opts.runtime {
            quote!(crate::tables::)
        } else {
            quote!(super::)
        };
        quote!(::opforge::__private::call::<sig::#id, _, _>(operator(#tables OpId::#id), (#(#args,)*)))
    })
}

/// `typed_callers::TABLE`'s entry of an operator: its `at::` function behind
/// its signature's adapter (`opforge::dispatch::adapter`: each argument
/// unboxed as a kernel's boxed entry unboxes it, the results as one value).
fn typed_caller(op: &PlannedOp, opts: &Options) -> TokenStream {
    let id = ident(&op.ident);
    // `typed_callers` is a module inside the `at` file's.
    let at = if opts.runtime {
        quote!(crate::at::)
    } else {
        quote!(super::)
    };
    quote!(TypedCaller::new::<sig::#id, sig::spec::#id>(&(#at #id as sig::#id)))
}

/// An exact form (`at::`, `ops::`): every argument, documented by its schema.
fn exact_fn(op: &PlannedOp, sig: &Sig, body: TokenStream) -> TokenStream {
    let f = op.schema();
    let id = ident(&op.ident);
    let params = all_params(f, sig);
    let ret = &sig.ret;
    let doc = format!(" `{f}`");
    quote! {
        #[doc = #doc]
        #[inline]
        pub fn #id(#(#params),*) -> #ret {
            #body
        }
    }
}

/// One argument of a protocol-guarded function: its name in the function, its
/// name in the closure, and its schema argument.
struct Guarded<'a> {
    /// How the body refers to it (`self` for a receiver).
    name: TokenStream,
    /// The closure's parameter name (`self_` for a receiver).
    param: Ident,
    arg: &'a Argument,
}

/// The body of a guarded function: the protocol (with the arguments as a tuple in
/// schema order, written tensors as shared references) or, for plain arguments
/// and no mode, the implementation directly. `call` builds the implementation's
/// call from one expression per schema argument.
fn guarded_body(
    tables: &TokenStream,
    site_api: &str,
    op: &PlannedOp,
    args: &[Guarded<'_>],
    call: impl Fn(&dyn Fn(&Guarded<'_>) -> TokenStream) -> TokenStream,
) -> TokenStream {
    let id = ident(&op.ident);
    let tuple = args.iter().map(|g| {
        let n = &g.name;
        if is_mut_tensor(g.arg) {
            quote!(&*#n)
        } else {
            quote!(#n)
        }
    });
    let params = args.iter().map(|g| &g.param);
    let slow = call(&|g: &Guarded<'_>| {
        let p = &g.param;
        if is_mut_tensor(g.arg) {
            quote!(&mut #p.clone())
        } else {
            quote!(#p)
        }
    });
    let fast = call(&|g: &Guarded<'_>| g.name.clone());
    quote! {
        static SITE: Site = Site::new(#site_api, || operator(#tables OpId::#id));
        if let Some(r) = protocol(&SITE, (#(#tuple,)*), |(#(#params,)*)| #slow) {
            return r;
        }
        #fast
    }
}

/// `ops::<ident>`: the operator handle's call, through the function-level protocol.
fn op_handle_fn(op: &PlannedOp, sig: &Sig, opts: &Options) -> TokenStream {
    let id = ident(&op.ident);
    let args: Vec<Guarded> = op
        .schema()
        .arguments
        .all
        .iter()
        .map(|a| Guarded {
            name: {
                let n = ident(&arg_ident(&a.name));
                quote!(#n)
            },
            param: ident(&arg_ident(&a.name)),
            arg: a,
        })
        .collect();
    let at = opts.at_from_api();
    let tables = opts.tables_from_below();
    if !args.iter().any(|g| is_mut_tensor(g.arg)) {
        // Every argument as it is: the shared instance of the signature.
        let names = args.iter().map(|g| &g.name);
        let body = quote! {
            static SITE: Site = Site::new("", || operator(#tables OpId::#id));
            guarded(&SITE, (#(#names,)*), #at #id as sig::#id)
        };
        return exact_fn(op, sig, body);
    }
    let body = guarded_body(&tables, "", op, &args, |each| {
        let vals = args.iter().map(each);
        quote!(#at #id(#(#vals),*))
    });
    exact_fn(op, sig, body)
}

/// The Python-API callable a convenience form is (`torch.add`, `Tensor.add`,
/// `torch.nn.functional.gelu`); none (empty, as for `ops::`) for a function
/// `autogen:` adds, which PyTorch binds in C++ only (torchgen's
/// `should_generate_py_binding`: `generated` without `view_copy`).
fn api_name(op: &PlannedOp, method: bool) -> String {
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
fn convenience(op: &PlannedOp, sig: &Sig, method: bool, opts: &Options) -> TokenStream {
    let f = op.schema();
    let all = &f.arguments.all;
    let keep = kept(f);
    let self_index = f.arguments.self_index();
    let is_receiver = |i: usize| method && Some(i) == self_index;
    let mut params = Vec::new();
    let mut guarded = Vec::new();
    for (i, a) in all.iter().enumerate() {
        let n = ident(&arg_ident(&a.name));
        if is_receiver(i) {
            guarded.push(Guarded {
                name: quote!(self),
                param: n,
                arg: a,
            });
        } else if i < keep {
            let t = &sig.params[i];
            params.push(quote!(#n: #t));
            guarded.push(Guarded {
                name: quote!(#n),
                param: n,
                arg: a,
            });
        }
    }
    let id = ident(&op.ident);
    // The methods are the runtime's (its `at` and `tables` are layers, named
    // from the crate root, from `impl Tensor` too).
    let (at, tables) = (opts.at_from_api(), opts.tables_from_below());
    let every = guarded.len() == all.len();
    let body = if every && !guarded.iter().any(|g| is_mut_tensor(g.arg)) {
        // No default to fill in, no written tensor: the shared instance of
        // the signature.
        let api = api_name(op, method);
        let names = guarded.iter().map(|g| &g.name);
        quote! {
            static SITE: Site = Site::new(#api, || operator(#tables OpId::#id));
            guarded(&SITE, (#(#names,)*), #at #id as sig::#id)
        }
    } else {
        guarded_body(&tables, &api_name(op, method), op, &guarded, |each| {
            let mut g = guarded.iter();
            let vals = all.iter().enumerate().map(|(i, a)| {
                if i < keep || is_receiver(i) {
                    each(g.next().expect("one guarded argument per kept argument"))
                } else {
                    default_expr(a).expect("dropped arguments have a default")
                }
            });
            quote!(#at #id(#(#vals),*))
        })
    };
    let name = ident(&op.api_name);
    let ret = &sig.ret;
    let doc = format!(
        " `{}` with defaults for trailing arguments; see [`ops::{}`]({}ops::{}).",
        op.entry.name(),
        op.ident,
        if method { "crate::" } else { "super::" },
        op.ident
    );
    if method {
        let receiver = match self_index.map(|i| all[i].is_write()) {
            Some(true) => quote!(&mut self),
            _ => quote!(&self),
        };
        quote! {
            #[doc = #doc]
            pub fn #name(#receiver, #(#params),*) -> #ret {
                #body
            }
        }
    } else {
        quote! {
            #[doc = #doc]
            pub fn #name(#(#params),*) -> #ret {
                #body
            }
        }
    }
}

/// A Rust expression for an argument's default, if it has one that can be written.
pub fn default_expr(a: &Argument) -> Option<TokenStream> {
    let d = a.default.as_ref()?;
    let v = d.value.as_ref()?;
    let opt = a.ty.is_nullable();
    let inner = a.ty.strip_optional();
    let wrap = |t: TokenStream| if opt { quote!(Some(#t)) } else { t };
    Some(match (inner, v) {
        (_, DefaultValue::None) if opt => quote!(None),
        (Type::Base(BaseType::Bool), DefaultValue::Bool(b)) => wrap(quote!(#b)),
        (Type::Base(BaseType::Int | BaseType::SymInt), DefaultValue::Int(i)) => wrap(quote!(#i)),
        (Type::Base(BaseType::Int), DefaultValue::Enum(e)) => {
            let i = enums::by_name(EnumKind::Reduction, e)?.code;
            wrap(quote!(#i))
        }
        (Type::Base(BaseType::Float), DefaultValue::Int(i)) => {
            let x = *i as f64;
            wrap(quote!(#x))
        }
        (Type::Base(BaseType::Float), DefaultValue::Float(x)) if x.is_finite() => wrap(quote!(#x)),
        (Type::Base(BaseType::Scalar), DefaultValue::Int(i)) => {
            wrap(quote!(::opforge::Scalar::Int(#i)))
        }
        (Type::Base(BaseType::Scalar), DefaultValue::Float(x)) if x.is_finite() => {
            wrap(quote!(::opforge::Scalar::Float(#x)))
        }
        (Type::Base(BaseType::Scalar), DefaultValue::Bool(b)) => {
            wrap(quote!(::opforge::Scalar::Bool(#b)))
        }
        (Type::Base(BaseType::Str), DefaultValue::Str(s)) => wrap(quote!(#s)),
        (Type::Base(BaseType::MemoryFormat), DefaultValue::Enum(e)) => {
            let v = enums::by_name(EnumKind::MemoryFormat, e)?.enumerator;
            let v = format_ident!("{v}");
            wrap(quote!(::opforge::MemoryFormat::#v))
        }
        (Type::Base(BaseType::ScalarType), DefaultValue::Enum(e)) => {
            let v = ident(dtype_variant(ScalarType::from_name_or_alias(e)?)?);
            wrap(quote!(::opforge::DType::#v))
        }
        (Type::List { elem, .. }, DefaultValue::List(xs)) => {
            let items: Option<Vec<TokenStream>> = xs
                .iter()
                .map(|x| match (elem.as_ref(), x) {
                    (Type::Base(BaseType::Int | BaseType::SymInt), DefaultValue::Int(i)) => {
                        Some(quote!(#i))
                    }
                    (Type::Base(BaseType::Float), DefaultValue::Float(f)) if f.is_finite() => {
                        Some(quote!(#f))
                    }
                    (Type::Base(BaseType::Bool), DefaultValue::Bool(b)) => Some(quote!(#b)),
                    _ => None,
                })
                .collect();
            let items = items?;
            // `int[2] stride=[]` means "not given": keep the empty list.
            wrap(quote!(&[#(#items),*]))
        }
        (
            Type::List {
                elem,
                size: Some(n),
            },
            DefaultValue::Int(i),
        ) if matches!(elem.as_ref(), Type::Base(BaseType::Int | BaseType::SymInt)) => {
            let items = (0..*n).map(|_| quote!(#i));
            wrap(quote!(&[#(#items),*]))
        }
        _ => return None,
    })
}

/// The schema lookup macro, `__opforge_schema!`: one arm per operator (by its
/// qualified name) and one per kernel the YAML names (by key and function
/// name), each handing the schema, its place in the file and its `dispatch:`
/// rows to a callback macro. `#[kernel]` and `#[op]` expand to a lookup, so they
/// check against the schema of the crate being compiled without reading any
/// file. Unknown names go to the runtime's lookup (a crate with its own schema)
/// or to the callback as unknown, with every name for suggestions (the runtime).
pub fn schema_macro(plan: &Plan, opts: &Options) -> String {
    let file = std::path::Path::new(plan.file)
        .file_name()
        .map_or(plan.file.into(), |f| f.to_string_lossy().into_owned());
    let crate_name = &opts.crate_name;
    let checked = opts.kernels_module.is_some();
    let mut arms = Vec::new();
    for op in &plan.ops {
        let q = op.qualified_name();
        let schema = op.schema().to_string();
        let line = op.entry.line;
        let rows: Vec<String> = op
            .kernels
            .iter()
            .filter(|_| checked)
            .map(|(k, v)| format!("{k} = {v:?}"))
            .collect();
        let found = format!(
            "found {{ op: {q:?}, schema: {schema:?}, file: {file:?}, line: {line}, crate: {crate_name:?}, kernels: [{}] }}",
            rows.join(", ")
        );
        arms.push(format!(
            "    ({q:?} => [$($cb:tt)*] $($p:tt)*) => {{ $($cb)*! {{ {found} $($p)* }} }};"
        ));
        if checked {
            for (key, kernel) in &op.kernels {
                let func = kernel.rsplit("::").next().unwrap_or(kernel);
                arms.push(format!(
                    "    (@kernel {key} {func} => [$($cb:tt)*] $($p:tt)*) => {{ $($cb)*! {{ {found} $($p)* }} }};"
                ));
            }
        }
    }
    // A kernel function name the YAML does not have under a key: the names it
    // has there, for a suggestion.
    if checked {
        let mut by_key: std::collections::BTreeMap<&str, Vec<String>> = Default::default();
        for op in &plan.ops {
            for (key, kernel) in &op.kernels {
                let func = kernel.rsplit("::").next().unwrap_or(kernel);
                by_key.entry(key).or_default().push(format!("{func:?}"));
            }
        }
        for (key, mut funcs) in by_key {
            funcs.sort();
            funcs.dedup();
            arms.push(format!(
                "    (@kernel {key} $func:ident => [$($cb:tt)*] $($p:tt)*) => {{ $($cb)*! {{ unknown {{ names: [{}] }} $($p)* }} }};",
                funcs.join(", ")
            ));
        }
    }
    let names: Vec<String> = plan
        .ops
        .iter()
        .map(|o| format!("{:?}", o.qualified_name()))
        .collect();
    let fallback = if opts.runtime {
        format!(
            "    ($name:literal => [$($cb:tt)*] $($p:tt)*) => {{ $($cb)*! {{ unknown {{ names: [{}] }} $($p)* }} }};\n    (@kernel $key:ident $func:ident => [$($cb:tt)*] $($p:tt)*) => {{ $($cb)*! {{ unknown {{ names: [] }} $($p)* }} }};",
            names.join(", ")
        )
    } else {
        // Forwarded to the runtime's lookup, with this file's names for
        // suggestions if the name is nobody's.
        format!(
            "    ($name:literal => [$($cb:tt)*] $($p:tt)*) => {{ ::opforge::__opforge_schema! {{ $name => [$($cb)*] $($p)* also = [{}] }} }};\n    ($($t:tt)*) => {{ ::opforge::__opforge_schema! {{ $($t)* }} }};",
            names.join(", ")
        )
    };
    format!(
        "// @generated by opforge-codegen from {file} — do not edit.\n// The schema lookup of `#[kernel]` and `#[op]` (see opforge_codegen::emit_api::schema_macro).\n\n#[doc(hidden)]\n#[macro_export]\nmacro_rules! __opforge_schema {{\n{}\n{fallback}\n}}\n",
        arms.join("\n")
    )
}

/// The name of the marker `#[kernel]` leaves beside a kernel for `op` under
/// `key`: the generated check of each `dispatch:` row refers to it.
pub fn kernel_marker(key: &str, op_ident: &str) -> String {
    format!("__opforge_{key}_kernel_of_{op_ident}")
}

/// The checks that every kernel the YAML's `dispatch:` names exists at the path
/// it gives and carries `#[kernel]` for its operator and key. Rows for keys the
/// runtime has no slot for are not checked (the validator accepts PyTorch's
/// keys; only runtime keys get kernels).
///
/// Each row looks the kernel's marker up through a glob import of the
/// kernel's module, inside a block whose enclosing module holds a fallback of
/// the same name: the marker `#[kernel]` left there shadows the fallback, and
/// without one the fallback is found instead, and fails a trait bound whose
/// message names the YAML file and line, the operator, the key and the
/// function expected (no "cannot find value", no suggestion of another
/// operator's marker).
pub fn kernel_checks(plan: &Plan, opts: &Options) -> String {
    let file = std::path::Path::new(plan.file)
        .file_name()
        .map_or(plan.file.into(), |f| f.to_string_lossy().into_owned());
    let mut rows = Vec::new();
    if let Some(module) = &opts.kernels_module {
        for op in &plan.ops {
            for (key, kernel) in &op.kernels {
                if !opforge_schema::model::RUNTIME_DISPATCH_KEYS.contains(&key.as_str()) {
                    continue;
                }
                let mut segs: Vec<String> = kernel
                    .split("::")
                    .map(|s| {
                        if opforge_schema::names::is_rust_keyword(s) {
                            format!("r#{s}")
                        } else {
                            s.to_string()
                        }
                    })
                    .collect();
                let function = segs.pop().unwrap_or_default();
                let path = if segs.is_empty() {
                    module.clone()
                } else {
                    format!("{module}::{}", segs.join("::"))
                };
                let marker = kernel_marker(key, &op.ident);
                let row = rows.len();
                let message = format!(
                    "no {key} kernel for `{}`: {file}:{} names `{path}::{function}`, which does not exist or does not carry `#[kernel({key})]`",
                    op.qualified_name(),
                    op.entry.line
                );
                let label = format!("`{path}::{function}` with `#[kernel({key})]` expected");
                rows.push(format!(
                    "row!(__Row{row}, {marker}, {path}, {message:?}, {label:?});"
                ));
            }
        }
    }
    if rows.is_empty() {
        return format!(
            "// @generated by opforge-codegen from {file} — do not edit.\n\
             // No `dispatch:` row names a kernel of this crate: nothing to check.\n"
        );
    }
    format!(
        "// @generated by opforge-codegen from {file} — do not edit.\n\
         // Every kernel `dispatch:` names exists and carries #[kernel] for its operator and key.\n\n\
         #[doc(hidden)]\n\
         #[allow(non_upper_case_globals, non_camel_case_types, dead_code)]\n\
         mod __opforge_kernel_checks {{\n\
         /// What a row finds when the kernel's marker is missing.\n\
         struct NoKernel;\n\n\
         /// One `dispatch:` row: the marker `#[kernel]` leaves beside the\n\
         /// kernel, looked up through a glob import of the kernel's module,\n\
         /// shadows the fallback of the same name defined here; without it\n\
         /// the fallback fails the row's trait, whose message names the row.\n\
         macro_rules! row {{\n    \
             ($row:ident, $marker:ident, $($module:ident)::+, $message:literal, $label:literal) => {{\n        \
                 #[diagnostic::on_unimplemented(message = $message, label = $label)]\n        \
                 trait $row {{}}\n        \
                 #[diagnostic::do_not_recommend]\n        \
                 impl $row for () {{}}\n        \
                 const $marker: NoKernel = NoKernel;\n        \
                 const _: () = {{\n            \
                     #[allow(unused_imports)]\n            \
                     use $($module)::+::*;\n            \
                     fn check<T: $row>(_: T) {{}}\n            \
                     fn row() {{\n                \
                         check($marker)\n            \
                     }}\n        \
                 }};\n    \
             }};\n\
         }}\n\n\
         {}\n\
         }}\n",
        rows.join("\n")
    )
}

/// The override-coverage table for tests: every guarded function of the typed API
/// (every `ops::` function, every `torch::` function, every `Tensor` method of
/// the runtime), with the name of the `func` its guard hands to handlers
/// (`aten.add.Tensor`, `torch.add`, `torch.Tensor.add`) and a call that puts one
/// given tensor in every tensor slot and plain values elsewhere. The tests crate
/// generates it for itself: it is not part of the runtime.
pub fn coverage(plan: &Plan) -> Result<String, Diagnostics> {
    let bindings: std::collections::HashSet<&str> =
        plan.bindings.iter().map(|b| b.name.as_str()).collect();
    let mut entries = Vec::new();
    let mut diags = Vec::new();
    for (i, op) in plan.ops.iter().enumerate() {
        if let Err(d) = signature(plan, i) {
            diags.push(d);
            continue;
        }
        let f = op.schema();
        let all = &f.arguments.all;
        let handle = op_handle_name(op);
        let id = ident(&op.ident);
        let vals = all.iter().map(coverage_value);
        entries.push(coverage_entry(
            &format!("ops::{}", op.ident),
            &handle,
            all.iter().filter(|a| a.ty.is_tensor_like()).count(),
            quote!(::opforge::ops::#id(#(#vals),*)),
        ));
        let name = ident(&op.api_name);
        let keep = kept(f);
        let self_index = f.arguments.self_index();
        let expected = |api: &str| {
            if !bindings.contains(api) {
                handle.clone()
            } else if let Some(rest) = api.strip_prefix("Tensor.") {
                format!("torch.Tensor.{rest}")
            } else {
                api.to_string()
            }
        };
        if op.entry.variants.function {
            let kept_args: Vec<&Argument> = all[..keep].iter().collect();
            let vals = kept_args.iter().map(|a| coverage_value(a));
            entries.push(coverage_entry(
                &format!("torch::{}", op.api_name),
                &expected(&api_name(op, false)),
                kept_args.iter().filter(|a| a.ty.is_tensor_like()).count(),
                quote!(::opforge::torch::#name(#(#vals),*)),
            ));
        }
        if op.entry.variants.method {
            if let Some(si) = self_index {
                let receiver = if all[si].is_write() {
                    quote!(&mut t.clone())
                } else {
                    quote!(t)
                };
                let kept_args: Vec<&Argument> = all
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| *i < keep && *i != si)
                    .map(|(_, a)| a)
                    .collect();
                let vals = kept_args.iter().map(|a| coverage_value(a));
                entries.push(coverage_entry(
                    &format!("Tensor::{}", op.api_name),
                    &expected(&api_name(op, true)),
                    1 + kept_args.iter().filter(|a| a.ty.is_tensor_like()).count(),
                    quote!(::opforge::Tensor::#name(#receiver, #(#vals),*)),
                ));
            }
        }
    }
    if !diags.is_empty() {
        return Err(Diagnostics(diags));
    }
    let n = entries.len();
    let tokens = quote! {
        /// One generated function that goes through the function-level protocol.
        pub struct Entry {
            /// Its Rust path (`ops::add_Tensor`, `torch::add`, `Tensor::add`).
            pub path: &'static str,
            /// `resolve_name` of the `func` its guard passes to handlers.
            pub func: &'static str,
            /// How many tensor slots it has (none: only a mode sees the call).
            pub tensor_slots: usize,
            /// Calls it with the given tensor in every tensor slot.
            pub call: fn(&::opforge::Tensor) -> ::opforge::Result<()>,
        }

        /// One entry per guarded function.
        #[allow(clippy::all)]
        pub static ENTRIES: [Entry; #n] = [#(#entries),*];
    };
    Ok(crate::emit::format(plan, tokens))
}

/// `resolve_name` of an operator handle: `aten.add.Tensor`, `aten.abs.default`.
fn op_handle_name(op: &PlannedOp) -> String {
    let n = &op.schema().name;
    let overload = if n.overload.is_empty() {
        "default"
    } else {
        &n.overload
    };
    format!("{}.{}.{overload}", n.namespace(), n.name)
}

fn coverage_entry(path: &str, func: &str, tensor_slots: usize, call: TokenStream) -> TokenStream {
    quote! {
        Entry {
            path: #path,
            func: #func,
            tensor_slots: #tensor_slots,
            call: |t: &::opforge::Tensor| #call.map(|_| ()),
        }
    }
}

/// A value for one argument in a coverage call: the tensor `t` in every tensor
/// slot, plain values elsewhere (`None` for optionals, empty lists, zeros).
fn coverage_value(a: &Argument) -> TokenStream {
    fn value(ty: &Type, write: bool, default: Option<&DefaultValue>) -> TokenStream {
        match ty {
            Type::Base(BaseType::Tensor) if write => quote!(&mut t.clone()),
            Type::Base(BaseType::Tensor) => quote!(t),
            Type::Optional(inner) if inner.is_tensor_like() => {
                let v = value(inner, write, None);
                quote!(Some(#v))
            }
            Type::Optional(_) => quote!(None),
            Type::List { elem, .. } => match elem.as_ref() {
                Type::Base(BaseType::Tensor) => quote!(::std::slice::from_ref(t)),
                Type::Optional(e) if e.is_base(BaseType::Tensor) => quote!(&[Some(t.clone())]),
                _ => quote!(&[]),
            },
            Type::Base(BaseType::Int | BaseType::SymInt | BaseType::DeviceIndex) => quote!(0i64),
            Type::Base(BaseType::Float) => quote!(1.0f64),
            Type::Base(BaseType::Bool | BaseType::SymBool) => quote!(false),
            Type::Base(BaseType::Str) => match default {
                Some(DefaultValue::Str(s)) => quote!(#s),
                _ => quote!("mean"),
            },
            Type::Base(BaseType::Scalar) => quote!(::opforge::Scalar::Int(1)),
            Type::Base(BaseType::ScalarType) => quote!(::opforge::DType::Float32),
            Type::Base(BaseType::Layout) => quote!(::opforge::Layout::Strided),
            Type::Base(BaseType::Device) => quote!(::opforge::Device::Cpu),
            Type::Base(BaseType::MemoryFormat) => quote!(::opforge::MemoryFormat::Contiguous),
            Type::Base(BaseType::Generator) => {
                quote!(&::opforge::Generator::new(::opforge::Device::Cpu))
            }
            Type::Base(BaseType::Stream) => {
                quote!(::opforge::Stream::default_for(::opforge::Device::Cpu))
            }
            Type::Base(BaseType::QScheme) => quote!(::opforge::QScheme::PerTensorAffine),
            Type::Base(BaseType::Storage) => quote!(&t.storage()),
            // Operators with other types have no typed API (`signature` failed).
            _ => quote!(compile_error!(
                "override coverage: argument type without a value"
            )),
        }
    }
    let default = a.default.as_ref().and_then(|d| d.value.as_ref());
    value(&a.ty, a.is_write(), default)
}
