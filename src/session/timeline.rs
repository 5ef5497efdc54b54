//! A session's history as the dashboard draws it: every observation (active or
//! forgotten, with its regret, reported or estimated), every step's snapshot of the
//! model, the response-time samples and the forgetting events; downsampled by the
//! store, keeping extremes, past a point budget.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::error::ServiceError;
use super::service::SessionService;
use super::tracking::{RegretAt, TrackingInput, tracking};
use super::views::{
    ForgetEvent, ResponseTimeSampleView, ResponseTimeView, Step, StepList, Timeline,
    TimelineObservation,
};
use crate::domain::InvalidInput;
use crate::domain::config::TimeSource;
use crate::store::StoredTimeline;

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
        check_page_limit(limit)?;
        self.session_row(id).await?;
        let calls = self.store.list_calls(id, after, limit + 1).await?;
        let (steps, next_after) = page(calls, limit, Step::from, |step| step.id);
        Ok(StepList { steps, next_after })
    }

    /// The session's timeline with at most about `points` observations, `points` steps
    /// and `points` response-time samples (the extremes of each bucket kept). The store
    /// does the downsampling: the work outside the database is linear in `points`, not
    /// in the session's age.
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
        let stored = self.store.timeline(id, points).await?;
        Ok(timeline_view(
            stored,
            session.config.time.source,
            Utc::now(),
        ))
    }
}

/// The API's view of a stored timeline: each observation's regret as reported, else as
/// estimated; the response-time fit of the newest step kept that holds one; whether the
/// session tracks at `now` ([`tracking`]).
fn timeline_view(stored: StoredTimeline, time_source: TimeSource, now: DateTime<Utc>) -> Timeline {
    let regrets = stored.reported_regrets + stored.estimated_regrets;
    let coefficients = stored
        .calls
        .iter()
        .rev()
        .find_map(|c| c.snapshot.as_ref()?.response_time_fit);
    let observations: Vec<TimelineObservation> = stored
        .observations
        .into_iter()
        .map(|row| TimelineObservation {
            seq: row.seq,
            t: row.t,
            value: row.value,
            params: row.params,
            regret: row.regret.or(row.regret_estimate),
            estimated: row.regret.is_none() && row.regret_estimate.is_some(),
            active: row.active,
            removed_t: row.removed_t,
            removed_reason: row.removed_reason,
            metadata: row.metadata,
        })
        .collect();
    let regrets_at: Vec<RegretAt> = observations
        .iter()
        .map(|o| RegretAt {
            seq: o.seq,
            t: o.t,
            regret: o.regret,
        })
        .collect();
    let tracking = tracking(&TrackingInput {
        observations: &regrets_at,
        groups: &stored.regret_groups,
        recent: &stored.recent_regrets,
        last_step_at: stored.last_step_at,
        time_source,
        now,
    });
    Timeline {
        tracking,
        observation_count: stored.observation_count,
        step_count: stored.step_count,
        reported_regrets: stored.reported_regrets,
        estimated_regrets: stored.estimated_regrets,
        average_regret: (regrets > 0).then(|| stored.regret_sum / regrets as f64),
        observations,
        steps: stored.calls.into_iter().map(Step::from).collect(),
        response_time: ResponseTimeView {
            samples: stored
                .response_times
                .iter()
                .map(|s| ResponseTimeSampleView {
                    n: s.n,
                    seconds: s.seconds,
                    count: 1,
                })
                .collect(),
            coefficients,
        },
        forgotten: stored
            .forgotten
            .into_iter()
            .map(|f| ForgetEvent {
                t: f.t,
                t_end: f.t_end,
                reason: f.reason,
                count: f.count,
            })
            .collect(),
        ended_run_count: stored.ended_run_count,
        ended_runs: stored.ended_runs.into_iter().map(Into::into).collect(),
    }
}

/// Refuses a page size outside 1..=10000 (422 naming `limit`).
pub(crate) fn check_page_limit(limit: i64) -> Result<(), ServiceError> {
    if !(1..=10_000).contains(&limit) {
        return Err(InvalidInput::new("limit", "must be between 1 and 10000").into());
    }
    Ok(())
}

/// A page of at most `limit` items of `rows` (fetched with one more than `limit`, to know
/// whether another page follows), and the `key` of its last item when one does.
pub(crate) fn page<R, T>(
    rows: Vec<R>,
    limit: i64,
    item: impl Fn(R) -> T,
    key: impl Fn(&T) -> i64,
) -> (Vec<T>, Option<i64>) {
    let more = rows.len() as i64 > limit;
    let items: Vec<T> = rows.into_iter().take(limit as usize).map(item).collect();
    let next = more.then(|| items.last().map(key)).flatten();
    (items, next)
}
