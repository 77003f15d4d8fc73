//! Message I: "received an invalid combination of arguments" (PyTorch's
//! `format_invalid_args`), including its quirks: the printed signatures are parsed
//! back into (type, name) tokens by splitting on `", "` and the last space, so the
//! `*` marker is a token and a defaulted parameter `Number alpha = 1` becomes type
//! `Number alpha =`, name `1` (`python_arg_parser.cpp`'s `FunctionSignature::parse` errors).

use crate::value::Value;

struct OptArg {
    name: String,
    ty: String,
}

fn parse_option(option: &str) -> Vec<OptArg> {
    let inner = option
        .strip_prefix('(')
        .and_then(|s| s.strip_suffix(')'))
        .unwrap_or(option);
    inner
        .split(", ")
        .map(|arg| match arg.rfind(' ') {
            Some(sp) => OptArg {
                name: arg[sp + 1..].to_string(),
                ty: arg[..sp].to_string(),
            },
            None => OptArg {
                name: arg.to_string(),
                ty: arg.to_string(),
            },
        })
        .collect()
}

fn is_matching(ty: &str, v: &Value) -> bool {
    let t = v.type_name();
    match ty {
        "float" => matches!(t, "float" | "int" | "long"),
        "int" => matches!(t, "int" | "long"),
        other => other == t,
    }
}

fn arg_count_match(opt: &[OptArg], args: &[Value], kwargs: &[(String, Value)]) -> bool {
    args.len() + kwargs.len() == opt.len()
}

/// `kwargs` in the order PyTorch's `unordered_map` iterates them (observed:
/// reverse of call order).
fn kw_order(kwargs: &[(String, Value)]) -> impl Iterator<Item = &(String, Value)> {
    kwargs.iter().rev()
}

fn render(v: &Value) -> String {
    match v {
        Value::List(items) => {
            let names: Vec<&str> = items.iter().map(Value::type_name).collect();
            format!("list of [{}]", names.join(", "))
        }
        v => v.type_name().to_string(),
    }
}

fn formatted_arg_desc(opt: &[OptArg], args: &[Value], kwargs: &[(String, Value)]) -> String {
    let mut out = String::from("(");
    for i in 0..args.len() + kwargs.len() {
        let is_kwarg = i >= args.len();
        let arg = if is_kwarg {
            let name = opt.get(i).map(|a| a.name.as_str()).unwrap_or("");
            kwargs.iter().find(|(k, _)| k == name).map(|(_, v)| v)
        } else {
            Some(&args[i])
        };
        let Some(arg) = arg else { continue };
        let matching = opt.get(i).is_some_and(|a| is_matching(&a.ty, arg));
        if !matching {
            out.push('!');
        }
        if is_kwarg {
            out.push_str(&opt[i].name);
            out.push('=');
        }
        out.push_str(&render(arg));
        if !matching {
            out.push('!');
        }
        out.push_str(", ");
    }
    if !args.is_empty() {
        out.truncate(out.len() - 2);
    }
    out.push(')');
    out
}

fn arg_desc(args: &[Value], kwargs: &[(String, Value)]) -> String {
    let mut out = String::from("(");
    for a in args {
        out.push_str(a.type_name());
        out.push_str(", ");
    }
    for (k, v) in kw_order(kwargs) {
        out.push_str(k);
        out.push('=');
        out.push_str(v.type_name());
        out.push_str(", ");
    }
    if !args.is_empty() {
        out.truncate(out.len() - 2);
    }
    out.push(')');
    out
}

fn try_match_kwargs(opt: &[OptArg], kwargs: &[(String, Value)]) -> Vec<String> {
    let start = opt.len().saturating_sub(kwargs.len());
    kw_order(kwargs)
        .filter(|(k, _)| !opt[start..].iter().any(|a| &a.name == k))
        .map(|(k, _)| k.clone())
        .collect()
}

/// The full message I for function `name` given the printed non-hidden
/// signatures `options` (each as [`super::FunctionSignature::display`] prints it).
pub fn format_invalid_args(
    name: &str,
    args: &[Value],
    kwargs: &[(String, Value)],
    options: &[String],
) -> String {
    let mut msg = format!("{name}() received an invalid combination of arguments - ");
    let has_kwargs = !kwargs.is_empty();
    if options.len() == 1 {
        let opt = parse_option(&options[0]);
        let unmatched = if has_kwargs {
            try_match_kwargs(&opt, kwargs)
        } else {
            Vec::new()
        };
        if !unmatched.is_empty() {
            msg.push_str("got unrecognized keyword arguments: ");
            msg.push_str(&unmatched.join(", "));
        } else {
            msg.push_str("got ");
            if arg_count_match(&opt, args, kwargs) {
                msg.push_str(&formatted_arg_desc(&opt, args, kwargs));
            } else {
                msg.push_str(&arg_desc(args, kwargs));
            }
            msg.push_str(", but expected ");
            msg.push_str(&options[0]);
        }
    } else {
        msg.push_str("got ");
        msg.push_str(&arg_desc(args, kwargs));
        msg.push_str(", but expected one of:\n");
        for o in options {
            let opt = parse_option(o);
            msg.push_str(" * ");
            msg.push_str(o);
            msg.push('\n');
            if arg_count_match(&opt, args, kwargs) {
                let unmatched = if has_kwargs {
                    try_match_kwargs(&opt, kwargs)
                } else {
                    Vec::new()
                };
                if !unmatched.is_empty() {
                    msg.push_str(
                        "      didn't match because some of the keywords were incorrect: ",
                    );
                    msg.push_str(&unmatched.join(", "));
                } else {
                    msg.push_str(
                        "      didn't match because some of the arguments have invalid types: ",
                    );
                    msg.push_str(&formatted_arg_desc(&opt, args, kwargs));
                }
                msg.push('\n');
            }
        }
    }
    msg
}
