//! A session's history as the dashboard draws it: every observation (active or
//! forgotten, with its regret, reported or estimated), every step's snapshot of the
//! model, and the forgetting events; downsampled, keeping extremes, past a point budget.

use std::collections::BTreeMap;

use uuid::Uuid;

use super::error::ServiceError;
use super::service::SessionService;
use super::views::{ForgetEvent, Step, StepList, Timeline, TimelineObservation};
use crate::domain::InvalidInput;
use crate::store::{ObservationRow, StoredCall};

/// Most points a timeline returns per series when the client asks for no other budget.
pub const DEFAULT_TIMELINE_POINTS: i64 = 2000;
/// Bounds of a client's point budget.
pub const TIMELINE_POINTS_RANGE: std::ops::RangeInclusive<i64> = 100..=20_000;

impl SessionService {
    /// A page of the session's steps (suggest and observe calls) with id > `after`.
    pub async fn list_steps(
        &self,
        id: Uuid,
        after: i64,
        limit: i64,
    ) -> Result<StepList, ServiceError> {
        if !(1..=10_000).contains(&limit) {
            return Err(InvalidInput::new("limit", "must be between 1 and 10000").into());
        }
        self.session_row(id).await?;
        let calls = self.store.list_calls(id, after, limit + 1).await?;
        let more = calls.len() as i64 > limit;
        let steps: Vec<Step> = calls
            .into_iter()
            .take(limit as usize)
            .map(Step::from)
            .collect();
        let next_after = more.then(|| steps.last().map(|s| s.id)).flatten();
        Ok(StepList { steps, next_after })
    }

    /// The session's timeline with at most about `points` observations and `points`
    /// steps (the extremes of each bucket kept).
    pub async fn timeline(&self, id: Uuid, points: i64) -> Result<Timeline, ServiceError> {
        if !TIMELINE_POINTS_RANGE.contains(&points) {
            return Err(InvalidInput::new(
                "points",
                format!(
                    "must be between {} and {}",
                    TIMELINE_POINTS_RANGE.start(),
                    TIMELINE_POINTS_RANGE.end()
                ),
            )
            .into());
        }
        let session = self.session_row(id).await?;
        let rows = self.store.list_observations(id, 0, i64::MAX, true).await?;
        let calls = self.store.list_calls(id, 0, i64::MAX).await?;
        let sign = session.config.goal.sign();
        let points = points as usize;
        self.blocking(id, move || build_timeline(rows, calls, sign, points))
            .await
    }
}

/// The timeline of `rows` (in seq order) and `calls` (in order) for a goal of `sign`
/// (+1 maximise, −1 minimise). O(n) in observations and calls, plus the forgetting
/// events' map.
pub fn build_timeline(
    rows: Vec<ObservationRow>,
    calls: Vec<StoredCall>,
    sign: f64,
    points: usize,
) -> Timeline {
    let observation_count = rows.len();
    let step_count = calls.len();
    // The optimum's value as recorded by each suggest, in call order (t ascending for
    // wall-clock sessions; client-time calls may go back, so look up by time below).
    let mut optima: Vec<(f64, f64)> = calls
        .iter()
        .filter_map(|c| {
            let optimum = c.snapshot.as_ref()?.optimum.as_ref()?;
            Some((c.t, optimum.mean))
        })
        .collect();
    optima.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut forgotten: BTreeMap<(u64, String), usize> = BTreeMap::new();
    let observations: Vec<TimelineObservation> = rows
        .into_iter()
        .map(|row| {
            if let (Some(t), Some(reason)) = (row.removed_t, row.removed_reason.as_ref()) {
                *forgotten.entry((t.to_bits(), reason.clone())).or_default() += 1;
            }
            // The estimate: the optimum's value the model recorded at the last suggest at
            // or before the measurement, less the value measured (never below 0).
            let (regret, estimated) = match row.regret {
                Some(r) => (Some(r), false),
                None => {
                    let at = optima.partition_point(|(t, _)| *t <= row.t);
                    let estimate = at
                        .checked_sub(1)
                        .map(|i| (sign * (optima[i].1 - row.value)).max(0.0));
                    (estimate, true)
                }
            };
            TimelineObservation {
                seq: row.seq,
                t: row.t,
                value: row.value,
                params: row.params,
                regret,
                estimated,
                active: row.active,
                removed_t: row.removed_t,
                removed_reason: row.removed_reason,
            }
        })
        .collect();
    let observations = keep_extremes(observations, points, |o| {
        [Some(o.value), o.regret].into_iter().flatten()
    });
    let steps: Vec<Step> = calls.into_iter().map(Step::from).collect();
    let steps = keep_extremes(steps, points, |s| {
        [
            Some(s.dataset_size as f64),
            s.snapshot
                .as_ref()
                .and_then(|snapshot| snapshot.optimum.as_ref())
                .map(|o| o.mean),
        ]
        .into_iter()
        .flatten()
    });
    let mut forgotten: Vec<ForgetEvent> = forgotten
        .into_iter()
        .map(|((t, reason), count)| ForgetEvent {
            t: f64::from_bits(t),
            reason,
            count,
        })
        .collect();
    forgotten.sort_by(|a, b| a.t.total_cmp(&b.t));
    Timeline {
        observation_count,
        step_count,
        observations,
        steps,
        forgotten,
    }
}

/// At most about `budget` of `items`, in order: all of them when they fit; else, per
/// bucket of consecutive items, the first, the last, and those holding the minimum and
/// the maximum of each value `values` gives (so that no spike is lost). O(n).
pub fn keep_extremes<T, I>(items: Vec<T>, budget: usize, values: impl Fn(&T) -> I) -> Vec<T>
where
    I: Iterator<Item = f64>,
{
    if items.len() <= budget {
        return items;
    }
    // Up to 2 + 2·(values per item) kept per bucket; two values per item here.
    let buckets = (budget / 6).max(1);
    let size = items.len().div_ceil(buckets);
    let mut keep = vec![false; items.len()];
    for start in (0..items.len()).step_by(size) {
        let end = (start + size).min(items.len());
        keep[start] = true;
        keep[end - 1] = true;
        let mut extremes: Vec<(f64, usize, f64, usize)> = Vec::new();
        for (i, item) in items.iter().enumerate().take(end).skip(start) {
            for (k, v) in values(item).enumerate() {
                if !v.is_finite() {
                    continue;
                }
                if extremes.len() <= k {
                    extremes.resize(k + 1, (f64::INFINITY, i, f64::NEG_INFINITY, i));
                }
                let e = &mut extremes[k];
                if v < e.0 {
                    (e.0, e.1) = (v, i);
                }
                if v > e.2 {
                    (e.2, e.3) = (v, i);
                }
            }
        }
        for (_, low, _, high) in extremes {
            keep[low] = true;
            keep[high] = true;
        }
    }
    items
        .into_iter()
        .zip(keep)
        .filter_map(|(item, kept)| kept.then_some(item))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn downsampling_keeps_every_spike_and_stays_within_budget() {
        let values: Vec<f64> = (0..100_000)
            .map(|i| ((i as f64) * 0.01).sin() + if i % 9973 == 0 { 50.0 } else { 0.0 })
            .collect();
        let kept = keep_extremes(values.clone(), 2000, |v| std::iter::once(*v));
        assert!(kept.len() <= 2000 + 6, "{} points", kept.len());
        assert_eq!(kept.first(), values.first());
        assert_eq!(kept.last(), values.last());
        let spikes = values.iter().filter(|v| **v > 10.0).count();
        assert_eq!(kept.iter().filter(|v| **v > 10.0).count(), spikes);
        let min = values.iter().copied().fold(f64::INFINITY, f64::min);
        assert!(kept.contains(&min));
    }

    #[test]
    fn small_series_are_returned_whole() {
        let values = vec![3.0, 1.0, 2.0];
        assert_eq!(
            keep_extremes(values.clone(), 100, |v| std::iter::once(*v)),
            values
        );
    }
}
