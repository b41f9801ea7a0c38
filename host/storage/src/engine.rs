//! The engine contract: an ordered, transactional byte-key/byte-value store.
//!
//! The trait is shaped so that both an embedded engine and TiKV implement it honestly:
//! * nothing holds an engine snapshot across HTTP requests: past revisions are read from
//!   the versioned key layout ([`crate::keys`]), not from the engine's own MVCC;
//! * scans are bounded by a limit and resumable from a key;
//! * a commit may end in [`EngineError::Undetermined`], which the store resolves by
//!   reading back.

use bytes::Bytes;

use crate::EngineError;

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
    /// commits all write the revision counter, so they serialise).
    async fn begin(&self) -> Result<Box<dyn Transaction>, EngineError>;

    /// Whether a commit does its I/O on the calling thread when that thread may block
    /// ([`may_block`]), rather than handing it to another thread. The store then runs its
    /// committer on a thread where it may, so that every group commit saves two thread
    /// hand-overs. Engines whose I/O is asynchronous keep the default, `false`.
    fn blocking_commits(&self) -> bool {
        false
    }
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
