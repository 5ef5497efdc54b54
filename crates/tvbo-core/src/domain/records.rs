//! A session's state as the store keeps it (the session, its observations, suggestions
//! and response-time samples), the snapshot a change is planned from ([`History`]) and the
//! change itself ([`ChangeSet`]), which a store applies atomically.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::domain::checked::CheckedConfig;
use crate::domain::hyperpriors::FitReport;
use crate::domain::input::Metadata;
use crate::domain::space::Params;

/// The tenant of sessions made with authentication off, or before API keys existed.
pub const DEFAULT_TENANT: &str = "default";

/// A session as stored, with its counts.
#[derive(Clone, Debug)]
pub struct SessionRow {
    pub id: Uuid,
    /// The tenant that owns it: only that tenant's keys (and admin keys) see it.
    pub tenant: String,
    /// Checked as it is read: a stored configuration that no longer checks does not load.
    pub config: CheckedConfig,
    pub created_at: DateTime<Utc>,
    pub status: String,
    /// Incremented by every committed change.
    pub version: i64,
    /// The policy's saved state (JSON).
    pub state: serde_json::Value,
    /// Suggestions handed out so far.
    pub suggest_count: i64,
    /// Session time and active dataset size at the last suggest call.
    pub last_suggest: Option<(f64, i64)>,
    /// The posterior optimum's value (objective's sign) the last suggest recorded: what an
    /// observation's regret is estimated against when the client reports none.
    pub last_optimum_mean: Option<f64>,
    pub observation_count: i64,
    pub dataset_size: i64,
    pub pending_count: i64,
}

/// Status of a suggestion.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SuggestionStatus {
    Pending,
    Observed,
    Expired,
    /// Its measurement failed (an [`EndedRun`] of kind [`RunEnd::Failed`]).
    Failed,
    /// The client abandoned it (an [`EndedRun`] of kind [`RunEnd::Abandoned`]).
    Abandoned,
}

impl SuggestionStatus {
    const ALL: [SuggestionStatus; 5] = [
        SuggestionStatus::Pending,
        SuggestionStatus::Observed,
        SuggestionStatus::Expired,
        SuggestionStatus::Failed,
        SuggestionStatus::Abandoned,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            SuggestionStatus::Pending => "pending",
            SuggestionStatus::Observed => "observed",
            SuggestionStatus::Expired => "expired",
            SuggestionStatus::Failed => "failed",
            SuggestionStatus::Abandoned => "abandoned",
        }
    }

    /// The status of its name; `None` for any other text.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|status| status.as_str() == s)
    }
}

/// How a run ended without a value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum RunEnd {
    /// The client measured and the measurement failed (`"failed": true`).
    Failed,
    /// The client gave the suggestion up before measuring it.
    Abandoned,
}

impl RunEnd {
    pub fn as_str(self) -> &'static str {
        match self {
            RunEnd::Failed => "failed",
            RunEnd::Abandoned => "abandoned",
        }
    }

    /// The kind of its name; `None` for any other text.
    pub fn parse(s: &str) -> Option<Self> {
        [RunEnd::Failed, RunEnd::Abandoned]
            .into_iter()
            .find(|end| end.as_str() == s)
    }
}

/// A run that ended without a value: recorded and shown; a failed one is part of the
/// model under `model.failures: impute` ([`History::failed`]).
#[derive(Clone, Debug, PartialEq)]
pub struct EndedRun {
    /// The suggestion it ran; `None` for a failed setting of the client's own.
    pub suggestion_id: Option<Uuid>,
    pub kind: RunEnd,
    pub params: Params,
    /// Session time: a failure's measurement, an abandoned suggestion's target time.
    pub t: f64,
    /// The client's words on a failure (at most [`MAX_REASON_LEN`] characters).
    pub reason: Option<String>,
    /// The client's notes on the run (a failure's `metadata`).
    pub metadata: Option<Metadata>,
    pub created_at: DateTime<Utc>,
}

/// Longest `reason` of a failed run, in characters.
pub const MAX_REASON_LEN: usize = 500;

/// A suggestion handed out to a client.
#[derive(Clone, Debug, PartialEq)]
pub struct SuggestionRow {
    pub id: Uuid,
    /// 0, 1, ... per session, in the order suggestions were handed out.
    pub ordinal: i64,
    pub params: Params,
    /// The point in `[0,1]^d` the model saw.
    pub unit: Vec<f64>,
    pub arm: Option<String>,
    /// Session time when it was handed out.
    pub issued_t: f64,
    /// Session time it targets (issued_t + lead).
    pub t: f64,
    pub created_at: DateTime<Utc>,
    pub status: SuggestionStatus,
}

/// An observation, active or forgotten.
#[derive(Clone, Debug, PartialEq)]
pub struct ObservationRow {
    /// 1, 2, ... per session, in the order observations were committed.
    pub seq: i64,
    pub suggestion_id: Option<Uuid>,
    pub params: Params,
    pub unit: Vec<f64>,
    pub value: f64,
    /// Session time of the measurement.
    pub t: f64,
    pub measured_at: Option<DateTime<Utc>>,
    pub regret: Option<f64>,
    /// When the client reported no regret: the posterior optimum's value the last
    /// suggest recorded, less the value measured (in the goal's direction, at least 0).
    pub regret_estimate: Option<f64>,
    pub active: bool,
    pub removed_at: Option<DateTime<Utc>>,
    /// Session time of the step that forgot it (null for observations forgotten before
    /// this was recorded, and for active ones).
    pub removed_t: Option<f64>,
    pub removed_reason: Option<String>,
    /// The client's notes on the run; `None` in a [`History`], which no model reads them
    /// from.
    pub metadata: Option<Metadata>,
    pub created_at: DateTime<Utc>,
}

/// One recorded response-time sample: n at the first of two consecutive suggests, and the
/// seconds between them (BOLT, Section 4).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ResponseTimeSample {
    pub n: i64,
    pub seconds: f64,
}

/// The response-time samples of one dataset size n, summed: all that R(n)'s
/// least-squares fit needs of them (BOLT, Section 4). A session holds one per distinct
/// n, so reading them costs the number of sizes it has run at, not its age.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ResponseTimeSummary {
    pub n: i64,
    /// Samples at this n (≥ 1).
    pub count: i64,
    /// Their seconds, summed.
    pub total_seconds: f64,
}

impl ResponseTimeSummary {
    /// Mean seconds of the samples.
    pub fn mean_seconds(&self) -> f64 {
        self.total_seconds / self.count as f64
    }

    /// Adds `sample` to the summary of its n in `summaries` (kept sorted by n), as a
    /// commit adds it to the stored ones.
    pub fn fold(summaries: &mut Vec<ResponseTimeSummary>, sample: ResponseTimeSample) {
        match summaries.binary_search_by_key(&sample.n, |s| s.n) {
            Ok(i) => {
                summaries[i].count += 1;
                summaries[i].total_seconds += sample.seconds;
            }
            Err(i) => summaries.insert(
                i,
                ResponseTimeSummary {
                    n: sample.n,
                    count: 1,
                    total_seconds: sample.seconds,
                },
            ),
        }
    }
}

/// One suggest or observe call: its server compute time and what it left the model as.
#[derive(Clone, Debug, PartialEq)]
pub struct CallRecord {
    pub kind: &'static str,
    pub t: f64,
    /// Active observations when the call began.
    pub dataset_size: i64,
    pub compute_seconds: f64,
    pub snapshot: Option<StepSnapshot>,
}

/// The model as a step left it, recorded when the step is made (the posterior argmax at
/// that time cannot be recomputed honestly later, once data is forgotten): the history
/// the dashboard draws.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct StepSnapshot {
    /// Active observations after the step.
    pub dataset_size: i64,
    /// BOLT's recommended dataset size n* (BOLT §4), once computed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_dataset_size: Option<u64>,
    /// W-DBO's removal budget, in units of ln(1 + relevance) (W-DBO §4).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<f64>,
    /// Hyperparameters of the last fit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hyperparameters: Option<FittedHyperparameters>,
    /// The posterior mean's maximiser at the suggestions' target time (suggest steps).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub optimum: Option<RecordedOptimum>,
    /// Each prior's hyperposterior probability P_t(p) (HP-GP-TS, MAP-GP-TS).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prior_probabilities: Option<Vec<f64>>,
    /// Whether each prior is still in the active set P_t (PE-GP-UCB, PE-GP-TS).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priors_active: Option<Vec<bool>>,
    /// [c0, c1, c2, c3] of the response time R̂(n) = c0 + c1 n + c2 n² + c3 n³ fitted to
    /// every sample so far (observe steps, once 4 distinct n exist; BOLT §4).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_time_fit: Option<[f64; 4]>,
    /// Why the policy's state after this step was not saved (it held a number that is
    /// not finite, which could not be read back): the session kept its previous state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_not_saved: Option<String>,
    /// What this step's hyperparameter fit did beyond its search, when it did anything
    /// but end inside its box.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fit: Option<FitReport>,
}

/// Hyperparameters of the last fit; variances on standardised observations (warped first
/// under `model.warping`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct FittedHyperparameters {
    /// λ, the prior variance of the latent function.
    pub signal_variance: f64,
    /// l_S, on the unit cube.
    pub spatial_lengthscale: f64,
    /// l_T in seconds; null for kernels without time.
    pub temporal_lengthscale: Option<f64>,
    /// σ², the observation-noise variance.
    pub noise_variance: f64,
    /// TV-GP-UCB's forgetting rate per second, ε = 1 − e^{−2/l_T} (null for other
    /// algorithms).
    pub epsilon: Option<f64>,
    /// l_C, the lengthscale of the overlap kernel over the categorical parameters: their
    /// choices are correlated e^{−1/l_C} a change apart (absent without categorical
    /// parameters).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub categorical_lengthscale: Option<f64>,
    /// l_d of each continuous parameter, on the unit interval, under
    /// `model.lengthscales: per_parameter` (`spatial_lengthscale` is their geometric
    /// mean): what the model learned matters. A parameter whose lengthscale is a few times
    /// the shortest hardly changes the value; one near the shortest is what it turns on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lengthscales: Option<std::collections::BTreeMap<String, f64>>,
    /// λ_L, the prior variance of the drifting level (on the standardised values, as
    /// λ), under `model.level: drifting`: how much of the objective's variation the
    /// model puts on a level that moves with time alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub level_variance: Option<f64>,
    /// l_L in seconds, how fast the drifting level moves (under `model.level: drifting`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub level_lengthscale: Option<f64>,
}

/// The posterior mean's maximiser at time `t`, on the user's scale.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RecordedOptimum {
    /// Session time the optimum is for (the suggestions' target time).
    pub t: f64,
    #[cfg_attr(feature = "openapi", schema(value_type = std::collections::BTreeMap<String, crate::domain::space::ParamValue>))]
    pub params: Params,
    /// The arm's name (arm sessions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arm: Option<String>,
    /// Posterior mean there (in the objective's units and sign).
    pub mean: f64,
}

/// An observation being forgotten.
#[derive(Clone, Debug, PartialEq)]
pub struct Deactivation {
    pub seq: i64,
    pub reason: String,
    /// Session time of the step that forgets it.
    pub t: f64,
}

/// How many of a session's newest failed runs a [`History`] holds for its model
/// (`model.failures: impute`; the model takes at most as many as it has active
/// observations, so this bounds only what a history keeps in memory).
pub const MODEL_FAILED_RUNS: usize = 1000;

/// A failed run as a model reads it: the setting and the session time of the failure.
#[derive(Clone, Debug, PartialEq)]
pub struct FailedRun {
    pub params: Params,
    pub t: f64,
}

/// How many recent measurement delays feed the lead-time estimate ([`History::recent_delays`]).
pub const RECENT_DELAYS: i64 = 50;

/// Everything a session needs to rebuild its model.
#[derive(Clone, Debug)]
pub struct History {
    pub session: SessionRow,
    pub active: Vec<ObservationRow>,
    pub pending: Vec<SuggestionRow>,
    /// Delays between handing out and measuring, of the latest observed suggestions.
    pub recent_delays: Vec<f64>,
    pub next_seq: i64,
    /// Runs of the session that ended without a value, failed or abandoned (what
    /// `Limits::max_ended_runs` caps).
    pub ended_runs: usize,
    /// The newest [`MODEL_FAILED_RUNS`] failed runs, in order of recording.
    pub failed: Vec<FailedRun>,
}

/// A change [`History::apply`] cannot replay in memory: the history has to be read back.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("the change cannot be replayed on the history: {0}")]
pub struct NotReplayable(&'static str);

impl History {
    /// The history of a session nothing has happened to yet.
    pub fn new(session: SessionRow) -> History {
        History {
            session,
            active: Vec::new(),
            pending: Vec::new(),
            recent_delays: Vec::new(),
            next_seq: 1,
            ended_runs: 0,
            failed: Vec::new(),
        }
    }

    /// This history turned into the one a store loads back after committing `change` onto
    /// it (its version one higher): the same rows, the same order, timestamps to the
    /// microsecond as stored, so that a model planned from either is the same.
    /// `issued_t` gives the hand-out time of an observed suggestion that is no longer
    /// pending. `NotReplayable` (and the history left part-way) when it knows none, or
    /// when the change makes a suggestion pending again: the lead-time delays and the
    /// pending list need rows the history does not have.
    pub fn apply(
        &mut self,
        change: &ChangeSet,
        issued_t: impl Fn(Uuid) -> Option<f64>,
    ) -> Result<(), NotReplayable> {
        // Delays of the new observations of suggestions, newest (highest seq) first, as
        // the store's query orders them; the suggestions are looked up before their
        // status changes below.
        for o in &change.new_observations {
            let Some(suggestion) = o.suggestion_id else {
                continue;
            };
            let issued_t = self
                .pending
                .iter()
                .chain(&change.new_suggestions)
                .find(|g| g.id == suggestion)
                .map(|g| g.issued_t)
                .or_else(|| issued_t(suggestion))
                .ok_or(NotReplayable("an observed suggestion is not known"))?;
            self.recent_delays.insert(0, o.t - issued_t);
        }
        self.recent_delays.truncate(RECENT_DELAYS as usize);
        for g in &change.new_suggestions {
            if g.status == SuggestionStatus::Pending {
                self.pending.push(SuggestionRow {
                    created_at: as_stored(g.created_at),
                    ..g.clone()
                });
            }
        }
        for (id, status) in &change.suggestion_status {
            if *status == SuggestionStatus::Pending {
                return Err(NotReplayable("a suggestion is made pending again"));
            }
            self.pending.retain(|g| g.id != *id);
        }
        let mut last_seq = self.next_seq - 1;
        for o in &change.new_observations {
            last_seq = last_seq.max(o.seq);
            if o.active {
                self.active.push(ObservationRow {
                    metadata: None,
                    measured_at: o.measured_at.map(as_stored),
                    removed_at: o.removed_at.map(as_stored),
                    created_at: as_stored(o.created_at),
                    ..o.clone()
                });
            }
        }
        self.next_seq = last_seq + 1;
        for d in &change.deactivate {
            self.active.retain(|o| o.seq != d.seq);
        }
        self.ended_runs += change.ended_runs.len();
        self.failed.extend(
            change
                .ended_runs
                .iter()
                .filter(|run| run.kind == RunEnd::Failed)
                .map(|run| FailedRun {
                    params: run.params.clone(),
                    t: run.t,
                }),
        );
        let excess = self.failed.len().saturating_sub(MODEL_FAILED_RUNS);
        self.failed.drain(..excess);
        let session = &mut self.session;
        session.version += 1;
        if let Some(state) = &change.state {
            session.state = state.clone();
        }
        session.suggest_count += change.new_suggestions.len() as i64;
        session.last_suggest = change.last_suggest.or(session.last_suggest);
        session.last_optimum_mean = change.last_optimum_mean.or(session.last_optimum_mean);
        session.observation_count = last_seq;
        session.dataset_size = self.active.len() as i64;
        session.pending_count = self.pending.len() as i64;
        Ok(())
    }
}

/// `at` as the store keeps it: to the microsecond.
fn as_stored(at: DateTime<Utc>) -> DateTime<Utc> {
    DateTime::from_timestamp_micros(at.timestamp_micros()).unwrap_or(at)
}

/// An atomic change to one session.
#[derive(Clone, Debug, Default)]
pub struct ChangeSet {
    pub new_suggestions: Vec<SuggestionRow>,
    pub suggestion_status: Vec<(Uuid, SuggestionStatus)>,
    pub new_observations: Vec<ObservationRow>,
    /// Runs that ended without a value (their suggestions' statuses are in
    /// `suggestion_status`).
    pub ended_runs: Vec<EndedRun>,
    pub deactivate: Vec<Deactivation>,
    pub state: Option<serde_json::Value>,
    pub last_suggest: Option<(f64, i64)>,
    /// A new `SessionRow::last_optimum_mean`.
    pub last_optimum_mean: Option<f64>,
    pub response_time: Option<ResponseTimeSample>,
    pub calls: Vec<CallRecord>,
    /// What the change's step found worth telling (stored with it: an outbox).
    pub events: Vec<crate::domain::events::NewEvent>,
}
