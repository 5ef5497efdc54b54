//! BOLT (Bardou & Thiran, Algorithm 1): spatio-temporal UCB that keeps the dataset its
//! response time affords.

use serde::{Deserialize, Serialize};

use super::{
    Algorithm, Beta, Facts, MAX_DATASET_SIZE, check_beta, check_dataset_floor,
    default_min_dataset_size,
};
use crate::domain::InvalidInput;

/// BOLT (Bardou & Thiran, Algorithm 1): spatio-temporal UCB that keeps at most n*
/// observations, n* = argmax_n Σ_{i≤n} k_T²(i·R̂(n)) (their Eq. (9)) from the measured
/// response time R̂(n), and forgets the least relevant ones.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(default, deny_unknown_fields)]
pub struct Bolt {
    /// The smallest n* (default 15).
    pub min_dataset_size: u64,
    /// The largest n* (default 5000).
    pub max_dataset_size: u64,
    pub beta: Beta,
}

impl Default for Bolt {
    fn default() -> Self {
        Bolt {
            min_dataset_size: default_min_dataset_size(),
            max_dataset_size: 5000,
            beta: Beta::default(),
        }
    }
}

impl Algorithm for Bolt {
    const NAME: &'static str = "bolt";
    const FACTS: Facts = Facts {
        summary: "BOLT (Bardou & Thiran): spatio-temporal UCB keeping the dataset its \
                  response time affords, forgetting the least relevant observations",
        forgets: true,
        uses_time: true,
        bounds_its_dataset: true,
        ..Facts::STATIC
    };

    fn check(&self) -> Result<(), InvalidInput> {
        check_dataset_floor(self.min_dataset_size)?;
        if !(self.min_dataset_size..=MAX_DATASET_SIZE).contains(&self.max_dataset_size) {
            return Err(InvalidInput::new(
                "algorithm.max_dataset_size",
                format!("must lie within [min_dataset_size, {MAX_DATASET_SIZE}]"),
            ));
        }
        check_beta(self.beta)
    }
}
