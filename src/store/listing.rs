//! What the listings ask of the store: the session listing's filters, orders and the
//! position a page starts after, the regrets of a page's sessions summarised by slices of
//! their histories, and the observation listing's filter, order and page. The SQL is in
//! `queries.rs` with the rest; the orders are named here as the API names them.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use super::{ObservationRow, SessionRow, StoreError};

/// The orders of the session listing; ties are broken by the session's id.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum SessionSort {
    /// By creation time (newest first by default).
    #[default]
    Created,
    /// By name, case folded (A to Z by default).
    Name,
    /// By the observations ever recorded (most first by default).
    Observations,
    /// By the time of the newest step, a suggest or an observe call; a session without
    /// one by its creation (most recent first by default).
    LastActivity,
    /// By the mean of every regret the session recorded (the summary's
    /// `average_regret`; highest, the worst, first by default); a session without any
    /// below every mean.
    Regret,
}

impl SessionSort {
    /// Every order, as the API names it.
    pub const ALL: [SessionSort; 5] = [
        SessionSort::Created,
        SessionSort::Name,
        SessionSort::Observations,
        SessionSort::LastActivity,
        SessionSort::Regret,
    ];

    /// The order's name in the API (and in its cursors).
    pub fn as_str(self) -> &'static str {
        match self {
            SessionSort::Created => "created",
            SessionSort::Name => "name",
            SessionSort::Observations => "observations",
            SessionSort::LastActivity => "last_activity",
            SessionSort::Regret => "regret",
        }
    }

    /// The direction it goes in when the client names none.
    pub fn default_order(self) -> SortOrder {
        match self {
            SessionSort::Name => SortOrder::Asc,
            SessionSort::Created
            | SessionSort::Observations
            | SessionSort::LastActivity
            | SessionSort::Regret => SortOrder::Desc,
        }
    }

    /// The sort key over `sessions s` (an index's expression: migrations 0009/0010, and
    /// 0013/0014 for the regret, whose sessions without any sit at -1e300).
    pub(crate) fn key_sql(self) -> &'static str {
        match self {
            SessionSort::Created => "s.created_micros",
            SessionSort::Name => "lower(s.name)",
            SessionSort::Observations => "s.observation_count",
            SessionSort::LastActivity => "s.last_activity_micros",
            SessionSort::Regret => "COALESCE(s.average_regret, -1.0e300)",
        }
    }
}

/// A direction of a listing's order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum SortOrder {
    Asc,
    Desc,
}

impl SortOrder {
    pub fn as_str(self) -> &'static str {
        match self {
            SortOrder::Asc => "asc",
            SortOrder::Desc => "desc",
        }
    }

    /// The SQL keyword, and the comparison that holds for the rows after a position.
    pub(crate) fn sql(self) -> (&'static str, &'static str) {
        match self {
            SortOrder::Asc => ("ASC", ">"),
            SortOrder::Desc => ("DESC", "<"),
        }
    }
}

/// A session's value of its listing's sort key: the creation time, observation count or
/// activity time (unix microseconds), the case-folded name as the database folds it, or
/// the mean regret.
#[derive(Clone, Debug, PartialEq)]
pub enum SortKey {
    Int(i64),
    Text(String),
    Real(f64),
}

/// Where a session sits in a listing's order: its sort key, ties broken by its id.
#[derive(Clone, Debug, PartialEq)]
pub struct SessionCursor {
    pub key: SortKey,
    pub id: Uuid,
}

/// Which sessions a listing page holds, in which order.
#[derive(Clone, Debug)]
pub struct SessionQuery<'a> {
    /// Most sessions answered.
    pub limit: i64,
    /// Only this tenant's; every tenant's when None.
    pub tenant: Option<&'a str>,
    /// Only those whose name contains this, case folded (ASCII letters on SQLite, every
    /// letter on PostgreSQL: each database's `lower`).
    pub name: Option<&'a str>,
    /// Only those of this algorithm (its API name, `bolt`).
    pub algorithm: Option<&'a str>,
    pub sort: SessionSort,
    pub order: SortOrder,
    /// Only the sessions strictly after this position in the order.
    pub after: Option<SessionCursor>,
}

impl<'a> SessionQuery<'a> {
    /// Newest first, unfiltered but for the tenant: the listing's default.
    pub fn newest_first(limit: i64, after: Option<SessionCursor>, tenant: Option<&'a str>) -> Self {
        SessionQuery {
            limit,
            tenant,
            name: None,
            algorithm: None,
            sort: SessionSort::Created,
            order: SortOrder::Desc,
            after,
        }
    }
}

/// A `LIKE` pattern matching the text that contains `part` (`\` escapes).
pub(crate) fn contains_pattern(part: &str) -> String {
    let mut pattern = String::with_capacity(part.len() + 2);
    pattern.push('%');
    for c in part.chars() {
        if matches!(c, '%' | '_' | '\\') {
            pattern.push('\\');
        }
        pattern.push(c);
    }
    pattern.push('%');
    pattern
}

/// One row of a session listing: its position in the order, when it last changed, and
/// the session or why it could not be decoded (a damaged row is listed, not fatal to the
/// listing).
#[derive(Debug)]
pub struct ListedSession {
    pub cursor: SessionCursor,
    /// The wall-clock time of the session's newest step (its creation before any).
    pub last_activity_at: DateTime<Utc>,
    /// The session time of that step; None before any.
    pub last_activity_t: Option<f64>,
    pub session: Result<SessionRow, StoreError>,
}

/// The regrets of one slice of a session's history: consecutive observations, the
/// slices in order and at most as many as asked for.
#[derive(Clone, Debug, PartialEq)]
pub struct RegretSlice {
    pub session_id: Uuid,
    /// The slice's place, 0 first (slices without any observation are absent).
    pub slice: i64,
    /// The sum of the slice's regrets, each reported else estimated.
    pub total: f64,
    /// Observations of the slice with a regret, and how many of those the client reported.
    pub valued: i64,
    pub reported: i64,
}

/// Which of a session's observations a listing holds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ObservationState {
    /// Active and forgotten.
    All,
    /// Those in the model's dataset.
    #[default]
    Active,
    /// Those the algorithm forgot.
    Forgotten,
}

/// The orders of the observation listing; ties are broken by seq, in the same direction.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ObservationSort {
    /// In the order they were recorded.
    #[default]
    Seq,
    /// By the observed value.
    Value,
    /// By the regret as reported, else as estimated when it arrived; observations with
    /// neither come last in either direction.
    Regret,
    /// By session time.
    T,
}

/// A page of a session's observations.
#[derive(Clone, Debug, PartialEq)]
pub struct ObservationQuery {
    /// Only observations with a larger seq.
    pub after: i64,
    pub state: ObservationState,
    pub sort: ObservationSort,
    pub order: SortOrder,
    /// Rows of the order skipped before the page.
    pub offset: i64,
    pub limit: i64,
}

impl ObservationQuery {
    /// The ORDER BY of the observations.
    pub(crate) fn order_sql(&self) -> String {
        let (direction, _) = self.order.sql();
        let key = match self.sort {
            ObservationSort::Seq => return format!("seq {direction}"),
            ObservationSort::Value => "value",
            ObservationSort::T => "t",
            // SQLite puts nulls first and PostgreSQL last: both last, said outright.
            ObservationSort::Regret => {
                return format!(
                    "CASE WHEN COALESCE(regret, regret_estimate) IS NULL THEN 1 ELSE 0 END, \
                     COALESCE(regret, regret_estimate) {direction}, seq {direction}"
                );
            }
        };
        format!("{key} {direction}, seq {direction}")
    }

    /// The condition on `active` of the state.
    pub(crate) fn state_sql(&self) -> &'static str {
        match self.state {
            ObservationState::All => "",
            ObservationState::Active => " AND active",
            ObservationState::Forgotten => " AND NOT active",
        }
    }
}

/// A page of observations, and how many observations the query's filter (state and
/// `after`) matches in all.
#[derive(Clone, Debug, PartialEq)]
pub struct ObservationPage {
    pub rows: Vec<ObservationRow>,
    pub total: i64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_name_pattern_matches_its_characters_literally() {
        assert_eq!(contains_pattern("a_b%c\\d"), "%a\\_b\\%c\\\\d%");
        assert_eq!(contains_pattern(""), "%%");
    }
}
