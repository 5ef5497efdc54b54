//! SQLite's commits of session changes: one thread owns a connection of its own and runs
//! each change's whole transaction on it, and the changes that queue up while it commits
//! go into its next transaction together (group commit).
//!
//! Through sqlx, every statement of a transaction was a round trip between an async task
//! and the connection's worker thread, with the database's one write lock held across all
//! of them and across the commit's sync of the log: a change held the lock for ~1.7 ms,
//! which capped a server at ~590 commits/s however many cores it had
//! (docs/performance.md, "Service overhead and throughput"). Here the statements run back
//! to back on the thread that holds the lock, and one sync makes a batch durable.
//!
//! A change still commits alone in effect: each runs under a savepoint of the batch's
//! transaction, and one that fails (a lost race, a duplicate idempotency key, a database
//! error) is rolled back to it without touching the others. Every caller hears back only
//! after the transaction that holds its change has committed (or failed), so a 2xx still
//! means durable.

use std::future::Future;
use std::path::Path;
use std::pin::pin;
use std::sync::{Arc, Mutex, mpsc};
use std::task::{Context, Poll, Waker};
use std::thread::JoinHandle;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, Statement};

use super::commit::{Arg, Statements, apply_change};
use super::queued::{Job, MAX_BATCH, Queue, answer};
use super::{SqliteStore, StoreError};

/// The writer thread and the queue to it.
#[derive(Debug)]
pub(super) struct SqliteWriter {
    /// Where changes wait for the writer ([`Queue::commit`] commits one).
    pub(super) jobs: Queue<mpsc::Sender<Job>>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl SqliteWriter {
    /// Opens a connection to the database file at `path` (already migrated, in WAL mode)
    /// and starts the writer thread on it. The thread holds `turn`, this process's writer
    /// turn, for the length of each transaction, so that the store's other writes wait
    /// for it in order instead of polling SQLite's lock.
    pub(super) fn start(
        path: &Path,
        turn: Arc<tokio::sync::Mutex<()>>,
    ) -> Result<SqliteWriter, StoreError> {
        let connection = open(path)?;
        let (jobs, queue) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("tvbo-sqlite-writer".into())
            .spawn(move || serve(connection, &queue, &turn))?;
        Ok(SqliteWriter {
            jobs: Queue::new(jobs),
            thread: Mutex::new(Some(thread)),
        })
    }

    /// Lets the changes already queued commit, then stops the thread and closes its
    /// connection.
    pub(super) async fn stop(&self) {
        self.jobs.close();
        let thread = self.thread.lock().expect("writer thread poisoned").take();
        if let Some(thread) = thread {
            let joined = tokio::task::spawn_blocking(move || thread.join()).await;
            if !matches!(joined, Ok(Ok(()))) {
                tracing::error!("the SQLite writer thread ended abnormally");
            }
        }
    }
}

/// The writer's connection: the file's settings (WAL, set by the migrations' pool) and
/// the store's (`synchronous = FULL`, foreign keys, the busy timeout).
fn open(path: &Path) -> Result<Connection, StoreError> {
    let connection = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    connection.busy_timeout(Duration::from_secs(10))?;
    connection.pragma_update(None, "synchronous", "FULL")?;
    connection.pragma_update(None, "foreign_keys", true)?;
    Ok(connection)
}

/// The thread's loop: waits for a change, takes every other one queued behind it, commits
/// them in one transaction and answers each; ends when the queue's sender is gone.
fn serve(mut connection: Connection, queue: &mpsc::Receiver<Job>, turn: &tokio::sync::Mutex<()>) {
    while let Ok(first) = queue.recv() {
        let batch: Vec<Job> = std::iter::once(first)
            .chain(queue.try_iter().take(MAX_BATCH - 1))
            .filter(Job::wanted)
            .collect();
        if batch.is_empty() {
            continue;
        }
        let outcomes = {
            let _turn = turn.blocking_lock();
            commit_batch(&mut connection, &batch)
        };
        answer(batch, outcomes);
    }
}

/// One transaction of `batch`'s changes, each under a savepoint; their outcomes in
/// order. A failure of the transaction itself fails every change in it.
fn commit_batch(connection: &mut Connection, batch: &[Job]) -> Vec<Result<(), StoreError>> {
    let run = |connection: &mut Connection| -> rusqlite::Result<Vec<Result<(), StoreError>>> {
        connection.execute_batch("BEGIN IMMEDIATE")?;
        let mut outcomes = Vec::with_capacity(batch.len());
        for job in batch {
            connection.execute_batch("SAVEPOINT change")?;
            let outcome = run_ready(apply_change(
                &mut Runner(connection),
                job.id,
                job.expected_version,
                &job.change,
                job.idempotency.as_ref(),
                SqliteStore::ROW_ID,
            ));
            if outcome.is_err() {
                connection.execute_batch("ROLLBACK TO change")?;
            }
            connection.execute_batch("RELEASE change")?;
            outcomes.push(outcome);
        }
        connection.execute_batch("COMMIT")?;
        Ok(outcomes)
    };
    match run(connection) {
        Ok(outcomes) => outcomes,
        Err(error) => {
            if !connection.is_autocommit() {
                let _ = connection.execute_batch("ROLLBACK");
            }
            tracing::error!(error = %error, changes = batch.len(), "a SQLite write transaction failed");
            let error = Arc::new(error);
            batch
                .iter()
                .map(|_| Err(StoreError::Sqlite(error.clone())))
                .collect()
        }
    }
}

/// The output of a future that never waits, as the writer's statements never do: they
/// run on this thread.
fn run_ready<F: Future>(future: F) -> F::Output {
    match pin!(future).poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(output) => output,
        Poll::Pending => unreachable!("the SQLite writer's statements do not wait"),
    }
}

/// The writer's connection as [`Statements`], each statement prepared once and kept.
struct Runner<'c>(&'c mut Connection);

impl Statements for Runner<'_> {
    async fn execute(&mut self, sql: &str, args: Vec<Arg>) -> Result<u64, StoreError> {
        let mut statement = self.0.prepare_cached(sql)?;
        bind(&mut statement, &args)?;
        Ok(statement.raw_execute()? as u64)
    }

    async fn fetch_integers(
        &mut self,
        sql: &str,
        args: Vec<Arg>,
    ) -> Result<Option<Vec<i64>>, StoreError> {
        let mut statement = self.0.prepare_cached(sql)?;
        bind(&mut statement, &args)?;
        let columns = statement.column_count();
        let mut rows = statement.raw_query();
        let Some(row) = rows.next()? else {
            return Ok(None);
        };
        let integers = (0..columns)
            .map(|i| row.get::<_, i64>(i))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Some(integers))
    }
}

/// Binds each `$N` placeholder of `statement` to the N-th of `args`, as sqlx does.
fn bind(statement: &mut Statement<'_>, args: &[Arg]) -> rusqlite::Result<()> {
    for index in 1..=statement.parameter_count() {
        let name = statement
            .parameter_name(index)
            .unwrap_or_default()
            .to_owned();
        let arg = name
            .strip_prefix('$')
            .and_then(|n| n.parse::<usize>().ok())
            .and_then(|n| args.get(n.checked_sub(1)?))
            .ok_or_else(|| rusqlite::Error::InvalidParameterName(name.clone()))?;
        match arg {
            Arg::Text(value) => statement.raw_bind_parameter(index, value)?,
            Arg::Int(value) => statement.raw_bind_parameter(index, value)?,
            Arg::Real(value) => statement.raw_bind_parameter(index, value)?,
            Arg::Bool(value) => statement.raw_bind_parameter(index, value)?,
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use chrono::Utc;
    use uuid::Uuid;

    use super::*;
    use crate::domain::space::numbers;
    use crate::store::{
        ChangeSet, IdempotencyRecord, ObservationRow, PoolSettings, SqliteStore, Store,
        test_session,
    };

    /// A change that records one observation of value `value` as the session's first.
    fn observing(value: f64) -> ChangeSet {
        let observation = ObservationRow {
            seq: 1,
            suggestion_id: None,
            params: numbers([("x", 0.5)]),
            unit: vec![0.5],
            value,
            t: 1.0,
            measured_at: None,
            regret: None,
            regret_estimate: None,
            active: true,
            removed_at: None,
            removed_t: None,
            removed_reason: None,
            metadata: None,
            created_at: Utc::now(),
        };
        ChangeSet {
            new_observations: vec![observation],
            ..ChangeSet::default()
        }
    }

    fn idempotency(session: Uuid) -> IdempotencyRecord {
        IdempotencyRecord {
            scope: "POST /v1/sessions/x/observations".into(),
            session_id: Some(session),
            key: "taken".into(),
            request_hash: "0".into(),
            status: 201,
            body: "{}".into(),
        }
    }

    fn job(
        id: Uuid,
        expected_version: i64,
        change: ChangeSet,
        idempotency: Option<IdempotencyRecord>,
    ) -> Job {
        Job::new(id, expected_version, &change, idempotency.as_ref()).0
    }

    /// In one batch: a change, a change of the same session planned from the version
    /// before it (lost race), a change that fails after its first writes (its idempotency
    /// key is taken) and one that follows it: each commits or is rolled back alone.
    #[tokio::test]
    async fn a_batch_commits_each_change_or_rolls_it_back_alone() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tvbo.db");
        let url = format!("sqlite://{}", path.display());
        let store = SqliteStore::connect(&url, &PoolSettings::default())
            .await
            .unwrap();
        let (a, b) = (test_session("random"), test_session("random"));
        store.create_session(&a, None, None, false).await.unwrap();
        store.create_session(&b, None, None, false).await.unwrap();
        let taken = idempotency(b.id);
        store
            .commit(b.id, 0, &ChangeSet::default(), Some(&taken))
            .await
            .unwrap();

        let batch = [
            job(a.id, 0, observing(1.0), None),
            job(a.id, 0, observing(2.0), None),
            job(b.id, 1, observing(3.0), Some(taken)),
            job(b.id, 1, observing(4.0), None),
        ];
        let mut connection = open(&path).unwrap();
        let outcomes = commit_batch(&mut connection, &batch);
        let outcomes: Vec<String> = outcomes.iter().map(|o| format!("{o:?}")).collect();
        assert_eq!(
            outcomes,
            ["Ok(())", "Err(Conflict)", "Err(DuplicateKey)", "Ok(())"]
        );

        for (session, version, value) in [(a.id, 1, 1.0), (b.id, 2, 4.0)] {
            let row = store.get_session(session).await.unwrap().unwrap();
            assert_eq!(row.version, version);
            let observations = store.list_observations(session, 0, 10, true).await.unwrap();
            let values: Vec<f64> = observations.iter().map(|o| o.value).collect();
            assert_eq!(values, [value]);
        }
        store.close().await;
    }
}
