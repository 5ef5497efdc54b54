//! Arm priors built from their specifications (paper 003 §5): the mean vector and the
//! m × m covariance over a session's arms, and the check, at session creation, that every
//! prior of a configuration builds into a valid (positive semi-definite) covariance.

use nalgebra::{DMatrix, DVector};

use crate::domain::InvalidInput;
use crate::domain::checked::CheckedConfig;
use crate::domain::priors::{PriorMean, PriorSpec};
use crate::domain::space::{Arm, ParamValue};
use crate::gp::arms::{ArmPrior, KernelPriorParams, PriorError};

/// The prior over `arms` on the internal scale: means multiplied by `sign` (−1 for
/// minimisation), the covariance unchanged.
pub fn build_prior_matrix(
    spec: &PriorSpec,
    arms: &[Arm],
    sign: f64,
) -> Result<ArmPrior, PriorError> {
    let m = arms.len();
    let mean = match &spec.mean {
        None => DVector::zeros(m),
        Some(PriorMean::Constant(value)) => DVector::from_element(m, sign * value),
        Some(PriorMean::PerArm(values)) => {
            if values.len() != m {
                return Err(PriorError::Size {
                    expected: m,
                    found: values.len(),
                });
            }
            DVector::from_iterator(m, values.iter().map(|v| sign * v))
        }
    };
    let covariance = match (&spec.kernel, &spec.covariance) {
        (Some(kernel), _) => {
            let params = KernelPriorParams {
                kernel: *kernel,
                lengthscale: spec.lengthscale.unwrap_or(1.0),
                variance: spec.variance.unwrap_or(1.0),
                period: spec.period.unwrap_or(1.0),
                alpha: spec.alpha.unwrap_or(1.0),
            };
            let points: Vec<Vec<f64>> = arms
                .iter()
                // Arms are numeric: a session with arms has no categorical parameter.
                .map(|a| {
                    a.params
                        .values()
                        .filter_map(ParamValue::as_number)
                        .collect()
                })
                .collect();
            params.matrix(&points)
        }
        (None, Some(rows)) => {
            if rows.iter().any(|r| r.len() != m) {
                return Err(PriorError::Size {
                    expected: m,
                    found: rows.iter().map(Vec::len).find(|&l| l != m).unwrap_or(0),
                });
            }
            DMatrix::from_fn(rows.len(), m, |i, j| rows[i][j])
        }
        (None, None) => {
            return Err(PriorError::Size {
                expected: m,
                found: 0,
            });
        }
    };
    ArmPrior::new(mean, covariance)
}

/// Refuses a configuration with a prior that does not build over its arms (a covariance
/// that is not positive semi-definite, say), naming the prior's `kernel` or `covariance`.
pub fn check_priors(config: &CheckedConfig) -> Result<(), InvalidInput> {
    let Some(given) = config.given_priors() else {
        return Ok(());
    };
    for (i, prior) in given.priors.to_vec().iter().enumerate() {
        build_prior_matrix(prior, &given.arms.arms, 1.0).map_err(|e| {
            let name = if prior.kernel.is_some() {
                "kernel"
            } else {
                "covariance"
            };
            InvalidInput::new(format!("algorithm.priors[{i}].{name}"), e.to_string())
        })?;
    }
    Ok(())
}
