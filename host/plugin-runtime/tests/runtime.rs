//! The runtime against real components: the plugins of `plugins/`, built for
//! wasm32-wasip2 by `plugins/build.sh` (the test command runs it first), and the hostile
//! fixtures. Plugin issue items: sandbox, limits, typed failures, contract checks, cache.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use wasmgate_plugin_runtime::wit::{
    AdmissionRequest, GroupVersionKind, GroupVersionResource, Mutation, Operation, UserInfo,
};
use wasmgate_plugin_runtime::{CallError, Isolation, Limits, LoadError, Runtime, RuntimeConfig};

/// A component built by `plugins/build.sh` (into `plugins/dist/`).
fn wasm(name: &str) -> Vec<u8> {
    let path = std::env::var_os("CARGO_MANIFEST_DIR")
        .map_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")), PathBuf::from)
        .join("../../plugins/dist")
        .join(format!("{name}.wasm"));
    std::fs::read(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e}; build the plugins first: bash plugins/build.sh",
            path.display()
        )
    })
}

fn runtime() -> Runtime {
    Runtime::new(RuntimeConfig::default()).expect("runtime")
}

fn request(object: serde_json::Value) -> AdmissionRequest {
    AdmissionRequest {
        uid: "u1".into(),
        kind: GroupVersionKind {
            group: "example.com".into(),
            version: "v1".into(),
            kind: "Widget".into(),
        },
        resource: GroupVersionResource {
            group: "example.com".into(),
            version: "v1".into(),
            resource: "widgets".into(),
        },
        sub_resource: None,
        request_kind: None,
        request_resource: None,
        request_sub_resource: None,
        name: "w".into(),
        namespace: Some("default".into()),
        operation: Operation::Create,
        user_info: UserInfo {
            username: "admin".into(),
            uid: String::new(),
            groups: vec![],
            extra: vec![],
        },
        object: Some(object.to_string()),
        old_object: None,
        dry_run: false,
        options: None,
    }
}

fn widget(spec: serde_json::Value) -> serde_json::Value {
    serde_json::json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w", "namespace": "default"}, "spec": spec})
}

fn hostile_limits() -> Limits {
    Limits {
        timeout: Duration::from_millis(100),
        memory_bytes: 16 << 20,
        ..Limits::default()
    }
}

async fn hostile(rt: &Runtime, mode: &str) -> wasmgate_plugin_runtime::Plugin {
    let config = serde_json::json!({ "mode": mode }).to_string();
    rt.load(
        &format!("hostile-{mode}"),
        &wasm("hostile"),
        hostile_limits(),
        &config,
    )
    .await
    .expect("hostile fixture loads")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn widgets_plugin_loads_and_answers_every_hook() {
    let rt = runtime();
    let p = rt
        .load("widgets", &wasm("widgets"), Limits::default(), "{}")
        .await
        .expect("loads");
    assert_eq!(p.digest().len(), 64);
    assert_eq!(
        p.hooks().names(),
        ["mutate", "validate", "convert", "print"]
    );
    assert_eq!(p.plugin_info().name, "widgets");

    let denied = p
        .validate(&request(widget(
            serde_json::json!({"size": 9, "replicas": 6}),
        )))
        .await
        .expect("call");
    assert!(!denied.allowed);
    let status = denied.status.expect("denial status");
    assert_eq!(status.causes[0].field, "spec.replicas");

    let mutated = p
        .mutate(&request(widget(serde_json::json!({"color": "red"}))))
        .await
        .expect("call");
    let Some(Mutation::JsonPatch(patch)) = mutated.mutation else {
        panic!("expected a JSON patch, got {:?}", mutated.mutation)
    };
    let patch: serde_json::Value = serde_json::from_str(&patch).expect("json");
    assert_eq!(
        patch,
        serde_json::json!([{"op": "add", "path": "/metadata/labels", "value": {"example.com/color": "red"}}])
    );

    let converted = p
        .convert(&wasmgate_plugin_runtime::wit::ConversionRequest {
            uid: "c".into(),
            desired_api_version: "example.com/v1alpha1".into(),
            objects: vec![widget(serde_json::json!({"color": "red"})).to_string()],
        })
        .await
        .expect("call")
        .expect("converted");
    assert!(converted[0].contains("\"colour\":\"red\""), "{converted:?}");

    let cols = p.columns("example.com/v1", "Widget").await.expect("call");
    assert_eq!(cols[4].name, "Capacity");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endless_loop_times_out_without_holding_the_runtime() {
    let rt = runtime();
    let p = hostile(&rt, "loop").await;
    // Another task keeps running on the runtime while the plugin spins.
    let ticker = tokio::spawn(async {
        let mut n = 0;
        for _ in 0..10 {
            tokio::time::sleep(Duration::from_millis(5)).await;
            n += 1;
        }
        n
    });
    let started = Instant::now();
    let err = p
        .validate(&request(widget(serde_json::json!({}))))
        .await
        .unwrap_err();
    let took = started.elapsed();
    assert!(matches!(err, CallError::Timeout(_)), "{err:?}");
    assert!(took < Duration::from_secs(2), "took {took:?}");
    assert_eq!(ticker.await.expect("ticker"), 10);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_memory_bomb_is_out_of_memory() {
    let rt = runtime();
    let p = hostile(&rt, "memory").await;
    let err = p
        .validate(&request(widget(serde_json::json!({}))))
        .await
        .unwrap_err();
    assert!(
        matches!(err, CallError::OutOfMemory(n) if n == 16 << 20),
        "{err:?}"
    );
    assert_eq!(err.cause(), "out_of_memory");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panic_is_a_trap_that_carries_the_message() {
    let rt = runtime();
    let p = hostile(&rt, "trap").await;
    let err = p
        .mutate(&request(widget(serde_json::json!({}))))
        .await
        .unwrap_err();
    let CallError::Trap(msg) = &err else {
        panic!("{err:?}")
    };
    assert!(msg.contains("panics on purpose"), "{msg}");
    // The plugin still serves the next call: every call has a fresh instance.
    let again = p.mutate(&request(widget(serde_json::json!({})))).await;
    assert!(matches!(again, Err(CallError::Trap(_))));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_and_sockets_are_out_of_reach() {
    let rt = runtime();
    for mode in ["read-file", "socket"] {
        let p = hostile(&rt, mode).await;
        let resp = p
            .validate(&request(widget(serde_json::json!({}))))
            .await
            .expect("call");
        let msg = resp.status.expect("denial").message;
        assert!(
            msg.starts_with(&format!("{mode}: refused")),
            "{mode}: {msg}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn modules_that_do_not_fit_the_contract_are_refused_with_a_reason() {
    let rt = runtime();
    let err = rt
        .load("wrong", &wasm("wrong_wit"), Limits::default(), "{}")
        .await
        .unwrap_err();
    assert!(matches!(err, LoadError::WrongContract(_)), "{err}");
    let err = rt
        .load("junk", b"not wasm at all", Limits::default(), "{}")
        .await
        .unwrap_err();
    assert!(matches!(err, LoadError::NotAComponent(_)), "{err}");
    // A core module (the smallest there is) is not a component.
    let err = rt
        .load("core", b"\0asm\x01\0\0\0", Limits::default(), "{}")
        .await
        .unwrap_err();
    assert!(matches!(err, LoadError::NotAComponent(_)), "{err}");
    let err = rt
        .load(
            "selftest",
            &wasm("hostile"),
            hostile_limits(),
            r#"{"mode":"info-trap"}"#,
        )
        .await
        .unwrap_err();
    assert!(
        matches!(err, LoadError::SelfTest(CallError::Trap(_))),
        "{err}"
    );
    let bad = Limits {
        timeout: Duration::ZERO,
        ..Limits::default()
    };
    let err = rt
        .load("limits", &wasm("widgets"), bad, "{}")
        .await
        .unwrap_err();
    assert!(matches!(err, LoadError::Limits(_)), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compiled_modules_are_kept_on_disk_and_reused() {
    let dir = tempfile_dir();
    let config = RuntimeConfig {
        cache_dir: Some(dir.clone()),
    };
    let rt = Runtime::new(config.clone()).expect("runtime");
    let p = rt
        .load("widgets", &wasm("widgets"), Limits::default(), "{}")
        .await
        .expect("loads");
    let files: Vec<_> = std::fs::read_dir(&dir).expect("dir").flatten().collect();
    assert_eq!(files.len(), 1);
    let name = files[0].file_name().into_string().expect("utf8");
    assert!(
        name.starts_with(p.digest()) && name.ends_with(".cwasm"),
        "{name}"
    );
    drop(rt);
    let written = files[0]
        .metadata()
        .and_then(|m| m.modified())
        .expect("mtime");
    // A new runtime (a restart) loads the artifact instead of compiling: an artifact
    // that failed to load would be compiled and written again.
    let rt = Runtime::new(config).expect("runtime");
    let started = Instant::now();
    rt.load("widgets", &wasm("widgets"), Limits::default(), "{}")
        .await
        .expect("loads");
    assert!(started.elapsed() < Duration::from_secs(5));
    let again = std::fs::metadata(files[0].path())
        .and_then(|m| m.modified())
        .expect("mtime");
    assert_eq!(again, written, "the artifact was written again");
    std::fs::remove_dir_all(&dir).ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_concurrent_calls_wait_for_instances_instead_of_failing() {
    let rt = std::sync::Arc::new(runtime());
    // Calls wait for one of the plugin's instances until their deadline (issue 25 item
    // 2): 300 calls of a debug build on a busy machine need more than the default 100 ms.
    let limits = Limits {
        timeout: Duration::from_secs(10),
        ..Limits::default()
    };
    let p = std::sync::Arc::new(
        rt.load("widgets", &wasm("widgets"), limits, "{}")
            .await
            .expect("loads"),
    );
    let mut tasks = Vec::new();
    for _ in 0..300 {
        let p = p.clone();
        tasks.push(tokio::spawn(async move {
            p.validate(&request(widget(serde_json::json!({"size": 1}))))
                .await
                .map(|r| r.allowed)
        }));
    }
    for t in tasks {
        assert!(t.await.expect("task").expect("call"));
    }
}

fn tempfile_dir() -> PathBuf {
    let d = std::env::temp_dir().join(format!(
        "wasmgate-plugin-cache-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0)
    ));
    std::fs::create_dir_all(&d).expect("mkdir");
    d
}

/// The hostile fixture in `mode` with more of its config, timeout and memory limit.
async fn hostile_with(
    rt: &Runtime,
    name: &str,
    config: serde_json::Value,
    limits: Limits,
) -> wasmgate_plugin_runtime::Plugin {
    rt.load(name, &wasm("hostile"), limits, &config.to_string())
        .await
        .expect("hostile fixture loads")
}

fn limits(timeout_ms: u64, memory_mib: u64) -> Limits {
    Limits {
        timeout: Duration::from_millis(timeout_ms),
        memory_bytes: memory_mib << 20,
        ..Limits::default()
    }
}

/// issue 25 item 1: a plugin blocked in a WASI sleep (no wasm running, so no epoch
/// interruption) ends at its own deadline, as the plugin's timeout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sleeping_plugin_times_out_at_its_deadline() {
    let rt = runtime();
    let p = hostile_with(
        &rt,
        "sleeper",
        serde_json::json!({"mode": "sleep"}),
        limits(200, 16),
    )
    .await;
    let started = Instant::now();
    let err = p
        .validate(&request(widget(serde_json::json!({}))))
        .await
        .unwrap_err();
    let took = started.elapsed();
    assert!(matches!(err, CallError::Timeout(_)), "{err:?}");
    assert_eq!(err.to_string(), "timed out after 200ms");
    assert!(took < Duration::from_secs(1), "took {took:?}");
    assert!(took >= Duration::from_millis(190), "took {took:?}");
    // The plugin's instance was given back.
    assert_eq!(p.instance_stats().in_use, 0);
}

/// issue 25 item 1: the guest's sleep is a real sleep of the async runtime, with the
/// clocks stopped at 0: it neither returns at once, nor spins, nor blocks the thread (on
/// a single-threaded runtime, another task keeps running meanwhile).
#[tokio::test]
async fn a_guest_sleep_waits_without_spinning_or_blocking() {
    let rt = runtime();
    let p = hostile_with(
        &rt,
        "napper",
        serde_json::json!({"mode": "sleep", "millis": 300}),
        limits(5_000, 16),
    )
    .await;
    let ticker = tokio::spawn(async {
        for _ in 0..20 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    });
    let cpu = cpu_time::ThreadTime::now();
    let started = Instant::now();
    let resp = p
        .validate(&request(widget(serde_json::json!({}))))
        .await
        .expect("call");
    let took = started.elapsed();
    assert!(resp.allowed);
    assert!(took >= Duration::from_millis(300), "took {took:?}");
    assert!(took < Duration::from_secs(3), "took {took:?}");
    assert!(
        ticker.is_finished(),
        "the other task ran while the guest slept"
    );
    // Sleeping cost (almost) no CPU: one thread runs all of this test.
    let cpu = cpu.elapsed();
    assert!(cpu < Duration::from_millis(150), "{cpu:?} of CPU");
}

/// issue 25 item 2: 200 calls of a plugin that sleeps hold only its own share of
/// instances; a neighbour plugin keeps answering at once, and the sleeper's calls beyond
/// its share time out in the queue, at the sleeper's deadline.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sleeping_plugin_does_not_starve_its_neighbours() {
    let rt = std::sync::Arc::new(runtime());
    let sleeper = std::sync::Arc::new(
        hostile_with(
            &rt,
            "sleeper",
            serde_json::json!({"mode": "sleep"}),
            limits(2_000, 16),
        )
        .await,
    );
    let neighbour = hostile_with(
        &rt,
        "neighbour",
        serde_json::json!({"mode": "allow"}),
        limits(1_000, 16),
    )
    .await;
    let started = Instant::now();
    let calls: Vec<_> = (0..200)
        .map(|_| {
            let p = sleeper.clone();
            tokio::spawn(async move {
                p.validate(&request(widget(serde_json::json!({}))))
                    .await
                    .unwrap_err()
            })
        })
        .collect();
    // Wait until the sleeper holds its whole share.
    while sleeper.instance_stats().in_use < wasmgate_plugin_runtime::INSTANCES_PER_PLUGIN {
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "{:?}",
            sleeper.instance_stats()
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let stats = sleeper.instance_stats();
    assert_eq!(
        stats.instances,
        wasmgate_plugin_runtime::INSTANCES_PER_PLUGIN
    );
    assert!(stats.waiting > 0, "{stats:?}");
    let mut slowest = Duration::ZERO;
    let mut answered = 0;
    while started.elapsed() < Duration::from_millis(1_500) {
        let t = Instant::now();
        let resp = neighbour
            .validate(&request(widget(serde_json::json!({}))))
            .await
            .expect("the neighbour answers");
        assert!(resp.allowed);
        slowest = slowest.max(t.elapsed());
        answered += 1;
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(
        slowest < Duration::from_millis(150),
        "the neighbour's slowest of {answered} calls took {slowest:?}"
    );
    let mut queued = 0;
    for c in calls {
        let err = c.await.expect("task");
        assert!(err.is_timeout(), "{err:?}");
        if let CallError::NoInstance {
            instances, shared, ..
        } = err
        {
            assert_eq!((instances, shared), (32, false));
            assert_eq!(
                err.to_string(),
                "timed out after 2s waiting for one of its 32 instances"
            );
            queued += 1;
        }
    }
    let took = started.elapsed();
    // Every call ended at its deadline. Those beyond the share waited in the queue: the
    // later of them timed out there, the earlier got an instance a timed-out call gave
    // back shortly before their own deadline (how many is a matter of timing).
    assert!(took < Duration::from_secs(4), "took {took:?}");
    eprintln!("{queued} of the sleeper's 200 calls timed out waiting for an instance");
    let stats = sleeper.instance_stats();
    assert_eq!((stats.in_use, stats.waiting), (0, 0), "{stats:?}");
    assert_eq!(stats.wait.count, 1 + 200, "the self-test and every call");
    assert!(stats.wait.sum_seconds > 1.0, "{stats:?}");
    let all = rt.instance_stats();
    assert_eq!(
        all.iter().map(|s| s.plugin.as_str()).collect::<Vec<_>>(),
        ["neighbour", "sleeper"]
    );
}

/// issue 25 item 2: versions of one plugin name (a hot reload) share its instances.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn versions_of_a_plugin_share_its_instances() {
    let rt = runtime();
    let old = std::sync::Arc::new(
        hostile_with(
            &rt,
            "p",
            serde_json::json!({"mode": "sleep"}),
            limits(500, 16),
        )
        .await,
    );
    let new = hostile_with(
        &rt,
        "p",
        serde_json::json!({"mode": "allow"}),
        limits(300, 16),
    )
    .await;
    let calls: Vec<_> = (0..32)
        .map(|_| {
            let old = old.clone();
            tokio::spawn(async move { old.validate(&request(widget(serde_json::json!({})))).await })
        })
        .collect();
    while new.instance_stats().in_use < 32 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let err = new
        .validate(&request(widget(serde_json::json!({}))))
        .await
        .unwrap_err();
    assert!(matches!(err, CallError::NoInstance { .. }), "{err:?}");
    assert_eq!(err.cause(), "timeout");
    assert_eq!(
        err.to_string(),
        "timed out after 300ms waiting for one of its 32 instances"
    );
    for c in calls {
        let r = c.await.expect("task");
        assert!(matches!(r, Err(CallError::Timeout(_))), "{r:?}");
    }
    // Once the old version's calls are over, the new one is served.
    assert!(
        new.validate(&request(widget(serde_json::json!({}))))
            .await
            .is_ok()
    );
}

/// issue 25 item 4: what a plugin prints goes to the log (cut, counted, rate-limited),
/// never trapping it: a `println!`, an `eprintln!` of 10 KiB, 10,000 `eprintln!` lines.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdout_and_stderr_go_to_the_log_without_trapping() {
    let logs = capture_logs();
    let rt = runtime();
    for mode in ["stdout", "stderr-big", "stderr-flood"] {
        let p = hostile_with(
            &rt,
            &format!("printer-{mode}"),
            serde_json::json!({"mode": mode}),
            limits(5_000, 16),
        )
        .await;
        let mut req = request(widget(serde_json::json!({})));
        req.uid = format!("uid-{mode}");
        let resp = p.validate(&req).await.expect(mode);
        assert!(resp.allowed, "{mode}");
        let dropped = p.instance_stats().log_lines_dropped;
        assert_eq!(
            dropped,
            if mode == "stderr-flood" {
                10_000 - 20
            } else {
                0
            },
            "{mode}"
        );
    }
    let logs = logs.text();
    let lines = |needle: &str| logs.lines().filter(|l| l.contains(needle)).count();
    assert_eq!(lines("hostile plugin says hello on stdout"), 3, "{logs}");
    let hello = logs
        .lines()
        .find(|l| l.contains("says hello"))
        .expect("stdout logged");
    assert!(
        hello.contains(" INFO ") && hello.contains("plugin=\"printer-stdout\""),
        "{hello}"
    );
    assert!(hello.contains("uid=\"uid-stdout\""), "{hello}");
    let big = logs
        .lines()
        .find(|l| l.contains("eeee"))
        .expect("stderr logged");
    assert!(big.contains(" WARN ") && big.contains("[cut]"), "{big}");
    assert!(big.len() < 4096 + 200, "{}", big.len());
    assert_eq!(lines("floods stderr"), 20, "a call logs at most 20 lines");
    // Each line names the plugin and the request.
    let flood = logs
        .lines()
        .find(|l| l.contains("floods stderr"))
        .expect("logged");
    assert!(
        flood.contains("plugin=\"printer-stderr-flood\"")
            && flood.contains("uid=\"uid-stderr-flood\""),
        "{flood}"
    );
    assert_eq!(lines("9980 lines dropped"), 1, "{logs}");
}

/// What this test binary logs at info and above (a global subscriber: a call's log
/// lines are written on whichever thread runs it).
fn capture_logs() -> Logs {
    static LOGS: std::sync::OnceLock<Logs> = std::sync::OnceLock::new();
    LOGS.get_or_init(|| {
        let logs = Logs::default();
        let sub = tracing_subscriber::fmt()
            .with_writer(logs.clone())
            .with_ansi(false)
            .with_max_level(tracing::Level::INFO)
            .finish();
        tracing::subscriber::set_global_default(sub).expect("the only subscriber");
        logs
    })
    .clone()
}

#[derive(Clone, Default)]
struct Logs(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl Logs {
    fn text(&self) -> String {
        String::from_utf8_lossy(
            &self
                .0
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        )
        .into_owned()
    }
}

impl std::io::Write for Logs {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Logs {
    type Writer = Logs;
    fn make_writer(&'a self) -> Logs {
        self.clone()
    }
}

/// issue 25 item 5: a failure says what happened in one line: a stack overflow, an exit
/// code, a panic's message.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failures_name_their_cause_in_one_line() {
    let rt = runtime();
    for (mode, expected) in [
        ("stack-overflow", "trapped: stack overflow"),
        // WASI 0.2's `exit` carries success or failure only: `exit(3)` is a failure, 1.
        (
            "exit",
            "trapped: exited with code 1 (WASI 0.2 reports every failing exit code as 1)",
        ),
        (
            "trap",
            "trapped: panicked: hostile plugin panics on purpose (at ",
        ),
    ] {
        let p = hostile(&rt, mode).await;
        let err = p
            .validate(&request(widget(serde_json::json!({}))))
            .await
            .unwrap_err();
        assert!(matches!(err, CallError::Trap(_)), "{mode}: {err:?}");
        let msg = err.to_string();
        assert!(msg.starts_with(expected), "{mode}: {msg}");
        assert!(!msg.contains('\n'), "{mode}: {msg}");
        assert!(msg.len() < 300, "{mode}: {msg}");
    }
}

/// issue 25 item 3: an answer over any of the caps is the plugin's failure, refused
/// before the caller sees it, saying which cap, the size and the limit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_over_a_cap_are_refused_as_too_large() {
    use wasmgate_plugin_runtime::caps;
    let rt = runtime();
    let admission = [
        (
            serde_json::json!({"mode": "huge-message"}),
            "status message: 104857600 bytes, more than the 32768 allowed".to_owned(),
        ),
        (
            serde_json::json!({"mode": "warnings-flood"}),
            "warnings: 20000 entries, more than the 100 allowed".into(),
        ),
        (
            serde_json::json!({"mode": "warnings-flood", "count": 65, "bytes": 1024}),
            format!(
                "warnings: 66560 bytes, more than the {} allowed",
                caps::MAX_WARNINGS_BYTES
            ),
        ),
        (
            serde_json::json!({"mode": "many-causes"}),
            "status causes: 101 entries".into(),
        ),
        (
            serde_json::json!({"mode": "many-causes", "count": 5, "bytes": 20_000}),
            "status causes: 100".into(),
        ),
        (
            serde_json::json!({"mode": "big-annotations"}),
            "audit annotations: 65 entries".into(),
        ),
        (
            serde_json::json!({"mode": "big-annotations", "count": 2, "bytes": 40_000}),
            "audit annotations: 80010 bytes".into(),
        ),
        (
            serde_json::json!({"mode": "huge-patch"}),
            "JSON patch: ".into(),
        ),
        (
            serde_json::json!({"mode": "giant"}),
            "mutated object: ".into(),
        ),
    ];
    for (config, expected) in admission {
        let p = hostile_with(&rt, "big", config.clone(), limits(10_000, 512)).await;
        let err = p
            .mutate(&request(widget(serde_json::json!({}))))
            .await
            .unwrap_err();
        assert_eq!(err.cause(), "output_too_large", "{config}: {err}");
        let msg = err.to_string();
        assert!(
            msg.starts_with(&format!("returned too much: {expected}")),
            "{config}: {msg}"
        );
    }
    // Within the caps: answered.
    let p = hostile_with(
        &rt,
        "fine",
        serde_json::json!({"mode": "warnings-flood", "count": 100, "bytes": 600}),
        limits(1_000, 16),
    )
    .await;
    let resp = p
        .validate(&request(widget(serde_json::json!({}))))
        .await
        .expect("call");
    assert_eq!(resp.warnings.len(), 100);

    let p = hostile_with(
        &rt,
        "conv",
        serde_json::json!({"mode": "huge-conversion"}),
        limits(10_000, 64),
    )
    .await;
    let err = p
        .convert(&wasmgate_plugin_runtime::wit::ConversionRequest {
            uid: "c".into(),
            desired_api_version: "example.com/v2".into(),
            objects: vec![widget(serde_json::json!({})).to_string()],
        })
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .starts_with("returned too much: converted object 0: "),
        "{err}"
    );
    let p = hostile_with(
        &rt,
        "cols",
        serde_json::json!({"mode": "many-columns"}),
        limits(1_000, 16),
    )
    .await;
    let err = p.columns("example.com/v1", "Widget").await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "returned too much: columns: 65 entries, more than the 64 allowed"
    );
    let p = hostile_with(
        &rt,
        "cell",
        serde_json::json!({"mode": "big-cell"}),
        limits(1_000, 16),
    )
    .await;
    let err = p
        .rows(
            "example.com/v1",
            "Widget",
            &[widget(serde_json::json!({})).to_string()],
        )
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .starts_with("returned too much: cell 0 of row 0: 66562 bytes"),
        "{err}"
    );
}

/// The warnings of one admission answer.
fn heard(r: Result<wasmgate_plugin_runtime::wit::AdmissionResponse, CallError>) -> Vec<String> {
    r.expect("the call answers").warnings
}

/// Issue 26, isolation: under the default a call never sees what another request left in
/// the plugin's memory, and a request's `mutate` and `validate` (its session) share one
/// instance; under `Isolation::Reused` the next request is served by the same instance
/// and sees it (the plugin keeps the last object's name in a global: `remember`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn instances_are_per_request_unless_reused_is_chosen() {
    let rt = runtime();
    let remember = serde_json::json!({"mode": "remember"});
    let fresh = std::sync::Arc::new(
        hostile_with(&rt, "remember-fresh", remember.clone(), hostile_limits()).await,
    );
    let req = request(widget(serde_json::json!({})));
    for _ in 0..3 {
        assert_eq!(heard(fresh.validate(&req).await), ["remembered nothing"]);
    }
    let mut session = fresh.session();
    assert_eq!(heard(session.mutate(&req).await), ["remembered nothing"]);
    assert_eq!(heard(session.validate(&req).await), ["remembered: w"]);
    // The session let go of its instance with its last hook: the next request's is new.
    assert_eq!(
        heard(fresh.session().validate(&req).await),
        ["remembered nothing"]
    );
    assert_eq!(fresh.idle_instances(), 0);

    let reused_limits = Limits {
        isolation: Isolation::Reused,
        ..hostile_limits()
    };
    let reused =
        std::sync::Arc::new(hostile_with(&rt, "remember-reused", remember, reused_limits).await);
    // The self-test's `info` call left the one idle instance.
    assert_eq!(reused.idle_instances(), 1);
    assert_eq!(heard(reused.validate(&req).await), ["remembered nothing"]);
    assert_eq!(heard(reused.validate(&req).await), ["remembered: w"]);
    assert_eq!(
        heard(reused.session().validate(&req).await),
        ["remembered: w"]
    );
    assert_eq!(reused.idle_instances(), 1);
}

/// Issue 26: a reused instance is dropped after a call that failed; the next call gets a
/// fresh one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reused_instance_is_dropped_after_a_failure() {
    let rt = runtime();
    let limits = Limits {
        isolation: Isolation::Reused,
        ..limits(50, 16)
    };
    let p = hostile_with(
        &rt,
        "reused-sleeper",
        serde_json::json!({"mode": "sleep", "millis": 1000}),
        limits,
    )
    .await;
    // The self-test left one idle instance: the call takes it and times out in it.
    assert_eq!(p.idle_instances(), 1);
    let r = p.validate(&request(widget(serde_json::json!({})))).await;
    assert!(matches!(r, Err(CallError::Timeout(_))), "{r:?}");
    assert_eq!(p.idle_instances(), 0);
}
