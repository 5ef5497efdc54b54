//! BOLT's response-time model R(n) (Bardou & Thiran, Section 4): a cubic in the dataset
//! size fitted to measured (n, seconds) samples.

use nalgebra::{DMatrix, DVector};

/// Least-squares cubic R̂(n) = c0 + c1 n + c2 n² + c3 n³ through (n, seconds) samples
/// (Bardou & Thiran, Section 4: "a 3rd-degree polynomial regression"),
/// constrained to c1, c2, c3 ≥ 0 so that R̂ never decreases with n, as a response time
/// must not (their Definition 3.5 (ii)). `None` with fewer than four samples or fewer than
/// four distinct n.
///
/// The constrained problem has three sign constraints, so it is solved exactly by trying
/// every set of active constraints (8 least-squares problems) and keeping the best
/// feasible one. n is rescaled to `[0, 1]` for conditioning; the coefficients returned are
/// for n in its own units.
pub fn fit_response_time(samples: &[(f64, f64)]) -> Option<[f64; 4]> {
    let mut distinct: Vec<f64> = samples.iter().map(|s| s.0).collect();
    distinct.sort_by(f64::total_cmp);
    distinct.dedup();
    if samples.len() < 4 || distinct.len() < 4 {
        return None;
    }
    let scale = distinct.last().copied().unwrap_or(1.0).max(1.0);
    let target = DVector::from_iterator(samples.len(), samples.iter().map(|s| s.1));
    let mut best: Option<([f64; 4], f64)> = None;
    for free_mask in 0u8..8 {
        let powers: Vec<i32> = std::iter::once(0)
            .chain((1..=3).filter(|p| free_mask & (1 << (p - 1)) != 0))
            .collect();
        let design = DMatrix::from_fn(samples.len(), powers.len(), |i, j| {
            (samples[i].0 / scale).powi(powers[j])
        });
        let Ok(solution) = design.clone().svd(true, true).solve(&target, 1e-12) else {
            continue;
        };
        if solution.iter().skip(1).any(|c| *c < 0.0) {
            continue;
        }
        let residual = (&design * &solution - &target).norm_squared();
        let mut coefficients = [0.0; 4];
        for (j, &p) in powers.iter().enumerate() {
            coefficients[p as usize] = solution[j] / scale.powi(p);
        }
        if coefficients.iter().all(|c| c.is_finite())
            && best.as_ref().is_none_or(|(_, r)| residual < *r)
        {
            best = Some((coefficients, residual));
        }
    }
    best.map(|(c, _)| c)
}

/// R̂(n) of fitted coefficients.
pub fn response_time_at(coefficients: &[f64; 4], n: f64) -> f64 {
    coefficients[0] + n * (coefficients[1] + n * (coefficients[2] + n * coefficients[3]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cubic_fit_recovers_an_exact_cubic() {
        let truth = [0.5, 0.01, 1e-4, 2e-7];
        let samples: Vec<(f64, f64)> = (1..40)
            .map(|i| {
                let n = (i * 10) as f64;
                (
                    n,
                    truth[0] + truth[1] * n + truth[2] * n * n + truth[3] * n * n * n,
                )
            })
            .collect();
        let fit = fit_response_time(&samples).unwrap();
        for (a, b) in fit.iter().zip(truth) {
            assert!((a - b).abs() <= 1e-8 * b.abs().max(1e-6), "{a} vs {b}");
        }
    }

    #[test]
    fn cubic_fit_never_decreases() {
        // Noisy, with a dip: the unconstrained cubic would decrease somewhere.
        let samples: Vec<(f64, f64)> = (1..60)
            .map(|i| {
                let n = f64::from(i);
                (n, 1.0 + 0.3 * (n / 4.0).sin() + 1e-5 * n * n * n)
            })
            .collect();
        let fit = fit_response_time(&samples).unwrap();
        assert!(fit[1..].iter().all(|c| *c >= 0.0), "{fit:?}");
        let mut previous = f64::NEG_INFINITY;
        for n in 0..200 {
            let r = response_time_at(&fit, f64::from(n));
            assert!(r >= previous);
            previous = r;
        }
    }

    #[test]
    fn cubic_fit_needs_four_distinct_sizes() {
        assert!(fit_response_time(&[(1.0, 1.0), (1.0, 2.0), (2.0, 1.0), (3.0, 1.0)]).is_none());
    }
}
