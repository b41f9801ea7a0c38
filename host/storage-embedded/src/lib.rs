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
//! redb has one writer at a time. A [`Transaction`] takes the engine's writer lock when it
//! begins, reads the latest committed state plus its own buffered writes, and applies the
//! buffer in one redb write transaction on a blocking thread when it commits. Holding the
//! lock from begin to commit makes every transaction serializable without conflicts.
//!
//! This crate depends on `wasmgate-storage` and redb only.
#![forbid(unsafe_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;
use redb::{Database, ReadOnlyTable, ReadableDatabase, TableDefinition};
use tokio::sync::{Mutex, OwnedMutexGuard};
use wasmgate_storage::engine::KeyValue;
use wasmgate_storage::{Engine, EngineError, Snapshot, Transaction};

const TABLE: TableDefinition<'static, &'static [u8], &'static [u8]> = TableDefinition::new("kv");

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

/// The embedded engine.
#[derive(Clone)]
pub struct EmbeddedEngine {
    db: Arc<Database>,
    /// redb allows one write transaction at a time; this lock is held from `begin` to
    /// commit (or drop), which is what makes our transactions serializable.
    writer: Arc<Mutex<()>>,
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
    /// Opens (or creates) the database file described by `config`.
    pub fn open(config: &Config) -> Result<Self, EngineError> {
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
        Self::init(db)
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
        Self::init(db)
    }

    fn init(db: Database) -> Result<Self, EngineError> {
        let w = db.begin_write().map_err(EngineError::other)?;
        w.open_table(TABLE).map_err(EngineError::other)?;
        w.commit().map_err(EngineError::other)?;
        Ok(EmbeddedEngine {
            db: Arc::new(db),
            writer: Arc::new(Mutex::new(())),
        })
    }

    fn read_table(&self) -> Result<ReadOnlyTable<&'static [u8], &'static [u8]>, EngineError> {
        let r = self.db.begin_read().map_err(EngineError::other)?;
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
    db: Arc<Database>,
    _writer: OwnedMutexGuard<()>,
    /// The committed state as of `begin` (stable: we hold the writer lock).
    base: ReadOnlyTable<&'static [u8], &'static [u8]>,
    /// Buffered writes; `None` deletes.
    writes: BTreeMap<Vec<u8>, Option<Bytes>>,
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
            db,
            _writer,
            base,
            writes,
        } = *self;
        drop(base);
        if writes.is_empty() {
            return Ok(());
        }
        let joined = tokio::task::spawn_blocking(move || apply(&db, writes)).await;
        // The writer lock is released only after redb has finished the commit.
        drop(_writer);
        joined.map_err(|e| EngineError::Undetermined(Box::new(e)))?
    }
}

fn apply(db: &Database, writes: BTreeMap<Vec<u8>, Option<Bytes>>) -> Result<(), EngineError> {
    let w = db.begin_write().map_err(EngineError::other)?;
    {
        let mut t = w.open_table(TABLE).map_err(EngineError::other)?;
        for (k, v) in &writes {
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
    }
    // An error from commit itself may come after data reached the disk (e.g. a failed
    // fsync): the outcome is unknown, and the store reads back to find out.
    w.commit()
        .map_err(|e| EngineError::Undetermined(Box::new(e)))
}

#[async_trait::async_trait]
impl Engine for EmbeddedEngine {
    fn name(&self) -> &'static str {
        "embedded"
    }

    async fn snapshot(&self) -> Result<Box<dyn Snapshot>, EngineError> {
        Ok(Box::new(RedbSnapshot {
            table: self.read_table()?,
        }))
    }

    async fn begin(&self) -> Result<Box<dyn Transaction>, EngineError> {
        let guard = self.writer.clone().lock_owned().await;
        Ok(Box::new(RedbTransaction {
            db: self.db.clone(),
            _writer: guard,
            base: self.read_table()?,
            writes: BTreeMap::new(),
        }))
    }
}
