//! The cluster identity (issue 28): what makes several replicas over one store one cluster
//! to their clients, kept in the store so that every replica uses the same.
//!
//! * the cluster CA: signs every replica's serving certificate and the admin client
//!   certificate; clients trust it, so one kubeconfig works against every replica;
//! * the front-proxy CA: what extension API servers trust the gateway's proxied requests by
//!   (`requestheader-client-ca-file` in `extension-apiserver-authentication`);
//! * the ServiceAccount token signing key: a token issued by one replica is accepted by all.
//!
//! ## Where and how
//!
//! One engine key, [`STORE_KEY`], beside the store's own metadata (`m/rev`, `m/lease/…`),
//! not an object under `/registry`: no API request reads, lists, watches or deletes it, no
//! admission plugin or webhook sees it, and it is there before the first API server is
//! (the signing key is needed to build one). Its value is JSON: the two CA certificates in
//! clear, and the three private keys sealed with AES-256-GCM under the *cluster key* (32
//! bytes), with the certificates as associated data, so the keys open only together with
//! the certificates they belong to.
//!
//! The cluster key comes from the file the operator gives (`cluster-key-file`), or, when
//! none is given, from `DATA_DIR/cluster.key`, created on first start: enough for one
//! machine (`--replicas N` shares one data directory); replicas on other machines get a copy
//! of it. It never enters the store, so whoever can read the store (a TiKV backup, a copy of
//! `store.redb`) cannot issue certificates or tokens for the cluster.
//!
//! ## Who creates it
//!
//! The first replica to start on a store without one: it reads the key, and in the same
//! engine transaction writes its identity there. Two first starters race; the engine lets
//! one commit and the other reads the winner's. The identity it writes is its data
//! directory's when that has one (`pki/ca.*`, `pki/front-proxy/ca.*`,
//! `service-account.key`: a gateway of an older version, or CA files the operator put
//! there), and new keys otherwise. Every replica then writes the cluster's identity into
//! its data directory (where the PKI code and the signer read it) and issues its own
//! serving certificate with its own names.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context as _, anyhow, bail};
use aws_lc_rs::aead::{AES_256_GCM, Aad, Nonce, RandomizedNonceKey};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde::{Deserialize, Serialize};
use wasmgate_storage::{Engine, EngineError};

/// The engine key of the sealed identity.
pub const STORE_KEY: &[u8] = b"m/cluster-identity";
/// Its format.
const VERSION: u32 = 1;
/// Length of the cluster key (AES-256).
const KEY_LEN: usize = 32;
/// AES-GCM nonce length.
const NONCE_LEN: usize = 12;
/// The cluster key file in the data directory when the operator gives none.
pub const DEFAULT_KEY_FILE: &str = "cluster.key";
/// The ServiceAccount signing key in the data directory (PKCS#8 DER).
pub const SERVICE_ACCOUNT_KEY_FILE: &str = "service-account.key";
/// How often a start re-reads after losing the race to write the identity.
const TRIES: usize = 8;

/// The cluster's keys, PEM (the CAs) and PKCS#8 DER (the signing key).
#[derive(Clone, PartialEq, Eq)]
pub struct Identity {
    /// The cluster CA's certificate.
    pub ca_cert_pem: String,
    /// The cluster CA's key.
    pub ca_key_pem: String,
    /// The front-proxy CA's certificate.
    pub front_proxy_ca_cert_pem: String,
    /// The front-proxy CA's key.
    pub front_proxy_ca_key_pem: String,
    /// The ServiceAccount token signing key (ECDSA P-256, PKCS#8 DER).
    pub service_account_key: Vec<u8>,
}

impl std::fmt::Debug for Identity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Identity")
            .field("ca_cert_pem", &self.ca_cert_pem)
            .field("front_proxy_ca_cert_pem", &self.front_proxy_ca_cert_pem)
            .finish_non_exhaustive()
    }
}

/// What the engine key holds.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Stored {
    version: u32,
    ca_cert: String,
    front_proxy_ca_cert: String,
    /// base64 of nonce ++ AES-256-GCM ciphertext and tag of [`Sealed`] as JSON.
    sealed: String,
}

/// The private part.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Sealed {
    ca_key: String,
    front_proxy_ca_key: String,
    /// base64 of the PKCS#8 DER.
    service_account_key: String,
}

/// The key the private keys are sealed with in the store.
pub struct ClusterKey {
    key: RandomizedNonceKey,
    /// Where it was read from, for messages.
    path: PathBuf,
}

impl std::fmt::Debug for ClusterKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClusterKey")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl ClusterKey {
    /// Reads the key from `path`: base64 of 32 bytes (`head -c 32 /dev/urandom | base64`).
    /// With `create`, a missing file is created with a new random key (mode 0600).
    pub fn load(path: &Path, create: bool) -> anyhow::Result<ClusterKey> {
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if create && e.kind() == std::io::ErrorKind::NotFound => {
                let mut bytes = [0u8; KEY_LEN];
                aws_lc_rs::rand::fill(&mut bytes).map_err(|_| anyhow!("no random bytes"))?;
                let text = format!("{}\n", BASE64.encode(bytes));
                crate::pki::write_private(path, text.as_bytes())?;
                text
            }
            Err(e) => {
                return Err(e)
                    .with_context(|| format!("reading the cluster key {}", path.display()));
            }
        };
        let bytes = BASE64
            .decode(text.trim())
            .map_err(|e| anyhow!("the cluster key {} is not base64: {e}", path.display()))?;
        if bytes.len() != KEY_LEN {
            bail!(
                "the cluster key {} holds {} bytes, not {KEY_LEN} (make one with `head -c 32 /dev/urandom | base64`)",
                path.display(),
                bytes.len()
            );
        }
        let key = RandomizedNonceKey::new(&AES_256_GCM, &bytes)
            .map_err(|_| anyhow!("the cluster key {} is not an AES-256 key", path.display()))?;
        Ok(ClusterKey {
            key,
            path: path.to_owned(),
        })
    }
}

/// The associated data of the sealed part: the certificates in clear, so that keys open
/// only next to the certificates they were sealed with.
fn aad(ca_cert: &str, front_proxy_ca_cert: &str) -> Vec<u8> {
    let mut a = format!("wasmgate cluster identity v{VERSION}\n").into_bytes();
    a.extend_from_slice(ca_cert.as_bytes());
    a.push(0);
    a.extend_from_slice(front_proxy_ca_cert.as_bytes());
    a
}

/// The identity as the engine keeps it.
fn seal(id: &Identity, key: &ClusterKey) -> anyhow::Result<Vec<u8>> {
    let private = Sealed {
        ca_key: id.ca_key_pem.clone(),
        front_proxy_ca_key: id.front_proxy_ca_key_pem.clone(),
        service_account_key: BASE64.encode(&id.service_account_key),
    };
    let mut body = serde_json::to_vec(&private)?;
    let aad = aad(&id.ca_cert_pem, &id.front_proxy_ca_cert_pem);
    let nonce = key
        .key
        .seal_in_place_append_tag(Aad::from(aad.as_slice()), &mut body)
        .map_err(|_| anyhow!("sealing the cluster identity failed"))?;
    let mut sealed = nonce.as_ref().to_vec();
    sealed.extend_from_slice(&body);
    let stored = Stored {
        version: VERSION,
        ca_cert: id.ca_cert_pem.clone(),
        front_proxy_ca_cert: id.front_proxy_ca_cert_pem.clone(),
        sealed: BASE64.encode(sealed),
    };
    Ok(serde_json::to_vec(&stored)?)
}

/// The identity from what the engine keeps.
fn open(value: &[u8], key: &ClusterKey) -> anyhow::Result<Identity> {
    let stored: Stored =
        serde_json::from_slice(value).context("the cluster identity in the store is damaged")?;
    if stored.version != VERSION {
        bail!(
            "the cluster identity in the store has format {}; this wasmgate reads {VERSION}",
            stored.version
        );
    }
    let sealed = BASE64
        .decode(&stored.sealed)
        .context("the cluster identity in the store is damaged")?;
    if sealed.len() < NONCE_LEN {
        bail!("the cluster identity in the store is damaged (too short)");
    }
    let (nonce, body) = sealed.split_at(NONCE_LEN);
    let nonce = Nonce::try_assume_unique_for_key(nonce)
        .map_err(|_| anyhow!("the cluster identity in the store is damaged (nonce)"))?;
    let mut body = body.to_vec();
    let aad = aad(&stored.ca_cert, &stored.front_proxy_ca_cert);
    let clear = key
        .key
        .open_in_place(nonce, Aad::from(aad.as_slice()), &mut body)
        .map_err(|_| {
            anyhow!(
                "the cluster identity in the store does not open with the cluster key {}: every \
                 replica needs the key of the replica that started first (give it with \
                 --cluster-key-file, or copy that replica's DATA_DIR/{DEFAULT_KEY_FILE})",
                key.path.display()
            )
        })?;
    let private: Sealed =
        serde_json::from_slice(clear).context("the cluster identity in the store is damaged")?;
    Ok(Identity {
        ca_cert_pem: stored.ca_cert,
        ca_key_pem: private.ca_key,
        front_proxy_ca_cert_pem: stored.front_proxy_ca_cert,
        front_proxy_ca_key_pem: private.front_proxy_ca_key,
        service_account_key: BASE64
            .decode(private.service_account_key)
            .context("the cluster identity in the store is damaged")?,
    })
}

/// The identity a data directory brings (its CAs and signing key, where it has them) with
/// new keys for what it lacks; written nowhere.
pub fn from_data_dir(data_dir: &Path) -> anyhow::Result<Identity> {
    let pki = data_dir.join("pki");
    let (ca_cert_pem, ca_key_pem) = match crate::pki::read_ca(&pki)? {
        Some(ca) => ca,
        None => crate::pki::new_ca()?,
    };
    let (front_proxy_ca_cert_pem, front_proxy_ca_key_pem) =
        match crate::pki::read_ca(&pki.join("front-proxy"))? {
            Some(ca) => ca,
            None => crate::pki::new_ca()?,
        };
    let sa = data_dir.join(SERVICE_ACCOUNT_KEY_FILE);
    let service_account_key = match std::fs::read(&sa) {
        // Checked before it becomes the cluster's: the store keeps what is written first.
        Ok(der) => {
            use aws_lc_rs::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair};
            EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &der)
                .map_err(|e| anyhow!("{} is not a P-256 PKCS#8 key: {e}", sa.display()))?;
            der
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            use aws_lc_rs::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair};
            EcdsaKeyPair::generate_pkcs8(
                &ECDSA_P256_SHA256_FIXED_SIGNING,
                &aws_lc_rs::rand::SystemRandom::new(),
            )
            .map_err(|e| anyhow!("generating the service account key: {e}"))?
            .as_ref()
            .to_vec()
        }
        Err(e) => return Err(e).with_context(|| format!("reading {}", sa.display())),
    };
    Ok(Identity {
        ca_cert_pem,
        ca_key_pem,
        front_proxy_ca_cert_pem,
        front_proxy_ca_key_pem,
        service_account_key,
    })
}

/// The cluster's identity from the store, or, on a store without one, `candidate()`
/// written there first: create-if-absent in one engine transaction, so that of two replicas
/// starting at once one writes and the other reads what it wrote. Returns the identity and
/// whether this call wrote it.
pub async fn load_or_create(
    engine: &Arc<dyn Engine>,
    key: &ClusterKey,
    candidate: impl FnOnce() -> anyhow::Result<Identity>,
) -> anyhow::Result<(Identity, bool)> {
    let mut candidate = Some(candidate);
    let mut ours: Option<(Identity, Vec<u8>)> = None;
    let mut last = None;
    for _ in 0..TRIES {
        let mut txn = engine
            .begin()
            .await
            .context("reading the cluster identity")?;
        if let Some(value) = txn
            .get(STORE_KEY)
            .await
            .context("reading the cluster identity")?
        {
            drop(txn);
            return Ok((open(&value, key)?, false));
        }
        if let Some(make) = candidate.take() {
            let id = make()?;
            let sealed = seal(&id, key)?;
            ours = Some((id, sealed));
        }
        let Some((id, sealed)) = &ours else {
            bail!("no cluster identity to write");
        };
        txn.put(STORE_KEY.to_vec(), sealed.clone().into());
        match txn.commit().await {
            Ok(()) => return Ok((id.clone(), true)),
            // Another replica wrote it first, or the outcome is unknown: read it back.
            Err(e @ (EngineError::Conflict | EngineError::Undetermined(_))) => last = Some(e),
            Err(e) => return Err(e).context("writing the cluster identity"),
        }
    }
    let last = last.map(|e| e.to_string()).unwrap_or_default();
    bail!("writing the cluster identity failed {TRIES} times (last: {last})")
}

/// Makes the data directory hold the cluster's identity, where the PKI code
/// (`pki/ca.*`, `pki/front-proxy/ca.*`) and the token signer (`service-account.key`) read
/// it. A different CA found there is moved aside ([`crate::pki::install_ca`]).
pub fn install(data_dir: &Path, id: &Identity) -> anyhow::Result<()> {
    let pki = data_dir.join("pki");
    crate::pki::install_ca(&pki, &id.ca_cert_pem, &id.ca_key_pem)?;
    crate::pki::install_ca(
        &pki.join("front-proxy"),
        &id.front_proxy_ca_cert_pem,
        &id.front_proxy_ca_key_pem,
    )?;
    let sa = data_dir.join(SERVICE_ACCOUNT_KEY_FILE);
    match std::fs::read(&sa) {
        Ok(der) if der == id.service_account_key => Ok(()),
        Ok(_) => {
            tracing::warn!(file = %sa.display(), "this data directory's service account key is not the cluster's: tokens it signed are no longer accepted");
            crate::pki::write_private(&sa, &id.service_account_key)
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            crate::pki::write_private(&sa, &id.service_account_key)
        }
        Err(e) => Err(e).with_context(|| format!("reading {}", sa.display())),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]
    use super::*;

    fn key(dir: &Path, name: &str) -> ClusterKey {
        ClusterKey::load(&dir.join(name), true).unwrap()
    }

    fn engine() -> Arc<dyn Engine> {
        Arc::new(wasmgate_storage_embedded::EmbeddedEngine::in_memory().unwrap())
    }

    #[test]
    fn sealed_keys_open_with_the_key_and_their_certificates_only() {
        let tmp = tempfile::tempdir().unwrap();
        let k = key(tmp.path(), "a.key");
        let id = from_data_dir(tmp.path()).unwrap();
        let stored = seal(&id, &k).unwrap();
        assert_eq!(open(&stored, &k).unwrap(), id);
        // Not in clear.
        let text = String::from_utf8_lossy(&stored);
        assert!(!text.contains("PRIVATE KEY"));
        assert!(!text.contains(&BASE64.encode(&id.service_account_key)));
        // Another key.
        let err = open(&stored, &key(tmp.path(), "b.key")).unwrap_err();
        assert!(format!("{err:#}").contains("does not open"), "{err:#}");
        // The keys next to another CA certificate.
        let mut swapped: serde_json::Value = serde_json::from_slice(&stored).unwrap();
        swapped["caCert"] = serde_json::json!(crate::pki::new_ca().unwrap().0);
        let swapped = serde_json::to_vec(&swapped).unwrap();
        assert!(open(&swapped, &k).is_err());
    }

    #[test]
    fn a_cluster_key_file_is_created_once_and_must_be_32_bytes() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("cluster.key");
        assert!(ClusterKey::load(&path, false).is_err(), "not created");
        ClusterKey::load(&path, true).unwrap();
        let first = std::fs::read_to_string(&path).unwrap();
        ClusterKey::load(&path, true).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), first);
        std::fs::write(&path, BASE64.encode([7u8; 16])).unwrap();
        let err = ClusterKey::load(&path, true).unwrap_err();
        assert!(format!("{err:#}").contains("16 bytes"), "{err:#}");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn of_two_first_starters_one_writes_and_both_get_its_identity() {
        let tmp = tempfile::tempdir().unwrap();
        let k = key(tmp.path(), "cluster.key");
        for _ in 0..10 {
            let engine = engine();
            let (a, b) = tokio::join!(
                load_or_create(&engine, &k, || from_data_dir(&tmp.path().join("a"))),
                load_or_create(&engine, &k, || from_data_dir(&tmp.path().join("b")))
            );
            let ((a, a_wrote), (b, b_wrote)) = (a.unwrap(), b.unwrap());
            assert_eq!(a, b);
            assert!(a_wrote != b_wrote, "exactly one wrote it");
        }
    }

    /// The files of `dir` moved aside by [`crate::pki::install_ca`].
    fn replaced(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.contains(".replaced-"))
            .collect();
        names.sort();
        names
    }

    #[test]
    fn install_keeps_a_different_ca_aside() {
        let tmp = tempfile::tempdir().unwrap();
        let old = crate::pki::load_or_create(&tmp.path().join("pki"), &[]).unwrap();
        let cluster = from_data_dir(&tmp.path().join("elsewhere")).unwrap();
        install(tmp.path(), &cluster).unwrap();
        let pki = tmp.path().join("pki");
        assert_eq!(
            crate::pki::read_ca(&pki).unwrap().unwrap().0,
            cluster.ca_cert_pem
        );
        let aside = replaced(&pki);
        assert_eq!(aside.len(), 2, "{aside:?}");
        assert!(aside[0].starts_with("ca.crt."), "{aside:?}");
        assert_eq!(
            std::fs::read_to_string(pki.join(&aside[0])).unwrap(),
            old.ca_cert_pem
        );
        // The leaves the old CA signed are re-issued by the cluster's.
        let now = crate::pki::load_or_create(&pki, &[]).unwrap();
        assert_eq!(now.ca_cert_pem, cluster.ca_cert_pem);
        assert_ne!(now.admin_cert_pem, old.admin_cert_pem);
        // Installing the same again moves nothing.
        install(tmp.path(), &cluster).unwrap();
        assert_eq!(replaced(&pki), aside);
    }
}
