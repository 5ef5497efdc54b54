//! PE-GP-UCB (Ziomek et al. 2024, the baseline of paper 003): UCB over the (arm, prior)
//! pairs, with prior elimination.
//! The rule is [`SelectionRule::PeGpUcb`] of [`PriorSelection`](super::PriorSelection).

use super::{BuildPolicy, SelectionRule, SessionPolicy, prior_selection};
use crate::domain::algorithm::pe_gp_ucb::PeGpUcb;
use crate::domain::checked::CheckedConfig;

impl BuildPolicy for PeGpUcb {
    /// Prior selection over the session's arms by [`SelectionRule::PeGpUcb`], eliminating
    /// the priors the observations contradict at confidence δ.
    fn session_policy(&self, config: &CheckedConfig) -> SessionPolicy {
        let rule = SelectionRule::PeGpUcb;
        prior_selection::over_required_priors(config, self, rule, Some(self.delta), None)
    }
}
