//! HP-GP-TS (Ziomek et al. 2024, paper 003, Algorithm 2): a prior drawn from the
//! hyperposterior, then a Thompson sample under it.
//! The rule is [`SelectionRule::HpGpTs`] of [`PriorSelection`](super::PriorSelection).

use super::{BuildPolicy, SelectionRule, SessionPolicy, prior_selection};
use crate::domain::algorithm::hp_gp_ts::HpGpTs;
use crate::domain::checked::CheckedConfig;

impl BuildPolicy for HpGpTs {
    /// Prior selection over the session's arms by [`SelectionRule::HpGpTs`], from the
    /// hyperprior (uniform when absent).
    fn session_policy(&self, config: &CheckedConfig) -> SessionPolicy {
        let rule = SelectionRule::HpGpTs;
        prior_selection::over_required_priors(config, self, rule, None, self.hyperprior.clone())
    }
}
