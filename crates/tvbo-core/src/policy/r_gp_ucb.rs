//! R-GP-UCB (Bogunovic et al. 2016, paper 000, Section 3, Algorithm 1): GP-UCB run in
//! blocks of N observations, the posterior reset to the prior at the start of each block.
//! The default N = 15 is the block length their Section 5.2 picks by cross-validation.

use super::{
    BuildPolicy, ObserveContext, Policy, PolicyError, PolicyState, RemovalReason, SessionPolicy,
};
use crate::domain::algorithm::r_gp_ucb::RGpUcb;
use crate::domain::checked::CheckedConfig;
use crate::domain::config::Beta;

impl Policy for RGpUcb {
    fn beta(&self) -> Beta {
        self.beta
    }

    /// Each observation fills the current block; when the block holds N observations the
    /// whole dataset, including the observation that completed it, is forgotten.
    fn observe(
        &self,
        ctx: &ObserveContext<'_>,
        state: &mut PolicyState,
    ) -> Result<Vec<(i64, RemovalReason)>, PolicyError> {
        let mut block: Vec<i64> = ctx.data.iter().map(|o| o.seq).collect();
        let mut removed = Vec::new();
        for observation in ctx.new {
            block.push(observation.seq);
            state.steps_since_reset += 1;
            if state.steps_since_reset >= self.reset_every {
                removed.extend(block.drain(..).map(|seq| (seq, RemovalReason::Reset)));
                state.steps_since_reset = 0;
                state.resets += 1;
            }
        }
        Ok(removed)
    }
}

impl BuildPolicy for RGpUcb {
    /// GP-UCB that forgets everything every `reset_every` observations.
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

    #[test]
    fn resets_after_every_block() {
        let policy = RGpUcb {
            reset_every: 3,
            beta: Beta::default(),
        };
        let model = ModelConfig {
            spatial_kernel: KernelKind::Matern52,
            temporal_kernel: None,
            noise: None,
            warmup: 0,
            fit_start: FitStart::Fixed,
            hyperpriors: Hyperpriors::None,
            failures: Failures::Ignore,
            lengthscales: Lengthscales::Shared,
            warping: Warping::None,
            level: Default::default(),
        };
        let obs = |seq| Observation {
            seq,
            x: vec![0.5],
            t: seq as f64,
            y: 0.0,
        };
        let mut state = PolicyState::default();
        let data = [obs(1)];
        let new = [obs(2), obs(3), obs(4)];
        state.steps_since_reset = 1;
        let removed = policy
            .observe(
                &ObserveContext {
                    space: &SearchSpace::unit(1),
                    model: &model,
                    data: &data,
                    new: &new,
                    suggestion_ordinals: &[],
                    fixed_noise: None,
                    t: 20.0,
                    response_times: &[],
                },
                &mut state,
            )
            .unwrap();
        let seqs: Vec<i64> = removed.iter().map(|r| r.0).collect();
        assert_eq!(seqs, vec![1, 2, 3]);
        assert_eq!(state.steps_since_reset, 1);
        assert_eq!(state.resets, 1);
    }
}
