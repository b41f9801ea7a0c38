//! Reads at a past revision.
//!
//! Every version is stored once: the current one of a key in `c/`, the versions it
//! superseded (and deletions) in `k/`, until compaction. The committer moves a value from
//! `c/` to `k/` when a later write supersedes it, in that write's transaction. So the
//! version of a key visible at revision R is its `c/` version when that was written at or
//! before R, else the newest `k/` version at or before R (a tombstone: absent).
//!
//! Stores written before this layout also hold the current version in `k/`; the rule
//! above reads them the same way.

use bytes::Bytes;

use crate::engine::KeyValue;
use crate::store::{ListPage, SCAN_CHUNK, Versioned};
use crate::{Result, Revision, Snapshot, keys};

/// Most keys examined, past a full page, to count `remainingItemCount` of a page read at a
/// past revision (that count must read values, to skip deletions).
const REMAINING_EXACT_CAP: u64 = 10_000;

/// The version of `key` visible at `rev`.
pub(crate) async fn get_at(
    snap: &dyn Snapshot,
    key: &str,
    rev: Revision,
) -> Result<Option<Versioned>> {
    let ck = keys::current(key);
    if let Some(raw) = snap.get(&ck).await? {
        let (revision, value) = keys::decode_current(&ck, &raw)?;
        if revision <= rev {
            return Ok(Some(Versioned {
                key: key.to_owned(),
                revision,
                value,
            }));
        }
    }
    let (start, end) = keys::versions_of_at(key, rev);
    let Some((k, raw)) = snap.scan(&start, &end, 1).await?.into_iter().next() else {
        return Ok(None);
    };
    let (_, revision) = keys::parse_version(&k)?;
    let (tag, value) = keys::decode_version(&k, &raw)?;
    Ok((tag == keys::TAG_PUT).then(|| Versioned {
        key: key.to_owned(),
        revision,
        value,
    }))
}

/// The value `key` was given at exactly `rev` (a put or a tombstone's last state): in
/// `k/` once superseded, else still in `c/`. `None` once compacted away.
pub(crate) async fn value_written_at(
    snap: &dyn Snapshot,
    key: &str,
    rev: Revision,
) -> Result<Option<(u8, Bytes)>> {
    let vk = keys::version(key, rev);
    if let Some(raw) = snap.get(&vk).await? {
        return Ok(Some(keys::decode_version(&vk, &raw)?));
    }
    let ck = keys::current(key);
    if let Some(raw) = snap.get(&ck).await? {
        let (revision, value) = keys::decode_current(&ck, &raw)?;
        if revision == rev {
            return Ok(Some((keys::TAG_PUT, value)));
        }
    }
    Ok(None)
}

/// One engine range read in chunks, one pair at a time.
struct Cursor {
    buf: std::collections::VecDeque<KeyValue>,
    next: Vec<u8>,
    end: Vec<u8>,
    exhausted: bool,
}

impl Cursor {
    fn new(start: Vec<u8>, end: Vec<u8>) -> Cursor {
        Cursor {
            buf: Default::default(),
            next: start,
            end,
            exhausted: false,
        }
    }

    async fn peek(&mut self, snap: &dyn Snapshot) -> Result<Option<&KeyValue>> {
        if self.buf.is_empty() && !self.exhausted {
            let chunk = snap.scan(&self.next, &self.end, SCAN_CHUNK).await?;
            self.exhausted = chunk.len() < SCAN_CHUNK;
            if let Some((last, _)) = chunk.last() {
                self.next = next_key(last);
            }
            self.buf.extend(chunk);
            if !self.exhausted {
                // Long scans share the runtime with other requests.
                tokio::task::yield_now().await;
            }
        }
        Ok(self.buf.front())
    }

    fn pop(&mut self) -> Option<KeyValue> {
        self.buf.pop_front()
    }
}

/// The smallest key greater than `k`.
pub(crate) fn next_key(k: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(k.len() + 1);
    v.extend_from_slice(k);
    v.push(0);
    v
}

/// The keys starting with `prefix` as they were at `rev`, in key order, after
/// `start_after`, at most `limit` (`usize::MAX`: all). Walks `c/` and `k/` side by side,
/// one object key at a time.
pub(crate) async fn list_at(
    snap: &dyn Snapshot,
    rev: Revision,
    prefix: &str,
    start_after: Option<&str>,
    limit: usize,
    count_remaining: bool,
) -> Result<ListPage> {
    let (mut cstart, cend) = keys::current_range(prefix);
    let (mut kstart, kend) = keys::versions_range(prefix);
    if let Some(after) = start_after {
        cstart = cstart.max(keys::current_after(after));
        kstart = kstart.max(keys::versions_after(after));
    }
    let mut current = Cursor::new(cstart, cend);
    let mut history = Cursor::new(kstart, kend);
    let mut items = Vec::new();
    let mut more = false;
    let mut remaining = 0u64;
    let mut examined_after_page = 0u64;
    let mut counted_all = true;
    loop {
        // The next object key in either range.
        let ck = match current.peek(snap).await? {
            Some((k, _)) => Some(keys::object_key_of_current(k)?.to_owned()),
            None => None,
        };
        let kk = match history.peek(snap).await? {
            Some((k, _)) => Some(keys::parse_version(k)?.0.to_owned()),
            None => None,
        };
        let key = match (ck.as_deref(), kk.as_deref()) {
            (None, None) => break,
            (Some(c), None) => c.to_owned(),
            (None, Some(k)) => k.to_owned(),
            (Some(c), Some(k)) => c.min(k).to_owned(),
        };
        let mut visible: Option<Option<Versioned>> = None;
        if ck.as_deref() == Some(key.as_str())
            && let Some((k, raw)) = current.pop()
        {
            let (revision, value) = keys::decode_current(&k, &raw)?;
            if revision <= rev {
                visible = Some(Some(Versioned {
                    key: key.clone(),
                    revision,
                    value,
                }));
            }
        }
        // Every `k/` version of this key, newest first: the first at or before `rev`
        // decides, unless `c/` did.
        while let Some((k, _)) = history.peek(snap).await? {
            let (hk, version_rev) = keys::parse_version(k)?;
            if hk != key {
                break;
            }
            let Some((k, raw)) = history.pop() else { break };
            if visible.is_none() && version_rev <= rev {
                let (tag, value) = keys::decode_version(&k, &raw)?;
                visible = Some((tag == keys::TAG_PUT).then(|| Versioned {
                    key: key.clone(),
                    revision: version_rev,
                    value,
                }));
            }
        }
        if more {
            examined_after_page += 1;
            if examined_after_page > REMAINING_EXACT_CAP {
                counted_all = false;
                break;
            }
        }
        let Some(Some(item)) = visible else { continue };
        if items.len() < limit {
            items.push(item);
        } else {
            more = true;
            remaining += 1;
            if !count_remaining {
                break;
            }
        }
    }
    Ok(ListPage {
        revision: rev,
        items,
        more,
        remaining: (more && count_remaining && counted_all).then_some(remaining),
    })
}
