//! The API table: every binding's signatures and where each dispatches
//! ([`ApiTable`], [`ApiBinding`], [`SigTarget`]), found by name, with the
//! per-binding cache of call shapes the fast path reads.

use super::fast::{self, BindPlan};
use super::parse;
use super::PythonArgParser;
use crate::tables::Ty;
use crate::value::Value;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// Where one signature dispatches: schema overload names (`add.Tensor`) and, for a
/// deprecated signature, its `aten:` call expressions.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct SigTarget {
    /// Called without `out=`.
    pub functional: Option<String>,
    /// Called with `out=`.
    pub out: Option<String>,
    /// Deprecated: the call expression without `out=` (`add(self, other, alpha)`).
    pub deprecated_call: Option<String>,
    /// Deprecated: the call expression with `out=`.
    pub deprecated_out_call: Option<String>,
    /// For the runtime's own tables: the operators of `functional` and `out`,
    /// resolved once (saves the by-name lookups on every call).
    pub ids: (Option<crate::OpId>, Option<crate::OpId>),
}

/// One API callable: its parser and per-signature targets (generated order).
#[derive(Clone, Debug)]
pub struct ApiBinding {
    /// `torch.add`, `Tensor.add`, …
    pub name: String,
    /// The parser.
    pub parser: PythonArgParser,
    /// Per signature (generated order).
    pub targets: Vec<SigTarget>,
    /// A `Tensor` method (the first positional is the receiver).
    pub method: bool,
    /// Per signature in parser order: the fast path's precomputed facts.
    pub(super) fast: Vec<SigFast>,
    /// Call shapes seen by [`call_dispatch`] whose fast path is decided by the
    /// kinds of the values alone.
    pub(super) shapes: ShapeCache,
}

/// How many call shapes one binding remembers (the first ones seen; bounded,
/// never evicted).
pub(super) const SHAPES: usize = 4;

/// A per-binding cache of call shapes: lock-free reads (one atomic load per slot).
#[derive(Clone, Debug, Default)]
pub(super) struct ShapeCache {
    pub(super) slots: [std::sync::OnceLock<Shape>; SHAPES],
}

/// One call shape — the number of positionals and keywords, the kind of every
/// value ([`shape_key`]) and the keyword names — whose match (no `out=`) and
/// movability ([`fast::movable`]) depend on nothing else, with its move plan:
/// where each value goes ([`fast::route`]) in the operator `id`'s arguments.
/// The replay is the precomputed form of [`crate::place::place`]'s placement
/// of the first call of the shape, not a second placement rule.
#[derive(Clone, Debug)]
pub(super) struct Shape {
    pub(super) key: u64,
    pub(super) kw: Box<[String]>,
    pub(super) id: crate::OpId,
    /// The operator's number of arguments.
    pub(super) n: usize,
    /// Per positional, then per keyword: slot and coercion.
    pub(super) to: Box<[(u16, Option<Ty>)]>,
    /// Constant values (defaults).
    pub(super) sets: Box<[(u16, Value)]>,
}

impl ShapeCache {
    #[inline]
    pub(super) fn find<K: AsRef<str>>(&self, key: u64, kwargs: &[(K, Value)]) -> Option<&Shape> {
        for slot in &self.slots {
            let s = slot.get()?;
            if s.key == key
                && s.kw
                    .iter()
                    .zip(kwargs)
                    .all(|(a, (b, _))| a.as_str() == b.as_ref())
            {
                return Some(s);
            }
        }
        None
    }

    pub(super) fn insert(&self, mut shape: Shape) {
        for slot in &self.slots {
            if slot.get().is_some() {
                continue;
            }
            match slot.set(shape) {
                Ok(()) => return,
                Err(s) => shape = s,
            }
        }
    }

    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.slots.iter().filter(|s| s.get().is_some()).count()
    }
}

/// The [`fast::tag`] bits of lists (typed or Python).
pub(super) const LIST_TAGS: u32 = ((1 << 13) - 1) & !((1 << 6) - 1);

/// The shape key of a call: the counts of positionals and keywords and the kind
/// of every value, packed; `None` for calls the shape cache leaves alone (lists,
/// more than 11 values).
#[inline]
pub(super) fn shape_key<K>(args: &[Value], kwargs: &[(K, Value)]) -> Option<u64> {
    if args.len() + kwargs.len() > 11 {
        return None;
    }
    let mut key = (args.len() as u64) << 4 | kwargs.len() as u64;
    for v in args.iter().chain(kwargs.iter().map(|(_, v)| v)) {
        let t = parse::tag(v);
        if t & LIST_TAGS != 0 {
            return None;
        }
        key = key << 5 | u64::from(t.trailing_zeros());
    }
    Some(key)
}

/// What the fast path knows of one signature (parser order) in advance.
#[derive(Clone, Debug)]
pub(super) struct SigFast {
    /// The position of the `out` parameter.
    pub(super) out_pos: Option<usize>,
    /// Per parameter: the values its type check accepts by kind alone
    /// ([`fast::accepted`]).
    pub(super) accepted: Vec<u32>,
    /// Per parameter: the values its type check rejects by kind alone
    /// ([`fast::rejected`]).
    pub(super) rejected: Vec<u32>,
    /// The binding plans onto the operators of `functional` (`[0]`) and `out`
    /// (`[1]`), for the runtime's own tables (operators known by id).
    pub(super) plans: [Option<(crate::OpId, BindPlan)>; 2],
}

impl ApiBinding {
    pub(super) fn new(
        name: String,
        parser: PythonArgParser,
        targets: Vec<SigTarget>,
    ) -> ApiBinding {
        let method = name.starts_with("Tensor.");
        let fast = parser
            .signatures
            .iter()
            .zip(&parser.order)
            .map(|(sig, &index)| {
                let target = targets.get(index);
                let plan = |has_out: bool| {
                    let target = target?;
                    let (id, call) = if has_out {
                        (target.ids.1, &target.deprecated_out_call)
                    } else {
                        (target.ids.0, &target.deprecated_call)
                    };
                    let id = id.filter(|_| call.is_none())?;
                    Some((id, BindPlan::new(sig, id.schema(), method, has_out)?))
                };
                SigFast {
                    out_pos: sig.params.iter().position(|p| p.name == "out"),
                    accepted: sig.params.iter().map(fast::accepted).collect(),
                    rejected: sig.params.iter().map(fast::rejected).collect(),
                    plans: [plan(false), plan(true)],
                }
            })
            .collect();
        ApiBinding {
            name,
            parser,
            targets,
            method,
            fast,
            shapes: ShapeCache::default(),
        }
    }
}

/// FxHash (rustc's hasher): binding names are short, trusted keys.
#[derive(Clone, Copy, Debug, Default)]
pub struct NameHasher(u64);

impl Hasher for NameHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        const K: u64 = 0x51_7c_c1_b7_27_22_0a_95;
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let w = u64::from_le_bytes(c.try_into().unwrap_or([0; 8]));
            self.0 = (self.0.rotate_left(5) ^ w).wrapping_mul(K);
        }
        for &b in chunks.remainder() {
            self.0 = (self.0.rotate_left(5) ^ u64::from(b)).wrapping_mul(K);
        }
    }
    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
}

/// The API bindings of a schema table, by name.
#[derive(Clone, Debug, Default)]
pub struct ApiTable {
    /// Bindings by name (`torch.add`).
    pub bindings: HashMap<String, ApiBinding, BuildHasherDefault<NameHasher>>,
}

/// The public name of a derived binding: `torch.nn.functional.x` for nn, the
/// submodule functions without their prefix (`torch.linalg.linalg_det` →
/// also reachable as `torch.linalg.det`).
/// Tensor methods PyTorch writes by hand (`python_variable_methods.cpp`)
/// for schema entries that get no generated binding
/// (`SKIP_PYTHON_BINDINGS`): their parser signatures, each with the overload
/// it calls. `Tensor.to`'s device forms call overloads this YAML does not
/// have yet: only its dtype form is bound.
pub(super) const MANUAL_BINDINGS: &[(&str, &[(&str, &str)])] = &[
    (
        "Tensor.contiguous",
        &[(
            "contiguous(*, MemoryFormat memory_format=contiguous_format)",
            "contiguous",
        )],
    ),
    (
        "Tensor.to",
        &[(
            "to(ScalarType dtype, bool non_blocking=False, bool copy=False, *, MemoryFormat? memory_format=None)",
            "to.dtype",
        )],
    ),
];

pub(super) fn aliases(name: &str) -> Vec<String> {
    let mut out = vec![name.to_string()];
    for (module, prefix) in [
        ("torch.linalg.", "linalg_"),
        ("torch.special.", "special_"),
        ("torch.fft.", "fft_"),
    ] {
        if let Some(rest) = name.strip_prefix(module) {
            if let Some(short) = rest.strip_prefix(prefix) {
                out.push(format!("{module}{short}"));
            }
        }
    }
    if let Some(rest) = name.strip_prefix("torch.nn.functional.") {
        out.push(format!("torch._C._nn.{rest}"));
    }
    out
}

impl ApiTable {
    /// Builds the table from derived bindings (`opforge_schema::python::derive_bindings`).
    pub fn from_bindings(bindings: &[opforge_schema::python::Binding]) -> Result<ApiTable, String> {
        let mut table = ApiTable::default();
        for b in bindings {
            let parser = PythonArgParser::new(&b.signatures)?;
            let targets = b
                .sources
                .iter()
                .map(|s| SigTarget {
                    functional: Some(s.functional.clone()),
                    out: s.out.clone(),
                    deprecated_call: s.deprecated_call.clone(),
                    deprecated_out_call: s.deprecated_out_call.clone(),
                    ids: (None, None),
                })
                .collect();
            table.insert(ApiBinding::new(b.name.clone(), parser, targets));
        }
        Ok(table)
    }

    /// The runtime's own bindings ([`crate::BINDINGS`]).
    pub fn builtin() -> ApiTable {
        let mut table = ApiTable::default();
        for b in crate::BINDINGS.iter() {
            let texts: Vec<&str> = b.signatures.iter().map(|s| s.text).collect();
            let Ok(parser) = PythonArgParser::new(&texts) else {
                continue;
            };
            let targets = b
                .signatures
                .iter()
                .map(|s| SigTarget {
                    functional: s.functional.map(|id| id.schema().name.to_string()),
                    out: s.out.map(|id| id.schema().name.to_string()),
                    deprecated_call: s.deprecated_call.map(str::to_string),
                    deprecated_out_call: None,
                    ids: (s.functional, s.out),
                })
                .collect();
            table.insert(ApiBinding::new(b.name.to_string(), parser, targets));
        }
        for (name, signatures) in MANUAL_BINDINGS {
            let texts: Vec<&str> = signatures.iter().map(|(text, _)| *text).collect();
            let Ok(parser) = PythonArgParser::new(&texts) else {
                continue;
            };
            let targets = signatures
                .iter()
                .map(|(_, op)| {
                    let id = crate::OpId::from_name(op);
                    SigTarget {
                        functional: Some(op.to_string()),
                        out: None,
                        deprecated_call: None,
                        deprecated_out_call: None,
                        ids: (id, None),
                    }
                })
                .collect();
            table.insert(ApiBinding::new(name.to_string(), parser, targets));
        }
        table
    }

    pub(super) fn insert(&mut self, b: ApiBinding) {
        for alias in aliases(&b.name) {
            self.bindings.entry(alias).or_insert_with(|| b.clone());
        }
    }

    /// The binding named `api`.
    pub fn get(&self, api: &str) -> Option<&ApiBinding> {
        self.bindings.get(api)
    }
}
