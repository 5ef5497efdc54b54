//! W-DBO (Bardou, Thiran & Ranieri 2024, compared in paper 002): spatio-temporal GP-UCB
//! that forgets an observation when its relevance — the integrated Wasserstein distance
//! between the posteriors with and without it, relative to the posterior's own size — is
//! below a removal budget that grows by ln(1+α) per temporal lengthscale of elapsed time.
//! A floor `min_dataset_size` keeps a collapsing temporal lengthscale from emptying the
//! dataset (docs/decisions/0003-w-dbo-banked-budget.md).

use super::{ObserveContext, Policy, PolicyError, PolicyState, RemovalReason, model_after};
use crate::domain::config::Beta;
use crate::gp::relevance::Relevance;

/// W-DBO with budget rate α.
pub struct WDbo {
    pub alpha: f64,
    pub min_dataset_size: u64,
    pub beta: Beta,
}

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::config::ModelConfig;
    use crate::gp::KernelKind;
    use crate::policy::Observation;

    /// Observations one per call, 10 s apart: during the warm-up the budget stays empty
    /// and nothing is forgotten; from the observation that completes it the budget grows
    /// by (Δt/l_T)·ln(1+α) per observation, less what removals spend, and after a long
    /// pause it removes down to the floor.
    #[test]
    fn the_budget_accrues_from_the_end_of_the_warm_up() {
        let policy = WDbo {
            alpha: 0.25,
            min_dataset_size: 2,
            beta: Beta::default(),
        };
        let model = ModelConfig {
            spatial_kernel: KernelKind::Matern52,
            temporal_kernel: Some(KernelKind::Matern32),
            noise: None,
            warmup: 5,
        };
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
}
