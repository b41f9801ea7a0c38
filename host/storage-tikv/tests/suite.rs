//! The engine and store contract suites (`STORE-01`, `STORE-02`, `RV-*`, `WATCH-04`,
//! `WATCH-05`, replicas) against a real TiKV cluster: set `WASMGATE_TEST_TIKV_PD` to its PD
//! endpoints (`host:port,...`, e.g. from `tiup playground`). Without it every case prints
//! `skipped: ...` and checks nothing: nothing here pretends to be TiKV.
//!
//! Each case works under a key prefix of its own (from its temporary place), so cases run
//! in parallel on one cluster and a rerun never sees an earlier run's keys.
#![allow(clippy::unwrap_used, reason = "test code")]

use std::path::Path;
use std::sync::Arc;

use wasmgate_storage::Engine;
use wasmgate_storage::testsuite::EngineFactory;
use wasmgate_storage_tikv::{Config, TikvEngine};

const PD_VAR: &str = "WASMGATE_TEST_TIKV_PD";

struct Tikv;

#[async_trait::async_trait]
impl EngineFactory for Tikv {
    fn available(&self) -> Result<(), String> {
        match std::env::var(PD_VAR) {
            Ok(v) if !v.trim().is_empty() => Ok(()),
            _ => Err(format!(
                "{PD_VAR} is not set (no TiKV cluster to test against)"
            )),
        }
    }
    fn persistent(&self) -> bool {
        true
    }
    async fn open(&self, place: &Path) -> Arc<dyn Engine> {
        let pd = std::env::var(PD_VAR).unwrap();
        let mut c = Config::new(pd.split(',').map(|s| s.trim().to_owned()).collect());
        // The same place reopens the same data; another place (a fresh temporary
        // directory) never meets it.
        c.key_prefix = format!("wasmgate-test{}/", place.display());
        Arc::new(TikvEngine::connect(&c).await.unwrap())
    }
}

wasmgate_storage::engine_suite!(Tikv);
wasmgate_storage::store_suite!(Tikv);
