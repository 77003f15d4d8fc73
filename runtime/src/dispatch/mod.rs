//! Dispatcher (placeholder module path; filled in below).
use std::fmt;

/// A dispatch key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DispatchKey {
    /// CPU backend.
    CPU,
}

impl fmt::Display for DispatchKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self:?}")
    }
}
