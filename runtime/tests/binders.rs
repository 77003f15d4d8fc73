//! The three binders' errors, each kind and each order of checks, word for
//! word: `bind::bind` (Python's own binding), `packet::resolve`
//! (`createStackForSchema`, `FunctionSchema::findErrorInKwargs`) and
//! `PythonArgParser::parse` (`FunctionSignature::parse`), all placing through
//! `opforge::place`.

use opforge::argparse::PythonArgParser;
use opforge::bind::bind;
use opforge::packet::{resolve, Overload};
use opforge::{DType, Device, OpId, Tensor, Value};

fn t() -> Value {
    Value::Tensor(Tensor::zeros(&[2], DType::Float32, Device::Meta))
}

fn s(x: &str) -> Value {
    Value::Str(x.into())
}

fn kw(kwargs: &[(&str, Value)]) -> Vec<(String, Value)> {
    kwargs
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect()
}

fn err<T>(r: Result<T, opforge::Error>) -> String {
    match r {
        Ok(_) => "ok".into(),
        Err(e) => e.to_string(),
    }
}

/// `bind::bind` on `add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1)`.
fn boxed(args: Vec<Value>, kwargs: &[(&str, Value)]) -> String {
    let schema = OpId::from_name("add.Tensor").unwrap().schema();
    err(bind(schema, args, kw(kwargs)))
}

/// `packet::resolve` on one overload.
fn jit(text: &'static str, args: &[Value], kwargs: &[(&str, Value)]) -> String {
    let (op, schema) = match OpId::from_name("add.Tensor") {
        Some(id) if text.starts_with("aten::add.Tensor") => ("aten::add", Some(id.schema())),
        _ => ("myns::f", None),
    };
    let one = [Overload {
        name: "",
        schema_text: text,
        op: schema,
        dispatcher: schema.is_some(),
    }];
    err(resolve(op, &one, args, &kw(kwargs)))
}

const ADD: &str = "aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor";
const F: &str = "myns::f(Tensor a, int b=0, int c=0, *, int d=0) -> Tensor";

/// `PythonArgParser::parse` with one signature.
fn parser(sig: &str, args: &[Value], kwargs: &[(&str, Value)]) -> String {
    let p = PythonArgParser::new(&[sig]).unwrap();
    err(p.parse(args, &kw(kwargs)))
}

const ADD_SIG: &str = "add(Tensor input, Tensor other, *, Scalar alpha=1, Tensor out=None)";

fn cases() -> Vec<(&'static str, String)> {
    let i = Value::Int;
    vec![
        ("bind too many", boxed(vec![t(), t(), i(1)], &[])),
        ("bind unknown", boxed(vec![t(), t()], &[("x", i(1))])),
        (
            "bind positional and keyword",
            boxed(vec![t(), t()], &[("other", t())]),
        ),
        (
            "bind keyword twice",
            boxed(vec![t()], &[("other", t()), ("other", t())]),
        ),
        ("bind missing", boxed(vec![t()], &[])),
        (
            "bind unknown before conversion",
            boxed(vec![s("a")], &[("x", i(1))]),
        ),
        ("bind conversion before missing", boxed(vec![s("a")], &[])),
        (
            "bind missing before a later conversion",
            boxed(vec![t()], &[("alpha", s("a"))]),
        ),
        (
            "bind ok",
            boxed(vec![t()], &[("alpha", i(2)), ("other", t())]),
        ),
        (
            "jit too many",
            jit(ADD, &[t(), t()], &[("alpha", i(1)), ("x", i(2))]),
        ),
        ("jit keyword-only", jit(ADD, &[t(), t(), i(1)], &[])),
        ("jit missing", jit(ADD, &[t()], &[])),
        ("jit unknown", jit(ADD, &[t(), t()], &[("x", i(1))])),
        ("jit both", jit(ADD, &[t(), t()], &[("other", t())])),
        (
            "jit conversion before keyword-only",
            jit(ADD, &[s("a"), t(), i(1)], &[]),
        ),
        (
            "jit conversion before unknown",
            jit(ADD, &[s("a"), t()], &[("x", i(1))]),
        ),
        (
            "jit unknown before both",
            jit(F, &[t(), i(1)], &[("b", i(2)), ("zz", i(3))]),
        ),
        (
            "jit both: first parameter",
            jit(F, &[t(), i(1)], &[("c", i(1)), ("b", i(2))]),
        ),
        ("jit missing before unknown", jit(F, &[], &[("zz", i(3))])),
        ("jit ok", jit(F, &[t()], &[("d", i(1)), ("b", i(2))])),
        ("parser too many", parser(ADD_SIG, &[t(), t(), t()], &[])),
        (
            "parser keyword-only",
            parser(
                "view(SymIntArrayRef size, *, int64_t x=0)",
                &[Value::List(vec![i(2)].into()), i(3)],
                &[],
            ),
        ),
        (
            "parser left over",
            parser("f(IntArrayRef[2] size)", &[i(2), i(3)], &[]),
        ),
        (
            "parser varargs",
            parser("view(SymIntArrayRef size)", &[i(2), i(3)], &[]),
        ),
        ("parser missing", parser(ADD_SIG, &[t()], &[])),
        (
            "parser unknown",
            parser(ADD_SIG, &[t(), t()], &[("bogus", i(1))]),
        ),
        (
            "parser duplicate",
            parser(ADD_SIG, &[t(), t()], &[("input", t())]),
        ),
        (
            "parser keyword twice",
            parser(ADD_SIG, &[t(), t()], &[("alpha", i(1)), ("alpha", i(2))]),
        ),
        (
            "parser check before missing",
            parser(ADD_SIG, &[s("a")], &[]),
        ),
        (
            "parser missing before unknown",
            parser(ADD_SIG, &[], &[("bogus", i(1))]),
        ),
        (
            "parser alias unknown to the scan",
            parser(
                "sum(Tensor input, int64_t dim, *, bool keepdim=False)",
                &[t()],
                &[("dim", i(0)), ("axis", i(1))],
            ),
        ),
        (
            "parser alias",
            parser(
                "sum(Tensor input, int64_t dim, *, bool keepdim=False)",
                &[t()],
                &[("axis", i(0))],
            ),
        ),
    ]
}

/// What each case gives (the same before the binders shared one placement).
const EXPECTED: &[(&str, &str)] = &[
    ("bind too many",
     "add.Tensor() expected at most 2 positional argument(s) but received 3"),
    ("bind unknown",
     "add.Tensor() got an unexpected keyword argument 'x'"),
    ("bind positional and keyword",
     "add.Tensor() got multiple values for argument 'other'"),
    ("bind keyword twice",
     "add.Tensor() got multiple values for argument 'other'"),
    ("bind missing",
     "add.Tensor() is missing value for argument 'other'. Declaration: add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor"),
    ("bind unknown before conversion",
     "add.Tensor() got an unexpected keyword argument 'x'"),
    ("bind conversion before missing",
     "add.Tensor() Expected a value of type 'Tensor' for argument 'self' but instead found type 'str'."),
    ("bind missing before a later conversion",
     "add.Tensor() is missing value for argument 'other'. Declaration: add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor"),
    ("bind ok",
     "ok"),
    ("jit too many",
     "aten::add() expected at most 3 argument(s) but received 4 argument(s). Declaration: aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor"),
    ("jit keyword-only",
     "aten::add() takes 2 positional argument(s) but 3 was/were given.  Declaration: aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor"),
    ("jit missing",
     "aten::add() is missing value for argument 'other'. Declaration: aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor"),
    ("jit unknown",
     "Unknown keyword argument 'x' for operator 'aten::add'. Schema: aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor"),
    ("jit both",
     "Argument 'other' specified both as positional and keyword argument. Schema: aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor"),
    ("jit conversion before keyword-only",
     "aten::add() Expected a value of type 'Tensor' for argument 'self' but instead found type 'str'.\nPosition: 0\nValue: 'a'\nDeclaration: aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor\nCast error details: Unable to cast a to Tensor"),
    ("jit conversion before unknown",
     "aten::add() Expected a value of type 'Tensor' for argument 'self' but instead found type 'str'.\nPosition: 0\nValue: 'a'\nDeclaration: aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor\nCast error details: Unable to cast a to Tensor"),
    ("jit unknown before both",
     "Unknown keyword argument 'zz' for operator 'myns::f'. Schema: myns::f(Tensor a, int b=0, int c=0, *, int d=0) -> Tensor"),
    ("jit both: first parameter",
     "Argument 'b' specified both as positional and keyword argument. Schema: myns::f(Tensor a, int b=0, int c=0, *, int d=0) -> Tensor"),
    ("jit missing before unknown",
     "myns::f() is missing value for argument 'a'. Declaration: myns::f(Tensor a, int b=0, int c=0, *, int d=0) -> Tensor"),
    ("jit ok",
     "ok"),
    ("parser too many",
     "add() takes 2 positional arguments but 3 were given"),
    ("parser keyword-only",
     "view() takes 1 positional argument but 2 were given"),
    ("parser left over",
     "f() takes 1 positional argument but 2 were given"),
    ("parser varargs",
     "ok"),
    ("parser missing",
     "add() missing 1 required positional arguments: \"other\""),
    ("parser unknown",
     "add() got an unexpected keyword argument 'bogus'"),
    ("parser duplicate",
     "add() got multiple values for argument 'input'"),
    ("parser keyword twice",
     "invalid keyword arguments"),
    ("parser check before missing",
     "add(): argument 'input' (position 1) must be Tensor, not str"),
    ("parser missing before unknown",
     "add() missing 2 required positional argument: \"input\", \"other\""),
    ("parser alias unknown to the scan",
     "sum() got an unexpected keyword argument 'axis'"),
    ("parser alias",
     "ok"),
];

#[test]
fn every_error_and_order_word_for_word() {
    let cases = cases();
    assert_eq!(cases.len(), EXPECTED.len());
    for ((name, got), (want_name, want)) in cases.iter().zip(EXPECTED) {
        assert_eq!(name, want_name);
        assert_eq!(got, want, "{name}");
    }
}
