//! The write-ahead log: what makes a commit durable.
//!
//! A durable redb commit writes every B-tree page the transaction changed, wherever it
//! lies in the file, and then fsyncs: for a group of creates that is one leaf page per
//! object name and ~35 µs per write on this project's machines, serialised behind the
//! single writer. The engine instead appends each transaction's writes to this log as one
//! record (a sequential write of a few KiB) and fsyncs that; redb commits without fsync
//! (`Durability::None`: visible to readers at once, persisted later). Every
//! [`CHECKPOINT_AGE`] or [`CHECKPOINT_BYTES`] the engine makes one durable redb commit,
//! which persists every earlier one, and empties the log. This is etcd's shape too (a WAL
//! fsynced per batch, bbolt committed every 100 ms).
//!
//! On open, the records the durable database state does not hold (their sequence numbers
//! are above the one redb stored in its last durable commit) are applied again.
//!
//! ## Format
//!
//! A record is `len: u32 LE`, `crc32: u32 LE` (of the body), then `len` bytes of body:
//! `seq: u64 LE`, `count: u32 LE`, and `count` entries, each `tag: u8` (0 delete, 1 put),
//! `key_len: u32 LE`, the key, and for a put `value_len: u32 LE` and the value. Every
//! append writes its record followed by an end marker (eight zero bytes, a header no
//! record has), which the next append overwrites.
//!
//! ## A torn tail, and damage
//!
//! Emptying the log rewinds it in place (see [`Wal::clear`]), so past the last record
//! there may be older ones, whose sequence numbers are lower. Reading stops at the first
//! record that is short, fails its checksum or does not continue the sequence; what it
//! stops at is then one of:
//! * the end marker or the end of the file: a clean end (what follows is older records);
//! * a record cut short or partly written: the one a crash interrupted. Each record is
//!   appended only after the one before it is durable, so only the last can be torn, and
//!   it was never acknowledged: it is cut off (logged with its offset and size);
//! * anything followed, somewhere after it, by a whole record with a *later* sequence
//!   number than the last one read: that can only be damage to the file (a bad sector, a
//!   flipped bit, a stray write), and the records after it were acknowledged. Opening
//!   refuses such a log, naming the file, the offset and the sequence number, unless told
//!   to accept the loss ([`crate::EmbeddedEngine::repair`]).
//!
//! The damage check scans the bytes after the stop for a record header whose sequence
//! number lies in the range the rest of the file could hold and whose checksum matches;
//! it runs only after a crash (a clean stop leaves the log empty) and takes ~30 ms for a
//! full 32 MiB log. Damage confined to the last record cannot be told from a torn write
//! (etcd's log has the same limit).

use std::collections::BTreeMap;
use std::fs::File;
use std::io::Read as _;
use std::os::unix::fs::FileExt as _;
use std::path::Path;
use std::time::{Duration, Instant};

use bytes::{Buf as _, BufMut as _, Bytes, BytesMut};

/// One transaction's writes, in key order; `None` deletes.
pub(crate) type Writes = BTreeMap<Vec<u8>, Option<Bytes>>;

/// The log is emptied (after a durable redb commit) once its oldest record is this old...
///
/// The durable commit writes every page changed since the last one and holds up writes
/// meanwhile: ~55 ms after a second of 14k creates/s on this project's machines. Measured
/// with 64 clients creating, p99 latency: every 100 ms 15.6 ms, every 250 ms 23 ms, every
/// second 7.8-9.4 ms (fewer writes wait, and a page written many times is written once).
pub(crate) const CHECKPOINT_AGE: Duration = Duration::from_secs(1);
/// ... or once it holds this many bytes, whichever comes first. Also bounds what a
/// restart after a crash applies again.
pub(crate) const CHECKPOINT_BYTES: u64 = 32 << 20;

const HEADER: usize = 8;
/// The smallest body: a sequence number and a count.
const MIN_BODY: usize = 12;
/// What follows the last record: a header of length 0, which no record has.
const END_MARKER: [u8; HEADER] = [0; HEADER];
const PUT: u8 = 1;
const DELETE: u8 = 0;

/// Why an append failed.
#[derive(Debug)]
pub(crate) enum AppendError {
    /// Nothing of the record remains in the log: the transaction did not commit.
    NotWritten(std::io::Error),
    /// The record may or may not be in the log (the write or fsync failed and the log could
    /// not be cut back): a restart may apply it.
    Unknown(std::io::Error),
}

/// An open log file and where it ends.
#[derive(Debug)]
pub(crate) struct Wal {
    file: File,
    /// Bytes of valid records.
    len: u64,
    /// The sequence number of the last record appended or applied.
    seq: u64,
    /// When the first record since the log was last emptied was appended.
    oldest: Option<Instant>,
    /// How old that record may grow before the log is due to be emptied.
    max_age: Duration,
}

/// What opening a log found.
#[derive(Debug)]
pub(crate) struct Opened {
    pub(crate) wal: Wal,
    /// The whole records, in order, up to where reading stopped.
    pub(crate) records: Vec<(u64, Writes)>,
    /// What lies where reading stopped.
    pub(crate) end: End,
}

/// What lies past a log's last whole record.
#[derive(Debug, PartialEq)]
pub(crate) enum End {
    /// The end marker or the file's end (older records a rewind left may follow).
    Clean,
    /// A record a crash cut short or left partly written: it was never acknowledged.
    Torn {
        /// Where it starts.
        offset: u64,
        /// Its size, as far as the file holds it.
        bytes: u64,
    },
    /// A record that cannot be read, followed by whole records that come after it.
    Damaged(Damage),
}

/// An unreadable record with later records after it.
#[derive(Debug, PartialEq)]
pub(crate) struct Damage {
    /// Where the unreadable record starts.
    pub(crate) offset: u64,
    /// The sequence number it should have.
    pub(crate) seq: u64,
    /// Why it cannot be read.
    pub(crate) why: &'static str,
    /// The whole records after it with later sequence numbers, in file order.
    pub(crate) later: Vec<(u64, Writes)>,
    /// Bytes from `offset` to the end of the last of them.
    pub(crate) bytes: u64,
}

impl Wal {
    /// Opens (or creates) the log at `path` and reads it. `held` is the sequence number of
    /// the last record the database holds durably: records up to it are older ones, the
    /// damage check looks only for later ones. The file is not changed: the caller empties
    /// it ([`Wal::close`]) once the records are durable in the database.
    pub(crate) fn open(path: &Path, held: u64) -> std::io::Result<Opened> {
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)?;
        let (records, end) = read(&bytes, held);
        let wal = Wal {
            file,
            len: 0,
            seq: records.last().map_or(0, |(seq, _)| *seq),
            oldest: None,
            max_age: CHECKPOINT_AGE,
        };
        Ok(Opened { wal, records, end })
    }

    /// The sequence number of the last record appended or applied.
    #[cfg(test)]
    pub(crate) fn seq(&self) -> u64 {
        self.seq
    }

    /// Bytes of records in the log.
    #[cfg(test)]
    pub(crate) fn len(&self) -> u64 {
        self.len
    }

    /// Numbers the next record after `seq` (the database's, when it is ahead of the log).
    pub(crate) fn continue_after(&mut self, seq: u64) {
        self.seq = self.seq.max(seq);
    }

    /// Appends `writes` as the next record and makes it durable; returns its sequence
    /// number.
    pub(crate) fn append(&mut self, writes: &Writes) -> Result<u64, AppendError> {
        let seq = self.seq + 1;
        let record = encode(seq, writes, true);
        let written = self
            .file
            .write_all_at(&record, self.len)
            .and_then(|()| self.file.sync_data());
        if let Err(e) = written {
            // Cut the log back to where it was, so that a partial record cannot come back.
            let cut = self
                .file
                .set_len(self.len)
                .and_then(|()| self.file.write_all_at(&END_MARKER, self.len))
                .and_then(|()| self.file.sync_all());
            return Err(match cut {
                Ok(()) => AppendError::NotWritten(e),
                Err(_) => AppendError::Unknown(e),
            });
        }
        self.len += (record.len() - HEADER) as u64;
        self.seq = seq;
        self.oldest.get_or_insert_with(Instant::now);
        Ok(seq)
    }

    /// Whether the log should be emptied now.
    pub(crate) fn due(&self) -> bool {
        self.len >= CHECKPOINT_BYTES || self.oldest.is_some_and(|t| t.elapsed() >= self.max_age)
    }

    /// Tests that copy files between commits keep the log from being emptied under them.
    #[cfg(test)]
    pub(crate) fn set_max_age(&mut self, age: Duration) {
        self.max_age = age;
    }

    /// Empties the log: every record in it is durable in the database. The file is not
    /// truncated but written again from its start: appends that overwrite a file keep its
    /// size, so their fsync has no metadata to journal. What lies beyond the new records
    /// is older ones, with lower sequence numbers (see the module's documentation).
    pub(crate) fn clear(&mut self) {
        self.len = 0;
        self.oldest = None;
    }

    /// Empties the log and its file (a clean stop, or an open that applied it).
    pub(crate) fn close(&mut self) -> std::io::Result<()> {
        self.clear();
        self.file.set_len(0)?;
        self.file.sync_all()
    }
}

/// A record: header, body, and with `marker` the end marker after it.
fn encode(seq: u64, writes: &Writes, marker: bool) -> Bytes {
    let size: usize = writes
        .iter()
        .map(|(k, v)| 1 + 4 + k.len() + v.as_ref().map_or(0, |v| 4 + v.len()))
        .sum();
    let mut body = BytesMut::with_capacity(2 * HEADER + MIN_BODY + size);
    body.put_bytes(0, HEADER);
    body.put_u64_le(seq);
    body.put_u32_le(writes.len() as u32);
    for (k, v) in writes {
        body.put_u8(if v.is_some() { PUT } else { DELETE });
        body.put_u32_le(k.len() as u32);
        body.put_slice(k);
        if let Some(v) = v {
            body.put_u32_le(v.len() as u32);
            body.put_slice(v);
        }
    }
    let end = body.len();
    let len = (end - HEADER) as u32;
    let crc = crc32fast::hash(&body[HEADER..end]);
    body[..4].copy_from_slice(&len.to_le_bytes());
    body[4..HEADER].copy_from_slice(&crc.to_le_bytes());
    if marker {
        body.put_slice(&END_MARKER);
    }
    body.freeze()
}

/// The whole record at `at`: its sequence number, writes and size, if one starts there.
fn record_at(bytes: &[u8], at: usize) -> Option<(u64, Writes, usize)> {
    let header = bytes.get(at..at + HEADER)?;
    let len = u32::from_le_bytes([header[0], header[1], header[2], header[3]]) as usize;
    let crc = u32::from_le_bytes([header[4], header[5], header[6], header[7]]);
    let body = bytes.get(at + HEADER..(at + HEADER).checked_add(len)?)?;
    if len < MIN_BODY || crc32fast::hash(body) != crc {
        return None;
    }
    let (seq, writes) = decode(body)?;
    Some((seq, writes, HEADER + len))
}

/// A whole record found past where reading stopped.
#[derive(Debug)]
struct Found {
    offset: usize,
    size: usize,
    seq: u64,
    writes: Writes,
}

/// Reads a log: the whole records in sequence from its start, and what lies after them.
/// `held` is the last sequence number the database holds.
fn read(bytes: &[u8], held: u64) -> (Vec<(u64, Writes)>, End) {
    let mut records: Vec<(u64, Writes)> = Vec::new();
    let mut at = 0usize;
    while let Some((seq, writes, size)) = record_at(bytes, at) {
        if records.last().is_some_and(|(last, _)| seq != last + 1) {
            break;
        }
        records.push((seq, writes));
        at += size;
    }
    let after = held.max(records.last().map_or(0, |(seq, _)| *seq));
    let later = later_records(bytes, at, after);
    let rest = &bytes[at..];
    let header_len = rest
        .get(..4)
        .map(|h| u32::from_le_bytes([h[0], h[1], h[2], h[3]]) as usize);
    if let Some(last) = later.last() {
        let why = match header_len {
            _ if rest.starts_with(&END_MARKER) => "its header reads as the end of the log",
            _ if later[0].offset == at => "it does not continue the sequence (records are missing)",
            Some(len) if HEADER + len <= rest.len() => "it fails its checksum",
            _ => "its length runs past the end of the file",
        };
        let damage = Damage {
            offset: at as u64,
            seq: after + 1,
            why,
            bytes: (last.offset + last.size - at) as u64,
            later: later.into_iter().map(|f| (f.seq, f.writes)).collect(),
        };
        return (records, End::Damaged(damage));
    }
    let end = if rest.is_empty() || rest.starts_with(&END_MARKER) {
        End::Clean
    } else {
        let torn = header_len.map_or(rest.len(), |len| (HEADER + len).min(rest.len()));
        End::Torn {
            offset: at as u64,
            bytes: torn as u64,
        }
    };
    (records, end)
}

/// The whole records that start at or after `from` with sequence numbers above `after`,
/// in file order (each found by trying every offset: a damaged header gives no length to
/// skip by). A candidate is checked by its sequence number first, which must lie in the
/// range the rest of the file could hold, so the checksum runs on almost nothing else.
fn later_records(bytes: &[u8], from: usize, after: u64) -> Vec<Found> {
    let mut found = Vec::new();
    let most = (bytes.len().saturating_sub(from) / (HEADER + MIN_BODY)) as u64 + 1;
    let mut at = from;
    while let Some(seq) = bytes.get(at + HEADER..at + HEADER + 8) {
        let seq = u64::from_le_bytes([
            seq[0], seq[1], seq[2], seq[3], seq[4], seq[5], seq[6], seq[7],
        ]);
        match (seq > after && seq - after <= most)
            .then(|| record_at(bytes, at))
            .flatten()
        {
            Some((seq, writes, size)) => {
                found.push(Found {
                    offset: at,
                    size,
                    seq,
                    writes,
                });
                at += size;
            }
            None => at += 1,
        }
    }
    found
}

fn decode(mut body: &[u8]) -> Option<(u64, Writes)> {
    fn take<'a>(body: &mut &'a [u8], n: usize) -> Option<&'a [u8]> {
        let (head, rest) = body.split_at_checked(n)?;
        *body = rest;
        Some(head)
    }
    if body.remaining() < 12 {
        return None;
    }
    let seq = body.get_u64_le();
    let count = body.get_u32_le();
    let mut writes = Writes::new();
    for _ in 0..count {
        let tag = *take(&mut body, 1)?.first()?;
        let klen = u32::from_le_bytes(take(&mut body, 4)?.try_into().ok()?) as usize;
        let key = take(&mut body, klen)?.to_vec();
        let value = match tag {
            PUT => {
                let vlen = u32::from_le_bytes(take(&mut body, 4)?.try_into().ok()?) as usize;
                Some(Bytes::copy_from_slice(take(&mut body, vlen)?))
            }
            DELETE => None,
            _ => return None,
        };
        writes.insert(key, value);
    }
    body.is_empty().then_some((seq, writes))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]

    use super::*;

    fn writes(n: u8) -> Writes {
        let mut w = Writes::new();
        w.insert(vec![b'k', n], Some(Bytes::from(vec![n; 100 + n as usize])));
        w.insert(vec![b'd', n], None);
        w
    }

    fn dir() -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!(
            "wasmgate-wal-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    /// A log of records `seqs`, each followed by the end marker the next one overwrites,
    /// as appends leave it.
    fn log(seqs: impl IntoIterator<Item = u8>) -> Vec<u8> {
        let mut log = Vec::new();
        for n in seqs {
            log.extend_from_slice(&encode(u64::from(n), &writes(n), false));
        }
        log.extend_from_slice(&END_MARKER);
        log
    }

    fn offset_of(seq: u8) -> usize {
        (1..seq)
            .map(|n| encode(u64::from(n), &writes(n), false).len())
            .sum()
    }

    fn seqs(records: &[(u64, Writes)]) -> Vec<u64> {
        records.iter().map(|(s, _)| *s).collect()
    }

    /// STORE-01: appended records read back in order, with their sequence numbers.
    #[test]
    fn records_read_back_in_order() {
        let d = dir();
        let path = d.join("store.wal");
        let Opened {
            mut wal,
            records,
            end,
        } = Wal::open(&path, 0).unwrap();
        assert!(records.is_empty());
        assert_eq!(end, End::Clean);
        for n in 1..=3 {
            assert_eq!(wal.append(&writes(n)).unwrap(), u64::from(n));
        }
        drop(wal);
        let opened = Wal::open(&path, 0).unwrap();
        assert_eq!(opened.wal.seq(), 3);
        let expected: Vec<(u64, Writes)> = (1..=3).map(|n| (u64::from(n), writes(n))).collect();
        assert_eq!(opened.records, expected);
        assert_eq!(opened.end, End::Clean);
        assert_eq!(std::fs::read(&path).unwrap(), log(1..=3));
        std::fs::remove_dir_all(d).unwrap();
    }

    /// STORE-01, ISSUE-24.1: a record a crash cut short (never acknowledged) is a torn
    /// tail: the records before it are read, and its offset and size are reported.
    #[test]
    fn a_record_cut_short_is_a_torn_tail() {
        let mut bytes = log(1..=2);
        bytes.truncate(bytes.len() - HEADER);
        let third = encode(3, &writes(3), true);
        bytes.extend_from_slice(&third[..40]);
        let (records, end) = read(&bytes, 0);
        assert_eq!(seqs(&records), [1, 2]);
        assert_eq!(
            end,
            End::Torn {
                offset: offset_of(3) as u64,
                bytes: 40
            }
        );
        // Cut inside the header too.
        bytes.truncate(offset_of(3) + 3);
        assert!(matches!(read(&bytes, 0).1, End::Torn { bytes: 3, .. }));
    }

    /// ISSUE-24.1: the last record written whole but with a byte wrong (its sectors
    /// reached the disk out of order before the crash) is a torn tail as well.
    #[test]
    fn a_last_record_partly_written_is_a_torn_tail() {
        let mut bytes = log(1..=3);
        let at = offset_of(3) + HEADER + 20;
        bytes[at] ^= 0x40;
        let (records, end) = read(&bytes, 0);
        assert_eq!(seqs(&records), [1, 2]);
        let size = encode(3, &writes(3), false).len() as u64;
        assert_eq!(
            end,
            End::Torn {
                offset: offset_of(3) as u64,
                bytes: size
            }
        );
    }

    /// ISSUE-24.1: one flipped byte in a record with whole records after it is damage,
    /// not a torn tail: the damaged record's offset and sequence number are named, and
    /// the records after it are found (none of them is applied).
    #[test]
    fn a_damaged_record_before_whole_ones_is_damage() {
        let clean = log(1..=5);
        for (byte, why) in [
            (HEADER + 30, "it fails its checksum"),
            (HEADER + 1, "it fails its checksum"),
            (1, "its length runs past the end of the file"),
        ] {
            let mut bytes = clean.clone();
            bytes[offset_of(3) + byte] ^= 0x40;
            let (records, end) = read(&bytes, 0);
            assert_eq!(seqs(&records), [1, 2]);
            let End::Damaged(d) = end else {
                panic!("{end:?}")
            };
            assert_eq!((d.offset, d.seq, d.why), (offset_of(3) as u64, 3, why));
            assert_eq!(seqs(&d.later), [4, 5]);
            assert_eq!(d.bytes, (offset_of(6) - offset_of(3)) as u64);
        }
        // A header zeroed (a sector read back as zeros) reads as the end marker.
        let mut bytes = clean.clone();
        bytes[offset_of(2)..offset_of(2) + HEADER].fill(0);
        let End::Damaged(d) = read(&bytes, 0).1 else {
            panic!()
        };
        assert_eq!(
            (d.seq, d.why),
            (2, "its header reads as the end of the log")
        );
        assert_eq!(seqs(&d.later), [3, 4, 5]);
        // A record missing from the middle: the sequence jumps.
        let mut gap = log(1..=2);
        gap.truncate(gap.len() - HEADER);
        gap.extend_from_slice(&log(4..=4));
        let End::Damaged(d) = read(&gap, 0).1 else {
            panic!()
        };
        assert_eq!(d.seq, 3);
        assert_eq!(seqs(&d.later), [4]);
    }

    /// ISSUE-24.1: damage to the first record of a log the database is behind is found
    /// too (the later records are above what the database holds).
    #[test]
    fn damage_to_the_first_record_is_found() {
        let mut bytes = log(1..=3);
        bytes[HEADER + 20] ^= 1;
        let (records, end) = read(&bytes, 0);
        assert!(records.is_empty());
        let End::Damaged(d) = end else { panic!() };
        assert_eq!((d.offset, d.seq), (0, 1));
        assert_eq!(seqs(&d.later), [2, 3]);
    }

    /// ISSUE-24.1: a log rewound in place holds older records past its end marker (and,
    /// after a crash, past a torn record): they are not mistaken for damage, nor is
    /// damage among them, nor a rewound log with nothing appended since.
    #[test]
    fn older_records_past_a_rewound_log_are_not_damage() {
        let old = log(1..=9);
        // Records 10 and 11 written over the start, then the end marker.
        let mut bytes = old.clone();
        let new = log(10..=11);
        bytes[..new.len()].copy_from_slice(&new);
        let (records, end) = read(&bytes, 9);
        assert_eq!(seqs(&records), [10, 11]);
        assert_eq!(end, End::Clean);
        // Damage among the older records changes nothing.
        let mut damaged_old = bytes.clone();
        let at = old.len() - 50;
        damaged_old[at] ^= 0xff;
        assert_eq!(read(&damaged_old, 9).1, End::Clean);
        // Record 12 torn over them.
        let twelve = encode(12, &writes(12), true);
        let mut torn = bytes.clone();
        let at = new.len() - HEADER;
        torn[at..at + 30].copy_from_slice(&twelve[..30]);
        let (records, end) = read(&torn, 9);
        assert_eq!(seqs(&records), [10, 11]);
        assert!(matches!(end, End::Torn { offset, .. } if offset == at as u64));
        // Damage to record 10 with 11 after it is still damage.
        let mut damaged_new = bytes.clone();
        damaged_new[HEADER + 40] ^= 1;
        let End::Damaged(d) = read(&damaged_new, 9).1 else {
            panic!()
        };
        assert_eq!((d.offset, d.seq), (0, 10));
        assert_eq!(seqs(&d.later), [11]);
        // Nothing appended since the rewind: the older records are what is read (the
        // database holds them), and a flipped byte among them is nobody's loss.
        let (records, end) = read(&old, 9);
        assert_eq!(records.len(), 9);
        assert_eq!(end, End::Clean);
        let mut old_damaged = old.clone();
        old_damaged[offset_of(4) + HEADER + 30] ^= 1;
        let (records, end) = read(&old_damaged, 9);
        assert_eq!(seqs(&records), [1, 2, 3]);
        assert!(matches!(end, End::Torn { .. }), "{end:?}");
    }

    /// STORE-01: appends over a rewound file go on after the last record, and an emptied
    /// log reads back only what was appended since.
    #[test]
    fn an_emptied_log_holds_only_later_records() {
        let d = dir();
        let path = d.join("store.wal");
        let Opened { mut wal, .. } = Wal::open(&path, 0).unwrap();
        for n in 1..=3 {
            wal.append(&writes(n)).unwrap();
        }
        wal.clear();
        assert_eq!(wal.append(&writes(4)).unwrap(), 4);
        drop(wal);
        let opened = Wal::open(&path, 3).unwrap();
        assert_eq!(opened.records, vec![(4, writes(4))]);
        assert_eq!(opened.end, End::Clean);
        let mut wal = opened.wal;
        wal.close().unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 0);
        std::fs::remove_dir_all(d).unwrap();
    }

    /// The damage check finds every later record of a large log (it tries every offset
    /// after the damage: ~0.1 s for 8 MiB in a debug build here).
    #[test]
    fn the_damage_check_finds_every_later_record_of_a_large_log() {
        let mut bytes = Vec::new();
        let mut n = 0u64;
        let value = Bytes::from(vec![7u8; 4000]);
        while bytes.len() < 8 << 20 {
            n += 1;
            let mut w = Writes::new();
            w.insert(n.to_be_bytes().to_vec(), Some(value.clone()));
            bytes.extend_from_slice(&encode(n, &w, false));
        }
        bytes[100] ^= 1;
        let (_, end) = read(&bytes, 0);
        let End::Damaged(d) = end else { panic!() };
        assert_eq!(d.later.len() as u64, n - 1);
        assert_eq!(d.bytes, bytes.len() as u64);
    }
}
