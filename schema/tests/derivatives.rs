//! `derivatives.yaml`: what loads into which model, how entries resolve against
//! an operator file, and every diagnostic, proved by a small inline fixture and
//! the full text printed for it (`file:line[:col]: entry: message` and
//! `  help: ...`).

use opforge_schema::derivatives::{
    self, Body, Differentiability, Direction, FormulaSource, Resolution,
};
use opforge_schema::load;

/// The operator file every fixture resolves against.
const OPS: &str = "\
- func: abs(Tensor self) -> Tensor
  variants: function, method
- func: abs_(Tensor(a!) self) -> Tensor(a!)
- func: abs.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
- func: add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
- func: add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)
- func: add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)
- func: add.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor
- func: linalg_cholesky_ex(Tensor self, *, bool upper=False, bool check_errors=False) -> (Tensor L, Tensor info)
- func: ones_like(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor
- func: transpose.int(Tensor(a) self, int dim0, int dim1) -> Tensor(a)
- func: transpose_copy.int(Tensor self, int dim0, int dim1) -> Tensor
  tags: view_copy
- func: bump(Tensor self, Tensor(a!) running) -> Tensor
  dispatch:
    CPU: bump
  autogen: bump_functional, bump.out
- func: _foreach_abs(Tensor[] self) -> Tensor[]
- func: _foreach_abs_(Tensor(a!)[] self) -> ()
- func: masked(Tensor self, Tensor grad_input_mask) -> Tensor
- func: resulting(Tensor self, Tensor result) -> Tensor
- func: pair(Tensor x) -> (Tensor x, Tensor y)
";

fn ops() -> load::SchemaFile {
    load::load_str("native_functions.yaml", OPS).unwrap_or_else(|d| panic!("{d}"))
}

/// Loads and resolves `src`.
fn run(src: &str) -> Result<(derivatives::DerivativesFile, Resolution), String> {
    let file = derivatives::load_str("derivatives.yaml", src).map_err(|d| d.to_string())?;
    let r = derivatives::resolve(&file, &ops()).map_err(|d| d.to_string())?;
    Ok((file, r))
}

/// Everything printed for `src`: the loader's diagnostics or, when it loads,
/// resolution's; empty when the file is fine.
fn check(src: &str) -> String {
    match run(src) {
        Ok(_) => String::new(),
        Err(e) => e.trim_end().to_string(),
    }
}

/// Asserts the full printed text, showing both sides in full on a mismatch.
#[track_caller]
fn expect(src: &str, expected: &str) {
    let got = check(src);
    assert!(
        got == expected.trim_end(),
        "\n--- input\n{src}\n--- expected\n{expected}\n--- got\n{got}\n"
    );
}

// ---------------------------------------------------------------------------
// What loads.
// ---------------------------------------------------------------------------

#[test]
fn a_good_file_loads_into_the_model() {
    let src = "\
# header comment
- name: abs(Tensor self) -> Tensor
  self: grad * self.sgn()
  result: auto_element_wise

- name: add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
  self, other: add_backward(grad, alpha)
  result: self_t + maybe_multiply(other_t, alpha)

- name: linalg_cholesky_ex(Tensor self, *, bool upper=False, bool check_errors=False) -> (Tensor L, Tensor info)
  self: not_implemented(\"linalg_cholesky_ex\")
  L: cholesky_jvp(self_t, L, upper)
  output_differentiability: [True, False]

- name: transpose.int(Tensor(a) self, int dim0, int dim1) -> Tensor(a)
  dispatch:
    Default:
      self: grad.transpose(dim0, dim1)
      result: auto_linear
    AutogradNestedTensor:
      self: NON_DIFFERENTIABLE
";
    let (file, r) = run(src).unwrap();
    assert_eq!(file.entries.len(), 4);
    let [abs, add, chol, tr] = &file.entries[..] else {
        unreachable!()
    };
    assert_eq!(abs.line, 2);
    assert_eq!(abs.name, "abs(Tensor self) -> Tensor");
    assert!(!abs.has_dispatch);
    let f = abs.formulas("Default").unwrap();
    assert_eq!(f.len(), 2);
    assert_eq!(
        (f[0].names.as_slice(), f[0].text.as_str()),
        (&["self".to_string()][..], "grad * self.sgn()")
    );
    assert_eq!(
        (f[0].direction, f[0].body, f[0].line, f[0].column),
        (Direction::Backward, Body::Expr, 3, Some(3))
    );
    assert_eq!(
        (f[1].direction, f[1].body, f[1].line),
        (Direction::Forward, Body::AutoElementWise, 4)
    );
    let f = add.formulas("Default").unwrap();
    assert_eq!(f[0].names, ["self", "other"]);
    assert_eq!(f[1].direction, Direction::Forward);
    let f = chol.formulas("Default").unwrap();
    assert_eq!(f[0].body, Body::NotImplemented);
    assert_eq!(
        (f[1].names[0].as_str(), f[1].direction),
        ("L", Direction::Forward)
    );
    let od = chol.output_differentiability.as_ref().unwrap();
    assert_eq!(od.value, Differentiability::Flags(vec![true, false]));
    assert_eq!((od.line, od.column), (13, Some(3)));
    assert!(tr.has_dispatch);
    assert_eq!(tr.dispatch.len(), 2);
    assert_eq!(
        (tr.dispatch[0].key.as_str(), tr.dispatch[0].line),
        ("Default", 17)
    );
    let f = tr.formulas("Default").unwrap();
    assert_eq!((f[0].line, f[0].column), (18, Some(7)));
    assert_eq!(f[1].body, Body::AutoLinear);
    let f = tr.formulas("AutogradNestedTensor").unwrap();
    assert_eq!((f[0].body, f[0].line), (Body::NonDifferentiable, 21));
    assert!(tr.formulas("AutogradCPU").is_none());

    let ops: Vec<&str> = r.entries.iter().map(|e| e.operator.as_str()).collect();
    assert_eq!(
        ops,
        ["abs", "add.Tensor", "linalg_cholesky_ex", "transpose.int"]
    );
    assert_eq!((r.entries[1].line, r.entries[1].generated), (5, false));
}

#[test]
fn a_condition_for_the_single_output() {
    let src = "- name: abs(Tensor self) -> Tensor\n  output_differentiability: [\"!dtype || isDifferentiableType(*dtype)\"]\n";
    let (file, _) = run(src).unwrap();
    assert_eq!(
        file.entries[0]
            .output_differentiability
            .as_ref()
            .unwrap()
            .value,
        Differentiability::Condition("!dtype || isDifferentiableType(*dtype)".into())
    );
}

#[test]
fn an_empty_file_has_no_entries() {
    let (file, r) = run("# nothing yet\n").unwrap();
    assert!(file.entries.is_empty());
    assert!(r.operators.is_empty());
}

// ---------------------------------------------------------------------------
// Which operators get which entry's formulas.
// ---------------------------------------------------------------------------

#[test]
fn variants_get_the_formulas_of_their_functional_operator() {
    let src = "\
- name: abs(Tensor self) -> Tensor
  self: grad * self.sgn()
- name: add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
  self: grad
- name: add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)
  self: grad
- name: transpose.int(Tensor(a) self, int dim0, int dim1) -> Tensor(a)
  self: grad.transpose(dim0, dim1)
- name: bump(Tensor self, Tensor(a!) running) -> Tensor
  self: grad
";
    let (_, r) = run(src).unwrap();
    let got: Vec<(&str, usize, FormulaSource)> = r
        .operators
        .iter()
        .map(|(name, o)| (name.as_str(), o.entry, o.source))
        .collect();
    use FormulaSource::*;
    assert_eq!(
        got,
        [
            // `_foreach_abs` has the signature of `abs` but gets nothing; nor does
            // the generated `bump.out`.
            ("abs", 0, Exact),
            ("abs.out", 0, Functional),
            ("abs_", 0, Functional),
            ("add.Tensor", 1, Exact),
            ("add.out", 1, Functional),
            // An inplace variant with its own entry keeps it.
            ("add_.Tensor", 2, Exact),
            ("bump", 4, Exact),
            ("bump_functional", 4, NonFunctional),
            ("transpose.int", 3, Exact),
            ("transpose_copy.int", 3, ViewCopy),
        ]
    );
    let bump = &r.entries[4];
    assert_eq!((bump.operator.as_str(), bump.generated), ("bump", false));
}

#[test]
fn an_entry_may_name_a_generated_operator() {
    let src = "- name: bump_functional(Tensor self, Tensor running) -> (Tensor, Tensor running_out)\n  self: grad\n";
    let (_, r) = run(src).unwrap();
    assert_eq!(r.entries[0].operator, "bump_functional");
    assert!(r.entries[0].generated);
    assert_eq!(r.entries[0].line, 14);
    assert_eq!(r.operators["bump_functional"].source, FormulaSource::Exact);
}

// ---------------------------------------------------------------------------
// The file's shape (loading).
// ---------------------------------------------------------------------------

#[test]
fn the_file_is_a_list_of_mappings_with_a_name() {
    expect(
        "name: abs(Tensor self) -> Tensor\n",
        "derivatives.yaml:1: expected a list of derivative entries at the top level, found a mapping
  help: the file is a list: start every entry with `- `, e.g. `- name: neg(Tensor self) -> Tensor`",
    );
    expect(
        "- abs(Tensor self) -> Tensor\n",
        "derivatives.yaml:1: expected an entry mapping (`- name: ...`), found the string `abs(Tensor self) -> Tensor`
  help: each entry is a mapping that starts with its operator's schema: `- name: neg(Tensor self) -> Tensor`",
    );
    expect(
        "- self: grad\n  result: auto_linear\n",
        "derivatives.yaml:1: missing `name:` key (found self, result)
  help: each entry is a mapping that starts with its operator's schema: `- name: neg(Tensor self) -> Tensor`",
    );
    expect(
        "- name: ''\n",
        "derivatives.yaml:1:10: `name:` is empty
  help: each entry is a mapping that starts with its operator's schema: `- name: neg(Tensor self) -> Tensor`",
    );
    expect(
        "- name: [abs]\n",
        "derivatives.yaml:1:9: `name:` must be a schema string, found a list
  help: each entry is a mapping that starts with its operator's schema: `- name: neg(Tensor self) -> Tensor`",
    );
    expect(
        "- name: abs(Tensor self) -> Tensor\n  1: grad\n",
        "derivatives.yaml:1: abs: entry keys must be strings, found the number `1`
  help: an entry has `name:`, `dispatch:`, `output_differentiability:` and formulas keyed by argument or output names",
    );
}

#[test]
fn a_malformed_schema_is_placed_in_its_line() {
    // Every entry is loaded: the problem of the second is found too.
    expect(
        "\
- name: abs(Tensor self) -> Tensr
  self: grad
- name: add.Tensor(Tensor self,Tensor other) -> Tensor
  self: grad
",
        "derivatives.yaml:1:29: abs: malformed schema: unrecognized type Tensr
  help: did you mean `Tensor`?
derivatives.yaml:3:20: add.Tensor: malformed schema: unrecognized type Tensor self,Tensor
  help: arguments are separated by exactly `, ` (a comma and one space), and each is `Type name` with one space",
    );
    expect(
        "- name: abs(Tensor self) -> (Tensor)\n",
        "derivatives.yaml:1:29: abs: malformed schema: schema is not in canonical form: it prints back as `abs(Tensor self) -> Tensor`
  help: write the schema exactly as it prints back: torchgen compares the two character for character",
    );
}

#[test]
fn a_key_twice_is_a_yaml_error() {
    expect(
        "- name: abs(Tensor self) -> Tensor\n  self: grad\n  self: -grad\n",
        "derivatives.yaml:3:3: malformed YAML: duplicate key `self` (first at line 2)
  help: each key may appear only once per entry, and each dispatch key once per table",
    );
}

#[test]
fn dispatch_tables() {
    expect(
        "- name: abs(Tensor self) -> Tensor\n  dispatch: grad\n",
        "derivatives.yaml:2:13: abs: `dispatch:` must be a mapping of dispatch keys to formulas, found the string `grad`
  help: write `dispatch:` and under it `Default:` (and e.g. `AutogradNestedTensor:`), each with its formulas indented under it",
    );
    expect(
        "\
- name: abs(Tensor self) -> Tensor
  dispatch:
    Default:
      self: grad
    AutogradCUAD:
      self: grad
    Sparse:
      self: grad
",
        "derivatives.yaml:5:5: abs: invalid dispatch key `AutogradCUAD`
  help: did you mean `AutogradCUDA`?
derivatives.yaml:7:5: abs: invalid dispatch key `Sparse`
  help: the keys are Default, AutogradNestedTensor, AutogradCPU, AutogradCUDA, AutogradHIP, AutogradXLA, AutogradMTIA, AutogradMPS, AutogradIPU, AutogradXPU, AutogradHPU, AutogradVE, AutogradLazy, AutogradMeta, AutogradPrivateUse1, AutogradPrivateUse2, AutogradPrivateUse3",
    );
    expect(
        "- name: abs(Tensor self) -> Tensor\n  dispatch:\n    Default: grad\n    1:\n      self: grad\n",
        "derivatives.yaml:2:3: abs: dispatch keys must be names, found the number `1`
derivatives.yaml:3:5: abs: the formulas for `Default` must be a mapping of names to formulas, found the string `grad`
  help: indent `NAME: formula` lines under `Default:`",
    );
    expect(
        "- name: abs(Tensor self) -> Tensor\n  dispatch:\n    Default:\n      2: grad\n",
        "derivatives.yaml:3:5: abs: formula keys must be names, found the number `2`",
    );
    // torchgen reads only `dispatch:` when there is one: a formula beside it would
    // be dropped without a word.
    expect(
        "- name: abs(Tensor self) -> Tensor\n  result: auto_linear\n  dispatch:\n    Default:\n      self: grad\n",
        "derivatives.yaml:2:3: abs: formula `result:` beside `dispatch:` is ignored
  help: with `dispatch:`, every formula goes under a dispatch key: move it under `Default:`",
    );
}

#[test]
fn formula_values_and_keys() {
    expect(
        "- name: abs(Tensor self) -> Tensor\n  self:\n  result: 1.5\n",
        "derivatives.yaml:2:3: abs: the formula for `self` must be a string, found nothing (an empty value)
  help: write a C++ expression (`grad * self.sgn()`) or `non_differentiable` for arguments, an expression, `auto_element_wise` or `auto_linear` for outputs
derivatives.yaml:3:3: abs: the formula for `result` must be a string, found the number `1.5`
  help: write a C++ expression (`grad * self.sgn()`) or `non_differentiable` for arguments, an expression, `auto_element_wise` or `auto_linear` for outputs",
    );
    expect(
        "- name: add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor\n  self,: grad\n",
        "derivatives.yaml:2:3: add.Tensor: the key `self,` has an empty name
  help: separate names with `, `, e.g. `self, other: ...`",
    );
}

#[test]
fn output_differentiability_shapes() {
    expect(
        "- name: abs(Tensor self) -> Tensor\n  output_differentiability: False\n",
        "derivatives.yaml:2:3: abs: `output_differentiability:` must be a list of True/False, found the bool `false`
  help: write one flag per output (`[True, False]`) or, for an operator with one output, one condition (`[\"!dtype || isDifferentiableType(*dtype)\"]`)",
    );
    expect(
        "- name: abs(Tensor self) -> Tensor\n  output_differentiability: [True, 0]\n",
        "derivatives.yaml:2:3: abs: `output_differentiability:` must be a list of True/False, found the number `0` in the list
  help: write one flag per output (`[True, False]`) or, for an operator with one output, one condition (`[\"!dtype || isDifferentiableType(*dtype)\"]`)",
    );
    expect(
        "- name: linalg_cholesky_ex(Tensor self, *, bool upper=False, bool check_errors=False) -> (Tensor L, Tensor info)\n  output_differentiability: [\"upper\", False]\n",
        "derivatives.yaml:2:3: linalg_cholesky_ex: output_differentiability must either be List[bool] or a List[str] where each str is a condition. In the case where it is a condition, we only support single-output functions.
  help: write one flag per output (`[True, False]`) or, for an operator with one output, one condition (`[\"!dtype || isDifferentiableType(*dtype)\"]`)",
    );
}

// ---------------------------------------------------------------------------
// Against the operator file (resolution).
// ---------------------------------------------------------------------------

#[test]
fn unknown_operators_list_what_there_is() {
    // A default spelled differently: the closest signature of that name, and all.
    expect(
        "- name: add.Tensor(Tensor self, Tensor other, *, Scalar alpha=2) -> Tensor\n  self: grad\n",
        "derivatives.yaml:1: add.Tensor: could not find ATen function for schema: add.Tensor(Tensor self, Tensor other, *, Scalar alpha=2) -> Tensor
  help: did you mean `add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor`?
  available signatures:
    add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
    add.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor",
    );
    // A misspelt name: the signatures of the closest name.
    expect(
        "- name: asb(Tensor self) -> Tensor\n",
        "derivatives.yaml:1: asb: could not find ATen function for schema: asb(Tensor self) -> Tensor
  help: did you mean `abs(Tensor self) -> Tensor`?
  available signatures:
    abs(Tensor self) -> Tensor",
    );
    // Nothing near.
    expect(
        "- name: frobnicate(Tensor self) -> Tensor\n",
        "derivatives.yaml:1: frobnicate: could not find ATen function for schema: frobnicate(Tensor self) -> Tensor
  help: no operator is named `frobnicate`; `name:` repeats an operator's schema exactly as the operator file writes it",
    );
}

#[test]
fn a_second_entry_for_an_operator() {
    expect(
        "\
- name: abs(Tensor self) -> Tensor
  self: grad
- name: add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
  self: grad
- name: abs(Tensor self) -> Tensor
  self: -grad
",
        "derivatives.yaml:5: abs: a second entry for `abs` (first at line 1)
  help: torchgen keeps only the last entry for an operator: merge the two",
    );
}

#[test]
fn keys_name_arguments_or_outputs() {
    expect(
        "- name: abs(Tensor self) -> Tensor\n  slef: grad\n",
        "derivatives.yaml:2:3: abs: `slef` is neither an argument nor an output of `abs`
  help: did you mean `self`?",
    );
    // A misspelt top-level key is a formula key nobody has.
    expect(
        "- name: abs(Tensor self) -> Tensor\n  output_differentiabilty: [False]\n",
        "derivatives.yaml:2:3: abs: the formula for `output_differentiabilty` must be a string, found a list
  help: did you mean `output_differentiability`?",
    );
    expect(
        "- name: abs(Tensor self) -> Tensor\n  output_differentiabilty: grad\n",
        "derivatives.yaml:2:3: abs: `output_differentiabilty` is neither an argument nor an output of `abs`
  help: did you mean `output_differentiability`?",
    );
    expect(
        "- name: add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor\n  self, weight: grad\n",
        "derivatives.yaml:2:3: add.Tensor: `weight` is neither an argument nor an output of `add.Tensor`
  help: arguments: self, other, alpha; outputs: result, result0",
    );
    // A TensorOptions group is one C++ argument.
    expect(
        "- name: ones_like(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor\n  layout: grad\n",
        "derivatives.yaml:2:3: ones_like: `layout` is neither an argument nor an output of `ones_like`
  help: torchgen passes `dtype`, `layout`, `device` and `pin_memory` as one argument, `options`",
    );
    // `result` only for a single output; `resultN` in range.
    expect(
        "- name: linalg_cholesky_ex(Tensor self, *, bool upper=False, bool check_errors=False) -> (Tensor L, Tensor info)\n  result: L_t\n  result2: L_t\n",
        "derivatives.yaml:2:3: linalg_cholesky_ex: `result` is neither an argument nor an output of `linalg_cholesky_ex`
  help: did you mean `result0`?
derivatives.yaml:3:3: linalg_cholesky_ex: `result2` is neither an argument nor an output of `linalg_cholesky_ex`
  help: did you mean `result0`?",
    );
    // Both at once.
    expect(
        "- name: add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor\n  self, result: grad\n",
        "derivatives.yaml:2:3: add.Tensor: the key `self, result` names both arguments and outputs
  help: a key names arguments (a backward formula, in terms of `grad`) or outputs (a forward formula, in terms of `self_p` and `self_t`): write two keys",
    );
    expect(
        "- name: pair(Tensor x) -> (Tensor x, Tensor y)\n  x: grad\n",
        "derivatives.yaml:2:3: pair: While processing the derivative formula for 'pair' wrt 'x', expected 'x' to not be both an input arg and named return.",
    );
}

#[test]
fn one_formula_per_name() {
    expect(
        "\
- name: add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
  self: grad
  other, self: grad
  other: non_differentiable
",
        "derivatives.yaml:3:3: add.Tensor: `self` is given a formula twice (first at line 2)
  help: give each argument or output one formula; one key may name several: `self, other: ...`
derivatives.yaml:4:3: add.Tensor: `other` is given a formula twice (first at line 3)
  help: give each argument or output one formula; one key may name several: `self, other: ...`",
    );
    // Per dispatch key: the same name under two keys is fine.
    expect(
        "- name: abs(Tensor self) -> Tensor\n  dispatch:\n    Default:\n      self: grad\n    AutogradNestedTensor:\n      self: grad\n",
        "",
    );
}

#[test]
fn values_belong_to_their_direction() {
    expect(
        "- name: abs(Tensor self) -> Tensor\n  self: auto_linear\n  result: non_differentiable\n",
        "derivatives.yaml:2:3: abs: `auto_linear` is a forward formula, but `self` names arguments
  help: write it for the output: `result: auto_linear`
derivatives.yaml:3:3: abs: `non_differentiable` is for arguments, but `result` names outputs
  help: leave the output's formula out, or mark it in `output_differentiability:`",
    );
}

#[test]
fn automatic_forward_formulas() {
    expect(
        "- name: abs_(Tensor(a!) self) -> Tensor(a!)\n  self: grad\n  result: auto_element_wise\n",
        "derivatives.yaml:3:3: abs_: Cannot use auto_element_wise with abs_ because it is an in-place variant",
    );
    expect(
        "- name: add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor\n  self, other: grad\n  result: auto_element_wise\n",
        "derivatives.yaml:3:3: add.Tensor: Derivative definition of add in derivatives.yaml defines the forward definition of gradient as element_wise but this only works for functions with a single differentiable input and a single differentiable output.",
    );
    // Two backward formulas for the one differentiable argument.
    expect(
        "- name: abs(Tensor self) -> Tensor\n  self: grad\n  self, self: grad\n  result: auto_element_wise\n",
        "derivatives.yaml:3:3: abs: `self` is given a formula twice (first at line 2)
  help: give each argument or output one formula; one key may name several: `self, other: ...`
derivatives.yaml:3:3: abs: `self` is given a formula twice (first at line 3)
  help: give each argument or output one formula; one key may name several: `self, other: ...`
derivatives.yaml:4:3: abs: Derivative definition of abs in derivatives.yaml defines the forward definition of gradient as element_wise but it does not defines the gradient formula for its argument which is required.",
    );
    expect(
        "- name: linalg_cholesky_ex(Tensor self, *, bool upper=False, bool check_errors=False) -> (Tensor L, Tensor info)\n  self: grad\n  L, info: auto_linear\n",
        "derivatives.yaml:3:3: linalg_cholesky_ex: Derivative definition of linalg_cholesky_ex in derivatives.yaml defines the forward definition of gradient as linear but this only works for functions with a single differentiable output.",
    );
    expect(
        "- name: abs(Tensor self) -> Tensor\n  self: non_differentiable\n  result: auto_element_wise\n",
        "derivatives.yaml:3:3: abs: Derivative definition of abs in derivatives.yaml defines the forward definition of gradient as element_wise but this only works for functions with a single differentiable input and a single differentiable output.",
    );
}

#[test]
fn output_differentiability_fits_the_operator() {
    expect(
        "- name: linalg_cholesky_ex(Tensor self, *, bool upper=False, bool check_errors=False) -> (Tensor L, Tensor info)\n  output_differentiability: [True]\n",
        "derivatives.yaml:2:3: linalg_cholesky_ex: The length of output_differentiability (1), does not match the number of outputs (2).
  help: write one True/False per output of `linalg_cholesky_ex`",
    );
    expect(
        "- name: linalg_cholesky_ex(Tensor self, *, bool upper=False, bool check_errors=False) -> (Tensor L, Tensor info)\n  output_differentiability: [\"upper\"]\n",
        "derivatives.yaml:2:3: linalg_cholesky_ex: The length of output_differentiability (1), does not match the number of outputs (2).
  help: write one True/False per output of `linalg_cholesky_ex`",
    );
    expect(
        "- name: abs_(Tensor(a!) self) -> Tensor(a!)\n  output_differentiability: [False]\n",
        "derivatives.yaml:2:3: abs_: output_differentiability=False for inplace operation (version_counter won't get updated)",
    );
    // The inplace variant that gets `abs`'s formulas.
    expect(
        "- name: abs(Tensor self) -> Tensor\n  output_differentiability: [False]\n",
        "derivatives.yaml:2:3: abs: output_differentiability=False for inplace operation (version_counter won't get updated)
  help: `abs_` gets this entry's formulas (its functional variant's), so its outputs must fit too",
    );
    expect(
        "- name: bump(Tensor self, Tensor(a!) running) -> Tensor\n  output_differentiability: [True]\n",
        "derivatives.yaml:2:3: bump: The length of output_differentiability (1), does not match the number of outputs (2).
  help: `bump_functional` gets this entry's formulas (its mutable variant's), so its outputs must fit too",
    );
}

#[test]
fn reserved_argument_names() {
    expect(
        "- name: masked(Tensor self, Tensor grad_input_mask) -> Tensor\n",
        "derivatives.yaml:1: masked: Schema for masked has an argument named grad_input_mask, but this name would be shadowed by our codegen. Please use a different name in native_functions.yaml.",
    );
    expect(
        "- name: resulting(Tensor self, Tensor result) -> Tensor\n",
        "derivatives.yaml:1: resulting: Schema for resulting has an argument named result, but this is only allowed for outputs. Please use a different name in native_functions.yaml.",
    );
}

#[test]
fn an_operator_file_autogen_cannot_group_is_reported() {
    let ops = load::load_str(
        "native_functions.yaml",
        "- func: foo(Tensor self) -> Tensor\n- func: foo.a(Tensor self) -> Tensor\n",
    )
    .unwrap();
    let file =
        derivatives::load_str("derivatives.yaml", "- name: foo(Tensor self) -> Tensor\n").unwrap();
    assert_eq!(
        derivatives::resolve(&file, &ops).unwrap_err().to_string().trim_end(),
        "native_functions.yaml:0: Duplicate schema kind functional for foo.a(Tensor self) -> Tensor (and foo(Tensor self) -> Tensor)"
    );
}
