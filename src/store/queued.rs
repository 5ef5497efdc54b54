//! A session change queued for a writer that commits several in one transaction (group
//! commit): SQLite's writer thread (`store/sqlite_writer.rs`) and PostgreSQL's writer
//! tasks (`store/postgres_writer.rs`). Each change still commits alone in effect (a
//! savepoint of the batch's transaction, or, on PostgreSQL, refusals decided before
//! anything is written), and its caller hears back only after that transaction has
//! committed (or failed).

use std::sync::Mutex;

use tokio::sync::oneshot;
use uuid::Uuid;

use super::{ChangeSet, IdempotencyRecord, StoreError};

/// Most changes folded into one transaction: a bound on how long the first of them waits
/// for the others' statements.
pub(super) const MAX_BATCH: usize = 64;

/// A change waiting for a writer, and where its outcome goes.
pub(super) struct Job {
    pub(super) id: Uuid,
    pub(super) expected_version: i64,
    pub(super) change: ChangeSet,
    pub(super) idempotency: Option<IdempotencyRecord>,
    pub(super) reply: oneshot::Sender<Result<(), StoreError>>,
}

/// Where a queued change's outcome arrives ([`Outcome::wait`]).
pub(super) struct Outcome(oneshot::Receiver<Result<(), StoreError>>);

impl Job {
    /// The job of committing `change` of session `id` if its version is still
    /// `expected_version`, and where its outcome will arrive.
    pub(super) fn new(
        id: Uuid,
        expected_version: i64,
        change: &ChangeSet,
        idempotency: Option<&IdempotencyRecord>,
    ) -> (Job, Outcome) {
        let (reply, answer) = oneshot::channel();
        let job = Job {
            id,
            expected_version,
            change: change.clone(),
            idempotency: idempotency.cloned(),
            reply,
        };
        (job, Outcome(answer))
    }

    /// Whether the caller still waits: a caller that stopped waiting before a writer
    /// reached its change withdraws it.
    pub(super) fn wanted(&self) -> bool {
        !self.reply.is_closed()
    }
}

impl Outcome {
    /// The writer's outcome; a writer that stopped without answering reads as a closed
    /// pool.
    async fn wait(self) -> Result<(), StoreError> {
        self.0
            .await
            .unwrap_or(Err(StoreError::Database(sqlx::Error::PoolClosed)))
    }
}

/// The sending end of a writer's queue: SQLite's thread's, or PostgreSQL's tasks'.
pub(super) trait JobSender {
    /// Queues `job`; false when the writer has stopped.
    fn send_job(&self, job: Job) -> bool;
}

impl JobSender for std::sync::mpsc::Sender<Job> {
    fn send_job(&self, job: Job) -> bool {
        self.send(job).is_ok()
    }
}

impl JobSender for tokio::sync::mpsc::UnboundedSender<Job> {
    fn send_job(&self, job: Job) -> bool {
        self.send(job).is_ok()
    }
}

/// A writer's queue as its callers see it, closed when the writer stops.
#[derive(Debug)]
pub(super) struct Queue<S>(Mutex<Option<S>>);

impl<S: JobSender> Queue<S> {
    pub(super) fn new(sender: S) -> Queue<S> {
        Queue(Mutex::new(Some(sender)))
    }

    /// Queues the job of committing `change` of session `id` if its version is still
    /// `expected_version`, then waits for the transaction that holds it to commit or
    /// fail; after [`Queue::close`], the change reads as a closed pool. A caller that
    /// stops waiting before a writer reaches its change withdraws it; one that stops
    /// while it runs does not.
    pub(super) async fn commit(
        &self,
        id: Uuid,
        expected_version: i64,
        change: &ChangeSet,
        idempotency: Option<&IdempotencyRecord>,
    ) -> Result<(), StoreError> {
        let (job, outcome) = Job::new(id, expected_version, change, idempotency);
        let queued = match &*self.0.lock().expect("writer queue poisoned") {
            Some(sender) => sender.send_job(job),
            None => false,
        };
        if !queued {
            return Err(StoreError::Database(sqlx::Error::PoolClosed));
        }
        outcome.wait().await
    }

    /// Closes the queue: the writer finishes what is queued, then sees its end.
    pub(super) fn close(&self) {
        self.0.lock().expect("writer queue poisoned").take();
    }
}

/// Answers each job of `batch` with its outcome, in order. A caller that stopped waiting
/// meanwhile hears nothing.
pub(super) fn answer(batch: Vec<Job>, outcomes: Vec<Result<(), StoreError>>) {
    for (job, outcome) in batch.into_iter().zip(outcomes) {
        let _ = job.reply.send(outcome);
    }
}
