//! The current objects, in memory: what kube-apiserver's watch cache keeps, for the same
//! reason. Reads at the latest revision (every GET and LIST without a `resourceVersion`,
//! the first page of every list, the initial state of every watch) are served from here
//! instead of from the engine: no B-tree walk, no page-cache lookup and no copy per item,
//! the stored bytes are shared (`Bytes`) with the watch ring and with responses.
//!
//! It is loaded from the engine's `c/` keys when the store opens and then follows the
//! committed events in revision order (fed where the watch hub is fed, before any writer
//! is answered), so it is never behind a write this process acknowledged. A read asks for
//! at least the engine's resolved revision (`crate::follow`), which the store catches up
//! to first; when the cache is still behind it (the catch-up failed), the read falls back
//! to the engine and the answer is the same, only slower.
//!
//! Memory: every current object's stored bytes plus ~100 bytes per key. `StoreOptions`
//! can turn it off (`cache_objects: false`) for stores larger than memory.

use std::collections::{BTreeMap, HashMap};
use std::ops::Bound;
use std::sync::RwLock;

use bytes::Bytes;

use crate::store::{ListPage, SCAN_CHUNK};
use crate::watch::{Event, EventKind};
use crate::{Result, Revision, Snapshot, Versioned, history, keys};

/// Which state a read from the cache must see.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum At {
    /// The latest: the engine's current revision or a later one.
    AtLeast(Revision),
    /// Exactly this revision (a continue page, `resourceVersionMatch=Exact`): served only
    /// when nothing was written since.
    Exactly(Revision),
}

impl At {
    fn served_by(self, cache: Revision) -> bool {
        match self {
            At::AtLeast(r) => cache >= r,
            At::Exactly(r) => cache == r,
        }
    }
}

/// The cache of current objects.
pub(crate) struct Current {
    state: RwLock<State>,
}

struct State {
    /// The revision the map is at; `None` once it missed an event (it is then empty and
    /// every read goes to the engine).
    revision: Option<Revision>,
    /// Object key -> (mod revision, stored bytes).
    objects: BTreeMap<String, (Revision, Bytes)>,
    /// Objects per object type ([`crate::stats::object_type`]), kept as objects come
    /// and go (`apiserver_storage_objects` without counting the map on every scrape).
    counts: HashMap<Box<str>, u64>,
}

impl State {
    fn count(&mut self, key: &str, added: bool) {
        let ty = crate::stats::object_type(key);
        match self.counts.get_mut(ty) {
            Some(n) if added => *n += 1,
            Some(n) => *n = n.saturating_sub(1),
            None if added => {
                self.counts.insert(ty.into(), 1);
            }
            None => {}
        }
    }
}

/// One current object as loaded: key, mod revision, value.
type Loaded = (String, Revision, Bytes);

fn decode_chunk(chunk: Vec<crate::engine::KeyValue>) -> Result<Vec<Loaded>> {
    chunk
        .into_iter()
        .map(|(k, raw)| {
            let key = keys::object_key_of_current(&k)?.to_owned();
            let (rev, value) = keys::decode_current(&k, &raw)?;
            Ok((key, rev, value))
        })
        .collect()
}

async fn insert_all(
    objects: &mut BTreeMap<String, (Revision, Bytes)>,
    decoded: tokio::task::JoinHandle<Result<Vec<Loaded>>>,
) -> Result<()> {
    let decoded = decoded
        .await
        .map_err(|e| crate::StorageError::Engine(crate::EngineError::other(e)))??;
    for (key, rev, value) in decoded {
        objects.insert(key, (rev, value));
    }
    Ok(())
}

impl Current {
    /// Loads every current object of `snap`, whose revision is `revision`.
    pub(crate) async fn load(snap: &dyn Snapshot, revision: Revision) -> Result<Current> {
        let (mut start, end) = keys::current_range("");
        let mut objects = BTreeMap::new();
        // A chunk is decoded (decompressed) on another thread while the next is read.
        let mut decoding: Option<tokio::task::JoinHandle<Result<Vec<Loaded>>>> = None;
        loop {
            let chunk = snap.scan(&start, &end, SCAN_CHUNK).await?;
            let n = chunk.len();
            let Some((last, _)) = chunk.last() else { break };
            start = history::next_key(last);
            let next = tokio::task::spawn_blocking(move || decode_chunk(chunk));
            if let Some(previous) = decoding.replace(next) {
                insert_all(&mut objects, previous).await?;
            }
            if n < SCAN_CHUNK {
                break;
            }
        }
        if let Some(last) = decoding {
            insert_all(&mut objects, last).await?;
        }
        let mut state = State {
            revision: Some(revision),
            objects: BTreeMap::new(),
            counts: HashMap::new(),
        };
        for key in objects.keys() {
            state.count(key, true);
        }
        state.objects = objects;
        Ok(Current {
            state: RwLock::new(state),
        })
    }

    /// The revision the cache is at (`None`: invalid).
    #[cfg(test)]
    pub(crate) fn revision(&self) -> Option<Revision> {
        self.state.read().ok()?.revision
    }

    /// The number of objects held (0 once invalid).
    #[cfg(any(test, feature = "test-suite"))]
    pub(crate) fn len(&self) -> usize {
        self.state.read().map_or(0, |s| s.objects.len())
    }

    /// Applies committed events, in revision order, and moves the cache to `upto` (the
    /// revisions in between without an event were skipped: `Hub::publish`'s contract).
    /// Events at or below the cache's revision are skipped (already applied).
    pub(crate) fn apply(&self, events: &[Event], upto: Revision) {
        let Ok(mut s) = self.state.write() else {
            return;
        };
        let Some(mut at) = s.revision else { return };
        for ev in events {
            if ev.revision <= at {
                continue;
            }
            match ev.kind {
                EventKind::Put => {
                    let replaced = s
                        .objects
                        .insert(ev.key.clone(), (ev.revision, ev.value.clone()));
                    if replaced.is_none() {
                        s.count(&ev.key, true);
                    }
                }
                EventKind::Delete => {
                    if s.objects.remove(&ev.key).is_some() {
                        s.count(&ev.key, false);
                    }
                }
            }
            at = ev.revision;
        }
        s.revision = Some(at.max(upto));
    }

    /// Objects per object type (`None`: the cache is invalid).
    pub(crate) fn object_counts(&self) -> Option<Vec<(String, u64)>> {
        let s = self.state.read().ok()?;
        s.revision?;
        let mut counts: Vec<(String, u64)> =
            s.counts.iter().map(|(t, n)| (t.to_string(), *n)).collect();
        counts.sort();
        Some(counts)
    }

    /// The current version of `key`, when the cache is at the revision `at` asks for:
    /// `(the cache's revision, the version)`. `None`: ask the engine.
    pub(crate) fn get(&self, key: &str, at: At) -> Option<(Revision, Option<Versioned>)> {
        let s = self.state.read().ok()?;
        let rev = s.revision.filter(|r| at.served_by(*r))?;
        let found = s.objects.get(key).map(|(r, v)| Versioned {
            key: key.to_owned(),
            revision: *r,
            value: v.clone(),
        });
        Some((rev, found))
    }

    /// The value of `key` at its mod revision `rev`, if the cache holds that version.
    pub(crate) fn value_at(&self, key: &str, rev: Revision) -> Option<Bytes> {
        let s = self.state.read().ok()?;
        match s.objects.get(key) {
            Some((r, v)) if *r == rev => Some(v.clone()),
            _ => None,
        }
    }

    /// A page of the keys starting with `prefix`, after `start_after`, at most `limit`
    /// (`usize::MAX`: all), as `Store::list` answers it, when the cache is at the revision
    /// `at` asks for. `None`: ask the engine.
    pub(crate) fn list(
        &self,
        at: At,
        prefix: &str,
        start_after: Option<&str>,
        limit: usize,
        count_remaining: bool,
        count_cap: u64,
    ) -> Option<ListPage> {
        let s = self.state.read().ok()?;
        let revision = s.revision.filter(|r| at.served_by(*r))?;
        let from = match start_after {
            Some(after) if after >= prefix => Bound::Excluded(after),
            _ => Bound::Included(prefix),
        };
        let mut range = s
            .objects
            .range::<str, _>((from, Bound::Unbounded))
            .take_while(|(k, _)| k.starts_with(prefix));
        let items: Vec<Versioned> = range
            .by_ref()
            .take(limit)
            .map(|(k, (r, v))| Versioned {
                key: k.clone(),
                revision: *r,
                value: v.clone(),
            })
            .collect();
        let mut rest = range.peekable();
        let more = rest.peek().is_some();
        // Bounded as the engine's count is: past the cap it is left out (`CHUNK-04`).
        let remaining = if more && count_remaining {
            let n = rest.take(count_cap as usize).count() as u64;
            (n < count_cap).then_some(n)
        } else {
            None
        };
        Some(ListPage {
            revision,
            items,
            more,
            remaining,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn put(rev: Revision, key: &str, v: &str) -> Event {
        Event::new(
            rev,
            key.into(),
            EventKind::Put,
            Bytes::from(v.to_owned()),
            None,
        )
    }

    fn empty(rev: Revision) -> Current {
        Current {
            state: RwLock::new(State {
                revision: Some(rev),
                objects: BTreeMap::new(),
                counts: HashMap::new(),
            }),
        }
    }

    fn keys_of(p: &ListPage) -> Vec<&str> {
        p.items.iter().map(|i| i.key.as_str()).collect()
    }

    #[test]
    fn pages_follow_the_engines_rules() {
        let c = empty(0);
        c.apply(
            &[
                put(1, "g/r/a/x", "1"),
                put(2, "g/r/b/x", "2"),
                put(3, "g/r/b/y", "3"),
                put(4, "g/r/bb/z", "4"),
                put(5, "g/s/b/x", "5"),
            ],
            5,
        );
        // `prefix` is a plain string prefix (the caller ends it with `/`).
        let p = c
            .list(At::AtLeast(5), "g/r/b/", None, usize::MAX, true, 100)
            .unwrap();
        assert_eq!(keys_of(&p), ["g/r/b/x", "g/r/b/y"]);
        assert!(!p.more);
        let p = c.list(At::AtLeast(5), "g/r/", None, 2, true, 100).unwrap();
        assert_eq!(keys_of(&p), ["g/r/a/x", "g/r/b/x"]);
        assert_eq!((p.more, p.remaining, p.revision), (true, Some(2), 5));
        let p = c
            .list(At::AtLeast(5), "g/r/", Some("g/r/b/x"), 1, true, 2)
            .unwrap();
        assert_eq!(keys_of(&p), ["g/r/b/y"]);
        // One key follows, under the cap of 2.
        assert_eq!((p.more, p.remaining), (true, Some(1)));
        let p = c
            .list(At::AtLeast(5), "g/r/", Some("g/r/a/x"), 1, true, 1)
            .unwrap();
        assert_eq!(
            (p.more, p.remaining),
            (true, None),
            "past the cap: left out"
        );
        // A start before the prefix starts at the prefix.
        let p = c
            .list(At::AtLeast(5), "g/s/", Some("a"), 10, false, 1)
            .unwrap();
        assert_eq!(keys_of(&p), ["g/s/b/x"]);
    }

    #[test]
    fn deletes_remove_and_replays_are_skipped() {
        let c = empty(0);
        c.apply(&[put(1, "k/1", "a"), put(2, "k/1", "b")], 2);
        c.apply(&[put(2, "k/1", "stale replay")], 2);
        let (rev, v) = c.get("k/1", At::AtLeast(2)).unwrap();
        assert_eq!((rev, v.unwrap().value), (2, Bytes::from("b")));
        c.apply(
            &[Event::new(
                3,
                "k/1".into(),
                EventKind::Delete,
                Bytes::from("b"),
                None,
            )],
            3,
        );
        assert_eq!(c.get("k/1", At::AtLeast(3)).unwrap(), (3, None));
        assert!(
            c.get("k/1", At::AtLeast(4)).is_none(),
            "behind the engine: ask it"
        );
        assert!(c.get("k/1", At::Exactly(3)).is_some());
        assert!(
            c.get("k/1", At::Exactly(2)).is_none(),
            "a past revision: ask the engine"
        );
    }

    /// Objects are counted per type as they come and go (`apiserver_storage_objects`);
    /// replacing one or deleting a missing one changes nothing.
    #[test]
    fn counts_per_type() {
        let c = empty(0);
        c.apply(
            &[
                put(1, "core/configmaps/a/x", "1"),
                put(2, "core/configmaps/a/x", "2"),
                put(3, "core/configmaps/b/y", "3"),
                put(4, "apps/deployments/a/d", "4"),
            ],
            4,
        );
        let delete =
            |rev, key: &str| Event::new(rev, key.into(), EventKind::Delete, Bytes::new(), None);
        c.apply(
            &[
                delete(5, "core/configmaps/a/x"),
                delete(6, "core/configmaps/a/z"),
            ],
            6,
        );
        assert_eq!(
            c.object_counts().unwrap(),
            [
                ("apps/deployments".into(), 1),
                ("core/configmaps".into(), 1)
            ]
        );
    }

    /// Revisions the log marks skipped (handed out, never written) move the cache on
    /// without an event.
    #[test]
    fn skipped_revisions_move_the_cache_on() {
        let c = empty(0);
        c.apply(&[put(1, "a", "1")], 3);
        assert_eq!(c.revision(), Some(3));
        c.apply(&[put(5, "b", "5")], 6);
        assert_eq!(c.get("a", At::AtLeast(6)).unwrap().0, 6);
        assert_eq!(c.get("b", At::AtLeast(6)).unwrap().1.unwrap().revision, 5);
        c.apply(&[put(4, "b", "a replay")], 4);
        assert_eq!(c.revision(), Some(6), "a replay moves nothing back");
        assert_eq!(c.len(), 2);
    }
}
