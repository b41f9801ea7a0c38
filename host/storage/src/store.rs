//! [`Store`]: the Kubernetes storage contract on top of an [`Engine`].

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use bytes::{BufMut, Bytes, BytesMut};
use tokio::sync::{mpsc, oneshot};

use crate::committer::{self, Pending};
use crate::current::{At, Current};
use crate::history;
use crate::stats::{Operation, RequestStat, RequestStats};
use crate::transform::{Sealed, ValueTransformer};
use crate::watch::{Hub, Watcher};
use crate::{Engine, Result, Revision, Snapshot, StorageError, keys};

/// Largest chunk a single engine scan asks for.
pub(crate) const SCAN_CHUNK: usize = 1024;
/// Most keys counted for `remainingItemCount` of a page read at the latest revision.
const REMAINING_COUNT_CAP: u64 = 100_000;

/// Tuning knobs of a [`Store`].
#[derive(Debug, Clone)]
pub struct StoreOptions {
    /// Most writes committed in one engine transaction (group commit).
    pub max_batch: usize,
    /// Writes waiting for the committer before writers wait for room (backpressure).
    pub queue_depth: usize,
    /// Recent events kept in memory for watchers; older ones are read from the change log.
    pub watch_ring: usize,
    /// Keep every current object in memory and serve reads at the latest revision from
    /// there (kube-apiserver's watch cache). Off: every read goes to the engine.
    pub cache_objects: bool,
    /// Compress object values before they are stored (`crate::payload`): ~0.75x the disk
    /// for random-looking payloads, far less for typical objects, for ~6 µs of CPU per
    /// write in the writer's task. Values are read back whichever way they were written.
    pub compress_values: bool,
    /// How often to look for writes made by other stores sharing the engine (replicas)
    /// and publish them to this store's watchers and cache. `None`: only before each
    /// commit (enough when this store is the engine's only writer).
    pub follow_every: Option<Duration>,
    /// Seals the values of the objects it covers at rest (encryption of secrets): the
    /// engine only ever holds their sealed form; the cache, watchers and readers see them
    /// in clear. See [`crate::transform`].
    pub transformer: Option<Arc<dyn ValueTransformer>>,
    /// Largest value a put stores ([`StorageError::TooLarge`] above): etcd's default
    /// request limit (1.5 MiB), so that what is stored here fits in etcd too, and no
    /// single object makes every transaction that carries it slow.
    pub max_value_bytes: usize,
}

/// How long after a conflict a store takes its batches' revisions ahead of their
/// transactions (`Engine::allocate`) rather than in them (`Engine::allocate_in`): long
/// enough that replicas writing steadily meet on the counter about once per period, not
/// once per batch.
const CONTENDED_FOR: Duration = Duration::from_secs(1);

/// How long the committer retries a batch that conflicts in the engine with other writers
/// (other replicas committing at the same moment) before its writes fail with
/// [`StorageError::Contended`] (issue 28). Long enough that two busy replicas take turns
/// (a conflict costs one retry of a few milliseconds), short enough that a client's
/// request times out later than this (kubectl's and client-go's defaults are longer).
pub const CONFLICT_RETRY_BUDGET: Duration = Duration::from_secs(5);

/// Values from this size on are compressed on a blocking thread, not an async worker.
const PREPARE_OFF_WORKERS_BYTES: usize = 64 * 1024;

/// etcd's default `--max-request-bytes`.
pub const DEFAULT_MAX_VALUE_BYTES: usize = 1536 * 1024;

impl Default for StoreOptions {
    fn default() -> Self {
        StoreOptions {
            max_batch: 512,
            queue_depth: 8192,
            watch_ring: 16384,
            cache_objects: true,
            compress_values: true,
            follow_every: None,
            transformer: None,
            max_value_bytes: DEFAULT_MAX_VALUE_BYTES,
        }
    }
}

/// Which state a read sees.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadAt {
    /// The latest committed state (a consistent read).
    Latest,
    /// Exactly the state at this revision; [`StorageError::Compacted`] below the compaction
    /// revision, [`StorageError::FutureRevision`] above the current one.
    Exact(Revision),
}

/// A stored version of a key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Versioned {
    /// The object key.
    pub key: String,
    /// The revision that wrote this version (its `resourceVersion`).
    pub revision: Revision,
    /// The stored bytes.
    pub value: Bytes,
}

/// One page of a list.
#[derive(Debug, Clone)]
pub struct ListPage {
    /// The revision the page was read at (the list's `resourceVersion`).
    pub revision: Revision,
    /// The items, in key order.
    pub items: Vec<Versioned>,
    /// Whether more keys follow the last item.
    pub more: bool,
    /// How many keys follow the last item, when asked for and `more` is true. Left out
    /// (`None`) when counting would cost too much: from 100 000 following keys on at the
    /// latest revision, or past 10 000 stored versions after the page at a past revision.
    pub remaining: Option<u64>,
}

/// The bytes to store, optionally with a slot where the committing revision is spliced in
/// as decimal digits (so an object can carry its own `resourceVersion`, which is only
/// known at commit).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Value {
    bytes: Bytes,
    revision_slot: Option<usize>,
}

impl Value {
    /// Bytes stored as given.
    pub fn new(bytes: impl Into<Bytes>) -> Self {
        Value {
            bytes: bytes.into(),
            revision_slot: None,
        }
    }

    /// Bytes with the committing revision inserted at byte offset `at`.
    /// An offset past the end appends the revision.
    pub fn with_revision_slot(bytes: impl Into<Bytes>, at: usize) -> Self {
        let bytes = bytes.into();
        let at = at.min(bytes.len());
        Value {
            bytes,
            revision_slot: Some(at),
        }
    }

    /// The stored form as far as it is known before the revision (compressed).
    pub(crate) fn prepare(&self) -> crate::payload::Prepared {
        crate::payload::Prepared::new(&self.bytes, self.revision_slot)
    }

    /// The bytes as stored at `rev`.
    pub fn render(&self, rev: Revision) -> Bytes {
        match self.revision_slot {
            None => self.bytes.clone(),
            Some(at) => {
                let digits = rev.to_string();
                let mut b = BytesMut::with_capacity(self.bytes.len() + digits.len());
                b.put_slice(&self.bytes[..at]);
                b.put_slice(digits.as_bytes());
                b.put_slice(&self.bytes[at..]);
                b.freeze()
            }
        }
    }
}

/// What must hold for a write to proceed (checked atomically with the write).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Precondition {
    /// Nothing (a put creates or replaces; a delete needs the key to exist).
    None,
    /// The key must not exist ([`StorageError::AlreadyExists`]).
    Absent,
    /// The key must exist ([`StorageError::NotFound`]) at exactly this mod revision
    /// ([`StorageError::Conflict`]).
    Revision(Revision),
}

/// The change a write makes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WriteOp {
    /// Store this value.
    Put(Value),
    /// Delete the key; the value is the object's final state, kept for the deletion event
    /// and for reads at past revisions.
    Delete(Value),
}

/// One write request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Write {
    /// The object key.
    pub key: String,
    /// What must hold.
    pub precondition: Precondition,
    /// The change.
    pub op: WriteOp,
    /// Other keys that must still be at these mod revisions (0: absent) for the write to
    /// happen, checked atomically with it ([`StorageError::Conflict`] naming the guard's
    /// key otherwise). A create in a namespace guards on the namespace it checked, so a
    /// namespace deleted meanwhile never receives it.
    pub guards: Vec<(String, Revision)>,
}

impl Write {
    /// A write with no guards.
    pub fn new(key: impl Into<String>, precondition: Precondition, op: WriteOp) -> Write {
        Write {
            key: key.into(),
            precondition,
            op,
            guards: Vec::new(),
        }
    }
}

/// The result of a committed write.
#[derive(Debug, Clone)]
pub struct Committed {
    /// The revision of this write.
    pub revision: Revision,
    /// The bytes as stored.
    pub value: Bytes,
    /// The version this write replaced or deleted.
    pub prev: Option<Versioned>,
}

/// Counters for tests and metrics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StoreStats {
    /// Engine transactions committed by the committer.
    pub commits: u64,
    /// Writes committed.
    pub writes: u64,
    /// Engine conflicts the committer met (and retried): other writers of the engine
    /// (replicas) committing at the same moment.
    pub conflicts: u64,
    /// Writes that failed in the store rather than on their keys, by cause, in the order of
    /// [`FailureCause::ALL`](crate::FailureCause::ALL).
    pub failed_writes: [u64; crate::FailureCause::ALL.len()],
}

/// State shared by the store handle, the committer and watchers.
pub(crate) struct Shared {
    pub(crate) engine: Arc<dyn Engine>,
    /// With a transformer: the engine it wraps, and the transformer.
    pub(crate) unsealed: Option<(Arc<dyn Engine>, Arc<dyn ValueTransformer>)>,
    pub(crate) hub: Hub,
    /// The current objects in memory (`None`: turned off).
    pub(crate) current: Option<Current>,
    /// Held while publishing.
    pub(crate) publishing: std::sync::Mutex<()>,
    /// The last resolved revision this store wrote to the hint `m/rev` (or found there).
    pub(crate) hinted: AtomicU64,
    /// Until when (ms since `opened`) this store takes its revisions ahead of its batches'
    /// transactions: set by a conflict, a sign that other stores write the engine too.
    pub(crate) contended_until: AtomicU64,
    pub(crate) opened: std::time::Instant,
    /// This store's name as a lease holder: unique per opened store.
    pub(crate) holder: String,
    pub(crate) compacted: AtomicU64,
    pub(crate) commits: AtomicU64,
    pub(crate) writes: AtomicU64,
    /// See [`StoreStats::conflicts`].
    pub(crate) conflicts: AtomicU64,
    /// See [`StoreStats::failed_writes`].
    pub(crate) failed_writes: [AtomicU64; crate::FailureCause::ALL.len()],
    /// Latencies of `get`, `list` and `write` by operation and object type.
    pub(crate) requests: RequestStats,
}

/// A lease holder name no other store has: process id, time, and a counter.
fn holder_id() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!(
        "{}-{nanos}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

impl Shared {
    /// Makes committed events visible, and every revision up to `upto` (those in between
    /// without an event were skipped): to the object cache first, then to watchers (and
    /// only then are their writers answered).
    pub(crate) fn publish(&self, events: Vec<crate::watch::Event>, upto: Revision) {
        // The committer and readers catching up both publish: one at a time, so the
        // cache and the hub see the same order.
        let _one = self
            .publishing
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(c) = &self.current {
            c.apply(&events, upto);
        }
        self.hub.publish(events, upto);
    }

    /// Whether other stores wrote the engine lately (a conflict within [`CONTENDED_FOR`]).
    pub(crate) fn contended(&self) -> bool {
        self.opened.elapsed().as_millis() < u128::from(self.contended_until.load(Ordering::Relaxed))
    }

    /// Notes a conflict with another store.
    pub(crate) fn contend(&self) {
        let until = (self.opened.elapsed() + CONTENDED_FOR).as_millis();
        self.contended_until
            .store(u64::try_from(until).unwrap_or(u64::MAX), Ordering::Relaxed);
    }
}

/// The revisioned store. Cheap to clone; every clone talks to the same committer.
/// The committer stops when the last clone is dropped.
#[derive(Clone)]
pub struct Store {
    shared: Arc<Shared>,
    /// The committer's queue. Bounded: when the committer falls behind, writers wait.
    queue: mpsc::Sender<Pending>,
    /// Reads skip the object cache (only the suites set it).
    bypass_cache: bool,
    /// [`StoreOptions::max_value_bytes`].
    max_value_bytes: usize,
    /// [`StoreOptions::compress_values`].
    compress_values: bool,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("engine", &self.shared.engine.name())
            .field("revision", &self.revision())
            .finish()
    }
}

impl Store {
    /// Opens a store over `engine` and starts its committer (needs a tokio runtime): a task,
    /// or, for an engine with [`Engine::blocking_commits`], a thread of the runtime's
    /// blocking pool for as long as a handle to the store lives.
    pub async fn open(engine: Arc<dyn Engine>, options: StoreOptions) -> Result<Store> {
        let (engine, unsealed) = match &options.transformer {
            Some(t) => {
                let sealed: Arc<dyn Engine> = Arc::new(Sealed::new(engine.clone(), t.clone()));
                (sealed, Some((engine, t.clone())))
            }
            None => (engine, None),
        };
        let (snap, rev) = crate::follow::resolve_at_open(engine.as_ref()).await?;
        let compacted = read_u64(snap.as_ref(), keys::META_COMPACTED).await?;
        let hinted = read_u64(snap.as_ref(), keys::META_REV).await?;
        let current = if options.cache_objects {
            Some(Current::load(snap.as_ref(), rev).await?)
        } else {
            None
        };
        drop(snap);
        let shared = Arc::new(Shared {
            engine,
            unsealed,
            hub: Hub::new(rev, options.watch_ring),
            current,
            publishing: std::sync::Mutex::new(()),
            hinted: AtomicU64::new(hinted),
            contended_until: AtomicU64::new(0),
            opened: std::time::Instant::now(),
            holder: holder_id(),
            compacted: AtomicU64::new(compacted),
            commits: AtomicU64::new(0),
            writes: AtomicU64::new(0),
            conflicts: AtomicU64::new(0),
            failed_writes: Default::default(),
            requests: RequestStats::default(),
        });
        let (tx, rx) = mpsc::channel(options.queue_depth.max(1));
        let committer = committer::run(shared.clone(), rx, options.max_batch.max(1));
        if shared.engine.blocking_commits() {
            // A thread of the runtime's blocking pool, which the committer keeps for as
            // long as the store is open: the engine commits on it without handing the I/O
            // to another thread and back (measured: ~0.5 ms of a ~1.1 ms group commit
            // under load on 2 cores). It ends once every handle to the store is gone; a
            // runtime shutting down waits for it.
            let runtime = tokio::runtime::Handle::current();
            tokio::task::spawn_blocking(move || {
                crate::engine::allow_blocking();
                runtime.block_on(committer);
            });
        } else {
            tokio::spawn(committer);
        }
        if let Some(every) = options.follow_every {
            tokio::spawn(crate::follow::run(Arc::downgrade(&shared), every));
        }
        Ok(Store {
            shared,
            queue: tx,
            bypass_cache: false,
            max_value_bytes: options.max_value_bytes,
            compress_values: options.compress_values,
        })
    }

    /// The engine's name.
    pub fn engine_name(&self) -> &'static str {
        self.shared.engine.name()
    }

    /// Whether the current value of `key` is stored in a form the store's transformer no
    /// longer writes (an older encryption key, or none): writing the same object again
    /// would store it differently. kube's `stale` flag: an update that changes nothing
    /// still writes such an object, so that rewriting every object (`kubectl get secrets
    /// -A -o json | kubectl replace -f -`) moves them all to the current key.
    pub async fn stale(&self, key: &str) -> Result<bool> {
        let Some((raw, t)) = &self.shared.unsealed else {
            return Ok(false);
        };
        if !t.covers(key) {
            return Ok(false);
        }
        let ck = keys::current(key);
        match raw.snapshot().await?.get(&ck).await? {
            Some(v) => Ok(crate::transform::open_value(t.as_ref(), &ck, v)?.1),
            None => Ok(false),
        }
    }

    /// The latest resolved revision this store has published: every write at or below it
    /// is in its object cache and has gone out to its watchers.
    pub fn revision(&self) -> Revision {
        self.shared.hub.last()
    }

    /// Takes or renews lease `name` for this store for `ttl`: whether this store holds it
    /// now. Of the stores sharing an engine (replicas), one at a time holds a lease; the
    /// others get `false` until it expires unrenewed (its holder stopped). For periodic
    /// jobs that should run on one replica, such as compaction; wall clocks decide expiry,
    /// so a leased job must stay safe if two replicas briefly run it at once.
    pub async fn lease(&self, name: &str, ttl: Duration) -> Result<bool> {
        crate::lease::acquire(&self.shared, name, &self.shared.holder, ttl).await
    }

    /// The compaction revision: reads below it fail with [`StorageError::Compacted`].
    pub fn compacted(&self) -> Revision {
        self.shared.compacted.load(Ordering::Acquire)
    }

    /// Counters.
    pub fn stats(&self) -> StoreStats {
        StoreStats {
            commits: self.shared.commits.load(Ordering::Relaxed),
            writes: self.shared.writes.load(Ordering::Relaxed),
            conflicts: self.shared.conflicts.load(Ordering::Relaxed),
            failed_writes: std::array::from_fn(|i| {
                self.shared.failed_writes[i].load(Ordering::Relaxed)
            }),
        }
    }

    /// How long reads and writes took, by operation and object type (every call of
    /// [`Store::get`], [`Store::list`] and [`Store::write`], answered by the object cache
    /// or by the engine), for `etcd_request_duration_seconds`.
    pub fn request_stats(&self) -> Vec<RequestStat> {
        self.shared.requests.snapshot()
    }

    /// Objects per object type ([`crate::stats::object_type`]) as the object cache holds
    /// them: `None` when the cache is off or invalid (then [`Store::count`] asks the
    /// engine).
    pub fn object_counts(&self) -> Option<Vec<(String, u64)>> {
        self.shared.current.as_ref()?.object_counts()
    }

    /// How many current objects have keys starting with `prefix`, counted by the engine.
    pub async fn count(&self, prefix: &str) -> Result<u64> {
        let (start, end) = keys::current_range(prefix);
        let snap = self.shared.engine.snapshot().await?;
        Ok(snap.count(&start, &end, u64::MAX).await?)
    }

    /// Waits until the store has seen revision `rev` committed, for at most `timeout`.
    /// Returns whether it has.
    pub async fn wait_for(&self, rev: Revision, timeout: Duration) -> bool {
        let mut rx = self.shared.hub.subscribe();
        let wait = rx.wait_for(|r| *r >= rev);
        matches!(tokio::time::timeout(timeout, wait).await, Ok(Ok(_)))
    }

    /// Reads one key. Returns the revision of the read and the version, if any.
    pub async fn get(&self, key: &str, at: ReadAt) -> Result<(Revision, Option<Versioned>)> {
        let started = tokio::time::Instant::now();
        let r = self.get_timed(key, at).await;
        if let Some(t) = self.shared.requests.of(key) {
            let failed = r.as_ref().is_err_and(crate::stats::is_failure);
            t.observe(Operation::Get, started.elapsed(), failed);
        }
        r
    }

    async fn get_timed(&self, key: &str, at: ReadAt) -> Result<(Revision, Option<Versioned>)> {
        let resolved = crate::follow::resolve(&self.shared).await?;
        let (snap, current) = (resolved.snap.as_ref(), resolved.revision);
        match at {
            ReadAt::Latest => {
                if let Some(hit) = self.cached().and_then(|c| c.get(key, At::AtLeast(current))) {
                    return Ok(hit);
                }
                if resolved.ahead.is_some() {
                    // The snapshot holds commits above the resolved revision.
                    return Ok((current, history::get_at(snap, key, current).await?));
                }
                let ck = keys::current(key);
                let found = match snap.get(&ck).await? {
                    None => None,
                    Some(raw) => {
                        let (revision, value) = keys::decode_current(&ck, &raw)?;
                        Some(Versioned {
                            key: key.to_owned(),
                            revision,
                            value,
                        })
                    }
                };
                Ok((current, found))
            }
            ReadAt::Exact(rev) => {
                check_exact(snap, rev, current).await?;
                if let Some(hit) = self.cached().and_then(|c| c.get(key, At::Exactly(rev))) {
                    return Ok(hit);
                }
                let found = history::get_at(snap, key, rev).await?;
                Ok((rev, found))
            }
        }
    }

    /// Lists the keys starting with `prefix`, in key order, after `start_after` (exclusive),
    /// at most `limit` items (0: no limit). With `count_remaining`, a page that has more
    /// also says how many keys follow it.
    pub async fn list(
        &self,
        prefix: &str,
        at: ReadAt,
        start_after: Option<&str>,
        limit: usize,
        count_remaining: bool,
    ) -> Result<ListPage> {
        let started = tokio::time::Instant::now();
        let r = self
            .list_timed(prefix, at, start_after, limit, count_remaining)
            .await;
        if let Some(t) = self.shared.requests.of(prefix) {
            let failed = r.as_ref().is_err_and(crate::stats::is_failure);
            t.observe(Operation::List, started.elapsed(), failed);
        }
        r
    }

    async fn list_timed(
        &self,
        prefix: &str,
        at: ReadAt,
        start_after: Option<&str>,
        limit: usize,
        count_remaining: bool,
    ) -> Result<ListPage> {
        let resolved = crate::follow::resolve(&self.shared).await?;
        let (snap, current) = (resolved.snap.as_ref(), resolved.revision);
        let limit = if limit == 0 { usize::MAX } else { limit };
        // The cache answers the latest state (brought up to the resolved revision by
        // `resolve`) and, when nothing was written since, the state at exactly `rev`.
        let cached = match at {
            ReadAt::Latest => self.cached().map(|c| (c, At::AtLeast(current))),
            ReadAt::Exact(rev) => {
                check_exact(snap, rev, current).await?;
                self.cached().map(|c| (c, At::Exactly(rev)))
            }
        };
        if let Some(page) = cached.and_then(|(c, want)| {
            c.list(
                want,
                prefix,
                start_after,
                limit,
                count_remaining,
                REMAINING_COUNT_CAP,
            )
        }) {
            return Ok(page);
        }
        match at {
            // The snapshot's `c/` keys are the state at the resolved revision unless it
            // holds commits above it: then read that state through history.
            ReadAt::Latest if resolved.ahead.is_none() => {
                list_latest(snap, current, prefix, start_after, limit, count_remaining).await
            }
            ReadAt::Latest => {
                history::list_at(snap, current, prefix, start_after, limit, count_remaining).await
            }
            ReadAt::Exact(rev) => {
                history::list_at(snap, rev, prefix, start_after, limit, count_remaining).await
            }
        }
    }

    /// The object cache, unless turned off or bypassed (a clone made by
    /// [`Store::bypassing_cache`]).
    fn cached(&self) -> Option<&Current> {
        if self.bypass_cache {
            return None;
        }
        self.shared.current.as_ref()
    }

    /// A handle on the same store whose reads never use the object cache (the suites
    /// compare the two).
    #[cfg(feature = "test-suite")]
    pub(crate) fn bypassing_cache(&self) -> Store {
        Store {
            bypass_cache: true,
            ..self.clone()
        }
    }

    /// How many objects the cache holds (`None`: turned off).
    #[cfg(feature = "test-suite")]
    pub(crate) fn cached_objects(&self) -> Option<usize> {
        self.shared.current.as_ref().map(Current::len)
    }

    /// Writes waiting in the committer's queue, not yet taken into a batch (for the suites).
    #[cfg(feature = "test-suite")]
    pub(crate) fn queued(&self) -> usize {
        self.queue.max_capacity() - self.queue.capacity()
    }

    /// Queues a write at once, without waiting for room or for its outcome (for the suites,
    /// which decide this way which writes the committer finds waiting together).
    /// [`StorageError::Closed`] when the queue is full or closed.
    #[cfg(feature = "test-suite")]
    pub(crate) fn enqueue(&self, write: Write) -> Result<oneshot::Receiver<Result<Committed>>> {
        let (reply, rx) = oneshot::channel();
        let prepared = self
            .to_compress(&write)
            .map_or_else(Default::default, Value::prepare);
        self.queue
            .try_send(Pending::new(write, prepared, reply))
            .map_err(|_| StorageError::Closed)?;
        Ok(rx)
    }

    /// Commits one write (batched with concurrent ones into one engine transaction).
    pub async fn write(&self, write: Write) -> Result<Committed> {
        let started = tokio::time::Instant::now();
        let op = match (&write.op, write.precondition) {
            (WriteOp::Delete(_), _) => Operation::Delete,
            (WriteOp::Put(_), Precondition::Absent) => Operation::Create,
            (WriteOp::Put(_), _) => Operation::Update,
        };
        let stats = self.shared.requests.of(&write.key);
        let r = self.write_timed(write).await;
        if let Some(cause) = r.as_ref().err().and_then(StorageError::failure_cause) {
            self.shared.failed_writes[cause.index()].fetch_add(1, Ordering::Relaxed);
        }
        if let Some(t) = stats {
            let failed = r.as_ref().is_err_and(crate::stats::is_failure);
            t.observe(op, started.elapsed(), failed);
        }
        r
    }

    async fn write_timed(&self, write: Write) -> Result<Committed> {
        if let WriteOp::Put(v) = &write.op {
            // The revision's digits are spliced in at commit: count the most they take.
            let size = v.bytes.len() + v.revision_slot.map_or(0, |_| 20);
            if size > self.max_value_bytes {
                return Err(StorageError::TooLarge {
                    key: write.key,
                    size,
                    limit: self.max_value_bytes,
                });
            }
        }
        // Compressed here, by the writer, not by the committer every write waits behind;
        // large values off the async workers.
        let prepared = match self.to_compress(&write) {
            None => crate::payload::Prepared::default(),
            Some(value) if value.bytes.len() >= PREPARE_OFF_WORKERS_BYTES => {
                let value = value.clone();
                tokio::task::spawn_blocking(move || value.prepare())
                    .await
                    .unwrap_or_default()
            }
            Some(value) => value.prepare(),
        };
        let (reply, rx) = oneshot::channel();
        self.queue
            .send(Pending::new(write, prepared, reply))
            .await
            .map_err(|_| StorageError::Closed)?;
        rx.await.map_err(|_| StorageError::Closed)?
    }

    /// The value `write` stores, if it is to be stored compressed: not when the store does
    /// not compress, nor for values encryption covers (how well a secret compresses would
    /// show in the length of its ciphertext).
    fn to_compress<'w>(&self, write: &'w Write) -> Option<&'w Value> {
        let sealed = (self.shared.unsealed.as_ref()).is_some_and(|(_, t)| t.covers(&write.key));
        if !self.compress_values || sealed {
            return None;
        }
        match &write.op {
            WriteOp::Put(v) | WriteOp::Delete(v) => Some(v),
        }
    }

    /// Watches every change to keys starting with `prefix` after revision `after`.
    /// Fails at once with [`StorageError::Compacted`] if `after` is below the compaction
    /// revision.
    pub fn watch(&self, prefix: &str, after: Revision) -> Result<Watcher> {
        let compacted = self.compacted();
        if after < compacted {
            return Err(StorageError::Compacted {
                requested: after,
                compacted,
            });
        }
        Ok(Watcher::new(self.shared.clone(), prefix.to_owned(), after))
    }

    /// Discards history below `rev`: versions superseded at or before `rev`, deletions at or
    /// before `rev`, and their change-log entries. Reads and watches below `rev` then fail
    /// with [`StorageError::Compacted`]. Runs in bounded transactions beside the committer.
    pub async fn compact(&self, rev: Revision) -> Result<()> {
        committer::compact(&self.shared, rev).await
    }
}

pub(crate) async fn read_u64(snap: &dyn Snapshot, key: &[u8]) -> Result<u64> {
    keys::decode_u64(key, snap.get(key).await?.as_ref())
}

async fn check_exact(snap: &dyn Snapshot, rev: Revision, current: Revision) -> Result<()> {
    if rev > current {
        return Err(StorageError::FutureRevision {
            requested: rev,
            current,
        });
    }
    let compacted = read_u64(snap, keys::META_COMPACTED).await?;
    if rev < compacted {
        return Err(StorageError::Compacted {
            requested: rev,
            compacted,
        });
    }
    Ok(())
}

async fn list_latest(
    snap: &dyn Snapshot,
    current: Revision,
    prefix: &str,
    start_after: Option<&str>,
    limit: usize,
    count_remaining: bool,
) -> Result<ListPage> {
    let (mut start, end) = keys::current_range(prefix);
    if let Some(after) = start_after {
        start = start.max(keys::current_after(after));
    }
    let mut items = Vec::new();
    let mut more = false;
    loop {
        let want = (limit - items.len()).saturating_add(1).min(SCAN_CHUNK);
        let chunk = snap.scan(&start, &end, want).await?;
        let n = chunk.len();
        let Some((last, _)) = chunk.last() else { break };
        start = history::next_key(last);
        for (k, raw) in chunk {
            if items.len() < limit {
                let key = keys::object_key_of_current(&k)?.to_owned();
                let (revision, value) = keys::decode_current(&k, &raw)?;
                items.push(Versioned {
                    key,
                    revision,
                    value,
                });
            } else {
                more = true;
            }
        }
        if n < want || more {
            break;
        }
        // Long scans share the runtime with other requests.
        tokio::task::yield_now().await;
    }
    // The remaining count is keys only, and bounded: past the cap it is left out, as the
    // API allows (`remainingItemCount` is an estimate, CHUNK-04).
    let remaining = match (more, count_remaining, items.last()) {
        (true, true, Some(last)) => {
            let from = keys::current_after(&last.key);
            let n = snap.count(&from, &end, REMAINING_COUNT_CAP).await?;
            (n < REMAINING_COUNT_CAP).then_some(n)
        }
        _ => None,
    };
    Ok(ListPage {
        revision: current,
        items,
        more,
        remaining,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn revision_slot_is_spliced() {
        let v = Value::with_revision_slot(&b"{\"rv\":\"\"}"[..], 7);
        assert_eq!(&v.render(42)[..], b"{\"rv\":\"42\"}");
        assert_eq!(&Value::new(&b"x"[..]).render(3)[..], b"x");
        assert_eq!(
            &Value::with_revision_slot(&b"ab"[..], 99).render(1)[..],
            b"ab1"
        );
    }
}
