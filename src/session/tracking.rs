//! Is the session keeping up now? The rolling regret over every observation and a plain
//! status read from the newest regrets (docs/dashboard.md, "Tracking").
//!
//! The cumulative average regret answers "how has it done since the start"; a session
//! that lagged for its first hour and tracks well now still shows the first hour in it.
//! What an operator asks is whether it tracks *now*: the mean regret of the newest
//! [`WINDOW`] observations against the [`WINDOW`] before them.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::domain::config::TimeSource;
use crate::domain::events::{WindowStats, mean};
use crate::store::{RECENT_REGRETS, RegretGroup};

/// Observations per window of the rolling regret and of the status.
pub const WINDOW: usize = (RECENT_REGRETS / 2) as usize;

/// A client-time session's steps are "recent" this long after they were recorded (its
/// session time has no relation to the wall clock).
const CLIENT_TIME_RECENT_SECONDS: f64 = 900.0;
/// How many standard errors of the difference the newest window's mean regret must rise
/// over the window before (and by 10 % of it) for the status to be lagging.
const LAGGING_STANDARD_ERRORS: f64 = 2.0;
/// A wall-clock session is without recent data when its newest step is older than this
/// many of its usual gaps between observations (and a minute).
const USUAL_GAPS: f64 = 10.0;

/// Whether the session keeps close to the moving optimum now.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "kebab-case")]
pub enum TrackingStatus {
    /// The newest window's regret is not significantly above the one before.
    Tracking,
    /// The newest window's regret rose beyond the noise: the optimum is moving away
    /// faster than the session follows.
    Lagging,
    /// No regret yet, or no step for a long while (see `reason`).
    NoRecentData,
}

/// One point of the rolling regret: the mean of the `observations` regrets that end at
/// session time `t`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct RollingRegret {
    pub t: f64,
    pub regret: f64,
    /// How many regrets the mean is over.
    pub observations: i64,
}

/// The session's regret now, beside the cumulative average.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Tracking {
    pub status: TrackingStatus,
    /// Why, in a sentence.
    pub reason: String,
    /// Observations per window.
    pub window: i64,
    /// Mean regret of the newest `window` observations that have one (reported, else
    /// estimated), and of the `window` before them.
    pub recent_regret: Option<f64>,
    pub previous_regret: Option<f64>,
    /// When the newest step was recorded.
    pub last_step_at: Option<DateTime<Utc>>,
    /// The server's time when this was computed: `last_step_at`'s age then is
    /// `as_of − last_step_at`, whatever the reader's clock says.
    pub as_of: DateTime<Utc>,
    /// Seconds without a step after which the status is `no-recent-data`: ten of the
    /// session's usual gaps between observations and at least a minute (wall clock), or
    /// 900 (client time). A page that stays open ages the status by it on its own clock.
    pub stale_after: f64,
    /// The rolling mean regret over every observation: at each observation, the mean of
    /// the newest `window` regrets up to it; past the timeline's point budget, the mean
    /// of each downsampled group of consecutive observations (its `observations`).
    pub rolling: Vec<RollingRegret>,
}

/// An observation of the timeline as [`tracking`] reads it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RegretAt {
    pub seq: i64,
    pub t: f64,
    /// Reported, else estimated; None before any model.
    pub regret: Option<f64>,
}

/// What [`tracking`] reads: the timeline's observations (all of them, or the kept ones
/// with their `groups`), the newest regrets, and the clocks.
pub struct TrackingInput<'a> {
    pub observations: &'a [RegretAt],
    pub groups: &'a [RegretGroup],
    /// (session time, regret) of the newest observations with a regret, newest last.
    pub recent: &'a [(f64, f64)],
    pub last_step_at: Option<DateTime<Utc>>,
    pub time_source: TimeSource,
    pub now: DateTime<Utc>,
}

/// The rolling regret and the status of a session ([`Tracking`]).
pub fn tracking(input: &TrackingInput<'_>) -> Tracking {
    let split = input.recent.len().saturating_sub(WINDOW);
    let (before, newest) = input.recent.split_at(split);
    let before = &before[before.len().saturating_sub(WINDOW)..];
    let regrets = |w: &[(f64, f64)]| w.iter().map(|r| r.1).collect::<Vec<f64>>();
    let (newest, before) = (regrets(newest), regrets(before));
    let stale_after = stale_after(input);
    let (status, reason) = status(input, stale_after, &newest, &before);
    Tracking {
        status,
        reason,
        window: WINDOW as i64,
        recent_regret: mean(&newest),
        previous_regret: mean(&before),
        last_step_at: input.last_step_at,
        as_of: input.now,
        stale_after,
        rolling: rolling(input.observations, input.groups),
    }
}

/// [`Tracking::stale_after`].
fn stale_after(input: &TrackingInput<'_>) -> f64 {
    match input.time_source {
        TimeSource::Client => CLIENT_TIME_RECENT_SECONDS,
        TimeSource::Wall => {
            usual_gap(input.recent).map_or(60.0, |gap| (USUAL_GAPS * gap).max(60.0))
        }
    }
}

fn status(
    input: &TrackingInput<'_>,
    stale_after: f64,
    newest: &[f64],
    before: &[f64],
) -> (TrackingStatus, String) {
    let Some(last) = input.last_step_at else {
        return (TrackingStatus::NoRecentData, "no step yet".into());
    };
    let idle = (input.now - last).as_seconds_f64();
    if idle > stale_after {
        return (
            TrackingStatus::NoRecentData,
            format!("no step for {}", duration(idle)),
        );
    }
    if newest.is_empty() {
        return (
            TrackingStatus::NoRecentData,
            "no regret yet: the client reports none and the model has not fitted".into(),
        );
    }
    // The rule of the `tracking-lost` event at a lower threshold (a status shown, not an
    // event sent: docs/events.md), on the newest regrets, not once per window.
    let windows = WindowStats::of(newest).zip(WindowStats::of(before));
    match windows {
        Some((recent, earlier)) if recent.rose_beyond(&earlier, LAGGING_STANDARD_ERRORS) => {
            let (rise, noise) = recent.rise_over(&earlier);
            (
                TrackingStatus::Lagging,
                format!(
                    "the newest {} regrets average {:.4}, above the {} before by {:.1} standard \
                     errors",
                    newest.len(),
                    recent.mean,
                    before.len(),
                    rise / noise.max(f64::MIN_POSITIVE)
                ),
            )
        }
        _ => (
            TrackingStatus::Tracking,
            format!(
                "the newest {} regrets are not above the ones before",
                newest.len()
            ),
        ),
    }
}

/// The median gap of session time between the newest observations with a regret.
fn usual_gap(recent: &[(f64, f64)]) -> Option<f64> {
    let mut gaps: Vec<f64> = recent.windows(2).map(|w| w[1].0 - w[0].0).collect();
    if gaps.is_empty() {
        return None;
    }
    gaps.sort_by(f64::total_cmp);
    Some(gaps[gaps.len() / 2])
}

fn duration(seconds: f64) -> String {
    match seconds {
        s if s < 120.0 => format!("{s:.0} s"),
        s if s < 7200.0 => format!("{:.0} min", s / 60.0),
        s if s < 172_800.0 => format!("{:.1} h", s / 3600.0),
        s => format!("{:.1} d", s / 86400.0),
    }
}

/// Every observation's window mean ([`WINDOW`] regrets up to it) when `groups` is empty
/// (the timeline holds them all); else each group's mean, at its last observation's time.
fn rolling(observations: &[RegretAt], groups: &[RegretGroup]) -> Vec<RollingRegret> {
    if groups.is_empty() {
        let regrets: Vec<(f64, f64)> = observations
            .iter()
            .filter_map(|o| Some((o.t, o.regret?)))
            .collect();
        let mut sum = 0.0;
        return regrets
            .iter()
            .enumerate()
            .map(|(i, &(t, regret))| {
                sum += regret;
                if i >= WINDOW {
                    sum -= regrets[i - WINDOW].1;
                }
                let n = (i + 1).min(WINDOW);
                RollingRegret {
                    t,
                    regret: sum / n as f64,
                    observations: n as i64,
                }
            })
            .collect();
    }
    groups
        .iter()
        .filter(|g| g.regrets > 0)
        .filter_map(|g| {
            let at = observations
                .binary_search_by_key(&g.last_seq, |o| o.seq)
                .ok()?;
            Some(RollingRegret {
                t: observations[at].t,
                regret: g.regret_sum / g.regrets as f64,
                observations: g.regrets,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn observation(seq: i64, regret: Option<f64>) -> RegretAt {
        RegretAt {
            seq,
            t: seq as f64 * 2.0,
            regret,
        }
    }

    #[test]
    fn the_rolling_regret_is_the_mean_of_the_last_window_at_every_observation() {
        let observations: Vec<RegretAt> = (1..=300)
            .map(|i| observation(i, (i % 7 != 0).then(|| (i as f64 * 0.37).sin().abs())))
            .collect();
        let rolled = rolling(&observations, &[]);
        let with_regret: Vec<&RegretAt> =
            observations.iter().filter(|o| o.regret.is_some()).collect();
        assert_eq!(rolled.len(), with_regret.len());
        // Brute force: the mean of up to WINDOW regrets ending at each.
        for (i, point) in rolled.iter().enumerate() {
            let window = &with_regret[i.saturating_sub(WINDOW - 1)..=i];
            let brute = window.iter().map(|o| o.regret.unwrap()).sum::<f64>() / window.len() as f64;
            assert!((point.regret - brute).abs() < 1e-12, "{i}");
            assert_eq!(point.t, with_regret[i].t);
            assert_eq!(point.observations, window.len() as i64);
        }
    }

    #[test]
    fn downsampled_groups_are_placed_at_their_last_observation() {
        let observations = vec![observation(64, Some(1.0)), observation(128, Some(2.0))];
        let groups = [
            RegretGroup {
                last_seq: 64,
                observations: 64,
                regrets: 32,
                regret_sum: 16.0,
            },
            RegretGroup {
                last_seq: 128,
                observations: 64,
                regrets: 0,
                regret_sum: 0.0,
            },
        ];
        let rolled = rolling(&observations, &groups);
        assert_eq!(
            rolled,
            vec![RollingRegret {
                t: 128.0,
                regret: 0.5,
                observations: 32
            }]
        );
    }

    fn status_of(recent: &[(f64, f64)], idle_seconds: i64, source: TimeSource) -> TrackingStatus {
        let now = DateTime::from_timestamp(1_000_000, 0).unwrap();
        tracking(&TrackingInput {
            observations: &[],
            groups: &[],
            recent,
            last_step_at: Some(now - chrono::Duration::seconds(idle_seconds)),
            time_source: source,
            now,
        })
        .status
    }

    #[test]
    fn a_rise_beyond_the_noise_is_lagging_and_noise_alone_is_not() {
        // Regrets around 1 with noise ±0.5 (deterministic), one per second.
        let noisy = |i: usize, level: f64| {
            (
                i as f64,
                level + 0.5 * ((i * 7919) % 13) as f64 / 12.0 - 0.25,
            )
        };
        let steady: Vec<(f64, f64)> = (0..128).map(|i| noisy(i, 1.0)).collect();
        assert_eq!(
            status_of(&steady, 1, TimeSource::Wall),
            TrackingStatus::Tracking
        );
        let rising: Vec<(f64, f64)> = (0..128)
            .map(|i| noisy(i, if i < 64 { 1.0 } else { 2.0 }))
            .collect();
        assert_eq!(
            status_of(&rising, 1, TimeSource::Wall),
            TrackingStatus::Lagging
        );
        let falling: Vec<(f64, f64)> = (0..128)
            .map(|i| noisy(i, if i < 64 { 2.0 } else { 1.0 }))
            .collect();
        assert_eq!(
            status_of(&falling, 1, TimeSource::Wall),
            TrackingStatus::Tracking
        );
    }

    #[test]
    fn a_long_silence_or_no_regret_is_no_recent_data() {
        let steady: Vec<(f64, f64)> = (0..128).map(|i| (i as f64 * 5.0, 1.0)).collect();
        // Observations every 5 s: 10 gaps is 50 s, so a minute is the floor.
        assert_eq!(
            status_of(&steady, 59, TimeSource::Wall),
            TrackingStatus::Tracking
        );
        assert_eq!(
            status_of(&steady, 61, TimeSource::Wall),
            TrackingStatus::NoRecentData
        );
        assert_eq!(
            status_of(&steady, 800, TimeSource::Client),
            TrackingStatus::Tracking
        );
        assert_eq!(
            status_of(&steady, 1000, TimeSource::Client),
            TrackingStatus::NoRecentData
        );
        assert_eq!(
            status_of(&[], 1, TimeSource::Wall),
            TrackingStatus::NoRecentData
        );
    }
}
