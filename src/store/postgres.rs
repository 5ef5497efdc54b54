//! The PostgreSQL backend, for replicas sharing one database.
//!
//! Same semantics as the SQLite backend. Per-session writes are serialised by the row lock
//! that [`Store::commit`]'s version bump takes on the session row: a concurrent commit of the
//! same session waits for it, then finds the version moved on and returns
//! [`StoreError::Conflict`].

use async_trait::async_trait;
use chrono::Utc;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{PgPool, Row};
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

/// SQLSTATE of a serialization failure and of a detected deadlock: the transaction lost a
/// race and may be retried.
const RETRYABLE_SQLSTATES: [&str; 2] = ["40001", "40P01"];

/// How long PostgreSQL lets a connection of this store sit idle inside a transaction before
/// it ends the connection, rolling back and releasing the session's row lock. The store's
/// transactions wait on nothing but the database, so only a replica that vanished in the
/// middle of one (its machine lost or cut off, so that no FIN reaches PostgreSQL) meets
/// it; without it, the row lock would be held, and the session blocked for every other
/// replica, until TCP keepalive gives up (hours by default).
pub const IDLE_IN_TRANSACTION_TIMEOUT: &str = "30s";

const SESSION_COLUMNS: &str = "s.id, s.config, s.created_micros, s.status, s.version, s.state, \
     s.suggest_count, s.last_suggest_t, s.last_suggest_n, \
     (SELECT COUNT(*) FROM observations o WHERE o.session_id = s.id) AS observation_count, \
     (SELECT COUNT(*) FROM observations o WHERE o.session_id = s.id AND o.active) AS dataset_size, \
     (SELECT COUNT(*) FROM suggestions g WHERE g.session_id = s.id AND g.status = 'pending') AS pending_count";

/// PostgreSQL store over a connection pool.
#[derive(Clone, Debug)]
pub struct PostgresStore {
    pool: PgPool,
}

impl PostgresStore {
    /// Connects to the database at `url` (`postgres://` or `postgresql://`) and applies the
    /// migrations (concurrent replicas are serialised by sqlx's migration lock). Every
    /// connection has `idle_in_transaction_session_timeout` set to
    /// [`IDLE_IN_TRANSACTION_TIMEOUT`].
    pub async fn connect(url: &str, settings: &PoolSettings) -> Result<Self, StoreError> {
        let options: PgConnectOptions = url.parse()?;
        let options = options.options([(
            "idle_in_transaction_session_timeout",
            IDLE_IN_TRANSACTION_TIMEOUT,
        )]);
        let pool = PgPoolOptions::new()
            .max_connections(settings.max_connections)
            .acquire_timeout(settings.acquire_timeout)
            .connect_with(options)
            .await?;
        sqlx::migrate!("./migrations/postgres").run(&pool).await?;
        Ok(PostgresStore { pool })
    }

    /// The underlying pool (tests inspect tables through it).
    pub fn pool(&self) -> &PgPool {
        &self.pool
    }
}

/// A serialization failure or deadlock becomes [`StoreError::Conflict`] (the caller reloads
/// and retries); every other error is kept. Unique violations stay database errors, as in
/// SQLite: the version row lock rules out races on unique keys, so one is a bug.
fn classify(error: StoreError) -> StoreError {
    match &error {
        StoreError::Database(sqlx::Error::Database(e))
            if e.code()
                .is_some_and(|code| RETRYABLE_SQLSTATES.contains(&code.as_ref())) =>
        {
            StoreError::Conflict
        }
        _ => error,
    }
}

/// Purges expired records, then stores `record`; `DuplicateKey` if its (scope, key) is
/// taken (a concurrent holder of the key is waited for, then wins).
async fn insert_idempotency(
    tx: &mut sqlx::PgConnection,
    record: &IdempotencyRecord,
) -> Result<(), StoreError> {
    let now = to_micros(Utc::now());
    sqlx::query("DELETE FROM idempotency WHERE created_micros < $1")
        .bind(now - IDEMPOTENCY_TTL_MICROS)
        .execute(&mut *tx)
        .await?;
    let result = sqlx::query(
        "INSERT INTO idempotency (scope, session_id, key, request_hash, status, body, \
         created_micros) VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (scope, key) DO NOTHING",
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

impl PostgresStore {
    async fn create_session_tx(
        &self,
        session: &SessionRow,
        idempotency: Option<&IdempotencyRecord>,
    ) -> Result<(), StoreError> {
        let mut tx = self.pool.begin().await?;
        sqlx::query(
            "INSERT INTO sessions (id, name, config, created_micros, status, version, state, \
             suggest_count, last_suggest_t, last_suggest_n) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
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

    async fn delete_session_tx(&self, id: Uuid) -> Result<bool, StoreError> {
        let mut tx = self.pool.begin().await?;
        let id = id.to_string();
        // Suggestions, observations, response times and calls go by ON DELETE CASCADE.
        sqlx::query("DELETE FROM idempotency WHERE session_id = $1")
            .bind(&id)
            .execute(&mut *tx)
            .await?;
        let deleted = sqlx::query("DELETE FROM sessions WHERE id = $1")
            .bind(&id)
            .execute(&mut *tx)
            .await?
            .rows_affected();
        tx.commit().await?;
        Ok(deleted > 0)
    }

    async fn load_history_tx(&self, id: Uuid) -> Result<Option<History>, StoreError> {
        // One REPEATABLE READ transaction: every query sees the same snapshot.
        let mut tx = self
            .pool
            .begin_with("BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            .await?;
        let sql = format!("SELECT {SESSION_COLUMNS} FROM sessions s WHERE s.id = $1");
        let Some(row) = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(id.to_string())
            .fetch_optional(&mut *tx)
            .await?
        else {
            return Ok(None);
        };
        let session = session_from_row(&row)?;
        let key = id.to_string();
        let active =
            sqlx::query("SELECT * FROM observations WHERE session_id = $1 AND active ORDER BY seq")
                .bind(&key)
                .fetch_all(&mut *tx)
                .await?
                .iter()
                .map(observation_from_row)
                .collect::<Result<Vec<_>, _>>()?;
        let pending = sqlx::query(
            "SELECT * FROM suggestions WHERE session_id = $1 AND status = 'pending' \
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
             WHERE o.session_id = $1 ORDER BY o.seq DESC LIMIT $2",
        )
        .bind(&key)
        .bind(RECENT_DELAYS)
        .fetch_all(&mut *tx)
        .await?
        .iter()
        .map(|r| r.try_get::<f64, _>("delay"))
        .collect::<Result<Vec<_>, _>>()?;
        let next_seq: i64 = sqlx::query_scalar(
            "SELECT COALESCE(MAX(seq), 0) + 1 FROM observations WHERE session_id = $1",
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

    async fn commit_tx(
        &self,
        id: Uuid,
        expected_version: i64,
        change: &ChangeSet,
        idempotency: Option<&IdempotencyRecord>,
    ) -> Result<(), StoreError> {
        let key = id.to_string();
        let now = to_micros(Utc::now());
        let mut tx = self.pool.begin().await?;
        // The version bump comes first: it locks the session row until the transaction
        // ends (a concurrent commit of this session waits, then matches no row), and it is
        // the optimistic-concurrency check.
        let updated = sqlx::query(
            "UPDATE sessions SET version = version + 1, \
             state = COALESCE($3, state), \
             suggest_count = suggest_count + $4, \
             last_suggest_t = COALESCE($5, last_suggest_t), \
             last_suggest_n = COALESCE($6, last_suggest_n) \
             WHERE id = $1 AND version = $2",
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
            let exists: Option<i32> = sqlx::query_scalar("SELECT 1 FROM sessions WHERE id = $1")
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
                 t, created_micros, status) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
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
            sqlx::query("UPDATE suggestions SET status = $3 WHERE id = $1 AND session_id = $2")
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
                 created_micros) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)",
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
            .bind(o.active)
            .bind(o.removed_at.map(to_micros))
            .bind(&o.removed_reason)
            .bind(to_micros(o.created_at))
            .execute(&mut *tx)
            .await?;
        }
        for d in &change.deactivate {
            sqlx::query(
                "UPDATE observations SET active = FALSE, removed_micros = $3, \
                 removed_reason = $4 WHERE session_id = $1 AND seq = $2 AND active",
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
                 VALUES ($1, $2, $3, $4)",
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
                 recorded_micros) VALUES ($1, $2, $3, $4, $5, $6)",
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
}

#[async_trait]
impl Store for PostgresStore {
    async fn create_session(
        &self,
        session: &SessionRow,
        idempotency: Option<&IdempotencyRecord>,
    ) -> Result<(), StoreError> {
        self.create_session_tx(session, idempotency)
            .await
            .map_err(classify)
    }

    async fn get_session(&self, id: Uuid) -> Result<Option<SessionRow>, StoreError> {
        let sql = format!("SELECT {SESSION_COLUMNS} FROM sessions s WHERE s.id = $1");
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
                     ORDER BY s.created_micros DESC, s.id DESC LIMIT $1"
                );
                sqlx::query(sqlx::AssertSqlSafe(sql))
                    .bind(limit)
                    .fetch_all(&self.pool)
                    .await?
            }
            Some(cursor) => {
                // Row comparison: the same order as the index (created_micros, id).
                let sql = format!(
                    "SELECT {SESSION_COLUMNS} FROM sessions s \
                     WHERE (s.created_micros, s.id) < ($1, $2) \
                     ORDER BY s.created_micros DESC, s.id DESC LIMIT $3"
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
        self.delete_session_tx(id).await.map_err(classify)
    }

    async fn load_history(&self, id: Uuid) -> Result<Option<History>, StoreError> {
        self.load_history_tx(id).await.map_err(classify)
    }

    async fn commit(
        &self,
        id: Uuid,
        expected_version: i64,
        change: &ChangeSet,
        idempotency: Option<&IdempotencyRecord>,
    ) -> Result<(), StoreError> {
        self.commit_tx(id, expected_version, change, idempotency)
            .await
            .map_err(classify)
    }

    async fn get_suggestion(
        &self,
        session_id: Uuid,
        suggestion_id: Uuid,
    ) -> Result<Option<SuggestionRow>, StoreError> {
        let row = sqlx::query("SELECT * FROM suggestions WHERE id = $1 AND session_id = $2")
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
            "SELECT * FROM observations WHERE session_id = $1 AND seq > $2 \
             AND ($3 OR active) ORDER BY seq LIMIT $4",
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
        sqlx::query("SELECT n, seconds FROM response_times WHERE session_id = $1 ORDER BY id")
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
             MAX(compute_seconds) AS max FROM calls WHERE session_id = $1 \
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
             WHERE scope = $1 AND key = $2",
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

    async fn close(&self) {
        self.pool.close().await;
    }

    async fn ping(&self) -> Result<(), StoreError> {
        sqlx::query("SELECT 1").execute(&self.pool).await?;
        Ok(())
    }
}
