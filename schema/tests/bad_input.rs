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
use opforge_schema::yaml::{MAX_FILE_BYTES, MAX_YAML_DEPTH};

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
    // Several: the first second occurrence is reported.
    let e = parse_schema("f(int b, int a, int b, int a) -> ()").unwrap_err();
    assert_eq!(
        e.message,
        "duplicate argument name `b` (argument 1 is named `b` too)"
    );
    assert_eq!(e.column, 21);
    // A long list (found by sorting).
    let many: Vec<String> = (0..40).map(|i| format!("int a{i}")).collect();
    let s = format!("f(Tensor self, {}, int a3) -> ()", many.join(", "));
    let e = parse_schema(&s).unwrap_err();
    assert_eq!(
        e.message,
        "duplicate argument name `a3` (argument 5 is named `a3` too)"
    );
    assert_eq!(e.column, s.rfind("a3").unwrap() + 1);
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
// ---------------------------------------------------------------------------
// 3. The YAML layer: nesting, documents, size.
// ---------------------------------------------------------------------------

#[test]
fn deeply_nested_yaml_is_rejected_by_the_pre_scan() {
    // 100 KB of `[` took 4.4 s inside serde_yaml before it gave up; the pre-scan
    // stops at the first bracket past the limit (timed by hand, see the report).
    let n = 50_000;
    let src = format!(
        "- func: f(Tensor self) -> Tensor\n  tags: {}{}\n",
        "[".repeat(n),
        "]".repeat(n)
    );
    let e = one_error(&src);
    // `  tags: ` is 8 columns; the entry list and the entry's mapping are two
    // levels, so bracket `MAX_YAML_DEPTH - 1` is one too many.
    let col = 8 + MAX_YAML_DEPTH - 1;
    assert_eq!(
        e,
        format!("bad.yaml:2:{col}: YAML nested deeper than {MAX_YAML_DEPTH} levels\n  help: a schema file nests a few levels (entries, their keys, a dispatch table or a list); flatten the value"),
    );
    // Mappings, and nesting spread over lines, count the same.
    let src = format!(
        "- func: f(Tensor self) -> Tensor\n  tags: {}x\n",
        "{a: \n".repeat(n)
    );
    assert!(one_error(&src).contains("YAML nested deeper than"));
    // tags.yaml and deprecated.yaml go through the same door.
    let tags = format!("- tag: {}\n", "[".repeat(n));
    let e = load::load_tags_str("tags.yaml", &tags).unwrap_err();
    assert!(e.to_string().contains("YAML nested deeper than"), "{e}");
    let dep = format!("- name: {}\n", "{".repeat(n));
    let e = opforge_schema::python::load_deprecated_str("deprecated.yaml", &dep).unwrap_err();
    assert!(e.to_string().contains("YAML nested deeper than"), "{e}");
}

#[test]
fn yaml_nesting_limit_holds_just_under_and_just_over() {
    // Depth counts the entry list, the entry mapping and each flow level.
    let under = MAX_YAML_DEPTH - 2;
    let src = |n: usize| {
        format!(
            "- func: f(Tensor self) -> Tensor\n  tags: {}{}\n",
            "[".repeat(n),
            "]".repeat(n)
        )
    };
    let e = on_small_stack(|| one_error(&src(under)));
    // Loaded and validated: the nested list is not a list of tags.
    assert!(e.contains("`tags:` must be a tag or a list of tags"), "{e}");
    let e = on_small_stack(|| one_error(&src(under + 1)));
    assert!(e.contains("YAML nested deeper than"), "{e}");
}

#[test]
fn brackets_in_scalars_and_comments_do_not_count() {
    let n = 5 * MAX_YAML_DEPTH;
    let open = "[".repeat(n);
    let src = format!(
        "# {open}\n- func: f(Tensor self) -> Tensor  # {open}\n  tags: \"{open}\"\n  python_module: '{open}'\n  category_override: a{open}\n  precomputed:\n  - |\n    {open}\n"
    );
    let d = check(&src).unwrap_err().to_string();
    assert!(!d.contains("nested deeper"), "{d}");
    assert!(
        d.contains("illegal tag") || d.contains("unknown python_module"),
        "{d}"
    );
}

/// Entries, each about 100 bytes.
fn entries(n: usize, from: usize) -> String {
    (from..from + n)
        .map(|i| {
            format!(
                "- func: op{i}(Tensor self, int dim=0) -> Tensor\n  variants: function, method\n"
            )
        })
        .collect()
}

#[test]
fn several_documents_are_rejected_whatever_the_size() {
    // Files of 64 KB and more used to be parsed in two halves, split at the first
    // entry after the middle; with a document marker just before that entry each
    // half was one document, and a stream of two documents was accepted.
    for n in [20, 2_000, 8_000] {
        let all = entries(n, 0);
        let middle = all.len() / 2 + all[all.len() / 2..].find("\n- ").unwrap() + 1;
        for at in [middle, all.len() / 4, 3 * all.len() / 4] {
            // The start of the entry at or after `at`.
            let at = at + all[at..].find("- func").unwrap();
            for marker in ["...\n", "---\n", "...\n---\n"] {
                let src = format!("{}{marker}{}", &all[..at], &all[at..]);
                let e = match check(&src) {
                    Ok(f) => panic!(
                        "{} bytes, {marker:?} at {at}: {} entries loaded",
                        src.len(),
                        f.entries.len()
                    ),
                    Err(e) => e.to_string(),
                };
                assert!(
                    e.contains("more than one document"),
                    "{} bytes, {marker:?} at {at}: {e}",
                    src.len()
                );
            }
        }
        // One document with its markers is fine.
        let src = format!("---\n{all}...\n");
        assert_eq!(check(&src).unwrap().entries.len(), n);
    }
}

#[test]
fn files_over_the_size_limit_are_rejected_before_parsing() {
    let some = entries(1_000, 0);
    let src = some.repeat(MAX_FILE_BYTES / some.len() + 1);
    assert!(src.len() > MAX_FILE_BYTES);
    let e = one_error(&src);
    assert_eq!(
        e,
        format!(
            "bad.yaml:0: the file is {} bytes, more than the limit of {MAX_FILE_BYTES} bytes ({} MiB)\n  help: PyTorch's own native_functions.yaml is about 0.6 MB; split the schema into several crates",
            src.len(),
            MAX_FILE_BYTES >> 20
        )
    );
    // A file at the limit is read (a comment: quick to load in a debug build).
    let at_limit = format!("#{}\n", " ".repeat(MAX_FILE_BYTES - 2));
    assert_eq!(check(&at_limit).unwrap().entries.len(), 0);
}
