//! What a client sends to record a measurement, before it is checked against its session
//! (the engine checks it and makes an observation of it).

use chrono::{DateTime, Utc};
use serde::Deserialize;
use uuid::Uuid;

use crate::domain::space::Params;

/// A client's notes on one run (`metadata`): a JSON object kept with it and returned in
/// listings and exports, never read by the model.
pub type Metadata = serde_json::Map<String, serde_json::Value>;

/// Largest `metadata` object, in bytes of compact JSON.
pub const MAX_METADATA_BYTES: usize = 4096;

/// One measured value, for a suggestion (`suggestion_id`) or for a setting the client
/// chose itself (`params`); or, with `failed`, a measurement that failed (no value).
#[derive(Clone, Debug, Default, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct ObservationInput {
    pub suggestion_id: Option<Uuid>,
    #[cfg_attr(feature = "openapi", schema(value_type = Option<std::collections::BTreeMap<String, crate::domain::space::ParamValue>>))]
    pub params: Option<Params>,
    /// The measured value; required unless `failed` is true.
    #[cfg_attr(feature = "openapi", schema(minimum = -1e100, maximum = 1e100))]
    pub value: Option<f64>,
    /// `true`: the measurement failed (a timeout, a crash). It is recorded and shown and
    /// its suggestion is no longer pending; under `model.failures: impute` the model takes
    /// it as a value below every success, under `ignore` nothing of it; no `value` or
    /// `regret`.
    pub failed: Option<bool>,
    /// Why a failed run failed, in the client's words (with `failed` only).
    #[cfg_attr(feature = "openapi", schema(max_length = 500))]
    pub reason: Option<String>,
    /// The client's notes on this run (a host, a build, a log line): a JSON object of at
    /// most 4096 bytes, kept and returned in listings and exports, never modelled.
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Object>))]
    pub metadata: Option<Metadata>,
    /// When the value was measured (wall-clock sessions; default: when the request arrived).
    pub measured_at: Option<DateTime<Utc>>,
    /// Session time of the measurement (client-time sessions, where it is required).
    #[cfg_attr(feature = "openapi", schema(minimum = -1e10, maximum = 1e10))]
    pub t: Option<f64>,
    /// The true regret of this evaluation, if the client knows it (benchmarks); at most
    /// 1e100, as values are, so that sums of regrets stay finite.
    #[cfg_attr(feature = "openapi", schema(minimum = 0, maximum = 1e100))]
    pub regret: Option<f64>,
}
