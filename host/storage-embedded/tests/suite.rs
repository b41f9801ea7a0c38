//! The engine and store contract suites (`STORE-01`, `STORE-02`, `RV-*`, `WATCH-04`,
//! `WATCH-05`) against the embedded engine, on disk and in memory.
#![allow(clippy::unwrap_used, reason = "test code")]

use std::path::Path;
use std::sync::Arc;

use wasmgate_storage::Engine;
use wasmgate_storage::testsuite::EngineFactory;
use wasmgate_storage_embedded::EmbeddedEngine;

struct OnDisk;

#[async_trait::async_trait]
impl EngineFactory for OnDisk {
    fn persistent(&self) -> bool {
        true
    }
    async fn open(&self, place: &Path) -> Arc<dyn Engine> {
        // A previous engine on the same file may still be winding down.
        for _ in 0..100 {
            match EmbeddedEngine::open_path(&place.join("store.redb")) {
                Ok(e) => return Arc::new(e),
                Err(wasmgate_storage::EngineError::Unavailable(_)) => {
                    tokio::time::sleep(std::time::Duration::from_millis(20)).await
                }
                Err(e) => panic!("{e}"),
            }
        }
        panic!("database stayed locked")
    }
}

struct InMemory;

#[async_trait::async_trait]
impl EngineFactory for InMemory {
    fn persistent(&self) -> bool {
        false
    }
    async fn open(&self, _place: &Path) -> Arc<dyn Engine> {
        Arc::new(EmbeddedEngine::in_memory().unwrap())
    }
}

mod on_disk {
    wasmgate_storage::engine_suite!(super::OnDisk);
    wasmgate_storage::store_suite!(super::OnDisk);
}

mod in_memory {
    wasmgate_storage::engine_suite!(super::InMemory);
    wasmgate_storage::store_suite!(super::InMemory);
}

/// The in-memory engine behind a transformer that seals every object's value: the store
/// contract holds through [`wasmgate_storage::transform::Sealed`].
struct SealedInMemory;

#[async_trait::async_trait]
impl EngineFactory for SealedInMemory {
    fn persistent(&self) -> bool {
        false
    }
    async fn open(&self, _place: &Path) -> Arc<dyn Engine> {
        #[derive(Debug)]
        struct All;
        impl wasmgate_storage::ValueTransformer for All {
            fn covers(&self, _key: &str) -> bool {
                true
            }
            fn seal(
                &self,
                _key: &str,
                v: &[u8],
            ) -> Result<bytes::Bytes, wasmgate_storage::BoxError> {
                Ok(v.iter().map(|b| b ^ 0x5a).collect::<Vec<_>>().into())
            }
            fn open(
                &self,
                _key: &str,
                v: &[u8],
            ) -> Result<(bytes::Bytes, bool), wasmgate_storage::BoxError> {
                Ok((v.iter().map(|b| b ^ 0x5a).collect::<Vec<_>>().into(), false))
            }
        }
        let inner: Arc<dyn Engine> = Arc::new(EmbeddedEngine::in_memory().unwrap());
        Arc::new(wasmgate_storage::transform::Sealed::new(
            inner,
            Arc::new(All),
        ))
    }
}

mod sealed {
    wasmgate_storage::store_suite!(super::SealedInMemory);
}
