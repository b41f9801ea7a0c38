//! One cluster identity for every replica (issue 28, item 4): two gateways with data
//! directories of their own over one engine, as two processes over one TiKV cluster, started
//! at the same moment. The first to write creates the cluster CA, front-proxy CA and
//! ServiceAccount signing key in the store (private keys sealed with the cluster key); both
//! serve certificates of that CA, so the admin kubeconfig of one works against the other.
//! Driven with kubectl (`KUBECTL`, default `kubectl` on the PATH).
#![allow(clippy::unwrap_used, reason = "test code")]
#![allow(
    clippy::disallowed_methods,
    reason = "the test reads KUBECTL to find kubectl"
)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use wasmgate::config::{StorageConfig, TikvConfig};
use wasmgate::{Config, Gateway, identity};
use wasmgate_storage::Engine;
use wasmgate_storage_embedded::EmbeddedEngine;

/// A replica's configuration: its own data directory, any free port, the cluster key.
fn replica(data_dir: PathBuf, cluster_key: Option<PathBuf>) -> Config {
    Config {
        data_dir,
        listen: "127.0.0.1:0".parse().unwrap(),
        // What the shared engine stands for: a cluster other processes write to, whose
        // writes this one follows (the PD endpoints are not used by `start_on`).
        storage: StorageConfig::Tikv(TikvConfig {
            follow_ms: 10,
            ..TikvConfig::new(vec!["unused:2379".into()])
        }),
        plugin_dir: None,
        cluster_key_file: cluster_key,
        ..Config::default()
    }
}

fn kubectl(args: &[&str]) -> std::process::Output {
    let bin = std::env::var("KUBECTL").unwrap_or_else(|_| "kubectl".into());
    Command::new(bin)
        .args(["--request-timeout=20s"])
        .args(args)
        .output()
        .expect("running kubectl")
}

/// `kubectl` with `kubeconfig` against `server`; stdout, or a panic with stderr.
async fn kubectl_ok(kubeconfig: &Path, server: &str, args: &[&str]) -> String {
    let mut all = vec![
        format!("--kubeconfig={}", kubeconfig.display()),
        format!("--server={server}"),
    ];
    all.extend(args.iter().map(|a| (*a).to_owned()));
    let out = tokio::task::spawn_blocking(move || {
        kubectl(&all.iter().map(String::as_str).collect::<Vec<_>>())
    })
    .await
    .unwrap();
    assert!(
        out.status.success(),
        "kubectl {args:?} against {server}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// `certificate-authority-data` of a kubeconfig.
fn kubeconfig_ca(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    text.lines()
        .find_map(|l| l.trim().strip_prefix("certificate-authority-data:"))
        .unwrap()
        .trim()
        .to_owned()
}

/// The lines of base64 of a PEM.
fn pem_body(pem: &str) -> Vec<String> {
    pem.lines()
        .filter(|l| !l.starts_with("-----"))
        .map(str::to_owned)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn replicas_share_one_identity_through_the_store() {
    let tmp = tempfile::tempdir().unwrap();
    let engine: Arc<dyn Engine> = Arc::new(EmbeddedEngine::in_memory().unwrap());
    let key = tmp.path().join("cluster.key");
    std::fs::write(&key, "bm90IGEgcmVhbCBrZXkgYnV0IDMyIGJ5dGVzIGxvbmc=\n").unwrap();
    let one = replica(tmp.path().join("one"), Some(key.clone()));
    let two = replica(tmp.path().join("two"), Some(key.clone()));
    // Started at the same moment on a fresh store: neither may fail.
    let (a, b) = tokio::join!(
        Gateway::start_on(&one, engine.clone()),
        Gateway::start_on(&two, engine.clone())
    );
    let (a, b) = (a.unwrap(), b.unwrap());

    // One CA: the same trust anchor in both kubeconfigs and data directories; each replica
    // has a serving certificate of its own.
    assert_eq!(kubeconfig_ca(&a.kubeconfig), kubeconfig_ca(&b.kubeconfig));
    let file = |dir: &Path, f: &str| std::fs::read_to_string(dir.join(f)).unwrap();
    assert_eq!(
        file(&one.data_dir, "pki/ca.crt"),
        file(&two.data_dir, "pki/ca.crt")
    );
    assert_eq!(
        file(&one.data_dir, "pki/front-proxy/ca.crt"),
        file(&two.data_dir, "pki/front-proxy/ca.crt")
    );
    assert_ne!(
        file(&one.data_dir, "pki/server.crt"),
        file(&two.data_dir, "pki/server.crt")
    );

    // The admin kubeconfig of each works against the other.
    let on_b = format!("https://{}", b.https_addr);
    let on_a = format!("https://{}", a.https_addr);
    let ns = kubectl_ok(&a.kubeconfig, &on_b, &["get", "ns", "-o", "name"]).await;
    assert!(ns.contains("namespace/kube-system"), "{ns}");
    kubectl_ok(&b.kubeconfig, &on_a, &["get", "ns", "default"]).await;

    // A ServiceAccount token issued by one replica is accepted by the other (one signing
    // key): it authenticates as the account (a request it may not make is a 403, not 401).
    kubectl_ok(&a.kubeconfig, &on_a, &["create", "serviceaccount", "robot"]).await;
    let token = kubectl_ok(&a.kubeconfig, &on_a, &["create", "token", "robot"]).await;
    let ca = tmp.path().join("ca.crt");
    std::fs::write(&ca, file(&one.data_dir, "pki/ca.crt")).unwrap();
    let (server, ca, token) = (on_b.clone(), ca.clone(), token.trim().to_owned());
    let out = tokio::task::spawn_blocking(move || {
        kubectl(&[
            "--kubeconfig=/dev/null",
            &format!("--server={server}"),
            &format!("--certificate-authority={}", ca.display()),
            &format!("--token={token}"),
            "get",
            "secrets",
        ])
    })
    .await
    .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("system:serviceaccount:default:robot"),
        "the token from replica 1 at replica 2: {err}"
    );

    // The store holds the certificates, and the private keys only sealed.
    let snapshot = engine.snapshot().await.unwrap();
    let stored = snapshot.get(identity::STORE_KEY).await.unwrap().unwrap();
    let json: serde_json::Value = serde_json::from_slice(&stored).unwrap();
    assert_eq!(json["caCert"], file(&one.data_dir, "pki/ca.crt"));
    let stored = String::from_utf8_lossy(&stored);
    assert!(!stored.contains("PRIVATE KEY"), "{stored}");
    for private in ["pki/ca.key", "pki/front-proxy/ca.key"] {
        for line in pem_body(&file(&one.data_dir, private)) {
            assert!(!stored.contains(&line), "{private} in clear: {stored}");
        }
    }

    // A replica with another cluster key cannot open it, and says why.
    let other_key = tmp.path().join("other.key");
    std::fs::write(&other_key, "YW5vdGhlciBrZXksIGFsc28gMzIgYnl0ZXMgbG9uZyE=\n").unwrap();
    let three = replica(tmp.path().join("three"), Some(other_key));
    let err = Gateway::start_on(&three, engine.clone())
        .await
        .err()
        .unwrap();
    assert!(
        format!("{err:#}").contains("does not open with the cluster key"),
        "{err:#}"
    );

    a.shutdown().await.unwrap();
    b.shutdown().await.unwrap();
}

/// A data directory of an older gateway (its own `pki/` and signing key, no identity in the
/// store, no cluster key): its CA becomes the cluster's, and the admin certificate and
/// kubeconfig it had keep working.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_existing_data_dir_brings_its_ca() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let old = wasmgate::pki::load_or_create(&dir.join("pki"), &[]).unwrap();
    let old_front = wasmgate::pki::front_proxy(&dir.join("pki")).unwrap();
    let engine: Arc<dyn Engine> = Arc::new(EmbeddedEngine::in_memory().unwrap());
    let gw = Gateway::start_on(&replica(dir.clone(), None), engine.clone())
        .await
        .unwrap();
    let file = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap();
    assert_eq!(file("pki/ca.crt"), old.ca_cert_pem);
    assert_eq!(file("pki/ca.key"), old.ca_key_pem);
    assert_eq!(file("pki/admin.crt"), old.admin_cert_pem);
    assert_eq!(file("pki/front-proxy/ca.crt"), old_front.ca_cert_pem);
    // The cluster key was created in the data directory, private.
    use std::os::unix::fs::PermissionsExt as _;
    let mode = std::fs::metadata(dir.join(identity::DEFAULT_KEY_FILE))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    let server = format!("https://{}", gw.https_addr);
    kubectl_ok(&gw.kubeconfig, &server, &["get", "ns", "default"]).await;
    gw.shutdown().await.unwrap();

    // Started again (the memory engine is still there): the store's identity is loaded.
    let again = Gateway::start_on(&replica(dir.clone(), None), engine)
        .await
        .unwrap();
    assert_eq!(file("pki/ca.crt"), old.ca_cert_pem);
    again.shutdown().await.unwrap();
}
