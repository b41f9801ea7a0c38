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

    /// `n` copies of this error for the `n` writers of one failed batch: the same variant,
    /// each with the one source (shared), so every writer's log line keeps the cause.
    fn copies(self, n: usize) -> Vec<EngineError> {
        let (make, source): (fn(BoxError) -> EngineError, BoxError) = match self {
            EngineError::Conflict => return (0..n).map(|_| EngineError::Conflict).collect(),
            EngineError::Undetermined(s) => (EngineError::Undetermined, s),
            EngineError::Unavailable(s) => (EngineError::Unavailable, s),
            EngineError::Other(s) => (EngineError::Other, s),
        };
        let shared = SharedSource(std::sync::Arc::from(source));
        (0..n).map(|_| make(Box::new(shared.clone()))).collect()
    }
}

/// One error source behind several errors (errors are not `Clone`): it displays as, and
/// has the sources of, the error it holds.
#[derive(Debug, Clone)]
struct SharedSource(std::sync::Arc<dyn std::error::Error + Send + Sync + 'static>);

impl std::fmt::Display for SharedSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for SharedSource {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.source()
    }
}

/// Why a write failed in the store rather than on its keys (the label `cause` of
/// `wasmgate_storage_failed_writes_total`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FailureCause {
    /// [`StorageError::Contended`]: conflicts with other writers for the whole budget.
    Contended,
    /// An engine conflict that was not retried.
    Conflict,
    /// The outcome of the commit is unknown.
    Undetermined,
    /// The engine cannot be reached (TiKV region errors, timeouts).
    Unavailable,
    /// Any other engine failure (I/O).
    Engine,
    /// Stored bytes could not be decoded.
    Corrupt,
    /// The store is closed.
    Closed,
}

impl FailureCause {
    /// Every cause, in the order of [`crate::StoreStats::failed_writes`].
    pub const ALL: [FailureCause; 7] = [
        FailureCause::Contended,
        FailureCause::Conflict,
        FailureCause::Undetermined,
        FailureCause::Unavailable,
        FailureCause::Engine,
        FailureCause::Corrupt,
        FailureCause::Closed,
    ];

    /// The label value.
    pub fn as_str(self) -> &'static str {
        match self {
            FailureCause::Contended => "contended",
            FailureCause::Conflict => "conflict",
            FailureCause::Undetermined => "undetermined",
            FailureCause::Unavailable => "unavailable",
            FailureCause::Engine => "engine",
            FailureCause::Corrupt => "corrupt",
            FailureCause::Closed => "closed",
        }
    }

    pub(crate) fn index(self) -> usize {
        self as usize
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
    /// The write's batch lost to other writers of the engine (other replicas committing at
    /// the same moment) on every try for [`crate::store::CONFLICT_RETRY_BUDGET`]. Nothing
    /// was written. Retry after a while: the API answers `429 TooManyRequests` with
    /// `Retry-After`.
    #[error(
        "the store is contended: the write conflicted with other writers {conflicts} times in {waited:?}; nothing was written"
    )]
    Contended {
        /// Engine conflicts met.
        conflicts: u32,
        /// How long the store retried.
        waited: std::time::Duration,
    },
}

impl StorageError {
    /// Why this is a failure of the store rather than an answer about the keys (`None`:
    /// not found, exists, a precondition that did not hold, a compacted or future
    /// revision, a value too large).
    pub fn failure_cause(&self) -> Option<FailureCause> {
        Some(match self {
            StorageError::Contended { .. } => FailureCause::Contended,
            StorageError::Undetermined(_) => FailureCause::Undetermined,
            StorageError::Engine(EngineError::Conflict) => FailureCause::Conflict,
            StorageError::Engine(EngineError::Undetermined(_)) => FailureCause::Undetermined,
            StorageError::Engine(EngineError::Unavailable(_)) => FailureCause::Unavailable,
            StorageError::Engine(EngineError::Other(_)) => FailureCause::Engine,
            StorageError::Corrupt { .. } => FailureCause::Corrupt,
            StorageError::Closed => FailureCause::Closed,
            StorageError::NotFound { .. }
            | StorageError::AlreadyExists { .. }
            | StorageError::Conflict { .. }
            | StorageError::Compacted { .. }
            | StorageError::FutureRevision { .. }
            | StorageError::TooLarge { .. } => return None,
        })
    }

    /// `n` copies of this error for the `n` writers of one failed batch: the same variant
    /// and fields, the engine's error shared as their source (issue 28: the typed cause
    /// reaches every writer's log line, not its message text alone).
    pub(crate) fn copies(self, n: usize) -> Vec<StorageError> {
        use StorageError as E;
        match self {
            E::Undetermined(e) => e.copies(n).into_iter().map(E::Undetermined).collect(),
            E::Engine(e) => e.copies(n).into_iter().map(E::Engine).collect(),
            other => {
                let one = |e: &StorageError| match e {
                    E::NotFound { key } => E::NotFound { key: key.clone() },
                    E::AlreadyExists { key } => E::AlreadyExists { key: key.clone() },
                    E::Conflict {
                        key,
                        expected,
                        actual,
                    } => E::Conflict {
                        key: key.clone(),
                        expected: *expected,
                        actual: *actual,
                    },
                    E::Compacted {
                        requested,
                        compacted,
                    } => E::Compacted {
                        requested: *requested,
                        compacted: *compacted,
                    },
                    E::FutureRevision { requested, current } => E::FutureRevision {
                        requested: *requested,
                        current: *current,
                    },
                    E::Corrupt { key, detail } => E::Corrupt {
                        key: key.clone(),
                        detail,
                    },
                    E::TooLarge { key, size, limit } => E::TooLarge {
                        key: key.clone(),
                        size: *size,
                        limit: *limit,
                    },
                    E::Closed => E::Closed,
                    E::Contended { conflicts, waited } => E::Contended {
                        conflicts: *conflicts,
                        waited: *waited,
                    },
                    // Not reached: these two carry a source and are copied above.
                    E::Undetermined(_) | E::Engine(_) => E::Closed,
                };
                (0..n).map(|_| one(&other)).collect()
            }
        }
    }
}

/// `e` and its sources, `: `-separated, for log lines.
pub fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        s.push_str(": ");
        s.push_str(&c.to_string());
        cur = c.source();
    }
    s
}

impl From<EngineError> for StorageError {
    fn from(e: EngineError) -> Self {
        match e {
            EngineError::Undetermined(_) => StorageError::Undetermined(e),
            other => StorageError::Engine(other),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every writer of a failed batch gets the engine's error typed, with its source: not
    /// its message text as `EngineError::Other` (issue 28, item 2: logs said only
    /// `storage engine failure: storage engine error: storage engine failure`).
    #[test]
    fn batch_copies_keep_the_typed_cause() {
        let io = std::io::Error::other("region error: not leader");
        let copies = StorageError::Engine(EngineError::Unavailable(Box::new(io))).copies(3);
        assert_eq!(copies.len(), 3);
        for e in &copies {
            assert!(
                matches!(e, StorageError::Engine(EngineError::Unavailable(_))),
                "{e:?}"
            );
            assert_eq!(e.failure_cause(), Some(FailureCause::Unavailable));
            assert_eq!(
                error_chain(e),
                "storage engine failure: storage engine unavailable: region error: not leader"
            );
        }
        let copies = StorageError::Engine(EngineError::Conflict).copies(2);
        assert!(
            copies
                .iter()
                .all(|e| matches!(e, StorageError::Engine(EngineError::Conflict)))
        );
        let contended = StorageError::Contended {
            conflicts: 7,
            waited: std::time::Duration::from_secs(5),
        };
        let copies = contended.copies(2);
        assert!(
            copies
                .iter()
                .all(|e| matches!(e, StorageError::Contended { conflicts: 7, .. }))
        );
        assert_eq!(copies[0].failure_cause(), Some(FailureCause::Contended));
        let undetermined = StorageError::Undetermined(EngineError::Undetermined("timeout".into()));
        for e in undetermined.copies(2) {
            assert_eq!(e.failure_cause(), Some(FailureCause::Undetermined));
            assert!(
                error_chain(&e).ends_with("commit outcome is unknown: timeout"),
                "{e}"
            );
        }
    }

    #[test]
    fn failure_causes_are_indexed_in_order() {
        for (i, c) in FailureCause::ALL.iter().enumerate() {
            assert_eq!(c.index(), i, "{}", c.as_str());
        }
    }
}
