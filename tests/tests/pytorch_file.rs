//! PyTorch's own schema file: every entry parses, prints back exactly and validates.

use opforge_schema::{load, validate};
use std::path::PathBuf;

fn shared(p: &str) -> PathBuf {
    opforge_tests::data_dir().join(p)
}

#[test]
fn every_pytorch_entry_round_trips() {
    let path = shared("pytorch/native_functions.yaml");
    let src = std::fs::read_to_string(&path).unwrap();
    let file = load::load_str("native_functions.yaml", &src).unwrap_or_else(|d| panic!("{d}"));
    assert_eq!(file.entries.len(), 2590);
    let raw: Vec<&str> = src
        .lines()
        .filter_map(|l| l.strip_prefix("- func: "))
        .collect();
    assert_eq!(raw.len(), 2590);
    for (nf, text) in file.entries.iter().zip(&raw) {
        assert_eq!(&nf.func.to_string(), text);
    }
}

#[test]
fn pytorch_file_validates() {
    let src = std::fs::read_to_string(shared("pytorch/native_functions.yaml")).unwrap();
    let tags = std::fs::read_to_string(shared("pytorch/tags.yaml")).unwrap();
    let tags = load::load_tags_str("tags.yaml", &tags).unwrap();
    let file = load::load_str("native_functions.yaml", &src).unwrap();
    validate::validate(&file, Some(&tags)).unwrap_or_else(|d| panic!("{d}"));
}

#[test]
fn project_file_validates() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../runtime");
    let src = std::fs::read_to_string(root.join("native_functions.yaml")).unwrap();
    let tags = std::fs::read_to_string(root.join("tags.yaml")).unwrap();
    let tags = load::load_tags_str("tags.yaml", &tags).unwrap();
    let file = load::load_str("native_functions.yaml", &src).unwrap_or_else(|d| panic!("{d}"));
    assert!(file.entries.len() >= 80);
    validate::validate(&file, Some(&tags)).unwrap_or_else(|d| panic!("{d}"));
}

/// Counts measured on PyTorch 2.15's file: our model must agree.
#[test]
fn pytorch_file_counts() {
    use opforge_schema::{groups, model::SchemaKind};
    use std::collections::HashMap;
    let src = std::fs::read_to_string(shared("pytorch/native_functions.yaml")).unwrap();
    let file = load::load_str("native_functions.yaml", &src).unwrap();
    let kinds = groups::kind_counts(file.entries.iter().map(|e| &e.func));
    assert_eq!(
        kinds,
        vec![
            (SchemaKind::Functional, 1608),
            (SchemaKind::Inplace, 339),
            (SchemaKind::Out, 632),
            (SchemaKind::Mutable, 11),
        ]
    );
    let mut types: HashMap<String, usize> = HashMap::new();
    for e in &file.entries {
        for a in &e.func.arguments.all {
            *types.entry(a.ty.to_string()).or_default() += 1;
        }
    }
    assert_eq!(types.len(), 49);
    for (t, n) in [
        ("Tensor", 4436),
        ("bool", 698),
        ("Tensor?[]", 9),
        ("SymInt[2]", 97),
        ("int[1]?", 42),
        ("Storage", 2),
    ] {
        assert_eq!(types[t], n, "{t}");
    }
    let e = |f: fn(&opforge_schema::model::NativeFunction) -> bool| {
        file.entries.iter().filter(|x| f(x)).count()
    };
    assert_eq!(e(|x| x.func.arguments.self_arg().is_none()), 655);
    assert_eq!(
        e(|x| !x.func.arguments.pre_self_positional().is_empty()),
        106
    );
    assert_eq!(e(|x| x.func.has_tensor_options()), 100);
    assert_eq!(e(|x| x.func.arguments.kwarg_only_start.is_some()), 966);
    assert_eq!(e(|x| x.func.returns.is_empty()), 107);
    assert_eq!(e(|x| x.func.is_mutable()), 985);
    assert_eq!(e(|x| x.variants.method && x.variants.function), 489);
    let groups = groups::group(&file.entries).unwrap();
    assert!(groups.iter().all(|g| g.members().count() >= 1));
}

/// Large files are parsed in two halves; a YAML error in either half must still be
/// reported at its true position in the whole file.
#[test]
fn yaml_errors_in_large_files_keep_their_position() {
    let src = std::fs::read_to_string(shared("pytorch/native_functions.yaml")).unwrap();
    let lines: Vec<&str> = src.lines().collect();
    for at in [100, lines.len() - 100] {
        let mut broken = lines.clone();
        broken.insert(at, "- func: [unclosed");
        let text = broken.join("\n");
        let err = load::load_str("big.yaml", &text).unwrap_err();
        let d = &err.0[0];
        // libyaml reports where it noticed the problem: the line or just after it.
        assert!(
            (at + 1..=at + 4).contains(&d.line) && d.message.contains(&format!("line {}", at + 1)),
            "error reported at line {}, expected near {}: {d}",
            d.line,
            at + 1
        );
    }
}
