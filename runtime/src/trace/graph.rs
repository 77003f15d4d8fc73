//! A captured graph: FX's `Graph` of `placeholder`, `call_function` and
//! `output` nodes, named as FX names them, printed as FX prints a
//! `GraphModule`'s code, and re-executed by an interpreter.

use crate::dispatch::Operator;
use crate::error::{Error, Result};
use crate::functionalize::new_token;
use crate::overrides::OpOverload;
use crate::value::typed::one_value;
use crate::value::{op_overload_name, Value};
use std::collections::HashMap;
use std::fmt;

/// A node's position in its graph.
pub type NodeId = usize;

/// An argument of a node: another node's value, a constant (a number, a
/// dtype, `None`, …; non-tensor results of the traced program are burned in
/// as constants), or a list of arguments (a `Tensor[]` of nodes).
#[derive(Clone, Debug)]
pub enum Arg {
    /// The value of an earlier node.
    Node(NodeId),
    /// A constant.
    Const(Value),
    /// A list (Python's `[a, b]`).
    List(Vec<Arg>),
}

/// What a `call_function` node calls.
#[derive(Clone, Copy, Debug)]
pub enum Target {
    /// An operator overload (`aten.add.Tensor`), a higher-order operator
    /// among them (`higher_order.call_torchbind`, a method call on an
    /// object; `higher_order.with_effects`, an effectful call threading the
    /// effect token, whose results are the new token, then its operator's).
    Op(&'static Operator),
    /// Python's `operator.getitem`: element `i` of a node's tuple of results.
    GetItem,
}

impl Target {
    /// As PyTorch's graphs print the target (`aten.add.Tensor`,
    /// `<built-in function getitem>`; a higher-order operator by its name,
    /// `call_torchbind`).
    pub fn name(&self) -> String {
        match self {
            Target::Op(op) if crate::value::is_higher_order(op.schema) => {
                op.schema.base.to_string()
            }
            Target::Op(op) => op_overload_name(op.schema),
            Target::GetItem => "<built-in function getitem>".into(),
        }
    }

    /// The name FX derives a node's name from (`add`, `getitem`).
    fn base_name(&self) -> &'static str {
        match self {
            Target::Op(op) => op.schema.base,
            Target::GetItem => "getitem",
        }
    }
}

/// One node of a graph.
#[derive(Clone, Debug)]
pub struct Node {
    /// Its name, unique in the graph (`arg0_1`, `add`, `sum_1`).
    pub name: String,
    /// What it is.
    pub kind: NodeKind,
}

/// A node's kind (FX's `op`).
#[derive(Clone, Debug)]
pub enum NodeKind {
    /// An input of the graph, in order.
    Placeholder,
    /// A call, with the arguments a dispatch handler sees (normalized:
    /// positional, then keyword-only ones that differ from their defaults).
    CallFunction {
        /// What it calls.
        target: Target,
        /// Positional arguments.
        args: Vec<Arg>,
        /// Keyword arguments.
        kwargs: Vec<(String, Arg)>,
    },
    /// The graph's results.
    Output(Vec<Arg>),
}

impl NodeKind {
    /// FX's `op` (`placeholder`, `call_function`, `output`).
    pub fn op(&self) -> &'static str {
        match self {
            NodeKind::Placeholder => "placeholder",
            NodeKind::CallFunction { .. } => "call_function",
            NodeKind::Output(_) => "output",
        }
    }
}

/// A captured program: placeholders, calls, one output node.
#[derive(Clone, Debug, Default)]
pub struct Graph {
    nodes: Vec<Node>,
    names: Namespace,
    /// How many effect tokens the graph threads: its first placeholders
    /// and its first outputs ([`Graph::run`] supplies and drops them).
    tokens: usize,
    /// How [`Graph::run`] runs the graph (made at its first run).
    plan: std::sync::OnceLock<Plan>,
}

/// What [`Graph::run`] works out once: each operator call bound to its
/// schema, the values each node is the last use of, the inputs' count.
#[derive(Clone, Debug)]
struct Plan {
    calls: Vec<Option<Planned>>,
    frees: Vec<Vec<NodeId>>,
    placeholders: usize,
}

/// An operator call bound once: its arguments' slots, and the generated
/// typed caller of the operator if it has one (the typed API with the
/// arguments unboxed: the dispatcher's unboxed fast path), else `None` (a
/// boxed call).
#[derive(Clone, Debug)]
struct Planned {
    slots: Vec<Slot>,
    /// The `Lend` slots: (slot, node), to put back after the call.
    lends: Vec<(usize, NodeId)>,
    typed: Option<crate::dispatch::TypedCaller>,
}

/// One schema argument of a planned call: a constant bound and converted
/// once, a node's value, or a list read from the nodes at each run. A node's
/// value is moved into the call, not cloned: at its last use for good
/// (`Take`), before it for the call's length (`Lend`: put back after); a
/// node the call reads more than once is cloned for its earlier slots.
#[derive(Clone, Debug)]
enum Slot {
    Fixed(Value),
    Node(NodeId),
    Lend(NodeId),
    Take(NodeId),
    Load(Arg),
}

impl Slot {
    /// Its value for this run, from the environment `env`.
    fn value(&self, env: &mut [Option<Value>]) -> Result<Value> {
        let missing =
            |n: NodeId| Error::Runtime(format!("node {n} is used before it is computed").into());
        match self {
            Slot::Fixed(v) => Ok(v.clone()),
            Slot::Node(n) => env.get(*n).cloned().flatten().ok_or_else(|| missing(*n)),
            Slot::Lend(n) | Slot::Take(n) => env
                .get_mut(*n)
                .and_then(Option::take)
                .ok_or_else(|| missing(*n)),
            Slot::Load(a) => load(env, a),
        }
    }
}

/// Moves node values into the call instead of cloning them: for each node
/// a plain slot reads and no list slot does, its last slot takes it if the
/// call is its last use (it then leaves `frees`), or lends it otherwise.
/// Returns the lends, (slot, node).
fn move_node_values(slots: &mut [Slot], frees: &mut Vec<NodeId>) -> Vec<(usize, NodeId)> {
    let mut lends = Vec::new();
    let mut nodes: Vec<NodeId> = slots
        .iter()
        .filter_map(|s| match s {
            Slot::Node(n) => Some(*n),
            _ => None,
        })
        .collect();
    nodes.sort_unstable();
    nodes.dedup();
    for u in nodes {
        let in_list = slots
            .iter()
            .any(|s| matches!(s, Slot::Load(a) if refers_to(a, u)));
        let last = slots
            .iter()
            .rposition(|s| matches!(s, Slot::Node(n) if *n == u));
        let Some(last) = last.filter(|_| !in_list) else {
            continue;
        };
        slots[last] = match frees.iter().position(|&f| f == u) {
            Some(i) => {
                frees.remove(i);
                Slot::Take(u)
            }
            None => {
                lends.push((last, u));
                Slot::Lend(u)
            }
        };
    }
    lends
}

/// Does an argument refer to a node?
fn has_node(a: &Arg) -> bool {
    let mut hit = false;
    arg_uses(a, &mut |_| hit = true);
    hit
}

/// A call's arguments bound to its operator's schema: one slot per schema
/// argument, defaults filled in, constants converted to the schema's types;
/// `None` if they do not bind (the call then binds at each run, and says
/// why it fails).
fn plan_call(op: &Operator, args: &[Arg], kwargs: &[(String, Arg)]) -> Option<Vec<Slot>> {
    let schema = op.schema;
    if schema.varargs || schema.varret {
        // Values past the declared arguments, a tuple of any length: the
        // interpreter's general path binds and calls them.
        return None;
    }
    let mut slots: Vec<Option<&Arg>> = vec![None; schema.args.len()];
    for (i, a) in args.iter().enumerate() {
        *slots.get_mut(i)? = Some(a);
    }
    for (k, a) in kwargs {
        let i = schema.args.iter().position(|s| s.name == k)?;
        slots[i] = Some(a);
    }
    slots
        .into_iter()
        .zip(schema.args)
        .map(|(a, s)| match a {
            Some(Arg::Node(n)) => Some(Slot::Node(*n)),
            Some(a) if has_node(a) => Some(Slot::Load(a.clone())),
            Some(a) => {
                let v = load(&[], a).ok()?;
                crate::bind::coerce(&s.ty, v).ok().map(Slot::Fixed)
            }
            None => crate::bind::default_value(s).map(Slot::Fixed),
        })
        .collect()
}

impl Graph {
    /// Its nodes, in order.
    pub fn nodes(&self) -> &[Node] {
        &self.nodes
    }

    /// The `call_function` nodes' targets, in order (`aten.sin.default`, …).
    pub fn targets(&self) -> Vec<String> {
        self.nodes
            .iter()
            .filter_map(|n| match &n.kind {
                NodeKind::CallFunction { target, .. } => Some(target.name()),
                _ => None,
            })
            .collect()
    }

    /// A graph of `nodes` (as saved), checked: unique names, every
    /// reference to an earlier node that is not the output, one output
    /// node and last, placeholders first, no more tokens than placeholders.
    /// The names are then made FX's ([`Namespace`]): one that is not an
    /// identifier, or is Python's, is renamed as FX renames it (a traced
    /// graph's names stay as they are), so that the printed code is the
    /// graph's and nothing else.
    pub(crate) fn from_parts(mut nodes: Vec<Node>, tokens: usize) -> Result<Graph> {
        let bad = |m: String| Error::Runtime(format!("not a valid graph: {m}").into());
        let mut seen = std::collections::HashSet::new();
        let mut placeholders = 0;
        for (i, n) in nodes.iter().enumerate() {
            if !seen.insert(n.name.as_str()) {
                return Err(bad(format!(
                    "two nodes are named {}",
                    crate::pyfmt::repr_str(&n.name)
                )));
            }
            let mut wrong = None;
            for_each_use(&n.kind, &mut |u| {
                if u >= i || matches!(nodes[u].kind, NodeKind::Output(_)) {
                    wrong.get_or_insert(u);
                }
            });
            if let Some(u) = wrong {
                return Err(bad(format!(
                    "node {} refers to node {u}, which is not before it",
                    crate::pyfmt::repr_str(&n.name)
                )));
            }
            match n.kind {
                NodeKind::Placeholder if placeholders != i => {
                    return Err(bad(format!(
                        "placeholder {} after other nodes",
                        crate::pyfmt::repr_str(&n.name)
                    )));
                }
                NodeKind::Placeholder => placeholders += 1,
                NodeKind::Output(_) if i + 1 != nodes.len() => {
                    return Err(bad("the output node is not the last".into()));
                }
                _ => {}
            }
        }
        if !matches!(nodes.last().map(|n| &n.kind), Some(NodeKind::Output(_))) {
            return Err(bad("no output node".into()));
        }
        if tokens > placeholders {
            return Err(bad(format!("{tokens} tokens but {placeholders} inputs")));
        }
        drop(seen);
        let mut names = Namespace::default();
        for n in &mut nodes {
            n.name = names.create(&n.name);
        }
        Ok(Graph {
            nodes,
            names,
            tokens,
            plan: Default::default(),
        })
    }

    /// Appends a placeholder named `name` (FX's `arg0_1` style).
    pub(crate) fn placeholder(&mut self, name: &str) -> NodeId {
        let name = self.names.create(name);
        self.push(name, NodeKind::Placeholder)
    }

    /// The number of effect tokens the graph takes and returns (before its
    /// other inputs and results).
    pub fn tokens(&self) -> usize {
        self.tokens
    }

    /// Puts an effect token's placeholder (`token`) before every other
    /// node; every reference to a node moves up by one. Its id is 0.
    pub(crate) fn prepend_token(&mut self) -> NodeId {
        fn shift(a: &mut Arg) {
            match a {
                Arg::Node(n) => *n += 1,
                Arg::List(items) => items.iter_mut().for_each(shift),
                Arg::Const(_) => {}
            }
        }
        for n in &mut self.nodes {
            match &mut n.kind {
                NodeKind::Placeholder => {}
                NodeKind::CallFunction { args, kwargs, .. } => {
                    args.iter_mut().for_each(shift);
                    kwargs.iter_mut().for_each(|(_, a)| shift(a));
                }
                NodeKind::Output(results) => results.iter_mut().for_each(shift),
            }
        }
        let name = self.names.create("token");
        self.nodes.insert(
            0,
            Node {
                name,
                kind: NodeKind::Placeholder,
            },
        );
        self.tokens += 1;
        0
    }

    /// Appends a call.
    pub(crate) fn call(
        &mut self,
        target: Target,
        args: Vec<Arg>,
        kwargs: Vec<(String, Arg)>,
    ) -> NodeId {
        let name = self.names.create(target.base_name());
        self.push(
            name,
            NodeKind::CallFunction {
                target,
                args,
                kwargs,
            },
        )
    }

    /// Appends `getitem(of, i)`: result `i` of a node with several.
    pub(crate) fn getitem(&mut self, of: NodeId, i: usize) -> NodeId {
        let index = Arg::Const(Value::Int(i as i64));
        self.call(Target::GetItem, vec![Arg::Node(of), index], Vec::new())
    }

    /// Appends the output node.
    pub(crate) fn output(&mut self, results: Vec<Arg>) -> NodeId {
        self.push("output".into(), NodeKind::Output(results))
    }

    fn push(&mut self, name: String, kind: NodeKind) -> NodeId {
        self.nodes.push(Node { name, kind });
        self.nodes.len() - 1
    }

    /// Runs the graph on `inputs` (one per placeholder): each call made as
    /// the recorded one was, through the dispatcher; the output node's values.
    pub fn run(&self, inputs: &[Value]) -> Result<Vec<Value>> {
        let plan = self.plan.get_or_init(|| self.plan());
        let wanted = plan.placeholders - self.tokens;
        if inputs.len() != wanted {
            return Err(Error::Runtime(
                format!(
                    "the graph takes {wanted} inputs, {} were given",
                    inputs.len()
                )
                .into(),
            ));
        }
        let mut tokens = self.tokens;
        let mut env: Vec<Option<Value>> = Vec::with_capacity(self.nodes.len());
        // One buffer for every planned call's arguments.
        let mut values: Vec<Value> = Vec::new();
        let mut inputs = inputs.iter();
        for ((node, planned), frees) in self.nodes.iter().zip(&plan.calls).zip(&plan.frees) {
            let v = match (&node.kind, planned) {
                (
                    NodeKind::CallFunction {
                        target: Target::Op(op),
                        ..
                    },
                    Some(planned),
                ) => {
                    for slot in &planned.slots {
                        values.push(slot.value(&mut env)?);
                    }
                    let out = match planned.typed {
                        Some(call) => call.call(op, &values),
                        None => op.call_boxed(&values).map(one_value),
                    };
                    // Lent values go back; the others are dropped.
                    for &(i, n) in &planned.lends {
                        env[n] = Some(std::mem::replace(&mut values[i], Value::None));
                    }
                    values.clear();
                    Some(out?)
                }
                (NodeKind::Placeholder, _) if tokens > 0 => {
                    tokens -= 1;
                    Some(Value::Tensor(new_token()?))
                }
                (NodeKind::Placeholder, _) => inputs.next().cloned(),
                (
                    NodeKind::CallFunction {
                        target,
                        args,
                        kwargs,
                    },
                    _,
                ) => {
                    let args = args
                        .iter()
                        .map(|a| load(&env, a))
                        .collect::<Result<Vec<_>>>()?;
                    let kwargs = kwargs
                        .iter()
                        .map(|(k, a)| Ok((k.clone(), load(&env, a)?)))
                        .collect::<Result<Vec<_>>>()?;
                    Some(match target {
                        // A tuple, whatever its length (`with_effects`).
                        Target::Op(op) if op.schema.varret => {
                            Value::List(OpOverload::of(op).call_all(&args, &kwargs)?.into())
                        }
                        Target::Op(op) => OpOverload::of(op).call_unchecked(&args, &kwargs)?,
                        Target::GetItem => getitem(&args)?,
                    })
                }
                (NodeKind::Output(results), _) => {
                    return results
                        .iter()
                        .skip(self.tokens)
                        .map(|a| load(&env, a))
                        .collect();
                }
            };
            env.push(v);
            // Values past their last use are dropped now (FX's `x = None`),
            // so that a tensor is freed, and its memory reused, as eagerly.
            for &u in frees {
                env[u] = None;
            }
        }
        Err(Error::Runtime("the graph has no output node".into()))
    }

    /// How [`Graph::run`] runs this graph: each operator call bound to its
    /// schema, with the values it is the last use of moved into it; what
    /// each node frees besides.
    fn plan(&self) -> Plan {
        let mut frees = self.last_uses();
        let calls = self
            .nodes
            .iter()
            .zip(&mut frees)
            .map(|(n, frees)| match &n.kind {
                NodeKind::CallFunction {
                    target: Target::Op(op),
                    args,
                    kwargs,
                } => plan_call(op, args, kwargs).map(|mut slots| {
                    let lends = move_node_values(&mut slots, frees);
                    Planned {
                        slots,
                        lends,
                        typed: crate::dispatch::typed_caller(op.schema),
                    }
                }),
                _ => None,
            })
            .collect();
        Plan {
            calls,
            frees,
            placeholders: self
                .nodes
                .iter()
                .filter(|n| matches!(n.kind, NodeKind::Placeholder))
                .count(),
        }
    }

    /// For each node, the nodes whose last use it is, in the order its
    /// arguments name them, then the node itself if nothing uses it (what
    /// FX's `x = None` lines list: a call whose value is unused is freed
    /// right away).
    fn last_uses(&self) -> Vec<Vec<NodeId>> {
        let mut last: HashMap<NodeId, NodeId> = HashMap::new();
        for (i, n) in self.nodes.iter().enumerate() {
            for_each_use(&n.kind, &mut |u| {
                last.insert(u, i);
            });
        }
        self.nodes
            .iter()
            .enumerate()
            .map(|(i, n)| {
                let mut freed = Vec::new();
                for_each_use(&n.kind, &mut |u| {
                    if last.get(&u) == Some(&i) && !freed.contains(&u) {
                        freed.push(u);
                    }
                });
                if matches!(n.kind, NodeKind::CallFunction { .. }) && !last.contains_key(&i) {
                    freed.push(i);
                }
                freed
            })
            .collect()
    }
}

/// Calls `f` on every node an argument refers to.
fn arg_uses(a: &Arg, f: &mut dyn FnMut(NodeId)) {
    match a {
        Arg::Node(n) => f(*n),
        Arg::List(items) => items.iter().for_each(|a| arg_uses(a, f)),
        Arg::Const(_) => {}
    }
}

/// Does `a` refer to node `u`?
fn refers_to(a: &Arg, u: NodeId) -> bool {
    let mut hit = false;
    arg_uses(a, &mut |n| hit |= n == u);
    hit
}

/// Calls `f` on every node an argument list refers to.
fn for_each_use(kind: &NodeKind, f: &mut dyn FnMut(NodeId)) {
    match kind {
        NodeKind::Placeholder => {}
        NodeKind::CallFunction { args, kwargs, .. } => {
            args.iter().for_each(|a| arg_uses(a, f));
            kwargs.iter().for_each(|(_, a)| arg_uses(a, f));
        }
        NodeKind::Output(results) => results.iter().for_each(|a| arg_uses(a, f)),
    }
}

/// An argument's value in the interpreter's environment.
fn load(env: &[Option<Value>], a: &Arg) -> Result<Value> {
    match a {
        Arg::Node(n) => env.get(*n).cloned().flatten().ok_or_else(|| {
            Error::Runtime(format!("node {n} is used before it is computed").into())
        }),
        Arg::Const(v) => Ok(v.clone()),
        Arg::List(items) => {
            let vs = items
                .iter()
                .map(|a| load(env, a))
                .collect::<Result<Vec<_>>>()?;
            Ok(list_value(vs))
        }
    }
}

/// A list of values as a call takes it: a `Tensor[]` of tensors, otherwise
/// a generic list.
fn list_value(vs: Vec<Value>) -> Value {
    if !vs.is_empty() && vs.iter().all(|v| matches!(v, Value::Tensor(_))) {
        Value::TensorList(
            vs.into_iter()
                .filter_map(|v| match v {
                    Value::Tensor(t) => Some(t),
                    _ => None,
                })
                .collect(),
        )
    } else {
        Value::List(vs.into())
    }
}

/// `operator.getitem(results, i)`.
fn getitem(args: &[Value]) -> Result<Value> {
    let (Some(seq), Some(Value::Int(i))) = (args.first(), args.get(1)) else {
        return Err(Error::Runtime(
            "getitem takes a sequence and an index".into(),
        ));
    };
    let items = crate::normalize::list_items(seq).ok_or_else(|| {
        Error::Type(format!("'{}' object is not subscriptable", seq.type_name()).into())
    })?;
    let n = items.len() as i64;
    let j = if *i < 0 { i + n } else { *i };
    usize::try_from(j)
        .ok()
        .and_then(|j| items.get(j).cloned())
        .ok_or_else(|| Error::Index("tuple index out of range".into()))
}

/// FX's names (`torch/fx/graph.py`, `_Namespace.create_name`): a node is
/// named after its target; a candidate that is not an identifier has each
/// run of other characters replaced by `_` (`_unnamed` if empty, `_` before
/// a leading digit); a name already taken, a Python keyword or a builtin
/// gets `_1`, `_2`, … (`sum` → `sum_1`), counted per base name. Names read
/// from a saved graph go through it too ([`Graph::from_parts`]), so every
/// name printed is an identifier of its own.
#[derive(Clone, Debug, Default)]
struct Namespace {
    used: std::collections::HashSet<String>,
    counts: HashMap<String, u128>,
}

/// FX's `_name_regex`, `^([a-zA-Z_][0-9a-zA-Z_]*?)(?:_(\d+))?$`: the base's
/// length and the numeric suffix, if `name` matches. Digits are ASCII's
/// (Python's `\d` also takes other scripts' digits, which FX would keep;
/// here they are replaced as other characters are) and a suffix beyond
/// `u64` counts as part of the base (Python's ints have no bound).
fn split_name(name: &str) -> Option<(usize, Option<u128>)> {
    let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let bytes = name.as_bytes();
    match bytes.first() {
        Some(c) if c.is_ascii_alphabetic() || *c == b'_' => {}
        _ => return None,
    }
    if !bytes.iter().all(|&c| ident(c)) {
        return None;
    }
    // The lazy base ends before the last `_` that only digits follow.
    let digits = bytes
        .iter()
        .rev()
        .take_while(|c| c.is_ascii_digit())
        .count();
    let underscore = bytes.len() - digits;
    if digits > 0 && underscore >= 2 && bytes[underscore - 1] == b'_' {
        if let Ok(n) = name[underscore..].parse::<u64>() {
            return Some((underscore - 1, Some(u128::from(n))));
        }
    }
    Some((bytes.len(), None))
}

impl Namespace {
    fn create(&mut self, candidate: &str) -> String {
        let mut candidate = candidate.to_string();
        let (base_len, num) = match split_name(&candidate) {
            Some(parts) => parts,
            None => {
                candidate = sanitized(&candidate);
                split_name(&candidate).unwrap_or((candidate.len(), None))
            }
        };
        let base = candidate[..base_len].to_string();
        let mut num = match num {
            Some(n) if !self.used.contains(&candidate) => n,
            _ => {
                let mut n = self.counts.get(&base).copied().unwrap_or(0);
                if is_python_reserved(&candidate) {
                    n += 1;
                    candidate = format!("{base}_{n}");
                }
                n
            }
        };
        while self.used.contains(&candidate) {
            num += 1;
            candidate = format!("{base}_{num}");
        }
        self.used.insert(candidate.clone());
        self.counts.insert(base, num);
        candidate
    }
}

/// FX's repair of a candidate that is not an identifier: each run of
/// characters outside `[0-9a-zA-Z_]` becomes one `_`, an empty name
/// `_unnamed`, and a leading digit gets a `_` before it.
fn sanitized(candidate: &str) -> String {
    let mut out = String::with_capacity(candidate.len());
    let mut in_run = false;
    for c in candidate.chars() {
        let legal = c.is_ascii_alphanumeric() || c == '_';
        if legal {
            out.push(c);
        } else if !in_run {
            out.push('_');
        }
        in_run = !legal;
    }
    if out.is_empty() {
        out.push_str("_unnamed");
    }
    if out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert(0, '_');
    }
    out
}

/// A Python identifier of ASCII characters (what a saved graph's keyword
/// arguments must be named: FX prints them as `name = value`).
pub(crate) fn is_identifier(name: &str) -> bool {
    split_name(name).is_some()
}

/// FX's `_illegal_names` (PyTorch 2.15 on Python 3.11: the keywords, the
/// builtins, the globals its code imports), and `self`, `forward`'s first
/// parameter.
fn is_python_reserved(name: &str) -> bool {
    const RESERVED: &[&str] = &[
        "ArithmeticError",
        "AssertionError",
        "AttributeError",
        "BaseException",
        "BaseExceptionGroup",
        "BlockingIOError",
        "BrokenPipeError",
        "BufferError",
        "BytesWarning",
        "ChildProcessError",
        "ConnectionAbortedError",
        "ConnectionError",
        "ConnectionRefusedError",
        "ConnectionResetError",
        "DeprecationWarning",
        "EOFError",
        "Ellipsis",
        "EncodingWarning",
        "EnvironmentError",
        "Exception",
        "ExceptionGroup",
        "False",
        "FileExistsError",
        "FileNotFoundError",
        "FloatingPointError",
        "FutureWarning",
        "GeneratorExit",
        "IOError",
        "ImportError",
        "ImportWarning",
        "IndentationError",
        "IndexError",
        "InterruptedError",
        "IsADirectoryError",
        "KeyError",
        "KeyboardInterrupt",
        "LookupError",
        "MemoryError",
        "ModuleNotFoundError",
        "NameError",
        "None",
        "NoneType",
        "NotADirectoryError",
        "NotImplemented",
        "NotImplementedError",
        "OSError",
        "OverflowError",
        "PendingDeprecationWarning",
        "PermissionError",
        "ProcessLookupError",
        "RecursionError",
        "ReferenceError",
        "ResourceWarning",
        "RuntimeError",
        "RuntimeWarning",
        "StopAsyncIteration",
        "StopIteration",
        "SyntaxError",
        "SyntaxWarning",
        "SystemError",
        "SystemExit",
        "TabError",
        "TimeoutError",
        "True",
        "TypeError",
        "UnboundLocalError",
        "UnicodeDecodeError",
        "UnicodeEncodeError",
        "UnicodeError",
        "UnicodeTranslateError",
        "UnicodeWarning",
        "UserWarning",
        "ValueError",
        "Warning",
        "ZeroDivisionError",
        "__build_class__",
        "__debug__",
        "__doc__",
        "__import__",
        "__loader__",
        "__name__",
        "__package__",
        "__spec__",
        "abs",
        "aiter",
        "all",
        "and",
        "anext",
        "any",
        "as",
        "ascii",
        "assert",
        "async",
        "await",
        "bin",
        "bool",
        "break",
        "breakpoint",
        "bytearray",
        "bytes",
        "callable",
        "chr",
        "class",
        "classmethod",
        "compile",
        "complex",
        "continue",
        "copyright",
        "credits",
        "def",
        "del",
        "delattr",
        "device",
        "dict",
        "dir",
        "divmod",
        "elif",
        "else",
        "enumerate",
        "eval",
        "except",
        "exec",
        "exit",
        "filter",
        "finally",
        "float",
        "for",
        "format",
        "from",
        "frozenset",
        "fx_pytree",
        "getattr",
        "global",
        "globals",
        "hasattr",
        "hash",
        "help",
        "hex",
        "id",
        "if",
        "import",
        "in",
        "inf",
        "input",
        "int",
        "is",
        "isinstance",
        "issubclass",
        "iter",
        "lambda",
        "len",
        "license",
        "list",
        "locals",
        "map",
        "max",
        "memoryview",
        "min",
        "nan",
        "next",
        "nonlocal",
        "not",
        "object",
        "oct",
        "open",
        "or",
        "ord",
        "pass",
        "pow",
        "print",
        "property",
        "pytree",
        "quit",
        "raise",
        "range",
        "repr",
        "return",
        "reversed",
        "round",
        "self",
        "set",
        "setattr",
        "slice",
        "sorted",
        "staticmethod",
        "str",
        "sum",
        "super",
        "torch",
        "try",
        "tuple",
        "type",
        "vars",
        "while",
        "with",
        "yield",
        "zip",
    ];
    RESERVED.binary_search(&name).is_ok()
}

impl fmt::Display for Graph {
    /// The graph as FX prints a `GraphModule`'s code:
    ///
    /// ```text
    /// def forward(self, arg0_1, arg1_1):
    ///     add = torch.ops.aten.add.Tensor(arg0_1, arg1_1);  arg0_1 = arg1_1 = None
    ///     return (add,)
    /// ```
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.nodes.iter().map(|n| n.name.as_str()).collect();
        let placeholders: Vec<&str> = self
            .nodes
            .iter()
            .filter(|n| matches!(n.kind, NodeKind::Placeholder))
            .map(|n| n.name.as_str())
            .collect();
        let mut params = vec!["self"];
        params.extend(&placeholders);
        writeln!(f, "def forward({}):", params.join(", "))?;
        let last = self.last_uses();
        for (i, node) in self.nodes.iter().enumerate() {
            let freed = || {
                let freed: Vec<&str> = last[i].iter().map(|&u| names[u]).collect();
                if freed.is_empty() {
                    String::new()
                } else {
                    format!(";  {} = None", freed.join(" = "))
                }
            };
            match &node.kind {
                NodeKind::Placeholder => {}
                NodeKind::CallFunction {
                    target: Target::GetItem,
                    args,
                    ..
                } => {
                    let shown: Vec<String> = args.iter().map(|a| show(a, &names)).collect();
                    let index = shown.get(1).map_or("", String::as_str);
                    let seq = shown.first().map_or("", String::as_str);
                    writeln!(f, "    {} = {seq}[{index}]{}", node.name, freed())?;
                }
                NodeKind::CallFunction {
                    target,
                    args,
                    kwargs,
                } => {
                    let callee = match target {
                        Target::Op(op) => format!("torch.ops.{}", op_overload_name(op.schema)),
                        Target::GetItem => "operator.getitem".to_string(),
                    };
                    let mut parts: Vec<String> = args.iter().map(|a| show(a, &names)).collect();
                    parts.extend(
                        kwargs
                            .iter()
                            .map(|(k, a)| format!("{k} = {}", show(a, &names))),
                    );
                    writeln!(
                        f,
                        "    {} = {callee}({}){}",
                        node.name,
                        parts.join(", "),
                        freed()
                    )?;
                }
                NodeKind::Output(results) => {
                    let shown: Vec<String> = results.iter().map(|a| show(a, &names)).collect();
                    let tuple = match shown.as_slice() {
                        [one] => format!("({one},)"),
                        many => format!("({})", many.join(", ")),
                    };
                    writeln!(f, "    return {tuple}")?;
                }
            }
        }
        Ok(())
    }
}

/// An argument as Python code.
fn show(a: &Arg, names: &[&str]) -> String {
    match a {
        Arg::Node(n) => names.get(*n).copied().unwrap_or("?").to_string(),
        Arg::List(items) => format!(
            "[{}]",
            items
                .iter()
                .map(|a| show(a, names))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Arg::Const(v) => python_literal(v),
    }
}

/// A constant as FX prints it (`2`, `0.5`, `True`, `[2, 3]`, `torch.float64`,
/// `device(type='cpu')`, `torch.contiguous_format`, `None`).
pub(crate) fn python_literal(v: &Value) -> String {
    match v {
        Value::Device(d) => format!("device(type='{d}')"),
        Value::DType(d) => d.to_string(),
        Value::MemoryFormat(m) => format!("torch.{}", m.name()),
        Value::Str(s) => crate::pyfmt::repr_str(s),
        other => match crate::normalize::list_items(other) {
            Some(items) => format!(
                "[{}]",
                items
                    .iter()
                    .map(python_literal)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            None => other.to_string(),
        },
    }
}
