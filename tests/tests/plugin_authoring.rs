//! Writing a plugin outside this repository (issue 25 items 9 and 10), as the README's
//! tutorial does it: `wasmgate plugin new` in a temporary directory outside the clone,
//! `cargo test` there, `wasmgate plugin build`, `wasmgate plugin test` and `plugin run`
//! on the testdata the template wrote, then `kubectl apply -f` of its manifest into a
//! gateway, which denies a request with the plugin's message.
//!
//! The generated crates build in `<target dir>/plugin-authoring` (the target directory
//! is `CARGO_TARGET_DIR`, or the one this test was built in), kept between runs so that
//! only the plugin itself compiles again. A fresh crate has no Cargo.lock: cargo writes
//! one (crates.io must be reachable, as for any build here).
#![allow(clippy::unwrap_used, reason = "test code: a panic is the failure")]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use serde_json::Value;
use wasmgate_e2e::{assert_contains, gateway_builder, poll, run_with_timeout};

/// The binary under test (`wasmgate plugin …` is part of it).
const WASMGATE: &str = env!("CARGO_BIN_EXE_wasmgate-under-test");
/// A cold cargo build of a plugin (its dependencies too) on two shared cores.
const BUILD_TIMEOUT: Duration = Duration::from_secs(20 * 60);

/// Where generated plugin crates build: a directory of the target directory of this
/// workspace, not of the workspace's own builds (a cargo running the tests holds its
/// lock on those).
fn plugin_target_dir() -> PathBuf {
    let target = match std::env::var_os("CARGO_TARGET_DIR") {
        Some(t) => PathBuf::from(t),
        // <target>/debug/deps/plugin_authoring-HASH
        None => std::env::current_exe()
            .unwrap()
            .ancestors()
            .nth(3)
            .unwrap()
            .to_path_buf(),
    };
    target.join("plugin-authoring")
}

/// A command in `dir` with the plugin target directory.
fn command(program: &str, dir: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(program);
    c.args(args)
        .current_dir(dir)
        .env("CARGO_TARGET_DIR", plugin_target_dir())
        .env("CARGO_TERM_COLOR", "never")
        .env("NO_COLOR", "1");
    c
}

fn cargo() -> String {
    std::env::var("CARGO").unwrap_or_else(|_| "cargo".into())
}

#[track_caller]
fn ok(what: &str, out: &Output) -> String {
    assert!(
        out.status.success(),
        "{what} failed ({})\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A directory outside the repository (the system's temporary directory).
fn outside_the_repo() -> tempfile::TempDir {
    let dir = tempfile::Builder::new()
        .prefix("wasmgate-authoring-")
        .tempdir()
        .unwrap();
    let repo = wasmgate_e2e::manifest_dir()
        .join("..")
        .canonicalize()
        .unwrap();
    assert!(
        !dir.path().starts_with(&repo),
        "{} is inside the repository",
        dir.path().display()
    );
    dir
}

/// `wasmgate plugin new NAME ARGS…` in `dir`, `cargo test` and `cargo fmt --check` in the
/// new crate, `wasmgate plugin build` (whose last stdout line is `SHA256  PATH`), and
/// `wasmgate plugin test` of its testdata; returns the crate's directory, the module and
/// the test report.
fn new_test_build(dir: &Path, name: &str, args: &[&str]) -> (PathBuf, PathBuf, String) {
    let mut new = vec!["plugin", "new", name];
    new.extend_from_slice(args);
    let out = ok(
        "plugin new",
        &run_with_timeout(command(WASMGATE, dir, &new), BUILD_TIMEOUT),
    );
    let crate_dir = dir.join(name).canonicalize().unwrap();
    assert_contains(&out, &[&format!("created {}", crate_dir.display())]);
    for f in [
        "Cargo.toml",
        "src/lib.rs",
        &format!("{name}.yaml"),
        "README.md",
    ] {
        assert!(crate_dir.join(f).is_file(), "{f} missing");
    }

    let tested = ok(
        "cargo test",
        &run_with_timeout(command(&cargo(), &crate_dir, &["test"]), BUILD_TIMEOUT),
    );
    assert_contains(&tested, &["test result: ok."]);
    ok(
        "cargo fmt --check",
        &run_with_timeout(
            command(&cargo(), &crate_dir, &["fmt", "--check"]),
            BUILD_TIMEOUT,
        ),
    );

    let built = ok(
        "plugin build",
        &run_with_timeout(
            command(WASMGATE, &crate_dir, &["plugin", "build"]),
            BUILD_TIMEOUT,
        ),
    );
    let module = crate_dir.join(format!("{}.wasm", name.replace('-', "_")));
    let last = built.lines().last().unwrap_or_default();
    let (digest, path) = last.split_once("  ").unwrap_or_default();
    assert!(
        digest.len() == 64 && digest.bytes().all(|b| b.is_ascii_hexdigit()),
        "no sha256 in {built:?}"
    );
    assert_eq!(Path::new(path), module, "{built}");
    assert!(module.is_file());

    let module_arg = module.file_name().unwrap().to_string_lossy().into_owned();
    let out = run_with_timeout(
        command(
            WASMGATE,
            &crate_dir,
            &["plugin", "test", &module_arg, "testdata"],
        ),
        BUILD_TIMEOUT,
    );
    let report = ok("plugin test", &out);
    (crate_dir, module, report)
}

/// The tutorial, end to end: the default template (a validating policy), its testdata
/// through `plugin test` and `plugin run`, then loaded into a gateway with `kubectl
/// apply`, which denies a ConfigMap labelled `my-policy=forbidden` with the plugin's
/// message and admits one labelled otherwise.
#[test]
fn a_plugin_from_plugin_new_is_tested_built_and_denies_through_the_gateway() {
    let work = outside_the_repo();
    let (crate_dir, module, report) = new_test_build(work.path(), "my-policy", &[]);
    assert_contains(
        &report,
        &["ok    allow", "ok    deny", "2 cases: 2 passed, 0 failed"],
    );

    // plugin run: the AdmissionReview answer, the plugin's Status and a timing.
    let out = run_with_timeout(
        command(
            WASMGATE,
            &crate_dir,
            &[
                "plugin",
                "run",
                "my_policy.wasm",
                "--request",
                "testdata/deny.request.yaml",
            ],
        ),
        BUILD_TIMEOUT,
    );
    let review: Value = serde_json::from_str(&ok("plugin run", &out)).unwrap();
    assert_eq!(review["kind"], "AdmissionReview");
    assert_eq!(review["response"]["allowed"], false);
    assert_eq!(review["response"]["status"]["code"], 403);
    assert_eq!(
        review["response"]["uid"],
        "0a7c6a5e-1c9e-4b6e-9d5b-000000000001"
    );
    assert_contains(
        &String::from_utf8_lossy(&out.stderr),
        &["validate took", "denied (403)"],
    );

    // Into a gateway: the manifest names the module by its absolute path.
    let gw = gateway_builder!().start();
    let manifest = crate_dir.join("my-policy.yaml");
    gw.kubectl_ok(&["apply", "-f", &manifest.to_string_lossy()]);
    poll("my-policy Ready", Duration::from_secs(60), || {
        let out = gw.kubectl(&[
            "get",
            "wasmplugin",
            "my-policy",
            "-o",
            r#"jsonpath={.status.conditions[?(@.type=="Ready")].status}"#,
        ]);
        (String::from_utf8_lossy(&out.stdout) == "True").then_some(())
    });
    let listed = gw.kubectl_ok(&["get", "wasmplugin", "my-policy", "-o", "json"]);
    let listed: Value = serde_json::from_str(&listed).unwrap();
    assert_eq!(
        listed["spec"]["module"]["path"],
        module.to_string_lossy().as_ref()
    );

    // A create of a labelled ConfigMap, and a label added to an admitted one.
    let forbidden = gw.write_file(
        "forbidden.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: demo\n  labels: {my-policy: forbidden}\n",
    );
    let message = r#"admission plugin "my-policy" denied the request: objects labelled my-policy=forbidden are not allowed"#;
    let denied = gw.kubectl_err(&["create", "-f", &forbidden.to_string_lossy()]);
    assert_contains(&denied, &["Forbidden", message]);
    gw.kubectl_ok(&["create", "configmap", "demo", "--from-literal=k=v"]);
    gw.kubectl_ok(&["label", "configmap", "demo", "my-policy=ok"]);
    let denied = gw.kubectl_err(&[
        "label",
        "--overwrite",
        "configmap",
        "demo",
        "my-policy=forbidden",
    ]);
    assert_contains(&denied, &["Forbidden", message]);
    let labels = gw.kubectl_ok(&[
        "get",
        "configmap",
        "demo",
        "-o",
        "jsonpath={.metadata.labels}",
    ]);
    assert_eq!(labels, r#"{"my-policy":"ok"}"#);
}

/// Every hook of the template (mutate, validate, convert, print) builds, passes its
/// native tests and its own testdata: the AdmissionReview, ConversionReview and Table
/// answers of `plugin run`.
#[test]
fn a_plugin_with_every_hook_passes_its_own_testdata() {
    let work = outside_the_repo();
    let (_, _, report) = new_test_build(
        work.path(),
        "every-hook",
        &["--hooks", "mutate,validate,convert,print"],
    );
    for case in ["allow", "convert", "deny", "greet", "print"] {
        assert_contains(&report, &[&format!("ok    {case}")]);
    }
    assert_contains(&report, &["5 cases: 5 passed, 0 failed"]);
}

/// The tutorial example's own testdata (`examples/plugins/hello-admission/testdata`),
/// through the component `plugins/build.sh` built.
#[test]
fn the_tutorial_example_passes_its_testdata() {
    let example = wasmgate_e2e::examples_dir().join("plugins/hello-admission");
    let module = wasmgate_e2e::examples_dir().join("../plugins/dist/hello_admission.wasm");
    assert!(
        module.is_file(),
        "{} is missing: build the plugins first (bash plugins/build.sh)",
        module.display()
    );
    let module = module.to_string_lossy().into_owned();
    let out = run_with_timeout(
        command(WASMGATE, &example, &["plugin", "test", &module, "testdata"]),
        BUILD_TIMEOUT,
    );
    let report = ok("plugin test", &out);
    assert_contains(
        &report,
        &[
            "ok    forbidden",
            "ok    greeted",
            "2 cases: 2 passed, 0 failed",
        ],
    );
}

/// What a plugin author gets wrong, answered with exit code 2 (usage) or 1 (the build or
/// the plugin failed) and a message that says what to do.
#[test]
fn mistakes_are_explained_with_their_exit_codes() {
    let work = outside_the_repo();
    let dir = work.path();
    let run = |args: &[&str]| run_with_timeout(command(WASMGATE, dir, args), BUILD_TIMEOUT);
    let stderr = |o: &Output| String::from_utf8_lossy(&o.stderr).into_owned();

    let out = run(&["plugin", "new", "My_Policy"]);
    assert_eq!(out.status.code(), Some(2));
    assert_contains(&stderr(&out), &["is not a plugin name"]);

    let out = run(&["plugin", "new", "p", "--sdk-path", "/nonexistent"]);
    assert_eq!(out.status.code(), Some(2));
    assert_contains(&stderr(&out), &["--sdk-path names the guest-sdk directory"]);
    assert!(!dir.join("p").exists());

    let out = run(&["plugin", "run", "missing.wasm", "--request", "missing.yaml"]);
    assert_eq!(out.status.code(), Some(2));
    assert_contains(&stderr(&out), &["reading missing.yaml"]);

    // Not a component: the plugin's failure.
    std::fs::write(dir.join("not.wasm"), "not wasm").unwrap();
    std::fs::write(
        dir.join("cm.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n",
    )
    .unwrap();
    let out = run(&["plugin", "run", "not.wasm", "--request", "cm.yaml"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_contains(
        &stderr(&out),
        &["cannot be served: not a WebAssembly component"],
    );

    // A crate without `crate-type = ["cdylib"]` builds no component: the build says so.
    ok("plugin new", &run(&["plugin", "new", "no-cdylib"]));
    let manifest = dir.join("no-cdylib/Cargo.toml");
    let text = std::fs::read_to_string(&manifest).unwrap();
    std::fs::write(
        &manifest,
        text.replace("crate-type = [\"cdylib\", \"rlib\"]", ""),
    )
    .unwrap();
    let out = run(&["plugin", "build", "--dir", "no-cdylib"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_contains(&stderr(&out), &["the build made no .wasm", "crate-type"]);
}
