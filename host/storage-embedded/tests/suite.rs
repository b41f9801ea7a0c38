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

/// The engine's stored values, read with redb directly: `(key, stored bytes)`.
fn raw_values(path: &Path) -> Vec<(Vec<u8>, Vec<u8>)> {
    use redb::{ReadableDatabase as _, ReadableTable as _};
    let db = redb::Database::open(path).unwrap();
    let r = db.begin_read().unwrap();
    let t = r
        .open_table(redb::TableDefinition::<&[u8], &[u8]>::new("kv"))
        .unwrap();
    t.iter()
        .unwrap()
        .map(|e| {
            let (k, v) = e.unwrap();
            (k.value().to_vec(), v.value().to_vec())
        })
        .collect()
}

/// A value the store would write: a ConfigMap-like JSON object of ~1.5 KB.
fn object_json(n: usize) -> Vec<u8> {
    format!(
        r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"cm-{n}","namespace":"default","uid":"1c2e3f40-0000-4000-8000-{n:012}"}},"data":{{"payload":"{}"}}}}"#,
        "0123456789abcdefghijklmnopqrstuvwxyz".repeat(40)
    )
    .into_bytes()
}

/// Disk (issue 9): a new file stores objects compressed, and reads them back as written.
#[tokio::test]
async fn new_files_store_values_compressed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.redb");
    let value = object_json(1);
    {
        let e = EmbeddedEngine::open_path(&path).unwrap();
        assert!(e.compresses());
        let mut t = e.begin().await.unwrap();
        t.put(
            b"c/core/configmaps/default/cm-1".to_vec(),
            value.clone().into(),
        );
        t.put(b"l/1".to_vec(), b"short".to_vec().into());
        t.commit().await.unwrap();
        let snap = e.snapshot().await.unwrap();
        let got = snap.get(b"c/core/configmaps/default/cm-1").await.unwrap();
        assert_eq!(got.as_deref(), Some(&value[..]));
        let all = snap.scan(b"a", b"z", 10).await.unwrap();
        assert_eq!(all.len(), 2);
        assert!(all[0].1 == value, "c/ first");
        assert_eq!(all[1].1.as_ref(), b"short");
    }
    let raw = raw_values(&path);
    let stored = &raw.iter().find(|(k, _)| k.starts_with(b"c/")).unwrap().1;
    assert!(
        stored.len() * 2 < value.len(),
        "{} stored for {}",
        stored.len(),
        value.len()
    );
    let short = &raw.iter().find(|(k, _)| k.starts_with(b"l/")).unwrap().1;
    assert_eq!(short.as_slice(), b"\0short");
    // Reopened, the file is read the same.
    let e = EmbeddedEngine::open_path(&path).unwrap();
    let snap = e.snapshot().await.unwrap();
    let got = snap.get(b"c/core/configmaps/default/cm-1").await.unwrap();
    assert_eq!(got.as_deref(), Some(&value[..]));
}

/// A file written before compression (plain values, no format recorded) keeps being read
/// and written plain.
#[tokio::test]
async fn files_written_before_compression_stay_plain() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.redb");
    let old = object_json(1);
    {
        let db = redb::Database::create(&path).unwrap();
        let w = db.begin_write().unwrap();
        {
            let mut t = w
                .open_table(redb::TableDefinition::<&[u8], &[u8]>::new("kv"))
                .unwrap();
            t.insert(&b"c/core/configmaps/default/old"[..], &old[..])
                .unwrap();
        }
        w.commit().unwrap();
    }
    let new = object_json(2);
    for _ in 0..2 {
        let e = EmbeddedEngine::open_path(&path).unwrap();
        assert!(!e.compresses());
        let mut t = e.begin().await.unwrap();
        let got = t.get(b"c/core/configmaps/default/old").await.unwrap();
        assert_eq!(got.as_deref(), Some(&old[..]));
        t.put(
            b"c/core/configmaps/default/new".to_vec(),
            new.clone().into(),
        );
        t.commit().await.unwrap();
    }
    let raw = raw_values(&path);
    assert_eq!(raw.len(), 2);
    assert!(raw.iter().any(|(_, v)| *v == new), "written plain");
}
