//! CustomResourceDefinitions with kubectl 1.32 against the real binary (issue 3's quick
//! start, line by line). Item ids refer to /work/shared/SEED-CHECKLIST.md sections 22–25.

use wasmgate_e2e::{
    Gateway, Storage, assert_contains, examples_dir, gateway_builder, widgets_crd_without_plugin,
};

/// `examples/<sub>`, as a kubectl argument.
fn examples(sub: &str) -> String {
    examples_dir().join(sub).to_string_lossy().into_owned()
}

/// The example CRD with conversion strategy `None`: these gateways run no plugins (the
/// widgets plugin's conversion and printer are tested in `plugins.rs`).
fn widgets_crd(gw: &Gateway) -> String {
    widgets_crd_without_plugin(gw.data_dir())
        .to_string_lossy()
        .into_owned()
}

fn start() -> Gateway {
    gateway_builder!().start()
}

/// `kubectl apply -f examples/crds/widgets.yaml` … `kubectl delete crd widgets.example.com`.
#[test]
fn crd_quick_start() {
    let gw = start();
    // CRD-01/02: created and established; listed; its resource discovered (DISC-02/03).
    let out = gw.kubectl_ok(&["apply", "-f", &widgets_crd(&gw)]);
    assert_eq!(
        out,
        "customresourcedefinition.apiextensions.k8s.io/widgets.example.com created\n"
    );
    let crds = gw.kubectl_ok(&["get", "crd"]);
    assert_contains(&crds, &["NAME", "CREATED AT", "widgets.example.com"]);
    let established = gw.kubectl(&[
        "wait",
        "--for=condition=Established",
        "crd/widgets.example.com",
        "--timeout=30s",
    ]);
    assert!(
        established.status.success(),
        "{}",
        String::from_utf8_lossy(&established.stderr)
    );
    let resources = gw.kubectl_ok(&["api-resources"]);
    let line = resources
        .lines()
        .find(|l| l.starts_with("widgets"))
        .expect("widgets in api-resources");
    assert_contains(line, &["wd", "example.com/v1", "true", "Widget"]);

    // Objects: w1 and w2 created, the invalid one rejected with its causes (ERR-08).
    let apply = gw.kubectl(&["apply", "-f", &examples("widgets/")]);
    assert!(!apply.status.success(), "the invalid widget must fail");
    let stdout = String::from_utf8_lossy(&apply.stdout);
    let stderr = String::from_utf8_lossy(&apply.stderr);
    assert_contains(
        &stdout,
        &[
            "widget.example.com/w1 created",
            "widget.example.com/w2 created",
        ],
    );
    assert_contains(
        &stderr,
        &[
            "The Widget \"broken\" is invalid",
            "spec.color: Unsupported value: \"purple\": supported values: \"red\", \"green\", \"blue\"",
            "spec.replicas: Invalid value: 1000: spec.replicas in body should be less than or equal to 100",
        ],
    );
    // A second apply of the valid ones changes nothing (merge patch for CRs, wire §7).
    let again = gw.kubectl(&["apply", "-f", &examples("widgets/w1.yaml")]);
    assert_eq!(
        String::from_utf8_lossy(&again.stdout),
        "widget.example.com/w1 unchanged\n"
    );

    // Printer columns (TABLE-05), -o wide priorities, short name, category all.
    let wide = gw.kubectl_ok(&["get", "widgets", "-o", "wide"]);
    let header: Vec<&str> = wide.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(
        header,
        ["NAME", "COLOR", "REPLICAS", "SIZE", "READY", "AGE"]
    );
    let w1: Vec<&str> = wide
        .lines()
        .find(|l| l.starts_with("w1 "))
        .unwrap()
        .split_whitespace()
        .collect();
    assert_eq!(&w1[..4], ["w1", "blue", "2", "5"]);
    let narrow = gw.kubectl_ok(&["get", "wd"]);
    let header: Vec<&str> = narrow.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(
        header,
        ["NAME", "COLOR", "REPLICAS", "READY", "AGE"],
        "Size has priority 1"
    );
    let w2: Vec<&str> = narrow
        .lines()
        .find(|l| l.starts_with("w2 "))
        .unwrap()
        .split_whitespace()
        .collect();
    assert_eq!(&w2[..3], ["w2", "red", "1"], "replicas defaulted (CRDV-04)");
    let all = gw.kubectl_ok(&["get", "all"]);
    assert_contains(&all, &["w1", "w2"]);

    // explain reads the CRD's published schema (DISC-11).
    let explain = gw.kubectl_ok(&["explain", "widget.spec.replicas"]);
    assert_contains(
        &explain,
        &[
            "KIND:       Widget",
            "FIELD: replicas <integer>",
            "How many copies of the widget to run.",
        ],
    );

    // scale subresource (SUB-02): spec.replicas changes, generation bumps.
    assert_eq!(
        gw.kubectl_ok(&["scale", "widget/w1", "--replicas=3"]),
        "widget.example.com/w1 scaled\n"
    );
    let yaml = gw.kubectl_ok(&["get", "widget", "w1", "-o", "yaml"]);
    assert_contains(
        &yaml,
        &["replicas: 3", "generation: 2", "apiVersion: example.com/v1"],
    );

    // status subresource (SUB-01).
    gw.kubectl_ok(&[
        "patch",
        "widget",
        "w1",
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"status":{"replicas":3,"conditions":[{"type":"Ready","status":"True"}]}}"#,
    ]);
    let row = gw.kubectl_ok(&["get", "wd", "w1", "--no-headers"]);
    let row: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(&row[..4], ["w1", "blue", "3", "True"]);
    // Strategic merge patch is refused for custom resources (PATCH-04).
    let smp = gw.kubectl_err(&["patch", "widget", "w1", "-p", r#"{"spec":{"size":1}}"#]);
    assert_contains(
        &smp,
        &["application/strategic-merge-patch+json is not supported"],
    );
    // The deprecated version still serves, with a warning (WARN-02, CONV-01).
    let old = gw.kubectl(&[
        "get",
        "widgets.v1alpha1.example.com",
        "w1",
        "-o",
        "jsonpath={.apiVersion}",
    ]);
    assert_eq!(String::from_utf8_lossy(&old.stdout), "example.com/v1alpha1");
    assert_contains(
        &String::from_utf8_lossy(&old.stderr),
        &["Warning: example.com/v1alpha1 Widget is deprecated"],
    );

    // Deleting the CRD deletes the widgets (DEL-08) and the endpoint goes (ERR-04).
    assert_eq!(
        gw.kubectl_ok(&["delete", "crd", "widgets.example.com"]),
        "customresourcedefinition.apiextensions.k8s.io \"widgets.example.com\" deleted\n"
    );
    let gone = gw.kubectl(&["get", "widgets"]);
    assert!(!gone.status.success());
    // ERR-04: as the seed shows it.
    assert_contains(
        &String::from_utf8_lossy(&gone.stderr),
        &[
            "Unable to list \"example.com/v1, Resource=widgets\": the server could not find the requested resource",
        ],
    );
    gw.kubectl_ok(&["apply", "-f", &widgets_crd(&gw)]);
    let empty = gw.kubectl(&["get", "widgets"]);
    assert_contains(
        &String::from_utf8_lossy(&empty.stderr),
        &["No resources found"],
    );
}

/// A restart keeps every CRD and its objects, served from the first request: the server
/// loads its stored CRDs before it prints the ready line.
#[test]
fn crds_survive_restart() {
    let dir = tempfile::tempdir().unwrap();
    let mut gw = gateway_builder!()
        .storage(Storage::Embedded)
        .data_dir(dir.path())
        .start();
    gw.kubectl_ok(&["apply", "-f", &widgets_crd(&gw)]);
    gw.kubectl_ok(&["apply", "-f", &examples("widgets/w1.yaml")]);
    gw.stop().unwrap();
    drop(gw);
    let gw = gateway_builder!()
        .storage(Storage::Embedded)
        .data_dir(dir.path())
        .start();
    let got = gw.kubectl_ok(&["get", "widget", "w1", "-o", "jsonpath={.spec.color}"]);
    assert_eq!(got, "blue");
}
