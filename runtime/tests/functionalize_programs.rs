//! Functionalization against eager execution over random programs of views
//! and in-place operators (`opforge::view_programs`): each program runs
//! eagerly and under `functionalize`, and the functionalized outcome is what
//! PyTorch's rules make of the eager one (the same outputs or the same
//! failure; inputs written back, restrided only where their shape changed).
//! The case count is small for debug builds; `OPFORGE_PROGRAMS=<n>` runs
//! more, and the fuzz target `functionalize_diff` runs them by the million.

use opforge::view_programs::{
    differences, expected_functionalized, generate, run, Bytes, Mode, Program, Seeded, EXACT_BITS,
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

/// What the fuzz target `functionalize_diff` found first (its seed
/// `values_past_float32`): repeated squaring took values to infinity, where
/// `expand`'s inverse (`base + sum_to(mutated - base)`) gives NaN. Generated
/// values now stay exact in float32, so the two computations agree.
const SQUARED_TO_INFINITY: &[u8] = &[
    0x81, 0x81, 0x81, 0x81, 0x81, 0x81, 0x81, 0x41, 0x81, 0x81, 0x81, 0x81, 0x81, 0x7f, 0x09, 0xe0,
    0x4f, 0x4c, 0xa3, 0x55, 0x83, 0x1e, 0x3d, 0x10, 0xdd, 0x90, 0x6e, 0x25, 0x62, 0x62, 0x62, 0x62,
    0x62, 0x62, 0x62, 0x62, 0x62, 0x62, 0x62, 0x62, 0x62, 0x62, 0xdf, 0x10, 0xdd, 0x90, 0x6e, 0x25,
    0x62, 0x62, 0x62, 0x62, 0x62, 0x62, 0x62, 0x62, 0x62, 0x62, 0x62, 0x62, 0x62, 0x62, 0x62, 0x62,
    0x62, 0x62, 0x62, 0x62, 0x62, 0x62, 0x62, 0x62, 0x62, 0x62, 0x62, 0x62, 0x62, 0x62, 0x62, 0x62,
    0x10, 0xdd, 0x90, 0x6e, 0x25, 0x62, 0x62, 0x62, 0x62, 0x62, 0x62, 0x62, 0x62, 0x62, 0x62, 0x62,
    0x62, 0x62, 0x62, 0x62, 0x62, 0x62, 0x62, 0x6e, 0x25, 0x62, 0x62, 0x62, 0x62, 0x62, 0x62, 0x62,
    0x05, 0x05, 0x05, 0x05, 0x62, 0x62, 0x62, 0x62, 0x72, 0x62, 0x62, 0x62, 0x62, 0x62, 0x62, 0x62,
    0x62, 0x62, 0x62, 0x62, 0x62, 0x62, 0x62, 0x62, 0xb8, 0xf3, 0x40, 0x09, 0x49, 0x3f, 0x5b, 0x31,
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x1b, 0x88, 0xff,
];

#[test]
fn generated_values_stay_exact() {
    let bound = 2f64.powi(EXACT_BITS);
    let programs = (0..300)
        .map(|seed| generate(&mut Seeded::new(seed)))
        .chain([generate(&mut Bytes::new(SQUARED_TO_INFINITY))]);
    for p in programs {
        let eager = run(&p, Mode::Eager).unwrap();
        for r in eager.outputs.iter().chain(&eager.inputs) {
            for &v in &r.values {
                assert!(
                    v.abs() < bound && (v * bound).fract() == 0.0,
                    "{v} in\n{}",
                    p.describe()
                );
            }
        }
        let func = run(&p, Mode::Functionalized).unwrap();
        if let Some(want) = expected_functionalized(&p).unwrap() {
            assert_eq!(
                differences(&want, &func),
                Vec::<String>::new(),
                "{}",
                p.describe()
            );
        }
    }
}
