//! Kubernetes' own extension points, end to end with kubectl 1.32 (issue 13): the widgets
//! CRD of `examples/` converted by an HTTPS conversion webhook instead of its Wasm plugin,
//! and the plugin's validation rule as a validating admission webhook
//! (`wasmgate-fixtures` serves both, with the plugin's logic). Read back in both versions;
//! denied with the webhook's message, where `plugins.rs` sees the plugin deny the same
//! object with its own.
#![allow(clippy::unwrap_used, reason = "test code: a panic is the failure")]

use wasmgate_e2e::{assert_contains, examples_dir, gateway_builder};

#[test]
fn widgets_converted_and_validated_by_webhooks() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let hook = rt.block_on(wasmgate_fixtures::Webhook::start()).unwrap();
    let gw = gateway_builder!().start();

    // The example CRD, converted by the fixture's webhook instead of `wasm://widgets`.
    let crd = std::fs::read_to_string(examples_dir().join("crds/widgets.yaml"))
        .unwrap()
        .replace(
            "        url: wasm://widgets\n",
            &format!(
                "        url: {}\n        caBundle: {}\n",
                hook.url("/widgets/convert"),
                hook.ca_bundle()
            ),
        );
    assert!(crd.contains("caBundle"));
    let crd = gw.write_file("widgets-webhook.yaml", &crd);
    gw.kubectl_ok(&["apply", "-f", &crd.to_string_lossy()]);
    let config = gw.write_file(
        "validate-widgets.yaml",
        &format!(
            "apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: widgets
webhooks:
- name: widgets.example.com
  clientConfig:
    url: {}
    caBundle: {}
  rules:
  - operations: [CREATE, UPDATE]
    apiGroups: [example.com]
    apiVersions: ['*']
    resources: [widgets]
  sideEffects: None
  admissionReviewVersions: [v1]
",
            hook.url("/widgets/validate"),
            hook.ca_bundle()
        ),
    );
    gw.kubectl_ok(&["apply", "-f", &config.to_string_lossy()]);
    let listed = gw.kubectl_ok(&["get", "validatingwebhookconfigurations"]);
    assert_contains(&listed, &["NAME", "WEBHOOKS", "widgets", "1"]);

    // Written at v1alpha1, stored at v1 through the webhook; read in both versions.
    let alpha = gw.write_file(
        "alpha.yaml",
        "apiVersion: example.com/v1alpha1\nkind: Widget\nmetadata:\n  name: a1\nspec:\n  colour: green\n  dimensions:\n    size: 4\n  replicas: 3\n",
    );
    gw.kubectl_ok(&["apply", "-f", &alpha.to_string_lossy()]);
    let v1 = gw.kubectl_ok(&[
        "get",
        "widgets.v1.example.com",
        "a1",
        "-o",
        "jsonpath={.apiVersion} {.spec.color} {.spec.size}",
    ]);
    assert_eq!(v1, "example.com/v1 green 4");
    let v1alpha1 = gw.kubectl_ok(&[
        "get",
        "widgets.v1alpha1.example.com",
        "a1",
        "-o",
        "jsonpath={.apiVersion} {.spec.colour} {.spec.dimensions.size}",
    ]);
    assert_eq!(v1alpha1, "example.com/v1alpha1 green 4");

    // The plugin's rule, as a webhook: denied with its message, whichever version.
    for (name, version, spec) in [
        ("big", "v1", "  color: red\n  size: 9\n  replicas: 6\n"),
        (
            "big-alpha",
            "v1alpha1",
            "  colour: red\n  dimensions:\n    size: 9\n  replicas: 6\n",
        ),
    ] {
        let big = gw.write_file(
            &format!("{name}.yaml"),
            &format!(
                "apiVersion: example.com/{version}\nkind: Widget\nmetadata:\n  name: {name}\nspec:\n{spec}"
            ),
        );
        let err = gw.kubectl_err(&["apply", "-f", &big.to_string_lossy()]);
        assert_contains(
            &err,
            &[
                "Error from server (Forbidden)",
                "admission webhook \"widgets.example.com\" denied the request: a widget of size 9 runs at most 5 replicas, not 6",
            ],
        );
        gw.kubectl_err(&["get", "widget", name]);
    }
    assert!(hook.calls() >= 4, "{} calls", hook.calls());
}

/// The same rule as a ValidatingAdmissionPolicy (`examples/policies/widgets.yaml`): CEL
/// in the gateway denies the same widgets, worded as kube-apiserver words it.
#[test]
fn widgets_validated_by_an_admission_policy() {
    let gw = gateway_builder!().start();
    let crd = wasmgate_e2e::widgets_crd_without_plugin(gw.data_dir());
    gw.kubectl_ok(&["apply", "-f", &crd.to_string_lossy()]);
    let policy = examples_dir().join("policies/widgets.yaml");
    gw.kubectl_ok(&["apply", "-f", &policy.to_string_lossy()]);
    let listed = gw.kubectl_ok(&[
        "get",
        "validatingadmissionpolicies,validatingadmissionpolicybindings",
    ]);
    assert_contains(
        &listed,
        &["validatingadmissionpolicy.admissionregistration.k8s.io/widgets"],
    );
    let big = gw.write_file(
        "big.yaml",
        "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: big\nspec:\n  color: red\n  size: 9\n  replicas: 6\n",
    );
    let err = gw.kubectl_err(&["apply", "-f", &big.to_string_lossy()]);
    assert_contains(
        &err,
        &[
            "Error from server (Forbidden)",
            "widgets.example.com \"big\" is forbidden: ValidatingAdmissionPolicy 'widgets' with binding 'widgets' denied request: a widget of size 9 runs at most 5 replicas, not 6",
        ],
    );
    gw.kubectl_err(&["get", "widget", "big"]);
    let ok = gw.write_file(
        "ok.yaml",
        "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: ok\nspec:\n  color: red\n  size: 9\n  replicas: 5\n",
    );
    gw.kubectl_ok(&["apply", "-f", &ok.to_string_lossy()]);
    // Its type checking is reported (by a controller, soon after the write), empty.
    wasmgate_e2e::poll(
        "the policy's status",
        std::time::Duration::from_secs(10),
        || {
            let checked = gw.kubectl_ok(&[
                "get",
                "validatingadmissionpolicy",
                "widgets",
                "-o",
                "jsonpath={.status.typeChecking}",
            ]);
            (checked == "{\"expressionWarnings\":[]}").then_some(())
        },
    );
}

/// The aggregation layer (issue 13, item 1): an extension API server (the
/// `wasmgate-fixtures` one) behind an `APIService` answers `kubectl get` through the
/// gateway, which tells it the caller with request-header authentication, and its
/// resources are in `kubectl api-resources`; stopped, its group answers 503 while the rest
/// is unaffected, and the `APIService` says why.
#[test]
fn an_extension_api_server_behind_an_apiservice() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let gw = gateway_builder!().start();
    let front_ca = std::fs::read_to_string(gw.data_dir().join("pki/front-proxy/ca.crt")).unwrap();
    let ext = rt
        .block_on(wasmgate_fixtures::ExtensionServer::start(0, &front_ca))
        .unwrap();
    let published = gw.kubectl_ok(&[
        "-n",
        "kube-system",
        "get",
        "configmap",
        "extension-apiserver-authentication",
        "-o",
        "jsonpath={.data.requestheader-client-ca-file}",
    ]);
    assert_eq!(published.trim(), front_ca.trim());
    let apiservice = gw.write_file(
        "apiservice.yaml",
        &format!(
            "apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata:
  name: v1alpha1.wardle.example.com
  annotations:
    wasmgate.dev/backend: {}
spec:
  group: wardle.example.com
  version: v1alpha1
  service: {{namespace: wardle, name: api}}
  caBundle: {}
  groupPriorityMinimum: 1000
  versionPriority: 15
",
            ext.url(),
            ext.ca_bundle()
        ),
    );
    gw.kubectl_ok(&["apply", "-f", &apiservice.to_string_lossy()]);
    let condition = |gw: &wasmgate_e2e::Gateway| {
        gw.kubectl_ok(&[
            "get",
            "apiservice",
            "v1alpha1.wardle.example.com",
            "-o",
            "jsonpath={.status.conditions[0].status} {.status.conditions[0].reason}",
        ])
    };
    let within = std::time::Duration::from_secs(20);
    wasmgate_e2e::poll("the APIService to be Available", within, || {
        (condition(&gw) == "True Passed").then_some(())
    });

    let listed = gw.kubectl_ok(&["get", "flunders", "-n", "default"]);
    assert_contains(&listed, &["NAME", "REFERENCE", "hello", "wasmgate-admin"]);
    let (user, groups) = ext.last_user().unwrap();
    assert_eq!(user, "wasmgate-admin");
    assert!(groups.iter().any(|g| g == "system:masters"), "{groups:?}");
    let resources = gw.kubectl_ok(&["api-resources", "--api-group=wardle.example.com"]);
    assert_contains(
        &resources,
        &["flunders", "fl", "wardle.example.com/v1alpha1", "Flunder"],
    );
    let index = gw.kubectl_ok(&["get", "--raw", "/openapi/v3"]);
    assert_contains(&index, &["\"apis/wardle.example.com/v1alpha1\""]);
    let err = gw.kubectl_err(&["get", "flunder", "nope", "-n", "default"]);
    assert_contains(&err, &["flunders.wardle.example.com \"nope\" not found"]);

    // Down: its group is 503, the rest is served, the APIService says why.
    ext.stop();
    let err = gw.kubectl_err(&["get", "flunders", "-n", "default"]);
    assert_contains(
        &err,
        &[
            "ServiceUnavailable",
            "the server is currently unable to handle the request",
        ],
    );
    gw.kubectl_ok(&["get", "configmaps", "-n", "default"]);
    wasmgate_e2e::poll("the APIService to be unavailable", within, || {
        (condition(&gw) == "False FailedDiscoveryCheck").then_some(())
    });
}
