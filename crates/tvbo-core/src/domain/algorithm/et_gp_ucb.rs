//! ET-GP-UCB (Brunzema et al. 2022): GP-UCB with an event-triggered reset.

use serde::{Deserialize, Serialize};

use super::{Algorithm, Beta, Facts, check_beta, check_delta};
use crate::domain::InvalidInput;

/// ET-GP-UCB (Brunzema et al. 2022): static GP-UCB with an event-triggered reset.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(default, deny_unknown_fields)]
pub struct EtGpUcb {
    /// The trigger's confidence δ: a reset when an observation lies outside the
    /// model's 1 − δ bound (default 0.1).
    pub delta: f64,
    pub beta: Beta,
}

impl Default for EtGpUcb {
    fn default() -> Self {
        EtGpUcb {
            delta: 0.1,
            beta: Beta::default(),
        }
    }
}

impl Algorithm for EtGpUcb {
    const NAME: &'static str = "et-gp-ucb";
    const FACTS: Facts = Facts {
        summary: "ET-GP-UCB (Brunzema et al. 2022): GP-UCB reset when an observation \
                  contradicts the model",
        forgets: true,
        ..Facts::STATIC
    };

    fn check(&self) -> Result<(), InvalidInput> {
        check_delta(self.delta)?;
        check_beta(self.beta)
    }
}
