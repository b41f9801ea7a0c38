//! # wasmgate-storage
//!
//! The storage contract of Wasmgate, in two layers (see `ARCHITECTURE.md`, "Storage"):
//!
//! * [`Engine`]: an ordered, transactional byte-key/byte-value store. Engines live in
//!   their own crates (`wasmgate-storage-embedded`, later `wasmgate-storage-tikv`) and
//!   depend on this crate only.
//! * [`Store`]: the Kubernetes storage contract on top of any engine, with etcd3
//!   semantics: one cluster-wide strictly increasing [`Revision`]; reads at the latest or at
//!   an exact past revision; compare-and-swap writes; watches that deliver every change
//!   after a revision exactly once and in order; compaction; group commit.
//!
//! ## Layout
//! * [`engine`]: the [`Engine`], [`Snapshot`] and [`Transaction`] traits.
//! * [`keys`]: the key layout shared by every engine (`m/`, `c/`, `k/`, `l/`).
//! * [`store`]: [`Store`], reads and the write API.
//! * `history`: reads at a past revision (the current version in `c/`, older ones in `k/`).
//! * `current`: the current objects in memory, for reads at the latest revision.
//! * `follow`: which revisions are final (resolved) and reading other stores' writes
//!   back from the change log (replicas).
//! * `lease`: which replica runs a periodic job (compaction) for now.
//! * `committer`: the single task that batches concurrent writes into one transaction.
//! * [`stats`]: request latencies by operation and object type, and object counts, for
//!   the API server's metrics (plain atomics; no metrics library here).
//! * [`transform`]: values sealed at rest (encryption of chosen resources), as an engine
//!   wrapper.
//! * [`watch`]: the in-process hub that fans committed events out to watchers.
//! * [`testsuite`] (feature `test-suite`): the engine and store contract suites, written
//!   once and run by every engine crate.
//!
//! This crate must not depend on hyper, wasmtime, tikv-client or any engine.
//!
//! ## Cancel safety
//! Dropping a [`Watcher`] unsubscribes it; nothing is buffered per watcher outside it.
//! Dropping a write future after the request reached the committer does not cancel the
//! write: it is committed (or not) as if the caller were still waiting. Callers that must
//! know the outcome of an [`StorageError::Undetermined`] write re-read the key.
#![forbid(unsafe_code)]

mod committer;
mod current;
pub mod engine;
mod error;
mod follow;
mod history;
pub mod keys;
mod lease;
mod payload;
pub mod stats;
pub mod store;
#[cfg(feature = "test-suite")]
pub mod testsuite;
pub mod transform;
pub mod watch;

pub use engine::{Engine, Snapshot, Transaction};
pub use error::{BoxError, EngineError, FailureCause, StorageError, error_chain};
pub use store::{
    CONFLICT_RETRY_BUDGET, Committed, DEFAULT_MAX_VALUE_BYTES, ListPage, Precondition, ReadAt,
    Store, StoreOptions, StoreStats, Value, Versioned, Write, WriteOp,
};
pub use transform::ValueTransformer;
pub use watch::{Event, EventKind, Watcher};

/// A store revision. Every committed write gets one above every write committed before
/// it was handed out (consecutive within a store; stores sharing an engine interleave, and
/// revisions of writes that did not happen are skipped); `resourceVersion` is its decimal
/// string. Revision 0 means "nothing written yet".
pub type Revision = u64;

/// `Result` with [`StorageError`].
pub type Result<T, E = StorageError> = std::result::Result<T, E>;
