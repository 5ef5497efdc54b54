//! Gaussian processes over a finite set of m arms with a fixed prior: the model of the
//! prior-selection algorithms (Sandberg & Chehreghani, paper 003, §2 Eqs. (1)–(2)).
//!
//! A prior is a mean vector μ₀ and a covariance matrix C over the arms, given directly
//! (an empirical prior, 003 §5 "Intel"/"PeMS") or built from a kernel over the arms'
//! parameters. The posterior after noisy observations (a_k, y_k), noise variance σ², is
//! kept in a form that costs O(n·m) per observation and O(1) per arm query:
//!
//! - L, the Cholesky factor of K_XX + σ²I (K_XX = C at the observed arms), row by row;
//! - w = L⁻¹(y − μ₀(X));
//! - B = L⁻¹ C_{X,·} (n × m), whose column a is L⁻¹ C_{X,a};
//! - the posterior mean μ₀ + Bᵀw and the explained variance Σ_k B_{k,a}² at every arm,
//!   so that σ²(a) = C_aa − Σ_k B_{k,a}².
//!
//! Joint posterior samples over all arms use Matheron's rule (pathwise conditioning,
//! Wilson et al. 2020): f̃ = f + C_{·,X}(K_XX + σ²I)⁻¹(y − f(X) − ε) with a prior draw
//! f = μ₀ + L_C z and ε ~ N(0, σ²I), which is Bᵀ L⁻¹(y − f(X) − ε) in the stored form.
//! A draw is exact in distribution and costs O(m² + n·m + n²), where factorising the
//! posterior covariance would cost O(m³) per draw; the prior factor L_C is computed once
//! per prior. Memory is O(m²) per prior (C and L_C) plus O(n·m) for B.

use std::sync::Arc;

use nalgebra::{DMatrix, DVector};
use rand::Rng;
use rand_distr::{Distribution, StandardNormal};

use super::kernel::KernelKind;
use super::model::{JITTER_START, factorise_with_jitter};
pub use crate::domain::kernel::PriorKernel;
use crate::domain::rows_heap_bytes;

/// Why a prior is not usable.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PriorError {
    /// The mean or covariance does not have one entry (row, column) per arm.
    #[error("must have {expected} entries (one per arm), found {found}")]
    Size { expected: usize, found: usize },
    /// A mean or covariance entry is NaN or infinite.
    #[error("entries must be finite numbers")]
    NotFinite,
    /// C_ij and C_ji differ by more than the symmetry tolerance.
    #[error("is not symmetric: entries ({row}, {column}) and ({column}, {row}) differ")]
    Asymmetric { row: usize, column: usize },
    /// No Cholesky factor exists even with the largest jitter.
    #[error("is not positive semi-definite (a Cholesky factorisation failed even with jitter)")]
    NotPositiveSemidefinite,
}

/// Relative tolerance of the symmetry check, against the largest diagonal entry.
const SYMMETRY_TOLERANCE: f64 = 1e-9;

/// The parameters of a kernel prior.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct KernelPriorParams {
    pub kernel: PriorKernel,
    /// Ignored by the linear kernel.
    pub lengthscale: f64,
    pub variance: f64,
    /// Periodic kernel only.
    pub period: f64,
    /// Rational-quadratic kernel only.
    pub alpha: f64,
}

impl KernelPriorParams {
    /// k(x, x') for raw parameter vectors.
    pub fn covariance(&self, x: &[f64], y: &[f64]) -> f64 {
        let squared_distance = || -> f64 { x.iter().zip(y).map(|(a, b)| (a - b) * (a - b)).sum() };
        let stationary = |kind: KernelKind| {
            self.variance * kind.correlation(squared_distance().sqrt() / self.lengthscale)
        };
        match self.kernel {
            PriorKernel::Matern12 => stationary(KernelKind::Matern12),
            PriorKernel::Matern32 => stationary(KernelKind::Matern32),
            PriorKernel::Matern52 => stationary(KernelKind::Matern52),
            PriorKernel::Rbf => stationary(KernelKind::Rbf),
            PriorKernel::Periodic => {
                let sum: f64 = x
                    .iter()
                    .zip(y)
                    .map(|(a, b)| {
                        (std::f64::consts::PI * (a - b).abs() / self.period)
                            .sin()
                            .powi(2)
                    })
                    .sum();
                self.variance * (-2.0 * sum / (self.lengthscale * self.lengthscale)).exp()
            }
            PriorKernel::Linear => self.variance * x.iter().zip(y).map(|(a, b)| a * b).sum::<f64>(),
            PriorKernel::Rq => {
                let r2 = squared_distance() / (self.lengthscale * self.lengthscale);
                self.variance * (1.0 + r2 / (2.0 * self.alpha)).powf(-self.alpha)
            }
        }
    }

    /// The covariance matrix over `points` (raw parameter vectors).
    pub fn matrix(&self, points: &[Vec<f64>]) -> DMatrix<f64> {
        let m = points.len();
        let mut c = DMatrix::zeros(m, m);
        for j in 0..m {
            for i in j..m {
                let value = self.covariance(&points[i], &points[j]);
                c[(i, j)] = value;
                c[(j, i)] = value;
            }
        }
        c
    }
}

/// A Gaussian prior over m arms: mean μ₀, covariance C and a (jittered) factor of C.
#[derive(Clone, Debug)]
pub struct ArmPrior {
    mean: DVector<f64>,
    covariance: DMatrix<f64>,
    /// Lower Cholesky factor of C + jitter·I, for prior draws.
    factor: DMatrix<f64>,
    jitter: f64,
}

impl ArmPrior {
    /// Checks sizes, finiteness and symmetry (to 1e-9 of the largest diagonal entry; the
    /// matrix is then symmetrised), and that C is positive semi-definite up to the jitter
    /// retries of the GP (1e-8 to 1e-6 times the mean diagonal entry).
    pub fn new(mean: DVector<f64>, covariance: DMatrix<f64>) -> Result<ArmPrior, PriorError> {
        let m = mean.len();
        if covariance.nrows() != m {
            return Err(PriorError::Size {
                expected: m,
                found: covariance.nrows(),
            });
        }
        if covariance.ncols() != m {
            return Err(PriorError::Size {
                expected: m,
                found: covariance.ncols(),
            });
        }
        if !mean.iter().chain(covariance.iter()).all(|v| v.is_finite()) {
            return Err(PriorError::NotFinite);
        }
        let scale = covariance.diagonal().amax().max(f64::MIN_POSITIVE);
        for j in 0..m {
            for i in j + 1..m {
                if (covariance[(i, j)] - covariance[(j, i)]).abs() > SYMMETRY_TOLERANCE * scale {
                    return Err(PriorError::Asymmetric { row: i, column: j });
                }
            }
        }
        let covariance = (&covariance + covariance.transpose()) * 0.5;
        if covariance.diagonal().iter().any(|&v| v < 0.0) {
            return Err(PriorError::NotPositiveSemidefinite);
        }
        let mean_diagonal = (covariance.trace() / m.max(1) as f64).max(f64::MIN_POSITIVE);
        let (factor, jitter) = factorise_with_jitter(&covariance, mean_diagonal)
            .map_err(|_| PriorError::NotPositiveSemidefinite)?;
        Ok(ArmPrior {
            mean,
            covariance,
            factor,
            jitter,
        })
    }

    /// Number of arms.
    pub fn len(&self) -> usize {
        self.mean.len()
    }

    pub fn is_empty(&self) -> bool {
        self.mean.is_empty()
    }

    /// Bytes of heap memory the prior holds: its mean, covariance and factor.
    pub fn heap_bytes(&self) -> usize {
        std::mem::size_of::<f64>() * (self.covariance.len() + self.factor.len() + self.mean.len())
    }

    pub fn mean(&self) -> &DVector<f64> {
        &self.mean
    }

    pub fn covariance(&self) -> &DMatrix<f64> {
        &self.covariance
    }

    /// Jitter added to C's diagonal for its factor (0 when none was needed).
    pub fn jitter(&self) -> f64 {
        self.jitter
    }

    /// One draw f ~ N(μ₀, C + jitter·I) over all arms.
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> DVector<f64> {
        let z = DVector::from_fn(self.len(), |_, _| StandardNormal.sample(rng));
        &self.mean + &self.factor * z
    }
}

/// The posterior of an [`ArmPrior`] after noisy observations of arms (see the module
/// documentation for the stored form).
#[derive(Clone, Debug)]
pub struct ArmGp {
    prior: Arc<ArmPrior>,
    noise_variance: f64,
    arms: Vec<usize>,
    values: Vec<f64>,
    /// Rows of L; row k has k + 1 entries.
    factor_rows: Vec<Vec<f64>>,
    /// w = L⁻¹(y − μ₀(X)).
    whitened: Vec<f64>,
    /// Rows of B = L⁻¹ C_{X,·}.
    cross_rows: Vec<Vec<f64>>,
    /// Posterior mean at every arm.
    posterior_mean: Vec<f64>,
    /// Σ_k B_{k,a}² at every arm.
    explained: Vec<f64>,
}

impl ArmGp {
    /// The prior itself (no observations). `noise_variance` must be > 0; below
    /// [`JITTER_START`] times the prior's mean variance it is raised to that floor (the
    /// smallest jitter of the GP's factorisations), so that the rank-one updates stay
    /// well conditioned however small a noise a session states (docs/prior-selection.md).
    pub fn new(prior: Arc<ArmPrior>, noise_variance: f64) -> ArmGp {
        debug_assert!(noise_variance > 0.0);
        let m = prior.len();
        let mean_variance = prior.covariance.trace() / m.max(1) as f64;
        let noise_variance = noise_variance.max(JITTER_START * mean_variance);
        ArmGp {
            posterior_mean: prior.mean.iter().copied().collect(),
            explained: vec![0.0; m],
            prior,
            noise_variance,
            arms: Vec::new(),
            values: Vec::new(),
            factor_rows: Vec::new(),
            whitened: Vec::new(),
            cross_rows: Vec::new(),
        }
    }

    pub fn prior(&self) -> &Arc<ArmPrior> {
        &self.prior
    }

    /// Bytes of heap memory the posterior itself holds (the prior is shared and not
    /// counted), from the allocations' capacities: L's and B's rows and the vectors.
    pub fn heap_bytes(&self) -> usize {
        rows_heap_bytes(&self.factor_rows)
            + rows_heap_bytes(&self.cross_rows)
            + self.arms.capacity() * std::mem::size_of::<usize>()
            + std::mem::size_of::<f64>()
                * (self.values.capacity()
                    + self.whitened.capacity()
                    + self.posterior_mean.capacity()
                    + self.explained.capacity())
    }

    pub fn noise_variance(&self) -> f64 {
        self.noise_variance
    }

    /// Number of observations.
    pub fn len(&self) -> usize {
        self.arms.len()
    }

    pub fn is_empty(&self) -> bool {
        self.arms.is_empty()
    }

    /// Number of arms.
    pub fn arm_count(&self) -> usize {
        self.prior.len()
    }

    /// Posterior mean at every arm.
    pub fn means(&self) -> &[f64] {
        &self.posterior_mean
    }

    /// Posterior mean μ_t(a).
    pub fn mean(&self, arm: usize) -> f64 {
        self.posterior_mean[arm]
    }

    /// Latent posterior variance σ_t²(a) (without noise), clamped at 0.
    pub fn variance(&self, arm: usize) -> f64 {
        (self.prior.covariance[(arm, arm)] - self.explained[arm]).max(0.0)
    }

    /// ln N(y; μ_t(a), σ_t²(a) + σ²): the log predictive density of a new observation,
    /// the factor of 003 Algorithm 2's hyperposterior update.
    /// The standardised residual is formed before it is squared, so that the density
    /// overflows only when it is below every f64 (−∞ then, never NaN).
    pub fn log_predictive_density(&self, arm: usize, y: f64) -> f64 {
        let variance = self.variance(arm) + self.noise_variance;
        let z = (y - self.mean(arm)) / variance.sqrt();
        -0.5 * ((2.0 * std::f64::consts::PI).ln() + variance.ln() + z * z)
    }

    /// Conditions on y observed at `arm`, in O(n·m). `arm` must be < the arm count and y
    /// finite.
    pub fn push(&mut self, arm: usize, y: f64) {
        debug_assert!(arm < self.arm_count() && y.is_finite());
        // Column `arm` of B is L⁻¹ C_{X,arm}: the new row of L without its diagonal.
        let mut row: Vec<f64> = self.cross_rows.iter().map(|b| b[arm]).collect();
        let pivot = (self.variance(arm) + self.noise_variance).sqrt();
        row.push(pivot);
        let whitened = (y - self.posterior_mean[arm]) / pivot;
        // (C_{arm,·} − Σ_k L_{n,k} B_{k,·}) / pivot, one row of B at a time (contiguous);
        // C is exactly symmetric, so its column `arm` is row `arm`.
        let mut cross: Vec<f64> = self.prior.covariance.column(arm).iter().copied().collect();
        for (b, l) in self.cross_rows.iter().zip(&row) {
            for (value, b) in cross.iter_mut().zip(b) {
                *value -= l * b;
            }
        }
        cross.iter_mut().for_each(|value| *value /= pivot);
        for ((mean, explained), b) in self
            .posterior_mean
            .iter_mut()
            .zip(&mut self.explained)
            .zip(&cross)
        {
            *mean += b * whitened;
            *explained += b * b;
        }
        self.arms.push(arm);
        self.values.push(y);
        self.factor_rows.push(row);
        self.whitened.push(whitened);
        self.cross_rows.push(cross);
    }

    /// Conditions on the posterior mean at `arm` (GP-BUCB's hallucinated observation:
    /// the mean stays, the variance shrinks).
    pub fn hallucinate(&mut self, arm: usize) {
        self.push(arm, self.posterior_mean[arm]);
    }

    /// One joint draw of the latent objective at every arm from the posterior, by
    /// Matheron's rule (module documentation).
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> DVector<f64> {
        let mut draw = self.prior.sample(rng);
        let noise = self.noise_variance.sqrt();
        // y − μ₀(X) − (f(X) − μ₀(X)) − ε, whitened by L⁻¹ as w is.
        let mut residual: Vec<f64> = self
            .arms
            .iter()
            .zip(&self.values)
            .map(|(&arm, y)| {
                let epsilon: f64 = StandardNormal.sample(rng);
                y - draw[arm] - noise * epsilon
            })
            .collect();
        for k in 0..residual.len() {
            let row = &self.factor_rows[k];
            let partial: f64 = row[..k]
                .iter()
                .zip(&residual[..k])
                .map(|(l, u)| l * u)
                .sum();
            residual[k] = (residual[k] - partial) / row[k];
        }
        for (b, u) in self.cross_rows.iter().zip(&residual) {
            for (d, bj) in draw.iter_mut().zip(b) {
                *d += bj * u;
            }
        }
        draw
    }

    /// The posterior covariance over all arms, C − BᵀB, in O(n·m²) (diagnostics and tests).
    pub fn covariance(&self) -> DMatrix<f64> {
        let mut c = self.prior.covariance.clone();
        for b in &self.cross_rows {
            let b = DVector::from_column_slice(b);
            c.ger(-1.0, &b, &b, 1.0);
        }
        c
    }
}

/// The posterior of an [`ArmPrior`] times a temporal correlation,
/// k((a,t),(a',t')) = C_{aa'}·k_T(|t − t'|/l_T) (TV-GP-UCB, paper 000 Eq. (7)–(8), with a
/// given prior as the spatial kernel). Every query time changes the cross-covariances, so
/// this form keeps the n × n factor: O(n³) to build, O(n²) per (arm, time) query.
#[derive(Clone, Debug)]
pub struct TimeVaryingArmGp {
    prior: Arc<ArmPrior>,
    temporal: KernelKind,
    temporal_lengthscale: f64,
    arms: Vec<usize>,
    times: Vec<f64>,
    /// Lower Cholesky factor of K + σ²I (+ jitter).
    factor: DMatrix<f64>,
    /// (K + σ²I)⁻¹(y − μ₀(X)).
    alpha: DVector<f64>,
    log_marginal_likelihood: f64,
}

impl TimeVaryingArmGp {
    /// Conditions the prior on `observations` (arm, time, value); arms must be in range
    /// and values finite, `noise_variance` and `temporal_lengthscale` > 0.
    pub fn new(
        prior: Arc<ArmPrior>,
        temporal: KernelKind,
        temporal_lengthscale: f64,
        noise_variance: f64,
        observations: &[(usize, f64, f64)],
    ) -> Result<TimeVaryingArmGp, super::GpError> {
        let n = observations.len();
        let c = &prior.covariance;
        let correlation =
            |a: f64, b: f64| temporal.correlation((a - b).abs() / temporal_lengthscale);
        let mut k = DMatrix::from_fn(n, n, |i, j| {
            let (ai, ti, _) = observations[i];
            let (aj, tj, _) = observations[j];
            c[(ai, aj)] * correlation(ti, tj)
        });
        for i in 0..n {
            k[(i, i)] += noise_variance;
        }
        let scale = (k.trace() / n.max(1) as f64).max(f64::MIN_POSITIVE);
        let (factor, _) = factorise_with_jitter(&k, scale)?;
        let residual: Vec<f64> = observations
            .iter()
            .map(|&(a, _, y)| y - prior.mean[a])
            .collect();
        let mut alpha = residual.clone();
        super::linalg::forward_solve(&factor, &mut alpha);
        let quadratic: f64 = alpha.iter().map(|v| v * v).sum();
        super::linalg::backward_solve_transposed(&factor, &mut alpha);
        let log_determinant: f64 = (0..n).map(|i| factor[(i, i)].ln()).sum::<f64>() * 2.0;
        let log_marginal_likelihood =
            -0.5 * (quadratic + log_determinant + n as f64 * (2.0 * std::f64::consts::PI).ln());
        Ok(TimeVaryingArmGp {
            prior,
            temporal,
            temporal_lengthscale,
            arms: observations.iter().map(|o| o.0).collect(),
            times: observations.iter().map(|o| o.1).collect(),
            factor,
            alpha: DVector::from_vec(alpha),
            log_marginal_likelihood,
        })
    }

    /// Number of observations.
    pub fn len(&self) -> usize {
        self.arms.len()
    }

    pub fn is_empty(&self) -> bool {
        self.arms.is_empty()
    }

    /// Number of arms.
    pub fn arm_count(&self) -> usize {
        self.prior.len()
    }

    /// ln p(y | prior, l_T, σ²).
    /// The prior the posterior conditions.
    pub fn prior(&self) -> &Arc<ArmPrior> {
        &self.prior
    }

    /// Bytes of heap memory the posterior itself holds (the prior is shared and not
    /// counted): the arms, times, the n × n factor and α.
    pub fn heap_bytes(&self) -> usize {
        self.arms.capacity() * std::mem::size_of::<usize>()
            + std::mem::size_of::<f64>()
                * (self.times.capacity() + self.factor.len() + self.alpha.len())
    }

    pub fn log_marginal_likelihood(&self) -> f64 {
        self.log_marginal_likelihood
    }

    pub fn temporal_lengthscale(&self) -> f64 {
        self.temporal_lengthscale
    }

    /// Posterior mean and latent variance (clamped at 0) of the objective at (arm, t).
    pub fn predict(&self, arm: usize, t: f64) -> (f64, f64) {
        let c = &self.prior.covariance;
        let mut cross: Vec<f64> = self
            .arms
            .iter()
            .zip(&self.times)
            .map(|(&a, &ti)| {
                c[(a, arm)]
                    * self
                        .temporal
                        .correlation((ti - t).abs() / self.temporal_lengthscale)
            })
            .collect();
        let mean = self.prior.mean[arm]
            + cross
                .iter()
                .zip(self.alpha.iter())
                .map(|(k, a)| k * a)
                .sum::<f64>();
        super::linalg::forward_solve(&self.factor, &mut cross);
        let explained: f64 = cross.iter().map(|v| v * v).sum();
        (mean, (c[(arm, arm)] - explained).max(0.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{RngExt, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    fn points(m: usize) -> Vec<Vec<f64>> {
        (0..m)
            .map(|i| vec![i as f64 * 0.7, (i as f64).sin()])
            .collect()
    }

    fn kernel_prior(kernel: PriorKernel, m: usize) -> ArmPrior {
        let params = KernelPriorParams {
            kernel,
            lengthscale: 1.3,
            variance: 1.7,
            period: 2.5,
            alpha: 0.5,
        };
        let mean = DVector::from_fn(m, |i, _| 0.1 * i as f64 - 0.3);
        ArmPrior::new(mean, params.matrix(&points(m))).unwrap()
    }

    /// Dense posterior: μ₀ + C_{·X}(K + σ²I)⁻¹(y − μ₀(X)) and C − C_{·X}(K + σ²I)⁻¹C_{X·}.
    fn dense_posterior(
        prior: &ArmPrior,
        noise: f64,
        arms: &[usize],
        ys: &[f64],
    ) -> (DVector<f64>, DMatrix<f64>) {
        let n = arms.len();
        let m = prior.len();
        let c = prior.covariance();
        let k = DMatrix::from_fn(n, n, |i, j| {
            c[(arms[i], arms[j])] + if i == j { noise } else { 0.0 }
        });
        let inverse = k.try_inverse().unwrap();
        let cross = DMatrix::from_fn(m, n, |a, i| c[(a, arms[i])]);
        let residual = DVector::from_fn(n, |i, _| ys[i] - prior.mean()[arms[i]]);
        let mean = prior.mean() + &cross * &inverse * residual;
        let covariance = c - &cross * &inverse * cross.transpose();
        (mean, covariance)
    }

    #[test]
    fn posterior_matches_a_dense_solve_for_every_kernel() {
        for kernel in [
            PriorKernel::Matern12,
            PriorKernel::Matern32,
            PriorKernel::Matern52,
            PriorKernel::Rbf,
            PriorKernel::Periodic,
            PriorKernel::Linear,
            PriorKernel::Rq,
        ] {
            let prior = Arc::new(kernel_prior(kernel, 9));
            let noise = 0.05;
            let mut rng = ChaCha8Rng::seed_from_u64(3);
            let mut gp = ArmGp::new(prior.clone(), noise);
            let mut arms = Vec::new();
            let mut ys = Vec::new();
            // Repeated arms included.
            for _ in 0..14 {
                let arm = rng.random_range(0..9);
                let y: f64 = rng.random::<f64>() * 2.0 - 1.0;
                gp.push(arm, y);
                arms.push(arm);
                ys.push(y);
            }
            let (mean, covariance) = dense_posterior(&prior, noise, &arms, &ys);
            for a in 0..9 {
                assert!((gp.mean(a) - mean[a]).abs() < 1e-8, "{kernel:?} mean {a}");
                assert!(
                    (gp.variance(a) - covariance[(a, a)].max(0.0)).abs() < 1e-8,
                    "{kernel:?} variance {a}"
                );
            }
            assert!((gp.covariance() - covariance).amax() < 1e-8, "{kernel:?}");
        }
    }

    #[test]
    fn log_predictive_density_is_the_gaussian_density() {
        let prior = Arc::new(kernel_prior(PriorKernel::Rbf, 5));
        let mut gp = ArmGp::new(prior, 0.1);
        gp.push(1, 0.4);
        let (mean, variance) = (gp.mean(3), gp.variance(3) + 0.1);
        let y = 0.9;
        let direct = (-(y - mean) * (y - mean) / (2.0 * variance)).exp()
            / (2.0 * std::f64::consts::PI * variance).sqrt();
        assert!((gp.log_predictive_density(3, y) - direct.ln()).abs() < 1e-12);
    }

    #[test]
    fn hallucination_keeps_the_mean_and_shrinks_the_variance() {
        let prior = Arc::new(kernel_prior(PriorKernel::Matern52, 6));
        let mut gp = ArmGp::new(prior, 0.01);
        gp.push(0, 1.0);
        let before: Vec<f64> = gp.means().to_vec();
        let variance = gp.variance(4);
        gp.hallucinate(4);
        for (a, b) in gp.means().iter().zip(&before) {
            assert!((a - b).abs() < 1e-12);
        }
        assert!(gp.variance(4) < variance);
    }

    #[test]
    fn samples_have_the_posterior_mean_and_covariance() {
        let prior = Arc::new(kernel_prior(PriorKernel::Matern32, 6));
        let noise = 0.2;
        let mut gp = ArmGp::new(prior.clone(), noise);
        let observations = [(0, 0.5), (2, -0.3), (2, -0.1), (5, 1.2)];
        for (arm, y) in observations {
            gp.push(arm, y);
        }
        let arms: Vec<usize> = observations.iter().map(|o| o.0).collect();
        let ys: Vec<f64> = observations.iter().map(|o| o.1).collect();
        let (mean, covariance) = dense_posterior(&prior, noise, &arms, &ys);
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let draws = 40_000;
        let m = prior.len();
        let mut sum = DVector::zeros(m);
        let mut outer = DMatrix::zeros(m, m);
        for _ in 0..draws {
            let s = gp.sample(&mut rng);
            outer += &s * s.transpose();
            sum += s;
        }
        let sample_mean = &sum / f64::from(draws);
        let sample_covariance = &outer / f64::from(draws) - &sample_mean * sample_mean.transpose();
        for i in 0..m {
            let sd = covariance[(i, i)].sqrt();
            // 5 standard errors of a mean of 40 000 draws.
            assert!(
                (sample_mean[i] - mean[i]).abs() < 5.0 * sd / f64::from(draws).sqrt(),
                "mean {i}"
            );
            for j in 0..m {
                let scale = (covariance[(i, i)] * covariance[(j, j)]).sqrt();
                // The standard error of a sample covariance is about scale·√(2/N).
                assert!(
                    (sample_covariance[(i, j)] - covariance[(i, j)]).abs()
                        < 5.0 * scale * (2.0 / f64::from(draws)).sqrt() + 10.0 * prior.jitter(),
                    "covariance ({i}, {j})"
                );
            }
        }
    }

    #[test]
    fn smooth_kernels_on_dense_grids_factorise_with_jitter() {
        // 003 §5: SE with lengthscale 4 on 500 evenly spaced arms in [0, 20].
        let points: Vec<Vec<f64>> = (0..500).map(|i| vec![20.0 * i as f64 / 499.0]).collect();
        let params = KernelPriorParams {
            kernel: PriorKernel::Rbf,
            lengthscale: 4.0,
            variance: 1.0,
            period: 1.0,
            alpha: 1.0,
        };
        let prior = ArmPrior::new(DVector::zeros(500), params.matrix(&points)).unwrap();
        assert!(prior.jitter() > 0.0 && prior.jitter() <= 1e-6);
        let draw = prior.sample(&mut ChaCha8Rng::seed_from_u64(4));
        assert!(draw.iter().all(|v| v.is_finite() && v.abs() < 10.0));
    }

    #[test]
    fn invalid_priors_are_rejected_with_the_reason() {
        let mean = DVector::zeros(2);
        let asymmetric = DMatrix::from_row_slice(2, 2, &[1.0, 0.5, 0.4, 1.0]);
        assert_eq!(
            ArmPrior::new(mean.clone(), asymmetric).unwrap_err(),
            PriorError::Asymmetric { row: 1, column: 0 }
        );
        let indefinite = DMatrix::from_row_slice(2, 2, &[1.0, 2.0, 2.0, 1.0]);
        assert_eq!(
            ArmPrior::new(mean.clone(), indefinite).unwrap_err(),
            PriorError::NotPositiveSemidefinite
        );
        let wrong_size = DMatrix::identity(3, 3);
        assert_eq!(
            ArmPrior::new(mean.clone(), wrong_size).unwrap_err(),
            PriorError::Size {
                expected: 2,
                found: 3
            }
        );
        let not_finite = DMatrix::from_row_slice(2, 2, &[1.0, f64::NAN, f64::NAN, 1.0]);
        assert_eq!(
            ArmPrior::new(mean.clone(), not_finite).unwrap_err(),
            PriorError::NotFinite
        );
        // Rank-deficient but positive semi-definite: accepted with jitter.
        let singular = DMatrix::from_row_slice(2, 2, &[1.0, 1.0, 1.0, 1.0]);
        let prior = ArmPrior::new(mean, singular).unwrap();
        assert!(prior.jitter() > 0.0);
    }

    #[test]
    fn time_varying_posterior_matches_a_dense_solve() {
        let prior = Arc::new(kernel_prior(PriorKernel::Matern52, 7));
        let noise = 0.03;
        let lengthscale = 6.0;
        let observations = [
            (0, 0.0, 0.4),
            (3, 1.5, -0.2),
            (3, 4.0, 0.1),
            (6, 9.0, 0.8),
            (2, 9.5, 0.0),
        ];
        let gp = TimeVaryingArmGp::new(
            prior.clone(),
            KernelKind::Matern12,
            lengthscale,
            noise,
            &observations,
        )
        .unwrap();
        let kernel = |a: usize, s: f64, b: usize, t: f64| {
            prior.covariance()[(a, b)] * (-(s - t).abs() / lengthscale).exp()
        };
        let n = observations.len();
        let k = DMatrix::from_fn(n, n, |i, j| {
            let (a, s, _) = observations[i];
            let (b, t, _) = observations[j];
            kernel(a, s, b, t) + if i == j { noise } else { 0.0 }
        });
        let inverse = k.clone().try_inverse().unwrap();
        let residual = DVector::from_fn(n, |i, _| {
            observations[i].2 - prior.mean()[observations[i].0]
        });
        for arm in 0..7 {
            let t = 11.0;
            let cross = DVector::from_fn(n, |i, _| {
                kernel(observations[i].0, observations[i].1, arm, t)
            });
            let mean = prior.mean()[arm] + (cross.transpose() * &inverse * &residual)[(0, 0)];
            let variance = kernel(arm, t, arm, t) - (cross.transpose() * &inverse * &cross)[(0, 0)];
            let (m, v) = gp.predict(arm, t);
            assert!(
                (m - mean).abs() < 1e-9 && (v - variance).abs() < 1e-9,
                "arm {arm}"
            );
        }
        let quadratic = (residual.transpose() * &inverse * &residual)[(0, 0)];
        let direct = -0.5
            * (quadratic + k.determinant().ln() + n as f64 * (2.0 * std::f64::consts::PI).ln());
        assert!((gp.log_marginal_likelihood() - direct).abs() < 1e-9);
    }
}
