//! Request and response bodies of the session API (docs/api.md). Field names are part of
//! the API contract: more may be added, these keep their names.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use crate::domain::algorithm::{AlgorithmInfo, AlgorithmName};
use crate::domain::config::{
    AlgorithmConfig, EventsConfig, Goal, ModelConfig, SessionConfig, TimeConfig,
};
use crate::domain::hyperpriors::HyperpriorSet;
use crate::domain::input::{Metadata, ObservationInput};
use crate::domain::records::{EndedRun, FittedHyperparameters, RunEnd, StepSnapshot};
use crate::domain::space::{Arm, ParameterSpec, Params};
pub use crate::engine::reads::{PriorSelectionView, PriorStatusView, RelevanceView};
pub use crate::engine::regret::{RegretPoint, RegretReport};
use crate::policy::PolicyState;
use crate::store::EventRecord;
use crate::store::{ObservationRow, RegretSlice, SessionRow, StoredCall, SuggestionRow};

use super::tracking::{Tracking, TrackingStatus};

/// A session: its filled-in configuration, status and counts.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct Session {
    pub id: Uuid,
    pub name: String,
    pub goal: Goal,
    pub parameters: Vec<ParameterSpec>,
    pub arms: Option<Vec<Arm>>,
    pub algorithm: AlgorithmConfig,
    pub model: ModelConfig,
    pub time: TimeConfig,
    /// The thresholds of its drift events (docs/events.md).
    pub events: EventsConfig,
    pub seed: u64,
    pub status: String,
    pub created_at: DateTime<Utc>,
    /// Observations ever recorded, active or forgotten.
    pub observation_count: i64,
    /// Active observations: the model's dataset.
    pub dataset_size: i64,
    /// Suggestions handed out and not yet observed nor expired.
    pub pending_count: i64,
    /// The largest dataset the algorithm keeps (BOLT's n*); null where none.
    pub max_dataset_size: Option<i64>,
    /// Incremented by every committed change.
    pub version: i64,
}

impl From<SessionRow> for Session {
    fn from(row: SessionRow) -> Self {
        let SessionConfig {
            name,
            goal,
            parameters,
            arms,
            algorithm,
            model,
            time,
            events,
            seed,
        } = row.config.into_config();
        Session {
            id: row.id,
            name,
            goal,
            parameters,
            arms,
            algorithm,
            model,
            time,
            events,
            seed,
            status: row.status,
            created_at: row.created_at,
            observation_count: row.observation_count,
            dataset_size: row.dataset_size,
            pending_count: row.pending_count,
            max_dataset_size: row
                .state
                .get("max_dataset_size")
                .and_then(serde_json::Value::as_i64),
            version: row.version,
        }
    }
}

/// `GET /v1/algorithms`.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct AlgorithmList {
    /// Every algorithm this server runs, in its order (`AlgorithmName::ALL`).
    pub algorithms: Vec<AlgorithmInfo>,
}

impl AlgorithmList {
    /// The server's algorithms.
    pub fn all() -> AlgorithmList {
        AlgorithmList {
            algorithms: AlgorithmName::ALL
                .into_iter()
                .map(AlgorithmInfo::from)
                .collect(),
        }
    }
}

/// A page of sessions, in the order asked for (newest first by default).
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct SessionList {
    /// The sessions of the page whose stored rows read back, each with its summary.
    pub sessions: Vec<SessionListEntry>,
    /// The sessions of the page whose stored rows do not (damaged by hand or by a failing
    /// disk; `tvbo check` says what): listed so that a damaged row hides nothing else.
    #[serde(default)]
    pub unreadable: Vec<UnreadableSession>,
    /// Pass as `cursor` for the next page; null on the last page.
    pub next_cursor: Option<String>,
}

/// A session whose stored row cannot be decoded: its id, and the mark.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct UnreadableSession {
    pub id: Uuid,
    /// Always true.
    pub unreadable: bool,
}

/// A listed session: the session, its tenant for an admin's listing, and its summary.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct SessionListEntry {
    #[serde(flatten)]
    pub session: Session,
    /// The tenant that owns it; only in a listing of every tenant (an admin key's, or any
    /// caller's with authentication off).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    pub summary: SessionSummary,
}

/// What a row of the dashboard's list shows of a session, besides its counts.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct SessionSummary {
    /// Mean regret over every observation that has one, reported else estimated when it
    /// arrived, active or forgotten: the timeline's `average_regret`. Null without any.
    pub average_regret: Option<f64>,
    /// Observations whose regret the client reported.
    pub reported_regrets: i64,
    /// Observations whose regret the model estimated.
    pub estimated_regrets: i64,
    /// The mean regret of consecutive slices of the whole history (at most 40, each a
    /// whole number of 64-observation buckets), oldest first; slices without a regret
    /// are left out; empty without any regret.
    #[schema(max_items = 40)]
    pub sparkline: Vec<f64>,
    /// When the newest step (a suggest or an observe call) was recorded; the creation
    /// time before any.
    pub last_activity_at: DateTime<Utc>,
    /// The session time of that step; null before any.
    pub last_activity_t: Option<f64>,
    /// Whether it keeps up now: its timeline's `tracking.status`, from its newest regrets
    /// and its last step, as of this answer.
    pub tracking: TrackingStatus,
    /// Why, in a sentence (the timeline's `tracking.reason`).
    pub tracking_reason: String,
}

impl SessionSummary {
    /// The summary of a session's regret slices (in order), last activity and status now.
    pub fn of(
        slices: &[RegretSlice],
        last_activity_at: DateTime<Utc>,
        last_activity_t: Option<f64>,
        tracking: &Tracking,
    ) -> SessionSummary {
        let valued: i64 = slices.iter().map(|s| s.valued).sum();
        let reported: i64 = slices.iter().map(|s| s.reported).sum();
        let total: f64 = slices.iter().map(|s| s.total).sum();
        SessionSummary {
            average_regret: (valued > 0).then(|| total / valued as f64),
            reported_regrets: reported,
            estimated_regrets: valued - reported,
            sparkline: slices
                .iter()
                .filter(|s| s.valued > 0)
                .map(|s| s.total / s.valued as f64)
                .collect(),
            last_activity_at,
            last_activity_t,
            tracking: tracking.status,
            tracking_reason: tracking.reason.clone(),
        }
    }
}

/// Body of `POST /v1/sessions/{id}/suggestions`.
#[derive(Clone, Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SuggestRequest {
    /// How many suggestions, 1..=64 (default 1).
    #[schema(minimum = 1, maximum = 64)]
    pub count: Option<i64>,
    /// Session time in seconds (client-time sessions only, where it is required).
    #[schema(minimum = -1e10, maximum = 1e10)]
    pub t: Option<f64>,
    /// Parameters held at these values: each suggestion is the best setting of the
    /// others given them (Ax's fixed features). Required for every context parameter.
    #[schema(value_type = Option<std::collections::BTreeMap<String, crate::domain::space::ParamValue>>)]
    pub fixed: Option<Params>,
}

/// A suggested setting to evaluate.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Suggestion {
    pub id: Uuid,
    #[schema(value_type = std::collections::BTreeMap<String, crate::domain::space::ParamValue>)]
    pub params: Params,
    /// The session time the suggestion targets (now + lead).
    pub t: f64,
    /// Arm name, for arm sessions.
    pub arm: Option<String>,
    pub created_at: DateTime<Utc>,
}

impl From<&SuggestionRow> for Suggestion {
    fn from(row: &SuggestionRow) -> Self {
        Suggestion {
            id: row.id,
            params: row.params.clone(),
            t: row.t,
            arm: row.arm.clone(),
            created_at: row.created_at,
        }
    }
}

/// Response of a suggest call.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct SuggestResponse {
    pub suggestions: Vec<Suggestion>,
}

/// Body of `POST /v1/sessions/{id}/observations` with several observations (all or nothing).
#[derive(Clone, Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ObservationBatch {
    #[schema(min_items = 1, max_items = 1000)]
    pub observations: Vec<ObservationInput>,
}

/// Body of `POST /v1/sessions/{id}/observations`: one observation, or a batch of them.
#[derive(Clone, Debug, ToSchema)]
#[serde(untagged)]
pub enum ObservationRequest {
    One(ObservationInput),
    Batch(ObservationBatch),
}

impl ObservationRequest {
    /// The observations, each with the prefix that turns its field names into paths of
    /// the request body (`observations[2].` in a batch, empty for a single one).
    pub fn into_inputs(self) -> Vec<(String, ObservationInput)> {
        match self {
            ObservationRequest::One(input) => vec![(String::new(), input)],
            ObservationRequest::Batch(batch) => batch
                .observations
                .into_iter()
                .enumerate()
                .map(|(i, input)| (format!("observations[{i}]."), input))
                .collect(),
        }
    }
}

/// An observation as stored.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Observation {
    pub seq: i64,
    pub suggestion_id: Option<Uuid>,
    #[schema(value_type = std::collections::BTreeMap<String, crate::domain::space::ParamValue>)]
    pub params: Params,
    pub value: f64,
    pub t: f64,
    pub measured_at: Option<DateTime<Utc>>,
    pub regret: Option<f64>,
    /// The regret the model estimated when it arrived (against the optimum the last
    /// suggest recorded), where the client reported none; null otherwise.
    #[serde(default)]
    pub estimated_regret: Option<f64>,
    /// Whether it is in the model's dataset.
    pub active: bool,
    pub removed_at: Option<DateTime<Utc>>,
    /// Session time of the step that forgot it.
    pub removed_t: Option<f64>,
    /// Why it was forgotten (`reset`, ...).
    pub removed_reason: Option<String>,
    /// The client's notes on the run, as sent.
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<Metadata>,
    /// When the server recorded it (wall clock), whatever the session's time source.
    pub recorded_at: DateTime<Utc>,
}

impl From<&ObservationRow> for Observation {
    fn from(row: &ObservationRow) -> Self {
        Observation {
            seq: row.seq,
            suggestion_id: row.suggestion_id,
            params: row.params.clone(),
            value: row.value,
            t: row.t,
            measured_at: row.measured_at,
            regret: row.regret,
            estimated_regret: row
                .regret
                .is_none()
                .then_some(row.regret_estimate)
                .flatten(),
            active: row.active,
            removed_at: row.removed_at,
            removed_t: row.removed_t,
            removed_reason: row.removed_reason.clone(),
            metadata: row.metadata.clone(),
            recorded_at: row.created_at,
        }
    }
}

/// Response of an observe call and page of the observation listing.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ObservationList {
    pub observations: Vec<Observation>,
    /// For listings in seq order, ascending: pass as `after` for the next page; null on
    /// the last page (and in every other order, which pages by `offset`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_after: Option<i64>,
    /// For listings: how many observations the filter (`state`, `after`) matches, on
    /// every page; absent from an observe call's answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<i64>,
    /// An observe call's failed runs (`failed: true`), recorded and kept from the model;
    /// absent when there were none, and from listings.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failed: Vec<EndedRunView>,
}

/// A run that ended without a value: a failed measurement, or an abandoned suggestion.
/// Recorded and shown; a failed one is part of the model under `model.failures: impute`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct EndedRunView {
    /// `failed` or `abandoned`.
    pub kind: RunEnd,
    /// The suggestion it ran; null for a failed setting of the client's own.
    pub suggestion_id: Option<Uuid>,
    #[schema(value_type = std::collections::BTreeMap<String, crate::domain::space::ParamValue>)]
    pub params: Params,
    /// Session time: a failure's measurement, an abandoned suggestion's target time.
    pub t: f64,
    /// The client's words on a failure.
    pub reason: Option<String>,
    /// The client's notes on the run, as sent.
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<Metadata>,
    pub created_at: DateTime<Utc>,
}

impl From<EndedRun> for EndedRunView {
    fn from(run: EndedRun) -> Self {
        EndedRunView {
            kind: run.kind,
            suggestion_id: run.suggestion_id,
            params: run.params,
            t: run.t,
            reason: run.reason,
            metadata: run.metadata,
            created_at: run.created_at,
        }
    }
}

/// Response time at one dataset size: the seconds between two consecutive suggests (n at
/// the first), averaged over `count` samples. The model view has one per distinct n; the
/// timeline's are single samples (`count` 1).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ResponseTimeSampleView {
    pub n: i64,
    pub seconds: f64,
    #[schema(minimum = 1)]
    pub count: i64,
}

/// The response-time model R(n).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ResponseTimeView {
    pub samples: Vec<ResponseTimeSampleView>,
    /// [c0, c1, c2, c3] of R̂(n) = c0 + c1 n + c2 n² + c3 n³; null until 4 distinct n exist.
    pub coefficients: Option<[f64; 4]>,
}

/// The server's own compute time for one kind of call (not the network, not the client).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ComputeTimeView {
    /// `suggest` or `observe`.
    pub kind: String,
    pub count: i64,
    pub mean_seconds: f64,
    pub max_seconds: f64,
}

/// The model behind a session.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ModelView {
    pub dataset_size: i64,
    pub max_dataset_size: Option<i64>,
    /// Null until the model has been fitted.
    pub hyperparameters: Option<FittedHyperparameters>,
    /// The priors the next fit maximises under (`model.hyperpriors: robust`), for the
    /// active data now (l_T's depends on their time span); null under `none` and until
    /// the model has been fitted.
    pub hyperpriors: Option<HyperpriorSet>,
    /// Seconds added to a suggestion's time (configured or the median past delay).
    pub lead: f64,
    pub response_time: ResponseTimeView,
    pub compute_time: Vec<ComputeTimeView>,
    /// Relevance of each active observation now (spatio-temporal models only), oldest first.
    pub relevance: Vec<RelevanceView>,
    /// The priors and what the data say about them (algorithms with priors only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prior_selection: Option<PriorSelectionView>,
    /// The algorithm's saved state (its prior-selection part is shown above instead).
    pub algorithm_state: PolicyState,
}

/// Body of `POST /v1/sessions/{id}/predict`.
#[derive(Clone, Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PredictRequest {
    #[schema(value_type = Vec<std::collections::BTreeMap<String, crate::domain::space::ParamValue>>, min_items = 1, max_items = 10000)]
    pub points: Vec<Params>,
    /// Session time (default: now for wall-clock sessions, the latest observation's time
    /// for client-time sessions).
    #[schema(minimum = -1e10, maximum = 1e10)]
    pub t: Option<f64>,
}

/// The posterior of the objective at one point.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Prediction {
    #[schema(value_type = std::collections::BTreeMap<String, crate::domain::space::ParamValue>)]
    pub params: Params,
    pub mean: f64,
    pub std: f64,
}

/// Response of predict.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct PredictResponse {
    pub t: f64,
    pub predictions: Vec<Prediction>,
}

/// The current recommendation: the maximiser (minimiser for `minimize`) of the posterior
/// mean at time t.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Best {
    pub t: f64,
    #[schema(value_type = std::collections::BTreeMap<String, crate::domain::space::ParamValue>)]
    pub params: Params,
    pub arm: Option<String>,
    pub mean: f64,
    pub std: f64,
}

/// One suggest or observe call of a session and what it left the model as.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Step {
    /// Increasing within the session; pass as `after` for the next page.
    pub id: i64,
    /// `suggest` or `observe`.
    pub kind: String,
    /// Session time of the call.
    pub t: f64,
    /// Active observations when the call began.
    pub dataset_size: i64,
    /// Server compute time of the call.
    pub compute_seconds: f64,
    /// The model after the step (null for steps recorded before snapshots were kept).
    pub snapshot: Option<StepSnapshot>,
}

impl From<StoredCall> for Step {
    fn from(call: StoredCall) -> Self {
        Step {
            id: call.id,
            kind: call.kind,
            t: call.t,
            dataset_size: call.dataset_size,
            compute_seconds: call.compute_seconds,
            snapshot: call.snapshot,
        }
    }
}

/// A page of steps.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct StepList {
    pub steps: Vec<Step>,
    /// Pass as `after` for the next page; null on the last page.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_after: Option<i64>,
}

/// Something a step found worth telling the operator (docs/events.md).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Event {
    /// Numbers every event of the server's database, in commit order: the id of the
    /// stream `GET /v1/events` (`Last-Event-ID`) and of webhook deliveries
    /// (`Tvbo-Event-Id`); receivers deduplicate by it.
    pub id: i64,
    /// The session it is about.
    pub session: Uuid,
    /// The session's events count from 1, in the order their steps were committed; pass
    /// as `after` for the next page.
    pub seq: i64,
    /// The kind (docs/events.md lists them); skip kinds you do not know (a newer server
    /// adds kinds).
    pub kind: String,
    /// The id of the step (`GET …/steps`) that found it (a `session-idle` event: the
    /// session's newest step).
    pub step: i64,
    /// Session time of that step.
    pub t: f64,
    /// When it was committed.
    pub at: DateTime<Utc>,
    /// What the kind says of it (docs/events.md).
    #[schema(value_type = Object)]
    pub data: serde_json::Value,
}

impl From<EventRecord> for Event {
    fn from(record: EventRecord) -> Self {
        let event = record.event;
        Event {
            id: record.id,
            session: record.session,
            seq: event.seq,
            kind: event.kind,
            step: event.step,
            t: event.t,
            at: event.created_at,
            data: event.data,
        }
    }
}

/// A page of events.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct EventList {
    pub events: Vec<Event>,
    /// Pass as `after` for the next page; null on the last page.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_after: Option<i64>,
}

/// An observation on the timeline.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct TimelineObservation {
    pub seq: i64,
    pub t: f64,
    pub value: f64,
    #[schema(value_type = std::collections::BTreeMap<String, crate::domain::space::ParamValue>)]
    pub params: Params,
    /// Instantaneous regret: as the client reported it, or estimated (`estimated`) when
    /// the observation arrived as the posterior optimum's value the last suggest
    /// recorded, less the value measured (at least 0); null before any model.
    pub regret: Option<f64>,
    pub estimated: bool,
    pub active: bool,
    pub removed_t: Option<f64>,
    pub removed_reason: Option<String>,
    /// The client's notes on the run, as sent.
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<Metadata>,
}

/// Observations forgotten for one reason at one step, or, past the point budget, over a
/// span of consecutive steps.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ForgetEvent {
    /// Session time of the (first) step that forgot them.
    pub t: f64,
    /// Session time of the last step of the span (`t` for one step).
    pub t_end: f64,
    /// `reset`, `budget` or `relevance`.
    pub reason: String,
    pub count: i64,
}

/// A session's history for plotting: observations, steps and response-time samples,
/// each downsampled past the point budget keeping every bucket's first, last, minimum
/// and maximum (of the value and the regret; of the dataset size; of the seconds).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Timeline {
    /// Observations in the session (before downsampling).
    pub observation_count: i64,
    /// Steps in the session (before downsampling).
    pub step_count: i64,
    /// Observations whose regret the client reported.
    pub reported_regrets: i64,
    /// Observations whose regret the model estimated (the client reported none).
    pub estimated_regrets: i64,
    /// Mean regret over every observation that has one (reported, else estimated).
    pub average_regret: Option<f64>,
    /// The regret now: the rolling regret over every observation and whether the
    /// session keeps up.
    pub tracking: Tracking,
    pub observations: Vec<TimelineObservation>,
    pub steps: Vec<Step>,
    /// Response-time samples (downsampled like the rest), and the cubic fitted to all of
    /// them at the newest step kept.
    pub response_time: ResponseTimeView,
    /// Forgetting events in time order.
    pub forgotten: Vec<ForgetEvent>,
    /// Runs that ended without a value in the session (failed or abandoned).
    pub ended_run_count: i64,
    /// The newest of them, as many as the point budget, in order of recording.
    pub ended_runs: Vec<EndedRunView>,
}
