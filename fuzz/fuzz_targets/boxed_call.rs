//! Boxed calls into the built-in operators: one call, built three times from
//! the same bytes out of fresh tensors, runs down the slow path (parse, bind,
//! dispatch), the fast path (precomputed binding plan) and the shape cache; all
//! three give the same results, leave the inputs in the same state, and never
//! panic or abort (allocations are capped, so absurd sizes are errors).
#![no_main]

use libfuzzer_sys::fuzz_target;
use opforge::argparse::{call_dispatch_slow, call_dispatch_unchecked};

#[path = "../src/calls.rs"]
mod calls;

fuzz_target!(|data: &[u8]| {
    calls::cap_allocations();
    let (table, _) = calls::table();
    let c = calls::call(data);
    let Some(binding) = table.get(&c.api) else { return };
    let fresh = calls::fresh_table(binding);
    let mut seen = Vec::new();
    for path in 0..3 {
        let c = calls::call(data);
        let inputs: Vec<_> = c.args.iter().chain(c.kwargs.iter().map(|(_, v)| v)).cloned().collect();
        let r = if path == 0 {
            call_dispatch_slow(&fresh, &c.api, c.args, c.kwargs)
        } else {
            call_dispatch_unchecked(&fresh, &c.api, c.args, c.kwargs)
        };
        seen.push((calls::describe(&r), calls::describe(&Ok(inputs))));
    }
    assert_eq!(seen[0], seen[1], "{}: slow vs fast", c.api);
    assert_eq!(seen[1], seen[2], "{}: fast vs shape cache", c.api);
});
