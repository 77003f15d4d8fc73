//! The Autograd layer's generated file (`autograd.rs`) on a tiny fixture:
//! snapshotted (re-bless with `OPFORGE_BLESS=1 cargo test -p opforge-codegen
//! --test emit_autograd` and read the diff), node names by torchgen's rule,
//! the three kernel shapes (functional, in-place, out=), and what the
//! generator does not support yet as file:line diagnostics.

use opforge_codegen::emit_api::Options;
use opforge_codegen::{derivatives, emit_autograd, lower};
use opforge_schema::derivatives::load_str;
use opforge_schema::load;
use std::path::PathBuf;

const OPS: &str = "\
- func: mul.Tensor(Tensor self, Tensor other) -> Tensor
- func: mul_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)
- func: mul.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)
- func: sum(Tensor self, *, ScalarType? dtype=None) -> Tensor
- func: sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor
- func: exp(Tensor self) -> Tensor
- func: _to_copy(Tensor self, *, ScalarType? dtype=None) -> Tensor
- func: cat(Tensor[] tensors, int dim=0) -> Tensor
- func: maximum(Tensor self, Tensor other) -> Tensor
";

const DERIVATIVES: &str = "\
- name: mul.Tensor(Tensor self, Tensor other) -> Tensor
  self: mul_tensor_backward(&grad, &other)
  other: mul_tensor_backward(&grad, &self)

- name: sum(Tensor self, *, ScalarType? dtype=None) -> Tensor
  self: at::expand(&grad, &self.sizes(), false)

- name: sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor
  self: sum_backward(&grad, &self.sizes(), dim.as_deref(), keepdim)

- name: exp(Tensor self) -> Tensor
  self: at::mul_Tensor(&grad, &result)

- name: _to_copy(Tensor self, *, ScalarType? dtype=None) -> Tensor
  self: to_copy_backward(&grad, self.dtype())
";

const HELPERS: &[&str] = &["mul_tensor_backward", "sum_backward", "to_copy_backward"];

fn generate(derivs: &str) -> Result<String, String> {
    let ops = load::load_str("native_functions.yaml", OPS).unwrap_or_else(|d| panic!("{d}"));
    let plan = lower::lower(&ops, &[]).unwrap_or_else(|d| panic!("{d}"));
    let file = load_str("derivatives.yaml", derivs).map_err(|d| d.to_string())?;
    let checked = derivatives::check(&file, &ops, HELPERS).map_err(|d| d.to_string())?;
    emit_autograd::autograd(&plan, &Options::runtime(), &file, &checked).map_err(|d| d.to_string())
}

fn flat(s: &str) -> String {
    s.split_whitespace().collect()
}

#[test]
fn tiny_fixture_snapshot() {
    let got = generate(DERIVATIVES).unwrap_or_else(|e| panic!("{e}"));
    syn::parse_file(got.split_once("\n\n").unwrap().1).expect("emitted code parses");
    let snap = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/snapshots/mini_autograd.rs");
    if std::env::var_os("OPFORGE_BLESS").is_some() {
        std::fs::write(&snap, &got).unwrap();
    }
    let want = std::fs::read_to_string(&snap).unwrap_or_default();
    assert!(
        got == want,
        "autograd.rs differs from {} (re-bless with OPFORGE_BLESS=1 if intended)",
        snap.display()
    );
}

#[test]
fn nodes_are_named_by_torchgens_rule_and_save_what_formulas_use() {
    let got = flat(&generate(DERIVATIVES).unwrap());
    for part in [
        // Base name, CamelCase, a counter per prefix in file order.
        "pubstructMulBackward0{",
        "pubstructSumBackward0{",
        "pubstructSumBackward1{",
        "pubstructExpBackward0{",
        "pubstructToCopyBackward0{",
        // Saved: whole tensors, properties, values, outputs.
        "other:::opforge::autograd::SavedTensor,self_:::opforge::autograd::SavedTensor,",
        // Sizes inline (no allocation for five dimensions), read as a copy.
        "self_sizes:Sizes,",
        "letself_sizes:Sizes=self.self_sizes.clone();",
        "dim:::core::option::Option<::std::vec::Vec<i64>>,",
        "self_dtype:::opforge::DType,",
        "result:::opforge::autograd::SavedTensor,",
        // Only wanted gradients are computed; saved tensors are released.
        "ifctx.needs_input_grad(1usize){letself_=self.self_.unpack()?;",
        "self.other.release();self.self_.release();",
    ] {
        assert!(got.contains(part), "{part} not in the generated file");
    }
    // Nodes keep no metadata of their inputs: the engine checks a gradient
    // against the node it goes to (PyTorch's `validate_outputs`).
    assert!(!got.contains("__inputs"), "no input metadata in a node");
    // `exp` reads its output, saved after the call without its history.
    assert!(
        got.contains("result:saver.output(0u32)?,"),
        "exp saves its result"
    );
}

#[test]
fn kernels_for_functional_in_place_and_out_forms() {
    let got = flat(&generate(DERIVATIVES).unwrap());
    for part in [
        // Functional: begin, redispatch below autograd, finish.
        "fn__opforge_autograd_mul_Tensor(self_:&::opforge::Tensor,other:&::opforge::Tensor,)",
        "::opforge::autograd::Recording::begin(&[self_,other])",
        "::opforge::at::mul_Tensor(self_,other)?",
        // The result lent mutably: a fresh one gets its history unlocked.
        "rec.finish(\"MulBackward0\",[&mutout]",
        // In-place: the functional's formulas; self's old value cloned first.
        "::opforge::autograd::Recording::begin_inplace(self_,&[other])?",
        "::opforge::at::clone(self_,None)?",
        "::opforge::at::mul__Tensor(self_,other)?",
        // out=: refused when something requires grad, else redispatched.
        "let__all:[&::opforge::Tensor;_]=[self_,other,&*out];::opforge::autograd::check_out(\"mul\",&__all)?;",
        "::opforge::at::mul_out(self_,other,out)",
        // Registered at the Autograd key.
        "\"mul.Tensor\",\"Autograd\",",
        "\"mul_.Tensor\",\"Autograd\",",
        "\"mul.out\",\"Autograd\",",
    ] {
        assert!(got.contains(part), "{part} not in the generated file");
    }
    // An operator without formulas gets no kernel.
    assert!(!got.contains("\"cat\",\"Autograd\""));
}

#[test]
fn what_the_generator_does_not_support_is_an_error_at_the_entry() {
    let src = format!(
        "{DERIVATIVES}\n- name: maximum(Tensor self, Tensor other) -> Tensor\n  self, other: mul_tensor_backward(&grad, &grad)\n"
    );
    let e = generate(&src).unwrap_err();
    assert!(
        e.contains("derivatives.yaml:17: maximum: a formula for several arguments (self, other) is not supported by the generator yet"),
        "{e}"
    );
}

/// A `Tensor[]` argument: one node input per element (`__ins`, `__counts`),
/// per-element sizes saved, the formula's list placed element by element.
#[test]
fn a_tensor_list_argument_is_one_input_per_element() {
    let src = format!(
        "{DERIVATIVES}\n- name: cat(Tensor[] tensors, int dim=0) -> Tensor\n  tensors: cat_tensors_backward(&grad, &tensors.sizes(), dim)\n  result: auto_linear\n"
    );
    let ops = load::load_str("native_functions.yaml", OPS).unwrap();
    let plan = lower::lower(&ops, &[]).unwrap();
    let file = load_str("derivatives.yaml", &src).unwrap();
    let mut helpers = HELPERS.to_vec();
    helpers.push("cat_tensors_backward");
    let checked = derivatives::check(&file, &ops, &helpers).unwrap_or_else(|d| panic!("{d}"));
    let got = flat(&emit_autograd::autograd(&plan, &Options::runtime(), &file, &checked).unwrap());
    for part in [
        "__ins.extend(tensors.iter().map(::core::option::Option::Some));",
        "::opforge::autograd::Recording::begin_optional(&__ins)",
        "Some((::std::vec![tensors.len()],",
        "tensors.iter().map(|t|t.sizes()).collect::<::std::vec::Vec<_>>()",
        "letstart:usize=self.__counts[..0usize].iter().sum();",
        // Forward mode: the operator on the elements' tangents.
        "::opforge::at::cat(&tensors_t,dim)",
    ] {
        assert!(got.contains(part), "{part} not in the generated file");
    }
}
