//! From a session's stored configuration to its policy: the one place that matches on the
//! algorithm to build one ([`SessionPolicy::of`]).

use super::tv_gp_ucb::TvGpUcbWithPrior;
use super::{
    ArmSet, Policy, PriorSelection, SelectionRule, bolt, et_gp_ucb, gp_ucb, r_gp_ucb, random,
    tv_gp_ucb, w_dbo,
};
use crate::domain::config::{AlgorithmConfig, SessionConfig};
use crate::domain::priors::PriorSpec;

/// A session's policy, by the model it works from.
pub enum SessionPolicy {
    /// A GP over the unit cube (× time), fitted by the policy.
    Surrogate(Box<dyn Policy>),
    /// Prior selection over the session's arms (paper 003), or GP-UCB with given priors.
    Arms(PriorSelection),
    /// TV-GP-UCB with one given prior over the session's arms.
    TimeVaryingArms(TvGpUcbWithPrior),
}

impl SessionPolicy {
    /// The policy of a session's configuration (validated at creation: an algorithm with
    /// priors has arms, priors and `model.noise`).
    pub fn of(config: &SessionConfig) -> SessionPolicy {
        use SessionPolicy::Surrogate;
        match &config.algorithm {
            AlgorithmConfig::Bolt {
                min_dataset_size,
                max_dataset_size,
                beta,
            } => Surrogate(Box::new(bolt::Bolt {
                min_dataset_size: *min_dataset_size,
                max_dataset_size: *max_dataset_size,
                beta: *beta,
            })),
            AlgorithmConfig::WDbo {
                alpha,
                min_dataset_size,
                beta,
            } => Surrogate(Box::new(w_dbo::WDbo {
                alpha: *alpha,
                min_dataset_size: *min_dataset_size,
                beta: *beta,
            })),
            AlgorithmConfig::Random {} => Surrogate(Box::new(random::RandomSearch)),
            AlgorithmConfig::GpUcb { beta, priors: None } => {
                Surrogate(Box::new(gp_ucb::GpUcb { beta: *beta }))
            }
            AlgorithmConfig::GpUcb {
                beta,
                priors: Some(_),
            } => prior_selection(config, SelectionRule::Ucb(*beta), 0.05, None),
            AlgorithmConfig::RGpUcb { reset_every, beta } => {
                Surrogate(Box::new(r_gp_ucb::RGpUcb {
                    reset_every: *reset_every,
                    beta: *beta,
                }))
            }
            AlgorithmConfig::TvGpUcb {
                epsilon,
                beta,
                priors: None,
            } => Surrogate(Box::new(tv_gp_ucb::TvGpUcb {
                epsilon: *epsilon,
                beta: *beta,
            })),
            AlgorithmConfig::TvGpUcb {
                epsilon,
                beta,
                priors: Some(priors),
            } => time_varying_arms(config, priors, *epsilon, *beta),
            AlgorithmConfig::EtGpUcb { delta, beta } => Surrogate(Box::new(et_gp_ucb::EtGpUcb {
                delta: *delta,
                beta: *beta,
            })),
            AlgorithmConfig::PeGpUcb { delta, .. } => {
                prior_selection(config, SelectionRule::PeGpUcb, *delta, None)
            }
            AlgorithmConfig::PeGpTs { delta, .. } => {
                prior_selection(config, SelectionRule::PeGpTs, *delta, None)
            }
            AlgorithmConfig::HpGpTs { hyperprior, .. } => {
                prior_selection(config, SelectionRule::HpGpTs, 0.05, hyperprior.clone())
            }
            AlgorithmConfig::MapGpTs { hyperprior, .. } => {
                prior_selection(config, SelectionRule::MapGpTs, 0.05, hyperprior.clone())
            }
        }
    }
}

/// The policy of a session's configuration ([`SessionPolicy::of`]), whatever its model.
pub fn policy_for(config: &SessionConfig) -> Box<dyn Policy> {
    match SessionPolicy::of(config) {
        SessionPolicy::Surrogate(policy) => policy,
        SessionPolicy::Arms(selection) => Box::new(selection),
        SessionPolicy::TimeVaryingArms(policy) => Box::new(policy),
    }
}

/// Prior selection by `rule` over the session's arms and priors.
fn prior_selection(
    config: &SessionConfig,
    rule: SelectionRule,
    delta: f64,
    hyperprior: Option<Vec<f64>>,
) -> SessionPolicy {
    let (arms, points) = arms_and_points(config);
    let priors = config
        .algorithm
        .priors()
        .expect("validated: algorithms with priors have priors")
        .to_vec();
    SessionPolicy::Arms(PriorSelection::new(
        rule,
        priors,
        arms,
        points,
        config.goal.sign(),
        delta,
        hyperprior,
        noise_of(config),
    ))
}

/// TV-GP-UCB with the first of `priors` over the session's arms.
fn time_varying_arms(
    config: &SessionConfig,
    priors: &[PriorSpec],
    epsilon: Option<f64>,
    beta: crate::domain::config::Beta,
) -> SessionPolicy {
    let (arms, points) = arms_and_points(config);
    SessionPolicy::TimeVaryingArms(TvGpUcbWithPrior {
        prior: priors
            .first()
            .expect("validated: a prior list is not empty")
            .clone(),
        arms,
        arm_points: ArmSet::new(points),
        sign: config.goal.sign(),
        noise_variance: noise_of(config),
        epsilon,
        beta,
    })
}

/// A session's arms and their unit-cube points.
fn arms_and_points(config: &SessionConfig) -> (Vec<crate::domain::space::Arm>, Vec<Vec<f64>>) {
    let arms = config
        .arms
        .clone()
        .expect("validated: algorithms with priors have arms");
    let points = config
        .arm_points()
        .expect("validated: algorithms with priors have arms");
    (arms, points)
}

/// The observation-noise variance the priors assume.
fn noise_of(config: &SessionConfig) -> f64 {
    config
        .model
        .noise
        .expect("validated: algorithms with priors need model.noise")
}
