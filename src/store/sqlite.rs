//! The embedded SQLite backend (WAL, one writer).
//!
//! At start the file is checked (`PRAGMA quick_check`, bounded by
//! [`INTEGRITY_CHECK_TIMEOUT`]) and a damaged one is refused; a database created new
//! is announced with a warning. [`Store::close`](super::Store::close) checkpoints the write-ahead log, so that
//! after a clean stop the database file alone holds every committed change.
//! [`SqliteStore::backup_to`] writes a consistent copy while the server runs.

use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::{Connection, Sqlite, SqliteConnection, SqlitePool, Transaction};

use uuid::Uuid;

use super::changes::ChangeFeed;
use super::sqlite_writer::SqliteWriter;
use super::{ChangeSet, IdempotencyRecord, PoolSettings, StoreError, WriteTurn};

/// Longest the integrity check at start may take; past it the server starts anyway,
/// saying that the check did not finish (`PRAGMA quick_check` reads the whole file: about
/// a second per few hundred MB).
pub const INTEGRITY_CHECK_TIMEOUT: Duration = Duration::from_secs(30);

/// SQLite store: reads over a connection pool, session changes through the writer
/// thread (`store/sqlite_writer.rs`).
#[derive(Clone, Debug)]
pub struct SqliteStore {
    pool: SqlitePool,
    /// Taken for the length of each write transaction of this process: by the writer
    /// thread for each of its transactions, and here for the others (create and delete
    /// of a session; the single-statement writes of API keys go without it and wait on
    /// `busy_timeout` in the rare case). SQLite lets one writer in at a time; without
    /// this turn, the others poll the lock with SQLite's busy handler, which sleeps 1 to
    /// 100 ms between tries while the lock may already be free (docs/performance.md,
    /// "Service overhead and throughput"). Writers in another process over the same file
    /// still meet `busy_timeout`.
    write_turn: Arc<tokio::sync::Mutex<()>>,
    /// Commits session changes, batched (group commit).
    writer: Arc<SqliteWriter>,
    /// Wakes this process's streams: the service publishes its commits on it.
    changes: Arc<ChangeFeed>,
    /// The directory of an in-memory database's file, removed with the last clone.
    _scratch: Option<Arc<tempfile::TempDir>>,
}

/// Whether an error says the file is damaged or not a database (SQLITE_CORRUPT,
/// SQLITE_NOTADB and their extended codes).
fn is_damage(error: &sqlx::Error) -> bool {
    let sqlx::Error::Database(e) = error else {
        return false;
    };
    e.code()
        .and_then(|code| code.parse::<i32>().ok())
        .is_some_and(|code| matches!(code & 0xff, 11 | 26))
}

/// Runs `PRAGMA quick_check` on the existing database file at `path` on a connection of
/// its own: `Damaged` if it reports problems or the file cannot be read as a database;
/// a warning, and Ok, if it does not finish within [`INTEGRITY_CHECK_TIMEOUT`].
async fn check_integrity(path: &Path) -> Result<(), StoreError> {
    let damaged = |detail: String| StoreError::Damaged {
        path: path.display().to_string(),
        detail,
    };
    let options = SqliteConnectOptions::new()
        .filename(path)
        .busy_timeout(Duration::from_secs(10));
    let check = async {
        let mut connection = SqliteConnection::connect_with(&options).await?;
        let rows: Vec<String> = sqlx::query_scalar("PRAGMA quick_check")
            .fetch_all(&mut connection)
            .await?;
        connection.close().await?;
        Ok::<_, sqlx::Error>(rows)
    };
    match tokio::time::timeout(INTEGRITY_CHECK_TIMEOUT, check).await {
        Ok(Ok(rows)) if rows.len() == 1 && rows[0] == "ok" => Ok(()),
        Ok(Ok(rows)) => {
            let mut detail: Vec<String> = rows.into_iter().take(5).collect();
            detail.insert(0, "quick_check:".into());
            Err(damaged(detail.join(" ")))
        }
        Ok(Err(e)) if is_damage(&e) => Err(damaged(e.to_string())),
        Ok(Err(e)) => Err(e.into()),
        Err(_) => {
            tracing::warn!(
                path = %path.display(),
                seconds = INTEGRITY_CHECK_TIMEOUT.as_secs(),
                "the integrity check of the database did not finish in time; starting \
                 without its verdict (check it offline with sqlite3 PATH 'PRAGMA quick_check')"
            );
            Ok(())
        }
    }
}

impl SqliteStore {
    /// The database file a `sqlite:` URL names; None for an in-memory database.
    pub fn database_file(url: &str) -> Result<Option<PathBuf>, StoreError> {
        let options = SqliteConnectOptions::from_str(url)?;
        let in_memory = url.contains(":memory:") || url.contains("mode=memory");
        Ok((!in_memory).then(|| options.get_filename().to_path_buf()))
    }

    /// Opens (creating if missing) the database at `url` (`sqlite://path` or
    /// `sqlite::memory:`) and applies the migrations. An existing file is checked first
    /// and refused (`Damaged`) if SQLite finds it damaged; a file that is created, or
    /// that exists but is empty, is announced with a warning: a server that should have
    /// found its sessions there is looking at the wrong path or at a lost database.
    pub async fn connect(url: &str, settings: &PoolSettings) -> Result<Self, StoreError> {
        // An in-memory database is a file in a directory of its own, removed when the
        // store goes: the writer thread's connection and the pool's must see one database.
        let (options, path, scratch) = match Self::database_file(url)? {
            Some(path) => (SqliteConnectOptions::from_str(url)?, path, None),
            None => {
                let scratch = tempfile::Builder::new().prefix("tvbo-memory-").tempdir()?;
                let path = scratch.path().join("tvbo.db");
                let options = SqliteConnectOptions::new().filename(&path);
                (options, path, Some(Arc::new(scratch)))
            }
        };
        let options = options
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            // FULL: a committed transaction survives a power loss (NORMAL in WAL does not).
            .synchronous(SqliteSynchronous::Full)
            .foreign_keys(true)
            .busy_timeout(Duration::from_secs(10));
        let existing_bytes = std::fs::metadata(&path).ok().map(|metadata| metadata.len());
        if existing_bytes.is_some_and(|bytes| bytes > 0) {
            check_integrity(&path).await?;
        }
        let pool = SqlitePoolOptions::new()
            .max_connections(settings.max_connections)
            .acquire_timeout(settings.acquire_timeout)
            .min_connections(0)
            .idle_timeout(Some(Duration::from_secs(600)))
            .max_lifetime(None)
            .connect_with(options)
            .await?;
        super::migrations::run(super::migrations::sqlite(), &pool, settings.migrations).await?;
        if scratch.is_none() {
            match existing_bytes {
                None => tracing::warn!(
                    path = %path.display(),
                    "created a NEW, EMPTY database: no database file was there. If this \
                     server should have found sessions, stop it: DATABASE_URL names the \
                     wrong path, or the file was lost (restore a backup)"
                ),
                Some(0) => tracing::warn!(
                    path = %path.display(),
                    "the database file was EMPTY (0 bytes): started a NEW, EMPTY database \
                     in it. If it should have held sessions, stop this server and restore \
                     a backup"
                ),
                Some(_) => {}
            }
        }
        let write_turn = Arc::default();
        let writer = SqliteWriter::start(&path, Arc::clone(&write_turn))?;
        Ok(SqliteStore {
            pool,
            write_turn,
            writer: Arc::new(writer),
            changes: Arc::new(ChangeFeed::in_process()),
            _scratch: scratch,
        })
    }

    /// Writes a consistent copy of the whole database to a new file at `path` (`VACUUM
    /// INTO`, one read transaction: it sees every change committed before it began and
    /// none after, and the server goes on serving). Fails if `path` exists.
    pub async fn backup_to(&self, path: &Path) -> Result<(), StoreError> {
        sqlx::query("VACUUM INTO ?1")
            .bind(path.to_string_lossy().into_owned())
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// The underlying pool (tests inspect tables through it).
    pub fn pool(&self) -> &SqlitePool {
        &self.pool
    }
}

super::outbox::outbox_on!(SqliteStore);
super::queries::store_on!(SqliteStore, sqlx::SqliteConnection, sqlx::Sqlite);

/// What differs from PostgreSQL (postgres.rs has the same hooks).
impl SqliteStore {
    /// The insertion order of response-time samples and calls: SQLite's `rowid`.
    pub(super) const ROW_ID: &str = "rowid";

    /// One server per database file (docs/scaling.md).
    const SHARED: bool = false;

    /// One writer at a time: the write turn orders claims already.
    const CLAIM_TURN: Option<&str> = None;

    /// None needed: this process's creates hold the write turn, and another process's
    /// insert between the count and this one's makes this transaction's write fail
    /// (WAL: a read transaction that saw an older snapshot cannot become a writer).
    const TENANT_LOCK: Option<&str> = None;

    /// Every error is kept: SQLite's one writer lock leaves no serialization failure to
    /// retry (a busy database waits for `busy_timeout`).
    fn classify(error: StoreError) -> StoreError {
        error
    }

    /// A read transaction: SQLite gives it one snapshot by itself.
    async fn begin_snapshot(&self) -> Result<Transaction<'static, Sqlite>, sqlx::Error> {
        self.pool.begin().await
    }

    /// A write transaction and this process's writer turn, held until the returned guard
    /// drops (after the commit).
    async fn begin_write(&self) -> Result<(WriteTurn, Transaction<'static, Sqlite>), sqlx::Error> {
        // The connection first: no other writer waits while this one waits for the pool.
        // A deferred BEGIN takes no lock; the transaction's first write takes SQLite's.
        let transaction = self.pool.begin().await?;
        let turn = self.write_turn.clone().lock_owned().await;
        Ok((Some(turn), transaction))
    }

    /// Hands a change to the writer thread, which commits it with the others queued.
    async fn commit_change(
        &self,
        id: Uuid,
        expected_version: i64,
        change: &ChangeSet,
        idempotency: Option<&IdempotencyRecord>,
    ) -> Result<(), StoreError> {
        self.writer
            .jobs
            .commit(id, expected_version, change, idempotency)
            .await
    }

    async fn close_pool(&self) {
        self.writer.stop().await;
        // TRUNCATE: copy every committed page into the database file and empty the log,
        // so that a copy of the file alone (a naive backup) holds everything.
        if let Err(e) = sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)")
            .execute(&self.pool)
            .await
        {
            tracing::warn!(error = %e, "cannot checkpoint the write-ahead log at shutdown");
        }
        self.pool.close().await;
    }
}
