//! A session's configuration: the create request, its defaults and its validation.
//!
//! Every option has the papers' default; [`SessionConfig::from_request`] fills them in so
//! that the stored (and echoed) configuration is complete and explicit.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

pub use crate::domain::hyperpriors::Hyperpriors;
use crate::domain::kernel::KernelKind;
use crate::domain::priors::{MAX_PRIORS, PriorSpec, validate_priors};
use crate::domain::space::{Arm, ArmSpec, MAX_MAGNITUDE, ParameterSpec, SearchSpace};
use crate::domain::{InvalidInput, validate_text};

/// Whether larger or smaller objective values are better.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
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

/// The exploration weight β of the upper confidence bound μ + √β σ.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(untagged)]
pub enum Beta {
    /// A constant β.
    Constant(f64),
    /// A schedule: `"wdbo"` (β = 0.2·d·ln(2n), W-DBO's default) or `"srinivas"`
    /// (Srinivas et al. 2010, Theorems 1 and 2, δ = 0.1).
    Schedule(BetaSchedule),
}

/// Named β schedules.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum BetaSchedule {
    Wdbo,
    Srinivas,
}

impl Default for Beta {
    fn default() -> Self {
        Beta::Schedule(BetaSchedule::Wdbo)
    }
}

fn default_reset_every() -> u64 {
    15
}

fn default_et_delta() -> f64 {
    0.1
}

fn default_min_dataset_size() -> u64 {
    15
}

fn default_max_dataset_size() -> u64 {
    5000
}

fn default_wdbo_alpha() -> f64 {
    0.25
}

/// δ of the prior-elimination algorithms (003 §5).
fn default_elimination_delta() -> f64 {
    0.05
}

/// The algorithm of a session and its options (`{"name": ..., options...}`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(tag = "name", rename_all = "kebab-case", deny_unknown_fields)]
pub enum AlgorithmConfig {
    /// BOLT (Bardou & Thiran, Algorithm 1): spatio-temporal UCB that keeps at most n*
    /// observations, n* = argmax_n Σ_{i≤n} k_T²(i·R̂(n)) (their Eq. (9)) from the measured
    /// response time R̂(n), and forgets the least relevant ones.
    Bolt {
        #[serde(default = "default_min_dataset_size")]
        min_dataset_size: u64,
        #[serde(default = "default_max_dataset_size")]
        max_dataset_size: u64,
        #[serde(default)]
        beta: Beta,
    },
    /// W-DBO (Bardou et al. 2024): spatio-temporal UCB that forgets observations whose
    /// relevance is below a budget growing with time at rate ln(1+α) per temporal lengthscale.
    WDbo {
        #[serde(default = "default_wdbo_alpha")]
        alpha: f64,
        #[serde(default = "default_min_dataset_size")]
        min_dataset_size: u64,
        #[serde(default)]
        beta: Beta,
    },
    /// Uniform random search: the floor every algorithm must beat.
    Random {},
    /// GP-UCB (Srinivas et al. 2010): static kernel, never forgets. On an arm set it may
    /// take one prior (`priors`, e.g. an empirical covariance) instead of a fitted kernel.
    GpUcb {
        #[serde(default)]
        beta: Beta,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        priors: Option<Vec<PriorSpec>>,
    },
    /// R-GP-UCB (Bogunovic et al. 2016, Alg. 1): GP-UCB whose dataset is emptied every
    /// `reset_every` observations (default 15, the block length of their Section 5.2).
    RGpUcb {
        #[serde(default = "default_reset_every")]
        reset_every: u64,
        #[serde(default)]
        beta: Beta,
    },
    /// TV-GP-UCB (Bogunovic et al. 2016, Alg. 2): the temporal kernel (1−ε)^{|Δt|/2}.
    /// `epsilon` (per second) is learned by marginal likelihood when absent.
    TvGpUcb {
        #[serde(default)]
        epsilon: Option<f64>,
        #[serde(default)]
        beta: Beta,
        /// One prior over the arms (arm sessions), used as the spatial kernel.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        priors: Option<Vec<PriorSpec>>,
    },
    /// ET-GP-UCB (Brunzema et al. 2022): static GP-UCB with an event-triggered reset.
    EtGpUcb {
        #[serde(default = "default_et_delta")]
        delta: f64,
        #[serde(default)]
        beta: Beta,
    },
    /// PE-GP-UCB (Ziomek et al. 2024, the baseline of 003): the most optimistic (arm,
    /// prior) by UCB; a prior whose summed prediction errors exceed their confidence
    /// width is eliminated (003 Alg. 1, lines 7–10).
    PeGpUcb {
        priors: Vec<PriorSpec>,
        #[serde(default = "default_elimination_delta")]
        delta: f64,
    },
    /// PE-GP-TS (003 Alg. 1): one Thompson sample per active prior, the best (arm,
    /// prior) wins; elimination with β_t and ξ_t of Theorem 4.1.
    PeGpTs {
        priors: Vec<PriorSpec>,
        #[serde(default = "default_elimination_delta")]
        delta: f64,
    },
    /// HP-GP-TS (003 Alg. 2): a prior drawn from the hyperposterior, then a Thompson
    /// sample under it; the hyperposterior is updated by every observation.
    HpGpTs {
        priors: Vec<PriorSpec>,
        /// Prior weights (normalised; uniform when absent).
        #[serde(default)]
        hyperprior: Option<Vec<f64>>,
    },
    /// MAP-GP-TS (003 §5): HP-GP-TS with the most probable prior instead of a draw.
    MapGpTs {
        priors: Vec<PriorSpec>,
        #[serde(default)]
        hyperprior: Option<Vec<f64>>,
    },
}

impl Default for AlgorithmConfig {
    fn default() -> Self {
        AlgorithmConfig::Bolt {
            min_dataset_size: default_min_dataset_size(),
            max_dataset_size: default_max_dataset_size(),
            beta: Beta::default(),
        }
    }
}

impl AlgorithmConfig {
    /// The name used in the API.
    pub fn name(&self) -> &'static str {
        match self {
            AlgorithmConfig::Bolt { .. } => "bolt",
            AlgorithmConfig::WDbo { .. } => "w-dbo",
            AlgorithmConfig::Random {} => "random",
            AlgorithmConfig::GpUcb { .. } => "gp-ucb",
            AlgorithmConfig::RGpUcb { .. } => "r-gp-ucb",
            AlgorithmConfig::TvGpUcb { .. } => "tv-gp-ucb",
            AlgorithmConfig::EtGpUcb { .. } => "et-gp-ucb",
            AlgorithmConfig::PeGpUcb { .. } => "pe-gp-ucb",
            AlgorithmConfig::PeGpTs { .. } => "pe-gp-ts",
            AlgorithmConfig::HpGpTs { .. } => "hp-gp-ts",
            AlgorithmConfig::MapGpTs { .. } => "map-gp-ts",
        }
    }

    /// Whether the algorithm ever removes observations from its dataset (BOLT, W-DBO and
    /// the resetting R-GP-UCB and ET-GP-UCB); the others keep every one.
    pub fn forgets(&self) -> bool {
        matches!(
            self,
            AlgorithmConfig::Bolt { .. }
                | AlgorithmConfig::WDbo { .. }
                | AlgorithmConfig::RGpUcb { .. }
                | AlgorithmConfig::EtGpUcb { .. }
        )
    }

    /// The priors of an algorithm that models the objective with given priors over arms.
    pub fn priors(&self) -> Option<&[PriorSpec]> {
        match self {
            AlgorithmConfig::GpUcb { priors, .. } | AlgorithmConfig::TvGpUcb { priors, .. } => {
                priors.as_deref()
            }
            AlgorithmConfig::PeGpUcb { priors, .. }
            | AlgorithmConfig::PeGpTs { priors, .. }
            | AlgorithmConfig::HpGpTs { priors, .. }
            | AlgorithmConfig::MapGpTs { priors, .. } => Some(priors),
            _ => None,
        }
    }

    /// Validates the priors against the arms and fills in their defaults and the
    /// hyperprior.
    fn validate_priors(&mut self, arms: Option<&[Arm]>) -> Result<(), InvalidInput> {
        let name = self.name();
        match self {
            AlgorithmConfig::GpUcb {
                priors: Some(priors),
                ..
            }
            | AlgorithmConfig::TvGpUcb {
                priors: Some(priors),
                ..
            } => validate_priors(name, priors, None, arms, 1),
            AlgorithmConfig::PeGpUcb { priors, .. } | AlgorithmConfig::PeGpTs { priors, .. } => {
                validate_priors(name, priors, None, arms, MAX_PRIORS)
            }
            AlgorithmConfig::HpGpTs { priors, hyperprior }
            | AlgorithmConfig::MapGpTs { priors, hyperprior } => {
                validate_priors(name, priors, Some(hyperprior), arms, MAX_PRIORS)
            }
            _ => Ok(()),
        }
    }

    /// Whether the model has a temporal kernel (spatio-temporal algorithms) or k_T ≡ 1.
    pub fn uses_time(&self) -> bool {
        matches!(
            self,
            AlgorithmConfig::TvGpUcb { .. }
                | AlgorithmConfig::Bolt { .. }
                | AlgorithmConfig::WDbo { .. }
        )
    }

    /// The temporal kernel an algorithm fixes, if it fixes one.
    fn required_temporal_kernel(&self) -> Option<KernelKind> {
        match self {
            // (1−ε)^{|Δt|/2} = exp(−|Δt|/l_T) with l_T = −2/ln(1−ε): Matérn-1/2 in time.
            AlgorithmConfig::TvGpUcb { .. } => Some(KernelKind::Matern12),
            _ => None,
        }
    }

    fn validate(&self) -> Result<(), InvalidInput> {
        let beta = match self {
            AlgorithmConfig::Random {} => return Ok(()),
            AlgorithmConfig::Bolt {
                min_dataset_size,
                max_dataset_size,
                beta,
            } => {
                validate_dataset_floor(*min_dataset_size)?;
                if !(*min_dataset_size..=MAX_DATASET_SIZE).contains(max_dataset_size) {
                    return Err(InvalidInput::new(
                        "algorithm.max_dataset_size",
                        format!("must lie within [min_dataset_size, {MAX_DATASET_SIZE}]"),
                    ));
                }
                beta
            }
            AlgorithmConfig::WDbo {
                alpha,
                min_dataset_size,
                beta,
            } => {
                validate_dataset_floor(*min_dataset_size)?;
                if !(alpha.is_finite() && *alpha > 0.0 && *alpha <= 1e6) {
                    return Err(InvalidInput::new(
                        "algorithm.alpha",
                        "must be a number in (0, 1e6]",
                    ));
                }
                beta
            }
            AlgorithmConfig::GpUcb { beta, .. } => beta,
            AlgorithmConfig::RGpUcb { reset_every, beta } => {
                if *reset_every == 0 {
                    return Err(InvalidInput::new(
                        "algorithm.reset_every",
                        "must be at least 1",
                    ));
                }
                beta
            }
            AlgorithmConfig::TvGpUcb { epsilon, beta, .. } => {
                if let Some(e) = epsilon {
                    // ε ↔ l_T = −2/ln(1−ε), and l_T must lie within the fit's bounds.
                    let (shortest, longest) = TEMPORAL_LENGTHSCALE_BOUNDS;
                    let (low, high) = (
                        epsilon_of_temporal_lengthscale(longest),
                        epsilon_of_temporal_lengthscale(shortest),
                    );
                    if !(e.is_finite() && *e >= low && *e <= high) {
                        return Err(InvalidInput::new(
                            "algorithm.epsilon",
                            format!("must lie within [{low:.3e}, {high:.6}] (per second)"),
                        ));
                    }
                }
                beta
            }
            AlgorithmConfig::EtGpUcb { delta, beta } => {
                validate_delta(*delta)?;
                beta
            }
            AlgorithmConfig::PeGpUcb { delta, .. } | AlgorithmConfig::PeGpTs { delta, .. } => {
                return validate_delta(*delta);
            }
            AlgorithmConfig::HpGpTs { .. } | AlgorithmConfig::MapGpTs { .. } => return Ok(()),
        };
        if let Beta::Constant(b) = beta
            && !(b.is_finite() && *b >= 0.0)
        {
            return Err(InvalidInput::new(
                "algorithm.beta",
                "must be a finite number ≥ 0, \"wdbo\" or \"srinivas\"",
            ));
        }
        Ok(())
    }
}

fn validate_delta(delta: f64) -> Result<(), InvalidInput> {
    if !(delta.is_finite() && delta > 0.0 && delta < 1.0) {
        return Err(InvalidInput::new(
            "algorithm.delta",
            "must lie strictly between 0 and 1",
        ));
    }
    Ok(())
}

/// Bounds of the hyperparameter fit. λ, for standardised y:
pub const SIGNAL_VARIANCE_BOUNDS: (f64, f64) = (0.05, 20.0);
/// Bounds of l_S for inputs in `[0,1]^d`.
pub const SPATIAL_LENGTHSCALE_BOUNDS: (f64, f64) = (0.01, 10.0);
/// Bounds of l_T in seconds.
pub const TEMPORAL_LENGTHSCALE_BOUNDS: (f64, f64) = (0.1, 1e7);

/// l_T of the forgetting rate ε (per second).
pub fn temporal_lengthscale_of_epsilon(epsilon: f64) -> f64 {
    -2.0 / (-epsilon).ln_1p()
}

/// ε (per second) of the temporal lengthscale l_T.
pub fn epsilon_of_temporal_lengthscale(temporal_lengthscale: f64) -> f64 {
    -(-2.0 / temporal_lengthscale).exp_m1()
}

/// Largest dataset a session may keep (BOLT's `max_dataset_size` bound).
pub const MAX_DATASET_SIZE: u64 = 20_000;

fn validate_dataset_floor(min_dataset_size: u64) -> Result<(), InvalidInput> {
    if !(1..=MAX_DATASET_SIZE).contains(&min_dataset_size) {
        return Err(InvalidInput::new(
            "algorithm.min_dataset_size",
            format!("must lie within [1, {MAX_DATASET_SIZE}]"),
        ));
    }
    Ok(())
}

/// The surrogate model's settings as sent by a client; absent fields take defaults.
#[derive(Clone, Debug, Default, Deserialize, ToSchema)]
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
}

/// Where a session's hyperparameter fits start.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
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
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
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
}

/// Where a session's time axis comes from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum TimeSource {
    /// t = server wall clock − session creation, in seconds.
    #[default]
    Wall,
    /// Every suggest and observe request carries `t` (seconds) itself.
    Client,
}

/// Time settings as sent by a client.
#[derive(Clone, Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TimeRequest {
    pub source: Option<TimeSource>,
    /// Seconds between handing out a suggestion and its measurement, added to the
    /// suggestion's target time. Absent: the median of the session's past delays.
    #[schema(minimum = 0, maximum = 2592000)]
    pub lead: Option<f64>,
    /// Seconds after which an unobserved suggestion stops counting as pending (default 3600).
    #[schema(exclusive_minimum = 0, maximum = 2592000)]
    pub pending_timeout: Option<f64>,
}

/// Time settings, filled in.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct TimeConfig {
    pub source: TimeSource,
    /// `null`: learned as the median past delay.
    pub lead: Option<f64>,
    pub pending_timeout: f64,
}

/// Body of `POST /v1/sessions`.
#[derive(Clone, Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateSession {
    /// Up to 200 characters, no control characters.
    #[schema(max_length = 200)]
    pub name: Option<String>,
    pub goal: Option<Goal>,
    #[schema(min_items = 1, max_items = 32)]
    pub parameters: Vec<ParameterSpec>,
    #[schema(min_items = 1, max_items = 10000)]
    pub arms: Option<Vec<ArmSpec>>,
    pub algorithm: Option<AlgorithmConfig>,
    pub model: Option<ModelRequest>,
    pub time: Option<TimeRequest>,
    /// Same seed, same history and same session time ⇒ same suggestions. Default: random
    /// in [0, 2^53 − 1].
    #[schema(minimum = 0, maximum = 9007199254740991_u64)]
    pub seed: Option<u64>,
}

/// A session's complete configuration, as stored and echoed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct SessionConfig {
    pub name: String,
    pub goal: Goal,
    pub parameters: Vec<ParameterSpec>,
    pub arms: Option<Vec<Arm>>,
    pub algorithm: AlgorithmConfig,
    pub model: ModelConfig,
    pub time: TimeConfig,
    pub seed: u64,
}

const DEFAULT_WARMUP: u32 = 15;
const DEFAULT_PENDING_TIMEOUT: f64 = 3600.0;
/// Longest session name, in characters.
pub const MAX_NAME_LEN: usize = 200;
/// Largest `time.lead` and `time.pending_timeout`: 30 days, in seconds.
pub const MAX_TIME_SETTING: f64 = 30.0 * 24.0 * 3600.0;
/// Largest seed: 2^53 − 1, so that JavaScript, jq and every other client that reads JSON
/// numbers as doubles reads it exactly (and a re-created session is the same session).
pub const MAX_SEED: u64 = (1 << 53) - 1;

/// A seed for a session created without one: uniform in [0, [`MAX_SEED`]].
pub fn random_seed() -> u64 {
    rand::random::<u64>() >> 11
}

impl SessionConfig {
    /// Validates a create request and fills in every default. `random_seed` is used when
    /// the request has no seed.
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
        let mut algorithm = request.algorithm.unwrap_or_default();
        algorithm.validate()?;
        algorithm.validate_priors(arms.as_deref())?;
        let model_request = request.model.unwrap_or_default();
        let temporal_kernel = match (
            algorithm.uses_time(),
            algorithm.required_temporal_kernel(),
            model_request.temporal_kernel,
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
        if let Some(noise) = model_request.noise
            && !(noise.is_finite() && noise > 0.0 && noise <= MAX_MAGNITUDE)
        {
            return Err(InvalidInput::new(
                "model.noise",
                format!("must be a number in (0, {MAX_MAGNITUDE:e}]"),
            ));
        }
        let has_priors = algorithm.priors().is_some();
        if has_priors && model_request.noise.is_none() {
            return Err(InvalidInput::new(
                "model.noise",
                format!(
                    "is required by {} with priors: the observation-noise variance the priors assume",
                    algorithm.name()
                ),
            ));
        }
        // Given priors replace the warm-up's purpose (003 §5 starts from the prior).
        let warmup = model_request
            .warmup
            .unwrap_or(if has_priors { 0 } else { DEFAULT_WARMUP });
        if warmup > 10_000 {
            return Err(InvalidInput::new("model.warmup", "must be at most 10000"));
        }
        let model = ModelConfig {
            spatial_kernel: model_request.spatial_kernel.unwrap_or(KernelKind::Matern52),
            temporal_kernel,
            noise: model_request.noise,
            warmup,
            fit_start: model_request.fit_start.unwrap_or_default(),
            hyperpriors: model_request.hyperpriors.unwrap_or_default(),
        };
        let time_request = request.time.unwrap_or_default();
        if let Some(lead) = time_request.lead
            && !(lead.is_finite() && (0.0..=MAX_TIME_SETTING).contains(&lead))
        {
            return Err(InvalidInput::new(
                "time.lead",
                format!("must be a number of seconds in [0, {MAX_TIME_SETTING}] (30 days)"),
            ));
        }
        let pending_timeout = time_request
            .pending_timeout
            .unwrap_or(DEFAULT_PENDING_TIMEOUT);
        if !(pending_timeout.is_finite()
            && pending_timeout > 0.0
            && pending_timeout <= MAX_TIME_SETTING)
        {
            return Err(InvalidInput::new(
                "time.pending_timeout",
                format!("must be a number of seconds in (0, {MAX_TIME_SETTING}] (30 days)"),
            ));
        }
        let time = TimeConfig {
            source: time_request.source.unwrap_or_default(),
            lead: time_request.lead,
            pending_timeout,
        };
        Ok(SessionConfig {
            name,
            goal: request.goal.unwrap_or_default(),
            parameters: request.parameters,
            arms,
            algorithm,
            model,
            time,
            seed: request.seed.unwrap_or(random_seed),
        })
    }

    /// The search space of the parameters.
    pub fn space(&self) -> SearchSpace {
        SearchSpace::new(self.parameters.clone()).expect("stored parameters were validated")
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
