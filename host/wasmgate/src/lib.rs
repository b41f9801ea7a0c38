//! # wasmgate
//!
//! Wiring: [`Gateway::start`] turns a [`Config`] into a running gateway (engine → cluster
//! identity → store → PKI → API server → listeners), and `main.rs` turns files,
//! environment and flags into a `Config`. Tests start gateways through the same function.
//!
//! ## Layout
//! * [`config`]: the configuration types.
//! * [`identity`]: the cluster's CAs and signing key, shared by replicas through the store.
//! * [`pki`]: CA, serving and admin certificates, the admin kubeconfig.
//! * [`plugin_cli`]: `wasmgate plugin new|build|run|test`, tools for plugin authors.
#![forbid(unsafe_code)]

pub mod config;
pub mod identity;
pub mod pki;
pub mod plugin_cli;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context as _;
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use wasmgate_apiserver::{ApiServer, User};
use wasmgate_server::{ServeOptions, serve};
use wasmgate_storage::{Engine, Store, StoreOptions};
use wasmgate_storage_embedded::EmbeddedEngine;

pub use config::Config;

/// The data directory holds the store (Secret values), the PKI and the cluster key: owner
/// only (0700). A directory we create gets that mode; an existing one is tightened when it
/// is already a gateway's (it holds `store.redb`, `pki/`, `admin.kubeconfig` or
/// `cluster.key`), and left alone otherwise (it may be a directory the user shares), with a
/// warning if others can read it.
fn create_private_dir(dir: &std::path::Path) -> std::io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt as _, PermissionsExt as _};
    if !dir.exists() {
        return std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir);
    }
    let mode = std::fs::metadata(dir)?.permissions().mode() & 0o777;
    if mode & 0o077 == 0 {
        return Ok(());
    }
    let ours = ["store.redb", "pki", "admin.kubeconfig", "cluster.key"]
        .iter()
        .any(|f| dir.join(f).exists());
    if ours {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
    } else {
        tracing::warn!(dir = %dir.display(), mode = format!("{mode:o}"), "the data directory is readable by other users; the store will hold Secret values");
        Ok(())
    }
}

/// One more replica of a gateway started with `replicas` > 1.
#[derive(Debug, Clone)]
pub struct Replica {
    /// Its HTTPS address.
    pub https_addr: SocketAddr,
    /// Its admin kubeconfig.
    pub kubeconfig: PathBuf,
}

/// `name` for replica 0, `name` with `-replica-<n>` before its extension for replica
/// `n - 1` (`admin-replica-2.kubeconfig`).
fn replica_file(name: &str, r: u16) -> String {
    if r == 0 {
        return name.to_owned();
    }
    match name.split_once('.') {
        Some((stem, ext)) => format!("{stem}-replica-{}.{ext}", r + 1),
        None => format!("{name}-replica-{}", r + 1),
    }
}

/// The address clients are told to use for a listener bound to `addr`.
fn advertise_addr(addr: SocketAddr) -> String {
    let host = match addr.ip() {
        ip if ip.is_unspecified() && ip.is_ipv4() => "127.0.0.1".to_owned(),
        ip if ip.is_unspecified() => "[::1]".to_owned(),
        std::net::IpAddr::V6(ip) => format!("[{ip}]"),
        ip => ip.to_string(),
    };
    format!("{host}:{}", addr.port())
}

/// A running gateway.
pub struct Gateway {
    /// The HTTPS address it listens on.
    pub https_addr: SocketAddr,
    /// The plain-HTTP address, if enabled.
    pub insecure_addr: Option<SocketAddr>,
    /// The admin kubeconfig.
    pub kubeconfig: PathBuf,
    /// With `replicas` > 1: the other replicas over the same store.
    pub other_replicas: Vec<Replica>,
    stop: Vec<oneshot::Sender<()>>,
    tasks: Vec<tokio::task::JoinHandle<std::io::Result<()>>>,
}

/// Connects to TiKV (a build with the `tikv` feature).
#[cfg(feature = "tikv")]
async fn tikv_engine(t: &config::TikvConfig) -> anyhow::Result<Arc<dyn Engine>> {
    let mut c = wasmgate_storage_tikv::Config::new(t.pd_endpoints.clone());
    c.key_prefix.clone_from(&t.key_prefix);
    c.timeout_ms = t.timeout_ms;
    c.connect_timeout_ms = t.connect_timeout_ms;
    c.tls = t.tls.as_ref().map(|tls| wasmgate_storage_tikv::Tls {
        ca: tls.ca.clone(),
        cert: tls.cert.clone(),
        key: tls.key.clone(),
    });
    let engine = wasmgate_storage_tikv::TikvEngine::connect(&c)
        .await
        .with_context(|| format!("connecting to TiKV (PD {})", t.pd_endpoints.join(",")))?;
    Ok(Arc::new(engine))
}

/// This build has no TiKV engine: say how to get one.
#[cfg(not(feature = "tikv"))]
async fn tikv_engine(_: &config::TikvConfig) -> anyhow::Result<Arc<dyn Engine>> {
    anyhow::bail!(
        "this wasmgate was built without TiKV support: build it with `cargo build --release -p wasmgate --features tikv`"
    )
}

/// Opens the embedded store, saying what to do when it cannot be.
fn open_embedded(
    cfg: &wasmgate_storage_embedded::Config,
    data_dir: &std::path::Path,
) -> anyhow::Result<EmbeddedEngine> {
    EmbeddedEngine::open(cfg).map_err(|e| {
        let damaged = matches!(&e, wasmgate_storage::EngineError::Other(inner)
            if inner.is::<wasmgate_storage_embedded::DamagedLog>());
        let hint = match &e {
            _ if damaged => format!(
                "the store cannot be opened as it is: stop here, or run `wasmgate repair \
                 --data-dir {}` to accept the loss",
                data_dir.display()
            ),
            wasmgate_storage::EngineError::Unavailable(_) => format!(
                "opening {} (is another wasmgate using this data directory?)",
                cfg.path.display()
            ),
            _ => format!("opening {}", cfg.path.display()),
        };
        anyhow::Error::new(e).context(hint)
    })
}

/// Repairs the embedded store in `config`'s data directory, with the gateway stopped:
/// a write-ahead log damaged before its end loses the damaged record and every one after
/// it ([`EmbeddedEngine::repair`]). `None`: the store needed no repair.
pub fn repair(config: &Config) -> anyhow::Result<Option<wasmgate_storage_embedded::Repaired>> {
    let config::StorageConfig::Embedded { cache_mib } = &config.storage else {
        anyhow::bail!("repair is for the embedded store (--storage embedded)");
    };
    let path = config.data_dir.join("store.redb");
    if !path.exists() {
        anyhow::bail!("there is no store at {}", path.display());
    }
    let cfg = wasmgate_storage_embedded::Config {
        path: path.clone(),
        cache_mib: *cache_mib,
    };
    EmbeddedEngine::repair(&cfg).with_context(|| {
        format!(
            "repairing {} (is a wasmgate still using this data directory?)",
            path.display()
        )
    })
}

impl Gateway {
    /// Opens the store, loads the cluster identity from it (creating it on a store without
    /// one), builds the API server, ensures the PKI, binds the listeners, writes the admin
    /// kubeconfig, and starts serving. When this returns, the gateway answers requests.
    pub async fn start(config: &Config) -> anyhow::Result<Gateway> {
        create_private_dir(&config.data_dir)
            .with_context(|| format!("creating data directory {}", config.data_dir.display()))?;
        let engine: Arc<dyn Engine> = match &config.storage {
            config::StorageConfig::Embedded { cache_mib } => {
                let path = config.data_dir.join("store.redb");
                let cfg = wasmgate_storage_embedded::Config {
                    path: path.clone(),
                    cache_mib: *cache_mib,
                };
                Arc::new(open_embedded(&cfg, &config.data_dir)?)
            }
            config::StorageConfig::Memory => Arc::new(EmbeddedEngine::in_memory()?),
            config::StorageConfig::Tikv(t) => tikv_engine(t).await?,
        };
        Gateway::start_on(config, engine).await
    }

    /// [`Gateway::start`] over an engine the caller opened instead of the one `config`
    /// names: tests start two gateways, each with its own data directory, over one engine,
    /// as two processes over one TiKV cluster run.
    pub async fn start_on(config: &Config, engine: Arc<dyn Engine>) -> anyhow::Result<Gateway> {
        create_private_dir(&config.data_dir)
            .with_context(|| format!("creating data directory {}", config.data_dir.display()))?;
        // One identity for every replica of the cluster (the first start creates it in the
        // store), written into this data directory before the PKI below issues from it.
        let key_file = config
            .cluster_key_file
            .clone()
            .unwrap_or_else(|| config.data_dir.join(identity::DEFAULT_KEY_FILE));
        let cluster_key = identity::ClusterKey::load(&key_file, config.cluster_key_file.is_none())?;
        let (cluster, created) = identity::load_or_create(&engine, &cluster_key, || {
            identity::from_data_dir(&config.data_dir)
        })
        .await?;
        if created {
            tracing::info!(
                "the cluster identity (CA, front-proxy CA, service account key) is now in the store"
            );
        }
        identity::install(&config.data_dir, &cluster)?;
        let replicas = config.replicas.max(1);
        let follow_every = match &config.storage {
            // Other replicas write to the same cluster: follow them.
            config::StorageConfig::Tikv(t) => {
                Some(std::time::Duration::from_millis(t.follow_ms.max(1)))
            }
            _ if replicas > 1 => Some(std::time::Duration::from_millis(20)),
            _ => None,
        };
        let transformer = match &config.encryption_provider_config {
            Some(f) => {
                let text = std::fs::read_to_string(f).with_context(|| {
                    format!("reading the encryption configuration {}", f.display())
                })?;
                let e = wasmgate_auth::encryption::Encryption::parse(&text).map_err(|e| {
                    anyhow::anyhow!("encryption configuration {}: {e}", f.display())
                })?;
                Some(Arc::new(e) as Arc<dyn wasmgate_storage::ValueTransformer>)
            }
            None => None,
        };
        let store_options = StoreOptions {
            cache_objects: config.cache_objects,
            compress_values: config.compress_values,
            follow_every,
            transformer,
            ..StoreOptions::default()
        };
        let mut stop = Vec::new();
        let mut tasks = Vec::new();
        let mut served = Vec::new();
        let mut insecure_addr = None;
        let mut pki = None;
        let tokens = match &config.token_auth_file {
            Some(f) => {
                let text = std::fs::read_to_string(f)
                    .with_context(|| format!("reading the token file {}", f.display()))?;
                wasmgate_auth::authn_token::Tokens::parse(&text)
                    .map_err(|e| anyhow::anyhow!("token file {}: {e}", f.display()))?
            }
            None => wasmgate_auth::authn_token::Tokens::default(),
        };
        let audit = match &config.audit_log_path {
            Some(path) => {
                let policy = match &config.audit_policy_file {
                    Some(f) => {
                        let text = std::fs::read_to_string(f)
                            .with_context(|| format!("reading the audit policy {}", f.display()))?;
                        wasmgate_apiserver::audit::Policy::parse(&text)
                            .map_err(|e| anyhow::anyhow!("audit policy {}: {e}", f.display()))?
                    }
                    None => wasmgate_apiserver::audit::Policy::default(),
                };
                let log = wasmgate_apiserver::audit::Log::open(path, policy)
                    .and_then(|log| log.trust_proxies(&config.trusted_proxies))
                    .map_err(|e| anyhow::anyhow!("{e}"))?;
                Some(std::sync::Arc::new(log))
            }
            None => None,
        };
        // The replicas' API servers start at once, as replicas on several machines started
        // together do (what a server writes at start is create-or-verify).
        let mut starting = Vec::new();
        for r in 0..replicas {
            let store = Store::open(engine.clone(), store_options.clone())
                .await
                .context("opening the store")?;
            // Replica r listens on the next port (or any free one for port 0).
            let mut listen = config.listen;
            if listen.port() != 0 {
                listen.set_port(listen.port().saturating_add(r));
            }
            let listener = TcpListener::bind(listen)
                .await
                .with_context(|| format!("binding {listen}"))?;
            let https_addr = listener.local_addr()?;
            let advertise = advertise_addr(https_addr);
            let mut options = config.limits.api_options(&advertise);
            // Only the first replica applies the plugin directory; the others load the
            // plugins from the store, as replicas on other machines do.
            if r == 0 {
                options.plugin_dir = config.plugin_dir.clone();
            }
            options.plugin_cache_dir = Some(config.data_dir.join(replica_file("plugin-cache", r)));
            options.tokens = tokens.clone();
            options.audit = audit.clone();
            options.service_account_key_file =
                Some(config.data_dir.join(identity::SERVICE_ACCOUNT_KEY_FILE));
            let pki = match &pki {
                Some(p) => p,
                None => {
                    let mut sans = config.tls_sans.clone();
                    if !https_addr.ip().is_unspecified() {
                        sans.push(https_addr.ip().to_string());
                    }
                    pki.insert(pki::load_or_create(&config.data_dir.join("pki"), &sans)?)
                }
            };
            let front = pki::front_proxy(&config.data_dir.join("pki"))?;
            options.client_ca_pem = Some(pki.ca_cert_pem.clone());
            options.front_proxy = Some(wasmgate_apiserver::FrontProxy {
                ca_pem: front.ca_cert_pem,
                client_cert_pem: front.client_cert_pem,
                client_key_pem: front.client_key_pem,
                allowed_names: vec![pki::FRONT_PROXY_USER.to_owned()],
            });
            let server = tokio::spawn(ApiServer::new(store, options));
            starting.push((r, listener, https_addr, advertise, server));
        }
        let pki = pki.context("no replica to serve")?;
        for (r, listener, https_addr, advertise, server) in starting {
            let server = server.await.context("starting an API server")??;
            let tls = Arc::new(pki::server_tls_config(&pki)?);
            let kubeconfig = config.data_dir.join(replica_file("admin.kubeconfig", r));
            pki::write_kubeconfig(&kubeconfig, &format!("https://{advertise}"), &pki)?;
            let (tx, rx) = oneshot::channel::<()>();
            stop.push(tx);
            tasks.push(tokio::spawn(serve(
                server.clone(),
                listener,
                config.limits.serve_options(Some(tls)),
                async move {
                    let _ = rx.await;
                },
            )));
            if r == 0
                && let Some(addr) = config.insecure_listen
            {
                let l = TcpListener::bind(addr)
                    .await
                    .with_context(|| format!("binding {addr}"))?;
                insecure_addr = Some(l.local_addr()?);
                let (tx, rx) = oneshot::channel::<()>();
                stop.push(tx);
                tasks.push(tokio::spawn(serve(
                    server.clone(),
                    l,
                    ServeOptions {
                        unauthenticated_user: Some(User {
                            name: "system:insecure-listener".into(),
                            groups: vec!["system:masters".into(), "system:authenticated".into()],
                        }),
                        ..config.limits.serve_options(None)
                    },
                    async move {
                        let _ = rx.await;
                    },
                )));
            }
            served.push(Replica {
                https_addr,
                kubeconfig,
            });
        }
        let first = served.remove(0);
        Ok(Gateway {
            https_addr: first.https_addr,
            insecure_addr,
            kubeconfig: first.kubeconfig,
            other_replicas: served,
            stop,
            tasks,
        })
    }

    /// Stops accepting, ends watches, waits for in-flight requests, and returns.
    pub async fn shutdown(mut self) -> anyhow::Result<()> {
        for s in self.stop.drain(..) {
            let _ = s.send(());
        }
        for t in self.tasks.drain(..) {
            t.await??;
        }
        Ok(())
    }
}
