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

    async fn commit_puts(e: &dyn Engine, kvs: &[(&[u8], &[u8])]) {
        let mut t = e.begin().await.unwrap();
        for (k, v) in kvs {
            t.put(k.to_vec(), Bytes::copy_from_slice(v));
        }
        t.commit().await.unwrap();
    }

    async fn get(e: &dyn Engine, k: &[u8]) -> Option<Bytes> {
        e.snapshot().await.unwrap().get(k).await.unwrap()
    }

    pub async fn engine_put_get_delete(f: &dyn EngineFactory) {
        let place = Place::new();
        let e = f.open(place.path()).await;
        assert_eq!(get(e.as_ref(), b"a").await, None);
        commit_puts(e.as_ref(), &[(b"a", b"1")]).await;
        assert_eq!(get(e.as_ref(), b"a").await.as_deref(), Some(&b"1"[..]));
        commit_puts(e.as_ref(), &[(b"a", b"2")]).await;
        assert_eq!(get(e.as_ref(), b"a").await.as_deref(), Some(&b"2"[..]));
        let mut t = e.begin().await.unwrap();
        t.delete(b"a".to_vec());
        t.delete(b"never-there".to_vec());
        t.commit().await.unwrap();
        assert_eq!(get(e.as_ref(), b"a").await, None);
    }

    pub async fn engine_reads_own_writes_and_isolates_uncommitted(f: &dyn EngineFactory) {
        let place = Place::new();
        let e = f.open(place.path()).await;
        commit_puts(e.as_ref(), &[(b"k", b"old"), (b"gone", b"x")]).await;
        let mut t = e.begin().await.unwrap();
        t.put(b"k".to_vec(), Bytes::from_static(b"new"));
        t.delete(b"gone".to_vec());
        assert_eq!(t.get(b"k").await.unwrap().as_deref(), Some(&b"new"[..]));
        assert_eq!(t.get(b"gone").await.unwrap(), None);
        // Not visible outside before commit.
        assert_eq!(get(e.as_ref(), b"k").await.as_deref(), Some(&b"old"[..]));
        t.commit().await.unwrap();
        assert_eq!(get(e.as_ref(), b"k").await.as_deref(), Some(&b"new"[..]));
        assert_eq!(get(e.as_ref(), b"gone").await, None);
    }

    pub async fn engine_scan_is_ordered_bounded_and_resumable(f: &dyn EngineFactory) {
        let place = Place::new();
        let e = f.open(place.path()).await;
        let keys: Vec<Vec<u8>> = vec![
            b"p/".to_vec(),
            b"p/\x00".to_vec(),
            b"p/a".to_vec(),
            b"p/a\x00z".to_vec(),
            b"p/b".to_vec(),
            b"p/\xff\xff".to_vec(),
            b"q".to_vec(),
            b"o".to_vec(),
        ];
        let mut t = e.begin().await.unwrap();
        for (i, k) in keys.iter().enumerate() {
            t.put(k.clone(), Bytes::from(i.to_string()));
        }
        t.commit().await.unwrap();
        let s = e.snapshot().await.unwrap();
        let end = keys::prefix_end(b"p/");
        let all = s.scan(b"p/", &end, 100).await.unwrap();
        let got: Vec<&[u8]> = all.iter().map(|(k, _)| k.as_ref()).collect();
        let want: Vec<&[u8]> = vec![b"p/", b"p/\x00", b"p/a", b"p/a\x00z", b"p/b", b"p/\xff\xff"];
        assert_eq!(got, want, "ascending byte order, bounded by [start, end)");
        // Limit + resume from just after the last key.
        let mut seen = Vec::new();
        let mut start = b"p/".to_vec();
        loop {
            let page = s.scan(&start, &end, 2).await.unwrap();
            assert!(page.len() <= 2);
            let Some((last, _)) = page.last() else { break };
            start = last.to_vec();
            start.push(0);
            seen.extend(page.into_iter().map(|(k, _)| k.to_vec()));
        }
        assert_eq!(seen.iter().map(|k| k.as_slice()).collect::<Vec<_>>(), want);
        assert!(s.scan(b"r", b"s", 10).await.unwrap().is_empty());
    }

    pub async fn engine_count_is_bounded(f: &dyn EngineFactory) {
        let place = Place::new();
        let e = f.open(place.path()).await;
        let mut t = e.begin().await.unwrap();
        for i in 0..2500u32 {
            t.put(format!("c/{i:05}").into_bytes(), Bytes::from_static(b"v"));
        }
        t.put(b"d/other".to_vec(), Bytes::from_static(b"v"));
        t.commit().await.unwrap();
        let s = e.snapshot().await.unwrap();
        let end = keys::prefix_end(b"c/");
        assert_eq!(s.count(b"c/", &end, u64::MAX).await.unwrap(), 2500);
        assert_eq!(s.count(b"c/", &end, 1000).await.unwrap(), 1000);
        assert_eq!(s.count(b"c/02000", &end, u64::MAX).await.unwrap(), 500);
        assert_eq!(s.count(&end, b"c/", 10).await.unwrap(), 0);
        // The trait's default count, built on scan, agrees with the engine's own.
        let by_scan = ScanOnly(s.as_ref());
        for (start, limit) in [
            (&b"c/"[..], u64::MAX),
            (b"c/", 1000),
            (b"c/", 1024),
            (b"c/02000", u64::MAX),
            (b"c/02499", 10),
        ] {
            assert_eq!(
                by_scan.count(start, &end, limit).await.unwrap(),
                s.count(start, &end, limit).await.unwrap(),
                "count from {start:?} up to {limit}"
            );
        }
        assert_eq!(by_scan.count(&end, b"c/", 10).await.unwrap(), 0);
    }

    /// A snapshot that keeps only `get` and `scan` of another, so it counts with the trait's
    /// default.
    struct ScanOnly<'a>(&'a dyn Snapshot);

    #[async_trait::async_trait]
    impl Snapshot for ScanOnly<'_> {
        async fn get(&self, key: &[u8]) -> Result<Option<Bytes>, EngineError> {
            self.0.get(key).await
        }

        async fn scan(
            &self,
            start: &[u8],
            end: &[u8],
            limit: usize,
        ) -> Result<Vec<KeyValue>, EngineError> {
            self.0.scan(start, end, limit).await
        }
    }

    pub async fn engine_snapshot_is_stable(f: &dyn EngineFactory) {
        let place = Place::new();
        let e = f.open(place.path()).await;
        commit_puts(e.as_ref(), &[(b"a", b"1"), (b"b", b"1")]).await;
        let s = e.snapshot().await.unwrap();
        commit_puts(e.as_ref(), &[(b"a", b"2"), (b"c", b"2")]).await;
        assert_eq!(s.get(b"a").await.unwrap().as_deref(), Some(&b"1"[..]));
        assert_eq!(s.get(b"c").await.unwrap(), None);
        assert_eq!(s.scan(b"a", b"z", 10).await.unwrap().len(), 2);
        assert_eq!(get(e.as_ref(), b"a").await.as_deref(), Some(&b"2"[..]));
    }

    pub async fn engine_drop_rolls_back(f: &dyn EngineFactory) {
        let place = Place::new();
        let e = f.open(place.path()).await;
        {
            let mut t = e.begin().await.unwrap();
            t.put(b"x".to_vec(), Bytes::from_static(b"1"));
        }
        assert_eq!(get(e.as_ref(), b"x").await, None);
        // The engine still accepts writers after an abandoned transaction.
        commit_puts(e.as_ref(), &[(b"y", b"1")]).await;
        assert!(get(e.as_ref(), b"y").await.is_some());
    }

    pub async fn engine_commit_is_atomic_and_holds_large_values(f: &dyn EngineFactory) {
        let place = Place::new();
        let e = f.open(place.path()).await;
        // A reader running meanwhile sees all 500 keys or none, never some.
        let reader = {
            let e = e.clone();
            tokio::spawn(async move {
                let end = keys::prefix_end(b"n/");
                let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
                loop {
                    let n = e
                        .snapshot()
                        .await
                        .unwrap()
                        .scan(b"n/", &end, 1000)
                        .await
                        .unwrap()
                        .len();
                    assert!(n == 0 || n == 500, "saw {n} of 500 keys of one commit");
                    if n == 500 {
                        break;
                    }
                    assert!(
                        tokio::time::Instant::now() < deadline,
                        "the commit never became visible"
                    );
                    tokio::task::yield_now().await;
                }
            })
        };
        let big = Bytes::from(vec![7u8; 3 << 20]);
        let mut t = e.begin().await.unwrap();
        for i in 0..500u32 {
            t.put(format!("n/{i:05}").into_bytes(), Bytes::from(i.to_string()));
        }
        t.put(b"big".to_vec(), big.clone());
        t.commit().await.unwrap();
        reader.await.unwrap();
        let s = e.snapshot().await.unwrap();
        let end = keys::prefix_end(b"n/");
        assert_eq!(s.scan(b"n/", &end, 1000).await.unwrap().len(), 500);
        assert_eq!(s.get(b"big").await.unwrap(), Some(big));
    }

    pub async fn engine_concurrent_transactions_serialize(f: &dyn EngineFactory) {
        let place = Place::new();
        let e = f.open(place.path()).await;
        let mut tasks = Vec::new();
        for _ in 0..4 {
            let e = e.clone();
            tasks.push(tokio::spawn(async move {
                for _ in 0..25 {
                    loop {
                        let mut t = e.begin().await.unwrap();
                        let n = keys::decode_u64(b"ctr", t.get(b"ctr").await.unwrap().as_ref())
                            .unwrap();
                        t.put(b"ctr".to_vec(), keys::encode_u64(n + 1));
                        match t.commit().await {
                            Ok(()) => break,
                            Err(EngineError::Conflict) => continue,
                            Err(err) => panic!("{err}"),
                        }
                    }
                }
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
        let n = keys::decode_u64(b"ctr", get(e.as_ref(), b"ctr").await.as_ref()).unwrap();
        assert_eq!(
            n, 100,
            "read-modify-write transactions must not lose updates"
        );
    }

    /// Optimistic transactions, as TiKV's: of two open at once that write one key, the
    /// second to commit fails with [`EngineError::Conflict`] and writes nothing; writes to
    /// other keys do not conflict (issue 28, "Testing without TiKV": the engines that run
    /// in CI report the conflicts replicas meet over TiKV).
    pub async fn engine_concurrent_writes_to_one_key_conflict(f: &dyn EngineFactory) {
        let place = Place::new();
        let e = f.open(place.path()).await;
        commit_puts(e.as_ref(), &[(b"hot", b"0")]).await;
        let both = async {
            let mut t1 = e.begin().await.unwrap();
            let mut t2 = e.begin().await.unwrap();
            assert_eq!(t1.get(b"hot").await.unwrap().as_deref(), Some(&b"0"[..]));
            assert_eq!(t2.get(b"hot").await.unwrap().as_deref(), Some(&b"0"[..]));
            t1.put(b"hot".to_vec(), Bytes::from_static(b"1"));
            t1.put(b"only-1".to_vec(), Bytes::from_static(b"1"));
            t2.put(b"hot".to_vec(), Bytes::from_static(b"2"));
            t2.put(b"only-2".to_vec(), Bytes::from_static(b"2"));
            (t1, t2)
        };
        let (t1, t2) = tokio::time::timeout(Duration::from_secs(10), both)
            .await
            .expect("a transaction begins while another is open");
        t1.commit().await.unwrap();
        let second = t2.commit().await;
        assert!(
            matches!(second, Err(EngineError::Conflict)),
            "the second writer of one key conflicts: {second:?}"
        );
        assert_eq!(get(e.as_ref(), b"hot").await.as_deref(), Some(&b"1"[..]));
        assert_eq!(get(e.as_ref(), b"only-1").await.as_deref(), Some(&b"1"[..]));
        assert_eq!(get(e.as_ref(), b"only-2").await, None, "nothing of it");
        // Disjoint writes commit, in either order; so does a transaction that began after
        // the commit it would have conflicted with.
        let mut t3 = e.begin().await.unwrap();
        let mut t4 = e.begin().await.unwrap();
        t3.put(b"a".to_vec(), Bytes::from_static(b"3"));
        t4.put(b"b".to_vec(), Bytes::from_static(b"4"));
        t4.commit().await.unwrap();
        t3.commit().await.unwrap();
        let mut t5 = e.begin().await.unwrap();
        t5.put(b"hot".to_vec(), Bytes::from_static(b"5"));
        t5.commit().await.unwrap();
        assert_eq!(get(e.as_ref(), b"hot").await.as_deref(), Some(&b"5"[..]));
    }

    pub async fn engine_commits_survive_reopen(f: &dyn EngineFactory) {
        if !f.persistent() {
            eprintln!("skipped: engine is not persistent");
            return;
        }
        let place = Place::new();
        {
            let e = f.open(place.path()).await;
            commit_puts(e.as_ref(), &[(b"durable", b"yes")]).await;
        }
        let e = f.open(place.path()).await;
        assert_eq!(
            get(e.as_ref(), b"durable").await.as_deref(),
            Some(&b"yes"[..])
        );
    }

    // ---- store ----

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

    pub async fn store_revisions_strictly_increase(f: &dyn EngineFactory) {
        let place = Place::new();
        let s = open_store(f, &place, StoreOptions::default()).await;
        assert_eq!(s.revision(), 0);
        let mut last = 0;
        for i in 0..5 {
            let c = s
                .write(put(&format!("g/r/ns/{i}"), "v", Precondition::Absent))
                .await
                .unwrap();
            assert!(c.revision > last);
            last = c.revision;
        }
        let mut tasks = Vec::new();
        for i in 0..50 {
            let s = s.clone();
            tasks.push(tokio::spawn(async move {
                s.write(put(&format!("g/r/c/{i}"), "v", Precondition::Absent))
                    .await
                    .unwrap()
                    .revision
            }));
        }
        let mut revs = Vec::new();
        for t in tasks {
            revs.push(t.await.unwrap());
        }
        revs.sort_unstable();
        revs.dedup();
        assert_eq!(revs.len(), 50, "every write gets its own revision");
        assert!(revs[0] > last);
        assert_eq!(s.revision(), *revs.last().unwrap());
    }

    pub async fn store_create_update_delete_preconditions(f: &dyn EngineFactory) {
        let place = Place::new();
        let s = open_store(f, &place, StoreOptions::default()).await;
        let c1 = s
            .write(put("g/r/ns/a", "1", Precondition::Absent))
            .await
            .unwrap();
        assert!(c1.prev.is_none());
        let err = s
            .write(put("g/r/ns/a", "x", Precondition::Absent))
            .await
            .unwrap_err();
        assert!(matches!(err, StorageError::AlreadyExists { .. }), "{err}");
        let c2 = s
            .write(put("g/r/ns/a", "2", Precondition::Revision(c1.revision)))
            .await
            .unwrap();
        assert_eq!(c2.prev.as_ref().unwrap().value, Bytes::from("1"));
        let err = s
            .write(put("g/r/ns/a", "3", Precondition::Revision(c1.revision)))
            .await
            .unwrap_err();
        assert!(
            matches!(err, StorageError::Conflict { expected, actual, .. } if expected == c1.revision && actual == c2.revision),
            "{err}"
        );
        let err = s
            .write(put("g/r/ns/missing", "3", Precondition::Revision(1)))
            .await
            .unwrap_err();
        assert!(matches!(err, StorageError::NotFound { .. }), "{err}");
        let err = s
            .write(del("g/r/ns/missing", Precondition::None))
            .await
            .unwrap_err();
        assert!(matches!(err, StorageError::NotFound { .. }), "{err}");
        let err = s
            .write(del("g/r/ns/a", Precondition::Revision(c1.revision)))
            .await
            .unwrap_err();
        assert!(matches!(err, StorageError::Conflict { .. }), "{err}");
        let d = s
            .write(del("g/r/ns/a", Precondition::Revision(c2.revision)))
            .await
            .unwrap();
        assert_eq!(d.prev.unwrap().revision, c2.revision);
        assert!(s.get("g/r/ns/a", ReadAt::Latest).await.unwrap().1.is_none());
        // Unconditional put after delete recreates; the revision slot receives the revision.
        let c = s
            .write(Write::new(
                "g/r/ns/a",
                Precondition::None,
                WriteOp::Put(Value::with_revision_slot("rv=;", 3)),
            ))
            .await
            .unwrap();
        assert_eq!(c.value, Bytes::from(format!("rv={};", c.revision)));
        let (_, got) = s.get("g/r/ns/a", ReadAt::Latest).await.unwrap();
        assert_eq!(got.unwrap().value, c.value);
    }

    pub async fn store_write_guards(f: &dyn EngineFactory) {
        let place = Place::new();
        let engine = f.open(place.path()).await;
        let s = Store::open(engine.clone(), StoreOptions::default())
            .await
            .unwrap();
        let ns = "g/ns/-/n1";
        let missing = "g/ns/-/missing";
        let r_ns = s
            .write(put(ns, "ns", Precondition::Absent))
            .await
            .unwrap()
            .revision;
        // A guard at another revision, or absent while the key exists: nothing is written.
        for (want, key) in [(r_ns + 7, "g/r/n1/a"), (0, "g/r/n1/b")] {
            let err = s.write(guarded(key, &[(ns, want)])).await.unwrap_err();
            assert!(
                matches!(&err, StorageError::Conflict { key, expected, actual }
                    if key == ns && *expected == want && *actual == r_ns),
                "{err}"
            );
            assert!(s.get(key, ReadAt::Latest).await.unwrap().1.is_none());
        }
        assert_eq!(s.revision(), r_ns);
        // Guards that hold: absent (0) on a missing key, the right revision on an existing one.
        s.write(guarded("g/r/n1/a", &[(missing, 0)])).await.unwrap();
        s.write(guarded("g/r/n1/b", &[(ns, r_ns)])).await.unwrap();
        // Every guard must hold; the conflict names the one that does not.
        let err = s
            .write(guarded("g/r/n1/c", &[(ns, r_ns), (missing, 5)]))
            .await
            .unwrap_err();
        assert!(
            matches!(&err, StorageError::Conflict { key, expected: 5, actual: 0 } if key == missing),
            "{err}"
        );
        assert!(s.get("g/r/n1/c", ReadAt::Latest).await.unwrap().1.is_none());

        // Guards see the earlier writes of their batch. An open transaction parks the
        // committer (on an engine with one writer at a time, such as the embedded one) in
        // the batch of `park`, so the writes queued meanwhile all share the next batch;
        // elsewhere they may be split, with the same outcome.
        let base = s.revision();
        let hold = engine.begin().await.unwrap();
        let park = s
            .enqueue(put("g/r/n1/park", "p", Precondition::Absent))
            .unwrap();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while s.queued() > 0 {
            assert!(
                tokio::time::Instant::now() < deadline,
                "the committer is stuck"
            );
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        let n2 = "g/ns/-/n2";
        let queued: Vec<_> = [
            del(ns, Precondition::Revision(r_ns)),
            guarded("g/r/n1/d", &[(ns, r_ns)]),
            put(n2, "ns", Precondition::Absent),
            guarded("g/r/n2/e", &[(n2, base + 3)]),
            guarded("g/r/n2/f", &[(n2, 0)]),
        ]
        .into_iter()
        .map(|w| s.enqueue(w).unwrap())
        .collect();
        drop(hold);
        assert_eq!(park.await.unwrap().unwrap().revision, base + 1);
        let mut results = Vec::new();
        for rx in queued {
            results.push(rx.await.unwrap().map(|c| c.revision));
        }
        assert!(matches!(results[0], Ok(r) if r == base + 2), "{results:?}");
        assert!(
            matches!(&results[1], Err(StorageError::Conflict { key, expected, actual: 0 })
                if key == ns && *expected == r_ns),
            "the guarded namespace was deleted earlier in the batch: {results:?}"
        );
        assert!(matches!(results[2], Ok(r) if r == base + 3), "{results:?}");
        assert!(matches!(results[3], Ok(r) if r == base + 4), "{results:?}");
        assert!(
            matches!(&results[4], Err(StorageError::Conflict { key, expected: 0, actual })
                if key == n2 && *actual == base + 3),
            "the guarded namespace was created earlier in the batch: {results:?}"
        );
        for (key, present) in [("g/r/n1/d", false), ("g/r/n2/e", true), ("g/r/n2/f", false)] {
            let got = s.get(key, ReadAt::Latest).await.unwrap().1;
            assert_eq!(got.is_some(), present, "{key}");
        }
        assert_eq!(s.revision(), base + 4);
    }

    pub async fn store_get_at_past_revisions(f: &dyn EngineFactory) {
        let place = Place::new();
        let s = open_store(f, &place, StoreOptions::default()).await;
        let r1 = s
            .write(put("g/r/ns/a", "v1", Precondition::Absent))
            .await
            .unwrap()
            .revision;
        let other = s
            .write(put("g/r/ns/b", "x", Precondition::Absent))
            .await
            .unwrap()
            .revision;
        let r2 = s
            .write(put("g/r/ns/a", "v2", Precondition::Revision(r1)))
            .await
            .unwrap()
            .revision;
        let r3 = s
            .write(del("g/r/ns/a", Precondition::None))
            .await
            .unwrap()
            .revision;
        let at = |rev| {
            let s = s.clone();
            async move {
                s.get("g/r/ns/a", ReadAt::Exact(rev))
                    .await
                    .unwrap()
                    .1
                    .map(|v| (v.revision, v.value))
            }
        };
        assert_eq!(at(r1 - 1).await, None);
        assert_eq!(at(r1).await, Some((r1, Bytes::from("v1"))));
        assert_eq!(at(other).await, Some((r1, Bytes::from("v1"))));
        assert_eq!(at(r2).await, Some((r2, Bytes::from("v2"))));
        assert_eq!(at(r3).await, None);
        let (rev, latest) = s.get("g/r/ns/b", ReadAt::Latest).await.unwrap();
        assert_eq!(rev, r3);
        assert_eq!(latest.unwrap().revision, other);
    }

    pub async fn store_list_pages_at_one_revision(f: &dyn EngineFactory) {
        let place = Place::new();
        let s = open_store(f, &place, StoreOptions::default()).await;
        for i in 0..25 {
            s.write(put(&format!("g/r/ns1/o{i:02}"), "v", Precondition::Absent))
                .await
                .unwrap();
        }
        s.write(put("g/r/ns10/x", "v", Precondition::Absent))
            .await
            .unwrap();
        s.write(put("g/other/ns1/x", "v", Precondition::Absent))
            .await
            .unwrap();
        let first = s
            .list("g/r/ns1/", ReadAt::Latest, None, 10, true)
            .await
            .unwrap();
        assert_eq!(first.items.len(), 10);
        assert!(first.more);
        assert_eq!(first.remaining, Some(15));
        assert_eq!(first.items[0].key, "g/r/ns1/o00");
        // Changes after the first page must not show in later pages.
        s.write(put("g/r/ns1/o15", "changed", Precondition::None))
            .await
            .unwrap();
        s.write(put("g/r/ns1/o99", "new", Precondition::Absent))
            .await
            .unwrap();
        s.write(del("g/r/ns1/o20", Precondition::None))
            .await
            .unwrap();
        let mut keys: Vec<String> = first.items.iter().map(|v| v.key.clone()).collect();
        let mut after = first.items.last().unwrap().key.clone();
        loop {
            let page = s
                .list(
                    "g/r/ns1/",
                    ReadAt::Exact(first.revision),
                    Some(&after),
                    10,
                    true,
                )
                .await
                .unwrap();
            assert_eq!(page.revision, first.revision);
            for v in &page.items {
                assert_eq!(v.value, Bytes::from("v"), "{} read at the snapshot", v.key);
            }
            keys.extend(page.items.iter().map(|v| v.key.clone()));
            if !page.more {
                assert_eq!(page.remaining, None);
                break;
            }
            after = page.items.last().unwrap().key.clone();
        }
        let want: Vec<String> = (0..25).map(|i| format!("g/r/ns1/o{i:02}")).collect();
        assert_eq!(keys, want);
        // Latest sees the changes; all-namespaces prefix sees both namespaces.
        let latest = s
            .list("g/r/ns1/", ReadAt::Latest, None, 0, false)
            .await
            .unwrap();
        assert_eq!(latest.items.len(), 25);
        assert!(!latest.more);
        let all = s
            .list("g/r/", ReadAt::Latest, None, 0, false)
            .await
            .unwrap();
        assert_eq!(all.items.len(), 26);
        let page = s
            .list("g/r/", ReadAt::Latest, Some("g/r/ns1/o98"), 5, false)
            .await
            .unwrap();
        assert_eq!(
            page.items
                .iter()
                .map(|v| v.key.as_str())
                .collect::<Vec<_>>(),
            vec!["g/r/ns1/o99", "g/r/ns10/x"]
        );
        assert!(!page.more);
    }

    pub async fn store_list_exact_sees_past_state(f: &dyn EngineFactory) {
        let place = Place::new();
        let s = open_store(f, &place, StoreOptions::default()).await;
        let a = s
            .write(put("g/r/n/a", "a1", Precondition::Absent))
            .await
            .unwrap()
            .revision;
        s.write(put("g/r/n/b", "b1", Precondition::Absent))
            .await
            .unwrap();
        let snap = s.revision();
        s.write(put("g/r/n/a", "a2", Precondition::Revision(a)))
            .await
            .unwrap();
        s.write(del("g/r/n/b", Precondition::None)).await.unwrap();
        s.write(put("g/r/n/c", "c1", Precondition::Absent))
            .await
            .unwrap();
        let old = s
            .list("g/r/n/", ReadAt::Exact(snap), None, 0, false)
            .await
            .unwrap();
        let got: Vec<(&str, &[u8])> = old
            .items
            .iter()
            .map(|v| (v.key.as_str(), v.value.as_ref()))
            .collect();
        assert_eq!(got, vec![("g/r/n/a", &b"a1"[..]), ("g/r/n/b", &b"b1"[..])]);
        let now = s
            .list("g/r/n/", ReadAt::Latest, None, 0, false)
            .await
            .unwrap();
        let got: Vec<(&str, &[u8])> = now
            .items
            .iter()
            .map(|v| (v.key.as_str(), v.value.as_ref()))
            .collect();
        assert_eq!(got, vec![("g/r/n/a", &b"a2"[..]), ("g/r/n/c", &b"c1"[..])]);
        let exact_now = s
            .list("g/r/n/", ReadAt::Exact(now.revision), None, 0, false)
            .await
            .unwrap();
        assert_eq!(exact_now.items, now.items);
    }

    pub async fn store_future_revision_is_refused(f: &dyn EngineFactory) {
        let place = Place::new();
        let s = open_store(f, &place, StoreOptions::default()).await;
        s.write(put("g/r/n/a", "1", Precondition::Absent))
            .await
            .unwrap();
        let cur = s.revision();
        let err = s.get("g/r/n/a", ReadAt::Exact(cur + 5)).await.unwrap_err();
        assert!(
            matches!(err, StorageError::FutureRevision { requested, current } if requested == cur + 5 && current == cur)
        );
        let err = s
            .list("g/r/", ReadAt::Exact(cur + 1), None, 0, false)
            .await
            .unwrap_err();
        assert!(matches!(err, StorageError::FutureRevision { .. }));
        assert!(!s.wait_for(cur + 1, Duration::from_millis(20)).await);
        assert!(s.wait_for(cur, Duration::from_millis(20)).await);
    }

    pub async fn store_watch_delivers_every_event_once_in_order(f: &dyn EngineFactory) {
        let place = Place::new();
        let s = open_store(f, &place, StoreOptions::default()).await;
        let start = s
            .write(put("g/r/n/before", "x", Precondition::Absent))
            .await
            .unwrap()
            .revision;
        let mut w = s.watch("g/r/n/", start).unwrap();
        let mut other = s.watch("g/other/", start).unwrap();
        let c = s
            .write(put("g/r/n/a", "1", Precondition::Absent))
            .await
            .unwrap();
        s.write(put("g/other/n/z", "z", Precondition::Absent))
            .await
            .unwrap();
        s.write(put("g/r/n/a", "2", Precondition::Revision(c.revision)))
            .await
            .unwrap();
        s.write(del("g/r/n/a", Precondition::None)).await.unwrap();
        let mut got = Vec::new();
        for _ in 0..3 {
            let ev = tokio::time::timeout(Duration::from_secs(5), w.next())
                .await
                .unwrap()
                .unwrap();
            got.push((
                ev.kind,
                ev.value.clone(),
                ev.prev.as_ref().map(|p| p.value.clone()),
            ));
        }
        assert_eq!(
            got,
            vec![
                (EventKind::Put, Bytes::from("1"), None),
                (EventKind::Put, Bytes::from("2"), Some(Bytes::from("1"))),
                (
                    EventKind::Delete,
                    Bytes::from("deleted"),
                    Some(Bytes::from("2"))
                ),
            ]
        );
        let ev = other.next().await.unwrap();
        assert_eq!(ev.key, "g/other/n/z");
        assert!(
            w.try_next().await.unwrap().is_none(),
            "nothing else for this prefix"
        );
        assert_eq!(w.progress(), s.revision());
        // A watch from an older revision replays the same events.
        let mut again = s.watch("g/r/n/", start).unwrap();
        let first = again.next().await.unwrap();
        assert_eq!(
            (first.key.as_str(), first.revision),
            ("g/r/n/a", c.revision)
        );
    }

    pub async fn store_watch_concurrent_writers_no_gap_no_duplicate(f: &dyn EngineFactory) {
        let place = Place::new();
        let s = open_store(
            f,
            &place,
            StoreOptions {
                watch_ring: 64,
                ..StoreOptions::default()
            },
        )
        .await;
        let from = s.revision();
        const WRITES: u64 = 400;
        // Watchers consume while the writers write, some slowly enough to fall behind
        // the ring and read from the log.
        let mut readers = Vec::new();
        for slow in [false, false, true] {
            let mut w = s.watch("g/", from).unwrap();
            readers.push(tokio::spawn(async move {
                let mut expect = from + 1;
                while expect <= from + WRITES {
                    let ev = tokio::time::timeout(Duration::from_secs(10), w.next())
                        .await
                        .unwrap()
                        .unwrap();
                    assert_eq!(ev.revision, expect, "contiguous, once, in order");
                    expect += 1;
                    if slow && expect % 50 == 0 {
                        tokio::time::sleep(Duration::from_millis(5)).await;
                    }
                }
                // Nothing beyond the writes.
                assert!(w.try_next().await.unwrap().is_none());
            }));
        }
        let mut tasks = Vec::new();
        for t in 0..8 {
            let s = s.clone();
            tasks.push(tokio::spawn(async move {
                for i in 0..WRITES / 8 {
                    s.write(put(&format!("g/r/n/t{t}-{i}"), "v", Precondition::Absent))
                        .await
                        .unwrap();
                }
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
        assert_eq!(s.revision() - from, WRITES);
        for r in readers {
            r.await.unwrap();
        }
    }

    pub async fn store_watch_reads_history_past_the_ring(f: &dyn EngineFactory) {
        let place = Place::new();
        let s = open_store(
            f,
            &place,
            StoreOptions {
                watch_ring: 8,
                ..StoreOptions::default()
            },
        )
        .await;
        let mut prev = 0;
        for i in 0..100 {
            let pre = if i == 0 {
                Precondition::Absent
            } else {
                Precondition::Revision(prev)
            };
            prev = s
                .write(put("g/r/n/k", &format!("v{i}"), pre))
                .await
                .unwrap()
                .revision;
        }
        let mut w = s.watch("g/r/", 0).unwrap();
        for i in 0..100 {
            let ev = w.next().await.unwrap();
            assert_eq!(ev.value, Bytes::from(format!("v{i}")));
            if i > 0 {
                assert_eq!(
                    ev.prev.as_ref().unwrap().value,
                    Bytes::from(format!("v{}", i - 1))
                );
            }
        }
        assert_eq!(w.progress(), prev);
    }

    /// Issue 9 "Disk": a version is stored once, in `c/` while current, moved to `k/` by
    /// the write that supersedes it; a store that also kept current versions in `k/`
    /// (the layout before) reads the same.
    pub async fn store_keeps_each_version_once(f: &dyn EngineFactory) {
        let place = Place::new();
        let engine = f.open(place.path()).await;
        // A ring of one: watches read their history back from the log.
        let opts = StoreOptions {
            watch_ring: 1,
            ..StoreOptions::default()
        };
        let s = Store::open(engine.clone(), opts).await.unwrap();
        let history = |engine: Arc<dyn Engine>| async move {
            let snap = engine.snapshot().await.unwrap();
            let (start, end) = keys::versions_range("g/r/");
            snap.scan(&start, &end, 100)
                .await
                .unwrap()
                .into_iter()
                .map(|(k, _)| keys::parse_version(&k).unwrap().1)
                .collect::<Vec<_>>()
        };
        let r1 = s
            .write(put("g/r/n/a", "v1", Precondition::Absent))
            .await
            .unwrap()
            .revision;
        assert!(
            history(engine.clone()).await.is_empty(),
            "a create writes c/ only"
        );
        let r2 = s
            .write(put("g/r/n/a", "v2", Precondition::Revision(r1)))
            .await
            .unwrap()
            .revision;
        assert_eq!(history(engine.clone()).await, vec![r1], "v1 moved to k/");
        let rb = s
            .write(put("g/r/n/b", "b1", Precondition::Absent))
            .await
            .unwrap()
            .revision;
        let r3 = s
            .write(del("g/r/n/a", Precondition::None))
            .await
            .unwrap()
            .revision;
        assert_eq!(history(engine.clone()).await, vec![r3, r2, r1]);
        // The layout before: current versions in k/ as well. Reads must not change.
        let mut t = engine.begin().await.unwrap();
        t.put(
            keys::version("g/r/n/b", rb),
            keys::encode_version(keys::TAG_PUT, b"b1"),
        );
        t.commit().await.unwrap();
        for round in 0..2 {
            let at = |rev| {
                let s = s.clone();
                async move {
                    let page = s.list("g/r/", ReadAt::Exact(rev), None, 0, true).await;
                    page.unwrap()
                        .items
                        .into_iter()
                        .map(|v| (v.key, v.revision, v.value))
                        .collect::<Vec<_>>()
                }
            };
            let a = |rev, v: &'static str| ("g/r/n/a".to_string(), rev, Bytes::from(v));
            let b = ("g/r/n/b".to_string(), rb, Bytes::from("b1"));
            assert_eq!(at(r1).await, vec![a(r1, "v1")]);
            assert_eq!(at(r2).await, vec![a(r2, "v2")]);
            assert_eq!(at(rb).await, vec![a(r2, "v2"), b.clone()]);
            assert_eq!(at(r3).await, vec![b]);
            let got = s
                .get("g/r/n/a", ReadAt::Exact(rb))
                .await
                .unwrap()
                .1
                .unwrap();
            assert_eq!((got.revision, got.value), (r2, Bytes::from("v2")));
            // Watch history is read back from the log with the values at each revision.
            let mut w = s.watch("g/r/", 0).unwrap();
            let mut seen = Vec::new();
            for _ in 0..4 {
                let e = w.next().await.unwrap();
                seen.push((
                    e.revision,
                    e.value.clone(),
                    e.prev.as_ref().map(|p| p.value.clone()),
                ));
            }
            assert_eq!(
                seen,
                vec![
                    (r1, Bytes::from("v1"), None),
                    (r2, Bytes::from("v2"), Some(Bytes::from("v1"))),
                    (rb, Bytes::from("b1"), None),
                    (r3, Bytes::from("deleted"), Some(Bytes::from("v2"))),
                ]
            );
            // Superseding b moves its value to k/ where the old layout had it already;
            // the second round reads the same.
            if round == 0 {
                s.write(put("g/r/n/b", "b2", Precondition::Revision(rb)))
                    .await
                    .unwrap();
            }
        }
    }

    pub async fn store_compaction_discards_history_and_refuses_old_revisions(
        f: &dyn EngineFactory,
    ) {
        let place = Place::new();
        let engine = f.open(place.path()).await;
        let s = Store::open(
            engine.clone(),
            StoreOptions {
                watch_ring: 4,
                ..StoreOptions::default()
            },
        )
        .await
        .unwrap();
        let mut prev = s
            .write(put("g/r/n/a", "a0", Precondition::Absent))
            .await
            .unwrap()
            .revision;
        for i in 1..10 {
            prev = s
                .write(put(
                    "g/r/n/a",
                    &format!("a{i}"),
                    Precondition::Revision(prev),
                ))
                .await
                .unwrap()
                .revision;
        }
        s.write(put("g/r/n/gone", "x", Precondition::Absent))
            .await
            .unwrap();
        s.write(del("g/r/n/gone", Precondition::None))
            .await
            .unwrap();
        let horizon = s.revision();
        s.write(put("g/r/n/b", "b", Precondition::Absent))
            .await
            .unwrap();
        let mut early = s.watch("g/r/", 2).unwrap();
        s.compact(horizon).await.unwrap();
        assert_eq!(s.compacted(), horizon);
        let err = s
            .get("g/r/n/a", ReadAt::Exact(horizon - 1))
            .await
            .unwrap_err();
        assert!(matches!(err, StorageError::Compacted { .. }), "{err}");
        let err = s
            .list("g/r/", ReadAt::Exact(3), None, 0, false)
            .await
            .unwrap_err();
        assert!(matches!(err, StorageError::Compacted { .. }), "{err}");
        assert!(matches!(
            s.watch("g/r/", horizon - 1),
            Err(StorageError::Compacted { .. })
        ));
        let err = early.next().await.unwrap_err();
        assert!(matches!(err, StorageError::Compacted { .. }), "{err}");
        // State at and after the horizon is intact.
        let at = s
            .list("g/r/", ReadAt::Exact(horizon), None, 0, false)
            .await
            .unwrap();
        assert_eq!(at.items.len(), 1);
        assert_eq!(at.items[0].value, Bytes::from("a9"));
        let latest = s
            .list("g/r/", ReadAt::Latest, None, 0, false)
            .await
            .unwrap();
        assert_eq!(latest.items.len(), 2);
        let mut w = s.watch("g/r/", horizon).unwrap();
        assert_eq!(w.next().await.unwrap().key, "g/r/n/b");
        // Superseded versions and deleted keys are gone from the engine; the current
        // versions of a and b live in `c/` only.
        let snap = engine.snapshot().await.unwrap();
        let (start, end) = keys::versions_range("g/r/");
        let versions = snap.scan(&start, &end, 100).await.unwrap();
        assert!(versions.is_empty(), "{versions:?}");
        let (start, end) = keys::current_range("g/r/");
        assert_eq!(snap.scan(&start, &end, 100).await.unwrap().len(), 2);
        let (ls, le) = keys::log_range(0, horizon);
        assert!(snap.scan(&ls, &le, 10).await.unwrap().is_empty());
        // Compacting again, or lower, is a no-op.
        s.compact(horizon - 3).await.unwrap();
        assert_eq!(s.compacted(), horizon);
    }

    pub async fn store_group_commit_batches_concurrent_writes(f: &dyn EngineFactory) {
        let place = Place::new();
        let s = open_store(f, &place, StoreOptions::default()).await;
        let before = s.stats();
        let mut tasks = Vec::new();
        for i in 0..256 {
            let s = s.clone();
            tasks.push(tokio::spawn(async move {
                s.write(put(&format!("g/r/n/{i}"), "v", Precondition::Absent))
                    .await
            }));
        }
        for t in tasks {
            t.await.unwrap().unwrap();
        }
        let after = s.stats();
        assert_eq!(after.writes - before.writes, 256);
        assert!(
            after.commits - before.commits < 256,
            "concurrent writes share transactions ({} commits)",
            after.commits - before.commits
        );
        // A failing precondition in a batch does not fail its neighbours.
        let mut tasks = Vec::new();
        for i in 0..64 {
            let s = s.clone();
            let key = if i % 2 == 0 {
                format!("g/r/n/{i}")
            } else {
                format!("g/r/m/{i}")
            };
            tasks.push(tokio::spawn(async move {
                s.write(put(&key, "v", Precondition::Absent)).await
            }));
        }
        let mut ok = 0;
        for t in tasks {
            match t.await.unwrap() {
                Ok(_) => ok += 1,
                Err(StorageError::AlreadyExists { .. }) => {}
                Err(e) => panic!("{e}"),
            }
        }
        assert_eq!(ok, 32);
    }

    /// The object cache answers every read at the latest revision as the engine does
    /// (issue 10 3b's differential test, over a random sequence of writes, some of them
    /// concurrent so that they share batches), also after a reopen loads it from disk.
    pub async fn store_cache_answers_as_the_engine_does(f: &dyn EngineFactory) {
        let place = Place::new();
        let engine = f.open(place.path()).await;
        let s = Store::open(engine.clone(), StoreOptions::default())
            .await
            .unwrap();
        let mut rng = 0x2545_F491_4F6C_DD1Du64;
        let mut next = move |n: u64| {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng % n
        };
        let key =
            |a: u64, b: u64| format!("g/{}/n{}/k{:02}", ["r", "s"][(a % 2) as usize], a % 3, b);
        for round in 0..12 {
            let mut writes = tokio::task::JoinSet::new();
            for _ in 0..40 {
                let k = key(next(6), next(25));
                let w = match next(4) {
                    0 => del(&k, Precondition::None),
                    1 => put(&k, &format!("v{round}"), Precondition::Absent),
                    _ => put(&k, &format!("u{round}-{}", next(1000)), Precondition::None),
                };
                let s = s.clone();
                writes.spawn(async move { s.write(w).await });
            }
            // Failures (absent, exists) are part of the sequence.
            writes.join_all().await;
            assert_cache_matches(&s, &mut next).await;
        }
        assert!(s.cached_objects().unwrap() > 0);
        drop(s);
        tokio::time::sleep(Duration::from_millis(50)).await;
        let s = Store::open(engine, StoreOptions::default()).await.unwrap();
        assert_cache_matches(&s, &mut next).await;
    }

    async fn assert_cache_matches(s: &Store, next: &mut impl FnMut(u64) -> u64) {
        let engine = s.bypassing_cache();
        for prefix in ["", "g/", "g/r/", "g/s/n1/", "g/r/n2/", "h/"] {
            for limit in [0, 1, 3, 7, 100] {
                let after = match next(3) {
                    0 => None,
                    _ => Some(format!("g/r/n{}/k{:02}", next(3), next(25))),
                };
                let a = s
                    .list(prefix, ReadAt::Latest, after.as_deref(), limit, true)
                    .await
                    .unwrap();
                let b = engine
                    .list(prefix, ReadAt::Latest, after.as_deref(), limit, true)
                    .await
                    .unwrap();
                let what = format!("list {prefix:?} after {after:?} limit {limit}");
                assert_eq!(a.revision, b.revision, "{what}");
                assert_eq!(a.items, b.items, "{what}");
                assert_eq!((a.more, a.remaining), (b.more, b.remaining), "{what}");
                // At exactly the current revision (a continue page with nothing
                // written since) the cache answers too.
                let at = ReadAt::Exact(a.revision);
                let x = s
                    .list(prefix, at, after.as_deref(), limit, true)
                    .await
                    .unwrap();
                let y = engine
                    .list(prefix, at, after.as_deref(), limit, true)
                    .await
                    .unwrap();
                assert_eq!(
                    (x.revision, &x.items, x.more),
                    (y.revision, &y.items, y.more),
                    "exact {what}"
                );
                assert_eq!(x.items, a.items, "exact {what}");
            }
        }
        for a in 0..6 {
            for b in [0, 7, 24] {
                let k = format!("g/{}/n{}/k{:02}", ["r", "s"][a % 2], a % 3, b);
                let x = s.get(&k, ReadAt::Latest).await.unwrap();
                let y = engine.get(&k, ReadAt::Latest).await.unwrap();
                assert_eq!(x, y, "get {k}");
                let at = ReadAt::Exact(x.0);
                let xe = s.get(&k, at).await.unwrap();
                assert_eq!(xe, engine.get(&k, at).await.unwrap(), "get {k} exact");
            }
        }
    }

    /// A store whose cache is behind the engine (another store wrote through the same
    /// engine, as a second replica does) never serves a state older than the engine's: a
    /// read at the latest revision first brings the cache up from the change log (as
    /// kube's consistent reads from cache wait for the watch cache, KEP-2340).
    pub async fn store_cache_behind_the_engine_is_not_used(f: &dyn EngineFactory) {
        let (_place, a, b) = two_stores(f, StoreOptions::default()).await;
        assert_eq!(b.cached_objects(), Some(0));
        let w = a
            .write(put("g/r/n/x", "from a", Precondition::Absent))
            .await
            .unwrap();
        let (rev, found) = b.get("g/r/n/x", ReadAt::Latest).await.unwrap();
        assert_eq!(
            (rev, found.unwrap().value),
            (w.revision, Bytes::from("from a"))
        );
        assert_eq!(b.cached_objects(), Some(1), "the read caught the cache up");
        let w2 = a
            .write(put("g/r/n/y", "from a", Precondition::Absent))
            .await
            .unwrap();
        let page = b
            .list("g/r/", ReadAt::Latest, None, 0, false)
            .await
            .unwrap();
        assert_eq!((page.revision, page.items.len()), (w2.revision, 2));
        assert_eq!(b.cached_objects(), Some(2));
    }

    /// Two stores over one engine, as two gateway replicas over one TiKV cluster
    /// (issue 10, replica mode): revisions unique and gap-free across them, a conflicting
    /// update through each gets exactly one conflict, and each one's watchers and reads
    /// see the other's writes (its follower reads them from the change log).
    pub async fn store_replicas_share_one_engine(f: &dyn EngineFactory) {
        let opts = StoreOptions {
            follow_every: Some(Duration::from_millis(10)),
            ..StoreOptions::default()
        };
        let (_place, a, b) = two_stores(f, opts).await;
        let mut watches = [a.watch("g/", 0).unwrap(), b.watch("g/", 0).unwrap()];
        let mut writes = tokio::task::JoinSet::new();
        for i in 0..100 {
            let s = if i % 2 == 0 { a.clone() } else { b.clone() };
            writes.spawn(async move {
                let key = format!("g/r/n/k{i:03}");
                s.write(put(&key, "v", Precondition::Absent))
                    .await
                    .unwrap()
                    .revision
            });
        }
        let mut revs = writes.join_all().await;
        revs.sort_unstable();
        assert_eq!(revs, (1..=100).collect::<Vec<Revision>>(), "unique, no gap");
        let (_, k0) = a.get("g/r/n/k000", ReadAt::Latest).await.unwrap();
        let pre = Precondition::Revision(k0.unwrap().revision);
        let (x, y) = tokio::join!(
            a.write(put("g/r/n/k000", "from a", pre)),
            b.write(put("g/r/n/k000", "from b", pre)),
        );
        let conflict = match (&x, &y) {
            (Ok(_), Err(e)) | (Err(e), Ok(_)) => e,
            _ => panic!("exactly one of two conflicting updates wins: {x:?} {y:?}"),
        };
        assert!(
            matches!(conflict, StorageError::Conflict { .. }),
            "{conflict:?}"
        );
        // The loser read the winner's write back before it failed; this one only `a`
        // makes: `b` sees it through its follower.
        a.write(put("g/r/n/last", "v", Precondition::Absent))
            .await
            .unwrap();
        // Every write, in order, once, on both replicas.
        for w in &mut watches {
            let mut seen = Vec::new();
            while seen.len() < 102 {
                let ev = tokio::time::timeout(Duration::from_secs(5), w.next())
                    .await
                    .expect("the other replica's writes arrive")
                    .unwrap();
                seen.push(ev.revision);
            }
            assert_eq!(seen, (1..=102).collect::<Vec<Revision>>());
        }
        // Reads at the latest revision agree, and come from each one's cache again.
        let (la, lb) = (
            a.list("g/", ReadAt::Latest, None, 0, false).await.unwrap(),
            b.list("g/", ReadAt::Latest, None, 0, false).await.unwrap(),
        );
        assert_eq!((la.revision, la.items.len()), (102, 101));
        assert_eq!((lb.revision, &lb.items), (102, &la.items));
        assert_eq!(b.cached_objects(), Some(101));
    }

    /// Writers on two stores over one engine at once, as two replicas under load: every
    /// commit of both writes the revision counter, so their batches conflict in the engine
    /// (as over TiKV), and the stores must retry until each write lands, not fail it
    /// (issue 28, item 1: "valid writes must not fail because another replica is
    /// writing"). Revisions stay unique and gapless, and each store's watch sees every
    /// write in revision order.
    pub async fn store_replicas_writing_at_once_all_succeed(f: &dyn EngineFactory) {
        const WRITERS: usize = 8;
        const EACH: usize = 40;
        let opts = StoreOptions {
            follow_every: Some(Duration::from_millis(10)),
            ..StoreOptions::default()
        };
        // Commits that take as long as TiKV's two network round trips keep each store's
        // transaction open long enough for the other's to land meanwhile.
        let place = Place::new();
        let engine: Arc<dyn Engine> = Arc::new(SlowCommits {
            inner: f.open(place.path()).await,
            delay: Duration::from_millis(3),
        });
        let a = Store::open(engine.clone(), opts.clone()).await.unwrap();
        let b = Store::open(engine, opts).await.unwrap();
        let mut watches = [a.watch("g/", 0).unwrap(), b.watch("g/", 0).unwrap()];
        let mut writers = tokio::task::JoinSet::new();
        for (name, s) in [("a", &a), ("b", &b)] {
            for w in 0..WRITERS {
                let s = s.clone();
                writers.spawn(async move {
                    let mut out = Vec::new();
                    for i in 0..EACH {
                        let key = format!("g/r/n/{name}-{w}-{i}");
                        out.push(s.write(put(&key, "v", Precondition::Absent)).await);
                    }
                    out
                });
            }
        }
        let results: Vec<_> = writers.join_all().await.into_iter().flatten().collect();
        let total = 2 * WRITERS * EACH;
        let conflicts = a.stats().conflicts + b.stats().conflicts;
        let failed: Vec<String> = results
            .iter()
            .filter_map(|r| r.as_ref().err().map(|e| format!("{e:?}")))
            .collect();
        assert!(
            failed.is_empty(),
            "{} of {total} writes failed, the first: {:?}",
            failed.len(),
            failed.first()
        );
        assert!(conflicts > 0, "the stores' commits met in the engine");
        let mut revs: Vec<Revision> = results.into_iter().map(|r| r.unwrap().revision).collect();
        revs.sort_unstable();
        assert_eq!(
            revs,
            (1..=total as Revision).collect::<Vec<_>>(),
            "unique, no gap"
        );
        for w in &mut watches {
            let mut seen = Vec::new();
            while seen.len() < total {
                let ev = tokio::time::timeout(Duration::from_secs(10), w.next())
                    .await
                    .expect("every write arrives")
                    .unwrap();
                seen.push(ev.revision);
            }
            assert_eq!(
                seen,
                (1..=total as Revision).collect::<Vec<_>>(),
                "in order"
            );
        }
    }

    /// An engine whose commits take `delay` longer, as over a network.
    struct SlowCommits {
        inner: Arc<dyn Engine>,
        delay: Duration,
    }

    #[async_trait::async_trait]
    impl Engine for SlowCommits {
        fn name(&self) -> &'static str {
            self.inner.name()
        }
        async fn snapshot(&self) -> Result<Box<dyn Snapshot>, EngineError> {
            self.inner.snapshot().await
        }
        async fn begin(&self) -> Result<Box<dyn Transaction>, EngineError> {
            Ok(Box::new(SlowCommit {
                inner: self.inner.begin().await?,
                delay: self.delay,
            }))
        }
        fn blocking_commits(&self) -> bool {
            self.inner.blocking_commits()
        }
    }

    struct SlowCommit {
        inner: Box<dyn Transaction>,
        delay: Duration,
    }

    #[async_trait::async_trait]
    impl Transaction for SlowCommit {
        async fn get(&mut self, key: &[u8]) -> Result<Option<Bytes>, EngineError> {
            self.inner.get(key).await
        }
        fn put(&mut self, key: Vec<u8>, value: Bytes) {
            self.inner.put(key, value);
        }
        fn delete(&mut self, key: Vec<u8>) {
            self.inner.delete(key);
        }
        async fn commit(self: Box<Self>) -> Result<(), EngineError> {
            tokio::time::sleep(self.delay).await;
            self.inner.commit().await
        }
    }

    /// Of the stores sharing an engine, one at a time holds a lease; it renews it, and
    /// another takes it only once it expired unrenewed (issue 10: compaction on one
    /// replica at a time).
    pub async fn store_lease_has_one_holder_at_a_time(f: &dyn EngineFactory) {
        let (_place, a, b) = two_stores(f, StoreOptions::default()).await;
        // Margins of 400 ms or more around every expiry, for loaded machines.
        let ttl = Duration::from_millis(1000);
        assert!(a.lease("job", ttl).await.unwrap());
        assert!(!b.lease("job", ttl).await.unwrap(), "held by a");
        assert!(
            b.lease("other", ttl).await.unwrap(),
            "leases are independent"
        );
        assert!(a.lease("job", ttl).await.unwrap(), "the holder renews");
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert!(a.lease("job", ttl).await.unwrap());
        tokio::time::sleep(Duration::from_millis(600)).await;
        assert!(!b.lease("job", ttl).await.unwrap(), "renewed 600 ms ago");
        tokio::time::sleep(Duration::from_millis(1000)).await;
        assert!(
            b.lease("job", ttl).await.unwrap(),
            "expired unrenewed: b takes it"
        );
        assert!(!a.lease("job", ttl).await.unwrap(), "a lost it");
        // Racing for a free lease: exactly one wins.
        let (x, y) = tokio::join!(a.lease("race", ttl), b.lease("race", ttl));
        assert_eq!(u8::from(x.unwrap()) + u8::from(y.unwrap()), 1);
    }

    pub async fn store_reopen_keeps_data_and_revision(f: &dyn EngineFactory) {
        if !f.persistent() {
            eprintln!("skipped: engine is not persistent");
            return;
        }
        let place = Place::new();
        let (rev, first) = {
            let s = open_store(f, &place, StoreOptions::default()).await;
            let first = s
                .write(put("g/r/n/a", "1", Precondition::Absent))
                .await
                .unwrap()
                .revision;
            s.write(put("g/r/n/b", "2", Precondition::Absent))
                .await
                .unwrap();
            (s.revision(), first)
        };
        // Let the committer task of the dropped store wind down and release the engine.
        tokio::time::sleep(Duration::from_millis(50)).await;
        let s = open_store(f, &place, StoreOptions::default()).await;
        assert_eq!(s.revision(), rev);
        let c = s
            .write(put("g/r/n/c", "3", Precondition::Absent))
            .await
            .unwrap();
        assert_eq!(c.revision, rev + 1);
        let mut w = s.watch("g/r/", first - 1).unwrap();
        let keys_seen: Vec<String> = {
            let mut v = Vec::new();
            for _ in 0..3 {
                v.push(w.next().await.unwrap().key.clone());
            }
            v
        };
        assert_eq!(keys_seen, vec!["g/r/n/a", "g/r/n/b", "g/r/n/c"]);
    }

    // What lies in the engine: sealed and compressed values.
    mod at_rest;
    pub use at_rest::*;
}
