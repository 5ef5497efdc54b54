//! The synthetic prior-selection experiments of paper 003 §5, run in-process on the same
//! [`PriorSelection::choose`] / [`PriorSelection::record`] the server uses.
//!
//! Protocol (003 §5): the true prior p* is drawn uniformly from P, f ~ GP_{p*} on 500
//! arms evenly spaced in [0, 20], observations y = f(x) + ε with σ = 0.25, horizon
//! T = 500, δ = 0.05; regret is f(x*) − f(x_t) on the noise-free f. Every rule runs on
//! the same seeds: seed s fixes p*, f and the noise of every arm pull.

use std::sync::Arc;

use nalgebra::DVector;

use rand::{RngExt, SeedableRng};
use rand_distr::{Distribution, StandardNormal};

use tvbo_core::domain::priors::{PriorMean, PriorSpec};
use tvbo_core::domain::space::{Arm, numbers};
use tvbo_core::gp::arms::{ArmPrior, PriorKernel};
use tvbo_core::policy::priors::build_prior_matrix;
use tvbo_core::policy::{PolicyRng, PriorSelection, SelectionRule};

/// The three synthetic setups of 003 §5.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SetupKind {
    Lengthscale,
    Kernel,
    Hill,
}

impl SetupKind {
    pub const ALL: [SetupKind; 3] = [SetupKind::Lengthscale, SetupKind::Kernel, SetupKind::Hill];

    pub fn name(self) -> &'static str {
        match self {
            SetupKind::Lengthscale => "lengthscale",
            SetupKind::Kernel => "kernel",
            SetupKind::Hill => "hill",
        }
    }

    /// The kind named `name` (`lengthscale`, `kernel` or `hill`).
    pub fn named(name: &str) -> Option<SetupKind> {
        SetupKind::ALL.into_iter().find(|k| k.name() == name)
    }

    /// The setup over `arm_count` arms evenly spaced in [0, 20].
    pub fn setup(self, arm_count: usize) -> Setup {
        match self {
            SetupKind::Lengthscale => Setup::lengthscale(arm_count),
            SetupKind::Kernel => Setup::kernel(arm_count),
            SetupKind::Hill => Setup::hill(arm_count),
        }
    }
}

/// One of 003's synthetic setups.
#[derive(Clone, Debug)]
pub struct Setup {
    pub name: &'static str,
    pub priors: Vec<PriorSpec>,
    pub arms: Vec<Arm>,
    pub noise_variance: f64,
}

/// 003 §5: 500 arms evenly spaced in [0, 20].
pub const ARM_COUNT: usize = 500;
/// 003 §5: the interval of the arms.
pub const ARM_RANGE: (f64, f64) = (0.0, 20.0);
/// 003 §5: the noise standard deviation.
pub const NOISE_SD: f64 = 0.25;
/// 003 §5: δ of the elimination rules.
pub const DELTA: f64 = 0.05;
/// 003 §5: the horizon.
pub const HORIZON: usize = 500;

fn arms(count: usize) -> Vec<Arm> {
    (0..count)
        .map(|i| Arm {
            name: format!("x{i}"),
            params: numbers([(
                "x",
                ARM_RANGE.0 + (ARM_RANGE.1 - ARM_RANGE.0) * i as f64 / (count - 1) as f64,
            )]),
        })
        .collect()
}

fn kernel_prior(name: &str, kernel: PriorKernel, lengthscale: Option<f64>) -> PriorSpec {
    PriorSpec {
        name: Some(name.to_string()),
        kernel: Some(kernel),
        lengthscale,
        variance: Some(1.0),
        period: None,
        alpha: None,
        mean: Some(PriorMean::Constant(0.0)),
        covariance: None,
    }
}

impl Setup {
    /// 003 §5 "lengthscale": squared-exponential priors with lengthscales 4, 2, 1, 1/2.
    pub fn lengthscale(arm_count: usize) -> Setup {
        Setup {
            name: "lengthscale",
            priors: [4.0, 2.0, 1.0, 0.5]
                .iter()
                .map(|&l| kernel_prior(&format!("rbf-l{l}"), PriorKernel::Rbf, Some(l)))
                .collect(),
            arms: arms(arm_count),
            noise_variance: NOISE_SD * NOISE_SD,
        }
    }

    /// 003 §5 "kernel": SE, Matérn-5/2, Matérn-3/2, periodic (period 5), linear
    /// (v = 0.05², so k ≤ 1 on [0, 20]) and rational quadratic (α = 0.5), lengthscale 1.
    pub fn kernel(arm_count: usize) -> Setup {
        let mut periodic = kernel_prior("periodic", PriorKernel::Periodic, Some(1.0));
        periodic.period = Some(5.0);
        let mut linear = kernel_prior("linear", PriorKernel::Linear, None);
        linear.variance = Some(0.05 * 0.05);
        let mut rq = kernel_prior("rq", PriorKernel::Rq, Some(1.0));
        rq.alpha = Some(0.5);
        Setup {
            name: "kernel",
            priors: vec![
                kernel_prior("rbf", PriorKernel::Rbf, Some(1.0)),
                kernel_prior("matern52", PriorKernel::Matern52, Some(1.0)),
                kernel_prior("matern32", PriorKernel::Matern32, Some(1.0)),
                periodic,
                linear,
                rq,
            ],
            arms: arms(arm_count),
            noise_variance: NOISE_SD * NOISE_SD,
        }
    }

    /// 003 §5 "hill": SE priors (lengthscale 1) whose means differ. 003 describes them
    /// only in words and a figure (Fig. 3): mean 0 has 10 small hills across the first
    /// half of [0, 20], means 1–4 are the same with one hill doubled in height. Our
    /// construction: hill k (k = 0..9) is a Gaussian bump of height 1 and width 0.25 at
    /// x = k + 0.5; mean j ≥ 1 doubles hill 2j (hills 2, 4, 6, 8).
    pub fn hill(arm_count: usize) -> Setup {
        let arms = arms(arm_count);
        let mean = |doubled: Option<usize>| -> Vec<f64> {
            arms.iter()
                .map(|a| {
                    let x = a.params["x"].as_number().expect("numeric arms");
                    (0..10)
                        .map(|k| {
                            let height = if doubled == Some(k) { 2.0 } else { 1.0 };
                            let centre = k as f64 + 0.5;
                            height * (-(x - centre).powi(2) / (2.0 * 0.25 * 0.25)).exp()
                        })
                        .sum()
                })
                .collect()
        };
        let priors = (0..5)
            .map(|j| {
                let mut prior = kernel_prior(&format!("hill-{j}"), PriorKernel::Rbf, Some(1.0));
                prior.mean = Some(PriorMean::PerArm(mean((j > 0).then_some(2 * j))));
                prior
            })
            .collect();
        Setup {
            name: "hill",
            priors,
            arms,
            noise_variance: NOISE_SD * NOISE_SD,
        }
    }

    /// The priors over the arms, built once and shared by every run.
    pub fn build_priors(&self) -> Vec<Arc<ArmPrior>> {
        self.priors
            .iter()
            .map(|p| {
                Arc::new(build_prior_matrix(p, &self.arms, 1.0).expect("the setups' priors build"))
            })
            .collect()
    }

    /// The objective of seed `seed` (003 §5): the true prior p* drawn uniformly, then
    /// f ~ GP_{p*} over the arms. Returns (p*, f). `priors` from [`Setup::build_priors`].
    pub fn sample_objective(&self, priors: &[Arc<ArmPrior>], seed: u64) -> (usize, DVector<f64>) {
        let mut objective_rng = stream(seed, 0);
        let true_prior = objective_rng.random_range(0..priors.len());
        (true_prior, priors[true_prior].sample(&mut objective_rng))
    }

    fn policy(&self, rule: SelectionRule) -> PriorSelection {
        let count = self.arms.len();
        let points = (0..count)
            .map(|i| vec![i as f64 / (count - 1) as f64])
            .collect();
        PriorSelection::new(
            rule,
            self.priors.clone(),
            self.arms.clone(),
            points,
            1.0,
            DELTA,
            None,
            self.noise_variance,
        )
    }
}

/// The result of one rule on one seed.
#[derive(Clone, Debug, PartialEq)]
pub struct SeedOutcome {
    pub true_prior: usize,
    /// Σ_t f(x*) − f(x_t) after each step.
    pub cumulative_regret: Vec<f64>,
    /// P_T(p), the final hyperposterior.
    pub hyperposterior: Vec<f64>,
    /// Entropy of the hyperposterior after each step.
    pub entropy: Vec<f64>,
    /// Whether p* left the active set (elimination rules).
    pub true_prior_eliminated: bool,
    /// Priors eliminated by the end.
    pub eliminated: usize,
    /// Steps at which the chosen prior was p*.
    pub true_prior_chosen: usize,
}

impl SeedOutcome {
    pub fn final_regret(&self) -> f64 {
        self.cumulative_regret.last().copied().unwrap_or(0.0)
    }

    /// Whether the hyperposterior's largest mass is on p*.
    pub fn most_mass_on_true_prior(&self) -> bool {
        let best = (0..self.hyperposterior.len())
            .max_by(|&a, &b| self.hyperposterior[a].total_cmp(&self.hyperposterior[b]))
            .unwrap_or(0);
        best == self.true_prior
    }
}

fn stream(seed: u64, stream: u64) -> PolicyRng {
    let mut rng = PolicyRng::seed_from_u64(seed);
    rng.set_stream(stream);
    rng
}

/// Runs `rule` for `horizon` steps on seed `seed` of `setup` (`priors` from
/// [`Setup::build_priors`]).
pub fn run_seed(
    setup: &Setup,
    priors: &[Arc<ArmPrior>],
    rule: SelectionRule,
    seed: u64,
    horizon: usize,
) -> SeedOutcome {
    // Separate streams: the objective and the noise are the same for every rule.
    let (true_prior, f) = setup.sample_objective(priors, seed);
    let mut noise_rng = stream(seed, 1);
    let mut policy_rng = stream(seed, 2);
    let best = f.max();
    let noise_sd = setup.noise_variance.sqrt();
    let noises: Vec<f64> = (0..horizon)
        .map(|_| noise_sd * Distribution::<f64>::sample(&StandardNormal, &mut noise_rng))
        .collect();
    let policy = setup.policy(rule);
    let mut models = policy.prior_models(priors);
    let mut state = policy.initial_state();
    let mut cumulative = 0.0;
    let mut cumulative_regret = Vec::with_capacity(horizon);
    let mut true_prior_chosen = 0;
    for noise in noises {
        let choice = policy.choose(&models, &state, &mut policy_rng);
        true_prior_chosen += usize::from(choice.prior == true_prior);
        let y = f[choice.arm] + noise;
        policy.record(&mut models, &mut state, choice.arm, y, Some(choice.prior));
        cumulative += best - f[choice.arm];
        cumulative_regret.push(cumulative);
    }
    SeedOutcome {
        true_prior,
        cumulative_regret,
        hyperposterior: state.hyperposterior(),
        entropy: state.history.iter().map(|r| r.entropy).collect(),
        true_prior_eliminated: !state.active[true_prior],
        eliminated: state.active.iter().filter(|a| !**a).count(),
        true_prior_chosen,
    }
}

/// Statistics of one rule over many seeds.
#[derive(Clone, Debug, PartialEq)]
pub struct RuleSummary {
    pub rule: &'static str,
    pub seeds: usize,
    pub mean_final_regret: f64,
    pub standard_error: f64,
    /// Fraction of seeds whose final hyperposterior puts most mass on p*.
    pub most_mass_on_true_prior: f64,
    /// Fraction of seeds in which p* was eliminated.
    pub true_prior_eliminated: f64,
    /// Mean number of eliminated priors.
    pub mean_eliminated: f64,
    /// Fraction of steps whose chosen prior was p*.
    pub true_prior_chosen: f64,
    /// Mean hyperposterior entropy at the end.
    pub mean_final_entropy: f64,
}

/// Summarises `outcomes` of one rule.
pub fn summarise(rule: &'static str, outcomes: &[SeedOutcome]) -> RuleSummary {
    let n = outcomes.len() as f64;
    let finals: Vec<f64> = outcomes.iter().map(SeedOutcome::final_regret).collect();
    let mean = finals.iter().sum::<f64>() / n;
    let variance = finals.iter().map(|r| (r - mean).powi(2)).sum::<f64>() / (n - 1.0).max(1.0);
    let fraction = |pred: &dyn Fn(&SeedOutcome) -> bool| {
        outcomes.iter().filter(|o| pred(o)).count() as f64 / n
    };
    let steps: usize = outcomes.iter().map(|o| o.cumulative_regret.len()).sum();
    RuleSummary {
        rule,
        seeds: outcomes.len(),
        mean_final_regret: mean,
        standard_error: (variance / n).sqrt(),
        most_mass_on_true_prior: fraction(&SeedOutcome::most_mass_on_true_prior),
        true_prior_eliminated: fraction(&|o| o.true_prior_eliminated),
        mean_eliminated: outcomes.iter().map(|o| o.eliminated as f64).sum::<f64>() / n,
        true_prior_chosen: outcomes.iter().map(|o| o.true_prior_chosen).sum::<usize>() as f64
            / steps.max(1) as f64,
        mean_final_entropy: outcomes
            .iter()
            .map(|o| o.entropy.last().copied().unwrap_or(0.0))
            .sum::<f64>()
            / n,
    }
}

/// The rules of 003's Fig. 4 with their API names.
pub const RULES: [(&str, SelectionRule); 4] = [
    ("hp-gp-ts", SelectionRule::HpGpTs),
    ("map-gp-ts", SelectionRule::MapGpTs),
    ("pe-gp-ts", SelectionRule::PeGpTs),
    ("pe-gp-ucb", SelectionRule::PeGpUcb),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn setups_build_with_the_papers_sizes() {
        for setup in [Setup::lengthscale(50), Setup::kernel(50), Setup::hill(50)] {
            let priors = setup.build_priors();
            assert_eq!(priors.len(), setup.priors.len());
            assert!(priors.iter().all(|p| p.len() == 50), "{}", setup.name);
        }
        // The hill means differ from mean 0 exactly at the doubled hill.
        let hill = Setup::hill(ARM_COUNT);
        let priors = hill.build_priors();
        let at = |p: usize, x: f64| priors[p].mean()[(x / 20.0 * 499.0).round() as usize];
        assert!((at(1, 2.5) - 2.0 * at(0, 2.5)).abs() < 0.05);
        assert!((at(1, 4.5) - at(0, 4.5)).abs() < 1e-12);
        assert!(at(0, 15.0).abs() < 1e-12);
    }

    #[test]
    fn seeds_fix_the_objective_for_every_rule() {
        let setup = Setup::lengthscale(40);
        let priors = setup.build_priors();
        let a = run_seed(&setup, &priors, SelectionRule::HpGpTs, 3, 10);
        let b = run_seed(&setup, &priors, SelectionRule::PeGpUcb, 3, 10);
        assert_eq!(a.true_prior, b.true_prior);
        assert_eq!(a, run_seed(&setup, &priors, SelectionRule::HpGpTs, 3, 10));
        assert!(a.cumulative_regret.windows(2).all(|w| w[1] >= w[0]));
    }
}
