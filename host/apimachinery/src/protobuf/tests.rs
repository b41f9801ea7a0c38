//! Unit tests for the internals (spec items ENC-04, ENC-05), and the round-trip property:
//! for every kind with a schema, an object in the JSON form the decoder produces (the form
//! Go writes) survives encode then decode unchanged, and encoding is a fixed point. The
//! behaviour on whole bodies, including bodies recorded from kubectl, is tested in
//! `tests/protobuf.rs`.

#![allow(clippy::unwrap_used, reason = "test code")]

use proptest::prelude::*;
use serde_json::{Map, Value, json};

use super::decode::{GO_ZERO_TIME_UNIX, render_time};
use super::schema::{self, Emit, Kind, MAX_FIELDS, Message, Shape};
use super::wire::{MAX_FIELD_NUMBER, Reader, begin_len, end_len, varint_len};
use super::*;

fn all_messages() -> Vec<&'static Message> {
    let mut seen: Vec<&'static Message> = Vec::new();
    let mut queue: Vec<&'static Message> = schema::ROOTS.iter().map(|r| r.message).collect();
    queue.push(&schema::meta::TIMESTAMP);
    queue.push(&schema::meta::LIST_META);
    while let Some(message) = queue.pop() {
        if seen.iter().any(|m| std::ptr::eq(*m, message)) {
            continue;
        }
        seen.push(message);
        for field in message.fields {
            if let Kind::Message(inner)
            | Kind::Inline(inner)
            | Kind::Messages(inner)
            | Kind::MessageMap(inner) = field.kind
            {
                queue.push(inner);
            }
        }
    }
    seen
}

/// ENC-04: every table has distinct, legal field numbers and distinct JSON names, and its
/// number order is a permutation sorted by number.
#[test]
fn enc04_schema_tables_are_consistent() {
    let messages = all_messages();
    assert!(messages.len() > 100, "{}", messages.len());
    for message in messages {
        assert!(message.fields.len() <= MAX_FIELDS);
        for (i, a) in message.fields.iter().enumerate() {
            assert!(a.number > 0 && u64::from(a.number) <= MAX_FIELD_NUMBER);
            for b in &message.fields[i + 1..] {
                assert_ne!(a.number, b.number, "{}.{}", message.name, a.json);
                assert_ne!(a.json, b.json, "{}", message.name);
            }
        }
        let numbers: Vec<u32> = message.in_number_order().map(|(_, f)| f.number).collect();
        assert_eq!(numbers.len(), message.fields.len(), "{}", message.name);
        assert!(numbers.windows(2).all(|w| w[0] < w[1]), "{}", message.name);
    }
}

/// ENC-04: every advertised kind has a schema named after it.
#[test]
fn enc04_every_supported_kind_has_a_schema() {
    for &(api_version, kind) in supported_kinds() {
        let message = schema::object(api_version, kind);
        assert_eq!(message.map(|m| m.name), Some(kind), "{api_version} {kind}");
        assert!(can_encode(api_version, kind));
    }
    assert!(schema::object("v1", "Timestamp").is_none());
    assert!(!can_encode("v1", "Pod"));
    assert!(!can_encode("example.com/v1", "Widget"));
    assert!(!can_encode("wasmgate.dev/v1alpha1", "WasmPlugin"));
}

/// ENC-04: varints, read and written.
#[test]
fn enc04_varints() {
    let read = |bytes: &[u8]| Reader::new(bytes).varint();
    assert_eq!(read(&[0x00]), Ok(0));
    assert_eq!(read(&[0x96, 0x01]), Ok(150));
    assert_eq!(
        read(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]),
        Ok(u64::MAX)
    );
    assert!(read(&[]).is_err());
    assert!(read(&[0x80]).is_err());
    assert!(read(&[0x80; 11]).is_err());
    for v in [
        0u64,
        1,
        127,
        128,
        16_383,
        16_384,
        u64::from(u32::MAX),
        u64::MAX,
    ] {
        let mut out = Vec::new();
        wire::put_varint(&mut out, v);
        assert_eq!(out.len(), varint_len(v), "{v}");
        assert_eq!(read(&out), Ok(v));
    }
}

/// ENC-04: a length-delimited field whose length is only known at its end takes the
/// fewest bytes for it, whatever the length (1, 2 or 3 bytes of varint).
#[test]
fn enc04_lengths_written_after_the_content() {
    for len in [0usize, 1, 127, 128, 300, 16_383, 16_384, 70_000] {
        let mut out = vec![0xee];
        let at = begin_len(&mut out, 5);
        out.extend(std::iter::repeat_n(0xab, len));
        end_len(&mut out, at);
        let mut expected = vec![0xee, 0x2a];
        wire::put_varint(&mut expected, len as u64);
        expected.extend(std::iter::repeat_n(0xab, len));
        assert_eq!(out, expected, "{len}");
    }
}

/// ENC-04: timestamp rendering, including Go's zero time and the year limits.
#[test]
fn enc04_render_time() {
    let time = |s, n| render_time(s, n, false);
    let micro = |s, n| render_time(s, n, true);
    assert_eq!(time(0, 0), Ok(Value::from("1970-01-01T00:00:00Z")));
    assert_eq!(
        time(1_136_214_245, 999_999_999),
        Ok(Value::from("2006-01-02T15:04:05Z"))
    );
    assert_eq!(
        micro(1_136_214_245, 1_999),
        Ok(Value::from("2006-01-02T15:04:05.000001Z"))
    );
    assert_eq!(time(GO_ZERO_TIME_UNIX, 0), Ok(Value::Null));
    assert_eq!(micro(GO_ZERO_TIME_UNIX, 999), Ok(Value::Null));
    assert_eq!(
        micro(GO_ZERO_TIME_UNIX, 1_000),
        Ok(Value::from("0001-01-01T00:00:00.000001Z"))
    );
    assert_eq!(
        time(-62_167_219_200, 0),
        Ok(Value::from("0000-01-01T00:00:00Z"))
    );
    assert!(time(-62_167_219_201, 0).is_err());
    assert!(time(253_402_300_800, 0).is_err());
    assert!(micro(i64::MAX, 1_000_000_000).is_err());
    assert!(time(i64::MIN, 0).is_err());
}

/// ENC-04: error paths render as dotted fields with list indices and map keys.
#[test]
fn enc04_paths() {
    let root = Path::root("ConfigMap");
    let meta = root.field("metadata");
    let owners = meta.field("ownerReferences");
    let second = owners.index(1);
    assert_eq!(
        second.field("uid").render(),
        "ConfigMap.metadata.ownerReferences[1].uid"
    );
    assert_eq!(root.field("data").key("k").render(), "ConfigMap.data[k]");
    assert_eq!(root.render(), "ConfigMap");
}

/// ENC-04: envelope content types.
#[test]
fn enc04_content_types() {
    assert!(is_protobuf_content_type(""));
    assert!(is_protobuf_content_type(
        "application/vnd.kubernetes.protobuf"
    ));
    assert!(is_protobuf_content_type(
        "Application/VND.Kubernetes.Protobuf ;x=y"
    ));
    assert!(!is_protobuf_content_type("application/json"));
    assert!(!is_protobuf_content_type(
        "application/vnd.kubernetes.protobuf+x"
    ));
}

// ---------------------------------------------------------------------------------------------
// Round trip
// ---------------------------------------------------------------------------------------------

/// A small deterministic generator (xorshift), so that one proptest seed is one object.
struct Gen(u64);

impl Gen {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    fn string(&mut self, non_empty: bool) -> String {
        const WORDS: &[&str] = &[
            "a",
            "web",
            "kube-system",
            "ünïcode",
            "x y",
            "ℌ",
            "{\"json\":1}",
            "\u{0}",
            "line\nbreak",
        ];
        let n = self.below(3) + u64::from(non_empty);
        (0..n)
            .map(|_| WORDS[self.below(WORDS.len() as u64) as usize])
            .collect()
    }

    fn int(&mut self, bits: u32, non_zero: bool) -> i64 {
        let v = match self.below(5) {
            0 => 0,
            1 => 1,
            2 => -1,
            3 => (self.next() >> (64 - bits + 1)) as i64,
            _ => -((self.next() >> (64 - bits + 1)) as i64) - 1,
        };
        if non_zero && v == 0 { 7 } else { v }
    }

    fn time(&mut self, micro: bool) -> Value {
        // 1970 to 9999; MicroTime with microseconds.
        let seconds = self.below(253_402_300_799) as i64;
        let nanos = if micro {
            self.below(1_000_000) as i64 * 1_000
        } else {
            0
        };
        render_time(seconds, nanos, micro).unwrap()
    }

    fn bytes(&mut self, non_empty: bool) -> Value {
        use base64::Engine as _;
        let n = self.below(6) + u64::from(non_empty);
        let b: Vec<u8> = (0..n).map(|_| self.next() as u8).collect();
        Value::from(base64::engine::general_purpose::STANDARD.encode(b))
    }

    fn json(&mut self, depth: u32) -> Value {
        match self.below(if depth > 2 { 5 } else { 7 }) {
            0 => Value::Null,
            1 => Value::Bool(self.chance(50)),
            2 => Value::from(self.int(32, false)),
            3 => json!(f64::from(self.int(16, false) as i32) + 0.25),
            4 => Value::from(self.string(false)),
            5 => Value::Array((0..self.below(3)).map(|_| self.json(depth + 1)).collect()),
            _ => {
                let mut m = Map::new();
                for _ in 0..self.below(3) {
                    let k = self.string(true);
                    m.insert(k, self.json(depth + 1));
                }
                Value::Object(m)
            }
        }
    }

    /// A value of `message` in the JSON form the decoder produces (Go's form): fields in
    /// table order; value fields tagged omitempty only when not empty; pointer fields
    /// present or not, with any value; other fields always.
    fn message(&mut self, message: &'static Message, depth: u32) -> Value {
        let mut m = Map::new();
        for field in message.fields {
            if let Kind::Inline(inner) = field.kind {
                if let Value::Object(inlined) = self.message(inner, depth) {
                    m.extend(inlined);
                }
                continue;
            }
            let nested = matches!(
                field.kind,
                Kind::Message(_) | Kind::Messages(_) | Kind::MessageMap(_)
            );
            let present = match field.emit {
                Emit::Always => true,
                // Recursive schemas stop growing past a few levels.
                _ if nested && depth > 3 => false,
                Emit::OmitEmpty | Emit::IfSet => self.chance(60),
            };
            if !present {
                continue;
            }
            let non_empty = field.emit == Emit::OmitEmpty;
            let value = self.field(field.kind, field.emit, non_empty, depth);
            if let Some(v) = value {
                m.insert(field.json.to_owned(), v);
            }
        }
        match message.shape {
            Shape::Object => Value::Object(m),
            Shape::List => m.remove("items").unwrap_or(Value::Null),
            Shape::SchemaOrArray => match (m.remove("schema"), m.remove("jSONSchemas")) {
                (_, Some(list)) if list.as_array().is_some_and(|a| !a.is_empty()) => list,
                (Some(s), _) => s,
                _ => Value::Null,
            },
            Shape::SchemaOrBool => match (m.remove("schema"), m.remove("allows")) {
                (Some(s), _) => s,
                (None, a) => a.unwrap_or(Value::Bool(false)),
            },
            Shape::SchemaOrStrings => match (m.remove("schema"), m.remove("property")) {
                (_, Some(list)) if list.as_array().is_some_and(|a| !a.is_empty()) => list,
                (Some(s), _) => s,
                _ => Value::Null,
            },
        }
    }

    fn field(&mut self, kind: Kind, emit: Emit, non_empty: bool, depth: u32) -> Option<Value> {
        // Lists and maps: `null` when empty (a nil slice or map in Go).
        let items = |g: &mut Gen| {
            let n = g.below(3);
            if n == 0 && !non_empty { 0 } else { n.max(1) }
        };
        Some(match kind {
            Kind::String => Value::from(self.string(non_empty)),
            Kind::Int32 => Value::from(self.int(32, non_empty)),
            Kind::Int64 => Value::from(self.int(64, non_empty)),
            Kind::Bool => Value::Bool(non_empty || self.chance(50)),
            Kind::Double => match self.below(3) {
                0 => Value::from(self.int(40, non_empty)),
                1 => json!(0.5),
                _ => json!(-1.0e-7),
            },
            Kind::Bytes => self.bytes(non_empty),
            Kind::Message(inner) | Kind::Inline(inner) => {
                let v = self.message(inner, depth + 1);
                // A pointer to a wrapper that shows as `null` is not set at all.
                if v.is_null() {
                    return None;
                }
                v
            }
            Kind::Time | Kind::MicroTime => {
                let micro = matches!(kind, Kind::MicroTime);
                if emit == Emit::Always && self.chance(30) {
                    Value::Null
                } else {
                    self.time(micro)
                }
            }
            Kind::RawJson => {
                let v = self.json(0);
                if v.is_null() {
                    return None;
                }
                v
            }
            Kind::RawJsons => match items(self) {
                0 => Value::Null,
                n => Value::Array((0..n).map(|_| self.json(0)).collect()),
            },
            Kind::Strings => match items(self) {
                0 => Value::Null,
                n => Value::Array((0..n).map(|_| Value::from(self.string(false))).collect()),
            },
            Kind::Messages(inner) => match items(self) {
                0 => Value::Null,
                n => Value::Array((0..n).map(|_| self.message(inner, depth + 1)).collect()),
            },
            Kind::StringMap | Kind::BytesMap | Kind::MessageMap(_) => match items(self) {
                0 => Value::Null,
                n => {
                    let mut m = Map::new();
                    for _ in 0..n {
                        let key = self.string(true);
                        let value = match kind {
                            Kind::StringMap => Value::from(self.string(false)),
                            Kind::BytesMap => self.bytes(false),
                            Kind::MessageMap(inner) => self.message(inner, depth + 1),
                            _ => Value::Null,
                        };
                        m.insert(key, value);
                    }
                    // Go renders maps with sorted keys.
                    let mut entries: Vec<(String, Value)> = m.into_iter().collect();
                    entries.sort_by(|a, b| a.0.cmp(&b.0));
                    Value::Object(entries.into_iter().collect())
                }
            },
        })
        .filter(|v| emit != Emit::OmitEmpty || !is_empty(v))
    }
}

fn is_empty(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(_) => false,
    }
}

/// Every kind and list kind with a schema, as (apiVersion, kind).
fn round_trip_kinds() -> Vec<(&'static str, &'static str)> {
    supported_kinds().to_vec()
}

fn typed(api_version: &str, kind: &str, fields: Value) -> Value {
    let mut m = Map::new();
    m.insert("apiVersion".into(), Value::from(api_version));
    m.insert("kind".into(), Value::from(kind));
    if let Value::Object(f) = fields {
        m.extend(f);
    }
    Value::Object(m)
}

fn check_object_round_trip(seed: u64, api_version: &str, kind: &str) {
    let message = schema::object(api_version, kind).unwrap();
    let mut g = Gen(seed | 1);
    let x = typed(api_version, kind, g.message(message, 0));
    let bytes = encode(api_version, kind, &x).unwrap();
    // The same bytes from the JSON text, through the borrowed tree lists use.
    let text = serde_json::to_vec(&x).unwrap();
    assert_eq!(
        encode_stored(api_version, kind, &text).unwrap(),
        bytes,
        "seed {seed}"
    );
    let back = decode(&bytes).unwrap();
    assert_eq!(
        back,
        x,
        "seed {seed}: {api_version} {kind}\n{}",
        serde_json::to_string(&x).unwrap()
    );
    assert_eq!(
        encode(api_version, kind, &back).unwrap(),
        bytes,
        "seed {seed}"
    );
}

fn check_list_round_trip(seed: u64, api_version: &str, list_kind: &str) {
    let Some(list) = ListEncoder::new(api_version, list_kind) else {
        return;
    };
    let mut g = Gen(seed | 1);
    let meta = g.message(&schema::meta::LIST_META, 0);
    let items: Vec<Value> = (0..g.below(4))
        .map(|_| g.message(list.list.items, 1))
        .collect();
    let bytes = list.encode(&meta, &items).unwrap();
    let mut stored = Vec::new();
    for item in &items {
        list.item_stored(&serde_json::to_vec(item).unwrap(), &mut stored)
            .unwrap();
    }
    let mut by_value = Vec::new();
    for item in &items {
        list.item(item, &mut by_value).unwrap();
    }
    assert_eq!(stored, by_value, "seed {seed}");
    let back = decode(&bytes).unwrap();
    let expected = typed(
        api_version,
        list_kind,
        json!({"metadata": meta, "items": items}),
    );
    assert_eq!(back, expected, "seed {seed}: {api_version} {list_kind}");
}

/// ENC-04: decode(encode(x)) == x and encode(decode(encode(x))) == encode(x) for objects
/// of every kind with a schema, a few objects each.
#[test]
fn enc04_round_trip_every_kind() {
    for (i, (api_version, kind)) in round_trip_kinds().into_iter().enumerate() {
        for seed in 0..40u64 {
            check_object_round_trip(seed * 7919 + i as u64 * 104_729 + 1, api_version, kind);
            check_list_round_trip(seed * 31 + i as u64, api_version, &format!("{kind}List"));
        }
    }
    for seed in 0..40 {
        check_list_round_trip(seed, "meta.k8s.io/v1", "PartialObjectMetadataList");
        check_list_round_trip(seed, "meta.k8s.io/v1beta1", "PartialObjectMetadataList");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// ENC-04: the round trip, for random objects of random kinds.
    #[test]
    fn enc04_round_trip_property(seed in any::<u64>(), pick in any::<usize>()) {
        let kinds = round_trip_kinds();
        let (api_version, kind) = kinds[pick % kinds.len()];
        check_object_round_trip(seed, api_version, kind);
        check_list_round_trip(seed, api_version, &format!("{kind}List"));
    }
}

// ---------------------------------------------------------------------------------------------
// The bytes themselves
// ---------------------------------------------------------------------------------------------

/// ENC-04: a ConfigMap's bytes, worked out by hand from `generated.proto`: fields in
/// number order (`immutable = 4` after `binaryData = 3` although it comes first in
/// the Go struct), every ObjectMeta string written even when empty, `generation = 7`
/// written as 0, the zero `creationTimestamp = 8` as an empty message, map entries
/// sorted by key.
#[test]
fn enc04_config_map_bytes() {
    let cm = json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "a", "namespace": "n", "creationTimestamp": null},
        "immutable": true,
        "data": {"z": "1", "b": ""},
    });
    let bytes = encode("v1", "ConfigMap", &cm).unwrap();
    let mut expected = b"k8s\0".to_vec();
    expected.extend_from_slice(&[
        0x0a, 0x0f, // typeMeta, 15 bytes
        0x0a, 0x02, b'v', b'1', // apiVersion
        0x12, 0x09, b'C', b'o', b'n', b'f', b'i', b'g', b'M', b'a', b'p', // kind
        0x12, 0x25, // raw, 37 bytes
        0x0a, 0x12, // metadata, 18 bytes
        0x0a, 0x01, b'a', // name
        0x12, 0x00, // generateName
        0x1a, 0x01, b'n', // namespace
        0x22, 0x00, // selfLink
        0x2a, 0x00, // uid
        0x32, 0x00, // resourceVersion
        0x38, 0x00, // generation
        0x42, 0x00, // creationTimestamp (zero)
        0x12, 0x05, 0x0a, 0x01, b'b', 0x12, 0x00, // data["b"] = ""
        0x12, 0x06, 0x0a, 0x01, b'z', 0x12, 0x01, b'1', // data["z"] = "1"
        0x20, 0x01, // immutable
        0x1a, 0x00, // contentEncoding
        0x22, 0x00, // contentType
    ]);
    assert_eq!(bytes, expected);
}

/// ENC-04: times: seconds only for `Time` (nanos written as 0), microseconds for
/// `MicroTime`, negative seconds as ten-byte varints, Go's zero time as an empty message.
#[test]
fn enc04_time_bytes() {
    let mut out = Vec::new();
    let lease = json!({"spec": {"renewTime": "1970-01-01T00:00:01.000002Z"}, "metadata": {"creationTimestamp": "1969-12-31T23:59:59.9Z"}});
    encode::message(
        &schema::coordination::LEASE,
        Some(&lease),
        &mut out,
        &Path::root("Lease"),
    )
    .unwrap();
    // creationTimestamp = 8 {seconds = -1 (ten bytes), nanos = 0}
    let created = [
        0x42, 0x0d, 0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0x10, 0x00,
    ];
    assert!(out.windows(created.len()).any(|w| w == created), "{out:x?}");
    // spec: renewTime = 4 {seconds 1, nanos 2000}
    let renew = [0x22, 0x05, 0x08, 0x01, 0x10, 0xd0, 0x0f];
    assert!(out.windows(renew.len()).any(|w| w == renew), "{out:x?}");

    let zero = json!({"metadata": {"creationTimestamp": "0001-01-01T00:00:00Z"}});
    let mut out = Vec::new();
    encode::message(
        &schema::corev1::CONFIG_MAP,
        Some(&zero),
        &mut out,
        &Path::root("ConfigMap"),
    )
    .unwrap();
    assert!(out.windows(2).any(|w| w == [0x42, 0x00]));
}

/// ENC-04: a Status, as kube-apiserver writes an error, worked out by hand.
#[test]
fn enc04_status_bytes() {
    let status = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": "m", "reason": "NotFound", "details": {"name": "x", "kind": "configmaps"}, "code": 404});
    let bytes = encode("v1", "Status", &status).unwrap();
    let mut expected = b"k8s\0".to_vec();
    expected.extend_from_slice(&[0x0a, 0x0c, 0x0a, 0x02, b'v', b'1', 0x12, 0x06]);
    expected.extend_from_slice(b"Status");
    expected.extend_from_slice(&[0x12, 0x38]); // raw, 56 bytes
    // metadata = 1: ListMeta {selfLink = 1, resourceVersion = 2, continue = 3}, all empty.
    expected.extend_from_slice(&[0x0a, 0x06, 0x0a, 0x00, 0x12, 0x00, 0x1a, 0x00]);
    expected.extend_from_slice(&[0x12, 0x07]);
    expected.extend_from_slice(b"Failure");
    expected.extend_from_slice(&[0x1a, 0x01, b'm', 0x22, 0x08]);
    expected.extend_from_slice(b"NotFound");
    // details = 5: name = 1, group = 2, kind = 3, retryAfterSeconds = 5 (0), uid = 6.
    expected.extend_from_slice(&[0x2a, 0x15, 0x0a, 0x01, b'x', 0x12, 0x00, 0x1a, 0x0a]);
    expected.extend_from_slice(b"configmaps");
    expected.extend_from_slice(&[0x28, 0x00, 0x32, 0x00]);
    // code = 6: 404, then the envelope's empty contentEncoding and contentType.
    expected.extend_from_slice(&[0x30, 0x94, 0x03, 0x1a, 0x00, 0x22, 0x00]);
    assert_eq!(bytes, expected);
    let value = decode(&bytes).unwrap();
    assert_eq!(value["code"], 404);
    assert_eq!(value["details"]["name"], "x");
}

/// ENC-04: a watch frame is the big-endian length, then `type = 1` and
/// `object = 2 { raw = 1 }`.
#[test]
fn enc04_watch_frame_bytes() {
    let frame = watch_frame("ADDED", b"k8s\0xyz");
    assert_eq!(
        frame,
        [
            0x00, 0x00, 0x00, 0x12, // 18 bytes follow
            0x0a, 0x05, b'A', b'D', b'D', b'E', b'D', // type
            0x12, 0x09, // object: RawExtension, 9 bytes
            0x0a, 0x07, b'k', b'8', b's', 0x00, b'x', b'y', b'z', // raw
        ]
    );
    let (ty, object) = decode_watch_event(&frame[4..]).unwrap();
    assert_eq!(ty, "ADDED");
    assert_eq!(object, b"k8s\0xyz");
}

/// ENC-04: `meta.k8s.io/v1beta1`'s PartialObjectMetadataList numbers its fields the
/// other way round (`items = 1`, `metadata = 2`), so its metadata comes last.
#[test]
fn enc04_partial_object_metadata_list_v1beta1() {
    let meta = json!({"resourceVersion": "5"});
    let items = [json!({"metadata": {"name": "a"}})];
    let v1 = ListEncoder::new("meta.k8s.io/v1", "PartialObjectMetadataList").unwrap();
    let v1beta1 = ListEncoder::new("meta.k8s.io/v1beta1", "PartialObjectMetadataList").unwrap();
    let a = v1.encode(&meta, &items).unwrap();
    let b = v1beta1.encode(&meta, &items).unwrap();
    let body = |bytes: &[u8], marker: &[u8]| bytes.windows(marker.len()).position(|w| w == marker);
    // metadata before the item in v1, after it in v1beta1.
    let rv = [0x12, 0x01, b'5'];
    let name = [0x0a, 0x01, b'a'];
    assert!(body(&a, &rv) < body(&a, &name));
    assert!(body(&b, &rv) > body(&b, &name));
    assert_eq!(decode(&a).unwrap()["items"][0]["metadata"]["name"], "a");
    assert_eq!(decode(&b).unwrap()["metadata"]["resourceVersion"], "5");
}

/// ENC-04: values of the wrong JSON type are errors naming the field, never panics.
#[test]
fn enc04_unencodable_values() {
    let cases = [
        (json!({"data": {"k": 1}}), "ConfigMap.data[k]"),
        (
            json!({"metadata": {"generation": "x"}}),
            "ConfigMap.metadata.generation",
        ),
        (
            json!({"metadata": {"labels": []}}),
            "ConfigMap.metadata.labels",
        ),
        (
            json!({"binaryData": {"k": "not base64!"}}),
            "ConfigMap.binaryData[k]",
        ),
        (
            json!({"metadata": {"creationTimestamp": "yesterday"}}),
            "ConfigMap.metadata.creationTimestamp",
        ),
        (json!({"immutable": "yes"}), "ConfigMap.immutable"),
        (
            json!({"metadata": {"ownerReferences": [{"controller": 1}]}}),
            "ConfigMap.metadata.ownerReferences[0].controller",
        ),
        (json!({"metadata": []}), "ConfigMap.metadata"),
    ];
    for (value, path) in cases {
        match encode("v1", "ConfigMap", &value) {
            Err(ProtobufError::Unencodable { path: p, .. }) => assert_eq!(p, path),
            other => panic!("{value}: {other:?}"),
        }
    }
    let count = json!({"count": 1_i64 << 40});
    assert!(matches!(
        encode("v1", "Event", &count),
        Err(ProtobufError::Unencodable { .. })
    ));
    assert!(matches!(
        encode("example.com/v1", "Widget", &json!({})),
        Err(ProtobufError::UnsupportedKind { .. })
    ));
    assert!(ListEncoder::new("example.com/v1", "WidgetList").is_none());
    assert!(ListEncoder::new("v1", "StatusList").is_none());
}

/// ENC-04: JSON schema shapes: a schema or a list, a schema or a boolean, a schema or
/// strings; `default`/`enum` hold JSON text; doubles without a fraction are integers.
#[test]
fn enc04_json_schema_props() {
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com", "creationTimestamp": null},
        "spec": {"group": "example.com", "names": {"plural": "widgets", "kind": "Widget"}, "scope": "Namespaced",
            "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {
                "type": "object",
                "properties": {
                    "spec": {"type": "object", "additionalProperties": {"type": "string"},
                        "properties": {"n": {"type": "integer", "minimum": 1, "maximum": 2.5, "default": 1,
                            "enum": [1, "two", null, {"x": [true]}]}}},
                    "tags": {"type": "array", "items": {"type": "string"}, "additionalItems": false},
                    "pair": {"type": "array", "items": [{"type": "string"}, {"type": "integer"}]},
                },
                "dependencies": {"a": ["b", "c"], "d": {"required": ["e"]}},
                "x-kubernetes-preserve-unknown-fields": true,
            }}}]},
        "status": {"conditions": null, "acceptedNames": {"plural": "", "kind": ""}, "storedVersions": null},
    });
    let bytes = encode("apiextensions.k8s.io/v1", "CustomResourceDefinition", &crd).unwrap();
    let back = decode(&bytes).unwrap();
    assert_eq!(back, crd);
}

/// ENC-04: `RuleWithOperations` embeds `Rule` (`json:""`): its fields are flat in the
/// JSON, a message of their own on the wire (`rule = 2`).
#[test]
fn enc04_embedded_structs() {
    let rule = json!({"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"], "scope": "*"});
    let vwc = json!({
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "v", "creationTimestamp": null},
        "webhooks": [{"name": "w", "clientConfig": {"url": "https://x"}, "rules": [rule],
            "sideEffects": "None", "timeoutSeconds": 5, "admissionReviewVersions": ["v1"]}],
    });
    let bytes = encode(
        "admissionregistration.k8s.io/v1",
        "ValidatingWebhookConfiguration",
        &vwc,
    )
    .unwrap();
    let rules: &[u8] = &[
        0x1a, 0x19, // rules = 3, 25 bytes
        0x0a, 0x06, b'C', b'R', b'E', b'A', b'T', b'E', // operations = 1
        0x12, 0x0f, // rule = 2, 15 bytes
        0x0a, 0x00, // apiGroups = 1: ""
        0x12, 0x02, b'v', b'1', // apiVersions = 2
        0x1a, 0x04, b'p', b'o', b'd', b's', // resources = 3
        0x22, 0x01, b'*', // scope = 4
    ];
    assert!(bytes.windows(rules.len()).any(|w| w == rules), "{bytes:x?}");
    let back = decode(&bytes).unwrap();
    assert_eq!(back["webhooks"][0]["rules"][0], rule);
    assert_eq!(back["webhooks"][0]["timeoutSeconds"], 5);
}

/// Not a test: how long parsing a stored ConfigMap and encoding it take
/// (`cargo test --release -p wasmgate-apimachinery --lib -- --ignored --nocapture encode_cost`).
#[test]
#[ignore = "a measurement"]
fn encode_cost() {
    let payload: String = (0..1024)
        .map(|i| char::from(b'a' + (i % 26) as u8))
        .collect();
    let cm = json!({"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"l-abcdef-0000001","namespace":"bench-list","uid":"6c1f0a4e-8a3b-4f6e-9d2c-1b2a3c4d5e6f","resourceVersion":"123456","creationTimestamp":"2026-11-27T10:40:00Z","labels":{"bench":"wasmgate"},"managedFields":[{"manager":"wasmgate-bench","operation":"Update","apiVersion":"v1","time":"2026-11-27T10:40:00Z","fieldsType":"FieldsV1","fieldsV1":{"f:data":{".":{},"f:payload":{}},"f:metadata":{"f:labels":{".":{},"f:bench":{}}}}}]},"data":{"payload":payload}});
    let stored = serde_json::to_vec(&cm).unwrap();
    let n = 20_000;
    let t = std::time::Instant::now();
    let mut values = Vec::with_capacity(n);
    for _ in 0..n {
        values.push(serde_json::from_slice::<Value>(&stored).unwrap());
    }
    let parse = t.elapsed();
    let list = ListEncoder::new("v1", "ConfigMapList").unwrap();
    let t = std::time::Instant::now();
    let mut out = Vec::new();
    for v in &values {
        list.item(v, &mut out).unwrap();
    }
    let enc = t.elapsed();
    let t = std::time::Instant::now();
    let mut out2 = Vec::new();
    for _ in 0..n {
        list.item_stored(&stored, &mut out2).unwrap();
    }
    let borrowed = t.elapsed();
    assert_eq!(out, out2);
    let per = |d: std::time::Duration| d.as_secs_f64() * 1e6 / n as f64;
    println!(
        "{} B JSON -> {} B protobuf; Value: parse {:.2} us + encode {:.2} us; borrowed: {:.2} us per object",
        stored.len(),
        out.len() / n,
        per(parse),
        per(enc),
        per(borrowed)
    );
}
