//! W-DBO (Bardou, Thiran & Ranieri 2024, compared in paper 002): spatio-temporal GP-UCB
//! that forgets an observation when its relevance — the integrated Wasserstein distance
//! between the posteriors with and without it, relative to the posterior's own size — is
//! below a removal budget that grows by ln(1+α) per temporal lengthscale of elapsed time.
//! A floor `min_dataset_size` keeps a collapsing temporal lengthscale from emptying the
//! dataset (docs/decisions/0003-w-dbo-banked-budget.md).

use super::{
    BuildPolicy, ObserveContext, Policy, PolicyError, PolicyState, RemovalReason, SessionPolicy,
    model_after,
};
use crate::domain::algorithm::w_dbo::WDbo;
use crate::domain::checked::CheckedConfig;
use crate::domain::config::Beta;
use crate::gp::relevance::Relevance;

impl Policy for WDbo {
    fn beta(&self) -> Beta {
        self.beta
    }

    /// After the warm-up: L += (Δt/l_T)·ln(1+α) for the time since the previous
    /// observation; then, while n > n_min and min_i ln(1+R_i) < L: drop the argmin and
    /// L −= ln(1+R_i). As in the reference implementation (`WDBOOptimizer.clean`), the
    /// budget starts accruing at the observation that completes the warm-up
    /// (`model.warmup` observations) and nothing is removed before it.
    fn observe(
        &self,
        ctx: &ObserveContext<'_>,
        state: &mut PolicyState,
    ) -> Result<Vec<(i64, RemovalReason)>, PolicyError> {
        let (mut data, surrogate) = model_after(self, ctx, state)?;
        let temporal_lengthscale = surrogate.hyperparameters().temporal_lengthscale;
        let warmup = u64::from(ctx.model.warmup);
        for observation in ctx.new {
            state.steps_since_reset += 1;
            if state.steps_since_reset < warmup {
                continue;
            }
            let elapsed = state
                .last_observation_t
                .map_or(0.0, |last| (observation.t - last).max(0.0));
            state.budget += elapsed / temporal_lengthscale * self.alpha.ln_1p();
            state.last_observation_t = Some(
                state
                    .last_observation_t
                    .map_or(observation.t, |last| last.max(observation.t)),
            );
        }
        let mut removed = Vec::new();
        if state.steps_since_reset < warmup {
            return Ok(removed);
        }
        if data.len() as u64 <= self.min_dataset_size {
            return Ok(removed);
        }
        let mut relevance = Relevance::new(surrogate.gp(), ctx.t)?;
        while data.len() as u64 > self.min_dataset_size {
            let Some((index, value)) = relevance.least_relevant() else {
                break;
            };
            let cost = value.ln_1p();
            if cost >= state.budget {
                break;
            }
            state.budget -= cost;
            removed.push((data.remove(index).seq, RemovalReason::Budget));
            relevance.remove(index);
        }
        Ok(removed)
    }
}

impl BuildPolicy for WDbo {
    /// W-DBO with budget rate α.
    fn session_policy(&self, _config: &CheckedConfig) -> SessionPolicy {
        SessionPolicy::Surrogate(Box::new(self.clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::config::{
        Failures, FitStart, Hyperpriors, Lengthscales, ModelConfig, Warping,
    };
    use crate::domain::space::SearchSpace;
    use crate::gp::KernelKind;
    use crate::policy::Observation;

    /// W-DBO with α = 0.25 and the given floor, on Matérn-5/2 × Matérn-3/2 with the
    /// given warm-up.
    fn w_dbo_session(min_dataset_size: u64, warmup: u32) -> (WDbo, ModelConfig) {
        let policy = WDbo {
            alpha: 0.25,
            min_dataset_size,
            beta: Beta::default(),
        };
        let model = ModelConfig {
            spatial_kernel: KernelKind::Matern52,
            temporal_kernel: Some(KernelKind::Matern32),
            noise: None,
            warmup,
            fit_start: FitStart::Fixed,
            hyperpriors: Hyperpriors::None,
            failures: Failures::Ignore,
            lengthscales: Lengthscales::Shared,
            warping: Warping::None,
            level: Default::default(),
        };
        (policy, model)
    }

    /// Observations one per call, 10 s apart: during the warm-up the budget stays empty
    /// and nothing is forgotten; from the observation that completes it the budget grows
    /// by (Δt/l_T)·ln(1+α) per observation, less what removals spend, and after a long
    /// pause it removes down to the floor.
    #[test]
    fn the_budget_accrues_from_the_end_of_the_warm_up() {
        let (policy, model) = w_dbo_session(2, 5);
        let mut state = PolicyState::default();
        let mut data: Vec<Observation> = Vec::new();
        for seq in 1..=13i64 {
            // The last observation comes after a long pause: everything before it is
            // stale, and the budget the pause earned removes down to the floor.
            let t = if seq == 13 { 1e5 } else { 10.0 * seq as f64 };
            let new = [Observation {
                seq,
                x: vec![(seq as f64 * 0.37).fract()],
                t,
                y: (t / 30.0).sin() + (seq as f64 * 0.37).fract(),
            }];
            let budget_before = state.budget;
            let removed = policy
                .observe(
                    &ObserveContext {
                        space: &SearchSpace::unit(1),
                        model: &model,
                        data: &data,
                        new: &new,
                        suggestion_ordinals: &[],
                        fixed_noise: None,
                        t,
                        response_times: &[],
                    },
                    &mut state,
                )
                .unwrap();
            if seq <= 5 {
                assert!(removed.is_empty(), "removed during the warm-up");
                assert_eq!(state.budget, 0.0, "budget during the warm-up");
                assert_eq!(state.last_observation_t, (seq == 5).then_some(t));
            } else {
                let rate = 0.25f64.ln_1p() / state.hyperparameters.unwrap().temporal_lengthscale;
                let elapsed = t - data.iter().map(|o| o.t).fold(0.0, f64::max);
                let accrued = budget_before + elapsed * rate;
                if removed.is_empty() {
                    assert!((state.budget - accrued).abs() < 1e-12 * accrued.max(1.0));
                } else {
                    assert!(state.budget <= accrued && state.budget >= 0.0);
                }
            }
            data.extend(new);
            data.retain(|o| !removed.iter().any(|(seq, _)| *seq == o.seq));
        }
        assert_eq!(
            data.len(),
            2,
            "the pause did not empty the dataset to the floor"
        );
    }

    /// The collapse of the W-DBO fidelity issue, on a fixed history: 20 spread
    /// observations of a drifting 4-D double-well polynomial, then 40 near-repeats of one
    /// setting (UCB exploiting), with the hyperparameters the exact fit finds on such data
    /// (l_S ≈ 0.6 of the unit box in 4 dimensions, l_T = 300 s). A small budget may take
    /// near-repeats, whose information the others hold, but never the spread
    /// observations. When the spatial integral was capped at 1 (it exceeds 1 from
    /// l_S ≈ 0.58 here), every relevance fell to about zero and this budget emptied the
    /// dataset down to its floor.
    #[test]
    fn a_small_budget_keeps_the_distinct_observations_at_a_long_lengthscale() {
        use crate::gp::Hyperparameters;
        let (policy, model) = w_dbo_session(15, 15);
        let f = |x: &[f64], t: f64| -> f64 {
            x.iter()
                .enumerate()
                .map(|(i, v)| {
                    let z = 3.0 * v - 1.5;
                    (z * z - 1.0).powi(2) + 0.4 * (t / 50.0 + i as f64).sin() * z
                })
                .sum()
        };
        // A fixed quasi-random design (golden-ratio sequence), then repeats of its best.
        let spread: Vec<Vec<f64>> = (1..=20)
            .map(|k| {
                (1..=4)
                    .map(|j| (f64::from(k) * 0.618_033_988_75 * f64::from(j).sqrt()).fract())
                    .collect()
            })
            .collect();
        let best = spread
            .iter()
            .min_by(|a, b| f(a, 2.0).total_cmp(&f(b, 2.0)))
            .unwrap()
            .clone();
        let mut data: Vec<Observation> = Vec::new();
        for seq in 0..60i64 {
            let t = 0.1 * seq as f64;
            let x = if seq < 20 {
                spread[seq as usize].clone()
            } else {
                best.iter().map(|v| v + 1e-4 * (seq % 3) as f64).collect()
            };
            let y = f(&x, t) + 0.05 * ((seq * 7919) % 13) as f64 / 13.0;
            data.push(Observation { seq, x, t, y });
        }
        let new = [data.pop().unwrap()];
        let mut state = PolicyState {
            hyperparameters: Some(Hyperparameters {
                signal_variance: 1.2,
                spatial_lengthscale: 0.6,
                temporal_lengthscale: 300.0,
                noise_variance: 1e-3,
                categorical_lengthscale: 1.0,
                lengthscale_ratios: Default::default(),
                level: None,
            }),
            steps_since_reset: 59,
            budget: 0.005,
            last_observation_t: Some(5.8),
            ..PolicyState::default()
        };
        let removed = policy
            .observe(
                &ObserveContext {
                    space: &SearchSpace::unit(4),
                    model: &model,
                    data: &data,
                    new: &new,
                    suggestion_ordinals: &[],
                    fixed_noise: None,
                    t: 5.9,
                    response_times: &[],
                },
                &mut state,
            )
            .unwrap();
        let spread_removed = removed.iter().filter(|(seq, _)| *seq < 20).count();
        assert_eq!(
            spread_removed,
            0,
            "removed {removed:?} ({} in all) with a budget of 0.005",
            removed.len()
        );
        assert!(60 - removed.len() > 20, "{} removed", removed.len());
    }
}
