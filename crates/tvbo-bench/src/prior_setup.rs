//! The synthetic prior-selection setups of paper 003 §5 as benchmark objectives.
//!
//! Replication `seed` draws the true prior p* uniformly from the setup's priors and
//! f ~ GP_{p*} over 500 arms evenly spaced in [0, 20], exactly as
//! [`Setup::sample_objective`](crate::experiments::Setup::sample_objective) does
//! for `cargo bench --bench prior_selection` (the same seed gives the same p* and f).
//! The bench minimises −f, whose regret is 003's f(x*) − f(x_t); the priors handed to
//! the algorithms are therefore priors of −f (means negated, covariances unchanged).
//! Observations carry Gaussian noise of standard deviation 0.25 and one evaluation costs
//! [`EVALUATION_SECONDS`], so a run makes about one query per second of its horizon: the
//! `priors` suite's 500 s stand for 003's T = 500, less the compute time.

use nalgebra::DVector;

use super::error::BenchError;
use super::experiments::{self, SetupKind};
use super::objective::Objective;
use tvbo_core::domain::priors::{PriorMean, PriorSpec};

/// Seconds one evaluation takes.
pub const EVALUATION_SECONDS: f64 = 1.0;

/// One replication of a 003 setup: f ~ GP_{p*} over the setup's arms.
pub struct PriorSetupObjective {
    /// The arms in the unit interval, i/(m−1).
    arms: Vec<Vec<f64>>,
    /// The setup's priors, of −f.
    priors: Vec<PriorSpec>,
    true_prior: usize,
    /// −f at every arm.
    values: DVector<f64>,
    noise_variance: f64,
}

impl PriorSetupObjective {
    /// Replication `seed` of `kind` with 003's 500 arms.
    pub fn new(kind: SetupKind, seed: u64) -> Result<Self, BenchError> {
        Self::with_arms(kind, seed, experiments::ARM_COUNT)
    }

    /// The same over `arm_count` arms.
    pub fn with_arms(kind: SetupKind, seed: u64, arm_count: usize) -> Result<Self, BenchError> {
        if arm_count < 2 {
            return Err(BenchError::Objective(format!(
                "a prior-selection setup needs at least 2 arms (got {arm_count})"
            )));
        }
        let setup = kind.setup(arm_count);
        let (true_prior, f) = setup.sample_objective(&setup.build_priors(), seed);
        let priors = setup
            .priors
            .iter()
            .map(|spec| PriorSpec {
                mean: spec.mean.as_ref().map(|mean| match mean {
                    PriorMean::Constant(c) => PriorMean::Constant(-c),
                    PriorMean::PerArm(values) => {
                        PriorMean::PerArm(values.iter().map(|v| -v).collect())
                    }
                }),
                ..spec.clone()
            })
            .collect();
        Ok(PriorSetupObjective {
            arms: (0..arm_count)
                .map(|i| vec![i as f64 / (arm_count - 1) as f64])
                .collect(),
            priors,
            true_prior,
            values: -f,
            noise_variance: setup.noise_variance,
        })
    }

    /// The index of p* among the priors.
    pub fn true_prior(&self) -> usize {
        self.true_prior
    }

    /// The arm nearest to unit point x.
    fn index(&self, x: &[f64]) -> usize {
        (x[0].clamp(0.0, 1.0) * (self.arms.len() - 1) as f64).round() as usize
    }
}

impl Objective for PriorSetupObjective {
    fn dim(&self) -> usize {
        1
    }

    fn arms(&self) -> Option<&[Vec<f64>]> {
        Some(&self.arms)
    }

    fn parameter_range(&self) -> (f64, f64) {
        experiments::ARM_RANGE
    }

    fn priors(&self) -> Option<&[PriorSpec]> {
        Some(&self.priors)
    }

    fn noise_variance(&self) -> f64 {
        self.noise_variance
    }

    fn cost(&self) -> f64 {
        EVALUATION_SECONDS
    }

    /// −f at the arm nearest to x; f does not change with time.
    fn value(&self, x: &[f64], _t: f64) -> f64 {
        self.values[self.index(x)]
    }

    fn optimum(&self, _t: f64) -> f64 {
        self.values.min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiments::Setup;
    use tvbo_core::policy::priors::build_prior_matrix;

    /// The bench's objective is the experiments' f of the same seed, negated; its optimum
    /// is −max f at the arm where f peaks; the priors are those of −f.
    #[test]
    fn the_objective_is_the_experiments_function_negated() {
        for kind in SetupKind::ALL {
            let objective = PriorSetupObjective::with_arms(kind, 5, 60).unwrap();
            let setup: Setup = kind.setup(60);
            let (true_prior, f) = setup.sample_objective(&setup.build_priors(), 5);
            assert_eq!(objective.true_prior(), true_prior);
            let arms = objective.arms().unwrap();
            assert_eq!(arms.len(), 60);
            for (i, x) in arms.iter().enumerate() {
                assert_eq!(objective.value(x, 0.0), -f[i]);
                assert_eq!(objective.value(x, 400.0), -f[i], "f is static");
            }
            let best = f.imax();
            assert_eq!(objective.optimum(0.0), -f[best]);
            assert_eq!(objective.value(&arms[best], 3.0), objective.optimum(3.0));
            let priors = objective.priors().unwrap();
            assert_eq!(priors.len(), setup.priors.len());
            for (mine, theirs) in priors.iter().zip(&setup.priors) {
                let negated = build_prior_matrix(mine, &setup.arms, -1.0).unwrap();
                let original = build_prior_matrix(theirs, &setup.arms, 1.0).unwrap();
                assert_eq!(negated.mean(), original.mean());
            }
        }
    }

    /// Arm i sits at 20 i/(m−1) in the session's parameter, as in 003.
    #[test]
    fn arms_span_zero_to_twenty() {
        let objective = PriorSetupObjective::with_arms(SetupKind::Lengthscale, 1, 500).unwrap();
        let (low, high) = objective.parameter_range();
        let arms = objective.arms().unwrap();
        assert_eq!((low, high), (0.0, 20.0));
        assert_eq!(low + arms[499][0] * (high - low), 20.0);
        assert!((low + arms[25][0] * (high - low) - 20.0 * 25.0 / 499.0).abs() < 1e-12);
        assert_eq!(objective.noise_variance(), 0.0625);
        assert!(PriorSetupObjective::with_arms(SetupKind::Hill, 1, 1).is_err());
    }
}
