//! The suggest step: expire stale pending suggestions, check the pending cap, and ask the
//! policy for `count` points at the target time (now + lead).

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::model::MeanSearchBeside;
use super::{
    EngineError, Limits, OptimumAt, StepData, call_rng, events, lead, max_suggestions_for,
    model_data, policy_state, step_outcome,
};
use crate::acquisition::Cores;
use crate::domain::InvalidInput;
use crate::domain::checked::CheckedConfig;
use crate::domain::records::{
    CallRecord, ChangeSet, History, ResponseTimeSample, SuggestionRow, SuggestionStatus,
};
use crate::domain::space::Params;
use crate::domain::time::resolve_time;
use crate::policy::{self, BesideUcb, Proposal, SuggestContext};

/// Plans `count` suggestions for the session of `history`, asked at session time `t`
/// (client-time sessions) or at `now` (wall-clock sessions). The change hands them out
/// (`new_suggestions`), expires the pending ones older than `time.pending_timeout`,
/// saves the policy's state, and records the response-time sample (dataset size at the
/// previous suggest, seconds since it: BOLT §4). Its call record's `compute_seconds` is
/// left at 0 for the caller, which owns the clock, to fill in. UCB's pieces and the
/// recorded optimum's search run on the threads `cores` allows; the plan does not depend
/// on how many. `fixed` names parameters held at given values (every context parameter
/// among them): each suggestion is the best setting of the others given them.
pub fn plan_suggest(
    history: &History,
    count: usize,
    t: Option<f64>,
    fixed: &Params,
    now: DateTime<Utc>,
    limits: &Limits,
    cores: &dyn Cores,
) -> Result<ChangeSet, EngineError> {
    let session = &history.session;
    let config = &session.config;
    let t_now = resolve_time(config.time.source, t, session.created_at, now, "t")?;
    let space = config.space();
    if config.arms.is_some() && !fixed.is_empty() {
        return Err(InvalidInput::new(
            "fixed",
            "a session with arms suggests among its arms; leave fixed out",
        )
        .into());
    }
    let fixed_coordinates = space.fixed_coordinates(fixed)?;
    let (expired, pending): (Vec<&SuggestionRow>, Vec<&SuggestionRow>) = history
        .pending
        .iter()
        .partition(|s| t_now - s.issued_t > config.time.pending_timeout);
    check_limits(history, pending.len(), count, limits)?;
    let target = t_now + lead(history);
    let data = model_data(config, &history.active, &history.failed);
    let pending_points: Vec<(Vec<f64>, f64)> =
        pending.iter().map(|s| (s.unit.clone(), s.t)).collect();
    let before = policy_state(session)?;
    let mut state = before.clone();
    let ordinal = session.suggest_count as u64;
    // The recorded optimum's search, which the policy may run beside UCB.
    let beside = MeanSearchBeside::new(config, target, &fixed_coordinates);
    let ctx = SuggestContext {
        space,
        arms: config.arms().map(|arms| arms.points.as_slice()),
        model: &config.model,
        data: &data,
        pending: &pending_points,
        t: target,
        count,
        issued_before: ordinal,
        fixed_noise: config.model.noise,
        cores,
        fixed: &fixed_coordinates,
        beside: beside.as_ref().map(|b| b as &dyn BesideUcb),
    };
    let policy = policy::policy_for(config);
    let mut rng = call_rng(config.seed, ordinal);
    let proposed = policy::suggest(policy.as_ref(), &ctx, &mut state, &mut rng)?;
    let searched = beside.and_then(MeanSearchBeside::found);
    let issued = Issued {
        first_ordinal: session.suggest_count,
        fixed,
        t: t_now,
        target,
        now,
    };
    let rows = issued.rows(config, proposed.proposals);
    let dataset_size = history.active.len() as i64;
    let outcome = step_outcome(
        session,
        before,
        state,
        history.active.len(),
        Some(OptimumAt {
            active: &history.active,
            failed: &history.failed,
            t: target,
            fixed: &fixed_coordinates,
            cores,
            // The recorded optimum is read from the policy's model when it is the one the
            // record would build (no second factorisation), and its search was done
            // beside UCB when the policy ran it.
            built: proposed.model,
            searched,
        }),
        None,
        ordinal + rows.len() as u64,
        StepData {
            regrets: Vec::new(),
            span: events::time_span(history.active.iter().map(|o| o.t)),
        },
        t_now,
    )?;
    let snapshot = outcome.snapshot;
    let response_time = session
        .last_suggest
        .filter(|(last_t, _)| t_now >= *last_t)
        .map(|(last_t, n)| ResponseTimeSample {
            n,
            seconds: t_now - last_t,
        });
    Ok(ChangeSet {
        suggestion_status: expired
            .iter()
            .map(|s| (s.id, SuggestionStatus::Expired))
            .collect(),
        new_suggestions: rows,
        state: Some(outcome.state),
        last_suggest: Some((t_now, dataset_size)),
        last_optimum_mean: snapshot.optimum.as_ref().map(|o| o.mean),
        response_time,
        calls: vec![CallRecord {
            kind: "suggest",
            t: t_now,
            dataset_size,
            compute_seconds: 0.0,
            snapshot: Some(snapshot),
        }],
        events: outcome.events,
        ..ChangeSet::default()
    })
}

/// How a suggest's proposals are handed out: their first ordinal, the parameters held
/// fixed, the session time asked at and the one they are for, and the wall-clock time.
struct Issued<'a> {
    first_ordinal: i64,
    fixed: &'a Params,
    t: f64,
    target: f64,
    now: DateTime<Utc>,
}

impl Issued<'_> {
    /// The pending suggestion of each proposal, in order: its setting in the space's
    /// units with the fixed parameters' values exactly as given (the unit cube's round
    /// trip may move the last digit), and its arm's name in a session of arms.
    fn rows(&self, config: &CheckedConfig, proposals: Vec<Proposal>) -> Vec<SuggestionRow> {
        let space = config.space();
        proposals
            .into_iter()
            .enumerate()
            .map(|(i, p)| {
                let mut params = space.from_unit(&p.x);
                params.extend(
                    self.fixed
                        .iter()
                        .map(|(name, value)| (name.clone(), value.clone())),
                );
                SuggestionRow {
                    id: Uuid::new_v4(),
                    ordinal: self.first_ordinal + i as i64,
                    params,
                    arm: p
                        .arm
                        .and_then(|i| config.arms.as_ref().map(|arms| arms[i].name.clone())),
                    unit: p.x,
                    issued_t: self.t,
                    t: self.target,
                    created_at: self.now,
                    status: SuggestionStatus::Pending,
                }
            })
            .collect()
    }
}

/// The refusals of a suggest before any model work: more pending suggestions than the
/// cap allows (`pending` are the unexpired ones), more suggestions in one call than the
/// model-work bound allows, or a session at the dataset cap whose algorithm keeps every
/// observation.
fn check_limits(
    history: &History,
    pending: usize,
    count: usize,
    limits: &Limits,
) -> Result<(), EngineError> {
    let config = &history.session.config;
    if pending + count > limits.max_pending {
        return Err(EngineError::Limit(
            "too-many-pending",
            InvalidInput::new(
                "count",
                format!(
                    "{count} more would exceed the cap of {} pending suggestions (this \
                     session has {}): observe them, or wait until they expire after \
                     time.pending_timeout",
                    limits.max_pending, pending
                ),
            ),
        ));
    }
    let conditioned = history.active.len() + pending;
    let most = max_suggestions_for(conditioned);
    if count > most && config.algorithm.facts().fits_a_model {
        return Err(InvalidInput::new(
            "count",
            format!(
                "at most {most} suggestions per call for a model of {conditioned} \
                 observations and pending suggestions (model work per call is bounded): \
                 ask for the rest in further calls"
            ),
        )
        .into());
    }
    let cap = limits.max_active_observations;
    if !config.algorithm.forgets() && history.active.len() >= cap {
        // Its observation would be refused (plan_observe, for every algorithm that does
        // not bound its own dataset, `AlgorithmName::bounds_its_dataset`): hand out
        // nothing that cannot be observed. One that forgets may shrink at its observe.
        return Err(EngineError::Limit(
            "dataset-full",
            InvalidInput::new(
                "session",
                format!(
                    "holds {} active observations, the cap of this server, and {} keeps \
                     every one: no suggestion could be observed; use bolt, which bounds \
                     its own dataset",
                    history.active.len(),
                    config.algorithm.name()
                ),
            ),
        ));
    }
    Ok(())
}
