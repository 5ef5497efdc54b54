//! From a session's stored configuration to its policy: the one place that matches on the
//! algorithm to build one.

use super::{
    ArmSet, Policy, PriorSelection, SelectionRule, bolt, et_gp_ucb, gp_ucb, r_gp_ucb, random,
    tv_gp_ucb, w_dbo,
};
use crate::domain::config::{AlgorithmConfig, SessionConfig};

/// The policy of a session's configuration.
pub fn policy_for(config: &SessionConfig) -> Box<dyn Policy> {
    if let Some(policy) = prior_selection_for(config) {
        return Box::new(policy);
    }
    if let Some(policy) = tv_gp_ucb_with_prior_for(config) {
        return Box::new(policy);
    }
    match &config.algorithm {
        AlgorithmConfig::Bolt {
            min_dataset_size,
            max_dataset_size,
            beta,
        } => Box::new(bolt::Bolt {
            min_dataset_size: *min_dataset_size,
            max_dataset_size: *max_dataset_size,
            beta: *beta,
        }),
        AlgorithmConfig::WDbo {
            alpha,
            min_dataset_size,
            beta,
        } => Box::new(w_dbo::WDbo {
            alpha: *alpha,
            min_dataset_size: *min_dataset_size,
            beta: *beta,
        }),
        AlgorithmConfig::Random {} => Box::new(random::RandomSearch),
        AlgorithmConfig::GpUcb { beta, .. } => Box::new(gp_ucb::GpUcb { beta: *beta }),
        AlgorithmConfig::RGpUcb { reset_every, beta } => Box::new(r_gp_ucb::RGpUcb {
            reset_every: *reset_every,
            beta: *beta,
        }),
        AlgorithmConfig::TvGpUcb { epsilon, beta, .. } => Box::new(tv_gp_ucb::TvGpUcb {
            epsilon: *epsilon,
            beta: *beta,
        }),
        AlgorithmConfig::EtGpUcb { delta, beta } => Box::new(et_gp_ucb::EtGpUcb {
            delta: *delta,
            beta: *beta,
        }),
        AlgorithmConfig::PeGpUcb { .. }
        | AlgorithmConfig::PeGpTs { .. }
        | AlgorithmConfig::HpGpTs { .. }
        | AlgorithmConfig::MapGpTs { .. } => {
            unreachable!("algorithms with priors are built by prior_selection_for")
        }
    }
}

/// The prior-selection policy of a session whose algorithm works from given priors over
/// its arms (validated at creation: arms, priors and noise are present).
pub fn prior_selection_for(config: &SessionConfig) -> Option<PriorSelection> {
    let (rule, delta, hyperprior) = match &config.algorithm {
        AlgorithmConfig::GpUcb {
            beta,
            priors: Some(_),
        } => (SelectionRule::Ucb(*beta), 0.05, None),
        AlgorithmConfig::PeGpUcb { delta, .. } => (SelectionRule::PeGpUcb, *delta, None),
        AlgorithmConfig::PeGpTs { delta, .. } => (SelectionRule::PeGpTs, *delta, None),
        AlgorithmConfig::HpGpTs { hyperprior, .. } => {
            (SelectionRule::HpGpTs, 0.05, hyperprior.clone())
        }
        AlgorithmConfig::MapGpTs { hyperprior, .. } => {
            (SelectionRule::MapGpTs, 0.05, hyperprior.clone())
        }
        _ => return None,
    };
    let (arms, points) = arms_of(config)?;
    let priors = config.algorithm.priors()?.to_vec();
    Some(PriorSelection::new(
        rule,
        priors,
        arms,
        points,
        config.goal.sign(),
        delta,
        hyperprior,
        config
            .model
            .noise
            .expect("validated: algorithms with priors need model.noise"),
    ))
}

/// TV-GP-UCB with one given prior over the session's arms.
pub fn tv_gp_ucb_with_prior_for(config: &SessionConfig) -> Option<tv_gp_ucb::TvGpUcbWithPrior> {
    let AlgorithmConfig::TvGpUcb {
        epsilon,
        beta,
        priors: Some(priors),
    } = &config.algorithm
    else {
        return None;
    };
    let (arms, arm_points) = arms_of(config)?;
    Some(tv_gp_ucb::TvGpUcbWithPrior {
        prior: priors.first()?.clone(),
        arms,
        arm_points: ArmSet::new(arm_points),
        sign: config.goal.sign(),
        noise_variance: config
            .model
            .noise
            .expect("validated: algorithms with priors need model.noise"),
        epsilon: *epsilon,
        beta: *beta,
    })
}

/// A session's arms and their unit-cube points.
fn arms_of(config: &SessionConfig) -> Option<(Vec<crate::domain::space::Arm>, Vec<Vec<f64>>)> {
    let arms = config.arms.clone()?;
    let space = config.space();
    let points = arms
        .iter()
        .map(|a| {
            space
                .to_unit(&a.params, "arms")
                .expect("arms were validated")
        })
        .collect();
    Some((arms, points))
}
