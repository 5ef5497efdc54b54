//! PE-GP-UCB (Ziomek et al. 2024, the baseline of paper 003): UCB over the (arm, prior)
//! pairs, with prior elimination.

super::selection::selection_rule! {
    eliminating
    /// PE-GP-UCB (Ziomek et al. 2024, the baseline of 003): the most optimistic (arm,
    /// prior) by UCB; a prior whose summed prediction errors exceed their confidence
    /// width is eliminated (003 Alg. 1, lines 7–10).
    PeGpUcb,
    "pe-gp-ucb",
    "PE-GP-UCB (Ziomek et al. 2024): UCB over given priors, eliminating those the \
     observations contradict"
}
