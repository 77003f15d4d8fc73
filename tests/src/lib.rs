//! opforge's integration tests, UI tests and conformance runners.
//!
//! - [`numeric`]: replaying recorded kernel calls (`numeric_calls.jsonl`) through
//!   the dispatcher and judging the results (used by the `numerics` binary and
//!   the `numerics` test).
//! - [`conformance`]: replaying the recorded argument-parsing corpora
//!   (`ops_calls.jsonl`, `api_calls.jsonl`) and comparing normalized arguments.

pub mod conformance;
pub mod numeric;
