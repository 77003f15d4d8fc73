//! Derive: Rust names from schemas, by rules that depend only on the schemas
//! (never on where an entry sits in the file).
//!
//! - The exact form of every overload ([`op_ident`]): `add.Tensor` →
//!   `add_Tensor`, `add_.Tensor` → `add__Tensor`, `mylib::scale` →
//!   `mylib_scale`; arguments ([`arg_ident`]): `self` → `self_`, keywords get a
//!   trailing `_`.
//! - The convenience names (`torch::<name>`, `Tensor::<name>`), by
//!   [`api_names`]: a base name's *main* functional overload (its default
//!   overload, else `Tensor`, else the one whose out= variant is `out`, else its
//!   only functional overload) takes the plain name; its in-place variant ends in
//!   `_` and its out= variant in `_out`; every other overload appends its
//!   overload name in snake case.
//!
//! | overload | convenience name |
//! |---|---|
//! | `add.Tensor` | `add` |
//! | `add_.Tensor` | `add_` |
//! | `add.out` | `add_out` |
//! | `add.Scalar` | `add_scalar` |
//! | `add_.Scalar` | `add_scalar_` |
//! | `sub.out` (listed before `sub.Tensor`) | `sub_out` |
//! | `max` / `max.dim` / `max.dim_max` | `max` / `max_dim` / `max_dim_out` |
//! | `where.self` / `where` | `where_self` / `where_` |
//! | `select.int` (the only `select`) | `select` |
//! | `clone` | `clone_tensor` (`Tensor::clone` is the handle's `Clone`) |

use crate::groups::group;
use crate::model::{FunctionSchema, NativeFunction, SchemaKind};
use std::collections::HashMap;

/// Rust keywords (strict and reserved), which get a trailing `_` as identifiers.
/// Sorted by length, then bytes, for [`in_list`].
pub const RUST_KEYWORDS: &[&str] = &[
    "as", "do", "fn", "if", "in", "box", "dyn", "for", "gen", "let", "mod", "mut", "pub", "ref",
    "try", "use", "Self", "else", "enum", "impl", "loop", "move", "priv", "self", "true", "type",
    "async", "await", "break", "const", "crate", "false", "final", "macro", "match", "super",
    "trait", "where", "while", "yield", "become", "extern", "return", "static", "struct", "typeof",
    "unsafe", "unsized", "virtual", "abstract", "continue", "override",
];

/// Names the generated code refers to without a path, which an operator's or an
/// argument's Rust name may therefore not be (the validator rejects them at
/// their place): an alias `sig::Tensor` would shadow the type `Tensor` in every
/// other signature, a function `torch::Some` or a parameter `Some` the
/// constructor, a variant `OpId::ALL` the array of ids.
pub const GENERATED_NAMES: &[&str] = &[
    // Runtime types the typed API names (`opforge::__private::prelude`), the
    // standard prelude's types and constructors, primitive types, and items of
    // the generated code (a guarded function's call site, `OpId`'s associated
    // items). Sorted by length, then bytes, for [`in_list`].
    "Ok",
    "i8",
    "u8",
    "ALL",
    "Box",
    "Err",
    "Vec",
    "f32",
    "f64",
    "i16",
    "i32",
    "i64",
    "str",
    "u16",
    "u32",
    "u64",
    "None",
    "SITE",
    "Some",
    "bool",
    "char",
    "i128",
    "u128",
    "DType",
    "isize",
    "usize",
    "Device",
    "Layout",
    "Option",
    "Result",
    "Scalar",
    "Stream",
    "String",
    "Tensor",
    "QScheme",
    "Storage",
    "Generator",
    "from_name",
    "MemoryFormat",
];

/// Why `rust_name`, the Rust name the generator gives an operator or argument,
/// cannot be emitted, if it cannot: `_` is not an identifier Rust can name a
/// function or read a parameter by, and [`GENERATED_NAMES`] are taken.
///
/// ```
/// use opforge_schema::names::unusable;
/// assert_eq!(unusable("add_Tensor"), None);
/// assert!(unusable("_").unwrap().contains("no Rust identifier"));
/// assert!(unusable("Some").unwrap().contains("the generated code uses"));
/// ```
pub fn unusable(rust_name: &str) -> Option<&'static str> {
    if rust_name == "_" {
        Some("has no Rust identifier (`_` is not one)")
    } else if in_list(GENERATED_NAMES, rust_name) {
        Some("is a name the generated code uses")
    } else {
        None
    }
}

/// The Rust identifier of an operator: `.` becomes `_`; a name that is a Rust keyword
/// gets a trailing `_`; other namespaces than `aten` are prefixed (`mylib_scale`).
///
/// ```
/// use opforge_schema::names::op_ident;
/// use opforge_schema::schema::parse_operator_name_str as n;
/// assert_eq!(op_ident(&n("add.Tensor").unwrap()), "add_Tensor");
/// assert_eq!(op_ident(&n("add_.Tensor").unwrap()), "add__Tensor");
/// assert_eq!(op_ident(&n("neg").unwrap()), "neg");
/// assert_eq!(op_ident(&n("mylib::scale").unwrap()), "mylib_scale");
/// ```
pub fn op_ident(name: &crate::model::OperatorName) -> String {
    // Built in one string (the validator and the generator call it for every
    // operator): `ns_`, the base name as `BaseName` prints it, `_overload`.
    let b = &name.name;
    let mut s = String::with_capacity(b.base.len() + name.overload.len() + 24);
    if let Some(ns) = name.namespace.as_deref().filter(|ns| *ns != "aten") {
        s.push_str(ns);
        s.push('_');
    }
    if b.dunder {
        s.push_str(if b.inplace { "__i" } else { "__" });
        s.push_str(&b.base);
        s.push_str("__");
    } else {
        s.push_str(&b.base);
        if b.functional_overload {
            s.push_str("_functional");
        }
        if b.inplace {
            s.push('_');
        }
    }
    if !name.overload.is_empty() {
        s.push('_');
        s.extend(
            name.overload
                .chars()
                .map(|c| if c == '.' { '_' } else { c }),
        );
    }
    keyword_escape(s)
}

/// The Rust identifier of an argument: `self` → `self_`, keywords get a trailing `_`.
///
/// ```
/// use opforge_schema::names::arg_ident;
/// assert_eq!(arg_ident("self"), "self_");
/// assert_eq!(arg_ident("type"), "type_");
/// assert_eq!(arg_ident("other"), "other");
/// ```
pub fn arg_ident(name: &str) -> String {
    keyword_escape(name.to_string())
}

/// True for a Rust keyword (strict or reserved): one of [`RUST_KEYWORDS`].
pub fn is_rust_keyword(s: &str) -> bool {
    in_list(RUST_KEYWORDS, s)
}

/// `s` is in `list`, sorted by length, then bytes: a binary search that mostly
/// compares lengths (it runs for every argument of every schema).
fn in_list(list: &[&str], s: &str) -> bool {
    list.binary_search_by(|w| (w.len(), *w).cmp(&(s.len(), s)))
        .is_ok()
}

/// `name` with a trailing `_` if it is a Rust keyword.
pub fn keyword_escape(mut s: String) -> String {
    if is_rust_keyword(&s) {
        s.push('_');
    }
    s
}

/// The kernel of an entry without `dispatch:` (CompositeImplicitAutograd), by
/// this project's convention: `composite::<op ident>`.
pub fn implicit_kernel(f: &FunctionSchema) -> String {
    format!("composite::{}", op_ident(&f.name))
}

/// `ScalarOpt_dim` → `scalar_opt_dim`, `Tensor_Scalar` → `tensor_scalar`.
pub fn snake_case(s: &str) -> String {
    let chars: Vec<char> = s.chars().collect();
    let mut out = String::with_capacity(s.len() + 4);
    for (i, &c) in chars.iter().enumerate() {
        if c.is_uppercase() {
            let prev = i.checked_sub(1).map(|p| chars[p]);
            let next = chars.get(i + 1).copied();
            let boundary = match prev {
                Some(p) if p.is_lowercase() || p.is_ascii_digit() => true,
                Some(p) if p.is_uppercase() => next.is_some_and(char::is_lowercase),
                _ => false,
            };
            if boundary && !out.ends_with('_') {
                out.push('_');
            }
            out.extend(c.to_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// An overload name as the end of a convenience name: snake case, with the
/// `.` an overload name may contain (`foo.a.b`) as `_`, as in [`op_ident`].
fn overload_suffix(overload: &str) -> String {
    snake_case(&overload.replace('.', "_"))
}

/// The convenience name of every entry (`torch::<name>`, `Tensor::<name>`), in
/// entry order. The rule (see the module docs) reads only the schemas: the
/// main functional overload of a base name is, in this order, its default
/// overload, its `Tensor` overload, the one whose out= variant is `out`, or its
/// only functional overload.
/// Names two entries would share fall back to the exact form ([`op_ident`]).
/// Fails if grouping does (two variants of one kind with one signature).
pub fn api_names(entries: &[NativeFunction]) -> Result<Vec<String>, String> {
    api_names_of(&entries.iter().collect::<Vec<_>>())
}

/// [`api_names`] of entries held by reference (a file's entries and the
/// functions `autogen:` adds to them). A functional variant named with
/// `_functional` (`normal_functional`, PyTorch's name for a functional variant
/// it cannot give the plain name) names only itself: its in-place variant keeps
/// the name it would have without it (`normal_`).
pub fn api_names_of(entries: &[&NativeFunction]) -> Result<Vec<String>, String> {
    let groups = group(entries.iter().copied())?;
    let mut functional_of: Vec<Option<usize>> = vec![None; entries.len()];
    let mut out_of_group: Vec<Option<usize>> = vec![None; entries.len()];
    for g in &groups {
        let functional = g
            .functional
            .filter(|&f| !entries[f].func.name.name.functional_overload);
        for m in g.members() {
            functional_of[m] = functional;
            out_of_group[m] = g.out;
        }
    }
    // Naming units: the functional overloads of a base name, and apart from
    // them the in-place overloads that have no functional variant (`fill_.Scalar`
    // without `fill.Scalar`).
    let unit = |i: usize| -> Option<(String, String, bool, bool)> {
        let f = &entries[i].func;
        let orphan_inplace = f.kind() == SchemaKind::Inplace && functional_of[i].is_none();
        (f.kind() == SchemaKind::Functional || orphan_inplace).then(|| {
            (
                f.name.namespace().to_string(),
                f.name.name.base.clone(),
                f.name.name.dunder,
                orphan_inplace,
            )
        })
    };
    // The main overload of each unit.
    let rank = |i: usize| -> Option<u8> {
        let f = &entries[i].func;
        match f.name.overload.as_str() {
            "" => Some(0),
            "Tensor" => Some(1),
            _ if out_of_group[i].is_some_and(|o| entries[o].func.name.overload == "out") => Some(2),
            _ => None,
        }
    };
    let mut main: HashMap<(String, String, bool, bool), (u8, usize)> = HashMap::new();
    let mut members: HashMap<(String, String, bool, bool), Vec<usize>> = HashMap::new();
    for i in 0..entries.len() {
        let Some(k) = unit(i) else { continue };
        members.entry(k.clone()).or_default().push(i);
        if let Some(r) = rank(i) {
            let e = main.entry(k).or_insert((r, i));
            if r < e.0 {
                *e = (r, i);
            }
        }
    }
    // Else the only overload of the unit.
    for (k, ms) in members {
        if let [only] = ms[..] {
            main.entry(k).or_insert((3, only));
        }
    }
    let is_main = |i: usize| {
        unit(i)
            .and_then(|k| main.get(&k))
            .is_some_and(|&(_, m)| m == i)
    };
    let suffixed = |i: usize| {
        let f = &entries[i].func;
        let mut base = f.name.name.clone();
        base.inplace = false;
        if f.name.overload.is_empty() {
            base.to_string()
        } else {
            format!("{base}_{}", overload_suffix(&f.name.overload))
        }
    };
    let functional_name = |i: usize| {
        if is_main(i) {
            let mut base = entries[i].func.name.name.clone();
            base.inplace = false;
            base.to_string()
        } else {
            suffixed(i)
        }
    };
    let mut names: Vec<String> = (0..entries.len())
        .map(|i| {
            let f = &entries[i].func;
            let name = match f.kind() {
                SchemaKind::Functional => functional_name(i),
                SchemaKind::Inplace if f.name.name.dunder => {
                    let base = f.name.name.to_string();
                    match f.name.overload.as_str() {
                        "" | "Tensor" => base,
                        o => format!("{base}_{}", overload_suffix(o)),
                    }
                }
                SchemaKind::Inplace => match functional_of[i] {
                    Some(fi) => format!("{}_", functional_name(fi)),
                    None if is_main(i) => f.name.name.to_string(),
                    None => format!("{}_", suffixed(i)),
                },
                SchemaKind::Out => match functional_of[i] {
                    Some(fi) => format!("{}_out", functional_name(fi)),
                    None if f.name.overload == "out" => format!("{}_out", f.name.name),
                    None => suffixed(i),
                },
                SchemaKind::Mutable | SchemaKind::Scratch => suffixed(i),
            };
            match name.as_str() {
                "clone" => "clone_tensor".to_string(),
                _ => keyword_escape(name),
            }
        })
        .collect();
    // Names two entries share fall back to the exact form, until none is shared
    // (exact forms are unique, so this ends).
    loop {
        let mut count: HashMap<&str, usize> = HashMap::new();
        for n in &names {
            *count.entry(n.as_str()).or_default() += 1;
        }
        let shared: Vec<usize> = (0..names.len())
            .filter(|&i| {
                count[names[i].as_str()] > 1 && names[i] != op_ident(&entries[i].func.name)
            })
            .collect();
        if shared.is_empty() {
            break;
        }
        for i in shared {
            names[i] = op_ident(&entries[i].func.name);
        }
    }
    Ok(names)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(yaml: &str) -> Vec<(String, String)> {
        let f = crate::load::load_str("t.yaml", yaml).unwrap();
        let n = api_names(&f.entries).unwrap();
        f.entries.iter().map(|e| e.name()).zip(n).collect()
    }

    #[test]
    fn name_lists_are_sorted_for_the_search() {
        for list in [RUST_KEYWORDS, GENERATED_NAMES] {
            assert!(
                list.windows(2)
                    .all(|w| (w[0].len(), w[0]) < (w[1].len(), w[1])),
                "{list:?}"
            );
            assert!(list.iter().all(|w| in_list(list, w)));
            assert!(!in_list(list, "add") && !in_list(list, ""));
        }
        // No name the generated code uses is a keyword (the validator relies on it).
        assert!(GENERATED_NAMES.iter().all(|n| !is_rust_keyword(n)));
    }

    #[test]
    fn op_ident_is_the_printed_name_mangled() {
        for n in [
            "add.Tensor",
            "add_.Tensor",
            "__iand__.Tensor",
            "__and__",
            "foo_functional.a.b",
            "mylib::scale_",
            "aten::type",
            "fn_",
            "self",
        ] {
            let name = crate::schema::parse_operator_name_str(n).unwrap();
            let mut want = name.unqualified().replace('.', "_");
            if let Some(ns) = name.namespace.as_deref().filter(|ns| *ns != "aten") {
                want = format!("{ns}_{want}");
            }
            assert_eq!(op_ident(&name), keyword_escape(want), "{n}");
        }
    }

    #[test]
    fn snake() {
        assert_eq!(snake_case("ScalarOpt_dim"), "scalar_opt_dim");
        assert_eq!(snake_case("Tensor_Scalar"), "tensor_scalar");
        assert_eq!(snake_case("dim_IntList"), "dim_int_list");
        assert_eq!(snake_case("self"), "self");
        assert_eq!(snake_case("Tensor"), "tensor");
        assert_eq!(snake_case("SymInt"), "sym_int");
    }

    #[test]
    fn names_come_from_the_schema_not_the_line_order() {
        let yaml = "
- func: sub.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)
- func: sub.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
- func: sub_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)
- func: sub.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor
- func: sub_.Scalar(Tensor(a!) self, Scalar other, Scalar alpha=1) -> Tensor(a!)
- func: max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)
- func: max.dim_max(Tensor self, int dim, bool keepdim=False, *, Tensor(a!) max, Tensor(b!) max_values) -> (Tensor(a!) values, Tensor(b!) indices)
- func: max(Tensor self) -> Tensor
- func: max.unary_out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
- func: where.self(Tensor condition, Tensor self, Tensor other) -> Tensor
- func: where(Tensor condition) -> Tensor[]
- func: clone(Tensor self, *, MemoryFormat? memory_format=None) -> Tensor
- func: __iand__.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)
- func: __and__.Tensor(Tensor self, Tensor other) -> Tensor
- func: fill_.Scalar(Tensor(a!) self, Scalar value) -> Tensor(a!)
- func: fill_.Tensor(Tensor(a!) self, Tensor value) -> Tensor(a!)
- func: zero_(Tensor(a!) self) -> Tensor(a!)
- func: select.int(Tensor(a) self, int dim, SymInt index) -> Tensor(a)
";
        let got = names(yaml);
        let want = [
            ("sub.out", "sub_out"),
            ("sub.Tensor", "sub"),
            ("sub_.Tensor", "sub_"),
            ("sub.Scalar", "sub_scalar"),
            ("sub_.Scalar", "sub_scalar_"),
            ("max.dim", "max_dim"),
            ("max.dim_max", "max_dim_out"),
            ("max", "max"),
            ("max.unary_out", "max_out"),
            ("where.self", "where_self"),
            ("where", "where_"),
            ("clone", "clone_tensor"),
            ("__iand__.Tensor", "__iand__"),
            ("__and__.Tensor", "__and__"),
            ("fill_.Scalar", "fill_scalar_"),
            ("fill_.Tensor", "fill_"),
            ("zero_", "zero_"),
            ("select.int", "select"),
        ];
        let want: Vec<(String, String)> = want
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect();
        assert_eq!(got, want);
        // Reordered entries keep their names.
        let mut lines: Vec<&str> = yaml.trim().lines().collect();
        lines.reverse();
        let mut shuffled = names(&lines.join("\n"));
        shuffled.sort();
        let mut sorted = want;
        sorted.sort();
        assert_eq!(shuffled, sorted);
    }

    #[test]
    fn dots_in_overload_names_become_underscores() {
        // Found by the yaml_pipeline fuzz target: `add_o.list` is no identifier.
        let got = names(
            "
- func: add.Tensor(Tensor self, Tensor other) -> Tensor
- func: add.o.List(Tensor self, Tensor[] other) -> Tensor
- func: __and__.a.B(Tensor self, Tensor other) -> Tensor
- func: __iand__.a.B(Tensor(a!) self, Tensor other) -> Tensor(a!)
",
        );
        assert_eq!(got[1].1, "add_o_list");
        assert_eq!(got[2].1, "__and__");
        assert_eq!(got[3].1, "__iand___a_b");
    }

    #[test]
    fn shared_names_fall_back_to_the_exact_form() {
        // `foo.Bar` would be `foo_bar`, which an operator of that name has.
        let got = names(
            "
- func: foo(Tensor self) -> Tensor
- func: foo.Bar(Tensor self, int x) -> Tensor
- func: foo_bar(Tensor self, float y) -> Tensor
",
        );
        assert_eq!(got[0].1, "foo");
        assert_eq!(got[1].1, "foo_Bar");
        assert_eq!(got[2].1, "foo_bar");
    }
}
