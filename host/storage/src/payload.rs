//! How object values lie in the engine: compressed with zstd when that makes them
//! smaller, by the writer's task before the committer sees them.
//!
//! Why: redb keeps values inside its 4 KiB B-tree leaves and splits a full leaf in two,
//! so ~1.6 KB objects sit ~1.5 to a leaf and the file holds ~1.4-1.8x their bytes.
//! Compressed (a Kubernetes object with a random-looking 1 KiB payload loses a quarter,
//! typical ones far more), three fit a leaf: 1.42x -> 1.13x the JSON on disk, measured
//! with 125k ConfigMaps. lz4 does not shrink such payloads (no entropy coding); zstd
//! level 3 gains nothing over 1.
//!
//! Compression costs ~5 µs per object, so it is done in [`Prepared::new`], by the task
//! that asks for the write, not in the committer's transaction, which every write waits
//! behind (compressing there cost ~5 % of creates per second). The revision is not known
//! then: the object is compressed without the digits of its `resourceVersion`, and the
//! slot where they go is recorded; a read splices in the revision the value is stored
//! under (the `c/` mod revision, or the revision in the `k/` key).
//!
//! Payload (after the `c/` revision or the `k/` tag, see [`crate::keys`]):
//!
//! ```text
//! 0x01 ++ len u32 LE ++ slot u32 LE ++ zstd frame   compressed; len: the value without the
//!                                                   revision digits; slot: where they go,
//!                                                   plus one (0: no slot)
//! 0x00 ++ value                                     a value that itself starts with 0x00 or
//!                                                   0x01, stored as is
//! anything else                                     the value as is (objects are JSON, `{`)
//! ```
//!
//! A value stored uncompressed is therefore exactly what stores wrote before compression
//! existed, so a gateway with `compress_values` off writes what an older one reads (a
//! rolling upgrade of replicas sharing TiKV turns compression on once all run this
//! version).

use std::cell::RefCell;

use bytes::{BufMut as _, Bytes, BytesMut};

use crate::keys::corrupt;
use crate::{Revision, StorageError};

/// Tag of a value stored as is.
const RAW: u8 = 0;
/// Tag of a compressed value.
const ZSTD: u8 = 1;
/// Bytes of the compressed form's header (tag, length, slot).
const ZSTD_HEADER: usize = 9;

/// Values shorter than this are not worth a compression attempt.
const MIN_COMPRESS: usize = 128;

/// The largest value a compressed payload may claim to hold: a damaged header must not
/// make a read allocate gigabytes (the store refuses values above 1.5 MiB by default).
const MAX_DECOMPRESSED: usize = 64 << 20;

/// zstd's fastest standard level: the others gain nothing on these values.
const LEVEL: i32 = 1;

/// A value's stored form, as far as it is known before the revision: compressed, or
/// `None` when it is stored as is (the committer then tags the rendered value).
#[derive(Debug, Clone, Default)]
pub(crate) struct Prepared(Option<Bytes>);

impl Prepared {
    /// Compresses `value` (with an empty revision slot at `slot`) if that makes it smaller.
    pub(crate) fn new(value: &[u8], slot: Option<usize>) -> Prepared {
        if value.len() < MIN_COMPRESS {
            return Prepared(None);
        }
        let (Ok(len), Ok(slot)) = (
            u32::try_from(value.len()),
            u32::try_from(slot.map_or(0, |s| s + 1)),
        ) else {
            return Prepared(None);
        };
        let Some(frame) = compress(value) else {
            return Prepared(None);
        };
        // Compressed, it must leave room for the digits the raw form would hold.
        if frame.len() + ZSTD_HEADER >= value.len() {
            return Prepared(None);
        }
        let mut out = BytesMut::with_capacity(ZSTD_HEADER + frame.len());
        out.put_u8(ZSTD);
        out.put_u32_le(len);
        out.put_u32_le(slot);
        out.put_slice(&frame);
        Prepared(Some(out.freeze()))
    }

    /// The payload to store for this value rendered as `rendered`.
    pub(crate) fn payload(&self, rendered: &Bytes) -> Bytes {
        match &self.0 {
            Some(p) => p.clone(),
            None if matches!(rendered.first(), Some(&RAW | &ZSTD)) => {
                let mut out = BytesMut::with_capacity(1 + rendered.len());
                out.put_u8(RAW);
                out.put_slice(rendered);
                out.freeze()
            }
            None => rendered.clone(),
        }
    }
}

/// The value stored as `payload` under revision `rev` (`engine_key` names it in errors).
pub(crate) fn decode(
    engine_key: &[u8],
    payload: &Bytes,
    rev: Revision,
) -> Result<Bytes, StorageError> {
    match payload.first() {
        Some(&RAW) => Ok(payload.slice(1..)),
        Some(&ZSTD) if payload.len() >= ZSTD_HEADER => {
            let word = |at: usize| {
                u32::from_le_bytes([
                    payload[at],
                    payload[at + 1],
                    payload[at + 2],
                    payload[at + 3],
                ]) as usize
            };
            let (len, slot) = (word(1), word(5));
            let frame = &payload[ZSTD_HEADER..];
            // The frame says how much it holds: it must be what the header says.
            let declared = zstd::zstd_safe::get_frame_content_size(frame)
                .ok()
                .flatten();
            if len > MAX_DECOMPRESSED || declared != Some(len as u64) {
                return Err(corrupt(engine_key, "a compressed value has a bad header"));
            }
            let value = decompress(frame, len)
                .ok_or_else(|| corrupt(engine_key, "a compressed value does not decompress"))?;
            if value.len() != len || slot > len + 1 {
                return Err(corrupt(engine_key, "a compressed value has a bad header"));
            }
            if slot == 0 {
                return Ok(Bytes::from(value));
            }
            let digits = rev.to_string();
            let mut out = BytesMut::with_capacity(len + digits.len());
            out.put_slice(&value[..slot - 1]);
            out.put_slice(digits.as_bytes());
            out.put_slice(&value[slot - 1..]);
            Ok(out.freeze())
        }
        Some(&ZSTD) => Err(corrupt(engine_key, "a compressed value has a bad header")),
        // Stored as is (and everything written before compression).
        _ => Ok(payload.clone()),
    }
}

thread_local! {
    // Contexts are reused: a fresh one per value cost ~4x the time (measured).
    static COMPRESSOR: RefCell<Option<zstd::bulk::Compressor<'static>>> = const { RefCell::new(None) };
    static DECOMPRESSOR: RefCell<Option<zstd::bulk::Decompressor<'static>>> = const { RefCell::new(None) };
}

/// `value` as one zstd frame; `None` if zstd failed (the value is then stored as is).
fn compress(value: &[u8]) -> Option<Vec<u8>> {
    COMPRESSOR.with(|c| {
        let mut c = c.borrow_mut();
        if c.is_none() {
            *c = zstd::bulk::Compressor::new(LEVEL).ok();
        }
        c.as_mut()?.compress(value).ok()
    })
}

fn decompress(frame: &[u8], len: usize) -> Option<Vec<u8>> {
    DECOMPRESSOR.with(|d| {
        let mut d = d.borrow_mut();
        if d.is_none() {
            *d = zstd::bulk::Decompressor::new().ok();
        }
        d.as_mut()?.decompress(frame, len).ok()
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]
    use super::*;

    fn object(n: usize) -> Vec<u8> {
        format!(
            r#"{{"metadata":{{"name":"o","resourceVersion":""}},"data":{{"x":"{}"}}}}"#,
            "abcdefghij".repeat(n)
        )
        .into_bytes()
    }

    fn slot_of(v: &[u8]) -> usize {
        let needle = br#""resourceVersion":""#;
        v.windows(needle.len()).position(|w| w == needle).unwrap() + needle.len()
    }

    fn rendered(v: &[u8], slot: usize, rev: Revision) -> Vec<u8> {
        let mut out = v[..slot].to_vec();
        out.extend_from_slice(rev.to_string().as_bytes());
        out.extend_from_slice(&v[slot..]);
        out
    }

    #[test]
    fn compressed_values_read_back_with_their_revision_spliced_in() {
        let v = object(100);
        let slot = slot_of(&v);
        let prepared = Prepared::new(&v, Some(slot));
        let payload = prepared.payload(&Bytes::from(rendered(&v, slot, 42)));
        assert_eq!(payload[0], ZSTD);
        assert!(
            payload.len() * 4 < v.len(),
            "{} of {}",
            payload.len(),
            v.len()
        );
        for rev in [42, 7, 123_456_789_012] {
            assert_eq!(
                decode(b"c/k", &payload, rev).unwrap(),
                rendered(&v, slot, rev)
            );
        }
        // Without a slot, the value as it was.
        let plain = Prepared::new(&v, None).payload(&Bytes::from(v.clone()));
        assert_eq!(decode(b"c/k", &plain, 9).unwrap(), v);
    }

    #[test]
    fn short_and_incompressible_values_are_stored_as_they_are() {
        let short = object(0);
        let slot = slot_of(&short);
        let r = Bytes::from(rendered(&short, slot, 5));
        let payload = Prepared::new(&short, Some(slot)).payload(&r);
        assert_eq!(payload, r, "exactly what older stores wrote");
        assert_eq!(decode(b"c/k", &payload, 5).unwrap(), r);
        // A value that starts like a tag gets one.
        for first in [RAW, ZSTD] {
            let odd = Bytes::from(vec![first, b'x', b'y']);
            let payload = Prepared::new(&odd, None).payload(&odd);
            assert_eq!(payload[..], [RAW, first, b'x', b'y']);
            assert_eq!(decode(b"c/k", &payload, 5).unwrap(), odd);
        }
        let mut x: u32 = 7;
        let noise: Vec<u8> = (0..1000)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                x as u8
            })
            .collect();
        let noise = Bytes::from(noise);
        let stored = Prepared::new(&noise, None).payload(&noise);
        assert_ne!(stored.first(), Some(&ZSTD));
        assert_eq!(decode(b"c/k", &stored, 1).unwrap(), noise);
    }

    #[test]
    fn values_written_before_tags_read_as_they_are() {
        let old = Bytes::from_static(br#"{"metadata":{"resourceVersion":"3"}}"#);
        assert_eq!(decode(b"c/k", &old, 3).unwrap(), old);
        assert_eq!(decode(b"c/k", &Bytes::new(), 3).unwrap(), Bytes::new());
    }

    #[test]
    fn damaged_payloads_are_errors_not_panics() {
        let v = object(50);
        let good = Prepared::new(&v, Some(slot_of(&v))).payload(&Bytes::from(v.clone()));
        for cut in [1, 5, ZSTD_HEADER, good.len() - 3] {
            assert!(
                decode(b"c/k", &good.slice(..cut), 1).is_err(),
                "cut at {cut}"
            );
        }
        let mut lying = good.to_vec();
        lying[8] = 0xff; // a slot past the end
        assert!(decode(b"c/k", &Bytes::from(lying), 1).is_err());
        let mut long = good.to_vec();
        long[1] = long[1].wrapping_add(1); // a length the frame does not have
        assert!(decode(b"c/k", &Bytes::from(long), 1).is_err());
    }
}
