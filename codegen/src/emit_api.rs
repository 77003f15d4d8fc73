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
use crate::model::{Argument, BaseType, DefaultValue, Type};
use crate::rust_types::{fn_pointer_type, param_type, result_type, unsupported, Spelling};
use heck::ToSnakeCase;
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
    let mut funcs = Vec::new();
    let mut methods = Vec::new();
    let names = convenience_names(plan);
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
        ops.push(exact_fn(op, &ident));
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

        /// Every operator overload, with every argument, dispatched.
        #[allow(non_snake_case, clippy::too_many_arguments)]
        pub mod ops {
            use super::*;
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

fn exact_fn(op: &PlannedOp, ident: &proc_macro2::Ident) -> TokenStream {
    let f = op.schema();
    let params: Vec<TokenStream> = f
        .arguments
        .all
        .iter()
        .map(|a| {
            let n = format_ident!("{}", arg_ident(&a.name));
            let t = toks(&param_type(a, Spelling::Qualified).unwrap_or_default());
            quote!(#n: #t)
        })
        .collect();
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
            ::opforge::typed_call!(::opforge::OpId::#ident, sig::#ident, #keys, (#(#args),*))
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
    if method {
        let receiver = match self_index.map(|i| all[i].is_write()) {
            Some(true) => quote!(&mut self),
            _ => quote!(&self),
        };
        quote! {
            #[doc = #doc]
            pub fn #name(#receiver, #(#params),*) -> #ret {
                crate::ops::#ident(#(#call),*)
            }
        }
    } else {
        quote! {
            #[doc = #doc]
            pub fn #name(#(#params),*) -> #ret {
                crate::ops::#ident(#(#call),*)
            }
        }
    }
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
            let v = match e.as_str() {
                "long" | "int64" => quote!(Int64),
                "int" | "int32" => quote!(Int32),
                "float" | "float32" => quote!(Float32),
                "double" | "float64" => quote!(Float64),
                "bool" => quote!(Bool),
                _ => return None,
            };
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
            if !crate::model::RUNTIME_DISPATCH_KEYS.contains(&key.as_str()) {
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
