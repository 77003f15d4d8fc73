//! Placing a call's values into a signature's slots: the one rule of every
//! binder in the runtime (a boxed call bound to its schema, `bind`;
//! TorchScript's `createStackForSchema`, `packet`; the API-level
//! `PythonArgParser`, `argparse`, and the fast path's routing, which is this
//! placement recorded).
//!
//! Positional value `i` goes to slot `i` (a keyword-only slot refuses it),
//! each later slot takes the keyword argument of its name (or of one of its
//! aliases), a slot given nothing takes its default, and what is left over is
//! an error. [`place`] walks the slots once, in order; what a value becomes in
//! its slot, and how each error is worded, is the caller's [`Policy`]. The
//! three PyTorch paths the runtime follows check the same mistakes in
//! different orders, so the policy also chooses the order ([`Rules`]):
//!
//! - Python's own call binding (CPython's `Python/ceval.c`, `bind`'s
//!   messages): too many positionals first, then every keyword in call order
//!   (unknown, or its slot already given), then the slots in order;
//! - `createStackForSchema` (`torch/csrc/jit/python/pybind_utils.h`): too many
//!   values in all first, then the slots in order, then
//!   `FunctionSchema::findErrorInKwargs`
//!   (`aten/src/ATen/core/function_schema.cpp`): the first unknown keyword in
//!   call order, else the first parameter named by a keyword;
//! - `FunctionSignature::parse` (`torch/csrc/utils/python_arg_parser.cpp`):
//!   too many positionals first (unless a leading int list takes them all,
//!   PyTorch's varargs), then the slots in order, then leftover positionals,
//!   then `extra_kwargs`: each keyword in call order, unknown or given
//!   positionally.
//!
//! Nothing here knows a value type: the policy holds the call's values and
//! reads them by [`Source`]; the placement reads only the call's counts and
//! keyword names.

/// A parameter as the placement sees it.
pub trait Param {
    /// Its name (what a keyword argument must spell).
    fn name(&self) -> &str;
    /// Whether only a keyword argument can give it a value.
    fn keyword_only(&self) -> bool;
    /// Whether it has a default (then an absent value asks
    /// [`Policy::default`]; otherwise it is [`Misplaced::Missing`]).
    fn has_default(&self) -> bool;
    /// Other names a keyword argument may use, tried after [`Param::name`] in
    /// order (PyTorch's numpy aliases: `axis` for `dim`).
    fn aliases(&self) -> &[&'static str] {
        &[]
    }
}

/// Where a slot's value comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// The positional value at this index.
    Positional(usize),
    /// The keyword argument at this index (in call order).
    Keyword(usize),
}

/// How many positional values a slot took ([`Policy::given`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Taken {
    /// Its own.
    One,
    /// Every positional value from its own on (PyTorch's varargs int list:
    /// `x.view(2, 3)`). Ignored for a keyword argument.
    Rest,
}

/// The count checked before anything else.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Limit {
    /// At most this many positional values.
    Positional(usize),
    /// At most one value (positional or keyword) per parameter.
    All,
    /// No count first (the slots and the leftovers decide).
    None,
}

/// When keyword arguments are checked against the parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Keywords {
    /// Before any slot, each keyword in call order: [`Misplaced::Unknown`],
    /// or [`Misplaced::Duplicate`] when its slot is given positionally or by
    /// an earlier keyword (Python's own binding).
    First,
    /// After the slots, when a keyword is left unused: each keyword in call
    /// order, [`Misplaced::Unknown`] or, when given positionally,
    /// [`Misplaced::Duplicate`]; else [`Misplaced::Unused`] (PyTorch's
    /// `extra_kwargs`).
    LastInCallOrder,
    /// After the slots, when a keyword is left unused: the first unknown
    /// keyword in call order, else the first parameter in declaration order
    /// that a keyword names, as a [`Misplaced::Duplicate`]
    /// (`FunctionSchema::findErrorInKwargs`).
    LastUnknownThenParams,
}

/// A policy's order of checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rules {
    /// The count checked first.
    pub limit: Limit,
    /// When keywords are checked.
    pub keywords: Keywords,
}

/// A placement error, for the policy to word. Keyword scans match names only,
/// never aliases, as PyTorch's do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Misplaced {
    /// More values than [`Rules::limit`] allows: `given` (positional, or in
    /// all) against `limit`.
    TooMany {
        /// Values given (positional for [`Limit::Positional`], else all).
        given: usize,
        /// The limit.
        limit: usize,
    },
    /// A positional value reached keyword-only slot `slot`; `given`
    /// positional values in all.
    KeywordOnly {
        /// The keyword-only slot (also the number of positionals it could take).
        slot: usize,
        /// Positional values given.
        given: usize,
    },
    /// Positional values left after the last slot: `placed` of `given`.
    LeftOver {
        /// Positional values given.
        given: usize,
        /// Positional values placed.
        placed: usize,
    },
    /// Keyword argument `keyword` names no parameter.
    Unknown {
        /// Its index among the keyword arguments.
        keyword: usize,
    },
    /// Slot `slot` is given twice; `keyword` is a keyword argument naming it.
    Duplicate {
        /// The slot.
        slot: usize,
        /// A keyword argument naming it.
        keyword: usize,
    },
    /// Slot `slot` has no value and no default.
    Missing {
        /// The slot.
        slot: usize,
    },
    /// A keyword argument is left unused, and the scan of
    /// [`Keywords::LastInCallOrder`] found no culprit (a keyword given twice),
    /// or the policy is [`Policy::quiet`].
    Unused,
}

/// A call as a policy holds it: its positional values, and its keyword
/// arguments as `(name, value)` in call order.
pub type Held<'a, V, K> = (&'a [V], &'a [(K, V)]);

/// What a binder decides: the values, their conversion, the messages and the
/// order of checks. The placement calls [`Policy::given`] and
/// [`Policy::default`] once per slot, in slot order, so a policy collecting
/// values pushes them; the first error returned ends the placement.
pub trait Policy {
    /// What a failed placement returns.
    type Error;
    /// The order of checks.
    fn rules(&self) -> Rules;
    /// Errors carry no detail (a failed match tries another signature): the
    /// scans that only choose a message are skipped ([`Misplaced::Unused`]).
    fn quiet(&self) -> bool {
        false
    }
    /// A value of the call.
    type Value;
    /// A keyword argument's name.
    type Name: AsRef<str>;
    /// The call: its positional values, and its keyword arguments as
    /// `(name, value)` in call order (the placement reads only their count
    /// and names).
    fn call(&self) -> Held<'_, Self::Value, Self::Name>;
    /// The number of positional values.
    #[inline(always)]
    fn positional(&self) -> usize {
        self.call().0.len()
    }
    /// The number of keyword arguments.
    #[inline(always)]
    fn keywords(&self) -> usize {
        self.call().1.len()
    }
    /// The name of keyword argument `j`.
    #[inline(always)]
    fn keyword(&self, j: usize) -> &str {
        self.call().1[j].0.as_ref()
    }
    /// Slot `slot` takes the value at `from`: convert or check it (an error
    /// ends the placement).
    fn given(&mut self, slot: usize, from: Source) -> Result<Taken, Self::Error>;
    /// Slot `slot`, given nothing and [`Param::has_default`], takes its
    /// default; `false` when there is none to take after all (then the slot
    /// is [`Misplaced::Missing`]).
    fn default(&mut self, slot: usize) -> bool;
    /// Words a placement error.
    fn misplaced(&mut self, m: Misplaced) -> Self::Error;
}

/// The keyword argument naming `name`, first in call order.
#[inline]
fn find<C: Policy + ?Sized>(call: &C, n: usize, name: &str) -> Option<usize> {
    (0..n).find(|&j| call.keyword(j) == name)
}

/// The parameter named `name`.
#[inline]
fn param_named<P: Param>(params: &[P], name: &str) -> Option<usize> {
    params.iter().position(|p| p.name() == name)
}

/// Places the call `call` holds into `params`' slots (module docs): each slot
/// in order is [`Policy::given`] its value or [`Policy::default`]ed, and the
/// first error in the policy's order ([`Policy::rules`]) is returned, worded
/// by [`Policy::misplaced`] (or the hook's own).
#[inline]
pub fn place<P: Param, C: Policy + ?Sized>(params: &[P], call: &mut C) -> Result<(), C::Error> {
    let nargs = call.positional();
    let nkw = call.keywords();
    let rules = call.rules();
    match rules.limit {
        Limit::Positional(limit) if nargs > limit => {
            return Err(call.misplaced(Misplaced::TooMany {
                given: nargs,
                limit,
            }))
        }
        Limit::All if nargs + nkw > params.len() => {
            return Err(call.misplaced(Misplaced::TooMany {
                given: nargs + nkw,
                limit: params.len(),
            }))
        }
        _ => {}
    }
    if rules.keywords == Keywords::First {
        for j in 0..nkw {
            let name = call.keyword(j);
            let m = match param_named(params, name) {
                None => Misplaced::Unknown { keyword: j },
                Some(slot) if slot < nargs || find(call, j, name).is_some() => {
                    Misplaced::Duplicate { slot, keyword: j }
                }
                Some(_) => continue,
            };
            return Err(call.misplaced(m));
        }
    }
    // The positional slots: a prefix (a slot taking the rest ends it).
    let mut arg_pos = 0;
    let mut next = 0;
    while arg_pos < nargs {
        let Some(p) = params.get(next) else { break };
        if p.keyword_only() {
            return Err(call.misplaced(Misplaced::KeywordOnly {
                slot: next,
                given: nargs,
            }));
        }
        match call.given(next, Source::Positional(arg_pos))? {
            Taken::One => arg_pos += 1,
            Taken::Rest => arg_pos = nargs,
        }
        next += 1;
    }
    // The others: a keyword, a default, or missing.
    let mut used = 0;
    for (slot, p) in params.iter().enumerate().skip(next) {
        let mut from = None;
        if nkw > 0 {
            from = find(call, nkw, p.name());
            if from.is_none() {
                from = p.aliases().iter().find_map(|a| find(call, nkw, a));
            }
        }
        match from {
            Some(j) => {
                used += 1;
                call.given(slot, Source::Keyword(j))?;
            }
            None if p.has_default() && call.default(slot) => {}
            None => return Err(call.misplaced(Misplaced::Missing { slot })),
        }
    }
    if arg_pos < nargs {
        return Err(call.misplaced(Misplaced::LeftOver {
            given: nargs,
            placed: arg_pos,
        }));
    }
    if used < nkw {
        let m = if call.quiet() {
            Misplaced::Unused
        } else {
            unused(params, &*call, nargs, rules.keywords)
        };
        return Err(call.misplaced(m));
    }
    Ok(())
}

/// The error for keyword arguments left unused, by the policy's scan.
#[cold]
fn unused<P: Param, C: Policy + ?Sized>(
    params: &[P],
    call: &C,
    nargs: usize,
    keywords: Keywords,
) -> Misplaced {
    let nkw = call.keywords();
    match keywords {
        Keywords::First | Keywords::LastInCallOrder => {
            for keyword in 0..nkw {
                match param_named(params, call.keyword(keyword)) {
                    None => return Misplaced::Unknown { keyword },
                    Some(slot) if slot < nargs => return Misplaced::Duplicate { slot, keyword },
                    Some(_) => {}
                }
            }
        }
        Keywords::LastUnknownThenParams => {
            if let Some(keyword) =
                (0..nkw).find(|&j| param_named(params, call.keyword(j)).is_none())
            {
                return Misplaced::Unknown { keyword };
            }
            for (slot, p) in params.iter().enumerate() {
                if let Some(keyword) = find(call, nkw, p.name()) {
                    return Misplaced::Duplicate { slot, keyword };
                }
            }
        }
    }
    Misplaced::Unused
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A parameter: name, keyword-only, has a default, aliases.
    struct P(&'static str, bool, bool, &'static [&'static str]);

    impl Param for P {
        fn name(&self) -> &str {
            self.0
        }
        fn keyword_only(&self) -> bool {
            self.1
        }
        fn has_default(&self) -> bool {
            self.2
        }
        fn aliases(&self) -> &[&'static str] {
            self.3
        }
    }

    /// `f(a, b=2, *, c=3)`, and `axis` for `b`.
    const PARAMS: [P; 3] = [
        P("a", false, false, &[]),
        P("b", false, true, &["axis"]),
        P("c", true, true, &[]),
    ];

    /// A test policy: values are strings; each slot records `name=value` (a
    /// default as `name=default`); a value `"bad"` fails its conversion and
    /// `"rest"` takes the remaining positionals.
    struct Call {
        rules: Rules,
        quiet: bool,
        args: Vec<&'static str>,
        kwargs: Vec<(&'static str, &'static str)>,
        out: Vec<String>,
        /// A default that cannot be made (the slot).
        no_default: Option<usize>,
    }

    impl Policy for Call {
        type Error = String;
        fn rules(&self) -> Rules {
            self.rules
        }
        fn quiet(&self) -> bool {
            self.quiet
        }
        type Value = &'static str;
        type Name = &'static str;
        fn call(&self) -> (&[&'static str], &[(&'static str, &'static str)]) {
            (&self.args, &self.kwargs)
        }
        fn given(&mut self, slot: usize, from: Source) -> Result<Taken, String> {
            let v = match from {
                Source::Positional(i) => self.args[i],
                Source::Keyword(j) => self.kwargs[j].1,
            };
            if v == "bad" {
                return Err(format!("convert {slot}"));
            }
            self.out.push(format!("{}={v}", PARAMS[slot].0));
            Ok(if v == "rest" { Taken::Rest } else { Taken::One })
        }
        fn default(&mut self, slot: usize) -> bool {
            if self.no_default == Some(slot) {
                return false;
            }
            self.out.push(format!("{}=default", PARAMS[slot].0));
            true
        }
        fn misplaced(&mut self, m: Misplaced) -> String {
            format!("{m:?}")
        }
    }

    const PYTHON: Rules = Rules {
        limit: Limit::Positional(2),
        keywords: Keywords::First,
    };
    const JIT: Rules = Rules {
        limit: Limit::All,
        keywords: Keywords::LastUnknownThenParams,
    };
    const PARSER: Rules = Rules {
        limit: Limit::Positional(2),
        keywords: Keywords::LastInCallOrder,
    };
    const VARARGS: Rules = Rules {
        limit: Limit::None,
        keywords: Keywords::LastInCallOrder,
    };

    fn run(
        rules: Rules,
        args: &[&'static str],
        kwargs: &[(&'static str, &'static str)],
    ) -> Result<Vec<String>, String> {
        run_with(rules, false, None, args, kwargs)
    }

    fn run_with(
        rules: Rules,
        quiet: bool,
        no_default: Option<usize>,
        args: &[&'static str],
        kwargs: &[(&'static str, &'static str)],
    ) -> Result<Vec<String>, String> {
        let mut call = Call {
            rules,
            quiet,
            args: args.to_vec(),
            kwargs: kwargs.to_vec(),
            out: Vec::new(),
            no_default,
        };
        place(&PARAMS, &mut call).map(|()| call.out)
    }

    #[test]
    fn places_positionals_keywords_aliases_and_defaults() {
        for rules in [PYTHON, JIT, PARSER, VARARGS] {
            assert_eq!(
                run(rules, &["1"], &[]).unwrap(),
                ["a=1", "b=default", "c=default"]
            );
            assert_eq!(
                run(rules, &["1", "2"], &[("c", "3")]).unwrap(),
                ["a=1", "b=2", "c=3"]
            );
            assert_eq!(
                run(rules, &[], &[("c", "3"), ("a", "1")]).unwrap(),
                ["a=1", "b=default", "c=3"]
            );
        }
        // An alias, after the name (Python's binding has none: its keyword
        // check knows names only).
        for rules in [JIT, PARSER, VARARGS] {
            assert_eq!(
                run(rules, &["1"], &[("axis", "2")]).unwrap(),
                ["a=1", "b=2", "c=default"]
            );
        }
        assert_eq!(
            run(PYTHON, &["1"], &[("axis", "2")]),
            Err(format!("{:?}", Misplaced::Unknown { keyword: 0 }))
        );
    }

    #[test]
    fn too_many() {
        let e = |given, limit| Err(format!("{:?}", Misplaced::TooMany { given, limit }));
        assert_eq!(run(PYTHON, &["1", "2", "3"], &[]), e(3, 2));
        assert_eq!(run(PARSER, &["1", "2", "3"], &[]), e(3, 2));
        // Counted in all, before the keyword checks.
        assert_eq!(run(JIT, &["1", "2"], &[("c", "3"), ("zz", "4")]), e(4, 3));
        // Before any conversion.
        assert_eq!(run(PYTHON, &["bad", "2", "3"], &[]), e(3, 2));
        assert_eq!(run(JIT, &["bad", "2", "3", "4"], &[]), e(4, 3));
    }

    #[test]
    fn keyword_only_and_left_over() {
        // Without a count first, the third positional reaches `c`, after the
        // first two converted.
        let ko = Err(format!(
            "{:?}",
            Misplaced::KeywordOnly { slot: 2, given: 3 }
        ));
        assert_eq!(run(JIT, &["1", "2", "3"], &[]), ko);
        assert_eq!(run(VARARGS, &["1", "2", "3"], &[]), ko);
        assert_eq!(run(JIT, &["1", "bad", "3"], &[]), Err("convert 1".into()));
        // A slot taking the rest.
        assert_eq!(
            run(VARARGS, &["rest", "2", "3"], &[]).unwrap(),
            ["a=rest", "b=default", "c=default"]
        );
        // Positionals left after the last slot (every slot positional).
        let params = [P("a", false, false, &[])];
        let mut call = Call {
            rules: VARARGS,
            quiet: false,
            args: vec!["1", "2"],
            kwargs: vec![],
            out: Vec::new(),
            no_default: None,
        };
        assert_eq!(
            place(&params, &mut call),
            Err(format!(
                "{:?}",
                Misplaced::LeftOver {
                    given: 2,
                    placed: 1
                }
            ))
        );
    }

    #[test]
    fn unknown_keyword() {
        let e = Err(format!("{:?}", Misplaced::Unknown { keyword: 1 }));
        for rules in [PYTHON, JIT, PARSER] {
            assert_eq!(run(rules, &["1"], &[("c", "3"), ("zz", "4")]), e);
        }
        // Python's binding checks keywords before converting anything; the
        // others convert the slots first.
        assert_eq!(run(PYTHON, &["bad"], &[("c", "3"), ("zz", "4")]), e);
        assert_eq!(
            run(JIT, &["bad"], &[("c", "3"), ("zz", "4")]),
            Err("convert 0".into())
        );
        assert_eq!(
            run(PARSER, &["bad"], &[("c", "3"), ("zz", "4")]),
            Err("convert 0".into())
        );
        // ... and before a missing value.
        assert_eq!(
            run(PYTHON, &[], &[("zz", "4")]),
            Err(format!("{:?}", Misplaced::Unknown { keyword: 0 }))
        );
        assert_eq!(
            run(JIT, &[], &[("zz", "4")]),
            Err(format!("{:?}", Misplaced::Missing { slot: 0 }))
        );
        // An alias is not a name to the scans.
        assert_eq!(
            run(PARSER, &["1"], &[("b", "2"), ("axis", "2")]),
            Err(format!("{:?}", Misplaced::Unknown { keyword: 1 }))
        );
    }

    #[test]
    fn duplicate() {
        let dup = |slot, keyword| Err(format!("{:?}", Misplaced::Duplicate { slot, keyword }));
        // Positional and keyword.
        for rules in [PYTHON, JIT, PARSER] {
            assert_eq!(run(rules, &["1", "2"], &[("b", "3")]), dup(1, 0));
        }
        // The same keyword twice: Python's binding names it; findErrorInKwargs
        // names the first parameter a keyword names; the parser's scan finds
        // no culprit.
        assert_eq!(
            run(PYTHON, &[], &[("a", "1"), ("c", "3"), ("c", "4")]),
            dup(2, 2)
        );
        assert_eq!(
            run(JIT, &[], &[("a", "1"), ("c", "3"), ("c", "4")]),
            dup(0, 0)
        );
        assert_eq!(
            run(PARSER, &[], &[("a", "1"), ("c", "3"), ("c", "4")]),
            Err(format!("{:?}", Misplaced::Unused))
        );
        // Unknown keywords come first for findErrorInKwargs, in call order for
        // the parser.
        assert_eq!(
            run(JIT, &["1"], &[("a", "1"), ("zz", "2")]),
            Err(format!("{:?}", Misplaced::Unknown { keyword: 1 }))
        );
        assert_eq!(run(PARSER, &["1"], &[("a", "1"), ("zz", "2")]), dup(0, 0));
        assert_eq!(run(PYTHON, &["1"], &[("a", "1"), ("zz", "2")]), dup(0, 0));
    }

    #[test]
    fn missing() {
        let e = |slot| Err(format!("{:?}", Misplaced::Missing { slot }));
        for rules in [PYTHON, JIT, PARSER, VARARGS] {
            assert_eq!(run(rules, &[], &[("c", "3")]), e(0));
            // In slot order with the conversions.
            assert_eq!(
                run_with(rules, false, Some(1), &["bad"], &[]),
                Err("convert 0".into())
            );
            assert_eq!(run_with(rules, false, Some(1), &["1"], &[]), e(1));
        }
        // A conversion in a later slot comes after.
        assert_eq!(run(JIT, &[], &[("c", "bad")]), e(0));
    }

    #[test]
    fn quiet_skips_the_scans() {
        // Python's binding checks keywords first, not as a scan.
        assert_eq!(
            run_with(PYTHON, true, None, &["1", "2"], &[("b", "3")]),
            Err(format!(
                "{:?}",
                Misplaced::Duplicate {
                    slot: 1,
                    keyword: 0
                }
            ))
        );
        for rules in [JIT, PARSER] {
            assert_eq!(
                run_with(rules, true, None, &["1", "2"], &[("b", "3")]),
                Err(format!("{:?}", Misplaced::Unused))
            );
        }
        // Other errors are still told apart.
        assert_eq!(
            run_with(PARSER, true, None, &[], &[]),
            Err(format!("{:?}", Misplaced::Missing { slot: 0 }))
        );
    }
}
