//! The surrogate model of a session: a GP on standardised (optionally warped) values.

use crate::domain::config::{FitStart, Lengthscales, Level, ModelConfig, Warping};
use crate::domain::hyperpriors::{FitReport, HyperpriorSet, Hyperpriors};
use crate::gp::fit::{FitOptions, Fixed, NOISE_VARIANCE_BOUNDS, SearchStart, fit_with_report};
use crate::gp::{Gp, GpError, Hyperparameters, KernelSpec};
use crate::policy::output_transform::OutputTransform;
use crate::policy::{Observation, Stage};

/// A GP over standardised values y' = (w(y) − mean) / scale, w the session's warping
/// ([`OutputTransform`]), with the map back.
#[derive(Clone, Debug)]
pub struct Surrogate {
    gp: Gp,
    output: OutputTransform,
    /// What the fit did (the default report for a model built without one).
    fit: FitReport,
}

/// How a session's model is fitted: the values held fixed, where the search starts and
/// which priors it maximises under.
#[derive(Clone, Copy, Debug)]
pub struct FitSettings<'a> {
    /// Fixed observation-noise variance in objective units squared.
    pub fixed_noise: Option<f64>,
    /// Fixed l_T in seconds.
    pub fixed_temporal_lengthscale: Option<f64>,
    pub start: SearchStart<'a>,
    /// `robust`: MAP under [`HyperpriorSet::robust`] with the fit's guard; `none`: the
    /// exact likelihood, unguarded (002's protocol).
    pub hyperpriors: Hyperpriors,
    /// One spatial lengthscale per continuous parameter, or one for all.
    pub lengthscales: Lengthscales,
    /// The values the GP is fitted to: the values, or a warping of them.
    pub warping: Warping,
    /// Whether the kernel has a drifting level.
    pub level: Level,
}

impl FitSettings<'_> {
    /// From the default start, nothing fixed but `fixed_noise`, with `model`'s priors and
    /// lengthscales.
    pub fn from_default_start(fixed_noise: Option<f64>, model: &ModelConfig) -> Self {
        FitSettings {
            fixed_noise,
            fixed_temporal_lengthscale: None,
            start: SearchStart::Default,
            hyperpriors: model.hyperpriors,
            lengthscales: model.lengthscales,
            warping: model.warping,
            level: model.level,
        }
    }
}

/// The transform of `data` under `warping`, and the inputs, times and standardised values
/// that [`Surrogate::fit`] fits.
#[allow(clippy::type_complexity)]
pub fn standardised(
    data: &[Observation],
    warping: Warping,
) -> (OutputTransform, Vec<Vec<f64>>, Vec<f64>, Vec<f64>) {
    let output = OutputTransform::of(data, warping);
    let ys = data.iter().map(|o| output.forward(o.y)).collect();
    (
        output,
        data.iter().map(|o| o.x.clone()).collect(),
        data.iter().map(|o| o.t).collect(),
        ys,
    )
}

/// Under `fit_start: previous`, the suggests whose ordinal is a multiple of this fit from
/// the default start: a chain of warm starts, each from the one before, lasts at most
/// this many fits less one.
pub const FULL_FIT_EVERY: u64 = 5;

/// Where the fit of a suggest with ordinal `ordinal` starts: the default start, or under
/// `fit_start: previous` the session's last fit's hyperparameters (on the standardised
/// values of that fit) when there is one and `ordinal` is not a multiple of
/// [`FULL_FIT_EVERY`], guarded by [`SearchStart::Previous`].
pub fn search_start(
    rule: FitStart,
    previous: Option<&Hyperparameters>,
    ordinal: u64,
) -> SearchStart<'_> {
    match (rule, previous) {
        (FitStart::Previous, Some(h)) if !ordinal.is_multiple_of(FULL_FIT_EVERY) => {
            SearchStart::Previous(h)
        }
        _ => SearchStart::Default,
    }
}

impl Surrogate {
    /// Fits the hyperparameters by maximum marginal likelihood, or by maximum a
    /// posteriori under `settings.hyperpriors`, and builds the GP (a [`Stage::Fit`]).
    ///
    /// From [`SearchStart::Default`] (a session's `fit_start: fixed`, see [`search_start`])
    /// the fit is one local search from the default start, whatever the earlier fits
    /// found ([`crate::gp::fit::fit_hyperparameters`] says why): the result depends on
    /// the data alone, so one unlucky fit cannot steer the next ones.
    pub fn fit(
        spec: KernelSpec,
        dim: usize,
        data: &[Observation],
        settings: &FitSettings<'_>,
    ) -> Result<Self, GpError> {
        let (output, xs, ts, ys) = standardised(data, settings.warping);
        let robust = settings.hyperpriors == Hyperpriors::Robust;
        let options = FitOptions {
            fixed: Fixed {
                temporal_lengthscale: settings.fixed_temporal_lengthscale,
                // The noise floor holds for a configured noise too.
                noise_variance: settings.fixed_noise.map(|v| {
                    output
                        .standardised_variance(v)
                        .clamp(NOISE_VARIANCE_BOUNDS.0, 1e6)
                }),
            },
            priors: robust.then(|| {
                let categories = spec.categories;
                HyperpriorSet::robust(
                    categories.continuous_dim(dim),
                    !categories.is_empty(),
                    ts.iter().copied(),
                )
            }),
            guard: robust,
            per_coordinate_lengthscales: settings.lengthscales == Lengthscales::PerParameter,
            level: settings.level == Level::Drifting,
            ..FitOptions::default()
        };
        let (gp, fit) = Stage::Fit.run(|| {
            let (hyper, report) = fit_with_report(spec, &xs, &ts, &ys, settings.start, &options)?;
            Ok::<_, GpError>((Gp::new(spec, hyper, dim, xs, ts, ys)?, report))
        })?;
        Ok(Surrogate { gp, output, fit })
    }

    /// Builds the GP with given hyperparameters, without fitting (a [`Stage::Fit`]).
    pub fn with_hyperparameters(
        spec: KernelSpec,
        dim: usize,
        data: &[Observation],
        hyper: Hyperparameters,
        warping: Warping,
    ) -> Result<Self, GpError> {
        let (output, xs, ts, ys) = standardised(data, warping);
        let gp = Stage::Fit.run(|| Gp::new(spec, hyper, dim, xs, ts, ys))?;
        Ok(Surrogate {
            gp,
            output,
            fit: FitReport::default(),
        })
    }

    /// Whether this is, bit for bit, the model [`Surrogate::with_hyperparameters`] builds
    /// of `data` in `dim` dimensions under `hyper` and `warping` with `spec`: the same
    /// kernel, hyperparameters, output transform, and inputs, times and standardised values in the
    /// same order, on which alone the GP's factor and weights depend. A model fitted to
    /// `data` is, under the hyperparameters its fit found; one with a point added
    /// (hallucinated or pushed) is not. O(n·d), no allocation.
    pub fn is_built_from(
        &self,
        spec: KernelSpec,
        dim: usize,
        data: &[Observation],
        hyper: &Hyperparameters,
        warping: Warping,
    ) -> bool {
        let same = |a: f64, b: f64| a.to_bits() == b.to_bits();
        let gp = &self.gp;
        let h = gp.hyperparameters();
        // Every field, named so that a new one cannot be left out.
        let Hyperparameters {
            signal_variance,
            spatial_lengthscale,
            temporal_lengthscale,
            noise_variance,
            categorical_lengthscale,
            lengthscale_ratios,
            level,
        } = *hyper;
        let output = OutputTransform::of(data, warping);
        gp.spec() == spec
            && gp.dim() == dim
            && same(h.signal_variance, signal_variance)
            && same(h.spatial_lengthscale, spatial_lengthscale)
            && same(h.temporal_lengthscale, temporal_lengthscale)
            && same(h.noise_variance, noise_variance)
            && same(h.categorical_lengthscale, categorical_lengthscale)
            && h.lengthscale_ratios.as_slice().len() == lengthscale_ratios.as_slice().len()
            && (h.lengthscale_ratios.as_slice().iter())
                .zip(lengthscale_ratios.as_slice())
                .all(|(&a, &b)| same(a, b))
            && match (h.level, level) {
                (None, None) => true,
                (Some(a), Some(b)) => {
                    same(a.variance, b.variance) && same(a.lengthscale, b.lengthscale)
                }
                _ => false,
            }
            && self.output.same_bits(&output)
            && gp.len() == data.len()
            && data
                .iter()
                .zip(gp.xs().iter().zip(gp.ts()).zip(gp.ys()))
                .all(|(o, ((x, &t), &y))| {
                    o.x.len() == x.len()
                        && o.x.iter().zip(x).all(|(&a, &b)| same(a, b))
                        && same(o.t, t)
                        && same(output.forward(o.y), y)
                })
    }

    /// The GP on standardised values.
    pub fn gp(&self) -> &Gp {
        &self.gp
    }

    pub fn hyperparameters(&self) -> &Hyperparameters {
        self.gp.hyperparameters()
    }

    /// What the fit that built this model did.
    pub fn fit_report(&self) -> &FitReport {
        &self.fit
    }

    /// The map between values and the GP's standardised values.
    pub fn output(&self) -> &OutputTransform {
        &self.output
    }

    /// Posterior mean and standard deviation of the latent objective (internal scale) at
    /// (x, t). Under a log warping, the mean is the posterior median (the inverse of the
    /// warped mean) and the deviation the delta method's ([`OutputTransform::inverse_sd`]).
    pub fn predict(&self, x: &[f64], t: f64) -> (f64, f64) {
        let (mean, variance) = self.gp.predict(x, t);
        (
            self.output.inverse(mean),
            self.output.inverse_sd(mean, variance.max(0.0).sqrt()),
        )
    }

    /// Posterior mean alone (internal scale; the median under a log warping), in O(n)
    /// instead of predict's O(n²).
    pub fn mean(&self, x: &[f64], t: f64) -> f64 {
        let latent = self.gp.predict_mean_many(&[x.to_vec()], t)[0];
        self.output.inverse(latent)
    }

    /// Adds an observation (value on the internal scale) in O(n²), keeping the output
    /// transform and hyperparameters of the fit.
    pub fn push(&mut self, x: &[f64], t: f64, y: f64) -> Result<(), GpError> {
        self.gp.push(x, t, self.output.forward(y))
    }

    /// Adds (x, t) with y = μ(x, t): the mean is unchanged and the variance shrinks, as if
    /// the pending evaluation had returned (GP-BUCB).
    pub fn hallucinate(&mut self, x: &[f64], t: f64) -> Result<(), GpError> {
        let (mean, _) = self.gp.predict(x, t);
        self.gp.push(x, t, mean)
    }
}
