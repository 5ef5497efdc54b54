//! W-DBO (Bardou, Thiran & Ranieri 2024, compared in paper 002): spatio-temporal GP-UCB
//! that forgets an observation when its relevance — the integrated Wasserstein distance
//! between the posteriors with and without it, relative to the posterior's own size — is
//! below a removal budget that grows by ln(1+α) per temporal lengthscale of elapsed time
//! (DESIGN.md §4). A floor `min_dataset_size` keeps a collapsing temporal lengthscale from
//! emptying the dataset.

use super::{ObserveContext, Policy, PolicyError, PolicyState, RemovalReason, model_after};
use crate::gp::relevance::Relevance;
use crate::session::config::Beta;

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

    /// L += (Δt/l_T)·ln(1+α) for the time since the previous observation; then, while
    /// n > n_min and min_i ln(1+R_i) < L: drop the argmin and L −= ln(1+R_i).
    fn observe(
        &self,
        ctx: &ObserveContext<'_>,
        state: &mut PolicyState,
    ) -> Result<Vec<(i64, RemovalReason)>, PolicyError> {
        let (mut data, surrogate) = model_after(self, ctx, state)?;
        let temporal_lengthscale = surrogate.hyperparameters().temporal_lengthscale;
        for observation in ctx.new {
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
