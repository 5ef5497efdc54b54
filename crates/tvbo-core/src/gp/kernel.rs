//! Stationary correlation functions used in space and in time.
//!
//! Every correlation is a function of the scaled distance `r = d / lengthscale >= 0`
//! and equals 1 at `r = 0`. The full kernel is
//! `k((x,t),(x',t')) = λ · k_S(‖x−x'‖/l_S) · k_T(|t−t'|/l_T)` with `k_T ≡ 1` when the
//! spec has no temporal kernel.

use serde::{Deserialize, Serialize};

use super::categories::Categories;

pub use crate::domain::kernel::KernelKind;

const SQRT3: f64 = 1.732_050_807_568_877_2;
const SQRT5: f64 = 2.236_067_977_499_79;

/// `$body` with `$kind` bound to `$value` as a constant of each kind in turn (one arm
/// per kind, each a copy of `$body`), so that a loop in `$body` has its kind fixed
/// outside it and vectorises.
macro_rules! with_constant_kind {
    ($value:expr, |$kind:ident| $body:expr) => {
        with_constant_kind!(@arms $value, $kind, $body, Matern12 Matern32 Matern52 Rbf)
    };
    (@arms $value:expr, $kind:ident, $body:expr, $($each:ident)*) => {
        match $value {
            $(KernelKind::$each => {
                let $kind = KernelKind::$each;
                $body
            })*
        }
    };
}

impl KernelKind {
    /// Correlation k(r) of the scaled distance r = d / lengthscale >= 0, with k(0) = 1.
    pub fn correlation(self, r: f64) -> f64 {
        match self {
            KernelKind::Matern12 => (-r).exp(),
            KernelKind::Matern32 => {
                let a = SQRT3 * r;
                (1.0 + a) * (-a).exp()
            }
            KernelKind::Matern52 => {
                let a = SQRT5 * r;
                (1.0 + a + a * a / 3.0) * (-a).exp()
            }
            KernelKind::Rbf => (-0.5 * r * r).exp(),
        }
    }

    /// dk/dr. For Matérn-1/2 at r = 0 this is the one-sided derivative −1.
    pub fn derivative(self, r: f64) -> f64 {
        match self {
            KernelKind::Matern12 => -(-r).exp(),
            KernelKind::Matern32 => -3.0 * r * (-SQRT3 * r).exp(),
            KernelKind::Matern52 => {
                let a = SQRT5 * r;
                -(5.0 / 3.0) * r * (1.0 + a) * (-a).exp()
            }
            KernelKind::Rbf => -r * (-0.5 * r * r).exp(),
        }
    }

    /// (dk/dr) / r, the factor that turns a distance gradient into an input gradient:
    /// ∂k/∂x = (dk/dr / r) · (x − x') / l². Finite at r = 0 for every kind except
    /// Matérn-1/2, whose gradient is undefined there; this returns 0 for it (a valid
    /// subgradient by symmetry).
    pub fn derivative_over_r(self, r: f64) -> f64 {
        let (_, _, q) = self.factors(r);
        self.derivative_over_r_factor(r) * (-q).exp()
    }

    /// (p, q) of [`Self::factors`] alone: k(r) = p·e^{−q}.
    pub(crate) fn correlation_factors(self, r: f64) -> (f64, f64) {
        let (p, _, q) = self.factors(r);
        (p, q)
    }

    /// m(r)/r of [`Self::factors`], so that [`Self::derivative_over_r`] is this times
    /// e^{−q(r)}; 0 for Matérn-1/2 at r = 0, as there.
    pub(crate) fn derivative_over_r_factor(self, r: f64) -> f64 {
        match self {
            KernelKind::Matern12 => {
                if r > 0.0 {
                    -1.0 / r
                } else {
                    0.0
                }
            }
            KernelKind::Matern32 => -3.0,
            KernelKind::Matern52 => -(5.0 / 3.0) * (1.0 + SQRT5 * r),
            KernelKind::Rbf => -1.0,
        }
    }

    /// Splits k(r) = p(r)·e^{−q(r)} and dk/dr = m(r)·e^{−q(r)}, returning (p, m, q), so
    /// that products of kernels need a single exponential.
    pub(crate) fn factors(self, r: f64) -> (f64, f64, f64) {
        match self {
            KernelKind::Matern12 => (1.0, -1.0, r),
            KernelKind::Matern32 => {
                let a = SQRT3 * r;
                (1.0 + a, -3.0 * r, a)
            }
            KernelKind::Matern52 => {
                let a = SQRT5 * r;
                (1.0 + a + a * a / 3.0, -(5.0 / 3.0) * r * (1.0 + a), a)
            }
            KernelKind::Rbf => (1.0, -r, 0.5 * r * r),
        }
    }

    /// [`Self::factors`] of every scaled distance r = distances[i]·inverse_lengthscale:
    /// p(r), m(r)·r and q(r) into the three outputs (each as long as `distances`). One
    /// loop per kind, so that each vectorises.
    #[inline(always)]
    pub(crate) fn factors_into(
        self,
        distances: &[f64],
        inverse_lengthscale: f64,
        p: &mut [f64],
        m_times_r: &mut [f64],
        q: &mut [f64],
    ) {
        with_constant_kind!(self, |kind| {
            for i in 0..distances.len() {
                let r = distances[i] * inverse_lengthscale;
                let (pi, mi, qi) = kind.factors(r);
                p[i] = pi;
                m_times_r[i] = mi * r;
                q[i] = qi;
            }
        })
    }

    /// A kernel column's spatial factors (`gp::model::kernel_column`): for each i, with
    /// r = √squared[i] / lengthscale, q(r) of [`Self::correlation_factors`] replaces
    /// `squared[i]`, p(r) goes to `p[i]` and, with `slope`,
    /// [`Self::derivative_over_r_factor`] to `slope[i]`. One loop per kind, so that each
    /// vectorises; the same values as those functions one point at a time.
    #[inline(always)]
    pub(crate) fn spatial_factors_into(
        self,
        squared: &mut [f64],
        lengthscale: f64,
        p: &mut [f64],
        slope: Option<&mut [f64]>,
    ) {
        let p = &mut p[..squared.len()];
        with_constant_kind!(self, |kind| match slope {
            Some(slope) => {
                let slope = &mut slope[..squared.len()];
                for i in 0..squared.len() {
                    let r = squared[i].sqrt() / lengthscale;
                    (p[i], squared[i]) = kind.correlation_factors(r);
                    slope[i] = kind.derivative_over_r_factor(r);
                }
            }
            None => {
                for i in 0..squared.len() {
                    let r = squared[i].sqrt() / lengthscale;
                    (p[i], squared[i]) = kind.correlation_factors(r);
                }
            }
        })
    }

    /// A kernel column's temporal factors: for each i, with r = |t − ts[i]| / lengthscale
    /// and (p(r), q(r)) of [`Self::correlation_factors`], `q[i]` += q(r), and `p[i]` and,
    /// with `slope`, `slope[i]` are multiplied by p(r). One loop per kind, as
    /// [`Self::spatial_factors_into`].
    #[inline(always)]
    pub(crate) fn temporal_factors_into(
        self,
        t: f64,
        ts: &[f64],
        lengthscale: f64,
        q: &mut [f64],
        p: &mut [f64],
        slope: Option<&mut [f64]>,
    ) {
        let (q, p) = (&mut q[..ts.len()], &mut p[..ts.len()]);
        with_constant_kind!(self, |kind| match slope {
            Some(slope) => {
                let slope = &mut slope[..ts.len()];
                for i in 0..ts.len() {
                    let (pt, qt) = kind.correlation_factors((t - ts[i]).abs() / lengthscale);
                    q[i] += qt;
                    p[i] *= pt;
                    slope[i] *= pt;
                }
            }
            None => {
                for i in 0..ts.len() {
                    let (pt, qt) = kind.correlation_factors((t - ts[i]).abs() / lengthscale);
                    q[i] += qt;
                    p[i] *= pt;
                }
            }
        })
    }

    /// Correlation and dk/dr together, sharing the exponential.
    pub fn correlation_and_derivative(self, r: f64) -> (f64, f64) {
        match self {
            KernelKind::Matern12 => {
                let e = (-r).exp();
                (e, -e)
            }
            KernelKind::Matern32 => {
                let a = SQRT3 * r;
                let e = (-a).exp();
                ((1.0 + a) * e, -3.0 * r * e)
            }
            KernelKind::Matern52 => {
                let a = SQRT5 * r;
                let e = (-a).exp();
                (
                    (1.0 + a + a * a / 3.0) * e,
                    -(5.0 / 3.0) * r * (1.0 + a) * e,
                )
            }
            KernelKind::Rbf => {
                let e = (-0.5 * r * r).exp();
                (e, -r * e)
            }
        }
    }
}

/// The squared Euclidean distance between `a` and `b`.
pub(crate) fn squared_distance(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(p, q)| (p - q) * (p - q)).sum()
}

/// Which correlation is used in space and (optionally) in time, and which inputs are
/// categorical.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct KernelSpec {
    /// Correlation of the Euclidean distance between the continuous coordinates of
    /// inputs in `[0,1]^d`.
    pub spatial: KernelKind,
    /// Correlation of the time difference; `None` means the model ignores time (k_T ≡ 1).
    pub temporal: Option<KernelKind>,
    /// The categorical coordinates, under the overlap kernel exp(−h/l_C)
    /// ([`super::categories`]); none by default.
    #[serde(default, skip_serializing_if = "Categories::is_empty")]
    pub categories: Categories,
}

impl Default for KernelSpec {
    /// Matérn-5/2 in space × Matérn-3/2 in time, the design's default.
    fn default() -> Self {
        KernelSpec::new(KernelKind::Matern52, Some(KernelKind::Matern32))
    }
}

impl KernelSpec {
    /// These correlations over continuous inputs.
    pub fn new(spatial: KernelKind, temporal: Option<KernelKind>) -> KernelSpec {
        KernelSpec {
            spatial,
            temporal,
            categories: Categories::default(),
        }
    }

    /// The same kernel with these categorical coordinates.
    pub fn with_categories(self, categories: Categories) -> KernelSpec {
        KernelSpec { categories, ..self }
    }

    /// The squared distance between the continuous coordinates of `a` and `b`, and the
    /// number of categorical coordinates whose choices differ (0 without categories).
    pub fn distances(&self, a: &[f64], b: &[f64]) -> (f64, f64) {
        if self.categories.is_empty() {
            (squared_distance(a, b), 0.0)
        } else {
            self.categories.split_distance(a, b)
        }
    }

    /// The temporal correlation at scaled time distance `r`; 1 when there is no temporal kernel.
    pub fn temporal_correlation(&self, r: f64) -> f64 {
        self.temporal.map_or(1.0, |k| k.correlation(r))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nalgebra::DMatrix;
    use rand::{RngExt, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    #[test]
    fn correlation_is_one_at_zero_and_decreasing() {
        for k in KernelKind::ALL {
            assert!((k.correlation(0.0) - 1.0).abs() < 1e-15);
            let mut prev = 1.0;
            for i in 1..100 {
                let c = k.correlation(i as f64 * 0.1);
                assert!(c < prev && c > 0.0);
                prev = c;
            }
        }
    }

    #[test]
    fn derivative_matches_finite_differences() {
        let h = 1e-6;
        for k in KernelKind::ALL {
            for i in 1..60 {
                let r = i as f64 * 0.07;
                let fd = (k.correlation(r + h) - k.correlation(r - h)) / (2.0 * h);
                let d = k.derivative(r);
                assert!((fd - d).abs() < 1e-8, "{k:?} r={r}: {fd} vs {d}");
                assert!((k.derivative_over_r(r) * r - d).abs() < 1e-12);
                let (c2, d2) = k.correlation_and_derivative(r);
                assert_eq!(c2, k.correlation(r));
                assert!((d2 - d).abs() < 1e-15);
                let (p, m, q) = k.factors(r);
                assert!((p * (-q).exp() - c2).abs() < 1e-15);
                assert!((m * (-q).exp() - d).abs() < 1e-15);
                let over_r = k.derivative_over_r_factor(r) * (-q).exp();
                assert!((over_r - d / r).abs() < 1e-13, "{k:?} r={r}");
                let distances = [r, 2.0 * r];
                let (mut p2, mut mr2, mut q2) = ([0.0; 2], [0.0; 2], [0.0; 2]);
                k.factors_into(&distances, 0.5, &mut p2, &mut mr2, &mut q2);
                let (p1, m1, q1) = k.factors(r);
                assert_eq!((p2[1], mr2[1], q2[1]), (p1, m1 * r, q1));
            }
            // The limit of (dk/dr)/r at 0 (0 for Matérn-1/2, whose gradient is undefined).
            let at_zero = match k {
                KernelKind::Matern12 => 0.0,
                KernelKind::Matern32 => -3.0,
                KernelKind::Matern52 => -5.0 / 3.0,
                KernelKind::Rbf => -1.0,
            };
            assert_eq!(k.derivative_over_r(0.0), at_zero);
        }
    }

    #[test]
    fn serialises_lowercase() {
        let s = serde_json::to_string(&KernelKind::ALL).unwrap();
        assert_eq!(s, r#"["matern12","matern32","matern52","rbf"]"#);
        let back: Vec<KernelKind> = serde_json::from_str(&s).unwrap();
        assert_eq!(back, KernelKind::ALL.to_vec());
    }

    #[test]
    fn product_kernels_are_positive_definite() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let temporals = [
            None,
            Some(KernelKind::Matern12),
            Some(KernelKind::Matern32),
            Some(KernelKind::Matern52),
            Some(KernelKind::Rbf),
        ];
        for spatial in KernelKind::ALL {
            for temporal in temporals {
                let spec = KernelSpec::new(spatial, temporal);
                for dim in [1usize, 3] {
                    let n = 40;
                    let xs: Vec<Vec<f64>> = (0..n)
                        .map(|_| (0..dim).map(|_| rng.random::<f64>()).collect())
                        .collect();
                    let ts: Vec<f64> = (0..n).map(|_| rng.random::<f64>() * 10.0).collect();
                    let k = DMatrix::from_fn(n, n, |i, j| {
                        let d: f64 = xs[i]
                            .iter()
                            .zip(&xs[j])
                            .map(|(a, b)| (a - b) * (a - b))
                            .sum::<f64>()
                            .sqrt();
                        spatial.correlation(d / 0.3)
                            * spec.temporal_correlation((ts[i] - ts[j]).abs() / 4.0)
                    });
                    let min_eig = k.clone().symmetric_eigenvalues().min();
                    assert!(min_eig >= -1e-10, "{spec:?} d={dim}: {min_eig}");
                    let jittered = k + DMatrix::identity(n, n) * 1e-10;
                    assert!(jittered.cholesky().is_some(), "{spec:?} d={dim}");
                }
            }
        }
    }
}
