//! Failed runs as data of the model (`model.failures: impute`).
//!
//! A failed run (a crash, a timeout) has no value, but it says that its setting is a bad
//! one at its time. Open-source Vizier's GP bandit (Song et al. 2024, arXiv 2408.11527;
//! `InfeasibleWarperComponent` in google/vizier's output warpers) turns each infeasible
//! trial into a data point of the GP with a value below every feasible one: the worst
//! feasible value less half the feasible values' range, less one unit of its warped,
//! roughly standardised scale. We impute the same on the objective's scale, with the
//! successes' standard deviation as that unit. The GP then predicts low values around a
//! failed setting, so UCB's acquisition and the posterior mean's maximiser (the
//! recommendation) move away from it, and a failure costs what an observation costs:
//! O(n²) per point added, no second model to fit.
//!
//! Time: a failed run keeps the time it failed at, so the time-varying kernel forgets it
//! as it forgets an observation of that time. The forgetting algorithms (BOLT, W-DBO,
//! R-GP-UCB, ET-GP-UCB) decide over the observations alone; the model takes the newest
//! failed runs measured no earlier than its oldest active observation, at most as many as
//! it has active observations. So a reset or a forgotten past takes the failures of that
//! past with it, and failures at most double the dataset a policy bounds.

use crate::policy::Observation;

/// The sequence number of an imputed failed run among the observations: none of the
/// store's (they count from 1), so a policy that names observations by seq never names
/// one of these.
pub const FAILED_RUN_SEQ: i64 = 0;

/// The value imputed to a failed run given the successes' values `ys` (internal,
/// larger-is-better scale): min − (max − min)/2 − s, with s the values' standard
/// deviation (1 when they do not vary, as the model's standardisation takes it). None
/// without successes.
pub fn imputed_value(ys: &[f64]) -> Option<f64> {
    if ys.is_empty() {
        return None;
    }
    let n = ys.len() as f64;
    let min = ys.iter().copied().fold(f64::INFINITY, f64::min);
    let max = ys.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let mean = ys.iter().sum::<f64>() / n;
    let sd = (ys.iter().map(|y| (y - mean).powi(2)).sum::<f64>() / n).sqrt();
    let unit = if sd > 1e-12 * mean.abs().max(1.0) {
        sd
    } else {
        1.0
    };
    Some(min - 0.5 * (max - min) - unit)
}

/// `data`, a session's active observations, followed by the failed runs `failed` (unit
/// point and time of each, in order of recording) that the model takes: the newest ones
/// measured no earlier than the oldest observation, at most `data.len()`, each at
/// [`imputed_value`] of `data` with seq [`FAILED_RUN_SEQ`]. `data` unchanged when it is
/// empty.
pub fn with_failures(mut data: Vec<Observation>, failed: &[(Vec<f64>, f64)]) -> Vec<Observation> {
    let ys: Vec<f64> = data.iter().map(|o| o.y).collect();
    let Some(y) = imputed_value(&ys) else {
        return data;
    };
    let oldest = data.iter().map(|o| o.t).fold(f64::INFINITY, f64::min);
    let recent: Vec<&(Vec<f64>, f64)> = failed.iter().filter(|(_, t)| *t >= oldest).collect();
    let taken = &recent[recent.len().saturating_sub(data.len())..];
    data.extend(taken.iter().map(|(x, t)| Observation {
        seq: FAILED_RUN_SEQ,
        x: x.clone(),
        t: *t,
        y,
    }));
    data
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obs(x: f64, t: f64, y: f64) -> Observation {
        Observation {
            seq: 1,
            x: vec![x],
            t,
            y,
        }
    }

    /// Against the definition computed the long way: below the minimum by half the range
    /// and one standard deviation.
    #[test]
    fn imputed_value_is_below_every_success_by_half_the_range_and_a_deviation() {
        let ys = [0.2, 0.5, 0.9, -0.1, 0.4];
        let mean = ys.iter().sum::<f64>() / 5.0;
        let sd = (ys.iter().map(|y| (y - mean) * (y - mean)).sum::<f64>() / 5.0).sqrt();
        let expected = -0.1 - 0.5 * (0.9 - -0.1) - sd;
        let got = imputed_value(&ys).unwrap();
        assert!((got - expected).abs() < 1e-15, "{got} vs {expected}");
        assert!(ys.iter().all(|&y| got < y));
        // Equal values: one unit below them; one value: the same.
        assert_eq!(imputed_value(&[3.0, 3.0]), Some(2.0));
        assert_eq!(imputed_value(&[-7.0]), Some(-8.0));
        assert_eq!(imputed_value(&[]), None);
    }

    #[test]
    fn the_newest_failures_since_the_oldest_observation_at_most_as_many_as_observations() {
        let data = vec![obs(0.1, 5.0, 1.0), obs(0.2, 6.0, 2.0)];
        let failed: Vec<(Vec<f64>, f64)> = [(0.9, 4.0), (0.8, 5.0), (0.7, 7.0), (0.6, 8.0)]
            .iter()
            .map(|&(x, t)| (vec![x], t))
            .collect();
        let all = with_failures(data.clone(), &failed);
        assert_eq!(&all[..2], &data[..]);
        let imputed: Vec<(f64, f64)> = all[2..].iter().map(|o| (o.x[0], o.t)).collect();
        // (0.9, 4.0) is older than every observation; (0.8, 5.0) is beyond the two.
        assert_eq!(imputed, vec![(0.7, 7.0), (0.6, 8.0)]);
        let y = imputed_value(&[1.0, 2.0]).unwrap();
        assert!(all[2..].iter().all(|o| o.y == y && o.seq == FAILED_RUN_SEQ));
        // No observations: nothing to impute from.
        assert!(with_failures(Vec::new(), &failed).is_empty());
    }
}
