//! A tour of opforge: what the generator derived from `native_functions.yaml`.
//!
//! Run with `cargo run --example tour`.

use opforge::schema::OpSchema;
use opforge::{OpId, BINDINGS, GROUPS, OPS, OVERRIDABLE};

fn describe(op: &OpSchema) {
    println!("  {}", op.schema);
    println!(
        "    kind: {}; variants: {}; yaml line {}",
        op.kind,
        match (op.function, op.method) {
            (true, true) => "function, method",
            (false, true) => "method",
            _ => "function",
        },
        op.line
    );
    for a in op.args {
        let role = match (a.kwarg_only, a.is_out) {
            (_, true) => "out",
            (true, false) => "keyword-only",
            (false, false) => "positional",
        };
        let default = a
            .default
            .map(|d| format!(" = {}", d.text))
            .unwrap_or_default();
        let alias = a
            .alias
            .map(|al| {
                format!(
                    " alias set {{{}}}{}",
                    al.set,
                    if al.is_write { ", written" } else { "" }
                )
            })
            .unwrap_or_default();
        println!(
            "      {:<10} {:<14} {role}{default}{alias}",
            a.name,
            a.ty.to_string()
        );
    }
    for k in op.kernels {
        println!("    kernel for {:<26} {}", k.key, k.kernel);
    }
}

fn main() {
    println!(
        "opforge tour: {} operator overloads generated from native_functions.yaml\n",
        OPS.len()
    );

    println!("1. An operator and its variants (functional, inplace, out share one signature):");
    let add = OpId::from_name("add.Tensor").expect("add.Tensor is in the YAML");
    let group = GROUPS
        .iter()
        .find(|g| g.functional == Some(add))
        .expect("add.Tensor has a group");
    for id in [group.functional, group.inplace, group.out]
        .into_iter()
        .flatten()
    {
        describe(id.schema());
    }

    println!("\n   What PyTorch's Python binding derives from them (parser signatures, overridable stubs):");
    for name in ["torch.add", "Tensor.add", "Tensor.add_"] {
        let b = BINDINGS.iter().find(|b| b.name == name).expect("derived");
        for s in b.signatures {
            let target = s.functional.map(|id| id.schema().name).unwrap_or("?");
            let out = s
                .out
                .map(|id| format!(", with out=: {}", id.schema().name))
                .unwrap_or_default();
            println!("  {name:<12} {}   -> {target}{out}", s.text);
        }
    }
    for f in OVERRIDABLE.iter().filter(|f| f.name == "add") {
        println!(
            "  overridable {}.{}, testing stub: {}",
            f.namespace, f.name, f.stub
        );
    }

    println!("\n2. Named tuple returns, views and factories:");
    for name in ["max.dim", "view", "zeros"] {
        let op = OpId::from_name(name).expect("in the YAML").schema();
        describe(op);
        if !op.returns.is_empty() {
            let rets: Vec<String> = op
                .returns
                .iter()
                .map(|r| {
                    format!(
                        "{}{}",
                        r.ty,
                        r.name.map(|n| format!(" {n}")).unwrap_or_default()
                    )
                })
                .collect();
            println!("    returns: ({})", rets.join(", "));
        }
    }

    println!("\n3. CompositeImplicitAutograd: no dispatch table, one kernel for every backend:");
    describe(OpId::from_name("matmul").expect("in the YAML").schema());

    println!("\n4. A mistake in the YAML is caught at build time, with its place:");
    let bad = "- func: my_add.Tensor(Tensor self, Tensr other, *, Scalar alpha=1) -> Tensor\n  dispatch:\n    CPUU: cpu::my_add\n";
    println!(
        "{}",
        bad.lines()
            .map(|l| format!("    | {l}"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    match opforge_codegen::load::load_str("my_ops.yaml", bad) {
        Ok(file) => match opforge_codegen::validate::validate(&file, None) {
            Ok(()) => println!("    (unexpectedly valid)"),
            Err(d) => print!("{}", indent(&d.to_string())),
        },
        Err(d) => print!("{}", indent(&d.to_string())),
    }
    let bad = "- func: my_add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor\n  dispatch:\n    CPUU: cpu::my_add\n";
    println!("  and once the type is fixed:");
    if let Err(d) = opforge_codegen::load::load_str("my_ops.yaml", bad)
        .map_err(|d| d.to_string())
        .and_then(|f| opforge_codegen::validate::validate(&f, None).map_err(|d| d.to_string()))
    {
        print!("{}", indent(&d));
    }
}

fn indent(s: &str) -> String {
    s.lines().map(|l| format!("    {l}\n")).collect()
}
