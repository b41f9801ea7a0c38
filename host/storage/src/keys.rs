//! The key layout, the same on every engine.
//!
//! ```text
//! m/rev                          a resolved revision (u64 BE): every revision at or
//!                                below it is committed or skipped (a hint, written now
//!                                and then; the log after it says how far it goes now)
//! m/next                         the next revision to hand out, for engines that hand
//!                                them out in transactions (`Engine::allocate`'s default)
//! m/compacted                    compaction revision (u64 BE)
//! m/lease/<name>                 a lease: expiry (u64 BE ms since the epoch) ++ holder
//! m/cluster-identity             the cluster's CAs and signing key, private keys sealed
//!                                (written and read by the `wasmgate` crate's `identity`)
//! c/<object key>                 current version: mod revision (u64 BE) ++ payload
//! k/<object key>\0<!rev u64 BE>  superseded versions and deletions, until compaction:
//!                                tag (0 put, 1 tombstone) ++ payload (inverted revision:
//!                                newest first; a seek to !R finds the newest at or before R)
//! l/<rev u64 BE>                 change log: tag ++ previous mod revision (u64 BE) ++ object key;
//!                                or a skip: tag 2 ++ the last revision it covers (u64 BE)
//! ```
//!
//! Revisions are handed out before a commit (`Engine::allocate`), so several stores
//! sharing an engine commit side by side; a revision handed out whose write did not
//! happen (a write refused in its batch, a batch that lost a conflict or whose writer
//! died) is marked skipped in the log, so that the log stays dense: every revision has
//! an entry, and a reader knows a revision is final once it has one (`crate::follow`).
//!
//! A payload is the value, compressed when that makes it smaller (`crate::payload`).
//!
//! Each version is stored once: in `c/` while it is current, so that reads at the latest
//! revision (the common case) scan live objects only; the write that supersedes it moves
//! it to `k/`. Reads at a past revision look at both (`history.rs`). Stores written
//! before this layout also kept current versions in `k/`; they read the same.
//!
//! Object keys are UTF-8 without NUL bytes, `<group>/<resource>/<namespace>/<name>`, so
//! `\0` separates a key from its revision suffix and every version of a key sorts before
//! any longer key.

use bytes::{BufMut, Bytes, BytesMut};

use crate::{Revision, StorageError};

/// Engine key of the current revision.
pub const META_REV: &[u8] = b"m/rev";
/// Engine key of the compaction revision.
pub const META_COMPACTED: &[u8] = b"m/compacted";
/// Engine key of the next revision to hand out ([`crate::Engine::allocate`]'s default).
pub const META_NEXT: &[u8] = b"m/next";

const CURRENT: &[u8] = b"c/";
const VERSIONS: &[u8] = b"k/";
const LOG: &[u8] = b"l/";

/// Tag of a live value.
pub const TAG_PUT: u8 = 0;
/// Tag of a deletion.
pub const TAG_DELETE: u8 = 1;
/// Tag of a log entry that marks revisions handed out but never written (skipped).
pub const TAG_SKIP: u8 = 2;

/// `c/<key>`.
pub fn current(key: &str) -> Vec<u8> {
    concat(CURRENT, key.as_bytes(), &[])
}

/// The `c/` range holding every key that starts with `prefix`: `[start, end)`.
pub fn current_range(prefix: &str) -> (Vec<u8>, Vec<u8>) {
    let start = concat(CURRENT, prefix.as_bytes(), &[]);
    let end = prefix_end(&start);
    (start, end)
}

/// The first `c/` key strictly after object key `key`.
pub fn current_after(key: &str) -> Vec<u8> {
    concat(CURRENT, key.as_bytes(), &[0])
}

/// Strips `c/` from an engine key.
pub fn object_key_of_current(engine_key: &[u8]) -> Result<&str, StorageError> {
    engine_key
        .strip_prefix(CURRENT)
        .and_then(|k| std::str::from_utf8(k).ok())
        .ok_or_else(|| corrupt(engine_key, "bad current key"))
}

/// `k/<key>\0<!rev>`.
pub fn version(key: &str, rev: Revision) -> Vec<u8> {
    concat(VERSIONS, key.as_bytes(), &version_suffix(rev))
}

fn version_suffix(rev: Revision) -> [u8; 9] {
    let mut s = [0u8; 9];
    s[1..].copy_from_slice(&(!rev).to_be_bytes());
    s
}

/// The `k/` range of one key's versions visible at `rev` (newest first): `[start, end)`.
pub fn versions_of_at(key: &str, rev: Revision) -> (Vec<u8>, Vec<u8>) {
    (version(key, rev), concat(VERSIONS, key.as_bytes(), &[1]))
}

/// The `k/` range holding every version of every key starting with `prefix`.
pub fn versions_range(prefix: &str) -> (Vec<u8>, Vec<u8>) {
    let start = concat(VERSIONS, prefix.as_bytes(), &[]);
    let end = prefix_end(&start);
    (start, end)
}

/// The first `k/` key after every version of object key `key`.
pub fn versions_after(key: &str) -> Vec<u8> {
    concat(VERSIONS, key.as_bytes(), &[1])
}

/// Splits a `k/` engine key into its object key and revision.
pub fn parse_version(engine_key: &[u8]) -> Result<(&str, Revision), StorageError> {
    let rest = engine_key
        .strip_prefix(VERSIONS)
        .ok_or_else(|| corrupt(engine_key, "bad version key"))?;
    if rest.len() < 9 || rest[rest.len() - 9] != 0 {
        return Err(corrupt(engine_key, "bad version key suffix"));
    }
    let (name, suffix) = rest.split_at(rest.len() - 9);
    let mut inv = [0u8; 8];
    inv.copy_from_slice(&suffix[1..]);
    let key = std::str::from_utf8(name).map_err(|_| corrupt(engine_key, "key is not UTF-8"))?;
    Ok((key, !u64::from_be_bytes(inv)))
}

/// `l/<rev>`.
pub fn log(rev: Revision) -> Vec<u8> {
    concat(LOG, &rev.to_be_bytes(), &[])
}

/// The `l/` range `(from, to]`.
pub fn log_range(after: Revision, upto: Revision) -> (Vec<u8>, Vec<u8>) {
    (log(after.saturating_add(1)), log(upto.saturating_add(1)))
}

/// The revision of an `l/` engine key.
pub fn parse_log_key(engine_key: &[u8]) -> Result<Revision, StorageError> {
    let rest = engine_key
        .strip_prefix(LOG)
        .filter(|r| r.len() == 8)
        .ok_or_else(|| corrupt(engine_key, "bad log key"))?;
    let mut b = [0u8; 8];
    b.copy_from_slice(rest);
    Ok(u64::from_be_bytes(b))
}

/// A decoded change-log entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogEntry {
    /// [`TAG_PUT`], [`TAG_DELETE`] or [`TAG_SKIP`].
    pub tag: u8,
    /// The key's previous mod revision (0: it did not exist); for a skip, the last
    /// revision it covers.
    pub prev: Revision,
    /// The object key (empty for a skip).
    pub key: String,
}

impl LogEntry {
    /// For a skip, the last revision it covers: no write happened at the entry's
    /// revision nor at any after it up to this one.
    pub fn skipped_until(&self) -> Option<Revision> {
        (self.tag == TAG_SKIP).then_some(self.prev)
    }
}

/// Encodes a skip at some revision that covers the revisions up to `until`.
pub fn encode_skip(until: Revision) -> Bytes {
    encode_log(TAG_SKIP, until, "")
}

/// Encodes a log entry.
pub fn encode_log(tag: u8, prev: Revision, key: &str) -> Bytes {
    let mut b = BytesMut::with_capacity(9 + key.len());
    b.put_u8(tag);
    b.put_u64(prev);
    b.put_slice(key.as_bytes());
    b.freeze()
}

/// Decodes a log entry.
pub fn decode_log(engine_key: &[u8], v: &[u8]) -> Result<LogEntry, StorageError> {
    if v.len() < 9 || v[0] > TAG_SKIP {
        return Err(corrupt(engine_key, "bad log entry"));
    }
    let mut p = [0u8; 8];
    p.copy_from_slice(&v[1..9]);
    let key = std::str::from_utf8(&v[9..])
        .map_err(|_| corrupt(engine_key, "log key is not UTF-8"))?
        .to_owned();
    Ok(LogEntry {
        tag: v[0],
        prev: u64::from_be_bytes(p),
        key,
    })
}

/// Encodes a `c/` value.
pub fn encode_current(rev: Revision, value: &[u8]) -> Bytes {
    let mut b = BytesMut::with_capacity(8 + value.len());
    b.put_u64(rev);
    b.put_slice(value);
    b.freeze()
}

/// Decodes a `c/` value into (mod revision, object bytes); without copying unless the
/// value is compressed.
pub fn decode_current(engine_key: &[u8], v: &Bytes) -> Result<(Revision, Bytes), StorageError> {
    let (rev, payload) = split_current(engine_key, v)?;
    Ok((rev, crate::payload::decode(engine_key, &payload, rev)?))
}

/// A `c/` value's mod revision and payload (the value as it lies in the engine).
pub(crate) fn split_current(
    engine_key: &[u8],
    v: &Bytes,
) -> Result<(Revision, Bytes), StorageError> {
    if v.len() < 8 {
        return Err(corrupt(engine_key, "bad current value"));
    }
    let mut b = [0u8; 8];
    b.copy_from_slice(&v[..8]);
    Ok((u64::from_be_bytes(b), v.slice(8..)))
}

/// Encodes a `k/` value.
pub fn encode_version(tag: u8, value: &[u8]) -> Bytes {
    let mut b = BytesMut::with_capacity(1 + value.len());
    b.put_u8(tag);
    b.put_slice(value);
    b.freeze()
}

/// Decodes a `k/` value (of `engine_key`, whose revision the value carries) into (tag,
/// object bytes).
pub fn decode_version(engine_key: &[u8], v: &Bytes) -> Result<(u8, Bytes), StorageError> {
    match v.first() {
        Some(&t) if t <= TAG_DELETE => {
            let (_, rev) = parse_version(engine_key)?;
            Ok((t, crate::payload::decode(engine_key, &v.slice(1..), rev)?))
        }
        _ => Err(corrupt(engine_key, "bad version value")),
    }
}

/// Encodes a u64 meta value.
pub fn encode_u64(v: u64) -> Bytes {
    Bytes::copy_from_slice(&v.to_be_bytes())
}

/// Decodes a u64 meta value (absent = 0).
pub fn decode_u64(engine_key: &[u8], v: Option<&Bytes>) -> Result<u64, StorageError> {
    match v {
        None => Ok(0),
        Some(v) if v.len() == 8 => {
            let mut b = [0u8; 8];
            b.copy_from_slice(v);
            Ok(u64::from_be_bytes(b))
        }
        Some(_) => Err(corrupt(engine_key, "bad meta value")),
    }
}

fn concat(a: &[u8], b: &[u8], c: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(a.len() + b.len() + c.len());
    v.extend_from_slice(a);
    v.extend_from_slice(b);
    v.extend_from_slice(c);
    v
}

/// The smallest key greater than every key starting with `prefix`.
pub fn prefix_end(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return end;
        }
    }
    vec![0xff; prefix.len() + 1]
}

pub(crate) fn corrupt(engine_key: &[u8], detail: &'static str) -> StorageError {
    StorageError::Corrupt {
        key: String::from_utf8_lossy(engine_key).into_owned(),
        detail,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_sort_newest_first_and_before_longer_keys() {
        let a5 = version("g/r/ns/a", 5);
        let a7 = version("g/r/ns/a", 7);
        let ab1 = version("g/r/ns/a-b", 1);
        assert!(a7 < a5, "newer versions sort first");
        assert!(a5 < versions_after("g/r/ns/a"));
        assert!(versions_after("g/r/ns/a") < ab1);
        assert_eq!(parse_version(&a7).unwrap(), ("g/r/ns/a", 7));
        let (start, end) = versions_of_at("g/r/ns/a", 6);
        assert!(start <= a5 && a5 < end && a7 < start);
    }

    #[test]
    fn log_entries_round_trip() {
        let v = encode_log(TAG_DELETE, 42, "g/r//n");
        let e = decode_log(b"l/x", &v).unwrap();
        assert_eq!((e.tag, e.prev, e.key.as_str()), (TAG_DELETE, 42, "g/r//n"));
        assert_eq!(parse_log_key(&log(99)).unwrap(), 99);
        assert!(log(1) < log(256));
        let skip = decode_log(b"l/x", &encode_skip(7)).unwrap();
        assert_eq!(skip.skipped_until(), Some(7));
        assert_eq!(e.skipped_until(), None);
    }

    #[test]
    fn prefix_end_is_exclusive_upper_bound() {
        assert_eq!(prefix_end(b"c/a"), b"c/b".to_vec());
        assert_eq!(prefix_end(b"a\xff"), b"b".to_vec());
        let (s, e) = current_range("g/r/ns/");
        assert!(s <= current("g/r/ns/x") && current("g/r/ns/x") < e);
        assert!(current("g/r/ns0/x") >= e);
    }
}
