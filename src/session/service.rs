//! The executor of a session's changes: lock the session (in this replica), take its
//! snapshot (the one this replica's last change of it left, else loaded:
//! `session::snapshots`), run the engine's step off the async
//! runtime in the session's turn of the fair scheduler, and commit the change against the
//! snapshot's version, re-planning when another replica committed first. The database is
//! the truth and the model is rebuilt on every call from rows equal to the database's, so
//! a restarted (or another) server gives the same next suggestion. The read endpoints are
//! in `session::reads`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use chrono::Utc;
use uuid::Uuid;

use super::error::ServiceError;
use super::idempotency::IdempotencyKey;
use super::read_budget::ReadBudget;
use super::read_model::ModelCache;
use super::resume::{Resumed, first_difference};
use super::scheduler::FairScheduler;
use super::snapshots::{SessionSnapshot, SnapshotCache};
use super::views::{ObservationList, Session, SuggestRequest, SuggestResponse, Suggestion};
use crate::acquisition::Cores;
use crate::domain::InvalidInput;
use crate::domain::config::{CreateSession, random_seed};
use crate::domain::input::ObservationInput;
use crate::domain::records::{ChangeSet, History, SessionRow, SuggestionStatus};
use crate::domain::time::{Backoff, Jitter};
use crate::engine::{
    EngineError, Limits, ObserveSnapshot, new_session_config, new_session_row, plan_abandon,
    plan_observe, plan_suggest,
};
use crate::store::changes::{ChangeFeed, ChangeNotice};
use crate::store::{Creation, Store, StoreError};
use crate::telemetry;

/// Largest `count` of one suggest call.
pub const MAX_SUGGESTIONS_PER_CALL: i64 = 64;
/// Largest batch of one observe call.
pub const MAX_OBSERVATIONS_PER_CALL: usize = 1000;
/// Largest number of points of one predict call.
pub const MAX_PREDICT_POINTS: usize = 10_000;

/// How long a change that keeps meeting concurrent changes of the same session (by other
/// replicas) is re-planned before the request gives up with 503 `busy`: below the HTTP
/// request timeout (120 s), so a client that did nothing wrong is never told of a
/// conflict it cannot resolve.
const COMMIT_RETRY_BUDGET: Duration = Duration::from_secs(90);
/// The back-off after a lost commit race: 5 ms doubling up to 500 ms, each wait drawn
/// uniformly from [0, ceiling] (full jitter) so that two replicas that collided do not
/// collide again.
const COMMIT_BACKOFF: Backoff = Backoff {
    first: Duration::from_millis(5),
    max: Duration::from_millis(500),
    jitter: Jitter::Full,
};

/// Sessions over a store. Cheap to clone.
#[derive(Clone)]
pub struct SessionService {
    pub(super) store: Arc<dyn Store>,
    pub(super) limits: Limits,
    /// Most sessions one tenant may own; a create beyond it answers 409
    /// `too-many-sessions`.
    max_sessions_per_tenant: i64,
    locks: Arc<Mutex<HashMap<Uuid, Arc<tokio::sync::Mutex<()>>>>>,
    /// Model work, one job per core, queued per session and served round robin (a
    /// request that timed out keeps its turn until its work ends).
    scheduler: FairScheduler,
    pub(super) models: Arc<Mutex<ModelCache>>,
    /// Each session's history as this replica's last change of it left it.
    snapshots: Arc<SnapshotCache>,
    /// Sessions whose unreadable rows a listing has logged (each is logged once).
    unreadable_logged: Arc<quick_cache::sync::Cache<Uuid, ()>>,
    /// The store's notices of committed changes, which wake the streams and the webhook
    /// worker; this replica publishes its own commits on it when the database does not.
    changes: Arc<ChangeFeed>,
    /// The replica's memory for large reads.
    pub(super) reads: ReadBudget,
}

/// How many unreadable sessions a replica remembers having logged.
const UNREADABLE_LOGGED_CAPACITY: usize = 4096;

/// Default of the cap on sessions per tenant.
pub const DEFAULT_MAX_SESSIONS_PER_TENANT: i64 = 10_000;

impl SessionService {
    /// A service with the caps of `limits` on each session and
    /// [`DEFAULT_MAX_SESSIONS_PER_TENANT`].
    pub fn new(store: Arc<dyn Store>, limits: Limits) -> Self {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let snapshots = Arc::<SnapshotCache>::default();
        let changes = store.change_feed();
        if store.shared() && tokio::runtime::Handle::try_current().is_ok() {
            let watched = Arc::downgrade(&snapshots);
            tokio::spawn(drop_stale_snapshots(watched, changes.subscribe()));
        }
        SessionService {
            changes,
            store,
            limits,
            max_sessions_per_tenant: DEFAULT_MAX_SESSIONS_PER_TENANT,
            locks: Arc::default(),
            scheduler: FairScheduler::new(cores),
            models: Arc::default(),
            snapshots,
            unreadable_logged: Arc::new(quick_cache::sync::Cache::new(UNREADABLE_LOGGED_CAPACITY)),
            reads: ReadBudget::new(&limits),
        }
    }

    /// The notices of committed changes (every replica's on a shared database).
    pub fn change_feed(&self) -> Arc<ChangeFeed> {
        self.changes.clone()
    }

    /// Runs CPU-heavy model work of `session` on the blocking pool, off the async
    /// runtime, when the fair scheduler gives the session its turn.
    pub(super) async fn blocking<T: Send + 'static>(
        &self,
        session: Uuid,
        work: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, ServiceError> {
        self.blocking_on_cores(session, move |_| work()).await
    }

    /// [`Self::blocking`], handing `work` its turn as the [`Cores`] it may lend work to:
    /// its own and those no job holds, asked again before each piece.
    pub(super) async fn blocking_on_cores<T: Send + 'static>(
        &self,
        session: Uuid,
        work: impl FnOnce(&dyn Cores) -> T + Send + 'static,
    ) -> Result<T, ServiceError> {
        let turn = self.scheduler.turn(session).await;
        tokio::task::spawn_blocking(move || work(&turn))
            .await
            .map_err(|e| ServiceError::Internal(format!("model task failed: {e}")))
    }

    /// Runs an engine step on `input` as model work of `session`
    /// ([`Self::blocking_on_cores`]), fills in the compute time of its calls, and hands
    /// `input` back with the change (moved to the model thread and back, not copied: a
    /// session's history holds every active observation).
    async fn plan<I: Send + 'static>(
        &self,
        session: Uuid,
        input: I,
        step: impl FnOnce(&I, &dyn Cores) -> Result<ChangeSet, EngineError> + Send + 'static,
    ) -> Result<(ChangeSet, I), ServiceError> {
        let (change, input) = self
            .blocking_on_cores(session, move |cores| {
                let started = Instant::now();
                let change = step(&input, cores).map(|mut change| {
                    let seconds = started.elapsed().as_secs_f64();
                    for call in &mut change.calls {
                        call.compute_seconds = seconds;
                    }
                    change
                });
                (change, input)
            })
            .await?;
        Ok((change?, input))
    }

    /// The same service with another cap on sessions per tenant.
    pub fn with_max_sessions_per_tenant(mut self, max: i64) -> Self {
        self.max_sessions_per_tenant = max;
        self
    }

    /// At most `workers` model jobs at once (at least one) instead of one per core the
    /// process sees: for a container whose CPU is a share of a larger machine's.
    pub fn with_model_workers(mut self, workers: usize) -> Self {
        self.scheduler = FairScheduler::new(workers);
        self
    }

    /// The snapshot this replica would plan the session's next change from without
    /// reading the session's rows, if it keeps one (for tests and diagnostics).
    pub fn kept_snapshot(&self, id: Uuid) -> Option<SessionSnapshot> {
        self.snapshots.peek(id)
    }

    pub fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }

    /// Whether the database answers (readiness).
    pub async fn ping(&self) -> Result<(), ServiceError> {
        Ok(self.store.ping().await?)
    }

    /// Serialises this process's changes to one session (the version check in
    /// [`Store::commit`] serialises them across processes).
    async fn lock(&self, id: Uuid) -> tokio::sync::OwnedMutexGuard<()> {
        let mutex = {
            let mut locks = self.locks.lock().expect("lock table poisoned");
            locks.retain(|_, m| Arc::strong_count(m) > 1);
            locks.entry(id).or_default().clone()
        };
        mutex.lock_owned().await
    }

    pub(super) async fn history(&self, id: Uuid) -> Result<History, ServiceError> {
        self.store
            .load_history(id)
            .await?
            .ok_or(ServiceError::NotFound("session"))
    }

    pub(super) async fn session_row(&self, id: Uuid) -> Result<SessionRow, ServiceError> {
        self.store
            .get_session(id)
            .await?
            .ok_or(ServiceError::NotFound("session"))
    }

    /// Creates a session of `tenant` from a validated request. The cap on the tenant's
    /// sessions is checked in the insert's transaction, so creates racing at the cap
    /// cannot pass it.
    pub async fn create_session(
        &self,
        tenant: &str,
        request: CreateSession,
        idempotency: Option<&IdempotencyKey>,
    ) -> Result<Session, ServiceError> {
        Ok(self.create_or_resume(tenant, request, idempotency).await?.0)
    }

    /// A create request with `resume`: the tenant's newest session of the request's name,
    /// or a new one when there is none (looked up and created under one lock, so that
    /// concurrent callers get one session). An existing session whose configuration
    /// differs from the one the request makes (the seed aside when the request gives
    /// none) is a 409 naming the first field that differs.
    pub async fn resume_session(
        &self,
        tenant: &str,
        request: CreateSession,
    ) -> Result<(Session, Resumed), ServiceError> {
        let Some(name) = request.name.as_deref().filter(|name| !name.is_empty()) else {
            return Err(
                InvalidInput::new("name", "is required to resume a session by name").into(),
            );
        };
        if request.parameters.is_empty() {
            return self.resume_by_name(tenant, name).await;
        }
        self.create_or_resume(tenant, request, None).await
    }

    /// Resume by the name alone (Optuna's `load_if_exists`): the tenant's newest session
    /// of `name` as it is, or a 422 naming `parameters`, which a new one would need.
    async fn resume_by_name(
        &self,
        tenant: &str,
        name: &str,
    ) -> Result<(Session, Resumed), ServiceError> {
        match self.store.newest_named_session(tenant, name).await {
            Ok(Some(existing)) => Ok((Session::from(existing), Resumed::Yes)),
            Ok(None) => Err(InvalidInput::new(
                "parameters",
                format!(
                    "is required: this tenant has no session named {name:?} to resume, and a \
                     new one needs its configuration"
                ),
            )
            .into()),
            Err(StoreError::Corrupt(e)) => {
                tracing::error!(%tenant, error = %e, "a session resumed by name does not read back (run `tvbo check`)");
                Err(unreadable_by_name())
            }
            Err(e) => Err(e.into()),
        }
    }

    async fn create_or_resume(
        &self,
        tenant: &str,
        request: CreateSession,
        idempotency: Option<&IdempotencyKey>,
    ) -> Result<(Session, Resumed), ServiceError> {
        let resume = request.resume == Some(true);
        let seed_given = request.seed.is_some();
        // Validating priors factorises m × m matrices: off the async runtime.
        let seed = random_seed();
        let id = Uuid::new_v4();
        let config = self
            .blocking(id, move || new_session_config(request, seed))
            .await??;
        let row = new_session_row(id, tenant, config, stored_now());
        let session = Session::from(row.clone());
        let record = idempotency.map(|k| k.record(row.id, 201, &session));
        let max = self.max_sessions_per_tenant;
        match self
            .store
            .create_session(&row, record.as_ref(), Some(max), resume)
            .await
        {
            Err(StoreError::TooManySessions(max)) => Err(ServiceError::Limit(
                "too-many-sessions",
                InvalidInput::new(
                    "name",
                    format!(
                        "this tenant owns {max} sessions, the most allowed \
                         (TVBO_MAX_SESSIONS_PER_TENANT); delete one first"
                    ),
                ),
            )),
            Ok(Creation::Created) => {
                self.changes.publish_local(&row.tenant, id, false);
                Ok((session, Resumed::No))
            }
            Ok(Creation::Existing(existing)) => {
                let mut requested = row.config.into_config();
                if !seed_given {
                    requested.seed = existing.config.seed;
                }
                if let Some(field) = first_difference(&requested, &existing.config) {
                    return Err(ServiceError::Conflict(InvalidInput::new(
                        field,
                        format!(
                            "differs from session {}'s, which has this name: ask for \
                             another name, or for the session as it is",
                            existing.id
                        ),
                    )));
                }
                Ok((Session::from(*existing), Resumed::Yes))
            }
            // The session of the name is found but does not read back (`tvbo check` says
            // why): the client can delete it (the listing names it) or ask for another.
            Err(StoreError::Corrupt(e)) if resume => {
                tracing::error!(%tenant, error = %e, "a session resumed by name does not read back (run `tvbo check`)");
                Err(unreadable_by_name())
            }
            Err(e) => Err(e.into()),
        }
    }

    pub async fn get_session(&self, id: Uuid) -> Result<Session, ServiceError> {
        Ok(self.session_row(id).await?.into())
    }

    /// Logs a stored session that does not read back, once per replica.
    pub(super) fn log_unreadable(&self, id: Uuid, error: &StoreError) {
        if self.unreadable_logged.get(&id).is_none() {
            self.unreadable_logged.insert(id, ());
            tracing::error!(session = %id, error = %error, "a stored session does not read back (run `tvbo check`)");
        }
    }

    pub async fn delete_session(&self, id: Uuid) -> Result<(), ServiceError> {
        let _guard = self.lock(id).await;
        self.snapshots.forget(id);
        if self.store.delete_session(id).await? {
            Ok(())
        } else {
            Err(ServiceError::NotFound("session"))
        }
    }

    /// Hands out `count` suggestions ([`plan_suggest`]).
    pub async fn suggest(
        &self,
        id: Uuid,
        request: SuggestRequest,
        idempotency: Option<&IdempotencyKey>,
    ) -> Result<SuggestResponse, ServiceError> {
        let count = request.count.unwrap_or(1);
        if !(1..=MAX_SUGGESTIONS_PER_CALL).contains(&count) {
            return Err(InvalidInput::new(
                "count",
                format!("must be between 1 and {MAX_SUGGESTIONS_PER_CALL}"),
            )
            .into());
        }
        let (arrived, limits, t) = (stored_now(), self.limits, request.t);
        let fixed = request.fixed.unwrap_or_default();
        let fixed = &fixed;
        let _guard = self.lock(id).await;
        self.commit_with_retry(id, idempotency, |snapshot| async move {
            let fixed = fixed.clone();
            let (change, snapshot) = self
                .plan(id, snapshot, move |snapshot, cores| {
                    let history = &snapshot.history;
                    plan_suggest(history, count as usize, t, &fixed, arrived, &limits, cores)
                })
                .await?;
            let response = SuggestResponse {
                suggestions: change
                    .new_suggestions
                    .iter()
                    .map(Suggestion::from)
                    .collect(),
            };
            Ok((change, response, snapshot))
        })
        .await
    }

    /// Abandons a suggestion ([`plan_abandon`]): no longer pending, recorded as
    /// abandoned; a second abandon changes nothing (not even the session's version,
    /// unless it races the first).
    pub async fn abandon(&self, id: Uuid, suggestion_id: Uuid) -> Result<(), ServiceError> {
        let (now, limits) = (stored_now(), self.limits);
        let _guard = self.lock(id).await;
        let stored = self.store.get_suggestion(id, suggestion_id).await?;
        if stored.is_some_and(|row| row.status == SuggestionStatus::Abandoned) {
            return Ok(());
        }
        self.commit_with_retry(id, None, |snapshot| async move {
            let pending = &snapshot.history.pending;
            let suggestion = match pending.iter().find(|g| g.id == suggestion_id).cloned() {
                Some(row) => row,
                None => self
                    .store
                    .get_suggestion(id, suggestion_id)
                    .await?
                    .ok_or(ServiceError::NotFound("suggestion"))?,
            };
            let change =
                plan_abandon(&snapshot.history, &suggestion, now, &limits)?.unwrap_or_default();
            Ok((change, (), snapshot))
        })
        .await
    }

    /// Plans a change from the session's snapshot (this replica's own, or else read from
    /// the store) and commits it with the snapshot's version; when another writer got
    /// there first, plans again from a snapshot read afresh. The snapshot the committed
    /// change leaves is kept for the next change ([`super::snapshots`]); the committed
    /// step's figures go to the metrics ([`telemetry::record_steps`]).
    async fn commit_with_retry<T, F, Fut>(
        &self,
        id: Uuid,
        idempotency: Option<&IdempotencyKey>,
        plan: F,
    ) -> Result<T, ServiceError>
    where
        T: serde::Serialize,
        F: Fn(SessionSnapshot) -> Fut,
        Fut: Future<Output = Result<(ChangeSet, T, SessionSnapshot), ServiceError>>,
    {
        let deadline = Instant::now() + COMMIT_RETRY_BUDGET;
        let mut lost_races = 0;
        loop {
            // Where other replicas write too, a kept snapshot is checked against the
            // session's version: planning from one that another replica's change made
            // stale would be wasted work, the commit's version check failing after it.
            // Not while every writer is heard: such a snapshot was dropped when the
            // change's notice came ([`drop_stale_snapshots`]), and one whose notice is
            // still on its way fails the commit's version check and is read again.
            let kept = match self.snapshots.take(id) {
                Some(snapshot) if self.store.shared() && !self.changes.hears_every_writer() => {
                    let version = self.store.session_version(id).await?;
                    (version == Some(snapshot.history.session.version)).then_some(snapshot)
                }
                kept => kept,
            };
            let snapshot = match kept {
                Some(snapshot) => snapshot,
                None => SessionSnapshot {
                    history: self.history(id).await?,
                    response_times: None,
                },
            };
            let history = &snapshot.history;
            let version = history.session.version;
            let tenant = history.session.tenant.clone();
            let (algorithm, pending) = (
                history.session.config.algorithm.name(),
                history.pending.len(),
            );
            let (change, response, snapshot) = plan(snapshot).await?;
            let record = idempotency.map(|k| k.record(id, 201, &response));
            match self
                .store
                .commit(id, version, &change, record.as_ref())
                .await
            {
                Ok(()) => {
                    self.snapshots.put_after(id, snapshot, &change);
                    telemetry::record_steps(algorithm, pending, &change.calls);
                    telemetry::record_events(&change.events);
                    let events = !change.events.is_empty();
                    self.changes.publish_local(&tenant, id, events);
                    return Ok(response);
                }
                Err(StoreError::Conflict) if Instant::now() < deadline => {
                    lost_races += 1;
                    let wait = COMMIT_BACKOFF.wait(lost_races, rand::random::<f64>());
                    tokio::time::sleep(wait).await;
                }
                Err(StoreError::Conflict) => return Err(ServiceError::Busy),
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// Records observations, all or nothing ([`plan_observe`]).
    pub async fn observe(
        &self,
        id: Uuid,
        inputs: Vec<(String, ObservationInput)>,
        idempotency: Option<&IdempotencyKey>,
    ) -> Result<ObservationList, ServiceError> {
        if inputs.is_empty() {
            return Err(InvalidInput::new("observations", "must hold at least one").into());
        }
        if inputs.len() > MAX_OBSERVATIONS_PER_CALL {
            return Err(InvalidInput::new(
                "observations",
                format!("at most {MAX_OBSERVATIONS_PER_CALL} per call"),
            )
            .into());
        }
        let (arrived, limits) = (stored_now(), self.limits);
        let _guard = self.lock(id).await;
        self.commit_with_retry(id, idempotency, |snapshot| {
            let inputs = inputs.clone();
            async move {
                let mut suggestions = HashMap::new();
                for suggestion_id in inputs.iter().filter_map(|(_, input)| input.suggestion_id) {
                    let pending = &snapshot.history.pending;
                    let row = match pending.iter().find(|g| g.id == suggestion_id).cloned() {
                        Some(row) => Some(row),
                        None => self.store.get_suggestion(id, suggestion_id).await?,
                    };
                    if let Some(row) = row {
                        suggestions.insert(suggestion_id, row);
                    }
                }
                let response_times = match snapshot.response_times {
                    Some(summaries) => summaries,
                    None => self.store.response_time_summaries(id).await?,
                };
                let observed = ObserveSnapshot {
                    history: snapshot.history,
                    suggestions,
                    response_times,
                };
                let (change, observed) = self
                    .plan(id, observed, move |observed, _cores| {
                        plan_observe(observed, &inputs, arrived, &limits)
                    })
                    .await?;
                let snapshot = SessionSnapshot {
                    history: observed.history,
                    response_times: Some(observed.response_times),
                };
                let response = ObservationList {
                    observations: change.new_observations.iter().map(Into::into).collect(),
                    next_after: None,
                    total: None,
                    failed: change.ended_runs.iter().cloned().map(Into::into).collect(),
                };
                Ok((change, response, snapshot))
            }
        })
        .await
    }
}

/// The answer to a resume whose session of the name does not read back (`tvbo check`
/// says why): the client can delete it (the listing names it) or ask for another name.
fn unreadable_by_name() -> ServiceError {
    ServiceError::Conflict(InvalidInput::new(
        "name",
        "the session of this name does not read back from the database (the listing names \
         it `unreadable`, `tvbo check` says why): delete it, or ask for another name",
    ))
}

/// Now, to the microsecond the store keeps: what a change answers reads back the same.
fn stored_now() -> chrono::DateTime<Utc> {
    use chrono::SubsecRound;
    Utc::now().trunc_subsecs(6)
}

/// Drops the kept snapshots that other writers' changes made stale, as the notices of
/// their new versions come (PostgreSQL), and every kept snapshot when notices may have
/// been missed; ends with the service's snapshots or with the feed.
async fn drop_stale_snapshots(
    snapshots: std::sync::Weak<SnapshotCache>,
    mut notices: tokio::sync::broadcast::Receiver<ChangeNotice>,
) {
    use tokio::sync::broadcast::error::RecvError;
    loop {
        let notice = notices.recv().await;
        let Some(snapshots) = snapshots.upgrade() else {
            return;
        };
        match notice {
            Ok(ChangeNotice::Session {
                session,
                version: Some(version),
                ..
            }) => snapshots.forget_older(session, version),
            Ok(ChangeNotice::Missed) | Err(RecvError::Lagged(_)) => snapshots.clear(),
            Ok(_) => {}
            Err(RecvError::Closed) => return,
        }
    }
}
