//! Crash safety of the embedded engine (STORE-01, STORE-02, WATCH-04, RV-01, UPD-01).
//!
//! Several writers create, patch, replace and delete ConfigMaps over HTTPS while a watcher
//! follows the namespace. Mid-load the gateway gets SIGKILL and is restarted on the same
//! data directory. Then:
//! * every acknowledged write is there (an object is at its last acknowledged
//!   resourceVersion, or at a later one written by the single write that was in flight
//!   at the kill), and every acknowledged delete stayed deleted;
//! * a watch resumed from the last resourceVersion the watcher saw before the kill
//!   delivers every later change exactly once, in strictly increasing resourceVersion
//!   order, so that the events before and after the kill together hold every
//!   acknowledged write once;
//! * the restarts after kills apply the write-ahead log (the writes since the last
//!   checkpoint), and the one after the graceful stop has nothing to apply.
//!
//! This runs a few rounds on one data directory; the last restart follows a graceful
//! SIGTERM stop instead of a kill.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use wasmgate_e2e::{Gateway, HttpClient, Storage, gateway_builder};
use wasmgate_storage_embedded::REPLAYED;

const NS: &str = "crash";
const WRITERS: usize = 6;
const ROUNDS: usize = 4;
/// Acknowledged writes in round r before the kill: 90 + 60 r (or the time limit below).
fn acks_before_kill(round: usize) -> usize {
    90 + 60 * round
}
const LOAD_LIMIT: Duration = Duration::from_secs(15);
const WAIT: Duration = Duration::from_secs(30);

fn collection() -> String {
    format!("/api/v1/namespaces/{NS}/configmaps")
}

/// What one write tried to do.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Op {
    Create(String),
    Update(String),
    Delete,
}

/// One write by one writer, and how it ended.
#[derive(Debug, Clone)]
struct Write {
    name: String,
    op: Op,
    /// `Some(rv)` when acknowledged (for deletes: `Some(0)`, the reply carries no
    /// revision of the delete); `None` when no reply came (the kill).
    acked: Option<u64>,
}

/// A watch event, reduced to what the checks need.
#[derive(Debug, Clone)]
struct Event {
    kind: String,
    name: String,
    rv: u64,
    value: Option<String>,
}

fn rv_of(obj: &Value) -> u64 {
    let rv = obj["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or_else(|| panic!("no resourceVersion in {obj}"));
    rv.parse()
        .unwrap_or_else(|_| panic!("resourceVersion {rv:?} is not a number"))
}

/// Parses watch lines. A partial last line (the stream was cut by the kill) is ignored.
fn parse_events(lines: &[String], cut: bool) -> Vec<Event> {
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let v: Value = match serde_json::from_str(line) {
            Ok(v) => v,
            Err(_) if cut && i + 1 == lines.len() => break,
            Err(e) => panic!("watch line {i} is not JSON ({e}): {line:?}"),
        };
        let kind = v["type"].as_str().unwrap_or_default().to_owned();
        assert_ne!(kind, "ERROR", "watch error event: {line}");
        if kind == "BOOKMARK" {
            continue;
        }
        assert!(
            ["ADDED", "MODIFIED", "DELETED"].contains(&kind.as_str()),
            "unexpected watch event {line}"
        );
        let obj = &v["object"];
        out.push(Event {
            kind,
            name: obj["metadata"]["name"]
                .as_str()
                .expect("event object has a name")
                .to_owned(),
            rv: rv_of(obj),
            value: obj["data"]["v"].as_str().map(str::to_owned),
        });
    }
    out
}

/// One writer: objects `r{round}-w{id}-{n}`, each created, merge-patched, replaced with
/// its resourceVersion as a precondition, and every third one deleted. Stops at the first
/// request without a reply; any reply other than success is a test failure.
fn writer(
    client: HttpClient,
    round: usize,
    id: usize,
    acks: &AtomicUsize,
    stop: &AtomicBool,
) -> Vec<Write> {
    let mut log = Vec::new();
    for n in 0.. {
        let name = format!("r{round}-w{id}-{n}");
        let item = format!("{}/{name}", collection());
        let mut last_rv = 0;
        let mut steps: Vec<Op> = vec![
            Op::Create(format!("{name}-a")),
            Op::Update(format!("{name}-b")),
            Op::Update(format!("{name}-c")),
        ];
        if n % 3 == 2 {
            steps.push(Op::Delete);
        }
        for (step, op) in steps.into_iter().enumerate() {
            if stop.load(Ordering::SeqCst) {
                return log;
            }
            let reply = match &op {
                Op::Create(v) => client.try_request(
                    "POST",
                    &collection(),
                    "application/json",
                    Some(
                        &json!({"apiVersion": "v1", "kind": "ConfigMap",
                                "metadata": {"name": name}, "data": {"v": v}})
                        .to_string(),
                    ),
                ),
                Op::Update(v) if step == 1 => client.try_request(
                    "PATCH",
                    &item,
                    "application/merge-patch+json",
                    Some(&json!({"data": {"v": v}}).to_string()),
                ),
                Op::Update(v) => client.try_request(
                    "PUT",
                    &item,
                    "application/json",
                    Some(
                        &json!({"apiVersion": "v1", "kind": "ConfigMap",
                                "metadata": {"name": name, "resourceVersion": last_rv.to_string()},
                                "data": {"v": v}})
                        .to_string(),
                    ),
                ),
                Op::Delete => client.try_request("DELETE", &item, "application/json", None),
            };
            let reply = match reply {
                Ok(r) => r,
                Err(_) => {
                    // No reply: the gateway is gone. The outcome of this write is unknown.
                    log.push(Write {
                        name,
                        op,
                        acked: None,
                    });
                    return log;
                }
            };
            assert!(
                (200..300).contains(&reply.status),
                "{op:?} {name}: HTTP {} {}",
                reply.status,
                reply.body
            );
            let rv = match op {
                Op::Delete => 0,
                _ => rv_of(&reply.json()),
            };
            if rv != 0 {
                assert!(rv > last_rv, "{name}: rv {rv} after {last_rv}");
                last_rv = rv;
            }
            log.push(Write {
                name: name.clone(),
                op,
                acked: Some(rv),
            });
            acks.fetch_add(1, Ordering::SeqCst);
        }
    }
    log
}

fn start(data: &std::path::Path) -> Gateway {
    gateway_builder!()
        .storage(Storage::Embedded)
        .data_dir(data)
        .start()
}

/// The objects of the namespace: name -> (rv, value), and the list's resourceVersion.
fn list(client: &HttpClient) -> (BTreeMap<String, (u64, Option<String>)>, u64) {
    let l = client.get(&collection()).expect_status(200);
    let items = l["items"]
        .as_array()
        .expect("list has items")
        .iter()
        .map(|o| {
            (
                o["metadata"]["name"]
                    .as_str()
                    .expect("item has a name")
                    .to_owned(),
                (rv_of(o), o["data"]["v"].as_str().map(str::to_owned)),
            )
        })
        .collect();
    (items, rv_of(&l))
}

/// Every acknowledged write survived: each object is in the state of its last
/// acknowledged write, or of the one write in flight at the kill (STORE-01).
fn check_state(writes: &[Write], objects: &BTreeMap<String, (u64, Option<String>)>) {
    let mut by_name: BTreeMap<&str, Vec<&Write>> = BTreeMap::new();
    for w in writes {
        by_name.entry(&w.name).or_default().push(w);
    }
    for (name, ws) in &by_name {
        let acked: Vec<&&Write> = ws.iter().filter(|w| w.acked.is_some()).collect();
        let in_flight = ws.iter().find(|w| w.acked.is_none());
        let actual = objects.get(*name);
        let last = acked.last();
        // The state after the last acknowledged write.
        let acked_state: Option<(u64, &str)> = match last.map(|w| (&w.op, w.acked)) {
            None | Some((Op::Delete, _)) => None,
            Some((Op::Create(v) | Op::Update(v), Some(rv))) => Some((rv, v)),
            Some((_, None)) => unreachable!(),
        };
        let matches_acked = match (actual, acked_state) {
            (None, None) => true,
            (Some((rv, v)), Some((arv, av))) => *rv == arv && v.as_deref() == Some(av),
            _ => false,
        };
        let matches_in_flight = match (in_flight.map(|w| &w.op), actual) {
            (Some(Op::Delete), None) => true,
            (Some(Op::Create(iv) | Op::Update(iv)), Some((rv, v))) => {
                v.as_deref() == Some(iv.as_str()) && acked_state.is_none_or(|(arv, _)| *rv > arv)
            }
            _ => false,
        };
        assert!(
            matches_acked || matches_in_flight,
            "{name}: after restart {actual:?}; last acknowledged write {last:?}, in flight {in_flight:?}"
        );
    }
    // Nothing that nobody wrote.
    for name in objects.keys() {
        assert!(
            by_name.contains_key(name.as_str()),
            "unexpected object {name} after restart"
        );
    }
}

/// Resumes a watch from `last_seen` (the last revision a watcher got before the kill,
/// `before` its events since `start_rv`) on the restarted gateway and checks that the
/// events before and after together hold every write of the round exactly once, in
/// strictly increasing order (WATCH-04). Returns the number of events checked.
fn check_resumed_watch(
    client: &HttpClient,
    round: usize,
    writes: &[Write],
    objects: &BTreeMap<String, (u64, Option<String>)>,
    start_rv: u64,
    before: &[Event],
    last_seen: u64,
) -> usize {
    // Expected after last_seen: every acknowledged create/update, a DELETED for every
    // delete not seen yet (acknowledged, or in flight and committed: the object is gone),
    // and the current revision of every object of the round changed after last_seen
    // (covers a write in flight that committed).
    let mut expected: Vec<(String, u64)> = writes
        .iter()
        .filter_map(|w| match (&w.op, w.acked) {
            (Op::Create(_) | Op::Update(_), Some(rv)) if rv > last_seen => {
                Some((w.name.clone(), rv))
            }
            _ => None,
        })
        .collect();
    let prefix = format!("r{round}-");
    expected.extend(
        objects
            .iter()
            .filter(|(n, (rv, _))| n.starts_with(&prefix) && *rv > last_seen)
            .map(|(n, (rv, _))| (n.clone(), *rv)),
    );
    let deleted_before: Vec<&str> = before
        .iter()
        .filter(|e| e.kind == "DELETED")
        .map(|e| e.name.as_str())
        .collect();
    let expected_deletes: Vec<&str> = writes
        .iter()
        .filter(|w| w.op == Op::Delete && (w.acked.is_some() || !objects.contains_key(&w.name)))
        .map(|w| w.name.as_str())
        .filter(|n| !deleted_before.contains(n))
        .collect();
    let mut stream = client.stream(&format!(
        "{}?watch=1&resourceVersion={last_seen}",
        collection()
    ));
    let lines = stream.wait_for_lines(
        &format!("the watch resumed from {last_seen} to catch up"),
        WAIT,
        |lines| {
            let events = parse_events(lines, true);
            expected
                .iter()
                .all(|(n, rv)| events.iter().any(|e| &e.name == n && e.rv == *rv))
                && expected_deletes
                    .iter()
                    .all(|n| events.iter().any(|e| e.name == *n && e.kind == "DELETED"))
        },
    );
    stream.kill();
    let resumed = parse_events(&lines, true);

    // Strictly increasing and all after last_seen: no duplicates, nothing replayed.
    let mut prev = last_seen;
    for e in &resumed {
        assert!(
            e.rv > prev,
            "round {round}: watch resumed from {last_seen} sent rv {} after {prev}: {e:?}",
            e.rv
        );
        prev = e.rv;
    }
    let mut prev = start_rv;
    for e in before {
        assert!(
            e.rv > prev,
            "round {round}: watch before the kill sent rv {} after {prev}",
            e.rv
        );
        prev = e.rv;
    }
    // Before + after the kill: every acknowledged create/update exactly once, with the
    // value that was written.
    let mut seen: HashMap<(&str, u64), &Event> = HashMap::new();
    for e in before.iter().chain(&resumed) {
        assert!(
            seen.insert((e.name.as_str(), e.rv), e).is_none(),
            "round {round}: duplicate event {e:?} (resumed from {last_seen})"
        );
    }
    for w in writes {
        let (v, rv) = match (&w.op, w.acked) {
            (Op::Create(v) | Op::Update(v), Some(rv)) => (v, rv),
            _ => continue,
        };
        let Some(e) = seen.get(&(w.name.as_str(), rv)) else {
            panic!(
                "round {round}: no watch event for acknowledged write {w:?} (resumed from {last_seen})"
            )
        };
        assert_eq!(e.value.as_deref(), Some(v.as_str()), "{w:?} vs {e:?}");
        let want = if matches!(w.op, Op::Create(_)) {
            "ADDED"
        } else {
            "MODIFIED"
        };
        assert_eq!(e.kind, want, "{w:?} vs {e:?}");
    }
    before.len() + resumed.len()
}

#[test]
fn kill_during_writes_loses_no_acknowledged_write_and_watch_resumes_without_gaps() {
    let data = tempfile::tempdir().unwrap();
    let mut gw = start(data.path());
    gw.request(
        "POST",
        "/api/v1/namespaces",
        "application/json",
        Some(
            &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}).to_string(),
        ),
    )
    .expect_status(201);
    let mut all_writes: Vec<Write> = Vec::new();
    let mut total_events = 0;
    let mut replays = 0;

    for round in 0..ROUNDS {
        let client = gw.client();
        let (_, start_rv) = list(&client);
        let watch_path = format!("{}?watch=1&resourceVersion={start_rv}", collection());
        // One watcher follows until the kill; another disconnects after a third of the
        // load, so that its resumed watch has to replay writes from before the crash.
        let mut follower = client.stream(&watch_path);
        let mut early = client.stream(&watch_path);
        let mut early_lines = None;

        // Load, then SIGKILL mid-load.
        let target = acks_before_kill(round);
        let acks = AtomicUsize::new(0);
        let stop = AtomicBool::new(false);
        let began = Instant::now();
        let writes: Vec<Write> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..WRITERS)
                .map(|id| {
                    let client = client.clone();
                    let (acks, stop) = (&acks, &stop);
                    s.spawn(move || writer(client, round, id, acks, stop))
                })
                .collect();
            // (A writer that ends early has failed an assertion: join reports it.)
            while acks.load(Ordering::SeqCst) < target
                && began.elapsed() < LOAD_LIMIT
                && !handles.iter().any(|h| h.is_finished())
            {
                if early_lines.is_none() && acks.load(Ordering::SeqCst) >= target / 3 {
                    early_lines = Some(early.kill());
                }
                std::thread::sleep(Duration::from_millis(5));
            }
            gw.kill();
            stop.store(true, Ordering::SeqCst);
            handles
                .into_iter()
                .flat_map(|h| h.join().unwrap())
                .collect()
        });
        let acked = writes.iter().filter(|w| w.acked.is_some()).count();
        assert!(
            acked >= WRITERS,
            "round {round}: only {acked} acknowledged writes"
        );
        let followed = parse_events(&follower.kill(), true);
        let cut = parse_events(&early_lines.unwrap_or_else(|| early.kill()), true);
        all_writes.extend(writes.iter().cloned());

        // Restart on the same data directory (STORE-01).
        drop(gw);
        gw = start(data.path());
        // The writes since the last checkpoint come back from the write-ahead log.
        if gw.stderr_tail(200).contains(REPLAYED) {
            replays += 1;
        }
        let client = gw.client();
        let (objects, _) = list(&client);
        check_state(&all_writes, &objects);

        for (what, before) in [("follower", &followed), ("early", &cut)] {
            let last_seen = before.last().map_or(start_rv, |e| e.rv);
            eprintln!(
                "round {round}: {acked} acknowledged writes in {:?}, {} in flight; {what} watcher saw {} events up to rv {last_seen}",
                began.elapsed(),
                writes.len() - acked,
                before.len()
            );
            total_events += check_resumed_watch(
                &client, round, &writes, &objects, start_rv, before, last_seen,
            );
        }
    }

    // A kill mid-load lands between checkpoints (once a second) all but by chance.
    assert!(
        replays > 0,
        "no restart after a kill applied the write-ahead log again"
    );

    // Finally a graceful stop (SIGTERM) and restart: the same state.
    let client = gw.client();
    let (objects, rv) = list(&client);
    let status = gw.stop().unwrap();
    assert!(
        status.success(),
        "wasmgate exited with {status} after SIGTERM"
    );
    drop(gw);
    let gw = start(data.path());
    assert!(
        !gw.stderr_tail(200).contains(REPLAYED),
        "a graceful stop left writes in the write-ahead log"
    );
    let (after, rv_after) = list(&gw.client());
    assert_eq!(after, objects, "state changed across a graceful restart");
    assert!(
        rv_after >= rv,
        "list resourceVersion went back: {rv} -> {rv_after}"
    );
    check_state(&all_writes, &after);
    // The store still takes writes after all the restarts, at a newer revision.
    let created = gw
        .request(
            "POST",
            &collection(),
            "application/json",
            Some(
                &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "after"}})
                    .to_string(),
            ),
        )
        .expect_status(201);
    assert!(rv_of(&created) > rv_after);
    eprintln!(
        "{} writes ({} acknowledged), {total_events} watch events checked, the write-ahead \
         log applied again after {replays} of {ROUNDS} kills",
        all_writes.len(),
        all_writes.iter().filter(|w| w.acked.is_some()).count()
    );
}
