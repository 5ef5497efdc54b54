//! The observe step: check each measurement against its session (its suggestion, or a
//! setting in the space; its time), let the policy forget what it forgets (BOLT,
//! W-DBO, the resetting algorithms), and check the active-dataset cap.

use std::collections::{BTreeSet, HashMap};

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::{EngineError, Limits, StepData, events, policy_data, policy_state, step_outcome};
use crate::domain::config::TimeSource;
use crate::domain::input::{MAX_METADATA_BYTES, ObservationInput};
use crate::domain::records::{
    CallRecord, ChangeSet, Deactivation, EndedRun, History, MAX_REASON_LEN, ObservationRow,
    ResponseTimeSummary, RunEnd, SuggestionRow, SuggestionStatus,
};
use crate::domain::space::MAX_MAGNITUDE;
use crate::domain::time::{resolve_time, wall_time};
use crate::domain::{InvalidInput, validate_text};
use crate::policy::response_time::fit_response_time;
use crate::policy::{self, ObserveContext, RemovalReason, Stage};

/// How far in the future a client's `measured_at` may be (clock skew), in seconds.
const MEASURED_AT_SKEW: f64 = 60.0;

/// What an observe step reads: the session's history, the suggestions the request names
/// (those that exist in the session, whatever their status), and the session's
/// response-time samples summed per dataset size (BOLT's R(n)).
#[derive(Clone, Debug)]
pub struct ObserveSnapshot {
    pub history: History,
    pub suggestions: HashMap<Uuid, SuggestionRow>,
    pub response_times: Vec<ResponseTimeSummary>,
}

/// Plans recording `inputs` (each with the prefix of its fields' paths, e.g.
/// `observations[2].`), all or nothing: the change stores them, marks their suggestions
/// observed, forgets what the policy removes (a new observation may be stored already
/// inactive) and saves the policy's state. A failed run (`failed: true`) is recorded as
/// an [`EndedRun`], its suggestion marked failed, and reaches no forgetting (the next
/// suggest's model takes it under `model.failures: impute`: [`super::model_data`]);
/// failed runs beyond [`Limits::max_ended_runs`] refuse the request. Its call record's
/// `compute_seconds` is left at 0 for the caller to fill in.
pub fn plan_observe(
    snapshot: &ObserveSnapshot,
    inputs: &[(String, ObservationInput)],
    now: DateTime<Utc>,
    limits: &Limits,
) -> Result<ChangeSet, EngineError> {
    let history = &snapshot.history;
    let session = &history.session;
    let config = &session.config;
    let CheckedObservations {
        mut rows,
        ordinals,
        failed,
        suggestion_status,
    } = checked_observations(snapshot, inputs, now)?;
    check_ended_runs_room(history, inputs, failed.len(), limits)?;
    if rows.is_empty() {
        // Failed runs alone: recorded, their suggestions released, the policy's state
        // untouched (the next suggest's model reads them from the history).
        return Ok(ChangeSet {
            suggestion_status,
            ended_runs: failed,
            ..ChangeSet::default()
        });
    }
    let data = policy_data(config, &history.active);
    let new = policy_data(config, &rows);
    let before = policy_state(session)?;
    let mut state = before.clone();
    let t_now = match config.time.source {
        TimeSource::Wall => wall_time(session.created_at, now),
        TimeSource::Client => rows.iter().map(|r| r.t).fold(f64::NEG_INFINITY, f64::max),
    };
    let policy = policy::policy_for(config);
    let ctx = ObserveContext {
        space: config.space(),
        model: &config.model,
        data: &data,
        new: &new,
        suggestion_ordinals: &ordinals,
        fixed_noise: config.model.noise,
        t: t_now,
        response_times: &snapshot.response_times,
    };
    let removals = Stage::Forgetting.run(|| policy.observe(&ctx, &mut state))?;
    let active_after = history.active.len() + rows.len() - removals.len();
    let cap = limits.max_active_observations;
    let capped = !config.algorithm.kind().bounds_its_dataset();
    if capped && active_after > cap {
        return Err(dataset_full(config.algorithm.name(), active_after, cap));
    }
    let deactivate = mark_removed(&mut rows, removals, now, t_now);
    let t_last = rows.last().map_or(0.0, |r| r.t);
    let dataset_size = history.active.len() as i64;
    let response_time_fit = fit_response_time(&snapshot.response_times);
    let mut outcome = step_outcome(
        session,
        before,
        state,
        active_after,
        None,
        response_time_fit,
        session.suggest_count as u64,
        StepData {
            regrets: rows
                .iter()
                .filter_map(|r| r.regret.or(r.regret_estimate))
                .collect(),
            span: events::time_span(history.active.iter().chain(&rows).map(|o| o.t)),
        },
        t_now,
    )?;
    if outcome.snapshot.state_not_saved.is_none() {
        let active_before = history.active.len();
        outcome.events.extend(events::dataset_full(
            capped,
            active_before,
            active_after,
            cap,
            t_now,
        ));
    }
    Ok(ChangeSet {
        suggestion_status,
        new_observations: rows,
        ended_runs: failed,
        deactivate,
        state: Some(outcome.state),
        calls: vec![CallRecord {
            kind: "observe",
            t: t_last,
            dataset_size,
            compute_seconds: 0.0,
            snapshot: Some(outcome.snapshot),
        }],
        events: outcome.events,
        ..ChangeSet::default()
    })
}

/// Refuses the observations when their failed runs (the inputs marked so, `failed` of
/// them) would take the session beyond its cap of ended runs, naming the first beyond it.
fn check_ended_runs_room(
    history: &History,
    inputs: &[(String, ObservationInput)],
    failed: usize,
    limits: &Limits,
) -> Result<(), EngineError> {
    let room = limits.max_ended_runs.saturating_sub(history.ended_runs);
    if failed <= room {
        return Ok(());
    }
    let mut failed_inputs = inputs
        .iter()
        .filter(|(_, input)| input.failed == Some(true));
    let prefix = failed_inputs
        .nth(room)
        .map_or("", |(prefix, _)| prefix.as_str());
    Err(too_many_ended_runs(
        history,
        limits,
        format!("{prefix}failed"),
    ))
}

/// The refusal of an observation that would take a session whose `algorithm` keeps every
/// observation to `active_after` active ones, beyond this server's `cap`.
fn dataset_full(algorithm: &str, active_after: usize, cap: usize) -> EngineError {
    EngineError::Limit(
        "dataset-full",
        InvalidInput::new(
            "session",
            format!(
                "would hold {active_after} active observations; {algorithm} keeps them \
                 and this server caps a session at {cap}: use bolt, which bounds \
                 its own dataset"
            ),
        ),
    )
}

/// Marks what the policy forgot (`removals`, by seq) at `now` (session time `t_now`):
/// the new observations among them are stored inactive, the kept ones are returned to be
/// deactivated.
fn mark_removed(
    rows: &mut [ObservationRow],
    removals: Vec<(i64, RemovalReason)>,
    now: DateTime<Utc>,
    t_now: f64,
) -> Vec<Deactivation> {
    let mut deactivate = Vec::new();
    for (seq, reason) in removals {
        match rows.iter_mut().find(|r| r.seq == seq) {
            Some(row) => {
                row.active = false;
                row.removed_at = Some(now);
                row.removed_t = Some(t_now);
                row.removed_reason = Some(reason.as_str().to_string());
            }
            None => deactivate.push(Deactivation {
                seq,
                reason: reason.as_str().to_string(),
                t: t_now,
            }),
        }
    }
    deactivate
}

/// Plans abandoning a suggestion of the session of `history` (`DELETE
/// …/suggestions/{sid}`): no longer pending, recorded as an [`EndedRun`] at its target
/// time, never observed. `None` when it was abandoned already (nothing to do); a
/// conflict when it was observed or failed; refused when the session has
/// [`Limits::max_ended_runs`] already.
pub fn plan_abandon(
    history: &History,
    suggestion: &SuggestionRow,
    now: DateTime<Utc>,
    limits: &Limits,
) -> Result<Option<ChangeSet>, EngineError> {
    let ended = match suggestion.status {
        SuggestionStatus::Pending | SuggestionStatus::Expired => None,
        SuggestionStatus::Abandoned => return Ok(None),
        SuggestionStatus::Observed => Some("has been observed"),
        SuggestionStatus::Failed => Some("has been reported failed"),
    };
    if let Some(ended) = ended {
        return Err(EngineError::Conflict(InvalidInput::new(
            "suggestion_id",
            format!("this suggestion {ended}; only a pending one can be abandoned"),
        )));
    }
    if history.ended_runs >= limits.max_ended_runs {
        return Err(too_many_ended_runs(history, limits, "suggestion_id".into()));
    }
    Ok(Some(ChangeSet {
        suggestion_status: vec![(suggestion.id, SuggestionStatus::Abandoned)],
        ended_runs: vec![EndedRun {
            suggestion_id: Some(suggestion.id),
            kind: RunEnd::Abandoned,
            params: suggestion.params.clone(),
            t: suggestion.t,
            reason: None,
            metadata: None,
            created_at: now,
        }],
        ..ChangeSet::default()
    }))
}

/// The refusal of one more ended run in a session that has [`Limits::max_ended_runs`],
/// naming `field`.
fn too_many_ended_runs(history: &History, limits: &Limits, field: String) -> EngineError {
    EngineError::Limit(
        "too-many-ended-runs",
        InvalidInput::new(
            field,
            format!(
                "this session holds {} runs that ended without a value (failed or \
                 abandoned) and this server keeps at most {} per session: nothing was \
                 stored; continue in a new session (a pending suggestion expires after \
                 time.pending_timeout)",
                history.ended_runs, limits.max_ended_runs
            ),
        ),
    )
}

/// The rows `inputs` would store, in order, with each one's suggestion ordinal (None for
/// a setting of the client's own) and the suggestions they observe.
struct CheckedObservations {
    rows: Vec<ObservationRow>,
    ordinals: Vec<Option<u64>>,
    /// The failed runs among the inputs, which no forgetting decides over.
    failed: Vec<EndedRun>,
    /// The new status of each suggestion named: observed, or failed.
    suggestion_status: Vec<(Uuid, SuggestionStatus)>,
}

/// Checks each input against its session (value, regret, setting, time) and builds its
/// row; the first bad field fails the whole request.
fn checked_observations(
    snapshot: &ObserveSnapshot,
    inputs: &[(String, ObservationInput)],
    now: DateTime<Utc>,
) -> Result<CheckedObservations, EngineError> {
    let history = &snapshot.history;
    let session = &history.session;
    let config = &session.config;
    let space = config.space();
    let mut seen_suggestions = BTreeSet::new();
    let mut checked = CheckedObservations {
        rows: Vec::with_capacity(inputs.len()),
        ordinals: Vec::with_capacity(inputs.len()),
        failed: Vec::new(),
        suggestion_status: Vec::new(),
    };
    for (prefix, input) in inputs {
        let field = |name: &str| format!("{prefix}{name}");
        let value = checked_value(input, &field)?;
        let (suggestion_id, params, unit, ordinal) = match (&input.suggestion_id, &input.params) {
            (Some(_), Some(_)) => {
                return Err(InvalidInput::new(
                    field("params"),
                    "give suggestion_id or params, not both",
                )
                .into());
            }
            (None, None) => {
                return Err(InvalidInput::new(
                    field("suggestion_id"),
                    "give suggestion_id (of a suggestion) or params (a setting of your own)",
                )
                .into());
            }
            (Some(sid), None) => {
                let suggestion = snapshot.suggestions.get(sid).ok_or_else(|| {
                    InvalidInput::new(field("suggestion_id"), "no such suggestion in this session")
                })?;
                let ended = match suggestion.status {
                    SuggestionStatus::Pending | SuggestionStatus::Expired => None,
                    SuggestionStatus::Observed => Some("has already been observed"),
                    SuggestionStatus::Failed => Some("has already been reported failed"),
                    SuggestionStatus::Abandoned => Some("was abandoned"),
                };
                if let Some(ended) = ended.or_else(|| {
                    (!seen_suggestions.insert(*sid)).then_some("has already been observed")
                }) {
                    return Err(EngineError::Conflict(InvalidInput::new(
                        field("suggestion_id"),
                        format!("this suggestion {ended}"),
                    )));
                }
                let status = match value {
                    Some(_) => SuggestionStatus::Observed,
                    None => SuggestionStatus::Failed,
                };
                checked.suggestion_status.push((*sid, status));
                (
                    Some(*sid),
                    suggestion.params.clone(),
                    suggestion.unit.clone(),
                    u64::try_from(suggestion.ordinal).ok(),
                )
            }
            (None, Some(params)) => {
                let unit = space.to_unit(params, &field("params"))?;
                if let Some(arms) = &config.arms
                    && !arms.iter().any(|a| &a.params == params)
                {
                    return Err(InvalidInput::new(
                        field("params"),
                        "is not one of this session's arms",
                    )
                    .into());
                }
                (None, params.clone(), unit, None)
            }
        };
        let t = observation_time(history, input, now, &field)?;
        let Some(value) = value else {
            checked.failed.push(EndedRun {
                suggestion_id,
                kind: RunEnd::Failed,
                params,
                t,
                reason: input.reason.clone(),
                metadata: input.metadata.clone(),
                created_at: now,
            });
            continue;
        };
        checked.ordinals.push(ordinal);
        checked.rows.push(ObservationRow {
            seq: history.next_seq + checked.rows.len() as i64,
            suggestion_id,
            params,
            unit,
            value,
            t,
            measured_at: input.measured_at,
            regret: input.regret,
            // The model's estimate against the optimum the last suggest recorded.
            regret_estimate: match (input.regret, session.last_optimum_mean) {
                (None, Some(optimum)) => Some((config.goal.sign() * (optimum - value)).max(0.0))
                    .filter(|estimate| *estimate <= MAX_MAGNITUDE),
                _ => None,
            },
            active: true,
            removed_at: None,
            removed_t: None,
            removed_reason: None,
            metadata: input.metadata.clone(),
            created_at: now,
        });
    }
    Ok(checked)
}

/// The measured value, or `None` for a failed run. The value is finite and within
/// ±MAX_MAGNITUDE; a reported regret within [0, MAX_MAGNITUDE], so that every sum of
/// regrets (the running total, the dashboard's buckets) stays finite on both backends. A
/// failed run has neither, and only it has a `reason`.
fn checked_value(
    input: &ObservationInput,
    field: &dyn Fn(&str) -> String,
) -> Result<Option<f64>, EngineError> {
    let invalid = |name: &str, message: &str| -> EngineError {
        InvalidInput::new(field(name), message).into()
    };
    if input.failed == Some(true) {
        if input.value.is_some() {
            return Err(invalid("value", "a failed run has no value; leave it out"));
        }
        if input.regret.is_some() {
            return Err(invalid(
                "regret",
                "a failed run has no regret; leave it out",
            ));
        }
        if let Some(reason) = &input.reason {
            validate_text(&field("reason"), reason, 0, MAX_REASON_LEN)?;
        }
        check_metadata(input, field)?;
        return Ok(None);
    }
    if input.reason.is_some() {
        return Err(invalid(
            "reason",
            "only a failed run (failed: true) has a reason",
        ));
    }
    let Some(value) = input.value else {
        return Err(invalid(
            "value",
            "is required (or failed: true, for a failed run)",
        ));
    };
    check_metadata(input, field)?;
    if !(value.is_finite() && value.abs() <= MAX_MAGNITUDE) {
        return Err(InvalidInput::new(
            field("value"),
            format!("must be a finite number within ±{MAX_MAGNITUDE:e}"),
        )
        .into());
    }
    if let Some(regret) = input.regret
        && !(regret.is_finite() && (0.0..=MAX_MAGNITUDE).contains(&regret))
    {
        return Err(InvalidInput::new(
            field("regret"),
            format!("must be a finite number from 0 to {MAX_MAGNITUDE:e}"),
        )
        .into());
    }
    Ok(Some(value))
}

/// `metadata` is at most [`MAX_METADATA_BYTES`] of JSON.
fn check_metadata(
    input: &ObservationInput,
    field: &dyn Fn(&str) -> String,
) -> Result<(), EngineError> {
    if let Some(metadata) = &input.metadata {
        let bytes = serde_json::to_vec(metadata).map_or(usize::MAX, |json| json.len());
        if bytes > MAX_METADATA_BYTES {
            return Err(InvalidInput::new(
                field("metadata"),
                format!("is {bytes} bytes of JSON; at most {MAX_METADATA_BYTES}"),
            )
            .into());
        }
    }
    Ok(())
}

/// The session time of a measurement: from `measured_at` (wall-clock sessions: not before
/// the session's creation, not in the future beyond the clock skew), from `t` (client
/// time), or now.
fn observation_time(
    history: &History,
    input: &ObservationInput,
    now: DateTime<Utc>,
    field: &dyn Fn(&str) -> String,
) -> Result<f64, EngineError> {
    let session = &history.session;
    let source = session.config.time.source;
    Ok(match (source, input.measured_at) {
        (TimeSource::Wall, Some(at)) => {
            if input.t.is_some() {
                return Err(InvalidInput::new(
                    field("t"),
                    "this session uses wall-clock time; send measured_at, not t",
                )
                .into());
            }
            let t = wall_time(session.created_at, at);
            if t < 0.0 {
                return Err(InvalidInput::new(
                    field("measured_at"),
                    "is before the session was created",
                )
                .into());
            }
            if (at - now).num_milliseconds() as f64 / 1000.0 > MEASURED_AT_SKEW {
                return Err(InvalidInput::new(field("measured_at"), "is in the future").into());
            }
            t
        }
        (TimeSource::Client, Some(_)) => {
            return Err(InvalidInput::new(
                field("measured_at"),
                "this session uses client time; send t (seconds), not measured_at",
            )
            .into());
        }
        (_, None) => resolve_time(source, input.t, session.created_at, now, &field("t"))?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::config::CreateSession;
    use crate::engine::{new_session_config, new_session_row};

    /// A client-time random session over x in [0, 1] holding `ended_runs` ended runs.
    fn snapshot(ended_runs: usize) -> ObserveSnapshot {
        let request: CreateSession = serde_json::from_value(serde_json::json!({
            "parameters": [{"name": "x", "low": 0, "high": 1}],
            "algorithm": {"name": "random"},
            "time": {"source": "client"},
        }))
        .unwrap();
        let config = new_session_config(request, 1).unwrap();
        let session = new_session_row(Uuid::new_v4(), "t", config, Utc::now());
        ObserveSnapshot {
            history: History {
                ended_runs,
                ..History::new(session)
            },
            suggestions: HashMap::new(),
            response_times: Vec::new(),
        }
    }

    fn input(failed: bool) -> ObservationInput {
        let value = if failed {
            serde_json::json!({"params": {"x": 0.5}, "failed": true, "t": 1.0})
        } else {
            serde_json::json!({"params": {"x": 0.5}, "value": 1.0, "t": 1.0})
        };
        serde_json::from_value(value).unwrap()
    }

    fn batch(failed: &[bool]) -> Vec<(String, ObservationInput)> {
        failed
            .iter()
            .enumerate()
            .map(|(i, &f)| (format!("observations[{i}]."), input(f)))
            .collect()
    }

    #[test]
    fn failed_runs_beyond_the_cap_are_refused_naming_the_first_beyond() {
        let limits = Limits {
            max_ended_runs: 10,
            ..Limits::default()
        };
        let inputs = batch(&[false, true, false, true, true]);
        let change = plan_observe(&snapshot(7), &inputs, Utc::now(), &limits).unwrap();
        assert_eq!(change.ended_runs.len(), 3, "7 + 3 = 10 fits");
        for (ended, field) in [(8, "observations[4].failed"), (9, "observations[3].failed")] {
            match plan_observe(&snapshot(ended), &inputs, Utc::now(), &limits) {
                Err(EngineError::Limit("too-many-ended-runs", e)) => {
                    assert_eq!(e.field, field, "{e}");
                    assert!(e.message.contains("at most 10"), "{e}");
                }
                other => panic!("{other:?}"),
            }
        }
        let values = batch(&[false, false]);
        assert!(plan_observe(&snapshot(10), &values, Utc::now(), &limits).is_ok());
    }

    #[test]
    fn an_abandon_beyond_the_cap_is_refused() {
        let limits = Limits {
            max_ended_runs: 3,
            ..Limits::default()
        };
        let suggestion = SuggestionRow {
            id: Uuid::new_v4(),
            ordinal: 0,
            params: Default::default(),
            unit: vec![0.5],
            arm: None,
            issued_t: 0.0,
            t: 0.0,
            created_at: Utc::now(),
            status: SuggestionStatus::Pending,
        };
        let history = snapshot(2).history;
        let change = plan_abandon(&history, &suggestion, Utc::now(), &limits).unwrap();
        assert_eq!(change.unwrap().ended_runs.len(), 1);
        let full = snapshot(3).history;
        match plan_abandon(&full, &suggestion, Utc::now(), &limits) {
            Err(EngineError::Limit("too-many-ended-runs", e)) => {
                assert_eq!(e.field, "suggestion_id");
            }
            other => panic!("{other:?}"),
        }
        let abandoned = SuggestionRow {
            status: SuggestionStatus::Abandoned,
            ..suggestion
        };
        let again = plan_abandon(&full, &abandoned, Utc::now(), &limits).unwrap();
        assert!(
            again.is_none(),
            "abandoned already: nothing to do, at the cap too"
        );
    }
}
