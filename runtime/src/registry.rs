//! Run-time registry: any schema file (e.g. PyTorch's 2,590-entry
//! `native_functions.yaml`) loaded with the loader and validator the build uses
//! (`opforge_schema::load`, `opforge_schema::validate`), into kernel-less
//! operators.
//!
//! The model → [`OpSchema`] conversion is the schema crate's, in one place
//! ([`op_schema`], shared with the generator); a test checks that converting the
//! workspace's own YAML gives exactly the generated [`crate::OPS`]. Converted
//! schemas are leaked: operators live for the whole program, as in PyTorch.
//!
//! Overload packets (`aten::add` → `add.Tensor`, `add.Scalar`, …) are in YAML order
//! unless [`Registry::with_overload_order`] reads the registration order PyTorch
//! uses (`aten_overloads.jsonl`), which also brings the TorchScript-only
//! overloads (`"dispatcher": false`). The functions a file's `autogen:` lines
//! add are operators of the registry, as they are of the generated tables.

pub use crate::tables::op_schema;
use crate::tables::{leak_str, OpSchema};
use opforge_schema::diag::Diagnostics;
use opforge_schema::model::NativeFunction;
use std::collections::HashMap;

pub use crate::packet::Overload;

/// Kernel-less operators loaded at run time from a schema file.
#[derive(Debug, Default)]
pub struct Registry {
    ops: Vec<&'static OpSchema>,
    by_name: HashMap<String, usize>,
    packets: HashMap<String, Vec<Overload>>,
    entries: HashMap<String, NativeFunction>,
    bindings: Vec<opforge_schema::python::Binding>,
    /// What an upper layer derives from the registry once (the argument
    /// parser's tables, see `Registry::api_table`).
    derived: std::sync::OnceLock<std::sync::Arc<dyn std::any::Any + Send + Sync>>,
}

/// Registered schemas print list defaults as `[1, 1]`; the schema language (like
/// torchgen) writes them `[1,1]`. Removes the spaces inside brackets.
fn compact_lists(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut depth = 0;
    for c in text.chars() {
        match c {
            '[' => depth += 1,
            ']' => depth -= 1,
            ' ' if depth > 0 => continue,
            _ => {}
        }
        out.push(c);
    }
    out
}

/// The `ns::name` of a schema's packet (`aten::add` for `add.Tensor`).
fn packet_key(s: &OpSchema) -> String {
    format!("{}::{}", s.namespace, s.base)
}

impl Registry {
    /// The data an upper layer derives from this registry once, made by `init`
    /// on first use (the Python-API parsers, `Registry::api_table`).
    pub fn derived<T: std::any::Any + Send + Sync>(
        &self,
        init: impl FnOnce() -> std::sync::Arc<T>,
    ) -> Option<std::sync::Arc<T>> {
        let any = self.derived.get_or_init(|| init()).clone();
        any.downcast::<T>().ok()
    }

    /// Loads and validates schema-file text (no tags check) with the codegen loader;
    /// the Python-API bindings are derived without deprecated signatures.
    pub fn from_yaml_str(file: &str, text: &str) -> Result<Registry, Diagnostics> {
        Registry::build(file, text, &[])
    }

    fn build(
        file: &str,
        text: &str,
        deprecated: &[opforge_schema::python::DeprecatedEntry],
    ) -> Result<Registry, Diagnostics> {
        let loaded = opforge_schema::check_str(file, text, None)?;
        let mut r = Registry {
            bindings: opforge_schema::python::derive_bindings(&loaded.entries, deprecated)
                .map_err(|e| {
                    Diagnostics(vec![opforge_schema::diag::Diagnostic::new(file, 0, e)])
                })?,
            ..Registry::default()
        };
        // The file's entries, then the functions its `autogen:` lines add (as
        // the generator adds them to the runtime's own tables).
        let generated = opforge_schema::tables::generated_entries(&loaded.entries)
            .map_err(|e| Diagnostics(vec![opforge_schema::diag::Diagnostic::new(file, 0, e)]))?;
        for nf in loaded.entries.into_iter().chain(generated) {
            let s = op_schema(&nf.func, Some(&nf));
            let key = format!("{}::{}", s.namespace, s.name);
            r.by_name.insert(key.clone(), r.ops.len());
            r.ops.push(s);
            r.packets.entry(packet_key(s)).or_default().push(Overload {
                name: s.name,
                schema_text: crate::packet::declaration(s),
                op: Some(s),
                dispatcher: true,
            });
            r.entries.insert(key, nf);
        }
        Ok(r)
    }

    /// Loads a schema file from disk (with the `deprecated.yaml` beside it, if any,
    /// for the Python-API bindings).
    pub fn from_path(path: impl AsRef<std::path::Path>) -> Result<Registry, Diagnostics> {
        let path = path.as_ref();
        let name = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| {
            Diagnostics(vec![opforge_schema::diag::Diagnostic::new(
                &name,
                0,
                format!("cannot read: {e}"),
            )])
        })?;
        let deprecated = opforge_schema::read_deprecated(path)?;
        Registry::build(&name, &text, &deprecated)
    }

    /// The Python-API bindings PyTorch derives from this file (`torch.add`,
    /// `Tensor.add`, …), as `opforge_schema::python::derive_bindings` gives them.
    pub fn bindings(&self) -> &[opforge_schema::python::Binding] {
        &self.bindings
    }

    /// Replaces the packets with the registration order read from
    /// `aten_overloads.jsonl` text (one `{"op": "aten::add", "overloads": [...]}`
    /// per line). Dispatcher overloads are parsed from their registered schema
    /// text (expanded defaults such as `SymInt[2] stride=[1, 1]` included), with
    /// the YAML entry's metadata when the file has one; TorchScript-only overloads
    /// are parsed when the schema language can, and kept as text otherwise.
    pub fn with_overload_order(mut self, jsonl: &str) -> Result<Registry, String> {
        for (lineno, line) in jsonl.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let err = |m: &str| format!("overloads line {}: {m}", lineno + 1);
            let rec: serde_json::Value =
                serde_json::from_str(line).map_err(|e| err(&e.to_string()))?;
            let op = rec["op"].as_str().ok_or_else(|| err("no \"op\""))?;
            let list = rec["overloads"]
                .as_array()
                .ok_or_else(|| err("no \"overloads\""))?;
            let (ns, _) = op.split_once("::").unwrap_or(("aten", op));
            let mut packet = Vec::new();
            for o in list {
                let name = o["overload"]
                    .as_str()
                    .ok_or_else(|| err("no \"overload\""))?;
                let text = o["schema"].as_str().ok_or_else(|| err("no \"schema\""))?;
                let dispatcher = o["dispatcher"].as_bool().unwrap_or(true);
                let key = format!("{ns}::{name}");
                let parsed = opforge_schema::schema::parse_schema(&compact_lists(text)).ok();
                let s = parsed.map(|f| op_schema(&f, self.entries.get(&key)));
                if let (Some(s), true) = (s, dispatcher) {
                    if !self.by_name.contains_key(&key) {
                        self.by_name.insert(key, self.ops.len());
                        self.ops.push(s);
                    }
                }
                packet.push(Overload {
                    name: leak_str(name),
                    schema_text: leak_str(text),
                    op: s,
                    dispatcher,
                });
            }
            self.packets.insert(op.to_string(), packet);
        }
        Ok(self)
    }

    /// Every dispatcher operator: the file's entries in file order, the
    /// functions its `autogen:` lines add, then those only the overload order
    /// added.
    pub fn ops(&self) -> &[&'static OpSchema] {
        &self.ops
    }

    /// The operator `ns::name.overload` (`aten::add.Tensor`, `aten::abs`); the
    /// namespace defaults to `aten`.
    pub fn find(&self, name: &str) -> Option<&'static OpSchema> {
        let key = if name.contains("::") {
            name.to_string()
        } else {
            format!("aten::{name}")
        };
        self.by_name.get(&key).map(|&i| self.ops[i])
    }

    /// The overloads of a packet (`aten::add`) in the order they are tried; empty if
    /// there is no such name.
    pub fn packet(&self, name: &str) -> &[Overload] {
        let key = if name.contains("::") {
            name.to_string()
        } else {
            format!("aten::{name}")
        };
        self.packets.get(&key).map_or(&[], |v| v.as_slice())
    }

    /// Every packet name (`aten::add`, …), unordered.
    pub fn packet_names(&self) -> impl Iterator<Item = &str> {
        self.packets.keys().map(|k| k.as_str())
    }

    /// Registers every operator with the process-wide dispatcher (without
    /// kernels), skipping names it already has. Returns how many were added.
    pub fn add_to_dispatcher(&self) -> usize {
        let d = crate::dispatch::dispatcher();
        self.ops
            .iter()
            .filter(|s| d.add_operator(s).is_ok())
            .count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tables::{DefaultVal, SchemaKind};

    #[test]
    fn converting_our_yaml_gives_the_generated_tables() {
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/native_functions.yaml");
        let r = Registry::from_path(root).unwrap();
        let mut ops: Vec<&OpSchema> = r.ops().to_vec();
        ops.sort_by(|a, b| (a.namespace, a.name).cmp(&(b.namespace, b.name)));
        assert_eq!(ops.len(), crate::OPS.len());
        for (a, b) in ops.iter().zip(crate::OPS.iter()) {
            assert_eq!(**a, *b, "{}", b.name);
        }
        let add = r.packet("aten::add");
        assert_eq!(add[0].name, "add.Tensor");
        assert!(r.find("add.Tensor").is_some());
    }

    #[test]
    fn overload_order_and_torchscript_only_overloads() {
        let yaml = "- func: add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor\n- func: add.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor\n";
        let r = Registry::from_yaml_str("t.yaml", yaml).unwrap();
        assert_eq!(r.packet("aten::add").len(), 2);
        let jsonl = r#"{"op": "aten::add", "overloads": [{"overload": "add.Scalar", "schema": "aten::add.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor", "dispatcher": true}, {"overload": "add.Tensor", "schema": "aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor", "dispatcher": true}, {"overload": "add.out", "schema": "aten::add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)", "dispatcher": true}, {"overload": "add.t", "schema": "aten::add.t(t[] a, t[] b) -> t[]", "dispatcher": false}]}"#;
        let r = r.with_overload_order(jsonl).unwrap();
        let p = r.packet("aten::add");
        let names: Vec<_> = p.iter().map(|o| o.name).collect();
        assert_eq!(names, ["add.Scalar", "add.Tensor", "add.out", "add.t"]);
        assert!(p[3].op.is_none() && !p[3].dispatcher);
        let out = r.find("aten::add.out").unwrap();
        assert_eq!(out.kind, SchemaKind::Out);
        assert!(out.args[3].is_out);
        assert_eq!(
            p[1].op.unwrap().args[2].default.unwrap().value,
            DefaultVal::Int(1)
        );
    }
}
