//! # wasmgate-storage-embedded
//!
//! The default [`Engine`]: one [redb](https://docs.rs/redb) file in the data directory.
//! redb was chosen by measurement (`../shared/DEPENDENCIES.md` §6 and the bench binary):
//! pure Rust, ACID multi-key transactions with fsync on commit, MVCC read snapshots, the
//! fastest point reads and scans of the candidates, and a 19 s build. Its slower single
//! durable commit (~0.3 ms against fjall's ~0.14 ms) does not matter behind the store's
//! group commit, which puts many writes in one transaction.
//!
//! ## Transactions
//! Optimistic, as TiKV's: a [`Transaction`] reads the state committed when it began (a redb
//! read snapshot) plus its own buffered writes, and applies the buffer when it commits, on
//! a blocking thread. A commit fails with [`EngineError::Conflict`], writing nothing, when
//! another transaction committed a write to one of the keys it writes after it began: the
//! write-write conflict TiKV detects at prewrite (snapshot isolation). So several stores
//! sharing one engine (`--replicas N`, the suites' replicas) meet the conflicts they meet
//! over TiKV (issue 28). redb has one writer at a time: the engine's writer lock is held
//! during a commit only, so a transaction that has not committed yet blocks nobody.
//!
//! ## Durability
//! A commit appends the transaction's writes to a write-ahead log next to the database
//! (`store.wal` beside `store.redb`) and fsyncs it, then commits them to redb without an
//! fsync of its own; a durable redb commit about once a second empties the log
//! (`src/wal.rs` says why and how). A restart after a crash applies the log again. Measured
//! with 64 clients creating 1 KiB objects: redb's own durable commit took ~1.1 ms for a
//! group of 23 creates (~35 µs per write: the pages it touched, each written and
//! fsynced), which made the commit every write waits behind the gateway's bottleneck.
//!
//! This crate depends on `wasmgate-storage`, redb and a checksum crate only.
#![forbid(unsafe_code)]

mod wal;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use bytes::Bytes;
use redb::{
    Database, Durability, ReadOnlyTable, ReadableDatabase, ReadableTable as _, TableDefinition,
};
use tokio::sync::{Mutex, OwnedMutexGuard};
use wasmgate_storage::engine::KeyValue;
use wasmgate_storage::{Engine, EngineError, Snapshot, Transaction};

use wasmgate_storage::keys;

use crate::wal::{AppendError, Opened, Wal, Writes};

const TABLE: TableDefinition<'static, &'static [u8], &'static [u8]> = TableDefinition::new("kv");
/// The engine's own bookkeeping, beside the store's keys: `applied`, the sequence number
/// of the last log record whose writes are in the database.
const META: TableDefinition<'static, &'static str, u64> = TableDefinition::new("wal");
const APPLIED: &str = "applied";

/// What the log says when an open applies records of the write-ahead log again.
pub const REPLAYED: &str = "applied the write-ahead log again";

/// The default size of redb's page cache, in MiB. Reads at the latest revision are served
/// from the store's object cache, so redb's cache mostly serves writes and history reads:
/// measured with ~150k 1 KiB objects, 64 MiB gave the same creates/s as 256, 15 % more
/// updates/s (9.4-9.8k → 11.2k) and 250 MB less memory after a restart (the startup scan
/// no longer fills a second copy of every object).
pub const DEFAULT_CACHE_MIB: usize = 64;

/// Configuration of the embedded engine.
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Config {
    /// The database file. Created if missing.
    pub path: PathBuf,
    /// redb's page cache, in MiB.
    #[serde(default = "default_cache_mib")]
    pub cache_mib: usize,
}

fn default_cache_mib() -> usize {
    DEFAULT_CACHE_MIB
}

impl Config {
    /// A config for the file at `path` with default tuning.
    pub fn at(path: impl Into<PathBuf>) -> Self {
        Config {
            path: path.into(),
            cache_mib: DEFAULT_CACHE_MIB,
        }
    }
}

/// What an open does with a write-ahead log damaged before its end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Recovery {
    /// Refuse to open ([`DamagedLog`]).
    Refuse,
    /// Drop the damaged record and everything after it ([`EmbeddedEngine::repair`]).
    AcceptLoss,
}

/// What a damaged write-ahead log loses when it is repaired.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Repaired {
    /// The log file.
    pub log: PathBuf,
    /// Where the damaged record starts in it.
    pub offset: u64,
    /// Why that record cannot be read.
    pub why: &'static str,
    /// The sequence numbers of the first (the damaged one) and last record dropped.
    pub first: u64,
    /// See `first`.
    pub last: u64,
    /// How many records are dropped (the damaged ones and the whole ones after them).
    pub records: u64,
    /// Of those, how many were whole: their writes were acknowledged and are lost.
    pub whole: u64,
    /// Bytes of the log dropped.
    pub bytes: u64,
    /// The store's revision after the repair (past every revision the dropped records
    /// held); 0 before it.
    pub revision: u64,
}

impl Repaired {
    fn of(log: &Path, d: &wal::Damage) -> Repaired {
        let last = d.later.last().map_or(d.seq, |(seq, _)| *seq);
        Repaired {
            log: log.to_owned(),
            offset: d.offset,
            why: d.why,
            first: d.seq,
            last,
            records: last - d.seq + 1,
            whole: d.later.len() as u64,
            bytes: d.bytes,
            revision: 0,
        }
    }
}

/// Why an open refused a write-ahead log: a record before its end cannot be read, and
/// whole records follow it. That is damage to the file, not a crash (a crash can only cut
/// the last record short), and the records after it hold acknowledged writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DamagedLog(pub Repaired);

impl std::fmt::Display for DamagedLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let r = &self.0;
        write!(
            f,
            "the write-ahead log {} is damaged: record {} at offset {} cannot be read ({}), \
             and {} whole records follow it (up to record {}). This is not a record torn \
             by a crash, and starting would lose acknowledged writes and hand their \
             resourceVersions out again. Keep a copy of the data directory; then either \
             restore it from a backup, or start from the records before the damage by \
             repairing the store (`wasmgate repair`), which drops records {}..={} ({} \
             records, {} bytes; {} of them whole, whose writes are lost)",
            r.log.display(),
            r.first,
            r.offset,
            r.why,
            r.whole,
            r.last,
            r.first,
            r.last,
            r.records,
            r.bytes,
            r.whole,
        )
    }
}

impl std::error::Error for DamagedLog {}

/// The embedded engine.
#[derive(Clone)]
pub struct EmbeddedEngine {
    inner: Arc<Inner>,
    /// redb allows one write transaction at a time; this lock is held by a commit (and a
    /// checkpoint it made due), from the conflict check to the end of redb's commit.
    writer: Arc<Mutex<()>>,
    /// Which keys recent commits wrote, for the conflict check of the transactions open
    /// meanwhile.
    conflicts: Arc<std::sync::Mutex<Conflicts>>,
    /// The next revision to hand out ([`Engine::allocate`]): counted in memory, since only
    /// this process opens the database; recovered from the change log at open
    /// ([`settle_revisions`]).
    next: Arc<AtomicU64>,
}

/// Run when the engine opens, before anyone can write: every revision handed out before
/// the engine closed (or crashed) is final now. Marks the ones that never got a log entry
/// skipped, records the last as resolved in the hint `m/rev`, and returns the next
/// revision to hand out (past every revision the log, the hint or the compaction horizon
/// names).
fn settle_revisions(w: &redb::WriteTransaction) -> Result<u64, EngineError> {
    let mut t = w.open_table(TABLE).map_err(EngineError::other)?;
    let read = |t: &redb::Table<&[u8], &[u8]>, key: &[u8]| -> Result<u64, EngineError> {
        let v = t
            .get(key)
            .map_err(EngineError::other)?
            .map(|v| Bytes::copy_from_slice(v.value()));
        keys::decode_u64(key, v.as_ref()).map_err(EngineError::other)
    };
    let hint = read(&t, keys::META_REV)?;
    let compacted = read(&t, keys::META_COMPACTED)?;
    let from = hint.max(compacted);
    let (start, end) = keys::log_range(from, u64::MAX - 1);
    let mut present = Vec::new();
    for item in t
        .range::<&[u8]>(start.as_slice()..end.as_slice())
        .map_err(EngineError::other)?
    {
        let (k, v) = item.map_err(EngineError::other)?;
        let rev = keys::parse_log_key(k.value()).map_err(EngineError::other)?;
        let entry = keys::decode_log(k.value(), v.value()).map_err(EngineError::other)?;
        present.push((rev, entry.skipped_until().unwrap_or(rev).max(rev)));
    }
    let mut at = from;
    let mut skipped = Vec::new();
    for (rev, end) in present {
        if rev > at + 1 {
            skipped.push((at + 1, rev - 1));
        }
        at = at.max(end);
    }
    for &(first, last) in &skipped {
        t.insert(
            keys::log(first).as_slice(),
            keys::encode_skip(last).as_ref(),
        )
        .map_err(EngineError::other)?;
    }
    if !skipped.is_empty() {
        tracing::warn!(
            revisions = skipped.iter().map(|(f, l)| l - f + 1).sum::<u64>(),
            "revisions handed out and never written before the last stop: marked skipped"
        );
    }
    if at > hint {
        t.insert(keys::META_REV, keys::encode_u64(at).as_ref())
            .map_err(EngineError::other)?;
    }
    Ok(at + 1)
}

/// The commits a still-open transaction may conflict with. A transaction begins at the
/// number of commits made so far (`seq`); it conflicts with a commit numbered after that
/// which wrote a key it writes. Commits older than every open transaction are forgotten,
/// so this holds at most the commits made while the oldest open transaction is open.
#[derive(Default)]
struct Conflicts {
    /// Commits made so far.
    seq: u64,
    /// The start of each open transaction, and how many began there.
    open: std::collections::BTreeMap<u64, usize>,
    /// (commit number, the keys it wrote), oldest first; `None`: not known (a commit
    /// thread panicked), which conflicts with every transaction open then.
    recent: std::collections::VecDeque<(u64, Option<std::collections::HashSet<Vec<u8>>>)>,
}

impl Conflicts {
    /// Forgets the commits no open transaction can conflict with.
    fn prune(&mut self) {
        match self.open.keys().next().copied() {
            None => self.recent.clear(),
            Some(oldest) => {
                while self.recent.front().is_some_and(|(seq, _)| *seq <= oldest) {
                    self.recent.pop_front();
                }
            }
        }
    }

    /// Whether a commit after `start` wrote one of `writes`.
    fn conflicts(&self, start: u64, writes: &Writes) -> bool {
        self.recent
            .iter()
            .filter(|(seq, _)| *seq > start)
            .any(|(_, keys)| {
                keys.as_ref()
                    .is_none_or(|keys| writes.keys().any(|k| keys.contains(k)))
            })
    }
}

/// An open transaction's place in [`Conflicts`]; dropping it (commit or rollback) closes
/// the transaction there.
struct Open {
    conflicts: Arc<std::sync::Mutex<Conflicts>>,
    start: u64,
}

impl Drop for Open {
    fn drop(&mut self) {
        let mut c = lock_conflicts(&self.conflicts);
        if let Some(n) = c.open.get_mut(&self.start) {
            *n -= 1;
            if *n == 0 {
                c.open.remove(&self.start);
            }
        }
        c.prune();
    }
}

/// The conflict table, also after a panic elsewhere (it holds no invariant a panic breaks
/// halfway: every change is one field).
fn lock_conflicts(c: &std::sync::Mutex<Conflicts>) -> std::sync::MutexGuard<'_, Conflicts> {
    c.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

struct Inner {
    db: Database,
    /// The write-ahead log (`None` in memory, where nothing is durable anyway). Locked only
    /// by a commit, which holds the writer lock already.
    wal: Option<std::sync::Mutex<Wal>>,
    /// Set when a write failed in a way that leaves the database behind its log (an I/O
    /// error): from then on every operation fails until a restart applies the log again.
    broken: AtomicBool,
}

impl std::fmt::Debug for EmbeddedEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EmbeddedEngine").finish_non_exhaustive()
    }
}

/// The store holds Secret values: its file is readable by its owner only (0600). A new
/// file is created empty with that mode (redb initializes an empty file); an existing
/// one is tightened.
fn restrict_to_owner(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::{OpenOptionsExt as _, PermissionsExt as _};
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(path)?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
}

impl EmbeddedEngine {
    /// Opens (or creates) the database file described by `config`, applying what its
    /// write-ahead log holds beyond the database's last durable commit. A log damaged
    /// before its end (records that cannot be read, with later ones after them) is refused
    /// with a [`DamagedLog`] error: see [`EmbeddedEngine::repair`].
    pub fn open(config: &Config) -> Result<Self, EngineError> {
        Self::open_recovering(config, Recovery::Refuse).map(|(engine, _)| engine)
    }

    /// Opens the database as [`EmbeddedEngine::open`] does, but accepts a damaged log: the
    /// records before the damage are applied and the damaged one and every record after it
    /// are dropped, and the store's revision is moved past every revision those records
    /// hold, so that none is handed out twice. Returns what was dropped (`None`: the log
    /// was not damaged and nothing was). The engine is closed again: this is for an
    /// operator's `wasmgate repair`, with the gateway stopped.
    pub fn repair(config: &Config) -> Result<Option<Repaired>, EngineError> {
        Self::open_recovering(config, Recovery::AcceptLoss).map(|(_, repaired)| repaired)
    }

    fn open_recovering(
        config: &Config,
        recovery: Recovery,
    ) -> Result<(Self, Option<Repaired>), EngineError> {
        if let Some(parent) = config.path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(EngineError::other)?;
        }
        restrict_to_owner(&config.path).map_err(EngineError::other)?;
        let db = Database::builder()
            .set_cache_size(config.cache_mib.saturating_mul(1 << 20))
            .create(&config.path)
            .map_err(|e| match e {
                redb::DatabaseError::DatabaseAlreadyOpen => EngineError::Unavailable(Box::new(e)),
                other => EngineError::other(other),
            })?;
        // Opened only once redb holds the database file's lock: one process per log.
        let wal_path = config.path.with_extension("wal");
        restrict_to_owner(&wal_path).map_err(EngineError::other)?;
        Self::init(db, Some((&wal_path, recovery)))
    }

    /// Opens the database file at `path` with default tuning.
    pub fn open_path(path: &Path) -> Result<Self, EngineError> {
        Self::open(&Config::at(path))
    }

    /// A database that lives in memory only (tests, `--storage memory`).
    pub fn in_memory() -> Result<Self, EngineError> {
        let db = Database::builder()
            .create_with_backend(redb::backends::InMemoryBackend::new())
            .map_err(EngineError::other)?;
        Self::init(db, None).map(|(engine, _)| engine)
    }

    /// Creates the tables if missing and, on disk, applies what the log holds beyond the
    /// database's last durable commit, durably, then empties the log.
    fn init(
        db: Database,
        wal: Option<(&Path, Recovery)>,
    ) -> Result<(Self, Option<Repaired>), EngineError> {
        let w = db.begin_write().map_err(EngineError::other)?;
        let applied = {
            w.open_table(TABLE).map_err(EngineError::other)?;
            let meta = w.open_table(META).map_err(EngineError::other)?;
            meta.get(APPLIED)
                .map_err(EngineError::other)?
                .map_or(0, |v| v.value())
        };
        let mut repaired = None;
        let next;
        let wal = match wal {
            None => {
                next = settle_revisions(&w)?;
                w.commit().map_err(EngineError::other)?;
                None
            }
            Some((path, recovery)) => {
                let opened = Wal::open(path, applied).map_err(|e| {
                    EngineError::other(format!("write-ahead log {}: {e}", path.display()))
                })?;
                let Opened {
                    mut wal,
                    records,
                    end,
                } = opened;
                let wal_seq_read = records.last().map_or(applied, |(seq, _)| *seq);
                let mut missing = records.into_iter().skip_while(|(seq, _)| *seq <= applied);
                let mut replayed = 0usize;
                if let Some(first) = missing.next() {
                    if first.0 != applied + 1 {
                        return Err(EngineError::other(format!(
                            "the write-ahead log {} starts at record {} but the database \
                             holds records up to {applied} only: records are missing",
                            path.display(),
                            first.0
                        )));
                    }
                    for (seq, writes) in std::iter::once(first).chain(missing) {
                        write_all(&w, &writes, Some(seq))?;
                        wal.continue_after(seq);
                        replayed += 1;
                    }
                }
                match end {
                    wal::End::Clean => {}
                    wal::End::Torn { offset, bytes } if wal_seq_read < applied => tracing::info!(
                        log = %path.display(),
                        offset,
                        bytes,
                        "the write-ahead log holds records the database holds already, the \
                         last of them unreadable: ignored"
                    ),
                    wal::End::Torn { offset, bytes } => tracing::warn!(
                        log = %path.display(),
                        offset,
                        bytes,
                        records = 1,
                        "the write-ahead log ends in a record a crash cut short (never \
                         acknowledged): cut off"
                    ),
                    wal::End::Damaged(damage) => {
                        let dropped = Repaired::of(path, &damage);
                        if recovery == Recovery::Refuse {
                            return Err(EngineError::other(DamagedLog(dropped)));
                        }
                        // Every revision a dropped record handed out stays used: the log
                        // entries it wrote, and the hint it may have written.
                        let floor = damage
                            .later
                            .iter()
                            .flat_map(|(_, writes)| writes.iter())
                            .filter_map(|(k, v)| {
                                if k.as_slice() == keys::META_REV {
                                    keys::decode_u64(keys::META_REV, v.as_ref()).ok()
                                } else {
                                    keys::parse_log_key(k).ok()
                                }
                            })
                            .max()
                            .unwrap_or(0);
                        let mut t = w.open_table(TABLE).map_err(EngineError::other)?;
                        let current = t
                            .get(keys::META_REV)
                            .map_err(EngineError::other)?
                            .map(|v| Bytes::copy_from_slice(v.value()));
                        let current = keys::decode_u64(keys::META_REV, current.as_ref())
                            .map_err(EngineError::other)?;
                        if floor > current {
                            t.insert(keys::META_REV, keys::encode_u64(floor).as_ref())
                                .map_err(EngineError::other)?;
                        }
                        drop(t);
                        tracing::warn!(
                            log = %path.display(),
                            offset = damage.offset,
                            first = dropped.first,
                            last = dropped.last,
                            records = dropped.records,
                            bytes = dropped.bytes,
                            revision = floor.max(current),
                            "repair: dropped the damaged record of the write-ahead log and \
                             every record after it; the store's revision continues after \
                             the highest they held"
                        );
                        repaired = Some(Repaired {
                            revision: floor.max(current),
                            ..dropped
                        });
                    }
                }
                next = settle_revisions(&w)?;
                w.commit().map_err(EngineError::other)?;
                if replayed > 0 {
                    tracing::warn!(
                        records = replayed,
                        "the store was not closed cleanly: {REPLAYED}"
                    );
                }
                wal.continue_after(applied);
                wal.close().map_err(EngineError::other)?;
                Some(std::sync::Mutex::new(wal))
            }
        };
        let engine = EmbeddedEngine {
            inner: Arc::new(Inner {
                db,
                wal,
                broken: AtomicBool::new(false),
            }),
            writer: Arc::new(Mutex::new(())),
            conflicts: Default::default(),
            next: Arc::new(AtomicU64::new(next)),
        };
        Ok((engine, repaired))
    }

    fn read_table(&self) -> Result<ReadOnlyTable<&'static [u8], &'static [u8]>, EngineError> {
        self.inner.usable()?;
        let r = self.inner.db.begin_read().map_err(EngineError::other)?;
        r.open_table(TABLE).map_err(EngineError::other)
    }
}

struct RedbSnapshot {
    table: ReadOnlyTable<&'static [u8], &'static [u8]>,
}

fn get(
    table: &ReadOnlyTable<&'static [u8], &'static [u8]>,
    key: &[u8],
) -> Result<Option<Bytes>, EngineError> {
    Ok(table
        .get(key)
        .map_err(EngineError::other)?
        .map(|g| Bytes::copy_from_slice(g.value())))
}

fn scan(
    table: &ReadOnlyTable<&'static [u8], &'static [u8]>,
    start: &[u8],
    end: &[u8],
    limit: usize,
) -> Result<Vec<KeyValue>, EngineError> {
    if start >= end {
        return Ok(Vec::new());
    }
    let mut out = Vec::with_capacity(limit.min(1024));
    for item in table
        .range::<&[u8]>(start..end)
        .map_err(EngineError::other)?
    {
        let (k, v) = item.map_err(EngineError::other)?;
        out.push((
            Bytes::copy_from_slice(k.value()),
            Bytes::copy_from_slice(v.value()),
        ));
        if out.len() >= limit {
            break;
        }
    }
    Ok(out)
}

#[async_trait::async_trait]
impl Snapshot for RedbSnapshot {
    async fn get(&self, key: &[u8]) -> Result<Option<Bytes>, EngineError> {
        get(&self.table, key)
    }

    async fn scan(
        &self,
        start: &[u8],
        end: &[u8],
        limit: usize,
    ) -> Result<Vec<KeyValue>, EngineError> {
        scan(&self.table, start, end, limit.max(1))
    }

    async fn count(&self, start: &[u8], end: &[u8], limit: u64) -> Result<u64, EngineError> {
        if start >= end {
            return Ok(0);
        }
        let mut n = 0u64;
        // Keys only: no value is copied.
        for item in self
            .table
            .range::<&[u8]>(start..end)
            .map_err(EngineError::other)?
        {
            item.map_err(EngineError::other)?;
            n += 1;
            if n >= limit {
                break;
            }
        }
        Ok(n)
    }
}

struct RedbTransaction {
    inner: Arc<Inner>,
    /// The engine's writer lock, taken by the commit.
    writer: Arc<Mutex<()>>,
    /// Where this transaction began among the commits, for the conflict check.
    open: Open,
    /// The committed state as of `begin` (a redb read snapshot).
    base: ReadOnlyTable<&'static [u8], &'static [u8]>,
    /// Buffered writes; `None` deletes.
    writes: Writes,
}

#[async_trait::async_trait]
impl Transaction for RedbTransaction {
    async fn get(&mut self, key: &[u8]) -> Result<Option<Bytes>, EngineError> {
        match self.writes.get(key) {
            Some(v) => Ok(v.clone()),
            None => get(&self.base, key),
        }
    }

    fn put(&mut self, key: Vec<u8>, value: Bytes) {
        self.writes.insert(key, Some(value));
    }

    fn delete(&mut self, key: Vec<u8>) {
        self.writes.insert(key, None);
    }

    async fn commit(self: Box<Self>) -> Result<(), EngineError> {
        let RedbTransaction {
            inner,
            writer,
            open,
            base,
            writes,
        } = *self;
        drop(base);
        if writes.is_empty() {
            return Ok(());
        }
        let _writer: OwnedMutexGuard<()> = writer.lock_owned().await;
        // Checked with the writer lock held: no other commit lands between the check and
        // this one's.
        if lock_conflicts(&open.conflicts).conflicts(open.start, &writes) {
            return Err(EngineError::Conflict);
        }
        let (committed, writes) = if wasmgate_storage::engine::may_block() {
            (inner.commit(&writes), Some(writes))
        } else {
            let committer = inner.clone();
            let joined = tokio::task::spawn_blocking(move || {
                let r = committer.commit(&writes);
                (r, writes)
            })
            .await;
            match joined {
                Ok((r, writes)) => (r, Some(writes)),
                Err(e) => (Err(EngineError::Undetermined(Box::new(e))), None),
            }
        };
        if matches!(committed, Ok(_) | Err(EngineError::Undetermined(_))) {
            // Landed, or may have: the transactions open now, which began before it,
            // conflict with it. Its keys are kept only when there are any (a lone writer,
            // the common case of one store, copies nothing).
            let mut c = lock_conflicts(&open.conflicts);
            c.seq += 1;
            let others = c.open.values().sum::<usize>() > 1;
            let seq = c.seq;
            match writes {
                Some(w) if others => c.recent.push_back((seq, Some(w.into_keys().collect()))),
                Some(_) => {}
                None => c.recent.push_back((seq, None)),
            }
        }
        drop(open);
        let due = committed?;
        // The writer lock is released only after redb has finished the commit, or after
        // the checkpoint it made due: the next transaction waits for that, not this one,
        // whose writes are durable already.
        if due {
            tokio::task::spawn_blocking(move || {
                let _writer = _writer;
                inner.checkpoint_now();
            });
        }
        Ok(())
    }
}

/// Puts `writes` into redb's transaction `w`, recording that log record `seq` is applied
/// (`None`: there is no log, in memory).
fn write_all(
    w: &redb::WriteTransaction,
    writes: &Writes,
    seq: Option<u64>,
) -> Result<(), EngineError> {
    let mut t = w.open_table(TABLE).map_err(EngineError::other)?;
    for (k, v) in writes {
        match v {
            Some(v) => {
                t.insert(k.as_slice(), v.as_ref())
                    .map_err(EngineError::other)?;
            }
            None => {
                t.remove(k.as_slice()).map_err(EngineError::other)?;
            }
        }
    }
    if let Some(seq) = seq {
        w.open_table(META)
            .map_err(EngineError::other)?
            .insert(APPLIED, seq)
            .map_err(EngineError::other)?;
    }
    Ok(())
}

/// The log, unless a panic while it was held left it in doubt.
fn lock(wal: &std::sync::Mutex<Wal>) -> Result<std::sync::MutexGuard<'_, Wal>, EngineError> {
    wal.lock().map_err(|_| {
        EngineError::Unavailable("the write-ahead log is unusable after a panic".into())
    })
}

impl Inner {
    fn usable(&self) -> Result<(), EngineError> {
        if self.broken.load(Ordering::Acquire) {
            return Err(EngineError::Unavailable(
                "an earlier write failed on disk; restart the gateway to recover the store \
                 from its write-ahead log"
                    .into(),
            ));
        }
        Ok(())
    }

    fn broke(&self, what: &str, e: &dyn std::fmt::Display) {
        tracing::error!(error = %e, "{what}; the store refuses further requests until a restart");
        self.broken.store(true, Ordering::Release);
    }

    /// Commits `writes` (the caller holds the writer lock): durable once the log record is,
    /// then applied to redb without an fsync. Returns whether a checkpoint is due.
    fn commit(&self, writes: &Writes) -> Result<bool, EngineError> {
        self.usable()?;
        let Some(wal) = &self.wal else {
            self.redb_commit(writes, None, Durability::Immediate)?;
            return Ok(false);
        };
        let mut wal = lock(wal)?;
        let seq = match wal.append(writes) {
            Ok(seq) => seq,
            // Nothing of it is in the log: the transaction did not happen.
            Err(AppendError::NotWritten(e)) => return Err(EngineError::other(e)),
            // It may be in the log, and a restart would apply it.
            Err(AppendError::Unknown(e)) => {
                self.broke("a write-ahead log write failed and could not be undone", &e);
                return Err(EngineError::Undetermined(Box::new(e)));
            }
        };
        // From here the writes are durable: whatever fails, a restart applies them.
        if let Err(e) = self.redb_commit(writes, Some(seq), Durability::None) {
            self.broke("a logged write could not be applied to the database", &e);
            return Err(EngineError::Undetermined(Box::new(e)));
        }
        Ok(wal.due())
    }

    /// Makes the database durable and empties the log (the caller holds the writer lock).
    fn checkpoint_now(&self) {
        let Some(wal) = &self.wal else { return };
        if self.usable().is_err() {
            return;
        }
        if let Err(e) = lock(wal).and_then(|mut wal| self.checkpoint(&mut wal)) {
            self.broke("the database could not be made durable", &e);
        }
    }

    fn redb_commit(
        &self,
        writes: &Writes,
        seq: Option<u64>,
        durability: Durability,
    ) -> Result<(), EngineError> {
        let mut w = self.db.begin_write().map_err(EngineError::other)?;
        w.set_durability(durability).map_err(EngineError::other)?;
        write_all(&w, writes, seq)?;
        w.commit()
            .map_err(|e| EngineError::Undetermined(Box::new(e)))
    }

    /// One durable redb commit (it persists every commit before it), then an empty log.
    fn checkpoint(&self, wal: &mut Wal) -> Result<(), EngineError> {
        let w = self.db.begin_write().map_err(EngineError::other)?;
        w.commit().map_err(EngineError::other)?;
        wal.clear();
        Ok(())
    }
}

impl Drop for Inner {
    /// A clean stop leaves everything in the database and the log empty.
    fn drop(&mut self) {
        if self.broken.load(Ordering::Acquire) {
            return;
        }
        if let Some(wal) = &self.wal
            && let Ok(mut wal) = wal.lock()
            && let Err(e) = self
                .checkpoint(&mut wal)
                .and_then(|()| wal.close().map_err(EngineError::other))
        {
            tracing::warn!(error = %e, "closing the store: the write-ahead log stays for the next start");
        }
    }
}

#[async_trait::async_trait]
impl Engine for EmbeddedEngine {
    fn name(&self) -> &'static str {
        "embedded"
    }

    fn blocking_commits(&self) -> bool {
        true
    }

    async fn allocate(&self, n: u64) -> Result<u64, EngineError> {
        self.inner.usable()?;
        Ok(self.next.fetch_add(n.max(1), Ordering::Relaxed))
    }

    async fn allocate_in(
        &self,
        _txn: &mut dyn Transaction,
        _n: u64,
    ) -> Result<Option<u64>, EngineError> {
        // `allocate` costs nothing here.
        Ok(None)
    }

    async fn snapshot(&self) -> Result<Box<dyn Snapshot>, EngineError> {
        Ok(Box::new(RedbSnapshot {
            table: self.read_table()?,
        }))
    }

    async fn begin(&self) -> Result<Box<dyn Transaction>, EngineError> {
        // The start and the snapshot are taken together: a commit counted after `start`
        // finished in redb before it was counted, so the snapshot may already hold it (a
        // needless conflict, never a missed one).
        let (start, base) = {
            let mut c = lock_conflicts(&self.conflicts);
            let base = self.read_table()?;
            let start = c.seq;
            *c.open.entry(start).or_default() += 1;
            (start, base)
        };
        Ok(Box::new(RedbTransaction {
            inner: self.inner.clone(),
            writer: self.writer.clone(),
            open: Open {
                conflicts: self.conflicts.clone(),
                start,
            },
            base,
            writes: Writes::new(),
        }))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]

    use std::path::{Path, PathBuf};
    use std::time::Duration;

    use super::*;

    fn dirs(name: &str) -> (PathBuf, PathBuf) {
        let root = std::env::temp_dir().join(format!("wasmgate-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let (a, b) = (root.join("a"), root.join("b"));
        std::fs::create_dir_all(&a).unwrap();
        std::fs::create_dir_all(&b).unwrap();
        (a, b)
    }

    /// Opens the engine in `dir` with a log that is emptied when it is `max_age` old.
    fn open_with(dir: &Path, max_age: Duration) -> EmbeddedEngine {
        let e = EmbeddedEngine::open_path(&dir.join("store.redb")).unwrap();
        let wal = e.inner.wal.as_ref().unwrap();
        wal.lock().unwrap().set_max_age(max_age);
        e
    }

    /// Opens the engine in `dir` with a log that is never emptied while it is open.
    fn open(dir: &Path) -> EmbeddedEngine {
        open_with(dir, Duration::from_secs(3600))
    }

    async fn commit(e: &EmbeddedEngine, key: &str, value: Option<&str>) {
        let mut t = e.begin().await.unwrap();
        match value {
            Some(v) => t.put(key.into(), Bytes::copy_from_slice(v.as_bytes())),
            None => t.delete(key.into()),
        }
        t.commit().await.unwrap();
    }

    async fn read(e: &EmbeddedEngine, key: &str) -> Option<String> {
        let v = e
            .snapshot()
            .await
            .unwrap()
            .get(key.as_bytes())
            .await
            .unwrap();
        v.map(|v| String::from_utf8(v.to_vec()).unwrap())
    }

    fn copy(from: &Path, to: &Path, file: &str) {
        std::fs::copy(from.join(file), to.join(file)).unwrap();
    }

    /// STORE-01: what a crash leaves (the database as of its last durable commit, the log
    /// of every commit since, a torn record at its end) opens with every acknowledged
    /// commit, and the log is emptied into the database.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_crash_loses_no_logged_commit() {
        let (a, b) = dirs("wal-crash");
        {
            let e = open(&a);
            commit(&e, "k1", Some("v1")).await;
            commit(&e, "k2", Some("v1")).await;
        }
        // A clean stop: everything in the database, an empty log.
        assert_eq!(std::fs::metadata(a.join("store.wal")).unwrap().len(), 0);
        copy(&a, &b, "store.redb");
        let e = open(&a);
        commit(&e, "k1", None).await;
        commit(&e, "k2", Some("v2")).await;
        commit(&e, "k3", Some(&"x".repeat(100_000))).await;
        copy(&a, &b, "store.wal");
        // A record torn over the end marker.
        let mut torn = std::fs::read(b.join("store.wal")).unwrap();
        torn.truncate(torn.len() - 8);
        torn.extend_from_slice(&[200, 0, 0, 0, 1, 2, 3, 4, 5]);
        std::fs::write(b.join("store.wal"), torn).unwrap();

        let recovered = open(&b);
        assert_eq!(read(&recovered, "k1").await, None);
        assert_eq!(read(&recovered, "k2").await.as_deref(), Some("v2"));
        assert_eq!(read(&recovered, "k3").await.unwrap().len(), 100_000);
        assert_eq!(std::fs::metadata(b.join("store.wal")).unwrap().len(), 0);
        // It goes on: a later commit survives another crash the same way.
        commit(&recovered, "k4", Some("v4")).await;
        assert!(std::fs::metadata(b.join("store.wal")).unwrap().len() > 0);
        drop(recovered);
        let reopened = open(&b);
        assert_eq!(read(&reopened, "k4").await.as_deref(), Some("v4"));
        assert_eq!(read(&reopened, "k2").await.as_deref(), Some("v2"));
        drop(reopened);
        drop(e);
        assert_eq!(read(&open(&a), "k2").await.as_deref(), Some("v2"));
        std::fs::remove_dir_all(a.parent().unwrap()).unwrap();
    }

    /// A crash between a durable commit and the emptying of the log leaves records the
    /// database already holds: they are not applied over later writes.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn records_the_database_holds_are_not_applied_again() {
        let (a, b) = dirs("wal-stale");
        let e = open(&a);
        commit(&e, "k", Some("v2")).await;
        commit(&e, "k", Some("v3")).await;
        copy(&a, &b, "store.wal");
        commit(&e, "k", Some("v4")).await;
        drop(e);
        copy(&a, &b, "store.redb");
        assert_eq!(read(&open(&b), "k").await.as_deref(), Some("v4"));
        std::fs::remove_dir_all(a.parent().unwrap()).unwrap();
    }

    /// A checkpoint (due after every commit here) makes the database durable by itself:
    /// its file alone, with an empty log, holds every commit.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_checkpoint_empties_the_log_into_the_database() {
        let (a, b) = dirs("wal-checkpoint");
        let e = open_with(&a, Duration::ZERO);
        commit(&e, "k1", Some("v1")).await;
        commit(&e, "k2", Some("v2")).await;
        // The next commit waits for the checkpoint to have run.
        drop(e.writer.lock().await);
        assert_eq!(e.inner.wal.as_ref().unwrap().lock().unwrap().len(), 0);
        copy(&a, &b, "store.redb");
        let copied = open(&b);
        assert_eq!(read(&copied, "k1").await.as_deref(), Some("v1"));
        assert_eq!(read(&copied, "k2").await.as_deref(), Some("v2"));
        drop((e, copied));
        std::fs::remove_dir_all(a.parent().unwrap()).unwrap();
    }

    /// A log that does not continue the database (records lost in between) is refused
    /// rather than applied over a gap.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_log_with_a_gap_is_refused() {
        let (a, b) = dirs("wal-gap");
        drop(open(&a));
        copy(&a, &b, "store.redb");
        let e = open(&a);
        commit(&e, "k", Some("v1")).await;
        // Without its end marker, which the next record overwrites.
        let first = std::fs::metadata(a.join("store.wal")).unwrap().len() as usize - 8;
        commit(&e, "k", Some("v2")).await;
        let log = std::fs::read(a.join("store.wal")).unwrap();
        std::fs::write(b.join("store.wal"), &log[first..]).unwrap();
        let err = EmbeddedEngine::open_path(&b.join("store.redb"))
            .err()
            .unwrap();
        assert!(
            format!("{err:?}").contains("records are missing"),
            "{err:?}"
        );
        drop(e);
        std::fs::remove_dir_all(a.parent().unwrap()).unwrap();
    }

    /// Commits, crashes (the files copied while the engine is open, so the log is not
    /// emptied) and returns the log's bytes with the offsets of its records.
    async fn crashed_log(a: &Path, b: &Path, n: usize) -> (Vec<u8>, Vec<usize>) {
        drop(open(a));
        copy(a, b, "store.redb");
        let e = open(a);
        let mut offsets = Vec::new();
        for i in 0..n {
            offsets.push(std::fs::metadata(a.join("store.wal")).unwrap().len() as usize);
            let mut t = e.begin().await.unwrap();
            t.put(format!("k{i}").into(), Bytes::from("v"));
            let rev = 100 + i as u64;
            t.put(keys::META_REV.to_vec(), keys::encode_u64(rev));
            t.commit().await.unwrap();
        }
        // Each append ends in an 8-byte end marker the next one overwrites.
        let offsets = offsets.into_iter().map(|o| o.saturating_sub(8)).collect();
        let log = std::fs::read(a.join("store.wal")).unwrap();
        drop(e);
        (log, offsets)
    }

    /// Issue 28: what an open finds of the revisions handed out before the stop is final,
    /// as no one can write them any more: those never written are marked skipped in the
    /// change log, the hint `m/rev` names the last, and the count goes on after it.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_open_settles_the_revisions_handed_out_before() {
        let (a, _) = dirs("settle");
        {
            let e = open(&a);
            assert_eq!(e.allocate(2).await.unwrap(), 1);
            assert_eq!(e.allocate(3).await.unwrap(), 3);
            // The second batch committed (a write at 3, 4 and 5 skipped); the first never.
            let mut t = e.begin().await.unwrap();
            t.put(keys::log(3), keys::encode_log(keys::TAG_PUT, 0, "g/r/n/a"));
            t.put(keys::log(4), keys::encode_skip(5));
            t.commit().await.unwrap();
        }
        let e = open(&a);
        let l1 = e
            .snapshot()
            .await
            .unwrap()
            .get(&keys::log(1))
            .await
            .unwrap();
        let l1 = keys::decode_log(b"l/1", &l1.unwrap()).unwrap();
        assert_eq!(l1.skipped_until(), Some(2));
        assert_eq!(rev(&e).await, 5);
        assert_eq!(e.allocate(1).await.unwrap(), 6);
        drop(e);
        std::fs::remove_dir_all(a.parent().unwrap()).unwrap();
    }

    async fn rev(e: &EmbeddedEngine) -> u64 {
        let v = e
            .snapshot()
            .await
            .unwrap()
            .get(keys::META_REV)
            .await
            .unwrap();
        keys::decode_u64(keys::META_REV, v.as_ref()).unwrap()
    }

    /// ISSUE-24.1: a log with a damaged record before whole ones is refused, with the file,
    /// offset and sequence number, and left as it was; `repair` then starts from the
    /// records before the damage and moves the revision past every dropped record's, so
    /// that no revision is handed out twice.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_damaged_log_is_refused_until_repaired() {
        let (a, b) = dirs("wal-damaged");
        let (mut log, offsets) = crashed_log(&a, &b, 6).await;
        log[offsets[2] + 30] ^= 0x10;
        std::fs::write(b.join("store.wal"), &log).unwrap();
        let config = Config::at(b.join("store.redb"));
        let err = EmbeddedEngine::open(&config).err().unwrap();
        let EngineError::Other(inner) = &err else {
            panic!("{err:?}")
        };
        let damaged = inner.downcast_ref::<DamagedLog>().unwrap();
        let r = &damaged.0;
        assert_eq!((r.offset, r.first, r.last), (offsets[2] as u64, 3, 6));
        assert_eq!((r.records, r.whole), (4, 3));
        let message = damaged.to_string();
        for part in [
            "store.wal",
            "record 3",
            &format!("offset {}", offsets[2]),
            "wasmgate repair",
        ] {
            assert!(message.contains(part), "{message}");
        }
        // Refusing changed nothing: the same again.
        assert_eq!(std::fs::read(b.join("store.wal")).unwrap(), log);
        assert!(EmbeddedEngine::open(&config).is_err());

        let repaired = EmbeddedEngine::repair(&config).unwrap().unwrap();
        assert_eq!(
            (repaired.first, repaired.last, repaired.revision),
            (3, 6, 105)
        );
        let e = EmbeddedEngine::open(&config).unwrap();
        assert_eq!(read(&e, "k1").await.as_deref(), Some("v"));
        assert_eq!(read(&e, "k2").await, None, "the damaged record is dropped");
        assert_eq!(read(&e, "k5").await, None, "and every record after it");
        assert_eq!(rev(&e).await, 105, "past the dropped records' revisions");
        drop(e);
        assert_eq!(EmbeddedEngine::repair(&config).unwrap(), None);
        std::fs::remove_dir_all(a.parent().unwrap()).unwrap();
    }

    /// ISSUE-24.1: a torn last record is cut off at open (it was never acknowledged), and
    /// the records before it are applied.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_torn_last_record_is_cut_off() {
        let (a, b) = dirs("wal-torn");
        let (mut log, offsets) = crashed_log(&a, &b, 4).await;
        let last = offsets[3];
        log.truncate(last + 20);
        std::fs::write(b.join("store.wal"), &log).unwrap();
        let e = EmbeddedEngine::open_path(&b.join("store.redb")).unwrap();
        assert_eq!(read(&e, "k2").await.as_deref(), Some("v"));
        assert_eq!(read(&e, "k3").await, None);
        assert_eq!(rev(&e).await, 102);
        drop(e);
        std::fs::remove_dir_all(a.parent().unwrap()).unwrap();
    }
}
