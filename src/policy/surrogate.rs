//! The surrogate model of a session: a GP on standardised values (DESIGN.md §3).

use crate::gp::fit::{FitOptions, Fixed, fit_hyperparameters};
use crate::gp::{Gp, GpError, Hyperparameters, KernelSpec};
use crate::policy::{Observation, PolicyRng};

/// Starting hyperparameters before any fit, on standardised values over [0,1]^d.
pub fn default_hyperparameters(data: &[Observation]) -> Hyperparameters {
    let span = data
        .iter()
        .map(|o| o.t)
        .fold(None, |acc: Option<(f64, f64)>, t| {
            Some(acc.map_or((t, t), |(lo, hi)| (lo.min(t), hi.max(t))))
        })
        .map_or(0.0, |(lo, hi)| hi - lo);
    Hyperparameters {
        signal_variance: 1.0,
        spatial_lengthscale: 0.2,
        temporal_lengthscale: span.max(1.0),
        noise_variance: 1e-2,
    }
}

/// Dataset sizes that are multiples of this get a fit with random restarts.
pub const FULL_REFIT_EVERY: usize = 10;

/// A GP over standardised values y' = (y − mean) / scale, with the map back.
#[derive(Clone, Debug)]
pub struct Surrogate {
    gp: Gp,
    y_mean: f64,
    y_scale: f64,
}

/// Mean and standard deviation used to standardise values (scale 1 when they do not vary).
fn standardisation(data: &[Observation]) -> (f64, f64) {
    if data.is_empty() {
        return (0.0, 1.0);
    }
    let n = data.len() as f64;
    let mean = data.iter().map(|o| o.y).sum::<f64>() / n;
    let variance = data.iter().map(|o| (o.y - mean).powi(2)).sum::<f64>() / n;
    let scale = variance.sqrt();
    (
        mean,
        if scale > 1e-12 * mean.abs().max(1.0) {
            scale
        } else {
            1.0
        },
    )
}

impl Surrogate {
    /// Fits the hyperparameters by maximum marginal likelihood and builds the GP.
    /// `fixed_noise` is in objective units squared.
    ///
    /// With a warm start, the fit refines it alone, except on every
    /// [`FULL_REFIT_EVERY`]-th dataset size, where it also tries quasi-random restarts (as
    /// it always does without a warm start): a warm-started local search tracks a slowly
    /// moving optimum at a fraction of the cost, and the periodic restarts let it escape
    /// a local one.
    pub fn fit(
        spec: KernelSpec,
        dim: usize,
        data: &[Observation],
        warm_start: Option<&Hyperparameters>,
        fixed_noise: Option<f64>,
        fixed_temporal_lengthscale: Option<f64>,
        rng: &mut PolicyRng,
    ) -> Result<Self, GpError> {
        let (y_mean, y_scale) = standardisation(data);
        let xs: Vec<Vec<f64>> = data.iter().map(|o| o.x.clone()).collect();
        let ts: Vec<f64> = data.iter().map(|o| o.t).collect();
        let ys: Vec<f64> = data.iter().map(|o| (o.y - y_mean) / y_scale).collect();
        let full_refit = warm_start.is_none() || data.len().is_multiple_of(FULL_REFIT_EVERY);
        let options = FitOptions {
            restarts: if full_refit {
                FitOptions::default().restarts
            } else {
                0
            },
            fixed: Fixed {
                temporal_lengthscale: fixed_temporal_lengthscale,
                noise_variance: fixed_noise.map(|v| v / (y_scale * y_scale)),
            },
            ..FitOptions::default()
        };
        let start = warm_start
            .copied()
            .unwrap_or_else(|| default_hyperparameters(data));
        let hyper = fit_hyperparameters(spec, &xs, &ts, &ys, Some(&start), &options, rng)?;
        let gp = Gp::new(spec, hyper, dim, xs, ts, ys)?;
        Ok(Surrogate {
            gp,
            y_mean,
            y_scale,
        })
    }

    /// Builds the GP with given hyperparameters, without fitting.
    pub fn with_hyperparameters(
        spec: KernelSpec,
        dim: usize,
        data: &[Observation],
        hyper: Hyperparameters,
    ) -> Result<Self, GpError> {
        let (y_mean, y_scale) = standardisation(data);
        let gp = Gp::new(
            spec,
            hyper,
            dim,
            data.iter().map(|o| o.x.clone()).collect(),
            data.iter().map(|o| o.t).collect(),
            data.iter().map(|o| (o.y - y_mean) / y_scale).collect(),
        )?;
        Ok(Surrogate {
            gp,
            y_mean,
            y_scale,
        })
    }

    /// The GP on standardised values.
    pub fn gp(&self) -> &Gp {
        &self.gp
    }

    pub fn hyperparameters(&self) -> &Hyperparameters {
        self.gp.hyperparameters()
    }

    /// Standard deviation of the data, the unit of standardised values.
    pub fn y_scale(&self) -> f64 {
        self.y_scale
    }

    /// Posterior mean and standard deviation of the latent objective (internal scale) at (x, t).
    pub fn predict(&self, x: &[f64], t: f64) -> (f64, f64) {
        let (mean, variance) = self.gp.predict(x, t);
        (
            self.y_mean + self.y_scale * mean,
            self.y_scale * variance.max(0.0).sqrt(),
        )
    }

    /// Posterior mean alone (internal scale), in O(n) instead of predict's O(n²).
    pub fn mean(&self, x: &[f64], t: f64) -> f64 {
        let gp = &self.gp;
        let latent: f64 = gp
            .xs()
            .iter()
            .zip(gp.ts())
            .zip(gp.alpha().iter())
            .map(|((xi, &ti), a)| gp.kernel(x, t, xi, ti) * a)
            .sum();
        self.y_mean + self.y_scale * latent
    }

    /// Adds (x, t) with y = μ(x, t): the mean is unchanged and the variance shrinks, as if
    /// the pending evaluation had returned (GP-BUCB).
    pub fn hallucinate(&mut self, x: &[f64], t: f64) -> Result<(), GpError> {
        let (mean, _) = self.gp.predict(x, t);
        self.gp.push(x, t, mean)
    }
}
