//! A session's time axis: session time (seconds since creation on the wall clock, or the
//! client's own axis) and the lead a suggestion targets.

use chrono::{DateTime, Utc};

use crate::domain::InvalidInput;
use crate::domain::config::TimeSource;

/// Session time in seconds of a wall-clock instant.
pub fn wall_time(created_at: DateTime<Utc>, at: DateTime<Utc>) -> f64 {
    (at - created_at).num_microseconds().unwrap_or(i64::MAX) as f64 * 1e-6
}

/// Largest session time accepted from a client: about 317 years in seconds.
pub const MAX_CLIENT_TIME: f64 = 1e10;

/// Resolves the session time of a request from its optional client `t`.
///
/// Wall-clock sessions reject a client `t`; client-time sessions require one, finite and
/// within ±[`MAX_CLIENT_TIME`].
pub fn resolve_time(
    source: TimeSource,
    client_t: Option<f64>,
    created_at: DateTime<Utc>,
    now: DateTime<Utc>,
    field: &str,
) -> Result<f64, InvalidInput> {
    match (source, client_t) {
        (TimeSource::Wall, None) => Ok(wall_time(created_at, now)),
        (TimeSource::Wall, Some(_)) => Err(InvalidInput::new(
            field,
            "this session uses wall-clock time; leave t out (or create the session with time.source = \"client\")",
        )),
        (TimeSource::Client, None) => Err(InvalidInput::new(
            field,
            "is required: this session uses client time",
        )),
        (TimeSource::Client, Some(t)) if !t.is_finite() || t.abs() > MAX_CLIENT_TIME => {
            Err(InvalidInput::new(
                field,
                format!("must be a finite number of seconds within ±{MAX_CLIENT_TIME:e}"),
            ))
        }
        (TimeSource::Client, Some(t)) => Ok(t),
    }
}

/// The median of the delays between handing out a suggestion and measuring it; 0 when
/// none is known. Negative delays (clock skew, replays) count as 0.
pub fn median_lead(delays: &[f64]) -> f64 {
    let mut sorted: Vec<f64> = delays
        .iter()
        .filter(|d| d.is_finite())
        .map(|d| d.max(0.0))
        .collect();
    if sorted.is_empty() {
        return 0.0;
    }
    sorted.sort_by(f64::total_cmp);
    let mid = sorted.len() / 2;
    if sorted.len() % 2 == 1 {
        sorted[mid]
    } else {
        0.5 * (sorted[mid - 1] + sorted[mid])
    }
}

/// An exponential back-off between retries: the `attempt`-th wait (from 1) is at most
/// `first`·2^(attempt−1), capped at `max`, and `jitter` takes part of it at random, so
/// that replicas (or receivers) recovering together do not retry in step.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Backoff {
    pub first: std::time::Duration,
    pub max: std::time::Duration,
    pub jitter: Jitter,
}

/// Which part of a back-off's ceiling a wait is drawn from, uniformly.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Jitter {
    /// [0, ceiling] ("full jitter"): waits that collided spread the most.
    Full,
    /// [¾·ceiling, ceiling]: close to the schedule a person reads.
    Quarter,
}

impl Backoff {
    /// The longest wait after the `attempt`-th failure: `first`·2^(attempt−1), at most
    /// `max` (attempt 0 reads as 1).
    pub fn ceiling(&self, attempt: u32) -> std::time::Duration {
        let doublings = attempt.saturating_sub(1).min(62) as i32;
        let seconds = self.first.as_secs_f64() * 2f64.powi(doublings);
        std::time::Duration::from_secs_f64(seconds.min(self.max.as_secs_f64()))
    }

    /// The wait after the `attempt`-th failure, with `u` uniform in [0, 1) (the caller's
    /// randomness).
    pub fn wait(&self, attempt: u32, u: f64) -> std::time::Duration {
        let ceiling = self.ceiling(attempt);
        match self.jitter {
            Jitter::Full => ceiling.mul_f64(u),
            Jitter::Quarter => ceiling.mul_f64(1.0 - 0.25 * u),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_lead_of_odd_even_and_empty() {
        assert_eq!(median_lead(&[]), 0.0);
        assert_eq!(median_lead(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median_lead(&[4.0, 1.0, 2.0, -5.0]), 1.5);
    }

    #[test]
    fn client_time_rules() {
        let now = Utc::now();
        assert!(resolve_time(TimeSource::Wall, Some(1.0), now, now, "t").is_err());
        assert!(resolve_time(TimeSource::Client, None, now, now, "t").is_err());
        assert!(resolve_time(TimeSource::Client, Some(f64::INFINITY), now, now, "t").is_err());
        assert_eq!(
            resolve_time(TimeSource::Client, Some(5.0), now, now, "t").unwrap(),
            5.0
        );
    }

    #[test]
    fn a_backoff_doubles_to_its_cap_and_jitters_below_it() {
        use std::time::Duration;
        let full = Backoff {
            first: Duration::from_millis(5),
            max: Duration::from_millis(500),
            jitter: Jitter::Full,
        };
        let ceilings: Vec<u128> = (1..=9).map(|a| full.ceiling(a).as_micros()).collect();
        assert_eq!(
            ceilings,
            [
                5_000, 10_000, 20_000, 40_000, 80_000, 160_000, 320_000, 500_000, 500_000
            ]
        );
        assert_eq!(full.ceiling(0), full.ceiling(1));
        assert_eq!(full.wait(3, 0.0), Duration::ZERO);
        assert_eq!(full.wait(3, 0.5), Duration::from_millis(10));
        let quarter = Backoff {
            first: Duration::from_secs(1),
            max: Duration::from_secs(3600),
            jitter: Jitter::Quarter,
        };
        assert_eq!(quarter.ceiling(40), Duration::from_secs(3600));
        assert_eq!(quarter.wait(3, 0.0), Duration::from_secs(4));
        assert_eq!(quarter.wait(3, 1.0), Duration::from_secs(3));
    }
}
