//! The optimisation algorithms, one file each, behind one [`Policy`] trait.
//!
//! A policy is a pure function of a session's active data, its pending suggestions and
//! its saved [`PolicyState`]: it proposes points of `[0,1]^d` (or arms) and, when data
//! arrives, says which observations to forget. It does no IO; the session service loads
//! and commits around it.

pub mod bolt;
mod et_gp_ucb;
mod gp_ucb;
pub mod prior_cache;
pub mod prior_selection;
pub mod priors;
mod r_gp_ucb;
mod random;
pub mod response_time;
pub mod stage;
pub mod surrogate;
pub mod tv_gp_ucb;
mod w_dbo;

use rand::RngExt;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::acquisition::{self, AcquisitionOptions};
use crate::domain::config::{AlgorithmConfig, Beta, BetaSchedule, ModelConfig, SessionConfig};
use crate::domain::hyperpriors::{FitReport, Hyperpriors};
use crate::domain::records::ResponseTimeSummary;
use crate::domain::space::SearchSpace;
use crate::gp::{GpError, Hyperparameters, KernelSpec};

pub use prior_selection::{PriorSelection, PriorSelectionState, SelectionRule};
pub use stage::{MODEL_WORK_TARGET, Stage};
use surrogate::search_start;
pub use surrogate::{FitSettings, Surrogate};

/// The random-number generator every policy draws from. Seeded per call from the
/// session seed and the call's ordinal, so a rebuilt model makes the same choice.
pub type PolicyRng = ChaCha8Rng;

/// A session's arms as points of the unit cube, with the lookup from a point (as
/// observations and pending suggestions carry it) to its arm.
#[derive(Clone, Debug)]
pub struct ArmSet {
    points: Vec<Vec<f64>>,
    index: std::collections::HashMap<Vec<u64>, usize>,
}

impl ArmSet {
    /// Bytes of heap memory held: the points and the index (its table and keys).
    pub fn heap_bytes(&self) -> usize {
        let keys: usize = self
            .index
            .keys()
            .map(|k| k.capacity() * std::mem::size_of::<u64>())
            .sum();
        crate::domain::rows_heap_bytes(&self.points)
            + self.index.capacity() * (std::mem::size_of::<(Vec<u64>, usize)>() + 1)
            + keys
    }

    pub fn new(points: Vec<Vec<f64>>) -> ArmSet {
        let index = points
            .iter()
            .enumerate()
            .map(|(i, x)| (x.iter().map(|v| v.to_bits()).collect(), i))
            .collect();
        ArmSet { points, index }
    }

    pub fn len(&self) -> usize {
        self.points.len()
    }

    pub fn is_empty(&self) -> bool {
        self.points.is_empty()
    }

    /// The unit-cube point of arm `arm`.
    pub fn point(&self, arm: usize) -> &[f64] {
        &self.points[arm]
    }

    /// The arm at exactly `x`.
    pub fn index_of(&self, x: &[f64]) -> Result<usize, PolicyError> {
        let key: Vec<u64> = x.iter().map(|v| v.to_bits()).collect();
        self.index.get(&key).copied().ok_or(PolicyError::UnknownArm)
    }
}

/// One observation as a policy sees it: x in `[0,1]^d`, session time, and the value on the
/// internal "larger is better" scale.
#[derive(Clone, Debug, PartialEq)]
pub struct Observation {
    pub seq: i64,
    pub x: Vec<f64>,
    pub t: f64,
    pub y: f64,
}

/// Saved between calls (stored as JSON with the session).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct PolicyState {
    /// Hyperparameters of the last fit: the model by which BOLT and W-DBO judge the
    /// relevance of observations, and what `GET …/model` reports.
    #[schema(value_type = Option<Object>)]
    pub hyperparameters: Option<Hyperparameters>,
    /// Observations since the last reset (R-GP-UCB, ET-GP-UCB; W-DBO, which never
    /// resets, counts from the start to know when its warm-up is over).
    #[serde(default)]
    pub steps_since_reset: u64,
    /// Resets so far (R-GP-UCB, ET-GP-UCB).
    #[serde(default)]
    pub resets: u64,
    /// BOLT's recommended dataset size n* (null until computed).
    #[serde(default)]
    pub max_dataset_size: Option<u64>,
    /// W-DBO's removal budget (in units of ln(1 + relevance)).
    #[serde(default)]
    pub budget: f64,
    /// Session time of the latest observation seen by W-DBO's budget.
    #[serde(default)]
    pub last_observation_t: Option<f64>,
    /// Active priors, elimination statistics and hyperposterior (algorithms with priors).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prior_selection: Option<PriorSelectionState>,
    /// What this step's fit did beyond its search (bounds hit, the guard): set by the
    /// policy, moved into the step's record by the engine, never stored here.
    #[serde(skip)]
    #[schema(ignore)]
    pub last_fit: Option<FitReport>,
}

/// What a suggest call works from.
pub struct SuggestContext<'a> {
    pub space: &'a SearchSpace,
    /// Unit-cube points of the finite arm set, if the session has one.
    pub arms: Option<&'a [Vec<f64>]>,
    pub model: &'a ModelConfig,
    /// Active observations, oldest first.
    pub data: &'a [Observation],
    /// Pending suggestions: point and target time.
    pub pending: &'a [(Vec<f64>, f64)],
    /// Target time of the new suggestions.
    pub t: f64,
    pub count: usize,
    /// Suggestions handed out before this call's first proposal (the warm-up counts
    /// them; the first proposal's ordinal).
    pub issued_before: u64,
    /// Observation-noise variance fixed by the configuration, in objective units squared.
    pub fixed_noise: Option<f64>,
    /// The threads the step's UCB maximisation may use ([`acquisition::Cores`]); the
    /// proposals do not depend on it.
    pub cores: &'a dyn acquisition::Cores,
}

/// A proposed point: its unit-cube coordinates, and its arm index for arm sessions.
#[derive(Clone, Debug, PartialEq)]
pub struct Proposal {
    pub x: Vec<f64>,
    pub arm: Option<usize>,
}

/// What an observe call works from.
pub struct ObserveContext<'a> {
    pub model: &'a ModelConfig,
    /// Active observations before this call.
    pub data: &'a [Observation],
    /// The observations of this call, in order.
    pub new: &'a [Observation],
    /// For each new observation, the ordinal of the suggestion it answers (None for
    /// settings the client chose).
    pub suggestion_ordinals: &'a [Option<u64>],
    pub fixed_noise: Option<f64>,
    /// Session time now: relevance integrates over [t, ∞).
    pub t: f64,
    /// The session's response-time samples, summed per dataset size (BOLT's R(n)).
    pub response_times: &'a [ResponseTimeSummary],
}

/// Why an observation left the active dataset.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RemovalReason {
    /// A scheduled or event-triggered reset (R-GP-UCB, ET-GP-UCB).
    Reset,
    /// Least relevant while the dataset exceeded n* (BOLT).
    Relevance,
    /// Relevance below the accumulated budget (W-DBO).
    Budget,
}

impl RemovalReason {
    pub fn as_str(self) -> &'static str {
        match self {
            RemovalReason::Reset => "reset",
            RemovalReason::Relevance => "relevance",
            RemovalReason::Budget => "budget",
        }
    }
}

/// Failures of a policy (numerical; never caused by client input that passed validation).
#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    #[error(transparent)]
    Gp(#[from] GpError),
    /// A stored prior no longer builds (it was validated when the session was created).
    #[error("prior: {0}")]
    Prior(String),
    /// An observation of an arm session is not at one of its arms.
    #[error("an observation is not at one of the session's arms")]
    UnknownArm,
}

/// An optimisation algorithm.
pub trait Policy: Send + Sync {
    /// Proposes `ctx.count` distinct points after the warm-up (see [`suggest`]). The
    /// default is the UCB step shared by the GP-UCB family ([`ucb_proposals`]).
    fn propose(
        &self,
        ctx: &SuggestContext<'_>,
        state: &mut PolicyState,
        rng: &mut PolicyRng,
    ) -> Result<Vec<Proposal>, PolicyError> {
        ucb_proposals(
            self.kernel(ctx.model),
            self.fixed_temporal_lengthscale(),
            self.beta(),
            ctx,
            state,
            rng,
        )
    }

    /// The exploration weight of the UCB step.
    fn beta(&self) -> Beta {
        Beta::default()
    }

    /// Called with new observations before they are stored; returns the seqs (old or new)
    /// to forget. The default forgets nothing.
    fn observe(
        &self,
        _ctx: &ObserveContext<'_>,
        _state: &mut PolicyState,
    ) -> Result<Vec<(i64, RemovalReason)>, PolicyError> {
        Ok(Vec::new())
    }

    /// The kernel of this algorithm's model.
    fn kernel(&self, model: &ModelConfig) -> KernelSpec {
        KernelSpec {
            spatial: model.spatial_kernel,
            temporal: model.temporal_kernel,
        }
    }

    /// A temporal lengthscale the algorithm holds fixed instead of fitting.
    fn fixed_temporal_lengthscale(&self) -> Option<f64> {
        None
    }
}

/// The policy of a session's configuration.
pub fn policy_for(config: &SessionConfig) -> Box<dyn Policy> {
    if let Some(policy) = prior_selection_for(config) {
        return Box::new(policy);
    }
    if let Some(policy) = tv_gp_ucb_with_prior_for(config) {
        return Box::new(policy);
    }
    match &config.algorithm {
        AlgorithmConfig::Bolt {
            min_dataset_size,
            max_dataset_size,
            beta,
        } => Box::new(bolt::Bolt {
            min_dataset_size: *min_dataset_size,
            max_dataset_size: *max_dataset_size,
            beta: *beta,
        }),
        AlgorithmConfig::WDbo {
            alpha,
            min_dataset_size,
            beta,
        } => Box::new(w_dbo::WDbo {
            alpha: *alpha,
            min_dataset_size: *min_dataset_size,
            beta: *beta,
        }),
        AlgorithmConfig::Random {} => Box::new(random::RandomSearch),
        AlgorithmConfig::GpUcb { beta, .. } => Box::new(gp_ucb::GpUcb { beta: *beta }),
        AlgorithmConfig::RGpUcb { reset_every, beta } => Box::new(r_gp_ucb::RGpUcb {
            reset_every: *reset_every,
            beta: *beta,
        }),
        AlgorithmConfig::TvGpUcb { epsilon, beta, .. } => Box::new(tv_gp_ucb::TvGpUcb {
            epsilon: *epsilon,
            beta: *beta,
        }),
        AlgorithmConfig::EtGpUcb { delta, beta } => Box::new(et_gp_ucb::EtGpUcb {
            delta: *delta,
            beta: *beta,
        }),
        AlgorithmConfig::PeGpUcb { .. }
        | AlgorithmConfig::PeGpTs { .. }
        | AlgorithmConfig::HpGpTs { .. }
        | AlgorithmConfig::MapGpTs { .. } => {
            unreachable!("algorithms with priors are built by prior_selection_for")
        }
    }
}

/// The prior-selection policy of a session whose algorithm works from given priors over
/// its arms (validated at creation: arms, priors and noise are present).
pub fn prior_selection_for(config: &SessionConfig) -> Option<PriorSelection> {
    let (rule, delta, hyperprior) = match &config.algorithm {
        AlgorithmConfig::GpUcb {
            beta,
            priors: Some(_),
        } => (SelectionRule::Ucb(*beta), 0.05, None),
        AlgorithmConfig::PeGpUcb { delta, .. } => (SelectionRule::PeGpUcb, *delta, None),
        AlgorithmConfig::PeGpTs { delta, .. } => (SelectionRule::PeGpTs, *delta, None),
        AlgorithmConfig::HpGpTs { hyperprior, .. } => {
            (SelectionRule::HpGpTs, 0.05, hyperprior.clone())
        }
        AlgorithmConfig::MapGpTs { hyperprior, .. } => {
            (SelectionRule::MapGpTs, 0.05, hyperprior.clone())
        }
        _ => return None,
    };
    let (arms, points) = arms_of(config)?;
    let priors = config.algorithm.priors()?.to_vec();
    Some(PriorSelection::new(
        rule,
        priors,
        arms,
        points,
        config.goal.sign(),
        delta,
        hyperprior,
        config
            .model
            .noise
            .expect("validated: algorithms with priors need model.noise"),
    ))
}

/// TV-GP-UCB with one given prior over the session's arms.
pub fn tv_gp_ucb_with_prior_for(config: &SessionConfig) -> Option<tv_gp_ucb::TvGpUcbWithPrior> {
    let AlgorithmConfig::TvGpUcb {
        epsilon,
        beta,
        priors: Some(priors),
    } = &config.algorithm
    else {
        return None;
    };
    let (arms, arm_points) = arms_of(config)?;
    Some(tv_gp_ucb::TvGpUcbWithPrior {
        prior: priors.first()?.clone(),
        arms,
        arm_points: ArmSet::new(arm_points),
        sign: config.goal.sign(),
        noise_variance: config
            .model
            .noise
            .expect("validated: algorithms with priors need model.noise"),
        epsilon: *epsilon,
        beta: *beta,
    })
}

/// A session's arms and their unit-cube points.
fn arms_of(config: &SessionConfig) -> Option<(Vec<crate::domain::space::Arm>, Vec<Vec<f64>>)> {
    let arms = config.arms.clone()?;
    let space = config.space();
    let points = arms
        .iter()
        .map(|a| {
            space
                .to_unit(&a.params, "arms")
                .expect("arms were validated")
        })
        .collect();
    Some((arms, points))
}

/// Suggests `ctx.count` points: uniform random during the first `model.warmup`
/// suggestions of the session, the policy's proposals after (in a [`Stage::Acquisition`]
/// span, with its fits nested).
pub fn suggest(
    policy: &dyn Policy,
    ctx: &SuggestContext<'_>,
    state: &mut PolicyState,
    rng: &mut PolicyRng,
) -> Result<Vec<Proposal>, PolicyError> {
    let warmup = u64::from(ctx.model.warmup);
    let random_count = (warmup.saturating_sub(ctx.issued_before) as usize).min(ctx.count);
    let mut proposals: Vec<Proposal> = (0..random_count)
        .map(|_| random_proposal(ctx, rng))
        .collect();
    if random_count < ctx.count {
        let mut pending = ctx.pending.to_vec();
        pending.extend(proposals.iter().map(|p| (p.x.clone(), ctx.t)));
        let rest = SuggestContext {
            pending: &pending,
            count: ctx.count - random_count,
            issued_before: ctx.issued_before + random_count as u64,
            ..*ctx
        };
        let proposed = Stage::Acquisition.run(|| policy.propose(&rest, state, rng))?;
        proposals.extend(proposed);
    }
    Ok(proposals)
}

/// A uniform random point of the box, or a uniform random arm.
pub(crate) fn random_proposal(ctx: &SuggestContext<'_>, rng: &mut PolicyRng) -> Proposal {
    match ctx.arms {
        Some(arms) => {
            let index = rng.random_range(0..arms.len());
            Proposal {
                x: arms[index].clone(),
                arm: Some(index),
            }
        }
        None => {
            let x: Vec<f64> = (0..ctx.space.dim()).map(|_| rng.random::<f64>()).collect();
            Proposal {
                x: ctx.space.snap(&x),
                arm: None,
            }
        }
    }
}

/// The exploration weight β for a dataset of `n` points in `dim` dimensions.
pub fn beta_value(beta: Beta, dim: usize, n: usize, arms: Option<usize>) -> f64 {
    match beta {
        Beta::Constant(b) => b,
        Beta::Schedule(BetaSchedule::Wdbo) => acquisition::beta_wdbo(dim, n.max(1)),
        Beta::Schedule(BetaSchedule::Srinivas) => match arms {
            Some(arms) => {
                acquisition::beta_srinivas_finite(arms, n + 1, acquisition::SRINIVAS_DEFAULT_DELTA)
            }
            None => acquisition::beta_srinivas_continuous(
                dim,
                n + 1,
                acquisition::SRINIVAS_DEFAULT_DELTA,
                acquisition::SRINIVAS_DEFAULT_A,
                acquisition::SRINIVAS_DEFAULT_B,
                acquisition::SRINIVAS_DEFAULT_R,
            ),
        },
    }
}

/// The model of the active data after this call's observations, with the saved
/// hyperparameters (fitted now when there are none yet), for the
/// relevance-based forgetting of BOLT and W-DBO.
pub(crate) fn model_after(
    policy: &dyn Policy,
    ctx: &ObserveContext<'_>,
    state: &mut PolicyState,
) -> Result<(Vec<Observation>, Surrogate), PolicyError> {
    let data: Vec<Observation> = ctx.data.iter().chain(ctx.new).cloned().collect();
    let dim = data.first().map_or(0, |o| o.x.len());
    let spec = policy.kernel(ctx.model);
    let surrogate = match state.hyperparameters {
        Some(hyper) => Surrogate::with_hyperparameters(spec, dim, &data, hyper)?,
        None => {
            let surrogate = Surrogate::fit(
                spec,
                dim,
                &data,
                &FitSettings {
                    fixed_temporal_lengthscale: policy.fixed_temporal_lengthscale(),
                    ..FitSettings::from_default_start(ctx.fixed_noise, ctx.model.hyperpriors)
                },
            )?;
            state.hyperparameters = Some(*surrogate.hyperparameters());
            state.last_fit = Some(surrogate.fit_report().clone());
            surrogate
        }
    };
    Ok((data, surrogate))
}

/// The UCB step shared by the GP-UCB family: fit the model to the data, add the pending
/// points as hallucinated observations (GP-BUCB, Desautels et al. 2014: y = μ(x), which
/// leaves the mean unchanged and shrinks the variance), and pick `count` maximisers of
/// μ + √β σ at the target time, each hallucinated before the next.
///
/// Under `model.hyperpriors: robust`, a fit whose model stays flat in space after the
/// guard's second start (l_S at its upper bound: the data cannot tell points apart, and
/// UCB's maximiser would be an artefact, typically a corner) is answered by uniform
/// random proposals instead, which give the next fit spread-out data
/// ([`FitReport::explored`]; docs/decisions/0009-hyperpriors-and-the-fit-guard.md).
pub fn ucb_proposals(
    spec: KernelSpec,
    fixed_temporal_lengthscale: Option<f64>,
    beta: Beta,
    ctx: &SuggestContext<'_>,
    state: &mut PolicyState,
    rng: &mut PolicyRng,
) -> Result<Vec<Proposal>, PolicyError> {
    let mut surrogate = Surrogate::fit(
        spec,
        ctx.space.dim(),
        ctx.data,
        &FitSettings {
            fixed_noise: ctx.fixed_noise,
            fixed_temporal_lengthscale,
            start: search_start(
                ctx.model.fit_start,
                state.hyperparameters.as_ref(),
                ctx.issued_before,
            ),
            hyperpriors: ctx.model.hyperpriors,
        },
    )?;
    state.hyperparameters = Some(*surrogate.hyperparameters());
    let mut report = surrogate.fit_report().clone();
    report.explored = ctx.model.hyperpriors == Hyperpriors::Robust && report.flat_in_space();
    let explored = report.explored;
    state.last_fit = Some(report);
    if explored {
        return Ok((0..ctx.count).map(|_| random_proposal(ctx, rng)).collect());
    }
    let beta = beta_value(
        beta,
        ctx.space.dim(),
        ctx.data.len(),
        ctx.arms.map(<[_]>::len),
    );
    for (x, t) in ctx.pending {
        surrogate.hallucinate(x, *t)?;
    }
    let options = AcquisitionOptions::default();
    let mut proposals = Vec::with_capacity(ctx.count);
    for i in 0..ctx.count {
        let proposal = match ctx.arms {
            Some(arms) => {
                let (index, _) = acquisition::best_arm_ucb(surrogate.gp(), beta, ctx.t, arms);
                Proposal {
                    x: arms[index].clone(),
                    arm: Some(index),
                }
            }
            None => {
                let (x, _) = acquisition::maximize_ucb_on(
                    surrogate.gp(),
                    beta,
                    ctx.t,
                    &options,
                    ctx.cores,
                    rng,
                );
                Proposal {
                    x: ctx.space.snap(&x),
                    arm: None,
                }
            }
        };
        // The next proposal sees this one as pending (the last has no next).
        if i + 1 < ctx.count {
            surrogate.hallucinate(&proposal.x, ctx.t)?;
        }
        proposals.push(proposal);
    }
    Ok(proposals)
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;
    use serde_json::json;

    use super::*;
    use crate::domain::config::{CreateSession, FitStart};
    use crate::gp::SearchStart;
    use crate::gp::fit::{FitOptions, fit_hyperparameters};
    use crate::policy::surrogate::standardised;

    fn bolt_with(fit_start: FitStart, hyperpriors: Hyperpriors) -> SessionConfig {
        let request: CreateSession = serde_json::from_value(json!({
            "parameters": [{"name": "a", "low": 0, "high": 1}, {"name": "b", "low": 0, "high": 1}],
            "algorithm": {"name": "bolt"},
            "model": {"warmup": 0, "fit_start": fit_start, "hyperpriors": hyperpriors},
            "time": {"source": "client"}
        }))
        .unwrap();
        SessionConfig::from_request(request, 0).unwrap()
    }

    fn bolt(fit_start: FitStart) -> SessionConfig {
        bolt_with(fit_start, Hyperpriors::None)
    }

    /// A suggest of `config` on `data` at t = 30 from an empty state: its proposals and
    /// the state it leaves.
    fn suggest_on(config: &SessionConfig, data: &[Observation]) -> (Vec<Proposal>, PolicyState) {
        let space = config.space();
        let ctx = SuggestContext {
            space: &space,
            arms: None,
            model: &config.model,
            data,
            pending: &[],
            t: 30.0,
            count: 2,
            issued_before: data.len() as u64 + 1,
            fixed_noise: None,
            cores: &1,
        };
        let mut state = PolicyState::default();
        let policy = policy_for(config);
        let proposals = suggest(
            policy.as_ref(),
            &ctx,
            &mut state,
            &mut PolicyRng::seed_from_u64(3),
        )
        .unwrap();
        (proposals, state)
    }

    /// Values that depend on time alone, over points spread across the square: the
    /// likelihood wants a model flat in space (l_S at its top) however the fit starts.
    /// Under `robust` the guard searches again, the model stays flat, and the suggest
    /// answers with uniform proposals, recorded as explored; under `none` the report only
    /// names the bound and UCB proposes as the papers' protocol does.
    #[test]
    fn a_model_flat_in_space_is_answered_by_uniform_proposals() {
        let data: Vec<Observation> = (0..60)
            .map(|i| Observation {
                seq: i + 1,
                x: vec![(i * 7 % 60) as f64 / 60.0, (i * 13 % 60) as f64 / 60.0],
                t: i as f64 * 0.5,
                y: (i as f64 / 16.0).sin(),
            })
            .collect();
        let (robust, state) = suggest_on(&bolt_with(FitStart::Fixed, Hyperpriors::Robust), &data);
        let report = state.last_fit.expect("a fit report");
        assert!(report.flat_in_space(), "{report:?}");
        assert!(report.second_start && report.explored, "{report:?}");
        let (exact, state) = suggest_on(&bolt_with(FitStart::Fixed, Hyperpriors::None), &data);
        let report = state.last_fit.expect("a fit report");
        assert!(report.flat_in_space(), "{report:?}");
        assert!(!report.second_start && !report.explored, "{report:?}");
        assert_ne!(robust, exact);
    }

    /// The fit a suggest of `config` leaves in a state that held `previous`.
    fn fitted_by_suggest(
        config: &SessionConfig,
        data: &[Observation],
        previous: Hyperparameters,
    ) -> Hyperparameters {
        let space = config.space();
        let ctx = SuggestContext {
            space: &space,
            arms: None,
            model: &config.model,
            data,
            pending: &[],
            t: 30.0,
            count: 1,
            issued_before: data.len() as u64 + 1,
            fixed_noise: None,
            cores: &1,
        };
        let mut state = PolicyState {
            hyperparameters: Some(previous),
            ..PolicyState::default()
        };
        let policy = policy_for(config);
        suggest(
            policy.as_ref(),
            &ctx,
            &mut state,
            &mut PolicyRng::seed_from_u64(3),
        )
        .unwrap();
        state.hyperparameters.unwrap()
    }

    #[test]
    fn every_fifth_suggest_of_a_previous_session_fits_from_the_default_start() {
        let h = Hyperparameters::default();
        assert_eq!(
            search_start(FitStart::Previous, Some(&h), 11),
            SearchStart::Previous(&h)
        );
        assert_eq!(
            search_start(FitStart::Previous, Some(&h), 10),
            SearchStart::Default
        );
        assert_eq!(
            search_start(FitStart::Previous, None, 11),
            SearchStart::Default
        );
        assert_eq!(
            search_start(FitStart::Fixed, Some(&h), 11),
            SearchStart::Default
        );
    }

    #[test]
    fn a_suggest_fits_from_the_start_its_session_names() {
        let data: Vec<Observation> = (0..30)
            .map(|i| {
                let (a, b) = ((i * 7 % 30) as f64 / 30.0, (i * 11 % 30) as f64 / 30.0);
                Observation {
                    seq: i + 1,
                    x: vec![a, b],
                    t: i as f64,
                    y: (6.0 * a).sin() + b * b + 0.01 * i as f64,
                }
            })
            .collect();
        let (_, _, xs, ts, ys) = standardised(&data);
        let spec = KernelSpec::default();
        let previous = Hyperparameters {
            signal_variance: 0.8,
            spatial_lengthscale: 0.25,
            temporal_lengthscale: 50.0,
            noise_variance: 0.02,
        };
        let fit = |start| {
            fit_hyperparameters(spec, &xs, &ts, &ys, start, &FitOptions::default()).unwrap()
        };
        let warm = fit(SearchStart::Previous(&previous));
        let fresh = fit(SearchStart::Default);
        assert_ne!(warm, fresh, "the two starts must be told apart");
        assert_eq!(
            fitted_by_suggest(&bolt(FitStart::Previous), &data, previous),
            warm
        );
        assert_eq!(
            fitted_by_suggest(&bolt(FitStart::Fixed), &data, previous),
            fresh
        );
    }
}
