//! Following the change log: how a store sees writes it did not make.
//!
//! Several stores may share one engine (replicas of the gateway over TiKV, or two stores
//! over one embedded engine in the suites). Each publishes its own commits as it makes
//! them; the others' it reads back from the change log (`l/`), in revision order, into its
//! object cache and watch hub. That happens before each of its own commits (so its events
//! stay in order) and, with [`crate::StoreOptions::follow_every`], on a timer, so its
//! watchers see another replica's writes without waiting for a local one.

use std::sync::Weak;
use std::time::Duration;

use crate::store::{Shared, read_u64};
use crate::watch::event_from_log;
use crate::{Result, Revision, keys};

/// Log entries read per engine scan.
const CHUNK: usize = 1024;

/// Publishes the log entries the hub has not seen, up to `upto`.
pub(crate) async fn catch_up(shared: &Shared, upto: Revision) -> Result<()> {
    let snap = shared.engine.snapshot().await?;
    let mut after = shared.hub.last();
    while after < upto {
        let (start, end) = keys::log_range(after, upto);
        let entries = snap.scan(&start, &end, CHUNK).await?;
        if entries.is_empty() {
            break;
        }
        let mut events = Vec::with_capacity(entries.len());
        for (k, v) in entries {
            let rev = keys::parse_log_key(&k)?;
            let entry = keys::decode_log(&k, &v)?;
            events.push(event_from_log(snap.as_ref(), rev, entry).await?);
            after = rev;
        }
        shared.publish(events);
    }
    Ok(())
}

/// Reads the engine's revision and compaction horizon and publishes the log entries up to
/// that revision the hub has not seen.
pub(crate) async fn catch_up_latest(shared: &Shared) -> Result<()> {
    let snap = shared.engine.snapshot().await?;
    let rev = read_u64(snap.as_ref(), keys::META_REV).await?;
    // Another replica may have compacted: refuse what it discarded.
    let compacted = read_u64(snap.as_ref(), keys::META_COMPACTED).await?;
    shared
        .compacted
        .fetch_max(compacted, std::sync::atomic::Ordering::AcqRel);
    drop(snap);
    if rev > shared.hub.last() {
        catch_up(shared, rev).await?;
    }
    Ok(())
}

/// Every `every`, reads the engine's revision and catches up to it, until the store is
/// closed (or gone).
pub(crate) async fn run(shared: Weak<Shared>, every: Duration) {
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut failing = false;
    loop {
        tick.tick().await;
        let Some(shared) = shared.upgrade() else {
            return;
        };
        if shared.hub.is_closed() {
            return;
        }
        let result = catch_up_latest(&shared).await;
        // Said once per outage, not on every tick.
        match result {
            Ok(()) if failing => {
                tracing::info!("following the change log again");
                failing = false;
            }
            Err(e) if !failing => {
                tracing::warn!(error = %e, "cannot follow the change log; retrying");
                failing = true;
            }
            _ => {}
        }
    }
}
