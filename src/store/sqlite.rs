//! The embedded SQLite backend (WAL, one writer).
//!
//! At start the file is checked (`PRAGMA quick_check`, bounded by
//! [`INTEGRITY_CHECK_TIMEOUT`]) and a damaged one is refused; a database created new
//! is announced with a warning. [`Store::close`] checkpoints the write-ahead log, so that
//! after a clean stop the database file alone holds every committed change.
//! [`SqliteStore::backup_to`] writes a consistent copy while the server runs.

use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

use async_trait::async_trait;
use chrono::Utc;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::{Connection, Row, SqliteConnection, SqlitePool};
use uuid::Uuid;

use super::rows::{
    RECENT_DELAYS, corrupt, observation_from_row, parse_uuid, session_from_row,
    suggestion_from_row, to_json,
};
use super::{
    CallStats, ChangeSet, History, IDEMPOTENCY_TTL_MICROS, IdempotencyRecord, ObservationRow,
    PoolSettings, ResponseTimeSample, SessionCursor, SessionRow, Store, StoreError, SuggestionRow,
    to_micros,
};

const SESSION_COLUMNS: &str = "s.id, s.config, s.created_micros, s.status, s.version, s.state, \
     s.suggest_count, s.last_suggest_t, s.last_suggest_n, \
     (SELECT COUNT(*) FROM observations o WHERE o.session_id = s.id) AS observation_count, \
     (SELECT COUNT(*) FROM observations o WHERE o.session_id = s.id AND o.active = 1) AS dataset_size, \
     (SELECT COUNT(*) FROM suggestions g WHERE g.session_id = s.id AND g.status = 'pending') AS pending_count";

/// Longest the integrity check at start may take; past it the server starts anyway,
/// saying that the check did not finish (`PRAGMA quick_check` reads the whole file: about
/// a second per few hundred MB).
pub const INTEGRITY_CHECK_TIMEOUT: Duration = Duration::from_secs(30);

/// SQLite store over a connection pool.
#[derive(Clone, Debug)]
pub struct SqliteStore {
    pool: SqlitePool,
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
        Ok(SqliteStore { pool })
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

async fn insert_idempotency(
    tx: &mut sqlx::SqliteConnection,
    record: &IdempotencyRecord,
) -> Result<(), StoreError> {
    let now = to_micros(Utc::now());
    sqlx::query("DELETE FROM idempotency WHERE created_micros < ?1")
        .bind(now - IDEMPOTENCY_TTL_MICROS)
        .execute(&mut *tx)
        .await?;
    let result = sqlx::query(
        "INSERT INTO idempotency (scope, session_id, key, request_hash, status, body, \
         created_micros) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) ON CONFLICT (scope, key) DO NOTHING",
    )
    .bind(&record.scope)
    .bind(record.session_id.map(|id| id.to_string()))
    .bind(&record.key)
    .bind(&record.request_hash)
    .bind(i64::from(record.status))
    .bind(&record.body)
    .bind(now)
    .execute(&mut *tx)
    .await?;
    if result.rows_affected() == 0 {
        return Err(StoreError::DuplicateKey);
    }
    Ok(())
}

#[async_trait]
impl Store for SqliteStore {
    async fn create_session(
        &self,
        session: &SessionRow,
        idempotency: Option<&IdempotencyRecord>,
    ) -> Result<(), StoreError> {
        let mut tx = self.pool.begin().await?;
        sqlx::query(
            "INSERT INTO sessions (id, name, config, created_micros, status, version, state, \
             suggest_count, last_suggest_t, last_suggest_n) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
        )
        .bind(session.id.to_string())
        .bind(&session.config.name)
        .bind(to_json(&session.config))
        .bind(to_micros(session.created_at))
        .bind(&session.status)
        .bind(session.version)
        .bind(to_json(&session.state))
        .bind(session.suggest_count)
        .bind(session.last_suggest.map(|(t, _)| t))
        .bind(session.last_suggest.map(|(_, n)| n))
        .execute(&mut *tx)
        .await?;
        if let Some(record) = idempotency {
            insert_idempotency(&mut tx, record).await?;
        }
        tx.commit().await?;
        Ok(())
    }

    async fn get_session(&self, id: Uuid) -> Result<Option<SessionRow>, StoreError> {
        let sql = format!("SELECT {SESSION_COLUMNS} FROM sessions s WHERE s.id = ?1");
        let row = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(id.to_string())
            .fetch_optional(&self.pool)
            .await?;
        row.as_ref().map(session_from_row).transpose()
    }

    async fn list_sessions(
        &self,
        limit: i64,
        before: Option<SessionCursor>,
    ) -> Result<Vec<SessionRow>, StoreError> {
        let rows = match before {
            None => {
                let sql = format!(
                    "SELECT {SESSION_COLUMNS} FROM sessions s \
                     ORDER BY s.created_micros DESC, s.id DESC LIMIT ?1"
                );
                sqlx::query(sqlx::AssertSqlSafe(sql))
                    .bind(limit)
                    .fetch_all(&self.pool)
                    .await?
            }
            Some(cursor) => {
                let sql = format!(
                    "SELECT {SESSION_COLUMNS} FROM sessions s \
                     WHERE s.created_micros < ?1 OR (s.created_micros = ?1 AND s.id < ?2) \
                     ORDER BY s.created_micros DESC, s.id DESC LIMIT ?3"
                );
                sqlx::query(sqlx::AssertSqlSafe(sql))
                    .bind(cursor.created_micros)
                    .bind(cursor.id.to_string())
                    .bind(limit)
                    .fetch_all(&self.pool)
                    .await?
            }
        };
        rows.iter().map(session_from_row).collect()
    }

    async fn delete_session(&self, id: Uuid) -> Result<bool, StoreError> {
        let mut tx = self.pool.begin().await?;
        let id = id.to_string();
        // Suggestions, observations, response times and calls go by ON DELETE CASCADE.
        sqlx::query("DELETE FROM idempotency WHERE session_id = ?1")
            .bind(&id)
            .execute(&mut *tx)
            .await?;
        let deleted = sqlx::query("DELETE FROM sessions WHERE id = ?1")
            .bind(&id)
            .execute(&mut *tx)
            .await?
            .rows_affected();
        tx.commit().await?;
        Ok(deleted > 0)
    }

    async fn load_history(&self, id: Uuid) -> Result<Option<History>, StoreError> {
        // One read transaction: a consistent snapshot of the session.
        let mut tx = self.pool.begin().await?;
        let sql = format!("SELECT {SESSION_COLUMNS} FROM sessions s WHERE s.id = ?1");
        let Some(row) = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(id.to_string())
            .fetch_optional(&mut *tx)
            .await?
        else {
            return Ok(None);
        };
        let session = session_from_row(&row)?;
        let key = id.to_string();
        let active = sqlx::query(
            "SELECT * FROM observations WHERE session_id = ?1 AND active = 1 ORDER BY seq",
        )
        .bind(&key)
        .fetch_all(&mut *tx)
        .await?
        .iter()
        .map(observation_from_row)
        .collect::<Result<Vec<_>, _>>()?;
        let pending = sqlx::query(
            "SELECT * FROM suggestions WHERE session_id = ?1 AND status = 'pending' \
             ORDER BY ordinal",
        )
        .bind(&key)
        .fetch_all(&mut *tx)
        .await?
        .iter()
        .map(suggestion_from_row)
        .collect::<Result<Vec<_>, _>>()?;
        let recent_delays = sqlx::query(
            "SELECT o.t - g.issued_t AS delay FROM observations o \
             JOIN suggestions g ON g.id = o.suggestion_id \
             WHERE o.session_id = ?1 ORDER BY o.seq DESC LIMIT ?2",
        )
        .bind(&key)
        .bind(RECENT_DELAYS)
        .fetch_all(&mut *tx)
        .await?
        .iter()
        .map(|r| r.try_get::<f64, _>("delay"))
        .collect::<Result<Vec<_>, _>>()?;
        let next_seq: i64 = sqlx::query_scalar(
            "SELECT COALESCE(MAX(seq), 0) + 1 FROM observations WHERE session_id = ?1",
        )
        .bind(&key)
        .fetch_one(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(Some(History {
            session,
            active,
            pending,
            recent_delays,
            next_seq,
        }))
    }

    async fn commit(
        &self,
        id: Uuid,
        expected_version: i64,
        change: &ChangeSet,
        idempotency: Option<&IdempotencyRecord>,
    ) -> Result<(), StoreError> {
        let key = id.to_string();
        let now = to_micros(Utc::now());
        let mut tx = self.pool.begin().await?;
        // The version bump comes first: it takes SQLite's write lock, and it is the
        // optimistic-concurrency check.
        let updated = sqlx::query(
            "UPDATE sessions SET version = version + 1, \
             state = COALESCE(?3, state), \
             suggest_count = suggest_count + ?4, \
             last_suggest_t = COALESCE(?5, last_suggest_t), \
             last_suggest_n = COALESCE(?6, last_suggest_n) \
             WHERE id = ?1 AND version = ?2",
        )
        .bind(&key)
        .bind(expected_version)
        .bind(change.state.as_ref().map(to_json))
        .bind(change.new_suggestions.len() as i64)
        .bind(change.last_suggest.map(|(t, _)| t))
        .bind(change.last_suggest.map(|(_, n)| n))
        .execute(&mut *tx)
        .await?
        .rows_affected();
        if updated == 0 {
            let exists: Option<i64> = sqlx::query_scalar("SELECT 1 FROM sessions WHERE id = ?1")
                .bind(&key)
                .fetch_optional(&mut *tx)
                .await?;
            return Err(if exists.is_some() {
                StoreError::Conflict
            } else {
                StoreError::NotFound
            });
        }
        for s in &change.new_suggestions {
            sqlx::query(
                "INSERT INTO suggestions (id, session_id, ordinal, params, unit, arm, issued_t, \
                 t, created_micros, status) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
            )
            .bind(s.id.to_string())
            .bind(&key)
            .bind(s.ordinal)
            .bind(to_json(&s.params))
            .bind(to_json(&s.unit))
            .bind(&s.arm)
            .bind(s.issued_t)
            .bind(s.t)
            .bind(to_micros(s.created_at))
            .bind(s.status.as_str())
            .execute(&mut *tx)
            .await?;
        }
        for (suggestion, status) in &change.suggestion_status {
            sqlx::query("UPDATE suggestions SET status = ?3 WHERE id = ?1 AND session_id = ?2")
                .bind(suggestion.to_string())
                .bind(&key)
                .bind(status.as_str())
                .execute(&mut *tx)
                .await?;
        }
        for o in &change.new_observations {
            sqlx::query(
                "INSERT INTO observations (session_id, seq, suggestion_id, params, unit, value, \
                 t, measured_micros, regret, active, removed_micros, removed_reason, \
                 created_micros) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
            )
            .bind(&key)
            .bind(o.seq)
            .bind(o.suggestion_id.map(|s| s.to_string()))
            .bind(to_json(&o.params))
            .bind(to_json(&o.unit))
            .bind(o.value)
            .bind(o.t)
            .bind(o.measured_at.map(to_micros))
            .bind(o.regret)
            .bind(i64::from(o.active))
            .bind(o.removed_at.map(to_micros))
            .bind(&o.removed_reason)
            .bind(to_micros(o.created_at))
            .execute(&mut *tx)
            .await?;
        }
        for d in &change.deactivate {
            sqlx::query(
                "UPDATE observations SET active = 0, removed_micros = ?3, removed_reason = ?4 \
                 WHERE session_id = ?1 AND seq = ?2 AND active = 1",
            )
            .bind(&key)
            .bind(d.seq)
            .bind(now)
            .bind(&d.reason)
            .execute(&mut *tx)
            .await?;
        }
        if let Some(sample) = change.response_time {
            sqlx::query(
                "INSERT INTO response_times (session_id, n, seconds, recorded_micros) \
                 VALUES (?1, ?2, ?3, ?4)",
            )
            .bind(&key)
            .bind(sample.n)
            .bind(sample.seconds)
            .bind(now)
            .execute(&mut *tx)
            .await?;
        }
        for call in &change.calls {
            sqlx::query(
                "INSERT INTO calls (session_id, kind, t, dataset_size, compute_seconds, \
                 recorded_micros) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )
            .bind(&key)
            .bind(call.kind)
            .bind(call.t)
            .bind(call.dataset_size)
            .bind(call.compute_seconds)
            .bind(now)
            .execute(&mut *tx)
            .await?;
        }
        if let Some(record) = idempotency {
            insert_idempotency(&mut tx, record).await?;
        }
        tx.commit().await?;
        Ok(())
    }

    async fn get_suggestion(
        &self,
        session_id: Uuid,
        suggestion_id: Uuid,
    ) -> Result<Option<SuggestionRow>, StoreError> {
        let row = sqlx::query("SELECT * FROM suggestions WHERE id = ?1 AND session_id = ?2")
            .bind(suggestion_id.to_string())
            .bind(session_id.to_string())
            .fetch_optional(&self.pool)
            .await?;
        row.as_ref().map(suggestion_from_row).transpose()
    }

    async fn list_observations(
        &self,
        session_id: Uuid,
        after: i64,
        limit: i64,
        include_inactive: bool,
    ) -> Result<Vec<ObservationRow>, StoreError> {
        sqlx::query(
            "SELECT * FROM observations WHERE session_id = ?1 AND seq > ?2 \
             AND (?3 OR active = 1) ORDER BY seq LIMIT ?4",
        )
        .bind(session_id.to_string())
        .bind(after)
        .bind(include_inactive)
        .bind(limit)
        .fetch_all(&self.pool)
        .await?
        .iter()
        .map(observation_from_row)
        .collect()
    }

    async fn response_times(
        &self,
        session_id: Uuid,
    ) -> Result<Vec<ResponseTimeSample>, StoreError> {
        sqlx::query("SELECT n, seconds FROM response_times WHERE session_id = ?1 ORDER BY rowid")
            .bind(session_id.to_string())
            .fetch_all(&self.pool)
            .await?
            .iter()
            .map(|r| {
                Ok(ResponseTimeSample {
                    n: r.try_get("n")?,
                    seconds: r.try_get("seconds")?,
                })
            })
            .collect()
    }

    async fn call_stats(&self, session_id: Uuid) -> Result<Vec<CallStats>, StoreError> {
        sqlx::query(
            "SELECT kind, COUNT(*) AS count, AVG(compute_seconds) AS mean, \
             MAX(compute_seconds) AS max FROM calls WHERE session_id = ?1 \
             GROUP BY kind ORDER BY kind",
        )
        .bind(session_id.to_string())
        .fetch_all(&self.pool)
        .await?
        .iter()
        .map(|r| {
            Ok(CallStats {
                kind: r.try_get("kind")?,
                count: r.try_get("count")?,
                mean_seconds: r.try_get("mean")?,
                max_seconds: r.try_get("max")?,
            })
        })
        .collect()
    }

    async fn get_idempotency(
        &self,
        scope: &str,
        key: &str,
    ) -> Result<Option<IdempotencyRecord>, StoreError> {
        let row = sqlx::query(
            "SELECT scope, session_id, key, request_hash, status, body FROM idempotency \
             WHERE scope = ?1 AND key = ?2",
        )
        .bind(scope)
        .bind(key)
        .fetch_optional(&self.pool)
        .await?;
        row.map(|r| {
            let session_id: Option<&str> = r.try_get("session_id")?;
            Ok(IdempotencyRecord {
                scope: r.try_get("scope")?,
                session_id: session_id.map(parse_uuid).transpose()?,
                key: r.try_get("key")?,
                request_hash: r.try_get("request_hash")?,
                status: u16::try_from(r.try_get::<i64, _>("status")?)
                    .map_err(|e| corrupt("status", e))?,
                body: r.try_get("body")?,
            })
        })
        .transpose()
    }

    async fn ping(&self) -> Result<(), StoreError> {
        sqlx::query("SELECT 1").execute(&self.pool).await?;
        Ok(())
    }

    async fn close(&self) {
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
