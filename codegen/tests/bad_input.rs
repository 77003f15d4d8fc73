//! The rule the generator keeps: no schema file that passes `check` (load and
//! validate) makes lowering, emission, the build or a call panic or fail. Each
//! name here is either emitted correctly (keywords get a trailing `_`) or
//! rejected by the validator at `file:line:col`.

use opforge_codegen::emit_api::Options;
use opforge_codegen::{cli, emit_all, lower};
use opforge_schema::diag::Diagnostics;

fn check(src: &str) -> Result<opforge_schema::load::SchemaFile, Diagnostics> {
    opforge_schema::check_str("bad.yaml", src, None)
}

/// Lowers and emits a file that passed `check`; every generated file is
/// valid Rust (emission falls back to a `compile_error!` when it is not).
#[track_caller]
fn emits(src: &str) -> Vec<(String, String)> {
    let file = check(src).unwrap_or_else(|d| panic!("{src}\n{d}"));
    let plan = lower::lower(&file, &[]).unwrap_or_else(|d| panic!("{src}\n{d}"));
    let opts = Options {
        runtime: false,
        crate_name: "bad".into(),
        kernels_module: Some("crate::kernels".into()),
    };
    let files = emit_all(&plan, &opts).unwrap_or_else(|d| panic!("{src}\n{d}"));
    for (name, text) in &files {
        assert!(
            !text.contains("compile_error!"),
            "{name} of\n{src}:\n{text}"
        );
        if name != "schema_macro.rs" {
            syn::parse_file(text).unwrap_or_else(|e| panic!("{name} of\n{src}: {e}"));
        }
    }
    files
}

/// The one diagnostic of a rejected file, printed.
#[track_caller]
fn rejected(src: &str) -> String {
    let d = check(src).expect_err(src);
    assert_eq!(d.0.len(), 1, "{d}");
    d.0[0].to_string()
}

#[test]
fn operator_name_with_a_leading_digit_fails_check_not_emit() {
    let dir = std::env::temp_dir().join(format!("opforge-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("bad.yaml");
    std::fs::write(
        &file,
        "- func: abs(Tensor self) -> Tensor\n- func: 9abs(Tensor self) -> Tensor\n",
    )
    .unwrap();
    let path = file.display().to_string();
    let o = cli::run(&["check".into(), path.clone()]);
    assert_eq!(o.code, 1);
    assert!(
        o.stderr.starts_with(&format!(
            "{path}:2:9: 9abs: malformed schema: invalid operator name `9abs`: must start with a letter or `_`"
        )),
        "{}",
        o.stderr
    );
    let out = dir.join("out");
    let o = cli::run(&[
        "emit".into(),
        path,
        "--out".into(),
        out.display().to_string(),
    ]);
    assert_eq!(o.code, 1);
    assert!(
        o.stderr.contains(":2:9: 9abs: malformed schema"),
        "{}",
        o.stderr
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn keyword_names_are_emitted_with_a_trailing_underscore() {
    // Rust keywords, strict and reserved, as operator, overload and argument
    // names: all valid schema names, all emitted.
    let files = emits(
        "- func: self(Tensor self, int fn, int type) -> Tensor
- func: Self(Tensor self, int crate, int super, int Self) -> Tensor
- func: crate.fn(Tensor self, int unsafe, int gen, int dyn) -> Tensor
- func: super(Tensor self, int box, int impl, int r) -> Tensor
- func: fn.self(Tensor self, int macro_rules, int union, int raw) -> Tensor
- func: mylib::type(Tensor self, int where) -> Tensor
- func: loop_(Tensor(a!) self, int match) -> Tensor(a!)
- func: __(Tensor(a!) self) -> Tensor(a!)
",
    );
    let api = &files.iter().find(|(n, _)| n == "api.rs").unwrap().1;
    // One line per signature, whatever prettyplease wrapped.
    let api = api
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .replace("( ", "(")
        .replace(", )", ")");
    for f in [
        "pub fn self_(self_: &Tensor, fn_: i64, type_: i64)",
        "pub fn Self_(self_: &Tensor, crate_: i64, super_: i64, Self_: i64)",
        "pub fn crate_fn(self_: &Tensor, unsafe_: i64, gen_: i64, dyn_: i64)",
        "pub fn fn_self(self_: &Tensor, macro_rules: i64, union: i64, raw: i64)",
        "pub fn mylib_type(self_: &Tensor, where_: i64)",
        "pub fn loop_(self_: &mut Tensor, match_: i64)",
        "pub fn __(self_: &mut Tensor)",
    ] {
        assert!(api.contains(f), "{f}\n{api}");
    }
}

#[test]
fn names_rust_cannot_bind_are_rejected_at_their_place() {
    let cases: &[(&str, &str)] = &[
        // `_` is not an identifier Rust can call or read.
        (
            "- func: _(Tensor self) -> Tensor\n",
            "bad.yaml:1:9: _: operator name `_` has no Rust identifier (`_` is not one)",
        ),
        (
            "- func: f(Tensor self, int _) -> Tensor\n",
            "bad.yaml:1:28: f: argument name `_` has no Rust identifier (`_` is not one)",
        ),
        // Names the generated code refers to: an alias `sig::Tensor` would
        // shadow the type, a parameter `Some` the constructor.
        (
            "- func: Tensor(Tensor self) -> Tensor\n",
            "bad.yaml:1:9: Tensor: operator name `Tensor` is a name the generated code uses",
        ),
        (
            "- func: i64.x(Tensor self) -> Tensor\n",
            "bad.yaml:1:9: i64.x: operator name `i64` is a name the generated code uses",
        ),
        (
            "- func: f(Tensor self, int Some) -> Tensor\n",
            "bad.yaml:1:28: f: argument name `Some` is a name the generated code uses",
        ),
        (
            "- func: f(Tensor self, int SITE) -> Tensor\n",
            "bad.yaml:1:28: f: argument name `SITE` is a name the generated code uses",
        ),
        // Two arguments with one Rust name.
        (
            "- func: f(Tensor self, int type, int type_) -> Tensor\n",
            "bad.yaml:1:38: f: arguments `type` and `type_` have the same Rust name `type_`",
        ),
        (
            "- func: f(Tensor self_, Tensor self) -> Tensor\n",
            "bad.yaml:1:32: f: arguments `self_` and `self` have the same Rust name `self_`",
        ),
        // A kernel path segment Rust reads as a path keyword.
        (
            "- func: f(Tensor self) -> Tensor\n  dispatch:\n    CPU: cpu::self\n",
            "bad.yaml:3:10: f: kernel name `cpu::self` is not a Rust path",
        ),
    ];
    for (src, want) in cases {
        let e = rejected(src);
        assert!(e.starts_with(want), "\n{src}want: {want}\ngot:  {e}");
        assert!(e.contains("\n  help: "), "{e}");
    }
}

#[test]
fn names_that_collide_after_mangling_are_rejected_at_the_second() {
    let cases: &[(&str, &str)] = &[
        (
            "- func: foo.bar(Tensor self) -> Tensor\n- func: foo_bar(Tensor self) -> Tensor\n",
            "bad.yaml:2:9: foo_bar: `foo_bar` and `foo.bar` (line 1) have the same Rust identifier `foo_bar`",
        ),
        (
            "- func: fn(Tensor self) -> Tensor\n- func: fn_(Tensor(a!) self) -> Tensor(a!)\n",
            "bad.yaml:2:9: fn_: `fn_` and `fn` (line 1) have the same Rust identifier `fn_`",
        ),
        (
            "- func: mylib::scale(Tensor self) -> Tensor\n- func: mylib_scale(Tensor self) -> Tensor\n",
            "bad.yaml:2:9: mylib_scale: `mylib_scale` and `mylib::scale` (line 1) have the same Rust identifier `mylib_scale`",
        ),
        (
            "- func: f.a.b(Tensor self) -> Tensor\n- func: f.a_b(Tensor self) -> Tensor\n",
            "bad.yaml:2:9: f.a_b: `f.a_b` and `f.a.b` (line 1) have the same Rust identifier `f_a_b`",
        ),
    ];
    for (src, want) in cases {
        let e = rejected(src);
        assert!(e.starts_with(want), "\n{src}want: {want}\ngot:  {e}");
    }
}

#[test]
fn fixed_size_list_default_is_emitted_within_the_limit() {
    let n = opforge_schema::schema::MAX_LIST_SIZE;
    let files = emits(&format!("- func: f(Tensor self, int[{n}] x=1) -> Tensor\n"));
    let api = &files.iter().find(|(n, _)| n == "api.rs").unwrap().1;
    assert!(api.contains("pub fn f(self_: &Tensor)"), "{api}");
    let e = rejected(&format!(
        "- func: f(Tensor self, int[{}] x=1) -> Tensor\n",
        n + 1
    ));
    assert!(e.contains("is larger than the limit"), "{e}");
}

#[test]
fn too_many_operators_for_an_op_id_is_an_error_not_a_build_failure() {
    // `OpId` is `#[repr(u16)]`.
    let one = check("- func: f(Tensor self) -> Tensor\n").unwrap();
    let mut many = one.clone();
    many.entries = (0..=u16::MAX as usize + 1)
        .map(|i| {
            let mut e = one.entries[0].clone();
            e.func.name.overload = format!("o{i}");
            e
        })
        .collect();
    let e = lower::lower(&many, &[]).unwrap_err().to_string();
    assert!(
        e.contains("65537 operators: a schema file holds at most 65536"),
        "{e}"
    );
}

#[test]
fn the_deepest_type_is_lowered_and_emitted_on_a_small_stack() {
    // The parser's limit bounds every walk over a type after it: the table
    // conversion, the emitted `Ty` expression, formatting (syn, prettyplease).
    let depth = opforge_schema::schema::MAX_TYPE_DEPTH;
    let ty = format!("int{}", "?[]".repeat(depth / 2));
    let src = format!("- func: f(Tensor self, {ty} x) -> Tensor\n");
    let tables = std::thread::scope(|s| {
        std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn_scoped(s, || {
                let file = check(&src).unwrap_or_else(|d| panic!("{d}"));
                let plan = lower::lower(&file, &[]).unwrap_or_else(|d| panic!("{d}"));
                // No Rust signature for a list of optional lists: the typed API
                // is an error naming the line, the tables are emitted.
                let e = opforge_codegen::emit_api::api(&plan, &Options::runtime()).unwrap_err();
                assert!(
                    e.to_string()
                        .starts_with("bad.yaml:1: f: no Rust signature"),
                    "{e}"
                );
                opforge_codegen::emit::tables(&plan)
            })
            .unwrap()
            .join()
            .expect("no overflow")
    });
    assert!(!tables.starts_with("compile_error!"), "{tables}");
    assert!(tables.contains(&format!("\"f(Tensor self, {ty} x) -> Tensor\"")));
}

#[test]
fn dotted_overload_names_are_emitted() {
    // Found by the yaml_pipeline fuzz target: the convenience name of
    // `add.o.List` was `add_o.list`, and emission panicked (not a valid Ident).
    let files = emits(
        "- func: add.Tensor(Tensor self, Tensor other) -> Tensor
- func: add.o.List(Tensor self, Tensor[] other) -> Tensor
",
    );
    let api = &files.iter().find(|(n, _)| n == "api.rs").unwrap().1;
    assert!(api.contains("pub fn add_o_List("), "{api}");
    assert!(api.contains("pub fn add_o_list("), "{api}");
}
