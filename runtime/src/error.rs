//! Errors: one enum for everything the runtime can refuse. Bad user input never
//! panics; it comes back as an [`Error`] naming the operator where one is involved.

use crate::dispatch::DispatchKey;

/// The runtime's error type.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Error {
    /// No kernel is registered for the key the call dispatched to.
    #[error("{0}")]
    NoKernel(Box<NoKernel>),
    /// A kernel was registered twice for the same operator and key.
    #[error("{0}")]
    DuplicateKernel(Box<DuplicateKernel>),
    /// An operator name that is not in the schema tables.
    #[error("unknown operator {0}")]
    UnknownOp(String),
    /// A runtime error raised by a kernel, worded like PyTorch's `RuntimeError`.
    #[error("{0}")]
    Runtime(String),
    /// A type error (wrong argument kind), worded like PyTorch's `TypeError`.
    #[error("{0}")]
    Type(String),
    /// An index out of range, worded like PyTorch's `IndexError`.
    #[error("{0}")]
    Index(String),
    /// A value error, worded like PyTorch's `ValueError`.
    #[error("{0}")]
    Value(String),
    /// An operation PyTorch does not implement for these inputs (e.g. a dtype a
    /// kernel has no loop for), like PyTorch's `NotImplementedError`.
    #[error("{0}")]
    NotImplemented(String),
}

impl Error {
    /// The Python exception class PyTorch raises for this error.
    pub fn python_class(&self) -> &'static str {
        match self {
            Error::Type(_) => "TypeError",
            Error::Index(_) => "IndexError",
            Error::Value(_) => "ValueError",
            // PyTorch raises "Could not run '...' with arguments from the '...'
            // backend" as a NotImplementedError.
            Error::NotImplemented(_) | Error::NoKernel(_) => "NotImplementedError",
            _ => "RuntimeError",
        }
    }
}

/// What [`Error::NoKernel`] says. Boxed (as is [`DuplicateKernel`]) so that an
/// [`Error`] stays small: every `Result` in the runtime is moved through several
/// calls, and a smaller one moves in fewer words.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("Could not run '{op}' with arguments from the '{key}' backend. '{op}' is only available for these backends: [{available}].")]
pub struct NoKernel {
    /// The operator (`aten::add.Tensor`).
    pub op: String,
    /// The key the call dispatched to.
    pub key: DispatchKey,
    /// The keys that do have kernels, comma-separated.
    pub available: String,
}

/// What [`Error::DuplicateKernel`] says.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("duplicate kernel for {op} on {key}: registered at {first} and at {second}")]
pub struct DuplicateKernel {
    /// The operator.
    pub op: String,
    /// The key.
    pub key: DispatchKey,
    /// Where the first registration is (`file:line`).
    pub first: String,
    /// Where the second registration is.
    pub second: String,
}

/// `Result` with the runtime's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Returns early with `Error::Runtime(format!(...))` unless the condition holds.
#[macro_export]
macro_rules! ensure {
    ($cond:expr, $($fmt:tt)+) => {
        if !$cond {
            return Err($crate::Error::Runtime(format!($($fmt)+)));
        }
    };
}

/// Returns early with `Error::Runtime(format!(...))`.
#[macro_export]
macro_rules! bail {
    ($($fmt:tt)+) => {
        return Err($crate::Error::Runtime(format!($($fmt)+)))
    };
}
