//! The exploration weight β of the UCB rules, which most algorithms take
//! (`algorithm.beta`).

use serde::{Deserialize, Serialize};

use crate::domain::InvalidInput;

/// The exploration weight β of the upper confidence bound μ + √β σ.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(untagged)]
pub enum Beta {
    /// A constant β.
    Constant(f64),
    /// A schedule: `"wdbo"` (β = 0.2·d·ln(2n), W-DBO's default) or `"srinivas"`
    /// (Srinivas et al. 2010, Theorems 1 and 2, δ = 0.1).
    Schedule(BetaSchedule),
}

/// Named β schedules.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum BetaSchedule {
    Wdbo,
    Srinivas,
}

impl Default for Beta {
    fn default() -> Self {
        Beta::Schedule(BetaSchedule::Wdbo)
    }
}

/// Checks `algorithm.beta`: a constant must be finite and at least 0.
pub(crate) fn check_beta(beta: Beta) -> Result<(), InvalidInput> {
    if let Beta::Constant(b) = beta
        && !(b.is_finite() && b >= 0.0)
    {
        return Err(InvalidInput::new(
            "algorithm.beta",
            "must be a finite number ≥ 0, \"wdbo\" or \"srinivas\"",
        ));
    }
    Ok(())
}
