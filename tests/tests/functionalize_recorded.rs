//! Random programs of views and in-place operators recorded from PyTorch
//! 2.15 (`tests/data/recorded/functionalize_programs.jsonl`, by
//! `tests/record/functionalize_programs.py`), replayed: opforge's
//! `functionalize` gives what PyTorch's `torch.func.functionalize` gave
//! (outputs, inputs afterwards, the failing step and its message), opforge's
//! eager run what PyTorch's eager run gave, and `expected_functionalized`'s
//! rules, worked out from the eager run, what PyTorch's functionalize gave.

use opforge_tests::view_programs::{
    differences, expected_functionalized, run, Mode, Outcome, Program,
};
use serde_json::Value as Json;

#[test]
fn recorded_programs_match_pytorch() {
    let path = opforge_tests::recorded("functionalize_programs.jsonl");
    let text = opforge_tests::read(&path);
    let (mut n, mut failures) = (0, Vec::new());
    for (line, rec) in text.lines().filter(|l| !l.trim().is_empty()).enumerate() {
        let rec: Json = serde_json::from_str(rec).unwrap();
        let p = Program::from_json(&rec["program"]).unwrap();
        let torch_func = Outcome::from_json(&rec["functionalized"]).unwrap();
        let torch_eager = Outcome::from_json(&rec["eager"]).unwrap();
        n += 1;
        let mut d = Vec::new();
        let func = run(&p, Mode::Functionalized).unwrap();
        d.extend(
            differences(&torch_func, &func)
                .into_iter()
                .map(|e| format!("functionalized: {e}")),
        );
        let eager = run(&p, Mode::Eager).unwrap();
        d.extend(
            differences(&torch_eager, &eager)
                .into_iter()
                .map(|e| format!("eager: {e}")),
        );
        if let Some(want) = expected_functionalized(&p).unwrap() {
            d.extend(
                differences(&want, &torch_func)
                    .into_iter()
                    .map(|e| format!("rules: {e}")),
            );
        }
        if !d.is_empty() {
            failures.push(format!(
                "line {}:\n{}{}",
                line + 1,
                p.describe(),
                d.join("\n")
            ));
        }
    }
    assert!(n >= 400, "{n} recorded programs");
    assert!(
        failures.is_empty(),
        "{} of {n} recorded programs differ from PyTorch:\n{}",
        failures.len(),
        failures
            .iter()
            .take(5)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n\n")
    );
}
