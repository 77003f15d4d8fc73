//! The API-level argument parser: for any call, the fast path
//! (`parse_and_bind`) and PyTorch's algorithm step by step
//! (`parse_and_bind_slow`) give the same binding or the same error, and
//! neither panics.
#![no_main]

use libfuzzer_sys::fuzz_target;
use opforge::argparse::{parse_and_bind, parse_and_bind_slow, Bound};

#[path = "../src/calls.rs"]
mod calls;

fn describe(r: &Result<Bound<'_>, opforge::Error>) -> String {
    match r {
        Ok(b) => format!("{} {:?}", b.overload, b.values),
        Err(e) => format!("{}: {e}", e.python_class()),
    }
}

fuzz_target!(|data: &[u8]| {
    let c = calls::call(data);
    let (table, _) = calls::table();
    let schema_of = |n: &str| opforge::OpId::from_name(n).map(|id| id.schema());
    let fast = parse_and_bind(table, &schema_of, &c.api, c.args.clone(), c.kwargs.clone());
    let slow = parse_and_bind_slow(table, &schema_of, &c.api, c.args, c.kwargs);
    assert_eq!(describe(&fast), describe(&slow), "{}", c.api);
});
