//! Engine cases: what every engine must do (the store relies on each).

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
                    let n =
                        keys::decode_u64(b"ctr", t.get(b"ctr").await.unwrap().as_ref()).unwrap();
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

/// An engine's transactions and snapshots, with the default revision allocation (a
/// transaction on `m/next`, or a part of one), as the TiKV engine allocates.
struct Defaults(Arc<dyn Engine>);

#[async_trait::async_trait]
impl Engine for Defaults {
    fn name(&self) -> &'static str {
        self.0.name()
    }
    async fn snapshot(&self) -> Result<Box<dyn Snapshot>, EngineError> {
        self.0.snapshot().await
    }
    async fn begin(&self) -> Result<Box<dyn Transaction>, EngineError> {
        self.0.begin().await
    }
}

/// Takes revisions from `e`, retrying a conflict as the store's committer does, every
/// other call inside a transaction that commits a write of its own (`allocate_in`) when
/// the engine counts that way: `(first, n)` per call.
async fn allocations(e: Arc<dyn Engine>, calls: u64) -> Vec<(Revision, u64)> {
    let mut out = Vec::new();
    for i in 0..calls {
        let n = 1 + i % 4;
        loop {
            let mut t = e.begin().await.unwrap();
            let inline = if i % 2 == 1 {
                e.allocate_in(t.as_mut(), n).await.unwrap()
            } else {
                None
            };
            let r = match inline {
                Some(first) => {
                    t.put(
                        format!("alloc/{first}").into_bytes(),
                        Bytes::from_static(b"x"),
                    );
                    t.commit().await.map(|()| first)
                }
                None => e.allocate(n).await,
            };
            match r {
                Ok(first) => break out.push((first, n)),
                Err(EngineError::Conflict) => tokio::task::yield_now().await,
                Err(other) => panic!("{other:?}"),
            }
        }
    }
    out
}

/// Issue 28: revisions are handed out by the engine, to several stores at once, each
/// once, above every revision committed (also after a reopen, from the change log the
/// stores wrote); both the engine's own way and the default, a transaction on `m/next` or
/// a part of the batch's (what the TiKV engine uses).
pub async fn engine_hands_out_each_revision_once(f: &dyn EngineFactory) {
    for defaults in [false, true] {
        let place = Place::new();
        let own = f.open(place.path()).await;
        let e: Arc<dyn Engine> = if defaults {
            Arc::new(Defaults(own))
        } else {
            own
        };
        let mut tasks = tokio::task::JoinSet::new();
        for _ in 0..4 {
            tasks.spawn(allocations(e.clone(), 25));
        }
        let mut ranges: Vec<(Revision, u64)> = tasks.join_all().await.concat();
        ranges.sort_unstable();
        assert_eq!(ranges[0].0, 1, "an empty engine starts at 1");
        for pair in ranges.windows(2) {
            let ((a, n), (b, _)) = (pair[0], pair[1]);
            assert!(a + n <= b, "{defaults}: {a}+{n} overlaps {b}");
        }
        // A store commits the log entry of each revision it uses.
        let (last, n) = *ranges.last().unwrap();
        let top = last + n - 1;
        let mut t = e.begin().await.unwrap();
        t.put(
            keys::log(top),
            keys::encode_log(keys::TAG_PUT, 0, "g/r/n/x"),
        );
        t.commit().await.unwrap();
        assert!(allocations(e.clone(), 1).await[0].0 > top);
        if f.persistent() {
            drop(e);
            let own = f.open(place.path()).await;
            let e: Arc<dyn Engine> = if defaults {
                Arc::new(Defaults(own))
            } else {
                own
            };
            let (next, _) = allocations(e, 1).await[0];
            assert!(
                next > top,
                "{defaults}: {next} after reopen, {top} committed"
            );
        }
    }
}
