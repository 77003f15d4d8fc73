//! `opforge-codegen` on PyTorch's own schema file and on the runtime's (the
//! command line's own tests use a fixture; see `codegen/tests/cli.rs`).

use opforge_codegen::cli::{run, Outcome};

fn cli(args: &[&str]) -> Outcome {
    run(&args.iter().map(|s| s.to_string()).collect::<Vec<_>>())
}

fn path(p: std::path::PathBuf) -> String {
    p.display().to_string()
}

fn runtime_yaml() -> String {
    path(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../runtime/native_functions.yaml"))
}

#[test]
fn check_summarises_pytorchs_file_and_ours() {
    let ours = opforge_schema::load::load_str(
        "native_functions.yaml",
        &opforge_tests::read(std::path::Path::new(&runtime_yaml())),
    )
    .unwrap()
    .entries
    .len();
    for (file, n) in [
        (path(opforge_tests::pytorch("native_functions.yaml")), 2590),
        (runtime_yaml(), ours),
    ] {
        let o = cli(&["check", &file]);
        assert_eq!(o.code, 0, "{}", o.stderr);
        assert_eq!(o.stdout.lines().count(), 1, "{}", o.stdout);
        assert!(o.stdout.starts_with("ok: "), "{}", o.stdout);
        assert!(o.stdout.contains(&format!("{n} operators")), "{}", o.stdout);
        assert!(o.stdout.contains("tags checked against 20"), "{}", o.stdout);
    }
}

#[test]
fn show_lists_every_overload_of_a_pytorch_name() {
    let o = cli(&[
        "show",
        &path(opforge_tests::pytorch("native_functions.yaml")),
        "add",
    ]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(o.stdout.contains("add.Scalar\n") && o.stdout.contains("add.out\n"));
}

#[test]
fn signatures_match_the_recorded_pytorch_bindings() {
    let o = cli(&[
        "signatures",
        &path(opforge_tests::pytorch("native_functions.yaml")),
    ]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let got: serde_json::Map<String, serde_json::Value> = serde_json::from_str(&o.stdout).unwrap();
    let want: serde_json::Map<String, serde_json::Value> = serde_json::from_str(
        &opforge_tests::read(&opforge_tests::corpus("api_signatures.json")),
    )
    .unwrap();
    let same = want.iter().filter(|(k, v)| got.get(*k) == Some(v)).count();
    assert_eq!(same, want.len());
}
