//! Protobuf responses from the real binary over TLS (issue 24 item 7), asked for as
//! client-go asks (`Accept: application/vnd.kubernetes.protobuf[, application/json]`):
//! curl fetches, the test decodes. One ConfigMap's bytes are checked against an encoding
//! written here by hand from `k8s.io/api/core/v1/generated.proto` and
//! `k8s.io/apimachinery/pkg/apis/meta/v1/generated.proto` (ENC-04); lists, watch frames
//! and Status are decoded with the request-body decoder of `wasmgate-apimachinery`; custom
//! resources get kube's 406 or the JSON fallback (ENC-05); and kubectl, whose typed
//! clients take protobuf first, reads those replies itself (a Go client decoding them).

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use wasmgate_apimachinery::protobuf;
use wasmgate_e2e::{
    Gateway, assert_contains, assert_ok, gateway_builder, poll, run, widgets_crd_without_plugin,
};

const PB: &str = "application/vnd.kubernetes.protobuf";
const PB_THEN_JSON: &str = "application/vnd.kubernetes.protobuf, application/json";
const WAIT: Duration = Duration::from_secs(30);

/// A reply with a binary body.
struct Binary {
    status: u16,
    content_type: String,
    body: Vec<u8>,
}

/// `method path` with curl, the admin certificate and `accept`; `json` is sent as the body.
fn curl(gw: &Gateway, method: &str, path: &str, accept: &str, json: Option<&str>) -> Binary {
    let out = tempfile::NamedTempFile::new().expect("a temporary file");
    let mut c = gw.client().curl_command();
    c.args(["--max-time", "30", "-X", method])
        .args(["-H", &format!("Accept: {accept}")])
        .arg("-o")
        .arg(out.path())
        .args(["-w", "%{http_code} %{content_type}"]);
    if let Some(body) = json {
        c.args([
            "-H",
            "Content-Type: application/json",
            "--data-binary",
            body,
        ]);
    }
    c.arg(format!("{}{path}", gw.base_url()));
    let stdout = assert_ok(&run(c));
    let (code, content_type) = stdout.split_once(' ').unwrap_or((&stdout, ""));
    Binary {
        status: code.trim().parse().expect("an HTTP status"),
        content_type: content_type.trim().to_owned(),
        body: std::fs::read(out.path()).expect("the reply body"),
    }
}

fn json_get(gw: &Gateway, path: &str) -> Value {
    gw.client().get(path).expect_status(200)
}

/// The reply decoded, checking that it is protobuf with status `code`.
fn decoded(r: &Binary, code: u16) -> Value {
    assert_eq!(r.status, code, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(r.content_type, PB);
    protobuf::decode(&r.body).unwrap_or_else(|e| panic!("{e}"))
}

// ---------------------------------------------------------------------------------------------
// The expected encoding, by hand
// ---------------------------------------------------------------------------------------------

fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8 & 0x7f) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// A length-delimited field (wire type 2): tag, length, bytes.
fn bytes_field(out: &mut Vec<u8>, number: u64, bytes: &[u8]) {
    varint(out, (number << 3) | 2);
    varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

fn str_field(out: &mut Vec<u8>, number: u64, v: &Value) {
    bytes_field(out, number, v.as_str().unwrap_or("").as_bytes());
}

/// Seconds since the epoch of `YYYY-MM-DDTHH:MM:SSZ` (the civil-from-days algorithm).
fn unix_seconds(t: &str) -> i64 {
    let n = |r: std::ops::Range<usize>| t[r].parse::<i64>().expect("a timestamp");
    let (y, m, d) = (n(0..4), n(5..7), n(8..10));
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    days * 86_400 + n(11..13) * 3600 + n(14..16) * 60 + n(17..19)
}

/// `metav1.Time` as Go writes it: `Timestamp { int64 seconds = 1; int32 nanos = 2; }`,
/// nanos always 0 (seconds precision).
fn time_field(out: &mut Vec<u8>, number: u64, t: &Value) {
    let mut ts = Vec::new();
    varint(&mut ts, 1 << 3);
    varint(&mut ts, unix_seconds(t.as_str().expect("a time")) as u64);
    varint(&mut ts, 2 << 3);
    varint(&mut ts, 0);
    bytes_field(out, number, &ts);
}

/// `map<string, string>` entries, sorted by key: `{ key = 1; value = 2; }` each.
fn map_field(out: &mut Vec<u8>, number: u64, map: &Value) {
    let mut entries: Vec<(&String, &Value)> = map.as_object().into_iter().flatten().collect();
    entries.sort_by(|a, b| a.0.cmp(b.0));
    for (k, v) in entries {
        let mut e = Vec::new();
        bytes_field(&mut e, 1, k.as_bytes());
        str_field(&mut e, 2, v);
        bytes_field(out, number, &e);
    }
}

/// What kube-apiserver writes for this ConfigMap (as its JSON shows it): the `k8s\0`
/// envelope (`Unknown { typeMeta = 1 {apiVersion = 1, kind = 2}, raw = 2, contentEncoding
/// = 3, contentType = 4 }`) around `ConfigMap { metadata = 1; data = 2; }` with every
/// value field of `ObjectMeta` written, in field-number order.
fn expected_config_map(cm: &Value) -> Vec<u8> {
    let m = &cm["metadata"];
    let mut meta = Vec::new();
    str_field(&mut meta, 1, &m["name"]);
    str_field(&mut meta, 2, &m["generateName"]);
    str_field(&mut meta, 3, &m["namespace"]);
    str_field(&mut meta, 4, &m["selfLink"]);
    str_field(&mut meta, 5, &m["uid"]);
    str_field(&mut meta, 6, &m["resourceVersion"]);
    varint(&mut meta, 7 << 3); // generation
    varint(&mut meta, m["generation"].as_u64().unwrap_or(0));
    time_field(&mut meta, 8, &m["creationTimestamp"]);
    map_field(&mut meta, 11, &m["labels"]);
    map_field(&mut meta, 12, &m["annotations"]);
    for entry in m["managedFields"].as_array().into_iter().flatten() {
        // ManagedFieldsEntry { manager = 1; operation = 2; apiVersion = 3; time = 4;
        // fieldsType = 6; fieldsV1 = 7 { bytes Raw = 1 }; subresource = 8; }
        let mut e = Vec::new();
        str_field(&mut e, 1, &entry["manager"]);
        str_field(&mut e, 2, &entry["operation"]);
        str_field(&mut e, 3, &entry["apiVersion"]);
        time_field(&mut e, 4, &entry["time"]);
        str_field(&mut e, 6, &entry["fieldsType"]);
        let mut raw = Vec::new();
        let text = serde_json::to_vec(&entry["fieldsV1"]).expect("fieldsV1");
        bytes_field(&mut raw, 1, &text);
        bytes_field(&mut e, 7, &raw);
        str_field(&mut e, 8, &entry["subresource"]);
        bytes_field(&mut meta, 17, &e);
    }
    let mut object = Vec::new();
    bytes_field(&mut object, 1, &meta);
    map_field(&mut object, 2, &cm["data"]);
    let mut type_meta = Vec::new();
    bytes_field(&mut type_meta, 1, b"v1");
    bytes_field(&mut type_meta, 2, b"ConfigMap");
    let mut unknown = Vec::new();
    bytes_field(&mut unknown, 1, &type_meta);
    bytes_field(&mut unknown, 2, &object);
    bytes_field(&mut unknown, 3, b"");
    bytes_field(&mut unknown, 4, b"");
    let mut body = b"k8s\0".to_vec();
    body.extend_from_slice(&unknown);
    body
}

// ---------------------------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------------------------

fn create_config_map(gw: &Gateway, name: &str) {
    let body = format!(
        r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"{name}","labels":{{"tier":"web","app":"demo"}},"annotations":{{"note":"ünïcode ✓"}}}},"data":{{"b":"2","a":"1","empty":""}}}}"#
    );
    gw.client()
        .request(
            "POST",
            "/api/v1/namespaces/demo/configmaps",
            "application/json",
            Some(&body),
        )
        .expect_status(201);
}

/// ENC-04: a GET of a ConfigMap in protobuf is, byte for byte, the encoding derived by
/// hand from the .proto field numbers; client-go's Accept (protobuf, then JSON) gets the
/// same bytes; a LIST is a `ConfigMapList` of the same objects; errors are protobuf
/// Status objects.
#[test]
fn enc04_objects_lists_and_status_in_protobuf() {
    let gw = gateway_builder!().start();
    assert_ok(&gw.kubectl(&["create", "namespace", "demo"]));
    create_config_map(&gw, "app");
    create_config_map(&gw, "other");

    let json = json_get(&gw, "/api/v1/namespaces/demo/configmaps/app");
    let r = curl(
        &gw,
        "GET",
        "/api/v1/namespaces/demo/configmaps/app",
        PB,
        None,
    );
    assert_eq!((r.status, r.content_type.as_str()), (200, PB));
    assert_eq!(r.body, expected_config_map(&json), "{json}");
    let again = curl(
        &gw,
        "GET",
        "/api/v1/namespaces/demo/configmaps/app",
        PB_THEN_JSON,
        None,
    );
    assert_eq!(again.body, r.body);
    let decoded_app = decoded(&r, 200);
    assert_eq!(decoded_app["metadata"]["annotations"]["note"], "ünïcode ✓");

    let list = decoded(
        &curl(
            &gw,
            "GET",
            "/api/v1/namespaces/demo/configmaps",
            PB_THEN_JSON,
            None,
        ),
        200,
    );
    assert_eq!(list["apiVersion"], "v1");
    assert_eq!(list["kind"], "ConfigMapList");
    let names: Vec<&str> = list["items"]
        .as_array()
        .expect("items")
        .iter()
        .filter_map(|i| i["metadata"]["name"].as_str())
        .collect();
    assert_eq!(names, ["app", "other"]);
    assert_eq!(list["items"][0], {
        let mut app = decoded_app.clone();
        let o = app.as_object_mut().expect("an object");
        o.remove("apiVersion");
        o.remove("kind");
        app
    });
    let json_list = json_get(&gw, "/api/v1/namespaces/demo/configmaps");
    assert_eq!(
        list["metadata"]["resourceVersion"],
        json_list["metadata"]["resourceVersion"]
    );

    let missing = decoded(
        &curl(
            &gw,
            "GET",
            "/api/v1/namespaces/demo/configmaps/nosuch",
            PB,
            None,
        ),
        404,
    );
    assert_eq!(missing["kind"], "Status");
    assert_eq!(missing["reason"], "NotFound");
    assert_eq!(missing["message"], "configmaps \"nosuch\" not found");
    let gone = decoded(
        &curl(
            &gw,
            "DELETE",
            "/api/v1/namespaces/demo/configmaps/other",
            PB,
            None,
        ),
        200,
    );
    assert_eq!(gone["status"], "Success");
}

/// The events of a protobuf watch stream in a file: 4-byte big-endian lengths, each
/// followed by a `WatchEvent`; (type, object) of each complete one.
fn frames(bytes: &[u8]) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    let mut rest = bytes;
    while rest.len() >= 4 {
        let len = u32::from_be_bytes([rest[0], rest[1], rest[2], rest[3]]) as usize;
        if rest.len() < 4 + len {
            break;
        }
        let (ty, object) = protobuf::decode_watch_event(&rest[4..4 + len]).expect("a WatchEvent");
        assert!(
            object.starts_with(b"k8s\0"),
            "the object is a whole encoding"
        );
        out.push((ty, protobuf::decode(&object).expect("the event's object")));
        rest = &rest[4 + len..];
    }
    out
}

/// ENC-04: a watch in protobuf, read with curl as a stream: the content type is
/// `application/vnd.kubernetes.protobuf;stream=watch` and every event is a length-prefixed
/// `WatchEvent` holding the object's whole encoding.
#[test]
fn enc04_watch_stream_in_protobuf() {
    let gw = gateway_builder!().start();
    assert_ok(&gw.kubectl(&["create", "namespace", "demo"]));
    create_config_map(&gw, "first");
    let out = tempfile::NamedTempFile::new().expect("a temporary file");
    let headers = tempfile::NamedTempFile::new().expect("a temporary file");
    let mut c = gw.client().curl_command();
    c.args(["-N", "--max-time", "60", "-H", &format!("Accept: {PB}")])
        .arg("-D")
        .arg(headers.path())
        .arg("-o")
        .arg(out.path())
        .arg(format!(
            "{}/api/v1/namespaces/demo/configmaps?watch=true&resourceVersion=0",
            gw.base_url()
        ))
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut child: std::process::Child = Command::spawn(&mut c).expect("curl");
    let read = |want: usize| {
        poll("protobuf watch events", WAIT, || {
            let events = frames(&std::fs::read(out.path()).unwrap_or_default());
            (events.len() >= want).then_some(events)
        })
    };
    let events = read(1);
    assert_eq!(events[0].0, "ADDED");
    assert_eq!(events[0].1["metadata"]["name"], "first");
    create_config_map(&gw, "second");
    let events = read(2);
    assert_eq!(events[1].0, "ADDED");
    assert_eq!(events[1].1["kind"], "ConfigMap");
    assert_eq!(events[1].1["data"]["a"], "1");
    assert_ok(&gw.kubectl(&["-n", "demo", "delete", "configmap", "second"]));
    let events = read(3);
    assert_eq!(events[2].0, "DELETED");
    let head = std::fs::read_to_string(headers.path()).unwrap_or_default();
    assert!(
        head.to_ascii_lowercase()
            .contains("content-type: application/vnd.kubernetes.protobuf;stream=watch"),
        "{head}"
    );
    let started = Instant::now();
    let _ = child.kill();
    let _ = child.wait();
    assert!(started.elapsed() < WAIT);
}

/// ENC-05: a custom resource in protobuf alone is kube's 406 (a protobuf Status, since
/// the client takes nothing else); with JSON listed after protobuf, JSON.
#[test]
fn enc05_custom_resources_fall_back_to_json() {
    let gw = gateway_builder!().start();
    let crd = widgets_crd_without_plugin(gw.data_dir());
    assert_ok(&gw.kubectl(&["apply", "-f", crd.to_str().expect("a path")]));
    poll("widgets served", WAIT, || {
        (gw.client()
            .get("/apis/example.com/v1/namespaces/default/widgets")
            .status
            == 200)
            .then_some(())
    });
    gw.client()
        .request(
            "POST",
            "/apis/example.com/v1/namespaces/default/widgets",
            "application/json",
            Some(r#"{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w1"},"spec":{"color":"blue"}}"#),
        )
        .expect_status(201);
    let path = "/apis/example.com/v1/namespaces/default/widgets/w1";
    let refused = decoded(&curl(&gw, "GET", path, PB, None), 406);
    assert_eq!(refused["reason"], "NotAcceptable");
    let r = curl(&gw, "GET", path, PB_THEN_JSON, None);
    assert_eq!(
        (r.status, r.content_type.as_str()),
        (200, "application/json")
    );
    let w: Value = serde_json::from_slice(&r.body).expect("JSON");
    assert_eq!(w["spec"]["color"], "blue");
    // The CRD itself is built in: protobuf.
    let crd = decoded(
        &curl(
            &gw,
            "GET",
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com",
            PB,
            None,
        ),
        200,
    );
    assert_eq!(crd["spec"]["names"]["kind"], "Widget");
}

/// The Content-Type of every reply kubectl -v=8 logged (its `Response Headers:` blocks).
fn reply_types(stderr: &str) -> Vec<String> {
    stderr
        .split("Response Headers:")
        .skip(1)
        .filter_map(|block| {
            let block = block.split("Response Body").next().unwrap_or(block);
            let block = block.split("Request Headers").next().unwrap_or(block);
            let (_, rest) = block.split_once("Content-Type: ")?;
            Some(rest.lines().next().unwrap_or("").trim().to_owned())
        })
        .collect()
}

/// ENC-04: kubectl's typed clients (describe, the imperative create) take protobuf first
/// and decode these replies themselves: kubectl -v=8 shows protobuf replies, and prints
/// what they hold, errors included.
#[test]
fn enc04_kubectl_reads_protobuf_replies() {
    let gw = gateway_builder!().start();
    assert_ok(&gw.kubectl(&["create", "namespace", "demo"]));
    create_config_map(&gw, "app");
    let out = gw.kubectl(&["-v=8", "-n", "demo", "describe", "configmap", "app"]);
    let stdout = assert_ok(&out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        reply_types(&stderr).iter().any(|t| t == PB),
        "kubectl got no protobuf reply:\n{stderr}"
    );
    for needle in [
        "Name:         app",
        "app=demo",
        "tier=web",
        "note: ünïcode ✓",
        "empty:",
    ] {
        assert!(stdout.contains(needle), "{needle:?} not in:\n{stdout}");
    }
    // The 409 is a protobuf Status kubectl decodes to its message.
    let out = gw.kubectl(&[
        "-v=8",
        "-n",
        "demo",
        "create",
        "configmap",
        "app",
        "--from-literal=k=v",
    ]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(reply_types(&stderr).iter().any(|t| t == PB), "{stderr}");
    assert_contains(&stderr, &[r#"configmaps "app" already exists"#]);
}
