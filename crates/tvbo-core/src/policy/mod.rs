//! The optimisation algorithms, one file each, behind one [`Policy`] trait.
//!
//! A policy is a pure function of a session's active data, its pending suggestions and
//! its saved [`PolicyState`]: it proposes points of `[0,1]^d` (or arms) and, when data
//! arrives, says which observations to forget. It does no IO; the session service loads
//! and commits around it.

mod factory;
pub mod failures;
pub mod output_transform;
pub mod prior_cache;
pub mod prior_selection;
pub mod priors;
pub mod response_time;
pub mod stage;
pub mod surrogate;
mod ucb;

// Each algorithm's module, named as its options' module in `domain::algorithm`: its
// `BuildPolicy` and, for those that fit a GP, its `Policy`.
pub mod bolt;
pub mod et_gp_ucb;
pub mod gp_ucb;
pub mod hp_gp_ts;
pub mod map_gp_ts;
pub mod pe_gp_ts;
pub mod pe_gp_ucb;
pub mod r_gp_ucb;
pub mod random;
pub mod tv_gp_ucb;
pub mod w_dbo;

use rand::RngExt;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::acquisition;
use crate::domain::config::{Beta, ModelConfig};
use crate::domain::hyperpriors::FitReport;
use crate::domain::records::ResponseTimeSummary;
use crate::domain::space::SearchSpace;
use crate::gp::{Categories, GpError, Hyperparameters, KernelSpec};

pub use factory::{BuildPolicy, SessionPolicy, policy_for};
pub use prior_selection::{PriorSelection, PriorSelectionState, SelectionRule};
pub use stage::{MODEL_WORK_TARGET, Stage};
pub use surrogate::{FitSettings, Surrogate};
pub(crate) use ucb::model_after;
pub use ucb::{beta_value, ucb_proposals};

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

    /// Every arm's unit-cube point, in the arms' order.
    pub fn points(&self) -> &[Vec<f64>] {
        &self.points
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
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PolicyState {
    /// Hyperparameters of the last fit: the model by which BOLT and W-DBO judge the
    /// relevance of observations, and what `GET …/model` reports.
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Object>))]
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
    /// Where the recommendation stood when the last `optimum-moved` event was found, and
    /// the candidate for the next (docs/events.md); kept by the engine, not the policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Object>))]
    pub drift: Option<crate::domain::events::DriftState>,
    /// What this step's fit did beyond its search (bounds hit, the guard): set by the
    /// policy, moved into the step's record by the engine, never stored here.
    #[serde(skip)]
    #[cfg_attr(feature = "openapi", schema(ignore))]
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
    /// Coordinates held at given values (index, unit value): the suggest's `fixed`
    /// parameters, context ones included. Every proposal has them.
    pub fixed: &'a [(usize, f64)],
    /// Work on the policy's fitted model that may run beside UCB's refinements
    /// ([`BesideUcb`]); run only on the model [`Proposed::model`] hands on, over the unit
    /// cube. None runs nothing.
    pub beside: Option<&'a dyn BesideUcb>,
}

/// Work of the suggest's step on the policy's fitted model (the model of `ctx.data`
/// alone, [`Proposed::model`]), which the policy runs beside UCB's refinements on a core
/// they leave idle ([`acquisition::maximize_ucb_beside`]): the step's search of the
/// model's posterior mean for its recorded optimum. Not run when the policy fits no
/// such model (warm-up, a flat fit answered at random, arms, pending points).
pub trait BesideUcb: Sync {
    fn run(&self, model: &Surrogate);
}

/// A proposed point: its unit-cube coordinates, and its arm index for arm sessions.
#[derive(Clone, Debug, PartialEq)]
pub struct Proposal {
    pub x: Vec<f64>,
    pub arm: Option<usize>,
}

/// What a suggest's policy proposes: the points, and the model that chose them when it is
/// the model of the active data alone (`ctx.data` under the hyperparameters the policy
/// leaves in the state, conditioned on no pending or hallucinated point), which the step's
/// record reads the posterior's optimum from instead of building it again. Never saved.
#[derive(Debug)]
pub struct Proposed {
    pub proposals: Vec<Proposal>,
    /// The policy's model of `ctx.data`, as fitted; None when it fitted none, conditioned
    /// it on more (pending suggestions, its own earlier proposals), or works from another
    /// kind of model (priors over arms).
    pub model: Option<Surrogate>,
}

impl From<Vec<Proposal>> for Proposed {
    /// Proposals with no model to hand on.
    fn from(proposals: Vec<Proposal>) -> Self {
        Proposed {
            proposals,
            model: None,
        }
    }
}

/// What an observe call works from.
pub struct ObserveContext<'a> {
    pub space: &'a SearchSpace,
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
    /// Proposes `ctx.count` distinct points after the warm-up (see [`suggest`]), with the
    /// model of the active data that chose them when there is one ([`Proposed`]). The
    /// default is the UCB step shared by the GP-UCB family ([`ucb_proposals`]).
    fn propose(
        &self,
        ctx: &SuggestContext<'_>,
        state: &mut PolicyState,
        rng: &mut PolicyRng,
    ) -> Result<Proposed, PolicyError> {
        ucb_proposals(
            self.model_kernel(ctx.model, ctx.space),
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
        KernelSpec::new(model.spatial_kernel, model.temporal_kernel)
    }

    /// [`Policy::kernel`] over the inputs of `space`: its categorical parameters under
    /// the overlap kernel.
    fn model_kernel(&self, model: &ModelConfig, space: &SearchSpace) -> KernelSpec {
        self.kernel(model)
            .with_categories(Categories::new(&space.choice_counts()))
    }

    /// A temporal lengthscale the algorithm holds fixed instead of fitting.
    fn fixed_temporal_lengthscale(&self) -> Option<f64> {
        None
    }
}

/// Suggests `ctx.count` points: uniform random during the first `model.warmup`
/// suggestions of the session, the policy's proposals after (in a [`Stage::Acquisition`]
/// span, with its fits nested); with the policy's model of the active data when it hands
/// one on ([`Proposed`]: never when a warm-up point is among the proposals, since the
/// policy conditioned on it).
pub fn suggest(
    policy: &dyn Policy,
    ctx: &SuggestContext<'_>,
    state: &mut PolicyState,
    rng: &mut PolicyRng,
) -> Result<Proposed, PolicyError> {
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
        proposals.extend(proposed.proposals);
        return Ok(Proposed {
            proposals,
            model: proposed.model.filter(|_| random_count == 0),
        });
    }
    Ok(proposals.into())
}

/// A uniform random point of the box (its fixed coordinates held), or a uniform random
/// arm.
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
            let mut x: Vec<f64> = (0..ctx.space.dim()).map(|_| rng.random::<f64>()).collect();
            acquisition::hold(&mut x, ctx.fixed);
            Proposal {
                x: ctx.space.snap(&x),
                arm: None,
            }
        }
    }
}
