//! Store cases about several stores over one engine (replicas): shared revisions, writers
//! at once, one lease holder.

use super::*;

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
