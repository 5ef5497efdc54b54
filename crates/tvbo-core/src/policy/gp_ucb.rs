//! GP-UCB (Srinivas et al. 2010, paper 004, Section 3 and Algorithm 1): x_t = argmax
//! μ_{t−1}(x) + √β_t σ_{t−1}(x) under a static kernel; every observation is kept forever.

use super::{BuildPolicy, Policy, SelectionRule, SessionPolicy, prior_selection};
use crate::domain::algorithm::gp_ucb::GpUcb;
use crate::domain::checked::CheckedConfig;
use crate::domain::config::Beta;

impl BuildPolicy for GpUcb {
    /// GP-UCB with a static kernel (k_T ≡ 1), or, given a prior over the session's arms,
    /// UCB under that prior.
    fn session_policy(&self, config: &CheckedConfig) -> SessionPolicy {
        match config.given_priors() {
            Some(given) => {
                let rule = SelectionRule::Ucb(self.beta);
                prior_selection::session_policy(config, given, rule, None, None)
            }
            None => SessionPolicy::Surrogate(Box::new(self.clone())),
        }
    }
}

impl Policy for GpUcb {
    fn beta(&self) -> Beta {
        self.beta
    }
}
