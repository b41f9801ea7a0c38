//! Errors of the engine and store layers.

use crate::Revision;

/// A boxed error from an engine's own library.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// What an [`Engine`](crate::Engine) reports. Engines map their library's errors onto these
/// so the store can decide how to react.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EngineError {
    /// A transaction lost an optimistic race with another writer. Nothing was written;
    /// the whole transaction may be retried.
    #[error("transaction conflict")]
    Conflict,
    /// The commit was sent but its outcome is unknown. Never retry blindly: read back first.
    #[error("commit outcome is unknown")]
    Undetermined(#[source] BoxError),
    /// The engine cannot be reached or refuses work for now. Retryable with backoff.
    #[error("storage engine unavailable")]
    Unavailable(#[source] BoxError),
    /// Any other engine failure (I/O, corruption detected by the engine).
    #[error("storage engine error")]
    Other(#[source] BoxError),
}

impl EngineError {
    /// Wraps any error as [`EngineError::Other`].
    pub fn other(e: impl Into<BoxError>) -> Self {
        EngineError::Other(e.into())
    }
}

/// What the [`Store`](crate::Store) reports. Each variant says how a caller reacts.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StorageError {
    /// The key does not exist (at the revision read).
    #[error("{key} not found")]
    NotFound {
        /// The object key.
        key: String,
    },
    /// A create found the key already present.
    #[error("{key} already exists")]
    AlreadyExists {
        /// The object key.
        key: String,
    },
    /// Optimistic-concurrency failure: the key's current revision is not the expected one.
    /// Safe to retry after re-reading.
    #[error("{key} was modified (expected revision {expected}, found {actual})")]
    Conflict {
        /// The object key.
        key: String,
        /// The revision the writer expected.
        expected: Revision,
        /// The key's current modification revision.
        actual: Revision,
    },
    /// The requested revision is older than the compaction horizon. The client must relist.
    #[error("revision {requested} has been compacted (oldest available is {compacted})")]
    Compacted {
        /// The revision asked for.
        requested: Revision,
        /// The compaction revision.
        compacted: Revision,
    },
    /// The requested revision is newer than anything committed. Retry later.
    #[error("revision {requested} is newer than the current revision {current}")]
    FutureRevision {
        /// The revision asked for.
        requested: Revision,
        /// The current revision.
        current: Revision,
    },
    /// The commit was sent but its outcome could not be determined, even by reading back.
    /// The write may or may not be visible; re-read before acting on it.
    #[error("commit outcome is unknown")]
    Undetermined(#[source] EngineError),
    /// The engine failed; nothing was written by this request.
    #[error("storage engine failure")]
    Engine(#[source] EngineError),
    /// Stored bytes could not be decoded. Not retryable.
    #[error("corrupt stored entry at {key}: {detail}")]
    Corrupt {
        /// The engine key (lossily printed).
        key: String,
        /// What was wrong.
        detail: &'static str,
    },
    /// A put's value is larger than the store takes. Not retryable.
    #[error("{key}: a value of {size} bytes is larger than the limit of {limit}")]
    TooLarge {
        /// The object key.
        key: String,
        /// The value's size (with room for its revision).
        size: usize,
        /// [`StoreOptions::max_value_bytes`](crate::StoreOptions::max_value_bytes).
        limit: usize,
    },
    /// The store is shutting down.
    #[error("store is closed")]
    Closed,
}

impl From<EngineError> for StorageError {
    fn from(e: EngineError) -> Self {
        match e {
            EngineError::Undetermined(_) => StorageError::Undetermined(e),
            other => StorageError::Engine(other),
        }
    }
}
