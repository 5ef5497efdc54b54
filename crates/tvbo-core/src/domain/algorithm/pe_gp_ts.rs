//! PE-GP-TS (Ziomek et al. 2024, paper 003, Algorithm 1): Thompson sampling over the
//! given priors, with prior elimination.

super::selection::selection_rule! {
    eliminating
    /// PE-GP-TS (003 Alg. 1): one Thompson sample per active prior, the best (arm,
    /// prior) wins; elimination with β_t and ξ_t of Theorem 4.1.
    PeGpTs,
    "pe-gp-ts",
    "PE-GP-TS (Ziomek et al. 2024, Alg. 1): Thompson sampling over given priors, with \
     elimination"
}
