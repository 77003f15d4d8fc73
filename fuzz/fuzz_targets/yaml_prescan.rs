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

/// libyaml's deepest flow nesting and deepest nesting of collections, and
/// whether it stopped with an error (or at twice the limit).
fn libyaml(src: &str) -> (usize, usize, bool) {
    // SAFETY: the parser is initialised before use and deleted once; the input
    // outlives it; each token is deleted after its type is read.
    unsafe {
        let mut parser = MaybeUninit::<yaml_parser_t>::uninit();
        let p = parser.as_mut_ptr();
        assert!(yaml_parser_initialize(p).ok);
        yaml_parser_set_input_string(p, src.as_ptr(), src.len() as u64);
        let (mut flow, mut block, mut max_flow, mut max_total) = (0usize, 0usize, 0, 0);
        let mut stopped = false;
        loop {
            let mut token = MaybeUninit::<yaml_token_t>::uninit();
            let t = token.as_mut_ptr();
            if yaml_parser_scan(p, t).fail {
                stopped = true;
                break;
            }
            let ty = (*t).type_;
            yaml_token_delete(t);
            match ty {
                YAML_FLOW_SEQUENCE_START_TOKEN | YAML_FLOW_MAPPING_START_TOKEN => flow += 1,
                YAML_FLOW_SEQUENCE_END_TOKEN | YAML_FLOW_MAPPING_END_TOKEN => {
                    flow = flow.saturating_sub(1)
                }
                YAML_BLOCK_SEQUENCE_START_TOKEN | YAML_BLOCK_MAPPING_START_TOKEN => block += 1,
                YAML_BLOCK_END_TOKEN => block = block.saturating_sub(1),
                YAML_STREAM_END_TOKEN | YAML_NO_TOKEN => break,
                _ => {}
            }
            max_flow = max_flow.max(flow);
            max_total = max_total.max(flow + block);
            if max_total > 2 * MAX_YAML_DEPTH {
                stopped = true;
                break;
            }
        }
        yaml_parser_delete(p);
        (max_flow, max_total, stopped)
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
