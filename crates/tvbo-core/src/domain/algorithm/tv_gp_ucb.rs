//! TV-GP-UCB (Bogunovic et al. 2016, Alg. 2): GP-UCB with the temporal kernel
//! (1−ε)^{|Δt|/2}.

use serde::{Deserialize, Serialize};

use super::{Algorithm, Beta, Facts, PriorUse, check_beta, check_given_prior};
use crate::domain::InvalidInput;
use crate::domain::hyperpriors::{TEMPORAL_LENGTHSCALE_BOUNDS, epsilon_of_temporal_lengthscale};
use crate::domain::priors::PriorSpec;
use crate::domain::space::Arm;

/// TV-GP-UCB (Bogunovic et al. 2016, Alg. 2): the temporal kernel (1−ε)^{|Δt|/2}.
/// `epsilon` (per second) is learned by marginal likelihood when absent.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(default, deny_unknown_fields)]
pub struct TvGpUcb {
    pub beta: Beta,
    /// One prior over the arms (arm sessions), used as the spatial kernel.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub priors: Option<Vec<PriorSpec>>,
    /// ε per second; learned with the other hyperparameters when absent.
    pub epsilon: Option<f64>,
}

impl Algorithm for TvGpUcb {
    const NAME: &'static str = "tv-gp-ucb";
    const FACTS: Facts = Facts {
        summary: "TV-GP-UCB (Bogunovic et al. 2016, Alg. 2): GP-UCB with the temporal kernel \
                  (1-ε)^(|Δt|/2)",
        uses_time: true,
        priors: PriorUse::Optional,
        epsilon_in_time: true,
        ..Facts::STATIC
    };

    fn priors(&self) -> Option<&[PriorSpec]> {
        self.priors.as_deref()
    }

    fn check_priors(&mut self, arms: Option<&[Arm]>) -> Result<(), InvalidInput> {
        check_given_prior(Self::NAME, &mut self.priors, arms)
    }

    fn check(&self) -> Result<(), InvalidInput> {
        if let Some(e) = self.epsilon {
            // ε ↔ l_T = −2/ln(1−ε), and l_T must lie within the fit's bounds.
            let (shortest, longest) = TEMPORAL_LENGTHSCALE_BOUNDS;
            let (low, high) = (
                epsilon_of_temporal_lengthscale(longest),
                epsilon_of_temporal_lengthscale(shortest),
            );
            if !(e.is_finite() && e >= low && e <= high) {
                return Err(InvalidInput::new(
                    "algorithm.epsilon",
                    format!("must lie within [{low:.3e}, {high:.6}] (per second)"),
                ));
            }
        }
        check_beta(self.beta)
    }
}
