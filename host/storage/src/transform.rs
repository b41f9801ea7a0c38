//! Values transformed on their way to and from the engine: encryption at rest.
//!
//! kube-apiserver transforms the bytes of chosen resources (secrets, typically) between
//! its storage layer and etcd; everything above — the object cache, watchers, responses —
//! sees the objects in clear. Here the same boundary is an [`Engine`] wrapper,
//! [`Sealed`]: object values under `c/` and `k/` (see [`crate::keys`]) whose object key a
//! [`ValueTransformer`] covers are sealed when written and opened when read; meta keys,
//! change-log entries (keys only) and uncovered objects pass through untouched. A store
//! opened with [`StoreOptions::transformer`](crate::StoreOptions::transformer) wraps its
//! engine in one, so the committer, history reads, the follower and the cache load are
//! unchanged.
//!
//! What a transformer does with a value is its own business (the gateway's is AES-GCM with
//! a key list, `wasmgate-apiserver`'s `encryption` module); this crate only asks that
//! `open(seal(v)) == v` for the same object key, and that `open` says whether the value
//! was written by anything but the transformer's current way of writing (stale: a write
//! would store it differently, which is how key rotation rewrites old values).

use std::sync::Arc;

use bytes::{Bytes, BytesMut};

use crate::engine::KeyValue;
use crate::{BoxError, Engine, EngineError, Snapshot, Transaction, keys};

/// Seals and opens the stored values of some objects.
/// Its `Debug` must not print key material.
pub trait ValueTransformer: std::fmt::Debug + Send + Sync + 'static {
    /// Whether the values of object `key` (`<group>/<resource>/<namespace>/<name>`) are
    /// transformed at all. Called for every value read, so it should be cheap.
    fn covers(&self, key: &str) -> bool;

    /// The stored form of `value`, the value of object `key`.
    fn seal(&self, key: &str, value: &[u8]) -> Result<Bytes, BoxError>;

    /// The value of object `key` from its stored form, and whether that form is stale
    /// (written by anything but what [`ValueTransformer::seal`] does now).
    fn open(&self, key: &str, stored: &[u8]) -> Result<(Bytes, bool), BoxError>;
}

/// An engine whose covered object values are sealed at rest.
pub struct Sealed {
    inner: Arc<dyn Engine>,
    transformer: Arc<dyn ValueTransformer>,
}

impl Sealed {
    /// Wraps `inner`.
    pub fn new(inner: Arc<dyn Engine>, transformer: Arc<dyn ValueTransformer>) -> Sealed {
        Sealed { inner, transformer }
    }
}

/// Where the object bytes start in a value of `engine_key`, and its object key: `c/`
/// values start with the mod revision, `k/` values with a tag. `None`: not an object value.
fn object_value(engine_key: &[u8]) -> Option<(&str, usize)> {
    if engine_key.starts_with(b"c/") {
        keys::object_key_of_current(engine_key).ok().map(|k| (k, 8))
    } else if engine_key.starts_with(b"k/") {
        keys::parse_version(engine_key).ok().map(|(k, _)| (k, 1))
    } else {
        None
    }
}

/// A transformer's failure on one key, as the engine reports it.
#[derive(Debug, thiserror::Error)]
#[error("unable to transform key {key:?}")]
pub struct TransformError {
    /// The object key.
    pub key: String,
    /// What the transformer said.
    #[source]
    pub source: BoxError,
}

fn failed(key: &str, source: BoxError) -> EngineError {
    EngineError::Other(Box::new(TransformError {
        key: key.to_owned(),
        source,
    }))
}

/// Opens a raw engine value: `(value as the store reads it, stale)`.
pub(crate) fn open_value(
    t: &dyn ValueTransformer,
    engine_key: &[u8],
    raw: Bytes,
) -> Result<(Bytes, bool), EngineError> {
    let Some((key, header)) = object_value(engine_key) else {
        return Ok((raw, false));
    };
    if raw.len() < header || !t.covers(key) {
        return Ok((raw, false));
    }
    let (body, stale) = t.open(key, &raw[header..]).map_err(|e| failed(key, e))?;
    let mut out = BytesMut::with_capacity(header + body.len());
    out.extend_from_slice(&raw[..header]);
    out.extend_from_slice(&body);
    Ok((out.freeze(), stale))
}

fn seal_value(
    t: &dyn ValueTransformer,
    engine_key: &[u8],
    value: Bytes,
) -> Result<Bytes, EngineError> {
    let Some((key, header)) = object_value(engine_key) else {
        return Ok(value);
    };
    if value.len() < header || !t.covers(key) {
        return Ok(value);
    }
    let sealed = t.seal(key, &value[header..]).map_err(|e| failed(key, e))?;
    let mut out = BytesMut::with_capacity(header + sealed.len());
    out.extend_from_slice(&value[..header]);
    out.extend_from_slice(&sealed);
    Ok(out.freeze())
}

#[async_trait::async_trait]
impl Engine for Sealed {
    fn name(&self) -> &'static str {
        self.inner.name()
    }

    fn blocking_commits(&self) -> bool {
        self.inner.blocking_commits()
    }

    async fn allocate(&self, n: u64) -> Result<crate::Revision, EngineError> {
        self.inner.allocate(n).await
    }

    async fn allocate_in(
        &self,
        txn: &mut dyn Transaction,
        n: u64,
    ) -> Result<Option<crate::Revision>, EngineError> {
        // Through this engine's transaction: the counter's key is not sealed.
        self.inner.allocate_in(txn, n).await
    }

    async fn snapshot(&self) -> Result<Box<dyn Snapshot>, EngineError> {
        Ok(Box::new(SealedSnapshot {
            inner: self.inner.snapshot().await?,
            transformer: self.transformer.clone(),
        }))
    }

    async fn begin(&self) -> Result<Box<dyn Transaction>, EngineError> {
        Ok(Box::new(SealedTransaction {
            inner: self.inner.begin().await?,
            transformer: self.transformer.clone(),
            failed: None,
        }))
    }
}

struct SealedSnapshot {
    inner: Box<dyn Snapshot>,
    transformer: Arc<dyn ValueTransformer>,
}

#[async_trait::async_trait]
impl Snapshot for SealedSnapshot {
    async fn get(&self, key: &[u8]) -> Result<Option<Bytes>, EngineError> {
        match self.inner.get(key).await? {
            Some(raw) => Ok(Some(open_value(self.transformer.as_ref(), key, raw)?.0)),
            None => Ok(None),
        }
    }

    async fn scan(
        &self,
        start: &[u8],
        end: &[u8],
        limit: usize,
    ) -> Result<Vec<KeyValue>, EngineError> {
        let mut pairs = self.inner.scan(start, end, limit).await?;
        for (k, v) in &mut pairs {
            *v = open_value(self.transformer.as_ref(), k, std::mem::take(v))?.0;
        }
        Ok(pairs)
    }

    async fn count(&self, start: &[u8], end: &[u8], limit: u64) -> Result<u64, EngineError> {
        self.inner.count(start, end, limit).await
    }
}

struct SealedTransaction {
    inner: Box<dyn Transaction>,
    transformer: Arc<dyn ValueTransformer>,
    /// A value that could not be sealed: the commit fails with it (`put` cannot).
    failed: Option<EngineError>,
}

#[async_trait::async_trait]
impl Transaction for SealedTransaction {
    async fn get(&mut self, key: &[u8]) -> Result<Option<Bytes>, EngineError> {
        match self.inner.get(key).await? {
            Some(raw) => Ok(Some(open_value(self.transformer.as_ref(), key, raw)?.0)),
            None => Ok(None),
        }
    }

    fn put(&mut self, key: Vec<u8>, value: Bytes) {
        match seal_value(self.transformer.as_ref(), &key, value) {
            Ok(v) => self.inner.put(key, v),
            Err(e) => {
                self.failed.get_or_insert(e);
            }
        }
    }

    fn delete(&mut self, key: Vec<u8>) {
        self.inner.delete(key);
    }

    async fn commit(self: Box<Self>) -> Result<(), EngineError> {
        if let Some(e) = self.failed {
            // Nothing of this transaction is written: dropping it rolls back.
            return Err(e);
        }
        self.inner.commit().await
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]
    use super::*;

    /// Reverses the bytes of `s/` objects behind a version byte; `1` is current, `0` stale.
    #[derive(Debug)]
    struct Reverse;

    impl ValueTransformer for Reverse {
        fn covers(&self, key: &str) -> bool {
            key.starts_with("s/")
        }
        fn seal(&self, _key: &str, value: &[u8]) -> Result<Bytes, BoxError> {
            let mut v = vec![1u8];
            v.extend(value.iter().rev());
            Ok(v.into())
        }
        fn open(&self, _key: &str, stored: &[u8]) -> Result<(Bytes, bool), BoxError> {
            match stored.split_first() {
                Some((&v @ (0 | 1), rest)) => Ok((
                    rest.iter().rev().copied().collect::<Vec<_>>().into(),
                    v == 0,
                )),
                _ => Err("not sealed".into()),
            }
        }
    }

    #[test]
    fn covered_object_values_are_sealed_behind_their_header() {
        let t = Reverse;
        let ck = keys::current("s/r/ns/a");
        let stored = seal_value(&t, &ck, keys::encode_current(7, b"abc")).unwrap();
        assert_eq!(&stored[..8], &7u64.to_be_bytes());
        assert_eq!(&stored[8..], b"\x01cba");
        let (opened, stale) = open_value(&t, &ck, stored).unwrap();
        assert_eq!(
            (keys::decode_current(&ck, &opened).unwrap().1, stale),
            (Bytes::from_static(b"abc"), false)
        );

        let vk = keys::version("s/r/ns/a", 5);
        let stored = seal_value(&t, &vk, keys::encode_version(keys::TAG_DELETE, b"xy")).unwrap();
        assert_eq!(&stored[..], b"\x01\x01yx");
        let stale = Bytes::from_static(b"\x01\x00yx");
        assert_eq!(
            open_value(&t, &vk, stale).unwrap(),
            (Bytes::from_static(b"\x01xy"), true)
        );
    }

    #[test]
    fn other_keys_pass_through_and_failures_name_the_key() {
        let t = Reverse;
        for k in [
            keys::current("p/r//a"),
            keys::log(3),
            keys::META_REV.to_vec(),
        ] {
            let v = Bytes::from_static(b"0123456789");
            assert_eq!(seal_value(&t, &k, v.clone()).unwrap(), v);
            assert_eq!(open_value(&t, &k, v.clone()).unwrap(), (v, false));
        }
        let ck = keys::current("s/r/ns/a");
        let e = open_value(&t, &ck, Bytes::from_static(b"\0\0\0\0\0\0\0\x01\x07")).unwrap_err();
        let EngineError::Other(inner) = e else {
            panic!("{e:?}")
        };
        assert_eq!(inner.to_string(), r#"unable to transform key "s/r/ns/a""#);
    }
}
