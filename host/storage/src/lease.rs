//! Leases: which of the stores sharing an engine (replicas) does a periodic job, such as
//! compaction, for now. A lease is one key, `m/lease/<name>`, holding its holder and the
//! wall-clock time it expires; taking or renewing it is one engine transaction, so two
//! replicas racing for it conflict and one wins. Expiry compares wall clocks of different
//! machines: with skew, two holders may overlap briefly, so a leased job must stay safe
//! when run twice (compaction is: each batch re-checks the horizon in its transaction).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::{BufMut, Bytes, BytesMut};

use crate::store::Shared;
use crate::{EngineError, Result, StorageError};

fn key(name: &str) -> Vec<u8> {
    let mut k = b"m/lease/".to_vec();
    k.extend_from_slice(name.as_bytes());
    k
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// `expires (u64 BE ms since the epoch) ++ holder`.
fn encode(expires_ms: u64, holder: &str) -> Bytes {
    let mut b = BytesMut::with_capacity(8 + holder.len());
    b.put_u64(expires_ms);
    b.put_slice(holder.as_bytes());
    b.freeze()
}

fn decode(v: &[u8]) -> Option<(u64, &str)> {
    let (exp, holder) = v.split_first_chunk::<8>()?;
    Some((u64::from_be_bytes(*exp), std::str::from_utf8(holder).ok()?))
}

/// Takes or renews lease `name` for `holder` for `ttl`: `true` when `holder` now holds it,
/// `false` when another holder's lease has not expired (or won a race for it just now).
pub(crate) async fn acquire(
    shared: &Shared,
    name: &str,
    holder: &str,
    ttl: Duration,
) -> Result<bool> {
    let k = key(name);
    let mut txn = shared.engine.begin().await?;
    let now = now_ms();
    if let Some(v) = txn.get(&k).await? {
        match decode(&v) {
            Some((expires, h)) if h != holder && expires > now => return Ok(false),
            Some(_) => {}
            None => {
                return Err(StorageError::Corrupt {
                    key: String::from_utf8_lossy(&k).into_owned(),
                    detail: "bad lease",
                });
            }
        }
    }
    let ttl_ms = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX);
    txn.put(k, encode(now.saturating_add(ttl_ms), holder));
    match txn.commit().await {
        Ok(()) => Ok(true),
        Err(EngineError::Conflict) => Ok(false),
        Err(e) => Err(e.into()),
    }
}
