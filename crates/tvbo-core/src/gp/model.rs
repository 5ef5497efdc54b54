//! Exact zero-mean Gaussian process over (x, t) whose Cholesky factor is maintained
//! incrementally as observations are appended and removed.

use std::borrow::Cow;

use nalgebra::{DMatrix, DVector};
use serde::{Deserialize, Serialize};

use super::coordinates::Coordinates;
use super::exp::exp_in_place;
use super::kernel::{KernelKind, KernelSpec};
use super::lengthscales::LengthscaleRatios;
use super::linalg;
use super::vectorise::widest_vectors;

/// Relative jitter added to the diagonal on the first retry of a failed factorisation
/// (times λ); each further retry multiplies it by [`JITTER_GROWTH`].
pub const JITTER_START: f64 = 1e-8;
/// Growth factor of the jitter between retries.
pub const JITTER_GROWTH: f64 = 10.0;
/// Number of jittered retries after the plain factorisation fails.
pub const JITTER_TRIES: usize = 3;

/// Kernel hyperparameters. Outputs are assumed standardised and inputs to live in `[0,1]^d`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Hyperparameters {
    /// λ, the prior variance of the latent function.
    pub signal_variance: f64,
    /// l_S, the spatial lengthscale: of every coordinate, or with `lengthscale_ratios`
    /// their geometric mean.
    pub spatial_lengthscale: f64,
    /// l_T in seconds; ignored when the spec has no temporal kernel.
    pub temporal_lengthscale: f64,
    /// σ², the observation-noise variance (on standardised y).
    pub noise_variance: f64,
    /// l_C, the lengthscale of the overlap kernel exp(−h/l_C) over the categorical
    /// inputs ([`super::categories`]); ignored without them (1 in rows stored before).
    #[serde(default = "unit_lengthscale")]
    pub categorical_lengthscale: f64,
    /// ρ_d = l_d / l_S of every coordinate under per-parameter lengthscales
    /// ([`super::lengthscales`]); empty: isotropic (and in rows stored before).
    #[serde(default, skip_serializing_if = "LengthscaleRatios::is_isotropic")]
    pub lengthscale_ratios: LengthscaleRatios,
    /// The drifting level, a component over time alone added to the kernel
    /// ([`DriftingLevel`]); `None`: the papers' kernel (and in rows stored before).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub level: Option<DriftingLevel>,
}

/// A level that drifts on its own time scale: the kernel gains the term
/// λ_L · k_T(|t − t'| / l_L), constant in space, so that the objective is
/// f(x, t) = g(x, t) + ℓ(t) with g the spatio-temporal GP and ℓ a GP over time alone
/// (docs/decisions/0013-a-drifting-level.md). A change of level is then explained by ℓ,
/// and the shape g learned at one level survives it.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct DriftingLevel {
    /// λ_L, the prior variance of the level (on standardised y).
    pub variance: f64,
    /// l_L in seconds, the level's temporal lengthscale (the temporal kernel's kind).
    pub lengthscale: f64,
}

impl DriftingLevel {
    /// λ_L · k(|Δt| / l_L), the level's covariance of two times `dt` apart under the
    /// temporal kernel `kind`.
    pub fn covariance(&self, kind: KernelKind, dt: f64) -> f64 {
        self.variance * kind.correlation(dt.abs() / self.lengthscale)
    }
}

fn unit_lengthscale() -> f64 {
    1.0
}

impl Default for Hyperparameters {
    /// λ = 1, l_S = 0.3, l_T = 600 s, σ² = 0.01, l_C = 1.
    fn default() -> Self {
        Hyperparameters {
            signal_variance: 1.0,
            spatial_lengthscale: 0.3,
            temporal_lengthscale: 600.0,
            noise_variance: 0.01,
            categorical_lengthscale: 1.0,
            lengthscale_ratios: LengthscaleRatios::default(),
            level: None,
        }
    }
}

impl Hyperparameters {
    /// The prior variance of the latent function at a point: λ, plus λ_L with a level.
    pub fn prior_variance(&self) -> f64 {
        self.signal_variance + self.level.map_or(0.0, |l| l.variance)
    }
}

/// Errors of the GP model and its fitting.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum GpError {
    /// K + σ²I could not be factorised even with the maximum jitter.
    #[error("kernel matrix is not positive definite even with jitter")]
    NotPositiveDefinite,
    /// An input point has the wrong number of coordinates.
    #[error("input has dimension {found}, expected {expected}")]
    DimensionMismatch {
        /// The model's input dimension.
        expected: usize,
        /// The offending input's length.
        found: usize,
    },
    /// `xs`, `ts` and `ys` have different lengths.
    #[error("inconsistent data lengths: {xs} inputs, {ts} times, {ys} outputs")]
    LengthMismatch {
        /// Number of inputs.
        xs: usize,
        /// Number of times.
        ts: usize,
        /// Number of outputs.
        ys: usize,
    },
    /// An observation index past the end of the dataset.
    #[error("index {index} out of range for {len} observations")]
    IndexOutOfRange {
        /// The requested index.
        index: usize,
        /// The dataset size.
        len: usize,
    },
    /// An input, time or output is NaN or infinite.
    #[error("non-finite input, time or output")]
    NonFinite,
    /// A hyperparameter is non-finite or out of its domain (λ, l_S, l_T > 0; σ² ≥ 0).
    #[error("invalid hyperparameter {name} = {value}")]
    InvalidHyperparameter {
        /// Field name.
        name: &'static str,
        /// Offending value.
        value: f64,
    },
}

/// Posterior mean and latent variance with their gradients with respect to x.
#[derive(Clone, Debug, PartialEq)]
pub struct Prediction {
    /// Posterior mean μ(x, t).
    pub mean: f64,
    /// Latent posterior variance (without noise), clamped at 0.
    pub variance: f64,
    /// ∂μ/∂x.
    pub mean_gradient: Vec<f64>,
    /// ∂variance/∂x (zero where the variance is clamped).
    pub variance_gradient: Vec<f64>,
}

/// Exact zero-mean GP over (x, t) with a Cholesky factor of K + σ² I that grows and shrinks in O(n²).
#[derive(Clone, Debug)]
pub struct Gp {
    spec: KernelSpec,
    hyper: Hyperparameters,
    dim: usize,
    xs: Vec<Vec<f64>>,
    /// `xs` by coordinate, for the kernel columns, in the scaled coordinates of
    /// [`Gp::scaled`].
    coordinates: Coordinates,
    ts: Vec<f64>,
    ys: Vec<f64>,
    chol: DMatrix<f64>,
    alpha: DVector<f64>,
    jitter: f64,
}

/// Scratch of [`kernel_column`] for columns of up to n observations.
struct ColumnScratch {
    polynomial: Vec<f64>,
    /// Categorical coordinates that differ (empty without categories).
    differ: Vec<f64>,
}

impl ColumnScratch {
    fn new(n: usize, spec: &KernelSpec) -> ColumnScratch {
        let differ = if spec.categories.is_empty() { 0 } else { n };
        ColumnScratch {
            polynomial: vec![0.0; n],
            differ: vec![0.0; differ],
        }
    }
}

pub(crate) fn validate_hyperparameters(
    spec: KernelSpec,
    h: &Hyperparameters,
) -> Result<(), GpError> {
    let positive = |name: &'static str, value: f64| {
        if value.is_finite() && value > 0.0 {
            Ok(())
        } else {
            Err(GpError::InvalidHyperparameter { name, value })
        }
    };
    positive("signal_variance", h.signal_variance)?;
    positive("spatial_lengthscale", h.spatial_lengthscale)?;
    if spec.temporal.is_some() {
        positive("temporal_lengthscale", h.temporal_lengthscale)?;
    }
    if !spec.categories.is_empty() {
        positive("categorical_lengthscale", h.categorical_lengthscale)?;
    }
    if let Some(level) = h.level {
        if !(level.variance.is_finite() && level.variance >= 0.0) {
            return Err(GpError::InvalidHyperparameter {
                name: "level_variance",
                value: level.variance,
            });
        }
        positive("level_lengthscale", level.lengthscale)?;
        if spec.temporal.is_none() {
            return Err(GpError::InvalidHyperparameter {
                name: "level_variance",
                value: level.variance,
            });
        }
    }
    if !(h.noise_variance.is_finite() && h.noise_variance >= 0.0) {
        return Err(GpError::InvalidHyperparameter {
            name: "noise_variance",
            value: h.noise_variance,
        });
    }
    for &ratio in h.lengthscale_ratios.as_slice() {
        positive("lengthscale_ratios", ratio)?;
    }
    Ok(())
}

pub(crate) fn validate_data(
    dim: usize,
    xs: &[Vec<f64>],
    ts: &[f64],
    ys: &[f64],
) -> Result<(), GpError> {
    if xs.len() != ts.len() || xs.len() != ys.len() {
        return Err(GpError::LengthMismatch {
            xs: xs.len(),
            ts: ts.len(),
            ys: ys.len(),
        });
    }
    for x in xs {
        validate_point(dim, x)?;
    }
    if ts.iter().chain(ys).any(|v| !v.is_finite()) {
        return Err(GpError::NonFinite);
    }
    Ok(())
}

fn validate_point(dim: usize, x: &[f64]) -> Result<(), GpError> {
    if x.len() != dim {
        return Err(GpError::DimensionMismatch {
            expected: dim,
            found: x.len(),
        });
    }
    if x.iter().any(|v| !v.is_finite()) {
        return Err(GpError::NonFinite);
    }
    Ok(())
}

/// [`Gp::scaled`] for a kernel `spec` with lengthscale `ratios`.
fn scaled<'a>(spec: KernelSpec, ratios: &LengthscaleRatios, x: &'a [f64]) -> Cow<'a, [f64]> {
    if ratios.is_isotropic() {
        Cow::Borrowed(x)
    } else {
        Cow::Owned(ratios.scale(x, |d| spec.categories.choices(d) > 0))
    }
}

/// Factorises K + (σ² + jitter) I, retrying with growing jitter. Returns the factor and
/// the jitter used.
pub(crate) fn factorise_with_jitter(
    k: &DMatrix<f64>,
    signal_variance: f64,
) -> Result<(DMatrix<f64>, f64), GpError> {
    let mut l = DMatrix::zeros(k.nrows(), k.ncols());
    let jitter = factorise_with_jitter_into(k, &mut l, signal_variance)?;
    Ok((l, jitter))
}

/// [`factorise_with_jitter`] into `l` (the shape of `k`), whose memory is reused; returns
/// the jitter used. On error `l` holds no factor.
pub(crate) fn factorise_with_jitter_into(
    k: &DMatrix<f64>,
    l: &mut DMatrix<f64>,
    signal_variance: f64,
) -> Result<f64, GpError> {
    let n = k.nrows();
    let mut jitter = 0.0;
    for attempt in 0..=JITTER_TRIES {
        if attempt > 0 {
            jitter = if attempt == 1 {
                JITTER_START * signal_variance
            } else {
                jitter * JITTER_GROWTH
            };
        }
        l.copy_from(k);
        for i in 0..n {
            l[(i, i)] += jitter;
        }
        if linalg::cholesky_in_place(l) {
            return Ok(jitter);
        }
    }
    Err(GpError::NotPositiveDefinite)
}

impl Gp {
    /// Builds the GP and factorises K + σ²I from scratch in O(n³). When the plain
    /// factorisation fails, retries with jitter 1e-8·λ, 1e-7·λ, 1e-6·λ on the diagonal
    /// and keeps that jitter for later updates.
    ///
    /// Every `xs[i]` must have length `dim`; `xs`, `ts`, `ys` must have equal lengths and
    /// finite entries.
    pub fn new(
        spec: KernelSpec,
        hyper: Hyperparameters,
        dim: usize,
        xs: Vec<Vec<f64>>,
        ts: Vec<f64>,
        ys: Vec<f64>,
    ) -> Result<Gp, GpError> {
        validate_hyperparameters(spec, &hyper)?;
        let ratios = hyper.lengthscale_ratios.as_slice().len();
        if ratios != 0 && ratios != dim {
            return Err(GpError::DimensionMismatch {
                expected: dim,
                found: ratios,
            });
        }
        validate_data(dim, &xs, &ts, &ys)?;
        let scaled: Vec<Vec<f64>> = xs
            .iter()
            .map(|x| scaled(spec, &hyper.lengthscale_ratios, x).into_owned())
            .collect();
        let mut gp = Gp {
            spec,
            hyper,
            dim,
            coordinates: Coordinates::new(dim, &scaled),
            xs,
            ts,
            ys,
            chol: DMatrix::zeros(0, 0),
            alpha: DVector::zeros(0),
            jitter: 0.0,
        };
        gp.refactorise()?;
        Ok(gp)
    }

    /// Number of observations.
    /// Bytes of heap memory the model holds (inputs, times, values, the factor and α),
    /// counted from the allocations' capacities: what a cache of models must account.
    pub fn heap_bytes(&self) -> usize {
        let double = std::mem::size_of::<f64>();
        self.xs.capacity() * std::mem::size_of::<Vec<f64>>()
            + self.xs.iter().map(|x| x.capacity() * double).sum::<usize>()
            + self.coordinates.heap_bytes()
            + (self.ts.capacity() + self.ys.capacity() + self.chol.len() + self.alpha.len())
                * double
    }

    pub fn len(&self) -> usize {
        self.ys.len()
    }

    /// True when the GP holds no observation.
    pub fn is_empty(&self) -> bool {
        self.ys.is_empty()
    }

    /// Input dimension d.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// The kernel spec.
    pub fn spec(&self) -> KernelSpec {
        self.spec
    }

    /// The hyperparameters.
    pub fn hyperparameters(&self) -> &Hyperparameters {
        &self.hyper
    }

    /// Diagonal jitter currently added on top of σ² (0 unless a factorisation failed).
    pub fn jitter(&self) -> f64 {
        self.jitter
    }

    /// Lower Cholesky factor L of K + (σ² + jitter) I.
    pub fn cholesky_factor(&self) -> &DMatrix<f64> {
        &self.chol
    }

    /// The stored inputs.
    pub fn xs(&self) -> &[Vec<f64>] {
        &self.xs
    }

    /// The stored observation times.
    pub fn ts(&self) -> &[f64] {
        &self.ts
    }

    /// The stored outputs.
    pub fn ys(&self) -> &[f64] {
        &self.ys
    }

    /// α = (K + σ²I)⁻¹ y.
    pub fn alpha(&self) -> &DVector<f64> {
        &self.alpha
    }

    /// `x` in the coordinates the kernel is isotropic in: each continuous coordinate
    /// divided by its lengthscale ratio ([`LengthscaleRatios::scale`]); `x` itself for an
    /// isotropic kernel.
    pub fn scaled<'a>(&self, x: &'a [f64]) -> Cow<'a, [f64]> {
        scaled(self.spec, &self.hyper.lengthscale_ratios, x)
    }

    /// The squared spatial distance of `a` and `b` in the scaled coordinates
    /// ([`Self::scaled`]), and how many categorical coordinates differ: the kernel's
    /// distances, `‖·‖/l_S` its scaled distance.
    pub fn distances(&self, a: &[f64], b: &[f64]) -> (f64, f64) {
        self.spec.distances(&self.scaled(a), &self.scaled(b))
    }

    /// The full kernel λ · k_S(‖x−x2‖/l_S) · e^{−h/l_C} · k_T(|t−t2|/l_T) with these
    /// hyperparameters, plus λ_L · k_T(|t−t2|/l_L) with a drifting level: ‖·‖ over the
    /// continuous coordinates (scaled by their lengthscale ratios, [`Self::distances`]),
    /// h the number of categorical ones whose choices differ ([`super::categories`];
    /// none: the factor is 1).
    pub fn kernel(&self, x: &[f64], t: f64, x2: &[f64], t2: f64) -> f64 {
        let (squared, differ) = self.distances(x, x2);
        let r = squared.sqrt() / self.hyper.spatial_lengthscale;
        self.hyper.signal_variance
            * self.spec.spatial.correlation(r)
            * (-differ / self.hyper.categorical_lengthscale).exp()
            * self.temporal(t, t2)
            + self.level(t, t2)
    }

    /// The drifting level's covariance λ_L · k_T(|t−t2|/l_L) (0 without one).
    fn level(&self, t: f64, t2: f64) -> f64 {
        match (self.hyper.level, self.spec.temporal) {
            (Some(level), Some(kind)) => level.covariance(kind, t - t2),
            _ => 0.0,
        }
    }

    fn temporal(&self, t: f64, t2: f64) -> f64 {
        match self.spec.temporal {
            Some(k) => k.correlation((t - t2).abs() / self.hyper.temporal_lengthscale),
            None => 1.0,
        }
    }

    fn diagonal(&self) -> f64 {
        self.hyper.prior_variance() + self.hyper.noise_variance + self.jitter
    }

    /// Builds K + σ²I (its lower triangle, which is all the factorisation reads) column by
    /// column, each column's exponentials taken together as in the fit, and factorises it.
    fn refactorise(&mut self) -> Result<(), GpError> {
        let n = self.len();
        let lambda = self.hyper.signal_variance;
        let mut k = DMatrix::zeros(n, n);
        let mut scratch = ColumnScratch::new(n, &self.spec);
        for (j, column) in k.as_mut_slice().chunks_exact_mut(n.max(1)).enumerate() {
            column[j] = self.hyper.prior_variance() + self.hyper.noise_variance;
            let (x, t) = (&self.xs[j], self.ts[j]);
            kernel_column(
                self,
                x,
                t,
                j + 1..n,
                &mut column[j + 1..],
                &mut scratch,
                None,
            );
        }
        let (l, jitter) = factorise_with_jitter(&k, lambda)?;
        self.chol = l;
        self.jitter = jitter;
        self.update_alpha();
        Ok(())
    }

    fn update_alpha(&mut self) {
        let mut a = self.ys.clone();
        linalg::forward_solve(&self.chol, &mut a);
        linalg::backward_solve_transposed(&self.chol, &mut a);
        self.alpha = DVector::from_vec(a);
    }

    fn cross_covariance(&self, x: &[f64], t: f64) -> Vec<f64> {
        let n = self.len();
        let mut k = vec![0.0; n];
        let mut scratch = ColumnScratch::new(n, &self.spec);
        kernel_column(self, x, t, 0..n, &mut k, &mut scratch, None);
        k
    }

    /// Turns a gradient with respect to the scaled coordinates into one with respect to
    /// `x`'s, and holds the categorical coordinates (a choice has no derivative):
    /// ∂/∂x_d = ∂/∂x̃_d / ρ_d.
    fn to_input_gradient(&self, gradient: &mut [f64], slope_factor: f64) {
        let ratios = &self.hyper.lengthscale_ratios;
        for (d, g) in gradient.iter_mut().enumerate() {
            *g *= slope_factor / ratios.get(d);
        }
        for j in self.spec.categories.categorical(self.dim) {
            gradient[j] = 0.0;
        }
    }

    /// Appends one observation in O(n²) by extending the Cholesky factor with one row;
    /// when the new pivot is not positive, refactorises everything with jitter. On error
    /// the GP is left unchanged.
    pub fn push(&mut self, x: &[f64], t: f64, y: f64) -> Result<(), GpError> {
        validate_point(self.dim, x)?;
        if !(t.is_finite() && y.is_finite()) {
            return Err(GpError::NonFinite);
        }
        let n = self.len();
        let mut row = self.cross_covariance(x, t);
        linalg::forward_solve(&self.chol, &mut row);
        let pivot = self.diagonal() - linalg::dot(&row, &row);
        self.xs.push(x.to_vec());
        self.coordinates.push(&self.scaled(x));
        self.ts.push(t);
        self.ys.push(y);
        if pivot > linalg::MIN_RELATIVE_PIVOT * self.diagonal() && pivot.is_finite() {
            self.chol.resize_mut(n + 1, n + 1, 0.0);
            for (j, v) in row.into_iter().enumerate() {
                self.chol[(n, j)] = v;
            }
            self.chol[(n, n)] = pivot.sqrt();
            self.update_alpha();
            return Ok(());
        }
        let saved = (self.chol.clone(), self.jitter);
        if let Err(e) = self.refactorise() {
            self.xs.pop();
            self.coordinates.pop();
            self.ts.pop();
            self.ys.pop();
            (self.chol, self.jitter) = saved;
            return Err(e);
        }
        Ok(())
    }

    /// Removes observation `index` in O(n²): deletes its row and column of the factor and
    /// folds the removed column into the trailing block with a rank-one Cholesky update.
    /// Refactorises from scratch if that update meets a non-positive pivot. On error the
    /// GP is left unchanged.
    pub fn remove(&mut self, index: usize) -> Result<(), GpError> {
        let n = self.len();
        if index >= n {
            return Err(GpError::IndexOutOfRange { index, len: n });
        }
        let m = n - 1;
        let tail = m - index;
        let l = &self.chol;
        let mut reduced = DMatrix::zeros(m, m);
        for j in 0..index {
            for i in j..index {
                reduced[(i, j)] = l[(i, j)];
            }
            for i in index..m {
                reduced[(i, j)] = l[(i + 1, j)];
            }
        }
        let mut block = DMatrix::zeros(tail, tail);
        for j in 0..tail {
            for i in j..tail {
                block[(i, j)] = l[(index + 1 + i, index + 1 + j)];
            }
        }
        let mut column: Vec<f64> = (0..tail).map(|i| l[(index + 1 + i, index)]).collect();
        let updated = linalg::rank_one_update(&mut block, &mut column);
        let x = self.xs.remove(index);
        self.coordinates.remove(index);
        let t = self.ts.remove(index);
        let y = self.ys.remove(index);
        if updated {
            for j in 0..tail {
                for i in j..tail {
                    reduced[(index + i, index + j)] = block[(i, j)];
                }
            }
            self.chol = reduced;
            self.update_alpha();
            return Ok(());
        }
        let saved = (self.chol.clone(), self.jitter);
        if let Err(e) = self.refactorise() {
            self.coordinates.insert(index, &self.scaled(&x));
            self.xs.insert(index, x);
            self.ts.insert(index, t);
            self.ys.insert(index, y);
            (self.chol, self.jitter) = saved;
            return Err(e);
        }
        Ok(())
    }

    /// Posterior mean and latent variance (without noise, clamped ≥ 0) at (x, t).
    /// An empty GP gives (0, λ). `x` must have length `dim`.
    pub fn predict(&self, x: &[f64], t: f64) -> (f64, f64) {
        debug_assert_eq!(x.len(), self.dim);
        if self.is_empty() {
            return (0.0, self.hyper.prior_variance());
        }
        let mut k = self.cross_covariance(x, t);
        let mean = linalg::dot(&k, self.alpha.as_slice());
        linalg::forward_solve(&self.chol, &mut k);
        let var = self.hyper.prior_variance() - linalg::dot(&k, &k);
        (mean, var.max(0.0))
    }

    /// Posterior mean and latent variance at (x, t) with their gradients with respect to x.
    /// At points coinciding with a stored input the Matérn-1/2 kernel is not
    /// differentiable; its contribution to the gradient is taken as 0 there.
    pub fn predict_with_gradient(&self, x: &[f64], t: f64) -> Prediction {
        let mut one = self.predict_with_gradient_many(&[x.to_vec()], t);
        one.pop().expect("one prediction per point")
    }

    /// [`Self::predict_with_gradient`] at each of `xs`: the variances and their gradients
    /// come from two blocked triangular solves against the n × m cross-covariance, which
    /// read the factor once for all the points instead of twice per point (at n = 400 the
    /// solves take 10 µs per point in a batch of 10, 32 µs for a point alone). UCB's
    /// restarts are evaluated so, stepped together.
    pub fn predict_with_gradient_many(&self, xs: &[Vec<f64>], t: f64) -> Vec<Prediction> {
        let d = self.dim;
        let lambda = self.hyper.prior_variance();
        if self.is_empty() {
            let prior = Prediction {
                mean: 0.0,
                variance: lambda,
                mean_gradient: vec![0.0; d],
                variance_gradient: vec![0.0; d],
            };
            return vec![prior; xs.len()];
        }
        let n = self.len();
        // Column j of `k` holds k(x_j), then L⁻¹k(x_j), then K⁻¹k(x_j); column j of
        // `slope` the slopes of k(x_j) ([`kernel_column`]).
        let mut k = DMatrix::zeros(n, xs.len());
        let mut slope = DMatrix::zeros(n, xs.len());
        let mut scratch = ColumnScratch::new(n, &self.spec);
        let columns = k.as_mut_slice().chunks_exact_mut(n);
        for ((column, slope_column), x) in columns
            .zip(slope.as_mut_slice().chunks_exact_mut(n))
            .zip(xs)
        {
            kernel_column(self, x, t, 0..n, column, &mut scratch, Some(slope_column));
        }
        let means = self.means_of(&k);
        linalg::forward_solve_matrix(&self.chol, &mut k);
        let raw_variances: Vec<f64> = k
            .as_slice()
            .chunks_exact(n)
            .map(|v| lambda - linalg::dot(v, v))
            .collect();
        linalg::backward_solve_transposed_matrix(&self.chol, &mut k);
        let solved = k.as_slice().chunks_exact(n);
        let slopes = slope.as_slice().chunks_exact(n);
        xs.iter()
            .zip(solved.zip(slopes))
            .zip(means.into_iter().zip(raw_variances))
            .map(|((x, (w, slope)), (mean, raw_variance))| {
                let mut mean_gradient = vec![0.0; d];
                let mut variance_gradient = vec![0.0; d];
                let x = self.scaled(x);
                let cm: Vec<f64> = slope
                    .iter()
                    .zip(self.alpha.iter())
                    .map(|(s, a)| s * a)
                    .collect();
                let cv: Vec<f64> = slope.iter().zip(w).map(|(s, w)| -2.0 * s * w).collect();
                for j in 0..d {
                    let values = self.coordinates.coordinate(j);
                    let (mut gm, mut gv) = (0.0, 0.0);
                    for i in 0..n {
                        let diff = x[j] - values[i];
                        gm += cm[i] * diff;
                        gv += cv[i] * diff;
                    }
                    (mean_gradient[j], variance_gradient[j]) = (gm, gv);
                }
                let variance_factor = if raw_variance <= 0.0 { 0.0 } else { 1.0 };
                self.to_input_gradient(&mut mean_gradient, 1.0);
                self.to_input_gradient(&mut variance_gradient, variance_factor);
                Prediction {
                    mean,
                    variance: raw_variance.max(0.0),
                    mean_gradient,
                    variance_gradient,
                }
            })
            .collect()
    }

    /// Posterior mean at (x, t) and its gradient with respect to x, in O(n·d) (no
    /// triangular solve).
    pub fn predict_mean_with_gradient(&self, x: &[f64], t: f64) -> (f64, Vec<f64>) {
        let n = self.len();
        let (mut k, mut slope) = (vec![0.0; n], vec![0.0; n]);
        let mut scratch = ColumnScratch::new(n, &self.spec);
        kernel_column(self, x, t, 0..n, &mut k, &mut scratch, Some(&mut slope));
        let mean = linalg::dot(&k, self.alpha.as_slice());
        let mut gradient = vec![0.0; self.dim];
        let x = self.scaled(x);
        let c: Vec<f64> = slope
            .iter()
            .zip(self.alpha.iter())
            .map(|(s, a)| s * a)
            .collect();
        for (j, g) in gradient.iter_mut().enumerate() {
            let values = self.coordinates.coordinate(j);
            *g = c.iter().zip(values).map(|(c, v)| c * (x[j] - v)).sum();
        }
        self.to_input_gradient(&mut gradient, 1.0);
        (mean, gradient)
    }

    /// Posterior (mean, latent variance) of many points at one time t, with one
    /// triangular solve against the n×m cross-covariance matrix.
    pub fn predict_many(&self, xs: &[Vec<f64>], t: f64) -> Vec<(f64, f64)> {
        let lambda = self.hyper.prior_variance();
        if self.is_empty() {
            return vec![(0.0, lambda); xs.len()];
        }
        let n = self.len();
        let mut k = self.cross_covariance_matrix(xs, t);
        let means = self.means_of(&k);
        linalg::forward_solve_matrix(&self.chol, &mut k);
        k.as_slice()
            .chunks_exact(n)
            .zip(means)
            .map(|(col, mean)| (mean, (lambda - linalg::dot(col, col)).max(0.0)))
            .collect()
    }

    /// Posterior means of many points at one time t: [`Self::predict_many`]'s means,
    /// without its O(n²m) solve.
    pub fn predict_mean_many(&self, xs: &[Vec<f64>], t: f64) -> Vec<f64> {
        if self.is_empty() {
            return vec![0.0; xs.len()];
        }
        self.means_of(&self.cross_covariance_matrix(xs, t))
    }

    /// k((x_i, t_i), (x, t)) for every observation i (rows) and point x (columns); the
    /// GP is not empty.
    fn cross_covariance_matrix(&self, xs: &[Vec<f64>], t: f64) -> DMatrix<f64> {
        let n = self.len();
        let mut k = DMatrix::zeros(n, xs.len());
        let mut scratch = ColumnScratch::new(n, &self.spec);
        for (column, x) in k.as_mut_slice().chunks_exact_mut(n).zip(xs) {
            kernel_column(self, x, t, 0..n, column, &mut scratch, None);
        }
        k
    }

    /// μ = k*ᵀα for each column k* of a cross-covariance matrix.
    fn means_of(&self, cross: &DMatrix<f64>) -> Vec<f64> {
        cross
            .as_slice()
            .chunks_exact(self.len())
            .map(|col| linalg::dot(col, self.alpha.as_slice()))
            .collect()
    }
}

widest_vectors! {
    /// k(x, t; x_i, t_i) = λ p_S p_T e^{−(q_S+q_T+h/l_C)} (plus the drifting level's
    /// λ_L k_T(|t − t_i|/l_L)) for the observations i of
    /// `observations` into `column`, the column's exponentials taken together; with
    /// `slope`, also the (dk_i/dr)/r / l_S² of each, so that ∂k_i/∂x̃ = slope_i·(x̃ − x̃_i)
    /// in the scaled coordinates x̃ of [`Gp::scaled`],
    /// sharing the exponential. Each factor is one loop over the observations (the
    /// distances from [`Coordinates`], then the kinds' factors), so that each vectorises,
    /// for the widest vectors the CPU has; the same values as [`Gp::kernel`]'s formula one
    /// observation at a time.
    fn kernel_column(
        gp: &Gp,
        x: &[f64],
        t: f64,
        observations: std::ops::Range<usize>,
        column: &mut [f64],
        scratch: &mut ColumnScratch,
        slope: Option<&mut [f64]>,
    ) = kernel_column_loops;
}

#[inline(always)]
fn kernel_column_loops(
    gp: &Gp,
    x: &[f64],
    t: f64,
    observations: std::ops::Range<usize>,
    column: &mut [f64],
    scratch: &mut ColumnScratch,
    mut slope: Option<&mut [f64]>,
) {
    debug_assert_eq!(x.len(), gp.dim);
    let m = observations.len();
    let column = &mut column[..m];
    let polynomial = &mut scratch.polynomial[..m];
    let categories = &gp.spec.categories;
    // The exponent's terms, summed into `column` in this order: q_S, q_T, h/l_C.
    gp.coordinates.distances_into(
        &gp.scaled(x),
        categories,
        observations.clone(),
        column,
        &mut scratch.differ,
    );
    let ls = gp.hyper.spatial_lengthscale;
    let spatial = gp.spec.spatial;
    spatial.spatial_factors_into(column, ls, polynomial, slope.as_deref_mut());
    if let Some(kind) = gp.spec.temporal {
        let ts = &gp.ts[observations.clone()];
        let lt = gp.hyper.temporal_lengthscale;
        kind.temporal_factors_into(t, ts, lt, column, polynomial, slope.as_deref_mut());
    }
    if !categories.is_empty() {
        let inv_lc = 1.0 / gp.hyper.categorical_lengthscale;
        for (q, differ) in column.iter_mut().zip(&scratch.differ) {
            *q += differ * inv_lc;
        }
    }
    column.iter_mut().for_each(|q| *q = -*q);
    exp_in_place(column);
    let lambda = gp.hyper.signal_variance;
    match slope {
        Some(slope) => {
            let inv_ls2 = 1.0 / (ls * ls);
            for ((value, p), slope) in column.iter_mut().zip(&*polynomial).zip(slope) {
                let scale = lambda * *value;
                *value = scale * p;
                *slope *= scale * inv_ls2;
            }
        }
        None => {
            for (value, p) in column.iter_mut().zip(&*polynomial) {
                *value = lambda * *value * p;
            }
        }
    }
    // The drifting level, constant in space: no slope.
    if let (Some(level), Some(kind)) = (gp.hyper.level, gp.spec.temporal) {
        for (value, &ti) in column.iter_mut().zip(&gp.ts[observations]) {
            *value += level.covariance(kind, t - ti);
        }
    }
}

#[cfg(test)]
#[path = "model_tests.rs"]
mod tests;
