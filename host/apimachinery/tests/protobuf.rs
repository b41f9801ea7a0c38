//! ENC-04: decoding of Kubernetes protobuf request bodies.
//!
//! The `fixtures/protobuf/*.pb` bodies were recorded from kubectl v1.32.4 (the machine
//! image's dispatcher build, pinned to 1.32 by a recording server answering `/version` with
//! minor 32); each test names the command that produced its fixture. Kinds kubectl's
//! generators cannot produce are built with the small encoder below.

use serde_json::{Value, json};
use wasmgate_apimachinery::protobuf::{MAGIC, ProtobufError, decode, supported_kinds};

// ---------------------------------------------------------------------------------------------
// Test-only protobuf encoder
// ---------------------------------------------------------------------------------------------

#[derive(Default, Clone)]
struct Pb(Vec<u8>);

impl Pb {
    fn new() -> Self {
        Pb::default()
    }

    fn put_varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.0.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.0.push(v as u8);
    }

    fn tag(mut self, field: u32, wire_type: u8) -> Self {
        self.put_varint((u64::from(field) << 3) | u64::from(wire_type));
        self
    }

    fn varint(self, field: u32, v: u64) -> Self {
        let mut s = self.tag(field, 0);
        s.put_varint(v);
        s
    }

    /// int32/int64/bool as Go writes them (negative values sign-extended to 10 bytes).
    fn int(self, field: u32, v: i64) -> Self {
        self.varint(field, v as u64)
    }

    fn bytes(self, field: u32, b: &[u8]) -> Self {
        let mut s = self.tag(field, 2);
        s.put_varint(b.len() as u64);
        s.0.extend_from_slice(b);
        s
    }

    fn string(self, field: u32, v: &str) -> Self {
        self.bytes(field, v.as_bytes())
    }

    fn msg(self, field: u32, m: Pb) -> Self {
        self.bytes(field, &m.0)
    }

    fn fixed32(self, field: u32, v: u32) -> Self {
        let mut s = self.tag(field, 5);
        s.0.extend_from_slice(&v.to_le_bytes());
        s
    }

    fn fixed64(self, field: u32, v: u64) -> Self {
        let mut s = self.tag(field, 1);
        s.0.extend_from_slice(&v.to_le_bytes());
        s
    }

    fn group(self, field: u32, inner: Pb) -> Self {
        let mut s = self.tag(field, 3);
        s.0.extend_from_slice(&inner.0);
        s.tag(field, 4)
    }

    fn entry(self, field: u32, key: &str, value: &[u8]) -> Self {
        self.msg(field, Pb::new().string(1, key).bytes(2, value))
    }

    fn time(self, field: u32, seconds: i64, nanos: i64) -> Self {
        self.msg(field, Pb::new().int(1, seconds).int(2, nanos))
    }

    fn raw(mut self, bytes: &[u8]) -> Self {
        self.0.extend_from_slice(bytes);
        self
    }
}

/// A complete body: magic + `runtime.Unknown`, written like Go writes it (empty
/// contentEncoding and contentType present).
fn envelope(api_version: &str, kind: &str, raw: &Pb) -> Vec<u8> {
    let unknown = Pb::new()
        .msg(1, Pb::new().string(1, api_version).string(2, kind))
        .bytes(2, &raw.0)
        .string(3, "")
        .string(4, "");
    let mut body = MAGIC.to_vec();
    body.extend_from_slice(&unknown.0);
    body
}

fn decoded(body: &[u8]) -> String {
    match decode(body) {
        Ok(v) => serde_json::to_string(&v).expect("serialize"),
        Err(e) => panic!("decode failed: {e}"),
    }
}

/// Exact comparison, key order included.
#[track_caller]
fn assert_decodes(body: &[u8], expected: Value) {
    assert_eq!(
        decoded(body),
        serde_json::to_string(&expected).expect("serialize")
    );
}

#[track_caller]
fn assert_malformed(body: &[u8], want_path: &str, want_message: &str) {
    match decode(body) {
        Err(ProtobufError::Malformed { path, message }) => {
            assert_eq!(path, want_path, "message was {message:?}");
            assert!(
                message.contains(want_message),
                "{message:?} does not contain {want_message:?}"
            );
        }
        other => panic!("expected Malformed at {want_path}, got {other:?}"),
    }
}

/// ObjectMeta as a Go client writes it for a new object: every value field present.
fn go_meta(name: &str, namespace: &str) -> Pb {
    Pb::new()
        .string(1, name)
        .string(2, "")
        .string(3, namespace)
        .string(4, "")
        .string(5, "")
        .string(6, "")
        .int(7, 0)
        .bytes(8, &[])
}

const T0: i64 = 1_700_000_000; // 2023-11-14T22:13:20Z

// ---------------------------------------------------------------------------------------------
// Fixtures recorded from kubectl
// ---------------------------------------------------------------------------------------------

const CONFIGMAP_LITERALS: &[u8] = include_bytes!("fixtures/protobuf/configmap-literals.pb");
const CONFIGMAP_BINARY: &[u8] = include_bytes!("fixtures/protobuf/configmap-binary.pb");
const CONFIGMAP_SAVE_CONFIG: &[u8] = include_bytes!("fixtures/protobuf/configmap-save-config.pb");
const NAMESPACE: &[u8] = include_bytes!("fixtures/protobuf/namespace.pb");
const SECRET_GENERIC: &[u8] = include_bytes!("fixtures/protobuf/secret-generic.pb");
const SECRET_CUSTOM_TYPE: &[u8] = include_bytes!("fixtures/protobuf/secret-custom-type.pb");
const SECRET_DOCKER_REGISTRY: &[u8] = include_bytes!("fixtures/protobuf/secret-docker-registry.pb");
const SERVICEACCOUNT: &[u8] = include_bytes!("fixtures/protobuf/serviceaccount.pb");

const FIXTURES: &[(&str, &[u8])] = &[
    ("configmap-literals", CONFIGMAP_LITERALS),
    ("configmap-binary", CONFIGMAP_BINARY),
    ("configmap-save-config", CONFIGMAP_SAVE_CONFIG),
    ("namespace", NAMESPACE),
    ("secret-generic", SECRET_GENERIC),
    ("secret-custom-type", SECRET_CUSTOM_TYPE),
    ("secret-docker-registry", SECRET_DOCKER_REGISTRY),
    ("serviceaccount", SERVICEACCOUNT),
];

/// ENC-04: `kubectl create configmap app --from-literal=k=v --from-literal=x=y -n demo`
#[test]
fn enc04_kubectl_create_configmap_from_literals() {
    assert_decodes(
        CONFIGMAP_LITERALS,
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": "app", "namespace": "demo", "creationTimestamp": null},
               "data": {"k": "v", "x": "y"}}),
    );
}

/// ENC-04: `kubectl create configmap bin --from-file=blob=bin.dat --from-literal=text=hello -n demo`
/// where bin.dat holds the bytes 00 01 02 ff fe " binary" 80 (not UTF-8, so binaryData).
#[test]
fn enc04_kubectl_create_configmap_binary_data() {
    assert_decodes(
        CONFIGMAP_BINARY,
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": "bin", "namespace": "demo", "creationTimestamp": null},
               "data": {"text": "hello"},
               "binaryData": {"blob": "AAEC//4gYmluYXJ5gA=="}}),
    );
}

/// ENC-04: `kubectl create configmap saved --from-literal=a=1 --save-config -n demo`.
/// kubectl stores Go's `json.Marshal` of the same object in the annotation, so the decoded
/// object (minus that annotation) must match it key for key, in order.
#[test]
fn enc04_kubectl_save_config_annotation_matches_go_json() {
    let mut ours = decode(CONFIGMAP_SAVE_CONFIG).unwrap();
    let annotation =
        ours["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
            .as_str()
            .unwrap()
            .to_owned();
    let mut go: Value = serde_json::from_str(&annotation).unwrap();
    let meta = ours["metadata"].as_object_mut().unwrap();
    assert_eq!(
        meta.remove("annotations")
            .unwrap()
            .as_object()
            .unwrap()
            .len(),
        1
    );
    // Go writes kind before apiVersion; this decoder puts apiVersion first.
    for object in [&mut ours, &mut go] {
        let object = object.as_object_mut().unwrap();
        assert!(object.shift_remove("kind").is_some());
        assert!(object.shift_remove("apiVersion").is_some());
    }
    assert_eq!(
        serde_json::to_string(&ours).unwrap(),
        serde_json::to_string(&go).unwrap()
    );
}

/// ENC-04: `kubectl create namespace demo` (Go always writes spec and status).
#[test]
fn enc04_kubectl_create_namespace() {
    assert_decodes(
        NAMESPACE,
        json!({"apiVersion": "v1", "kind": "Namespace",
               "metadata": {"name": "demo", "creationTimestamp": null},
               "spec": {}, "status": {}}),
    );
}

/// ENC-04: `kubectl create secret generic s --from-literal=password=hunter2 -n demo`
/// (kubectl sends an empty type).
#[test]
fn enc04_kubectl_create_secret_generic() {
    assert_decodes(
        SECRET_GENERIC,
        json!({"apiVersion": "v1", "kind": "Secret",
               "metadata": {"name": "s", "namespace": "demo", "creationTimestamp": null},
               "data": {"password": "aHVudGVyMg=="}}),
    );
}

/// ENC-04: `kubectl create secret generic typed --type=example.com/custom --from-literal=token=abc -n demo`
#[test]
fn enc04_kubectl_create_secret_with_type() {
    assert_decodes(
        SECRET_CUSTOM_TYPE,
        json!({"apiVersion": "v1", "kind": "Secret",
               "metadata": {"name": "typed", "namespace": "demo", "creationTimestamp": null},
               "data": {"token": "YWJj"},
               "type": "example.com/custom"}),
    );
}

/// ENC-04: `kubectl create secret docker-registry regcred --docker-server=registry.example.com
/// --docker-username=u --docker-password=p --docker-email=u@example.com -n demo`
/// (a body over 127 bytes: multi-byte length varints).
#[test]
fn enc04_kubectl_create_secret_docker_registry() {
    let config = r#"{"auths":{"registry.example.com":{"username":"u","password":"p","email":"u@example.com","auth":"dTpw"}}}"#;
    use base64::Engine as _;
    let encoded = base64::engine::general_purpose::STANDARD.encode(config);
    assert_decodes(
        SECRET_DOCKER_REGISTRY,
        json!({"apiVersion": "v1", "kind": "Secret",
               "metadata": {"name": "regcred", "namespace": "demo", "creationTimestamp": null},
               "data": {".dockerconfigjson": encoded},
               "type": "kubernetes.io/dockerconfigjson"}),
    );
}

/// ENC-04: `kubectl create serviceaccount sa -n demo`
#[test]
fn enc04_kubectl_create_serviceaccount() {
    assert_decodes(
        SERVICEACCOUNT,
        json!({"apiVersion": "v1", "kind": "ServiceAccount",
               "metadata": {"name": "sa", "namespace": "demo", "creationTimestamp": null}}),
    );
}

// ---------------------------------------------------------------------------------------------
// Robustness
// ---------------------------------------------------------------------------------------------

/// Reads a varint at `pos` (test helper for locating the envelope's `raw` field).
fn read_varint(bytes: &[u8], mut pos: usize) -> (u64, usize) {
    let mut value = 0u64;
    let mut shift = 0;
    loop {
        let b = bytes[pos];
        value |= u64::from(b & 0x7f) << shift;
        pos += 1;
        if b & 0x80 == 0 {
            return (value, pos);
        }
        shift += 7;
    }
}

/// ENC-04: every prefix of every valid body decodes or fails cleanly; cuts inside the
/// envelope's typeMeta or raw field are reported as malformed.
#[test]
fn enc04_every_prefix_of_a_valid_body_is_handled() {
    let mut bodies: Vec<(String, Vec<u8>)> = FIXTURES
        .iter()
        .map(|(name, body)| ((*name).to_owned(), body.to_vec()))
        .collect();
    bodies.push(("rich configmap".to_owned(), rich_configmap_body()));
    bodies.push(("full event".to_owned(), full_event_body()));
    for (name, body) in &bodies {
        assert!(decode(body).is_ok(), "{name}");
        assert_eq!(body[4], 0x0a, "{name}");
        let (type_meta_len, type_meta_start) = read_varint(body, 5);
        let raw_tag = type_meta_start + type_meta_len as usize;
        assert_eq!(body[raw_tag], 0x12, "{name}");
        let (raw_len, raw_start) = read_varint(body, raw_tag + 1);
        let raw_end = raw_start + raw_len as usize;
        for n in 0..body.len() {
            let result = decode(&body[..n]);
            if n < 4 {
                assert!(
                    matches!(result, Err(ProtobufError::MissingMagic)),
                    "{name} {n}"
                );
            } else if n == 4 {
                assert!(
                    matches!(result, Err(ProtobufError::UnsupportedKind { .. })),
                    "{name} {n}"
                );
            } else if n < raw_tag || (n > raw_tag && n < raw_end) {
                assert!(
                    matches!(result, Err(ProtobufError::Malformed { .. })),
                    "{name} prefix {n}: {result:?}"
                );
            }
        }
    }
}

/// A small xorshift generator, so the test is deterministic without extra dependencies.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// ENC-04: random bytes, random objects behind a valid envelope, and mutated valid bodies
/// never panic.
#[test]
fn enc04_random_and_mutated_bodies_never_panic() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let kinds = supported_kinds();
    let mut seeds: Vec<Vec<u8>> = FIXTURES.iter().map(|(_, b)| b.to_vec()).collect();
    seeds.push(rich_configmap_body());
    seeds.push(full_event_body());
    seeds.push(full_lease_body());
    for _ in 0..20_000 {
        let body = match rng.below(4) {
            0 => {
                let len = rng.below(200);
                (0..len).map(|_| rng.next() as u8).collect::<Vec<u8>>()
            }
            1 => {
                let (api_version, kind) = kinds[rng.below(kinds.len())];
                let len = rng.below(200);
                let raw: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
                envelope(api_version, kind, &Pb::new().raw(&raw))
            }
            _ => {
                let mut body = seeds[rng.below(seeds.len())].clone();
                for _ in 0..=rng.below(4) {
                    let pos = 4 + rng.below(body.len() - 4);
                    match rng.below(3) {
                        0 => body[pos] = rng.next() as u8,
                        1 => body[pos] ^= 1 << rng.below(8),
                        _ => body.insert(pos, rng.next() as u8),
                    }
                }
                body
            }
        };
        let _ = decode(&body);
    }
}

/// ENC-04: deeply nested groups in an unknown field are skipped without recursion.
#[test]
fn enc04_deeply_nested_unknown_groups() {
    let mut inner = Pb::new();
    for _ in 0..100_000 {
        inner = inner.tag(9, 3);
    }
    assert_malformed(
        &envelope("v1", "ConfigMap", &inner),
        "ConfigMap",
        "unterminated group",
    );
    for _ in 0..100_000 {
        inner = inner.tag(9, 4);
    }
    let body = envelope("v1", "ConfigMap", &inner);
    assert_decodes(
        &body,
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"creationTimestamp": null}}),
    );
}

// ---------------------------------------------------------------------------------------------
// Built bodies: every field of every supported message
// ---------------------------------------------------------------------------------------------

fn rich_configmap_body() -> Vec<u8> {
    let fields_v1 = br#"{"f:metadata":{"f:labels":{".":{},"f:app":{}}},"f:data":{"f:k":{}}}"#;
    let meta = Pb::new()
        .string(1, "app")
        .string(2, "app-")
        .string(3, "demo")
        .string(4, "/api/v1/namespaces/demo/configmaps/app")
        .string(5, "6f1c0c9e-2f6d-4a53-9a53-0d3c3e0c7a11")
        .string(6, "1234")
        .int(7, 5)
        .time(8, T0, 999)
        .time(9, T0 + 100, 0)
        .int(10, 30)
        .entry(11, "tier", b"web")
        .entry(11, "app", b"old")
        .entry(12, "note", b"hello")
        .msg(
            13,
            Pb::new()
                .string(1, "ReplicaSet")
                .string(3, "rs")
                .string(4, "uid-1")
                .string(5, "apps/v1")
                .int(6, 1)
                .int(7, 0),
        )
        .msg(13, Pb::new())
        .string(14, "example.com/a")
        .msg(
            17,
            Pb::new()
                .string(1, "kubectl")
                .string(2, "Apply")
                .string(3, "v1")
                .time(4, T0, 0)
                .string(6, "FieldsV1")
                .msg(7, Pb::new().bytes(1, fields_v1))
                .string(8, ""),
        )
        .msg(
            17,
            Pb::new()
                .string(1, "m2")
                .string(2, "Update")
                .msg(7, Pb::new()),
        )
        // Repeated and map fields accumulate across occurrences; later map entries win.
        .entry(11, "app", b"web")
        .string(14, "example.com/b");
    let object = Pb::new()
        .msg(1, meta)
        .int(4, 1)
        .entry(2, "k", b"v")
        .entry(3, "bin", &[0, 0xff])
        .entry(3, "empty", &[]);
    envelope("v1", "ConfigMap", &object)
}

/// ENC-04: all ObjectMeta fields (labels/annotations maps, ownerReferences, finalizers,
/// managedFields with fieldsV1 JSON, both timestamps) on a ConfigMap with every field.
#[test]
fn enc04_configmap_with_full_object_meta() {
    assert_decodes(
        &rich_configmap_body(),
        json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {
                "name": "app",
                "generateName": "app-",
                "namespace": "demo",
                "selfLink": "/api/v1/namespaces/demo/configmaps/app",
                "uid": "6f1c0c9e-2f6d-4a53-9a53-0d3c3e0c7a11",
                "resourceVersion": "1234",
                "generation": 5,
                "creationTimestamp": "2023-11-14T22:13:20Z",
                "deletionTimestamp": "2023-11-14T22:15:00Z",
                "deletionGracePeriodSeconds": 30,
                "labels": {"app": "web", "tier": "web"},
                "annotations": {"note": "hello"},
                "ownerReferences": [
                    {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "uid-1",
                     "controller": true, "blockOwnerDeletion": false},
                    {"apiVersion": "", "kind": "", "name": "", "uid": ""}
                ],
                "finalizers": ["example.com/a", "example.com/b"],
                "managedFields": [
                    {"manager": "kubectl", "operation": "Apply", "apiVersion": "v1",
                     "time": "2023-11-14T22:13:20Z", "fieldsType": "FieldsV1",
                     "fieldsV1": {"f:metadata": {"f:labels": {".": {}, "f:app": {}}},
                                  "f:data": {"f:k": {}}}},
                    {"manager": "m2", "operation": "Update", "fieldsV1": null}
                ]
            },
            "immutable": true,
            "data": {"k": "v"},
            "binaryData": {"bin": "AP8=", "empty": ""}}),
    );
}

/// ENC-04: Secret with every field; a present `immutable: false` pointer is kept.
#[test]
fn enc04_secret_all_fields() {
    let object = Pb::new()
        .msg(1, go_meta("s", "demo"))
        .int(5, 0)
        .entry(2, "k", &[0, 0xff, 0x10])
        .entry(4, "plain", b"text")
        .string(3, "Opaque");
    assert_decodes(
        &envelope("v1", "Secret", &object),
        json!({"apiVersion": "v1", "kind": "Secret",
               "metadata": {"name": "s", "namespace": "demo", "creationTimestamp": null},
               "immutable": false,
               "data": {"k": "AP8Q"},
               "stringData": {"plain": "text"},
               "type": "Opaque"}),
    );
}

/// ENC-04: Namespace spec finalizers and status with conditions.
#[test]
fn enc04_namespace_spec_and_status_conditions() {
    let object = Pb::new()
        .msg(1, go_meta("demo", ""))
        .msg(2, Pb::new().string(1, "kubernetes"))
        .msg(
            3,
            Pb::new()
                .string(1, "Terminating")
                .msg(
                    2,
                    Pb::new()
                        .string(1, "NamespaceDeletionContentFailure")
                        .string(2, "False")
                        .time(4, T0, 0)
                        .string(5, "ContentDeleted")
                        .string(6, "All content successfully deleted"),
                )
                .msg(2, Pb::new().string(1, "Other").bytes(4, &[])),
        );
    assert_decodes(
        &envelope("v1", "Namespace", &object),
        json!({"apiVersion": "v1", "kind": "Namespace",
               "metadata": {"name": "demo", "creationTimestamp": null},
               "spec": {"finalizers": ["kubernetes"]},
               "status": {"phase": "Terminating", "conditions": [
                   {"type": "NamespaceDeletionContentFailure", "status": "False",
                    "lastTransitionTime": "2023-11-14T22:13:20Z", "reason": "ContentDeleted",
                    "message": "All content successfully deleted"},
                   {"type": "Other", "status": "", "lastTransitionTime": null}]}}),
    );
}

/// ENC-04: ServiceAccount secrets, imagePullSecrets and automountServiceAccountToken.
#[test]
fn enc04_serviceaccount_all_fields() {
    let object = Pb::new()
        .msg(1, go_meta("sa", "demo"))
        .msg(
            2,
            Pb::new()
                .string(3, "sa-token")
                .string(2, "demo")
                .string(1, "Secret"),
        )
        .msg(3, Pb::new().string(1, "regcred"))
        .msg(3, Pb::new().string(1, ""))
        .int(4, 0);
    assert_decodes(
        &envelope("v1", "ServiceAccount", &object),
        json!({"apiVersion": "v1", "kind": "ServiceAccount",
               "metadata": {"name": "sa", "namespace": "demo", "creationTimestamp": null},
               "secrets": [{"kind": "Secret", "namespace": "demo", "name": "sa-token"}],
               "imagePullSecrets": [{"name": "regcred"}, {}],
               "automountServiceAccountToken": false}),
    );
}

fn full_event_body() -> Vec<u8> {
    let object = Pb::new()
        .msg(1, go_meta("web-0.17a", "demo"))
        .msg(
            2,
            Pb::new()
                .string(1, "Pod")
                .string(2, "demo")
                .string(3, "web-0")
                .string(4, "uid-pod")
                .string(5, "v1")
                .string(6, "42")
                .string(7, "spec.containers{web}"),
        )
        .string(3, "Started")
        .string(4, "Started container web")
        .msg(5, Pb::new().string(1, "kubelet").string(2, "node-1"))
        .time(6, T0, 999_999_999)
        .time(7, T0 + 60, 0)
        .int(8, 3)
        .string(9, "Normal")
        .time(10, T0, 123_456_789)
        .msg(11, Pb::new().int(1, 2).time(2, T0 + 1, 5_000))
        .string(12, "Start")
        .msg(13, Pb::new().string(1, "Node").string(3, "node-1"))
        .string(14, "kubelet")
        .string(15, "node-1");
    envelope("v1", "Event", &object)
}

/// ENC-04: core/v1 Event with involvedObject, source, series, related and all timestamps
/// (Time drops nanoseconds; MicroTime keeps microseconds).
#[test]
fn enc04_event_all_fields() {
    assert_decodes(
        &full_event_body(),
        json!({"apiVersion": "v1", "kind": "Event",
            "metadata": {"name": "web-0.17a", "namespace": "demo", "creationTimestamp": null},
            "involvedObject": {"kind": "Pod", "namespace": "demo", "name": "web-0",
                "uid": "uid-pod", "apiVersion": "v1", "resourceVersion": "42",
                "fieldPath": "spec.containers{web}"},
            "reason": "Started",
            "message": "Started container web",
            "source": {"component": "kubelet", "host": "node-1"},
            "firstTimestamp": "2023-11-14T22:13:20Z",
            "lastTimestamp": "2023-11-14T22:14:20Z",
            "count": 3,
            "type": "Normal",
            "eventTime": "2023-11-14T22:13:20.123456Z",
            "series": {"count": 2, "lastObservedTime": "2023-11-14T22:13:21.000005Z"},
            "action": "Start",
            "related": {"kind": "Node", "name": "node-1"},
            "reportingComponent": "kubelet",
            "reportingInstance": "node-1"}),
    );
}

/// ENC-04: an Event with only a name shows Go's zero values for struct fields and for the
/// fields without omitempty (reportingComponent, reportingInstance).
#[test]
fn enc04_event_minimal_has_go_zero_values() {
    let object = Pb::new().msg(1, Pb::new().string(1, "e"));
    assert_decodes(
        &envelope("v1", "Event", &object),
        json!({"apiVersion": "v1", "kind": "Event",
               "metadata": {"name": "e", "creationTimestamp": null},
               "involvedObject": {}, "source": {},
               "firstTimestamp": null, "lastTimestamp": null, "eventTime": null,
               "reportingComponent": "", "reportingInstance": ""}),
    );
}

fn full_lease_body() -> Vec<u8> {
    let object = Pb::new().msg(1, go_meta("node-1", "kube-node-lease")).msg(
        2,
        Pb::new()
            .string(1, "node-1")
            .int(2, 40)
            .time(3, T0, 500_000_999)
            .time(4, T0 + 10, 0)
            .int(5, 0)
            .string(6, "OldestEmulationVersion")
            .string(7, "node-2"),
    );
    envelope("coordination.k8s.io/v1", "Lease", &object)
}

/// ENC-04: coordination.k8s.io/v1 Lease with every spec field (pointer fields keep zero).
#[test]
fn enc04_lease_all_fields() {
    assert_decodes(
        &full_lease_body(),
        json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
               "metadata": {"name": "node-1", "namespace": "kube-node-lease",
                            "creationTimestamp": null},
               "spec": {"holderIdentity": "node-1", "leaseDurationSeconds": 40,
                        "acquireTime": "2023-11-14T22:13:20.500000Z",
                        "renewTime": "2023-11-14T22:13:30.000000Z",
                        "leaseTransitions": 0, "strategy": "OldestEmulationVersion",
                        "preferredHolder": "node-2"}}),
    );
    let empty = envelope("coordination.k8s.io/v1", "Lease", &Pb::new());
    assert_decodes(
        &empty,
        json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
               "metadata": {"creationTimestamp": null}, "spec": {}}),
    );
}

/// ENC-04: DeleteOptions as meta.k8s.io/v1 and as a typed client's own group version.
#[test]
fn enc04_delete_options() {
    let object = Pb::new()
        .int(1, 0)
        .msg(2, Pb::new().string(1, "uid-1").string(2, "7"))
        .int(3, 0)
        .string(4, "Foreground")
        .string(5, "All")
        .int(6, 1);
    assert_decodes(
        &envelope("meta.k8s.io/v1", "DeleteOptions", &object),
        json!({"apiVersion": "meta.k8s.io/v1", "kind": "DeleteOptions",
               "gracePeriodSeconds": 0,
               "preconditions": {"uid": "uid-1", "resourceVersion": "7"},
               "orphanDependents": false,
               "propagationPolicy": "Foreground",
               "dryRun": ["All"],
               "ignoreStoreReadErrorWithClusterBreakingPotential": true}),
    );
    let object = Pb::new().int(1, 30).msg(2, Pb::new());
    for api_version in ["v1", "coordination.k8s.io/v1"] {
        assert_decodes(
            &envelope(api_version, "DeleteOptions", &object),
            json!({"apiVersion": api_version, "kind": "DeleteOptions",
                   "gracePeriodSeconds": 30, "preconditions": {}}),
        );
    }
    assert_decodes(
        &envelope("meta.k8s.io/v1", "DeleteOptions", &Pb::new()),
        json!({"apiVersion": "meta.k8s.io/v1", "kind": "DeleteOptions"}),
    );
}

/// ENC-04: the advertised kinds (every built-in kind served, the answers of reviews and
/// tokens, Scale, Status, metadata and `DeleteOptions` of every group version), each
/// decoding with apiVersion and kind first.
#[test]
fn enc04_supported_kinds() {
    assert_eq!(
        supported_kinds(),
        &[
            ("v1", "ConfigMap"),
            ("v1", "Secret"),
            ("v1", "Namespace"),
            ("v1", "ServiceAccount"),
            ("v1", "Event"),
            ("coordination.k8s.io/v1", "Lease"),
            ("rbac.authorization.k8s.io/v1", "Role"),
            ("rbac.authorization.k8s.io/v1", "RoleBinding"),
            ("rbac.authorization.k8s.io/v1", "ClusterRole"),
            ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"),
            (
                "admissionregistration.k8s.io/v1",
                "MutatingWebhookConfiguration"
            ),
            (
                "admissionregistration.k8s.io/v1",
                "ValidatingWebhookConfiguration"
            ),
            (
                "admissionregistration.k8s.io/v1",
                "ValidatingAdmissionPolicy"
            ),
            (
                "admissionregistration.k8s.io/v1",
                "ValidatingAdmissionPolicyBinding"
            ),
            ("apiextensions.k8s.io/v1", "CustomResourceDefinition"),
            ("apiregistration.k8s.io/v1", "APIService"),
            ("events.k8s.io/v1", "Event"),
            ("authentication.k8s.io/v1", "TokenRequest"),
            ("authentication.k8s.io/v1", "TokenReview"),
            ("authentication.k8s.io/v1", "SelfSubjectReview"),
            ("authorization.k8s.io/v1", "SubjectAccessReview"),
            ("authorization.k8s.io/v1", "SelfSubjectAccessReview"),
            ("authorization.k8s.io/v1", "LocalSubjectAccessReview"),
            ("authorization.k8s.io/v1", "SelfSubjectRulesReview"),
            ("autoscaling/v1", "Scale"),
            ("v1", "Status"),
            ("meta.k8s.io/v1", "PartialObjectMetadata"),
            ("meta.k8s.io/v1beta1", "PartialObjectMetadata"),
            ("meta.k8s.io/v1", "DeleteOptions"),
            ("v1", "DeleteOptions"),
            ("coordination.k8s.io/v1", "DeleteOptions"),
            ("rbac.authorization.k8s.io/v1", "DeleteOptions"),
            ("admissionregistration.k8s.io/v1", "DeleteOptions"),
            ("apiextensions.k8s.io/v1", "DeleteOptions"),
            ("apiregistration.k8s.io/v1", "DeleteOptions"),
            ("events.k8s.io/v1", "DeleteOptions"),
            ("autoscaling/v1", "DeleteOptions"),
        ]
    );
    for &(api_version, kind) in supported_kinds() {
        let value = decode(&envelope(api_version, kind, &Pb::new())).unwrap();
        let keys: Vec<&String> = value.as_object().unwrap().keys().take(2).collect();
        assert_eq!(keys, ["apiVersion", "kind"]);
        assert_eq!(value["apiVersion"], api_version);
        assert_eq!(value["kind"], kind);
    }
}

// ---------------------------------------------------------------------------------------------
// Wire-format details
// ---------------------------------------------------------------------------------------------

/// ENC-04: unknown fields of every wire type are skipped at every level (envelope,
/// typeMeta, object, nested message, map entry).
#[test]
fn enc04_unknown_fields_are_skipped() {
    let junk = || {
        Pb::new()
            .varint(90, 7)
            .fixed64(91, u64::MAX)
            .fixed32(92, 1)
            .string(93, "x")
            .group(
                94,
                Pb::new().varint(1, 1).group(2, Pb::new().string(3, "y")),
            )
    };
    let meta = junk().string(1, "app").raw(&junk().0);
    let object = junk()
        .msg(1, meta)
        .msg(
            2,
            Pb::new()
                .raw(&junk().0)
                .string(1, "k")
                .string(2, "v")
                .raw(&junk().0),
        )
        .raw(&junk().0);
    let unknown = junk()
        .msg(
            1,
            junk().string(1, "v1").raw(&junk().0).string(2, "ConfigMap"),
        )
        .raw(&junk().0)
        .bytes(2, &object.0)
        .raw(&junk().0);
    let mut body = MAGIC.to_vec();
    body.extend_from_slice(&unknown.0);
    assert_decodes(
        &body,
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": "app", "creationTimestamp": null}, "data": {"k": "v"}}),
    );
}

/// ENC-04: a singular message sent twice is merged; scalars take the last value.
#[test]
fn enc04_singular_messages_merge() {
    let object = Pb::new()
        .msg(1, Pb::new().string(1, "a").entry(11, "x", b"1"))
        .entry(2, "k", b"v")
        .msg(
            1,
            Pb::new()
                .string(3, "ns")
                .entry(11, "y", b"2")
                .string(1, "b"),
        );
    assert_decodes(
        &envelope("v1", "ConfigMap", &object),
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": "b", "namespace": "ns", "creationTimestamp": null,
                            "labels": {"x": "1", "y": "2"}},
               "data": {"k": "v"}}),
    );
}

/// ENC-04: integers — negative int32/int64 (sign-extended 10-byte varints), int32 keeps the
/// low 32 bits, bool is any non-zero varint, non-minimal varints are accepted.
#[test]
fn enc04_integer_encodings() {
    let event = Pb::new().int(8, -1);
    let value = decode(&envelope("v1", "Event", &event)).unwrap();
    assert_eq!(value["count"], -1);
    let event = Pb::new().varint(8, (1 << 32) | 5);
    assert_eq!(
        decode(&envelope("v1", "Event", &event)).unwrap()["count"],
        5
    );

    let meta = Pb::new().int(10, -5).int(7, i64::MAX);
    let value = decode(&envelope("v1", "ConfigMap", &Pb::new().msg(1, meta))).unwrap();
    assert_eq!(value["metadata"]["deletionGracePeriodSeconds"], -5);
    assert_eq!(value["metadata"]["generation"], i64::MAX);

    let value = decode(&envelope("v1", "ConfigMap", &Pb::new().varint(4, 2))).unwrap();
    assert_eq!(value["immutable"], true);

    // Field 1 (metadata) with the length 3 written as a two-byte varint.
    let object = Pb::new().raw(&[0x0a, 0x83, 0x00, 0x0a, 0x01, b'n']);
    let value = decode(&envelope("v1", "ConfigMap", &object)).unwrap();
    assert_eq!(value["metadata"]["name"], "n");
}

/// ENC-04: Time and MicroTime edge cases.
#[test]
fn enc04_timestamps() {
    let meta = |m: Pb| envelope("v1", "ConfigMap", &Pb::new().msg(1, m));
    let created = |m: Pb| decode(&meta(m)).unwrap()["metadata"]["creationTimestamp"].clone();
    // A Timestamp with an explicit 0 is the Unix epoch, not Go's zero time.
    assert_eq!(created(Pb::new().time(8, 0, 0)), "1970-01-01T00:00:00Z");
    assert_eq!(
        created(Pb::new().msg(8, Pb::new().int(2, 5))),
        "1970-01-01T00:00:00Z"
    );
    // Go's zero time (0001-01-01T00:00:00Z) renders as null.
    assert_eq!(created(Pb::new().time(8, -62_135_596_800, 0)), Value::Null);
    assert_eq!(
        created(Pb::new().time(8, -62_135_596_799, 0)),
        "0001-01-01T00:00:01Z"
    );
    assert_eq!(
        created(Pb::new().time(8, 253_402_300_799, 0)),
        "9999-12-31T23:59:59Z"
    );
    assert_eq!(created(Pb::new().time(8, -1, 0)), "1969-12-31T23:59:59Z");
    // Last occurrence wins.
    assert_eq!(created(Pb::new().time(8, 0, 0).bytes(8, &[])), Value::Null);
    // A present but zero deletionTimestamp pointer is null.
    let value = decode(&meta(Pb::new().bytes(9, &[]))).unwrap();
    assert_eq!(value["metadata"]["deletionTimestamp"], Value::Null);
    assert_malformed(
        &meta(Pb::new().time(8, 1 << 60, 0)),
        "ConfigMap.metadata.creationTimestamp",
        "outside the years 0000 to 9999",
    );
    assert_malformed(
        &meta(Pb::new().time(8, 253_402_300_800, 0)),
        "ConfigMap.metadata.creationTimestamp",
        "outside the years 0000 to 9999",
    );
    assert_malformed(
        &meta(Pb::new().msg(8, Pb::new().string(1, "x"))),
        "ConfigMap.metadata.creationTimestamp.seconds",
        "wrong wire type",
    );

    let event_time = |seconds: i64, nanos: i64| {
        let event = Pb::new().time(10, seconds, nanos);
        decode(&envelope("v1", "Event", &event)).unwrap()["eventTime"].clone()
    };
    assert_eq!(event_time(T0, 999), "2023-11-14T22:13:20.000000Z");
    assert_eq!(event_time(T0, 999_999_999), "2023-11-14T22:13:20.999999Z");
    // Out-of-range nanos normalise like Go's time.Unix.
    assert_eq!(event_time(10, -1_500), "1970-01-01T00:00:09.999999Z");
    assert_eq!(event_time(10, 2_000_001_000), "1970-01-01T00:00:12.000001Z");
    assert_eq!(event_time(-62_135_596_801, 1_000_000_000), Value::Null);
}

/// ENC-04: the envelope's contentType may be empty or protobuf; contentEncoding must be empty.
#[test]
fn enc04_envelope_content_type_and_encoding() {
    let make = |content_encoding: &str, content_type: &str| {
        let unknown = Pb::new()
            .msg(1, Pb::new().string(1, "v1").string(2, "ConfigMap"))
            .bytes(2, &[])
            .string(3, content_encoding)
            .string(4, content_type);
        let mut body = MAGIC.to_vec();
        body.extend_from_slice(&unknown.0);
        body
    };
    assert!(decode(&make("", "application/vnd.kubernetes.protobuf")).is_ok());
    assert!(decode(&make("", "application/vnd.kubernetes.protobuf; charset=x")).is_ok());
    assert!(matches!(
        decode(&make("", "application/json")),
        Err(ProtobufError::UnsupportedContentType(t)) if t == "application/json"
    ));
    assert!(matches!(
        decode(&make("gzip", "")),
        Err(ProtobufError::UnsupportedContentEncoding(e)) if e == "gzip"
    ));
    // No typeMeta at all, and no raw: still a ConfigMap once typeMeta arrives.
    let mut body = MAGIC.to_vec();
    body.extend_from_slice(
        &Pb::new()
            .msg(1, Pb::new().string(2, "ConfigMap").string(1, "v1"))
            .0,
    );
    assert!(decode(&body).is_ok());
}

// ---------------------------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------------------------

/// ENC-04: the magic prefix is required.
#[test]
fn enc04_missing_magic() {
    for body in [
        &b""[..],
        b"k8s",
        b"k8s\x01\x0a\x00",
        br#"{"kind":"ConfigMap"}"#,
    ] {
        assert!(
            matches!(decode(body), Err(ProtobufError::MissingMagic)),
            "{body:?}"
        );
    }
    let err = decode(b"K8S\0").unwrap_err();
    assert!(err.to_string().contains("magic"), "{err}");
}

/// ENC-04: kinds without a schema are reported with the envelope's apiVersion and kind.
#[test]
fn enc04_unsupported_kinds() {
    for (api_version, kind) in [
        ("v1", "Pod"),
        ("apps/v1", "ConfigMap"),
        ("", ""),
        ("coordination.k8s.io/v1beta1", "Lease"),
        ("v1", "configmap"),
        ("apps/v1", "DeleteOptions"),
    ] {
        match decode(&envelope(api_version, kind, &Pb::new())) {
            Err(ProtobufError::UnsupportedKind {
                api_version: v,
                kind: k,
            }) => assert_eq!((v.as_str(), k.as_str()), (api_version, kind)),
            other => panic!("{api_version} {kind}: {other:?}"),
        }
    }
}

/// ENC-04: malformed wire data is an error that says where.
#[test]
fn enc04_malformed_wire_data() {
    let cm = |raw: &[u8]| envelope("v1", "ConfigMap", &Pb::new().raw(raw));
    // Truncated varint inside metadata (generation = <continuation byte>).
    assert_malformed(
        &cm(&[0x0a, 0x02, 0x38, 0x80]),
        "ConfigMap.metadata",
        "truncated varint",
    );
    // Length past the end of the message.
    assert_malformed(&cm(&[0x0a, 0x05, 0x0a, 0x01]), "ConfigMap", "past the end");
    // A length that overflows usize-sized arithmetic.
    let mut huge = vec![0x0a];
    huge.extend_from_slice(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]);
    assert_malformed(&cm(&huge), "ConfigMap", "past the end");
    // Varint longer than 10 bytes.
    let mut long = vec![0x20];
    long.extend_from_slice(&[0x80; 10]);
    long.push(0x00);
    assert_malformed(&cm(&long), "ConfigMap", "longer than 10 bytes");
    // Wrong wire type for known fields.
    assert_malformed(
        &cm(&[0x0a, 0x02, 0x08, 0x01]),
        "ConfigMap.metadata.name",
        "wrong wire type varint (0) for field 1",
    );
    assert_malformed(
        &cm(&[0x22, 0x01, 0x01]),
        "ConfigMap.immutable",
        "wrong wire type",
    );
    assert_malformed(
        &cm(&[0x0d, 1, 2, 3, 4]),
        "ConfigMap.metadata",
        "wrong wire type fixed32",
    );
    assert_malformed(
        &cm(&[0x0b, 0x0c]),
        "ConfigMap.metadata",
        "wrong wire type group",
    );
    // Invalid UTF-8 in a string, a map key, a map value and a repeated string.
    assert_malformed(
        &cm(&[0x0a, 0x04, 0x0a, 0x02, 0xff, 0xfe]),
        "ConfigMap.metadata.name",
        "UTF-8",
    );
    let label = Pb::new().msg(1, Pb::new().entry(11, "k", &[0xc3]));
    assert_malformed(
        &envelope("v1", "ConfigMap", &label),
        "ConfigMap.metadata.labels",
        "UTF-8",
    );
    let key = Pb::new().msg(2, Pb::new().bytes(1, &[0xc3]).string(2, "v"));
    assert_malformed(
        &envelope("v1", "ConfigMap", &key),
        "ConfigMap.data",
        "map key",
    );
    let fin = Pb::new().msg(1, Pb::new().bytes(14, &[0x80]));
    assert_malformed(
        &envelope("v1", "ConfigMap", &fin),
        "ConfigMap.metadata.finalizers",
        "UTF-8",
    );
    // Bad tags.
    assert_malformed(&cm(&[0x02, 0x00]), "ConfigMap", "illegal field number 0");
    assert_malformed(&cm(&[0x0f]), "ConfigMap", "invalid wire type 7");
    assert_malformed(&cm(&[0x0e]), "ConfigMap", "invalid wire type 6");
    assert_malformed(&cm(&[0x4b, 0x08, 0x01]), "ConfigMap", "unterminated group");
    assert_malformed(&cm(&[0x4c]), "ConfigMap", "unexpected end-group");
    assert_malformed(&cm(&[0x49, 1, 2, 3]), "ConfigMap", "fixed64");
    // Errors inside repeated messages carry the index.
    let owners = Pb::new().msg(
        1,
        Pb::new()
            .msg(13, Pb::new().string(4, "ok"))
            .msg(13, Pb::new().bytes(4, &[0xff])),
    );
    assert_malformed(
        &envelope("v1", "ConfigMap", &owners),
        "ConfigMap.metadata.ownerReferences[1].uid",
        "UTF-8",
    );
    // fieldsV1 must hold JSON.
    let managed = Pb::new().msg(
        1,
        Pb::new().msg(17, Pb::new().msg(7, Pb::new().bytes(1, b"{not json"))),
    );
    assert_malformed(
        &envelope("v1", "ConfigMap", &managed),
        "ConfigMap.metadata.managedFields[0].fieldsV1",
        "not valid JSON",
    );
    // Envelope errors.
    let mut body = MAGIC.to_vec();
    body.extend_from_slice(&Pb::new().msg(1, Pb::new().bytes(2, &[0xff])).0);
    assert_malformed(&body, "Unknown.typeMeta.kind", "UTF-8");
    let mut body = MAGIC.to_vec();
    body.extend_from_slice(&Pb::new().varint(2, 1).0);
    assert_malformed(&body, "Unknown.raw", "wrong wire type");
    let mut body = MAGIC.to_vec();
    body.extend_from_slice(&[0x0a, 0x10, 0x0a]);
    assert_malformed(&body, "Unknown", "past the end");
    let err = decode(&body).unwrap_err().to_string();
    assert!(err.starts_with("malformed protobuf at Unknown: "), "{err}");
}
