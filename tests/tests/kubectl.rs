//! kubectl 1.32 against the real `wasmgate` binary over TLS: the README quick start and
//! one small test per kubectl path. Each test starts its own gateway (memory storage).
//! Item ids refer to /work/shared/SEED-CHECKLIST.md; "wire §n" to KUBECTL-WIRE.md.

use std::os::unix::fs::PermissionsExt as _;
use std::time::Duration;

use wasmgate_e2e::{
    Gateway, assert_contains, assert_ok, examples_dir, gateway_builder, poll, run, table,
};

/// Deadline for anything the server should do promptly.
const WAIT: Duration = Duration::from_secs(30);

fn start() -> Gateway {
    gateway_builder!().start()
}

/// The rows of watch output (lines split on whitespace) whose column `col` is `name`.
fn rows_named(lines: &[String], col: usize, name: &str) -> Vec<Vec<String>> {
    lines
        .iter()
        .map(|l| l.split_whitespace().map(str::to_owned).collect::<Vec<_>>())
        .filter(|r| r.get(col).is_some_and(|c| c == name))
        .collect()
}

/// Sorted lines of `stdout`.
fn sorted_lines(stdout: &str) -> Vec<String> {
    let mut v: Vec<String> = stdout.lines().map(str::to_owned).collect();
    v.sort();
    v
}

/// Percent-encodes a query value.
fn pct(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Writes an executable shell script into the gateway's work directory.
fn script(gw: &Gateway, name: &str, body: &str) -> std::path::PathBuf {
    let path = gw.write_file(name, &format!("#!/bin/sh\nset -e\n{body}\n"));
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))
        .expect("chmod the script");
    path
}

/// True once kubectl `-v=6` has logged a 200 reply to its watch request, i.e. the
/// server has established the watch.
fn watch_established(stderr: &str) -> bool {
    stderr
        .lines()
        .any(|l| l.contains("watch=true") && l.contains("200 OK"))
}

/// The README quick start, line by line, over TLS (wire §0-§7; DISC-01/03, ENC-04,
/// PATCH-02/03/04, TABLE-01, WATCH-01/04, URL-10, DEL-07, META-11, GAP-12).
#[test]
fn readme_quick_start() {
    let gw = start();

    // kubectl version: the dispatcher needs minor 32 (wire §0).
    let version = gw.kubectl_ok(&["version"]);
    assert!(
        version
            .lines()
            .any(|l| l.starts_with("Server Version: v1.32.")),
        "no v1.32 server version in:\n{version}"
    );

    // kubectl create namespace demo (protobuf body, ENC-04).
    assert_eq!(
        gw.kubectl_ok(&["create", "namespace", "demo"]),
        "namespace/demo created\n"
    );
    // kubectl -n demo create configmap app --from-literal=k=v (protobuf body, ENC-04).
    assert_eq!(
        gw.kubectl_ok(&[
            "-n",
            "demo",
            "create",
            "configmap",
            "app",
            "--from-literal=k=v"
        ]),
        "configmap/app created\n"
    );
    assert_eq!(
        gw.kubectl_ok(&["-n", "demo", "get", "cm", "app", "-o", "jsonpath={.data.k}"]),
        "v"
    );

    // kubectl -n demo apply -f examples/manifests/ (client-side apply: GET, 404, POST).
    let manifests = examples_dir().join("manifests");
    let manifests = manifests.to_str().unwrap();
    let first = gw.kubectl_ok(&["-n", "demo", "apply", "-f", manifests]);
    assert_eq!(
        sorted_lines(&first),
        [
            "configmap/feature-flags created",
            "configmap/settings created",
            "lease.coordination.k8s.io/scheduler-leader created",
            "secret/db-credentials created",
            "serviceaccount/deployer created",
        ]
    );
    // Second run: nothing changed, so no PATCH ("unchanged"). A Secret written with
    // stringData is reported "configured" by kubectl on a real cluster too.
    let second = gw.kubectl_ok(&["-n", "demo", "apply", "-f", manifests]);
    let second = sorted_lines(&second);
    assert_eq!(
        second[..3],
        [
            "configmap/feature-flags unchanged",
            "configmap/settings unchanged",
            "lease.coordination.k8s.io/scheduler-leader unchanged",
        ],
        "second apply: {second:?}"
    );
    assert!(
        second[3] == "secret/db-credentials unchanged"
            || second[3] == "secret/db-credentials configured",
        "second apply: {second:?}"
    );
    assert_eq!(second[4], "serviceaccount/deployer unchanged");
    // A changed manifest: strategic merge patch with the removed key as null (PATCH-04).
    let changed = gw.write_file(
        "changed/configmaps.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  labels:\n    app: demo\n    tier: backend\ndata:\n  mode: slow\n",
    );
    assert_eq!(
        gw.kubectl_ok(&["-n", "demo", "apply", "-f", changed.to_str().unwrap()]),
        "configmap/settings configured\n"
    );
    assert_eq!(
        gw.kubectl_ok(&[
            "-n",
            "demo",
            "get",
            "cm",
            "settings",
            "-o",
            "jsonpath={.data}"
        ]),
        r#"{"mode":"slow"}"#
    );
    assert_eq!(
        gw.kubectl_ok(&[
            "-n",
            "demo",
            "get",
            "lease",
            "scheduler-leader",
            "-o",
            "jsonpath={.spec.holderIdentity}"
        ]),
        "scheduler-0"
    );

    // kubectl -n demo get cm,secrets -o wide (Table, TABLE-01).
    let wide = gw.kubectl_ok(&["-n", "demo", "get", "cm,secrets", "-o", "wide"]);
    let blocks: Vec<&str> = wide.split("\n\n").collect();
    assert_eq!(blocks.len(), 2, "two tables expected:\n{wide}");
    let cms = table(blocks[0]);
    assert_eq!(cms[0], ["NAME", "DATA", "AGE"], "{wide}");
    let mut cm_rows: Vec<(String, String)> = cms[1..]
        .iter()
        .filter(|r| r[0] != "configmap/kube-root-ca.crt")
        .map(|r| (r[0].clone(), r[1].clone()))
        .collect();
    cm_rows.sort();
    assert_eq!(
        cm_rows,
        [
            ("configmap/app".to_owned(), "1".to_owned()),
            ("configmap/feature-flags".to_owned(), "2".to_owned()),
            ("configmap/settings".to_owned(), "1".to_owned()),
        ],
        "{wide}"
    );
    let secrets = table(blocks[1]);
    assert_eq!(secrets[0], ["NAME", "TYPE", "DATA", "AGE"], "{wide}");
    assert_eq!(secrets.len(), 2, "{wide}");
    assert_eq!(
        secrets[1][..3],
        ["secret/db-credentials", "Opaque", "2"],
        "{wide}"
    );
    // kubectl get ns
    let ns = table(&gw.kubectl_ok(&["get", "ns"]));
    assert_eq!(ns[0], ["NAME", "STATUS", "AGE"]);
    for name in ["default", "demo"] {
        assert!(
            ns.iter().any(|r| r[0] == name && r[1] == "Active"),
            "no active {name} in {ns:?}"
        );
    }

    // kubectl -n demo get cm -w, in the background; it must see every later change
    // (WATCH-01, WATCH-04; list RV then watch from it, wire §6).
    let mut watch = gw.kubectl_background(&["-n", "demo", "get", "cm", "-w"]);
    let mut events =
        gw.kubectl_background(&["-n", "demo", "get", "cm", "-w", "--output-watch-events"]);
    watch.wait_for_lines("the initial list", WAIT, |l| {
        rows_named(l, 0, "app").len() == 1 && rows_named(l, 0, "settings").len() == 1
    });
    events.wait_for_lines("the initial list", WAIT, |l| {
        rows_named(l, 1, "app").len() == 1
    });
    assert_eq!(
        watch.lines()[0].split_whitespace().collect::<Vec<_>>(),
        ["NAME", "DATA", "AGE"]
    );

    // kubectl -n demo label cm app tier=web (merge patch, PATCH-03).
    assert_eq!(
        gw.kubectl_ok(&["-n", "demo", "label", "cm", "app", "tier=web"]),
        "configmap/app labeled\n"
    );
    assert_eq!(
        gw.kubectl_ok(&[
            "-n",
            "demo",
            "get",
            "cm",
            "app",
            "-o",
            "jsonpath={.metadata.labels.tier}"
        ]),
        "web"
    );
    watch.wait_for_lines("the label change", WAIT, |l| {
        rows_named(l, 0, "app").len() == 2
    });
    // The same label again changes nothing (a no-op patch keeps the resourceVersion).
    assert_eq!(
        gw.kubectl_ok(&["-n", "demo", "label", "cm", "app", "tier=web"]),
        "configmap/app not labeled\n"
    );

    // kubectl -n demo edit cm app, with EDITOR = a script that changes k (SMP).
    let editor = script(
        &gw,
        "editor.sh",
        "grep -q '^  k: v$' \"$1\"\nsed -i 's/^  k: v$/  k: edited/' \"$1\"",
    );
    let mut edit =
        gw.kubectl_command(&["--request-timeout=30s", "-n", "demo", "edit", "cm", "app"]);
    edit.env("EDITOR", &editor);
    assert_eq!(assert_ok(&run(edit)), "configmap/app edited\n");
    assert_eq!(
        gw.kubectl_ok(&["-n", "demo", "get", "cm", "app", "-o", "jsonpath={.data.k}"]),
        "edited"
    );
    watch.wait_for_lines("the edit", WAIT, |l| rows_named(l, 0, "app").len() == 3);
    // An editor that changes nothing: no PATCH at all.
    let mut edit =
        gw.kubectl_command(&["--request-timeout=30s", "-n", "demo", "edit", "cm", "app"]);
    edit.env("EDITOR", "true");
    let out = run(edit);
    assert_eq!(assert_ok(&out), "");
    assert_contains(
        &String::from_utf8_lossy(&out.stderr),
        &["Edit cancelled, no changes made."],
    );

    // kubectl -n demo patch cm app --type=json (PATCH-02).
    assert_eq!(
        gw.kubectl_ok(&[
            "-n",
            "demo",
            "patch",
            "cm",
            "app",
            "--type=json",
            "-p",
            r#"[{"op":"add","path":"/data/x","value":"1"}]"#
        ]),
        "configmap/app patched\n"
    );
    assert_eq!(
        gw.kubectl_ok(&["-n", "demo", "get", "cm", "app", "-o", "jsonpath={.data}"]),
        r#"{"k":"edited","x":"1"}"#
    );
    watch.wait_for_lines("the patch", WAIT, |l| rows_named(l, 0, "app").len() == 4);
    // The same value again: the reply equals the object, so "(no change)".
    assert_eq!(
        gw.kubectl_ok(&[
            "-n",
            "demo",
            "patch",
            "cm",
            "app",
            "--type=json",
            "-p",
            r#"[{"op":"replace","path":"/data/x","value":"1"}]"#
        ]),
        "configmap/app patched (no change)\n"
    );

    // kubectl -n demo delete cm app
    assert_eq!(
        gw.kubectl_ok(&["-n", "demo", "delete", "cm", "app"]),
        "configmap \"app\" deleted\n"
    );
    let err = gw.kubectl_err(&["-n", "demo", "get", "cm", "app"]);
    assert_contains(
        &err,
        &[r#"Error from server (NotFound): configmaps "app" not found"#],
    );
    let seen = watch.wait_for_lines("the delete", WAIT, |l| rows_named(l, 0, "app").len() == 5);
    let data: Vec<String> = rows_named(&seen, 0, "app")
        .iter()
        .map(|r| r[1].clone())
        .collect();
    assert_eq!(data, ["1", "1", "1", "2", "2"], "watch output:\n{seen:?}");
    let ev = events.wait_for_lines("the delete event", WAIT, |l| {
        rows_named(l, 1, "app").len() == 5
    });
    let kinds: Vec<String> = rows_named(&ev, 1, "app")
        .iter()
        .map(|r| r[0].clone())
        .collect();
    assert_eq!(
        kinds,
        ["ADDED", "MODIFIED", "MODIFIED", "MODIFIED", "DELETED"],
        "watch events:\n{ev:?}"
    );
    assert!(
        watch.try_status().is_none(),
        "get -w ended early: {}",
        watch.stderr()
    );
    watch.kill();
    events.kill();

    // kubectl delete ns demo: the namespace and everything in it go (URL-10, DEL-07).
    assert_eq!(
        gw.kubectl_ok(&["delete", "ns", "demo"]),
        "namespace \"demo\" deleted\n"
    );
    assert_contains(
        &gw.kubectl_err(&["get", "ns", "demo"]),
        &[r#"Error from server (NotFound): namespaces "demo" not found"#],
    );
    let left = gw.kubectl_ok(&[
        "get",
        "cm,secrets,serviceaccounts,leases",
        "-A",
        "-o",
        r#"jsonpath={range .items[*]}{.metadata.namespace}/{.kind}/{.metadata.name}{"\n"}{end}"#,
    ]);
    assert!(
        !left.lines().any(|l| l.starts_with("demo/")),
        "objects of the deleted namespace are still there:\n{left}"
    );

    // kubectl api-resources (aggregated discovery, DISC-01/03).
    let res = table(&gw.kubectl_ok(&["api-resources"]));
    assert_eq!(
        res[0],
        ["NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND"]
    );
    for want in [
        &["configmaps", "cm", "v1", "true", "ConfigMap"][..],
        &["events", "ev", "v1", "true", "Event"],
        &["namespaces", "ns", "v1", "false", "Namespace"],
        &["secrets", "v1", "true", "Secret"],
        &["serviceaccounts", "sa", "v1", "true", "ServiceAccount"],
        &["leases", "coordination.k8s.io/v1", "true", "Lease"],
    ] {
        assert!(
            res.iter().any(|r| r == want),
            "api-resources lacks {want:?}:\n{res:?}"
        );
    }
    // kubectl explain configmap.data (OpenAPI v3, wire §4).
    let explain = gw.kubectl_ok(&["explain", "configmap.data"]);
    assert_contains(
        &explain,
        &[
            "KIND:       ConfigMap",
            "VERSION:    v1",
            "FIELD: data <map[string]string>",
            "DESCRIPTION:",
        ],
    );
}

/// `get cm NAME -w`: the first change after the print must not be lost; the server
/// sends the synthetic ADDED that kubectl drops (WATCH-02, WATCH-03, GAP-03, wire §6).
#[test]
fn single_object_watch_sees_first_change() {
    let gw = start();
    gw.kubectl_ok(&["create", "cm", "solo", "--from-literal=a=1"]);
    gw.kubectl_ok(&["create", "cm", "other", "--from-literal=a=1"]);
    let mut w = gw.kubectl_background(&["-v=6", "get", "cm", "solo", "-w"]);
    w.wait_for_lines("the first row", WAIT, |l| {
        rows_named(l, 0, "solo").len() == 1
    });
    poll("the watch request", WAIT, || {
        watch_established(&w.stderr()).then_some(())
    });
    gw.kubectl_ok(&["patch", "cm", "solo", "-p", r#"{"data":{"b":"2"}}"#]);
    gw.kubectl_ok(&["patch", "cm", "other", "-p", r#"{"data":{"b":"2"}}"#]);
    gw.kubectl_ok(&["patch", "cm", "solo", "-p", r#"{"data":{"c":"3"}}"#]);
    let lines = w.wait_for_lines("both changes", WAIT, |l| {
        rows_named(l, 0, "solo").len() >= 3
    });
    let data: Vec<String> = rows_named(&lines, 0, "solo")
        .iter()
        .map(|r| r[1].clone())
        .collect();
    assert_eq!(data, ["1", "2", "3"], "watch output:\n{lines:?}");
    assert!(
        rows_named(&lines, 0, "other").is_empty(),
        "another object leaked into a single-object watch:\n{lines:?}"
    );
}

const FINALIZED_CM: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: NAME\n  finalizers:\n  - example.com/hold\ndata:\n  a: \"1\"\n";

/// `delete` (waits by default) on an object with a finalizer: the object stays with a
/// deletionTimestamp, no new finalizer may be added, and removing the finalizer by a
/// patch completes the delete (DEL-01, DEL-02, META-08, META-10, GAP-12).
#[test]
fn delete_waits_for_finalizer() {
    let gw = start();
    let file = gw.write_file("fin.yaml", &FINALIZED_CM.replace("NAME", "fin"));
    assert_eq!(
        gw.kubectl_ok(&["create", "-f", file.to_str().unwrap()]),
        "configmap/fin created\n"
    );
    let mut del = gw.kubectl_background(&["delete", "cm", "fin", "--timeout=90s"]);
    let ts = poll("deletionTimestamp", WAIT, || {
        let ts = gw.kubectl_ok(&[
            "get",
            "cm",
            "fin",
            "-o",
            "jsonpath={.metadata.deletionTimestamp}",
        ]);
        (!ts.is_empty()).then_some(ts)
    });
    assert!(
        ts.ends_with('Z') && ts.len() == 20,
        "deletionTimestamp {ts:?}"
    );
    assert!(
        del.try_status().is_none(),
        "delete returned while a finalizer remains: {:?} {}",
        del.lines(),
        del.stderr()
    );
    // DEL-02: once deletionTimestamp is set, finalizers can only be removed.
    let err = gw.kubectl_err(&[
        "patch",
        "cm",
        "fin",
        "--type=json",
        "-p",
        r#"[{"op":"add","path":"/metadata/finalizers/-","value":"example.com/other"}]"#,
    ]);
    assert_contains(&err, &["finalizers"]);
    assert_eq!(
        gw.kubectl_ok(&[
            "patch",
            "cm",
            "fin",
            "--type=json",
            "-p",
            r#"[{"op":"remove","path":"/metadata/finalizers"}]"#
        ]),
        "configmap/fin patched\n"
    );
    let status = del.wait_exit(WAIT);
    assert!(status.success(), "delete failed: {}", del.stderr());
    assert_eq!(del.lines(), ["configmap \"fin\" deleted"]);
    assert_contains(
        &gw.kubectl_err(&["get", "cm", "fin"]),
        &[r#"configmaps "fin" not found"#],
    );
}

/// ISSUE-24.6, PATCH-02: the JSON patches kube-runtime's `finalizer()` sends, through
/// kubectl: `test` of `null` on an object without finalizers then `add` (evanphx v4
/// accepts it), `test` of the list then an append, `test` of the entry then its removal;
/// a `test` that no longer holds (another writer got there first) is 422.
#[test]
fn kube_runtime_finalizer_patches() {
    let gw = start();
    gw.kubectl_ok(&["create", "configmap", "ctl"]);
    let patch = |p: &str| gw.kubectl_ok(&["patch", "cm", "ctl", "--type=json", "-p", p]);
    let finalizers =
        || gw.kubectl_ok(&["get", "cm", "ctl", "-o", "jsonpath={.metadata.finalizers}"]);
    assert_eq!(
        patch(
            r#"[{"op":"test","path":"/metadata/finalizers","value":null},{"op":"add","path":"/metadata/finalizers","value":["a.example.com/cleanup"]}]"#
        ),
        "configmap/ctl patched\n"
    );
    assert_eq!(finalizers(), r#"["a.example.com/cleanup"]"#);
    patch(
        r#"[{"op":"test","path":"/metadata/finalizers","value":["a.example.com/cleanup"]},{"op":"add","path":"/metadata/finalizers/-","value":"b.example.com/cleanup"}]"#,
    );
    assert_eq!(
        finalizers(),
        r#"["a.example.com/cleanup","b.example.com/cleanup"]"#
    );
    // The first one's test of null no longer holds.
    let err = gw.kubectl_err(&[
        "patch",
        "cm",
        "ctl",
        "--type=json",
        "-p",
        r#"[{"op":"test","path":"/metadata/finalizers","value":null},{"op":"add","path":"/metadata/finalizers","value":["c.example.com/cleanup"]}]"#,
    ]);
    assert_contains(&err, &["testing value /metadata/finalizers failed"]);
    patch(
        r#"[{"op":"test","path":"/metadata/finalizers/0","value":"a.example.com/cleanup"},{"op":"remove","path":"/metadata/finalizers/0"}]"#,
    );
    assert_eq!(finalizers(), r#"["b.example.com/cleanup"]"#);
}

/// `kubectl wait --for=delete` ends with "condition met" on the DELETED event of an
/// informer-style watch, and a missing object satisfies it at once (GAP-02, wire §7).
#[test]
fn wait_for_delete() {
    let gw = start();
    let file = gw.write_file("w.yaml", &FINALIZED_CM.replace("NAME", "w"));
    gw.kubectl_ok(&["create", "-f", file.to_str().unwrap()]);
    assert_eq!(
        gw.kubectl_ok(&["delete", "cm", "w", "--wait=false"]),
        "configmap \"w\" deleted\n"
    );
    let mut wait =
        gw.kubectl_background(&["-v=6", "wait", "--for=delete", "cm/w", "--timeout=90s"]);
    poll("the wait's watch", WAIT, || {
        watch_established(&wait.stderr()).then_some(())
    });
    assert!(
        wait.try_status().is_none(),
        "wait ended before the object was gone: {:?}",
        wait.lines()
    );
    gw.kubectl_ok(&[
        "patch",
        "cm",
        "w",
        "--type=merge",
        "-p",
        r#"{"metadata":{"finalizers":null}}"#,
    ]);
    let status = wait.wait_exit(WAIT);
    assert!(status.success(), "wait failed: {}", wait.stderr());
    assert_eq!(wait.lines(), ["configmap/w condition met"]);
    // Already gone: exit 0 without output.
    assert_eq!(
        gw.kubectl_ok(&["wait", "--for=delete", "cm/nosuch", "--timeout=10s"]),
        ""
    );
}

/// `get --chunk-size=2` over 5 objects prints each once, in order; the pages are one
/// snapshot (CHUNK-01, CHUNK-02, CHUNK-04, LIST-01, wire §5).
#[test]
fn chunked_list() {
    let gw = start();
    gw.kubectl_ok(&["create", "ns", "chunk"]);
    for i in 1..=5 {
        gw.kubectl_ok(&[
            "-n",
            "chunk",
            "create",
            "cm",
            &format!("c{i}"),
            "--from-literal=a=1",
        ]);
    }
    let out = gw.kubectl_ok(&["-n", "chunk", "get", "cm", "--chunk-size=2"]);
    let rows = table(&out);
    assert_eq!(rows[0], ["NAME", "DATA", "AGE"], "{out}");
    let names: Vec<&str> = rows[1..].iter().map(|r| r[0].as_str()).collect();
    assert_eq!(names, ["c1", "c2", "c3", "c4", "c5"], "{out}");

    // The same over the wire: three pages of one snapshot; c6, created between the
    // pages, is not in them.
    let base = "/api/v1/namespaces/chunk/configmaps?limit=2";
    let page1 = gw.get(base).expect_status(200);
    assert_eq!(page1["kind"], "ConfigMapList");
    let rv = page1["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_owned();
    let names = |page: &serde_json::Value| -> Vec<String> {
        page["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["metadata"]["name"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(names(&page1), ["c1", "c2"]);
    assert_eq!(page1["metadata"]["remainingItemCount"], 3, "CHUNK-04");
    gw.kubectl_ok(&["-n", "chunk", "create", "cm", "c6", "--from-literal=a=1"]);
    let token = page1["metadata"]["continue"].as_str().unwrap();
    let page2 = gw
        .get(&format!("{base}&continue={}", pct(token)))
        .expect_status(200);
    assert_eq!(names(&page2), ["c3", "c4"]);
    assert_eq!(page2["metadata"]["resourceVersion"], rv.as_str());
    let token = page2["metadata"]["continue"].as_str().unwrap();
    let page3 = gw
        .get(&format!("{base}&continue={}", pct(token)))
        .expect_status(200);
    assert_eq!(names(&page3), ["c5"], "c6 was created after the snapshot");
    assert_eq!(page3["metadata"]["resourceVersion"], rv.as_str());
    assert!(
        page3["metadata"]
            .get("continue")
            .and_then(|c| c.as_str())
            .is_none_or(str::is_empty),
        "last page has a continue token: {page3}"
    );
}

/// Label selectors (`in`, `notin`, `!k`, `k`, `!=`, AND) and field selectors on
/// metadata.name / metadata.namespace (SEL-01, GAP-04).
#[test]
fn label_and_field_selectors() {
    let gw = start();
    gw.kubectl_ok(&["create", "ns", "sel"]);
    for (name, labels) in [
        ("a", "app=a"),
        ("b", "app=b"),
        ("c", "app=c"),
        ("none", "tier=x"),
    ] {
        gw.kubectl_ok(&["-n", "sel", "create", "cm", name, "--from-literal=k=v"]);
        gw.kubectl_ok(&["-n", "sel", "label", "cm", name, labels]);
    }
    let get = |extra: &[&str]| -> Vec<String> {
        let mut args = vec!["-n", "sel", "get", "cm", "-o", "name"];
        args.extend_from_slice(extra);
        sorted_lines(&gw.kubectl_ok(&args))
            .into_iter()
            .map(|l| l.trim_start_matches("configmap/").to_owned())
            .collect()
    };
    assert_eq!(get(&["-l", "app in (a,b)"]), ["a", "b"]);
    assert_eq!(get(&["-l", "!app"]), ["none"]);
    assert_eq!(get(&["-l", "app"]), ["a", "b", "c"]);
    assert_eq!(get(&["-l", "app notin (a)"]), ["b", "c", "none"]);
    assert_eq!(get(&["-l", "app!=a"]), ["b", "c", "none"]);
    assert_eq!(get(&["-l", "app==c"]), ["c"]);
    assert_eq!(get(&["-l", "app,app notin (b)"]), ["a", "c"]);
    assert_eq!(get(&["--field-selector", "metadata.name=b"]), ["b"]);
    assert_eq!(
        get(&["--field-selector", "metadata.name!=b"]),
        ["a", "c", "none"]
    );
    assert_eq!(
        get(&["-l", "app", "--field-selector", "metadata.name!=a"]),
        ["b", "c"]
    );
    let all = gw.kubectl_ok(&[
        "get",
        "cm",
        "-A",
        "--field-selector",
        "metadata.namespace=sel",
        "-o",
        "name",
    ]);
    assert_eq!(
        sorted_lines(&all),
        [
            "configmap/a",
            "configmap/b",
            "configmap/c",
            "configmap/none"
        ]
    );
    // delete -l: one list, then one DELETE per object (wire §7 delete).
    assert_eq!(
        gw.kubectl_ok(&["-n", "sel", "delete", "cm", "-l", "app in (a)"]),
        "configmap \"a\" deleted\n"
    );
    assert_eq!(get(&["-l", "app"]), ["b", "c"]);
    // The Table path with a selector (kubectl's default output).
    let t = table(&gw.kubectl_ok(&["-n", "sel", "get", "cm", "-l", "app in (c)"]));
    assert_eq!(t.len(), 2, "{t:?}");
    assert_eq!(t[1][..2], ["c", "1"]);
}

/// `describe cm` needs the events list with the four involvedObject field selectors
/// (wire §7 describe; SEL-01, GAP-04).
#[test]
fn describe_configmap_with_events() {
    let gw = start();
    gw.kubectl_ok(&["create", "cm", "d", "--from-literal=k=v"]);
    gw.kubectl_ok(&["label", "cm", "d", "team=x"]);
    let out = gw.kubectl_ok(&["describe", "cm", "d"]);
    assert_contains(
        &out,
        &[
            "Name:         d\n",
            "Namespace:    default\n",
            "Labels:       team=x\n",
            "Data\n====\nk:\n----\nv\n",
            "Events:  <none>",
        ],
    );
    // One event about d and one about another object: describe shows only the first.
    let uid = gw.kubectl_ok(&["get", "cm", "d", "-o", "jsonpath={.metadata.uid}"]);
    let event = |name: &str, about: &str, uid: &str, reason: &str| {
        serde_json::json!({
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": name, "namespace": "default"},
            "involvedObject": {"apiVersion": "v1", "kind": "ConfigMap", "namespace": "default", "name": about, "uid": uid},
            "reason": reason, "message": format!("{reason} message"), "type": "Normal",
            "source": {"component": "e2e"}, "count": 1
        })
        .to_string()
    };
    for body in [
        event("d.1", "d", &uid, "Tested"),
        event(
            "o.1",
            "other",
            "00000000-0000-0000-0000-000000000000",
            "Unrelated",
        ),
    ] {
        gw.request(
            "POST",
            "/api/v1/namespaces/default/events",
            "application/json",
            Some(&body),
        )
        .expect_status(201);
    }
    let out = gw.kubectl_ok(&["describe", "cm", "d"]);
    assert_contains(&out, &["Tested", "Tested message"]);
    assert!(
        !out.contains("Unrelated"),
        "describe shows another object's event:\n{out}"
    );
}

/// `create secret generic` and `create serviceaccount` (typed clients, protobuf
/// bodies: ENC-04; wire §2).
#[test]
fn create_secret_and_serviceaccount() {
    let gw = start();
    assert_eq!(
        gw.kubectl_ok(&[
            "create",
            "secret",
            "generic",
            "s1",
            "--from-literal=password=hunter2"
        ]),
        "secret/s1 created\n"
    );
    assert_eq!(
        gw.kubectl_ok(&[
            "get",
            "secret",
            "s1",
            "-o",
            "jsonpath={.type} {.data.password}"
        ]),
        "Opaque aHVudGVyMg=="
    );
    let t = table(&gw.kubectl_ok(&["get", "secret", "s1"]));
    assert_eq!(t[0], ["NAME", "TYPE", "DATA", "AGE"]);
    assert_eq!(t[1][..3], ["s1", "Opaque", "1"]);
    assert_eq!(
        gw.kubectl_ok(&["create", "serviceaccount", "robot"]),
        "serviceaccount/robot created\n"
    );
    assert_eq!(
        gw.kubectl_ok(&[
            "get",
            "sa",
            "robot",
            "-o",
            "jsonpath={.kind}/{.metadata.name}"
        ]),
        "ServiceAccount/robot"
    );
    assert_contains(
        &gw.kubectl_err(&["create", "serviceaccount", "robot"]),
        &[r#"serviceaccounts "robot" already exists"#],
    );
}

/// `--dry-run=server` on create, apply, patch and delete stores nothing and bumps no
/// resourceVersion (DRY-01, DRY-02, DRY-03).
#[test]
fn server_dry_run_stores_nothing() {
    let gw = start();
    gw.kubectl_ok(&["create", "cm", "keep", "--from-literal=a=1"]);
    let list_rv = || {
        gw.get("/api/v1/namespaces/default/configmaps")
            .expect_status(200)["metadata"]["resourceVersion"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let rv_before = list_rv();
    let obj_rv = || {
        gw.kubectl_ok(&[
            "get",
            "cm",
            "keep",
            "-o",
            "jsonpath={.metadata.resourceVersion} {.data.a}",
        ])
    };
    let keep_before = obj_rv();

    assert_eq!(
        gw.kubectl_ok(&[
            "create",
            "cm",
            "dry",
            "--from-literal=a=b",
            "--dry-run=server"
        ]),
        "configmap/dry created (server dry run)\n"
    );
    let file = gw.write_file(
        "dry.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: dry2\ndata:\n  a: b\n",
    );
    assert_eq!(
        gw.kubectl_ok(&["apply", "-f", file.to_str().unwrap(), "--dry-run=server"]),
        "configmap/dry2 created (server dry run)\n"
    );
    assert_eq!(
        gw.kubectl_ok(&[
            "patch",
            "cm",
            "keep",
            "-p",
            r#"{"data":{"a":"2"}}"#,
            "--dry-run=server"
        ]),
        // kubectl 1.32 prints no dry-run suffix for patch; the request has dryRun=All.
        "configmap/keep patched\n"
    );
    assert_eq!(
        gw.kubectl_ok(&["delete", "cm", "keep", "--dry-run=server"]),
        "configmap \"keep\" deleted (server dry run)\n"
    );
    for name in ["dry", "dry2"] {
        assert_contains(
            &gw.kubectl_err(&["get", "cm", name]),
            &[&format!("configmaps \"{name}\" not found")],
        );
    }
    assert_eq!(obj_rv(), keep_before, "dry runs changed the object");
    assert_eq!(
        list_rv(),
        rv_before,
        "dry runs advanced the resourceVersion"
    );
}

/// `create -f` with unknown fields: Strict (kubectl's default) rejects naming every
/// field, Warn warns, `--validate=false` (Ignore) succeeds and drops them
/// (FV-01, FV-02, FV-03, FV-04, FV-06, ERR-02).
#[test]
fn field_validation() {
    let gw = start();
    let file = gw.write_file(
        "bad.yaml",
        "apiVersion: v1\nkind: ConfigMap\nbogusField: 1\nmetadata:\n  name: bad\n  extraMeta: x\ndata:\n  a: \"1\"\n",
    );
    let file = file.to_str().unwrap();
    let err = gw.kubectl_err(&["create", "-f", file]);
    assert_contains(
        &err,
        &[
            "Error from server (BadRequest)",
            r#"unknown field "bogusField""#,
            r#"unknown field "metadata.extraMeta""#,
        ],
    );
    assert_contains(
        &gw.kubectl_err(&["get", "cm", "bad"]),
        &[r#"configmaps "bad" not found"#],
    );
    let out = gw.kubectl(&["create", "-f", file, "--validate=warn"]);
    assert_eq!(assert_ok(&out), "configmap/bad created\n");
    assert_contains(
        &String::from_utf8_lossy(&out.stderr),
        &[r#"unknown field "bogusField""#],
    );
    gw.kubectl_ok(&["delete", "cm", "bad"]);
    assert_eq!(
        gw.kubectl_ok(&["create", "-f", file, "--validate=false"]),
        "configmap/bad created\n"
    );
    let stored: serde_json::Value =
        serde_json::from_str(&gw.kubectl_ok(&["get", "cm", "bad", "-o", "json"])).unwrap();
    assert!(stored.get("bogusField").is_none(), "{stored}");
    assert!(stored["metadata"].get("extraMeta").is_none(), "{stored}");
    assert_eq!(stored["data"]["a"], "1");
}

/// `replace` with a stale resourceVersion gets 409 Conflict; with the current one, or
/// none, it succeeds (UPD-01, UPD-02, ERR-05, VERB-02).
#[test]
fn replace_with_stale_resource_version_conflicts() {
    let gw = start();
    gw.kubectl_ok(&["create", "cm", "r", "--from-literal=a=1"]);
    let mut stale: serde_json::Value =
        serde_json::from_str(&gw.kubectl_ok(&["get", "cm", "r", "-o", "json"])).unwrap();
    gw.kubectl_ok(&["patch", "cm", "r", "-p", r#"{"data":{"a":"2"}}"#]);
    stale["data"]["a"] = "3".into();
    let file = gw.write_file("stale.json", &stale.to_string());
    let err = gw.kubectl_err(&["replace", "-f", file.to_str().unwrap()]);
    assert_contains(
        &err,
        &[
            "Error from server (Conflict)",
            r#"Operation cannot be fulfilled on configmaps "r""#,
            "the object has been modified",
        ],
    );
    assert_eq!(
        gw.kubectl_ok(&["get", "cm", "r", "-o", "jsonpath={.data.a}"]),
        "2"
    );
    let mut fresh: serde_json::Value =
        serde_json::from_str(&gw.kubectl_ok(&["get", "cm", "r", "-o", "json"])).unwrap();
    fresh["data"]["a"] = "3".into();
    let file = gw.write_file("fresh.json", &fresh.to_string());
    assert_eq!(
        gw.kubectl_ok(&["replace", "-f", file.to_str().unwrap()]),
        "configmap/r replaced\n"
    );
    let file = gw.write_file(
        "norv.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: r\ndata:\n  a: \"4\"\n",
    );
    assert_eq!(
        gw.kubectl_ok(&["replace", "-f", file.to_str().unwrap()]),
        "configmap/r replaced\n"
    );
    assert_eq!(
        gw.kubectl_ok(&["get", "cm", "r", "-o", "jsonpath={.data.a}"]),
        "4"
    );
}

/// `kubectl diff`: a new object (dry-run POST), no change (exit 0), a change (dry-run
/// strategic merge patch, exit 1); nothing is stored (DRY-01, PATCH-04, wire §7).
#[test]
fn diff() {
    let gw = start();
    let manifest = |v: &str| {
        format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: dnew\ndata:\n  a: \"{v}\"\n")
    };
    let file = gw.write_file("d.yaml", &manifest("1"));
    let file = file.to_str().unwrap();
    let out = gw.kubectl(&["diff", "-f", file]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert_contains(&text, &["+kind: ConfigMap", "+  name: dnew", "+  a: \"1\""]);
    assert_contains(
        &gw.kubectl_err(&["get", "cm", "dnew"]),
        &[r#"configmaps "dnew" not found"#],
    );
    gw.kubectl_ok(&["apply", "-f", file]);
    let out = gw.kubectl(&["diff", "-f", file]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "");
    gw.write_file("d.yaml", &manifest("2"));
    let out = gw.kubectl(&["diff", "-f", file]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert_contains(&text, &["-  a: \"1\"", "+  a: \"2\""]);
    assert_eq!(
        gw.kubectl_ok(&["get", "cm", "dnew", "-o", "jsonpath={.data.a}"]),
        "1"
    );
}

/// `get -o json`, `-o yaml`, `-o name`, lists: object metadata as the server stores it
/// (URL-01, META-03..06, LIST-01, URL-11).
#[test]
fn get_output_formats() {
    let gw = start();
    gw.kubectl_ok(&["create", "cm", "fmt", "--from-literal=k=v"]);
    let obj: serde_json::Value =
        serde_json::from_str(&gw.kubectl_ok(&["get", "cm", "fmt", "-o", "json"])).unwrap();
    assert_eq!(obj["kind"], "ConfigMap");
    assert_eq!(obj["apiVersion"], "v1");
    assert_eq!(obj["metadata"]["name"], "fmt");
    assert_eq!(obj["metadata"]["namespace"], "default");
    assert_eq!(obj["data"]["k"], "v");
    let uid = obj["metadata"]["uid"].as_str().unwrap();
    assert!(
        uid.len() == 36 && uid.chars().filter(|&c| c == '-').count() == 4,
        "uid {uid:?}"
    );
    assert!(
        !obj["metadata"]["resourceVersion"]
            .as_str()
            .unwrap()
            .is_empty()
    );
    let ts = obj["metadata"]["creationTimestamp"].as_str().unwrap();
    assert!(
        ts.len() == 20 && ts.as_bytes()[10] == b'T' && ts.ends_with('Z'),
        "creationTimestamp {ts:?}"
    );
    let yaml = gw.kubectl_ok(&["get", "cm", "fmt", "-o", "yaml"]);
    assert_contains(
        &yaml,
        &[
            "apiVersion: v1\n",
            "kind: ConfigMap\n",
            "  name: fmt\n",
            "  k: v\n",
        ],
    );
    assert_eq!(
        gw.kubectl_ok(&["get", "cm", "fmt", "-o", "name"]),
        "configmap/fmt\n"
    );
    let list: serde_json::Value =
        serde_json::from_str(&gw.kubectl_ok(&["get", "cm", "-o", "json"])).unwrap();
    assert_eq!(list["kind"], "List");
    let item = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["metadata"]["name"] == "fmt")
        .unwrap();
    assert_eq!(item["kind"], "ConfigMap");
    let wire = gw
        .get("/api/v1/namespaces/default/configmaps")
        .expect_status(200);
    assert_eq!(wire["kind"], "ConfigMapList");
    assert_eq!(wire["apiVersion"], "v1");
    assert!(wire["metadata"]["resourceVersion"].as_str().is_some());
    let ns = gw.get("/api/v1/namespaces/default").expect_status(200);
    assert_eq!(ns["kind"], "Namespace");
}

/// `get --sort-by` (Table rows with includeObject=Object, GAP-07).
#[test]
fn get_sort_by() {
    let gw = start();
    gw.kubectl_ok(&["create", "ns", "sort"]);
    for (name, rank) in [("s-b", "3"), ("s-c", "1"), ("s-a", "2")] {
        gw.kubectl_ok(&[
            "-n",
            "sort",
            "create",
            "cm",
            name,
            &format!("--from-literal=rank={rank}"),
        ]);
    }
    let names = |key: &str| -> Vec<String> {
        table(&gw.kubectl_ok(&["-n", "sort", "get", "cm", &format!("--sort-by={key}")]))[1..]
            .iter()
            .map(|r| r[0].clone())
            .collect()
    };
    assert_eq!(names(".data.rank"), ["s-c", "s-a", "s-b"]);
    assert_eq!(names(".metadata.name"), ["s-a", "s-b", "s-c"]);
}

/// Namespaces: an object in a missing namespace is NotFound; a terminating namespace
/// (held by an object with a finalizer) refuses new objects with Forbidden and goes
/// away once the finalizer is removed; `default` cannot be deleted
/// (URL-10, DEL-07, ERR-04, GAP-05).
#[test]
fn namespace_lifecycle_errors() {
    let gw = start();
    let err = gw.kubectl_err(&["-n", "nosuch", "create", "cm", "x", "--from-literal=a=b"]);
    assert_contains(&err, &[r#"namespaces "nosuch" not found"#]);
    let file = gw.write_file(
        "x.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  a: b\n",
    );
    let err = gw.kubectl_err(&["-n", "nosuch", "create", "-f", file.to_str().unwrap()]);
    assert_contains(
        &err,
        &[
            "Error from server (NotFound)",
            r#"namespaces "nosuch" not found"#,
        ],
    );

    gw.kubectl_ok(&["create", "ns", "term"]);
    let held = gw.write_file("held.yaml", &FINALIZED_CM.replace("NAME", "held"));
    gw.kubectl_ok(&["-n", "term", "create", "-f", held.to_str().unwrap()]);
    assert_eq!(
        gw.kubectl_ok(&["delete", "ns", "term", "--wait=false"]),
        "namespace \"term\" deleted\n"
    );
    poll("namespace term Terminating", WAIT, || {
        (gw.kubectl_ok(&["get", "ns", "term", "-o", "jsonpath={.status.phase}"]) == "Terminating")
            .then_some(())
    });
    let t = table(&gw.kubectl_ok(&["get", "ns", "term"]));
    assert_eq!(t[1][..2], ["term", "Terminating"]);
    let err = gw.kubectl_err(&["-n", "term", "create", "-f", file.to_str().unwrap()]);
    assert_contains(
        &err,
        &[
            "Error from server (Forbidden)",
            "because it is being terminated",
        ],
    );
    let err = gw.kubectl_err(&["-n", "term", "create", "cm", "y", "--from-literal=a=b"]);
    assert_contains(&err, &["forbidden", "because it is being terminated"]);
    // The held object got its deletionTimestamp from the namespace deletion.
    poll("held to be terminating", WAIT, || {
        let ts = gw.kubectl_ok(&[
            "-n",
            "term",
            "get",
            "cm",
            "held",
            "-o",
            "jsonpath={.metadata.deletionTimestamp}",
        ]);
        (!ts.is_empty()).then_some(())
    });
    gw.kubectl_ok(&[
        "-n",
        "term",
        "patch",
        "cm",
        "held",
        "--type=json",
        "-p",
        r#"[{"op":"remove","path":"/metadata/finalizers"}]"#,
    ]);
    poll("namespace term to go away", WAIT, || {
        let out = gw.kubectl(&["get", "ns", "term"]);
        String::from_utf8_lossy(&out.stderr)
            .contains(r#"namespaces "term" not found"#)
            .then_some(())
    });

    let err = gw.kubectl_err(&["delete", "ns", "default"]);
    assert_contains(
        &err,
        &["Error from server (Forbidden)", r#"namespaces "default""#],
    );
    assert_eq!(
        gw.kubectl_ok(&["get", "ns", "default", "-o", "jsonpath={.status.phase}"]),
        "Active"
    );
}

/// A request without a client certificate is 401 with a Status; `/readyz?verbose`,
/// `/livez` and `/healthz` answer 200 (ERR-11, GAP-05, GAP-09, HEALTH-01, HEALTH-02).
#[test]
fn unauthenticated_and_health() {
    let gw = start();
    let mut c = std::process::Command::new(wasmgate_e2e::CURL);
    c.args(["-sS", "--cacert"])
        .arg(gw.ca_file())
        .args(["-w", "\n%{http_code}"])
        .arg(format!("{}/api/v1/namespaces", gw.base_url()));
    let out = String::from_utf8(assert_ok(&run(c)).into_bytes()).unwrap();
    let (body, code) = out.rsplit_once('\n').unwrap();
    assert_eq!(code, "401", "{out}");
    let status: serde_json::Value = serde_json::from_str(body).unwrap();
    assert_eq!(status["kind"], "Status");
    assert_eq!(status["status"], "Failure");
    assert_eq!(status["reason"], "Unauthorized");
    assert_eq!(status["code"], 401);

    let ready = gw.get("/readyz?verbose");
    assert_eq!(ready.status, 200, "{}", ready.body);
    let lines: Vec<&str> = ready.body.lines().collect();
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("[+]") && l.ends_with(" ok")),
        "{}",
        ready.body
    );
    assert!(
        lines.last().is_some_and(|l| l.ends_with("check passed")),
        "{}",
        ready.body
    );
    for path in ["/livez", "/healthz", "/readyz"] {
        let r = gw.get(path);
        assert_eq!(r.status, 200, "{path}: {}", r.body);
        assert_eq!(r.body, "ok", "{path}");
    }
}

/// OpenAPI v2 in gnostic protobuf (wire §4, §10, DISC-11): kubectl 1.32 fetches
/// `/openapi/v2` to validate a `kind: List` manifest client-side, and for
/// `explain --output=plaintext-openapiv2`.
#[test]
fn openapi_v2_for_list_manifests_and_explain() {
    let gw = start();
    gw.kubectl_ok(&["create", "namespace", "lists"]);
    let good = gw.write_file(
        "list.yaml",
        "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: listed\n  data:\n    k: v\n",
    );
    let out = gw.kubectl_ok(&["-n", "lists", "apply", "-f", good.to_str().unwrap()]);
    assert_contains(&out, &["configmap/listed created"]);
    let bad = gw.write_file(
        "bad-list.yaml",
        "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: bad\n  bogusField: 1\n",
    );
    let err = gw.kubectl_err(&["-n", "lists", "apply", "-f", bad.to_str().unwrap()]);
    assert_contains(&err, &["unknown field \"bogusField\""]);
    let explain = gw.kubectl_ok(&["explain", "configmap", "--output=plaintext-openapiv2"]);
    assert_contains(&explain, &["KIND:     ConfigMap"]);
    assert_contains(&explain, &["data\t<map[string]string>"]);
}
