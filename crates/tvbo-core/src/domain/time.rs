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
}
