//! Watch streams: splitting the chunked body into `{"type":…,"object":…}\n` lines, and
//! reading the few fields the benchmark checks without building the whole object.

use std::borrow::Cow;

use bytes::BytesMut;
use serde::Deserialize;

/// Annotation carrying the moment the benchmark sent the create, in nanoseconds since the
/// Unix epoch (decimal string).
pub const SENT_ANNOTATION: &str = "bench.wasmgate.io/sent-unix-nanos";

/// One watch event, borrowing from the line where possible.
#[derive(Debug, Deserialize)]
pub struct WatchEvent<'a> {
    /// `ADDED`, `MODIFIED`, `DELETED`, `BOOKMARK` or `ERROR`.
    #[serde(rename = "type", borrow)]
    pub kind: Cow<'a, str>,
    /// The object (a Status for `ERROR`).
    #[serde(borrow)]
    pub object: ObjectHead<'a>,
}

/// The parts of an object the benchmark reads; everything else is skipped unparsed.
#[derive(Debug, Default, Deserialize)]
pub struct ObjectHead<'a> {
    /// `metadata`.
    #[serde(borrow, default)]
    pub metadata: Meta<'a>,
    /// `message` (set on a Status).
    #[serde(borrow, default)]
    pub message: Option<Cow<'a, str>>,
}

/// The metadata fields the benchmark reads.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Meta<'a> {
    /// `metadata.name`.
    #[serde(borrow, default)]
    pub name: Cow<'a, str>,
    /// `metadata.resourceVersion`.
    #[serde(borrow, default)]
    pub resource_version: Cow<'a, str>,
    /// `metadata.annotations`, only the benchmark's own.
    #[serde(borrow, default)]
    pub annotations: Option<BenchAnnotations<'a>>,
}

/// The benchmark's annotations.
#[derive(Debug, Default, Deserialize)]
pub struct BenchAnnotations<'a> {
    /// [`SENT_ANNOTATION`].
    #[serde(rename = "bench.wasmgate.io/sent-unix-nanos", borrow, default)]
    pub sent: Option<&'a str>,
}

impl Meta<'_> {
    /// `resourceVersion` as a number, if it is one.
    pub fn revision(&self) -> Option<u64> {
        self.resource_version.parse().ok()
    }

    /// The send time stamped by the benchmark, in nanoseconds since the epoch.
    pub fn sent_unix_nanos(&self) -> Option<u64> {
        self.annotations.as_ref()?.sent?.parse().ok()
    }
}

/// Parses one watch line (without its newline).
pub fn parse_event(line: &[u8]) -> Result<WatchEvent<'_>, serde_json::Error> {
    serde_json::from_slice(line)
}

/// Parses the metadata of an object (e.g. a create or update response).
pub fn parse_object(body: &[u8]) -> Result<ObjectHead<'_>, serde_json::Error> {
    serde_json::from_slice(body)
}

/// Reassembles lines from body chunks. A line that spans chunks is copied once; lines
/// wholly inside a chunk are handed out without copying.
#[derive(Debug, Default)]
pub struct LineSplitter {
    partial: BytesMut,
}

impl LineSplitter {
    /// Feeds one chunk; calls `f` for every complete, non-empty line (newline stripped).
    pub fn feed(&mut self, mut chunk: &[u8], mut f: impl FnMut(&[u8])) {
        if !self.partial.is_empty() {
            match find_newline(chunk) {
                None => {
                    self.partial.extend_from_slice(chunk);
                    return;
                }
                Some(i) => {
                    self.partial.extend_from_slice(&chunk[..i]);
                    let line = self.partial.split();
                    emit(&line, &mut f);
                    chunk = &chunk[i + 1..];
                }
            }
        }
        while let Some(i) = find_newline(chunk) {
            emit(&chunk[..i], &mut f);
            chunk = &chunk[i + 1..];
        }
        self.partial.extend_from_slice(chunk);
    }
}

/// The index of the first `\n` in `s`, eight bytes at a time (the byte-at-a-time search
/// was the largest single cost of reading 100 watch streams).
pub fn find_newline(s: &[u8]) -> Option<usize> {
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    const NL: u64 = LO * b'\n' as u64;
    let (words, rest) = s.as_chunks::<8>();
    for (i, w) in words.iter().enumerate() {
        // Bytes equal to '\n' become zero; the lowest flagged byte is the first zero.
        let x = u64::from_le_bytes(*w) ^ NL;
        let found = x.wrapping_sub(LO) & !x & HI;
        if found != 0 {
            return Some(i * 8 + (found.trailing_zeros() / 8) as usize);
        }
    }
    rest.iter()
        .position(|&b| b == b'\n')
        .map(|i| words.len() * 8 + i)
}

fn emit(line: &[u8], f: &mut impl FnMut(&[u8])) {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    if !line.is_empty() {
        f(line);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_an_added_event() {
        let line = br#"{"type":"ADDED","object":{"apiVersion":"v1","data":{"payload":"xyz","q":"a\"b"},"kind":"ConfigMap","metadata":{"annotations":{"other":"1","bench.wasmgate.io/sent-unix-nanos":"1700000000123456789"},"creationTimestamp":"2024-01-01T00:00:00Z","name":"w-abc-00000042","namespace":"bench","resourceVersion":"1234","uid":"u"}}}"#;
        let ev = parse_event(line).unwrap();
        assert_eq!(ev.kind, "ADDED");
        assert_eq!(ev.object.metadata.name, "w-abc-00000042");
        assert_eq!(ev.object.metadata.revision(), Some(1234));
        assert_eq!(
            ev.object.metadata.sent_unix_nanos(),
            Some(1_700_000_000_123_456_789)
        );
        // Borrowed, not copied.
        assert!(matches!(ev.object.metadata.name, Cow::Borrowed(_)));
    }

    #[test]
    fn parses_bookmark_and_error_events() {
        let ev = parse_event(br#"{"type":"BOOKMARK","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"resourceVersion":"77"}}}"#).unwrap();
        assert_eq!(ev.kind, "BOOKMARK");
        assert_eq!(ev.object.metadata.revision(), Some(77));
        assert_eq!(ev.object.metadata.sent_unix_nanos(), None);
        let ev = parse_event(br#"{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old resource version: 1 (5)","reason":"Expired","code":410}}"#).unwrap();
        assert_eq!(ev.kind, "ERROR");
        assert_eq!(
            ev.object.message.as_deref(),
            Some("too old resource version: 1 (5)")
        );
        assert!(parse_event(b"{\"type\":").is_err());
        assert!(parse_event(b"not json").is_err());
    }

    #[test]
    fn finds_newlines_like_a_plain_search() {
        let mut x: u32 = 12345;
        for len in 0..80 {
            for _ in 0..50 {
                let s: Vec<u8> = (0..len)
                    .map(|_| {
                        x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
                        // Mostly bytes near '\n' (0x0a), to catch carry mistakes.
                        [b'\n', 0x0b, 0x09, 0x8a, 0x00, b'a', 0xff][(x >> 16) as usize % 7]
                    })
                    .collect();
                assert_eq!(
                    find_newline(&s),
                    s.iter().position(|&b| b == b'\n'),
                    "{s:?}"
                );
            }
        }
    }

    #[test]
    fn splits_lines_across_chunks() {
        let stream = b"{\"a\":1}\n{\"b\":22}\r\n\n{\"c\":333}\n{\"d\":4";
        // Every way of cutting the stream into two or three chunks gives the same lines.
        for i in 0..stream.len() {
            for j in i..stream.len() {
                let mut s = LineSplitter::default();
                let mut lines: Vec<Vec<u8>> = Vec::new();
                for part in [&stream[..i], &stream[i..j], &stream[j..]] {
                    s.feed(part, |l| lines.push(l.to_vec()));
                }
                assert_eq!(
                    lines,
                    vec![
                        b"{\"a\":1}".to_vec(),
                        b"{\"b\":22}".to_vec(),
                        b"{\"c\":333}".to_vec()
                    ],
                    "cut at {i},{j}"
                );
                assert_eq!(s.partial.len(), 6, "the unfinished line is held back");
            }
        }
    }
}
