//! The listings' queries. The session listing (`GET /v1/sessions`): its filters and
//! orders, the cursors that page through them, and each session's summary (regret,
//! sparkline, last activity, tracking status): what a row of the dashboard's list shows,
//! read for the whole page at once (three store queries per page, whatever its size or
//! the sessions' ages).
//! The observation listing's query (`GET /v1/sessions/{id}/observations`, answered in
//! `session::reads`): state, order and page.

use std::collections::HashMap;

use chrono::Utc;
use uuid::Uuid;

use super::error::ServiceError;
use super::service::SessionService;
use super::tracking::{TrackingInput, tracking};
use super::views::{Session, SessionList, SessionListEntry, SessionSummary, UnreadableSession};
use crate::domain::InvalidInput;
pub use crate::domain::algorithm::AlgorithmName;
use crate::store::{
    ObservationQuery, ObservationSort, ObservationState, RegretSlice, SessionCursor, SessionQuery,
    SessionSort, SortKey, SortOrder,
};

/// Most points of a listed session's sparkline.
pub const SPARKLINE_POINTS: i64 = 40;

/// The `cursor` a listing accepts, as the OpenAPI document states it: the creation time's
/// and id (newest first, the default order), or the order, its direction, the sort key
/// (an integer, the folded name's UTF-8 in hex, or the mean regret's 64 bits in hex) and
/// the id.
pub const CURSOR_PATTERN: &str = r"^(-?[0-9]{1,18}_|(created|observations|last_activity)\.(asc|desc)\.-?[0-9]{1,18}\.|name\.(asc|desc)\.([0-9a-f]{2})*\.|regret\.(asc|desc)\.[0-9a-f]{16}\.)[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$";

/// A listing cursor as written ([`CURSOR_PATTERN`]); whether it belongs to the order
/// asked for is checked by the listing. Parsing refuses anything else, as a query value
/// that does not parse (400).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListCursor {
    sort: SessionSort,
    order: SortOrder,
    key: CursorKey,
    id: Uuid,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum CursorKey {
    Int(i64),
    /// The bytes of a text key (the name's, hex in the cursor).
    Bytes(Vec<u8>),
    /// The bits of a real key (the mean regret's, 16 hex digits in the cursor): exact.
    Bits(u64),
}

/// A cursor that does not parse.
#[derive(Debug, thiserror::Error)]
#[error("is not a cursor this server handed out")]
pub struct MalformedCursor;

impl std::str::FromStr for ListCursor {
    type Err = MalformedCursor;

    fn from_str(text: &str) -> Result<Self, MalformedCursor> {
        let (head, id) = text.rsplit_once(['_', '.']).ok_or(MalformedCursor)?;
        let id = strict_uuid(id).ok_or(MalformedCursor)?;
        let legacy = text.as_bytes()[head.len()] == b'_';
        if legacy {
            return Ok(ListCursor {
                sort: SessionSort::Created,
                order: SortOrder::Desc,
                key: CursorKey::Int(strict_int(head).ok_or(MalformedCursor)?),
                id,
            });
        }
        let mut parts = head.splitn(3, '.');
        let (Some(sort), Some(order), Some(key)) = (parts.next(), parts.next(), parts.next())
        else {
            return Err(MalformedCursor);
        };
        let sort = SessionSort::ALL
            .into_iter()
            .find(|s| s.as_str() == sort)
            .ok_or(MalformedCursor)?;
        let order = [SortOrder::Asc, SortOrder::Desc]
            .into_iter()
            .find(|o| o.as_str() == order)
            .ok_or(MalformedCursor)?;
        let key = match sort {
            SessionSort::Name => CursorKey::Bytes(strict_hex(key).ok_or(MalformedCursor)?),
            SessionSort::Regret => CursorKey::Bits(
                (key.len() == 16)
                    .then(|| u64::from_str_radix(key, 16).ok())
                    .flatten()
                    .filter(|_| {
                        key.bytes()
                            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
                    })
                    .ok_or(MalformedCursor)?,
            ),
            _ => CursorKey::Int(strict_int(key).ok_or(MalformedCursor)?),
        };
        Ok(ListCursor {
            sort,
            order,
            key,
            id,
        })
    }
}

impl<'de> serde::Deserialize<'de> for ListCursor {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

impl ListCursor {
    /// The cursor after `position` in the order `sort`, `order`: as written before orders
    /// existed for the default (newest first), else naming the order.
    pub fn written(sort: SessionSort, order: SortOrder, position: &SessionCursor) -> String {
        let id = position.id;
        match (&position.key, sort, order) {
            (SortKey::Int(micros), SessionSort::Created, SortOrder::Desc) => {
                format!("{micros}_{id}")
            }
            (SortKey::Int(value), _, _) => {
                format!("{}.{}.{value}.{id}", sort.as_str(), order.as_str())
            }
            (SortKey::Text(text), _, _) => {
                let hex = hex::encode(text);
                format!("{}.{}.{hex}.{id}", sort.as_str(), order.as_str())
            }
            (SortKey::Real(value), _, _) => {
                format!(
                    "{}.{}.{:016x}.{id}",
                    sort.as_str(),
                    order.as_str(),
                    value.to_bits()
                )
            }
        }
    }

    /// The position it stands for in the order `sort`, `order`: a cursor of another order
    /// (or a text key that is not UTF-8) is a 422 naming `cursor`.
    fn position(self, sort: SessionSort, order: SortOrder) -> Result<SessionCursor, InvalidInput> {
        if (self.sort, self.order) != (sort, order) {
            return Err(InvalidInput::new(
                "cursor",
                format!(
                    "was handed out for sort={}&order={}, not sort={}&order={}",
                    self.sort.as_str(),
                    self.order.as_str(),
                    sort.as_str(),
                    order.as_str()
                ),
            ));
        }
        let not_handed_out =
            || InvalidInput::new("cursor", "is not a cursor this server handed out");
        let key = match self.key {
            CursorKey::Int(value) => SortKey::Int(value),
            // The mean is finite (a regret is): other bits are no cursor of ours.
            CursorKey::Bits(bits) => SortKey::Real(
                Some(f64::from_bits(bits))
                    .filter(|value| value.is_finite())
                    .ok_or_else(not_handed_out)?,
            ),
            // A folded name holds no NUL (names hold no control character), and PostgreSQL
            // takes no text with one.
            CursorKey::Bytes(bytes) => SortKey::Text(
                String::from_utf8(bytes)
                    .ok()
                    .filter(|text| !text.contains('\0'))
                    .ok_or_else(not_handed_out)?,
            ),
        };
        Ok(SessionCursor { key, id: self.id })
    }
}

/// `-?[0-9]{1,18}` as an integer.
fn strict_int(text: &str) -> Option<i64> {
    let digits = text.strip_prefix('-').unwrap_or(text);
    let plain = (1..=18).contains(&digits.len()) && digits.bytes().all(|b| b.is_ascii_digit());
    plain.then(|| text.parse().ok()).flatten()
}

/// `([0-9a-f]{2})*` as bytes.
fn strict_hex(text: &str) -> Option<Vec<u8>> {
    let lower_hex = |b: u8| b.is_ascii_digit() || (b'a'..=b'f').contains(&b);
    if !text.bytes().all(lower_hex) {
        return None;
    }
    hex::decode(text).ok()
}

/// A UUID written as the server writes one: hyphenated, lowercase.
fn strict_uuid(text: &str) -> Option<Uuid> {
    let id = Uuid::parse_str(text).ok()?;
    (id.hyphenated().to_string() == text).then_some(id)
}

/// What a listing asks for besides its tenant.
#[derive(Clone, Debug, Default)]
pub struct ListingQuery {
    /// Page size, 1 to 1000 (default 50).
    pub limit: Option<i64>,
    /// The `next_cursor` of the previous page (of the same order and filters).
    pub cursor: Option<ListCursor>,
    /// Only sessions whose name contains this, case folded.
    pub name: Option<String>,
    pub algorithm: Option<AlgorithmName>,
    /// Default `created`.
    pub sort: Option<SessionSort>,
    /// Default: the sort's own ([`SessionSort::default_order`]).
    pub order: Option<SortOrder>,
}

impl SessionService {
    /// A page of sessions in the order `query` asks for: `tenant`'s, or every tenant's
    /// (each with its tenant) when None. Each session comes with its summary.
    pub async fn list_sessions(
        &self,
        query: ListingQuery,
        tenant: Option<&str>,
    ) -> Result<SessionList, ServiceError> {
        let limit = query.limit.unwrap_or(50);
        if !(1..=1000).contains(&limit) {
            return Err(InvalidInput::new("limit", "must be between 1 and 1000").into());
        }
        let sort = query.sort.unwrap_or_default();
        let order = query.order.unwrap_or(sort.default_order());
        let after = query
            .cursor
            .map(|cursor| cursor.position(sort, order))
            .transpose()?;
        let selected = SessionQuery {
            limit: limit + 1,
            tenant,
            name: query.name.as_deref(),
            algorithm: query.algorithm.map(AlgorithmName::as_str),
            sort,
            order,
            after,
        };
        // No name holds a NUL (names hold no control character), and PostgreSQL takes no
        // text with one: such a filter matches nothing, asked or not.
        let mut rows = if query
            .name
            .as_deref()
            .is_some_and(|name| name.contains('\0'))
        {
            Vec::new()
        } else {
            self.store.list_sessions(&selected).await?
        };
        let more = rows.len() as i64 > limit;
        rows.truncate(limit as usize);
        let next_cursor = more
            .then(|| rows.last())
            .flatten()
            .map(|row| ListCursor::written(sort, order, &row.cursor));
        let readable: Vec<Uuid> = rows
            .iter()
            .filter(|row| row.session.is_ok())
            .map(|row| row.cursor.id)
            .collect();
        // Each readable session's newest regrets, for its status now.
        let counts: Vec<(Uuid, i64)> = rows
            .iter()
            .filter_map(|row| {
                row.session
                    .as_ref()
                    .ok()
                    .map(|s| (row.cursor.id, s.observation_count))
            })
            .collect();
        let mut newest: HashMap<Uuid, Vec<(f64, f64)>> = HashMap::new();
        for (id, t, regret) in self.store.newest_regrets(&counts).await? {
            newest.entry(id).or_default().push((t, regret));
        }
        let now = Utc::now();
        let mut slices: HashMap<Uuid, Vec<RegretSlice>> = HashMap::new();
        for slice in self
            .store
            .regret_slices(&readable, SPARKLINE_POINTS)
            .await?
        {
            slices.entry(slice.session_id).or_default().push(slice);
        }
        let mut sessions = Vec::with_capacity(rows.len());
        let mut unreadable = Vec::new();
        for row in rows {
            let id = row.cursor.id;
            match row.session {
                Ok(session) => {
                    // What its timeline's `tracking` says, without the rolling line.
                    let tracking = tracking(&TrackingInput {
                        observations: &[],
                        groups: &[],
                        recent: newest.get(&id).map_or(&[][..], Vec::as_slice),
                        last_step_at: row.last_activity_t.map(|_| row.last_activity_at),
                        time_source: session.config.time.source,
                        now,
                    });
                    let summary = SessionSummary::of(
                        slices.get(&id).map_or(&[][..], Vec::as_slice),
                        row.last_activity_at,
                        row.last_activity_t,
                        &tracking,
                    );
                    sessions.push(SessionListEntry {
                        tenant: tenant.is_none().then(|| session.tenant.clone()),
                        session: Session::from(session),
                        summary,
                    });
                }
                Err(e) => {
                    self.log_unreadable(id, &e);
                    unreadable.push(UnreadableSession {
                        id,
                        unreadable: true,
                    });
                }
            }
        }
        Ok(SessionList {
            sessions,
            unreadable,
            next_cursor,
        })
    }
}

/// Largest page of the observation listing.
pub const MAX_OBSERVATION_PAGE: i64 = 10_000;

/// What the observation listing asks for (`GET /v1/sessions/{id}/observations`).
#[derive(Clone, Debug, Default)]
pub struct ObservationListing {
    /// Only observations with a larger seq (default 0).
    pub after: Option<i64>,
    /// Page size, 1 to [`MAX_OBSERVATION_PAGE`] (default 1000).
    pub limit: Option<i64>,
    /// Rows of the order skipped before the page (default 0).
    pub offset: Option<i64>,
    /// Which observations (default `active`, or `all` with `include_pruned`).
    pub state: Option<ObservationState>,
    /// The older spelling of `state=all` (true) and `state=active` (false); `state` wins
    /// when both are given.
    pub include_pruned: Option<bool>,
    /// Default `seq`.
    pub sort: Option<ObservationSort>,
    /// Default `asc`, whatever the sort.
    pub order: Option<SortOrder>,
}

impl ObservationListing {
    /// The store's query, with every default filled in; a limit or offset out of range is
    /// a 422 naming it.
    pub(super) fn query(&self) -> Result<ObservationQuery, InvalidInput> {
        let limit = self.limit.unwrap_or(1000);
        if !(1..=MAX_OBSERVATION_PAGE).contains(&limit) {
            return Err(InvalidInput::new(
                "limit",
                format!("must be between 1 and {MAX_OBSERVATION_PAGE}"),
            ));
        }
        let offset = self.offset.unwrap_or(0);
        if offset < 0 {
            return Err(InvalidInput::new("offset", "must be 0 or more"));
        }
        let state = self.state.unwrap_or(match self.include_pruned {
            Some(true) => ObservationState::All,
            Some(false) | None => ObservationState::Active,
        });
        Ok(ObservationQuery {
            after: self.after.unwrap_or(0),
            state,
            sort: self.sort.unwrap_or_default(),
            order: self.order.unwrap_or(SortOrder::Asc),
            offset,
            limit,
        })
    }
}

#[cfg(test)]
mod tests {
    use chrono::DateTime;

    use super::*;

    fn position(key: SortKey) -> SessionCursor {
        SessionCursor {
            key,
            id: Uuid::parse_str("0190a5c3-7a3e-7d1c-9f00-0123456789ab").unwrap(),
        }
    }

    #[test]
    fn cursors_read_back_as_written_for_their_own_order_only() {
        let cases = [
            (
                SessionSort::Created,
                SortOrder::Desc,
                SortKey::Int(1_700_000_000_000_000),
            ),
            (SessionSort::Created, SortOrder::Asc, SortKey::Int(-5)),
            (SessionSort::Observations, SortOrder::Desc, SortKey::Int(0)),
            (SessionSort::LastActivity, SortOrder::Asc, SortKey::Int(17)),
            (
                SessionSort::Name,
                SortOrder::Asc,
                SortKey::Text("ünï café_1.2".into()),
            ),
            (
                SessionSort::Name,
                SortOrder::Desc,
                SortKey::Text(String::new()),
            ),
            (
                SessionSort::Regret,
                SortOrder::Desc,
                SortKey::Real(0.1 + 0.2),
            ),
            (SessionSort::Regret, SortOrder::Asc, SortKey::Real(-1.0e300)),
        ];
        for (sort, order, key) in cases {
            let written = ListCursor::written(sort, order, &position(key.clone()));
            let parsed: ListCursor = written.parse().unwrap();
            assert_eq!(parsed.clone().position(sort, order).unwrap(), position(key));
            let other = if order == SortOrder::Asc {
                SortOrder::Desc
            } else {
                SortOrder::Asc
            };
            assert_eq!(parsed.position(sort, other).unwrap_err().field, "cursor");
        }
        assert_eq!(
            ListCursor::written(
                SessionSort::Created,
                SortOrder::Desc,
                &position(SortKey::Int(5))
            ),
            "5_0190a5c3-7a3e-7d1c-9f00-0123456789ab",
            "the default order's cursors are written as before orders existed"
        );
    }

    #[test]
    fn cursors_outside_the_pattern_do_not_parse() {
        let id = "0190a5c3-7a3e-7d1c-9f00-0123456789ab";
        for text in [
            String::new(),
            "garbage".into(),
            format!("+5_{id}"),
            format!("1234567890123456789_{id}"),
            format!("5_{}", id.to_uppercase()),
            format!("5_{}", id.replace('-', "")),
            format!("name.asc.abc.{id}"),
            format!("name.asc.AB.{id}"),
            format!("name.up.ab.{id}"),
            format!("size.asc.5.{id}"),
            format!("observations.asc.ab.{id}"),
            format!("observations.asc.5_{id}"),
            format!("created.desc.5.{id}.x"),
            format!("regret.desc.5.{id}"),
            format!("regret.desc.3FD3333333333334.{id}"),
            format!("regret.desc.+fd3333333333334.{id}"),
            format!("regret.desc.03fd3333333333334.{id}"),
        ] {
            assert!(text.parse::<ListCursor>().is_err(), "{text}");
        }
        // In the pattern, but not UTF-8, or with a NUL no name holds: refused by the
        // listing (422), not the parse.
        for key in ["ff", "00", "6100"] {
            let cursor: ListCursor = format!("name.asc.{key}.{id}").parse().unwrap();
            assert!(
                cursor.position(SessionSort::Name, SortOrder::Asc).is_err(),
                "{key}"
            );
        }
        // The bits of an infinity or a NaN: no mean regret is one.
        for bits in ["7ff0000000000000", "7ff8000000000000"] {
            let cursor: ListCursor = format!("regret.desc.{bits}.{id}").parse().unwrap();
            assert!(
                cursor
                    .position(SessionSort::Regret, SortOrder::Desc)
                    .is_err(),
                "{bits}"
            );
        }
    }

    #[test]
    fn a_summary_averages_every_regret_and_draws_the_valued_slices() {
        let id = Uuid::new_v4();
        let slice = |slice, total, valued, reported| RegretSlice {
            session_id: id,
            slice,
            total,
            valued,
            reported,
        };
        let at = DateTime::from_timestamp_micros(1_700_000_000_000_000).unwrap();
        // Two windows of regrets, the newest far above the ones before, a step just now.
        let recent: Vec<(f64, f64)> = (0..128)
            .map(|k| {
                (
                    f64::from(k),
                    if k < 64 {
                        0.1
                    } else {
                        1.0 + 0.01 * f64::from(k % 3)
                    },
                )
            })
            .collect();
        let lagging = tracking(&TrackingInput {
            observations: &[],
            groups: &[],
            recent: &recent,
            last_step_at: Some(at),
            time_source: crate::domain::config::TimeSource::Client,
            now: at,
        });
        let summary = SessionSummary::of(
            &[
                slice(0, 6.0, 3, 1),
                slice(1, 0.0, 0, 0),
                slice(2, 2.0, 1, 1),
            ],
            at,
            Some(4.5),
            &lagging,
        );
        assert_eq!(summary.average_regret, Some(2.0));
        assert_eq!(
            (summary.reported_regrets, summary.estimated_regrets),
            (2, 2)
        );
        assert_eq!(summary.sparkline, [2.0, 2.0]);
        assert_eq!(summary.last_activity_t, Some(4.5));
        assert_eq!(
            summary.tracking,
            super::super::tracking::TrackingStatus::Lagging
        );
        assert!(
            summary.tracking_reason.contains("above the 64 before"),
            "{}",
            summary.tracking_reason
        );
        let empty = SessionSummary::of(&[], at, None, &lagging);
        assert_eq!(empty.average_regret, None);
        assert!(empty.sparkline.is_empty());
    }
}
