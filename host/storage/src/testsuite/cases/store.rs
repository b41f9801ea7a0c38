//! Store cases about revisions, preconditions and guards, reads at past revisions, lists,
//! compaction, group commit and reopening.

use super::*;

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
    assert!(
        matches!(&results[3], Err(StorageError::Conflict { key, expected: 0, actual })
            if key == n2 && *actual == base + 3),
        "the guarded namespace was created earlier in the batch: {results:?}"
    );
    for (key, present) in [("g/r/n1/d", false), ("g/r/n2/f", false)] {
        let got = s.get(key, ReadAt::Latest).await.unwrap().1;
        assert_eq!(got.is_some(), present, "{key}");
    }
    assert_eq!(s.revision(), base + 3, "refused writes take no revision");
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

pub async fn store_compaction_discards_history_and_refuses_old_revisions(f: &dyn EngineFactory) {
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
