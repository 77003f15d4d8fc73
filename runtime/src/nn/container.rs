//! `nn::Sequential`.

use super::module::{add_indent, Member, MemberMut, Module, ModuleCore, ModuleMembers};
use crate::error::Result;
use crate::tensor::Tensor;

/// Modules run one after the other (PyTorch's `nn.Sequential`); the children
/// are named `"0"`, `"1"`, … so their state is under `"0.weight"`.
pub struct Sequential {
    core: ModuleCore,
}

impl Sequential {
    /// An empty sequence (it passes its input through).
    pub fn new() -> Sequential {
        Sequential {
            core: ModuleCore::new(),
        }
    }

    /// Appends `module` and returns the sequence (PyTorch's `append`,
    /// builder style).
    pub fn append(mut self, module: impl Module + 'static) -> Sequential {
        self.push(Box::new(module));
        self
    }

    /// Appends `module`.
    pub fn push(&mut self, module: Box<dyn Module>) {
        let name = self.len().to_string();
        // A decimal index is never empty, dotted or taken.
        let _ = self.core.add_module(&name, module);
    }

    /// How many modules.
    pub fn len(&self) -> usize {
        self.core.children().count()
    }

    /// No modules?
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The module at `index`.
    pub fn get(&self, index: usize) -> Option<&dyn Module> {
        self.core.children().nth(index).map(|(_, m)| m)
    }
}

impl Default for Sequential {
    fn default() -> Sequential {
        Sequential::new()
    }
}

impl ModuleMembers for Sequential {
    fn members<'a>(&'a self, f: &mut dyn FnMut(Member<'a>)) {
        self.core.members(f)
    }

    fn members_mut(&mut self, f: &mut dyn FnMut(MemberMut<'_>)) {
        self.core.members_mut(f)
    }
}

impl Module for Sequential {
    fn forward(&self, input: &Tensor) -> Result<Tensor> {
        let mut x = input.clone();
        for (_, m) in self.core.children() {
            x = m.forward(&x)?;
        }
        Ok(x)
    }
}

/// A `Vec` of modules is PyTorch's `nn.ModuleList`: its children are named
/// `"0"`, `"1"`, … (so a `#[derive(Module)]` field `blocks: Vec<Block>` puts
/// their state under `"blocks.0.weight"`), and it has no `forward` of its
/// own.
impl<M: Module> ModuleMembers for Vec<M> {
    fn members<'a>(&'a self, f: &mut dyn FnMut(Member<'a>)) {
        for (i, m) in self.iter().enumerate() {
            f(Member::Child(i.to_string().into(), m));
        }
    }

    fn members_mut(&mut self, f: &mut dyn FnMut(MemberMut<'_>)) {
        for (i, m) in self.iter_mut().enumerate() {
            f(MemberMut::Child(&i.to_string(), m));
        }
    }
}

impl<M: Module> Module for Vec<M> {
    /// PyTorch's error for a module without `forward` (a `ModuleList` is
    /// iterated, not called).
    fn forward(&self, _: &Tensor) -> Result<Tensor> {
        Err(crate::Error::NotImplemented(
            "Module [ModuleList] is missing the required \"forward\" function".into(),
        ))
    }

    fn name(&self) -> String {
        "ModuleList".into()
    }

    /// PyTorch's `ModuleList.__repr__`: a run of children that print alike
    /// is one line, `(0-2): 3 x Linear(…)`.
    fn repr(&self) -> String {
        let reprs: Vec<String> = self.iter().map(|m| m.repr()).collect();
        if reprs.is_empty() {
            return "ModuleList()".into();
        }
        let mut lines = Vec::new();
        let mut start = 0;
        while start < reprs.len() {
            let end = start
                + reprs[start..]
                    .iter()
                    .take_while(|r| **r == reprs[start])
                    .count()
                - 1;
            let line = match end - start + 1 {
                1 => format!("({start}): {}", reprs[start]),
                n => format!("({start}-{end}): {n} x {}", reprs[start]),
            };
            lines.push(add_indent(&line, 2));
            start = end + 1;
        }
        format!("ModuleList(\n  {}\n)", lines.join("\n  "))
    }
}

/// A boxed module is the module it holds (a `#[derive(Module)]` field may be
/// a `Box<dyn Module>`).
impl<M: Module + ?Sized> ModuleMembers for Box<M> {
    fn members<'a>(&'a self, f: &mut dyn FnMut(Member<'a>)) {
        (**self).members(f)
    }

    fn members_mut(&mut self, f: &mut dyn FnMut(MemberMut<'_>)) {
        (**self).members_mut(f)
    }
}

impl<M: Module + ?Sized> Module for Box<M> {
    fn forward(&self, input: &Tensor) -> Result<Tensor> {
        (**self).forward(input)
    }

    fn name(&self) -> String {
        (**self).name()
    }

    fn extra_repr(&self) -> String {
        (**self).extra_repr()
    }

    fn repr(&self) -> String {
        (**self).repr()
    }
}
