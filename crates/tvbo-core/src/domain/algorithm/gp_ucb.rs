//! GP-UCB (Srinivas et al. 2010): the static model, which never forgets.

use serde::{Deserialize, Serialize};

use super::{Algorithm, Beta, Facts, PriorUse, check_beta, check_given_prior};
use crate::domain::InvalidInput;
use crate::domain::priors::PriorSpec;
use crate::domain::space::Arm;

/// GP-UCB (Srinivas et al. 2010): static kernel, never forgets. On an arm set it may
/// take one prior (`priors`, e.g. an empirical covariance) instead of a fitted kernel.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(default, deny_unknown_fields)]
pub struct GpUcb {
    pub beta: Beta,
    /// One prior over the arms (arm sessions), used as the kernel.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub priors: Option<Vec<PriorSpec>>,
}

impl Algorithm for GpUcb {
    const NAME: &'static str = "gp-ucb";
    const FACTS: Facts = Facts {
        summary: "GP-UCB (Srinivas et al. 2010): a static model that never forgets; on arms, \
                  one given prior may replace the fitted kernel",
        priors: PriorUse::Optional,
        ..Facts::STATIC
    };

    fn check(&self) -> Result<(), InvalidInput> {
        check_beta(self.beta)
    }

    fn priors(&self) -> Option<&[PriorSpec]> {
        self.priors.as_deref()
    }

    fn check_priors(&mut self, arms: Option<&[Arm]>) -> Result<(), InvalidInput> {
        check_given_prior(Self::NAME, &mut self.priors, arms)
    }
}
