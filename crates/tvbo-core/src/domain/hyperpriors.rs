//! A surrogate model's hyperparameters: the box a fit searches (and TV-GP-UCB's ε ↔ l_T),
//! the priors it may put on them, and what a fit reports about where it ended
//! (docs/decisions/0009-hyperpriors-and-the-fit-guard.md).

use serde::{Deserialize, Serialize};

/// Bounds of the hyperparameter fit. λ, for standardised y:
pub const SIGNAL_VARIANCE_BOUNDS: (f64, f64) = (0.05, 20.0);
/// Bounds of l_S for inputs in `[0,1]^d`.
pub const SPATIAL_LENGTHSCALE_BOUNDS: (f64, f64) = (0.01, 10.0);
/// Bounds of l_T in seconds.
pub const TEMPORAL_LENGTHSCALE_BOUNDS: (f64, f64) = (0.1, 1e7);
/// Fitting box of a drifting level's variance λ_L (on standardised y): from a level too
/// small to matter to λ's top.
pub const LEVEL_VARIANCE_BOUNDS: (f64, f64) = (1e-4, 20.0);
/// Fitting box of a drifting level's lengthscale l_L in seconds: l_T's.
pub const LEVEL_LENGTHSCALE_BOUNDS: (f64, f64) = TEMPORAL_LENGTHSCALE_BOUNDS;
/// Bounds of l_C, the categorical overlap kernel's lengthscale: from choices that share
/// nothing (e^{−1/0.05} ≈ 2·10⁻⁹) to choices that are all but the same (e^{−1/50} ≈ 0.98).
pub const CATEGORICAL_LENGTHSCALE_BOUNDS: (f64, f64) = (0.05, 50.0);

/// l_T of the forgetting rate ε (per second).
pub fn temporal_lengthscale_of_epsilon(epsilon: f64) -> f64 {
    -2.0 / (-epsilon).ln_1p()
}

/// ε (per second) of the temporal lengthscale l_T.
pub fn epsilon_of_temporal_lengthscale(temporal_lengthscale: f64) -> f64 {
    -(-2.0 / temporal_lengthscale).exp_m1()
}

/// Which priors a session's hyperparameter fits put on the hyperparameters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum Hyperpriors {
    /// No priors: each fit maximises the exact marginal likelihood, as 002 §5.1 does.
    /// On few or clustered data its optimum can sit at a bound (a model flat in space,
    /// time explaining every value) and lock a session into corner suggestions.
    None,
    /// The maximum a posteriori fit under the log-normal priors of
    /// [`HyperpriorSet::robust`], guarded against fits that end at a bound.
    #[default]
    Robust,
}

impl Hyperpriors {
    /// The value of a stored session that predates the setting: the exact likelihood it
    /// was created with (a session's model does not change under it).
    pub fn of_stored_session() -> Hyperpriors {
        Hyperpriors::None
    }
}

/// A log-normal prior on a positive hyperparameter h: ln h ~ N(loc, scale²), as
/// GPyTorch's `LogNormalPrior`, whose density is that of h (with its 1/h), so that where
/// the likelihood is flat the fit ends at the prior's mode e^(loc − scale²).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct LogNormal {
    pub loc: f64,
    pub scale: f64,
}

impl LogNormal {
    /// ln p(h) at u = ln h: −u − (u − loc)²/(2 scale²) − ln(scale √(2π)).
    pub fn log_density(&self, u: f64) -> f64 {
        let z = (u - self.loc) / self.scale;
        -u - 0.5 * z * z - (self.scale * (2.0 * std::f64::consts::PI).sqrt()).ln()
    }

    /// d ln p(h) / du at u = ln h.
    pub fn log_density_slope(&self, u: f64) -> f64 {
        -1.0 - (u - self.loc) / (self.scale * self.scale)
    }

    /// The value of h where the density peaks.
    pub fn mode(&self) -> f64 {
        (self.loc - self.scale * self.scale).exp()
    }
}

/// √2 and √3 of Hvarfner et al. (2024), "Vanilla Bayesian Optimization Performs Great in
/// High Dimensions", §4: a lengthscale prior LogNormal(√2 + ln(d)/2, √3) for inputs on
/// the unit cube, as BoTorch's `get_covar_module_with_dim_scaled_prior` sets it.
const LENGTHSCALE_LOC: f64 = std::f64::consts::SQRT_2;
const LENGTHSCALE_SCALE: f64 = 1.732_050_807_568_877_2;

/// The robust prior on l_C: LogNormal(3, √3), mode e^(loc − scale²) = 1.
pub const CATEGORICAL_LENGTHSCALE_PRIOR: LogNormal = LogNormal {
    loc: LENGTHSCALE_SCALE * LENGTHSCALE_SCALE,
    scale: LENGTHSCALE_SCALE,
};

/// The priors of one fit, on the standardised values' scale; l_T in seconds.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct HyperpriorSet {
    /// On λ: LogNormal(1, 1), mode 1, the standardised values' variance.
    pub signal_variance: LogNormal,
    /// On l_S: LogNormal(√2 + ln(d)/2, √3) (Hvarfner et al. 2024; BoTorch's default).
    pub spatial_lengthscale: LogNormal,
    /// On l_T: LogNormal(ln(span) + 3, √3), span = max(last − first time, 1 s): as wide
    /// as the spatial prior, with its mode at the span, so that it never pulls l_T below
    /// the window of data a forgetting algorithm keeps (a mode below it fed a loop of
    /// shorter l_T, more forgetting, a shorter span: decision 0009).
    pub temporal_lengthscale: LogNormal,
    /// On σ²: LogNormal(−4, 1), BoTorch's `get_gaussian_likelihood_with_lognormal_prior`.
    pub noise_variance: LogNormal,
    /// On l_C, with categorical parameters: LogNormal(3, √3), as wide as the spatial
    /// prior, with its mode at 1 (choices correlated e^{−1} ≈ 0.37 a priori). BoTorch
    /// puts no prior on its categorical kernel's lengthscale; this one only keeps the
    /// fit off the box's ends when a few observations cannot tell.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub categorical_lengthscale: Option<LogNormal>,
}

impl HyperpriorSet {
    /// The priors of [`Hyperpriors::Robust`] for `dim` continuous dimensions and data at
    /// session times `times` (their span, at least 1 s, sets l_T's prior); with
    /// `categorical`, the prior on l_C too.
    pub fn robust(
        dim: usize,
        categorical: bool,
        times: impl IntoIterator<Item = f64>,
    ) -> HyperpriorSet {
        let (first, last) = times
            .into_iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), t| {
                (a.min(t), b.max(t))
            });
        let span = if last > first {
            (last - first).max(1.0)
        } else {
            1.0
        };
        HyperpriorSet {
            signal_variance: LogNormal {
                loc: 1.0,
                scale: 1.0,
            },
            spatial_lengthscale: LogNormal {
                loc: LENGTHSCALE_LOC + 0.5 * (dim.max(1) as f64).ln(),
                scale: LENGTHSCALE_SCALE,
            },
            // Mode e^(loc − scale²) at the span itself.
            temporal_lengthscale: LogNormal {
                loc: span.ln() + LENGTHSCALE_SCALE * LENGTHSCALE_SCALE,
                scale: LENGTHSCALE_SCALE,
            },
            noise_variance: LogNormal {
                loc: -4.0,
                scale: 1.0,
            },
            categorical_lengthscale: categorical.then_some(CATEGORICAL_LENGTHSCALE_PRIOR),
        }
    }
}

/// A hyperparameter and the end of its fitting box where a fit left it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum BoundHit {
    SignalVarianceLower,
    SignalVarianceUpper,
    SpatialLengthscaleLower,
    SpatialLengthscaleUpper,
    TemporalLengthscaleLower,
    TemporalLengthscaleUpper,
    NoiseVarianceLower,
    NoiseVarianceUpper,
    /// l_C at a bound: choices that share nothing, or that do not matter; answers the
    /// data may support, not a degenerate shape (not [`BoundHit::is_lengthscale`]).
    CategoricalLengthscaleLower,
    CategoricalLengthscaleUpper,
    /// λ_L or l_L of a drifting level at a bound: no level, or one that moves with every
    /// measurement or never; answers the data may support (not
    /// [`BoundHit::is_lengthscale`]).
    LevelVarianceLower,
    LevelVarianceUpper,
    LevelLengthscaleLower,
    LevelLengthscaleUpper,
}

impl BoundHit {
    /// Whether the hyperparameter is a lengthscale (l_S or l_T): a fit that leaves one at
    /// a bound has found a model of degenerate shape (flat, or every point its own bump)
    /// rather than a small noise or a large signal, which the data may well support.
    pub fn is_lengthscale(self) -> bool {
        matches!(
            self,
            BoundHit::SpatialLengthscaleLower
                | BoundHit::SpatialLengthscaleUpper
                | BoundHit::TemporalLengthscaleLower
                | BoundHit::TemporalLengthscaleUpper
        )
    }
}

/// What a hyperparameter fit did beyond its search: recorded with the step it served
/// when [`FitReport::is_notable`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct FitReport {
    /// Fitted hyperparameters at an end of their box (after the guard's second start).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub at_bound: Vec<BoundHit>,
    /// The first search ended with a lengthscale at a bound and the guard searched again
    /// from the opposite explanation of the data (smooth in time, rough in space),
    /// keeping the better.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub second_start: bool,
    /// The fitted model is flat in space (l_S at its upper bound even after the second
    /// start): the step's suggestions were drawn uniformly instead of from the
    /// acquisition, whose maximiser would be an artefact of that flatness.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub explored: bool,
}

impl FitReport {
    /// Whether the fit did anything but end inside its box: what a step records.
    pub fn is_notable(&self) -> bool {
        !self.at_bound.is_empty() || self.second_start || self.explored
    }

    /// Whether the model this fit built cannot tell points in space apart.
    pub fn flat_in_space(&self) -> bool {
        self.at_bound.contains(&BoundHit::SpatialLengthscaleUpper)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The slope is the log density's derivative (central differences), and the density
    /// peaks at the mode.
    #[test]
    fn the_log_density_its_slope_and_mode_agree() {
        let prior = HyperpriorSet::robust(5, false, [0.0, 80.0]).spatial_lengthscale;
        for u in [-3.0, -0.5, 0.0, 1.0, 2.5] {
            let numeric = (prior.log_density(u + 1e-6) - prior.log_density(u - 1e-6)) / 2e-6;
            assert!(
                (numeric - prior.log_density_slope(u)).abs() < 1e-6,
                "at {u}"
            );
        }
        let peak = prior.mode().ln();
        assert!(prior.log_density_slope(peak).abs() < 1e-12);
        assert!(prior.log_density(peak) > prior.log_density(peak + 0.01));
        assert!(prior.log_density(peak) > prior.log_density(peak - 0.01));
        // BoTorch's numbers at d = 5: median e^(√2 + ln(5)/2), mode e^(that − 3).
        assert!((prior.loc - (2f64.sqrt() + 0.5 * 5f64.ln())).abs() < 1e-15);
        assert!((prior.mode() - 0.4579).abs() < 1e-4, "{}", prior.mode());
        // l_T's mode is the data's time span (at least 1 s).
        let temporal = |times: &[f64]| {
            HyperpriorSet::robust(5, false, times.iter().copied())
                .temporal_lengthscale
                .mode()
        };
        assert!((temporal(&[3.0, 83.0, 10.0]) - 80.0).abs() < 1e-9);
        assert!((temporal(&[5.0]) - 1.0).abs() < 1e-12);
        assert!((temporal(&[]) - 1.0).abs() < 1e-12);
    }
}
