//! Connections that have not authenticated yet, and the cap on how many are kept
//! (`max_unauthenticated_connections`).
//!
//! A connection joins when it is accepted and leaves when it authenticates: at its TLS
//! handshake when it presents a client certificate, or with its first request whose bearer
//! token authenticates. Until then it may be *idle* (it has sent nothing yet, or it is
//! established with no request in flight) or *busy* (handshaking after its first bytes,
//! or serving a request). Past the cap the oldest idle member is closed to make room: a
//! newcomer is never refused, so a client with a certificate or a token always gets its
//! chance to authenticate, however many idle sockets others hold. kube-apiserver has no
//! such cap (each connection has its own deadlines, which Wasmgate keeps too); this one
//! bounds what idle unauthenticated sockets hold without ever locking out a legitimate
//! client. Busy members are never closed for room: they are bounded by the handshake and
//! header deadline and by the in-flight limits.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};

use tokio::sync::Notify;

/// The members, in the order they were accepted.
pub(crate) struct Pool {
    cap: usize,
    next: AtomicU64,
    members: Mutex<BTreeMap<u64, Arc<Member>>>,
    /// Members closed to make room, for the log and tests.
    shed: AtomicU64,
}

/// What a member is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Phase {
    /// Accepted; no byte received yet.
    Silent = 0,
    /// Its first bytes arrived: the TLS handshake is under way.
    Handshaking = 1,
    /// TLS is established; requests are served (or none is in flight: idle).
    Established = 2,
}

/// One connection in the pool (or out of it, once it authenticated or was shed).
pub(crate) struct Member {
    id: u64,
    pool: Weak<Pool>,
    phase: AtomicU8,
    /// Requests in flight on the connection.
    in_flight: Arc<AtomicUsize>,
    /// Whether it is still in the pool.
    member: AtomicBool,
    /// Woken when the pool closes the connection to make room.
    shed: Notify,
}

impl Pool {
    /// A pool that keeps at most `cap` idle members.
    pub(crate) fn new(cap: usize) -> Arc<Pool> {
        Arc::new(Pool {
            cap: cap.max(1),
            next: AtomicU64::new(0),
            members: Mutex::new(BTreeMap::new()),
            shed: AtomicU64::new(0),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<u64, Arc<Member>>> {
        self.members.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Adds a connection just accepted, whose requests in flight `in_flight` counts. Past
    /// the cap, the oldest idle member (not this one) is told to close, and leaves.
    pub(crate) fn join(self: &Arc<Pool>, in_flight: Arc<AtomicUsize>) -> Arc<Member> {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let member = Arc::new(Member {
            id,
            pool: Arc::downgrade(self),
            phase: AtomicU8::new(Phase::Silent as u8),
            in_flight,
            member: AtomicBool::new(true),
            shed: Notify::new(),
        });
        let mut members = self.lock();
        members.insert(id, member.clone());
        if members.len() > self.cap
            && let Some(oldest) = members
                .values()
                .find(|m| m.id != id && m.idle())
                .map(|m| m.id)
            && let Some(victim) = members.remove(&oldest)
        {
            victim.member.store(false, Ordering::Release);
            victim.shed.notify_one();
            self.shed.fetch_add(1, Ordering::Relaxed);
        }
        member
    }

    /// Members now.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.lock().len()
    }

    /// Members closed to make room so far.
    pub(crate) fn shed_count(&self) -> u64 {
        self.shed.load(Ordering::Relaxed)
    }
}

impl Member {
    /// Records what the connection is doing.
    pub(crate) fn set_phase(&self, phase: Phase) {
        self.phase.store(phase as u8, Ordering::Release);
    }

    /// Whether it waits on its client with nothing under way.
    fn idle(&self) -> bool {
        match self.phase.load(Ordering::Acquire) {
            0 => true,
            2 => self.in_flight.load(Ordering::Acquire) == 0,
            _ => false,
        }
    }

    /// The connection authenticated (or ended): it leaves the pool.
    pub(crate) fn leave(&self) {
        if self.member.swap(false, Ordering::AcqRel)
            && let Some(pool) = self.pool.upgrade()
        {
            pool.lock().remove(&self.id);
        }
    }

    /// Completes when the pool closes this connection to make room.
    pub(crate) async fn shed(&self) {
        self.shed.notified().await;
    }

    /// [`Member::shed`] of a connection's member; never, for one outside the pool (the
    /// plain-HTTP listener's).
    pub(crate) async fn shed_of(member: Option<&Member>) {
        match member {
            Some(m) => m.shed().await,
            None => std::future::pending().await,
        }
    }
}

/// Leaves the pool when the connection ends.
pub(crate) struct Leave(pub(crate) Arc<Member>);

impl Drop for Leave {
    fn drop(&mut self) {
        self.0.leave();
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]
    use super::*;

    fn join(pool: &Arc<Pool>) -> (Arc<Member>, Arc<AtomicUsize>) {
        let n = Arc::new(AtomicUsize::new(0));
        (pool.join(n.clone()), n)
    }

    /// ISSUE-24.2: past the cap, the oldest idle member makes room; members that are busy
    /// (handshaking, or a request in flight) and the newcomer are kept.
    #[tokio::test]
    async fn the_oldest_idle_member_makes_room() {
        let pool = Pool::new(3);
        let (handshaking, _) = join(&pool);
        handshaking.set_phase(Phase::Handshaking);
        let (serving, in_flight) = join(&pool);
        serving.set_phase(Phase::Established);
        in_flight.store(1, Ordering::Release);
        let (silent, _) = join(&pool);
        assert_eq!(pool.len(), 3);
        let (newcomer, _) = join(&pool);
        assert_eq!(pool.len(), 3);
        assert_eq!(pool.shed_count(), 1);
        // The silent one was told to close; its notification waits for it.
        tokio::time::timeout(std::time::Duration::from_secs(1), silent.shed())
            .await
            .unwrap();
        assert!(!silent.member.load(Ordering::Acquire));
        // Nothing idle left once the newcomer handshakes: the next one is kept over the cap.
        newcomer.set_phase(Phase::Handshaking);
        let (_, _) = join(&pool);
        assert_eq!(pool.len(), 4);
        // An established member with nothing in flight is idle.
        in_flight.store(0, Ordering::Release);
        let (_, _) = join(&pool);
        assert!(!serving.member.load(Ordering::Acquire));
        assert!(newcomer.member.load(Ordering::Acquire));
        assert!(handshaking.member.load(Ordering::Acquire));
    }

    /// ISSUE-24.3: a member that authenticated leaves, and is no longer counted.
    #[test]
    fn authenticated_members_leave() {
        let pool = Pool::new(2);
        let (a, _) = join(&pool);
        let (b, _) = join(&pool);
        a.leave();
        a.leave();
        assert_eq!(pool.len(), 1);
        drop(Leave(b));
        assert_eq!(pool.len(), 0);
    }
}
