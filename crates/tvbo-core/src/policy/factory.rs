//! From a session's checked configuration to its policy: the one place that builds one
//! ([`SessionPolicy::of`]), from the split of the algorithm that the check made
//! ([`crate::domain::checked::PolicySettings`]).

use super::tv_gp_ucb::TvGpUcbWithPrior;
use super::{
    ArmSet, Policy, PriorSelection, SelectionRule, bolt, et_gp_ucb, gp_ucb, r_gp_ucb, random,
    tv_gp_ucb, w_dbo,
};
use crate::domain::checked::{CheckedConfig, PolicySettings, PriorRule, SurrogateAlgorithm};

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
    /// The policy of a session's checked configuration: one exhaustive match over what it
    /// is built from ([`PolicySettings`]).
    pub fn of(config: &CheckedConfig) -> SessionPolicy {
        match config.policy() {
            PolicySettings::Surrogate { algorithm, .. } => {
                SessionPolicy::Surrogate(surrogate(algorithm))
            }
            PolicySettings::Priors {
                rule,
                priors,
                arms,
                noise,
            } => {
                let sign = config.goal.sign();
                let selection = |rule, delta, hyperprior| {
                    SessionPolicy::Arms(PriorSelection::new(
                        rule,
                        priors.to_vec(),
                        arms.arms.clone(),
                        arms.points.clone(),
                        sign,
                        delta,
                        hyperprior,
                        *noise,
                    ))
                };
                match rule.clone() {
                    PriorRule::Ucb { beta } => selection(SelectionRule::Ucb(beta), 0.05, None),
                    PriorRule::PeGpUcb { delta } => selection(SelectionRule::PeGpUcb, delta, None),
                    PriorRule::PeGpTs { delta } => selection(SelectionRule::PeGpTs, delta, None),
                    PriorRule::HpGpTs { hyperprior } => {
                        selection(SelectionRule::HpGpTs, 0.05, hyperprior)
                    }
                    PriorRule::MapGpTs { hyperprior } => {
                        selection(SelectionRule::MapGpTs, 0.05, hyperprior)
                    }
                    PriorRule::TimeVarying { epsilon, beta } => {
                        SessionPolicy::TimeVaryingArms(TvGpUcbWithPrior {
                            prior: priors.first().clone(),
                            arms: arms.arms.clone(),
                            arm_points: ArmSet::new(arms.points.clone()),
                            sign,
                            noise_variance: *noise,
                            epsilon,
                            beta,
                        })
                    }
                }
            }
        }
    }
}

/// The policy of a session's configuration ([`SessionPolicy::of`]), whatever its model.
pub fn policy_for(config: &CheckedConfig) -> Box<dyn Policy> {
    match SessionPolicy::of(config) {
        SessionPolicy::Surrogate(policy) => policy,
        SessionPolicy::Arms(selection) => Box::new(selection),
        SessionPolicy::TimeVaryingArms(policy) => Box::new(policy),
    }
}

/// The policy of an algorithm that fits a GP over the unit cube (× time).
fn surrogate(algorithm: &SurrogateAlgorithm) -> Box<dyn Policy> {
    match algorithm.clone() {
        SurrogateAlgorithm::Bolt {
            min_dataset_size,
            max_dataset_size,
            beta,
        } => Box::new(bolt::Bolt {
            min_dataset_size,
            max_dataset_size,
            beta,
        }),
        SurrogateAlgorithm::WDbo {
            alpha,
            min_dataset_size,
            beta,
        } => Box::new(w_dbo::WDbo {
            alpha,
            min_dataset_size,
            beta,
        }),
        SurrogateAlgorithm::Random => Box::new(random::RandomSearch),
        SurrogateAlgorithm::GpUcb { beta } => Box::new(gp_ucb::GpUcb { beta }),
        SurrogateAlgorithm::RGpUcb { reset_every, beta } => {
            Box::new(r_gp_ucb::RGpUcb { reset_every, beta })
        }
        SurrogateAlgorithm::TvGpUcb { epsilon, beta } => {
            Box::new(tv_gp_ucb::TvGpUcb { epsilon, beta })
        }
        SurrogateAlgorithm::EtGpUcb { delta, beta } => Box::new(et_gp_ucb::EtGpUcb { delta, beta }),
    }
}
