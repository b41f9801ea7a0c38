//! Request bodies. The fixed parts of a ConfigMap (including its payload) are rendered
//! once; a request only splices in its name, resourceVersion and counters.

use std::fmt::Write as _;

use bytes::{BufMut as _, Bytes, BytesMut};

use crate::watchline::SENT_ANNOTATION;

/// Annotation an update changes so that every PUT is a real write (an unchanged object is
/// not written, and gets no new resourceVersion).
pub const SEQ_ANNOTATION: &str = "bench.wasmgate.io/update-seq";

/// Renders object bodies with a payload of a fixed size.
#[derive(Debug, Clone)]
pub struct ObjectTemplate {
    /// Everything before the name.
    head: &'static [u8],
    /// Everything after the annotations (the payload included).
    tail: Bytes,
}

const CONFIGMAP_HEAD: &[u8] = br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":""#;
const WIDGET_HEAD: &[u8] =
    br#"{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":""#;

impl ObjectTemplate {
    /// ConfigMaps whose `data.payload` is `payload_bytes` long.
    pub fn new(payload_bytes: usize) -> Self {
        Self::build(CONFIGMAP_HEAD, br#""}},"data":{"payload":""#, payload_bytes)
    }

    /// ConfigMaps as [`ObjectTemplate::new`] with the label `owner: <owner>` (a label
    /// value: spliced in unescaped).
    pub fn owned(payload_bytes: usize, owner: &str) -> Self {
        let before = format!(r#""}},"labels":{{"owner":"{owner}"}}}},"data":{{"payload":""#);
        Self::build(CONFIGMAP_HEAD, before.as_bytes(), payload_bytes)
    }

    /// Widgets (examples/crds/widgets.yaml) whose `spec.notes` is `payload_bytes` long.
    pub fn widget(payload_bytes: usize) -> Self {
        Self::build(
            WIDGET_HEAD,
            br#""}},"spec":{"color":"blue","replicas":1,"notes":""#,
            payload_bytes,
        )
    }

    fn build(head: &'static [u8], before_payload: &[u8], payload_bytes: usize) -> Self {
        let mut tail = BytesMut::with_capacity(payload_bytes + 64);
        tail.put_slice(before_payload);
        // Varied printable ASCII, so the payload neither needs escaping nor is trivially
        // compressible.
        let mut x: u32 = 0x9E37_79B9;
        for _ in 0..payload_bytes {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            let c = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_"
                [(x % 64) as usize];
            tail.put_u8(c);
        }
        tail.put_slice(br#""}}"#);
        ObjectTemplate {
            head,
            tail: tail.freeze(),
        }
    }

    /// Size of a create body for a name of `name_len` bytes (for reporting).
    pub fn create_len(&self, name_len: usize) -> usize {
        self.head.len() + name_len + 4 + SENT_ANNOTATION.len() + 19 + 22 + self.tail.len()
    }

    /// A create body: `name`, stamped with `sent_unix_nanos` in [`SENT_ANNOTATION`].
    pub fn create(&self, name: &str, sent_unix_nanos: u64) -> Bytes {
        let mut b = BytesMut::with_capacity(self.create_len(name.len()) + 8);
        b.put_slice(self.head);
        b.put_slice(name.as_bytes());
        b.put_slice(br#"","annotations":{""#);
        b.put_slice(SENT_ANNOTATION.as_bytes());
        b.put_slice(br#"":""#);
        let _ = write!(b, "{sent_unix_nanos}");
        b.put_slice(&self.tail);
        b.freeze()
    }

    /// An update body for `name` at `resource_version`, with update counter `seq`.
    pub fn update(&self, name: &str, resource_version: u64, seq: u64) -> Bytes {
        self.with_seq(name, Some(resource_version), seq)
    }

    /// An apply configuration for `name` (no resourceVersion), with update counter `seq`.
    pub fn apply(&self, name: &str, seq: u64) -> Bytes {
        self.with_seq(name, None, seq)
    }

    fn with_seq(&self, name: &str, resource_version: Option<u64>, seq: u64) -> Bytes {
        let mut b = BytesMut::with_capacity(
            self.head.len() + name.len() + SEQ_ANNOTATION.len() + 96 + self.tail.len(),
        );
        b.put_slice(self.head);
        b.put_slice(name.as_bytes());
        if let Some(rv) = resource_version {
            b.put_slice(br#"","resourceVersion":""#);
            let _ = write!(b, "{rv}");
        }
        b.put_slice(br#"","annotations":{""#);
        b.put_slice(SEQ_ANNOTATION.as_bytes());
        b.put_slice(br#"":""#);
        let _ = write!(b, "{seq}");
        b.put_slice(&self.tail);
        b.freeze()
    }
}

/// A namespace body.
pub fn namespace(name: &str) -> Bytes {
    Bytes::from(format!(
        r#"{{"apiVersion":"v1","kind":"Namespace","metadata":{{"name":"{name}"}}}}"#
    ))
}

/// Whether `s` is a valid namespace name (an RFC 1123 label), so it can be spliced into
/// URLs and JSON unescaped.
pub fn is_dns_label(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_are_valid_json_with_the_right_fields() {
        let t = ObjectTemplate::new(1024);
        let body = t.create("c-run-001-000000042", 1_700_000_000_000_000_001);
        assert!(body.len() <= t.create_len(19) + 8);
        let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(v["metadata"]["name"], "c-run-001-000000042");
        assert_eq!(
            v["metadata"]["annotations"][SENT_ANNOTATION],
            "1700000000000000001"
        );
        assert_eq!(v["data"]["payload"].as_str().unwrap().len(), 1024);

        let body = t.update("u-1", 987, 5);
        let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(v["metadata"]["resourceVersion"], "987");
        assert_eq!(v["metadata"]["annotations"][SEQ_ANNOTATION], "5");
        assert_eq!(v["data"]["payload"].as_str().unwrap().len(), 1024);

        let v: serde_json::Value = serde_json::from_slice(&t.apply("a-1", 6)).unwrap();
        assert!(v["metadata"].get("resourceVersion").is_none());
        assert_eq!(v["metadata"]["annotations"][SEQ_ANNOTATION], "6");
        assert_eq!(v["data"]["payload"].as_str().unwrap().len(), 1024);

        let t = ObjectTemplate::owned(100, "wasmgate-bench");
        let body = t.create("c-1", 5);
        assert!(body.len() <= t.create_len(3) + 8);
        let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(v["metadata"]["labels"]["owner"], "wasmgate-bench");
        assert_eq!(v["metadata"]["annotations"][SENT_ANNOTATION], "5");
        assert_eq!(v["data"]["payload"].as_str().unwrap().len(), 100);

        let v: serde_json::Value = serde_json::from_slice(&namespace("bench")).unwrap();
        assert_eq!(v["metadata"]["name"], "bench");
    }

    #[test]
    fn namespace_names() {
        assert!(is_dns_label("bench"));
        assert!(is_dns_label("bench-2"));
        assert!(!is_dns_label("Bench"));
        assert!(!is_dns_label("-x"));
        assert!(!is_dns_label("a\"b"));
        assert!(!is_dns_label(""));
    }
}
