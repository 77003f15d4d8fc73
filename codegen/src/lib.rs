//! opforge-codegen: lowering and Rust emission for a schema file loaded by
//! `opforge-schema`, the build-script entry point ([`Build`]) and the
//! `opforge-codegen` command line ([`cli`]). Nothing at run time depends on it.
//!
//! A crate with its own `native_functions.yaml` generates its tables, typed API
//! and `#[kernel]` checks with a build script:
//!
//! ```no_run
//! // build.rs: fn main() {
//! opforge_codegen::Build::new("native_functions.yaml").run();
//! // }
//! ```
//!
//! and `opforge::include_schema!();` at the top of its `lib.rs`; with
//! `.derivatives("derivatives.yaml")` before `.run()`, its operators get
//! Autograd kernels from derivative formulas ([`Build::derivatives`]).

pub mod cli;
pub mod derivatives;
pub mod emit;
pub mod emit_api;
pub mod emit_autograd;
pub mod emit_coverage;
pub mod emit_kernels;
pub mod emit_lookup;
pub mod kernel;
pub mod lower;
pub mod rust_types;
pub mod text;

use emit_api::Options;
use opforge_schema::diag::Diagnostics;
use opforge_schema::load;
use std::path::{Path, PathBuf};

/// The generated files, as `(file name, contents)`.
pub type Files = Vec<(String, String)>;

/// Loads, validates, lowers and emits a schema file with `opts`: the whole
/// pipeline a build runs. `tags` is the `tags.yaml` to check tags against (none:
/// tags are not checked); a `deprecated.yaml` beside `yaml`, if present, adds
/// PyTorch's deprecated signatures.
pub fn generate_with(
    yaml: &Path,
    tags: Option<&Path>,
    opts: &Options,
) -> Result<Files, Diagnostics> {
    generate_all(yaml, tags, opts, None)
}

/// A derivatives file and, if given, the Rust file whose `pub fn`s are the
/// helpers its formulas may call by their bare names.
#[derive(Clone, Debug)]
pub struct Derivatives {
    /// The `derivatives.yaml`.
    pub yaml: PathBuf,
    /// The helpers (the runtime's `src/autograd/formulas.rs`).
    pub helpers: Option<Helpers>,
}

/// The module of helper functions a derivatives file's formulas call.
#[derive(Clone, Debug)]
pub struct Helpers {
    /// Its file: its `pub fn`s are the names formulas may call.
    pub file: PathBuf,
    /// Its module path (`crate::formulas`), which a crate's generated
    /// `autograd` module imports whole (the runtime imports its own in
    /// `autograd/generated.rs`).
    pub module: String,
}

/// The module path of a Rust file of a crate, from its path relative to the
/// package directory, by Rust's rule for module files: `src/formulas.rs` is
/// `crate::formulas`, `src/autograd/formulas.rs` and
/// `src/autograd/formulas/mod.rs` are `crate::autograd::formulas`. A file
/// outside `src/`, the crate root, or a name that is not an identifier is an
/// error naming the file.
pub fn module_path(relative: &Path) -> Result<String, Diagnostics> {
    let name = relative.display().to_string();
    let fail = |why: &str| {
        Diagnostics(vec![opforge_schema::diag::Diagnostic::new(
            &name,
            0,
            format!("the derivatives' helpers: {why}"),
        )])
    };
    let mut parts: Vec<String> = Vec::new();
    for c in relative.components() {
        match c {
            std::path::Component::Normal(p) => parts.push(p.to_string_lossy().into_owned()),
            std::path::Component::CurDir => {}
            _ => {
                return Err(fail(
                    "give the file relative to the package directory, under `src/`",
                ))
            }
        }
    }
    if parts.first().map(String::as_str) != Some("src") {
        return Err(fail(
            "the file must be under `src/` (its module path is derived from its place there)",
        ));
    }
    let Some(last) = parts
        .pop()
        .and_then(|f| f.strip_suffix(".rs").map(str::to_string))
    else {
        return Err(fail("not a `.rs` file"));
    };
    if last != "mod" {
        parts.push(last);
    }
    parts.remove(0);
    if parts.is_empty() || parts == ["lib"] || parts == ["main"] {
        return Err(fail("the crate root cannot be the helpers' module: put them in a module of their own (`src/formulas.rs`)"));
    }
    if let Some(bad) = parts
        .iter()
        .find(|p| syn::parse_str::<syn::Ident>(p).is_err())
    {
        return Err(fail(&format!("`{bad}` is not a module name")));
    }
    Ok(format!("crate::{}", parts.join("::")))
}

/// The names of the `pub fn`s of a Rust file: the helpers a derivatives file's
/// formulas may call.
pub fn helper_names(path: &Path) -> Result<Vec<String>, Diagnostics> {
    let name = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| {
        Diagnostics(vec![opforge_schema::diag::Diagnostic::new(
            &name,
            0,
            format!("cannot read the helpers: {e}"),
        )])
    })?;
    let file = syn::parse_file(&text).map_err(|e| {
        Diagnostics(vec![opforge_schema::diag::Diagnostic::new(
            &name,
            0,
            format!("the helpers do not parse: {e}"),
        )])
    })?;
    Ok(file
        .items
        .iter()
        .filter_map(|i| match i {
            syn::Item::Fn(f) if matches!(f.vis, syn::Visibility::Public(_)) => {
                Some(f.sig.ident.to_string())
            }
            _ => None,
        })
        .collect())
}

/// [`generate_with`], plus `autograd.rs` (node types and Autograd kernels)
/// from a derivatives file, checked against the schema file: every problem in
/// it is a diagnostic with its file and line.
pub fn generate_all(
    yaml: &Path,
    tags: Option<&Path>,
    opts: &Options,
    derivatives: Option<&Derivatives>,
) -> Result<Files, Diagnostics> {
    let name = yaml.display().to_string();
    let read = |p: &Path| opforge_schema::yaml::read(p).map_err(|d| Diagnostics(vec![d]));
    let src = read(yaml)?;
    let tags = match tags {
        Some(t) => Some(load::load_tags_str(&t.display().to_string(), &read(t)?)?),
        None => None,
    };
    let file = opforge_schema::check_str(&name, &src, tags.as_deref())?;
    let deprecated = opforge_schema::read_deprecated(yaml)?;
    let plan = lower::lower(&file, &deprecated)?;
    let mut files = emit_all(&plan, opts)?;
    if let Some(d) = derivatives {
        let helpers = match &d.helpers {
            Some(h) => helper_names(&h.file)?,
            None => Vec::new(),
        };
        let helpers: Vec<&str> = helpers.iter().map(String::as_str).collect();
        let dfile = opforge_schema::derivatives::load_file(&d.yaml)?;
        let checked = derivatives::check(&dfile, &file, &helpers)?;
        files.push((
            "autograd.rs".into(),
            emit_autograd::autograd(&plan, opts, &dfile, &checked)?,
        ));
        // A crate with its own schema includes it in `generated::autograd`;
        // the runtime in its own layer (`autograd/generated.rs`).
        if !opts.runtime {
            let module = d.helpers.as_ref().map(|h| h.module.as_str());
            for (name, text) in files.iter_mut() {
                if name == "schema.rs" {
                    *text = schema_file(&plan, Some(module));
                }
            }
        }
    }
    Ok(files)
}

/// [`generate_with`] for the runtime's own schema file.
/// The runtime's `derivatives.yaml` beside it and its helpers
/// (`src/autograd/formulas.rs`) add `autograd.rs` when both exist.
pub fn generate(yaml: &Path, tags: Option<&Path>) -> Result<Files, Diagnostics> {
    let d = runtime_derivatives(yaml);
    generate_all(yaml, tags, &Options::runtime(), d.as_ref())
}

/// The runtime's derivatives file and helpers, beside its schema file.
fn runtime_derivatives(yaml: &Path) -> Option<Derivatives> {
    let d = Derivatives {
        yaml: yaml.with_file_name("derivatives.yaml"),
        helpers: Some(Helpers {
            file: yaml.with_file_name("src/autograd/formulas.rs"),
            module: "crate::autograd::formulas".into(),
        }),
    };
    let helpers = d.helpers.as_ref().is_some_and(|h| h.file.exists());
    (d.yaml.exists() && helpers).then_some(d)
}

/// Every generated file for a plan: the schema lookup macro
/// (`schema_macro.rs`), the tables (`tables.rs`), the typed API (`at.rs`: the
/// dispatched functions and signature types; `api.rs`: `ops`, `torch` and the
/// runtime's `Tensor` methods), the checks that the kernels the YAML names
/// exist (`kernel_checks.rs`), and `schema.rs`, which includes them all into
/// a module `generated` (what `opforge::include_schema!()` includes). The
/// runtime includes each file in the module of its own layer instead
/// (`tables`, `at`, `api`). What a build writes and `emit --out` writes.
pub fn emit_all(plan: &lower::Plan, opts: &Options) -> Result<Files, Diagnostics> {
    let api = emit_api::api(plan, opts)?;
    let kernels = generated_kernels(plan, opts)?;
    let all = schema_file(plan, None);
    Ok(vec![
        (
            "schema_macro.rs".to_string(),
            emit_lookup::schema_macro(plan, opts),
        ),
        ("tables.rs".into(), emit::tables(plan)),
        ("at.rs".into(), api.at),
        ("api.rs".into(), api.api),
        (
            "kernel_checks.rs".into(),
            emit_lookup::kernel_checks(plan, opts),
        ),
        ("schema.rs".into(), all),
    ]
    .into_iter()
    .chain(kernels.map(|k| ("kernels.rs".to_string(), k)))
    .collect())
}

/// `kernels.rs` ([`emit_kernels`]) for the runtime, which includes it in
/// `kernels::composite`. A crate without kernels (`Build::no_kernels`) gets
/// none; a crate with kernels of its own whose schema needs generated ones
/// (an `autogen:` line, a `view_copy` entry) is an error at each such operator:
/// the generator writes them only into the runtime.
fn generated_kernels(plan: &lower::Plan, opts: &Options) -> Result<Option<String>, Diagnostics> {
    if opts.runtime {
        return emit_kernels::kernels(plan).map(Some);
    }
    if opts.kernels_module.is_none() {
        return Ok(None);
    }
    let diags: Vec<_> = plan
        .ops
        .iter()
        .enumerate()
        .filter(|(_, o)| o.generated.is_some())
        .map(|(i, o)| {
            plan.diagnostic(
                i,
                format!(
                    "`{}` needs a generated kernel (`autogen:` or `view_copy`), which the generator writes only into the runtime: write the operator's variants as entries with kernels of your own",
                    o.entry.name()
                ),
            )
        })
        .collect();
    if diags.is_empty() {
        Ok(None)
    } else {
        Err(Diagnostics(diags))
    }
}

/// `schema.rs`: the file `opforge::include_schema!()` includes, which
/// includes the others, the typed API in a module `generated`. With
/// `autograd` (a derivatives file, and its helpers' module if any), the
/// generated Autograd kernels and node types go into `generated::autograd`,
/// where a formula's `at::` is the runtime's typed API, `Scalar` the
/// runtime's, and the helpers' `pub fn`s are in scope by name (the kernels
/// name the crate's own `at` by its path, [`Options::at_from_autograd`]).
fn schema_file(plan: &lower::Plan, autograd: Option<Option<&str>>) -> String {
    let autograd = match autograd {
        None => String::new(),
        Some(helpers) => {
            let helpers = helpers
                .map(|m| format!("        #[allow(unused_imports)]\n        use {m}::*;\n"))
                .unwrap_or_default();
            format!(
                "\n    /// The Autograd kernels and node types generated from the crate's\n    /// derivatives file (`opforge_codegen::Build::derivatives`).\n    #[allow(non_snake_case, clippy::too_many_arguments)]\n    pub mod autograd {{\n        #[allow(unused_imports)]\n        use ::opforge::autograd::formulas::Sizes;\n        #[allow(unused_imports)]\n        use ::opforge::{{at, Scalar}};\n        use super::sig;\n{helpers}\n        include!(\"autograd.rs\");\n    }}\n"
            )
        }
    };
    format!(
        "// @generated by opforge-codegen — do not edit.\n// Everything generated from {}: `opforge::include_schema!()` includes this file\n// at the top of a crate's lib.rs.\n\ninclude!(\"schema_macro.rs\");\n\n/// The tables and typed API generated from the crate's schema file (PyTorch's schemas return tuples of up to ten).\n#[allow(clippy::type_complexity)]\npub mod generated {{\n    include!(\"tables.rs\");\n\n    /// Every operator overload, with every argument, dispatched without the\n    /// function-level override protocol (C++'s `at::`), and the kernels'\n    /// signature types.\n    #[allow(non_snake_case, clippy::too_many_arguments)]\n    pub mod at {{\n        include!(\"at.rs\");\n    }}\n    pub use at::{{operator, sig}};\n\n    include!(\"api.rs\");\n{autograd}}}\n\ninclude!(\"kernel_checks.rs\");\n",
        file_name(plan.file)
    )
}

fn file_name(path: &str) -> String {
    Path::new(path)
        .file_name()
        .map_or(path.into(), |f| f.to_string_lossy().into_owned())
}

/// The generator as a build script runs it: reads the crate's schema file (and a
/// `tags.yaml` and `deprecated.yaml` beside it, if present), writes the
/// generated files into `$OUT_DIR/opforge/`, tells cargo to rerun when they
/// change, and tells the registration macros that this crate has a schema of its
/// own. A schema file with problems fails the build with every diagnostic,
/// `file:line:col: entry: message`.
///
/// ```no_run
/// // build.rs of a crate with its own native_functions.yaml: fn main() {
/// opforge_codegen::Build::new("native_functions.yaml")
///     .kernels("crate::kernels") // where `dispatch:` kernels live (the default)
///     .run();
/// // }
/// ```
#[derive(Clone, Debug)]
pub struct Build {
    yaml: PathBuf,
    opts: Options,
    /// The derivatives file and the helpers' file, relative to the package
    /// directory.
    derivatives: Option<PathBuf>,
    helpers: Option<PathBuf>,
}

impl Build {
    /// The schema file, relative to the crate's manifest directory.
    pub fn new(yaml: impl AsRef<Path>) -> Build {
        let name = std::env::var("CARGO_PKG_NAME").unwrap_or_else(|_| "opforge".into());
        Build {
            yaml: yaml.as_ref().to_path_buf(),
            opts: Options {
                runtime: false,
                crate_name: name.replace('-', "_"),
                kernels_module: Some("crate::kernels".into()),
            },
            derivatives: None,
            helpers: None,
        }
    }

    /// A derivatives file (PyTorch's `derivatives.yaml` format, each formula
    /// a Rust expression), relative to the manifest directory: `autograd.rs`
    /// is generated from it, one node type per entry (`ScaleBackward0`) and
    /// one Autograd kernel per operator it gives formulas (with its in-place
    /// and out= variants), registered for the crate's own operators. A
    /// formula calls the runtime's operators as `at::…` (`at::mul_Tensor`),
    /// the runtime's helpers by path (`opforge::autograd::formulas::sum_to`),
    /// the crate's own operators as `crate::at::…` (or wherever the crate
    /// re-exports `generated::at`), and the helpers of
    /// [`derivative_helpers`](Build::derivative_helpers) by name. Every
    /// problem (an entry for an operator the schema file does not have, a
    /// formula naming an unknown argument, …) fails the build with its file
    /// and line.
    ///
    /// ```no_run
    /// // build.rs: fn main() {
    /// opforge_codegen::Build::new("native_functions.yaml")
    ///     .derivatives("derivatives.yaml")
    ///     .run();
    /// // }
    /// ```
    pub fn derivatives(mut self, yaml: impl AsRef<Path>) -> Build {
        self.derivatives = Some(yaml.as_ref().to_path_buf());
        self
    }

    /// The Rust file, relative to the manifest directory and under `src/`,
    /// whose `pub fn`s the derivatives file's formulas may call by their
    /// names; its module path is its place there (`src/formulas.rs` is
    /// `crate::formulas`, which the crate declares: `mod formulas;`).
    pub fn derivative_helpers(mut self, file: impl AsRef<Path>) -> Build {
        self.helpers = Some(file.as_ref().to_path_buf());
        self
    }

    /// The module the `dispatch:` kernel paths are relative to (default
    /// `crate::kernels`).
    pub fn kernels(mut self, module: &str) -> Build {
        self.opts.kernels_module = Some(module.to_string());
        self
    }

    /// The `dispatch:` kernel names are not Rust paths (PyTorch's own file):
    /// nothing checks them, and kernels are registered only by `#[kernel]`.
    pub fn no_kernels(mut self) -> Build {
        self.opts.kernels_module = None;
        self
    }

    /// The crate's name as Rust writes it (default: the package name with `-`
    /// as `_`); set it if the library target is named otherwise.
    pub fn crate_name(mut self, name: &str) -> Build {
        self.opts.crate_name = name.to_string();
        self
    }

    /// Generating the runtime (`opforge`) itself.
    #[doc(hidden)]
    pub fn runtime(mut self) -> Build {
        self.opts.runtime = true;
        self.opts.crate_name = "opforge".into();
        self
    }

    /// The generated files, or every problem found.
    pub fn generate(&self) -> Result<Files, Diagnostics> {
        let dir =
            std::env::var("CARGO_MANIFEST_DIR").map_or_else(|_| PathBuf::new(), PathBuf::from);
        let yaml = dir.join(&self.yaml);
        let tags = yaml.with_file_name("tags.yaml");
        let helpers = match &self.helpers {
            Some(file) => {
                let module = match self.opts.runtime {
                    true => "crate::autograd::formulas".to_string(),
                    false => module_path(file)?,
                };
                Some(Helpers {
                    file: dir.join(file),
                    module,
                })
            }
            None => None,
        };
        let derivatives = match (&self.derivatives, helpers) {
            (Some(d), helpers) => Some(Derivatives {
                yaml: dir.join(d),
                helpers,
            }),
            (None, None) => None,
            (None, Some(h)) => {
                return Err(Diagnostics(vec![opforge_schema::diag::Diagnostic::new(
                    &h.file.display().to_string(),
                    0,
                    "derivative helpers without a derivatives file: call `Build::derivatives` too",
                )]))
            }
        };
        generate_all(
            &yaml,
            tags.exists().then_some(tags.as_path()),
            &self.opts,
            derivatives.as_ref(),
        )
    }

    /// What the build script watches (`cargo:rerun-if-changed`), relative to
    /// the package directory `dir`: the YAML, the derivatives file and its
    /// helpers, and `tags.yaml` / `deprecated.yaml` beside the YAML only if
    /// they exist (Cargo takes a missing path for a changed one, so watching
    /// one would rerun the generator and recompile the crate on every build).
    /// To notice one of those two appearing, the YAML's directory is watched
    /// when it is a directory of its own; beside the package's `Cargo.toml`
    /// it is not (Cargo scans a watched directory whole, `target/`
    /// included), and a new `tags.yaml` there is picked up at the next
    /// change to the YAML.
    pub fn watched(&self, dir: &Path) -> Vec<PathBuf> {
        let yaml = dir.join(&self.yaml);
        let mut paths = vec![yaml.clone()];
        let beside = ["tags.yaml", "deprecated.yaml"].map(|f| yaml.with_file_name(f));
        paths.extend(beside.iter().filter(|p| p.exists()).cloned());
        if let Some(parent) = yaml.parent() {
            let own = parent != dir && parent != Path::new("");
            if own && !beside.iter().all(|p| p.exists()) {
                paths.push(parent.to_path_buf());
            }
        }
        paths.extend(
            [&self.derivatives, &self.helpers]
                .into_iter()
                .flatten()
                .map(|p| dir.join(p)),
        );
        paths
    }

    /// Runs in a build script: writes the files, or reports every diagnostic
    /// once, as Cargo errors ([`cargo_errors`]), which fail the build.
    pub fn run(self) {
        let dir =
            std::env::var("CARGO_MANIFEST_DIR").map_or_else(|_| PathBuf::new(), PathBuf::from);
        for path in self.watched(&dir) {
            println!("cargo:rerun-if-changed={}", path.display());
        }
        println!(
            "cargo:rustc-env=OPFORGE_SCHEMA_CRATE={}",
            self.opts.crate_name
        );
        let out = match std::env::var("OUT_DIR") {
            Ok(d) => PathBuf::from(d).join("opforge"),
            Err(_) => {
                eprintln!(
                    "opforge_codegen::Build::run: OUT_DIR is not set (run it from a build script)"
                );
                std::process::exit(1);
            }
        };
        match self.generate() {
            Ok(files) => {
                if let Err(e) = std::fs::create_dir_all(&out) {
                    eprintln!("cannot create {}: {e}", out.display());
                    std::process::exit(1);
                }
                for (name, text) in files {
                    let path = out.join(&name);
                    // Unchanged files keep their timestamps (no needless rebuilds).
                    if std::fs::read_to_string(&path).ok().as_deref() == Some(text.as_str()) {
                        continue;
                    }
                    if let Err(e) = std::fs::write(&path, text) {
                        eprintln!("cannot write {}: {e}", path.display());
                        std::process::exit(1);
                    }
                }
            }
            Err(diags) => print!("{}", cargo_errors(&diags)),
        }
    }
}

/// `diags` as build-script directives: one `cargo::error=` per line, so Cargo
/// prints each diagnostic once, as an error, and fails the build (a script
/// that printed them as warnings and to stderr, then exited with status 1,
/// had each shown three times).
///
/// ```
/// use opforge_schema::diag::{Diagnostic, Diagnostics};
/// let d = Diagnostics(vec![Diagnostic::new("f.yaml", 3, "unknown type `Tensr`")]);
/// let text = opforge_codegen::cargo_errors(&d);
/// assert!(text.lines().all(|l| l.starts_with("cargo::error=")), "{text}");
/// assert_eq!(text.matches("Tensr").count(), 1);
/// ```
pub fn cargo_errors(diags: &Diagnostics) -> String {
    diags
        .to_string()
        .lines()
        .map(|line| format!("cargo::error={line}\n"))
        .collect()
}
