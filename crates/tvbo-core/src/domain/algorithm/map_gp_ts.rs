//! MAP-GP-TS (Ziomek et al. 2024, paper 003, §5): HP-GP-TS with the most probable prior.

super::selection::selection_rule! {
    weighing
    /// MAP-GP-TS (003 §5): HP-GP-TS with the most probable prior instead of a draw.
    MapGpTs,
    "map-gp-ts",
    "MAP-GP-TS (Ziomek et al. 2024, §5): HP-GP-TS with the most probable prior"
}
