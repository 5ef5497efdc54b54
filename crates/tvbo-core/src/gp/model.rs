//! Exact zero-mean Gaussian process over (x, t) whose Cholesky factor is maintained
//! incrementally as observations are appended and removed.

use std::borrow::Cow;

use nalgebra::{DMatrix, DVector};
use serde::{Deserialize, Serialize};

use super::coordinates::Coordinates;
use super::exp::exp_in_place;
use super::kernel::KernelSpec;
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
        }
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
        let mut gp = Gp {
            spec,
            hyper,
            dim,
            coordinates: Coordinates::new(dim, &[]),
            xs: Vec::new(),
            ts: Vec::new(),
            ys: Vec::new(),
            chol: DMatrix::zeros(0, 0),
            alpha: DVector::zeros(0),
            jitter: 0.0,
        };
        let scaled: Vec<Vec<f64>> = xs.iter().map(|x| gp.scaled(x).into_owned()).collect();
        (gp.coordinates, gp.xs, gp.ts, gp.ys) = (Coordinates::new(dim, &scaled), xs, ts, ys);
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
        let ratios = &self.hyper.lengthscale_ratios;
        if ratios.is_isotropic() {
            Cow::Borrowed(x)
        } else {
            let categories = &self.spec.categories;
            Cow::Owned(ratios.scale(x, |d| categories.choices(d) > 0))
        }
    }

    /// The squared spatial distance of `a` and `b` in the scaled coordinates
    /// ([`Self::scaled`]), and how many categorical coordinates differ: the kernel's
    /// distances, `‖·‖/l_S` its scaled distance.
    pub fn distances(&self, a: &[f64], b: &[f64]) -> (f64, f64) {
        self.spec.distances(&self.scaled(a), &self.scaled(b))
    }

    /// The full kernel λ · k_S(‖x−x2‖/l_S) · e^{−h/l_C} · k_T(|t−t2|/l_T) with these
    /// hyperparameters: ‖·‖ over the continuous coordinates (scaled by their lengthscale
    /// ratios, [`Self::distances`]), h the number of categorical ones whose choices differ
    /// ([`super::categories`]; none: the factor is 1).
    pub fn kernel(&self, x: &[f64], t: f64, x2: &[f64], t2: f64) -> f64 {
        let (squared, differ) = self.distances(x, x2);
        let r = squared.sqrt() / self.hyper.spatial_lengthscale;
        self.hyper.signal_variance
            * self.spec.spatial.correlation(r)
            * (-differ / self.hyper.categorical_lengthscale).exp()
            * self.temporal(t, t2)
    }

    fn temporal(&self, t: f64, t2: f64) -> f64 {
        match self.spec.temporal {
            Some(k) => k.correlation((t - t2).abs() / self.hyper.temporal_lengthscale),
            None => 1.0,
        }
    }

    fn diagonal(&self) -> f64 {
        self.hyper.signal_variance + self.hyper.noise_variance + self.jitter
    }

    /// Builds K + σ²I (its lower triangle, which is all the factorisation reads) column by
    /// column, each column's exponentials taken together as in the fit, and factorises it.
    fn refactorise(&mut self) -> Result<(), GpError> {
        let n = self.len();
        let lambda = self.hyper.signal_variance;
        let mut k = DMatrix::zeros(n, n);
        let mut scratch = ColumnScratch::new(n, &self.spec);
        for (j, column) in k.as_mut_slice().chunks_exact_mut(n.max(1)).enumerate() {
            column[j] = lambda + self.hyper.noise_variance;
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
            return (0.0, self.hyper.signal_variance);
        }
        let mut k = self.cross_covariance(x, t);
        let mean = linalg::dot(&k, self.alpha.as_slice());
        linalg::forward_solve(&self.chol, &mut k);
        let var = self.hyper.signal_variance - linalg::dot(&k, &k);
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
        let lambda = self.hyper.signal_variance;
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
        let lambda = self.hyper.signal_variance;
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
    /// k(x, t; x_i, t_i) = λ p_S p_T e^{−(q_S+q_T+h/l_C)} for the observations i of
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
        let ts = &gp.ts[observations];
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gp::Categories;
    use crate::gp::kernel::KernelKind;
    use rand::{RngExt, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// Every kind in space, with and without every kind in time, and two with a
    /// categorical second coordinate of three choices.
    fn specs() -> Vec<KernelSpec> {
        let mut out = Vec::new();
        for spatial in KernelKind::ALL {
            out.push(KernelSpec::new(spatial, None));
            for temporal in KernelKind::ALL {
                out.push(KernelSpec::new(spatial, Some(temporal)));
            }
        }
        let categories = crate::gp::Categories::new(&[0, 3]);
        out.push(KernelSpec::default().with_categories(categories));
        out.push(KernelSpec::new(KernelKind::Rbf, None).with_categories(categories));
        out
    }

    fn hyper() -> Hyperparameters {
        Hyperparameters {
            signal_variance: 1.7,
            spatial_lengthscale: 0.4,
            temporal_lengthscale: 5.0,
            noise_variance: 0.05,
            categorical_lengthscale: 1.0,
            lengthscale_ratios: Default::default(),
        }
    }

    /// [`hyper`] with a lengthscale per coordinate: l_d = 0.4 · (0.5, 1, 2.5).
    fn per_coordinate() -> Hyperparameters {
        Hyperparameters {
            lengthscale_ratios: LengthscaleRatios::new(&[0.5, 1.0, 2.5]).unwrap(),
            ..hyper()
        }
    }

    type Data = (Vec<Vec<f64>>, Vec<f64>, Vec<f64>);

    fn random_data(n: usize, dim: usize, rng: &mut ChaCha8Rng) -> Data {
        let xs: Vec<Vec<f64>> = (0..n)
            .map(|_| (0..dim).map(|_| rng.random::<f64>()).collect())
            .collect();
        let ts: Vec<f64> = (0..n).map(|_| rng.random::<f64>() * 20.0).collect();
        let ys: Vec<f64> = (0..n).map(|_| rng.random::<f64>() * 2.0 - 1.0).collect();
        (xs, ts, ys)
    }

    fn dense_kernel(gp: &Gp) -> DMatrix<f64> {
        let n = gp.len();
        DMatrix::from_fn(n, n, |i, j| {
            gp.kernel(&gp.xs()[i], gp.ts()[i], &gp.xs()[j], gp.ts()[j])
                + if i == j {
                    gp.hyperparameters().noise_variance
                } else {
                    0.0
                }
        })
    }

    #[test]
    fn posterior_matches_dense_solve() {
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        for spec in specs() {
            let dim = 3;
            // One case larger than the factorisation block size.
            let n = if spec == KernelSpec::default() {
                130
            } else {
                25
            };
            let (xs, ts, ys) = random_data(n, dim, &mut rng);
            let h = if n % 2 == 0 {
                hyper()
            } else {
                per_coordinate()
            };
            let gp = Gp::new(spec, h, dim, xs, ts, ys.clone()).unwrap();
            let kinv = dense_kernel(&gp).try_inverse().unwrap();
            let y = DVector::from_vec(ys);
            let alpha = &kinv * &y;
            assert!((&alpha - gp.alpha()).amax() < 1e-8);
            for _ in 0..10 {
                let x: Vec<f64> = (0..dim).map(|_| rng.random::<f64>()).collect();
                let t = rng.random::<f64>() * 25.0;
                let kx = DVector::from_iterator(
                    gp.len(),
                    (0..gp.len()).map(|i| gp.kernel(&x, t, &gp.xs()[i], gp.ts()[i])),
                );
                let mean = kx.dot(&alpha);
                let var = gp.hyperparameters().signal_variance - kx.dot(&(&kinv * &kx));
                let (m, v) = gp.predict(&x, t);
                assert!((m - mean).abs() < 1e-8, "{spec:?}");
                assert!((v - var.max(0.0)).abs() < 1e-8, "{spec:?}");
            }
        }
    }

    #[test]
    fn kernel_columns_are_the_kernel_and_every_compiled_variant_the_same_bits() {
        let mut rng = ChaCha8Rng::seed_from_u64(21);
        for spec in specs() {
            let dim = 3;
            let (mut xs, ts, ys) = random_data(37, dim, &mut rng);
            // Repeated choices, so that some pairs agree on the categorical coordinate.
            for x in &mut xs {
                x[1] = (x[1] * 3.0).floor() / 3.0 + 1.0 / 6.0;
            }
            let gp = Gp::new(spec, hyper(), dim, xs, ts, ys).unwrap();
            let n = gp.len();
            let x = vec![0.3, 0.5, 0.9];
            let observations = 4..n;
            let mut scratch = ColumnScratch::new(n, &spec);
            let (mut column, mut slope) = (vec![0.0; n], vec![0.0; n]);
            kernel_column(
                &gp,
                &x,
                6.0,
                observations.clone(),
                &mut column,
                &mut scratch,
                Some(&mut slope),
            );
            let (mut portable, mut portable_slope) = (vec![0.0; n], vec![0.0; n]);
            kernel_column_loops(
                &gp,
                &x,
                6.0,
                observations.clone(),
                &mut portable,
                &mut scratch,
                Some(&mut portable_slope),
            );
            let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&column), bits(&portable), "{spec:?}");
            assert_eq!(bits(&slope), bits(&portable_slope), "{spec:?}");
            for (q, i) in observations.enumerate() {
                let k = gp.kernel(&x, 6.0, &gp.xs()[i], gp.ts()[i]);
                assert!(
                    (column[q] - k).abs() <= 1e-14 * k.abs().max(1e-300),
                    "{spec:?}"
                );
            }
        }
    }

    #[test]
    fn empty_gp_predicts_prior() {
        let gp = Gp::new(KernelSpec::default(), hyper(), 2, vec![], vec![], vec![]).unwrap();
        assert!(gp.is_empty());
        assert_eq!(gp.predict(&[0.3, 0.2], 1.0), (0.0, 1.7));
        let p = gp.predict_with_gradient(&[0.3, 0.2], 1.0);
        assert_eq!(p.variance, 1.7);
        assert_eq!(p.mean_gradient, vec![0.0, 0.0]);
        assert_eq!(gp.predict_many(&[vec![0.1, 0.1]], 0.0), vec![(0.0, 1.7)]);
    }

    #[test]
    fn rejects_bad_input() {
        let spec = KernelSpec::default();
        assert!(matches!(
            Gp::new(spec, hyper(), 2, vec![vec![0.1]], vec![0.0], vec![1.0]),
            Err(GpError::DimensionMismatch {
                expected: 2,
                found: 1
            })
        ));
        assert!(matches!(
            Gp::new(spec, hyper(), 1, vec![vec![0.1]], vec![], vec![1.0]),
            Err(GpError::LengthMismatch { .. })
        ));
        assert!(matches!(
            Gp::new(spec, hyper(), 1, vec![vec![f64::NAN]], vec![0.0], vec![1.0]),
            Err(GpError::NonFinite)
        ));
        let mut bad = hyper();
        bad.spatial_lengthscale = 0.0;
        assert!(matches!(
            Gp::new(spec, bad, 1, vec![], vec![], vec![]),
            Err(GpError::InvalidHyperparameter { .. })
        ));
        let mut gp = Gp::new(spec, hyper(), 1, vec![vec![0.5]], vec![0.0], vec![1.0]).unwrap();
        assert!(matches!(
            gp.remove(1),
            Err(GpError::IndexOutOfRange { index: 1, len: 1 })
        ));
        assert!(gp.push(&[0.1, 0.2], 0.0, 0.0).is_err());
        assert!(gp.push(&[0.1], f64::INFINITY, 0.0).is_err());
        assert_eq!(gp.len(), 1);
    }

    fn assert_matches_fresh(gp: &Gp) {
        let fresh = Gp::new(
            gp.spec(),
            *gp.hyperparameters(),
            gp.dim(),
            gp.xs().to_vec(),
            gp.ts().to_vec(),
            gp.ys().to_vec(),
        )
        .unwrap();
        assert_eq!(
            gp.cholesky_factor().shape(),
            fresh.cholesky_factor().shape()
        );
        if !gp.is_empty() {
            assert!((gp.cholesky_factor() - fresh.cholesky_factor()).amax() < 1e-8);
            assert!((gp.alpha() - fresh.alpha()).amax() < 1e-8);
            // The kernel columns read the inputs by coordinate, kept beside them.
            let points = vec![vec![0.2; gp.dim()], vec![0.7; gp.dim()]];
            let means = gp.predict_mean_many(&points, 3.0);
            for (mean, fresh) in means.iter().zip(fresh.predict_mean_many(&points, 3.0)) {
                assert!((mean - fresh).abs() < 1e-8);
            }
        }
    }

    #[test]
    fn push_and_remove_track_fresh_factorisation() {
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        for spec in [
            KernelSpec::default(),
            KernelSpec::new(KernelKind::Rbf, None),
            KernelSpec::new(KernelKind::Matern12, Some(KernelKind::Rbf)),
        ] {
            let dim = 2;
            let (xs, ts, ys) = random_data(8, dim, &mut rng);
            let mut gp = Gp::new(spec, hyper(), dim, xs, ts, ys).unwrap();
            for _ in 0..80 {
                if gp.len() > 2 && rng.random::<f64>() < 0.45 {
                    let i = rng.random_range(0..gp.len());
                    gp.remove(i).unwrap();
                } else {
                    let x: Vec<f64> = (0..dim).map(|_| rng.random::<f64>()).collect();
                    gp.push(&x, rng.random::<f64>() * 30.0, rng.random::<f64>())
                        .unwrap();
                }
                assert_matches_fresh(&gp);
            }
            while !gp.is_empty() {
                gp.remove(0).unwrap();
                assert_matches_fresh(&gp);
            }
            gp.push(&[0.5, 0.5], 0.0, 1.0).unwrap();
            assert_matches_fresh(&gp);
        }
    }

    #[test]
    fn duplicate_points_survive_with_jitter() {
        let h = Hyperparameters {
            noise_variance: 0.0,
            ..hyper()
        };
        let spec = KernelSpec::new(KernelKind::Rbf, None);
        let mut gp = Gp::new(spec, h, 1, vec![vec![0.5]], vec![0.0], vec![1.0]).unwrap();
        gp.push(&[0.5], 0.0, 1.0).unwrap();
        assert!(gp.jitter() > 0.0);
        assert_eq!(gp.len(), 2);
        let (m, v) = gp.predict(&[0.5], 0.0);
        assert!(m.is_finite() && v.is_finite());
    }

    #[test]
    fn gradients_match_finite_differences() {
        let mut rng = ChaCha8Rng::seed_from_u64(9);
        let h = 1e-6;
        for spec in specs() {
            let dim = 3;
            let (xs, ts, ys) = random_data(15, dim, &mut rng);
            for hyper in [hyper(), per_coordinate()] {
                let gp = Gp::new(spec, hyper, dim, xs.clone(), ts.clone(), ys.clone()).unwrap();
                for _ in 0..5 {
                    let x: Vec<f64> = (0..dim).map(|_| 0.1 + 0.8 * rng.random::<f64>()).collect();
                    let t = rng.random::<f64>() * 20.0;
                    let p = gp.predict_with_gradient(&x, t);
                    let (m, v) = gp.predict(&x, t);
                    let (m2, g2) = gp.predict_mean_with_gradient(&x, t);
                    assert!((m2 - m).abs() < 1e-12);
                    for (a, b) in g2.iter().zip(&p.mean_gradient) {
                        assert!((a - b).abs() < 1e-12);
                    }
                    assert!((p.mean - m).abs() < 1e-12 && (p.variance - v).abs() < 1e-12);
                    for j in 0..dim {
                        let mut xp = x.clone();
                        let mut xm = x.clone();
                        xp[j] += h;
                        xm[j] -= h;
                        let (mp, vp) = gp.predict(&xp, t);
                        let (mm, vm) = gp.predict(&xm, t);
                        let gm = (mp - mm) / (2.0 * h);
                        let gv = (vp - vm) / (2.0 * h);
                        assert!(
                            (gm - p.mean_gradient[j]).abs() < 1e-5 * (1.0 + gm.abs()),
                            "{spec:?} mean {gm} vs {}",
                            p.mean_gradient[j]
                        );
                        assert!(
                            (gv - p.variance_gradient[j]).abs() < 1e-5 * (1.0 + gv.abs()),
                            "{spec:?} var {gv} vs {}",
                            p.variance_gradient[j]
                        );
                    }
                }
            }
        }
    }

    /// With lengthscale ratios the kernel is λ k_S(√Σ_d ((x_d − x'_d)/(l_S ρ_d))²) k_T,
    /// written out here a coordinate at a time; the categorical coordinate keeps its
    /// overlap factor whatever its ratio.
    #[test]
    fn per_coordinate_lengthscales_scale_each_distance() {
        let h = per_coordinate();
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        let (xs, ts, ys) = random_data(12, 3, &mut rng);
        for spec in specs() {
            let gp = Gp::new(spec, h, 3, xs.clone(), ts.clone(), ys.clone()).unwrap();
            for i in 0..xs.len() {
                let (a, b) = (&xs[i], &xs[(i + 5) % xs.len()]);
                let (ta, tb) = (ts[i], ts[(i + 5) % xs.len()]);
                let mut squared = 0.0;
                let mut differ = 0.0;
                for d in 0..3 {
                    if spec.categories.choices(d) > 0 {
                        differ += f64::from(u8::from(Categories::differ(a[d], b[d])));
                    } else {
                        let l = h.spatial_lengthscale * h.lengthscale_ratios.get(d);
                        squared += ((a[d] - b[d]) / l).powi(2);
                    }
                }
                let expected = h.signal_variance
                    * spec.spatial.correlation(squared.sqrt())
                    * (-differ / h.categorical_lengthscale).exp()
                    * spec.temporal_correlation((ta - tb).abs() / h.temporal_lengthscale);
                let got = gp.kernel(a, ta, b, tb);
                assert!(
                    (got - expected).abs() < 1e-12,
                    "{spec:?}: {got} vs {expected}"
                );
            }
        }
        let wrong = Hyperparameters {
            lengthscale_ratios: LengthscaleRatios::new(&[1.0, 2.0]).unwrap(),
            ..hyper()
        };
        assert!(matches!(
            Gp::new(KernelSpec::default(), wrong, 3, xs, ts, ys),
            Err(GpError::DimensionMismatch { .. })
        ));
    }

    #[test]
    fn gradient_at_a_data_point_is_finite() {
        let spec = KernelSpec::new(KernelKind::Matern12, None);
        let gp = Gp::new(spec, hyper(), 2, vec![vec![0.3, 0.3]], vec![0.0], vec![1.0]).unwrap();
        let p = gp.predict_with_gradient(&[0.3, 0.3], 0.0);
        assert!(p.mean_gradient.iter().all(|g| g.is_finite()));
        assert!(p.variance_gradient.iter().all(|g| g.is_finite()));
    }

    #[test]
    fn predict_many_matches_predict() {
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        for spec in specs() {
            let dim = 2;
            let (xs, ts, ys) = random_data(30, dim, &mut rng);
            let gp = Gp::new(spec, hyper(), dim, xs, ts, ys).unwrap();
            let (queries, _, _) = random_data(17, dim, &mut rng);
            let batch = gp.predict_many(&queries, 7.5);
            assert_eq!(batch.len(), queries.len());
            let means = gp.predict_mean_many(&queries, 7.5);
            assert_eq!(means, batch.iter().map(|(m, _)| *m).collect::<Vec<_>>());
            for (q, (m, v)) in queries.iter().zip(batch) {
                let (m2, v2) = gp.predict(q, 7.5);
                assert!((m - m2).abs() < 1e-12 && (v - v2).abs() < 1e-12);
            }
        }
    }

    #[test]
    fn gradients_in_a_batch_match_those_one_at_a_time() {
        let mut rng = ChaCha8Rng::seed_from_u64(8);
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-10 * (1.0 + a.abs().max(b.abs()));
        for spec in specs() {
            let dim = 3;
            let (xs, ts, ys) = random_data(40, dim, &mut rng);
            let gp = Gp::new(spec, hyper(), dim, xs, ts, ys).unwrap();
            let (queries, _, _) = random_data(13, dim, &mut rng);
            let batch = gp.predict_with_gradient_many(&queries, 7.5);
            assert_eq!(batch.len(), queries.len());
            for (q, p) in queries.iter().zip(&batch) {
                let alone = gp.predict_with_gradient(q, 7.5);
                let (mean, variance) = gp.predict(q, 7.5);
                assert!(close(p.mean, alone.mean) && close(p.mean, mean), "{p:?}");
                assert!(close(p.variance, alone.variance) && close(p.variance, variance));
                for j in 0..dim {
                    assert!(close(p.mean_gradient[j], alone.mean_gradient[j]), "{p:?}");
                    assert!(close(p.variance_gradient[j], alone.variance_gradient[j]));
                }
            }
        }
        let empty = Gp::new(KernelSpec::default(), hyper(), 2, vec![], vec![], vec![]).unwrap();
        let prior = empty.predict_with_gradient_many(&[vec![0.1, 0.2], vec![0.5, 0.5]], 1.0);
        assert!(
            prior
                .iter()
                .all(|p| p.mean == 0.0 && p.variance == hyper().signal_variance)
        );
    }
}
