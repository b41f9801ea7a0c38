//! The API server's tuning ([`Options`]).

use std::sync::Arc;
use std::time::Duration;

use crate::{FrontProxy, audit, authn_token};

/// Tuning of the API server. Plain data: tests build it in code.
#[derive(Debug, Clone)]
pub struct Options {
    /// How often a watch that allows bookmarks gets one.
    pub bookmark_interval: Duration,
    /// Watches without `timeoutSeconds` end after a random time in [1x, 2x) of this.
    pub min_request_timeout: Duration,
    /// Longest a request that is not long-running (a watch) may take: its `timeout=` when
    /// shorter, `504` after (kube-apiserver's `--request-timeout`).
    pub request_timeout: Duration,
    /// Largest accepted request body (413 above).
    pub max_request_body_bytes: usize,
    /// How long a request body may take to arrive (504 after).
    pub body_read_timeout: Duration,
    /// Most non-watch requests served at once (429 above).
    pub max_in_flight: usize,
    /// Most of them one user may hold (429 above): a client that stalls its requests
    /// (bodies that never finish) cannot take the whole budget from everyone else.
    pub max_in_flight_per_user: usize,
    /// How long a `NotOlderThan` read waits for a newer revision before 504.
    pub resource_version_wait: Duration,
    /// How often compaction runs.
    pub compaction_interval: Duration,
    /// How much history compaction keeps (`STORE-02`: at least 5 minutes).
    pub history_retention: Duration,
    /// The address `/api` reports in `serverAddressByClientCIDRs`.
    pub advertise_address: String,
    /// How long the namespace controller waits before re-checking a terminating namespace
    /// whose content is held by finalizers.
    pub namespace_resync: Duration,
    /// A directory of `WasmPlugin` manifests to apply and follow (`--plugin-dir`).
    pub plugin_dir: Option<std::path::PathBuf>,
    /// Where compiled plugins are kept across restarts (`None`: in memory only).
    pub plugin_cache_dir: Option<std::path::PathBuf>,
    /// Static bearer tokens (`--token-auth-file`), already read.
    pub tokens: authn_token::Tokens,
    /// The audit log, when one is kept.
    pub audit: Option<Arc<audit::Log>>,
    /// The cluster CA (PEM), published in `kube-system/extension-apiserver-authentication`
    /// as `client-ca-file`.
    pub client_ca_pem: Option<String>,
    /// The aggregation layer's front-proxy identity; `None`: requests are proxied to
    /// extension API servers without a client certificate.
    pub front_proxy: Option<FrontProxy>,
    /// Where the key that signs ServiceAccount tokens is kept (created when missing);
    /// `None`: a key for this process only (its tokens die with it).
    pub service_account_key_file: Option<std::path::PathBuf>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            bookmark_interval: Duration::from_secs(60),
            min_request_timeout: Duration::from_secs(1800),
            request_timeout: Duration::from_secs(60),
            max_request_body_bytes: 3 * 1024 * 1024,
            body_read_timeout: Duration::from_secs(60),
            max_in_flight: 1000,
            max_in_flight_per_user: 250,
            resource_version_wait: Duration::from_secs(3),
            compaction_interval: Duration::from_secs(60),
            history_retention: Duration::from_secs(300),
            advertise_address: "127.0.0.1:6443".into(),
            namespace_resync: Duration::from_secs(2),
            plugin_dir: None,
            plugin_cache_dir: None,
            tokens: authn_token::Tokens::default(),
            service_account_key_file: None,
            audit: None,
            client_ca_pem: None,
            front_proxy: None,
        }
    }
}
