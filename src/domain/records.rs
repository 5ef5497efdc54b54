//! A session's state as the store keeps it (the session, its observations, suggestions
//! and response-time samples), the snapshot a change is planned from ([`History`]) and the
//! change itself ([`ChangeSet`]), which a store applies atomically.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::domain::config::SessionConfig;
use crate::domain::space::Params;

/// A session as stored, with its counts.
#[derive(Clone, Debug)]
pub struct SessionRow {
    pub id: Uuid,
    pub config: SessionConfig,
    pub created_at: DateTime<Utc>,
    pub status: String,
    /// Incremented by every committed change.
    pub version: i64,
    /// The policy's saved state (JSON).
    pub state: serde_json::Value,
    /// Suggestions handed out so far.
    pub suggest_count: i64,
    /// Session time and active dataset size at the last suggest call.
    pub last_suggest: Option<(f64, i64)>,
    pub observation_count: i64,
    pub dataset_size: i64,
    pub pending_count: i64,
}

/// Status of a suggestion.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SuggestionStatus {
    Pending,
    Observed,
    Expired,
}

impl SuggestionStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            SuggestionStatus::Pending => "pending",
            SuggestionStatus::Observed => "observed",
            SuggestionStatus::Expired => "expired",
        }
    }

    /// The status of its name; `None` for any other text.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "pending" => Some(SuggestionStatus::Pending),
            "observed" => Some(SuggestionStatus::Observed),
            "expired" => Some(SuggestionStatus::Expired),
            _ => None,
        }
    }
}

/// A suggestion handed out to a client.
#[derive(Clone, Debug, PartialEq)]
pub struct SuggestionRow {
    pub id: Uuid,
    /// 0, 1, ... per session, in the order suggestions were handed out.
    pub ordinal: i64,
    pub params: Params,
    /// The point in `[0,1]^d` the model saw.
    pub unit: Vec<f64>,
    pub arm: Option<String>,
    /// Session time when it was handed out.
    pub issued_t: f64,
    /// Session time it targets (issued_t + lead).
    pub t: f64,
    pub created_at: DateTime<Utc>,
    pub status: SuggestionStatus,
}

/// An observation, active or forgotten.
#[derive(Clone, Debug, PartialEq)]
pub struct ObservationRow {
    /// 1, 2, ... per session, in the order observations were committed.
    pub seq: i64,
    pub suggestion_id: Option<Uuid>,
    pub params: Params,
    pub unit: Vec<f64>,
    pub value: f64,
    /// Session time of the measurement.
    pub t: f64,
    pub measured_at: Option<DateTime<Utc>>,
    pub regret: Option<f64>,
    pub active: bool,
    pub removed_at: Option<DateTime<Utc>>,
    pub removed_reason: Option<String>,
    pub created_at: DateTime<Utc>,
}

/// One recorded response-time sample: n at the first of two consecutive suggests, and the
/// seconds between them (BOLT, Section 4).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ResponseTimeSample {
    pub n: i64,
    pub seconds: f64,
}

/// Server compute time of one call.
#[derive(Clone, Debug, PartialEq)]
pub struct CallRecord {
    pub kind: &'static str,
    pub t: f64,
    pub dataset_size: i64,
    pub compute_seconds: f64,
}

/// An observation being forgotten.
#[derive(Clone, Debug, PartialEq)]
pub struct Deactivation {
    pub seq: i64,
    pub reason: String,
}

/// How many recent measurement delays feed the lead-time estimate ([`History::recent_delays`]).
pub const RECENT_DELAYS: i64 = 50;

/// Everything a session needs to rebuild its model.
#[derive(Clone, Debug)]
pub struct History {
    pub session: SessionRow,
    pub active: Vec<ObservationRow>,
    pub pending: Vec<SuggestionRow>,
    /// Delays between handing out and measuring, of the latest observed suggestions.
    pub recent_delays: Vec<f64>,
    pub next_seq: i64,
}

/// An atomic change to one session.
#[derive(Clone, Debug, Default)]
pub struct ChangeSet {
    pub new_suggestions: Vec<SuggestionRow>,
    pub suggestion_status: Vec<(Uuid, SuggestionStatus)>,
    pub new_observations: Vec<ObservationRow>,
    pub deactivate: Vec<Deactivation>,
    pub state: Option<serde_json::Value>,
    pub last_suggest: Option<(f64, i64)>,
    pub response_time: Option<ResponseTimeSample>,
    pub calls: Vec<CallRecord>,
}
