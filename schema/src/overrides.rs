//! Derive: the overridable-function list and testing stubs.
//!
//! PyTorch's `torch.overrides.get_overridable_functions()` lists, per namespace, every
//! public callable that goes through `__torch_function__`; `get_testing_overrides()`
//! maps each to a dummy with the same signature. The generated part of both comes
//! from the Python API bindings ([`crate::python`]); hand-written methods and
//! properties are added by the runtime.
//!
//! Rules (spec `overrides.md` A7): the scanned namespaces are `torch`,
//! `torch.nn.functional`, `torch.linalg`, `torch.fft`, `torch.special` and `Tensor`;
//! outside `Tensor`, private names (`_x`), inplace names (`x_`) and names not
//! starting with a lower-case letter are not overridable; on `Tensor` every member
//! is.

use crate::python::Binding;

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

/// One parameter of a Python parser signature string.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SigParam {
    /// Type text (`Tensor`, `int64_t?`, `IntArrayRef[2]`).
    pub ty: String,
    /// Name.
    pub name: String,
    /// Default text, if any (`None`, `1`, `at::Reduction::Mean`).
    pub default: Option<String>,
    /// After the `*`.
    pub kwarg_only: bool,
}

/// A parsed Python parser signature string: `name(Type a, *, Type b=default)|deprecated`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SigString {
    /// The function name.
    pub name: String,
    /// Parameters in order.
    pub params: Vec<SigParam>,
    /// `|deprecated`
    pub deprecated: bool,
    /// `|hidden` (or deprecated, which implies hidden)
    pub hidden: bool,
}

/// Parses a signature string in the format PyTorch's `FunctionSignature` reads
/// (spec `arg_parser.md` §2).
///
/// ```
/// use opforge_schema::overrides::parse_sig;
/// let s = parse_sig("add(Tensor input, Tensor other, *, Scalar alpha=1, Tensor out=None)").unwrap();
/// assert_eq!(s.params.len(), 4);
/// assert!(s.params[2].kwarg_only);
/// assert_eq!(s.params[3].default.as_deref(), Some("None"));
/// ```
pub fn parse_sig(text: &str) -> Result<SigString, String> {
    let (body, suffix) = match text.rsplit_once('|') {
        Some((b, s)) if !s.contains(')') => (b, Some(s)),
        _ => (text, None),
    };
    let (deprecated, hidden) = match suffix {
        None => (false, false),
        Some("deprecated") => (true, true),
        Some("hidden") => (false, true),
        Some(other) => return Err(format!("unknown signature suffix |{other} in {text}")),
    };
    let open = body
        .find('(')
        .ok_or_else(|| format!("missing opening parenthesis: {text}"))?;
    let inner = body[open + 1..]
        .strip_suffix(')')
        .ok_or_else(|| format!("missing closing parenthesis: {text}"))?;
    let mut params = Vec::new();
    let mut kwarg_only = false;
    for p in inner.split(", ").filter(|p| !p.is_empty()) {
        if p == "*" {
            kwarg_only = true;
            continue;
        }
        let (decl, default) = match p.split_once('=') {
            Some((d, v)) => (d, Some(v.to_string())),
            None => (p, None),
        };
        let (ty, name) = decl
            .rsplit_once(' ')
            .ok_or_else(|| format!("missing type: {p}"))?;
        params.push(SigParam {
            ty: ty.to_string(),
            name: name.to_string(),
            default,
            kwarg_only,
        });
    }
    Ok(SigString {
        name: body[..open].to_string(),
        params,
        deprecated,
        hidden,
    })
}

/// A default as Python source: C++ enum-like defaults PyTorch's binding carries
/// (`at::Reduction::Mean`, `{-2,-1}`) become the Python values they stand for.
pub fn python_literal(default: &str) -> String {
    match default {
        "at::Reduction::None" => "0".into(),
        "at::Reduction::Mean" => "1".into(),
        "at::Reduction::Sum" => "2".into(),
        "c10::MemoryFormat::Contiguous" => "torch.contiguous_format".into(),
        "c10::MemoryFormat::Preserve" => "torch.preserve_format".into(),
        "at::kLong" => "torch.int64".into(),
        "at::kInt" => "torch.int32".into(),
        "at::kFloat" => "torch.float32".into(),
        "at::kDouble" => "torch.float64".into(),
        "at::kStrided" => "torch.strided".into(),
        d => match d.strip_prefix('{').and_then(|d| d.strip_suffix('}')) {
            Some(items) => {
                let items: Vec<&str> = items.split(',').map(str::trim).collect();
                if items.len() == 1 && !items[0].is_empty() {
                    format!("({},)", items[0])
                } else {
                    format!("({})", items.join(", "))
                }
            }
            None => d.to_string(),
        },
    }
}

/// The testing stub for a binding: a lambda over the parameters of its widest
/// non-hidden signature (the first with the most parameters), with `self` first for
/// methods.
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
        visible
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
    let mut parts: Vec<String> = Vec::new();
    if binding.name.starts_with("Tensor.") {
        parts.push("self".into());
    }
    let mut star = false;
    for p in &widest.params {
        if p.kwarg_only && !star {
            parts.push("*".into());
            star = true;
        }
        parts.push(match &p.default {
            Some(d) => format!("{}={}", p.name, python_literal(d)),
            None => p.name.clone(),
        });
    }
    Ok(if parts.is_empty() {
        "lambda: -1".to_string()
    } else {
        format!("lambda {}: -1", parts.join(", "))
    })
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

    #[test]
    fn signature_strings() {
        let s = parse_sig("view(SymIntArrayRef size)|hidden").unwrap();
        assert!(s.hidden && !s.deprecated);
        assert!(parse_sig("view(SymIntArrayRef size").is_err());
        assert!(parse_sig("view(size)").is_err());
        assert!(parse_sig("f()|weird").is_err());
    }
}
