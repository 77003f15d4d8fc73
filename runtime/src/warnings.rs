//! Warnings, as Python's `warnings.warn` does them with its default filter: a
//! text is printed to standard error once per process (`UserWarning: …`),
//! unless the thread is recording warnings ([`catch_warnings`], Python's
//! `warnings.catch_warnings(record=True)`), which then gets every one.
//!
//! ```
//! use opforge::warnings::{catch_warnings, warn};
//! let ((), got) = catch_warnings(|| {
//!     warn("first");
//!     warn("first");
//! });
//! assert_eq!(got, ["first", "first"]);
//! ```

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::sync::Mutex;

thread_local! {
    /// One list per [`catch_warnings`] in force on this thread, innermost last.
    static RECORDING: RefCell<Vec<Vec<String>>> = const { RefCell::new(Vec::new()) };
}

/// Issues a warning: recorded by the innermost [`catch_warnings`] of this
/// thread if there is one, else printed to standard error the first time the
/// process sees this text.
pub fn warn(text: &str) {
    let recorded = RECORDING
        .try_with(|r| match r.borrow_mut().last_mut() {
            Some(list) => {
                list.push(text.to_string());
                true
            }
            None => false,
        })
        .unwrap_or(false);
    if recorded {
        return;
    }
    static SEEN: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());
    let mut seen = SEEN.lock().unwrap_or_else(|e| e.into_inner());
    if seen.insert(text.to_string()) {
        eprintln!("UserWarning: {text}");
    }
}

/// Runs `f`, recording the warnings this thread issues meanwhile instead of
/// printing them; returns `f`'s result and the warnings, in order.
pub fn catch_warnings<R>(f: impl FnOnce() -> R) -> (R, Vec<String>) {
    /// Ends the recording even if `f` panics.
    struct Recording;
    impl Drop for Recording {
        fn drop(&mut self) {
            let _ = RECORDING.try_with(|r| r.borrow_mut().pop());
        }
    }
    RECORDING.with(|r| r.borrow_mut().push(Vec::new()));
    let guard = Recording;
    let result = f();
    let got = RECORDING.with(|r| r.borrow_mut().last_mut().map(std::mem::take));
    drop(guard);
    (result, got.unwrap_or_default())
}
