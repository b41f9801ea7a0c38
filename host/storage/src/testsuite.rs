//! The engine and store contract suites, written once and run by every engine crate.
//!
//! An engine crate implements [`EngineFactory`] and expands the suites in a test file:
//!
//! ```ignore
//! wasmgate_storage::engine_suite!(MyFactory::new());
//! wasmgate_storage::store_suite!(MyFactory::new());
//! ```
//!
//! Each case becomes one `#[tokio::test]`. A factory that cannot run here (TiKV without
//! PD endpoints) returns `Err(reason)` from [`EngineFactory::available`]; its cases print
//! `skipped: <reason>` and pass without checking anything.
#![allow(
    clippy::unwrap_used,
    reason = "test code: a failed expectation is a panic"
)]
#![allow(missing_docs, reason = "test cases are named after what they check")]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;

use crate::engine::KeyValue;
use crate::{
    Engine, EngineError, EventKind, Precondition, ReadAt, Revision, Snapshot, StorageError, Store,
    StoreOptions, Transaction, Value, Write, WriteOp, keys,
};

/// Opens engines for the suites.
#[async_trait::async_trait]
pub trait EngineFactory: Send + Sync + 'static {
    /// `Ok(())` when the engine can be tested here; `Err(reason)` to skip.
    fn available(&self) -> Result<(), String> {
        Ok(())
    }
    /// Whether data survives dropping the engine and opening `place` again.
    fn persistent(&self) -> bool;
    /// Opens the engine stored at `place` (a fresh, empty directory for each case; opening
    /// the same place again must reopen the same data when [`EngineFactory::persistent`]).
    async fn open(&self, place: &Path) -> Arc<dyn Engine>;
}

/// A temporary place for one case.
pub struct Place {
    _dir: tempfile::TempDir,
    path: PathBuf,
}

impl Place {
    /// A fresh temporary directory.
    pub fn new() -> Place {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().to_path_buf();
        Place { _dir: dir, path }
    }
    /// Its path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Default for Place {
    fn default() -> Self {
        Self::new()
    }
}

/// A transformer for the suites: the values of objects under `s/` are reversed behind a
/// version byte. It opens versions up to its own; older ones are stale.
#[derive(Debug)]
pub struct TestSealer {
    /// The version byte it seals with.
    pub version: u8,
}

impl crate::ValueTransformer for TestSealer {
    fn covers(&self, key: &str) -> bool {
        key.starts_with("s/")
    }
    fn seal(&self, _key: &str, value: &[u8]) -> Result<Bytes, crate::BoxError> {
        let mut v = vec![self.version];
        v.extend(value.iter().rev());
        Ok(v.into())
    }
    fn open(&self, _key: &str, stored: &[u8]) -> Result<(Bytes, bool), crate::BoxError> {
        match stored.split_first() {
            Some((&v, rest)) if v <= self.version => {
                let clear: Vec<u8> = rest.iter().rev().copied().collect();
                Ok((clear.into(), v != self.version))
            }
            _ => Err(format!("sealed by a version after {}", self.version).into()),
        }
    }
}

/// Expands one `#[tokio::test]` per case of a suite.
#[macro_export]
#[doc(hidden)]
macro_rules! __suite_cases {
    ($factory:expr; $($case:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                let factory = $factory;
                if let Err(reason) = $crate::testsuite::EngineFactory::available(&factory) {
                    eprintln!("skipped: {reason}");
                    return;
                }
                $crate::testsuite::cases::$case(&factory).await;
            }
        )*
    };
}

/// The engine contract suite.
#[macro_export]
macro_rules! engine_suite {
    ($factory:expr) => {
        $crate::__suite_cases!($factory;
            engine_put_get_delete,
            engine_reads_own_writes_and_isolates_uncommitted,
            engine_scan_is_ordered_bounded_and_resumable,
            engine_count_is_bounded,
            engine_snapshot_is_stable,
            engine_drop_rolls_back,
            engine_commit_is_atomic_and_holds_large_values,
            engine_concurrent_transactions_serialize,
            engine_concurrent_writes_to_one_key_conflict,
            engine_commits_survive_reopen,
            engine_hands_out_each_revision_once,
        );
    };
}

/// The store contract suite.
#[macro_export]
macro_rules! store_suite {
    ($factory:expr) => {
        $crate::__suite_cases!($factory;
            store_revisions_strictly_increase,
            store_create_update_delete_preconditions,
            store_write_guards,
            store_get_at_past_revisions,
            store_list_pages_at_one_revision,
            store_list_exact_sees_past_state,
            store_future_revision_is_refused,
            store_watch_delivers_every_event_once_in_order,
            store_watch_concurrent_writers_no_gap_no_duplicate,
            store_watch_reads_history_past_the_ring,
            store_compaction_discards_history_and_refuses_old_revisions,
            store_keeps_each_version_once,
            store_cache_answers_as_the_engine_does,
            store_cache_behind_the_engine_is_not_used,
            store_replicas_share_one_engine,
            store_replicas_writing_at_once_all_succeed,
            store_replicas_publish_in_revision_order,
            store_revisions_a_stopped_writer_left_are_skipped,
            store_lease_has_one_holder_at_a_time,
            store_group_commit_batches_concurrent_writes,
            store_reopen_keeps_data_and_revision,
            store_sealed_values_stay_sealed_at_rest,
            store_values_lie_compressed_and_read_whole,
        );
    };
}

/// The cases. Public so the macros can name them; call them through the macros.
pub mod cases {
    use super::*;

    // One module per concern; `at_rest`: what lies in the engine (sealed, compressed).
    mod at_rest;
    mod cache;
    mod engine;
    mod replicas;
    mod store;
    mod watch;

    pub use at_rest::*;
    pub use cache::*;
    pub use engine::*;
    pub use replicas::*;
    pub use store::*;
    pub use watch::*;

    // Helpers the store cases share.

    async fn open_store(f: &dyn EngineFactory, place: &Place, opts: StoreOptions) -> Store {
        Store::open(f.open(place.path()).await, opts).await.unwrap()
    }

    /// Two stores over one engine, as two replicas over one cluster (and the place,
    /// which must outlive them).
    async fn two_stores(f: &dyn EngineFactory, opts: StoreOptions) -> (Place, Store, Store) {
        let place = Place::new();
        let engine = f.open(place.path()).await;
        let a = Store::open(engine.clone(), opts.clone()).await.unwrap();
        let b = Store::open(engine, opts).await.unwrap();
        (place, a, b)
    }

    fn put(key: &str, body: &str, pre: Precondition) -> Write {
        Write::new(key, pre, WriteOp::Put(Value::new(body.to_owned())))
    }

    fn del(key: &str, pre: Precondition) -> Write {
        Write::new(key, pre, WriteOp::Delete(Value::new("deleted")))
    }

    /// A create of `key` that needs each `(guard key, mod revision)` to hold.
    fn guarded(key: &str, guards: &[(&str, Revision)]) -> Write {
        let mut w = put(key, "v", Precondition::Absent);
        w.guards = guards.iter().map(|&(k, r)| (k.to_owned(), r)).collect();
        w
    }
}
