//! Configuration: plain data with defaults. Only `main.rs` reads files, environment and
//! flags; tests build a [`Config`] in code.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use wasmgate_storage_embedded::DEFAULT_CACHE_MIB;

/// Everything needed to start the gateway.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case", default)]
pub struct Config {
    /// Data directory: the store, the PKI and `admin.kubeconfig`.
    pub data_dir: PathBuf,
    /// HTTPS listen address.
    pub listen: SocketAddr,
    /// Extra subject alternative names for the serving certificate (DNS names or IPs).
    pub tls_sans: Vec<String>,
    /// Optional plain-HTTP listener. It has no authentication: every request acts as an
    /// administrator. Bind it to loopback only.
    pub insecure_listen: Option<SocketAddr>,
    /// Which storage engine.
    pub storage: StorageConfig,
    /// Keep every current object in memory and serve reads at the latest revision from
    /// there, as kube-apiserver's watch cache does (memory: about the size of the stored
    /// objects). Off: every read goes to the engine.
    pub cache_objects: bool,
    /// Store object values compressed (zstd): about 0.75x the disk for objects with
    /// random-looking payloads, far less for typical ones; ~6 µs of CPU per write, in the
    /// writer's request (see `wasmgate-storage`'s `payload` module). Either way the store
    /// reads what was written both ways.
    pub compress_values: bool,
    /// Replicas served by this process over one store, each on its own port (`listen`,
    /// then the next ports) with its own object cache and watch hub, following each
    /// other's writes: how several gateways over one TiKV cluster behave, on one machine.
    /// For testing the replica logic; one is what a single machine needs.
    pub replicas: u16,
    /// A directory of `WasmPlugin` manifests (`*.yaml`) and their modules, applied at
    /// start and followed while serving.
    pub plugin_dir: Option<PathBuf>,
    /// Static bearer tokens: a CSV file of `token,user,uid[,"group1,group2"]` lines
    /// (kube-apiserver's `--token-auth-file`).
    pub token_auth_file: Option<PathBuf>,
    /// Where audit events go (`audit.k8s.io/v1` Event JSON lines); none: no audit log.
    pub audit_log_path: Option<PathBuf>,
    /// The audit policy (`audit.k8s.io/v1` Policy); none: every request at `Metadata`.
    pub audit_policy_file: Option<PathBuf>,
    /// Front proxies (IP addresses or CIDRs) whose `X-Forwarded-For` and `X-Real-Ip`
    /// headers the audit log believes: their entries come first in an event's
    /// `sourceIPs`. From anyone else only the connection's address is recorded.
    pub trusted_proxies: Vec<String>,
    /// Encryption at rest: an `apiserver.config.k8s.io/v1` `EncryptionConfiguration`
    /// (kube-apiserver's `--encryption-provider-config`; `aesgcm` and `identity`).
    pub encryption_provider_config: Option<PathBuf>,
    /// The cluster key: base64 of 32 random bytes, with which the private keys of the
    /// cluster identity (its CA, front-proxy CA and ServiceAccount signing key, shared by
    /// every replica through the store) are sealed there. Every replica of a cluster needs
    /// the same. None: `DATA_DIR/cluster.key`, created on first start.
    pub cluster_key_file: Option<PathBuf>,
    /// Protocol tuning.
    pub limits: Limits,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            data_dir: PathBuf::from("./wasmgate-data"),
            listen: SocketAddr::from(([127, 0, 0, 1], 6443)),
            tls_sans: Vec::new(),
            insecure_listen: None,
            storage: StorageConfig::Embedded {
                cache_mib: DEFAULT_CACHE_MIB,
            },
            cache_objects: true,
            compress_values: true,
            replicas: 1,
            plugin_dir: None,
            token_auth_file: None,
            audit_log_path: None,
            audit_policy_file: None,
            trusted_proxies: Vec::new(),
            encryption_provider_config: None,
            cluster_key_file: None,
            limits: Limits::default(),
        }
    }
}

/// The storage engine, chosen by its `type` tag.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(tag = "type", rename_all = "kebab-case", deny_unknown_fields)]
pub enum StorageConfig {
    /// The embedded redb engine, in `DATA_DIR/store.redb` (default).
    Embedded {
        /// Page cache in MiB.
        #[serde(default = "default_cache_mib", rename = "cache-mib")]
        cache_mib: usize,
    },
    /// The embedded engine in memory only: nothing survives a restart.
    Memory,
    /// A TiKV cluster, shared by several gateway replicas (a build with the `tikv`
    /// feature).
    Tikv(TikvConfig),
}

/// Where and how to reach TiKV.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct TikvConfig {
    /// PD endpoints, `host:port` (all of them).
    pub pd_endpoints: Vec<String>,
    /// Prefix of every key: replicas of one gateway share it; gateways that share a
    /// cluster use different ones.
    #[serde(default = "default_key_prefix")]
    pub key_prefix: String,
    /// Longest wait for one storage call, in milliseconds (then `503`/`504`).
    #[serde(default = "default_tikv_timeout_ms")]
    pub timeout_ms: u64,
    /// Longest wait for PD at start, in milliseconds (then the gateway exits).
    #[serde(default = "default_tikv_connect_timeout_ms")]
    pub connect_timeout_ms: u64,
    /// How often a replica looks for other replicas' writes, in milliseconds (the delay
    /// before its watchers see them).
    #[serde(default = "default_follow_ms")]
    pub follow_ms: u64,
    /// Mutual TLS to PD and TiKV: the cluster's CA, this client's certificate and key.
    #[serde(default)]
    pub tls: Option<TikvTls>,
}

/// TLS files for the TiKV cluster.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct TikvTls {
    /// CA certificate (PEM).
    pub ca: PathBuf,
    /// Client certificate (PEM).
    pub cert: PathBuf,
    /// Client key (PEM).
    pub key: PathBuf,
}

impl TikvConfig {
    /// Defaults for `pd_endpoints`.
    pub fn new(pd_endpoints: Vec<String>) -> TikvConfig {
        TikvConfig {
            pd_endpoints,
            key_prefix: default_key_prefix(),
            timeout_ms: default_tikv_timeout_ms(),
            connect_timeout_ms: default_tikv_connect_timeout_ms(),
            follow_ms: default_follow_ms(),
            tls: None,
        }
    }
}

fn default_key_prefix() -> String {
    "wasmgate/".to_owned()
}

fn default_tikv_timeout_ms() -> u64 {
    5_000
}

fn default_tikv_connect_timeout_ms() -> u64 {
    10_000
}

fn default_follow_ms() -> u64 {
    20
}

fn default_cache_mib() -> usize {
    DEFAULT_CACHE_MIB
}

/// Protocol tuning knobs.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case", default)]
pub struct Limits {
    /// Largest request body in bytes (413 above).
    pub max_request_body_bytes: usize,
    /// Most non-watch requests in flight (429 above).
    pub max_in_flight: usize,
    /// Most of those one user may hold (429 above; administrators are not limited).
    pub max_in_flight_per_user: usize,
    /// Seconds between watch bookmarks.
    pub bookmark_interval_seconds: u64,
    /// History kept for watches and continue tokens, in seconds (at least 300).
    pub history_retention_seconds: u64,
    /// Seconds between compactions.
    pub compaction_interval_seconds: u64,
    /// Watches without `timeoutSeconds` end after [1x, 2x) of this many seconds.
    pub min_request_timeout_seconds: u64,
    /// Seconds any other request may take (a shorter `timeout=` wins), then `504`
    /// (kube-apiserver's `--request-timeout`).
    pub request_timeout_seconds: u64,
    /// Seconds in-flight requests get to finish at shutdown.
    pub shutdown_drain_seconds: u64,
    /// Seconds a client may take for the TLS handshake and for each request's headers.
    pub header_read_timeout_seconds: u64,
    /// Seconds a connection may stay open with no request in flight.
    pub idle_timeout_seconds: u64,
    /// Most connections at once without a client certificate (or still handshaking).
    pub max_unauthenticated_connections: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_request_body_bytes: 3 * 1024 * 1024,
            max_in_flight: 1000,
            max_in_flight_per_user: 250,
            bookmark_interval_seconds: 60,
            history_retention_seconds: 300,
            compaction_interval_seconds: 60,
            min_request_timeout_seconds: 1800,
            request_timeout_seconds: 60,
            shutdown_drain_seconds: 30,
            header_read_timeout_seconds: 32,
            idle_timeout_seconds: 90,
            max_unauthenticated_connections: 256,
        }
    }
}

impl Limits {
    /// Serving options for these limits (`tls`: the TLS listener's configuration).
    pub fn serve_options(
        &self,
        tls: Option<std::sync::Arc<rustls::ServerConfig>>,
    ) -> wasmgate_server::ServeOptions {
        let mut o = wasmgate_server::ServeOptions::new(tls);
        o.drain_timeout = Duration::from_secs(self.shutdown_drain_seconds);
        o.header_read_timeout = Duration::from_secs(self.header_read_timeout_seconds.max(1));
        o.idle_timeout = Duration::from_secs(self.idle_timeout_seconds.max(1));
        o.max_unauthenticated_connections = self.max_unauthenticated_connections.max(1);
        o
    }

    /// The API server's options for these limits.
    pub fn api_options(&self, advertise: &str) -> wasmgate_apiserver::Options {
        wasmgate_apiserver::Options {
            bookmark_interval: Duration::from_secs(self.bookmark_interval_seconds.max(1)),
            min_request_timeout: Duration::from_secs(self.min_request_timeout_seconds.max(1)),
            request_timeout: Duration::from_secs(self.request_timeout_seconds.max(1)),
            max_request_body_bytes: self.max_request_body_bytes,
            max_in_flight: self.max_in_flight,
            max_in_flight_per_user: self.max_in_flight_per_user,
            history_retention: Duration::from_secs(self.history_retention_seconds),
            compaction_interval: Duration::from_secs(self.compaction_interval_seconds.max(1)),
            advertise_address: advertise.to_owned(),
            ..wasmgate_apiserver::Options::default()
        }
    }
}

/// Parses a config file: YAML (JSON is YAML too).
pub fn parse(text: &str) -> anyhow::Result<Config> {
    Ok(serde_saphyr::from_str(text)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_file_overrides_defaults_and_rejects_unknown_keys() {
        let c = parse("listen: 0.0.0.0:7443\nstorage:\n  type: memory\nlimits:\n  bookmark-interval-seconds: 5\n").unwrap();
        assert_eq!(c.listen.port(), 7443);
        assert_eq!(c.storage, StorageConfig::Memory);
        assert_eq!(c.limits.bookmark_interval_seconds, 5);
        assert_eq!(c.data_dir, PathBuf::from("./wasmgate-data"));
        assert!(parse("lisen: 1.2.3.4:5\n").is_err());
        let e = parse("storage:\n  type: embedded\n  cache-mib: 128\n").unwrap();
        assert_eq!(e.storage, StorageConfig::Embedded { cache_mib: 128 });
        assert!(e.cache_objects);
        assert!(!parse("cache-objects: false\n").unwrap().cache_objects);
        assert!(e.compress_values);
        assert!(!parse("compress-values: false\n").unwrap().compress_values);
        let t = parse("storage:\n  type: tikv\n  pd-endpoints: [pd0:2379, pd1:2379]\n").unwrap();
        assert_eq!(
            t.storage,
            StorageConfig::Tikv(TikvConfig::new(vec!["pd0:2379".into(), "pd1:2379".into()]))
        );
        assert!(
            parse("storage:\n  type: tikv\n").is_err(),
            "PD endpoints are required"
        );
    }
}
