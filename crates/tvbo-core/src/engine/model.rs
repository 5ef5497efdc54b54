//! The read model: the model of a session's active data (its recent failed runs
//! imputed under `model.failures: impute`), under its saved hyperparameters, that predictions, recommendations, regret estimates and the step
//! snapshots are read from.

use std::sync::OnceLock;

use super::model_data;
use crate::acquisition::{self, AcquisitionOptions, Cores};
use crate::domain::checked::CheckedConfig;
use crate::domain::config::epsilon_of_temporal_lengthscale;
use crate::domain::records::{
    FailedRun, FittedHyperparameters, ObservationRow, RecordedOptimum, StepSnapshot,
};
use crate::domain::space::Arm;
use crate::gp::arms::{ArmGp, TimeVaryingArmGp};
use crate::policy::tv_gp_ucb::TvGpUcbWithPrior;
use crate::policy::{
    self, BesideUcb, FitSettings, PolicyError, PolicyState, SessionPolicy, Stage, Surrogate,
};

/// The model predictions, recommendations and regret estimates read from.
pub enum CurrentModel {
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
    /// The model of the session's active data and its `failed` runs ([`model_data`]):
    /// under its saved hyperparameters (no refit), or, for algorithms with priors, the
    /// posterior under the most probable active prior (which exists before any
    /// observation).
    pub fn of(
        config: &CheckedConfig,
        active: &[ObservationRow],
        failed: &[FailedRun],
        state: &PolicyState,
    ) -> Result<Option<CurrentModel>, PolicyError> {
        Self::reusing(config, active, failed, state, None)
    }

    /// [`CurrentModel::of`], given `built`, a model the step's policy built already:
    /// taken as it is when it is the very model `of` would build (the same kernel,
    /// hyperparameters and data, bit for bit: [`Surrogate::is_built_from`]), so that
    /// whatever is read from it is the same, without a second factorisation; otherwise
    /// dropped and the model built as `of` builds it.
    pub fn reusing(
        config: &CheckedConfig,
        active: &[ObservationRow],
        failed: &[FailedRun],
        state: &PolicyState,
        built: Option<Surrogate>,
    ) -> Result<Option<CurrentModel>, PolicyError> {
        Ok(Self::reusing_told(config, active, failed, state, built)?.map(|(model, _)| model))
    }

    /// [`CurrentModel::reusing`], telling whether the model is `built`.
    fn reusing_told(
        config: &CheckedConfig,
        active: &[ObservationRow],
        failed: &[FailedRun],
        state: &PolicyState,
        built: Option<Surrogate>,
    ) -> Result<Option<(CurrentModel, bool)>, PolicyError> {
        let data = model_data(config, active, failed);
        let policy = match SessionPolicy::of(config) {
            SessionPolicy::Arms(selection) => {
                let gp = selection.current_model(&data, state)?;
                return Ok(Some((CurrentModel::Arms { selection, gp }, false)));
            }
            SessionPolicy::TimeVaryingArms(policy) => {
                let gp = policy.current_model(&data, state)?;
                return Ok(Some((CurrentModel::TimeVaryingArms { policy, gp }, false)));
            }
            SessionPolicy::Surrogate(policy) => policy,
        };
        if active.is_empty() {
            return Ok(None);
        }
        let spec = policy.model_kernel(&config.model, config.space());
        let dim = config.parameters.len();
        let (surrogate, is_built) = match state.hyperparameters {
            Some(hyper) => match built
                .filter(|b| b.is_built_from(spec, dim, &data, &hyper, config.model.warping))
            {
                Some(built) => (built, true),
                None => (
                    Surrogate::with_hyperparameters(spec, dim, &data, hyper, config.model.warping)?,
                    false,
                ),
            },
            // Nothing fitted yet (warm-up, random search): fit now.
            None => (
                Surrogate::fit(
                    spec,
                    dim,
                    &data,
                    &FitSettings {
                        fixed_temporal_lengthscale: policy.fixed_temporal_lengthscale(),
                        ..FitSettings::from_default_start(config.model.noise, &config.model)
                    },
                )?,
                false,
            ),
        };
        Ok(Some((CurrentModel::Surrogate(surrogate), is_built)))
    }

    /// Posterior mean and standard deviation at (x, t) on the internal scale; None for a
    /// point that is not one of the arms of a model over arms.
    pub fn predict(&self, x: &[f64], t: f64) -> Option<(f64, f64)> {
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
    pub fn mean(&self, x: &[f64], t: f64) -> f64 {
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
    pub fn memory_bytes(&self) -> usize {
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

    pub fn uses_time(&self) -> bool {
        match self {
            CurrentModel::Surrogate(surrogate) => surrogate.gp().spec().temporal.is_some(),
            CurrentModel::Arms { .. } => false,
            CurrentModel::TimeVaryingArms { .. } => true,
        }
    }

    /// The maximiser of the posterior mean at time `t` on the unit cube, with its arm's
    /// name for arm sessions (ties go to the first arm). Off the arms, it maximises the
    /// mean over 512 Sobol points refined by bounded L-BFGS, seeded from the session's
    /// seed, so the same model and time give the same point (on any number of `cores`).
    /// A [`Stage::Optimum`].
    pub fn recommend(
        &self,
        config: &CheckedConfig,
        t: f64,
        fixed: &[(usize, f64)],
        cores: &dyn Cores,
    ) -> (Vec<f64>, Option<String>) {
        Stage::Optimum.run(|| self.search_recommendation(config, t, fixed, cores))
    }

    fn search_recommendation(
        &self,
        config: &CheckedConfig,
        t: f64,
        fixed: &[(usize, f64)],
        cores: &dyn Cores,
    ) -> (Vec<f64>, Option<String>) {
        let (arms, points): (&[Arm], &[Vec<f64>]) = match self {
            CurrentModel::Arms { selection, .. } => {
                let (arms, points) = selection.arms();
                (arms, points.points())
            }
            CurrentModel::TimeVaryingArms { policy, .. } => {
                (&policy.arms, policy.arm_points.points())
            }
            CurrentModel::Surrogate(surrogate) => match config.arms() {
                Some(arms) => (&arms.arms, &arms.points),
                None => return (mean_maximiser(surrogate, config, t, fixed, cores), None),
            },
        };
        let index = (0..points.len())
            .max_by(|&a, &b| {
                self.mean(&points[a], t)
                    .total_cmp(&self.mean(&points[b], t))
                    .then(b.cmp(&a))
            })
            .expect("arm sets are not empty");
        (points[index].clone(), Some(arms[index].name.clone()))
    }

    /// [`CurrentModel::recommend`] as recorded in a step snapshot: on the user's scale,
    /// with the posterior mean there in the objective's sign; given the suggest's
    /// `fixed` coordinates (its context), so that a regret estimated against it compares
    /// settings for the same context.
    pub fn optimum(
        &self,
        config: &CheckedConfig,
        t: f64,
        fixed: &[(usize, f64)],
        cores: &dyn Cores,
    ) -> RecordedOptimum {
        let (x, arm) = self.recommend(config, t, fixed, cores);
        self.recorded(config, t, x, arm)
    }

    /// The record of the maximiser `x` (with its arm's name) of this model's mean at `t`.
    fn recorded(
        &self,
        config: &CheckedConfig,
        t: f64,
        x: Vec<f64>,
        arm: Option<String>,
    ) -> RecordedOptimum {
        let mean = self.mean(&x, t);
        RecordedOptimum {
            t,
            params: config.space().from_unit(&x),
            arm,
            mean: config.goal.sign() * mean,
        }
    }
}

/// The maximiser of `surrogate`'s posterior mean at `t` over the unit cube given `fixed`,
/// for a session without arms: 512 Sobol points from the session's own stream refined by
/// bounded L-BFGS, snapped to the space's grid ([`CurrentModel::recommend`]).
fn mean_maximiser(
    surrogate: &Surrogate,
    config: &CheckedConfig,
    t: f64,
    fixed: &[(usize, f64)],
    cores: &dyn Cores,
) -> Vec<f64> {
    let mut rng = super::call_rng(config.seed, u64::MAX);
    let (x, _) = acquisition::maximize_mean(
        surrogate.gp(),
        t,
        &AcquisitionOptions::default(),
        fixed,
        cores,
        &mut rng,
    );
    config.space().snap(&x)
}

/// The step's search for the recorded optimum, run by the policy beside UCB's
/// refinements on its fitted model ([`BesideUcb`]), on one thread: what
/// [`CurrentModel::recommend`] finds on that model, for a session without arms, found
/// while UCB runs instead of after it. A [`Stage::Optimum`].
pub(crate) struct MeanSearchBeside<'a> {
    config: &'a CheckedConfig,
    t: f64,
    fixed: &'a [(usize, f64)],
    found: OnceLock<Vec<f64>>,
}

impl<'a> MeanSearchBeside<'a> {
    /// The search at `t` given `fixed`, for a session without arms (None with arms).
    pub(crate) fn new(
        config: &'a CheckedConfig,
        t: f64,
        fixed: &'a [(usize, f64)],
    ) -> Option<Self> {
        config.arms().is_none().then(|| MeanSearchBeside {
            config,
            t,
            fixed,
            found: OnceLock::new(),
        })
    }

    /// The maximiser found, if the policy ran the search.
    pub(crate) fn found(self) -> Option<Vec<f64>> {
        self.found.into_inner()
    }
}

impl BesideUcb for MeanSearchBeside<'_> {
    fn run(&self, model: &Surrogate) {
        let x = Stage::Optimum.run(|| mean_maximiser(model, self.config, self.t, self.fixed, &1));
        // Run once per suggest: one proposal.
        let _ = self.found.set(x);
    }
}

/// The hyperparameters of the session's last fit, as reported: l_T only with a temporal
/// kernel, ε only for TV-GP-UCB (its equivalent of l_T).
pub fn fitted_hyperparameters(
    config: &CheckedConfig,
    state: &PolicyState,
) -> Option<FittedHyperparameters> {
    // The model's kernel has time exactly when the configuration gives it a temporal
    // kernel (`Policy::kernel`); no policy needs building to ask.
    let has_time = config.model.temporal_kernel.is_some();
    state.hyperparameters.map(|h| {
        let temporal = has_time.then_some(h.temporal_lengthscale);
        FittedHyperparameters {
            signal_variance: h.signal_variance,
            spatial_lengthscale: h.spatial_lengthscale,
            temporal_lengthscale: temporal,
            noise_variance: h.noise_variance,
            epsilon: temporal
                .filter(|_| config.algorithm.facts().epsilon_in_time)
                .map(epsilon_of_temporal_lengthscale),
            categorical_lengthscale: config
                .space()
                .has_categorical()
                .then_some(h.categorical_lengthscale),
            lengthscales: (!h.lengthscale_ratios.is_isotropic()).then(|| {
                let parameters = config.space().parameters().iter().enumerate();
                parameters
                    .filter(|(_, p)| p.choice_list().is_empty())
                    .map(|(d, p)| {
                        let l = h.spatial_lengthscale * h.lengthscale_ratios.get(d);
                        (p.name.clone(), l)
                    })
                    .collect()
            }),
            level_variance: h.level.map(|level| level.variance),
            level_lengthscale: h.level.map(|level| level.lengthscale),
        }
    })
}

/// Where a step records the posterior's optimum: over the active observations, at time
/// `t`, with the suggest's `fixed` coordinates held, on the threads `cores` allows; on
/// `built`, the model the step's policy chose from, when it is the one the record would
/// build ([`CurrentModel::reusing`]).
#[derive(Clone)]
pub struct OptimumAt<'a> {
    pub active: &'a [ObservationRow],
    /// The session's failed runs ([`model_data`]).
    pub failed: &'a [FailedRun],
    pub t: f64,
    pub fixed: &'a [(usize, f64)],
    pub cores: &'a dyn Cores,
    /// The policy's model of the active data ([`crate::policy::Proposed::model`]), if any.
    pub built: Option<Surrogate>,
    /// The maximiser of `built`'s mean at `t` given `fixed`, if the policy searched for it
    /// beside UCB (the engine's `MeanSearchBeside`); read only when `built` is the record's
    /// model.
    pub searched: Option<Vec<f64>>,
}

/// What a step leaves the model as ([`StepSnapshot`]): the dataset size after it
/// (`dataset_size`), the algorithm's n* or budget, the priors' standing, and, once the
/// session has `issued` more suggestions than its `model.warmup` (a model chose one),
/// the fitted hyperparameters and, when `optimum_at` gives the active observations, a
/// time and the cores the search may use, the posterior mean's maximiser at that time
/// (none for random search, which fits no model). The maximiser costs a model built
/// from the saved hyperparameters (no refit), unless the policy's own model of the active
/// data is that model (`OptimumAt::built`), and a search of its mean, unless the policy
/// ran that search beside UCB (`OptimumAt::searched`).
pub fn step_snapshot(
    config: &CheckedConfig,
    state: &PolicyState,
    dataset_size: usize,
    optimum_at: Option<OptimumAt<'_>>,
    issued: u64,
) -> Result<StepSnapshot, PolicyError> {
    // During the warm-up the suggestions are uniform random and no model chose them; a
    // fit made meanwhile (BOLT's and W-DBO's relevance needs one at each observe) starts
    // from the defaults on a handful of points, and would read as the model's belief.
    let past_warmup = issued > u64::from(config.model.warmup);
    let hyperparameters = fitted_hyperparameters(config, state).filter(|_| past_warmup);
    let selection = state.prior_selection.as_ref();
    let has_model = past_warmup && (state.hyperparameters.is_some() || selection.is_some());
    let optimum = match optimum_at {
        Some(at) if has_model && !at.active.is_empty() => {
            let searched = at.searched;
            CurrentModel::reusing_told(config, at.active, at.failed, state, at.built)?.map(
                |(model, is_built)| match searched.filter(|_| is_built) {
                    Some(x) => model.recorded(config, at.t, x, None),
                    None => model.optimum(config, at.t, at.fixed, at.cores),
                },
            )
        }
        _ => None,
    };
    let facts = config.algorithm.facts();
    let eliminates = facts.eliminates_priors;
    Ok(StepSnapshot {
        dataset_size: dataset_size as i64,
        max_dataset_size: state.max_dataset_size,
        budget: facts.reports_budget.then_some(state.budget),
        hyperparameters,
        optimum,
        prior_probabilities: selection
            .filter(|_| !eliminates)
            .map(|s| s.hyperposterior()),
        priors_active: selection.filter(|_| eliminates).map(|s| s.active.clone()),
        response_time_fit: None,
        state_not_saved: None,
        fit: None,
    })
}
