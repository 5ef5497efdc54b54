//! Drift events (docs/events.md): what a step found that an operator should be told,
//! stored with the step (an outbox, in the step's transaction) and listed by
//! `GET /v1/sessions/{id}/events`.

use chrono::{DateTime, Utc};

/// The kinds of event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventKind {
    /// R-GP-UCB or ET-GP-UCB reset its model: every observation before was forgotten.
    ModelReset,
    /// PE-GP-UCB or PE-GP-TS eliminated a prior from its active set.
    PriorEliminated,
}

impl EventKind {
    /// The name the API and the store use.
    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::ModelReset => "model-reset",
            EventKind::PriorEliminated => "prior-eliminated",
        }
    }
}

/// An event a step found, before it is stored.
#[derive(Clone, Debug, PartialEq)]
pub struct NewEvent {
    pub kind: EventKind,
    /// Session time of the step that found it.
    pub t: f64,
    /// What the kind says of it (docs/events.md).
    pub data: serde_json::Value,
}

/// An event as stored.
#[derive(Clone, Debug, PartialEq)]
pub struct StoredEvent {
    /// The session's events count from 1, in the order their steps were committed.
    pub seq: i64,
    /// The id of the step (call) that found it, as `GET …/steps` lists it.
    pub step: i64,
    /// An [`EventKind`]'s name, kept as stored (a newer replica may write kinds this one
    /// does not know).
    pub kind: String,
    pub t: f64,
    pub data: serde_json::Value,
    pub created_at: DateTime<Utc>,
}
