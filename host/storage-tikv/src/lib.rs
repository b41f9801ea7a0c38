//! # wasmgate-storage-tikv
//!
//! The storage engine over a TiKV cluster, through tikv-client's transactional API: the
//! engine for several gateway replicas sharing one store (TiKV replicates, fails over and
//! shards; the store above serialises revisions through `m/rev`). The only crate that
//! names `tikv-client`.
//!
//! * Every key is stored under a configurable prefix, so several gateways (or tenants)
//!   share one cluster without seeing each other's data.
//! * Snapshots are reads at one PD timestamp; transactions are optimistic, their writes
//!   buffered here and sent at commit. A write conflict is [`EngineError::Conflict`] (the
//!   store retries the batch); a commit whose outcome tikv-client cannot tell is
//!   [`EngineError::Undetermined`] (the store reads back before it answers).
//! * A transaction dropped without a commit (an error, a cancelled request) is rolled back
//!   in the background; tikv-client's own drop check, which panics by default, is off.
//! * Every call is bounded by the configured timeout: an unreachable PD or TiKV fails the
//!   request with [`EngineError::Unavailable`] instead of hanging it.
//!
//! Tested by the engine and store suites of `wasmgate-storage` against a real cluster when
//! `WASMGATE_TEST_TIKV_PD` names PD endpoints; without it they report themselves skipped.
#![forbid(unsafe_code)]

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use tikv_client::{
    CheckLevel, Key, Timestamp, Transaction as TikvTransaction, TransactionClient,
    TransactionOptions,
};
use wasmgate_storage::engine::KeyValue;
use wasmgate_storage::{Engine, EngineError, Snapshot, Transaction};

/// The default key prefix.
pub const DEFAULT_KEY_PREFIX: &str = "wasmgate/";

/// Configuration of the TiKV engine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// PD endpoints (`host:port`); list them all, so that losing one is not an outage.
    pub pd_endpoints: Vec<String>,
    /// Prepended to every key: gateways with different prefixes share a cluster without
    /// seeing each other. Replicas of one gateway use the same prefix.
    pub key_prefix: String,
    /// Longest wait for one engine call (a read, a scan, a commit), in milliseconds.
    pub timeout_ms: u64,
    /// Longest wait for PD at start, in milliseconds.
    pub connect_timeout_ms: u64,
    /// TLS to PD and TiKV (mutual: the cluster's CA, this client's certificate and key).
    pub tls: Option<Tls>,
}

/// TLS files for the cluster connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tls {
    /// The CA that signed the cluster's certificates (PEM).
    pub ca: PathBuf,
    /// This client's certificate (PEM).
    pub cert: PathBuf,
    /// This client's private key (PEM).
    pub key: PathBuf,
}

fn default_prefix() -> String {
    DEFAULT_KEY_PREFIX.to_owned()
}

fn default_timeout_ms() -> u64 {
    5_000
}

fn default_connect_timeout_ms() -> u64 {
    10_000
}

impl Config {
    /// A config for `pd_endpoints` with the default prefix and timeouts.
    pub fn new(pd_endpoints: Vec<String>) -> Config {
        Config {
            pd_endpoints,
            key_prefix: default_prefix(),
            timeout_ms: default_timeout_ms(),
            connect_timeout_ms: default_connect_timeout_ms(),
            tls: None,
        }
    }
}

/// The TiKV engine. Cheap to clone.
#[derive(Clone)]
pub struct TikvEngine {
    client: Arc<TransactionClient>,
    prefix: Arc<[u8]>,
    timeout: Duration,
}

impl std::fmt::Debug for TikvEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TikvEngine")
            .field("prefix", &String::from_utf8_lossy(&self.prefix))
            .field("timeout", &self.timeout)
            .finish()
    }
}

impl TikvEngine {
    /// Connects to the cluster's PD. Fails (never hangs) when PD does not answer within
    /// the connect timeout.
    pub async fn connect(config: &Config) -> Result<TikvEngine, EngineError> {
        if config.pd_endpoints.is_empty() {
            return Err(EngineError::other("no PD endpoints configured"));
        }
        let timeout = Duration::from_millis(config.timeout_ms.max(1));
        let mut cfg = tikv_client::Config::default().with_timeout(timeout);
        if let Some(tls) = &config.tls {
            cfg = cfg.with_security(&tls.ca, &tls.cert, &tls.key);
        }
        let connect = TransactionClient::new_with_config(config.pd_endpoints.clone(), cfg);
        let wait = Duration::from_millis(config.connect_timeout_ms.max(1));
        let client = match tokio::time::timeout(wait, connect).await {
            Ok(Ok(c)) => c,
            Ok(Err(e)) => return Err(classify(e)),
            Err(_) => {
                return Err(EngineError::Unavailable(
                    format!(
                        "PD at {} did not answer within {wait:?}",
                        config.pd_endpoints.join(",")
                    )
                    .into(),
                ));
            }
        };
        Ok(TikvEngine {
            client: Arc::new(client),
            prefix: config.key_prefix.as_bytes().into(),
            timeout,
        })
    }

    async fn bounded<T>(
        &self,
        what: &'static str,
        f: impl std::future::Future<Output = tikv_client::Result<T>>,
    ) -> Result<T, EngineError> {
        bounded(self.timeout, what, f).await
    }
}

/// `f` within `timeout`; a timeout is [`EngineError::Unavailable`].
async fn bounded<T>(
    timeout: Duration,
    what: &'static str,
    f: impl std::future::Future<Output = tikv_client::Result<T>>,
) -> Result<T, EngineError> {
    match tokio::time::timeout(timeout, f).await {
        Ok(r) => r.map_err(classify),
        Err(_) => Err(EngineError::Unavailable(
            format!("TiKV {what} timed out after {timeout:?}").into(),
        )),
    }
}

/// What a tikv-client error means to the store.
fn classify(e: tikv_client::Error) -> EngineError {
    use tikv_client::Error as E;
    match e {
        E::UndeterminedError(_) => EngineError::Undetermined(Box::new(e)),
        E::KeyError(ref k) if k.conflict.is_some() || !k.retryable.is_empty() => {
            EngineError::Conflict
        }
        E::MultipleKeyErrors(ref v) | E::ExtractedErrors(ref v)
            if v.iter().any(|e| matches!(classify_ref(e), Kind::Conflict)) =>
        {
            EngineError::Conflict
        }
        ref other => match classify_ref(other) {
            Kind::Unavailable => EngineError::Unavailable(Box::new(e)),
            _ => EngineError::Other(Box::new(e)),
        },
    }
}

enum Kind {
    Conflict,
    Unavailable,
    Other,
}

fn classify_ref(e: &tikv_client::Error) -> Kind {
    use tikv_client::Error as E;
    match e {
        E::KeyError(k) if k.conflict.is_some() || !k.retryable.is_empty() => Kind::Conflict,
        E::Grpc(_)
        | E::GrpcAPI(_)
        | E::Io(_)
        | E::RegionError(_)
        | E::RegionForKeyNotFound { .. }
        | E::RegionForRangeNotFound { .. }
        | E::RegionNotFoundInResponse { .. }
        | E::LeaderNotFound { .. }
        | E::Canceled(_)
        | E::Channel(_)
        | E::ResolveLockError(_) => Kind::Unavailable,
        _ => Kind::Other,
    }
}

fn prefixed(prefix: &[u8], key: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(prefix.len() + key.len());
    k.extend_from_slice(prefix);
    k.extend_from_slice(key);
    k
}

#[async_trait::async_trait]
impl Engine for TikvEngine {
    fn name(&self) -> &'static str {
        "tikv"
    }

    async fn snapshot(&self) -> Result<Box<dyn Snapshot>, EngineError> {
        let ts = self
            .bounded("timestamp", self.client.current_timestamp())
            .await?;
        Ok(Box::new(TikvSnapshot {
            engine: self.clone(),
            ts,
        }))
    }

    async fn begin(&self) -> Result<Box<dyn Transaction>, EngineError> {
        // Our own drop rolls back (below); tikv-client's default drop check panics.
        let options = TransactionOptions::new_optimistic().drop_check(CheckLevel::None);
        let txn = self
            .bounded("begin", self.client.begin_with_options(options))
            .await?;
        Ok(Box::new(TikvTxn {
            engine: self.clone(),
            txn: Some(txn),
            writes: BTreeMap::new(),
        }))
    }
}

/// Reads at one PD timestamp. Each call makes a tikv-client snapshot at that timestamp
/// (a plain value; its methods need `&mut`), so concurrent reads need no lock.
struct TikvSnapshot {
    engine: TikvEngine,
    ts: Timestamp,
}

impl TikvSnapshot {
    fn at(&self) -> tikv_client::Snapshot {
        let options = TransactionOptions::new_optimistic()
            .read_only()
            .drop_check(CheckLevel::None);
        self.engine.client.snapshot(self.ts.clone(), options)
    }
}

#[async_trait::async_trait]
impl Snapshot for TikvSnapshot {
    async fn get(&self, key: &[u8]) -> Result<Option<Bytes>, EngineError> {
        let mut s = self.at();
        let key = prefixed(&self.engine.prefix, key);
        let v = self.engine.bounded("get", s.get(key)).await?;
        Ok(v.map(Bytes::from))
    }

    async fn scan(
        &self,
        start: &[u8],
        end: &[u8],
        limit: usize,
    ) -> Result<Vec<KeyValue>, EngineError> {
        if start >= end {
            return Ok(Vec::new());
        }
        let mut s = self.at();
        let p = &self.engine.prefix;
        let range = prefixed(p, start)..prefixed(p, end);
        let limit = u32::try_from(limit.max(1)).unwrap_or(u32::MAX);
        let pairs = self.engine.bounded("scan", s.scan(range, limit)).await?;
        pairs
            .map(|kv| {
                let (k, v): (Key, Vec<u8>) = kv.into();
                let k: Vec<u8> = k.into();
                let k = k.strip_prefix(&p[..]).ok_or_else(|| {
                    EngineError::other("TiKV scan returned a key outside its range")
                })?;
                Ok((Bytes::copy_from_slice(k), Bytes::from(v)))
            })
            .collect()
    }

    async fn count(&self, start: &[u8], end: &[u8], limit: u64) -> Result<u64, EngineError> {
        // Keys only: values stay on the server.
        let p = &self.engine.prefix;
        let mut from = prefixed(p, start);
        let to = prefixed(p, end);
        let mut n = 0u64;
        while n < limit && from < to {
            let want = u32::try_from((limit - n).min(4096)).unwrap_or(4096);
            let mut s = self.at();
            let keys: Vec<Key> = self
                .engine
                .bounded("scan", s.scan_keys(from.clone()..to.clone(), want))
                .await?
                .collect();
            let Some(last) = keys.last() else { break };
            from = Vec::<u8>::from(last.clone());
            from.push(0);
            n += keys.len() as u64;
            if keys.len() < want as usize {
                break;
            }
        }
        Ok(n.min(limit))
    }
}

/// An optimistic transaction: reads at its start timestamp plus its own writes, which
/// are buffered here and sent at commit.
struct TikvTxn {
    engine: TikvEngine,
    /// `None` once committed or rolled back.
    txn: Option<TikvTransaction>,
    writes: BTreeMap<Vec<u8>, Option<Bytes>>,
}

#[async_trait::async_trait]
impl Transaction for TikvTxn {
    async fn get(&mut self, key: &[u8]) -> Result<Option<Bytes>, EngineError> {
        if let Some(v) = self.writes.get(key) {
            return Ok(v.clone());
        }
        let Some(txn) = self.txn.as_mut() else {
            return Err(EngineError::other("transaction already finished"));
        };
        let key = prefixed(&self.engine.prefix, key);
        let v = bounded(self.engine.timeout, "get", txn.get(key)).await?;
        Ok(v.map(Bytes::from))
    }

    fn put(&mut self, key: Vec<u8>, value: Bytes) {
        self.writes.insert(key, Some(value));
    }

    fn delete(&mut self, key: Vec<u8>) {
        self.writes.insert(key, None);
    }

    async fn commit(mut self: Box<Self>) -> Result<(), EngineError> {
        let Some(mut txn) = self.txn.take() else {
            return Err(EngineError::other("transaction already finished"));
        };
        let timeout = self.engine.timeout;
        let writes = std::mem::take(&mut self.writes);
        let result = async {
            for (k, v) in writes {
                let key = prefixed(&self.engine.prefix, &k);
                match v {
                    Some(v) => txn.put(key, v.to_vec()).await,
                    None => txn.delete(key).await,
                }
                .map_err(classify)?;
            }
            match tokio::time::timeout(timeout, txn.commit()).await {
                Ok(r) => r.map(|_| ()).map_err(classify),
                // The commit may have reached TiKV: only a read-back can tell.
                Err(_) => Err(EngineError::Undetermined(
                    format!("TiKV commit timed out after {timeout:?}").into(),
                )),
            }
        }
        .await;
        if let Err(e) = &result
            && !matches!(e, EngineError::Undetermined(_))
        {
            rollback_later(txn);
        }
        result
    }
}

impl Drop for TikvTxn {
    fn drop(&mut self) {
        if let Some(txn) = self.txn.take() {
            rollback_later(txn);
        }
    }
}

/// Rolls `txn` back on the runtime, best effort: an optimistic transaction holds no locks
/// until it commits, and TiKV resolves what a failed commit leaves once its TTL passes.
fn rollback_later(mut txn: TikvTransaction) {
    if let Ok(rt) = tokio::runtime::Handle::try_current() {
        rt.spawn(async move {
            if let Err(e) = txn.rollback().await {
                tracing::debug!(error = %e, "TiKV rollback");
            }
        });
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]
    use super::*;

    #[test]
    fn errors_map_to_what_the_store_does_next() {
        let conflict = tikv_client::ProtoKeyError {
            conflict: Some(Default::default()),
            ..Default::default()
        };
        assert!(matches!(
            classify(tikv_client::Error::KeyError(Box::new(conflict.clone()))),
            EngineError::Conflict
        ));
        assert!(matches!(
            classify(tikv_client::Error::MultipleKeyErrors(vec![
                tikv_client::Error::KeyError(Box::new(conflict))
            ])),
            EngineError::Conflict
        ));
        assert!(matches!(
            classify(tikv_client::Error::UndeterminedError(Box::new(
                tikv_client::Error::Unimplemented
            ))),
            EngineError::Undetermined(_)
        ));
        assert!(matches!(
            classify(tikv_client::Error::Io(std::io::Error::other("reset"))),
            EngineError::Unavailable(_)
        ));
        assert!(matches!(
            classify(tikv_client::Error::Unimplemented),
            EngineError::Other(_)
        ));
    }

    /// `PD unreachable at start`: a clear error within the connect timeout, not a hang.
    #[tokio::test]
    async fn an_unreachable_pd_fails_within_the_connect_timeout() {
        // A listener that accepts and never answers: the worst case for a client.
        let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = silent.local_addr().unwrap();
        let mut c = Config::new(vec![addr.to_string()]);
        c.connect_timeout_ms = 300;
        let started = std::time::Instant::now();
        let err = TikvEngine::connect(&c).await.unwrap_err();
        assert!(started.elapsed() < Duration::from_secs(5), "{err}");
        assert!(
            matches!(err, EngineError::Unavailable(_) | EngineError::Other(_)),
            "{err:?}"
        );
        assert!(TikvEngine::connect(&Config::new(vec![])).await.is_err());
    }
}
