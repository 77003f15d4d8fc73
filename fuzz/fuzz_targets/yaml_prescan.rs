//! Arbitrary text → the YAML pre-scan (`opforge_schema::yaml::Scan`) against
//! libyaml's own token stream (the scanner serde_yaml runs). Up to libyaml's
//! first error, the pre-scan never sees less flow nesting than libyaml opens
//! (that nesting is what makes libyaml slow), and where libyaml reads the whole
//! text it sees exactly as much. Its total (block and flow) nesting may be one
//! less than libyaml's, which opens a block mapping before a key that is a flow
//! collection (`[a]: b`) only when it reaches the `:`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use opforge_schema::yaml::{Scan, MAX_YAML_DEPTH};
use std::mem::MaybeUninit;
use unsafe_libyaml::*;

/// libyaml's scanner over one input: initialised on creation, deleted once on
/// drop, borrowing the input for as long as it lives (the lifetime `'a`).
struct Scanner<'a> {
    parser: Box<MaybeUninit<yaml_parser_t>>,
    _input: std::marker::PhantomData<&'a str>,
}

impl<'a> Scanner<'a> {
    fn new(src: &'a str) -> Scanner<'a> {
        let mut parser = Box::new(MaybeUninit::<yaml_parser_t>::uninit());
        let p = parser.as_mut_ptr();
        // SAFETY: `p` points at writable memory for a `yaml_parser_t`, which
        // `yaml_parser_initialize` fills in; it fails only on allocation
        // failure, checked here before the parser is used.
        assert!(unsafe { yaml_parser_initialize(p) }.ok);
        // SAFETY: the parser is initialised; the input pointer and length come
        // from one `&str` that the `'a` borrow keeps alive and unchanged for as
        // long as the scanner, which is the only thing that reads it.
        unsafe { yaml_parser_set_input_string(p, src.as_ptr(), src.len() as u64) };
        Scanner {
            parser,
            _input: std::marker::PhantomData,
        }
    }

    /// The type of the next token, or `None` at libyaml's first error.
    fn next(&mut self) -> Option<yaml_token_type_t> {
        let mut token = MaybeUninit::<yaml_token_t>::uninit();
        let t = token.as_mut_ptr();
        // SAFETY: the parser was initialised in `new` and not deleted (that is
        // only `drop`); `t` is writable memory for one token.
        if unsafe { yaml_parser_scan(self.parser.as_mut_ptr(), t) }.fail {
            return None;
        }
        // SAFETY: `yaml_parser_scan` succeeded, so it initialised the token;
        // its type is read once, then the token is deleted once and not used
        // again.
        unsafe {
            let ty = (*t).type_;
            yaml_token_delete(t);
            Some(ty)
        }
    }
}

impl Drop for Scanner<'_> {
    fn drop(&mut self) {
        // SAFETY: initialised in `new`; `drop` runs once, so it is deleted once.
        unsafe { yaml_parser_delete(self.parser.as_mut_ptr()) }
    }
}

/// libyaml's deepest flow nesting and deepest nesting of collections, and
/// whether it stopped with an error (or at twice the limit).
fn libyaml(src: &str) -> (usize, usize, bool) {
    let mut scanner = Scanner::new(src);
    let (mut flow, mut block, mut max_flow, mut max_total) = (0usize, 0usize, 0, 0);
    loop {
        let Some(ty) = scanner.next() else {
            return (max_flow, max_total, true);
        };
        match ty {
            YAML_FLOW_SEQUENCE_START_TOKEN | YAML_FLOW_MAPPING_START_TOKEN => flow += 1,
            YAML_FLOW_SEQUENCE_END_TOKEN | YAML_FLOW_MAPPING_END_TOKEN => {
                flow = flow.saturating_sub(1)
            }
            YAML_BLOCK_SEQUENCE_START_TOKEN | YAML_BLOCK_MAPPING_START_TOKEN => block += 1,
            YAML_BLOCK_END_TOKEN => block = block.saturating_sub(1),
            YAML_STREAM_END_TOKEN | YAML_NO_TOKEN => return (max_flow, max_total, false),
            _ => {}
        }
        max_flow = max_flow.max(flow);
        max_total = max_total.max(flow + block);
        if max_total > 2 * MAX_YAML_DEPTH {
            return (max_flow, max_total, true);
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(src) = std::str::from_utf8(data) else {
        return;
    };
    if src.len() > 4096 {
        return;
    }
    let (flow, total, stopped) = libyaml(src);
    match Scan::run(src) {
        Ok(scan) => {
            assert!(
                scan.max_flow_depth >= flow && scan.max_depth + 1 >= total,
                "pre-scan {scan:?} saw less than libyaml (flow {flow}, total {total})"
            );
            if !stopped {
                assert_eq!(
                    scan.max_flow_depth, flow,
                    "flow nesting differs from libyaml's"
                );
            }
        }
        Err(at) => {
            // Too deep for the pre-scan: libyaml must not read the whole text
            // within the limit.
            assert!(
                stopped || total + 1 > MAX_YAML_DEPTH,
                "pre-scan stopped at {at:?}, libyaml read it all (flow {flow}, total {total})"
            );
        }
    }
});
