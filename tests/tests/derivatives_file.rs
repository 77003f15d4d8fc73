//! PyTorch's own `derivatives.yaml`: it loads without a diagnostic, and every
//! entry resolves against PyTorch's `native_functions.yaml`. The counts are
//! derived from the file's text and printed, not written into the test.

use opforge_schema::derivatives::{self, Body, Direction, FormulaSource};
use opforge_schema::load;
use std::collections::BTreeMap;

fn load_both() -> (derivatives::DerivativesFile, load::SchemaFile, String) {
    let text = opforge_tests::read(&opforge_tests::pytorch("derivatives.yaml"));
    let file = derivatives::load_str("derivatives.yaml", &text).unwrap_or_else(|d| panic!("{d}"));
    let native = opforge_tests::read(&opforge_tests::pytorch("native_functions.yaml"));
    let ops = load::load_str("native_functions.yaml", &native).unwrap_or_else(|d| panic!("{d}"));
    (file, ops, text)
}

#[test]
fn pytorch_derivatives_load_and_resolve() {
    let (file, ops, text) = load_both();

    // One entry per `- name:` line, each with its schema as written.
    let names: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("- name:"))
        .map(str::trim)
        .collect();
    assert_eq!(file.entries.len(), names.len());
    for (e, name) in file.entries.iter().zip(&names) {
        assert_eq!(&e.name, name);
        assert_eq!(&e.schema.to_string(), name, "line {}", e.line);
    }
    // Every key line indented under an entry that is not `name:`, `dispatch:`, a
    // dispatch key or `output_differentiability:` is a formula.
    let keys = |l: &str| -> Option<String> {
        let t = l.trim_start();
        if l.len() == t.len() || t.starts_with('#') {
            return None;
        }
        let (k, _) = t
            .split_once(": ")
            .or_else(|| t.strip_suffix(':').map(|k| (k, "")))?;
        let k = k.to_string();
        // (A continuation line of a long formula may start with `: `.)
        (!k.is_empty()
            && !derivatives::ENTRY_KEYS.contains(&k.as_str())
            && !derivatives::DISPATCH_KEYS.contains(&k.as_str())
            && k.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ',' || c == ' '))
        .then_some(k)
    };
    let formula_lines = text.lines().filter_map(keys).count();
    let formulas: Vec<&derivatives::Formula> = file
        .entries
        .iter()
        .flat_map(|e| e.dispatch.iter().flat_map(|d| &d.formulas))
        .collect();
    assert_eq!(formulas.len(), formula_lines);
    let with_dispatch = file.entries.iter().filter(|e| e.has_dispatch).count();
    assert_eq!(with_dispatch, text.matches("\n  dispatch:\n").count());
    let with_od = file
        .entries
        .iter()
        .filter(|e| e.output_differentiability.is_some())
        .count();
    assert_eq!(
        with_od,
        text.matches("\n  output_differentiability:").count()
    );

    let mut by_kind: BTreeMap<String, usize> = BTreeMap::new();
    for f in &formulas {
        *by_kind
            .entry(format!("{:?} {:?}", f.direction, f.body))
            .or_default() += 1;
    }
    let count = |d: Direction, b: Body| by_kind.get(&format!("{d:?} {b:?}")).copied().unwrap_or(0);
    assert_eq!(
        count(Direction::Backward, Body::NonDifferentiable),
        text.matches(": non_differentiable\n").count()
    );
    assert_eq!(
        count(Direction::Forward, Body::AutoElementWise)
            + count(Direction::Forward, Body::AutoLinear),
        text.matches(": auto_element_wise\n").count() + text.matches(": auto_linear\n").count()
    );

    let resolution = derivatives::resolve(&file, &ops).unwrap_or_else(|d| panic!("{d}"));
    assert_eq!(resolution.entries.len(), file.entries.len());
    let resolved = resolution.entries.len();
    // Each entry names the operator of its own schema.
    for (e, r) in file.entries.iter().zip(&resolution.entries) {
        assert_eq!(r.operator, e.schema.name.to_string(), "line {}", e.line);
    }
    let generated = resolution.entries.iter().filter(|r| r.generated).count();
    let mut sources: BTreeMap<FormulaSource, usize> = BTreeMap::new();
    for o in resolution.operators.values() {
        *sources.entry(o.source).or_default() += 1;
    }
    assert_eq!(sources[&FormulaSource::Exact], file.entries.len());
    println!(
        "{} entries ({with_dispatch} with dispatch:, {with_od} with output_differentiability:), \
         {} formulas: {by_kind:?}",
        file.entries.len(),
        formulas.len()
    );
    println!(
        "resolved {resolved}/{} ({:.1}%), {generated} to generated operators; \
         {} operators (of {} written, and those autogen adds) get formulas: {sources:?}",
        file.entries.len(),
        100.0 * resolved as f64 / file.entries.len() as f64,
        resolution.operators.len(),
        ops.entries.len()
    );
}
