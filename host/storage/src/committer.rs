//! The committer: one task that turns concurrent write requests into engine transactions.
//!
//! It takes every request waiting in its queue (up to `max_batch`), checks each one's
//! precondition against the current state (including earlier writes of the same batch),
//! gives each accepted write the next revision, and commits them all in one transaction:
//! one fsync for many writes (group commit). After the commit it publishes the events to
//! the watch hub in revision order and answers the writers.
//!
//! Revisions are allocated through `m/rev` inside the transaction, so several processes
//! sharing one engine (replicas over TiKV) conflict on it when they commit at the same
//! moment: the loser retries its batch with jittered exponential backoff, taking in the
//! writes queued meanwhile, for up to [`CONFLICT_RETRY_BUDGET`]; only then do its writes
//! fail, with [`StorageError::Contended`] (issue 28). One counter is what keeps every
//! revision unique and every watch in revision order across replicas: ranges of revisions
//! handed to each replica would let replica B commit revision 1001 before replica A
//! commits 5, and a watcher (or a list at revision 1001) would miss or reorder 5. Group
//! commit keeps the cost one counter write per batch, not per write.

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

use crate::store::CONFLICT_RETRY_BUDGET;

/// The wait after a batch's second conflict (the first retry does not wait); it doubles
/// with each further conflict up to [`MAX_BACKOFF`], and each wait is drawn at random
/// below it (full jitter), so that replicas that conflicted do not retry in step.
const FIRST_BACKOFF: Duration = Duration::from_millis(1);
/// The longest wait between two tries of a batch. Short: a conflict means another writer
/// committed (the engine made progress), so waiting only cuts this replica's chances
/// while the other writes on. Measured with `--replicas 2` and 8 creating clients on each
/// (debug build, 2 cores): capped at 50 ms one replica got 585 creates/s and the other
/// 1077, with a slowest create of 620 ms; capped at 10 ms, 725 and 780, slowest 275 ms.
const MAX_BACKOFF: Duration = Duration::from_millis(10);
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
        commit_batch(&shared, &mut batch, &mut rx, max_batch).await;
        batch.clear();
    }
    shared.hub.close();
}

/// The outcome of planning one write inside a transaction.
struct Planned {
    event: Event,
}

async fn commit_batch(
    shared: &Shared,
    batch: &mut Vec<Pending>,
    rx: &mut mpsc::Receiver<Pending>,
    max_batch: usize,
) {
    let started = tokio::time::Instant::now();
    let mut backoff = FIRST_BACKOFF;
    let mut conflicts = 0u32;
    loop {
        match try_commit(shared, batch).await {
            Ok(results) => {
                if conflicts > 0 {
                    tracing::debug!(
                        conflicts,
                        waited_ms = started.elapsed().as_millis() as u64,
                        writes = batch.len(),
                        "write batch committed after conflicts with other writers"
                    );
                }
                for (p, r) in batch.drain(..).zip(results) {
                    // The writer may have gone away; the write stands regardless.
                    let _ = p.reply.send(r);
                }
                return;
            }
            Err(StorageError::Engine(EngineError::Conflict)) => {
                conflicts += 1;
                shared.conflicts.fetch_add(1, Ordering::Relaxed);
                let waited = started.elapsed();
                let Some(left) = CONFLICT_RETRY_BUDGET.checked_sub(waited) else {
                    let e = StorageError::Contended { conflicts, waited };
                    fail(batch, e);
                    return;
                };
                // The first retry does not wait: the conflict says another writer has
                // just committed, so a transaction begun now is no longer behind it. Its
                // writes are read back first, outside the transaction, which then takes
                // as long as the other writer's next one: a fair race, where reading them
                // inside would make this store lose every race while the other writes
                // back to back. Later retries wait (two writers racing again and again).
                if conflicts > 1 {
                    tokio::time::sleep(jitter(backoff).min(left)).await;
                    backoff = (backoff * 2).min(MAX_BACKOFF);
                }
                if let Err(e) = crate::follow::catch_up_latest(shared).await {
                    tracing::debug!(error = %e, "catching up before a retry failed");
                }
                // Writes queued meanwhile join the next try: one commit won carries them
                // all, rather than each waiting for a batch of its own.
                while batch.len() < max_batch {
                    match rx.try_recv() {
                        Ok(p) => batch.push(p),
                        Err(_) => break,
                    }
                }
            }
            Err(e) => {
                fail(batch, e);
                return;
            }
        }
    }
}

/// Answers every writer of `batch` with `e` (a copy each, the cause shared), logged once
/// with its kind and its whole chain of sources.
fn fail(batch: &mut Vec<Pending>, e: StorageError) {
    tracing::warn!(
        cause = e.failure_cause().map_or("other", crate::FailureCause::as_str),
        error = %crate::error::error_chain(&e),
        writes = batch.len(),
        "write batch failed"
    );
    let copies = e.copies(batch.len());
    for (p, e) in batch.drain(..).zip(copies) {
        let _ = p.reply.send(Err(e));
    }
}

/// A wait drawn at random from `[0, max]` (full jitter), from the standard library's
/// per-hasher random keys: no random number crate for this.
fn jitter(max: Duration) -> Duration {
    use std::hash::{BuildHasher as _, Hasher as _};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    let nanos = u64::try_from(max.as_nanos()).unwrap_or(u64::MAX);
    Duration::from_nanos(h.finish() % nanos.saturating_add(1))
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
