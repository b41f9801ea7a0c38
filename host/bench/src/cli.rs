//! Command-line flags.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Parser, ValueEnum};
use serde::Serialize;

/// Drives a running wasmgate over HTTPS and measures throughput and latency.
///
/// Scenarios (each prints one line; the run ends with one JSON summary line on stdout):
///
///   create  CONCURRENCY clients POST ConfigMaps (or --kind widget Widgets) with OBJECT_SIZE
///           bytes of data; with --plugins N or --plugin-pair, Wasm plugins are bound to
///           them first (--webhook, --policy: a webhook or a CEL policy instead, to compare).
///
///   get     GET of objects created first (OBJECTS of them).
///
///   update  PUT with the current resourceVersion, on objects created first; each client
///           owns its objects, so there are no conflicts.
///
///   apply   server-side apply (PATCH application/apply-patch+yaml, fieldManager
///           wasmgate-bench) of the whole object with a new annotation value each time, on
///           objects created first, each client its own: compare with update.
///
///   list    LIST of a collection of LIST_SIZE objects (namespace NAMESPACE-list, emptied
///           and refilled first), with limit=LIST_SIZE (or LIST_LIMIT; 0: none), as JSON,
///           (with --list-table) as a Table, or (with --list-protobuf) in Kubernetes
///           protobuf.
///
///   watch   WATCHERS watches (each its own connection, or HTTP/2 stream) from one
///           resourceVersion; a writer creates RATE objects/s stamped with their send time.
///           Reports delivery latency (receive - send) and checks every watcher gets every
///           event exactly once, in resourceVersion order.
///
///   connections
///           WATCHERS watches through --watch-kubeconfig (e.g. a user with a bearer token),
///           each on an HTTP/1.1 connection of its own, must all be answered; then
///           IDLE_CONNECTIONS TLS connections without credentials that send nothing and as
///           many TCP connections that never start a handshake are held; meanwhile fresh
///           connections of both users are timed (connect, TLS, one GET) every 50 ms.
///           Not part of `all`.
///
///   all     every scenario in turn (but connections).
///
/// Throughput counts successful requests completed in the measured window (after the
/// warm-up); failed requests (non-2xx, transport errors, timeouts) are always counted and
/// reported. Exit status: 0 when every request succeeded and every watcher got every event;
/// 1 on a fatal error (e.g. unreadable kubeconfig, server unreachable, a scenario that could
/// not run); 2 on invalid flags; 3 when requests failed or a watcher missed, duplicated or
/// misordered events.
#[derive(Debug, Clone, Parser)]
#[command(name = "wasmgate-bench", version, verbatim_doc_comment)]
pub struct Args {
    /// Kubeconfig to read the server URL, CA and client certificate from. Repeat it to
    /// drive several replicas at once (e.g. `admin.kubeconfig` and
    /// `admin-replica-2.kubeconfig` of `wasmgate serve --replicas 2`): the scenario runs
    /// against each at the same time, each with --concurrency clients, and the report
    /// gives each replica's figures and their aggregate (load scenarios only: create, get,
    /// update, apply, list; no plugins, webhook or policy)
    #[arg(long, default_value = "./wasmgate-data/admin.kubeconfig", action = clap::ArgAction::Append)]
    pub kubeconfig: Vec<PathBuf>,

    /// Kubeconfig of the server the watchers of `watch` connect to (another replica, e.g.
    /// `admin-replica-2.kubeconfig` of `wasmgate serve --replicas 2`): writes go through
    /// `--kubeconfig`, so delivery latency includes the replicas following each other
    /// [default: the same as --kubeconfig]
    #[arg(long)]
    pub watch_kubeconfig: Option<PathBuf>,

    /// Which scenario to run
    #[arg(long, value_enum, default_value_t = Scenario::All)]
    pub scenario: Scenario,

    /// Concurrent clients for create/get/update/list (one request in flight each)
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub concurrency: u32,

    /// Size of each ConfigMap's data payload in bytes (suffixes k/KiB, m/MiB allowed)
    #[arg(long, default_value = "1KiB", value_parser = parse_size)]
    pub object_size: usize,

    /// Measured time per scenario (e.g. 10s, 500ms, 1m)
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    pub duration: Duration,

    /// Warm-up before measuring, per scenario (not counted in throughput or latency)
    #[arg(long, default_value = "2s", value_parser = parse_duration)]
    pub warmup: Duration,

    /// Watchers in the watch and connections scenarios
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub watchers: u32,

    /// Connections scenario: idle TLS connections without credentials to hold, and as many
    /// TCP connections that never start a handshake
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u32).range(0..=10_000))]
    pub idle_connections: u32,

    /// Creates per second in the watch scenario (open loop: sent on schedule, not after
    /// the previous one completed)
    #[arg(long, default_value_t = 1000.0, value_parser = parse_rate)]
    pub rate: f64,

    /// Concurrent writer connections (HTTP/1.1) or in-flight writes (HTTP/2) available to
    /// keep up with --rate in the watch scenario
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub watch_writers: u32,

    /// Objects created first for get and update
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u32).range(1..=10_000_000))]
    pub objects: u32,

    /// Objects in the listed collection (and the limit of each list request)
    #[arg(long, default_value_t = 500, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub list_size: u32,

    /// The limit of each list request instead of --list-size (0: no limit, the whole
    /// collection in one response)
    #[arg(long)]
    pub list_limit: Option<u32>,

    /// Ask for lists as a Table (`Accept: application/json;as=Table;v=v1;g=meta.k8s.io`, as
    /// kubectl get does)
    #[arg(long, conflicts_with = "list_protobuf")]
    pub list_table: bool,

    /// Ask for lists in Kubernetes protobuf (`Accept: application/vnd.kubernetes.protobuf,
    /// application/json`, as client-go configured with `ContentType:
    /// application/vnd.kubernetes.protobuf` does); compare with the same run without it
    #[arg(long)]
    pub list_protobuf: bool,

    /// What to create: built-in ConfigMaps, or Widgets of the example CRD
    /// (examples/crds/widgets.yaml: a structural schema with defaults and CEL rules; the
    /// CRD is created if missing), with the payload in `spec.notes`
    #[arg(long, value_enum, default_value_t = Kind::Configmap)]
    pub kind: Kind,

    /// With --kind widget: validate widgets with an admission webhook as well, served by
    /// this process (wasmgate-fixtures: HTTPS on 127.0.0.1, the widgets plugin's rule). The
    /// ValidatingWebhookConfiguration `wasmgate-bench` is created first and deleted at the
    /// end; the webhook's CPU is this process's.
    #[arg(long)]
    pub webhook: bool,

    /// With --kind widget: validate widgets with the ValidatingAdmissionPolicy of
    /// examples/policies/widgets.yaml (the same rule in CEL, run by the gateway), installed
    /// first and deleted at the end
    #[arg(long)]
    pub policy: bool,

    /// With --scenario create: bind N Wasm plugins (validating; see --plugin-hooks) to the
    /// kind created, N `WasmPlugin` objects `bench-validate-0` .. `bench-validate-<N-1>` of
    /// one module (--kind widget: the widgets plugin, widgets.wasm, on example.com
    /// widgets; --kind configmap: the owner-policy plugin, owner_policy.wasm, on
    /// configmaps, which needs an `owner` label: the ConfigMaps created then carry `owner:
    /// wasmgate-bench`), with failurePolicy Fail and timeoutMilliseconds 1000. Every
    /// `WasmPlugin` an earlier run left (label app.kubernetes.io/managed-by=wasmgate-bench)
    /// is deleted first; the new ones are waited for until Ready (a refused one, or one not
    /// Ready within 30 s, stops the run with its Ready condition) and deleted at the end.
    /// They bind the whole resource, in every namespace: run against a gateway started with
    /// `--plugin-dir none` to measure only these
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=100))]
    pub plugins: Option<u32>,

    /// With --scenario create --kind configmap: bind a pair of Wasm plugins to configmaps,
    /// `bench-stamper` (mutate: stamper.wasm returns the whole object with an `owner` label
    /// and a `stamper.wasmgate.dev/stamped-by` annotation) and `bench-owner-policy`
    /// (validate: owner_policy.wasm requires the owner label), created, waited for and
    /// deleted as with --plugins
    #[arg(long, conflicts_with = "plugins")]
    pub plugin_pair: bool,

    /// With --plugins and --kind widget: the hooks each plugin is bound with
    /// (comma-separated: mutate, validate; mutate is the widgets plugin's
    /// `example.com/color` label)
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "validate",
        requires = "plugins"
    )]
    pub plugin_hooks: Vec<Hook>,

    /// With --plugins or --plugin-pair: the plugins' `spec.isolation` (per-request: a fresh
    /// instance per request; reused: instances kept across requests)
    #[arg(long, value_enum, default_value = "per-request")]
    pub plugin_isolation: PluginIsolation,

    /// Directory of the plugin modules (built by `bash plugins/build.sh`), on the
    /// gateway's machine: the `WasmPlugin`s name them by absolute path
    #[arg(long, value_name = "DIR", default_value = "plugins/dist")]
    pub plugin_dist: PathBuf,

    /// Namespace to work in (created if missing; object names are fresh on every run)
    #[arg(long, default_value = "bench")]
    pub namespace: String,

    /// Use HTTP/2, multiplexing all clients over --connections connections (default:
    /// HTTP/1.1 keep-alive, one connection per client)
    #[arg(long)]
    pub http2: bool,

    /// HTTP/2 connections to multiplex over (per role: load clients, watch writers and
    /// watchers each get this many)
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub connections: u32,

    /// Per-request timeout (a request that takes longer counts as failed)
    #[arg(long, default_value = "30s", value_parser = parse_duration)]
    pub timeout: Duration,

    /// How long the watch scenario waits, after the last write, for every watcher to
    /// receive every event
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    pub drain: Duration,

    /// Worker threads of the benchmark's runtime (1: a single-threaded runtime, which
    /// leaves the most CPU to a server on the same machine)
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=256))]
    pub client_threads: u32,

    /// Server process id, to report its CPU use alongside the benchmark's own
    #[arg(long)]
    pub server_pid: Option<u32>,

    /// The server's data directory, to report the size of its store (`store.redb` and its
    /// write-ahead log `store.wal`) before and after each scenario
    #[arg(long)]
    pub server_data_dir: Option<std::path::PathBuf>,

    /// Print one line per second to stderr while measuring (throughput, failures, the
    /// slowest request of that second; for watch also events delivered), to see stalls
    #[arg(long)]
    pub progress: bool,
}

/// The kind of object the scenarios create.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// core/v1 ConfigMaps.
    Configmap,
    /// example.com/v1 Widgets (a custom resource with a schema).
    Widget,
}

/// An admission hook a plugin of `--plugins` is bound with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Hook {
    /// Mutating admission.
    Mutate,
    /// Validating admission.
    Validate,
}

impl Hook {
    /// The hook's name in a `WasmPlugin`'s `spec.hooks`.
    pub fn name(self) -> &'static str {
        match self {
            Hook::Mutate => "mutate",
            Hook::Validate => "validate",
        }
    }
}

/// How the bench's plugins share instances between requests (`spec.isolation`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum PluginIsolation {
    /// A fresh instance per request.
    PerRequest,
    /// Instances kept and reused across requests.
    Reused,
}

impl PluginIsolation {
    /// The `WasmPlugin` spelling.
    pub fn spec(self) -> &'static str {
        match self {
            PluginIsolation::PerRequest => "PerRequest",
            PluginIsolation::Reused => "Reused",
        }
    }
}

/// A scenario.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Scenario {
    /// POST new ConfigMaps.
    Create,
    /// GET existing ConfigMaps.
    Get,
    /// PUT existing ConfigMaps.
    Update,
    /// Server-side apply (PATCH application/apply-patch+yaml) to existing ConfigMaps.
    Apply,
    /// LIST a collection.
    List,
    /// Watch fan-out.
    Watch,
    /// Many watches and idle connections, and fresh connections timed beside them.
    Connections,
    /// All of the above but connections, in this order.
    All,
}

impl Scenario {
    /// The scenarios this one stands for.
    pub fn expand(self) -> Vec<Scenario> {
        match self {
            Scenario::All => vec![
                Scenario::Create,
                Scenario::Get,
                Scenario::Update,
                Scenario::Apply,
                Scenario::List,
                Scenario::Watch,
            ],
            s => vec![s],
        }
    }

    /// The scenario's name.
    pub fn name(self) -> &'static str {
        match self {
            Scenario::Create => "create",
            Scenario::Get => "get",
            Scenario::Update => "update",
            Scenario::Apply => "apply",
            Scenario::List => "list",
            Scenario::Watch => "watch",
            Scenario::Connections => "connections",
            Scenario::All => "all",
        }
    }
}

/// Parses `10s`, `500ms`, `2m`, `1.5s`, `250us` or a bare number of seconds.
impl Args {
    /// The kubeconfig of the server (the first one given).
    pub fn kubeconfig(&self) -> &std::path::Path {
        self.kubeconfig
            .first()
            .map_or(std::path::Path::new(""), PathBuf::as_path)
    }

    /// Whether several replicas are driven at once (`--kubeconfig` repeated).
    pub fn several_replicas(&self) -> bool {
        self.kubeconfig.len() > 1
    }

    /// One set of flags per replica, each with its own kubeconfig and the rest the same.
    pub fn per_replica(&self) -> Vec<Args> {
        self.kubeconfig
            .iter()
            .map(|k| Args {
                kubeconfig: vec![k.clone()],
                ..self.clone()
            })
            .collect()
    }

    /// Flags that do not go with several `--kubeconfig`s: the scenarios that are not load
    /// scenarios (their checks assume one writer), and what binds cluster-wide objects
    /// (plugins, the webhook, the policy) that each replica's setup would install again.
    pub fn check_replicas(&self) -> Result<(), String> {
        if !self.several_replicas() {
            return Ok(());
        }
        let load = [
            Scenario::Create,
            Scenario::Get,
            Scenario::Update,
            Scenario::Apply,
            Scenario::List,
        ];
        if !load.contains(&self.scenario) {
            return Err(format!(
                "several --kubeconfig run a load scenario (create, get, update, apply, list) on each replica at once, not --scenario {}",
                self.scenario.name()
            ));
        }
        let bound = [
            ("--plugins", self.plugins.is_some()),
            ("--plugin-pair", self.plugin_pair),
            ("--webhook", self.webhook),
            ("--policy", self.policy),
            ("--watch-kubeconfig", self.watch_kubeconfig.is_some()),
        ];
        match bound.iter().find(|(_, set)| *set) {
            Some((flag, _)) => Err(format!("{flag} does not go with several --kubeconfig")),
            None => Ok(()),
        }
    }
}

pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let n: f64 = num
        .parse()
        .map_err(|_| format!("invalid duration {s:?} (use e.g. 10s, 500ms, 1m)"))?;
    let secs = match unit.trim() {
        "" | "s" | "sec" | "secs" => n,
        "ms" => n / 1e3,
        "us" | "µs" => n / 1e6,
        "m" | "min" => n * 60.0,
        "h" => n * 3600.0,
        u => return Err(format!("unknown duration unit {u:?} in {s:?}")),
    };
    Duration::try_from_secs_f64(secs).map_err(|e| format!("invalid duration {s:?}: {e}"))
}

/// Parses `1024`, `1k`, `1KiB`, `4kb`, `1m`, `1MiB` (binary multiples).
pub fn parse_size(s: &str) -> Result<usize, String> {
    let s = s.trim();
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let n: usize = num
        .parse()
        .map_err(|_| format!("invalid size {s:?} (use e.g. 1024, 1KiB, 4k)"))?;
    let mult = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1024,
        "m" | "mb" | "mib" => 1024 * 1024,
        u => return Err(format!("unknown size unit {u:?} in {s:?}")),
    };
    n.checked_mul(mult)
        .filter(|&b| b <= 64 * 1024 * 1024)
        .ok_or_else(|| format!("size {s:?} is too large (at most 64 MiB)"))
}

/// Parses a positive, finite rate.
pub fn parse_rate(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(r) if r.is_finite() && r > 0.0 && r <= 10_000_000.0 => Ok(r),
        _ => Err(format!(
            "invalid rate {s:?} (a positive number of writes per second)"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory as _;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("10s"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_duration("10"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert!(parse_duration("ten").is_err());
        assert!(parse_duration("5 parsecs").is_err());
        assert!(parse_duration("").is_err());
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("1024"), Ok(1024));
        assert_eq!(parse_size("1KiB"), Ok(1024));
        assert_eq!(parse_size("4k"), Ok(4096));
        assert_eq!(parse_size("1MiB"), Ok(1 << 20));
        assert_eq!(parse_size("0"), Ok(0));
        assert!(parse_size("1GiB").is_err());
        assert!(parse_size("lots").is_err());
        assert!(parse_size("99999999999999999999k").is_err());
    }

    #[test]
    fn rates_and_flags() {
        assert_eq!(parse_rate("1000"), Ok(1000.0));
        assert!(parse_rate("0").is_err());
        assert!(parse_rate("NaN").is_err());
        Args::command().debug_assert();
        let a = Args::try_parse_from(["b", "--scenario", "watch", "--http2"]).unwrap();
        assert_eq!(a.scenario, Scenario::Watch);
        assert!(a.http2);
        assert_eq!(a.object_size, 1024);
        assert_eq!(a.concurrency, 64);
        assert!(Args::try_parse_from(["b", "--concurrency", "0"]).is_err());
        assert_eq!(Scenario::All.expand().len(), 6);
        let a = Args::try_parse_from(["b", "--scenario", "apply"]).unwrap();
        assert_eq!(a.scenario.name(), "apply");
        let a = Args::try_parse_from(["b", "--scenario", "list", "--list-protobuf"]).unwrap();
        assert!(a.list_protobuf);
        assert!(Args::try_parse_from(["b", "--list-protobuf", "--list-table"]).is_err());
    }

    /// Issue 28: `--kubeconfig` may be repeated to drive several replicas at once; one is
    /// the default; what does not go with several is refused.
    #[test]
    fn several_kubeconfigs() {
        let a = Args::try_parse_from(["b"]).unwrap();
        assert_eq!(
            a.kubeconfig,
            [PathBuf::from("./wasmgate-data/admin.kubeconfig")]
        );
        assert!(!a.several_replicas() && a.check_replicas().is_ok());
        let a = Args::try_parse_from(["b", "--kubeconfig", "one"]).unwrap();
        assert_eq!(
            a.kubeconfig,
            [PathBuf::from("one")],
            "given, not added to the default"
        );
        assert_eq!(a.kubeconfig(), std::path::Path::new("one"));
        let a = Args::try_parse_from([
            "b",
            "--kubeconfig",
            "one",
            "--kubeconfig",
            "two",
            "--scenario",
            "create",
            "--concurrency",
            "8",
        ])
        .unwrap();
        assert!(a.several_replicas());
        assert_eq!(a.check_replicas(), Ok(()));
        let each = a.per_replica();
        assert_eq!(each.len(), 2);
        assert_eq!(each[1].kubeconfig, [PathBuf::from("two")]);
        assert!(
            each.iter()
                .all(|e| e.concurrency == 8 && !e.several_replicas())
        );
        for refused in [
            &["--scenario", "watch"][..],
            &["--scenario", "all"],
            &["--scenario", "connections"],
            &["--scenario", "create", "--plugin-pair"],
            &["--scenario", "create", "--watch-kubeconfig", "w"],
        ] {
            let mut argv = vec!["b", "--kubeconfig", "one", "--kubeconfig", "two"];
            argv.extend_from_slice(refused);
            let a = Args::try_parse_from(argv).unwrap();
            assert!(a.check_replicas().is_err(), "{refused:?}");
        }
    }
}
