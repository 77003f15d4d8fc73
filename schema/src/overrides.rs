//! Derive: the overridable-function list and testing stubs.
//!
//! PyTorch's `torch.overrides.get_overridable_functions()` lists, per namespace, every
//! public callable that goes through `__torch_function__`; `get_testing_overrides()`
//! maps each to a dummy with the same signature. The generated part of both comes
//! from the Python API bindings ([`crate::python`]); hand-written methods and
//! properties are added by the runtime.
//!
//! Rules (PyTorch's `torch/overrides.py`, `get_testing_overrides` and
//! `get_ignored_functions`): the scanned namespaces are `torch`,
//! `torch.nn.functional`, `torch.linalg`, `torch.fft`, `torch.special` and `Tensor`;
//! outside `Tensor`, private names (`_x`), inplace names (`x_`) and names not
//! starting with a lower-case letter are not overridable; on `Tensor` every member
//! is.

use crate::python::Binding;
use crate::scalar_type::ScalarType;
/// The signature-string parser ([`crate::signature`]), re-exported where it used to live.
pub use crate::signature::{parse_sig, SigParam, SigString};

/// Namespaces whose callables can be overridden, in PyTorch's scanning order.
pub const OVERRIDABLE_NAMESPACES: [&str; 6] = [
    "torch",
    "torch.nn.functional",
    "Tensor",
    "torch.linalg",
    "torch.fft",
    "torch.special",
];

/// One overridable function and its testing stub.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Overridable {
    /// The namespace (`torch`, `Tensor`, `torch.linalg`, …).
    pub namespace: String,
    /// The name inside it (`add`).
    pub name: String,
    /// The testing stub: a Python lambda with the same parameters returning `-1`,
    /// e.g. `lambda input, other, *, alpha=1, out=None: -1`.
    pub stub: String,
}

/// A default as Python source: C++ enum-like defaults PyTorch's binding carries
/// (`at::Reduction::Mean`, `{-2,-1}`) become the Python values they stand for.
pub fn python_literal(default: &str) -> String {
    if let Some(v) = crate::enums::by_cpp(default) {
        return v.python.to_string();
    }
    match default.strip_prefix('{').and_then(|d| d.strip_suffix('}')) {
        Some(items) => {
            let items: Vec<&str> = items.split(',').map(str::trim).collect();
            if items.len() == 1 && !items[0].is_empty() {
                format!("({},)", items[0])
            } else {
                format!("({})", items.join(", "))
            }
        }
        None => match default
            .strip_prefix("at::k")
            .and_then(ScalarType::from_c10_name)
        {
            // `at::kLong` → `torch.int64`
            Some(t) => format!("torch.{}", t.name()),
            None => default.to_string(),
        },
    }
}

/// The testing stub for a binding: a lambda that accepts every call the binding
/// accepts (handlers receive calls in any of its forms) and returns `-1`, as
/// PyTorch's hand-written `get_testing_overrides()` entries do
/// (`torch.sum: lambda input, dim=None: -1`,
/// `torch.div: lambda input, other, rounding_mode=None, out=None: -1`).
///
/// The parameters are those of the widest non-hidden signature (the first with
/// the most parameters; any signature if all are hidden), with `self` first for
/// methods, widened against the other visible signatures:
/// - a positional parameter stays required only if every visible signature
///   requires a parameter of that name at that position (`torch.sum(x)` and
///   `torch.sum(x, dim)`: `dim=None`; `torch.arange(end)` and
///   `torch.arange(start, end)`: both optional);
/// - a keyword-only one only if every visible signature requires it
///   (`torch.div`'s `rounding_mode=None`);
/// - keywords only other signatures have are appended as optional keyword-only
///   parameters (`=None`).
///
/// Defaults are written as Python values ([`python_literal`]).
pub fn stub(binding: &Binding) -> Result<String, String> {
    let sigs: Vec<SigString> = binding
        .signatures
        .iter()
        .map(|s| parse_sig(s))
        .collect::<Result<_, _>>()?;
    let visible: Vec<&SigString> = sigs.iter().filter(|s| !s.hidden).collect();
    let pool = if visible.is_empty() {
        sigs.iter().collect()
    } else {
        visible.clone()
    };
    let widest = pool
        .iter()
        .copied()
        .reduce(|a, b| {
            if b.params.len() > a.params.len() {
                b
            } else {
                a
            }
        })
        .ok_or_else(|| format!("{} has no signatures", binding.name))?;
    let mut params: Vec<StubParam> = Vec::new();
    let method = binding.name.starts_with("Tensor.");
    if method {
        params.push(StubParam {
            name: "self".into(),
            default: None,
            kwarg_only: false,
        });
    }
    params.extend(widest.params.iter().map(|p| StubParam {
        name: p.name.clone(),
        default: p.default.as_deref().map(python_literal),
        kwarg_only: p.kwarg_only,
    }));
    if visible.len() >= 2 {
        widen(&mut params, method, &visible);
    }
    let mut parts: Vec<String> = Vec::new();
    let mut star = false;
    for p in &params {
        if p.kwarg_only && !star {
            parts.push("*".into());
            star = true;
        }
        parts.push(match &p.default {
            Some(d) => format!("{}={d}", p.name),
            None => p.name.clone(),
        });
    }
    Ok(if parts.is_empty() {
        "lambda: -1".to_string()
    } else {
        format!("lambda {}: -1", parts.join(", "))
    })
}

/// One parameter of a stub being built.
struct StubParam {
    name: String,
    /// Python source of the default.
    default: Option<String>,
    kwarg_only: bool,
}

/// Widens the stub parameters `params` (receiver first for a `method`) against
/// the visible signatures `sigs` (see [`stub`]).
fn widen(params: &mut Vec<StubParam>, method: bool, sigs: &[&SigString]) {
    let required = |p: &SigParam| p.default.is_none();
    let mut index = 0usize;
    for (i, p) in params.iter_mut().enumerate() {
        let receiver = method && i == 0;
        if p.default.is_none() && !receiver {
            let keep = if p.kwarg_only {
                sigs.iter().all(|s| {
                    s.params
                        .iter()
                        .any(|q| q.name == p.name && q.kwarg_only && required(q))
                })
            } else {
                sigs.iter().all(|s| {
                    s.params
                        .iter()
                        .filter(|q| !q.kwarg_only)
                        .nth(index)
                        .is_some_and(|q| q.name == p.name && required(q))
                })
            };
            if !keep {
                p.default = Some("None".into());
            }
        }
        if !p.kwarg_only && !receiver {
            index += 1;
        }
    }
    for s in sigs {
        for q in &s.params {
            if !params.iter().any(|p| p.name == q.name) {
                params.push(StubParam {
                    name: q.name.clone(),
                    default: Some("None".into()),
                    kwarg_only: true,
                });
            }
        }
    }
}

/// The parameter list of a testing stub, as `inspect.signature` prints it:
/// `lambda input, other, *, alpha=1: -1` → `(input, other, *, alpha=1)`.
///
/// ```
/// use opforge_schema::overrides::stub_signature;
/// assert_eq!(stub_signature("lambda input, *, out=None: -1"), "(input, *, out=None)");
/// assert_eq!(stub_signature("lambda: -1"), "()");
/// ```
pub fn stub_signature(stub: &str) -> String {
    let body = stub.trim_start_matches("lambda").trim();
    let params = body.rsplit_once(':').map_or(body, |(p, _)| p).trim();
    format!("({params})")
}

/// Splits a binding name into (namespace, name): `torch.nn.functional.gelu` →
/// (`torch.nn.functional`, `gelu`).
pub fn split_binding_name(name: &str) -> (&str, &str) {
    name.rsplit_once('.').unwrap_or(("", name))
}

/// Is `name` in `namespace` overridable by PyTorch's rules?
pub fn is_overridable(namespace: &str, name: &str) -> bool {
    if !OVERRIDABLE_NAMESPACES.contains(&namespace) {
        return false;
    }
    namespace == "Tensor"
        || (!name.starts_with('_')
            && !name.ends_with('_')
            && name.chars().next().is_some_and(|c| c.is_ascii_lowercase()))
}

/// The overridable functions among `bindings`, sorted by namespace (in
/// [`OVERRIDABLE_NAMESPACES`] order) then name, each with its testing stub.
pub fn overridable(bindings: &[Binding]) -> Result<Vec<Overridable>, String> {
    let mut out = Vec::new();
    for b in bindings {
        let (ns, name) = split_binding_name(&b.name);
        if is_overridable(ns, name) {
            out.push(Overridable {
                namespace: ns.to_string(),
                name: name.to_string(),
                stub: stub(b)?,
            });
        }
    }
    let rank = |ns: &str| OVERRIDABLE_NAMESPACES.iter().position(|n| *n == ns);
    out.sort_by(|a, b| (rank(&a.namespace), &a.name).cmp(&(rank(&b.namespace), &b.name)));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn binding(name: &str, sigs: &[&str]) -> Binding {
        Binding {
            name: name.into(),
            signatures: sigs.iter().map(|s| s.to_string()).collect(),
            sources: Vec::new(),
        }
    }

    #[test]
    fn stubs() {
        let b = binding(
            "torch.add",
            &[
                "add(Tensor input, Scalar alpha, Tensor other, *, Tensor out=None)|deprecated",
                "add(Tensor input, Tensor other, *, Scalar alpha=1, Tensor out=None)",
            ],
        );
        assert_eq!(
            stub(&b).unwrap(),
            "lambda input, other, *, alpha=1, out=None: -1"
        );
        let b = binding("Tensor.abs", &["abs()"]);
        assert_eq!(stub(&b).unwrap(), "lambda self: -1");
        let b = binding(
            "torch.nn.functional.nll_loss",
            &["nll_loss(Tensor input, Tensor target, Tensor? weight=None, int64_t reduction=at::Reduction::Mean, SymInt ignore_index=-100)"],
        );
        assert_eq!(
            stub(&b).unwrap(),
            "lambda input, target, weight=None, reduction=1, ignore_index=-100: -1"
        );
        assert_eq!(python_literal("{-2,-1}"), "(-2, -1)");
        assert_eq!(python_literal("at::kLong"), "torch.int64");
        assert_eq!(python_literal("at::kDouble"), "torch.float64");
        assert_eq!(python_literal("at::kStrided"), "torch.strided");
    }

    /// Stubs accept every form of the call (PyTorch's `torch.sum: lambda input,
    /// dim=None`, `torch.div: lambda input, other, rounding_mode=None, out=None`).
    #[test]
    fn stubs_are_widened_against_every_visible_signature() {
        let b = binding(
            "torch.sum",
            &[
                "sum(Tensor input, *, ScalarType? dtype=None)",
                "sum(Tensor input, IntArrayRef[1]? dim, bool keepdim=False, *, ScalarType? dtype=None, Tensor out=None)",
            ],
        );
        assert_eq!(
            stub(&b).unwrap(),
            "lambda input, dim=None, keepdim=False, *, dtype=None, out=None: -1"
        );
        let b = binding(
            "Tensor.sum",
            &[
                "sum(*, ScalarType? dtype=None)",
                "sum(IntArrayRef[1]? dim, bool keepdim=False, *, ScalarType? dtype=None)",
            ],
        );
        assert_eq!(
            stub(&b).unwrap(),
            "lambda self, dim=None, keepdim=False, *, dtype=None: -1"
        );
        let b = binding(
            "torch.div",
            &[
                "div(Tensor input, Tensor other, *, Tensor out=None)",
                "div(Tensor input, Tensor other, *, c10::string_view? rounding_mode, Tensor out=None)",
            ],
        );
        assert_eq!(
            stub(&b).unwrap(),
            "lambda input, other, *, rounding_mode=None, out=None: -1"
        );
        // Same name at another position: optional; keywords of other forms appended.
        let b = binding(
            "torch.atleast_1d",
            &["atleast_1d(Tensor input)", "atleast_1d(TensorList tensors)"],
        );
        assert_eq!(stub(&b).unwrap(), "lambda input=None, *, tensors=None: -1");
        // Hidden signatures do not widen.
        let b = binding(
            "torch.view",
            &[
                "view(Tensor input, ScalarType dtype)",
                "view(Tensor input, SymIntArrayRef size)|hidden",
            ],
        );
        assert_eq!(stub(&b).unwrap(), "lambda input, dtype: -1");
        assert_eq!(stub_signature(&stub(&b).unwrap()), "(input, dtype)");
    }

    #[test]
    fn overridable_rules() {
        assert!(is_overridable("torch", "add"));
        assert!(!is_overridable("torch", "_add"));
        assert!(!is_overridable("torch", "add_"));
        assert!(is_overridable("Tensor", "add_"));
        assert!(is_overridable("Tensor", "__and__"));
        assert!(!is_overridable("torch.sparse", "sum"));
    }
}
