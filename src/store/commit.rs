//! The write of one [`ChangeSet`], written once for every way of running statements
//! ([`Statements`]): an sqlx connection of either backend (the `store_on!` macro
//! implements it), or the SQLite writer thread's own connection, which runs a whole
//! transaction on its thread (`sqlite_writer.rs`).
//!
//! The SQL is the one text both backends run (`$N` placeholders, as in `queries.rs`); the
//! arguments travel as [`Arg`]s, typed even when null, since PostgreSQL declares each
//! parameter's type from the value bound.

use std::future::Future;
use std::sync::LazyLock;

use chrono::Utc;
use uuid::Uuid;

use super::rows::to_json;
use super::timeline::{BUCKET_ROWS, BucketPoint};
use super::to_micros;
use super::{ChangeSet, IDEMPOTENCY_TTL_MICROS, IdempotencyRecord, StoreError};
use crate::domain::events::NewEvent;
use crate::domain::records::{
    CallRecord, EndedRun, ObservationRow, ResponseTimeSample, SuggestionRow,
};

/// A value bound to a `$N` placeholder: the N-th of a statement's arguments.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Arg {
    Text(Option<String>),
    Int(Option<i64>),
    Real(Option<f64>),
    Bool(bool),
}

impl From<&str> for Arg {
    fn from(value: &str) -> Self {
        Arg::Text(Some(value.to_owned()))
    }
}

impl From<String> for Arg {
    fn from(value: String) -> Self {
        Arg::Text(Some(value))
    }
}

impl From<Option<String>> for Arg {
    fn from(value: Option<String>) -> Self {
        Arg::Text(value)
    }
}

impl From<i64> for Arg {
    fn from(value: i64) -> Self {
        Arg::Int(Some(value))
    }
}

impl From<Option<i64>> for Arg {
    fn from(value: Option<i64>) -> Self {
        Arg::Int(value)
    }
}

impl From<f64> for Arg {
    fn from(value: f64) -> Self {
        Arg::Real(Some(value))
    }
}

impl From<Option<f64>> for Arg {
    fn from(value: Option<f64>) -> Self {
        Arg::Real(value)
    }
}

impl From<bool> for Arg {
    fn from(value: bool) -> Self {
        Arg::Bool(value)
    }
}

impl Arg {
    /// The text, if this is one.
    pub(crate) fn text(self) -> Result<Option<String>, Arg> {
        match self {
            Arg::Text(value) => Ok(value),
            other => Err(other),
        }
    }

    /// The integer, if this is one.
    pub(crate) fn int(self) -> Result<Option<i64>, Arg> {
        match self {
            Arg::Int(value) => Ok(value),
            other => Err(other),
        }
    }

    /// The real, if this is one.
    pub(crate) fn real(self) -> Result<Option<f64>, Arg> {
        match self {
            Arg::Real(value) => Ok(value),
            other => Err(other),
        }
    }

    /// The boolean, if this is one.
    pub(crate) fn boolean(self) -> Result<bool, Arg> {
        match self {
            Arg::Bool(value) => Ok(value),
            other => Err(other),
        }
    }
}

/// Runs statements inside a transaction its owner opened and ends.
pub(crate) trait Statements: Send {
    /// Runs `sql`; the number of rows it changed.
    fn execute(
        &mut self,
        sql: &str,
        args: Vec<Arg>,
    ) -> impl Future<Output = Result<u64, StoreError>> + Send;

    /// Runs `sql`, which returns at most one row of integer columns: that row.
    fn fetch_integers(
        &mut self,
        sql: &str,
        args: Vec<Arg>,
    ) -> impl Future<Output = Result<Option<Vec<i64>>, StoreError>> + Send;
}

/// The columns of a version bump's arguments ([`bump_args`]), as the statement's source
/// row `v` names them.
pub(crate) const BUMP_COLUMNS: [&str; 15] = [
    "id",
    "expected",
    "state",
    "suggestions",
    "last_t",
    "last_n",
    "optimum",
    "calls",
    "samples",
    "seq",
    "activity_micros",
    "activity_t",
    "now",
    "regret_total",
    "regret_count",
];

/// Bumps the version of each session of `source` (rows `v` of [`BUMP_COLUMNS`]: one
/// change's, or a batch's) whose version is still `v.expected` (the optimistic-concurrency
/// check), returning `returning` (the counts of calls and samples after the change). What
/// the session listing sorts by follows: the largest seq (`v.seq`, 0 without new
/// observations), and the time of the newest step (`v.activity_*`: null without a call);
/// with new observations, the wall-clock time of this change (`v.now`) for the idle scan;
/// the new observations' regrets, summed and counted, and the mean of all of them (the
/// `regret` sort; the right-hand sides read the row before the update).
pub(crate) fn bump_version_sql(source: &str, returning: &str) -> String {
    format!(
        "UPDATE sessions SET version = sessions.version + 1, \
         state = COALESCE(v.state, sessions.state), \
         suggest_count = sessions.suggest_count + v.suggestions, \
         last_suggest_t = COALESCE(v.last_t, sessions.last_suggest_t), \
         last_suggest_n = COALESCE(v.last_n, sessions.last_suggest_n), \
         last_optimum_mean = COALESCE(v.optimum, sessions.last_optimum_mean), \
         call_count = sessions.call_count + v.calls, \
         sample_count = sessions.sample_count + v.samples, \
         observation_count = CASE WHEN v.seq > sessions.observation_count \
           THEN v.seq ELSE sessions.observation_count END, \
         last_activity_micros = COALESCE(v.activity_micros, sessions.last_activity_micros), \
         last_activity_t = COALESCE(v.activity_t, sessions.last_activity_t), \
         last_observed_micros = CASE WHEN v.seq > 0 THEN v.now \
           ELSE sessions.last_observed_micros END, \
         regret_total = sessions.regret_total + v.regret_total, \
         regret_count = sessions.regret_count + v.regret_count, \
         average_regret = CASE WHEN sessions.regret_count + v.regret_count > 0 \
           THEN (sessions.regret_total + v.regret_total) \
             / (sessions.regret_count + v.regret_count) END \
         FROM {source} WHERE sessions.id = v.id AND sessions.version = v.expected \
         RETURNING {returning}"
    )
}

/// The source of `columns` for one row of arguments `$1`, `$2`, …: `(SELECT $1 AS a, …) AS
/// v`.
pub(crate) fn one_row(columns: &[&str]) -> String {
    let fields: Vec<String> = columns
        .iter()
        .enumerate()
        .map(|(i, column)| format!("${} AS {column}", i + 1))
        .collect();
    format!("(SELECT {}) AS v", fields.join(", "))
}

/// One change's version bump ([`bump_version_sql`] of [`one_row`]).
static BUMP_VERSION: LazyLock<String> = LazyLock::new(|| {
    bump_version_sql(
        &one_row(&BUMP_COLUMNS),
        "sessions.call_count, sessions.sample_count",
    )
});

/// A table a change inserts rows into, with the columns its rows' arguments fill in
/// order.
pub(crate) struct Table {
    pub name: &'static str,
    pub columns: &'static str,
}

impl Table {
    /// The insert of one row (`$1`, `$2`, … in the columns' order), returning `returning`
    /// if not empty.
    fn insert_one(&self, returning: &str) -> String {
        let count = self.columns.split(',').count();
        let values: Vec<String> = (1..=count).map(|i| format!("${i}")).collect();
        let returning = if returning.is_empty() {
            String::new()
        } else {
            format!(" RETURNING {returning}")
        };
        format!(
            "INSERT INTO {} ({}) VALUES ({}){returning}",
            self.name,
            self.columns,
            values.join(", ")
        )
    }
}

/// A suggestion's row ([`suggestion_args`]).
pub(crate) const SUGGESTIONS: Table = Table {
    name: "suggestions",
    columns: "id, session_id, ordinal, params, unit, arm, issued_t, t, created_micros, status",
};

/// An observation's row ([`observation_args`]).
pub(crate) const OBSERVATIONS: Table = Table {
    name: "observations",
    columns: "session_id, seq, suggestion_id, params, unit, value, t, measured_micros, \
              regret, active, removed_micros, removed_reason, created_micros, removed_t, \
              regret_estimate, metadata",
};

/// A run that ended without a value ([`ended_run_args`]).
pub(crate) const ENDED_RUNS: Table = Table {
    name: "ended_runs",
    columns: "session_id, suggestion_id, kind, params, t, reason, created_micros, metadata",
};

/// A response-time sample ([`response_time_args`]).
pub(crate) const RESPONSE_TIMES: Table = Table {
    name: "response_times",
    columns: "session_id, n, seconds, recorded_micros",
};

/// A call record ([`call_args`]).
pub(crate) const CALLS: Table = Table {
    name: "calls",
    columns: "session_id, kind, t, dataset_size, compute_seconds, recorded_micros, snapshot",
};

static INSERT_SUGGESTION: LazyLock<String> = LazyLock::new(|| SUGGESTIONS.insert_one(""));
static INSERT_OBSERVATION: LazyLock<String> = LazyLock::new(|| OBSERVATIONS.insert_one(""));
static INSERT_ENDED_RUN: LazyLock<String> = LazyLock::new(|| ENDED_RUNS.insert_one(""));

/// What adds a response-time sample (`excluded`, of count 1) to its size's summary.
pub(crate) const SUMMARY_CONFLICT: &str = "ON CONFLICT (session_id, n) DO UPDATE SET \
     count = response_time_summaries.count + excluded.count, \
     total_seconds = response_time_summaries.total_seconds + excluded.total_seconds";

/// Adds a response-time sample to its size's summary.
static SUMMARISE_RESPONSE_TIME: LazyLock<String> = LazyLock::new(|| {
    format!(
        "INSERT INTO response_time_summaries (session_id, n, count, total_seconds) \
         VALUES ($1, $2, 1, $3) {SUMMARY_CONFLICT}"
    )
});

/// Marks the suggestion `$1` of session `$2` with the status `$3`.
pub(crate) const SET_SUGGESTION_STATUS: &str =
    "UPDATE suggestions SET status = $3 WHERE id = $1 AND session_id = $2";

/// An event (`$2`: the id of the call that found it), numbered after the session's last
/// (the caller holds the session's lock: the version bump's, or the idle scan's update).
const INSERT_EVENT: &str = "INSERT INTO events (session_id, seq, step, kind, t, data, \
     created_micros) VALUES ($1, (SELECT COALESCE(MAX(seq), 0) + 1 FROM events \
     WHERE session_id = $1), $2, $3, $4, $5, $6) RETURNING id";

/// A delivery of event `$1` for each active (not paused) webhook of the session's tenant
/// that takes its kind (`kinds` is a JSON array of names, empty for every kind), due at
/// once.
const FAN_OUT_EVENT: &str = "INSERT INTO webhook_deliveries (webhook_id, event_id, \
     session_id, seq, state, attempts, next_attempt_micros, claimed_until_micros, \
     created_micros) \
     SELECT w.id, e.id, e.session_id, e.seq, 'pending', 0, $2, 0, $2 \
     FROM events e JOIN sessions s ON s.id = e.session_id \
     JOIN webhooks w ON w.tenant = s.tenant \
     WHERE e.id = $1 AND w.paused_micros IS NULL \
     AND (w.kinds = '[]' OR w.kinds LIKE '%\"' || e.kind || '\"%')";

/// What folds a new bucket summary (`excluded`) into the stored one, which holds the
/// earlier rows: the first and last key, the count, the first rows holding the minimum and
/// maximum value and regret, the regrets' sum and counts (`Bucket::fold` in Rust).
pub(crate) const MERGE_INTO_BUCKET: &str = "ON CONFLICT (session_id, series, bucket) DO UPDATE SET \
     first_key = CASE WHEN excluded.first_key < timeline_buckets.first_key \
       THEN excluded.first_key ELSE timeline_buckets.first_key END, \
     last_key = CASE WHEN excluded.last_key > timeline_buckets.last_key \
       THEN excluded.last_key ELSE timeline_buckets.last_key END, \
     count = timeline_buckets.count + excluded.count, \
     lo_key = CASE WHEN excluded.lo < timeline_buckets.lo \
       THEN excluded.lo_key ELSE timeline_buckets.lo_key END, \
     lo = CASE WHEN excluded.lo < timeline_buckets.lo \
       THEN excluded.lo ELSE timeline_buckets.lo END, \
     hi_key = CASE WHEN excluded.hi > timeline_buckets.hi \
       THEN excluded.hi_key ELSE timeline_buckets.hi_key END, \
     hi = CASE WHEN excluded.hi > timeline_buckets.hi \
       THEN excluded.hi ELSE timeline_buckets.hi END, \
     lo2_key = CASE WHEN timeline_buckets.lo2 IS NULL \
       OR excluded.lo2 < timeline_buckets.lo2 \
       THEN excluded.lo2_key ELSE timeline_buckets.lo2_key END, \
     lo2 = CASE WHEN timeline_buckets.lo2 IS NULL \
       OR excluded.lo2 < timeline_buckets.lo2 \
       THEN excluded.lo2 ELSE timeline_buckets.lo2 END, \
     hi2_key = CASE WHEN timeline_buckets.hi2 IS NULL \
       OR excluded.hi2 > timeline_buckets.hi2 \
       THEN excluded.hi2_key ELSE timeline_buckets.hi2_key END, \
     hi2 = CASE WHEN timeline_buckets.hi2 IS NULL \
       OR excluded.hi2 > timeline_buckets.hi2 \
       THEN excluded.hi2 ELSE timeline_buckets.hi2 END, \
     total = timeline_buckets.total + excluded.total, \
     n_valued = timeline_buckets.n_valued + excluded.n_valued, \
     n_reported = timeline_buckets.n_reported + excluded.n_reported";

/// A bucket summary's columns.
pub(crate) const BUCKET_COLUMNS: &str = "session_id, series, bucket, first_key, last_key, \
     count, lo, lo_key, hi, hi_key, lo2, lo2_key, hi2, hi2_key, total, n_valued, n_reported";

/// Folds one row into its bucket summary (creating it).
static RECORD_IN_BUCKET: LazyLock<String> = LazyLock::new(|| {
    format!(
        "INSERT INTO timeline_buckets ({BUCKET_COLUMNS}) VALUES ($1, $2, $3, $4, $4, 1, $5, $4, $5, $4, $6, $7, $6, $7, \
     COALESCE($6, 0), $8, $9) {MERGE_INTO_BUCKET}"
    )
});

/// Applies `change` if the session's version is still `expected_version`, keeping the
/// timeline's bucket summaries up to date (`row_id` names the column that orders calls
/// and samples: PostgreSQL's `id`, SQLite's `rowid`). `Conflict` if the version moved on,
/// `NotFound` if the session is gone; either way nothing was written. Run it in a
/// transaction; the caller commits. (`postgres_batch.rs` writes a batch of changes with
/// the same rows, one statement per table.)
pub(crate) async fn apply_change(
    s: &mut impl Statements,
    id: Uuid,
    expected_version: i64,
    change: &ChangeSet,
    idempotency: Option<&IdempotencyRecord>,
    row_id: &str,
) -> Result<(), StoreError> {
    let key = id.to_string();
    let now = to_micros(Utc::now());
    let (call_count, sample_count) = bump_version(s, &key, expected_version, change, now).await?;
    // Forgetting done by this change is placed at its last call's ordinal.
    let step = call_count - 1;
    for g in &change.new_suggestions {
        s.execute(&INSERT_SUGGESTION, suggestion_args(&key, g))
            .await?;
    }
    for (suggestion, status) in &change.suggestion_status {
        let args = vec![
            suggestion.to_string().into(),
            key.as_str().into(),
            status.as_str().into(),
        ];
        s.execute(SET_SUGGESTION_STATUS, args).await?;
    }
    write_observations(s, &key, change, step, now).await?;
    for run in &change.ended_runs {
        s.execute(&INSERT_ENDED_RUN, ended_run_args(&key, run))
            .await?;
    }
    if let Some(sample) = change.response_time {
        write_response_time(s, &key, sample, sample_count, now, row_id).await?;
    }
    let first_call = call_count - change.calls.len() as i64;
    let mut last_call = None;
    for (i, call) in change.calls.iter().enumerate() {
        last_call = Some(write_call(s, &key, call, first_call + i as i64, now, row_id).await?);
    }
    for event in &change.events {
        let call_id = last_call
            .ok_or_else(|| StoreError::Corrupt("an event without the step that found it".into()))?;
        insert_event(s, &key, call_id, event, now).await?;
    }
    if let Some(record) = idempotency {
        insert_idempotency(s, record).await?;
    }
    Ok(())
}

/// Stores `event` of the session `key` (found by the call `call_id`, at `now`) and its
/// webhook deliveries; its global id. The caller holds the session's lock.
pub(crate) async fn insert_event(
    s: &mut impl Statements,
    key: &str,
    call_id: i64,
    event: &NewEvent,
    now: i64,
) -> Result<i64, StoreError> {
    let args = vec![
        key.into(),
        call_id.into(),
        event.kind.as_str().into(),
        event.t.into(),
        to_json(&event.data).into(),
        now.into(),
    ];
    let id = match s.fetch_integers(INSERT_EVENT, args).await?.as_deref() {
        Some([id]) => *id,
        _ => return Err(StoreError::Corrupt("an event insert returned no id".into())),
    };
    s.execute(FAN_OUT_EVENT, vec![id.into(), now.into()])
        .await?;
    Ok(id)
}

/// The version bump, first in the transaction: it takes the session's row lock
/// (PostgreSQL) or the database's write lock (SQLite) until the transaction ends, and it
/// is the optimistic-concurrency check. Returns the counts of calls and samples after
/// this change (their ordinals); `Conflict` if the version moved on, `NotFound` if the
/// session is gone.
async fn bump_version(
    s: &mut impl Statements,
    key: &str,
    expected_version: i64,
    change: &ChangeSet,
    now: i64,
) -> Result<(i64, i64), StoreError> {
    let bump = bump_args(key, expected_version, change, now);
    let Some(counts) = s.fetch_integers(&BUMP_VERSION, bump).await? else {
        let exists = s
            .fetch_integers(
                "SELECT COUNT(*) FROM sessions WHERE id = $1",
                vec![key.into()],
            )
            .await?;
        return Err(if exists.is_some_and(|row| row[0] > 0) {
            StoreError::Conflict
        } else {
            StoreError::NotFound
        });
    };
    match counts[..] {
        [call_count, sample_count] => Ok((call_count, sample_count)),
        _ => Err(StoreError::Corrupt(
            "version bump returned no counts".into(),
        )),
    }
}

/// The arguments of `change`'s version bump ([`BUMP_COLUMNS`]) at `now`.
pub(crate) fn bump_args(
    key: &str,
    expected_version: i64,
    change: &ChangeSet,
    now: i64,
) -> Vec<Arg> {
    let newest_call = change.calls.last();
    // As the timeline's buckets count them (`observation_point`).
    let regrets: Vec<f64> = change
        .new_observations
        .iter()
        .filter_map(|o| o.regret.or(o.regret_estimate))
        .collect();
    vec![
        Arg::from(key),
        expected_version.into(),
        change.state.as_ref().map(to_json).into(),
        (change.new_suggestions.len() as i64).into(),
        change.last_suggest.map(|(t, _)| t).into(),
        change.last_suggest.map(|(_, n)| n).into(),
        change.last_optimum_mean.into(),
        (change.calls.len() as i64).into(),
        i64::from(change.response_time.is_some()).into(),
        change
            .new_observations
            .iter()
            .map(|o| o.seq)
            .max()
            .unwrap_or(0)
            .into(),
        newest_call.map(|_| now).into(),
        newest_call.map(|call| call.t).into(),
        now.into(),
        regrets.iter().sum::<f64>().into(),
        (regrets.len() as i64).into(),
    ]
}

/// A new suggestion's row of session `key` ([`SUGGESTIONS`]).
pub(crate) fn suggestion_args(key: &str, g: &SuggestionRow) -> Vec<Arg> {
    vec![
        g.id.to_string().into(),
        key.into(),
        g.ordinal.into(),
        to_json(&g.params).into(),
        to_json(&g.unit).into(),
        g.arm.clone().into(),
        g.issued_t.into(),
        g.t.into(),
        to_micros(g.created_at).into(),
        g.status.as_str().into(),
    ]
}

/// An ended run's row of session `key` ([`ENDED_RUNS`]).
pub(crate) fn ended_run_args(key: &str, run: &EndedRun) -> Vec<Arg> {
    vec![
        key.into(),
        run.suggestion_id.map(|g| g.to_string()).into(),
        run.kind.as_str().into(),
        to_json(&run.params).into(),
        run.t.into(),
        run.reason.clone().into(),
        to_micros(run.created_at).into(),
        run.metadata.as_ref().map(to_json).into(),
    ]
}

/// The change's new observations (in the timeline's buckets), and the observations it
/// forgets, each forgetting recorded at the change's `step`.
async fn write_observations(
    s: &mut impl Statements,
    key: &str,
    change: &ChangeSet,
    step: i64,
    now: i64,
) -> Result<(), StoreError> {
    for o in &change.new_observations {
        s.execute(&INSERT_OBSERVATION, observation_args(key, o))
            .await?;
        record_in_bucket(s, key, &observation_point(o)).await?;
        if let (Some(t), Some(reason)) = (o.removed_t, &o.removed_reason) {
            record_in_bucket(s, key, &forgetting_point(reason, step, t)).await?;
        }
    }
    for d in &change.deactivate {
        let args = vec![
            key.into(),
            d.seq.into(),
            now.into(),
            d.reason.as_str().into(),
            d.t.into(),
        ];
        let forgotten = s
            .execute(
                "UPDATE observations SET active = FALSE, removed_micros = $3, \
                 removed_reason = $4, removed_t = $5 \
                 WHERE session_id = $1 AND seq = $2 AND active",
                args,
            )
            .await?;
        if forgotten > 0 {
            record_in_bucket(s, key, &forgetting_point(&d.reason, step, d.t)).await?;
        }
    }
    Ok(())
}

/// A response-time sample: its row, its size's summary, and its timeline bucket
/// (`sample_count` samples, this one included).
async fn write_response_time(
    s: &mut impl Statements,
    key: &str,
    sample: ResponseTimeSample,
    sample_count: i64,
    now: i64,
    row_id: &str,
) -> Result<(), StoreError> {
    let sql = RESPONSE_TIMES.insert_one(row_id);
    let inserted = returned_id(
        s.fetch_integers(&sql, response_time_args(key, sample, now))
            .await?,
    )?;
    s.execute(
        &SUMMARISE_RESPONSE_TIME,
        vec![key.into(), sample.n.into(), sample.seconds.into()],
    )
    .await?;
    record_in_bucket(s, key, &sample_point(inserted, sample, sample_count)).await
}

/// A response-time sample's row of session `key` ([`RESPONSE_TIMES`]).
pub(crate) fn response_time_args(key: &str, sample: ResponseTimeSample, now: i64) -> Vec<Arg> {
    vec![
        key.into(),
        sample.n.into(),
        sample.seconds.into(),
        now.into(),
    ]
}

/// A call record, the session's `ordinal`-th (from 0), and its timeline bucket; its id.
async fn write_call(
    s: &mut impl Statements,
    key: &str,
    call: &CallRecord,
    ordinal: i64,
    now: i64,
    row_id: &str,
) -> Result<i64, StoreError> {
    let sql = CALLS.insert_one(row_id);
    let inserted = returned_id(s.fetch_integers(&sql, call_args(key, call, now)).await?)?;
    record_in_bucket(s, key, &call_point(inserted, call, ordinal)).await?;
    Ok(inserted)
}

/// A call record's row of session `key` ([`CALLS`]).
pub(crate) fn call_args(key: &str, call: &CallRecord, now: i64) -> Vec<Arg> {
    vec![
        key.into(),
        call.kind.into(),
        call.t.into(),
        call.dataset_size.into(),
        call.compute_seconds.into(),
        now.into(),
        call.snapshot.as_ref().map(to_json).into(),
    ]
}

/// The id an `INSERT … RETURNING` gave back.
fn returned_id(row: Option<Vec<i64>>) -> Result<i64, StoreError> {
    row.and_then(|row| row.first().copied())
        .ok_or_else(|| StoreError::Corrupt("an insert returned no id".into()))
}

/// An observation's row of session `key` ([`OBSERVATIONS`]).
pub(crate) fn observation_args(session: &str, o: &ObservationRow) -> Vec<Arg> {
    vec![
        session.into(),
        o.seq.into(),
        o.suggestion_id.map(|g| g.to_string()).into(),
        to_json(&o.params).into(),
        to_json(&o.unit).into(),
        o.value.into(),
        o.t.into(),
        o.measured_at.map(to_micros).into(),
        o.regret.into(),
        o.active.into(),
        o.removed_at.map(to_micros).into(),
        o.removed_reason.clone().into(),
        to_micros(o.created_at).into(),
        o.removed_t.into(),
        o.regret_estimate.into(),
        o.metadata.as_ref().map(to_json).into(),
    ]
}

/// A row of a timeline series, in its bucket: the series, the bucket's number, the row.
pub(crate) struct SeriesPoint {
    pub series: String,
    pub bucket: i64,
    pub point: BucketPoint,
}

/// An observation in the `o` series, keyed by its seq.
pub(crate) fn observation_point(o: &ObservationRow) -> SeriesPoint {
    let regret = o.regret.or(o.regret_estimate);
    SeriesPoint {
        series: "o".into(),
        bucket: (o.seq - 1) / BUCKET_ROWS,
        point: BucketPoint {
            key: o.seq,
            value: o.value,
            regret,
            reported: o.regret.is_some(),
        },
    }
}

/// A response-time sample (row `id`, the session's `sample_count`-th) in the `s` series.
pub(crate) fn sample_point(id: i64, sample: ResponseTimeSample, sample_count: i64) -> SeriesPoint {
    SeriesPoint {
        series: "s".into(),
        bucket: (sample_count - 1) / BUCKET_ROWS,
        point: BucketPoint::plain(id, sample.seconds),
    }
}

/// A call record (row `id`, the session's `ordinal`-th from 0) in the `c` series, valued
/// by its dataset size.
pub(crate) fn call_point(id: i64, call: &CallRecord, ordinal: i64) -> SeriesPoint {
    SeriesPoint {
        series: "c".into(),
        bucket: ordinal / BUCKET_ROWS,
        point: BucketPoint::plain(id, call.dataset_size as f64),
    }
}

/// One observation forgotten for `reason` by the step (call ordinal) `step`, at session
/// time `t`, in the `f:<reason>` series.
pub(crate) fn forgetting_point(reason: &str, step: i64, t: f64) -> SeriesPoint {
    SeriesPoint {
        series: format!("f:{reason}"),
        bucket: step.max(0) / BUCKET_ROWS,
        point: BucketPoint::plain(0, t),
    }
}

async fn record_in_bucket(
    s: &mut impl Statements,
    session: &str,
    row: &SeriesPoint,
) -> Result<(), StoreError> {
    let point = &row.point;
    let args = vec![
        session.into(),
        row.series.as_str().into(),
        row.bucket.into(),
        point.key.into(),
        point.value.into(),
        point.regret.into(),
        point.regret.map(|_| point.key).into(),
        i64::from(point.regret.is_some()).into(),
        i64::from(point.reported).into(),
    ];
    s.execute(&RECORD_IN_BUCKET, args).await?;
    Ok(())
}

/// Deletes the idempotency records older than their time to live, as of `now`.
pub(crate) const PURGE_IDEMPOTENCY: &str = "DELETE FROM idempotency WHERE created_micros < $1";

/// The idempotency records' columns ([`idempotency_args`]).
pub(crate) const IDEMPOTENCY: Table = Table {
    name: "idempotency",
    columns: "scope, session_id, key, request_hash, status, body, created_micros",
};

/// `record`'s row, stored at `now` ([`IDEMPOTENCY`]).
pub(crate) fn idempotency_args(record: &IdempotencyRecord, now: i64) -> Vec<Arg> {
    vec![
        record.scope.as_str().into(),
        record.session_id.map(|id| id.to_string()).into(),
        record.key.as_str().into(),
        record.request_hash.as_str().into(),
        i64::from(record.status).into(),
        record.body.as_str().into(),
        now.into(),
    ]
}

/// Purges expired records, then stores `record`; `DuplicateKey` if its (scope, key) is
/// taken.
pub(crate) async fn insert_idempotency(
    s: &mut impl Statements,
    record: &IdempotencyRecord,
) -> Result<(), StoreError> {
    let now = to_micros(Utc::now());
    s.execute(
        PURGE_IDEMPOTENCY,
        vec![(now - IDEMPOTENCY_TTL_MICROS).into()],
    )
    .await?;
    let sql = format!(
        "{} ON CONFLICT (scope, key) DO NOTHING",
        IDEMPOTENCY.insert_one("")
    );
    let inserted = s.execute(&sql, idempotency_args(record, now)).await?;
    if inserted == 0 {
        return Err(StoreError::DuplicateKey);
    }
    Ok(())
}
