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
//! ## Values
//! Values are compressed with zstd when that makes them smaller (`values`): redb keeps
//! values in its 4 KiB leaves, and compressed objects fill them three to a leaf instead of
//! one or two. A file records its value format in a `meta` table; files written before
//! compression have none and keep their plain values.
//!
//! This crate depends on `wasmgate-storage`, redb and zstd only.
#![forbid(unsafe_code)]

mod values;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;
use redb::{
    Database, ReadOnlyTable, ReadableDatabase, ReadableTable, ReadableTableMetadata,
    TableDefinition,
};
use tokio::sync::{Mutex, OwnedMutexGuard};
use wasmgate_storage::engine::KeyValue;
use wasmgate_storage::{Engine, EngineError, Snapshot, Transaction};

const TABLE: TableDefinition<'static, &'static [u8], &'static [u8]> = TableDefinition::new("kv");

/// The file's own settings: [`FORMAT_KEY`].
const META: TableDefinition<'static, &'static str, u64> = TableDefinition::new("meta");

/// How the values of `kv` are written ([`Format::id`]).
const FORMAT_KEY: &str = "value-format";

use values::Format;

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
    format: Format,
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
        let format = {
            let kv = w.open_table(TABLE).map_err(EngineError::other)?;
            let mut meta = w.open_table(META).map_err(EngineError::other)?;
            let recorded = meta
                .get(FORMAT_KEY)
                .map_err(EngineError::other)?
                .map(|v| v.value());
            match recorded {
                Some(id) => Format::from_id(id).ok_or_else(|| {
                    EngineError::other(std::io::Error::new(
                        std::io::ErrorKind::InvalidData,
                        format!("the store's value format {id} is newer than this gateway"),
                    ))
                })?,
                None => {
                    // A new file is written compressed; one written before keeps its
                    // plain values.
                    let fresh = kv.is_empty().map_err(EngineError::other)?;
                    let format = if fresh { Format::Framed } else { Format::Plain };
                    meta.insert(FORMAT_KEY, format.id())
                        .map_err(EngineError::other)?;
                    format
                }
            }
        };
        w.commit().map_err(EngineError::other)?;
        Ok(EmbeddedEngine {
            db: Arc::new(db),
            format,
            writer: Arc::new(Mutex::new(())),
        })
    }

    fn read_table(&self) -> Result<ReadOnlyTable<&'static [u8], &'static [u8]>, EngineError> {
        let r = self.db.begin_read().map_err(EngineError::other)?;
        r.open_table(TABLE).map_err(EngineError::other)
    }

    /// Whether this file's values are compressed (files written before compression are
    /// not).
    pub fn compresses(&self) -> bool {
        self.format == Format::Framed
    }
}

struct RedbSnapshot {
    table: ReadOnlyTable<&'static [u8], &'static [u8]>,
    format: Format,
}

fn get(
    table: &ReadOnlyTable<&'static [u8], &'static [u8]>,
    format: Format,
    key: &[u8],
) -> Result<Option<Bytes>, EngineError> {
    table
        .get(key)
        .map_err(EngineError::other)?
        .map(|g| format.decode(g.value()))
        .transpose()
}

fn scan(
    table: &ReadOnlyTable<&'static [u8], &'static [u8]>,
    format: Format,
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
        out.push((Bytes::copy_from_slice(k.value()), format.decode(v.value())?));
        if out.len() >= limit {
            break;
        }
    }
    Ok(out)
}

#[async_trait::async_trait]
impl Snapshot for RedbSnapshot {
    async fn get(&self, key: &[u8]) -> Result<Option<Bytes>, EngineError> {
        get(&self.table, self.format, key)
    }

    async fn scan(
        &self,
        start: &[u8],
        end: &[u8],
        limit: usize,
    ) -> Result<Vec<KeyValue>, EngineError> {
        scan(&self.table, self.format, start, end, limit.max(1))
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
    format: Format,
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
            None => get(&self.base, self.format, key),
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
            format,
            _writer,
            base,
            writes,
        } = *self;
        drop(base);
        if writes.is_empty() {
            return Ok(());
        }
        let joined = tokio::task::spawn_blocking(move || apply(&db, format, writes)).await;
        // The writer lock is released only after redb has finished the commit.
        drop(_writer);
        joined.map_err(|e| EngineError::Undetermined(Box::new(e)))?
    }
}

/// Writes one transaction's buffer (values encoded here, off the async workers).
fn apply(
    db: &Database,
    format: Format,
    writes: BTreeMap<Vec<u8>, Option<Bytes>>,
) -> Result<(), EngineError> {
    let w = db.begin_write().map_err(EngineError::other)?;
    {
        let mut t = w.open_table(TABLE).map_err(EngineError::other)?;
        for (k, v) in &writes {
            match v {
                Some(v) => {
                    t.insert(k.as_slice(), format.encode(v).as_slice())
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
            format: self.format,
        }))
    }

    async fn begin(&self) -> Result<Box<dyn Transaction>, EngineError> {
        let guard = self.writer.clone().lock_owned().await;
        Ok(Box::new(RedbTransaction {
            db: self.db.clone(),
            format: self.format,
            _writer: guard,
            base: self.read_table()?,
            writes: BTreeMap::new(),
        }))
    }
}
