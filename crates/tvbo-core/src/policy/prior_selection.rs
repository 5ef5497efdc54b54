//! Prior selection on arm sets (Sandberg & Chehreghani, paper 003): PE-GP-UCB (Ziomek
//! et al. 2024, their baseline), PE-GP-TS (Algorithm 1), HP-GP-TS (Algorithm 2) and
//! MAP-GP-TS (§5), plus GP-UCB under one given prior.
//!
//! Every prior p keeps its exact posterior over the arms ([`ArmGp`]). The saved state
//! holds what the algorithms accumulate: the active priors, for each prior the number of
//! steps it was selected |S_{t,p}|, the sum of its prediction errors Σ η_i and of its
//! confidence widths Σ √β_i σ_{i,p}(x_i) (Algorithm 1, line 8), the log hyperposterior
//! (Algorithm 2, line 6; kept for every rule, it is what the data say about the priors),
//! the prior each pending suggestion was chosen under, and one record per step.
//!
//! The same [`PriorSelection::choose`] and [`PriorSelection::record`] drive the server
//! (which rebuilds the posteriors from the store on each call) and in-process experiments
//! (which keep them).

use std::sync::Arc;

use rand::RngExt;
use serde::{Deserialize, Serialize};

use super::prior_cache::posterior_after;
use super::{
    ArmSet, ObserveContext, Policy, PolicyError, PolicyRng, PolicyState, Proposal, Proposed,
    RemovalReason, SessionPolicy, Stage, SuggestContext, beta_value,
};
use crate::domain::algorithm::{Algorithm, default_elimination_delta};
use crate::domain::checked::{CheckedConfig, GivenPriors};
use crate::domain::config::Beta;
use crate::domain::priors::PriorSpec;
use crate::domain::space::Arm;
use crate::gp::arms::{ArmGp, ArmPrior};

/// At most this many pending choices are remembered; older ones (suggestions never
/// observed) are dropped first.
const MAX_PENDING_CHOICES: usize = 4096;

/// The policy of a session whose algorithm selects by `rule` among its `given` priors:
/// `delta` is the elimination's confidence (the rules that eliminate; 0.05 else, unused),
/// `hyperprior` the priors' weights (uniform when absent).
pub(crate) fn session_policy(
    config: &CheckedConfig,
    given: &GivenPriors,
    rule: SelectionRule,
    delta: Option<f64>,
    hyperprior: Option<Vec<f64>>,
) -> SessionPolicy {
    SessionPolicy::Arms(PriorSelection::new(
        rule,
        given.priors.to_vec(),
        given.arms.arms.clone(),
        given.arms.points.clone(),
        config.goal.sign(),
        delta.unwrap_or_else(default_elimination_delta),
        hyperprior,
        given.noise,
    ))
}

/// [`session_policy`] over the given priors of a session whose algorithm (`_options`)
/// requires them. They are always there: a configuration whose options hold priors is
/// only checked ([`CheckedConfig::new`], also as a stored one is read) with its arms and
/// `model.noise`, as [`PolicySettings::Priors`](crate::domain::checked::PolicySettings).
pub(crate) fn over_required_priors<A: Algorithm>(
    config: &CheckedConfig,
    _options: &A,
    rule: SelectionRule,
    delta: Option<f64>,
    hyperprior: Option<Vec<f64>>,
) -> SessionPolicy {
    match config.given_priors() {
        Some(given) => session_policy(config, given, rule, delta, hyperprior),
        None => unreachable!("{}'s checked configuration has its priors", A::NAME),
    }
}

/// How an algorithm picks the (arm, prior) of a step.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum SelectionRule {
    /// argmax over (x, p ∈ P_{t−1}) of μ_{t,p}(x) + √β_t σ_{t,p}(x), β_t of 003 Lemma 4.1
    /// Eq. (4) (the confidence of f alone); prior elimination as PE-GP-TS.
    PeGpUcb,
    /// 003 Algorithm 1: f̃_{t,p} ~ GP_p for every active p, argmax over (x, p); prior
    /// elimination with β_t and ξ_t of Theorem 4.1.
    PeGpTs,
    /// 003 Algorithm 2: p_t ~ P_{t−1}, f̃_t ~ GP_{p_t}, argmax over x.
    HpGpTs,
    /// 003 §5: p_t = argmax P_{t−1} (ties broken at random), then as HP-GP-TS.
    MapGpTs,
    /// GP-UCB with a single given prior.
    Ucb(Beta),
}

impl SelectionRule {
    fn eliminates(self) -> bool {
        matches!(self, SelectionRule::PeGpUcb | SelectionRule::PeGpTs)
    }
}

/// The prior a pending suggestion was chosen under.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PendingChoice {
    /// The suggestion's ordinal in its session.
    pub ordinal: u64,
    pub prior: usize,
}

/// One observation step.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct StepRecord {
    /// The prior the observed suggestion was chosen under (null for warm-up suggestions
    /// and settings the client chose).
    pub prior: Option<usize>,
    /// Entropy (nats) of the hyperposterior after the step.
    pub entropy: f64,
}

/// What the prior-selection algorithms carry from step to step.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PriorSelectionState {
    /// Observations recorded: the t of the last step.
    pub steps: u64,
    /// Whether each prior is still in P_t.
    pub active: Vec<bool>,
    /// The step at which each eliminated prior left P_t.
    pub eliminated_at: Vec<Option<u64>>,
    /// |S_{t,p}|: steps each prior was selected and observed (counted under every rule;
    /// only the elimination rules' thresholds read it).
    pub selected: Vec<u64>,
    /// Σ_{i∈S_{t,p}} η_i, η_i = y_i − μ_{i,p}(x_i).
    pub error_sum: Vec<f64>,
    /// Σ_{i∈S_{t,p}} √β_i σ_{i,p}(x_i).
    pub confidence_sum: Vec<f64>,
    /// ln P_t(p), normalised (log-sum-exp = 0).
    pub log_hyperposterior: Vec<f64>,
    /// Priors of the suggestions not yet observed.
    pub pending: Vec<PendingChoice>,
    /// One record per observation step, oldest first.
    pub history: Vec<StepRecord>,
}

impl PriorSelectionState {
    /// P_t(p) for every prior.
    pub fn hyperposterior(&self) -> Vec<f64> {
        self.log_hyperposterior.iter().map(|l| l.exp()).collect()
    }

    /// The most probable active prior (the first on ties).
    pub fn most_probable_active(&self) -> usize {
        (0..self.active.len())
            .filter(|&p| self.active[p])
            .max_by(|&a, &b| {
                self.log_hyperposterior[a]
                    .total_cmp(&self.log_hyperposterior[b])
                    .then(b.cmp(&a))
            })
            .unwrap_or(0)
    }
}

/// Entropy −Σ p ln p (nats) of a distribution given by its normalised logarithms.
pub fn entropy(log_probabilities: &[f64]) -> f64 {
    log_probabilities
        .iter()
        .filter(|l| l.is_finite())
        .map(|&l| -l.exp() * l)
        .sum()
}

/// The least ln P_t(p) kept: e^{−1e300} is 0 in f64 as e^{−∞} is, but the floor is a
/// number JSON can store and arithmetic on it never gives NaN.
const LOG_PROBABILITY_FLOOR: f64 = -1e300;

/// ln Σ e^{v}, from the largest term (no overflow, and no underflow of the largest).
fn log_sum_exp(values: &[f64]) -> f64 {
    let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if !max.is_finite() {
        return max;
    }
    max + values.iter().map(|v| (v - max).exp()).sum::<f64>().ln()
}

/// β_t of 003 Theorem 4.1 (PE-GP-TS): 2 ln(2|X||P|π²t²/(3δ)).
pub fn beta_pe_gp_ts(arms: usize, priors: usize, t: u64, delta: f64) -> f64 {
    2.0 * (2.0 * arms as f64 * priors as f64 * PI2 * (t * t) as f64 / (3.0 * delta)).ln()
}

/// β_t of 003 Lemma 4.1 Eq. (4), the confidence of f under the true prior:
/// 2 ln(|X||P|π²t²/(3δ)) (PE-GP-UCB).
pub fn beta_pe_gp_ucb(arms: usize, priors: usize, t: u64, delta: f64) -> f64 {
    2.0 * (arms as f64 * priors as f64 * PI2 * (t * t) as f64 / (3.0 * delta)).ln()
}

/// ξ_t of 003 Theorem 4.1: 2σ² ln(|P|π²t²/(3δ)).
pub fn xi(noise_variance: f64, priors: usize, t: u64, delta: f64) -> f64 {
    2.0 * noise_variance * (priors as f64 * PI2 * (t * t) as f64 / (3.0 * delta)).ln()
}

const PI2: f64 = std::f64::consts::PI * std::f64::consts::PI;

/// The (arm, prior) of one step.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Choice {
    pub arm: usize,
    pub prior: usize,
}

/// A prior-selection algorithm over a session's arms.
pub struct PriorSelection {
    pub rule: SelectionRule,
    specs: Vec<PriorSpec>,
    arms: Vec<Arm>,
    /// The arms in the unit cube (as observations carry them).
    arm_points: ArmSet,
    /// +1 to maximise, −1 to minimise: priors are stated in the objective's units.
    sign: f64,
    /// δ of the elimination rules.
    delta: f64,
    /// Normalised prior weights P_0.
    hyperprior: Vec<f64>,
    noise_variance: f64,
    /// Number of search-space parameters (for GP-UCB's β schedules).
    dimension: usize,
}

impl PriorSelection {
    /// Bytes of heap memory held: the priors' specifications, the arms and the weights.
    pub fn heap_bytes(&self) -> usize {
        self.specs.iter().map(PriorSpec::heap_bytes).sum::<usize>()
            + self.specs.capacity() * std::mem::size_of::<PriorSpec>()
            + self.arms.iter().map(Arm::heap_bytes).sum::<usize>()
            + self.arms.capacity() * std::mem::size_of::<Arm>()
            + self.arm_points.heap_bytes()
            + self.hyperprior.capacity() * std::mem::size_of::<f64>()
    }

    /// `arm_points` are the arms in the unit cube, in the order of `arms`.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        rule: SelectionRule,
        specs: Vec<PriorSpec>,
        arms: Vec<Arm>,
        arm_points: Vec<Vec<f64>>,
        sign: f64,
        delta: f64,
        hyperprior: Option<Vec<f64>>,
        noise_variance: f64,
    ) -> PriorSelection {
        let count = specs.len();
        let dimension = arm_points.first().map_or(0, Vec::len);
        PriorSelection {
            rule,
            specs,
            arms,
            arm_points: ArmSet::new(arm_points),
            sign,
            delta,
            hyperprior: hyperprior.unwrap_or_else(|| vec![1.0 / count as f64; count]),
            noise_variance,
            dimension,
        }
    }

    /// The posterior of every prior, before any observation.
    pub fn prior_models(&self, priors: &[Arc<ArmPrior>]) -> Vec<ArmGp> {
        priors
            .iter()
            .map(|p| ArmGp::new(p.clone(), self.noise_variance))
            .collect()
    }

    /// The state before any step: every prior active, the hyperposterior = P_0.
    pub fn initial_state(&self) -> PriorSelectionState {
        let count = self.specs.len();
        PriorSelectionState {
            steps: 0,
            active: vec![true; count],
            eliminated_at: vec![None; count],
            selected: vec![0; count],
            error_sum: vec![0.0; count],
            confidence_sum: vec![0.0; count],
            log_hyperposterior: self
                .hyperprior
                .iter()
                .map(|w| w.ln().max(LOG_PROBABILITY_FLOOR))
                .collect(),
            pending: Vec::new(),
            history: Vec::new(),
        }
    }

    fn state_of(&self, state: &PolicyState) -> PriorSelectionState {
        match &state.prior_selection {
            Some(saved) if saved.active.len() == self.specs.len() => saved.clone(),
            _ => self.initial_state(),
        }
    }

    /// (arm, value) of each observation of `data`, oldest first.
    fn arm_observations(
        &self,
        data: &[super::Observation],
    ) -> Result<Vec<(usize, f64)>, PolicyError> {
        data.iter()
            .map(|o| Ok((self.arm_points.index_of(&o.x)?, o.y)))
            .collect()
    }

    fn posterior(
        &self,
        spec: &PriorSpec,
        observations: &[(usize, f64)],
    ) -> Result<ArmGp, PolicyError> {
        Stage::Fit.run(|| {
            posterior_after(
                spec,
                &self.arms,
                self.sign,
                self.noise_variance,
                observations,
            )
        })
    }

    /// The posteriors of every prior after `data` (oldest first).
    fn models_after(&self, data: &[super::Observation]) -> Result<Vec<ArmGp>, PolicyError> {
        let observations = self.arm_observations(data)?;
        self.specs
            .iter()
            .map(|spec| self.posterior(spec, &observations))
            .collect()
    }

    /// The posterior under the most probable active prior after `data`, for predictions
    /// and recommendations.
    pub fn current_model(
        &self,
        data: &[super::Observation],
        state: &PolicyState,
    ) -> Result<ArmGp, PolicyError> {
        let spec = &self.specs[self.state_of(state).most_probable_active()];
        self.posterior(spec, &self.arm_observations(data)?)
    }

    /// The arm of a unit-cube point, if it is one of the arms.
    pub fn arm_at(&self, x: &[f64]) -> Option<usize> {
        self.arm_points.index_of(x).ok()
    }

    /// The arms, and their unit-cube points in the same order.
    pub fn arms(&self) -> (&[Arm], &ArmSet) {
        (&self.arms, &self.arm_points)
    }

    /// Lines 3–4 of Algorithm 1 / 2–4 of Algorithm 2: the (arm, prior) of step
    /// `state.steps + 1` given the posteriors `models` (one per prior).
    pub fn choose(
        &self,
        models: &[ArmGp],
        state: &PriorSelectionState,
        rng: &mut PolicyRng,
    ) -> Choice {
        let t = state.steps + 1;
        let arms = self.arm_points.len();
        let priors = self.specs.len();
        let active = (0..priors).filter(|&p| state.active[p]);
        let ucb = |p: usize, beta: f64| {
            let model = &models[p];
            best_arm((0..arms).map(|a| model.mean(a) + (beta * model.variance(a)).sqrt()))
        };
        let thompson = |p: usize, rng: &mut PolicyRng| {
            let draw = models[p].sample(rng);
            best_arm(draw.iter().copied())
        };
        let best_over_priors = |candidates: Vec<(usize, (usize, f64))>| {
            candidates
                .into_iter()
                .fold(
                    None::<(usize, usize, f64)>,
                    |best, (p, (arm, value))| match best {
                        Some((_, _, v)) if v >= value => best,
                        _ => Some((p, arm, value)),
                    },
                )
                .map(|(prior, arm, _)| Choice { arm, prior })
                .expect("at least one prior is active")
        };
        match self.rule {
            SelectionRule::PeGpUcb => {
                let beta = beta_pe_gp_ucb(arms, priors, t, self.delta);
                best_over_priors(active.map(|p| (p, ucb(p, beta))).collect())
            }
            SelectionRule::PeGpTs => {
                best_over_priors(active.map(|p| (p, thompson(p, rng))).collect())
            }
            SelectionRule::HpGpTs => {
                let u: f64 = rng.random();
                let mut cumulative = 0.0;
                let mut prior = priors - 1;
                for (p, l) in state.log_hyperposterior.iter().enumerate() {
                    cumulative += l.exp();
                    if u < cumulative {
                        prior = p;
                        break;
                    }
                }
                Choice {
                    arm: thompson(prior, rng).0,
                    prior,
                }
            }
            SelectionRule::MapGpTs => {
                let max = state
                    .log_hyperposterior
                    .iter()
                    .copied()
                    .fold(f64::NEG_INFINITY, f64::max);
                let ties: Vec<usize> = (0..priors)
                    .filter(|&p| state.log_hyperposterior[p] == max)
                    .collect();
                let prior = ties[rng.random_range(0..ties.len())];
                Choice {
                    arm: thompson(prior, rng).0,
                    prior,
                }
            }
            SelectionRule::Ucb(beta) => {
                let beta = beta_value(beta, self.dimension, state.steps as usize, Some(arms));
                Choice {
                    arm: ucb(0, beta).0,
                    prior: 0,
                }
            }
        }
    }

    /// Lines 5–10 of Algorithm 1 and line 6 of Algorithm 2 for y observed at `arm`, chosen
    /// under `prior` (None for warm-up and client-chosen settings); then conditions every
    /// posterior on the observation.
    pub fn record(
        &self,
        models: &mut [ArmGp],
        state: &mut PriorSelectionState,
        arm: usize,
        y: f64,
        prior: Option<usize>,
    ) {
        let t = state.steps + 1;
        let priors = self.specs.len();
        // In log space, floored: a density that underflows every f64 (−∞) leaves its prior
        // at the floor, not at −∞ − (−∞) = NaN, and every stored logarithm stays finite.
        for (log_p, model) in state.log_hyperposterior.iter_mut().zip(models.iter()) {
            *log_p = (*log_p + model.log_predictive_density(arm, y)).max(LOG_PROBABILITY_FLOOR);
        }
        let normaliser = log_sum_exp(&state.log_hyperposterior);
        for log_p in &mut state.log_hyperposterior {
            *log_p = (*log_p - normaliser).max(LOG_PROBABILITY_FLOOR);
        }
        if let Some(p) = prior {
            state.selected[p] += 1;
            if self.rule.eliminates() {
                let model = &models[p];
                let beta = match self.rule {
                    SelectionRule::PeGpTs => {
                        beta_pe_gp_ts(self.arm_points.len(), priors, t, self.delta)
                    }
                    _ => beta_pe_gp_ucb(self.arm_points.len(), priors, t, self.delta),
                };
                state.error_sum[p] += y - model.mean(arm);
                state.confidence_sum[p] += (beta * model.variance(arm)).sqrt();
                let threshold = (xi(self.noise_variance, priors, t, self.delta)
                    * state.selected[p] as f64)
                    .sqrt()
                    + state.confidence_sum[p];
                let active = state.active.iter().filter(|a| **a).count();
                // The last active prior stays: P_t is never empty (Algorithm 1 assumes p* ∈ P).
                if state.active[p] && state.error_sum[p].abs() > threshold && active > 1 {
                    state.active[p] = false;
                    state.eliminated_at[p] = Some(t);
                }
            }
        }
        for model in models.iter_mut() {
            model.push(arm, y);
        }
        state.steps = t;
        state.history.push(StepRecord {
            prior,
            entropy: entropy(&state.log_hyperposterior),
        });
    }
}

/// The index and value of the largest entry (the first on ties).
fn best_arm(values: impl Iterator<Item = f64>) -> (usize, f64) {
    values
        .enumerate()
        .fold((0, f64::NEG_INFINITY), |best, (i, v)| {
            if v > best.1 { (i, v) } else { best }
        })
}

impl Policy for PriorSelection {
    fn propose(
        &self,
        ctx: &SuggestContext<'_>,
        state: &mut PolicyState,
        rng: &mut PolicyRng,
    ) -> Result<Proposed, PolicyError> {
        let mut models = self.models_after(ctx.data)?;
        let mut selection = self.state_of(state);
        for (x, _) in ctx.pending {
            let arm = self.arm_points.index_of(x)?;
            models.iter_mut().for_each(|m| m.hallucinate(arm));
        }
        let mut proposals = Vec::with_capacity(ctx.count);
        for i in 0..ctx.count {
            let choice = self.choose(&models, &selection, rng);
            selection.pending.push(PendingChoice {
                ordinal: ctx.issued_before + i as u64,
                prior: choice.prior,
            });
            models.iter_mut().for_each(|m| m.hallucinate(choice.arm));
            proposals.push(Proposal {
                x: self.arm_points.point(choice.arm).to_vec(),
                arm: Some(choice.arm),
            });
        }
        let excess = selection.pending.len().saturating_sub(MAX_PENDING_CHOICES);
        selection.pending.drain(..excess);
        state.prior_selection = Some(selection);
        Ok(proposals.into())
    }

    fn observe(
        &self,
        ctx: &ObserveContext<'_>,
        state: &mut PolicyState,
    ) -> Result<Vec<(i64, RemovalReason)>, PolicyError> {
        let mut models = self.models_after(ctx.data)?;
        let mut selection = self.state_of(state);
        for (k, observation) in ctx.new.iter().enumerate() {
            let arm = self.arm_points.index_of(&observation.x)?;
            let prior = ctx
                .suggestion_ordinals
                .get(k)
                .copied()
                .flatten()
                .and_then(|ordinal| {
                    let position = selection
                        .pending
                        .iter()
                        .position(|c| c.ordinal == ordinal)?;
                    Some(selection.pending.remove(position).prior)
                });
            self.record(&mut models, &mut selection, arm, observation.y, prior);
        }
        state.prior_selection = Some(selection);
        Ok(Vec::new())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::priors::PriorMean;
    use crate::domain::space::numbers;
    use crate::gp::arms::{KernelPriorParams, PriorKernel};
    use nalgebra::DVector;
    use rand::SeedableRng;

    /// Every prior of `policy` over its arms.
    fn priors(policy: &PriorSelection) -> Vec<Arc<ArmPrior>> {
        policy
            .specs
            .iter()
            .map(|spec| {
                crate::policy::prior_cache::build_prior(spec, &policy.arms, policy.sign).unwrap()
            })
            .collect()
    }

    fn arms(m: usize) -> (Vec<Arm>, Vec<Vec<f64>>) {
        let arms = (0..m)
            .map(|i| Arm {
                name: format!("a{i}"),
                params: numbers([("x", 20.0 * i as f64 / (m - 1) as f64)]),
            })
            .collect();
        let points = (0..m).map(|i| vec![i as f64 / (m - 1) as f64]).collect();
        (arms, points)
    }

    fn rbf(lengthscale: f64) -> PriorSpec {
        PriorSpec {
            name: None,
            kernel: Some(PriorKernel::Rbf),
            lengthscale: Some(lengthscale),
            variance: Some(1.0),
            period: None,
            alpha: None,
            mean: Some(PriorMean::Constant(0.0)),
            covariance: None,
        }
    }

    fn selection(rule: SelectionRule, m: usize) -> PriorSelection {
        let (arms, points) = arms(m);
        PriorSelection::new(
            rule,
            vec![rbf(4.0), rbf(2.0), rbf(1.0), rbf(0.5)],
            arms,
            points,
            1.0,
            0.05,
            None,
            0.0625,
        )
    }

    #[test]
    fn hyperposterior_equals_the_product_of_gaussian_likelihoods() {
        let policy = selection(SelectionRule::HpGpTs, 30);
        let priors = priors(&policy);
        let mut models = policy.prior_models(&priors);
        let mut state = policy.initial_state();
        let mut rng = PolicyRng::seed_from_u64(5);
        let mut observed = Vec::new();
        for _ in 0..12 {
            let arm = rng.random_range(0..30);
            let y: f64 = rng.random::<f64>() * 2.0 - 1.0;
            policy.record(&mut models, &mut state, arm, y, None);
            observed.push((arm, y));
        }
        // Direct: ln P_0(p) + ln N(y; μ₀, C + σ²I) over all observations at once (the
        // product of the one-step predictive densities is the joint marginal likelihood).
        let log_joint: Vec<f64> = priors
            .iter()
            .map(|prior| {
                let n = observed.len();
                let c = prior.covariance();
                let k = nalgebra::DMatrix::from_fn(n, n, |i, j| {
                    c[(observed[i].0, observed[j].0)] + if i == j { 0.0625 } else { 0.0 }
                });
                let r = DVector::from_fn(n, |i, _| observed[i].1 - prior.mean()[observed[i].0]);
                let inverse = k.clone().try_inverse().unwrap();
                let quadratic = (r.transpose() * inverse * &r)[(0, 0)];
                (0.25f64).ln()
                    - 0.5
                        * (quadratic
                            + k.determinant().ln()
                            + n as f64 * (2.0 * std::f64::consts::PI).ln())
            })
            .collect();
        let normaliser = log_sum_exp(&log_joint);
        for (p, l) in log_joint.iter().enumerate() {
            assert!(
                (state.log_hyperposterior[p] - (l - normaliser)).abs() < 1e-8,
                "prior {p}: {} vs {}",
                state.log_hyperposterior[p],
                l - normaliser
            );
        }
        assert_eq!(state.history.len(), 12);
        assert!((state.history[11].entropy - entropy(&state.log_hyperposterior)).abs() < 1e-15);
    }

    #[test]
    fn theorem_4_1_confidence_parameters() {
        // β_t = 2 ln(2|X||P|π²t²/(3δ)), ξ_t = 2σ² ln(|P|π²t²/(3δ)).
        let (m, p, t, delta, noise) = (500usize, 4usize, 7u64, 0.05, 0.0625);
        let pi2 = std::f64::consts::PI.powi(2);
        let beta = 2.0 * (2.0 * 500.0 * 4.0 * pi2 * 49.0 / (3.0 * 0.05f64)).ln();
        assert!((beta_pe_gp_ts(m, p, t, delta) - beta).abs() < 1e-12);
        let xi_direct = 2.0 * noise * (4.0 * pi2 * 49.0 / (3.0 * 0.05f64)).ln();
        assert!((xi(noise, p, t, delta) - xi_direct).abs() < 1e-12);
        assert!(beta_pe_gp_ucb(m, p, t, delta) < beta_pe_gp_ts(m, p, t, delta));
    }

    #[test]
    fn a_prior_with_a_wrong_mean_is_eliminated_and_the_last_one_stays() {
        let (arms, points) = arms(20);
        let mut far = rbf(2.0);
        far.mean = Some(PriorMean::Constant(10.0));
        let policy = PriorSelection::new(
            SelectionRule::PeGpTs,
            vec![far, rbf(2.0)],
            arms,
            points,
            1.0,
            0.05,
            None,
            0.01,
        );
        let priors = priors(&policy);
        let mut models = policy.prior_models(&priors);
        let mut state = policy.initial_state();
        let mut rng = PolicyRng::seed_from_u64(1);
        for _ in 0..40 {
            let choice = policy.choose(&models, &state, &mut rng);
            policy.record(&mut models, &mut state, choice.arm, 0.0, Some(choice.prior));
        }
        assert_eq!(state.active, vec![false, true]);
        assert!(state.eliminated_at[0].is_some());
        // Force errors on the remaining prior: it is never eliminated.
        for _ in 0..40 {
            policy.record(&mut models, &mut state, 3, 50.0, Some(1));
        }
        assert_eq!(state.active, vec![false, true]);
    }

    #[test]
    fn choices_are_reproducible_and_in_range() {
        for rule in [
            SelectionRule::PeGpUcb,
            SelectionRule::PeGpTs,
            SelectionRule::HpGpTs,
            SelectionRule::MapGpTs,
            SelectionRule::Ucb(Beta::Constant(2.0)),
        ] {
            let policy = selection(rule, 25);
            let priors = priors(&policy);
            let run = |seed: u64| {
                let mut models = policy.prior_models(&priors);
                let mut state = policy.initial_state();
                let mut rng = PolicyRng::seed_from_u64(seed);
                let mut arms = Vec::new();
                let mut chosen = vec![0u64; 4];
                for _ in 0..15 {
                    let choice = policy.choose(&models, &state, &mut rng);
                    assert!(choice.arm < 25 && choice.prior < 4);
                    assert!(state.active[choice.prior]);
                    let y = (choice.arm as f64 / 4.0).sin();
                    policy.record(&mut models, &mut state, choice.arm, y, Some(choice.prior));
                    arms.push(choice.arm);
                    chosen[choice.prior] += 1;
                }
                assert_eq!(state.selected, chosen, "{rule:?}");
                (arms, state)
            };
            assert_eq!(run(3), run(3), "{rule:?}");
        }
    }

    #[test]
    fn kernel_priors_are_built_over_raw_parameters() {
        let (arms, points) = arms(5);
        let policy = PriorSelection::new(
            SelectionRule::HpGpTs,
            vec![rbf(4.0)],
            arms.clone(),
            points,
            -1.0,
            0.05,
            None,
            0.01,
        );
        let prior = &priors(&policy)[0];
        let params = KernelPriorParams {
            kernel: PriorKernel::Rbf,
            lengthscale: 4.0,
            variance: 1.0,
            period: 1.0,
            alpha: 1.0,
        };
        // Arms 0 and 1 are 5 apart in raw units.
        assert!((prior.covariance()[(0, 1)] - params.covariance(&[0.0], &[5.0])).abs() < 1e-15);
    }
}
