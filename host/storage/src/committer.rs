//! The committer: one task that turns concurrent write requests into engine transactions.
//!
//! It takes every request waiting in its queue (up to `max_batch`), checks each one's
//! precondition against the current state (including earlier writes of the same batch),
//! gives each accepted write the next revision, and commits them all in one transaction:
//! one fsync for many writes (group commit). After the commit it publishes the events to
//! the watch hub in revision order and answers the writers.
//!
//! A batch's revisions come from the engine's counter: inside the batch's transaction
//! once its writes are decided, exactly as many as it writes, while the store writes
//! alone ([`crate::Engine::allocate_in`]); for a while after a conflict, beside it
//! ([`crate::Engine::allocate`]), so that its transaction writes no key every commit
//! writes and stores sharing one engine (replicas over TiKV) commit side by side,
//! conflicting only when they write the same object (issue 28). The revisions stay one order across replicas because a store publishes
//! and answers only up to the resolved revision (`crate::follow`): replica B's commit of
//! revision 1001 waits, unseen, until replica A's 1000 has committed or been marked
//! skipped. A batch that conflicts marks its revisions skipped and retries with jittered
//! exponential backoff, taking in the writes queued meanwhile, for up to
//! [`CONFLICT_RETRY_BUDGET`]; only then do its writes fail, with
//! [`StorageError::Contended`].

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};

use crate::engine::jitter;
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

/// A write of the batch that passed its checks, before its revision is known.
struct Planned {
    /// Its place in the batch.
    index: usize,
    kind: EventKind,
    /// The version it replaces or deletes.
    prev: Prev,
}

/// Where a planned write's previous version is.
enum Prev {
    /// The key is absent.
    None,
    /// Stored, as the transaction read it.
    Stored(Current),
    /// Written by the planned write at this place among the batch's planned writes.
    Batch(usize),
}

/// A revision a write of the batch will have, `i` places after the batch's first, while
/// the first is not known: far above any real revision, so no guard or precondition a
/// client sent can match it. `write` turns it into the real one.
const PENDING: Revision = 1 << 62;

/// How many revisions a store hands out between two updates of the hint `m/rev`.
const HINT_EVERY: Revision = 1024;

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

/// Runs the batch in one transaction. `Err` means nothing was committed (or the outcome is
/// unknown), for the whole batch; `Ok` holds each write's own result.
async fn try_commit(shared: &Shared, batch: &[Pending]) -> Result<Vec<Result<Committed>>> {
    let mut txn = shared.engine.begin().await?;
    // While no other store writes, the revisions are taken in this transaction once its
    // writes are decided: exactly as many as it writes, no extra round trip. After a
    // conflict, for a while, they are taken beside it, as many as the batch holds, while
    // it reads (over TiKV the two take as long): this store's commits and the others'
    // then do not meet on the counter, and the allocation costs no time of its own.
    let len = batch.len() as u64;
    let (planning, ahead) = if shared.contended() {
        let (p, a) = tokio::join!(plan(txn.as_mut(), batch), shared.engine.allocate(len));
        (p, Some(a))
    } else {
        (plan(txn.as_mut(), batch).await, None)
    };
    let ahead = match ahead {
        None => None,
        Some(Ok(first)) => Some(first),
        Some(Err(e)) => return Err(e.into()),
    };
    let planned = match planning {
        Ok((results, planned)) if !planned.is_empty() => (results, planned),
        other => {
            if let Some(first) = ahead {
                abandon(shared, first, first + len - 1).await;
            }
            return other.map(|(results, _)| results);
        }
    };
    let (mut results, planned) = planned;
    let n = planned.len() as u64;
    let (first, last, inline) = match ahead {
        Some(first) => (first, first + len - 1, false),
        None => match shared.engine.allocate_in(txn.as_mut(), n).await? {
            Some(first) => (first, first + n - 1, true),
            None => {
                let first = shared.engine.allocate(n).await?;
                (first, first + n - 1, false)
            }
        },
    };
    let events = match write(shared, txn, batch, &planned, &mut results, first, last).await {
        Ok(events) => events,
        Err(e) => {
            if matches!(e, StorageError::Engine(EngineError::Conflict)) {
                shared.contend();
            }
            // Taken inline, the revisions were never handed out: another batch may get
            // them, and must not find them skipped.
            if !inline {
                abandon(shared, first, last).await;
            }
            return Err(e);
        }
    };
    shared.commits.fetch_add(1, Ordering::Relaxed);
    shared.writes.fetch_add(n, Ordering::Relaxed);
    publish_in_order(shared, first, last, events).await;
    Ok(results)
}

/// Marks revisions a batch was handed and did not write skipped: nobody waits for them.
async fn abandon(shared: &Shared, first: Revision, last: Revision) {
    if let Err(e) = crate::follow::abandon(shared.engine.as_ref(), first, last).await {
        tracing::debug!(error = %e, first, last, "marking a batch's unused revisions skipped failed");
    }
}

/// Checks each write of the batch against the state the transaction reads (and the
/// batch's earlier writes): the results of those refused, and the writes to make.
async fn plan(
    txn: &mut dyn Transaction,
    batch: &[Pending],
) -> Result<(Vec<Result<Committed>>, Vec<Planned>)> {
    // The current state of the keys this transaction has read or written (`None`:
    // absent); a version the batch writes has a `PENDING` revision.
    let mut overlay: HashMap<&str, Option<Current>> = HashMap::new();
    let mut results: Vec<Result<Committed>> = Vec::with_capacity(batch.len());
    let mut planned: Vec<Planned> = Vec::with_capacity(batch.len());
    'writes: for (index, p) in batch.iter().enumerate() {
        let w = &p.write;
        for (gkey, grev) in &w.guards {
            // A guard read is cached in the overlay: the transaction's view of a key does
            // not change until this batch writes it, and then the overlay is updated.
            let actual = match overlay.get(gkey.as_str()) {
                Some(v) => v.as_ref().map_or(0, |c| c.revision),
                None => {
                    let v = read_current(txn, gkey).await?;
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
            None => read_current(txn, &w.key).await?,
        };
        let revision = found.as_ref().map_or(0, |c| c.revision);
        if let Err(e) = check(&w.key, w.precondition, &w.op, revision, found.is_some()) {
            results.push(Err(e));
            continue;
        }
        let kind = match &w.op {
            WriteOp::Put(_) => EventKind::Put,
            WriteOp::Delete(_) => EventKind::Delete,
        };
        let prev = match found {
            None => Prev::None,
            Some(c) if c.revision >= PENDING => Prev::Batch((c.revision - PENDING) as usize),
            Some(c) => Prev::Stored(c),
        };
        let pending = PENDING + planned.len() as u64;
        overlay.insert(
            &w.key,
            (kind == EventKind::Put).then(|| Current {
                revision: pending,
                payload: bytes::Bytes::new(),
                value: None,
            }),
        );
        // A placeholder, made real by `write`.
        results.push(Err(StorageError::Closed));
        planned.push(Planned { index, kind, prev });
    }
    Ok((results, planned))
}

/// Writes the planned writes with revisions `first..`, marks the rest up to `last`
/// skipped, and commits: the events, in order.
async fn write(
    shared: &Shared,
    mut txn: Box<dyn Transaction>,
    batch: &[Pending],
    planned: &[Planned],
    results: &mut [Result<Committed>],
    first: Revision,
    last: Revision,
) -> Result<Vec<Event>> {
    // Each planned write as stored: its value and payload, for a later write of the
    // same key in the batch.
    let mut written: Vec<(bytes::Bytes, bytes::Bytes)> = Vec::with_capacity(planned.len());
    let mut events = Vec::with_capacity(planned.len());
    for (i, pl) in planned.iter().enumerate() {
        let p = &batch[pl.index];
        let w = &p.write;
        let rev = first + i as u64;
        let value = match &w.op {
            WriteOp::Put(v) | WriteOp::Delete(v) => v.render(rev),
        };
        let payload = p.prepared.payload(&value);
        let (current, current_payload) = match &pl.prev {
            Prev::None => (None, None),
            Prev::Stored(c) => (
                Some(c.clone().versioned(&w.key, shared.current.as_ref())?),
                Some(c.payload.clone()),
            ),
            Prev::Batch(j) => {
                let (value, payload) = &written[*j];
                let v = Versioned {
                    key: w.key.clone(),
                    revision: first + *j as u64,
                    value: value.clone(),
                };
                (Some(v), Some(payload.clone()))
            }
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
        match pl.kind {
            EventKind::Put => {
                txn.put(keys::current(&w.key), keys::encode_current(rev, &payload));
                txn.put(
                    keys::log(rev),
                    keys::encode_log(keys::TAG_PUT, prev_rev, &w.key),
                );
            }
            EventKind::Delete => {
                txn.delete(keys::current(&w.key));
                txn.put(
                    keys::version(&w.key, rev),
                    keys::encode_version(keys::TAG_DELETE, &payload),
                );
                txn.put(
                    keys::log(rev),
                    keys::encode_log(keys::TAG_DELETE, prev_rev, &w.key),
                );
            }
        }
        results[pl.index] = Ok(Committed {
            revision: rev,
            value: value.clone(),
            prev: current.clone(),
        });
        events.push(Event::new(
            rev,
            w.key.clone(),
            pl.kind,
            value.clone(),
            current,
        ));
        written.push((value, payload));
    }
    let used = first + planned.len() as u64;
    if used <= last {
        txn.put(keys::log(used), keys::encode_skip(last));
    }
    // A refusal naming a version the batch writes names its real revision.
    for r in results.iter_mut() {
        if let Err(StorageError::Conflict { actual, .. }) = r
            && *actual >= PENDING
        {
            *actual = first + (*actual - PENDING);
        }
    }
    match txn.commit().await {
        Ok(()) => Ok(events),
        Err(EngineError::Undetermined(source)) => {
            // Read back: the first log entry of the batch tells whether it landed.
            let e = &events[0];
            match landed(shared, e.revision, &e.key).await {
                Ok(true) => {
                    tracing::warn!(rev = first, "undetermined commit resolved: committed");
                    Ok(events)
                }
                Ok(false) => {
                    tracing::warn!(rev = first, "undetermined commit resolved: not committed");
                    Err(StorageError::Engine(EngineError::Conflict))
                }
                Err(e) => {
                    tracing::error!(error = %e, "undetermined commit could not be resolved");
                    Err(StorageError::Undetermined(EngineError::Undetermined(
                        source,
                    )))
                }
            }
        }
        Err(e) => Err(e.into()),
    }
}

/// Publishes a committed batch's events once every revision below `first` is resolved
/// (at once when this store committed the one before: a lone store always has), and now
/// and then records the resolved revision in the hint `m/rev`. Its writers are answered
/// after this: a write acknowledged is seen by every read that starts later, on any
/// store sharing the engine.
async fn publish_in_order(shared: &Shared, first: Revision, last: Revision, events: Vec<Event>) {
    let started = tokio::time::Instant::now();
    while shared.hub.last() + 1 < first {
        match crate::follow::wait_resolved(shared, first - 1).await {
            Ok(()) => {}
            Err(e) if started.elapsed() < CONFLICT_RETRY_BUDGET => {
                tracing::debug!(error = %e, "waiting for lower revisions failed; retrying");
                tokio::time::sleep(FIRST_BACKOFF).await;
            }
            Err(e) => {
                // Committed: the writers are answered; readers and watchers find the
                // batch in the log once the engine answers again.
                tracing::warn!(error = %e, first, last, "a committed batch is not published yet: lower revisions cannot be read");
                return;
            }
        }
    }
    shared.publish(events, last);
    let hinted = shared.hinted.load(Ordering::Relaxed);
    if last >= hinted + HINT_EVERY {
        shared.hinted.store(last, Ordering::Relaxed);
        if let Err(e) = write_hint(shared, last).await {
            tracing::debug!(error = %e, "updating the resolved revision's hint failed");
        }
    }
}

/// Records `rev`, resolved, in `m/rev` unless a higher one is there: where a store opening
/// (or compacting) starts reading the log.
async fn write_hint(shared: &Shared, rev: Revision) -> Result<()> {
    let mut txn = shared.engine.begin().await?;
    let hint = keys::decode_u64(keys::META_REV, txn.get(keys::META_REV).await?.as_ref())?;
    if hint >= rev {
        return Ok(());
    }
    txn.put(keys::META_REV.to_vec(), keys::encode_u64(rev));
    match txn.commit().await {
        Ok(()) | Err(EngineError::Conflict) => Ok(()),
        Err(e) => Err(e.into()),
    }
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

/// Whether a write may happen to `key`, whose current version (if `exists`) has mod
/// revision `revision`.
fn check(
    key: &str,
    pre: Precondition,
    op: &WriteOp,
    revision: Revision,
    exists: bool,
) -> Result<()> {
    let not_found = || StorageError::NotFound {
        key: key.to_owned(),
    };
    match (pre, exists) {
        (Precondition::Absent, true) => Err(StorageError::AlreadyExists {
            key: key.to_owned(),
        }),
        (Precondition::Revision(_), false) => Err(not_found()),
        (Precondition::Revision(expected), true) if revision != expected => {
            Err(StorageError::Conflict {
                key: key.to_owned(),
                expected,
                actual: revision,
            })
        }
        (_, false) if matches!(op, WriteOp::Delete(_)) => Err(not_found()),
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
        let resolved = crate::follow::resolve(shared).await?;
        let snap = resolved.snap;
        let done = read_u64(snap.as_ref(), keys::META_COMPACTED).await?;
        // Never past what is final: a lower revision may still commit above it.
        let target = target.min(resolved.revision);
        if done >= target {
            shared.compacted.fetch_max(done, Ordering::AcqRel);
            return Ok(());
        }
        let (start, end) = keys::log_range(done, target);
        let mut entries = snap.scan(&start, &end, COMPACT_CHUNK).await?;
        drop(snap);
        let mut upto = match entries.last() {
            Some((k, _)) if entries.len() == COMPACT_CHUNK => keys::parse_log_key(k)?,
            _ => target,
        };
        // A skip reaching past the horizon stays, and the horizon stops below it: the
        // revisions it covers are read from it.
        if let Some(i) = entries.iter().position(|(k, v)| {
            keys::decode_log(k, v).is_ok_and(|e| e.skipped_until().is_some_and(|u| u > upto))
        }) {
            upto = keys::parse_log_key(&entries[i].0)? - 1;
            entries.truncate(i);
            if upto <= done {
                return Ok(());
            }
        }
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
            if entry.skipped_until().is_none() {
                if entry.prev > 0 {
                    txn.delete(keys::version(&entry.key, entry.prev));
                }
                if entry.tag == keys::TAG_DELETE {
                    txn.delete(keys::version(&entry.key, rev));
                }
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
