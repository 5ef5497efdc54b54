//! From a session's checked configuration to its policy: the one place that builds one
//! ([`SessionPolicy::of`]), by the algorithm's own [`BuildPolicy`] (in its module of the
//! policy layer, named as its options' module in `domain::algorithm`).

use super::tv_gp_ucb::TvGpUcbWithPrior;
use super::{Policy, PriorSelection};
use crate::domain::algorithm::{AlgorithmConfig, for_each_algorithm};
use crate::domain::checked::CheckedConfig;

/// A session's policy, by the model it works from.
pub enum SessionPolicy {
    /// A GP over the unit cube (× time), fitted by the policy.
    Surrogate(Box<dyn Policy>),
    /// Prior selection over the session's arms (paper 003), or GP-UCB with given priors.
    Arms(PriorSelection),
    /// TV-GP-UCB with one given prior over the session's arms.
    TimeVaryingArms(TvGpUcbWithPrior),
}

/// How an algorithm's options become a session's policy: implemented by each algorithm's
/// options type, in its policy module.
pub trait BuildPolicy {
    /// The policy of a session of `config`, whose algorithm these options are (its
    /// [`PolicySettings`](crate::domain::checked::PolicySettings): a GP to fit, or given
    /// priors over its arms).
    fn session_policy(&self, config: &CheckedConfig) -> SessionPolicy;
}

/// [`SessionPolicy::of`]: one dispatch over the registry.
macro_rules! dispatch {
    ($($variant:ident: $module:ident::$options:ident,)*) => {
        impl SessionPolicy {
            /// The policy of a session's checked configuration, by its algorithm's
            /// [`BuildPolicy`].
            pub fn of(config: &CheckedConfig) -> SessionPolicy {
                match &config.algorithm {
                    $(AlgorithmConfig::$variant(options) => options.session_policy(config),)*
                }
            }
        }
    };
}
for_each_algorithm!(dispatch);

/// The policy of a session's configuration ([`SessionPolicy::of`]), whatever its model.
pub fn policy_for(config: &CheckedConfig) -> Box<dyn Policy> {
    match SessionPolicy::of(config) {
        SessionPolicy::Surrogate(policy) => policy,
        SessionPolicy::Arms(selection) => Box::new(selection),
        SessionPolicy::TimeVaryingArms(policy) => Box::new(policy),
    }
}
