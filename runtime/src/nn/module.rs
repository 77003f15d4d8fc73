//! The [`Module`] trait, the members it is made of ([`ModuleMembers`]: what
//! `#[derive(Module)]` writes from a struct's fields, or a [`ModuleCore`]
//! registry keeps by name), and PyTorch's `nn.Module` bookkeeping over them:
//! parameters, buffers and children in order; `train` / `eval`; `zero_grad`;
//! `state_dict` / `load_state_dict` with PyTorch's keys and messages;
//! printing with `extra_repr`.

use crate::autograd::no_grad;
use crate::error::{Error, Result};
use crate::tensor::{torch_size, Tensor};
use std::borrow::Cow;
use std::fmt;

/// A module's parameters, buffers and children, by name, in registration
/// order (PyTorch's `_parameters`, `_buffers`, `_modules`), and its training
/// flag: the registry of a module that registers its members at run time. It
/// hands them out through [`ModuleCore::members`] /
/// [`ModuleCore::members_mut`], which the module's [`ModuleMembers`] calls.
#[derive(Default)]
pub struct ModuleCore {
    parameters: Vec<(String, Option<Tensor>)>,
    buffers: Vec<(String, Option<Tensor>)>,
    children: Vec<(String, Box<dyn Module>)>,
    training: bool,
}

impl ModuleCore {
    /// An empty registry, in training mode (PyTorch's default).
    pub fn new() -> ModuleCore {
        ModuleCore {
            training: true,
            ..ModuleCore::default()
        }
    }

    fn check_name(&self, name: &str, kind: &str) -> Result<()> {
        if name.is_empty() {
            return Err(Error::Value(
                format!("{kind} name can't be empty string \"\"").into(),
            ));
        }
        if name.contains('.') {
            return Err(Error::Value(
                format!("{kind} name can't contain \".\"").into(),
            ));
        }
        Ok(())
    }

    fn taken(&self, name: &str) -> bool {
        self.parameters.iter().any(|(n, _)| n == name)
            || self.buffers.iter().any(|(n, _)| n == name)
            || self.children.iter().any(|(n, _)| n == name)
    }

    /// Registers a parameter (`None`: an optional parameter that is absent, as
    /// `register_parameter('bias', None)` in PyTorch's "Extending torch.nn" notes). A parameter is a leaf
    /// that requires grad. PyTorch's errors for an empty name, a dotted name,
    /// or a name a buffer or child already has; registering a parameter again
    /// replaces it.
    pub fn register_parameter(&mut self, name: &str, param: Option<Tensor>) -> Result<()> {
        self.check_name(name, "parameter")?;
        if let Some(slot) = self.parameters.iter_mut().find(|(n, _)| n == name) {
            slot.1 = param;
            return Ok(());
        }
        if self.taken(name) {
            return Err(Error::Value(
                format!("attribute '{name}' already exists").into(),
            ));
        }
        if let Some(p) = &param {
            if !p.is_leaf() {
                return Err(Error::Value(
                    format!("Cannot assign non-leaf Tensor to parameter '{name}'. Model parameters must be created explicitly. To express '{name}' as a function of another Tensor, compute the value in the forward() method.").into(),
                ));
            }
        }
        self.parameters.push((name.to_string(), param));
        Ok(())
    }

    /// Registers a buffer (state that is not a parameter: saved in the state
    /// dict, not trained). `None` for an absent one.
    pub fn register_buffer(&mut self, name: &str, buffer: Option<Tensor>) -> Result<()> {
        self.check_name(name, "buffer")?;
        if let Some(slot) = self.buffers.iter_mut().find(|(n, _)| n == name) {
            slot.1 = buffer;
            return Ok(());
        }
        if self.taken(name) {
            return Err(Error::Value(
                format!("attribute '{name}' already exists").into(),
            ));
        }
        self.buffers.push((name.to_string(), buffer));
        Ok(())
    }

    /// Adds a child module (PyTorch's `add_module`).
    pub fn add_module(&mut self, name: &str, module: Box<dyn Module>) -> Result<()> {
        self.check_name(name, "module")?;
        if let Some(slot) = self.children.iter_mut().find(|(n, _)| n == name) {
            slot.1 = module;
            return Ok(());
        }
        if self.taken(name) {
            return Err(Error::Value(
                format!("attribute '{name}' already exists").into(),
            ));
        }
        self.children.push((name.to_string(), module));
        Ok(())
    }

    /// The parameter `name` of this module (not its children's): `None` if
    /// absent or registered as `None`.
    pub fn parameter(&self, name: &str) -> Option<&Tensor> {
        self.parameters
            .iter()
            .find(|(n, _)| n == name)
            .and_then(|(_, p)| p.as_ref())
    }

    /// The buffer `name` of this module.
    pub fn buffer(&self, name: &str) -> Option<&Tensor> {
        self.buffers
            .iter()
            .find(|(n, _)| n == name)
            .and_then(|(_, b)| b.as_ref())
    }

    /// The children, in order.
    pub fn children(&self) -> impl Iterator<Item = (&str, &dyn Module)> {
        self.children.iter().map(|(n, m)| (n.as_str(), &**m))
    }

    /// The children, to change.
    pub fn children_mut(&mut self) -> impl Iterator<Item = (&str, &mut Box<dyn Module>)> {
        self.children.iter_mut().map(|(n, m)| (n.as_str(), m))
    }

    /// Is the module in training mode?
    pub fn is_training(&self) -> bool {
        self.training
    }

    /// The registry's members in order, for a module's
    /// [`ModuleMembers::members`]: its training flag, then its parameters,
    /// buffers and children in registration order.
    pub fn members<'a>(&'a self, f: &mut dyn FnMut(Member<'a>)) {
        f(Member::Training(self.training));
        for (n, p) in &self.parameters {
            f(Member::Parameter(Cow::Borrowed(n), p.as_ref()));
        }
        for (n, b) in &self.buffers {
            f(Member::Buffer(Cow::Borrowed(n), b.as_ref()));
        }
        for (n, c) in &self.children {
            f(Member::Child(Cow::Borrowed(n), &**c));
        }
    }

    /// The registry's training flag and children, to change, for a
    /// module's [`ModuleMembers::members_mut`].
    pub fn members_mut(&mut self, f: &mut dyn FnMut(MemberMut<'_>)) {
        f(MemberMut::Training(&mut self.training));
        for (n, c) in &mut self.children {
            f(MemberMut::Child(n, &mut **c));
        }
    }
}

/// One of a module's own members (not its children's), as
/// [`ModuleMembers::members`] hands them out.
pub enum Member<'a> {
    /// The module's own training flag (PyTorch's `self.training`).
    Training(bool),
    /// A parameter; `None` for an optional one that is absent (PyTorch's
    /// `register_parameter(name, None)`).
    Parameter(Cow<'a, str>, Option<&'a Tensor>),
    /// A buffer (state saved in the state dict, not trained); `None` if
    /// absent.
    Buffer(Cow<'a, str>, Option<&'a Tensor>),
    /// A child module.
    Child(Cow<'a, str>, &'a dyn Module),
}

/// What [`ModuleMembers::members_mut`] hands out: what `train` / `eval`
/// change.
pub enum MemberMut<'a> {
    /// The module's own training flag.
    Training(&'a mut bool),
    /// A child module.
    Child(&'a str, &'a mut dyn Module),
}

/// The members a module is made of: its parameters, buffers and children
/// (PyTorch's `_parameters`, `_buffers`, `_modules`) and its training flag.
///
/// `#[derive(Module)]` writes this from a struct's fields (see
/// [`Module`]'s example); a module that registers its members by name at run
/// time keeps a [`ModuleCore`] and hands out its
/// [`members`](ModuleCore::members).
///
/// Order: each kind in its own order (fields in declaration order, a
/// registry in registration order). [`Module::named_parameters`] and
/// [`Module::state_dict`] list a module's own parameters, then its buffers,
/// then each child's, as PyTorch does.
///
/// A module with no [`Member::Training`] flag of its own (a derived struct
/// without a `#[module(training)]` field) is in training mode when any child
/// is, or when it has no children; `train` / `eval` reach its children.
pub trait ModuleMembers {
    /// Hands each member to `f`, in order.
    fn members<'a>(&'a self, f: &mut dyn FnMut(Member<'a>));

    /// Hands the training flag and each child to `f`, to change.
    fn members_mut(&mut self, f: &mut dyn FnMut(MemberMut<'_>));
}

/// What [`Module::load_state_dict`] found (PyTorch's `_IncompatibleKeys`):
/// with `strict`, any of it is an error instead.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct IncompatibleKeys {
    /// Keys the module has and the state dict lacks.
    pub missing_keys: Vec<String>,
    /// Keys the state dict has and the module lacks.
    pub unexpected_keys: Vec<String>,
}

impl fmt::Display for IncompatibleKeys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.missing_keys.is_empty() && self.unexpected_keys.is_empty() {
            return f.write_str("<All keys matched successfully>");
        }
        write!(
            f,
            "_IncompatibleKeys(missing_keys={:?}, unexpected_keys={:?})",
            self.missing_keys, self.unexpected_keys
        )
    }
}

/// A module's state: parameters and buffers by their dotted names
/// (`"0.weight"`), in PyTorch's order (a module's own parameters, then its
/// buffers, then each child's, depth first). The tensors are detached from
/// the module's graph but share its storage, as PyTorch's `state_dict` does.
#[derive(Clone, Debug, Default)]
pub struct StateDict {
    entries: Vec<(String, Tensor)>,
}

impl StateDict {
    /// An empty state dict.
    pub fn new() -> StateDict {
        StateDict::default()
    }

    /// Adds or replaces `key`.
    pub fn insert(&mut self, key: impl Into<String>, value: Tensor) {
        let key = key.into();
        match self.entries.iter_mut().find(|(k, _)| *k == key) {
            Some(slot) => slot.1 = value,
            None => self.entries.push((key, value)),
        }
    }

    /// Removes `key`, returning its tensor.
    pub fn remove(&mut self, key: &str) -> Option<Tensor> {
        let i = self.entries.iter().position(|(k, _)| k == key)?;
        Some(self.entries.remove(i).1)
    }

    /// The tensor under `key`.
    pub fn get(&self, key: &str) -> Option<&Tensor> {
        self.entries.iter().find(|(k, _)| k == key).map(|(_, t)| t)
    }

    /// The keys, in order.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.entries.iter().map(|(k, _)| k.as_str())
    }

    /// The entries, in order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Tensor)> {
        self.entries.iter().map(|(k, t)| (k.as_str(), t))
    }

    /// How many entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// No entries?
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

impl FromIterator<(String, Tensor)> for StateDict {
    fn from_iter<I: IntoIterator<Item = (String, Tensor)>>(iter: I) -> StateDict {
        let mut d = StateDict::new();
        for (k, t) in iter {
            d.insert(k, t);
        }
        d
    }
}

/// A neural-network module (PyTorch's `nn.Module`): a [`Module::forward`]
/// over its members ([`ModuleMembers`]). Every other method has PyTorch's
/// behaviour by default.
///
/// A struct's fields are its members with `#[derive(Module)]`: the field
/// names are PyTorch's attribute names.
///
/// ```
/// use opforge::nn::{self, Module};
/// use opforge::{Result, Tensor};
///
/// #[derive(Module)]
/// struct Mlp {
///     fc1: nn::Linear,
///     fc2: nn::Linear,
///     #[module(skip)]
///     hidden: usize,
/// }
///
/// impl Module for Mlp {
///     fn forward(&self, x: &Tensor) -> Result<Tensor> {
///         self.fc2.forward(&self.fc1.forward(x)?.relu()?)
///     }
/// }
///
/// let model = Mlp { fc1: nn::Linear::new(4, 8, true)?, fc2: nn::Linear::new(8, 2, true)?, hidden: 8 };
/// let names: Vec<String> = model.named_parameters().into_iter().map(|(n, _)| n).collect();
/// assert_eq!(names, ["fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"]);
/// assert_eq!(model.forward(&Tensor::from_vec(vec![0.5f32; 4], &[1, 4])?)?.shape(), [1, 2]);
/// # Ok::<(), opforge::Error>(())
/// ```
///
/// Containers register their members by name at run time in a
/// [`ModuleCore`]:
///
/// ```
/// use opforge::nn::{self, Module};
/// let model = nn::Sequential::new()
///     .append(nn::Linear::new(4, 3, true)?)
///     .append(nn::ReLU::new())
///     .append(nn::Linear::new(3, 2, false)?);
/// let keys: Vec<String> = model.state_dict().keys().map(String::from).collect();
/// assert_eq!(keys, ["0.weight", "0.bias", "2.weight"]);
/// assert_eq!(model.to_string(), "Sequential(
///   (0): Linear(in_features=4, out_features=3, bias=True)
///   (1): ReLU()
///   (2): Linear(in_features=3, out_features=2, bias=False)
/// )");
/// # Ok::<(), opforge::Error>(())
/// ```
pub trait Module: ModuleMembers + Send + Sync {
    /// The computation.
    fn forward(&self, input: &Tensor) -> Result<Tensor>;

    /// The class name printed (`Linear`); the default is the type's name.
    fn name(&self) -> String {
        let full = std::any::type_name::<Self>();
        let path = full.split('<').next().unwrap_or(full);
        path.rsplit("::").next().unwrap_or(path).to_string()
    }

    /// Extra information printed between the parentheses (PyTorch's
    /// `extra_repr`): `in_features=4, out_features=3, bias=True`.
    fn extra_repr(&self) -> String {
        String::new()
    }

    /// The module as PyTorch prints it (`__repr__`): [`module_repr`], unless
    /// a container prints its children its own way (`ModuleList`).
    fn repr(&self) -> String {
        module_repr(self)
    }

    /// The module's parameters and its children's, recursively, each once
    /// (PyTorch's `parameters()`).
    fn parameters(&self) -> Vec<Tensor> {
        self.named_parameters()
            .into_iter()
            .map(|(_, p)| p)
            .collect()
    }

    /// [`Module::parameters`] with their dotted names (`"0.weight"`).
    fn named_parameters(&self) -> Vec<(String, Tensor)> {
        let mut out: Vec<(String, Tensor)> = Vec::new();
        collect(self, "", &mut |name, t, is_param| {
            if is_param && !out.iter().any(|(_, p)| p.is_same(t)) {
                out.push((name, t.clone()));
            }
        });
        out
    }

    /// The buffers, recursively, with their dotted names.
    fn named_buffers(&self) -> Vec<(String, Tensor)> {
        let mut out = Vec::new();
        collect(self, "", &mut |name, t, is_param| {
            if !is_param {
                out.push((name, t.clone()));
            }
        });
        out
    }

    /// Sets training mode here and in every child (PyTorch's `train(mode)`).
    fn train(&mut self, mode: bool) {
        self.members_mut(&mut |m| match m {
            MemberMut::Training(flag) => *flag = mode,
            MemberMut::Child(_, child) => child.train(mode),
        });
    }

    /// `train(false)`.
    fn eval(&mut self) {
        self.train(false);
    }

    /// Is the module in training mode?
    fn is_training(&self) -> bool {
        let (mut own, mut children) = (None, None);
        self.members(&mut |m| match m {
            Member::Training(t) => own = Some(t),
            Member::Child(_, c) => *children.get_or_insert(false) |= c.is_training(),
            _ => {}
        });
        own.or(children).unwrap_or(true)
    }

    /// The children, in order, with their names (PyTorch's
    /// `named_children()`).
    fn named_children(&self) -> Vec<(Cow<'_, str>, &dyn Module)> {
        let mut out = Vec::new();
        self.members(&mut |m| {
            if let Member::Child(n, c) = m {
                out.push((n, c));
            }
        });
        out
    }

    /// Clears every parameter's gradient (`set_to_none`, PyTorch's default)
    /// or zeroes it in place.
    fn zero_grad(&self, set_to_none: bool) -> Result<()> {
        zero_grads(&self.parameters(), set_to_none)
    }

    /// The module's state: parameters then buffers, recursively, under
    /// dotted names; detached, sharing storage.
    fn state_dict(&self) -> StateDict {
        let mut out = StateDict::new();
        let mut failed = None;
        collect(self, "", &mut |name, t, _| match t.detach() {
            Ok(d) => out.insert(name, d),
            Err(e) => failed = Some(e),
        });
        debug_assert!(failed.is_none(), "detach of a module tensor: {failed:?}");
        out
    }

    /// Copies `state` into the module's parameters and buffers (in place,
    /// without recording). With `strict`, a missing or unexpected key is an
    /// error; a shape mismatch always is. The error is PyTorch's: "Error(s)
    /// in loading state_dict for Sequential:" and one line per problem.
    fn load_state_dict(&self, state: &StateDict, strict: bool) -> Result<IncompatibleKeys>
    where
        Self: Sized,
    {
        load_state_dict(self, state, strict)
    }

    /// Writes [`Module::state_dict`] to a safetensors file
    /// ([`StateDict::save_safetensors`]).
    fn save_safetensors(&self, path: impl AsRef<std::path::Path>) -> Result<()>
    where
        Self: Sized,
    {
        self.state_dict().save_safetensors(path)
    }

    /// Loads a safetensors file (one PyTorch wrote with
    /// `safetensors.torch.save_file(model.state_dict(), path)`, or
    /// [`Module::save_safetensors`]) into the module, as
    /// [`Module::load_state_dict`] does.
    fn load_safetensors(
        &self,
        path: impl AsRef<std::path::Path>,
        strict: bool,
    ) -> Result<IncompatibleKeys>
    where
        Self: Sized,
    {
        load_state_dict(self, &StateDict::load_safetensors(path)?, strict)
    }
}

/// Visits every parameter (`true`) and buffer (`false`) that is present,
/// depth first, with its dotted name: a module's parameters, its buffers,
/// then each child's.
fn collect(m: &(impl Module + ?Sized), prefix: &str, f: &mut dyn FnMut(String, &Tensor, bool)) {
    let (mut buffers, mut children) = (Vec::new(), Vec::new());
    m.members(&mut |member| match member {
        Member::Parameter(n, Some(p)) => f(format!("{prefix}{n}"), p, true),
        Member::Buffer(n, Some(b)) => buffers.push((n, b)),
        Member::Child(n, c) => children.push((n, c)),
        _ => {}
    });
    for (n, b) in buffers {
        f(format!("{prefix}{n}"), b, false);
    }
    for (n, child) in children {
        collect(child, &format!("{prefix}{n}."), f);
    }
}

/// Clears (`set_to_none`) or zeroes each tensor's gradient: what modules'
/// and optimizers' `zero_grad` do.
pub(crate) fn zero_grads(params: &[Tensor], set_to_none: bool) -> Result<()> {
    for p in params {
        let (Some(meta), Some(mut g)) = (p.autograd_meta(), p.grad()) else {
            continue;
        };
        if set_to_none {
            meta.set_grad(None);
        } else {
            let _off = no_grad();
            if g.grad_fn().is_some() {
                g = g.detach()?;
                meta.set_grad(Some(g.clone()));
            }
            crate::at::zero_(&mut g)?;
        }
    }
    Ok(())
}

/// [`Module::load_state_dict`] for any module (also `dyn Module`).
pub fn load_state_dict(
    module: &(impl Module + ?Sized),
    state: &StateDict,
    strict: bool,
) -> Result<IncompatibleKeys> {
    let mut own: Vec<(String, Tensor)> = Vec::new();
    collect(module, "", &mut |name, t, _| own.push((name, t.clone())));
    let mut errors: Vec<String> = Vec::new();
    let mut keys = IncompatibleKeys::default();
    // As PyTorch's `_load_from_state_dict`: each entry that fits is copied
    // (under no_grad), the others leave an error; the errors are raised
    // after every entry was tried.
    let _off = no_grad();
    for (name, t) in &own {
        match state.get(name) {
            None => keys.missing_keys.push(name.clone()),
            Some(src) if src.shape() != t.shape() => errors.push(format!(
                "size mismatch for {name}: copying a param with shape {} from checkpoint, the shape in current model is {}.",
                torch_size(&src.shape()),
                torch_size(&t.shape())
            )),
            Some(src) => {
                if let Err(e) = crate::at::copy_(&mut t.clone(), src, false) {
                    errors.push(format!(
                        "While copying the parameter named \"{name}\", whose dimensions in the model are {} and whose dimensions in the checkpoint are {}, an exception occurred : ({},).",
                        torch_size(&t.shape()),
                        torch_size(&src.shape()),
                        crate::pyfmt::repr_str(&e.to_string())
                    ));
                }
            }
        }
    }
    for (k, _) in state.iter() {
        if !own.iter().any(|(n, _)| n == k) {
            keys.unexpected_keys.push(k.to_string());
        }
    }
    if strict {
        let quoted = |ks: &[String]| {
            ks.iter()
                .map(|k| format!("\"{k}\""))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let mut head = Vec::new();
        if !keys.unexpected_keys.is_empty() {
            head.push(format!(
                "Unexpected key(s) in state_dict: {}. ",
                quoted(&keys.unexpected_keys)
            ));
        }
        if !keys.missing_keys.is_empty() {
            head.insert(
                0,
                format!(
                    "Missing key(s) in state_dict: {}. ",
                    quoted(&keys.missing_keys)
                ),
            );
        }
        errors.splice(0..0, head);
    }
    if !errors.is_empty() {
        return Err(Error::Runtime(
            format!(
                "Error(s) in loading state_dict for {}:\n\t{}",
                module.name(),
                errors.join("\n\t")
            )
            .into(),
        ));
    }
    Ok(keys)
}

/// PyTorch's `_addindent`: every line after the first indented by `n`.
pub(super) fn add_indent(s: &str, n: usize) -> String {
    let mut lines = s.split('\n');
    let first = lines.next().unwrap_or_default().to_string();
    let rest: Vec<String> = lines.map(|l| format!("{}{l}", " ".repeat(n))).collect();
    if rest.is_empty() {
        first
    } else {
        format!("{first}\n{}", rest.join("\n"))
    }
}

/// PyTorch's `nn.Module.__repr__`.
pub fn module_repr(m: &(impl Module + ?Sized)) -> String {
    let extra = m.extra_repr();
    let extra_lines: Vec<&str> = match extra.is_empty() {
        true => Vec::new(),
        false => extra.split('\n').collect(),
    };
    let child_lines: Vec<String> = m
        .named_children()
        .into_iter()
        .map(|(n, c)| format!("({n}): {}", add_indent(&c.repr(), 2)))
        .collect();
    let mut s = format!("{}(", m.name());
    if extra_lines.len() == 1 && child_lines.is_empty() {
        s.push_str(extra_lines[0]);
    } else if !extra_lines.is_empty() || !child_lines.is_empty() {
        let lines: Vec<String> = extra_lines
            .iter()
            .map(|l| l.to_string())
            .chain(child_lines)
            .collect();
        s.push_str("\n  ");
        s.push_str(&lines.join("\n  "));
        s.push('\n');
    }
    s.push(')');
    s
}

impl fmt::Display for dyn Module {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.repr())
    }
}

impl fmt::Debug for dyn Module {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.repr())
    }
}
