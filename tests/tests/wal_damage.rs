//! A damaged write-ahead log is not a torn one (ISSUE-24.1, STORE-01, RV-01).
//!
//! The gateway takes writes, gets SIGKILL, and its `store.wal` is then changed the way a
//! disk can change it:
//! * one byte flipped inside a record that has whole records after it: the gateway must
//!   refuse to start (naming the file, the offset and the record), `wasmgate repair`
//!   accepts the loss and says what it dropped, and afterwards no resourceVersion handed
//!   out before the kill is handed out again;
//! * the last record cut short (what a crash during its write leaves): the gateway starts
//!   with the records before it and logs the cut.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use serde_json::{Value, json};
use wasmgate_e2e::{Gateway, HttpClient, Storage, gateway_builder};

const NS: &str = "wal";

fn builder(data: &Path) -> wasmgate_e2e::GatewayBuilder {
    gateway_builder!().storage(Storage::Embedded).data_dir(data)
}

fn rv_of(obj: &Value) -> u64 {
    obj["metadata"]["resourceVersion"]
        .as_str()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no resourceVersion in {obj}"))
}

fn create(client: &HttpClient, name: &str) -> u64 {
    let body = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}});
    rv_of(
        &client
            .request(
                "POST",
                &format!("/api/v1/namespaces/{NS}/configmaps"),
                "application/json",
                Some(&body.to_string()),
            )
            .expect_status(201),
    )
}

fn exists(client: &HttpClient, name: &str) -> bool {
    let reply = client.get(&format!("/api/v1/namespaces/{NS}/configmaps/{name}"));
    match reply.status {
        200 => true,
        404 => false,
        s => panic!("GET {name}: {s}"),
    }
}

/// Starts a gateway, writes, lets the log be emptied once, then makes `last` creates in
/// a row (one log record each, none emptied) and kills it. Returns the highest
/// resourceVersion acknowledged.
fn write_then_kill(data: &Path, last: usize) -> u64 {
    let mut gw: Gateway = builder(data).start();
    gw.request(
        "POST",
        "/api/v1/namespaces",
        "application/json",
        Some(
            &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}).to_string(),
        ),
    )
    .expect_status(201);
    let client = gw.client();
    std::thread::scope(|s| {
        for w in 0..4 {
            let client = client.clone();
            s.spawn(move || {
                for n in 0..40 {
                    create(&client, &format!("load-{w}-{n}"));
                }
            });
        }
    });
    // The log is emptied by the first commit once its oldest record is a second old.
    std::thread::sleep(Duration::from_millis(1200));
    let mut max_rv = create(&client, "emptied");
    for n in 0..last {
        max_rv = max_rv.max(create(&client, &format!("last-{n}")));
    }
    gw.kill();
    max_rv
}

/// The offsets of the records a log holds from its start (`len`, `crc`, body), up to
/// its end marker.
fn record_offsets(log: &[u8]) -> Vec<usize> {
    let mut offsets = Vec::new();
    let mut at = 0;
    while let Some(h) = log.get(at..at + 4) {
        let len = u32::from_le_bytes([h[0], h[1], h[2], h[3]]) as usize;
        if len == 0 || at + 8 + len > log.len() {
            break;
        }
        offsets.push(at);
        at += 8 + len;
    }
    offsets
}

#[test]
fn a_damaged_log_is_refused_and_repair_never_hands_a_resource_version_out_twice() {
    let data = tempfile::tempdir().unwrap();
    let max_rv = write_then_kill(data.path(), 6);
    let wal = data.path().join("store.wal");
    let mut log = std::fs::read(&wal).unwrap();
    let offsets = record_offsets(&log);
    assert!(offsets.len() >= 6, "{} records in the log", offsets.len());
    // A byte inside the second record's body; whole records follow it.
    let damaged = offsets[1];
    log[damaged + 8 + 20] ^= 0x20;
    std::fs::write(&wal, &log).unwrap();

    let Err(refused) = builder(data.path()).try_start() else {
        panic!("the gateway started on a damaged log");
    };
    let message = format!("{refused:#}");
    for part in [
        "store.wal".to_owned(),
        "is damaged".to_owned(),
        format!("offset {damaged}"),
        "wasmgate repair --data-dir".to_owned(),
    ] {
        assert!(message.contains(&part), "{part:?} not in: {message}");
    }
    assert_eq!(
        std::fs::read(&wal).unwrap(),
        log,
        "refusing changed the log"
    );

    let out = Command::new(env!("CARGO_BIN_EXE_wasmgate-under-test"))
        .args(["repair", "--data-dir"])
        .arg(data.path())
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "repair failed: {stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let dropped = offsets.len() - 1;
    assert!(
        stdout.contains(&format!("offset {damaged}"))
            && stdout.contains(&format!("{dropped} records")),
        "{stdout}"
    );

    let gw = builder(data.path()).start();
    let client = gw.client();
    assert!(
        exists(&client, "emptied"),
        "a record before the damage is lost"
    );
    assert!(
        !exists(&client, "last-5"),
        "a record after the damage was applied"
    );
    let next = create(&client, "after-repair");
    assert!(
        next > max_rv,
        "resourceVersion {next} handed out again (acknowledged up to {max_rv})"
    );
}

#[test]
fn a_torn_last_record_is_cut_off_and_logged() {
    let data = tempfile::tempdir().unwrap();
    write_then_kill(data.path(), 3);
    let wal = data.path().join("store.wal");
    let mut log = std::fs::read(&wal).unwrap();
    let offsets = record_offsets(&log);
    let last = *offsets.last().unwrap();
    // (A write of the gateway's own may have come after the last create.)
    let holds_last_create = log[last..].windows(6).any(|w| w == b"last-2");
    // What a crash in the middle of the last append leaves.
    log.truncate(last + 30);
    std::fs::write(&wal, &log).unwrap();

    let gw = builder(data.path()).start();
    let stderr = gw.stderr_tail(100);
    assert!(
        stderr.contains("cut short") && stderr.contains(&format!("offset={last}")),
        "{stderr}"
    );
    let client = gw.client();
    assert!(exists(&client, "last-1"));
    assert_eq!(
        exists(&client, "last-2"),
        !holds_last_create,
        "the torn record was applied, or one before it was not"
    );
}
