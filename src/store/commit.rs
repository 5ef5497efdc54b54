//! The write of one [`ChangeSet`], written once for every way of running statements
//! ([`Statements`]): an sqlx connection of either backend (the `store_on!` macro
//! implements it), or the SQLite writer thread's own connection, which runs a whole
//! transaction on its thread (`sqlite_writer.rs`).
//!
//! The SQL is the one text both backends run (`$N` placeholders, as in `queries.rs`); the
//! arguments travel as [`Arg`]s, typed even when null, since PostgreSQL declares each
//! parameter's type from the value bound.

use std::future::Future;

use chrono::Utc;
use uuid::Uuid;

use super::rows::to_json;
use super::timeline::{BUCKET_ROWS, BucketPoint};
use super::to_micros;
use super::{ChangeSet, IDEMPOTENCY_TTL_MICROS, IdempotencyRecord, ObservationRow, StoreError};
use crate::domain::events::NewEvent;
use crate::domain::records::{CallRecord, ResponseTimeSample};

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

/// Bumps the version of the session if it is still `$2` (the optimistic-concurrency
/// check), and returns the counts of calls and samples after the change. What the
/// session listing sorts by follows: the largest seq (`$10`, 0 without new
/// observations), and the time of the newest step (`$11`, `$12`: null without a call);
/// with new observations, the wall-clock time of this change (`$13`) for the idle scan;
/// the new observations' regrets, summed (`$14`) and counted (`$15`), and the mean of all
/// of them (the `regret` sort; its right-hand sides read the row before the update).
const BUMP_VERSION: &str = "UPDATE sessions SET version = version + 1, \
     state = COALESCE($3, state), \
     suggest_count = suggest_count + $4, \
     last_suggest_t = COALESCE($5, last_suggest_t), \
     last_suggest_n = COALESCE($6, last_suggest_n), \
     last_optimum_mean = COALESCE($7, last_optimum_mean), \
     call_count = call_count + $8, sample_count = sample_count + $9, \
     observation_count = CASE WHEN $10 > observation_count \
       THEN $10 ELSE observation_count END, \
     last_activity_micros = COALESCE($11, last_activity_micros), \
     last_activity_t = COALESCE($12, last_activity_t), \
     last_observed_micros = CASE WHEN $10 > 0 THEN $13 ELSE last_observed_micros END, \
     regret_total = regret_total + $14, regret_count = regret_count + $15, \
     average_regret = CASE WHEN regret_count + $15 > 0 \
       THEN (regret_total + $14) / (regret_count + $15) END \
     WHERE id = $1 AND version = $2 RETURNING call_count, sample_count";

const INSERT_SUGGESTION: &str = "INSERT INTO suggestions (id, session_id, ordinal, params, \
     unit, arm, issued_t, t, created_micros, status) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)";

const INSERT_OBSERVATION: &str = "INSERT INTO observations (session_id, seq, suggestion_id, \
     params, unit, value, t, measured_micros, regret, active, removed_micros, \
     removed_reason, created_micros, removed_t, regret_estimate, metadata) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)";

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

const INSERT_ENDED_RUN: &str = "INSERT INTO ended_runs (session_id, suggestion_id, kind, \
     params, t, reason, created_micros, metadata) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)";

/// Folds one row into its bucket summary (creating it): first and last key, count, the
/// first rows holding the minimum and maximum value and regret, the regrets' sum and
/// counts.
const RECORD_IN_BUCKET: &str = "INSERT INTO timeline_buckets (session_id, series, bucket, \
     first_key, last_key, count, lo, lo_key, hi, hi_key, lo2, lo2_key, hi2, hi2_key, \
     total, n_valued, n_reported) \
     VALUES ($1, $2, $3, $4, $4, 1, $5, $4, $5, $4, $6, $7, $6, $7, \
     COALESCE($6, 0), $8, $9) \
     ON CONFLICT (session_id, series, bucket) DO UPDATE SET \
     first_key = CASE WHEN excluded.first_key < timeline_buckets.first_key \
       THEN excluded.first_key ELSE timeline_buckets.first_key END, \
     last_key = CASE WHEN excluded.last_key > timeline_buckets.last_key \
       THEN excluded.last_key ELSE timeline_buckets.last_key END, \
     count = timeline_buckets.count + 1, \
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

/// Applies `change` if the session's version is still `expected_version`, keeping the
/// timeline's bucket summaries up to date (`row_id` names the column that orders calls
/// and samples: PostgreSQL's `id`, SQLite's `rowid`). `Conflict` if the version moved on,
/// `NotFound` if the session is gone; either way nothing was written. Run it in a
/// transaction; the caller commits.
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
    write_suggestions(s, &key, change).await?;
    write_observations(s, &key, change, step, now).await?;
    for run in &change.ended_runs {
        let args = vec![
            key.as_str().into(),
            run.suggestion_id.map(|g| g.to_string()).into(),
            run.kind.as_str().into(),
            to_json(&run.params).into(),
            run.t.into(),
            run.reason.clone().into(),
            to_micros(run.created_at).into(),
            run.metadata.as_ref().map(to_json).into(),
        ];
        s.execute(INSERT_ENDED_RUN, args).await?;
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
    let newest_call = change.calls.last();
    // As the timeline's buckets count them (`write_observations`).
    let regrets: Vec<f64> = change
        .new_observations
        .iter()
        .filter_map(|o| o.regret.or(o.regret_estimate))
        .collect();
    let bump = vec![
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
    ];
    let Some(counts) = s.fetch_integers(BUMP_VERSION, bump).await? else {
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

/// The change's new suggestions, and the new status of those it settled.
async fn write_suggestions(
    s: &mut impl Statements,
    key: &str,
    change: &ChangeSet,
) -> Result<(), StoreError> {
    for g in &change.new_suggestions {
        let args = vec![
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
        ];
        s.execute(INSERT_SUGGESTION, args).await?;
    }
    for (suggestion, status) in &change.suggestion_status {
        let args = vec![
            suggestion.to_string().into(),
            key.into(),
            status.as_str().into(),
        ];
        s.execute(
            "UPDATE suggestions SET status = $3 WHERE id = $1 AND session_id = $2",
            args,
        )
        .await?;
    }
    Ok(())
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
        insert_observation(s, key, o).await?;
        let regret = o.regret.or(o.regret_estimate);
        let point = BucketPoint {
            key: o.seq,
            value: o.value,
            regret,
            reported: o.regret.is_some(),
        };
        record_in_bucket(s, key, "o", (o.seq - 1) / BUCKET_ROWS, &point).await?;
        if let (Some(t), Some(reason)) = (o.removed_t, &o.removed_reason) {
            record_forgetting(s, key, reason, step, t).await?;
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
            record_forgetting(s, key, &d.reason, step, d.t).await?;
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
    let sql = format!(
        "INSERT INTO response_times (session_id, n, seconds, recorded_micros) \
         VALUES ($1, $2, $3, $4) RETURNING {row_id}"
    );
    let args = vec![
        key.into(),
        sample.n.into(),
        sample.seconds.into(),
        now.into(),
    ];
    let inserted = returned_id(s.fetch_integers(&sql, args).await?)?;
    s.execute(
        "INSERT INTO response_time_summaries (session_id, n, count, total_seconds) \
         VALUES ($1, $2, 1, $3) ON CONFLICT (session_id, n) DO UPDATE SET \
         count = response_time_summaries.count + 1, \
         total_seconds = response_time_summaries.total_seconds + excluded.total_seconds",
        vec![key.into(), sample.n.into(), sample.seconds.into()],
    )
    .await?;
    let point = BucketPoint::plain(inserted, sample.seconds);
    let bucket = (sample_count - 1) / BUCKET_ROWS;
    record_in_bucket(s, key, "s", bucket, &point).await
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
    let sql = format!(
        "INSERT INTO calls (session_id, kind, t, dataset_size, compute_seconds, \
         recorded_micros, snapshot) VALUES ($1, $2, $3, $4, $5, $6, $7) \
         RETURNING {row_id}"
    );
    let args = vec![
        key.into(),
        call.kind.into(),
        call.t.into(),
        call.dataset_size.into(),
        call.compute_seconds.into(),
        now.into(),
        call.snapshot.as_ref().map(to_json).into(),
    ];
    let inserted = returned_id(s.fetch_integers(&sql, args).await?)?;
    let point = BucketPoint::plain(inserted, call.dataset_size as f64);
    record_in_bucket(s, key, "c", ordinal / BUCKET_ROWS, &point).await?;
    Ok(inserted)
}

/// The id an `INSERT … RETURNING` gave back.
fn returned_id(row: Option<Vec<i64>>) -> Result<i64, StoreError> {
    row.and_then(|row| row.first().copied())
        .ok_or_else(|| StoreError::Corrupt("an insert returned no id".into()))
}

async fn insert_observation(
    s: &mut impl Statements,
    session: &str,
    o: &ObservationRow,
) -> Result<(), StoreError> {
    let args = vec![
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
    ];
    s.execute(INSERT_OBSERVATION, args).await?;
    Ok(())
}

async fn record_in_bucket(
    s: &mut impl Statements,
    session: &str,
    series: &str,
    bucket: i64,
    point: &BucketPoint,
) -> Result<(), StoreError> {
    let args = vec![
        session.into(),
        series.into(),
        bucket.into(),
        point.key.into(),
        point.value.into(),
        point.regret.into(),
        point.regret.map(|_| point.key).into(),
        i64::from(point.regret.is_some()).into(),
        i64::from(point.reported).into(),
    ];
    s.execute(RECORD_IN_BUCKET, args).await?;
    Ok(())
}

/// Counts one forgotten observation in the `f:<reason>` bucket of the step (call ordinal)
/// that forgot it, at session time `t`.
async fn record_forgetting(
    s: &mut impl Statements,
    session: &str,
    reason: &str,
    step: i64,
    t: f64,
) -> Result<(), StoreError> {
    let series = format!("f:{reason}");
    let point = BucketPoint::plain(0, t);
    record_in_bucket(s, session, &series, step.max(0) / BUCKET_ROWS, &point).await
}

/// Purges expired records, then stores `record`; `DuplicateKey` if its (scope, key) is
/// taken.
pub(crate) async fn insert_idempotency(
    s: &mut impl Statements,
    record: &IdempotencyRecord,
) -> Result<(), StoreError> {
    let now = to_micros(Utc::now());
    s.execute(
        "DELETE FROM idempotency WHERE created_micros < $1",
        vec![(now - IDEMPOTENCY_TTL_MICROS).into()],
    )
    .await?;
    let args = vec![
        record.scope.as_str().into(),
        record.session_id.map(|id| id.to_string()).into(),
        record.key.as_str().into(),
        record.request_hash.as_str().into(),
        i64::from(record.status).into(),
        record.body.as_str().into(),
        now.into(),
    ];
    let inserted = s
        .execute(
            "INSERT INTO idempotency (scope, session_id, key, request_hash, status, body, \
             created_micros) VALUES ($1, $2, $3, $4, $5, $6, $7) \
             ON CONFLICT (scope, key) DO NOTHING",
            args,
        )
        .await?;
    if inserted == 0 {
        return Err(StoreError::DuplicateKey);
    }
    Ok(())
}
