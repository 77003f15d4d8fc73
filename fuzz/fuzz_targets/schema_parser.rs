//! Arbitrary text → `parse_schema`. A schema that parses prints back exactly,
//! parses again to the same value, and its invariants can be checked.
#![no_main]

use libfuzzer_sys::fuzz_target;
use opforge_schema::schema::{check_invariants, parse_schema};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if text.len() > 4096 {
        return;
    }
    let Ok(schema) = parse_schema(text) else {
        return;
    };
    let printed = schema.to_string();
    assert_eq!(printed, text, "the printed schema is the source");
    let again = parse_schema(&printed).expect("a printed schema parses");
    assert_eq!(again, schema, "parse(print(s)) == s");
    assert_eq!(again.to_string(), printed, "printing is stable");
    let _ = check_invariants(&schema);
});
