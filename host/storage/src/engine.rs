//! The engine contract: an ordered, transactional byte-key/byte-value store.
//!
//! The trait is shaped so that both an embedded engine and TiKV implement it honestly:
//! * nothing holds an engine snapshot across HTTP requests: past revisions are read from
//!   the versioned key layout ([`crate::keys`]), not from the engine's own MVCC;
//! * scans are bounded by a limit and resumable from a key;
//! * a commit may end in [`EngineError::Undetermined`], which the store resolves by
//!   reading back.

use std::time::Duration;

use bytes::Bytes;

use crate::{EngineError, Revision, keys};

/// One key/value pair returned by a scan.
pub type KeyValue = (Bytes, Bytes);

/// An ordered transactional key-value engine.
#[async_trait::async_trait]
pub trait Engine: Send + Sync + 'static {
    /// A short name for logs and metrics ("embedded", "tikv").
    fn name(&self) -> &'static str;

    /// A consistent read-only view of the latest committed state, meant to live for the
    /// duration of one request.
    async fn snapshot(&self) -> Result<Box<dyn Snapshot>, EngineError>;

    /// Starts a read-write transaction, optimistic as TiKV's: reads inside it see the
    /// state committed when it began plus its own writes (snapshot isolation); the commit
    /// is atomic, and fails with [`EngineError::Conflict`], writing nothing, when another
    /// transaction committed a write to one of the keys it writes after it began. A
    /// transaction that must not act on a stale read writes the key it read (the store's
    /// commits write the log entries of the revisions they were handed, which is how a
    /// store that marks revisions skipped and a late commit of them exclude each other).
    async fn begin(&self) -> Result<Box<dyn Transaction>, EngineError>;

    /// Hands out `n` (at least 1) consecutive revisions no other caller of this engine has
    /// been or will be given, each above every revision a committed transaction wrote, and
    /// returns the first. The store takes a batch's revisions here, after its transaction
    /// began, so that stores sharing the engine (replicas) commit side by side instead of
    /// conflicting on one counter every commit writes (issue 28); `crate::follow` keeps
    /// what they publish in revision order. The default counts in the engine's
    /// `m/next` key, one small transaction per call ([`allocate_in_transactions`]); an
    /// engine that only one process opens may count in memory, recovering the count from
    /// the change log when it opens.
    async fn allocate(&self, n: u64) -> Result<Revision, EngineError> {
        allocate_in_transactions(self, n).await
    }

    /// Hands out `n` revisions as part of `txn`, when this engine counts them in a key:
    /// they are handed out if and only if `txn` commits, and `txn` then conflicts with
    /// every allocation made meanwhile. `None`: this engine counts otherwise (use
    /// [`Engine::allocate`]). One network round trip less per batch than `allocate` over
    /// TiKV, at the price of the conflicts on `m/next` that `allocate` keeps out of the
    /// batch's transaction: the store uses it while no other store writes. An engine
    /// wrapper forwards both methods or neither: the two must count alike.
    async fn allocate_in(
        &self,
        txn: &mut dyn Transaction,
        n: u64,
    ) -> Result<Option<Revision>, EngineError> {
        next_in(txn, n.max(1)).await.map(Some)
    }

    /// Whether a commit does its I/O on the calling thread when that thread may block
    /// ([`may_block`]), rather than handing it to another thread. The store then runs its
    /// committer on a thread where it may, so that every group commit saves two thread
    /// hand-overs. Engines whose I/O is asynchronous keep the default, `false`.
    fn blocking_commits(&self) -> bool {
        false
    }
}

/// How often [`allocate_in_transactions`] tries again at once when another allocation
/// committed first, before it reports the conflict to the caller (whose retries wait).
const ALLOCATE_TRIES: u32 = 16;

/// [`Engine::allocate`] as a transaction on `m/next` (read, add `n`, commit), retried on a
/// conflict: correct on any engine, one short transaction per call. Its first use on a
/// store written before `m/next` existed continues after `m/rev`, which then held the last
/// revision handed out.
pub async fn allocate_in_transactions<E: Engine + ?Sized>(
    engine: &E,
    n: u64,
) -> Result<Revision, EngineError> {
    let n = n.max(1);
    let mut tries = 0;
    loop {
        let mut txn = engine.begin().await?;
        let first = next_in(txn.as_mut(), n).await?;
        match txn.commit().await {
            Ok(()) => return Ok(first),
            // Lost to another allocation (or not known to have won: a range handed out
            // twice is impossible, one handed out and never used is only a gap that the
            // stores waiting on it mark skipped, `crate::follow`).
            Err(EngineError::Conflict | EngineError::Undetermined(_)) if tries < ALLOCATE_TRIES => {
                tries += 1;
                // The first retry at once: the winner has just committed.
                if tries > 1 {
                    tokio::time::sleep(jitter(Duration::from_micros(500))).await;
                }
            }
            Err(e) => return Err(e),
        }
    }
}

/// Takes `n` revisions from `m/next` in `txn` (on a store written before `m/next`
/// existed, after `m/rev`, which then held the last revision handed out).
async fn next_in(txn: &mut dyn Transaction, n: u64) -> Result<Revision, EngineError> {
    let read = |key: &[u8], v: Option<Bytes>| {
        keys::decode_u64(key, v.as_ref()).map_err(EngineError::other)
    };
    let next = read(keys::META_NEXT, txn.get(keys::META_NEXT).await?)?;
    let first = if next == 0 {
        read(keys::META_REV, txn.get(keys::META_REV).await?)? + 1
    } else {
        next
    };
    txn.put(keys::META_NEXT.to_vec(), keys::encode_u64(first + n));
    Ok(first)
}

/// A wait drawn at random from `[0, max]` (full jitter), from the standard library's
/// per-hasher random keys: no random number crate for this.
pub(crate) fn jitter(max: Duration) -> Duration {
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

thread_local! {
    static MAY_BLOCK: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether the current thread may block in an engine call: true on the thread the
/// store's committer runs on when its engine has [`Engine::blocking_commits`], false on
/// an async runtime's workers (and everywhere else).
pub fn may_block() -> bool {
    MAY_BLOCK.with(std::cell::Cell::get)
}

/// Marks the current thread as one where engine calls may block (the committer's).
pub(crate) fn allow_blocking() {
    MAY_BLOCK.with(|b| b.set(true));
}

/// A consistent read-only view.
#[async_trait::async_trait]
pub trait Snapshot: Send + Sync {
    /// The value at `key`, if any.
    async fn get(&self, key: &[u8]) -> Result<Option<Bytes>, EngineError>;

    /// Up to `limit` pairs with `start <= key < end`, in ascending key order.
    /// `limit` is at least 1.
    async fn scan(
        &self,
        start: &[u8],
        end: &[u8],
        limit: usize,
    ) -> Result<Vec<KeyValue>, EngineError>;

    /// How many keys lie in `start <= key < end`, counting at most `limit`. Engines that
    /// can count without reading values should override the default, which scans.
    async fn count(&self, start: &[u8], end: &[u8], limit: u64) -> Result<u64, EngineError> {
        let mut from = start.to_vec();
        let mut n = 0u64;
        while n < limit {
            let chunk = self.scan(&from, end, 1024).await?;
            let Some((last, _)) = chunk.last() else { break };
            from = last.to_vec();
            from.push(0);
            n += chunk.len() as u64;
            if chunk.len() < 1024 {
                break;
            }
        }
        Ok(n.min(limit))
    }
}

/// A read-write transaction. Dropping it without committing rolls it back.
#[async_trait::async_trait]
pub trait Transaction: Send {
    /// The value at `key`, including this transaction's own uncommitted writes.
    async fn get(&mut self, key: &[u8]) -> Result<Option<Bytes>, EngineError>;

    /// Sets `key` to `value`.
    fn put(&mut self, key: Vec<u8>, value: Bytes);

    /// Removes `key` (no error if absent).
    fn delete(&mut self, key: Vec<u8>);

    /// Commits atomically and durably (the data is on stable storage when this returns
    /// `Ok`). [`EngineError::Conflict`]: nothing written, retry.
    /// [`EngineError::Undetermined`]: read back to learn the outcome.
    async fn commit(self: Box<Self>) -> Result<(), EngineError>;
}
