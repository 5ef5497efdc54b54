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

use super::{PoolSettings, StoreError, WriteTurn};

/// Longest the integrity check at start may take; past it the server starts anyway,
/// saying that the check did not finish (`PRAGMA quick_check` reads the whole file: about
/// a second per few hundred MB).
pub const INTEGRITY_CHECK_TIMEOUT: Duration = Duration::from_secs(30);

/// SQLite store over a connection pool.
#[derive(Clone, Debug)]
pub struct SqliteStore {
    pool: SqlitePool,
    /// Taken for the length of each multi-statement write transaction of this process
    /// (create, commit and delete of a session; the single-statement writes of API keys
    /// go without it and wait on `busy_timeout` in the rare case). SQLite lets one
    /// writer in at a time; without this turn, the others poll the lock with SQLite's
    /// busy handler, which sleeps 1 to 100 ms between tries while the lock may already
    /// be free: with 50 sessions writing at once, calls waited up to 1.8 s there, and
    /// 0.2–0.3 s with the turn (docs/performance.md, "Service overhead and throughput").
    /// Writers in another process over the same file still meet `busy_timeout`.
    writer: Arc<tokio::sync::Mutex<()>>,
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
        let options = SqliteConnectOptions::from_str(url)?
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            // FULL: a committed transaction survives a power loss (NORMAL in WAL does not).
            .synchronous(SqliteSynchronous::Full)
            .foreign_keys(true)
            .busy_timeout(Duration::from_secs(10));
        let file = Self::database_file(url)?;
        let in_memory = file.is_none();
        let existing_bytes = file
            .as_deref()
            .and_then(|path| std::fs::metadata(path).ok())
            .map(|metadata| metadata.len());
        if let Some(path) = &file
            && existing_bytes.is_some_and(|bytes| bytes > 0)
        {
            check_integrity(path).await?;
        }
        let pool = SqlitePoolOptions::new()
            // An in-memory database lives and dies with its one connection.
            .max_connections(if in_memory {
                1
            } else {
                settings.max_connections
            })
            .acquire_timeout(settings.acquire_timeout)
            .min_connections(if in_memory { 1 } else { 0 })
            .idle_timeout(if in_memory {
                None
            } else {
                Some(Duration::from_secs(600))
            })
            .max_lifetime(None)
            .connect_with(options)
            .await?;
        sqlx::migrate!("./migrations/sqlite").run(&pool).await?;
        if let Some(path) = &file {
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
        Ok(SqliteStore {
            pool,
            writer: Arc::default(),
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

super::queries::store_on!(SqliteStore, sqlx::SqliteConnection, sqlx::Sqlite);

/// What differs from PostgreSQL (postgres.rs has the same hooks).
impl SqliteStore {
    /// The insertion order of response-time samples and calls: SQLite's `rowid`.
    const ROW_ID: &str = "rowid";

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
        let turn = self.writer.clone().lock_owned().await;
        Ok((Some(turn), transaction))
    }

    async fn close_pool(&self) {
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
