//! Wasm plugins end to end (issue 8): the real binary with a plugin directory, kubectl as
//! the client, the components `plugins/build.sh` just built (`plugins/dist/`).
#![allow(clippy::unwrap_used, reason = "test code: a panic is the failure")]

use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use wasmgate_e2e::{Gateway, assert_contains, examples_dir, gateway_builder, poll, table};

/// Held by the tests that time the gateway (reloads served within a second) and by the one
/// that loads it with 200 concurrent requests, so that they never run at once on CI's two
/// cores.
static TIMED: Mutex<()> = Mutex::new(());

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

/// A plugin directory: `WasmPlugin` manifests and copies of their modules.
struct PluginDir {
    dir: tempfile::TempDir,
}

impl PluginDir {
    fn new() -> PluginDir {
        PluginDir {
            dir: tempfile::Builder::new()
                .prefix("wasmgate-plugins-")
                .tempdir()
                .unwrap(),
        }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// The module file of plugin `name`.
    fn module(&self, name: &str) -> PathBuf {
        self.path().join(format!("{name}.wasm"))
    }

    /// Binds `component` (a name in `plugins/dist`) as `name` with `spec` (the module
    /// path is filled in); returns the module's path.
    fn bind(&self, name: &str, component: &str, spec: Value) -> PathBuf {
        let module = self.module(name);
        std::fs::copy(dist(component), &module).unwrap();
        self.manifest(name, &module, spec);
        module
    }

    fn manifest(&self, name: &str, module: &Path, mut spec: Value) {
        spec["module"] = json!({"path": module});
        let obj = json!({
            "apiVersion": "wasmgate.dev/v1alpha1",
            "kind": "WasmPlugin",
            "metadata": {"name": name},
            "spec": spec,
        });
        std::fs::write(self.path().join(format!("{name}.yaml")), obj.to_string()).unwrap();
    }
}

fn start(plugins: &PluginDir) -> Gateway {
    gateway_builder!().plugin_dir(plugins.path()).start()
}

/// A gateway with the widgets plugin bound to the widgets of `example.com`, loaded.
fn start_with_widgets() -> (PluginDir, Gateway) {
    let plugins = PluginDir::new();
    plugins.bind(
        "widgets",
        "widgets",
        json!({"groups": ["example.com"], "resources": ["widgets"]}),
    );
    let gw = start(&plugins);
    wait_ready(&gw, "widgets", "True/Loaded");
    (plugins, gw)
}

/// The `Ready` condition of a WasmPlugin: `status/reason`.
fn ready(gw: &Gateway, name: &str) -> String {
    let out = gw.kubectl(&[
        "get",
        "wasmplugin",
        name,
        "-o",
        r#"jsonpath={.status.conditions[?(@.type=="Ready")].status}/{.status.conditions[?(@.type=="Ready")].reason}"#,
    ]);
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn wait_ready(gw: &Gateway, name: &str, want: &str) {
    poll(
        &format!("WasmPlugin {name} {want}"),
        Duration::from_secs(30),
        || (ready(gw, name) == want).then_some(()),
    );
}

fn examples(sub: &str) -> String {
    examples_dir().join(sub).to_string_lossy().into_owned()
}

/// Conversion between v1alpha1 and v1 by the widgets plugin on reads, lists, watches and
/// writes; its defaulting label, its cross-field denial and its table columns.
#[test]
fn widgets_plugin_converts_mutates_validates_and_prints() {
    let (_plugins, gw) = start_with_widgets();
    let listed = gw.kubectl_ok(&["get", "wasmplugins"]);
    let rows = table(&listed);
    assert_eq!(
        rows[0],
        ["NAME", "READY", "GROUPS", "HOOKS", "DIGEST", "AGE"]
    );
    assert_eq!(rows[1][1], "True");
    assert_eq!(rows[1][3], "mutate,validate,convert,print");
    assert_eq!(rows[1][4].len(), 64);

    gw.kubectl_ok(&["apply", "-f", &examples("crds/widgets.yaml")]);
    gw.kubectl_ok(&["apply", "-f", &examples("widgets/w1.yaml")]);
    let alpha = gw.write_file(
        "a1.yaml",
        "apiVersion: example.com/v1alpha1\nkind: Widget\nmetadata:\n  name: a1\nspec:\n  colour: green\n  replicas: 3\n  dimensions:\n    size: 4\n",
    );
    gw.kubectl_ok(&["apply", "-f", &alpha.to_string_lossy()]);

    // Read back in either version (conversion on read, CONV-01 with a plugin).
    let a1 = gw.kubectl_ok(&[
        "get",
        "widgets.v1.example.com",
        "a1",
        "-o",
        "jsonpath={.apiVersion} {.spec.color} {.spec.size} {.spec.replicas}",
    ]);
    assert_eq!(a1, "example.com/v1 green 4 3");
    let w1 = gw.kubectl_ok(&[
        "get",
        "widgets.v1alpha1.example.com",
        "w1",
        "-o",
        "jsonpath={.apiVersion} {.spec.colour} {.spec.dimensions.size} {.spec.color}",
    ]);
    assert_eq!(w1, "example.com/v1alpha1 blue 5 ");
    // A list at v1alpha1 converts every item.
    let list: Value = serde_json::from_str(&gw.kubectl_ok(&[
        "get",
        "widgets.v1alpha1.example.com",
        "-o",
        "json",
    ]))
    .unwrap();
    let colours: Vec<&str> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["spec"]["colour"].as_str().unwrap_or("?"))
        .collect();
    assert_eq!(colours, ["green", "blue"]);
    // Round trip: what v1alpha1 shows, written back at v1alpha1, changes nothing.
    let before = gw.kubectl_ok(&["get", "widget", "w1", "-o", "jsonpath={.spec}"]);
    let shown = gw.kubectl_ok(&["get", "widgets.v1alpha1.example.com", "w1", "-o", "json"]);
    let round = gw.write_file("w1-alpha.json", &shown);
    let replaced = gw.kubectl_ok(&["replace", "-f", &round.to_string_lossy()]);
    assert_contains(&replaced, &["widget.example.com/w1 replaced"]);
    assert_eq!(
        gw.kubectl_ok(&["get", "widget", "w1", "-o", "jsonpath={.spec}"]),
        before
    );

    // A watch at v1alpha1 converts each event.
    let mut watch = gw.kubectl_background(&[
        "get",
        "widgets.v1alpha1.example.com",
        "--watch-only",
        "-o",
        "jsonpath={.metadata.name}={.spec.colour}{\"\\n\"}",
    ]);
    std::thread::sleep(Duration::from_millis(500));
    gw.kubectl_ok(&["apply", "-f", &examples("widgets/w2.yaml")]);
    watch.wait_for_lines("w2 at v1alpha1", Duration::from_secs(20), |l| {
        l.iter().any(|x| x == "w2=red")
    });
    watch.kill();

    // The mutating hook's default, in either version.
    let labels = gw.kubectl_ok(&[
        "get",
        "widgets",
        "-o",
        "jsonpath={range .items[*]}{.metadata.labels.example\\.com/color} {end}",
    ]);
    assert_eq!(labels, "green blue red ");
    assert_contains(
        &gw.kubectl_ok(&["get", "widget", "w1", "-o", "yaml"]),
        &["example.com/color: blue"],
    );

    // The printer's columns, with the computed capacity.
    let t = table(&gw.kubectl_ok(&["get", "widgets"]));
    assert_eq!(
        t[0],
        ["NAME", "COLOR", "REPLICAS", "SIZE", "CAPACITY", "AGE"]
    );
    let w1row = t.iter().find(|r| r[0] == "w1").unwrap();
    assert_eq!(&w1row[1..5], ["blue", "2", "5", "10"]);
    let a1row = t.iter().find(|r| r[0] == "a1").unwrap();
    assert_eq!(&a1row[1..5], ["green", "3", "4", "12"]);

    // A denial: kubectl prints the plugin's message and its causes.
    let big = gw.write_file(
        "big.yaml",
        "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: big\nspec:\n  color: red\n  size: 9\n  replicas: 6\n",
    );
    let big_path = big.to_string_lossy();
    for args in [
        &["apply", "-f", &big_path][..],
        &["create", "-f", &big_path],
        &["apply", "--server-side", "-f", &big_path],
    ] {
        let err = gw.kubectl_err(args);
        assert_contains(
            &err,
            &[
                "Error from server (Forbidden)",
                "admission plugin \"widgets\" denied the request: a widget of size 9 runs at most 5 replicas, not 6: spec.replicas: must be at most 5 when spec.size is 8 or more",
            ],
        );
    }
    // The causes are in the Status too.
    let denied = gw.request(
        "POST",
        "/apis/example.com/v1/namespaces/default/widgets",
        "application/yaml",
        Some(&std::fs::read_to_string(&big).unwrap()),
    );
    let status = denied.expect_status(403);
    assert_eq!(status["reason"], "Forbidden");
    assert_eq!(status["details"]["causes"][0]["field"], "spec.replicas");
    assert_eq!(status["details"]["name"], "big");
    gw.kubectl_err(&["get", "widget", "big"]);
    // Server-side apply goes through the same hooks, with the merged object (SSA-01).
    let ssa = gw.write_file(
        "ssa.yaml",
        "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: ssa\nspec:\n  color: red\n  size: 2\n  replicas: 1\n",
    );
    gw.kubectl_ok(&["apply", "--server-side", "-f", &ssa.to_string_lossy()]);
    gw.kubectl_ok(&[
        "patch",
        "widget",
        "ssa",
        "--type=merge",
        "-p",
        r#"{"spec":{"size":9}}"#,
    ]);
    // The applier no longer owns size (the patch took it): leaving it out keeps 9, and
    // the plugin judges 6 replicas against the merged size.
    let err = gw.kubectl_err(&[
        "apply",
        "--server-side",
        "-f",
        &gw.write_file(
            "ssa2.yaml",
            "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: ssa\nspec:\n  color: red\n  replicas: 6\n",
        )
        .to_string_lossy(),
    ]);
    assert_contains(
        &err,
        &[
            "denied the request",
            "a widget of size 9 runs at most 5 replicas, not 6",
        ],
    );
    assert_eq!(
        gw.kubectl_ok(&[
            "get",
            "widget",
            "ssa",
            "-o",
            "jsonpath={.metadata.labels.example\\.com/color} {.spec.size}",
        ]),
        "red 9"
    );
    // Dry runs go through admission too.
    let err = gw.kubectl_err(&["apply", "--dry-run=server", "-f", &big.to_string_lossy()]);
    assert_contains(&err, &["denied the request"]);
}

/// Plugins see a custom resource at its storage version whatever version the client
/// wrote (issue 8 item 4): `request.kind` and the objects at v1, `requestKind` the
/// client's. The widgets plugin reads v1's fields only, so its default and its denial
/// reaching a v1alpha1 write prove the conversion before the plugins.
#[test]
fn plugins_see_the_storage_version() {
    let (plugins, gw) = start_with_widgets();
    gw.kubectl_ok(&["apply", "-f", &examples("crds/widgets.yaml")]);
    let alpha = gw.write_file(
        "a1.yaml",
        "apiVersion: example.com/v1alpha1\nkind: Widget\nmetadata:\n  name: a1\nspec:\n  colour: green\n  replicas: 6\n  dimensions:\n    size: 2\n",
    );
    gw.kubectl_ok(&["create", "-f", &alpha.to_string_lossy()]);
    // The mutating hook's label, set on the v1 form and converted back.
    assert_eq!(
        gw.kubectl_ok(&[
            "get",
            "widgets.v1alpha1.example.com",
            "a1",
            "-o",
            "jsonpath={.metadata.labels.example\\.com/color} {.spec.colour}",
        ]),
        "green green"
    );
    // The validating hook judges v1's `spec.size` of a v1alpha1 update.
    let err = gw.kubectl_err(&[
        "patch",
        "widgets.v1alpha1.example.com",
        "a1",
        "--type=merge",
        "-p",
        r#"{"spec":{"dimensions":{"size":9}}}"#,
    ]);
    assert_contains(
        &err,
        &[
            "admission plugin \"widgets\" denied the request: a widget of size 9 runs at most 5 replicas, not 6",
        ],
    );

    // An object written while v1alpha1 was the storage version still lies at v1alpha1.
    let switch = |to_alpha: bool| {
        let patch = json!([
            {"op": "replace", "path": "/spec/versions/0/storage", "value": !to_alpha},
            {"op": "replace", "path": "/spec/versions/1/storage", "value": to_alpha},
        ]);
        gw.kubectl_ok(&[
            "patch",
            "crd",
            "widgets.example.com",
            "--type=json",
            "-p",
            &patch.to_string(),
        ]);
    };
    switch(true);
    let b0 = gw.write_file(
        "b0.yaml",
        "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: b0\nspec:\n  color: blue\n",
    );
    gw.kubectl_ok(&["create", "-f", &b0.to_string_lossy()]);
    switch(false);

    // What the plugins are sent, as a validating plugin reports it.
    plugins.bind(
        "describe",
        "hostile",
        json!({"groups": ["example.com"], "hooks": ["validate"], "config": {"mode": "describe"}}),
    );
    wait_ready(&gw, "describe", "True/Loaded");
    let b1 = gw.write_file(
        "b1.yaml",
        "apiVersion: example.com/v1alpha1\nkind: Widget\nmetadata:\n  name: b1\nspec:\n  colour: red\n",
    );
    let err = gw.kubectl_err(&["create", "-f", &b1.to_string_lossy()]);
    assert_contains(
        &err,
        &[
            "kind=example.com/v1/Widget requestKind=example.com/v1alpha1/Widget object=example.com/v1 oldObject=-",
        ],
    );
    // An update and a delete at v1alpha1: the old object too is sent at v1, also the one
    // written under the earlier storage version (b0).
    for name in ["a1", "b0"] {
        let err = gw.kubectl_err(&["label", "widgets.v1alpha1.example.com", name, "x=y"]);
        assert_contains(
            &err,
            &[
                "kind=example.com/v1/Widget requestKind=example.com/v1alpha1/Widget object=example.com/v1 oldObject=example.com/v1\n",
            ],
        );
        let err = gw.kubectl_err(&["delete", "widgets.v1alpha1.example.com", name]);
        assert_contains(
            &err,
            &["requestKind=example.com/v1alpha1/Widget object=- oldObject=example.com/v1\n"],
        );
    }
    // At the storage version, nothing is converted.
    let err = gw.kubectl_err(&["label", "widget", "a1", "x=y"]);
    assert_contains(
        &err,
        &[
            "kind=example.com/v1/Widget requestKind=example.com/v1/Widget object=example.com/v1 oldObject=example.com/v1\n",
        ],
    );
}

/// The core-group policy: ConfigMaps in namespaces labelled policy=strict need an owner.
#[test]
fn core_policy_binds_by_namespace_labels() {
    let plugins = PluginDir::new();
    plugins.bind(
        "core-policy",
        "core_policy",
        json!({"groups": [""], "resources": ["configmaps"], "operations": ["CREATE", "UPDATE"],
               "namespaceSelector": {"matchLabels": {"policy": "strict"}}}),
    );
    let gw = start(&plugins);
    wait_ready(&gw, "core-policy", "True/Loaded");
    gw.kubectl_ok(&["create", "namespace", "strict"]);
    gw.kubectl_ok(&["label", "namespace", "strict", "policy=strict"]);
    let err = gw.kubectl_err(&["-n", "strict", "create", "configmap", "c"]);
    assert_contains(
        &err,
        &[
            "admission plugin \"core-policy\" denied the request: ConfigMap \"c\" needs an owner label in this namespace",
        ],
    );
    let owned = gw.write_file(
        "owned.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  namespace: strict\n  labels:\n    owner: me\n",
    );
    gw.kubectl_ok(&["apply", "-f", &owned.to_string_lossy()]);
    // Other namespaces and other resources are not bound.
    gw.kubectl_ok(&["create", "configmap", "free"]);
    gw.kubectl_ok(&["-n", "strict", "create", "secret", "generic", "s"]);
    // Deletes are not in the binding's operations.
    gw.kubectl_ok(&["-n", "strict", "delete", "configmap", "c"]);
}

/// Each hostile fixture fails its own requests only, within its timeout, and the
/// gateway's memory stays bounded; bad modules and bad specs are refused with a reason.
#[test]
fn hostile_plugins_fail_only_their_own_requests() {
    let plugins = PluginDir::new();
    let modes = [
        "loop",
        "memory",
        "trap",
        "invalid-json",
        "giant",
        "read-file",
        "socket",
        "rename",
    ];
    for mode in modes {
        // The giant output needs room and time to be built; the others get the minimum.
        let (memory, timeout) = if mode == "giant" {
            (128, 5000)
        } else {
            (16, 100)
        };
        plugins.bind(
            &format!("hostile-{mode}"),
            "hostile",
            json!({"groups": [""], "resources": ["configmaps"],
                   "objectSelector": {"matchLabels": {"hostile": mode}},
                   "timeoutMilliseconds": timeout, "memoryLimitMiB": memory,
                   "config": {"mode": mode}}),
        );
    }
    plugins.bind(
        "hostile-ignored",
        "hostile",
        json!({"groups": [""], "resources": ["configmaps"], "failurePolicy": "Ignore",
               "objectSelector": {"matchLabels": {"hostile": "ignored"}},
               "config": {"mode": "trap"}}),
    );
    plugins.bind(
        "hostile-invalid-object",
        "hostile",
        json!({"groups": ["example.com"], "objectSelector": {"matchLabels": {"hostile": "invalid-object"}},
               "config": {"mode": "invalid-object"}}),
    );
    // Modules that cannot serve.
    plugins.bind("wrong-wit", "wrong_wit", json!({"groups": ["x"]}));
    plugins.bind(
        "self-test",
        "hostile",
        json!({"groups": ["x"], "config": {"mode": "info-trap"}}),
    );
    plugins.bind(
        "no-convert",
        "core_policy",
        json!({"groups": ["x"], "hooks": ["convert"]}),
    );
    let junk = plugins.module("junk");
    std::fs::write(&junk, b"this is not WebAssembly").unwrap();
    plugins.manifest("junk", &junk, json!({"groups": ["x"]}));
    plugins.manifest(
        "missing",
        &plugins.path().join("nowhere.wasm"),
        json!({"groups": ["x"]}),
    );
    let gw = start(&plugins);
    for mode in modes {
        wait_ready(&gw, &format!("hostile-{mode}"), "True/Loaded");
    }
    wait_ready(&gw, "wrong-wit", "False/WrongContract");
    wait_ready(&gw, "self-test", "False/SelfTestFailed");
    wait_ready(&gw, "no-convert", "False/HookNotImplemented");
    wait_ready(&gw, "junk", "False/InvalidModule");
    wait_ready(&gw, "missing", "False/ModuleNotFound");
    let msg = gw.kubectl_ok(&[
        "get",
        "wasmplugin",
        "wrong-wit",
        "-o",
        "jsonpath={.status.conditions[0].message}",
    ]);
    assert_contains(&msg, &["does not implement wasmgate:plugin@0.1.0"]);

    let client = gw.client();
    let create = |name: &str, mode: Option<&str>| {
        let labels = mode.map_or(json!({}), |m| json!({"hostile": m}));
        let body = json!({"metadata": {"name": name, "labels": labels}, "data": {"k": "v"}});
        let started = Instant::now();
        let r = client.request(
            "POST",
            "/api/v1/namespaces/default/configmaps",
            "application/json",
            Some(&body.to_string()),
        );
        (r, started.elapsed())
    };
    let rss_before = gw.memory_kib("VmRSS").unwrap();
    let expect: [(&str, u16, &str); 8] = [
        (
            "loop",
            500,
            "failed calling plugin \"hostile-loop\": timed out after 100ms",
        ),
        (
            "memory",
            500,
            "failed calling plugin \"hostile-memory\": ran out of memory",
        ),
        ("trap", 500, "hostile plugin panics on purpose"),
        ("invalid-json", 500, "the mutated object is not JSON"),
        ("giant", 500, "more than the 3145728 allowed"),
        ("read-file", 403, "read-file: refused"),
        ("socket", 403, "socket: refused"),
        (
            "rename",
            500,
            "plugin \"hostile-rename\" changed metadata.name",
        ),
    ];
    for round in 0..3 {
        for (mode, code, text) in expect {
            let (r, took) = create(&format!("{mode}-{round}"), Some(mode));
            assert_eq!(r.status, code, "{mode}: {}", r.body);
            assert_contains(r.json()["message"].as_str().unwrap_or(""), &[text]);
            assert!(took < Duration::from_secs(5), "{mode} took {took:?}");
            // Requests the plugin is not bound to go on as if it were not there.
            let (ok, _) = create(&format!("plain-{mode}-{round}"), None);
            assert_eq!(ok.status, 201, "{}", ok.body);
        }
    }
    let rss_after = gw.memory_kib("VmRSS").unwrap();
    eprintln!("hostile rounds: RSS {rss_before} KiB -> {rss_after} KiB");
    assert!(
        rss_after < rss_before + 128 * 1024,
        "RSS grew from {rss_before} KiB to {rss_after} KiB"
    );
    // Nothing was stored by a failed request.
    let names = gw.kubectl_ok(&["get", "configmaps", "-o", "name"]);
    for (mode, _, _) in expect {
        assert!(
            !names.lines().any(|n| n == format!("configmap/{mode}-0")),
            "{names}"
        );
    }
    // Per-plugin metrics on /metrics (Prometheus text format).
    let metrics = gw.get("/metrics");
    assert_eq!(metrics.status, 200);
    assert_contains(
        &metrics.body,
        &[
            "wasmgate_plugin_errors_total{plugin=\"hostile-loop\",hook=\"mutate\",cause=\"timeout\"} 3",
            "wasmgate_plugin_errors_total{plugin=\"hostile-memory\",hook=\"mutate\",cause=\"out_of_memory\"} 3",
            "wasmgate_plugin_errors_total{plugin=\"hostile-trap\",hook=\"mutate\",cause=\"trap\"} 3",
            "wasmgate_plugin_denials_total{plugin=\"hostile-read-file\"} 3",
            "wasmgate_plugin_calls_total{plugin=\"hostile-socket\",hook=\"mutate\"} 3",
            "wasmgate_plugin_call_duration_seconds_bucket{le=",
        ],
    );
    // OBS-01, OBS-02: kube's metrics beside them, as `kubectl get --raw /metrics` shows
    // them: the `kubectl get configmaps` just made (a LIST in namespace `default`), and
    // the plugins as admission controllers (a denial and a failure under `Fail` both
    // reject).
    let raw = gw.kubectl_ok(&["get", "--raw", "/metrics"]);
    let sample = |series: &str| -> f64 {
        raw.lines()
            .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
            .unwrap_or_else(|| panic!("no {series} in\n{raw}"))
    };
    assert!(
        sample(
            "apiserver_request_total{verb=\"LIST\",dry_run=\"\",group=\"\",version=\"v1\",resource=\"configmaps\",subresource=\"\",scope=\"namespace\",component=\"apiserver\",code=\"200\"}"
        ) >= 1.0
    );
    assert_eq!(
        sample(
            "apiserver_request_total{verb=\"POST\",dry_run=\"\",group=\"\",version=\"v1\",resource=\"configmaps\",subresource=\"\",scope=\"resource\",component=\"apiserver\",code=\"403\"}"
        ),
        6.0,
        "read-file and socket, 3 rounds"
    );
    for plugin in ["hostile-read-file", "hostile-loop"] {
        assert_eq!(
            sample(&format!(
                "apiserver_admission_controller_admission_duration_seconds_count{{name=\"{plugin}\",type=\"admit\",operation=\"CREATE\",rejected=\"true\"}}"
            )),
            3.0
        );
    }
    assert_contains(
        &raw,
        &[
            "# HELP apiserver_request [STABLE] ",
            "apiserver_admission_step_admission_duration_seconds_bucket{le=\"0.005\",type=\"admit\",operation=\"CREATE\",rejected=\"true\"}",
            "etcd_request_duration_seconds_bucket{le=\"0.005\",operation=\"create\",type=\"configmaps\"}",
            "apiserver_storage_objects{resource=\"configmaps\"}",
        ],
    );
    // failurePolicy Ignore: the request goes on, with a warning.
    let out = gw.kubectl(&["create", "-f", &gw.write_file("ign.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ign\n  labels:\n    hostile: ignored\n").to_string_lossy()]);
    assert!(out.status.success(), "{out:?}");
    assert_contains(
        &String::from_utf8_lossy(&out.stderr),
        &[
            "Warning: failed calling plugin \"hostile-ignored\" (failurePolicy Ignore, request allowed): trapped",
        ],
    );
    // A mutation the schema refuses is a 422 (mutations are validated too).
    gw.kubectl_ok(&[
        "apply",
        "-f",
        &wasmgate_e2e::widgets_crd_without_plugin(gw.data_dir()).to_string_lossy(),
    ]);
    let bad = gw.write_file(
        "bad-widget.yaml",
        "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: bad\n  labels:\n    hostile: invalid-object\nspec:\n  color: red\n",
    );
    let err = gw.kubectl_err(&["create", "-f", &bad.to_string_lossy()]);
    assert_contains(&err, &["The Widget \"bad\" is invalid", "spec.replicas"]);

    // Bad specs are refused by the schema: an unknown hook, a negative timeout.
    for (field, value) in [
        ("hooks", json!(["bogus"])),
        ("timeoutMilliseconds", json!(-5)),
    ] {
        let mut spec = json!({"groups": ["x"], "module": {"path": "/nowhere.wasm"}});
        spec[field] = value;
        let obj = json!({"apiVersion": "wasmgate.dev/v1alpha1", "kind": "WasmPlugin",
                         "metadata": {"name": format!("bad-{}", field.to_lowercase())}, "spec": spec});
        let file = gw.write_file("bad-plugin.json", &obj.to_string());
        let err = gw.kubectl_err(&["apply", "-f", &file.to_string_lossy()]);
        assert_contains(&err, &["is invalid", &format!("spec.{field}")]);
    }
}

/// Appends a custom section to a component: same behaviour, another digest (so every
/// replacement below is really compiled and loaded).
fn with_custom_section(bytes: &[u8], n: usize) -> Vec<u8> {
    fn leb(mut v: usize, out: &mut Vec<u8>) {
        loop {
            let b = (v & 0x7f) as u8;
            v >>= 7;
            if v == 0 {
                out.push(b);
                return;
            }
            out.push(b | 0x80);
        }
    }
    let name = b"wasmgate-test-build";
    let payload = n.to_string();
    let mut content = Vec::new();
    leb(name.len(), &mut content);
    content.extend_from_slice(name);
    content.extend_from_slice(payload.as_bytes());
    let mut out = bytes.to_vec();
    out.push(0);
    leb(content.len(), &mut out);
    out.extend_from_slice(&content);
    out
}

/// Writes a file as a deploy would: a temporary file renamed over the old one.
fn replace_file(path: &Path, bytes: &[u8]) {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, bytes).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

/// Hot reload under load: 20 replacements (10 by file, 10 through the API), no failed
/// request, each new behaviour seen within a second; a bad module is rejected and the old
/// one keeps serving; a roll-back to an earlier module is served at once.
#[test]
fn plugins_are_replaced_under_load_without_failed_requests() {
    let _timed = TIMED.lock().unwrap_or_else(PoisonError::into_inner);
    let plugins = PluginDir::new();
    // `swap` alternates between the tutorial (annotates objects labelled hello) and the
    // core policy (wants an owner label): the load's objects satisfy both, and whether
    // they come back annotated tells which one served.
    let module = plugins.bind(
        "swap",
        "hello_admission",
        json!({"groups": [""], "resources": ["configmaps"], "operations": ["CREATE"]}),
    );
    let gw = start(&plugins);
    wait_ready(&gw, "swap", "True/Loaded");
    let hello = std::fs::read(dist("hello_admission")).unwrap();
    let policy = std::fs::read(dist("core_policy")).unwrap();

    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let load = {
        let client = gw.client();
        let stop = stop.clone();
        std::thread::spawn(move || {
            let (mut ok, mut failed) = (0u32, Vec::new());
            let mut i = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                i += 1;
                let body = json!({"metadata": {"name": format!("load-{i}"), "labels": {"hello": "world", "owner": "me"}}});
                let r = client.request(
                    "POST",
                    "/api/v1/namespaces/default/configmaps",
                    "application/json",
                    Some(&body.to_string()),
                );
                if r.status == 201 {
                    ok += 1;
                } else {
                    failed.push(format!("{}: {}", r.status, r.body));
                }
            }
            (ok, failed)
        })
    };
    let client = gw.client();
    let mut probe_n = 0;
    // Whether a new object is annotated by the tutorial plugin.
    let mut greeted = || {
        probe_n += 1;
        let body = json!({"metadata": {"name": format!("probe-{probe_n}"), "labels": {"hello": "world", "owner": "me"}}});
        let r = client.request(
            "POST",
            "/api/v1/namespaces/default/configmaps",
            "application/json",
            Some(&body.to_string()),
        );
        assert_eq!(r.status, 201, "{}", r.body);
        r.json()["metadata"]["annotations"]["hello.wasmgate.dev/greeting"].is_string()
    };
    assert!(greeted());
    let mut slowest = Duration::ZERO;
    let mut wait_for = |want_greeting: bool, greeted: &mut dyn FnMut() -> bool| {
        let started = Instant::now();
        while greeted() != want_greeting {
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "the new module was not served after 10 s"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        slowest = slowest.max(started.elapsed());
    };
    let mut digests = Vec::new();
    for n in 0..20 {
        // Odd steps: the policy (no greeting); even: the tutorial.
        let to_policy = n % 2 == 0;
        let bytes = with_custom_section(if to_policy { &policy } else { &hello }, n);
        if n < 10 {
            replace_file(&module, &bytes);
        } else {
            // Through the API: a new module path in the spec.
            let path = plugins.path().join(format!("swap-{n}.wasm"));
            std::fs::write(&path, &bytes).unwrap();
            let patch = json!({"spec": {"module": {"path": path}}}).to_string();
            gw.kubectl_ok(&["patch", "wasmplugin", "swap", "--type=merge", "-p", &patch]);
        }
        wait_for(!to_policy, &mut greeted);
        digests.push(gw.kubectl_ok(&[
            "get",
            "wasmplugin",
            "swap",
            "-o",
            "jsonpath={.status.digest}",
        ]));
    }
    // A bad module is refused with a reason; the last good one keeps serving.
    let last_path = gw.kubectl_ok(&[
        "get",
        "wasmplugin",
        "swap",
        "-o",
        "jsonpath={.spec.module.path}",
    ]);
    replace_file(Path::new(&last_path), b"\0asm\x0d\0\x01\0garbage");
    wait_ready(&gw, "swap", "False/InvalidModule");
    assert!(greeted(), "the previous module no longer serves");
    let msg = gw.kubectl_ok(&[
        "get",
        "wasmplugin",
        "swap",
        "-o",
        "jsonpath={.status.conditions[0].message}",
    ]);
    assert_contains(&msg, &["the previous module keeps serving"]);
    // Roll back to an earlier module (the policy of step 18): served at once.
    let earlier = plugins.path().join("swap-18.wasm");
    let patch = json!({"spec": {"module": {"path": earlier}}}).to_string();
    gw.kubectl_ok(&["patch", "wasmplugin", "swap", "--type=merge", "-p", &patch]);
    wait_for(false, &mut greeted);
    wait_ready(&gw, "swap", "True/Loaded");
    let prev = gw.kubectl_ok(&[
        "get",
        "wasmplugin",
        "swap",
        "-o",
        "jsonpath={.status.previousDigests}",
    ]);
    assert_contains(&prev, &[&digests[19]]);

    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let (ok, failed) = load.join().unwrap();
    assert!(
        failed.is_empty(),
        "{} failed requests: {:?}",
        failed.len(),
        &failed[..failed.len().min(5)]
    );
    assert!(ok > 20, "only {ok} requests in the load");
    // Noticing a new module takes ~50 ms (file events); compiling it takes 0.4-1.7 s on
    // CI's two shared cores, on top (README: "within about a second", compiling after).
    // The bound allows for that, not for the 2 s fallback poll plus compiling.
    eprintln!("slowest replacement served after {slowest:?}");
    assert!(
        slowest < Duration::from_secs(3),
        "a replacement took {slowest:?} to be served"
    );
    let unique: std::collections::HashSet<_> = digests.iter().collect();
    assert_eq!(unique.len(), 20);
}

/// A module uploaded through the API (`PUT …/wasmplugins/NAME/module`) is kept in the
/// store: served at once, read back byte for byte, loaded again after a restart without
/// any file, and an earlier upload is a roll-back away. Bytes that are not a component
/// are refused (422) and change nothing.
#[test]
fn modules_uploaded_through_the_api_are_kept_in_the_store() {
    use wasmgate_e2e::Storage;
    let data = tempfile::tempdir().unwrap();
    let plugins = PluginDir::new();
    let gw = gateway_builder!()
        .storage(Storage::Embedded)
        .data_dir(data.path())
        .plugin_dir(plugins.path())
        .start();
    let obj = json!({"apiVersion": "wasmgate.dev/v1alpha1", "kind": "WasmPlugin",
                     "metadata": {"name": "up"},
                     "spec": {"groups": [""], "resources": ["configmaps"], "operations": ["CREATE"],
                              "module": {"path": dist("hello_admission")}}});
    let file = gw.write_file("up.json", &obj.to_string());
    gw.kubectl_ok(&["apply", "-f", &file.to_string_lossy()]);
    wait_ready(&gw, "up", "True/Loaded");

    let url = "/apis/wasmgate.dev/v1alpha1/wasmplugins/up/module";
    let policy = dist("core_policy");
    let out = gw.kubectl_ok(&["replace", "--raw", url, "-f", &policy.to_string_lossy()]);
    let updated: Value = serde_json::from_str(&out).unwrap();
    let digest = updated["spec"]["module"]["digest"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(updated["spec"]["module"].get("path").is_none(), "{updated}");
    poll(
        "the uploaded module served",
        Duration::from_secs(20),
        || {
            let d = gw.kubectl_ok(&["get", "wasmplugin", "up", "-o", "jsonpath={.status.digest}"]);
            (d == digest).then_some(())
        },
    );
    let err = gw.kubectl_err(&["create", "configmap", "x"]);
    assert_contains(&err, &["admission plugin \"up\" denied the request"]);
    // The stored bytes are the uploaded ones.
    let back = gw.kubectl_command(&["get", "--raw", url]).output().unwrap();
    assert_eq!(back.stdout, std::fs::read(&policy).unwrap());

    // Not a component: 422, nothing changes.
    let junk = gw.write_file("junk.wasm", "\0asm\u{1}\0\0\0 a core module header");
    let err = gw.kubectl_err(&["replace", "--raw", url, "-f", &junk.to_string_lossy()]);
    assert_contains(&err, &["not a WebAssembly component"]);
    assert_eq!(
        gw.kubectl_ok(&[
            "get",
            "wasmplugin",
            "up",
            "-o",
            "jsonpath={.spec.module.digest}"
        ]),
        digest
    );

    // A restart loads the uploaded module from the store.
    let mut gw = gw;
    gw.stop().unwrap();
    drop(gw);
    let gw = gateway_builder!()
        .storage(Storage::Embedded)
        .data_dir(data.path())
        .plugin_dir(plugins.path())
        .start();
    wait_ready(&gw, "up", "True/Loaded");
    let err = gw.kubectl_err(&["create", "configmap", "y"]);
    assert_contains(&err, &["admission plugin \"up\" denied the request"]);

    // Another upload, then a roll-back to the first by its digest.
    gw.kubectl_ok(&[
        "replace",
        "--raw",
        url,
        "-f",
        &dist("hello_admission").to_string_lossy(),
    ]);
    poll("the second upload served", Duration::from_secs(20), || {
        gw.kubectl(&["create", "configmap", "z"])
            .status
            .success()
            .then_some(())
    });
    let patch = json!({"spec": {"module": {"digest": digest}}}).to_string();
    gw.kubectl_ok(&["patch", "wasmplugin", "up", "--type=merge", "-p", &patch]);
    poll("the roll-back served", Duration::from_secs(20), || {
        (!gw.kubectl(&["create", "configmap", "w"]).status.success()).then_some(())
    });
    // Exactly one of path and digest.
    let both = json!({"spec": {"module": {"path": "/x.wasm", "digest": digest}}}).to_string();
    let err = gw.kubectl_err(&["patch", "wasmplugin", "up", "--type=merge", "-p", &both]);
    assert_contains(&err, &["exactly one of path and digest must be set"]);
}

/// The namespace controller writes through the API, so validating plugins see its writes
/// (as kube's webhooks do): a denied delete of the content keeps the namespace terminating,
/// with the content named in its conditions, until the plugin goes; a denied `finalize`
/// keeps the emptied namespace until that plugin goes too.
#[test]
fn namespace_controller_writes_go_through_admission() {
    let plugins = PluginDir::new();
    plugins.bind(
        "keeper",
        "hostile",
        json!({"groups": [""], "resources": ["configmaps"], "operations": ["DELETE"],
               "objectSelector": {"matchLabels": {"keep": "yes"}},
               "config": {"mode": "read-file"}}),
    );
    plugins.bind(
        "holder",
        "hostile",
        json!({"groups": [""], "resources": ["namespaces/finalize"], "operations": ["UPDATE"],
               "objectSelector": {"matchLabels": {"kubernetes.io/metadata.name": "held"}},
               "config": {"mode": "read-file"}}),
    );
    let gw = start(&plugins);
    wait_ready(&gw, "keeper", "True/Loaded");
    wait_ready(&gw, "holder", "True/Loaded");
    gw.kubectl_ok(&["create", "namespace", "held"]);
    let cm = gw.write_file(
        "kept.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: kept\n  namespace: held\n  labels:\n    keep: \"yes\"\n",
    );
    gw.kubectl_ok(&["apply", "-f", &cm.to_string_lossy()]);
    gw.kubectl_ok(&["-n", "held", "create", "configmap", "free"]);
    let err = gw.kubectl_err(&["-n", "held", "delete", "configmap", "kept"]);
    assert_contains(&err, &["admission plugin \"keeper\" denied the request"]);
    gw.kubectl_ok(&["delete", "namespace", "held", "--wait=false"]);
    poll(
        "the unprotected content deleted",
        Duration::from_secs(20),
        || {
            let names = gw.kubectl_ok(&["-n", "held", "get", "configmaps", "-o", "name"]);
            (names.trim() == "configmap/kept").then_some(())
        },
    );
    poll("the namespace condition", Duration::from_secs(20), || {
        let msg = gw.kubectl_ok(&[
            "get",
            "namespace",
            "held",
            "-o",
            r#"jsonpath={.status.conditions[?(@.type=="NamespaceContentRemaining")].message}"#,
        ]);
        msg.contains("configmaps has 1 resource instances")
            .then_some(())
    });
    // Without the plugin, the content goes; the namespace's finalize is still denied.
    gw.kubectl_ok(&["delete", "wasmplugin", "keeper"]);
    std::fs::remove_file(plugins.path().join("keeper.yaml")).unwrap();
    poll("the content gone", Duration::from_secs(20), || {
        let names = gw.kubectl_ok(&["-n", "held", "get", "configmaps", "-o", "name"]);
        names.trim().is_empty().then_some(())
    });
    poll(
        "the denied finalize counted",
        Duration::from_secs(20),
        || {
            let metrics = gw.kubectl_ok(&["get", "--raw", "/metrics"]);
            metrics
                .lines()
                .any(|l| l.starts_with("wasmgate_plugin_denials_total{plugin=\"holder\"}"))
                .then_some(())
        },
    );
    let phase = gw.kubectl_ok(&["get", "namespace", "held", "-o", "jsonpath={.status.phase}"]);
    assert_eq!(phase, "Terminating");
    gw.kubectl_ok(&["delete", "wasmplugin", "holder"]);
    std::fs::remove_file(plugins.path().join("holder.yaml")).unwrap();
    poll("the namespace gone", Duration::from_secs(30), || {
        (!gw.kubectl(&["get", "namespace", "held"]).status.success()).then_some(())
    });
}

/// Issue 25, items 1-5 and its "Done means", through the real binary: a plugin that sleeps
/// in a blocking WASI call is answered at its deadline while a neighbour plugin keeps its
/// quiet latency with 200 of those calls in flight; a 100 MiB denial message and a flood of
/// warnings are the plugin's failure, decided before anything is stored; a stack overflow
/// and an `exit(3)` are named in one line; stdout and stderr go to the gateway's log.
#[test]
fn a_plugin_that_sleeps_floods_or_overflows_fails_only_its_own_requests() {
    let _timed = TIMED.lock().unwrap_or_else(PoisonError::into_inner);
    let plugins = PluginDir::new();
    let bind = |mode: &str, timeout: u64, memory: u64| {
        plugins.bind(
            &format!("hostile-{mode}"),
            "hostile",
            json!({"groups": [""], "resources": ["configmaps"],
                   "objectSelector": {"matchLabels": {"hostile": mode}},
                   "timeoutMilliseconds": timeout, "memoryLimitMiB": memory,
                   "config": {"mode": mode}}),
        );
    };
    bind("sleep", 2000, 16);
    // Anything the fixture does not know allows: the well-behaved neighbour.
    bind("neighbour", 1000, 16);
    bind("huge-message", 10_000, 512);
    bind("warnings-flood", 5000, 128);
    bind("stack-overflow", 1000, 16);
    bind("exit", 1000, 16);
    bind("stdout", 1000, 16);
    bind("stderr-big", 1000, 16);
    let gw = start(&plugins);
    for mode in [
        "sleep",
        "neighbour",
        "huge-message",
        "warnings-flood",
        "stack-overflow",
        "exit",
        "stdout",
        "stderr-big",
    ] {
        wait_ready(&gw, &format!("hostile-{mode}"), "True/Loaded");
    }
    let client = gw.client();
    let body = |name: &str, mode: &str| {
        json!({"metadata": {"name": name, "labels": {"hostile": mode}}, "data": {"k": "v"}})
            .to_string()
    };
    let create = |name: &str, mode: &str| {
        let started = Instant::now();
        let r = client.request(
            "POST",
            "/api/v1/namespaces/default/configmaps",
            "application/json",
            Some(&body(name, mode)),
        );
        (r, started.elapsed())
    };

    // Item 1: a blocking sleep ends at the plugin's deadline, as its timeout.
    let (r, took) = create("slept", "sleep");
    assert_eq!(r.status, 500, "{}", r.body);
    assert_contains(
        r.json()["message"].as_str().unwrap_or(""),
        &["failed calling plugin \"hostile-sleep\": timed out after 2s"],
    );
    assert!(took < Duration::from_secs(5), "the sleeper took {took:?}");

    // Item 2: 200 sleeping calls in flight take the sleeper's instances only.
    let mut quiet = Vec::new();
    for i in 0..20 {
        let (r, took) = create(&format!("quiet-{i}"), "neighbour");
        assert_eq!(r.status, 201, "{}", r.body);
        quiet.push(took);
    }
    let sleepers_body = gw.write_file(
        "sleeper.json",
        &json!({"metadata": {"generateName": "sleeper-", "labels": {"hostile": "sleep"}}})
            .to_string(),
    );
    let mut sleepers = client.curl_command();
    sleepers
        .args([
            "--parallel",
            "--parallel-immediate",
            "--parallel-max",
            "200",
        ])
        .args(["--max-time", "60", "-X", "POST"])
        .args(["-H", "Content-Type: application/json"])
        .arg("--data-binary")
        .arg(format!("@{}", sleepers_body.display()))
        .args(["-w", "%{http_code}\n"]);
    let url = format!("{}/api/v1/namespaces/default/configmaps", gw.base_url());
    for _ in 0..200 {
        sleepers.args(["-o", "/dev/null", &url]);
    }
    let sleepers = wasmgate_e2e::Background::spawn(sleepers);
    std::thread::sleep(Duration::from_millis(500));
    let mut loaded = Vec::new();
    for i in 0..20 {
        let (r, took) = create(&format!("loaded-{i}"), "neighbour");
        assert_eq!(r.status, 201, "{}", r.body);
        loaded.push(took);
    }
    let mut sleepers = sleepers;
    sleepers.wait_exit(Duration::from_secs(90));
    let codes = poll(
        "200 answers to the sleepers",
        Duration::from_secs(10),
        || {
            let codes = sleepers.lines();
            (codes.len() >= 200).then_some(codes)
        },
    );
    assert_eq!(codes.len(), 200, "{codes:?}");
    assert!(codes.iter().all(|c| c == "500"), "{codes:?}");
    quiet.sort();
    loaded.sort();
    eprintln!(
        "neighbour creates (curl, a process and a TLS handshake each): quiet max {:?}, \
         beside 200 sleeping calls max {:?}",
        quiet[19], loaded[19]
    );
    // Before the shares, the neighbour waited for the sleepers' instances (seconds); now
    // it is not queued behind them at all. (The p99 ratio is in the runtime's bench: a
    // test here would time curl on a loaded machine.)
    assert!(
        loaded[19] < Duration::from_secs(1),
        "a neighbour call took {:?} beside the sleepers",
        loaded[19]
    );

    // Item 3: answers over the caps are the plugin's failure, nothing stored.
    let (r, took) = create("huge", "huge-message");
    assert_eq!(r.status, 500, "{}", &r.body[..r.body.len().min(300)]);
    assert!(r.body.len() < 64 << 10, "a {}-byte answer", r.body.len());
    assert_contains(
        r.json()["message"].as_str().unwrap_or(""),
        &["hostile-huge-message", "returned too much: status message"],
    );
    eprintln!("100 MiB message refused in {took:?}");
    let (r, _) = create("flood", "warnings-flood");
    assert_eq!(r.status, 500, "{}", &r.body[..r.body.len().min(300)]);
    assert_contains(
        r.json()["message"].as_str().unwrap_or(""),
        &["hostile-warnings-flood", "returned too much: warnings"],
    );
    for name in ["huge", "flood", "slept"] {
        assert!(
            gw.kubectl_err(&["get", "configmap", name])
                .contains("NotFound"),
            "{name} was stored"
        );
    }

    // Item 5: one line naming the cause.
    let (r, _) = create("overflow", "stack-overflow");
    assert_eq!(r.status, 500, "{}", r.body);
    let msg = r.json()["message"].as_str().unwrap_or("").to_owned();
    assert_contains(&msg, &["hostile-stack-overflow", "stack overflow"]);
    assert!(!msg.contains('\n'), "{msg}");
    let (r, _) = create("exited", "exit");
    assert_eq!(r.status, 500, "{}", r.body);
    let msg = r.json()["message"].as_str().unwrap_or("").to_owned();
    assert_contains(&msg, &["hostile-exit", "exited with code"]);
    assert!(!msg.contains('\n'), "{msg}");

    // Item 4: stdout and a long stderr line neither trap nor vanish.
    for mode in ["stdout", "stderr-big"] {
        let (r, _) = create(&format!("said-{mode}"), mode);
        assert_eq!(r.status, 201, "{mode}: {}", r.body);
    }
    poll(
        "the plugin's stdout in the log",
        Duration::from_secs(10),
        || {
            gw.stderr_tail(200)
                .contains("hostile plugin says hello on stdout")
                .then_some(())
        },
    );
}

/// Issue 26, isolation: a plugin that keeps the last object it saw in a global and tells
/// it in its next answer (`hostile` mode `remember`). Under the default isolation no
/// request hears of another's object (its `validate` runs in the instance its `mutate`
/// ran in, so it hears of its own); under `isolation: Reused`, chosen per binding, the
/// instance is kept and the next request hears of the last one. And a mutation of labels
/// only, which skips the schema pass, still gets the labels' checks (`bad-label`).
#[test]
fn no_request_sees_another_unless_the_plugin_reuses_instances() {
    let plugins = PluginDir::new();
    for (name, isolation) in [("fresh", "PerRequest"), ("reused", "Reused")] {
        plugins.bind(
            &format!("remember-{name}"),
            "hostile",
            json!({"groups": [""], "resources": ["configmaps"],
                   "objectSelector": {"matchLabels": {"isolation": name}},
                   "isolation": isolation, "config": {"mode": "remember"}}),
        );
    }
    plugins.bind(
        "bad-label",
        "hostile",
        json!({"groups": [""], "resources": ["configmaps"], "hooks": ["mutate"],
               "objectSelector": {"matchLabels": {"isolation": "bad-label"}},
               "config": {"mode": "bad-label"}}),
    );
    let gw = start(&plugins);
    wait_ready(&gw, "remember-fresh", "True/Loaded");
    wait_ready(&gw, "remember-reused", "True/Loaded");
    wait_ready(&gw, "bad-label", "True/Loaded");
    // `kubectl create` of configmap `name` labelled `isolation=mode`.
    let create_cm = |mode: &str, name: &str| {
        let file = gw.write_file(
            &format!("{name}.json"),
            &json!({"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": name, "namespace": "default",
                                 "labels": {"isolation": mode}}})
            .to_string(),
        );
        gw.kubectl(&["create", "-f", file.to_str().unwrap()])
    };
    // A mutation of labels only skips the schema pass, not the labels' own checks.
    let out = create_cm("bad-label", "bad");
    assert!(!out.status.success(), "{out:?}");
    assert_contains(
        &String::from_utf8_lossy(&out.stderr),
        &[
            "ConfigMap \"bad\" is invalid",
            "metadata.labels: Invalid value: \"not a label value!\"",
        ],
    );
    // The warnings of creating configmap `name` labelled `isolation=mode`.
    let create = |mode: &str, name: &str| -> Vec<String> {
        let out = create_cm(mode, name);
        assert!(out.status.success(), "{out:?}");
        String::from_utf8_lossy(&out.stderr)
            .lines()
            .filter_map(|l| l.strip_prefix("Warning: ").map(str::to_owned))
            .collect()
    };
    for i in 0..5 {
        let name = format!("fresh-{i}");
        let heard = create("fresh", &name);
        // mutate, in a fresh instance; then validate, in the same one.
        assert_eq!(
            heard,
            [
                "remembered nothing".to_owned(),
                format!("remembered: {name}")
            ],
            "request {name}"
        );
    }
    let mut heard_of_others = 0;
    for i in 0..5 {
        let name = format!("reused-{i}");
        let heard = create("reused", &name);
        assert_eq!(heard.len(), 2, "{heard:?}");
        heard_of_others += heard
            .iter()
            .filter(|h| {
                h.starts_with("remembered: reused-") && **h != format!("remembered: {name}")
            })
            .count();
    }
    assert!(
        heard_of_others >= 3,
        "a reused instance tells the next request of the last one: heard {heard_of_others}"
    );
}
