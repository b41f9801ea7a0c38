//! Replicas over one store (issue 10, "Replica mode without TiKV"): a gateway started with
//! `replicas: 2` serves two API servers over one embedded engine, each with its own object
//! cache and watch hub, as two gateways over one TiKV cluster do. kubectl against either
//! sees the other's writes: reads at once (a cache behind the store is not used), watches
//! through the change-log follower; conflicting updates through both get one 409. The
//! replicas start at the same moment on the fresh store, and share one cluster identity
//! (issue 28): the admin kubeconfig of one works against the other. Writers on both at
//! once all succeed (issue 28).

use std::time::Duration;

use wasmgate_e2e::{Background, assert_ok, gateway_builder, run};

const WAIT: Duration = Duration::from_secs(20);

#[test]
fn replicas_see_each_others_writes_and_conflicts() {
    let gw = gateway_builder!().config("replicas: 2\n").start();
    let second = gw.data_dir().join("admin-replica-2.kubeconfig");
    assert!(second.is_file(), "the second replica's kubeconfig");
    // The first replica's admin kubeconfig against the second replica.
    let text = std::fs::read_to_string(&second).unwrap();
    let server = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("server:"))
        .unwrap()
        .trim();
    assert_ok(&run(gw.kubectl_command_with(
        &gw.data_dir().join("admin.kubeconfig"),
        &["--server", server, "get", "ns", "kube-system"],
    )));
    let on_second = |args: &[&str]| {
        let mut all = vec!["--request-timeout=30s"];
        all.extend_from_slice(args);
        run(gw.kubectl_command_with(&second, &all))
    };
    // A watch on the second replica, established before the writes.
    let mut watch = Background::spawn(gw.kubectl_command_with(
        &second,
        &[
            "get",
            "cm",
            "-n",
            "default",
            "-w",
            "--output-watch-events",
            "-o",
            "name",
        ],
    ));
    std::thread::sleep(Duration::from_millis(500));

    gw.kubectl_ok(&["create", "configmap", "shared", "--from-literal=v=1"]);
    // Nothing has been written through the second replica: its follower brings it.
    watch.wait_for_lines("the create", WAIT, |l| {
        l.iter().any(|x| x.contains("configmap/shared"))
    });
    // Read through the other replica right after the create was acknowledged.
    let rv = assert_ok(&on_second(&[
        "get",
        "cm",
        "shared",
        "-o",
        "jsonpath={.metadata.resourceVersion}",
    ]));
    assert!(!rv.is_empty());

    // The same update (same resourceVersion) through each replica: one wins.
    let obj = gw.kubectl_ok(&["get", "cm", "shared", "-o", "json"]);
    let a = gw.write_file("a.json", &obj.replace("\"v\": \"1\"", "\"v\": \"a\""));
    let b = gw.write_file("b.json", &obj.replace("\"v\": \"1\"", "\"v\": \"b\""));
    let first = gw.kubectl(&["replace", "-f", a.to_str().unwrap()]);
    let other = on_second(&["replace", "-f", b.to_str().unwrap()]);
    assert!(first.status.success(), "{first:?}");
    assert!(!other.status.success());
    let err = String::from_utf8_lossy(&other.stderr);
    assert!(
        err.contains("Conflict") && err.contains("has been modified"),
        "{err}"
    );

    // The watch on the second replica saw both writes made through the first.
    watch.wait_for_lines("the create and the update", WAIT, |l| {
        l.iter().filter(|x| x.contains("configmap/shared")).count() >= 2
    });
    let v = assert_ok(&on_second(&[
        "get",
        "cm",
        "shared",
        "-o",
        "jsonpath={.data.v}",
    ]));
    assert_eq!(v, "a");
}

/// A plugin bound through one replica admits requests on the other: the WasmPlugin lives
/// in the store and each replica's plugin controller follows it there (issue 10, "every
/// replica loads the same module").
#[test]
fn a_plugin_bound_through_one_replica_admits_on_the_other() {
    let gw = gateway_builder!().config("replicas: 2\n").start();
    let second = gw.data_dir().join("admin-replica-2.kubeconfig");
    let module = wasmgate_e2e::examples_dir().join("../plugins/dist/core_policy.wasm");
    assert!(
        module.is_file(),
        "build the plugins first (bash plugins/build.sh)"
    );
    let binding = serde_json::json!({
        "apiVersion": "wasmgate.dev/v1alpha1",
        "kind": "WasmPlugin",
        "metadata": {"name": "core-policy"},
        "spec": {"groups": [""], "resources": ["configmaps"], "operations": ["CREATE"],
                 "namespaceSelector": {"matchLabels": {"policy": "strict"}},
                 "module": {"path": module}},
    });
    let file = gw.write_file("binding.json", &binding.to_string());
    gw.kubectl_ok(&["create", "namespace", "strict"]);
    gw.kubectl_ok(&["label", "namespace", "strict", "policy=strict"]);
    gw.kubectl_ok(&["apply", "-f", file.to_str().unwrap()]);
    let deadline = std::time::Instant::now() + WAIT;
    let mut n = 0;
    loop {
        n += 1;
        let name = format!("c{n}");
        let out = run(gw.kubectl_command_with(
            &second,
            &[
                "--request-timeout=30s",
                "-n",
                "strict",
                "create",
                "configmap",
                &name,
            ],
        ));
        let err = String::from_utf8_lossy(&out.stderr);
        if !out.status.success() {
            assert!(
                err.contains("admission plugin \"core-policy\" denied the request"),
                "{err}"
            );
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the second replica never loaded the plugin"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Two clients writing at once, one through each replica (the benchmark's own clients, as
/// `wasmgate-bench --kubeconfig admin.kubeconfig --kubeconfig admin-replica-2.kubeconfig
/// --scenario create` runs them): not one request fails (issue 28, item 1: about 3 % got
/// `500 storage engine failure` when the replicas' commits conflicted on the revision
/// counter and a batch lost 16 times in a row), and their commits no longer conflict at
/// all (revisions come from the engine, not a key every commit writes). First 8 creates
/// in flight on each (the
/// issue's target), then 32. On one machine the old committer failed rarely: none in
/// these 6 s runs, 16 of ~11 800 creates (500) in a 10 s `wasmgate-bench` run with 32
/// each; the store suite's `store_replicas_writing_at_once_all_succeed`, with commits as
/// slow as TiKV's, is the case that failed it: in each of three runs of the suite, 4 to 8
/// of 640 writes in one or more of its engine variants.
#[test]
fn replicas_writing_at_once_fail_no_request() {
    use clap::Parser as _;
    use wasmgate_bench::bench::Bench;
    use wasmgate_bench::cli::Args;

    let gw = gateway_builder!().config("replicas: 2\n").start();
    let second = gw.data_dir().join("admin-replica-2.kubeconfig");
    let runtime = tokio::runtime::Runtime::new().unwrap();
    for concurrency in ["8", "32"] {
        let args = Args::try_parse_from([
            "wasmgate-bench".as_ref(),
            "--kubeconfig".as_ref(),
            gw.kubeconfig().as_os_str(),
            "--kubeconfig".as_ref(),
            second.as_os_str(),
            "--scenario".as_ref(),
            "create".as_ref(),
            "--concurrency".as_ref(),
            concurrency.as_ref(),
            "--warmup".as_ref(),
            "1s".as_ref(),
            "--duration".as_ref(),
            "5s".as_ref(),
            "--object-size".as_ref(),
            "1KiB".as_ref(),
            "--namespace".as_ref(),
            "both-replicas".as_ref(),
        ] as [&std::ffi::OsStr; 17])
        .unwrap();
        assert_eq!(args.check_replicas(), Ok(()));
        let reports = runtime.block_on(async {
            let mut benches = Vec::new();
            for each in args.per_replica() {
                benches.push(Bench::new(each).await.unwrap());
            }
            let (a, b) = tokio::join!(benches[0].create(), benches[1].create());
            [a.unwrap(), b.unwrap()]
        });
        for (i, r) in reports.iter().enumerate() {
            assert!(
                r.failed == 0,
                "{concurrency} clients each, replica {}: {r}; first failure: {:?}\n{}",
                i + 1,
                r.errors.first,
                gw.stderr_tail(40)
            );
            assert!(r.ok > 0, "replica {}: {r}", i + 1);
        }
        eprintln!(
            "{concurrency} clients each: {} + {} creates",
            reports[0].ok, reports[1].ok
        );
    }
    // That the replicas did not contend (this replica's committer retried a conflict only
    // where both wrote one object: the replicas' commits write no common key, where each
    // of their batches used to write the revision counter and ~870 conflicted per replica
    // in 10 s), and that none of its writes failed in the store.
    let metrics = gw.get("/metrics").body;
    let storage: Vec<&str> = metrics
        .lines()
        .filter(|l| l.starts_with("wasmgate_storage_"))
        .collect();
    eprintln!("{storage:?}");
    let failed = storage
        .iter()
        .filter(|l| l.starts_with("wasmgate_storage_failed_writes_total"))
        .filter(|l| !l.ends_with(" 0"));
    assert_eq!(failed.count(), 0, "{storage:?}");
    let conflicts: u64 = storage
        .iter()
        .find_map(|l| l.strip_prefix("wasmgate_storage_commit_conflicts_total "))
        .and_then(|n| n.parse().ok())
        .expect("the conflicts counter");
    // Both benches create their namespace at once: that object is written through both.
    assert!(conflicts <= 4, "{conflicts} conflicts: {storage:?}");
}
