//! Every validation error, proved by a small inline fixture and the full text of
//! what is printed for it: `file:line[:col]: entry: message` and `  help: ...`.
//!
//! Fixtures run through `load::load_str` and then `validate::validate` with the
//! small tags.yaml below, exactly as `opforge-codegen check` does.

use opforge_schema::diag::Diagnostic;
use opforge_schema::{load, validate};

const TAGS: &str = "\
- tag: core
  desc: Core ATen operators.
- tag: pointwise
  desc: Pointwise operators.
- tag: nondeterministic_seeded
  desc: Operators that use a random number generator.
- tag: inplace_view
  desc: Operators that only change their self's metadata.
";

/// Everything printed for `src`: the loader's diagnostics or, when it loads, the
/// validator's; empty when the file is fine.
fn check(src: &str) -> String {
    let tags = load::load_tags_str("tags.yaml", TAGS).unwrap();
    let out = match load::load_str("bad.yaml", src) {
        Err(d) => d.to_string(),
        Ok(f) => match validate::validate(&f, Some(&tags)) {
            Ok(()) => String::new(),
            Err(d) => d.to_string(),
        },
    };
    out.trim_end().to_string()
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

/// The 1-based column of `needle` on line `line` of `src`.
fn col_of(src: &str, line: usize, needle: &str) -> usize {
    let text = src.lines().nth(line - 1).unwrap();
    text[..text.find(needle).unwrap()].chars().count() + 1
}

// ---------------------------------------------------------------------------
// Schemas the parser rejects: the column points into the YAML line.
// ---------------------------------------------------------------------------

#[test]
fn malformed_schema_column_points_into_the_yaml_line() {
    let plain = "- func: add(Tensor self, Tensr other) -> Tensor\n";
    expect(
        plain,
        "bad.yaml:1:26: add: malformed schema: unrecognized type Tensr
  help: did you mean `Tensor`?",
    );
    assert_eq!(col_of(plain, 1, "Tensr"), 26);

    // Quoted: the column counts the quote.
    let double = "- func: \"add(Tensor self, Tensr other) -> Tensor\"\n";
    expect(
        double,
        "bad.yaml:1:27: add: malformed schema: unrecognized type Tensr
  help: did you mean `Tensor`?",
    );
    assert_eq!(col_of(double, 1, "Tensr"), 27);
    let single = "- func: 'add(Tensor self, Tensr other) -> Tensor'\n";
    expect(
        single,
        "bad.yaml:1:27: add: malformed schema: unrecognized type Tensr
  help: did you mean `Tensor`?",
    );

    // Extra spaces after `func:`, comments before, `func:` not the first key.
    let src = "# ops\n\n- variants: method\n  func:   add(Tensor self, Tensr other) -> Tensor\n";
    expect(
        src,
        "bad.yaml:4:28: add: malformed schema: unrecognized type Tensr
  help: did you mean `Tensor`?",
    );
    assert_eq!(col_of(src, 4, "Tensr"), 28);

    // Multi-byte characters before the error count as one column each.
    let src = "- func: add(Tensor self, Tensor é) -> Tensor\n";
    expect(
        src,
        "bad.yaml:1:33: add: malformed schema: illegal argument name 'é' in 'Tensor é'
  help: each argument is `Type name` or `Type name=default`, separated by `, `",
    );
    assert_eq!(col_of(src, 1, "é"), 33);

    // A block scalar is not on the `func:` line: no column rather than a wrong one.
    expect(
        "- func: |-\n    add(Tensor self, Tensr other) -> Tensor\n",
        "bad.yaml:1: add: malformed schema: unrecognized type Tensr
  help: did you mean `Tensor`?",
    );
}

#[test]
fn malformed_schema_forms() {
    expect(
        "- func: add(Tensor self)\n",
        "bad.yaml:1:25: add: malformed schema: Invalid function schema: add(Tensor self)
  help: a schema is `name.overload(Type arg, ...) -> Return`, with exactly one space on each side of `->`",
    );
    expect(
        "- func: add(Tensor self,int x) -> Tensor\n",
        "bad.yaml:1:13: add: malformed schema: unrecognized type Tensor self,int
  help: arguments are separated by exactly `, ` (a comma and one space), and each is `Type name` with one space",
    );
    expect(
        "- func: add(Tensor) -> Tensor\n",
        "bad.yaml:1:13: add: malformed schema: illegal argument 'Tensor'
  help: each argument is `Type name` or `Type name=default`, separated by `, `",
    );
    expect(
        "- func: add(Tensor self) -> (Tensor)\n",
        "bad.yaml:1:29: add: malformed schema: schema is not in canonical form: it prints back as `add(Tensor self) -> Tensor`
  help: write the schema exactly as it prints back: torchgen compares the two character for character",
    );
    expect(
        "- func: add(int(a) self) -> Tensor\n",
        "bad.yaml:1:13: add: malformed schema: unrecognized type int(a)
  help: alias annotations are written only on tensors: `Tensor(a!)`, `Tensor(a)?`, `Tensor(a!)[]`",
    );
}

#[test]
fn unknown_type_suggests_only_near_names() {
    expect(
        "- func: add(Tensor self, Tnesor other) -> Tensor\n",
        "bad.yaml:1:26: add: malformed schema: unrecognized type Tnesor
  help: did you mean `Tensor`?",
    );
    expect(
        "- func: add(Tensor self, int[] x, Sclar s) -> Tensor\n",
        "bad.yaml:1:35: add: malformed schema: unrecognized type Sclar
  help: did you mean `Scalar`?",
    );
    // Nothing is near `Foo`: list the types rather than guess (`bool`, `str`, ...).
    expect(
        "- func: add(Tensor self, Foo other) -> Tensor\n",
        "bad.yaml:1:26: add: malformed schema: unrecognized type Foo
  help: known types: Tensor, int, SymInt, float, bool, str, Scalar, ScalarType, Layout, Device, DeviceIndex, MemoryFormat, QScheme, Generator, Storage, Stream, SymBool, DimVector, GraphModule, Dimname, complex, Any (composed with `?` and `[]`/`[N]`)",
    );
}

// ---------------------------------------------------------------------------
// Cross-entry: duplicate names, structured delegates.
// ---------------------------------------------------------------------------

#[test]
fn duplicate_operator_names_both_lines() {
    expect(
        "\
- func: add.Tensor(Tensor self, Tensor other) -> Tensor
- func: neg(Tensor self) -> Tensor
- func: add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
",
        "bad.yaml:3:9: add.Tensor: duplicate operator `add.Tensor` (first defined at line 1)
  help: give one of them a different overload name: `name.overload(...)`",
    );
}

#[test]
fn structured_delegate_to_a_missing_operator() {
    let structured_out = "\
- func: abs.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
  structured: True
  dispatch:
    CPU: cpu::abs_out
";
    expect(
        &format!("- func: abs(Tensor self) -> Tensor\n  structured_delegate: abs.uot\n{structured_out}"),
        "bad.yaml:2:24: abs: abs is marked as a structured_delegate pointing to abs.uot, but abs.uot is missing.
  help: did you mean `abs.out`?",
    );
    expect(
        "- func: abs(Tensor self) -> Tensor\n  structured_delegate: zzz.out\n",
        "bad.yaml:2:24: abs: abs is marked as a structured_delegate pointing to zzz.out, but zzz.out is missing.
  help: name an out= operator of this file that is marked `structured: True`",
    );
    expect(
        &format!("- func: abs(Tensor self) -> Tensor\n  structured_delegate: aten::abs.out\n{structured_out}"),
        "bad.yaml:2:24: abs: namespace is not supported in structured delegate, using the same namespace as the native function
  help: drop the `ns::` prefix",
    );
}

#[test]
fn structured_delegate_to_a_non_structured_operator() {
    expect(
        "\
- func: abs(Tensor self) -> Tensor
  structured_delegate: abs.out
- func: abs.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
  dispatch:
    CPU: cpu::abs_out
",
        "bad.yaml:2:24: abs: abs is marked as a structured_delegate pointing to abs.out, but abs.out is not marked as structured. Consider adding 'structured=True' to the delegated operator
  help: add `structured: True` to `abs.out` (line 3)",
    );
}

#[test]
fn structured_delegate_must_not_name_backend_kernels() {
    expect(
        "\
- func: abs(Tensor self) -> Tensor
  structured_delegate: abs.out
  dispatch:
    CPU, Meta: cpu::abs
- func: abs.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
  structured: True
  dispatch:
    CPU: cpu::abs_out
",
        "bad.yaml:4:5: abs: if structured_delegate, then must not have CPU in dispatch dictionary (it is delegated!)
  help: drop this row: the delegate's kernel is used",
    );
}

// ---------------------------------------------------------------------------
// Defaults.
// ---------------------------------------------------------------------------

#[test]
fn defaults_that_do_not_fit_their_type() {
    let src = "- func: f(Tensor self, int x=True, bool b=1, Tensor? t=1, str s=3, int[] d=0, ScalarType? dtype=nope) -> Tensor\n";
    expect(
        src,
        "\
bad.yaml:1:30: f: default `True` does not fit type `int` of argument `x`
  help: a default for `int` is an integer (or `Mean`/`Sum` for a reduction)
bad.yaml:1:43: f: default `1` does not fit type `bool` of argument `b`
  help: a default for `bool` is `True` or `False`
bad.yaml:1:56: f: default `1` does not fit type `Tensor?` of argument `t`
  help: `None` is the only default for `Tensor?`
bad.yaml:1:65: f: default `3` does not fit type `str` of argument `s`
  help: a default for `str` is a quoted string, e.g. `'none'`
bad.yaml:1:76: f: default `0` does not fit type `int[]` of argument `d`
  help: a default for `int[]` is a list literal without spaces, e.g. `[]` or `[0,1]` (one number fits only a sized list such as `int[2]`)
bad.yaml:1:97: f: default `nope` does not fit type `ScalarType?` of argument `dtype`
  help: a default for `ScalarType?` is a dtype name such as `long` or `float32`, or `None`",
    );
    // Each column points at the default itself.
    assert_eq!(col_of(src, 1, "True"), 30);
    assert_eq!(col_of(src, 1, "nope"), 97);

    expect(
        "- func: f(Tensor self, Tensor x=None, int[] y=[a,b], ScalarType? dtype=flaot32) -> Tensor\n",
        "\
bad.yaml:1:33: f: default `None` does not fit type `Tensor` of argument `x`
  help: only optional types default to `None`: write `Tensor?`
bad.yaml:1:47: f: default `[a,b]` of argument `y` is not a literal
  help: a default for `int[]` is a list literal without spaces, e.g. `[]` or `[0,1]` (one number fits only a sized list such as `int[2]`)
bad.yaml:1:72: f: default `flaot32` does not fit type `ScalarType?` of argument `dtype`
  help: did you mean `float32`?",
    );
    // What PyTorch writes is fine.
    expect(
        "- func: f(Tensor self, int[2] p=0, int[1]? d=None, int r=Mean, float e=1e-05, str m='none', MemoryFormat? f=contiguous_format, ScalarType? dtype=long) -> Tensor\n",
        "",
    );
}

// ---------------------------------------------------------------------------
// Inplace and out= conventions (torchgen's schema invariants).
// ---------------------------------------------------------------------------

#[test]
fn inplace_without_mutable_self() {
    expect(
        "- func: abs_(Tensor self) -> Tensor\n",
        "bad.yaml:1:14: abs_: Inplace op abs_ must have a self argument with a mutable annotation
  help: an inplace operator `foo_` takes `Tensor(a!) self` and returns `Tensor(a!)`; without the trailing `_` it is not inplace",
    );
}

#[test]
fn inplace_not_returning_self() {
    expect(
        "- func: abs_(Tensor(a!) self) -> Tensor\n",
        "bad.yaml:1:34: abs_: Inplace op abs_ with Tensor self must return self
  help: return `self` with its annotation: `-> Tensor(a!)`",
    );
    expect(
        "- func: _foreach_abs_(Tensor(a!)[] self) -> Tensor[]\n  device_check: NoCheck\n",
        "bad.yaml:1:45: _foreach_abs_: Inplace op _foreach_abs_ with non-Tensor self must have no returns
  help: write `-> ()`",
    );
}

#[test]
fn out_argument_not_after_star() {
    expect(
        "- func: abs.out(Tensor self, Tensor(a!) out) -> Tensor(a!)\n",
        "bad.yaml:1:30: abs.out: If you have a schema with mutable positional args, we expect them to not be returned. schema: abs.out(Tensor self, Tensor(a!) out) -> Tensor(a!)
  help: out arguments go after `*`, which makes them keyword-only: `foo.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)`",
    );
}

#[test]
fn non_mutable_argument_after_out() {
    expect(
        "- func: abs.out(Tensor self, *, Tensor(a!) out, int x) -> Tensor(a!)\n",
        "bad.yaml:1:49: abs.out: non-mutable argument 'x' cannot follow mutable out arguments
  help: every keyword-only argument after the first out argument must be written (`Tensor(b!) name`); move the other keyword-only arguments before the out arguments",
    );
}

#[test]
fn return_not_matching_out_annotation() {
    expect(
        "- func: abs.out(Tensor self, *, Tensor(a!) out) -> Tensor(b!)\n",
        "bad.yaml:1:52: abs.out: Out arguments must have matching return Tensor; furthermore, the ith-argument needs to correspond to the ith return. arg.annotation=a!, ret.annotation=b!
  help: return the out arguments in order, each with its argument's annotation: `(..., *, Tensor(a!) out) -> Tensor(a!)`",
    );
    expect(
        "- func: f.out(Tensor self, *, Tensor(a!) out0, Tensor(b!) out1) -> Tensor(a!)\n",
        "bad.yaml:1:68: f.out: Must return as many arguments as there are out arguments, or no return at all. Got 2 non-scratch out args and 1 returns
  help: return every out argument, in order, or write `-> ()`",
    );
    expect(
        "- func: f.out(Tensor self, *, Tensor(a!)[] out) -> Tensor(a!)[]\n",
        "bad.yaml:1:52: f.out: out= ops that accept tensor lists as out arguments are expected to have no return type (since you can't do method chaining on them)
  help: write `-> ()`",
    );
    expect(
        "- func: f(Tensor self) -> Tensor(a!)\n",
        "bad.yaml:1:27: f: All mutable returns must be aliased either to a keyword argument, or to \"self\". Did you forget to mark an out argument as keyword-only?
  help: put `*` before the out arguments, and give each mutable return the annotation of the argument it returns",
    );
}

#[test]
fn method_variant_on_out_operator() {
    expect(
        "- func: abs.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)\n  variants: function, method\n",
        "bad.yaml:2:23: abs.out: Native functions with out arguments MUST be declared with only function variant; e.g., variants: function; otherwise you will tickle a Python argument binding bug (which usually manifests itself as the result variable being undefined.)
  help: write `variants: function` (or leave `variants:` out)",
    );
}

// ---------------------------------------------------------------------------
// Dispatch tables.
// ---------------------------------------------------------------------------

#[test]
fn unknown_dispatch_key_did_you_mean() {
    expect(
        "\
- func: abs(Tensor self) -> Tensor
  dispatch:
    CPUU: cpu::abs
    Meta, cuda: meta::abs
    Foo: foo::abs
",
        "\
bad.yaml:3:5: abs: unknown dispatch key CPUU
  help: did you mean `CPU`?
bad.yaml:4:11: abs: unknown dispatch key cuda
  help: did you mean `CUDA`?
bad.yaml:5:5: abs: unknown dispatch key Foo
  help: supported keys: CPU, CUDA, MPS, XPU, MTIA, Meta, HPU, MkldnnCPU, ZeroTensor, SparseCPU, SparseCUDA, SparseMPS, SparseXPU, SparseMeta, SparseCsrCPU, SparseCsrCUDA, SparseCsrMPS, SparseCsrXPU, SparseCsrMeta, QuantizedCPU, QuantizedCUDA, QuantizedMeta, NestedTensorCPU, NestedTensorCUDA, NestedTensorXPU, NestedTensorHPU, NestedTensorMeta, CompositeImplicitAutograd, CompositeImplicitAutogradNestedTensor, CompositeExplicitAutograd, CompositeExplicitAutogradNonFunctional",
    );
}

#[test]
fn real_but_unsupported_dispatch_key() {
    expect(
        "\
- func: abs(Tensor self) -> Tensor
  dispatch:
    CPU: cpu::abs
    Autograd: autograd::abs
    BackendSelect: select::abs
",
        "\
bad.yaml:4:5: abs: Dispatch key Autograd of kernel autograd::abs is not a supported dispatch key.
  help: autograd kernels are not declared in `dispatch:`; use CompositeImplicitAutograd (autograd differentiates through the kernel) or CompositeExplicitAutograd with a derivative formula
bad.yaml:5:5: abs: Dispatch key BackendSelect of kernel select::abs is not a supported dispatch key.
  help: kernels for BackendSelect are registered by hand, not through `dispatch:`, which takes backend keys (CPU, CUDA, Meta, ...) and composite keys",
    );
}

#[test]
fn dispatch_key_given_twice() {
    expect(
        "\
- func: abs(Tensor self) -> Tensor
  dispatch:
    CPU, CUDA: cpu::abs
    Meta,CPU: meta::abs
",
        "bad.yaml:4:10: abs: dispatch key CPU appears twice (also at line 3)
  help: give each dispatch key one kernel",
    );
}

#[test]
fn kernel_names_that_are_not_rust_paths() {
    expect(
        "\
- func: abs(Tensor self) -> Tensor
  dispatch:
    CPU: cpu:add
    CUDA: 1abc
    Meta: \"a::\"
    MPS: a b
",
        "\
bad.yaml:3:10: abs: kernel name `cpu:add` is not a Rust path
  help: did you mean `cpu::add`?
bad.yaml:4:11: abs: kernel name `1abc` is not a Rust path
  help: write identifiers separated by `::`, e.g. `cpu::add_Tensor`
bad.yaml:5:12: abs: kernel name `a::` is not a Rust path
  help: write identifiers separated by `::`, e.g. `cpu::add_Tensor`
bad.yaml:6:10: abs: kernel name `a b` is not a Rust path
  help: write identifiers separated by `::`, e.g. `cpu::add_Tensor`",
    );
}

#[test]
fn more_than_one_composite_key() {
    let msg = "cannot specify more than one of CompositeExplicitAutograd, CompositeExplicitAutogradNonFunctional, or CompositeImplicitAutograd on a single kernel; each strictly subsumes the other.  If you wanted to provide an explicit autograd implementation, specify CompositeExplicitAutograd; otherwise specify CompositeImplicitAutograd only";
    expect(
        "\
- func: abs(Tensor self) -> Tensor
  dispatch:
    CompositeExplicitAutograd: composite::abs
    CompositeImplicitAutograd: abs
",
        &format!("bad.yaml:4:5: abs: {msg}
  help: keep one composite key (this entry has CompositeExplicitAutograd, CompositeImplicitAutograd)"),
    );
    // torchgen: CompositeImplicitAutogradNestedTensor may join one other composite key,
    // unless that key is CompositeExplicitAutogradNonFunctional.
    expect(
        "\
- func: abs(Tensor self) -> Tensor
  dispatch:
    CompositeExplicitAutogradNonFunctional: composite::abs
    CompositeImplicitAutogradNestedTensor: nested::abs
",
        &format!("bad.yaml:4:5: abs: {msg}
  help: keep one composite key (this entry has CompositeExplicitAutogradNonFunctional, CompositeImplicitAutogradNestedTensor)"),
    );
    expect(
        "\
- func: abs(Tensor self) -> Tensor
  dispatch:
    CompositeImplicitAutograd: abs_impl
    CompositeImplicitAutogradNestedTensor: nested::abs
",
        "",
    );
}

#[test]
fn manual_kernel_registration_with_dispatch() {
    expect(
        "\
- func: abs(Tensor self) -> Tensor
  manual_kernel_registration: True
  dispatch:
    CPU: cpu::abs
",
        "bad.yaml:2: abs: cannot specify both manual_kernel_registration and dispatch; with manual registration, dispatch has no effect!
  help: drop `dispatch:`, or drop `manual_kernel_registration: True`",
    );
}

#[test]
fn factory_function_without_dispatch() {
    let tail = "dispatch entry, but there was no dispatch table.  Factory functions should not have implicit dispatch as they should not be decomposed for __torch_dispatch__
  help: add `dispatch:` with a row `CompositeExplicitAutograd: <kernel>` (or backend rows such as `CPU: <kernel>`)";
    expect(
        "- func: new_thing(Tensor self) -> Tensor\n",
        &format!("bad.yaml:1:9: new_thing: expected new_thing to have a CompositeExplicitAutograd {tail}"),
    );
    expect(
        "- func: thing_like(Tensor self) -> Tensor\n",
        &format!("bad.yaml:1:9: thing_like: expected thing_like to have a CompositeExplicitAutograd {tail}"),
    );
    expect(
        "- func: zeros(int[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor\n",
        &format!("bad.yaml:1:9: zeros: expected zeros to have a CompositeExplicitAutograd {tail}"),
    );
}

#[test]
fn singleton_composite_implicit_dispatch_entry() {
    expect(
        "- func: abs(Tensor self) -> Tensor\n  dispatch:\n    CompositeImplicitAutograd: abs\n",
        "bad.yaml:3:32: abs: unnecessary dispatch table for this function; just delete the dispatch key entirely
  help: `CompositeImplicitAutograd: abs` is what an entry without `dispatch:` gets",
    );
    expect(
        "- func: abs(Tensor self) -> Tensor\n  dispatch:\n    CompositeImplicitAutograd: composite::abs\n",
        "bad.yaml:3:32: abs: unexpected name for singleton CompositeImplicitAutograd dispatch entry: expected abs but got composite::abs.  Rename your implementation to the expected name, then delete the dispatch table
  help: an entry without `dispatch:` is CompositeImplicitAutograd with kernel `abs`",
    );
    // out= operators are named `<name>_out` in C++.
    expect(
        "- func: abs.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)\n  dispatch:\n    CompositeImplicitAutograd: abs_out\n",
        "bad.yaml:3:32: abs.out: unnecessary dispatch table for this function; just delete the dispatch key entirely
  help: `CompositeImplicitAutograd: abs_out` is what an entry without `dispatch:` gets",
    );
    // torchgen allows a `_symint` kernel, and more than one key.
    expect(
        "- func: abs(Tensor self) -> Tensor\n  dispatch:\n    CompositeImplicitAutograd: abs_symint\n",
        "",
    );
    expect(
        "- func: abs(Tensor self) -> Tensor\n  dispatch:\n    CompositeImplicitAutograd, Meta: abs\n",
        "",
    );
}

// ---------------------------------------------------------------------------
// Tags.
// ---------------------------------------------------------------------------

#[test]
fn unknown_tag_against_tags_yaml() {
    expect(
        "- func: abs(Tensor self) -> Tensor\n  tags: [core, pointwse]\n",
        "bad.yaml:2:16: abs: illegal tag pointwse
  help: did you mean `pointwise`? (tags are declared in tags.yaml)",
    );
    expect(
        "- func: abs(Tensor self) -> Tensor\n  tags:\n  - core\n  - nope\n",
        "bad.yaml:4:5: abs: illegal tag nope
  help: tags are declared in tags.yaml beside the schema file",
    );
    expect(
        "- func: abs(Tensor self) -> Tensor\n  tags: Core\n",
        "bad.yaml:2:9: abs: illegal tag Core
  help: did you mean `core`? (tags are declared in tags.yaml)",
    );
    // torchgen: a string is one tag; it is not split on commas.
    expect(
        "- func: abs(Tensor self) -> Tensor\n  tags: core, pointwise\n",
        "bad.yaml:2:9: abs: illegal tag core, pointwise
  help: a string is one tag; write several as a list: `tags: [core, pointwise]`",
    );
}

#[test]
fn missing_nondeterministic_seeded_tag() {
    expect(
        "\
- func: rand_thing(Tensor self) -> Tensor
- func: bernoulli.p(Tensor self, float p, *, Generator? generator=None) -> Tensor
  tags: core
- func: feature_dropout(Tensor input, float p, bool train) -> Tensor
- func: thing(Tensor self, float dropout_p) -> Tensor
",
        "\
bad.yaml:1:9: rand_thing: nondeterministic_seeded tag missing for rand_thing
  help: add `tags: nondeterministic_seeded`
bad.yaml:3: bernoulli.p: nondeterministic_seeded tag missing for bernoulli.p
  help: add `nondeterministic_seeded` to `tags:`
bad.yaml:4:9: feature_dropout: nondeterministic_seeded tag missing for feature_dropout
  help: add `tags: nondeterministic_seeded`
bad.yaml:5:9: thing: nondeterministic_seeded tag missing for thing
  help: add `tags: nondeterministic_seeded`",
    );
    // Exempt: dropout backwards, philox, and anything tagged.
    expect(
        "\
- func: native_dropout_backward(Tensor grad_output, Tensor mask, float scale) -> Tensor
- func: _fill_mem_eff_dropout_mask_backward(Tensor self, float dropout_p) -> Tensor
- func: rand_like(Tensor self) -> Tensor
  dispatch:
    CompositeExplicitAutograd: rand_like
  tags: nondeterministic_seeded
",
        "",
    );
}

#[test]
fn inplace_view_tag() {
    expect(
        "- func: squeeze(Tensor(a) self) -> Tensor(a)\n  tags: [core, inplace_view]\n",
        "bad.yaml:2:16: squeeze: squeeze is marked with tag: inplace_view, but it doesn't follow the naming convention for inplace ops - the codegen expects the base name to have a trailing underscore.
  help: inplace_view is for inplace operators (`foo_`) that change only their `self`'s metadata; rename the operator or drop the tag",
    );
    expect(
        "- func: squeeze_.dim(Tensor(a!) self, int dim) -> Tensor(a!)\n  tags: inplace_view\n",
        "bad.yaml:2:9: squeeze_.dim: squeeze_.dim is marked with tag: inplace_view. The codegen expects there to be a corresponding out-of-place view op with the name 'squeeze_' and matching schema, but it didn't find one.
  help: add the out-of-place view operator `squeeze`, or drop the tag",
    );
    // Fine: the out-of-place op exists (any overload), and torchgen's exemptions.
    expect(
        "\
- func: squeeze(Tensor(a) self) -> Tensor(a)
- func: squeeze_.dim(Tensor(a!) self, int dim) -> Tensor(a!)
  tags: inplace_view
- func: resize_(Tensor(a!) self, SymInt[] size) -> Tensor(a!)
  dispatch:
    CPU: cpu::resize_
  tags: inplace_view
",
        "",
    );
}

// ---------------------------------------------------------------------------
// Entry keys and their values.
// ---------------------------------------------------------------------------

#[test]
fn unknown_entry_key() {
    expect(
        "- func: abs(Tensor self) -> Tensor\n  dispach:\n    CPU: cpu::abs\n",
        "bad.yaml:2:3: abs: unknown key `dispach`
  help: did you mean `dispatch`?",
    );
    expect(
        "- func: abs(Tensor self) -> Tensor\n  colour: blue\n",
        "bad.yaml:2:3: abs: unknown key `colour`
  help: known keys: func, variants, dispatch, structured, structured_delegate, structured_inherits, precomputed, device_check, device_guard, python_module, category_override, tags, autogen, cpp_no_default_args, manual_cpp_binding, manual_kernel_registration, use_const_ref_for_mutable_tensors, ufunc_inner_loop",
    );
}

#[test]
fn missing_func() {
    expect(
        "- func: abs(Tensor self) -> Tensor\n- variants: function\n  dispatch:\n    CPU: cpu::x\n",
        "bad.yaml:2: missing `func:` key (found variants, dispatch)
  help: every entry needs a schema, e.g. `- func: neg(Tensor self) -> Tensor`",
    );
    expect(
        "- func:\n",
        "bad.yaml:1: `func:` must be a schema string, found nothing (an empty value)
  help: write the schema after `func:`, e.g. `- func: neg(Tensor self) -> Tensor`",
    );
    expect(
        "- func: \"\"\n",
        "bad.yaml:1:10: `func:` is empty
  help: write the schema after `func:`, e.g. `- func: neg(Tensor self) -> Tensor`",
    );
    expect(
        "- func: [abs]\n",
        "bad.yaml:1:9: `func:` must be a schema string, found a list
  help: write the schema after `func:`, e.g. `- func: neg(Tensor self) -> Tensor`",
    );
}

#[test]
fn wrong_value_types() {
    expect(
        "\
- func: abs(Tensor self) -> Tensor
  structured: maybe
  variants: 3
  dispatch: foo
  tags: [1]
  cpp_no_default_args: dim
  device_guard: no
",
        "\
bad.yaml:2:15: abs: `structured:` must be True or False, found the string `maybe`
  help: write `structured: True` or `structured: False`
bad.yaml:3:13: abs: `variants:` must be a string, found the number `3`
  help: write `variants: function`, `variants: method` or `variants: function, method`
bad.yaml:4:13: abs: `dispatch:` must be a mapping of dispatch keys to kernel names, found the string `foo`
  help: write `dispatch:` and under it one indented `KEY: kernel` row per dispatch key, e.g. `    CPU: cpu::add_Tensor`
bad.yaml:5:9: abs: `tags:` must be a tag or a list of tags, found the number `1` in the list
  help: write one tag (`tags: core`) or a list (`tags: [core, pointwise]`)
bad.yaml:6:24: abs: `cpp_no_default_args:` must be a list of argument names, found the string `dim`
  help: write a list of argument names: `cpp_no_default_args: ['dim']`
bad.yaml:7:17: abs: `device_guard:` must be True or False, found the string `no`
  help: write `device_guard: True` or `device_guard: False`",
    );
    expect(
        "\
- func: abs(Tensor self) -> Tensor
  dispatch:
    CPU:
    Meta: [meta::abs]
",
        "\
bad.yaml:3: abs: kernel for `CPU` must be a name, found nothing (an empty value)
  help: write `CPU: <kernel path>`, e.g. `CPU: cpu::add_Tensor`
bad.yaml:4:11: abs: kernel for `Meta` must be a name, found a list
  help: write `Meta: <kernel path>`, e.g. `Meta: cpu::add_Tensor`",
    );
}

#[test]
fn illegal_variant() {
    expect(
        "- func: abs(Tensor self) -> Tensor\n  variants: function, methods\n",
        "bad.yaml:2:23: abs: illegal variant methods
  help: did you mean `method`?",
    );
    expect(
        "- func: abs(Tensor self) -> Tensor\n  variants: function,method\n",
        "bad.yaml:2:13: abs: illegal variant function,method
  help: separate variants with `, ` (a comma and one space)",
    );
    expect(
        "- func: abs(Tensor self) -> Tensor\n  variants: operator\n",
        "bad.yaml:2:13: abs: illegal variant operator
  help: variants are `function`, `method` or `function, method`",
    );
}

#[test]
fn python_module_and_method() {
    expect(
        "- func: abs(Tensor self) -> Tensor\n  python_module: nn\n  variants: function, method\n",
        "bad.yaml:3:23: abs: functions in modules cannot be methods
  help: drop `method` from `variants:`, or drop `python_module:`",
    );
    expect(
        "- func: abs(Tensor self) -> Tensor\n  python_module: nnn\n",
        "bad.yaml:2:18: abs: unknown python_module nnn
  help: use one of nn, special, linalg, fft, sparse, nested",
    );
}

#[test]
fn structured_rules() {
    expect(
        "- func: abs(Tensor self) -> Tensor\n  structured: True\n  dispatch:\n    CPU: cpu::abs\n",
        "bad.yaml:2: abs: Put structured field on the out= variant of a function; did you mean structured_delegate?
  help: `structured: True` goes on the out= overload (`abs.out`); other overloads point at it with `structured_delegate: abs.out`",
    );
    expect(
        "- func: abs.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)\n  structured_delegate: abs.out\n",
        "bad.yaml:2: abs.out: structured_delegate field not allowed on out= functions; did you mean structured?
  help: write `structured: True` on the out= overload instead",
    );
    expect(
        "- func: abs(Tensor self) -> Tensor\n  precomputed:\n  - dim -> int dim\n",
        "bad.yaml:2: abs: precomputed requires structured=True, got structured=False
  help: add `structured: True` (precomputed values are computed by the structured meta function)",
    );
    expect(
        "- func: abs.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)\n  structured_inherits: TensorIteratorBase\n  dispatch:\n    CPU: cpu::abs_out\n",
        "bad.yaml:2: abs.out: structured_inherits must also imply structured: True
  help: add `structured: True`, or drop `structured_inherits:`",
    );
    expect(
        "\
- func: add.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)
  structured: True
  device_guard: False
  ufunc_inner_loop:
    Generic: add (AllAndComplex, BFloat16, Half)
  dispatch:
    CPU: cpu::add_out
",
        "\
bad.yaml:3: add.out: device_guard: False is not respected by structured kernels
  help: drop `device_guard: False`
bad.yaml:7:5: add.out: ufunc should not have explicit dispatch entry for CPU
  help: the ufunc_inner_loop generates the CPU and CUDA kernels; drop this row",
    );
    expect(
        "- func: add.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)\n  ufunc_inner_loop: add (AllAndComplex)\n  dispatch:\n    Meta: meta::add_out\n",
        "bad.yaml:2: add.out: ufunc must be structured
  help: add `structured: True`",
    );
}

#[test]
fn device_check_values() {
    expect(
        "- func: abs(Tensor self) -> Tensor\n  device_check: Maybe\n",
        "bad.yaml:2:17: abs: illegal device_check: Maybe
  help: use `NoCheck` or `ExactSame` (the default)",
    );
    expect(
        "- func: abs(Tensor self) -> Tensor\n  device_check: nocheck\n",
        "bad.yaml:2:17: abs: illegal device_check: nocheck
  help: did you mean `NoCheck`?",
    );
    expect(
        "- func: _foreach_abs(Tensor[] self) -> Tensor[]\n",
        "bad.yaml:1:9: _foreach_abs: foreach kernels fall back to slow path when tensor are on different devices, device_check not allowed to be enabled
  help: add `device_check: NoCheck`",
    );
}

#[test]
fn cpp_no_default_args_without_default() {
    expect(
        "- func: sum.dim(Tensor self, int[1]? dim, bool keepdim=False) -> Tensor\n  cpp_no_default_args: ['keepdim', 'dim']\n",
        "bad.yaml:2:37: sum.dim: Invalid cpp_no_default_args: {'dim'}
  help: `dim` has no default in the schema; list only arguments written `Type name=default`",
    );
    expect(
        "- func: sum.dim(Tensor self, int[1]? dim, bool keepdim=False) -> Tensor\n  cpp_no_default_args: ['keepdm']\n",
        "bad.yaml:2:26: sum.dim: Invalid cpp_no_default_args: {'keepdm'}
  help: `keepdm` is not an argument; did you mean `keepdim`?",
    );
}

#[test]
fn use_const_ref_on_out_operator() {
    expect(
        "- func: abs.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)\n  use_const_ref_for_mutable_tensors: True\n",
        "bad.yaml:2: abs.out: use_const_ref_for_mutable_tensors is not allowed on out= functions (see https://github.com/pytorch/pytorch/issues/145522)
  help: drop `use_const_ref_for_mutable_tensors:`",
    );
}

#[test]
fn python_keyword_argument_name() {
    expect(
        "- func: clamp(Tensor self, Scalar from, Scalar? to=None) -> Tensor\n",
        "bad.yaml:1:35: clamp: Argument name 'from' in function 'clamp' is a reserved Python keyword.
  help: rename the argument (e.g. `from_`)",
    );
    // PyTorch's own exceptions.
    expect(
        "- func: random_.from(Tensor(a!) self, int from, int? to, *, Generator? generator=None) -> Tensor(a!)\n  tags: nondeterministic_seeded\n",
        "",
    );
}

// ---------------------------------------------------------------------------
// Many problems at once.
// ---------------------------------------------------------------------------

#[test]
fn every_problem_is_reported_in_line_order() {
    // Validation: a cross-entry problem (line 2) and per-entry ones, across entries.
    expect(
        "\
- func: abs(Tensor self) -> Tensor
  structured_delegate: abs.uot
- func: abs.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
  structured: True
  variants: method
  dispatch:
    CPUU: cpu::abs_out
  tags: nope
- func: abs_(Tensor self) -> Tensor
",
        "\
bad.yaml:2:24: abs: abs is marked as a structured_delegate pointing to abs.uot, but abs.uot is missing.
  help: did you mean `abs.out`?
bad.yaml:5:13: abs.out: Native functions with out arguments MUST be declared with only function variant; e.g., variants: function; otherwise you will tickle a Python argument binding bug (which usually manifests itself as the result variable being undefined.)
  help: write `variants: function` (or leave `variants:` out)
bad.yaml:7:5: abs.out: unknown dispatch key CPUU
  help: did you mean `CPU`?
bad.yaml:8:9: abs.out: illegal tag nope
  help: tags are declared in tags.yaml beside the schema file
bad.yaml:9:14: abs_: Inplace op abs_ must have a self argument with a mutable annotation
  help: an inplace operator `foo_` takes `Tensor(a!) self` and returns `Tensor(a!)`; without the trailing `_` it is not inplace",
    );
    // Loading: every entry's problems, not just the first entry's.
    expect(
        "\
- func: abs(Tensor self) -> Tensr
  structured: maybe
- func: neg(Tensor self) -> Tensor
  dispach:
    CPU: cpu::neg
- variants: method
",
        "\
bad.yaml:1:29: abs: malformed schema: unrecognized type Tensr
  help: did you mean `Tensor`?
bad.yaml:2:15: abs: `structured:` must be True or False, found the string `maybe`
  help: write `structured: True` or `structured: False`
bad.yaml:4:3: neg: unknown key `dispach`
  help: did you mean `dispatch`?
bad.yaml:6: missing `func:` key (found variants)
  help: every entry needs a schema, e.g. `- func: neg(Tensor self) -> Tensor`",
    );
}

// ---------------------------------------------------------------------------
// Malformed YAML: YAML's own line and column.
// ---------------------------------------------------------------------------

#[test]
fn malformed_yaml() {
    let indent = "check the indentation: an entry's keys line up under `func:` (two spaces in), and dispatch rows are indented under `dispatch:`";
    expect(
        "- func: abs(Tensor self) -> Tensor\n   variants: function\n",
        &format!("bad.yaml:2:12: malformed YAML: mapping values are not allowed in this context\n  help: {indent}"),
    );
    expect(
        "- func: abs(Tensor self) -> Tensor\n  dispatch:\n    CPU: cpu::abs\n   Meta: meta::abs\n",
        &format!("bad.yaml:4:4: malformed YAML: did not find expected key, while parsing a block mapping at line 1 column 3\n  help: {indent}"),
    );
    expect(
        "- func: abs(Tensor self) -> Tensor\n  dispatch:\n    Meta: a::b:\n",
        "bad.yaml:3:15: malformed YAML: mapping values are not allowed in this context
  help: a value that contains `: ` or ends with `:` must be quoted",
    );
    expect(
        "- func: \"abs(Tensor self) -> Tensor\n  variants: function\n",
        "bad.yaml:3:1: malformed YAML: found unexpected end of stream, while scanning a quoted scalar at line 1 column 9
  help: a quoted value must end with the same quote; check for a missing closing quote",
    );
    expect(
        "- func: abs(Tensor self) -> Tensor\n  tags: [core, pointwise\n- func: neg(Tensor self) -> Tensor\n",
        "bad.yaml:3:7: malformed YAML: did not find expected ',' or ']', while parsing a flow sequence at line 2 column 9
  help: a `[` list or `{` mapping must be closed; check for a missing `]` or `}`",
    );
    expect(
        "- func: abs(Tensor self) -> Tensor\n\tvariants: function\n",
        "bad.yaml:2:1: malformed YAML: found a tab character that violates indentation, while scanning a plain scalar at line 1 column 9
  help: YAML does not allow tabs for indentation; indent with spaces",
    );
    expect(
        "- func: abs(Tensor self) -> Tensor\n  variants: method\n  func: neg(Tensor self) -> Tensor\n",
        "bad.yaml:3:3: malformed YAML: duplicate key `func` (first at line 1)
  help: each key may appear only once per entry, and each dispatch key once per table",
    );
    expect(
        "- func: abs(Tensor self) -> Tensor\n  dispatch:\n    CPU: cpu::a\n    CPU: cpu::b\n",
        "bad.yaml:4:5: malformed YAML: duplicate key `CPU` (first at line 3)
  help: each key may appear only once per entry, and each dispatch key once per table",
    );
    expect(
        "- func: abs(Tensor self) -> Tensor\n---\n- func: neg(Tensor self) -> Tensor\n",
        "bad.yaml:2: malformed YAML: deserializing from YAML containing more than one document is not supported
  help: a schema file is one YAML document; remove the `---` or `...` line",
    );
}

#[test]
fn top_level_and_entry_shapes() {
    expect(
        "func: abs(Tensor self) -> Tensor\n",
        "bad.yaml:1: expected a list of operator entries at the top level, found a mapping
  help: the file is a list: start every entry with `- `, e.g. `- func: neg(Tensor self) -> Tensor`",
    );
    expect(
        "# comment\n42\n",
        "bad.yaml:2: expected a list of operator entries at the top level, found the number `42`
  help: the file is a list: start every entry with `- `, e.g. `- func: neg(Tensor self) -> Tensor`",
    );
    expect(
        "- func: abs(Tensor self) -> Tensor\n- abs(Tensor self) -> Tensor\n- - func: neg(Tensor self) -> Tensor\n-\n",
        "\
bad.yaml:2: expected an entry mapping (`- func: ...`), found the string `abs(Tensor self) -> Tensor`
  help: each entry is a mapping that starts with its schema: `- func: neg(Tensor self) -> Tensor`
bad.yaml:3: expected an entry mapping (`- func: ...`), found a list
  help: each entry is a mapping that starts with its schema: `- func: neg(Tensor self) -> Tensor`
bad.yaml:4: expected an entry mapping (`- func: ...`), found nothing (an empty value)
  help: each entry is a mapping that starts with its schema: `- func: neg(Tensor self) -> Tensor`",
    );
    // An indented top-level list still gets its lines.
    expect(
        "  - func: abs(Tensor self) -> Tensor\n    tags: nope\n",
        "bad.yaml:2:11: abs: illegal tag nope
  help: tags are declared in tags.yaml beside the schema file",
    );
    // Empty files are fine.
    expect("", "");
    expect("# nothing yet\n", "");
}

#[test]
fn tags_yaml_errors() {
    let e = load::load_tags_str("tags.yaml", "- tag: core\n- desc: no tag\n").unwrap_err();
    assert_eq!(
        e.to_string().trim_end(),
        "tags.yaml:2: expected `- tag: NAME`, found a mapping
  help: tags.yaml is a list of `- tag: NAME` entries (each with a `desc:`)"
    );
    let e = load::load_tags_str("tags.yaml", "tag: core\n").unwrap_err();
    assert_eq!(
        e.to_string().trim_end(),
        "tags.yaml:1: expected a list of tags at the top level, found a mapping
  help: tags.yaml is a list of `- tag: NAME` entries (each with a `desc:`)"
    );
}

#[test]
fn rendering() {
    let d = Diagnostic::new("f.yaml", 3, "bad thing")
        .entry("add.Tensor")
        .column(7)
        .help("do this");
    assert_eq!(
        d.to_string(),
        "f.yaml:3:7: add.Tensor: bad thing\n  help: do this"
    );
    assert_eq!(
        Diagnostic::new("f.yaml", 0, "cannot read").to_string(),
        "f.yaml:0: cannot read"
    );
}

// ---------------------------------------------------------------------------
// Adversarial input: always Ok or Err, never a panic.
// ---------------------------------------------------------------------------

#[test]
fn adversarial_input_never_panics() {
    let long_name = format!("- func: {}(Tensor self) -> Tensor", "a".repeat(10_000));
    let deep = format!(
        "- func: a() -> ()\n  dispatch: {}{}",
        "[".repeat(500),
        "]".repeat(500)
    );
    let many_args = format!(
        "- func: a({}) -> ()",
        (0..500)
            .map(|i| format!("Tensor t{i}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let cases: Vec<&str> = vec![
        "",
        "\n\n\n",
        "-",
        "- ",
        "- func:",
        "- func: \"\"",
        "- func: (",
        "- func: )",
        "- func: a(",
        "- func: a)",
        "- func: ->",
        "- func: a -> b",
        "- func: a() ->",
        "- func: a() -> ",
        "- func: a() -> ()",
        "- func: a() -> (",
        "- func: a() -> )",
        "- func: a(,) -> ()",
        "- func: a(, , ,) -> ()",
        "- func: a(*) -> ()",
        "- func: a(*, *) -> ()",
        "- func: a(Tensor) -> Tensor",
        "- func: a(Tensor x=) -> Tensor",
        "- func: a(Tensor x==1) -> Tensor",
        "- func: a(Tensor( self) -> Tensor",
        "- func: a(Tensor() self) -> Tensor",
        "- func: a(Tensor(a!)(b!) self) -> Tensor",
        "- func: a(int[99999999999999999999] x) -> ()",
        "- func: a(int[] x=[) -> ()",
        "- func: a(str s=\"unterminated) -> ()",
        "- func: a(str s='\\') -> ()",
        "- func: ü(Tensor self) -> Tensor",
        "- func: aé(Tensor é, Tensor ü=é) -> Tensor(é)",
        "- func: 数(张量 自) -> 张量",
        "- func: a(Tensor self) -> Tensor 🦀",
        "- func: a.(Tensor self) -> Tensor",
        "- func: .a(Tensor self) -> Tensor",
        "- func: ::a(Tensor self) -> Tensor",
        "- func: a::(Tensor self) -> Tensor",
        "- func: __i__(Tensor self) -> Tensor",
        "- func: ____(Tensor self) -> Tensor",
        "- func: _(Tensor self) -> Tensor",
        "- func: a_functional_(Tensor(a!) self) -> Tensor(a!)",
        "- func: a(Tensor self) -> (Tensor a, Tensor)",
        "- func: a(Tensor self) -> Tensor(a -> *)",
        "- func: a(Tensor(a -> ) self) -> Tensor",
        "- func: a(Tensor(a|) self) -> Tensor",
        "- func: a.out(*, Tensor(a!) out) -> Tensor(a!)\n  structured_delegate: a.out",
        "- func: a(Tensor self) -> Tensor\n  dispatch:\n    ',': x",
        "- func: a(Tensor self) -> Tensor\n  dispatch:\n    '': ''",
        "- func: a(Tensor self) -> Tensor\n  dispatch: {}",
        "- func: a(Tensor self) -> Tensor\n  dispatch: ~",
        "- func: a(Tensor self) -> Tensor\n  tags: []",
        "- func: a(Tensor self) -> Tensor\n  tags: ''",
        "- func: a(Tensor self) -> Tensor\n  variants: ''",
        "- func: a(Tensor self) -> Tensor\n  autogen: ''",
        "- func: a(Tensor self) -> Tensor\n  cpp_no_default_args: [[]]",
        "- func: a(Tensor self) -> Tensor\n  ufunc_inner_loop: {1: 2}",
        "- func: a(Tensor self) -> Tensor\n  ? [complex, key]\n  : value",
        "- func: a(Tensor self) -> Tensor\n  <<: {variants: method}",
        "- func: !!binary aGVsbG8=",
        "- func: !custom a(Tensor self) -> Tensor",
        "- &a func: x\n- *a",
        "- *undefined",
        "[[[[[[[[[[",
        "{{{{",
        "'",
        "\"",
        "- '",
        ":",
        "- :",
        "- func: a(Tensor self) -> Tensor\n\t",
        "\u{feff}- func: a(Tensor self) -> Tensor",
        "- func: a(Tensor self) -> Tensor\r\n  tags: nope\r\n",
        "\0",
        "---\n...\n---",
        "%YAML 1.2\n---\n- func: a() -> ()",
        &long_name,
        &deep,
        &many_args,
    ];
    for src in cases {
        let out = std::panic::catch_unwind(|| check(src));
        assert!(out.is_ok(), "panicked on {src:?}");
        // Whatever is reported names the file and a line.
        for line in out.unwrap().lines().filter(|l| !l.starts_with("  help: ")) {
            assert!(line.starts_with("bad.yaml:"), "{src:?} printed {line:?}");
        }
    }
}

// ---------------------------------------------------------------------------
// Suggestions.
// ---------------------------------------------------------------------------

#[test]
fn suggestions_are_near_or_absent() {
    use opforge_schema::diag::nearest;
    let keys = ["CPU", "CUDA", "Meta", "MPS", "XPU"];
    assert_eq!(nearest("CPUU", keys.into_iter()), Some("CPU"));
    assert_eq!(nearest("cuda", keys.into_iter()), Some("CUDA"));
    assert_eq!(nearest("meta", keys.into_iter()), Some("Meta"));
    assert_eq!(nearest("Autograd", keys.into_iter()), None);
    assert_eq!(nearest("Foo", ["bool", "str", "int"].into_iter()), None);
    assert_eq!(
        nearest("Tnesor", ["Tensor", "str"].into_iter()),
        Some("Tensor")
    );
    assert_eq!(opforge_schema::diag::edit_distance("ab", "ba"), 1);
    assert_eq!(opforge_schema::diag::edit_distance("kitten", "sitting"), 3);
    assert_eq!(opforge_schema::diag::edit_distance("", "abc"), 3);
}
