//! The life of a session: load from the store, run the policy off the async runtime,
//! commit the result. The database is the truth and the model is rebuilt from it on every
//! call, so a restarted (or another) server gives the same next suggestion.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::acquisition::{self, AcquisitionOptions};
use crate::domain::InvalidInput;
use crate::domain::config::{
    AlgorithmConfig, CreateSession, SessionConfig, TimeSource, random_seed,
};
use crate::domain::input::ObservationInput;
use crate::domain::time::{MAX_CLIENT_TIME, wall_time};
use crate::engine::{
    EngineError, Limits, ObserveSnapshot, arm_points, call_rng, lead, new_session_config,
    plan_observe, plan_suggest, policy_data, policy_state,
};
use crate::gp::arms::{ArmGp, TimeVaryingArmGp};
use crate::gp::relevance::relevances;
use crate::policy::PolicyError;
use crate::policy::response_time::fit_response_time;
use crate::policy::tv_gp_ucb::TvGpUcbWithPrior;
use crate::policy::{self, PolicyState, Surrogate};
use crate::session::scheduler::FairScheduler;
use crate::session::views::{
    Best, ComputeTimeView, HyperparametersView, ModelView, ObservationList, PredictRequest,
    PredictResponse, Prediction, PriorSelectionView, RegretPoint, RegretReport, RelevanceView,
    ResponseTimeSampleView, ResponseTimeView, Session, SessionList, SuggestRequest,
    SuggestResponse, Suggestion,
};
use crate::store::{
    ChangeSet, History, IdempotencyRecord, SessionCursor, SessionRow, Store, StoreError,
};

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

impl From<EngineError> for ServiceError {
    fn from(e: EngineError) -> Self {
        match e {
            EngineError::Invalid(e) => ServiceError::Invalid(e),
            EngineError::Conflict(e) => ServiceError::Conflict(e),
            EngineError::Limit(kind, e) => ServiceError::Limit(kind, e),
            EngineError::CorruptState(e) => {
                ServiceError::Store(StoreError::Corrupt(format!("policy state: {e}")))
            }
            EngineError::Policy(e) => ServiceError::Policy(e),
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

    /// Runs an engine step as model work of `session` ([`Self::blocking`]), and fills in
    /// the compute time of its calls.
    async fn plan(
        &self,
        session: Uuid,
        step: impl FnOnce() -> Result<ChangeSet, EngineError> + Send + 'static,
    ) -> Result<ChangeSet, ServiceError> {
        let change = self
            .blocking(session, move || {
                let started = Instant::now();
                step().map(|mut change| {
                    let seconds = started.elapsed().as_secs_f64();
                    for call in &mut change.calls {
                        call.compute_seconds = seconds;
                    }
                    change
                })
            })
            .await??;
        Ok(change)
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
            .blocking(id, move || new_session_config(request, seed))
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
        let (arrived, limits, t) = (Utc::now(), self.limits, request.t);
        let _guard = self.lock(id).await;
        self.commit_with_retry(id, idempotency, |history| async move {
            let change = self
                .plan(id, move || {
                    plan_suggest(&history, count as usize, t, arrived, &limits)
                })
                .await?;
            let response = SuggestResponse {
                suggestions: change
                    .new_suggestions
                    .iter()
                    .map(Suggestion::from)
                    .collect(),
            };
            Ok((change, response))
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
        let (arrived, limits) = (Utc::now(), self.limits);
        let _guard = self.lock(id).await;
        self.commit_with_retry(id, idempotency, |history| {
            let inputs = inputs.clone();
            async move {
                let mut suggestions = HashMap::new();
                for suggestion_id in inputs.iter().filter_map(|(_, input)| input.suggestion_id) {
                    if let Some(row) = self.store.get_suggestion(id, suggestion_id).await? {
                        suggestions.insert(suggestion_id, row);
                    }
                }
                let snapshot = ObserveSnapshot {
                    history,
                    suggestions,
                    response_times: self.store.response_times(id).await?,
                };
                let change = self
                    .plan(id, move || {
                        plan_observe(&snapshot, &inputs, arrived, &limits)
                    })
                    .await?;
                let response = ObservationList {
                    observations: change.new_observations.iter().map(Into::into).collect(),
                    next_after: None,
                };
                Ok((change, response))
            }
        })
        .await
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
                        temporal.map(crate::domain::config::epsilon_of_temporal_lengthscale)
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
