//! Store cases about the object cache: it answers as the engine does, and is not used
//! behind it.

use super::*;

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
    let key = |a: u64, b: u64| format!("g/{}/n{}/k{:02}", ["r", "s"][(a % 2) as usize], a % 3, b);
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
