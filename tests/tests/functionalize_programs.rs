//! Functionalization against eager execution over random programs of views
//! and in-place operators (`opforge_tests::view_programs`): each program runs
//! eagerly and under `functionalize`, and the functionalized outcome is what
//! PyTorch's rules make of the eager one (the same outputs or the same
//! failure; inputs written back, restrided only where their shape changed).
//! The case count is small for debug builds; `OPFORGE_PROGRAMS=<n>` runs
//! more, and the fuzz target `functionalize_diff` runs them by the million.

use opforge_tests::view_programs::{
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

/// The fuzz target's second finding (seed `refused_after_checked`): a write
/// through a chain with `as_strided` that also fails to broadcast fails
/// with the broadcast message, as in PyTorch (the write is checked on meta
/// tensors before it is recorded and refused).
const BROADCAST_BEFORE_REFUSAL: &[u8] = &[
    0x11, 0xdd, 0x9b, 0x66, 0xb0, 0x5e, 0x57, 0x11, 0xa7, 0xcd, 0x1d, 0xf0, 0xca, 0x19, 0x35, 0x2f,
    0x43, 0xee, 0x61, 0x6a, 0x5e, 0x36, 0xc6, 0x45, 0x50, 0x18, 0x2f, 0x5a, 0x10, 0x08, 0x3d, 0xcd,
    0xaa, 0x27, 0x87, 0x19, 0xf0, 0xd7, 0x8e, 0x55, 0xe3, 0x47, 0xe4, 0xdc, 0x3a, 0x79, 0xf6, 0x0a,
    0x2e, 0x62, 0x4b, 0x9d, 0x1a, 0x1d, 0xb6, 0x10, 0x23, 0x68, 0xbe, 0x74, 0x23, 0x68, 0x0c, 0x05,
    0xdd, 0xcd, 0x07, 0x2b, 0xea, 0xee, 0x61, 0x9b,
];

#[test]
fn generated_values_stay_exact() {
    let bound = 2f64.powi(EXACT_BITS);
    let programs = (0..300).map(|seed| generate(&mut Seeded::new(seed))).chain(
        [SQUARED_TO_INFINITY, BROADCAST_BEFORE_REFUSAL].map(|b| generate(&mut Bytes::new(b))),
    );
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
