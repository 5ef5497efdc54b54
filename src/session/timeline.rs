//! A session's history as the dashboard draws it: every observation (active or
//! forgotten, with its regret, reported or estimated), every step's snapshot of the
//! model, the response-time samples and the forgetting events; downsampled by the
//! store, keeping extremes, past a point budget, itself lowered so that the answer fits
//! [`MAX_TIMELINE_BYTES`]. A replica builds at most so many answers at once that their
//! memory fits its read budget (`session::read_budget`).

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::error::ServiceError;
use super::read_budget::{HeldJson, TIMELINE_READ_MEMORY};
use super::service::SessionService;
use super::tracking::{RegretAt, TrackingInput, tracking};
use super::views::{
    ForgetEvent, ResponseTimeSampleView, ResponseTimeView, Step, StepList, Timeline,
    TimelineObservation,
};
use crate::domain::InvalidInput;
use crate::domain::checked::CheckedConfig;
use crate::domain::config::TimeSource;
use crate::domain::records::MAX_REASON_LEN;
use crate::store::{RowBytes, StoredTimeline, TimelineBudget};

/// Most points a timeline returns per series when the client asks for no other budget.
pub const DEFAULT_TIMELINE_POINTS: i64 = 2000;
/// Bounds of a client's point budget.
pub const TIMELINE_POINTS_RANGE: std::ops::RangeInclusive<i64> = 100..=20_000;
/// Most bytes of a timeline's answer, whatever the session: its point budget is lowered
/// until the rows, counted at their largest for the session's parameters, fit.
pub const MAX_TIMELINE_BYTES: i64 = 16 << 20;
/// Most bytes of metadata a timeline's observations carry, and likewise its ended runs':
/// the newest rows' (older rows' `metadata` is null; the observation listing has every
/// observation's).
pub const TIMELINE_METADATA_BYTES: i64 = 2 << 20;

/// JSON bytes of any number the timeline writes, at most (an f64 as serde_json writes
/// it, `-2.2250738585072014e-308`, or an i64).
const NUMBER_BYTES: i64 = 24;
/// JSON bytes of an observation besides its `params` (its `metadata` null), with the
/// comma before it, and of the forgetting span and the rolling-regret point it may
/// bring.
const OBSERVATION_BYTES: i64 = 256 + 128 + 112;
/// JSON bytes of a step besides its optimum's `params`, its `arm` and its fit's
/// per-parameter `lengthscales`, with the comma (128 of them for a drifting level's two
/// hyperparameters).
const STEP_BYTES: i64 = 2048 + 128;
/// JSON bytes of a response-time sample, with the comma.
const SAMPLE_BYTES: i64 = 96;
/// JSON bytes of an ended run besides its `params` and `reason` (its `metadata` null).
const ENDED_RUN_BYTES: i64 = 256;
/// JSON bytes of the rest of the answer: counts, the tracking status and its reason,
/// the cubic's coefficients, and one forgetting span per reason beyond one per
/// observation.
const TIMELINE_BYTES: i64 = 4096;

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

    /// The session's timeline as JSON, with at most about `points` observations,
    /// `points` steps, `points` response-time samples (the extremes of each bucket kept)
    /// and the newest `points` ended runs, `points` lowered so that the answer fits
    /// [`MAX_TIMELINE_BYTES`]. The store does the downsampling: the work outside the
    /// database is linear in `points`, not in the session's age. It waits up to
    /// `READ_WAIT` for a share of the replica's read budget, else fails with
    /// [`ServiceError::ReadsBusy`].
    pub async fn timeline(&self, id: Uuid, points: i64) -> Result<HeldJson, ServiceError> {
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
        let budget = timeline_budget(&session.config, points);
        let slot = self.reads.share(TIMELINE_READ_MEMORY).await?;
        let stored = self.store.timeline(id, &budget).await?;
        let time_source = session.config.time.source;
        // Megabytes of JSON: written off the async runtime, into room for the largest
        // (never grown: no copy beside it), the room left given back.
        let json = tokio::task::spawn_blocking(move || {
            let mut json = Vec::with_capacity(MAX_TIMELINE_BYTES as usize);
            let view = timeline_view(stored, time_source, Utc::now());
            serde_json::to_writer(&mut json, &view)?;
            json.shrink_to_fit();
            Ok::<_, serde_json::Error>(json)
        })
        .await
        .map_err(|e| ServiceError::Internal(format!("timeline task failed: {e}")))?
        .map_err(|e| ServiceError::Internal(format!("timeline JSON: {e}")))?;
        Ok(HeldJson {
            json,
            slot: Some(slot),
        })
    }
}

/// The budget of a timeline of `points` points of a session of `config`: its rows
/// counted at their largest for the session's parameters and arms.
fn timeline_budget(config: &CheckedConfig, points: i64) -> TimelineBudget {
    let params = params_bytes(config);
    let arm = config.arms().map_or(0, |arms| {
        let longest = arms.arms.iter().map(|a| json_bytes(&a.name)).max();
        longest.unwrap_or(0) + r#","arm":"#.len() as i64
    });
    let reason = 2 + 4 * MAX_REASON_LEN as i64;
    TimelineBudget {
        points,
        max_bytes: MAX_TIMELINE_BYTES,
        row_bytes: RowBytes {
            observation: OBSERVATION_BYTES + params,
            // The lengthscales by parameter name: no more bytes than a setting.
            step: STEP_BYTES + 2 * params + arm,
            sample: SAMPLE_BYTES,
            ended_run: ENDED_RUN_BYTES + params + reason,
        },
        fixed_bytes: TIMELINE_BYTES,
        metadata_bytes: TIMELINE_METADATA_BYTES,
    }
}

/// The most JSON bytes of a setting of the session's parameters: each name, and its
/// longest choice or a number.
pub(super) fn params_bytes(config: &CheckedConfig) -> i64 {
    let parameters = config.space().parameters();
    let entries: i64 = parameters
        .iter()
        .map(|p| {
            let choice = p.choice_list().iter().map(|c| json_bytes(c)).max();
            json_bytes(&p.name) + 1 + choice.unwrap_or(0).max(NUMBER_BYTES)
        })
        .sum();
    2 + entries + parameters.len().saturating_sub(1) as i64
}

/// The bytes of `text` as a JSON string.
fn json_bytes(text: &str) -> i64 {
    serde_json::to_string(text).map_or(i64::MAX, |json| json.len() as i64)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::config::CreateSession;
    use crate::domain::hyperpriors::{BoundHit, FitReport};
    use crate::domain::records::{FittedHyperparameters, RecordedOptimum, RunEnd, StepSnapshot};
    use crate::domain::space::{ParamValue, Params};
    use crate::engine::new_session_config;
    use crate::session::tracking::{RollingRegret, Tracking, TrackingStatus};
    use crate::session::views::EndedRunView;

    /// The longest number JSON writes.
    const LONGEST: f64 = -2.2250738585072014e-308;

    /// The largest names and choices a session may have: 32 parameters of 100
    /// four-byte characters, without arms half of them categorical with 64 choices as
    /// long, with arms as long.
    fn largest_config(arms: bool) -> CheckedConfig {
        let name = |i: usize| format!("{i:02}{}", "😀".repeat(98));
        let parameters: Vec<serde_json::Value> = (0..32)
            .map(|i| {
                if arms || i % 2 == 0 {
                    serde_json::json!({"name": name(i), "low": 0, "high": 1})
                } else {
                    let choices: Vec<String> = (0..64).map(name).collect();
                    serde_json::json!({"name": name(i), "type": "categorical", "choices": choices})
                }
            })
            .collect();
        let mut request = serde_json::json!({"parameters": parameters});
        if arms {
            let arms: Vec<serde_json::Value> = (0..3)
                .map(|a| {
                    let params: serde_json::Map<String, serde_json::Value> = (0..32)
                        .map(|i| (name(i), serde_json::json!(0.1 * a as f64)))
                        .collect();
                    serde_json::json!({"name": format!("{a}{}", "😀".repeat(99)), "params": params})
                })
                .collect();
            request["arms"] = serde_json::json!(arms);
        }
        let request: CreateSession = serde_json::from_value(request).unwrap();
        new_session_config(request, 1).unwrap()
    }

    /// A setting of `config` as long as its JSON gets.
    fn longest_params(config: &CheckedConfig) -> Params {
        config
            .space()
            .parameters()
            .iter()
            .map(|p| {
                let longest = p.choice_list().iter().max_by_key(|c| json_bytes(c));
                let value = longest.map_or(ParamValue::Number(LONGEST), |c| {
                    ParamValue::Choice(c.clone())
                });
                (p.name.clone(), value)
            })
            .collect()
    }

    /// Bytes of `value`'s JSON and the comma before it in a list.
    fn bytes(value: &impl serde::Serialize) -> i64 {
        serde_json::to_vec(value).unwrap().len() as i64 + 1
    }

    #[test]
    fn rows_as_large_as_they_get_fit_their_bounds() {
        for config in [largest_config(false), largest_config(true)] {
            let budget = timeline_budget(&config, 100);
            let params = longest_params(&config);
            let observation = TimelineObservation {
                seq: i64::MIN,
                t: LONGEST,
                value: LONGEST,
                params: params.clone(),
                regret: Some(LONGEST),
                estimated: false,
                active: false,
                removed_t: Some(LONGEST),
                removed_reason: Some("relevance".into()),
                metadata: None,
            };
            let forgotten = ForgetEvent {
                t: LONGEST,
                t_end: LONGEST,
                reason: "relevance".into(),
                count: i64::MIN,
            };
            let rolling = RollingRegret {
                t: LONGEST,
                regret: LONGEST,
                observations: i64::MIN,
            };
            let largest = bytes(&observation) + bytes(&forgotten) + bytes(&rolling);
            assert!(largest <= budget.row_bytes.observation, "{largest}");
            let arm = config.arms().map(|a| a.arms[0].name.clone());
            let step = Step {
                id: i64::MIN,
                kind: "suggest".into(),
                t: LONGEST,
                dataset_size: i64::MIN,
                compute_seconds: LONGEST,
                snapshot: Some(StepSnapshot {
                    dataset_size: i64::MIN,
                    max_dataset_size: Some(u64::MAX),
                    budget: Some(LONGEST),
                    hyperparameters: Some(FittedHyperparameters {
                        signal_variance: LONGEST,
                        spatial_lengthscale: LONGEST,
                        temporal_lengthscale: Some(LONGEST),
                        noise_variance: LONGEST,
                        epsilon: Some(LONGEST),
                        categorical_lengthscale: Some(LONGEST),
                        lengthscales: Some(
                            params.keys().map(|name| (name.clone(), LONGEST)).collect(),
                        ),
                        level_variance: Some(LONGEST),
                        level_lengthscale: Some(LONGEST),
                    }),
                    optimum: Some(RecordedOptimum {
                        t: LONGEST,
                        params: params.clone(),
                        arm,
                        mean: LONGEST,
                    }),
                    prior_probabilities: Some(vec![LONGEST; 16]),
                    priors_active: Some(vec![false; 16]),
                    response_time_fit: Some([LONGEST; 4]),
                    // The engine's note is 130 characters.
                    state_not_saved: Some("x".repeat(256)),
                    fit: Some(FitReport {
                        at_bound: vec![BoundHit::CategoricalLengthscaleUpper; 10],
                        second_start: true,
                        explored: true,
                    }),
                }),
            };
            assert!(bytes(&step) <= budget.row_bytes.step, "{}", bytes(&step));
            let sample = ResponseTimeSampleView {
                n: i64::MIN,
                seconds: LONGEST,
                count: i64::MIN,
            };
            assert!(bytes(&sample) <= budget.row_bytes.sample);
            let ended = EndedRunView {
                kind: RunEnd::Abandoned,
                suggestion_id: Some(Uuid::new_v4()),
                params,
                t: LONGEST,
                reason: Some("😀".repeat(MAX_REASON_LEN)),
                metadata: None,
                created_at: Utc::now(),
            };
            assert!(
                bytes(&ended) <= budget.row_bytes.ended_run,
                "{}",
                bytes(&ended)
            );
            // The largest session fits the answer's bound at the smallest point budget.
            let counts = crate::store::SeriesCounts {
                observations: 1 << 40,
                steps: 1 << 40,
                samples: 1 << 40,
                ended_runs: 1 << 40,
            };
            let smallest = *TIMELINE_POINTS_RANGE.start();
            assert!(budget.bytes(&counts, smallest) <= MAX_TIMELINE_BYTES);
        }
    }

    #[test]
    fn the_rest_of_the_answer_fits_its_bound() {
        let timeline = Timeline {
            observation_count: i64::MIN,
            step_count: i64::MIN,
            reported_regrets: i64::MIN,
            estimated_regrets: i64::MIN,
            average_regret: Some(LONGEST),
            tracking: Tracking {
                status: TrackingStatus::NoRecentData,
                reason: "x".repeat(1024),
                window: i64::MIN,
                recent_regret: Some(LONGEST),
                previous_regret: Some(LONGEST),
                last_step_at: Some(Utc::now()),
                as_of: Utc::now(),
                stale_after: LONGEST,
                rolling: Vec::new(),
            },
            observations: Vec::new(),
            steps: Vec::new(),
            response_time: ResponseTimeView {
                samples: Vec::new(),
                coefficients: Some([LONGEST; 4]),
            },
            forgotten: vec![
                ForgetEvent {
                    t: LONGEST,
                    t_end: LONGEST,
                    reason: "relevance".into(),
                    count: i64::MIN,
                };
                3
            ],
            ended_run_count: i64::MIN,
            ended_runs: Vec::new(),
        };
        assert!(bytes(&timeline) <= TIMELINE_BYTES, "{}", bytes(&timeline));
    }
}
