//! Errors: one enum for everything the runtime can refuse. Bad user input never
//! panics; it comes back as an [`Error`] naming the operator where one is involved.

use crate::keys::DispatchKey;

/// The runtime's error type. Two words wide: messages are a boxed [`Message`].
///
/// ```
/// use opforge::{Error, Tensor};
/// fn check(t: &Tensor) -> opforge::Result<()> {
///     if t.dim() != 1 {
///         return Err(Error::Runtime(format!("expected 1-D, got {}-D", t.dim()).into()));
///     }
///     Ok(())
/// }
/// let err = check(&Tensor::scalar(1.0f32)).unwrap_err();
/// assert!(matches!(&err, Error::Runtime(m) if m == "expected 1-D, got 0-D"));
/// assert_eq!(err.python_class(), "RuntimeError");
/// ```
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
    UnknownOp(Message),
    /// Problems found while registering the program's operators and kernels
    /// (two kernels for one operator and key, a kernel written for another
    /// schema, two schemas for one operator name): the first call into the
    /// dispatcher returns them, and calls of an operator involved keep failing.
    #[error("{}", registration_text(.0))]
    #[allow(clippy::box_collection, reason = "one pointer keeps Error two words")]
    Registration(Box<Vec<Error>>),
    /// A runtime error raised by a kernel, worded like PyTorch's `RuntimeError`.
    #[error("{0}")]
    Runtime(Message),
    /// A type error (wrong argument kind), worded like PyTorch's `TypeError`.
    #[error("{0}")]
    Type(Message),
    /// An index out of range, worded like PyTorch's `IndexError`.
    #[error("{0}")]
    Index(Message),
    /// A value error, worded like PyTorch's `ValueError`.
    #[error("{0}")]
    Value(Message),
    /// A missing or read-only attribute, worded like PyTorch's `AttributeError`.
    #[error("{0}")]
    Attribute(Message),
    /// An operation PyTorch does not implement for these inputs (e.g. a dtype a
    /// kernel has no loop for), like PyTorch's `NotImplementedError`.
    #[error("{0}")]
    NotImplemented(Message),
    /// A failed [`crate::autograd::gradcheck()`] or
    /// [`crate::autograd::gradgradcheck()`] (a Jacobian mismatch, a backward
    /// that is not reentrant, …), worded like PyTorch's
    /// `torch.autograd.gradcheck.GradcheckError` (a `RuntimeError`), which
    /// Python prints as `GradcheckError: <message>`. With
    /// `raise_exception: false` these checks return `Ok(false)` instead.
    #[error("{0}")]
    Gradcheck(Message),
    /// A call fake tensors cannot make ([`crate::fake`]), as PyTorch's fake
    /// tensor exceptions: which one, and its message (for the operator
    /// exceptions, the operator as Python prints it: `aten.nonzero.default`).
    #[error("{1}")]
    Fake(FakeException, Message),
    /// A failed [`crate::opcheck::opcheck`]: which test family failed and
    /// why, as PyTorch's `OpCheckError`.
    #[error("{0}")]
    OpCheck(Message),
    /// A failed internal check PyTorch makes with Python's `assert`
    /// (`AssertionError`): `with_effects` refusing an operator with alias
    /// annotations (`Ops with aliasing is not supported`), a wrong count of
    /// results.
    #[error("{0}")]
    Assertion(Message),
}

/// PyTorch's fake tensor exceptions ([`Error::Fake`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FakeException {
    /// An operator with neither a Meta kernel nor a fake kernel
    /// (`UnsupportedOperatorException`).
    UnsupportedOperator,
    /// An operator whose output shape depends on the data
    /// (`dynamic_output_shape` tag: `nonzero`, `masked_select`, …;
    /// `DynamicOutputShapeException`).
    DynamicOutputShape,
    /// An operator whose output is the data (`data_dependent_output` tag:
    /// `_local_scalar_dense`, `item`; `DataDependentOutputException`).
    DataDependentOutput,
    /// Fake tensors that claim different devices
    /// (`FakeTensorDeviceMismatchError`).
    DeviceMismatch,
    /// A real tensor in a call under a fake mode that does not allow them
    /// (PyTorch's `AssertionError`).
    NonFakeInput,
    /// Fakes of two fake modes in one call, the acting mode not allowing
    /// non-fake inputs (PyTorch's `AssertionError`, "Mixing fake modes NYI").
    MixedModes,
}

impl FakeException {
    /// The Python exception class.
    pub fn python_class(self) -> &'static str {
        match self {
            FakeException::UnsupportedOperator => "UnsupportedOperatorException",
            FakeException::DynamicOutputShape => "DynamicOutputShapeException",
            FakeException::DataDependentOutput => "DataDependentOutputException",
            FakeException::DeviceMismatch => "FakeTensorDeviceMismatchError",
            FakeException::NonFakeInput | FakeException::MixedModes => "AssertionError",
        }
    }
}

impl Error {
    /// The Python exception class PyTorch raises for this error.
    pub fn python_class(&self) -> &'static str {
        match self {
            Error::Type(_) => "TypeError",
            Error::Index(_) => "IndexError",
            Error::Value(_) => "ValueError",
            Error::Attribute(_) => "AttributeError",
            Error::Assertion(_) => "AssertionError",
            // PyTorch raises "Could not run '...' with arguments from the '...'
            // backend" as a NotImplementedError.
            Error::NotImplemented(_) | Error::NoKernel(_) => "NotImplementedError",
            Error::Gradcheck(_) => "GradcheckError",
            Error::Fake(kind, _) => kind.python_class(),
            Error::OpCheck(_) => "OpCheckError",
            _ => "RuntimeError",
        }
    }
}

fn registration_text(errors: &[Error]) -> String {
    let mut s = format!(
        "{} registration error{} (operators and kernels linked into this program):",
        errors.len(),
        if errors.len() == 1 { "" } else { "s" }
    );
    for e in errors {
        s.push_str("\n  ");
        s.push_str(&e.to_string().replace('\n', "\n    "));
    }
    s
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

/// An error's message. One pointer wide (the text is boxed), so that an
/// [`Error`] is two words and a `Result<Tensor>` comes back in registers: results
/// pass through every layer of a call. Reads as a `String` (`Deref`), compares
/// with strings, and is made from one with `.into()`.
#[derive(Clone, PartialEq, Eq, Hash, Default)]
#[allow(
    clippy::box_collection,
    reason = "one pointer instead of a String's three words keeps Error and results small"
)]
pub struct Message(Box<String>);

impl Message {
    /// The text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::ops::Deref for Message {
    type Target = String;
    fn deref(&self) -> &String {
        &self.0
    }
}

impl From<String> for Message {
    fn from(s: String) -> Message {
        Message(Box::new(s))
    }
}

impl From<&str> for Message {
    fn from(s: &str) -> Message {
        Message(Box::new(s.to_string()))
    }
}

impl From<Message> for String {
    fn from(m: Message) -> String {
        *m.0
    }
}

impl std::fmt::Display for Message {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(&**self.0, f)
    }
}

impl std::fmt::Debug for Message {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&**self.0, f)
    }
}

impl PartialEq<str> for Message {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for Message {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl PartialEq<String> for Message {
    fn eq(&self, other: &String) -> bool {
        *self.0 == *other
    }
}

/// `Result` with the runtime's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Returns early with `Error::Runtime(format!(...).into())` unless the condition holds.
#[macro_export]
macro_rules! ensure {
    ($cond:expr, $($fmt:tt)+) => {
        if !$cond {
            return Err($crate::Error::Runtime(format!($($fmt)+).into()));
        }
    };
}

/// Returns early with `Error::Runtime(format!(...).into())`.
#[macro_export]
macro_rules! bail {
    ($($fmt:tt)+) => {
        return Err($crate::Error::Runtime(format!($($fmt)+).into()))
    };
}
