//! ET-GP-UCB (Brunzema, von Rohr & Trimpe 2022, "On controller tuning with time-varying
//! Bayesian optimization", compared in paper 002): static GP-UCB whose dataset is reset
//! when an observation is too surprising for the current model.
//!
//! The trigger, with t̃ the observations since the last reset, π_t = π² t̃²/6 and δ = 0.1:
//! |y − μ(x)| > √(2 ln(2π_t/δ)) σ(x) + √(2 σ_n² ln(2π_t/δ)).
//! On a trigger the dataset is emptied and the surprising observation starts the new one.

use super::{
    BuildPolicy, FitSettings, Observation, ObserveContext, Policy, PolicyError, PolicyState,
    RemovalReason, SessionPolicy, Surrogate,
};
use crate::domain::algorithm::et_gp_ucb::EtGpUcb;
use crate::domain::checked::CheckedConfig;
use crate::domain::config::Beta;

impl EtGpUcb {
    /// The trigger threshold on |y − μ(x)| for posterior std `sigma`, noise std `noise_std`
    /// and `steps` observations since the last reset.
    pub fn threshold(&self, sigma: f64, noise_std: f64, steps: u64) -> f64 {
        let steps = steps.max(1) as f64;
        let pi_t = std::f64::consts::PI.powi(2) * steps * steps / 6.0;
        let log_term = 2.0 * (2.0 * pi_t / self.delta).ln();
        log_term.sqrt() * sigma + (noise_std * noise_std * log_term).sqrt()
    }
}

impl Policy for EtGpUcb {
    fn beta(&self) -> Beta {
        self.beta
    }

    fn observe(
        &self,
        ctx: &ObserveContext<'_>,
        state: &mut PolicyState,
    ) -> Result<Vec<(i64, RemovalReason)>, PolicyError> {
        let spec = self.model_kernel(ctx.model, ctx.space);
        let mut dataset: Vec<Observation> = ctx.data.to_vec();
        let mut removed = Vec::new();
        // One fit per call; each new observation then enters the model in O(n²).
        let mut model = if dataset.len() >= 2 {
            Some(Surrogate::fit(
                spec,
                ctx.new[0].x.len(),
                &dataset,
                &FitSettings::from_default_start(ctx.fixed_noise, ctx.model),
            )?)
        } else {
            None
        };
        for observation in ctx.new {
            state.steps_since_reset += 1;
            if let Some(surrogate) = &model {
                // On the GP's standardised scale, where its σ and σ_n are.
                let (mean, variance) = surrogate.gp().predict(&observation.x, observation.t);
                let noise_std = surrogate.hyperparameters().noise_variance.sqrt();
                let limit =
                    self.threshold(variance.max(0.0).sqrt(), noise_std, state.steps_since_reset);
                if (surrogate.output().forward(observation.y) - mean).abs() > limit {
                    removed.extend(dataset.drain(..).map(|o| (o.seq, RemovalReason::Reset)));
                    state.steps_since_reset = 1;
                    state.resets += 1;
                    model = None;
                }
            }
            dataset.push(observation.clone());
            match &mut model {
                Some(surrogate) => surrogate.push(&observation.x, observation.t, observation.y)?,
                None if dataset.len() >= 2 => {
                    model = Some(Surrogate::fit(
                        spec,
                        observation.x.len(),
                        &dataset,
                        &FitSettings::from_default_start(ctx.fixed_noise, ctx.model),
                    )?);
                }
                None => {}
            }
        }
        Ok(removed)
    }
}

impl BuildPolicy for EtGpUcb {
    /// Event-triggered GP-UCB.
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

    fn model() -> ModelConfig {
        ModelConfig {
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
        }
    }

    fn run(jump: f64) -> (Vec<i64>, PolicyState) {
        let policy = EtGpUcb {
            delta: 0.1,
            beta: Beta::default(),
        };
        let data: Vec<Observation> = (0..12)
            .map(|i| {
                let x = i as f64 / 11.0;
                Observation {
                    seq: i + 1,
                    x: vec![x],
                    t: i as f64,
                    y: (6.0 * x).sin(),
                }
            })
            .collect();
        let new = [Observation {
            seq: 13,
            x: vec![0.5],
            t: 12.0,
            y: 3.0f64.sin() + jump,
        }];
        let mut state = PolicyState {
            steps_since_reset: 12,
            ..PolicyState::default()
        };
        let removed = policy
            .observe(
                &ObserveContext {
                    space: &SearchSpace::unit(1),
                    model: &model(),
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
        (removed.into_iter().map(|r| r.0).collect(), state)
    }

    #[test]
    fn a_consistent_observation_keeps_the_data() {
        let (removed, state) = run(0.0);
        assert!(removed.is_empty());
        assert_eq!(state.resets, 0);
        assert_eq!(state.steps_since_reset, 13);
    }

    #[test]
    fn a_jump_resets_the_data() {
        let (removed, state) = run(10.0);
        assert_eq!(removed, (1..=12).collect::<Vec<i64>>());
        assert_eq!(state.resets, 1);
        assert_eq!(state.steps_since_reset, 1);
    }
}
