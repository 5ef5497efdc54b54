//! Persistence: one [`Store`] trait, one implementation per SQL backend.
//!
//! The database is the truth. Observations are append-only; forgetting marks them
//! inactive. Every change to a session goes through [`Store::commit`], which applies a
//! [`ChangeSet`] atomically if and only if the session's version is still the one the
//! change was computed from (optimistic concurrency), so that replicas sharing one
//! database never interleave two changes of one session.

pub mod changes;
mod commit;
mod listing;
mod migrations;
pub mod outbox;
pub mod postgres;
mod postgres_batch;
mod postgres_writer;
mod queries;
mod queued;
mod rows;
pub mod sqlite;
mod sqlite_writer;
mod timeline;
mod unnest;

use std::sync::Arc;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use uuid::Uuid;

pub use crate::domain::events::StoredEvent;
pub use crate::domain::records::{
    CallRecord, ChangeSet, Deactivation, EndedRun, History, ObservationRow, ResponseTimeSample,
    ResponseTimeSummary, RunEnd, SessionRow, StepSnapshot, SuggestionRow, SuggestionStatus,
};
pub use outbox::{EventRecord, Outbox};

pub use listing::{
    ListedSession, ObservationPage, ObservationQuery, ObservationSort, ObservationState,
    RegretSlice, SessionCursor, SessionQuery, SessionSort, SortKey, SortOrder,
};
pub use postgres::PostgresStore;
pub use sqlite::SqliteStore;
pub use timeline::{RowBytes, SeriesCounts, TimelineBudget};

/// A backend's turn to write, held for the length of one write transaction: SQLite's
/// in-process writer turn, none for PostgreSQL.
pub(crate) type WriteTurn = Option<tokio::sync::OwnedMutexGuard<()>>;

/// Storage failures.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The session changed since it was read; reload and recompute.
    #[error("the session was changed concurrently")]
    Conflict,
    #[error("session not found")]
    NotFound,
    /// The idempotency key was taken by a concurrent request.
    #[error("idempotency key already used")]
    DuplicateKey,
    #[error("database error: {0}")]
    Database(#[from] sqlx::Error),
    /// An error of SQLite's writer connection (`store::sqlite_writer`), shared by the
    /// changes of the transaction it failed.
    #[error("database error: {0}")]
    Sqlite(std::sync::Arc<rusqlite::Error>),
    /// An error of a PostgreSQL writer's transaction (`store::postgres_writer`), shared
    /// by the changes it held.
    #[error("database error: {0}")]
    Postgres(std::sync::Arc<sqlx::Error>),
    /// Starting the SQLite writer thread, or making an in-memory database's directory,
    /// failed.
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),
    #[error("migration error: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    #[error("corrupt stored data: {0}")]
    Corrupt(String),
    /// The tenant of a new session owns this many sessions, the most allowed.
    #[error("the tenant owns {0} sessions, the most allowed")]
    TooManySessions(i64),
    /// The database file fails SQLite's integrity check at start.
    #[error(
        "the SQLite database {path} is damaged ({detail}). Do not start on it: stop here, \
         restore the latest backup made with `tvbo backup` (docs/operations.md), or salvage \
         what is readable with `sqlite3 {path} .recover | sqlite3 recovered.db` and start on \
         that file"
    )]
    Damaged { path: String, detail: String },
    /// Opened with [`Migrations::Require`] on a database that lacks migrations of this
    /// binary.
    #[error(
        "the database lacks this binary's migrations {pending:?}: apply them with `tvbo \
         migrate` (a Kubernetes Job or an init step, docs/operations.md), or start with \
         TVBO_MIGRATE=apply"
    )]
    MigrationsPending { pending: Vec<i64> },
}

impl From<rusqlite::Error> for StoreError {
    fn from(error: rusqlite::Error) -> Self {
        StoreError::Sqlite(std::sync::Arc::new(error))
    }
}

/// A stored response to replay for a retried request.
#[derive(Clone, Debug, PartialEq)]
pub struct IdempotencyRecord {
    /// `METHOD path`.
    pub scope: String,
    /// The session the request concerns: the record is deleted with it.
    pub session_id: Option<Uuid>,
    pub key: String,
    /// SHA-256 of the request body (hex).
    pub request_hash: String,
    pub status: u16,
    pub body: String,
}

/// An API key as stored: never the secret, only its Argon2id hash (docs/security.md).
#[derive(Clone, Debug, PartialEq)]
pub struct ApiKeyRow {
    /// The public part of the key (`tvbo_<id>_<secret>`), shown by `tvbo keys list`.
    pub id: Uuid,
    pub name: String,
    /// The tenant whose sessions the key sees and creates.
    pub tenant: String,
    /// Whether the key sees every tenant's sessions.
    pub admin: bool,
    /// The PHC string of the secret's Argon2id hash.
    pub secret_hash: String,
    pub created_at: DateTime<Utc>,
    pub revoked_at: Option<DateTime<Utc>>,
    /// The key's own request rate on `/v1` (per second, on average, in bursts of twice
    /// that); None: the server's (`TVBO_RATE_LIMIT`).
    pub rate_limit: Option<std::num::NonZeroU32>,
}

/// How a store opens (per process: each replica has its own pool): its connection pool,
/// and what it does with the schema's migrations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PoolSettings {
    /// Most connections open at once.
    pub max_connections: u32,
    /// How long a query waits for a free connection before failing (503 to the client).
    pub acquire_timeout: std::time::Duration,
    pub migrations: Migrations,
}

impl Default for PoolSettings {
    /// 10 connections, 5 s, migrations applied.
    fn default() -> Self {
        PoolSettings {
            max_connections: 10,
            acquire_timeout: std::time::Duration::from_secs(5),
            migrations: Migrations::Apply,
        }
    }
}

/// What a store does with the schema's migrations when it opens (`TVBO_MIGRATE`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Migrations {
    /// Apply this binary's migrations the database lacks (one replica at a time: sqlx's
    /// lock), then open.
    #[default]
    Apply,
    /// Apply none: open only on a database that has every migration of this binary
    /// ([`StoreError::MigrationsPending`] else), as replicas do whose migrations a
    /// `tvbo migrate` Job applied.
    Require,
}

/// The connections of a store's pool at one moment (for the metrics; read without a
/// query).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PoolUsage {
    /// Connections open, in use or idle.
    pub open: u32,
    /// Open connections no query holds.
    pub idle: u32,
    /// Most connections the pool opens.
    pub max: u32,
}

impl PoolUsage {
    /// The usage of an sqlx pool now.
    pub fn of<DB: sqlx::Database>(pool: &sqlx::Pool<DB>) -> PoolUsage {
        let open = pool.size();
        PoolUsage {
            open,
            // Idle connections are open ones; the two counts are read one after the other.
            idle: u32::try_from(pool.num_idle()).unwrap_or(u32::MAX).min(open),
            max: pool.options().get_max_connections(),
        }
    }

    /// Open connections a query holds.
    pub fn in_use(&self) -> u32 {
        self.open - self.idle
    }
}

/// How long an idempotency record is kept: retries come within minutes, not days.
pub const IDEMPOTENCY_TTL_MICROS: i64 = 24 * 3600 * 1_000_000;

/// Server compute time of one kind of call of a session.
#[derive(Clone, Debug, PartialEq)]
pub struct CallStats {
    pub kind: String,
    pub count: i64,
    pub mean_seconds: f64,
    pub max_seconds: f64,
}

/// A recorded call, with its ordinal within the store (`id`, increasing).
#[derive(Clone, Debug, PartialEq)]
pub struct StoredCall {
    pub id: i64,
    pub kind: String,
    pub t: f64,
    pub dataset_size: i64,
    pub compute_seconds: f64,
    pub snapshot: Option<StepSnapshot>,
}

/// Observations forgotten for one reason within a span of session time.
#[derive(Clone, Debug, PartialEq)]
pub struct ForgetSpan {
    /// Session time of the first and of the last step of the span that forgot them.
    pub t: f64,
    pub t_end: f64,
    pub reason: String,
    pub count: i64,
}

/// A session's history downsampled by the database: each series cut into consecutive
/// buckets of which only the first, the last and the holders of each plotted value's
/// minimum and maximum come back (all of it when it fits the budget).
#[derive(Clone, Debug, PartialEq)]
pub struct StoredTimeline {
    pub observation_count: i64,
    pub step_count: i64,
    /// Observations with a regret reported by the client / estimated by the model.
    pub reported_regrets: i64,
    pub estimated_regrets: i64,
    /// The sum of every observation's regret, reported or else estimated.
    pub regret_sum: f64,
    pub observations: Vec<ObservationRow>,
    pub calls: Vec<StoredCall>,
    pub response_times: Vec<ResponseTimeSample>,
    /// In time order.
    pub forgotten: Vec<ForgetSpan>,
    /// Runs that ended without a value, in the session (before the budget).
    pub ended_run_count: i64,
    /// The newest of them, at most the budget's points, in order of recording.
    pub ended_runs: Vec<EndedRun>,
    /// Past the budget, the regrets of each downsampled group of observations (whose
    /// last row `observations` keeps); empty while every observation is returned.
    pub regret_groups: Vec<RegretGroup>,
    /// The newest [`RECENT_REGRETS`] observations with a regret, newest last, as
    /// (session time, regret reported or else estimated).
    pub recent_regrets: Vec<(f64, f64)>,
    /// When the newest step was recorded (wall clock); None before any.
    pub last_step_at: Option<DateTime<Utc>>,
}

/// How many of the newest regrets a timeline reads, whatever its budget.
pub const RECENT_REGRETS: i64 = 128;
/// How many of a session's newest observations [`Store::newest_regrets`] looks through:
/// a session whose newest ones carry no regret costs the list no scan of its history.
pub const RECENT_SCAN: i64 = 1024;

/// The regrets of a group of consecutive observations, ending at `last_seq`.
#[derive(Clone, Debug, PartialEq)]
pub struct RegretGroup {
    pub last_seq: i64,
    pub observations: i64,
    /// Observations with a regret (reported, or else estimated), and their sum.
    pub regrets: i64,
    pub regret_sum: f64,
}

/// What [`Store::create_session`] did.
#[derive(Debug)]
pub enum Creation {
    /// The session was stored.
    Created,
    /// Asked to resume, the store found this session of the same tenant and name.
    Existing(Box<SessionRow>),
}

/// The storage interface shared by every backend.
#[async_trait]
pub trait Store: Outbox + Send + Sync + 'static {
    /// Inserts a session (and the idempotency record of its request) atomically; with
    /// `max_sessions`, only if its tenant owns fewer, counted in the same transaction
    /// (else [`StoreError::TooManySessions`], nothing stored). With `resume`, the
    /// tenant's newest session of the same name, if there is one, is answered instead
    /// and nothing is stored: the lookup and the insert hold the tenant's lock
    /// (PostgreSQL) or the writer's turn (SQLite), so concurrent calls make one session.
    async fn create_session(
        &self,
        session: &SessionRow,
        idempotency: Option<&IdempotencyRecord>,
        max_sessions: Option<i64>,
        resume: bool,
    ) -> Result<Creation, StoreError>;
    async fn get_session(&self, id: Uuid) -> Result<Option<SessionRow>, StoreError>;
    /// The tenant's newest session named `name`, if any.
    async fn newest_named_session(
        &self,
        tenant: &str,
        name: &str,
    ) -> Result<Option<SessionRow>, StoreError>;
    /// The sessions `query` selects, in its order. A row that does not decode is listed
    /// with its error; only a row whose id, sort key or activity time does not is an
    /// error.
    async fn list_sessions(
        &self,
        query: &SessionQuery<'_>,
    ) -> Result<Vec<ListedSession>, StoreError>;
    /// The regrets of each session's observations (every one, active or forgotten),
    /// summed by at most `slices` slices of consecutive observations per session, each
    /// session's in the order of its slices: read from the timeline's bucket summaries
    /// (and, for sessions of at most 128 observations, from the observations), two
    /// queries for all the sessions, whatever their age.
    async fn regret_slices(
        &self,
        sessions: &[Uuid],
        slices: i64,
    ) -> Result<Vec<RegretSlice>, StoreError>;
    /// The newest regrets (reported, else estimated) of each session, at most
    /// [`RECENT_REGRETS`] among its newest [`RECENT_SCAN`] observations, as (session, t,
    /// regret), each session's oldest first; `sessions` pairs each id with its
    /// observation count. One query for all of them: what the list's status reads.
    async fn newest_regrets(
        &self,
        sessions: &[(Uuid, i64)],
    ) -> Result<Vec<(Uuid, f64, f64)>, StoreError>;
    /// The tenant owning the session, if there is one.
    async fn session_tenant(&self, id: Uuid) -> Result<Option<String>, StoreError>;
    async fn insert_api_key(&self, key: &ApiKeyRow) -> Result<(), StoreError>;
    async fn get_api_key(&self, id: Uuid) -> Result<Option<ApiKeyRow>, StoreError>;
    /// Every key, revoked ones too, oldest first.
    async fn list_api_keys(&self) -> Result<Vec<ApiKeyRow>, StoreError>;
    /// Revokes a key; false if there is none by that id or it was revoked already.
    async fn revoke_api_key(&self, id: Uuid) -> Result<bool, StoreError>;
    /// Deletes a session and everything it owns; false if there was none.
    async fn delete_session(&self, id: Uuid) -> Result<bool, StoreError>;
    /// The session's version (incremented by every committed change), if it exists: one
    /// read of its row, to check a snapshot kept in memory against.
    async fn session_version(&self, id: Uuid) -> Result<Option<i64>, StoreError>;
    /// The session with its active observations and pending suggestions.
    async fn load_history(&self, id: Uuid) -> Result<Option<History>, StoreError>;
    /// Applies `change` if the session's version is still `expected_version`; bumps the
    /// version. `Conflict` if it moved on, `NotFound` if it is gone. Ok means committed
    /// (on SQLite, synced to disk). A caller that stops waiting may leave the change
    /// committed: SQLite's writer thread withdraws a change only if it has not reached it
    /// yet.
    async fn commit(
        &self,
        id: Uuid,
        expected_version: i64,
        change: &ChangeSet,
        idempotency: Option<&IdempotencyRecord>,
    ) -> Result<(), StoreError>;
    async fn get_suggestion(
        &self,
        session_id: Uuid,
        suggestion_id: Uuid,
    ) -> Result<Option<SuggestionRow>, StoreError>;
    /// The session's pending suggestions (handed out, neither observed, failed, abandoned
    /// nor marked expired), by ordinal.
    async fn pending_suggestions(&self, session_id: Uuid)
    -> Result<Vec<SuggestionRow>, StoreError>;
    /// Observations with seq > `after`, ascending, at most `limit`.
    async fn list_observations(
        &self,
        session_id: Uuid,
        after: i64,
        limit: i64,
        include_inactive: bool,
    ) -> Result<Vec<ObservationRow>, StoreError>;
    /// A page of the session's observations as `query` filters, orders and places it,
    /// with how many the filter matches, read in one snapshot.
    async fn observation_page(
        &self,
        session_id: Uuid,
        query: &ObservationQuery,
    ) -> Result<ObservationPage, StoreError>;
    /// The session's response-time samples summed per dataset size, ascending in n: one
    /// row per distinct n, whatever the number of samples.
    async fn response_time_summaries(
        &self,
        session_id: Uuid,
    ) -> Result<Vec<ResponseTimeSummary>, StoreError>;
    /// Calls with id > `after`, in order, at most `limit`.
    async fn list_calls(
        &self,
        session_id: Uuid,
        after: i64,
        limit: i64,
    ) -> Result<Vec<StoredCall>, StoreError>;
    /// The session's events with seq > `after`, in order, at most `limit`.
    async fn list_events(
        &self,
        session_id: Uuid,
        after: i64,
        limit: i64,
    ) -> Result<Vec<EventRecord>, StoreError>;
    /// The session's timeline within `budget` ([`TimelineBudget`]), read in one snapshot.
    async fn timeline(
        &self,
        session_id: Uuid,
        budget: &TimelineBudget,
    ) -> Result<StoredTimeline, StoreError>;
    /// Compute-time statistics per kind of call.
    async fn call_stats(&self, session_id: Uuid) -> Result<Vec<CallStats>, StoreError>;
    async fn get_idempotency(
        &self,
        scope: &str,
        key: &str,
    ) -> Result<Option<IdempotencyRecord>, StoreError>;
    /// Whether the database answers.
    async fn ping(&self) -> Result<(), StoreError>;
    /// The connection pool's usage now; no query, no wait.
    fn pool_usage(&self) -> PoolUsage;
    /// Whether other processes write this database as well: PostgreSQL's replicas do,
    /// a SQLite file has one server. A change planned from a snapshot kept in memory
    /// first reads the session's version only if so (a stale one would still fail at the
    /// commit's version check, after wasted work).
    fn shared(&self) -> bool;
    /// The notices of committed changes that wake this process's streams
    /// ([`changes`]).
    fn change_feed(&self) -> Arc<changes::ChangeFeed>;
    /// Closes every connection, waiting for queries in flight; SQLite first checkpoints
    /// its write-ahead log into the database file, so that the file alone holds every
    /// committed change. Call once, after the server has stopped.
    async fn close(&self);
}

/// Unix microseconds of a timestamp (the storage format of every time column).
pub fn to_micros(at: DateTime<Utc>) -> i64 {
    at.timestamp_micros()
}

/// The timestamp of unix microseconds.
pub fn from_micros(micros: i64) -> Result<DateTime<Utc>, StoreError> {
    DateTime::from_timestamp_micros(micros)
        .ok_or_else(|| StoreError::Corrupt(format!("timestamp {micros}")))
}

/// A new session row of one parameter `x` on [0, 1] and `algorithm`, for the store's unit
/// tests.
#[cfg(test)]
pub(crate) fn test_session(algorithm: &str) -> SessionRow {
    let request: crate::domain::config::CreateSession = serde_json::from_value(serde_json::json!({
        "parameters": [{"name": "x", "low": 0.0, "high": 1.0}],
        "algorithm": {"name": algorithm}
    }))
    .expect("a valid request");
    SessionRow {
        id: Uuid::new_v4(),
        tenant: "default".into(),
        config: crate::domain::checked::CheckedConfig::from_request(request, 1)
            .expect("a valid config"),
        created_at: Utc::now(),
        status: "active".into(),
        version: 0,
        state: serde_json::json!({}),
        suggest_count: 0,
        last_suggest: None,
        last_optimum_mean: None,
        observation_count: 0,
        dataset_size: 0,
        pending_count: 0,
    }
}
