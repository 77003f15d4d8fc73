//! Functionalization against eager execution over random programs of views
//! and in-place operators (`opforge::view_programs`): each program runs
//! eagerly and under `functionalize`, and the functionalized outcome is what
//! PyTorch's rules make of the eager one (the same outputs or the same
//! failure; inputs written back, restrided only where their shape changed).
//! The case count is small for debug builds; `OPFORGE_PROGRAMS=<n>` runs
//! more, and the fuzz target `functionalize_diff` runs them by the million.

use opforge::view_programs::{
    differences, expected_functionalized, generate, run, Mode, Program, Seeded,
};

fn cases() -> u64 {
    std::env::var("OPFORGE_PROGRAMS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(500)
}

#[test]
fn functionalized_programs_give_what_eager_ones_give() {
    let n = cases();
    let mut failures = Vec::new();
    let (mut errors, mut shared) = (0, 0);
    for seed in 0..n {
        let p = generate(&mut Seeded::new(seed));
        let func = run(&p, Mode::Functionalized).expect("a generated program runs");
        let Some(want) = expected_functionalized(&p).expect("a generated program runs") else {
            shared += 1;
            continue;
        };
        errors += want.error.is_some() as usize;
        let d = differences(&want, &func);
        if !d.is_empty() {
            failures.push(format!("seed {seed}:\n{}{}\n", p.describe(), d.join("\n")));
        }
    }
    eprintln!(
        "{n} programs ({errors} ending in an error, {shared} writing elements that share memory, not compared): {} differ from eager",
        failures.len()
    );
    assert!(
        failures.is_empty(),
        "{} of {n} programs differ:\n{}",
        failures.len(),
        failures
            .iter()
            .take(8)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// The JSON form reads back as the same program.
#[test]
fn programs_round_trip_through_json() {
    for seed in 0..50 {
        let p = generate(&mut Seeded::new(seed));
        let back = Program::from_json(&p.to_json()).unwrap();
        assert_eq!(back, p);
    }
}
