//! `events.k8s.io/v1` with kubectl 1.32 against the real binary (issue 24, item 5): what
//! kube-rs's `Recorder` and client-go's events API write, served over the core Events'
//! storage — `kubectl create -f` of an events.k8s.io/v1 Event, `kubectl get
//! events.events.k8s.io` (kube's event columns), the same event through `kubectl get
//! events`, a watch of one group seeing writes through the other, field selectors,
//! `kubectl explain --api-version=events.k8s.io/v1`, `kubectl api-resources`, 422 causes, and RBAC on
//! `events.events.k8s.io` as kube's default roles grant it.

use std::time::Duration;

use wasmgate_e2e::{assert_contains, gateway_builder, table};

const RECORDED: &str = r#"apiVersion: events.k8s.io/v1
kind: Event
metadata:
  name: cm.17c2a1
  namespace: default
eventTime: "2025-06-01T10:00:00.000000Z"
reportingController: example.com/ctl
reportingInstance: ctl-1
action: Reconcile
reason: Synced
type: Normal
regarding: {apiVersion: v1, kind: ConfigMap, name: app, namespace: default}
note: reconciled app
"#;

/// ISSUE-24.5: an events.k8s.io/v1 Event created with kubectl is listed by both groups
/// (kube's event printer columns for both), read back in each group's form, selected by
/// each group's field labels, and watched across groups.
#[test]
fn issue_24_5_kubectl_creates_and_reads_events_in_both_groups() {
    let gw = gateway_builder!().start();
    let file = gw.write_file("event.yaml", RECORDED);
    assert_eq!(
        gw.kubectl_ok(&["create", "-f", file.to_str().unwrap()]),
        "event.events.k8s.io/cm.17c2a1 created\n"
    );
    let t = table(&gw.kubectl_ok(&["get", "events.events.k8s.io"]));
    assert_eq!(
        t[0],
        ["LAST", "SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]
    );
    assert_eq!(
        t[1][1..],
        ["Normal", "Synced", "configmap/app", "reconciled", "app"]
    );
    // -o wide: kube's wide columns (source = controller, instance; count 1).
    let t = table(&gw.kubectl_ok(&["get", "events.events.k8s.io", "-o", "wide"]));
    assert_eq!(
        t[0],
        [
            "LAST",
            "SEEN",
            "TYPE",
            "REASON",
            "OBJECT",
            "SUBOBJECT",
            "SOURCE",
            "MESSAGE",
            "FIRST",
            "SEEN",
            "COUNT",
            "NAME"
        ]
    );
    assert!(
        t[1].ends_with(&["1".to_owned(), "cm.17c2a1".to_owned()]),
        "{t:?}"
    );
    // The core API shows the same event, in its own form.
    assert_eq!(
        gw.kubectl_ok(&[
            "get",
            "events",
            "cm.17c2a1",
            "-o",
            "jsonpath={.apiVersion} {.message} {.involvedObject.name} {.reportingComponent}"
        ]),
        "v1 reconciled app app example.com/ctl"
    );
    assert_eq!(
        gw.kubectl_ok(&[
            "get",
            "events.v1.events.k8s.io",
            "cm.17c2a1",
            "-o",
            "jsonpath={.apiVersion} {.note} {.regarding.kind} {.reportingController}"
        ]),
        "events.k8s.io/v1 reconciled app ConfigMap example.com/ctl"
    );

    // A watch of events.k8s.io sees an event written through the core API.
    let mut watch = gw.kubectl_background(&[
        "get",
        "events.events.k8s.io",
        "--watch-only",
        "-o",
        "jsonpath={.metadata.name} {.note}{\"\\n\"}",
    ]);
    std::thread::sleep(Duration::from_millis(800));
    let core = gw.write_file(
        "core.yaml",
        "apiVersion: v1\nkind: Event\nmetadata: {name: legacy.1}\ninvolvedObject: {kind: Secret, name: s, namespace: default}\nreason: Created\nmessage: written through v1\ntype: Warning\nsource: {component: e2e}\n",
    );
    assert_eq!(
        gw.kubectl_ok(&["create", "-f", core.to_str().unwrap()]),
        "event/legacy.1 created\n"
    );
    let lines = watch.wait_for_lines(
        "the core write in the events.k8s.io watch",
        Duration::from_secs(20),
        |l| l.iter().any(|x| x == "legacy.1 written through v1"),
    );
    assert!(
        !lines.iter().any(|l| l.starts_with("cm.17c2a1")),
        "{lines:?}"
    );
    watch.kill();

    // Field selectors of each group.
    assert_eq!(
        gw.kubectl_ok(&[
            "get",
            "events.events.k8s.io",
            "--field-selector",
            "regarding.kind=Secret",
            "-o",
            "name"
        ]),
        "event.events.k8s.io/legacy.1\n"
    );
    assert_eq!(
        gw.kubectl_ok(&[
            "get",
            "events.events.k8s.io",
            "--field-selector",
            "reportingController=example.com/ctl",
            "-o",
            "name"
        ]),
        "event.events.k8s.io/cm.17c2a1\n"
    );
    assert_eq!(
        gw.kubectl_ok(&[
            "get",
            "events",
            "--field-selector",
            "involvedObject.kind=ConfigMap",
            "-o",
            "name"
        ]),
        "event/cm.17c2a1\n"
    );
    assert_contains(
        &gw.kubectl_err(&[
            "get",
            "events.events.k8s.io",
            "--field-selector",
            "involvedObject.kind=Secret",
        ]),
        &["field label not supported: involvedObject.kind"],
    );
    // Deleted through events.k8s.io: gone from the core API too.
    assert_eq!(
        gw.kubectl_ok(&["delete", "events.events.k8s.io", "legacy.1"]),
        "event.events.k8s.io \"legacy.1\" deleted\n"
    );
    assert_contains(
        &gw.kubectl_err(&["get", "event", "legacy.1"]),
        &["NotFound", "\"legacy.1\" not found"],
    );
}

/// ISSUE-24.5: discovery (`kubectl api-resources`), OpenAPI (`kubectl explain`), kube's
/// events.k8s.io/v1 validation as kubectl shows a 422, and RBAC on
/// `events.events.k8s.io` (kube's `view` grants core events only).
#[test]
fn issue_24_5_kubectl_discovers_explains_validates_and_authorizes() {
    let gw = gateway_builder!().start();
    let t = table(&gw.kubectl_ok(&["api-resources", "--api-group=events.k8s.io"]));
    assert_eq!(t[1], ["events", "ev", "events.k8s.io/v1", "true", "Event"]);
    // kubectl explain takes the group from --api-version (RESOURCE.FIELD otherwise).
    let explained = gw.kubectl_ok(&["explain", "events", "--api-version=events.k8s.io/v1"]);
    assert_contains(
        &explained,
        &[
            "GROUP:      events.k8s.io",
            "KIND:       Event",
            "VERSION:    v1",
            "note\t<string>",
            "regarding\t<ObjectReference>",
            "deprecatedCount\t<integer>",
        ],
    );
    assert_contains(
        &gw.kubectl_ok(&["explain", "events.series", "--api-version=events.k8s.io/v1"]),
        &[
            "FIELD: series <EventSeries>",
            "lastObservedTime\t<string> -required-",
        ],
    );

    let bad = gw.write_file(
        "bad.yaml",
        &RECORDED
            .replace("eventTime: \"2025-06-01T10:00:00.000000Z\"\n", "")
            .replace("type: Normal", "type: Fatal"),
    );
    let err = gw.kubectl_err(&["create", "-f", bad.to_str().unwrap()]);
    assert_contains(
        &err,
        &[
            "The Event \"cm.17c2a1\" is invalid: ",
            "eventTime: Required value",
            "type: Invalid value: \"\": has invalid value: Fatal",
        ],
    );

    // RBAC: kube's `view` lists core `events`, not `events.events.k8s.io`; a role naming
    // the events API grants it.
    gw.kubectl_ok(&[
        "create",
        "rolebinding",
        "alice-view",
        "--clusterrole=view",
        "--user=alice",
    ]);
    let can = |args: &[&str]| {
        let mut all = vec!["auth", "can-i"];
        all.extend_from_slice(args);
        all.push("--as=alice");
        let out = gw.kubectl(&all);
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    };
    assert_eq!(can(&["list", "events"]), "yes");
    assert_eq!(can(&["list", "events.events.k8s.io"]), "no");
    gw.kubectl_ok(&[
        "create",
        "role",
        "recorder",
        "--verb=create,patch,list",
        "--resource=events.events.k8s.io",
    ]);
    gw.kubectl_ok(&[
        "create",
        "rolebinding",
        "alice-recorder",
        "--role=recorder",
        "--user=alice",
    ]);
    assert_eq!(can(&["create", "events.events.k8s.io"]), "yes");
    assert_eq!(can(&["create", "events"]), "no");
    let file = gw.write_file("event.yaml", RECORDED);
    assert_eq!(
        gw.kubectl_ok(&["create", "-f", file.to_str().unwrap(), "--as=alice"]),
        "event.events.k8s.io/cm.17c2a1 created\n"
    );
    assert_contains(
        &gw.kubectl_err(&["delete", "events.events.k8s.io", "cm.17c2a1", "--as=alice"]),
        &[
            "User \"alice\" cannot delete resource \"events\" in API group \"events.k8s.io\" in the namespace \"default\"",
        ],
    );
}
