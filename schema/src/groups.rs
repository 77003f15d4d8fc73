//! Derive: schema kinds and the functional ↔ inplace ↔ mutable ↔ out grouping.
//!
//! Operators whose [`FunctionSchema::signature`] is equal are variants of one
//! operation (`add.Tensor`, `add_.Tensor`, `add.out`). A group holds at most one
//! entry of each kind; a second one is an error, worded as torchgen words it.

use crate::model::{FunctionSchema, NativeFunction, SchemaKind};
use std::collections::HashMap;

/// One group of related operators, as indices into the entry list.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OperatorGroup {
    /// The shared signature, printed (the grouping key).
    pub signature: String,
    /// The functional variant (`add.Tensor`).
    pub functional: Option<usize>,
    /// The inplace variant (`add_.Tensor`).
    pub inplace: Option<usize>,
    /// The mutable variant (writes a positional argument).
    pub mutable: Option<usize>,
    /// The out= variant (`add.out`).
    pub out: Option<usize>,
    /// The scratch out= variant.
    pub scratch: Option<usize>,
}

impl OperatorGroup {
    /// The slot for `kind`.
    pub fn slot(&self, kind: SchemaKind) -> Option<usize> {
        match kind {
            SchemaKind::Functional => self.functional,
            SchemaKind::Inplace => self.inplace,
            SchemaKind::Mutable => self.mutable,
            SchemaKind::Out => self.out,
            SchemaKind::Scratch => self.scratch,
        }
    }

    fn slot_mut(&mut self, kind: SchemaKind) -> &mut Option<usize> {
        match kind {
            SchemaKind::Functional => &mut self.functional,
            SchemaKind::Inplace => &mut self.inplace,
            SchemaKind::Mutable => &mut self.mutable,
            SchemaKind::Out => &mut self.out,
            SchemaKind::Scratch => &mut self.scratch,
        }
    }

    /// Every member, in the order functional, inplace, mutable, out, scratch.
    pub fn members(&self) -> impl Iterator<Item = usize> + '_ {
        [
            self.functional,
            self.inplace,
            self.mutable,
            self.out,
            self.scratch,
        ]
        .into_iter()
        .flatten()
    }
}

/// Groups entries by signature (namespace included, so `aten::foo` and `mylib::foo`
/// never share a group). Groups come out in the order of their first member.
///
/// ```
/// use opforge_schema::{groups::group, load::load_str};
/// let f = load_str("x.yaml", "
/// - func: neg(Tensor self) -> Tensor
///   dispatch: {CPU: neg}
/// - func: neg_(Tensor(a!) self) -> Tensor(a!)
///   dispatch: {CPU: neg_}
/// - func: neg.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
///   dispatch: {CPU: neg_out}
/// ").unwrap();
/// let g = group(&f.entries).unwrap();
/// assert_eq!(g.len(), 1);
/// assert_eq!((g[0].functional, g[0].inplace, g[0].out), (Some(0), Some(1), Some(2)));
/// ```
pub fn group<'a>(
    entries: impl IntoIterator<Item = &'a NativeFunction>,
) -> Result<Vec<OperatorGroup>, String> {
    let entries: Vec<&NativeFunction> = entries.into_iter().collect();
    let mut groups: Vec<OperatorGroup> = Vec::new();
    let mut index: HashMap<(String, String), usize> = HashMap::new();
    for (i, nf) in entries.iter().copied().enumerate() {
        let sig = nf.func.signature().to_string();
        let key = (nf.func.name.namespace().to_string(), sig.clone());
        let gi = *index.entry(key).or_insert_with(|| {
            groups.push(OperatorGroup {
                signature: sig,
                ..OperatorGroup::default()
            });
            groups.len() - 1
        });
        let kind = nf.func.kind();
        let slot = groups[gi].slot_mut(kind);
        if let Some(prev) = slot {
            return Err(format!(
                "Duplicate schema kind {kind} for {}: {} has the same signature",
                nf.func, entries[*prev].func
            ));
        }
        *slot = Some(i);
    }
    Ok(groups)
}

/// The kind of each schema, counted: `(kind, count)` in kind order.
pub fn kind_counts<'a>(
    schemas: impl Iterator<Item = &'a FunctionSchema>,
) -> Vec<(SchemaKind, usize)> {
    let mut counts: HashMap<SchemaKind, usize> = HashMap::new();
    for s in schemas {
        *counts.entry(s.kind()).or_default() += 1;
    }
    let mut v: Vec<_> = counts.into_iter().collect();
    v.sort();
    v
}
