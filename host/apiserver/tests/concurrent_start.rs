//! Replicas started at the same moment on a fresh store (issue 28, item 3): every write a
//! server makes at start (the bootstrap namespaces, the default RBAC, the authentication
//! ConfigMap, the WasmPlugin CRD) is create-or-verify, so the replica that loses a race for
//! one of them carries on with the winner's object instead of failing to start.
#![allow(clippy::unwrap_used, reason = "test code")]

mod common;

use std::sync::Arc;
use std::time::Duration;

use wasmgate_apiserver::{ApiServer, FrontProxy, Options};
use wasmgate_storage::{Engine, Store, StoreOptions};
use wasmgate_storage_embedded::EmbeddedEngine;

/// Options as a gateway replica has them: a client CA and a front proxy, so that the
/// authentication ConfigMap is written.
fn replica_options() -> Options {
    Options {
        client_ca_pem: Some("cluster CA".into()),
        front_proxy: Some(FrontProxy {
            ca_pem: "front-proxy CA".into(),
            client_cert_pem: String::new(),
            client_key_pem: String::new(),
            allowed_names: vec!["front-proxy-client".into()],
        }),
        ..Options::default()
    }
}

/// A store over `engine` following the other stores' writes, as `--replicas N` opens them.
async fn replica_store(engine: &Arc<dyn Engine>) -> Store {
    let options = StoreOptions {
        follow_every: Some(Duration::from_millis(5)),
        ..StoreOptions::default()
    };
    Store::open(engine.clone(), options).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn replicas_starting_together_on_a_fresh_store_all_start() {
    // A lost race needs the two starts to interleave: several fresh stores, several
    // replicas each.
    for attempt in 0..8 {
        let engine: Arc<dyn Engine> = Arc::new(EmbeddedEngine::in_memory().unwrap());
        let mut starts = Vec::new();
        for _ in 0..3 {
            let store = replica_store(&engine).await;
            starts.push(tokio::spawn(ApiServer::new(store, replica_options())));
        }
        let mut servers = Vec::new();
        for (replica, start) in starts.into_iter().enumerate() {
            match start.await.unwrap() {
                Ok(s) => servers.push(s),
                Err(e) => panic!("attempt {attempt}: replica {replica} did not start: {e}"),
            }
        }
        // One of each object, whoever wrote it.
        let server = common::Server {
            api: servers.swap_remove(0),
        };
        let cm = server
            .get("/api/v1/namespaces/kube-system/configmaps/extension-apiserver-authentication")
            .await
            .expect(200)
            .json();
        assert_eq!(cm["data"]["client-ca-file"], "cluster CA", "{cm}");
        server
            .get("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/wasmplugins.wasmgate.dev")
            .await
            .expect(200);
        for s in servers {
            s.begin_shutdown();
        }
        server.api.begin_shutdown();
    }
}
