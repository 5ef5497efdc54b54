//! BOLT's response-time model R(n) (Bardou & Thiran, Section 4): a cubic in the dataset
//! size fitted to measured (n, seconds) samples.

use nalgebra::{DMatrix, DVector};

use crate::domain::records::ResponseTimeSummary;

/// Least-squares cubic R̂(n) = c0 + c1 n + c2 n² + c3 n³ through the (n, seconds)
/// samples summarised by `summaries` (Bardou & Thiran, Section 4: "a 3rd-degree
/// polynomial regression"), constrained to c1, c2, c3 ≥ 0 so that R̂ never decreases
/// with n, as a response time must not (their Definition 3.5 (ii)). `None` with fewer
/// than four samples or fewer than four distinct n.
///
/// The samples of one n enter through their count and mean: Σ_i (y_i − R̂(n))² over them
/// is count·(mean − R̂(n))² plus a term R̂ does not change, so this is the least-squares
/// fit of every sample, from one row per distinct n.
///
/// The constrained problem has three sign constraints, so it is solved exactly by trying
/// every set of active constraints (8 least-squares problems) and keeping the best
/// feasible one. n is rescaled to `[0, 1]` for conditioning; the coefficients returned are
/// for n in its own units.
pub fn fit_response_time(summaries: &[ResponseTimeSummary]) -> Option<[f64; 4]> {
    let rows: Vec<&ResponseTimeSummary> = summaries.iter().filter(|s| s.count > 0).collect();
    let samples: i64 = rows.iter().map(|s| s.count).sum();
    let mut distinct: Vec<i64> = rows.iter().map(|s| s.n).collect();
    distinct.sort_unstable();
    distinct.dedup();
    if samples < 4 || distinct.len() < 4 {
        return None;
    }
    let scale = (distinct.last().copied().unwrap_or(1) as f64).max(1.0);
    let weight: Vec<f64> = rows.iter().map(|s| (s.count as f64).sqrt()).collect();
    let target = DVector::from_iterator(
        rows.len(),
        rows.iter().zip(&weight).map(|(s, w)| w * s.mean_seconds()),
    );
    let mut best: Option<([f64; 4], f64)> = None;
    for free_mask in 0u8..8 {
        let powers: Vec<i32> = std::iter::once(0)
            .chain((1..=3).filter(|p| free_mask & (1 << (p - 1)) != 0))
            .collect();
        let design = DMatrix::from_fn(rows.len(), powers.len(), |i, j| {
            weight[i] * (rows[i].n as f64 / scale).powi(powers[j])
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
    use crate::domain::records::ResponseTimeSample;

    /// The summaries of (n, seconds) samples, as the store keeps them.
    fn summarise(samples: &[(f64, f64)]) -> Vec<ResponseTimeSummary> {
        let mut summaries = Vec::new();
        for &(n, seconds) in samples {
            ResponseTimeSummary::fold(
                &mut summaries,
                ResponseTimeSample {
                    n: n as i64,
                    seconds,
                },
            );
        }
        summaries
    }

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
        let fit = fit_response_time(&summarise(&samples)).unwrap();
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
        let fit = fit_response_time(&summarise(&samples)).unwrap();
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
        assert!(
            fit_response_time(&summarise(&[
                (1.0, 1.0),
                (1.0, 2.0),
                (2.0, 1.0),
                (3.0, 1.0)
            ]))
            .is_none()
        );
    }

    /// Fitting the summaries is the least-squares fit of every sample: the brute force
    /// (one design row per sample) gives the same coefficients, for many samples per n
    /// with spread, and with a constraint active.
    #[test]
    fn summaries_fit_as_the_samples_do() {
        let mut samples = Vec::new();
        for i in 0..400 {
            let n = f64::from(10 + (i * 7) % 60);
            let noise = ((i * 37) % 11) as f64 * 0.01 - 0.05;
            samples.push((n, 0.2 + 0.003 * n + 2e-6 * n * n * n + noise));
        }
        // A dip that the constraint c1 ≥ 0 must hold up.
        samples.extend((0..30).map(|i| (80.0 + f64::from(i % 3), 0.1)));
        let summaries = summarise(&samples);
        assert!(summaries.len() < samples.len() / 5);
        let from_summaries = fit_response_time(&summaries).unwrap();
        let one_row_each: Vec<ResponseTimeSummary> = samples
            .iter()
            .map(|&(n, seconds)| ResponseTimeSummary {
                n: n as i64,
                count: 1,
                total_seconds: seconds,
            })
            .collect();
        let brute_force = fit_response_time(&one_row_each).unwrap();
        for (a, b) in from_summaries.iter().zip(brute_force) {
            assert!((a - b).abs() <= 1e-9 * b.abs().max(1e-9), "{a} vs {b}");
        }
    }
}
