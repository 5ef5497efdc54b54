//! The engine: a session's suggest and observe steps as pure, synchronous functions.
//!
//! Given a snapshot of a session ([`History`], the store's read of it) and a request, the
//! engine checks the request, runs the session's policy and returns the change to make
//! ([`ChangeSet`](crate::domain::records::ChangeSet)); it reads no clock, touches no
//! store and spawns nothing. The service drives it between a load and a commit
//! (`session::service`); `tvbo bench` drives it over an in-memory session
//! ([`LocalSession`]), so a benchmark measures exactly the server's compute path.

mod local;
mod model;
mod observe;
mod suggest;

use chrono::{DateTime, Utc};
use rand::SeedableRng;
use uuid::Uuid;

use crate::domain::InvalidInput;
use crate::domain::config::{CreateSession, SessionConfig};
use crate::domain::records::{History, ObservationRow, SessionRow};
use crate::domain::space::SearchSpace;
use crate::domain::time::median_lead;
use crate::policy::priors::check_priors;
use crate::policy::{Observation, PolicyError, PolicyRng, PolicyState};

pub use local::LocalSession;
pub use model::{CurrentModel, fitted_hyperparameters, step_snapshot};
pub use observe::{ObserveSnapshot, plan_observe};
pub use suggest::plan_suggest;

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
) -> Result<SessionConfig, InvalidInput> {
    let config = SessionConfig::from_request(request, seed)?;
    check_priors(&config)?;
    Ok(config)
}

/// The row of a new session of `tenant`: nothing suggested or observed yet, the policy's
/// initial state.
pub fn new_session_row(
    id: Uuid,
    tenant: &str,
    config: SessionConfig,
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

/// The session's arms in the unit cube, if it has arms.
pub fn arm_points(space: &SearchSpace, config: &SessionConfig) -> Option<Vec<Vec<f64>>> {
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
