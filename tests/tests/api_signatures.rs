//! PyTorch's Python API parser signatures, derived from PyTorch's own schema files,
//! compared with the signatures recorded from PyTorch 2.15
//! (`tests/data/conformance/api_signatures.json`, a sample of all bindings).

use opforge_schema::{load, python};
use std::collections::{BTreeMap, BTreeSet, HashMap};

fn read(p: &str) -> String {
    opforge_tests::read(&opforge_tests::data_dir().join(p))
}

#[test]
fn api_signatures_match_pytorch() {
    let file = load::load_str(
        "native_functions.yaml",
        &read("pytorch/native_functions.yaml"),
    )
    .unwrap_or_else(|d| panic!("{d}"));
    let deprecated =
        python::load_deprecated_str("deprecated.yaml", &read("pytorch/deprecated.yaml"))
            .unwrap_or_else(|d| panic!("{d}"));
    assert_eq!(deprecated.len(), 44);
    let bindings =
        python::derive_bindings(&file.entries, &deprecated).unwrap_or_else(|e| panic!("{e}"));
    assert!(
        bindings.windows(2).all(|w| w[0].name < w[1].name),
        "bindings sorted by name"
    );
    let ours: HashMap<&str, &python::Binding> =
        bindings.iter().map(|b| (b.name.as_str(), b)).collect();

    let expected: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(&read("conformance/api_signatures.json")).unwrap();
    let mut matched = 0;
    let mut mismatches = Vec::new();
    for (name, sigs) in &expected {
        let want: Vec<&str> = sigs
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s.as_str().unwrap())
            .collect();
        match ours.get(name.as_str()) {
            Some(b) if b.signatures == want => matched += 1,
            Some(b) => mismatches.push(format!(
                "{name}:\n  expected:\n{}\n  derived:\n{}",
                want.iter()
                    .map(|s| format!("    {s}\n"))
                    .collect::<String>(),
                b.signatures
                    .iter()
                    .map(|s| format!("    {s}\n"))
                    .collect::<String>()
            )),
            None => mismatches.push(format!("{name}: no binding derived")),
        }
    }
    for m in mismatches.iter().take(20) {
        println!("{m}");
    }
    let total = expected.len();
    println!(
        "api signatures: {matched}/{total} bindings equal ({:.1}%), {} bindings derived",
        100.0 * matched as f64 / total as f64,
        bindings.len()
    );
    assert_eq!(matched, total, "{} bindings differ", mismatches.len());
}

/// Counts measured on PyTorch 2.15 (arg_parser.md §1.1): names, parser signatures and
/// deprecated signatures per namespace, and the number of autogen'd functions.
#[test]
fn binding_counts_match_pytorch() {
    let file = load::load_str(
        "native_functions.yaml",
        &read("pytorch/native_functions.yaml"),
    )
    .unwrap_or_else(|d| panic!("{d}"));
    let generated = python::generated_functions(&file.entries).unwrap();
    assert_eq!(generated.len(), 520);
    assert_eq!(file.entries.len() + generated.len(), 3110);
    let deprecated =
        python::load_deprecated_str("deprecated.yaml", &read("pytorch/deprecated.yaml")).unwrap();
    let bindings = python::derive_bindings(&file.entries, &deprecated).unwrap();
    let mut counts: BTreeMap<&str, (usize, usize, usize)> = BTreeMap::new();
    let mut schemas = BTreeSet::new();
    for b in &bindings {
        let ns = b.name.rsplit_once('.').map_or("", |(ns, _)| ns);
        let c = counts.entry(ns).or_default();
        c.0 += 1;
        c.1 += b.signatures.len();
        c.2 += b
            .signatures
            .iter()
            .filter(|s| s.ends_with("|deprecated"))
            .count();
        schemas.extend(
            b.sources
                .iter()
                .flat_map(|s| std::iter::once(&s.functional).chain(&s.out)),
        );
    }
    // NativeFunctions (yaml entries plus generated ones) that get a binding.
    assert_eq!(schemas.len(), 2304);
    let expected = [
        ("Tensor", 536, 710, 30),
        ("torch", 943, 1231, 18),
        ("torch.fft", 22, 22, 0),
        ("torch.linalg", 45, 54, 0),
        ("torch.nested", 1, 1, 0),
        ("torch.nn.functional", 95, 109, 0),
        ("torch.sparse", 8, 11, 0),
        ("torch.special", 56, 86, 0),
    ];
    let got: Vec<(&str, usize, usize, usize)> = counts
        .into_iter()
        .map(|(ns, c)| (ns, c.0, c.1, c.2))
        .collect();
    assert_eq!(got, expected);
}
