//! Store cases about several stores over one engine (replicas): shared revisions, writers
//! at once, one lease holder.

use super::*;

/// Two stores over one engine, as two gateway replicas over one TiKV cluster
/// (issue 10, replica mode): revisions unique across them, a conflicting
/// update through each gets exactly one conflict (the loser's revision is marked skipped
/// in the log), and each one's watchers and reads see the other's writes, in one order
/// (its follower reads them from the change log).
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
    let (won, conflict) = match (&x, &y) {
        (Ok(c), Err(e)) | (Err(e), Ok(c)) => (c.revision, e),
        _ => panic!("exactly one of two conflicting updates wins: {x:?} {y:?}"),
    };
    assert!(
        matches!(conflict, StorageError::Conflict { .. }),
        "{conflict:?}"
    );
    // The loser read the winner's write back before it failed; this one only `a`
    // makes: `b` sees it through its follower.
    let last = a
        .write(put("g/r/n/last", "v", Precondition::Absent))
        .await
        .unwrap()
        .revision;
    let mut expected: Vec<Revision> = (1..=100).collect();
    expected.extend([won, last]);
    assert!(100 < won && won < last, "{won} {last}");
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
        assert_eq!(seen, expected);
    }
    // Reads at the latest revision agree, and come from each one's cache again.
    let (la, lb) = (
        a.list("g/", ReadAt::Latest, None, 0, false).await.unwrap(),
        b.list("g/", ReadAt::Latest, None, 0, false).await.unwrap(),
    );
    assert_eq!((la.revision, la.items.len()), (last, 101));
    assert_eq!((lb.revision, &lb.items), (last, &la.items));
    assert_eq!(b.cached_objects(), Some(101));
}

/// Writers on two stores over one engine at once, as two replicas under load (issue 28,
/// item 1): no write fails, and the stores' commits (almost) never conflict in the engine
/// (they write no common key once a store knows another writes: revisions are taken
/// beside the batch, not counted in a key every commit writes, where each batch of one
/// store used to conflict with the other's as over TiKV). Revisions stay unique and gapless, and each store's watch sees every
/// write in revision order, though the commits land out of it.
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
    // None where the engine hands out revisions without a transaction (the embedded
    // engine's counter); over `m/next` (TiKV), one when a store first meets the other and
    // about one a second after, against one per batch before.
    let commits = a.stats().commits + b.stats().commits;
    assert!(
        conflicts * 10 <= commits,
        "{conflicts} conflicts in {commits} commits: the stores' batches met in the engine"
    );
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
    async fn allocate(&self, n: u64) -> Result<u64, EngineError> {
        self.inner.allocate(n).await
    }
    async fn allocate_in(
        &self,
        txn: &mut dyn Transaction,
        n: u64,
    ) -> Result<Option<u64>, EngineError> {
        self.inner.allocate_in(txn, n).await
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

/// Issue 28: two stores commit side by side, so a higher revision can land before a lower
/// one. Store `b`'s write, handed the revision after `a`'s slow one, lands first, yet is
/// acknowledged only once `a`'s has landed; every read after it (on `b`) sees `a`'s, and
/// `b`'s watchers get the two in revision order.
pub async fn store_replicas_publish_in_revision_order(f: &dyn EngineFactory) {
    let place = Place::new();
    let engine = f.open(place.path()).await;
    let slow: Arc<dyn Engine> = Arc::new(SlowCommits {
        inner: engine.clone(),
        delay: Duration::from_millis(400),
    });
    let a = Store::open(slow, StoreOptions::default()).await.unwrap();
    let b = Store::open(engine, StoreOptions::default()).await.unwrap();
    let mut watch = b.watch("g/", 0).unwrap();
    let from_a = {
        let a = a.clone();
        tokio::spawn(async move {
            a.write(put("g/r/n/from-a", "a", Precondition::Absent))
                .await
                .unwrap()
        })
    };
    // `a` has taken its revision and is committing.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while a.queued() > 0 {
        assert!(tokio::time::Instant::now() < deadline);
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    let from_b = b
        .write(put("g/r/n/from-b", "b", Precondition::Absent))
        .await
        .unwrap();
    assert!(
        from_a.is_finished() || a.stats().commits == 1,
        "acknowledged before the lower revision landed"
    );
    let (_, seen) = b.get("g/r/n/from-a", ReadAt::Latest).await.unwrap();
    let from_a = from_a.await.unwrap();
    assert_eq!(
        (from_a.revision, from_b.revision),
        (1, 2),
        "handed out in the order the writes came"
    );
    assert_eq!(
        seen.map(|v| v.revision),
        Some(1),
        "b's read after its write"
    );
    for want in [1, 2] {
        let ev = tokio::time::timeout(Duration::from_secs(5), watch.next())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(ev.revision, want);
    }
}

/// Issue 28: revisions a writer took and never wrote (a replica killed mid-commit) hold
/// the others' writes back only for a while: then they are marked skipped, the writes go
/// on, reads and watchers pass over them, and a late commit of them loses.
pub async fn store_revisions_a_stopped_writer_left_are_skipped(f: &dyn EngineFactory) {
    let place = Place::new();
    let engine = f.open(place.path()).await;
    let s = Store::open(engine.clone(), StoreOptions::default())
        .await
        .unwrap();
    s.write(put("g/r/n/before", "v", Precondition::Absent))
        .await
        .unwrap();
    let mut watch = s.watch("g/", 1).unwrap();
    // The stopped writer: its transaction began, took three revisions and never commits.
    let mut late = engine.begin().await.unwrap();
    let lost = engine.allocate(3).await.unwrap();
    late.put(
        keys::log(lost),
        keys::encode_log(keys::TAG_PUT, 0, "g/r/n/late"),
    );
    late.put(
        keys::current("g/r/n/late"),
        keys::encode_current(lost, b"late"),
    );
    let started = tokio::time::Instant::now();
    let after = s
        .write(put("g/r/n/after", "v", Precondition::Absent))
        .await
        .unwrap();
    assert_eq!(after.revision, lost + 3);
    assert!(
        started.elapsed() >= crate::follow::SKIP_AFTER,
        "waited for the lower revisions first"
    );
    let ev = tokio::time::timeout(Duration::from_secs(5), watch.next())
        .await
        .unwrap()
        .unwrap();
    assert_eq!((ev.revision, ev.key.as_str()), (lost + 3, "g/r/n/after"));
    assert_eq!(s.revision(), lost + 3);
    let late = late.commit().await;
    assert!(matches!(late, Err(EngineError::Conflict)), "{late:?}");
    // Reads at a skipped revision see the state before it; a watch from the past passes
    // over the skipped ones; a store opened now starts after them.
    let page = s
        .list("g/", ReadAt::Exact(lost + 1), None, 0, false)
        .await
        .unwrap();
    let keys: Vec<&str> = page.items.iter().map(|v| v.key.as_str()).collect();
    assert_eq!(keys, ["g/r/n/before"]);
    let mut from_start = s.watch("g/", 0).unwrap();
    let mut revs = Vec::new();
    for _ in 0..2 {
        revs.push(from_start.next().await.unwrap().revision);
    }
    assert_eq!(revs, [1, lost + 3]);
    let t = Store::open(engine, StoreOptions::default()).await.unwrap();
    assert_eq!(t.revision(), lost + 3);
    assert!(
        t.get("g/r/n/late", ReadAt::Latest)
            .await
            .unwrap()
            .1
            .is_none()
    );
}
