//! The watch hub: committed events, in revision order, fanned out to watchers.
//!
//! The hub keeps the most recent events in a bounded ring shared by every watcher; a
//! watcher is only a cursor (the last revision it has passed) and a prefix. A watcher whose
//! cursor falls behind the ring (a slow reader, or a watch that starts at an old revision)
//! reads the missing range from the engine's change log (`l/`) instead, so memory stays
//! bounded however slow a watcher is, and no event is ever skipped: events come out exactly
//! once and in revision order, or the watch fails with
//! [`StorageError::Compacted`].
//!
//! ## Cancel safety
//! [`Watcher::next`] is cancel safe: an event is removed from the watcher's buffer only
//! when it is returned.

use std::any::Any;
use std::collections::VecDeque;
use std::sync::{Arc, OnceLock, RwLock};

use bytes::Bytes;
use tokio::sync::watch;

use crate::store::Shared;
use crate::{Result, Revision, StorageError, Versioned, keys};

/// How many log entries a lagging watcher reads from the engine at a time.
const HISTORY_CHUNK: usize = 512;
/// How many ring events a watcher examines per lock.
const RING_CHUNK: usize = 1024;

/// What happened to a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventKind {
    /// The key was created or replaced. [`Event::prev`] tells which.
    Put,
    /// The key was deleted. [`Event::value`] is the object as it was deleted.
    Delete,
}

/// One committed change.
#[derive(Debug)]
pub struct Event {
    /// The revision of this change.
    pub revision: Revision,
    /// The object key.
    pub key: String,
    /// Put or delete.
    pub kind: EventKind,
    /// The stored bytes of this version (for a delete: the final state of the object).
    pub value: Bytes,
    /// The previous version of the key, if it existed.
    pub prev: Option<Versioned>,
    /// A slot for the layer above to cache what it derives from this event (for example
    /// the decoded object), so that many watchers of one event do the work once.
    pub cache: OnceLock<Arc<dyn Any + Send + Sync>>,
}

impl Event {
    /// A new event with an empty cache.
    pub fn new(
        revision: Revision,
        key: String,
        kind: EventKind,
        value: Bytes,
        prev: Option<Versioned>,
    ) -> Self {
        Event {
            revision,
            key,
            kind,
            value,
            prev,
            cache: OnceLock::new(),
        }
    }
}

struct Ring {
    /// Events in revision order; revisions marked skipped in the log have none, so the
    /// revisions need not follow each other.
    events: VecDeque<Arc<Event>>,
    /// The first revision not published yet: every one below it is in the ring, older
    /// than its first event, or skipped.
    next_rev: Revision,
    capacity: usize,
    closed: bool,
}

impl Ring {
    /// The oldest revision the ring answers for: from here on, every event is in it.
    fn first_rev(&self) -> Revision {
        self.events.front().map_or(self.next_rev, |e| e.revision)
    }
}

/// The in-process fan-out of committed events.
pub(crate) struct Hub {
    ring: RwLock<Ring>,
    /// The last published revision; watchers wait on it for news.
    published: watch::Sender<Revision>,
}

impl Hub {
    pub(crate) fn new(current: Revision, capacity: usize) -> Self {
        Hub {
            ring: RwLock::new(Ring {
                events: VecDeque::with_capacity(capacity.min(4096)),
                next_rev: current + 1,
                capacity: capacity.max(1),
                closed: false,
            }),
            published: watch::Sender::new(current),
        }
    }

    /// The last published revision.
    pub(crate) fn last(&self) -> Revision {
        *self.published.borrow()
    }

    pub(crate) fn subscribe(&self) -> watch::Receiver<Revision> {
        self.published.subscribe()
    }

    /// Publishes committed events, in revision order, and with them every revision up to
    /// `upto`: the caller has read every revision in between, and those without an event
    /// were skipped. Events at or below the last published revision are ignored (already
    /// published, by the committer or by a reader catching up from the log).
    pub(crate) fn publish(&self, events: Vec<Event>, upto: Revision) {
        let advanced = {
            let Ok(mut ring) = self.ring.write() else {
                return;
            };
            let before = ring.next_rev;
            for ev in events {
                if ev.revision < ring.next_rev {
                    continue;
                }
                ring.next_rev = ev.revision + 1;
                ring.events.push_back(Arc::new(ev));
                if ring.events.len() > ring.capacity {
                    ring.events.pop_front();
                }
            }
            ring.next_rev = ring.next_rev.max(upto + 1);
            (ring.next_rev > before).then_some(ring.next_rev - 1)
        };
        if let Some(rev) = advanced {
            self.published.send_replace(rev);
        }
    }

    /// Whether [`Hub::close`] was called.
    pub(crate) fn is_closed(&self) -> bool {
        self.ring.read().map_or(true, |r| r.closed)
    }

    /// Wakes every watcher and makes them end with [`StorageError::Closed`].
    pub(crate) fn close(&self) {
        if let Ok(mut ring) = self.ring.write() {
            ring.closed = true;
        }
        self.published.send_modify(|_| {});
    }
}

enum Step {
    Filled,
    History { upto: Revision },
    Wait,
    Closed,
}

/// A stream of the events under a key prefix after a revision. Created by
/// [`Store::watch`](crate::Store::watch).
pub struct Watcher {
    shared: Arc<Shared>,
    prefix: String,
    /// Every event with a revision at or below this one has been returned or skipped.
    cursor: Revision,
    rx: watch::Receiver<Revision>,
    buf: VecDeque<Arc<Event>>,
}

impl Watcher {
    pub(crate) fn new(shared: Arc<Shared>, prefix: String, after: Revision) -> Self {
        let rx = shared.hub.subscribe();
        Watcher {
            shared,
            prefix,
            cursor: after,
            rx,
            buf: VecDeque::new(),
        }
    }

    /// The revision up to which this watcher has seen every change (returned or filtered
    /// out by prefix). A bookmark at this revision is truthful once the buffer is empty.
    pub fn progress(&self) -> Revision {
        match self.buf.front() {
            Some(ev) => ev.revision - 1,
            None => self.cursor,
        }
    }

    /// Whether events this watcher has not taken yet have left the in-memory ring: its
    /// next events would be read back from the engine's log. A live watcher gets here only
    /// by not keeping up.
    pub fn behind_memory(&self) -> bool {
        let Ok(ring) = self.shared.hub.ring.read() else {
            return false;
        };
        self.cursor + 1 < ring.first_rev()
    }

    /// Whether an event is ready without waiting.
    pub fn has_buffered(&self) -> bool {
        !self.buf.is_empty()
    }

    /// An event that is ready without waiting or reading the engine, if any: lets a
    /// consumer drain a burst in one go.
    pub fn next_buffered(&mut self) -> Option<Arc<Event>> {
        self.buf.pop_front()
    }

    /// The next event under the prefix. Waits for one if none is ready. Fails with
    /// [`StorageError::Compacted`] when the next events are no longer available, and with
    /// [`StorageError::Closed`] when the store shuts down.
    pub async fn next(&mut self) -> Result<Arc<Event>> {
        loop {
            if let Some(ev) = self.buf.pop_front() {
                return Ok(ev);
            }
            self.fill().await?;
        }
    }

    /// Like [`Watcher::next`] but returns `None` instead of waiting when nothing is
    /// available right now.
    pub async fn try_next(&mut self) -> Result<Option<Arc<Event>>> {
        if self.buf.is_empty() {
            match self.step() {
                Step::Filled | Step::Wait => {}
                Step::Closed => return Err(StorageError::Closed),
                Step::History { upto } => self.read_history(upto).await?,
            }
        }
        Ok(self.buf.pop_front())
    }

    async fn fill(&mut self) -> Result<()> {
        loop {
            // Mark the current value seen *before* looking at the ring, so a publish that
            // happens after the look wakes `changed()` below.
            self.rx.borrow_and_update();
            match self.step() {
                Step::Filled => return Ok(()),
                Step::Closed => return Err(StorageError::Closed),
                Step::History { upto } => {
                    self.read_history(upto).await?;
                    if !self.buf.is_empty() {
                        return Ok(());
                    }
                }
                Step::Wait => {
                    if self.rx.changed().await.is_err() {
                        return Err(StorageError::Closed);
                    }
                }
            }
        }
    }

    /// Takes what the ring has for this watcher, or says where to go next.
    fn step(&mut self) -> Step {
        let Ok(ring) = self.shared.hub.ring.read() else {
            return Step::Closed;
        };
        if ring.closed {
            return Step::Closed;
        }
        loop {
            let want = self.cursor + 1;
            if want >= ring.next_rev {
                return Step::Wait;
            }
            let first = ring.first_rev();
            if want < first {
                return Step::History { upto: first - 1 };
            }
            let start = ring.events.partition_point(|e| e.revision < want);
            let mut taken = 0;
            for ev in ring.events.range(start..).take(RING_CHUNK) {
                self.cursor = ev.revision;
                taken += 1;
                if ev.key.starts_with(&self.prefix) {
                    self.buf.push_back(ev.clone());
                }
            }
            if start + taken == ring.events.len() {
                // The rest, up to the last published revision, was skipped.
                self.cursor = ring.next_rev - 1;
            }
            if !self.buf.is_empty() {
                return Step::Filled;
            }
        }
    }

    /// Reads log entries `(cursor, upto]` from the engine (bounded chunk).
    async fn read_history(&mut self, upto: Revision) -> Result<()> {
        let snap = self.shared.engine.snapshot().await?;
        let compacted = keys::decode_u64(
            keys::META_COMPACTED,
            snap.get(keys::META_COMPACTED).await?.as_ref(),
        )?;
        if self.cursor < compacted {
            return Err(StorageError::Compacted {
                requested: self.cursor,
                compacted,
            });
        }
        let (start, end) = keys::log_range(self.cursor, upto);
        let entries = snap.scan(&start, &end, HISTORY_CHUNK).await?;
        let complete_chunk = entries.len() == HISTORY_CHUNK;
        let mut expect = self.cursor + 1;
        for (k, v) in entries {
            let rev = keys::parse_log_key(&k)?;
            if rev < expect {
                // Inside a skip read before.
                continue;
            }
            if rev != expect {
                // Entries vanished under us: compaction ran since we checked.
                return Err(StorageError::Compacted {
                    requested: self.cursor,
                    compacted: rev.saturating_sub(1),
                });
            }
            let entry = keys::decode_log(&k, &v)?;
            if let Some(until) = entry.skipped_until() {
                expect = until.max(rev) + 1;
                self.cursor = expect - 1;
                continue;
            }
            expect += 1;
            if entry.key.starts_with(&self.prefix) {
                let ev = event_from_log(snap.as_ref(), rev, entry).await?;
                self.buf.push_back(Arc::new(ev));
            }
            self.cursor = rev;
        }
        if !complete_chunk && expect <= upto {
            // The log ends before the range the hub says exists: compacted meanwhile.
            return Err(StorageError::Compacted {
                requested: self.cursor,
                compacted: upto,
            });
        }
        Ok(())
    }
}

/// Rebuilds an event from its log entry.
pub(crate) async fn event_from_log(
    snap: &dyn crate::Snapshot,
    rev: Revision,
    entry: keys::LogEntry,
) -> Result<Event> {
    let (tag, value) = crate::history::value_written_at(snap, &entry.key, rev)
        .await?
        .ok_or(StorageError::Corrupt {
            key: entry.key.clone(),
            detail: "log entry without its version",
        })?;
    // The version this one superseded was moved to `k/` by the same write.
    let prev = if entry.prev > 0 {
        crate::history::value_written_at(snap, &entry.key, entry.prev)
            .await?
            .map(|(_, value)| Versioned {
                key: entry.key.clone(),
                revision: entry.prev,
                value,
            })
    } else {
        None
    };
    let kind = if tag == keys::TAG_DELETE {
        EventKind::Delete
    } else {
        EventKind::Put
    };
    Ok(Event::new(rev, entry.key, kind, value, prev))
}
