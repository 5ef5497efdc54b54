//! What a client sends to record a measurement, before it is checked against its session
//! (the engine checks it and makes an observation of it).

use chrono::{DateTime, Utc};
use serde::Deserialize;
use utoipa::ToSchema;
use uuid::Uuid;

use crate::domain::space::Params;

/// One measured value, for a suggestion (`suggestion_id`) or for a setting the client
/// chose itself (`params`).
#[derive(Clone, Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ObservationInput {
    pub suggestion_id: Option<Uuid>,
    #[schema(value_type = Option<std::collections::BTreeMap<String, f64>>)]
    pub params: Option<Params>,
    #[schema(minimum = -1e100, maximum = 1e100)]
    pub value: f64,
    /// When the value was measured (wall-clock sessions; default: when the request arrived).
    pub measured_at: Option<DateTime<Utc>>,
    /// Session time of the measurement (client-time sessions, where it is required).
    #[schema(minimum = -1e10, maximum = 1e10)]
    pub t: Option<f64>,
    /// The true regret of this evaluation, if the client knows it (benchmarks); at most
    /// 1e100, as values are, so that sums of regrets stay finite.
    #[schema(minimum = 0, maximum = 1e100)]
    pub regret: Option<f64>,
}
