//! The PostgreSQL backend, for replicas sharing one database.
//!
//! Same semantics as the SQLite backend. Per-session writes are serialised by the row lock
//! that [`Store::commit`](super::Store::commit)'s version bump takes on the session row:
//! a concurrent commit of the same session waits for it, then finds the version moved on
//! and returns [`StoreError::Conflict`].

use std::sync::Arc;

use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{PgPool, Postgres, Transaction};

use uuid::Uuid;

use super::changes::{self, ChangeFeed};
use super::postgres_writer::PostgresWriter;
use super::{ChangeSet, IdempotencyRecord, PoolSettings, StoreError, WriteTurn};

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

/// PostgreSQL store over a connection pool.
#[derive(Clone, Debug)]
pub struct PostgresStore {
    pool: PgPool,
    /// Fed by the listener below with every replica's commits.
    changes: Arc<ChangeFeed>,
    /// The listener's task ([`changes::listen`]), ended with the last clone of the store
    /// or when it closes.
    listener: Arc<ListenerTask>,
    /// The tasks that commit session changes (`store/postgres_writer.rs`).
    writer: Arc<PostgresWriter>,
}

/// Aborts the listener's task when dropped.
#[derive(Debug)]
struct ListenerTask(tokio::task::AbortHandle);

impl Drop for ListenerTask {
    fn drop(&mut self) {
        self.0.abort();
    }
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
            .connect_with(options.clone())
            .await?;
        super::migrations::run(super::migrations::postgres(), &pool, settings.migrations).await?;
        // The listening connection in a pool of its own: not one of the store's
        // connections, and not closed by the store's pool closing.
        let listening = PgPoolOptions::new()
            .max_connections(1)
            .acquire_timeout(settings.acquire_timeout)
            .connect_lazy_with(options);
        let changes = Arc::new(ChangeFeed::from_database());
        let listener = tokio::spawn(changes::listen(listening, changes.clone()));
        let writer = PostgresWriter::start(pool.clone(), settings.max_connections, Self::ROW_ID);
        Ok(PostgresStore {
            pool,
            changes,
            listener: Arc::new(ListenerTask(listener.abort_handle())),
            writer: Arc::new(writer),
        })
    }

    /// The underlying pool (tests inspect tables through it).
    pub fn pool(&self) -> &PgPool {
        &self.pool
    }
}

super::outbox::outbox_on!(PostgresStore);
super::queries::store_on!(PostgresStore, sqlx::PgConnection, sqlx::Postgres);

/// What differs from SQLite (sqlite.rs has the same hooks).
impl PostgresStore {
    /// The insertion order of response-time samples and calls: the serial `id`.
    const ROW_ID: &str = "id";

    /// Replicas share the database.
    const SHARED: bool = true;

    /// Replicas claim webhook deliveries one at a time (a transaction-scoped advisory
    /// lock): a claim then sees the leases of the one before, and two claims never wait
    /// on each other's rows in opposite orders.
    const CLAIM_TURN: Option<&str> =
        Some("SELECT pg_advisory_xact_lock(hashtextextended('tvbo webhook claims', 0))");

    /// A transaction-scoped advisory lock on the tenant's name: READ COMMITTED would let
    /// two creates each count the other's session out.
    const TENANT_LOCK: Option<&str> = Some("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))");

    /// A serialization failure or deadlock becomes [`StoreError::Conflict`] (the caller
    /// reloads and retries); every other error is kept. Unique violations stay database
    /// errors, as in SQLite: the version row lock rules out races on unique keys, so one
    /// is a bug.
    fn classify(error: StoreError) -> StoreError {
        let database = match &error {
            StoreError::Database(sqlx::Error::Database(e)) => e,
            StoreError::Postgres(shared) => match &**shared {
                sqlx::Error::Database(e) => e,
                _ => return error,
            },
            _ => return error,
        };
        match database.code() {
            Some(code) if RETRYABLE_SQLSTATES.contains(&code.as_ref()) => StoreError::Conflict,
            _ => error,
        }
    }

    /// One REPEATABLE READ transaction: every query of the history sees the same snapshot.
    async fn begin_snapshot(&self) -> Result<Transaction<'static, Postgres>, sqlx::Error> {
        self.pool
            .begin_with("BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            .await
    }

    /// A write transaction: PostgreSQL's row locks order concurrent writers, no turn
    /// needed.
    async fn begin_write(
        &self,
    ) -> Result<(WriteTurn, Transaction<'static, Postgres>), sqlx::Error> {
        Ok((None, self.pool.begin().await?))
    }

    /// Hands a change to the writer tasks, which commit it with the others queued
    /// (`store/postgres_writer.rs`); the version bump's row lock orders it against other
    /// replicas' changes of the session.
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
        self.listener.0.abort();
        self.pool.close().await;
    }
}
