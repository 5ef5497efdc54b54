//! Uniform random search: the floor every algorithm must beat.

use super::{
    Policy, PolicyError, PolicyRng, PolicyState, Proposed, SuggestContext, random_proposal,
};

/// Draws every suggestion uniformly from the box (or the arm set).
pub struct RandomSearch;

impl Policy for RandomSearch {
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
