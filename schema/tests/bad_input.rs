//! Hostile and absurd input: each case used to crash the process, hang, or pass
//! validation and then break the generator or a call. Each must now be an `Err`
//! whose message names the problem (and the limit, where one applies) and the
//! place (`file:line:col` through the loader, a column through `parse_schema`).
//!
//! The recursion cases run on a 2 MiB thread, the stack a user's worker thread
//! may have; they hold in debug builds too (no reliance on optimisation or on
//! overflow checks).

use opforge_schema::diag::Diagnostics;
use opforge_schema::load;
use opforge_schema::model::DefaultValue;
use opforge_schema::schema::{check_invariants, parse_schema, MAX_LIST_SIZE, MAX_TYPE_DEPTH};

/// Runs `f` on a thread with a 2 MiB stack.
fn on_small_stack<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    std::thread::scope(|s| {
        std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn_scoped(s, f)
            .expect("spawn")
            .join()
            .expect("no panic, no overflow")
    })
}

/// Load + validate, as `opforge-codegen check` does (no tags file).
fn check(src: &str) -> Result<load::SchemaFile, Diagnostics> {
    opforge_schema::check_str("bad.yaml", src, None)
}

/// The one diagnostic of a failed check, printed.
#[track_caller]
fn one_error(src: &str) -> String {
    let d = check(src).expect_err("must be rejected");
    assert_eq!(d.0.len(), 1, "{d}");
    d.0[0].to_string()
}

/// A schema whose one argument has type `ty` (and default `default`, if any).
fn schema_with(ty: &str, default: Option<&str>) -> String {
    match default {
        Some(d) => format!("f(Tensor self, {ty} x={d}) -> Tensor"),
        None => format!("f(Tensor self, {ty} x) -> Tensor"),
    }
}

// ---------------------------------------------------------------------------
// 1. Deep nesting: types, defaults, printing, on a small stack.
// ---------------------------------------------------------------------------

#[test]
fn nested_default_is_rejected_without_recursion() {
    // 11,406 levels overflowed an 8 MiB stack; 2,883 a 2 MiB one.
    let depth = 11_406;
    let default = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
    let schema = schema_with("int[]", Some(&default));
    let src = format!("- func: {schema}\n");
    let (parsed, printed) = on_small_stack(|| {
        let s = parse_schema(&schema).expect("a default is any text to the parser");
        let printed = s.to_string();
        (s, printed)
    });
    assert_eq!(printed, schema);
    // Not a literal: list defaults hold numbers and bools, not lists.
    assert_eq!(
        parsed.arguments.all[1].default.as_ref().unwrap().value,
        None
    );
    let e = on_small_stack(|| one_error(&src));
    assert!(e.starts_with("bad.yaml:1:32: f: default `[[[["), "{e}");
    assert!(e.contains("of argument `x` is not a literal"), "{e}");
    assert!(
        e.contains("a list default holds numbers or bools, not lists"),
        "{e}"
    );
    // The message does not repeat 22 KB of brackets.
    assert!(e.len() < 400, "{} bytes: {e}", e.len());

    // A long flat list is fine, on a small stack too.
    let flat = format!("[{}]", vec!["1"; 100_000].join(","));
    let v = on_small_stack(|| DefaultValue::parse(&flat));
    assert!(matches!(v, Some(DefaultValue::List(xs)) if xs.len() == 100_000));
}

#[test]
fn repeated_list_suffix_is_rejected_at_the_depth_limit() {
    // `Tensor[][]…` 32,851 times overflowed an 8 MiB stack.
    let ty = format!("Tensor{}", "[]".repeat(32_851));
    let e = on_small_stack(|| parse_schema(&schema_with(&ty, None))).unwrap_err();
    assert_eq!(e.column, 16, "{e}");
    assert!(
        e.message
            .contains(&format!("nested deeper than {MAX_TYPE_DEPTH} levels")),
        "{e}"
    );
    // Through the loader: file, line and column of the type.
    let src = format!("- func: {}\n", schema_with(&ty, None));
    let e = on_small_stack(|| one_error(&src));
    assert!(
        e.starts_with("bad.yaml:1:24: f: malformed schema: type `Tensor[][][]"),
        "{e}"
    );
    assert!(e.len() < 600, "{} bytes: {e}", e.len());
}

#[test]
fn type_depth_limit_holds_just_under_and_just_over_on_a_small_stack() {
    for suffix in ["[]", "?[]", "[3]?"] {
        // Wrappers: `[]` is one, `?[]` two, `[3]?` two.
        let per = if suffix == "[]" { 1 } else { 2 };
        let n = MAX_TYPE_DEPTH / per;
        let under = format!("int{}", suffix.repeat(n));
        let over = format!("int{}", suffix.repeat(n + 1));
        let (ok, err) = on_small_stack(|| {
            let ok = parse_schema(&schema_with(&under, None)).map(|s| {
                let printed = s.to_string();
                let inv = check_invariants(&s);
                (printed, inv)
            });
            (ok, parse_schema(&schema_with(&over, None)))
        });
        let (printed, inv) = ok.unwrap_or_else(|e| panic!("{under}: {e}"));
        assert_eq!(printed, schema_with(&under, None));
        assert_eq!(inv, Ok(()));
        let e = err.unwrap_err();
        assert!(e.message.contains("nested deeper than"), "{over}: {e}");
        // Validation of the deepest accepted type, on the same small stack.
        let src = format!("- func: {}\n", schema_with(&under, None));
        on_small_stack(|| check(&src)).unwrap_or_else(|d| panic!("{d}"));
    }
}

// ---------------------------------------------------------------------------
// 2. What the parser binds: names, duplicates, sizes.
// ---------------------------------------------------------------------------

#[test]
fn operator_name_starting_with_a_digit_is_rejected_with_its_place() {
    let e = parse_schema("9abs(Tensor self) -> Tensor").unwrap_err();
    assert_eq!(e.column, 1);
    assert!(e.message.contains("invalid operator name `9abs`"), "{e}");
    assert!(e.message.contains("must start with a letter or `_`"), "{e}");
    let e = one_error("- func: abs(Tensor self) -> Tensor\n- func: 9abs(Tensor self) -> Tensor\n");
    assert!(
        e.starts_with("bad.yaml:2:9: 9abs: malformed schema: invalid operator name `9abs`"),
        "{e}"
    );
    // Namespaces and overloads: a namespace is an identifier; an overload may
    // start with a digit (`foo.2d`), it is never emitted on its own.
    assert!(parse_schema("9ns::abs(Tensor self) -> Tensor").is_err());
    assert!(parse_schema("abs.2d(Tensor self) -> Tensor").is_ok());
}

#[test]
fn duplicate_argument_names_are_rejected() {
    let s = "f(Tensor self, int a, *, int a=0) -> Tensor";
    let e = parse_schema(s).unwrap_err();
    assert_eq!(e.column, 30, "{e}");
    assert_eq!(
        e.message,
        "duplicate argument name `a` (argument 2 is named `a` too)"
    );
    let e = one_error(&format!("- func: {s}\n"));
    assert!(
        e.starts_with("bad.yaml:1:38: f: malformed schema: duplicate argument name `a`"),
        "{e}"
    );
}

#[test]
fn fixed_list_sizes_are_bounded() {
    let e = parse_schema(&schema_with("int[4294967295]", Some("1"))).unwrap_err();
    assert_eq!(e.column, 20, "{e}");
    assert_eq!(
        e.message,
        format!("list size 4294967295 is larger than the limit of {MAX_LIST_SIZE}")
    );
    let e = parse_schema(&schema_with("int[99999999999999999999]", None)).unwrap_err();
    assert!(e.message.contains("is larger than the limit"), "{e}");
    let at_limit = format!("int[{MAX_LIST_SIZE}]");
    parse_schema(&schema_with(&at_limit, Some("1"))).unwrap();
    let over = format!("int[{}]?", MAX_LIST_SIZE + 1);
    let e = one_error(&format!("- func: {}\n", schema_with(&over, Some("None"))));
    assert!(
        e.starts_with(&format!(
            "bad.yaml:1:28: f: malformed schema: list size {} is larger than the limit of {MAX_LIST_SIZE}",
            MAX_LIST_SIZE + 1
        )),
        "{e}"
    );
}
