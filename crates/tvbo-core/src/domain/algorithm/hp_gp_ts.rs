//! HP-GP-TS (Ziomek et al. 2024, paper 003, Algorithm 2): a prior drawn from the
//! hyperposterior, then a Thompson sample under it.

super::selection::selection_rule! {
    weighing
    /// HP-GP-TS (003 Alg. 2): a prior drawn from the hyperposterior, then a Thompson
    /// sample under it; the hyperposterior is updated by every observation.
    HpGpTs,
    "hp-gp-ts",
    "HP-GP-TS (Ziomek et al. 2024, Alg. 2): a prior drawn from the hyperposterior over \
     given priors, then a Thompson sample"
}
