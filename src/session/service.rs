//! The life of a session: load from the store, run the policy off the async runtime,
//! commit the result. The database is the truth and the model is rebuilt from it on every
//! call, so a restarted (or another) server gives the same next suggestion.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use rand::SeedableRng;
use uuid::Uuid;

use crate::acquisition::{self, AcquisitionOptions};
use crate::gp::arms::{ArmGp, TimeVaryingArmGp};
use crate::gp::relevance::relevances;
use crate::policy::tv_gp_ucb::TvGpUcbWithPrior;
use crate::policy::{self, Observation, ObserveContext, PolicyRng, PolicyState, Surrogate};
use crate::policy::{PolicyError, SuggestContext};
use crate::session::InvalidInput;
use crate::session::config::{
    AlgorithmConfig, CreateSession, SessionConfig, TimeSource, random_seed,
};
use crate::session::scheduler::FairScheduler;
use crate::session::space::{MAX_MAGNITUDE, SearchSpace};
use crate::session::time::{
    MAX_CLIENT_TIME, fit_response_time, median_lead, resolve_time, wall_time,
};
use crate::session::views::{
    Best, ComputeTimeView, HyperparametersView, ModelView, ObservationInput, ObservationList,
    PredictRequest, PredictResponse, Prediction, PriorSelectionView, RegretPoint, RegretReport,
    RelevanceView, ResponseTimeSampleView, ResponseTimeView, Session, SessionList, SuggestRequest,
    SuggestResponse, Suggestion,
};
use crate::store::{
    CallRecord, ChangeSet, Deactivation, History, IdempotencyRecord, ObservationRow,
    ResponseTimeSample, SessionCursor, SessionRow, Store, StoreError, SuggestionRow,
    SuggestionStatus,
};

/// Largest `count` of one suggest call.
pub const MAX_SUGGESTIONS_PER_CALL: i64 = 64;
/// Largest batch of one observe call.
pub const MAX_OBSERVATIONS_PER_CALL: usize = 1000;
/// Largest number of points of one predict call.
pub const MAX_PREDICT_POINTS: usize = 10_000;
/// How far in the future (seconds) a `measured_at` may lie, for clock skew.
const MEASURED_AT_SKEW: f64 = 60.0;
/// How long a change that keeps meeting concurrent changes of the same session (by other
/// replicas) is re-planned before the request gives up with 503 `busy`: below the HTTP
/// request timeout (120 s), so a client that did nothing wrong is never told of a
/// conflict it cannot resolve.
const COMMIT_RETRY_BUDGET: Duration = Duration::from_secs(90);
/// First back-off after a lost commit race; it doubles up to [`MAX_COMMIT_BACKOFF`], and
/// each wait is drawn uniformly from [0, backoff] (full jitter) so that two replicas
/// that collided do not collide again.
const FIRST_COMMIT_BACKOFF: Duration = Duration::from_millis(5);
const MAX_COMMIT_BACKOFF: Duration = Duration::from_millis(500);
/// Quasi-random candidates over which regret estimates search the posterior mean's maximum.
const REGRET_CANDIDATES: usize = 256;

/// Failures of a session operation.
#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    /// Bad input: 422 naming the field.
    #[error(transparent)]
    Invalid(#[from] InvalidInput),
    /// The session (or another resource) does not exist: 404.
    #[error("{0} not found")]
    NotFound(&'static str),
    /// The request conflicts with the session's state: 409 naming the field.
    #[error("{}: {}", .0.field, .0.message)]
    Conflict(InvalidInput),
    /// The idempotency key was taken concurrently; look it up again.
    #[error("idempotency key taken concurrently")]
    IdempotencyRace,
    /// A cap of the server is reached (pending suggestions, active dataset): 409 of the
    /// given kind naming the field.
    #[error("{}: {}", .1.field, .1.message)]
    Limit(&'static str, InvalidInput),
    /// Other replicas kept changing the session for [`COMMIT_RETRY_BUDGET`]: 503, retry.
    #[error("the session stayed busy with concurrent changes")]
    Busy,
    #[error(transparent)]
    Store(StoreError),
    #[error(transparent)]
    Policy(#[from] PolicyError),
    #[error("internal error: {0}")]
    Internal(String),
}

impl From<StoreError> for ServiceError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::NotFound => ServiceError::NotFound("session"),
            StoreError::DuplicateKey => ServiceError::IdempotencyRace,
            other => ServiceError::Store(other),
        }
    }
}

impl From<crate::gp::GpError> for ServiceError {
    fn from(e: crate::gp::GpError) -> Self {
        ServiceError::Policy(PolicyError::Gp(e))
    }
}

/// An idempotency key and the fingerprint of the request that carried it.
#[derive(Clone, Debug)]
pub struct IdempotencyKey {
    pub scope: String,
    pub key: String,
    pub request_hash: String,
}

impl IdempotencyKey {
    fn record<T: serde::Serialize>(
        &self,
        session_id: Uuid,
        status: u16,
        body: &T,
    ) -> IdempotencyRecord {
        IdempotencyRecord {
            scope: self.scope.clone(),
            session_id: Some(session_id),
            key: self.key.clone(),
            request_hash: self.request_hash.clone(),
            status,
            body: serde_json::to_string(body).expect("response bodies serialise"),
        }
    }
}

/// Caps on the work one session may ask of the server (docs/api.md, "Limits").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Most pending (handed out, not yet observed, not expired) suggestions per session:
    /// each is conditioned on in every later suggest, so they cost like observations.
    pub max_pending: usize,
    /// Most active observations of a session whose algorithm does not bound its own
    /// dataset (every algorithm but BOLT, whose `max_dataset_size` is its bound).
    pub max_active_observations: usize,
}

impl Limits {
    /// Default of [`Limits::max_pending`].
    pub const DEFAULT_MAX_PENDING: usize = 256;
    /// Default of [`Limits::max_active_observations`]: a fit at this size takes seconds,
    /// well inside the request timeout, on one core.
    pub const DEFAULT_MAX_ACTIVE_OBSERVATIONS: usize = 2000;
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_pending: Self::DEFAULT_MAX_PENDING,
            max_active_observations: Self::DEFAULT_MAX_ACTIVE_OBSERVATIONS,
        }
    }
}

/// Sessions over a store. Cheap to clone.
#[derive(Clone)]
pub struct SessionService {
    store: Arc<dyn Store>,
    limits: Limits,
    locks: Arc<Mutex<HashMap<Uuid, Arc<tokio::sync::Mutex<()>>>>>,
    /// Model work, one job per core, queued per session and served round robin (a
    /// request that timed out keeps its turn until its work ends).
    scheduler: FairScheduler,
    models: Arc<Mutex<ModelCache>>,
}

/// Bytes of models a replica keeps for reads (predict, best, regret, model).
const MODEL_CACHE_BYTES: usize = 512 << 20;
/// Bytes of one cache entry besides its model: the map's slot (key, entry and control
/// byte) and the `Arc`'s counts.
const CACHE_ENTRY_BYTES: usize =
    std::mem::size_of::<(Uuid, CachedModel)>() + 1 + 2 * std::mem::size_of::<usize>();

/// This replica's models of recently read sessions, each with the session version it
/// was built from: a read at another version rebuilds (DESIGN.md §6). Entries past
/// [`MODEL_CACHE_BYTES`] are dropped least recently used first.
#[derive(Default)]
struct ModelCache {
    entries: HashMap<Uuid, CachedModel>,
    bytes: usize,
    clock: u64,
}

struct CachedModel {
    version: i64,
    model: Option<Arc<CurrentModel>>,
    bytes: usize,
    last_used: u64,
}

impl ModelCache {
    fn get(&mut self, id: Uuid, version: i64) -> Option<Option<Arc<CurrentModel>>> {
        self.clock += 1;
        let clock = self.clock;
        let entry = self.entries.get_mut(&id).filter(|e| e.version == version)?;
        entry.last_used = clock;
        Some(entry.model.clone())
    }

    fn insert(&mut self, id: Uuid, version: i64, model: Option<Arc<CurrentModel>>) {
        let bytes = CACHE_ENTRY_BYTES + model.as_deref().map_or(0, CurrentModel::memory_bytes);
        if let Some(old) = self.entries.remove(&id) {
            self.bytes -= old.bytes;
        }
        if bytes > MODEL_CACHE_BYTES {
            return;
        }
        while self.bytes + bytes > MODEL_CACHE_BYTES {
            let Some(oldest) = self
                .entries
                .iter()
                .min_by_key(|(_, e)| e.last_used)
                .map(|(id, _)| *id)
            else {
                break;
            };
            if let Some(old) = self.entries.remove(&oldest) {
                self.bytes -= old.bytes;
            }
        }
        self.clock += 1;
        self.bytes += bytes;
        self.entries.insert(
            id,
            CachedModel {
                version,
                model,
                bytes,
                last_used: self.clock,
            },
        );
    }
}

/// The RNG of the `ordinal`-th call of a session with `seed` (splitmix64 of both).
/// Public for the benchmark harness, which replays sessions in-process.
pub fn call_rng(seed: u64, ordinal: u64) -> PolicyRng {
    let mut z = seed ^ ordinal.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    PolicyRng::seed_from_u64(z ^ (z >> 31))
}

fn policy_state(row: &SessionRow) -> Result<PolicyState, ServiceError> {
    serde_json::from_value(row.state.clone())
        .map_err(|e| ServiceError::Store(StoreError::Corrupt(format!("policy state: {e}"))))
}

/// The active observations as the policy sees them (internal "larger is better" scale).
fn policy_data(config: &SessionConfig, rows: &[ObservationRow]) -> Vec<Observation> {
    let sign = config.goal.sign();
    rows.iter()
        .map(|o| Observation {
            seq: o.seq,
            x: o.unit.clone(),
            t: o.t,
            y: sign * o.value,
        })
        .collect()
}

/// Seconds between handing a suggestion out and its measurement: configured, or the
/// median of the session's recent delays.
fn lead(history: &History) -> f64 {
    history
        .session
        .config
        .time
        .lead
        .unwrap_or_else(|| median_lead(&history.recent_delays))
}

fn arm_points(space: &SearchSpace, config: &SessionConfig) -> Option<Vec<Vec<f64>>> {
    config.arms.as_ref().map(|arms| {
        arms.iter()
            .map(|a| {
                space
                    .to_unit(&a.params, "arms")
                    .expect("arms were validated")
            })
            .collect()
    })
}

/// The model predictions, recommendations and regret estimates read from.
enum CurrentModel {
    /// The GP over the unit cube (× time) with fitted hyperparameters.
    Surrogate(Surrogate),
    /// The posterior over the arms under a given prior.
    Arms {
        selection: policy::PriorSelection,
        gp: ArmGp,
    },
    /// The posterior over (arm, time) under a given prior and TV-GP-UCB's forgetting.
    TimeVaryingArms {
        policy: TvGpUcbWithPrior,
        gp: TimeVaryingArmGp,
    },
}

impl CurrentModel {
    /// Posterior mean and standard deviation at (x, t) on the internal scale; None for a
    /// point that is not one of the arms of a model over arms.
    fn predict(&self, x: &[f64], t: f64) -> Option<(f64, f64)> {
        match self {
            CurrentModel::Surrogate(surrogate) => Some(surrogate.predict(x, t)),
            CurrentModel::Arms { selection, gp } => selection
                .arm_at(x)
                .map(|arm| (gp.mean(arm), gp.variance(arm).sqrt())),
            CurrentModel::TimeVaryingArms { policy, gp } => policy.arm_at(x).map(|arm| {
                let (mean, variance) = gp.predict(arm, t);
                (mean, variance.sqrt())
            }),
        }
    }

    /// Posterior mean at (x, t); −∞ off the arms of a model over arms.
    fn mean(&self, x: &[f64], t: f64) -> f64 {
        match self {
            CurrentModel::Surrogate(surrogate) => surrogate.mean(x, t),
            CurrentModel::Arms { .. } | CurrentModel::TimeVaryingArms { .. } => {
                self.predict(x, t).map_or(f64::NEG_INFINITY, |p| p.0)
            }
        }
    }

    /// Bytes of memory the model holds: itself, and everything it owns or keeps alive
    /// on the heap (the prior of a model over arms included, though the prior cache may
    /// share it).
    fn memory_bytes(&self) -> usize {
        std::mem::size_of::<Self>()
            + match self {
                CurrentModel::Surrogate(surrogate) => surrogate.gp().heap_bytes(),
                CurrentModel::Arms { selection, gp } => {
                    selection.heap_bytes() + gp.heap_bytes() + gp.prior().heap_bytes()
                }
                CurrentModel::TimeVaryingArms { policy, gp } => {
                    policy.heap_bytes() + gp.heap_bytes() + gp.prior().heap_bytes()
                }
            }
    }

    fn uses_time(&self) -> bool {
        match self {
            CurrentModel::Surrogate(surrogate) => surrogate.gp().spec().temporal.is_some(),
            CurrentModel::Arms { .. } => false,
            CurrentModel::TimeVaryingArms { .. } => true,
        }
    }
}

impl SessionService {
    pub fn new(store: Arc<dyn Store>, limits: Limits) -> Self {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        SessionService {
            store,
            limits,
            locks: Arc::default(),
            scheduler: FairScheduler::new(cores),
            models: Arc::default(),
        }
    }

    /// The session's current model from this replica's cache when it was built from
    /// the same session version, else rebuilt (on the blocking pool: call from there).
    fn cached_model(
        cache: &Mutex<ModelCache>,
        history: &History,
    ) -> Result<Option<Arc<CurrentModel>>, ServiceError> {
        let (id, version) = (history.session.id, history.session.version);
        if let Some(model) = cache.lock().expect("model cache poisoned").get(id, version) {
            return Ok(model);
        }
        let model = Self::current_model(&history.session.config, history)?.map(Arc::new);
        cache
            .lock()
            .expect("model cache poisoned")
            .insert(id, version, model.clone());
        Ok(model)
    }

    /// Runs CPU-heavy model work of `session` on the blocking pool, off the async
    /// runtime, when the fair scheduler gives the session its turn.
    async fn blocking<T: Send + 'static>(
        &self,
        session: Uuid,
        work: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, ServiceError> {
        let turn = self.scheduler.turn(session).await;
        tokio::task::spawn_blocking(move || {
            let _turn = turn;
            work()
        })
        .await
        .map_err(|e| ServiceError::Internal(format!("model task failed: {e}")))
    }

    pub fn store(&self) -> &Arc<dyn Store> {
        &self.store
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

    async fn history(&self, id: Uuid) -> Result<History, ServiceError> {
        self.store
            .load_history(id)
            .await?
            .ok_or(ServiceError::NotFound("session"))
    }

    async fn session_row(&self, id: Uuid) -> Result<SessionRow, ServiceError> {
        self.store
            .get_session(id)
            .await?
            .ok_or(ServiceError::NotFound("session"))
    }

    /// Creates a session from a validated request.
    pub async fn create_session(
        &self,
        request: CreateSession,
        idempotency: Option<&IdempotencyKey>,
    ) -> Result<Session, ServiceError> {
        // Validating priors factorises m × m matrices: off the async runtime.
        let seed = random_seed();
        let id = Uuid::new_v4();
        let config = self
            .blocking(id, move || SessionConfig::from_request(request, seed))
            .await??;
        let row = SessionRow {
            id,
            config,
            created_at: Utc::now(),
            status: "active".into(),
            version: 0,
            state: serde_json::to_value(PolicyState::default()).expect("state serialises"),
            suggest_count: 0,
            last_suggest: None,
            observation_count: 0,
            dataset_size: 0,
            pending_count: 0,
        };
        let session = Session::from(row.clone());
        let record = idempotency.map(|k| k.record(row.id, 201, &session));
        self.store.create_session(&row, record.as_ref()).await?;
        Ok(session)
    }

    pub async fn get_session(&self, id: Uuid) -> Result<Session, ServiceError> {
        Ok(self.session_row(id).await?.into())
    }

    /// A page of sessions, newest first. `cursor` is the `next_cursor` of the last page.
    pub async fn list_sessions(
        &self,
        limit: i64,
        cursor: Option<&str>,
    ) -> Result<SessionList, ServiceError> {
        if !(1..=1000).contains(&limit) {
            return Err(InvalidInput::new("limit", "must be between 1 and 1000").into());
        }
        let before = cursor.map(parse_cursor).transpose()?;
        let rows = self.store.list_sessions(limit + 1, before).await?;
        let more = rows.len() as i64 > limit;
        let sessions: Vec<Session> = rows
            .into_iter()
            .take(limit as usize)
            .map(Session::from)
            .collect();
        let next_cursor = more
            .then(|| sessions.last())
            .flatten()
            .map(|s| format!("{}_{}", s.created_at.timestamp_micros(), s.id));
        Ok(SessionList {
            sessions,
            next_cursor,
        })
    }

    pub async fn delete_session(&self, id: Uuid) -> Result<(), ServiceError> {
        let _guard = self.lock(id).await;
        if self.store.delete_session(id).await? {
            Ok(())
        } else {
            Err(ServiceError::NotFound("session"))
        }
    }

    /// Hands out `count` suggestions (DESIGN.md §2–§3).
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
        let arrived = Utc::now();
        let _guard = self.lock(id).await;
        self.commit_with_retry(id, idempotency, |history| {
            self.plan_suggest(history, &request, count, arrived)
        })
        .await
    }

    /// Plans a change from a fresh snapshot and commits it with the snapshot's version;
    /// when another writer got there first, plans again from a newer snapshot.
    async fn commit_with_retry<T, F, Fut>(
        &self,
        id: Uuid,
        idempotency: Option<&IdempotencyKey>,
        plan: F,
    ) -> Result<T, ServiceError>
    where
        T: serde::Serialize,
        F: Fn(History) -> Fut,
        Fut: Future<Output = Result<(ChangeSet, T), ServiceError>>,
    {
        let deadline = Instant::now() + COMMIT_RETRY_BUDGET;
        let mut backoff = FIRST_COMMIT_BACKOFF;
        loop {
            let history = self.history(id).await?;
            let version = history.session.version;
            let (change, response) = plan(history).await?;
            let record = idempotency.map(|k| k.record(id, 201, &response));
            match self
                .store
                .commit(id, version, &change, record.as_ref())
                .await
            {
                Ok(()) => return Ok(response),
                Err(StoreError::Conflict) if Instant::now() < deadline => {
                    let wait = backoff.mul_f64(rand::random::<f64>());
                    tokio::time::sleep(wait).await;
                    backoff = (backoff * 2).min(MAX_COMMIT_BACKOFF);
                }
                Err(StoreError::Conflict) => return Err(ServiceError::Busy),
                Err(e) => return Err(e.into()),
            }
        }
    }

    async fn plan_suggest(
        &self,
        history: History,
        request: &SuggestRequest,
        count: i64,
        now: DateTime<Utc>,
    ) -> Result<(ChangeSet, SuggestResponse), ServiceError> {
        let started = Instant::now();
        let session = &history.session;
        let config = session.config.clone();
        let t_now = resolve_time(config.time.source, request.t, session.created_at, now, "t")?;
        let (expired, pending): (Vec<&SuggestionRow>, Vec<&SuggestionRow>) = history
            .pending
            .iter()
            .partition(|s| t_now - s.issued_t > config.time.pending_timeout);
        let max_pending = self.limits.max_pending;
        if pending.len() + count as usize > max_pending {
            return Err(ServiceError::Limit(
                "too-many-pending",
                InvalidInput::new(
                    "count",
                    format!(
                        "{count} more would exceed the cap of {max_pending} pending \
                         suggestions (this session has {}): observe them, or wait until \
                         they expire after time.pending_timeout",
                        pending.len()
                    ),
                ),
            ));
        }
        let target = t_now + lead(&history);
        let data = policy_data(&config, &history.active);
        let pending_points: Vec<(Vec<f64>, f64)> =
            pending.iter().map(|s| (s.unit.clone(), s.t)).collect();
        let mut state = policy_state(session)?;
        let ordinal = session.suggest_count as u64;
        let (proposals, state) = {
            let config = config.clone();
            self.blocking(session.id, move || {
                let space = config.space();
                let arms = arm_points(&space, &config);
                let ctx = SuggestContext {
                    space: &space,
                    arms: arms.as_deref(),
                    model: &config.model,
                    data: &data,
                    pending: &pending_points,
                    t: target,
                    count: count as usize,
                    issued_before: ordinal,
                    fixed_noise: config.model.noise,
                };
                let policy = policy::policy_for(&config);
                let mut rng = call_rng(config.seed, ordinal);
                policy::suggest(policy.as_ref(), &ctx, &mut state, &mut rng)
                    .map(|proposals| (proposals, state))
            })
            .await??
        };
        let space = config.space();
        let rows: Vec<SuggestionRow> = proposals
            .into_iter()
            .enumerate()
            .map(|(i, p)| SuggestionRow {
                id: Uuid::new_v4(),
                ordinal: session.suggest_count + i as i64,
                params: space.from_unit(&p.x),
                arm: p
                    .arm
                    .and_then(|i| config.arms.as_ref().map(|arms| arms[i].name.clone())),
                unit: p.x,
                issued_t: t_now,
                t: target,
                created_at: now,
                status: SuggestionStatus::Pending,
            })
            .collect();
        let dataset_size = history.active.len() as i64;
        let response_time = session
            .last_suggest
            .filter(|(last_t, _)| t_now >= *last_t)
            .map(|(last_t, n)| ResponseTimeSample {
                n,
                seconds: t_now - last_t,
            });
        let response = SuggestResponse {
            suggestions: rows.iter().map(Suggestion::from).collect(),
        };
        let change = ChangeSet {
            suggestion_status: expired
                .iter()
                .map(|s| (s.id, SuggestionStatus::Expired))
                .collect(),
            new_suggestions: rows,
            state: Some(serde_json::to_value(&state).expect("state serialises")),
            last_suggest: Some((t_now, dataset_size)),
            response_time,
            calls: vec![CallRecord {
                kind: "suggest",
                t: t_now,
                dataset_size,
                compute_seconds: started.elapsed().as_secs_f64(),
            }],
            ..ChangeSet::default()
        };
        Ok((change, response))
    }

    /// Records observations, all or nothing (DESIGN.md §5).
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
        let arrived = Utc::now();
        let _guard = self.lock(id).await;
        self.commit_with_retry(id, idempotency, |history| {
            let inputs = &inputs;
            async move { self.plan_observe(&history, inputs, arrived).await }
        })
        .await
    }

    async fn plan_observe(
        &self,
        history: &History,
        inputs: &[(String, ObservationInput)],
        now: DateTime<Utc>,
    ) -> Result<(ChangeSet, ObservationList), ServiceError> {
        let started = Instant::now();
        let session = &history.session;
        let config = &session.config;
        let space = config.space();
        let mut seen_suggestions = BTreeSet::new();
        let mut rows = Vec::with_capacity(inputs.len());
        let mut ordinals = Vec::with_capacity(inputs.len());
        let mut observed_suggestions = Vec::new();
        for (i, (prefix, input)) in inputs.iter().enumerate() {
            let field = |name: &str| format!("{prefix}{name}");
            if !(input.value.is_finite() && input.value.abs() <= MAX_MAGNITUDE) {
                return Err(InvalidInput::new(
                    field("value"),
                    format!("must be a finite number within ±{MAX_MAGNITUDE:e}"),
                )
                .into());
            }
            if let Some(regret) = input.regret
                && !(regret.is_finite() && regret >= 0.0)
            {
                return Err(
                    InvalidInput::new(field("regret"), "must be a finite number ≥ 0").into(),
                );
            }
            let (suggestion_id, params, unit) = match (&input.suggestion_id, &input.params) {
                (Some(_), Some(_)) => {
                    return Err(InvalidInput::new(
                        field("params"),
                        "give suggestion_id or params, not both",
                    )
                    .into());
                }
                (None, None) => {
                    return Err(InvalidInput::new(
                        field("suggestion_id"),
                        "give suggestion_id (of a suggestion) or params (a setting of your own)",
                    )
                    .into());
                }
                (Some(sid), None) => {
                    let suggestion = self
                        .store
                        .get_suggestion(session.id, *sid)
                        .await?
                        .ok_or_else(|| {
                            InvalidInput::new(
                                field("suggestion_id"),
                                "no such suggestion in this session",
                            )
                        })?;
                    if suggestion.status == SuggestionStatus::Observed
                        || !seen_suggestions.insert(*sid)
                    {
                        return Err(ServiceError::Conflict(InvalidInput::new(
                            field("suggestion_id"),
                            "this suggestion has already been observed",
                        )));
                    }
                    observed_suggestions.push(*sid);
                    ordinals.push(u64::try_from(suggestion.ordinal).ok());
                    (Some(*sid), suggestion.params, suggestion.unit)
                }
                (None, Some(params)) => {
                    let unit = space.to_unit(params, &field("params"))?;
                    if let Some(arms) = &config.arms
                        && !arms.iter().any(|a| &a.params == params)
                    {
                        return Err(InvalidInput::new(
                            field("params"),
                            "is not one of this session's arms",
                        )
                        .into());
                    }
                    ordinals.push(None);
                    (None, params.clone(), unit)
                }
            };
            let t = match (config.time.source, input.measured_at) {
                (TimeSource::Wall, Some(at)) => {
                    if input.t.is_some() {
                        return Err(InvalidInput::new(
                            field("t"),
                            "this session uses wall-clock time; send measured_at, not t",
                        )
                        .into());
                    }
                    let t = wall_time(session.created_at, at);
                    if t < 0.0 {
                        return Err(InvalidInput::new(
                            field("measured_at"),
                            "is before the session was created",
                        )
                        .into());
                    }
                    if (at - now).num_milliseconds() as f64 / 1000.0 > MEASURED_AT_SKEW {
                        return Err(
                            InvalidInput::new(field("measured_at"), "is in the future").into()
                        );
                    }
                    t
                }
                (TimeSource::Client, Some(_)) => {
                    return Err(InvalidInput::new(
                        field("measured_at"),
                        "this session uses client time; send t (seconds), not measured_at",
                    )
                    .into());
                }
                (_, None) => resolve_time(
                    config.time.source,
                    input.t,
                    session.created_at,
                    now,
                    &field("t"),
                )?,
            };
            rows.push(ObservationRow {
                seq: history.next_seq + i as i64,
                suggestion_id,
                params,
                unit,
                value: input.value,
                t,
                measured_at: input.measured_at,
                regret: input.regret,
                active: true,
                removed_at: None,
                removed_reason: None,
                created_at: now,
            });
        }
        let data = policy_data(config, &history.active);
        let new = policy_data(config, &rows);
        let mut state = policy_state(session)?;
        let t_now = match config.time.source {
            TimeSource::Wall => wall_time(session.created_at, now),
            TimeSource::Client => rows.iter().map(|r| r.t).fold(f64::NEG_INFINITY, f64::max),
        };
        let response_times: Vec<(f64, f64)> = self
            .store
            .response_times(session.id)
            .await?
            .iter()
            .map(|s| (s.n as f64, s.seconds))
            .collect();
        let (removals, state) = {
            let config = config.clone();
            self.blocking(session.id, move || {
                let policy = policy::policy_for(&config);
                let ctx = ObserveContext {
                    model: &config.model,
                    data: &data,
                    new: &new,
                    suggestion_ordinals: &ordinals,
                    fixed_noise: config.model.noise,
                    t: t_now,
                    response_times: &response_times,
                };
                policy
                    .observe(&ctx, &mut state)
                    .map(|removals| (removals, state))
            })
            .await??
        };
        let active_after = history.active.len() + rows.len() - removals.len();
        let cap = self.limits.max_active_observations;
        if !matches!(config.algorithm, AlgorithmConfig::Bolt { .. }) && active_after > cap {
            return Err(ServiceError::Limit(
                "dataset-full",
                InvalidInput::new(
                    "session",
                    format!(
                        "would hold {active_after} active observations; {} keeps them \
                         and this server caps a session at {cap}: use bolt, which bounds \
                         its own dataset",
                        config.algorithm.name()
                    ),
                ),
            ));
        }
        let mut deactivate = Vec::new();
        for (seq, reason) in removals {
            match rows.iter_mut().find(|r| r.seq == seq) {
                Some(row) => {
                    row.active = false;
                    row.removed_at = Some(now);
                    row.removed_reason = Some(reason.as_str().to_string());
                }
                None => deactivate.push(Deactivation {
                    seq,
                    reason: reason.as_str().to_string(),
                }),
            }
        }
        let response = ObservationList {
            observations: rows.iter().map(Into::into).collect(),
            next_after: None,
        };
        let t_last = rows.last().map_or(0.0, |r| r.t);
        let dataset_size = history.active.len() as i64;
        let change = ChangeSet {
            suggestion_status: observed_suggestions
                .into_iter()
                .map(|s| (s, SuggestionStatus::Observed))
                .collect(),
            new_observations: rows,
            deactivate,
            state: Some(serde_json::to_value(&state).expect("state serialises")),
            calls: vec![CallRecord {
                kind: "observe",
                t: t_last,
                dataset_size,
                compute_seconds: started.elapsed().as_secs_f64(),
            }],
            ..ChangeSet::default()
        };
        Ok((change, response))
    }

    /// A page of observations with seq > `after`.
    pub async fn list_observations(
        &self,
        id: Uuid,
        after: i64,
        limit: i64,
        include_pruned: bool,
    ) -> Result<ObservationList, ServiceError> {
        if !(1..=10_000).contains(&limit) {
            return Err(InvalidInput::new("limit", "must be between 1 and 10000").into());
        }
        self.session_row(id).await?;
        let rows = self
            .store
            .list_observations(id, after, limit + 1, include_pruned)
            .await?;
        let more = rows.len() as i64 > limit;
        let observations: Vec<_> = rows.iter().take(limit as usize).map(Into::into).collect();
        let next_after = more
            .then(|| {
                observations
                    .last()
                    .map(|o: &crate::session::views::Observation| o.seq)
            })
            .flatten();
        Ok(ObservationList {
            observations,
            next_after,
        })
    }

    /// The model of the session's active data: under its saved hyperparameters (no
    /// refit), or, for algorithms with priors, the posterior under the most probable
    /// active prior (which exists before any observation).
    fn current_model(
        config: &SessionConfig,
        history: &History,
    ) -> Result<Option<CurrentModel>, ServiceError> {
        let data = policy_data(config, &history.active);
        let state = policy_state(&history.session)?;
        if let Some(selection) = policy::prior_selection_for(config) {
            let gp = selection.current_model(&data, &state)?;
            return Ok(Some(CurrentModel::Arms { selection, gp }));
        }
        if let Some(policy) = policy::tv_gp_ucb_with_prior_for(config) {
            let gp = policy.current_model(&data, &state)?;
            return Ok(Some(CurrentModel::TimeVaryingArms { policy, gp }));
        }
        if history.active.is_empty() {
            return Ok(None);
        }
        let policy = policy::policy_for(config);
        let spec = policy.kernel(&config.model);
        let dim = config.parameters.len();
        let surrogate = match state.hyperparameters {
            Some(hyper) => Surrogate::with_hyperparameters(spec, dim, &data, hyper)?,
            // Nothing fitted yet (warm-up, random search): fit now.
            None => Surrogate::fit(
                spec,
                dim,
                &data,
                config.model.noise,
                policy.fixed_temporal_lengthscale(),
            )?,
        };
        Ok(Some(CurrentModel::Surrogate(surrogate)))
    }

    /// Regret per observation: reported by the client, or estimated as
    /// max_x μ(x, t_i) − μ(x_i, t_i) under the current model.
    pub async fn regret(&self, id: Uuid) -> Result<RegretReport, ServiceError> {
        let history = self.history(id).await?;
        let rows = self.store.list_observations(id, 0, i64::MAX, true).await?;
        let cache = self.models.clone();
        self.blocking(id, move || -> Result<RegretReport, ServiceError> {
            let config = &history.session.config;
            let model = Self::cached_model(&cache, &history)?;
            let space = config.space();
            let candidates: Vec<Vec<f64>> = match arm_points(&space, config) {
                Some(arms) => arms,
                None => {
                    let dim = space.dim() as u32;
                    let mut points: Vec<Vec<f64>> = (0..REGRET_CANDIDATES as u32)
                        .map(|i| {
                            (0..dim)
                                .map(|d| f64::from(sobol_burley::sample(i, d, 0x7476_626f)))
                                .collect()
                        })
                        .collect();
                    points.extend(history.active.iter().map(|o| o.unit.clone()));
                    points
                }
            };
            let mut cumulative = 0.0;
            let mut counted = 0usize;
            let mut best_by_time: HashMap<u64, f64> = HashMap::new();
            let uses_time = model.as_deref().is_some_and(CurrentModel::uses_time);
            let points = rows
                .iter()
                .map(|row| {
                    let (regret, estimated) = match (row.regret, &model) {
                        (Some(r), _) => (Some(r), false),
                        (None, None) => (None, true),
                        (None, Some(model)) => {
                            let t = row.t;
                            let key = if uses_time { t.to_bits() } else { 0 };
                            let best = *best_by_time.entry(key).or_insert_with(|| {
                                candidates
                                    .iter()
                                    .map(|x| model.mean(x, t))
                                    .fold(f64::NEG_INFINITY, f64::max)
                            });
                            let here = model.mean(&row.unit, t);
                            (Some((best.max(here) - here).max(0.0)), true)
                        }
                    };
                    if let Some(r) = regret {
                        cumulative += r;
                        counted += 1;
                    }
                    RegretPoint {
                        seq: row.seq,
                        t: row.t,
                        value: row.value,
                        regret,
                        estimated,
                        active: row.active,
                        cumulative_regret: cumulative,
                    }
                })
                .collect();
            Ok(RegretReport {
                points,
                cumulative_regret: cumulative,
                average_regret: (counted > 0).then(|| cumulative / counted as f64),
            })
        })
        .await?
    }

    /// The model's hyperparameters, dataset, response-time samples and policy state.
    pub async fn model(&self, id: Uuid) -> Result<ModelView, ServiceError> {
        let history = self.history(id).await?;
        let samples = self.store.response_times(id).await?;
        let relevance = {
            let history = history.clone();
            let t = Self::default_time(&history, Utc::now());
            let cache = self.models.clone();
            self.blocking(id, move || -> Result<Vec<RelevanceView>, ServiceError> {
                let model = Self::cached_model(&cache, &history)?;
                let Some(CurrentModel::Surrogate(surrogate)) = model.as_deref() else {
                    return Ok(Vec::new());
                };
                if surrogate.gp().spec().temporal.is_none() {
                    return Ok(Vec::new());
                }
                let values = relevances(surrogate.gp(), t)?;
                Ok(history
                    .active
                    .iter()
                    .zip(values)
                    .map(|(o, relevance)| RelevanceView {
                        seq: o.seq,
                        relevance,
                    })
                    .collect())
            })
            .await??
        };
        let calls = self.store.call_stats(id).await?;
        let session = &history.session;
        let config = &session.config;
        let mut state = policy_state(session)?;
        let prior_selection = policy::prior_selection_for(config).map(|selection| {
            let names = config
                .algorithm
                .priors()
                .unwrap_or_default()
                .iter()
                .enumerate()
                .map(|(i, p)| p.name.clone().unwrap_or_else(|| format!("prior-{i}")))
                .collect();
            let saved = state
                .prior_selection
                .take()
                .unwrap_or_else(|| selection.initial_state());
            PriorSelectionView::new(names, saved)
        });
        let has_time = policy::policy_for(config)
            .kernel(&config.model)
            .temporal
            .is_some();
        let hyperparameters = state.hyperparameters.map(|h| {
            let temporal = has_time.then_some(h.temporal_lengthscale);
            HyperparametersView {
                signal_variance: h.signal_variance,
                spatial_lengthscale: h.spatial_lengthscale,
                temporal_lengthscale: temporal,
                noise_variance: h.noise_variance,
                epsilon: match config.algorithm {
                    AlgorithmConfig::TvGpUcb { .. } => {
                        temporal.map(crate::policy::tv_gp_ucb::epsilon_of_temporal_lengthscale)
                    }
                    _ => None,
                },
            }
        });
        let points: Vec<(f64, f64)> = samples.iter().map(|s| (s.n as f64, s.seconds)).collect();
        Ok(ModelView {
            dataset_size: history.active.len() as i64,
            max_dataset_size: state.max_dataset_size.map(|n| n as i64),
            hyperparameters,
            lead: lead(&history),
            response_time: ResponseTimeView {
                coefficients: fit_response_time(&points),
                samples: samples
                    .iter()
                    .map(|s| ResponseTimeSampleView {
                        n: s.n,
                        seconds: s.seconds,
                    })
                    .collect(),
            },
            compute_time: calls
                .into_iter()
                .map(|c| ComputeTimeView {
                    kind: c.kind,
                    count: c.count,
                    mean_seconds: c.mean_seconds,
                    max_seconds: c.max_seconds,
                })
                .collect(),
            relevance,
            prior_selection,
            algorithm_state: state,
        })
    }

    /// The time predict and best use when the client gives none.
    fn default_time(history: &History, now: DateTime<Utc>) -> f64 {
        match history.session.config.time.source {
            TimeSource::Wall => wall_time(history.session.created_at, now),
            TimeSource::Client => history.active.iter().map(|o| o.t).fold(0.0, f64::max),
        }
    }

    fn query_time(history: &History, t: Option<f64>) -> Result<f64, ServiceError> {
        match t {
            // The same bound as a client's time: far beyond it the kernels' distances
            // overflow and the posterior is NaN.
            Some(t) if !t.is_finite() || t.abs() > MAX_CLIENT_TIME => Err(InvalidInput::new(
                "t",
                format!("must be a finite number of seconds within ±{MAX_CLIENT_TIME:e}"),
            )
            .into()),
            Some(t) => Ok(t),
            None => Ok(Self::default_time(history, Utc::now())),
        }
    }

    /// Posterior mean and standard deviation of the objective at the given points.
    pub async fn predict(
        &self,
        id: Uuid,
        request: PredictRequest,
    ) -> Result<PredictResponse, ServiceError> {
        if request.points.is_empty() || request.points.len() > MAX_PREDICT_POINTS {
            return Err(InvalidInput::new(
                "points",
                format!("must hold 1 to {MAX_PREDICT_POINTS} points"),
            )
            .into());
        }
        let history = self.history(id).await?;
        let t = Self::query_time(&history, request.t)?;
        let space = history.session.config.space();
        let units = request
            .points
            .iter()
            .enumerate()
            .map(|(i, p)| space.to_unit(p, &format!("points[{i}]")))
            .collect::<Result<Vec<_>, _>>()?;
        let cache = self.models.clone();
        self.blocking(id, move || -> Result<PredictResponse, ServiceError> {
            let config = &history.session.config;
            let model = Self::cached_model(&cache, &history)?.ok_or_else(|| {
                ServiceError::Conflict(InvalidInput::new(
                    "session",
                    "has no active observations to predict from",
                ))
            })?;
            let sign = config.goal.sign();
            let predictions = request
                .points
                .into_iter()
                .zip(&units)
                .enumerate()
                .map(|(i, (params, x))| {
                    let (mean, std) = model.predict(x, t).ok_or_else(|| {
                        InvalidInput::new(
                            format!("points[{i}]"),
                            "is not one of this session's arms (its model lives on the arms)",
                        )
                    })?;
                    Ok(Prediction {
                        params,
                        mean: sign * mean,
                        std,
                    })
                })
                .collect::<Result<_, InvalidInput>>()?;
            Ok(PredictResponse { t, predictions })
        })
        .await?
    }

    /// The maximiser of the posterior mean at time t (the arm with the best mean for arm
    /// sessions).
    pub async fn best(&self, id: Uuid, t: Option<f64>) -> Result<Best, ServiceError> {
        let history = self.history(id).await?;
        let t = Self::query_time(&history, t)?;
        let cache = self.models.clone();
        self.blocking(id, move || -> Result<Best, ServiceError> {
            let config = &history.session.config;
            let model = Self::cached_model(&cache, &history)?.ok_or_else(|| {
                ServiceError::Conflict(InvalidInput::new(
                    "session",
                    "has no active observations to recommend from",
                ))
            })?;
            let space = config.space();
            let (x, arm) = match (arm_points(&space, config), model.as_ref()) {
                (Some(arms), _) => {
                    let index = (0..arms.len())
                        .max_by(|&a, &b| {
                            model
                                .mean(&arms[a], t)
                                .total_cmp(&model.mean(&arms[b], t))
                                .then(b.cmp(&a))
                        })
                        .expect("arm sets are not empty");
                    (
                        arms[index].clone(),
                        config.arms.as_ref().map(|a| a[index].name.clone()),
                    )
                }
                (None, CurrentModel::Arms { .. } | CurrentModel::TimeVaryingArms { .. }) => {
                    unreachable!("models over arms belong to arm sessions")
                }
                (None, CurrentModel::Surrogate(surrogate)) => {
                    let mut rng = call_rng(config.seed, u64::MAX);
                    let (x, _) = acquisition::maximize_mean(
                        surrogate.gp(),
                        t,
                        &AcquisitionOptions::default(),
                        &mut rng,
                    );
                    (space.snap(&x), None)
                }
            };
            let (mean, std) = model
                .predict(&x, t)
                .expect("the recommendation is one of the arms");
            Ok(Best {
                t,
                params: space.from_unit(&x),
                arm,
                mean: config.goal.sign() * mean,
                std,
            })
        })
        .await?
    }
}

fn parse_cursor(cursor: &str) -> Result<SessionCursor, ServiceError> {
    let invalid = || InvalidInput::new("cursor", "is not a cursor this server handed out");
    let (micros, id) = cursor.split_once('_').ok_or_else(invalid)?;
    Ok(SessionCursor {
        created_micros: micros.parse().map_err(|_| invalid())?,
        id: Uuid::parse_str(id).map_err(|_| invalid())?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cached_models_are_keyed_by_session_version() {
        let mut cache = ModelCache::default();
        let (a, b) = (Uuid::new_v4(), Uuid::new_v4());
        assert!(cache.get(a, 1).is_none());
        cache.insert(a, 1, None);
        cache.insert(b, 4, None);
        assert!(cache.get(a, 1).is_some(), "same version: a hit");
        assert!(
            cache.get(a, 2).is_none(),
            "the stored version moved on: rebuild"
        );
        cache.insert(a, 2, None);
        assert!(cache.get(a, 1).is_none(), "one entry per session");
        assert!(cache.get(a, 2).is_some() && cache.get(b, 4).is_some());
        assert_eq!(cache.entries.len(), 2);
        // Even an empty entry costs its slot: the cap counts memory, not matrix sizes.
        assert_eq!(cache.bytes, 2 * CACHE_ENTRY_BYTES);
    }
}
