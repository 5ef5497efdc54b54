//! Uniform random search: the floor every algorithm must beat.

use super::{
    BuildPolicy, Policy, PolicyError, PolicyRng, PolicyState, Proposed, SessionPolicy,
    SuggestContext, random_proposal,
};
use crate::domain::algorithm::random::Random;
use crate::domain::checked::CheckedConfig;

impl Policy for Random {
    fn propose(
        &self,
        ctx: &SuggestContext<'_>,
        _state: &mut PolicyState,
        rng: &mut PolicyRng,
    ) -> Result<Proposed, PolicyError> {
        Ok(Proposed::from(
            (0..ctx.count)
                .map(|_| random_proposal(ctx, rng))
                .collect::<Vec<_>>(),
        ))
    }
}

impl BuildPolicy for Random {
    /// Draws every suggestion uniformly from the box (or the arm set).
    fn session_policy(&self, _config: &CheckedConfig) -> SessionPolicy {
        SessionPolicy::Surrogate(Box::new(self.clone()))
    }
}
