//! Derivative formulas written as Rust: what each node saves for good
//! formulas, and every diagnostic (printed in full, `file:line:col: entry:
//! message` and `  help: ...`) for bad ones, on small inline fixtures.

use opforge_codegen::derivatives::{self, CheckedFile, CheckedSet, Property, SavedKind};
use opforge_schema::derivatives::load_str;
use opforge_schema::load;
use opforge_schema::model::{BaseType, Type};

/// The operator file every fixture resolves against.
const OPS: &str = "\
- func: mul.Tensor(Tensor self, Tensor other) -> Tensor
- func: sum(Tensor self, *, ScalarType? dtype=None) -> Tensor
- func: exp(Tensor self) -> Tensor
- func: exp_(Tensor(a!) self) -> Tensor(a!)
- func: max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)
- func: cat(Tensor[] tensors, int dim=0) -> Tensor
- func: where.self(Tensor condition, Tensor self, Tensor other) -> Tensor
- func: as_strided(Tensor(a) self, SymInt[] size, SymInt[] stride, SymInt? storage_offset=None) -> Tensor(a)
";

/// The helper functions the fixtures' runtime provides.
const HELPERS: &[&str] = &[
    "mul_tensor_backward",
    "sum_to",
    "value_selecting_reduction_backward",
    "cat_tensors_backward",
    "handle_r_to_c",
];

fn run(src: &str) -> Result<CheckedFile, String> {
    let ops = load::load_str("native_functions.yaml", OPS).unwrap_or_else(|d| panic!("{d}"));
    let file = load_str("derivatives.yaml", src).map_err(|d| d.to_string())?;
    derivatives::check(&file, &ops, HELPERS).map_err(|d| d.to_string())
}

/// The checked file for `src`, which must pass.
#[track_caller]
fn good(src: &str) -> CheckedFile {
    run(src).unwrap_or_else(|e| panic!("expected no diagnostics for\n{src}\ngot:\n{e}"))
}

/// Asserts the full printed diagnostics for `src`.
#[track_caller]
fn expect(src: &str, expected: &str) {
    let got = match run(src) {
        Ok(_) => String::new(),
        Err(e) => e.trim_end().to_string(),
    };
    assert_eq!(
        got, expected,
        "\n--- got ---\n{got}\n--- expected ---\n{expected}\n"
    );
}

/// `(name, of, kind)` of what a set saves.
fn saved(set: &CheckedSet) -> Vec<(String, String, SavedKind)> {
    set.saved
        .iter()
        .map(|s| (s.name.clone(), s.of.clone(), s.kind.clone()))
        .collect()
}

fn item(name: &str, of: &str, kind: SavedKind) -> (String, String, SavedKind) {
    (name.to_string(), of.to_string(), kind)
}

fn tokens(e: &Option<syn::Expr>) -> String {
    quote::ToTokens::to_token_stream(e.as_ref().expect("an expression")).to_string()
}

#[test]
fn mul_saves_both_tensors_and_their_dtypes() {
    let c = good(
        "\
- name: mul.Tensor(Tensor self, Tensor other) -> Tensor
  self: mul_tensor_backward(grad, other, self.scalar_type())
  other: mul_tensor_backward(grad, self, other.scalar_type())
  result: other_t * self_p + self_t * other_p
",
    );
    let e = &c.entries[0];
    assert_eq!(e.operator, "mul.Tensor");
    let set = &e.sets[0];
    assert_eq!(set.key, "Default");
    assert_eq!(set.differentiable, ["self", "other"]);
    assert_eq!(
        saved(set),
        [
            item("other", "other", SavedKind::Tensor),
            item(
                "self_scalar_type",
                "self",
                SavedKind::Property(Property::ScalarType)
            ),
            item("self", "self", SavedKind::Tensor),
            item(
                "other_scalar_type",
                "other",
                SavedKind::Property(Property::ScalarType)
            ),
        ]
    );
    assert_eq!(set.saved[1].record.as_deref(), Some("self_.scalar_type()"));
    assert_eq!(set.saved[2].ident(), "self_");
    // The node's expression reads the fields.
    assert_eq!(
        tokens(&set.formulas[1].node_expr),
        "mul_tensor_backward (grad , self_ , other_scalar_type)"
    );
    assert!(set.formulas[1].gradients.grad);
    // The forward formula saves nothing and reads both tangents and primals.
    let fw = &set.formulas[2];
    assert!(fw.saved.is_empty());
    assert_eq!(tokens(&fw.node_expr), "other_t * self_p + self_t * other_p");
    assert_eq!(fw.tangents, ["other", "self"]);
    assert_eq!(fw.primals, ["self", "other"]);
}

#[test]
fn sum_saves_only_the_sizes() {
    let c = good(
        "\
- name: sum(Tensor self, *, ScalarType? dtype=None) -> Tensor
  self: grad.expand(self.sizes())
",
    );
    let set = &c.entries[0].sets[0];
    assert_eq!(
        saved(set),
        [item(
            "self_sizes",
            "self",
            SavedKind::Property(Property::Sizes)
        )]
    );
    assert_eq!(
        tokens(&set.formulas[0].node_expr),
        "grad . expand (self_sizes)"
    );
    assert_eq!(
        tokens(&set.formulas[0].expr),
        "grad . expand (self . sizes ())"
    );
}

#[test]
fn exp_saves_its_result() {
    let c = good(
        "\
- name: exp(Tensor self) -> Tensor
  self: grad * result.conj()
  result: self_t * result
- name: exp_(Tensor(a!) self) -> Tensor(a!)
  self: grad * result.conj()
  result: self_t.mul_(original_self_p.exp())
",
    );
    let out = SavedKind::Output {
        index: 0,
        ty: Type::Base(BaseType::Tensor),
    };
    for e in &c.entries {
        assert_eq!(saved(&e.sets[0]), [item("result", "result", out.clone())]);
    }
    assert_eq!(c.entries[1].sets[0].formulas[1].primals, ["self"]);
}

#[test]
fn values_arguments_outputs_and_sizes_of_one_dimension() {
    let c = good(
        "\
- name: max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)
  self: value_selecting_reduction_backward(grad, dim, indices, self.sizes(), keepdim) * self.size(-1) * self.sym_size(dim)
  values: value_selecting_reduction_backward(self_t, dim, indices, self_p.sizes(), keepdim)
  output_differentiability: [True, False]
",
    );
    let set = &c.entries[0].sets[0];
    assert_eq!(
        saved(set),
        [
            item("dim", "dim", SavedKind::Value(Type::Base(BaseType::Int))),
            item(
                "indices",
                "indices",
                SavedKind::Output {
                    index: 1,
                    ty: Type::Base(BaseType::Tensor)
                }
            ),
            item("self_sizes", "self", SavedKind::Property(Property::Sizes)),
            item(
                "keepdim",
                "keepdim",
                SavedKind::Value(Type::Base(BaseType::Bool))
            ),
            item(
                "self_argsize_minus_1",
                "self",
                SavedKind::Property(Property::Size)
            ),
            item(
                "self_sym_argsize_dim",
                "self",
                SavedKind::Property(Property::SymSize)
            ),
        ]
    );
    assert_eq!(set.saved[4].record.as_deref(), Some("self_.size(-1)"));
    assert_eq!(set.saved[5].record.as_deref(), Some("self_.sym_size(dim)"));
}

#[test]
fn closures_lets_and_matches_bind_local_names() {
    let c = good(
        "\
- name: where.self(Tensor condition, Tensor self, Tensor other) -> Tensor
  self: \"{ let other = grad.clone(); let f = |t: &Tensor| t * &other; sum_to(f(&grad), self.sizes()) }\"
  other: \"match condition.dim() { 0 => grad.clone(), n => (0..n).fold(grad.clone(), |acc, _| acc.sum_dim(0)) }\"
  condition: non_differentiable
",
    );
    let set = &c.entries[0].sets[0];
    // `other` inside the first formula is the local, not the argument.
    assert_eq!(
        saved(set),
        [
            item("self_sizes", "self", SavedKind::Property(Property::Sizes)),
            item(
                "condition_dim",
                "condition",
                SavedKind::Property(Property::Dim)
            ),
        ]
    );
    assert_eq!(set.differentiable, ["self", "other"]);
}

#[test]
fn lists_are_saved_as_lists() {
    let c = good(
        "\
- name: cat(Tensor[] tensors, int dim=0) -> Tensor
  tensors: cat_tensors_backward(grad, tensors, dim)
",
    );
    assert_eq!(
        saved(&c.entries[0].sets[0]),
        [
            item("tensors", "tensors", SavedKind::TensorList),
            item("dim", "dim", SavedKind::Value(Type::Base(BaseType::Int))),
        ]
    );
}

#[test]
fn a_formula_that_does_not_parse() {
    expect(
        "\
- name: mul.Tensor(Tensor self, Tensor other) -> Tensor
  self: \"grad.defined() ? grad * other : grad\"
",
        "derivatives.yaml:2:3: mul.Tensor: the formula for `self` is not a Rust expression: unexpected token\n  help: Rust has no `c ? a : b`: write `if c { a } else { b }`; a formula is one Rust expression over the typed API: `grad * other`, `sum_to(grad, self.sizes())`, `if c { a } else { b }`; the formula: `grad.defined() ? grad * other : grad`",
    );
}

#[test]
fn unknown_names_with_did_you_mean() {
    expect(
        "\
- name: mul.Tensor(Tensor self, Tensor other) -> Tensor
  self: mul_tensor_backward(grad, othr, self.scalar_type())
  other: sum_too(grad * self, other.sizes()) + gard + othr
",
        "derivatives.yaml:2:3: mul.Tensor: formula for `self` uses `othr`, which is not an argument, a gradient, a result or a helper\n  help: did you mean `other`?\n\
derivatives.yaml:3:3: mul.Tensor: formula for `other` calls `sum_too`, which is not a helper function\n  help: did you mean `sum_to`?\n\
derivatives.yaml:3:3: mul.Tensor: formula for `other` uses `gard`, which is not an argument, a gradient, a result or a helper\n  help: did you mean `grad`?\n\
derivatives.yaml:3:3: mul.Tensor: formula for `other` uses `othr`, which is not an argument, a gradient, a result or a helper\n  help: did you mean `other`?",
    );
}

#[test]
fn grads_out_of_range_and_torchgen_s_grad_rules() {
    expect(
        "\
- name: max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)
  self: value_selecting_reduction_backward(grads[2], dim, indices, self.sizes(), keepdim)
",
        "derivatives.yaml:2:3: max.dim: Out of bounds grads access: derivative formula for max used grads[2], but the forward only returns 2 outputs.\n  help: `grads[i]` is the gradient of output i, for i from 0 to 1",
    );
    expect(
        "\
- name: max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)
  self: grads[0] * grad
",
        "derivatives.yaml:1: max.dim: Derivative definition of max in derivatives.yaml illegally mixes use of 'grad' and 'grads'. Consider replacing occurrences of 'grad' with 'grads[0]'",
    );
    expect(
        "\
- name: max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)
  self: grads[0] * 2
",
        "derivatives.yaml:1: max.dim: Derivative definition of max in derivatives.yaml solely refers to 'grads[0]'.  If the first output is indeed the only differentiable output, replace 'grads[0]' with 'grad'; otherwise, there is a likely error in your derivatives declaration.",
    );
    // grad_<output> exists for differentiable named outputs only, and is not
    // mixed with grad.
    expect(
        "\
- name: max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)
  self: grad_values + grad_indices + grad
  output_differentiability: [True, False]
",
        "derivatives.yaml:1: max.dim: Derivative definition of max in derivatives.yaml illegally mixes use of \"grad_RETURN_NAME\" and \"grad\" or \"grads[x]\". Use only one method for identifying gradients.\n\
derivatives.yaml:2:3: max.dim: formula for `self` uses `grad_indices`, which is not an argument, a gradient, a result or a helper\n  help: `indices` is not a differentiable tensor output (see `output_differentiability:`), so it has no gradient",
    );
}

#[test]
fn forward_formulas_read_tangents_of_differentiable_arguments_only() {
    expect(
        "\
- name: mul.Tensor(Tensor self, Tensor other) -> Tensor
  self: mul_tensor_backward(grad, other, self.scalar_type())
  other: non_differentiable
  result: other_t * self_p + self_t * other + grad
",
        "derivatives.yaml:4:3: mul.Tensor: forward formula for `result` uses `other_t`, which is not a tangent, a primal, an argument, a result or a helper\n  help: `other` has no backward formula in this entry, so its node has no `other_t`: give `other` a formula, or leave `other_t` out\n\
derivatives.yaml:4:3: mul.Tensor: forward formula for `result` uses `grad`, which is not a tangent, a primal, an argument, a result or a helper\n  help: a forward formula has no `grad`: it is a Jacobian-vector product in terms of `<arg>_t` (tangents) and `<arg>_p` (primals)",
    );
    expect(
        "\
- name: exp(Tensor self) -> Tensor
  self: grad * result
  result: self_t * self.exp() + original_self_p
",
        "derivatives.yaml:3:3: exp: The forward formula for exp is using the base name of the self argument which is ambiguous. You should use self_p to access the primal value and self_t to access the tangent.\n\
derivatives.yaml:3:3: exp: forward formula for `result` uses `original_self_p`, which is not a tangent, a primal, an argument, a result or a helper\n  help: `original_self_p` is the value `self` had before an inplace operator wrote it: `exp` is not inplace",
    );
}

#[test]
fn what_the_checker_cannot_see_through_is_an_error() {
    expect(
        "\
- name: sum(Tensor self, *, ScalarType? dtype=None) -> Tensor
  self: grad.expand(vec![self.sizes()])
",
        "derivatives.yaml:2:3: sum: the formula for `self` uses the macro `vec!`, which the checker cannot see through\n  help: names inside a macro cannot be checked: write an array (`[a, b]`), a method call or a helper instead",
    );
    expect(
        "\
- name: as_strided(Tensor(a) self, SymInt[] size, SymInt[] stride, SymInt? storage_offset=None) -> Tensor(a)
  self, size: grad.as_strided(self.sym_strides())
",
        "derivatives.yaml:2:3: as_strided: Replacement for \".sym_strides()\" is currently only supported for single derivatives of the same tensor that \".sym_strides()\" is being called on.\n  help: give `self` a formula of its own, or save the tensor: `self.clone().sym_strides()`",
    );
}

#[test]
fn every_problem_of_the_file_together() {
    // Resolution's diagnostics (an unknown operator) and the formulas' come
    // back together, in file order.
    expect(
        "\
- name: mull.Tensor(Tensor self, Tensor other) -> Tensor
  self: grad * othr
- name: exp(Tensor self) -> Tensor
  self: grad *
",
        "derivatives.yaml:1: mull.Tensor: could not find ATen function for schema: mull.Tensor(Tensor self, Tensor other) -> Tensor\n  help: did you mean `mul.Tensor(Tensor self, Tensor other) -> Tensor`?\n  available signatures:\n    mul.Tensor(Tensor self, Tensor other) -> Tensor\n\
derivatives.yaml:2:3: mull.Tensor: formula for `self` uses `othr`, which is not an argument, a gradient, a result or a helper\n  help: did you mean `other`?\n\
derivatives.yaml:4:3: exp: the formula for `self` is not a Rust expression: unexpected end of input, expected an expression\n  help: a formula is one Rust expression over the typed API: `grad * other`, `sum_to(grad, self.sizes())`, `if c { a } else { b }`; the formula: `grad *`",
    );
}

#[test]
fn if_let_binds_for_its_branch_and_the_prelude_is_known() {
    let c = good(
        "\
- name: sum(Tensor self, *, ScalarType? dtype=None) -> Tensor
  self: \"if let Some(g) = Some(grad.clone()) { g.expand(self.sizes()) } else { None.unwrap() }\"
",
    );
    assert_eq!(
        saved(&c.entries[0].sets[0]),
        [item(
            "self_sizes",
            "self",
            SavedKind::Property(Property::Sizes)
        )]
    );
    // `g` is bound only in the branch of its `if let`.
    expect(
        "\
- name: sum(Tensor self, *, ScalarType? dtype=None) -> Tensor
  self: \"if let Some(g) = Some(grad.clone()) { g } else { g }\"
",
        "derivatives.yaml:2:3: sum: formula for `self` uses `g`, which is not an argument, a gradient, a result or a helper",
    );
}

#[test]
fn a_closure_s_parameters_end_with_the_closure() {
    expect(
        "\
- name: exp(Tensor self) -> Tensor
  self: (|x| x * &result)(grad.clone()) + x
",
        "derivatives.yaml:2:3: exp: formula for `self` uses `x`, which is not an argument, a gradient, a result or a helper",
    );
}

#[test]
fn not_implemented_is_a_helper_like_any_other() {
    // The loader tells `not_implemented(...)` apart; here it is a call, so the
    // runtime must list it among its helpers.
    expect(
        "\
- name: exp(Tensor self) -> Tensor
  self: not_implemented(\"exp\")
",
        "derivatives.yaml:2:3: exp: formula for `self` calls `not_implemented`, which is not a helper function\n  help: the helpers are `cat_tensors_backward`, `handle_r_to_c`, `mul_tensor_backward`, `sum_to`, `value_selecting_reduction_backward`; or call a method (`x.foo()`)",
    );
}
