//! Hyperparameters by maximum likelihood or maximum a posteriori: the exact log marginal
//! likelihood (plus, under hyperpriors, the log-normal priors' log densities) with
//! analytic gradients in log space, maximised by bounded L-BFGS from a fixed start
//! (optionally plus quasi-random restarts, and a guard's second start).

use nalgebra::DMatrix;

use super::exp::exp_in_place;
use super::kernel::KernelSpec;
use super::lengthscales::LengthscaleRatios;
use super::linalg;
use super::model::{
    DriftingLevel, GpError, Hyperparameters, factorise_with_jitter_into, validate_data,
    validate_hyperparameters,
};
use super::vectorise::widest_vectors;
use crate::domain::config::{
    SIGNAL_VARIANCE_BOUNDS, SPATIAL_LENGTHSCALE_BOUNDS, TEMPORAL_LENGTHSCALE_BOUNDS,
};
use crate::domain::hyperpriors::{BoundHit, FitReport, HyperpriorSet, LogNormal};
use crate::domain::hyperpriors::{CATEGORICAL_LENGTHSCALE_BOUNDS, CATEGORICAL_LENGTHSCALE_PRIOR};
use crate::domain::hyperpriors::{LEVEL_LENGTHSCALE_BOUNDS, LEVEL_VARIANCE_BOUNDS};
use crate::optim::{BoundedOptions, Objective, minimize_objective_bounded};

#[path = "fit_per_coordinate.rs"]
mod per_coordinate;
use per_coordinate::{
    PerCoordinate, coordinate_lengthscales, per_coordinate_gradient, scaled_distances,
};

/// Bounds of σ² for standardised y; the lower end is the design's noise floor.
pub const NOISE_VARIANCE_BOUNDS: (f64, f64) = (1e-4, 1.0);

/// Box (in natural units) within which each hyperparameter is fitted.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HyperBounds {
    /// (min, max) of λ.
    pub signal_variance: (f64, f64),
    /// (min, max) of l_S.
    pub spatial_lengthscale: (f64, f64),
    /// (min, max) of l_T in seconds.
    pub temporal_lengthscale: (f64, f64),
    /// (min, max) of σ².
    pub noise_variance: (f64, f64),
    /// (min, max) of l_C (with categorical inputs).
    pub categorical_lengthscale: (f64, f64),
    /// (min, max) of λ_L (with a drifting level).
    pub level_variance: (f64, f64),
    /// (min, max) of l_L in seconds (with a drifting level).
    pub level_lengthscale: (f64, f64),
}

impl Default for HyperBounds {
    /// The `*_BOUNDS` constants of this module.
    fn default() -> Self {
        HyperBounds {
            signal_variance: SIGNAL_VARIANCE_BOUNDS,
            spatial_lengthscale: SPATIAL_LENGTHSCALE_BOUNDS,
            temporal_lengthscale: TEMPORAL_LENGTHSCALE_BOUNDS,
            noise_variance: NOISE_VARIANCE_BOUNDS,
            categorical_lengthscale: CATEGORICAL_LENGTHSCALE_BOUNDS,
            level_variance: LEVEL_VARIANCE_BOUNDS,
            level_lengthscale: LEVEL_LENGTHSCALE_BOUNDS,
        }
    }
}

/// Which hyperparameters are held fixed instead of fitted.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Fixed {
    /// Fixed l_T in seconds (only meaningful when the spec has a temporal kernel).
    pub temporal_lengthscale: Option<f64>,
    /// Fixed σ².
    pub noise_variance: Option<f64>,
}

/// Settings of [`fit_hyperparameters`].
#[derive(Clone, Debug, PartialEq)]
pub struct FitOptions {
    /// Quasi-random starts in addition to the given (or default) start (default 0: one
    /// local search, see [`fit_hyperparameters`]).
    pub restarts: usize,
    /// Scramble seed of the quasi-random starts (default 0).
    pub restart_seed: u32,
    /// L-BFGS iteration budget per start (default 50).
    pub max_iterations: usize,
    /// Fitting box (default [`HyperBounds::default`]).
    pub bounds: HyperBounds,
    /// Hyperparameters not fitted (default none).
    pub fixed: Fixed,
    /// Priors on the hyperparameters: the fit maximises the log posterior, LML plus
    /// the free hyperparameters' log prior densities (default none: the exact LML).
    pub priors: Option<HyperpriorSet>,
    /// The guard against a fit that leaves a lengthscale at a bound (default off): search
    /// once more from the opposite explanation of the data (rough in space, smooth in
    /// time) and keep the better of the two ends.
    pub guard: bool,
    /// One spatial lengthscale per continuous coordinate (default off: one for all);
    /// each has l_S's bounds and prior ([`super::lengthscales`]).
    pub per_coordinate_lengthscales: bool,
    /// A drifting level λ_L · k_T(|t − t'|/l_L) added to the kernel, its two
    /// hyperparameters fitted with the others, without priors (default off; only with a
    /// temporal kernel; [`DriftingLevel`]).
    pub level: bool,
}

impl Default for FitOptions {
    fn default() -> Self {
        FitOptions {
            restarts: 0,
            restart_seed: 0,
            max_iterations: 50,
            bounds: HyperBounds::default(),
            fixed: Fixed::default(),
            priors: None,
            guard: false,
            per_coordinate_lengthscales: false,
            level: false,
        }
    }
}

/// Which coordinates of the log-parameter vector are present, in the order ln λ, ln l_S
/// (or ln l_d of each continuous coordinate d, [`PerCoordinate`]), ln l_T, ln λ_L and
/// ln l_L (with a drifting level), ln l_C, ln σ².
#[derive(Clone, Copy, Debug)]
struct Layout {
    temporal: bool,
    /// A drifting level (two coordinates).
    level: bool,
    categorical: bool,
    noise: bool,
    /// `Some` with one lengthscale per continuous coordinate, of which there are at least
    /// two (with one, it is the shared lengthscale, fitted as such).
    per_coordinate: Option<PerCoordinate>,
}

impl Layout {
    fn new(spec: KernelSpec, fixed: &Fixed, per_coordinate: Option<usize>, level: bool) -> Layout {
        Layout {
            temporal: spec.temporal.is_some() && fixed.temporal_lengthscale.is_none(),
            level: level && spec.temporal.is_some(),
            categorical: !spec.categories.is_empty(),
            noise: fixed.noise_variance.is_none(),
            per_coordinate: per_coordinate
                .map(|dim| PerCoordinate::new(spec, dim))
                .filter(|p| p.count() > 1),
        }
    }

    /// How many spatial lengthscales the log vector holds.
    fn spatial(self) -> usize {
        self.per_coordinate.map_or(1, PerCoordinate::count)
    }

    fn len(self) -> usize {
        1 + self.spatial()
            + usize::from(self.temporal)
            + 2 * usize::from(self.level)
            + usize::from(self.categorical)
            + usize::from(self.noise)
    }

    fn to_log(self, h: &Hyperparameters) -> Vec<f64> {
        let mut v = vec![h.signal_variance.ln()];
        match self.per_coordinate {
            Some(per) => v.extend(
                per.coordinates()
                    .map(|d| (h.spatial_lengthscale * h.lengthscale_ratios.get(d)).ln()),
            ),
            None => v.push(h.spatial_lengthscale.ln()),
        }
        if self.temporal {
            v.push(h.temporal_lengthscale.ln());
        }
        if self.level {
            let level = h
                .level
                .unwrap_or_else(|| level_start(h.temporal_lengthscale));
            v.push(level.variance.ln());
            v.push(level.lengthscale.ln());
        }
        if self.categorical {
            v.push(h.categorical_lengthscale.ln());
        }
        if self.noise {
            v.push(h.noise_variance.ln());
        }
        v
    }

    /// Overwrites the free fields of `base` from the log vector.
    fn hyper_from_log(self, theta: &[f64], base: &Hyperparameters) -> Hyperparameters {
        let mut h = *base;
        h.signal_variance = theta[0].exp();
        let spatial = self.spatial();
        let logs = &theta[1..1 + spatial];
        let ln_mean = logs.iter().sum::<f64>() / spatial as f64;
        h.spatial_lengthscale = ln_mean.exp();
        h.lengthscale_ratios = match self.per_coordinate {
            Some(per) => {
                // l_S the geometric mean, ρ_d = l_d / l_S; 1 at the categorical coordinates.
                let mut ratios = vec![1.0; per.dim];
                for (d, &ln_l) in per.coordinates().zip(logs) {
                    ratios[d] = (ln_l - ln_mean).exp();
                }
                LengthscaleRatios::new(&ratios).expect("at most MAX_DIMENSION coordinates")
            }
            None => LengthscaleRatios::default(),
        };
        let mut k = 1 + spatial;
        if self.temporal {
            h.temporal_lengthscale = theta[k].exp();
            k += 1;
        }
        if self.level {
            h.level = Some(DriftingLevel {
                variance: theta[k].exp(),
                lengthscale: theta[k + 1].exp(),
            });
            k += 2;
        }
        if self.categorical {
            h.categorical_lengthscale = theta[k].exp();
            k += 1;
        }
        if self.noise {
            h.noise_variance = theta[k].exp();
        }
        h
    }

    /// The priors of the free coordinates, in the log vector's order; the drifting
    /// level's have none (flat in log space within their bounds).
    fn priors(self, set: &HyperpriorSet) -> Vec<Option<LogNormal>> {
        let mut v = vec![Some(set.signal_variance)];
        v.extend(std::iter::repeat_n(
            Some(set.spatial_lengthscale),
            self.spatial(),
        ));
        if self.temporal {
            v.push(Some(set.temporal_lengthscale));
        }
        if self.level {
            v.extend([None, None]);
        }
        if self.categorical {
            v.push(Some(
                set.categorical_lengthscale
                    .unwrap_or(CATEGORICAL_LENGTHSCALE_PRIOR),
            ));
        }
        if self.noise {
            v.push(Some(set.noise_variance));
        }
        v
    }

    /// The bound (lower, upper) hit by each free coordinate of the log vector, in its
    /// order.
    fn bound_hits(self) -> Vec<(BoundHit, BoundHit)> {
        let mut v = vec![(BoundHit::SignalVarianceLower, BoundHit::SignalVarianceUpper)];
        v.extend(std::iter::repeat_n(
            (
                BoundHit::SpatialLengthscaleLower,
                BoundHit::SpatialLengthscaleUpper,
            ),
            self.spatial(),
        ));
        if self.temporal {
            v.push((
                BoundHit::TemporalLengthscaleLower,
                BoundHit::TemporalLengthscaleUpper,
            ));
        }
        if self.level {
            v.push((BoundHit::LevelVarianceLower, BoundHit::LevelVarianceUpper));
            v.push((
                BoundHit::LevelLengthscaleLower,
                BoundHit::LevelLengthscaleUpper,
            ));
        }
        if self.categorical {
            v.push((
                BoundHit::CategoricalLengthscaleLower,
                BoundHit::CategoricalLengthscaleUpper,
            ));
        }
        if self.noise {
            v.push((BoundHit::NoiseVarianceLower, BoundHit::NoiseVarianceUpper));
        }
        v
    }

    /// The bounds `theta` lies on, within `(lower, upper)`. A projected search that stops
    /// at a bound stops on it; 1e-6 in log units is a relative 1e-6 of the value. With
    /// a lengthscale per coordinate, the spatial lengthscale is at its upper bound when
    /// every one is (a model flat in space; one coordinate that does not matter is an
    /// answer, not a degenerate shape) and at its lower bound when any one is.
    fn bounds_hit(self, theta: &[f64], (lower, upper): (&[f64], &[f64])) -> Vec<BoundHit> {
        let spatial = 1..1 + self.spatial();
        let each: Vec<Option<BoundHit>> = self
            .bound_hits()
            .into_iter()
            .enumerate()
            .map(|(j, (low, high))| {
                if theta[j] <= lower[j] + 1e-6 {
                    Some(low)
                } else if theta[j] >= upper[j] - 1e-6 {
                    Some(high)
                } else {
                    None
                }
            })
            .collect();
        let lengthscales = &each[spatial.clone()];
        let spatial_hit = if lengthscales.contains(&Some(BoundHit::SpatialLengthscaleLower)) {
            Some(BoundHit::SpatialLengthscaleLower)
        } else if lengthscales
            .iter()
            .all(|hit| *hit == Some(BoundHit::SpatialLengthscaleUpper))
        {
            Some(BoundHit::SpatialLengthscaleUpper)
        } else {
            None
        };
        std::iter::once(each[0])
            .chain(std::iter::once(spatial_hit))
            .chain(each[spatial.end..].iter().copied())
            .flatten()
            .collect()
    }

    fn log_bounds(self, b: &HyperBounds) -> (Vec<f64>, Vec<f64>) {
        let mut pairs = vec![b.signal_variance];
        pairs.extend(std::iter::repeat_n(b.spatial_lengthscale, self.spatial()));
        if self.temporal {
            pairs.push(b.temporal_lengthscale);
        }
        if self.level {
            pairs.push(b.level_variance);
            pairs.push(b.level_lengthscale);
        }
        if self.categorical {
            pairs.push(b.categorical_lengthscale);
        }
        if self.noise {
            pairs.push(b.noise_variance);
        }
        pairs.iter().map(|&(lo, hi)| (lo.ln(), hi.ln())).unzip()
    }
}

/// Pairwise distances, which do not depend on the hyperparameters; strict lower
/// triangle packed column by column: the continuous coordinates' Euclidean distance, the
/// time difference, and (with categorical inputs) how many choices differ. With a
/// lengthscale per coordinate the spatial distance depends on them: the coordinates are
/// kept instead, and each evaluation computes it ([`scaled_distances`]).
struct Pairs {
    n: usize,
    /// Empty with a lengthscale per coordinate.
    spatial: Vec<f64>,
    temporal: Vec<f64>,
    /// Empty without categorical inputs.
    differing: Vec<f64>,
    /// With a lengthscale per coordinate, each such coordinate of every point, in the
    /// order of [`PerCoordinate::coordinates`]; empty otherwise.
    by_coordinate: Vec<Vec<f64>>,
}

impl Pairs {
    fn new(spec: KernelSpec, layout: Layout, xs: &[Vec<f64>], ts: &[f64]) -> Pairs {
        let n = xs.len();
        let m = n * n.saturating_sub(1) / 2;
        let categorical = !spec.categories.is_empty();
        let per_coordinate = layout.per_coordinate.is_some();
        let mut spatial = Vec::with_capacity(if per_coordinate { 0 } else { m });
        let mut temporal = Vec::with_capacity(m);
        let mut differing = Vec::with_capacity(if categorical { m } else { 0 });
        for j in 0..n {
            for i in j + 1..n {
                let (squared, differ) = spec.distances(&xs[i], &xs[j]);
                if !per_coordinate {
                    spatial.push(squared.sqrt());
                }
                temporal.push((ts[i] - ts[j]).abs());
                if categorical {
                    differing.push(differ);
                }
            }
        }
        let by_coordinate = layout.per_coordinate.map_or_else(Vec::new, |per| {
            per.coordinates()
                .map(|d| xs.iter().map(|x| x[d]).collect())
                .collect()
        });
        Pairs {
            n,
            spatial,
            temporal,
            differing,
            by_coordinate,
        }
    }
}

/// The memory of one likelihood evaluation at a dataset size, reused by every evaluation
/// of a fit: K, its factor and inverse (n × n each) and the lengthscale derivatives.
/// Allocating these megabytes at each of a fit's ~20 evaluations made the allocator map
/// and fault in fresh pages every time, which tripled a fit's time in a long-lived
/// process (docs/performance.md).
struct Workspace {
    /// K + σ²I: lower triangle and diagonal.
    k: DMatrix<f64>,
    factor: DMatrix<f64>,
    /// Lower triangle of K⁻¹.
    inverse: DMatrix<f64>,
    inverse_scratch: linalg::InverseScratch,
    /// α = K⁻¹y.
    alpha: Vec<f64>,
    /// ∂K/∂ln l_S, ∂K/∂ln l_T and ∂K/∂ln l_C of every pair, packed like [`Pairs`].
    d_ls: Vec<f64>,
    d_lt: Vec<f64>,
    d_lc: Vec<f64>,
    /// With a drifting level, its covariance λ_L k_T(r) of every pair and ∂/∂ln l_L of
    /// it, packed like [`Pairs`]; empty otherwise.
    level: Vec<f64>,
    d_ll: Vec<f64>,
    /// With a lengthscale per coordinate, the scaled distance r of every pair, packed
    /// like [`Pairs`] ([`scaled_distances`]); empty otherwise.
    scaled: Vec<f64>,
    column: ColumnScratch,
}

impl Workspace {
    fn new(pairs: &Pairs, layout: Layout) -> Workspace {
        let n = pairs.n;
        let m = pairs.temporal.len();
        Workspace {
            k: DMatrix::zeros(n, n),
            factor: DMatrix::zeros(n, n),
            inverse: DMatrix::zeros(n, n),
            inverse_scratch: linalg::InverseScratch::new(n),
            alpha: vec![0.0; n],
            d_ls: vec![0.0; m],
            d_lt: vec![0.0; if layout.temporal { m } else { 0 }],
            d_lc: vec![0.0; if layout.categorical { m } else { 0 }],
            level: vec![0.0; if layout.level { m } else { 0 }],
            d_ll: vec![0.0; if layout.level { m } else { 0 }],
            scaled: vec![
                0.0;
                if layout.per_coordinate.is_some() {
                    m
                } else {
                    0
                }
            ],
            column: ColumnScratch::new(n),
        }
    }
}

widest_vectors! {
    /// Fills K (lower triangle and diagonal) and the lengthscale derivatives for `h`;
    /// ∂K/∂ln λ is K itself off the diagonal, and ∂K/∂ln l_S is the derivative along a
    /// common scale of the spatial distances `spatial` (times `inv_ls`). Column by column,
    /// in stages over the column's pairs (loops that vectorise, for the widest vectors
    /// the CPU has): the factors of each kernel, then one exponential of their exponents
    /// together, then the products.
    fn fill_kernel(
        ws: &mut Workspace,
        spec: KernelSpec,
        h: &Hyperparameters,
        layout: Layout,
        pairs: &Pairs,
        spatial: (&[f64], f64),
    ) = fill_kernel_loops;
}

#[inline(always)]
fn fill_kernel_loops(
    ws: &mut Workspace,
    spec: KernelSpec,
    h: &Hyperparameters,
    layout: Layout,
    pairs: &Pairs,
    (spatial, inv_ls): (&[f64], f64),
) {
    let n = pairs.n;
    let lambda = h.signal_variance;
    let inv_lt = 1.0 / h.temporal_lengthscale;
    let inv_lc = 1.0 / h.categorical_lengthscale;
    let level = h.level.filter(|_| layout.level);
    let data = ws.k.as_mut_slice();
    let c = &mut ws.column;
    let mut p = 0;
    for j in 0..n {
        let column = &mut data[j * n..(j + 1) * n];
        column[j] = h.prior_variance() + h.noise_variance;
        let below = &mut column[j + 1..];
        let count = below.len();
        let (ps, ms_rs, qs) = (
            &mut c.ps[..count],
            &mut c.ms_rs[..count],
            &mut c.qs[..count],
        );
        let (pt, mt_rt, qt) = (
            &mut c.pt[..count],
            &mut c.mt_rt[..count],
            &mut c.qt[..count],
        );
        // k = λ p_S p_T e^{−(q_S+q_T)}; ∂k/∂ln l = k'(r)·(−r) for each factor.
        spec.spatial
            .factors_into(&spatial[p..p + count], inv_ls, ps, ms_rs, qs);
        match spec.temporal {
            Some(kind) => {
                kind.factors_into(&pairs.temporal[p..p + count], inv_lt, pt, mt_rt, qt);
                for q in 0..count {
                    qs[q] = -(qs[q] + qt[q]);
                }
            }
            None => {
                pt.fill(1.0);
                for v in qs.iter_mut() {
                    *v = -*v;
                }
            }
        }
        // The overlap kernel's factor e^{−h/l_C} joins the exponent.
        if !pairs.differing.is_empty() {
            for (q, differ) in qs.iter_mut().zip(&pairs.differing[p..p + count]) {
                *q -= differ * inv_lc;
            }
        }
        let e = qs;
        exp_in_place(e);
        let ls_out = &mut ws.d_ls[p..p + count];
        for q in 0..count {
            let e = lambda * e[q];
            below[q] = ps[q] * pt[q] * e;
            ls_out[q] = -ms_rs[q] * pt[q] * e;
        }
        if layout.temporal {
            let lt_out = &mut ws.d_lt[p..p + count];
            for q in 0..count {
                lt_out[q] = -ps[q] * mt_rt[q] * (lambda * e[q]);
            }
        }
        // ∂k/∂ln l_C = k · h / l_C.
        if layout.categorical {
            let lc_out = &mut ws.d_lc[p..p + count];
            let differing = &pairs.differing[p..p + count];
            for q in 0..count {
                lc_out[q] = below[q] * differing[q] * inv_lc;
            }
        }
        // The drifting level λ_L k_T(|Δt|/l_L), constant in space; ∂/∂ln l_L = λ_L k'(r)·(−r).
        if let (Some(level), Some(kind)) = (level, spec.temporal) {
            let inv_ll = 1.0 / level.lengthscale;
            let values = &mut ws.level[p..p + count];
            let d_ll = &mut ws.d_ll[p..p + count];
            for (q, dt) in pairs.temporal[p..p + count].iter().enumerate() {
                let r = dt * inv_ll;
                let (k, slope) = kind.correlation_and_derivative(r);
                values[q] = level.variance * k;
                d_ll[q] = -level.variance * slope * r;
                below[q] += values[q];
            }
        }
        p += count;
    }
}

/// One column's intermediate values in [`fill_kernel`] (n each): the factors
/// p, m·r and q of the spatial and the temporal kernel; `qs` then holds the exponent and
/// its exponential.
struct ColumnScratch {
    ps: Vec<f64>,
    ms_rs: Vec<f64>,
    qs: Vec<f64>,
    pt: Vec<f64>,
    mt_rt: Vec<f64>,
    qt: Vec<f64>,
}

impl ColumnScratch {
    fn new(n: usize) -> Self {
        ColumnScratch {
            ps: vec![0.0; n],
            ms_rs: vec![0.0; n],
            qs: vec![0.0; n],
            pt: vec![0.0; n],
            mt_rt: vec![0.0; n],
            qt: vec![0.0; n],
        }
    }
}

/// Σ_q w_q·d_q for each array d of `derivatives`, with w_q = α_q·α_j − (K⁻¹)_q: one
/// column's share of the gradient's sums. Four partial sums per array let the compiler
/// vectorise the loop (a single running sum is a chain of dependent additions).
fn weighted_sums<const N: usize>(
    alpha_j: f64,
    alpha: &[f64],
    inverse: &[f64],
    derivatives: [&[f64]; N],
) -> [f64; N] {
    const LANES: usize = 4;
    let count = alpha.len();
    let whole = count - count % LANES;
    let mut partial = [[0.0; LANES]; N];
    for start in (0..whole).step_by(LANES) {
        let w: [f64; LANES] =
            std::array::from_fn(|l| alpha[start + l] * alpha_j - inverse[start + l]);
        for (sums, d) in partial.iter_mut().zip(&derivatives) {
            let d = &d[start..start + LANES];
            for l in 0..LANES {
                sums[l] += w[l] * d[l];
            }
        }
    }
    let mut total: [f64; N] =
        std::array::from_fn(|m| (partial[m][0] + partial[m][2]) + (partial[m][1] + partial[m][3]));
    for q in whole..count {
        let w = alpha[q] * alpha_j - inverse[q];
        for (t, d) in total.iter_mut().zip(&derivatives) {
            *t += w * d[q];
        }
    }
    total
}

/// LML at `h`, leaving in `ws` (made for `pairs` and `layout`) what its gradient
/// ([`lml_gradient`]) needs: K and its derivatives, K's factor and α = K⁻¹y.
fn lml_value(
    spec: KernelSpec,
    h: &Hyperparameters,
    layout: Layout,
    pairs: &Pairs,
    ys: &[f64],
    ws: &mut Workspace,
) -> Result<f64, GpError> {
    let n = pairs.n;
    match layout.per_coordinate {
        Some(per) => {
            let inverse: Vec<f64> = coordinate_lengthscales(per, h)
                .iter()
                .map(|l| 1.0 / l)
                .collect();
            let mut scaled = std::mem::take(&mut ws.scaled);
            scaled_distances(pairs, &inverse, &mut scaled);
            fill_kernel(ws, spec, h, layout, pairs, (&scaled, 1.0));
            ws.scaled = scaled;
        }
        None => {
            let inv_ls = 1.0 / h.spatial_lengthscale;
            fill_kernel(ws, spec, h, layout, pairs, (&pairs.spatial, inv_ls));
        }
    }
    factorise_with_jitter_into(&ws.k, &mut ws.factor, h.signal_variance)?;
    let l = &ws.factor;
    let alpha = &mut ws.alpha;
    alpha.copy_from_slice(ys);
    linalg::forward_solve(l, alpha);
    let data_fit = linalg::dot(alpha, alpha);
    linalg::backward_solve_transposed(l, alpha);
    let log_det: f64 = (0..n).map(|i| l[(i, i)].ln()).sum();
    Ok(-0.5 * data_fit - log_det - 0.5 * n as f64 * (2.0 * std::f64::consts::PI).ln())
}

/// The gradient of the LML at the `h` of the last [`lml_value`] on `ws`, in the layout's
/// log coordinates: the inverse K⁻¹ (2n³/3 flops, twice the factor's) and the O(n²)
/// sums of the trace terms.
fn lml_gradient(
    h: &Hyperparameters,
    layout: Layout,
    pairs: &Pairs,
    ws: &mut Workspace,
) -> Vec<f64> {
    let n = pairs.n;
    let lambda = h.signal_variance;
    linalg::inverse_lower_into(&ws.factor, &mut ws.inverse, &mut ws.inverse_scratch);
    let alpha = &ws.alpha;
    let kinv = ws.inverse.as_slice();
    let kd = ws.k.as_slice();
    let (d_ls, d_lt, d_lc) = (&ws.d_ls, &ws.d_lt, &ws.d_lc);
    // ∂LML/∂θ = ½ Σ_ij W_ij ∂K_ij/∂θ with W = ααᵀ − K⁻¹; off-diagonal pairs count twice.
    let mut g_lambda = 0.0;
    let mut g_ls = 0.0;
    let mut g_lt = 0.0;
    let mut g_lc = 0.0;
    let mut trace_w = 0.0;
    let mut p = 0;
    for j in 0..n {
        let col = &kinv[j * n..(j + 1) * n];
        let aj = alpha[j];
        trace_w += aj * aj - col[j];
        let count = n - j - 1;
        let (w, a) = (&col[j + 1..], &alpha[j + 1..]);
        let k = &kd[j * n + j + 1..(j + 1) * n];
        let ls = &d_ls[p..p + count];
        match (layout.temporal, layout.categorical) {
            (true, false) => {
                let [sk, sls, slt] = weighted_sums(aj, a, w, [k, ls, &d_lt[p..p + count]]);
                g_lambda += sk;
                g_ls += sls;
                g_lt += slt;
            }
            (false, false) => {
                let [sk, sls] = weighted_sums(aj, a, w, [k, ls]);
                g_lambda += sk;
                g_ls += sls;
            }
            (true, true) => {
                let (lt, lc) = (&d_lt[p..p + count], &d_lc[p..p + count]);
                let [sk, sls, slt, slc] = weighted_sums(aj, a, w, [k, ls, lt, lc]);
                g_lambda += sk;
                g_ls += sls;
                g_lt += slt;
                g_lc += slc;
            }
            (false, true) => {
                let [sk, sls, slc] = weighted_sums(aj, a, w, [k, ls, &d_lc[p..p + count]]);
                g_lambda += sk;
                g_ls += sls;
                g_lc += slc;
            }
        }
        p += count;
    }
    // With a drifting level, K's off-diagonal entries hold it beside λ's product: its sums
    // come off ∂K/∂ln λ and make ∂K/∂ln λ_L.
    let (mut g_level, mut g_ll) = (0.0, 0.0);
    if layout.level {
        let mut p = 0;
        for j in 0..n {
            let col = &kinv[j * n..(j + 1) * n];
            let count = n - j - 1;
            let (w, a) = (&col[j + 1..], &alpha[j + 1..]);
            let (level, d_ll) = (&ws.level[p..p + count], &ws.d_ll[p..p + count]);
            let [sl, sll] = weighted_sums(alpha[j], a, w, [level, d_ll]);
            g_level += sl;
            g_ll += sll;
            p += count;
        }
    }
    let mut grad = vec![g_lambda - g_level + 0.5 * lambda * trace_w];
    match layout.per_coordinate {
        Some(per) => grad.extend(per_coordinate_gradient(per, h, pairs, ws)),
        None => grad.push(g_ls),
    }
    if layout.temporal {
        grad.push(g_lt);
    }
    if layout.level {
        let variance = h.level.map_or(0.0, |l| l.variance);
        grad.push(g_level + 0.5 * variance * trace_w);
        grad.push(g_ll);
    }
    if layout.categorical {
        grad.push(g_lc);
    }
    if layout.noise {
        grad.push(0.5 * h.noise_variance * trace_w);
    }
    debug_assert_eq!(grad.len(), layout.len());
    grad
}

/// −LML − Σ ln p(θ_i) over the layout's log hyperparameters (the free ones; the rest
/// from `base`; no prior terms without priors), the function a fit minimises: its value
/// is the factor of K, its gradient the inverse and the trace terms, asked for only where
/// the line search accepts a step.
struct NegativeLogPosterior<'a> {
    spec: KernelSpec,
    layout: Layout,
    pairs: &'a Pairs,
    ys: &'a [f64],
    base: Hyperparameters,
    /// The free coordinates' priors, in the log vector's order (empty: none; `None`: flat).
    priors: Vec<Option<LogNormal>>,
    workspace: Workspace,
    /// The log vector and hyperparameters of the last finite value, whose factor
    /// `workspace` holds.
    valued: Option<(Vec<f64>, Hyperparameters)>,
}

impl NegativeLogPosterior<'_> {
    fn log_prior(&self, theta: &[f64]) -> f64 {
        self.priors
            .iter()
            .zip(theta)
            .filter_map(|(p, &u)| p.map(|p| p.log_density(u)))
            .sum()
    }
}

impl Objective for NegativeLogPosterior<'_> {
    fn value(&mut self, theta: &[f64]) -> f64 {
        let h = self.layout.hyper_from_log(theta, &self.base);
        let lml = lml_value(
            self.spec,
            &h,
            self.layout,
            self.pairs,
            self.ys,
            &mut self.workspace,
        );
        self.valued = lml.is_ok().then(|| (theta.to_vec(), h));
        lml.map_or(f64::INFINITY, |v| -v - self.log_prior(theta))
    }

    fn gradient(&mut self) -> Vec<f64> {
        let Some((theta, h)) = self.valued.take() else {
            return Vec::new();
        };
        let gradient = lml_gradient(&h, self.layout, self.pairs, &mut self.workspace);
        let slopes = self
            .priors
            .iter()
            .zip(&theta)
            .map(|(p, &u)| p.map_or(0.0, |p| p.log_density_slope(u)))
            .chain(std::iter::repeat(0.0));
        let gradient = gradient.iter().zip(slopes).map(|(d, s)| -d - s).collect();
        self.valued = Some((theta, h));
        gradient
    }
}

/// Log marginal likelihood of standardised y, log p(y) = −½ yᵀα − ½ ln|K+σ²I| − n/2 ln 2π,
/// and its gradient with respect to the log of each free hyperparameter, in the order
/// ln λ, ln l_S (with `hyper`'s lengthscale ratios and two or more continuous
/// coordinates: ln l_d of each continuous coordinate d in its place), ln l_T (only if
/// `spec.temporal` is Some and l_T is not fixed), ln l_C (with categorical coordinates),
/// ln σ² (unless fixed). Values in `fixed` replace the corresponding fields of `hyper`.
/// Costs one Cholesky factorisation and one inverse, O(n³).
pub fn log_marginal_likelihood(
    spec: KernelSpec,
    hyper: &Hyperparameters,
    fixed: &Fixed,
    xs: &[Vec<f64>],
    ts: &[f64],
    ys: &[f64],
) -> Result<(f64, Vec<f64>), GpError> {
    let dim = xs.first().map_or(0, Vec::len);
    validate_data(dim, xs, ts, ys)?;
    let h = apply_fixed(spec, hyper, fixed);
    validate_hyperparameters(spec, &h)?;
    let per_coordinate = (!h.lengthscale_ratios.is_isotropic()).then_some(dim);
    let layout = Layout::new(spec, fixed, per_coordinate, h.level.is_some());
    let pairs = Pairs::new(spec, layout, xs, ts);
    let mut ws = Workspace::new(&pairs, layout);
    let lml = lml_value(spec, &h, layout, &pairs, ys, &mut ws)?;
    Ok((lml, lml_gradient(&h, layout, &pairs, &mut ws)))
}

fn apply_fixed(spec: KernelSpec, h: &Hyperparameters, fixed: &Fixed) -> Hyperparameters {
    let mut h = *h;
    if let (Some(_), Some(lt)) = (spec.temporal, fixed.temporal_lengthscale) {
        h.temporal_lengthscale = lt;
    }
    if let Some(noise) = fixed.noise_variance {
        h.noise_variance = noise;
    }
    h
}

fn clamp_into(h: &Hyperparameters, b: &HyperBounds) -> Hyperparameters {
    let c = |v: f64, (lo, hi): (f64, f64)| if v.is_finite() { v.clamp(lo, hi) } else { lo };
    Hyperparameters {
        signal_variance: c(h.signal_variance, b.signal_variance),
        spatial_lengthscale: c(h.spatial_lengthscale, b.spatial_lengthscale),
        temporal_lengthscale: c(h.temporal_lengthscale, b.temporal_lengthscale),
        noise_variance: c(h.noise_variance, b.noise_variance),
        categorical_lengthscale: c(h.categorical_lengthscale, b.categorical_lengthscale),
        lengthscale_ratios: h.lengthscale_ratios,
        level: h.level.map(|level| DriftingLevel {
            variance: c(level.variance, b.level_variance),
            lengthscale: c(level.lengthscale, b.level_lengthscale),
        }),
    }
}

/// Where a drifting level's search starts when the start names none: λ_L = 0.25, a
/// quarter of λ's default, and l_L = a fifth of the data's time span (at least 1 s), so
/// that the level can follow changes that the spatio-temporal part, starting at l_T =
/// the span, would have to forget its shape for.
fn level_start(span: f64) -> DriftingLevel {
    DriftingLevel {
        variance: 0.25,
        lengthscale: (span / 5.0).max(1.0),
    }
}

/// The default start: λ = 1, l_S = 0.3, l_T = max(time span of the data, 1 s),
/// σ² = 0.01 (then clamped into the bounds).
fn default_start(ts: &[f64], bounds: &HyperBounds) -> Hyperparameters {
    let (lo, hi) = ts
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &t| {
            (a.min(t), b.max(t))
        });
    let span = if hi > lo { hi - lo } else { 0.0 };
    clamp_into(
        &Hyperparameters {
            signal_variance: 1.0,
            spatial_lengthscale: 0.3,
            temporal_lengthscale: span.max(1.0),
            noise_variance: 0.01,
            categorical_lengthscale: 1.0,
            lengthscale_ratios: LengthscaleRatios::default(),
            level: None,
        },
        bounds,
    )
}

/// Where a fit's local search starts.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum SearchStart<'a> {
    /// The default start λ = 1, l_S = 0.3, l_T = max(time span, 1 s), σ² = 0.01 (clamped
    /// into the bounds): the protocol of the papers, a pure function of the data.
    Default,
    /// The given point, clamped into the bounds.
    At(&'a Hyperparameters),
    /// A warm start from an earlier fit, with a guard: the search from it is kept when it
    /// ends at least as likely as the default start; otherwise the fit searches from the
    /// default start instead (whose result is at least that likely, since the search only
    /// accepts ascending steps), so a stale or poor warm start costs one search more.
    Previous(&'a Hyperparameters),
}

/// The `options.restarts` scrambled-Sobol starts of [`fit_with_report`] in log space,
/// within `(lower, upper)`: λ ∈ [0.2, 5], l_S ∈ [0.05, 2], l_T ∈ [span/10, 10·span],
/// σ² ∈ [1e-3, 0.3] (the free coordinates of `layout`).
fn quasi_random_starts(
    layout: Layout,
    span: f64,
    (lower, upper): (&[f64], &[f64]),
    options: &FitOptions,
) -> Vec<Vec<f64>> {
    let mut region = vec![(0.2f64, 5.0f64)];
    region.extend(std::iter::repeat_n((0.05, 2.0), layout.spatial()));
    if layout.temporal {
        region.push((span / 10.0, span * 10.0));
    }
    if layout.level {
        region.push((0.01, 1.0));
        region.push((span / 50.0, span * 2.0));
    }
    if layout.categorical {
        region.push((0.2, 5.0));
    }
    if layout.noise {
        region.push((1e-3, 0.3));
    }
    (0..options.restarts)
        .map(|s| {
            region
                .iter()
                .enumerate()
                .map(|(j, &(lo, hi))| {
                    let lo = lo.ln().clamp(lower[j], upper[j]);
                    let hi = hi.ln().clamp(lower[j], upper[j]);
                    let u = f64::from(sobol_burley::sample(
                        s as u32,
                        j as u32,
                        options.restart_seed,
                    ));
                    lo + (hi - lo) * u
                })
                .collect()
        })
        .collect()
}

/// Where the guard's second search starts: the opposite explanation of the data to the
/// one a fit at a bound usually found (l_S at its top, a model flat in space in which
/// short-lived changes in time explain every value): rough in space (l_S = 0.1), smooth
/// in time (l_T = 10 × the data's time span), λ = 1, σ² = 0.01, clamped into the bounds.
fn second_start(default: &Hyperparameters, bounds: &HyperBounds) -> Hyperparameters {
    clamp_into(
        &Hyperparameters {
            signal_variance: 1.0,
            spatial_lengthscale: 0.1,
            temporal_lengthscale: 10.0 * default.temporal_lengthscale,
            noise_variance: 0.01,
            categorical_lengthscale: default.categorical_lengthscale,
            lengthscale_ratios: LengthscaleRatios::default(),
            level: default.level,
        },
        bounds,
    )
}

/// Maximises the exact log marginal likelihood, or under `options.priors` the log
/// posterior, in log space within `options.bounds` using analytic gradients and
/// [`minimize_objective_bounded`] (which asks for the gradient only at accepted steps),
/// starting from `start` ([`SearchStart`]) plus `options.restarts` scrambled-Sobol starts
/// (scramble seed `options.restart_seed`). The quasi-random starts cover, in log space,
/// λ ∈ [0.2, 5], l_S ∈ [0.05, 2], l_T ∈ [span/10, 10·span], σ² ∈ [1e-3, 0.3] (each
/// intersected with the bounds). Returns the best hyperparameters found; ties keep the
/// earlier start. A pure function of its inputs.
///
/// From [`SearchStart::Default`] and without restarts this is one local search from the
/// default start, as BoTorch's `fit_gpytorch_mll` does on a freshly built model (002 §5.1
/// fits every algorithm with it): it finds the likelihood maximum nearest a moderate
/// start, whereas a global search often finds the degenerate "all noise" or "every point
/// its own bump" corners when the data are few (docs/architecture.md, "Hyperparameter
/// fit").
///
/// Fixed values in `options.fixed` are applied to the result. With fewer than 2 points
/// the start (or the default start) is returned unchanged apart from them.
/// Fails only on invalid data or when no start gives a positive-definite kernel matrix.
pub fn fit_hyperparameters(
    spec: KernelSpec,
    xs: &[Vec<f64>],
    ts: &[f64],
    ys: &[f64],
    start: SearchStart<'_>,
    options: &FitOptions,
) -> Result<Hyperparameters, GpError> {
    fit_with_report(spec, xs, ts, ys, start, options).map(|(h, _)| h)
}

/// [`fit_hyperparameters`], and what the fit did beyond its search ([`FitReport`]): the
/// hyperparameters it left at a bound of their box and, with `options.guard`, whether a
/// first search that left a lengthscale at a bound (the noise at its floor or the signal
/// at its top are ordinary answers and left alone) was followed by a second one from the
/// opposite explanation of the data, rough in space and smooth in time (the better of
/// the two ends is kept, judged by the same objective). `explored` is left false (a
/// policy's decision).
pub fn fit_with_report(
    spec: KernelSpec,
    xs: &[Vec<f64>],
    ts: &[f64],
    ys: &[f64],
    start: SearchStart<'_>,
    options: &FitOptions,
) -> Result<(Hyperparameters, FitReport), GpError> {
    let dim = xs.first().map_or(0, Vec::len);
    validate_data(dim, xs, ts, ys)?;
    let bounds = &options.bounds;
    let fixed = &options.fixed;
    let mut report = FitReport::default();
    let per_coordinate = options.per_coordinate_lengthscales.then_some(dim);
    let layout = Layout::new(spec, fixed, per_coordinate, options.level);
    // A start names a drifting level exactly when the fit has one.
    let with_level = |mut h: Hyperparameters, span: f64| {
        h.level = match layout.level {
            true => Some(h.level.unwrap_or_else(|| level_start(span))),
            false => None,
        };
        clamp_into(&h, bounds)
    };
    let mut default = apply_fixed(spec, &default_start(ts, bounds), fixed);
    default = with_level(default, default.temporal_lengthscale);
    let span = default.temporal_lengthscale;
    let (base, guarded) = match start {
        SearchStart::Default => (default, false),
        SearchStart::At(h) => (apply_fixed(spec, &with_level(*h, span), fixed), false),
        SearchStart::Previous(h) => (apply_fixed(spec, &with_level(*h, span), fixed), true),
    };
    if xs.len() < 2 {
        return Ok((base, report));
    }
    validate_hyperparameters(spec, &base)?;
    let (lower, upper) = layout.log_bounds(bounds);
    let pairs = Pairs::new(spec, layout, xs, ts);

    let mut starts = vec![layout.to_log(&base)];
    starts.extend(quasi_random_starts(
        layout,
        default.temporal_lengthscale,
        (&lower, &upper),
        options,
    ));

    let optimizer = BoundedOptions {
        max_iterations: options.max_iterations,
        gradient_tolerance: 1e-5,
        relative_tolerance: 1e-9,
        ..BoundedOptions::default()
    };
    let mut best: Option<(f64, Vec<f64>)> = None;
    let mut objective = NegativeLogPosterior {
        spec,
        layout,
        pairs: &pairs,
        ys,
        base,
        priors: options
            .priors
            .as_ref()
            .map(|set| layout.priors(set))
            .unwrap_or_default(),
        workspace: Workspace::new(&pairs, layout),
        valued: None,
    };
    let search = |objective: &mut NegativeLogPosterior<'_>,
                  start: &[f64],
                  best: &mut Option<(f64, Vec<f64>)>| {
        let m = minimize_objective_bounded(objective, start, &lower, &upper, &optimizer);
        if m.value.is_finite() && best.as_ref().is_none_or(|(v, _)| m.value < *v) {
            *best = Some((m.value, m.x));
        }
    };
    for start in &starts {
        search(&mut objective, start, &mut best);
    }
    if guarded {
        // The guard of a warm start: refit from the default start unless the warm search
        // ended at least as likely as the default start itself.
        let default_theta = layout.to_log(&default);
        let at_default = objective.value(&default_theta);
        if best.as_ref().is_none_or(|(v, _)| *v > at_default) {
            best = None;
            search(&mut objective, &default_theta, &mut best);
        }
    }
    let at_bound = |theta: &[f64]| layout.bounds_hit(theta, (&lower, &upper));
    let lengthscale_at_bound =
        |theta: &[f64]| at_bound(theta).into_iter().any(BoundHit::is_lengthscale);
    if options.guard
        && best
            .as_ref()
            .is_some_and(|(_, theta)| lengthscale_at_bound(theta))
    {
        report.second_start = true;
        let theta = layout.to_log(&apply_fixed(spec, &second_start(&default, bounds), fixed));
        search(&mut objective, &theta, &mut best);
    }
    let (_, theta) = best.ok_or(GpError::NotPositiveDefinite)?;
    report.at_bound = at_bound(&theta);
    Ok((layout.hyper_from_log(&theta, &base), report))
}

#[cfg(test)]
#[path = "fit_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "level_tests.rs"]
mod level_tests;
