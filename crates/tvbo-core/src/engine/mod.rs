//! The engine: a session's suggest and observe steps as pure, synchronous functions.
//!
//! Given a snapshot of a session ([`History`], the store's read of it) and a request, the
//! engine checks the request, runs the session's policy and returns the change to make
//! ([`ChangeSet`](crate::domain::records::ChangeSet)); it reads no clock and touches no
//! store. It starts no task and keeps no thread: a suggest may lend UCB's pieces to
//! scoped threads for the cores its caller grants ([`Cores`](crate::acquisition::Cores)),
//! joined before it returns.
//! The server's service drives it between a load and a commit; `tvbo-bench` and
//! embedding programs drive it over an in-memory session ([`LocalSession`]), so a
//! benchmark measures exactly the server's compute path.

mod events;
mod local;
mod model;
mod observe;
pub mod reads;
pub mod regret;
mod suggest;

use chrono::{DateTime, Utc};
use rand::SeedableRng;
use uuid::Uuid;

use crate::domain::InvalidInput;
use crate::domain::checked::{CheckedConfig, PolicySettings};
use crate::domain::config::{CreateSession, Failures, SessionConfig};
use crate::domain::events::NewEvent;
use crate::domain::hyperpriors::FitReport;
use crate::domain::records::{FailedRun, History, ObservationRow, SessionRow, StepSnapshot};
use crate::domain::time::median_lead;
use crate::policy::priors::check_priors;
use crate::policy::{Observation, PolicyError, PolicyRng, PolicyState, failures};

pub use local::LocalSession;
pub use model::{CurrentModel, OptimumAt, fitted_hyperparameters, step_snapshot};
pub use observe::{ObserveSnapshot, plan_abandon, plan_observe};
pub use suggest::plan_suggest;

/// Caps on the work and the rows one session may ask of the server, and the memory a
/// server's large reads may hold (docs/api.md, "Limits").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Most pending (handed out, not yet observed, not expired) suggestions per session:
    /// each is conditioned on in every later suggest, so they cost like observations.
    pub max_pending: usize,
    /// Most active observations of a session whose algorithm does not bound its own
    /// dataset (every algorithm but BOLT, whose `max_dataset_size` is its bound).
    pub max_active_observations: usize,
    /// Most runs of a session that ended without a value (failed or abandoned): each is
    /// a row the session keeps, with up to 500 characters of reason and 4 KiB of
    /// metadata (a recent failed one reaches the model under `model.failures: impute`).
    pub max_ended_runs: usize,
    /// Bytes of memory the large reads (timelines) of one server process may hold at
    /// once: a budget of the process, not of a session (the engine does not read it).
    pub read_memory: usize,
}

impl Limits {
    /// Default of [`Limits::max_pending`].
    pub const DEFAULT_MAX_PENDING: usize = 256;
    /// Default of [`Limits::max_active_observations`]: a fit at this size takes seconds,
    /// well inside the request timeout, on one core.
    pub const DEFAULT_MAX_ACTIVE_OBSERVATIONS: usize = 2000;
    /// Default of [`Limits::max_ended_runs`]: a session of a year, a run every five
    /// minutes and one in ten failing, ends about 10,000 runs without a value; at the
    /// largest (reason and metadata), 70 MB of rows.
    pub const DEFAULT_MAX_ENDED_RUNS: usize = 10_000;
    /// Default of [`Limits::read_memory`]: 256 MiB, a quarter of the 1 GiB a replica is
    /// given in deploy/kubernetes.
    pub const DEFAULT_READ_MEMORY: usize = 256 << 20;
}

/// Model work one suggest call may ask for, in units of (suggestions × N²), N the
/// observations and pending suggestions each suggestion's model conditions on: every
/// suggestion after the first adds a conditioned point and searches an acquisition
/// whose variance costs O(N²) per evaluation. Up to N = 1,250 all 64 suggestions; at
/// N = 2,000 (the cap on a session's active observations) 25, which cost about 2 s of
/// one core beyond the call's fit (docs/api.md, "Limits", has the measurement). One
/// suggestion is always allowed.
pub const MAX_SUGGEST_WORK: f64 = 1e8;

/// The most suggestions one call may ask of a model conditioned on `conditioned` points
/// ([`MAX_SUGGEST_WORK`]), at least 1.
pub fn max_suggestions_for(conditioned: usize) -> usize {
    let n = conditioned.max(1) as f64;
    ((MAX_SUGGEST_WORK / (n * n)).floor() as usize).max(1)
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_pending: Self::DEFAULT_MAX_PENDING,
            max_active_observations: Self::DEFAULT_MAX_ACTIVE_OBSERVATIONS,
            max_ended_runs: Self::DEFAULT_MAX_ENDED_RUNS,
            read_memory: Self::DEFAULT_READ_MEMORY,
        }
    }
}

/// Why a step was refused or failed.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// Bad input, naming the field.
    #[error(transparent)]
    Invalid(#[from] InvalidInput),
    /// The request conflicts with the session's state (a suggestion observed twice).
    #[error("{}: {}", .0.field, .0.message)]
    Conflict(InvalidInput),
    /// A cap of [`Limits`] is reached: the kind of cap, and the field to name.
    #[error("{}: {}", .1.field, .1.message)]
    Limit(&'static str, InvalidInput),
    /// The session's saved policy state does not parse.
    #[error("policy state: {0}")]
    CorruptState(String),
    #[error(transparent)]
    Policy(#[from] PolicyError),
}

/// The configuration of a new session: the request checked and filled in with the
/// papers' defaults, and its priors built once to refuse any that is not a valid
/// covariance. Factorises m × m matrices for arm priors: run it off an async runtime.
pub fn new_session_config(
    request: CreateSession,
    seed: u64,
) -> Result<CheckedConfig, InvalidInput> {
    let config = CheckedConfig::from_request(request, seed)?;
    check_priors(&config)?;
    Ok(config)
}

/// The row of a new session of `tenant`: nothing suggested or observed yet, the policy's
/// initial state.
pub fn new_session_row(
    id: Uuid,
    tenant: &str,
    config: CheckedConfig,
    created_at: DateTime<Utc>,
) -> SessionRow {
    SessionRow {
        id,
        tenant: tenant.to_string(),
        config,
        created_at,
        status: "active".into(),
        version: 0,
        state: serde_json::to_value(PolicyState::default()).expect("state serialises"),
        suggest_count: 0,
        last_suggest: None,
        last_optimum_mean: None,
        observation_count: 0,
        dataset_size: 0,
        pending_count: 0,
    }
}

/// The RNG of the `ordinal`-th call of a session with `seed` (splitmix64 of both).
pub fn call_rng(seed: u64, ordinal: u64) -> PolicyRng {
    let mut z = seed ^ ordinal.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    PolicyRng::seed_from_u64(z ^ (z >> 31))
}

/// The policy's saved state of a session.
pub fn policy_state(row: &SessionRow) -> Result<PolicyState, EngineError> {
    serde_json::from_value(row.state.clone()).map_err(|e| EngineError::CorruptState(e.to_string()))
}

/// What a step stores of the policy's state: its JSON when it reads back as the same
/// state; otherwise (a number that is not finite, which JSON cannot hold: stored as null,
/// it would fail every later call's read) the session's previous state, with the reason,
/// logged, for the step's record.
pub(crate) struct SavedState {
    pub json: serde_json::Value,
    pub state: PolicyState,
    pub not_saved: Option<String>,
}

/// The JSON of `value` if it reads back as `value` itself (JSON has no NaN nor
/// infinity: serde_json writes them as null).
fn json_that_reads_back<T>(value: &T) -> Option<serde_json::Value>
where
    T: serde::Serialize + serde::de::DeserializeOwned + PartialEq,
{
    let json = serde_json::to_value(value).ok()?;
    let read = serde_json::from_value::<T>(json.clone()).ok()?;
    (read == *value).then_some(json)
}

/// The [`SavedState`] of `state`, computed by a step of `session`.
pub(crate) fn saved_state(
    session: &SessionRow,
    state: PolicyState,
) -> Result<SavedState, EngineError> {
    if let Some(json) = json_that_reads_back(&state) {
        return Ok(SavedState {
            json,
            state,
            not_saved: None,
        });
    }
    let reason = "the policy's state held a number that is not finite (an overflow in the \
                  model's arithmetic); the session keeps its previous state";
    tracing::warn!(session = %session.id, "{reason}");
    Ok(SavedState {
        json: session.state.clone(),
        state: policy_state(session)?,
        not_saved: Some(reason.to_string()),
    })
}

/// What a step leaves, as stored: the policy's state ([`saved_state`], with the drift
/// events' own state), the record of the model ([`step_snapshot`], the session having
/// `issued` suggestions after the step, with `response_time_fit`, the state's note and
/// the fit's report when it is notable), reduced to what reads back
/// ([`storable_snapshot`]), and the events the step found at session time `t`
/// (`events::step_events`, `events::drift_events`; none when the state was not saved).
pub(crate) struct StepOutcome {
    pub state: serde_json::Value,
    pub snapshot: StepSnapshot,
    pub events: Vec<NewEvent>,
}

/// The [`StepOutcome`] of a step of `session` that took the policy from `before` (the
/// session's saved state, as the planner read it) to `state`; `data` is what the step's
/// data say to the drift events.
#[allow(clippy::too_many_arguments)]
pub(crate) fn step_outcome(
    session: &SessionRow,
    before: PolicyState,
    mut state: PolicyState,
    dataset_size: usize,
    optimum_at: Option<OptimumAt<'_>>,
    response_time_fit: Option<[f64; 4]>,
    issued: u64,
    data: StepData,
    t: f64,
) -> Result<StepOutcome, EngineError> {
    // A fit reports itself, or (TV-GP-UCB over a prior's arms) shows in the
    // hyperparameters it leaves.
    let fitted = state.last_fit.is_some() || state.hyperparameters != before.hyperparameters;
    let fit = state.last_fit.take().filter(FitReport::is_notable);
    let saved = saved_state(session, state)?;
    // The recommendation of a suggest given held coordinates is for those values only.
    let held: Vec<usize> = optimum_at
        .as_ref()
        .map(|at| at.fixed.iter().map(|&(i, _)| i).collect())
        .unwrap_or_default();
    let mut snapshot = step_snapshot(
        &session.config,
        &saved.state,
        dataset_size,
        optimum_at,
        issued,
    )?;
    let kept_previous = saved.not_saved.is_some();
    snapshot.response_time_fit = response_time_fit;
    snapshot.state_not_saved = saved.not_saved;
    snapshot.fit = fit;
    let snapshot = storable_snapshot(snapshot);
    if kept_previous {
        return Ok(StepOutcome {
            state: saved.json,
            snapshot,
            events: Vec::new(),
        });
    }
    let mut after = saved.state;
    let mut events = events::step_events(&session.config, &before, &after, t);
    let seen = events::StepSeen {
        recommendation: snapshot
            .optimum
            .as_ref()
            .and_then(|optimum| events::recommendation(&session.config, optimum, held)),
        regrets: data.regrets,
        fit: after
            .hyperparameters
            .filter(|_| fitted && session.config.algorithm.uses_time())
            .map(|hyperparameters| events::LengthscaleFit {
                lengthscale: hyperparameters.temporal_lengthscale,
                span: data.span,
            }),
    };
    let reset = after.resets > before.resets;
    let (drift, found) = events::drift_events(&session.config.events, before.drift, reset, seen, t);
    events.extend(found);
    after.drift = drift;
    Ok(match json_that_reads_back(&after) {
        Some(state) => StepOutcome {
            state,
            snapshot,
            events,
        },
        None => StepOutcome {
            state: saved.json,
            snapshot,
            events: Vec::new(),
        },
    })
}

/// What a step's data say to the drift events (`events::drift_events`).
pub(crate) struct StepData {
    /// The regrets of the step's new observations, in order (reported, else estimated;
    /// those with neither left out); none for a suggest.
    pub regrets: Vec<f64>,
    /// Last minus first session time of the data the step's model was fitted to.
    pub span: f64,
}

/// `snapshot` as it can be stored: a recorded optimum that is not finite is left out
/// (`last_optimum_mean` reads it back), and a snapshot that still does not read back is
/// reduced to its dataset size and notes.
pub(crate) fn storable_snapshot(mut snapshot: StepSnapshot) -> StepSnapshot {
    if json_that_reads_back(&snapshot).is_some() {
        return snapshot;
    }
    snapshot.optimum = None;
    if json_that_reads_back(&snapshot).is_some() {
        return snapshot;
    }
    StepSnapshot {
        dataset_size: snapshot.dataset_size,
        state_not_saved: snapshot.state_not_saved,
        fit: snapshot.fit,
        ..StepSnapshot::default()
    }
}

/// Observations as the policy sees them (internal "larger is better" scale).
pub fn policy_data(config: &SessionConfig, rows: &[ObservationRow]) -> Vec<Observation> {
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

/// What a session's model is fitted to: [`policy_data`] of its `active` observations,
/// and, under `model.failures: impute` for a model over the unit cube (not a prior over
/// arms), its recent `failed` runs at an imputed value ([`failures::with_failures`]).
pub fn model_data(
    config: &CheckedConfig,
    active: &[ObservationRow],
    failed: &[FailedRun],
) -> Vec<Observation> {
    let data = policy_data(config, active);
    let surrogate = matches!(config.policy(), PolicySettings::Surrogate { .. });
    if config.model.failures != Failures::Impute || !surrogate || failed.is_empty() {
        return data;
    }
    let space = config.space();
    let points: Vec<(Vec<f64>, f64)> = failed
        .iter()
        // A setting of the session's space (checked when the failure was taken).
        .filter_map(|run| Some((space.to_unit(&run.params, "failed").ok()?, run.t)))
        .collect();
    failures::with_failures(data, &points)
}

/// Seconds between handing a suggestion out and its measurement: configured, or the
/// median of the session's recent delays.
pub fn lead(history: &History) -> f64 {
    history
        .session
        .config
        .time
        .lead
        .unwrap_or_else(|| median_lead(&history.recent_delays))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::config::CreateSession;

    fn row() -> SessionRow {
        let request: CreateSession = serde_json::from_value(serde_json::json!({
            "parameters": [{"name": "x", "low": 0, "high": 1}],
            "algorithm": {"name": "w-dbo"},
        }))
        .unwrap();
        let config = new_session_config(request, 1).unwrap();
        let mut row = new_session_row(Uuid::new_v4(), "t", config, Utc::now());
        row.state = serde_json::json!({"budget": 0.5, "steps_since_reset": 3});
        row
    }

    #[test]
    fn a_state_that_reads_back_is_saved_and_one_that_does_not_is_kept_out() {
        let session = row();
        let good = PolicyState {
            budget: 1.5,
            ..PolicyState::default()
        };
        let saved = saved_state(&session, good.clone()).unwrap();
        assert_eq!(saved.state, good);
        assert_eq!(saved.not_saved, None);
        assert_eq!(
            serde_json::from_value::<PolicyState>(saved.json).unwrap(),
            good
        );
        for bad in [f64::NAN, f64::INFINITY] {
            let state = PolicyState {
                budget: bad,
                ..PolicyState::default()
            };
            let saved = saved_state(&session, state).unwrap();
            assert_eq!(saved.json, session.state, "the previous state is kept");
            assert_eq!(saved.state.budget, 0.5);
            assert_eq!(saved.state.steps_since_reset, 3);
            assert!(saved.not_saved.unwrap().contains("not finite"));
        }
    }

    #[test]
    fn a_snapshot_keeps_what_reads_back() {
        let finite = StepSnapshot {
            dataset_size: 4,
            budget: Some(2.0),
            ..StepSnapshot::default()
        };
        assert_eq!(storable_snapshot(finite.clone()), finite);
        let broken = StepSnapshot {
            budget: Some(f64::NAN),
            state_not_saved: Some("why".into()),
            ..finite
        };
        let stored = storable_snapshot(broken);
        assert_eq!(stored.dataset_size, 4);
        assert_eq!(stored.budget, None);
        assert_eq!(stored.state_not_saved.as_deref(), Some("why"));
    }
}
