//! A session's algorithm and its options (`{"name": ..., options...}`), with their paper
//! defaults and validation, and the exploration weight β of the UCB rules.

use serde::{Deserialize, Serialize};

use crate::domain::InvalidInput;
use crate::domain::hyperpriors::{TEMPORAL_LENGTHSCALE_BOUNDS, epsilon_of_temporal_lengthscale};
use crate::domain::kernel::KernelKind;
use crate::domain::priors::{MAX_PRIORS, PriorSpec, validate_priors};
use crate::domain::space::Arm;

/// The exploration weight β of the upper confidence bound μ + √β σ.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(untagged)]
pub enum Beta {
    /// A constant β.
    Constant(f64),
    /// A schedule: `"wdbo"` (β = 0.2·d·ln(2n), W-DBO's default) or `"srinivas"`
    /// (Srinivas et al. 2010, Theorems 1 and 2, δ = 0.1).
    Schedule(BetaSchedule),
}

/// Named β schedules.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
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
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
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

/// Which algorithm a configuration is, by its API name (`bolt`, `w-dbo`, …): what a
/// session listing filters by.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "kebab-case")]
pub enum AlgorithmName {
    Bolt,
    WDbo,
    Random,
    GpUcb,
    RGpUcb,
    TvGpUcb,
    EtGpUcb,
    PeGpUcb,
    PeGpTs,
    HpGpTs,
    MapGpTs,
}

impl AlgorithmName {
    /// Every algorithm, in the order the API lists them (`GET /v1/algorithms`): 002's
    /// Table 3 order, the floor, then 003's prior-selection rules. The service's names,
    /// the dashboard's filter and the bench's list all come from here.
    pub const ALL: [AlgorithmName; 11] = [
        AlgorithmName::GpUcb,
        AlgorithmName::EtGpUcb,
        AlgorithmName::RGpUcb,
        AlgorithmName::TvGpUcb,
        AlgorithmName::WDbo,
        AlgorithmName::Bolt,
        AlgorithmName::Random,
        AlgorithmName::PeGpUcb,
        AlgorithmName::PeGpTs,
        AlgorithmName::HpGpTs,
        AlgorithmName::MapGpTs,
    ];

    /// The name used in the API (as serialised).
    pub fn as_str(self) -> &'static str {
        match self {
            AlgorithmName::Bolt => "bolt",
            AlgorithmName::WDbo => "w-dbo",
            AlgorithmName::Random => "random",
            AlgorithmName::GpUcb => "gp-ucb",
            AlgorithmName::RGpUcb => "r-gp-ucb",
            AlgorithmName::TvGpUcb => "tv-gp-ucb",
            AlgorithmName::EtGpUcb => "et-gp-ucb",
            AlgorithmName::PeGpUcb => "pe-gp-ucb",
            AlgorithmName::PeGpTs => "pe-gp-ts",
            AlgorithmName::HpGpTs => "hp-gp-ts",
            AlgorithmName::MapGpTs => "map-gp-ts",
        }
    }

    /// What the algorithm does, in a line (its paper and its rule).
    pub fn summary(self) -> &'static str {
        match self {
            AlgorithmName::Bolt => {
                "BOLT (Bardou & Thiran): spatio-temporal UCB keeping the dataset its \
                 response time affords, forgetting the least relevant observations"
            }
            AlgorithmName::WDbo => {
                "W-DBO (Bardou et al. 2024): spatio-temporal UCB forgetting observations \
                 whose Wasserstein relevance falls below a budget that grows with time"
            }
            AlgorithmName::Random => "uniform random search: the floor every algorithm must beat",
            AlgorithmName::GpUcb => {
                "GP-UCB (Srinivas et al. 2010): a static model that never forgets; on arms, \
                 one given prior may replace the fitted kernel"
            }
            AlgorithmName::RGpUcb => {
                "R-GP-UCB (Bogunovic et al. 2016, Alg. 1): GP-UCB whose dataset is emptied \
                 every reset_every observations"
            }
            AlgorithmName::TvGpUcb => {
                "TV-GP-UCB (Bogunovic et al. 2016, Alg. 2): GP-UCB with the temporal kernel \
                 (1-ε)^(|Δt|/2)"
            }
            AlgorithmName::EtGpUcb => {
                "ET-GP-UCB (Brunzema et al. 2022): GP-UCB reset when an observation \
                 contradicts the model"
            }
            AlgorithmName::PeGpUcb => {
                "PE-GP-UCB (Ziomek et al. 2024): UCB over given priors, eliminating those \
                 the observations contradict"
            }
            AlgorithmName::PeGpTs => {
                "PE-GP-TS (Ziomek et al. 2024, Alg. 1): Thompson sampling over given \
                 priors, with elimination"
            }
            AlgorithmName::HpGpTs => {
                "HP-GP-TS (Ziomek et al. 2024, Alg. 2): a prior drawn from the \
                 hyperposterior over given priors, then a Thompson sample"
            }
            AlgorithmName::MapGpTs => {
                "MAP-GP-TS (Ziomek et al. 2024, §5): HP-GP-TS with the most probable prior"
            }
        }
    }

    /// Whether the algorithm ever removes observations from its dataset (BOLT, W-DBO and
    /// the resetting R-GP-UCB and ET-GP-UCB); the others keep every one.
    pub fn forgets(self) -> bool {
        matches!(
            self,
            AlgorithmName::Bolt
                | AlgorithmName::WDbo
                | AlgorithmName::RGpUcb
                | AlgorithmName::EtGpUcb
        )
    }

    /// Whether the algorithm bounds its own dataset (BOLT's n*, at most
    /// `max_dataset_size`), so that the server's cap on a session's active observations
    /// does not apply to it. Every other algorithm's observe is refused past the cap, and
    /// the suggest of one that never [forgets](Self::forgets) too (its observation could
    /// not be taken); one that forgets may still shrink at its observe.
    pub fn bounds_its_dataset(self) -> bool {
        self == AlgorithmName::Bolt
    }

    /// Whether the model has a temporal kernel (spatio-temporal algorithms) or k_T ≡ 1.
    pub fn uses_time(self) -> bool {
        matches!(
            self,
            AlgorithmName::TvGpUcb | AlgorithmName::Bolt | AlgorithmName::WDbo
        )
    }

    /// Whether the algorithm takes priors over arms (`algorithm.priors`).
    pub fn priors(self) -> PriorUse {
        match self {
            AlgorithmName::GpUcb | AlgorithmName::TvGpUcb => PriorUse::Optional,
            AlgorithmName::PeGpUcb
            | AlgorithmName::PeGpTs
            | AlgorithmName::HpGpTs
            | AlgorithmName::MapGpTs => PriorUse::Required,
            AlgorithmName::Bolt
            | AlgorithmName::WDbo
            | AlgorithmName::Random
            | AlgorithmName::RGpUcb
            | AlgorithmName::EtGpUcb => PriorUse::None,
        }
    }
}

/// Whether an algorithm takes priors over arms.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum PriorUse {
    /// It models the objective itself, without priors.
    None,
    /// One prior may replace its fitted kernel on an arm set.
    Optional,
    /// It selects among the given priors, and needs them.
    Required,
}

/// One algorithm as `GET /v1/algorithms` lists it: its name and what it does.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AlgorithmInfo {
    /// The API name (`algorithm.name` of a create request).
    pub name: AlgorithmName,
    /// What it does, in a line.
    pub summary: String,
    /// Whether it ever removes observations from its dataset.
    pub forgets: bool,
    /// Whether its model has time (a temporal kernel).
    pub temporal: bool,
    /// Whether it takes priors over arms.
    pub priors: PriorUse,
}

impl From<AlgorithmName> for AlgorithmInfo {
    fn from(name: AlgorithmName) -> AlgorithmInfo {
        AlgorithmInfo {
            name,
            summary: name.summary().to_string(),
            forgets: name.forgets(),
            temporal: name.uses_time(),
            priors: name.priors(),
        }
    }
}

impl AlgorithmConfig {
    /// Which algorithm this is.
    pub fn kind(&self) -> AlgorithmName {
        match self {
            AlgorithmConfig::Bolt { .. } => AlgorithmName::Bolt,
            AlgorithmConfig::WDbo { .. } => AlgorithmName::WDbo,
            AlgorithmConfig::Random {} => AlgorithmName::Random,
            AlgorithmConfig::GpUcb { .. } => AlgorithmName::GpUcb,
            AlgorithmConfig::RGpUcb { .. } => AlgorithmName::RGpUcb,
            AlgorithmConfig::TvGpUcb { .. } => AlgorithmName::TvGpUcb,
            AlgorithmConfig::EtGpUcb { .. } => AlgorithmName::EtGpUcb,
            AlgorithmConfig::PeGpUcb { .. } => AlgorithmName::PeGpUcb,
            AlgorithmConfig::PeGpTs { .. } => AlgorithmName::PeGpTs,
            AlgorithmConfig::HpGpTs { .. } => AlgorithmName::HpGpTs,
            AlgorithmConfig::MapGpTs { .. } => AlgorithmName::MapGpTs,
        }
    }

    /// The name used in the API.
    pub fn name(&self) -> &'static str {
        self.kind().as_str()
    }

    /// Whether the algorithm ever removes observations from its dataset
    /// ([`AlgorithmName::forgets`]).
    pub fn forgets(&self) -> bool {
        self.kind().forgets()
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
    pub(crate) fn validate_priors(&mut self, arms: Option<&[Arm]>) -> Result<(), InvalidInput> {
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

    /// Whether the model has a temporal kernel ([`AlgorithmName::uses_time`]).
    pub fn uses_time(&self) -> bool {
        self.kind().uses_time()
    }

    /// The temporal kernel an algorithm fixes, if it fixes one.
    pub(crate) fn required_temporal_kernel(&self) -> Option<KernelKind> {
        match self {
            // (1−ε)^{|Δt|/2} = exp(−|Δt|/l_T) with l_T = −2/ln(1−ε): Matérn-1/2 in time.
            AlgorithmConfig::TvGpUcb { .. } => Some(KernelKind::Matern12),
            _ => None,
        }
    }

    pub(crate) fn validate(&self) -> Result<(), InvalidInput> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn algorithm_names_serialise_as_their_api_names() {
        for kind in AlgorithmName::ALL {
            assert_eq!(serde_json::to_value(kind).unwrap(), kind.as_str());
            let back: AlgorithmName = serde_json::from_value(kind.as_str().into()).unwrap();
            assert_eq!(back, kind);
        }
        // A configuration is named as its kind (the tag the API reads).
        let config: AlgorithmConfig =
            serde_json::from_value(serde_json::json!({"name": "w-dbo"})).unwrap();
        assert_eq!(
            serde_json::to_value(&config).unwrap()["name"],
            config.name()
        );
    }

    /// The list holds every algorithm once: a name left out of it would be one no
    /// listing offers.
    #[test]
    fn the_list_of_algorithms_holds_each_once() {
        let mut names: Vec<&str> = AlgorithmName::ALL.iter().map(|a| a.as_str()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), AlgorithmName::ALL.len());
        // Each kind's facts agree with its configuration's: priors are required where a
        // configuration without them does not parse.
        for kind in AlgorithmName::ALL {
            let bare = serde_json::json!({"name": kind.as_str()});
            let parsed = serde_json::from_value::<AlgorithmConfig>(bare);
            assert_eq!(
                parsed.is_err(),
                kind.priors() == PriorUse::Required,
                "{}",
                kind.as_str()
            );
            if let Ok(config) = parsed {
                assert_eq!(config.kind(), kind);
            }
        }
    }
}
