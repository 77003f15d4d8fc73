//! Emit: the typed API over the generated tables.
//!
//! Per operator with a Rust signature (see [`crate::rust_types`]):
//! - `sig::<ident>`: its kernel's function-pointer type;
//! - `ops::<ident>(every argument)`: the exact overload, dispatched (one line each,
//!   through the runtime's `typed_call!` engine);
//! - for `function` variants, `torch::<name>(required arguments)` and for `method`
//!   variants, `Tensor::<name>(&self, required arguments)`, with trailing schema
//!   defaults applied.
//!
//! Naming of the convenience forms: the first overload of a name (in file order)
//! takes the plain name (`add` for `add.Tensor`, `add_` for `add_.Tensor`); other
//! overloads append their overload name in snake case (`add_scalar`, `add_out`,
//! `pow_tensor_scalar`). Inplace methods take `&mut self`. Rust keywords get a
//! trailing `_` (`where_`), and `clone` becomes `clone_tensor` (a Tensor's
//! `Clone::clone` is a cheap handle copy; PyTorch's `clone` copies the data).

use crate::lower::{arg_ident, Plan, PlannedOp, Skip};
use crate::rust_types::{
    dtype_variant, fn_pointer_type, param_type, result_type, unsupported, Spelling,
};
use heck::ToSnakeCase;
use opforge_schema::model::{Argument, BaseType, DefaultValue, Type};
use opforge_schema::scalar_type::ScalarType;
use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use std::collections::{HashMap, HashSet};

fn toks(s: &str) -> TokenStream {
    s.parse().unwrap_or_else(|_| quote!(()))
}

/// The typed-API file, formatted.
pub fn api(plan: &Plan) -> String {
    crate::emit::format(plan, api_tokens(plan).0)
}

/// The typed-API tokens and the operators left out (with why).
pub fn api_tokens(plan: &Plan) -> (TokenStream, Vec<Skip>) {
    let mut skips = Vec::new();
    let mut sigs = Vec::new();
    let mut ops = Vec::new();
    let mut ats = Vec::new();
    let mut funcs = Vec::new();
    let mut methods = Vec::new();
    let names = convenience_names(plan);
    let coverage = coverage(plan, &names);
    for op in &plan.ops {
        let f = op.schema();
        if let Some(why) = unsupported(f) {
            skips.push(Skip {
                op: op.entry.name(),
                reason: format!("no typed API: {why}"),
            });
            continue;
        }
        let ident = format_ident!("{}", op.ident);
        let fn_ty = toks(&fn_pointer_type(f, Spelling::Qualified).unwrap_or_default());
        let doc = format!(" `{f}`");
        sigs.push(quote!(#[doc = #doc] pub type #ident = #fn_ty;));
        ats.push(exact_fn(op, &ident));
        ops.push(op_handle_fn(op, &ident));
        let Some(short) = names.get(&op.ident) else {
            continue;
        };
        if op.entry.variants.function {
            funcs.push(convenience(op, short, false));
        }
        if op.entry.variants.method && f.arguments.self_arg().is_some() {
            methods.push(convenience(op, short, true));
        }
    }
    let tokens = quote! {
        /// Kernel signature types, one per operator (what `#[kernel]` checks against).
        #[allow(non_camel_case_types)]
        pub mod sig {
            #(#sigs)*
        }

        /// Every operator overload, with every argument, dispatched without the
        /// function-level override protocol (C++'s `at::`): what kernels call.
        #[allow(non_snake_case, clippy::too_many_arguments)]
        pub mod at {
            use super::*;
            #(#ats)*
        }

        /// Every operator overload, with every argument, dispatched; as the
        /// operator handle `torch.ops.aten.<name>.<overload>` it goes through the
        /// function-level override protocol first.
        #[allow(non_snake_case, clippy::too_many_arguments)]
        pub mod ops {
            #(#ops)*
        }

        /// Free functions with schema defaults applied (`torch.add(a, b)` style).
        #[allow(clippy::too_many_arguments)]
        pub mod torch {
            #(#funcs)*
        }

        /// Tensor methods with schema defaults applied (`a.add(&b)`).
        #[allow(clippy::too_many_arguments)]
        impl ::opforge::Tensor {
            #(#methods)*
        }

        #coverage
    };
    (tokens, skips)
}

/// The short name of every operator that gets convenience forms.
fn convenience_names(plan: &Plan) -> HashMap<String, String> {
    let mut order: Vec<&PlannedOp> = plan.ops.iter().collect();
    order.sort_by_key(|o| o.entry.line);
    let mut taken = HashSet::new();
    let mut out = HashMap::new();
    for op in order {
        if op.entry.func.name.namespace() != "aten" || unsupported(op.schema()).is_some() {
            continue;
        }
        let base = op.entry.func.name.name.to_string();
        let name = if taken.insert(base.clone()) {
            base
        } else {
            format!("{base}_{}", op.entry.func.name.overload.to_snake_case())
        };
        // Names that would shadow a trait method every Tensor user relies on.
        let name = match name.as_str() {
            "clone" => "clone_tensor".to_string(),
            _ => crate::lower::arg_ident(&name),
        };
        if taken.insert(name.clone()) || name == op.entry.func.name.name.to_string() {
            out.insert(op.ident.clone(), name);
        }
    }
    out
}

/// `name: Type` for every argument of a schema.
fn all_params(f: &opforge_schema::model::FunctionSchema) -> Vec<TokenStream> {
    f.arguments
        .all
        .iter()
        .map(|a| {
            let n = format_ident!("{}", arg_ident(&a.name));
            let t = toks(&param_type(a, Spelling::Qualified).unwrap_or_default());
            quote!(#n: #t)
        })
        .collect()
}

fn exact_fn(op: &PlannedOp, ident: &proc_macro2::Ident) -> TokenStream {
    let f = op.schema();
    let params = all_params(f);
    let args: Vec<TokenStream> = f
        .arguments
        .all
        .iter()
        .map(|a| {
            let n = format_ident!("{}", arg_ident(&a.name));
            quote!(#n)
        })
        .collect();
    let tensor_args: Vec<TokenStream> = f
        .arguments
        .all
        .iter()
        .filter(|a| a.ty.is_tensor_like())
        .map(|a| {
            let n = format_ident!("{}", arg_ident(&a.name));
            quote!(::opforge::dispatch::typed::HasKeys::keys(&#n))
        })
        .collect();
    let keys = if !tensor_args.is_empty() {
        quote!(::opforge::dispatch::KeySet::EMPTY #(| #tensor_args)*)
    } else if let Some(d) = f
        .arguments
        .get("device")
        .filter(|a| a.ty.strip_optional().is_base(BaseType::Device))
    {
        let n = format_ident!("{}", arg_ident(&d.name));
        if d.ty.is_nullable() {
            quote!(::opforge::dispatch::typed::device_keys(#n))
        } else {
            quote!(::opforge::dispatch::typed::device_keys(Some(#n)))
        }
    } else {
        quote!(::opforge::dispatch::typed::device_keys(None))
    };
    let ret = toks(&result_type(&f.returns, Spelling::Qualified).unwrap_or_default());
    let doc = format!(" `{f}`");
    quote! {
        #[doc = #doc]
        #[inline]
        pub fn #ident(#(#params),*) -> #ret {
            ::opforge::__private::typed_call!(::opforge::OpId::#ident, sig::#ident, #keys, (#(#args),*))
        }
    }
}

/// The convenience form: trailing defaulted arguments dropped and filled in.
fn convenience(op: &PlannedOp, short: &str, method: bool) -> TokenStream {
    let f = op.schema();
    let all = &f.arguments.all;
    // Trailing arguments whose default can be written in Rust are filled in.
    let mut keep = all.len();
    while keep > 0 && default_expr(&all[keep - 1]).is_some() {
        keep -= 1;
    }
    let self_index = f.arguments.self_index();
    let mut params = Vec::new();
    let mut call = Vec::new();
    for (i, a) in all.iter().enumerate() {
        let n = format_ident!("{}", arg_ident(&a.name));
        if method && Some(i) == self_index {
            call.push(quote!(self));
        } else if i < keep {
            let t = toks(&param_type(a, Spelling::Qualified).unwrap_or_default());
            params.push(quote!(#n: #t));
            call.push(quote!(#n));
        } else {
            call.push(default_expr(a).unwrap_or_default());
        }
    }
    let name = format_ident!("{}", short);
    let ident = format_ident!("{}", op.ident);
    let ret = toks(&result_type(&f.returns, Spelling::Qualified).unwrap_or_default());
    let doc = format!(
        " `{}` with defaults for trailing arguments; see [`crate::ops::{}`].",
        op.entry.name(),
        op.ident
    );
    // The Python-API callable this is: `torch.add` / `Tensor.add` (or the operator
    // handle if the runtime has no such binding).
    let base = f.name.name.to_string();
    let api = if method {
        format!("Tensor.{base}")
    } else {
        match op.entry.python_module.as_deref() {
            Some(m) => format!(
                "torch.{}.{base}",
                if m == "nn" { "nn.functional" } else { m }
            ),
            None => format!("torch.{base}"),
        }
    };
    let func = quote!(::opforge::overrides::Func::api_or_op(#api, ::opforge::OpId::#ident));
    let kept: Vec<(usize, &Argument)> = all
        .iter()
        .enumerate()
        .filter(|(i, _)| *i < keep || (method && Some(*i) == self_index))
        .collect();
    let unchecked = quote!(crate::at::#ident(#(#call),*));
    let guard_args: Vec<GuardArg> = kept
        .iter()
        .map(|(i, a)| GuardArg {
            ident: if method && Some(*i) == self_index {
                format_ident!("self")
            } else {
                format_ident!("{}", arg_ident(&a.name))
            },
            arg: a,
            kwarg_only: f.arguments.kwarg_only_start.is_some_and(|k| *i >= k),
        })
        .collect();
    if method {
        let receiver = match self_index.map(|i| all[i].is_write()) {
            Some(true) => quote!(&mut self),
            _ => quote!(&self),
        };
        let redo_args = guard_args.iter().map(|g| &g.ident);
        let redo = quote!(Self::#name(#(#redo_args),*));
        let body = guarded(&func, &guard_args, &unchecked, &redo);
        quote! {
            #[doc = #doc]
            pub fn #name(#receiver, #(#params),*) -> #ret {
                #body
            }
        }
    } else {
        let redo_args = guard_args.iter().map(|g| &g.ident);
        let redo = quote!(#name(#(#redo_args),*));
        let body = guarded(&func, &guard_args, &unchecked, &redo);
        quote! {
            #[doc = #doc]
            pub fn #name(#(#params),*) -> #ret {
                #body
            }
        }
    }
}

/// One argument of a guarded function.
struct GuardArg<'a> {
    ident: proc_macro2::Ident,
    arg: &'a Argument,
    kwarg_only: bool,
}

impl GuardArg<'_> {
    fn is_mut_tensor(&self) -> bool {
        self.arg.is_write() && matches!(self.arg.ty, Type::Base(BaseType::Tensor))
    }
}

/// The function-level protocol around `unchecked`: a plain call tests each tensor
/// argument and the mode count, then runs `unchecked`; otherwise the slow path
/// (`opforge::overrides::typed`) gets the arguments boxed (lazily), `unchecked`
/// and `redo` (the same function again, for handlers that call it).
fn guarded(
    func: &TokenStream,
    args: &[GuardArg<'_>],
    unchecked: &TokenStream,
    redo: &TokenStream,
) -> TokenStream {
    let tensors: Vec<&GuardArg> = args.iter().filter(|g| g.arg.ty.is_tensor_like()).collect();
    let tests = tensors.iter().map(|g| {
        let n = &g.ident;
        quote!(::opforge::overrides::Relevant::overloaded(&#n) |)
    });
    let relevant = tensors.iter().map(|g| {
        let n = &g.ident;
        quote!(&#n as &dyn ::opforge::overrides::Relevant)
    });
    let shadow = args.iter().filter(|g| g.is_mut_tensor()).map(|g| {
        let n = &g.ident;
        if n == "self" {
            quote!()
        } else {
            quote!(let #n: &::opforge::Tensor = &*#n;)
        }
    });
    let positional = args.iter().filter(|g| !g.kwarg_only).map(|g| {
        let n = &g.ident;
        quote!(::opforge::value::ToValue::to_value(&#n))
    });
    let keywords = args.iter().filter(|g| g.kwarg_only).map(|g| {
        let n = &g.ident;
        let name = &g.arg.name;
        quote!((#name.to_string(), ::opforge::value::ToValue::to_value(&#n)))
    });
    // `&mut` tensors: the slow path works on shared reborrows (`this` for a
    // `&mut self` receiver) and passes fresh handles of the same tensors on.
    let mut_self = args.iter().any(|g| g.ident == "self" && g.is_mut_tensor());
    let self_shadow = if mut_self {
        quote!(let this: &::opforge::Tensor = &*self;)
    } else {
        quote!()
    };
    let muts: Vec<String> = args
        .iter()
        .filter(|g| g.is_mut_tensor())
        .map(|g| g.ident.to_string())
        .collect();
    let slow = |ts: TokenStream| slowify(ts, &muts);
    let unchecked_slow = slow(unchecked.clone());
    let redo_slow = slow(redo.clone());
    let rename = |ts: TokenStream| if mut_self { rename_self(ts) } else { ts };
    let relevant: Vec<TokenStream> = relevant.map(rename).collect();
    let positional: Vec<TokenStream> = positional.map(rename).collect();
    quote! {
        if #(#tests)* ::opforge::overrides::function_modes_active() {
            #self_shadow
            #(#shadow)*
            return ::opforge::overrides::typed(
                &|| #func,
                &[#(#relevant),*],
                &|| (vec![#(#positional),*], vec![#(#keywords),*]),
                &|| #unchecked_slow,
                &|| #redo_slow,
            );
        }
        #unchecked
    }
}

/// Rewrites a call for the slow path: each `&mut Tensor` parameter `x` (shadowed
/// there by `&Tensor`) becomes `(&mut x.clone())`, a `&mut self` receiver
/// `(&mut this.clone())` (a new handle to the same tensor).
fn slowify(ts: TokenStream, muts: &[String]) -> TokenStream {
    use proc_macro2::TokenTree;
    ts.into_iter()
        .flat_map(|t| -> Vec<TokenTree> {
            match t {
                TokenTree::Ident(i) if muts.iter().any(|m| i == m) => {
                    let name = if i == "self" {
                        format_ident!("this")
                    } else {
                        i.clone()
                    };
                    quote!(&mut #name.clone()).into_iter().collect()
                }
                TokenTree::Group(g) => {
                    let mut ng = proc_macro2::Group::new(g.delimiter(), slowify(g.stream(), muts));
                    ng.set_span(g.span());
                    vec![TokenTree::Group(ng)]
                }
                other => vec![other],
            }
        })
        .collect()
}

/// Replaces the `self` receiver by `this` (the slow path's shared reborrow).
fn rename_self(ts: TokenStream) -> TokenStream {
    use proc_macro2::TokenTree;
    ts.into_iter()
        .map(|t| match t {
            TokenTree::Ident(i) if i == "self" => TokenTree::Ident(format_ident!("this")),
            TokenTree::Group(g) => {
                let mut ng = proc_macro2::Group::new(g.delimiter(), rename_self(g.stream()));
                ng.set_span(g.span());
                TokenTree::Group(ng)
            }
            other => other,
        })
        .collect()
}

/// `ops::<ident>`: the operator handle's call, through the function-level protocol.
fn op_handle_fn(op: &PlannedOp, ident: &proc_macro2::Ident) -> TokenStream {
    let f = op.schema();
    let params = all_params(f);
    let guard_args: Vec<GuardArg> = f
        .arguments
        .all
        .iter()
        .enumerate()
        .map(|(i, a)| GuardArg {
            ident: format_ident!("{}", arg_ident(&a.name)),
            arg: a,
            kwarg_only: f.arguments.kwarg_only_start.is_some_and(|k| i >= k),
        })
        .collect();
    let call = guard_args.iter().map(|g| &g.ident);
    let unchecked = quote!(crate::at::#ident(#(#call),*));
    let redo_args = guard_args.iter().map(|g| &g.ident);
    let redo = quote!(#ident(#(#redo_args),*));
    let func = quote!(::opforge::overrides::Func::Op(
        ::opforge::overrides::OpOverload::builtin(::opforge::OpId::#ident)
    ));
    let body = guarded(&func, &guard_args, &unchecked, &redo);
    let ret = toks(&result_type(&f.returns, Spelling::Qualified).unwrap_or_default());
    let doc = format!(" `{f}`");
    quote! {
        #[doc = #doc]
        #[inline]
        pub fn #ident(#(#params),*) -> #ret {
            #body
        }
    }
}

/// `__coverage`: one entry per guarded function emitted above (every `ops::`
/// function, every `torch::` function, every `Tensor` method), with the name of the
/// `func` its guard hands to handlers (`aten.add.Tensor`, `torch.add`,
/// `torch.Tensor.add`, as [`crate::emit_api`]'s guards build it) and a call that
/// puts one given tensor in every tensor slot and plain values elsewhere. The
/// override-coverage test walks it; it is not an API.
fn coverage(plan: &Plan, names: &HashMap<String, String>) -> TokenStream {
    let bindings: HashSet<&str> = plan.bindings.iter().map(|b| b.name.as_str()).collect();
    let mut entries = Vec::new();
    for op in &plan.ops {
        let f = op.schema();
        if unsupported(f).is_some() {
            continue;
        }
        let all = &f.arguments.all;
        let handle = op_handle_name(op);
        // `ops::<ident>`: every argument, `Func::Op`.
        let ident = format_ident!("{}", op.ident);
        let vals = all.iter().map(coverage_value);
        let path = format!("ops::{}", op.ident);
        entries.push(coverage_entry(
            &path,
            &handle,
            all.iter().filter(|a| a.ty.is_tensor_like()).count(),
            quote!(::opforge::ops::#ident(#(#vals),*)),
        ));
        let Some(short) = names.get(&op.ident) else {
            continue;
        };
        let name = format_ident!("{}", short);
        // As in `convenience`: trailing arguments with a writable default are dropped.
        let mut keep = all.len();
        while keep > 0 && default_expr(&all[keep - 1]).is_some() {
            keep -= 1;
        }
        let self_index = f.arguments.self_index();
        let base = f.name.name.to_string();
        // The func `Func::api_or_op(api, id)` resolves to: the binding if the
        // runtime has it (named as `resolve_name` prints it), else the handle.
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
            let kept: Vec<&Argument> = all[..keep].iter().collect();
            let vals = kept.iter().map(|a| coverage_value(a));
            let api = match op.entry.python_module.as_deref() {
                Some(m) => format!(
                    "torch.{}.{base}",
                    if m == "nn" { "nn.functional" } else { m }
                ),
                None => format!("torch.{base}"),
            };
            entries.push(coverage_entry(
                &format!("torch::{short}"),
                &expected(&api),
                kept.iter().filter(|a| a.ty.is_tensor_like()).count(),
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
                let kept: Vec<&Argument> = all
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| *i < keep && *i != si)
                    .map(|(_, a)| a)
                    .collect();
                let vals = kept.iter().map(|a| coverage_value(a));
                entries.push(coverage_entry(
                    &format!("Tensor::{short}"),
                    &expected(&format!("Tensor.{base}")),
                    1 + kept.iter().filter(|a| a.ty.is_tensor_like()).count(),
                    quote!(::opforge::Tensor::#name(#receiver, #(#vals),*)),
                ));
            }
        }
    }
    let n = entries.len();
    quote! {
        /// Every guarded function of the typed API, for the override-coverage test
        /// (`tests/tests/override_coverage.rs`). Not an API.
        #[doc(hidden)]
        #[allow(non_snake_case, unused_variables, clippy::all)]
        pub mod __coverage {
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
            pub static ENTRIES: [Entry; #n] = [#(#entries),*];
        }
    }
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
            Type::Base(BaseType::Bool) => quote!(false),
            Type::Base(BaseType::Str) => match default {
                Some(DefaultValue::Str(s)) => quote!(#s),
                _ => quote!("mean"),
            },
            Type::Base(BaseType::Scalar) => quote!(::opforge::Scalar::Int(1)),
            Type::Base(BaseType::ScalarType) => quote!(::opforge::DType::Float32),
            Type::Base(BaseType::Layout) => quote!(::opforge::Layout::Strided),
            Type::Base(BaseType::Device) => quote!(::opforge::Device::Cpu),
            Type::Base(BaseType::MemoryFormat) => quote!(::opforge::MemoryFormat::Contiguous),
            // No Rust type (such operators have no typed API): a compile error
            // here would mean the two lists disagree.
            _ => quote!(compile_error!(
                "override coverage: argument type without a value"
            )),
        }
    }
    let default = a.default.as_ref().and_then(|d| d.value.as_ref());
    value(&a.ty, a.is_write(), default)
}

/// A Rust expression for an argument's default, if it has one that can be written.
fn default_expr(a: &Argument) -> Option<TokenStream> {
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
            let i: i64 = match e.as_str() {
                "Mean" => 1,
                "Sum" => 2,
                _ => return None,
            };
            wrap(quote!(#i))
        }
        (Type::Base(BaseType::Float), DefaultValue::Int(i)) => {
            let x = *i as f64;
            wrap(quote!(#x))
        }
        (Type::Base(BaseType::Float), DefaultValue::Float(x)) => wrap(quote!(#x)),
        (Type::Base(BaseType::Scalar), DefaultValue::Int(i)) => {
            wrap(quote!(::opforge::Scalar::Int(#i)))
        }
        (Type::Base(BaseType::Scalar), DefaultValue::Float(x)) => {
            wrap(quote!(::opforge::Scalar::Float(#x)))
        }
        (Type::Base(BaseType::Str), DefaultValue::Str(s)) => wrap(quote!(#s)),
        (Type::Base(BaseType::MemoryFormat), DefaultValue::Enum(e)) => {
            let v = match e.as_str() {
                "contiguous_format" => quote!(Contiguous),
                "preserve_format" => quote!(Preserve),
                "channels_last" => quote!(ChannelsLast),
                "channels_last_3d" => quote!(ChannelsLast3d),
                _ => return None,
            };
            wrap(quote!(::opforge::MemoryFormat::#v))
        }
        (Type::Base(BaseType::ScalarType), DefaultValue::Enum(e)) => {
            let t = ScalarType::from_name_or_alias(e)?;
            let v = format_ident!("{}", dtype_variant(t)?);
            wrap(quote!(::opforge::DType::#v))
        }
        (Type::List { elem, size }, DefaultValue::List(xs)) => {
            let items: Option<Vec<TokenStream>> = xs
                .iter()
                .map(|x| match (elem.as_ref(), x) {
                    (Type::Base(BaseType::Int | BaseType::SymInt), DefaultValue::Int(i)) => {
                        Some(quote!(#i))
                    }
                    (Type::Base(BaseType::Float), DefaultValue::Float(f)) => Some(quote!(#f)),
                    (Type::Base(BaseType::Bool), DefaultValue::Bool(b)) => Some(quote!(#b)),
                    _ => None,
                })
                .collect();
            let items = items?;
            // `int[2] stride=[]` means "not given": keep the empty list.
            let _ = size;
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

/// The built-in kernel registrations: one `register_kernels!` row per `dispatch:`
/// entry on a runtime key, paths relative to `crate::kernels`. An entry without
/// `dispatch:` is CompositeImplicitAutograd with kernel `composite::<ident>` (this
/// project's convention). Rows for keys the runtime has no slot for are skipped.
pub fn registrations(plan: &Plan) -> (String, Vec<Skip>) {
    let mut rows = Vec::new();
    let mut skips = Vec::new();
    for op in &plan.ops {
        let name = if op.entry.func.name.namespace() == "aten" {
            op.entry.name()
        } else {
            format!("{}::{}", op.entry.func.name.namespace(), op.entry.name())
        };
        if let Some(why) = unsupported(op.schema()) {
            skips.push(Skip {
                op: name,
                reason: format!("no kernel registration: {why}"),
            });
            continue;
        }
        let mut kernels: Vec<(String, String)> = op
            .entry
            .dispatch
            .iter()
            .flat_map(|row| row.keys.iter().map(|k| (k.clone(), row.kernel.clone())))
            .collect();
        if kernels.is_empty() && op.entry.is_composite_implicit() {
            kernels.push((
                "CompositeImplicitAutograd".into(),
                format!("composite::{}", op.ident),
            ));
        }
        for (key, kernel) in kernels {
            if !opforge_schema::model::RUNTIME_DISPATCH_KEYS.contains(&key.as_str()) {
                skips.push(Skip {
                    op: name.clone(),
                    reason: format!("no runtime slot for dispatch key {key}"),
                });
                continue;
            }
            let path: Vec<String> = kernel
                .split("::")
                .map(|seg| {
                    if crate::lower::RUST_KEYWORDS.contains(&seg) {
                        format!("r#{seg}")
                    } else {
                        seg.to_string()
                    }
                })
                .collect();
            rows.push(format!(
                "    {key}, {name:?}, crate::kernels::{};",
                path.join("::")
            ));
        }
    }
    let text = format!(
        "// @generated by opforge-codegen from {} — do not edit.\n// One row per `dispatch:` entry: every kernel the YAML names must exist with its schema's signature.\n\n::opforge_macros::register_kernels! {{\n{}\n}}\n",
        std::path::Path::new(plan.file)
            .file_name()
            .map_or(plan.file.into(), |f| f.to_string_lossy()),
        rows.join("\n")
    );
    (text, skips)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coverage_lists_every_guarded_function() {
        let src = include_str!("../tests/fixtures/mini.yaml");
        let file =
            opforge_schema::load::load_str("mini.yaml", src).unwrap_or_else(|d| panic!("{d}"));
        let plan = crate::lower::lower(&file, &[]).unwrap();
        let text = api_tokens(&plan).0.to_string();
        let (api, table) = text.split_once("pub mod __coverage").unwrap();
        // One entry per guard (`ops::`, `torch::`, `Tensor` methods).
        let guards = api.matches(":: opforge :: overrides :: typed (").count();
        let entries = table.matches("Entry { path :").count();
        assert!(guards > 0);
        assert_eq!(entries, guards);
        // The names the guards use: the handle, the binding, `torch.nn.functional`.
        for want in [
            r#"path : "ops::gelu" , func : "aten.gelu.default""#,
            r#"path : "torch::gelu" , func : "torch.nn.functional.gelu""#,
            r#"func : "aten.add.Tensor""#,
        ] {
            assert!(table.contains(want), "{want} not in {table}");
        }
        // Every tensor slot gets the tensor, other slots plain values (a string's
        // default if it has one).
        assert!(
            table.contains(r#":: opforge :: ops :: gelu (t , "none")"#),
            "{table}"
        );
        assert!(!table.contains("compile_error"));
    }
}
