//! Garbage collection with kubectl against the real binary (`GAP-06`, issue 7):
//! `kubectl delete --cascade=background|foreground|orphan`, and 10,000 dependents of one
//! owner collected with the server's memory bounded.

use std::time::Duration;

use serde_json::json;
use wasmgate_e2e::{Gateway, gateway_builder, poll};

const WAIT: Duration = Duration::from_secs(60);

/// Creates ConfigMap `owner` and `n` dependents `dep-<i>` that name it; returns its uid.
fn owner_with_dependents(gw: &Gateway, owner: &str, n: usize, block: bool) -> String {
    gw.kubectl_ok(&["create", "configmap", owner]);
    let uid = gw.kubectl_ok(&["get", "cm", owner, "-o", "jsonpath={.metadata.uid}"]);
    let items: Vec<_> = (0..n)
        .map(|i| {
            json!({"apiVersion":"v1","kind":"ConfigMap",
                "metadata":{"name":format!("{owner}-dep-{i}"),"labels":{"owner":owner},
                    "ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":owner,"uid":uid,"blockOwnerDeletion":block}]},
                "data":{"k":"v"}})
        })
        .collect();
    let list = json!({"apiVersion":"v1","kind":"List","items":items});
    let file = gw.write_file(&format!("{owner}.json"), &list.to_string());
    gw.kubectl_ok(&["create", "-f", file.to_str().expect("utf-8 path")]);
    uid
}

fn dependents(gw: &Gateway, owner: &str) -> Vec<String> {
    gw.kubectl_ok(&["get", "cm", "-l", &format!("owner={owner}"), "-o", "name"])
        .lines()
        .map(str::to_owned)
        .collect()
}

#[test]
fn gap_06_kubectl_delete_cascade_policies() {
    let gw = gateway_builder!().start();

    // background (kubectl's default): the owner goes at once, the dependents after.
    owner_with_dependents(&gw, "bg", 3, false);
    gw.kubectl_ok(&["delete", "cm", "bg", "--cascade=background"]);
    poll("background dependents collected", WAIT, || {
        dependents(&gw, "bg").is_empty().then_some(())
    });

    // foreground: kubectl waits for the owner, which goes after its dependents.
    owner_with_dependents(&gw, "fg", 3, true);
    gw.kubectl_ok(&[
        "delete",
        "cm",
        "fg",
        "--cascade=foreground",
        "--timeout=60s",
    ]);
    assert_eq!(dependents(&gw, "fg"), Vec::<String>::new());
    assert!(
        gw.kubectl_err(&["get", "cm", "fg"]).contains("NotFound"),
        "the owner is gone"
    );

    // orphan: the dependents stay, without the reference.
    owner_with_dependents(&gw, "or", 3, true);
    gw.kubectl_ok(&["delete", "cm", "or", "--cascade=orphan", "--timeout=60s"]);
    assert_eq!(dependents(&gw, "or").len(), 3);
    let refs = gw.kubectl_ok(&[
        "get",
        "cm",
        "-l",
        "owner=or",
        "-o",
        "jsonpath={.items[*].metadata.ownerReferences}",
    ]);
    assert_eq!(refs.trim(), "", "orphaned dependents lose the reference");
}

#[test]
fn gap_06_ten_thousand_dependents_collected_with_bounded_memory() {
    let gw = gateway_builder!().start();
    let n = 10_000;
    owner_with_dependents(&gw, "big", n, true);
    assert_eq!(dependents(&gw, "big").len(), n);
    assert!(gw.reset_peak_memory(), "resetting the peak RSS");
    let before = gw.memory_kib("VmRSS").expect("server RSS");
    let started = std::time::Instant::now();
    gw.kubectl_ok(&[
        "delete",
        "cm",
        "big",
        "--cascade=foreground",
        "--timeout=300s",
    ]);
    let peak = gw.memory_kib("VmHWM").expect("server peak RSS");
    assert!(dependents(&gw, "big").is_empty());
    eprintln!(
        "10,000 dependents collected in {:.1} s; server RSS {before} KiB before, peak {peak} KiB",
        started.elapsed().as_secs_f64()
    );
    // The collector holds an index entry per dependent, not the objects: the peak during
    // collection stays within a small multiple of what the server held before.
    assert!(
        peak < before + 192 * 1024,
        "peak RSS {peak} KiB against {before} KiB before collection"
    );
}
