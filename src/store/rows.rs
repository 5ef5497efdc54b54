//! Decoding stored rows, once for both backends: each backend's row type only says how to
//! read a column of each primitive type ([`Columns`]).

use sqlx::Row;
use sqlx::postgres::PgRow;
use sqlx::sqlite::SqliteRow;
use uuid::Uuid;

use super::{
    ApiKeyRow, EndedRun, ListedSession, ObservationRow, ResponseTimeSample, ResponseTimeSummary,
    RunEnd, SessionCursor, SessionRow, SessionSort, SortKey, StoreError, StoredCall, SuggestionRow,
    SuggestionStatus, from_micros,
};

use crate::domain::events::StoredEvent;
use crate::domain::input::Metadata;
use crate::domain::records::FailedRun;
pub(crate) use crate::domain::records::{MODEL_FAILED_RUNS, RECENT_DELAYS};

/// Typed access to a row's columns by name.
pub(crate) trait Columns {
    fn text(&self, name: &str) -> Result<&str, StoreError>;
    fn opt_text(&self, name: &str) -> Result<Option<&str>, StoreError>;
    fn int(&self, name: &str) -> Result<i64, StoreError>;
    fn opt_int(&self, name: &str) -> Result<Option<i64>, StoreError>;
    fn real(&self, name: &str) -> Result<f64, StoreError>;
    fn opt_real(&self, name: &str) -> Result<Option<f64>, StoreError>;
    /// A boolean column (INTEGER 0/1 in SQLite, BOOLEAN in PostgreSQL).
    fn flag(&self, name: &str) -> Result<bool, StoreError>;
}

macro_rules! columns_by_try_get {
    ($row:ty) => {
        impl Columns for $row {
            fn text(&self, name: &str) -> Result<&str, StoreError> {
                Ok(self.try_get(name)?)
            }
            fn opt_text(&self, name: &str) -> Result<Option<&str>, StoreError> {
                Ok(self.try_get(name)?)
            }
            fn int(&self, name: &str) -> Result<i64, StoreError> {
                Ok(self.try_get(name)?)
            }
            fn opt_int(&self, name: &str) -> Result<Option<i64>, StoreError> {
                Ok(self.try_get(name)?)
            }
            fn real(&self, name: &str) -> Result<f64, StoreError> {
                Ok(self.try_get(name)?)
            }
            fn opt_real(&self, name: &str) -> Result<Option<f64>, StoreError> {
                Ok(self.try_get(name)?)
            }
            fn flag(&self, name: &str) -> Result<bool, StoreError> {
                Ok(self.try_get(name)?)
            }
        }
    };
}

columns_by_try_get!(SqliteRow);
columns_by_try_get!(PgRow);

pub(crate) fn corrupt(what: &str, e: impl std::fmt::Display) -> StoreError {
    StoreError::Corrupt(format!("{what}: {e}"))
}

pub(crate) fn parse_uuid(s: &str) -> Result<Uuid, StoreError> {
    Uuid::parse_str(s).map_err(|e| corrupt("uuid", e))
}

pub(crate) fn to_json<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_string(value).expect("plain data serialises")
}

pub(crate) fn from_json<T: serde::de::DeserializeOwned>(
    text: &str,
    what: &str,
) -> Result<T, StoreError> {
    serde_json::from_str(text).map_err(|e| corrupt(what, e))
}

pub(crate) fn session_from_row(row: &impl Columns) -> Result<SessionRow, StoreError> {
    Ok(SessionRow {
        id: parse_uuid(row.text("id")?)?,
        tenant: row.text("tenant")?.to_string(),
        config: from_json(row.text("config")?, "session config")?,
        created_at: from_micros(row.int("created_micros")?)?,
        status: row.text("status")?.to_string(),
        version: row.int("version")?,
        state: from_json(row.text("state")?, "session state")?,
        suggest_count: row.int("suggest_count")?,
        last_suggest: row
            .opt_real("last_suggest_t")?
            .zip(row.opt_int("last_suggest_n")?),
        last_optimum_mean: row.opt_real("last_optimum_mean")?,
        observation_count: row.int("observation_count")?,
        dataset_size: row.int("dataset_size")?,
        pending_count: row.int("pending_count")?,
    })
}

/// A row of a session listing in the order `sort`: its position (`sort_key`, the id) and
/// activity, which must decode, and the session or why it does not.
pub(crate) fn listed_session_from_row(
    row: &impl Columns,
    sort: SessionSort,
) -> Result<ListedSession, StoreError> {
    let key = match sort {
        SessionSort::Name => SortKey::Text(row.text("sort_key")?.to_string()),
        SessionSort::Regret => SortKey::Real(row.real("sort_key")?),
        _ => SortKey::Int(row.int("sort_key")?),
    };
    Ok(ListedSession {
        cursor: SessionCursor {
            key,
            id: parse_uuid(row.text("id")?)?,
        },
        last_activity_at: from_micros(row.int("last_activity_micros")?)?,
        last_activity_t: row.opt_real("last_activity_t")?,
        session: session_from_row(row),
    })
}

pub(crate) fn api_key_from_row(row: &impl Columns) -> Result<ApiKeyRow, StoreError> {
    Ok(ApiKeyRow {
        id: parse_uuid(row.text("id")?)?,
        name: row.text("name")?.to_string(),
        tenant: row.text("tenant")?.to_string(),
        admin: row.flag("admin")?,
        secret_hash: row.text("secret_hash")?.to_string(),
        created_at: from_micros(row.int("created_micros")?)?,
        revoked_at: row
            .opt_int("revoked_micros")?
            .map(from_micros)
            .transpose()?,
        rate_limit: row
            .opt_int("rate_limit")?
            .map(|rate| {
                u32::try_from(rate)
                    .ok()
                    .and_then(std::num::NonZeroU32::new)
                    .ok_or_else(|| corrupt("api_keys.rate_limit", rate))
            })
            .transpose()?,
    })
}

pub(crate) fn suggestion_from_row(row: &impl Columns) -> Result<SuggestionRow, StoreError> {
    Ok(SuggestionRow {
        id: parse_uuid(row.text("id")?)?,
        ordinal: row.int("ordinal")?,
        params: from_json(row.text("params")?, "params")?,
        unit: from_json(row.text("unit")?, "unit")?,
        arm: row.opt_text("arm")?.map(str::to_string),
        issued_t: row.real("issued_t")?,
        t: row.real("t")?,
        created_at: from_micros(row.int("created_micros")?)?,
        status: {
            let status = row.text("status")?;
            SuggestionStatus::parse(status)
                .ok_or_else(|| StoreError::Corrupt(format!("suggestion status {status:?}")))?
        },
    })
}

pub(crate) fn observation_from_row(row: &impl Columns) -> Result<ObservationRow, StoreError> {
    Ok(ObservationRow {
        seq: row.int("seq")?,
        suggestion_id: row.opt_text("suggestion_id")?.map(parse_uuid).transpose()?,
        params: from_json(row.text("params")?, "params")?,
        unit: from_json(row.text("unit")?, "unit")?,
        value: row.real("value")?,
        t: row.real("t")?,
        measured_at: row
            .opt_int("measured_micros")?
            .map(from_micros)
            .transpose()?,
        regret: row.opt_real("regret")?,
        regret_estimate: row.opt_real("regret_estimate")?,
        active: row.flag("active")?,
        removed_at: row
            .opt_int("removed_micros")?
            .map(from_micros)
            .transpose()?,
        removed_t: row.opt_real("removed_t")?,
        removed_reason: row.opt_text("removed_reason")?.map(str::to_string),
        metadata: metadata_of(row)?,
        created_at: from_micros(row.int("created_micros")?)?,
    })
}

pub(crate) fn ended_run_from_row(row: &impl Columns) -> Result<EndedRun, StoreError> {
    let kind = row.text("kind")?;
    Ok(EndedRun {
        suggestion_id: row.opt_text("suggestion_id")?.map(parse_uuid).transpose()?,
        kind: RunEnd::parse(kind).ok_or_else(|| corrupt("ended run kind", kind))?,
        params: from_json(row.text("params")?, "params")?,
        t: row.real("t")?,
        reason: row.opt_text("reason")?.map(str::to_string),
        metadata: metadata_of(row)?,
        created_at: from_micros(row.int("created_micros")?)?,
    })
}

/// A failed run as a history holds it for the model: its `params` and `t` columns.
pub(crate) fn failed_run_from_row(row: &impl Columns) -> Result<FailedRun, StoreError> {
    Ok(FailedRun {
        params: from_json(row.text("params")?, "params")?,
        t: row.real("t")?,
    })
}

/// A run's `metadata` column: a JSON object, or NULL.
fn metadata_of(row: &impl Columns) -> Result<Option<Metadata>, StoreError> {
    row.opt_text("metadata")?
        .map(|json| from_json(json, "metadata"))
        .transpose()
}

pub(crate) fn response_time_from_row(row: &impl Columns) -> Result<ResponseTimeSample, StoreError> {
    Ok(ResponseTimeSample {
        n: row.int("n")?,
        seconds: row.real("seconds")?,
    })
}

pub(crate) fn response_time_summary_from_row(
    row: &impl Columns,
) -> Result<ResponseTimeSummary, StoreError> {
    Ok(ResponseTimeSummary {
        n: row.int("n")?,
        count: row.int("count")?,
        total_seconds: row.real("total_seconds")?,
    })
}

pub(crate) fn call_from_row(row: &impl Columns) -> Result<StoredCall, StoreError> {
    Ok(StoredCall {
        id: row.int("id")?,
        kind: row.text("kind")?.to_string(),
        t: row.real("t")?,
        dataset_size: row.int("dataset_size")?,
        compute_seconds: row.real("compute_seconds")?,
        snapshot: row
            .opt_text("snapshot")?
            .map(|text| from_json(text, "step snapshot"))
            .transpose()?,
    })
}

/// An event's row; one whose step, kind, time, data or date does not read back is its
/// [`StoredEvent::unreadable`] marker (only a damaged `seq`, the order of the session's
/// events, is an error).
pub(crate) fn event_from_row(row: &impl Columns) -> Result<StoredEvent, StoreError> {
    let seq = row.int("seq")?;
    let read = || -> Result<StoredEvent, StoreError> {
        Ok(StoredEvent {
            seq,
            step: row.int("step")?,
            kind: row.text("kind")?.to_string(),
            t: row.real("t")?,
            data: from_json(row.text("data")?, "event data")?,
            created_at: from_micros(row.int("created_micros")?)?,
        })
    };
    Ok(read().unwrap_or_else(|e| {
        StoredEvent::unreadable(
            seq,
            row.int("step").ok(),
            row.real("t").ok(),
            row.int("created_micros")
                .ok()
                .and_then(|micros| from_micros(micros).ok()),
            e.to_string(),
        )
    }))
}
