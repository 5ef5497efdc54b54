//! Uniform random search.

use serde::{Deserialize, Serialize};

use super::{Algorithm, Facts};
use crate::domain::InvalidInput;

/// Uniform random search: the floor every algorithm must beat.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct Random {}

impl Algorithm for Random {
    const NAME: &'static str = "random";
    const FACTS: Facts = Facts {
        summary: "uniform random search: the floor every algorithm must beat",
        fits_a_model: false,
        ..Facts::STATIC
    };

    fn check(&self) -> Result<(), InvalidInput> {
        Ok(())
    }
}
