//! W-DBO (Bardou et al. 2024): spatio-temporal UCB that forgets by a budget.

use serde::{Deserialize, Serialize};

use super::{Algorithm, Beta, Facts, check_beta, check_dataset_floor, default_min_dataset_size};
use crate::domain::InvalidInput;

/// W-DBO (Bardou et al. 2024): spatio-temporal UCB that forgets observations whose
/// relevance is below a budget growing with time at rate ln(1+α) per temporal lengthscale.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(default, deny_unknown_fields)]
pub struct WDbo {
    /// α of the budget's rate ln(1+α) (default 0.25).
    pub alpha: f64,
    /// Observations always kept (default 15).
    pub min_dataset_size: u64,
    pub beta: Beta,
}

impl Default for WDbo {
    fn default() -> Self {
        WDbo {
            alpha: 0.25,
            min_dataset_size: default_min_dataset_size(),
            beta: Beta::default(),
        }
    }
}

impl Algorithm for WDbo {
    const NAME: &'static str = "w-dbo";
    const FACTS: Facts = Facts {
        summary: "W-DBO (Bardou et al. 2024): spatio-temporal UCB forgetting observations \
                  whose Wasserstein relevance falls below a budget that grows with time",
        forgets: true,
        uses_time: true,
        reports_budget: true,
        ..Facts::STATIC
    };

    fn check(&self) -> Result<(), InvalidInput> {
        if !(self.alpha.is_finite() && self.alpha > 0.0 && self.alpha <= 1e6) {
            return Err(InvalidInput::new(
                "algorithm.alpha",
                "must be a number in (0, 1e6]",
            ));
        }
        check_dataset_floor(self.min_dataset_size)?;
        check_beta(self.beta)
    }
}
