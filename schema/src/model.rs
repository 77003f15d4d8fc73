//! Model: the typed, immutable IR of the schema language.
//!
//! A [`FunctionSchema`] is what one `func:` line of `native_functions.yaml` says:
//! an [`OperatorName`], [`Arguments`] and [`Return`]s. Parsing lives in [`crate::schema`];
//! `Display` on every type here prints the exact source text back (PyTorch's
//! torchgen is lossless in the same way, and a test checks it on every entry of
//! PyTorch's own file).

use std::fmt;

/// A base type of the schema language (torchgen's `BaseTy`, plus the `Dimname`
/// and `complex` types that older PyTorch releases and the runtime parser know,
/// and the JIT schema parser's `Any`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum BaseType {
    /// `Tensor`
    Tensor,
    /// `int` (64-bit)
    Int,
    /// `SymInt` (an int that may be symbolic)
    SymInt,
    /// `float` (64-bit)
    Float,
    /// `bool`
    Bool,
    /// `str`
    Str,
    /// `Scalar` (bool, int, float or complex number)
    Scalar,
    /// `ScalarType` (a dtype)
    ScalarType,
    /// `Layout`
    Layout,
    /// `Device`
    Device,
    /// `DeviceIndex`
    DeviceIndex,
    /// `MemoryFormat`
    MemoryFormat,
    /// `QScheme`
    QScheme,
    /// `Generator`
    Generator,
    /// `Storage`
    Storage,
    /// `Stream`
    Stream,
    /// `SymBool`
    SymBool,
    /// `DimVector`
    DimVector,
    /// `GraphModule`
    GraphModule,
    /// `Dimname` (named tensors; no 2.15 entry uses it)
    Dimname,
    /// `complex`
    Complex,
    /// `Any`: a value of any type, passed as it is (the JIT schema's `AnyType`;
    /// what PyTorch's higher-order operators take, e.g. `call_torchbind`'s
    /// object).
    Any,
}

impl BaseType {
    /// Every base type, in declaration order.
    pub const ALL: [BaseType; 22] = [
        BaseType::Tensor,
        BaseType::Int,
        BaseType::SymInt,
        BaseType::Float,
        BaseType::Bool,
        BaseType::Str,
        BaseType::Scalar,
        BaseType::ScalarType,
        BaseType::Layout,
        BaseType::Device,
        BaseType::DeviceIndex,
        BaseType::MemoryFormat,
        BaseType::QScheme,
        BaseType::Generator,
        BaseType::Storage,
        BaseType::Stream,
        BaseType::SymBool,
        BaseType::DimVector,
        BaseType::GraphModule,
        BaseType::Dimname,
        BaseType::Complex,
        BaseType::Any,
    ];

    /// The name as written in a schema.
    pub fn name(self) -> &'static str {
        match self {
            BaseType::Tensor => "Tensor",
            BaseType::Int => "int",
            BaseType::SymInt => "SymInt",
            BaseType::Float => "float",
            BaseType::Bool => "bool",
            BaseType::Str => "str",
            BaseType::Scalar => "Scalar",
            BaseType::ScalarType => "ScalarType",
            BaseType::Layout => "Layout",
            BaseType::Device => "Device",
            BaseType::DeviceIndex => "DeviceIndex",
            BaseType::MemoryFormat => "MemoryFormat",
            BaseType::QScheme => "QScheme",
            BaseType::Generator => "Generator",
            BaseType::Storage => "Storage",
            BaseType::Stream => "Stream",
            BaseType::SymBool => "SymBool",
            BaseType::DimVector => "DimVector",
            BaseType::GraphModule => "GraphModule",
            BaseType::Dimname => "Dimname",
            BaseType::Complex => "complex",
            BaseType::Any => "Any",
        }
    }

    /// Looks a base type up by its schema name.
    pub fn from_name(s: &str) -> Option<BaseType> {
        BaseType::ALL.iter().copied().find(|b| b.name() == s)
    }
}

/// The prefix of custom-class types (`__torch__.torch.classes.ns.Class`).
pub const CUSTOM_CLASS_PREFIX: &str = "__torch__.torch.classes.";

/// A schema type: base types composed with `?` (optional) and `[]` / `[N]` (lists).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Type {
    /// A base type such as `Tensor` or `int`.
    Base(BaseType),
    /// A custom class, stored as `ns.Class` (printed with [`CUSTOM_CLASS_PREFIX`]).
    CustomClass(String),
    /// `T?`
    Optional(Box<Type>),
    /// `T[]` (size `None`) or `T[N]`.
    List {
        /// Element type.
        elem: Box<Type>,
        /// Fixed size, if written (`int[2]`).
        size: Option<u32>,
    },
}

impl Type {
    /// `Tensor`, `Tensor?` and the like, after stripping one optional.
    pub fn is_base(&self, b: BaseType) -> bool {
        matches!(self, Type::Base(x) if *x == b)
    }

    /// True for `Tensor` and `Tensor?`.
    pub fn is_tensor_like_single(&self) -> bool {
        match self {
            Type::Base(BaseType::Tensor) => true,
            Type::Optional(t) => t.is_base(BaseType::Tensor),
            _ => false,
        }
    }

    /// True for any type that holds tensors: `Tensor`, `Tensor?`, `Tensor[]`, `Tensor?[]`.
    pub fn is_tensor_like(&self) -> bool {
        self.contains(BaseType::Tensor)
    }

    /// The base type (or custom class) under every `?` and list.
    pub fn innermost(&self) -> &Type {
        let mut t = self;
        while let Type::Optional(inner) | Type::List { elem: inner, .. } = t {
            t = inner;
        }
        t
    }

    /// True for `T?`.
    pub fn is_nullable(&self) -> bool {
        matches!(self, Type::Optional(_))
    }

    /// True for lists, also under optionals (`int[]?`).
    pub fn is_list_like(&self) -> bool {
        let mut t = self;
        while let Type::Optional(inner) = t {
            t = inner;
        }
        matches!(t, Type::List { .. })
    }

    /// The type without one level of `?`.
    pub fn strip_optional(&self) -> &Type {
        match self {
            Type::Optional(t) => t,
            t => t,
        }
    }

    /// True if `b` appears anywhere in the type.
    pub fn contains(&self, b: BaseType) -> bool {
        matches!(self.innermost(), Type::Base(x) if *x == b)
    }
}

/// One layer of a type, outside in: what [`Type`] and the runtime table's
/// `Ty` both are, so that one printer serves both ([`fmt_type`]).
pub(crate) enum Layer<'a, T> {
    /// A base type.
    Base(BaseType),
    /// A custom class, `ns.Class`.
    CustomClass(&'a str),
    /// `T?` around `T`.
    Optional(&'a T),
    /// `T[]` (`None`) or `T[N]` around `T`.
    List(&'a T, Option<u32>),
}

/// Prints a type as written (`int[2]?`), iteratively: the base, then each
/// wrapper from the innermost out. `layer` takes one layer off.
pub(crate) fn fmt_type<'a, T>(
    mut t: &'a T,
    layer: impl Fn(&'a T) -> Layer<'a, T>,
    f: &mut fmt::Formatter<'_>,
) -> fmt::Result {
    let mut wrappers = Vec::new();
    loop {
        match layer(t) {
            Layer::Base(b) => {
                f.write_str(b.name())?;
                break;
            }
            Layer::CustomClass(c) => {
                write!(f, "{CUSTOM_CLASS_PREFIX}{c}")?;
                break;
            }
            Layer::Optional(inner) => {
                wrappers.push(None);
                t = inner;
            }
            Layer::List(inner, size) => {
                wrappers.push(Some(size));
                t = inner;
            }
        }
    }
    for w in wrappers.iter().rev() {
        match w {
            None => f.write_str("?")?,
            Some(None) => f.write_str("[]")?,
            Some(Some(n)) => write!(f, "[{n}]")?,
        }
    }
    Ok(())
}

/// Prints the type as written (`int[2]?`), iteratively ([`fmt_type`]).
impl fmt::Display for Type {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fn layer(t: &Type) -> Layer<'_, Type> {
            match t {
                Type::Base(b) => Layer::Base(*b),
                Type::CustomClass(c) => Layer::CustomClass(c),
                Type::Optional(inner) => Layer::Optional(inner),
                Type::List { elem, size } => Layer::List(elem, *size),
            }
        }
        fmt_type(self, layer, f)
    }
}

/// An alias annotation such as `a`, `a!`, `a|b`, `a -> *` (written inside `Tensor(...)`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Annotation {
    /// The alias set before the call (single lower-case letters).
    pub alias_set: Vec<char>,
    /// `!`: the argument is written.
    pub is_write: bool,
    /// The alias set after the call (`*` is the wildcard), empty if not written.
    pub alias_set_after: Vec<char>,
}

impl fmt::Display for Annotation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_set(f, &self.alias_set)?;
        if self.is_write {
            f.write_str("!")?;
        }
        if !self.alias_set_after.is_empty() {
            f.write_str(" -> ")?;
            write_set(f, &self.alias_set_after)?;
        }
        Ok(())
    }
}

fn write_set(f: &mut fmt::Formatter<'_>, set: &[char]) -> fmt::Result {
    for (i, c) in set.iter().enumerate() {
        if i > 0 {
            f.write_str("|")?;
        }
        write!(f, "{c}")?;
    }
    Ok(())
}

/// A default value, interpreted. The source text is kept beside it in [`struct@Default`].
#[derive(Clone, Debug, PartialEq)]
pub enum DefaultValue {
    /// `None`
    None,
    /// `True` / `False`
    Bool(bool),
    /// An integer literal.
    Int(i64),
    /// A floating-point literal (anything numeric that is not an integer literal).
    Float(f64),
    /// A quoted string literal, unescaped.
    Str(String),
    /// A list literal `[1,2]`; elements are numbers or bools.
    List(Vec<DefaultValue>),
    /// A bare enum-like name: `Mean`, `long`, `contiguous_format`, `strided`, …
    Enum(String),
}

impl DefaultValue {
    /// Interprets default text. Returns `None` when the text is not a literal of any
    /// kind (validation reports it). A list literal holds numbers and bools, never
    /// lists, so this reads one level and does not recurse: `[[1]]` is not a
    /// literal, however deep it is.
    pub fn parse(text: &str) -> Option<DefaultValue> {
        if let Some(inner) = text.strip_prefix('[').and_then(|s| s.strip_suffix(']')) {
            if inner.trim().is_empty() {
                return Some(DefaultValue::List(Vec::new()));
            }
            let items: Option<Vec<_>> = inner
                .split(',')
                .map(|s| match DefaultValue::parse_scalar(s.trim())? {
                    v @ (DefaultValue::Int(_) | DefaultValue::Float(_) | DefaultValue::Bool(_)) => {
                        Some(v)
                    }
                    _ => None,
                })
                .collect();
            return items.map(DefaultValue::List);
        }
        DefaultValue::parse_scalar(text)
    }

    /// A default that is not a list literal.
    fn parse_scalar(t: &str) -> Option<DefaultValue> {
        match t {
            "None" => return Some(DefaultValue::None),
            "True" => return Some(DefaultValue::Bool(true)),
            "False" => return Some(DefaultValue::Bool(false)),
            _ => {}
        }
        if let Some(s) = unquote(t) {
            return Some(DefaultValue::Str(s));
        }
        if let Ok(i) = t.parse::<i64>() {
            return Some(DefaultValue::Int(i));
        }
        let numeric = t
            .bytes()
            .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'+' | b'-'))
            && t.bytes().any(|b| b.is_ascii_digit());
        if numeric {
            if let Ok(x) = t.parse::<f64>() {
                return Some(DefaultValue::Float(x));
            }
        }
        let ident = t
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && t.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        ident.then(|| DefaultValue::Enum(t.to_string()))
    }
}

/// Unquotes a single- or double-quoted string literal with backslash escapes.
fn unquote(t: &str) -> Option<String> {
    let q = t.chars().next()?;
    if (q != '\'' && q != '"') || t.len() < 2 || !t.ends_with(q) {
        return None;
    }
    let body = &t[1..t.len() - 1];
    let mut out = String::new();
    let mut chars = body.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            let e = chars.next()?;
            out.push(match e {
                'n' => '\n',
                't' => '\t',
                other => other,
            });
        } else if c == q {
            return None;
        } else {
            out.push(c);
        }
    }
    Some(out)
}

/// A default: its exact source text and its interpretation (if it is a literal).
#[derive(Clone, Debug, PartialEq)]
pub struct Default {
    /// Exactly as written after `=`.
    pub text: String,
    /// The interpreted value; `None` if the text is not a literal of any kind.
    pub value: Option<DefaultValue>,
}

/// One argument: `Tensor(a!) self`, `int dim=-1`, `Tensor(a!)[] out`.
#[derive(Clone, Debug, PartialEq)]
pub struct Argument {
    /// The argument name.
    pub name: String,
    /// Its type (the annotation lives in [`Argument::annotation`]).
    pub ty: Type,
    /// The default, if any.
    pub default: Option<Default>,
    /// The alias annotation, if any (only on `Tensor`, `Tensor?`, `Tensor[]`).
    pub annotation: Option<Annotation>,
}

impl Argument {
    /// True if the argument is written by the operator (`!`).
    pub fn is_write(&self) -> bool {
        self.annotation.as_ref().is_some_and(|a| a.is_write)
    }
}

/// Writes `ty` with `ann` placed inside `Tensor(...)`.
fn write_annotated_type(
    f: &mut fmt::Formatter<'_>,
    ty: &Type,
    ann: Option<&Annotation>,
) -> fmt::Result {
    match ann {
        None => write!(f, "{ty}"),
        Some(a) => {
            let s = ty.to_string();
            let rest = s.strip_prefix("Tensor").unwrap_or(&s);
            write!(f, "Tensor({a}){rest}")
        }
    }
}

impl fmt::Display for Argument {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_annotated_type(f, &self.ty, self.annotation.as_ref())?;
        write!(f, " {}", self.name)?;
        if let Some(d) = &self.default {
            write!(f, "={}", d.text)?;
        }
        Ok(())
    }
}

/// One return: `Tensor`, `Tensor(a!)`, `Tensor values`, `Tensor(a)[]`.
#[derive(Clone, Debug, PartialEq)]
pub struct Return {
    /// The name of a named return.
    pub name: Option<String>,
    /// Its type.
    pub ty: Type,
    /// The alias annotation, if any.
    pub annotation: Option<Annotation>,
}

impl Return {
    /// True if the return aliases a written argument.
    pub fn is_write(&self) -> bool {
        self.annotation.as_ref().is_some_and(|a| a.is_write)
    }
}

impl fmt::Display for Return {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_annotated_type(f, &self.ty, self.annotation.as_ref())?;
        if let Some(n) = &self.name {
            write!(f, " {n}")?;
        }
        Ok(())
    }
}

/// The argument list: arguments in order, with the position of the bare `*`,
/// and whether `...` ends it.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Arguments {
    /// All arguments in declaration order.
    pub all: Vec<Argument>,
    /// Index into `all` of the first keyword-only argument (where `*` was written).
    pub kwarg_only_start: Option<usize>,
    /// `...` ends the list: any number of further positional values, of any
    /// type (the JIT schema's `is_vararg`, as in `aten::format(str self, ...)`).
    pub vararg: bool,
}

impl Arguments {
    /// Positional arguments (before `*`).
    pub fn positional(&self) -> &[Argument] {
        &self.all[..self.kwarg_only_start.unwrap_or(self.all.len())]
    }

    /// Keyword-only arguments (after `*`), including out arguments.
    pub fn kwarg_only(&self) -> &[Argument] {
        &self.all[self.kwarg_only_start.unwrap_or(self.all.len())..]
    }

    /// Index in `all` of the `self` argument: the first positional argument named `self`.
    pub fn self_index(&self) -> Option<usize> {
        self.positional().iter().position(|a| a.name == "self")
    }

    /// The `self` argument, if any.
    pub fn self_arg(&self) -> Option<&Argument> {
        self.self_index().map(|i| &self.all[i])
    }

    /// Positional arguments before `self` (e.g. `condition` of `where.self`); empty
    /// when there is no `self` (then every positional argument counts as post-self).
    pub fn pre_self_positional(&self) -> &[Argument] {
        match self.self_index() {
            Some(i) => &self.all[..i],
            None => &[],
        }
    }

    /// Positional arguments after `self` (all positional ones if there is no `self`).
    pub fn post_self_positional(&self) -> &[Argument] {
        let pos = self.positional();
        match self.self_index() {
            Some(i) => &pos[i + 1..],
            None => pos,
        }
    }

    /// Index in `all` where the out arguments start: the first written keyword-only
    /// argument. Every later argument is an out argument too (validation checks they
    /// are written).
    pub fn out_start(&self) -> Option<usize> {
        let k = self.kwarg_only_start?;
        (k..self.all.len()).find(|&i| self.all[i].is_write())
    }

    /// The out arguments.
    pub fn out(&self) -> &[Argument] {
        match self.out_start() {
            Some(i) => &self.all[i..],
            None => &[],
        }
    }

    /// Keyword-only arguments that are not out arguments.
    pub fn non_out_kwarg_only(&self) -> &[Argument] {
        let k = self.kwarg_only_start.unwrap_or(self.all.len());
        let e = self.out_start().unwrap_or(self.all.len());
        &self.all[k..e]
    }

    /// Everything that is not an out argument.
    pub fn non_out(&self) -> &[Argument] {
        &self.all[..self.out_start().unwrap_or(self.all.len())]
    }

    /// Index in `all` of the TensorOptions group (`dtype, layout, device, pin_memory`,
    /// four consecutive keyword-only non-out arguments), if present.
    pub fn tensor_options_start(&self) -> Option<usize> {
        let k = self.kwarg_only_start?;
        let end = self.out_start().unwrap_or(self.all.len());
        (k..end.saturating_sub(3)).find(|&i| is_tensor_options_at(&self.all[i..i + 4]))
    }

    /// torchgen's `Arguments.signature()`: annotations stripped, out arguments and the
    /// TensorOptions group dropped (keyword-only arguments after the group move up).
    pub fn signature(&self) -> Arguments {
        let strip = |a: &Argument| Argument {
            annotation: None,
            ..a.clone()
        };
        let k = self.kwarg_only_start.unwrap_or(self.all.len());
        let to = self.tensor_options_start();
        let mut all: Vec<Argument> = self.positional().iter().map(strip).collect();
        let kw: Vec<Argument> = self
            .non_out_kwarg_only()
            .iter()
            .enumerate()
            .filter(|(i, _)| to.is_none_or(|t| k + i < t || k + i >= t + 4))
            .map(|(_, a)| strip(a))
            .collect();
        let kwarg_only_start = (!kw.is_empty()).then_some(all.len());
        all.extend(kw);
        Arguments {
            all,
            kwarg_only_start,
            vararg: self.vararg,
        }
    }

    /// The argument named `name`.
    pub fn get(&self, name: &str) -> Option<&Argument> {
        self.all.iter().find(|a| a.name == name)
    }
}

/// True if `w` is exactly `dtype, layout, device, pin_memory` with TensorOptions types.
pub fn is_tensor_options_at(w: &[Argument]) -> bool {
    const GROUP: [(&str, BaseType); 4] = [
        ("dtype", BaseType::ScalarType),
        ("layout", BaseType::Layout),
        ("device", BaseType::Device),
        ("pin_memory", BaseType::Bool),
    ];
    w.len() == 4
        && w.iter()
            .zip(GROUP)
            .all(|(a, (n, b))| a.name == n && a.ty.strip_optional().is_base(b))
}

impl fmt::Display for Arguments {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        for (i, a) in self.all.iter().enumerate() {
            if self.kwarg_only_start == Some(i) {
                f.write_str(if first { "*" } else { ", *" })?;
                first = false;
            }
            if !first {
                f.write_str(", ")?;
            }
            write!(f, "{a}")?;
            first = false;
        }
        if self.vararg {
            f.write_str(if first { "..." } else { ", ..." })?;
        }
        Ok(())
    }
}

/// The base of an operator name: `add`, `add_` (inplace), `__iand__` (dunder, inplace),
/// `foo_functional`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BaseName {
    /// The name without decorations (`add` for `add_`, `and` for `__iand__`).
    pub base: String,
    /// Trailing `_`, or the `i` of an augmented-assignment dunder.
    pub inplace: bool,
    /// Written as `__base__`.
    pub dunder: bool,
    /// Written as `base_functional`: the functional twin of a mutable op.
    pub functional_overload: bool,
}

/// Dunder names whose `__i<name>__` form is an inplace operator.
pub const AUGMENTED_ASSIGNMENT_NAMES: [&str; 11] = [
    "add", "sub", "mul", "div", "mod", "pow", "lshift", "rshift", "and", "xor", "or",
];

impl fmt::Display for BaseName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.dunder {
            let i = if self.inplace { "i" } else { "" };
            write!(f, "__{i}{}__", self.base)
        } else {
            let i = if self.inplace { "_" } else { "" };
            let func = if self.functional_overload {
                "_functional"
            } else {
                ""
            };
            write!(f, "{}{func}{i}", self.base)
        }
    }
}

/// An operator name: `[ns::]base[.overload]`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct OperatorName {
    /// The namespace if written (`aten` is implied otherwise).
    pub namespace: Option<String>,
    /// The base name.
    pub name: BaseName,
    /// The overload name; empty for the default overload.
    pub overload: String,
}

impl OperatorName {
    /// `name.overload` (or just `name`) without the namespace: the key operators are
    /// known by within one file.
    pub fn unqualified(&self) -> String {
        if self.overload.is_empty() {
            self.name.to_string()
        } else {
            format!("{}.{}", self.name, self.overload)
        }
    }

    /// The namespace, `aten` when none is written.
    pub fn namespace(&self) -> &str {
        self.namespace.as_deref().unwrap_or("aten")
    }
}

impl fmt::Display for OperatorName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(ns) = &self.namespace {
            write!(f, "{ns}::")?;
        }
        f.write_str(&self.unqualified())
    }
}

/// A complete function schema.
#[derive(Clone, Debug, PartialEq)]
pub struct FunctionSchema {
    /// Operator name.
    pub name: OperatorName,
    /// Arguments.
    pub arguments: Arguments,
    /// Returns (empty for `()`).
    pub returns: Vec<Return>,
    /// `...` ends the returns: any number of further values (the JIT
    /// schema's `is_varret`; `-> ...` alone, or `-> (Tensor, ...)`).
    pub varret: bool,
}

impl fmt::Display for FunctionSchema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}({}) -> ", self.name, self.arguments)?;
        match (self.returns.as_slice(), self.varret) {
            ([], true) => f.write_str("..."),
            ([one], false) => write!(f, "{one}"),
            (rs, varret) => {
                f.write_str("(")?;
                for (i, r) in rs.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{r}")?;
                }
                if varret {
                    f.write_str(", ...")?;
                }
                f.write_str(")")
            }
        }
    }
}

/// What kind of operator a schema describes (torchgen's `SchemaKind`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SchemaKind {
    /// Returns new tensors; writes nothing (or only `self` without an inplace name).
    Functional,
    /// `foo_`: writes `self` and returns it.
    Inplace,
    /// Writes keyword-only `out` arguments and returns them.
    Out,
    /// Writes some positional argument other than through an inplace name.
    Mutable,
    /// An out= op with a `_scratch_*` out argument.
    Scratch,
}

impl SchemaKind {
    /// Lower-case name, as torchgen prints it.
    pub fn name(self) -> &'static str {
        match self {
            SchemaKind::Functional => "functional",
            SchemaKind::Inplace => "inplace",
            SchemaKind::Out => "out",
            SchemaKind::Mutable => "mutable",
            SchemaKind::Scratch => "scratch",
        }
    }
}

impl fmt::Display for SchemaKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FunctionSchema {
    /// The schema kind (checked in torchgen's order).
    pub fn kind(&self) -> SchemaKind {
        let out = self.arguments.out();
        if self.name.name.inplace {
            SchemaKind::Inplace
        } else if out.iter().any(|a| a.name.starts_with("_scratch_")) {
            SchemaKind::Scratch
        } else if !out.is_empty() {
            SchemaKind::Out
        } else if self
            .arguments
            .post_self_positional()
            .iter()
            .any(Argument::is_write)
        {
            SchemaKind::Mutable
        } else {
            SchemaKind::Functional
        }
    }

    /// True if any argument is written.
    pub fn is_mutable(&self) -> bool {
        self.arguments.all.iter().any(Argument::is_write)
    }

    /// True if the schema has the TensorOptions group.
    pub fn has_tensor_options(&self) -> bool {
        self.arguments.tensor_options_start().is_some()
    }

    /// The grouping key: the schema with overload name, inplace flag, out arguments,
    /// TensorOptions, annotations and return names stripped, and every written input
    /// that is not returned appended as an extra return. Schemas with equal signatures
    /// are the functional / inplace / out / mutable variants of one operator.
    pub fn signature(&self) -> FunctionSchema {
        let mut arguments = self.arguments.signature();
        // torchgen gives `bernoulli.p`'s `p` a default when grouping, so that it groups
        // with `bernoulli_.float`, whose `p` defaults to 0.5.
        if self.name.name.base == "bernoulli" && self.name.overload == "p" {
            if let Some(p) = arguments.all.iter_mut().find(|a| a.name == "p") {
                p.default = Some(Default {
                    text: "0.5".into(),
                    value: Some(DefaultValue::Float(0.5)),
                });
            }
        }
        let args = &self.arguments;
        let mut returns: Vec<Return> = self
            .returns
            .iter()
            .map(|r| Return {
                name: None,
                ty: r.ty.clone(),
                annotation: None,
            })
            .collect();
        // Written inputs that are not returned become extra returns: self, out, then
        // post-self positional.
        let returned: Vec<Option<&Annotation>> =
            self.returns.iter().map(|r| r.annotation.as_ref()).collect();
        let mut extra = Vec::new();
        if let Some(s) = args.self_arg() {
            extra.push(s);
        }
        extra.extend(args.out());
        extra.extend(args.post_self_positional());
        for a in extra {
            if let Some(ann) = &a.annotation {
                if ann.is_write && !returned.contains(&Some(ann)) {
                    returns.push(Return {
                        name: None,
                        ty: a.ty.clone(),
                        annotation: None,
                    });
                }
            }
        }
        FunctionSchema {
            name: OperatorName {
                namespace: None,
                name: BaseName {
                    base: self.name.name.base.clone(),
                    inplace: false,
                    dunder: self.name.name.dunder,
                    functional_overload: false,
                },
                overload: String::new(),
            },
            arguments,
            returns,
            varret: self.varret,
        }
    }
}

/// Dispatch keys a `dispatch:` table may name (torchgen's `dispatch_keys`).
pub const SUPPORTED_DISPATCH_KEYS: &[&str] = &[
    "CPU",
    "CUDA",
    "MPS",
    "XPU",
    "MTIA",
    "Meta",
    "HPU",
    "MkldnnCPU",
    "ZeroTensor",
    "SparseCPU",
    "SparseCUDA",
    "SparseMPS",
    "SparseXPU",
    "SparseMeta",
    "SparseCsrCPU",
    "SparseCsrCUDA",
    "SparseCsrMPS",
    "SparseCsrXPU",
    "SparseCsrMeta",
    "QuantizedCPU",
    "QuantizedCUDA",
    "QuantizedMeta",
    "NestedTensorCPU",
    "NestedTensorCUDA",
    "NestedTensorXPU",
    "NestedTensorHPU",
    "NestedTensorMeta",
    "CompositeImplicitAutograd",
    "CompositeImplicitAutogradNestedTensor",
    "CompositeExplicitAutograd",
    "CompositeExplicitAutogradNonFunctional",
];

/// Dispatch keys that exist in PyTorch's dispatcher but cannot be named in a
/// `dispatch:` table (kernels for them are registered by hand).
pub const UNSUPPORTED_DISPATCH_KEYS: &[&str] = &[
    "Undefined",
    "BackendSelect",
    "Python",
    "PythonTLSSnapshot",
    "PythonDispatcher",
    "PreDispatch",
    "Functionalize",
    "ADInplaceOrView",
    "Autograd",
    "AutogradOther",
    "AutogradCPU",
    "AutogradCUDA",
    "AutogradMeta",
    "AutogradNestedTensor",
    "AutocastCPU",
    "AutocastCUDA",
    "Tracer",
    "FuncTorchBatched",
    "FuncTorchDynamicLayerFrontMode",
    "FuncTorchDynamicLayerBackMode",
    "Batched",
    "VmapMode",
    "Conjugate",
    "Negative",
    "Named",
    "Lazy",
    "IPU",
    "VE",
    "PrivateUse1",
    "Dense",
    "Sparse",
    "Quantized",
    "NestedTensor",
];

/// The table of the dispatch keys the runtime has, the one place a key is
/// added: it calls `$callback!` with
/// `backend { … } runtime { … } alias { … }`, each group a list of documented
/// key names followed by commas. Backend keys, then the other runtime keys, are
/// in priority order (lowest first); alias keys name groups of runtime keys and
/// only appear in registrations.
///
/// [`RUNTIME_DISPATCH_KEYS`] (read by `#[kernel]` and the generator) is made from
/// it, and so is the runtime's `DispatchKey` enum (`opforge::dispatch`).
///
/// ```
/// macro_rules! count {
///     ($($group:ident { $($(#[$doc:meta])* $key:ident,)* })*) => { 0 $($(+ { stringify!($key); 1 })*)* };
/// }
/// assert_eq!(opforge_schema::runtime_dispatch_keys!(count), opforge_schema::model::RUNTIME_DISPATCH_KEYS.len());
/// ```
#[macro_export]
macro_rules! runtime_dispatch_keys {
    ($callback:ident) => {
        $callback! {
            backend {
                /// The CPU backend.
                CPU,
                /// The meta backend (shapes and dtypes only).
                Meta,
            }
            runtime {
                /// Picks a backend for calls without tensor arguments (factories).
                BackendSelect,
                /// Fake tensors: shapes, dtypes, strides and a device, no data
                /// (PyTorch's `FakeTensorMode`, a dispatch mode on its `Python`
                /// key; here a key of its own, below `Python`, so dispatch modes
                /// see calls on fake tensors as they see calls on real ones).
                Fake,
                /// Dispatch-level hooks (`__torch_dispatch__` subclasses and modes).
                Python,
                /// Functionalization: in-place operators and views rewritten to
                /// functional ones (`opforge::functionalize`), above `Python`
                /// so that dispatch modes see the functional calls.
                Functionalize,
                /// Bookkeeping for inplace and view operators.
                ADInplaceOrView,
                /// Autograd.
                Autograd,
            }
            alias {
                /// Alias: one kernel for every backend, not for autograd.
                CompositeExplicitAutograd,
                /// Alias: like CompositeExplicitAutograd, for kernels that mutate/alias internally.
                CompositeExplicitAutogradNonFunctional,
                /// Alias: a decomposition into other operators, for every backend and autograd.
                CompositeImplicitAutograd,
            }
        }
    };
}

/// The names of a [`runtime_dispatch_keys!`] table, in its order.
macro_rules! key_names {
    ($($group:ident { $($(#[$doc:meta])* $key:ident,)* })*) => {
        &[$($(stringify!($key),)*)*]
    };
}

/// The dispatch keys the runtime has kernel slots (or alias resolution) for:
/// what `#[kernel]` accepts and which `dispatch:` rows get registered. Runtime
/// keys (lowest priority first), then alias keys; made from
/// [`runtime_dispatch_keys!`], as the runtime's `DispatchKey` is.
pub const RUNTIME_DISPATCH_KEYS: &[&str] = crate::runtime_dispatch_keys!(key_names);

/// The composite alias keys; at most one of them per entry (except
/// `CompositeImplicitAutogradNestedTensor`, which may accompany CIA).
pub const COMPOSITE_KEYS: [&str; 3] = [
    "CompositeImplicitAutograd",
    "CompositeExplicitAutograd",
    "CompositeExplicitAutogradNonFunctional",
];

/// One line of a `dispatch:` table: one or more keys sharing a kernel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DispatchEntry {
    /// The keys, as written (`CPU, CUDA` gives two).
    pub keys: Vec<String>,
    /// The kernel name (a path such as `add_out` or `cpu::add_Tensor`).
    pub kernel: String,
    /// The line of this table row.
    pub line: usize,
}

/// `variants:` of an entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Variants {
    /// Exposed as a free function (`torch.add`).
    pub function: bool,
    /// Exposed as a Tensor method (`t.add`).
    pub method: bool,
}

impl std::default::Default for Variants {
    fn default() -> Self {
        Variants {
            function: true,
            method: false,
        }
    }
}

/// One entry of `native_functions.yaml`, every key typed.
#[derive(Clone, Debug, PartialEq)]
pub struct NativeFunction {
    /// The schema (`func:`).
    pub func: FunctionSchema,
    /// The line where the entry starts.
    pub line: usize,
    /// `variants:`.
    pub variants: Variants,
    /// `dispatch:` rows, in order (empty if none was written).
    pub dispatch: Vec<DispatchEntry>,
    /// Whether a `dispatch:` key was written at all.
    pub has_dispatch: bool,
    /// `structured:`.
    pub structured: bool,
    /// `structured_delegate:` (an operator name in the same file).
    pub structured_delegate: Option<String>,
    /// `structured_inherits:`.
    pub structured_inherits: Option<String>,
    /// `precomputed:` lines.
    pub precomputed: Vec<String>,
    /// `device_check:` (`NoCheck` or `ExactSame`).
    pub device_check: Option<String>,
    /// `device_guard:` (default true).
    pub device_guard: bool,
    /// `python_module:` (`nn`, `linalg`, `special`, `fft`, `sparse`, `nested`).
    pub python_module: Option<String>,
    /// `category_override:` (`factory`, `dummy`, `new`, `like`).
    pub category_override: Option<String>,
    /// `tags:` as written.
    pub tags: Vec<String>,
    /// `autogen:` operator names.
    pub autogen: Vec<String>,
    /// `cpp_no_default_args:`.
    pub cpp_no_default_args: Vec<String>,
    /// `manual_cpp_binding:`.
    pub manual_cpp_binding: bool,
    /// `manual_kernel_registration:`.
    pub manual_kernel_registration: bool,
    /// `use_const_ref_for_mutable_tensors:`.
    pub use_const_ref_for_mutable_tensors: bool,
    /// `ufunc_inner_loop:` as (key, value) pairs; a plain string is key `Generic`.
    pub ufunc_inner_loop: Vec<(String, String)>,
}

impl NativeFunction {
    /// `name.overload` (or `name`), the key the entry is known by.
    pub fn name(&self) -> String {
        self.func.name.unqualified()
    }

    /// The kernel named for `key`, if the dispatch table has one.
    pub fn kernel_for(&self, key: &str) -> Option<&str> {
        self.dispatch
            .iter()
            .find(|d| d.keys.iter().any(|k| k == key))
            .map(|d| d.kernel.as_str())
    }

    /// True if the operator is CompositeImplicitAutograd: named explicitly, or
    /// implied by having neither a dispatch table nor a structured delegate.
    pub fn is_composite_implicit(&self) -> bool {
        self.kernel_for("CompositeImplicitAutograd").is_some()
            || (!self.has_dispatch && self.structured_delegate.is_none() && !self.structured)
    }

    /// True if the entry has the `generated` tag (only autogen creates those).
    pub fn has_tag(&self, tag: &str) -> bool {
        self.tags.iter().any(|t| t == tag)
    }
}
