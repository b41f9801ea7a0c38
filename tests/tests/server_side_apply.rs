//! Server-side apply and field management with kubectl 1.32 against the real binary
//! (issue 11): `apply --server-side` create/update/no-op, conflicts and
//! `--force-conflicts`, `diff --server-side`, the upgrade from client-side apply, custom
//! resources merged by their schema's list types, and `managedFields` compared with the
//! documents kube-apiserver records for the same commands (written by hand from seed 000
//! "Server-Side Apply" and structured-merge-diff's rules). Item ids refer to
//! SEED-CHECKLIST.md; "wire §7" to KUBECTL-WIRE.md.

use serde_json::{Value, json};
use wasmgate_e2e::{Gateway, assert_contains, gateway_builder};

fn start() -> Gateway {
    gateway_builder!().start()
}

/// Writes `yaml` into the gateway's work directory; returns its path.
fn file(gw: &Gateway, name: &str, yaml: &str) -> String {
    gw.write_file(name, yaml)
        .to_str()
        .expect("utf-8 path")
        .to_owned()
}

/// A ConfigMap manifest named `name` with `data` (and `extra` lines under metadata).
fn configmap(name: &str, extra: &str, data: &[(&str, &str)]) -> String {
    let mut s = format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n{extra}");
    if !data.is_empty() {
        s.push_str("data:\n");
        for (k, v) in data {
            s.push_str(&format!("  {k}: \"{v}\"\n"));
        }
    }
    s
}

/// The object as `kubectl get -o json --show-managed-fields` prints it.
fn get(gw: &Gateway, what: &str) -> Value {
    let out = gw.kubectl_ok(&["get", what, "-o", "json", "--show-managed-fields"]);
    serde_json::from_str(&out).expect("kubectl prints JSON")
}

/// `metadata.managedFields` without the times, after checking each is RFC 3339 in
/// whole seconds, UTC (`SSA-14`, metav1.Time).
fn managed_without_times(obj: &Value) -> Value {
    let mut entries = obj["metadata"]["managedFields"].clone();
    for e in entries.as_array_mut().expect("managedFields is a list") {
        let time = e["time"]
            .as_str()
            .expect("every entry has a time")
            .to_owned();
        assert!(
            time.len() == 20 && time.ends_with('Z') && time.as_bytes()[10] == b'T',
            "time {time:?}"
        );
        e.as_object_mut().expect("entry").remove("time");
    }
    entries
}

fn entry(manager: &str, operation: &str, fields: Value) -> Value {
    json!({"apiVersion": "v1", "fieldsType": "FieldsV1", "fieldsV1": fields,
        "manager": manager, "operation": operation})
}

/// `apply --server-side` creates (201), applies again without a change (no new
/// resourceVersion), updates, and removes a field its manifest drops; `--dry-run=server`
/// stores nothing (SSA-01, SSA-05, SSA-07, DRY-01, wire §7).
#[test]
fn ssa_01_apply_creates_updates_and_prunes() {
    let gw = start();
    let v1 = file(
        &gw,
        "v1.yaml",
        &configmap("cfg", "", &[("a", "1"), ("b", "2")]),
    );
    assert_eq!(
        gw.kubectl_ok(&["apply", "--server-side", "-f", &v1]),
        "configmap/cfg serverside-applied\n"
    );
    let first = get(&gw, "cm/cfg");
    assert_eq!(first["data"], json!({"a": "1", "b": "2"}));
    gw.kubectl_ok(&["apply", "--server-side", "-f", &v1]);
    let again = get(&gw, "cm/cfg");
    assert_eq!(
        again["metadata"]["resourceVersion"], first["metadata"]["resourceVersion"],
        "the same configuration again writes nothing"
    );
    assert_eq!(
        again["metadata"]["managedFields"],
        first["metadata"]["managedFields"]
    );

    // Dropping b and changing a: b is gone (kubectl was its only owner).
    let v2 = file(&gw, "v2.yaml", &configmap("cfg", "", &[("a", "9")]));
    let dry = gw.kubectl_ok(&["apply", "--server-side", "--dry-run=server", "-f", &v2]);
    assert_eq!(dry, "configmap/cfg serverside-applied (server dry run)\n");
    assert_eq!(get(&gw, "cm/cfg")["data"], json!({"a": "1", "b": "2"}));
    gw.kubectl_ok(&["apply", "--server-side", "-f", &v2]);
    let after = get(&gw, "cm/cfg");
    assert_eq!(after["data"], json!({"a": "9"}));
    assert_eq!(
        managed_without_times(&after),
        json!([entry("kubectl", "Apply", json!({"f:data": {"f:a": {}}}))])
    );
}

/// `apply --server-side`: a second manager conflicts (409 naming the field and the
/// owner), `--force-conflicts` takes the field over (PATCH-05, SSA-04, SSA-06, wire §7).
#[test]
fn ssa_04_conflicts_and_force() {
    let gw = start();
    let one = file(&gw, "one.yaml", &configmap("ssa", "", &[("a", "1")]));
    let two = file(&gw, "two.yaml", &configmap("ssa", "", &[("a", "2")]));
    gw.kubectl_ok(&["apply", "--server-side", "-f", &one]);
    let err = gw.kubectl_err(&[
        "apply",
        "--server-side",
        "--field-manager=other",
        "-f",
        &two,
    ]);
    assert_contains(
        &err,
        &[
            "Apply failed with 1 conflict",
            r#"conflict with "kubectl""#,
            ".data.a",
        ],
    );
    assert_eq!(
        gw.kubectl_ok(&["get", "cm", "ssa", "-o", "jsonpath={.data.a}"]),
        "1"
    );
    gw.kubectl_ok(&[
        "apply",
        "--server-side",
        "--field-manager=other",
        "--force-conflicts",
        "-f",
        &two,
    ]);
    let obj = get(&gw, "cm/ssa");
    assert_eq!(obj["data"]["a"], "2");
    // kubectl lost the field; its entry, now empty, is gone (SSA-13).
    assert_eq!(
        managed_without_times(&obj),
        json!([entry("other", "Apply", json!({"f:data": {"f:a": {}}}))])
    );
}

/// The managedFields kube-apiserver records for create, label, apply and patch by
/// kubectl's default managers, written out by hand from the spec: creators own maps
/// they made (`"."`), appliers own exactly their configuration, a patch takes the field
/// it changed from everyone, and a field left by its only applier is removed
/// (SSA-03, SSA-05, SSA-07, SSA-13, SSA-14).
#[test]
fn ssa_14_managed_fields_as_kube_records_them() {
    let gw = start();
    gw.kubectl_ok(&["create", "configmap", "owned", "--from-literal=a=1"]);
    assert_eq!(
        managed_without_times(&get(&gw, "cm/owned")),
        json!([entry(
            "kubectl-create",
            "Update",
            json!({"f:data": {".": {}, "f:a": {}}})
        )])
    );
    gw.kubectl_ok(&["label", "cm", "owned", "tier=web"]);
    let applied = file(
        &gw,
        "owned.yaml",
        &configmap(
            "owned",
            "  labels:\n    tier: web\n",
            &[("a", "1"), ("b", "2")],
        ),
    );
    // Same values as the other managers hold: shared, no conflict.
    gw.kubectl_ok(&["apply", "--server-side", "-f", &applied]);
    gw.kubectl_ok(&["patch", "cm", "owned", "-p", r#"{"data":{"a":"3"}}"#]);
    assert_eq!(
        managed_without_times(&get(&gw, "cm/owned")),
        json!([
            entry(
                "kubectl",
                "Apply",
                json!({"f:data": {"f:b": {}}, "f:metadata": {"f:labels": {"f:tier": {}}}})
            ),
            entry("kubectl-create", "Update", json!({"f:data": {}})),
            entry(
                "kubectl-label",
                "Update",
                json!({"f:metadata": {"f:labels": {".": {}, "f:tier": {}}}})
            ),
            entry("kubectl-patch", "Update", json!({"f:data": {"f:a": {}}})),
        ])
    );
    // The applier leaves data out: b (its alone) goes, a (the patcher's) stays.
    let labels_only = file(
        &gw,
        "labels.yaml",
        &configmap("owned", "  labels:\n    tier: web\n", &[]),
    );
    gw.kubectl_ok(&["apply", "--server-side", "-f", &labels_only]);
    let obj = get(&gw, "cm/owned");
    assert_eq!(obj["data"], json!({"a": "3"}));
    assert_eq!(
        managed_without_times(&obj)[0],
        entry(
            "kubectl",
            "Apply",
            json!({"f:metadata": {"f:labels": {"f:tier": {}}}})
        )
    );
}

/// `kubectl diff --server-side` shows what an apply would change, and stores nothing
/// (exit 1 with a diff; exit 0 when there is none) (DRY-01, SSA-01, wire §7).
#[test]
fn ssa_diff_server_side() {
    let gw = start();
    let one = file(&gw, "one.yaml", &configmap("d", "", &[("a", "1")]));
    let two = file(&gw, "two.yaml", &configmap("d", "", &[("a", "2")]));
    gw.kubectl_ok(&["apply", "--server-side", "-f", &one]);
    let same = gw.kubectl(&["diff", "--server-side", "-f", &one]);
    assert_eq!(
        same.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&same.stderr)
    );
    let diff = gw.kubectl(&["diff", "--server-side", "-f", &two]);
    let out = String::from_utf8_lossy(&diff.stdout);
    assert_eq!(
        diff.status.code(),
        Some(1),
        "{out}{}",
        String::from_utf8_lossy(&diff.stderr)
    );
    assert_contains(&out, &["-  a: \"1\"", "+  a: \"2\""]);
    assert_eq!(
        gw.kubectl_ok(&["get", "cm", "d", "-o", "jsonpath={.data.a}"]),
        "1"
    );
}

/// An object made by client-side `kubectl apply` moves to server-side apply without a
/// conflict: its fields go to the `kubectl` applier, a field the new manifest drops is
/// removed, the last-applied annotation follows, and client-side apply still works
/// afterwards (SSA-12, wire §7).
#[test]
fn ssa_12_client_side_apply_upgrades_without_conflicts() {
    let gw = start();
    let old = file(
        &gw,
        "old.yaml",
        &configmap(
            "up",
            "  labels:\n    app: demo\n",
            &[("a", "1"), ("b", "2")],
        ),
    );
    assert_eq!(
        gw.kubectl_ok(&["apply", "-f", &old]),
        "configmap/up created\n"
    );
    let csa = get(&gw, "cm/up");
    assert_eq!(
        csa["metadata"]["managedFields"][0]["manager"],
        "kubectl-client-side-apply"
    );
    let new = file(
        &gw,
        "new.yaml",
        &configmap(
            "up",
            "  labels:\n    app: demo\n",
            &[("a", "10"), ("c", "3")],
        ),
    );
    assert_eq!(
        gw.kubectl_ok(&["apply", "--server-side", "-f", &new]),
        "configmap/up serverside-applied\n"
    );
    let ssa = get(&gw, "cm/up");
    assert_eq!(ssa["data"], json!({"a": "10", "c": "3"}));
    let managers: Vec<&str> = ssa["metadata"]["managedFields"]
        .as_array()
        .expect("entries")
        .iter()
        .filter_map(|e| e["manager"].as_str())
        .collect();
    assert!(
        !managers.contains(&"kubectl-client-side-apply"),
        "client-side apply's fields moved: {managers:?}"
    );
    let kubectl = ssa["metadata"]["managedFields"]
        .as_array()
        .expect("entries")
        .iter()
        .find(|e| e["manager"] == "kubectl" && e["operation"] == "Apply")
        .expect("a kubectl Apply entry");
    for f in ["f:a", "f:c"] {
        assert!(kubectl["fieldsV1"]["f:data"].get(f).is_some(), "{kubectl}");
    }
    let annotation =
        ssa["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
            .as_str()
            .expect("the annotation stays");
    let last: Value = serde_json::from_str(annotation).expect("annotation is JSON");
    assert_eq!(last["data"], json!({"a": "10", "c": "3"}));

    // A non-default manager opts out: its change of a kubectl-owned field conflicts.
    let other = file(&gw, "other.yaml", &configmap("up", "", &[("a", "11")]));
    let err = gw.kubectl_err(&[
        "apply",
        "--server-side",
        "--field-manager=mine",
        "-f",
        &other,
    ]);
    assert_contains(&err, &[r#"conflict with "kubectl""#, ".data.a"]);

    // And back to client-side apply: the annotation is current, the object stays.
    gw.kubectl_ok(&["apply", "-f", &new]);
    assert_eq!(get(&gw, "cm/up")["data"], json!({"a": "10", "c": "3"}));
}

const RACKS: &str = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: racks.ssa.example.com
spec:
  group: ssa.example.com
  scope: Namespaced
  names: {plural: racks, singular: rack, kind: Rack}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer}
              ports:
                type: array
                x-kubernetes-list-type: map
                x-kubernetes-list-map-keys: [name]
                items:
                  type: object
                  required: [name]
                  properties:
                    name: {type: string}
                    port: {type: integer}
              tags:
                type: array
                x-kubernetes-list-type: set
                items: {type: string}
              hosts:
                type: array
                items: {type: string}
"#;

fn rack(ports: &[(&str, u16)], tags: &[&str], hosts: &[&str]) -> String {
    let mut s =
        "apiVersion: ssa.example.com/v1\nkind: Rack\nmetadata:\n  name: r\nspec:\n".to_owned();
    if !ports.is_empty() {
        s.push_str("  ports:\n");
    }
    for (n, p) in ports {
        s.push_str(&format!("  - name: {n}\n    port: {p}\n"));
    }
    s.push_str(&format!("  tags: {tags:?}\n  hosts: {hosts:?}\n"));
    s
}

/// A custom resource merges by its schema: map lists item by key, set lists by value,
/// other lists atomic (owned whole, so a second applier's list conflicts) (SSA-08, SSA-09).
#[test]
fn ssa_08_custom_resource_lists_merge_by_schema() {
    let gw = start();
    let crd = file(&gw, "racks.yaml", RACKS);
    gw.kubectl_ok(&["apply", "--server-side", "-f", &crd]);
    gw.kubectl_ok(&[
        "wait",
        "--for=condition=Established",
        "crd/racks.ssa.example.com",
        "--timeout=30s",
    ]);
    let alice = file(&gw, "alice.yaml", &rack(&[("http", 80)], &["a"], &["h1"]));
    let bob = file(
        &gw,
        "bob.yaml",
        &rack(&[("metrics", 9090)], &["b"], &["h1"]),
    );
    gw.kubectl_ok(&[
        "apply",
        "--server-side",
        "--field-manager=alice",
        "-f",
        &alice,
    ]);
    gw.kubectl_ok(&["apply", "--server-side", "--field-manager=bob", "-f", &bob]);
    let obj = get(&gw, "rack/r");
    assert_eq!(
        obj["spec"]["ports"],
        json!([{"name": "http", "port": 80}, {"name": "metrics", "port": 9090}])
    );
    assert_eq!(obj["spec"]["tags"], json!(["a", "b"]));
    assert_eq!(
        obj["spec"]["hosts"],
        json!(["h1"]),
        "the same atomic list: shared"
    );

    // Bob changes Alice's port and the atomic list: two conflicts with alice.
    let bob2 = file(&gw, "bob2.yaml", &rack(&[("http", 8080)], &["b"], &["h2"]));
    let err = gw.kubectl_err(&["apply", "--server-side", "--field-manager=bob", "-f", &bob2]);
    assert_contains(
        &err,
        &[
            "Apply failed with 2 conflicts",
            r#"conflicts with "alice""#,
            r#".spec.ports[name="http"].port"#,
            ".spec.hosts",
        ],
    );
    // Alice drops her port: it goes (hers alone); Bob's stays.
    let alice2 = file(&gw, "alice2.yaml", &rack(&[], &["a"], &["h1"]));
    gw.kubectl_ok(&[
        "apply",
        "--server-side",
        "--field-manager=alice",
        "-f",
        &alice2,
    ]);
    assert_eq!(
        get(&gw, "rack/r")["spec"]["ports"],
        json!([{"name": "metrics", "port": 9090}])
    );
}
