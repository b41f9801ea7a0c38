//! Store cases about what lies in the engine: values sealed by a transformer, values
//! compressed.

use super::*;

/// Secrets encryption at rest (issue 12): the engine holds covered values only sealed
/// (current versions, history, tombstones); every read sees them in clear; a store
/// whose transformer moved on reads old values, calls them stale, and rewrites them.
pub async fn store_sealed_values_stay_sealed_at_rest(f: &dyn EngineFactory) {
    let place = Place::new();
    let engine = f.open(place.path()).await;
    let sealer = |version| StoreOptions {
        watch_ring: 1,
        transformer: Some(Arc::new(TestSealer { version })),
        ..StoreOptions::default()
    };
    let s = Store::open(engine.clone(), sealer(1)).await.unwrap();
    let r1 = s
        .write(put("s/r/n/a", "secret-1", Precondition::Absent))
        .await
        .unwrap()
        .revision;
    let r2 = s
        .write(put("s/r/n/a", "secret-2", Precondition::Revision(r1)))
        .await
        .unwrap()
        .revision;
    s.write(put("p/r/n/b", "plain-1", Precondition::Absent))
        .await
        .unwrap();
    s.write(put("s/r/n/c", "secret-c", Precondition::Absent))
        .await
        .unwrap();
    let r4 = s
        .write(del("s/r/n/a", Precondition::None))
        .await
        .unwrap()
        .revision;
    let raw = |engine: Arc<dyn Engine>| async move {
        let snap = engine.snapshot().await.unwrap();
        let all = snap.scan(b"", b"\xff", 10_000).await.unwrap();
        all.into_iter()
            .map(|(_, v)| String::from_utf8_lossy(&v).into_owned())
            .collect::<Vec<_>>()
            .join("|")
    };
    let stored = raw(engine.clone()).await;
    assert!(
        stored.contains("plain-1"),
        "uncovered values are as written"
    );
    for clear in ["secret-1", "secret-2", "secret-c", "deleted"] {
        assert!(!stored.contains(clear), "{clear} in clear in {stored:?}");
    }
    assert!(stored.contains(&"1-terces".to_string()));
    // Reads see them in clear: the past, the latest, watch history from the log.
    let value = |v: Option<crate::Versioned>| v.map(|v| v.value);
    let at = |r| s.get("s/r/n/a", ReadAt::Exact(r));
    assert_eq!(
        value(at(r1).await.unwrap().1),
        Some(Bytes::from("secret-1"))
    );
    assert_eq!(
        value(at(r2).await.unwrap().1),
        Some(Bytes::from("secret-2"))
    );
    assert_eq!(value(at(r4).await.unwrap().1), None);
    let mut w = s.watch("s/", 0).unwrap();
    let mut seen = Vec::new();
    for _ in 0..4 {
        seen.push(w.next().await.unwrap().value.clone());
    }
    assert_eq!(seen, ["secret-1", "secret-2", "secret-c", "deleted"]);
    assert!(!s.stale("s/r/n/c").await.unwrap());
    // Covered values are not compressed: how well a secret compresses would show in
    // the length of its ciphertext.
    let big = "s".repeat(4096);
    s.write(put("s/r/n/zbig", &big, Precondition::Absent))
        .await
        .unwrap();
    let stored = engine
        .snapshot()
        .await
        .unwrap()
        .get(b"c/s/r/n/zbig")
        .await
        .unwrap()
        .unwrap();
    assert!(stored.len() > big.len(), "{} bytes", stored.len());
    // (Gone again: below, a store without the transformer reads what lies in `c/`, and
    // this test's sealer writes a version byte where a real one writes `k8s:enc:`.)
    s.write(del("s/r/n/zbig", Precondition::None))
        .await
        .unwrap();

    // The transformer moves on (a new key first): old values read, and are stale
    // until written again. The cache was loaded through it.
    drop((s, w));
    let s2 = Store::open(engine.clone(), sealer(2)).await.unwrap();
    let (_, c) = s2.get("s/r/n/c", ReadAt::Latest).await.unwrap();
    let c = c.unwrap();
    assert_eq!(c.value, Bytes::from("secret-c"));
    assert!(s2.stale("s/r/n/c").await.unwrap());
    assert!(!s2.stale("p/r/n/b").await.unwrap(), "not covered");
    assert!(!s2.stale("s/r/n/absent").await.unwrap());
    s2.write(put(
        "s/r/n/c",
        "secret-c",
        Precondition::Revision(c.revision),
    ))
    .await
    .unwrap();
    assert!(!s2.stale("s/r/n/c").await.unwrap());
    let list = s2.list("s/", ReadAt::Latest, None, 0, false).await.unwrap();
    assert_eq!(list.items[0].value, Bytes::from("secret-c"));

    // Without the transformer the sealed bytes are all there is; with one that cannot
    // open them the store does not open, and says which key.
    drop(s2);
    let plain = Store::open(engine.clone(), StoreOptions::default())
        .await
        .unwrap();
    let (_, c) = plain.get("s/r/n/c", ReadAt::Latest).await.unwrap();
    assert_eq!(c.unwrap().value, Bytes::from("\x02c-terces"));
    drop(plain);
    let err = Store::open(engine, sealer(0)).await.unwrap_err();
    let mut chain = err.to_string();
    let mut cur = std::error::Error::source(&err);
    while let Some(c) = cur {
        chain = format!("{chain}: {c}");
        cur = c.source();
    }
    assert!(
        chain.contains("unable to transform key \"s/r/n/c\": sealed by a version after 0"),
        "{chain}"
    );
}

/// Object values lie in the engine compressed (issue 9, disk), compressed before the
/// revision is known, and read back whole with their revision in place: at the
/// latest revision, at a past one (moved to `k/` as they lay), from the watch
/// history, a tombstone's last state, and after a reopen (the cache loaded from
/// the engine).
pub async fn store_values_lie_compressed_and_read_whole(f: &dyn EngineFactory) {
    let place = Place::new();
    let engine = f.open(place.path()).await;
    let opts = StoreOptions {
        watch_ring: 1,
        ..StoreOptions::default()
    };
    let s = Store::open(engine.clone(), opts.clone()).await.unwrap();
    let body = |n: u32| {
        format!(
            r#"{{"metadata":{{"name":"a","resourceVersion":""}},"n":{n},"data":"{}"}}"#,
            "0123456789abcdef".repeat(64)
        )
    };
    let slot = body(0).find(r#""resourceVersion":""#).unwrap() + 19;
    let object = |n| Value::with_revision_slot(body(n), slot);
    let shown = |n: u32, rev: Revision| object(n).render(rev);
    let w = |n, pre| Write::new("r/x/n/a", pre, WriteOp::Put(object(n)));
    let r1 = s.write(w(1, Precondition::Absent)).await.unwrap().revision;
    let r2 = s
        .write(w(2, Precondition::Revision(r1)))
        .await
        .unwrap()
        .revision;
    let r3 = s
        .write(Write::new(
            "r/x/n/a",
            Precondition::None,
            WriteOp::Delete(object(3)),
        ))
        .await
        .unwrap()
        .revision;
    let r4 = s.write(w(4, Precondition::Absent)).await.unwrap().revision;
    // In the engine: every version much smaller than the value.
    let snap = engine.snapshot().await.unwrap();
    let stored = snap.scan(b"c/", b"l/", 100).await.unwrap();
    assert_eq!(stored.len(), 4, "c/ and three versions in k/");
    for (k, v) in &stored {
        assert!(
            v.len() * 4 < body(0).len(),
            "{} holds {} bytes for {}",
            String::from_utf8_lossy(k),
            v.len(),
            body(0).len()
        );
    }
    drop(snap);
    let at = |rev| s.get("r/x/n/a", ReadAt::Exact(rev));
    let value = |v: Option<crate::Versioned>| v.map(|v| v.value);
    assert_eq!(value(at(r1).await.unwrap().1), Some(shown(1, r1)));
    assert_eq!(value(at(r2).await.unwrap().1), Some(shown(2, r2)));
    assert_eq!(value(at(r3).await.unwrap().1), None);
    assert_eq!(value(at(r4).await.unwrap().1), Some(shown(4, r4)));
    let listed = s
        .list("r/", ReadAt::Exact(r2), None, 0, false)
        .await
        .unwrap();
    assert_eq!(listed.items[0].value, shown(2, r2));
    // The ring holds one event: the rest comes from the engine.
    let mut watch = s.watch("r/", 0).unwrap();
    let mut seen = Vec::new();
    for _ in 0..4 {
        let e = watch.next().await.unwrap();
        seen.push((e.revision, e.value.clone()));
    }
    assert_eq!(
        seen,
        [
            (r1, shown(1, r1)),
            (r2, shown(2, r2)),
            (r3, shown(3, r3)),
            (r4, shown(4, r4))
        ]
    );
    drop((s, watch));
    // Reopened without compression: what was written compressed reads the same, and
    // new values lie as they are.
    let s = Store::open(
        engine.clone(),
        StoreOptions {
            compress_values: false,
            ..opts
        },
    )
    .await
    .unwrap();
    let (_, latest) = s.get("r/x/n/a", ReadAt::Latest).await.unwrap();
    assert_eq!(value(latest), Some(shown(4, r4)));
    assert_eq!(value(at_store(&s, r2).await), Some(shown(2, r2)));
    let r5 = s
        .write(w(5, Precondition::Revision(r4)))
        .await
        .unwrap()
        .revision;
    let snap = engine.snapshot().await.unwrap();
    let current = snap.get(b"c/r/x/n/a").await.unwrap().unwrap();
    assert!(current.len() > body(5).len(), "stored as it is");
    assert_eq!(value(at_store(&s, r5).await), Some(shown(5, r5)));
    assert_eq!(value(at_store(&s, r4).await), Some(shown(4, r4)));
}

async fn at_store(s: &Store, rev: Revision) -> Option<crate::Versioned> {
    s.get("r/x/n/a", ReadAt::Exact(rev)).await.unwrap().1
}
