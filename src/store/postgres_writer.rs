//! PostgreSQL's commits of session changes, grouped: a few writer tasks share one queue,
//! and each takes the changes that queued while it committed into its next transaction
//! together (group commit, as SQLite's writer thread does).
//!
//! A transaction per change cost more than its statements: its commit record and the
//! wait for the log's flush, its snapshot and locks (docs/performance.md, "What bounds
//! PostgreSQL"). Here one commit makes a batch durable.
//!
//! A batch's changes (to distinct sessions: a session's second change waits for the next
//! transaction) are written with a few statements for all of them (`postgres_batch.rs`),
//! which refuse a change that lost its race or whose idempotency key is taken before
//! writing anything of it. If those statements fail, the transaction is rolled back and
//! the changes are committed again one by one, each under a savepoint (`commit.rs`'s
//! statements), so that a change whose statements fail is rolled back alone. A failure of
//! the transaction itself (its connection lost, its commit refused) fails every change in
//! it, with the same error; a serialization failure or deadlock reads as a conflict,
//! which the caller retries. Every caller hears back only after the transaction that
//! holds its change has committed (or failed), so a 2xx still means durable. A batch
//! locks its sessions' rows in the order of their ids, so that two batches (of this
//! replica's writers or another's) never wait for each other in opposite orders.

use std::sync::{Arc, Mutex};

use sqlx::PgPool;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::commit::apply_change;
use super::queued::{Job, MAX_BATCH, Queue, answer};
use super::{StoreError, postgres_batch};

/// Writer tasks per replica, at most: each holds one of the pool's connections while it
/// commits. Two, so that one batch's statements and another's commit overlap, and few,
/// so that the queue fills while they work and each batch is large (`cargo bench --bench
/// load`, 50 sessions, 2-core AMD EPYC, over TLS: one writer 2,018–2,223 observations/s,
/// two 1,757–2,182, four 1,415–1,858; docs/performance.md, "Nagle's delay"). At most half
/// the pool, so that reads keep the rest.
const MOST_WRITERS: u32 = 2;

/// The writer tasks and the queue to them.
#[derive(Debug)]
pub(super) struct PostgresWriter {
    /// Where changes wait for the writer ([`Queue::commit`] commits one).
    pub(super) jobs: Queue<mpsc::UnboundedSender<Job>>,
    tasks: Mutex<Vec<JoinHandle<()>>>,
}

impl PostgresWriter {
    /// Starts the tasks committing over `pool` (of `max_connections`), whose connections
    /// they borrow for each transaction: [`MOST_WRITERS`], or half the pool if that is
    /// fewer (at least one).
    pub(super) fn start(
        pool: PgPool,
        max_connections: u32,
        row_id: &'static str,
    ) -> PostgresWriter {
        let (jobs, queue) = mpsc::unbounded_channel();
        let queue = Arc::new(tokio::sync::Mutex::new(queue));
        let writers = MOST_WRITERS.min(max_connections / 2).max(1);
        let tasks = (0..writers)
            .map(|_| tokio::spawn(serve(pool.clone(), Arc::clone(&queue), row_id)))
            .collect();
        PostgresWriter {
            jobs: Queue::new(jobs),
            tasks: Mutex::new(tasks),
        }
    }

    /// Lets the changes already queued commit, then ends the tasks.
    pub(super) async fn stop(&self) {
        self.jobs.close();
        let tasks = std::mem::take(&mut *self.tasks.lock().expect("writer tasks poisoned"));
        for task in tasks {
            if task.await.is_err() {
                tracing::error!("a PostgreSQL writer task ended abnormally");
            }
        }
    }
}

/// A task's loop: waits for a change, takes every other one queued behind it (up to
/// [`MAX_BATCH`]), commits them in one transaction and answers each; ends when the
/// queue's sender is gone and the queue is empty.
async fn serve(
    pool: PgPool,
    queue: Arc<tokio::sync::Mutex<mpsc::UnboundedReceiver<Job>>>,
    row_id: &'static str,
) {
    loop {
        let mut batch = {
            let mut queue = queue.lock().await;
            let Some(first) = queue.recv().await else {
                return;
            };
            let mut batch = vec![first];
            while batch.len() < MAX_BATCH {
                match queue.try_recv() {
                    Ok(job) => batch.push(job),
                    Err(_) => break,
                }
            }
            batch
        };
        batch.retain(Job::wanted);
        if batch.is_empty() {
            continue;
        }
        // In the order of the sessions' ids, which a batch locks them in; a session's own
        // changes keep their order (a stable sort).
        batch.sort_by_key(|job| job.id);
        for batch in postgres_batch::into_batches(batch) {
            let outcomes = commit_batch(&pool, &batch, row_id).await;
            answer(batch, outcomes);
        }
    }
}

/// One transaction of `batch`'s changes (to distinct sessions and keys) written with a
/// few statements for all of them (`postgres_batch.rs`); their outcomes in order. If
/// those statements fail, the transaction is rolled back and the changes are committed
/// one by one ([`commit_one_by_one`]). If its commit fails, whether it committed is
/// unknown, and each change fails with the error, as it would in a transaction of its own.
async fn commit_batch(pool: &PgPool, batch: &[Job], row_id: &str) -> Vec<Result<(), StoreError>> {
    let written = async {
        let mut transaction = pool.begin_with(postgres_batch::BEGIN).await?;
        let outcomes = postgres_batch::write(&mut transaction, batch).await?;
        Ok::<_, StoreError>((transaction, outcomes))
    };
    match written.await {
        Ok((transaction, outcomes)) => match transaction.commit().await {
            Ok(()) => outcomes,
            Err(error) => failed(batch, error),
        },
        Err(error) => {
            tracing::warn!(
                error = %error,
                changes = batch.len(),
                "a batch's statements failed; committing its changes one by one"
            );
            commit_one_by_one(pool, batch, row_id).await
        }
    }
}

/// One transaction of `batch`'s changes, each under a savepoint (`commit.rs`'s statements
/// change by change), so that a change whose statements fail is rolled back alone; their
/// outcomes in order. A failure of the transaction itself fails every change in it with
/// its error.
pub(super) async fn commit_one_by_one(
    pool: &PgPool,
    batch: &[Job],
    row_id: &str,
) -> Vec<Result<(), StoreError>> {
    let run = async {
        let mut transaction = pool.begin().await?;
        let mut outcomes = Vec::with_capacity(batch.len());
        for job in batch {
            sqlx::query("SAVEPOINT change")
                .execute(&mut *transaction)
                .await?;
            let outcome = apply_change(
                &mut *transaction,
                job.id,
                job.expected_version,
                &job.change,
                job.idempotency.as_ref(),
                row_id,
            )
            .await;
            if outcome.is_err() {
                sqlx::query("ROLLBACK TO SAVEPOINT change")
                    .execute(&mut *transaction)
                    .await?;
            }
            sqlx::query("RELEASE SAVEPOINT change")
                .execute(&mut *transaction)
                .await?;
            outcomes.push(outcome);
        }
        transaction.commit().await?;
        Ok::<_, sqlx::Error>(outcomes)
    };
    match run.await {
        Ok(outcomes) => outcomes,
        Err(error) => failed(batch, error),
    }
}

/// The outcomes of `batch`'s changes when their transaction failed with `error`: that
/// error for each.
fn failed(batch: &[Job], error: sqlx::Error) -> Vec<Result<(), StoreError>> {
    tracing::error!(error = %error, changes = batch.len(), "a PostgreSQL write transaction failed");
    let error = Arc::new(error);
    batch
        .iter()
        .map(|_| Err(StoreError::Postgres(Arc::clone(&error))))
        .collect()
}
