//! BOLT (Bardou & Thiran, paper 002, Section 4, Algorithm 1): spatio-temporal GP-UCB that
//! keeps at most n* observations, where n* maximises Σ_{i=1..n} k_T²(i·R(n)) (their
//! Eq. (8)–(9)) for the measured response time R(n), and forgets, while the dataset is
//! larger, the observation whose removal moves the posterior least in integrated
//! Wasserstein distance (Section 3.4, W-DBO's relevance).

use super::{
    BuildPolicy, ObserveContext, Policy, PolicyError, PolicyState, RemovalReason, SessionPolicy,
    model_after,
};
use crate::domain::algorithm::bolt::Bolt;
use crate::domain::checked::CheckedConfig;
use crate::domain::config::Beta;
use crate::gp::KernelKind;
use crate::gp::relevance::Relevance;
use crate::policy::response_time::{fit_response_time, response_time_at};

/// Σ_{i=1..n} k_T²(i·R/l_T) (Eq. (8)–(9) with k_T normalised to k_T(0) = 1), stopping once
/// the terms fall below 1e-18 of the running sum (they only decrease with i).
fn information(kind: KernelKind, temporal_lengthscale: f64, n: u64, response_time: f64) -> f64 {
    let step = response_time / temporal_lengthscale;
    let mut sum = 0.0;
    for i in 1..=n {
        let term = kind.correlation(i as f64 * step).powi(2);
        sum += term;
        if term <= 1e-18 * sum {
            break;
        }
    }
    sum
}

/// n* = argmax over n in [min, max] of u(n) = Σ_{i=1..n} k_T²(i·R(n)/l_T) (Eq. (9)).
/// 002 (Section 4, after Eq. (9)) shows that the relaxed objective has a unique maximum,
/// so n* is where Δu(n) = u(n+1) − u(n) changes sign; it is found by bisection on that
/// sign, O(log(max − min)) evaluations of u, each O(n), instead of a scan of every n. On
/// ties (once further terms no longer change the sum in f64, as with a constant R) the
/// largest maximiser wins: the paper recommends an unbounded dataset for a constant
/// response time; where u has underflowed to 0 (R(n) many lengthscales long) the
/// smaller n wins. A non-positive R(n) is taken as 1 µs.
pub fn optimal_dataset_size(
    kind: KernelKind,
    temporal_lengthscale: f64,
    response_time: impl Fn(f64) -> f64,
    min: u64,
    max: u64,
) -> u64 {
    let u = |n: u64| {
        information(
            kind,
            temporal_lengthscale,
            n,
            response_time(n as f64).max(1e-6),
        )
    };
    // Invariant: u does not decrease before `low`, and n* lies in [low, high].
    let (mut low, mut high) = (min, max.max(min));
    while low < high {
        let middle = low + (high - low) / 2;
        let (here, next) = (u(middle), u(middle + 1));
        // A tie at 0 is R(n) so long that every term underflows: n* lies to the left.
        if next > here || (next == here && here > 0.0) {
            low = middle + 1;
        } else {
            high = middle;
        }
    }
    low
}

impl Bolt {
    /// n* of the session's response-time samples and temporal lengthscale; the upper bound
    /// until R(n) can be fitted (four distinct n).
    pub fn dataset_size(&self, ctx: &ObserveContext<'_>, state: &PolicyState) -> u64 {
        let temporal = ctx.model.temporal_kernel.unwrap_or(KernelKind::Matern32);
        match (fit_response_time(ctx.response_times), state.hyperparameters) {
            (Some(coefficients), Some(hyper)) => optimal_dataset_size(
                temporal,
                hyper.temporal_lengthscale,
                |n| response_time_at(&coefficients, n),
                self.min_dataset_size,
                self.max_dataset_size,
            ),
            _ => self.max_dataset_size,
        }
    }
}

impl Policy for Bolt {
    fn beta(&self) -> Beta {
        self.beta
    }

    /// Algorithm 1, lines 8–11: after adding the observations, while |D| > n*, remove
    /// argmin_o W2(GP_D, GP_{D∖o}).
    fn observe(
        &self,
        ctx: &ObserveContext<'_>,
        state: &mut PolicyState,
    ) -> Result<Vec<(i64, RemovalReason)>, PolicyError> {
        let (mut data, surrogate) = model_after(self, ctx, state)?;
        let limit = self.dataset_size(ctx, state);
        state.max_dataset_size = Some(limit);
        let mut removed = Vec::new();
        if data.len() as u64 <= limit {
            return Ok(removed);
        }
        let mut relevance = Relevance::new(surrogate.gp(), ctx.t)?;
        while data.len() as u64 > limit {
            let Some((index, _)) = relevance.least_relevant() else {
                break;
            };
            removed.push((data.remove(index).seq, RemovalReason::Relevance));
            relevance.remove(index);
        }
        Ok(removed)
    }
}

impl BuildPolicy for Bolt {
    /// BOLT with n* confined to [min_dataset_size, max_dataset_size].
    fn session_policy(&self, _config: &CheckedConfig) -> SessionPolicy {
        SessionPolicy::Surrogate(Box::new(self.clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The brute-force sum, without early stopping.
    fn full_information(kind: KernelKind, l: f64, n: u64, r: f64) -> f64 {
        (1..=n)
            .map(|i| kind.correlation(i as f64 * r / l).powi(2))
            .sum()
    }

    #[test]
    fn optimal_size_matches_a_brute_force_scan_and_falls_with_cost() {
        for kind in KernelKind::ALL {
            let mut previous = u64::MAX;
            for b in [1e-9, 1e-8, 1e-7, 1e-6, 1e-5] {
                let response = |n: f64| 0.1 + b * n * n * n;
                let fast = optimal_dataset_size(kind, 60.0, response, 1, 1500);
                let brute = (1..=1500u64)
                    .max_by(|&m, &n| {
                        full_information(kind, 60.0, m, response(m as f64))
                            .total_cmp(&full_information(kind, 60.0, n, response(n as f64)))
                    })
                    .unwrap();
                assert_eq!(fast, brute, "{kind:?} b = {b}");
                assert!(fast <= previous, "{kind:?}: n* grew with b = {b}");
                previous = fast;
            }
            assert!(
                previous < optimal_dataset_size(kind, 60.0, |n| 0.1 + 1e-9 * n * n * n, 1, 1500)
            );
        }
    }

    /// Bisection finds the scan's maximiser for every temporal kernel over a spread of
    /// lengthscales and cubic response times (seeded, 200 cases).
    #[test]
    fn bisection_agrees_with_a_scan_on_random_response_times() {
        use rand::{RngExt, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(9);
        for case in 0..200 {
            let kind = KernelKind::ALL[case % KernelKind::ALL.len()];
            let lengthscale = 10f64.powf(rng.random_range(-0.5..3.0));
            let coefficients: [f64; 4] = [
                10f64.powf(rng.random_range(-3.0..0.5)),
                10f64.powf(rng.random_range(-7.0..-2.0)),
                10f64.powf(rng.random_range(-9.0..-4.0)),
                10f64.powf(rng.random_range(-12.0..-6.0)),
            ];
            let response = |n: f64| {
                coefficients[0]
                    + n * (coefficients[1] + n * (coefficients[2] + n * coefficients[3]))
            };
            let value = |n: u64| information(kind, lengthscale, n, response(n as f64));
            let scan = (15..=800u64)
                .fold((15, f64::NEG_INFINITY), |best, n| {
                    let v = value(n);
                    if v >= best.1 { (n, v) } else { best }
                })
                .0;
            let bisection = optimal_dataset_size(kind, lengthscale, response, 15, 800);
            assert_eq!(
                bisection, scan,
                "case {case}: {kind:?} l = {lengthscale}, R = {coefficients:?}"
            );
        }
    }

    #[test]
    fn constant_response_time_keeps_everything() {
        assert_eq!(
            optimal_dataset_size(KernelKind::Matern32, 10.0, |_| 0.5, 15, 400),
            400
        );
    }
}
