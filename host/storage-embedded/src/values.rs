//! How values sit in the redb file: compressed with zstd (level 1) when that makes them
//! smaller.
//!
//! Why: redb keeps values inside its 4 KiB B-tree leaves and splits a full leaf in two, so
//! a store of ~1.6 KB objects holds ~1.5 of them per leaf and its file is ~1.8x the
//! objects' bytes. Compressed (even Kubernetes objects with random-looking payloads lose a
//! quarter; typical ones far more), three fit a leaf. Measured on 100,000 ConfigMaps with a
//! random 1 KiB payload each: 1.83x -> 1.32x the JSON on disk (1.40x after every object was
//! rewritten once), ~2 µs per value each way. lz4 does not shrink such payloads (no entropy
//! coding); zstd level 3 gains nothing over 1.
//!
//! Format ([`Format::Framed`]): one tag byte, then the value as is ([`RAW`]), or its length
//! (u32 LE) and one zstd frame ([`ZSTD`]). Files written before this format have no tag
//! ([`Format::Plain`]): they keep being read and written as they are.

use std::cell::RefCell;

use bytes::Bytes;
use wasmgate_storage::EngineError;

/// Tag of a value stored as is.
pub const RAW: u8 = 0;
/// Tag of a zstd-compressed value.
pub const ZSTD: u8 = 1;

/// Values shorter than this are not worth a compression attempt (log entries, counters).
const MIN_COMPRESS: usize = 128;

/// zstd's fastest standard level: the others gain nothing on these values.
const LEVEL: i32 = 1;

/// The value format of a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Values as the store gave them (files written before compression).
    Plain,
    /// A tag byte, then the value or its compressed form.
    Framed,
}

impl Format {
    /// The number recorded in the file.
    pub fn id(self) -> u64 {
        match self {
            Format::Plain => 0,
            Format::Framed => 1,
        }
    }

    /// The format recorded as `id`.
    pub fn from_id(id: u64) -> Option<Format> {
        match id {
            0 => Some(Format::Plain),
            1 => Some(Format::Framed),
            _ => None,
        }
    }

    /// What to store for `value`.
    pub fn encode(self, value: &[u8]) -> Vec<u8> {
        if self == Format::Plain {
            return value.to_vec();
        }
        if value.len() >= MIN_COMPRESS
            && let Ok(len) = u32::try_from(value.len())
            && let Some(frame) = compress(value)
            && frame.len() + 5 < value.len()
        {
            let mut out = Vec::with_capacity(5 + frame.len());
            out.push(ZSTD);
            out.extend_from_slice(&len.to_le_bytes());
            out.extend_from_slice(&frame);
            return out;
        }
        let mut out = Vec::with_capacity(1 + value.len());
        out.push(RAW);
        out.extend_from_slice(value);
        out
    }

    /// The value stored as `stored`.
    pub fn decode(self, stored: &[u8]) -> Result<Bytes, EngineError> {
        if self == Format::Plain {
            return Ok(Bytes::copy_from_slice(stored));
        }
        match stored.split_first() {
            Some((&RAW, rest)) => Ok(Bytes::copy_from_slice(rest)),
            Some((&ZSTD, rest)) if rest.len() >= 4 => {
                let (len, frame) = rest.split_at(4);
                let len = u32::from_le_bytes([len[0], len[1], len[2], len[3]]) as usize;
                let out = decompress(frame, len)?;
                if out.len() != len {
                    return Err(corrupt(format!(
                        "a compressed value holds {} bytes, its header says {len}",
                        out.len()
                    )));
                }
                Ok(Bytes::from(out))
            }
            _ => Err(corrupt("a stored value has an unknown tag".into())),
        }
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

fn decompress(frame: &[u8], len: usize) -> Result<Vec<u8>, EngineError> {
    DECOMPRESSOR.with(|d| {
        let mut d = d.borrow_mut();
        if d.is_none() {
            *d = Some(zstd::bulk::Decompressor::new().map_err(EngineError::other)?);
        }
        match d.as_mut() {
            Some(d) => d
                .decompress(frame, len)
                .map_err(|e| corrupt(format!("a compressed value does not decompress: {e}"))),
            None => Err(corrupt("no zstd context".into())),
        }
    })
}

fn corrupt(why: String) -> EngineError {
    EngineError::other(std::io::Error::new(std::io::ErrorKind::InvalidData, why))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_round_trip_in_both_formats() {
        let big: Vec<u8> = (0..4000u32)
            .map(|i| b"abcdefgh"[(i % 7) as usize])
            .collect();
        for v in [&b""[..], b"x", b"short value", &big] {
            for f in [Format::Plain, Format::Framed] {
                assert_eq!(f.decode(&f.encode(v)).unwrap(), v);
            }
        }
    }

    #[test]
    fn compressible_values_are_stored_smaller_and_short_ones_as_they_are() {
        let big = vec![b'a'; 2000];
        let stored = Format::Framed.encode(&big);
        assert_eq!(stored[0], ZSTD);
        assert!(stored.len() < 100, "{}", stored.len());
        let short = Format::Framed.encode(b"l/0000");
        assert_eq!(short, b"\0l/0000");
        // Random bytes do not shrink: kept as they are, with their tag.
        let mut x: u32 = 7;
        let noise: Vec<u8> = (0..1000)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                x as u8
            })
            .collect();
        assert_eq!(Format::Framed.encode(&noise)[0], RAW);
        assert_eq!(Format::Plain.encode(&big), big);
    }

    #[test]
    fn damaged_values_are_errors_not_panics() {
        let mut stored = Format::Framed.encode(&[b'a'; 500]);
        stored.truncate(8);
        assert!(Format::Framed.decode(&stored).is_err());
        assert!(Format::Framed.decode(&[9, 1, 2]).is_err());
        assert!(Format::Framed.decode(&[]).is_err());
        let mut lying = Format::Framed.encode(&[b'a'; 500]);
        lying[1] = 0xff;
        assert!(Format::Framed.decode(&lying).is_err());
    }
}
