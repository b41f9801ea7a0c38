//! The committer: one task that turns concurrent write requests into engine transactions.
//!
//! It takes every request waiting in its queue (up to `max_batch`), checks each one's
//! precondition against the current state (including earlier writes of the same batch),
//! gives each accepted write the next revision, and commits them all in one transaction:
//! one fsync for many writes (group commit). After the commit it publishes the events to
//! the watch hub in revision order and answers the writers.
//!
//! Revisions are allocated through `m/rev` inside the transaction, so several processes
//! sharing one engine (TiKV) serialise on it: a conflict makes the batch retry.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};

use crate::payload::Prepared;
use crate::store::{Shared, read_u64};
use crate::watch::{Event, EventKind};
use crate::{
    Committed, EngineError, Precondition, Result, Revision, StorageError, Transaction, Versioned,
    WriteOp, keys,
};

/// How often a batch is retried after an engine-level conflict.
const MAX_ATTEMPTS: usize = 16;
/// Log entries compacted per transaction.
const COMPACT_CHUNK: usize = 1024;

pub(crate) struct Pending {
    pub(crate) write: crate::Write,
    /// The value's stored form as far as it is known before its revision: compressed by
    /// the writer's task, so that the committer does not (`crate::payload`).
    prepared: Prepared,
    pub(crate) reply: oneshot::Sender<Result<Committed>>,
}

impl Pending {
    /// A write, its value's stored form as prepared by the writer, and where its outcome
    /// goes.
    pub(crate) fn new(
        write: crate::Write,
        prepared: Prepared,
        reply: oneshot::Sender<Result<Committed>>,
    ) -> Pending {
        Pending {
            write,
            prepared,
            reply,
        }
    }
}

pub(crate) async fn run(shared: Arc<Shared>, mut rx: mpsc::Receiver<Pending>, max_batch: usize) {
    let mut batch = Vec::with_capacity(max_batch);
    while rx.recv_many(&mut batch, max_batch).await > 0 {
        commit_batch(&shared, &mut batch).await;
        batch.clear();
    }
    shared.hub.close();
}

/// The outcome of planning one write inside a transaction.
struct Planned {
    event: Event,
}

async fn commit_batch(shared: &Shared, batch: &mut Vec<Pending>) {
    let mut attempt = 0;
    loop {
        attempt += 1;
        match try_commit(shared, batch).await {
            Ok(results) => {
                for (p, r) in batch.drain(..).zip(results) {
                    // The writer may have gone away; the write stands regardless.
                    let _ = p.reply.send(r);
                }
                return;
            }
            Err(StorageError::Engine(EngineError::Conflict)) if attempt < MAX_ATTEMPTS => {
                tokio::time::sleep(Duration::from_millis(attempt as u64)).await;
            }
            Err(e) => {
                tracing::warn!(error = %e, writes = batch.len(), "write batch failed");
                for p in batch.drain(..) {
                    let _ = p.reply.send(Err(clone_error(&e)));
                }
                return;
            }
        }
    }
}

/// Runs the batch in one transaction. `Err` means nothing was committed (or the outcome is
/// unknown), for the whole batch; `Ok` holds each write's own result.
async fn try_commit(shared: &Shared, batch: &[Pending]) -> Result<Vec<Result<Committed>>> {
    let mut txn = shared.engine.begin().await?;
    let base = keys::decode_u64(keys::META_REV, txn.get(keys::META_REV).await?.as_ref())?;
    // Another process (or an undetermined commit of ours) may have committed revisions the
    // hub has not seen: publish them first so watchers see every revision in order.
    if base > shared.hub.last() {
        crate::follow::catch_up(shared, base).await?;
    }
    // The current state of the keys this transaction has read or written (`None`: absent).
    let mut overlay: HashMap<&str, Option<Current>> = HashMap::new();
    let mut results: Vec<Result<Committed>> = Vec::with_capacity(batch.len());
    let mut planned: Vec<Planned> = Vec::with_capacity(batch.len());
    let mut next = base;
    'writes: for p in batch {
        let w = &p.write;
        for (gkey, grev) in &w.guards {
            // A guard read is cached in the overlay: the transaction's view of a key does
            // not change until this batch writes it, and then the overlay is updated.
            let actual = match overlay.get(gkey.as_str()) {
                Some(v) => v.as_ref().map_or(0, |c| c.revision),
                None => {
                    let v = read_current(txn.as_mut(), gkey).await?;
                    let rev = v.as_ref().map_or(0, |c| c.revision);
                    overlay.insert(gkey.as_str(), v);
                    rev
                }
            };
            if actual != *grev {
                results.push(Err(StorageError::Conflict {
                    key: gkey.clone(),
                    expected: *grev,
                    actual,
                }));
                continue 'writes;
            }
        }
        let found = match overlay.get(w.key.as_str()) {
            Some(v) => v.clone(),
            None => read_current(txn.as_mut(), &w.key).await?,
        };
        let (current, current_payload) = match found {
            Some(c) => {
                let payload = c.payload.clone();
                (
                    Some(c.versioned(&w.key, shared.current.as_ref())?),
                    Some(payload),
                )
            }
            None => (None, None),
        };
        if let Err(e) = check(&w.key, w.precondition, &w.op, current.as_ref()) {
            results.push(Err(e));
            continue;
        }
        next += 1;
        let (kind, value) = match &w.op {
            WriteOp::Put(v) => (EventKind::Put, v.render(next)),
            WriteOp::Delete(v) => (EventKind::Delete, v.render(next)),
        };
        let prev_rev = revision_of(current.as_ref());
        // Each version is stored once: the current one in `c/`; the one this write
        // supersedes moves to `k/` (history, until compaction), as it lies in the engine.
        if let (Some(c), Some(payload)) = (&current, &current_payload) {
            txn.put(
                keys::version(&w.key, c.revision),
                keys::encode_version(keys::TAG_PUT, payload),
            );
        }
        let payload = p.prepared.payload(&value);
        match kind {
            EventKind::Put => {
                txn.put(keys::current(&w.key), keys::encode_current(next, &payload));
                txn.put(
                    keys::log(next),
                    keys::encode_log(keys::TAG_PUT, prev_rev, &w.key),
                );
                overlay.insert(
                    &w.key,
                    Some(Current {
                        revision: next,
                        payload,
                        value: Some(value.clone()),
                    }),
                );
            }
            EventKind::Delete => {
                txn.delete(keys::current(&w.key));
                txn.put(
                    keys::version(&w.key, next),
                    keys::encode_version(keys::TAG_DELETE, &payload),
                );
                txn.put(
                    keys::log(next),
                    keys::encode_log(keys::TAG_DELETE, prev_rev, &w.key),
                );
                overlay.insert(&w.key, None);
            }
        }
        results.push(Ok(Committed {
            revision: next,
            value: value.clone(),
            prev: current.clone(),
        }));
        planned.push(Planned {
            event: Event::new(next, w.key.clone(), kind, value, current),
        });
    }
    if planned.is_empty() {
        return Ok(results);
    }
    txn.put(keys::META_REV.to_vec(), keys::encode_u64(next));
    match txn.commit().await {
        Ok(()) => {}
        Err(EngineError::Undetermined(source)) => {
            // Read back: the first log entry of the batch tells whether it landed.
            let first = &planned[0].event;
            match landed(shared, first.revision, &first.key).await {
                Ok(true) => tracing::warn!(rev = next, "undetermined commit resolved: committed"),
                Ok(false) => {
                    tracing::warn!(rev = next, "undetermined commit resolved: not committed");
                    return Err(StorageError::Engine(EngineError::Conflict));
                }
                Err(e) => {
                    tracing::error!(error = %e, "undetermined commit could not be resolved");
                    return Err(StorageError::Undetermined(EngineError::Undetermined(
                        source,
                    )));
                }
            }
        }
        Err(e) => return Err(e.into()),
    }
    shared.commits.fetch_add(1, Ordering::Relaxed);
    shared
        .writes
        .fetch_add(planned.len() as u64, Ordering::Relaxed);
    shared.publish(planned.into_iter().map(|p| p.event).collect());
    Ok(results)
}

/// A key's current version as the transaction sees it: its payload as it lies in the
/// engine, decoded only when a write needs the value (guards need the revision only).
#[derive(Clone)]
struct Current {
    revision: Revision,
    payload: bytes::Bytes,
    /// The value, when already at hand.
    value: Option<bytes::Bytes>,
}

impl Current {
    /// With its value: at hand, else the object cache's copy of this very version, else
    /// decoded from the payload (decompressing it, in the commit every write waits behind).
    fn versioned(self, key: &str, cache: Option<&crate::current::Current>) -> Result<Versioned> {
        let cached = || cache?.value_at(key, self.revision);
        let value = match self.value.or_else(cached) {
            Some(v) => v,
            None => crate::payload::decode(&keys::current(key), &self.payload, self.revision)?,
        };
        Ok(Versioned {
            key: key.to_owned(),
            revision: self.revision,
            value,
        })
    }
}

/// The current version of `key`, not decoded.
async fn read_current(txn: &mut dyn Transaction, key: &str) -> Result<Option<Current>> {
    let ck = keys::current(key);
    match txn.get(&ck).await? {
        None => Ok(None),
        Some(raw) => {
            let (revision, payload) = keys::split_current(&ck, &raw)?;
            Ok(Some(Current {
                revision,
                payload,
                value: None,
            }))
        }
    }
}

/// The mod revision of a key's current version, 0 when it is absent.
fn revision_of(v: Option<&Versioned>) -> Revision {
    v.map_or(0, |v| v.revision)
}

fn check(key: &str, pre: Precondition, op: &WriteOp, current: Option<&Versioned>) -> Result<()> {
    let not_found = || StorageError::NotFound {
        key: key.to_owned(),
    };
    match (pre, current) {
        (Precondition::Absent, Some(_)) => Err(StorageError::AlreadyExists {
            key: key.to_owned(),
        }),
        (Precondition::Revision(_), None) => Err(not_found()),
        (Precondition::Revision(expected), Some(c)) if c.revision != expected => {
            Err(StorageError::Conflict {
                key: key.to_owned(),
                expected,
                actual: c.revision,
            })
        }
        (_, None) if matches!(op, WriteOp::Delete(_)) => Err(not_found()),
        _ => Ok(()),
    }
}

/// Whether log entry `rev` exists and names `key`.
async fn landed(shared: &Shared, rev: Revision, key: &str) -> Result<bool> {
    let snap = shared.engine.snapshot().await?;
    let lk = keys::log(rev);
    match snap.get(&lk).await? {
        None => Ok(false),
        Some(v) => Ok(keys::decode_log(&lk, &v)?.key == key),
    }
}

pub(crate) async fn compact(shared: &Shared, target: Revision) -> Result<()> {
    loop {
        let snap = shared.engine.snapshot().await?;
        let current = read_u64(snap.as_ref(), keys::META_REV).await?;
        let done = read_u64(snap.as_ref(), keys::META_COMPACTED).await?;
        let target = target.min(current);
        if done >= target {
            shared.compacted.fetch_max(done, Ordering::AcqRel);
            return Ok(());
        }
        let (start, end) = keys::log_range(done, target);
        let entries = snap.scan(&start, &end, COMPACT_CHUNK).await?;
        drop(snap);
        let upto = match entries.last() {
            Some((k, _)) if entries.len() == COMPACT_CHUNK => keys::parse_log_key(k)?,
            _ => target,
        };
        let mut txn = shared.engine.begin().await?;
        // Only one compaction moves the horizon: re-check it inside the transaction.
        let now_done = keys::decode_u64(
            keys::META_COMPACTED,
            txn.get(keys::META_COMPACTED).await?.as_ref(),
        )?;
        if now_done != done {
            continue;
        }
        for (k, v) in &entries {
            let rev = keys::parse_log_key(k)?;
            let entry = keys::decode_log(k, v)?;
            if entry.prev > 0 {
                txn.delete(keys::version(&entry.key, entry.prev));
            }
            if entry.tag == keys::TAG_DELETE {
                txn.delete(keys::version(&entry.key, rev));
            }
            txn.delete(k.to_vec());
        }
        txn.put(keys::META_COMPACTED.to_vec(), keys::encode_u64(upto));
        match txn.commit().await {
            Ok(()) => {
                shared.compacted.fetch_max(upto, Ordering::AcqRel);
            }
            Err(EngineError::Conflict) => continue,
            Err(e) => return Err(e.into()),
        }
        if upto >= target {
            return Ok(());
        }
    }
}

/// Errors are not `Clone` (they carry sources); a failed batch gives every writer an error
/// of the same kind, with the source kept for the first one's logs.
fn clone_error(e: &StorageError) -> StorageError {
    match e {
        StorageError::Undetermined(_) => {
            StorageError::Undetermined(EngineError::Undetermined("see the committer log".into()))
        }
        StorageError::Closed => StorageError::Closed,
        StorageError::Corrupt { key, detail } => StorageError::Corrupt {
            key: key.clone(),
            detail,
        },
        StorageError::Engine(EngineError::Unavailable(_)) => {
            StorageError::Engine(EngineError::Unavailable("see the committer log".into()))
        }
        _ => StorageError::Engine(EngineError::Other(e.to_string().into())),
    }
}
