//! The command line, `opforge-codegen` (`src/main.rs` calls [`main`]; tests
//! call [`run`] and get the text it prints).
//!
//! ```text
//! opforge-codegen check FILE                      validate; one-line summary or the errors found (exit 1)
//! opforge-codegen show FILE NAME                  what was derived for an operator
//! opforge-codegen emit FILE --out DIR             write the generated Rust tables to DIR
//! opforge-codegen signatures FILE [--deprecated F] every Python API binding, as JSON
//! opforge-codegen bench FILE                      load_validate_ms / emit_ms medians
//! ```
//! `tags.yaml` (and, for `signatures`, `deprecated.yaml`) are looked for beside FILE.
//! These commands are an interface other tools script against: keep them stable.

use crate::lower;
use opforge_schema::diag::Diagnostics;
use opforge_schema::load::{self, SchemaFile};
use opforge_schema::python::DeprecatedEntry;
use opforge_schema::validate;
use std::path::{Path, PathBuf};

const USAGE: &str = "usage:
  opforge-codegen check FILE
  opforge-codegen show FILE NAME
  opforge-codegen emit FILE --out DIR
  opforge-codegen signatures FILE [--deprecated FILE]
  opforge-codegen bench FILE

FILE is a native_functions.yaml; tags.yaml (and deprecated.yaml) are read from beside it.";

/// What one run printed, and its exit code.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome {
    /// Exit code: 0 on success, 1 on any error.
    pub code: i32,
    /// What went to standard output.
    pub stdout: String,
    /// What went to standard error.
    pub stderr: String,
}

/// Runs the command line with `args` (without the program name).
///
/// ```
/// let o = opforge_codegen::cli::run(&["frobnicate".to_string()]);
/// assert_eq!(o.code, 1);
/// assert!(o.stderr.starts_with("error: unknown command `frobnicate`"));
/// ```
pub fn run(args: &[String]) -> Outcome {
    let mut stderr = String::new();
    let result = dispatch(args);
    let (code, stdout) = match result {
        Ok(out) => (0, out),
        Err((out, msg)) => {
            stderr.push_str(&msg);
            if !msg.ends_with('\n') {
                stderr.push('\n');
            }
            (1, out)
        }
    };
    Outcome {
        code,
        stdout,
        stderr,
    }
}

/// The program: runs with the process's arguments, prints, exits.
pub fn main() -> std::process::ExitCode {
    use std::io::Write;
    let args: Vec<String> = std::env::args().skip(1).collect();
    let o = run(&args);
    // A closed pipe (`| head`) ends the output quietly.
    let _ = std::io::stdout().lock().write_all(o.stdout.as_bytes());
    let _ = std::io::stderr().lock().write_all(o.stderr.as_bytes());
    std::process::ExitCode::from(u8::try_from(o.code).unwrap_or(1))
}

/// Standard output so far and the error, for a failed command.
type Failure = (String, String);

fn dispatch(args: &[String]) -> Result<String, Failure> {
    let fail = |e: String| (String::new(), e);
    let result: Result<String, String> = match args.first().map(String::as_str) {
        Some("check") => one_file(args, 2).and_then(|f| check(&f)),
        Some("show") => match args.get(1..) {
            Some([file, name]) => show(Path::new(file), name),
            _ => Err(usage("show takes FILE NAME")),
        },
        Some("emit") => match args.get(1..) {
            Some([file, flag, dir]) if flag == "--out" => emit_cmd(Path::new(file), Path::new(dir)),
            _ => Err(usage("emit takes FILE --out DIR")),
        },
        Some("signatures") => match args.get(1..) {
            Some([file]) => signatures(Path::new(file), None),
            Some([file, flag, dep]) if flag == "--deprecated" => {
                signatures(Path::new(file), Some(Path::new(dep)))
            }
            _ => Err(usage("signatures takes FILE [--deprecated FILE]")),
        },
        Some("bench") => one_file(args, 2).and_then(|f| bench(&f)),
        Some("-h" | "--help" | "help") => Ok(format!("{USAGE}\n")),
        Some(other) => Err(usage(&format!("unknown command `{other}`"))),
        None => Err(usage("no command given")),
    };
    result.map_err(fail)
}

fn usage(what: &str) -> String {
    format!("error: {what}\n\n{USAGE}")
}

fn one_file(args: &[String], len: usize) -> Result<PathBuf, String> {
    match args.get(1) {
        Some(f) if args.len() == len => Ok(PathBuf::from(f)),
        _ => Err(usage(&format!("{} takes one FILE", args[0]))),
    }
}

/// A file beside `file` named `name`, if it exists.
fn beside(file: &Path, name: &str) -> Option<PathBuf> {
    let p = file.parent().unwrap_or(Path::new(".")).join(name);
    p.exists().then_some(p)
}

/// Loads and validates `file` (with tags from a `tags.yaml` beside it, if any).
/// Returns the file, the number of known tags (if checked) and the
/// `deprecated.yaml` entries found beside it.
fn load_valid(
    file: &Path,
) -> Result<(SchemaFile, Option<usize>, Vec<DeprecatedEntry>), Diagnostics> {
    let name = file.display().to_string();
    let read = |p: &Path| opforge_schema::yaml::read(p).map_err(|d| Diagnostics(vec![d]));
    let src = read(file)?;
    let tags = match beside(file, "tags.yaml") {
        Some(t) => Some(load::load_tags_str(&t.display().to_string(), &read(&t)?)?),
        None => None,
    };
    let schema = opforge_schema::check_str(&name, &src, tags.as_deref())?;
    let deprecated = opforge_schema::read_deprecated(file)?;
    Ok((schema, tags.map(|t| t.len()), deprecated))
}

fn check(file: &Path) -> Result<String, String> {
    let (schema, tags, deprecated) = load_valid(file).map_err(|d| {
        let n = d.0.len();
        format!(
            "{d}{n} error{} in {}",
            if n == 1 { "" } else { "s" },
            file.display()
        )
    })?;
    let plan = lower::lower(&schema, &deprecated).map_err(|e| e.to_string())?;
    let kinds = opforge_schema::groups::kind_counts(schema.entries.iter().map(|e| &e.func))
        .iter()
        .map(|(k, n)| format!("{n} {k}"))
        .collect::<Vec<_>>()
        .join(", ");
    let tags = match tags {
        Some(n) => format!("tags checked against {n} in tags.yaml"),
        None => "no tags.yaml beside the file, tags not checked".into(),
    };
    Ok(format!(
        "ok: {}: {} operators ({kinds}), {} groups; {tags}\n",
        file.display(),
        schema.entries.len(),
        plan.groups.len()
    ))
}

fn show(file: &Path, name: &str) -> Result<String, String> {
    let (schema, _, deprecated) = load_valid(file).map_err(|d| d.to_string())?;
    let plan = lower::lower(&schema, &deprecated).map_err(|e| e.to_string())?;
    let exact = plan.find(name);
    let matches: Vec<usize> = match exact {
        Some(i) => vec![i],
        None => (0..plan.ops.len())
            .filter(|&i| plan.ops[i].entry.func.name.name.to_string() == name)
            .collect(),
    };
    if matches.is_empty() {
        let names: Vec<String> = plan
            .ops
            .iter()
            .flat_map(|o| [o.entry.name(), o.entry.func.name.name.to_string()])
            .collect();
        let near = opforge_schema::diag::nearest(name, names.iter().map(String::as_str))
            .map(|n| format!(" (did you mean `{n}`?)"))
            .unwrap_or_default();
        return Err(format!("no operator `{name}` in {}{near}", file.display()));
    }
    let parts: Vec<String> = matches.into_iter().map(|i| describe(&plan, i)).collect();
    Ok(parts.join("\n"))
}

/// The text `show` prints for one operator.
fn describe(plan: &lower::Plan, i: usize) -> String {
    use std::fmt::Write;
    let op = &plan.ops[i];
    let nf = op.entry;
    let f = &nf.func;
    let a = &f.arguments;
    let names = |xs: &[opforge_schema::model::Argument]| {
        xs.iter()
            .map(|x| x.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut s = String::new();
    let _ = writeln!(s, "{}", nf.name());
    let _ = writeln!(s, "  schema:        {f}");
    let _ = writeln!(s, "  line:          {}", nf.line);
    let _ = writeln!(s, "  namespace:     {}", f.name.namespace());
    let _ = writeln!(
        s,
        "  kind:          {}{}",
        f.kind(),
        if f.is_mutable() { " (mutable)" } else { "" }
    );
    let _ = writeln!(s, "  rust ident:    {} (OpId::{})", op.ident, op.ident);
    let variants = match (nf.variants.function, nf.variants.method) {
        (true, true) => "function, method",
        (false, true) => "method",
        _ => "function",
    };
    let _ = writeln!(s, "  variants:      {variants}");
    if let Some(m) = &nf.python_module {
        let _ = writeln!(s, "  python_module: {m}");
    }
    let _ = writeln!(s, "  arguments:     pre-self [{}], self [{}], post-self [{}], kwarg-only [{}], tensor options [{}], out [{}]",
        names(a.pre_self_positional()),
        a.self_arg().map_or("", |x| x.name.as_str()),
        names(a.post_self_positional()),
        names(a.non_out_kwarg_only()),
        if f.has_tensor_options() { "dtype, layout, device, pin_memory" } else { "" },
        names(a.out()));
    let _ = writeln!(s, "  kernels:");
    for (k, v) in &op.kernels {
        let implicit = if nf.has_dispatch { "" } else { " (implicit)" };
        let _ = writeln!(s, "    {k}: {v}{implicit}");
    }
    let _ = writeln!(s, "  rust api:      {}", rust_api(op).join(", "));
    let _ = writeln!(
        s,
        "  kernels to write (#[kernel] checks each against the schema):"
    );
    for (k, v) in &op.kernels {
        let (module, func) = match v.rsplit_once("::") {
            Some((m, f)) => (format!("crate::kernels::{m}"), f),
            None => ("crate::kernels".to_string(), v.as_str()),
        };
        match kernel_signature(f, func) {
            Ok(sig) => {
                let _ = writeln!(
                    s,
                    "    in {module}:\n      #[kernel({k})]\n      pub fn {sig}"
                );
            }
            Err(e) => {
                let _ = writeln!(s, "    in {module}: none can be written ({e})");
            }
        }
    }
    if !nf.tags.is_empty() {
        let _ = writeln!(s, "  tags:          {}", nf.tags.join(", "));
    }
    if let Some(g) = plan.groups.iter().find(|g| g.members().any(|m| m == i)) {
        let members: Vec<String> = g
            .members()
            .map(|m| {
                format!(
                    "{} ({})",
                    plan.ops[m].entry.name(),
                    plan.ops[m].entry.func.kind()
                )
            })
            .collect();
        let _ = writeln!(s, "  group:         {}", members.join(", "));
        let _ = writeln!(s, "  signature:     {}", g.signature);
    }
    let name = nf.name();
    for b in &plan.bindings {
        let uses: Vec<&String> = b
            .signatures
            .iter()
            .zip(&b.sources)
            .filter(|(_, src)| src.functional == name || src.out.as_ref() == Some(&name))
            .map(|(sig, _)| sig)
            .collect();
        for sig in uses {
            let _ = writeln!(s, "  python api:    {}: {sig}", b.name);
        }
    }
    s
}

/// The Rust names of an operator in the generated API of the crate whose
/// schema file it is (`Tensor::` methods are opforge's own schema's only).
fn rust_api(op: &lower::PlannedOp) -> Vec<String> {
    let mut names = vec![format!("ops::{}", op.ident), format!("at::{}", op.ident)];
    if op.entry.variants.function {
        names.push(format!("torch::{}", op.api_name));
    }
    if op.entry.variants.method && op.schema().arguments.self_arg().is_some() {
        names.push(format!(
            "Tensor::{} (opforge's own schema only)",
            op.api_name
        ));
    }
    names
}

/// `name(self_: &Tensor, k: f64) -> Result<Tensor>`: the kernel signature
/// `#[kernel]` checks against `f`.
fn kernel_signature(
    f: &opforge_schema::model::FunctionSchema,
    name: &str,
) -> Result<String, crate::rust_types::Unmapped> {
    use crate::rust_types::{param_type, result_type, show};
    let params = f
        .arguments
        .all
        .iter()
        .map(|a| {
            let ty = param_type(a)?;
            Ok(format!(
                "{}: {}",
                opforge_schema::names::arg_ident(&a.name),
                show(&ty)
            ))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let ret = show(&result_type(&f.returns)?);
    Ok(format!("{name}({}) -> {ret}", params.join(", ")))
}

fn emit_cmd(file: &Path, dir: &Path) -> Result<String, String> {
    let (schema, _, deprecated) = load_valid(file).map_err(|d| d.to_string())?;
    let plan = lower::lower(&schema, &deprecated).map_err(|e| e.to_string())?;
    let stem = file
        .file_stem()
        .map_or("schema".into(), |s| s.to_string_lossy().replace('-', "_"));
    let opts = crate::emit_api::Options {
        runtime: false,
        crate_name: stem,
        kernels_module: Some("crate::kernels".into()),
    };
    let files = crate::emit_all(&plan, &opts).map_err(|d| d.to_string())?;
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let mut out = String::new();
    for (name, text) in &files {
        let path = dir.join(name);
        std::fs::write(&path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        out.push_str(&format!(
            "wrote {} ({} lines)\n",
            path.display(),
            text.lines().count()
        ));
    }
    out.push_str(&format!("{} operators\n", plan.ops.len()));
    Ok(out)
}

fn signatures(file: &Path, deprecated: Option<&Path>) -> Result<String, String> {
    let (schema, _, beside_entries) = load_valid(file).map_err(|d| d.to_string())?;
    // An explicit --deprecated file replaces the one found beside FILE.
    let deprecated = match deprecated {
        Some(p) => {
            let text = std::fs::read_to_string(p)
                .map_err(|e| format!("cannot read {}: {e}", p.display()))?;
            opforge_schema::python::load_deprecated_str(&p.display().to_string(), &text)
                .map_err(|d| d.to_string())?
        }
        None => beside_entries,
    };
    let bindings = opforge_schema::python::derive_bindings(&schema.entries, &deprecated)?;
    let map: serde_json::Map<String, serde_json::Value> = bindings
        .into_iter()
        .map(|b| (b.name, serde_json::Value::from(b.signatures)))
        .collect();
    let json = serde_json::to_string_pretty(&map).map_err(|e| e.to_string())?;
    Ok(format!("{json}\n"))
}

fn median_ms(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

fn bench(file: &Path) -> Result<String, String> {
    let src = std::fs::read_to_string(file)
        .map_err(|e| format!("cannot read {}: {e}", file.display()))?;
    let tags = match beside(file, "tags.yaml") {
        Some(t) => {
            let text = std::fs::read_to_string(&t).map_err(|e| e.to_string())?;
            Some(load::load_tags_str("tags.yaml", &text).map_err(|d| d.to_string())?)
        }
        None => None,
    };
    let deprecated = opforge_schema::read_deprecated(file).map_err(|d| d.to_string())?;
    let name = file.display().to_string();
    let runs = 11;
    let mut load_times = Vec::new();
    let mut schema = None;
    for _ in 0..runs {
        let t = std::time::Instant::now();
        let s = load::load_str(&name, &src).map_err(|d| d.to_string())?;
        validate::validate(&s, tags.as_deref()).map_err(|d| d.to_string())?;
        load_times.push(t.elapsed().as_secs_f64() * 1e3);
        schema = Some(s);
    }
    let schema = schema.expect("runs > 0");
    // What a crate with this schema file and no kernels (`opforge-aten`) generates.
    let opts = crate::emit_api::Options {
        runtime: false,
        crate_name: "bench".into(),
        kernels_module: None,
    };
    let mut emit_times = Vec::new();
    let (mut bytes, mut lines) = (0, 0);
    for _ in 0..5 {
        let t = std::time::Instant::now();
        let plan = lower::lower(&schema, &deprecated).map_err(|d| d.to_string())?;
        let files = crate::emit_all(&plan, &opts).map_err(|d| d.to_string())?;
        emit_times.push(t.elapsed().as_secs_f64() * 1e3);
        bytes = files.iter().map(|(_, f)| f.len()).sum();
        lines = files.iter().map(|(_, f)| f.lines().count()).sum();
    }
    Ok(format!(
        "# {}: {} operators; every generated file: {} lines, {} bytes; medians of {runs} load runs and 5 lower+emit runs\nload_validate_ms: {:.2}\nemit_ms: {:.2}\n",
        file.display(),
        schema.entries.len(),
        lines,
        bytes,
        median_ms(load_times),
        median_ms(emit_times)
    ))
}
