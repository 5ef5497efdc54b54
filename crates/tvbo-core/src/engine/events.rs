//! The events a step finds (docs/events.md), by comparing the policy's state before the
//! step with the state it leaves: pure, like the rest of the engine.

use serde_json::json;

use crate::domain::checked::CheckedConfig;
use crate::domain::config::SessionConfig;
use crate::domain::events::{
    DriftState, EventKind, NewEvent, OPTIMUM_MOVED_DISTANCE, OPTIMUM_MOVED_PERSISTENCE,
    RecommendationAt,
};
use crate::domain::records::RecordedOptimum;
use crate::policy::PolicyState;

use super::reads::prior_names;

/// The events of a step at session time `t` that turned the policy's state `before`
/// into `after`:
/// - `model-reset` when the count of resets grew (R-GP-UCB, ET-GP-UCB): `resets` is the
///   session's count after the step;
/// - `prior-eliminated` for each prior that left the active set (PE-GP-UCB, PE-GP-TS):
///   its index and name, and how many priors remain active.
pub(crate) fn step_events(
    config: &SessionConfig,
    before: &PolicyState,
    after: &PolicyState,
    t: f64,
) -> Vec<NewEvent> {
    let mut events = Vec::new();
    if after.resets > before.resets {
        events.push(NewEvent {
            kind: EventKind::ModelReset,
            t,
            data: json!({ "resets": after.resets }),
        });
    }
    if let (Some(was), Some(now)) = (&before.prior_selection, &after.prior_selection) {
        let remaining = now.active.iter().filter(|&&active| active).count();
        let names = prior_names(config);
        for (index, (&had, &has)) in was.active.iter().zip(&now.active).enumerate() {
            if had && !has {
                events.push(NewEvent {
                    kind: EventKind::PriorEliminated,
                    t,
                    data: json!({
                        "prior": index,
                        "name": names.get(index).cloned().unwrap_or_else(|| format!("prior-{index}")),
                        "remaining": remaining,
                    }),
                });
            }
        }
    }
    events
}

/// The `optimum-moved` event of a step, if any, and the drift state after it: `state`
/// is the state before the step, `reset` whether the step reset the model (the reference
/// is then forgotten: a model that starts over learns where the optimum is again), `seen`
/// the recommendation the step recorded (suggests without context coordinates only).
///
/// The rule: a first reference settles once the recommendation has stood within
/// [`OPTIMUM_MOVED_DISTANCE`] of itself for [`OPTIMUM_MOVED_PERSISTENCE`] consecutive
/// suggests (no event: a model learning where a static optimum is moves its argmax
/// too). Then an event is found when the recommendation has stood farther than the
/// distance from the reference, and within it of itself, for as many suggests; it becomes
/// the reference. A suggest back within the distance of the reference clears the count.
pub(crate) fn optimum_moved(
    state: Option<DriftState>,
    reset: bool,
    seen: Option<RecommendationAt>,
    t: f64,
) -> (Option<DriftState>, Option<NewEvent>) {
    let mut drift = if reset {
        DriftState::default()
    } else {
        state.unwrap_or_default()
    };
    let Some(now) = seen else {
        return (Some(drift).filter(|d| *d != DriftState::default()), None);
    };
    if let Some(reference) = &drift.reference
        && distance(&reference.x, &now.x) <= OPTIMUM_MOVED_DISTANCE
    {
        drift.candidate = None;
        drift.streak = 0;
        return (Some(drift), None);
    }
    drift.streak = match &drift.candidate {
        Some(candidate) if distance(&candidate.x, &now.x) <= OPTIMUM_MOVED_DISTANCE => {
            drift.streak + 1
        }
        _ => 1,
    };
    drift.candidate = Some(now);
    if drift.streak < OPTIMUM_MOVED_PERSISTENCE {
        return (Some(drift), None);
    }
    let from = drift.reference.take();
    drift.reference = drift.candidate.take();
    drift.streak = 0;
    let event = from
        .zip(drift.reference.as_ref())
        .map(|(from, to)| NewEvent {
            kind: EventKind::OptimumMoved,
            t,
            data: json!({
                "from": {"params": from.params, "mean": from.mean, "t": from.t},
                "to": {"params": to.params, "mean": to.mean, "t": to.t},
                "distance": distance(&from.x, &to.x),
            }),
        });
    (Some(drift), event)
}

/// The `dataset-full` event of an observe that took a capped session (`capped`: its
/// algorithm keeps its observations) from below `cap` active observations to `cap`.
pub(crate) fn dataset_full(
    capped: bool,
    before: usize,
    after: usize,
    cap: usize,
    t: f64,
) -> Option<NewEvent> {
    (capped && before < cap && after >= cap).then(|| NewEvent {
        kind: EventKind::DatasetFull,
        t,
        data: json!({ "active": after, "cap": cap }),
    })
}

/// A recorded optimum as the drift events compare it (None if its setting does not map
/// into the unit cube, which a recorded optimum always does).
pub(crate) fn recommendation(
    config: &CheckedConfig,
    optimum: &RecordedOptimum,
) -> Option<RecommendationAt> {
    let x = config.space().to_unit(&optimum.params, "optimum").ok()?;
    Some(RecommendationAt {
        x,
        params: optimum.params.clone(),
        mean: optimum.mean,
        t: optimum.t,
    })
}

/// The largest coordinate change between two unit-cube points.
fn distance(a: &[f64], b: &[f64]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0, f64::max)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::PriorSelectionState;

    fn config() -> SessionConfig {
        let request = serde_json::from_value(json!({
            "parameters": [{"name": "x", "low": 0, "high": 1}],
        }))
        .unwrap();
        SessionConfig::from_request(request, 1).unwrap()
    }

    fn at(x: f64, t: f64) -> Option<RecommendationAt> {
        Some(RecommendationAt {
            x: vec![x],
            params: std::collections::BTreeMap::from([(
                "x".to_string(),
                crate::domain::space::ParamValue::Number(x),
            )]),
            mean: 1.0,
            t,
        })
    }

    /// The events of a run of suggests recommending `xs` in turn (a reset before those
    /// indices in `resets`).
    fn moves(xs: &[f64], resets: &[usize]) -> Vec<(f64, f64)> {
        let mut state = None;
        let mut found = Vec::new();
        for (i, &x) in xs.iter().enumerate() {
            let (next, event) =
                optimum_moved(state, resets.contains(&i), at(x, i as f64), i as f64);
            state = next;
            if let Some(event) = event {
                let from = event.data["from"]["params"]["x"].as_f64().unwrap();
                let to = event.data["to"]["params"]["x"].as_f64().unwrap();
                found.push((from, to));
            }
        }
        found
    }

    #[test]
    fn a_learning_model_settles_without_an_event() {
        assert!(moves(&[0.9, 0.5, 0.31, 0.3, 0.32, 0.3, 0.29, 0.31], &[]).is_empty());
    }

    #[test]
    fn a_move_that_persists_is_one_event_and_a_blip_is_none() {
        let xs = [0.3, 0.3, 0.3, 0.3, 0.8, 0.3, 0.3, 0.8, 0.81, 0.79, 0.8, 0.8];
        assert_eq!(moves(&xs, &[]), [(0.3, 0.79)]);
        // Back to where it was: a second event.
        let back = [0.3, 0.3, 0.3, 0.8, 0.8, 0.8, 0.3, 0.3, 0.3];
        assert_eq!(moves(&back, &[]), [(0.3, 0.8), (0.8, 0.3)]);
        // A move within the distance is none.
        assert!(moves(&[0.3, 0.3, 0.3, 0.45, 0.45, 0.45, 0.45], &[]).is_empty());
    }

    #[test]
    fn a_reset_forgets_the_reference() {
        let xs = [0.3, 0.3, 0.3, 0.8, 0.8, 0.8];
        assert!(moves(&xs, &[3]).is_empty());
    }

    #[test]
    fn the_cap_is_an_event_when_reached_and_not_after() {
        let event = dataset_full(true, 4, 5, 5, 2.0).unwrap();
        assert_eq!(event.kind, EventKind::DatasetFull);
        assert_eq!(event.data, json!({"active": 5, "cap": 5}));
        assert!(dataset_full(true, 3, 4, 5, 2.0).is_none());
        assert!(dataset_full(true, 5, 5, 5, 2.0).is_none());
        assert!(dataset_full(false, 4, 5, 5, 2.0).is_none());
    }

    #[test]
    fn a_step_that_changes_nothing_finds_nothing() {
        let state = PolicyState::default();
        assert!(step_events(&config(), &state, &state, 3.0).is_empty());
    }

    #[test]
    fn a_reset_is_one_event_with_the_count_after() {
        let before = PolicyState {
            resets: 2,
            ..PolicyState::default()
        };
        let after = PolicyState {
            resets: 3,
            ..PolicyState::default()
        };
        let events = step_events(&config(), &before, &after, 7.5);
        assert_eq!(events.len(), 1);
        assert_eq!(events[0].kind, EventKind::ModelReset);
        assert_eq!(events[0].t, 7.5);
        assert_eq!(events[0].data, json!({"resets": 3}));
    }

    #[test]
    fn each_prior_that_leaves_the_active_set_is_an_event() {
        let selection = |active: Vec<bool>| PriorSelectionState {
            active,
            ..PriorSelectionState::default()
        };
        let before = PolicyState {
            prior_selection: Some(selection(vec![true, true, false, true])),
            ..PolicyState::default()
        };
        let after = PolicyState {
            prior_selection: Some(selection(vec![false, true, false, false])),
            ..PolicyState::default()
        };
        let events = step_events(&config(), &before, &after, 1.0);
        let priors: Vec<_> = events.iter().map(|e| e.data["prior"].clone()).collect();
        assert_eq!(priors, [json!(0), json!(3)]);
        assert!(events.iter().all(|e| e.kind == EventKind::PriorEliminated));
        assert!(events.iter().all(|e| e.data["remaining"] == json!(1)));
        assert_eq!(events[1].data["name"], "prior-3");
    }
}
