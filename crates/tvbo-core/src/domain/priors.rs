//! The priors of arm sessions (paper 003 §5): as sent, and validated with their defaults
//! filled in. Building them into covariance matrices over the arms (and refusing one that
//! is not positive semi-definite) is the policy layer's (`policy::priors`).
//!
//! A prior is either a kernel over the arms' raw parameter values (every kernel is
//! invariant to the order of the parameters) with a constant or per-arm mean, or an empirical prior: one
//! mean per arm and an m × m covariance matrix.

use serde::{Deserialize, Serialize};

use crate::domain::kernel::PriorKernel;
use crate::domain::space::{Arm, MAX_MAGNITUDE};
use crate::domain::{InvalidInput, rows_heap_bytes, validate_text};

/// Largest number of priors of a session.
pub const MAX_PRIORS: usize = 16;
/// Longest prior name, in characters.
pub const MAX_PRIOR_NAME_CHARS: usize = 200;
/// Largest number of arms of a session with priors: every prior holds two m × m
/// matrices (the covariance and its factor), 16 MB per prior at this limit.
pub const MAX_PRIOR_ARMS: usize = 1000;

/// A prior mean: one value for every arm, or one value per arm.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(untagged)]
pub enum PriorMean {
    Constant(f64),
    PerArm(Vec<f64>),
}

/// One prior, as sent and as stored (defaults filled in).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct PriorSpec {
    /// A label shown in the model view (default `prior-<index>`): 1 to 200 characters,
    /// no control characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(min_length = 1, max_length = 200))]
    pub name: Option<String>,
    /// Kernel family of a kernel prior; absent for an empirical prior.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel: Option<PriorKernel>,
    /// Lengthscale in the parameters' raw units (every kernel but `linear`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lengthscale: Option<f64>,
    /// Signal variance of a kernel prior (default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variance: Option<f64>,
    /// Period of the `periodic` kernel, in raw units.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub period: Option<f64>,
    /// Shape α of the `rq` kernel (default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alpha: Option<f64>,
    /// Mean: a number (kernel priors, default 0) or one value per arm, in the objective's
    /// units.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean: Option<PriorMean>,
    /// Covariance matrix over the arms (empirical priors): m rows of m numbers,
    /// symmetric and positive semi-definite.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub covariance: Option<Vec<Vec<f64>>>,
}

fn positive(value: f64) -> bool {
    value.is_finite() && value > 0.0 && value <= MAX_MAGNITUDE
}

fn finite(value: f64) -> bool {
    value.is_finite() && value.abs() <= MAX_MAGNITUDE
}

impl PriorSpec {
    /// Bytes of heap memory held: the name, a per-arm mean and an empirical covariance.
    pub fn heap_bytes(&self) -> usize {
        let mean = match &self.mean {
            Some(PriorMean::PerArm(values)) => values.capacity() * std::mem::size_of::<f64>(),
            _ => 0,
        };
        self.name.as_ref().map_or(0, String::capacity)
            + mean
            + self.covariance.as_ref().map_or(0, rows_heap_bytes)
    }

    /// Validates the prior against the session's arms and fills in its defaults. `field`
    /// is the prior's path, e.g. `algorithm.priors[1]`.
    fn validate(&mut self, index: usize, arms: &[Arm], field: &str) -> Result<(), InvalidInput> {
        if let Some(name) = &self.name {
            validate_text(&format!("{field}.name"), name, 1, MAX_PRIOR_NAME_CHARS)?;
        }
        self.name.get_or_insert_with(|| format!("prior-{index}"));
        match self.kernel {
            Some(kernel) => self.validate_kernel_prior(kernel, arms.len(), field),
            None => self.validate_empirical_prior(arms.len(), field),
        }
    }

    /// A kernel prior: the kernel's own parameters, none of the others, and a constant or
    /// per-arm mean (default 0); variance defaults to 1, rq's alpha to 1.
    fn validate_kernel_prior(
        &mut self,
        kernel: PriorKernel,
        m: usize,
        field: &str,
    ) -> Result<(), InvalidInput> {
        let at = |name: &str| format!("{field}.{name}");
        forbid(
            self.covariance.is_some(),
            at("covariance"),
            "give a kernel or an empirical covariance, not both",
        )?;
        match (kernel, self.lengthscale) {
            (PriorKernel::Linear, Some(_)) => {
                return Err(InvalidInput::new(
                    at("lengthscale"),
                    "the linear kernel has no lengthscale",
                ));
            }
            (PriorKernel::Linear, None) => {}
            (_, None) => {
                return Err(InvalidInput::new(
                    at("lengthscale"),
                    "is required (a number > 0, in the parameters' units)",
                ));
            }
            (_, Some(l)) if !positive(l) => {
                return Err(InvalidInput::new(at("lengthscale"), "must be a number > 0"));
            }
            _ => {}
        }
        let variance = *self.variance.get_or_insert(1.0);
        if !positive(variance) {
            return Err(InvalidInput::new(at("variance"), "must be a number > 0"));
        }
        match (kernel, self.period) {
            (PriorKernel::Periodic, None) => {
                return Err(InvalidInput::new(
                    at("period"),
                    "is required by the periodic kernel",
                ));
            }
            (PriorKernel::Periodic, Some(p)) if !positive(p) => {
                return Err(InvalidInput::new(at("period"), "must be a number > 0"));
            }
            (PriorKernel::Periodic, Some(_)) => {}
            (_, period) => forbid(
                period.is_some(),
                at("period"),
                "only the periodic kernel has a period",
            )?,
        }
        if kernel == PriorKernel::Rq {
            let alpha = *self.alpha.get_or_insert(1.0);
            if !positive(alpha) {
                return Err(InvalidInput::new(at("alpha"), "must be a number > 0"));
            }
        } else {
            forbid(
                self.alpha.is_some(),
                at("alpha"),
                "only the rq kernel has alpha",
            )?;
        }
        match self.mean.get_or_insert(PriorMean::Constant(0.0)) {
            PriorMean::Constant(value) if !finite(*value) => {
                Err(InvalidInput::new(at("mean"), "must be a finite number"))
            }
            PriorMean::Constant(_) => Ok(()),
            PriorMean::PerArm(values) => validate_per_arm_mean(values, m, &at("mean")),
        }
    }

    /// An empirical prior: one mean per arm and an m × m covariance of finite numbers
    /// (its positive semi-definiteness is checked where it is factorised), no kernel
    /// parameters.
    fn validate_empirical_prior(&self, m: usize, field: &str) -> Result<(), InvalidInput> {
        let at = |name: &str| format!("{field}.{name}");
        for (present, name) in [
            (self.lengthscale.is_some(), "lengthscale"),
            (self.variance.is_some(), "variance"),
            (self.period.is_some(), "period"),
            (self.alpha.is_some(), "alpha"),
        ] {
            forbid(
                present,
                at(name),
                "belongs to kernel priors; this prior has no kernel",
            )?;
        }
        let Some(covariance) = &self.covariance else {
            return Err(InvalidInput::new(
                at("kernel"),
                "give a kernel (with its lengthscale), or an empirical prior's mean and covariance",
            ));
        };
        match &self.mean {
            Some(PriorMean::PerArm(values)) => {
                validate_per_arm_mean(values, m, &at("mean"))?;
            }
            _ => {
                return Err(InvalidInput::new(
                    at("mean"),
                    format!("an empirical prior needs one mean per arm ({m} numbers)"),
                ));
            }
        }
        if covariance.len() != m {
            return Err(InvalidInput::new(
                at("covariance"),
                format!(
                    "must have {m} rows (one per arm), found {}",
                    covariance.len()
                ),
            ));
        }
        for (i, row) in covariance.iter().enumerate() {
            if row.len() != m {
                return Err(InvalidInput::new(
                    format!("{}[{i}]", at("covariance")),
                    format!("must have {m} entries (one per arm), found {}", row.len()),
                ));
            }
            if let Some(j) = row.iter().position(|v| !finite(*v)) {
                return Err(InvalidInput::new(
                    format!("{}[{i}][{j}]", at("covariance")),
                    "must be a finite number",
                ));
            }
        }
        Ok(())
    }
}

/// Refuses a field that is `present` where it does not belong, saying `why`.
fn forbid(present: bool, field: String, why: &str) -> Result<(), InvalidInput> {
    if present {
        Err(InvalidInput::new(field, why.to_string()))
    } else {
        Ok(())
    }
}

fn validate_per_arm_mean(values: &[f64], m: usize, field: &str) -> Result<(), InvalidInput> {
    if values.len() != m {
        return Err(InvalidInput::new(
            field,
            format!(
                "must have {m} entries (one per arm), found {}",
                values.len()
            ),
        ));
    }
    if let Some(i) = values.iter().position(|v| !finite(*v)) {
        return Err(InvalidInput::new(
            format!("{field}[{i}]"),
            "must be a finite number",
        ));
    }
    Ok(())
}

/// The error of an algorithm with priors in a session without arms.
pub(crate) fn arms_required(algorithm: &str) -> InvalidInput {
    InvalidInput::new(
        "arms",
        format!("algorithm {algorithm} works on a finite set of arms: give `arms`"),
    )
}

/// Validates an algorithm's priors against the session's arms (filling in defaults), and
/// its hyperprior, which is normalised (uniform when absent). `max_priors` is 1 for the
/// algorithms that take a single prior.
pub(crate) fn validate_priors(
    algorithm: &str,
    priors: &mut [PriorSpec],
    hyperprior: Option<&mut Option<Vec<f64>>>,
    arms: Option<&[Arm]>,
    max_priors: usize,
) -> Result<(), InvalidInput> {
    let arms = arms.ok_or_else(|| arms_required(algorithm))?;
    if arms.len() > MAX_PRIOR_ARMS {
        return Err(InvalidInput::new(
            "arms",
            format!(
                "at most {MAX_PRIOR_ARMS} arms with priors (each prior holds two m × m matrices)"
            ),
        ));
    }
    if priors.is_empty() || priors.len() > max_priors {
        let message = if max_priors == 1 {
            format!("algorithm {algorithm} takes exactly one prior")
        } else {
            format!("must hold 1 to {max_priors} priors")
        };
        return Err(InvalidInput::new("algorithm.priors", message));
    }
    for (i, prior) in priors.iter_mut().enumerate() {
        prior.validate(i, arms, &format!("algorithm.priors[{i}]"))?;
    }
    let mut names = std::collections::BTreeSet::new();
    for (i, prior) in priors.iter().enumerate() {
        if !names.insert(prior.name.clone()) {
            return Err(InvalidInput::new(
                format!("algorithm.priors[{i}].name"),
                "must be unique",
            ));
        }
    }
    if let Some(hyperprior) = hyperprior {
        let weights = hyperprior.get_or_insert_with(|| vec![1.0; priors.len()]);
        if weights.len() != priors.len() {
            return Err(InvalidInput::new(
                "algorithm.hyperprior",
                format!("must have one weight per prior ({})", priors.len()),
            ));
        }
        if let Some(i) = weights.iter().position(|w| !(w.is_finite() && *w >= 0.0)) {
            return Err(InvalidInput::new(
                format!("algorithm.hyperprior[{i}]"),
                "must be a finite number ≥ 0",
            ));
        }
        let total: f64 = weights.iter().sum();
        if !(total > 0.0 && total.is_finite()) {
            return Err(InvalidInput::new(
                "algorithm.hyperprior",
                "weights must have a positive, finite sum",
            ));
        }
        for w in weights.iter_mut() {
            *w /= total;
        }
    }
    Ok(())
}
