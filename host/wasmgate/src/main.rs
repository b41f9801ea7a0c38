//! The `wasmgate` binary: flags, environment and config file into a [`Config`], logging,
//! signals. Precedence: defaults < config file < environment < flags.
#![forbid(unsafe_code)]
#![allow(
    clippy::disallowed_methods,
    reason = "the binary is where configuration is read"
)]

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::{Parser, Subcommand};
use wasmgate::{Config, Gateway, config};

/// mimalloc instead of glibc's malloc: requests allocate and free many small buffers on
/// two threads, and a fresh plugin instance per call more (measured: glibc's malloc and
/// free were ~12 % of the server's CPU under create load with plugins). Built without
/// transparent huge pages (`no_thp`): with them every page mimalloc took back from the OS
/// faulted in as a zeroed 2 MiB page (`clear_page_erms` was 5-11 % of the server's CPU
/// under create load, 0.4 % without).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// A Kubernetes-compatible API server for your own resource types.
#[derive(Debug, Parser)]
#[command(name = "wasmgate", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the gateway: HTTPS on --listen, store and PKI in --data-dir, and the admin
    /// kubeconfig written to DATA_DIR/admin.kubeconfig before it reports ready.
    Serve(ServeArgs),
    /// Print the effective configuration (defaults < file < environment < flags) as YAML.
    Config(ServeArgs),
    /// Repair the embedded store of a stopped gateway whose write-ahead log is damaged
    /// before its end (the gateway refuses to start and says so): the records before the
    /// damage are kept, the damaged record and every one after it are dropped (their
    /// writes are lost; the count is printed), and resourceVersions continue after the
    /// highest they held. Keep a copy of the data directory first.
    Repair(ServeArgs),
    /// Write, build, run and test plugins, without a gateway.
    #[command(subcommand)]
    Plugin(wasmgate::plugin_cli::PluginCommand),
}

#[derive(Debug, clap::Args)]
struct ServeArgs {
    /// Data directory (store, PKI, admin.kubeconfig) [default: ./wasmgate-data]
    #[arg(long, env = "WASMGATE_DATA_DIR", value_name = "DIR")]
    data_dir: Option<PathBuf>,
    /// HTTPS listen address [default: 127.0.0.1:6443]
    #[arg(long, env = "WASMGATE_LISTEN", value_name = "ADDR:PORT")]
    listen: Option<SocketAddr>,
    /// Configuration file (YAML or JSON; keys as in `wasmgate config`)
    #[arg(long, env = "WASMGATE_CONFIG", value_name = "FILE")]
    config: Option<PathBuf>,
    /// Extra subject alternative name for the serving certificate (repeatable)
    #[arg(long = "tls-san", value_name = "NAME|IP")]
    tls_sans: Vec<String>,
    /// Also serve plain HTTP here, WITHOUT authentication (every request acts as an
    /// administrator). Only with this explicit flag; bind it to loopback
    #[arg(long, env = "WASMGATE_INSECURE_LISTEN", value_name = "ADDR:PORT")]
    insecure_listen: Option<SocketAddr>,
    /// Storage engine: `embedded` (redb file in the data directory), `memory`, or `tikv`
    /// (a TiKV cluster shared by several replicas; needs --pd-endpoints and a build with
    /// `--features tikv`)
    #[arg(long, env = "WASMGATE_STORAGE", value_name = "ENGINE")]
    storage: Option<StorageKind>,
    /// TiKV: the cluster's PD endpoints, comma-separated (host:port,...)
    #[arg(
        long,
        env = "WASMGATE_PD_ENDPOINTS",
        value_name = "ADDRS",
        value_delimiter = ','
    )]
    pd_endpoints: Vec<String>,
    /// TiKV: prefix of every key (replicas of one gateway share it) [default: wasmgate/]
    #[arg(long, env = "WASMGATE_KEY_PREFIX", value_name = "PREFIX")]
    key_prefix: Option<String>,
    /// Serve this many replicas over one store, on consecutive ports, each following the
    /// others' writes (to try the replica logic on one machine) [default: 1]
    #[arg(long, env = "WASMGATE_REPLICAS", value_name = "N")]
    replicas: Option<u16>,
    /// Seconds between watch bookmarks [default: 60]
    #[arg(long, value_name = "SECONDS")]
    bookmark_interval: Option<u64>,
    /// History kept for watches and continue tokens, in seconds [default: 300]
    #[arg(long, value_name = "SECONDS")]
    history_retention: Option<u64>,
    /// Directory of WasmPlugin manifests (*.yaml) and their .wasm modules, applied at start
    /// and followed while serving (`none` for no directory) [default: ./examples/plugins
    /// when it exists, so that the repository's quick start serves its example plugins]
    #[arg(long, env = "WASMGATE_PLUGIN_DIR", value_name = "DIR")]
    plugin_dir: Option<PathBuf>,
    /// Static bearer tokens: a CSV file of `token,user,uid[,"group1,group2"]` lines, as
    /// kube-apiserver's flag of the same name
    #[arg(long, env = "WASMGATE_TOKEN_AUTH_FILE", value_name = "FILE")]
    token_auth_file: Option<PathBuf>,
    /// Audit log: `audit.k8s.io/v1` Event JSON lines appended to this file
    #[arg(long, env = "WASMGATE_AUDIT_LOG_PATH", value_name = "FILE")]
    audit_log_path: Option<PathBuf>,
    /// Audit policy (`audit.k8s.io/v1` Policy, YAML) [default: every request at Metadata]
    #[arg(long, env = "WASMGATE_AUDIT_POLICY_FILE", value_name = "FILE")]
    audit_policy_file: Option<PathBuf>,
    /// Encryption at rest: an `apiserver.config.k8s.io/v1` EncryptionConfiguration (YAML),
    /// as kube-apiserver's flag of the same name (providers aesgcm and identity)
    #[arg(long, env = "WASMGATE_ENCRYPTION_PROVIDER_CONFIG", value_name = "FILE")]
    encryption_provider_config: Option<PathBuf>,
    /// The cluster key (base64 of 32 random bytes): the private keys of the cluster's
    /// identity (CA, front-proxy CA, ServiceAccount signing key), which the first replica
    /// creates and every replica loads, are sealed with it in the store; every replica of
    /// a cluster needs the same [default: DATA_DIR/cluster.key, created on first start]
    #[arg(long, env = "WASMGATE_CLUSTER_KEY_FILE", value_name = "FILE")]
    cluster_key_file: Option<PathBuf>,
    /// Log filter (tracing EnvFilter syntax) [default: info, or RUST_LOG]
    #[arg(long, env = "WASMGATE_LOG", value_name = "FILTER")]
    log: Option<String>,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum StorageKind {
    Embedded,
    Memory,
    Tikv,
}

fn effective_config(args: &ServeArgs) -> anyhow::Result<Config> {
    let mut c = match &args.config {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("reading {}", path.display()))?;
            config::parse(&text).with_context(|| format!("parsing {}", path.display()))?
        }
        None => Config::default(),
    };
    if let Some(d) = &args.data_dir {
        c.data_dir = d.clone();
    }
    if let Some(l) = args.listen {
        c.listen = l;
    }
    c.tls_sans.extend(args.tls_sans.iter().cloned());
    if args.insecure_listen.is_some() {
        c.insecure_listen = args.insecure_listen;
    }
    match args.storage {
        Some(StorageKind::Memory) => c.storage = config::StorageConfig::Memory,
        Some(StorageKind::Embedded) if c.storage == config::StorageConfig::Memory => {
            c.storage = config::StorageConfig::Embedded {
                cache_mib: wasmgate_storage_embedded::DEFAULT_CACHE_MIB,
            };
        }
        Some(StorageKind::Tikv) if !matches!(c.storage, config::StorageConfig::Tikv(_)) => {
            c.storage = config::StorageConfig::Tikv(config::TikvConfig::new(Vec::new()));
        }
        _ => {}
    }
    if let config::StorageConfig::Tikv(t) = &mut c.storage {
        if !args.pd_endpoints.is_empty() {
            t.pd_endpoints.clone_from(&args.pd_endpoints);
        }
        if let Some(p) = &args.key_prefix {
            t.key_prefix.clone_from(p);
        }
        if t.pd_endpoints.is_empty() {
            anyhow::bail!(
                "--storage tikv needs --pd-endpoints (or pd-endpoints in the config file)"
            );
        }
    } else if !args.pd_endpoints.is_empty() || args.key_prefix.is_some() {
        anyhow::bail!("--pd-endpoints and --key-prefix are for --storage tikv");
    }
    if let Some(n) = args.replicas {
        c.replicas = n;
    }
    if c.replicas == 0 {
        anyhow::bail!("--replicas must be at least 1");
    }
    if let Some(b) = args.bookmark_interval {
        c.limits.bookmark_interval_seconds = b;
    }
    if let Some(h) = args.history_retention {
        c.limits.history_retention_seconds = h;
    }
    if let Some(f) = &args.token_auth_file {
        c.token_auth_file = Some(f.clone());
    }
    if let Some(f) = &args.audit_log_path {
        c.audit_log_path = Some(f.clone());
    }
    if let Some(f) = &args.audit_policy_file {
        c.audit_policy_file = Some(f.clone());
    }
    if let Some(f) = &args.encryption_provider_config {
        c.encryption_provider_config = Some(f.clone());
    }
    if let Some(f) = &args.cluster_key_file {
        c.cluster_key_file = Some(f.clone());
    }
    match &args.plugin_dir {
        Some(d) if d.as_os_str() == "none" => c.plugin_dir = None,
        Some(d) => c.plugin_dir = Some(d.clone()),
        None if c.plugin_dir.is_none() => {
            let examples = PathBuf::from("./examples/plugins");
            if examples.join("widgets.yaml").is_file() {
                c.plugin_dir = Some(examples);
            }
        }
        None => {}
    }
    Ok(c)
}

fn main() -> anyhow::Result<ExitCode> {
    let cli = Cli::parse();
    match cli.command {
        Command::Plugin(cmd) => Ok(wasmgate::plugin_cli::main(cmd)),
        Command::Config(args) => {
            let c = effective_config(&args)?;
            print!("{}", serde_saphyr::to_string(&c)?);
            Ok(ExitCode::SUCCESS)
        }
        Command::Repair(args) => {
            init_logging(&args);
            let config = effective_config(&args)?;
            match wasmgate::repair(&config)? {
                None => println!(
                    "{}: the write-ahead log is not damaged; nothing was dropped",
                    config.data_dir.display()
                ),
                Some(r) => println!(
                    "repaired {}: dropped records {}..={} of {} from offset {} ({} records, \
                     {} bytes; {} of them whole, whose writes are lost); resourceVersions \
                     continue after {}",
                    config.data_dir.display(),
                    r.first,
                    r.last,
                    r.log.display(),
                    r.offset,
                    r.records,
                    r.bytes,
                    r.whole,
                    r.revision
                ),
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Serve(args) => {
            init_logging(&args);
            let config = effective_config(&args)?;
            let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
            tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()?
                .block_on(run(config))?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn init_logging(args: &ServeArgs) {
    let filter = args
        .log
        .clone()
        .or_else(|| std::env::var("RUST_LOG").ok())
        .unwrap_or_else(|| "info".into());
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
        .with_writer(std::io::stderr)
        .init();
}

async fn run(config: Config) -> anyhow::Result<()> {
    let gw = Gateway::start(&config).await?;
    // Printed before the line below, which says every replica is up.
    for (i, r) in gw.other_replicas.iter().enumerate() {
        println!(
            "wasmgate replica {}: https://{} kubeconfig={}",
            i + 2,
            r.https_addr,
            r.kubeconfig.display()
        );
    }
    // One line tests and scripts wait for; the kubeconfig exists when it is printed.
    println!(
        "wasmgate ready: https://{} kubeconfig={}",
        gw.https_addr,
        gw.kubeconfig.display()
    );
    if let Some(a) = gw.insecure_addr {
        println!("wasmgate insecure http listener (no authentication): http://{a}");
    }
    tracing::info!(addr = %gw.https_addr, kubeconfig = %gw.kubeconfig.display(), "serving");
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
    tracing::info!("shutting down");
    gw.shutdown().await
}
