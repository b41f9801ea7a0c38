//! Following the change log: which revisions are final, and the writes a store did not
//! make.
//!
//! Stores sharing one engine (replicas of the gateway over TiKV, or several stores over
//! one embedded engine) take revisions from the engine ([`crate::Engine::allocate`]) and
//! commit side by side, so a revision may be committed while a lower one, handed to
//! another store, is still in flight. The log is dense: every revision handed out gets an
//! entry, a write or a skip (a write refused, a batch that lost, or one whose writer
//! stopped: [`skip_run`]). So the revisions that are final are those up to the first
//! missing entry after the last one published: the **resolved** revision. A store
//! publishes (to its object cache and watchers) only up to it, in order; reads at the
//! latest revision read at it; a committer answers its writers only once its own
//! revisions are resolved ([`wait_resolved`]), so a write acknowledged anywhere is seen
//! by every later read everywhere.
//!
//! A store catches up before its reads at the latest revision and, with
//! [`crate::StoreOptions::follow_every`], on a timer, so that its watchers see another
//! replica's writes without waiting for a local read or write.

use std::sync::Weak;
use std::time::{Duration, Instant};

use crate::store::{Shared, read_u64};
use crate::watch::event_from_log;
use crate::{Engine, EngineError, Result, Revision, Snapshot, keys};

/// Log entries read per engine scan.
const CHUNK: usize = 1024;

/// How long a revision may stay missing below a committed one before a store waiting on
/// it marks it skipped. A batch commits in milliseconds, over TiKV under load in up to a
/// second; a missing revision older than this belongs to a writer that stopped (a replica
/// killed mid-commit), and every replica's writes wait on it until then.
pub(crate) const SKIP_AFTER: Duration = Duration::from_secs(2);

/// The first poll of a committer waiting for lower revisions; it doubles to
/// [`MAX_POLL`].
const FIRST_POLL: Duration = Duration::from_micros(200);
const MAX_POLL: Duration = Duration::from_millis(5);

/// The contiguous run of log entries after a revision, as far as one chunk goes.
struct Run {
    /// Each entry of the run (skips included), in order.
    entries: Vec<(Revision, keys::LogEntry)>,
    /// The last revision the run covers.
    end: Revision,
    /// The first entry after a missing revision, when the run ends at one.
    then: Option<Revision>,
    /// Whether the chunk was full (more may follow).
    more: bool,
}

/// Reads the log of `snap` after revision `after`: the entries up to the first missing
/// revision, at most one chunk of them.
async fn run_after(snap: &dyn Snapshot, after: Revision) -> Result<Run> {
    let (start, end) = keys::log_range(after, Revision::MAX - 1);
    let chunk = snap.scan(&start, &end, CHUNK).await?;
    let more = chunk.len() == CHUNK;
    let mut run = Run {
        entries: Vec::new(),
        end: after,
        then: None,
        more,
    };
    for (k, v) in chunk {
        let rev = keys::parse_log_key(&k)?;
        if rev <= run.end {
            // Covered by a skip already read.
            continue;
        }
        if rev > run.end + 1 {
            run.then = Some(rev);
            run.more = false;
            break;
        }
        let entry = keys::decode_log(&k, &v)?;
        run.end = entry.skipped_until().map_or(rev, |until| until.max(rev));
        run.entries.push((rev, entry));
    }
    Ok(run)
}

/// What [`resolve`] found.
pub(crate) struct Resolved {
    /// The snapshot it read.
    pub(crate) snap: Box<dyn Snapshot>,
    /// The resolved revision in it (also published).
    pub(crate) revision: Revision,
    /// The first committed revision above a missing one, if the snapshot holds one: then
    /// its `c/` keys are not the state at `revision` (reads there go through history).
    pub(crate) ahead: Option<Revision>,
}

/// Takes a snapshot, finds its resolved revision and publishes the entries up to it that
/// the hub has not seen.
pub(crate) async fn resolve(shared: &Shared) -> Result<Resolved> {
    // Read before the snapshot: every revision up to it is in the snapshot.
    let mut at = shared.hub.last();
    let snap = shared.engine.snapshot().await?;
    loop {
        let run = run_after(snap.as_ref(), at).await?;
        let mut events = Vec::with_capacity(run.entries.len());
        for (rev, entry) in run.entries {
            // What the committer published meanwhile is not rebuilt from the engine.
            if entry.skipped_until().is_none() && rev > shared.hub.last() {
                events.push(event_from_log(snap.as_ref(), rev, entry).await?);
            }
        }
        if run.end > at {
            shared.publish(events, run.end);
            at = run.end;
        }
        if !run.more {
            return Ok(Resolved {
                snap,
                revision: at,
                ahead: run.then,
            });
        }
    }
}

/// A wait for missing revisions: how long the lowest one has been missing, and the
/// polls' growing interval.
struct Waiting {
    missing: Option<(Revision, Instant)>,
    poll: Duration,
}

impl Waiting {
    fn new() -> Self {
        Waiting {
            missing: None,
            poll: FIRST_POLL,
        }
    }

    /// Whether `rev`, the lowest missing revision, has been so for [`SKIP_AFTER`].
    fn overdue(&mut self, rev: Revision) -> bool {
        match self.missing {
            Some((r, since)) if r == rev => since.elapsed() >= SKIP_AFTER,
            _ => {
                self.missing = Some((rev, Instant::now()));
                false
            }
        }
    }

    async fn poll(&mut self) {
        tokio::time::sleep(self.poll).await;
        self.poll = (self.poll * 2).min(MAX_POLL);
    }
}

/// Waits until every revision up to `upto` is resolved and published, marking revisions
/// skipped that stayed missing for [`SKIP_AFTER`].
pub(crate) async fn wait_resolved(shared: &Shared, upto: Revision) -> Result<()> {
    let mut waiting = Waiting::new();
    loop {
        let r = resolve(shared).await?;
        if shared.hub.last() >= upto {
            return Ok(());
        }
        if let Some(then) = r.ahead {
            drop(r);
            let missing = shared.hub.last() + 1;
            if waiting.overdue(missing) {
                skip_run(shared.engine.as_ref(), missing, then - 1).await?;
                continue;
            }
        }
        waiting.poll().await;
    }
}

/// Marks revisions `from..=to` skipped, each with an entry of its own, unless an entry
/// among them appeared meanwhile. Every batch writes the entry of its first revision, so
/// a batch handed any of them either committed before this looked (and this writes
/// nothing) or conflicts with it (and one of the two fails).
pub(crate) async fn skip_run(engine: &dyn Engine, from: Revision, to: Revision) -> Result<()> {
    let mut txn = engine.begin().await?;
    // Taken after the transaction began: what it does not show commits after the begin,
    // and so conflicts.
    let snap = engine.snapshot().await?;
    let (start, end) = keys::log_range(from - 1, to);
    if !snap.scan(&start, &end, 1).await?.is_empty() {
        return Ok(());
    }
    drop(snap);
    for rev in from..=to {
        txn.put(keys::log(rev), keys::encode_skip(rev));
    }
    match txn.commit().await {
        Ok(()) => {
            tracing::warn!(
                from,
                to,
                after_s = SKIP_AFTER.as_secs(),
                "revisions handed out and not written in time marked skipped (a writer \
                 stopped mid-commit)"
            );
            Ok(())
        }
        Err(EngineError::Conflict) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// Marks the revisions `first..=last` a batch was handed skipped, after the batch failed:
/// one entry at `first` covering them all, unless `first` has an entry already (the batch
/// landed after all, or another store marked them).
pub(crate) async fn abandon(engine: &dyn Engine, first: Revision, last: Revision) -> Result<()> {
    let mut txn = engine.begin().await?;
    let snap = engine.snapshot().await?;
    if snap.get(&keys::log(first)).await?.is_some() {
        return Ok(());
    }
    drop(snap);
    txn.put(keys::log(first), keys::encode_skip(last));
    match txn.commit().await {
        Ok(()) | Err(EngineError::Conflict) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// The resolved revision of a store's engine when it opens, from the hint `m/rev` on,
/// with a snapshot that holds exactly that state (waiting for, and after
/// [`SKIP_AFTER`] skipping, revisions other stores have in flight).
pub(crate) async fn resolve_at_open(engine: &dyn Engine) -> Result<(Box<dyn Snapshot>, Revision)> {
    let mut waiting = Waiting::new();
    loop {
        let snap = engine.snapshot().await?;
        let hint = read_u64(snap.as_ref(), keys::META_REV).await?;
        let compacted = read_u64(snap.as_ref(), keys::META_COMPACTED).await?;
        let mut at = hint.max(compacted);
        let then = loop {
            let run = run_after(snap.as_ref(), at).await?;
            at = run.end;
            if !run.more {
                break run.then;
            }
        };
        let Some(then) = then else {
            return Ok((snap, at));
        };
        drop(snap);
        if waiting.overdue(at + 1) {
            skip_run(engine, at + 1, then - 1).await?;
            continue;
        }
        waiting.poll().await;
    }
}

/// Catches up to the engine's resolved revision and reads its compaction horizon.
pub(crate) async fn catch_up_latest(shared: &Shared) -> Result<()> {
    let r = resolve(shared).await?;
    // Another replica may have compacted: refuse what it discarded.
    let compacted = read_u64(r.snap.as_ref(), keys::META_COMPACTED).await?;
    shared
        .compacted
        .fetch_max(compacted, std::sync::atomic::Ordering::AcqRel);
    Ok(())
}

/// Every `every`, catches up to the engine's resolved revision, until the store is
/// closed (or gone).
pub(crate) async fn run(shared: Weak<Shared>, every: Duration) {
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut failing = false;
    loop {
        tick.tick().await;
        let Some(shared) = shared.upgrade() else {
            return;
        };
        if shared.hub.is_closed() {
            return;
        }
        let result = catch_up_latest(&shared).await;
        // Said once per outage, not on every tick.
        match result {
            Ok(()) if failing => {
                tracing::info!("following the change log again");
                failing = false;
            }
            Err(e) if !failing => {
                tracing::warn!(error = %e, "cannot follow the change log; retrying");
                failing = true;
            }
            _ => {}
        }
    }
}
