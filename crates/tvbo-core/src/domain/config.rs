//! A session's configuration: the create request, its defaults and its validation. The
//! algorithm's settings are in [`crate::domain::algorithm`], the hyperparameters' box in
//! [`crate::domain::hyperpriors`]; both are re-exported here, as parts of a configuration.
//!
//! Every option has the papers' default; [`SessionConfig::from_request`] fills them in so
//! that the stored (and echoed) configuration is complete and explicit.

use serde::{Deserialize, Serialize};

pub use crate::domain::algorithm::{AlgorithmConfig, Beta, BetaSchedule, MAX_DATASET_SIZE};
use crate::domain::events::{
    DRIFT_RATE_FACTOR, IDLE_SECONDS, MIN_IDLE_SECONDS, OPTIMUM_MOVED_DISTANCE,
    OPTIMUM_MOVED_PERSISTENCE, TRACKING_HYSTERESIS, TRACKING_RISE, TRACKING_WINDOW,
    TRACKING_WINDOW_BOUNDS,
};
pub use crate::domain::hyperpriors::{
    Hyperpriors, SIGNAL_VARIANCE_BOUNDS, SPATIAL_LENGTHSCALE_BOUNDS, TEMPORAL_LENGTHSCALE_BOUNDS,
    epsilon_of_temporal_lengthscale, temporal_lengthscale_of_epsilon,
};
use crate::domain::kernel::KernelKind;
use crate::domain::space::{
    Arm, ArmSpec, MAX_MAGNITUDE, ParameterSpec, ParameterType, SearchSpace,
};
use crate::domain::{InvalidInput, validate_text};

/// Whether larger or smaller objective values are better.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum Goal {
    #[default]
    Maximize,
    Minimize,
}

impl Goal {
    /// The sign that turns an objective value into the internal "larger is better" scale.
    pub fn sign(self) -> f64 {
        match self {
            Goal::Maximize => 1.0,
            Goal::Minimize => -1.0,
        }
    }
}

/// The surrogate model's settings as sent by a client; absent fields take defaults.
#[derive(Clone, Debug, Default, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct ModelRequest {
    /// Correlation in space: matern12, matern32, matern52 (default) or rbf.
    pub spatial_kernel: Option<KernelKind>,
    /// Correlation in time: matern12, matern32 (default), matern52 or rbf. Algorithms that
    /// ignore time take none; `tv-gp-ucb` takes matern12.
    pub temporal_kernel: Option<KernelKind>,
    /// Fixed observation-noise variance in the objective's units squared; learned if absent.
    pub noise: Option<f64>,
    /// Number of uniform random suggestions before the model is used (default 15).
    pub warmup: Option<u32>,
    /// Where each hyperparameter fit starts: `fixed` (default) or `previous`.
    pub fit_start: Option<FitStart>,
    /// What each hyperparameter fit maximises: `robust` (default), the posterior under
    /// weak priors on the hyperparameters, or `none`, the exact marginal likelihood.
    pub hyperpriors: Option<Hyperpriors>,
    /// What the model learns from failed runs: `impute` (default), a data point at the
    /// failed setting and time with a value below every success, or `ignore`, nothing.
    pub failures: Option<Failures>,
    /// Spatial lengthscales: `shared` (default), one for all (the papers'), or
    /// `per_parameter`, one per continuous parameter, so that the model learns which
    /// settings matter (GET …/model shows them).
    pub lengthscales: Option<Lengthscales>,
    /// The values the GP is fitted to: `none` (default), the values; `log`, their
    /// logarithms (sign kept), for objectives whose differences are relative
    /// (throughputs, latencies, costs); or `half_rank`, the values with those below the
    /// median mapped by rank onto a normal tail (open-source Vizier's).
    pub warping: Option<Warping>,
    /// The level of the objective: `none` (default), part of the spatio-temporal
    /// model; or `drifting`, a component over time alone with its own lengthscale, so
    /// that what the model learned of the settings survives a change of level.
    pub level: Option<Level>,
}

/// How many spatial lengthscales a session's kernel has
/// (docs/decisions/0011-per-parameter-lengthscales.md says why one is the default).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum Lengthscales {
    /// One lengthscale per continuous parameter (automatic relevance determination, as
    /// BoTorch's, Optuna's and Vizier's GPs fit): a setting that does not matter gets a
    /// long one, and the search stops spending evaluations along it.
    PerParameter,
    /// One lengthscale for every continuous parameter (the papers' isotropic kernel).
    #[default]
    Shared,
}

impl Lengthscales {
    /// The value of a stored session that predates the setting: its kernel was
    /// isotropic (a session's model does not change under it).
    pub fn of_stored_session() -> Lengthscales {
        Lengthscales::Shared
    }
}

/// The values a session's GP is fitted to (`policy::output_transform`;
/// docs/decisions/0012-output-warping.md says what each warping does on real systems and
/// why neither is the default).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum Warping {
    /// The values themselves, standardised (the papers').
    #[default]
    None,
    /// Their logarithms (w = s·ln(s·y), s the values' sign), standardised: a factor is
    /// then the same difference at every level of the objective. The identity while the
    /// successes do not all share one sign.
    Log,
    /// Open-source Vizier's half-rank warping: the values below the median mapped by
    /// rank onto a normal tail with the upper half's spread, so that bad values keep
    /// their order but cannot stretch the scale.
    HalfRank,
}

impl Warping {
    /// The value of a stored session that predates the setting: its model was fitted to
    /// the values.
    pub fn of_stored_session() -> Warping {
        Warping::None
    }
}

/// Whether a session's kernel has a drifting level
/// (docs/decisions/0013-a-drifting-level.md).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum Level {
    /// The papers' kernel: the level of the objective is part of the spatio-temporal
    /// signal, and a change of level is forgotten with the shape.
    #[default]
    None,
    /// A level that drifts on its own time scale, λ_L·k_T(|t − t'|/l_L) added to the
    /// kernel (constant in space): a change of level moves it, and the shape the model
    /// learned of the settings survives. Only for algorithms whose kernel has time.
    Drifting,
}

impl Level {
    /// The value of a stored session that predates the setting.
    pub fn of_stored_session() -> Level {
        Level::None
    }
}

/// What a session's model learns from its failed runs (docs/api.md, "Failed and
/// abandoned runs").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum Failures {
    /// Each recent failed run is a data point of the GP at its setting and measurement
    /// time, its value imputed below every success as open-source Vizier's GP bandit
    /// does (`policy::failures`), so that the acquisition and the recommendation move
    /// away from settings that fail.
    #[default]
    Impute,
    /// Failed runs never reach the model (the papers', which know no failures).
    Ignore,
}

impl Failures {
    /// The value of a stored session that predates the setting: its model ignored
    /// failed runs (a session's model does not change under it).
    pub fn of_stored_session() -> Failures {
        Failures::Ignore
    }
}

/// Where a session's hyperparameter fits start.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum FitStart {
    /// Every fit searches from the same moderate start, whatever earlier fits found: the
    /// papers' protocol (002 §5.1 fits a freshly built model at every iteration), and a
    /// fit that depends on the data alone.
    #[default]
    Fixed,
    /// Each suggest's fit searches from the session's previous fit, except every fifth
    /// suggest's, and from the fixed start also when the warm search ends less likely than
    /// the fixed start itself: its warm fits take a quarter to a half of the time at a few
    /// hundred observations, but each depends on the earlier ones, and regret was worse
    /// in our check (docs/performance.md, "A fit from the previous fit").
    Previous,
}

/// The surrogate model's settings, filled in.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ModelConfig {
    pub spatial_kernel: KernelKind,
    /// `null` for algorithms whose kernel ignores time.
    pub temporal_kernel: Option<KernelKind>,
    pub noise: Option<f64>,
    pub warmup: u32,
    /// Where each hyperparameter fit starts (`fixed` in sessions created before the
    /// setting existed).
    #[serde(default)]
    pub fit_start: FitStart,
    /// The priors of each hyperparameter fit (`none` in sessions created before the
    /// setting existed: a stored session keeps the model it was created with).
    #[serde(default = "Hyperpriors::of_stored_session")]
    pub hyperpriors: Hyperpriors,
    /// What the model learns from failed runs (`ignore` in sessions created before the
    /// setting existed).
    #[serde(default = "Failures::of_stored_session")]
    pub failures: Failures,
    /// Spatial lengthscales, one per parameter or shared (`shared` in sessions created
    /// before the setting existed).
    #[serde(default = "Lengthscales::of_stored_session")]
    pub lengthscales: Lengthscales,
    /// The values the GP is fitted to (`none` in sessions created before the setting
    /// existed).
    #[serde(default = "Warping::of_stored_session")]
    pub warping: Warping,
    /// Whether the kernel has a drifting level (`none` in sessions created before the
    /// setting existed).
    #[serde(default = "Level::of_stored_session")]
    pub level: Level,
}

/// Where a session's time axis comes from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum TimeSource {
    /// t = server wall clock − session creation, in seconds.
    #[default]
    Wall,
    /// Every suggest and observe request carries `t` (seconds) itself.
    Client,
}

/// Time settings as sent by a client.
#[derive(Clone, Debug, Default, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct TimeRequest {
    pub source: Option<TimeSource>,
    /// Seconds between handing out a suggestion and its measurement, added to the
    /// suggestion's target time. Absent: the median of the session's past delays.
    #[cfg_attr(feature = "openapi", schema(minimum = 0, maximum = 2592000))]
    pub lead: Option<f64>,
    /// Seconds after which an unobserved suggestion stops counting as pending (default 3600).
    #[cfg_attr(feature = "openapi", schema(exclusive_minimum = 0, maximum = 2592000))]
    pub pending_timeout: Option<f64>,
}

/// Time settings, filled in.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TimeConfig {
    pub source: TimeSource,
    /// `null`: learned as the median past delay.
    pub lead: Option<f64>,
    pub pending_timeout: f64,
}

/// The drift events' thresholds as sent by a client (docs/events.md); absent fields take
/// the defaults.
#[derive(Clone, Debug, Default, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct EventsRequest {
    pub optimum_moved: Option<OptimumMovedRequest>,
    pub tracking: Option<TrackingRequest>,
    /// `drift-rate-changed` is found when the fitted temporal lengthscale moved by this
    /// factor, up or down, from its reference (default 2; above 1, at most 1000).
    #[cfg_attr(feature = "openapi", schema(exclusive_minimum = 1, maximum = 1000))]
    pub drift_rate_factor: Option<f64>,
    /// `session-idle` is raised when no observation arrived for this many seconds
    /// (default 3600; at least 60, at most 30 days). `null` switches it off.
    #[serde(default, deserialize_with = "present")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<f64>, minimum = 60, maximum = 2592000))]
    pub idle_seconds: Option<Option<f64>>,
}

/// `Some` of a field that is present, `null` included (`Some(None)`); an absent field is
/// the `#[serde(default)]`, `None`.
fn present<'de, D>(deserializer: D) -> Result<Option<Option<f64>>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    Option::<f64>::deserialize(deserializer).map(Some)
}

/// The thresholds of `optimum-moved` as sent by a client.
#[derive(Clone, Debug, Default, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct OptimumMovedRequest {
    /// How far the recommendation must move: the largest change of a coordinate in the
    /// unit cube (default 0.2; above 0, at most 1).
    #[cfg_attr(feature = "openapi", schema(exclusive_minimum = 0, maximum = 1))]
    pub distance: Option<f64>,
    /// For how many consecutive suggests it must stand there (default 3; 1 to 100).
    #[cfg_attr(feature = "openapi", schema(minimum = 1, maximum = 100))]
    pub persistence: Option<u32>,
    /// Also a move: the recommendation's predicted mean changed by more than this
    /// fraction of the reference's |mean| (above 0, at most 100: a hundredfold change).
    /// Default `null`: only `distance`.
    #[cfg_attr(feature = "openapi", schema(exclusive_minimum = 0, maximum = 100))]
    pub relative_value: Option<f64>,
}

/// The thresholds of `tracking-lost` and `tracking-regained` as sent by a client.
#[derive(Clone, Debug, Default, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct TrackingRequest {
    /// Regrets per window (default 32; 8 to 1024).
    #[cfg_attr(feature = "openapi", schema(minimum = 8, maximum = 1024))]
    pub window: Option<u32>,
    /// `tracking-lost` when the newest window's mean regret exceeds the window before's
    /// by more than this many standard errors (and by 10 %) (default 4; above 0, at most
    /// 100).
    #[cfg_attr(feature = "openapi", schema(exclusive_minimum = 0, maximum = 100))]
    pub rise: Option<f64>,
    /// `tracking-regained` when the newest window's mean is back within this many
    /// standard errors of the level before the loss (default 1; at least 0, below
    /// `rise`).
    #[cfg_attr(feature = "openapi", schema(minimum = 0))]
    pub hysteresis: Option<f64>,
}

/// The drift events' thresholds, filled in (docs/events.md). Sessions stored before they
/// existed read back with the defaults.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(default)]
pub struct EventsConfig {
    pub optimum_moved: OptimumMovedConfig,
    pub tracking: TrackingConfig,
    pub drift_rate_factor: f64,
    /// `null`: no `session-idle` events.
    pub idle_seconds: Option<f64>,
}

impl Default for EventsConfig {
    fn default() -> Self {
        EventsConfig {
            optimum_moved: OptimumMovedConfig::default(),
            tracking: TrackingConfig::default(),
            drift_rate_factor: DRIFT_RATE_FACTOR,
            idle_seconds: Some(IDLE_SECONDS),
        }
    }
}

/// The thresholds of `optimum-moved`, filled in.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(default)]
pub struct OptimumMovedConfig {
    pub distance: f64,
    pub persistence: u32,
    /// `null`: the distance alone.
    pub relative_value: Option<f64>,
}

impl Default for OptimumMovedConfig {
    fn default() -> Self {
        OptimumMovedConfig {
            distance: OPTIMUM_MOVED_DISTANCE,
            persistence: OPTIMUM_MOVED_PERSISTENCE,
            relative_value: None,
        }
    }
}

/// The thresholds of `tracking-lost` and `tracking-regained`, filled in.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(default)]
pub struct TrackingConfig {
    pub window: u32,
    pub rise: f64,
    pub hysteresis: f64,
}

impl Default for TrackingConfig {
    fn default() -> Self {
        TrackingConfig {
            window: TRACKING_WINDOW,
            rise: TRACKING_RISE,
            hysteresis: TRACKING_HYSTERESIS,
        }
    }
}

/// Body of `POST /v1/sessions`.
#[derive(Clone, Debug, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct CreateSession {
    /// Up to 200 characters, no control characters.
    #[cfg_attr(feature = "openapi", schema(max_length = 200))]
    pub name: Option<String>,
    pub goal: Option<Goal>,
    /// Required, but in a request that resumes an existing session by its name alone
    /// (`{"name": …, "resume": true}`).
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(min_items = 1, max_items = 32))]
    pub parameters: Vec<ParameterSpec>,
    #[cfg_attr(feature = "openapi", schema(min_items = 1, max_items = 10000))]
    pub arms: Option<Vec<ArmSpec>>,
    pub algorithm: Option<AlgorithmConfig>,
    pub model: Option<ModelRequest>,
    pub time: Option<TimeRequest>,
    /// The drift events' thresholds (docs/events.md).
    pub events: Option<EventsRequest>,
    /// Same seed, same history and same session time ⇒ same suggestions. Default: random
    /// in [0, 2^53 − 1].
    #[cfg_attr(
        feature = "openapi",
        schema(minimum = 0, maximum = 9007199254740991_u64)
    )]
    pub seed: Option<u64>,
    /// `true`: answer the caller's session of this `name` when there is one (200; the
    /// newest, when older duplicates exist), and create it from this request only when
    /// there is none (201). The existing session must have the configuration this
    /// request would make (a 409 names the first field that differs); a request of the
    /// name alone (no `parameters`) takes the session as it is, and is a 422 naming
    /// `parameters` when there is none to resume. Default `false`: always a new session.
    pub resume: Option<bool>,
}

/// A session's complete configuration, as stored and echoed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SessionConfig {
    pub name: String,
    pub goal: Goal,
    pub parameters: Vec<ParameterSpec>,
    pub arms: Option<Vec<Arm>>,
    pub algorithm: AlgorithmConfig,
    pub model: ModelConfig,
    pub time: TimeConfig,
    /// The drift events' thresholds (the defaults in sessions stored before they existed).
    #[serde(default)]
    pub events: EventsConfig,
    pub seed: u64,
}

const DEFAULT_WARMUP: u32 = 15;
const DEFAULT_PENDING_TIMEOUT: f64 = 3600.0;
/// Longest session name, in characters.
pub const MAX_NAME_LEN: usize = 200;
/// Largest `time.lead` and `time.pending_timeout`: 30 days, in seconds.
pub const MAX_TIME_SETTING: f64 = 30.0 * 24.0 * 3600.0;
/// Most suggests `events.optimum_moved.persistence` may ask for.
pub const MAX_EVENT_PERSISTENCE: u32 = 100;
/// Largest `events.tracking.rise`, in standard errors.
pub const MAX_STANDARD_ERRORS: f64 = 100.0;
/// Largest `events.drift_rate_factor`.
pub const MAX_DRIFT_RATE_FACTOR: f64 = 1000.0;
/// Largest `events.optimum_moved.relative_value`: a change of the mean by a hundred
/// times its |mean| (beyond, the threshold only ever fires at a reference mean near 0).
pub const MAX_RELATIVE_VALUE: f64 = 100.0;
/// Largest seed: 2^53 − 1, so that JavaScript, jq and every other client that reads JSON
/// numbers as doubles reads it exactly (and a re-created session is the same session).
pub const MAX_SEED: u64 = (1 << 53) - 1;

/// A seed for a session created without one: uniform in [0, [`MAX_SEED`]].
pub fn random_seed() -> u64 {
    rand::random::<u64>() >> 11
}

impl ModelConfig {
    /// Validates the `model` object of a create request for `algorithm` (validated) and
    /// fills in its defaults.
    fn from_request(
        request: ModelRequest,
        algorithm: &AlgorithmConfig,
    ) -> Result<Self, InvalidInput> {
        let temporal_kernel = match (
            algorithm.uses_time(),
            algorithm.required_temporal_kernel(),
            request.temporal_kernel,
        ) {
            (false, _, None) => None,
            (false, _, Some(_)) => {
                return Err(InvalidInput::new(
                    "model.temporal_kernel",
                    format!(
                        "algorithm {} ignores time; leave temporal_kernel out",
                        algorithm.name()
                    ),
                ));
            }
            (true, Some(required), Some(given)) if given != required => {
                return Err(InvalidInput::new(
                    "model.temporal_kernel",
                    format!(
                        "algorithm {} uses the {} temporal kernel",
                        algorithm.name(),
                        kernel_name(required)
                    ),
                ));
            }
            (true, Some(required), _) => Some(required),
            (true, None, given) => Some(given.unwrap_or(KernelKind::Matern32)),
        };
        if request.level == Some(Level::Drifting) && temporal_kernel.is_none() {
            return Err(InvalidInput::new(
                "model.level",
                format!(
                    "algorithm {} ignores time; a drifting level needs a temporal kernel",
                    algorithm.name()
                ),
            ));
        }
        if request.level == Some(Level::Drifting) && algorithm.priors().is_some() {
            return Err(InvalidInput::new(
                "model.level",
                format!(
                    "algorithm {} with given priors models the arms by them; a drifting \
                     level would not be used",
                    algorithm.name()
                ),
            ));
        }
        if let Some(noise) = request.noise
            && !(noise.is_finite() && noise > 0.0 && noise <= MAX_MAGNITUDE)
        {
            return Err(InvalidInput::new(
                "model.noise",
                format!("must be a number in (0, {MAX_MAGNITUDE:e}]"),
            ));
        }
        let has_priors = algorithm.priors().is_some();
        // Given priors replace the warm-up's purpose (003 §5 starts from the prior).
        let warmup = request
            .warmup
            .unwrap_or(if has_priors { 0 } else { DEFAULT_WARMUP });
        if warmup > 10_000 {
            return Err(InvalidInput::new("model.warmup", "must be at most 10000"));
        }
        Ok(ModelConfig {
            spatial_kernel: request.spatial_kernel.unwrap_or(KernelKind::Matern52),
            temporal_kernel,
            noise: request.noise,
            warmup,
            fit_start: request.fit_start.unwrap_or_default(),
            hyperpriors: request.hyperpriors.unwrap_or_default(),
            failures: request.failures.unwrap_or_default(),
            lengthscales: request.lengthscales.unwrap_or_default(),
            warping: request.warping.unwrap_or_default(),
            level: request.level.unwrap_or_default(),
        })
    }
}

impl TimeConfig {
    /// Validates the `time` object of a create request and fills in its defaults.
    fn from_request(request: TimeRequest) -> Result<Self, InvalidInput> {
        if let Some(lead) = request.lead
            && !(lead.is_finite() && (0.0..=MAX_TIME_SETTING).contains(&lead))
        {
            return Err(InvalidInput::new(
                "time.lead",
                format!("must be a number of seconds in [0, {MAX_TIME_SETTING}] (30 days)"),
            ));
        }
        let pending_timeout = request.pending_timeout.unwrap_or(DEFAULT_PENDING_TIMEOUT);
        if !(pending_timeout.is_finite()
            && pending_timeout > 0.0
            && pending_timeout <= MAX_TIME_SETTING)
        {
            return Err(InvalidInput::new(
                "time.pending_timeout",
                format!("must be a number of seconds in (0, {MAX_TIME_SETTING}] (30 days)"),
            ));
        }
        Ok(TimeConfig {
            source: request.source.unwrap_or_default(),
            lead: request.lead,
            pending_timeout,
        })
    }
}

impl EventsConfig {
    /// Validates the `events` object of a create request and fills in its defaults.
    fn from_request(request: EventsRequest) -> Result<Self, InvalidInput> {
        let defaults = EventsConfig::default();
        let moved = request.optimum_moved.unwrap_or_default();
        let distance = moved.distance.unwrap_or(defaults.optimum_moved.distance);
        if !(distance > 0.0 && distance <= 1.0) {
            return Err(InvalidInput::new(
                "events.optimum_moved.distance",
                "must be a number in (0, 1]: the largest change of a coordinate in the unit cube",
            ));
        }
        let persistence = moved
            .persistence
            .unwrap_or(defaults.optimum_moved.persistence);
        if !(1..=MAX_EVENT_PERSISTENCE).contains(&persistence) {
            return Err(InvalidInput::new(
                "events.optimum_moved.persistence",
                format!("must be a number of suggests from 1 to {MAX_EVENT_PERSISTENCE}"),
            ));
        }
        if let Some(relative) = moved.relative_value
            && !(relative > 0.0 && relative <= MAX_RELATIVE_VALUE)
        {
            return Err(InvalidInput::new(
                "events.optimum_moved.relative_value",
                format!(
                    "must be a fraction of the reference's |mean| in (0, {MAX_RELATIVE_VALUE}], \
                     or left out"
                ),
            ));
        }
        let tracking = request.tracking.unwrap_or_default();
        let window = tracking.window.unwrap_or(defaults.tracking.window);
        let (least, most) = TRACKING_WINDOW_BOUNDS;
        if !(least..=most).contains(&window) {
            return Err(InvalidInput::new(
                "events.tracking.window",
                format!("must be a number of observations from {least} to {most}"),
            ));
        }
        let rise = tracking.rise.unwrap_or(defaults.tracking.rise);
        if !(rise > 0.0 && rise <= MAX_STANDARD_ERRORS) {
            return Err(InvalidInput::new(
                "events.tracking.rise",
                format!("must be a number of standard errors in (0, {MAX_STANDARD_ERRORS}]"),
            ));
        }
        let hysteresis = tracking.hysteresis.unwrap_or(defaults.tracking.hysteresis);
        if !(hysteresis >= 0.0 && hysteresis < rise) {
            return Err(InvalidInput::new(
                "events.tracking.hysteresis",
                format!(
                    "must be a number of standard errors from 0 to below \
                     events.tracking.rise ({rise})"
                ),
            ));
        }
        let factor = request
            .drift_rate_factor
            .unwrap_or(defaults.drift_rate_factor);
        if !(factor > 1.0 && factor <= MAX_DRIFT_RATE_FACTOR) {
            return Err(InvalidInput::new(
                "events.drift_rate_factor",
                format!("must be a number in (1, {MAX_DRIFT_RATE_FACTOR}]"),
            ));
        }
        let idle_seconds = request.idle_seconds.unwrap_or(defaults.idle_seconds);
        if let Some(idle) = idle_seconds
            && !(MIN_IDLE_SECONDS..=MAX_TIME_SETTING).contains(&idle)
        {
            return Err(InvalidInput::new(
                "events.idle_seconds",
                format!(
                    "must be a number of seconds in [{MIN_IDLE_SECONDS}, {MAX_TIME_SETTING}] \
                     (a minute to 30 days), or null for no session-idle events"
                ),
            ));
        }
        Ok(EventsConfig {
            optimum_moved: OptimumMovedConfig {
                distance,
                persistence,
                relative_value: moved.relative_value,
            },
            tracking: TrackingConfig {
                window,
                rise,
                hysteresis,
            },
            drift_rate_factor: factor,
            idle_seconds,
        })
    }
}

impl SessionConfig {
    /// Validates a create request and fills in every default. `random_seed` is used when
    /// the request has no seed. A session runs on this configuration checked (the
    /// `checked` module's `CheckedConfig::from_request`).
    pub fn from_request(request: CreateSession, random_seed: u64) -> Result<Self, InvalidInput> {
        let name = request.name.unwrap_or_default();
        validate_text("name", &name, 0, MAX_NAME_LEN)?;
        if let Some(seed) = request.seed
            && seed > MAX_SEED
        {
            return Err(InvalidInput::new(
                "seed",
                format!(
                    "must be at most {MAX_SEED} (2^53 − 1, the largest integer every JSON \
                     client reads exactly)"
                ),
            ));
        }
        let space = SearchSpace::new(request.parameters.clone())?;
        let arms = match request.arms {
            None => None,
            Some(arms) => Some(space.validate_arms(arms)?),
        };
        if arms.is_some() {
            if let Some(i) = request.parameters.iter().position(|p| p.context) {
                return Err(InvalidInput::new(
                    format!("parameters[{i}].context"),
                    "a session with arms suggests among its arms: it has no context parameters",
                ));
            }
            if let Some(i) = request
                .parameters
                .iter()
                .position(|p| p.kind == ParameterType::Categorical)
            {
                return Err(InvalidInput::new(
                    format!("parameters[{i}].type"),
                    "a session with arms lists its settings as numbers: name the choices \
                     in the arms' names instead of a categorical parameter",
                ));
            }
        }
        let mut algorithm = request.algorithm.unwrap_or_default();
        algorithm.check()?;
        algorithm.check_priors(arms.as_deref())?;
        let model = ModelConfig::from_request(request.model.unwrap_or_default(), &algorithm)?;
        let time = TimeConfig::from_request(request.time.unwrap_or_default())?;
        let events = EventsConfig::from_request(request.events.unwrap_or_default())?;
        Ok(SessionConfig {
            name,
            goal: request.goal.unwrap_or_default(),
            parameters: request.parameters,
            arms,
            algorithm,
            model,
            time,
            events,
            seed: request.seed.unwrap_or(random_seed),
        })
    }
}

fn kernel_name(kind: KernelKind) -> &'static str {
    match kind {
        KernelKind::Matern12 => "matern12",
        KernelKind::Matern32 => "matern32",
        KernelKind::Matern52 => "matern52",
        KernelKind::Rbf => "rbf",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(json: &str) -> Result<SessionConfig, InvalidInput> {
        let request: CreateSession = serde_json::from_str(json).unwrap();
        SessionConfig::from_request(request, 7)
    }

    /// A new session gets the robust hyperpriors unless it asks; a stored configuration
    /// written before the setting existed reads back as the exact likelihood it ran with.
    #[test]
    fn hyperpriors_default_to_robust_and_stored_sessions_keep_none() {
        let config = parse(r#"{"parameters":[{"name":"x","low":0,"high":1}]}"#).unwrap();
        assert_eq!(config.model.hyperpriors, Hyperpriors::Robust);
        let exact = parse(
            r#"{"parameters":[{"name":"x","low":0,"high":1}],"model":{"hyperpriors":"none"}}"#,
        )
        .unwrap();
        assert_eq!(exact.model.hyperpriors, Hyperpriors::None);
        let mut stored = serde_json::to_value(&config).unwrap();
        stored["model"]
            .as_object_mut()
            .unwrap()
            .remove("hyperpriors");
        let read: SessionConfig = serde_json::from_value(stored).unwrap();
        assert_eq!(read.model.hyperpriors, Hyperpriors::None);
    }

    #[test]
    fn events_take_their_defaults_and_stored_sessions_read_them_back() {
        let config = parse(r#"{"parameters":[{"name":"x","low":0,"high":1}]}"#).unwrap();
        assert_eq!(config.events, EventsConfig::default());
        assert_eq!(
            serde_json::to_value(&config.events).unwrap(),
            serde_json::json!({
                "optimum_moved": {"distance": 0.2, "persistence": 3, "relative_value": null},
                "tracking": {"window": 32, "rise": 4.0, "hysteresis": 1.0},
                "drift_rate_factor": 2.0,
                "idle_seconds": 3600.0,
            })
        );
        let mut stored = serde_json::to_value(&config).unwrap();
        stored.as_object_mut().unwrap().remove("events");
        let read: SessionConfig = serde_json::from_value(stored).unwrap();
        assert_eq!(read.events, EventsConfig::default());
        let given = parse(
            r#"{"parameters":[{"name":"x","low":0,"high":1}],"events":{
                "optimum_moved":{"persistence":5,"relative_value":0.25},
                "tracking":{"window":128},"idle_seconds":null}}"#,
        )
        .unwrap();
        assert_eq!(given.events.optimum_moved.distance, OPTIMUM_MOVED_DISTANCE);
        assert_eq!(given.events.optimum_moved.persistence, 5);
        assert_eq!(given.events.optimum_moved.relative_value, Some(0.25));
        assert_eq!(given.events.tracking.window, 128);
        assert_eq!(given.events.tracking.rise, TRACKING_RISE);
        assert_eq!(given.events.idle_seconds, None);
        let read: SessionConfig =
            serde_json::from_value(serde_json::to_value(&given).unwrap()).unwrap();
        assert_eq!(read, given);
    }

    #[test]
    fn bad_event_thresholds_name_their_field() {
        for (events, field) in [
            (
                r#"{"optimum_moved":{"distance":0}}"#,
                "events.optimum_moved.distance",
            ),
            (
                r#"{"optimum_moved":{"distance":1.5}}"#,
                "events.optimum_moved.distance",
            ),
            (
                r#"{"optimum_moved":{"persistence":0}}"#,
                "events.optimum_moved.persistence",
            ),
            (
                r#"{"optimum_moved":{"persistence":101}}"#,
                "events.optimum_moved.persistence",
            ),
            (
                r#"{"optimum_moved":{"relative_value":0}}"#,
                "events.optimum_moved.relative_value",
            ),
            (
                r#"{"optimum_moved":{"relative_value":100.5}}"#,
                "events.optimum_moved.relative_value",
            ),
            (
                r#"{"optimum_moved":{"relative_value":1e308}}"#,
                "events.optimum_moved.relative_value",
            ),
            (r#"{"tracking":{"window":7}}"#, "events.tracking.window"),
            (r#"{"tracking":{"window":1025}}"#, "events.tracking.window"),
            (r#"{"tracking":{"rise":0}}"#, "events.tracking.rise"),
            (r#"{"tracking":{"rise":101}}"#, "events.tracking.rise"),
            (
                r#"{"tracking":{"hysteresis":-1}}"#,
                "events.tracking.hysteresis",
            ),
            (
                r#"{"tracking":{"rise":2,"hysteresis":2}}"#,
                "events.tracking.hysteresis",
            ),
            (r#"{"drift_rate_factor":1}"#, "events.drift_rate_factor"),
            (r#"{"drift_rate_factor":1001}"#, "events.drift_rate_factor"),
            (r#"{"idle_seconds":0}"#, "events.idle_seconds"),
            (r#"{"idle_seconds":59.9}"#, "events.idle_seconds"),
            (r#"{"idle_seconds":2592001}"#, "events.idle_seconds"),
        ] {
            let err = parse(&format!(
                r#"{{"parameters":[{{"name":"x","low":0,"high":1}}],"events":{events}}}"#
            ))
            .unwrap_err();
            assert_eq!(err.field, field, "{events}");
        }
        let most = parse(
            r#"{"parameters":[{"name":"x","low":0,"high":1}],
                "events":{"optimum_moved":{"relative_value":100}}}"#,
        )
        .unwrap();
        assert_eq!(
            most.events.optimum_moved.relative_value,
            Some(MAX_RELATIVE_VALUE)
        );
        let unknown: Result<CreateSession, _> = serde_json::from_str(
            r#"{"parameters":[{"name":"x","low":0,"high":1}],"events":{"tracking":{"bogus":1}}}"#,
        );
        assert!(unknown.is_err());
    }

    #[test]
    fn defaults_are_filled_in() {
        let config = parse(r#"{"parameters":[{"name":"x","low":0,"high":1}]}"#).unwrap();
        assert_eq!(config.algorithm, AlgorithmConfig::default());
        assert_eq!(config.algorithm.name(), "bolt");
        assert_eq!(config.model.temporal_kernel, Some(KernelKind::Matern32));
        assert_eq!(config.model.spatial_kernel, KernelKind::Matern52);
        assert_eq!(config.model.warmup, 15);
        assert_eq!(config.seed, 7);
        assert_eq!(config.time.source, TimeSource::Wall);
    }

    #[test]
    fn static_algorithms_have_no_temporal_kernel() {
        let config = parse(
            r#"{"parameters":[{"name":"x","low":0,"high":1}],"algorithm":{"name":"gp-ucb"}}"#,
        )
        .unwrap();
        assert_eq!(config.model.temporal_kernel, None);
        let err = parse(
            r#"{"parameters":[{"name":"x","low":0,"high":1}],"algorithm":{"name":"gp-ucb"},"model":{"temporal_kernel":"rbf"}}"#,
        )
        .unwrap_err();
        assert_eq!(err.field, "model.temporal_kernel");
    }

    #[test]
    fn unknown_algorithm_options_are_rejected() {
        let result: Result<CreateSession, _> = serde_json::from_str(
            r#"{"parameters":[{"name":"x","low":0,"high":1}],"algorithm":{"name":"gp-ucb","bogus":1}}"#,
        );
        assert!(result.is_err());
    }

    #[test]
    fn bad_epsilon_names_the_field() {
        let err = parse(
            r#"{"parameters":[{"name":"x","low":0,"high":1}],"algorithm":{"name":"tv-gp-ucb","epsilon":1.5}}"#,
        )
        .unwrap_err();
        assert_eq!(err.field, "algorithm.epsilon");
    }
}
