//! The events a step finds (docs/events.md), by comparing the policy's state before the
//! step with the state it leaves: pure, like the rest of the engine.

use serde_json::json;

use crate::domain::config::SessionConfig;
use crate::domain::events::{EventKind, NewEvent};
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
