//! Joint posterior samples on finite sets, for Thompson sampling over arms (Sandberg &
//! Chehreghani, paper 003, Algorithms 1 and 2: "sample f̃ ~ GP_p(μ_{t−1}, k_{t−1})" on the
//! arm set).
//!
//! Memory is O(m²) for m points (the posterior covariance and its Cholesky factor) and
//! the set-up costs O(n²m + nm² + m³); sampling costs O(m²) per draw.

use nalgebra::{DMatrix, DVector};
use rand::Rng;
use rand_distr::{Distribution, StandardNormal};

use super::linalg;
use super::model::{Gp, GpError, factorise_with_jitter};

/// The joint posterior of the latent objective at m points and one time.
#[derive(Clone, Debug)]
pub struct JointPosterior {
    mean: DVector<f64>,
    covariance: DMatrix<f64>,
    /// Lower Cholesky factor of the covariance plus `jitter`·I.
    factor: DMatrix<f64>,
    jitter: f64,
}

impl JointPosterior {
    /// Mean K*ᵀα and covariance K** − VᵀV with V = L⁻¹K* at (points, t). The covariance is
    /// factorised with the jitter retries of [`Gp::new`] (it is only positive
    /// semi-definite where points repeat or coincide with noiseless data).
    pub fn new(gp: &Gp, points: &[Vec<f64>], t: f64) -> Result<JointPosterior, GpError> {
        let m = points.len();
        let n = gp.len();
        if let Some(bad) = points.iter().find(|p| p.len() != gp.dim()) {
            return Err(GpError::DimensionMismatch {
                expected: gp.dim(),
                found: bad.len(),
            });
        }
        let mut cross = DMatrix::from_fn(n, m, |i, j| {
            gp.kernel(&gp.xs()[i], gp.ts()[i], &points[j], t)
        });
        let mean = cross.tr_mul(gp.alpha());
        if n > 0 {
            linalg::forward_solve_matrix(gp.cholesky_factor(), &mut cross);
        }
        let mut covariance = DMatrix::from_fn(m, m, |i, j| gp.kernel(&points[i], t, &points[j], t));
        if n > 0 {
            covariance -= cross.tr_mul(&cross);
        }
        // Symmetrise away the round-off of the product.
        let covariance = (&covariance + covariance.transpose()) * 0.5;
        let (factor, jitter) =
            factorise_with_jitter(&covariance, gp.hyperparameters().signal_variance)?;
        Ok(JointPosterior {
            mean,
            covariance,
            factor,
            jitter,
        })
    }

    /// Number of points.
    pub fn len(&self) -> usize {
        self.mean.len()
    }

    pub fn is_empty(&self) -> bool {
        self.mean.is_empty()
    }

    /// Posterior mean at each point.
    pub fn mean(&self) -> &DVector<f64> {
        &self.mean
    }

    /// Posterior covariance between the points.
    pub fn covariance(&self) -> &DMatrix<f64> {
        &self.covariance
    }

    /// Jitter added to the covariance's diagonal for the factorisation (0 when none was needed).
    pub fn jitter(&self) -> f64 {
        self.jitter
    }

    /// One joint draw: mean + L z, z ~ N(0, I).
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> DVector<f64> {
        let z = DVector::from_fn(self.len(), |_, _| StandardNormal.sample(rng));
        &self.mean + &self.factor * z
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gp::{Hyperparameters, KernelKind, KernelSpec};
    use rand::{RngExt, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    fn gp() -> Gp {
        let mut rng = ChaCha8Rng::seed_from_u64(9);
        let xs: Vec<Vec<f64>> = (0..12).map(|_| vec![rng.random::<f64>()]).collect();
        let ts: Vec<f64> = (0..12).map(f64::from).collect();
        let ys: Vec<f64> = xs.iter().map(|x| (5.0 * x[0]).sin()).collect();
        Gp::new(
            KernelSpec {
                spatial: KernelKind::Matern52,
                temporal: Some(KernelKind::Matern32),
            },
            Hyperparameters {
                signal_variance: 1.3,
                spatial_lengthscale: 0.25,
                temporal_lengthscale: 20.0,
                noise_variance: 0.01,
            },
            1,
            xs,
            ts,
            ys,
        )
        .unwrap()
    }

    fn arms() -> Vec<Vec<f64>> {
        (0..6).map(|i| vec![f64::from(i) / 5.0]).collect()
    }

    #[test]
    fn mean_and_covariance_match_the_marginal_predictions_and_a_dense_solve() {
        let gp = gp();
        let arms = arms();
        let joint = JointPosterior::new(&gp, &arms, 12.0).unwrap();
        // Dense: K*ᵀ (K+σ²I)⁻¹ y and K** − K*ᵀ (K+σ²I)⁻¹ K*.
        let n = gp.len();
        let hyper = gp.hyperparameters();
        let k = DMatrix::from_fn(n, n, |i, j| {
            gp.kernel(&gp.xs()[i], gp.ts()[i], &gp.xs()[j], gp.ts()[j])
                + if i == j { hyper.noise_variance } else { 0.0 }
        });
        let inverse = k.try_inverse().unwrap();
        let cross = DMatrix::from_fn(n, arms.len(), |i, j| {
            gp.kernel(&gp.xs()[i], gp.ts()[i], &arms[j], 12.0)
        });
        let y = DVector::from_column_slice(gp.ys());
        let mean = cross.transpose() * &inverse * y;
        let prior = DMatrix::from_fn(arms.len(), arms.len(), |i, j| {
            gp.kernel(&arms[i], 12.0, &arms[j], 12.0)
        });
        let covariance = prior - cross.transpose() * &inverse * &cross;
        assert!((joint.mean() - mean).amax() < 1e-8);
        assert!((joint.covariance() - covariance).amax() < 1e-8);
        for (i, arm) in arms.iter().enumerate() {
            let (m, v) = gp.predict(arm, 12.0);
            assert!((joint.mean()[i] - m).abs() < 1e-8);
            assert!((joint.covariance()[(i, i)] - v).abs() < 1e-8);
        }
    }

    #[test]
    fn samples_have_the_posterior_mean_and_covariance() {
        let gp = gp();
        let joint = JointPosterior::new(&gp, &arms(), 14.0).unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let draws = 40_000;
        let m = joint.len();
        let mut sum = DVector::zeros(m);
        let mut outer = DMatrix::zeros(m, m);
        for _ in 0..draws {
            let s = joint.sample(&mut rng);
            outer += &s * s.transpose();
            sum += s;
        }
        let mean = &sum / f64::from(draws);
        let covariance = &outer / f64::from(draws) - &mean * mean.transpose();
        for i in 0..m {
            let sd = joint.covariance()[(i, i)].sqrt();
            // 5 standard errors of a mean of 40 000 draws.
            assert!(
                (mean[i] - joint.mean()[i]).abs() < 5.0 * sd / f64::from(draws).sqrt(),
                "mean {i}"
            );
            for j in 0..m {
                let scale = (joint.covariance()[(i, i)] * joint.covariance()[(j, j)]).sqrt();
                // The standard error of a sample covariance is about scale·√(2/N).
                assert!(
                    (covariance[(i, j)] - joint.covariance()[(i, j)]).abs()
                        < 5.0 * scale * (2.0 / f64::from(draws)).sqrt(),
                    "covariance ({i}, {j})"
                );
            }
        }
    }

    #[test]
    fn repeated_points_are_sampled_with_jitter() {
        let gp = gp();
        let points = vec![vec![0.5], vec![0.5], vec![0.5]];
        let joint = JointPosterior::new(&gp, &points, 12.0).unwrap();
        assert!(joint.jitter() > 0.0);
        let s = joint.sample(&mut ChaCha8Rng::seed_from_u64(2));
        assert!(s.iter().all(|v| v.is_finite()));
        assert!((s[0] - s[1]).abs() < 1e-2);
    }
}
