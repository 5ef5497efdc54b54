//! A session held in memory and driven through the engine, for the benchmark harness and
//! tests: every step is planned exactly as on the server and its change applied as a store
//! applies it (`store::Store::commit`), with one client and no concurrency.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::{EngineError, Limits, ObserveSnapshot, new_session_row, plan_observe, plan_suggest};
use crate::domain::checked::CheckedConfig;
use crate::domain::events::NewEvent;
use crate::domain::input::ObservationInput;
use crate::domain::records::{
    ChangeSet, DEFAULT_TENANT, History, ObservationRow, ResponseTimeSummary, SuggestionRow,
};
use crate::domain::space::Params;

/// A session in memory: its history as a store would load it, every suggestion it handed
/// out, its response-time samples summed per dataset size, and the events its steps found.
#[derive(Clone, Debug)]
pub struct LocalSession {
    history: History,
    suggestions: HashMap<Uuid, SuggestionRow>,
    response_times: Vec<ResponseTimeSummary>,
    events: Vec<NewEvent>,
    limits: Limits,
}

impl LocalSession {
    /// A new session with `config`, created at `created_at` (session time 0 of a
    /// wall-clock session), under the server's default [`Limits`].
    pub fn new(config: CheckedConfig, created_at: DateTime<Utc>) -> Self {
        let session = new_session_row(Uuid::new_v4(), DEFAULT_TENANT, config, created_at);
        LocalSession {
            history: History::new(session),
            suggestions: HashMap::new(),
            response_times: Vec::new(),
            events: Vec::new(),
            limits: Limits::default(),
        }
    }

    /// The session as a store would load it now.
    pub fn history(&self) -> &History {
        &self.history
    }

    /// The events its steps found (docs/events.md), in order.
    pub fn events(&self) -> &[NewEvent] {
        &self.events
    }

    /// Hands out `count` suggestions ([`plan_suggest`]).
    pub fn suggest(
        &mut self,
        count: usize,
        t: Option<f64>,
        now: DateTime<Utc>,
    ) -> Result<Vec<SuggestionRow>, EngineError> {
        self.suggest_given(count, t, &Params::new(), now)
    }

    /// Hands out `count` suggestions of the best settings given the values of `fixed`
    /// (context parameters, or any held for this suggest: [`plan_suggest`]).
    pub fn suggest_given(
        &mut self,
        count: usize,
        t: Option<f64>,
        fixed: &Params,
        now: DateTime<Utc>,
    ) -> Result<Vec<SuggestionRow>, EngineError> {
        let change = plan_suggest(&self.history, count, t, fixed, now, &self.limits, &1)?;
        let handed = change.new_suggestions.clone();
        self.apply(change);
        Ok(handed)
    }

    /// Records observations ([`plan_observe`]); returns them as stored.
    pub fn observe(
        &mut self,
        inputs: &[(String, ObservationInput)],
        now: DateTime<Utc>,
    ) -> Result<Vec<ObservationRow>, EngineError> {
        let suggestions = inputs
            .iter()
            .filter_map(|(_, input)| input.suggestion_id)
            .filter_map(|id| self.suggestions.get(&id).map(|s| (id, s.clone())))
            .collect();
        let snapshot = ObserveSnapshot {
            history: self.history.clone(),
            suggestions,
            response_times: self.response_times.clone(),
        };
        let change = plan_observe(&snapshot, inputs, now, &self.limits)?;
        let stored = change.new_observations.clone();
        self.apply(change);
        Ok(stored)
    }

    /// Applies a change as `Store::commit` does ([`History::apply`]), keeping every
    /// suggestion handed out, the response-time summaries and the events besides.
    fn apply(&mut self, change: ChangeSet) {
        self.events.extend(change.events.iter().cloned());
        let suggestions = &self.suggestions;
        self.history
            .apply(&change, |id| suggestions.get(&id).map(|g| g.issued_t))
            .expect("a local session knows every suggestion it handed out");
        if let Some(sample) = change.response_time {
            ResponseTimeSummary::fold(&mut self.response_times, sample);
        }
        for suggestion in change.new_suggestions {
            self.suggestions.insert(suggestion.id, suggestion);
        }
        for (id, status) in change.suggestion_status {
            if let Some(suggestion) = self.suggestions.get_mut(&id) {
                suggestion.status = status;
            }
        }
    }
}
