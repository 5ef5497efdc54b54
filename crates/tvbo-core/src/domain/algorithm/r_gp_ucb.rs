//! R-GP-UCB (Bogunovic et al. 2016, Alg. 1): GP-UCB that resets in blocks.

use serde::{Deserialize, Serialize};

use super::{Algorithm, Beta, Facts, check_beta};
use crate::domain::InvalidInput;

/// R-GP-UCB (Bogunovic et al. 2016, Alg. 1): GP-UCB whose dataset is emptied every
/// `reset_every` observations (default 15, the block length of their Section 5.2).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(default, deny_unknown_fields)]
pub struct RGpUcb {
    pub reset_every: u64,
    pub beta: Beta,
}

impl Algorithm for RGpUcb {
    const NAME: &'static str = "r-gp-ucb";
    const FACTS: Facts = Facts {
        summary: "R-GP-UCB (Bogunovic et al. 2016, Alg. 1): GP-UCB whose dataset is emptied \
                  every reset_every observations",
        forgets: true,
        ..Facts::STATIC
    };

    fn check(&self) -> Result<(), InvalidInput> {
        if self.reset_every == 0 {
            return Err(InvalidInput::new(
                "algorithm.reset_every",
                "must be at least 1",
            ));
        }
        check_beta(self.beta)
    }
}

impl Default for RGpUcb {
    fn default() -> Self {
        RGpUcb {
            reset_every: 15,
            beta: Beta::default(),
        }
    }
}
