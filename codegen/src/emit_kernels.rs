//! Emit: `kernels.rs`, the kernels the generator writes for the runtime
//! ([`Generated`]), in torchgen's shapes (`gen_composite_functional_kernel`,
//! `gen_composite_out_kernel`, `gen_composite_view_copy_kernel`):
//!
//! - a functional variant `autogen:` adds (`zero`): each argument the in-place
//!   or mutable variant writes is cloned (`clone_arg`), the variant is called
//!   on the clones, and its results that alias no argument, then the clones,
//!   are returned;
//! - an out= variant `autogen:` adds (`clone.out`): the functional variant is
//!   called, each `out` resized to its result (`resize_out_helper`) and the
//!   result copied in (`copy_arg`), and the `out`s returned;
//! - a `view_copy` operator (`transpose_copy.int`): its view operator is
//!   called and a contiguous clone of the result returned.
//!
//! Each kernel is a `pub fn` named by the last segment of its `dispatch:`
//! row (`composite::zero` → `zero`), with the marker constant `#[kernel]`
//! leaves (so `kernel_checks.rs` finds it as it finds a written one) and its
//! registration from [`crate::kernel::generated_registration`]. The runtime
//! includes the file in `kernels::composite`. An operator the generator cannot
//! write a kernel for is a diagnostic at its line.

use crate::emit_lookup::kernel_marker;
use crate::lower::{Generated, Plan, PlannedOp};
use crate::rust_types::{param_type, result_type, show};
use opforge_schema::diag::Diagnostics;
use opforge_schema::model::{Argument, BaseType, FunctionSchema, Type};
use opforge_schema::names::arg_ident;
use proc_macro2::TokenStream;
use quote::{format_ident, quote};

/// The number of kernels [`kernels`] writes for `plan`.
pub fn count(plan: &Plan) -> usize {
    plan.ops.iter().filter(|o| o.generated.is_some()).count()
}

/// The `kernels.rs` file, formatted, or a diagnostic per operator the
/// generator cannot write a kernel for.
pub fn kernels(plan: &Plan) -> Result<String, Diagnostics> {
    kernels_tokens(plan).map(|t| crate::emit::format(plan, t))
}

/// The tokens of [`kernels`].
pub fn kernels_tokens(plan: &Plan) -> Result<TokenStream, Diagnostics> {
    let mut items = Vec::new();
    let mut diags = Vec::new();
    for (i, op) in plan.ops.iter().enumerate() {
        let Some(g) = &op.generated else { continue };
        match kernel(plan, op, g) {
            Ok(t) => items.push(t),
            Err(m) => diags.push(plan.diagnostic(i, m)),
        }
    }
    if !diags.is_empty() {
        return Err(Diagnostics(diags));
    }
    Ok(quote!(#(#items)*))
}

/// One argument of a kernel: its Rust name and type.
struct Param {
    ident: syn::Ident,
    ty: syn::Type,
}

fn params(schema: &FunctionSchema) -> Result<Vec<Param>, String> {
    schema
        .arguments
        .all
        .iter()
        .map(|a| {
            Ok(Param {
                ident: format_ident!("{}", arg_ident(&a.name)),
                ty: param_type(a).map_err(|e| e.to_string())?,
            })
        })
        .collect()
}

fn is_written(a: &Argument) -> bool {
    a.annotation.as_ref().is_some_and(|an| an.is_write)
}

/// The kernel of one operator: the function, its marker and registration.
fn kernel(plan: &Plan, op: &PlannedOp, g: &Generated) -> Result<TokenStream, String> {
    let schema = op.schema();
    let (key, path) = op
        .kernels
        .iter()
        .find(|(k, _)| k.starts_with("CompositeExplicitAutograd"))
        .ok_or_else(|| {
            format!(
                "`{}` gets a generated kernel, but has no CompositeExplicitAutograd(NonFunctional) `dispatch:` row to register it under",
                op.entry.name()
            )
        })?;
    let name = path.rsplit("::").next().unwrap_or(path);
    let fn_ident = format_ident!("{}", name);
    let ps = params(schema)?;
    let ret = result_type(&schema.returns).map_err(|e| e.to_string())?;
    let body = match g {
        Generated::Functional { target } => functional(op, &plan.ops[*target], &ps)?,
        Generated::Out { functional } => out(op, &plan.ops[*functional], &ps)?,
        Generated::ViewCopy { view } => view_copy(op, &plan.ops[*view], &ps)?,
        Generated::Unsupported(why) => return Err(why.clone()),
    };
    let decls = ps.iter().map(|p| {
        let (i, t) = (&p.ident, &p.ty);
        quote!(#i: #t)
    });
    let doc = match g {
        Generated::Functional { target } => format!(
            " `{}`, generated (`autogen:`): `{}` on clones of the arguments it writes.",
            op.entry.name(),
            plan.ops[*target].entry.name()
        ),
        Generated::Out { functional } => format!(
            " `{}`, generated (`autogen:`): `{}`, then each result resized into and copied to its `out`.",
            op.entry.name(),
            plan.ops[*functional].entry.name()
        ),
        Generated::ViewCopy { view } => format!(
            " `{}`, generated (`view_copy`): a contiguous clone of `{}`'s result.",
            op.entry.name(),
            plan.ops[*view].entry.name()
        ),
        Generated::Unsupported(_) => String::new(),
    };
    let func: syn::ItemFn = syn::parse2(quote! {
        #[doc = #doc]
        #[allow(clippy::too_many_arguments)]
        pub fn #fn_ident(#(#decls),*) -> #ret {
            #body
        }
    })
    .map_err(|e| format!("the generated kernel does not parse: {e}"))?;
    let pairs: Vec<(&syn::Ident, &syn::Type)> = ps.iter().map(|p| (&p.ident, &p.ty)).collect();
    let id = format_ident!("{}", op.ident);
    let sig = (
        quote!(::opforge::at::sig::#id),
        quote!(::opforge::at::sig::spec::#id),
    );
    let registration = crate::kernel::generated_registration(
        key,
        &op.entry.name(),
        schema,
        &func,
        &pairs,
        ret.clone(),
        Some(sig),
    );
    let marker = format_ident!("{}", kernel_marker(key, &op.ident));
    Ok(quote! {
        #func
        #[doc(hidden)]
        #[allow(non_upper_case_globals, dead_code)]
        pub const #marker: () = ();
        #registration
    })
}

/// `::opforge::at::<ident>`.
fn at(op: &PlannedOp) -> TokenStream {
    let f = format_ident!("{}", op.ident);
    quote!(::opforge::at::#f)
}

/// The arguments of `callee` taken by name from the caller's parameters
/// (`replace` substitutes some).
fn call_args(
    caller: &FunctionSchema,
    callee: &FunctionSchema,
    ps: &[Param],
    replace: &dyn Fn(&Argument) -> Option<TokenStream>,
) -> Result<Vec<TokenStream>, String> {
    callee
        .arguments
        .all
        .iter()
        .map(|a| {
            if let Some(t) = replace(a) {
                return Ok(t);
            }
            let k = caller
                .arguments
                .all
                .iter()
                .position(|c| c.name == a.name)
                .ok_or_else(|| {
                    format!(
                        "`{}` has no argument `{}` to pass to `{}`",
                        caller.name, a.name, callee.name
                    )
                })?;
            let p = &ps[k].ident;
            Ok(if show(&ps[k].ty) == "&mut Tensor" {
                quote!(&*#p)
            } else {
                quote!(#p)
            })
        })
        .collect()
}

/// The `i`-th of `n` results held in `v`.
fn nth(v: &TokenStream, i: usize, n: usize) -> TokenStream {
    if n == 1 {
        v.clone()
    } else {
        let i = syn::Index::from(i);
        quote!(#v.#i)
    }
}

/// `Ok(x)` or `Ok((x, y))`.
fn ok(values: Vec<TokenStream>) -> TokenStream {
    match values.as_slice() {
        [one] => quote!(Ok(#one)),
        _ => quote!(Ok((#(#values),*))),
    }
}

fn functional(op: &PlannedOp, target: &PlannedOp, ps: &[Param]) -> Result<TokenStream, String> {
    let (f, t) = (op.schema(), target.schema());
    let mut clones = Vec::new();
    let mut cloned = Vec::new();
    for a in t.arguments.all.iter().filter(|a| is_written(a)) {
        if a.ty != Type::Base(BaseType::Tensor) {
            return Err(format!(
                "`{}` writes `{}` of type `{}`: the generator clones only written `Tensor` arguments",
                target.entry.name(),
                a.name,
                a.ty
            ));
        }
        let p = format_ident!("{}", arg_ident(&a.name));
        let c = format_ident!("{}_clone", a.name);
        clones.push(quote!(let mut #c = ::opforge::at::clone(#p, ::core::option::Option::None)?;));
        cloned.push((a.name.clone(), c));
    }
    let args = call_args(f, t, ps, &|a| {
        cloned
            .iter()
            .find(|(n, _)| *n == a.name)
            .map(|(_, c)| quote!(&mut #c))
    })?;
    let callee = at(target);
    let output = quote!(__output);
    let n = t.returns.len();
    let mut values: Vec<TokenStream> = t
        .returns
        .iter()
        .enumerate()
        .filter(|(_, r)| r.annotation.is_none())
        .map(|(i, _)| nth(&output, i, n))
        .collect();
    values.extend(cloned.iter().map(|(_, c)| quote!(#c)));
    if values.len() != op.schema().returns.len() {
        return Err(format!(
            "`{}` returns {} values, but `{}` gives {} results that alias no argument and {} written arguments",
            op.entry.name(),
            op.schema().returns.len(),
            target.entry.name(),
            values.len() - cloned.len(),
            cloned.len()
        ));
    }
    let ret = ok(values);
    Ok(quote! {
        #(#clones)*
        #[allow(unused_variables)]
        let #output = #callee(#(#args),*)?;
        #ret
    })
}

fn out(op: &PlannedOp, functional: &PlannedOp, ps: &[Param]) -> Result<TokenStream, String> {
    let (o, f) = (op.schema(), functional.schema());
    let outs: &[Argument] = o.arguments.out();
    if outs.len() != f.returns.len()
        || o.returns.len() != outs.len()
        || !f
            .returns
            .iter()
            .all(|r| r.ty == Type::Base(BaseType::Tensor))
    {
        return Err(format!(
            "`{}`: the generator writes out= kernels for functional operators returning only `Tensor`s, one `out` each (`{}` returns `{}`)",
            op.entry.name(),
            functional.entry.name(),
            f.returns
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    // The functional variant's tensor options, which the out= schema drops,
    // are the (first) `out`'s, as torchgen's `translate` takes them from
    // `out.options()`.
    let first = format_ident!("{}", arg_ident(&outs[0].name));
    let args = call_args(o, f, ps, &|a| {
        if o.arguments.all.iter().any(|x| x.name == a.name) {
            return None;
        }
        let some = |v: TokenStream| quote!(::core::option::Option::Some(#v));
        match (a.name.as_str(), &a.ty) {
            ("dtype", Type::Optional(t)) if t.is_base(BaseType::ScalarType) => {
                Some(some(quote!(#first.dtype())))
            }
            ("layout", Type::Optional(t)) if t.is_base(BaseType::Layout) => {
                Some(some(quote!(::opforge::Layout::Strided)))
            }
            ("device", Type::Optional(t)) if t.is_base(BaseType::Device) => {
                Some(some(quote!(#first.device())))
            }
            ("pin_memory", Type::Optional(t)) if t.is_base(BaseType::Bool) => {
                Some(some(quote!(false)))
            }
            _ => None,
        }
    })?;
    let callee = at(functional);
    let tmp = quote!(__tmp);
    let n = outs.len();
    let mut copies = Vec::new();
    let mut values = Vec::new();
    for (i, a) in outs.iter().enumerate() {
        let p = format_ident!("{}", arg_ident(&a.name));
        let v = nth(&tmp, i, n);
        copies.push(quote! {
            crate::kernels::resize_out_helper(#p, &#v)?;
            crate::kernels::copy_arg(#p, &#v)?;
        });
        values.push(quote!(#p.clone()));
    }
    let ret = ok(values);
    Ok(quote! {
        let #tmp = #callee(#(#args),*)?;
        #(#copies)*
        #ret
    })
}

fn view_copy(op: &PlannedOp, view: &PlannedOp, ps: &[Param]) -> Result<TokenStream, String> {
    let (c, v) = (op.schema(), view.schema());
    let args = call_args(c, v, ps, &|_| None)?;
    let callee = at(view);
    let contiguous = quote!(::core::option::Option::Some(
        ::opforge::MemoryFormat::Contiguous
    ));
    match v.returns.as_slice() {
        [r] if r.ty == Type::Base(BaseType::Tensor) => Ok(quote! {
            let __output = #callee(#(#args),*)?;
            ::opforge::at::clone(&__output, #contiguous)
        }),
        [r] if matches!(&r.ty, Type::List { elem, .. } if elem.is_base(BaseType::Tensor)) => {
            Ok(quote! {
                let __output = #callee(#(#args),*)?;
                __output.iter().map(|t| ::opforge::at::clone(t, #contiguous)).collect()
            })
        }
        _ => Err(format!(
            "`{}`'s view `{}` returns `{}`: the generator copies one `Tensor` or a `Tensor[]`",
            op.entry.name(),
            view.entry.name(),
            v.returns
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const YAML: &str = "
- func: transpose.int(Tensor(a) self, int dim0, int dim1) -> Tensor(a)
  dispatch:
    CompositeExplicitAutograd: composite::transpose_int
- func: zero_(Tensor(a!) self) -> Tensor(a!)
  dispatch:
    CPU: cpu::zero_
  autogen: zero, zero.out
- func: transpose_copy.int(Tensor self, int dim0, int dim1) -> Tensor
  dispatch:
    CompositeExplicitAutogradNonFunctional: composite::transpose_copy_int
  tags: view_copy
  autogen: transpose_copy.int_out
";

    fn emitted(yaml: &str) -> Result<String, Diagnostics> {
        let file = opforge_schema::load::load_str("f.yaml", yaml).unwrap();
        let plan = crate::lower::lower(&file, &[]).unwrap();
        kernels(&plan)
    }

    #[test]
    fn autogen_and_view_copy_kernels_are_written() {
        let text = emitted(YAML).unwrap();
        let flat: String = text.split_whitespace().collect();
        for part in [
            // zero: zero_ on a clone of self.
            "pubfnzero(self_:&::opforge::Tensor)",
            "letmutself_clone=::opforge::at::clone(self_,::core::option::Option::None)?;",
            "::opforge::at::zero_(&mutself_clone)?;Ok(self_clone)",
            // zero.out: zero, then resize and copy into out.
            "let__tmp=::opforge::at::zero(self_)?;crate::kernels::resize_out_helper(out,&__tmp)?;crate::kernels::copy_arg(out,&__tmp)?;Ok(out.clone())",
            // transpose_copy.int: the view, then a contiguous clone.
            "let__output=::opforge::at::transpose_int(self_,dim0,dim1)?;::opforge::at::clone(&__output,",
            "::core::option::Option::Some(::opforge::MemoryFormat::Contiguous)",
            "pubconst__opforge_CompositeExplicitAutogradNonFunctional_kernel_of_transpose_copy_int:()=();",
            "\"transpose_copy.int_out\",\"CompositeExplicitAutograd\",",
        ] {
            assert!(flat.contains(part), "{part} not in\n{text}");
        }
    }

    #[test]
    fn a_view_copy_without_its_view_is_an_error_at_its_line() {
        let yaml = YAML.replacen(
            "transpose.int(Tensor(a) self",
            "transposed.int(Tensor(a) self",
            1,
        );
        let e = emitted(&yaml).unwrap_err().to_string();
        assert!(
            e.contains("f.yaml:9:")
                && e.contains("`transpose_copy.int` is tagged `view_copy`, but there is no view operator `aten::transpose.int` to call"),
            "{e}"
        );
    }
}
