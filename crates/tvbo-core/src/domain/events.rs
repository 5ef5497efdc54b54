//! Drift events (docs/events.md): what a step found that an operator should be told,
//! stored with the step (an outbox, in the step's transaction) and listed by
//! `GET /v1/sessions/{id}/events`.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::domain::space::Params;

/// The kinds of event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventKind {
    /// The recommendation (the posterior mean's maximiser a suggest records) moved
    /// farther than [`OPTIMUM_MOVED_DISTANCE`] from where it stood at the last such event,
    /// and stayed there for [`OPTIMUM_MOVED_PERSISTENCE`] suggests.
    OptimumMoved,
    /// R-GP-UCB or ET-GP-UCB reset its model: every observation before was forgotten.
    ModelReset,
    /// A session whose algorithm keeps its observations (all but BOLT) reached the
    /// server's cap on active observations: further observes are refused.
    DatasetFull,
    /// PE-GP-UCB or PE-GP-TS eliminated a prior from its active set.
    PriorEliminated,
    /// No observation arrived for the session's `events.idle_seconds`: raised by the
    /// server's idle scan, not by a step.
    SessionIdle,
}

impl EventKind {
    /// The name the API and the store use.
    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::OptimumMoved => "optimum-moved",
            EventKind::ModelReset => "model-reset",
            EventKind::DatasetFull => "dataset-full",
            EventKind::PriorEliminated => "prior-eliminated",
            EventKind::SessionIdle => "session-idle",
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

/// How far the recommendation must move, in the unit cube's largest coordinate change, to
/// be an `optimum-moved` event: a fifth of a parameter's range.
pub const OPTIMUM_MOVED_DISTANCE: f64 = 0.2;

/// How many consecutive suggests the recommendation must stand away from the last
/// reference (and near itself) before `optimum-moved` is found; as many to settle a
/// first reference. A single suggest's argmax can jump between two near-equal maxima of
/// a noisy posterior; three in a row cannot, by chance, often.
pub const OPTIMUM_MOVED_PERSISTENCE: u32 = 3;

/// A recommendation as the drift events compare it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RecommendationAt {
    /// In the unit cube.
    pub x: Vec<f64>,
    pub params: Params,
    /// The posterior mean there, in the objective's units and sign.
    pub mean: f64,
    pub t: f64,
}

/// What the drift events carry from step to step (in the policy's saved state).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DriftState {
    /// Where the recommendation stood at the last `optimum-moved` event (or where it first
    /// settled); none until it settles, and again after a model reset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference: Option<RecommendationAt>,
    /// The newest recommendation away from the reference (or, while settling, the newest
    /// one), and for how many consecutive suggests it has stood near where it is now.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub candidate: Option<RecommendationAt>,
    #[serde(default)]
    pub streak: u32,
}
