//! Emit: the override-coverage table the tests crate generates for itself
//! ([`coverage`]): every guarded function of the typed API with the `func`
//! its guard hands to handlers and a call of it.

use crate::emit_api::{api_name, kept, signature};
use crate::lower::{Plan, PlannedOp};
use opforge_schema::diag::Diagnostics;
use opforge_schema::model::{Argument, BaseType, DefaultValue, Type};
use proc_macro2::{Ident, TokenStream};
use quote::{format_ident, quote};

/// A Rust identifier (the names are escaped by `opforge_schema::names`).
fn ident(s: &str) -> Ident {
    format_ident!("{}", s)
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
        if op.is_boxed() {
            // No typed API: nothing guarded to cover.
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
