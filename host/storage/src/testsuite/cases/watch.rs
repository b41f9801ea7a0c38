//! Store cases about watches: every event once, in order, from any past revision kept.

use super::*;

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
