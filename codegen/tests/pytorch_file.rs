//! PyTorch's own schema file: every entry parses, prints back exactly and validates.

use opforge_codegen::{load, validate};
use std::path::PathBuf;

fn shared(p: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared")
        .join(p)
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
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let src = std::fs::read_to_string(root.join("native_functions.yaml")).unwrap();
    let tags = std::fs::read_to_string(root.join("tags.yaml")).unwrap();
    let tags = load::load_tags_str("tags.yaml", &tags).unwrap();
    let file = load::load_str("native_functions.yaml", &src).unwrap_or_else(|d| panic!("{d}"));
    assert!(file.entries.len() >= 80);
    validate::validate(&file, Some(&tags)).unwrap_or_else(|d| panic!("{d}"));
}
