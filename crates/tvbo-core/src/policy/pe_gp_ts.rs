//! PE-GP-TS (Ziomek et al. 2024, paper 003, Algorithm 1): Thompson sampling over the
//! given priors, with prior elimination.
//! The rule is [`SelectionRule::PeGpTs`] of [`PriorSelection`](super::PriorSelection).

use super::{BuildPolicy, SelectionRule, SessionPolicy, prior_selection};
use crate::domain::algorithm::pe_gp_ts::PeGpTs;
use crate::domain::checked::CheckedConfig;

impl BuildPolicy for PeGpTs {
    /// Prior selection over the session's arms by [`SelectionRule::PeGpTs`], eliminating
    /// the priors the observations contradict at confidence δ.
    fn session_policy(&self, config: &CheckedConfig) -> SessionPolicy {
        let rule = SelectionRule::PeGpTs;
        prior_selection::over_required_priors(config, self, rule, Some(self.delta), None)
    }
}
