//! `--plugin-dir` and plugin tables end to end (issue 25): the real binary, its log, and
//! kubectl as the client, with the components `plugins/build.sh` built (`plugins/dist/`).
#![allow(clippy::unwrap_used, reason = "test code: a panic is the failure")]

use std::path::PathBuf;
use std::time::Duration;

use wasmgate_e2e::{Gateway, assert_contains, examples_dir, gateway_builder, poll, table};

/// A component built by `plugins/build.sh`.
fn dist(name: &str) -> PathBuf {
    let p = examples_dir()
        .join("../plugins/dist")
        .join(format!("{name}.wasm"));
    assert!(
        p.is_file(),
        "{} is missing: build the plugins first (bash plugins/build.sh)",
        p.display()
    );
    p
}

fn manifest(name: &str, module: &str, extra: &str) -> String {
    format!(
        "apiVersion: wasmgate.dev/v1alpha1\nkind: WasmPlugin\nmetadata:\n  name: {name}\nspec:\n  module: {{path: {module}}}\n  groups: [example.com]\n  resources: [widgets]\n{extra}"
    )
}

fn wait_loaded(gw: &Gateway, name: &str) {
    poll(
        &format!("WasmPlugin {name} loaded"),
        Duration::from_secs(30),
        || {
            let out = gw.kubectl(&[
                "get",
                "wasmplugin",
                name,
                "-o",
                r#"jsonpath={.status.conditions[?(@.type=="Ready")].status}"#,
            ]);
            (String::from_utf8_lossy(&out.stdout) == "True").then_some(())
        },
    );
}

/// How many lines of the gateway's log contain `text`.
fn logged(gw: &Gateway, text: &str) -> usize {
    gw.stderr_tail(100_000)
        .lines()
        .filter(|l| l.contains(text))
        .count()
}

/// Issue 25 item 7: a manifest with a typo (`hoks: [validate]`) is refused with kube's
/// strict decoding error instead of loading with every hook; a manifest that is not YAML
/// is reported; each problem is logged once, not every second.
#[test]
fn plugin_dir_manifests_are_strict_and_their_problems_logged_once() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(dist("widgets"), dir.path().join("widgets.wasm")).unwrap();
    std::fs::write(
        dir.path().join("widgets.yaml"),
        manifest("widgets", "widgets.wasm", ""),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("typo.yaml"),
        manifest("typo", "widgets.wasm", "  hoks: [validate]\n"),
    )
    .unwrap();
    std::fs::write(dir.path().join("broken.yaml"), "kind: [WasmPlugin\n").unwrap();
    let gw = gateway_builder!().plugin_dir(dir.path()).start();
    wait_loaded(&gw, "widgets");
    // Several scans (one a second) later: each problem once.
    std::thread::sleep(Duration::from_secs(4));
    assert_eq!(
        logged(&gw, r#"strict decoding error: unknown field "spec.hoks""#),
        1,
        "{}",
        gw.stderr_tail(40)
    );
    assert_eq!(logged(&gw, "broken.yaml"), 1, "{}", gw.stderr_tail(40));
    let err = gw.kubectl_err(&["get", "wasmplugin", "typo"]);
    assert_contains(&err, &["NotFound"]);
    // Fixed: applied, with the hook asked for.
    std::fs::write(
        dir.path().join("typo.yaml"),
        manifest("typo", "widgets.wasm", "  hooks: [validate]\n"),
    )
    .unwrap();
    wait_loaded(&gw, "typo");
    assert_eq!(
        gw.kubectl_ok(&[
            "get",
            "wasmplugin",
            "typo",
            "-o",
            "jsonpath={.status.hooks}"
        ]),
        "validate"
    );
}

/// Issue 25 item 7: a plugin directory that does not exist is warned about once at start,
/// and its manifests are applied once it is created.
#[test]
fn a_missing_plugin_dir_is_warned_about_once() {
    let parent = tempfile::tempdir().unwrap();
    let dir = parent.path().join("plugins");
    let gw = gateway_builder!().plugin_dir(&dir).start();
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(
        logged(&gw, "the plugin directory does not exist"),
        1,
        "{}",
        gw.stderr_tail(40)
    );
    std::fs::create_dir(&dir).unwrap();
    std::fs::copy(dist("widgets"), dir.join("widgets.wasm")).unwrap();
    std::fs::write(
        dir.join("widgets.yaml"),
        manifest("widgets", "widgets.wasm", ""),
    )
    .unwrap();
    wait_loaded(&gw, "widgets");
}

/// Issue 25 item 8: the widgets printer's `date` column (it gives the creation timestamp)
/// is shown as an age, as kubectl shows a CRD's `date` columns.
#[test]
fn a_printer_plugins_date_column_shows_ages() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(dist("widgets"), dir.path().join("widgets.wasm")).unwrap();
    std::fs::write(
        dir.path().join("widgets.yaml"),
        manifest("widgets", "widgets.wasm", ""),
    )
    .unwrap();
    let gw = gateway_builder!().plugin_dir(dir.path()).start();
    wait_loaded(&gw, "widgets");
    gw.kubectl_ok(&[
        "apply",
        "-f",
        &examples_dir().join("crds/widgets.yaml").to_string_lossy(),
    ]);
    gw.kubectl_ok(&[
        "apply",
        "-f",
        &examples_dir().join("widgets/w1.yaml").to_string_lossy(),
    ]);
    let t = table(&gw.kubectl_ok(&["get", "widgets"]));
    assert_eq!(t[0].last().unwrap(), "AGE");
    let age = t[1].last().unwrap();
    assert!(
        age.ends_with('s') && age[..age.len() - 1].parse::<u32>().is_ok(),
        "{t:?}"
    );
}
