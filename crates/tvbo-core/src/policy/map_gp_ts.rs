//! MAP-GP-TS (Ziomek et al. 2024, paper 003, §5): HP-GP-TS with the most probable prior.
//! The rule is [`SelectionRule::MapGpTs`] of [`PriorSelection`](super::PriorSelection).

use super::{BuildPolicy, SelectionRule, SessionPolicy, prior_selection};
use crate::domain::algorithm::map_gp_ts::MapGpTs;
use crate::domain::checked::CheckedConfig;

impl BuildPolicy for MapGpTs {
    /// Prior selection over the session's arms by [`SelectionRule::MapGpTs`], from the
    /// hyperprior (uniform when absent).
    fn session_policy(&self, config: &CheckedConfig) -> SessionPolicy {
        let rule = SelectionRule::MapGpTs;
        prior_selection::over_required_priors(config, self, rule, None, self.hyperprior.clone())
    }
}
