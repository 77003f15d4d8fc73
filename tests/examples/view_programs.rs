//! Random programs of views and in-place operators (`opforge_tests::view_programs`)
//! for side-by-side runs with PyTorch:
//!
//! ```sh
//! cargo run -p opforge-tests --example view_programs -- emit 0 400 > programs.jsonl
//! python tests/record/functionalize_programs.py programs.jsonl > records.jsonl
//! cargo run -p opforge-tests --example view_programs -- compare records.jsonl
//! ```
//!
//! `emit START COUNT` writes the programs of seeds `START..START+COUNT`, one
//! JSON line each; `compare FILE` reads PyTorch's records of them and counts
//! the programs whose functionalized outcome here differs from PyTorch's
//! functionalized one (printing the first few) and from PyTorch's eager
//! one, and checks `expected_functionalized`'s rules against PyTorch's
//! functionalize.

use opforge::Result;
use opforge_tests::view_programs::{
    differences, expected_functionalized, generate, run, Mode, Outcome, Program, Seeded,
};

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        ["emit", start, count] => {
            let (start, count): (u64, u64) = (parse(start), parse(count));
            for seed in start..start + count {
                println!("{}", generate(&mut Seeded::new(seed)).to_json());
            }
        }
        ["compare", file] => compare(file)?,
        _ => {
            eprintln!("usage: view_programs emit START COUNT | compare RECORDS.jsonl");
            std::process::exit(2);
        }
    }
    Ok(())
}

fn parse(s: &str) -> u64 {
    s.parse().unwrap_or_else(|_| {
        eprintln!("not a number: {s}");
        std::process::exit(2)
    })
}

fn compare(file: &str) -> Result<()> {
    let text = std::fs::read_to_string(file)
        .map_err(|e| opforge::Error::Runtime(format!("{file}: {e}").into()))?;
    let (mut n, mut vs_torch, mut vs_eager, mut shown) = (0, 0, 0, 0);
    let (mut modelled, mut excluded) = (0, 0);
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let rec: serde_json::Value = serde_json::from_str(line)
            .map_err(|e| opforge::Error::Runtime(format!("{file}: {e}").into()))?;
        let p = Program::from_json(&rec["program"])?;
        let ours = run(&p, Mode::Functionalized)?;
        let theirs = Outcome::from_json(&rec["functionalized"])?;
        let eager = Outcome::from_json(&rec["eager"])?;
        n += 1;
        let d = differences(&theirs, &ours);
        vs_torch += !d.is_empty() as usize;
        let our_eager = run(&p, Mode::Eager)?;
        let e = differences(&eager, &our_eager);
        if !e.is_empty() && std::env::var_os("SHOW_EAGER").is_some() {
            println!("eager: {}{}\n", p.describe(), e.join("\n"));
        }
        vs_eager += !e.is_empty() as usize;
        match expected_functionalized(&p)? {
            Some(want) => {
                let m = differences(&want, &theirs);
                if !m.is_empty() && std::env::var_os("SHOW_MODEL").is_some() {
                    println!("model: {}{}\n", p.describe(), m.join("\n"));
                }
                modelled += !m.is_empty() as usize;
            }
            None => excluded += 1,
        }
        if !d.is_empty() && shown < 10 {
            shown += 1;
            println!("{}{}\n", p.describe(), d.join("\n"));
        }
    }
    println!(
        "{n} programs: functionalized, {vs_torch} differ from PyTorch's functionalize; eagerly, {vs_eager} from PyTorch's eager run; \
         PyTorch's functionalize differs from what expected_functionalized works out of eager in {modelled}, \
         {excluded} written where elements share memory (not eager's by PyTorch's rules)"
    );
    Ok(())
}
