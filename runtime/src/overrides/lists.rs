//! `torch.overrides.get_overridable_functions`, `get_ignored_functions` and
//! `get_testing_overrides`: which callables go through `__torch_function__`,
//! which never do, and a dummy per overridable callable with its signature.
//!
//! The generated part comes from the schema (`crate::OVERRIDABLE`, derived from
//! the Python-API bindings); the hand-written `Tensor` members are added here.
//! Operator handles (`ops::*`, `torch.ops.aten.*`) go through the protocol too but,
//! as in PyTorch, are not listed; `opforge::at::*` is the unguarded layer kernels
//! call (C++'s `at::`), not a public Python-level callable, and is not listed
//! either.

use super::members::MEMBERS;
use super::Func;
use crate::error::{Error, Result};
use crate::value::Value;
use opforge_schema::signature::{parse_params, split_call};
use std::collections::BTreeMap;

/// Every overridable function by namespace (`torch`, `Tensor`,
/// `torch.nn.functional`, `torch.linalg`, …), in PyTorch's order inside each.
///
/// ```
/// use opforge::overrides::{lists::get_overridable_functions, resolve_name};
/// let all = get_overridable_functions();
/// let names: Vec<String> = all["torch"].iter().map(|f| resolve_name(*f)).collect();
/// assert!(names.contains(&"torch.add".to_string()));
/// assert!(all["Tensor"].iter().any(|f| resolve_name(*f) == "torch.Tensor.shape.__get__"));
/// ```
pub fn get_overridable_functions() -> BTreeMap<&'static str, Vec<Func>> {
    let mut out: BTreeMap<&'static str, Vec<Func>> = BTreeMap::new();
    for o in crate::OVERRIDABLE.iter() {
        if let Some(f) = generated_func(o.namespace, o.name) {
            out.entry(o.namespace).or_default().push(f);
        }
    }
    out.entry("Tensor")
        .or_default()
        .extend(MEMBERS.iter().map(Func::Member));
    out
}

/// The function of a generated overridable entry (see [`binding_names`]).
fn generated_func(namespace: &str, name: &str) -> Option<Func> {
    binding_names(namespace, name)
        .into_iter()
        .flatten()
        .find_map(|b| Func::api(&b))
}

/// The binding names an overridable entry `(namespace, name)` can have, in the
/// order tried: `Tensor.add` for (`Tensor`, `add`), `torch.add` for (`torch`,
/// `add`); in a submodule the binding keeps the schema name, which for
/// `linalg`/`fft`/`special` carries the module prefix (`torch.linalg.linalg_det`,
/// `torch.special.special_erf`) and for `nn` does not
/// (`torch.nn.functional.gelu`), so both `<ns>.<name>` and
/// `<ns>.<module>_<name>` are tried.
fn binding_names(namespace: &str, name: &str) -> [Option<String>; 2] {
    match namespace {
        "Tensor" | "torch" => [Some(format!("{namespace}.{name}")), None],
        ns => {
            let short = ns.rsplit('.').next().unwrap_or(ns);
            let prefixed =
                (!name.starts_with(&format!("{short}_"))).then(|| format!("{ns}.{short}_{name}"));
            [Some(format!("{ns}.{name}")), prefixed]
        }
    }
}

/// How an ignored function treats a tensor-like argument.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ignored {
    /// It takes no tensor (a constructor): nothing to override.
    NoTensor,
    /// It reads (or sets) the tensor's own metadata without dispatching: a
    /// subclass instance answers for its data, a duck like an empty meta tensor
    /// (`shape()` is `[0]`, data-less copies are empty meta tensors). Never fails
    /// on a duck.
    OwnMetadata,
    /// It refuses a duck tensor-like with an error (it needs real data).
    RejectsDuck,
}

/// A public function that never consults `__torch_function__`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IgnoredFn {
    /// The Rust path (`Tensor::from_vec`, `<Tensor as Display>::fmt`).
    pub name: &'static str,
    /// What it does with a tensor-like.
    pub behaviour: Ignored,
}

const fn ignored(name: &'static str, behaviour: Ignored) -> IgnoredFn {
    IgnoredFn { name, behaviour }
}

/// `torch.overrides.get_ignored_functions()`: the public functions that never
/// go through the protocol, with what each does with a tensor-like. These are
/// the runtime's own tensor plumbing (constructors, metadata, raw data access,
/// the protocol helpers themselves); what a Python user reaches through the
/// protocol has a twin in [`get_overridable_functions`] (`shape()` here,
/// `get_shape()` there; `Display` here, `repr()` there).
///
/// ```
/// use opforge::overrides::lists::{get_ignored_functions, Ignored};
/// let from_vec = get_ignored_functions().iter().find(|f| f.name == "Tensor::from_vec").unwrap();
/// assert_eq!(from_vec.behaviour, Ignored::NoTensor);
/// ```
pub fn get_ignored_functions() -> &'static [IgnoredFn] {
    use Ignored::*;
    const LIST: &[IgnoredFn] = &[
        // Constructors.
        ignored("Tensor::from_vec", NoTensor),
        ignored("Tensor::scalar", NoTensor),
        ignored("Tensor::from_scalar", NoTensor),
        ignored("Tensor::from_buffer", NoTensor),
        ignored("Tensor::from_array", NoTensor),
        ignored("Tensor::zeros", NoTensor),
        ignored("Tensor::full", NoTensor),
        ignored("Tensor::try_zeros", NoTensor),
        ignored("Tensor::try_full", NoTensor),
        ignored("Tensor::duck", NoTensor),
        // The tensor's own metadata and geometry.
        ignored("Tensor::shape", OwnMetadata),
        ignored("Tensor::sizes", OwnMetadata),
        ignored("Tensor::strides", OwnMetadata),
        ignored("Tensor::storage_offset", OwnMetadata),
        ignored("Tensor::storage", OwnMetadata),
        ignored("Tensor::geometry", OwnMetadata),
        ignored("Tensor::dtype", OwnMetadata),
        ignored("Tensor::device", OwnMetadata),
        ignored("Tensor::dim", OwnMetadata),
        ignored("Tensor::numel", OwnMetadata),
        ignored("Tensor::is_contiguous", OwnMetadata),
        ignored("Tensor::key_set", OwnMetadata),
        ignored("Tensor::is_same", OwnMetadata),
        ignored("Tensor::shares_storage", OwnMetadata),
        ignored("Tensor::is_plain", OwnMetadata),
        ignored("Tensor::class", OwnMetadata),
        ignored("Tensor::is_instance", OwnMetadata),
        ignored("Tensor::class_attr", OwnMetadata),
        ignored("Tensor::payload", OwnMetadata),
        ignored("<Tensor as Clone>::clone", OwnMetadata),
        ignored("<Tensor as Display>::fmt", OwnMetadata),
        // Raw geometry changes and data-less copies.
        ignored("Tensor::strided_view", OwnMetadata),
        ignored("Tensor::set_geometry", OwnMetadata),
        ignored("Tensor::resize_", OwnMetadata),
        ignored("Tensor::fill_scalar", OwnMetadata),
        ignored("Tensor::assign", OwnMetadata),
        ignored("Tensor::deep_clone", OwnMetadata),
        ignored("Tensor::to_dtype_copy", OwnMetadata),
        // Subclass plumbing (`Tensor.as_subclass`, `_make_wrapper_subclass`):
        // they take the duck's own (empty meta) geometry.
        ignored("Tensor::as_subclass", OwnMetadata),
        ignored("Tensor::wrapper", OwnMetadata),
        // Raw data access.
        ignored("Tensor::with_view", RejectsDuck),
        ignored("Tensor::to_array", RejectsDuck),
        ignored("Tensor::to_vec", RejectsDuck),
        ignored("Tensor::item", RejectsDuck),
        // The protocol's own helpers (`torch.overrides.*`).
        ignored("overrides::is_tensor_like", OwnMetadata),
        ignored("overrides::has_torch_function", OwnMetadata),
        ignored("overrides::collect", OwnMetadata),
    ];
    LIST
}

/// One parameter of a testing stub's signature.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StubParam {
    /// The name.
    pub name: String,
    /// Has a default.
    pub optional: bool,
    /// After the `*`.
    pub kwarg_only: bool,
}

/// A testing stub: accepts exactly the arguments its function accepts (by
/// signature only) and returns `-1`.
#[derive(Clone, Debug)]
pub struct TestingStub {
    /// The function it stands for.
    pub func: Func,
    /// `(input, other, *, alpha=1, out=None)`.
    pub signature: String,
    /// The parameters.
    pub params: Vec<StubParam>,
}

impl TestingStub {
    fn new(func: Func) -> TestingStub {
        let signature = func.signature();
        let list = split_call(signature.trim()).map_or("", |(_, list, _)| list);
        // Schema-style parameters (`Tensor self`) keep the name, the last word.
        let params = parse_params(list)
            .into_iter()
            .map(|p| StubParam {
                optional: p.default.is_some(),
                kwarg_only: p.kwarg_only,
                name: p.name,
            })
            .collect();
        TestingStub {
            func,
            signature,
            params,
        }
    }

    /// Calls the stub: binds the arguments to the signature (too many, unknown or
    /// missing arguments are the `TypeError`s Python gives) and returns `-1`.
    pub fn call(&self, args: &[Value], kwargs: &[(String, Value)]) -> Result<Value> {
        let positional: Vec<&StubParam> = self.params.iter().filter(|p| !p.kwarg_only).collect();
        if args.len() > positional.len() {
            return Err(Error::Type(
                format!(
                    "<lambda>() takes {} positional arguments but {} were given",
                    positional.len(),
                    args.len()
                )
                .into(),
            ));
        }
        let mut given: Vec<&str> = positional[..args.len()]
            .iter()
            .map(|p| p.name.as_str())
            .collect();
        for (k, _) in kwargs {
            if !self.params.iter().any(|p| &p.name == k) {
                return Err(Error::Type(
                    format!("<lambda>() got an unexpected keyword argument '{k}'").into(),
                ));
            }
            if given.contains(&k.as_str()) {
                return Err(Error::Type(
                    format!("<lambda>() got multiple values for argument '{k}'").into(),
                ));
            }
            given.push(k);
        }
        if let Some(p) = self
            .params
            .iter()
            .find(|p| !p.optional && !given.contains(&p.name.as_str()))
        {
            let kind = if p.kwarg_only {
                "keyword-only"
            } else {
                "positional"
            };
            return Err(Error::Type(
                format!(
                    "<lambda>() missing 1 required {kind} argument: '{}'",
                    p.name
                )
                .into(),
            ));
        }
        Ok(Value::Int(-1))
    }
}

/// `torch.overrides.get_testing_overrides()`: a stub per overridable function.
///
/// ```
/// use opforge::overrides::{lists::get_testing_overrides, Func};
/// let stubs = get_testing_overrides();
/// let add = &stubs[&Func::named("torch.add").unwrap()];
/// assert_eq!(add.signature, "(input, other, *, alpha=1, out=None)");
/// ```
// `Func` hashes and compares by identity (the address of its static), so the
// interior mutability clippy sees behind it (operator slots) cannot change a key.
#[allow(clippy::mutable_key_type)]
pub fn get_testing_overrides() -> std::collections::HashMap<Func, TestingStub> {
    get_overridable_functions()
        .into_values()
        .flatten()
        .map(|f| (f, TestingStub::new(f)))
        .collect()
}

#[cfg(test)]
#[allow(clippy::mutable_key_type)] // `Func` keys compare by identity
mod tests {
    use super::*;
    use crate::overrides::resolve_name;
    use std::collections::HashSet;

    #[test]
    fn every_generated_entry_maps_to_a_binding() {
        for o in crate::OVERRIDABLE.iter() {
            let f = generated_func(o.namespace, o.name)
                .unwrap_or_else(|| panic!("{}.{} has no binding", o.namespace, o.name));
            // The stub found back from the binding is this entry's.
            let Func::Api(b) = f else {
                panic!("{f:?} is not a binding")
            };
            assert_eq!(
                f.signature(),
                opforge_schema::overrides::stub_signature(o.stub),
                "{}",
                b.name
            );
        }
        let all = get_overridable_functions();
        let n: usize = all.values().map(Vec::len).sum();
        assert_eq!(n, crate::OVERRIDABLE.len() + MEMBERS.len());
        let unique: HashSet<Func> = all.values().flatten().copied().collect();
        assert_eq!(unique.len(), n, "a function is listed twice");
        for (ns, fs) in &all {
            for f in fs {
                // Names round-trip, and methods are exactly the `Tensor` namespace.
                assert_eq!(Func::named(&resolve_name(*f)), Some(*f), "{f}");
                assert_eq!(
                    crate::overrides::is_tensor_method_or_property(*f),
                    *ns == "Tensor",
                    "{f}"
                );
            }
        }
    }

    #[test]
    fn submodule_binding_names() {
        let names = |ns, n| -> Vec<String> { binding_names(ns, n).into_iter().flatten().collect() };
        assert_eq!(names("torch", "add"), ["torch.add"]);
        assert_eq!(names("Tensor", "add_"), ["Tensor.add_"]);
        assert_eq!(
            names("torch.nn.functional", "gelu"),
            [
                "torch.nn.functional.gelu",
                "torch.nn.functional.functional_gelu"
            ]
        );
        assert_eq!(
            names("torch.linalg", "det"),
            ["torch.linalg.det", "torch.linalg.linalg_det"]
        );
        assert_eq!(
            names("torch.linalg", "linalg_det"),
            ["torch.linalg.linalg_det"]
        );
        assert_eq!(
            names("torch.special", "special_erf"),
            ["torch.special.special_erf"]
        );
        assert_eq!(
            names("torch.fft", "fft2"),
            ["torch.fft.fft2", "torch.fft.fft_fft2"]
        );
    }

    #[test]
    fn stubs_bind_like_python() {
        let stubs = get_testing_overrides();
        assert_eq!(stubs.len(), crate::OVERRIDABLE.len() + MEMBERS.len());
        let add = &stubs[&Func::named("torch.add").unwrap()];
        assert_eq!(add.signature, "(input, other, *, alpha=1, out=None)");
        let t = || Value::Int(0);
        assert!(matches!(add.call(&[t(), t()], &[]), Ok(Value::Int(-1))));
        assert!(add
            .call(&[t()], &[("other".into(), t()), ("alpha".into(), t())])
            .is_ok());
        let err = |r: Result<Value>| r.unwrap_err().to_string();
        assert!(err(add.call(&[t(), t(), t()], &[]))
            .contains("takes 2 positional arguments but 3 were given"));
        assert!(
            err(add.call(&[t()], &[])).contains("missing 1 required positional argument: 'other'")
        );
        assert!(err(add.call(&[t(), t()], &[("beta".into(), t())]))
            .contains("unexpected keyword argument 'beta'"));
        assert!(err(add.call(&[t(), t()], &[("other".into(), t())]))
            .contains("multiple values for argument 'other'"));
        let repr = &stubs[&Func::named("torch.Tensor.__repr__").unwrap()];
        assert_eq!(repr.signature, "(self, *, tensor_contents=None)");
        assert!(repr.params[1].kwarg_only && repr.params[1].optional);
        assert!(repr.call(&[t(), t()], &[]).is_err());
        // Relaxed against the other signatures.
        let sig = |n: &str| stubs[&Func::named(n).unwrap()].signature.clone();
        assert_eq!(
            sig("torch.div"),
            "(input, other, *, rounding_mode=None, out=None)"
        );
        assert!(sig("torch.sum").starts_with("(input, dim=None, keepdim=False, *, dtype=None"));
        assert!(sig("torch.Tensor.sum").starts_with("(self, dim=None, keepdim=False, *"));
        assert!(sig("torch.arange").starts_with("(start=None, end=None, step=1, *"));
        let shape = &stubs[&Func::named("torch.Tensor.shape.__get__").unwrap()];
        assert_eq!(shape.signature, "(self)");
        for (f, stub) in &stubs {
            assert_eq!(stub.func, *f);
            assert_ne!(stub.signature, "(*args, **kwargs)", "{f} has no real stub");
        }
    }

    #[test]
    fn schema_style_signatures_parse() {
        let op = Func::named("aten.add.Tensor").unwrap();
        let stub = TestingStub::new(op);
        let names: Vec<(&str, bool, bool)> = stub
            .params
            .iter()
            .map(|p| (p.name.as_str(), p.optional, p.kwarg_only))
            .collect();
        assert_eq!(
            names,
            [
                ("self", false, false),
                ("other", false, false),
                ("alpha", true, true)
            ]
        );
    }

    #[test]
    fn ignored_names_are_unique_and_not_overridable() {
        let names: HashSet<&str> = get_ignored_functions().iter().map(|f| f.name).collect();
        assert_eq!(names.len(), get_ignored_functions().len());
        for f in get_ignored_functions() {
            let method = f.name.strip_prefix("Tensor::").unwrap_or(f.name);
            assert!(
                Func::named(&format!("torch.Tensor.{method}")).is_none(),
                "{} is both ignored and overridable",
                f.name
            );
        }
    }
}
